/*
 * paired: Wilcoxon signed-rank test, Hodges-Lehmann over Walsh averages with Tukey's interval,
 * and the paired verdict (see paired.h).
 *
 * The exact null distribution of W+ for n untied non-zero differences counts the subsets of
 * {1..n} by their sum: the coefficients of prod_{i=1..n} (1 + q^i), built one factor at a time
 * in doubles (exact integers up to 2^53, far beyond 2^60 / C(n, n/2) rounding for n <= 60 in
 * relative terms) and divided by 2^n.
 */
#include "paired.h"

#include "noise.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* P(W+ = w) for w = 0..n(n+1)/2 into dist; dist has n(n+1)/2 + 1 entries. */
static void wsr_exact_dist(size_t n, double *dist)
{
    size_t top = n * (n + 1) / 2;
    memset(dist, 0, (top + 1) * sizeof(*dist));
    dist[0] = 1.0;
    for (size_t i = 1; i <= n; i++) {
        for (size_t w = i * (i + 1) / 2; w >= i; w--)
            dist[w] += dist[w - i];
    }
    double scale = ldexp(1.0, -(int)n);
    for (size_t w = 0; w <= top; w++)
        dist[w] *= scale;
}

double cg_paired_wsr_cdf(size_t n, double w)
{
    if (n == 0 || n > CG_WSR_EXACT_MAX)
        return NAN;
    size_t top = n * (n + 1) / 2;
    double *dist = malloc((top + 1) * sizeof(*dist));
    if (dist == NULL)
        return NAN;
    wsr_exact_dist(n, dist);
    double cdf = 0.0;
    for (size_t k = 0; k <= top && (double)k <= w; k++)
        cdf += dist[k];
    free(dist);
    return fmin(1.0, cdf);
}

struct absval {
    double a;
    bool positive;
};

static int cmp_absval(const void *x, const void *y)
{
    const struct absval *p = x, *q = y;
    return (p->a > q->a) - (p->a < q->a);
}

int cg_paired_signed_rank(const double *d, size_t n, struct cg_wsr *out)
{
    if (n == 0)
        return -1;
    struct absval *v = malloc(n * sizeof(*v));
    if (v == NULL)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (d[i] != 0.0)
            v[k++] = (struct absval){fabs(d[i]), d[i] > 0.0};
    }
    out->n = k;
    out->w_plus = 0.0;
    out->exact = 0;
    if (k == 0) {
        out->p_greater = out->p_less = 1.0;
        free(v);
        return 0;
    }
    qsort(v, k, sizeof(*v), cmp_absval);
    double tie_term = 0.0; /* sum over groups of equal |d| of t^3 - t */
    for (size_t i = 0; i < k;) {
        size_t j = i + 1;
        while (j < k && v[j].a == v[i].a)
            j++;
        double midrank = (double)(i + 1 + j) / 2.0, t = (double)(j - i);
        for (size_t r = i; r < j; r++)
            out->w_plus += v[r].positive ? midrank : 0.0;
        tie_term += t * t * t - t;
        i = j;
    }
    free(v);
    double nn = (double)k;
    if (tie_term == 0.0 && k <= CG_WSR_EXACT_MAX) {
        size_t top = k * (k + 1) / 2, w = (size_t)out->w_plus;
        double *dist = malloc((top + 1) * sizeof(*dist));
        if (dist == NULL)
            return -1;
        wsr_exact_dist(k, dist);
        double ge = 0.0, le = 0.0;
        for (size_t x = 0; x <= top; x++) {
            if (x >= w)
                ge += dist[x];
            if (x <= w)
                le += dist[x];
        }
        free(dist);
        out->p_greater = fmin(1.0, ge);
        out->p_less = fmin(1.0, le);
        out->exact = 1;
        return 0;
    }
    double mu = nn * (nn + 1.0) / 4.0;
    double var = nn * (nn + 1.0) * (2.0 * nn + 1.0) / 24.0 - tie_term / 48.0;
    if (var <= 0.0) {
        out->p_greater = out->p_less = 1.0;
        return 0;
    }
    double sd = sqrt(var);
    out->p_greater = cg_stats_normal_sf((out->w_plus - mu - 0.5) / sd);
    out->p_less = cg_stats_normal_sf((mu - out->w_plus - 0.5) / sd);
    return 0;
}

/* Largest k >= 0 with P(W+ <= k - 1) <= alpha: Tukey's interval rank from each end. */
static size_t tukey_rank(size_t n, double alpha)
{
    size_t top = n * (n + 1) / 2;
    if (n <= CG_WSR_EXACT_MAX) {
        double *dist = malloc((top + 1) * sizeof(*dist));
        if (dist == NULL)
            return 0;
        wsr_exact_dist(n, dist);
        size_t k = 0;
        double cdf = 0.0; /* P(W+ <= k - 1) */
        while (k <= top && cdf + dist[k] <= alpha * (1.0 + 1e-12)) {
            cdf += dist[k];
            k++;
        }
        free(dist);
        return k;
    }
    double nn = (double)n;
    double sd = sqrt(nn * (nn + 1.0) * (2.0 * nn + 1.0) / 24.0);
    double k = floor((double)top / 2.0 - cg_stats_normal_isf(alpha) * sd);
    return k < 0 ? 0 : (size_t)k;
}

int cg_paired_hl(const double *d, size_t n, double alpha, struct cg_shift *out)
{
    if (n == 0)
        return -1;
    size_t m = n * (n + 1) / 2;
    double *w = malloc(m * sizeof(*w));
    if (w == NULL)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = i; j < n; j++)
            w[k++] = (d[i] + d[j]) / 2.0;
    }
    qsort(w, m, sizeof(*w), cmp_double);
    out->estimate = m % 2 ? w[m / 2] : (w[m / 2 - 1] + w[m / 2]) / 2.0;
    size_t r = tukey_rank(n, alpha);
    if (r == 0 || r > (m + 1) / 2) {
        out->low = -INFINITY;
        out->high = INFINITY;
    } else {
        out->low = w[r - 1];
        out->high = w[m - r];
    }
    free(w);
    return 0;
}

/* ---- the paired verdict ------------------------------------------------------------------ */

/* Per-pair log ratios head/base of metric m into d; false when a run lacks the metric. */
static bool pair_logs(const struct cg_artifact *base, const struct cg_artifact *head,
                      enum cg_metric m, size_t n, double *d)
{
    for (size_t i = 0; i < n; i++) {
        double b = cg_run_metric_value(&base->runs[i], m),
               h = cg_run_metric_value(&head->runs[i], m);
        if (!isfinite(b) || !isfinite(h) || b <= 0 || h <= 0)
            return false;
        d[i] = log(h) - log(b);
    }
    return true;
}

/* The decision table of verdict.c applied to a paired result. */
static void decide_metric(struct cg_metric_result *r, const struct cg_metric_limits *lim,
                          size_t pairs, double p_better)
{
    r->note[0] = '\0';
    r->wants_runs = false;
    if (r->regression_pct > lim->max_regression_pct) {
        if ((int64_t)pairs < lim->min_runs) {
            r->outcome = CG_OUT_INCONCLUSIVE;
            r->wants_runs = true;
            snprintf(r->note, sizeof(r->note), "too few pairs (%zu, need %lld)", pairs,
                     (long long)lim->min_runs);
        } else if (r->p_value <= lim->alpha) {
            r->outcome = CG_OUT_FAIL;
        } else {
            r->outcome = CG_OUT_INCONCLUSIVE;
            r->wants_runs = true;
            snprintf(r->note, sizeof(r->note), "not significant (p = %.3g > alpha %.3g): add runs",
                     r->p_value, lim->alpha);
        }
    } else if (-r->regression_pct > lim->max_regression_pct && p_better <= lim->alpha) {
        r->outcome = CG_OUT_IMPROVED;
    } else {
        r->outcome = CG_OUT_PASS;
    }
}

static int paired_metric(const struct cg_artifact *base, const struct cg_artifact *head,
                         const struct cg_thresholds *t, enum cg_metric m, size_t pairs, double *d,
                         struct cg_metric_result *r)
{
    if (!pair_logs(base, head, m, pairs, d))
        return 0; /* the unpaired result (unavailable) stands */
    const struct cg_metric_limits *lim = &t->metric[m];
    struct cg_wsr w;
    struct cg_shift s;
    if (cg_paired_signed_rank(d, pairs, &w) != 0 || cg_paired_hl(d, pairs, lim->alpha, &s) != 0)
        return CG_ENOMEM;
    bool worse_up = cg_metric_higher_is_worse(m);
    r->delta_pct = (exp(s.estimate) - 1.0) * 100.0;
    r->ci_low_pct = isfinite(s.low) ? (exp(s.low) - 1.0) * 100.0 : -INFINITY;
    r->ci_high_pct = isfinite(s.high) ? (exp(s.high) - 1.0) * 100.0 : INFINITY;
    r->p_value = worse_up ? w.p_greater : w.p_less;
    r->regression_pct = worse_up ? r->delta_pct : -r->delta_pct;
    r->method = CG_METHOD_PAIRED;
    decide_metric(r, lim, pairs, worse_up ? w.p_less : w.p_greater);
    return 0;
}

/* The floor's unpaired result, for pairs: more pairs add base runs too, so an inconclusive
 * floor measured over runs or steps wants more pairs whichever side was short of fast runs. */
static void floor_for_pairs(struct cg_metric_result *r)
{
    if (r->outcome != CG_OUT_INCONCLUSIVE ||
        (r->method != CG_METHOD_FAST_RUNS && r->method != CG_METHOD_BOOTSTRAP))
        return;
    r->wants_runs = true;
    if (r->method == CG_METHOD_FAST_RUNS && r->fast_runs[0] < CG_FLOOR_MIN_FAST_RUNS)
        snprintf(r->note, sizeof(r->note),
                 "too few base runs in the runner's fast state (%zu, need %d): the runner was "
                 "busy; add pairs",
                 r->fast_runs[0], CG_FLOOR_MIN_FAST_RUNS);
}

int cg_paired_verdict(const struct cg_artifact *base, const struct cg_artifact *head,
                      const struct cg_thresholds *t, struct cg_verdict *v, struct cg_err *err)
{
    int rc = cg_verdict_compute(base, head, t, v, err);
    if (rc != 0)
        return rc;
    size_t pairs = base->n_runs < head->n_runs ? base->n_runs : head->n_runs;
    if (pairs < 2)
        return 0;
    double *d = malloc(pairs * sizeof(*d));
    if (d == NULL) {
        cg_verdict_release(v);
        return cg_err_set(err, CG_ENOMEM, "out of memory");
    }
    /* the floor keeps its unpaired comparison of fast runs (paired.h) */
    const enum cg_metric timing[] = {CG_M_STEP_TIME_MEAN, CG_M_STEP_TIME_P95, CG_M_TOKENS_PER_SEC};
    for (size_t i = 0; i < sizeof(timing) / sizeof(timing[0]) && rc == 0; i++)
        rc = paired_metric(base, head, t, timing[i], pairs, d, &v->metrics[timing[i]]);
    floor_for_pairs(&v->metrics[CG_M_STEP_TIME_FLOOR]);
    free(d);
    if (rc != 0) {
        cg_verdict_release(v);
        return cg_err_set(err, CG_ENOMEM, "out of memory");
    }
    cg_verdict_decide(v);
    return 0;
}
