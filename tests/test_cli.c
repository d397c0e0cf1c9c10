/* test_cli: the built canary-gate binary: exit codes, messages, and files never half-written. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "artifact.h"
#include "fixtures.h"
#include "fsutil.h"

#include <cjson/cJSON.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char out_text[1 << 16], err_text[1 << 16];
static char dir[64];

static void slurp(const char *path, char *dst, size_t n)
{
    FILE *f = fopen(path, "r");
    size_t k = f ? fread(dst, 1, n - 1, f) : 0;
    dst[k] = '\0';
    if (f)
        fclose(f);
}

/* Runs the tool with the given arguments (NULL-terminated); returns its exit code. */
static int tool(const char *arg, ...)
{
    const char *argv[32] = {CG_TOOL_PATH};
    int n = 1;
    va_list ap;
    va_start(ap, arg);
    for (const char *a = arg; a != NULL && n < 31; a = va_arg(ap, const char *))
        argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    char o[128], e[128];
    snprintf(o, sizeof(o), "%s/stdout", dir);
    snprintf(e, sizeof(e), "%s/stderr", dir);
    pid_t pid = fork();
    if (pid == 0) {
        int fo = open(o, O_WRONLY | O_CREAT | O_TRUNC, 0644), fe = open(e, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fo, 1);
        dup2(fe, 2);
        execv(CG_TOOL_PATH, (char *const *)argv);
        _exit(127);
    }
    int st;
    waitpid(pid, &st, 0);
    slurp(o, out_text, sizeof(out_text));
    slurp(e, err_text, sizeof(err_text));
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

#define EX(name) CG_SOURCE_DIR "/examples/" name

static char *path_in(const char *name)
{
    static char buf[4][256];
    static int i;
    i = (i + 1) % 4;
    snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, name);
    return buf[i];
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/cg-cli-XXXXXX");
    return mkdtemp(dir) != NULL ? 0 : -1;
}

static void test_cli__version_and_help(void **state)
{
    (void)state;
    assert_int_equal(tool("--version", NULL), 0);
    assert_non_null(strstr(out_text, "canary-gate 0.1.0"));
    const char *verbs[] = {"compare", "merge", "show", "run", "comment"};
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(tool(verbs[i], "--help", NULL), 0);
        assert_non_null(strstr(out_text, "usage: canary-gate"));
    }
    const char *measuring[] = {"run", "aa", "ab", "gate"}; /* one option family */
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(tool(measuring[i], "--help", NULL), 0);
        assert_non_null(strstr(out_text, "--let-finish"));
        assert_non_null(strstr(out_text, "--kill-grace"));
    }
    assert_int_equal(tool("frobnicate", NULL), 2);
    assert_non_null(strstr(err_text, "'frobnicate' is not a command"));
}

static void test_cli__compare_exit_codes(void **state)
{
    (void)state;
    assert_int_equal(tool("compare", EX("baseline.json"), EX("baseline.json"), NULL), 0);
    assert_non_null(strstr(out_text, "PASS"));
    assert_int_equal(tool("compare", EX("baseline.json"), EX("current.json"), NULL), 1);
    assert_non_null(strstr(out_text, "FAIL"));
    assert_int_equal(tool("compare", EX("baseline.json"), "/nonexistent.json", NULL), 2);
    assert_non_null(strstr(err_text, "cannot read '/nonexistent.json'"));
    assert_int_equal(tool("compare", EX("baseline.json"), NULL), 2);
    assert_int_equal(tool("compare", "--bogus", EX("baseline.json"), EX("current.json"), NULL), 2);
    assert_int_equal(tool("compare", "--thresholds", "nosuch", EX("baseline.json"), EX("current.json"), NULL), 2);
    assert_non_null(strstr(err_text, "'nosuch'"));
}

static void test_cli__inconclusive_exits_4_when_asked(void **state)
{
    (void)state;
    /* one run a side under the default thresholds (min_runs 3): inconclusive */
    const char *one = path_in("one.json");
    assert_int_equal(tool("merge", "-o", one, EX("current.json"), NULL), 0);
    char *text = NULL;
    struct cg_err err;
    assert_int_equal(cg_file_read(one, 1 << 24, &text, NULL, &err), 0);
    free(text);
    write_text(path_in("thr.json"), "{\"metrics\": {\"step_time_mean\": {\"min_runs\": 6}, "
                                     "\"step_time_p95\": {\"min_runs\": 6}, "
                                     "\"step_time_floor\": {\"min_runs\": 6}, "
                                     "\"tokens_per_sec\": {\"min_runs\": 6}}}");
    assert_int_equal(tool("compare", "--thresholds", path_in("thr.json"), EX("baseline.json"), EX("current.json"), NULL), 0);
    assert_non_null(strstr(out_text, "INCONCLUSIVE"));
    assert_int_equal(tool("compare", "--fail-on-inconclusive", "--thresholds", path_in("thr.json"),
                          EX("baseline.json"), EX("current.json"), NULL), 4);
}

static void test_cli__reports_written_and_never_half_replaced(void **state)
{
    (void)state;
    const char *md = path_in("report.md"), *js = path_in("verdict.json");
    assert_int_equal(tool("compare", "--report", md, "--json", js, EX("baseline.json"), EX("current.json"), NULL), 1);
    char *a = NULL, *b = NULL;
    struct cg_err err;
    assert_int_equal(cg_file_read(md, 1 << 20, &a, NULL, &err), 0);
    assert_int_equal(strncmp(a, "<!-- canary-gate -->", 20), 0);
    assert_int_equal(cg_file_read(js, 1 << 20, &b, NULL, &err), 0);
    assert_non_null(strstr(b, "\"verdict\":\t\"fail\""));
    /* a bad input leaves the good report in place */
    write_text(path_in("broken.json"), "{\"schema\": \"canary-gate/run\", \"runs\": [");
    assert_int_equal(tool("compare", "--report", md, EX("baseline.json"), path_in("broken.json"), NULL), 2);
    assert_non_null(strstr(err_text, "broken.json"));
    char *c = NULL;
    assert_int_equal(cg_file_read(md, 1 << 20, &c, NULL, &err), 0);
    assert_string_equal(a, c);
    /* an unwritable report path: exit 3, the message names it */
    assert_int_equal(tool("compare", "--report", "/nonexistent-dir/r.md", EX("baseline.json"), EX("current.json"), NULL), 3);
    assert_non_null(strstr(err_text, "/nonexistent-dir/r.md"));
    /* a full disk: exit 3 */
    assert_int_equal(tool("compare", "--json", "/dev/full", EX("baseline.json"), EX("current.json"), NULL), 3);
    struct stat st;
    assert_int_equal(stat("/dev/full", &st), 0);
    assert_true(S_ISCHR(st.st_mode)); /* written in place, never replaced by a regular file */
    free(a);
    free(b);
    free(c);
}

static void test_cli__merge_pools_runs_and_refuses_other_machines(void **state)
{
    (void)state;
    const char *out = path_in("pooled.json");
    assert_int_equal(tool("merge", "-o", out, EX("baseline.json"), EX("baseline.json"), NULL), 0);
    assert_int_equal(tool("show", out, NULL), 0);
    assert_non_null(strstr(out_text, "10 in file"));
    char *text = NULL;
    struct cg_err err;
    assert_int_equal(cg_file_read(EX("baseline.json"), 1 << 24, &text, NULL, &err), 0);
    char *p = strstr(text, "Example CPU");
    assert_non_null(p);
    memcpy(p, "Another", 7);
    write_text(path_in("other.json"), text);
    free(text);
    assert_int_equal(tool("merge", "-o", path_in("x.json"), EX("baseline.json"), path_in("other.json"), NULL), 2);
    assert_non_null(strstr(err_text, "environment.cpu_model differs"));
    assert_int_equal(access(path_in("x.json"), F_OK), -1);
}

static void test_cli__show_summarises(void **state)
{
    (void)state;
    assert_int_equal(tool("show", EX("current.json"), NULL), 0);
    assert_non_null(strstr(out_text, "unavailable: CUPTI could not start"));
    assert_non_null(strstr(out_text, "attention"));
    assert_int_equal(tool("show", "--ops", "x", EX("current.json"), NULL), 2);
}

/* show names the libcupti used, a canary stopped once measured and the library's warnings
 * (each once), with no terminal escape from the artifact reaching the terminal. */
static void test_cli__show_says_how_the_runs_were_measured(void **state)
{
    (void)state;
    struct cg_artifact a;
    struct cg_err err;
    struct cg_fixture f = {3, 5, 1e7, 0.01, 0.02, 64, 1 << 30, 1 << 28, 1, 3};
    cg_artifact_init(&a);
    cg_err_init(&err);
    assert_int_equal(cg_fixture_make(&a, &f), 0);
    a.env.cupti_library = strdup("loaded /venv/nvidia/cu13/lib/libcupti.so.13");
    for (size_t i = 0; i < a.n_runs; i++) {
        a.runs[i].stopped_after_steps = i < 2 ? 8 : -1;
        assert_int_equal(cg_run_add_warning(&a.runs[i], "op table full: 3 more names not recorded",
                                            16), 0);
    }
    assert_int_equal(cg_run_add_warning(&a.runs[2], "odd \x1b[31mred", 16), 0);
    if (cg_artifact_save(path_in("measured.json"), &a, &err) != 0)
        fail_msg("%s", err.msg);
    cg_artifact_release(&a);
    assert_int_equal(tool("show", "--no-chart", path_in("measured.json"), NULL), 0);
    assert_non_null(strstr(out_text, "cupti:   loaded /venv/nvidia/cu13/lib/libcupti.so.13\n"));
    assert_non_null(strstr(out_text, "canary stopped after 8 steps (warm-up + measured) in 2 of 3 "
                                     "runs, once measured\n"));
    const char *w = strstr(out_text, "library warning: op table full: 3 more names not recorded");
    assert_non_null(w);
    assert_null(strstr(w + 1, "library warning: op table full")); /* once */
    assert_non_null(strstr(out_text, "library warning: odd ?[31mred\n"));
}

static int count_lines(const char *text)
{
    int n = 0;
    for (const char *p = text; *p; p++)
        n += *p == '\n';
    return n;
}

/* A trace window beyond the step indices the shards can hold is refused at the option, with the
 * limit the injection library and the shard reader share, before any canary runs. */
static void test_cli__trace_steps_beyond_the_shard_limit_exit_2(void **state)
{
    (void)state;
    assert_int_equal(tool("run", "--out", path_in("t.json"), "--trace", path_in("t.trace.json"),
                          "--trace-steps", "0:10000000", "--", "/bin/true", NULL),
                     2);
    assert_non_null(strstr(err_text, "'0:10000000'"));
    assert_non_null(strstr(err_text, "A <= B < 10000000"));
    assert_int_equal(count_lines(err_text), 1);
    assert_int_equal(tool("gate", "--baseline", path_in("none.json"), "--trace-steps",
                          "0:10000000", NULL),
                     2);
    assert_non_null(strstr(err_text, "A <= B < 10000000"));
    /* within the limit, but not after the warm-up */
    assert_int_equal(tool("run", "--out", path_in("t.json"), "--warmup", "5", "--trace",
                          path_in("t.trace.json"), "--trace-steps", "0:9999995", "--",
                          "/bin/true", NULL),
                     2);
    assert_non_null(strstr(err_text, "after 5 warm-up steps, step 9999995 is beyond the 10000000"));
    assert_false(access(path_in("t.log"), F_OK) == 0 && strstr(err_text, "run 1 of") != NULL);
}

/* An unknown option, or one without its value, is one line naming it, exit 2, for every verb. */
static void test_cli__unknown_option_is_one_line(void **state)
{
    (void)state;
    const char *verbs[] = {"gate", "run", "compare", "merge", "show", "comment", "aa", "ab"};
    for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
        assert_int_equal(tool(verbs[i], "--bogus", NULL), 2);
        if (count_lines(err_text) != 1 || strstr(err_text, "'--bogus'") == NULL)
            fail_msg("%s --bogus:\n%s", verbs[i], err_text);
        assert_non_null(strstr(err_text, "canary-gate "));
    }
    assert_int_equal(tool("--bogus", NULL), 2); /* the main command's options */
    assert_int_equal(count_lines(err_text), 1);
    assert_non_null(strstr(err_text, "'--bogus'"));
    assert_int_equal(tool("run", "--runs", NULL), 2); /* a value missing */
    assert_int_equal(count_lines(err_text), 1);
    assert_non_null(strstr(err_text, "'--runs' needs a value"));
    assert_int_equal(tool("show", "-x", NULL), 2); /* a short one */
    assert_int_equal(count_lines(err_text), 1);
    assert_non_null(strstr(err_text, "'-x'"));
}

/* `--json -` (or `--report -`) puts only that on stdout: the table goes to stderr. */
static void test_cli__json_to_stdout_is_not_mixed_with_the_table(void **state)
{
    (void)state;
    int code = tool("compare", EX("baseline.json"), EX("current.json"), "--json", "-", NULL);
    assert_true(code == 0 || code == 1);
    cJSON *root = cJSON_Parse(out_text);
    if (root == NULL)
        fail_msg("stdout is not one JSON document:\n%s", out_text);
    assert_non_null(cJSON_GetObjectItemCaseSensitive(root, "verdict"));
    cJSON_Delete(root);
    assert_non_null(strstr(err_text, "Step time mean"));
    code = tool("compare", EX("baseline.json"), EX("current.json"), "--report", "-", NULL);
    assert_true(code == 0 || code == 1);
    assert_int_equal(strncmp(out_text, "<!-- canary-gate -->\n", 21), 0);
    assert_null(strstr(out_text, "\033["));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cli__version_and_help),
        cmocka_unit_test(test_cli__compare_exit_codes),
        cmocka_unit_test(test_cli__inconclusive_exits_4_when_asked),
        cmocka_unit_test(test_cli__reports_written_and_never_half_replaced),
        cmocka_unit_test(test_cli__merge_pools_runs_and_refuses_other_machines),
        cmocka_unit_test(test_cli__show_summarises),
        cmocka_unit_test(test_cli__show_says_how_the_runs_were_measured),
        cmocka_unit_test(test_cli__trace_steps_beyond_the_shard_limit_exit_2),
        cmocka_unit_test(test_cli__unknown_option_is_one_line),
        cmocka_unit_test(test_cli__json_to_stdout_is_not_mixed_with_the_table),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
