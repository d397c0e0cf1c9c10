/*
 * trend: history entries from run artifacts (trend.h).
 */
#include "trend.h"

#include "artifact_ranks.h"
#include "counts.h"
#include "floor.h"
#include "stats.h"
#include "verdict.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The largest k >= 1 such that [x_(k), x_(n-k+1)] (sorted, 1-based) covers the median with
 * probability at least 90%: 1 - 2 P(Binomial(n, 1/2) < k) >= 0.90. 1 when none does. */
static size_t order_rank(size_t n)
{
    size_t k = 1;
    double half_n = pow(0.5, (double)n);
    double cdf = half_n; /* P(B <= k - 1) for k = 1 */
    for (size_t cand = 2; 2 * cand <= n + 1; cand++) {
        cdf += cg_stats_choose(n, cand - 1) * half_n;
        if (1.0 - 2.0 * cdf < 0.90)
            break;
        k = cand;
    }
    return k;
}

static int metric_value(const struct cg_artifact *a, enum cg_metric m, struct cg_history_value *out,
                        double *v)
{
    size_t k = 0;
    for (size_t i = 0; i < a->n_runs; i++) {
        double x = cg_verdict_run_value(&a->runs[i], m);
        if (!isfinite(x) || x <= 0)
            return 0; /* every run has it, or the entry has none */
        v[k++] = x;
    }
    out->runs = (int64_t)k;
    /* The floor as the gate takes a side's: the median of the fast runs' floors, so runs that
     * met a spell of load do not move it (bench/RESULTS.md: a quarter of the spread). */
    if (m == CG_M_STEP_TIME_FLOOR)
        k = cg_floor_fast_runs(v, k);
    qsort(v, k, sizeof(*v), cg_stats_cmp_double);
    size_t r = order_rank(k);
    out->present = true;
    out->median = cg_stats_sorted_median(v, k);
    out->low = v[r - 1];
    out->high = v[k - r];
    return 0;
}

int cg_trend_entry(const struct cg_artifact *a, const char *commit, const char *date,
                   const char *gate_id, struct cg_history_entry *out)
{
    cg_history_entry_init(out, CG_HIST_RUN);
    if (a->n_runs == 0 || commit == NULL || !commit[0] || date == NULL || !date[0])
        return CG_EINPUT;
    double *v = malloc(a->n_runs * sizeof(*v));
    out->commit = strdup(commit);
    out->date = strdup(date);
    out->gate_id = gate_id ? strdup(gate_id) : NULL;
    out->environment = cg_trend_env_id(a);
    if (v == NULL || !out->commit || !out->date || (gate_id && !out->gate_id) ||
        !out->environment) {
        free(v);
        cg_history_entry_release(out);
        return CG_ENOMEM;
    }
    for (int m = 0; m < CG_M_COUNT; m++)
        metric_value(a, (enum cg_metric)m, &out->metric[m], v);
    for (int row = 0; row < CG_COUNT_ROWS; row++) {
        size_t k = 0;
        for (size_t i = 0; i < a->n_runs; i++) {
            bool varies = false;
            double x = cg_counts_run_value(&a->runs[i], row, &varies);
            if (!isfinite(x) || x < 0)
                break;
            v[k++] = x;
        }
        if (k == a->n_runs)
            out->counts[row] = llround(cg_stats_quantile(v, k, 0.5));
    }
    free(v);
    return 0;
}

static void fnv(uint64_t *h, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)(s ? s : "\x01"); *p; p++) {
        *h ^= *p;
        *h *= 1099511628211ull;
    }
    *h ^= 0xff; /* field separator */
    *h *= 1099511628211ull;
}

/* The node shape of a's runs (cg_artifact_shape) into shape[CG_SHAPE_MAX] and whether its runs
 * have two (*mixed): true when that is part of the environment, a world's or a mix; false for
 * runs of one process or of unknown shape. */
static bool world_shape(const struct cg_artifact *a, char *shape, bool *mixed)
{
    size_t first, other;
    if (cg_artifact_shape(a, shape, CG_SHAPE_MAX, &first, &other) != 0)
        return false;
    *mixed = other != a->n_runs;
    return shape[0] != '\0' || *mixed;
}

char *cg_trend_env_id(const struct cg_artifact *a)
{
    const struct cg_env *e = &a->env;
    char num[64];
    uint64_t h = 14695981039346656037ull;
    fnv(&h, a->gpu_available ? e->gpu_model : NULL);
    snprintf(num, sizeof(num), "%lld", (long long)(a->gpu_available ? e->gpu_count : 0));
    fnv(&h, num);
    fnv(&h, e->driver_version);
    fnv(&h, e->cuda_version);
    fnv(&h, e->cpu_model);
    snprintf(num, sizeof(num), "%lld/%lld", (long long)a->settings.steps,
             (long long)a->settings.warmup);
    fnv(&h, num);
    /* a world's node shape (runs of one process, or of unknown shape, hash nothing: their ids
     * stay as they were); a side of two shapes is its own */
    char shape[CG_SHAPE_MAX];
    bool mixed;
    if (world_shape(a, shape, &mixed)) {
        fnv(&h, shape);
        if (mixed)
            fnv(&h, "runs differ");
    }
    char *out = malloc(17);
    if (out != NULL)
        snprintf(out, 17, "%016llx", (unsigned long long)h);
    return out;
}

void cg_trend_env_text(const struct cg_artifact *a, char *out, size_t n)
{
    const struct cg_env *e = &a->env;
    if (a->gpu_available)
        snprintf(out, n, "%s x%lld, driver %s, CUDA %s, CPU %s, %lld steps after %lld",
                 e->gpu_model ? e->gpu_model : "unknown GPU", (long long)e->gpu_count,
                 e->driver_version ? e->driver_version : "unknown",
                 e->cuda_version ? e->cuda_version : "unknown",
                 e->cpu_model ? e->cpu_model : "unknown", (long long)a->settings.steps,
                 (long long)a->settings.warmup);
    else
        snprintf(out, n, "no GPU%s%s, CPU %s, %lld steps after %lld",
                 e->driver_version ? ", driver " : "", e->driver_version ? e->driver_version : "",
                 e->cpu_model ? e->cpu_model : "unknown", (long long)a->settings.steps,
                 (long long)a->settings.warmup);
    char shape[CG_SHAPE_MAX];
    bool mixed;
    size_t len = strlen(out);
    if (len < n && world_shape(a, shape, &mixed))
        snprintf(out + len, n - len, ", %s%s", shape[0] ? shape : "one process",
                 mixed ? " (runs differ)" : "");
}

static int push_change(struct cg_trend_report *r, const struct cg_trend_change *c)
{
    struct cg_trend_change *p = realloc(r->changes, (r->n_changes + 1) * sizeof(*p));
    if (p == NULL)
        return CG_ENOMEM;
    r->changes = p;
    r->changes[r->n_changes++] = *c;
    return 0;
}

static int push_drift(struct cg_trend_report *r, const struct cg_trend_drift *d)
{
    struct cg_trend_drift *p = realloc(r->drifts, (r->n_drifts + 1) * sizeof(*p));
    if (p == NULL)
        return CG_ENOMEM;
    r->drifts = p;
    r->drifts[r->n_drifts++] = *d;
    return 0;
}

static int push_candidate(struct cg_trend_report *r, const struct cg_trend_candidate *c)
{
    struct cg_trend_candidate *p =
        realloc(r->candidates, (r->n_candidates + 1) * sizeof(*p));
    if (p == NULL)
        return CG_ENOMEM;
    r->candidates = p;
    r->candidates[r->n_candidates++] = *c;
    return 0;
}

/* The strongest split of the metric in x[0..n) (runs of one segment) where nothing was called. */
static int add_candidate(const double *x, const struct cg_history_entry **runs, size_t n,
                         enum cg_metric m, size_t segment, const struct cg_cp_options *o,
                         struct cg_trend_report *r)
{
    struct cg_trend_candidate c = {.metric = m, .segment = segment,
                                   .alpha = o != NULL ? o->alpha : CG_CP_ALPHA};
    int rc = cg_cp_candidate(x, n, o, &c.cand);
    if (rc != 0 || !c.cand.found)
        return rc;
    size_t at = c.cand.cp.index, prev = at;
    while (prev > 0 && !isfinite(x[prev - 1]))
        prev--;
    c.before_run = prev > 0 ? prev : 1;
    c.after_run = at + 1;
    c.before = runs[prev > 0 ? prev - 1 : 0];
    c.after = runs[at];
    return push_candidate(r, &c);
}

const struct cg_trend_candidate *cg_trend_strongest_candidate(const struct cg_trend_report *r,
                                                              size_t segment)
{
    const struct cg_trend_candidate *best = NULL;
    for (size_t i = 0; i < r->n_candidates; i++) {
        const struct cg_trend_candidate *c = &r->candidates[i];
        if (segment != 0 && c->segment != segment)
            continue;
        double p = c->cand.cp.p_value, shift = fabs(c->cand.cp.shift_pct);
        if (best == NULL || p < best->cand.cp.p_value ||
            (p == best->cand.cp.p_value && shift > fabs(best->cand.cp.shift_pct)))
            best = c;
    }
    return best;
}

static bool is_accept(const struct cg_history_entry *e, const char *gate)
{
    return e->type == CG_HIST_EVENT && e->event == CG_HEV_ACCEPT && cg_history_of_gate(e, gate);
}

/* The gate's accept event between runs lo and hi of history h (exclusive), or one recorded
 * after hi for hi's commit (the change accepted once seen), or NULL. */
static const struct cg_history_entry *accept_between(const struct cg_history *h, const char *gate,
                                                     const struct cg_history_entry *lo,
                                                     const struct cg_history_entry *hi)
{
    for (const struct cg_history_entry *e = hi - 1; e > lo; e--)
        if (is_accept(e, gate))
            return e;
    for (const struct cg_history_entry *e = hi + 1; e < h->entries + h->n; e++)
        if (is_accept(e, gate) && strcmp(e->commit, hi->commit) == 0)
            return e;
    return NULL;
}

/* One segment: runs[0..n) (entries of one history, in its order). */
static int check_segment(const struct cg_history *h, const char *gate,
                         const struct cg_history_entry **runs, size_t n,
                         size_t segment, const struct cg_cp_options *o, struct cg_trend_report *r)
{
    double *x = malloc((n ? n : 1) * sizeof(*x));
    struct cg_changepoint *cps = calloc(CG_CP_MAX_POINTS + 64, sizeof(*cps));
    int rc = x && cps ? 0 : CG_ENOMEM;
    for (int m = 0; m < CG_M_COUNT && rc == 0; m++) {
        size_t present = 0;
        for (size_t i = 0; i < n; i++) {
            const struct cg_history_value *v = &runs[i]->metric[m];
            x[i] = v->present ? v->median : NAN;
            present += v->present;
        }
        if (present < 2)
            continue;
        size_t k = 0;
        rc = cg_cp_detect(x, n, o, cps, CG_CP_MAX_POINTS + 64, &k);
        for (size_t j = 0; j < k && rc == 0; j++) {
            struct cg_trend_change c = {.metric = (enum cg_metric)m, .segment = segment};
            c.cp = cps[j];
            size_t at = cps[j].index, prev = at;
            while (prev > 0 && !isfinite(x[prev - 1]))
                prev--;
            c.before = runs[prev > 0 ? prev - 1 : 0];
            c.after = runs[at];
            c.accepted = accept_between(h, gate, c.before, c.after);
            c.worse = cg_metric_higher_is_worse((enum cg_metric)m) ? cps[j].shift_pct > 0
                                                                   : cps[j].shift_pct < 0;
            rc = push_change(r, &c);
        }
        if (k == 0 && rc == 0)
            rc = add_candidate(x, runs, n, (enum cg_metric)m, segment, o, r);
        if (k == 0 || rc != 0)
            continue;
        struct cg_trend_drift d = {.metric = (enum cg_metric)m,
                                   .segment = segment,
                                   .first = cps[0].before,
                                   .last = cps[k - 1].after,
                                   .changes = k};
        d.shift_pct = d.first > 0 ? (d.last / d.first - 1.0) * 100.0 : NAN;
        size_t first = 0, last = n - 1;
        while (first < n && !isfinite(x[first]))
            first++;
        while (last > 0 && !isfinite(x[last]))
            last--;
        d.from = runs[first < n ? first : 0];
        d.to = runs[last];
        rc = push_drift(r, &d);
    }
    free(x);
    free(cps);
    return rc;
}

int cg_trend_check(const struct cg_history *h, const char *gate_id, const struct cg_cp_options *o,
                   struct cg_trend_report *r)
{
    memset(r, 0, sizeof(*r));
    const struct cg_history_entry **runs = calloc(h->n ? h->n : 1, sizeof(const void *));
    if (runs == NULL)
        return CG_ENOMEM;
    size_t n = 0;
    int rc = 0;
    for (size_t i = 0; i <= h->n && rc == 0; i++) {
        const struct cg_history_entry *e = i < h->n ? &h->entries[i] : NULL;
        bool split = e == NULL || (e->type == CG_HIST_EVENT && cg_history_of_gate(e, gate_id) &&
                                   (e->event == CG_HEV_ENVIRONMENT || e->event == CG_HEV_RESTART));
        if (split && n > 0) {
            r->segments++;
            rc = check_segment(h, gate_id, runs, n, r->segments, o, r);
            n = 0;
        }
        if (e != NULL && e->type == CG_HIST_RUN && cg_history_of_gate(e, gate_id)) {
            runs[n++] = e;
            r->runs++;
        }
    }
    free(runs);
    if (rc != 0)
        cg_trend_report_release(r);
    return rc;
}

void cg_trend_report_release(struct cg_trend_report *r)
{
    free(r->changes);
    free(r->drifts);
    free(r->candidates);
    memset(r, 0, sizeof(*r));
}
