/*
 * gpu_rule: runs measured while the GPU was held back by something that is not the workload's
 * own (docs/statistics.md, "The GPU's own state"), and what the verdict does about them.
 *
 * A run is held back when some device it used (runs[].gpu_state) spent more than
 * CG_GPU_HELD_MIN_SHARE_PCT of the samples of its measured window under a clock event reason
 * that is not the workload's own (HW slowdown, SW and HW thermal slowdown, HW power brake:
 * cg_gpu_reason_external), or with another process on the GPU; except by a cause (device and
 * reason, or another process) present in every run of both sides: the machine's condition, alike
 * on both (a tenant's process that stays, a GPU that always throttles), which holds no run back
 * (else no timing FAIL could ever stand there) up to the baseline's highest share of it: a run
 * where it filled more than CG_GPU_HELD_MIN_SHARE_PCT points more of the samples is held back.
 * The sides as a whole are not comparable when the SM clock's median over the runs moved by more
 * than CG_GPU_CLOCK_MOVED_PCT between them (unless the slower side was held by its own power
 * draw: the SW power cap in half its samples or more), or when their application clocks differ.
 *
 * The rule (applied by cg_verdict_decide, verdict.c): a timing metric (step time mean, p95,
 * floor, tokens/sec) or a metric of the GPU's state (energy per token, MFU) that FAILs is
 * INCONCLUSIVE with the reason when the clocks moved (for a timing metric only when the current
 * side's are the lower: a faster clock cannot make steps slower; energy per token and MFU, over
 * the clock's peak, move with the clock either way), or when held-back runs decide it: without
 * them, both sides' (the same test on the other runs' values: the floor's own, Mann-Whitney and
 * Hodges-Lehmann on the logs for the others; at least CG_TIMING_MIN_RUNS a side) it would not
 * FAIL. For a timing metric only the current side's held-back runs can bring the rule in: a GPU
 * held back runs slower, so a held-back baseline can only hide a slowdown, never make one; left
 * out of the re-test it can only make one clearer, and a baseline with too few runs left keeps
 * them. Never FAIL for the GPU's condition; a FAIL the clean runs show too stands. Pure; not
 * thread-safe.
 */
#ifndef CG_GPU_RULE_H
#define CG_GPU_RULE_H

#include "artifact.h"

#include <stdbool.h>
#include <stddef.h>

/* Beyond this change of the SM clock's median between the sides, the clocks moved. */
#define CG_GPU_CLOCK_MOVED_PCT 3.0
/* A cause holds a run back when seen in more than this share of a device's samples over the
 * run's window: a cause present for a share s of the window that slows the GPU k times moves
 * the run's mean by about s (k - 1), so at 1% and a halved clock (HW slowdown halves it or
 * more) about 1%, under every default timing threshold; one sample in a long run is not a run
 * held back. */
#define CG_GPU_HELD_MIN_SHARE_PCT 1.0
/* Whether a cause seen in `seen` of a device's samples holds its run back: more than
 * CG_GPU_HELD_MIN_SHARE_PCT of them (any, when the count of samples is unknown). */
bool cg_gpu_held_share(int64_t seen, int64_t samples);

/* Room for the causes present in every run of both sides: every (device, cause) a run can
 * have. */
#define CG_GPU_MAX_CONSTANT (CG_GPU_MAX_DEVICES * (CG_GPU_R_N + 1))

/* A cause present in every run of both sides: the machine's condition up to the baseline's share
 * of it. */
struct cg_gpu_constant {
    long long device; /* NVML index */
    int cause;        /* enum cg_gpu_reason, or CG_GPU_R_N: another process */
    double share_pct; /* the baseline's highest share of a run's samples it was seen in */
    size_t above;     /* current runs it filled more than CG_GPU_HELD_MIN_SHARE_PCT points more
                       * of (held back for it) */
};

struct cg_gpu_check {
    size_t held[2];         /* the baseline's and the current side's runs held back */
    char reason[400];       /* "GPU 0 throttled (HW slowdown) during 6 of 15 current runs", the
                             * commonest cause a side with held runs had; "" when none */
    char side_reason[2][160]; /* the baseline's and the current side's clause of reason, "" for
                               * a side without held runs */
    bool clocks_moved;      /* the SM clock's median moved, or the application clocks differ */
    bool clocks_lower_here; /* ...and the current side's is lower (or an application clock is):
                             * only then can the clocks explain slower steps */
    char clock_reason[160]; /* "the SM clock's median moved from 1980 to 1755 MHz between the
                             * sides (-11.4%)", "" when not */
    char settings_diff[200];/* the GPU settings that differ between the sides (clocks locked,
                             * power limit, persistence mode), for the banner; "" when none or
                             * unknown. Not a different machine by itself */
    bool decided;           /* some FAIL was made INCONCLUSIVE by this rule */
    struct cg_gpu_constant constant[CG_GPU_MAX_CONSTANT]; /* the causes present in every run of
                                                           * both sides */
    size_t n_constant;
};

/* True when run r was measured while some device it used was held back (see above) by a cause
 * other than g's constant ones (g NULL: any); *why gets the first cause ("HW slowdown",
 * "another process"), *device its NVML index. */
bool cg_gpu_run_held(const struct cg_gpu_check *g, const struct cg_run *r, const char **why,
                     long long *device);

/* Fills g from the two sides (pure). */
void cg_gpu_check_assess(const struct cg_artifact *base, const struct cg_artifact *cur,
                         struct cg_gpu_check *g);

/* The settings that differ between two environments' GPU settings into dst ("" when none or
 * either is unknown): "clocks locked on the baseline, not here; power limit 700 W and 500 W". */
void cg_gpu_settings_diff(const struct cg_gpu_env *b, const struct cg_gpu_env *c, char *dst,
                          size_t n);

/* The settings of one environment, for the report's environment table: "clocks locked at
 * 1410 MHz SM, 1593 MHz memory, power limit 700 W, persistence mode on"; "not recorded" or the reason when unknown. */
void cg_gpu_env_text(const struct cg_gpu_env *e, char *dst, size_t n);

#endif
