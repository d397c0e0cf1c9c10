/*
 * test_changepoint: change points in seeded series whose changes are known (the series are made
 * here, step by step, so where the changes are is not taken from the code under test), a split
 * worked by hand, the false-positive rate of the permutation test against binomial bounds, and
 * what the detector reports for drift. The energy statistic and best split of many random series
 * are checked against the definition by tests/python/test_changepoint_reference.py (ctest
 * test_python__changepoint_reference, through tests/gate/changepoint_harness.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "changepoint.h"
#include "err.h"
#include "stats.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define MAX_N 512
#define CAP 32

#define assert_near(got, want, eps) assert_near_at((got), (want), (eps), __FILE__, __LINE__)

static void assert_near_at(double got, double want, double eps, const char *file, int line)
{
    if (!(fabs(got - want) <= eps))
        fail_msg("%s:%d: %.17g is not %.17g within %g", file, line, got, want, eps);
}

/* A standard normal value (Box-Muller) from a splitmix state. */
static double gauss(uint64_t *st)
{
    double u = ((double)(cg_stats_rand(st) >> 11) + 0.5) / 9007199254740992.0;
    double v = (double)(cg_stats_rand(st) >> 11) / 9007199254740992.0;
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* x[i] = 100 * level(i) * (1 + sd * noise): level 1 before steps[0], then multiplied by
 * (1 + pct[k] / 100) from index steps[k] on. */
static void make_series(double *x, size_t n, const size_t *steps, const double *pct, size_t k,
                        double sd, uint64_t seed)
{
    uint64_t st = seed;
    for (size_t i = 0; i < n; i++) {
        double level = 1.0;
        for (size_t j = 0; j < k; j++)
            level *= i >= steps[j] ? 1.0 + pct[j] / 100.0 : 1.0;
        x[i] = 100.0 * level * (1.0 + sd * gauss(&st));
    }
}

static size_t detect(const double *x, size_t n, const struct cg_cp_options *o,
                     struct cg_changepoint *cp)
{
    size_t got = 99;
    assert_int_equal(cg_cp_detect(x, n, o, cp, CAP, &got), 0);
    assert_true(got <= CAP);
    return got;
}

static void test_changepoint__split_worked_by_hand(void **state)
{
    (void)state;
    /* x = 1 3 3 5 2 2, min_segment 2. tau = 2: left {1,3}, right {3,5,2,2}; between-pair sum
     * 2+4+1+1+0+2+1+1 = 12, within left 2, within right 2+1+1+3+3+0 = 10;
     * Q = (2*4/6) * (2*12/(2*4) - 2/1 - 10/6) = -8/9. tau = 3: 14, 4, 6: Q = -1/3. tau = 4:
     * {1,3,3,5} v {2,2}: 12, 12, 0: Q = (8/6) * (24/8 - 12/6 - 0) = 4/3, the best. */
    double x[] = {1, 3, 3, 5, 2, 2}, q[6];
    size_t best = 0;
    assert_int_equal(cg_cp_scan(x, 6, 2, q, &best), 0);
    assert_true(isnan(q[0]) && isnan(q[1]) && isnan(q[5]));
    assert_near(q[2], -8.0 / 9.0, 1e-12);
    assert_near(q[3], -1.0 / 3.0, 1e-12);
    assert_near(q[4], 4.0 / 3.0, 1e-12);
    assert_int_equal(best, 4);
    double bad[] = {1, 2, NAN, 4};
    assert_int_equal(cg_cp_scan(bad, 4, 2, q, &best), CG_EINPUT);
    assert_int_equal(cg_cp_scan(x, 6, 1, q, &best), CG_EINPUT);
}

static void test_changepoint__single_step_found_at_its_index(void **state)
{
    (void)state;
    double x[MAX_N];
    struct cg_changepoint cp[CAP];
    /* +5% at 60 of 120, noise sd 1%: a shift of five noise sd. Five seeds. */
    for (uint64_t seed = 1; seed <= 5; seed++) {
        size_t at = 60;
        double pct = 5.0;
        make_series(x, 120, &at, &pct, 1, 0.01, seed);
        size_t got = detect(x, 120, NULL, cp);
        assert_int_equal(got, 1);
        assert_true(cp[0].index >= 59 && cp[0].index <= 61);
        assert_near(cp[0].p_value, 1.0 / 200.0, 1e-15); /* no permutation reached it */
        assert_near(cp[0].shift_pct, 5.0, 1.0);
        assert_near(cp[0].before, 100.0, 1.0);
        assert_int_equal(cp[0].segment_start, 0);
        assert_int_equal(cp[0].segment_end, 120);
    }
}

static void test_changepoint__two_steps_found(void **state)
{
    (void)state;
    double x[MAX_N];
    struct cg_changepoint cp[CAP];
    size_t at[] = {50, 110};
    double pct[] = {4.0, -6.0};
    for (uint64_t seed = 10; seed < 15; seed++) {
        make_series(x, 160, at, pct, 2, 0.01, seed);
        size_t got = detect(x, 160, NULL, cp);
        assert_int_equal(got, 2);
        assert_true(cp[0].index >= 49 && cp[0].index <= 51);
        assert_true(cp[1].index >= 109 && cp[1].index <= 111);
        assert_true(cp[0].p_value <= 0.01 && cp[1].p_value <= 0.01);
        assert_near(cp[0].shift_pct, 4.0, 1.0);
        /* The second change's "before" is the middle segment: 104, then 104 * 0.94. */
        assert_near(cp[1].before, 104.0, 1.0);
        assert_near(cp[1].shift_pct, -6.0, 1.0);
        /* Each side of a change is bounded by the neighbouring change: the medians chain. */
        assert_true(cp[0].after == cp[1].before);
    }
}

/* Series of pure noise (normal, or exponential: skewed as step times are) with no point found,
 * out of `series` seeded ones of n values, at level alpha. */
static size_t noise_series_with_points(size_t series, size_t n, double alpha, bool skewed)
{
    double x[MAX_N];
    struct cg_changepoint cp[CAP];
    struct cg_cp_options o;
    cg_cp_defaults(&o);
    o.alpha = alpha;
    size_t with = 0;
    for (uint64_t s = 0; s < series; s++) {
        uint64_t st = 1000 + s;
        for (size_t i = 0; i < n; i++) {
            double u = ((double)(cg_stats_rand(&st) >> 11) + 0.5) / 9007199254740992.0;
            x[i] = skewed ? 100.0 - 5.0 * log(u) : 100.0 + gauss(&st);
        }
        with += detect(x, n, &o, cp) > 0;
    }
    return with;
}

static void test_changepoint__noise_false_positive_rate_within_binomial_bounds(void **state)
{
    (void)state;
    /* Without a change the values are exchangeable, and the first test (of the whole series)
     * rejects with probability exactly (floor(alpha * 200)) / 200 with 199 permutations of
     * continuous values: 0.01 at alpha 0.01, 0.1 at 0.1. A series has a point only when that
     * test rejects, so the series with points out of 200 are Binomial(200, 0.01) and (200, 0.1).
     * Bounds: P(X >= 8 | 200, 0.01) = 0.0010, P(X <= 7 or X >= 34 | 200, 0.1) = 0.0020 (R:
     * 1 - pbinom(7, 200, .01), pbinom(7, 200, .1) + 1 - pbinom(33, 200, .1)). The lower bound at
     * 0.1 catches a test that never rejects. */
    size_t normal = noise_series_with_points(200, 80, 0.01, false);
    size_t skewed = noise_series_with_points(200, 80, 0.01, true);
    assert_true(normal <= 7);
    assert_true(skewed <= 7);
    size_t loose = noise_series_with_points(200, 80, 0.1, false);
    assert_true(loose >= 8 && loose <= 33);
}

static void test_changepoint__min_segment_respected(void **state)
{
    (void)state;
    double x[MAX_N];
    struct cg_changepoint cp[CAP];
    struct cg_cp_options o;
    cg_cp_defaults(&o);
    /* +20% at 3 and back at 197 of 200, noise 0.5%: both changes sit 3 values from an end.
     * (In fewer values a permutation puts two of the six low values at an end too often for
     * p <= 0.01.) */
    size_t at[] = {3, 197};
    double pct[] = {20.0, -1.0 / 6.0 * 100.0};
    make_series(x, 200, at, pct, 2, 0.005, 7);
    for (size_t m = 2; m <= 8; m++) {
        o.min_segment = m;
        size_t got = detect(x, 200, &o, cp);
        size_t prev = 0;
        for (size_t k = 0; k < got; k++) {
            assert_true(cp[k].index - prev >= m);
            prev = cp[k].index;
        }
        if (got > 0)
            assert_true(200 - prev >= m);
        if (m <= 3) { /* allowed: both found where they are */
            assert_int_equal(got, 2);
            assert_int_equal(cp[0].index, 3);
            assert_int_equal(cp[1].index, 197);
        }
    }
}

static void test_changepoint__same_seed_same_answer(void **state)
{
    (void)state;
    double x[MAX_N];
    struct cg_changepoint a[CAP], b[CAP];
    size_t at[] = {40, 90, 150};
    double pct[] = {3.0, 3.0, -2.0};
    make_series(x, 200, at, pct, 3, 0.01, 21);
    size_t na = detect(x, 200, NULL, a);
    size_t nb = detect(x, 200, NULL, b);
    assert_int_equal(na, 3);
    assert_int_equal(nb, na);
    for (size_t k = 0; k < na; k++) {
        assert_int_equal(a[k].index, b[k].index);
        assert_true(a[k].p_value == b[k].p_value && a[k].q == b[k].q);
        assert_true(a[k].ci_low_pct == b[k].ci_low_pct && a[k].ci_high_pct == b[k].ci_high_pct);
    }
    /* Another seed draws other permutations and resamples: the same changes, another interval. */
    struct cg_cp_options o;
    cg_cp_defaults(&o);
    o.seed = 12345;
    nb = detect(x, 200, &o, b);
    assert_int_equal(nb, na);
    bool differs = false;
    for (size_t k = 0; k < na; k++) {
        assert_int_equal(a[k].index, b[k].index);
        differs |= a[k].ci_low_pct != b[k].ci_low_pct;
    }
    assert_true(differs);
}

static void test_changepoint__constant_and_short_series_have_none(void **state)
{
    (void)state;
    double x[MAX_N];
    struct cg_changepoint cp[CAP];
    for (size_t i = 0; i < 100; i++)
        x[i] = 42.0;
    assert_int_equal(detect(x, 100, NULL, cp), 0);
    /* A step of 50% in 7 values: fewer than 2 * min_segment (8). */
    double shortx[] = {10, 10.1, 9.9, 10, 15, 15.1, 14.9};
    assert_int_equal(detect(shortx, 7, NULL, cp), 0);
    assert_int_equal(detect(NULL, 0, NULL, cp), 0);
    /* A min_segment so large that 2 * min_segment wraps around: still none. */
    struct cg_cp_options o;
    cg_cp_defaults(&o);
    o.min_segment = SIZE_MAX / 2 + 1;
    assert_int_equal(detect(x, 100, &o, cp), 0);
    /* Two constant levels: found, with p at its smallest. */
    for (size_t i = 0; i < 100; i++)
        x[i] = i < 30 ? 42.0 : 45.0;
    assert_int_equal(detect(x, 100, NULL, cp), 1);
    assert_int_equal(cp[0].index, 30);
    assert_near(cp[0].shift_pct, 3.0 / 42.0 * 100.0, 1e-12);
}

/* Every point of a is in b (same index), and one is within 1 of `at`. */
static bool subset_with(const struct cg_changepoint *a, size_t na, const struct cg_changepoint *b,
                        size_t nb, size_t at)
{
    bool near = false;
    for (size_t k = 0; k < na; k++) {
        bool in = false;
        for (size_t j = 0; j < nb; j++)
            in |= a[k].index == b[j].index;
        if (!in)
            return false;
        near |= a[k].index + 1 >= at && a[k].index <= at + 1;
    }
    return near;
}

static void test_changepoint__max_points_and_cap_keep_the_strongest(void **state)
{
    (void)state;
    double x[MAX_N];
    struct cg_changepoint all[CAP], few[CAP];
    /* Six steps; the +12% one at 200 is the strongest. */
    size_t at[] = {40, 80, 120, 160, 200, 240};
    double pct[] = {4.0, -4.0, 5.0, -5.0, 12.0, -4.0};
    make_series(x, 280, at, pct, 6, 0.01, 5);
    size_t n_all = detect(x, 280, NULL, all);
    assert_int_equal(n_all, 6);
    struct cg_cp_options o;
    cg_cp_defaults(&o);
    o.max_points = 3;
    size_t got = detect(x, 280, &o, few);
    assert_int_equal(got, 3);
    size_t two = 99;
    assert_int_equal(cg_cp_detect(x, 280, NULL, few + 3, 2, &two), 0);
    assert_int_equal(two, 2);
    /* Either way each kept point is one of the full set, and the strongest step is kept. */
    assert_true(subset_with(few, 3, all, n_all, 200));
    assert_true(subset_with(few + 3, 2, all, n_all, 200));
    o.max_points = 0;
    assert_int_equal(detect(x, 280, &o, few), 0);
}

static void test_changepoint__most_significant_split_accepted_first(void **state)
{
    (void)state;
    double x[MAX_N];
    struct cg_changepoint all[CAP], two[CAP];
    struct cg_cp_options o;
    cg_cp_defaults(&o);
    o.max_points = 2;
    /* +1% at 60, +30% at 120, +0.45% at 270 of 420, noise 1%: the first split is at 120, then
     * each half has a candidate. Seeds chosen so the halves' candidates differ as stated (the
     * premise is checked on the full answer first): seeds 2 and 6 have both at p = 1/200 and
     * the larger Q on the left, then on the right; seed 204 has the left at p = 1/200 with the
     * smaller Q, the right at p = 2/200 with the larger. */
    size_t at[] = {60, 120, 270};
    double pct[] = {1.0, 30.0, 0.45};
    const struct {
        uint64_t seed;
        size_t kept; /* 0: the left candidate, 2: the right */
    } cases[] = {{2, 0}, {6, 2}, {204, 0}};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        make_series(x, 420, at, pct, 3, 0.01, cases[c].seed);
        assert_int_equal(detect(x, 420, NULL, all), 3);
        assert_int_equal(all[1].index, 120);
        size_t k = cases[c].kept, other = 2 - k;
        if (cases[c].seed == 204)
            assert_true(all[k].p_value < all[other].p_value && all[k].q < all[other].q);
        else
            assert_true(all[k].p_value == all[other].p_value && all[k].q > all[other].q);
        assert_int_equal(detect(x, 420, &o, two), 2);
        assert_int_equal(two[k == 0 ? 0 : 1].index, all[k].index);
        assert_int_equal(two[k == 0 ? 1 : 0].index, 120);
    }
}

static void test_changepoint__interval_covers_the_true_shift(void **state)
{
    (void)state;
    double x[MAX_N];
    struct cg_changepoint cp[CAP];
    /* +4% at 100 of 200, noise sd 2%: covered in at least 85 of 100 seeded series. The
     * percentile interval of two medians of 100 values is close to its nominal 95% here (the
     * split found is the true one or next to it); 85 leaves room for that and for chance
     * (P(X <= 84 | 100, 0.95) = 4e-5, R's pbinom). */
    size_t at = 100, covered = 0;
    double pct = 4.0, lo_half = 0.0, hi_half = 0.0;
    for (uint64_t seed = 0; seed < 100; seed++) {
        make_series(x, 200, &at, &pct, 1, 0.02, 300 + seed);
        size_t got = detect(x, 200, NULL, cp), k = 0;
        assert_true(got >= 1);
        for (size_t j = 1; j < got; j++) { /* a false point in a half is possible (alpha) */
            if (labs((long)cp[j].index - 100) < labs((long)cp[k].index - 100))
                k = j;
        }
        assert_true(cp[k].ci_low_pct <= cp[k].shift_pct && cp[k].shift_pct <= cp[k].ci_high_pct);
        covered += cp[k].ci_low_pct <= pct && pct <= cp[k].ci_high_pct;
        lo_half += cp[k].shift_pct - cp[k].ci_low_pct;
        hi_half += cp[k].ci_high_pct - cp[k].shift_pct;
    }
    /* Each end's distance from the estimate against the normal approximation: a median of 100
     * normal values has a standard error of 1.2533 * sd / 10 (0.2507 before, 0.2607 after the
     * step, in percent of 100), so the shift's is sqrt(0.2607^2 + (1.04 * 0.2507)^2) = 0.369
     * and each end of a 95% interval lies 1.96 * 0.369 = 0.723 from it, on average over the
     * series. The bootstrap of a median is coarse at 100 values: +-10%. An end at 90% would be
     * 0.607 away, at 99% 0.951. */
    assert_true(lo_half / 100.0 > 0.65 && lo_half / 100.0 < 0.80);
    assert_true(hi_half / 100.0 > 0.65 && hi_half / 100.0 < 0.80);
    assert_true(covered >= 85);
}

static void test_changepoint__non_finite_values_skipped_indices_kept(void **state)
{
    (void)state;
    double x[MAX_N], holes[MAX_N];
    struct cg_changepoint a[CAP], b[CAP];
    size_t at[] = {40, 80};
    double pct[] = {5.0, -5.0};
    make_series(x, 120, at, pct, 2, 0.01, 9);
    /* The same values with NAN, inf and -inf put in between: positions 0, 10, 40 (so the
     * first change's first value moves to 41), 70 and the last. */
    size_t n = 0, put = 0;
    for (size_t i = 0; i < 120; i++) {
        if (i == 0 || i == 10 || i == 40 || i == 70) {
            holes[n++] = put % 3 == 0 ? NAN : put % 3 == 1 ? INFINITY : -INFINITY;
            put++;
        }
        holes[n++] = x[i];
    }
    holes[n++] = NAN;
    size_t na = detect(x, 120, NULL, a), nb = detect(holes, n, NULL, b);
    assert_int_equal(na, 2);
    assert_int_equal(nb, na);
    /* The finite values are the same series: the same tests, shifted indices. */
    assert_int_equal(a[0].index, 40);
    assert_int_equal(b[0].index, 43); /* x[40] sits after the holes at 0, 10 and 40 */
    assert_int_equal(a[1].index, 80);
    assert_int_equal(b[1].index, 84);
    for (size_t k = 0; k < na; k++) {
        assert_true(a[k].p_value == b[k].p_value && a[k].before == b[k].before);
        assert_true(a[k].after == b[k].after);
    }
    assert_int_equal(b[1].segment_end, n);
    /* Only holes: none. */
    for (size_t i = 0; i < 20; i++)
        holes[i] = NAN;
    assert_int_equal(detect(holes, 20, NULL, b), 0);
}

static void test_changepoint__p_counts_permutations_as_extreme_as_observed(void **state)
{
    (void)state;
    /* 0 0 0 0 1 1 1 1, min_segment 2: of the 70 arrangements of four 0s and four 1s, only
     * this one and 1 1 1 1 0 0 0 0 reach its largest Q (4; every arrangement enumerated with
     * the definition), so the exact p is 2/70. With 3,499 permutations the count of those as
     * extreme is Binomial(3499, 1/35): mean 100, sd 9.9; p = (1 + count) / 3500 lies in
     * [71, 131] / 3500 but for 0.2% of seeds (R: pbinom(69, 3499, 1/35) +
     * 1 - pbinom(130, 3499, 1/35)). A test that counted only permutations strictly
     * above the observed (which the equal sums of a reordering can miss) gives 1/3500. */
    double x[] = {0, 0, 0, 0, 1, 1, 1, 1};
    struct cg_changepoint cp[CAP];
    struct cg_cp_options o;
    cg_cp_defaults(&o);
    o.min_segment = 2;
    o.alpha = 0.5;
    o.permutations = 3499;
    assert_int_equal(detect(x, 8, &o, cp), 1);
    assert_int_equal(cp[0].index, 4);
    assert_near(cp[0].q, 4.0, 1e-12);
    assert_true(cp[0].p_value >= 71.0 / 3500.0 && cp[0].p_value <= 131.0 / 3500.0);
}

static void test_changepoint__invalid_options_rejected(void **state)
{
    (void)state;
    double x[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    struct cg_changepoint cp[CAP];
    struct cg_cp_options o;
    size_t got = 99;
    cg_cp_defaults(&o);
    o.min_segment = 1;
    assert_int_equal(cg_cp_detect(x, 10, &o, cp, CAP, &got), CG_EINPUT);
    assert_int_equal(got, 0);
    cg_cp_defaults(&o);
    o.alpha = 0;
    assert_int_equal(cg_cp_detect(x, 10, &o, cp, CAP, &got), CG_EINPUT);
    o.alpha = 1;
    assert_int_equal(cg_cp_detect(x, 10, &o, cp, CAP, &got), CG_EINPUT);
    cg_cp_defaults(&o);
    o.permutations = 0;
    assert_int_equal(cg_cp_detect(x, 10, &o, cp, CAP, &got), CG_EINPUT);
    assert_int_equal(cg_cp_detect(x, 10, NULL, NULL, 1, &got), CG_EINPUT);
    /* alpha below 1 / (1 + permutations): no p can reach it. */
    cg_cp_defaults(&o);
    o.permutations = 19;
    o.alpha = 0.04;
    double step[40];
    for (size_t i = 0; i < 40; i++)
        step[i] = i < 20 ? 1.0 + 0.01 * (double)(i % 3) : 2.0 + 0.01 * (double)(i % 3);
    assert_int_equal(detect(step, 40, &o, cp), 0);
    o.alpha = 0.05;
    assert_int_equal(detect(step, 40, &o, cp), 1);
}

/* Product of (1 + shift) over the points: the last segment's median over the first's. */
static double cumulative_pct(const struct cg_changepoint *cp, size_t n)
{
    double r = 1.0;
    for (size_t k = 0; k < n; k++)
        r *= 1.0 + cp[k].shift_pct / 100.0;
    return (r - 1.0) * 100.0;
}

static void test_changepoint__drift_in_small_steps_adds_up(void **state)
{
    (void)state;
    double x[MAX_N];
    struct cg_changepoint cp[CAP];
    /* Five +1.5% steps, 40 commits apart, noise sd 0.5%: no step would cross a per-PR
     * threshold of 3%, together they are +7.7%. */
    size_t at[] = {40, 80, 120, 160, 200};
    double pct[] = {1.5, 1.5, 1.5, 1.5, 1.5};
    double total = (pow(1.015, 5) - 1.0) * 100.0;
    for (uint64_t seed = 40; seed < 45; seed++) {
        make_series(x, 240, at, pct, 5, 0.005, seed);
        size_t got = detect(x, 240, NULL, cp);
        assert_true(got >= 3);
        for (size_t k = 0; k < got; k++)
            assert_true(cp[k].shift_pct > 0 && cp[k].shift_pct < 3.0);
        /* The medians chain, so the shifts telescope to last / first. */
        assert_near(cumulative_pct(cp, got), (cp[got - 1].after / cp[0].before - 1.0) * 100.0,
                    1e-9);
        assert_near(cumulative_pct(cp, got), total, 1.0);
    }
}

static void test_changepoint__linear_ramp_becomes_a_staircase(void **state)
{
    (void)state;
    double x[MAX_N];
    struct cg_changepoint cp[CAP];
    /* A ramp from 100 to 110 over 300 commits, noise sd 0.5%: no step at all. The method cuts
     * it into segments of about equal level, every shift upward, and the shifts add up to
     * most of the rise (the first and last segments' medians sit inside the ramp's ends). */
    for (uint64_t seed = 50; seed < 53; seed++) {
        uint64_t st = seed;
        for (size_t i = 0; i < 300; i++)
            x[i] = (100.0 + 10.0 * (double)i / 299.0) * (1.0 + 0.005 * gauss(&st));
        size_t got = detect(x, 300, NULL, cp);
        assert_true(got >= 4);
        for (size_t k = 0; k < got; k++)
            assert_true(cp[k].shift_pct > 0);
        double c = cumulative_pct(cp, got);
        assert_true(c > 7.0 && c < 10.5);
    }
}

/* Where nothing is called, the strongest split and its full p, and the best p a clean split of n
 * values can expect with 199 permutations: (1 + 199 * k / C(n, t)) / 200 at its best t (10
 * values, t = 4 or 6 of min 4: (1 + 199 / 210) / 200 = 0.009738; 8 values, t = 4 both ways:
 * (1 + 199 * 2 / 70) / 200 = 0.033929, above alpha: no split of 8 can be called). */
static void test_changepoint__a_candidate_says_why_it_was_not_called(void **state)
{
    (void)state;
    double x[10];
    for (int i = 0; i < 10; i++)
        x[i] = (i < 5 ? 27.4 : 37.7) * (1 + 0.001 * (double)(i % 3 - 1));
    struct cg_changepoint cps[4];
    size_t k = 9;
    assert_int_equal(cg_cp_detect(x, 10, NULL, cps, 4, &k), 0);
    assert_int_equal(k, 0);
    struct cg_cp_candidate c;
    assert_int_equal(cg_cp_candidate(x, 10, NULL, &c), 0);
    assert_true(c.found);
    assert_int_equal(c.values, 10);
    assert_int_equal(c.cp.index, 5);
    assert_true(fabs(c.best_p - (1 + 199.0 / 210.0) / 200.0) < 1e-12);
    assert_true(c.cp.p_value > 0.01 && c.cp.p_value < 0.05);
    assert_true(fabs(c.cp.shift_pct - (37.7 / 27.4 - 1) * 100) < 0.5);
    assert_int_equal(cg_cp_candidate(x + 1, 8, NULL, &c), 0);
    assert_true(fabs(c.best_p - (1 + 199.0 * 2 / 70.0) / 200.0) < 1e-12);
    /* too few values, or all equal: no candidate */
    assert_int_equal(cg_cp_candidate(x, 7, NULL, &c), 0);
    assert_false(c.found);
    double flat[10] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    assert_int_equal(cg_cp_candidate(flat, 10, NULL, &c), 0);
    assert_false(c.found);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_changepoint__a_candidate_says_why_it_was_not_called),
        cmocka_unit_test(test_changepoint__split_worked_by_hand),
        cmocka_unit_test(test_changepoint__single_step_found_at_its_index),
        cmocka_unit_test(test_changepoint__two_steps_found),
        cmocka_unit_test(test_changepoint__noise_false_positive_rate_within_binomial_bounds),
        cmocka_unit_test(test_changepoint__min_segment_respected),
        cmocka_unit_test(test_changepoint__same_seed_same_answer),
        cmocka_unit_test(test_changepoint__constant_and_short_series_have_none),
        cmocka_unit_test(test_changepoint__max_points_and_cap_keep_the_strongest),
        cmocka_unit_test(test_changepoint__most_significant_split_accepted_first),
        cmocka_unit_test(test_changepoint__interval_covers_the_true_shift),
        cmocka_unit_test(test_changepoint__non_finite_values_skipped_indices_kept),
        cmocka_unit_test(test_changepoint__p_counts_permutations_as_extreme_as_observed),
        cmocka_unit_test(test_changepoint__invalid_options_rejected),
        cmocka_unit_test(test_changepoint__drift_in_small_steps_adds_up),
        cmocka_unit_test(test_changepoint__linear_ramp_becomes_a_staircase),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
