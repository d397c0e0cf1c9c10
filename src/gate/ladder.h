/*
 * ladder: the decision ladder, the one rule by which a timing comparison (a metric of the
 * verdict, a pair of the paired verdict, an A/A decision of the noise analysis, a gated share of
 * the step's anatomy) becomes an outcome, and the one rule by which a later finding holds a FAIL
 * back as INCONCLUSIVE (another machine, the floor, the GPU's own state, a confirmation that did
 * not fail). Pure functions; no I/O.
 */
#ifndef CG_LADDER_H
#define CG_LADDER_H

#include "outcome.h"
#include "thresholds.h"

#include <stdbool.h>

/* Runs a side needs before a timing metric (step time mean, p95, floor, tokens/sec) or a gated
 * share of the step's anatomy can be judged, whatever the thresholds' min_runs: on a GPU runner
 * each process runs at a speed of its own for its whole life (a library's algorithm choice,
 * memory placement, clocks), so with fewer processes a side nothing shows how much processes
 * differ, and a comparison within one run mistakes a process's state for a change. With fewer,
 * timing is INCONCLUSIVE with that reason (shown, never PASS or FAIL); exact counts and memory
 * still decide from one run. docs/statistics.md. */
#define CG_TIMING_MIN_RUNS 3
/* The note of a timing metric with fewer than CG_TIMING_MIN_RUNS runs on a side. */
#define CG_TIMING_FEW_RUNS_NOTE                                                                    \
    "timing needs 3 runs a side: one process cannot show how much processes differ"

/* The rungs of the decision ladder of a timing metric (cg_ladder_classify), each with its
 * outcome (cg_ladder_outcome). */
enum cg_rung {
    CG_RUNG_PASS,           /* PASS: within the threshold, or better without significance */
    CG_RUNG_IMPROVED,       /* IMPROVED: better beyond the threshold, significantly */
    CG_RUNG_FAIL,           /* FAIL: worse beyond the threshold, significantly, enough runs */
    CG_RUNG_TOO_FEW_RUNS,   /* INCONCLUSIVE: worse beyond the threshold, min_runs not met */
    CG_RUNG_NOT_SIGNIFICANT /* INCONCLUSIVE: worse beyond the threshold, p_worse > alpha */
};

/* What the ladder reads of a timing metric's comparison. */
struct cg_evidence {
    double regression_pct; /* estimated change in the worse direction, percent */
    double p_worse;        /* one-sided p-value, H1: worse */
    double p_better;       /* one-sided p-value, H1: better */
    bool enough_runs;      /* min_runs met: runs on each side, or pairs (the caller counts) */
};

/* The decision ladder of a timing metric, the one rule the verdict, the paired verdict and the
 * A/A noise analysis apply: with regression r, threshold T = lim->max_regression_pct and
 * alpha = lim->alpha (a sequential look's own alpha when the thresholds are the look's),
 *   r > T: enough runs and p_worse <= alpha -> FAIL; too few runs -> TOO_FEW_RUNS; else
 *          NOT_SIGNIFICANT
 *   -r > T and p_better <= alpha -> IMPROVED
 *   else -> PASS
 * A NAN r or p never passes a comparison. Pure. */
enum cg_rung cg_ladder_classify(const struct cg_evidence *e, const struct cg_metric_limits *lim);

/* The outcome of a rung: CG_OUT_PASS, CG_OUT_IMPROVED, CG_OUT_FAIL or CG_OUT_INCONCLUSIVE. */
enum cg_outcome cg_ladder_outcome(enum cg_rung rung);

/* A FAIL held back: it becomes INCONCLUSIVE (the caller says why in its note); no other outcome
 * changes, so nothing is ever held back into a PASS. True when o was a FAIL. */
bool cg_ladder_hold_back(enum cg_outcome *o);

#endif
