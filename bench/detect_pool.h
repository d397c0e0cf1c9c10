/*
 * detect_pool: bench_detect's pools of canary runs: measuring one run into a pool, and saving,
 * loading and trimming recorded pools (bench/detect --save / --load / --skip-rounds).
 */
#ifndef CG_DETECT_POOL_H
#define CG_DETECT_POOL_H

#include "artifact.h"
#include "thresholds.h"

#include <stdbool.h>
#include <stddef.h>

#define TRAIN CG_BINARY_DIR "/canary-train"

struct pool {
    char name[48];
    double work_pct;      /* --extra-work, 0 for the aa pool */
    long every;           /* --extra-work-every: 1, or N for a periodic regression (every N-th
                           * step; the .secs file says so in a second header line) */
    struct cg_artifact a; /* runs in the order measured */
    double *secs;         /* wall time of each run */
    size_t cap;
    size_t hidden; /* runs left out by --skip-rounds, kept past n_runs */
    bool done;
};

/* One canary run of pool p through 'canary-gate run --runs 1' with t's steps and warm-up (the
 * files go to directory tmp); appended to the pool with its wall time. 0 or -1 (said why). */
int cg_detect_measure_one(struct pool *p, const struct cg_thresholds *t, const char *tmp);

/* Writes every pool to DIR/pool-NAME.json (its runs) and .secs (their seconds). */
int cg_detect_save_pools(const char *dir, struct pool *pools, size_t n);

/* Reads pool p (its name set) back from DIR. */
int cg_detect_load_pool(const char *dir, struct pool *p);

/* Leaves out the runs of the first `rounds` collection rounds (per_round runs of the pool in
 * each), keeping them past n_runs (p->hidden) for cg_artifact_release. */
int cg_detect_skip_runs(struct pool *p, size_t per_round, size_t rounds);

#endif
