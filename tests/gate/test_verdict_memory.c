/* test_verdict_memory: peak device memory and peak host RSS, the memory group of the verdict
 * (src/gate/verdict.c, memory_metric and grown_share): the medians, and memory grown in some
 * processes only, with their size and power simulated on seeded fixture artifacts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fixtures.h"
#include "report.h"
#include "sequential.h"
#include "verdict.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FX(runs, steps, mean, rn, sn, dev, seed)                                                   \
    {                                                                                              \
        runs, steps, mean, rn, sn, 1024, dev, 200000000, 3, seed                                   \
    }

static void make(struct cg_artifact *a, const struct cg_fixture *f)
{
    cg_artifact_init(a);
    assert_int_equal(cg_fixture_make(a, f), 0);
}

/* Each run's peak host RSS: base bytes times 1 + noise (uniform, +-noise) and, with probability
 * q, in a high memory state: + high bytes (a process that chose a larger workspace). */
static void set_rss(struct cg_artifact *a, double base, double noise, double q, double high,
                    uint64_t *rng)
{
    for (size_t r = 0; r < a->n_runs; r++) {
        *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
        double u = (double)(*rng >> 11) / 9007199254740992.0;
        *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
        double s = (double)(*rng >> 11) / 9007199254740992.0;
        a->runs[r].summary.peak_host_rss_bytes =
            (int64_t)(base * (1.0 + noise * (2.0 * u - 1.0)) + (s < q ? high : 0.0));
    }
}

/* Peak memory in some processes only: the median rule passed a +1 GiB peak in 7 of 15 current
 * runs. The runs above the pooled median by more than the limit are counted per side and their
 * shares compared (Fisher's exact test, one-sided, alpha 0.05): a rise FAILs. Its size is
 * simulated under nulls of processes that land in a high memory state with the same
 * probability on both sides (a library's workspace chosen per process), its power with the high
 * state on the current side only. The median rule's own false FAILs at q = 0.5 (the median
 * flips between states) are printed beside it. */
static void test_verdict__memory_grown_in_some_runs_fails(void **state)
{
    (void)state;
    struct cg_thresholds t;
    struct cg_err err;
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);
    const double base = 2e9, gib = 1073741824.0;
    struct cg_fixture f = FX(15, 10, 1e7, 0.005, 0.01, -1, 1);
    uint64_t rng = 7;
    const int reps = 400;
    /* the nulls: {q, high bytes}; the alternatives: {q current (baseline 0), high bytes} */
    const double nulls[][2] = {{0.0, 0}, {0.02, gib}, {0.1, gib}, {0.3, gib}, {0.5, gib}};
    const double alts[][2] = {{7.0 / 15.0, gib}, {0.3, gib}, {0.2, gib}};
    for (size_t i = 0; i < sizeof(nulls) / sizeof(nulls[0]); i++) {
        int fails = 0, share_fails = 0;
        for (int k = 0; k < reps; k++) {
            struct cg_artifact b, c;
            f.seed = (uint64_t)k * 2 + 1;
            make(&b, &f);
            f.seed++;
            make(&c, &f);
            set_rss(&b, base, 0.002, nulls[i][0], nulls[i][1], &rng);
            set_rss(&c, base, 0.002, nulls[i][0], nulls[i][1], &rng);
            struct cg_verdict v;
            assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
            const struct cg_metric_result *r = &v.metrics[CG_M_PEAK_HOST_RSS];
            fails += r->outcome == CG_OUT_FAIL;
            share_fails += r->outcome == CG_OUT_FAIL && r->grown_some;
            cg_verdict_release(&v);
            cg_artifact_release(&b);
            cg_artifact_release(&c);
        }
        print_message("peak host RSS, 15 v 15 runs, high state q = %.2f on both sides: FAIL %d "
                      "of %d (of them by the share of runs grown: %d)\n",
                      nulls[i][0], fails, reps, share_fails);
        assert_true(share_fails <= reps * 5 / 100); /* the new rule's size */
        if (nulls[i][0] < 0.5)
            assert_true(fails <= reps * 5 / 100);
    }
    int power[3] = {0, 0, 0};
    for (size_t i = 0; i < sizeof(alts) / sizeof(alts[0]); i++) {
        for (int k = 0; k < reps; k++) {
            struct cg_artifact b, c;
            f.seed = (uint64_t)k * 2 + 1;
            make(&b, &f);
            f.seed++;
            make(&c, &f);
            set_rss(&b, base, 0.002, 0.0, 0.0, &rng);
            set_rss(&c, base, 0.002, alts[i][0], alts[i][1], &rng);
            struct cg_verdict v;
            assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
            power[i] += v.metrics[CG_M_PEAK_HOST_RSS].outcome == CG_OUT_FAIL;
            cg_verdict_release(&v);
            cg_artifact_release(&b);
            cg_artifact_release(&c);
        }
        print_message("peak host RSS, 15 v 15 runs, +1 GiB in a share %.2f of current runs: FAIL "
                      "%d of %d\n",
                      alts[i][0], power[i], reps);
    }
    assert_true(power[0] >= reps * 95 / 100);
    assert_true(power[1] >= reps * 60 / 100);
    /* the report says which runs: the note and the headline */
    struct cg_artifact b, c;
    make(&b, &f);
    f.seed = 99;
    make(&c, &f);
    set_rss(&b, base, 0.002, 0.0, 0.0, &rng);
    set_rss(&c, base, 0.002, 0.0, 0.0, &rng);
    for (size_t r = 0; r < 7; r++)
        c.runs[r].summary.peak_host_rss_bytes += (int64_t)gib;
    struct cg_verdict v;
    char line[512];
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    cg_verdict_headline(&v, line, sizeof(line));
    assert_int_equal(v.overall, CG_OUT_FAIL);
    print_message("%s\n", line);
    if (strstr(v.metrics[CG_M_PEAK_HOST_RSS].note, "7 of 15 current runs") == NULL ||
        strstr(line, "7 of 15 current runs") == NULL)
        fail_msg("note '%s', headline '%s'", v.metrics[CG_M_PEAK_HOST_RSS].note, line);
    cg_verdict_release(&v);
    cg_artifact_release(&b);
    cg_artifact_release(&c);
}

/* One comparison of peak host RSS: nb baseline runs with the high state at probability qb,
 * nc current runs at qc, each current run's base bytes base_c, each run's noise uniform within
 * +-noise (relative). Returns its outcome. */
static enum cg_outcome rss_outcome(size_t nb, size_t nc, double qb, double qc, double base_c,
                                   double noise, uint64_t seed, uint64_t *rng)
{
    const double base = 2e9, gib = 1073741824.0;
    struct cg_thresholds t;
    struct cg_err err;
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);
    struct cg_fixture fb = FX(nb, 10, 1e7, 0.005, 0.01, -1, seed);
    struct cg_fixture fc = FX(nc, 10, 1e7, 0.005, 0.01, -1, seed + 1);
    struct cg_artifact b, c;
    make(&b, &fb);
    make(&c, &fc);
    set_rss(&b, base, noise, qb, gib, rng);
    set_rss(&c, base_c, noise, qc, gib, rng);
    struct cg_verdict v;
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    enum cg_outcome o = v.metrics[CG_M_PEAK_HOST_RSS].outcome;
    cg_verdict_release(&v);
    cg_artifact_release(&b);
    cg_artifact_release(&c);
    return o;
}

/* Peak memory of each run set by hand: vb[nb] baseline, vc[nc] current bytes of host RSS (the
 * thresholds name t). Returns the metric's result in *out (its note copied). */
static void rss_by_hand(const char *t_name, const double *vb, size_t nb, const double *vc,
                        size_t nc, struct cg_metric_result *out)
{
    struct cg_thresholds t;
    struct cg_err err;
    assert_int_equal(cg_thresholds_load(t_name, &t, &err), 0);
    struct cg_fixture fb = FX(nb, 10, 1e7, 0.005, 0.01, -1, 3),
                      fc = FX(nc, 10, 1e7, 0.005, 0.01, -1, 4);
    struct cg_artifact b, c;
    make(&b, &fb);
    make(&c, &fc);
    for (size_t r = 0; r < nb; r++)
        b.runs[r].summary.peak_host_rss_bytes = (int64_t)vb[r];
    for (size_t r = 0; r < nc; r++)
        c.runs[r].summary.peak_host_rss_bytes = (int64_t)vc[r];
    struct cg_verdict v;
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    *out = v.metrics[CG_M_PEAK_HOST_RSS];
    cg_verdict_release(&v);
    cg_artifact_release(&b);
    cg_artifact_release(&c);
}

/* Memory the same in every process but for noise within the limit decides from one or two runs
 * a side, as before the rule for overlapping runs: a consistent rise beyond the limit FAILs when
 * each side's runs lie within the limit of each other, though some current run is within the
 * limit of some baseline run (the test of the runs could not reach alpha at 2 v 2 or 15 v 1). */
static void test_verdict__memory_within_the_limit_on_each_side_decides_from_few_runs(void **state)
{
    (void)state;
    const double mib = 1048576.0;
    struct cg_metric_result r;
    /* smoke (+25%, 128 MiB): 2 v 2, +26.8% */
    const double b2[] = {614 * mib, 654 * mib}, c2[] = {804 * mib, 804.1 * mib};
    rss_by_hand("smoke", b2, 2, c2, 2, &r);
    if (r.outcome != CG_OUT_FAIL)
        fail_msg("2 v 2, +26.8%%: %d, '%s'", r.outcome, r.note);
    /* default (+10%, 64 MiB): 15 v 1, one baseline run 7.5% above the others, current +12% */
    double b15[15];
    for (size_t i = 0; i < 15; i++)
        b15[i] = i == 7 ? 2.15e9 : 2.0e9;
    const double c1[] = {2.24e9};
    rss_by_hand("default", b15, 15, c1, 1, &r);
    if (r.outcome != CG_OUT_FAIL)
        fail_msg("15 v 1, +12%%: %d, '%s'", r.outcome, r.note);
    /* a baseline whose runs differ by more than the limit: a few runs cannot show it, and the
     * note says so */
    const double bw[] = {2.0e9, 2.0e9, 2.4e9}, cw[] = {2.3e9, 2.3e9};
    rss_by_hand("default", bw, 3, cw, 2, &r);
    assert_int_equal(r.outcome, CG_OUT_INCONCLUSIVE);
    print_message("%s\n", r.note);
    if (strstr(r.note, "3 v 2 runs cannot show it (the test's smallest p is 0.1)") == NULL)
        fail_msg("note '%s'", r.note);
}

/* With --only counts,memory a baseline too short for timing is not the headline's reason: no
 * timing is gated; the memory that is INCONCLUSIVE is. */
static void test_verdict__headline_of_memory_alone_is_not_the_short_baseline(void **state)
{
    (void)state;
    struct cg_thresholds t;
    struct cg_err err;
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);
    t.gate_only = CG_GATE_COUNTS | CG_GATE_MEMORY;
    struct cg_fixture fb = FX(2, 10, 1e7, 0.005, 0.01, -1, 3),
                      fc = FX(2, 10, 1e7, 0.005, 0.01, -1, 4);
    struct cg_artifact b, c;
    make(&b, &fb);
    make(&c, &fc);
    const double vb[] = {2.0e9, 2.4e9}, vc[] = {2.0e9, 2.9e9};
    for (size_t r = 0; r < 2; r++) {
        b.runs[r].summary.peak_host_rss_bytes = (int64_t)vb[r];
        c.runs[r].summary.peak_host_rss_bytes = (int64_t)vc[r];
    }
    struct cg_verdict v;
    char line[512];
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    assert_true(v.weak_baseline);
    assert_int_equal(v.overall, CG_OUT_INCONCLUSIVE);
    assert_int_equal(v.metrics[CG_M_PEAK_HOST_RSS].outcome, CG_OUT_INCONCLUSIVE);
    cg_verdict_headline(&v, line, sizeof(line));
    print_message("%s\n", line);
    if (strstr(line, "Peak host RSS") == NULL || strstr(line, "the baseline has 2 runs") != NULL)
        fail_msg("headline '%s'", line);
    cg_verdict_release(&v);
    cg_artifact_release(&b);
    cg_artifact_release(&c);
}

/* The main command looks at 15 current runs, then 30, when timing asks for more: memory's tests
 * of the runs (Mann-Whitney, and Fisher's of the runs grown) are made at each look, so their
 * levels are spent across the looks as the step time mean's are (cg_seq_look_thresholds), and
 * the union stays at alpha. Simulated under the null of memory states (q = 0.5 on both sides,
 * 15 baseline runs): a FAIL at either look. Before, each look tested at 0.05: 6.7%. */
static void test_verdict__memory_tests_are_spent_across_looks(void **state)
{
    (void)state;
    struct cg_thresholds t, look[2];
    struct cg_err err;
    struct cg_seq_plan plan;
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);
    assert_int_equal(cg_seq_plan_make(CG_SPEND_POCOCK, 15, 15, 15, 30, &plan, &err), 0);
    double sum = 0.0;
    for (size_t k = 0; k < 2; k++) {
        cg_seq_look_thresholds(&plan, k, &t, &look[k]);
        double a = look[k].metric[CG_M_PEAK_HOST_RSS].alpha;
        assert_true(a > 0.0 && a < CG_MEMORY_GROWN_ALPHA);
        assert_true(look[k].metric[CG_M_PEAK_DEVICE_MEMORY].alpha == a);
        sum += a;
    }
    assert_true(fabs(sum - CG_MEMORY_GROWN_ALPHA) < 1e-12);
    const int reps = 1000;
    int fails = 0;
    uint64_t rng = 5;
    for (int k = 0; k < reps; k++) {
        struct cg_fixture fb = FX(15, 10, 1e7, 0.005, 0.01, -1, (uint64_t)k * 2 + 1);
        struct cg_fixture fc = FX(30, 10, 1e7, 0.005, 0.01, -1, (uint64_t)k * 2 + 2);
        struct cg_artifact b, c;
        make(&b, &fb);
        make(&c, &fc);
        set_rss(&b, 2e9, 0.002, 0.5, 1073741824.0, &rng);
        set_rss(&c, 2e9, 0.002, 0.5, 1073741824.0, &rng);
        bool failed = false;
        for (size_t l = 0; l < 2; l++) {
            c.n_runs = l == 0 ? 15 : 30; /* the first look's runs are the first 15 */
            struct cg_verdict v;
            assert_int_equal(cg_verdict_compute(&b, &c, &look[l], &v, &err), 0);
            failed |= v.metrics[CG_M_PEAK_HOST_RSS].outcome == CG_OUT_FAIL;
            cg_verdict_release(&v);
        }
        fails += failed;
        cg_artifact_release(&b);
        cg_artifact_release(&c);
    }
    print_message("peak host RSS, 15 baseline runs, looks at 15 and 30 current runs, high state "
                  "q = 0.5 on both sides: FAIL at either look %d of %d\n",
                  fails, reps);
    assert_true(fails <= reps * 55 / 1000);
}

/* Processes that land in a high memory state (+1 GiB on 2 GB, a workspace chosen per process)
 * as often on both sides: each side's median falls in either state, and the medians' rule
 * FAILed 24% of 15 v 15 comparisons at q = 0.5. Where the runs of the two sides overlap, a rise
 * of the medians FAILs only when the runs say so (one-sided Mann-Whitney at
 * CG_MEMORY_GROWN_ALPHA); every current run above every baseline run FAILs as before, so memory
 * that is the same in every process still decides from one run. Size under the states, power
 * for +15% in every current run with and without them. */
static void test_verdict__memory_states_do_not_fail_the_medians(void **state)
{
    (void)state;
    const int reps = 400;
    uint64_t rng = 11;
    /* {baseline runs, current runs, q on both sides, noise, most FAILs in percent}: 3 v 1 and
     * 2 v 2 with all the baseline's runs low and all the current's high (1/16) cannot be told
     * from a regression (the sides' runs are alike) */
    const double nulls[][5] = {{15, 15, 0.5, 0.002, 5}, {15, 15, 0.3, 0.002, 5},
                               {5, 5, 0.5, 0.002, 5},   {3, 3, 0.5, 0.002, 5},
                               {15, 3, 0.5, 0.002, 5},  {15, 1, 0.5, 0.002, 5},
                               {3, 1, 0.5, 0.002, 8},   {2, 2, 0.5, 0.002, 10},
                               {15, 15, 0.0, 0.04, 1},  {2, 2, 0.0, 0.04, 1}};
    for (size_t i = 0; i < sizeof(nulls) / sizeof(nulls[0]); i++) {
        int fails = 0;
        for (int k = 0; k < reps; k++)
            fails += rss_outcome((size_t)nulls[i][0], (size_t)nulls[i][1], nulls[i][2], nulls[i][2],
                                 2e9, nulls[i][3], (uint64_t)k * 2 + 1, &rng) == CG_OUT_FAIL;
        print_message("peak host RSS, %g v %g runs, high state q = %.1f on both sides, noise "
                      "+-%g%%: FAIL %d of %d\n",
                      nulls[i][0], nulls[i][1], nulls[i][2], nulls[i][3] * 100, fails, reps);
        assert_true(fails <= reps * nulls[i][4] / 100);
    }
    /* {baseline runs, current runs, q on both sides, effect, noise, least FAIL share in %}:
     * +15% with and without states, and +12% (the limit is +10%) with noisier memory */
    const double alts[][6] = {{15, 15, 0.0, 1.15, 0.002, 100}, {3, 3, 0.0, 1.15, 0.002, 100},
                              {1, 1, 0.0, 1.15, 0.002, 100},   {15, 1, 0.0, 1.15, 0.002, 100},
                              {15, 15, 0.5, 1.15, 0.002, 0},   {15, 15, 0.3, 1.15, 0.002, 0},
                              {15, 1, 0.0, 1.12, 0.005, 95},   {2, 2, 0.0, 1.12, 0.005, 95},
                              {15, 1, 0.0, 1.12, 0.01, 90},    {2, 2, 0.0, 1.12, 0.01, 90},
                              {15, 15, 0.0, 1.12, 0.01, 95}};
    for (size_t i = 0; i < sizeof(alts) / sizeof(alts[0]); i++) {
        int fails = 0;
        for (int k = 0; k < reps; k++)
            fails +=
                rss_outcome((size_t)alts[i][0], (size_t)alts[i][1], alts[i][2], alts[i][2],
                            2e9 * alts[i][3], alts[i][4], (uint64_t)k * 2 + 1, &rng) == CG_OUT_FAIL;
        print_message("peak host RSS, %g v %g runs, high state q = %.1f on both sides, noise "
                      "+-%g%%, %+.0f%% in every current run: FAIL %d of %d\n",
                      alts[i][0], alts[i][1], alts[i][2], alts[i][4] * 100, (alts[i][3] - 1) * 100,
                      fails, reps);
        assert_true(fails >= reps * alts[i][5] / 100);
    }
    /* what the report says: baseline low, low, high; current high, high, low */
    struct cg_thresholds t;
    struct cg_err err;
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);
    struct cg_fixture f = FX(3, 10, 1e7, 0.005, 0.01, -1, 5);
    struct cg_artifact b, c;
    make(&b, &f);
    make(&c, &f);
    const int64_t low = 2000000000, high = low + 1073741824;
    const int64_t vb[3] = {low, low + 4096, high}, vc[3] = {high, high + 8192, low + 4096};
    for (size_t r = 0; r < 3; r++) {
        b.runs[r].summary.peak_host_rss_bytes = vb[r];
        c.runs[r].summary.peak_host_rss_bytes = vc[r];
    }
    struct cg_verdict v;
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    const struct cg_metric_result *r = &v.metrics[CG_M_PEAK_HOST_RSS];
    assert_int_equal(r->outcome, CG_OUT_INCONCLUSIVE);
    assert_false(r->wants_runs); /* the main command's looks are for timing */
    print_message("%s\n", r->note);
    if (strstr(r->note, "memory differs between processes (baseline runs 1.86 GiB to 2.86 GiB, "
                        "current 1.86 GiB to 2.86 GiB)") == NULL ||
        strstr(r->note, "the rise is not significant (p = 0.25 > 0.05); more runs of both sides "
                        "can settle it") == NULL)
        fail_msg("note '%s'", r->note);
    cg_verdict_release(&v);
    cg_artifact_release(&b);
    cg_artifact_release(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verdict__memory_grown_in_some_runs_fails),
        cmocka_unit_test(test_verdict__memory_states_do_not_fail_the_medians),
        cmocka_unit_test(test_verdict__memory_within_the_limit_on_each_side_decides_from_few_runs),
        cmocka_unit_test(test_verdict__headline_of_memory_alone_is_not_the_short_baseline),
        cmocka_unit_test(test_verdict__memory_tests_are_spent_across_looks),
    };
    if (getenv("CG_TEST_FILTER") != NULL) /* one case while working on it: a glob of names */
        cmocka_set_test_filter(getenv("CG_TEST_FILTER"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
