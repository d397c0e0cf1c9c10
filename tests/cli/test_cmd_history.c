/*
 * test_cmd_history: what 'canary-gate history append|check|site' and 'canary-gate accept' say,
 * pinned word for word: each command's --help, its usage errors (a missing option, a value out
 * of range, an unknown option, an unexpected argument) and the line it prints when it records.
 * Each test runs its command's cases in a private directory and compares the transcript (the
 * command line, the exit code, stdout and stderr of each case) with a golden file in
 * tests/golden/; CG_UPDATE_GOLDEN=1 rewrites the golden files instead of comparing. The
 * environment the commands read (GITHUB_SHA, GITHUB_ACTOR, USER, GITHUB_SERVER_URL,
 * GITHUB_REPOSITORY) is set by the test, so the transcripts do not depend on where they run.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "buf.h"
#include "err.h"
#include "fsutil.h"
#include "workdir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EX(name) CG_SOURCE_DIR "/examples/" name

/* One run of the tool: extra environment entries (NULL-terminated) and its arguments. */
struct tool_case {
    const char *env[3];
    const char *args[16];
};

static struct cg_proc proc;

/* Appends s to b, single-quoted when it is empty or holds a space (the transcript's command
 * lines); an example artifact's path is written as its name under examples/. */
static void put_arg(struct cg_buf *b, const char *s)
{
    const char *ex = CG_SOURCE_DIR "/examples/";
    if (strncmp(s, ex, strlen(ex)) == 0)
        assert_int_equal(cg_buf_printf(b, " examples/%s", s + strlen(ex)), 0);
    else if (s[0] == '\0' || strpbrk(s, " \n\t") != NULL)
        assert_int_equal(cg_buf_printf(b, " '%s'", s), 0);
    else
        assert_int_equal(cg_buf_printf(b, " %s", s), 0);
}

/* Runs the cases in order in w and compares their transcript with tests/golden/<golden>. */
static void check_transcript(const struct cg_workdir *w, const char *golden,
                             const struct tool_case *cases, size_t n)
{
    struct cg_buf t;
    cg_buf_init(&t, 1 << 20);
    for (size_t i = 0; i < n; i++) {
        const char *env[8] = {"GITHUB_SHA=", "GITHUB_ACTOR=", "USER=tester",
                              "GITHUB_SERVER_URL=", "GITHUB_REPOSITORY="};
        assert_int_equal(cg_buf_adds(&t, "$"), 0);
        for (size_t k = 0; k < 2 && cases[i].env[k] != NULL; k++) {
            env[5 + k] = cases[i].env[k];
            put_arg(&t, cases[i].env[k]);
        }
        cg_workdir_run(w, CG_TOOL_PATH, env, cases[i].args, &proc);
        put_arg(&t, "canary-gate");
        for (size_t k = 0; cases[i].args[k] != NULL; k++)
            put_arg(&t, cases[i].args[k]);
        assert_int_equal(cg_buf_printf(&t, "\nexit %d\n--- stdout\n%s--- stderr\n%s\n",
                                       proc.exit_code, proc.out, proc.err),
                         0);
    }
    char path[1024];
    struct cg_err err;
    cg_err_init(&err);
    snprintf(path, sizeof(path), "%s/tests/golden/%s", CG_SOURCE_DIR, golden);
    if (getenv("CG_UPDATE_GOLDEN") != NULL) {
        assert_int_equal(cg_file_write_atomic(path, cg_buf_str(&t), t.len, &err), 0);
    } else {
        char *want = NULL;
        if (cg_file_read(path, 1 << 20, &want, NULL, &err) != 0)
            fail_msg("%s (run with CG_UPDATE_GOLDEN=1 to create it)", err.msg);
        if (strcmp(want, cg_buf_str(&t)) != 0)
            fail_msg("%s differs from what the commands said:\n%s", path, cg_buf_str(&t));
        free(want);
    }
    cg_buf_release(&t);
}

#define CHECK(w, golden, cases) check_transcript(w, golden, cases, sizeof(cases) / sizeof(cases[0]))

/* 'history' alone, its help, an unknown subcommand; 'history append': help, what it needs, each
 * value it refuses, and the lines of two runs recorded, the second with a restart. */
static void test_cmd_history__append_help_and_messages_match_golden(void **state)
{
    static const struct tool_case cases[] = {
        {{NULL}, {"history", NULL}},
        {{NULL}, {"history", "--help", NULL}},
        {{NULL}, {"history", "prune", NULL}},
        {{NULL}, {"history", "append", "--help", NULL}},
        {{NULL}, {"history", "append", "--commit", "c1", "r.json", NULL}},
        {{NULL}, {"history", "append", "--history", "h.jsonl", "r.json", NULL}},
        {{NULL}, {"history", "append", "--history", "h.jsonl", "--commit", "c1", NULL}},
        {{NULL}, {"history", "append", "--history", "h.jsonl", "--commit", "c1", "a", "b", NULL}},
        {{NULL},
         {"history", "append", "--history", "h.jsonl", "--commit", "c1", "--keep", "0", "r.json",
          NULL}},
        {{NULL},
         {"history", "append", "--history", "h.jsonl", "--commit", "c1", "--keep", "1000001",
          "r.json", NULL}},
        {{NULL},
         {"history", "append", "--history", "h.jsonl", "--commit", "c1", "--keep", "12x", "r.json",
          NULL}},
        {{NULL},
         {"history", "append", "--history", "h.jsonl", "--commit", "c1", "--date", "yesterday",
          "r.json", NULL}},
        {{NULL},
         {"history", "append", "--history", "h.jsonl", "--commit", "c 1\n", "r.json", NULL}},
        {{NULL},
         {"history", "append", "--history", "h.jsonl", "--commit", "c1", "--bogus", "r.json",
          NULL}},
        {{NULL}, {"history", "append", "--history", NULL}},
        {{NULL},
         {"history", "append", "--history", "h.jsonl", "--commit", "c1", "missing.json", NULL}},
        {{NULL},
         {"history", "append", "--history", "h.jsonl", "--commit", "c1", "--date",
          "2026-11-20T14:03:00Z", "--keep", "5", EX("baseline.json"), NULL}},
        {{NULL},
         {"history", "append", "--history", "h.jsonl", "--commit", "c2", "--date",
          "2026-11-21T14:03:00Z", "--restart", "new driver", EX("current.json"), NULL}},
    };
    CHECK(*state, "history_append.txt", cases);
}

/* 'history check': help, what it needs, and each change-point option's range. */
static void test_cmd_history__check_help_and_messages_match_golden(void **state)
{
    static const struct tool_case cases[] = {
        {{NULL}, {"history", "check", "--help", NULL}},
        {{NULL}, {"history", "check", NULL}},
        {{NULL}, {"history", "check", "--history", "h.jsonl", "extra", NULL}},
        {{NULL}, {"history", "check", "--history", "h.jsonl", "--alpha", "1", NULL}},
        {{NULL}, {"history", "check", "--history", "h.jsonl", "--alpha", "0.0x", NULL}},
        {{NULL}, {"history", "check", "--history", "h.jsonl", "--min-segment", "1", NULL}},
        {{NULL}, {"history", "check", "--history", "h.jsonl", "--min-segment", "1001", NULL}},
        {{NULL}, {"history", "check", "--history", "h.jsonl", "--permutations", "18", NULL}},
        {{NULL}, {"history", "check", "--history", "h.jsonl", "--permutations", "1e3", NULL}},
        {{NULL}, {"history", "check", "--history", "h.jsonl", "--keep", "-1", NULL}},
        {{NULL}, {"history", "check", "--history", "h.jsonl", "--fail-on-change=1", NULL}},
        {{NULL}, {"history", "check", "--history", "h.jsonl", "--markdown", NULL}},
        {{NULL}, {"history", "check", "--history", "h.jsonl", "--markdown", "h.jsonl", NULL}},
    };
    CHECK(*state, "history_check.txt", cases);
}

/* 'history site': help, what it needs, its title and commit URL, the change-point options. */
static void test_cmd_history__site_help_and_messages_match_golden(void **state)
{
    static const struct tool_case cases[] = {
        {{NULL}, {"history", "site", "--help", NULL}},
        {{NULL}, {"history", "site", "--out", "site", NULL}},
        {{NULL}, {"history", "site", "--history", "h.jsonl", NULL}},
        {{NULL}, {"history", "site", "--history", "h.jsonl", "--out", "site", "x", NULL}},
        {{NULL}, {"history", "site", "--history", "h.jsonl", "--out", "site", "--title", "", NULL}},
        {{NULL},
         {"history", "site", "--history", "h.jsonl", "--out", "site", "--commit-url",
          "ftp://example.com/", NULL}},
        {{"GITHUB_SERVER_URL=https://git hub", "GITHUB_REPOSITORY=o/r"},
         {"history", "site", "--history", "h.jsonl", "--out", "site", NULL}},
        {{NULL},
         {"history", "site", "--history", "h.jsonl", "--out", "site", "--alpha", "0", NULL}},
        {{NULL},
         {"history", "site", "--history", "h.jsonl", "--out", "site", "--min-segment", "x", NULL}},
        {{NULL},
         {"history", "site", "--history", "h.jsonl", "--out", "site", "--permutations", "100001",
          NULL}},
        {{NULL}, {"history", "site", "--history", "h.jsonl", "--out", "site", "--keep", "0", NULL}},
        {{NULL}, {"history", "site", "--history", "h.jsonl", "--out", "site", "--json", "j", NULL}},
    };
    CHECK(*state, "history_site.txt", cases);
}

/* 'accept': help, what it needs (the commit from GITHUB_SHA), each value it refuses and the line
 * of an accept recorded, by --who and by $USER. */
static void test_cmd_history__accept_help_and_messages_match_golden(void **state)
{
    static const struct tool_case cases[] = {
        {{NULL}, {"accept", "--help", NULL}},
        {{NULL}, {"accept", "--reason", "r", NULL}},
        {{NULL}, {"accept", "--history", "h.jsonl", NULL}},
        {{NULL}, {"accept", "--history", "h.jsonl", "--reason", "r", NULL}},
        {{NULL}, {"accept", "--history", "h.jsonl", "--reason", "r", "--commit", "c1", "x", NULL}},
        {{NULL}, {"accept", "--history", "h.jsonl", "--reason", "", "--commit", "c1", NULL}},
        {{NULL},
         {"accept", "--history", "h.jsonl", "--reason", "r", "--commit", "c1", "--date",
          "2026-11-20", NULL}},
        {{"GITHUB_ACTOR=a\tb"},
         {"accept", "--history", "h.jsonl", "--reason", "r", "--commit", "c1", NULL}},
        {{NULL},
         {"accept", "--history", "h.jsonl", "--reason", "r", "--commit", "c1", "--gate-id", "g\n",
          NULL}},
        {{NULL}, {"accept", "--history", "h.jsonl", "--reason", "r", "-x", NULL}},
        {{NULL},
         {"accept", "--history", "h.jsonl", "--reason", "worth it", "--commit", "c1", "--who",
          "octocat", "--date", "2026-11-20T14:03:00Z", NULL}},
        {{"GITHUB_SHA=c2"},
         {"accept", "--history", "h.jsonl", "--reason", "r", "--date", "2026-11-21T14:03:00Z",
          "--gate-id", "g", NULL}},
    };
    CHECK(*state, "history_accept.txt", cases);
}

/* Runs the tool in w with args; fails the test unless it exits 0. */
static void tool_ok(const struct cg_workdir *w, const char *const *args)
{
    const char *env[] = {"GITHUB_SERVER_URL=", "GITHUB_REPOSITORY=", NULL};
    assert_int_equal(cg_workdir_run(w, CG_TOOL_PATH, env, args, &proc), 0);
    if (proc.exit_code != 0)
        fail_msg("canary-gate %s %s: exit %d\n%s", args[0], args[1], proc.exit_code, proc.err);
}

/* w's site/index.html, written by 'history site' from the history hist; the caller frees it. */
static char *site_of(const struct cg_workdir *w, const char *hist)
{
    const char *site[] = {"history", "site", "--history", hist, "--out", "site", NULL};
    tool_ok(w, site);
    char *page = NULL;
    struct cg_err err;
    cg_err_init(&err);
    assert_int_equal(cg_file_read(cg_workdir_in(w, "site/index.html"), 1 << 22, &page, NULL, &err),
                     0);
    return page;
}

/* Appends the example artifact ex to the history hist as commit's run of gate (NULL: none),
 * keeping 1 run of each gate. */
static void append_run(const struct cg_workdir *w, const char *hist, const char *commit,
                       const char *gate, const char *ex)
{
    const char *args[] = {"history", "append", "--history", hist,     "--commit",
                          commit,    "--keep", "1",         "--date", "2026-11-20T14:03:00Z",
                          ex,        NULL,     NULL,        NULL};
    if (gate != NULL)
        args[10] = "--gate-id", args[11] = gate, args[12] = ex;
    tool_ok(w, args);
}

/* The site's header line of a gate's older runs folded into its summary names the gate when the
 * history holds several gates' series (as their sections do); it said "1 older run folded" with
 * no gate. A history of one gate keeps the short line. */
static void test_cmd_history__site_names_the_gate_of_folded_runs(void **state)
{
    const struct cg_workdir *w = *state;
    append_run(w, "h.jsonl", "c1", "h100", EX("baseline.json"));
    append_run(w, "h.jsonl", "c2", "h100", EX("current.json"));
    char *page = site_of(w, "h.jsonl");
    if (strstr(page, "<p class=\"cg-meta\">1 older run folded into a summary, from") == NULL)
        fail_msg("one gate: no short line of its folded run:\n%.3000s", page);
    free(page);
    append_run(w, "h.jsonl", "c3", "a100", EX("baseline.json"));
    page = site_of(w, "h.jsonl");
    if (strstr(page, "<p class=\"cg-meta\">1 older run of gate h100 folded into a summary, "
                     "from") == NULL)
        fail_msg("two gates: the folded run's gate is not named:\n%.3000s", page);
    free(page);
    /* the runs recorded without a gate id, beside a gate */
    append_run(w, "n.jsonl", "c1", NULL, EX("baseline.json"));
    append_run(w, "n.jsonl", "c2", NULL, EX("current.json"));
    append_run(w, "n.jsonl", "c3", "a100", EX("baseline.json"));
    page = site_of(w, "n.jsonl");
    if (strstr(page, "<p class=\"cg-meta\">1 older run without a gate id folded into a "
                     "summary, from") == NULL)
        fail_msg("no gate id beside a gate: not said:\n%.3000s", page);
    free(page);
}

#define IN_WORKDIR(fn) cmocka_unit_test_setup_teardown(fn, cg_workdir_setup, cg_workdir_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        IN_WORKDIR(test_cmd_history__append_help_and_messages_match_golden),
        IN_WORKDIR(test_cmd_history__check_help_and_messages_match_golden),
        IN_WORKDIR(test_cmd_history__site_help_and_messages_match_golden),
        IN_WORKDIR(test_cmd_history__accept_help_and_messages_match_golden),
        IN_WORKDIR(test_cmd_history__site_names_the_gate_of_folded_runs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
