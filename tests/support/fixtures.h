/*
 * fixtures: seeded synthetic run artifacts for the gate's tests and benchmarks.
 *
 * A fixture run has steps whose times are mean_ns times (1 + run offset + step noise), with the
 * run offset and step noise drawn from seeded uniform distributions of the given relative
 * widths, a token count per step, fixed peaks, and ops that split the step time.
 */
#ifndef CG_FIXTURES_H
#define CG_FIXTURES_H

#include "artifact.h"

#include <stdint.h>

struct cg_fixture {
    size_t runs;
    size_t steps;
    double mean_ns;
    double run_noise;  /* relative half-width of the per-run offset */
    double step_noise; /* relative half-width of the per-step noise */
    int64_t tokens;    /* per step, -1 for none */
    int64_t peak_device_bytes;
    int64_t peak_host_rss_bytes;
    size_t n_ops;      /* ops named "op_<i>" sharing the step time */
    uint64_t seed;
};

/* Fills a (initialised, empty) with a fixture; environment and settings are set to fixed test
 * values. Returns 0 or CG_ENOMEM. */
int cg_fixture_make(struct cg_artifact *a, const struct cg_fixture *f);

/* Sets every step's GPU busy time to share times its wall time (share < 0: unknown). */
void cg_fixture_set_busy(struct cg_artifact *a, double share);

/* Sets every run's step losses on a straight line from first (first step) to last (last step);
 * NAN for both makes them unknown. */
void cg_fixture_set_loss(struct cg_artifact *a, double first, double last);

/* Adds an op to every run of a, with calls_per_step and ns_per_step times the run's steps as
 * its totals. family NULL means the name. Returns 0 or CG_ENOMEM. */
int cg_fixture_add_op(struct cg_artifact *a, const char *name, const char *family,
                      enum cg_op_kind kind, double calls_per_step, double ns_per_step);

/* Interference as it is seen on a shared runner: spells in which every step takes 1.6 to 1.9
 * times as long, covering whole runs or parts of them (a third of the runs stay fast). */
void cg_fixture_contend(struct cg_artifact *a, uint64_t seed);

/* A periodic slowdown: the measured steps k with k % every == phase take (1 + pct/100) times as
 * long, in every run. */
void cg_fixture_every(struct cg_artifact *a, size_t every, size_t phase, double pct);

/* The GPU's own state as NVML would have recorded it (artifact_gpu.h), in every run of a: one
 * device (NVML index 0) sampled 50 times at sm_mhz with no clock event reason and no other
 * process, energy joules_per_token times the run's tokens, MFU mfu (NAN: none, with the
 * reason "not available: give --flops-per-token"; else settings.flops_per_token 1000). The
 * environment's GPU settings: clocks not locked, power limit 700 W, persistence mode on.
 * Returns 0 or CG_ENOMEM. */
int cg_fixture_set_gpu(struct cg_artifact *a, double joules_per_token, double mfu, int64_t sm_mhz);

/* Runs [first, first + n) of a were held back on their device: samples of 50 with NVML's clock
 * event reason (enum cg_gpu_reason), or with another process (pid 4242) when reason is -1. */
void cg_fixture_hold(struct cg_artifact *a, size_t first, size_t n, int reason, int64_t samples);

#endif
