/*
 * nvml: the GPU's own state while a canary runs, read by the launcher through NVML (never inside
 * the canary): SM and memory clocks, clock event reasons, temperature, power, the compute
 * processes on each GPU and the cumulative energy counter, a few times a second from a thread of
 * the tool, each sample stamped with CLOCK_MONOTONIC_RAW, the clock the injection library stamps
 * steps with ("s" lines of the shards), so the samples line up with the measured window.
 *
 * The library is the driver's libnvidia-ml.so.1, opened with dlopen at run time: never a build
 * dependency, and no NVML header (the few entry points used are declared here from NVIDIA's
 * reference). CANARY_GATE_NVML_LIB names another file: only the tests set it (a stand-in,
 * tests/standin/nvml_standin.c). Without the library, or when nvmlInit fails, every figure is
 * unavailable with the reason; a function the library lacks or refuses leaves its figure unknown.
 *
 * Units: clocks MHz, temperature degrees C, power mW, energy mJ (as NVML gives them), times ns.
 * Threading: cg_nvml_sampler_start runs one thread that only calls NVML and appends to the
 * sampler's buffer under its mutex; everything else is the caller's thread. Never prints.
 */
#ifndef CG_NVML_H
#define CG_NVML_H

#include "artifact.h"
#include "err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CG_NVML_ENV_LIB "CANARY_GATE_NVML_LIB" /* tests only: the library to open */
/* "0" leaves NVML closed for the run (its figures unavailable with that reason): the sampling's
 * own cost measured against it (ci/gpu-check's gpu-state group). */
#define CG_NVML_ENV_OFF "CANARY_GATE_NVML"
#define CG_NVML_SONAME "libnvidia-ml.so.1"
#define CG_NVML_INTERVAL_MS 200               /* between samples: 5 a second */
#define CG_NVML_MAX_SAMPLES 1000000           /* per device per run (about 55 h at 5/s) */
#define CG_NVML_SAMPLE_OTHERS 4               /* other processes' ids kept per sample */

/* One reading of one device; a figure NVML would not give is -1 (reasons: reasons_ok false,
 * energy: energy_ok false, processes: n_other -1). */
struct cg_nvml_sample {
    int64_t t_ns;          /* CLOCK_MONOTONIC_RAW */
    int32_t sm_mhz, mem_mhz, temp_c;
    int64_t power_mw;
    uint64_t reasons;      /* NVML's clock event reason bits */
    bool reasons_ok;
    uint64_t energy_mj;    /* cumulative since the driver loaded; may wrap */
    bool energy_ok;
    bool canary_seen;      /* one of the canary's processes (the tool's descendants) ran on it */
    int32_t n_own;         /* how many of them */
    int32_t n_other;       /* processes this namespace sees that are not the tool's, -1 unknown */
    uint32_t other[CG_NVML_SAMPLE_OTHERS];
    int32_t n_unseen; /* processes this namespace cannot see (a container sees the driver's
                       * host PIDs, the canary's own among them): cg_nvml_summarize */
    uint32_t unseen[CG_NVML_SAMPLE_OTHERS];
};

struct cg_nvml;
struct cg_nvml_sampler;
struct cg_shard; /* shard.h */

/* Opens and initialises NVML. 0 with *out set; or CG_EINPUT with why NVML is unavailable in
 * reason (cap bytes): "cannot open libnvidia-ml.so.1: ...", "nvmlInit_v2: <NVML's string>". */
int cg_nvml_open(struct cg_nvml **out, char *reason, size_t cap);

/* Shuts NVML down and closes the library (NULL is fine). */
void cg_nvml_close(struct cg_nvml *n);

/* The settings of the device the canary used first (uuid; NULL: device 0): power limit,
 * persistence mode, application clocks and their defaults, into e (initialised here). */
void cg_nvml_env(struct cg_nvml *n, const char *uuid, struct cg_gpu_env *e);

/* Starts sampling every device every interval_ms on a thread of its own, one sample at once.
 * CG_ENOMEM, or CG_EIO when the thread cannot start. */
int cg_nvml_sampler_start(struct cg_nvml *n, long interval_ms, struct cg_nvml_sampler **out,
                          struct cg_err *err);

/* Takes a last sample, stops the thread and waits for it. The samples stay readable. */
void cg_nvml_sampler_stop(struct cg_nvml_sampler *s);

/* The state of the devices the canary used over [t0_ns, t1_ns] (its measured window, on
 * CLOCK_MONOTONIC_RAW) into g (initialised here): the devices whose UUID is among uuids (the
 * shards' "uuid" lines, one per process and device: how many of the canary's processes each
 * device runs), else those a canary process was seen on. After stop. 0 or CG_ENOMEM. */
int cg_nvml_sampler_state(const struct cg_nvml_sampler *s, const char *const *uuids,
                          size_t n_uuids, int64_t t0_ns, int64_t t1_ns, struct cg_gpu_state *g);

/* The readings of the devices a canary process was seen on (every device when none was) for a
 * trace's counters (trace.h): SM clock, power and temperature, in time order per device, into
 * *out (malloc'ed; NULL and 0 when there is none). After stop. 0 or CG_ENOMEM. */
struct cg_trace_sample;
int cg_nvml_sampler_trace(const struct cg_nvml_sampler *s, struct cg_trace_sample **out,
                          size_t *n);

/* Stops the sampler if it runs and frees it (NULL is fine). */
void cg_nvml_sampler_free(struct cg_nvml_sampler *s);

/* The figures of one device over [t0_ns, t1_ns] from its samples (in time order) into d, whose
 * index and uuid are left alone: the samples inside the window (or, when none is, the last one
 * before and the first after), and the energy: the cumulative counter unwrapped (a reading
 * below the last is the 64-bit counter wrapping) and interpolated linearly at t0 and t1. A
 * counter that steps back by more than a wrap allows (a driver reload), unreadable in some
 * sample, or samples that do not cover the window leave energy_j NAN with energy_reason set.
 * Another process is in a sample when it lists a process this namespace sees that is not the
 * tool's, or more processes this namespace cannot see than own_procs (the canary's processes on
 * this device) less those of them it saw: inside a container the driver lists host PIDs, the
 * canary's own among them. Pure. 0 or CG_ENOMEM. */
int cg_nvml_summarize(const struct cg_nvml_sample *s, size_t n, int64_t t0_ns, int64_t t1_ns,
                      int64_t own_procs, struct cg_gpu_device *d);

/* One run's sampling, for the collector: begun before the canary starts, ended once its shards
 * are merged. Without NVML it carries the reason. */
struct cg_nvml_run {
    struct cg_nvml *nvml;
    struct cg_nvml_sampler *sampler;
    char reason[256]; /* why nothing is sampled, "" when sampling */
};

/* Opens NVML and starts sampling (or records why not). Never fails the run. */
void cg_nvml_run_begin(struct cg_nvml_run *nr);

/* The GPU UUIDs the shards name into out (at most cap, pointing into the shards), each once per
 * process: the shards of one pid (the images of a process that exec'd itself) name its GPUs
 * once. Returns how many. */
size_t cg_nvml_shard_uuids(const struct cg_shard *shards, size_t n, const char **out, size_t cap);

/* Stops sampling and fills run->gpu over the run's measured window (from the shards: their
 * steps and "uuid" lines), its MFU from a's settings (flops_per_token, precision, the peak
 * table or peak_flop_per_clock) and the GPU model, and a->env.gpu_env once. Every field says why
 * it is unavailable: NVML missing, no energy counter, "not available: give --flops-per-token".
 * Closes NVML. 0 or CG_ENOMEM. */
int cg_nvml_run_end(struct cg_nvml_run *nr, const struct cg_shard *shards, size_t n,
                    int64_t warmup, int64_t steps, struct cg_run *run, struct cg_artifact *a);

/* The MFU of a run from its SM clock and tokens/sec (cg_gpu_mfu) and a's settings, into
 * run->gpu.mfu, peak_flops and mfu_reason. 0 or CG_ENOMEM. */
int cg_nvml_run_mfu(struct cg_run *run, const struct cg_artifact *a);

/* The line a canary prints to say its model FLOPs per token, forward and backward (the
 * built-in canary and examples/pytorch/train_gpt.py do): "canary-gate flops_per_token: N". */
#define CG_NVML_FLOPS_LINE "canary-gate flops_per_token: "

/* N of the first CG_NVML_FLOPS_LINE line (at a line's start, a whole number 1 .. 1e18) in the
 * first 16 MiB of the file at path (the canary's log); -1 when there is none or the file cannot
 * be read. */
int64_t cg_nvml_flops_from_log(const char *path);

/* The measured window of a run from its processes' step lines: the earliest start of the
 * first measured step (index warmup) and the latest end of the last (warmup + steps - 1, or the
 * last step seen), CLOCK_MONOTONIC_RAW. False when no process has a measured step. */
bool cg_nvml_window(const struct cg_shard *shards, size_t n, int64_t warmup, int64_t steps,
                    int64_t *t0_ns, int64_t *t1_ns);

#endif
