/*
 * diagnose: why a run is slow or hungry, from what was measured.
 *
 * A handful of rules look at the current artifact, and at the baseline when there is one, and
 * each produces at most a few findings: a rule id, a severity, one line of evidence with its
 * figures, and a suggested action. Rules read only the artifacts (steps with their GPU busy
 * time and loss, per-op totals, peaks); they never decide the verdict. Figures are pooled over
 * every run of a side: per-step values are totals over all runs divided by all measured steps.
 * Thresholds are the CG_DIAG_* constants below, documented in docs/diagnosis.md.
 *
 * Severity: a WARNING is a pattern that is new or grew against the baseline, a likely cause of
 * a change; a NOTE is a pattern present on both sides (or with no baseline to compare), a
 * standing opportunity. Findings are ordered warnings first, then by rule.
 *
 * A finding's text may contain an op or family name from an artifact, cut to
 * CG_DIAG_SUBJECT_MAX bytes at a character boundary: renderers must escape it. Pure functions,
 * no allocation kept; thread-safe for distinct outputs.
 */
#ifndef CG_DIAGNOSE_H
#define CG_DIAGNOSE_H

#include "artifact.h"
#include "err.h"

#include <stddef.h>

/* GPU idle share of step time (1 - busy/wall) that is high on its own, and its growth (points)
 * against the baseline that makes it a warning. */
#define CG_DIAG_IDLE_HIGH_PCT 30.0
#define CG_DIAG_IDLE_GROWTH_PTS 10.0
/* Copies' share of GPU op time (memcpy / (kernel + memcpy + memset)) and its growth (points). */
#define CG_DIAG_COPY_HIGH_PCT 20.0
#define CG_DIAG_COPY_GROWTH_PTS 10.0
/* Copies from pageable host memory: their time as a share of step time. */
#define CG_DIAG_PAGEABLE_MIN_STEP_PCT 1.0
/* Launch-bound: at least this many kernel launches per step with a mean below this duration;
 * a warning when launches per step grew by this much or the baseline was not launch-bound. */
#define CG_DIAG_TINY_MIN_CALLS 100.0
#define CG_DIAG_TINY_KERNEL_NS 10000.0
#define CG_DIAG_TINY_GROWTH_PCT 25.0
/* A kernel family new or vanished with at least this share of its side's kernel time; at most
 * CG_DIAG_FAMILY_MAX such findings. */
#define CG_DIAG_FAMILY_MIN_SHARE_PCT 5.0
#define CG_DIAG_FAMILY_MAX 4
/* Peak memory growth (median over runs) beyond both limits: device, and host RSS when a side
 * has no device figure. */
#define CG_DIAG_DEVICE_GROWTH_PCT 2.0
#define CG_DIAG_DEVICE_GROWTH_BYTES (16.0 * 1024 * 1024)
#define CG_DIAG_RSS_GROWTH_PCT 10.0
#define CG_DIAG_RSS_GROWTH_BYTES (64.0 * 1024 * 1024)
/* Host range growth: every current run's time per step in the range above every baseline
 * run's by at least this share of the baseline's step time and this share of the range's own
 * (pooled) time, while GPU time per step changed by less than CG_DIAG_GPU_FLAT_PCT; only with
 * CG_DIAG_RANGE_MIN_RUNS runs a side (as timing is judged: processes run at speeds of their own,
 * and a range's host time follows the process). */
#define CG_DIAG_RANGE_GROWTH_STEP_PCT 2.0
#define CG_DIAG_RANGE_GROWTH_PCT 10.0
#define CG_DIAG_GPU_FLAT_PCT 5.0
#define CG_DIAG_RANGE_MIN_RUNS 3
/* Loss divergence, from runs with at least CG_DIAG_LOSS_MIN_STEPS steps that carry a loss:
 * the mean loss of a run's last quarter of those steps against its first quarter (rise) and
 * against the baseline's last quarter (final), medians over runs, in percent. Rising by
 * CG_DIAG_LOSS_RISE_PCT (and that much more than the baseline's curve), or a final loss
 * CG_DIAG_LOSS_FINAL_PCT above the baseline's, is a finding. */
#define CG_DIAG_LOSS_MIN_STEPS 4
#define CG_DIAG_LOSS_RISE_PCT 5.0
#define CG_DIAG_LOSS_FINAL_PCT 5.0

#define CG_DIAG_MAX_FINDINGS 16
#define CG_DIAG_SUBJECT_MAX 120
#define CG_DIAG_TEXT_MAX 512

enum cg_diag_rule {
    CG_DIAG_HOST_BOUND,
    CG_DIAG_COPY_SHARE,
    CG_DIAG_PAGEABLE_COPIES,
    CG_DIAG_LAUNCH_BOUND,
    CG_DIAG_KERNEL_CHOICE,
    CG_DIAG_MEMORY_GROWTH,
    CG_DIAG_HOST_RANGE_GROWTH,
    CG_DIAG_LOSS_DIVERGENCE,
    CG_DIAG_STRAGGLER, /* one rank consistently the slowest (straggler.h's thresholds) */
    CG_DIAG_RULE_COUNT
};

enum cg_diag_severity { CG_DIAG_NOTE, CG_DIAG_WARNING };

struct cg_finding {
    enum cg_diag_rule rule;
    enum cg_diag_severity severity;
    double current;   /* the rule's main figure on this run, NAN when not measured */
    double baseline;  /* the same on the baseline, NAN when none */
    const char *unit; /* unit of current and baseline: "pct", "ns", "bytes", "calls", "loss" */
    char subject[CG_DIAG_SUBJECT_MAX + 4]; /* op or family name it is about, "" when none */
    char finding[CG_DIAG_TEXT_MAX];        /* one line with the evidence */
    const char *action;                    /* suggested action (static text) */
};

struct cg_diagnosis {
    struct cg_finding items[CG_DIAG_MAX_FINDINGS];
    size_t n;
    size_t n_dropped; /* findings beyond CG_DIAG_MAX_FINDINGS */
};

/* Runs every rule on current, against baseline when it is not NULL (rules that need a baseline
 * are skipped without one). d is overwritten. Returns 0 or CG_ENOMEM (d is then empty). */
int cg_diagnose(const struct cg_artifact *baseline, const struct cg_artifact *current,
                struct cg_diagnosis *d);

/* Stable rule id for reports and JSON ("host_bound", "copy_share", ...). */
const char *cg_diag_rule_name(enum cg_diag_rule r);

/* Short human title of a rule ("Host-bound", "Copies' share of GPU time", ...). */
const char *cg_diag_rule_title(enum cg_diag_rule r);

/* "note" or "warning". */
const char *cg_diag_severity_name(enum cg_diag_severity s);

#endif
