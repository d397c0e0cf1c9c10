/*
 * stats: descriptive statistics, Mann-Whitney U, Hodges-Lehmann with Moses interval, block
 * bootstrap and Benjamini-Hochberg (see stats.h). Pure and thread-safe.
 *
 * The exact null distribution of U for samples of m and n without ties is the coefficient list
 * of the Gaussian binomial [m+n choose m] in q: prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i).
 * It is built one factor at a time (multiply, then divide by a running sum), truncated at
 * degree m*n, in doubles, and divided by C(m+n, m), the sum of the coefficients.
 */
#include "stats.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

void cg_welford_init(struct cg_welford *w)
{
    w->n = 0;
    w->mean = 0.0;
    w->m2 = 0.0;
}

void cg_welford_add(struct cg_welford *w, double x)
{
    w->n++;
    double d = x - w->mean;
    w->mean += d / (double)w->n;
    w->m2 += d * (x - w->mean);
}

double cg_welford_variance(const struct cg_welford *w)
{
    return w->n < 2 ? NAN : w->m2 / (double)(w->n - 1);
}

double cg_stats_mean(const double *v, size_t n)
{
    if (n == 0)
        return NAN;
    struct cg_welford w;
    cg_welford_init(&w);
    for (size_t i = 0; i < n; i++)
        cg_welford_add(&w, v[i]);
    return w.mean;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double sorted_quantile(const double *v, size_t n, double q)
{
    double h = (double)(n - 1) * q;
    size_t lo = (size_t)floor(h);
    size_t hi = lo + 1 < n ? lo + 1 : lo;
    return v[lo] + (h - (double)lo) * (v[hi] - v[lo]);
}

double cg_stats_quantile(const double *v, size_t n, double q)
{
    if (n == 0)
        return NAN;
    double *s = malloc(n * sizeof(*s));
    if (s == NULL)
        return NAN;
    memcpy(s, v, n * sizeof(*s));
    qsort(s, n, sizeof(*s), cmp_double);
    double r = sorted_quantile(s, n, q);
    free(s);
    return r;
}

double cg_stats_floor(double *v, size_t n)
{
    if (n == 0)
        return NAN;
    qsort(v, n, sizeof(*v), cmp_double);
    size_t fast = 1;
    while (fast < n && v[fast] <= v[0] * CG_FLOOR_STEP_WINDOW)
        fast++;
    return sorted_quantile(v, fast, 0.5);
}

double cg_stats_normal_sf(double z)
{
    return 0.5 * erfc(z / sqrt(2.0));
}

double cg_stats_normal_isf(double p)
{
    /* Bisection on the monotone upper tail: 200 halvings of [-40, 40] reach double precision. */
    double lo = -40.0, hi = 40.0;
    for (int i = 0; i < 200 && hi - lo > 1e-15; i++) {
        double mid = 0.5 * (lo + hi);
        if (cg_stats_normal_sf(mid) > p)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}

/* Null distribution of U for m, n without ties: P(U = u) for u = 0..m*n into dist (m*n + 1). */
static void mwu_exact_dist(size_t m, size_t n, double *dist)
{
    size_t top = m * n;
    memset(dist, 0, (top + 1) * sizeof(*dist));
    dist[0] = 1.0;
    for (size_t i = 1; i <= m; i++) {
        size_t a = n + i;
        for (size_t k = top; k >= a; k--)
            dist[k] -= dist[k - a];
        for (size_t k = i; k <= top; k++)
            dist[k] += dist[k - i];
    }
    double total = 0.0;
    for (size_t k = 0; k <= top; k++)
        total += dist[k];
    for (size_t k = 0; k <= top; k++)
        dist[k] /= total;
}

/* Tie correction term sum(t^3 - t) over groups of equal values in the pooled sample. */
static double tie_term(const double *x, size_t m, const double *y, size_t n, bool *any_ties)
{
    size_t N = m + n;
    *any_ties = false;
    double *all = malloc(N * sizeof(*all));
    if (all == NULL)
        return NAN;
    memcpy(all, x, m * sizeof(*all));
    memcpy(all + m, y, n * sizeof(*all));
    qsort(all, N, sizeof(*all), cmp_double);
    double term = 0.0;
    for (size_t i = 0; i < N;) {
        size_t j = i + 1;
        while (j < N && all[j] == all[i])
            j++;
        double t = (double)(j - i);
        if (t > 1) {
            term += t * t * t - t;
            *any_ties = true;
        }
        i = j;
    }
    free(all);
    return term;
}

int cg_stats_mwu(const double *x, size_t m, const double *y, size_t n, struct cg_mwu *out)
{
    if (m == 0 || n == 0)
        return -1;
    double u = 0.0;
    for (size_t i = 0; i < m; i++) {
        for (size_t j = 0; j < n; j++)
            u += y[j] > x[i] ? 1.0 : (y[j] == x[i] ? 0.5 : 0.0);
    }
    out->u = u;
    bool ties;
    double tterm = tie_term(x, m, y, n, &ties);
    if (isnan(tterm))
        return -1;
    double mn = (double)m * (double)n;
    if (!ties && m <= CG_MWU_EXACT_MAX && n <= CG_MWU_EXACT_MAX) {
        size_t top = m * n;
        double *dist = malloc((top + 1) * sizeof(*dist));
        if (dist == NULL)
            return -1;
        mwu_exact_dist(m, n, dist);
        size_t uu = (size_t)u;
        double ge = 0.0, le = 0.0;
        for (size_t k = 0; k <= top; k++) {
            if (k >= uu)
                ge += dist[k];
            if (k <= uu)
                le += dist[k];
        }
        free(dist);
        out->p_greater = fmin(1.0, ge);
        out->p_less = fmin(1.0, le);
        out->exact = 1;
        return 0;
    }
    double N = (double)(m + n);
    double var = mn / 12.0 * ((N + 1.0) - tterm / (N * (N - 1.0)));
    double mu = mn / 2.0;
    if (var <= 0) {
        out->p_greater = out->p_less = 1.0;
    } else {
        double sd = sqrt(var);
        out->p_greater = cg_stats_normal_sf((u - mu - 0.5) / sd);
        out->p_less = cg_stats_normal_sf((mu - u - 0.5) / sd);
    }
    out->exact = 0;
    return 0;
}

/* Largest k >= 0 with P(U <= k - 1) <= alpha: the Moses interval's rank from each end. */
static size_t moses_rank(size_t m, size_t n, double alpha, bool exact)
{
    size_t top = m * n;
    if (exact) {
        double *dist = malloc((top + 1) * sizeof(*dist));
        if (dist == NULL)
            return 0;
        mwu_exact_dist(m, n, dist);
        size_t k = 0;
        double cdf = 0.0; /* P(U <= k - 1) */
        while (k <= top && cdf + dist[k] <= alpha * (1.0 + 1e-12)) {
            cdf += dist[k];
            k++;
        }
        free(dist);
        return k;
    }
    double mn = (double)m * (double)n;
    double sd = sqrt(mn * (double)(m + n + 1) / 12.0);
    double k = floor(mn / 2.0 - cg_stats_normal_isf(alpha) * sd);
    return k < 0 ? 0 : (size_t)k;
}

int cg_stats_hl_shift(const double *x, size_t m, const double *y, size_t n, double alpha,
                      struct cg_shift *out)
{
    if (m == 0 || n == 0)
        return -1;
    size_t mn = m * n;
    double *d = malloc(mn * sizeof(*d));
    if (d == NULL)
        return -1;
    for (size_t i = 0; i < m; i++) {
        for (size_t j = 0; j < n; j++)
            d[i * n + j] = y[j] - x[i];
    }
    qsort(d, mn, sizeof(*d), cmp_double);
    out->estimate = sorted_quantile(d, mn, 0.5);
    bool ties;
    double tterm = tie_term(x, m, y, n, &ties);
    bool exact = !isnan(tterm) && !ties && m <= CG_MWU_EXACT_MAX && n <= CG_MWU_EXACT_MAX;
    size_t k = moses_rank(m, n, alpha, exact);
    if (k == 0 || k > (mn + 1) / 2) {
        out->low = -INFINITY;
        out->high = INFINITY;
    } else {
        out->low = d[k - 1];
        out->high = d[mn - k];
    }
    free(d);
    return 0;
}

uint64_t cg_stats_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform integer in [0, n) (n > 0); the modulo bias is below 2^-40 for the sizes used here. */
static size_t rand_below(uint64_t *state, size_t n)
{
    return (size_t)(cg_stats_rand(state) % (uint64_t)n);
}

/* The statistic of k pooled step values (scratch is reordered) with their sums. */
static double finish_stat(enum cg_boot_stat stat, double *scratch, size_t k, double sum,
                          double wsum)
{
    if (stat == CG_BOOT_MEAN)
        return sum / (double)k;
    if (stat == CG_BOOT_RATE)
        return wsum / sum;
    if (stat == CG_BOOT_FLOOR)
        return cg_stats_floor(scratch, k);
    qsort(scratch, k, sizeof(*scratch), cmp_double);
    return sorted_quantile(scratch, k, 0.95);
}

static double side_stat(const struct cg_boot_side *s, enum cg_boot_stat stat, double *scratch)
{
    size_t k = 0;
    double sum = 0.0, wsum = 0.0;
    for (size_t r = 0; r < s->n_runs; r++) {
        for (size_t i = 0; i < s->lengths[r]; i++) {
            scratch[k++] = s->values[r][i];
            sum += s->values[r][i];
            if (stat == CG_BOOT_RATE)
                wsum += s->weights[r][i];
        }
    }
    return finish_stat(stat, scratch, k, sum, wsum);
}

/* One block-bootstrap resample of side s (total steps, same count as measured). */
static double resample_stat(const struct cg_boot_side *s, enum cg_boot_stat stat, size_t total,
                            size_t block, uint64_t *rng, double *scratch)
{
    size_t k = 0;
    double sum = 0.0, wsum = 0.0;
    while (k < total) {
        size_t r = rand_below(rng, s->n_runs);
        size_t len = s->lengths[r];
        size_t b = block < len ? block : len;
        size_t start = rand_below(rng, len - b + 1);
        for (size_t i = 0; i < b && k < total; i++, k++) {
            double v = s->values[r][start + i];
            scratch[k] = v;
            sum += v;
            if (stat == CG_BOOT_RATE)
                wsum += s->weights[r][start + i];
        }
    }
    return finish_stat(stat, scratch, total, sum, wsum);
}

/* Steps of side s in all; *shortest is lowered to its shortest run's length. */
static size_t side_total(const struct cg_boot_side *s, size_t *shortest)
{
    size_t total = 0;
    for (size_t r = 0; r < s->n_runs; r++) {
        total += s->lengths[r];
        if (s->lengths[r] < *shortest)
            *shortest = s->lengths[r];
    }
    return total;
}

/* Interval and one-sided p-values from the bootstrap ratios (sorted here). */
static void boot_result(double *ratios, size_t resamples, double alpha, struct cg_boot_result *out)
{
    size_t le1 = 0, ge1 = 0;
    for (size_t b = 0; b < resamples; b++) {
        le1 += ratios[b] <= 1.0;
        ge1 += ratios[b] >= 1.0;
    }
    qsort(ratios, resamples, sizeof(*ratios), cmp_double);
    out->low = sorted_quantile(ratios, resamples, alpha);
    out->high = sorted_quantile(ratios, resamples, 1.0 - alpha);
    out->p_greater = (double)(le1 + 1) / (double)(resamples + 1);
    out->p_less = (double)(ge1 + 1) / (double)(resamples + 1);
}

int cg_stats_block_bootstrap(const struct cg_boot_side *x, const struct cg_boot_side *y,
                             enum cg_boot_stat stat, size_t resamples, double alpha,
                             uint64_t seed, struct cg_boot_result *out)
{
    size_t shortest = (size_t)-1;
    size_t nx = side_total(x, &shortest), ny = side_total(y, &shortest);
    if (nx == 0 || ny == 0 || shortest == 0 || resamples == 0)
        return -1;
    double *scratch = malloc((nx > ny ? nx : ny) * sizeof(*scratch));
    double *ratios = malloc(resamples * sizeof(*ratios));
    if (scratch == NULL || ratios == NULL) {
        free(scratch);
        free(ratios);
        return -1;
    }
    size_t block = (size_t)ceil(sqrt((double)shortest));
    out->block_len = block;
    out->x_stat = side_stat(x, stat, scratch);
    out->y_stat = side_stat(y, stat, scratch);
    out->ratio = out->y_stat / out->x_stat;
    uint64_t rng = seed;
    for (size_t b = 0; b < resamples; b++) {
        double sx = resample_stat(x, stat, nx, block, &rng, scratch);
        double sy = resample_stat(y, stat, ny, block, &rng, scratch);
        ratios[b] = sy / sx;
    }
    boot_result(ratios, resamples, alpha, out);
    free(scratch);
    free(ratios);
    return 0;
}

struct pidx {
    double p;
    size_t i;
};

static int cmp_pidx(const void *a, const void *b)
{
    const struct pidx *x = a, *y = b;
    return (x->p > y->p) - (x->p < y->p);
}

int cg_stats_bh_adjust(const double *p, size_t n, double *q)
{
    struct pidx *v = malloc((n ? n : 1) * sizeof(*v));
    if (v == NULL)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        q[i] = NAN;
        if (!isnan(p[i]))
            v[k++] = (struct pidx){p[i], i};
    }
    qsort(v, k, sizeof(*v), cmp_pidx);
    double running = 1.0;
    for (size_t r = k; r-- > 0;) {
        double adj = v[r].p * (double)k / (double)(r + 1);
        if (adj < running)
            running = adj;
        q[v[r].i] = running;
    }
    free(v);
    return 0;
}
