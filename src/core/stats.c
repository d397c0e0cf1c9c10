/*
 * stats: descriptive statistics, Mann-Whitney U, Hodges-Lehmann with the interval that inverts
 * the test, block bootstrap and Benjamini-Hochberg (see stats.h). Pure and thread-safe.
 *
 * The exact null distribution of U for samples of m and n without ties is the coefficient list
 * of the Gaussian binomial [m+n choose m] in q: prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i).
 * It is built one factor at a time (multiply, then divide by a running sum), truncated at
 * degree m*n, in doubles, and divided by C(m+n, m), the sum of the coefficients. Only its lower
 * tails are used (upper tails by symmetry). With ties, the exact conditional distribution is
 * counted over the tie groups in increasing order (mwu_tied_counts), additions only. The
 * interval inverts the test: the critical values of 2U come from the same tails the p-value
 * uses, and the ends are the order statistics of the differences where U crosses them.
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

int cg_stats_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double cg_stats_sorted_quantile(const double *v, size_t n, double q)
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
    qsort(s, n, sizeof(*s), cg_stats_cmp_double);
    double r = cg_stats_sorted_quantile(s, n, q);
    free(s);
    return r;
}

double cg_stats_sorted_median(const double *v, size_t n)
{
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

static void swap_double(double *v, size_t i, size_t j)
{
    double t = v[i];
    v[i] = v[j];
    v[j] = t;
}

/* Moves the k-th smallest of v[0..n) (k < n) to v[k], the values before it no larger and those
 * after it no smaller: Hoare's selection, linear on average. */
static void select_kth(double *v, size_t n, size_t k)
{
    ptrdiff_t lo = 0, hi = (ptrdiff_t)n - 1, at = (ptrdiff_t)k;
    while (lo < hi) {
        double pivot = v[lo + (hi - lo) / 2];
        ptrdiff_t i = lo - 1, j = hi + 1;
        for (;;) { /* [lo, j] no larger than the pivot, (j, hi] no smaller; lo <= j < hi */
            do
                i++;
            while (v[i] < pivot);
            do
                j--;
            while (v[j] > pivot);
            if (i >= j)
                break;
            swap_double(v, (size_t)i, (size_t)j);
        }
        if (at <= j)
            hi = j;
        else
            lo = j + 1;
    }
}

double cg_stats_floor(double *v, size_t n)
{
    if (n == 0)
        return NAN;
    /* The fastest first, then those within the window of it: the prefix that sorting would give,
     * in some order. Its median needs only its two middle values in place, found by selection
     * rather than by sorting every step. */
    size_t low = 0;
    for (size_t i = 1; i < n; i++)
        low = v[i] < v[low] ? i : low;
    swap_double(v, 0, low);
    size_t fast = 1;
    for (size_t i = 1; i < n; i++)
        if (v[i] <= v[0] * CG_FLOOR_STEP_WINDOW)
            swap_double(v, fast++, i);
    size_t mid = (size_t)floor((double)(fast - 1) * 0.5); /* as cg_stats_sorted_quantile */
    select_kth(v, fast, mid);
    for (size_t i = mid + 2; i < fast; i++) /* the next value up, beside it */
        if (v[i] < v[mid + 1])
            swap_double(v, mid + 1, i);
    return cg_stats_sorted_quantile(v, fast, 0.5);
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

/* Lower tail of U for m, n without ties: P(U <= u) for u = 0..m*n into cdf (m*n + 1 entries).
 * The coefficients of low degree are small integers that the recurrence keeps exact; those near
 * the middle carry rounding, and those near the top the rounding of the middle (cancellation),
 * so callers take upper tails from the lower tail of the mirror, P(U >= u) = P(U <= mn - u). */
static void mwu_untied_cdf(size_t m, size_t n, double *cdf)
{
    size_t top = m * n;
    memset(cdf, 0, (top + 1) * sizeof(*cdf));
    cdf[0] = 1.0;
    for (size_t i = 1; i <= m; i++) {
        size_t a = n + i;
        for (size_t k = top; k >= a; k--)
            cdf[k] -= cdf[k - a];
        for (size_t k = i; k <= top; k++)
            cdf[k] += cdf[k - i];
    }
    double total = 1.0; /* C(m + n, m) */
    for (size_t i = 1; i <= m; i++)
        total = total * (double)(n + i) / (double)i;
    double run = 0.0;
    for (size_t k = 0; k <= top; k++) {
        run += cdf[k];
        cdf[k] = fmin(1.0, run / total);
    }
}

/* Exact conditional distribution of 2U given the tie pattern of the pooled sample (groups of
 * equal values in increasing order, sizes[0..groups)): the number of ways to choose which n of
 * the N values are y with 2U = h, for h = 0..2mn, into count. Choosing k of a group of t that
 * follows b values of which j are y adds 2k(b - j) + k(t - k) to 2U (each chosen value is above
 * the b - j x before it, and ties with the t - k x of its own group count one half). All
 * additions of non-negative numbers: no cancellation. dp holds (n + 1) rows of 2mn + 1. */
static void mwu_tied_counts(const size_t *sizes, size_t groups, size_t m, size_t n, double *dp)
{
    size_t width = 2 * m * n + 1;
    memset(dp, 0, (n + 1) * width * sizeof(*dp));
    dp[0] = 1.0;
    size_t before = 0;
    for (size_t g = 0; g < groups; g++) {
        size_t t = sizes[g];
        size_t jmax = before < n ? before : n;
        for (size_t j = jmax + 1; j-- > 0;) {
            if (before - j > m)
                continue; /* more x than there are */
            double *row = dp + j * width;
            double choose = 1.0; /* C(t, k) */
            for (size_t k = 1; k <= t && j + k <= n; k++) {
                choose = choose * (double)(t - k + 1) / (double)k;
                size_t add = 2 * k * (before - j) + k * (t - k);
                double *to = dp + (j + k) * width;
                for (size_t h = 0; h + add < width; h++) {
                    if (row[h] != 0.0)
                        to[h + add] += choose * row[h];
                }
            }
        }
        before += t;
    }
}

/* Tie groups of the pooled sample: sizes of the runs of equal values in increasing order into
 * sizes (m + n entries); returns their number, 0 when memory ran out. */
static size_t tie_groups(const double *x, size_t m, const double *y, size_t n, size_t *sizes)
{
    size_t N = m + n;
    double *all = malloc(N * sizeof(*all));
    if (all == NULL)
        return 0;
    memcpy(all, x, m * sizeof(*all));
    memcpy(all + m, y, n * sizeof(*all));
    qsort(all, N, sizeof(*all), cg_stats_cmp_double);
    size_t groups = 0;
    for (size_t i = 0; i < N;) {
        size_t j = i + 1;
        while (j < N && all[j] == all[i])
            j++;
        sizes[groups++] = j - i;
        i = j;
    }
    free(all);
    return groups;
}

/* The null distribution of U the test uses for a given pair of samples: exact without ties
 * (both sides at most CG_MWU_EXACT_MAX), exact conditional on the ties (same sizes), else the
 * normal approximation with tie and continuity correction. Tails are indexed by h = 2U. */
struct mwu_null {
    size_t m, n;
    int kind;             /* NULL_UNTIED, NULL_TIED, NULL_NORMAL */
    double *lower;        /* untied: P(U <= u), u = 0..mn */
    struct cg_tails tied; /* tied: of h = 2U, h = 0..2mn */
    double mu, sd;        /* normal: mean and standard deviation of U (sd 0: all values tied) */
};

enum { NULL_UNTIED, NULL_TIED, NULL_NORMAL };

int cg_stats_tails_from_counts(struct cg_tails *t, const double *count, size_t top, double total)
{
    t->top = top;
    t->lower = malloc((top + 1) * sizeof(double));
    t->upper = malloc((top + 1) * sizeof(double));
    if (t->lower == NULL || t->upper == NULL) {
        cg_stats_tails_release(t);
        return -1;
    }
    double run = 0.0;
    for (size_t h = 0; h <= top; h++) {
        run += count[h];
        t->lower[h] = fmin(1.0, run / total);
    }
    run = 0.0;
    for (size_t h = top + 1; h-- > 0;) {
        run += count[h];
        t->upper[h] = fmin(1.0, run / total);
    }
    return 0;
}

double cg_stats_tails_upper(const struct cg_tails *t, size_t h)
{
    return h > t->top ? 0.0 : t->upper[h];
}

double cg_stats_tails_lower(const struct cg_tails *t, size_t h)
{
    return t->lower[h < t->top ? h : t->top];
}

void cg_stats_tails_release(struct cg_tails *t)
{
    free(t->lower);
    free(t->upper);
    t->lower = t->upper = NULL;
}

static void mwu_null_release(struct mwu_null *z)
{
    free(z->lower);
    z->lower = NULL;
    cg_stats_tails_release(&z->tied);
}

static int mwu_null_make(const double *x, size_t m, const double *y, size_t n,
                         struct mwu_null *z)
{
    memset(z, 0, sizeof(*z));
    z->m = m;
    z->n = n;
    size_t N = m + n, top = m * n;
    size_t *sizes = malloc(N * sizeof(*sizes));
    size_t groups = sizes ? tie_groups(x, m, y, n, sizes) : 0;
    if (groups == 0) {
        free(sizes);
        return -1;
    }
    bool small = m <= CG_MWU_EXACT_MAX && n <= CG_MWU_EXACT_MAX;
    int rc = -1;
    if (small && groups == N) {
        z->kind = NULL_UNTIED;
        if ((z->lower = malloc((top + 1) * sizeof(double))) == NULL)
            goto done;
        mwu_untied_cdf(m, n, z->lower);
    } else if (small) {
        z->kind = NULL_TIED;
        size_t width = 2 * top + 1;
        double *dp = malloc((n + 1) * width * sizeof(*dp));
        if (dp == NULL)
            goto done;
        mwu_tied_counts(sizes, groups, m, n, dp);
        const double *count = dp + n * width;
        double total = 0.0;
        for (size_t h = 0; h < width; h++)
            total += count[h];
        int made = cg_stats_tails_from_counts(&z->tied, count, 2 * top, total);
        free(dp);
        if (made != 0)
            goto done;
    } else {
        z->kind = NULL_NORMAL;
        double term = 0.0; /* sum of t^3 - t over tie groups */
        for (size_t g = 0; g < groups; g++) {
            double t = (double)sizes[g];
            term += t * t * t - t;
        }
        double mn = (double)top, NN = (double)N;
        double var = mn / 12.0 * ((NN + 1.0) - term / (NN * (NN - 1.0)));
        z->mu = mn / 2.0;
        z->sd = var > 0.0 ? sqrt(var) : 0.0;
    }
    rc = 0;
done:
    free(sizes);
    if (rc != 0)
        mwu_null_release(z);
    return rc;
}

/* P(U >= h / 2) under the null. */
static double null_upper(const struct mwu_null *z, size_t h)
{
    size_t top = z->m * z->n;
    switch (z->kind) {
    case NULL_UNTIED: {
        size_t u = (h + 1) / 2; /* the smallest integer U >= h / 2 */
        return u > top ? 0.0 : z->lower[top - u];
    }
    case NULL_TIED:
        return cg_stats_tails_upper(&z->tied, h);
    default:
        if (z->sd <= 0.0)
            return 1.0;
        return cg_stats_normal_sf(((double)h / 2.0 - z->mu - 0.5) / z->sd);
    }
}

/* P(U <= h / 2) under the null. */
static double null_lower(const struct mwu_null *z, size_t h)
{
    size_t top = z->m * z->n;
    switch (z->kind) {
    case NULL_UNTIED:
        return z->lower[h / 2 < top ? h / 2 : top];
    case NULL_TIED:
        return cg_stats_tails_lower(&z->tied, h);
    default:
        if (z->sd <= 0.0)
            return 1.0;
        return cg_stats_normal_sf((z->mu - (double)h / 2.0 - 0.5) / z->sd);
    }
}

/* U of y against x: pairs with y > x, ties one half. */
static double mwu_u(const double *x, size_t m, const double *y, size_t n)
{
    double u = 0.0;
    for (size_t i = 0; i < m; i++) {
        for (size_t j = 0; j < n; j++)
            u += y[j] > x[i] ? 1.0 : (y[j] == x[i] ? 0.5 : 0.0);
    }
    return u;
}

void cg_stats_critical(size_t top, double alpha, double (*upper)(const void *null, size_t h),
                       double (*lower)(const void *null, size_t h), const void *null, size_t *h_up,
                       size_t *h_down)
{
    size_t lo = 0, hi = top + 1; /* the answer is in [lo, hi] */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (upper(null, mid) <= alpha)
            hi = mid;
        else
            lo = mid + 1;
    }
    *h_up = lo;
    lo = 0;
    hi = top + 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (lower(null, mid) > alpha)
            hi = mid;
        else
            lo = mid + 1;
    }
    *h_down = lo;
}

/* null_upper and null_lower as cg_stats_critical takes them. */
static double mwu_tail_upper(const void *z, size_t h)
{
    return null_upper(z, h);
}

static double mwu_tail_lower(const void *z, size_t h)
{
    return null_lower(z, h);
}

int cg_stats_shift_interval(const double *x, size_t m, const double *y, size_t n, size_t h_up,
                            size_t h_down, struct cg_shift *out)
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
    qsort(d, mn, sizeof(*d), cg_stats_cmp_double);
    out->estimate = cg_stats_sorted_quantile(d, mn, 0.5);
    /* Rejected "greater" at shift s when U(s) = #{d > s} + #{d = s} / 2 >= h_up / 2: the low
     * end is the smallest difference v with #{d > v} < h_up / 2, the k-th smallest for
     * k = floor(mn - h_up / 2) + 1. The high end mirrors it: the (mn - floor(h_low / 2))-th
     * smallest for the largest rejected h_low = h_down - 1. */
    out->low = h_up > 2 * mn ? -INFINITY : d[(2 * mn - h_up) / 2];
    if (h_down > 2 * mn) /* every U rejected "less": only a null with gaps does that */
        h_down = 2 * mn;
    out->high = h_down == 0 ? INFINITY : d[mn - 1 - (h_down - 1) / 2];
    free(d);
    return 0;
}

int cg_stats_mwu_shift(const double *x, size_t m, const double *y, size_t n, double alpha,
                       struct cg_mwu *test, struct cg_shift *shift)
{
    if (m == 0 || n == 0)
        return -1;
    struct mwu_null z;
    if (mwu_null_make(x, m, y, n, &z) != 0)
        return -1;
    size_t h_up = 0, h_down = 0; /* the interval's critical values, only when it is wanted */
    if (shift != NULL)
        cg_stats_critical(2 * m * n, alpha, mwu_tail_upper, mwu_tail_lower, &z, &h_up, &h_down);
    int rc = 0;
    if (test != NULL) {
        double u = mwu_u(x, m, y, n);
        size_t h = (size_t)llround(2.0 * u);
        test->u = u;
        test->p_greater = null_upper(&z, h);
        test->p_less = null_lower(&z, h);
        test->exact = z.kind != NULL_NORMAL;
    }
    mwu_null_release(&z);
    if (shift != NULL)
        rc = cg_stats_shift_interval(x, m, y, n, h_up, h_down, shift);
    return rc;
}

int cg_stats_mwu(const double *x, size_t m, const double *y, size_t n, struct cg_mwu *out)
{
    return cg_stats_mwu_shift(x, m, y, n, 0.0, out, NULL);
}

int cg_stats_hl_shift(const double *x, size_t m, const double *y, size_t n, double alpha,
                      struct cg_shift *out)
{
    return cg_stats_mwu_shift(x, m, y, n, alpha, NULL, out);
}

uint64_t cg_stats_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

double cg_stats_choose(size_t n, size_t k)
{
    double c = 1.0;
    for (size_t i = 1; i <= k; i++)
        c = c * (double)(n - k + i) / (double)i;
    return c;
}

/* log C(n, k) */
static double log_choose(size_t n, size_t k)
{
    return lgamma((double)n + 1.0) - lgamma((double)k + 1.0) - lgamma((double)(n - k) + 1.0);
}

double cg_stats_fisher_greater(size_t a, size_t m, size_t b, size_t n)
{
    if (a > m || b > n)
        return NAN;
    size_t marked = a + b, hi = marked < n ? marked : n;
    double denom = log_choose(m + n, marked), p = 0.0;
    /* the current side holds x of the marked items, x >= b; the baseline side marked - x <= m */
    for (size_t x = b; x <= hi; x++) {
        if (marked - x > m)
            continue;
        p += exp(log_choose(n, x) + log_choose(m, marked - x) - denom);
    }
    return p > 1.0 ? 1.0 : p;
}

int cg_stats_splits_init(struct cg_splits *s, size_t *idx, size_t n, size_t nb, size_t limit,
                         uint64_t seed)
{
    memset(s, 0, sizeof(*s));
    if (n == 0 || nb > n)
        return -1;
    s->idx = idx;
    s->n = n;
    s->nb = nb;
    s->rng = seed;
    double c = cg_stats_choose(n, nb);
    s->all = c <= (double)limit;
    s->count = s->all ? (size_t)llround(c) : limit;
    size_t first = s->all ? nb : n; /* every split: positions 0..nb-1 first; drawn: identity */
    for (size_t i = 0; i < first; i++)
        idx[i] = i;
    return 0;
}

bool cg_stats_splits_next(struct cg_splits *s, unsigned char *cur)
{
    if (s->done >= s->count)
        return false;
    size_t n = s->n, nb = s->nb, *idx = s->idx;
    if (s->all && s->done > 0) { /* the next choice of nb positions in lexicographic order */
        size_t i = nb;
        while (i > 0 && idx[i - 1] == n - nb + i - 1)
            i--;
        if (i == 0)
            return false;
        idx[i - 1]++;
        for (size_t j = i; j < nb; j++)
            idx[j] = idx[j - 1] + 1;
    } else if (!s->all) {
        for (size_t i = 0; i < nb; i++) { /* partial Fisher-Yates: nb positions */
            size_t j = i + (size_t)(cg_stats_rand(&s->rng) % (uint64_t)(n - i)); /* n - i >= 1 */
            size_t t = idx[i];
            idx[i] = idx[j];
            idx[j] = t;
        }
    }
    memset(cur, 1, n);
    for (size_t i = 0; i < nb; i++)
        cur[idx[i]] = 0;
    s->done++;
    return true;
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
    qsort(scratch, k, sizeof(*scratch), cg_stats_cmp_double);
    return cg_stats_sorted_quantile(scratch, k, 0.95);
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
    qsort(ratios, resamples, sizeof(*ratios), cg_stats_cmp_double);
    out->low = cg_stats_sorted_quantile(ratios, resamples, alpha);
    out->high = cg_stats_sorted_quantile(ratios, resamples, 1.0 - alpha);
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
