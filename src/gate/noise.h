/*
 * noise: what A/A runs (the same canary on both sides) say about a runner, for 'canary-gate aa'.
 * The words (run, step, side, look, spending, floor, fast state, confirmation): the glossary
 * atop docs/statistics.md.
 *
 * Noise per metric: the within-run coefficient of variation (spread of the per-step values inside
 * one run: step times for the step-time metrics, per-step tokens/s for tokens/s; the median over
 * runs; memory has one value per run and none), what that within-run spread alone would predict
 * for the run-to-run spread of a run's mean (within / sqrt(steps), if steps were independent),
 * and the between-run coefficient of variation (spread of the per-run values: the noise the gate
 * compares against). CVs are sample standard deviation over mean, in percent.
 *
 * False alarms: the pooled runs are divided into many A/A decisions, each a baseline and a
 * current side of `side` runs with no run on both, and the verdict is computed on each at the
 * given thresholds. With 2 x side runs every ordered split is used when there are at most
 * CG_NOISE_MAX_SPLITS of them; otherwise that many are drawn at random (seeded). The false-alarm
 * rate is the share of decisions whose verdict is FAIL. Under exchangeable runs (no drift between
 * runs) it is the probability that one comparison of two sides of this runner fails with no
 * change, given these runs' spread; splits of the same runs are not independent, so it is the
 * figure for these runs, not a long-run frequency.
 *
 * Recommended thresholds: for each gated metric, the smallest max_regression_pct (rounded up to
 * 0.1) at which the share of decisions that would FAIL on that metric is at most the target:
 * the decisions whose evidence passes (p <= alpha with min_runs for timing; growth above the
 * byte tolerance for memory) with the (k+1)-th largest regression, k = floor(target x decisions).
 *
 * Pure; the views it compares point into the pool. Not thread-safe (verdicts are).
 */
#ifndef CG_NOISE_H
#define CG_NOISE_H

#include "artifact.h"
#include "err.h"
#include "thresholds.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CG_NOISE_MAX_SPLITS 2000

struct cg_noise_metric {
    bool measured;               /* every run has the metric */
    double median;               /* of the per-run values */
    double within_cv_pct;        /* NAN for memory */
    double steps_predict_cv_pct; /* within / sqrt(steps): step time mean and tokens/s, else NAN */
    double between_cv_pct;
    size_t fails;           /* A/A decisions whose verdict failed this metric */
    size_t could_fail;      /* decisions whose evidence would fail it at a low enough threshold */
    double threshold_pct;   /* the thresholds' max_regression_pct */
    double recommended_pct; /* NAN when no decision could fail at any threshold */
};

struct cg_noise {
    size_t runs;                /* pooled runs */
    size_t side;                /* runs per side of a decision */
    size_t decisions;           /* A/A decisions compared */
    bool every_split;           /* every ordered split was used (else a seeded sample) */
    size_t fails, inconclusive; /* overall verdicts */
    double target;              /* false-alarm rate the recommendation keeps, as a fraction */
    struct cg_noise_metric m[CG_M_COUNT];
};

/* Analyses the pool (at least 2 x side runs, side >= 1) at thresholds t; target is a fraction
 * (0.01 for 1%). CG_EINPUT when the pool is too small, CG_ENOMEM. */
int cg_noise_analyse(const struct cg_artifact *pool, size_t side, const struct cg_thresholds *t,
                     double target, uint64_t seed, struct cg_noise *out, struct cg_err *err);

#endif
