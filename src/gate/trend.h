/*
 * trend: main's history entries made from run artifacts (docs/history.md). Pure.
 */
#ifndef CG_TREND_H
#define CG_TREND_H

#include "artifact.h"
#include "changepoint.h"
#include "history.h"

#include <stddef.h>

/* A run entry for artifact a measured at commit on date (UTC, ISO 8601), for gate_id (may be
 * NULL): per metric the median of the runs' own values (cg_verdict_run_value) with a
 * distribution-free interval for it of at least 90% (order statistics; with fewer than 5 runs
 * the lowest and highest run), and per count the median over the runs of each run's median per
 * step (unknown when a run lacks it). Its environment is cg_trend_env_id(a). 0, CG_EINPUT (no
 * runs, no commit or date) or CG_ENOMEM. */
int cg_trend_entry(const struct cg_artifact *a, const char *commit, const char *date,
                   const char *gate_id, struct cg_history_entry *out);

/* The environment's id: 16 hex digits hashing the GPU model and count, the driver and CUDA
 * versions, the CPU model, and the measured steps and warm-up (what makes values comparable;
 * not the canary's own hash, which changes with the code measured). Malloc'ed; NULL when out of
 * memory. */
char *cg_trend_env_id(const struct cg_artifact *a);

/* The environment in words ("NVIDIA H100 80GB HBM3 x1, driver 580.159.04, CUDA 13.0, CPU ...,
 * 20 steps after 5"), truncated to fit n bytes. */
void cg_trend_env_text(const struct cg_artifact *a, char *out, size_t n);

/* A change point in one metric of the gate's history. Pointers go into the history checked. */
struct cg_trend_change {
    enum cg_metric metric;
    size_t segment;                          /* the environment segment, from 1 */
    const struct cg_history_entry *before;   /* the last run before the change */
    const struct cg_history_entry *after;    /* the first run after it */
    const struct cg_history_entry *accepted; /* an accept event between them, or NULL */
    struct cg_changepoint cp;                /* indices into the segment's runs */
    bool worse;                              /* the metric got worse (its direction) */
};

/* A metric's level across one segment with change points: its first and last stretch. */
struct cg_trend_drift {
    enum cg_metric metric;
    size_t segment;
    double first, last; /* the medians of the first and the last stretch between changes */
    double shift_pct;   /* (last / first - 1) * 100 */
    size_t changes;     /* change points in the segment */
    const struct cg_history_entry *from, *to; /* its first and last run */
};

/* The strongest split of a metric in a segment where nothing was called (cg_cp_candidate): what
 * was tested and why it fell short. */
struct cg_trend_candidate {
    enum cg_metric metric;
    size_t segment;
    struct cg_cp_candidate cand;           /* cand.cp.index: into the segment's runs */
    double alpha;                          /* the level it was tested at */
    size_t before_run, after_run;          /* the runs either side of it, from 1 in the segment */
    const struct cg_history_entry *before; /* the last run before it */
    const struct cg_history_entry *after;  /* the first run from it on */
};

struct cg_trend_report {
    struct cg_trend_change *changes; /* by segment, metric, then index */
    size_t n_changes;
    struct cg_trend_drift *drifts; /* per metric and segment with at least one change */
    size_t n_drifts;
    struct cg_trend_candidate *candidates; /* per metric and segment without a change */
    size_t n_candidates;
    size_t runs;     /* the gate's runs checked */
    size_t segments; /* environment segments (environment and restart events split them) */
};

/* Change points (cg_cp_detect under o, NULL the defaults) in every metric of the runs of gate_id
 * (NULL: the entries without one) in h, per segment, and where a metric has none in a segment its
 * strongest candidate (cg_cp_candidate); the summary entry is not a point. 0,
 * CG_EINPUT (bad options) or CG_ENOMEM. */
int cg_trend_check(const struct cg_history *h, const char *gate_id, const struct cg_cp_options *o,
                   struct cg_trend_report *r);

void cg_trend_report_release(struct cg_trend_report *r);

/* The candidate of r with the smallest p (then the largest shift) in segment (0: any), or NULL. */
const struct cg_trend_candidate *cg_trend_strongest_candidate(const struct cg_trend_report *r,
                                                              size_t segment);

#endif
