/* test_verdict: every outcome, table-driven over seeded fixture artifacts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fixtures.h"
#include "utf8check.h"
#include "report.h"
#include "stats.h"
#include "verdict.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum mutation { MUT_NONE, MUT_OTHER_CPU, MUT_NEW_OP, MUT_FEWER_TOKENS };

struct vcase {
    const char *name;
    const char *thresholds;
    struct cg_fixture base, cur;
    enum mutation mutate;
    bool env_gate;
    enum cg_outcome overall;
    enum cg_metric metric;
    enum cg_outcome metric_outcome;
    bool within_run;
};

#define FX(runs, steps, mean, rn, sn, dev, seed) \
    {runs, steps, mean, rn, sn, 1024, dev, 200000000, 3, seed}

static const struct vcase cases[] = {
    {"same speed passes", "default", FX(5, 30, 1e7, 0.01, 0.02, -1, 1),
     FX(5, 30, 1e7, 0.01, 0.02, -1, 2), MUT_NONE, false, CG_OUT_PASS, CG_M_STEP_TIME_MEAN,
     CG_OUT_PASS, false},
    {"20% slower fails", "default", FX(5, 30, 1e7, 0.01, 0.02, -1, 1),
     FX(5, 30, 1.2e7, 0.01, 0.02, -1, 2), MUT_NONE, false, CG_OUT_FAIL, CG_M_STEP_TIME_MEAN,
     CG_OUT_FAIL, false},
    {"20% slower with too few runs is inconclusive", "default", FX(2, 30, 1e7, 0.01, 0.02, -1, 1),
     FX(2, 30, 1.2e7, 0.01, 0.02, -1, 2), MUT_NONE, false, CG_OUT_INCONCLUSIVE,
     CG_M_STEP_TIME_MEAN, CG_OUT_INCONCLUSIVE, true},
    {"noisy 8% change is inconclusive", "default", FX(3, 30, 1e7, 0.15, 0.02, -1, 11),
     FX(3, 30, 1.08e7, 0.15, 0.02, -1, 12), MUT_NONE, false, CG_OUT_INCONCLUSIVE,
     CG_M_STEP_TIME_MEAN, CG_OUT_INCONCLUSIVE, false},
    {"20% faster is an improvement and passes", "default", FX(5, 30, 1e7, 0.01, 0.02, -1, 1),
     FX(5, 30, 0.8e7, 0.01, 0.02, -1, 2), MUT_NONE, false, CG_OUT_PASS, CG_M_STEP_TIME_MEAN,
     CG_OUT_IMPROVED, false},
    {"device memory growth fails", "default", FX(5, 30, 1e7, 0.01, 0.02, 1000000000, 1),
     FX(5, 30, 1e7, 0.01, 0.02, 1100000000, 2), MUT_NONE, false, CG_OUT_FAIL,
     CG_M_PEAK_DEVICE_MEMORY, CG_OUT_FAIL, false},
    {"device memory gates, host rss only shown", "default", FX(5, 30, 1e7, 0.01, 0.02, 1000000000, 1),
     FX(5, 30, 1e7, 0.01, 0.02, 1000000000, 2), MUT_NONE, false, CG_OUT_PASS, CG_M_PEAK_HOST_RSS,
     CG_OUT_NOT_GATED, false},
    {"small absolute memory growth passes", "default", FX(5, 30, 1e7, 0.01, 0.02, 10000000, 1),
     FX(5, 30, 1e7, 0.01, 0.02, 11000000, 2), MUT_NONE, false, CG_OUT_PASS,
     CG_M_PEAK_DEVICE_MEMORY, CG_OUT_PASS, false},
    {"no gpu: device memory unavailable", "default", FX(5, 30, 1e7, 0.01, 0.02, -1, 1),
     FX(5, 30, 1e7, 0.01, 0.02, -1, 2), MUT_NONE, false, CG_OUT_PASS, CG_M_PEAK_DEVICE_MEMORY,
     CG_OUT_UNAVAILABLE, false},
    {"other machine turns fail into inconclusive", "default", FX(5, 30, 1e7, 0.01, 0.02, -1, 1),
     FX(5, 30, 1.2e7, 0.01, 0.02, -1, 2), MUT_OTHER_CPU, false, CG_OUT_INCONCLUSIVE,
     CG_M_STEP_TIME_MEAN, CG_OUT_INCONCLUSIVE, false},
    {"other machine still fails when thresholds gate it", "default",
     FX(5, 30, 1e7, 0.01, 0.02, -1, 1), FX(5, 30, 1.2e7, 0.01, 0.02, -1, 2), MUT_OTHER_CPU, true,
     CG_OUT_FAIL, CG_M_STEP_TIME_MEAN, CG_OUT_FAIL, false},
    /* timing never FAILs from fewer than 3 processes a side (CG_TIMING_MIN_RUNS), whatever the
     * thresholds say: shown, within the runs, and INCONCLUSIVE; memory still decides */
    {"one run a side under smoke: timing shown, inconclusive", "smoke",
     FX(1, 40, 1e7, 0.0, 0.02, -1, 1), FX(1, 40, 1.3e7, 0.0, 0.02, -1, 2), MUT_NONE, false,
     CG_OUT_INCONCLUSIVE, CG_M_STEP_TIME_MEAN, CG_OUT_INCONCLUSIVE, true},
    {"two runs a side (smoke's default): the floor over the steps, inconclusive", "smoke",
     FX(2, 20, 1e7, 0.01, 0.02, -1, 1), FX(2, 20, 1.3e7, 0.01, 0.02, -1, 2), MUT_NONE, false,
     CG_OUT_INCONCLUSIVE, CG_M_STEP_TIME_FLOOR, CG_OUT_INCONCLUSIVE, true},
    {"two runs a side, same speed: still inconclusive, never a PASS", "smoke",
     FX(2, 20, 1e7, 0.01, 0.02, -1, 1), FX(2, 20, 1e7, 0.01, 0.02, -1, 2), MUT_NONE, false,
     CG_OUT_INCONCLUSIVE, CG_M_STEP_TIME_MEAN, CG_OUT_INCONCLUSIVE, true},
    {"one run a side: memory growth fails", "smoke", FX(1, 40, 1e7, 0.0, 0.02, 1000000000, 1),
     FX(1, 40, 1e7, 0.0, 0.02, 1200000000, 2), MUT_NONE, false, CG_OUT_FAIL,
     CG_M_PEAK_DEVICE_MEMORY, CG_OUT_FAIL, true},
    {"one run a side under default: inconclusive", "default", FX(1, 40, 1e7, 0.0, 0.02, -1, 1),
     FX(1, 40, 1.3e7, 0.0, 0.02, -1, 2), MUT_NONE, false, CG_OUT_INCONCLUSIVE,
     CG_M_STEP_TIME_MEAN, CG_OUT_INCONCLUSIVE, true},
    {"fewer tokens per step fails tokens/sec", "default", FX(5, 30, 1e7, 0.01, 0.02, -1, 1),
     FX(5, 30, 1e7, 0.01, 0.02, -1, 2), MUT_FEWER_TOKENS, false, CG_OUT_FAIL, CG_M_TOKENS_PER_SEC,
     CG_OUT_FAIL, false},
    {"a new op is a diagnostic, never a failure", "default", FX(5, 30, 1e7, 0.01, 0.02, -1, 1),
     FX(5, 30, 1e7, 0.01, 0.02, -1, 2), MUT_NEW_OP, false, CG_OUT_PASS, CG_M_STEP_TIME_MEAN,
     CG_OUT_PASS, false},
};

/* An artifact made from a fixture (cg_artifact_release frees it). */
static void make(struct cg_artifact *a, const struct cg_fixture *f)
{
    cg_artifact_init(a);
    assert_int_equal(cg_fixture_make(a, f), 0);
}

static void mutate(struct cg_artifact *a, enum mutation m)
{
    if (m == MUT_OTHER_CPU) {
        free(a->env.cpu_model);
        a->env.cpu_model = strdup("Other CPU");
    } else if (m == MUT_NEW_OP) {
        for (size_t r = 0; r < a->n_runs; r++)
            assert_int_equal(cg_run_add_op(&a->runs[r], "brand_new_kernel", NULL, CG_OP_KERNEL, 30,
                                           (int64_t)(a->runs[r].summary.step_time_mean_ns * 30 * 0.1)),
                             0);
    } else if (m == MUT_FEWER_TOKENS) {
        for (size_t r = 0; r < a->n_runs; r++) {
            for (size_t s = 0; s < a->runs[r].n_steps; s++)
                a->runs[r].steps[s].tokens = 800;
            cg_run_summarize(&a->runs[r]);
        }
    }
}

static void test_verdict__table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct vcase *c = &cases[i];
        struct cg_artifact b, k;
        struct cg_thresholds t;
        struct cg_verdict v;
        struct cg_err err;
        make(&b, &c->base);
        make(&k, &c->cur);
        mutate(&k, c->mutate);
        assert_int_equal(cg_thresholds_load(c->thresholds, &t, &err), 0);
        t.env_mismatch_gates = c->env_gate;
        assert_int_equal(cg_verdict_compute(&b, &k, &t, &v, &err), 0);
        const struct cg_metric_result *r = &v.metrics[c->metric];
        if (v.overall != c->overall || r->outcome != c->metric_outcome ||
            v.within_run != c->within_run)
            fail_msg("case '%s': overall %s, %s %s (delta %.2f%%, p %.4g, note '%s'), within %d",
                     c->name, cg_outcome_name(v.overall), cg_metric_name(c->metric),
                     cg_outcome_name(r->outcome), r->delta_pct, r->p_value, r->note, v.within_run);
        if (c->mutate == MUT_NEW_OP)
            assert_int_equal(v.n_ops_new, 1);
        if (c->mutate == MUT_OTHER_CPU) {
            assert_string_equal(v.machine_diff, "environment.cpu_model");
            /* the downgrade is carried as data: rewording the note does not undo it */
            assert_int_equal(r->other_machine, !c->env_gate);
            assert_int_equal(v.downgraded, !c->env_gate);
            for (int m = 0; m < CG_M_COUNT; m++)
                snprintf(v.metrics[m].note, sizeof(v.metrics[m].note), "reworded");
            cg_verdict_decide(&v);
            assert_int_equal(v.downgraded, !c->env_gate);
        }
        if (r->outcome == CG_OUT_FAIL && r->method == CG_METHOD_RUNS)
            assert_true(r->ci_low_pct > 0.0 || c->metric == CG_M_TOKENS_PER_SEC);
        cg_verdict_release(&v);
        cg_artifact_release(&b);
        cg_artifact_release(&k);
    }
}

/* Under that interference the mean's runs spread so far that a 6% slowdown is not significant,
 * while the floor (the fast steps of the fast runs) sees it; and the same code never fails the floor. */
static void test_verdict__floor_sees_through_interference(void **state)
{
    (void)state;
    struct cg_thresholds t;
    struct cg_err err;
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);
    size_t floor_fails = 0, floor_found = 0, mean_found = 0, n = 20;
    for (uint64_t s = 0; s < n; s++) {
        struct cg_fixture fb = FX(10, 30, 1e7, 0.005, 0.01, -1, 100 + s);
        struct cg_fixture fa = FX(10, 30, 1e7, 0.005, 0.01, -1, 200 + s);
        struct cg_fixture fs = FX(10, 30, 1.06e7, 0.005, 0.01, -1, 200 + s);
        struct cg_artifact b, same, slow;
        struct cg_verdict v;
        make(&b, &fb);
        make(&same, &fa);
        make(&slow, &fs);
        cg_fixture_contend(&b, 1000 + s);
        cg_fixture_contend(&same, 2000 + s);
        cg_fixture_contend(&slow, 2000 + s);
        assert_int_equal(cg_verdict_compute(&b, &same, &t, &v, &err), 0);
        const struct cg_metric_result *f = &v.metrics[CG_M_STEP_TIME_FLOOR];
        floor_fails += f->outcome == CG_OUT_FAIL;
        assert_int_equal(f->method, CG_METHOD_FAST_RUNS);
        assert_true(fabs(f->delta_pct) < 1.5);
        cg_verdict_release(&v);
        assert_int_equal(cg_verdict_compute(&b, &slow, &t, &v, &err), 0);
        f = &v.metrics[CG_M_STEP_TIME_FLOOR];
        floor_found += f->outcome == CG_OUT_FAIL;
        mean_found += v.metrics[CG_M_STEP_TIME_MEAN].outcome == CG_OUT_FAIL;
        assert_true(f->delta_pct > 4.0 && f->delta_pct < 8.0);
        assert_true(f->ci_low_pct <= f->delta_pct && f->delta_pct <= f->ci_high_pct);
        cg_verdict_release(&v);
        cg_artifact_release(&b);
        cg_artifact_release(&same);
        cg_artifact_release(&slow);
    }
    assert_int_equal(floor_fails, 0);
    assert_true(floor_found >= n - 1);
    assert_true(mean_found <= n / 2);
}

/* Every other step 80% slower (the mean +40%, the p95 +80%): the fastest steps did not move,
 * so the floor rule alone would call it interference (INCONCLUSIVE, exit 0). A slowdown at a
 * fixed step phase in every run is periodic work, and the FAIL stands, with the note. Both
 * sides carry spells of interference. */
static void test_verdict__periodic_slowdown_fails_despite_the_floor(void **state)
{
    (void)state;
    struct cg_thresholds t;
    struct cg_err err;
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);
    struct cg_fixture fb = FX(15, 30, 1e7, 0.005, 0.01, -1, 31);
    struct cg_fixture fc = FX(15, 30, 1e7, 0.005, 0.01, -1, 32);
    struct cg_artifact b, c;
    struct cg_verdict v;
    make(&b, &fb);
    make(&c, &fc);
    cg_fixture_contend(&b, 41);
    cg_fixture_contend(&c, 42);
    cg_fixture_every(&c, 2, 1, 80.0);
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    const struct cg_metric_result *mean = &v.metrics[CG_M_STEP_TIME_MEAN];
    assert_int_not_equal(v.metrics[CG_M_STEP_TIME_FLOOR].outcome, CG_OUT_FAIL);
    assert_int_equal(mean->outcome, CG_OUT_FAIL);
    assert_int_equal(v.metrics[CG_M_STEP_TIME_P95].outcome, CG_OUT_FAIL);
    assert_int_equal(v.overall, CG_OUT_FAIL);
    assert_non_null(strstr(mean->note, "step 2 of every 2 is +"));
    assert_non_null(strstr(mean->note, "in 15 of 15 current runs"));
    assert_int_equal(v.pattern.period, 2);
    cg_verdict_release(&v);
    /* with the rule off nothing changes: the mean fails on its own */
    t.require_floor = false;
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    assert_int_equal(v.overall, CG_OUT_FAIL);
    assert_false(v.pattern.tested); /* not computed: nothing needs it */
    cg_verdict_release(&v);
    cg_artifact_release(&b);
    cg_artifact_release(&c);
}

/* Interference on the current side only (a quiet baseline; the runs are not exchangeable, the
 * case the floor rule exists for): the mean FAILs on its own in many comparisons, the floor
 * does not, and the pattern must not turn them into FAILs: spells are not locked to the step
 * phase, and a pattern must account for the change by itself. */
static void test_verdict__interference_is_not_periodic(void **state)
{
    (void)state;
    struct cg_thresholds t;
    struct cg_err err;
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);
    size_t n = 60, mean_fail_alone = 0, fails = 0;
    for (uint64_t s = 0; s < n; s++) {
        struct cg_fixture fb = FX(15, 30, 1e7, 0.005, 0.01, -1, 300 + s);
        struct cg_fixture fc = FX(15, 30, 1e7, 0.005, 0.01, -1, 400 + s);
        struct cg_artifact b, c;
        struct cg_verdict v;
        make(&b, &fb);
        make(&c, &fc);
        cg_fixture_contend(&c, 500 + s);
        assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
        fails += v.overall == CG_OUT_FAIL;
        t.require_floor = false;
        cg_verdict_release(&v);
        assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
        mean_fail_alone += v.metrics[CG_M_STEP_TIME_MEAN].outcome == CG_OUT_FAIL;
        t.require_floor = true;
        cg_verdict_release(&v);
        cg_artifact_release(&b);
        cg_artifact_release(&c);
    }
    print_message("current side busy: the mean FAILs alone in %zu of %zu, the gate in %zu\n",
                  mean_fail_alone, n, fails);
    assert_true(mean_fail_alone >= n / 2); /* the case is real */
    assert_int_equal(fails, 0);
}

/* A run's floor is the median of its steps within 10% of its fastest; a side's fast runs are
 * those within 20% of its lowest run floor. */
static void test_verdict__run_floor_and_fast_runs(void **state)
{
    (void)state;
    const int64_t ms[] = {10000, 10500, 10200, 30000, 31000, 10900, 11500};
    struct cg_step steps[7];
    memset(steps, 0, sizeof(steps));
    for (int i = 0; i < 7; i++)
        steps[i].wall_ns = ms[i] * 1000;
    struct cg_run run;
    memset(&run, 0, sizeof(run));
    run.steps = steps;
    run.n_steps = 7;
    /* fast: 10.0, 10.5, 10.2, 10.9 (11.5 is beyond 11.0) */
    assert_float_equal(cg_floor_run_ns(&run), 10.35e6, 1e-3);
    run.n_steps = 0;
    assert_true(isnan(cg_floor_run_ns(&run)));
    double v[] = {22, 35, 23, 26.5, 26.3, 41};
    assert_int_equal(cg_floor_fast_runs(v, 6), 3);
    assert_float_equal(v[0], 22, 0);
    assert_float_equal(v[1], 23, 0);
    assert_float_equal(v[2], 26.3, 0);
    double same[] = {5, 5};
    assert_int_equal(cg_floor_fast_runs(same, 2), 2);
}

/* ---- the floor's size and power with i.i.d. runs ----------------------------------------- */

static double unit_uniform(uint64_t *rng)
{
    return (double)(cg_stats_rand(rng) >> 11) / 9007199254740992.0; /* [0, 1) */
}

static double std_normal(uint64_t *rng)
{
    double u = unit_uniform(rng), v = unit_uniform(rng);
    return sqrt(-2.0 * log(u > 0.0 ? u : 1e-300)) * cos(6.283185307179586 * v);
}

/* Sets every run of a to one step (so its floor is that step): a fast state at 10 ms x
 * (1 + shift) whose level varies from run to run (lognormal, cv), and in 30% of the runs a spell
 * of interference for the whole run (x 1.6 to 1.9). Runs are i.i.d. */
static void draw_floors(struct cg_artifact *a, double cv, double shift, uint64_t *rng)
{
    for (size_t r = 0; r < a->n_runs; r++) {
        double f = 1e7 * (1.0 + shift) * exp(cv * std_normal(rng));
        if (unit_uniform(rng) < 0.3)
            f *= 1.6 + 0.3 * unit_uniform(rng);
        a->runs[r].steps[0].wall_ns = (int64_t)f;
        cg_run_summarize(&a->runs[r]);
    }
}

/* How often the floor's test (p <= alpha with 3 fast runs a side) rejects over reps seeded
 * comparisons of nb baseline and nc current runs, the current side shifted by shift; checks
 * the interval against the test on every one. */
static double floor_rejections(size_t nb, size_t nc, double cv, double shift, size_t reps,
                               uint64_t seed)
{
    struct cg_thresholds t;
    struct cg_err err;
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);
    const double alpha = t.metric[CG_M_STEP_TIME_FLOOR].alpha;
    struct cg_fixture fb = FX(nb, 1, 1e7, 0, 0, -1, 1), fc = FX(nc, 1, 1e7, 0, 0, -1, 2);
    fb.n_ops = fc.n_ops = 0;
    struct cg_artifact b, c;
    make(&b, &fb);
    make(&c, &fc);
    uint64_t rng = seed;
    size_t rejects = 0;
    for (size_t k = 0; k < reps; k++) {
        draw_floors(&b, cv, 0.0, &rng);
        draw_floors(&c, cv, shift, &rng);
        struct cg_verdict v;
        assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
        const struct cg_metric_result *f = &v.metrics[CG_M_STEP_TIME_FLOOR];
        assert_int_equal(f->method, CG_METHOD_FAST_RUNS);
        bool tested = f->fast_runs[0] >= CG_FLOOR_MIN_FAST_RUNS &&
                      f->fast_runs[1] >= CG_FLOOR_MIN_FAST_RUNS;
        bool rejected = tested && f->p_value <= alpha;
        rejects += rejected;
        if (tested && rejected != (f->ci_low_pct > 0.0) && f->ci_low_pct != 0.0)
            fail_msg("p = %g at alpha %g but the interval starts at %+.3f%%", f->p_value, alpha,
                     f->ci_low_pct);
        cg_verdict_release(&v);
    }
    cg_artifact_release(&b);
    cg_artifact_release(&c);
    return (double)rejects / (double)reps;
}

/* The fast runs of a side are chosen from its own fastest run, so which runs count depends on
 * the side a run is on: with i.i.d. runs whose fast-state level varies (run-to-run CV 3%, 5%,
 * 10%), a side of 75 runs picks a lower fastest run than a side of 15 and looks faster. Compared
 * with Mann-Whitney's own distribution the floor rejected 7% and 14% at 15 v 15 (CV 5%, 10%)
 * and 15% and 48% at 75 v 15 at alpha 0.05 (1,000 comparisons each). Its test now takes the
 * distribution of the whole select-then-compare procedure over splits of the runs, so under no
 * change it rejects at most alpha (measured over 60 data seeds of 1,000 comparisons at 75 v 15,
 * CV 5%: 5.1% on average). 600 comparisons per case keep the test to a few seconds: the bound
 * alpha + 3 standard errors of a binomial rate, 0.05 + 3 sqrt(0.05 x 0.95 / 600) = 0.0767, is
 * exceeded by chance with probability about 0.2% per case when the true rate is alpha, and the
 * old selection exceeds it at 75 v 15 from CV 5% and at both sizes at CV 10%. */
static void test_verdict__floor_size_with_iid_runs(void **state)
{
    (void)state;
    const double cvs[] = {0.03, 0.05, 0.10};
    const size_t sizes[][2] = {{15, 15}, {75, 15}};
    const size_t reps = 600;
    const double bound = 0.05 + 3.0 * sqrt(0.05 * 0.95 / (double)reps);
    char failures[512] = "";
    size_t used = 0;
    for (size_t z = 0; z < 2; z++) {
        for (size_t c = 0; c < 3; c++) {
            double rate = floor_rejections(sizes[z][0], sizes[z][1], cvs[c], 0.0, reps,
                                           7 * (3 * z + c) + 1);
            if (rate > bound && used < sizeof(failures)) {
                int w = snprintf(failures + used, sizeof(failures) - used,
                                 " %zu v %zu at CV %.0f%%: %.3f;", sizes[z][0], sizes[z][1],
                                 cvs[c] * 100.0, rate);
                used += w > 0 ? (size_t)w : 0;
            }
        }
    }
    if (used > 0)
        fail_msg("the floor rejects more often than %.4f under no change:%s", bound, failures);
}

/* What the valid test still finds with the same runs: +10% at CV 3% nearly always (measured
 * 100% of 200 at both sizes), +30% at CV 5% at 15 v 15 too; the price is at CV 10%, where the
 * selection keeps few runs of the larger side (docs/statistics.md). */
static void test_verdict__floor_power_with_iid_runs(void **state)
{
    (void)state;
    assert_true(floor_rejections(15, 15, 0.03, 0.10, 200, 77) >= 0.95);
    assert_true(floor_rejections(75, 15, 0.03, 0.10, 200, 78) >= 0.95);
    assert_true(floor_rejections(15, 15, 0.05, 0.30, 200, 79) >= 0.95);
}

/* ---- process states: the floor and the slow states' share ------------------------------------ */

/* Every run of a is one step (its floor): a fast state at 10 ms x (1 + shift) that varies from
 * process to process (lognormal, cv), and with probability slow_share a slow state for the whole
 * process, 7% to 28% slower (uniform): the H100's PyTorch canary (docs/gpu.md). */
static void draw_states(struct cg_artifact *a, double cv, double slow_share, double shift,
                        uint64_t *rng)
{
    for (size_t r = 0; r < a->n_runs; r++) {
        double f = 1e7 * (1.0 + shift) * exp(cv * std_normal(rng));
        if (unit_uniform(rng) < slow_share)
            f *= 1.07 + 0.21 * unit_uniform(rng);
        a->runs[r].steps[0].wall_ns = (int64_t)f;
        cg_run_summarize(&a->runs[r]);
    }
}

struct state_rates {
    double floor_fail; /* the floor FAILs */
    double share;      /* the slow states' share is a finding (reported) */
    double gate_fail;  /* the verdict FAILs (floor rule on; slow_state gated when asked) */
};

/* Rates over reps comparisons of nb baseline and nc current runs drawn by draw_states (the
 * baseline at share_b, the current side at share_c and shift); gate: "slow_state" gated at 20
 * points. */
static struct state_rates state_rates(size_t nb, size_t nc, double share_b, double share_c,
                                      double shift, bool gate, size_t reps, uint64_t seed)
{
    struct cg_thresholds t;
    struct cg_err err;
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);
    if (gate)
        t.slow_state = (struct cg_state_limit){true, 20.0, 0.05};
    struct cg_fixture fb = FX(nb, 1, 1e7, 0, 0, -1, 1), fc = FX(nc, 1, 1e7, 0, 0, -1, 2);
    fb.n_ops = fc.n_ops = 0;
    struct cg_artifact b, c;
    make(&b, &fb);
    make(&c, &fc);
    uint64_t rng = seed;
    size_t floor_fail = 0, share = 0, gate_fail = 0;
    for (size_t k = 0; k < reps; k++) {
        draw_states(&b, 0.015, share_b, 0.0, &rng);
        draw_states(&c, 0.015, share_c, shift, &rng);
        struct cg_verdict v;
        assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
        const struct cg_metric_result *f = &v.metrics[CG_M_STEP_TIME_FLOOR];
        floor_fail += f->outcome == CG_OUT_FAIL;
        share += v.states.finding;
        gate_fail += v.overall == CG_OUT_FAIL;
        if (f->outcome == CG_OUT_FAIL && !(f->ci_low_pct >= 0.0))
            fail_msg("the floor FAILed with its interval starting at %+.3f%%", f->ci_low_pct);
        cg_verdict_release(&v);
    }
    cg_artifact_release(&b);
    cg_artifact_release(&c);
    return (struct state_rates){(double)floor_fail / (double)reps, (double)share / (double)reps,
                                (double)gate_fail / (double)reps};
}

/* Under no change, with half the processes (or a fifth) in a slow state 7-28% slower, the floor
 * FAILs at most alpha of the time, and so does the share's finding (Fisher's exact test is
 * conservative): 600 comparisons a case, bound alpha + 3 standard errors (0.0767). Measured
 * (seeds as below): docs/statistics.md. */
static void test_verdict__states_size_under_no_change(void **state)
{
    (void)state;
    const size_t sizes[][2] = {{15, 15}, {75, 15}};
    const double shares[] = {0.2, 0.5};
    const size_t reps = 600;
    const double bound = 0.05 + 3.0 * sqrt(0.05 * 0.95 / (double)reps);
    for (size_t z = 0; z < 2; z++) {
        for (size_t k = 0; k < 2; k++) {
            struct state_rates r = state_rates(sizes[z][0], sizes[z][1], shares[k], shares[k], 0.0,
                                               false, reps, 31 + 2 * z + k);
            printf("states, no change, %zu v %zu, slow share %.1f: floor FAIL %.3f, share "
                   "finding %.3f, gate FAIL %.3f\n",
                   sizes[z][0], sizes[z][1], shares[k], r.floor_fail, r.share, r.gate_fail);
            if (r.floor_fail > bound || r.share > bound || r.gate_fail > bound)
                fail_msg("above %.4f under no change", bound);
        }
    }
}

/* What it finds: a slowdown of every process by 5% or 10% (half of them slow), and a change of
 * the slow share from 0.2 to 0.5 or 0.8 with no slowdown of the fast state, which the share's
 * test names and the floor does not call a slowdown of the fast state (from 0.2 to 0.5 its FAILs
 * stay near alpha; to 0.8 the current side often has too few runs in the pooled fast state, and
 * its own fastest state, a slow one, is compared). 300 comparisons a case; the rates measured,
 * beside those of the earlier rule (each side's runs within 1.20 of its own lowest), are in
 * docs/statistics.md; the bounds sit under them by a margin. */
static void test_verdict__states_power(void **state)
{
    (void)state;
    struct state_rates r;
    r = state_rates(15, 15, 0.5, 0.5, 0.05, false, 300, 41);
    printf("states, +5%%, 15 v 15, share 0.5: floor FAIL %.3f\n", r.floor_fail);
    assert_true(r.floor_fail >= 0.65);
    r = state_rates(15, 15, 0.5, 0.5, 0.10, false, 300, 42);
    printf("states, +10%%, 15 v 15, share 0.5: floor FAIL %.3f\n", r.floor_fail);
    assert_true(r.floor_fail >= 0.75);
    r = state_rates(75, 15, 0.5, 0.5, 0.05, false, 300, 43);
    printf("states, +5%%, 75 v 15, share 0.5: floor FAIL %.3f\n", r.floor_fail);
    assert_true(r.floor_fail >= 0.90);
    const size_t sizes[][2] = {{15, 15}, {75, 15}, {30, 30}};
    for (size_t z = 0; z < 3; z++) {
        for (int k = 0; k < 2; k++) {
            double to = k == 0 ? 0.5 : 0.8;
            r = state_rates(sizes[z][0], sizes[z][1], 0.2, to, 0.0, false, 300, 50 + 2 * z + k);
            struct state_rates g = state_rates(sizes[z][0], sizes[z][1], 0.2, to, 0.0, true, 300,
                                               50 + 2 * z + k);
            printf("states, slow share 0.2 -> %.1f, %zu v %zu: floor FAIL %.3f, share finding "
                   "%.3f, gate FAIL with slow_state gated %.3f\n",
                   to, sizes[z][0], sizes[z][1], r.floor_fail, r.share, g.gate_fail);
            if (k == 0) /* the fast state's floor did not move: the floor holds */
                assert_true(r.floor_fail <= 0.0767);
            assert_true(r.share >= (k == 0 ? 0.20 : 0.55));
            assert_true(g.gate_fail >= r.share - 0.05);
        }
    }
}

/* The H100's A/A (docs/gpu.md): the same PyTorch code, per-process fastest steps of 19.5, 20.2
 * and 19.9 ms in the baseline's processes and 25.5, 24.0 and 21.3 ms in the current side's: no
 * current run in the pooled fast state. The floor compares each side's own fastest runs (+18.7%:
 * a side in a slow state and a slowdown of every run look alike from the floors), cannot FAIL
 * from 3 runs a side, and the report says where the runs were. With more runs a side landing all
 * slow by chance is rare (1 in 1,024 at 5 runs and half the processes slow), and the main
 * command's confirmation measures fresh processes. */
static void test_verdict__a_side_that_landed_slow_is_named(void **state)
{
    (void)state;
    struct cg_thresholds t;
    struct cg_err err;
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);
    const double base_ms[] = {19.5, 20.2, 19.9}, cur_ms[] = {25.5, 24.0, 21.3};
    struct cg_fixture fb = FX(3, 1, 1e7, 0, 0, -1, 1), fc = FX(3, 1, 1e7, 0, 0, -1, 2);
    fb.n_ops = fc.n_ops = 0;
    struct cg_artifact b, c;
    make(&b, &fb);
    make(&c, &fc);
    for (size_t r = 0; r < 3; r++) {
        b.runs[r].steps[0].wall_ns = (int64_t)(base_ms[r] * 1e6);
        c.runs[r].steps[0].wall_ns = (int64_t)(cur_ms[r] * 1e6);
        cg_run_summarize(&b.runs[r]);
        cg_run_summarize(&c.runs[r]);
    }
    struct cg_verdict v;
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    const struct cg_metric_result *f = &v.metrics[CG_M_STEP_TIME_FLOOR];
    assert_true(f->own_states);
    assert_int_equal(f->outcome, CG_OUT_INCONCLUSIVE);
    assert_true(v.states.tested && v.states.own_states && !v.states.finding);
    assert_int_equal(v.states.slow[1], 3);
    assert_int_equal(v.states.slow[0], 0);
    char line[400];
    cg_report_states_text(&v, line, sizeof(line));
    assert_non_null(strstr(line, "0 of 3 current runs in the pooled fast state (need 3), so the "
                                 "floor compared each side's own fastest runs; 3 of 3 current "
                                 "and 0 of 3 baseline runs slower than it"));
    cg_verdict_release(&v);
    /* three of ten current runs in the fast state, seven in slow states against one of ten: the
     * floor of the fast state holds, the share is a finding, reported and not gated by default;
     * gated at 20 points it FAILs */
    const double mixed_ms[] = {19.6, 20.1, 19.8, 24.0, 25.5, 21.3, 24.6, 25.0, 23.1, 22.4};
    const double calm_ms[] = {19.5, 20.2, 19.9, 19.7, 20.0, 19.8, 20.1, 21.4, 19.6, 20.0};
    struct cg_fixture fb8 = FX(10, 1, 1e7, 0, 0, -1, 3), fc8 = FX(10, 1, 1e7, 0, 0, -1, 4);
    fb8.n_ops = fc8.n_ops = 0;
    struct cg_artifact b8, c8;
    make(&b8, &fb8);
    make(&c8, &fc8);
    for (size_t r = 0; r < 10; r++) {
        b8.runs[r].steps[0].wall_ns = (int64_t)(calm_ms[r] * 1e6);
        c8.runs[r].steps[0].wall_ns = (int64_t)(mixed_ms[r] * 1e6);
        cg_run_summarize(&b8.runs[r]);
        cg_run_summarize(&c8.runs[r]);
    }
    assert_int_equal(cg_verdict_compute(&b8, &c8, &t, &v, &err), 0);
    f = &v.metrics[CG_M_STEP_TIME_FLOOR];
    assert_false(f->own_states);
    assert_int_equal(f->fast_runs[0], 9);
    assert_int_equal(f->fast_runs[1], 3);
    assert_int_not_equal(f->outcome, CG_OUT_FAIL);
    assert_true(fabs(f->delta_pct) < 1.0);
    assert_int_equal(v.states.slow[0], 1);
    assert_int_equal(v.states.slow[1], 7);
    assert_true(v.states.finding);
    assert_int_equal(v.states.outcome, CG_OUT_NOT_GATED);
    assert_float_equal(v.states.p_value, 0.009883305548940223, 1e-12); /* as test_stats' */
    cg_report_states_text(&v, line, sizeof(line));
    assert_non_null(strstr(line, "7 of 10 current runs in a slow state against 1 of 10 baseline "
                                 "runs (+60 points, p = 0.0099): a change that makes slow "
                                 "processes likelier"));
    char *json = cg_report_json(&v);
    assert_non_null(strstr(json, "\"finding\":\ttrue"));
    free(json);
    cg_verdict_release(&v);
    t.slow_state = (struct cg_state_limit){true, 20.0, 0.05};
    assert_int_equal(cg_verdict_compute(&b8, &c8, &t, &v, &err), 0);
    assert_int_equal(v.states.outcome, CG_OUT_FAIL);
    assert_int_equal(v.overall, CG_OUT_FAIL);
    cg_verdict_release(&v);
    cg_artifact_release(&b);
    cg_artifact_release(&c);
    cg_artifact_release(&b8);
    cg_artifact_release(&c8);
}

/* The headline names the worst FAIL by how far beyond its threshold it is: peak device memory
 * +20% against its 2% before step time +30% against 5% (a memory leak headlined by step time
 * was the finding of a user trial); an INCONCLUSIVE is one sentence, its change then its reason;
 * a note that asks for runs says why none were added. */
static void test_verdict__headline_names_the_worst_fail(void **state)
{
    (void)state;
    struct cg_thresholds t;
    struct cg_err err;
    struct cg_artifact b, c;
    struct cg_verdict v;
    char line[512];
    struct cg_fixture fb = FX(15, 30, 1e7, 0.01, 0.02, 1000000000, 1),
                      fc = FX(15, 30, 1.3e7, 0.01, 0.02, 1200000000, 2);
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);
    make(&b, &fb);
    make(&c, &fc);
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_FAIL);
    cg_verdict_headline(&v, line, sizeof(line));
    if (strncmp(line, "FAIL: Peak device memory regressed +20.0% (and ", 47) != 0)
        fail_msg("headline: %s", line);
    cg_verdict_release(&v);
    /* not significant at 3 v 3 (p >= 0.05 cannot reach the first look's share): one sentence,
     * and compare's reason for adding no runs */
    struct cg_fixture f3b = FX(3, 30, 1e7, 0.05, 0.02, -1, 3), f3c = FX(3, 30, 1.08e7, 0.05, 0.02, -1, 4);
    struct cg_artifact b3, c3;
    make(&b3, &f3b);
    make(&c3, &f3c);
    t.metric[CG_M_STEP_TIME_MEAN].alpha = 0.01;
    assert_int_equal(cg_verdict_compute(&b3, &c3, &t, &v, &err), 0);
    const struct cg_metric_result *m = &v.metrics[CG_M_STEP_TIME_MEAN];
    assert_int_equal(m->outcome, CG_OUT_INCONCLUSIVE);
    assert_non_null(strstr(m->note, "): add runs"));
    cg_verdict_explain_runs(&v, "compare takes one look");
    assert_non_null(strstr(m->note, "): compare takes one look"));
    assert_null(strstr(m->note, "add runs"));
    cg_verdict_headline(&v, line, sizeof(line));
    if (strstr(line, "INCONCLUSIVE: Step time mean +") != line ||
        strstr(line, " beyond its +5.0% threshold: not significant (p = ") == NULL ||
        strstr(line, "but") != NULL)
        fail_msg("headline: %s", line);
    cg_verdict_release(&v);
    cg_artifact_release(&b);
    cg_artifact_release(&c);
    cg_artifact_release(&b3);
    cg_artifact_release(&c3);
}

/* ---- the floor's test against a brute-force reference --------------------------------------- */

/* The pooled fast state of sorted v[n], by floor.h's rule, written again apart from floor.c:
 * the least max(3, ceil(n / 6)) runs, then up while within 4% of the run below and within 20% of
 * the least runs' highest. */
static size_t ref_fast_state(const double *v, size_t n)
{
    size_t least = (n + 5) / 6 < 3 ? 3 : (n + 5) / 6;
    if (least > n)
        least = n;
    size_t k = least;
    while (k < n && v[k] <= v[k - 1] * 1.04 && v[k] <= v[least - 1] * 1.20)
        k++;
    return k;
}

/* The runs one split of sorted v[n] compares (mask bit i: run i is current's), and 2U over them:
 * the pooled fast state when each side has 3 runs there, else each side's runs within 1.20 of
 * its own lowest. */
static void ref_split(const double *v, size_t n, size_t fast, unsigned mask, int64_t *kb,
                      int64_t *kc, int64_t *h)
{
    int64_t in_state[2] = {0, 0};
    double lowest[2] = {INFINITY, INFINITY};
    for (size_t i = 0; i < n; i++) {
        int c = (mask >> i) & 1u;
        in_state[c] += i < fast;
        lowest[c] = fmin(lowest[c], v[i]);
    }
    bool pooled = in_state[0] >= 3 && in_state[1] >= 3;
    int64_t k[2] = {0, 0}, twice_u = 0;
    for (size_t i = 0; i < n; i++) {
        int ci = (mask >> i) & 1u;
        if (pooled ? i >= fast : !(v[i] <= lowest[ci] * 1.20))
            continue;
        k[ci]++;
        if (ci == 0)
            continue;
        for (size_t j = 0; j < n; j++) {
            int cj = (mask >> j) & 1u;
            if (cj == 0 && (pooled ? j < fast : v[j] <= lowest[0] * 1.20))
                twice_u += v[i] > v[j] ? 2 : v[i] == v[j] ? 1 : 0;
        }
    }
    *kb = k[0];
    *kc = k[1];
    *h = twice_u;
}

/* z1 >= z2 exactly, for z = (h - kb kc) / sqrt(kb kc (kb + kc + 1) / 3): signs first, then the
 * squares cross-multiplied in integers (no rounding). */
static bool ref_z_at_least(int64_t kb1, int64_t kc1, int64_t h1, int64_t kb2, int64_t kc2,
                           int64_t h2)
{
    int64_t a = h1 - kb1 * kc1, b = h2 - kb2 * kc2;
    int64_t d1 = kb1 * kc1 * (kb1 + kc1 + 1), d2 = kb2 * kc2 * (kb2 + kc2 + 1);
    if ((a >= 0) != (b >= 0))
        return a >= 0;
    int64_t l = a * a * d2, r = b * b * d1; /* small runs: far from overflow */
    return a >= 0 ? l >= r : l <= r;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* p of the floor's test by enumerating every split of base[nb] and cur[nc] (nb + nc < 32,
 * values distinct from a split's point of view only through their order) with exact keys. */
static double ref_floor_p(const double *base, size_t nb, const double *cur, size_t nc)
{
    size_t n = nb + nc;
    double v[32] = {0};
    for (size_t i = 0; i < n; i++)
        v[i] = i < nb ? base[i] : cur[i - nb];
    qsort(v, n, sizeof(double), cmp_dbl);
    unsigned observed = 0;
    /* the observed sides: of each value, the current side holds as many as cur has */
    for (size_t i = 0; i < n; i++) {
        size_t want = 0, have = 0;
        for (size_t j = 0; j < nc; j++)
            want += cur[j] == v[i];
        for (size_t q = 0; q < i; q++)
            have += v[q] == v[i] && ((observed >> q) & 1u);
        if (have < want)
            observed |= 1u << i;
    }
    size_t fast = ref_fast_state(v, n), total = 0, extreme = 0;
    int64_t kb, kc, h;
    ref_split(v, n, fast, observed, &kb, &kc, &h);
    for (unsigned mask = 0; mask < (1u << n); mask++) {
        if ((size_t)__builtin_popcount(mask) != nc)
            continue;
        int64_t kb2, kc2, h2;
        ref_split(v, n, fast, mask, &kb2, &kc2, &h2);
        total++;
        extreme += ref_z_at_least(kb2, kc2, h2, kb, kc, h);
    }
    return (double)extreme / (double)total;
}

/* The floor's p against every split enumerated with integer keys, the reference written apart
 * from floor.c (the pooled fast state and the sides' own fast states as floor.h says). The first
 * runs once gave p = 0.1136 where every split compared exactly gave 0.1369 under the rule of
 * each side's own fast runs: splits whose z is mathematically equal to the observed one (sqrt(1.5)
 * from fast-run counts (1, 2, 4) and (3, 8, 36)) fell on either side of "at least as extreme" by
 * the last bit of a double; z within a relative 1e-9 now count as equal. Under the pooled states
 * these runs give 0.1078 (1,716 splits; also enumerated with Python's fractions). */
static void test_verdict__floor_p_equals_every_split_enumerated(void **state)
{
    (void)state;
    const double base[] = {1.06, 1.31, 1.37, 1.35, 1.12, 1.29};
    const double cur[] = {1.19, 1.21, 1.28, 1.45, 1.47, 1.19, 1.17};
    double want = ref_floor_p(base, 6, cur, 7);
    assert_float_equal(want, 185.0 / 1716.0, 1e-12);
    struct cg_floor_test f;
    assert_int_equal(cg_floor_compare(base, 6, cur, 7, 0.05, &f), 0);
    assert_true(f.all_splits);
    assert_int_equal(f.state_runs, 6);
    assert_float_equal(f.p_greater, want, 1e-12);
    /* runs where two splits' z equals the observed one exactly (found by a search of random runs
     * with the Python enumeration): by the last bit they fell below it, p 0.1180 for 0.1201 */
    const double base2[] = {1.34, 1.04, 1.09, 1.55, 1.4, 1.88};
    const double cur2[] = {1.21, 1.24, 1.24, 1.36, 1.33, 1.82};
    want = ref_floor_p(base2, 6, cur2, 6);
    assert_float_equal(want, 111.0 / 924.0, 1e-12);
    assert_int_equal(cg_floor_compare(base2, 6, cur2, 6, 0.05, &f), 0);
    assert_float_equal(f.p_greater, want, 1e-12);
}

/* Default thresholds, a quiet baseline of 5 runs at 10 ms and a current side of 5 at cur_ns. */
static void floor_pair(struct cg_thresholds *t, struct cg_artifact *b, struct cg_artifact *k,
                       double cur_ns)
{
    struct cg_err err;
    struct cg_fixture fb = FX(5, 30, 1e7, 0.005, 0.01, -1, 1),
                      fk = FX(5, 30, cur_ns, 0.005, 0.01, -1, 2);
    assert_int_equal(cg_thresholds_load("default", t, &err), 0);
    make(b, &fb);
    make(k, &fk);
}

/* A real 20% slowdown, but three of the current side's five runs met load for all their steps:
 * two fast runs are too few for the floor to FAIL, and the note says why. With the runner quiet
 * in all five the same slowdown FAILs. */
static void test_verdict__floor_needs_fast_runs(void **state)
{
    (void)state;
    struct cg_thresholds t;
    struct cg_err err;
    struct cg_artifact b, k;
    struct cg_verdict v;
    floor_pair(&t, &b, &k, 1.2e7);
    assert_int_equal(cg_verdict_compute(&b, &k, &t, &v, &err), 0);
    assert_int_equal(v.metrics[CG_M_STEP_TIME_FLOOR].outcome, CG_OUT_FAIL);
    cg_verdict_release(&v);
    for (size_t r = 0; r < 3; r++) {
        for (size_t s = 0; s < k.runs[r].n_steps; s++)
            k.runs[r].steps[s].wall_ns = k.runs[r].steps[s].wall_ns * 17 / 10;
        cg_run_summarize(&k.runs[r]);
    }
    assert_int_equal(cg_verdict_compute(&b, &k, &t, &v, &err), 0);
    const struct cg_metric_result *f = &v.metrics[CG_M_STEP_TIME_FLOOR];
    assert_true(f->delta_pct > 15.0 && f->delta_pct < 25.0);
    assert_int_equal(f->outcome, CG_OUT_INCONCLUSIVE);
    assert_non_null(strstr(f->note, "too few current runs in the runner's fast state (2 of 5"));
    assert_true(f->wants_runs);
    /* the mean's FAIL waits for the floor */
    assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_INCONCLUSIVE);
    assert_non_null(strstr(v.metrics[CG_M_STEP_TIME_MEAN].note, "floor is inconclusive"));
    assert_int_equal(v.overall, CG_OUT_INCONCLUSIVE);
    cg_verdict_release(&v);
    cg_artifact_release(&b);
    cg_artifact_release(&k);
}

/* Too few fast runs say nothing either way: one current run far faster than the rest leaves
 * one fast run, and the floor is INCONCLUSIVE (not a PASS that would hold back the mean's
 * FAIL); a baseline with too few fast runs asks for a new baseline, not for more runs. */
static void test_verdict__floor_without_fast_runs_is_inconclusive(void **state)
{
    (void)state;
    struct cg_thresholds t;
    struct cg_err err;
    struct cg_artifact b, k;
    struct cg_verdict v;
    floor_pair(&t, &b, &k, 1.1e7);
    for (size_t s = 0; s < k.runs[0].n_steps; s++)
        k.runs[0].steps[s].wall_ns = k.runs[0].steps[s].wall_ns * 7 / 10;
    cg_run_summarize(&k.runs[0]);
    assert_int_equal(cg_verdict_compute(&b, &k, &t, &v, &err), 0);
    const struct cg_metric_result *f = &v.metrics[CG_M_STEP_TIME_FLOOR];
    assert_int_equal(f->fast_runs[1], 1);
    assert_int_equal(f->outcome, CG_OUT_INCONCLUSIVE);
    assert_true(f->wants_runs);
    assert_int_not_equal(v.overall, CG_OUT_PASS);
    cg_verdict_release(&v);
    /* the same, but on the baseline's side */
    assert_int_equal(cg_verdict_compute(&k, &b, &t, &v, &err), 0);
    f = &v.metrics[CG_M_STEP_TIME_FLOOR];
    assert_int_equal(f->outcome, CG_OUT_INCONCLUSIVE);
    assert_false(f->wants_runs);
    assert_non_null(strstr(f->note, "record the baseline again"));
    cg_verdict_release(&v);
    cg_artifact_release(&b);
    cg_artifact_release(&k);
}

/* With fewer runs than min_runs (5 for the floor by default) the floor cannot fail. */
static void test_verdict__floor_needs_min_runs(void **state)
{
    (void)state;
    struct cg_thresholds t;
    struct cg_err err;
    struct cg_artifact b, k;
    struct cg_verdict v;
    struct cg_fixture fb = FX(4, 30, 1e7, 0.005, 0.01, -1, 1),
                      fk = FX(4, 30, 1.2e7, 0.005, 0.01, -1, 2);
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);
    assert_int_equal(t.metric[CG_M_STEP_TIME_FLOOR].min_runs, 5);
    make(&b, &fb);
    make(&k, &fk);
    assert_int_equal(cg_verdict_compute(&b, &k, &t, &v, &err), 0);
    assert_int_equal(v.metrics[CG_M_STEP_TIME_FLOOR].outcome, CG_OUT_INCONCLUSIVE);
    assert_non_null(strstr(v.metrics[CG_M_STEP_TIME_FLOOR].note, "too few runs"));
    assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_FAIL);
    cg_verdict_release(&v);
    cg_artifact_release(&b);
    cg_artifact_release(&k);
}

/* The floor rule: the current side met a spell of interference in every run after its first
 * few steps (mean +40%), the fast steps are where they were. With the rule the mean is
 * INCONCLUSIVE with its note; without it the mean FAILs; a real slowdown FAILs either way. */
static void test_verdict__floor_rule(void **state)
{
    (void)state;
    struct cg_thresholds t;
    struct cg_err err;
    struct cg_artifact b, k, slow;
    struct cg_verdict v;
    struct cg_fixture fb = FX(5, 30, 1e7, 0.005, 0.01, -1, 1),
                      fk = FX(5, 30, 1e7, 0.005, 0.01, -1, 2);
    struct cg_fixture fs = FX(5, 30, 1.1e7, 0.005, 0.01, -1, 2);
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);
    make(&b, &fb);
    make(&k, &fk);
    make(&slow, &fs);
    for (size_t r = 0; r < k.n_runs; r++) {
        for (size_t s = 3; s < k.runs[r].n_steps; s++)
            k.runs[r].steps[s].wall_ns = k.runs[r].steps[s].wall_ns * 3 / 2;
        cg_run_summarize(&k.runs[r]);
    }
    assert_true(t.require_floor);
    assert_int_equal(cg_verdict_compute(&b, &k, &t, &v, &err), 0);
    assert_int_equal(v.overall, CG_OUT_INCONCLUSIVE);
    assert_int_equal(v.metrics[CG_M_STEP_TIME_FLOOR].outcome, CG_OUT_PASS);
    for (int m = CG_M_STEP_TIME_MEAN; m <= CG_M_TOKENS_PER_SEC; m++) {
        if (m == CG_M_STEP_TIME_FLOOR)
            continue;
        assert_int_equal(v.metrics[m].outcome, CG_OUT_INCONCLUSIVE);
        assert_non_null(strstr(v.metrics[m].note, "fastest steps did not slow down"));
    }
    cg_verdict_release(&v);
    t.require_floor = false;
    assert_int_equal(cg_verdict_compute(&b, &k, &t, &v, &err), 0);
    assert_int_equal(v.overall, CG_OUT_FAIL);
    assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_FAIL);
    cg_verdict_release(&v);
    /* Fewer tokens per step in the same time is a tokens/sec regression the floor cannot see:
     * it still FAILs. */
    for (size_t r = 0; r < k.n_runs; r++) {
        for (size_t s = 0; s < k.runs[r].n_steps; s++) {
            k.runs[r].steps[s].wall_ns = b.runs[r].steps[s].wall_ns;
            k.runs[r].steps[s].tokens = b.runs[r].steps[s].tokens * 3 / 4;
        }
        cg_run_summarize(&k.runs[r]);
    }
    t.require_floor = true;
    assert_int_equal(cg_verdict_compute(&b, &k, &t, &v, &err), 0);
    assert_int_equal(v.metrics[CG_M_STEP_TIME_FLOOR].outcome, CG_OUT_PASS);
    assert_int_equal(v.metrics[CG_M_TOKENS_PER_SEC].outcome, CG_OUT_FAIL);
    assert_int_equal(v.overall, CG_OUT_FAIL);
    cg_verdict_release(&v);
    /* The price of the rule: every fourth step 50% slower, the rest unchanged, in every run.
     * The mean moves about 12%, significantly; the floor does not; INCONCLUSIVE, not FAIL. */
    for (size_t r = 0; r < k.n_runs; r++) {
        for (size_t s = 0; s < k.runs[r].n_steps; s++) {
            k.runs[r].steps[s].tokens = b.runs[r].steps[s].tokens;
            if (s % 4 == 3)
                k.runs[r].steps[s].wall_ns = b.runs[r].steps[s].wall_ns * 3 / 2;
        }
        cg_run_summarize(&k.runs[r]);
    }
    assert_int_equal(cg_verdict_compute(&b, &k, &t, &v, &err), 0);
    assert_true(v.metrics[CG_M_STEP_TIME_MEAN].delta_pct > 9.0);
    assert_true(v.metrics[CG_M_STEP_TIME_MEAN].p_value <= 0.05);
    assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_INCONCLUSIVE);
    assert_non_null(strstr(v.metrics[CG_M_STEP_TIME_MEAN].note, "some steps only"));
    assert_int_equal(v.overall, CG_OUT_INCONCLUSIVE);
    cg_verdict_release(&v);
    assert_int_equal(cg_verdict_compute(&b, &slow, &t, &v, &err), 0);
    assert_int_equal(v.overall, CG_OUT_FAIL);
    assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_FAIL);
    assert_int_equal(v.metrics[CG_M_STEP_TIME_FLOOR].outcome, CG_OUT_FAIL);
    cg_verdict_release(&v);
    cg_artifact_release(&b);
    cg_artifact_release(&k);
    cg_artifact_release(&slow);
}

/* The mean's FAIL rate over reps comparisons of 10 runs a side (the current side with spells of
 * interference when contend), the current side's steps all `factor` times as long, the floor
 * held to floor_pct (the floor rule on; off when floor_pct is NAN). *floor_pass gets how often
 * the floor did not FAIL. */
static double mean_fail_rate_floor_at(double floor_pct, double factor, bool contend, size_t reps,
                                      uint64_t seed, double *floor_pass)
{
    struct cg_thresholds t;
    struct cg_err err;
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);
    t.require_floor = !isnan(floor_pct);
    if (t.require_floor)
        t.metric[CG_M_STEP_TIME_FLOOR].max_regression_pct = floor_pct;
    size_t fails = 0, passes = 0;
    for (size_t k = 0; k < reps; k++) {
        struct cg_fixture fb = FX(10, 30, 1e7, 0.005, 0.01, -1, seed + 2 * k);
        struct cg_fixture fc = FX(10, 30, 1e7 * factor, 0.005, 0.01, -1, seed + 2 * k + 1);
        struct cg_artifact b, c;
        struct cg_verdict v;
        make(&b, &fb);
        make(&c, &fc);
        if (contend)
            cg_fixture_contend(&c, 7000 + seed + k);
        assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
        fails += v.metrics[CG_M_STEP_TIME_MEAN].outcome == CG_OUT_FAIL;
        passes += v.metrics[CG_M_STEP_TIME_FLOOR].outcome != CG_OUT_FAIL;
        cg_verdict_release(&v);
        cg_artifact_release(&b);
        cg_artifact_release(&c);
    }
    *floor_pass = (double)passes / (double)reps;
    return (double)fails / (double)reps;
}

/* A floor held to a looser threshold than the mean's does not switch the mean off: a floor that
 * moved, significantly, as far as the mean's own threshold is no spell of interference, and the
 * mean's FAIL stands (30% slower, floor at 40%: found in every comparison of 100, the floor
 * passing). Size: under no change, spells of interference on the current side (what the rule is
 * for), the mean FAILs most of the time without the floor rule, and with the floor at 40% no
 * more often than at its default 5% (at most alpha). The rates are printed
 * (docs/statistics.md). A floor that moved less than the mean's threshold still holds the mean
 * back, with a note that says so rather than "did not slow down". */
static void test_verdict__floor_rule_stands_when_the_floor_moved_as_far(void **state)
{
    (void)state;
    double floor_pass, at_default;
    double power = mean_fail_rate_floor_at(40.0, 1.3, false, 100, 31, &floor_pass);
    printf("floor at 40%%, 30%% slower, 10 v 10: mean FAIL %.3f (floor not FAILing %.3f)\n", power,
           floor_pass);
    assert_true(floor_pass >= 0.95); /* the floor passes its own, looser threshold */
    assert_true(power >= 0.95);
    double size = mean_fail_rate_floor_at(40.0, 1.0, true, 200, 41, &floor_pass);
    double size_default = mean_fail_rate_floor_at(5.0, 1.0, true, 200, 41, &at_default);
    double no_rule = mean_fail_rate_floor_at(NAN, 1.0, true, 200, 41, &at_default);
    printf("no change, current side busy, 10 v 10: mean FAIL %.3f with the floor at 40%%, %.3f "
           "at 5%%, %.3f without the floor rule\n",
           size, size_default, no_rule);
    assert_true(no_rule >= 0.5); /* the interference is there to be held back */
    assert_true(size <= size_default + 1e-12);
    assert_true(size <= 0.05);
    /* the floor 3% slower (below the mean's 5%), every fourth step 60% slower on top: the mean
     * FAILs, held back, and the note gives the floor's move for what it is */
    struct cg_thresholds t;
    struct cg_err err;
    struct cg_artifact b, c;
    struct cg_verdict v;
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);
    struct cg_fixture fb = FX(10, 30, 1e7, 0.005, 0.002, -1, 1),
                      fc = FX(10, 30, 1.03e7, 0.005, 0.002, -1, 2);
    make(&b, &fb);
    make(&c, &fc);
    for (size_t r = 0; r < c.n_runs; r++) { /* every fourth step, a phase of its own per run */
        for (size_t s = r % 4; s < c.runs[r].n_steps; s += 4)
            c.runs[r].steps[s].wall_ns = c.runs[r].steps[s].wall_ns * 8 / 5;
        cg_run_summarize(&c.runs[r]);
    }
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    const struct cg_metric_result *f = &v.metrics[CG_M_STEP_TIME_FLOOR],
                                  *mean = &v.metrics[CG_M_STEP_TIME_MEAN];
    assert_true(f->delta_pct > 1.5 && f->delta_pct < 5.0);
    assert_int_equal(mean->outcome, CG_OUT_INCONCLUSIVE);
    assert_null(strstr(mean->note, "did not slow down ("));
    assert_non_null(strstr(mean->note, "less than this row's threshold"));
    cg_verdict_release(&v);
    cg_artifact_release(&b);
    cg_artifact_release(&c);
}

/* The decision ladder, rung by rung, at the default mean's limits (5%, alpha 0.05) and at a
 * sequential look's smaller alpha: the boundaries are strict for the threshold and inclusive for
 * alpha, and a NAN never passes a comparison. */
static void test_verdict__classify_ladder(void **state)
{
    (void)state;
    const struct cg_metric_limits lim = {5.0, NAN, 0.05, 3}, look = {5.0, NAN, 0.01, 3};
    const struct {
        const struct cg_metric_limits *lim;
        struct cg_evidence e;
        enum cg_rung rung;
        enum cg_outcome outcome;
    } ladder[] = {
        {&lim, {12.0, 0.01, 0.99, true}, CG_RUNG_FAIL, CG_OUT_FAIL},
        {&lim, {12.0, 0.05, 0.99, true}, CG_RUNG_FAIL, CG_OUT_FAIL},
        {&lim, {12.0, 0.2, 0.8, true}, CG_RUNG_NOT_SIGNIFICANT, CG_OUT_INCONCLUSIVE},
        {&lim, {12.0, 0.001, 0.99, false}, CG_RUNG_TOO_FEW_RUNS, CG_OUT_INCONCLUSIVE},
        {&lim, {12.0, NAN, NAN, true}, CG_RUNG_NOT_SIGNIFICANT, CG_OUT_INCONCLUSIVE},
        {&look, {12.0, 0.02, 0.98, true}, CG_RUNG_NOT_SIGNIFICANT, CG_OUT_INCONCLUSIVE},
        {&look, {12.0, 0.01, 0.99, true}, CG_RUNG_FAIL, CG_OUT_FAIL},
        {&lim, {5.0, 0.001, 0.99, true}, CG_RUNG_PASS, CG_OUT_PASS},
        {&lim, {3.0, 0.001, 0.99, true}, CG_RUNG_PASS, CG_OUT_PASS},
        {&lim, {-12.0, 0.99, 0.01, true}, CG_RUNG_IMPROVED, CG_OUT_IMPROVED},
        {&lim, {-12.0, 0.99, 0.01, false}, CG_RUNG_IMPROVED, CG_OUT_IMPROVED},
        {&lim, {-12.0, 0.8, 0.2, true}, CG_RUNG_PASS, CG_OUT_PASS},
        {&lim, {-12.0, 0.99, NAN, true}, CG_RUNG_PASS, CG_OUT_PASS},
        {&lim, {-5.0, 0.99, 0.001, true}, CG_RUNG_PASS, CG_OUT_PASS},
        {&lim, {NAN, 0.001, 0.001, true}, CG_RUNG_PASS, CG_OUT_PASS},
        /* the noise analysis asks whether evidence fails at any threshold */
        {&lim, {INFINITY, 0.01, NAN, true}, CG_RUNG_FAIL, CG_OUT_FAIL},
        {&lim, {INFINITY, 0.01, NAN, false}, CG_RUNG_TOO_FEW_RUNS, CG_OUT_INCONCLUSIVE},
    };
    for (size_t i = 0; i < sizeof(ladder) / sizeof(ladder[0]); i++) {
        enum cg_rung rung = cg_ladder_classify(&ladder[i].e, ladder[i].lim);
        if (rung != ladder[i].rung || cg_ladder_outcome(rung) != ladder[i].outcome)
            fail_msg("case %zu: rung %d (want %d), %s", i, rung, ladder[i].rung,
                     cg_outcome_name(cg_ladder_outcome(rung)));
    }
}

/* The JSON verdict is valid UTF-8 whatever the names: ops named with invalid bytes (repaired as
 * they enter the artifact) and a thresholds path from the command line with invalid bytes. */
static void test_verdict__json_verdict_is_valid_utf8(void **state)
{
    (void)state;
    struct cg_thresholds t;
    struct cg_err err;
    struct cg_artifact b, k;
    struct cg_verdict v;
    struct cg_fixture fb = FX(5, 30, 1e7, 0.005, 0.01, -1, 1), fk = FX(5, 30, 1.3e7, 0.005, 0.01, -1, 2);
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);
    snprintf(t.source, sizeof(t.source), "thr\xff\xfe.json");
    make(&b, &fb);
    make(&k, &fk);
    for (size_t r = 0; r < k.n_runs; r++) {
        double per_step = k.runs[r].summary.step_time_mean_ns * (double)k.runs[r].n_steps;
        assert_int_equal(cg_run_add_op(&k.runs[r], "kern\xc0\xaf", NULL, CG_OP_KERNEL, 30,
                                       (int64_t)(per_step * 0.2)), 0);
    }
    assert_int_equal(cg_verdict_compute(&b, &k, &t, &v, &err), 0);
    char *json = cg_report_json(&v);
    assert_non_null(json);
    assert_true(cg_test_strict_utf8(json));
    assert_non_null(strstr(json, "kern\xef\xbf\xbd\xef\xbf\xbd"));
    assert_non_null(strstr(json, "thr\xef\xbf\xbd\xef\xbf\xbd.json"));
    free(json);
    cg_verdict_release(&v);
    cg_artifact_release(&b);
    cg_artifact_release(&k);
}

/* A baseline with fewer runs than every timing metric's min_runs can never FAIL a slowdown: it
 * must say so instead of passing. Its timing metrics are INCONCLUSIVE (more current runs cannot
 * help), the headline says why and what to do, and --fail-on-inconclusive exits 4. */
static void test_verdict__baseline_too_small_to_detect_anything_says_so(void **state)
{
    (void)state;
    struct cg_thresholds t;
    struct cg_err err;
    struct cg_artifact b, same, slow;
    struct cg_verdict v;
    char line[512];
    struct cg_fixture fb = FX(2, 30, 1e7, 0.005, 0.01, -1, 1);
    struct cg_fixture fs = FX(15, 30, 1e7, 0.005, 0.01, -1, 2), fl = FX(15, 30, 1.5e7, 0.005, 0.01, -1, 3);
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);
    assert_int_equal(cg_verdict_min_baseline_runs(&t), 3);
    make(&b, &fb);
    make(&same, &fs);
    make(&slow, &fl);
    const struct cg_artifact *cur[2] = {&same, &slow};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(cg_verdict_compute(&b, cur[i], &t, &v, &err), 0);
        assert_true(v.weak_baseline);
        assert_int_equal(v.overall, CG_OUT_INCONCLUSIVE);
        for (int m = CG_M_STEP_TIME_MEAN; m <= CG_M_TOKENS_PER_SEC; m++) {
            assert_int_equal(v.metrics[m].outcome, CG_OUT_INCONCLUSIVE);
            assert_false(v.metrics[m].wants_runs);
        }
        assert_non_null(strstr(v.metrics[CG_M_STEP_TIME_MEAN].note, "the baseline has 2 runs"));
        cg_verdict_headline(&v, line, sizeof(line));
        if (strstr(line, "INCONCLUSIVE: the baseline has 2 runs, fewer than the 3 a regression needs "
                         "to FAIL") == NULL ||
            strstr(line, "record it again with at least 3 runs") == NULL)
            fail_msg("headline: %s", line);
        cg_verdict_release(&v);
    }
    /* the slowdown is named in the headline too */
    assert_int_equal(cg_verdict_compute(&b, &slow, &t, &v, &err), 0);
    cg_verdict_headline(&v, line, sizeof(line));
    if (strstr(line, "(step time mean +49.") == NULL && strstr(line, "(step time mean +50.") == NULL)
        fail_msg("headline: %s", line);
    cg_verdict_release(&v);
    /* enough runs: not weak, a plain PASS */
    assert_int_equal(cg_verdict_compute(&same, &same, &t, &v, &err), 0);
    assert_false(v.weak_baseline);
    assert_int_equal(v.overall, CG_OUT_PASS);
    cg_verdict_release(&v);
    /* whatever the thresholds say (smoke's min_runs was once 1): timing needs 3 runs a side */
    assert_int_equal(cg_thresholds_load("smoke", &t, &err), 0);
    t.metric[CG_M_STEP_TIME_MEAN].min_runs = 1;
    assert_int_equal(cg_verdict_min_baseline_runs(&t), 3);
    assert_int_equal(cg_verdict_compute(&b, &same, &t, &v, &err), 0);
    assert_true(v.weak_baseline);
    assert_int_equal(v.overall, CG_OUT_INCONCLUSIVE);
    cg_verdict_release(&v);
    assert_int_equal(cg_verdict_compute(&same, &b, &t, &v, &err), 0);
    assert_false(v.weak_baseline);
    assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_INCONCLUSIVE);
    assert_true(v.metrics[CG_M_STEP_TIME_MEAN].wants_runs);
    assert_non_null(strstr(v.metrics[CG_M_STEP_TIME_MEAN].note,
                           "timing needs 3 runs a side: one process cannot show how much "
                           "processes differ (15 and 2 runs)"));
    cg_verdict_release(&v);
    cg_artifact_release(&b);
    cg_artifact_release(&same);
    cg_artifact_release(&slow);
}

/* The current run as measured on a machine with a GPU whose canary never initialised CUDA (a
 * change broke CUDA and training fell back to the CPU): no GPU metrics, no GPU model. */
static void lose_gpu(struct cg_artifact *a, const char *driver)
{
    a->gpu_available = false;
    a->cuda_initialised = 0;
    free(a->gpu_reason);
    a->gpu_reason = strdup("the canary never initialised CUDA (no CUDA context, so no CUPTI activity)");
    free(a->env.gpu_model);
    a->env.gpu_model = NULL;
    a->env.gpu_count = 0;
    free(a->env.cuda_version);
    a->env.cuda_version = NULL;
    free(a->env.driver_version);
    a->env.driver_version = driver != NULL ? strdup(driver) : NULL;
    for (size_t r = 0; r < a->n_runs; r++)
        a->runs[r].summary.peak_device_bytes = -1;
}

/* Losing the GPU is a regression, not a different machine: the baseline measured the GPU, this
 * machine has one (its NVIDIA driver is loaded) and the canary never initialised CUDA. FAIL with
 * that reason, at any speed. Without a driver it is another machine (INCONCLUSIVE, as before);
 * a canary that initialised CUDA but could not trace it (CUPTI held by a profiler) lost nothing. */
static void test_verdict__gpu_lost_is_a_fail(void **state)
{
    (void)state;
    struct cg_thresholds t;
    struct cg_err err;
    struct cg_artifact b, k;
    struct cg_verdict v;
    char line[512];
    struct cg_fixture fb = FX(15, 30, 1e7, 0.005, 0.01, 1000000000, 1);
    struct cg_fixture speeds[2] = {FX(15, 30, 1e7, 0.005, 0.01, 1000000000, 2),
                                   FX(15, 30, 1e8, 0.005, 0.01, 1000000000, 2)};
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);
    make(&b, &fb);
    assert_int_equal(b.cuda_initialised, -1); /* fixtures do not say */
    b.cuda_initialised = 1;
    for (int i = 0; i < 2; i++) {
        make(&k, &speeds[i]);
        lose_gpu(&k, b.env.driver_version);
        assert_int_equal(cg_verdict_compute(&b, &k, &t, &v, &err), 0);
        assert_true(v.gpu_lost);
        assert_null(v.machine_diff);
        assert_int_equal(v.overall, CG_OUT_FAIL);
        const struct cg_metric_result *dev = &v.metrics[CG_M_PEAK_DEVICE_MEMORY];
        assert_int_equal(dev->outcome, CG_OUT_FAIL);
        assert_non_null(strstr(dev->note, "the canary did not use the GPU"));
        if (i == 1)
            assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_FAIL);
        cg_verdict_headline(&v, line, sizeof(line));
        if (strncmp(line, "FAIL: the canary did not use the GPU", 36) != 0)
            fail_msg("headline: %s", line);
        char *json = cg_report_json(&v);
        assert_non_null(strstr(json, "\"gpu_lost\":\ttrue"));
        free(json);
        cg_verdict_release(&v);
        cg_artifact_release(&k);
    }
    /* no NVIDIA driver on this machine: another machine, not a lost GPU */
    make(&k, &speeds[1]);
    lose_gpu(&k, NULL);
    assert_int_equal(cg_verdict_compute(&b, &k, &t, &v, &err), 0);
    assert_false(v.gpu_lost);
    assert_non_null(v.machine_diff);
    assert_int_equal(v.overall, CG_OUT_INCONCLUSIVE);
    cg_verdict_release(&v);
    /* CUDA initialised, CUPTI unavailable: GPU metrics missing, the GPU was used */
    k.cuda_initialised = 1;
    free(k.env.driver_version);
    k.env.driver_version = strdup(b.env.driver_version);
    assert_int_equal(cg_verdict_compute(&b, &k, &t, &v, &err), 0);
    assert_false(v.gpu_lost);
    cg_verdict_release(&v);
    /* unknown (an artifact written before this was recorded): not judged lost */
    k.cuda_initialised = -1;
    assert_int_equal(cg_verdict_compute(&b, &k, &t, &v, &err), 0);
    assert_false(v.gpu_lost);
    cg_verdict_release(&v);
    cg_artifact_release(&k);
    cg_artifact_release(&b);
}

/* A side measured with CUPTI held by another subscriber (a PR that adds torch.profiler): CUDA
 * initialised, the same driver and CPU, no GPU metrics (no GPU model or CUDA version read, no
 * device memory), with its reason. */
static void hold_cupti(struct cg_artifact *a, const struct cg_artifact *like, bool keep_model)
{
    a->gpu_available = false;
    a->cuda_initialised = 1;
    free(a->gpu_reason);
    a->gpu_reason = strdup("another profiler holds the CUPTI subscriber slot: torch.profiler");
    if (!keep_model) {
        free(a->env.gpu_model);
        a->env.gpu_model = NULL;
        a->env.gpu_count = 0;
        free(a->env.cuda_version);
        a->env.cuda_version = NULL;
    }
    free(a->env.driver_version);
    a->env.driver_version = strdup(like->env.driver_version);
    for (size_t r = 0; r < a->n_runs; r++)
        a->runs[r].summary.peak_device_bytes = -1;
}

/* GPU metrics missing on the same machine are not a different machine: the step times measured
 * on both sides decide (+30%: FAIL), device memory is unavailable on that side with the reason,
 * and the headline speaks of the step time. A different driver or CPU is still another machine;
 * so is a side without GPU metrics whose canary never said it initialised CUDA. */
static void test_verdict__missing_gpu_metrics_on_the_same_machine_still_gate_step_time(void **state)
{
    (void)state;
    struct cg_thresholds t;
    struct cg_err err;
    struct cg_artifact b, k;
    struct cg_verdict v;
    char line[512];
    struct cg_fixture fb = FX(15, 30, 1e7, 0.005, 0.01, 1000000000, 1);
    struct cg_fixture fk = FX(15, 30, 1.3e7, 0.005, 0.01, 1000000000, 2);
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);
    make(&b, &fb);
    b.cuda_initialised = 1;
    for (int keep_model = 0; keep_model < 2; keep_model++) {
        make(&k, &fk);
        hold_cupti(&k, &b, keep_model);
        assert_int_equal(cg_verdict_compute(&b, &k, &t, &v, &err), 0);
        assert_false(v.gpu_lost);
        if (v.machine_diff != NULL)
            fail_msg("read as another machine: %s", v.machine_diff);
        assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_FAIL);
        assert_int_equal(v.overall, CG_OUT_FAIL);
        const struct cg_metric_result *dev = &v.metrics[CG_M_PEAK_DEVICE_MEMORY];
        assert_int_equal(dev->outcome, CG_OUT_UNAVAILABLE);
        if (strstr(dev->note, "GPU metrics unavailable in the current runs: another profiler "
                              "holds the CUPTI subscriber slot: torch.profiler") == NULL)
            fail_msg("device memory note: %s", dev->note);
        cg_verdict_headline(&v, line, sizeof(line));
        /* the worst FAIL by how far beyond its threshold: the floor's +30% against 3% */
        if (strncmp(line, "FAIL: Step time floor regressed", 31) != 0)
            fail_msg("headline: %s", line);
        cg_verdict_release(&v);
        /* the other way round: the baseline's GPU metrics are the missing ones */
        assert_int_equal(cg_verdict_compute(&k, &b, &t, &v, &err), 0);
        assert_null(v.machine_diff);
        assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_IMPROVED);
        assert_non_null(strstr(v.metrics[CG_M_PEAK_DEVICE_MEMORY].note,
                               "GPU metrics unavailable in the baseline runs: another profiler"));
        cg_verdict_release(&v);
        cg_artifact_release(&k);
    }
    /* another driver, another CPU, a GPU model that differs, CUDA not known to be initialised:
     * another machine, as before */
    for (int i = 0; i < 4; i++) {
        make(&k, &fk);
        hold_cupti(&k, &b, i == 2);
        if (i == 0) {
            free(k.env.driver_version);
            k.env.driver_version = strdup("590.10");
        } else if (i == 1) {
            free(k.env.cpu_model);
            k.env.cpu_model = strdup("Other CPU");
        } else if (i == 2) {
            free(k.env.gpu_model);
            k.env.gpu_model = strdup("Other GPU 40GB");
        } else {
            k.cuda_initialised = -1;
        }
        assert_int_equal(cg_verdict_compute(&b, &k, &t, &v, &err), 0);
        assert_non_null(v.machine_diff);
        assert_string_equal(v.machine_diff, "gpu.available");
        assert_int_equal(v.overall, CG_OUT_INCONCLUSIVE);
        assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_INCONCLUSIVE);
        cg_verdict_release(&v);
        cg_artifact_release(&k);
    }
    cg_artifact_release(&b);
}

/* tokens/sec measured on the baseline and missing, zero or partly missing on this run is a change
 * of the canary, not a PASS: INCONCLUSIVE with the reason (more runs cannot help). */
static void test_verdict__tokens_per_sec_that_vanish_are_a_change(void **state)
{
    (void)state;
    struct cg_thresholds t;
    struct cg_err err;
    struct cg_artifact b, k;
    struct cg_verdict v;
    char line[512];
    struct cg_fixture fb = FX(15, 30, 1e7, 0.005, 0.01, -1, 1);
    struct cg_fixture none = FX(15, 30, 1e7, 0.005, 0.01, -1, 2);
    none.tokens = -1;
    struct cg_fixture zero = none;
    zero.tokens = 0;
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);
    make(&b, &fb);
    const struct cg_fixture *kinds[3] = {&none, &zero, &fb};
    for (int i = 0; i < 3; i++) {
        make(&k, kinds[i]);
        if (i == 2) { /* every other run without tokens */
            for (size_t r = 0; r < k.n_runs; r += 2) {
                for (size_t s = 0; s < k.runs[r].n_steps; s++)
                    k.runs[r].steps[s].tokens = -1;
                cg_run_summarize(&k.runs[r]);
            }
        }
        assert_int_equal(cg_verdict_compute(&b, &k, &t, &v, &err), 0);
        const struct cg_metric_result *r = &v.metrics[CG_M_TOKENS_PER_SEC];
        if (r->outcome != CG_OUT_INCONCLUSIVE || !r->vanished || r->wants_runs ||
            strstr(r->note, "measured on the baseline, not on this run") == NULL)
            fail_msg("case %d: %s, note '%s'", i, cg_outcome_name(r->outcome), r->note);
        assert_int_equal(v.overall, CG_OUT_INCONCLUSIVE);
        cg_verdict_headline(&v, line, sizeof(line));
        if (strstr(line, "INCONCLUSIVE: tokens/sec vanished") == NULL)
            fail_msg("case %d headline: %s", i, line);
        cg_verdict_release(&v);
        cg_artifact_release(&k);
    }
    /* neither side counts tokens: nothing vanished */
    make(&k, &none);
    assert_int_equal(cg_verdict_compute(&k, &k, &t, &v, &err), 0);
    assert_int_equal(v.metrics[CG_M_TOKENS_PER_SEC].outcome, CG_OUT_UNAVAILABLE);
    assert_int_equal(v.overall, CG_OUT_PASS);
    cg_verdict_release(&v);
    cg_artifact_release(&k);
    cg_artifact_release(&b);
}

/* Sets every run's counts of ranges named as a step that were no step. */
static void set_stray_steps(struct cg_artifact *a, int64_t nested, int64_t other)
{
    for (size_t r = 0; r < a->n_runs; r++) {
        a->runs[r].stray_steps_nested = nested;
        a->runs[r].stray_steps_other_threads = other;
    }
}

/* Issue 37, item 9: a canary whose steps are marked differently on the two sides (ranges named
 * as a step nested in its steps, or on a side thread, on one side only) is INCONCLUSIVE with the
 * reason, whatever the timing says; alike on both sides, timing decides. */
static void test_verdict__steps_marked_differently_between_sides_are_inconclusive(void **state)
{
    (void)state;
    struct cg_thresholds t;
    struct cg_err err;
    struct cg_artifact b, k;
    struct cg_verdict v;
    char line[512];
    struct cg_fixture fb = FX(15, 30, 1e7, 0.005, 0.01, -1, 1);
    struct cg_fixture same = FX(15, 30, 1e7, 0.005, 0.01, -1, 2);
    struct cg_fixture slow = FX(15, 30, 2e7, 0.005, 0.01, -1, 3);
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);
    const struct {
        const struct cg_fixture *cur;
        int64_t base[2], cur_n[2]; /* nested, other threads; -1 unknown */
        enum cg_outcome overall;
        const char *note; /* in the step time mean's note and the headline, or NULL */
    } rows[] = {
        {&same, {0, 0}, {30, 0}, CG_OUT_INCONCLUSIVE,
         "the sides mark steps differently: 'step' ranges that were no steps: baseline 0 "
         "nested, 0 on other threads; current 450 nested, 0 on other threads"},
        {&slow, {0, 0}, {0, 80}, CG_OUT_INCONCLUSIVE,
         "baseline 0 nested, 0 on other threads; current 0 nested, 1200 on other threads"},
        {&same, {0, 5}, {7, 0}, CG_OUT_INCONCLUSIVE, "the sides mark steps differently"},
        {&same, {-1, -1}, {3, 0}, CG_OUT_INCONCLUSIVE,
         "baseline not counted (runs of an older canary-gate)"},
        {&same, {2, 0}, {30, 0}, CG_OUT_PASS, NULL},
        {&slow, {0, 3}, {0, 9}, CG_OUT_FAIL, NULL},
        {&same, {0, 0}, {0, 0}, CG_OUT_PASS, NULL},
        {&same, {-1, -1}, {0, 0}, CG_OUT_PASS, NULL},
        {&slow, {-1, -1}, {-1, -1}, CG_OUT_FAIL, NULL},
    };
    make(&b, &fb);
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        make(&k, rows[i].cur);
        set_stray_steps(&b, rows[i].base[0], rows[i].base[1]);
        set_stray_steps(&k, rows[i].cur_n[0], rows[i].cur_n[1]);
        assert_int_equal(cg_verdict_compute(&b, &k, &t, &v, &err), 0);
        const struct cg_metric_result *r = &v.metrics[CG_M_STEP_TIME_MEAN];
        cg_verdict_headline(&v, line, sizeof(line));
        if (v.overall != rows[i].overall)
            fail_msg("row %zu: %s, expected %s: %s", i, cg_outcome_name(v.overall),
                     cg_outcome_name(rows[i].overall), line);
        if (rows[i].note != NULL) {
            if (r->outcome != CG_OUT_INCONCLUSIVE || r->wants_runs ||
                strstr(r->note, rows[i].note) == NULL || strstr(line, rows[i].note) == NULL)
                fail_msg("row %zu: %s, note '%s', headline '%s'", i, cg_outcome_name(r->outcome),
                         r->note, line);
            /* memory is no step's: it still decides */
            assert_int_not_equal(v.metrics[CG_M_PEAK_HOST_RSS].outcome, CG_OUT_INCONCLUSIVE);
        } else {
            assert_string_equal(v.steps_differ, "");
        }
        cg_verdict_release(&v);
        cg_artifact_release(&k);
    }
    cg_artifact_release(&b);
}

/* Steps defined differently on the two sides: the baseline timed whole optimizer steps, the
 * current marks its own (a pull request that wraps opt.step() in canary_gate.step), the sides'
 * step ranges have other names, or their steps are another optimizer's (--step-optimizer: a
 * GAN's generator on one side, its critic, stepping 5 times an iteration, on the other). A step
 * is then another unit of work: its time and its counts per step cannot be compared, and a 2.5x
 * slower iteration read -94% ("improved", PASS) with a note "still gated". Now INCONCLUSIVE with
 * the reason; memory still decides. A side that did not record its counted optimizer (older) is
 * taken as the other's. */
static void test_verdict__steps_defined_differently_are_inconclusive(void **state)
{
    (void)state;
    struct cg_thresholds t;
    struct cg_err err;
    struct cg_artifact b, k;
    struct cg_verdict v;
    char line[512];
    struct cg_fixture fb = FX(15, 30, 2e7, 0.005, 0.01, -1, 1);
    struct cg_fixture fast = FX(15, 30, 1e6, 0.005, 0.01, -1, 2);
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);
    const struct {
        const char *from[2], *range[2];
        enum cg_outcome overall;
        const char *note;
        int64_t optimizer[2]; /* settings.step_optimizer; 0: as make() leaves it (unknown) */
    } rows[] = {
        {{"optimizer", "nvtx"},
         {"step", "step"},
         CG_OUT_INCONCLUSIVE,
         "the sides define a step differently: baseline's steps from the optimizer, current's "
         "from NVTX ranges",
         {0, 0}},
        {{"nvtx", "nvtx"},
         {"step", "train_step"},
         CG_OUT_INCONCLUSIVE,
         "the sides define a step differently: baseline's range 'step', current's "
         "'train_step'",
         {0, 0}},
        {{"nvtx", "nvtx"}, {"step", "step"}, CG_OUT_PASS, NULL, {0, 0}}, /* improved: passes */
        {{NULL, "nvtx"}, {"step", "step"}, CG_OUT_PASS, NULL, {0, 0}},   /* older: not recorded */
        {{"optimizer", "optimizer"},
         {"step", "step"},
         CG_OUT_INCONCLUSIVE,
         "the sides define a step differently: baseline's steps are optimizer 2's, current's "
         "optimizer 1's",
         {2, 1}},
        {{"optimizer", NULL}, {"step", "step"}, CG_OUT_INCONCLUSIVE, "optimizer 1's", {1, 3}},
        {{"optimizer", "optimizer"}, {"step", "step"}, CG_OUT_PASS, NULL, {2, 2}},
        {{"optimizer", "optimizer"}, {"step", "step"}, CG_OUT_PASS, NULL, {-1, 2}}, /* older */
        {{"nvtx", "nvtx"}, {"step", "step"}, CG_OUT_PASS, NULL, {2, 1}}, /* no optimizer counted */
    };
    make(&b, &fb);
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        make(&k, &fast);
        struct cg_artifact *side[2] = {&b, &k};
        for (int j = 0; j < 2; j++) {
            free(side[j]->settings.steps_from);
            free(side[j]->settings.step_range);
            side[j]->settings.steps_from = rows[i].from[j] ? strdup(rows[i].from[j]) : NULL;
            side[j]->settings.step_range = strdup(rows[i].range[j]);
            if (rows[i].optimizer[j] != 0)
                side[j]->settings.step_optimizer = rows[i].optimizer[j];
        }
        assert_int_equal(cg_verdict_compute(&b, &k, &t, &v, &err), 0);
        const struct cg_metric_result *r = &v.metrics[CG_M_STEP_TIME_MEAN];
        cg_verdict_headline(&v, line, sizeof(line));
        if (v.overall != rows[i].overall)
            fail_msg("row %zu: %s, expected %s: %s", i, cg_outcome_name(v.overall),
                     cg_outcome_name(rows[i].overall), line);
        if (rows[i].note != NULL) {
            if (r->outcome != CG_OUT_INCONCLUSIVE || strstr(r->note, rows[i].note) == NULL ||
                strstr(line, rows[i].note) == NULL)
                fail_msg("row %zu: %s, note '%s', headline '%s'", i, cg_outcome_name(r->outcome),
                         r->note, line);
            for (size_t c = 0; c < v.counts.n; c++)
                if (v.counts.rows[c].outcome == CG_OUT_PASS ||
                    v.counts.rows[c].outcome == CG_OUT_FAIL)
                    fail_msg("row %zu: count %zu still decides", i, c);
            assert_int_not_equal(v.metrics[CG_M_PEAK_HOST_RSS].outcome, CG_OUT_INCONCLUSIVE);
            assert_null(v.canary_diff); /* said by the reason, not as a changed canary */
            /* another difference besides the steps' is still named */
            free(k.env.canary_id);
            k.env.canary_id = strdup("another canary");
            free(b.env.canary_id);
            b.env.canary_id = strdup("the canary");
            cg_verdict_release(&v);
            assert_int_equal(cg_verdict_compute(&b, &k, &t, &v, &err), 0);
            assert_non_null(v.canary_diff);
            assert_string_equal(v.canary_diff, "environment.canary_id");
            free(b.env.canary_id);
            b.env.canary_id = NULL;
        }
        cg_verdict_release(&v);
        cg_artifact_release(&k);
    }
    cg_artifact_release(&b);
}

/* Sets every step's backward passes and optimizer steps of a's runs: value, and extra more in
 * every every-th step of every run (every 0: none); run 0's own extra0 more in each step. */
static void set_work(struct cg_artifact *a, int64_t value, int64_t extra, size_t every,
                     int64_t extra0)
{
    for (size_t i = 0; i < a->n_runs; i++)
        for (size_t k = 0; k < a->runs[i].n_steps; k++) {
            int64_t x = value + (every > 0 && k % every == 0 ? extra : 0) + (i == 0 ? extra0 : 0);
            a->runs[i].steps[k].counts[CG_COUNT_BACKWARD] = x;
            a->runs[i].steps[k].counts[CG_COUNT_OPTIMIZER_STEPS] = value < 0 ? -1 : 2;
        }
}

/* Steps from the optimizer that hold other work on the two sides: a pull request that makes
 * the counted critic step five times a loop (each counted step is then 1.2 backward passes
 * rather than 2, and much shorter), or accumulates gradients over four backward passes, PASSed
 * (-39%) or FAILed (+266%) as if the same step were faster or slower. Now INCONCLUSIVE with the
 * reason, when every run of one side lies outside the other's and the sides differ by more than
 * 2%; steps the canary marks itself define the step, and sides that did not count are not
 * judged. */
static void test_verdict__optimizer_steps_holding_other_work_are_inconclusive(void **state)
{
    (void)state;
    struct cg_thresholds t;
    struct cg_err err;
    struct cg_artifact b, k;
    struct cg_verdict v;
    char line[512];
    struct cg_fixture fb = FX(15, 30, 2e7, 0.005, 0.01, -1, 1);
    struct cg_fixture fast = FX(15, 30, 1e7, 0.005, 0.01, -1, 2);
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);
    const struct {
        const char *from;
        int64_t base[4], cur[4]; /* set_work's value, extra, every, extra0 */
        enum cg_outcome overall;
        const char *note;
    } rows[] = {
        /* the critic stepping 5 times a loop: 2 -> 1.2 backward passes a step */
        {"optimizer",
         {2, 0, 0, 0},
         {1, 1, 5, 0},
         CG_OUT_INCONCLUSIVE,
         "hold different work: per step, backward passes 2 -> 1.2 and optimizer steps 2 -> 2"},
        {"optimizer", {1, 0, 0, 0}, {4, 0, 0, 0}, CG_OUT_INCONCLUSIVE, "backward passes 1 -> 4"},
        {"optimizer", {2, 0, 0, 0}, {2, 0, 0, 0}, CG_OUT_PASS, NULL},   /* the same work */
        {"optimizer", {2, 0, 0, 0}, {-1, 0, 0, 0}, CG_OUT_PASS, NULL},  /* not counted */
        {"nvtx", {2, 0, 0, 0}, {1, 1, 5, 0}, CG_OUT_PASS, NULL},        /* its own steps */
        {"optimizer", {50, 0, 0, 0}, {50, 1, 2, 0}, CG_OUT_PASS, NULL}, /* 1%: within 2% */
        {"optimizer", {1, 0, 0, 1}, {2, 0, 0, 0}, CG_OUT_PASS, NULL},   /* runs overlap */
    };
    make(&b, &fb);
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        make(&k, &fast);
        struct cg_artifact *side[2] = {&b, &k};
        for (int j = 0; j < 2; j++) {
            free(side[j]->settings.steps_from);
            side[j]->settings.steps_from = strdup(rows[i].from);
        }
        set_work(&b, rows[i].base[0], rows[i].base[1], (size_t)rows[i].base[2], rows[i].base[3]);
        set_work(&k, rows[i].cur[0], rows[i].cur[1], (size_t)rows[i].cur[2], rows[i].cur[3]);
        assert_int_equal(cg_verdict_compute(&b, &k, &t, &v, &err), 0);
        const struct cg_metric_result *r = &v.metrics[CG_M_STEP_TIME_MEAN];
        cg_verdict_headline(&v, line, sizeof(line));
        if (v.overall != rows[i].overall)
            fail_msg("row %zu: %s, expected %s: %s", i, cg_outcome_name(v.overall),
                     cg_outcome_name(rows[i].overall), line);
        if (rows[i].note != NULL) {
            if (r->outcome != CG_OUT_INCONCLUSIVE || strstr(r->note, rows[i].note) == NULL ||
                !v.steps_redefined)
                fail_msg("row %zu: %s, note '%s'", i, cg_outcome_name(r->outcome), r->note);
            for (size_t c = 0; c < v.counts.n; c++)
                if (v.counts.rows[c].outcome == CG_OUT_PASS ||
                    v.counts.rows[c].outcome == CG_OUT_FAIL)
                    fail_msg("row %zu: count %zu still decides", i, c);
        } else if (v.steps_redefined) {
            fail_msg("row %zu: steps redefined: %s", i, v.steps_differ);
        }
        cg_verdict_release(&v);
        cg_artifact_release(&k);
    }
    cg_artifact_release(&b);
}

/* ---- step work: size under the null and power, simulated --------------------------------- */

static uint64_t work_rng(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* A loop of the simulation (per iteration: backward passes, the counted optimizer's steps, other
 * optimizers' steps; skip: the share of iterations whose counted step a loss scaler skips, so
 * that the step runs on into the next iteration). */
struct work_loop {
    int64_t backward, counted, others;
    double skip;
};

/* Sets a's steps' backward passes and optimizer steps as loop l makes them. */
static void simulate_work(struct cg_artifact *a, const struct work_loop *l, uint64_t *rng)
{
    for (size_t i = 0; i < a->n_runs; i++)
        for (size_t k = 0; k < a->runs[i].n_steps; k++) {
            int64_t iters = 1;
            while ((double)(work_rng(rng) % 1000000) / 1e6 < l->skip)
                iters++;
            /* a counted optimizer stepping c times an iteration ends a step at each: one step
             * holds 1/c of the iteration's backward passes and other optimizers' steps */
            int64_t b = l->backward * iters, o = l->others * iters;
            if (l->counted > 1) {
                b = (int64_t)(work_rng(rng) % (uint64_t)l->counted) < b % l->counted
                        ? b / l->counted + 1
                        : b / l->counted;
                o = (int64_t)(work_rng(rng) % (uint64_t)l->counted) < o % l->counted
                        ? o / l->counted + 1
                        : o / l->counted;
            }
            a->runs[i].steps[k].counts[CG_COUNT_BACKWARD] = b;
            a->runs[i].steps[k].counts[CG_COUNT_OPTIMIZER_STEPS] = 1 + o;
        }
}

/* Which share of comparisons find the sides' steps holding different work: the baseline's loop
 * against the current one's, 5 runs of 30 steps a side, steps from the optimizer. */
static double work_differs_share(const struct work_loop *base, const struct work_loop *cur,
                                 size_t reps, uint64_t seed)
{
    struct cg_fixture fb = FX(5, 30, 2e7, 0.005, 0.01, -1, 1);
    struct cg_fixture fc = FX(5, 30, 2e7, 0.005, 0.01, -1, 2);
    struct cg_artifact b, c;
    make(&b, &fb);
    make(&c, &fc);
    struct cg_artifact *side[2] = {&b, &c};
    for (int j = 0; j < 2; j++) {
        free(side[j]->settings.steps_from);
        side[j]->settings.steps_from = strdup("optimizer");
    }
    uint64_t rng = seed;
    size_t found = 0;
    char why[512];
    for (size_t r = 0; r < reps; r++) {
        simulate_work(&b, base, &rng);
        simulate_work(&c, cur, &rng);
        found += cg_verdict_steps_redefined(&b, &c, why, sizeof(why));
    }
    cg_artifact_release(&b);
    cg_artifact_release(&c);
    return (double)found / (double)reps;
}

/* What a step from the optimizer holds is its backward passes: a pull request that splits one
 * optimizer into two over the same parameters, or adds one, changes the optimizer steps a step
 * holds (1 -> 2) but not the step, and was INCONCLUSIVE ("the sides' steps hold different work")
 * rather than compared. Optimizer steps decide only where neither side made a backward pass
 * (gradients taken with torch.autograd.grad). Size under the null (the same loop on both sides,
 * a loss scaler skipping 2% or 10% of steps at random): at most 1% of comparisons; power: a
 * critic counted stepping 5 times a loop, gradients accumulated over 4 passes, and the critic of
 * a loop without backward passes stepping 5 times: found in every comparison. */
static void test_verdict__step_work_is_its_backward_passes(void **state)
{
    (void)state;
    const size_t reps = 300;
    const struct {
        const char *what;
        struct work_loop base, cur;
        double lo, hi; /* the share found */
    } rows[] = {
        {"the same loop", {1, 1, 0, 0.0}, {1, 1, 0, 0.0}, 0.0, 0.0},
        {"a scaler skipping 2% of steps", {1, 1, 0, 0.02}, {1, 1, 0, 0.02}, 0.0, 0.01},
        {"a scaler skipping 10% of steps, a GAN", {2, 1, 1, 0.10}, {2, 1, 1, 0.10}, 0.0, 0.01},
        {"one optimizer split into two", {1, 1, 0, 0.0}, {1, 1, 1, 0.0}, 0.0, 0.0},
        {"an optimizer added, a scaler skipping", {1, 1, 0, 0.02}, {1, 1, 1, 0.02}, 0.0, 0.01},
        {"a GAN's critic counted, 5 steps a loop", {2, 1, 1, 0.0}, {6, 5, 1, 0.0}, 1.0, 1.0},
        {"4 backward passes a step", {1, 1, 0, 0.02}, {4, 1, 0, 0.02}, 1.0, 1.0},
        {"no backward pass, the critic 5 steps a loop", {0, 1, 1, 0.0}, {0, 5, 1, 0.0}, 1.0, 1.0},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        double share = work_differs_share(&rows[i].base, &rows[i].cur, reps, 0x9e3779b9u + i);
        print_message("step work: %-45s found in %5.1f%% of %zu comparisons\n", rows[i].what,
                      100.0 * share, reps);
        if (share < rows[i].lo || share > rows[i].hi)
            fail_msg("%s: found in %.1f%% of comparisons, expected %.0f%% to %.0f%%", rows[i].what,
                     100.0 * share, 100.0 * rows[i].lo, 100.0 * rows[i].hi);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verdict__table),
        cmocka_unit_test(test_verdict__optimizer_steps_holding_other_work_are_inconclusive),
        cmocka_unit_test(test_verdict__step_work_is_its_backward_passes),
        cmocka_unit_test(test_verdict__floor_sees_through_interference),
        cmocka_unit_test(test_verdict__periodic_slowdown_fails_despite_the_floor),
        cmocka_unit_test(test_verdict__interference_is_not_periodic),
        cmocka_unit_test(test_verdict__floor_needs_min_runs),
        cmocka_unit_test(test_verdict__run_floor_and_fast_runs),
        cmocka_unit_test(test_verdict__floor_size_with_iid_runs),
        cmocka_unit_test(test_verdict__floor_power_with_iid_runs),
        cmocka_unit_test(test_verdict__states_size_under_no_change),
        cmocka_unit_test(test_verdict__states_power),
        cmocka_unit_test(test_verdict__a_side_that_landed_slow_is_named),
        cmocka_unit_test(test_verdict__headline_names_the_worst_fail),
        cmocka_unit_test(test_verdict__floor_p_equals_every_split_enumerated),
        cmocka_unit_test(test_verdict__floor_needs_fast_runs),
        cmocka_unit_test(test_verdict__floor_without_fast_runs_is_inconclusive),
        cmocka_unit_test(test_verdict__floor_rule),
        cmocka_unit_test(test_verdict__floor_rule_stands_when_the_floor_moved_as_far),
        cmocka_unit_test(test_verdict__classify_ladder),
        cmocka_unit_test(test_verdict__json_verdict_is_valid_utf8),
        cmocka_unit_test(test_verdict__baseline_too_small_to_detect_anything_says_so),
        cmocka_unit_test(test_verdict__gpu_lost_is_a_fail),
        cmocka_unit_test(
            test_verdict__missing_gpu_metrics_on_the_same_machine_still_gate_step_time),
        cmocka_unit_test(test_verdict__tokens_per_sec_that_vanish_are_a_change),
        cmocka_unit_test(test_verdict__steps_marked_differently_between_sides_are_inconclusive),
        cmocka_unit_test(test_verdict__steps_defined_differently_are_inconclusive),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
