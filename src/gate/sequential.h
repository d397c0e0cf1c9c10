/*
 * sequential: the gate's stopping rule and its measure-decide loop.
 * The words (run, step, side, look, spending, floor, fast state, confirmation): the glossary
 * atop docs/statistics.md.
 *
 * Looks. The first look compares the runs the thresholds file asks for. While a timing metric
 * is INCONCLUSIVE for a reason more current runs can fix (not significant, or too few current
 * runs), the current side grows by a batch of runs and the comparison is taken again, up to
 * max_runs current runs; the baseline is fixed. The looks are planned before the first run: the
 * current run counts n_1 < n_2 < ... < n_K.
 *
 * Alpha spending. Look k tests each timing metric at alpha_k = A(t_k) - A(t_{k-1}), the
 * increment of a spending function A with A(1) = alpha at the look's information fraction t_k.
 * A FAIL at some look is the union of the per-look rejections, so under no change
 * P(FAIL) <= sum_k alpha_k = alpha, whatever the correlation between looks (Bonferroni over the
 * looks with unequal shares; conservative, since the looks share runs). Stopping early (a PASS,
 * a FAIL, the budget) only drops looks and keeps the bound; a look never takes fewer runs than
 * planned. The information of a look with m baseline and n current runs is m n / (m + n), the
 * inverse of the variance factor 1/m + 1/n of a difference between the sides, and
 * t_k = I(n_k) / I(n_K): with a fixed baseline, added runs bring less and less.
 *
 * Few runs. The exact Mann-Whitney test with m and n runs cannot give a p-value below
 * 1 / C(m + n, m) (3 against 3: 0.05). A look whose share would be below that could never
 * reject; it gets no share and the spending is spread over the other looks (the earliest such
 * look first, until every look in use can reject). The shares are fixed by the run counts alone,
 * before any run, so the bound holds. Runs are only added while a later look can reject.
 *
 *   pocock           A(t) = alpha ln(1 + (e - 1) t): most of alpha early (the default: most
 *                    decisions end at the first look)
 *   obrien-fleming   A(t) = 2 - 2 Phi(z_{alpha/2} / sqrt(t)): little early, most at the end
 *   bonferroni       A(t) = alpha t over equally spaced t_k = k / K: alpha / K at every look
 *
 * Confirmation. A FAIL is checked with fresh runs in a new artifact against the same baseline
 * at the thresholds' own alpha. A metric stays FAIL only when the confirmation fails it too,
 * else it becomes INCONCLUSIVE. A reported FAIL needs both rejections, so its probability under
 * no change is at most that of the sequential FAIL alone (<= alpha): the confirmation takes no
 * share of alpha and can only lower the false-alarm rate (to about alpha squared if the two
 * were independent; they share the baseline, so less than that).
 *
 * Pairs. 'canary-gate ab' runs the same loop with both sides growing together, pair by pair
 * (opts.paired): the information of a look is proportional to its pairs, and the smallest p of
 * the signed-rank test with n pairs is 2^-n. Its looks end there: a FAIL of measurements taken
 * in the same minutes as their base is reported without a second set of pairs.
 *
 * Runs are measured through a callback, so the loop is the same for the gate (a collector) and
 * for bench/detect (runs drawn from a recorded pool). Not thread-safe; never prints.
 */
#ifndef CG_SEQUENTIAL_H
#define CG_SEQUENTIAL_H

#include "artifact.h"
#include "err.h"
#include "thresholds.h"
#include "verdict.h"

#include <stdbool.h>
#include <stddef.h>

#define CG_SEQ_MAX_LOOKS 64

enum cg_spend { CG_SPEND_POCOCK, CG_SPEND_OBRIEN_FLEMING, CG_SPEND_BONFERRONI };

struct cg_seq_plan {
    enum cg_spend spend;
    bool paired;          /* both sides grow together, compared pair by pair (cg_paired_verdict) */
    size_t baseline_runs; /* unpaired: fixed; paired: as many as the current side at each look */
    size_t n_looks;
    size_t runs_at[CG_SEQ_MAX_LOOKS];       /* current runs at each look, increasing */
    double info_at[CG_SEQ_MAX_LOOKS];       /* information fraction of each look, increasing to 1 */
    double smallest_p_at[CG_SEQ_MAX_LOOKS]; /* smallest p the exact test can reach there */
};

/* "pocock", "obrien-fleming", "bonferroni". */
const char *cg_spend_name(enum cg_spend s);

/* Parses a spending function name; 0 or CG_EINPUT. */
int cg_spend_parse(const char *name, enum cg_spend *out);

/* Alpha spent by information fraction t in [0, 1]: A(t), with A(0) = 0 and A(1) = alpha. */
double cg_seq_spent(enum cg_spend s, double alpha, double t);

/* Plans the looks: first_runs, then batch more at a time (0: first_runs), up to max_runs (a
 * last, smaller batch reaches it exactly; less than first_runs means a single look).
 * CG_EINPUT when first_runs or baseline_runs is 0 or the plan needs more than
 * CG_SEQ_MAX_LOOKS looks. */
int cg_seq_plan_make(enum cg_spend s, size_t baseline_runs, size_t first_runs, size_t batch,
                     size_t max_runs, struct cg_seq_plan *p, struct cg_err *err);

/* The same for pairs (canary-gate ab): look k has runs_at[k] runs on each side; its information
 * is proportional to the pairs, and the smallest p of a look is the signed-rank test's 2^-n for
 * the mean, p95 and tokens/sec, Mann-Whitney's with n runs a side for the floor. */
int cg_seq_plan_make_paired(enum cg_spend s, size_t first_pairs, size_t batch, size_t max_pairs,
                            struct cg_seq_plan *p, struct cg_err *err);

/* The significance levels of the looks for metric m of level alpha into level[n_looks]:
 * A(t_k) - A(t_{k-1}) over the looks that can reject. A look whose level would be below the
 * smallest p-value its exact test can reach (few runs a side) gets 0 and passes its share on
 * (the earliest such look first, then the levels are spread again); the levels sum to alpha, or
 * to 0 when not even the last look at the full alpha could reject. The step time floor is
 * compared over steps while a side has fewer than CG_FLOOR_MIN_FAST_RUNS runs (verdict.h), so
 * such looks keep their share for it. */
void cg_seq_levels(const struct cg_seq_plan *p, enum cg_metric m, double alpha, double *level);

/* The level of look k (0-based) for metric m: level[k] of cg_seq_levels. */
double cg_seq_look_alpha(const struct cg_seq_plan *p, enum cg_metric m, size_t k, double alpha);

/* A copy of t whose timing metrics test at look k's level. */
void cg_seq_look_thresholds(const struct cg_seq_plan *p, size_t k, const struct cg_thresholds *t,
                            struct cg_thresholds *out);

/* True when some timing metric of v is INCONCLUSIVE for a reason more current runs can fix
 * (wants_runs, verdict.h): not significant at its level, or too few current runs or fast runs
 * (while the baseline has enough). */
bool cg_seq_more_runs_help(const struct cg_verdict *v);

/* Appends n runs to a (filling its header when a is empty) and sets *seconds to the canary time
 * they took; confirming says they are the confirmation's fresh runs. 0 or a CG_E* code with err
 * filled. */
typedef int (*cg_seq_measure_fn)(void *ctx, struct cg_artifact *a, size_t n, bool confirming,
                                 double *seconds, struct cg_err *err);

struct cg_seq_opts {
    size_t max_runs; /* current runs at most; not more than the first look's: one look */
    size_t batch;    /* runs added per look; 0: as many as the first look had */
    double budget_s; /* canary time of the current side at most, first look included; a
                        batch is only started when its estimated time fits; <= 0: no cap */
    enum cg_spend spend;
    bool confirm;        /* confirm a FAIL with fresh runs */
    size_t confirm_runs; /* 0: as many as the first look had */
    bool paired; /* base and cur are pairs measured turn about (canary-gate ab): measure appends n
                    runs to each side (the base through its ctx), looks use cg_paired_verdict;
                    no confirmation (confirm must be false) */
};

enum cg_confirm {
    CG_CONFIRM_NOT_NEEDED, /* nothing failed */
    CG_CONFIRM_OFF,        /* a FAIL, confirmation switched off */
    CG_CONFIRM_CONFIRMED,  /* the fresh runs failed it too */
    CG_CONFIRM_REJECTED    /* the fresh runs did not: the FAIL became INCONCLUSIVE */
};

struct cg_seq_confirmation {
    enum cg_outcome outcome; /* of the metric in the confirmation's verdict */
    double delta_pct, ci_low_pct, ci_high_pct, p_value;
};

/* What the reports show about the looks and the confirmation (verdict.seq points here). */
struct cg_seq_info {
    enum cg_spend spend;
    bool paired; /* canary-gate ab: runs are pairs, never confirmed */
    size_t baseline_runs;
    size_t first_runs;   /* current runs at the first look */
    size_t current_runs; /* current runs at the deciding look */
    size_t looks, planned_looks;
    size_t max_runs;
    double alpha[CG_M_COUNT];      /* the thresholds' alpha per metric */
    double look_alpha[CG_M_COUNT]; /* the deciding look's level per metric */
    bool budget_stopped;           /* the budget ended the looks while runs could still help */
    double canary_s;               /* canary time of the current side (first look, added runs) */
    enum cg_confirm confirm;
    size_t confirm_runs;
    double confirm_s;
    struct cg_seq_confirmation confirmation[CG_M_COUNT]; /* when CONFIRMED or REJECTED */
};

/* One line on the looks for the reports, numbers and fixed words only ("2 looks: 5 runs, then
 * 5 added ..."); "" when there was one look of one planned. */
void cg_seq_describe_looks(const struct cg_seq_info *i, char *dst, size_t n);

/* One line on the confirmation of v's FAIL ("FAIL confirmed by 5 fresh runs ..."); "" when
 * nothing failed. */
void cg_seq_describe_confirmation(const struct cg_seq_info *i, const struct cg_verdict *v,
                                  char *dst, size_t n);

/* "not_needed", "off", "confirmed", "not_confirmed". */
const char *cg_confirm_name(enum cg_confirm c);

/* The outcome of cg_seq_decide. It must not move while its verdicts are in use (the verdict
 * points into it and into the artifacts). */
struct cg_seq {
    struct cg_thresholds look_t;    /* the deciding look's thresholds */
    struct cg_thresholds confirm_t; /* the thresholds' own levels */
    struct cg_verdict verdict;      /* the deciding look, FAILs updated by the confirmation */
    struct cg_verdict confirm_verdict;
    bool have_verdict, have_confirm;
    struct cg_seq_info info;
};

/* Decides cur against base: cur holds the first look's runs (measured in first_s seconds); runs
 * are added to cur (and, when o->paired, to base by measure through its ctx) and a FAIL is
 * confirmed with runs in conf (empty; may be NULL when o->confirm is false) through measure.
 * s->verdict is the verdict to report. On error the runs measured so far stay in cur and conf,
 * and s holds nothing to release. */
int cg_seq_decide(const struct cg_artifact *base, struct cg_artifact *cur, struct cg_artifact *conf,
                  const struct cg_thresholds *t, const struct cg_seq_opts *o, double first_s,
                  cg_seq_measure_fn measure, void *ctx, struct cg_seq *s, struct cg_err *err);

/* Frees what the verdicts in s own. */
void cg_seq_release(struct cg_seq *s);

#endif
