/*
 * test_options_repeat: an option given twice, through the built tool. A single-valued option
 * given again with another value is refused by every command (exit 2, one line naming both
 * values, nothing run or written); with the same value it is taken; --only adds its groups up
 * and --redact its patterns; --confirm-runs and --no-confirm together are refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "proc.h"
#include "workdir.h"

#include <stdio.h>
#include <string.h>

#define EX(name) CG_SOURCE_DIR "/examples/" name

static struct cg_proc proc;

/* Runs the tool with args (NULL-terminated) in the test's directory; its exit code. */
static int tool(void **state, const char *const *args)
{
    return cg_workdir_run(*state, CG_TOOL_PATH, NULL, args, &proc);
}

/* The number of lines of s. */
static size_t lines(const char *s)
{
    size_t n = 0;
    for (; *s != '\0'; s++)
        n += *s == '\n';
    return n;
}

/* Every command refuses a single-valued option given twice with two values: exit 2, one line
 * that names the option and both values, before anything runs (the paths named are never made). */
static void test_options_repeat__a_second_value_is_refused_by_every_command(void **state)
{
    static const struct {
        const char *option; /* as the message names it */
        const char *first, *second;
        const char *args[16];
    } cases[] = {
        {"--id",
         "a",
         "b",
         {"compare", EX("baseline.json"), EX("current.json"), "--id", "a", "--id", "b"}},
        {"--thresholds",
         "default",
         "strict",
         {"compare", "--thresholds", "default", "--thresholds=strict", EX("baseline.json"),
          EX("current.json")}},
        {"--report",
         "rep-a.md",
         "rep-b.md",
         {"compare", EX("baseline.json"), EX("current.json"), "--report", "rep-a.md", "--report",
          "rep-b.md"}},
        {"--baseline",
         EX("baseline.json"),
         EX("current.json"),
         {"--baseline", EX("baseline.json"), "--baseline", EX("current.json"), "--", "true"}},
        {"--runs",
         "3",
         "5",
         {"gate", "--baseline", EX("baseline.json"), "--runs", "3", "--runs", "5", "--", "true"}},
        {"--out",
         "rep-a.json",
         "rep-b.json",
         {"run", "--out", "rep-a.json", "--out", "rep-b.json", "--", "true"}},
        {"--steps", "5", "6", {"run", "--steps", "5", "--steps", "6", "--", "true"}},
        {"--target", "1", "5", {"aa", "--target", "1", "--target", "5", "--", "true"}},
        {"--base", "true", "false", {"ab", "--base", "true", "--base", "false", "--", "true"}},
        {"--max-runs",
         "4",
         "8",
         {"ab", "--base", "true", "--max-runs", "4", "--max-runs", "8", "--", "true"}},
        {"--out",
         "rep-a.json",
         "rep-b.json",
         {"merge", "-o", "rep-a.json", "--out", "rep-b.json", EX("baseline.json")}},
        {"--ops", "3", "4", {"show", EX("baseline.json"), "--ops", "3", "--ops", "4"}},
        {"--pr",
         "1",
         "2",
         {"comment", "--repo", "o/r", "--pr", "1", "--pr", "2", "--report", EX("baseline.json"),
          "--dry-run"}},
        {"--commit",
         "aaa",
         "bbb",
         {"history", "append", "--history", "rep-h.jsonl", "--commit", "aaa", "--commit", "bbb",
          EX("baseline.json")}},
        {"--alpha",
         "0.01",
         "0.05",
         {"history", "check", "--history", "rep-h.jsonl", "--alpha", "0.01", "--alpha", "0.05"}},
        {"--title",
         "a",
         "b",
         {"history", "site", "--history", "rep-h.jsonl", "--out", "rep-site", "--title", "a",
          "--title", "b"}},
        {"--reason",
         "a",
         "b",
         {"accept", "--history", "rep-h.jsonl", "--reason", "a", "--reason", "b"}},
        {"--good",
         "HEAD~1",
         "HEAD~2",
         {"bisect", "--good", "HEAD~1", "--good", "HEAD~2", "--bad", "HEAD", "--", "true"}},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int rc = tool(state, cases[i].args);
        char want[512];
        snprintf(want, sizeof(want), "%s given twice with different values ('%s', '%s')",
                 cases[i].option, cases[i].first, cases[i].second);
        if (rc != 2 || strstr(proc.err, want) == NULL || lines(proc.err) != 1)
            fail_msg("case %zu (%s %s): exit %d, '%s' lacks \"%s\" or is not one line", i,
                     cases[i].args[0], cases[i].option, rc, proc.err, want);
    }
    const char *made[] = {"rep-a.md",    "rep-b.md", "rep-a.json",    "rep-b.json",
                          "rep-h.jsonl", "rep-site", "canary-run.log"};
    for (size_t i = 0; i < sizeof(made) / sizeof(made[0]); i++)
        if (cg_workdir_exists(*state, made[i]))
            fail_msg("'%s' was made by a refused command line", made[i]);
}

/* The same value twice is one value: taken as given once; --redact adds a pattern each time. */
static void test_options_repeat__the_same_value_twice_is_taken(void **state)
{
    const char *args[] = {
        "compare",      EX("baseline.json"), EX("current.json"), "--id",    "a", "--id=a",
        "--thresholds", "default",           "--thresholds",     "default", NULL};
    assert_int_equal(tool(state, args), 1); /* the examples' FAIL */
    assert_non_null(strstr(proc.out, "FAIL"));
    const char *redact[] = {"run", "--redact", "a", "--redact", "b", "--help", NULL};
    assert_int_equal(tool(state, redact), 0);
    assert_non_null(strstr(proc.out, "usage: canary-gate run"));
}

/* --only adds its groups up: "--only timing --only counts" gates both, as "--only
 * timing,counts" does (the second no longer drops timing's FAIL), in either order. */
static void test_options_repeat__only_adds_its_groups_up(void **state)
{
    const char *counts_alone[] = {
        "compare", EX("baseline.json"), EX("current.json"), "--only", "counts", NULL};
    assert_int_equal(tool(state, counts_alone), 0); /* the examples' FAIL is timing's */
    const char *orders[2][8] = {
        {"compare", EX("baseline.json"), EX("current.json"), "--only", "timing", "--only", "counts",
         NULL},
        {"compare", EX("baseline.json"), EX("current.json"), "--only", "counts", "--only", "timing",
         NULL},
    };
    for (int i = 0; i < 2; i++) {
        if (tool(state, orders[i]) != 1)
            fail_msg("--only %s --only %s: exit %d, not the FAIL of --only timing,counts",
                     orders[i][4], orders[i][6], proc.exit_code);
    }
}

/* --confirm-runs N with --no-confirm says two things: refused, in either order, naming both. */
static void test_options_repeat__confirm_runs_with_no_confirm_is_refused(void **state)
{
    const char *orders[2][10] = {
        {"--baseline", EX("baseline.json"), "--confirm-runs", "3", "--no-confirm", "--", "true",
         NULL},
        {"--baseline", EX("baseline.json"), "--no-confirm", "--confirm-runs", "3", "--", "true",
         NULL},
    };
    for (int i = 0; i < 2; i++) {
        int rc = tool(state, orders[i]);
        if (rc != 2 || strstr(proc.err, "--confirm-runs 3") == NULL ||
            strstr(proc.err, "--no-confirm") == NULL || lines(proc.err) != 1)
            fail_msg("order %d: exit %d, '%s'", i, rc, proc.err);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_options_repeat__a_second_value_is_refused_by_every_command, cg_workdir_setup,
            cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(test_options_repeat__the_same_value_twice_is_taken,
                                        cg_workdir_setup, cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(test_options_repeat__only_adds_its_groups_up,
                                        cg_workdir_setup, cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(
            test_options_repeat__confirm_runs_with_no_confirm_is_refused, cg_workdir_setup,
            cg_workdir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
