/*
 * test_gate: the main command end to end (`canary-gate --baseline FILE ...`): a missing, bad or
 * recorded baseline, a pass that cannot be decided with too few runs, a real regression of an
 * annotated test canary, a failing canary reported as such, and the comment and status posted
 * to the GitHub emulation of tests/support/httpd.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "artifact.h"
#include "httpd.h"
#include "proc.h"
#include "render.h"
#include "workdir.h"

#include <cjson/cJSON.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CANARY CG_BINARY_DIR "/tests/canaries/nvtx-canary"
#define HELPER CG_BINARY_DIR "/tests/faults/fault-helper"
#define TOKEN "ghs_gateTestToken0123456789"
#define SHA "0123456789abcdef0123456789abcdef01234567"

static struct cg_proc proc;

/* Runs canary-gate in the test directory with args (NULL-terminated); returns the exit code. */
static int gate(const struct cg_workdir *f, const char *const *env, const char *const *args)
{
    return cg_workdir_run(f, CG_TOOL_PATH, env, args, &proc);
}

static void assert_verdict_json(const struct cg_workdir *f, const char *name, const char *verdict)
{
    cJSON *root = cJSON_Parse(cg_workdir_read(f, name));
    assert_non_null(root);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "verdict");
    assert_true(cJSON_IsString(v));
    assert_string_equal(v->valuestring, verdict);
    cJSON_Delete(root);
}

/* A baseline of the test canary at step_ms per step: 5 runs of 6 steps after 1 warm-up. The
 * regression tests compare 2 ms sleeps with 40 ms ones: a loaded machine (CI runs the suite
 * under sanitizers, two tests at a time) stretches short steps, never by 20 times. */
static void record_baseline(const struct cg_workdir *f, const char *step_ms)
{
    const char *args[] = {"run", "--out", "main.json", "--runs", "5", "--steps", "6",
                          "--warmup", "1", "--", CANARY, "--steps", "7", "--step-ms", step_ms,
                          NULL};
    assert_int_equal(gate(f, NULL, args), 0);
}

static void test_gate__missing_baseline_says_how_to_record_one(void **state)
{
    struct cg_workdir *f = *state;
    const char *args[] = {"--baseline", "main.json", "--runs", "1", "--steps", "2", NULL};
    assert_int_equal(gate(f, NULL, args), 2);
    assert_non_null(strstr(proc.err, "baseline 'main.json' does not exist"));
    assert_non_null(strstr(proc.err, "canary-gate run --out main.json"));
    assert_false(cg_workdir_exists(f, "canary-run.json")); /* no canary time was spent */
}

static void test_gate__unreadable_baseline_is_input_error_before_running(void **state)
{
    struct cg_workdir *f = *state;
    FILE *fp = fopen(cg_workdir_in(f, "main.json"), "w");
    assert_non_null(fp);
    fputs("{\"schema\": \"canary-gate/run\", \"schema_version\": 1", fp);
    fclose(fp);
    const char *args[] = {"--baseline", "main.json", "--runs", "1", "--steps", "2", NULL};
    assert_int_equal(gate(f, NULL, args), 2);
    assert_non_null(strstr(proc.err, "main.json"));
    assert_false(cg_workdir_exists(f, "canary-run.json"));
}

static void test_gate__record_if_missing_then_gate_the_builtin_canary(void **state)
{
    struct cg_workdir *f = *state;
    const char *rec[] = {"--baseline", "main.json", "--record-if-missing", "--runs", "2",
                         "--steps", "4", "--warmup", "1", "--report", "r.md", "--json", "v.json",
                         NULL};
    assert_int_equal(gate(f, NULL, rec), 0);
    assert_non_null(strstr(proc.out, "baseline recorded"));
    assert_non_null(strstr(proc.err, "warning: the recorded baseline 'main.json' has 2 runs, "
                                     "fewer than the 3 a regression needs to FAIL"));
    struct cg_artifact a;
    struct cg_err err;
    cg_artifact_init(&a);
    assert_int_equal(cg_artifact_load(cg_workdir_in(f, "main.json"), &a, &err), 0);
    assert_int_equal(a.n_runs, 2);
    assert_int_equal(a.runs[0].n_steps, 4);
    assert_int_equal(a.settings.warmup, 1);
    cg_artifact_release(&a);
    assert_non_null(strstr(cg_workdir_read(f, "r.md"), "<!-- canary-gate-verdict: recorded -->"));
    assert_verdict_json(f, "v.json", "pass");

    /* Against it, with the steps and warm-up taken from the baseline. Two runs are fewer than
     * the default thresholds' min_runs of 3: the gate cannot FAIL, so it cannot pass either:
     * inconclusive, exit 4 as asked, saying why. */
    const char *again[] = {"--baseline", "main.json", "--runs", "2", "--json", "v2.json",
                           "--out", "pr.json", "--fail-on-inconclusive", NULL};
    assert_int_equal(gate(f, NULL, again), 4);
    assert_verdict_json(f, "v2.json", "inconclusive");
    assert_non_null(strstr(proc.err, "warning: baseline 'main.json' has 2 runs"));
    assert_non_null(strstr(proc.out, "INCONCLUSIVE: the baseline has 2 runs, fewer than the 3"));
    cg_artifact_init(&a);
    assert_int_equal(cg_artifact_load(cg_workdir_in(f, "pr.json"), &a, &err), 0);
    assert_int_equal(a.settings.steps, 4);
    assert_int_equal(a.settings.warmup, 1);
    cg_artifact_release(&a);
    assert_true(cg_workdir_exists(f, "pr.log"));
}

/* The JSON verdict of a recorded baseline names its path: a path with bytes that are not UTF-8
 * is repaired (U+FFFD), so strict JSON readers still read the verdict. */
static void test_gate__recorded_verdict_is_valid_utf8(void **state)
{
    struct cg_workdir *f = *state;
    const char *rec[] = {"--baseline", "b\xff.json", "--record-if-missing", "--runs", "1",
                         "--steps", "2", "--warmup", "0", "--json", "v.json", "--", CANARY,
                         "--steps", "2", "--step-ms", "1", NULL};
    assert_int_equal(gate(f, NULL, rec), 0);
    const char *text = cg_workdir_read(f, "v.json");
    assert_null(strstr(text, "b\xff"));
    assert_non_null(strstr(text, "b\xef\xbf\xbd.json"));
    cJSON *root = cJSON_Parse(text);
    assert_non_null(root);
    cJSON_Delete(root);
}

static void test_gate__slower_canary_fails(void **state)
{
    struct cg_workdir *f = *state;
    record_baseline(f, "2");
    const char *args[] = {"--baseline", "main.json", "--runs", "5", "--report", "r.md",
                          "--json", "v.json", "--", CANARY, "--steps", "7", "--step-ms", "40",
                          NULL};
    assert_int_equal(gate(f, NULL, args), 1);
    assert_non_null(strstr(proc.out, "FAIL"));
    assert_non_null(strstr(cg_workdir_read(f, "r.md"), "<!-- canary-gate-verdict: fail -->"));
    assert_verdict_json(f, "v.json", "fail");
    /* the test canary never initialises CUDA, and the artifact says so */
    assert_non_null(strstr(cg_workdir_read(f, "main.json"), "\"cuda_initialised\":\tfalse"));
}

/* One more NVTX range per step is caught by its count on the first run: one run a side, a
 * baseline too small for any timing metric to FAIL, still FAIL (exit 1), no runs added, and the
 * comment's counts section names the range. The same canary again has identical counts. */
static void test_gate__an_extra_range_per_step_fails_on_its_count(void **state)
{
    struct cg_workdir *f = *state;
    const char *rec[] = {"run", "--out", "main.json", "--runs", "1", "--steps", "4", "--warmup",
                         "1", "--", CANARY, "--steps", "5", "--step-ms", "2", "--nested", NULL};
    assert_int_equal(gate(f, NULL, rec), 0);
    const char *same[] = {"--baseline", "main.json", "--runs", "1", "--json", "same.json", "--",
                          CANARY, "--steps", "5", "--step-ms", "2", "--nested", NULL};
    assert_int_equal(gate(f, NULL, same), 0);
    cJSON *root = cJSON_Parse(cg_workdir_read(f, "same.json"));
    assert_non_null(root);
    const cJSON *counts = cJSON_GetObjectItemCaseSensitive(root, "counts");
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(counts, "changed")->valueint, 0);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(counts, "compared")->valueint, 3);
    cJSON_Delete(root);
    const char *more[] = {"--baseline", "main.json", "--runs", "1", "--report", "r.md", "--json",
                          "v.json", "--", CANARY, "--steps", "5", "--step-ms", "2", "--nested",
                          "--many-names", "1", NULL};
    assert_int_equal(gate(f, NULL, more), 1);
    assert_verdict_json(f, "v.json", "fail");
    assert_non_null(strstr(proc.out, "FAIL: +1 calls of an NVTX range per step (0 -> 1)"));
    const char *md = cg_workdir_read(f, "r.md");
    assert_non_null(strstr(md, "### Counts per step"));
    assert_non_null(strstr(md, "| calls of the NVTX range name-0 | 0 | 1 | +1 | +0 |"));
    struct cg_artifact a;
    struct cg_err err;
    cg_artifact_init(&a);
    assert_int_equal(cg_artifact_load(cg_workdir_in(f, "canary-run.json"), &a, &err), 0);
    assert_int_equal(a.n_runs, 1); /* decided on the first look */
    assert_int_equal(a.runs[0].steps[0].counts[CG_COUNT_RANGES], 3);
    cg_artifact_release(&a);
}

/* GPU counts end to end, with the stand-in libcupti (tests/standin/) in place of the real one:
 * one more pageable device-to-host copy per step FAILs from a single run, and the headline
 * names it; the same canary again changes no count. */
static void test_gate__a_pageable_copy_per_step_fails_from_one_run(void **state)
{
    struct cg_workdir *f = *state;
    const char *env[] = {"CANARY_GATE_CUPTI_PATH=" CG_BINARY_DIR
                         "/tests/standin/libcupti-standin.so",
                         NULL};
#define STANDIN_CANARY                                                                                 CANARY, "--cuda-init", "--standin-kernels", "--standin-syncs", "1", "--steps", "5",                   "--step-ms", "2", "--standin-dtoh-pageable"
    const char *rec[] = {"run", "--out", "main.json", "--runs", "1", "--steps", "4", "--warmup",
                         "1", "--", STANDIN_CANARY, "1", NULL};
    assert_int_equal(gate(f, env, rec), 0);
    const char *same[] = {"--baseline", "main.json", "--runs", "1", "--json", "same.json", "--",
                          STANDIN_CANARY, "1", NULL};
    assert_int_equal(gate(f, env, same), 0);
    cJSON *root = cJSON_Parse(cg_workdir_read(f, "same.json"));
    assert_non_null(root);
    const cJSON *counts = cJSON_GetObjectItemCaseSensitive(root, "counts");
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(counts, "changed")->valueint, 0);
    assert_true(cJSON_GetObjectItemCaseSensitive(counts, "compared")->valueint >= 16);
    cJSON_Delete(root);
    const char *more[] = {"--baseline", "main.json", "--runs", "1", "--report", "r.md", "--json",
                          "v.json", "--", STANDIN_CANARY, "2", NULL};
#undef STANDIN_CANARY
    assert_int_equal(gate(f, env, more), 1);
    assert_verdict_json(f, "v.json", "fail");
    assert_non_null(
        strstr(proc.out, "FAIL: +1 pageable device-to-host copies per step (1 -> 2) (and 1 more)"));
    const char *md = cg_workdir_read(f, "r.md");
    assert_non_null(strstr(md, "| pageable device-to-host copies | 1 | 2 | +1 | +0 |"));
    assert_non_null(strstr(md, "| host blocked in synchronisation |"));
}

static void test_gate__too_few_runs_cannot_fail(void **state)
{
    struct cg_workdir *f = *state;
    const char *rec[] = {"run", "--out", "main.json", "--runs", "2", "--steps", "6", "--warmup",
                         "1", "--", CANARY, "--steps", "7", "--step-ms", "2", NULL};
    assert_int_equal(gate(f, NULL, rec), 0);
    const char *args[] = {"--baseline", "main.json", "--runs", "2", "--max-runs", "2",
                          "--json", "v.json", "--fail-on-inconclusive", "--", CANARY,
                          "--steps", "7", "--step-ms", "40", NULL};
    assert_int_equal(gate(f, NULL, args), 4);
    assert_verdict_json(f, "v.json", "inconclusive");
    assert_non_null(strstr(proc.err, "warning: baseline 'main.json' has 2 runs"));
    assert_non_null(strstr(proc.out, "the baseline has 2 runs"));
}

static void test_gate__same_canary_passes(void **state)
{
    struct cg_workdir *f = *state;
    record_baseline(f, "20");
    const char *args[] = {"--baseline", "main.json", "--runs", "5", "--json", "v.json", "--",
                          CANARY, "--steps", "7", "--step-ms", "20", NULL};
    /* Sleep-bound steps of equal length: never a FAIL. On a loaded machine the scheduler can
     * stretch one side beyond 5% without significance: inconclusive (exit 0) is honest too. */
    assert_int_equal(gate(f, NULL, args), 0);
    cJSON *root = cJSON_Parse(cg_workdir_read(f, "v.json"));
    assert_non_null(root);
    const char *v = cJSON_GetObjectItemCaseSensitive(root, "verdict")->valuestring;
    assert_true(strcmp(v, "pass") == 0 || strcmp(v, "inconclusive") == 0);
    cJSON_Delete(root);
}

static void test_gate__failing_canary_is_reported_as_such(void **state)
{
    struct cg_workdir *f = *state;
    record_baseline(f, "2");
    const char *args[] = {"--baseline", "main.json", "--runs", "3", "--report", "r.md",
                          "--json", "v.json", "--", CANARY, "--steps", "7", "--step-ms", "2",
                          "--crash-at", "3", NULL};
    assert_int_equal(gate(f, NULL, args), 3);
    assert_non_null(strstr(proc.err, "died of signal"));
    const char *md = cg_workdir_read(f, "r.md");
    assert_non_null(strstr(md, "the canary failed"));
    assert_non_null(strstr(md, "died of signal"));
    assert_verdict_json(f, "v.json", "error");
    assert_false(cg_workdir_exists(f, "canary-run.json")); /* nothing measured, nothing written */
}

/* A canary that prints, then fails: the report shows the end of its output (a reviewer on GitHub
 * cannot open the log), its last 20 lines, redacted as the command line is, escaped for GitHub
 * (checked with cmark-gfm: no line ends the code block, opens HTML or mentions anyone) and for
 * the terminal, with a note of how much was left out; before, only "its output is in '...'". */
static void test_gate__failed_canary_report_shows_the_end_of_its_output(void **state)
{
    struct cg_workdir *f = *state;
    record_baseline(f, "2");
    const char *env[] = {"WANDB_API_KEY=wandb_secret_value_0123", NULL};
    /* the log: the run's banner, 30 numbered lines, 5 hostile ones, then the canary crashes */
    const char *script = "i=1; while [ $i -le 30 ]; do echo \"line $i of the canary\"; "
                         "i=$((i+1)); done; echo \"key $WANDB_API_KEY\"; "
                         "printf 'red \\033[31mALERT\\033[0m\\n'; echo '```'; "
                         "echo '</code></pre><script>alert(1)</script> @admin'; "
                         "head -c 1000 /dev/zero | tr '\\0' x; echo; "
                         "exec \"$0\" --steps 7 --step-ms 2 --crash-at 3";
    const char *args[] = {"--baseline", "main.json", "--runs", "3", "--report", "r.md", "--",
                          "sh", "-c", script, CANARY, NULL};
    assert_int_equal(gate(f, env, args), 3);
    char *md = strdup(cg_workdir_read(f, "r.md"));
    assert_non_null(md);
    if (strstr(md, "**The end of the canary's output** (its last 20 lines of 36; the 16 before "
                   "them left out; lines cut at 400 bytes; secrets hidden as ***; the whole "
                   "output is in 'canary-run.log')") == NULL ||
        strstr(md, "line 16 of the canary") == NULL || strstr(md, "line 30 of the canary") == NULL ||
        strstr(md, "line 15 of the canary") != NULL || strstr(md, "key ***") == NULL)
        fail_msg("report:\n%s", md);
    const char *never[] = {"wandb_secret_value_0123", "\x1b", NULL};
    for (size_t i = 0; never[i] != NULL; i++)
        if (strstr(md, never[i]) != NULL || strstr(proc.err, never[i]) != NULL)
            fail_msg("the report or the terminal holds '%s'", never[i]);
    char xs[402];
    memset(xs, 'x', 401);
    xs[401] = '\0';
    assert_null(strstr(md, xs));
    /* as GitHub shows it: one code block holding the lines, the footer after it */
    char *html = cg_render_gfm(md, strlen(md));
    cg_render_check_gfm(html, "r.md");
    const char *code = strstr(html, "<pre><code class=\"language-text\">");
    const char *end = code != NULL ? strstr(code, "</code></pre>") : NULL;
    if (code == NULL || end == NULL || strstr(code, "line 30 of the canary") > end ||
        strstr(code, "&lt;/code&gt;&lt;/pre&gt;&lt;script&gt;alert(1)") > end ||
        strstr(code, "\n```\n") > end || strstr(html, "<script>") != NULL ||
        strstr(html, "@admin</a>") != NULL || strstr(end, "<sub>canary-gate") == NULL)
        fail_msg("rendered:\n%s", html);
    free(html);
    free(md);
    /* the terminal: the same lines after "  | ", the colour codes shown as '?' */
    if (strstr(proc.err, "canary-gate: the end of the canary's output (its last 20 lines of 36") ==
            NULL ||
        strstr(proc.err, "\n  | line 30 of the canary\n") == NULL ||
        strstr(proc.err, "\n  | red ?[31mALERT?[0m\n") == NULL)
        fail_msg("stderr:\n%s", proc.err);
}

static void test_gate__nonfinite_loss_is_a_canary_failure_with_its_reason(void **state)
{
    struct cg_workdir *f = *state;
    const char *rec[] = {"run", "--out", "main.json", "--runs", "1", "--steps", "4", "--warmup",
                         "1", NULL};
    assert_int_equal(gate(f, NULL, rec), 0);
    const char *args[] = {"--baseline", "main.json", "--runs", "1", "--report", "r.md", "--json",
                          "v.json", "--", CG_BINARY_DIR "/canary-train", "--preset", "tiny",
                          "--steps", "5", "--inject-nan-at", "3", NULL};
    assert_int_equal(gate(f, NULL, args), 3);
    assert_non_null(strstr(proc.err, "non-finite loss (nan) in step 3"));
    assert_non_null(strstr(cg_workdir_read(f, "r.md"), "training diverged"));
    assert_verdict_json(f, "v.json", "error");
}

static void test_gate__comment_and_status_are_posted(void **state)
{
    struct cg_workdir *f = *state;
    struct cg_httpd *srv = cg_httpd_start();
    assert_non_null(srv);
    cg_httpd_github(srv, "o/r", 7, TOKEN, 100);
    FILE *fp = fopen(cg_workdir_in(f, "event.json"), "w");
    assert_non_null(fp);
    fprintf(fp, "{\"pull_request\": {\"number\": 7, \"head\": {\"sha\": \"%s\"}}}", SHA);
    fclose(fp);
    record_baseline(f, "2");
    char url[128], event[600], summary[600];
    snprintf(url, sizeof(url), "GITHUB_API_URL=%s", cg_httpd_url(srv));
    snprintf(event, sizeof(event), "GITHUB_EVENT_PATH=%s", cg_workdir_in(f, "event.json"));
    snprintf(summary, sizeof(summary), "GITHUB_STEP_SUMMARY=%s", cg_workdir_in(f, "summary.md"));
    const char *env[] = {"GITHUB_TOKEN=" TOKEN, "GITHUB_REPOSITORY=o/r", url, event, summary,
                         NULL};
    const char *args[] = {"--baseline", "main.json", "--runs", "5", "--comment", "--status",
                          "--id", "cpu", "--", CANARY, "--steps", "7", "--step-ms", "40", NULL};
    assert_int_equal(gate(f, env, args), 1);
    assert_int_equal(cg_httpd_comment_count(srv), 1);
    char *body = cg_httpd_comment(srv, 0, NULL);
    assert_non_null(body);
    assert_non_null(strstr(body, "<!-- canary-gate:cpu -->"));
    assert_non_null(strstr(body, "FAIL"));
    free(body);
    assert_int_equal(cg_httpd_status_count(srv), 1);
    char *status = cg_httpd_status(srv, 0);
    assert_non_null(status);
    assert_non_null(strstr(status, SHA));
    assert_non_null(strstr(status, "failure"));
    free(status);
    assert_true(cg_workdir_exists(f, "canary-run.md")); /* the report beside --out */
    assert_non_null(strstr(cg_workdir_read(f, "summary.md"), "FAIL"));
    assert_null(strstr(proc.out, TOKEN));
    assert_null(strstr(proc.err, TOKEN));
    cg_httpd_stop(srv);
}

/* The GitHub emulation for pull request 7 of o/r, an event file for it, and the tool's
 * environment for posting (extra: one more "NAME=value", or NULL). */
struct gh_scene {
    struct cg_httpd *srv;
    char url[128], event[600], summary[600];
    const char *env[8];
};

static void gh_scene_open(const struct cg_workdir *f, struct gh_scene *g, const char *extra)
{
    g->srv = cg_httpd_start();
    assert_non_null(g->srv);
    cg_httpd_github(g->srv, "o/r", 7, TOKEN, 100);
    FILE *fp = fopen(cg_workdir_in(f, "event.json"), "w");
    assert_non_null(fp);
    fprintf(fp, "{\"pull_request\": {\"number\": 7, \"head\": {\"sha\": \"%s\"}}}", SHA);
    fclose(fp);
    snprintf(g->url, sizeof(g->url), "GITHUB_API_URL=%s", cg_httpd_url(g->srv));
    snprintf(g->event, sizeof(g->event), "GITHUB_EVENT_PATH=%s", cg_workdir_in(f, "event.json"));
    snprintf(g->summary, sizeof(g->summary), "GITHUB_STEP_SUMMARY=%s",
             cg_workdir_in(f, "summary.md"));
    const char *env[] = {"GITHUB_TOKEN=" TOKEN, "GITHUB_REPOSITORY=o/r", g->url, g->event,
                         g->summary, extra, NULL};
    memcpy(g->env, env, sizeof(env));
}

/* A canary that fails: the commit status is "error" with "canary failed: <reason>", never
 * "failure" with the FAIL text; the comment says the canary failed. */
static void test_gate__canary_failure_sets_status_error_with_its_reason(void **state)
{
    struct cg_workdir *f = *state;
    struct gh_scene g;
    gh_scene_open(f, &g, NULL);
    record_baseline(f, "2");
    const char *args[] = {"--baseline", "main.json", "--runs", "3", "--comment", "--status", "--",
                          CANARY, "--steps", "7", "--step-ms", "2", "--crash-at", "3", NULL};
    assert_int_equal(gate(f, g.env, args), 3);
    assert_int_equal(cg_httpd_status_count(g.srv), 1);
    char *status = cg_httpd_status(g.srv, 0);
    assert_non_null(status);
    if (strstr(status, "\"state\":\"error\"") == NULL ||
        strstr(status, "\"description\":\"canary failed: canary died of signal 6") == NULL)
        fail_msg("status: %s", status);
    assert_null(strstr(status, "FAIL"));
    free(status);
    char *body = cg_httpd_comment(g.srv, 0, NULL);
    assert_non_null(body);
    assert_non_null(strstr(body, "<!-- canary-gate-verdict: error -->"));
    assert_non_null(strstr(body, "the canary failed"));
    free(body);
    cg_httpd_stop(g.srv);
}

/* A baseline recorded with --record-if-missing: the status says nothing was compared, and the
 * report too; never "PASS: no regression". */
static void test_gate__recorded_baseline_says_nothing_was_compared(void **state)
{
    struct cg_workdir *f = *state;
    struct gh_scene g;
    gh_scene_open(f, &g, NULL);
    const char *args[] = {"--baseline", "main.json", "--record-if-missing", "--runs", "1",
                          "--steps", "3", "--warmup", "0", "--comment", "--status", "--", CANARY,
                          "--steps", "3", "--step-ms", "1", NULL};
    assert_int_equal(gate(f, g.env, args), 0);
    char *status = cg_httpd_status(g.srv, 0);
    assert_non_null(status);
    if (strstr(status, "\"state\":\"success\"") == NULL ||
        strstr(status, "\"description\":\"baseline recorded, nothing compared\"") == NULL)
        fail_msg("status: %s", status);
    free(status);
    char *body = cg_httpd_comment(g.srv, 0, NULL);
    assert_non_null(body);
    assert_non_null(strstr(body, "<!-- canary-gate-verdict: recorded -->"));
    assert_non_null(strstr(body, "baseline recorded, nothing compared"));
    assert_null(strstr(body, "PASS"));
    free(body);
    cg_httpd_stop(g.srv);
}

/* Secrets in the canary's arguments: the values of secret-looking variables, --redact matches
 * and a URL's password appear nowhere the gate writes: artifact, report, comment, job summary,
 * log, terminal; not even escaped. */
static void test_gate__secrets_in_the_command_are_redacted_everywhere(void **state)
{
    struct cg_workdir *f = *state;
    struct gh_scene g;
    gh_scene_open(f, &g, "WANDB_API_KEY=wandb_secret_value_0123");
    record_baseline(f, "2");
    const char *args[] = {"--baseline", "main.json", "--runs", "3", "--comment", "--status",
                          "--report", "r.md", "--json", "v.json", "--redact", "hf_[A-Za-z0-9]+",
                          "--", HELPER, "env", "seen.env", "WANDB_API_KEY",
                          "--key=wandb_secret_value_0123", "hf_abcDEF123",
                          "https://bob:pw_0123456@data.example/x", "--token=" TOKEN, "--",
                          CANARY, "--steps", "7", "--step-ms", "2", NULL};
    int code = gate(f, g.env, args);
    assert_true(code == 0 || code == 1);
    /* the canary still got its real arguments and environment (the helper lists its arguments
     * before the second "--" as names: "NAME unset") */
    assert_non_null(strstr(cg_workdir_read(f, "seen.env"), "WANDB_API_KEY=wandb_secret_value_0123"));
    assert_non_null(strstr(cg_workdir_read(f, "seen.env"), "hf_abcDEF123 unset"));
    const char *secrets[] = {"wandb_secret_value_0123", "wandb&#95;secret", "hf_abcDEF123",
                             "hf&#95;abcDEF123", "abcDEF123", "pw_0123456", "pw&#95;0123456",
                             "gateTestToken0123456789", NULL};
    char *body = cg_httpd_comment(g.srv, 0, NULL);
    assert_non_null(body);
    const char *where[] = {"canary-run.json", "r.md", "summary.md", "canary-run.log", "v.json"};
    for (size_t i = 0; secrets[i] != NULL; i++) {
        for (size_t k = 0; k < sizeof(where) / sizeof(where[0]); k++)
            if (strstr(cg_workdir_read(f, where[k]), secrets[i]) != NULL)
                fail_msg("'%s' holds '%s'", where[k], secrets[i]);
        if (strstr(body, secrets[i]) != NULL || strstr(proc.out, secrets[i]) != NULL ||
            strstr(proc.err, secrets[i]) != NULL)
            fail_msg("the comment or the terminal holds '%s'", secrets[i]);
    }
    assert_non_null(strstr(cg_workdir_read(f, "canary-run.json"), "--key=***"));
    assert_non_null(strstr(cg_workdir_read(f, "canary-run.log"), "https://***@data.example/x"));
    free(body);
    /* a pattern that is not a regular expression: one line, exit 2, before any run */
    const char *bad[] = {"--baseline", "main.json", "--redact", "([a-z", NULL};
    assert_int_equal(gate(f, NULL, bad), 2);
    assert_non_null(strstr(proc.err, "--redact '([a-z': not a regular expression"));
    cg_httpd_stop(g.srv);
}

/* GitHub never answers: posting ends at --post-deadline with a warning, and the gate keeps its
 * verdict's exit code (FAIL here). */
static void test_gate__post_deadline_keeps_the_exit_code(void **state)
{
    struct cg_workdir *f = *state;
    int fd = socket(AF_INET, SOCK_STREAM, 0); /* listens, never accepts, never answers */
    assert_true(fd >= 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(fd, 64), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    struct gh_scene g;
    gh_scene_open(f, &g, "CANARY_GATE_HTTP_TIMEOUT_MS=60000");
    snprintf(g.url, sizeof(g.url), "GITHUB_API_URL=http://127.0.0.1:%d", ntohs(a.sin_port));
    record_baseline(f, "2");
    const char *args[] = {"--baseline", "main.json", "--runs", "5", "--comment", "--status",
                          "--post-deadline", "2", "--", CANARY, "--steps", "7", "--step-ms",
                          "40", NULL};
    time_t t0 = time(NULL);
    assert_int_equal(gate(f, g.env, args), 1);
    assert_true(time(NULL) - t0 < 40);
    assert_non_null(strstr(proc.err, "the 2 s deadline for talking to GitHub passed"));
    const char *bad[] = {"--baseline", "main.json", "--post-deadline", "0", NULL};
    assert_int_equal(gate(f, NULL, bad), 2);
    close(fd);
    cg_httpd_stop(g.srv);
}

static void test_gate__trace_of_the_first_run(void **state)
{
    struct cg_workdir *f = *state;
    record_baseline(f, "3");
    const char *args[] = {"--baseline", "main.json", "--runs", "3", "--trace", "t.json",
                          "--trace-steps", "1:3", "--", CANARY, "--steps", "7", "--step-ms", "3",
                          "--nested", NULL};
    int code = gate(f, NULL, args);
    assert_true(code == 0 || code == 1);
    cJSON *root = cJSON_Parse(cg_workdir_read(f, "t.json"));
    assert_non_null(root);
    const cJSON *events = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
    assert_true(cJSON_IsArray(events));
    size_t steps = 0, forward = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, events)
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
        const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
        if (!cJSON_IsString(name) || !cJSON_IsString(ph) || strcmp(ph->valuestring, "X") != 0)
            continue;
        steps += strncmp(name->valuestring, "step ", 5) == 0;
        forward += strcmp(name->valuestring, "forward") == 0;
    }
    assert_int_equal(steps, 3);   /* measured steps 1, 2 and 3 of the first run */
    assert_int_equal(forward, 3); /* one nested range per traced step */
    cJSON_Delete(root);
    const char *bad[] = {"--baseline", "main.json", "--trace", "t.json", "--trace-steps", "3:1",
                         NULL};
    assert_int_equal(gate(f, NULL, bad), 2);
    assert_non_null(strstr(proc.err, "--trace-steps '3:1'"));
}

static void test_gate__usage_errors(void **state)
{
    struct cg_workdir *f = *state;
    const char *no_base[] = {"gate", "--runs", "2", NULL};
    assert_int_equal(gate(f, NULL, no_base), 2);
    assert_non_null(strstr(proc.err, "--baseline"));
    const char *bad_mode[] = {"--baseline", "x.json", "--comment-mode", "sometimes", NULL};
    assert_int_equal(gate(f, NULL, bad_mode), 2);
    assert_non_null(strstr(proc.err, "sometimes"));
    const char *bad_runs[] = {"--baseline", "x.json", "--runs", "0", NULL};
    assert_int_equal(gate(f, NULL, bad_runs), 2);
    const char *help[] = {"--baseline", "x.json", "--help", NULL};
    assert_int_equal(gate(f, NULL, help), 0);
    assert_non_null(strstr(proc.out, "--record-if-missing"));
}

/* Fails unless every run of the artifact name was stopped after `stopped` steps (-1: the canary
 * ended by itself). */
static void assert_stopped(const struct cg_workdir *f, const char *name, int64_t stopped)
{
    struct cg_artifact a;
    struct cg_err err;
    cg_err_init(&err);
    if (cg_artifact_load(cg_workdir_in(f, name), &a, &err) != 0)
        fail_msg("%s", err.msg);
    assert_true(a.n_runs > 0);
    for (size_t i = 0; i < a.n_runs; i++)
        if (a.runs[i].stopped_after_steps != stopped)
            fail_msg("'%s' run %zu: stopped after %lld steps, expected %lld", name, i,
                     (long long)a.runs[i].stopped_after_steps, (long long)stopped);
    cg_artifact_release(&a);
}

/* Runs canary-gate with head, then "--let-finish" when let, then the measured canary (it trains
 * 2 s after its "done") as the command; fails the test unless it exits 0. */
static void measure_with(const struct cg_workdir *f, const char *const *head, bool let)
{
    const char *args[40];
    size_t n = 0;
    for (size_t i = 0; head[i] != NULL; i++)
        args[n++] = head[i];
    if (let)
        args[n++] = "--let-finish";
    const char *canary[] = {"--", HELPER, "measured", "--end-after", "2000", NULL};
    for (size_t i = 0; canary[i] != NULL; i++)
        args[n++] = canary[i];
    args[n] = NULL;
    if (gate(f, NULL, args) != 0)
        fail_msg("%s: %s", head[0], proc.err);
}

/* Every measuring command (the main command, run, aa, ab) stops a canary once its shards say
 * "done", and waits for it to exit by itself with --let-finish. */
static void test_gate__measuring_commands_stop_once_measured_unless_let_finish(void **state)
{
    struct cg_workdir *f = *state;
    static const char *const gate_args[] = {"--baseline", "gate.json", "--record-if-missing",
                                            "--runs", "1", "--steps", "2", "--warmup", "0",
                                            "--out", "gate-run.json", NULL};
    static const char *const run_args[] = {"run", "--runs", "1", "--steps", "2", "--warmup", "0",
                                           "--out", "run.json", NULL};
    static const char *const aa_args[] = {"aa", "--runs", "1", "--steps", "2", "--warmup", "0",
                                          "--out", "aa.json", NULL};
    static const char *const ab_args[] = {"ab", "--runs", "1", "--max-runs", "1", "--steps", "2",
                                          "--warmup", "0", "--out", "ab.json", "--out-base",
                                          "ab-base.json", "--base",
                                          HELPER " measured --end-after 2000", NULL};
    for (int let = 0; let < 2; let++) {
        int64_t want = let ? -1 : 2;
        measure_with(f, gate_args, let);
        assert_stopped(f, "gate-run.json", want);
        if (!let)
            assert_non_null(strstr(proc.err, "stopped after 2 steps"));
        unlink(cg_workdir_in(f, "gate.json"));
        measure_with(f, run_args, let);
        assert_stopped(f, "run.json", want);
        measure_with(f, aa_args, let);
        assert_stopped(f, "aa.json", want);
        measure_with(f, ab_args, let);
        assert_stopped(f, "ab.json", want);
        assert_stopped(f, "ab-base.json", want);
    }
}

/* Every test runs in a fresh temporary directory. */
#define IN_WORKDIR(fn) cmocka_unit_test_setup_teardown(fn, cg_workdir_setup, cg_workdir_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        IN_WORKDIR(test_gate__missing_baseline_says_how_to_record_one),
        IN_WORKDIR(test_gate__unreadable_baseline_is_input_error_before_running),
        IN_WORKDIR(test_gate__record_if_missing_then_gate_the_builtin_canary),
        IN_WORKDIR(test_gate__recorded_verdict_is_valid_utf8),
        IN_WORKDIR(test_gate__slower_canary_fails),
        IN_WORKDIR(test_gate__too_few_runs_cannot_fail),
        IN_WORKDIR(test_gate__an_extra_range_per_step_fails_on_its_count),
        IN_WORKDIR(test_gate__a_pageable_copy_per_step_fails_from_one_run),
        IN_WORKDIR(test_gate__same_canary_passes),
        IN_WORKDIR(test_gate__failing_canary_is_reported_as_such),
        IN_WORKDIR(test_gate__failed_canary_report_shows_the_end_of_its_output),
        IN_WORKDIR(test_gate__nonfinite_loss_is_a_canary_failure_with_its_reason),
        IN_WORKDIR(test_gate__comment_and_status_are_posted),
        IN_WORKDIR(test_gate__canary_failure_sets_status_error_with_its_reason),
        IN_WORKDIR(test_gate__recorded_baseline_says_nothing_was_compared),
        IN_WORKDIR(test_gate__secrets_in_the_command_are_redacted_everywhere),
        IN_WORKDIR(test_gate__post_deadline_keeps_the_exit_code),
        IN_WORKDIR(test_gate__trace_of_the_first_run),
        IN_WORKDIR(test_gate__usage_errors),
        IN_WORKDIR(test_gate__measuring_commands_stop_once_measured_unless_let_finish),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
