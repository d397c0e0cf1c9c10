/*
 * counts: the exact per-step counts of two sides compared (docs/counts.md).
 *
 * For a fixed canary a count is a property of the code: kernels launched, synchronisations,
 * pageable copies, allocations and recompilations per step, and the calls per step of every NVTX
 * range name. So a change is decided on the first look with no statistics: a run's value is the
 * median over its steps (a range name's: its calls over the measured steps; against a side the
 * same in every step of every run, a run with CG_COUNTS_PERIODIC_STEPS steps or more off that
 * value is valued at its mean, so work added every k-th step is seen), and a count FAILs
 * when every current run exceeds every baseline run by more than the thresholds allow
 * (cg_count_limit). It is IMPROVED when every current run is below every baseline run. A count
 * that varies (from step to step within a run, or from run to run on a side) is a canary with
 * data-dependent work: it is flagged, and allowed at least the "varying" limit. A count a side
 * did not measure (no GPU, a refused CUPTI kind) is UNAVAILABLE and never decides.
 *
 * The results point into the artifacts and thresholds they were computed from. Not thread-safe.
 */
#ifndef CG_COUNTS_H
#define CG_COUNTS_H

#include "artifact.h"
#include "err.h"
#include "outcome.h"
#include "thresholds.h"

#include <stdbool.h>
#include <stddef.h>

/* Steps off the other side's one value that make a run's value its mean rather than its median
 * (one step alone, a one-off, does not). */
#define CG_COUNTS_PERIODIC_STEPS 2

/* Where a placed count changed (docs/counts.md): per step, the median over a side's runs of
 * the calls made in (or after) one NVTX range. */
struct cg_count_where {
    const char *range; /* points into an artifact; NULL: in no range and after none */
    bool after;        /* after the range: the thread had ended it, and was in no range */
    double baseline, current;
};

struct cg_count_result {
    int row;          /* a row of count.h, or -1 for the NVTX range called name */
    const char *name; /* the range's name (points into an artifact); NULL for rows */
    double baseline;  /* per step: the median over the side's runs of each run's value */
    double current;
    double base_lo, base_hi; /* the smallest and largest run value of each side */
    double cur_lo, cur_hi;
    double allowed;          /* growth per step allowed; NAN when not gated */
    bool varies;             /* not the same in every step and run of some side */
    bool other_machine;      /* a FAIL made INCONCLUSIVE because the machines differ */
    enum cg_outcome outcome; /* PASS, IMPROVED, FAIL, INCONCLUSIVE (other machine),
                              * NOT_GATED or UNAVAILABLE */
    /* For a changed row of placed calls (synchronisations, pageable copies) when every run of
     * both sides placed them: the places whose calls per step changed, the largest growth
     * first (owned by the cg_counts). */
    struct cg_count_where *where;
    size_t n_where;
};

struct cg_counts {
    struct cg_count_result *rows; /* every row measured on either side, then the range names;
                                   * the changed ones first within each, in that order */
    size_t n;
    size_t n_compared; /* rows and names measured on both sides */
    size_t n_changed;  /* of those, with different medians */
    size_t n_fail, n_improved, n_varying;
};

/* Compares the counts of current against baseline under t (outcomes before the machine rule,
 * which cg_verdict_decide applies). 0 or CG_ENOMEM; c owns its rows (cg_counts_release). */
int cg_counts_compare(const struct cg_artifact *baseline, const struct cg_artifact *current,
                      const struct cg_thresholds *t, struct cg_counts *c, struct cg_err *err);

/* A run's value of a row: the median over its steps, NAN when some step lacks it; *varies is
 * set when its steps differ. */
double cg_counts_run_value(const struct cg_run *r, int row, bool *varies);

/* A run's value of a row against another side whose every step has the value exact: its mean
 * over its steps when CG_COUNTS_PERIODIC_STEPS or more of them differ from exact (work added or
 * removed every k-th step moves no median for k >= 3), else its median; NAN as
 * cg_counts_run_value. */
double cg_counts_run_value_against(const struct cg_run *r, int row, double exact);

/* The limit of the NVTX range name under t. */
const struct cg_count_limit *cg_counts_range_limit(const struct cg_thresholds *t, const char *name);

void cg_counts_release(struct cg_counts *c);

#endif
