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
/* Process states are told apart on the pooled runs of both sides (cg_floor_fast_state): going up
 * the pooled run floors from the lowest, a step of more than this ratio between neighbours ends
 * the fast state (once it holds its least number of runs). The H100's PyTorch processes sat in
 * states 5.4% and more apart, while processes of one state spread by 2-7% over 20 of them
 * (steps of well under 4% between neighbours). */
#define CG_FLOOR_STATE_GAP 1.04
/* and the fast state spans at most this ratio above its least runs' highest: the H100's fast
 * processes spanned 3.6%, 20 processes with pinned clocks 2-7%, while slow states began 7% up
 * and ran on without a gap (a window of 1.20 let them in: the floor lost a third of its power at
 * +5% with 75 v 15 runs, docs/statistics.md) */
#define CG_FLOOR_STATE_WINDOW 1.10

/* The pooled fast state of run floors v[n] in increasing order: how many of the lowest are in it.
 * It holds the least runs, max(CG_FLOOR_MIN_FAST_RUNS, n / 6) (a lone fast run is no state, and a
 * fast state rarer than one run in six shares its place with the slow state's fastest runs), and
 * the runs above them while each is within CG_FLOOR_STATE_GAP of its neighbour below and within
 * CG_FLOOR_STATE_WINDOW of the least runs' highest. Depends on the pooled values only, not on which
 * side a run is on. 0 for n = 0. */
size_t cg_floor_fast_state(const double *v, size_t n);

/* The floor compared over runs. Process states are told apart on the pooled runs of both sides
 * (cg_floor_fast_state), so a side whose runs all landed in a slow state is not read as fast and
 * a mixed side's slow runs are left out. The statistic is Mann-Whitney's z over the runs of the
 * pooled fast state when each side has CG_FLOOR_MIN_FAST_RUNS runs there; else (every current
 * run slower than the fast state, a uniform slowdown whose fastest runs reach into the baseline's
 * state, a spell of load on most of a side's runs) z over each side's own fast state (from its
 * lowest run up, by the same steps and window). Its null distribution is that of the whole procedure over
 * splits of the runs between the sides (every split, or CG_FLOOR_PERMUTATIONS seeded ones): with
 * exchangeable runs P(p <= alpha) <= alpha. The shift is the Hodges-Lehmann estimate of the log
 * ratio of the runs compared, and the interval inverts the same test (the critical statistic
 * turned into U for the observed sizes, cg_stats_shift_interval), so p_greater <= alpha exactly
 * when low > 0 (or low = 0 with equal floors on both sides). The share of each side's runs in the
 * slow states (outside the pooled fast state) is compared too, one-sided (Fisher's exact test):
 * a change that makes the slow state likelier is a regression that the fast state's floor does
 * not show. */
struct cg_floor_test {
    size_t fast[2];        /* the baseline's and the current side's runs compared: those in the
                            * pooled fast state (own_states: in each side's own) */
    size_t slow[2];        /* each side's runs outside the pooled fast state */
    size_t state_runs;     /* runs in the pooled fast state */
    bool own_states;       /* a side has fewer than CG_FLOOR_MIN_FAST_RUNS runs in it: each side's
                            * own fast state was compared */
    double side_floor[2];  /* each side's floor: the median of the runs compared */
    double p_greater;      /* H1: the current floor is higher */
    double p_less;         /* H1: lower */
    double share_p;        /* H1: the current side's share of slow runs is higher (Fisher) */
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

/* Keeps, in order, the values within CG_FLOOR_RUN_WINDOW of the smallest (the fast runs of one
 * side on its own, given the runs' floors: main's history, which has one side) at the front of
 * v; returns how many. */
size_t cg_floor_fast_runs(double *v, size_t n);

/* The floor of n_runs runs as one side: the median of its fast runs' floors; NAN without steps
 * or memory. */
double cg_floor_side_ns(const struct cg_run *runs, size_t n_runs);

#endif
