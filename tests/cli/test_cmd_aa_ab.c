/*
 * test_cmd_aa_ab: the detection commands end to end through the built tool, and the --base
 * splitting they rely on: 'aa' on the built-in canary (runs, artifact, noise report, thresholds
 * snippet, exit codes), 'ab' on the built-in canary and on the sleep-bound test canary (a clear
 * regression fails pair by pair, artifacts of both sides, bad --base), and the main command's
 * sequential looks, budget and FAIL confirmation on the test canary.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "argsplit.h"
#include "artifact.h"
#include "proc.h"
#include "workdir.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CANARY CG_BINARY_DIR "/tests/canaries/nvtx-canary"
#define TRAIN CG_BINARY_DIR "/canary-train"

/* ---- --base splitting --------------------------------------------------------------------- */

struct split_case {
    const char *line;
    const char *words[8]; /* NULL-terminated; words[0] NULL: an input error is expected */
    const char *error;    /* part of the message when an error is expected */
};

static const struct split_case split_cases[] = {
    {"a b  c", {"a", "b", "c", NULL}, NULL},
    {"\tcanary-train\n--preset  tiny ", {"canary-train", "--preset", "tiny", NULL}, NULL},
    {"'a b' \"c d\" e\\ f", {"a b", "c d", "e f", NULL}, NULL},
    {"--name=\"x y\"z", {"--name=x yz", NULL}, NULL},
    {"\"\" x ''", {"", "x", "", NULL}, NULL},
    {"\"a\\\"b\\\\c\\d\"", {"a\"b\\c\\d", NULL}, NULL},
    {"'it''s' \"it's\"", {"its", "it's", NULL}, NULL},
    {"$HOME * ; | > x && y", {"$HOME", "*", ";", "|", ">", "x", "&&", "y"}, NULL},
    {"'abc", {NULL}, "unterminated single quote"},
    {"x \"abc", {NULL}, "unterminated double quote"},
    {"abc\\", {NULL}, "trailing backslash"},
    {"   ", {NULL}, "no command"},
    {"", {NULL}, "no command"},
};

static void test_cmd_aa_ab__base_is_split_without_a_shell(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(split_cases) / sizeof(split_cases[0]); i++) {
        const struct split_case *c = &split_cases[i];
        char **argv = NULL;
        size_t argc = 0;
        struct cg_err err;
        cg_err_init(&err);
        int rc = cg_argsplit(c->line, &argv, &argc, &err);
        if (c->words[0] == NULL) {
            assert_int_equal(rc, CG_EINPUT);
            assert_null(argv);
            assert_non_null(strstr(err.msg, c->error));
            continue;
        }
        assert_int_equal(rc, 0);
        size_t want = 0;
        while (want < 8 && c->words[want] != NULL)
            want++;
        assert_int_equal(argc, want);
        for (size_t k = 0; k < want; k++)
            assert_string_equal(argv[k], c->words[k]);
        assert_null(argv[argc]);
        cg_argsplit_free(argv);
    }
}

/* ---- the tool ----------------------------------------------------------------------------- */

static struct cg_proc proc;

/* Runs canary-gate in the test's directory with args (NULL-terminated); the exit code. */
static int tool(const struct cg_workdir *f, const char *const *args)
{
    return cg_workdir_run(f, CG_TOOL_PATH, NULL, args, &proc);
}

static cJSON *load_json(const struct cg_workdir *f, const char *name)
{
    cJSON *root = cJSON_Parse(cg_workdir_read(f, name));
    assert_non_null(root);
    return root;
}

static const char *json_string(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    assert_true(cJSON_IsString(v));
    return v->valuestring;
}

static double json_number(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    assert_true(cJSON_IsNumber(v));
    return v->valuedouble;
}

/* Runs in an artifact, and the measured steps of its first run. */
static size_t artifact_runs(const struct cg_workdir *f, const char *name, size_t *steps)
{
    struct cg_artifact a;
    struct cg_err err;
    cg_artifact_init(&a);
    assert_int_equal(cg_artifact_load(cg_workdir_in(f, name), &a, &err), 0);
    size_t n = a.n_runs;
    if (steps != NULL)
        *steps = n ? a.runs[0].n_steps : 0;
    cg_artifact_release(&a);
    return n;
}

static const cJSON *metric_of(const cJSON *root, const char *name)
{
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(root, "metrics"))
    {
        if (strcmp(json_string(m, "name"), name) == 0)
            return m;
    }
    fail_msg("no metric '%s'", name);
    return NULL;
}

static void test_cmd_aa_ab__aa_on_the_builtin_canary(void **state)
{
    struct cg_workdir *f = *state;
    const char *args[] = {"aa",    "--runs",  "2",      "--steps",        "5", "--warmup", "1",
                          "--out", "aa.json", "--json", "aa-report.json", NULL};
    assert_int_equal(tool(f, args), 0);
    size_t steps = 0;
    assert_int_equal(artifact_runs(f, "aa.json", &steps), 4); /* 2 a side, in one artifact */
    assert_int_equal(steps, 5);
    assert_true(cg_workdir_exists(f, "aa.log"));
    assert_non_null(strstr(proc.out, "noise of this runner"));
    assert_non_null(strstr(proc.out, "between-run CV"));
    assert_non_null(strstr(proc.out, "\"extends\": \"default\""));
    cJSON *root = load_json(f, "aa-report.json");
    assert_string_equal(json_string(root, "schema"), "canary-gate/aa");
    assert_int_equal((int)json_number(root, "runs"), 4);
    assert_int_equal((int)json_number(root, "runs_per_side"), 2);
    assert_int_equal((int)json_number(root, "decisions"), 6); /* every split: C(4, 2) */
    /* 2 runs a side are fewer than min_runs 3: no A/A decision can fail. */
    assert_true(json_number(root, "false_alarm_rate") == 0.0);
    const cJSON *mean = metric_of(root, "step_time_mean");
    assert_true(json_number(mean, "between_run_cv_pct") > 0.0);
    assert_true(json_number(mean, "within_run_cv_pct") > 0.0);
    assert_true(
        cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(mean, "recommended_max_regression_pct")));
    assert_non_null(metric_of(root, "peak_host_rss"));
    const cJSON *snip = cJSON_GetObjectItemCaseSensitive(root, "recommended_thresholds");
    assert_string_equal(json_string(snip, "extends"), "default");
    /* The built-in canary does the same work every step: its counts (the NVTX ranges, their
     * total and each name's calls) are identical in every step of every run. */
    const cJSON *counts = cJSON_GetObjectItemCaseSensitive(root, "counts");
    assert_true(json_number(counts, "measured") >= 2);
    assert_true(json_number(counts, "identical") == json_number(counts, "measured"));
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(counts, "varying")), 0);
    assert_non_null(strstr(proc.out, "counts are exact here"));
    cJSON_Delete(root);
}

static void test_cmd_aa_ab__aa_recommends_with_enough_runs(void **state)
{
    struct cg_workdir *f = *state;
    /* 3 runs a side of the sleep-bound canary: 20 splits, some with p <= 0.05; the thresholds
     * snippet holds a number for each timing metric, and it extends the file given. */
    const char *args[] = {"aa",   "--runs",       "3",       "--steps",   "6",      "--warmup",
                          "1",    "--thresholds", "default", "--json",    "r.json", "--",
                          CANARY, "--steps",      "7",       "--step-ms", "3",      NULL};
    assert_int_equal(tool(f, args), 0);
    assert_int_equal(artifact_runs(f, "canary-aa.json", NULL), 6);
    cJSON *root = load_json(f, "r.json");
    assert_int_equal((int)json_number(root, "decisions"), 20);
    const cJSON *snip = cJSON_GetObjectItemCaseSensitive(root, "recommended_thresholds");
    const cJSON *metrics = cJSON_GetObjectItemCaseSensitive(snip, "metrics");
    const cJSON *mean = cJSON_GetObjectItemCaseSensitive(metrics, "step_time_mean");
    assert_non_null(mean);
    assert_true(json_number(mean, "max_regression_pct") >= 0.0);
    assert_true(json_number(metric_of(root, "step_time_mean"), "recommended_max_regression_pct") >=
                0.0);
    cJSON_Delete(root);
}

static void test_cmd_aa_ab__aa_usage_and_canary_errors(void **state)
{
    struct cg_workdir *f = *state;
    const char *bad_target[] = {"aa", "--target", "0", NULL};
    assert_int_equal(tool(f, bad_target), 2);
    assert_non_null(strstr(proc.err, "--target"));
    const char *bad_runs[] = {"aa", "--runs", "0", NULL};
    assert_int_equal(tool(f, bad_runs), 2);
    const char *crash[] = {"aa",   "--runs",  "2", "--steps",   "4", "--warmup",   "1", "--",
                           CANARY, "--steps", "5", "--step-ms", "1", "--crash-at", "2", NULL};
    assert_int_equal(tool(f, crash), 3);
    assert_non_null(strstr(proc.err, "canary died"));
    assert_false(cg_workdir_exists(f, "canary-aa.json"));
}

static void test_cmd_aa_ab__ab_on_the_builtin_canary(void **state)
{
    struct cg_workdir *f = *state;
    /* The base command spelled out, the head the built-in canary: the same program. 2 pairs
     * (one look) are fewer than min_runs: pass or inconclusive, never a FAIL. */
    const char *args[] = {"ab",
                          "--base",
                          TRAIN " --preset tiny --steps 6",
                          "--runs",
                          "2",
                          "--max-runs",
                          "2",
                          "--steps",
                          "5",
                          "--warmup",
                          "1",
                          "--json",
                          "v.json",
                          "--report",
                          "r.md",
                          "--fail-on-inconclusive",
                          NULL};
    int code = tool(f, args);
    assert_true(code == 0 || code == 4);
    size_t steps = 0;
    assert_int_equal(artifact_runs(f, "canary-ab-base.json", &steps), 2);
    assert_int_equal(steps, 5);
    assert_int_equal(artifact_runs(f, "canary-ab-head.json", NULL), 2);
    assert_true(cg_workdir_exists(f, "canary-ab-base.log") && cg_workdir_exists(f, "canary-ab-head.log"));
    assert_true(cg_workdir_exists(f, "r.md"));
    cJSON *root = load_json(f, "v.json");
    assert_string_equal(json_string(root, "verdict"), code == 0 ? "pass" : "inconclusive");
    const cJSON *base = cJSON_GetObjectItemCaseSensitive(root, "baseline");
    assert_int_equal((int)json_number(base, "runs"), 2);
    assert_string_equal(json_string(metric_of(root, "step_time_mean"), "method"),
                        "wilcoxon_signed_rank_pairs");
    cJSON_Delete(root);
}

/* ab of the sleep-bound canary, 4 ms steps (base) against 12 ms (head), runs then up to
 * max_runs pairs; artifacts b.json and h.json, verdict v.json. The exit code. */
static int ab_4ms_against_12ms(const struct cg_workdir *f, const char *runs, const char *max_runs)
{
    const char *args[] = {"ab",       "--base",     CANARY " --steps 7 --step-ms '4'",
                          "--runs",   runs,         "--max-runs",
                          max_runs,   "--steps",    "6",
                          "--warmup", "1",          "--out",
                          "h.json",   "--out-base", "b.json",
                          "--json",   "v.json",     "--color",
                          "never",    "--",         CANARY,
                          "--steps",  "7",          "--step-ms",
                          "12",       NULL};
    return tool(f, args);
}

static void test_cmd_aa_ab__ab_fails_a_clear_regression_pair_by_pair(void **state)
{
    struct cg_workdir *f = *state;
    /* 4 ms steps against 12 ms: every pair's ratio is about 3, W+ = 15 of 15, p = 1/32; one
     * look (--max-runs 5) at the full alpha. */
    assert_int_equal(ab_4ms_against_12ms(f, "5", "5"), 1);
    assert_non_null(strstr(proc.out, "FAIL"));
    assert_int_equal(artifact_runs(f, "b.json", NULL), 5);
    assert_int_equal(artifact_runs(f, "h.json", NULL), 5);
    cJSON *root = load_json(f, "v.json");
    assert_string_equal(json_string(root, "verdict"), "fail");
    const cJSON *mean = metric_of(root, "step_time_mean");
    assert_true(json_number(mean, "delta_pct") > 100.0);
    assert_true(json_number(mean, "p_value") < 0.032 && json_number(mean, "p_value") > 0.031);
    cJSON_Delete(root);
}

/* The same regression with the default looks from 4 pairs (up to 8): at 4 pairs the signed-rank
 * test cannot reach alpha (its smallest p is 1/16) and the floor has fewer than its min_runs (5),
 * so 4 pairs are added; at 8 pairs W+ = 36 of 36, p = 1/256. */
static void test_cmd_aa_ab__ab_adds_pairs_while_inconclusive(void **state)
{
    struct cg_workdir *f = *state;
    assert_int_equal(ab_4ms_against_12ms(f, "4", "8"), 1);
    assert_non_null(strstr(proc.err, "inconclusive after 4 pairs; adding 4"));
    assert_non_null(strstr(proc.err, "2 looks (pocock spending), 8 pairs (4 added)"));
    assert_non_null(
        strstr(proc.out, "note: 2 looks of 2 planned: 4 pairs, then 4 added, the last"));
    assert_non_null(strstr(proc.out, "the FAIL was not checked with fresh pairs"));
    assert_int_equal(artifact_runs(f, "b.json", NULL), 8);
    assert_int_equal(artifact_runs(f, "h.json", NULL), 8);
    cJSON *root = load_json(f, "v.json");
    assert_string_equal(json_string(root, "verdict"), "fail");
    const cJSON *mean = metric_of(root, "step_time_mean");
    assert_true(json_number(mean, "p_value") < 0.0040 && json_number(mean, "p_value") > 0.0038);
    const cJSON *seq = cJSON_GetObjectItemCaseSensitive(root, "sequential");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(seq, "paired")));
    assert_int_equal((int)json_number(seq, "looks"), 2);
    assert_int_equal((int)json_number(seq, "first_runs"), 4);
    assert_int_equal((int)json_number(seq, "runs_added"), 4);
    const cJSON *conf = cJSON_GetObjectItemCaseSensitive(seq, "confirmation");
    assert_string_equal(json_string(conf, "state"), "off");
    cJSON_Delete(root);
    /* --max-runs takes a count of pairs; a bad one is a usage error of ab */
    const char *bad[] = {"ab", "--base", CANARY, "--max-runs", "0", NULL};
    assert_int_equal(tool(f, bad), 2);
    assert_non_null(strstr(proc.err, "canary-gate ab: --max-runs"));
}

/* Without --runs, ab measures the thresholds' runs as its first look: smoke's 2 (no more with
 * --max-runs 2). */
static void test_cmd_aa_ab__ab_default_pairs(void **state)
{
    struct cg_workdir *f = *state;
    const char *args[] = {"ab",       "--base",       CANARY " --steps 4 --step-ms '1'",
                          "--thresholds", "smoke",    "--steps",
                          "3",        "--warmup",     "1",
                          "--out",    "h6.json",      "--out-base",
                          "b6.json",  "--color",      "never",
                          "--max-runs",
                          "2",
                          "--",       CANARY,         "--steps",
                          "4",        "--step-ms",    "1",
                          NULL};
    int code = tool(f, args);
    assert_true(code == 0 || code == 1);
    assert_int_equal(artifact_runs(f, "b6.json", NULL), 2);
    assert_int_equal(artifact_runs(f, "h6.json", NULL), 2);
}

static void test_cmd_aa_ab__ab_input_errors(void **state)
{
    struct cg_workdir *f = *state;
    const char *no_base[] = {"ab", "--runs", "2", NULL};
    assert_int_equal(tool(f, no_base), 2);
    assert_non_null(strstr(proc.err, "--base"));
    const char *bad_base[] = {"ab", "--base", "'" CANARY " --steps 3", "--runs", "2", NULL};
    assert_int_equal(tool(f, bad_base), 2);
    assert_non_null(strstr(proc.err, "unterminated single quote"));
    const char *same[] = {"ab", "--base", CANARY, "--out", "x.json", "--out-base", "x.json", NULL};
    assert_int_equal(tool(f, same), 2);
    assert_false(cg_workdir_exists(f, "canary-ab-base.json"));
    /* a ceiling below the first look was accepted without a word, the main command's too */
    const char *low[] = {"ab",         "--base", CANARY, "--runs", "4",
                         "--max-runs", "2",      "--",   CANARY,   NULL};
    assert_int_equal(tool(f, low), 2);
    assert_non_null(strstr(proc.err, "--max-runs 2 is below --runs 4"));
    assert_false(cg_workdir_exists(f, "canary-ab-base.json"));
    const char *gate[] = {
        "--baseline", "nosuch.json", "--record-if-missing", "--runs", "3", "--max-runs", "2", "--",
        CANARY,       NULL};
    assert_int_equal(tool(f, gate), 2);
    assert_non_null(strstr(proc.err, "--max-runs 2 is below --runs 3"));
    assert_false(cg_workdir_exists(f, "nosuch.json"));
    /* the first look's runs from the thresholds: named so, not as a --runs never given */
    const char *strict[] = {"--baseline",
                            "nosuch.json",
                            "--record-if-missing",
                            "--thresholds",
                            "strict",
                            "--max-runs",
                            "20",
                            "--",
                            CANARY,
                            NULL};
    assert_int_equal(tool(f, strict), 2);
    assert_non_null(strstr(proc.err, "--max-runs 20 is below the thresholds' measurement.runs 30"));
}

/* A canary that fails under ab: the "error" report and JSON verdict are written with the reason,
 * as the main command writes them (before, neither file: the Action posted nothing). */
static void test_cmd_aa_ab__ab_reports_a_failed_canary(void **state)
{
    struct cg_workdir *f = *state;
    const char *args[] = {"ab",    "--base", CANARY " --steps 5 --step-ms 1", "--runs",
                          "2",     "--steps", "4",  "--warmup",   "1", "--json", "v.json",
                          "--report", "r.md",  "--", CANARY, "--steps", "5", "--step-ms", "1",
                          "--crash-at", "2", NULL};
    assert_int_equal(tool(f, args), 3);
    assert_true(cg_workdir_exists(f, "r.md"));
    assert_true(cg_workdir_exists(f, "v.json"));
    char *md = strdup(cg_workdir_read(f, "r.md"));
    char *js = strdup(cg_workdir_read(f, "v.json"));
    if (strstr(md, "canary-gate-verdict: error") == NULL || strstr(md, "the canary failed") == NULL)
        fail_msg("report:\n%s", md);
    cJSON *root = cJSON_Parse(js);
    assert_non_null(root);
    assert_string_equal(cJSON_GetObjectItem(root, "verdict")->valuestring, "error");
    assert_non_null(strstr(cJSON_GetObjectItem(root, "headline")->valuestring, "canary"));
    cJSON_Delete(root);
    free(md);
    free(js);
    assert_false(cg_workdir_exists(f, "canary-ab-head.json")); /* no artifact replaced */
}

/* Under ab the error report shows the end of the output of the side that failed: the head's in
 * the first pair (base, then head), the base's in the second (head, then base: A B B A). */
static void test_cmd_aa_ab__ab_shows_the_failed_sides_output(void **state)
{
    struct cg_workdir *f = *state;
    const char *head_fails[] = {"ab", "--base", "sh -c 'echo base-says-hello; exec \"$0\" --steps 5 "
                                "--step-ms 1' " CANARY, "--runs", "2", "--steps", "4", "--warmup",
                                "1", "--report", "r.md", "--", "sh", "-c",
                                "echo head-says-goodbye; exit 7", NULL};
    assert_int_equal(tool(f, head_fails), 3);
    const char *md = cg_workdir_read(f, "r.md");
    if (strstr(md, "head-says-goodbye") == NULL || strstr(md, "base-says-hello") != NULL ||
        strstr(md, "the whole output is in 'canary-ab-head.log'") == NULL)
        fail_msg("report:\n%s", md);
    /* the base fails in its second run, which comes after the head's */
    const char *base_fails[] = {"ab", "--base", "sh -c 'if [ -e once ]; then echo base-fails-now; "
                                "exit 9; fi; touch once; exec \"$0\" --steps 5 --step-ms 1' "
                                CANARY, "--runs", "2", "--steps", "4", "--warmup", "1",
                                "--report", "r.md", "--", "sh", "-c",
                                "echo head-runs; exec \"$0\" --steps 5 --step-ms 1", CANARY, NULL};
    assert_int_equal(tool(f, base_fails), 3);
    md = cg_workdir_read(f, "r.md");
    if (strstr(md, "base-fails-now") == NULL || strstr(md, "head-runs") != NULL ||
        strstr(md, "the whole output is in 'canary-ab-base.log'") == NULL)
        fail_msg("report:\n%s", md);
}

/* ---- the main command's looks and confirmation ------------------------------------------ */

static void record_baseline(const struct cg_workdir *f, const char *step_ms)
{
    const char *args[] = {"run", "--out",     "main.json", "--runs", "5",    "--steps",
                          "6",   "--warmup",  "1",         "--",     CANARY, "--steps",
                          "7",   "--step-ms", step_ms,     NULL};
    assert_int_equal(tool(f, args), 0);
}

static void test_cmd_aa_ab__gate_adds_runs_then_confirms_the_fail(void **state)
{
    struct cg_workdir *f = *state;
    record_baseline(f, "4");
    /* 2 runs are fewer than min_runs: inconclusive, 2 more are added; 4 runs against 5 fail
     * (p = 1/126 within the second look's level, 0.05 here since 5 v 2 cannot reject), and 5
     * fresh runs fail again. */
    const char *args[] = {"--baseline", "main.json", "--runs", "2", "--max-runs", "4",
                          "--confirm-runs", "5", "--out", "pr.json", "--json", "v.json",
                          "--report", "r.md", "--", CANARY, "--steps", "7", "--step-ms", "12",
                          NULL};
    assert_int_equal(tool(f, args), 1);
    assert_non_null(strstr(proc.err, "inconclusive after 2 runs; adding 2"));
    assert_non_null(strstr(proc.err, "confirmed by 5 fresh runs"));
    assert_non_null(strstr(proc.out, "note: 2 looks of 2 planned: 2 runs, then 2 added"));
    assert_int_equal(artifact_runs(f, "pr.json", NULL), 4);
    assert_int_equal(artifact_runs(f, "pr.confirm.json", NULL), 5);
    cJSON *root = load_json(f, "v.json");
    assert_string_equal(json_string(root, "verdict"), "fail");
    const cJSON *seq = cJSON_GetObjectItemCaseSensitive(root, "sequential");
    assert_int_equal((int)json_number(seq, "looks"), 2);
    assert_int_equal((int)json_number(seq, "runs_added"), 2);
    assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(seq, "paired")));
    assert_true(json_number(seq, "look_alpha") == 0.05);
    const cJSON *conf = cJSON_GetObjectItemCaseSensitive(seq, "confirmation");
    assert_string_equal(json_string(conf, "state"), "confirmed");
    assert_int_equal((int)json_number(conf, "runs"), 5);
    cJSON_Delete(root);
    FILE *fp = fopen(cg_workdir_in(f, "r.md"), "r");
    assert_non_null(fp);
    static char md[1 << 16];
    md[fread(md, 1, sizeof(md) - 1, fp)] = '\0';
    fclose(fp);
    assert_non_null(strstr(md, "**Runs added:** 2 looks of 2 planned"));
    assert_non_null(strstr(md, "**Confirmation:** FAIL confirmed by 5 fresh runs"));
}

/* Without --max-runs and --confirm-runs the main command adds one batch (up to 2 x --runs) and
 * confirms a FAIL with 2 x --runs fresh runs (CG_GATE_MAX_RUNS_FACTOR, CG_GATE_CONFIRM_FACTOR). */
static void test_cmd_aa_ab__gate_defaults_twice_the_runs(void **state)
{
    struct cg_workdir *f = *state;
    record_baseline(f, "4");
    const char *args[] = {"--baseline", "main.json", "--runs",    "2",  "--out",
                          "pr.json",    "--json",    "v.json",    "--", CANARY,
                          "--steps",    "7",         "--step-ms", "12", NULL};
    assert_int_equal(tool(f, args), 1);
    assert_int_equal(artifact_runs(f, "pr.json", NULL), 2 * 2);
    assert_int_equal(artifact_runs(f, "pr.confirm.json", NULL), 2 * 2);
    cJSON *root = load_json(f, "v.json");
    const cJSON *seq = cJSON_GetObjectItemCaseSensitive(root, "sequential");
    assert_int_equal((int)json_number(seq, "max_runs"), 4);
    assert_int_equal((int)json_number(seq, "planned_looks"), 2);
    const cJSON *conf = cJSON_GetObjectItemCaseSensitive(seq, "confirmation");
    assert_string_equal(json_string(conf, "state"), "confirmed");
    assert_int_equal((int)json_number(conf, "runs"), 4);
    cJSON_Delete(root);
}

static void test_cmd_aa_ab__gate_no_confirm_and_no_added_runs(void **state)
{
    struct cg_workdir *f = *state;
    record_baseline(f, "4");
    const char *args[] = {"--baseline", "main.json", "--runs",       "5",
                          "--max-runs", "5",         "--no-confirm", "--out",
                          "pr.json",    "--",        CANARY,         "--steps",
                          "7",          "--step-ms", "12",           NULL};
    assert_int_equal(tool(f, args), 1);
    assert_int_equal(artifact_runs(f, "pr.json", NULL), 5);
    assert_false(cg_workdir_exists(f, "pr.confirm.json"));
    assert_null(strstr(proc.err, "adding"));
}

static void test_cmd_aa_ab__gate_budget_stops_added_runs(void **state)
{
    struct cg_workdir *f = *state;
    record_baseline(f, "4");
    /* Two runs of 7 x 100 ms take more than the 1 s budget: no run is added. */
    const char *args[] = {"--baseline", "main.json", "--runs", "2",     "--max-runs",
                          "6",          "--budget",  "1",      "--out", "pr.json",
                          "--json",     "v.json",    "--",     CANARY,  "--steps",
                          "7",          "--step-ms", "100",    NULL};
    assert_int_equal(tool(f, args), 0);
    assert_non_null(strstr(proc.err, "the budget stopped further runs"));
    assert_int_equal(artifact_runs(f, "pr.json", NULL), 2);
    cJSON *root = load_json(f, "v.json");
    assert_string_equal(json_string(root, "verdict"), "inconclusive");
    cJSON_Delete(root);
    const char *bad[] = {"--baseline", "main.json", "--spending", "linear", NULL};
    assert_int_equal(tool(f, bad), 2);
    assert_non_null(strstr(proc.err, "--spending"));
}

/* The tests that run the tool do it in a fresh temporary directory each. */
#define IN_WORKDIR(fn) cmocka_unit_test_setup_teardown(fn, cg_workdir_setup, cg_workdir_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cmd_aa_ab__base_is_split_without_a_shell),
        IN_WORKDIR(test_cmd_aa_ab__aa_on_the_builtin_canary),
        IN_WORKDIR(test_cmd_aa_ab__aa_recommends_with_enough_runs),
        IN_WORKDIR(test_cmd_aa_ab__aa_usage_and_canary_errors),
        IN_WORKDIR(test_cmd_aa_ab__ab_on_the_builtin_canary),
        IN_WORKDIR(test_cmd_aa_ab__ab_fails_a_clear_regression_pair_by_pair),
        IN_WORKDIR(test_cmd_aa_ab__ab_adds_pairs_while_inconclusive),
        IN_WORKDIR(test_cmd_aa_ab__ab_default_pairs),
        IN_WORKDIR(test_cmd_aa_ab__ab_input_errors),
        IN_WORKDIR(test_cmd_aa_ab__ab_reports_a_failed_canary),
        IN_WORKDIR(test_cmd_aa_ab__ab_shows_the_failed_sides_output),
        IN_WORKDIR(test_cmd_aa_ab__gate_adds_runs_then_confirms_the_fail),
        IN_WORKDIR(test_cmd_aa_ab__gate_defaults_twice_the_runs),
        IN_WORKDIR(test_cmd_aa_ab__gate_no_confirm_and_no_added_runs),
        IN_WORKDIR(test_cmd_aa_ab__gate_budget_stops_added_runs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
