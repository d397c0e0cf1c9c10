/*
 * test_paired: the paired statistics against values obtained independently of the code under
 * test: small cases worked by hand (written out in each test), brute-force enumeration of all
 * 2^n sign assignments for the exact signed-rank distribution, a hand-computed normal
 * approximation with tied ranks, direct enumeration of the Walsh averages for Hodges-Lehmann, and
 * the paired verdict on fixture artifacts whose pairs share a run-to-run offset.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fixtures.h"
#include "paired.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* cmocka's assert_float_equal compares in float precision; the values here need doubles. */
#define assert_near(got, want, eps) assert_near_at((got), (want), (eps), __FILE__, __LINE__)
#define assert_rel(got, want, rel)                                                                 \
    assert_near_at((got), (want), fabs(want) * (rel), __FILE__, __LINE__)

static void assert_near_at(double got, double want, double eps, const char *file, int line)
{
    if (!(fabs(got - want) <= eps))
        fail_msg("%s:%d: %.17g is not %.17g within %g", file, line, got, want, eps);
}

/* P(W+ >= w) for n untied ranks by enumerating every sign assignment. */
static double brute_p_greater(size_t n, double w)
{
    size_t hits = 0, total = (size_t)1 << n;
    for (size_t mask = 0; mask < total; mask++) {
        double s = 0.0;
        for (size_t i = 0; i < n; i++)
            s += (mask >> i) & 1 ? (double)(i + 1) : 0.0;
        hits += s >= w;
    }
    return (double)hits / (double)total;
}

static void test_paired__all_positive_5_is_one_in_32(void **state)
{
    (void)state;
    /* Every sign positive: W+ = 1+2+3+4+5 = 15, reached by one of 2^5 sign patterns. */
    double d[] = {0.5, 0.1, 0.4, 0.2, 0.3};
    struct cg_wsr w;
    assert_int_equal(cg_paired_signed_rank(d, 5, &w), 0);
    assert_near(w.w_plus, 15.0, 0);
    assert_int_equal(w.n, 5);
    assert_int_equal(w.exact, 1);
    assert_near(w.p_greater, 1.0 / 32.0, 1e-15);
    assert_near(w.p_less, 1.0, 1e-15);
}

static void test_paired__one_negative_smallest(void **state)
{
    (void)state;
    /* Ranks 1..5, the smallest negative: W+ = 14. W+ >= 14 for {2,3,4,5} and {1,2,3,4,5}:
     * 2/32; W+ <= 14 for all but the full set: 31/32. */
    double d[] = {-1, 2, 3, 4, 5};
    struct cg_wsr w;
    assert_int_equal(cg_paired_signed_rank(d, 5, &w), 0);
    assert_near(w.w_plus, 14.0, 0);
    assert_near(w.p_greater, 2.0 / 32.0, 1e-15);
    assert_near(w.p_less, 31.0 / 32.0, 1e-15);
}

static void test_paired__zeros_are_ranked_then_left_out(void **state)
{
    (void)state;
    /* Pratt's convention, the one the Walsh averages imply: zeros take the lowest ranks and
     * carry no sign. {0, 0.2, 0, 0.1, 0.3}: ranks 1.5, 4, 1.5, 3, 5; W+ = 12 of the non-zero
     * scores 3, 4, 5: all positive, p = 1/8. */
    double d[] = {0, 0.2, 0, 0.1, 0.3};
    struct cg_wsr w;
    assert_int_equal(cg_paired_signed_rank(d, 5, &w), 0);
    assert_int_equal(w.n, 3);
    assert_near(w.w_plus, 12.0, 0);
    assert_near(w.p_greater, 1.0 / 8.0, 1e-15);
    /* d = c(0, 0.1, -0.2, 0.3, 0.4, 0, 0.4, 0.5). References: R 4.2.2 with coin 1.4-2,
     * pvalue(wilcoxsign_test(d ~ rep(0, 8), distribution = "exact", zero.method = "Pratt",
     * alternative = "greater")) = 0.046875 and "less" 0.96875; the same from scipy 1.10.1,
     * permutation_test((d,), s, permutation_type = "samples", n_resamples = inf) with s the sum
     * of rankdata(abs(d)) over d > 0. */
    double e[] = {0, 0.1, -0.2, 0.3, 0.4, 0, 0.4, 0.5};
    assert_int_equal(cg_paired_signed_rank(e, 8, &w), 0);
    assert_int_equal(w.exact, 1);
    assert_near(w.p_greater, 0.046875, 1e-15);
    assert_near(w.p_less, 0.96875, 1e-15);
    double zeros[] = {0, 0, 0};
    assert_int_equal(cg_paired_signed_rank(zeros, 3, &w), 0);
    assert_int_equal(w.n, 0);
    assert_near(w.p_greater, 1.0, 0);
    assert_near(w.p_less, 1.0, 0);
    assert_int_equal(cg_paired_signed_rank(d, 0, &w), -1);
}

static void test_paired__exact_matches_enumeration(void **state)
{
    (void)state;
    /* Seeded untied differences, n = 4..14: p from the generating function equals the share of
     * the 2^n sign patterns at or beyond the observed W+. */
    uint64_t rng = 7;
    for (size_t n = 4; n <= 14; n++) {
        double d[14];
        for (size_t i = 0; i < n; i++) {
            double mag = (double)(i + 1) + (double)(cg_stats_rand(&rng) % 1000) / 2000.0;
            d[i] = cg_stats_rand(&rng) % 3 == 0 ? -mag : mag;
        }
        struct cg_wsr w;
        assert_int_equal(cg_paired_signed_rank(d, n, &w), 0);
        assert_int_equal(w.exact, 1);
        double top = (double)(n * (n + 1) / 2);
        assert_near(w.p_greater, brute_p_greater(n, w.w_plus), 1e-12);
        /* P(W+ <= w) = P(W+ >= top - w) by symmetry. */
        assert_near(w.p_less, brute_p_greater(n, top - w.w_plus), 1e-12);
    }
}

static void test_paired__cdf_table_value(void **state)
{
    (void)state;
    /* Tables: n = 10, P(W+ <= 8) = 25/1024 = 0.0244 (the two-sided 5% critical value). */
    assert_near(cg_paired_wsr_cdf(10, 8), 25.0 / 1024.0, 1e-15);
    assert_near(cg_paired_wsr_cdf(5, 15), 1.0, 1e-15);
    assert_true(isnan(cg_paired_wsr_cdf(0, 1)));
    assert_true(isnan(cg_paired_wsr_cdf(CG_WSR_EXACT_MAX + 1, 1)));
}

/* P(W+ >= w) and P(W+ <= w) with midranks over all |d| (zeros included, Pratt) by enumerating
 * every sign assignment of the non-zero differences: the exact conditional distribution. */
static void brute_tied(const double *d, size_t n, double *ge, double *le)
{
    double rank[20], w = 0.0;
    for (size_t i = 0; i < n; i++) {
        double below = 0, same = 0;
        for (size_t j = 0; j < n; j++) {
            below += fabs(d[j]) < fabs(d[i]);
            same += fabs(d[j]) == fabs(d[i]);
        }
        rank[i] = below + (same + 1.0) / 2.0;
        w += d[i] > 0 ? rank[i] : 0.0;
    }
    size_t hi = 0, lo = 0, total = (size_t)1 << n;
    for (size_t mask = 0; mask < total; mask++) {
        double s = 0.0;
        bool skip = false;
        for (size_t i = 0; i < n; i++) {
            if ((mask >> i) & 1) {
                if (d[i] == 0.0)
                    skip = true; /* a zero has no sign to flip: count each pattern once */
                s += rank[i];
            }
        }
        if (skip)
            continue;
        hi += s >= w;
        lo += s <= w;
    }
    size_t nonzero = 0;
    for (size_t i = 0; i < n; i++)
        nonzero += d[i] != 0.0;
    *ge = (double)hi / ldexp(1.0, (int)nonzero);
    *le = (double)lo / ldexp(1.0, (int)nonzero);
}

static void test_paired__ties_use_exact_conditional_distribution(void **state)
{
    (void)state;
    /* Four pairs of +0.1: midranks 2.5 each, W+ = 10 only when all four are positive: 1/16.
     * The normal approximation gave 0.036. References: coin 1.4-2, pvalue(wilcoxsign_test(
     * d ~ rep(0, 4), distribution = "exact", zero.method = "Pratt", alternative = "greater"))
     * = 0.0625; for d = c(1, -1, 2, 2, 3, 3, 3, 4) the same call gives 0.01171875 ("greater")
     * and 0.99609375 ("less"), as does scipy's exhaustive permutation_test (see above). */
    double four[] = {0.1, 0.1, 0.1, 0.1};
    struct cg_wsr w;
    assert_int_equal(cg_paired_signed_rank(four, 4, &w), 0);
    assert_int_equal(w.exact, 1);
    assert_near(w.w_plus, 10.0, 0);
    assert_near(w.p_greater, 0.0625, 1e-15);
    double d[] = {1, -1, 2, 2, 3, 3, 3, 4};
    assert_int_equal(cg_paired_signed_rank(d, 8, &w), 0);
    assert_int_equal(w.exact, 1);
    assert_near(w.w_plus, 34.5, 0);
    assert_near(w.p_greater, 0.01171875, 1e-15);
    assert_near(w.p_less, 0.99609375, 1e-15);
    /* seeded differences with many ties and zeros, n = 3..16, against enumeration */
    uint64_t rng = 3;
    for (size_t n = 3; n <= 16; n++) {
        for (int rep = 0; rep < 4; rep++) {
            double e[16], ge, le;
            for (size_t i = 0; i < n; i++)
                e[i] = (double)((int)(cg_stats_rand(&rng) % 7) - 2 + rep % 2);
            assert_int_equal(cg_paired_signed_rank(e, n, &w), 0);
            brute_tied(e, n, &ge, &le);
            assert_near(w.p_greater, ge, 1e-12);
            assert_near(w.p_less, le, 1e-12);
        }
    }
}

/* More than CG_WSR_EXACT_MAX differences: the normal approximation with midranks, tie and
 * continuity correction. d_i = ((i mod 9) + 1) / 100, negative when i mod 4 = 0, minus 0.035
 * (no zeros), i = 1..70. R 4.2.2: wilcox.test(d, alternative = "greater", exact = FALSE,
 * correct = TRUE)$p.value = 0.87203692187328996 (V = 1049), "less" 0.12919248014498513; without
 * the - 0.035, "greater" gives 0.0001871226259147912 (V = 1850). */
static void test_paired__many_pairs_use_normal_approximation(void **state)
{
    (void)state;
    double d[70], e[70];
    for (int i = 1; i <= 70; i++) {
        e[i - 1] = (double)((i % 9) + 1) * (i % 4 == 0 ? -1.0 : 1.0) * 0.01;
        d[i - 1] = e[i - 1] - 0.035;
    }
    struct cg_wsr w;
    assert_int_equal(cg_paired_signed_rank(d, 70, &w), 0);
    assert_int_equal(w.exact, 0);
    assert_near(w.w_plus, 1049.0, 1e-9);
    assert_rel(w.p_greater, 0.87203692187328996, 1e-9);
    assert_rel(w.p_less, 0.12919248014498513, 1e-9);
    assert_int_equal(cg_paired_signed_rank(e, 70, &w), 0);
    assert_near(w.w_plus, 1850.0, 1e-9);
    assert_rel(w.p_greater, 0.0001871226259147912, 1e-9);
}

/* True when some Walsh average is exactly 0: the one case where an end of the interval can
 * sit at 0 whichever way the test decides. */
static bool has_zero_walsh(const double *d, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = i; j < n; j++)
            if (d[i] + d[j] == 0.0)
                return true;
    return false;
}

static void check_paired_interval_agrees(const double *d, size_t n, double alpha)
{
    struct cg_wsr w;
    struct cg_shift s;
    assert_int_equal(cg_paired_signed_rank(d, n, &w), 0);
    assert_int_equal(cg_paired_hl(d, n, alpha, &s), 0);
    bool zero = has_zero_walsh(d, n);
    bool fail = w.p_greater <= alpha, better = w.p_less <= alpha;
    if (fail != (s.low > 0.0) && !(zero && s.low == 0.0))
        fail_msg("n %zu, alpha %g: p_greater %.6g but low %.6g", n, alpha, w.p_greater, s.low);
    if (better != (s.high < 0.0) && !(zero && s.high == 0.0))
        fail_msg("n %zu, alpha %g: p_less %.6g but high %.6g", n, alpha, w.p_less, s.high);
    if (fail)
        assert_true(isfinite(s.low));
    if (better)
        assert_true(isfinite(s.high));
}

/* The Tukey interval inverts the same signed-rank test (same zeros, same ties, same
 * distribution): a significant p never comes with an infinite interval or one that holds 0.
 * Four pairs of +0.1: p = 0.0625, so at alpha 0.05 the interval is unbounded and not
 * significant, at alpha 0.0625 it starts at 0.1 (every Walsh average is 0.1). Before, p = 0.036
 * came with an infinite interval. The n = 70 data above: R's wilcox.test(d, conf.int = TRUE,
 * exact = FALSE, correct = TRUE, alternative = "greater")$conf.int[1] = 0.0150579 (a root near
 * the Walsh average 0.015). Then seeded data with ties and zeros at several levels. */
static void test_paired__interval_inverts_the_test(void **state)
{
    (void)state;
    double four[] = {0.1, 0.1, 0.1, 0.1};
    struct cg_shift s;
    assert_int_equal(cg_paired_hl(four, 4, 0.05, &s), 0);
    assert_true(isinf(s.low) && isinf(s.high));
    check_paired_interval_agrees(four, 4, 0.05);
    assert_int_equal(cg_paired_hl(four, 4, 0.0625, &s), 0);
    assert_near(s.low, 0.1, 0);
    check_paired_interval_agrees(four, 4, 0.0625);
    double e[70];
    for (int i = 1; i <= 70; i++)
        e[i - 1] = (double)((i % 9) + 1) * (i % 4 == 0 ? -1.0 : 1.0) * 0.01;
    assert_int_equal(cg_paired_hl(e, 70, 0.05, &s), 0);
    assert_near(s.low, 0.015057901515286113, 1e-3);
    uint64_t rng = 17;
    const size_t sizes[] = {2, 3, 4, 5, 6, 8, 10, 15, 30, 61, 80};
    const double alphas[] = {0.0086, 0.025, 0.0414, 0.05, 0.1};
    double d[80];
    for (size_t c = 0; c < sizeof(sizes) / sizeof(sizes[0]); c++) {
        for (int rep = 0; rep < 24; rep++) {
            size_t n = sizes[c];
            uint64_t levels = rep % 2 ? 9 : 1000000;
            for (size_t i = 0; i < n; i++)
                d[i] = (double)(int64_t)(cg_stats_rand(&rng) % levels) - (double)(levels / 2) +
                       (double)levels * 0.05 * (double)(rep / 2 % 6);
            for (size_t k = 0; k < sizeof(alphas) / sizeof(alphas[0]); k++)
                check_paired_interval_agrees(d, n, alphas[k]);
        }
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void test_paired__hl_small_by_hand(void **state)
{
    (void)state;
    /* Walsh averages of 1..5: 15 values from 1 to 5, median 3. alpha 0.05: P(W+ <= 0) = 1/32
     * <= 0.05 < P(W+ <= 1) = 2/32, so rank 1 from each end: [1, 5]. alpha 0.03 < 1/32: no
     * rank, an unbounded interval. */
    double d[] = {3, 1, 5, 2, 4};
    struct cg_shift s;
    assert_int_equal(cg_paired_hl(d, 5, 0.05, &s), 0);
    assert_near(s.estimate, 3.0, 0);
    assert_near(s.low, 1.0, 0);
    assert_near(s.high, 5.0, 0);
    assert_int_equal(cg_paired_hl(d, 5, 0.03, &s), 0);
    assert_true(isinf(s.low) && s.low < 0);
    assert_true(isinf(s.high) && s.high > 0);
}

static void test_paired__hl_matches_enumeration(void **state)
{
    (void)state;
    double d[] = {0.1, 0.3, -0.2, 0.5, 0.4, 0.2, 0.6, 0.35, -0.05, 0.25};
    size_t n = 10, m = n * (n + 1) / 2;
    double w[55];
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i; j < n; j++)
            w[k++] = (d[i] + d[j]) / 2.0;
    qsort(w, m, sizeof(*w), cmp_double);
    /* alpha 0.025: by enumeration P(W+ <= 8) = 25/1024 <= 0.025 < P(W+ <= 9) = 33/1024, so the
     * interval runs from the 9th smallest to the 9th largest Walsh average. */
    assert_near(1.0 - brute_p_greater(10, 9), 25.0 / 1024.0, 1e-15);
    assert_near(1.0 - brute_p_greater(10, 10), 33.0 / 1024.0, 1e-15);
    struct cg_shift s;
    assert_int_equal(cg_paired_hl(d, n, 0.025, &s), 0);
    assert_near(s.estimate, w[27], 1e-15); /* 55 averages: the 28th */
    assert_near(s.low, w[8], 1e-15);
    assert_near(s.high, w[m - 9], 1e-15);
}

/* Scales every step of run (and so its summary) by factor; memory peaks stay. */
static void scale_run(struct cg_run *run, double factor)
{
    for (size_t s = 0; s < run->n_steps; s++)
        run->steps[s].wall_ns = (int64_t)((double)run->steps[s].wall_ns * factor);
    int64_t rss = run->summary.peak_host_rss_bytes, dev = run->summary.peak_device_bytes;
    cg_run_summarize(run);
    run->summary.peak_host_rss_bytes = rss;
    run->summary.peak_device_bytes = dev;
}

/* A copy of a whose every step (and so every summary) is scaled by factor. */
static void scaled_copy(const struct cg_artifact *a, double factor, struct cg_artifact *out)
{
    cg_artifact_init(out);
    assert_int_equal(cg_artifact_copy_header(out, a), 0);
    assert_int_equal(cg_artifact_append_runs(out, a), 0);
    for (size_t r = 0; r < out->n_runs; r++)
        scale_run(&out->runs[r], factor);
}

static void test_paired__verdict_sees_through_run_noise(void **state)
{
    (void)state;
    /* Runs differ by up to +-20% from each other, and head is base x 1.10 run for run. Unpaired,
     * the sides overlap (Mann-Whitney cannot separate them); paired, every log ratio is
     * log 1.1: W+ = 15 of 15, p = 1/32 <= 0.05, +10% > 5%: FAIL (without the floor rule). */
    struct cg_fixture f = {5, 30, 1e7, 0.20, 0.01, 1024, -1, 200000000, 3, 42};
    struct cg_artifact base, head;
    struct cg_thresholds t;
    struct cg_err err;
    struct cg_verdict v;
    cg_artifact_init(&base);
    assert_int_equal(cg_fixture_make(&base, &f), 0);
    scaled_copy(&base, 1.10, &head);
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);

    assert_int_equal(cg_verdict_compute(&base, &head, &t, &v, &err), 0);
    assert_int_not_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_FAIL);
    cg_verdict_release(&v);

    /* The floor is not paired (paired.h): over 5 runs a side spread by +-20% it cannot tell, so
     * with the floor rule the mean's FAIL waits for it. */
    assert_int_equal(cg_paired_verdict(&base, &head, &t, &v, &err), 0);
    assert_int_equal(v.metrics[CG_M_STEP_TIME_FLOOR].method, CG_METHOD_FAST_RUNS);
    assert_int_not_equal(v.metrics[CG_M_STEP_TIME_FLOOR].outcome, CG_OUT_FAIL);
    assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_INCONCLUSIVE);
    assert_int_equal(v.overall, CG_OUT_INCONCLUSIVE);
    cg_verdict_release(&v);

    t.require_floor = false;
    assert_int_equal(cg_paired_verdict(&base, &head, &t, &v, &err), 0);
    const struct cg_metric_result *r = &v.metrics[CG_M_STEP_TIME_MEAN];
    assert_int_equal(r->method, CG_METHOD_PAIRED);
    assert_near(r->p_value, 1.0 / 32.0, 1e-12);
    assert_near(r->delta_pct, 10.0, 0.01);
    assert_int_equal(r->outcome, CG_OUT_FAIL);
    assert_int_equal(v.metrics[CG_M_TOKENS_PER_SEC].outcome, CG_OUT_FAIL);
    assert_int_equal(v.overall, CG_OUT_FAIL);
    cg_verdict_release(&v);

    /* The same pairs with no change pass. */
    struct cg_artifact same;
    scaled_copy(&base, 1.0, &same);
    assert_int_equal(cg_paired_verdict(&base, &same, &t, &v, &err), 0);
    assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_PASS);
    assert_int_equal(v.overall, CG_OUT_PASS);
    cg_verdict_release(&v);
    cg_artifact_release(&same);
    cg_artifact_release(&head);
    cg_artifact_release(&base);
}

/* Three of the base's five runs met a busy runner (steps x 1.5): the base has 2 fast runs, too
 * few for the floor. The main command would ask for a new baseline; ab adds pairs, which add
 * base runs too. */
static void test_paired__floor_short_of_base_fast_runs_wants_pairs(void **state)
{
    (void)state;
    struct cg_fixture f = {5, 30, 1e7, 0.01, 0.01, 1024, -1, 200000000, 3, 9};
    struct cg_artifact base, head;
    struct cg_thresholds t;
    struct cg_err err;
    struct cg_verdict v;
    cg_artifact_init(&base);
    assert_int_equal(cg_fixture_make(&base, &f), 0);
    scaled_copy(&base, 1.0, &head);
    for (size_t r = 2; r < base.n_runs; r++)
        scale_run(&base.runs[r], 1.5);
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);

    assert_int_equal(cg_verdict_compute(&base, &head, &t, &v, &err), 0);
    const struct cg_metric_result *r = &v.metrics[CG_M_STEP_TIME_FLOOR];
    assert_int_equal(r->outcome, CG_OUT_INCONCLUSIVE);
    assert_int_equal(r->fast_runs[0], 2);
    assert_false(r->wants_runs);
    assert_non_null(strstr(r->note, "record the baseline again"));
    cg_verdict_release(&v);

    assert_int_equal(cg_paired_verdict(&base, &head, &t, &v, &err), 0);
    r = &v.metrics[CG_M_STEP_TIME_FLOOR];
    assert_int_equal(r->outcome, CG_OUT_INCONCLUSIVE);
    assert_true(r->wants_runs);
    assert_non_null(strstr(r->note, "too few base runs in the runner's fast state (2, need 3)"));
    assert_non_null(strstr(r->note, "add pairs"));
    cg_verdict_release(&v);
    cg_artifact_release(&head);
    cg_artifact_release(&base);
}

static void test_paired__one_pair_keeps_unpaired_verdict(void **state)
{
    (void)state;
    struct cg_fixture f = {1, 40, 1e7, 0.0, 0.02, 1024, -1, 200000000, 3, 5};
    struct cg_artifact base, head;
    struct cg_thresholds t;
    struct cg_err err;
    struct cg_verdict v;
    cg_artifact_init(&base);
    assert_int_equal(cg_fixture_make(&base, &f), 0);
    scaled_copy(&base, 1.3, &head);
    assert_int_equal(cg_thresholds_load("smoke", &t, &err), 0);
    assert_int_equal(cg_paired_verdict(&base, &head, &t, &v, &err), 0);
    assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].method, CG_METHOD_BOOTSTRAP);
    assert_true(v.within_run);
    cg_verdict_release(&v);
    cg_artifact_release(&head);
    cg_artifact_release(&base);
}

/* Two pairs, head 30% slower in both: four processes cannot show how much processes differ,
 * so the paired timing metrics are INCONCLUSIVE with that reason and want more pairs, whatever
 * min_runs the thresholds give. */
static void test_paired__two_pairs_never_judge_timing(void **state)
{
    (void)state;
    struct cg_fixture f = {2, 30, 1e7, 0.01, 0.01, 1024, -1, 200000000, 3, 5};
    struct cg_artifact base, head;
    struct cg_thresholds t;
    struct cg_err err;
    struct cg_verdict v;
    cg_artifact_init(&base);
    assert_int_equal(cg_fixture_make(&base, &f), 0);
    scaled_copy(&base, 1.3, &head);
    assert_int_equal(cg_thresholds_load("smoke", &t, &err), 0);
    t.metric[CG_M_STEP_TIME_MEAN].min_runs = 1;
    assert_int_equal(cg_paired_verdict(&base, &head, &t, &v, &err), 0);
    const struct cg_metric_result *r = &v.metrics[CG_M_STEP_TIME_MEAN];
    assert_int_equal(r->method, CG_METHOD_PAIRED);
    assert_near(r->delta_pct, 30.0, 0.01);
    assert_int_equal(r->outcome, CG_OUT_INCONCLUSIVE);
    assert_true(r->wants_runs);
    assert_non_null(strstr(r->note, "timing needs 3 runs a side: one process cannot show how "
                                    "much processes differ (2 pairs)"));
    assert_int_equal(v.overall, CG_OUT_INCONCLUSIVE);
    cg_verdict_release(&v);
    cg_artifact_release(&head);
    cg_artifact_release(&base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paired__all_positive_5_is_one_in_32),
        cmocka_unit_test(test_paired__one_negative_smallest),
        cmocka_unit_test(test_paired__zeros_are_ranked_then_left_out),
        cmocka_unit_test(test_paired__exact_matches_enumeration),
        cmocka_unit_test(test_paired__cdf_table_value),
        cmocka_unit_test(test_paired__ties_use_exact_conditional_distribution),
        cmocka_unit_test(test_paired__many_pairs_use_normal_approximation),
        cmocka_unit_test(test_paired__interval_inverts_the_test),
        cmocka_unit_test(test_paired__hl_small_by_hand),
        cmocka_unit_test(test_paired__hl_matches_enumeration),
        cmocka_unit_test(test_paired__verdict_sees_through_run_noise),
        cmocka_unit_test(test_paired__floor_short_of_base_fast_runs_wants_pairs),
        cmocka_unit_test(test_paired__two_pairs_never_judge_timing),
        cmocka_unit_test(test_paired__one_pair_keeps_unpaired_verdict),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
