/*
 * test_cmd_bisect: 'canary-gate bisect' end to end on a git repository the test makes: 16 commits of
 * a small NVTX canary (tests/canaries/nvtx-canary driven by the arguments in the commit's
 * 'params' file, with noise in its steps and a per-process drift), where commit 11 brings the
 * regression. Each case's canary runs take a few seconds in all.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "workdir.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CANARY CG_BINARY_DIR "/tests/canaries/nvtx-canary"

static struct cg_proc proc;

/* Makes repo/ with commits 0..15, 'git init' given init_opts: params of commit i from the shell
 * words PARAMS_i (a case statement on $i), build.sh from BUILD_i. */
static void make_repo_with(const struct cg_workdir *w, const char *init_opts,
                           const char *params_case, const char *build_case)
{
    char script[4096];
    snprintf(script, sizeof(script),
             "set -e; mkdir repo; cd repo; git init -q %s; git config user.email t@example.com;"
             " git config user.name 'T Tester'; git config commit.gpgsign false;"
             " printf '#!/bin/sh\\nexec \"$NVTX_CANARY\" $(cat params)\\n' > canary.sh;"
             " chmod +x canary.sh;"
             " for i in $(seq 0 15); do p=''; b='exit 0'; %s; %s;"
             " echo \"--steps 12 $p\" > params; echo \"$b\" > build.sh; echo $i > n;"
             " git add -A; git commit -qm \"commit $i\"; done;"
             " git log --format=%%H --reverse > ../shas",
             init_opts, params_case, build_case);
    const char *args[] = {"-c", script, NULL};
    assert_int_equal(cg_workdir_run(w, "/bin/sh", NULL, args, &proc), 0);
}

static void make_repo(const struct cg_workdir *w, const char *params_case, const char *build_case)
{
    make_repo_with(w, "", params_case, build_case);
}

/* The full name of commit i. */
static const char *sha(const struct cg_workdir *w, int i)
{
    static char out[41];
    const char *all = cg_workdir_read(w, "shas");
    assert_true(strlen(all) >= (size_t)(i + 1) * 41);
    memcpy(out, all + i * 41, 40);
    out[40] = '\0';
    return out;
}

/* Runs bisect from the repository from good to bad (NULL: commits 0 and 15) with the extra args
 * and environment (NULL-ended; TMPDIR in it replaces the test's own). */
static int bisect_range(const struct cg_workdir *w, const char *good, const char *bad,
                        const char *const *extra, const char *const *more_env)
{
    const char *args[32], *env[8];
    size_t k = 0, e = 0;
    char g[64], b[64], json[300], tmp[320];
    snprintf(g, sizeof(g), "%s", good != NULL ? good : sha(w, 0));
    snprintf(b, sizeof(b), "%s", bad != NULL ? bad : sha(w, 15));
    snprintf(json, sizeof(json), "%s", cg_workdir_in(w, "out.json"));
    const char *fixed[] = {"bisect", "--repo", "repo",    "--good",   g,
                           "--bad",  b,        "--steps", "10",       "--warmup",
                           "2",      "--json", json,      "--report", "out.md"};
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        args[k++] = fixed[i];
    for (size_t i = 0; extra[i] != NULL; i++)
        args[k++] = extra[i];
    args[k++] = "--";
    args[k++] = "./canary.sh";
    args[k] = NULL;
    /* worktrees and kept logs in the test's directory, removed with it */
    bool own_tmp = true;
    env[e++] = "NVTX_CANARY=" CANARY;
    for (size_t i = 0; more_env != NULL && more_env[i] != NULL; i++) {
        own_tmp = own_tmp && strncmp(more_env[i], "TMPDIR=", 7) != 0;
        env[e++] = more_env[i];
    }
    if (own_tmp) {
        snprintf(tmp, sizeof(tmp), "TMPDIR=%s", cg_workdir_in(w, "tmp"));
        mkdir(tmp + strlen("TMPDIR="), 0700);
        env[e++] = tmp;
    }
    env[e] = NULL;
    return cg_workdir_run(w, CG_TOOL_PATH, env, args, &proc);
}

/* Runs bisect from the repository over the whole range with the extra args. */
static int bisect(const struct cg_workdir *w, const char *const *extra)
{
    return bisect_range(w, NULL, NULL, extra, NULL);
}

/* The result's first step's commit index, -1 when none; *probes and *max_runs from it. */
static int first_bad(const struct cg_workdir *w, size_t *probes, int *max_runs, int *second)
{
    cJSON *root = cJSON_Parse(cg_workdir_read(w, "out.json"));
    assert_non_null(root);
    cJSON *steps = cJSON_GetObjectItem(root, "steps"), *p = cJSON_GetObjectItem(root, "probes");
    int found = -1;
    *second = -1;
    *probes = (size_t)cJSON_GetArraySize(p);
    *max_runs = 0;
    for (int i = 0; i < cJSON_GetArraySize(p); i++) {
        int r = (int)cJSON_GetObjectItem(cJSON_GetArrayItem(p, i), "runs")->valuedouble;
        *max_runs = r > *max_runs ? r : *max_runs;
    }
    for (int s = 0; s < cJSON_GetArraySize(steps) && s < 2; s++) {
        cJSON *fb = cJSON_GetObjectItem(cJSON_GetArrayItem(steps, s), "first_bad");
        int idx = fb ? (int)cJSON_GetObjectItem(fb, "index")->valuedouble : -1;
        if (s == 0)
            found = idx;
        else
            *second = idx;
    }
    cJSON_Delete(root);
    return found;
}

/* The runs of the probe of commit i in the result, -1 when it was not probed. */
static int runs_of(const struct cg_workdir *w, int i)
{
    cJSON *root = cJSON_Parse(cg_workdir_read(w, "out.json"));
    assert_non_null(root);
    cJSON *p = cJSON_GetObjectItem(root, "probes");
    int runs = -1;
    for (int k = 0; k < cJSON_GetArraySize(p); k++) {
        cJSON *e = cJSON_GetArrayItem(p, k);
        if ((int)cJSON_GetObjectItem(e, "index")->valuedouble == i)
            runs = (int)cJSON_GetObjectItem(e, "runs")->valuedouble;
    }
    cJSON_Delete(root);
    return runs;
}

/* The result's "bad_end_cut". */
static bool bad_end_cut(const struct cg_workdir *w)
{
    cJSON *root = cJSON_Parse(cg_workdir_read(w, "out.json"));
    assert_non_null(root);
    bool cut = cJSON_IsTrue(cJSON_GetObjectItem(root, "bad_end_cut"));
    cJSON_Delete(root);
    return cut;
}

/* The first step's "step" (its own size) into *step, its first bad commit's change and the one
 * before it into *change and *before: each {change, low, high}. */
static void first_step_size(const struct cg_workdir *w, double step[3], double change[3],
                            double before[3])
{
    cJSON *root = cJSON_Parse(cg_workdir_read(w, "out.json"));
    assert_non_null(root);
    cJSON *st = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "steps"), 0);
    assert_non_null(st);
    const char *names[3] = {"step", "change", "change_before"};
    double *out[3] = {step, change, before};
    for (int k = 0; k < 3; k++) {
        cJSON *o = cJSON_GetObjectItem(st, names[k]);
        assert_non_null(o);
        out[k][0] = cJSON_GetObjectItem(o, "change")->valuedouble;
        out[k][1] = cJSON_GetObjectItem(o, "low")->valuedouble;
        out[k][2] = cJSON_GetObjectItem(o, "high")->valuedouble;
    }
    cJSON_Delete(root);
}

static void expect_no_worktrees(const struct cg_workdir *w)
{
    const char *args[] = {"-c", "git -C repo worktree list --porcelain", NULL};
    assert_int_equal(cg_workdir_run(w, "/bin/sh", NULL, args, &proc), 0);
    const char *second = strstr(proc.out, "worktree ");
    if (second != NULL && strstr(second + 1, "worktree ") != NULL)
        fail_msg("a worktree is left:\n%s", proc.out);
}

/* A count bisection that exited rc named commit 11 and left no worktree. */
static void expect_commit_11(const struct cg_workdir *w, int rc)
{
    if (rc != 0)
        fail_msg("exit %d:\n%s", rc, proc.err);
    size_t probes;
    int runs, second;
    assert_int_equal(first_bad(w, &probes, &runs, &second), 11);
    expect_no_worktrees(w);
}

static void test_bisect__names_commit_11_of_a_ten_percent_slowdown(void **state)
{
    struct cg_workdir *w = *state;
    make_repo(w, "us=2000; [ $i -ge 11 ] && us=2200; p=\"--step-us $us --noise-pct 3 --drift-pct 1\"",
              ":");
    const char *extra[] = {"--build", "sh build.sh", NULL};
    int rc = bisect(w, extra);
    size_t probes;
    int runs, second;
    if (rc != 0)
        fail_msg("exit %d:\n%s", rc, proc.err);
    int idx = first_bad(w, &probes, &runs, &second);
    if (idx != 11 || probes > 6)
        fail_msg("first bad %d in %zu probes (ends included):\n%s", idx, probes, proc.out);
    /* the bad end, every probe's anchor, takes all its looks: 2 x 6 pairs, and says why (not
     * "unresolved": it already differs) */
    if (runs_of(w, 15) != 12)
        fail_msg("the bad end in %d pairs, 12 expected:\n%s", runs_of(w, 15), proc.out);
    char said[128];
    snprintf(said, sizeof(said), "%.12s (the bad end) after 6 pairs; adding 6: it takes all its",
             sha(w, 15));
    if (strstr(proc.err, said) == NULL)
        fail_msg("no '%s' in:\n%s", said, proc.err);
    /* the step itself: commit 11's change less commit 10's, an interval around it */
    double step[3], change[3], before[3];
    first_step_size(w, step, change, before);
    assert_float_equal(step[0], change[0] - before[0], 1e-9);
    assert_true(step[1] < step[0] && step[0] < step[2]);
    assert_non_null(strstr(proc.out, "the step itself: +"));
    assert_non_null(strstr(cg_workdir_read(w, "out.md"), "<br>the step itself: +"));
    assert_non_null(strstr(cg_workdir_read(w, "out.md"), "commit 11"));
    assert_non_null(strstr(cg_workdir_read(w, "out.md"), "xychart-beta"));
    assert_non_null(strstr(proc.out, "T Tester"));
    expect_no_worktrees(w);
}

static void test_bisect__a_count_decides_with_one_run_per_commit(void **state)
{
    struct cg_workdir *w = *state;
    make_repo(w, "p='--step-us 1000'; [ $i -ge 11 ] && p='--step-us 1000 --many-names 1'", ":");
    const char *extra[] = {"--metric", "ranges", NULL};
    assert_int_equal(bisect(w, extra), 0);
    size_t probes;
    int runs, second;
    int idx = first_bad(w, &probes, &runs, &second);
    if (idx != 11 || runs != 1)
        fail_msg("first bad %d, %d runs at most per commit:\n%s", idx, runs, proc.out);
    double step[3], change[3], before[3]; /* a count's step: exact, no width */
    first_step_size(w, step, change, before);
    assert_true(step[0] > 0 && step[0] == change[0] - before[0]);
    assert_true(step[1] == step[0] && step[2] == step[0]);
    const char *line = strstr(proc.out, "the step itself: +");
    assert_non_null(line);
    assert_true(strncmp(strchr(line, '\n') - 9, " per step", 9) == 0);
}

/* Commit 11 marks a range in every third step only: no run's median moves (0 in two steps of
 * three), and compare values a run against good's, the same in every step, at its mean; bisect
 * values commits the same way, so commit 11 is named. */
static void test_bisect__a_count_added_every_third_step_is_found(void **state)
{
    struct cg_workdir *w = *state;
    make_repo(w, "p='--step-us 1000'; [ $i -ge 11 ] && p='--step-us 1000 --range-every 3'", ":");
    const char *extra[] = {"--metric", "ranges", NULL};
    expect_commit_11(w, bisect(w, extra));
}

/* A count that is not exact for the canary (here each process marks an extra range with
 * probability 1/2, on every commit) cannot be bisected from one run a commit: a commit was
 * named "first bad" with exit 0 in a hostile round. Each end is run twice; runs that differ
 * stop the bisection (exit 2) naming the count, the end and the values. */
static void test_bisect__a_count_that_differs_between_runs_is_refused(void **state)
{
    struct cg_workdir *w = *state;
    make_repo(w, "p='--step-us 1000'", ":");
    const char *script[] = {"-c",
                            "cd repo && printf '#!/bin/sh\\nn=$(cat \"$COUNT\" 2>/dev/null || "
                            "echo 0); echo $((n + 1)) > \"$COUNT\"; m=$((n %% 2))\\nexec "
                            "\"$NVTX_CANARY\" $(cat params) --many-names $m\\n' > canary.sh &&"
                            " git commit -qam 'alternate' && git log --format=%H -1 > ../good &&"
                            " echo 16 > n && git commit -qam 'one more' &&"
                            " git log --format=%H -1 > ../head",
                            NULL};
    assert_int_equal(cg_workdir_run(w, "/bin/sh", NULL, script, &proc), 0);
    char good[64], bad[64], count[300];
    snprintf(good, sizeof(good), "%.40s", cg_workdir_read(w, "good"));
    snprintf(bad, sizeof(bad), "%.40s", cg_workdir_read(w, "head"));
    snprintf(count, sizeof(count), "COUNT=%s", cg_workdir_in(w, "count"));
    const char *extra[] = {"--metric", "ranges", NULL}, *env[] = {count, NULL};
    int rc = bisect_range(w, good, bad, extra, env);
    if (rc != 2)
        fail_msg("exit %d, 2 expected:\n%s", rc, proc.out);
    assert_non_null(strstr(proc.err, "differs between two runs of the good end"));
    assert_non_null(strstr(proc.err, "not exact for this canary"));
}

static void test_bisect__a_commit_that_does_not_build_is_skipped(void **state)
{
    struct cg_workdir *w = *state;
    make_repo(w, "p='--step-us 1000'; [ $i -ge 11 ] && p='--step-us 1000 --many-names 1'",
              "[ $i -eq 7 ] && b='echo broken build; exit 1'");
    const char *extra[] = {"--metric", "ranges", "--build", "sh build.sh", NULL};
    expect_commit_11(w, bisect(w, extra));
    assert_non_null(
        strstr(cg_workdir_read(w, "out.json"), "the build failed (exit 1): broken build"));
}

/* The skipped probes' indexes (a bit each) whose reason holds `says`, and every skipped one. */
static unsigned skipped_saying(const struct cg_workdir *w, const char *says, unsigned *all)
{
    cJSON *root = cJSON_Parse(cg_workdir_read(w, "out.json"));
    assert_non_null(root);
    cJSON *p = cJSON_GetObjectItem(root, "probes");
    unsigned saying = 0;
    *all = 0;
    for (int k = 0; k < cJSON_GetArraySize(p); k++) {
        cJSON *e = cJSON_GetArrayItem(p, k);
        const cJSON *reason = cJSON_GetObjectItem(e, "reason");
        if (!cJSON_IsString(reason))
            continue;
        unsigned bit = 1u << (int)cJSON_GetObjectItem(e, "index")->valuedouble;
        *all |= bit;
        if (strstr(reason->valuestring, says) != NULL)
            saying |= bit;
    }
    cJSON_Delete(root);
    return saying;
}

/* Commits 8-10 mark their steps themselves ("step" ranges) where the others' steps are the
 * optimizer's (the sitecustomize's ranges, as a script that wrapped opt.step() in
 * canary_gate.step for a while): a count per step of another unit of work is not comparable
 * with good's, so those commits are skipped with the reason, never read as like good or bad;
 * with 8-10 skipped the first bad commit is one of 8-11, which bisect cannot decide (exit 3). */
static void test_bisect__a_commit_whose_steps_are_defined_differently_is_skipped(void **state)
{
    struct cg_workdir *w = *state;
    make_repo(w,
              "p='--step-us 1000 --mode optimizer'; [ $i -ge 11 ] && p=\"$p --many-names 1\";"
              " [ $i -ge 8 ] && [ $i -le 10 ] && p='--step-us 1000'",
              ":");
    const char *extra[] = {"--metric", "ranges", NULL};
    int rc = bisect(w, extra);
    if (rc != 3)
        fail_msg("exit %d, 3 expected:\n%s", rc, proc.out);
    assert_non_null(strstr(proc.out, "could not decide: a first bad commit is one of the 4 from"));
    unsigned all, saying = skipped_saying(w, "define a step differently", &all);
    if (saying == 0 || saying != all || (all & ~0x700u) != 0)
        fail_msg("skipped %#x, for the steps %#x (8-10 expected):\n%s", all, saying,
                 cg_workdir_read(w, "out.json"));
    assert_non_null(strstr(proc.err, "steps from the optimizer"));
    expect_no_worktrees(w);
}

/* The bad end marks its steps itself where good's are the optimizer's: its timing is of another
 * unit of work, so there is nothing to bisect (exit 2, naming both), not a search on it. */
static void test_bisect__a_bad_end_whose_steps_are_defined_differently_is_refused(void **state)
{
    struct cg_workdir *w = *state;
    make_repo(w, "p='--step-us 1000 --mode optimizer'; [ $i -eq 15 ] && p='--step-us 1000'", ":");
    const char *extra[] = {NULL};
    int rc = bisect(w, extra);
    if (rc != 2)
        fail_msg("exit %d, 2 expected:\n%s", rc, proc.err);
    char said[200];
    snprintf(said, sizeof(said),
             "the bad end %.12s cannot be compared with the good end: the "
             "sides define a step differently",
             sha(w, 15));
    if (strstr(proc.err, said) == NULL)
        fail_msg("no '%s' in:\n%s", said, proc.err);
    expect_no_worktrees(w);
}

/* Commit 7 cannot be checked out (a required smudge filter that fails): it is skipped as a
 * commit that does not build is, not the end of the whole bisection (exit 3, nothing
 * reported, the probes made thrown away). */
static void test_bisect__a_commit_that_cannot_be_checked_out_is_skipped(void **state)
{
    struct cg_workdir *w = *state;
    make_repo(w,
              "p='--step-us 1000'; [ $i -ge 11 ] && p='--step-us 1000 --many-names 1';"
              " [ $i -eq 7 ] && echo 'data filter=bad' > .gitattributes && echo hi > data;"
              " [ $i -eq 8 ] && rm -f .gitattributes data",
              ":");
    const char *cfg[] = {"-c",
                         "git -C repo config filter.bad.smudge false &&"
                         " git -C repo config filter.bad.required true",
                         NULL};
    assert_int_equal(cg_workdir_run(w, "/bin/sh", NULL, cfg, &proc), 0);
    const char *extra[] = {"--metric", "ranges", NULL};
    expect_commit_11(w, bisect(w, extra));
    assert_non_null(strstr(cg_workdir_read(w, "out.json"), "cannot be checked out"));
}

/* TMPDIR relative to where the tool runs: the worktrees are made there, not under the
 * repository (git runs in the repository: a relative path put them inside the user's tree, and
 * the canary could not be found). */
static void test_bisect__a_relative_tmpdir_stays_out_of_the_repository(void **state)
{
    struct cg_workdir *w = *state;
    make_repo(w, "p='--step-us 1000'; [ $i -ge 11 ] && p='--step-us 1000 --many-names 1'", ":");
    const char *mk[] = {"-c", "mkdir tmprel", NULL};
    assert_int_equal(cg_workdir_run(w, "/bin/sh", NULL, mk, &proc), 0);
    const char *extra[] = {"--metric", "ranges", NULL}, *env[] = {"TMPDIR=tmprel", NULL};
    expect_commit_11(w, bisect_range(w, NULL, NULL, extra, env));
    assert_false(cg_workdir_exists(w, "repo/tmprel"));
}

/* Commit 7's canary dies: it is skipped, and the log its reason names is kept (it was deleted
 * with the worktrees, so the report pointed at nothing); the logs' directory is named. */
static void test_bisect__a_skipped_commits_log_is_kept(void **state)
{
    struct cg_workdir *w = *state;
    make_repo(w,
              "p='--step-us 1000'; [ $i -ge 11 ] && p='--step-us 1000 --many-names 1';"
              " [ $i -eq 7 ] && p='--step-us 1000 --crash-at 3'",
              ":");
    const char *extra[] = {"--metric", "ranges", NULL};
    int rc = bisect(w, extra);
    if (rc != 0)
        fail_msg("exit %d:\n%s", rc, proc.err);
    const char *json = cg_workdir_read(w, "out.json");
    const char *at = strstr(json, "its output is in '");
    assert_non_null(at);
    at += strlen("its output is in '");
    const char *end = strchr(at, '\'');
    assert_non_null(end);
    char log[512];
    snprintf(log, sizeof(log), "%.*s", (int)(end - at), at);
    if (access(log, F_OK) != 0)
        fail_msg("the log '%s' named in the reason is gone", log);
    assert_non_null(strstr(proc.err, "the build and canary logs are kept in"));
    char *dir = strrchr(log, '/');
    assert_non_null(dir);
    *dir = '\0';
    char owner[600]; /* the user's now: no later bisection may take it for a killed one's */
    snprintf(owner, sizeof(owner), "%s/owner", log);
    assert_int_not_equal(access(owner, F_OK), 0);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", log);
    const char *rm[] = {"-c", cmd, NULL};
    assert_int_equal(cg_workdir_run(w, "/bin/sh", NULL, rm, &proc), 0);
    expect_no_worktrees(w);
    /* the good end's canary dies: said as the bad end's is (exit 2), its log kept */
    const char *again[] = {"-c", "rm -rf repo shas out.json out.md", NULL};
    assert_int_equal(cg_workdir_run(w, "/bin/sh", NULL, again, &proc), 0);
    make_repo(w, "p='--step-us 1000'; [ $i -eq 0 ] && p='--step-us 1000 --crash-at 3'", ":");
    assert_int_equal(bisect(w, extra), 2);
    assert_non_null(strstr(proc.err, "cannot be measured: its canary failed: "));
    assert_non_null(strstr(proc.err, "the build and canary logs are kept in"));
    expect_no_worktrees(w);
}

/* A build's last line of output in the reason is shown on the terminal with its control
 * characters as '?' (a title-setting escape reached the terminal raw), as the summary does. */
static void test_bisect__a_builds_output_reaches_the_terminal_escaped(void **state)
{
    struct cg_workdir *w = *state;
    make_repo(w, "p='--step-us 1000'; [ $i -ge 11 ] && p='--step-us 1000 --many-names 1'",
              "[ $i -eq 7 ] && b='printf \"\\033]0;pwn\\007broken build\"; exit 1'");
    const char *extra[] = {"--metric", "ranges", "--build", "sh build.sh", NULL};
    assert_int_equal(bisect(w, extra), 0);
    const char *line = strstr(proc.err, "skipped: the build failed (exit 1): ");
    assert_non_null(line);
    assert_non_null(strstr(line, "broken build"));
    if (strchr(proc.err, '\033') != NULL || strchr(proc.err, '\007') != NULL)
        fail_msg("a control character reached the terminal:\n%s", line);
}

/* Its output read by a reader that stops early (`2>&1 | head -c 1`): the write's SIGPIPE ended the
 * tool on the spot, leaving the good end's worktree registered and the worktrees' directory;
 * it is an interrupt now, and everything is removed. */
static void test_bisect__a_reader_that_stops_early_leaves_no_worktree(void **state)
{
    struct cg_workdir *w = *state;
    make_repo(w, "p='--step-us 1000'; [ $i -ge 11 ] && p='--step-us 1000 --many-names 1'", ":");
    char script[2048];
    snprintf(script, sizeof(script),
             "mkdir -p tmp && TMPDIR=\"$PWD/tmp\" NVTX_CANARY='%s' '%s' bisect --repo repo"
             " --good %s --bad HEAD --steps 10 --warmup 2 --metric ranges -- ./canary.sh"
             " 2>&1 | head -c 1 > /dev/null; ls tmp",
             CANARY, CG_TOOL_PATH, sha(w, 0));
    const char *args[] = {"-c", script, NULL};
    assert_int_equal(cg_workdir_run(w, "/bin/bash", NULL, args, &proc), 0);
    if (proc.out[0] != '\0')
        fail_msg("left in TMPDIR:\n%s", proc.out);
    expect_no_worktrees(w);
}

static void test_bisect__nothing_regressed_stops_after_the_ends(void **state)
{
    struct cg_workdir *w = *state;
    make_repo(w, "p='--step-us 1000'", ":");
    const char *extra[] = {"--metric", "ranges", NULL};
    assert_int_equal(bisect(w, extra), 0);
    size_t probes;
    int runs, second;
    assert_int_equal(first_bad(w, &probes, &runs, &second), -1);
    assert_int_equal(probes, 2);
    assert_non_null(strstr(proc.out, "nothing to find"));
}

/* Two steps of +10% each (commits 5 and 12), on 4 ms steps: both named. (+6% steps, as the
 * issue put them, are found in the bench's model, bench/RESULTS.md; on a loaded 2-core CI
 * machine the second +6% step of 2 ms steps was missed once in a whole-suite run; then the
 * second +10% step here, once: a probe at the first step's level read "like bad" against the
 * bad end's wide interval, bench/RESULTS.md, "The bad end on all its looks".) */
static void test_bisect__two_steps_are_both_named(void **state)
{
    struct cg_workdir *w = *state;
    make_repo(w,
              "us=4000; [ $i -ge 5 ] && us=4400; [ $i -ge 12 ] && us=4840;"
              " p=\"--step-us $us --noise-pct 3 --drift-pct 1\"",
              ":");
    const char *extra[] = {"--budget", "120", NULL};
    int rc = bisect(w, extra);
    size_t probes;
    int runs, second;
    if (rc != 0)
        fail_msg("exit %d:\n%s\n%s", rc, proc.out, proc.err);
    int idx = first_bad(w, &probes, &runs, &second);
    if (idx != 5 || second != 12)
        fail_msg("steps at %d and %d:\n%s", idx, second, proc.out);
}

/* Makes a repository of 2.4 s runs (12 steps of 0.2 s), starts a bisection of it with
 * TMPDIR=tmp (made here, its path into tmp[300]) and its output to /dev/null, and sends it sig
 * 1.5 s later, while its ends are being measured. The wait status. */
static int bisect_until_signal(const struct cg_workdir *w, int sig, char tmp[300])
{
    make_repo(w, "p='--step-us 200000'", ":");
    char good[64], bad[64], repo[300];
    snprintf(tmp, 300, "%s", cg_workdir_in(w, "tmp"));
    snprintf(repo, sizeof(repo), "%s", cg_workdir_in(w, "repo"));
    snprintf(good, sizeof(good), "%s", sha(w, 0));
    snprintf(bad, sizeof(bad), "%s", sha(w, 15));
    assert_int_equal(mkdir(tmp, 0700), 0);
    pid_t pid = fork();
    if (pid == 0) {
        setenv("TMPDIR", tmp, 1);
        setenv("NVTX_CANARY", CANARY, 1);
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 1);
        dup2(fd, 2);
        execl(CG_TOOL_PATH, CG_TOOL_PATH, "bisect", "--repo", repo, "--good", good, "--bad", bad,
              "--steps", "10", "--warmup", "2", "--build", "sleep 0.2", "--", "./canary.sh",
              (char *)NULL);
        _exit(127);
    }
    usleep(1500 * 1000);
    kill(pid, sig);
    int ws = 0;
    waitpid(pid, &ws, 0);
    return ws;
}

static void test_bisect__ctrl_c_leaves_no_worktree(void **state)
{
    struct cg_workdir *w = *state;
    char tmp[300];
    int ws = bisect_until_signal(w, SIGINT, tmp);
    assert_true(WIFEXITED(ws));
    assert_int_equal(WEXITSTATUS(ws), 3);
    expect_no_worktrees(w);
    DIR *d = opendir(tmp);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            fail_msg("'%s' is left in TMPDIR", e->d_name);
    }
    closedir(d);
}

/* A bisection killed with SIGKILL (an OOM killer, a CI runner's hard cancel) cleans up nothing:
 * its worktrees, with every commit's checkout and build, stayed in TMPDIR and registered in git
 * for ever. The next bisection under the same TMPDIR removes them (their owner is gone) and
 * git's records of them, and says so; a directory of kept logs (no owner) stays. */
static void test_bisect__a_killed_bisections_worktrees_are_removed_by_the_next(void **state)
{
    struct cg_workdir *w = *state;
    char tmp[300];
    bisect_until_signal(w, SIGKILL, tmp);
    const char *look[] = {
        "-c", "ls tmp; git -C repo worktree list --porcelain | grep -c '^worktree '", NULL};
    assert_int_equal(cg_workdir_run(w, "/bin/sh", NULL, look, &proc), 0);
    if (strstr(proc.out, "canary-gate-bisect.") == NULL || strstr(proc.out, "\n1\n") != NULL)
        fail_msg("the killed bisection left no worktree to clean:\n%s", proc.out);
    const char *plant[] = {"-c",
                           "mkdir tmp/canary-gate-bisect.kept00 && echo x > "
                           "tmp/canary-gate-bisect.kept00/abc.build.log",
                           NULL};
    assert_int_equal(cg_workdir_run(w, "/bin/sh", NULL, plant, &proc), 0);
    /* the next one: its good end's build fails at once (exit 2, its reason the build's last line)
     */
    const char *extra[] = {"--metric", "ranges", "--build", "exit 1", NULL};
    assert_int_equal(bisect(w, extra), 2);
    assert_non_null(strstr(proc.err, "of bisections no longer running"));
    expect_no_worktrees(w);
    assert_true(cg_workdir_exists(w, "tmp/canary-gate-bisect.kept00/abc.build.log"));
    const char *count[] = {"-c", "ls tmp | grep -c canary-gate-bisect", NULL};
    cg_workdir_run(w, "/bin/sh", NULL, count, &proc);
    assert_string_equal(proc.out, "1\n"); /* the planted logs alone */
}

/* A budget that ends the bad end's looks early: with nothing regressed the bisection could not
 * decide (exit 3), it does not say "nothing to find" on half its pairs; with a regression the
 * bad end's cut is said (stderr, report, JSON), since its interval is wider than the search
 * assumes. One second is spent by the first look alone (12 runs of 0.24 s). */
static void test_bisect__a_budget_that_cuts_the_bad_end_short_is_said(void **state)
{
    struct cg_workdir *w = *state;
    /* runs of 0.24 s; the bad end faster, so that it never differs by chance (identical ends
     * would at the first look's alpha, 3% of the time) */
    make_repo(w, "us=20000; [ $i -ge 11 ] && us=16000; p=\"--step-us $us --noise-pct 3\"", ":");
    const char *extra[] = {"--budget", "1", NULL};
    int rc = bisect(w, extra);
    if (rc != 3)
        fail_msg("exit %d, 3 expected:\n%s\n%s", rc, proc.out, proc.err);
    assert_non_null(strstr(proc.out, "could not decide: the budget ended the bad end's looks"));
    assert_null(strstr(proc.out, "nothing to find"));
    assert_true(bad_end_cut(w));
    assert_int_equal(runs_of(w, 15), 6);

    const char *rm[] = {"-c", "rm -rf repo shas out.json out.md", NULL};
    assert_int_equal(cg_workdir_run(w, "/bin/sh", NULL, rm, &proc), 0);
    make_repo(w, "us=20000; [ $i -ge 11 ] && us=26000; p=\"--step-us $us --noise-pct 1\"", ":");
    rc = bisect(w, extra);
    if (rc != 3) /* the search's first probe does not fit the budget either */
        fail_msg("exit %d, 3 expected:\n%s\n%s", rc, proc.out, proc.err);
    assert_non_null(strstr(proc.err, "the budget leaves no time for the bad end's other looks"));
    assert_non_null(strstr(proc.out, "the budget cut the bad end's looks short (6 of 12 pairs)"));
    assert_non_null(strstr(cg_workdir_read(w, "out.md"), "The budget cut the bad end's looks"));
    assert_true(bad_end_cut(w));
}

/* The bad end's canary fails in its second look (its 8th run; commits from 11 on hold the file
 * 'crash', and a counter outside the worktrees counts their runs): a first look that already
 * differed is kept, and the cut said, not "the bad end cannot be measured" (exit 2). */
static void test_bisect__a_canary_failure_in_the_bad_ends_later_look_keeps_its_first(void **state)
{
    struct cg_workdir *w = *state;
    make_repo(w,
              "us=2000; [ $i -ge 11 ] && us=2600 && touch crash;"
              " p=\"--step-us $us --noise-pct 1\"",
              ":");
    const char *script[] = {"-c",
                            "cd repo && printf '#!/bin/sh\\nif [ -f crash ]; then n=$(cat "
                            "\"$COUNT\" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > "
                            "\"$COUNT\"; [ $n -eq 8 ] && exit 7; fi\\nexec \"$NVTX_CANARY\" "
                            "$(cat params)\\n' > canary.sh && git commit -qam 'count runs'"
                            " && git log --format=%H -1 > ../head",
                            NULL};
    assert_int_equal(cg_workdir_run(w, "/bin/sh", NULL, script, &proc), 0);
    char bad[64], count[300];
    snprintf(bad, sizeof(bad), "%.40s", cg_workdir_read(w, "head"));
    snprintf(count, sizeof(count), "COUNT=%s", cg_workdir_in(w, "count"));
    const char *extra[] = {NULL}, *env[] = {count, NULL};
    int rc = bisect_range(w, NULL, bad, extra, env);
    if (rc == 2) {
        size_t n = strlen(proc.err);
        fail_msg("exit 2: ...%s", proc.err + (n > 400 ? n - 400 : 0));
    }
    assert_non_null(strstr(proc.err, "the bad end's canary failed in its look 2"));
    assert_non_null(strstr(proc.out, "a canary failure cut the bad end's looks short (6 of 12"));
    assert_true(bad_end_cut(w));
    assert_int_equal(runs_of(w, 16), 6);
}

/* A range git cannot walk says what to do: --good and --bad swapped, a --good that reaches --bad
 * only through a merged branch (bisect walks --bad's first parents), and a shallow clone (a CI
 * checkout's default fetch depth of 1), where the good end is not there at all or its line is
 * cut. Each used to say only that good was not an ancestor, or not a commit. */
static void test_bisect__a_range_that_cannot_be_walked_says_what_to_do(void **state)
{
    struct cg_workdir *w = *state;
    make_repo(w, "p='--step-us 1000'", ":");
    const char *setup[] = {
        "-c",
        "set -e; cd repo; git checkout -q -b side HEAD~3; echo s > side; git add side;"
        " git commit -qm side; git checkout -q -; git merge -q --no-ff -m merge side;"
        " cd ..; git clone -q --depth 3 \"file://$PWD/repo\" shallow",
        NULL};
    assert_int_equal(cg_workdir_run(w, "/bin/sh", NULL, setup, &proc), 0);
    const char *swapped[] = {"bisect", "--repo", "repo", "--good", "HEAD",
                             "--bad",  "HEAD~3", "--",   "x",      NULL};
    assert_int_equal(cg_workdir_run(w, CG_TOOL_PATH, NULL, swapped, &proc), 2);
    assert_non_null(strstr(proc.err, "comes after --bad 'HEAD~3': swap them"));
    const char *merged[] = {"bisect", "--repo", "repo", "--good", "side",
                            "--bad",  "HEAD",   "--",   "x",      NULL};
    assert_int_equal(cg_workdir_run(w, CG_TOOL_PATH, NULL, merged, &proc), 2);
    assert_non_null(strstr(proc.err, "only through a merged branch"));
    const char *gone[] = {"bisect", "--repo", "shallow", "--good", sha(w, 0),
                          "--bad",  "HEAD",   "--",      "x",      NULL};
    assert_int_equal(cg_workdir_run(w, CG_TOOL_PATH, NULL, gone, &proc), 2);
    assert_non_null(strstr(proc.err, "is not a commit"));
    assert_non_null(strstr(proc.err, "the clone is shallow"));
    assert_non_null(strstr(proc.err, "fetch-depth: 0"));
    const char *nl = strchr(proc.err, '\n'); /* one line */
    assert_true(nl != NULL && nl[1] == '\0');
}

static void test_bisect__bad_input_is_one_line(void **state)
{
    struct cg_workdir *w = *state;
    make_repo(w, "p='--step-us 1000'", ":");
    const char *no_cmd[] = {"bisect", "--good", "HEAD~1", "--bad", "HEAD", NULL};
    assert_int_equal(cg_workdir_run(w, CG_TOOL_PATH, NULL, no_cmd, &proc), 2);
    assert_non_null(strstr(proc.err, "the canary's command is required"));
    const char *metric[] = {"bisect", "--good", "a", "--bad", "b", "--metric", "speed", "--",
                            "x", NULL};
    assert_int_equal(cg_workdir_run(w, CG_TOOL_PATH, NULL, metric, &proc), 2);
    assert_non_null(strstr(proc.err, "--metric 'speed'"));
    const char *nocommit[] = {"bisect", "--repo", "repo", "--good", "nosuch", "--bad", "HEAD",
                              "--", "x", NULL};
    assert_int_equal(cg_workdir_run(w, CG_TOOL_PATH, NULL, nocommit, &proc), 2);
    assert_non_null(strstr(proc.err, "'nosuch' is not a commit"));
    const char *reversed[] = {"bisect", "--repo", "repo", "--good", "HEAD", "--bad", "HEAD~3",
                              "--", "x", NULL};
    assert_int_equal(cg_workdir_run(w, CG_TOOL_PATH, NULL, reversed, &proc), 2);
    assert_non_null(strstr(proc.err, "swap them"));
    /* a timing metric on too few pairs: one pair compares steps within one process (identical
     * commits were named "first bad" in 8 of 30 bisections); the signed-rank test of 4 pairs
     * cannot reach alpha 0.05 (1/16 at best). Counts take one run. */
    const char *few[][12] = {
        {"bisect", "--repo", "repo", "--good", "HEAD~3", "--bad", "HEAD", "--runs", "1",
         "--max-runs", "1", NULL},
        {"bisect", "--repo", "repo", "--good", "HEAD~3", "--bad", "HEAD", "--runs", "2", NULL}};
    for (size_t k = 0; k < 2; k++) {
        const char *args[16];
        size_t n = 0;
        while (few[k][n] != NULL) {
            args[n] = few[k][n];
            n++;
        }
        args[n++] = "--";
        args[n++] = "./canary.sh";
        args[n] = NULL;
        assert_int_equal(cg_workdir_run(w, CG_TOOL_PATH, NULL, args, &proc), 2);
        assert_non_null(strstr(proc.err, "a timing metric needs 3 pairs a look at least"));
    }
    const char *level[] = {"bisect", "--repo",   "repo",           "--good", "HEAD~3",
                           "--bad",  "HEAD",     "--runs",         "4",      "--max-runs",
                           "4",      "--metric", "step_time_mean", "--",     "./canary.sh",
                           NULL};
    assert_int_equal(cg_workdir_run(w, CG_TOOL_PATH, NULL, level, &proc), 2);
    assert_non_null(strstr(proc.err, "cannot reach"));
}

/* --max-runs below --runs was raised to --runs without a word, and a later message quoted the
 * raised value as the user's; 'ab' and the main command refuse it, and so does bisect of a
 * timing metric, also against --runs' default of 6. A count takes one run per commit and uses
 * neither: its --max-runs 1 (refused as "below --runs 6 (its default)") is taken, as it was. */
static void test_bisect__max_runs_below_runs_is_refused(void **state)
{
    struct cg_workdir *w = *state;
    make_repo(w, "p='--step-us 1000'", ":");
    char tmp[320]; /* were it run, its logs would stay in the test's directory */
    snprintf(tmp, sizeof(tmp), "TMPDIR=%s", cg_workdir_in(w, "."));
    const char *env[] = {tmp, NULL};
    const char *given[] = {"bisect", "--repo", "repo",        "--good", "HEAD~3",
                           "--bad",  "HEAD",   "--runs",      "3",      "--max-runs",
                           "1",      "--",     "./canary.sh", NULL};
    assert_int_equal(cg_workdir_run(w, CG_TOOL_PATH, env, given, &proc), 2);
    if (strstr(proc.err, "--max-runs 1 is below --runs 3") == NULL)
        fail_msg("no refusal in:\n%s", proc.err);
    const char *nl = strchr(proc.err, '\n'); /* one line */
    assert_true(nl != NULL && nl[1] == '\0');
    const char *dflt[] = {"bisect", "--repo",     "repo", "--good", "HEAD~3",      "--bad",
                          "HEAD",   "--max-runs", "4",    "--",     "./canary.sh", NULL};
    assert_int_equal(cg_workdir_run(w, CG_TOOL_PATH, env, dflt, &proc), 2);
    if (strstr(proc.err, "--max-runs 4 is below --runs 6 (its default)") == NULL)
        fail_msg("no refusal in:\n%s", proc.err);
    /* a count: one run per commit, whatever --runs and --max-runs say */
    static const char *const count[][7] = {
        {"--metric", "ranges", "--max-runs", "1", NULL},
        {"--metric", "ranges", "--runs", "3", "--max-runs", "1", NULL}};
    for (size_t k = 0; k < 2; k++) {
        int rc = bisect(w, count[k]);
        if (rc != 0 || strstr(proc.err, "ranges, one run per commit") == NULL)
            fail_msg("case %zu: exit %d, a bisection expected:\n%s", k, rc, proc.err);
    }
}

/* A repository of SHA-256 object names (git init --object-format=sha256): every commit was
 * refused as "not a commit", its 64 hex digits taken for a malformed 40. */
static void test_bisect__a_sha256_repository_is_bisected(void **state)
{
    struct cg_workdir *w = *state;
    make_repo_with(w, "--object-format=sha256",
                   "p='--step-us 1000'; [ $i -ge 11 ] && p='--step-us 1000 --many-names 1'", ":");
    char full[80]; /* the result names commits by their full 64 digits */
    const char *head = cg_workdir_read(w, "shas") + 15 * 65;
    assert_int_equal(strspn(head, "0123456789abcdef"), 64);
    snprintf(full, sizeof(full), "\"%.64s\"", head);
    const char *extra[] = {"--metric", "ranges", NULL};
    expect_commit_11(w, bisect_range(w, "HEAD~15", "HEAD", extra, NULL));
    assert_non_null(strstr(cg_workdir_read(w, "out.json"), full));
}

/* Runs bisect of commits 0 to bad, a count, from the workdir with the canary's words and
 * --build (NULL: none); worktrees and logs under the workdir. */
static int bisect_canary(const struct cg_workdir *w, int bad, const char *build,
                         const char *const *canary)
{
    const char *args[32];
    size_t k = 0;
    char g[64], b[64], tmp[320];
    snprintf(g, sizeof(g), "%s", sha(w, 0));
    snprintf(b, sizeof(b), "%s", sha(w, bad));
    snprintf(tmp, sizeof(tmp), "TMPDIR=%s", cg_workdir_in(w, "."));
    const char *fixed[] = {"bisect", "--repo",   "repo",     "--good", g,
                           "--bad",  b,          "--metric", "ranges", "--steps",
                           "10",     "--warmup", "2",        "--json", "out.json"};
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        args[k++] = fixed[i];
    if (build != NULL) {
        args[k++] = "--build";
        args[k++] = build;
    }
    args[k++] = "--";
    for (size_t i = 0; canary[i] != NULL; i++)
        args[k++] = canary[i];
    args[k] = NULL;
    const char *env[] = {"NVTX_CANARY=" CANARY, tmp, NULL};
    return cg_workdir_run(w, CG_TOOL_PATH, env, args, &proc);
}

/* The canary or --build naming the user's checkout by an absolute path ('$PWD/canary.sh', as CI
 * scripts write '$GITHUB_WORKSPACE/train.py'): every commit ran the checkout's, both ends
 * measured alike, and bisect said "nothing to find" (exit 0) of a real regression. A path to
 * what the commits hold is refused (exit 2, one line naming it and what to write instead), also
 * through a symbolic link, after '=' and inside --build's command line; a path to what they do
 * not hold (data of the checkout's) is run, with a warning. */
static void test_bisect__a_canary_in_the_users_checkout_is_refused(void **state)
{
    struct cg_workdir *w = *state;
    make_repo(w, "p='--step-us 1000'; [ $i -ge 11 ] && p='--step-us 1000 --many-names 1'", ":");
    const char *setup[] = {"-c", "ln -s repo link && echo data > repo/data.txt", NULL};
    assert_int_equal(cg_workdir_run(w, "/bin/sh", NULL, setup, &proc), 0);
    char script[300], linked[300], opt[320], build[400], data[300], top[300];
    snprintf(top, sizeof(top), "%s", cg_workdir_in(w, "repo"));
    snprintf(script, sizeof(script), "%s", cg_workdir_in(w, "repo/canary.sh"));
    snprintf(linked, sizeof(linked), "%s", cg_workdir_in(w, "link/canary.sh"));
    snprintf(opt, sizeof(opt), "--config=%s", cg_workdir_in(w, "repo/params"));
    snprintf(build, sizeof(build), "cd '%s' && sh build.sh", top);
    snprintf(data, sizeof(data), "%s", cg_workdir_in(w, "repo/data.txt"));
    struct {
        const char *build, *canary[3], *named, *instead;
    } refused[] = {
        {NULL, {script, NULL}, script, "'./canary.sh'"},
        {NULL, {linked, NULL}, linked, "'./canary.sh'"},
        {NULL, {"./canary.sh", opt, NULL}, strchr(opt, '=') + 1, "'./params'"},
        {build, {"./canary.sh", NULL}, top, "'.'"},
    };
    for (size_t k = 0; k < sizeof(refused) / sizeof(refused[0]); k++) {
        int rc = bisect_canary(w, 15, refused[k].build, refused[k].canary);
        char named[400];
        snprintf(named, sizeof(named), "%s '%s' is your checkout's",
                 k == 3 ? "--build's" : "the canary's", refused[k].named);
        if (rc != 2 || strstr(proc.err, named) == NULL ||
            strstr(proc.err, refused[k].instead) == NULL)
            fail_msg("case %zu: exit %d, 2 expected, naming \"%s\" and %s:\n%s", k, rc, named,
                     refused[k].instead, proc.err);
        const char *nl = strchr(proc.err, '\n'); /* one line */
        assert_true(nl != NULL && nl[1] == '\0');
    }
    /* data the commits do not hold: run, with a warning naming it */
    const char *with_data[] = {"./canary.sh", data, NULL};
    int rc = bisect_canary(w, 15, NULL, with_data);
    if (rc != 0 || strstr(proc.err, "warning: the canary's '") == NULL ||
        strstr(proc.err, "data.txt' is in your checkout") == NULL)
        fail_msg("exit %d, 0 and a warning expected:\n%s", rc, proc.err);
    expect_commit_11(w, rc);
    /* and "nothing to find" recalls it */
    rc = bisect_canary(w, 5, NULL, with_data);
    if (rc != 0 || strstr(proc.err, "note: every commit used your checkout's '") == NULL)
        fail_msg("exit %d, 0 and a note expected:\n%s", rc, proc.err);
}

/* A path into the checkout inside a shell's command string ('bash -c "exec $PWD/canary.sh"',
 * the usual way to give a canary with a 'cd', a pipe or a variable) was never looked for: every
 * commit ran the checkout's canary and bisect said "nothing to find" (exit 0, no warning). An
 * argument is now also read as a shell line's words (as sh reads them: a quoted or escaped blank
 * stays in its word), unless it names what exists as it stands ('.../my data.txt'); relative
 * commands are run as before, without a warning. */
static void test_bisect__a_checkout_path_in_a_shell_command_is_refused(void **state)
{
    struct cg_workdir *w = *state;
    make_repo(w, "p='--step-us 1000'; [ $i -ge 11 ] && p='--step-us 1000 --many-names 1'", ":");
    /* the checkout also reached through a path with a blank ('my link') */
    const char *setup[] = {"-c", "echo data > 'repo/my data.txt' && ln -s repo 'my link'", NULL};
    assert_int_equal(cg_workdir_run(w, "/bin/sh", NULL, setup, &proc), 0);
    char top[300], script[300], exec_line[400], cd_line[400], env_line[400], semi[400];
    char data[300], blank[300], quoted[400], escaped[400], glued[400], option[320];
    snprintf(top, sizeof(top), "%s", cg_workdir_in(w, "repo"));
    snprintf(script, sizeof(script), "%s", cg_workdir_in(w, "repo/canary.sh"));
    snprintf(exec_line, sizeof(exec_line), "exec %s", script);
    snprintf(cd_line, sizeof(cd_line), "cd \"%s\" && ./canary.sh | cat", top);
    snprintf(env_line, sizeof(env_line), "X=1 %s --quiet", script);
    snprintf(semi, sizeof(semi), "%s;true", script);
    snprintf(data, sizeof(data), "%s", cg_workdir_in(w, "repo/my data.txt"));
    snprintf(blank, sizeof(blank), "%s", cg_workdir_in(w, "my link/canary.sh"));
    snprintf(quoted, sizeof(quoted), "exec '%s' --quiet", blank);
    snprintf(glued, sizeof(glued), "exec python3 -X\"%s\" c.py", script);
    snprintf(option, sizeof(option), "-C%s", top);
    size_t e = (size_t)snprintf(escaped, sizeof(escaped), "exec ");
    for (const char *c = blank; *c != '\0' && e + 2 < sizeof(escaped); c++) {
        if (*c == ' ')
            escaped[e++] = '\\';
        escaped[e++] = *c;
    }
    escaped[e] = '\0';
    struct {
        const char *canary[6], *named, *instead;
    } refused[] = {
        {{"bash", "-c", exec_line, NULL}, script, "'./canary.sh'"},
        {{"sh", "-c", cd_line, NULL}, top, "'.'"},
        {{"env", "X=1", "sh", "-c", env_line, NULL}, script, "'./canary.sh'"},
        {{"sh", "-c", semi, NULL}, script, "'./canary.sh'"},
        /* a path with a blank, quoted or escaped in the shell's string: read whole (it was cut
         * at the blank: '.../my', outside the checkout, and every commit ran the checkout's) */
        {{"sh", "-c", quoted, NULL}, blank, "'./canary.sh'"},
        {{"sh", "-c", escaped, NULL}, blank, "'./canary.sh'"},
        /* a path glued to an option, quoted in the shell's string or as its own word (once
         * quotes were removed, '-X/...' was no path: every commit ran the checkout's) */
        {{"sh", "-c", glued, NULL}, script, "'./canary.sh'"},
        {{"./canary.sh", option, NULL}, top, "'.'"},
    };
    for (size_t k = 0; k < sizeof(refused) / sizeof(refused[0]); k++) {
        int rc = bisect_canary(w, 15, NULL, refused[k].canary);
        char named[400];
        snprintf(named, sizeof(named), "the canary's '%s' is your checkout's", refused[k].named);
        if (rc != 2 || strstr(proc.err, named) == NULL ||
            strstr(proc.err, refused[k].instead) == NULL)
            fail_msg("case %zu: exit %d, 2 expected, naming \"%s\" and %s:\n%s", k, rc, named,
                     refused[k].instead, proc.err);
        const char *nl = strchr(proc.err, '\n'); /* one line */
        assert_true(nl != NULL && nl[1] == '\0');
    }
    /* a relative command in a shell's string: run, no warning */
    const char *relative[] = {"bash", "-c", "exec ./canary.sh", NULL};
    int rc = bisect_canary(w, 15, NULL, relative);
    if (rc != 0 || strstr(proc.err, "warning") != NULL)
        fail_msg("exit %d, 0 and no warning expected:\n%s", rc, proc.err);
    expect_commit_11(w, rc);
    /* a file of the checkout's whose name holds a blank: named whole, as data */
    const char *with_data[] = {"./canary.sh", data, NULL};
    rc = bisect_canary(w, 15, NULL, with_data);
    char warned[400];
    snprintf(warned, sizeof(warned), "warning: the canary's '%s' is in your checkout", data);
    if (rc != 0 || strstr(proc.err, warned) == NULL)
        fail_msg("exit %d, 0 and \"%s\" expected:\n%s", rc, warned, proc.err);
    expect_commit_11(w, rc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_bisect__names_commit_11_of_a_ten_percent_slowdown,
                                        cg_workdir_setup, cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(test_bisect__a_count_decides_with_one_run_per_commit,
                                        cg_workdir_setup, cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(test_bisect__a_count_added_every_third_step_is_found,
                                        cg_workdir_setup, cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(test_bisect__a_count_that_differs_between_runs_is_refused,
                                        cg_workdir_setup, cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(
            test_bisect__a_commit_whose_steps_are_defined_differently_is_skipped, cg_workdir_setup,
            cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(
            test_bisect__a_bad_end_whose_steps_are_defined_differently_is_refused, cg_workdir_setup,
            cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(test_bisect__a_commit_that_does_not_build_is_skipped,
                                        cg_workdir_setup, cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(test_bisect__a_commit_that_cannot_be_checked_out_is_skipped,
                                        cg_workdir_setup, cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(test_bisect__a_relative_tmpdir_stays_out_of_the_repository,
                                        cg_workdir_setup, cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(test_bisect__a_skipped_commits_log_is_kept,
                                        cg_workdir_setup, cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(test_bisect__a_builds_output_reaches_the_terminal_escaped,
                                        cg_workdir_setup, cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(test_bisect__a_reader_that_stops_early_leaves_no_worktree,
                                        cg_workdir_setup, cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(test_bisect__nothing_regressed_stops_after_the_ends,
                                        cg_workdir_setup, cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(test_bisect__two_steps_are_both_named, cg_workdir_setup,
                                        cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(
            test_bisect__a_killed_bisections_worktrees_are_removed_by_the_next, cg_workdir_setup,
            cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(test_bisect__ctrl_c_leaves_no_worktree, cg_workdir_setup,
                                        cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(test_bisect__a_budget_that_cuts_the_bad_end_short_is_said,
                                        cg_workdir_setup, cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(
            test_bisect__a_canary_failure_in_the_bad_ends_later_look_keeps_its_first,
            cg_workdir_setup, cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(test_bisect__a_range_that_cannot_be_walked_says_what_to_do,
                                        cg_workdir_setup, cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(test_bisect__bad_input_is_one_line, cg_workdir_setup,
                                        cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(test_bisect__max_runs_below_runs_is_refused,
                                        cg_workdir_setup, cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(test_bisect__a_sha256_repository_is_bisected,
                                        cg_workdir_setup, cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(test_bisect__a_canary_in_the_users_checkout_is_refused,
                                        cg_workdir_setup, cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(test_bisect__a_checkout_path_in_a_shell_command_is_refused,
                                        cg_workdir_setup, cg_workdir_teardown),
    };
    if (getenv("CG_TEST_FILTER") != NULL) /* one case while working on it: a glob of names */
        cmocka_set_test_filter(getenv("CG_TEST_FILTER"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
