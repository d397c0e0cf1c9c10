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

/* Seconds after which a run of the tool is ended by SIGALRM (exit 128 + 14): a tool that blocks
 * (on a FIFO, say) fails its test instead of hanging the suite. */
#define TOOL_ALARM_S 20

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
        alarm(TOOL_ALARM_S); /* kept across execv */
        execv(CG_TOOL_PATH, (char *const *)argv);
        _exit(127);
    }
    int st;
    waitpid(pid, &st, 0);
    slurp(o, out_text, sizeof(out_text));
    slurp(e, err_text, sizeof(err_text));
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
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
    assert_int_equal(tool("compare", EX("baseline.json"), EX("current.json"), NULL), 1);
    assert_non_null(strstr(out_text, "FAIL"));
    assert_int_equal(tool("compare", EX("baseline.json"), "/nonexistent.json", NULL), 2);
    assert_non_null(strstr(err_text, "cannot read '/nonexistent.json'"));
    assert_int_equal(tool("compare", EX("baseline.json"), NULL), 2);
    assert_int_equal(tool("compare", "--bogus", EX("baseline.json"), EX("current.json"), NULL), 2);
    assert_int_equal(tool("compare", "--thresholds", "nosuch", EX("baseline.json"), EX("current.json"), NULL), 2);
    assert_non_null(strstr(err_text, "'nosuch'"));
}

/* A side compared with itself (CURRENT the baseline, or a copy of it, or a current that holds a
 * baseline run) PASSed at +0.0%: a workflow that points CURRENT at the baseline passed for ever.
 * Refused, exit 2, naming both files and the run. */
static void test_cli__a_run_on_both_sides_is_refused(void **state)
{
    (void)state;
    assert_int_equal(tool("compare", EX("baseline.json"), EX("baseline.json"), NULL), 2);
    assert_non_null(strstr(err_text, "hold the same run"));
    char copy[256], both[256];
    snprintf(copy, sizeof(copy), "%s/same.json", dir);
    snprintf(both, sizeof(both), "%s/both.json", dir);
    char cmd[800];
    snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", EX("baseline.json"), copy);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(tool("compare", EX("baseline.json"), copy, NULL), 2);
    assert_non_null(strstr(err_text, "hold the same run"));
    const char *nl = strchr(err_text, '\n'); /* one line */
    assert_true(nl != NULL && nl[1] == '\0');
    /* a current that merged one baseline run among its own */
    assert_int_equal(tool("merge", "-o", both, EX("current.json"), copy, NULL), 0);
    assert_int_equal(tool("compare", EX("baseline.json"), both, NULL), 2);
    assert_non_null(strstr(err_text, "hold the same run"));
    unlink(copy);
    unlink(both);
}

/* A file name or value from the command line with terminal escapes in it (a title-setting OSC, a
 * colour) reached the terminal raw in error lines: shown as '?' now, whatever the command. */
static void test_cli__names_in_errors_reach_the_terminal_escaped(void **state)
{
    (void)state;
    char evil[256], bad[300];
    snprintf(evil, sizeof(evil), "%s/evil\x1b]0;TITLE\a\x1b[31mred.json", dir);
    snprintf(bad, sizeof(bad), "%s/bad\x1b[31m.json", dir);
    write_text(bad, "{");
    const char *const cases[][6] = {
        {"compare", EX("baseline.json"), bad, NULL},
        {"compare", EX("baseline.json"), evil, NULL},
        {"compare", "--only", "x\x1b[31m", EX("baseline.json"), EX("current.json"), NULL},
        {"--baseline", evil, "--", "true", NULL},
        {"compare", "--thresholds", bad, EX("baseline.json"), EX("current.json"), NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int rc = tool(cases[i][0], cases[i][1], cases[i][2], cases[i][3], cases[i][4], NULL);
        assert_int_equal(rc, 2);
        if (strchr(err_text, '\x1b') != NULL || strchr(err_text, '\a') != NULL)
            fail_msg("case %zu: an escape reached the terminal: %s", i, err_text);
        assert_non_null(strchr(err_text, '?'));
    }
    unlink(bad);
}

/* run --out - (the artifact on standard output) wrote the canary's log to a file named "-.log":
 * it goes to the default's, canary-run.log. */
static void test_cli__run_to_stdout_logs_beside_the_default(void **state)
{
    (void)state;
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "cd '%s' && '%s' run --out - --runs 1 --steps 3 --warmup 1 > art.json 2>/dev/null"
             " && test -s art.json && test -f canary-run.log && test ! -e ./-.log",
             dir, CG_TOOL_PATH);
    assert_int_equal(system(cmd), 0);
}

/* GITHUB_TOKEN is the gate's, for posting (the Action sets it on the gate's step): the canary
 * got it, and a script that prints its environment put it in the log the Action uploads. */
static void test_cli__the_canary_never_gets_the_github_token(void **state)
{
    (void)state;
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "cd '%s' && GITHUB_TOKEN=ghp_secret123456789 '%s' run --out tok.json --runs 1"
             " --steps 3 --warmup 1 -- /bin/sh -c 'echo \"T=[$GITHUB_TOKEN]\"; exec \"$0\" \"$@\"'"
             " '%s/tests/canaries/nvtx-canary' --steps 5 --step-ms 2 >/dev/null 2>&1"
             " && grep -q 'T=\\[\\]' tok.log && ! grep -q ghp_secret tok.log",
             dir, CG_TOOL_PATH, CG_BINARY_DIR);
    assert_int_equal(system(cmd), 0);
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

/* Two fixture artifacts of the same canary and machine, different runs, saved as a.json and
 * b.json in the test directory. */
static void add_ranks(struct cg_artifact *a, int nodes);

/* A fixture artifact of 5 runs (seed), its runs of 2 ranks on `nodes` nodes (0: one process, as
 * older artifacts say it, by saying nothing; -1: one process, as runs say it now: "ranks": []),
 * saved as name in the test directory. */
static void save_fixture(const char *name, uint64_t seed, int nodes)
{
    struct cg_fixture f = {5, 20, 1e7, 0.01, 0.02, 512, -1, 100000000, 2, seed};
    struct cg_artifact a;
    struct cg_err err;
    cg_artifact_init(&a);
    assert_int_equal(cg_fixture_make(&a, &f), 0);
    if (nodes > 0)
        add_ranks(&a, nodes);
    for (size_t r = 0; r < a.n_runs && nodes < 0; r++)
        a.runs[r].ranks_recorded = true;
    assert_int_equal(cg_artifact_save(path_in(name), &a, &err), 0);
    cg_artifact_release(&a);
}

static void two_artifacts(void)
{
    save_fixture("a.json", 1, 0);
    save_fixture("b.json", 2, 0);
}

static void test_cli__merge_pools_runs_and_refuses_other_machines(void **state)
{
    (void)state;
    char out[256];
    snprintf(out, sizeof(out), "%s", path_in("pooled.json"));
    two_artifacts();
    assert_int_equal(tool("merge", "-o", out, path_in("a.json"), path_in("b.json"), NULL), 0);
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

/* Gives every run of a 2 ranks: on one node ("n1") or on two ("n1", "n2"), each rank the run's
 * steps. */
static void add_ranks(struct cg_artifact *a, int nodes)
{
    for (size_t i = 0; i < a->n_runs; i++) {
        struct cg_run *run = &a->runs[i];
        run->n_ranks = 2;
        run->ranks = calloc(2, sizeof(*run->ranks));
        assert_non_null(run->ranks);
        for (int r = 0; r < 2; r++) {
            struct cg_rank *k = &run->ranks[r];
            k->rank = r;
            k->local_rank = nodes == 1 ? r : 0;
            k->node = strdup(nodes == 1 || r == 0 ? "n1" : "n2");
            k->busy_ns = k->compute_ns = k->comm_exposed_ns = k->peak_device_bytes = -1;
            k->n_steps = run->n_steps;
            k->step_ns = malloc(run->n_steps * sizeof(int64_t));
            assert_non_null(k->step_ns);
            for (size_t st = 0; st < run->n_steps; st++)
                k->step_ns[st] = run->steps[st].wall_ns;
        }
    }
}

/* Runs measured on worlds of different shapes (the job's nodes changed) are not one machine:
 * merge refuses to pool them, naming the shapes, as it refuses another CPU; a pool of them made
 * the baseline a mix of both (and ci/baseline-publish kept pooling across the change). */
static void test_cli__merge_refuses_other_node_shapes(void **state)
{
    (void)state;
    const char *names[3] = {"one-node.json", "two-nodes.json", "two-nodes-again.json"};
    for (int i = 0; i < 3; i++)
        save_fixture(names[i], (uint64_t)i + 1, i == 0 ? 1 : 2);
    assert_int_equal(
        tool("merge", "-o", path_in("x.json"), path_in(names[0]), path_in(names[1]), NULL), 2);
    assert_non_null(strstr(err_text, "the node shape"));
    assert_non_null(strstr(err_text, "1 node of 2 ranks"));
    assert_non_null(strstr(err_text, "2 nodes of 1 rank"));
    assert_int_equal(access(path_in("x.json"), F_OK), -1);
    /* runs of one process (a job script changed to srun under the same command): another shape;
     * older runs that do not say are not compared */
    save_fixture("one-process.json", 7, -1);
    save_fixture("older.json", 8, 0);
    assert_int_equal(tool("merge", "-o", path_in("x.json"), path_in("one-process.json"),
                          path_in(names[1]), NULL),
                     2);
    assert_non_null(strstr(err_text, "one process"));
    assert_int_equal(access(path_in("x.json"), F_OK), -1);
    assert_int_equal(
        tool("merge", "-o", path_in("x.json"), path_in("older.json"), path_in(names[1]), NULL), 0);
    unlink(path_in("x.json"));
    /* the same shape pools */
    assert_int_equal(
        tool("merge", "-o", path_in("x.json"), path_in(names[1]), path_in(names[2]), NULL), 0);
}

/* Pooling the same runs twice makes one run look like many: a 15-run baseline out of one run
 * FAILs unchanged code. The same file twice, a copy of it, or a merge that already holds a run:
 * refused, exit 2, naming the file and the run. Artifacts written before runs had an identity
 * are recognised by their steps. */
static void test_cli__merge_refuses_the_same_run_twice(void **state)
{
    (void)state;
    char out[256];
    snprintf(out, sizeof(out), "%s", path_in("b2.json"));
    two_artifacts();
    assert_int_equal(tool("merge", "-o", out, path_in("a.json"), path_in("a.json"), NULL), 2);
    assert_non_null(strstr(err_text, "cannot merge"));
    assert_non_null(strstr(err_text, "run 1 of '"));
    assert_non_null(strstr(err_text, "a.json'"));
    assert_int_equal(access(out, F_OK), -1);
    char *text = NULL;
    struct cg_err err;
    assert_int_equal(cg_file_read(path_in("a.json"), 1 << 24, &text, NULL, &err), 0);
    write_text(path_in("copy.json"), text);
    free(text);
    assert_int_equal(tool("merge", "-o", out, path_in("a.json"), path_in("b.json"), path_in("copy.json"), NULL), 2);
    assert_non_null(strstr(err_text, "copy.json"));
    assert_int_equal(tool("merge", "-o", path_in("ab.json"), path_in("a.json"), path_in("b.json"), NULL), 0);
    assert_int_equal(tool("merge", "-o", out, path_in("ab.json"), path_in("b.json"), NULL), 2);
    assert_int_equal(access(out, F_OK), -1);
    /* without identities (an artifact written before them) */
    assert_int_equal(tool("merge", "-o", out, EX("baseline.json"), EX("baseline.json"), NULL), 2);
    assert_non_null(strstr(err_text, "baseline.json"));
    assert_int_equal(access(out, F_OK), -1);
}

/* a.json's text with its first run copied `copies` times, each copy's seq set to 100 + k when
 * edit_seq (its digest left as it was); the caller frees the result. */
static char *with_copies(const char *path, int copies, bool edit_seq)
{
    char *text = NULL;
    struct cg_err err;
    assert_int_equal(cg_file_read(path, 1 << 24, &text, NULL, &err), 0);
    cJSON *root = cJSON_Parse(text);
    free(text);
    assert_non_null(root);
    cJSON *runs = cJSON_GetObjectItemCaseSensitive(root, "runs");
    for (int k = 0; k < copies; k++) {
        cJSON *copy = cJSON_Duplicate(cJSON_GetArrayItem(runs, 0), 1);
        if (edit_seq)
            cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(copy, "id"),
                                                   "seq", cJSON_CreateNumber(100 + k));
        cJSON_AddItemToArray(runs, copy);
    }
    char *out = cJSON_Print(root);
    cJSON_Delete(root);
    return out;
}

/* One run copied six times inside one artifact is not a 6-run baseline, and a copy whose seq was
 * edited is not another run: every command that loads the artifact refuses it, exit 2, with one
 * line naming the file and the runs, before anything is compared or written. */
static void test_cli__copied_runs_are_refused_by_every_command(void **state)
{
    (void)state;
    two_artifacts();
    char *one_x6 = with_copies(path_in("a.json"), 5, false);
    write_text(path_in("one_x6.json"), one_x6);
    free(one_x6);
    const char *const cmds[][4] = {
        {"compare", "X", "b.json", NULL},
        {"compare", "b.json", "X", NULL},
        {"show", "X", NULL, NULL},
        {"merge", "-o", "m.json", "X"},
    };
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        char args[4][256];
        const char *argv[5] = {NULL};
        for (int k = 0; k < 4 && cmds[i][k] != NULL; k++) {
            const char *w = cmds[i][k];
            snprintf(args[k], sizeof(args[k]), "%s",
                     strcmp(w, "X") == 0 ? path_in("one_x6.json")
                     : strstr(w, ".json") != NULL ? path_in(w)
                                                  : w);
            argv[k] = args[k];
        }
        assert_int_equal(tool(argv[0], argv[1], argv[2], argv[3], NULL), 2);
        if (strstr(err_text, "one_x6.json': runs[5] is a copy of runs[0]") == NULL)
            fail_msg("%s: %s", argv[0], err_text);
        const char *nl = strchr(err_text, '\n');
        assert_true(nl != NULL && nl[1] == '\0'); /* one line */
        assert_null(strstr(out_text, "FAIL"));
    }
    assert_int_equal(access(path_in("m.json"), F_OK), -1);

    /* a copy in another file with its seq edited: refused at load, naming it */
    char *edited = with_copies(path_in("a.json"), 1, true);
    cJSON *root = cJSON_Parse(edited);
    free(edited);
    cJSON *runs = cJSON_GetObjectItemCaseSensitive(root, "runs");
    while (cJSON_GetArraySize(runs) > 1)
        cJSON_DeleteItemFromArray(runs, 0);
    edited = cJSON_Print(root);
    cJSON_Delete(root);
    write_text(path_in("seq.json"), edited);
    free(edited);
    assert_int_equal(tool("merge", "-o", path_in("m.json"), path_in("a.json"), path_in("seq.json"),
                          NULL),
                     2);
    assert_non_null(strstr(err_text, "seq.json': runs[0] was edited"));
    assert_int_equal(access(path_in("m.json"), F_OK), -1);
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

/* A FIFO as the baseline, the current artifact, the thresholds or a merge input has no writer:
 * reading it would wait for ever. Each is refused at once, exit 2, naming the file. */
static void test_cli__fifo_inputs_are_refused_at_once(void **state)
{
    (void)state;
    const char *fifo = path_in("fifo.json");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(tool("compare", fifo, EX("current.json"), NULL), 2);
    assert_non_null(strstr(err_text, "fifo.json': not a regular file (a FIFO)"));
    assert_int_equal(tool("compare", EX("baseline.json"), fifo, NULL), 2);
    assert_non_null(strstr(err_text, "fifo.json': not a regular file"));
    assert_int_equal(tool("compare", "--thresholds", fifo, EX("baseline.json"), EX("current.json"), NULL), 2);
    assert_non_null(strstr(err_text, "fifo.json': not a regular file"));
    assert_int_equal(tool("merge", "-o", path_in("m.json"), fifo, NULL), 2);
    assert_non_null(strstr(err_text, "fifo.json': not a regular file"));
    assert_int_equal(tool("show", fifo, NULL), 2);
    assert_int_equal(tool("--baseline", fifo, "--runs", "1", "--steps", "1", "--out", path_in("run.json"), NULL), 2);
    assert_non_null(strstr(err_text, "fifo.json': not a regular file"));
    assert_int_equal(access(path_in("run.log"), F_OK), -1); /* nothing was run */
    unlink(fifo);
}

/* `cat base.json slow.json > x.json`: compared as base.json the slowdown would PASS. Two
 * documents in one file are refused, exit 2, naming the file. */
static void test_cli__concatenated_artifacts_are_refused(void **state)
{
    (void)state;
    char *a = NULL, *b = NULL;
    struct cg_err err;
    assert_int_equal(cg_file_read(EX("baseline.json"), 1 << 24, &a, NULL, &err), 0);
    assert_int_equal(cg_file_read(EX("current.json"), 1 << 24, &b, NULL, &err), 0);
    FILE *f = fopen(path_in("both.json"), "w");
    assert_non_null(f);
    fputs(a, f);
    fputs(b, f);
    fclose(f);
    assert_int_equal(tool("compare", path_in("both.json"), EX("current.json"), NULL), 2);
    assert_non_null(strstr(err_text, "both.json': trailing data after the JSON document"));
    assert_int_equal(tool("compare", EX("baseline.json"), path_in("both.json"), NULL), 2);
    assert_int_equal(tool("merge", "-o", path_in("m.json"), path_in("both.json"), NULL), 2);
    assert_int_equal(access(path_in("m.json"), F_OK), -1);
    /* a thresholds file is one document too */
    write_text(path_in("thr2.json"), "{\"extends\": \"default\"}\n{\"extends\": \"smoke\"}\n");
    assert_int_equal(tool("compare", "--thresholds", path_in("thr2.json"), EX("baseline.json"),
                          EX("baseline.json"), NULL), 2);
    assert_non_null(strstr(err_text, "thr2.json': trailing data after the JSON document"));
    free(a);
    free(b);
}

/* Saves a fixture artifact: runs runs, tokens per step (-1 none), device peak (-1 none). */
static int count_lines(const char *text)
{
    int n = 0;
    for (const char *p = text; *p; p++)
        n += *p == '\n';
    return n;
}

static void fixture_file(const char *name, size_t runs, int64_t tokens, int64_t device, uint64_t seed,
                         void (*edit)(struct cg_artifact *))
{
    struct cg_fixture f = {runs, 20, 1e7, 0.005, 0.01, tokens, device, 100000000, 2, seed};
    struct cg_artifact a;
    struct cg_err err;
    cg_artifact_init(&a);
    assert_int_equal(cg_fixture_make(&a, &f), 0);
    if (edit != NULL)
        edit(&a);
    assert_int_equal(cg_artifact_save(path_in(name), &a, &err), 0);
    cg_artifact_release(&a);
}

/* A baseline that cannot FAIL anything: warned about when it is loaded, named in the verdict's
 * headline, and --fail-on-inconclusive exits 4 with that reason instead of passing. */
static void test_cli__small_baseline_is_named_and_fails_inconclusive(void **state)
{
    (void)state;
    char base[256], cur[256];
    snprintf(base, sizeof(base), "%s", path_in("two.json"));
    snprintf(cur, sizeof(cur), "%s", path_in("fifteen.json"));
    fixture_file("two.json", 2, 64, -1, 1, NULL);
    fixture_file("fifteen.json", 15, 64, -1, 2, NULL);
    assert_int_equal(tool("compare", "--fail-on-inconclusive", base, cur, NULL), 4);
    assert_non_null(strstr(err_text, "warning: baseline '"));
    assert_non_null(strstr(err_text, "two.json' has 2 runs, fewer than the 3 a regression needs to FAIL"));
    assert_non_null(strstr(err_text, "--fail-on-inconclusive"));
    assert_non_null(strstr(out_text, "INCONCLUSIVE: the baseline has 2 runs"));
    assert_int_equal(tool("compare", base, cur, NULL), 0);
    assert_non_null(strstr(out_text, "INCONCLUSIVE: the baseline has 2 runs"));
}

static void slow_by_half(struct cg_artifact *a)
{
    for (size_t r = 0; r < a->n_runs; r++) {
        for (size_t s = 0; s < a->runs[r].n_steps; s++)
            a->runs[r].steps[s].wall_ns = a->runs[r].steps[s].wall_ns * 3 / 2;
        cg_run_summarize(&a->runs[r]);
    }
}

static void more_memory(struct cg_artifact *a)
{
    for (size_t r = 0; r < a->n_runs; r++)
        a->runs[r].summary.peak_device_bytes += 200000000;
}

/* --only counts,memory: one run a side gates counts and memory and shows timing without judging
 * it (a 50% slowdown is "shown, not gated"); memory growth still FAILs; a group that is none of
 * the four is one line and exit 2, before anything is read. */
static void test_cli__only_gates_the_groups_named(void **state)
{
    (void)state;
    char base[256], slow[256], hungry[256];
    snprintf(base, sizeof(base), "%s", path_in("only-base.json"));
    snprintf(slow, sizeof(slow), "%s", path_in("only-slow.json"));
    snprintf(hungry, sizeof(hungry), "%s", path_in("only-hungry.json"));
    fixture_file("only-base.json", 1, 64, 1000000000, 1, NULL);
    fixture_file("only-slow.json", 1, 64, 1000000000, 2, slow_by_half);
    fixture_file("only-hungry.json", 1, 64, 1000000000, 3, more_memory);
    assert_int_equal(tool("compare", base, slow, NULL), 0);
    assert_non_null(strstr(out_text, "the baseline has 1 run, fewer than the 3 a regression needs"));
    assert_int_equal(tool("compare", "--fail-on-inconclusive", base, slow, NULL), 4);
    assert_int_equal(tool("compare", "--fail-on-inconclusive", "--only", "counts,memory", base,
                          slow, NULL), 0);
    assert_non_null(strstr(out_text, "shown, not gated (--only counts,memory)"));
    assert_non_null(strstr(out_text, "PASS"));
    assert_int_equal(tool("compare", "--only", "memory", base, hungry, NULL), 1);
    /* a group with nothing gated on these runs (no anatomy without GPU time): INCONCLUSIVE, not
     * a PASS over a 50% slowdown */
    assert_int_equal(
        tool("compare", "--fail-on-inconclusive", "--only", "anatomy", base, slow, NULL), 4);
    assert_non_null(strstr(out_text, "INCONCLUSIVE: nothing in --only anatomy could be gated"));
    assert_int_equal(tool("compare", "--only", "counts,speed", base, slow, NULL), 2);
    assert_int_equal(count_lines(err_text), 1);
    assert_non_null(strstr(err_text, "--only 'counts,speed': 'speed' is not a group"));
}

static void drop_gpu(struct cg_artifact *a)
{
    a->gpu_available = false;
    a->cuda_initialised = 0;
    free(a->env.gpu_model);
    a->env.gpu_model = NULL;
    for (size_t r = 0; r < a->n_runs; r++)
        a->runs[r].summary.peak_device_bytes = -1;
}

/* A canary that stopped using the GPU on a machine that has one FAILs with that reason; one that
 * stopped counting tokens is INCONCLUSIVE with that reason. */
static void test_cli__lost_gpu_fails_and_vanished_tokens_are_named(void **state)
{
    (void)state;
    char base[256], nogpu[256], notok[256];
    snprintf(base, sizeof(base), "%s", path_in("gpu.json"));
    snprintf(nogpu, sizeof(nogpu), "%s", path_in("nogpu.json"));
    snprintf(notok, sizeof(notok), "%s", path_in("notok.json"));
    fixture_file("gpu.json", 15, 64, 1000000000, 1, NULL);
    fixture_file("nogpu.json", 15, 64, 1000000000, 2, drop_gpu);
    fixture_file("notok.json", 15, -1, 1000000000, 3, NULL);
    assert_int_equal(tool("compare", base, nogpu, NULL), 1);
    assert_non_null(strstr(out_text, "FAIL: the canary did not use the GPU"));
    assert_int_equal(tool("compare", "--fail-on-inconclusive", base, notok, NULL), 4);
    assert_non_null(strstr(out_text, "INCONCLUSIVE: tokens/sec vanished"));
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

/* An invalid CANARY_GATE_COMM_KERNELS is refused before any run, one line, exit 2, and no
 * artifact records it (without a GPU the library never saw it, and on one it would have taken
 * NCCL's kernels only: either way the artifact would have said a value no run used). */
static void test_cli__an_invalid_comm_kernels_value_exits_2_before_any_run(void **state)
{
    (void)state;
    static const struct {
        const char *value, *says;
    } bad[] = {
        {"a b,c", "'a b': a space or a character not printable ASCII"},
        {"nccl,,x", "'': an empty name part"},
        {"a,b,c,d,e,f,g,h,i", "'i': more than 8 name parts"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        setenv("CANARY_GATE_COMM_KERNELS", bad[i].value, 1);
        int code = tool("run", "--out", path_in("comm.json"), "--runs", "1", "--", "/bin/true",
                        NULL);
        unsetenv("CANARY_GATE_COMM_KERNELS");
        if (code != 2 || strstr(err_text, bad[i].says) == NULL ||
            strstr(err_text, "CANARY_GATE_COMM_KERNELS") == NULL || count_lines(err_text) != 1 ||
            strstr(err_text, "run 1 of") != NULL)
            fail_msg("%s: exit %d, said:\n%s", bad[i].value, code, err_text);
        assert_int_equal(access(path_in("comm.json"), F_OK), -1);
    }
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
    assert_non_null(strstr(err_text, "Step time"));
    code = tool("compare", EX("baseline.json"), EX("current.json"), "--report", "-", NULL);
    assert_true(code == 0 || code == 1);
    assert_int_equal(strncmp(out_text, "<!-- canary-gate -->\n", 21), 0);
    assert_null(strstr(out_text, "\033["));
}

static void other_cuda(struct cg_artifact *a)
{
    free(a->env.cuda_version);
    a->env.cuda_version = strdup("12.9");
}

/* history append: runs recorded with their values, an environment change and a restart as
 * events before the run, unreadable lines warned about and kept in place, and a bad input that
 * leaves the file as it was. */
static void test_cli__history_append_records_runs_and_events(void **state)
{
    (void)state;
    static char text[1 << 16], before[1 << 16], h[256];
    snprintf(h, sizeof(h), "%s", path_in("history.jsonl"));
    fixture_file("h1.json", 5, 4096, 1 << 30, 31, NULL);
    fixture_file("h2.json", 5, 4096, 1 << 30, 32, NULL);
    fixture_file("h3.json", 5, 4096, 1 << 30, 33, other_cuda);
    assert_int_equal(tool("history", "append", "--history", h, "--commit", "c1", "--date",
                          "2026-11-20T00:00:00Z", path_in("h1.json"), NULL),
                     0);
    assert_non_null(strstr(err_text, "recorded c1 (5 runs)"));
    /* a line no version can read, between the two */
    FILE *f = fopen(h, "a");
    assert_non_null(f);
    fputs("{\"schema\":1,\"type\":\"run\"\n", f);
    fclose(f);
    assert_int_equal(
        tool("history", "append", "--history", h, "--commit", "c2", path_in("h2.json"), NULL), 0);
    if (strstr(err_text, "history.jsonl:2: not read, kept as it is: not a JSON object") == NULL)
        fail_msg("no warning naming line 2:\n%s", err_text);
    assert_int_equal(tool("history", "append", "--history", h, "--commit", "c3", "--restart",
                          "the canary changed", path_in("h3.json"), NULL),
                     0);
    assert_non_null(strstr(err_text, "events: environment, restart"));
    slurp(h, text, sizeof(text));
    /* c1, the bad line, c2, then the two events and c3 */
    const char *c1 = strstr(text, "\"commit\":\"c1\"");
    const char *c2 = strstr(text, "\"commit\":\"c2\"");
    const char *env = strstr(text, "\"event\":\"environment\"");
    const char *restart = strstr(text, "\"reason\":\"the canary changed\"");
    const char *c3 = strstr(text, "\"type\":\"run\",\"commit\":\"c3\"");
    if (!c1 || !c2 || !env || !restart || !c3 ||
        !(c1 < c2 && c2 < env && env < restart && restart < c3))
        fail_msg("entries missing or out of order:\n%s", text);
    assert_non_null(strstr(env, "CUDA 12.9"));
    const char *kept = strstr(text, "{\"schema\":1,\"type\":\"run\"\n");
    if (kept == NULL || !(c1 < kept && kept < c2))
        fail_msg("the unreadable line not kept between c1 and c2:\n%s", text);
    assert_non_null(strstr(c1, "\"step_time_mean\":{\"median\":"));
    /* bad inputs: one line each, the file untouched */
    memcpy(before, text, sizeof(before));
    assert_int_equal(
        tool("history", "append", "--history", h, "--commit", "c4", path_in("missing.json"), NULL),
        2);
    assert_non_null(strstr(err_text, "missing.json"));
    assert_int_equal(tool("history", "append", "--history", h, path_in("h2.json"), NULL), 2);
    assert_non_null(strstr(err_text, "missing --commit SHA"));
    assert_int_equal(tool("history", "append", "--history", h, "--commit", "c4", "--keep", "0",
                          path_in("h2.json"), NULL),
                     2);
    assert_int_equal(
        tool("history", "append", "--history", dir, "--commit", "c4", path_in("h2.json"), NULL), 2);
    slurp(h, text, sizeof(text));
    assert_string_equal(text, before);
    /* --keep: the oldest fold into a summary first */
    assert_int_equal(tool("history", "append", "--history", h, "--commit", "c4", "--keep", "2",
                          path_in("h3.json"), NULL),
                     0);
    slurp(h, text, sizeof(text));
    const char *summary = "{\"schema\":1,\"type\":\"summary\",\"commit\":\"c2\"";
    if (strncmp(text, summary, strlen(summary)) != 0 ||
        strstr(text, "\"first_commit\":\"c1\"") == NULL)
        fail_msg("no summary of c1 and c2 first:\n%s", text);
}

/* A history of 40 runs of gate "g": the step time up 8% from c020 on (accepted there when
 * accept is set), then an environment change and 10 runs at half the time. */
static void write_history(const char *path, bool accept)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (int i = 0; i < 50; i++) {
        double v = 10e6 * (1 + 0.004 * (double)((i * 7) % 5 - 2)) * (i >= 20 ? 1.08 : 1.0);
        if (i >= 40)
            v *= 0.5;
        if (i == 20 && accept)
            fputs("{\"schema\":1,\"type\":\"event\",\"event\":\"accept\",\"commit\":\"c020\","
                  "\"date\":\"d\",\"gate_id\":\"g\",\"reason\":\"the new "
                  "attention\",\"who\":\"o\"}\n",
                  f);
        if (i == 40)
            fputs("{\"schema\":1,\"type\":\"event\",\"event\":\"environment\",\"commit\":"
                  "\"c040\",\"date\":\"d\",\"gate_id\":\"g\",\"reason\":\"H200\"}\n",
                  f);
        fprintf(f,
                "{\"schema\":1,\"type\":\"run\",\"commit\":\"c%03d\",\"date\":\"d\",\"gate_id\":"
                "\"g\",\"metrics\":{\"step_time_mean\":{\"median\":%.1f,\"low\":%.1f,\"high\":"
                "%.1f,\"runs\":5}}}\n",
                i, v, v * 0.99, v * 1.01);
    }
    fclose(f);
}

/* history check: the step found between the right commits, with its interval and p, marked
 * accepted; the environment segment apart; markdown and JSON written; --fail-on-change exits 1
 * only for an unaccepted change for the worse in the newest segment. */
static void test_cli__history_check_finds_the_step_between_its_commits(void **state)
{
    (void)state;
    static char h[256], md[256], js[256], text[1 << 16];
    snprintf(h, sizeof(h), "%s", path_in("hist-check.jsonl"));
    snprintf(md, sizeof(md), "%s", path_in("hist.md"));
    snprintf(js, sizeof(js), "%s", path_in("hist.json"));
    write_history(h, true);
    assert_int_equal(tool("history", "check", "--history", h, "--gate-id", "g", "--markdown", md,
                          "--json", js, NULL),
                     0);
    if (strstr(out_text, "50 runs in 2 segments, 1 change point") == NULL ||
        strstr(out_text, "step_time_mean        +8.") == NULL ||
        strstr(out_text, "between c019 and c020 (segment 1), worse, accepted") == NULL)
        fail_msg("unexpected findings:\n%s", out_text);
    slurp(md, text, sizeof(text));
    assert_non_null(strstr(text, "| Step time mean | +8."));
    assert_non_null(strstr(text, "<code>c019</code> → <code>c020</code>"));
    slurp(js, text, sizeof(text));
    assert_non_null(strstr(text, "\"first_commit_after\":\"c020\""));
    assert_non_null(strstr(text, "\"accepted\":\"the new attention\""));
    /* the change is in segment 1, not the newest: --fail-on-change passes */
    assert_int_equal(
        tool("history", "check", "--history", h, "--gate-id", "g", "--fail-on-change", NULL), 0);
    /* another gate's series: none there, named (test_cli__a_gate_without_runs_...) */
    assert_int_equal(tool("history", "check", "--history", h, NULL), 2);
    /* bad options */
    assert_int_equal(tool("history", "check", "--history", h, "--alpha", "1", NULL), 2);
    assert_non_null(strstr(err_text, "--alpha '1'"));
    assert_int_equal(tool("history", "check", NULL), 2);
    assert_int_equal(tool("history", "check", "--history", dir, NULL), 2);
}

/* history check --markdown "$GITHUB_STEP_SUMMARY", as its help suggests: the job summary is
 * appended to, as 'comment' does, the gate's report already there kept (before, the file was
 * replaced and the report lost), by whatever path it is named; any other file is replaced. */
static void test_cli__history_check_appends_to_the_job_summary(void **state)
{
    (void)state;
    static char h[256], summary[256], other[256], text[1 << 16];
    snprintf(h, sizeof(h), "%s", path_in("hist-summary.jsonl"));
    snprintf(summary, sizeof(summary), "%s", path_in("step_summary"));
    snprintf(other, sizeof(other), "%s", path_in("hist-other.md"));
    write_history(h, true);
    const char *report = "## canary-gate: PASS\n\nthe gate's report\n";
    write_text(summary, report);
    assert_int_equal(setenv("GITHUB_STEP_SUMMARY", summary, 1), 0);
    int rc =
        tool("history", "check", "--history", h, "--gate-id", "g", "--markdown", summary, NULL);
    int rc_dot = tool("history", "check", "--history", h, "--gate-id", "g", "--markdown",
                      path_in("./step_summary"), NULL);
    write_text(other, "old\n");
    int rc_other =
        tool("history", "check", "--history", h, "--gate-id", "g", "--markdown", other, NULL);
    unsetenv("GITHUB_STEP_SUMMARY");
    assert_int_equal(rc, 0);
    assert_int_equal(rc_dot, 0);
    assert_int_equal(rc_other, 0);
    slurp(summary, text, sizeof(text));
    if (strncmp(text, report, strlen(report)) != 0 ||
        strncmp(text + strlen(report), "\n## ", 4) != 0) /* a blank line before it */
        fail_msg("the gate's report is gone from the job summary:\n%.2000s", text);
    const char *first = strstr(text, "| Step time mean | +8.");
    if (first == NULL || strstr(first + 1, "| Step time mean | +8.") == NULL)
        fail_msg("not both checks appended:\n%.4000s", text);
    slurp(other, text, sizeof(text));
    if (strncmp(text, "old\n", 4) == 0 || strstr(text, "| Step time mean | +8.") == NULL)
        fail_msg("another file is replaced:\n%.2000s", text);
}

/* history check on 10 runs whose floor steps cleanly from 27.4 to 37.7 ms (5 and 5): what was
 * tested and why nothing was called (before: "no change point" alone, and the site's "every
 * metric held its level" under a chart that plainly jumps), the candidate drawn on the chart. */
static void test_cli__history_check_says_why_nothing_was_called(void **state)
{
    (void)state;
    static char h[256], md[256], site[256], text[1 << 18];
    snprintf(h, sizeof(h), "%s", path_in("hist-few.jsonl"));
    snprintf(md, sizeof(md), "%s", path_in("hist-few.md"));
    snprintf(site, sizeof(site), "%s", path_in("hist-few-site"));
    FILE *f = fopen(h, "w");
    assert_non_null(f);
    for (int i = 0; i < 10; i++) {
        double v = (i < 5 ? 27.4e6 : 37.7e6) * (1 + 0.001 * (double)(i % 3 - 1));
        fprintf(f,
                "{\"schema\":1,\"type\":\"run\",\"commit\":\"c%03d\",\"date\":\"d\","
                "\"metrics\":{\"step_time_floor\":{\"median\":%.1f,\"low\":%.1f,\"high\":"
                "%.1f,\"runs\":5}}}\n",
                i, v, v * 0.99, v * 1.01);
    }
    fclose(f);
    assert_int_equal(tool("history", "check", "--history", h, "--markdown", md, NULL), 0);
    const char *why = "10 runs tested: the smallest p a clean split of them can expect is 0.0097; "
                      "the strongest candidate, Step time floor +37.";
    if (strstr(out_text, "0 change points") == NULL ||
        strstr(out_text, "nothing called in segment 1: ") == NULL || strstr(out_text, why) == NULL ||
        strstr(out_text, "between runs 5 and 6, has p = ") == NULL ||
        strstr(out_text, " > alpha 0.01") == NULL)
        fail_msg("unexpected findings:\n%s", out_text);
    slurp(md, text, sizeof(text));
    if (strstr(text, "no change point.") == NULL || strstr(text, why) == NULL)
        fail_msg("markdown:\n%s", text);
    assert_int_equal(tool("history", "site", "--history", h, "--out", site, NULL), 0);
    slurp(path_in("hist-few-site/index.html"), text, sizeof(text));
    if (strstr(text, "held its level") != NULL || strstr(text, why) == NULL ||
        strstr(text, "class=\"cg-candidate-line\"") == NULL || strstr(text, "not called") == NULL)
        fail_msg("site:\n%s", text);
}

/* An unaccepted step for the worse in the newest segment fails with --fail-on-change. */
static void test_cli__history_check_fails_on_an_unaccepted_change(void **state)
{
    (void)state;
    static char h[256];
    snprintf(h, sizeof(h), "%s", path_in("hist-fail.jsonl"));
    write_history(h, false);
    /* drop the environment change: one segment, its step unaccepted */
    static char text[1 << 16];
    slurp(h, text, sizeof(text));
    char *env = strstr(text, "{\"schema\":1,\"type\":\"event\"");
    assert_non_null(env);
    char *eol = strchr(env, '\n');
    memmove(env, eol + 1, strlen(eol + 1) + 1);
    write_text(h, text);
    assert_int_equal(tool("history", "check", "--history", h, "--gate-id", "g", NULL), 0);
    assert_int_equal(
        tool("history", "check", "--history", h, "--gate-id", "g", "--fail-on-change", NULL), 1);
    assert_non_null(strstr(out_text, "between c019 and c020 (segment 1), worse\n"));
}

/* A gate id of which the history holds no run, in a history of other gates' runs (a typo, a
 * case, a missing --gate-id): 'history check' and 'accept' name it and the gates there, exit 2,
 * the file as it was. Before, check said "0 runs in 0 segments" and --fail-on-change passed over
 * an unaccepted step, and the accept was recorded where no run would ever meet it. A history
 * with no run yet is no error. */
static void test_cli__a_gate_without_runs_is_named_with_the_gates_there(void **state)
{
    (void)state;
    static char h[256], msg[512], before[1 << 16], after[1 << 16];
    snprintf(h, sizeof(h), "%s", path_in("hist-gates.jsonl"));
    write_history(h, false);
    slurp(h, before, sizeof(before));
    snprintf(msg, sizeof(msg), "canary-gate: no run of gate 'G' in '%s' (its gates: g)\n", h);
    assert_int_equal(
        tool("history", "check", "--history", h, "--gate-id", "G", "--fail-on-change", NULL), 2);
    assert_string_equal(err_text, msg);
    assert_string_equal(out_text, "");
    assert_int_equal(tool("history", "check", "--history", h, "--fail-on-change", NULL), 2);
    snprintf(msg, sizeof(msg), "canary-gate: no run without a gate id in '%s' (its gates: g)\n", h);
    assert_string_equal(err_text, msg);
    assert_int_equal(tool("accept", "--history", h, "--reason", "worth it", "--commit", "c030",
                          "--gate-id", "G", NULL),
                     2);
    snprintf(msg, sizeof(msg), "canary-gate: no run of gate 'G' in '%s' (its gates: g)\n", h);
    assert_string_equal(err_text, msg);
    slurp(h, after, sizeof(after));
    assert_string_equal(after, before);
    /* the gate's own series is checked */
    assert_int_equal(
        tool("history", "check", "--history", h, "--gate-id", "g", "--fail-on-change", NULL), 0);
    /* no history yet, or one with no run: nothing to check, nothing wrong */
    write_text(h, "");
    assert_int_equal(tool("history", "check", "--history", h, "--gate-id", "G", NULL), 0);
    assert_non_null(strstr(out_text, "0 runs in 0 segments"));
    assert_int_equal(
        tool("accept", "--history", h, "--reason", "r", "--commit", "c1", "--gate-id", "G", NULL),
        0);
    assert_int_equal(tool("history", "check", "--history", path_in("none.jsonl"), NULL), 0);
}

/* accept: an accept event with who, why and the commit, read back by history check; bad
 * values exit 2 and leave the file byte-identical. */
static void test_cli__accept_records_who_why_and_which_commit(void **state)
{
    (void)state;
    static char h[256], text[1 << 16], before[1 << 16];
    snprintf(h, sizeof(h), "%s", path_in("hist-accept.jsonl"));
    write_history(h, false);
    assert_int_equal(tool("accept", "--history", h, "--reason", "the new attention is worth 8%",
                          "--commit", "c020", "--who", "octocat", "--gate-id", "g", "--date",
                          "2026-11-24T12:00:00Z", NULL),
                     0);
    slurp(h, text, sizeof(text));
    const char *line = "{\"schema\":1,\"type\":\"event\",\"event\":\"accept\",\"commit\":\"c020\","
                       "\"date\":\"2026-11-24T12:00:00Z\",\"gate_id\":\"g\",\"reason\":\"the new "
                       "attention is worth 8%\",\"who\":\"octocat\"}\n";
    size_t len = strlen(text), n = strlen(line);
    if (len < n || strcmp(text + len - n, line) != 0)
        fail_msg("the accept is not the last line:\n%s", text);
    /* recorded after the accepted commit's run: it still covers the change at c020 */
    text[len - n] = '\0';
    char *env = strstr(text, "{\"schema\":1,\"type\":\"event\",\"event\":\"environment\"");
    assert_non_null(env);
    char *eol = strchr(env, '\n');
    memmove(env, eol + 1, strlen(eol + 1) + 1);
    snprintf(text + strlen(text), sizeof(text) - strlen(text), "%s", line);
    write_text(h, text);
    assert_int_equal(
        tool("history", "check", "--history", h, "--gate-id", "g", "--fail-on-change", NULL), 0);
    assert_non_null(strstr(out_text, "between c019 and c020 (segment 1), worse, accepted"));
    /* bad values: one line naming the option, exit 2, nothing written */
    slurp(h, before, sizeof(before));
    const char *bad[][2] = {{"--reason", ""}, {"--reason", "two\nlines"}, {"--reason", "\xff\xfe"},
                            {"--who", "a\tb"}, {"--commit", ""}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *reason = strcmp(bad[i][0], "--reason") == 0 ? bad[i][1] : "why";
        const char *opt = strcmp(bad[i][0], "--reason") == 0 ? "--date" : bad[i][0];
        const char *val = strcmp(bad[i][0], "--reason") == 0 ? "2026-11-24" : bad[i][1];
        assert_int_equal(tool("accept", "--history", h, "--commit", "c1", "--reason", reason, opt,
                              val, NULL),
                         2);
        if (strstr(err_text, bad[i][0]) == NULL)
            fail_msg("case %zu does not name %s: %s", i, bad[i][0], err_text);
        slurp(h, text, sizeof(text));
        assert_string_equal(text, before);
    }
    assert_int_equal(tool("accept", "--history", h, "--commit", "c1", NULL), 2);
    assert_non_null(strstr(err_text, "missing --reason"));
    assert_int_equal(tool("accept", "--history", dir, "--commit", "c1", "--reason", "x", NULL), 2);
    assert_non_null(strstr(err_text, dir));
}

/* A gate id is checked alike by every command that takes one (1 to 64 letters, digits, '.', '_',
 * '-', as the comment's marker holds it): exit 2 naming the value, nothing written. Before,
 * compare, ab and bisect took any --id and rewrote it in the marker, so 'A100 80GB' and
 * 'A100_80GB' both became <!-- canary-gate:A100_80GB --> (two gates editing one comment),
 * 'Größe' became 'Gr____e' and '' the default gate, while comment and the main command refused
 * them. */
static void test_cli__a_gate_id_is_checked_alike_by_every_command(void **state)
{
    (void)state;
    static char md[256], text[1 << 16];
    snprintf(md, sizeof(md), "%s", path_in("id.md"));
    const char *bad[] = {"A100 80GB",
                         "Gr\xc3\xb6\xc3\x9f"
                         "e",
                         "", "a<b>"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char want[128];
        snprintf(want, sizeof(want), "--id: gate id '%s': ", bad[i]);
        unlink(md);
#define ID_REFUSED(verb, ...)                                                                      \
    do {                                                                                           \
        int rc_ = tool(__VA_ARGS__, NULL);                                                         \
        if (rc_ != 2 || strstr(err_text, want) == NULL || access(md, F_OK) == 0)                   \
            fail_msg("%s took gate id '%s': exit %d: %s", verb, bad[i], rc_, err_text);            \
    } while (0)
        ID_REFUSED("compare", "compare", EX("baseline.json"), EX("current.json"), "--id", bad[i],
                   "--report", md);
        ID_REFUSED("ab", "ab", "--id", bad[i], "--report", md, "--", "/bin/false");
        ID_REFUSED("bisect", "bisect", "--good", "a", "--bad", "b", "--id", bad[i], "--report", md,
                   "--", "/bin/false");
        ID_REFUSED("the main command", "--baseline", EX("baseline.json"), "--id", bad[i],
                   "--report", md);
        /* the history's gate ids are the reports' (the accept a report mentions is its gate's) */
        snprintf(want, sizeof(want), "--gate-id: gate id '%s': ", bad[i]);
        ID_REFUSED("history append", "history", "append", "--history", md, "--commit", "c1",
                   "--gate-id", bad[i], EX("baseline.json"));
        ID_REFUSED("accept", "accept", "--history", md, "--commit", "c1", "--reason", "r",
                   "--gate-id", bad[i]);
#undef ID_REFUSED
    }
    /* one that is allowed is written as it is */
    assert_int_equal(tool("compare", EX("baseline.json"), EX("current.json"), "--id", "A100_80GB",
                          "--report", md, NULL),
                     1);
    slurp(md, text, sizeof(text));
    assert_int_equal(strncmp(text, "<!-- canary-gate:A100_80GB -->\n", 31), 0);
}

/* compare --history: the reports mention an accept recorded lately, escaped, and stop once 10
 * runs of other commits were recorded after it. */
static void test_cli__reports_mention_a_recent_accept(void **state)
{
    (void)state;
    static char h[256], md[256], js[256], text[1 << 16];
    snprintf(h, sizeof(h), "%s", path_in("hist-note.jsonl"));
    snprintf(md, sizeof(md), "%s", path_in("note.md"));
    snprintf(js, sizeof(js), "%s", path_in("note.json"));
    write_text(h, "");
    assert_int_equal(tool("accept", "--history", h, "--commit",
                          "0123456789abcdef0123456789abcdef01234567", "--who", "octocat",
                          "--date", "2026-11-20T08:00:00Z", "--reason",
                          "@team fused <b>attention</b> | worth +3%", NULL),
                     0);
    assert_int_equal(tool("compare", EX("baseline.json"), EX("current.json"), "--history", h,
                          "--report", md, "--json", js, "--color", "never", NULL),
                     1);
    assert_non_null(strstr(out_text, "note: baseline accepted at 0123456789ab by octocat: @team "
                                     "fused <b>attention</b> | worth +3% (0 runs of main since)"));
    slurp(md, text, sizeof(text));
    const char *note = strstr(text, "> **Baseline accepted** at 0123456789ab by octocat "
                                    "(2026-11-20): ");
    if (note == NULL)
        fail_msg("no accept note:\n%.2000s", text);
    /* escaped: no mention, no HTML, no cell break */
    char line[512];
    snprintf(line, sizeof(line), "%.*s", (int)strcspn(note, "\n"), note);
    if (strstr(line, "<b>") != NULL || strstr(line, "@team") != NULL || strstr(line, " | ") != NULL)
        fail_msg("the reason is not escaped: %s", line);
    slurp(js, text, sizeof(text));
    cJSON *j = cJSON_Parse(text);
    assert_non_null(j);
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, "baseline_accepted");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(a, "reason")->valuestring,
                        "@team fused <b>attention</b> | worth +3%");
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(a, "runs_since")->valueint, 0);
    cJSON_Delete(j);
    /* ten runs of main after it: no longer mentioned */
    for (int i = 0; i < 10; i++) {
        char commit[16];
        snprintf(commit, sizeof(commit), "c%02d", i);
        assert_int_equal(tool("history", "append", "--history", h, "--commit", commit,
                              EX("baseline.json"), NULL),
                         0);
        assert_int_equal(tool("compare", EX("baseline.json"), EX("current.json"), "--history",
                              h, "--json", js, NULL),
                         1);
        slurp(js, text, sizeof(text));
        bool mentioned = strstr(text, "\"baseline_accepted\":\tnull") == NULL;
        if (mentioned != (i < 9))
            fail_msg("after %d runs the accept is %smentioned", i + 1, mentioned ? "" : "not ");
    }
    /* a history that cannot be read is an input error before anything is compared */
    assert_int_equal(tool("compare", EX("baseline.json"), EX("current.json"), "--history", dir,
                          NULL),
                     2);
    assert_non_null(strstr(err_text, dir));
}

/* history append, accept and site never take an input or output for the history, nor rewrite
 * a file of which no line is a history: exit 2 naming it, the file as it was. */
static void test_cli__history_is_never_an_input_output_or_another_file(void **state)
{
    (void)state;
    static char before[1 << 16], after[1 << 16];
    static char same[256];
    fixture_file("same.json", 3, 4096, 1 << 30, 41, NULL);
    snprintf(same, sizeof(same), "%s", path_in("same.json"));
    slurp(same, before, sizeof(before));
    assert_int_equal(tool("history", "append", "--history", same, "--commit", "x", same, NULL), 2);
    assert_non_null(strstr(err_text, "are the same file"));
    fixture_file("other.json", 3, 4096, 1 << 30, 42, NULL);
    assert_int_equal(tool("history", "append", "--history", same, "--commit", "x",
                          path_in("other.json"), NULL),
                     2);
    assert_non_null(strstr(err_text, "is not a history: none of its"));
    assert_int_equal(tool("accept", "--history", same, "--commit", "x", "--reason", "r", NULL), 2);
    assert_non_null(strstr(err_text, "is not a history"));
    slurp(same, after, sizeof(after));
    assert_string_equal(after, before);
    /* the site's page named as the history */
    char site[256];
    snprintf(site, sizeof(site), "%s", path_in("site"));
    assert_int_equal(mkdir(site, 0755), 0);
    write_text(path_in("site/index.html"), "<html>page</html>\n");
    assert_int_equal(tool("history", "site", "--history", path_in("site/index.html"), "--out",
                          site, NULL),
                     2);
    assert_non_null(strstr(err_text, "are the same file"));
    slurp(path_in("site/index.html"), after, sizeof(after));
    assert_string_equal(after, "<html>page</html>\n");
    assert_int_equal(tool("history", "check", "--history", path_in("site/index.html"), NULL), 2);
    assert_non_null(strstr(err_text, "is not a history"));
}

/* Only a missing history is empty: one that cannot be read (here below a file, or a symlink
 * loop; any permission problem alike) or is a FIFO exits 2 naming it, at once, in every
 * command that reads --history. */
static void test_cli__a_history_that_cannot_be_read_exits_2(void **state)
{
    (void)state;
    write_text(path_in("plain"), "x\n");
    static char fifo[256];
    snprintf(fifo, sizeof(fifo), "%s", path_in("hfifo"));
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(symlink("hloop", path_in("hloop")), 0);
    fixture_file("r1.json", 3, 4096, 1 << 30, 43, NULL);
    static char bad[3][256];
    snprintf(bad[0], sizeof(bad[0]), "%s", path_in("plain/h.jsonl"));
    snprintf(bad[1], sizeof(bad[1]), "%s", path_in("hloop"));
    snprintf(bad[2], sizeof(bad[2]), "%s", fifo);
    for (size_t i = 0; i < 3; i++) {
        const char *h = bad[i];
        int codes[6] = {
            tool("history", "check", "--history", h, NULL),
            tool("history", "site", "--history", h, "--out", path_in("s2"), NULL),
            tool("history", "append", "--history", h, "--commit", "c", path_in("r1.json"), NULL),
            tool("accept", "--history", h, "--commit", "c", "--reason", "r", NULL),
            tool("compare", EX("baseline.json"), EX("current.json"), "--history", h, NULL),
            tool("--baseline", EX("baseline.json"), "--history", h, "--runs", "1", "--steps", "1",
                 "--out", path_in("run.json"), NULL)};
        for (int k = 0; k < 6; k++)
            if (codes[k] != 2)
                fail_msg("'%s', command %d: exit %d", h, k, codes[k]);
        assert_non_null(strstr(err_text, h));
    }
    assert_int_equal(access(path_in("run.json"), F_OK), -1); /* nothing was run */
    unlink(fifo);
}

/* history append and accept write only what their reader takes: one line, exit 2, the file as it
 * was, for a control character, invalid UTF-8, an empty value or a date that is no ISO 8601
 * time. */
static void test_cli__history_append_validates_what_it_writes(void **state)
{
    (void)state;
    static char before[1 << 16], after[1 << 16];
    static char h[256];
    snprintf(h, sizeof(h), "%s", path_in("valid.jsonl"));
    fixture_file("v1.json", 3, 4096, 1 << 30, 44, NULL);
    assert_int_equal(tool("history", "append", "--history", h, "--commit", "c0",
                          path_in("v1.json"), NULL),
                     0);
    slurp(h, before, sizeof(before));
    const struct {
        const char *opt, *value, *says;
    } bad[] = {
        {"--commit", "a\x01b", "--commit: holds a control character"},
        {"--commit", "", "--commit: is empty"},
        {"--commit", "c\xff", "--commit: is not valid UTF-8"},
        {"--gate-id", "g\nh", "--gate-id: gate id 'g?h': use only letters, digits"},
        {"--gate-id", "\xc3", "--gate-id: gate id '?': use only letters, digits"},
        {"--restart", "", "--restart: is empty"},
        {"--restart", "why\tnot", "--restart: holds a control character"},
        {"--date", "", "--date: is empty"},
        {"--date", "yesterday", "--date 'yesterday': is not an ISO 8601 date"},
        {"--date", "2026-02-30T00:00:00Z", "is not an ISO 8601"},
        {"--date", "2026\xff", "--date: is not valid UTF-8"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int code = strcmp(bad[i].opt, "--commit") == 0
                       ? tool("history", "append", "--history", h, "--commit", bad[i].value,
                              path_in("v1.json"), NULL)
                       : tool("history", "append", "--history", h, "--commit", "c1", bad[i].opt,
                              bad[i].value, path_in("v1.json"), NULL);
        if (code != 2 || strstr(err_text, bad[i].says) == NULL || strchr(err_text, '\n') !=
                                                                     err_text + strlen(err_text) - 1)
            fail_msg("%s (case %zu): exit %d, said:\n%s", bad[i].opt, i, code, err_text);
    }
    assert_int_equal(tool("accept", "--history", h, "--commit", "c1", "--reason", "r", "--date",
                          "last week", NULL),
                     2);
    assert_non_null(strstr(err_text, "--date 'last week': is not an ISO 8601"));
    slurp(h, after, sizeof(after));
    assert_string_equal(after, before);
}

/* A commit URL made from the environment that is no URL is named as that, not as --commit-url,
 * which was not given. */
static void test_cli__history_site_names_where_its_url_came_from(void **state)
{
    (void)state;
    static char h[256];
    snprintf(h, sizeof(h), "%s", path_in("envurl.jsonl"));
    fixture_file("e1.json", 3, 4096, 1 << 30, 46, NULL);
    assert_int_equal(tool("history", "append", "--history", h, "--commit", "c0",
                          path_in("e1.json"), NULL),
                     0);
    setenv("GITHUB_SERVER_URL", "javascript:x", 1);
    setenv("GITHUB_REPOSITORY", "o/r", 1);
    int code = tool("history", "site", "--history", h, "--out", path_in("envsite"), NULL);
    unsetenv("GITHUB_SERVER_URL");
    unsetenv("GITHUB_REPOSITORY");
    assert_int_equal(code, 2);
    if (strstr(err_text, "the commit URL made from GITHUB_SERVER_URL and GITHUB_REPOSITORY "
                         "'javascript:x/o/r/commit/'") == NULL ||
        strstr(err_text, "give --commit-url") == NULL || strstr(err_text, "--commit-url '") != NULL)
        fail_msg("said:\n%s", err_text);
    assert_int_equal(tool("history", "site", "--history", h, "--out", path_in("envsite"),
                          "--commit-url", "ftp://x/", NULL),
                     2);
    assert_non_null(strstr(err_text, "--commit-url 'ftp://x/': expected http://"));
}

/* 20 appends at once to one history: every run recorded (a lock around read-modify-write). */
static void test_cli__concurrent_appends_keep_every_run(void **state)
{
    (void)state;
    static char text[1 << 20];
    static char h[256], run[256];
    snprintf(h, sizeof(h), "%s", path_in("together.jsonl"));
    fixture_file("t1.json", 3, 4096, 1 << 30, 45, NULL);
    snprintf(run, sizeof(run), "%s", path_in("t1.json"));
    pid_t pids[20];
    for (int i = 0; i < 20; i++) {
        char commit[16];
        snprintf(commit, sizeof(commit), "k%02d", i);
        if ((pids[i] = fork()) == 0) {
            int null = open("/dev/null", O_WRONLY);
            dup2(null, 1);
            dup2(null, 2);
            alarm(TOOL_ALARM_S);
            execl(CG_TOOL_PATH, CG_TOOL_PATH, "history", "append", "--history", h, "--commit",
                  commit, run, (char *)NULL);
            _exit(127);
        }
        assert_true(pids[i] > 0);
    }
    for (int i = 0; i < 20; i++) {
        int st;
        assert_int_equal(waitpid(pids[i], &st, 0), pids[i]);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    slurp(h, text, sizeof(text));
    for (int i = 0; i < 20; i++) {
        char commit[32];
        snprintf(commit, sizeof(commit), "\"commit\":\"k%02d\"", i);
        if (strstr(text, commit) == NULL)
            fail_msg("run k%02d lost:\n%s", i, text);
    }
}

/* A history of many runs: check and site read the newest --keep runs and say how many older
 * ones were left out. */
static void test_cli__check_and_site_read_the_newest_runs(void **state)
{
    (void)state;
    static char h[256];
    snprintf(h, sizeof(h), "%s", path_in("long.jsonl"));
    FILE *f = fopen(h, "w");
    assert_non_null(f);
    for (int i = 0; i < 3000; i++)
        fprintf(f,
                "{\"schema\":1,\"type\":\"run\",\"commit\":\"c%04d\",\"date\":\"d\","
                "\"metrics\":{\"step_time_mean\":{\"median\":%d,\"low\":1,\"high\":200,"
                "\"runs\":5}}}\n",
                i, 100 + i % 7);
    fclose(f);
    assert_int_equal(tool("history", "check", "--history", h, "--keep", "50", NULL), 0);
    assert_non_null(strstr(out_text, "50 runs"));
    assert_non_null(strstr(err_text, "2950 older runs were left out"));
    assert_int_equal(tool("history", "site", "--history", h, "--keep", "50", "--out",
                          path_in("longsite"), NULL),
                     0);
    assert_non_null(strstr(err_text, "2950 older runs were left out"));
    assert_int_equal(tool("history", "check", "--history", h, "--keep", "0", NULL), 2);
}

/* Gates that share a history, each bounded by 'history append --keep': check reads the newest
 * --keep runs of the gate it checks and site the newest --keep runs of each gate, so a gate
 * idle while another recorded more than --keep runs is found and drawn. Before, both read the
 * newest --keep runs of all gates together: check refused h100 ("no run of gate 'h100' ...
 * among the newest runs read (its gates: a100)") and the site drew a100 alone. */
static void test_cli__check_and_site_read_the_newest_runs_of_each_gate(void **state)
{
    (void)state;
    static char h[256], site[256], index[300], page[1 << 20], want[64];
    snprintf(h, sizeof(h), "%s", path_in("gates.jsonl"));
    snprintf(site, sizeof(site), "%s", path_in("gates-site"));
    snprintf(index, sizeof(index), "%s/index.html", site);
    fixture_file("gates.json", 5, 4096, 1 << 30, 41, NULL);
    for (int i = 1; i <= 22; i++) {
        char commit[8];
        snprintf(commit, sizeof(commit), "%s%d", i <= 6 ? "h" : "a", i <= 6 ? i : i - 6);
        assert_int_equal(tool("history", "append", "--history", h, "--commit", commit, "--gate-id",
                              i <= 6 ? "h100" : "a100", "--keep", "5", path_in("gates.json"), NULL),
                         0);
    }
    /* h100: its summary (h1) and h2 to h6; a100: its summary (a1 to a11) and a12 to a16 */
    assert_int_equal(tool("history", "check", "--history", h, "--gate-id", "h100", "--keep", "5",
                          "--fail-on-change", NULL),
                     0);
    assert_non_null(strstr(out_text, "5 runs in 1 segment"));
    assert_null(strstr(err_text, "left out"));
    assert_int_equal(tool("history", "check", "--history", h, "--gate-id", "h100", NULL), 0);
    assert_non_null(strstr(out_text, "5 runs in 1 segment"));
    assert_int_equal(
        tool("history", "check", "--history", h, "--gate-id", "a100", "--keep", "3", NULL), 0);
    assert_non_null(strstr(out_text, "3 runs in 1 segment"));
    assert_non_null(strstr(err_text, "the newest 3 runs of gate 'a100' are read; 13 older runs "
                                     "were left out"));
    /* a gate the file holds no run of is still named, with the gates it holds */
    assert_int_equal(tool("history", "check", "--history", h, "--gate-id", "H100", NULL), 2);
    snprintf(page, sizeof(page),
             "canary-gate: no run of gate 'H100' in '%s' (its gates: h100, "
             "a100)\n",
             h);
    assert_string_equal(err_text, page);
    /* the site: the newest runs of each gate */
    assert_int_equal(tool("history", "site", "--history", h, "--keep", "3", "--out", site, NULL),
                     0);
    assert_non_null(strstr(err_text, "the newest 3 runs of each gate are read; 16 older runs "
                                     "were left out"));
    slurp(index, page, sizeof(page));
    assert_non_null(strstr(page, "data-gate=\"h100\""));
    assert_non_null(strstr(page, "data-gate=\"a100\""));
    const char *drawn[] = {"h4", "h5", "h6", "a14", "a15", "a16"};
    const char *not_drawn[] = {"h3", "a13"};
    for (size_t i = 0; i < 6; i++) {
        snprintf(want, sizeof(want), "data-commit=\"%s\"", drawn[i]);
        if (strstr(page, want) == NULL)
            fail_msg("%s not drawn", drawn[i]);
    }
    for (size_t i = 0; i < 2; i++) {
        snprintf(want, sizeof(want), "data-commit=\"%s\"", not_drawn[i]);
        if (strstr(page, want) != NULL)
            fail_msg("%s drawn", not_drawn[i]);
    }
    /* past the most gates drawn, the others are named */
    FILE *f = fopen(h, "w");
    assert_non_null(f);
    for (int i = 0; i < 66; i++)
        fprintf(f,
                "{\"schema\":1,\"type\":\"run\",\"commit\":\"c%d\",\"date\":\"d\","
                "\"gate_id\":\"g%d\",\"metrics\":{\"step_time_mean\":{\"median\":10,\"low\":9,"
                "\"high\":11,\"runs\":5}}}\n",
                i, i);
    fclose(f);
    assert_int_equal(tool("history", "site", "--history", h, "--out", site, NULL), 0);
    assert_non_null(
        strstr(err_text, "holds more than 64 gates: the runs of 'g64', 'g65' were left out\n"));
    slurp(index, page, sizeof(page));
    assert_non_null(strstr(page, "data-gate=\"g63\""));
    assert_null(strstr(page, "data-gate=\"g64\""));
    assert_int_equal(tool("history", "check", "--history", h, "--gate-id", "g65", NULL), 0);
    assert_non_null(strstr(out_text, "1 run in 1 segment"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cli__version_and_help),
        cmocka_unit_test(test_cli__compare_exit_codes),
        cmocka_unit_test(test_cli__a_run_on_both_sides_is_refused),
        cmocka_unit_test(test_cli__names_in_errors_reach_the_terminal_escaped),
        cmocka_unit_test(test_cli__run_to_stdout_logs_beside_the_default),
        cmocka_unit_test(test_cli__the_canary_never_gets_the_github_token),
        cmocka_unit_test(test_cli__only_gates_the_groups_named),
        cmocka_unit_test(test_cli__inconclusive_exits_4_when_asked),
        cmocka_unit_test(test_cli__reports_written_and_never_half_replaced),
        cmocka_unit_test(test_cli__merge_pools_runs_and_refuses_other_machines),
        cmocka_unit_test(test_cli__merge_refuses_the_same_run_twice),
        cmocka_unit_test(test_cli__merge_refuses_other_node_shapes),
        cmocka_unit_test(test_cli__copied_runs_are_refused_by_every_command),
        cmocka_unit_test(test_cli__show_summarises),
        cmocka_unit_test(test_cli__show_says_how_the_runs_were_measured),
        cmocka_unit_test(test_cli__fifo_inputs_are_refused_at_once),
        cmocka_unit_test(test_cli__concatenated_artifacts_are_refused),
        cmocka_unit_test(test_cli__small_baseline_is_named_and_fails_inconclusive),
        cmocka_unit_test(test_cli__lost_gpu_fails_and_vanished_tokens_are_named),
        cmocka_unit_test(test_cli__trace_steps_beyond_the_shard_limit_exit_2),
        cmocka_unit_test(test_cli__an_invalid_comm_kernels_value_exits_2_before_any_run),
        cmocka_unit_test(test_cli__unknown_option_is_one_line),
        cmocka_unit_test(test_cli__json_to_stdout_is_not_mixed_with_the_table),
        cmocka_unit_test(test_cli__history_append_records_runs_and_events),
        cmocka_unit_test(test_cli__history_check_finds_the_step_between_its_commits),
        cmocka_unit_test(test_cli__history_check_says_why_nothing_was_called),
        cmocka_unit_test(test_cli__history_check_fails_on_an_unaccepted_change),
        cmocka_unit_test(test_cli__history_check_appends_to_the_job_summary),
        cmocka_unit_test(test_cli__accept_records_who_why_and_which_commit),
        cmocka_unit_test(test_cli__a_gate_without_runs_is_named_with_the_gates_there),
        cmocka_unit_test(test_cli__reports_mention_a_recent_accept),
        cmocka_unit_test(test_cli__history_is_never_an_input_output_or_another_file),
        cmocka_unit_test(test_cli__a_history_that_cannot_be_read_exits_2),
        cmocka_unit_test(test_cli__history_append_validates_what_it_writes),
        cmocka_unit_test(test_cli__history_site_names_where_its_url_came_from),
        cmocka_unit_test(test_cli__concurrent_appends_keep_every_run),
        cmocka_unit_test(test_cli__check_and_site_read_the_newest_runs),
        cmocka_unit_test(test_cli__check_and_site_read_the_newest_runs_of_each_gate),
        cmocka_unit_test(test_cli__a_gate_id_is_checked_alike_by_every_command),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
