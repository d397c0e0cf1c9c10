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
#include <stdlib.h>
#include <string.h>

/* cmocka's assert_float_equal compares in float precision; the values here need doubles. */
#define assert_near(got, want, eps) assert_near_at((got), (want), (eps), __FILE__, __LINE__)

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

static void test_paired__zeros_are_dropped(void **state)
{
    (void)state;
    /* Two zero differences leave n = 3 all positive: W+ = 6, p = 1/8. */
    double d[] = {0, 0.2, 0, 0.1, 0.3};
    struct cg_wsr w;
    assert_int_equal(cg_paired_signed_rank(d, 5, &w), 0);
    assert_int_equal(w.n, 3);
    assert_near(w.p_greater, 1.0 / 8.0, 1e-15);
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

static void test_paired__ties_use_normal_approximation(void **state)
{
    (void)state;
    /* |d| = 1,1,2,2,3,3,3,4: midranks 1.5,1.5,3.5,3.5,6,6,6,8; the -1 is the only negative, so
     * W+ = 1.5 + 3.5 + 3.5 + 6 + 6 + 6 + 8 = 34.5. n = 8: mean 18, variance
     * 8*9*17/24 - (6 + 6 + 24)/48 = 50.25; z = (34.5 - 18 - 0.5)/sqrt(50.25) = 2.25711,
     * upper tail 0.0120007. */
    double d[] = {1, -1, 2, 2, 3, 3, 3, 4};
    struct cg_wsr w;
    assert_int_equal(cg_paired_signed_rank(d, 8, &w), 0);
    assert_int_equal(w.exact, 0);
    assert_near(w.w_plus, 34.5, 0);
    assert_near(w.p_greater, 0.012000726946169105, 1e-9);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paired__all_positive_5_is_one_in_32),
        cmocka_unit_test(test_paired__one_negative_smallest),
        cmocka_unit_test(test_paired__zeros_are_dropped),
        cmocka_unit_test(test_paired__exact_matches_enumeration),
        cmocka_unit_test(test_paired__cdf_table_value),
        cmocka_unit_test(test_paired__ties_use_normal_approximation),
        cmocka_unit_test(test_paired__hl_small_by_hand),
        cmocka_unit_test(test_paired__hl_matches_enumeration),
        cmocka_unit_test(test_paired__verdict_sees_through_run_noise),
        cmocka_unit_test(test_paired__floor_short_of_base_fast_runs_wants_pairs),
        cmocka_unit_test(test_paired__one_pair_keeps_unpaired_verdict),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
