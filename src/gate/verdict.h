/*
 * verdict: compares a current artifact with a baseline under thresholds and decides.
 * The words (run, step, side, look, spending, floor, fast state, confirmation): the glossary
 * atop docs/statistics.md.
 *
 * The run is the unit of replication: each gated timing metric compares the per-run summaries of
 * the two sides with a one-sided Mann-Whitney test and a Hodges-Lehmann estimate of the log
 * ratio with the interval that inverts the same test (confidence 1 - 2*alpha; the floor's null
 * distribution comes from splits of the runs, cg_floor_compare). When a
 * side has a single run, a moving-block bootstrap over its steps is used instead, and the
 * result says so. Peak memory is gated with fixed tolerances. Per-op deltas are diagnostics with
 * Benjamini-Hochberg control and never decide; neither does the diagnosis (diagnose.h), which the
 * verdict carries for the reports. Percentages are percent; times nanoseconds.
 *
 * A verdict points into the two artifacts and the thresholds it was computed from: they must
 * outlive it. Not thread-safe.
 */
#ifndef CG_VERDICT_H
#define CG_VERDICT_H

#include "anatomy.h"
#include "ladder.h"
#include "artifact.h"
#include "counts.h"
#include "diagnose.h"
#include "floor.h"
#include "gpu_rule.h"
#include "outcome.h"
#include "err.h"
#include "history.h"
#include "pattern.h"
#include "stats.h"
#include "thresholds.h"

#include <stdbool.h>

struct cg_seq_info;


enum cg_method {
    CG_METHOD_NONE,
    CG_METHOD_RUNS,      /* Mann-Whitney + Hodges-Lehmann over per-run summaries */
    CG_METHOD_BOOTSTRAP, /* within-run moving-block bootstrap (too few runs on a side) */
    CG_METHOD_FIXED,     /* fixed tolerance (memory) */
    CG_METHOD_PAIRED,    /* Wilcoxon signed-rank + Hodges-Lehmann over interleaved run pairs */
    CG_METHOD_FAST_RUNS  /* the floor: Mann-Whitney + Hodges-Lehmann over the fast runs' floors,
                          * null distribution over splits of all runs (cg_floor_compare) */
};

struct cg_metric_result {
    enum cg_metric metric;
    double baseline;    /* median of the baseline's per-run values (NAN when unavailable) */
    double current;     /* median of the current side's per-run values */
    double delta_pct;   /* estimated change of current against baseline */
    double ci_low_pct;  /* interval of delta_pct; memory: the range over all run pairs */
    double ci_high_pct;
    double p_value;     /* one-sided, H1: current is worse; NAN when not tested */
    double regression_pct; /* delta in the "worse" direction (tokens/sec: -delta_pct) */
    double threshold_pct;
    double threshold_bytes; /* memory only, else NAN */
    enum cg_outcome outcome;
    enum cg_method method;
    char note[256];     /* why an outcome is what it is, "" when plain */
    size_t fast_runs[2]; /* the floor compared over runs: the baseline's and current side's runs
                          * in the pooled fast state (floor.h); 0 and 0 otherwise */
    bool own_states;     /* the floor compared over runs: a side had no run in the pooled fast
                          * state, so each side's own fast state was compared */
    bool wants_runs;    /* INCONCLUSIVE for a reason more current runs can settle: not
                         * significant, too few current runs or fast runs (the baseline has
                         * enough) */
    bool vanished;      /* measured on every baseline run, missing (or zero) on some current
                         * run: the canary changed; INCONCLUSIVE */
    bool grown_some;    /* memory: FAILed by the share of runs grown above the pooled median
                         * beyond the limit (some processes), not by the medians; the note says
                         * how many */
    bool other_machine; /* a FAIL made INCONCLUSIVE because the machines differ
                         * (cg_verdict_decide): the note says so; cleared when it is rewritten */
};

/* machine_diff when the sides ran on differently shaped worlds (nodes, ranks, GPUs per node). */
#define CG_SHAPE_DIFF "the node shape (runs[].ranks: nodes, ranks and GPUs per node)"
/* Room for a side's node shape in the verdict (the reports' text; cut at a character's end). */
#define CG_VERDICT_SHAPE 160

/* Memory grown in some runs only: the share of runs above the pooled median beyond the limit,
 * compared between the sides by Fisher's exact test at this alpha (verdict.c, grown_share). */
#define CG_MEMORY_GROWN_ALPHA 0.05

/* The level of memory's tests of the runs (the runs grown, the runs of overlapping sides): the
 * thresholds' alpha of that metric when given (the main command's looks spend it), else
 * CG_MEMORY_GROWN_ALPHA. */
double cg_verdict_memory_alpha(const struct cg_metric_limits *lim);

/* Process states (floor.h): the share of each side's runs outside the pooled fast state, the
 * current side's against the baseline's, one-sided (Fisher's exact test). A change that makes a
 * slow state likelier (a bad algorithm choice in some processes) leaves the fast state's floor
 * where it was; this is where it shows. Gated only when the thresholds give "slow_state". */
struct cg_states {
    bool tested;             /* the floor was compared over runs (3 or more a side) */
    bool own_states;         /* a side had too few runs in the pooled fast state (every run of
                              * it slower, say): the floor compared each side's own fast state,
                              * and the shares are not read as states */
    size_t slow[2], runs[2]; /* the baseline's and the current side's runs in slow states, of */
    double rise_points;      /* the current share minus the baseline's, percentage points */
    double p_value;          /* H1: the current side's share is higher */
    double alpha;            /* the gate's ("slow_state"), else the floor's */
    bool finding;            /* rise_points > 0 and p_value <= alpha: reported, gated or not */
    enum cg_outcome outcome; /* NOT_GATED, or PASS / FAIL / INCONCLUSIVE when gated; UNAVAILABLE
                              * when not tested */
    bool other_machine;      /* a FAIL made INCONCLUSIVE because the machines differ */
};

enum cg_op_status { CG_OPD_BOTH, CG_OPD_NEW, CG_OPD_VANISHED };

struct cg_op_delta {
    const char *name;   /* points into an artifact */
    const char *family;
    enum cg_op_kind kind;
    enum cg_op_status status;
    double base_ns;     /* median over runs of time per step */
    double cur_ns;
    double delta_ns;
    double delta_pct;   /* NAN for new ops */
    double base_calls;  /* calls per step */
    double cur_calls;
    double p_value;     /* two-sided Mann-Whitney over runs, NAN with fewer than 2 runs a side */
    double q_value;     /* Benjamini-Hochberg adjusted */
    bool significant;
};

struct cg_verdict {
    enum cg_outcome overall; /* CG_OUT_PASS, CG_OUT_FAIL or CG_OUT_INCONCLUSIVE */
    struct cg_metric_result metrics[CG_M_COUNT];
    struct cg_op_delta *ops; /* listed ops, largest absolute change first */
    size_t n_ops;
    size_t n_ops_compared;   /* all distinct ops on either side (ranges only when one side has
                              * GPU metrics and the other none: its kernels, copies and sets
                              * are not measured, not vanished or new) */
    size_t n_ops_new, n_ops_vanished, n_ops_significant;
    const char *machine_diff; /* first differing machine field, NULL when same */
    /* The sides' node shapes (cg_artifact_shape: that of the runs with ranks, "" for one
     * process; "runs differ: ..." when a side's runs differ): different shapes, or a side of
     * two, are different machines (machine_diff CG_SHAPE_DIFF). */
    char shape[2][CG_VERDICT_SHAPE];
    const char *canary_diff;  /* first differing canary field, NULL when same */
    /* Why the sides' steps are not alike, "" when they are: ranges named as a step that were no
     * step (nested in a step, or of a thread other than the steps') on one side and not the
     * other, or on one side and not counted on the other (runs written before they were). The
     * timing metrics that would PASS, FAIL or improve are INCONCLUSIVE with it as their note. */
    char steps_differ[256];
    char nothing_gated[64];   /* the --only groups when none of their metrics, counts or parts
                               * could be gated on these runs (all unavailable or shown only):
                               * the verdict is INCONCLUSIVE, never a PASS of nothing; "" else */
    bool steps_redefined;     /* the sides' steps come from different places or ranges of other
                               * names or optimizers (settings.steps_from, settings.step_range,
                               * settings.step_optimizer; steps_differ says which): a step is
                               * another unit of work, so counts per step and the anatomy are
                               * INCONCLUSIVE too; memory still decides */
    bool downgraded;          /* a FAIL became INCONCLUSIVE because the machine differs (some
                               * metric's other_machine) */
    bool within_run;          /* some metric fell back to the within-run bootstrap */
    int64_t baseline_runs_needed; /* cg_verdict_min_baseline_runs of the thresholds */
    bool weak_baseline;       /* the baseline has fewer runs than that: no timing metric can
                               * FAIL, so none PASSes either (INCONCLUSIVE, with the reason) */
    bool gpu_lost;            /* cg_verdict_gpu_lost: FAIL (peak device memory carries it) */
    const struct cg_artifact *gpu_metrics_missing; /* the side (baseline or current) without
                              * GPU metrics on the same machine: its canary initialised CUDA but
                              * could not be traced (CUPTI held by another subscriber). Not a
                              * machine difference: timing still decides, device memory is
                              * unavailable with the side's reason. NULL otherwise */
    struct cg_counts counts;  /* exact per-step counts (counts.h): a FAIL decides at once */
    struct cg_anatomy anatomy;     /* where the step's time goes; GPU idle and exposed
                                    * communication shares gated like timing metrics (anatomy.h) */
    struct cg_diagnosis diagnosis; /* why it is slow or hungry: never decides */
    struct cg_states states;   /* the slow process states' share, both sides */
    struct cg_pattern pattern; /* a slowdown locked to the step phase: the floor rule lets a FAIL
                                * stand when it accounts for it (pattern.h) */
    struct cg_gpu_check gpu;   /* runs the GPU held back, clocks that moved: a FAIL they decide
                                * is INCONCLUSIVE (gpu_rule.h) */
    const struct cg_artifact *baseline;
    const struct cg_artifact *current;
    const struct cg_thresholds *thresholds;
    const struct cg_seq_info *seq; /* runs added and FAIL confirmation (sequential.h), or NULL */
    /* A regression accepted on main lately (cg_history_recent_accept), which the reports
     * mention, and the runs of main recorded since; NULL when none (or no history given). */
    const struct cg_history_entry *accepted;
    size_t accepted_runs_since;
};

/* Compares current against baseline. On success v owns an op list (cg_verdict_release frees it).
 * Fails only when memory runs out (CG_ENOMEM). */
int cg_verdict_compute(const struct cg_artifact *baseline, const struct cg_artifact *current,
                       const struct cg_thresholds *t, struct cg_verdict *v, struct cg_err *err);

/* True when the sides' steps come from different places (settings.steps_from), ranges of
 * different names (settings.step_range) or different optimizers (settings.step_optimizer), with
 * the reason in why (n bytes): their step times, counts per step and anatomies measure different
 * units of work. A side that recorded none of them (an older artifact) is taken as the other's. */
bool cg_verdict_steps_redefined(const struct cg_artifact *baseline,
                                const struct cg_artifact *current, char *why, size_t n);

/* The fewest baseline runs with which some timing metric can FAIL under t: the smallest
 * min_runs of the step time mean, p95, floor and tokens/sec, and at least CG_TIMING_MIN_RUNS.
 * A baseline with fewer cannot detect a slowdown. */
int64_t cg_verdict_min_baseline_runs(const struct cg_thresholds *t);

/* True when the GPU was lost: the baseline has GPU metrics, and the current run has none because
 * its canary never initialised CUDA (known, not assumed) on a machine that has a GPU (its NVIDIA
 * driver is loaded: environment.driver_version). A change that breaks CUDA and falls back to the
 * CPU is a regression, not a different machine. */
bool cg_verdict_gpu_lost(const struct cg_artifact *baseline, const struct cg_artifact *current);

/* Takes the overall outcome from the metric and count outcomes, after the floor rule
 * ("require_floor_regression"), the machine rule (a FAIL on another machine is INCONCLUSIVE
 * unless the thresholds gate it) and the GPU rule (a FAIL that runs the GPU held back decide is
 * INCONCLUSIVE: gpu_rule.h), and within_run from their methods. cg_verdict_compute calls
 * it; callers that replace metric results call it again. */
void cg_verdict_decide(struct cg_verdict *v);

/* Sets the overall outcome from the metric and count outcomes as they stand: FAIL when one
 * FAILs, else INCONCLUSIVE when one is, else PASS (cg_verdict_decide ends with it; the
 * confirmation calls it after changing metric outcomes). */
void cg_verdict_overall(struct cg_verdict *v);

/* The reason no more runs were added, given to the notes that ask for them: each INCONCLUSIVE
 * metric whose note ends "add runs" gets why in its place, and one that more runs would settle
 * (wants_runs) gets it after its reason ("compare takes one look: the main command adds runs",
 * "30 current runs measured, the most the looks allow"), so a report never asks for runs that
 * were not added without saying why. */
void cg_verdict_explain_runs(struct cg_verdict *v, const char *why);

/* Frees what the verdict owns. */
void cg_verdict_release(struct cg_verdict *v);

/* "pass", "improved", "fail", "inconclusive", "not_gated", "unavailable". */
const char *cg_outcome_name(enum cg_outcome o);

/* A run's own value of a metric: its summary's, or for the floor cg_floor_run_ns. NAN when
 * the run lacks it (memory: not measured). */
double cg_verdict_run_value(const struct cg_run *r, enum cg_metric m);

#endif
