/*
 * test_stats: the statistics against reference values obtained independently of the code under
 * test: textbook values worked by hand (written out in each test), brute-force enumeration of
 * every split of the pooled sample for the exact Mann-Whitney distribution, a seeded Monte
 * Carlo permutation test for the normal approximation, and direct enumeration of all pairwise
 * differences for Hodges-Lehmann.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "stats.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static void test_stats__quantile_type7(void **state)
{
    (void)state;
    double v[] = {10, 1, 9, 2, 8, 3, 7, 4, 6, 5};
    /* R: quantile(1:10, c(.5, .95, 0, 1)) = 5.5, 9.55, 1, 10 */
    assert_float_equal(cg_stats_quantile(v, 10, 0.5), 5.5, 1e-12);
    assert_float_equal(cg_stats_quantile(v, 10, 0.95), 9.55, 1e-12);
    assert_float_equal(cg_stats_quantile(v, 10, 0.0), 1.0, 1e-12);
    assert_float_equal(cg_stats_quantile(v, 10, 1.0), 10.0, 1e-12);
    assert_float_equal(cg_stats_quantile(v, 1, 0.95), 10.0, 1e-12);
    assert_true(isnan(cg_stats_quantile(v, 0, 0.5)));
    assert_float_equal(v[0], 10.0, 0); /* input untouched */
}

/* The median of sorted values is the middle one or (a + b) / 2, rounded once: for 0.1 and 0.7
 * that is 0x1.9999999999999p-2, where type 7's a + (b - a) / 2 rounds to 0x1.999999999999ap-2. */
static void test_stats__sorted_median_rounds_once(void **state)
{
    (void)state;
    const double odd[] = {1.0, 2.0, 7.0}, even[] = {1.0, 2.0, 4.0, 9.0}, pair[] = {0.1, 0.7};
    assert_true(cg_stats_sorted_median(odd, 3) == 2.0);
    assert_true(cg_stats_sorted_median(even, 4) == 3.0);
    assert_true(cg_stats_sorted_median(odd, 1) == 1.0);
    assert_true(cg_stats_sorted_median(pair, 2) == 0x1.9999999999999p-2);
    assert_true(cg_stats_quantile(pair, 2, 0.5) == 0x1.999999999999ap-2);
}

/* The floor is the type-7 median of the values within CG_FLOOR_STEP_WINDOW of the fastest:
 * worked by hand in any order (the window at 100 ends at 110: 111 is out), and against a
 * reference that sorts everything, on seeded samples with many ties, odd and even counts. */
static int cmp_plain(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double floor_by_sorting(const double *in, size_t n)
{
    double v[64];
    memcpy(v, in, n * sizeof(*v));
    qsort(v, n, sizeof(*v), cmp_plain);
    size_t k = 1;
    while (k < n && v[k] <= v[0] * CG_FLOOR_STEP_WINDOW)
        k++;
    double h = (double)(k - 1) * 0.5, lo = floor(h);
    size_t i = (size_t)lo, j = i + 1 < k ? i + 1 : i;
    return v[i] + (h - lo) * (v[j] - v[i]);
}

static void test_stats__floor_is_the_median_within_the_window(void **state)
{
    (void)state;
    struct {
        double v[8];
        size_t n;
        double floor;
    } cases[] = {
        {{100, 105, 110, 111, 300}, 5, 105},      /* odd: 100, 105, 110 */
        {{300, 111, 110, 105, 100}, 5, 105},      /* the same, another order */
        {{108, 200, 100, 106, 104}, 5, 105},      /* even: 100, 104, 106, 108 -> 104 + 2 / 2 */
        {{7}, 1, 7},                              /* one value */
        {{50, 50, 50, 50}, 4, 50},                /* all tied */
        {{100, 200, 100, 300, 101, 100}, 6, 100}, /* ties at the floor: 100, 100, 100, 101 */
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        double v[8];
        memcpy(v, cases[c].v, sizeof(v));
        assert_true(cg_stats_floor(v, cases[c].n) == cases[c].floor);
    }
    assert_true(isnan(cg_stats_floor(NULL, 0)));
    uint64_t seed = 11;
    for (int t = 0; t < 2000; t++) {
        double v[64], copy[64];
        size_t n = 1 + (size_t)(cg_stats_rand(&seed) % 64);
        double step = t % 2 ? 1.0 : 0.25; /* coarse steps: many ties */
        for (size_t i = 0; i < n; i++)
            v[i] = 80.0 + step * (double)(cg_stats_rand(&seed) % 60);
        memcpy(copy, v, sizeof(v));
        double want = floor_by_sorting(v, n);
        assert_true(cg_stats_floor(v, n) == want);
        qsort(v, n, sizeof(*v), cmp_plain); /* reordered, nothing lost */
        qsort(copy, n, sizeof(*copy), cmp_plain);
        assert_memory_equal(v, copy, n * sizeof(*v));
    }
}

static double tails_upper(const void *t, size_t h)
{
    return cg_stats_tails_upper(t, h);
}

static double tails_lower(const void *t, size_t h)
{
    return cg_stats_tails_lower(t, h);
}

/* The tails of the number of heads in 3 fair tosses (counts 1 3 3 1 of 8) and the critical
 * values read from them: at alpha 1/8 three heads reject "greater" (h_up 3) and no heads "less"
 * (h_down 1); at 0.1 no count rejects either way (h_up past the top, h_down 0). */
static void test_stats__tails_and_critical_values(void **state)
{
    (void)state;
    const double count[] = {1, 3, 3, 1}, lower[] = {0.125, 0.5, 0.875, 1.0},
                 upper[] = {1.0, 0.875, 0.5, 0.125};
    struct cg_tails t;
    assert_int_equal(cg_stats_tails_from_counts(&t, count, 3, 8.0), 0);
    for (size_t h = 0; h <= 3; h++) {
        assert_true(cg_stats_tails_lower(&t, h) == lower[h]);
        assert_true(cg_stats_tails_upper(&t, h) == upper[h]);
    }
    assert_true(cg_stats_tails_upper(&t, 4) == 0.0);
    assert_true(cg_stats_tails_lower(&t, 4) == 1.0);
    size_t h_up, h_down;
    cg_stats_critical(3, 0.125, tails_upper, tails_lower, &t, &h_up, &h_down);
    assert_int_equal(h_up, 3);
    assert_int_equal(h_down, 1);
    cg_stats_critical(3, 0.1, tails_upper, tails_lower, &t, &h_up, &h_down);
    assert_int_equal(h_up, 4);
    assert_int_equal(h_down, 0);
    cg_stats_tails_release(&t);
    assert_null(t.lower);
    assert_null(t.upper);
}

static void test_stats__welford_is_stable_with_large_offset(void **state)
{
    (void)state;
    /* Deviations -6, -3, 3, 6 from 1e9 + 10: sum of squares 90, sample variance 90 / 3 = 30.
     * The sum_sq/n - mean^2 formula loses this entirely in doubles. */
    struct cg_welford w;
    cg_welford_init(&w);
    double v[] = {1e9 + 4, 1e9 + 7, 1e9 + 13, 1e9 + 16};
    for (int i = 0; i < 4; i++)
        cg_welford_add(&w, v[i]);
    assert_float_equal(w.mean, 1e9 + 10, 1e-6);
    assert_float_equal(cg_welford_variance(&w), 30.0, 1e-6);
}

static void test_stats__normal_tail_values(void **state)
{
    (void)state;
    /* Standard normal table values. */
    assert_float_equal(cg_stats_normal_sf(1.959963984540054), 0.025, 1e-12);
    assert_float_equal(cg_stats_normal_isf(0.05), 1.6448536269514722, 1e-9);
    assert_float_equal(cg_stats_normal_isf(0.5), 0.0, 1e-9);
}

static void test_stats__mwu_complete_separation_3v3(void **state)
{
    (void)state;
    /* All 9 pairs have y > x: U = 9; only 1 of C(6,3) = 20 splits reaches it: p = 0.05. */
    double x[] = {1, 2, 3}, y[] = {4, 5, 6};
    struct cg_mwu r;
    assert_int_equal(cg_stats_mwu(x, 3, y, 3, &r), 0);
    assert_float_equal(r.u, 9.0, 0);
    assert_int_equal(r.exact, 1);
    assert_float_equal(r.p_greater, 0.05, 1e-12);
    assert_float_equal(r.p_less, 1.0, 1e-12);
}

/* Brute force: P(U >= u_obs) over every way to choose which m of the pooled values are "x". */
static double brute_p_greater(const double *x, size_t m, const double *y, size_t n)
{
    double pool[24];
    size_t N = m + n;
    memcpy(pool, x, m * sizeof(double));
    memcpy(pool + m, y, n * sizeof(double));
    double u_obs = 0;
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++)
            u_obs += y[j] > x[i];
    long hits = 0, total = 0;
    for (uint32_t mask = 0; mask < (1u << N); mask++) {
        if ((size_t)__builtin_popcount(mask) != m)
            continue;
        double u = 0;
        for (size_t i = 0; i < N; i++) {
            if (!(mask & (1u << i)))
                continue;
            for (size_t j = 0; j < N; j++)
                if (!(mask & (1u << j)) && pool[j] > pool[i])
                    u += 1;
        }
        total++;
        hits += u >= u_obs;
    }
    return (double)hits / (double)total;
}

static void test_stats__mwu_exact_matches_enumeration(void **state)
{
    (void)state;
    uint64_t rng = 42;
    const size_t sizes[][2] = {{3, 3}, {3, 5}, {4, 4}, {5, 6}, {6, 6}, {2, 7}, {7, 5}};
    for (size_t c = 0; c < sizeof(sizes) / sizeof(sizes[0]); c++) {
        for (int rep = 0; rep < 5; rep++) {
            size_t m = sizes[c][0], n = sizes[c][1];
            double x[12], y[12];
            for (size_t i = 0; i < m; i++)
                x[i] = (double)(cg_stats_rand(&rng) % 100000) + 0.5;
            for (size_t j = 0; j < n; j++) /* y shifted so p-values vary across the range */
                y[j] = (double)(cg_stats_rand(&rng) % 100000) + 20000.0 * rep + 0.25;
            struct cg_mwu r;
            assert_int_equal(cg_stats_mwu(x, m, y, n, &r), 0);
            assert_int_equal(r.exact, 1);
            assert_float_equal(r.p_greater, brute_p_greater(x, m, y, n), 1e-12);
        }
    }
}

static void test_stats__mwu_normal_approximation_matches_permutation(void **state)
{
    (void)state;
    /* 60 vs 60 with ties (values rounded to integers): the normal approximation with tie and
     * continuity correction is compared with a 20,000-permutation Monte Carlo estimate. */
    enum { M = 60, N = 60, PERMS = 20000 };
    uint64_t rng = 7;
    double x[M], y[N], pool[M + N];
    for (int i = 0; i < M; i++)
        x[i] = (double)(cg_stats_rand(&rng) % 40);
    for (int j = 0; j < N; j++)
        y[j] = (double)(cg_stats_rand(&rng) % 40) + 3.0;
    struct cg_mwu r;
    assert_int_equal(cg_stats_mwu(x, M, y, N, &r), 0);
    assert_int_equal(r.exact, 0);
    memcpy(pool, x, sizeof(x));
    memcpy(pool + M, y, sizeof(y));
    long hits = 0;
    for (int p = 0; p < PERMS; p++) {
        for (int i = M + N - 1; i > 0; i--) {
            int k = (int)(cg_stats_rand(&rng) % (uint64_t)(i + 1));
            double t = pool[i];
            pool[i] = pool[k];
            pool[k] = t;
        }
        double u = 0;
        for (int i = 0; i < M; i++)
            for (int j = M; j < M + N; j++)
                u += pool[j] > pool[i] ? 1.0 : pool[j] == pool[i] ? 0.5 : 0.0;
        hits += u >= r.u;
    }
    double mc = (double)hits / PERMS;
    assert_true(r.p_greater > 0.001 && r.p_greater < 0.5); /* a case in the interesting range */
    assert_float_equal(r.p_greater, mc, 0.01);
}

/* cmocka's assert_float_equal compares in float precision; these values need doubles. */
#define assert_near(got, want, eps) assert_near_at((got), (want), (eps), __FILE__, __LINE__)
#define assert_rel(got, want, rel)                                                                 \
    assert_near_at((got), (want), fabs(want) * (rel), __FILE__, __LINE__)

static void assert_near_at(double got, double want, double eps, const char *file, int line)
{
    if (!(fabs(got - want) <= eps))
        fail_msg("%s:%d: %.17g is not %.17g within %g", file, line, got, want, eps);
}

/* x = 1..50 and y = 31 values of which one lies below 20 (or 70) of the x: U = 1480 of mn =
 * 1500 (or 1550). The upper tail is far below double precision of 1: it must come out of the
 * lower tail of the mirrored statistic, P(U >= u) = P(U <= mn - u), never as a difference.
 * References from R 4.2.2: pwilcox(20, 50, 30) = 3.0592647893910644e-19 and pwilcox(70, 50, 31)
 * = 1.2623045819793394e-15 (the latter also wilcox.test(y, x, alternative = "greater",
 * exact = TRUE)$p.value on these data, and the exact integer count 29260400 / choose(81, 50)). */
static void test_stats__mwu_exact_upper_tail_never_cancels(void **state)
{
    (void)state;
    double x[50], y[31];
    for (int i = 0; i < 50; i++)
        x[i] = i + 1;
    y[0] = 30.5; /* below x = 31..50: 20 pairs with y < x */
    for (int j = 1; j < 31; j++)
        y[j] = 100.0 + j;
    struct cg_mwu r;
    assert_int_equal(cg_stats_mwu(x, 50, y, 30, &r), 0);
    assert_near(r.u, 1480.0, 0);
    assert_int_equal(r.exact, 1);
    assert_rel(r.p_greater, 3.0592647893910644e-19, 1e-9);
    assert_near(r.p_less, 1.0, 1e-12);
    y[30] = 0.5; /* 31 values: a second one below all 50 x, U = 1550 - 70 */
    y[0] = 30.5;
    for (int j = 1; j < 30; j++)
        y[j] = 100.0 + j;
    assert_int_equal(cg_stats_mwu(x, 50, y, 31, &r), 0);
    assert_near(r.u, 1480.0, 0);
    assert_rel(r.p_greater, 1.2623045819793394e-15, 1e-9);
    /* every p over a whole range of U at the largest exact size is in [0, 1] and the two tails
     * of one U add to 1 + P(U = u) >= 1 */
    uint64_t rng = 5;
    double a[50], b[50];
    for (int rep = 0; rep < 40; rep++) {
        for (int i = 0; i < 50; i++) {
            a[i] = (double)(cg_stats_rand(&rng) % 1000000) + 0.5;
            b[i] = (double)(cg_stats_rand(&rng) % 1000000) + 25000.0 * rep + 0.25;
        }
        assert_int_equal(cg_stats_mwu(a, 50, b, 50, &r), 0);
        assert_true(r.p_greater >= 0.0 && r.p_greater <= 1.0);
        assert_true(r.p_less >= 0.0 && r.p_less <= 1.0);
        assert_true(r.p_greater + r.p_less >= 1.0 - 1e-12);
    }
}

/* 40 v 45 untied, p in the middle of the range: the exact distribution where its coefficients
 * are largest, against R 4.2.2: x = 1:40, y = c(3.5 + 0:39, 44.5:48.5),
 * wilcox.test(y, x, alternative = "greater", exact = TRUE)$p.value = 0.041809527800908984 and
 * alternative = "less" 0.95897943645416639 (W = 1097). */
static void test_stats__mwu_exact_matches_r_at_large_sizes(void **state)
{
    (void)state;
    double x[40], y[45];
    for (int i = 0; i < 40; i++)
        x[i] = i + 1;
    for (int j = 0; j < 45; j++)
        y[j] = j < 40 ? 3.5 + j : 4.5 + j;
    struct cg_mwu r;
    assert_int_equal(cg_stats_mwu(x, 40, y, 45, &r), 0);
    assert_near(r.u, 1097.0, 0);
    assert_int_equal(r.exact, 1);
    assert_rel(r.p_greater, 0.041809527800908984, 1e-9);
    assert_rel(r.p_less, 0.95897943645416639, 1e-9);
}

/* Brute force with ties: P(U >= u_obs) and P(U <= u_obs), ties counting one half, over every
 * way to choose which m of the pooled values are "x" (the exact conditional distribution). */
static void brute_tied(const double *x, size_t m, const double *y, size_t n, double *ge, double *le)
{
    double pool[24];
    size_t N = m + n;
    memcpy(pool, x, m * sizeof(double));
    memcpy(pool + m, y, n * sizeof(double));
    double u_obs = 0;
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++)
            u_obs += y[j] > x[i] ? 1.0 : y[j] == x[i] ? 0.5 : 0.0;
    long hi = 0, lo = 0, total = 0;
    for (uint32_t mask = 0; mask < (1u << N); mask++) {
        if ((size_t)__builtin_popcount(mask) != m)
            continue;
        double u = 0;
        for (size_t i = 0; i < N; i++) {
            if (!(mask & (1u << i)))
                continue;
            for (size_t j = 0; j < N; j++)
                if (!(mask & (1u << j)))
                    u += pool[j] > pool[i] ? 1.0 : pool[j] == pool[i] ? 0.5 : 0.0;
        }
        total++;
        hi += u >= u_obs;
        lo += u <= u_obs;
    }
    *ge = (double)hi / (double)total;
    *le = (double)lo / (double)total;
}

/* Ties in small samples: the exact conditional distribution of U given the tie pattern
 * (midranks), not the normal approximation. 20, 20, 21 ms against 23, 24, 25 ms: all nine
 * pairs slower, and only one of the 20 splits puts the three largest on the current side:
 * p = 0.05, the smallest p of 3 runs a side. References: R 4.2.2 with coin 1.4-2,
 * pvalue(wilcox_test(c(y, x) ~ g, distribution = "exact", alternative = "greater")) with g the
 * factor of the sides, levels c("y", "x"): 0.05 here; for x = c(12,15,15,17,18,18,18,20,21,23)
 * and y = c(15,18,19,20,20,21,22,23,23,24,25,27) 0.0078883964332880745 ("greater") and
 * 0.99333947785960175 ("less"), equal to a Python enumeration of all choose(22, 12) splits.
 * Then seeded small samples with many ties against brute_tied. */
static void test_stats__mwu_ties_use_exact_conditional_distribution(void **state)
{
    (void)state;
    double x[] = {20, 20, 21}, y[] = {23, 24, 25};
    struct cg_mwu r;
    assert_int_equal(cg_stats_mwu(x, 3, y, 3, &r), 0);
    assert_int_equal(r.exact, 1);
    assert_near(r.p_greater, 0.05, 1e-15);
    double x2[] = {12, 15, 15, 17, 18, 18, 18, 20, 21, 23},
           y2[] = {15, 18, 19, 20, 20, 21, 22, 23, 23, 24, 25, 27};
    assert_int_equal(cg_stats_mwu(x2, 10, y2, 12, &r), 0);
    assert_int_equal(r.exact, 1);
    assert_near(r.u, 96.0, 0);
    assert_rel(r.p_greater, 0.0078883964332880745, 1e-10);
    assert_rel(r.p_less, 0.99333947785960175, 1e-10);
    uint64_t rng = 11;
    const size_t sizes[][2] = {{3, 3}, {2, 5}, {4, 4}, {5, 6}, {6, 6}, {7, 4}, {8, 8}};
    for (size_t c = 0; c < sizeof(sizes) / sizeof(sizes[0]); c++) {
        for (int rep = 0; rep < 6; rep++) {
            size_t m = sizes[c][0], n = sizes[c][1];
            double a[12], b[12], ge, le;
            for (size_t i = 0; i < m; i++)
                a[i] = (double)(cg_stats_rand(&rng) % 6);
            for (size_t j = 0; j < n; j++)
                b[j] = (double)(cg_stats_rand(&rng) % 6) + (double)(rep % 3);
            assert_int_equal(cg_stats_mwu(a, m, b, n, &r), 0);
            brute_tied(a, m, b, n, &ge, &le);
            assert_near(r.p_greater, ge, 1e-12);
            assert_near(r.p_less, le, 1e-12);
        }
    }
}

/* The size of the test never exceeds its level: over all 20 splits of 3 v 3 with one tie (and
 * other small tie patterns), the share of splits with p <= alpha is at most alpha, at the
 * main command's first-look level 0.0414 and at 0.05 and 0.1. The normal approximation used
 * before put the split with U = 9 at p = 0.0383 < 0.0414: 1 in 20 = 0.05. Counted here by
 * enumeration, the same as brute_tied. */
static void test_stats__mwu_ties_keep_size_within_level(void **state)
{
    (void)state;
    const double pools[][6] = {{1, 2, 3, 3, 4, 5},
                               {1, 1, 2, 3, 4, 5},
                               {1, 2, 3, 4, 5, 5},
                               {1, 1, 2, 2, 3, 3},
                               {1, 2, 2, 2, 3, 4}};
    const double alphas[] = {0.0414, 0.05, 0.1};
    for (size_t c = 0; c < sizeof(pools) / sizeof(pools[0]); c++) {
        for (size_t a = 0; a < sizeof(alphas) / sizeof(alphas[0]); a++) {
            size_t rejects = 0, total = 0;
            for (uint32_t mask = 0; mask < 64; mask++) {
                if (__builtin_popcount(mask) != 3)
                    continue;
                double x[3], y[3];
                size_t i = 0, j = 0;
                for (size_t k = 0; k < 6; k++) {
                    if (mask & (1u << k))
                        x[i++] = pools[c][k];
                    else
                        y[j++] = pools[c][k];
                }
                struct cg_mwu r;
                assert_int_equal(cg_stats_mwu(x, 3, y, 3, &r), 0);
                rejects += r.p_greater <= alphas[a];
                total++;
            }
            if ((double)rejects > alphas[a] * (double)total)
                fail_msg("pool %zu, alpha %g: %zu of %zu splits reject", c, alphas[a], rejects,
                         total);
        }
    }
}

/* True when some y_j - x_i is exactly 0: the one case where the interval's end can sit at 0
 * whichever way the test at 0 decides (that shift is on the boundary of the rejection set). */
static bool has_zero_difference(const double *x, size_t m, const double *y, size_t n)
{
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++)
            if (y[j] == x[i])
                return true;
    return false;
}

/* The interval and the test agree: p_greater <= alpha exactly when the low end is above 0,
 * p_less <= alpha exactly when the high end is below 0, and a significant p never comes with
 * an infinite end. */
static void check_interval_agrees(const double *x, size_t m, const double *y, size_t n,
                                  double alpha)
{
    struct cg_mwu r;
    struct cg_shift s;
    assert_int_equal(cg_stats_mwu(x, m, y, n, &r), 0);
    assert_int_equal(cg_stats_hl_shift(x, m, y, n, alpha, &s), 0);
    bool zero = has_zero_difference(x, m, y, n);
    bool fail = r.p_greater <= alpha, better = r.p_less <= alpha;
    if (fail != (s.low > 0.0) && !(zero && s.low == 0.0))
        fail_msg("%zu v %zu, alpha %g: p_greater %.6g but low %.6g", m, n, alpha, r.p_greater,
                 s.low);
    if (better != (s.high < 0.0) && !(zero && s.high == 0.0))
        fail_msg("%zu v %zu, alpha %g: p_less %.6g but high %.6g", m, n, alpha, r.p_less, s.high);
    if (fail)
        assert_true(isfinite(s.low));
    if (better)
        assert_true(isfinite(s.high));
    assert_true(s.low <= s.estimate && s.estimate <= s.high);
}

/* The interval inverts the test the p-value uses, in every branch. 75 v 15 (normal
 * approximation, continuity correction) with U = 715: x = 1..75, y = c + 0.5 for counts c of
 * x below each y. R 4.2.2: wilcox.test(y, x, alternative = "greater", conf.int = TRUE,
 * exact = FALSE, correct = TRUE, conf.level = 0.95) gives p = 0.04991521488155401 and a low end
 * of 0.49994 (uniroot's tolerance around the difference 0.5); alternative = "less" at
 * conf.level 0.975 gives a high end of 24.50005 (difference 24.5), and "greater" at 0.975 a low
 * end of -2.49994 (-2.5). The Moses interval without the continuity correction started at -0.5
 * (-0.19% in the data) while p said FAIL. 20, 20, 21 against 23, 24, 25 (exact
 * conditional, p = 0.05 as above): at alpha 0.05 the test rejects only at U = 9, so the low
 * end is the smallest difference, 23 - 21 = 2, and the high end the largest, 25 - 20 = 5
 * (counted by hand); before, p = 0.038 came with an infinite interval. Then seeded samples, with
 * and without ties, small (exact) and large (normal), at several levels. */
static void test_stats__interval_inverts_the_test(void **state)
{
    (void)state;
    double x[75], y[15];
    const int counts[15] = {75, 75, 75, 70, 65, 60, 55, 50, 45, 40, 35, 30, 20, 15, 5};
    for (int i = 0; i < 75; i++)
        x[i] = i + 1;
    for (int j = 0; j < 15; j++)
        y[j] = counts[j] + 0.5;
    struct cg_mwu r;
    struct cg_shift s;
    assert_int_equal(cg_stats_mwu(x, 75, y, 15, &r), 0);
    assert_near(r.u, 715.0, 0);
    assert_int_equal(r.exact, 0);
    assert_rel(r.p_greater, 0.04991521488155401, 1e-9);
    assert_int_equal(cg_stats_hl_shift(x, 75, y, 15, 0.05, &s), 0);
    assert_near(s.low, 0.49994076309175134, 1e-3);
    assert_near(s.low, 0.5, 0);
    assert_int_equal(cg_stats_hl_shift(x, 75, y, 15, 0.025, &s), 0);
    assert_near(s.low, -2.5, 0);
    assert_near(s.high, 24.5, 0);
    double a[] = {20, 20, 21}, b[] = {23, 24, 25};
    assert_int_equal(cg_stats_hl_shift(a, 3, b, 3, 0.05, &s), 0);
    assert_near(s.low, 2.0, 0);
    assert_near(s.high, 5.0, 0);
    check_interval_agrees(a, 3, b, 3, 0.05);
    check_interval_agrees(x, 75, y, 15, 0.05);
    uint64_t rng = 23;
    const size_t sizes[][2] = {{3, 3},   {4, 6},   {5, 5},   {8, 7},  {15, 15},
                               {30, 15}, {60, 20}, {75, 15}, {75, 30}};
    const double alphas[] = {0.0086, 0.025, 0.0414, 0.05, 0.1};
    double xs[75], ys[75];
    for (size_t c = 0; c < sizeof(sizes) / sizeof(sizes[0]); c++) {
        for (int rep = 0; rep < 24; rep++) {
            size_t m = sizes[c][0], n = sizes[c][1];
            uint64_t levels = rep % 2 ? 20 : 1000000; /* odd reps: many ties */
            for (size_t i = 0; i < m; i++)
                xs[i] = (double)(cg_stats_rand(&rng) % levels);
            for (size_t j = 0; j < n; j++)
                ys[j] = (double)(cg_stats_rand(&rng) % levels) +
                        (double)levels * 0.04 * (double)(rep / 2 % 6);
            for (size_t k = 0; k < sizeof(alphas) / sizeof(alphas[0]); k++)
                check_interval_agrees(xs, m, ys, n, alphas[k]);
        }
    }
}

static void test_stats__hodges_lehmann_and_moses_interval(void **state)
{
    (void)state;
    /* x = {1,2,3}, y = {2.5,4,6}, no ties: differences y - x are 1.5,3,5,0.5,2,4,-0.5,1,3,
     * sorted -0.5,0.5,1,1.5,2,3,3,4,5: median 2. With alpha 0.05, P(U <= 0) = 1/20 <= 0.05 <
     * P(U <= 1) = 2/20, so the interval runs from the 1st to the 9th difference: [-0.5, 5]. */
    double x[] = {1, 2, 3}, y[] = {2.5, 4, 6};
    struct cg_shift s;
    assert_int_equal(cg_stats_hl_shift(x, 3, y, 3, 0.05, &s), 0);
    assert_float_equal(s.estimate, 2.0, 1e-12);
    assert_float_equal(s.low, -0.5, 1e-12);
    assert_float_equal(s.high, 5.0, 1e-12);
    /* With alpha 0.01 no rank is attainable for 3 v 3: the interval is unbounded. */
    assert_int_equal(cg_stats_hl_shift(x, 3, y, 3, 0.01, &s), 0);
    assert_true(isinf(s.low) && s.low < 0 && isinf(s.high) && s.high > 0);
    /* y = {2,4,6} ties x's 2: the test uses the distribution conditional on that tie, where
     * U = 9 (1 split in 20) is the only value with P(U >= u) <= 0.05 and U <= 1 (U = 0, 1 split)
     * the only ones with P(U <= u) <= 0.05. Differences -1,0,1,1,2,3,3,4,5: shifts below 0
     * leave U >= 8 (rejected), shift 0 gives U = 7.5 (kept): low end 0; shifts above 4 leave
     * U <= 1 (rejected), shift 4 gives 1.5: high end 4 (counted by hand). */
    double y2[] = {2, 4, 6};
    assert_int_equal(cg_stats_hl_shift(x, 3, y2, 3, 0.05, &s), 0);
    assert_float_equal(s.estimate, 2.0, 1e-12);
    assert_float_equal(s.low, 0.0, 0);
    assert_float_equal(s.high, 4.0, 0);
}

static void test_stats__benjamini_hochberg(void **state)
{
    (void)state;
    /* Sorted p: .005 .01 .03 .04 -> p*4/rank: .02 .02 .04 .04 -> running minimum from the top
     * keeps them. NAN stays NAN and does not count towards n. */
    double p[] = {0.01, 0.04, NAN, 0.03, 0.005}, q[5];
    assert_int_equal(cg_stats_bh_adjust(p, 5, q), 0);
    assert_float_equal(q[0], 0.02, 1e-12);
    assert_float_equal(q[1], 0.04, 1e-12);
    assert_true(isnan(q[2]));
    assert_float_equal(q[3], 0.04, 1e-12);
    assert_float_equal(q[4], 0.02, 1e-12);
}

static void make_series(double *v, size_t n, double scale, uint64_t seed)
{
    /* An AR(1)-like series around 100 so blocks matter. */
    double e = 0;
    for (size_t i = 0; i < n; i++) {
        e = 0.6 * e + (double)(cg_stats_rand(&seed) % 1000) / 1000.0 - 0.5;
        v[i] = scale * (100.0 + 5.0 * e);
    }
}

static void test_stats__block_bootstrap_detects_scaled_series(void **state)
{
    (void)state;
    enum { N = 60 };
    double a[N], b[N], c[N];
    make_series(a, N, 1.0, 1);
    make_series(b, N, 1.2, 2);
    make_series(c, N, 1.0, 3);
    const double *av[] = {a}, *bv[] = {b}, *cv[] = {c};
    size_t len[] = {N};
    struct cg_boot_side x = {av, NULL, len, 1}, y = {bv, NULL, len, 1}, z = {cv, NULL, len, 1};
    struct cg_boot_result r1, r2, r3;
    assert_int_equal(cg_stats_block_bootstrap(&x, &y, CG_BOOT_MEAN, 2000, 0.05, 9, &r1), 0);
    assert_int_equal(cg_stats_block_bootstrap(&x, &y, CG_BOOT_MEAN, 2000, 0.05, 9, &r2), 0);
    assert_float_equal(r1.low, r2.low, 0); /* same seed, same answer */
    assert_int_equal(r1.block_len, 8);     /* ceil(sqrt(60)) */
    assert_true(r1.ratio > 1.15 && r1.ratio < 1.25);
    assert_true(r1.low < r1.ratio && r1.ratio < r1.high);
    assert_true(r1.p_greater < 0.01);
    assert_int_equal(cg_stats_block_bootstrap(&x, &z, CG_BOOT_MEAN, 2000, 0.05, 9, &r3), 0);
    assert_true(r3.low < 1.0 && r3.high > 1.0);
    assert_true(r3.p_greater > 0.05);
}

static void test_stats__block_bootstrap_rate_uses_weights(void **state)
{
    (void)state;
    double t[] = {10, 10, 10, 10}, w1[] = {100, 100, 100, 100}, w2[] = {50, 50, 50, 50};
    const double *tv[] = {t}, *wv1[] = {w1}, *wv2[] = {w2};
    size_t len[] = {4};
    struct cg_boot_side x = {tv, wv1, len, 1}, y = {tv, wv2, len, 1};
    struct cg_boot_result r;
    assert_int_equal(cg_stats_block_bootstrap(&x, &y, CG_BOOT_RATE, 200, 0.05, 1, &r), 0);
    assert_float_equal(r.ratio, 0.5, 1e-12); /* half the tokens in the same time */
}

/* Splits for permutation tests: every split exactly once when there are at most the limit
 * (C(6, 2) = 15: checked against all 2^6 labelings with two zeros), else `limit` drawn splits
 * of the right sizes, the same ones for the same seed. */
static void test_stats__splits_every_or_drawn(void **state)
{
    (void)state;
    size_t idx[32];
    unsigned char cur[32];
    struct cg_splits s;
    assert_int_equal(cg_stats_splits_init(&s, idx, 6, 2, 15, 1), 0);
    assert_true(s.all);
    assert_int_equal(s.count, 15);
    bool seen[64] = {false};
    size_t n = 0;
    while (cg_stats_splits_next(&s, cur)) {
        unsigned mask = 0, zeros = 0;
        for (unsigned i = 0; i < 6; i++) {
            mask |= (unsigned)cur[i] << i;
            zeros += cur[i] == 0;
        }
        assert_int_equal(zeros, 2);
        assert_false(seen[mask]);
        seen[mask] = true;
        n++;
    }
    assert_int_equal(n, 15);
    assert_int_equal(cg_stats_splits_init(&s, idx, 6, 2, 14, 1), 0); /* one fewer: drawn */
    assert_false(s.all);
    unsigned char first[100][32];
    assert_int_equal(cg_stats_splits_init(&s, idx, 30, 15, 100, 7), 0);
    for (n = 0; cg_stats_splits_next(&s, cur); n++) {
        size_t zeros = 0;
        for (size_t i = 0; i < 30; i++)
            zeros += cur[i] == 0;
        assert_int_equal(zeros, 15);
        memcpy(first[n], cur, 30);
    }
    assert_int_equal(n, 100);
    assert_int_equal(cg_stats_splits_init(&s, idx, 30, 15, 100, 7), 0);
    for (n = 0; cg_stats_splits_next(&s, cur); n++)
        assert_memory_equal(first[n], cur, 30);
    assert_int_equal(cg_stats_splits_init(&s, idx, 3, 4, 100, 7), -1); /* nb > n */
}

/* Fisher's exact test, one-sided (the current side's share higher), against the hypergeometric
 * tail summed in exact rationals (Python's fractions.Fraction and math.comb: for x from b up,
 * C(n, x) C(m, a + b - x) / C(m + n, a + b)). */
static void test_stats__fisher_exact_greater(void **state)
{
    (void)state;
    const struct {
        size_t a, m, b, n;
        double p;
    } cases[] = {
        {2, 15, 9, 15, 0.01046976511744128},  {0, 15, 15, 15, 6.44672503789385e-09},
        {3, 15, 3, 15, 0.6743295019157088},   {5, 75, 8, 15, 7.140996840081122e-05},
        {7, 7, 0, 3, 1.0},                    {0, 3, 3, 3, 0.05},
        {10, 30, 20, 30, 0.009691594130894984},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        double p = cg_stats_fisher_greater(cases[i].a, cases[i].m, cases[i].b, cases[i].n);
        if (fabs(p - cases[i].p) > 1e-9 * fmax(cases[i].p, 1e-300) + 1e-15)
            fail_msg("case %zu: %.17g, want %.17g", i, p, cases[i].p);
    }
    assert_true(isnan(cg_stats_fisher_greater(4, 3, 0, 3)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stats__quantile_type7),
        cmocka_unit_test(test_stats__sorted_median_rounds_once),
        cmocka_unit_test(test_stats__floor_is_the_median_within_the_window),
        cmocka_unit_test(test_stats__tails_and_critical_values),
        cmocka_unit_test(test_stats__welford_is_stable_with_large_offset),
        cmocka_unit_test(test_stats__normal_tail_values),
        cmocka_unit_test(test_stats__mwu_complete_separation_3v3),
        cmocka_unit_test(test_stats__mwu_exact_matches_enumeration),
        cmocka_unit_test(test_stats__mwu_normal_approximation_matches_permutation),
        cmocka_unit_test(test_stats__mwu_exact_upper_tail_never_cancels),
        cmocka_unit_test(test_stats__mwu_exact_matches_r_at_large_sizes),
        cmocka_unit_test(test_stats__mwu_ties_use_exact_conditional_distribution),
        cmocka_unit_test(test_stats__mwu_ties_keep_size_within_level),
        cmocka_unit_test(test_stats__interval_inverts_the_test),
        cmocka_unit_test(test_stats__hodges_lehmann_and_moses_interval),
        cmocka_unit_test(test_stats__benjamini_hochberg),
        cmocka_unit_test(test_stats__block_bootstrap_detects_scaled_series),
        cmocka_unit_test(test_stats__block_bootstrap_rate_uses_weights),
        cmocka_unit_test(test_stats__splits_every_or_drawn),
        cmocka_unit_test(test_stats__fisher_exact_greater),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
