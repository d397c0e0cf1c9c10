/* test_gpu_rule: energy per token and MFU as gated metrics (with their size under no change and
 * power, simulated), and the GPU rule: runs the GPU held back, clocks that moved and GPU
 * settings that differ, on fixture artifacts carrying GPU states. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fixtures.h"
#include <cjson/cJSON.h>
#include "report.h"
#include "stats.h"
#include "verdict.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FX(runs, mean, rn, seed) {runs, 20, mean, rn, 0.01, 1024, 1 << 30, 200000000, 2, seed}

static cJSON *json_of(const struct cg_verdict *v)
{
    char *text = cg_report_json(v);
    assert_non_null(text);
    cJSON *j = cJSON_Parse(text);
    free(text);
    assert_non_null(j);
    return j;
}

static struct cg_thresholds thresholds(void)
{
    struct cg_thresholds t;
    struct cg_err err;
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);
    return t;
}

static void make(struct cg_artifact *a, size_t runs, double mean_ns, double run_noise,
                 uint64_t seed, double j_per_token, double mfu, int64_t sm_mhz)
{
    struct cg_fixture f = FX(runs, mean_ns, run_noise, seed);
    cg_artifact_init(a);
    assert_int_equal(cg_fixture_make(a, &f), 0);
    assert_int_equal(cg_fixture_set_gpu(a, j_per_token, mfu, sm_mhz), 0);
}

static double unit_uniform(uint64_t *rng)
{
    return ((double)(cg_stats_rand(rng) >> 11) + 0.5) / 9007199254740992.0;
}

static double std_normal(uint64_t *rng)
{
    return sqrt(-2.0 * log(unit_uniform(rng))) * cos(2.0 * M_PI * unit_uniform(rng));
}

/* Each run's energy per token and MFU drawn lognormal around j and mfu with spread cv. */
static void draw_gpu(struct cg_artifact *a, double j, double mfu, double cv, uint64_t *rng)
{
    for (size_t r = 0; r < a->n_runs; r++) {
        struct cg_run *run = &a->runs[r];
        run->gpu.energy_j = j * exp(cv * std_normal(rng)) * (double)cg_run_tokens(run);
        run->gpu.mfu = mfu * exp(cv * std_normal(rng));
    }
}

static void test_gpu_rule__energy_and_mfu_are_gated_over_runs(void **state)
{
    (void)state;
    struct cg_thresholds t = thresholds();
    struct cg_artifact b, c;
    struct cg_err err;
    struct cg_verdict v;
    make(&b, 15, 1e7, 0.01, 1, 0.50, 0.40, 1755);
    make(&c, 15, 1e7, 0.01, 2, 0.50, 0.40, 1755);
    uint64_t rng = 7;
    draw_gpu(&b, 0.50, 0.40, 0.01, &rng);
    draw_gpu(&c, 0.50, 0.40, 0.01, &rng);
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    assert_int_equal(v.metrics[CG_M_ENERGY_PER_TOKEN].outcome, CG_OUT_PASS);
    assert_int_equal(v.metrics[CG_M_MFU].outcome, CG_OUT_PASS);
    assert_int_equal(v.metrics[CG_M_ENERGY_PER_TOKEN].method, CG_METHOD_RUNS);
    assert_float_equal(v.metrics[CG_M_ENERGY_PER_TOKEN].threshold_pct, 5.0, 0);
    assert_true(fabs(v.metrics[CG_M_ENERGY_PER_TOKEN].baseline - 0.50) < 0.01);
    cg_verdict_release(&v);
    /* 10% more energy per token and 10% less MFU, step time unchanged: energy FAILs; MFU, a
     * throughput, waits for the floor as tokens/sec does (the floor rule) */
    draw_gpu(&c, 0.55, 0.36, 0.01, &rng);
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    assert_int_equal(v.metrics[CG_M_ENERGY_PER_TOKEN].outcome, CG_OUT_FAIL);
    assert_int_equal(v.metrics[CG_M_MFU].outcome, CG_OUT_INCONCLUSIVE);
    assert_non_null(strstr(v.metrics[CG_M_MFU].note, "the fastest steps did not slow down"));
    cg_verdict_release(&v);
    t.require_floor = false;
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    assert_int_equal(v.metrics[CG_M_ENERGY_PER_TOKEN].outcome, CG_OUT_FAIL);
    assert_true(v.metrics[CG_M_ENERGY_PER_TOKEN].delta_pct > 8.0);
    assert_int_equal(v.metrics[CG_M_MFU].outcome, CG_OUT_FAIL);
    assert_true(v.metrics[CG_M_MFU].regression_pct > 8.0); /* lower MFU is worse */
    assert_true(v.metrics[CG_M_MFU].delta_pct < -8.0);
    assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_PASS);
    assert_int_equal(v.overall, CG_OUT_FAIL);
    struct cg_buf out;
    cg_buf_init(&out, 1 << 20);
    assert_int_equal(cg_report_terminal(&v, false, &out, &err), 0);
    assert_non_null(strstr(cg_buf_str(&out), "energy_per_token"));
    assert_non_null(strstr(cg_buf_str(&out), "J/tok"));
    assert_non_null(strstr(cg_buf_str(&out), "% MFU"));
    cg_buf_release(&out);
    cg_verdict_release(&v);
    /* two current runs: shown, never judged, whatever the change */
    struct cg_artifact two;
    make(&two, 2, 1e7, 0.01, 3, 0.60, 0.30, 1755);
    assert_int_equal(cg_verdict_compute(&b, &two, &t, &v, &err), 0);
    for (int m = CG_M_ENERGY_PER_TOKEN; m <= CG_M_MFU; m++) {
        assert_int_equal(v.metrics[m].outcome, CG_OUT_INCONCLUSIVE);
        assert_non_null(strstr(v.metrics[m].note, "timing needs 3 runs a side"));
        assert_true(fabs(v.metrics[m].delta_pct) > 15.0); /* the medians' change, shown */
    }
    cg_verdict_release(&v);
    cg_artifact_release(&two);
    cg_artifact_release(&b);
    cg_artifact_release(&c);
}

static void test_gpu_rule__without_data_the_row_says_why(void **state)
{
    (void)state;
    struct cg_thresholds t = thresholds();
    struct cg_artifact b, c;
    struct cg_err err;
    struct cg_verdict v;
    make(&b, 5, 1e7, 0.01, 1, 0.5, NAN, 1755);
    make(&c, 5, 1e7, 0.01, 2, 0.5, NAN, 1755);
    for (size_t r = 0; r < c.n_runs; r++) { /* a GPU without an energy counter */
        c.runs[r].gpu.energy_j = NAN;
        c.runs[r].gpu.energy_reason = strdup("no energy counter (NVML does not give one for "
                                             "this GPU)");
    }
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    assert_int_equal(v.metrics[CG_M_MFU].outcome, CG_OUT_UNAVAILABLE);
    assert_string_equal(v.metrics[CG_M_MFU].note, "not available: give --flops-per-token");
    assert_int_equal(v.metrics[CG_M_ENERGY_PER_TOKEN].outcome, CG_OUT_UNAVAILABLE);
    assert_string_equal(v.metrics[CG_M_ENERGY_PER_TOKEN].note,
                        "not available on this run: no energy counter (NVML does not give one "
                        "for this GPU)");
    struct cg_buf out;
    cg_buf_init(&out, 1 << 20);
    assert_int_equal(cg_report_markdown(&v, NULL, &out, &err), 0);
    /* the note is escaped as artifact text may be: the ':' as an entity, rendered the same */
    assert_non_null(strstr(cg_buf_str(&out), "| MFU | n/a | n/a | &mdash; | &mdash; | -5.0% | "
                                             "n/a: not available&#58; give --flops-per-token |"));
    assert_non_null(strstr(cg_buf_str(&out), "| Energy per token |"));
    assert_non_null(strstr(cg_buf_str(&out), "| GPU settings | clocks not locked, power limit "
                                             "700 W, persistence mode on |"));
    cg_buf_release(&out);
    cJSON *j = json_of(&v), *ms = cJSON_GetObjectItem(j, "metrics");
    assert_int_equal(cJSON_GetArraySize(ms), CG_M_COUNT);
    cJSON *mfu = cJSON_GetArrayItem(ms, CG_M_MFU);
    assert_string_equal(cJSON_GetObjectItem(mfu, "name")->valuestring, "mfu");
    assert_string_equal(cJSON_GetObjectItem(mfu, "outcome")->valuestring, "unavailable");
    assert_string_equal(cJSON_GetObjectItem(mfu, "note")->valuestring,
                        "not available: give --flops-per-token");
    cJSON_Delete(j);
    cg_verdict_release(&v);
    /* artifacts from before the GPU state: no rows in the tables, listed in the JSON */
    struct cg_artifact ob, oc;
    struct cg_fixture f = FX(5, 1e7, 0.01, 1);
    cg_artifact_init(&ob);
    cg_artifact_init(&oc);
    assert_int_equal(cg_fixture_make(&ob, &f), 0);
    assert_int_equal(cg_fixture_make(&oc, &f), 0);
    assert_int_equal(cg_verdict_compute(&ob, &oc, &t, &v, &err), 0);
    assert_false(cg_report_metric_shown(&v, CG_M_MFU));
    assert_true(cg_report_metric_shown(&v, CG_M_PEAK_HOST_RSS));
    cg_buf_init(&out, 1 << 20);
    assert_int_equal(cg_report_markdown(&v, NULL, &out, &err), 0);
    assert_null(strstr(cg_buf_str(&out), "| MFU |"));
    assert_null(strstr(cg_buf_str(&out), "GPU settings"));
    cg_buf_release(&out);
    assert_string_equal(v.metrics[CG_M_MFU].note,
                        "not available: not recorded (an artifact from before the GPU state was)");
    cg_verdict_release(&v);
    /* MFU over different FLOPs per token is not compared */
    cg_artifact_release(&ob);
    cg_artifact_release(&oc);
    make(&ob, 5, 1e7, 0.01, 1, 0.5, 0.4, 1755);
    make(&oc, 5, 1e7, 0.01, 2, 0.5, 0.4, 1755);
    oc.settings.flops_per_token = 2000;
    assert_int_equal(cg_verdict_compute(&ob, &oc, &t, &v, &err), 0);
    assert_int_equal(v.metrics[CG_M_MFU].outcome, CG_OUT_UNAVAILABLE);
    assert_non_null(strstr(v.metrics[CG_M_MFU].note, "1000 and 2000 FLOPs per token"));
    cg_verdict_release(&v);
    cg_artifact_release(&ob);
    cg_artifact_release(&oc);
    cg_artifact_release(&b);
    cg_artifact_release(&c);
}

/* ---- size and power of the new gated metrics, simulated ---------------------------------- */

/* The share of reps comparisons of n runs a side, each run's energy per token and MFU drawn
 * lognormal with spread cv, the current side's shifted by shift (energy up, MFU down by the same
 * factor), in which energy per token and MFU FAIL. */
static void gpu_fail_rates(size_t n, double cv, double shift, size_t reps, uint64_t seed,
                           double *energy, double *mfu)
{
    struct cg_thresholds t = thresholds();
    t.require_floor = false; /* the timing metrics are not what this measures */
    struct cg_artifact b, c;
    struct cg_err err;
    make(&b, n, 1e7, 0.0, 1, 0.5, 0.4, 1755);
    make(&c, n, 1e7, 0.0, 2, 0.5, 0.4, 1755);
    uint64_t rng = seed;
    size_t fe = 0, fm = 0;
    for (size_t k = 0; k < reps; k++) {
        draw_gpu(&b, 0.5, 0.4, cv, &rng);
        draw_gpu(&c, 0.5 * (1.0 + shift), 0.4 / (1.0 + shift), cv, &rng);
        struct cg_verdict v;
        assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
        fe += v.metrics[CG_M_ENERGY_PER_TOKEN].outcome == CG_OUT_FAIL;
        fm += v.metrics[CG_M_MFU].outcome == CG_OUT_FAIL;
        cg_verdict_release(&v);
    }
    *energy = (double)fe / (double)reps;
    *mfu = (double)fm / (double)reps;
    cg_artifact_release(&b);
    cg_artifact_release(&c);
}

/* Size: under no change, at run-to-run spreads of 2%, 5% and 10%, 15 v 15 and 5 v 5, neither
 * metric FAILs more than alpha + 3 standard errors of 400 comparisons (0.05 + 3 sqrt(0.05 x
 * 0.95 / 400) = 0.0827); FAIL needs the change beyond 5% and significance, so at small spreads
 * it is near 0. The rates are printed (docs/statistics.md). */
static void test_gpu_rule__size_under_no_change(void **state)
{
    (void)state;
    const double cvs[] = {0.02, 0.05, 0.10};
    const size_t ns[] = {15, 5};
    const double bound = 0.05 + 3.0 * sqrt(0.05 * 0.95 / 400.0);
    for (size_t z = 0; z < 2; z++) {
        for (size_t k = 0; k < 3; k++) {
            double e, m;
            gpu_fail_rates(ns[z], cvs[k], 0.0, 400, 101 + 3 * z + k, &e, &m);
            printf("gpu metrics, no change, %zu v %zu, CV %.0f%%: energy FAIL %.4f, MFU FAIL "
                   "%.4f\n",
                   ns[z], ns[z], cvs[k] * 100.0, e, m);
            assert_true(e <= bound);
            assert_true(m <= bound);
        }
    }
}

/* Power: 10% more energy per token (and 10% less MFU) at a spread of 2% is found nearly always at
 * 15 v 15 and 5 v 5; 20% at a spread of 5% at 15 v 15; a change inside the threshold (+3%) is
 * not a FAIL. 200 comparisons a case. */
static void test_gpu_rule__power(void **state)
{
    (void)state;
    double e, m;
    gpu_fail_rates(15, 0.02, 0.10, 200, 201, &e, &m);
    printf("gpu metrics, +10%%, 15 v 15, CV 2%%: energy FAIL %.3f, MFU FAIL %.3f\n", e, m);
    assert_true(e >= 0.95 && m >= 0.95);
    gpu_fail_rates(5, 0.02, 0.10, 200, 202, &e, &m);
    printf("gpu metrics, +10%%, 5 v 5, CV 2%%: energy FAIL %.3f, MFU FAIL %.3f\n", e, m);
    assert_true(e >= 0.90 && m >= 0.90);
    gpu_fail_rates(15, 0.05, 0.20, 200, 203, &e, &m);
    printf("gpu metrics, +20%%, 15 v 15, CV 5%%: energy FAIL %.3f, MFU FAIL %.3f\n", e, m);
    assert_true(e >= 0.95 && m >= 0.95);
    gpu_fail_rates(15, 0.02, 0.03, 200, 204, &e, &m);
    printf("gpu metrics, +3%%, 15 v 15, CV 2%%: energy FAIL %.3f, MFU FAIL %.3f\n", e, m);
    assert_true(e <= 0.01 && m <= 0.01);
}

/* ---- the GPU rule -------------------------------------------------------------------------- */

/* Runs [first, first + n) of a take factor times as long a step (whole runs). */
static void slow_runs(struct cg_artifact *a, size_t first, size_t n, double factor)
{
    for (size_t r = first; r < first + n && r < a->n_runs; r++) {
        for (size_t k = 0; k < a->runs[r].n_steps; k++)
            a->runs[r].steps[k].wall_ns = (int64_t)((double)a->runs[r].steps[k].wall_ns * factor);
        cg_run_summarize(&a->runs[r]);
    }
}

static void test_gpu_rule__throttled_runs_that_decide_are_inconclusive(void **state)
{
    (void)state;
    struct cg_thresholds t = thresholds();
    struct cg_artifact b, c;
    struct cg_err err;
    struct cg_verdict v;
    make(&b, 15, 1e7, 0.01, 1, 0.5, 0.4, 1755);
    make(&c, 15, 1e7, 0.01, 2, 0.5, 0.4, 1755);
    /* every current run 20% slower, 6 of them measured under HW slowdown: the 9 clean runs
     * FAIL it too, so the FAIL stands, and the report says the GPU held runs back */
    slow_runs(&c, 0, 15, 1.2);
    cg_fixture_hold(&c, 0, 6, CG_GPU_R_HW_SLOWDOWN, 12);
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    assert_int_equal(v.gpu.held[1], 6);
    assert_int_equal(v.gpu.held[0], 0);
    assert_string_equal(v.gpu.reason, "GPU 0 throttled (HW slowdown) during 6 of 15 current runs");
    assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_FAIL);
    assert_false(v.gpu.decided);
    assert_int_equal(v.overall, CG_OUT_FAIL);
    cg_verdict_release(&v);
    /* every current run throttled: nothing clean to judge from, never FAIL */
    cg_fixture_hold(&c, 0, 15, CG_GPU_R_HW_SLOWDOWN, 12);
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    const struct cg_metric_result *mean = &v.metrics[CG_M_STEP_TIME_MEAN];
    assert_int_equal(mean->outcome, CG_OUT_INCONCLUSIVE);
    assert_string_equal(mean->note, "GPU 0 throttled (HW slowdown) during 15 of 15 current "
                                    "runs; too few runs without them to judge");
    assert_true(v.gpu.decided);
    assert_int_equal(v.overall, CG_OUT_INCONCLUSIVE);
    char line[512];
    cg_verdict_headline(&v, line, sizeof(line));
    assert_non_null(strstr(line, "INCONCLUSIVE"));
    assert_non_null(strstr(line, "GPU 0 throttled (HW slowdown) during 15 of 15 current runs"));
    struct cg_buf out;
    cg_buf_init(&out, 1 << 20);
    assert_int_equal(cg_report_markdown(&v, NULL, &out, &err), 0);
    assert_non_null(strstr(cg_buf_str(&out), "**The GPU's own state:** GPU 0 throttled (HW "
                                             "slowdown) during 15 of 15 current runs."));
    cg_buf_release(&out);
    cJSON *j = json_of(&v), *g = cJSON_GetObjectItem(j, "gpu_state");
    assert_int_equal(cJSON_GetObjectItem(g, "held_current_runs")->valueint, 15);
    assert_int_equal(cJSON_GetObjectItem(g, "held_baseline_runs")->valueint, 0);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(g, "made_inconclusive")));
    cJSON_Delete(j);
    cg_verdict_release(&v);
    cg_artifact_release(&c);
    /* 9 of 15 current runs 30% slower, and those 9 had another process on the GPU: without them
     * it would not FAIL (the floor rule off, so the GPU rule alone decides) */
    make(&c, 15, 1e7, 0.01, 2, 0.5, 0.4, 1755);
    slow_runs(&c, 0, 9, 1.3);
    t.require_floor = false;
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_FAIL); /* before: a FAIL */
    cg_verdict_release(&v);
    cg_fixture_hold(&c, 0, 9, -1, 20);
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    mean = &v.metrics[CG_M_STEP_TIME_MEAN];
    assert_int_equal(mean->outcome, CG_OUT_INCONCLUSIVE);
    assert_non_null(strstr(mean->note, "another process on GPU 0 during 9 of 15 current runs; "
                                       "without those runs it would not FAIL"));
    assert_int_equal(v.overall, CG_OUT_INCONCLUSIVE);
    cg_verdict_release(&v);
    /* the power cap is the workload's own: it marks nothing */
    cg_artifact_release(&c);
    make(&c, 15, 1e7, 0.01, 2, 0.5, 0.4, 1755);
    slow_runs(&c, 0, 15, 1.2);
    cg_fixture_hold(&c, 0, 15, CG_GPU_R_SW_POWER_CAP, 50);
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    assert_int_equal(v.gpu.held[1], 0);
    assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_FAIL);
    cg_verdict_release(&v);
    cg_artifact_release(&b);
    cg_artifact_release(&c);
}

static void test_gpu_rule__clocks_that_moved_make_a_fail_inconclusive(void **state)
{
    (void)state;
    struct cg_thresholds t = thresholds();
    struct cg_artifact b, c;
    struct cg_err err;
    struct cg_verdict v;
    make(&b, 15, 1e7, 0.01, 1, 0.5, 0.4, 1980);
    make(&c, 15, 1e7, 0.01, 2, 0.5, 0.4, 1755);
    slow_runs(&c, 0, 15, 1.12);
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    assert_true(v.gpu.clocks_moved);
    assert_string_equal(v.gpu.clock_reason,
                        "the SM clock's median moved from 1980 to 1755 MHz between the sides "
                        "(-11.4%)");
    assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_INCONCLUSIVE);
    assert_non_null(strstr(v.metrics[CG_M_STEP_TIME_MEAN].note, "1980 to 1755 MHz"));
    assert_int_equal(v.overall, CG_OUT_INCONCLUSIVE);
    assert_null(v.machine_diff);
    cg_verdict_release(&v);
    /* held by its own power draw: the workload's doing, the FAIL stands */
    cg_fixture_hold(&c, 0, 15, CG_GPU_R_SW_POWER_CAP, 40);
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    assert_false(v.gpu.clocks_moved);
    assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_FAIL);
    cg_verdict_release(&v);
    /* within CG_GPU_CLOCK_MOVED_PCT: not moved */
    cg_artifact_release(&c);
    make(&c, 15, 1e7, 0.01, 2, 0.5, 0.4, 1935);
    slow_runs(&c, 0, 15, 1.12);
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    assert_false(v.gpu.clocks_moved);
    assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_FAIL);
    cg_verdict_release(&v);
    /* application clocks differ */
    c.env.gpu_env.app_sm_mhz = 1410;
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    assert_true(v.gpu.clocks_moved);
    assert_string_equal(v.gpu.clock_reason, "the application clocks differ (SM 1755 MHz on the "
                                            "baseline, 1410 MHz here)");
    assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_INCONCLUSIVE);
    cg_verdict_release(&v);
    cg_artifact_release(&b);
    cg_artifact_release(&c);
}

/* The share of reps comparisons of n runs a side, the baseline at base_mhz and the current side
 * at cur_mhz with every step `factor` times as long (run-to-run spread 2%), the first held_base
 * and held_cur runs of each under HW slowdown in 12 of their 50 samples, in which the step time
 * mean FAILs. */
static double mean_fail_rate(size_t n, int64_t base_mhz, size_t held_base, int64_t cur_mhz,
                             size_t held_cur, double factor, size_t reps, uint64_t seed)
{
    struct cg_thresholds t = thresholds();
    struct cg_err err;
    size_t fails = 0;
    for (size_t k = 0; k < reps; k++) {
        struct cg_artifact b, c;
        struct cg_verdict v;
        make(&b, n, 1e7, 0.02, seed + 2 * k, 0.5, 0.4, base_mhz);
        make(&c, n, 1e7, 0.02, seed + 2 * k + 1, 0.5, 0.4, cur_mhz);
        cg_fixture_hold(&b, 0, held_base, CG_GPU_R_HW_SLOWDOWN, 12);
        cg_fixture_hold(&c, 0, held_cur, CG_GPU_R_HW_SLOWDOWN, 12);
        slow_runs(&c, 0, n, factor);
        assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
        fails += v.metrics[CG_M_STEP_TIME_MEAN].outcome == CG_OUT_FAIL;
        cg_verdict_release(&v);
        cg_artifact_release(&b);
        cg_artifact_release(&c);
    }
    return (double)fails / (double)reps;
}

/* A faster clock here cannot make steps slower, tokens/sec lower: a timing FAIL against a side
 * that ran at a lower clock stands (the SM clock's median, or the application clocks); it can
 * explain more energy per token, and MFU (over the clock's peak) lower, which stay held back. */
static void test_gpu_rule__a_faster_clock_here_does_not_excuse_slower_steps(void **state)
{
    (void)state;
    struct cg_thresholds t = thresholds();
    struct cg_artifact b, c;
    struct cg_err err;
    struct cg_verdict v;
    make(&b, 15, 1e7, 0.01, 1, 0.5, 0.4, 1755);
    make(&c, 15, 1e7, 0.01, 2, 0.5, 0.4, 1980);
    slow_runs(&c, 0, 15, 1.3);
    uint64_t rng = 11;
    draw_gpu(&b, 0.50, 0.40, 0.01, &rng);
    draw_gpu(&c, 0.60, 0.30, 0.01, &rng);
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    assert_true(v.gpu.clocks_moved);
    for (int m = CG_M_STEP_TIME_MEAN; m <= CG_M_TOKENS_PER_SEC; m++)
        assert_int_equal(v.metrics[m].outcome, CG_OUT_FAIL);
    assert_int_equal(v.metrics[CG_M_ENERGY_PER_TOKEN].outcome, CG_OUT_INCONCLUSIVE);
    assert_int_equal(v.metrics[CG_M_MFU].outcome, CG_OUT_INCONCLUSIVE);
    assert_non_null(strstr(v.metrics[CG_M_MFU].note, "1755 to 1980 MHz"));
    assert_int_equal(v.overall, CG_OUT_FAIL);
    cg_verdict_release(&v);
    /* application clocks higher here, the SM clock's median as the baseline's */
    cg_artifact_release(&c);
    make(&c, 15, 1e7, 0.01, 2, 0.5, 0.4, 1755);
    slow_runs(&c, 0, 15, 1.3);
    b.env.gpu_env.app_sm_mhz = 1410;
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    assert_true(v.gpu.clocks_moved);
    assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_FAIL);
    assert_int_equal(v.overall, CG_OUT_FAIL);
    cg_verdict_release(&v);
    /* lower here: the clocks may explain it */
    b.env.gpu_env.app_sm_mhz = 1980;
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_INCONCLUSIVE);
    cg_verdict_release(&v);
    cg_artifact_release(&b);
    cg_artifact_release(&c); /* size and power, simulated (the clock taken to change nothing, the
                              * worst case for size): under no change, the current side at a higher
                              * clock, the mean FAILs at most alpha + 3 standard errors of 200
                              * comparisons; 10% slower at the higher clock is found, 5 v 5 */
    double size = mean_fail_rate(5, 1755, 0, 1980, 0, 1.0, 200, 301);
    double power = mean_fail_rate(5, 1755, 0, 1980, 0, 1.1, 200, 701);
    printf("clock higher here, 5 v 5, spread 2%%: mean FAIL %.3f under no change, %.3f at +10%%\n",
           size, power);
    assert_true(size <= 0.05 + 3.0 * sqrt(0.05 * 0.95 / 200.0));
    assert_true(power >= 0.95);
}

/* A throttled baseline is slower: it can only hide a slowdown, so a timing FAIL against it stands
 * (energy per token and MFU, which throttling moves either way, are still judged on the clean
 * runs). A cause seen in 1% of a run's samples or fewer does not hold the run back. */
static void test_gpu_rule__a_throttled_baseline_does_not_excuse_a_slower_current_side(void **state)
{
    (void)state;
    struct cg_thresholds t = thresholds();
    struct cg_artifact b, c;
    struct cg_err err;
    struct cg_verdict v;
    make(&b, 15, 1e7, 0.01, 1, 0.5, 0.4, 1755);
    make(&c, 15, 1e7, 0.01, 2, 0.5, 0.4, 1755);
    slow_runs(&c, 0, 15, 1.3);
    cg_fixture_hold(&b, 0, 13, CG_GPU_R_HW_SLOWDOWN, 12);
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    assert_int_equal(v.gpu.held[0], 13);
    assert_int_equal(v.gpu.held[1], 0);
    for (int m = CG_M_STEP_TIME_MEAN; m <= CG_M_TOKENS_PER_SEC; m++)
        assert_int_equal(v.metrics[m].outcome, CG_OUT_FAIL);
    assert_false(v.gpu.decided);
    assert_int_equal(v.overall, CG_OUT_FAIL);
    cg_verdict_release(&v);
    /* more energy per token here, the baseline throttled: too few clean baseline runs to judge */
    uint64_t rng = 5;
    draw_gpu(&b, 0.50, 0.40, 0.01, &rng);
    draw_gpu(&c, 0.60, 0.40, 0.01, &rng);
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    assert_int_equal(v.metrics[CG_M_ENERGY_PER_TOKEN].outcome, CG_OUT_INCONCLUSIVE);
    assert_non_null(strstr(v.metrics[CG_M_ENERGY_PER_TOKEN].note, "13 of 15 baseline runs"));
    assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_FAIL);
    cg_verdict_release(&v);
    /* one sample in 200 under HW slowdown in every current run: not held back */
    cg_artifact_release(&b);
    make(&b, 15, 1e7, 0.01, 1, 0.5, 0.4, 1755);
    for (size_t r = 0; r < c.n_runs; r++)
        c.runs[r].gpu.dev[0].samples = 200;
    cg_fixture_hold(&c, 0, 15, CG_GPU_R_HW_SLOWDOWN, 1);
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    assert_int_equal(v.gpu.held[1], 0);
    assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_FAIL);
    cg_verdict_release(&v);
    cg_fixture_hold(&c, 0, 15, CG_GPU_R_HW_SLOWDOWN, 3); /* 1.5%: held back */
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    assert_int_equal(v.gpu.held[1], 15);
    assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_INCONCLUSIVE);
    cg_verdict_release(&v);
    cg_artifact_release(&b);
    cg_artifact_release(&c);
    /* size and power, simulated (the throttling taken to slow nothing, the worst case for size):
     * under no change, every baseline run throttled, the mean FAILs at most alpha + 3 standard
     * errors of 200 comparisons; 10% slower is found, 5 v 5 */
    double size = mean_fail_rate(5, 1755, 5, 1755, 0, 1.0, 200, 901);
    double power = mean_fail_rate(5, 1755, 5, 1755, 0, 1.1, 200, 1301);
    printf("baseline throttled, 5 v 5, spread 2%%: mean FAIL %.3f under no change, %.3f at "
           "+10%%\n",
           size, power);
    assert_true(size <= 0.05 + 3.0 * sqrt(0.05 * 0.95 / 200.0));
    assert_true(power >= 0.95);
}

/* A cause that held back every run of both sides is the machine's condition, alike on both (a
 * process of another tenant that stays, a GPU that always throttles): it holds no run back, and
 * a FAIL stands; a cause on one side only still decides as before. */
static void test_gpu_rule__a_cause_in_every_run_of_both_sides_holds_none_back(void **state)
{
    (void)state;
    struct cg_thresholds t = thresholds();
    struct cg_artifact b, c;
    struct cg_err err;
    struct cg_verdict v;
    make(&b, 8, 1e7, 0.01, 1, 0.5, 0.4, 1755);
    make(&c, 8, 1e7, 0.01, 2, 0.5, 0.4, 1755);
    slow_runs(&c, 0, 8, 1.2);
    cg_fixture_hold(&b, 0, 8, -1, 50);
    cg_fixture_hold(&c, 0, 8, -1, 50);
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    assert_int_equal(v.gpu.held[0], 0);
    assert_int_equal(v.gpu.held[1], 0);
    assert_string_equal(v.gpu.reason, "another process on GPU 0 during every run of both sides "
                                      "(alike on both: no run held back for it)");
    assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_FAIL);
    assert_false(v.gpu.decided);
    assert_int_equal(v.overall, CG_OUT_FAIL);
    cg_verdict_release(&v);
    /* and HW slowdown in 3 current runs on top: those still decide */
    cg_fixture_hold(&c, 0, 3, CG_GPU_R_HW_SLOWDOWN, 12);
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    assert_int_equal(v.gpu.held[1], 3);
    assert_non_null(strstr(v.gpu.reason, "GPU 0 throttled (HW slowdown) during 3 of 8 current"));
    assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_FAIL); /* 5 clean FAIL too */
    cg_verdict_release(&v);
    /* one baseline run without it: not the machine's constant, the current side's runs held */
    cg_artifact_release(&b);
    make(&b, 8, 1e7, 0.01, 1, 0.5, 0.4, 1755);
    cg_fixture_hold(&b, 0, 7, -1, 50);
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    assert_int_equal(v.gpu.held[1], 8);
    assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_INCONCLUSIVE);
    cg_verdict_release(&v);
    cg_artifact_release(&b);
    cg_artifact_release(&c);
    /* size and power, simulated (every run of both sides throttled, taken to slow nothing): under
     * no change the mean FAILs at most alpha + 3 standard errors of 200 comparisons; 10% slower
     * is found, 5 v 5 */
    double size = mean_fail_rate(5, 1755, 5, 1755, 5, 1.0, 200, 1701);
    double power = mean_fail_rate(5, 1755, 5, 1755, 5, 1.1, 200, 2101);
    printf("every run of both sides throttled, 5 v 5, spread 2%%: mean FAIL %.3f under no change, "
           "%.3f at +10%%\n",
           size, power);
    assert_true(size <= 0.05 + 3.0 * sqrt(0.05 * 0.95 / 200.0));
    assert_true(power >= 0.95);
}

/* The share of reps comparisons of n runs a side (run-to-run spread `spread`) in which the step
 * time mean and the floor FAIL: the first held_base baseline runs and the first held_cur current
 * runs under HW slowdown in 25 of their 50 samples and held_factor times as long a step, every
 * current run `factor` times as long besides. */
static void held_fail_rates(size_t n, double spread, size_t held_base, size_t held_cur,
                            double held_factor, double factor, size_t reps, uint64_t seed,
                            double *mean, double *floor_)
{
    struct cg_thresholds t = thresholds();
    struct cg_err err;
    size_t fm = 0, ff = 0;
    for (size_t k = 0; k < reps; k++) {
        struct cg_artifact b, c;
        struct cg_verdict v;
        make(&b, n, 1e7, spread, seed + 2 * k, 0.5, 0.4, 1755);
        make(&c, n, 1e7, spread, seed + 2 * k + 1, 0.5, 0.4, 1755);
        cg_fixture_hold(&b, 0, held_base, CG_GPU_R_HW_SLOWDOWN, 25);
        cg_fixture_hold(&c, 0, held_cur, CG_GPU_R_HW_SLOWDOWN, 25);
        slow_runs(&b, 0, held_base, held_factor);
        slow_runs(&c, 0, held_cur, held_factor);
        slow_runs(&c, 0, n, factor);
        assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
        fm += v.metrics[CG_M_STEP_TIME_MEAN].outcome == CG_OUT_FAIL;
        ff += v.metrics[CG_M_STEP_TIME_FLOOR].outcome == CG_OUT_FAIL;
        cg_verdict_release(&v);
        cg_artifact_release(&b);
        cg_artifact_release(&c);
    }
    *mean = (double)fm / (double)reps;
    *floor_ = (double)ff / (double)reps;
}

/* One throttled current run lets the rule re-test the runs the GPU did not hold back; the
 * baseline's throttled runs, slower, are left out of that re-test too (kept, they could only hide
 * a slowdown), so they no longer widen the baseline's spread into excusing a FAIL the clean runs
 * show, and the floor is re-tested as it was tested (its fast state, cg_floor_compare). */
static void test_gpu_rule__the_clean_runs_leave_out_both_sides_held_runs(void **state)
{
    (void)state;
    struct cg_thresholds t = thresholds();
    struct cg_artifact b, c;
    struct cg_err err;
    struct cg_verdict v;
    make(&b, 15, 1e7, 0.01, 1, 0.5, 0.4, 1755);
    make(&c, 15, 1e7, 0.01, 2, 0.5, 0.4, 1755);
    cg_fixture_hold(&b, 0, 5, CG_GPU_R_HW_SLOWDOWN, 25);
    slow_runs(&b, 0, 5, 1.25);
    slow_runs(&c, 0, 15, 1.1);
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    assert_int_equal(v.metrics[CG_M_STEP_TIME_FLOOR].outcome, CG_OUT_FAIL); /* before: a FAIL */
    cg_verdict_release(&v);
    cg_fixture_hold(&c, 0, 1, CG_GPU_R_HW_SLOWDOWN, 25);
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    assert_int_equal(v.gpu.held[0], 5);
    assert_int_equal(v.gpu.held[1], 1);
    const struct cg_metric_result *fl = &v.metrics[CG_M_STEP_TIME_FLOOR];
    assert_int_equal(fl->outcome, CG_OUT_FAIL);
    assert_true(fl->delta_pct > 9.0);
    for (int m = 0; m < CG_M_COUNT; m++)
        assert_null(strstr(v.metrics[m].note, "throttled"));
    assert_false(v.gpu.decided);
    assert_int_equal(v.overall, CG_OUT_FAIL);
    cg_verdict_release(&v);
    /* a baseline with too few runs left keeps its held ones: slower, they can only hide it */
    cg_fixture_hold(&b, 0, 13, CG_GPU_R_HW_SLOWDOWN, 25);
    slow_runs(&c, 0, 15, 1.2);
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    assert_int_equal(v.gpu.held[0], 13);
    assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_FAIL);
    assert_int_equal(v.metrics[CG_M_TOKENS_PER_SEC].outcome, CG_OUT_FAIL);
    assert_false(v.gpu.decided);
    cg_verdict_release(&v);
    /* the floor's re-test keeps its own rule: too few clean runs in the fast state is no FAIL */
    cg_fixture_hold(&c, 0, 13, CG_GPU_R_HW_SLOWDOWN, 25);
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    assert_int_equal(fl->outcome, CG_OUT_INCONCLUSIVE);
    assert_non_null(strstr(fl->note, "during 13 of 15 current runs; too few runs without them"));
    cg_verdict_release(&v);
    cg_artifact_release(&b);
    cg_artifact_release(&c);
    /* size and power, simulated, 15 v 15, 5 baseline runs and 1 current run held, the throttling
     * taken to slow the held runs by nothing or by 25%: under no change the mean and the floor
     * FAIL at most alpha + 3 standard errors of 200 comparisons at spreads of 2% and 10% (at 10%
     * a 5% change is within reach of noise); 10% slower at a spread of 2% is found */
    const double bound = 0.05 + 3.0 * sqrt(0.05 * 0.95 / 200.0);
    const double held_factors[] = {1.0, 1.25}, spreads[] = {0.02, 0.10};
    for (size_t i = 0; i < 2; i++) {
        double mean, floor_;
        for (size_t z = 0; z < 2; z++) {
            held_fail_rates(15, spreads[z], 5, 1, held_factors[i], 1.0, 200, 3101 + 7 * i + z,
                            &mean, &floor_);
            printf("5 baseline runs and 1 current run held (%.2fx), 15 v 15, spread %.0f%%, no "
                   "change: mean FAIL %.3f, floor FAIL %.3f\n",
                   held_factors[i], spreads[z] * 100.0, mean, floor_);
            assert_true(mean <= bound && floor_ <= bound);
        }
        held_fail_rates(15, 0.02, 5, 1, held_factors[i], 1.1, 200, 3501 + 7 * i, &mean, &floor_);
        printf("5 baseline runs and 1 current run held (%.2fx), 15 v 15, spread 2%%, +10%%: mean "
               "FAIL %.3f, floor FAIL %.3f\n",
               held_factors[i], mean, floor_);
        assert_true(mean >= 0.95 && floor_ >= 0.95);
    }
}

/* Every run of a under HW slowdown in lo to hi (drawn) of its 50 samples. */
static void hold_varying(struct cg_artifact *a, int64_t lo, int64_t hi, uint64_t *rng)
{
    for (size_t r = 0; r < a->n_runs; r++)
        cg_fixture_hold(a, r, 1, CG_GPU_R_HW_SLOWDOWN,
                        lo + (int64_t)(cg_stats_rand(rng) % (uint64_t)(hi - lo + 1)));
}

/* The share of reps comparisons of n runs a side (spread 2%), every run of both sides under HW
 * slowdown in 10 to 14 of its 50 samples (a GPU that always throttles, by as much on both), the
 * current side `factor` times as long a step, in which the step time mean FAILs. */
static double varying_fail_rate(size_t n, double factor, size_t reps, uint64_t seed)
{
    struct cg_thresholds t = thresholds();
    struct cg_err err;
    size_t fails = 0;
    uint64_t rng = seed;
    for (size_t k = 0; k < reps; k++) {
        struct cg_artifact b, c;
        struct cg_verdict v;
        make(&b, n, 1e7, 0.02, seed + 2 * k, 0.5, 0.4, 1755);
        make(&c, n, 1e7, 0.02, seed + 2 * k + 1, 0.5, 0.4, 1755);
        hold_varying(&b, 10, 14, &rng);
        hold_varying(&c, 10, 14, &rng);
        slow_runs(&c, 0, n, factor);
        assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
        fails += v.metrics[CG_M_STEP_TIME_MEAN].outcome == CG_OUT_FAIL;
        cg_verdict_release(&v);
        cg_artifact_release(&b);
        cg_artifact_release(&c);
    }
    return (double)fails / (double)reps;
}

/* A cause in every run of both sides is the machine's condition only up to the baseline's share
 * of it: a current run where it filled more of the samples than in any baseline run (by more
 * than CG_GPU_HELD_MIN_SHARE_PCT) is held back for it, so a neighbour that works harder during
 * the current side's runs does not pass for the machine's condition. */
static void test_gpu_rule__a_cause_heavier_here_than_on_the_baseline_holds_runs_back(void **state)
{
    (void)state;
    struct cg_thresholds t = thresholds();
    struct cg_artifact b, c;
    struct cg_err err;
    struct cg_verdict v;
    make(&b, 8, 1e7, 0.01, 1, 0.5, 0.4, 1755);
    make(&c, 8, 1e7, 0.01, 2, 0.5, 0.4, 1755);
    slow_runs(&c, 0, 8, 1.2);
    cg_fixture_hold(&c, 0, 8, -1, 50);
    /* no process on the baseline: every current run held, INCONCLUSIVE */
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    assert_int_equal(v.gpu.held[1], 8);
    assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_INCONCLUSIVE);
    cg_verdict_release(&v);
    /* a process in 2 of 50 samples of every baseline run: still not alike */
    cg_fixture_hold(&b, 0, 8, -1, 2);
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    assert_int_equal(v.gpu.held[1], 8);
    assert_int_equal(v.gpu.held[0], 0);
    assert_null(strstr(v.gpu.reason, "alike on both"));
    assert_string_equal(v.gpu.reason, "another process on GPU 0 during 8 of 8 current runs (more "
                                      "of their samples than in any baseline run)");
    assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_INCONCLUSIVE);
    assert_non_null(strstr(v.metrics[CG_M_STEP_TIME_MEAN].note, "too few runs without them"));
    assert_int_equal(v.overall, CG_OUT_INCONCLUSIVE);
    cg_verdict_release(&v);
    /* in 50 of 50 on the baseline too: alike, none held back, the FAIL stands */
    cg_fixture_hold(&b, 0, 8, -1, 50);
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    assert_int_equal(v.gpu.held[1], 0);
    assert_non_null(strstr(v.gpu.reason, "alike on both"));
    assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_FAIL);
    cg_verdict_release(&v);
    /* 3 current runs heavier than every baseline run: those 3 held, the 5 others FAIL it too */
    cg_fixture_hold(&b, 0, 8, -1, 30);
    cg_fixture_hold(&c, 0, 8, -1, 30);
    cg_fixture_hold(&c, 0, 3, -1, 40);
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    assert_int_equal(v.gpu.held[1], 3);
    assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_FAIL);
    cg_verdict_release(&v);
    cg_artifact_release(&b);
    cg_artifact_release(&c);
    /* size and power, simulated (5 v 5 and 8 v 8, spread 2%, every run of both sides throttled in
     * 10 to 14 of 50 samples, drawn, the throttling taken to slow nothing): under no change the
     * mean FAILs at most alpha + 3 standard errors of 200 comparisons; 10% slower is found */
    const double bound = 0.05 + 3.0 * sqrt(0.05 * 0.95 / 200.0);
    const size_t ns[] = {5, 8};
    for (size_t z = 0; z < 2; z++) {
        double size = varying_fail_rate(ns[z], 1.0, 200, 4101 + z);
        double power = varying_fail_rate(ns[z], 1.1, 200, 4501 + z);
        printf("every run of both sides throttled in 10-14 of 50 samples, %zu v %zu, spread 2%%: "
               "mean FAIL %.3f under no change, %.3f at +10%%\n",
               ns[z], ns[z], size, power);
        assert_true(size <= bound);
        assert_true(power >= 0.90);
    }
}

/* Every run of a on CG_GPU_MAX_DEVICES devices (its device 0 copied), another process on each
 * in every sample, and SW thermal slowdown on the last in every sample. */
static void eight_busy_gpus(struct cg_artifact *a)
{
    for (size_t r = 0; r < a->n_runs; r++) {
        struct cg_gpu_state *g = &a->runs[r].gpu;
        for (size_t i = 1; i < CG_GPU_MAX_DEVICES; i++) {
            g->dev[i] = g->dev[0];
            g->dev[i].index = (int64_t)i;
            g->dev[i].uuid = strdup("GPU-00000000-fixture");
            assert_non_null(g->dev[i].uuid);
        }
        g->n_dev = CG_GPU_MAX_DEVICES;
        for (size_t i = 0; i < CG_GPU_MAX_DEVICES; i++) {
            g->dev[i].other_samples = 50;
            g->dev[i].other_pids[0] = 4242;
            g->dev[i].n_other_pids = 1;
        }
        g->dev[CG_GPU_MAX_DEVICES - 1].reasons[CG_GPU_R_SW_THERMAL] = 50;
    }
}

/* Every (device, cause) the sides share in every run is the machine's condition, however many
 * (8 GPUs with another process each, one of them throttled besides), and the reason names them
 * all. */
static void test_gpu_rule__every_constant_cause_is_kept_and_named(void **state)
{
    (void)state;
    struct cg_thresholds t = thresholds();
    struct cg_artifact b, c;
    struct cg_err err;
    struct cg_verdict v;
    make(&b, 8, 1e7, 0.01, 1, 0.5, 0.4, 1755);
    make(&c, 8, 1e7, 0.01, 2, 0.5, 0.4, 1755);
    slow_runs(&c, 0, 8, 1.2);
    eight_busy_gpus(&b);
    eight_busy_gpus(&c);
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    assert_int_equal(v.gpu.n_constant, 9);
    assert_int_equal(v.gpu.held[0], 0);
    assert_int_equal(v.gpu.held[1], 0);
    assert_string_equal(v.gpu.reason,
                        "another process on GPUs 0, 1, 2, 3, 4, 5, 6, 7 and GPU 7 throttled (SW "
                        "thermal) during every run of both sides (alike on both: no run "
                        "held back for them)");
    assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_FAIL);
    assert_false(v.gpu.decided);
    assert_int_equal(v.overall, CG_OUT_FAIL);
    cg_verdict_release(&v);
    /* every cause on every GPU, and HW slowdown in 3 current runs on top: every name or their
     * count, never a clause cut short */
    const int causes[] = {CG_GPU_R_HW_SLOWDOWN, CG_GPU_R_SW_THERMAL, CG_GPU_R_HW_THERMAL,
                          CG_GPU_R_HW_POWER_BRAKE};
    for (size_t r = 0; r < 8; r++)
        for (size_t i = 0; i < CG_GPU_MAX_DEVICES; i++)
            for (size_t k = 0; k < 4; k++)
                b.runs[r].gpu.dev[i].reasons[causes[k]] = c.runs[r].gpu.dev[i].reasons[causes[k]] =
                    25;
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    assert_int_equal(v.gpu.n_constant, 40);
    assert_int_equal(v.gpu.held[1], 0);
    assert_non_null(strstr(v.gpu.reason, "GPUs 0, 1, 2, 3, 4, 5, 6, 7 throttled (HW power brake) "
                                         "during every run"));
    assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_FAIL);
    cg_verdict_release(&v);
    for (size_t r = 0; r < 3; r++)
        c.runs[r].gpu.dev[3].reasons[CG_GPU_R_HW_SLOWDOWN] = 40;
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    assert_int_equal(v.gpu.held[1], 3);
    assert_non_null(strstr(v.gpu.reason, "GPU 3 throttled (HW slowdown) during 3 of 8 current runs "
                                         "(more of their samples than in any baseline run); "));
    assert_non_null(strstr(v.gpu.reason,
                           "GPU 0 throttled (HW slowdown) and 38 other causes during every run "));
    size_t len = strlen(v.gpu.reason);
    assert_true(len > 5 && strcmp(v.gpu.reason + len - 5, "them)") == 0);
    cg_verdict_release(&v);
    cg_artifact_release(&b);
    cg_artifact_release(&c);
    /* size and power, simulated (5 v 5, spread 2%, the 9 causes of the first case in every run
     * of both sides, taken to slow nothing): under no change the mean FAILs at most alpha + 3
     * standard errors of 200 comparisons; 10% slower is found */
    const double factors[] = {1.0, 1.1};
    double rate[2];
    for (size_t f = 0; f < 2; f++) {
        size_t fails = 0;
        for (size_t k = 0; k < 200; k++) {
            make(&b, 5, 1e7, 0.02, 5101 + 1000 * f + 2 * k, 0.5, 0.4, 1755);
            make(&c, 5, 1e7, 0.02, 5102 + 1000 * f + 2 * k, 0.5, 0.4, 1755);
            eight_busy_gpus(&b);
            eight_busy_gpus(&c);
            slow_runs(&c, 0, 5, factors[f]);
            assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
            fails += v.metrics[CG_M_STEP_TIME_MEAN].outcome == CG_OUT_FAIL;
            cg_verdict_release(&v);
            cg_artifact_release(&b);
            cg_artifact_release(&c);
        }
        rate[f] = (double)fails / 200.0;
    }
    printf("8 GPUs with another process, one throttled, in every run of both sides, 5 v 5, spread "
           "2%%: mean FAIL %.3f under no change, %.3f at +10%%\n",
           rate[0], rate[1]);
    assert_true(rate[0] <= 0.05 + 3.0 * sqrt(0.05 * 0.95 / 200.0));
    assert_true(rate[1] >= 0.95);
}

static void test_gpu_rule__settings_that_differ_are_shown_not_a_machine(void **state)
{
    (void)state;
    struct cg_thresholds t = thresholds();
    struct cg_artifact b, c;
    struct cg_err err;
    struct cg_verdict v;
    make(&b, 5, 1e7, 0.01, 1, 0.5, 0.4, 1755);
    make(&c, 5, 1e7, 0.01, 2, 0.5, 0.4, 1755);
    c.env.gpu_env.power_limit_w = 500.0;
    c.env.gpu_env.persistence_mode = 0;
    c.env.gpu_env.clocks_locked = 1;
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    assert_null(v.machine_diff);
    assert_string_equal(v.gpu.settings_diff,
                        "clocks not locked on the baseline, locked here; power limit 700 W on "
                        "the baseline, 500 W here; persistence mode on on the baseline, off "
                        "here");
    assert_int_equal(v.overall, CG_OUT_PASS);
    struct cg_buf out;
    cg_buf_init(&out, 1 << 20);
    assert_int_equal(cg_report_terminal(&v, false, &out, &err), 0);
    assert_non_null(strstr(cg_buf_str(&out), "note: GPU settings differ (clocks not locked on "
                                             "the baseline, locked here;"));
    cg_buf_release(&out);
    cg_buf_init(&out, 1 << 20);
    assert_int_equal(cg_report_markdown(&v, NULL, &out, &err), 0);
    assert_non_null(strstr(cg_buf_str(&out), "**GPU settings differ:** clocks not locked"));
    assert_non_null(strstr(cg_buf_str(&out), "clocks locked at 1755 MHz SM, 2619 MHz memory, "
                                             "power limit 500 W, persistence mode off |"));
    cg_buf_release(&out);
    cg_verdict_release(&v);
    cg_artifact_release(&b);
    cg_artifact_release(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpu_rule__energy_and_mfu_are_gated_over_runs),
        cmocka_unit_test(test_gpu_rule__without_data_the_row_says_why),
        cmocka_unit_test(test_gpu_rule__size_under_no_change),
        cmocka_unit_test(test_gpu_rule__power),
        cmocka_unit_test(test_gpu_rule__throttled_runs_that_decide_are_inconclusive),
        cmocka_unit_test(test_gpu_rule__clocks_that_moved_make_a_fail_inconclusive),
        cmocka_unit_test(test_gpu_rule__a_faster_clock_here_does_not_excuse_slower_steps),
        cmocka_unit_test(test_gpu_rule__a_throttled_baseline_does_not_excuse_a_slower_current_side),
        cmocka_unit_test(test_gpu_rule__a_cause_in_every_run_of_both_sides_holds_none_back),
        cmocka_unit_test(test_gpu_rule__the_clean_runs_leave_out_both_sides_held_runs),
        cmocka_unit_test(test_gpu_rule__a_cause_heavier_here_than_on_the_baseline_holds_runs_back),
        cmocka_unit_test(test_gpu_rule__every_constant_cause_is_kept_and_named),
        cmocka_unit_test(test_gpu_rule__settings_that_differ_are_shown_not_a_machine),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
