/*
 * floor: the step time floor, the step time of the runner's fast state, and its test over runs
 * (docs/statistics.md; the words: the glossary atop it). Pure functions of their inputs.
 */
#ifndef CG_FLOOR_H
#define CG_FLOOR_H

#include "artifact.h"
#include "stats.h"

#include <stdbool.h>
#include <stddef.h>

/* The step time floor: the step time of the runner's fast state, where the code runs with
 * nothing else slowing the machine down (docs/statistics.md). A run's floor is the median of
 * its fast steps, those within CG_FLOOR_STEP_WINDOW of its fastest step; a side's fast runs are
 * those whose floor is within CG_FLOOR_RUN_WINDOW of the side's lowest, and the side's floor is
 * their median. Interference only adds time, and both windows are ratios, so a change that
 * slows every step by x% moves the floor by x%, while a spell of load that meets some runs
 * moves it hardly at all. */
#define CG_FLOOR_RUN_WINDOW 1.20 /* CG_FLOOR_STEP_WINDOW and cg_stats_floor: stats.h */
/* Fast runs a side needs before the floor can FAIL. With fewer runs than this on a side (a
 * quick check) the floor is compared over the steps instead (a block bootstrap of the same
 * statistic, stats.h). */
#define CG_FLOOR_MIN_FAST_RUNS 3
/* Splits of the runs between the sides that the floor's test draws (cg_floor_compare); when
 * there are at most this many splits in all, every one is taken. */
#define CG_FLOOR_PERMUTATIONS CG_STATS_SPLITS

/* The floor compared over runs: which runs count as fast depends on each side's own fastest
 * run, so the selection depends on which side a run is on, and Mann-Whitney's distribution
 * would not hold for the selected runs (with i.i.d. runs a side of 75 picks a lower fastest run
 * than a side of 15 and looks faster). The test keeps the selection and takes the null
 * distribution of the whole select-then-compare procedure: the runs are split between the sides
 * again (every split, or CG_FLOOR_PERMUTATIONS seeded ones), each side selects its fast runs
 * again, and the statistic is Mann-Whitney's z of the selected runs (U standardised by its own
 * sizes, however few). With exchangeable runs P(p <= alpha) <= alpha. The shift is the
 * Hodges-Lehmann estimate of the log ratio of the selected runs, and the interval inverts the same
 * test (the critical z turned into U for the observed sizes, cg_stats_shift_interval), so p_greater
 * <= alpha exactly when low > 0 (or low = 0 with equal floors on both sides). */
struct cg_floor_test {
    size_t fast[2];        /* fast runs of the baseline and the current side */
    double p_greater;      /* H1: the current floor is higher */
    double p_less;         /* H1: lower */
    struct cg_shift shift; /* of the logs: current relative to baseline */
    bool all_splits;       /* every split was taken (the p-values are exact) */
};

/* Compares the run floors base[nb] and cur[nc] (positive; neither is modified) at level alpha
 * for the interval. The caller decides what too few fast runs (CG_FLOOR_MIN_FAST_RUNS) mean.
 * 0, or -1 when a side is empty or memory ran out. */
int cg_floor_compare(const double *base, size_t nb, const double *cur, size_t nc, double alpha,
                     struct cg_floor_test *out);

/* The smallest p cg_floor_compare can give with nb and nc runs: 1 / C(nb + nc, nb) when it
 * takes every split, else 1 / (CG_FLOOR_PERMUTATIONS + 1). */
double cg_floor_smallest_p(size_t nb, size_t nc);

/* A run's floor; NAN without steps or memory. */
double cg_floor_run_ns(const struct cg_run *run);

/* Keeps, in order, the values within CG_FLOOR_RUN_WINDOW of the smallest (the fast runs of a
 * side, given the runs' floors) at the front of v; returns how many. */
size_t cg_floor_fast_runs(double *v, size_t n);

/* The floor of n_runs runs as one side: the median of its fast runs' floors; NAN without steps
 * or memory. */
double cg_floor_side_ns(const struct cg_run *runs, size_t n_runs);

#endif
