/* test_artifact: JSON round trip and one clear error per kind of bad input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "artifact.h"
#include "fixtures.h"
#include "fsutil.h"
#include "utf8check.h"

#include <cjson/cJSON.h>

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

/* settings.step_optimizer (--step-optimizer: which optimizer's steps were counted) is kept
 * through JSON; an artifact written before it reads as unknown (-1); a bad one is named. */
static void test_artifact__step_optimizer_round_trips(void **state)
{
    (void)state;
    struct cg_artifact a, b;
    struct cg_err err;
    cg_artifact_init(&a);
    assert_int_equal(cg_fixture_make(&a, &fx), 0);
    assert_int_equal(a.settings.step_optimizer, -1);
    a.settings.step_optimizer = 2;
    char *text = cg_artifact_to_json(&a);
    assert_non_null(strstr(text, "\"step_optimizer\":\t2"));
    assert_int_equal(cg_artifact_parse(text, strlen(text), "x.json", &b, &err), 0);
    assert_int_equal(b.settings.step_optimizer, 2);
    cg_artifact_release(&b);
    /* older: absent, unknown */
    char *older = replace(text, "\"step_optimizer\":\t2,", "");
    assert_int_equal(cg_artifact_parse(older, strlen(older), "x.json", &b, &err), 0);
    assert_int_equal(b.settings.step_optimizer, -1);
    cg_artifact_release(&b);
    free(older);
    const char *bad[] = {"0", "\"2\"", "1.5", "1001"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char to[64];
        snprintf(to, sizeof(to), "\"step_optimizer\":\t%s", bad[i]);
        char *t = replace(text, "\"step_optimizer\":\t2", to);
        cg_err_init(&err);
        assert_int_equal(cg_artifact_parse(t, strlen(t), "x.json", &b, &err), CG_EINPUT);
        if (strstr(err.msg, "settings.step_optimizer") == NULL ||
            strstr(err.msg, "'x.json'") == NULL)
            fail_msg("step_optimizer %s: '%s'", bad[i], err.msg);
        free(t);
    }
    free(text);
    cg_artifact_release(&a);
}

/* A count this canary-gate does not know is a newer one's (the work counts backward and
 * optimizer_steps, written since 0b6a5a5, were refused by every canary-gate before: "is not a
 * count canary-gate knows", exit 2, so a baseline published by a newer version broke every
 * open pull request's gate still on the older one). It is ignored, as any unknown field is
 * (docs/artifact.md), and the counts it knows are read. */
static void test_artifact__a_count_of_a_newer_canary_gate_is_ignored(void **state)
{
    (void)state;
    struct cg_artifact a;
    struct cg_err err;
    cg_artifact_init(&a);
    assert_int_equal(cg_fixture_make(&a, &fx), 0);
    char *good = cg_artifact_to_json(&a);
    cg_artifact_release(&a);
    char *text = replace(good, "\"wall_ns\":",
                         "\"counts\": {\"kernels\": 3, \"a_newer_count\": 7}, \"wall_ns\":");
    cg_err_init(&err);
    if (cg_artifact_parse(text, strlen(text), "x.json", &a, &err) != 0)
        fail_msg("refused: %s", err.msg);
    assert_int_equal(a.runs[0].steps[0].counts[CG_COUNT_KERNELS], 3);
    assert_int_equal(a.runs[0].steps[0].counts[CG_COUNT_RANGES], -1);
    cg_artifact_release(&a);
    free(text);
    free(good);
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
        {"\"step_time_p95_ns\":\t",
         "\"step_time_p95_ns\":\t1, \"y\":", "do not match the run's steps"},
        {"\"wall_ns\":", "\"counts\": {\"kernels\": -1}, \"wall_ns\":",
         "runs[0].steps[0].counts.kernels: must be at least 0"},
        {"\"wall_ns\":", "\"counts\": {\"graph_kernels\": 1.5}, \"wall_ns\":",
         "runs[0].steps[0].counts.graph_kernels: must be a whole number"},
        {"\"wall_ns\":", "\"counts\": [], \"wall_ns\":",
         "runs[0].steps[0].counts: must be an object"},
        {"\"wall_ns\":", "\"sync_ns\": -3, \"wall_ns\":",
         "runs[0].steps[0].sync_ns: must be at least 0"},
        {"\"wall_ns\":", "\"copy_ns\": -1, \"wall_ns\":",
         "runs[0].steps[0].copy_ns: must be at least 0"},
        {"\"wall_ns\":", "\"compute_ns\": 1e15, \"wall_ns\":",
         "runs[0].steps[0]: compute_ns needs a gpu_busy_ns at least as large"},
        {"\"wall_ns\":", "\"copy_hidden_ns\": 5, \"wall_ns\":",
         "runs[0].steps[0]: copy_hidden_ns needs a copy_ns at least as large"},
        {"\"wall_ns\":", "\"copy_ns\": 4, \"copy_hidden_ns\": 5, \"wall_ns\":",
         "runs[0].steps[0]: copy_hidden_ns needs a copy_ns at least as large"},
        {"\"wall_ns\":", "\"copy_ns\": 4, \"copy_hidden_ns\": -5, \"wall_ns\":",
         "runs[0].steps[0].copy_hidden_ns: must be at least 0"},
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
    char *bad = replace(text, "\"loss\":\t-0.125", "\"loss\":\t\"low\"");
    cg_err_init(&err);
    assert_int_equal(cg_artifact_parse(bad, strlen(bad), "bad.json", &b, &err), CG_EINPUT);
    assert_non_null(strstr(err.msg, "runs[0].steps[1].loss: must be a finite number"));
    free(bad);
    free(text);
    cg_artifact_release(&a);
}

static void test_artifact__measurement_counters_round_trip(void **state)
{
    (void)state;
    struct cg_artifact a, b, c;
    struct cg_err err;
    cg_artifact_init(&a);
    assert_int_equal(cg_fixture_make(&a, &fx), 0);
    struct cg_run *r = &a.runs[0];
    assert_int_equal(r->outside_step_records, -1); /* a new run knows none of them */
    assert_int_equal(r->stopped_after_steps, -1);
    assert_int_equal(r->n_warnings, 0);
    r->outside_step_records = 4;
    r->inside_step_records = 46;
    r->late_memory_records = 2;
    r->cupti_overhead_ns = 6000;
    r->stopped_after_steps = 12;
    assert_int_equal(cg_run_add_warning(r, "op table full: 7 more names not recorded", 16), 0);
    assert_int_equal(cg_run_add_warning(r, "CUPTI activity kind MEMCPY2 unavailable", 16), 0);
    assert_int_equal(cg_run_add_warning(r, "op table full: 7 more names not recorded", 16), 0);
    assert_int_equal(cg_run_add_warning(r, "a third", 2), 0); /* the run holds 2: not kept */
    assert_int_equal(r->n_warnings, 2);
    a.env.cupti_library = strdup("loaded /usr/lib/x86_64-linux-gnu/libcupti.so.13");
    char *text = cg_artifact_to_json(&a);
    assert_non_null(text);
    assert_int_equal(cg_artifact_parse(text, strlen(text), "m.json", &b, &err), 0);
    const struct cg_run *q = &b.runs[0];
    assert_int_equal(q->outside_step_records, 4);
    assert_int_equal(q->inside_step_records, 46);
    assert_int_equal(q->late_memory_records, 2);
    assert_int_equal(q->cupti_overhead_ns, 6000);
    assert_int_equal(q->stopped_after_steps, 12);
    assert_int_equal(q->n_warnings, 2);
    assert_string_equal(q->warnings[1], "CUPTI activity kind MEMCPY2 unavailable");
    assert_string_equal(b.env.cupti_library, "loaded /usr/lib/x86_64-linux-gnu/libcupti.so.13");
    assert_int_equal(b.runs[1].outside_step_records, -1); /* written as null, read as unknown */
    assert_int_equal(b.runs[1].stopped_after_steps, -1);
    assert_int_equal(b.runs[1].n_warnings, 0);
    /* pooled (aa, ab, merge) and header copies keep them */
    cg_artifact_init(&c);
    assert_int_equal(cg_artifact_copy_header(&c, &b), 0);
    assert_int_equal(cg_artifact_append_runs(&c, &b), 0);
    assert_string_equal(c.env.cupti_library, b.env.cupti_library);
    assert_int_equal(c.runs[0].stopped_after_steps, 12);
    assert_int_equal(c.runs[0].late_memory_records, 2);
    assert_int_equal(c.runs[0].n_warnings, 2);
    assert_string_equal(c.runs[0].warnings[0], "op table full: 7 more names not recorded");
    cg_artifact_release(&c);
    cg_artifact_release(&b);

    /* bad values name their field */
    static const char *const bad[][3] = {
        {"\"stopped_after_steps\":\t12", "\"stopped_after_steps\":\t0",
         "runs[0].stopped_after_steps: must be at least 1"},
        {"\"outside_step_records\":\t4", "\"outside_step_records\":\t-4",
         "runs[0].outside_step_records: must be at least 0"},
        {"\"cupti_overhead_ns\":\t6000", "\"cupti_overhead_ns\":\t\"x\"",
         "runs[0].cupti_overhead_ns: must be a number"},
        {"\"warnings\":\t[\"op", "\"warnings\":\t[7, \"op", "runs[0].warnings: must be an array of "
                                                          "strings"},
        {"\"cupti_library\":\t\"loaded", "\"cupti_library\":\t7, \"x\":\t\"loaded",
         "environment.cupti_library: must be a string"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *edited = replace(text, bad[i][0], bad[i][1]);
        cg_err_init(&err);
        if (cg_artifact_parse(edited, strlen(edited), "m.json", &b, &err) != CG_EINPUT)
            fail_msg("case %zu accepted", i);
        if (strstr(err.msg, bad[i][2]) == NULL)
            fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, bad[i][2]);
        free(edited);
    }
    free(text);
    cg_artifact_release(&a);
}

/* An artifact written before these fields existed (examples/baseline.json) loads, and they read
 * as unknown. */
/* A step's counts and host time in synchronisations survive JSON; unknown ones stay unknown. */
static void test_artifact__step_counts_round_trip(void **state)
{
    (void)state;
    struct cg_artifact a, b;
    struct cg_err err;
    cg_err_init(&err);
    cg_artifact_init(&a);
    assert_int_equal(cg_fixture_make(&a, &fx), 0);
    struct cg_step *st = &a.runs[1].steps[2];
    st->counts[CG_COUNT_KERNELS] = 735;
    st->counts[CG_COUNT_SYNC_STREAM] = 0;
    st->counts[CG_COUNT_RANGES] = 4;
    st->sync_ns = 12345;
    st->gpu_busy_ns = 9000;
    st->compute_ns = 8000;
    st->copy_ns = 77;
    st->copy_hidden_ns = 33;
    char *text = cg_artifact_to_json(&a);
    assert_non_null(text);
    assert_non_null(strstr(text, "\"counts\":\t{\n"));
    assert_int_equal(cg_artifact_parse(text, strlen(text), "c.json", &b, &err), 0);
    const struct cg_step *got = &b.runs[1].steps[2];
    assert_int_equal(got->counts[CG_COUNT_KERNELS], 735);
    assert_int_equal(got->counts[CG_COUNT_SYNC_STREAM], 0);
    assert_int_equal(got->counts[CG_COUNT_RANGES], 4);
    assert_int_equal(got->counts[CG_COUNT_JIT], -1);
    assert_int_equal(got->sync_ns, 12345);
    assert_int_equal(got->compute_ns, 8000);
    assert_int_equal(got->copy_ns, 77);
    assert_int_equal(got->copy_hidden_ns, 33);
    assert_int_equal(b.runs[0].steps[0].compute_ns, -1);
    assert_int_equal(b.runs[0].steps[0].copy_ns, -1);
    assert_int_equal(b.runs[0].steps[0].copy_hidden_ns, -1);
    assert_int_equal(b.runs[0].steps[0].counts[CG_COUNT_KERNELS], -1);
    assert_int_equal(b.runs[0].steps[0].sync_ns, -1);
    /* merged runs keep them */
    struct cg_artifact m;
    cg_artifact_init(&m);
    assert_int_equal(cg_artifact_copy_header(&m, &b), 0);
    assert_int_equal(cg_artifact_append_runs(&m, &b), 0);
    assert_int_equal(m.runs[1].steps[2].counts[CG_COUNT_KERNELS], 735);
    assert_int_equal(m.runs[1].steps[2].sync_ns, 12345);
    assert_int_equal(m.runs[1].steps[2].compute_ns, 8000);
    cg_artifact_release(&m);
    cg_artifact_release(&a);
    cg_artifact_release(&b);
    free(text);
}

/* runs[].count_places: written when the run placed its calls (an empty array when none was in
 * a range), absent otherwise; read back, merged, and refused with the field named when bad. */
static void test_artifact__count_places_round_trip(void **state)
{
    (void)state;
    struct cg_artifact a, b;
    struct cg_err err;
    cg_err_init(&err);
    cg_artifact_init(&a);
    assert_int_equal(cg_fixture_make(&a, &fx), 0);
    a.runs[1].places_measured = true;
    assert_int_equal(cg_run_add_place(&a.runs[1], CG_COUNT_SYNC_STREAM, false, "backward", 3), 0);
    assert_int_equal(cg_run_add_place(&a.runs[1], CG_COUNT_DTOH_PAGEABLE, true, "forward", 2), 0);
    assert_int_equal(cg_run_add_place(&a.runs[1], CG_COUNT_SYNC_STREAM, false, "backward", 1), 0);
    a.runs[2].places_measured = true;
    char *text = cg_artifact_to_json(&a);
    assert_non_null(text);
    assert_int_equal(cg_artifact_parse(text, strlen(text), "p.json", &b, &err), 0);
    assert_false(b.runs[0].places_measured);
    assert_non_null(strstr(text, "\"count_places\":\t[]")); /* runs[2]: measured, none */
    assert_true(b.runs[2].places_measured);
    assert_int_equal(b.runs[2].n_places, 0);
    assert_true(b.runs[1].places_measured);
    assert_int_equal(b.runs[1].n_places, 2);
    assert_int_equal(b.runs[1].places[0].count, CG_COUNT_SYNC_STREAM);
    assert_false(b.runs[1].places[0].after);
    assert_string_equal(b.runs[1].places[0].range, "backward");
    assert_int_equal(b.runs[1].places[0].calls, 4);
    assert_int_equal(b.runs[1].places[1].count, CG_COUNT_DTOH_PAGEABLE);
    assert_true(b.runs[1].places[1].after);
    struct cg_artifact m;
    cg_artifact_init(&m);
    assert_int_equal(cg_artifact_copy_header(&m, &b), 0);
    assert_int_equal(cg_artifact_append_runs(&m, &b), 0);
    assert_true(m.runs[1].places_measured);
    assert_int_equal(m.runs[1].n_places, 2);
    assert_string_equal(m.runs[1].places[1].range, "forward");
    assert_false(m.runs[0].places_measured);
    cg_artifact_release(&m);
    cg_artifact_release(&b);
    static const struct bad cases[] = {
        {"\"count\":\t\"sync_stream\"", "\"count\":\t\"kernels\"",
         "runs[1].count_places[0]: count must be one of sync_stream"},
        {"\"where\":\t\"in\"", "\"where\":\t\"near\"",
         "runs[1].count_places[0]: where must be \"in\" or \"after\""},
        {"\"range\":\t\"backward\"", "\"range\":\t\"\"",
         "runs[1].count_places[0]: range must be a non-empty string"},
        {"\"calls\":\t4", "\"calls\":\t-4", "runs[1].count_places[0].calls: must be at least 0"},
        {"\"count_places\":\t[]", "\"count_places\":\t{}",
         "runs[2].count_places: must be an array"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *bad = replace(text, cases[i].from, cases[i].to);
        cg_err_init(&err);
        if (cg_artifact_parse(bad, strlen(bad), "x.json", &b, &err) != CG_EINPUT ||
            strstr(err.msg, cases[i].expect) == NULL)
            fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, cases[i].expect);
        free(bad);
    }
    cg_artifact_release(&a);
    free(text);
}

static void test_artifact__older_artifact_without_counters_loads(void **state)
{
    (void)state;
    struct cg_artifact a;
    struct cg_err err;
    cg_err_init(&err);
    if (cg_artifact_load(CG_SOURCE_DIR "/examples/baseline.json", &a, &err) != 0)
        fail_msg("%s", err.msg);
    assert_true(a.n_runs > 0);
    assert_null(a.env.cupti_library);
    for (size_t i = 0; i < a.n_runs; i++) {
        assert_int_equal(a.runs[i].outside_step_records, -1);
        assert_int_equal(a.runs[i].inside_step_records, -1);
        assert_int_equal(a.runs[i].late_memory_records, -1);
        assert_int_equal(a.runs[i].cupti_overhead_ns, -1);
        assert_int_equal(a.runs[i].stopped_after_steps, -1);
        assert_int_equal(a.runs[i].n_warnings, 0);
    }
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

/* `cat base.json slow.json > x.json`: a comparison must not read the first document and ignore
 * the second. Anything but white space after the document is refused, naming the file. */
static void test_artifact__trailing_data_after_the_document_is_refused(void **state)
{
    (void)state;
    struct cg_artifact a;
    struct cg_err err;
    cg_artifact_init(&a);
    assert_int_equal(cg_fixture_make(&a, &fx), 0);
    char *one = cg_artifact_to_json(&a);
    cg_artifact_release(&a);
    size_t n = strlen(one);
    char *two = malloc(2 * n + 8);
    assert_non_null(two);
    snprintf(two, 2 * n + 8, "%s\n%s\n", one, one);
    cg_err_init(&err);
    assert_int_equal(cg_artifact_parse(two, strlen(two), "x.json", &a, &err), CG_EINPUT);
    assert_non_null(strstr(err.msg, "cannot read 'x.json': trailing data after the JSON document"));
    assert_int_equal(a.n_runs, 0);
    /* a NUL and garbage inside the length: refused too */
    memcpy(two, one, n);
    memcpy(two + n, "\0junk", 5);
    assert_int_equal(cg_artifact_parse(two, n + 5, "x.json", &a, &err), CG_EINPUT);
    assert_non_null(strstr(err.msg, "trailing data"));
    /* a key twice ("runs" again with other runs: cJSON read the first, jq and python the last) */
    char *dup = malloc(2 * n + 32);
    assert_non_null(dup);
    const char *close = strrchr(one, '}');
    assert_non_null(close);
    int k = snprintf(dup, 2 * n + 32, "%.*s, \"runs\": []}", (int)(close - one), one);
    assert_int_equal(cg_artifact_parse(dup, (size_t)k, "x.json", &a, &err), CG_EINPUT);
    assert_non_null(strstr(err.msg, "cannot read 'x.json': runs: the key appears twice"));
    snprintf(dup, 2 * n + 32, "{\"a\": [{\"b\": 1, \"b\": 2}]}");
    assert_int_equal(cg_artifact_parse(dup, strlen(dup), "x.json", &a, &err), CG_EINPUT);
    assert_non_null(strstr(err.msg, "a[0].b: the key appears twice"));
    free(dup);
    /* white space after it is fine */
    snprintf(two, 2 * n + 8, "%s \r\n\t\n", one);
    assert_int_equal(cg_artifact_parse(two, strlen(two), "x.json", &a, &err), 0);
    assert_int_equal(a.n_runs, fx.runs);
    cg_artifact_release(&a);
    free(one);
    free(two);
}

/* summary.tokens_per_sec is what a comparison reads for tokens/sec: it must agree with the
 * steps, as the step times must. */
static void test_artifact__tokens_per_sec_must_match_the_steps(void **state)
{
    (void)state;
    struct cg_artifact a;
    struct cg_err err;
    cg_artifact_init(&a);
    assert_int_equal(cg_fixture_make(&a, &fx), 0);
    char *good = cg_artifact_to_json(&a);
    cg_artifact_release(&a);
    /* the value of the first run's summary, as written */
    const char *at = strstr(good, "\"tokens_per_sec\":\t");
    assert_non_null(at);
    size_t vlen = strcspn(at + 18, ",\n");
    char from[64];
    snprintf(from, sizeof(from), "%.*s", (int)(18 + vlen), at);
    const char *to[] = {"\"tokens_per_sec\":\t1", "\"tokens_per_sec\":\tnull",
                        "\"tokens_per_sec\":\t0"};
    for (size_t i = 0; i < 3; i++) {
        char *bad = replace(good, from, to[i]);
        cg_err_init(&err);
        assert_int_equal(cg_artifact_parse(bad, strlen(bad), "t.json", &a, &err), CG_EINPUT);
        if (strstr(err.msg, "runs[0].summary: tokens_per_sec does not match the run's steps") == NULL)
            fail_msg("case %zu: '%s'", i, err.msg);
        free(bad);
    }
    /* steps without tokens and a rate in the summary: refused as well */
    struct cg_fixture nt = fx;
    nt.tokens = -1;
    cg_artifact_init(&a);
    assert_int_equal(cg_fixture_make(&a, &nt), 0);
    char *none = cg_artifact_to_json(&a);
    cg_artifact_release(&a);
    char *bad = replace(none, "\"tokens_per_sec\":\tnull", "\"tokens_per_sec\":\t1000");
    assert_int_equal(cg_artifact_parse(bad, strlen(bad), "t.json", &a, &err), CG_EINPUT);
    assert_non_null(strstr(err.msg, "tokens_per_sec does not match the run's steps"));
    assert_int_equal(cg_artifact_parse(none, strlen(none), "t.json", &a, &err), 0);
    cg_artifact_release(&a);
    free(bad);
    free(none);
    free(good);
}

/* Kernel and range names, the canary's argv and the GPU's name come from outside and may hold
 * any bytes. Invalid UTF-8 (stray continuation bytes, overlong forms, surrogates, code points
 * past U+10FFFF, a cut sequence) becomes U+FFFD on the way in, so every artifact written is
 * valid UTF-8 for strict JSON readers; valid text is kept as it is. Each maximal invalid
 * subpart becomes one U+FFFD (Unicode's recommended practice; the counts were checked with
 * Python's bytes.decode("utf-8", "replace")). */
static void test_artifact__invalid_utf8_becomes_replacement_characters(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "gemm\xff\xfekernel", "\xc0\xafslash", "\xed\xa0\x80surrogate",
        "\xf4\x90\x80\x80" "big", "cut\xe2\x82", "\xe0\x80\xafoverlong3",
    };
    static const char *const fixed[] = {
        "gemm\xef\xbf\xbd\xef\xbf\xbdkernel",
        "\xef\xbf\xbd\xef\xbf\xbdslash",
        "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdsurrogate",
        "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" "big",
        "cut\xef\xbf\xbd",
        "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdoverlong3",
    };
    const size_t n_bad = sizeof(bad) / sizeof(bad[0]);
    struct cg_artifact a, b;
    struct cg_err err;
    cg_artifact_init(&a);
    assert_int_equal(cg_fixture_make(&a, &fx), 0);
    for (size_t i = 0; i < n_bad; i++)
        assert_int_equal(cg_run_add_op(&a.runs[0], bad[i], NULL, CG_OP_KERNEL, 1, 10), 0);
    assert_int_equal(cg_run_add_op(&a.runs[0], "ok \xce\xbb \xf0\x9f\x98\x80", NULL, CG_OP_RANGE, 1, 10), 0);
    for (size_t i = 0; i < n_bad; i++) {
        assert_string_equal(a.runs[0].ops[fx.n_ops + i].name, fixed[i]);
        assert_string_equal(a.runs[0].ops[fx.n_ops + i].family, fixed[i]);
    }
    assert_string_equal(a.runs[0].ops[fx.n_ops + n_bad].name, "ok \xce\xbb \xf0\x9f\x98\x80");
    /* strings set directly in the header (the collector copies argv and the GPU's name) */
    free(a.env.canary_command[0]);
    a.env.canary_command[0] = strdup("python\xff");
    free(a.env.gpu_model);
    a.env.gpu_model = strdup("GPU \xc3");
    char *text = cg_artifact_to_json(&a);
    assert_non_null(text);
    assert_true(cg_test_strict_utf8(text));
    assert_non_null(strstr(text, "python\xef\xbf\xbd"));

    /* raw invalid bytes in a file are replaced when it is read */
    char *raw = replace(text, "\"op_0\"", "\"op\xff\xc0\"");
    assert_false(cg_test_strict_utf8(raw));
    cg_err_init(&err);
    assert_int_equal(cg_artifact_parse(raw, strlen(raw), "raw.json", &b, &err), 0);
    assert_string_equal(b.runs[0].ops[0].name, "op\xef\xbf\xbd\xef\xbf\xbd");
    char *again = cg_artifact_to_json(&b);
    assert_true(cg_test_strict_utf8(again));
    cg_artifact_release(&b);
    free(again);
    free(raw);
    free(text);
    cg_artifact_release(&a);
}

/* Every run gets an identity when it is created (this host, this canary-gate process and when it
 * started, the run's number in it); JSON and merging keep it, so the same run can be recognised
 * wherever it is pooled. Artifacts written before identities load with none. */
static void test_artifact__runs_carry_an_identity_through_json_and_merges(void **state)
{
    (void)state;
    struct cg_artifact a, b, c;
    struct cg_err err;
    char host[256];
    assert_int_equal(gethostname(host, sizeof(host)), 0);
    cg_artifact_init(&a);
    cg_artifact_init(&b);
    assert_int_equal(cg_fixture_make(&a, &fx), 0);
    assert_int_equal(cg_fixture_make(&b, &fx), 0); /* the same seed: equal steps, other runs */
    for (size_t i = 0; i < a.n_runs; i++) {
        assert_non_null(a.runs[i].id.host);
        assert_int_equal(strncmp(a.runs[i].id.host, host, strlen(a.runs[i].id.host)), 0);
        assert_int_equal(a.runs[i].id.pid, getpid());
        assert_non_null(a.runs[i].id.started_utc);
        assert_false(cg_run_same(&a.runs[i], &b.runs[i]));
        for (size_t k = 0; k < i; k++)
            assert_false(cg_run_same(&a.runs[i], &a.runs[k]));
    }
    assert_true(a.runs[1].id.seq > a.runs[0].id.seq);
    char *text = cg_artifact_to_json(&a);
    assert_non_null(strstr(text, "\"started_utc\":"));
    assert_int_equal(cg_artifact_parse(text, strlen(text), "id.json", &c, &err), 0);
    for (size_t i = 0; i < a.n_runs; i++) {
        assert_true(cg_run_same(&a.runs[i], &c.runs[i]));
        assert_string_equal(c.runs[i].id.host, a.runs[i].id.host);
        assert_string_equal(c.runs[i].id.started_utc, a.runs[i].id.started_utc);
        assert_int_equal(c.runs[i].id.seq, a.runs[i].id.seq);
    }
    cg_artifact_release(&c);
    cg_artifact_init(&c);
    assert_int_equal(cg_artifact_append_runs(&c, &a), 0);
    assert_true(cg_run_same(&c.runs[2], &a.runs[2]));
    cg_artifact_release(&c);

    /* an identity that is not one is refused with its path */
    char *bad = replace(text, "\"seq\":\t", "\"seq\":\t-");
    assert_int_equal(cg_artifact_parse(bad, strlen(bad), "id.json", &c, &err), CG_EINPUT);
    assert_non_null(strstr(err.msg, "runs[0].id.seq: must be at least 1"));
    free(bad);

    /* an artifact written before runs had an identity still loads, with none */
    struct cg_artifact old;
    assert_int_equal(cg_artifact_load(CG_SOURCE_DIR "/examples/baseline.json", &old, &err), 0);
    assert_null(old.runs[0].id.host);
    assert_false(cg_run_same(&old.runs[0], &old.runs[1]));
    cg_artifact_release(&old);
    free(text);
    cg_artifact_release(&a);
    cg_artifact_release(&b);
}

/* text with runs[from] copied `copies` times at the end of its runs, each copy edited by edit
 * (NULL: an exact copy); the caller frees the result. */
static char *copy_run(const char *text, int from, int copies, void (*edit)(cJSON *run, int k))
{
    cJSON *root = cJSON_Parse(text);
    assert_non_null(root);
    cJSON *runs = cJSON_GetObjectItemCaseSensitive(root, "runs");
    cJSON *run = cJSON_GetArrayItem(runs, from);
    assert_non_null(run);
    for (int k = 0; k < copies; k++) {
        cJSON *copy = cJSON_Duplicate(run, 1);
        assert_non_null(copy);
        if (edit != NULL)
            edit(copy, k);
        cJSON_AddItemToArray(runs, copy);
    }
    char *out = cJSON_Print(root);
    cJSON_Delete(root);
    assert_non_null(out);
    return out;
}

/* The copy's seq moved past the original's, never onto it, whatever number of runs this process
 * stamped before (a fixed 100 was the original's own when 99 had been). */
static void edit_seq(cJSON *run, int k)
{
    cJSON *id = cJSON_GetObjectItemCaseSensitive(run, "id");
    assert_non_null(id);
    cJSON *seq = cJSON_GetObjectItemCaseSensitive(id, "seq");
    assert_true(cJSON_IsNumber(seq));
    cJSON_ReplaceItemInObjectCaseSensitive(id, "seq",
                                           cJSON_CreateNumber(seq->valuedouble + 1000 + k));
}

static void drop_digest(cJSON *run, int k)
{
    (void)k;
    cJSON *id = cJSON_GetObjectItemCaseSensitive(run, "id");
    assert_non_null(id);
    cJSON_DeleteItemFromObjectCaseSensitive(id, "digest");
}

static void edit_seq_drop_digest(cJSON *run, int k)
{
    edit_seq(run, k);
    drop_digest(run, k);
}

static void strange_digest(cJSON *run, int k)
{
    (void)k;
    cJSON *id = cJSON_GetObjectItemCaseSensitive(run, "id");
    assert_non_null(id);
    cJSON_ReplaceItemInObjectCaseSensitive(id, "digest", cJSON_CreateString("sha3:0123"));
}

/* Every loaded artifact's runs, each whole: one run copied within an artifact (six copies make a
 * six-run baseline from one run), or copied with its seq edited, is refused on load with one line
 * naming the file and the runs. Every run written carries a digest of its identity and steps
 * (runs[].id.digest) that an edit of either breaks; a run without one (older artifacts) is a copy
 * of another when every step's time and tokens are the same. */
static void test_artifact__copied_runs_are_refused_on_load(void **state)
{
    (void)state;
    struct cg_artifact a, c;
    struct cg_err err;
    /* Every run this process stamped before (other tests' fixtures) moved the runs' seq on: the
     * checks hold wherever it stands; here, one test more before this one puts it at 100. */
    cg_artifact_init(&a);
    for (struct cg_run *r = cg_artifact_add_run(&a); r != NULL && r->id.seq < 99;)
        r = cg_artifact_add_run(&a);
    cg_artifact_release(&a);
    cg_artifact_init(&a);
    assert_int_equal(cg_fixture_make(&a, &fx), 0);
    char *text = cg_artifact_to_json(&a);
    cg_artifact_release(&a);
    assert_non_null(strstr(text, "\"digest\":\t\"fnv1a64:"));
    assert_int_equal(cg_artifact_parse(text, strlen(text), "one.json", &c, &err), 0);
    assert_non_null(c.runs[0].id.digest);
    cg_artifact_release(&c);

    const struct {
        void (*edit)(cJSON *run, int k);
        const char *expect;
    } cases[] = {
        {NULL, "cannot read 'one_x6.json': runs[3] is a copy of runs[0]"},
        {drop_digest, "cannot read 'one_x6.json': runs[3] is a copy of runs[0]"},
        {edit_seq, "cannot read 'one_x6.json': runs[3] was edited: its identity or steps do "
                   "not match its digest (runs[3].id.digest)"},
        {edit_seq_drop_digest, "cannot read 'one_x6.json': runs[3] is a copy of runs[0]"},
        {strange_digest, "cannot read 'one_x6.json': runs[3] is a copy of runs[0]"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *x6 = copy_run(text, 0, 5, cases[i].edit);
        assert_int_equal(cg_artifact_parse(x6, strlen(x6), "one_x6.json", &c, &err), CG_EINPUT);
        if (strstr(err.msg, cases[i].expect) == NULL)
            fail_msg("case %zu: %s", i, err.msg);
        assert_null(strchr(err.msg, '\n'));
        assert_int_equal(c.n_runs, 0);
        free(x6);
    }
    /* steps edited (two swapped: the summary still agrees): the digest says so */
    cJSON *root = cJSON_Parse(text);
    cJSON *steps = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "runs"), 1), "steps");
    cJSON *s0 = cJSON_GetArrayItem(steps, 0), *s1 = cJSON_GetArrayItem(steps, 1);
    double w0 = cJSON_GetObjectItemCaseSensitive(s0, "wall_ns")->valuedouble;
    double w1 = cJSON_GetObjectItemCaseSensitive(s1, "wall_ns")->valuedouble;
    assert_true(w0 != w1);
    cJSON_ReplaceItemInObjectCaseSensitive(s0, "wall_ns", cJSON_CreateNumber(w1));
    cJSON_ReplaceItemInObjectCaseSensitive(s1, "wall_ns", cJSON_CreateNumber(w0));
    char *edited = cJSON_Print(root);
    cJSON_Delete(root);
    assert_int_equal(cg_artifact_parse(edited, strlen(edited), "e.json", &c, &err), CG_EINPUT);
    if (strstr(err.msg, "cannot read 'e.json': runs[1] was edited") == NULL)
        fail_msg("%s", err.msg);
    free(edited);
    /* an artifact written before runs had digests (or identities) still loads; its copies do not */
    char *old = NULL;
    size_t len = 0;
    assert_int_equal(cg_file_read(CG_SOURCE_DIR "/examples/baseline.json", 1 << 24, &old, &len,
                                  &err),
                     0);
    assert_int_equal(cg_artifact_parse(old, len, "baseline.json", &c, &err), 0);
    assert_null(c.runs[0].id.digest);
    cg_artifact_release(&c);
    char *old_x6 = copy_run(old, 2, 5, NULL);
    assert_int_equal(cg_artifact_parse(old_x6, strlen(old_x6), "old_x6.json", &c, &err),
                     CG_EINPUT);
    assert_non_null(strstr(err.msg, "cannot read 'old_x6.json': runs[5] is a copy of runs[2]"));
    free(old_x6);
    free(old);
    free(text);
}

/* The same run twice in one pool (a file merged twice, a copy of it, a merge of merges) makes
 * a baseline look more certain than it is. cg_artifact_find_same_runs finds it: by identity, or
 * for runs without one by their steps (no two real runs time every step alike to the ns). */
static void test_artifact__the_same_run_twice_is_found(void **state)
{
    (void)state;
    struct cg_artifact a, pool, old, oldpool;
    struct cg_err err;
    size_t i = 0, k = 0;
    cg_artifact_init(&a);
    cg_artifact_init(&pool);
    assert_int_equal(cg_fixture_make(&a, &fx), 0);
    assert_int_equal(cg_artifact_append_runs(&pool, &a), 0);
    assert_false(cg_artifact_find_same_runs(&pool, &i, &k));
    assert_int_equal(cg_artifact_append_runs(&pool, &a), 0);
    assert_true(cg_artifact_find_same_runs(&pool, &i, &k));
    assert_int_equal(i, 0);
    assert_int_equal(k, fx.runs);

    assert_int_equal(cg_artifact_load(CG_SOURCE_DIR "/examples/baseline.json", &old, &err), 0);
    cg_artifact_init(&oldpool);
    assert_int_equal(cg_artifact_append_runs(&oldpool, &old), 0);
    assert_false(cg_artifact_find_same_runs(&oldpool, &i, &k));
    assert_int_equal(cg_artifact_append_runs(&oldpool, &old), 0);
    assert_true(cg_artifact_find_same_runs(&oldpool, &i, &k));
    assert_int_equal(i, 0);
    assert_int_equal(k, old.n_runs);
    cg_artifact_release(&a);
    cg_artifact_release(&pool);
    cg_artifact_release(&old);
    cg_artifact_release(&oldpool);
}

struct identity_case {
    const char *what;
    void (*edit)(struct cg_artifact *a);
    const char *expect; /* cg_artifact_canary_diff against the unedited artifact */
};

static void edit_files(struct cg_artifact *a)
{
    assert_int_equal(cg_run_code_add_file(&a->runs[0].code, "train.py", "fnv1a64:0000000000000002"),
                     0);
    free(a->env.canary_hash); /* an older artifact's hash held the files' contents */
    a->env.canary_hash = strdup("fnv1a64:00000000000000ff");
}
static void edit_id(struct cg_artifact *a)
{
    free(a->env.canary_id);
    a->env.canary_id = strdup("fnv1a64:0000000000000009");
}
static void drop_id(struct cg_artifact *a)
{
    free(a->env.canary_id);
    a->env.canary_id = NULL;
    edit_files(a);
}
static void edit_command(struct cg_artifact *a)
{
    free(a->env.canary_command[2]);
    a->env.canary_command[2] = strdup("small");
}
static void edit_steps(struct cg_artifact *a)
{
    a->settings.steps++;
}
static void edit_comm(struct cg_artifact *a)
{
    a->settings.comm_kernels = strdup("userbuffers");
}
static void edit_step_optimizer(struct cg_artifact *a)
{
    a->settings.step_optimizer = 2; /* the other side's is 1 */
}
static void edit_step_optimizer_nvtx(struct cg_artifact *a)
{
    a->settings.step_optimizer = 2;
    a->settings.steps_from = strdup("nvtx"); /* the other side's too: no optimizer counted */
}

/* The canary is what the user chose to run and how it is measured: the code's contents (runs'
 * file hashes, an older canary_hash that held them) never make another canary; an artifact
 * without canary_id is compared by its command and settings. */
static void test_artifact__the_canary_is_its_command_and_settings(void **state)
{
    (void)state;
    static const struct identity_case cases[] = {
        {"the script's contents", edit_files, NULL},
        {"no identity (an older artifact)", drop_id, NULL},
        {"another identity", edit_id, "environment.canary_id"},
        {"another command", edit_command, "environment.canary_command"},
        {"another step count", edit_steps, "settings.steps"},
        {"other communication kernels", edit_comm, "settings.comm_kernels"},
        {"another optimizer's steps counted", edit_step_optimizer, "settings.step_optimizer"},
        {"another optimizer, steps from NVTX", edit_step_optimizer_nvtx, NULL},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        struct cg_artifact a, b;
        cg_artifact_init(&a);
        cg_artifact_init(&b);
        assert_int_equal(cg_fixture_make(&a, &fx), 0);
        assert_int_equal(cg_fixture_make(&b, &fx), 0);
        a.env.canary_id = strdup("fnv1a64:0000000000000001");
        b.env.canary_id = strdup("fnv1a64:0000000000000001");
        a.settings.step_optimizer = b.settings.step_optimizer = 1;
        if (cases[k].edit == edit_step_optimizer_nvtx)
            a.settings.steps_from = strdup("nvtx");
        assert_int_equal(
            cg_run_code_add_file(&a.runs[0].code, "train.py", "fnv1a64:0000000000000001"), 0);
        cases[k].edit(&b);
        const char *got = cg_artifact_canary_diff(&a, &b);
        if ((got == NULL) != (cases[k].expect == NULL) ||
            (got != NULL && strcmp(got, cases[k].expect) != 0))
            fail_msg("%s: %s differs, expected %s", cases[k].what, got ? got : "nothing",
                     cases[k].expect ? cases[k].expect : "nothing");
        cg_artifact_release(&a);
        cg_artifact_release(&b);
    }
}

/* The code facts and the placement of each run, and the canary's identity, are kept through
 * JSON and merges; artifacts without them still read (unknown). */
static void test_artifact__code_and_placement_round_trip(void **state)
{
    (void)state;
    struct cg_artifact a, b, m;
    struct cg_err err;
    const char *path = "/tmp/cg-art-code.json";
    cg_artifact_init(&a);
    cg_artifact_init(&m);
    assert_int_equal(cg_fixture_make(&a, &fx), 0);
    a.env.canary_id = strdup("fnv1a64:0123456789abcdef");
    a.runs[1].code.git_commit = strdup("0123456789abcdef0123456789abcdef01234567");
    assert_int_equal(cg_run_code_add_file(&a.runs[1].code, "train.py", "fnv1a64:00000000000000aa"),
                     0);
    a.runs[1].placement.cpus = strdup("0-3,8");
    a.runs[1].placement.cpu = 2;
    a.runs[1].placement.numa_node = 0;
    assert_int_equal(cg_artifact_save(path, &a, &err), 0);
    assert_int_equal(cg_artifact_load(path, &b, &err), 0);
    assert_string_equal(b.env.canary_id, "fnv1a64:0123456789abcdef");
    assert_string_equal(b.runs[1].code.git_commit, a.runs[1].code.git_commit);
    assert_int_equal(b.runs[1].code.n_files, 1);
    assert_string_equal(b.runs[1].code.files[0].path, "train.py");
    assert_string_equal(b.runs[1].code.files[0].hash, "fnv1a64:00000000000000aa");
    assert_string_equal(b.runs[1].placement.cpus, "0-3,8");
    assert_int_equal(b.runs[1].placement.cpu, 2);
    assert_int_equal(b.runs[1].placement.numa_node, 0);
    assert_null(b.runs[0].code.git_commit); /* not recorded: unknown */
    assert_int_equal(b.runs[0].code.n_files, 0);
    assert_null(b.runs[0].placement.cpus);
    assert_int_equal(b.runs[0].placement.numa_node, -1);
    assert_int_equal(cg_artifact_copy_header(&m, &b), 0);
    assert_int_equal(cg_artifact_append_runs(&m, &b), 0);
    assert_string_equal(m.env.canary_id, "fnv1a64:0123456789abcdef");
    assert_string_equal(m.runs[1].code.files[0].hash, "fnv1a64:00000000000000aa");
    assert_string_equal(m.runs[1].placement.cpus, "0-3,8");
    /* a file entry without its hash is one line naming it */
    char *text = cg_artifact_to_json(&a);
    char *bad_text = replace(text, "\"hash\":\t\"fnv1a64:00000000000000aa\"", "\"hash\": 7");
    struct cg_artifact c;
    assert_int_equal(cg_artifact_parse(bad_text, strlen(bad_text), "x.json", &c, &err), CG_EINPUT);
    assert_string_equal(err.msg,
                        "cannot read 'x.json': runs[1].code.files[0].hash: must be a string");
    free(text);
    free(bad_text);
    cg_artifact_release(&a);
    cg_artifact_release(&b);
    cg_artifact_release(&m);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_artifact__the_canary_is_its_command_and_settings),
        cmocka_unit_test(test_artifact__code_and_placement_round_trip),
        cmocka_unit_test(test_artifact__round_trip_keeps_every_field),
        cmocka_unit_test(test_artifact__bad_inputs_name_the_problem),
        cmocka_unit_test(test_artifact__a_count_of_a_newer_canary_gate_is_ignored),
        cmocka_unit_test(test_artifact__step_loss_is_optional_and_round_trips),
        cmocka_unit_test(test_artifact__measurement_counters_round_trip),
        cmocka_unit_test(test_artifact__count_places_round_trip),
        cmocka_unit_test(test_artifact__older_artifact_without_counters_loads),
        cmocka_unit_test(test_artifact__step_counts_round_trip),
        cmocka_unit_test(test_artifact__missing_and_empty_files),
        cmocka_unit_test(test_artifact__failed_save_keeps_previous_file),
        cmocka_unit_test(test_artifact__trailing_data_after_the_document_is_refused),
        cmocka_unit_test(test_artifact__tokens_per_sec_must_match_the_steps),
        cmocka_unit_test(test_artifact__invalid_utf8_becomes_replacement_characters),
        cmocka_unit_test(test_artifact__runs_carry_an_identity_through_json_and_merges),
        cmocka_unit_test(test_artifact__the_same_run_twice_is_found),
        cmocka_unit_test(test_artifact__copied_runs_are_refused_on_load),
        cmocka_unit_test(test_artifact__step_optimizer_round_trips),
    };
    if (getenv("CG_TEST_FILTER") != NULL) /* one case while working on it: a glob of names */
        cmocka_set_test_filter(getenv("CG_TEST_FILTER"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
