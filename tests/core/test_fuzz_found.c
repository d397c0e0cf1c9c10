/*
 * test_fuzz_found: every input the fuzzers (fuzz/, docs/hardening.md) found a bug with, pinned as
 * a plain test of the behaviour that replaced it, plus the pure parsing entry points the
 * harnesses call (thresholds text, HTTP header lines, comment pages, API error bodies).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "artifact.h"
#include "github.h"
#include "http.h"
#include "shard.h"
#include "thresholds.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_EXACT ((int64_t)1 << 53)

/* ---- shards ------------------------------------------------------------------------------------ */

static int parse(const char *text, struct cg_shard *s, struct cg_err *err)
{
    cg_err_init(err);
    return cg_shard_parse(text, strlen(text), "found.shard", s, err);
}

/* Merges the shards into a one-run artifact, saves it as JSON and loads it again. */
static void merge_and_reload(struct cg_shard *sh, size_t n, int64_t steps, struct cg_artifact *out)
{
    struct cg_artifact a;
    struct cg_err err;
    cg_artifact_init(&a);
    cg_err_init(&err);
    a.settings.steps = steps;
    a.settings.runs = 1;
    struct cg_run *run = cg_artifact_add_run(&a);
    assert_non_null(run);
    struct cg_shard_merge_opts o = {0, steps, -1};
    assert_int_equal(cg_shard_merge(sh, n, &o, run, &err), 0);
    char *json = cg_artifact_to_json(&a);
    assert_non_null(json);
    if (cg_artifact_parse(json, strlen(json), "merged.json", out, &err) != 0)
        fail_msg("the merged artifact does not load: %s", err.msg);
    free(json);
    cg_artifact_release(&a);
}

/* A value saved at the 2^53 cap and loaded again. cJSON prints a double with 15 significant
 * digits when they compare equal within DBL_EPSILON, so 2^53 comes back as 9007199254740990. */
static void near_max(int64_t v)
{
    if (v > MAX_EXACT || v < MAX_EXACT - 8)
        fail_msg("%lld is not the 2^53 cap", (long long)v);
}

/* fuzz_shard, a timeout: one line naming step 4697863 made the parser allocate and clear
 * hundreds of MB. A step index far beyond the lines read is malformed now. */
static void test_fuzz_found__far_step_index_is_malformed(void **state)
{
    (void)state;
    static const char *const texts[] = {
        "canary-gate-shard 1\npid 1\ns 4697863 8322372 3796689343957 -1\nend\n",
        "canary-gate-shard 1\npid 1\nb 9999999 5\n",
        "canary-gate-shard 1\npid 1\nl 9999999 0.5\n",
    };
    for (size_t i = 0; i < 3; i++) {
        struct cg_shard s;
        struct cg_err err;
        assert_int_equal(parse(texts[i], &s, &err), CG_EINPUT);
        assert_non_null(strstr(err.msg, "'found.shard' line 3"));
        assert_int_equal(s.n_steps, 0);
    }
    /* a few steps ahead, as threads ending steps out of order give, is fine */
    struct cg_shard s;
    struct cg_err err;
    assert_int_equal(parse("canary-gate-shard 1\ns 3 10 20 1\ns 0 1 5 1\ns 2 5 9 1\ns 1 5 8 1\n",
                           &s, &err),
                     0);
    assert_int_equal(s.n_steps, 4);
    cg_shard_release(&s);
}

/* fuzz_shard with UBSan: five "b" lines of 2^61 ns overflowed the step's busy sum (signed
 * overflow, undefined). Values past 2^53 are malformed; sums stop at 2^53. */
static void test_fuzz_found__busy_sum_stops_at_what_an_artifact_holds(void **state)
{
    (void)state;
    struct cg_shard s;
    struct cg_err err;
    assert_int_equal(parse("canary-gate-shard 1\ns 0 1 2 1\nb 0 2305843009213693951\n", &s, &err),
                     CG_EINPUT);
    assert_int_equal(parse("canary-gate-shard 1\ns 0 1 2 1\nb 0 9007199254740992\n"
                           "b 0 9007199254740992\nb 0 9007199254740992\nend\n",
                           &s, &err),
                     0);
    assert_int_equal(s.steps[0].gpu_busy_ns, MAX_EXACT);
    struct cg_artifact a;
    merge_and_reload(&s, 1, 1, &a);
    near_max(a.runs[0].steps[0].gpu_busy_ns);
    cg_artifact_release(&a);
    cg_shard_release(&s);
}

/* fuzz_shard with UBSan: ops of one name summed over lines and ranks overflowed calls and time. */
static void test_fuzz_found__op_sums_stop_at_what_an_artifact_holds(void **state)
{
    (void)state;
    static const char text[] = "canary-gate-shard 1\ns 0 1 2 1\n"
                               "o kernel 9007199254740992 9007199254740992 k\n"
                               "o kernel 9007199254740992 1 k\nm 0 9007199254740992\n"
                               "c 9007199254740992 9007199254740992 1\nend\n";
    struct cg_shard s[3];
    struct cg_err err;
    assert_int_equal(parse("canary-gate-shard 1\no kernel 9223372036854775807 1 k\n", &s[0], &err),
                     CG_EINPUT);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(parse(text, &s[i], &err), 0);
    struct cg_artifact a;
    merge_and_reload(s, 3, 1, &a);
    assert_int_equal(a.runs[0].n_ops, 1);
    near_max(a.runs[0].ops[0].calls);
    near_max(a.runs[0].ops[0].total_ns);
    near_max(a.runs[0].summary.peak_device_bytes);
    near_max(a.runs[0].dropped_records);
    cg_artifact_release(&a);
    for (size_t i = 0; i < 3; i++)
        cg_shard_release(&s[i]);
}

/* fuzz_shard's round trip: a range pushed with an empty name (nvtxRangePushA("") inside a step)
 * became an op named "", which the artifact written from it refused to load. */
static void test_fuzz_found__empty_op_name_keeps_the_artifact_loadable(void **state)
{
    (void)state;
    struct cg_shard s;
    struct cg_err err;
    assert_int_equal(parse("canary-gate-shard 1\ns 0 1 2 1\no range 3 100 \nend\n", &s, &err), 0);
    assert_string_equal(s.ops[0].name, "");
    struct cg_artifact a;
    merge_and_reload(&s, 1, 1, &a);
    assert_int_equal(a.runs[0].n_ops, 1);
    assert_string_equal(a.runs[0].ops[0].name, "(unnamed)");
    assert_int_equal(a.runs[0].ops[0].calls, 3);
    cg_artifact_release(&a);
    cg_shard_release(&s);
}

/* fuzz_shard's round trip: a rank's GPU model (a device line) or node (a host line) of invalid
 * UTF-8 grew past the loader's 255 bytes when the artifact was written (each bad byte becomes
 * U+FFFD, three bytes), so the merged run did not load again ("gpu_model: expected a name or
 * null"). Both are kept valid and cut to 255 bytes at a character's end. */
static void test_fuzz_found__rank_names_of_invalid_utf8_keep_the_artifact_loadable(void **state)
{
    (void)state;
    char bad[201], text[1024];
    memset(bad, 0xff, 200);
    bad[200] = '\0';
    snprintf(text, sizeof(text),
             "canary-gate-shard 1\npid 100\nrank 0\nlocal_rank 0\nhost h%s\ngpu ok\n"
             "device 0 NVIDIA H100 %s\ns 0 1000 3000 10\ns 1 3000 4000 10\nend\n",
             bad, bad);
    struct cg_shard s;
    struct cg_err err;
    assert_int_equal(parse(text, &s, &err), 0);
    struct cg_artifact a;
    merge_and_reload(&s, 1, 2, &a);
    assert_int_equal(a.runs[0].n_ranks, 1);
    const struct cg_rank *r = &a.runs[0].ranks[0];
    assert_non_null(r->gpu_model);
    assert_true(strlen(r->gpu_model) <= 255 && strlen(r->node) <= 255);
    assert_true(strncmp(r->gpu_model, "NVIDIA H100 \xef\xbf\xbd", 15) == 0);
    assert_true(strncmp(r->node, "h\xef\xbf\xbd", 4) == 0);
    assert_true(strlen(r->gpu_model) % 3 == 0 && strlen(r->node) % 3 == 1); /* whole characters */
    cg_artifact_release(&a);
    cg_shard_release(&s);
}

/* fuzz_shard's round trip: a step longer than 2^53 ns, or tokens past 2^53, made an artifact
 * that did not load again. */
static void test_fuzz_found__values_past_2_53_are_malformed(void **state)
{
    (void)state;
    static const char *const texts[] = {
        "canary-gate-shard 1\ns 0 0 9223372036854775807 1\n",
        "canary-gate-shard 1\nm 0 9007199254740993\n",
        "canary-gate-shard 1\nc 1 9007199254740993 0\n",
    };
    for (size_t i = 0; i < 3; i++) {
        struct cg_shard s;
        struct cg_err err;
        if (parse(texts[i], &s, &err) != CG_EINPUT)
            fail_msg("accepted case %zu", i);
        assert_non_null(strstr(err.msg, "line 2"));
    }
    /* timestamps themselves may be large (nanoseconds since boot): only the duration counts */
    struct cg_shard s;
    struct cg_err err;
    assert_int_equal(parse("canary-gate-shard 1\ns 0 9223372036854775000 9223372036854775807 1\n",
                           &s, &err),
                     0);
    assert_int_equal(s.steps[0].wall_ns, 807);
    cg_shard_release(&s);
}

/* fuzz_nvtx: a canary's step payload is any int64 the library writes as it came; one above 2^53
 * made the gate refuse the whole shard. The token count is kept at 2^53 instead. */
static void test_fuzz_found__huge_token_payload_is_capped(void **state)
{
    (void)state;
    struct cg_shard s;
    struct cg_err err;
    assert_int_equal(parse("canary-gate-shard 1\ntw 2 4\n"
                           "s 0 6072840934662 6072840938454 7306093565258498048\nend\n",
                           &s, &err),
                     0);
    assert_int_equal(s.steps[0].tokens, MAX_EXACT);
    assert_int_equal(s.steps[0].wall_ns, 3792);
    struct cg_artifact a;
    merge_and_reload(&s, 1, 1, &a);
    near_max(a.runs[0].steps[0].tokens);
    cg_artifact_release(&a);
    cg_shard_release(&s);
}

/* ---- artifacts ---------------------------------------------------------------------------------- */

/* fuzz_artifact's harness with UBSan: 1100 steps of 2^53 tokens overflowed the run's token sum in
 * cg_run_summarize (signed overflow; in practice a negative tokens/sec). */
static void test_fuzz_found__token_total_of_many_steps_does_not_overflow(void **state)
{
    (void)state;
    struct cg_run run;
    memset(&run, 0, sizeof(run));
    for (int i = 0; i < 1100; i++)
        assert_int_equal(cg_run_add_step(&run, 1000, MAX_EXACT, -1), 0);
    cg_run_summarize(&run);
    /* 2^53 tokens per microsecond */
    double want = (double)MAX_EXACT * 1e6;
    if (!(fabs(run.summary.tokens_per_sec - want) < want * 1e-9))
        fail_msg("tokens/sec %g, expected %g", run.summary.tokens_per_sec, want);
    free(run.steps);
}

/* ---- the pure entry points the harnesses call ------------------------------------------------- */

static void test_fuzz_found__thresholds_text_extends_only_built_ins(void **state)
{
    (void)state;
    struct cg_thresholds t;
    struct cg_err err;
    cg_err_init(&err);
    static const char ok[] = "{\"extends\": \"strict\", \"measurement\": {\"runs\": 7}}";
    assert_int_equal(cg_thresholds_parse(ok, strlen(ok), "x.json", &t, &err), 0);
    assert_int_equal(t.runs, 7);
    assert_string_equal(t.source, "x.json");
    static const char path[] = "{\"extends\": \"../etc/other.json\"}";
    assert_int_equal(cg_thresholds_parse(path, strlen(path), "x.json", &t, &err), CG_EINPUT);
    assert_non_null(strstr(err.msg, "no such file and no built-in"));
    static const char bad[] = "{\"metrics\": {\"step_time_mean\": {\"alpha\": 0.9}}}";
    assert_int_equal(cg_thresholds_parse(bad, strlen(bad), "x.json", &t, &err), CG_EINPUT);
    assert_non_null(strstr(err.msg, "'x.json': metrics.step_time_mean.alpha"));
    /* the text need not end in NUL: only len bytes are read */
    static const char cut[] = "{\"measurement\": {\"runs\": 4}}garbage";
    assert_int_equal(cg_thresholds_parse(cut, strlen(cut) - 7, "x.json", &t, &err), 0);
    assert_int_equal(t.runs, 4);
}

static void header(struct cg_http_response *r, const char *line)
{
    cg_http_response_header(r, line, strlen(line));
}

static void test_fuzz_found__http_header_lines(void **state)
{
    (void)state;
    struct cg_http_response r;
    cg_http_response_init(&r, 1024);
    header(&r, "HTTP/1.1 403 Forbidden\r\n");
    header(&r, "Link: <https://a/x?page=2>; rel=\"next\"\r\n");
    header(&r, "retry-after: 30 \r\n");
    header(&r, "X-RateLimit-Remaining: 0\r\n");
    header(&r, "x-ratelimit-reset: 1700000000\r\n");
    assert_string_equal(r.link, "<https://a/x?page=2>; rel=\"next\"");
    assert_int_equal(r.retry_after_s, 30);
    assert_int_equal(r.ratelimit_remaining, 0);
    assert_int_equal(r.ratelimit_reset, 1700000000LL);
    header(&r, "x-ratelimit-remaining: -5\r\n"); /* not a count: ignored */
    assert_int_equal(r.ratelimit_remaining, 0);
    header(&r, "HTTP/1.1 200 OK\r\n"); /* a new answer starts over */
    assert_null(r.link);
    assert_int_equal(r.retry_after_s, -1);
    char nul[] = "Link: <https://a/n>\0; rel=\"next\"";
    cg_http_response_header(&r, nul, sizeof(nul) - 1);
    assert_string_equal(r.link, "<https://a/n>");
    cg_http_response_release(&r);
}

/* fuzz_http under UBSan: a comment id of 11e3001 (infinity as a double) was converted to long long
 * (undefined). Ids must be whole numbers from 1 to 2^53; others are skipped. */
static void test_fuzz_found__comment_id_out_of_range_is_skipped(void **state)
{
    (void)state;
    long long id = -1;
    static const char page[] =
        "[{\"id\": 11e3001, \"body\": \"<!-- canary-gate -->\\nASS\"},"
        " {\"id\": 1e300, \"body\": \"<!-- canary-gate -->\"},"
        " {\"id\": 2.5, \"body\": \"<!-- canary-gate -->\"},"
        " {\"id\": 9007199254740994, \"body\": \"<!-- canary-gate -->\"},"
        " {\"id\": 42, \"body\": \"<!-- canary-gate -->\", \"user\": {\"type\": \"Bot\"}}]";
    assert_int_equal(
        cg_github_comments_scan(page, strlen(page), "<!-- canary-gate -->", NULL, &id, NULL), 0);
    assert_int_equal(id, 42);
}

static void test_fuzz_found__comment_page_and_error_body(void **state)
{
    (void)state;
    long long id = -1;
    static const char page[] =
        "[{\"id\": 5, \"body\": \"x\"}, {\"id\": 6, \"body\": "
        "\"<!-- canary-gate -->\\r\\nbody\", \"user\": {\"type\": \"Bot\"}}]";
    assert_int_equal(
        cg_github_comments_scan(page, strlen(page), "<!-- canary-gate -->", NULL, &id, NULL), 0);
    assert_int_equal(id, 6);
    assert_int_equal(cg_github_comments_scan("{}", 2, "<!-- canary-gate -->", NULL, &id, NULL),
                     CG_EINPUT);
    assert_int_equal(id, 0);
    char msg[64];
    static const char body[] = "{\"message\": \"Validation\\u001b[31m Failed\", \"errors\": "
                               "[{\"message\": \"body is too long\"}]}";
    cg_github_api_message(body, strlen(body), msg, sizeof(msg));
    assert_string_equal(msg, "Validation [31m Failed: body is too long");
    cg_github_api_message(NULL, 0, msg, sizeof(msg));
    assert_string_equal(msg, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fuzz_found__far_step_index_is_malformed),
        cmocka_unit_test(test_fuzz_found__busy_sum_stops_at_what_an_artifact_holds),
        cmocka_unit_test(test_fuzz_found__op_sums_stop_at_what_an_artifact_holds),
        cmocka_unit_test(test_fuzz_found__empty_op_name_keeps_the_artifact_loadable),
        cmocka_unit_test(test_fuzz_found__values_past_2_53_are_malformed),
        cmocka_unit_test(test_fuzz_found__rank_names_of_invalid_utf8_keep_the_artifact_loadable),
        cmocka_unit_test(test_fuzz_found__huge_token_payload_is_capped),
        cmocka_unit_test(test_fuzz_found__token_total_of_many_steps_does_not_overflow),
        cmocka_unit_test(test_fuzz_found__thresholds_text_extends_only_built_ins),
        cmocka_unit_test(test_fuzz_found__http_header_lines),
        cmocka_unit_test(test_fuzz_found__comment_id_out_of_range_is_skipped),
        cmocka_unit_test(test_fuzz_found__comment_page_and_error_body),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
