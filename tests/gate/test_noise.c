/*
 * test_noise: the A/A analysis on seeded fixture runs: how decisions are formed (every split, or
 * a seeded sample), the coefficients of variation against values computed here independently,
 * and the recommended thresholds checked by their defining property (at the recommendation the
 * false-alarm share is at most the target, 0.1 below it is not).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fixtures.h"
#include "noise.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void make_pool(struct cg_artifact *a, size_t runs, double run_noise, uint64_t seed)
{
    struct cg_fixture f = {runs, 30, 1e7, run_noise, 0.02, 1024, -1, 200000000, 3, seed};
    cg_artifact_init(a);
    assert_int_equal(cg_fixture_make(a, &f), 0);
}

static void test_noise__every_split_of_2n_runs(void **state)
{
    (void)state;
    struct cg_artifact pool;
    struct cg_thresholds t;
    struct cg_err err;
    struct cg_noise z;
    make_pool(&pool, 10, 0.01, 3);
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);
    assert_int_equal(cg_noise_analyse(&pool, 5, &t, 0.01, 1, &z, &err), 0);
    assert_int_equal(z.decisions, 252); /* C(10, 5) ordered splits */
    assert_true(z.every_split);
    assert_int_equal(z.runs, 10);
    assert_int_equal(z.side, 5);
    /* +-1% run noise against a 5% threshold: no false alarm. */
    assert_int_equal(z.fails, 0);
    assert_int_equal(z.m[CG_M_STEP_TIME_MEAN].fails, 0);
    assert_false(z.m[CG_M_PEAK_DEVICE_MEMORY].measured);
    /* The exact test reaches p <= 0.05 in 12 of the 252 splits whatever the data (no ties). */
    assert_int_equal(z.m[CG_M_STEP_TIME_MEAN].could_fail, 12);
    cg_artifact_release(&pool);
}

static void test_noise__sampled_splits_when_there_are_more(void **state)
{
    (void)state;
    struct cg_artifact pool;
    struct cg_thresholds t;
    struct cg_err err;
    struct cg_noise z, z2;
    make_pool(&pool, 16, 0.01, 4);
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);
    assert_int_equal(cg_noise_analyse(&pool, 8, &t, 0.01, 9, &z, &err), 0);
    assert_int_equal(z.decisions, CG_NOISE_MAX_SPLITS); /* C(16, 8) = 12870 > 2000 */
    assert_false(z.every_split);
    /* Seeded: the same seed draws the same splits. */
    assert_int_equal(cg_noise_analyse(&pool, 8, &t, 0.01, 9, &z2, &err), 0);
    assert_int_equal(z.m[CG_M_STEP_TIME_MEAN].could_fail, z2.m[CG_M_STEP_TIME_MEAN].could_fail);
    assert_true(z.m[CG_M_STEP_TIME_MEAN].recommended_pct ==
                z2.m[CG_M_STEP_TIME_MEAN].recommended_pct);
    /* More runs than two sides: random disjoint sides as well. */
    assert_int_equal(cg_noise_analyse(&pool, 5, &t, 0.01, 9, &z, &err), 0);
    assert_int_equal(z.decisions, CG_NOISE_MAX_SPLITS);
    assert_int_equal(cg_noise_analyse(&pool, 9, &t, 0.01, 9, &z, &err), CG_EINPUT);
    cg_artifact_release(&pool);
}

static void test_noise__coefficients_of_variation(void **state)
{
    (void)state;
    struct cg_artifact pool;
    struct cg_thresholds t;
    struct cg_err err;
    struct cg_noise z;
    make_pool(&pool, 10, 0.05, 5);
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);
    assert_int_equal(cg_noise_analyse(&pool, 5, &t, 0.01, 1, &z, &err), 0);
    /* Between-run CV of the run means, by the two-pass formula here. */
    double mean = 0, ss = 0;
    for (size_t r = 0; r < 10; r++)
        mean += pool.runs[r].summary.step_time_mean_ns / 10.0;
    for (size_t r = 0; r < 10; r++) {
        double d = pool.runs[r].summary.step_time_mean_ns - mean;
        ss += d * d;
    }
    double cv = sqrt(ss / 9.0) / mean * 100.0;
    assert_true(fabs(z.m[CG_M_STEP_TIME_MEAN].between_cv_pct - cv) < 1e-9);
    /* Steps vary uniformly by +-2% within a run: a CV of 2/sqrt(3) = 1.155%, so a run's mean of
     * 30 independent steps would vary by about 0.21%. */
    assert_true(fabs(z.m[CG_M_STEP_TIME_MEAN].within_cv_pct - 1.155) < 0.25);
    assert_true(fabs(z.m[CG_M_STEP_TIME_MEAN].steps_predict_cv_pct - 1.155 / sqrt(30.0)) < 0.05);
    assert_true(isnan(z.m[CG_M_STEP_TIME_P95].steps_predict_cv_pct));
    assert_true(isnan(z.m[CG_M_PEAK_HOST_RSS].within_cv_pct));
    assert_true(z.m[CG_M_PEAK_HOST_RSS].between_cv_pct == 0.0); /* the same peak in every run */
    cg_artifact_release(&pool);
}

static void test_noise__recommendation_is_the_smallest_that_keeps_the_target(void **state)
{
    (void)state;
    /* +-12% run noise: the default 5% threshold alarms in some splits. At the recommended
     * threshold at most floor(0.01 x 252) = 2 splits fail on step time mean; 0.1 lower, more. */
    struct cg_artifact pool;
    struct cg_thresholds t;
    struct cg_err err;
    struct cg_noise z, at, below;
    make_pool(&pool, 10, 0.12, 6);
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);
    assert_int_equal(cg_noise_analyse(&pool, 5, &t, 0.01, 1, &z, &err), 0);
    double rec = z.m[CG_M_STEP_TIME_MEAN].recommended_pct;
    assert_true(rec > 0.1);
    assert_true(z.m[CG_M_STEP_TIME_MEAN].fails > 2); /* the default threshold alarms here */
    t.metric[CG_M_STEP_TIME_MEAN].max_regression_pct = rec;
    assert_int_equal(cg_noise_analyse(&pool, 5, &t, 0.01, 1, &at, &err), 0);
    assert_true(at.m[CG_M_STEP_TIME_MEAN].fails <= 2);
    t.metric[CG_M_STEP_TIME_MEAN].max_regression_pct = rec - 0.1;
    assert_int_equal(cg_noise_analyse(&pool, 5, &t, 0.01, 1, &below, &err), 0);
    assert_true(below.m[CG_M_STEP_TIME_MEAN].fails > 2);
    cg_artifact_release(&pool);
}

static void test_noise__too_few_runs_recommend_nothing(void **state)
{
    (void)state;
    struct cg_artifact pool;
    struct cg_thresholds t;
    struct cg_err err;
    struct cg_noise z;
    make_pool(&pool, 4, 0.2, 7);
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);
    assert_int_equal(cg_noise_analyse(&pool, 2, &t, 0.01, 1, &z, &err), 0);
    assert_int_equal(z.decisions, 6);
    assert_int_equal(z.fails, 0); /* 2 a side < min_runs 3 */
    assert_true(isnan(z.m[CG_M_STEP_TIME_MEAN].recommended_pct));
    cg_artifact_release(&pool);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_noise__every_split_of_2n_runs),
        cmocka_unit_test(test_noise__sampled_splits_when_there_are_more),
        cmocka_unit_test(test_noise__coefficients_of_variation),
        cmocka_unit_test(test_noise__recommendation_is_the_smallest_that_keeps_the_target),
        cmocka_unit_test(test_noise__too_few_runs_recommend_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
