/*
 * detect_model: bench_detect's pools drawn from a model of per-process states instead of measured
 * (bench/detect --model): the same decisions as on measured pools, on runs whose speed is fixed
 * for each process's whole life, as the H100's PyTorch canary showed (docs/gpu.md). A model's
 * figures are those of the decision procedure under the model, not of any machine.
 */
#ifndef CG_DETECT_MODEL_H
#define CG_DETECT_MODEL_H

#include "detect_pool.h"

#include <stddef.h>
#include <stdint.h>

/* A run: steps at mean_ns x (1 + level) x its process's level x its state x a step's noise.
 * The process's level is lognormal (process_cv); with probability slow_share the process is in
 * a slow state for its whole life, slow_lo_pct to slow_hi_pct slower (uniform); each step's
 * noise is lognormal (step_cv). */
struct cg_detect_model {
    double slow_share;
    double slow_lo_pct, slow_hi_pct;
    double process_cv, step_cv;
    double mean_ns;
    uint64_t seed;
};

/* Parses "SHARE:LO:HI" (e.g. 0.5:7:28) into m (the rest set to their defaults: process CV
 * 1.5%, step CV 2%, 20 ms steps, a fixed seed). 0, or -1 (said why on stderr). */
int cg_detect_model_parse(const char *spec, struct cg_detect_model *m);

/* Fills pool p (its name and work_pct set, its artifact empty) with n runs of t's steps drawn
 * from m, the regression work_pct percent (every step), each run's seconds its steps' sum
 * (warm-up steps at the mean). 0, or -1 when memory ran out. */
int cg_detect_model_pool(struct pool *p, const struct cg_detect_model *m,
                         const struct cg_thresholds *t, size_t n);

#endif
