/*
 * test_usage: what a user reads and types around the tool, checked against the tool itself.
 *
 * --help: the defaults 'run --help' states are those a run without options uses (the built-in
 * default thresholds' measurement section, measured by running the built-in canary), and every
 * measuring command states the same timeout and grace. The man page (help2man, made in the build
 * tree when help2man was found): a SYNOPSIS of one line per usage, a section for every command
 * of the command table (history's subcommands each), a footer naming "canary-gate VERSION".
 * Bash completion (completions/canary-gate with the real bash-completion): history's subcommands
 * and no files after 'history', the subcommand's own options after 'history site', the spending
 * functions after '--spending', directories after 'history site --out'. Every script in ci/ that
 * this test covers answers --help with its header and does nothing else. The licence: LICENSE,
 * the SPDX identifier in CMakeLists.txt, the Debian copyright file and python/pyproject.toml agree.
 * Parts that need a program this machine lacks (help2man, bash-completion) are skipped, saying so.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "artifact.h"
#include "proc.h"
#include "thresholds.h"
#include "workdir.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BASH_COMPLETION "/usr/share/bash-completion/bash_completion"

static struct cg_proc proc;

/* The tool's output for args (NULL-terminated), exit code checked. */
static const char *tool_out(const char *const *args, int want)
{
    const char *argv[16] = {CG_TOOL_PATH};
    size_t n = 1;
    for (; args[n - 1] != NULL && n < 15; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    assert_int_equal(cg_proc_run(NULL, argv, NULL, &proc), 0);
    if (proc.exit_code != want)
        fprintf(stderr, "%s", proc.err);
    assert_int_equal(proc.exit_code, want);
    return proc.out;
}

/* The number after the first occurrence of key in text (which must hold it). */
static long long number_after(const char *text, const char *key)
{
    const char *at = strstr(text, key);
    if (at == NULL)
        fprintf(stderr, "no '%s' in:\n%s\n", key, text);
    assert_non_null(at);
    at += strlen(key);
    while (*at == ' ' || *at == '\n')
        at++;
    char *end = NULL;
    long long v = strtoll(at, &end, 10);
    assert_true(end != at);
    return v;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    static char text[1 << 17];
    size_t k = fread(text, 1, sizeof(text) - 1, f);
    text[k] = '\0';
    fclose(f);
    char *copy = strdup(text);
    assert_non_null(copy);
    return copy;
}

/* ---- --help ------------------------------------------------------------------------------ */

static void test_usage__run_help_states_the_defaults_a_run_uses(void **state)
{
    const struct cg_workdir *w = *state;
    char help[8192];
    snprintf(help, sizeof(help), "%s", tool_out((const char *[]){"run", "--help", NULL}, 0));
    long long runs = number_after(help, "default: the built-in default,");
    long long steps = number_after(help, "runs of");
    long long warmup = number_after(help, "steps after");

    struct cg_thresholds t;
    struct cg_err err;
    cg_err_init(&err);
    assert_int_equal(cg_thresholds_load(NULL, &t, &err), 0);
    assert_int_equal(runs, t.runs);
    assert_int_equal(steps, t.steps);
    assert_int_equal(warmup, t.warmup);

    /* what a run without options does: the built-in canary, measured */
    assert_int_equal(cg_workdir_run(w, CG_TOOL_PATH, NULL,
                                    (const char *[]){"run", "--out", "d.json", NULL}, &proc),
                     0);
    struct cg_artifact a;
    cg_artifact_init(&a);
    assert_int_equal(cg_artifact_load(cg_workdir_in(w, "d.json"), &a, &err), 0);
    assert_int_equal(a.settings.runs, runs);
    assert_int_equal(a.settings.steps, steps);
    assert_int_equal(a.settings.warmup, warmup);
    cg_artifact_release(&a);

    /* every measuring command states the same timeout and grace as run */
    long long timeout = number_after(help, "SIGKILL (default");
    long long grace = number_after(help, "SIGTERM and SIGKILL (default");
    const char *measuring[] = {"gate", "aa", "ab"};
    for (size_t i = 0; i < 3; i++) {
        const char *out = tool_out((const char *[]){measuring[i], "--help", NULL}, 0);
        assert_int_equal(number_after(out, "after --kill-grace (default"), timeout);
        assert_int_equal(number_after(out, "SIGTERM and SIGKILL (default"), grace);
    }
}

/* ---- the man page ------------------------------------------------------------------------ */

static void test_usage__man_page_has_a_synopsis_every_command_and_its_version(void **state)
{
    (void)state;
    const char *gz = CG_BINARY_DIR "/canary-gate.1.gz";
    if (access(gz, R_OK) != 0) {
        fprintf(stderr, "skipped: no %s (help2man was not found: ci/deps --package)\n", gz);
        skip();
    }
    assert_int_equal(cg_proc_run(NULL, (const char *[]){"/bin/gzip", "-dc", gz, NULL}, NULL, &proc),
                     0);
    assert_int_equal(proc.exit_code, 0);
    static char man[sizeof(proc.out)];
    memcpy(man, proc.out, sizeof(man));

    /* the footer: .TH NAME SECTION DATE SOURCE MANUAL, SOURCE "canary-gate VERSION" */
    char version[128];
    snprintf(version, sizeof(version), "%s", tool_out((const char *[]){"--version", NULL}, 0));
    char *space = strchr(version, ' ');
    assert_non_null(space);
    space = strchr(space + 1, ' ');
    if (space != NULL)
        *space = '\0'; /* "canary-gate 0.1.0" */
    version[strcspn(version, "\n")] = '\0';
    char want[256];
    snprintf(want, sizeof(want), "\" \"%s\" \"User Commands\"\n", version);
    const char *th = strstr(man, "\n.TH ");
    assert_non_null(th);
    const char *th_end = strchr(th + 1, '\n');
    assert_true(strncmp(th_end + 1 - strlen(want), want, strlen(want)) == 0);

    /* one SYNOPSIS line per usage line of 'canary-gate --help' */
    const char *syn = strstr(man, "\n.SH SYNOPSIS\n");
    assert_non_null(syn);
    const char *desc = strstr(syn, "\n.SH DESCRIPTION\n");
    assert_non_null(desc);
    int lines = 0, breaks = 0;
    for (const char *p = syn; p < desc; p++) {
        if (strncmp(p, "\n.B canary-gate\n", 16) == 0)
            lines++;
        if (strncmp(p, "\n.br\n", 5) == 0)
            breaks++;
    }
    assert_int_equal(lines, 3);
    assert_int_equal(breaks, 2);

    /* a section per command of the command table; history's subcommands each */
    const char *help = tool_out((const char *[]){"--help", NULL}, 0);
    const char *list = strstr(help, "commands:\n");
    assert_non_null(list);
    int commands = 0;
    for (const char *line = strchr(list, '\n') + 1; strncmp(line, "  ", 2) == 0;
         line = strchr(line, '\n') + 1) {
        char name[32];
        assert_int_equal(sscanf(line, " %31s", name), 1);
        char heading[64];
        if (strcmp(name, "history") == 0) {
            const char *subs[] = {"append", "check", "site"};
            for (size_t i = 0; i < 3; i++) {
                snprintf(heading, sizeof(heading), "\n.SS \"history %s\"\n", subs[i]);
                assert_non_null(strstr(man, heading));
            }
        } else {
            snprintf(heading, sizeof(heading), "\n.SS \"%s\"\n", name);
            if (strstr(man, heading) == NULL)
                fprintf(stderr, "the man page has no section %s", heading);
            assert_non_null(strstr(man, heading));
        }
        commands++;
    }
    assert_true(commands >= 10);
}

/* ---- bash completion --------------------------------------------------------------------- */

/* The completions of the words (the last one being completed) in the work directory, one per
 * line in proc.out. */
static const char *complete(const struct cg_workdir *w, const char *const *words)
{
    static const char script[] =
        "source " BASH_COMPLETION "\n"
        "source \"$CG_COMPLETION\"\n"
        "COMP_WORDS=(\"$@\"); COMP_CWORD=$(($# - 1)); COMP_LINE=\"$*\"; COMP_POINT=${#COMP_LINE}\n"
        "_canary_gate\n"
        "[ ${#COMPREPLY[@]} -eq 0 ] || printf '%s\\n' \"${COMPREPLY[@]}\" | sort\n";
    const char *argv[16] = {"/bin/bash", "-c", script, "bash", CG_TOOL_PATH};
    size_t n = 5;
    for (size_t i = 0; words[i] != NULL && n < 15; i++)
        argv[n++] = words[i];
    argv[n] = NULL;
    const char *env[] = {"CG_COMPLETION=" CG_SOURCE_DIR "/completions/canary-gate", NULL};
    assert_int_equal(cg_proc_run(w->path, argv, env, &proc), 0);
    if (proc.exit_code != 0)
        fprintf(stderr, "%s", proc.err);
    assert_int_equal(proc.exit_code, 0);
    return proc.out;
}

static void test_usage__completion_knows_history_and_the_options_values(void **state)
{
    const struct cg_workdir *w = *state;
    if (access(BASH_COMPLETION, R_OK) != 0) {
        fprintf(stderr, "skipped: no %s (apt-get install bash-completion)\n", BASH_COMPLETION);
        skip();
    }
    FILE *f = fopen(cg_workdir_in(w, "afile.json"), "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(mkdir(cg_workdir_in(w, "sitedir"), 0700), 0);

    /* after 'history': its subcommands, no file */
    assert_string_equal(complete(w, (const char *[]){"history", "", NULL}),
                        "--help\nappend\ncheck\nsite\n");
    /* after 'history site': the subcommand's options, not the main command's */
    const char *opts = complete(w, (const char *[]){"history", "site", "--t", NULL});
    assert_string_equal(opts, "--title\n");
    opts = complete(w, (const char *[]){"history", "site", "--h", NULL});
    assert_string_equal(opts, "--help\n--history\n");
    opts = complete(w, (const char *[]){"history", "site", "--b", NULL});
    assert_string_equal(opts, ""); /* --baseline, --budget are the main command's */
    /* history site --out: a directory */
    assert_string_equal(complete(w, (const char *[]){"history", "site", "--out", "", NULL}),
                        "sitedir\n");
    /* history append RUN.json: files */
    assert_string_equal(complete(w, (const char *[]){"history", "append", "a", NULL}),
                        "afile.json\n");
    /* --spending: the spending functions, on the main command and ab */
    assert_string_equal(complete(w, (const char *[]){"--spending", "", NULL}),
                        "bonferroni\nobrien-fleming\npocock\n");
    assert_string_equal(complete(w, (const char *[]){"ab", "--spending", "o", NULL}),
                        "obrien-fleming\n");
    /* options that take a number or a name: nothing */
    assert_string_equal(complete(w, (const char *[]){"--max-runs", "", NULL}), "");
    assert_string_equal(complete(w, (const char *[]){"history", "check", "--alpha", "", NULL}),
                        "");
    /* still: the commands, run's options, files */
    assert_string_equal(complete(w, (const char *[]){"hi", NULL}), "history\n");
    assert_non_null(strstr(complete(w, (const char *[]){"run", "--steps-f", NULL}),
                           "--steps-from\n"));
    assert_string_equal(complete(w, (const char *[]){"show", "af", NULL}), "afile.json\n");
}

/* ---- ci/ scripts ------------------------------------------------------------------------- */

static void test_usage__ci_scripts_answer_help(void **state)
{
    const struct cg_workdir *w = *state;
    /* ci/gpu-check has its own usage */
    const char *scripts[] = {"action-build",   "action-gate",      "action-validate",
                             "baseline-fetch", "baseline-publish", "pre-merge",
                             "deps",           "package",          "test",
                             "lint",           "fuzz",             "valgrind",
                             "mermaid",        "history-site"};
    for (size_t i = 0; i < sizeof(scripts) / sizeof(scripts[0]); i++) {
        char path[512], first[256];
        snprintf(path, sizeof(path), "%s/ci/%s", CG_SOURCE_DIR, scripts[i]);
        /* the header's first line, the help's first line */
        char *text = slurp(path);
        assert_non_null(text);
        const char *line2 = strchr(text, '\n') + 1;
        assert_true(strncmp(line2, "# ", 2) == 0);
        snprintf(first, sizeof(first), "%.*s\n", (int)strcspn(line2 + 2, "\n"), line2 + 2);
        free(text);
        for (int h = 0; h < 2; h++) {
            const char *argv[] = {path, h ? "-h" : "--help", NULL};
            assert_int_equal(cg_proc_run(w->path, argv, NULL, &proc), 0);
            if (proc.exit_code != 0 || strncmp(proc.out, first, strlen(first)) != 0)
                fprintf(stderr, "ci/%s %s: exit %d\n%s%s", scripts[i], argv[1], proc.exit_code,
                        proc.out, proc.err);
            assert_int_equal(proc.exit_code, 0);
            assert_true(strncmp(proc.out, first, strlen(first)) == 0);
            assert_string_equal(proc.err, "");
        }
    }
    /* nothing was made (ci/baseline-fetch --help once ran 'mkdir -p --help') */
    DIR *d = opendir(w->path);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            fprintf(stderr, "left behind: %s\n", e->d_name);
        assert_true(strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0);
    }
    closedir(d);
}

/* ci/pre-merge --baseline with no value: a usage error, exit 2 and one line (it exited 1, the
 * FAIL code, with the shell's own message), before anything is built or run. */
static void test_usage__pre_merge_baseline_needs_a_value(void **state)
{
    const struct cg_workdir *w = *state;
    const char *env[] = {"CANARY_GATE_BIN=/nonexistent", NULL};
    const char *cases[][3] = {{"--baseline", NULL, NULL}, {"--baseline", "", NULL}};
    for (size_t i = 0; i < 2; i++) {
        const char *argv[] = {CG_SOURCE_DIR "/ci/pre-merge", cases[i][0], cases[i][1], NULL};
        assert_int_equal(cg_proc_run(w->path, argv, env, &proc), 0);
        if (proc.exit_code != 2 || strcmp(proc.err, "ci/pre-merge: --baseline needs a file\n") != 0)
            fail_msg("exit %d\n%s", proc.exit_code, proc.err);
    }
}

/* ci/pre-merge with args (NULL-ended) in w, the tool a stand-in that writes its arguments, one a
 * line, to w/argv.txt (removed first); the exit code. */
static int pre_merge_args(const struct cg_workdir *w, const char *const *args)
{
    static char bin[400];
    if (!cg_workdir_exists(w, "fake-bin")) {
        assert_int_equal(mkdir(cg_workdir_in(w, "fake-bin"), 0755), 0);
        FILE *f = fopen(cg_workdir_in(w, "fake-bin/canary-gate"), "w");
        assert_non_null(f);
        fprintf(f, "#!/bin/sh\nprintf '%%s\\n' \"$@\" >'%s'\n", cg_workdir_in(w, "argv.txt"));
        fclose(f);
        assert_int_equal(chmod(cg_workdir_in(w, "fake-bin/canary-gate"), 0755), 0);
    }
    snprintf(bin, sizeof(bin), "CANARY_GATE_BIN=%s", cg_workdir_in(w, "fake-bin"));
    unlink(cg_workdir_in(w, "argv.txt"));
    const char *env[] = {bin, NULL};
    return cg_workdir_run(w, CG_SOURCE_DIR "/ci/pre-merge", env, args, &proc);
}

/* A user's own --out or --report (also as --out=FILE, or abbreviated as getopt_long takes it:
 * --rep) replaced ci/pre-merge's, until the tool refused an option given twice with different
 * values: the pair exited 2 naming './pre-merge/report.md', a path the user never wrote, and as
 * a pre-push hook blocked the push. The wrapper now gives its own only for what the user did not
 * give; --baseline=FILE and its abbreviations are the wrapper's --baseline; with --record, an
 * --out beside another --baseline is refused in the wrapper's words. Then for real. */
static void test_usage__pre_merge_lets_the_users_out_and_report_replace_its_own(void **state)
{
    const struct cg_workdir *w = *state;
    static const struct {
        const char *args[8];
        const char *argv; /* what the tool is given, exactly */
    } cases[] = {
        {{"--baseline", "b.json", "--report", "my.md", "--", "true", NULL},
         "--baseline\nb.json\n--out\n./pre-merge/canary-run.json\n--report\nmy.md\n--\ntrue\n"},
        {{"--baseline", "b.json", "--out=o.json", "--rep", "r.md", NULL},
         "--baseline\nb.json\n--out=o.json\n--rep\nr.md\n"},
        {{"--baseline=b.json", "--runs", "3", NULL},
         "--baseline\nb.json\n--out\n./pre-merge/canary-run.json\n--report\n"
         "./pre-merge/report.md\n--runs\n3\n"},
        {{"--basel", "b.json", NULL},
         "--baseline\nb.json\n--out\n./pre-merge/canary-run.json\n--report\n"
         "./pre-merge/report.md\n"},
        {{"--record", "--baseline", "b.json", "--runs", "1", "--", "true", NULL},
         "run\n--out\nb.json\n--runs\n1\n--\ntrue\n"},
        {{"--record", "--out", "other.json", "--", "true", NULL},
         "run\n--out\nother.json\n--\ntrue\n"},
        {{"--record", "--baseline", "b.json", "--ou=b.json", NULL}, "run\n--ou=b.json\n"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int rc = pre_merge_args(w, cases[i].args);
        const char *got = cg_workdir_exists(w, "argv.txt") ? cg_workdir_read(w, "argv.txt") : "";
        if (rc != 0 || strcmp(got, cases[i].argv) != 0)
            fail_msg("case %zu: exit %d, the tool given:\n%s\nexpected:\n%s\n%s", i, rc, got,
                     cases[i].argv, proc.err);
    }
    /* --record saves --baseline's file: another --out is refused, naming both */
    const char *both[] = {"--record", "--baseline", "b.json", "--out", "other.json", NULL};
    assert_int_equal(pre_merge_args(w, both), 2);
    assert_false(cg_workdir_exists(w, "argv.txt"));
    assert_string_equal(proc.err, "ci/pre-merge: --out 'other.json' and --baseline 'b.json' both "
                                  "name the baseline that --record saves: give --baseline "
                                  "alone\n");

    /* for real: recorded, then gated with the user's own report */
    const char *env[] = {"CANARY_GATE_BIN=" CG_BINARY_DIR, NULL};
#define SHORT "--runs", "1", "--steps", "3", "--warmup", "1"
#define CANARY "--", CG_BINARY_DIR "/tests/canaries/nvtx-canary"
    const char *rec[] = {"--record", "--baseline", "b.json", SHORT, CANARY, NULL};
    assert_int_equal(cg_workdir_run(w, CG_SOURCE_DIR "/ci/pre-merge", env, rec, &proc), 0);
    assert_true(cg_workdir_exists(w, "b.json"));
    const char *gate[] = {"--baseline", "b.json", "--report", "my.md", SHORT, CANARY, NULL};
#undef SHORT
#undef CANARY
    int rc = cg_workdir_run(w, CG_SOURCE_DIR "/ci/pre-merge", env, gate, &proc);
    if (rc != 0)
        fail_msg("exit %d:\n%s", rc, proc.err);
    assert_true(cg_workdir_exists(w, "my.md"));
    assert_false(cg_workdir_exists(w, "pre-merge/report.md"));
    assert_true(cg_workdir_exists(w, "pre-merge/canary-run.json"));
}

/* ---- the licence ------------------------------------------------------------------------- */

static void test_usage__the_licence_is_stated_alike_everywhere(void **state)
{
    (void)state;
    char *license = slurp(CG_SOURCE_DIR "/LICENSE");
    assert_non_null(license);
    assert_non_null(strstr(license, "Apache License"));
    assert_non_null(strstr(license, "Version 2.0, January 2004"));
    assert_non_null(strstr(license, "END OF TERMS AND CONDITIONS"));
    free(license);

    char *cmake = slurp(CG_SOURCE_DIR "/CMakeLists.txt");
    assert_non_null(cmake);
    assert_non_null(strstr(cmake, "set(CG_LICENSE_SPDX \"Apache-2.0\")"));
    free(cmake);

    char *copyright = slurp(CG_BINARY_DIR "/copyright");
    assert_non_null(copyright);
    assert_true(strncmp(copyright,
                        "Format: https://www.debian.org/doc/packaging-manuals/"
                        "copyright-format/1.0/\n",
                        74) == 0);
    assert_non_null(strstr(copyright, "\nFiles: *\n"));
    assert_non_null(strstr(copyright, "\nLicense: Apache-2.0\n"));
    assert_null(strstr(copyright, "@CG_")); /* every variable filled in */
    free(copyright);

    char *pyproject = slurp(CG_SOURCE_DIR "/python/pyproject.toml");
    assert_non_null(pyproject);
    assert_non_null(strstr(pyproject, "license = {text = \"Apache-2.0\"}"));
    free(pyproject);
}

#define IN_WORKDIR(fn) cmocka_unit_test_setup_teardown(fn, cg_workdir_setup, cg_workdir_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        IN_WORKDIR(test_usage__run_help_states_the_defaults_a_run_uses),
        cmocka_unit_test(test_usage__man_page_has_a_synopsis_every_command_and_its_version),
        IN_WORKDIR(test_usage__completion_knows_history_and_the_options_values),
        IN_WORKDIR(test_usage__ci_scripts_answer_help),
        IN_WORKDIR(test_usage__pre_merge_baseline_needs_a_value),
        IN_WORKDIR(test_usage__pre_merge_lets_the_users_out_and_report_replace_its_own),
        cmocka_unit_test(test_usage__the_licence_is_stated_alike_everywhere),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
