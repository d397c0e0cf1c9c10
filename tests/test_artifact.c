/* test_artifact: JSON round trip and one clear error per kind of bad input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "artifact.h"
#include "fixtures.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct cg_fixture fx = {3, 20, 1e7, 0.01, 0.02, 512, 123456789, 987654321, 4, 5};

static void test_artifact__round_trip_keeps_every_field(void **state)
{
    (void)state;
    struct cg_artifact a, b;
    struct cg_err err;
    cg_artifact_init(&a);
    assert_int_equal(cg_fixture_make(&a, &fx), 0);
    a.runs[1].steps[3].gpu_busy_ns = 4242;
    a.runs[0].dropped_records = 7;
    const char *path = "/tmp/cg-art-rt.json";
    assert_int_equal(cg_artifact_save(path, &a, &err), 0);
    assert_int_equal(cg_artifact_load(path, &b, &err), 0);
    assert_int_equal(b.n_runs, 3);
    assert_int_equal(b.runs[2].n_steps, 20);
    assert_int_equal(b.runs[1].steps[3].wall_ns, a.runs[1].steps[3].wall_ns);
    assert_int_equal(b.runs[1].steps[3].gpu_busy_ns, 4242);
    assert_int_equal(b.runs[1].steps[4].gpu_busy_ns, -1);
    assert_int_equal(b.runs[0].steps[0].tokens, 512);
    assert_int_equal(b.runs[0].dropped_records, 7);
    assert_int_equal(b.runs[0].summary.peak_device_bytes, 123456789);
    assert_float_equal(b.runs[0].summary.step_time_p95_ns, a.runs[0].summary.step_time_p95_ns, 1e-6);
    assert_float_equal(b.runs[0].summary.tokens_per_sec, a.runs[0].summary.tokens_per_sec, 1e-6);
    assert_int_equal(b.runs[2].n_ops, 4);
    assert_string_equal(b.runs[2].ops[3].name, "op_3");
    assert_int_equal(b.runs[2].ops[3].kind, CG_OP_RANGE);
    assert_string_equal(b.env.gpu_model, "Test GPU 80GB");
    assert_int_equal(b.env.n_canary_command, 3);
    assert_string_equal(b.env.canary_command[2], "tiny");
    assert_true(b.gpu_available);
    assert_null(cg_env_machine_diff(&a.env, &b.env, true));
    assert_null(cg_artifact_canary_diff(&a, &b));
    cg_artifact_release(&a);
    cg_artifact_release(&b);
    unlink(path);
}

struct bad {
    const char *from, *to; /* textual edit applied to a good artifact */
    const char *expect;
};

static char *replace(const char *s, const char *from, const char *to)
{
    const char *p = strstr(s, from);
    if (p == NULL)
        fail_msg("fixture text lacks '%s'", from);
    size_t n = strlen(s) - strlen(from) + strlen(to) + 1;
    char *out = malloc(n);
    snprintf(out, n, "%.*s%s%s", (int)(p - s), s, to, p + strlen(from));
    return out;
}

static void test_artifact__bad_inputs_name_the_problem(void **state)
{
    (void)state;
    struct cg_artifact a;
    struct cg_err err;
    cg_artifact_init(&a);
    assert_int_equal(cg_fixture_make(&a, &fx), 0);
    char *good = cg_artifact_to_json(&a);
    cg_artifact_release(&a);
    const struct bad cases[] = {
        {"\"schema\":\t\"canary-gate/run\"", "\"schema\":\t\"other\"", "not a run artifact"},
        {"\"schema\":\t\"canary-gate/run\",", "", "missing \"schema\""},
        {"\"schema_version\":\t1", "\"schema_version\":\t7", "schema_version 7 is newer"},
        {"\"runs\":\t[", "\"runz\":\t[", "runs: missing"},
        {"\"wall_ns\":", "\"wall_ns\": -5, \"x\":", "runs[0].steps[0].wall_ns: must be at least 1"},
        {"\"step_time_mean_ns\":\t", "\"step_time_mean_ns\":\t1+", "not valid JSON"},
        {"\"kind\":\t\"range\"", "\"kind\":\t\"magic\"", "kind must be one of"},
        {"\"available\":\ttrue", "\"available\":\t\"no\"", "gpu.available: must be true or false"},
        {"\"step_time_p95_ns\":\t", "\"step_time_p95_ns\":\t1, \"y\":", "do not match the run's steps"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *text = replace(good, cases[i].from, cases[i].to);
        cg_err_init(&err);
        assert_int_equal(cg_artifact_parse(text, strlen(text), "x.json", &a, &err), CG_EINPUT);
        if (strstr(err.msg, cases[i].expect) == NULL || strstr(err.msg, "'x.json'") == NULL)
            fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, cases[i].expect);
        assert_int_equal(a.n_runs, 0); /* nothing half-parsed is left behind */
        free(text);
    }
    /* truncated, empty runs, empty steps, NaN */
    const char *texts[][2] = {
        {"{\"schema\": \"canary-gate/r", "not valid JSON"},
        {"{\"schema\":\"canary-gate/run\",\"schema_version\":1,\"gpu\":{\"available\":false},"
         "\"environment\":{\"gpu_count\":0},\"settings\":{\"steps\":1,\"warmup\":0,\"runs\":1},"
         "\"runs\":[]}",
         "runs: is empty"},
        {"{\"schema\":\"canary-gate/run\",\"schema_version\":1,\"gpu\":{\"available\":false},"
         "\"environment\":{\"gpu_count\":0},\"settings\":{\"steps\":1,\"warmup\":0,\"runs\":1},"
         "\"runs\":[{\"steps\":[],\"ops\":[],\"summary\":{}}]}",
         "runs[0].steps: is empty"},
        {"{\"schema\":\"canary-gate/run\",\"schema_version\":1,\"gpu\":{\"available\":false},"
         "\"environment\":{\"gpu_count\":0},\"settings\":{\"steps\":1,\"warmup\":0,\"runs\":1},"
         "\"runs\":[{\"steps\":[{\"wall_ns\":NaN}],\"ops\":[],\"summary\":{}}]}",
         "not valid JSON"},
        {"[]", "not a JSON object"},
    };
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        cg_err_init(&err);
        assert_int_equal(cg_artifact_parse(texts[i][0], strlen(texts[i][0]), "y.json", &a, &err),
                         CG_EINPUT);
        if (strstr(err.msg, texts[i][1]) == NULL)
            fail_msg("text %zu: '%s' lacks '%s'", i, err.msg, texts[i][1]);
    }
    free(good);
}

static void test_artifact__step_loss_is_optional_and_round_trips(void **state)
{
    (void)state;
    struct cg_artifact a, b;
    struct cg_err err;
    cg_artifact_init(&a);
    assert_int_equal(cg_fixture_make(&a, &fx), 0);
    assert_true(isnan(a.runs[0].steps[0].loss)); /* a new step has no loss */
    a.runs[0].steps[0].loss = 4.159609123456789;
    a.runs[0].steps[1].loss = -0.125; /* losses may be negative */
    a.runs[0].steps[2].loss = INFINITY; /* not representable: written as unknown */
    char *text = cg_artifact_to_json(&a);
    assert_non_null(text);
    assert_int_equal(cg_artifact_parse(text, strlen(text), "loss.json", &b, &err), 0);
    assert_float_equal(b.runs[0].steps[0].loss, 4.159609123456789, 1e-15);
    assert_float_equal(b.runs[0].steps[1].loss, -0.125, 0);
    assert_true(isnan(b.runs[0].steps[2].loss));
    assert_true(isnan(b.runs[1].steps[0].loss));
    /* appended runs keep their losses */
    struct cg_artifact c;
    cg_artifact_init(&c);
    assert_int_equal(cg_artifact_append_runs(&c, &b), 0);
    assert_float_equal(c.runs[0].steps[1].loss, -0.125, 0);
    cg_artifact_release(&c);
    cg_artifact_release(&b);
    free(text);

    /* an artifact without any loss (as written before steps had one) reads as "no loss" */
    struct cg_artifact plain;
    cg_artifact_init(&plain);
    assert_int_equal(cg_fixture_make(&plain, &fx), 0);
    char *old = cg_artifact_to_json(&plain);
    assert_null(strstr(old, "loss"));
    assert_int_equal(cg_artifact_parse(old, strlen(old), "old.json", &b, &err), 0);
    assert_true(isnan(b.runs[0].steps[0].loss));
    cg_artifact_release(&b);
    cg_artifact_release(&plain);
    free(old);

    text = cg_artifact_to_json(&a);
    /* a loss that is not a number is refused with its path */
    char *bad = replace(text, "\"wall_ns\":", "\"loss\": \"low\", \"wall_ns\":");
    cg_err_init(&err);
    assert_int_equal(cg_artifact_parse(bad, strlen(bad), "bad.json", &b, &err), CG_EINPUT);
    assert_non_null(strstr(err.msg, "runs[0].steps[0].loss: must be a finite number"));
    free(bad);
    free(text);
    cg_artifact_release(&a);
}

static void test_artifact__missing_and_empty_files(void **state)
{
    (void)state;
    struct cg_artifact a;
    struct cg_err err;
    assert_int_equal(cg_artifact_load("/nonexistent/main.json", &a, &err), CG_EINPUT);
    assert_non_null(strstr(err.msg, "cannot read '/nonexistent/main.json'"));
    FILE *f = fopen("/tmp/cg-empty.json", "w");
    fclose(f);
    assert_int_equal(cg_artifact_load("/tmp/cg-empty.json", &a, &err), CG_EINPUT);
    assert_non_null(strstr(err.msg, "empty"));
    unlink("/tmp/cg-empty.json");
}

static void test_artifact__failed_save_keeps_previous_file(void **state)
{
    (void)state;
    struct cg_artifact a;
    struct cg_err err;
    cg_artifact_init(&a);
    assert_int_equal(cg_fixture_make(&a, &fx), 0);
    assert_int_equal(cg_artifact_save("/nonexistent-dir/out.json", &a, &err), CG_EIO);
    assert_non_null(strstr(err.msg, "/nonexistent-dir/out.json"));
    cg_artifact_release(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_artifact__round_trip_keeps_every_field),
        cmocka_unit_test(test_artifact__bad_inputs_name_the_problem),
        cmocka_unit_test(test_artifact__step_loss_is_optional_and_round_trips),
        cmocka_unit_test(test_artifact__missing_and_empty_files),
        cmocka_unit_test(test_artifact__failed_save_keeps_previous_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
