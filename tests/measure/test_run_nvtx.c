/*
 * test_run_nvtx: `canary-gate run` end to end on this machine with the NVTX test canary
 * (tests/canaries/nvtx_canary.c): step times, tokens, nested and threaded ranges, domains,
 * marking styles, unbalanced ranges, the step loss, and every way a canary can fail (exit 3, one
 * clear line). Some tests run a canary with the injection library directly (the launcher's
 * environment set by hand) to look at the shards it leaves.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_setaffinity */
#endif
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "artifact.h"
#include "shard.h"

#include <dirent.h>
#include <math.h>
#include <sched.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CANARY CG_BINARY_DIR "/tests/canaries/nvtx-canary"
#define TRAIN CG_BINARY_DIR "/canary-train"
#define INJECT_LIB CG_BINARY_DIR "/libcanary-inject.so"
#define HELPER CG_BINARY_DIR "/tests/faults/fault-helper"

struct result {
    int exit_code;
    char err[8192];
    double wall_s;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Runs canary-gate with argv (NULL-terminated, without the program) and the extra environment
 * entries env ("NAME=value", NULL-terminated, or NULL), stderr captured. */
static void run_tool_env(const char *const *args, const char *const *env, struct result *r)
{
    char errpath[] = "run-stderr-XXXXXX";
    int fd = mkstemp(errpath);
    assert_true(fd >= 0);
    const char *argv[64] = {CG_TOOL_PATH};
    size_t n = 1;
    for (; args[n - 1] != NULL && n < 63; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    double t0 = now_s();
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fd, 2);
        for (size_t i = 0; env != NULL && env[i] != NULL; i++)
            putenv((char *)env[i]);
        execv(CG_TOOL_PATH, (char *const *)argv);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    r->wall_s = now_s() - t0;
    r->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    ssize_t got = pread(fd, r->err, sizeof(r->err) - 1, 0);
    r->err[got > 0 ? got : 0] = '\0';
    close(fd);
    unlink(errpath);
}

/* Runs canary-gate with argv (NULL-terminated, without the program), stderr captured. */
static void run_tool(const char *const *args, struct result *r)
{
    run_tool_env(args, NULL, r);
}

static void load(const char *path, struct cg_artifact *a)
{
    struct cg_err err;
    cg_err_init(&err);
    int rc = cg_artifact_load(path, a, &err);
    if (rc != 0)
        fail_msg("%s", err.msg);
}

static const struct cg_op *find_op(const struct cg_run *r, const char *name)
{
    for (size_t i = 0; i < r->n_ops; i++)
        if (strcmp(r->ops[i].name, name) == 0)
            return &r->ops[i];
    return NULL;
}

/* Runs argv (NULL-terminated, argv[0] the program) with the injection library loaded through NVTX
 * and shards written to a new directory (returned in dir, cap bytes), warm-up 0, its stdout in
 * out (cap bytes). Extra environment: env (NULL-terminated "NAME=value" strings, or NULL).
 * Returns the exit status, or 128 + the signal. */
static int run_direct(const char *const *argv, const char *const *env, char *dir, size_t dcap,
                      char *out, size_t ocap)
{
    snprintf(dir, dcap, "/tmp/cg-direct-XXXXXX");
    assert_non_null(mkdtemp(dir));
    char outpath[] = "/tmp/cg-direct-out-XXXXXX";
    int fd = mkstemp(outpath);
    assert_true(fd >= 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("NVTX_INJECTION64_PATH", INJECT_LIB, 1);
        setenv("CANARY_GATE_SHARD_DIR", dir, 1);
        setenv("CANARY_GATE_WARMUP", "0", 1);
        for (size_t i = 0; env != NULL && env[i] != NULL; i++)
            putenv((char *)env[i]);
        dup2(fd, 1);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    ssize_t got = pread(fd, out, ocap - 1, 0);
    out[got > 0 ? got : 0] = '\0';
    close(fd);
    unlink(outpath);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Loads every shard of dir (cg_shard_load_dir), then removes dir and its files. */
static void load_shards(const char *dir, struct cg_shard **shards, size_t *n)
{
    struct cg_err err;
    cg_err_init(&err);
    if (cg_shard_load_dir(dir, shards, n, &err) != 0)
        fail_msg("%s", err.msg);
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char path[512];
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

static void test_run__step_times_tokens_and_nested_ranges(void **state)
{
    (void)state;
    struct result r;
    struct cg_artifact a;
    /* --let-finish: the canary's own last line is checked below */
    const char *args[] = {"run", "--out", "nvtx-basic.json", "--runs", "2", "--steps", "4",
                          "--warmup", "1", "--let-finish", "--", CANARY, "--steps", "5",
                          "--step-ms", "20", "--tokens", "64", "--nested", NULL};
    run_tool(args, &r);
    assert_int_equal(r.exit_code, 0);
    load("nvtx-basic.json", &a);
    assert_int_equal(a.n_runs, 2);
    assert_false(a.gpu_available);
    assert_non_null(a.gpu_reason);
    assert_int_equal(a.settings.steps, 4);
    assert_int_equal(a.settings.warmup, 1);
    assert_string_equal(a.settings.step_range, "step");
    assert_non_null(a.env.canary_hash);
    assert_string_equal(a.env.canary_command[0], CANARY);
    for (size_t i = 0; i < a.n_runs; i++) {
        const struct cg_run *run = &a.runs[i];
        assert_int_equal(run->n_steps, 4);
        for (size_t k = 0; k < run->n_steps; k++) {
            assert_true(run->steps[k].wall_ns >= 19500000);
            assert_true(run->steps[k].wall_ns < 10000000000); /* a sleep can overrun on a loaded machine; 10 s is a broken clock */
            assert_int_equal(run->steps[k].tokens, 64);
            assert_int_equal(run->steps[k].gpu_busy_ns, -1);
        }
        assert_true(run->summary.tokens_per_sec > 64 / 0.08 && run->summary.tokens_per_sec < 64 / 0.0195);
        assert_true(run->summary.peak_host_rss_bytes > 0);
        assert_int_equal(run->summary.peak_device_bytes, -1);
        const struct cg_op *fw = find_op(run, "forward");
        const struct cg_op *bw = find_op(run, "backward");
        assert_non_null(fw);
        assert_non_null(bw);
        assert_int_equal(fw->kind, CG_OP_RANGE);
        assert_int_equal(fw->calls, 4); /* the warm-up step's ranges are not counted */
        assert_int_equal(bw->calls, 4);
        assert_true(fw->total_ns >= 4 * 9500000 && fw->total_ns < 4 * 10000000000LL);
    }
    cg_artifact_release(&a);
    FILE *f = fopen("nvtx-basic.log", "r");
    assert_non_null(f);
    char buf[4096];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    assert_non_null(strstr(buf, "done 5 steps"));
    unlink("nvtx-basic.json");
    unlink("nvtx-basic.log");
}

static void test_run__ranges_from_threads_are_ops(void **state)
{
    (void)state;
    struct result r;
    struct cg_artifact a;
    const char *args[] = {"run", "--out", "nvtx-threads.json", "--runs", "1", "--steps", "3",
                          "--warmup", "0", "--", CANARY, "--steps", "3", "--step-ms", "2",
                          "--threads", "8", NULL};
    run_tool(args, &r);
    assert_int_equal(r.exit_code, 0);
    load("nvtx-threads.json", &a);
    const struct cg_op *w = find_op(&a.runs[0], "worker");
    assert_non_null(w);
    assert_int_equal(w->calls, 24);
    cg_artifact_release(&a);
    unlink("nvtx-threads.json");
    unlink("nvtx-threads.log");
}

/* Issue 37, item 9: "step" ranges nested in a step, or of a side thread, are no steps: the run
 * measures the first step's thread's steps, counts the others and says so. */
static void test_run__stray_step_ranges_are_counted_never_steps(void **state)
{
    (void)state;
    const char *modes[] = {"nested", "thread"};
    for (int m = 0; m < 2; m++) {
        struct result r;
        struct cg_artifact a;
        const char *args[] = {"run", "--out", "nvtx-stray.json", "--runs", "1", "--steps", "4",
                              "--warmup", "1", "--", CANARY, "--steps", "5", "--step-ms", "5",
                              "--stray-steps", modes[m], NULL};
        run_tool(args, &r);
        if (r.exit_code != 0)
            fail_msg("%s: exit %d: %s", modes[m], r.exit_code, r.err);
        load("nvtx-stray.json", &a);
        const struct cg_run *run = &a.runs[0];
        assert_int_equal(run->n_steps, 4);
        for (size_t k = 0; k < run->n_steps; k++)
            assert_true(run->steps[k].wall_ns >= (m == 0 ? 6900000 : 4900000));
        const char *said = m == 0 ? "'step' ranges nested in a step: counted, never measured as "
                                    "steps"
                                  : "'step' ranges on threads other than the first step's: "
                                    "counted, never measured as steps";
        if (m == 0) {
            assert_true(run->stray_steps_nested >= 8); /* 2 a step, the stopped step's maybe */
            assert_int_equal(run->stray_steps_other_threads, 0);
        } else {
            assert_int_equal(run->stray_steps_nested, 0);
            assert_true(run->stray_steps_other_threads >= 1);
        }
        bool warned = false;
        for (size_t k = 0; k < run->n_warnings; k++)
            warned |= strcmp(run->warnings[k], said) == 0;
        assert_true(warned);
        if (strstr(r.err, said) == NULL)
            fail_msg("%s: the terminal does not say it: %s", modes[m], r.err);
        cg_artifact_release(&a);
        unlink("nvtx-stray.json");
        unlink("nvtx-stray.log");
    }
}

static void test_run__other_domains_never_mark_steps(void **state)
{
    (void)state;
    struct result r;
    /* 3 real steps and 3 "step" ranges in domain NCCL: 3 + 3 asked is too many */
    const char *args[] = {"run", "--out", "nvtx-domain.json", "--runs", "1", "--steps", "3",
                          "--warmup", "3", "--", CANARY, "--steps", "3", "--step-ms", "1",
                          "--other-domain", NULL};
    run_tool(args, &r);
    assert_int_equal(r.exit_code, 3);
    assert_non_null(strstr(r.err, "marked 3 steps"));
    unlink("nvtx-domain.log");
}

static void test_run__wide_registered_and_start_end_steps(void **state)
{
    (void)state;
    static const char *const modes[] = {"wide", "registered", "start-end"};
    for (size_t m = 0; m < 3; m++) {
        struct result r;
        struct cg_artifact a;
        const char *args[] = {"run", "--out", "nvtx-mode.json", "--runs", "1", "--steps", "3",
                              "--warmup", "1", "--tokens-per-step", "10", "--", CANARY,
                              "--steps", "4", "--step-ms", "5", "--mode", modes[m], NULL};
        run_tool(args, &r);
        if (r.exit_code != 0)
            fail_msg("mode %s: %s", modes[m], r.err);
        load("nvtx-mode.json", &a);
        assert_int_equal(a.runs[0].n_steps, 3);
        assert_int_equal(a.runs[0].steps[0].tokens, 10); /* no payload: --tokens-per-step */
        assert_true(a.runs[0].steps[0].wall_ns >= 4500000);
        cg_artifact_release(&a);
    }
    unlink("nvtx-mode.json");
    unlink("nvtx-mode.log");
}

static void test_run__unbalanced_ranges_are_harmless(void **state)
{
    (void)state;
    struct result r;
    struct cg_artifact a;
    const char *args[] = {"run", "--out", "nvtx-unbal.json", "--runs", "1", "--steps", "3",
                          "--warmup", "0", "--", CANARY, "--steps", "3", "--step-ms", "2",
                          "--unbalanced", "--nested", NULL};
    run_tool(args, &r);
    assert_int_equal(r.exit_code, 0);
    load("nvtx-unbal.json", &a);
    assert_int_equal(a.runs[0].n_steps, 3);
    cg_artifact_release(&a);
    unlink("nvtx-unbal.json");
    unlink("nvtx-unbal.log");
}

static void test_run__crash_keeps_steps_and_exits_3(void **state)
{
    (void)state;
    struct result r;
    const char *args[] = {"run", "--out", "nvtx-crash.json", "--runs", "1", "--steps", "5",
                          "--warmup", "0", "--", CANARY, "--steps", "5", "--step-ms", "2",
                          "--crash-at", "3", NULL};
    run_tool(args, &r);
    assert_int_equal(r.exit_code, 3);
    assert_non_null(strstr(r.err, "signal 6"));
    assert_non_null(strstr(r.err, "after 3 steps"));
    assert_non_null(strstr(r.err, "nvtx-crash.log"));
    assert_int_equal(access("nvtx-crash.json", F_OK), -1);
    unlink("nvtx-crash.log");
}

static void test_run__crash_leaves_its_steps_in_the_shard(void **state)
{
    (void)state;
    char dir[64], out[256];
    const char *argv[] = {CANARY, "--steps", "6", "--step-ms", "1", "--crash-at", "4", NULL};
    int code = run_direct(argv, NULL, dir, sizeof(dir), out, sizeof(out));
    assert_int_equal(code, 128 + 6); /* SIGABRT */
    struct cg_shard *sh = NULL;
    size_t n = 0;
    load_shards(dir, &sh, &n);
    assert_int_equal(n, 1); /* the .part file the library appended to as the canary ran */
    assert_false(sh[0].complete);
    struct cg_shard_status st;
    cg_shard_status(sh, n, &st);
    assert_int_equal(st.steps_seen, 4);
    for (size_t k = 0; k < 4; k++)
        assert_true(sh[0].steps[k].seen && sh[0].steps[k].wall_ns >= 500000);
    cg_shard_free_all(sh, n);
}

/* A trace window the shard reader would refuse (a step index at CG_MAX_STEP_INDEX or beyond,
 * warm-up included) is not traced by the library: the shard stays readable. The largest window
 * within the limit is traced. */
static void test_run__trace_window_beyond_the_step_limit_keeps_the_shard_readable(void **state)
{
    (void)state;
    char dir[64], out[256];
    const char *argv[] = {CANARY, "--steps", "3", "--step-ms", "1", NULL};
    const char *beyond[] = {"CANARY_GATE_TRACE_STEPS=0:10000000", NULL};
    assert_int_equal(run_direct(argv, beyond, dir, sizeof(dir), out, sizeof(out)), 0);
    struct cg_shard *sh = NULL;
    size_t n = 0;
    load_shards(dir, &sh, &n);
    assert_int_equal(n, 1);
    assert_int_equal(sh[0].trace_first, -1);
    assert_int_equal(sh[0].n_steps, 3);
    cg_shard_free_all(sh, n);
    const char *within[] = {"CANARY_GATE_TRACE_STEPS=0:9999999", NULL};
    assert_int_equal(run_direct(argv, within, dir, sizeof(dir), out, sizeof(out)), 0);
    load_shards(dir, &sh, &n);
    assert_int_equal(n, 1);
    assert_int_equal(sh[0].trace_first, 0);
    assert_int_equal(sh[0].trace_last, 9999999);
    cg_shard_free_all(sh, n);
}

static void test_run__step_loss_from_payload_and_message_marks(void **state)
{
    (void)state;
    struct result r;
    struct cg_artifact a;
    const char *args[] = {"run", "--out", "nvtx-loss.json", "--runs", "1", "--steps", "4",
                          "--warmup", "1", "--", CANARY, "--steps", "5", "--step-ms", "1",
                          "--loss", NULL};
    run_tool(args, &r);
    if (r.exit_code != 0)
        fail_msg("%s", r.err);
    load("nvtx-loss.json", &a);
    assert_int_equal(a.runs[0].n_steps, 4);
    for (size_t k = 0; k < 4; k++) /* measured step k is canary step k + 1: loss 8 / (k + 2) */
        assert_float_equal(a.runs[0].steps[k].loss, 8.0 / (double)(k + 2), 1e-8);
    cg_artifact_release(&a);
    unlink("nvtx-loss.json");
    unlink("nvtx-loss.log");
}

static void test_run__nonfinite_loss_is_in_the_shard_status(void **state)
{
    (void)state;
    char dir[64], out[256];
    const char *argv[] = {CANARY, "--steps", "5", "--step-ms", "1", "--loss", "--nan-loss-at",
                          "3", NULL};
    assert_int_equal(run_direct(argv, NULL, dir, sizeof(dir), out, sizeof(out)), 0);
    struct cg_shard *sh = NULL;
    size_t n = 0;
    load_shards(dir, &sh, &n);
    assert_int_equal(n, 1);
    struct cg_shard_status st;
    cg_shard_status(sh, n, &st);
    assert_int_equal(st.nonfinite_loss_step, 3);
    assert_true(isnan(st.nonfinite_loss));
    assert_float_equal(sh[0].steps[4].loss, 8.0 / 5.0, 1e-8);
    cg_shard_free_all(sh, n);
}

/* The built-in canary marks its loss in every step; the shard holds the values it prints. */
static void test_run__builtin_canary_reports_its_loss(void **state)
{
    (void)state;
    char dir[64], out[4096];
    const char *env[] = {"LC_ALL=C", NULL};
    const char *argv[] = {TRAIN, "--preset", "tiny", "--steps", "4", "--log-every", "1",
                          "--inject-nan-at", "4", "--device", "cpu", NULL};
    int code = run_direct(argv, env, dir, sizeof(dir), out, sizeof(out));
    assert_int_equal(code, 5); /* canary-train's non-finite exit */
    struct cg_shard *sh = NULL;
    size_t n = 0;
    load_shards(dir, &sh, &n);
    assert_int_equal(n, 1);
    for (long k = 1; k <= 3; k++) { /* "step K loss X ms Y" */
        char key[32];
        snprintf(key, sizeof(key), "step %ld loss ", k);
        const char *p = strstr(out, key);
        if (p == NULL)
            fail_msg("no '%s' in: %s", key, out);
        double printed = strtod(p + strlen(key), NULL);
        assert_float_equal(sh[0].steps[k - 1].loss, printed, 1e-6);
    }
    struct cg_shard_status st;
    cg_shard_status(sh, n, &st);
    assert_int_equal(st.nonfinite_loss_step, 3); /* the canary's "step 4", counted from 1 */
    assert_true(isnan(st.nonfinite_loss));
    assert_int_equal(st.steps_seen, 4); /* the step range was closed before the canary exited */
    cg_shard_free_all(sh, n);
}

static void test_run__hang_is_killed_at_timeout(void **state)
{
    (void)state;
    struct result r;
    const char *args[] = {"run", "--out", "nvtx-hang.json", "--runs", "1", "--steps", "5",
                          "--warmup", "0", "--timeout", "1", "--", CANARY, "--steps", "5",
                          "--step-ms", "2", "--hang-at", "2", NULL};
    run_tool(args, &r);
    assert_int_equal(r.exit_code, 3);
    assert_non_null(strstr(r.err, "timed out"));
    assert_non_null(strstr(r.err, "marked 2 steps"));
    assert_true(r.wall_s < 5.0);
    unlink("nvtx-hang.log");
}

static void test_run__no_step_exits_3_with_how_to(void **state)
{
    (void)state;
    struct result r;
    const char *args[] = {"run", "--out", "nvtx-nostep.json", "--runs", "1", "--steps", "2",
                          "--", CANARY, "--steps", "2", "--step-ms", "1", "--no-steps", NULL};
    run_tool(args, &r);
    assert_int_equal(r.exit_code, 3);
    assert_non_null(strstr(r.err, "marked no step"));
    assert_non_null(strstr(r.err, "torch.cuda.nvtx.range_push(\"step\")"));
    unlink("nvtx-nostep.log");
}

static void test_run__worker_processes_are_merged(void **state)
{
    (void)state;
    struct result r;
    struct cg_artifact a;
    /* worker i sleeps 10 + 5i ms per step and marks 100 tokens */
    const char *args[] = {"run", "--out", "nvtx-workers.json", "--runs", "1", "--steps", "3",
                          "--warmup", "1", "--", CANARY, "--workers", "4", "--steps", "4",
                          "--step-ms", "10", NULL};
    run_tool(args, &r);
    if (r.exit_code != 0)
        fail_msg("%s", r.err);
    load("nvtx-workers.json", &a);
    assert_int_equal(a.runs[0].n_steps, 3);
    for (size_t k = 0; k < 3; k++) {
        assert_int_equal(a.runs[0].steps[k].tokens, 400);
        assert_true(a.runs[0].steps[k].wall_ns >= 24500000); /* the slowest rank's step */
    }
    cg_artifact_release(&a);
    unlink("nvtx-workers.json");
    unlink("nvtx-workers.log");
}

/* Reads the file at path whole (at most cap - 1 bytes) into buf; its length, -1 when absent. */
static long read_whole(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return -1;
    size_t got = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[got] = '\0';
    return (long)got;
}

/* Runs `run --out nvtx-rerun.json --runs 1 --steps 3 --warmup 1 [--let-finish] -- sh -c line`. */
static void run_rerun(const char *line, bool let_finish, struct result *r)
{
    const char *args[16] = {"run", "--out", "nvtx-rerun.json", "--runs", "1", "--steps", "3"};
    size_t k = 7;
    args[k++] = "--warmup";
    args[k++] = "1";
    if (let_finish)
        args[k++] = "--let-finish";
    args[k++] = "--";
    args[k++] = "sh";
    args[k++] = "-c";
    args[k++] = line;
    args[k] = NULL;
    run_tool(args, r);
}

/* A canary that runs its process twice one after the other (a retry: 'canary || canary', or
 * 'canary; canary' let finish) is refused as a restart, exit 3, naming both pids, and the
 * previous artifact stays as it was; its two runs were merged step by step as if they had run
 * together (exit 0), or told as "fewer steps than asked" from the first's. Two canaries started
 * together are still merged. */
static void test_run__a_canary_run_twice_one_after_the_other_is_refused(void **state)
{
    (void)state;
    struct result r;
    static char before[65536], after[65536];
    char line[1024];
    snprintf(line, sizeof(line), "%s --steps 4 --step-ms 2", CANARY);
    run_rerun(line, false, &r);
    if (r.exit_code != 0)
        fail_msg("%s", r.err);
    long len = read_whole("nvtx-rerun.json", before, sizeof(before));
    assert_true(len > 0);
    static const struct {
        const char *line;
        bool let_finish; /* else the gate stops the canary once measured */
    } twice[] = {
        {"%s --steps 5 --step-ms 5 --crash-at 2 || %s --steps 5 --step-ms 5", false},
        {"%s --steps 5 --step-ms 5; %s --steps 5 --step-ms 5", true},
    };
    for (size_t c = 0; c < sizeof(twice) / sizeof(twice[0]); c++) {
        snprintf(line, sizeof(line), twice[c].line, CANARY, CANARY);
        run_rerun(line, twice[c].let_finish, &r);
        if (r.exit_code != 3 || !strstr(r.err, "run 1 of 1: pid ") ||
            !strstr(r.err, "had made its last step, and began its steps ") ||
            !strstr(r.err,
                    "the canary ran again (a retry such as 'cmd || cmd': let it run once)") ||
            strstr(r.err, "fewer than"))
            fail_msg("'%s': exit %d, not refused as a restart:\n%s", line, r.exit_code, r.err);
        assert_int_equal(read_whole("nvtx-rerun.json", after, sizeof(after)), len);
        assert_memory_equal(before, after, (size_t)len);
    }
    snprintf(line, sizeof(line), "%s --steps 20 --step-ms 5 & %s --steps 20 --step-ms 5 & wait",
             CANARY, CANARY);
    run_rerun(line, false, &r);
    if (r.exit_code != 0)
        fail_msg("two canaries started together: %s", r.err);
    unlink("nvtx-rerun.json");
    unlink("nvtx-rerun.log");
}

/* A process that marks a few steps before the trainer (a launcher, a calibration or warm-up run
 * in a subprocess) is refused as the restart rule sees it, and the message says what was seen
 * and both likely causes, this one with what to do (mark steps only in the trainer, or
 * --step-range), not only a retry that never happened. */
static void test_run__a_process_stepping_before_the_trainer_is_told_both_causes(void **state)
{
    (void)state;
    struct result r;
    char line[1024];
    static const char *const cases[] = {
        "%s --steps 2 --step-ms 5 >/dev/null; %s --steps 8 --step-ms 5",
        "%s --steps 6 --step-ms 5 >/dev/null; %s --steps 20 --step-ms 5",
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        snprintf(line, sizeof(line), cases[c], CANARY, CANARY);
        run_rerun(line, true, &r);
        if (r.exit_code != 3 ||
            !strstr(r.err, "a process with steps that began after another had ended its steps") ||
            !strstr(r.err, "or a process before the trainer marks steps (a launcher, a "
                           "calibration or warm-up run: mark steps only in the trainer, or name "
                           "the trainer's step range with --step-range)") ||
            strstr(r.err, "ran its process twice"))
            fail_msg("'%s': exit %d:\n%s", line, r.exit_code, r.err);
    }
    unlink("nvtx-rerun.log");
}

/* Two canaries started together, one of which makes its first step long after the other made
 * its last (a worker that loads data, compiles, or imports torch first; here a shell that sleeps
 * and then execs the canary, which keeps the shell's start): one run's processes, measured. Only
 * a process that started after the other had made its steps is a restart. */
static void
test_run__canaries_started_together_are_no_restart_however_late_a_first_step(void **state)
{
    (void)state;
    struct result r;
    char line[1024];
    snprintf(line, sizeof(line),
             "%s --steps 8 --step-ms 10 & sh -c 'sleep 0.5; exec \"$0\" --steps 8 --step-ms 10' "
             "%s & wait",
             CANARY, CANARY);
    run_rerun(line, true, &r);
    if (r.exit_code != 0)
        fail_msg("exit %d:\n%s", r.exit_code, r.err);
    unlink("nvtx-rerun.json");
    unlink("nvtx-rerun.log");
}

/* Inside one srun task (srun -n 1 of a launcher that sets RANK), two processes with ranks of
 * their own whose steps do not overlap (ranks that never sync, the second started after the
 * first had made its steps) are two ranks, measured: never the task's process run twice. The
 * task's variables are set as srun sets them. */
static void test_run__ranks_of_their_own_in_one_srun_task_are_no_restart(void **state)
{
    (void)state;
    struct result r;
    char line[1024];
    snprintf(line, sizeof(line),
             "export SLURM_JOB_ID=42 SLURM_STEP_ID=0 SLURM_PROCID=0 SLURM_NODEID=0 "
             "SLURM_NTASKS=1 SLURMD_NODENAME=n1; "
             "RANK=0 WORLD_SIZE=2 %s --steps 5 --step-ms 5 & sleep 0.3; "
             "RANK=1 WORLD_SIZE=2 %s --steps 5 --step-ms 5; wait",
             CANARY, CANARY);
    run_rerun(line, true, &r);
    if (r.exit_code != 0)
        fail_msg("exit %d:\n%s", r.exit_code, r.err);
    unlink("nvtx-rerun.json");
    unlink("nvtx-rerun.log");
}

static void test_run__failing_and_missing_commands_exit_3(void **state)
{
    (void)state;
    struct result r;
    const char *fail_args[] = {"run", "--out", "nvtx-false.json", "--runs", "1", "--", "false",
                               NULL};
    run_tool(fail_args, &r);
    assert_int_equal(r.exit_code, 3);
    assert_non_null(strstr(r.err, "exited with status 1"));
    const char *missing[] = {"run", "--out", "nvtx-false.json", "--", "./no-such-canary", NULL};
    run_tool(missing, &r);
    assert_int_equal(r.exit_code, 3);
    assert_non_null(strstr(r.err, "cannot execute './no-such-canary'"));
    const char *usage[] = {"run", "--runs", "0", NULL};
    run_tool(usage, &r);
    assert_int_equal(r.exit_code, 2);
    unlink("nvtx-false.log");
}

/* The contents of path (NUL-terminated, cut at cap - 1 bytes) into buf. */
static void read_text(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        fail_msg("cannot read '%s'", path);
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
}

/* The launcher hands the canary its measured window. */
static void test_run__canary_gets_the_measured_window(void **state)
{
    (void)state;
    struct result r;
    char env[512];
    const char *args[] = {"run", "--out", "nvtx-window.json", "--runs", "1", "--steps", "4",
                          "--warmup", "3", "--", HELPER, "env", "nvtx-window.env",
                          "CANARY_GATE_WARMUP", "CANARY_GATE_STEPS", "--", CANARY, "--steps",
                          "7", "--step-ms", "1", NULL};
    run_tool(args, &r);
    if (r.exit_code != 0)
        fail_msg("%s", r.err);
    read_text("nvtx-window.env", env, sizeof(env));
    assert_string_equal(env, "CANARY_GATE_WARMUP=3\nCANARY_GATE_STEPS=4\n");
    /* the thresholds' window when no option is given (smoke: 2 runs of 20 after 3) */
    const char *smoke[] = {"run", "--out", "nvtx-window.json", "--thresholds", "smoke", "--runs",
                           "1", "--", HELPER, "env", "nvtx-window.env", "CANARY_GATE_STEPS",
                           "--", CANARY, "--steps", "23", "--step-ms", "1", NULL};
    run_tool(smoke, &r);
    if (r.exit_code != 0)
        fail_msg("%s", r.err);
    read_text("nvtx-window.env", env, sizeof(env));
    assert_string_equal(env, "CANARY_GATE_STEPS=20\n");
    unlink("nvtx-window.env");
    unlink("nvtx-window.json");
    unlink("nvtx-window.log");
}

/* A gate run inside a Slurm job of several tasks (a batch script of sbatch -n 2, or a shell of
 * srun -n 2 --pty) runs a single-process canary: the canary inherits the gate's SLURM_PROCID and
 * SLURM_NTASKS and is no rank of a world (the run failed "rank 1 (node index 1) of a world of 2
 * wrote nothing"); a task of a step the canary's own srun started (another step id) is. */
static void test_run__a_canary_in_the_gates_own_slurm_step_is_no_rank(void **state)
{
    (void)state;
    struct result r;
    const char *args[] = {
        "run", "--out", "nvtx-injob.json", "--runs", "1",         "--steps", "3", "--warmup", "1",
        "--",  CANARY,  "--steps",         "4",      "--step-ms", "1",       NULL};
    const char *batch[] = {"SLURM_JOB_ID=77",
                           "SLURM_PROCID=0",
                           "SLURM_NTASKS=2",
                           "SLURM_NODEID=0",
                           "SLURM_STEP_ID",
                           "SLURM_STEPID", /* unset */
                           NULL};
    run_tool_env(args, batch, &r);
    if (r.exit_code != 0)
        fail_msg("in a batch step: %s", r.err);
    const char *step[] = {"SLURM_JOB_ID=77",
                          "SLURM_STEP_ID=3",
                          "SLURM_STEPID=3",
                          "SLURM_PROCID=1",
                          "SLURM_NTASKS=2",
                          "SLURM_NODEID=0",
                          NULL};
    run_tool_env(args, step, &r);
    if (r.exit_code != 0)
        fail_msg("in the gate's own srun step: %s", r.err);
    struct cg_artifact a;
    load("nvtx-injob.json", &a);
    assert_int_equal(a.runs[0].n_ranks, 0);
    cg_artifact_release(&a);
    /* a task of step 4 (the canary's srun), rank 1 of 2: rank 0 never wrote */
    const char *task[] = {"run",       "--out",    "nvtx-injob.json",
                          "--runs",    "1",        "--steps",
                          "3",         "--warmup", "1",
                          "--",        "env",      "SLURM_STEP_ID=4",
                          CANARY,      "--steps",  "4",
                          "--step-ms", "1",        NULL};
    run_tool_env(task, step, &r);
    assert_int_equal(r.exit_code, 3);
    assert_non_null(strstr(r.err, "rank 0 of a world of 2 wrote nothing"));
    unlink("nvtx-injob.json");
    unlink("nvtx-injob.log");
}

/* Two ranks (RANK, WORLD_SIZE 2), rank 1 marking ranges "compute" only: the run fails saying
 * rank 1 wrote a shard but marked no step named 'step', never that it wrote nothing (the
 * library's install and the launcher's environment were fine). */
static void test_run__a_rank_without_steps_is_not_called_missing(void **state)
{
    (void)state;
    struct result r;
    const char *two = "RANK=0 WORLD_SIZE=2 \"$0\" --steps 4 --step-ms 1 & "
                      "RANK=1 WORLD_SIZE=2 \"$0\" --steps 4 --step-ms 1 --no-steps; wait";
    const char *args[] = {
        "run", "--out", "nvtx-quiet.json", "--runs", "1", "--steps", "3", "--warmup",
        "1",   "--",    "/bin/sh",         "-c",     two, CANARY,    NULL};
    run_tool(args, &r);
    assert_int_equal(r.exit_code, 3);
    if (strstr(r.err, "rank 1 (pid ") == NULL ||
        strstr(r.err, "of a world of 2 wrote a shard but marked no step named 'step'") == NULL ||
        strstr(r.err, "installed") != NULL)
        fail_msg("%s", r.err);
    unlink("nvtx-quiet.log");
}

/* A rank still starting when the others had made their steps (rank 1 hangs before its first
 * step; rank 0 does not wait for it) is stopped by the gate with them: it was told "wrote a
 * shard but marked no step named 'step': every rank must mark its steps", though it marks them;
 * now it is said to have been stopped before its first step. */
static void test_run__a_rank_stopped_before_its_first_step_is_said_so(void **state)
{
    (void)state;
    struct result r;
    const char *two = "RANK=0 WORLD_SIZE=2 \"$0\" --steps 6 --step-ms 10 & "
                      "RANK=1 WORLD_SIZE=2 \"$0\" --steps 6 --step-ms 10 --hang-at 0; wait";
    const char *args[] = {
        "run",       "--out", "nvtx-late.json", "--runs", "1",  "--steps", "5",  "--warmup", "1",
        "--timeout", "20",    "--kill-grace",   "1",      "--", "/bin/sh", "-c", two,        CANARY,
        NULL};
    run_tool(args, &r);
    assert_int_equal(r.exit_code, 3);
    if (strstr(r.err, "rank 1 (pid ") == NULL ||
        strstr(r.err, "of a world of 2 was stopped before its first step named 'step'") == NULL ||
        strstr(r.err, "every rank must mark its steps") != NULL)
        fail_msg("%s", r.err);
    unlink("nvtx-late.log");
}

/* Variables of the injection library inherited from the user's environment: those the launcher
 * owns are set or removed whatever the user had (a stray trace window would slow every step),
 * and said so; the user's settings of the library (CANARY_GATE_CUPTI) reach the canary and are
 * named on stderr. */
static void test_run__inherited_library_variables_are_ignored_or_reported(void **state)
{
    (void)state;
    struct result r;
    char env[512];
    const char *stray[] = {"CANARY_GATE_TRACE_STEPS=0:100000", "CANARY_GATE_WARMUP=7",
                           "CANARY_GATE_SHARD_DIR=/nonexistent", "CANARY_GATE_CUPTI=0", NULL};
    const char *args[] = {"run", "--out", "nvtx-stray.json", "--runs", "1", "--steps", "3",
                          "--warmup", "1", "--", HELPER, "env", "nvtx-stray.env",
                          "CANARY_GATE_TRACE_STEPS", "CANARY_GATE_WARMUP", "CANARY_GATE_CUPTI",
                          "--", CANARY, "--steps", "4", "--step-ms", "1", NULL};
    run_tool_env(args, stray, &r);
    if (r.exit_code != 0)
        fail_msg("%s", r.err);
    read_text("nvtx-stray.env", env, sizeof(env));
    assert_string_equal(env, "CANARY_GATE_TRACE_STEPS unset\nCANARY_GATE_WARMUP=1\n"
                             "CANARY_GATE_CUPTI=0\n");
    assert_non_null(strstr(r.err, "canary-gate: warning: CANARY_GATE_TRACE_STEPS=0:100000 from "
                                  "the environment is ignored"));
    assert_non_null(strstr(r.err, "CANARY_GATE_WARMUP=7 from the environment is ignored"));
    assert_non_null(strstr(r.err, "CANARY_GATE_SHARD_DIR=/nonexistent from the environment is "
                                  "ignored"));
    assert_non_null(strstr(r.err, "canary-gate: note: the canary gets CANARY_GATE_CUPTI=0 from "
                                  "the environment"));
    /* said once per command, not once per run */
    const char *first = strstr(r.err, "CANARY_GATE_TRACE_STEPS=0:100000");
    assert_null(strstr(first + 1, "CANARY_GATE_TRACE_STEPS=0:100000"));
    unlink("nvtx-stray.env");
    unlink("nvtx-stray.json");
    unlink("nvtx-stray.log");
}

/* The inherited variables are named once per command, also by a command with two collectors
 * (aa: one per side, runs A B B A). */
static void
test_run__inherited_variables_are_named_once_by_a_command_of_two_collectors(void **state)
{
    (void)state;
    struct result r;
    const char *stray[] = {"CANARY_GATE_WARMUP=7", "CANARY_GATE_CUPTI=0", NULL};
    const char *args[] = {"aa",     "--out",     "nvtx-stray-aa.json",
                          "--runs", "2",         "--steps",
                          "3",      "--warmup",  "1",
                          "--",     CANARY,      "--steps",
                          "4",      "--step-ms", "1",
                          NULL};
    run_tool_env(args, stray, &r);
    if (r.exit_code != 0)
        fail_msg("%s", r.err);
    const char *ignored = "canary-gate: warning: CANARY_GATE_WARMUP=7 from the environment is "
                          "ignored";
    const char *passed = "canary-gate: note: the canary gets CANARY_GATE_CUPTI=0 from the "
                         "environment";
    const char *first = strstr(r.err, ignored), *note = strstr(r.err, passed);
    assert_non_null(first);
    assert_non_null(note);
    assert_null(strstr(first + 1, ignored));
    assert_null(strstr(note + 1, passed));
    /* said before the first run began */
    const char *run1 = strstr(r.err, "A run 1 of 2");
    assert_non_null(run1);
    assert_true(first < run1 && note < run1);
    unlink("nvtx-stray-aa.json");
    unlink("nvtx-stray-aa.log");
}

/* ab: the hint after a failed run is the failing side's diagnosis, whichever side failed (head,
 * second in its pair; base, first in its pair): python's -S named, the other side having none. */
static void test_run__ab_hint_is_the_failing_sides(void **state)
{
    (void)state;
    struct result r;
    const char *hint = "python's -S keeps it from loading canary-gate's sitecustomize";
    const char *good = CANARY " --steps 4 --step-ms 1";
    for (int head_fails = 1; head_fails >= 0; head_fails--) {
        const char *args[] = {"ab",
                              "--base",
                              head_fails ? good : "python3 -S -c pass",
                              "--out",
                              "nvtx-ab-hint-head.json",
                              "--out-base",
                              "nvtx-ab-hint-base.json",
                              "--runs",
                              "2",
                              "--steps",
                              "3",
                              "--warmup",
                              "1",
                              "--",
                              head_fails ? "python3" : CANARY,
                              head_fails ? "-S" : "--steps",
                              head_fails ? "-c" : "4",
                              head_fails ? "pass" : "--step-ms",
                              head_fails ? NULL : "1",
                              NULL};
        run_tool_env(args, NULL, &r);
        assert_int_equal(r.exit_code, 3);
        assert_non_null(strstr(r.err, head_fails ? "head run 1 of 2" : "base run 1 of 2"));
        assert_non_null(strstr(r.err, "the injection library was not loaded"));
        if (strstr(r.err, hint) == NULL)
            fail_msg("%s fails, no hint naming -S:\n%s", head_fails ? "head" : "base", r.err);
        unlink("nvtx-ab-hint-base.partial.json");
        unlink("nvtx-ab-hint-base.log");
        unlink("nvtx-ab-hint-head.log");
    }
}

/* Runs the canary once into out with CANARY_GATE_COMM_KERNELS=value (NULL: unset); the run
 * must succeed. */
static void comm_run(const char *out, const char *value, struct result *r)
{
    static char var[600];
    const char *args[] = {"run", "--out", out,    "--runs",  "1", "--steps",   "3", "--warmup",
                          "0",   "--",    CANARY, "--steps", "3", "--step-ms", "1", NULL};
    snprintf(var, sizeof(var), "CANARY_GATE_COMM_KERNELS=%s", value != NULL ? value : "");
    const char *env[] = {var, NULL};
    run_tool_env(args, value != NULL ? env : NULL, r);
    if (r->exit_code != 0)
        fail_msg("%s", r->err);
}

/* The canary hash of the artifact at path, into hash. */
static void hash_of(const char *path, char *hash, size_t cap)
{
    struct cg_artifact a;
    load(path, &a);
    snprintf(hash, cap, "%s", a.env.canary_hash);
    cg_artifact_release(&a);
}

/* CANARY_GATE_COMM_KERNELS reaches the canary (named on stderr), and runs that tell
 * communication kernels apart otherwise are another canary's (its hash), never pooled. */
static void test_run__communication_kernels_are_part_of_the_canary(void **state)
{
    (void)state;
    struct result r;
    char env[256];
    const char *with[] = {"CANARY_GATE_COMM_KERNELS=userbuffers", NULL};
    const char *shown[] = {"run",
                           "--out",
                           "nvtx-comm.json",
                           "--runs",
                           "1",
                           "--steps",
                           "3",
                           "--warmup",
                           "0",
                           "--",
                           HELPER,
                           "env",
                           "nvtx-comm.env",
                           "CANARY_GATE_COMM_KERNELS",
                           "--",
                           CANARY,
                           "--steps",
                           "3",
                           "--step-ms",
                           "1",
                           NULL};
    run_tool_env(shown, with, &r);
    if (r.exit_code != 0)
        fail_msg("%s", r.err);
    read_text("nvtx-comm.env", env, sizeof(env));
    assert_string_equal(env, "CANARY_GATE_COMM_KERNELS=userbuffers\n");
    assert_non_null(strstr(r.err, "canary-gate: note: the canary gets "
                                  "CANARY_GATE_COMM_KERNELS=userbuffers from the environment"));
    unlink("nvtx-comm.json");
    comm_run("nvtx-comm1.json", "userbuffers", &r);
    comm_run("nvtx-comm2.json", NULL, &r);
    struct cg_artifact x, y;
    load("nvtx-comm1.json", &x);
    load("nvtx-comm2.json", &y);
    assert_string_not_equal(x.env.canary_hash, y.env.canary_hash);
    assert_string_equal(cg_artifact_canary_diff(&x, &y), "settings.comm_kernels");
    assert_string_equal(x.settings.comm_kernels, "userbuffers"); /* recorded for the anatomy */
    assert_null(y.settings.comm_kernels);
    /* empty is unset: the same canary */
    comm_run("nvtx-comm3.json", "", &r);
    struct cg_artifact z;
    load("nvtx-comm3.json", &z);
    assert_null(z.settings.comm_kernels);
    assert_string_equal(z.env.canary_hash, y.env.canary_hash);
    cg_artifact_release(&z);
    /* the whole value is hashed: two lists of 8 parts of 63 bytes differing in the last byte */
    char longest[2][600], hashes[2][64];
    for (int k = 0; k < 2; k++) {
        char *p = longest[k];
        for (int part = 0; part < 8; part++)
            p += snprintf(p, 65, "%s%.62s%c", part ? "," : "",
                          "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnop",
                          part == 7 && k ? 'y' : 'x');
        comm_run("nvtx-comm3.json", longest[k], &r);
        hash_of("nvtx-comm3.json", hashes[k], sizeof(hashes[k]));
    }
    assert_string_not_equal(hashes[0], hashes[1]);
    cg_artifact_release(&x);
    cg_artifact_release(&y);
    const char *merge[] = {"merge",           "-o", "nvtx-comm.json", "nvtx-comm1.json",
                           "nvtx-comm2.json", NULL};
    run_tool(merge, &r);
    assert_int_not_equal(r.exit_code, 0);
    assert_true(access("nvtx-comm.json", F_OK) != 0);
    unlink("nvtx-comm.env");
    unlink("nvtx-comm1.json");
    unlink("nvtx-comm2.json");
    unlink("nvtx-comm3.json");
    unlink("nvtx-comm.log");
    unlink("nvtx-comm1.log");
    unlink("nvtx-comm2.log");
    unlink("nvtx-comm3.log");
}

/* Writes a shell script at path that runs the canary for `steps` steps of step_ms, with a
 * comment line (an edit of the script changes nothing the canary does). */
static void write_script(const char *path, const char *comment, int steps, int step_ms)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "# %s\nexec %s --steps %d --step-ms %d\n", comment, CANARY, steps, step_ms);
    fclose(f);
}

/* Measures `sh script` into out: 1 run of `steps` steps after warmup; must succeed. */
static void script_run(const char *out, const char *script, const char *steps, const char *warmup,
                       struct result *r)
{
    const char *args[] = {"run",      "--out", out,  "--runs",  "1",    "--steps", steps,
                          "--warmup", warmup,  "--", "/bin/sh", script, NULL};
    run_tool(args, r);
    if (r->exit_code != 0)
        fail_msg("%s", r->err);
}

/* The training script is the code under test, not the canary: runs of a script edited between
 * them pool, main's history keeps one segment, the report says the script changed as a fact and
 * shows no configuration change; a changed step count or command is still refused. Each run
 * records the script's hash. */
static void test_run__an_edited_script_is_the_same_canary(void **state)
{
    (void)state;
    struct result r;
    write_script("nvtx-edit.sh", "first version", 3, 1);
    script_run("nvtx-edit1.json", "nvtx-edit.sh", "3", "0", &r);
    write_script("nvtx-edit.sh", "second version", 3, 1);
    script_run("nvtx-edit2.json", "nvtx-edit.sh", "3", "0", &r);
    struct cg_artifact x, y;
    load("nvtx-edit1.json", &x);
    load("nvtx-edit2.json", &y);
    assert_string_equal(x.env.canary_id, y.env.canary_id);
    assert_int_equal(x.runs[0].code.n_files, 2); /* /bin/sh and the script */
    assert_string_equal(x.runs[0].code.files[1].path, "nvtx-edit.sh");
    assert_string_not_equal(x.runs[0].code.files[1].hash, y.runs[0].code.files[1].hash);
    assert_string_equal(x.runs[0].code.files[0].hash, y.runs[0].code.files[0].hash);
    assert_null(cg_artifact_canary_diff(&x, &y));
    cg_artifact_release(&x);
    cg_artifact_release(&y);
    const char *merge[] = {"merge",           "-o", "nvtx-edit.json", "nvtx-edit1.json",
                           "nvtx-edit2.json", NULL};
    run_tool(merge, &r);
    if (r.exit_code != 0)
        fail_msg("the runs of an edited script did not pool: %s", r.err);
    /* one history segment: no environment event between the two */
    unlink("nvtx-edit.jsonl");
    const char *h1[] = {"history",  "append", "--history",       "nvtx-edit.jsonl",
                        "--commit", "c1",     "nvtx-edit1.json", NULL};
    const char *h2[] = {"history",  "append", "--history",       "nvtx-edit.jsonl",
                        "--commit", "c2",     "nvtx-edit2.json", NULL};
    run_tool(h1, &r);
    assert_int_equal(r.exit_code, 0);
    run_tool(h2, &r);
    assert_int_equal(r.exit_code, 0);
    assert_null(strstr(r.err, "events:"));
    /* the report: a plain fact, no configuration banner */
    const char *cmp[] = {"compare",  "nvtx-edit1.json", "nvtx-edit2.json",
                         "--report", "nvtx-edit.md",    NULL};
    run_tool(cmp, &r);
    char md[16384];
    read_text("nvtx-edit.md", md, sizeof(md));
    assert_null(strstr(md, "Canary configuration changed"));
    assert_non_null(strstr(md, "**Script:** the script changed since the baseline (<code>"
                               "nvtx-edit.sh</code>)"));
    /* another step count, another command: still refused, naming what differs */
    script_run("nvtx-edit3.json", "nvtx-edit.sh", "2", "0", &r);
    const char *steps[] = {"merge",           "-o", "nvtx-edit.json", "nvtx-edit1.json",
                           "nvtx-edit3.json", NULL};
    run_tool(steps, &r);
    assert_int_equal(r.exit_code, 2);
    assert_non_null(strstr(r.err, "settings.steps differs"));
    write_script("nvtx-other.sh", "first version", 3, 1);
    script_run("nvtx-edit3.json", "nvtx-other.sh", "3", "0", &r);
    run_tool(steps, &r);
    assert_int_equal(r.exit_code, 2);
    assert_non_null(strstr(r.err, "environment.canary_command differs"));
    const char *files[] = {"nvtx-edit.sh",
                           "nvtx-other.sh",
                           "nvtx-edit.json",
                           "nvtx-edit1.json",
                           "nvtx-edit2.json",
                           "nvtx-edit3.json",
                           "nvtx-edit.jsonl",
                           "nvtx-edit.jsonl.lock",
                           "nvtx-edit.md",
                           "nvtx-edit1.log",
                           "nvtx-edit2.log",
                           "nvtx-edit3.log",
                           NULL};
    for (size_t i = 0; files[i] != NULL; i++)
        unlink(files[i]);
}

/* Each run records where its canary ran as the measured window began: the affinity it
 * inherited (here CPU 0 alone), that CPU and its NUMA node. */
static void test_run__the_canary_placement_is_recorded(void **state)
{
    (void)state;
    struct result r;
    cpu_set_t all, one;
    assert_int_equal(sched_getaffinity(0, sizeof(all), &all), 0);
    if (!CPU_ISSET(0, &all))
        skip();
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
    write_script("nvtx-place.sh", "placed", 5, 300);
    script_run("nvtx-place.json", "nvtx-place.sh", "4", "1", &r);
    assert_int_equal(sched_setaffinity(0, sizeof(all), &all), 0);
    struct cg_artifact a;
    load("nvtx-place.json", &a);
    assert_non_null(a.runs[0].placement.cpus);
    assert_string_equal(a.runs[0].placement.cpus, "0");
    assert_int_equal(a.runs[0].placement.cpu, 0);
    DIR *d = opendir("/sys/devices/system/cpu/cpu0/node0");
    if (d != NULL) {
        closedir(d);
        assert_int_equal(a.runs[0].placement.numa_node, 0);
    }
    cg_artifact_release(&a);
    unlink("nvtx-place.sh");
    unlink("nvtx-place.json");
    unlink("nvtx-place.log");
}

/* Every line the tool writes on stderr while it measures, progress included, starts with the
 * tool's name. */
static void test_run__every_progress_line_has_the_prefix(void **state)
{
    (void)state;
    struct result r;
    const char *args[] = {"run", "--out", "nvtx-prefix.json", "--runs", "1", "--steps", "3",
                          "--warmup", "0", "--", CANARY, "--steps", "3", "--step-ms", "400", NULL};
    run_tool(args, &r);
    if (r.exit_code != 0)
        fail_msg("%s", r.err);
    assert_non_null(strstr(r.err, " of 3 steps")); /* a progress line was printed */
    for (const char *line = r.err; *line; line = strchr(line, '\n') + 1) {
        if (strncmp(line, "canary-gate: ", 13) != 0)
            fail_msg("a line without the prefix:\n%s", r.err);
        if (strchr(line, '\n') == NULL)
            break;
    }
    unlink("nvtx-prefix.json");
    unlink("nvtx-prefix.log");
}

/* A training job that would run for two minutes more after its shard says "done" (the
 * injection library's end of the measured window) is stopped at once, and its runs are complete
 * although it dies of the SIGTERM. */
static void test_run__measured_canary_is_stopped_and_counted_complete(void **state)
{
    (void)state;
    struct result r;
    struct cg_artifact a;
    char log[8192];
    const char *args[] = {"run", "--out", "nvtx-stop.json", "--runs", "2", "--steps", "3",
                          "--warmup", "1", "--", HELPER, "measured", NULL};
    run_tool(args, &r);
    if (r.exit_code != 0)
        fail_msg("%s", r.err);
    assert_true(r.wall_s < 30.0);
    assert_non_null(strstr(r.err, "run 1 of 2: 3 steps, median"));
    assert_non_null(strstr(r.err, "stopped after 4 steps"));
    assert_null(strstr(r.err, "without finishing its shard")); /* "done" is all it owed */
    load("nvtx-stop.json", &a);
    assert_int_equal(a.n_runs, 2);
    for (size_t i = 0; i < a.n_runs; i++) {
        assert_int_equal(a.runs[i].n_steps, 3);
        assert_int_equal(a.runs[i].stopped_after_steps, 4);
    }
    cg_artifact_release(&a);
    read_text("nvtx-stop.log", log, sizeof(log));
    assert_non_null(strstr(log, "measured: rank 0 done"));
    unlink("nvtx-stop.json");
    unlink("nvtx-stop.log");
}

/* --let-finish waits for the canary to exit by itself (3 s after its "done"); without it the
 * same canary is stopped well before. */
static void test_run__let_finish_waits_for_the_canary(void **state)
{
    (void)state;
    struct result r;
    struct cg_artifact a;
    const char *args[] = {"run", "--out", "nvtx-let.json", "--runs", "1", "--steps", "3",
                          "--warmup", "0", "--let-finish", "--", HELPER, "measured",
                          "--end-after", "3000", NULL};
    run_tool(args, &r);
    if (r.exit_code != 0)
        fail_msg("%s", r.err);
    assert_true(r.wall_s >= 3.0);
    assert_null(strstr(r.err, "stopped after"));
    load("nvtx-let.json", &a);
    assert_int_equal(a.runs[0].n_steps, 3);
    assert_int_equal(a.runs[0].stopped_after_steps, -1);
    cg_artifact_release(&a);

    const char *stop[] = {"run", "--out", "nvtx-let.json", "--runs", "1", "--steps", "3",
                          "--warmup", "0", "--", HELPER, "measured", "--end-after", "3000",
                          NULL};
    run_tool(stop, &r);
    if (r.exit_code != 0)
        fail_msg("%s", r.err);
    assert_true(r.wall_s < 3.0);
    load("nvtx-let.json", &a);
    assert_int_equal(a.runs[0].stopped_after_steps, 3);
    cg_artifact_release(&a);
    unlink("nvtx-let.json");
    unlink("nvtx-let.log");
}

/* A canary whose shards never say "done" (a library that does not know the window) runs to
 * its own end, as before. */
static void test_run__canary_without_done_runs_to_its_end(void **state)
{
    (void)state;
    struct result r;
    struct cg_artifact a;
    const char *args[] = {"run", "--out", "nvtx-nodone.json", "--runs", "1", "--steps", "3",
                          "--warmup", "0", "--", HELPER, "measured", "--no-done", "--end-after",
                          "1500", NULL};
    run_tool(args, &r);
    if (r.exit_code != 0)
        fail_msg("%s", r.err);
    assert_true(r.wall_s >= 1.5);
    load("nvtx-nodone.json", &a);
    assert_int_equal(a.runs[0].stopped_after_steps, -1);
    cg_artifact_release(&a);
    unlink("nvtx-nodone.json");
    unlink("nvtx-nodone.log");
}

/* A canary that crashes after its measured window ("done" written) gets the same verdict
 * whether it crashes before the gate's next look at the shards (every 0.5 s) or after it: the
 * run is complete, and the crash is said. With --let-finish the canary's exit is awaited and its
 * status counts, every time. */
static void
test_run__a_crash_after_the_measured_window_is_judged_the_same_whenever_it_comes(void **state)
{
    (void)state;
    struct result r;
    struct cg_artifact a;
    /* 50 ms after "done": before the first look; 3 s after it: the gate stops it first */
    const char *const after[] = {"50", "3000"};
    for (size_t k = 0; k < 2; k++) {
        const char *args[] = {"run",
                              "--out",
                              "nvtx-crash-after.json",
                              "--runs",
                              "1",
                              "--steps",
                              "3",
                              "--warmup",
                              "1",
                              "--",
                              HELPER,
                              "measured",
                              "--crash-after",
                              after[k],
                              NULL};
        run_tool(args, &r);
        if (r.exit_code != 0)
            fail_msg("crash %s ms after done: exit %d\n%s", after[k], r.exit_code, r.err);
        load("nvtx-crash-after.json", &a);
        assert_int_equal(a.runs[0].n_steps, 3);
        if (k == 0) {
            /* the canary ended itself: said, and never "stopped after" */
            assert_int_equal(a.runs[0].stopped_after_steps, -1);
            if (strstr(r.err, "run 1 of 1: the canary exited with status 1 after its measured "
                              "window") == NULL)
                fail_msg("the crash is not said:\n%s", r.err);
            assert_null(strstr(r.err, "stopped after"));
        } else {
            assert_int_equal(a.runs[0].stopped_after_steps, 4);
        }
        cg_artifact_release(&a);
    }
    const char *wait[] = {
        "run",      "--out", "nvtx-crash-after.json", "--runs", "1",    "--steps",  "3",
        "--warmup", "1",     "--let-finish",          "--",     HELPER, "measured", "--crash-after",
        "50",       NULL};
    run_tool(wait, &r);
    assert_int_equal(r.exit_code, 3);
    assert_non_null(strstr(r.err, "canary exited with status 1 in run 1 of 1"));
    unlink("nvtx-crash-after.json");
    unlink("nvtx-crash-after.log");
}

/* Every process that marks steps must be done: rank 1 writes "done" 2 s after rank 0, and the
 * canary is stopped only then; both ranks' steps count. */
static void test_run__stop_waits_for_every_process_with_steps(void **state)
{
    (void)state;
    struct result r;
    struct cg_artifact a;
    char log[8192];
    const char *args[] = {"run", "--out", "nvtx-ranks.json", "--runs", "1", "--steps", "3",
                          "--warmup", "1", "--", HELPER, "measured", "--ranks", "2",
                          "--stagger", "2000", NULL};
    run_tool(args, &r);
    if (r.exit_code != 0)
        fail_msg("%s", r.err);
    assert_true(r.wall_s >= 2.0);
    read_text("nvtx-ranks.log", log, sizeof(log));
    assert_non_null(strstr(log, "measured: rank 1 done"));
    load("nvtx-ranks.json", &a);
    assert_int_equal(a.runs[0].stopped_after_steps, 4);
    assert_int_equal(a.runs[0].n_steps, 3);
    for (size_t k = 0; k < 3; k++)
        assert_int_equal(a.runs[0].steps[k].tokens, 32); /* 16 from each rank */
    cg_artifact_release(&a);
    unlink("nvtx-ranks.json");
    unlink("nvtx-ranks.log");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run__step_times_tokens_and_nested_ranges),
        cmocka_unit_test(test_run__ranges_from_threads_are_ops),
        cmocka_unit_test(test_run__stray_step_ranges_are_counted_never_steps),
        cmocka_unit_test(test_run__other_domains_never_mark_steps),
        cmocka_unit_test(test_run__wide_registered_and_start_end_steps),
        cmocka_unit_test(test_run__unbalanced_ranges_are_harmless),
        cmocka_unit_test(test_run__crash_keeps_steps_and_exits_3),
        cmocka_unit_test(test_run__crash_leaves_its_steps_in_the_shard),
        cmocka_unit_test(test_run__trace_window_beyond_the_step_limit_keeps_the_shard_readable),
        cmocka_unit_test(test_run__step_loss_from_payload_and_message_marks),
        cmocka_unit_test(test_run__nonfinite_loss_is_in_the_shard_status),
        cmocka_unit_test(test_run__builtin_canary_reports_its_loss),
        cmocka_unit_test(test_run__hang_is_killed_at_timeout),
        cmocka_unit_test(test_run__no_step_exits_3_with_how_to),
        cmocka_unit_test(test_run__worker_processes_are_merged),
        cmocka_unit_test(test_run__a_canary_run_twice_one_after_the_other_is_refused),
        cmocka_unit_test(test_run__ranks_of_their_own_in_one_srun_task_are_no_restart),
        cmocka_unit_test(test_run__a_process_stepping_before_the_trainer_is_told_both_causes),
        cmocka_unit_test(
            test_run__canaries_started_together_are_no_restart_however_late_a_first_step),
        cmocka_unit_test(test_run__failing_and_missing_commands_exit_3),
        cmocka_unit_test(test_run__canary_gets_the_measured_window),
        cmocka_unit_test(test_run__a_canary_in_the_gates_own_slurm_step_is_no_rank),
        cmocka_unit_test(test_run__a_rank_without_steps_is_not_called_missing),
        cmocka_unit_test(test_run__a_rank_stopped_before_its_first_step_is_said_so),
        cmocka_unit_test(test_run__inherited_library_variables_are_ignored_or_reported),
        cmocka_unit_test(
            test_run__inherited_variables_are_named_once_by_a_command_of_two_collectors),
        cmocka_unit_test(test_run__ab_hint_is_the_failing_sides),
        cmocka_unit_test(test_run__communication_kernels_are_part_of_the_canary),
        cmocka_unit_test(test_run__an_edited_script_is_the_same_canary),
        cmocka_unit_test(test_run__the_canary_placement_is_recorded),
        cmocka_unit_test(test_run__every_progress_line_has_the_prefix),
        cmocka_unit_test(test_run__measured_canary_is_stopped_and_counted_complete),
        cmocka_unit_test(test_run__let_finish_waits_for_the_canary),
        cmocka_unit_test(test_run__canary_without_done_runs_to_its_end),
        cmocka_unit_test(test_run__stop_waits_for_every_process_with_steps),
        cmocka_unit_test(
            test_run__a_crash_after_the_measured_window_is_judged_the_same_whenever_it_comes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
