/*
 * paired: Wilcoxon signed-rank test, Hodges-Lehmann over Walsh averages with Tukey's interval,
 * and the paired verdict (see paired.h).
 *
 * The exact null distribution of W+ counts the sign patterns of the non-zero differences by
 * the sum of their doubled midranks (a subset-sum count, additions only, exact integers up to
 * 2^53 and relative rounding far below 1e-12 beyond): without ties and zeros, the coefficients
 * of prod_{i=1..n} (1 + q^i), divided by 2^n. The interval inverts the same test through the
 * Walsh averages (paired.h).
 */
#include "paired.h"

#include "noise.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The signed-rank null distribution the test uses for one sample of differences, and the
 * statistic: midranks of |d| over all n differences (zeros take the lowest ranks, Pratt), W+ the
 * sum of the ranks of the positive ones. Under the null each non-zero difference carries its
 * rank with a random sign. With at most CG_WSR_EXACT_MAX differences the distribution of 2W+ is
 * exact, conditional on the ranks (a subset-sum count over the doubled ranks, additions only);
 * otherwise normal with mean sum(r) / 2, variance sum(r^2) / 4 over the non-zero differences
 * (Wilcoxon's tie correction in general form) and a continuity correction of 1/2. */
struct wsr_null {
    size_t nonzero;
    size_t zeros;
    size_t top; /* 2 * sum of the non-zero ranks: 2W+ is in [0, top] */
    double w_plus;
    struct cg_tails exact; /* exact: of h = 2W+, h = 0..top */
    double mu, sd;         /* normal: of W+ */
};

struct absval {
    double a;
    bool positive, zero;
};

static int cmp_absval(const void *x, const void *y)
{
    const struct absval *p = x, *q = y;
    return (p->a > q->a) - (p->a < q->a);
}

static void wsr_null_release(struct wsr_null *z)
{
    cg_stats_tails_release(&z->exact);
}

/* Scores 2 * midrank of the non-zero differences into score (n entries); fills the counts and
 * W+ of z. false when memory ran out. */
static bool wsr_scores(const double *d, size_t n, size_t *score, struct wsr_null *z)
{
    struct absval *v = malloc(n * sizeof(*v));
    if (v == NULL)
        return false;
    for (size_t i = 0; i < n; i++)
        v[i] = (struct absval){fabs(d[i]), d[i] > 0.0, d[i] == 0.0};
    qsort(v, n, sizeof(*v), cmp_absval);
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && v[j].a == v[i].a)
            j++;
        size_t twice = i + 1 + j; /* 2 * midrank of positions i+1..j */
        for (size_t r = i; r < j; r++) {
            if (v[r].zero) {
                z->zeros++;
                continue;
            }
            score[z->nonzero++] = twice;
            z->top += twice;
            if (v[r].positive)
                z->w_plus += (double)twice / 2.0;
        }
        i = j;
    }
    free(v);
    return true;
}

static int wsr_null_make(const double *d, size_t n, struct wsr_null *z)
{
    memset(z, 0, sizeof(*z));
    size_t *score = malloc(n * sizeof(*score));
    if (score == NULL || !wsr_scores(d, n, score, z)) {
        free(score);
        return -1;
    }
    int rc = 0;
    if (n <= CG_WSR_EXACT_MAX) {
        double *count = calloc(z->top + 1, sizeof(*count));
        if (count == NULL) {
            free(score);
            return -1;
        }
        count[0] = 1.0;
        size_t reach = 0;
        for (size_t i = 0; i < z->nonzero; i++) {
            reach += score[i];
            for (size_t h = reach; h >= score[i]; h--)
                count[h] += count[h - score[i]];
        }
        /* 2^nonzero equally likely sign patterns (a power of two: the division is exact) */
        rc = cg_stats_tails_from_counts(&z->exact, count, z->top, ldexp(1.0, (int)z->nonzero));
        free(count);
    } else {
        double sum = 0.0, sum2 = 0.0;
        for (size_t i = 0; i < z->nonzero; i++) {
            double r = (double)score[i] / 2.0;
            sum += r;
            sum2 += r * r;
        }
        z->mu = sum / 2.0;
        z->sd = sqrt(sum2 / 4.0);
    }
    free(score);
    return rc;
}

/* P(W+ >= h / 2) under the null. */
static double wsr_upper(const struct wsr_null *z, size_t h)
{
    if (z->nonzero == 0)
        return 1.0;
    if (z->exact.lower != NULL)
        return cg_stats_tails_upper(&z->exact, h);
    return cg_stats_normal_sf(((double)h / 2.0 - z->mu - 0.5) / z->sd);
}

/* P(W+ <= h / 2) under the null. */
static double wsr_lower(const struct wsr_null *z, size_t h)
{
    if (z->nonzero == 0)
        return 1.0;
    if (z->exact.lower != NULL)
        return cg_stats_tails_lower(&z->exact, h);
    return cg_stats_normal_sf((z->mu - (double)h / 2.0 - 0.5) / z->sd);
}

/* wsr_upper and wsr_lower as cg_stats_critical takes them. */
static double wsr_tail_upper(const void *z, size_t h)
{
    return wsr_upper(z, h);
}

static double wsr_tail_lower(const void *z, size_t h)
{
    return wsr_lower(z, h);
}

int cg_paired_signed_rank(const double *d, size_t n, struct cg_wsr *out)
{
    if (n == 0)
        return -1;
    struct wsr_null z;
    if (wsr_null_make(d, n, &z) != 0)
        return -1;
    size_t h = (size_t)llround(2.0 * z.w_plus);
    out->n = z.nonzero;
    out->w_plus = z.w_plus;
    out->exact = z.nonzero > 0 && z.exact.lower != NULL;
    out->p_greater = wsr_upper(&z, h);
    out->p_less = wsr_lower(&z, h);
    wsr_null_release(&z);
    return 0;
}

int cg_paired_hl(const double *d, size_t n, double alpha, struct cg_shift *out)
{
    if (n == 0)
        return -1;
    struct wsr_null z;
    if (wsr_null_make(d, n, &z) != 0)
        return -1;
    /* Critical values of 2W+ from the tails the p-value uses: rejected "greater" when
     * 2W+ >= h_up, "less" when 2W+ < h_down. */
    size_t h_up, h_down;
    cg_stats_critical(z.top, alpha, wsr_tail_upper, wsr_tail_lower, &z, &h_up, &h_down);
    if (z.nonzero == 0)
        h_down = 0;
    bool never_up = z.nonzero == 0 || h_up > z.top; /* no W+ reaches alpha */
    size_t zeros = z.zeros;
    wsr_null_release(&z);
    size_t m = n * (n + 1) / 2;
    double *w = malloc(m * sizeof(*w));
    if (w == NULL)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = i; j < n; j++)
            w[k++] = (d[i] + d[j]) / 2.0;
    }
    qsort(w, m, sizeof(*w), cg_stats_cmp_double);
    out->estimate = cg_stats_sorted_median(w, m);
    /* T(s) = #{Walsh averages > s} + #{= s} / 2 equals W+ + z(z + 1) / 4 at s = 0 for z zero
     * differences (paired.h), so the test at shift s rejects "greater" when
     * 4T(s) >= 2 h_up + z(z + 1). The low end is the smallest average v with
     * #{averages > v} below that: the k-th smallest, k = floor(m - t_up) + 1, and the high end
     * the (m - floor(t_low))-th smallest for the largest rejected t_low. */
    size_t zz = zeros * (zeros + 1); /* 4 * z(z + 1) / 4 */
    size_t q_up = 2 * h_up + zz;     /* 4 t_up */
    out->low = never_up || q_up > 4 * m ? -INFINITY : w[(4 * m - q_up) / 4];
    if (h_down == 0) {
        out->high = INFINITY;
    } else {
        size_t q_low = 2 * (h_down - 1) + zz; /* 4 t_low */
        out->high = w[m - 1 - q_low / 4];
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
        double b = cg_verdict_run_value(&base->runs[i], m),
               h = cg_verdict_run_value(&head->runs[i], m);
        if (!isfinite(b) || !isfinite(h) || b <= 0 || h <= 0)
            return false;
        d[i] = log(h) - log(b);
    }
    return true;
}

/* The decision ladder of verdict.c (cg_ladder_classify) applied to a paired result: min_runs
 * counts pairs. */
static void decide_metric(struct cg_metric_result *r, const struct cg_metric_limits *lim,
                          size_t pairs, double p_better)
{
    r->note[0] = '\0';
    r->wants_runs = false;
    r->other_machine = false;
    if (pairs < CG_TIMING_MIN_RUNS) {
        r->outcome = CG_OUT_INCONCLUSIVE;
        r->wants_runs = true;
        snprintf(r->note, sizeof(r->note), CG_TIMING_FEW_RUNS_NOTE " (%zu pair%s)", pairs,
                 pairs == 1 ? "" : "s");
        return;
    }
    struct cg_evidence e = {r->regression_pct, r->p_value, p_better,
                            (int64_t)pairs >= lim->min_runs};
    enum cg_rung rung = cg_ladder_classify(&e, lim);
    r->outcome = cg_ladder_outcome(rung);
    if (rung == CG_RUNG_TOO_FEW_RUNS) {
        r->wants_runs = true;
        snprintf(r->note, sizeof(r->note), "too few pairs (%zu, need %lld)", pairs,
                 (long long)lim->min_runs);
    } else if (rung == CG_RUNG_NOT_SIGNIFICANT) {
        r->wants_runs = true;
        snprintf(r->note, sizeof(r->note), "not significant (p = %.3g > alpha %.3g): add runs",
                 r->p_value, lim->alpha);
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
    if (r->method == CG_METHOD_FAST_RUNS && r->fast_runs[0] < CG_FLOOR_MIN_FAST_RUNS) {
        r->other_machine = false;
        snprintf(r->note, sizeof(r->note),
                 "too few base runs in the runner's fast state (%zu, need %d): the runner was "
                 "busy; add pairs",
                 r->fast_runs[0], CG_FLOOR_MIN_FAST_RUNS);
    }
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
