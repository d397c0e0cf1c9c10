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

static void test_stats__hodges_lehmann_and_moses_interval(void **state)
{
    (void)state;
    /* x = {1,2,3}, y = {2,4,6}: differences y - x are 1,3,5,0,2,4,-1,1,3, sorted
     * -1,0,1,1,2,3,3,4,5: median 2. With alpha 0.05, P(U <= 0) = 1/20 <= 0.05 < P(U <= 1) =
     * 2/20, so the interval runs from the 1st to the 9th difference: [-1, 5]. */
    double x[] = {1, 2, 3}, y[] = {2, 4, 6};
    struct cg_shift s;
    assert_int_equal(cg_stats_hl_shift(x, 3, y, 3, 0.05, &s), 0);
    assert_float_equal(s.estimate, 2.0, 1e-12);
    assert_float_equal(s.low, -1.0, 1e-12);
    assert_float_equal(s.high, 5.0, 1e-12);
    /* With alpha 0.01 no rank is attainable for 3 v 3: the interval is unbounded. */
    assert_int_equal(cg_stats_hl_shift(x, 3, y, 3, 0.01, &s), 0);
    assert_true(isinf(s.low) && s.low < 0 && isinf(s.high) && s.high > 0);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stats__quantile_type7),
        cmocka_unit_test(test_stats__welford_is_stable_with_large_offset),
        cmocka_unit_test(test_stats__normal_tail_values),
        cmocka_unit_test(test_stats__mwu_complete_separation_3v3),
        cmocka_unit_test(test_stats__mwu_exact_matches_enumeration),
        cmocka_unit_test(test_stats__mwu_normal_approximation_matches_permutation),
        cmocka_unit_test(test_stats__hodges_lehmann_and_moses_interval),
        cmocka_unit_test(test_stats__benjamini_hochberg),
        cmocka_unit_test(test_stats__block_bootstrap_detects_scaled_series),
        cmocka_unit_test(test_stats__block_bootstrap_rate_uses_weights),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
