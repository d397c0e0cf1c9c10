/*
 * pattern: is a slowdown locked to the step phase? The discriminator between a periodic
 * The words (run, step, side, look, spending, floor, fast state, confirmation): the glossary
 * atop docs/statistics.md.
 * regression (every k-th step slower: periodic work added by the code) and interference on a
 * shared runner, for the floor rule (verdict.c): both leave the fastest steps alone, but only
 * code runs on a fixed step phase, in every run.
 *
 * Per run, for each period p in 2..P and phase f in 0..p-1, the log ratio of the median step
 * time at phase f (measured steps k with k mod p == f) to the median of the other steps: about
 * 0 for every (p, f) when nothing is periodic, log(1 + x) at (p, f) when every p-th step is x
 * slower. A spell of interference covers every phase alike and moves no phase's median apart.
 * P = min(CG_PATTERN_MAX_PERIOD, steps / 3), so every phase holds at least 3 steps.
 *
 * The test: for each (p, f), Mann-Whitney's z of the current runs' ratios against the
 * baseline's (current larger); the statistic is the largest z over all (p, f), and its null
 * distribution comes from splits of the runs between the sides (every split when there are at
 * most CG_STATS_SPLITS, else that many drawn with a seed from the pooled ratios), so the
 * search over periods and phases is paid for: with exchangeable runs the size is at most alpha.
 */
#ifndef CG_PATTERN_H
#define CG_PATTERN_H

#include "artifact.h"

#include <stdbool.h>
#include <stddef.h>

#define CG_PATTERN_MAX_PERIOD 10
#define CG_PATTERN_MAX_STEPS 512  /* a run's first steps used (the ratios are medians) */
#define CG_PATTERN_MIN_RUNS 3     /* runs a side */

struct cg_pattern {
    bool tested;         /* enough runs (CG_PATTERN_MIN_RUNS a side) and steps (6 a run) */
    int period;          /* the (p, f) with the largest z */
    int phase;           /* 0-based index in the measured steps, mod period */
    double p_value;      /* of the largest z under the splits; NAN when not tested */
    double excess_pct;   /* Hodges-Lehmann shift of that phase's ratio, current against baseline */
    size_t runs_slower;  /* current runs whose ratio there is above the baseline runs' median */
    size_t runs;         /* current runs */
};

/* Tests baseline against current; out->tested false (and 0) when they are too short. -1 when
 * memory ran out. */
int cg_pattern_test(const struct cg_artifact *base, const struct cg_artifact *cur,
                    struct cg_pattern *out);

/* The change of the mean step time the pattern alone accounts for, percent: one step in
 * `period` slower by excess_pct. */
double cg_pattern_mean_pct(const struct cg_pattern *p);

#endif
