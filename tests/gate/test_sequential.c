/*
 * test_sequential: the alpha-spending arithmetic against values computed independently (the
 * closed forms evaluated by hand or with a separate normal table, written out in each test),
 * the planned looks, and the measure-decide loop on seeded fixture runs supplied by a fake
 * measuring callback: when runs are added, when they are not, the budget, and the confirmation
 * of a FAIL.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fixtures.h"
#include "sequential.h"

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

static void test_sequential__pocock_spending_values(void **state)
{
    (void)state;
    /* A(t) = 0.05 ln(1 + (e - 1) t): t = 1/2 -> 0.05 ln 1.859141 = 0.0310057;
     * t = 2/3 -> 0.05 ln 2.145521 = 0.0381691; t = 8/9 -> 0.05 ln 2.527347 = 0.0463588. */
    assert_near(cg_seq_spent(CG_SPEND_POCOCK, 0.05, 0.5), 0.031005725347913876, 1e-15);
    assert_near(cg_seq_spent(CG_SPEND_POCOCK, 0.05, 2.0 / 3.0), 0.03816912576950707, 1e-15);
    assert_near(cg_seq_spent(CG_SPEND_POCOCK, 0.05, 8.0 / 9.0), 0.04635879613783902, 1e-15);
    assert_near(cg_seq_spent(CG_SPEND_POCOCK, 0.05, 1.0), 0.05, 0);
    assert_near(cg_seq_spent(CG_SPEND_POCOCK, 0.05, 0.0), 0.0, 0);
}

static void test_sequential__obrien_fleming_spending_values(void **state)
{
    (void)state;
    /* A(t) = 2 - 2 Phi(1.959964 / sqrt(t)): t = 1/2 -> 2 * P(Z > 2.771808) = 0.0055746;
     * t = 2/3 -> 2 * P(Z > 2.400456) = 0.0163747; t = 8/9 -> 2 * P(Z > 2.078851) = 0.0376306. */
    assert_near(cg_seq_spent(CG_SPEND_OBRIEN_FLEMING, 0.05, 0.5), 0.005574596680784527, 1e-9);
    assert_near(cg_seq_spent(CG_SPEND_OBRIEN_FLEMING, 0.05, 2.0 / 3.0), 0.01637466645004837, 1e-9);
    assert_near(cg_seq_spent(CG_SPEND_OBRIEN_FLEMING, 0.05, 8.0 / 9.0), 0.03763061215432417, 1e-9);
    assert_near(cg_seq_spent(CG_SPEND_OBRIEN_FLEMING, 0.05, 1.0), 0.05, 0);
}

static void test_sequential__plan_information_fractions(void **state)
{
    (void)state;
    /* m = 5 baseline runs, looks at 5, 10, 15 current runs: I = 25/10, 50/15, 75/20 =
     * 2.5, 3.333, 3.75; t = 2/3, 8/9, 1. Pocock levels 0.0381691, 0.0463588 - 0.0381691,
     * 0.05 - 0.0463588, summing to 0.05. */
    struct cg_seq_plan p;
    struct cg_err err;
    assert_int_equal(cg_seq_plan_make(CG_SPEND_POCOCK, 5, 5, 0, 15, &p, &err), 0);
    assert_int_equal(p.n_looks, 3);
    assert_int_equal(p.runs_at[0], 5);
    assert_int_equal(p.runs_at[1], 10);
    assert_int_equal(p.runs_at[2], 15);
    assert_near(p.info_at[0], 2.0 / 3.0, 1e-15);
    assert_near(p.info_at[1], 8.0 / 9.0, 1e-15);
    assert_near(p.info_at[2], 1.0, 0);
    assert_near(cg_seq_look_alpha(&p, CG_M_STEP_TIME_MEAN, 0, 0.05), 0.03816912576950707, 1e-14);
    assert_near(cg_seq_look_alpha(&p, CG_M_STEP_TIME_MEAN, 1, 0.05),
                0.04635879613783902 - 0.03816912576950707, 1e-14);
    assert_near(cg_seq_look_alpha(&p, CG_M_STEP_TIME_MEAN, 2, 0.05), 0.05 - 0.04635879613783902,
                1e-14);
    assert_near(cg_seq_look_alpha(&p, CG_M_STEP_TIME_MEAN, 3, 0.05), 0.0, 0);
}

/* 2 baseline runs, looks at 2, 4 and 6 runs (smoke): Mann-Whitney at 2 v 2 or 2 v 4 cannot
 * reach p <= 0.05, so the mean's early looks pass their share on; the floor is compared over
 * the steps there (fewer than 3 runs a side) and keeps a level at every look. */
static void test_sequential__floor_keeps_its_early_looks(void **state)
{
    (void)state;
    struct cg_seq_plan p;
    struct cg_err err;
    double mean[CG_SEQ_MAX_LOOKS], floor_l[CG_SEQ_MAX_LOOKS];
    assert_int_equal(cg_seq_plan_make(CG_SPEND_POCOCK, 2, 2, 0, 6, &p, &err), 0);
    assert_int_equal(p.n_looks, 3);
    cg_seq_levels(&p, CG_M_STEP_TIME_MEAN, 0.05, mean);
    cg_seq_levels(&p, CG_M_STEP_TIME_FLOOR, 0.05, floor_l);
    assert_near(mean[0], 0.0, 0);
    assert_true(floor_l[0] > 0.01);
    double sum = 0.0;
    for (size_t k = 0; k < 3; k++) {
        assert_true(floor_l[k] > 0.0);
        sum += floor_l[k];
    }
    assert_near(sum, 0.05, 1e-12);
    struct cg_thresholds t, look;
    assert_int_equal(cg_thresholds_load("smoke", &t, &err), 0);
    cg_seq_look_thresholds(&p, 0, &t, &look);
    assert_near(look.metric[CG_M_STEP_TIME_FLOOR].alpha, floor_l[0], 1e-15);
}

/* Pairs (canary-gate ab), 15 then 5 at a time up to 30: both sides grow, so the information is
 * proportional to the pairs, t = 1/2, 2/3, 5/6, 1; Pocock levels are the increments of
 * A(t) = 0.05 ln(1 + (e - 1) t). */
static void test_sequential__paired_plan_information_fractions(void **state)
{
    (void)state;
    struct cg_seq_plan p;
    struct cg_err err;
    assert_int_equal(cg_seq_plan_make_paired(CG_SPEND_POCOCK, 15, 5, 30, &p, &err), 0);
    assert_true(p.paired);
    assert_int_equal(p.n_looks, 4);
    assert_int_equal(p.runs_at[3], 30);
    assert_near(p.info_at[0], 0.5, 1e-15);
    assert_near(p.info_at[1], 2.0 / 3.0, 1e-15);
    assert_near(p.info_at[2], 5.0 / 6.0, 1e-15);
    const double spent[] = {0.031005725347913876, 0.03816912576950707, 0.04443367356954783, 0.05};
    double sum = 0.0;
    for (size_t k = 0; k < 4; k++) {
        double level = cg_seq_look_alpha(&p, CG_M_STEP_TIME_MEAN, k, 0.05);
        assert_near(level, spent[k] - (k ? spent[k - 1] : 0.0), 1e-14);
        sum += level;
    }
    assert_near(sum, 0.05, 1e-14);
}

/* Pairs from 4 up to 8: the signed-rank test over 4 pairs cannot go below 2^-4 = 0.0625, so the
 * mean's first look passes its share on; the floor's Mann-Whitney over 4 runs a side reaches
 * 1/70 and keeps the first look's share. */
static void test_sequential__paired_plan_smallest_p(void **state)
{
    (void)state;
    struct cg_seq_plan p;
    struct cg_err err;
    double mean[CG_SEQ_MAX_LOOKS], floor_l[CG_SEQ_MAX_LOOKS];
    assert_int_equal(cg_seq_plan_make_paired(CG_SPEND_POCOCK, 4, 4, 8, &p, &err), 0);
    assert_int_equal(p.n_looks, 2);
    cg_seq_levels(&p, CG_M_STEP_TIME_MEAN, 0.05, mean);
    cg_seq_levels(&p, CG_M_STEP_TIME_FLOOR, 0.05, floor_l);
    assert_near(mean[0], 0.0, 0);
    assert_near(mean[1], 0.05, 1e-15);
    assert_near(floor_l[0], 0.031005725347913876, 1e-14);
    assert_true(floor_l[0] > 1.0 / 70.0);
    assert_near(floor_l[0] + floor_l[1], 0.05, 1e-14);
    /* the unpaired plan of 4 baseline runs gives the mean's first look a share (1/70 reachable) */
    assert_int_equal(cg_seq_plan_make(CG_SPEND_POCOCK, 4, 4, 4, 8, &p, &err), 0);
    assert_true(cg_seq_look_alpha(&p, CG_M_STEP_TIME_MEAN, 0, 0.05) > 0.0);
}

static void test_sequential__plan_last_batch_reaches_max(void **state)
{
    (void)state;
    struct cg_seq_plan p;
    struct cg_err err;
    assert_int_equal(cg_seq_plan_make(CG_SPEND_POCOCK, 5, 5, 4, 15, &p, &err), 0);
    assert_int_equal(p.n_looks, 4);
    size_t want[] = {5, 9, 13, 15};
    for (size_t k = 0; k < 4; k++)
        assert_int_equal(p.runs_at[k], want[k]);
}

static void test_sequential__single_look_keeps_full_alpha(void **state)
{
    (void)state;
    struct cg_seq_plan p;
    struct cg_err err;
    assert_int_equal(cg_seq_plan_make(CG_SPEND_POCOCK, 5, 5, 0, 3, &p, &err), 0);
    assert_int_equal(p.n_looks, 1);
    assert_near(cg_seq_look_alpha(&p, CG_M_STEP_TIME_MEAN, 0, 0.05), 0.05, 0);
    assert_int_equal(cg_seq_plan_make(CG_SPEND_OBRIEN_FLEMING, 5, 5, 0, 5, &p, &err), 0);
    assert_near(cg_seq_look_alpha(&p, CG_M_STEP_TIME_MEAN, 0, 0.01), 0.01, 0);
}

static void test_sequential__bonferroni_splits_equally(void **state)
{
    (void)state;
    struct cg_seq_plan p;
    struct cg_err err;
    assert_int_equal(cg_seq_plan_make(CG_SPEND_BONFERRONI, 5, 5, 5, 20, &p, &err), 0);
    assert_int_equal(p.n_looks, 4);
    for (size_t k = 0; k < 4; k++)
        assert_near(cg_seq_look_alpha(&p, CG_M_STEP_TIME_MEAN, k, 0.05), 0.0125, 1e-15);
}

static void test_sequential__levels_sum_to_alpha(void **state)
{
    (void)state;
    /* Every spending function, many shapes of plan: each level is 0 or reachable by the exact
     * test at its look, the levels sum to alpha (the false-alarm bound) and never exceed it on
     * the way; they sum to 0 only when not even the last look at full alpha could reject. */
    enum cg_spend all[] = {CG_SPEND_POCOCK, CG_SPEND_OBRIEN_FLEMING, CG_SPEND_BONFERRONI};
    struct cg_err err;
    for (size_t s = 0; s < 3; s++) {
        for (size_t m = 1; m <= 20; m += 3) {
            for (size_t first = 1; first <= 10; first += 2) {
                for (size_t batch = 1; batch <= 6; batch++) {
                    struct cg_seq_plan p;
                    assert_int_equal(cg_seq_plan_make(all[s], m, first, batch, first * 4, &p, &err),
                                     0);
                    double sum = 0.0;
                    for (size_t k = 0; k < p.n_looks; k++) {
                        double a = cg_seq_look_alpha(&p, CG_M_STEP_TIME_MEAN, k, 0.05);
                        assert_true(a == 0.0 || a >= p.smallest_p_at[k]);
                        sum += a;
                        assert_true(sum <= 0.05 * (1 + 1e-12));
                    }
                    if (sum == 0.0)
                        assert_true(p.smallest_p_at[p.n_looks - 1] > 0.05);
                    else
                        assert_near(sum, 0.05, 1e-12);
                }
            }
        }
    }
}

static void test_sequential__looks_that_cannot_reject_pass_their_share_on(void **state)
{
    (void)state;
    /* m = 3, looks at 3, 6, 9 current runs. Smallest exact p: 1/C(6,3) = 0.05,
     * 1/C(9,3) = 0.0119, 1/C(12,3) = 0.00455. Pocock over all three gives 0.0382, 0.0082,
     * 0.0036: the first is below 0.05, so it goes; over looks 2 and 3 (t = 8/9, 1): 0.0464 and
     * 0.0036, the last below 0.00455, so it goes too; look 2 alone takes 0.05. */
    struct cg_seq_plan p;
    struct cg_err err;
    double level[CG_SEQ_MAX_LOOKS];
    assert_int_equal(cg_seq_plan_make(CG_SPEND_POCOCK, 3, 3, 3, 9, &p, &err), 0);
    assert_near(p.smallest_p_at[0], 1.0 / 20.0, 1e-15);
    assert_near(p.smallest_p_at[1], 1.0 / 84.0, 1e-15);
    assert_near(p.smallest_p_at[2], 1.0 / 220.0, 1e-15);
    cg_seq_levels(&p, CG_M_STEP_TIME_MEAN, 0.05, level);
    assert_near(level[0], 0.0, 0);
    assert_near(level[1], 0.05, 1e-15);
    assert_near(level[2], 0.0, 0);
    /* 5 runs a side and more reach far below their shares: nothing changes. */
    assert_int_equal(cg_seq_plan_make(CG_SPEND_POCOCK, 5, 5, 5, 15, &p, &err), 0);
    assert_near(p.smallest_p_at[0], 1.0 / 252.0, 1e-15);
    cg_seq_levels(&p, CG_M_STEP_TIME_MEAN, 0.05, level);
    assert_near(level[0], 0.03816912576950707, 1e-14);
    /* 2 against 2 can never reach 0.05 (1/6): no look rejects. */
    assert_int_equal(cg_seq_plan_make(CG_SPEND_POCOCK, 2, 2, 0, 2, &p, &err), 0);
    cg_seq_levels(&p, CG_M_STEP_TIME_MEAN, 0.05, level);
    assert_near(level[0], 0.0, 0);
}

static void test_sequential__plan_errors(void **state)
{
    (void)state;
    struct cg_seq_plan p;
    struct cg_err err;
    cg_err_init(&err);
    assert_int_equal(cg_seq_plan_make(CG_SPEND_POCOCK, 5, 1, 1, 1000, &p, &err), CG_EINPUT);
    assert_non_null(strstr(err.msg, "looks"));
    assert_int_equal(cg_seq_plan_make(CG_SPEND_POCOCK, 0, 5, 1, 10, &p, &err), CG_EINPUT);
    enum cg_spend s;
    assert_int_equal(cg_spend_parse("obrien-fleming", &s), 0);
    assert_int_equal(s, CG_SPEND_OBRIEN_FLEMING);
    assert_int_equal(cg_spend_parse("pocok", &s), CG_EINPUT);
    assert_string_equal(cg_spend_name(CG_SPEND_BONFERRONI), "bonferroni");
}

static void test_sequential__look_thresholds_change_only_the_levels(void **state)
{
    (void)state;
    struct cg_thresholds t, lt;
    struct cg_err err;
    struct cg_seq_plan p;
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);
    assert_int_equal(cg_seq_plan_make(CG_SPEND_BONFERRONI, 5, 5, 5, 10, &p, &err), 0);
    cg_seq_look_thresholds(&p, 1, &t, &lt);
    assert_near(lt.metric[CG_M_STEP_TIME_MEAN].alpha, 0.025, 1e-15);
    assert_near(lt.metric[CG_M_STEP_TIME_P95].alpha, 0.025, 1e-15);
    assert_near(lt.metric[CG_M_TOKENS_PER_SEC].alpha, 0.025, 1e-15);
    assert_near(lt.metric[CG_M_STEP_TIME_MEAN].max_regression_pct,
                t.metric[CG_M_STEP_TIME_MEAN].max_regression_pct, 0);
    /* memory's tests of the runs are spent as the step time mean's; its limits stay */
    assert_near(lt.metric[CG_M_PEAK_HOST_RSS].alpha, 0.025, 1e-15);
    assert_near(lt.metric[CG_M_PEAK_DEVICE_MEMORY].alpha, 0.025, 1e-15);
    assert_near(lt.metric[CG_M_PEAK_HOST_RSS].max_regression_pct,
                t.metric[CG_M_PEAK_HOST_RSS].max_regression_pct, 0);
    assert_near(lt.metric[CG_M_PEAK_HOST_RSS].max_regression_bytes,
                t.metric[CG_M_PEAK_HOST_RSS].max_regression_bytes, 0);
    assert_int_equal(lt.runs, t.runs);
}

/* ---- the loop, with fixture runs from a fake measuring callback --------------------------- */

struct fake {
    struct cg_fixture cur, conf; /* templates of added and of confirmation runs */
    uint64_t seed;
    double secs_per_run;
    size_t calls, confirm_calls, added;
};

static int fake_measure(void *ctx, struct cg_artifact *a, size_t n, bool confirming,
                        double *seconds, struct cg_err *err)
{
    (void)err;
    struct fake *fk = ctx;
    struct cg_fixture f = confirming ? fk->conf : fk->cur;
    struct cg_artifact tmp;
    f.runs = n;
    f.seed = fk->seed++;
    cg_artifact_init(&tmp);
    int rc = cg_fixture_make(&tmp, &f);
    if (rc == 0 && a->n_runs == 0 && a->env.canary_hash == NULL)
        rc = cg_artifact_copy_header(a, &tmp);
    if (rc == 0)
        rc = cg_artifact_append_runs(a, &tmp);
    cg_artifact_release(&tmp);
    *seconds = fk->secs_per_run * (double)n;
    fk->calls++;
    fk->confirm_calls += confirming;
    fk->added += confirming ? 0 : n;
    return rc;
}

#define FX(runs, mean, rn, seed)                                                                   \
    {                                                                                              \
        runs, 30, mean, rn, 0.02, 1024, -1, 200000000, 3, seed                                     \
    }

struct loop {
    struct cg_artifact base, cur, conf;
    struct cg_thresholds t;
    struct cg_seq s;
    struct cg_err err;
};

static void loop_setup(struct loop *l, struct cg_fixture base, struct cg_fixture cur)
{
    cg_artifact_init(&l->base);
    cg_artifact_init(&l->cur);
    cg_artifact_init(&l->conf);
    cg_err_init(&l->err);
    assert_int_equal(cg_fixture_make(&l->base, &base), 0);
    assert_int_equal(cg_fixture_make(&l->cur, &cur), 0);
    assert_int_equal(cg_thresholds_load("default", &l->t, &l->err), 0);
}

static void loop_teardown(struct loop *l)
{
    cg_seq_release(&l->s);
    cg_artifact_release(&l->base);
    cg_artifact_release(&l->cur);
    cg_artifact_release(&l->conf);
}

static void test_sequential__same_speed_passes_at_first_look(void **state)
{
    (void)state;
    struct loop l;
    loop_setup(&l, (struct cg_fixture)FX(5, 1e7, 0.01, 1), (struct cg_fixture)FX(5, 1e7, 0.01, 2));
    struct fake fk = {FX(0, 1e7, 0.01, 0), FX(0, 1e7, 0.01, 0), 100, 1.0, 0, 0, 0};
    struct cg_seq_opts o = {15, 0, 0, CG_SPEND_POCOCK, true, 0, false};
    assert_int_equal(
        cg_seq_decide(&l.base, &l.cur, &l.conf, &l.t, &o, 5.0, fake_measure, &fk, &l.s, &l.err), 0);
    assert_int_equal(l.s.verdict.overall, CG_OUT_PASS);
    assert_int_equal(fk.calls, 0);
    assert_int_equal(l.s.info.looks, 1);
    assert_int_equal(l.s.info.planned_looks, 3);
    assert_int_equal(l.s.info.confirm, CG_CONFIRM_NOT_NEEDED);
    assert_ptr_equal(l.s.verdict.seq, &l.s.info);
    /* The first look tests at its share of alpha, and the verdict says so. */
    assert_near(l.s.verdict.thresholds->metric[CG_M_STEP_TIME_MEAN].alpha, 0.03816912576950707,
                1e-15);
    assert_near(l.s.info.look_alpha[CG_M_STEP_TIME_MEAN], 0.03816912576950707, 1e-15);
    assert_near(l.s.info.alpha[CG_M_STEP_TIME_MEAN], 0.05, 0);
    loop_teardown(&l);
}

static void test_sequential__too_few_runs_adds_a_batch_then_fails_confirmed(void **state)
{
    (void)state;
    /* 2 current runs (min_runs is 3): inconclusive; 2 more make 4 runs, 20% slower with little
     * noise: Mann-Whitney 5 v 4 gives p = 1/126 = 0.0079 below the second look's level
     * (looks at 2, 4, 6: t = 0.524, 0.815, 1; Pocock 0.0117): FAIL, then confirmed by 5 fresh
     * runs just as slow. */
    struct loop l;
    loop_setup(&l, (struct cg_fixture)FX(5, 1e7, 0.01, 1),
               (struct cg_fixture)FX(2, 1.2e7, 0.01, 2));
    struct fake fk = {FX(0, 1.2e7, 0.01, 0), FX(0, 1.2e7, 0.01, 0), 100, 1.0, 0, 0, 0};
    struct cg_seq_opts o = {6, 2, 0, CG_SPEND_POCOCK, true, 5, false};
    assert_int_equal(
        cg_seq_decide(&l.base, &l.cur, &l.conf, &l.t, &o, 2.0, fake_measure, &fk, &l.s, &l.err), 0);
    assert_int_equal(fk.added, 2);
    assert_int_equal(l.cur.n_runs, 4);
    assert_int_equal(l.s.info.looks, 2);
    assert_int_equal(l.s.info.first_runs, 2);
    assert_int_equal(l.s.info.current_runs, 4);
    assert_near(l.s.info.canary_s, 4.0, 0);
    assert_near(l.s.verdict.metrics[CG_M_STEP_TIME_MEAN].p_value, 1.0 / 126.0, 1e-12);
    assert_int_equal(fk.confirm_calls, 1);
    assert_int_equal(l.conf.n_runs, 5);
    assert_int_equal(l.s.info.confirm, CG_CONFIRM_CONFIRMED);
    assert_int_equal(l.s.info.confirm_runs, 5);
    assert_int_equal(l.s.info.confirmation[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_FAIL);
    assert_near(l.s.info.confirmation[CG_M_STEP_TIME_MEAN].p_value, 1.0 / 252.0, 1e-12);
    assert_int_equal(l.s.verdict.overall, CG_OUT_FAIL);
    loop_teardown(&l);
}

static void test_sequential__unconfirmed_fail_is_inconclusive(void **state)
{
    (void)state;
    struct loop l;
    loop_setup(&l, (struct cg_fixture)FX(5, 1e7, 0.01, 1),
               (struct cg_fixture)FX(5, 1.2e7, 0.01, 2));
    struct fake fk = {FX(0, 1e7, 0.01, 0), FX(0, 1e7, 0.01, 0), 100, 1.0, 0, 0, 0};
    struct cg_seq_opts o = {15, 0, 0, CG_SPEND_POCOCK, true, 0, false};
    assert_int_equal(
        cg_seq_decide(&l.base, &l.cur, &l.conf, &l.t, &o, 5.0, fake_measure, &fk, &l.s, &l.err), 0);
    assert_int_equal(fk.added, 0);
    assert_int_equal(fk.confirm_calls, 1);
    assert_int_equal(l.conf.n_runs, 5); /* as many as the first look */
    assert_int_equal(l.s.info.confirm, CG_CONFIRM_REJECTED);
    const struct cg_metric_result *r = &l.s.verdict.metrics[CG_M_STEP_TIME_MEAN];
    assert_int_equal(r->outcome, CG_OUT_INCONCLUSIVE);
    assert_non_null(strstr(r->note, "not confirmed: 5 fresh runs"));
    assert_int_equal(l.s.verdict.overall, CG_OUT_INCONCLUSIVE);
    loop_teardown(&l);
}

static void test_sequential__no_confirm_reports_the_fail(void **state)
{
    (void)state;
    struct loop l;
    loop_setup(&l, (struct cg_fixture)FX(5, 1e7, 0.01, 1),
               (struct cg_fixture)FX(5, 1.2e7, 0.01, 2));
    struct fake fk = {FX(0, 1e7, 0.01, 0), FX(0, 1e7, 0.01, 0), 100, 1.0, 0, 0, 0};
    struct cg_seq_opts o = {15, 0, 0, CG_SPEND_POCOCK, false, 0, false};
    assert_int_equal(
        cg_seq_decide(&l.base, &l.cur, NULL, &l.t, &o, 5.0, fake_measure, &fk, &l.s, &l.err), 0);
    assert_int_equal(fk.calls, 0);
    assert_int_equal(l.s.info.confirm, CG_CONFIRM_OFF);
    assert_int_equal(l.s.verdict.overall, CG_OUT_FAIL);
    loop_teardown(&l);
}

static void test_sequential__budget_stops_before_a_batch_that_does_not_fit(void **state)
{
    (void)state;
    /* 2 runs took 10 s: 2 more are estimated at 10 s, 20 s in all, over the 15 s budget. */
    struct loop l;
    loop_setup(&l, (struct cg_fixture)FX(5, 1e7, 0.01, 1),
               (struct cg_fixture)FX(2, 1.2e7, 0.01, 2));
    struct fake fk = {FX(0, 1.2e7, 0.01, 0), FX(0, 1.2e7, 0.01, 0), 100, 5.0, 0, 0, 0};
    struct cg_seq_opts o = {6, 2, 15.0, CG_SPEND_POCOCK, true, 0, false};
    assert_int_equal(
        cg_seq_decide(&l.base, &l.cur, &l.conf, &l.t, &o, 10.0, fake_measure, &fk, &l.s, &l.err),
        0);
    assert_int_equal(fk.calls, 0);
    assert_true(l.s.info.budget_stopped);
    assert_int_equal(l.s.verdict.overall, CG_OUT_INCONCLUSIVE);
    /* the report says why no runs were added */
    const char *note = l.s.verdict.metrics[CG_M_STEP_TIME_MEAN].note;
    if (strstr(note, "2 current runs measured, the budget (--budget) had no time for more") == NULL)
        fail_msg("note: %s", note);
    cg_seq_release(&l.s);
    /* With 20 s the batch fits. */
    o.budget_s = 20.0;
    assert_int_equal(
        cg_seq_decide(&l.base, &l.cur, &l.conf, &l.t, &o, 10.0, fake_measure, &fk, &l.s, &l.err),
        0);
    assert_int_equal(fk.added, 2);
    assert_false(l.s.info.budget_stopped);
    loop_teardown(&l);
}

/* Whole runs met by load: each of the first n runs of a becomes 1.7 times slower. */
static void load_runs(struct cg_artifact *a, size_t n)
{
    for (size_t r = 0; r < n; r++) {
        for (size_t i = 0; i < a->runs[r].n_steps; i++)
            a->runs[r].steps[i].wall_ns = a->runs[r].steps[i].wall_ns * 17 / 10;
        cg_run_summarize(&a->runs[r]);
    }
}

/* A real 20% slowdown whose first look met load in 3 of its 5 runs: 2 fast runs are too few
 * for the floor, so runs are added (quiet ones), the floor FAILs and the FAIL is confirmed. */
static void test_sequential__too_few_fast_runs_add_runs(void **state)
{
    (void)state;
    struct loop l;
    loop_setup(&l, (struct cg_fixture)FX(5, 1e7, 0.005, 1),
               (struct cg_fixture)FX(5, 1.2e7, 0.005, 2));
    load_runs(&l.cur, 3);
    struct fake fk = {FX(0, 1.2e7, 0.005, 0), FX(0, 1.2e7, 0.005, 0), 100, 1.0, 0, 0, 0};
    struct cg_seq_opts o = {15, 0, 0, CG_SPEND_POCOCK, true, 0, false};
    assert_int_equal(
        cg_seq_decide(&l.base, &l.cur, &l.conf, &l.t, &o, 5.0, fake_measure, &fk, &l.s, &l.err), 0);
    assert_true(fk.added >= 5);
    assert_true(l.s.info.looks >= 2);
    assert_int_equal(l.s.verdict.metrics[CG_M_STEP_TIME_FLOOR].outcome, CG_OUT_FAIL);
    assert_int_equal(l.s.info.confirm, CG_CONFIRM_CONFIRMED);
    assert_int_equal(l.s.verdict.overall, CG_OUT_FAIL);
    loop_teardown(&l);
}

/* The baseline met load in 3 of its 5 runs: no number of current runs can fix that. */
static void test_sequential__too_few_baseline_fast_runs_add_none(void **state)
{
    (void)state;
    struct loop l;
    loop_setup(&l, (struct cg_fixture)FX(5, 1e7, 0.005, 1),
               (struct cg_fixture)FX(5, 1.2e7, 0.005, 2));
    load_runs(&l.base, 3);
    struct fake fk = {FX(0, 1.2e7, 0.005, 0), FX(0, 1.2e7, 0.005, 0), 100, 1.0, 0, 0, 0};
    struct cg_seq_opts o = {15, 0, 0, CG_SPEND_POCOCK, true, 0, false};
    assert_int_equal(
        cg_seq_decide(&l.base, &l.cur, &l.conf, &l.t, &o, 5.0, fake_measure, &fk, &l.s, &l.err), 0);
    assert_int_equal(fk.calls, 0);
    assert_int_equal(l.s.verdict.overall, CG_OUT_INCONCLUSIVE);
    assert_non_null(strstr(l.s.verdict.metrics[CG_M_STEP_TIME_FLOOR].note,
                           "record the baseline again"));
    loop_teardown(&l);
}

static void test_sequential__runs_do_not_help_when_the_baseline_is_short(void **state)
{
    (void)state;
    /* 2 baseline runs, min_runs 3: only a new baseline could decide. */
    struct loop l;
    loop_setup(&l, (struct cg_fixture)FX(2, 1e7, 0.01, 1),
               (struct cg_fixture)FX(5, 1.2e7, 0.01, 2));
    struct fake fk = {FX(0, 1.2e7, 0.01, 0), FX(0, 1.2e7, 0.01, 0), 100, 1.0, 0, 0, 0};
    struct cg_seq_opts o = {15, 0, 0, CG_SPEND_POCOCK, true, 0, false};
    assert_int_equal(
        cg_seq_decide(&l.base, &l.cur, &l.conf, &l.t, &o, 5.0, fake_measure, &fk, &l.s, &l.err), 0);
    assert_int_equal(l.s.verdict.overall, CG_OUT_INCONCLUSIVE);
    assert_false(cg_seq_more_runs_help(&l.s.verdict));
    assert_int_equal(fk.calls, 0);
    loop_teardown(&l);
}

static void test_sequential__runs_do_not_help_on_another_machine(void **state)
{
    (void)state;
    /* A significant regression measured on another CPU is inconclusive by the machine rule. */
    struct loop l;
    loop_setup(&l, (struct cg_fixture)FX(5, 1e7, 0.01, 1),
               (struct cg_fixture)FX(5, 1.2e7, 0.01, 2));
    free(l.cur.env.cpu_model);
    l.cur.env.cpu_model = strdup("Other CPU @ 2.0GHz");
    struct fake fk = {FX(0, 1.2e7, 0.01, 0), FX(0, 1.2e7, 0.01, 0), 100, 1.0, 0, 0, 0};
    struct cg_seq_opts o = {15, 0, 0, CG_SPEND_POCOCK, true, 0, false};
    assert_int_equal(
        cg_seq_decide(&l.base, &l.cur, &l.conf, &l.t, &o, 5.0, fake_measure, &fk, &l.s, &l.err), 0);
    assert_int_equal(l.s.verdict.overall, CG_OUT_INCONCLUSIVE);
    assert_true(l.s.verdict.downgraded);
    assert_int_equal(fk.calls, 0);
    loop_teardown(&l);
}

static void test_sequential__few_runs_add_until_no_later_look_can_reject(void **state)
{
    (void)state;
    /* A 10% change under +-15% run noise, 3 runs a side: the first look cannot reject (its level
     * is 0, see above) and is inconclusive, so 3 runs are added; the second look (level 0.05) is
     * the last that can reject, so no more runs follow whatever it says. */
    struct loop l;
    loop_setup(&l, (struct cg_fixture)FX(3, 1e7, 0.15, 11),
               (struct cg_fixture)FX(3, 1.1e7, 0.15, 12));
    struct fake fk = {FX(0, 1.1e7, 0.15, 0), FX(0, 1.1e7, 0.15, 0), 100, 1.0, 0, 0, 0};
    struct cg_seq_opts o = {9, 3, 0, CG_SPEND_POCOCK, false, 0, false};
    assert_int_equal(
        cg_seq_decide(&l.base, &l.cur, NULL, &l.t, &o, 3.0, fake_measure, &fk, &l.s, &l.err), 0);
    assert_int_equal(fk.calls, 1);
    assert_int_equal(l.cur.n_runs, 6);
    assert_int_equal(l.s.info.looks, 2);
    assert_int_equal(l.s.info.planned_looks, 3);
    assert_int_equal(l.s.info.current_runs, 6);
    assert_near(l.s.info.look_alpha[CG_M_STEP_TIME_MEAN], 0.05, 1e-15);
    assert_near(l.s.info.canary_s, 6.0, 0);
    loop_teardown(&l);
}

/* The looks line names the level the deciding look tested at. With 2 runs a side the mean, p95
 * and tokens/sec cannot reach alpha at the first look (their level there is 0) while the floor
 * over the steps can: the line gave "tested at alpha 0 of 0.05", as if nothing was tested. It
 * names the metric whose level it gives, the highest of the look. */
static void test_sequential__looks_line_names_a_level_that_was_tested(void **state)
{
    (void)state;
    struct cg_seq_info i;
    memset(&i, 0, sizeof(i));
    i.spend = CG_SPEND_POCOCK;
    i.looks = 1;
    i.planned_looks = 2;
    i.first_runs = i.current_runs = i.baseline_runs = 2;
    i.max_runs = 4;
    for (int m = 0; m < CG_M_COUNT; m++)
        i.alpha[m] = 0.05;
    i.look_alpha[CG_M_STEP_TIME_FLOOR] = 0.0294;
    char line[512];
    cg_seq_describe_looks(&i, line, sizeof(line));
    assert_null(strstr(line, "alpha 0 of"));
    assert_non_null(strstr(line, "tested at alpha 0.0294 of 0.05 (step_time_floor)"));
    i.look_alpha[CG_M_STEP_TIME_MEAN] = 0.031;
    cg_seq_describe_looks(&i, line, sizeof(line));
    assert_non_null(strstr(line, "tested at alpha 0.031 of 0.05 (step_time_mean)"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sequential__pocock_spending_values),
        cmocka_unit_test(test_sequential__looks_line_names_a_level_that_was_tested),
        cmocka_unit_test(test_sequential__obrien_fleming_spending_values),
        cmocka_unit_test(test_sequential__plan_information_fractions),
        cmocka_unit_test(test_sequential__floor_keeps_its_early_looks),
        cmocka_unit_test(test_sequential__paired_plan_information_fractions),
        cmocka_unit_test(test_sequential__paired_plan_smallest_p),
        cmocka_unit_test(test_sequential__plan_last_batch_reaches_max),
        cmocka_unit_test(test_sequential__single_look_keeps_full_alpha),
        cmocka_unit_test(test_sequential__bonferroni_splits_equally),
        cmocka_unit_test(test_sequential__levels_sum_to_alpha),
        cmocka_unit_test(test_sequential__looks_that_cannot_reject_pass_their_share_on),
        cmocka_unit_test(test_sequential__plan_errors),
        cmocka_unit_test(test_sequential__look_thresholds_change_only_the_levels),
        cmocka_unit_test(test_sequential__same_speed_passes_at_first_look),
        cmocka_unit_test(test_sequential__too_few_runs_adds_a_batch_then_fails_confirmed),
        cmocka_unit_test(test_sequential__unconfirmed_fail_is_inconclusive),
        cmocka_unit_test(test_sequential__no_confirm_reports_the_fail),
        cmocka_unit_test(test_sequential__budget_stops_before_a_batch_that_does_not_fit),
        cmocka_unit_test(test_sequential__too_few_fast_runs_add_runs),
        cmocka_unit_test(test_sequential__too_few_baseline_fast_runs_add_none),
        cmocka_unit_test(test_sequential__runs_do_not_help_when_the_baseline_is_short),
        cmocka_unit_test(test_sequential__runs_do_not_help_on_another_machine),
        cmocka_unit_test(test_sequential__few_runs_add_until_no_later_look_can_reject),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
