/*
 * sequential: alpha spending over planned looks, the measure-decide loop and the confirmation
 * of a FAIL (see sequential.h).
 */
#include "sequential.h"

#include "paired.h"
#include "stats.h"

#include <stdbool.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

/* the metrics tested over runs at every look: timing and the GPU state's (energy, MFU) */
static const enum cg_metric timing_metrics[] = {CG_M_STEP_TIME_MEAN, CG_M_STEP_TIME_P95,
                                                CG_M_STEP_TIME_FLOOR, CG_M_TOKENS_PER_SEC,
                                                CG_M_ENERGY_PER_TOKEN, CG_M_MFU};
#define N_TIMING (sizeof(timing_metrics) / sizeof(timing_metrics[0]))

static const char *const spend_names[] = {"pocock", "obrien-fleming", "bonferroni"};

const char *cg_spend_name(enum cg_spend s)
{
    return (unsigned)s <= CG_SPEND_BONFERRONI ? spend_names[s] : "unknown";
}

int cg_spend_parse(const char *name, enum cg_spend *out)
{
    for (unsigned i = 0; i <= CG_SPEND_BONFERRONI; i++) {
        if (strcmp(name, spend_names[i]) == 0) {
            *out = (enum cg_spend)i;
            return 0;
        }
    }
    return CG_EINPUT;
}

double cg_seq_spent(enum cg_spend s, double alpha, double t)
{
    if (t <= 0.0)
        return 0.0;
    if (t >= 1.0)
        return alpha;
    switch (s) {
    case CG_SPEND_POCOCK:
        return alpha * log(1.0 + (exp(1.0) - 1.0) * t);
    case CG_SPEND_OBRIEN_FLEMING:
        return 2.0 * cg_stats_normal_sf(cg_stats_normal_isf(alpha / 2.0) / sqrt(t));
    case CG_SPEND_BONFERRONI:
    default:
        return alpha * t;
    }
}

static double information(size_t m, size_t n)
{
    return (double)m * (double)n / (double)(m + n);
}

/* The smallest one-sided p-value the exact Mann-Whitney test reaches with m and n runs,
 * 1 / C(m + n, m); 0 where the verdict uses another method (a side of one run: bootstrap; more
 * than CG_MWU_EXACT_MAX: normal approximation). */
static double smallest_p(size_t m, size_t n)
{
    if (m < 2 || n < 2 || m > CG_MWU_EXACT_MAX || n > CG_MWU_EXACT_MAX)
        return 0.0;
    double c = 1.0;
    for (size_t i = 1; i <= m; i++)
        c = c * (double)(n + i) / (double)i;
    return 1.0 / c;
}

/* The information of look k: m n / (m + n), both sides at runs_at[k] when paired. */
static double look_information(const struct cg_seq_plan *p, size_t n)
{
    return information(p->paired ? n : p->baseline_runs, n);
}

static int plan_make(enum cg_spend s, bool paired, size_t baseline_runs, size_t first_runs,
                     size_t batch, size_t max_runs, struct cg_seq_plan *p, struct cg_err *err)
{
    memset(p, 0, sizeof(*p));
    if (first_runs == 0 || baseline_runs == 0)
        return cg_err_set(err, CG_EINPUT, "sequential testing needs runs on both sides");
    p->paired = paired;
    if (batch == 0)
        batch = first_runs;
    if (max_runs < first_runs)
        max_runs = first_runs;
    p->spend = s;
    p->baseline_runs = baseline_runs;
    p->runs_at[p->n_looks++] = first_runs;
    while (p->runs_at[p->n_looks - 1] < max_runs) {
        if (p->n_looks == CG_SEQ_MAX_LOOKS)
            return cg_err_set(err, CG_EINPUT,
                              "adding %zu runs at a time up to %zu takes more than %d looks", batch,
                              max_runs, CG_SEQ_MAX_LOOKS);
        size_t next = p->runs_at[p->n_looks - 1] + batch;
        p->runs_at[p->n_looks++] = next < max_runs ? next : max_runs;
    }
    double last = look_information(p, max_runs);
    for (size_t k = 0; k < p->n_looks; k++) {
        p->info_at[k] = s == CG_SPEND_BONFERRONI ? (double)(k + 1) / (double)p->n_looks
                                                 : look_information(p, p->runs_at[k]) / last;
    }
    p->info_at[p->n_looks - 1] = 1.0;
    for (size_t k = 0; k < p->n_looks; k++)
        p->smallest_p_at[k] = smallest_p(paired ? p->runs_at[k] : baseline_runs, p->runs_at[k]);
    return 0;
}

int cg_seq_plan_make(enum cg_spend s, size_t baseline_runs, size_t first_runs, size_t batch,
                     size_t max_runs, struct cg_seq_plan *p, struct cg_err *err)
{
    return plan_make(s, false, baseline_runs, first_runs, batch, max_runs, p, err);
}

int cg_seq_plan_make_paired(enum cg_spend s, size_t first_pairs, size_t batch, size_t max_pairs,
                            struct cg_seq_plan *p, struct cg_err *err)
{
    return plan_make(s, true, first_pairs, first_pairs, batch, max_pairs, p, err);
}

/* Levels of the looks in use (in_use[k]), spending alpha over them alone: information
 * fractions relative to the last look in use, Bonferroni split equally among them. */
static void spread(const struct cg_seq_plan *p, const bool *in_use, double alpha, double *level)
{
    size_t last = 0, count = 0;
    for (size_t k = 0; k < p->n_looks; k++) {
        if (in_use[k]) {
            last = k;
            count++;
        }
    }
    double spent = 0.0;
    for (size_t k = 0; k < p->n_looks; k++) {
        level[k] = 0.0;
        if (!in_use[k])
            continue;
        double t = p->spend == CG_SPEND_BONFERRONI ? 0.0 : p->info_at[k] / p->info_at[last];
        double upto = p->spend == CG_SPEND_BONFERRONI ? spent + alpha / (double)count
                                                      : cg_seq_spent(p->spend, alpha, t);
        if (k == last)
            upto = alpha;
        level[k] = upto - spent;
        spent = upto;
    }
}

/* The smallest p metric m can reach at look k: the floor with too few runs for its run test
 * is compared over steps (the bootstrap reaches any level in use), with enough over splits of
 * the runs (cg_floor_smallest_p). */
static double smallest_at(const struct cg_seq_plan *p, enum cg_metric m, size_t k)
{
    size_t n = p->runs_at[k], base = p->paired ? n : p->baseline_runs;
    if (m == CG_M_STEP_TIME_FLOOR && (base < CG_FLOOR_MIN_FAST_RUNS || n < CG_FLOOR_MIN_FAST_RUNS))
        return 0.0;
    if (m == CG_M_STEP_TIME_FLOOR)
        return cg_floor_smallest_p(base, n);
    if (p->paired && m != CG_M_STEP_TIME_FLOOR) /* signed-rank over n pairs: 2^-n, exact */
        return n >= 2 && n <= CG_WSR_EXACT_MAX ? ldexp(1.0, -(int)n) : 0.0;
    return p->smallest_p_at[k];
}

void cg_seq_levels(const struct cg_seq_plan *p, enum cg_metric m, double alpha, double *level)
{
    bool in_use[CG_SEQ_MAX_LOOKS];
    for (size_t k = 0; k < p->n_looks; k++)
        in_use[k] = true;
    for (;;) {
        spread(p, in_use, alpha, level);
        size_t k = 0;
        while (k < p->n_looks && !(in_use[k] && level[k] < smallest_at(p, m, k)))
            k++;
        if (k == p->n_looks)
            return;
        in_use[k] = false; /* this look cannot reject at its level: its share goes on */
    }
}

double cg_seq_look_alpha(const struct cg_seq_plan *p, enum cg_metric m, size_t k, double alpha)
{
    double level[CG_SEQ_MAX_LOOKS];
    if (k >= p->n_looks)
        return 0.0;
    cg_seq_levels(p, m, alpha, level);
    return level[k];
}

/* True when a look after k can reject some timing metric of t. */
static bool later_look_can_reject(const struct cg_seq_plan *p, size_t k,
                                  const struct cg_thresholds *t)
{
    for (size_t i = 0; i < N_TIMING; i++) {
        double level[CG_SEQ_MAX_LOOKS];
        cg_seq_levels(p, timing_metrics[i], t->metric[timing_metrics[i]].alpha, level);
        for (size_t j = k + 1; j < p->n_looks; j++) {
            if (level[j] > 0.0)
                return true;
        }
    }
    return false;
}

void cg_seq_look_thresholds(const struct cg_seq_plan *p, size_t k, const struct cg_thresholds *t,
                            struct cg_thresholds *out)
{
    *out = *t;
    for (size_t i = 0; i < N_TIMING; i++) {
        enum cg_metric m = timing_metrics[i];
        out->metric[m].alpha = cg_seq_look_alpha(p, m, k, t->metric[m].alpha);
    }
    /* memory's tests of the runs (verdict.c: Mann-Whitney where the sides' runs overlap, the
     * share of runs grown) are made at each look too: spent as the step time mean's */
    const enum cg_metric memory[] = {CG_M_PEAK_DEVICE_MEMORY, CG_M_PEAK_HOST_RSS};
    for (size_t i = 0; i < sizeof(memory) / sizeof(memory[0]); i++)
        out->metric[memory[i]].alpha = cg_seq_look_alpha(
            p, CG_M_STEP_TIME_MEAN, k, cg_verdict_memory_alpha(&t->metric[memory[i]]));
    /* the gated shares of the anatomy: spent as the step time mean's */
    for (int g = 0; g < CG_ANAT_GATES; g++)
        out->anatomy[g].alpha = cg_seq_look_alpha(p, CG_M_STEP_TIME_MEAN, k, t->anatomy[g].alpha);
}

bool cg_seq_more_runs_help(const struct cg_verdict *v)
{
    for (size_t i = 0; i < N_TIMING; i++) {
        const struct cg_metric_result *r = &v->metrics[timing_metrics[i]];
        if (r->outcome == CG_OUT_INCONCLUSIVE && r->wants_runs)
            return true;
    }
    return false;
}

/* True when some timing or memory metric, or a gated share of the anatomy, FAILs (counts need
 * no confirmation). */
static bool metric_fails(const struct cg_verdict *v)
{
    for (int m = 0; m < CG_M_COUNT; m++)
        if (v->metrics[m].outcome == CG_OUT_FAIL)
            return true;
    for (size_t i = 0; i < v->anatomy.n; i++)
        if (v->anatomy.parts[i].outcome == CG_OUT_FAIL)
            return true;
    return false;
}

/* Keeps a metric FAIL only when the confirmation's verdict fails it too; recomputes overall. */
static void apply_confirmation(struct cg_seq *s)
{
    struct cg_verdict *v = &s->verdict;
    const struct cg_verdict *c = &s->confirm_verdict;
    for (int m = 0; m < CG_M_COUNT; m++) {
        struct cg_metric_result *r = &v->metrics[m];
        const struct cg_metric_result *cr = &c->metrics[m];
        s->info.confirmation[m] = (struct cg_seq_confirmation){
            cr->outcome, cr->delta_pct, cr->ci_low_pct, cr->ci_high_pct, cr->p_value};
        if (cr->outcome != CG_OUT_FAIL && cg_ladder_hold_back(&r->outcome)) {
            if (isnan(cr->p_value))
                snprintf(r->note, sizeof(r->note),
                         "not confirmed: %zu fresh runs gave %+.1f%% (%s)", c->current->n_runs,
                         cr->delta_pct, cg_outcome_name(cr->outcome));
            else
                snprintf(r->note, sizeof(r->note),
                         "not confirmed: %zu fresh runs gave %+.1f%%, p = %.3g (%s)",
                         c->current->n_runs, cr->delta_pct, cr->p_value,
                         cg_outcome_name(cr->outcome));
        }
    }
    for (size_t i = 0; i < v->anatomy.n; i++) { /* a gated share: the same rule */
        struct cg_anatomy_part *p = &v->anatomy.parts[i];
        const struct cg_anatomy_part *cp = cg_anatomy_part(&c->anatomy, p->kind);
        if (cp == NULL || cp->outcome != CG_OUT_FAIL)
            cg_ladder_hold_back(&p->outcome);
    }
    s->info.confirm = metric_fails(v) ? CG_CONFIRM_CONFIRMED : CG_CONFIRM_REJECTED;
    cg_verdict_overall(v); /* counts were decided without confirmation: they stand */
}

static int confirm(const struct cg_artifact *base, struct cg_artifact *conf,
                   const struct cg_thresholds *t, const struct cg_seq_opts *o,
                   cg_seq_measure_fn measure, void *ctx, struct cg_seq *s, struct cg_err *err)
{
    size_t n = o->confirm_runs ? o->confirm_runs : s->info.first_runs;
    double secs = 0.0;
    int rc = measure(ctx, conf, n, true, &secs, err);
    if (rc != 0)
        return rc;
    s->info.confirm_runs = conf->n_runs;
    s->info.confirm_s = secs;
    s->confirm_t = *t;
    if ((rc = cg_verdict_compute(base, conf, &s->confirm_t, &s->confirm_verdict, err)) != 0)
        return rc;
    s->have_confirm = true;
    apply_confirmation(s);
    return 0;
}

int cg_seq_decide(const struct cg_artifact *base, struct cg_artifact *cur, struct cg_artifact *conf,
                  const struct cg_thresholds *t, const struct cg_seq_opts *o, double first_s,
                  cg_seq_measure_fn measure, void *ctx, struct cg_seq *s, struct cg_err *err)
{
    struct cg_seq_plan plan;
    memset(s, 0, sizeof(*s));
    if (o->paired && (o->confirm || base->n_runs != cur->n_runs))
        return cg_err_set(err, CG_EINTERNAL,
                          "paired looks need as many runs a side (%zu, %zu) "
                          "and no confirmation",
                          base->n_runs, cur->n_runs);
    int rc = o->paired
                 ? cg_seq_plan_make_paired(o->spend, cur->n_runs, o->batch, o->max_runs, &plan, err)
                 : cg_seq_plan_make(o->spend, base->n_runs, cur->n_runs, o->batch, o->max_runs,
                                    &plan, err);
    if (rc != 0)
        return rc;
    struct cg_seq_info *info = &s->info;
    info->spend = o->spend;
    info->paired = o->paired;
    info->first_runs = cur->n_runs;
    info->planned_looks = plan.n_looks;
    info->max_runs = plan.runs_at[plan.n_looks - 1];
    info->canary_s = first_s;
    const char *stopped = NULL; /* why no more runs were added while some would help */
    for (size_t k = 0;; k++) {
        if (s->have_verdict) {
            cg_verdict_release(&s->verdict);
            s->have_verdict = false;
        }
        cg_seq_look_thresholds(&plan, k, t, &s->look_t);
        rc = o->paired ? cg_paired_verdict(base, cur, &s->look_t, &s->verdict, err)
                       : cg_verdict_compute(base, cur, &s->look_t, &s->verdict, err);
        if (rc != 0)
            goto fail;
        s->have_verdict = true;
        info->looks = k + 1;
        if (s->verdict.overall == CG_OUT_FAIL || !cg_seq_more_runs_help(&s->verdict))
            break;
        if (k + 1 == plan.n_looks) {
            stopped = "the most the looks allow (--max-runs)";
            break;
        }
        if (!later_look_can_reject(&plan, k, t)) {
            stopped = "no later look within --max-runs could reach significance";
            break;
        }
        size_t add = plan.runs_at[k + 1] - cur->n_runs;
        double per_run = info->canary_s / (double)cur->n_runs;
        if (o->budget_s > 0 && info->canary_s + per_run * (double)add > o->budget_s) {
            info->budget_stopped = true;
            stopped = "the budget (--budget) had no time for more";
            break;
        }
        double secs = 0.0;
        if ((rc = measure(ctx, cur, add, false, &secs, err)) != 0)
            goto fail;
        info->canary_s += secs;
        if (cur->n_runs != plan.runs_at[k + 1] ||
            (o->paired && base->n_runs != plan.runs_at[k + 1])) {
            rc = cg_err_set(err, CG_EINTERNAL, "expected %zu runs, have %zu and %zu",
                            plan.runs_at[k + 1], base->n_runs, cur->n_runs);
            goto fail;
        }
    }
    info->current_runs = cur->n_runs;
    info->baseline_runs = base->n_runs;
    if (stopped != NULL) {
        char why[160];
        snprintf(why, sizeof(why), "%zu %s measured, %s", cur->n_runs,
                 o->paired ? "pairs" : "current runs", stopped);
        cg_verdict_explain_runs(&s->verdict, why);
    }
    for (int m = 0; m < CG_M_COUNT; m++) {
        info->alpha[m] = t->metric[m].alpha;
        info->look_alpha[m] = s->look_t.metric[m].alpha;
    }
    info->confirm = CG_CONFIRM_NOT_NEEDED;
    if (metric_fails(&s->verdict)) { /* a FAIL of counts alone needs no confirmation */
        info->confirm = CG_CONFIRM_OFF;
        if (o->confirm && (rc = confirm(base, conf, t, o, measure, ctx, s, err)) != 0)
            goto fail;
    }
    s->verdict.seq = info;
    return 0;
fail:
    cg_seq_release(s);
    return rc;
}

void cg_seq_release(struct cg_seq *s)
{
    if (s->have_verdict)
        cg_verdict_release(&s->verdict);
    if (s->have_confirm)
        cg_verdict_release(&s->confirm_verdict);
    s->have_verdict = s->have_confirm = false;
}

static const char *const confirm_names[] = {"not_needed", "off", "confirmed", "not_confirmed"};

const char *cg_confirm_name(enum cg_confirm c)
{
    return (unsigned)c <= CG_CONFIRM_REJECTED ? confirm_names[c] : "unknown";
}

void cg_seq_describe_looks(const struct cg_seq_info *i, char *dst, size_t n)
{
    /* the level of the metric tested highest at the deciding look (a metric whose smallest p
     * cannot reach alpha at a look has level 0 there; naming it would say nothing was tested) */
    const enum cg_metric timing[] = {CG_M_STEP_TIME_MEAN, CG_M_STEP_TIME_P95,
                                     CG_M_STEP_TIME_FLOOR, CG_M_TOKENS_PER_SEC};
    enum cg_metric top = CG_M_STEP_TIME_MEAN;
    for (size_t k = 1; k < sizeof(timing) / sizeof(timing[0]); k++)
        if (i->look_alpha[timing[k]] > i->look_alpha[top])
            top = timing[k];
    double a = i->look_alpha[top], full = i->alpha[top];
    char level[96];
    snprintf(level, sizeof(level), "%.3g of %.3g (%s)", a, full, cg_metric_name(top));
    const char *spend = i->spend == CG_SPEND_POCOCK           ? "Pocock"
                        : i->spend == CG_SPEND_OBRIEN_FLEMING ? "O'Brien-Fleming"
                                                              : "Bonferroni";
    if (i->looks <= 1 && i->planned_looks <= 1) {
        dst[0] = '\0';
        return;
    }
    const char *unit = i->paired ? "pairs" : "runs";
    char against[64] = "";
    if (!i->paired)
        snprintf(against, sizeof(against), " (%zu against %zu baseline runs)", i->current_runs,
                 i->baseline_runs);
    if (i->looks <= 1)
        snprintf(dst, n,
                 "decided at the first of %zu planned looks (%zu %s, up to %zu), tested at "
                 "alpha %s, %s spending%s%s",
                 i->planned_looks, i->first_runs, unit, i->max_runs, level, spend,
                 i->budget_stopped ? "; the budget stopped further " : "",
                 i->budget_stopped ? unit : "");
    else
        snprintf(dst, n,
                 "%zu looks of %zu planned: %zu %s, then %zu added%s, the last tested at alpha "
                 "%s, %s spending%s%s",
                 i->looks, i->planned_looks, i->first_runs, unit, i->current_runs - i->first_runs,
                 against, level, spend, i->budget_stopped ? "; the budget stopped further " : "",
                 i->budget_stopped ? unit : "");
}

void cg_seq_describe_confirmation(const struct cg_seq_info *i, const struct cg_verdict *v,
                                  char *dst, size_t n)
{
    dst[0] = '\0';
    if (i->confirm == CG_CONFIRM_NOT_NEEDED)
        return;
    if (i->confirm == CG_CONFIRM_OFF) {
        snprintf(dst, n,
                 i->paired ? "the FAIL was not checked with fresh pairs (base and head "
                             "were measured in the same minutes)"
                           : "the FAIL was not checked with fresh runs (confirmation off)");
        return;
    }
    if (i->confirm == CG_CONFIRM_REJECTED) {
        snprintf(dst, n,
                 "%zu fresh runs against the same baseline did not confirm the FAIL: "
                 "reported as inconclusive",
                 i->confirm_runs);
        return;
    }
    int k = snprintf(
        dst, n, "FAIL confirmed by %zu fresh runs against the same baseline:", i->confirm_runs);
    const char *sep = " ";
    for (int m = 0; m < CG_M_COUNT && k > 0 && (size_t)k < n; m++) {
        const struct cg_seq_confirmation *c = &i->confirmation[m];
        if (v->metrics[m].outcome != CG_OUT_FAIL)
            continue;
        int w = isnan(c->p_value)
                    ? snprintf(dst + k, n - (size_t)k, "%s%s %+.1f%%", sep,
                               cg_metric_name((enum cg_metric)m), c->delta_pct)
                    : snprintf(dst + k, n - (size_t)k, "%s%s %+.1f%% (p = %.3g)", sep,
                               cg_metric_name((enum cg_metric)m), c->delta_pct, c->p_value);
        if (w < 0)
            break;
        k += w;
        sep = ", ";
    }
}
