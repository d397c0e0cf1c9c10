/*
 * stats: the statistics behind the verdict. Pure functions of their inputs, thread-safe.
 * The words (run, step, side, look, spending, floor, fast state, confirmation): the glossary
 * atop docs/statistics.md.
 *
 * Descriptive statistics (mean and variance by Welford's method, type-7 quantiles), the
 * Mann-Whitney U test, the Hodges-Lehmann shift estimate with the interval that inverts the same
 * test, a moving-block bootstrap for within-run comparisons, and Benjamini-Hochberg adjustment.
 * Units are whatever the caller passes in.
 *
 * The null distribution of U: when both samples have at most CG_MWU_EXACT_MAX values, exact —
 * without ties the Gaussian binomial coefficients, with ties the exact distribution conditional
 * on the tie pattern (midranks: a tie between the sides counts one half in U) — so a test at
 * level alpha rejects with probability at most alpha under exchangeability; larger samples use
 * the normal approximation with tie and continuity correction. Upper tails are never computed
 * as 1 minus a lower tail (or from coefficients that carry cancellation): p is in [0, 1] and
 * keeps its relative precision far below 1e-16.
 */
#ifndef CG_STATS_H
#define CG_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CG_MWU_EXACT_MAX 50

struct cg_welford {
    size_t n;
    double mean;
    double m2;
};

/* Starts an empty accumulator. */
void cg_welford_init(struct cg_welford *w);

/* Adds one value. */
void cg_welford_add(struct cg_welford *w, double x);

/* Sample variance (n - 1 in the denominator); NAN with fewer than 2 values. */
double cg_welford_variance(const struct cg_welford *w);

/* Mean of n values; NAN when n is 0. */
double cg_stats_mean(const double *v, size_t n);

/* Type-7 quantile (linear interpolation between closest ranks) of n unsorted values, q in
 * [0, 1]. v is not modified. NAN when n is 0 or no memory. */
double cg_stats_quantile(const double *v, size_t n, double q);
/* The same of n values already sorted ascending (n > 0); no allocation. */
double cg_stats_sorted_quantile(const double *v, size_t n, double q);

/* The median of n sorted values (n > 0): the middle one, or the mean of the middle two as
 * (a + b) / 2. The same value as cg_stats_quantile(v, n, 0.5) but rounded once, where type 7
 * computes a + (b - a) / 2 and can differ in the last bit; the Hodges-Lehmann estimate of pairs
 * and the step-phase test (pattern.h) take this one. */
double cg_stats_sorted_median(const double *v, size_t n);

/* Standard normal upper tail P(Z > z). */
double cg_stats_normal_sf(double z);

/* The z with P(Z > z) = p, for p in (0, 1). */
double cg_stats_normal_isf(double p);

struct cg_mwu {
    double u;          /* pairs with y > x, ties counted one half */
    double p_greater;  /* one-sided p-value, H1: y tends to be larger than x */
    double p_less;     /* one-sided p-value, H1: y tends to be smaller than x */
    int exact;         /* 1 when the exact null distribution was used */
};

/* Mann-Whitney U test of x (m values) against y (n values). Returns 0, or -1 when a sample is
 * empty or memory ran out. */
int cg_stats_mwu(const double *x, size_t m, const double *y, size_t n, struct cg_mwu *out);

struct cg_shift {
    double estimate; /* Hodges-Lehmann: median of all y_j - x_i */
    double low;      /* lower bound of the 1 - 2*alpha interval; -INFINITY when unattainable */
    double high;     /* upper bound; +INFINITY when unattainable */
};

/* Hodges-Lehmann shift of y relative to x with the interval of shifts s that the one-sided
 * tests of cg_stats_mwu at level alpha (same null distribution) do not reject for y - s
 * against x: low is the largest shift rejected as "greater", high the smallest rejected as
 * "less". So p_greater <= alpha exactly when low > 0, and p_less <= alpha exactly when
 * high < 0 — except that an end can sit at 0 either way when some y_j equals some x_i (the
 * shift 0 is then itself a boundary point). An end is infinite only when no U reaches alpha.
 * Returns 0, or -1 (empty sample, no memory). */
int cg_stats_hl_shift(const double *x, size_t m, const double *y, size_t n, double alpha,
                      struct cg_shift *out);

/* cg_stats_mwu and cg_stats_hl_shift from one null distribution; test or shift may be NULL. */
int cg_stats_mwu_shift(const double *x, size_t m, const double *y, size_t n, double alpha,
                       struct cg_mwu *test, struct cg_shift *shift);

/* The Hodges-Lehmann shift of y relative to x and the interval that inverts a test of U (pairs
 * y > x, ties one half) rejecting "greater" when 2U >= h_up and "less" when 2U < h_down (h_up
 * above 2mn: never, an infinite low end; h_down 0: never, an infinite high end). For callers
 * whose critical values come from another null distribution of the same statistic (the step
 * time floor's permutation test, verdict.h). Returns 0, or -1 (empty sample, no memory). */
int cg_stats_shift_interval(const double *x, size_t m, const double *y, size_t n, size_t h_up,
                            size_t h_down, struct cg_shift *out);

/* An exact null distribution of a statistic with the values h = 0..top, as its two tails,
 * each accumulated from its own end (never 1 minus the other), so a small tail keeps its
 * relative precision: the Mann-Whitney test with ties (2U) and the signed-rank test (2W+,
 * paired.h). */
struct cg_tails {
    size_t top;
    double *lower; /* P(H <= h), h = 0..top */
    double *upper; /* P(H >= h) */
};

/* Fills t from the counts count[0..top] of the outcomes of each value, of total outcomes in all
 * (each tail at most 1). 0, or -1 when memory ran out (t then holds nothing);
 * cg_stats_tails_release frees it. */
int cg_stats_tails_from_counts(struct cg_tails *t, const double *count, size_t top, double total);

/* P(H >= h); 0 past top. */
double cg_stats_tails_upper(const struct cg_tails *t, size_t h);

/* P(H <= h); that of top past it. */
double cg_stats_tails_lower(const struct cg_tails *t, size_t h);

/* Frees the tails; t holds nothing after. */
void cg_stats_tails_release(struct cg_tails *t);

/* The critical values of the two one-sided tests of a statistic h in [0, top] at level alpha,
 * from its tails under the null, upper(null, h) = P(H >= h) and lower(null, h) = P(H <= h),
 * each monotone in h (bisection): *h_up is the smallest h with upper <= alpha, *h_down the
 * smallest with lower > alpha, top + 1 when there is none. "Greater" is rejected exactly when
 * h >= *h_up and "less" when h < *h_down, so an interval that inverts the tests (the
 * Mann-Whitney, signed-rank and floor intervals) cannot disagree with their p-values. */
void cg_stats_critical(size_t top, double alpha, double (*upper)(const void *null, size_t h),
                       double (*lower)(const void *null, size_t h), const void *null, size_t *h_up,
                       size_t *h_down);

/* A floor of step times: the median of those within CG_FLOOR_STEP_WINDOW of the fastest (a
 * run's step time floor, verdict.h). Reorders v; NAN when n is 0. */
#define CG_FLOOR_STEP_WINDOW 1.10
double cg_stats_floor(double *v, size_t n);

/* Statistics of a run's steps that the block bootstrap can resample (CG_BOOT_FLOOR:
 * cg_stats_floor). */
enum cg_boot_stat { CG_BOOT_MEAN, CG_BOOT_P95, CG_BOOT_RATE, CG_BOOT_FLOOR };

/* A side of a within-run comparison: its runs' step series. For CG_BOOT_RATE each step also has
 * a weight (tokens) and the statistic is sum(weight) / sum(value). */
struct cg_boot_side {
    const double *const *values;  /* values[r][i]: step i of run r */
    const double *const *weights; /* same shape, only for CG_BOOT_RATE, else NULL */
    const size_t *lengths;        /* steps per run */
    size_t n_runs;
};

struct cg_boot_result {
    double x_stat;    /* statistic(x) on the data as measured */
    double y_stat;    /* statistic(y) */
    double ratio;     /* y_stat / x_stat */
    double low;       /* alpha quantile of the bootstrap ratios */
    double high;      /* 1 - alpha quantile */
    double p_greater; /* share of bootstrap ratios <= 1, with the +1 correction */
    double p_less;    /* share of bootstrap ratios >= 1, with the +1 correction */
    size_t block_len;
};

/* Moving-block bootstrap of statistic(y) / statistic(x): each resample draws blocks of
 * consecutive steps (block length ceil(sqrt(shortest run))) from random runs of each side, so
 * autocorrelation within a run is kept. Deterministic for a given seed. 0, or -1 on empty
 * input or no memory. */
int cg_stats_block_bootstrap(const struct cg_boot_side *x, const struct cg_boot_side *y,
                             enum cg_boot_stat stat, size_t resamples, double alpha,
                             uint64_t seed, struct cg_boot_result *out);

/* Benjamini-Hochberg adjusted p-values (q[i] for p[i]); NAN entries are skipped and stay NAN.
 * Returns 0, or -1 when memory ran out. */
int cg_stats_bh_adjust(const double *p, size_t n, double *q);

/* splitmix64: the next value of a seeded generator. */
uint64_t cg_stats_rand(uint64_t *state);

/* qsort comparator of doubles, increasing (no NAN among them). */
int cg_stats_cmp_double(const void *a, const void *b);

/* C(n, k) as a double. */
double cg_stats_choose(size_t n, size_t k);

/* Fisher's exact test, one-sided: with a of m baseline items and b of n current items marked,
 * the probability under the hypergeometric distribution (the marked total a + b fixed) that the
 * current side holds b or more of them. 1 when nothing is marked; NAN for a > m or b > n. */
double cg_stats_fisher_greater(size_t a, size_t m, size_t b, size_t n);

/* Splits a permutation test draws when there are more in all; with at most this many, every
 * split is taken. */
#define CG_STATS_SPLITS 2000

/* Splits of n pooled items into nb "baseline" and n - nb "current" ones, the null distribution
 * of a permutation test: every split (the baseline positions in lexicographic order) when there
 * are at most `limit`, else `limit` splits drawn by a partial Fisher-Yates shuffle from `seed`
 * (a seed taken from the pooled values, never from the sides, so the same runs give the same
 * p). The caller owns idx (n entries); nothing is allocated. */
struct cg_splits {
    size_t *idx;
    size_t n, nb;
    size_t count; /* splits the iteration yields */
    bool all;     /* every split (p = k / count) or drawn ones (p = (1 + k) / (1 + count)) */
    size_t done;
    uint64_t rng;
};

/* -1 when nb > n or n == 0. */
int cg_stats_splits_init(struct cg_splits *s, size_t *idx, size_t n, size_t nb, size_t limit,
                         uint64_t seed);

/* The next split into cur (n bytes, 1 for current); false when all have been given. */
bool cg_stats_splits_next(struct cg_splits *s, unsigned char *cur);

#endif
