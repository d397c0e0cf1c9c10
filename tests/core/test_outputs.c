/*
 * test_outputs: inputs and outputs checked before any canary time is spent. The check itself
 * (same file by device and inode whatever the spelling, paths that do not exist yet, devices,
 * unwritable places), then every command end to end through the built tool: an output that is
 * the baseline, the thresholds, an artifact to compare or merge, or another output is refused
 * with exit 2 naming both options, and an output that cannot be written with exit 3, before the
 * canary runs (no log is opened, the baseline is byte for byte the same).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "artifact.h"
#include "fixtures.h"
#include "outputs.h"
#include "proc.h"
#include "workdir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CANARY CG_BINARY_DIR "/tests/canaries/nvtx-canary"

static struct cg_proc proc;

static int tool(const struct cg_workdir *w, const char *const *args)
{
    return cg_workdir_run(w, CG_TOOL_PATH, NULL, args, &proc);
}

static void put(const struct cg_workdir *w, const char *name, const char *text)
{
    FILE *f = fopen(cg_workdir_in(w, name), "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A small valid artifact saved as name in the directory. */
static void artifact(const struct cg_workdir *w, const char *name, uint64_t seed)
{
    struct cg_fixture f = {3, 10, 2e6, 0.01, 0.02, 64, -1, 100000000, 2, seed};
    struct cg_artifact a;
    struct cg_err err;
    cg_artifact_init(&a);
    assert_int_equal(cg_fixture_make(&a, &f), 0);
    assert_int_equal(cg_artifact_save(cg_workdir_in(w, name), &a, &err), 0);
    cg_artifact_release(&a);
}

static void expect_err(const char *part)
{
    if (strstr(proc.err, part) == NULL)
        fail_msg("stderr lacks '%s':\n%s", part, proc.err);
}

/* ---- the check ---------------------------------------------------------------------------- */

static int check(const struct cg_outputs *o, struct cg_err *err)
{
    cg_err_init(err);
    return cg_outputs_check(o, err);
}

static void test_outputs__same_file_whatever_the_spelling(void **state)
{
    struct cg_workdir *w = *state;
    struct cg_outputs o;
    struct cg_err err;
    char dir[600], spelled[700], slink[700], hard[700], sub[700], none[700], none2[700];
    snprintf(dir, sizeof(dir), "%s", w->path);
    put(w, "base.json", "x");
    assert_int_equal(mkdir(cg_workdir_in(w, "sub"), 0755), 0);
    snprintf(spelled, sizeof(spelled), "%s/sub/../base.json", dir);
    snprintf(slink, sizeof(slink), "%s/link.json", dir);
    snprintf(hard, sizeof(hard), "%s/hard.json", dir);
    snprintf(sub, sizeof(sub), "%s/sub", dir);
    assert_int_equal(symlink("base.json", slink), 0);
    assert_int_equal(link(cg_workdir_in(w, "base.json"), hard), 0);
    const char *same[] = {spelled, slink, hard};
    for (size_t i = 0; i < 3; i++) {
        cg_outputs_init(&o);
        cg_outputs_add(&o, CG_PATH_INPUT, "--baseline", cg_workdir_in(w, "base.json"));
        cg_outputs_add(&o, CG_PATH_IN_PLACE, "--log", same[i]);
        assert_int_equal(check(&o, &err), CG_EUSAGE);
        assert_non_null(strstr(err.msg, "--log '"));
        assert_non_null(strstr(err.msg, "' and --baseline '"));
        assert_non_null(strstr(err.msg, "are the same file"));
        cg_outputs_release(&o);
    }
    /* two outputs that do not exist yet, spelled differently */
    snprintf(none, sizeof(none), "%s/new.json", dir);
    snprintf(none2, sizeof(none2), "%s/./sub/../new.json", dir);
    cg_outputs_init(&o);
    cg_outputs_add(&o, CG_PATH_OUTPUT, "--out", none);
    cg_outputs_add(&o, CG_PATH_OUTPUT, "--out-base", none2);
    assert_int_equal(check(&o, &err), CG_EUSAGE);
    assert_non_null(strstr(err.msg, "two outputs may not be written to one file"));
    cg_outputs_release(&o);
    /* different files, inputs read twice, devices named twice: fine */
    cg_outputs_init(&o);
    cg_outputs_add(&o, CG_PATH_INPUT, "BASELINE", cg_workdir_in(w, "base.json"));
    cg_outputs_add(&o, CG_PATH_INPUT, "CURRENT", hard);
    cg_outputs_add(&o, CG_PATH_OUTPUT, "--json", none);
    cg_outputs_add(&o, CG_PATH_OUTPUT, "--report", "/dev/null");
    cg_outputs_add(&o, CG_PATH_OUTPUT, "-o", "/dev/null");
    cg_outputs_add(&o, CG_PATH_OUTPUT, "--trace", "-");
    assert_int_equal(check(&o, &err), 0);
    assert_false(cg_workdir_exists(w, "new.json")); /* the check leaves nothing behind */
    cg_outputs_release(&o);
    /* many inputs (a merge of 40 artifacts), the output the same file as the 35th */
    cg_outputs_init(&o);
    for (int i = 0; i < 40; i++)
        cg_outputs_add(&o, CG_PATH_INPUT, "IN", i == 34 ? hard : none);
    cg_outputs_add(&o, CG_PATH_OUTPUT, "-o", cg_workdir_in(w, "base.json"));
    assert_int_equal(check(&o, &err), CG_EUSAGE);
    assert_non_null(strstr(err.msg, "-o '"));
    cg_outputs_release(&o);
    /* a directory, a missing directory, a place where nothing can be created: exit 3 */
    const char *bad[][2] = {{sub, "is a directory"},
                            {"/nonexistent-cg-dir/x.json", "no directory '/nonexistent-cg-dir'"},
                            {"/proc/cg-outputs-test.json", "cannot write --json"}};
    for (size_t i = 0; i < 3; i++) {
        cg_outputs_init(&o);
        cg_outputs_add(&o, CG_PATH_OUTPUT, "--json", bad[i][0]);
        assert_int_equal(check(&o, &err), CG_EIO);
        if (strstr(err.msg, bad[i][1]) == NULL || strstr(err.msg, bad[i][0]) == NULL)
            fail_msg("case %zu: '%s'", i, err.msg);
        cg_outputs_release(&o);
    }
}

/* ---- every command ------------------------------------------------------------------------ */

/* The main command with the test canary: 1 run of 2 steps. extra: options before "--". */
static int gate(const struct cg_workdir *w, const char *const *extra)
{
    const char *args[40] = {"--baseline", "main.json", "--runs",   "1",
                            "--steps",    "2",         "--warmup", "0"};
    size_t n = 8;
    for (size_t i = 0; extra[i] != NULL; i++)
        args[n++] = extra[i];
    const char *canary[] = {"--", CANARY, "--steps", "2", "--step-ms", "1", NULL};
    for (size_t i = 0; canary[i] != NULL; i++)
        args[n++] = canary[i];
    args[n] = NULL;
    return tool(w, args);
}

/* --log is truncated when the collector opens, before the first run: naming the baseline (or
 * anything else the gate reads or writes) must never get that far. */
static void test_outputs__gate_refuses_outputs_over_the_baseline_before_running(void **state)
{
    struct cg_workdir *w = *state;
    artifact(w, "main.json", 1);
    char *before = strdup(cg_workdir_read(w, "main.json"));
    assert_int_equal(symlink("main.json", cg_workdir_in(w, "alias.json")), 0);
    struct {
        const char *extra[8];
        const char *expect;
    } cases[] = {
        {{"--log", "main.json", NULL},
         "--log 'main.json' and --baseline 'main.json' are the same file"},
        {{"--log", "./alias.json", NULL}, "--log './alias.json' and --baseline 'main.json'"},
        {{"--out", "main.json", NULL}, "--out 'main.json' and --baseline 'main.json'"},
        {{"--json", "./main.json", NULL}, "--json './main.json' and --baseline 'main.json'"},
        {{"--report", "main.json", NULL}, "--report 'main.json' and --baseline 'main.json'"},
        {{"--trace", "main.json", NULL}, "--trace 'main.json' and --baseline 'main.json'"},
        {{"--out", "pr.json", "--json", "pr.json", NULL}, "--json 'pr.json' and --out 'pr.json'"},
        {{"--out", "pr.json", "--log", "pr.json", NULL}, "--log 'pr.json' and --out 'pr.json'"},
        {{"--out", "pr.json", "--report", "pr.md", "--json", "pr.md", NULL},
         "--json 'pr.md' and --report 'pr.md'"},
        {{"--out", "main.json", "--record-if-missing", NULL},
         "--out 'main.json' and --baseline 'main.json'"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(gate(w, cases[i].extra), 2);
        expect_err(cases[i].expect);
        assert_non_null(strstr(proc.err, "are the same file"));
        assert_null(strstr(proc.err, "run 1 of")); /* no canary time was spent */
        assert_false(cg_workdir_exists(w, "canary-run.log"));
        assert_false(cg_workdir_exists(w, "pr.log"));
        assert_string_equal(cg_workdir_read(w, "main.json"), before);
    }
    /* the thresholds file is an input too */
    put(w, "thr.json", "{\"extends\": \"default\"}");
    const char *thr[] = {"--thresholds", "thr.json", "--json", "thr.json", NULL};
    assert_int_equal(gate(w, thr), 2);
    expect_err("--json 'thr.json' and --thresholds 'thr.json' are the same file");
    /* a missing baseline recorded with --record-if-missing is an output */
    const char *rec[] = {
        "--record-if-missing", "--out", "new.json", "--baseline", "new.json", "--", CANARY, NULL};
    assert_int_equal(tool(w, rec), 2);
    expect_err("are the same file");
    assert_false(cg_workdir_exists(w, "new.json"));
    free(before);
}

/* Found before any canary time is spent, not after: an output in a missing directory or where
 * nothing can be created is exit 3 naming the path, and the canary never ran. */
static void test_outputs__gate_finds_unwritable_outputs_before_running(void **state)
{
    struct cg_workdir *w = *state;
    artifact(w, "main.json", 1);
    const char *cases[][3] = {
        {"--report", "/nonexistent-cg-dir/r.md",
         "cannot write --report '/nonexistent-cg-dir/r.md'"},
        {"--json", "/proc/cg-verdict.json", "cannot write --json '/proc/cg-verdict.json'"},
        {"--out", "nodir/pr.json", "cannot write --out 'nodir/pr.json': no directory 'nodir'"},
        {"--trace", "/proc/cg-trace.json", "cannot write --trace '/proc/cg-trace.json'"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *extra[] = {cases[i][0], cases[i][1], NULL};
        assert_int_equal(gate(w, extra), 3);
        expect_err(cases[i][2]);
        assert_null(strstr(proc.err, "run 1 of"));
        assert_false(cg_workdir_exists(w, "canary-run.log"));
    }
}

/* The last line lists what was written, and nothing that failed: a report that could not be
 * written (a full disk, /dev/full) is not named, and the exit code is 3. */
static void test_outputs__written_line_never_names_a_failed_file(void **state)
{
    struct cg_workdir *w = *state;
    artifact(w, "main.json", 1);
    const char *extra[] = {"--out", "pr.json", "--report", "/dev/full", NULL};
    assert_int_equal(gate(w, extra), 3);
    expect_err("cannot write '/dev/full'");
    const char *last = strstr(proc.err, "canary-gate: artifact 'pr.json'");
    assert_non_null(last);
    assert_null(strstr(last, "/dev/full"));
}

static void test_outputs__ab_refuses_one_file_for_both_sides(void **state)
{
    struct cg_workdir *w = *state;
    const char *args[] = {"ab",          "--base",   CANARY, "--runs", "1",         "--steps",
                          "1",           "--warmup", "0",    "--out",  "same.json", "--out-base",
                          "./same.json", "--",       CANARY, NULL};
    assert_int_equal(tool(w, args), 2);
    expect_err("--out-base './same.json' and --out 'same.json' are the same file");
    assert_false(cg_workdir_exists(w, "same.log"));
    const char *logs[] = {"ab",         "--base", CANARY,   "--runs", "1",  "--out", "h.json",
                          "--out-base", "b.json", "--json", "b.log",  "--", CANARY,  NULL};
    assert_int_equal(tool(w, logs), 2);
    expect_err("--json 'b.log' and the base's log 'b.log' are the same file");
}

static void test_outputs__run_aa_compare_merge_refuse_the_same_file(void **state)
{
    struct cg_workdir *w = *state;
    artifact(w, "a.json", 1);
    artifact(w, "b.json", 2);
    put(w, "thr.json", "{\"extends\": \"default\"}");
    put(w, "child.json", "{\"extends\": \"thr.json\"}");
    struct {
        const char *args[16];
        const char *expect;
    } cases[] = {
        {{"run", "--out", "r.json", "--log", "./r.json", "--", CANARY, NULL},
         "--log './r.json' and --out 'r.json' are the same file"},
        {{"run", "--out", "thr.json", "--thresholds", "thr.json", "--", CANARY, NULL},
         "--out 'thr.json' and --thresholds 'thr.json' are the same file"},
        {{"aa", "--out", "aa.json", "--json", "./aa.json", "--", CANARY, NULL},
         "--json './aa.json' and --out 'aa.json' are the same file"},
        {{"compare", "a.json", "b.json", "--json", "a.json", NULL},
         "--json 'a.json' and BASELINE 'a.json' are the same file"},
        {{"compare", "a.json", "b.json", "--report", "./b.json", NULL},
         "--report './b.json' and CURRENT 'b.json' are the same file"},
        {{"compare", "a.json", "b.json", "--report", "v.md", "--json", "v.md", NULL},
         "--json 'v.md' and --report 'v.md' are the same file"},
        {{"compare", "--thresholds", "thr.json", "a.json", "b.json", "--json", "thr.json", NULL},
         "--json 'thr.json' and --thresholds 'thr.json'"},
        /* a file the thresholds extend is an input too (it was replaced by the verdict) */
        {{"compare", "--thresholds", "child.json", "a.json", "b.json", "--json", "thr.json", NULL},
         "--json 'thr.json' and the thresholds' extends "},
        {{"merge", "-o", "b.json", "a.json", "b.json", NULL},
         "-o 'b.json' and IN 'b.json' are the same file"},
        /* two outputs on standard output: the JSON and the markdown mixed in one stream */
        {{"compare", "a.json", "b.json", "--report", "-", "--json", "-", NULL},
         "--json '-' and --report '-' both write to standard output"},
    };
    char *a = strdup(cg_workdir_read(w, "a.json")), *b = strdup(cg_workdir_read(w, "b.json"));
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(tool(w, cases[i].args), 2);
        expect_err(cases[i].expect);
        assert_null(strstr(proc.err, "run 1 of"));
        assert_false(cg_workdir_exists(w, "r.log"));
        assert_false(cg_workdir_exists(w, "aa.log"));
        assert_string_equal(cg_workdir_read(w, "a.json"), a);
        assert_string_equal(cg_workdir_read(w, "b.json"), b);
        assert_string_equal(cg_workdir_read(w, "thr.json"), "{\"extends\": \"default\"}");
    }
    /* unwritable: exit 3 before anything runs */
    const char *run[] = {"run", "--out", "/nonexistent-cg-dir/r.json", "--", CANARY, NULL};
    assert_int_equal(tool(w, run), 3);
    expect_err("cannot write --out '/nonexistent-cg-dir/r.json'");
    assert_null(strstr(proc.err, "run 1 of"));
    free(a);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_outputs__same_file_whatever_the_spelling,
                                        cg_workdir_setup, cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(
            test_outputs__gate_refuses_outputs_over_the_baseline_before_running, cg_workdir_setup,
            cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(test_outputs__gate_finds_unwritable_outputs_before_running,
                                        cg_workdir_setup, cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(test_outputs__written_line_never_names_a_failed_file,
                                        cg_workdir_setup, cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(test_outputs__ab_refuses_one_file_for_both_sides,
                                        cg_workdir_setup, cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(test_outputs__run_aa_compare_merge_refuse_the_same_file,
                                        cg_workdir_setup, cg_workdir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
