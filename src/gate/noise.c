/*
 * noise: runner noise, A/A false alarms by re-splitting pooled runs, and recommended thresholds
 * (see noise.h). Every ordered split of 2n runs into sides of n is visited by walking the
 * n-subsets in lexicographic order (the subset is the baseline, its complement the current side).
 */
#include "noise.h"

#include "stats.h"
#include "verdict.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CG_NOISE_RESAMPLES 400

static bool is_memory(enum cg_metric m)
{
    return m == CG_M_PEAK_DEVICE_MEMORY || m == CG_M_PEAK_HOST_RSS;
}

static double cv_pct(const struct cg_welford *w)
{
    return w->n >= 2 && w->mean != 0.0 ? sqrt(cg_welford_variance(w)) / fabs(w->mean) * 100.0 : NAN;
}

/* Within-run CV of run r's per-step values for metric m; *predict gets CV / sqrt(steps). */
static double within_cv(const struct cg_run *r, enum cg_metric m, double *predict)
{
    struct cg_welford w;
    cg_welford_init(&w);
    for (size_t i = 0; i < r->n_steps; i++) {
        const struct cg_step *s = &r->steps[i];
        if (m != CG_M_TOKENS_PER_SEC)
            cg_welford_add(&w, (double)s->wall_ns);
        else if (s->tokens >= 0)
            cg_welford_add(&w, (double)s->tokens / ((double)s->wall_ns / 1e9));
    }
    double cv = cv_pct(&w);
    *predict = cv / sqrt((double)w.n);
    return cv;
}

static int describe(const struct cg_artifact *pool, enum cg_metric m, struct cg_noise_metric *nm)
{
    size_t n = pool->n_runs;
    double *v = malloc(n * sizeof(*v)), *within = malloc(n * sizeof(*within)),
           *predict = malloc(n * sizeof(*predict));
    int rc = 0;
    if (v == NULL || within == NULL || predict == NULL) {
        rc = CG_ENOMEM;
        goto done;
    }
    struct cg_welford w;
    cg_welford_init(&w);
    nm->measured = true;
    for (size_t i = 0; i < n; i++) {
        v[i] = cg_verdict_run_value(&pool->runs[i], m);
        nm->measured &= isfinite(v[i]) && v[i] > 0;
        cg_welford_add(&w, v[i]);
        /* memory and the GPU state's metrics have one value a run, no steps */
        within[i] = is_memory(m) || cg_metric_from_gpu_state(m)
                        ? NAN
                        : within_cv(&pool->runs[i], m, &predict[i]);
    }
    if (!nm->measured)
        goto done;
    nm->median = cg_stats_quantile(v, n, 0.5);
    nm->between_cv_pct = cv_pct(&w);
    if (!is_memory(m) && !cg_metric_from_gpu_state(m)) {
        nm->within_cv_pct = cg_stats_quantile(within, n, 0.5);
        if (m != CG_M_STEP_TIME_P95 && m != CG_M_STEP_TIME_FLOOR)
            nm->steps_predict_cv_pct = cg_stats_quantile(predict, n, 0.5);
    }
done:
    free(v);
    free(within);
    free(predict);
    return rc;
}

/* Next n-subset of {0..total-1} in lexicographic order; false after the last. */
static bool next_subset(size_t *c, size_t n, size_t total)
{
    for (size_t i = n; i-- > 0;) {
        if (c[i] < total - n + i) {
            c[i]++;
            for (size_t j = i + 1; j < n; j++)
                c[j] = c[j - 1] + 1;
            return true;
        }
    }
    return false;
}

static double binomial(size_t n, size_t k)
{
    double r = 1.0;
    for (size_t i = 1; i <= k; i++)
        r = r * (double)(n - k + i) / (double)i;
    return floor(r + 0.5);
}

/* Fills base/cur (side indices each) for decision s. */
static void pick(size_t s, bool every, size_t side, size_t total, size_t *subset, size_t *perm,
                 uint64_t *rng, size_t *base, size_t *cur)
{
    if (every) {
        if (s > 0)
            next_subset(subset, side, total);
        size_t b = 0, c = 0;
        for (size_t i = 0; i < total; i++) {
            if (b < side && subset[b] == i)
                base[b++] = i;
            else if (c < side)
                cur[c++] = i;
        }
        return;
    }
    for (size_t i = 0; i < 2 * side; i++) { /* partial Fisher-Yates */
        size_t j = i + (size_t)(cg_stats_rand(rng) % (uint64_t)(total - i));
        size_t tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
    }
    memcpy(base, perm, side * sizeof(*base));
    memcpy(cur, perm + side, side * sizeof(*cur));
}

/* Whether a decision's evidence would fail metric m at a low enough threshold: for timing, the
 * decision ladder's answer (cg_ladder_classify) for a change beyond any threshold. */
static bool could_fail(const struct cg_metric_result *r, const struct cg_metric_limits *lim,
                       size_t side)
{
    if (r->outcome == CG_OUT_UNAVAILABLE || r->outcome == CG_OUT_NOT_GATED)
        return false;
    if (r->method == CG_METHOD_FIXED)
        return r->current - r->baseline > lim->max_regression_bytes;
    struct cg_evidence e = {INFINITY, r->p_value, NAN,
                            (int64_t)side >= lim->min_runs && side >= CG_TIMING_MIN_RUNS};
    return cg_ladder_classify(&e, lim) == CG_RUNG_FAIL;
}

static int cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

static void recommend(struct cg_noise_metric *nm, double *vals, size_t n_could, size_t decisions,
                      double target)
{
    nm->could_fail = n_could;
    if (n_could == 0) {
        nm->recommended_pct = NAN;
        return;
    }
    size_t k = (size_t)floor(target * (double)decisions + 1e-9);
    qsort(vals, n_could, sizeof(*vals), cmp_desc);
    double t = n_could > k ? vals[k] : 0.0;
    nm->recommended_pct = fmax(0.0, ceil(t * 10.0 - 1e-9) / 10.0);
}

int cg_noise_analyse(const struct cg_artifact *pool, size_t side, const struct cg_thresholds *t,
                     double target, uint64_t seed, struct cg_noise *out, struct cg_err *err)
{
    memset(out, 0, sizeof(*out));
    size_t total = pool->n_runs;
    if (side == 0 || total < 2 * side)
        return cg_err_set(err, CG_EINPUT, "%zu runs cannot make two sides of %zu", total, side);
    double splits = total == 2 * side ? binomial(total, side) : INFINITY;
    out->runs = total;
    out->side = side;
    out->target = target;
    out->every_split = splits <= CG_NOISE_MAX_SPLITS;
    out->decisions = out->every_split ? (size_t)splits : CG_NOISE_MAX_SPLITS;
    size_t S = out->decisions;
    size_t *idx = malloc((4 * side + total) * sizeof(size_t));
    struct cg_run *runs = malloc(2 * side * sizeof(*runs));
    double *vals = malloc(CG_M_COUNT * S * sizeof(double));
    size_t n_could[CG_M_COUNT] = {0};
    int rc = 0;
    if (idx == NULL || runs == NULL || vals == NULL) {
        rc = cg_err_set(err, CG_ENOMEM, "out of memory");
        goto done;
    }
    for (int m = 0; m < CG_M_COUNT && rc == 0; m++) {
        out->m[m] = (struct cg_noise_metric){false, NAN, NAN, NAN, NAN, 0, 0, NAN, NAN};
        out->m[m].threshold_pct = t->metric[m].max_regression_pct;
        if (describe(pool, (enum cg_metric)m, &out->m[m]) != 0)
            rc = cg_err_set(err, CG_ENOMEM, "out of memory");
    }
    size_t *subset = idx, *base = idx + side, *cur = idx + 2 * side, *perm = idx + 3 * side;
    for (size_t i = 0; i < side; i++)
        subset[i] = i;
    for (size_t i = 0; i < total; i++)
        perm[i] = i;
    uint64_t rng = seed;
    /* Thousands of splits: the within-run bootstraps (sides of one run) are cut to
     * CG_NOISE_RESAMPLES resamples a split (p resolves to 1/401, ample at the alphas used),
     * which keeps a 2,000-split analysis to seconds. */
    struct cg_thresholds tq = *t;
    if (tq.bootstrap_resamples > CG_NOISE_RESAMPLES)
        tq.bootstrap_resamples = CG_NOISE_RESAMPLES;
    /* Views of the pool: the header is shared, the runs are shallow copies (read only). */
    struct cg_artifact vb = *pool, vc = *pool;
    vb.runs = runs;
    vc.runs = runs + side;
    vb.n_runs = vc.n_runs = side;
    for (size_t s = 0; s < S && rc == 0; s++) {
        pick(s, out->every_split, side, total, subset, perm, &rng, base, cur);
        for (size_t i = 0; i < side; i++) {
            runs[i] = pool->runs[base[i]];
            runs[side + i] = pool->runs[cur[i]];
        }
        struct cg_verdict v;
        if ((rc = cg_verdict_compute(&vb, &vc, &tq, &v, err)) != 0)
            break;
        out->fails += v.overall == CG_OUT_FAIL;
        out->inconclusive += v.overall == CG_OUT_INCONCLUSIVE;
        for (int m = 0; m < CG_M_COUNT; m++) {
            const struct cg_metric_result *r = &v.metrics[m];
            out->m[m].fails += r->outcome == CG_OUT_FAIL;
            if (could_fail(r, &t->metric[m], side))
                vals[(size_t)m * S + n_could[m]++] = r->regression_pct;
        }
        cg_verdict_release(&v);
    }
    for (int m = 0; m < CG_M_COUNT && rc == 0; m++) {
        if (out->m[m].measured)
            recommend(&out->m[m], vals + (size_t)m * S, n_could[m], S, target);
    }
done:
    free(idx);
    free(runs);
    free(vals);
    return rc;
}
