/* test_thresholds: built-in files, inheritance by name and path, and errors naming file and key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "thresholds.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_thresholds__builtin_default_is_complete(void **state)
{
    (void)state;
    struct cg_thresholds t;
    struct cg_err err;
    assert_int_equal(cg_thresholds_load(NULL, &t, &err), 0);
    assert_int_equal(t.runs, 15);
    assert_float_equal(t.metric[CG_M_STEP_TIME_MEAN].max_regression_pct, 5.0, 0);
    assert_float_equal(t.metric[CG_M_PEAK_DEVICE_MEMORY].max_regression_bytes, 16777216.0, 0);
    assert_string_equal(t.source, "built-in default");
    assert_float_equal(t.metric[CG_M_STEP_TIME_FLOOR].max_regression_pct, 3.0, 0);
    assert_int_equal(t.metric[CG_M_STEP_TIME_FLOOR].min_runs, 5);
    assert_true(t.require_floor);
}

static void test_thresholds__strict_overrides_single_fields(void **state)
{
    (void)state;
    struct cg_thresholds t;
    struct cg_err err;
    assert_int_equal(cg_thresholds_load("strict", &t, &err), 0);
    assert_float_equal(t.metric[CG_M_STEP_TIME_MEAN].max_regression_pct, 2.0, 0);
    assert_float_equal(t.metric[CG_M_STEP_TIME_MEAN].alpha, 0.05, 0); /* inherited */
    assert_int_equal(t.warmup, 5);                                     /* inherited */
    assert_int_equal(t.runs, 30);
    assert_true(t.require_floor); /* inherited */
    char path[] = "/tmp/cg-thr-nofloor.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    write_file(path, "{\"extends\": \"strict\", \"require_floor_regression\": false}");
    assert_int_equal(cg_thresholds_load(path, &t, &err), 0);
    assert_false(t.require_floor);
    assert_float_equal(t.metric[CG_M_STEP_TIME_FLOOR].max_regression_pct, 1.5, 0);
    unlink(path);
}

static void test_thresholds__file_extends_file_beside_it(void **state)
{
    (void)state;
    char dir[] = "/tmp/cg-thr-XXXXXX", a[128], b[128];
    assert_non_null(mkdtemp(dir));
    snprintf(a, sizeof(a), "%s/team.json", dir);
    snprintf(b, sizeof(b), "%s/mine.json", dir);
    write_file(a, "{\"extends\": \"strict\", \"ops\": {\"top_n\": 3}}");
    write_file(b, "{\"extends\": \"team\", \"metrics\": {\"step_time_p95\": {\"alpha\": 0.01}}}");
    struct cg_thresholds t;
    struct cg_err err;
    assert_int_equal(cg_thresholds_load(b, &t, &err), 0);
    assert_int_equal(t.ops_top_n, 3);                                          /* from team */
    assert_float_equal(t.metric[CG_M_STEP_TIME_MEAN].max_regression_pct, 2.0, 0); /* strict */
    assert_float_equal(t.metric[CG_M_STEP_TIME_P95].alpha, 0.01, 0);           /* mine */
    /* no "extends" at all: the built-in default is the parent */
    write_file(a, "{\"measurement\": {\"runs\": 9}}");
    assert_int_equal(cg_thresholds_load(a, &t, &err), 0);
    assert_int_equal(t.runs, 9);
    assert_int_equal(t.steps, 30);
    unlink(a);
    unlink(b);
    rmdir(dir);
}

/* A built-in name is the built-in thresholds even where the working directory holds a folder of
 * that name (it said "cannot read 'smoke': is a directory"); a file of that name is still the
 * file, and a folder that is no built-in name is refused naming it. */
static void test_thresholds__builtin_name_beside_a_folder_of_that_name(void **state)
{
    (void)state;
    char dir[] = "/tmp/cg-thr-XXXXXX", here[1024], path[128];
    assert_non_null(mkdtemp(dir));
    assert_non_null(getcwd(here, sizeof(here)));
    snprintf(path, sizeof(path), "%s/smoke", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/mine", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/strict", dir);
    write_file(path, "{\"measurement\": {\"runs\": 7}}");
    assert_int_equal(chdir(dir), 0);
    struct cg_thresholds t;
    struct cg_err err;
    int smoke = cg_thresholds_load("smoke", &t, &err);
    static char source[1024];
    snprintf(source, sizeof(source), "%s", smoke == 0 ? t.source : err.msg);
    int strict = cg_thresholds_load("strict", &t, &err);
    int runs = t.runs;
    int mine = cg_thresholds_load("mine", &t, &err);
    assert_int_equal(chdir(here), 0);
    assert_int_equal(smoke, 0);
    assert_string_equal(source, "built-in smoke");
    assert_int_equal(strict, 0);
    assert_int_equal(runs, 7);
    assert_int_equal(mine, CG_EINPUT);
    assert_non_null(strstr(err.msg, "'mine'"));
    assert_non_null(strstr(err.msg, "is a directory"));
    snprintf(path, sizeof(path), "%s/smoke", dir);
    rmdir(path);
    snprintf(path, sizeof(path), "%s/mine", dir);
    rmdir(path);
    snprintf(path, sizeof(path), "%s/strict", dir);
    unlink(path);
    rmdir(dir);
}

struct bad_case {
    const char *text;
    const char *expect; /* substring of the message */
};

static void test_thresholds__errors_name_file_and_key(void **state)
{
    (void)state;
    const struct bad_case cases[] = {
        {"{\"metricz\": {}}", "metricz: unknown key"},
        {"{\"metrics\": {\"step_time_mean\": {\"max_regression_pct\": \"5\"}}}",
         "metrics.step_time_mean.max_regression_pct: must be a number"},
        {"{\"metrics\": {\"step_time_mean\": {\"alpah\": 0.05}}}",
         "metrics.step_time_mean.alpah: unknown key"},
        {"{\"metrics\": {\"latency\": {}}}", "metrics.latency: unknown metric"},
        {"{\"metrics\": {\"step_time_mean\": {\"max_regression_bytes\": 5}}}",
         "max_regression_bytes: unknown key"},
        {"{\"measurement\": {\"runs\": 2.5}}", "measurement.runs: must be an integer"},
        {"{\"measurement\": {\"runs\": 0}}", "measurement.runs: must be from 1"},
        {"{\"environment_mismatch\": \"ignore\"}", "environment_mismatch: must be"},
        {"{\"require_floor_regression\": \"yes\"}",
         "require_floor_regression: must be true or false"},
        {"{\"extends\": \"nosuch\"}", "'nosuch': no such file"},
        {"[1,2]", "not a JSON object"},
        {"{\"ops\": {\"top_n\": 3}", "not a JSON object"},
        {"{\"counts\": {\"kernelz\": {}}}", "counts.kernelz: unknown count"},
        {"{\"counts\": {\"kernels\": {\"max_increase\": -1}}}",
         "counts.kernels.max_increase: must be from 0"},
        {"{\"counts\": {\"kernels\": {\"slack\": 1}}}", "counts.kernels.slack: unknown key"},
        {"{\"counts\": {\"varying\": null}}", "counts.varying: must be an object"},
        {"{\"counts\": {\"range_names\": []}}", "counts.range_names: must be an object"},
        {"{\"counts\": {\"range_names\": {\"\": {}}}}", "a range name must have 1 to 255"},
        {"{\"counts\": 3}", "counts: must be an object"},
        {"{\"slow_state\": {\"max_increase_points\": 101}}",
         "slow_state.max_increase_points: must be from 0"},
        {"{\"slow_state\": {\"alpha\": 0.05, \"gate\": true}}", "slow_state.gate: unknown key"},
        {"{\"slow_state\": 20}", "slow_state: must be an object"},
        /* a key twice: cJSON reads one of them, jq and python the other (1000 was applied) */
        {"{\"metrics\": {\"step_time_mean\": {\"max_regression_pct\": 5, "
         "\"max_regression_pct\": 1000}}}",
         "metrics.step_time_mean.max_regression_pct: the key appears twice"},
        {"{\"metrics\": {}, \"metrics\": {}}", "metrics: the key appears twice"},
    };
    const char *path = "/tmp/cg-thr-bad.json";
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        write_file(path, cases[i].text);
        struct cg_thresholds t;
        struct cg_err err;
        cg_err_init(&err);
        assert_int_equal(cg_thresholds_load(path, &t, &err), CG_EINPUT);
        if (strstr(err.msg, cases[i].expect) == NULL)
            fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, cases[i].expect);
        if (i < 9)
            assert_non_null(strstr(err.msg, path));
    }
    unlink(path);
}

/* The counts section: defaults, an entry replaced whole by an extending file, null switching a
 * count off, per-name range limits that add up over the chain. */
static void test_thresholds__counts_extend_and_override(void **state)
{
    (void)state;
    struct cg_thresholds t;
    struct cg_err err;
    cg_err_init(&err);
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);
    assert_true(t.counts[CG_COUNT_SYNCS].gated && t.counts[CG_COUNT_SYNCS].max_increase == 0);
    assert_true(t.counts[CG_COUNT_KERNELS].max_increase_pct == 10.0);
    assert_false(t.counts[CG_COUNT_FREES].set); /* shown, not gated */
    assert_true(t.range_calls.gated && t.range_calls.max_increase == 0);
    assert_true(t.varying.max_increase_pct == 10.0);
    write_file("/tmp/cg-thr-counts-parent.json",
               "{\"counts\": {\"kernels\": {\"max_increase\": 5}, "
               "\"range_names\": {\"data\": {\"max_increase\": 2}}}}");
    write_file("/tmp/cg-thr-counts.json",
               "{\"extends\": \"cg-thr-counts-parent.json\", \"counts\": {\"synchronizations\": "
               "null, \"range_names\": {\"all_reduce\": null}}}");
    assert_int_equal(cg_thresholds_load("/tmp/cg-thr-counts.json", &t, &err), 0);
    assert_true(t.counts[CG_COUNT_KERNELS].max_increase == 5);
    assert_true(t.counts[CG_COUNT_KERNELS].max_increase_pct == 0); /* replaced whole */
    assert_true(t.counts[CG_COUNT_SYNCS].set && !t.counts[CG_COUNT_SYNCS].gated);
    assert_true(t.counts[CG_COUNT_DTOH_PAGEABLE].gated); /* inherited from default */
    assert_int_equal(t.n_range_names, 2);
    assert_string_equal(t.range_names[0].name, "data");
    assert_true(t.range_names[0].limit.max_increase == 2);
    assert_string_equal(t.range_names[1].name, "all_reduce");
    assert_false(t.range_names[1].limit.gated);
    unlink("/tmp/cg-thr-counts-parent.json");
    unlink("/tmp/cg-thr-counts.json");
}

/* "slow_state": not gated by default; an object gates it, null turns it off again. */
static void test_thresholds__slow_state_is_reported_unless_gated(void **state)
{
    (void)state;
    struct cg_thresholds t;
    struct cg_err err;
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);
    assert_false(t.slow_state.gated);
    const char *path = "/tmp/cg-thr-slow.json";
    write_file(path, "{\"slow_state\": {\"max_increase_points\": 25, \"alpha\": 0.01}}");
    assert_int_equal(cg_thresholds_load(path, &t, &err), 0);
    assert_true(t.slow_state.gated);
    assert_float_equal(t.slow_state.max_increase_points, 25.0, 0);
    assert_float_equal(t.slow_state.alpha, 0.01, 0);
    write_file(path, "{\"slow_state\": null}");
    assert_int_equal(cg_thresholds_load(path, &t, &err), 0);
    assert_false(t.slow_state.gated);
    unlink(path);
}

static void test_thresholds__cycle_is_an_error(void **state)
{
    (void)state;
    write_file("/tmp/cg-thr-a.json", "{\"extends\": \"cg-thr-b\"}");
    write_file("/tmp/cg-thr-b.json", "{\"extends\": \"cg-thr-a\"}");
    struct cg_thresholds t;
    struct cg_err err;
    assert_int_equal(cg_thresholds_load("/tmp/cg-thr-a.json", &t, &err), CG_EINPUT);
    assert_non_null(strstr(err.msg, "a cycle?"));
    unlink("/tmp/cg-thr-a.json");
    unlink("/tmp/cg-thr-b.json");
}

/* A lower-is-worse metric (tokens/sec, MFU) cannot fall by 100% or more: a max_regression_pct
 * of 100 or above would make it impossible to FAIL, so the file is refused, naming the key; the
 * same number is a limit like any other for a metric where higher is worse. */
static void test_thresholds__lower_is_worse_limit_of_100_pct_is_refused(void **state)
{
    (void)state;
    const char *path = "/tmp/cg-thr-lower.json";
    char text[256];
    struct cg_thresholds t;
    struct cg_err err;
    for (int m = 0; m < CG_M_COUNT; m++) {
        const double pcts[] = {99.5, 100, 150};
        for (size_t i = 0; i < 3; i++) {
            snprintf(text, sizeof(text), "{\"metrics\": {\"%s\": {\"max_regression_pct\": %g}}}",
                     cg_metric_name((enum cg_metric)m), pcts[i]);
            write_file(path, text);
            cg_err_init(&err);
            int rc = cg_thresholds_load(path, &t, &err);
            if (cg_metric_higher_is_worse((enum cg_metric)m) || pcts[i] < 100) {
                if (rc != 0)
                    fail_msg("%s: %s", text, err.msg);
                assert_float_equal(t.metric[m].max_regression_pct, pcts[i], 0);
                continue;
            }
            assert_int_equal(rc, CG_EINPUT);
            char key[96];
            snprintf(key, sizeof(key), "metrics.%s.max_regression_pct: must be below 100",
                     cg_metric_name((enum cg_metric)m));
            if (strstr(err.msg, key) == NULL || strstr(err.msg, path) == NULL)
                fail_msg("'%s' lacks '%s' or the file", err.msg, key);
            assert_non_null(strstr(err.msg, "could never fail"));
        }
    }
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_thresholds__builtin_default_is_complete),
        cmocka_unit_test(test_thresholds__strict_overrides_single_fields),
        cmocka_unit_test(test_thresholds__file_extends_file_beside_it),
        cmocka_unit_test(test_thresholds__builtin_name_beside_a_folder_of_that_name),
        cmocka_unit_test(test_thresholds__errors_name_file_and_key),
        cmocka_unit_test(test_thresholds__cycle_is_an_error),
        cmocka_unit_test(test_thresholds__slow_state_is_reported_unless_gated),
        cmocka_unit_test(test_thresholds__counts_extend_and_override),
        cmocka_unit_test(test_thresholds__lower_is_worse_limit_of_100_pct_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
