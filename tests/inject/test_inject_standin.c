/*
 * test_inject_standin: the injection library's CUDA side past the CUPTI subscription, which the
 * real libcupti never reaches on a machine without a GPU. The test canary calls the library's
 * InitializeInjection as the CUDA driver would; the library opens the stand-in libcupti of
 * tests/standin/ (CANARY_GATE_CUPTI_PATH, or already loaded by the canary) and, where a test
 * asks, the canary has loaded the stand-in libcuda privately first. Both stand-ins log every call
 * into a file ("PID EVENT" lines) that the tests read with the shard.
 *
 * Pinned here: the GPU exit flush runs before libcupti's exit-time destructors (both the one it
 * registers when loaded and one registered at its first flush); the end of the measured window
 * synchronises the context that was current, forces a flush and then writes "done", all before
 * the step-ending thread goes on (a canary that _exit()s right after keeps it); the driver
 * version comes from the libcuda handle actually loaded; per-thread activity buffers are turned
 * off before the buffer callbacks are registered (a refusal is a warning); the exit handler waits
 * at most 10 s for a stuck flush thread; an optional activity kind or the
 * timestamp callback refused is a warning, a required kind or the buffer callbacks refused
 * disables what was enabled and unsubscribes; a copy of libcupti already loaded is the one used;
 * a forked child never flushes; a fork never lands inside the library's registration of an
 * exit handler (a child would hang in exit()); the per-step counts ("nc" naming what is measured,
 * "n" lines for every step before the window's end, warm-up included, complete before "done"),
 * and an optional kind, the module load callback or the version check refused leaving their
 * counts out of "nc". What the stand-ins cannot prove (the real libcupti's behaviour)
 * is said in tests/standin/cupti_standin.c; ci/gpu-check covers it on a GPU machine.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#if CG_HAVE_CUPTI

#include "inject_support.h"

#include <cupti_version.h>
#include <limits.h>
#include <stdbool.h>
#include <time.h>

/* "CG_STANDIN_LOG=<workdir>/calls.log" and the canary's run with the stand-in libcupti named
 * by CANARY_GATE_CUPTI_PATH, plus extra environment entries; the log starts empty. */
static int run_standin(const struct cg_workdir *w, const char *const *extra,
                       const char *const *args, struct cg_proc *p)
{
    static char log[600], cupti[600];
    const char *env[16];
    size_t n = 0;
    unlink(cg_workdir_in(w, "calls.log"));
    snprintf(log, sizeof(log), "CG_STANDIN_LOG=%s", cg_workdir_in(w, "calls.log"));
    snprintf(cupti, sizeof(cupti), "CANARY_GATE_CUPTI_PATH=%s", CG_TEST_CUPTI_STANDIN);
    env[n++] = log;
    env[n++] = cupti;
    for (size_t i = 0; extra != NULL && extra[i] != NULL && n + 1 < 16; i++)
        env[n++] = extra[i];
    env[n] = NULL;
    return cg_canary_run(w, env, args, p);
}

/* The stand-ins' call log (its own static buffer, apart from the shard's; an empty string when
 * nothing was logged). */
static const char *calls(const struct cg_workdir *w)
{
    static char text[1 << 16];
    text[0] = '\0';
    FILE *f = fopen(cg_workdir_in(w, "calls.log"), "rb");
    if (f == NULL)
        return text;
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

/* Where " EVENT" first ends a line of the log (after the pid), or NULL. */
static const char *event(const char *log, const char *what)
{
    char needle[128];
    snprintf(needle, sizeof(needle), " %s\n", what);
    return strstr(log, needle);
}

static void test_inject_standin__gpu_exit_flush_runs_before_libcupti_teardown(void **state)
{
    const struct cg_workdir *w = *state;
    struct cg_proc p;
    const char *env[] = {"CANARY_GATE_WARMUP=1", NULL};
    const char *args[] = {"--cuda-init", "--standin-kernels", "--steps", "3", "--step-ms", "1",
                          NULL};
    assert_int_equal(run_standin(w, env, args, &p), 0);
    const char *shard = cg_canary_shard(w);
    const char *log = calls(w);
    assert_non_null(cg_text_line(shard, "gpu ok\n"));
    assert_non_null(cg_text_line(shard, "end\n"));
    const char *forced = event(log, "flush forced");
    const char *lazy = event(log, "teardown lazy");
    const char *at_load = event(log, "teardown load-time");
    if (forced == NULL || lazy == NULL || at_load == NULL || strstr(log, "after teardown"))
        fail_msg("exit flush and libcupti teardown out of order:\n%s", log);
    assert_true(forced < lazy && forced < at_load);
    /* the exit flush delivered the last step's kernel: steps 1 and 2 counted */
    assert_int_equal(cg_shard_op_calls(shard, NULL, "kernel", "_Z14standin_kernelv"), 2);
}

static void test_inject_standin__window_end_syncs_flushes_then_writes_done(void **state)
{
    const struct cg_workdir *w = *state;
    struct cg_proc p;
    const char *env[] = {"CANARY_GATE_WARMUP=1", "CANARY_GATE_STEPS=2", NULL};
    const char *args[] = {"--preload", CG_TEST_CUDA_STANDIN, "--cuda-init", "--standin-kernels",
                          "--steps", "5", "--step-ms", "2", NULL};
    assert_int_equal(run_standin(w, env, args, &p), 0);
    const char *shard = cg_canary_shard(w);
    const char *log = calls(w);
    const char *done = cg_text_line(shard, "done ");
    assert_non_null(done);
    assert_memory_equal(done, "done 3\n", 7);
    assert_int_equal(cg_text_count(shard, "done "), 1);
    assert_true(cg_text_line(shard, "s 2 ") < done);
    /* the context current on the canary's thread was synchronised before the forced flush */
    const char *sync = event(log, "sync ctx");
    const char *forced = event(log, "flush forced");
    if (sync == NULL || forced == NULL || sync > forced || event(log, "sync no-ctx"))
        fail_msg("no synchronisation before the forced flush:\n%s", log);
    /* the window's kernels (steps 1 and 2) are written before "done", none after */
    assert_int_equal(cg_shard_op_calls(shard, done, "kernel", "_Z14standin_kernelv"), 2);
    assert_int_equal(cg_shard_op_calls(shard, NULL, "kernel", "_Z14standin_kernelv"), 2);
    for (const char *b = cg_text_line(shard, "b "); b != NULL; b = cg_text_line(b + 1, "b "))
        assert_true(b[2] >= '0' && b[2] <= '2' && b[3] == ' '); /* busy time of steps 0-2 only */
    /* one kernel before the first step and one in each of the 5 steps */
    long long c[7];
    cg_shard_counters(shard, c);
    assert_int_equal(c[0], 6); /* records */
    assert_int_equal(c[3], 1); /* outside every step */
    assert_int_equal(c[4], 5); /* inside a step */
}

static void test_inject_standin__window_end_complete_before_os_exit(void **state)
{
    const struct cg_workdir *w = *state;
    struct cg_proc p;
    /* the canary calls _exit(0) as soon as the last measured step (index 2) has ended: no exit
     * handler runs, so only what the step end itself waited for reaches the shard */
    const char *env[] = {"CANARY_GATE_WARMUP=1", "CANARY_GATE_STEPS=2", NULL};
    const char *args[] = {"--preload", CG_TEST_CUDA_STANDIN, "--cuda-init", "--standin-kernels",
                          "--steps", "5", "--step-ms", "2", "--exit-at", "3", NULL};
    assert_int_equal(run_standin(w, env, args, &p), 0);
    const char *shard = cg_canary_shard(w);
    const char *log = calls(w);
    const char *done = cg_text_line(shard, "done ");
    if (done == NULL)
        fail_msg("no 'done' before _exit:\n%s\ncalls:\n%s", shard, log);
    assert_memory_equal(done, "done 3\n", 7);
    assert_null(cg_text_line(shard, "end\n"));
    if (event(log, "sync ctx") == NULL || event(log, "flush forced") == NULL)
        fail_msg("no synchronisation and forced flush:\n%s", log);
    /* every record the stand-in delivered is in the shard before "done": the kernel before the
     * first step and those of steps 0-2; the window's (steps 1 and 2) as ops */
    assert_int_equal(cg_shard_op_calls(shard, NULL, "kernel", "_Z14standin_kernelv"), 2);
    assert_int_equal(cg_shard_op_calls(shard, done, "kernel", "_Z14standin_kernelv"), 2);
    long long c[7];
    cg_shard_counters(shard, c);
    assert_int_equal(c[0], 4); /* records */
    assert_int_equal(c[3], 1); /* outside every step */
    assert_int_equal(c[4], 3); /* inside a step */
    assert_null(cg_text_line(done + 1, "c ")); /* the totals were written before "done" */
}

static void test_inject_standin__one_activity_buffer_for_all_threads(void **state)
{
    const struct cg_workdir *w = *state;
    struct cg_proc p;
    const char *args[] = {"--cuda-init", "--standin-kernels", "--steps", "2", "--step-ms", "1",
                          NULL};
    assert_int_equal(run_standin(w, NULL, args, &p), 0);
    const char *log = calls(w);
    /* CUPTI 13 keeps a buffer per thread unless told otherwise, before the buffer callbacks */
    const char *attr = event(log, "attribute PER_THREAD_ACTIVITY_BUFFER 0");
    const char *callbacks = event(log, "callbacks");
    if (attr == NULL || callbacks == NULL || attr > callbacks)
        fail_msg("per-thread buffers not turned off before the callbacks:\n%s", log);
    assert_null(cg_text_line(cg_canary_shard(w), "w "));
    /* refused: a warning, and CUPTI still runs */
    const char *env[] = {"CG_STANDIN_FAIL=attribute", NULL};
    assert_int_equal(run_standin(w, env, args, &p), 0);
    const char *shard = cg_canary_shard(w);
    if (cg_text_line(shard, "gpu ok\n") == NULL ||
        cg_text_line(shard, "w CUPTI per-thread activity buffers cannot be turned off") == NULL)
        fail_msg("no warning, or CUPTI stopped:\n%s", shard);
    assert_int_equal(cg_shard_op_calls(shard, NULL, "kernel", "_Z14standin_kernelv"), 2);
}

static void test_inject_standin__exit_never_waits_forever_for_the_flush_thread(void **state)
{
    const struct cg_workdir *w = *state;
    struct cg_proc p;
    /* the flush thread's first step-end flush hangs for 60 s inside CUPTI */
    const char *env[] = {"CG_STANDIN_HANG_FLUSH_S=60", NULL};
    const char *args[] = {"--cuda-init", "--standin-kernels", "--steps", "2", "--step-ms", "1",
                          NULL};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(run_standin(w, env, args, &p), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    const char *shard = cg_canary_shard(w);
    const char *log = calls(w);
    if (s > 30.0)
        fail_msg("exit waited %.1f s for the flush thread:\n%s", s, log);
    assert_true(s >= 9.0); /* it did wait, about 10 s */
    if (cg_text_line(shard, "w flush thread did not finish within 10 s at exit") == NULL ||
        cg_text_line(shard, "end\n") == NULL)
        fail_msg("no warning or no end:\n%s", shard);
    assert_non_null(event(log, "flush hangs 60"));
    assert_null(event(log, "flush forced")); /* no flush beside the stuck one */
}

static void test_inject_standin__driver_version_from_the_loaded_libcuda(void **state)
{
    const struct cg_workdir *w = *state;
    struct cg_proc p;
    /* the canary loads the stand-in driver with RTLD_LOCAL: not in the global scope */
    const char *args[] = {"--preload", CG_TEST_CUDA_STANDIN, "--cuda-init", "--steps", "1",
                          "--step-ms", "0", NULL};
    assert_int_equal(run_standin(w, NULL, args, &p), 0);
    const char *shard = cg_canary_shard(w);
    if (cg_text_line(shard, "cuda 13.0\n") == NULL)
        fail_msg("no driver version:\n%s", shard);
}

static void test_inject_standin__optional_kinds_and_clock_refused_are_warnings(void **state)
{
    const struct cg_workdir *w = *state;
    struct cg_proc p;
    const char *env[] = {"CANARY_GATE_WARMUP=0", "CG_STANDIN_FAIL=MEMCPY2,timestamp,OVERHEAD",
                         NULL};
    const char *args[] = {"--cuda-init", "--standin-kernels", "--steps", "3", "--step-ms", "1",
                          NULL};
    assert_int_equal(run_standin(w, env, args, &p), 0);
    const char *shard = cg_canary_shard(w);
    if (cg_text_line(shard, "gpu ok\n") == NULL)
        fail_msg("CUPTI did not start:\n%s", shard);
    assert_non_null(cg_text_line(
        shard, "w CUPTI activity kind MEMCPY2 unavailable: CUPTI_ERROR_STANDIN_REFUSED\n"));
    assert_non_null(cg_text_line(
        shard, "w CUPTI activity kind OVERHEAD unavailable: CUPTI_ERROR_STANDIN_REFUSED\n"));
    assert_non_null(cg_text_line(shard, "w CUPTI timestamp callback refused"));
    assert_non_null(event(calls(w), "enable DEVICE")); /* the kinds after them still enabled */
    /* records stamped in CUPTI's own clock fall outside every step, and say so */
    long long c[7];
    cg_shard_counters(shard, c);
    assert_int_equal(c[3], 4);
    assert_int_equal(c[4], 0);
    assert_null(cg_text_line(shard, "o kernel "));
}

static void test_inject_standin__fatal_refusal_disables_and_unsubscribes(void **state)
{
    const struct cg_workdir *w = *state;
    static const struct {
        const char *fail, *reason;
    } cases[] = {
        {"CG_STANDIN_FAIL=MEMSET",
         "gpu unavailable CUPTI activity kind MEMSET cannot be enabled: "
         "CUPTI_ERROR_STANDIN_REFUSED\n"},
        {"CG_STANDIN_FAIL=callbacks", "gpu unavailable CUPTI cannot start: "
                                      "CUPTI_ERROR_STANDIN_REFUSED\n"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct cg_proc p;
        const char *env[] = {cases[i].fail, NULL};
        const char *args[] = {"--cuda-init", "--steps", "2", "--step-ms", "0", NULL};
        assert_int_equal(run_standin(w, env, args, &p), 0);
        const char *shard = cg_canary_shard(w);
        const char *log = calls(w);
        if (cg_text_line(shard, cases[i].reason) == NULL)
            fail_msg("%s: no '%s' in:\n%s", cases[i].fail, cases[i].reason, shard);
        assert_int_equal(cg_text_count(shard, "s "), 2); /* the steps are still timed */
        if (event(log, "unsubscribe") == NULL || strstr(log, " flush"))
            fail_msg("%s: not unsubscribed, or flushed:\n%s", cases[i].fail, log);
        /* every kind enabled was disabled again */
        static const char *const kinds[] = {"CONCURRENT_KERNEL", "MEMCPY",          "MEMSET",
                                            "MEMORY2",           "DEVICE",          "MEMCPY2",
                                            "OVERHEAD",          "SYNCHRONIZATION", "JIT"};
        for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
            char on[64], off[64];
            snprintf(on, sizeof(on), "enable %s", kinds[k]);
            snprintf(off, sizeof(off), "disable %s", kinds[k]);
            assert_int_equal(event(log, on) != NULL, event(log, off) != NULL);
        }
    }
}

static void test_inject_standin__an_already_loaded_libcupti_is_used(void **state)
{
    const struct cg_workdir *w = *state;
    struct cg_proc p;
    char real[PATH_MAX], line[PATH_MAX + 32];
    assert_non_null(realpath(CG_TEST_CUPTI_STANDIN, real));
    /* the canary maps the stand-in first (as PyTorch maps its own libcupti.so.13); the path
     * override names another file, which must not be opened */
    const char *env[] = {"CANARY_GATE_CUPTI_PATH=/nonexistent/libcupti.so.13", NULL};
    const char *args[] = {"--preload", CG_TEST_CUPTI_STANDIN, "--cuda-init", "--steps", "1",
                          "--step-ms", "0", NULL};
    assert_int_equal(cg_canary_run(w, env, args, &p), 0);
    const char *shard = cg_canary_shard(w);
    snprintf(line, sizeof(line), "cupti loaded %s\n", real);
    if (cg_text_line(shard, line) == NULL || cg_text_line(shard, "gpu ok\n") == NULL)
        fail_msg("not '%s' with gpu ok in:\n%s", line, shard);
    assert_null(cg_text_line(shard, "w CANARY_GATE_CUPTI_PATH")); /* never tried */
}

static void test_inject_standin__a_forked_child_never_flushes(void **state)
{
    const struct cg_workdir *w = *state;
    struct cg_proc p;
    const char *args[] = {"--cuda-init", "--standin-kernels", "--steps", "3", "--step-ms", "1",
                          "--fork-child", "2", NULL};
    assert_int_equal(run_standin(w, NULL, args, &p), 0);
    const char *shard = cg_canary_shard(w); /* one shard: the child wrote none */
    long long pid = 0;
    const char *pid_line = cg_text_line(shard, "pid ");
    assert_non_null(pid_line);
    assert_int_equal(sscanf(pid_line, "pid %lld", &pid), 1);
    const char *log = calls(w);
    int flushes = 0;
    for (const char *l = log; *l != '\0';) {
        long long who = 0;
        int used = 0;
        assert_int_equal(sscanf(l, "%lld %n", &who, &used), 1);
        if (strncmp(l + used, "flush", 5) == 0) {
            if (who != pid)
                fail_msg("process %lld (not the canary, %lld) flushed:\n%s", who, pid, log);
            flushes++;
        }
        const char *eol = strchr(l, '\n');
        l = eol ? eol + 1 : l + strlen(l);
    }
    assert_true(flushes > 0);
    assert_int_equal(cg_text_count(shard, "s "), 3);
}

/* Where the line "PID EVENT" for pid is in log (its offset), or -1. */
static long event_at(const char *log, long long pid, const char *what)
{
    char needle[128];
    snprintf(needle, sizeof(needle), "%lld %s\n", pid, what);
    for (const char *l = log; *l != '\0';) {
        if (strncmp(l, needle, strlen(needle)) == 0)
            return (long)(l - log);
        const char *eol = strchr(l, '\n');
        l = eol ? eol + 1 : l + strlen(l);
    }
    return -1;
}

/* glibc's fork does not reset the lock of its exit-handler list: a fork while the flush thread
 * registers the GPU exit handler (after the first flush) leaves a child that hangs in exit().
 * The probe makes that registration take 400 ms and the canary forks 100 ms after the first
 * step, inside it unless the library keeps forks out of its registrations. */
static void test_inject_standin__a_fork_never_lands_inside_an_exit_handler_registration(
    void **state)
{
    const struct cg_workdir *w = *state;
    struct cg_proc p;
    static char preload[600], asan[600];
    snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", CG_TEST_ATEXIT_PROBE);
    const char *asan_now = getenv("ASAN_OPTIONS"); /* the probe comes before ASan's runtime */
    snprintf(asan, sizeof(asan), "ASAN_OPTIONS=%s%sverify_asan_link_order=0",
             asan_now ? asan_now : "", asan_now && *asan_now ? ":" : "");
    const char *env[] = {preload, "CG_PROBE_ATEXIT_MS=400", asan, NULL};
    const char *args[] = {"--cuda-init", "--standin-kernels", "--steps", "3", "--step-ms", "1",
                          "--fork-child", "1", "--fork-delay-ms", "100", NULL};
    assert_int_equal(run_standin(w, env, args, &p), 0);
    long long pid = 0;
    const char *pid_line = cg_text_line(cg_canary_shard(w), "pid ");
    assert_non_null(pid_line);
    assert_int_equal(sscanf(pid_line, "pid %lld", &pid), 1);
    const char *log = calls(w);
    long begins = event_at(log, pid, "atexit begins"), ends = event_at(log, pid, "atexit ends");
    long forked = event_at(log, pid, "forked");
    if (begins < 0 || ends < 0 || forked < 0)
        fail_msg("no registration off the main thread, or no fork, in the log:\n%s", log);
    if (forked > begins && forked < ends)
        fail_msg("the canary forked while the library was registering an exit handler:\n%s",
                 log);
}

/* The device's UUID from CUPTI's DEVICE record is in the shard ("uuid ID GPU-..."), beside its
 * name: peak memory is merged by it, the CUDA id being 0 in every rank given one GPU. */
static void test_inject_standin__the_device_is_named_by_its_uuid(void **state)
{
    const struct cg_workdir *w = *state;
    static const struct {
        const char *env, *line;
    } cases[] = {
        {NULL, "uuid 0 GPU-10111213-1415-1617-1819-1a1b1c1d1e1f\n"},
        {"CG_STANDIN_DEVICE_UUID=6a1e2f300b1c4d2e8f30415263748596",
         "uuid 0 GPU-6a1e2f30-0b1c-4d2e-8f30-415263748596\n"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct cg_proc p;
        const char *env[] = {cases[i].env, NULL};
        const char *args[] = {"--cuda-init", "--standin-kernels", "--steps", "2", "--step-ms", "1",
                              NULL};
        assert_int_equal(run_standin(w, env, args, &p), 0);
        const char *shard = cg_canary_shard(w);
        if (cg_text_line(shard, "device 0 Standin GPU\n") == NULL ||
            cg_text_line(shard, cases[i].line) == NULL || cg_text_count(shard, "uuid ") != 1)
            fail_msg("no device line, or not one '%s':\n%s", cases[i].line, shard);
    }
}

/* --- per-step counts ------------------------------------------------------------------------ */

/* The canary's stand-in records per step, and once before the first step (outside every step):
 * 3 kernels (2 by a graph), a synchronisation of each type, 4 copies (3 into pageable memory), 2
 * allocations and 2 releases; a JIT compilation in step 1, a module load in step 2. */
#define COUNTING_ARGS                                                                              \
    "--cuda-init", "--standin-kernels", "--standin-graph-kernels", "2", "--standin-syncs", "1",    \
        "--standin-copies", "1", "--standin-dtoh-pageable", "3", "--standin-allocs", "2",          \
        "--standin-jit-at", "1", "--standin-module-load-at", "2", "--steps", "4", "--step-ms", "2"

/* What those records give in every step ("jit" and "module_loads" apart). */
static const struct {
    const char *name;
    int64_t per_step;
} counting_want[] = {
    {"kernels", 3},
    {"graph_kernels", 2},
    {"graph_launches", 1},
    {"sync_stream", 1},
    {"sync_event", 1},
    {"sync_context", 1},
    {"sync_wait_event", 1},
    {"sync_ns", 350000},
    {"copies", 4},
    {"dtoh_pageable", 3},
    {"dtoh_pageable_bytes", 3 * 4096},
    {"allocs", 2},
    {"frees", 2},
};

/* The sum of the shard's "b STEP NS" lines for step. */
static long long busy_of(const char *shard, int64_t step)
{
    char key[32];
    snprintf(key, sizeof(key), "\nb %lld ", (long long)step);
    long long sum = 0;
    for (const char *p = strstr(shard, key); p != NULL; p = strstr(p + 1, key))
        sum += strtoll(p + strlen(key), NULL, 10);
    return sum;
}

/* True when the shard's "nc" line names name. */
static bool counted(const char *shard, const char *name)
{
    const char *nc = cg_text_line(shard, "nc ");
    if (nc == NULL)
        return false;
    const char *eol = strchr(nc, '\n');
    size_t n = strlen(name);
    for (const char *p = nc + 2; p != NULL && (eol == NULL || p < eol); p = strchr(p + 1, ' '))
        if (strncmp(p + 1, name, n) == 0 && (p[n + 1] == ' ' || p[n + 1] == '\n'))
            return true;
    return false;
}

static void test_inject_standin__counts_per_step_up_to_the_window_end(void **state)
{
    const struct cg_workdir *w = *state;
    struct cg_proc p;
    const char *env[] = {"CANARY_GATE_WARMUP=1", "CANARY_GATE_STEPS=2", NULL};
    const char *args[] = {COUNTING_ARGS, NULL};
    assert_int_equal(run_standin(w, env, args, &p), 0);
    const char *shard = cg_canary_shard(w);
    const char *done = cg_text_line(shard, "done 3\n");
    if (done == NULL || cg_text_count(shard, "nc ") != 1 ||
        cg_text_line(shard,
                     "nc kernels graph_kernels graph_launches sync_stream sync_event sync_context "
                     "sync_wait_event sync_ns copies dtoh_pageable dtoh_pageable_bytes "
                     "allocs frees jit module_loads compute_ns copy_ns copy_hidden_ns places\n") ==
            NULL)
        fail_msg("no 'done 3', or not one 'nc' naming every count:\n%s", shard);
    /* warm-up step 0 and the window's steps 1 and 2, complete before "done"; step 3 (past the
     * window) and the records before the first step in none */
    for (int64_t step = 0; step <= 2; step++) {
        for (size_t i = 0; i < sizeof(counting_want) / sizeof(counting_want[0]); i++)
            if (cg_shard_count(shard, done, step, counting_want[i].name) !=
                counting_want[i].per_step)
                fail_msg("step %lld: %s %lld, expected %lld:\n%s", (long long)step,
                         counting_want[i].name,
                         (long long)cg_shard_count(shard, NULL, step, counting_want[i].name),
                         (long long)counting_want[i].per_step, shard);
        /* no communication kernel: compute time is the busy time; the copies' time is there */
        assert_true(busy_of(shard, step) > 0);
        assert_int_equal(cg_shard_count(shard, done, step, "compute_ns"), busy_of(shard, step));
        assert_true(cg_shard_count(shard, done, step, "copy_ns") > 0);
        /* of it, the time a kernel ran too (the step's first kernel may still run) */
        int64_t hidden = cg_shard_count(shard, done, step, "copy_hidden_ns");
        assert_true(hidden >= 0 && hidden <= cg_shard_count(shard, done, step, "copy_ns"));
        assert_int_equal(cg_shard_count(shard, done, step, "jit"), step == 1);
        assert_int_equal(cg_shard_count(shard, done, step, "module_loads"), step == 2);
    }
    assert_null(cg_text_line(shard, "n 3 "));
    for (size_t i = 0; i < sizeof(counting_want) / sizeof(counting_want[0]); i++)
        assert_int_equal(cg_shard_count(shard, NULL, -1, counting_want[i].name),
                         3 * counting_want[i].per_step);
    assert_int_equal(cg_shard_count(shard, NULL, -1, "jit"), 1);
    assert_int_equal(cg_shard_count(shard, NULL, -1, "module_loads"), 1);
    assert_non_null(event(calls(w), "module load")); /* the one before the first step too */
    long long c[7];
    cg_shard_counters(shard, c);
    assert_int_equal(c[3], 7); /* kernels and copies outside every step: the ones before it */
    /* the stand-in kernel's ops: the window's steps only */
    assert_int_equal(cg_shard_op_calls(shard, NULL, "kernel", "_Z14standin_kernelv"), 6);
}

/* A data loader that polls its stream or event (cudaStreamQuery, cudaEventQuery) before it
 * synchronises: CUPTI gives the queries SYNCHRONIZATION records too, the last one of each loop
 * with returnValue 0, and of a type the record alone cannot tell from a synchronisation. Only
 * blocking synchronisations count, in the counts, their host time and their places. */
static void test_inject_standin__polling_queries_are_not_synchronisations(void **state)
{
    const struct cg_workdir *w = *state;
    struct cg_proc p;
    const char *env[] = {"CANARY_GATE_WARMUP=1", "CANARY_GATE_STEPS=2", "CG_STANDIN_POLLS=3",
                         NULL};
    const char *args[] = {COUNTING_ARGS, NULL};
    assert_int_equal(run_standin(w, env, args, &p), 0);
    const char *shard = cg_canary_shard(w);
    const char *log = calls(w);
    const char *done = cg_text_line(shard, "done 3\n");
    if (done == NULL || !counted(shard, "sync_stream"))
        fail_msg("no 'done 3', or synchronisations not counted:\n%s", shard);
    for (int64_t step = 0; step <= 2; step++)
        for (size_t i = 0; i < sizeof(counting_want) / sizeof(counting_want[0]); i++)
            if (cg_shard_count(shard, done, step, counting_want[i].name) !=
                counting_want[i].per_step)
                fail_msg("step %lld: %s %lld, expected %lld (polls counted?):\n%s",
                         (long long)step, counting_want[i].name,
                         (long long)cg_shard_count(shard, NULL, step, counting_want[i].name),
                         (long long)counting_want[i].per_step, shard);
    if (event(log, "callback on RUNTIME cudaStreamQuery") == NULL ||
        event(log, "callback on DRIVER cuEventQuery") == NULL)
        fail_msg("the queries' callbacks are not on:\n%s", log);
    assert_null(cg_text_line(shard, "w CUPTI API callbacks for queries unavailable"));
}

/* Synchronisations, pageable copies, device memory allocations and releases, and module loads
 * are placed among the NVTX ranges of the thread that made them: the callbacks of the API
 * functions that synchronise, copy, allocate or free are on (no other), and the shard has "np"
 * lines for the window's steps only: in the innermost range open, after the last one ended when
 * none is open; a copy into pinned memory is not placed. */
static void calls_placed(const struct cg_workdir *w, const char *extra_env)
{
    struct cg_proc p;
    const char *env[] = {"CANARY_GATE_WARMUP=1", "CANARY_GATE_STEPS=2", extra_env, NULL};
    const char *args[] = {"--cuda-init",
                          "--standin-placed",
                          "--standin-module-load-at",
                          "2",
                          "--steps",
                          "4",
                          "--step-ms",
                          "2",
                          NULL};
    assert_int_equal(run_standin(w, env, args, &p), 0);
    const char *shard = cg_canary_shard(w);
    const char *log = calls(w);
    if (!counted(shard, "places") || cg_text_line(shard, "done 3\n") == NULL)
        fail_msg("no 'places' in 'nc', or no 'done 3':\n%s", shard);
    static const char *const on[] = {"callback on RUNTIME cudaStreamSynchronize",
                                     "callback on RUNTIME cudaEventSynchronize",
                                     "callback on RUNTIME cudaDeviceSynchronize",
                                     "callback on RUNTIME cudaMemcpyAsync",
                                     "callback on DRIVER cuStreamSynchronize",
                                     "callback on DRIVER cuMemcpyDtoHAsync_v2",
                                     "callback on RUNTIME cudaMalloc",
                                     "callback on RUNTIME cudaFree"};
    for (size_t i = 0; i < sizeof(on) / sizeof(on[0]); i++)
        if (event(log, on[i]) == NULL)
            fail_msg("no '%s' in:\n%s", on[i], log);
    assert_null(strstr(log, "cudaLaunchKernel"));
    assert_null(strstr(log, "cuLaunchKernel"));
    assert_null(strstr(log, "cudaStreamWaitEvent"));
    /* building a graph's copy, allocation and release nodes copies, allocates and frees nothing */
    if (strstr(log, "Graph") != NULL)
        fail_msg("a graph-building function's callback is on:\n%s", log);
    /* two measured steps (the warm-up step's ranges are no ops: nothing placed there); the
     * lines are deltas */
    static const struct {
        const char *head, *name;
        long long calls;
    } want[] = {{"np sync_stream in ", "forward", 2}, {"np dtoh_pageable after ", "forward", 2},
                {"np sync_context in ", "inner", 2},  {"np allocs in ", "backward", 2},
                {"np frees after ", "backward", 2},   {"np module_loads after ", "backward", 1}};
    int lines = 0;
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        long long sum = 0;
        size_t hn = strlen(want[i].head), nn = strlen(want[i].name);
        for (const char *l = strstr(shard, want[i].head); l != NULL;
             l = strstr(l + 1, want[i].head)) {
            char *end;
            long long v = strtoll(l + hn, &end, 10);
            if (*end == ' ' && strncmp(end + 1, want[i].name, nn) == 0 && end[1 + nn] == '\n') {
                sum += v;
                lines++;
            }
        }
        if (sum != want[i].calls)
            fail_msg("%s%s: %lld calls, expected %lld:\n%s", want[i].head, want[i].name, sum,
                     want[i].calls, shard);
    }
    assert_int_equal(cg_text_count(shard, "np "), lines);
    /* steps of start/end ranges: a step's first calls, before any range, are in no place (not
     * after the range the thread popped in the step before) */
    const char *start_end[] = {"--cuda-init",
                               "--standin-placed",
                               "--standin-syncs",
                               "1",
                               "--mode",
                               "start-end",
                               "--steps",
                               "4",
                               "--step-ms",
                               "2",
                               NULL};
    assert_int_equal(run_standin(w, env, start_end, &p), 0);
    shard = cg_canary_shard(w);
    if (cg_text_line(shard, "np sync_stream in ") == NULL ||
        cg_text_line(shard, "np sync_event ") != NULL ||
        cg_text_line(shard, "np sync_stream after ") != NULL)
        fail_msg("start/end steps: a step's first calls placed after the step before's range:\n%s",
                 shard);
}

static void test_inject_standin__calls_placed_in_their_nvtx_ranges(void **state)
{
    calls_placed(*state, NULL);
}

/* PyTorch runs backward on its autograd thread, which opens no NVTX range: a call made on a thread
 * with no place of its own is placed where the thread that began the current step is (its
 * innermost range, or after its last), so the places are those of calls made on that thread. */
static void test_inject_standin__calls_of_a_thread_without_ranges_placed_at_the_step_thread(
    void **state)
{
    calls_placed(*state, "CG_STANDIN_CALL_THREAD=other");
}

/* A thread with ranges of its own, none open (PyTorch's autograd thread, on which CUB opens and
 * closes ranges of its scans inside backward; on the H100, 2026-11-27, 2.7 of backward's 3
 * allocations a step were placed "after" such a range, 0.3 in backward): its calls are placed
 * where the step's thread is, not after the range it last closed. */
static void test_inject_standin__calls_of_a_thread_with_closed_ranges_placed_at_the_step_thread(
    void **state)
{
    calls_placed(*state, "CG_STANDIN_CALL_THREAD=ranged");
}

/* A newer libcupti numbers new API functions past the 13.0 headers' last callback id: the library
 * asks the loaded libcupti for the names of ids past it, and a copy made through such a function
 * ("cuMemcpyDtoHAsync_v3", the stand-in's, CUPTI_DRIVER_TRACE_CBID_SIZE + 5) is placed. */
static void test_inject_standin__calls_of_a_newer_libcuptis_functions_placed(void **state)
{
    const struct cg_workdir *w = *state;
    calls_placed(w, "CG_STANDIN_NEWER_API=1");
    if (event(calls(w), "callback on DRIVER cuMemcpyDtoHAsync_v3") == NULL)
        fail_msg("the newer function's callback is not on:\n%s", calls(w));
}

/* Device memory of the virtual memory API (PyTorch's expandable segments: cuMemCreate and
 * cuMemMap, cuMemUnmap and cuMemRelease) is placed as cudaMalloc's and cudaFree's is; mapping a
 * sparse array's pages (cuMemMapArrayAsync) allocates nothing. */
static void test_inject_standin__virtual_memory_calls_placed(void **state)
{
    const struct cg_workdir *w = *state;
    calls_placed(w, "CG_STANDIN_VMM=1");
    struct cg_proc p;
    const char *env[] = {"CANARY_GATE_WARMUP=1", "CANARY_GATE_STEPS=2", "CG_STANDIN_VMM=1", NULL};
    const char *args[] = {"--cuda-init", "--standin-placed", "--steps", "4", "--step-ms", "2",
                          NULL};
    assert_int_equal(run_standin(w, env, args, &p), 0);
    const char *log = calls(w);
    static const char *const on[] = {
        "callback on DRIVER cuMemCreate", "callback on DRIVER cuMemMap",
        "callback on DRIVER cuMemUnmap", "callback on DRIVER cuMemRelease"};
    for (size_t i = 0; i < sizeof(on) / sizeof(on[0]); i++)
        if (event(log, on[i]) == NULL)
            fail_msg("no '%s' in:\n%s", on[i], log);
    assert_null(strstr(log, "cuMemMapArrayAsync"));
}

/* An optional feature refused: a warning, and the counts it feeds are left out of "nc" (unknown,
 * not 0) and never written; the others are still counted. */
static void test_inject_standin__refusals_leave_their_counts_out_of_the_counted(void **state)
{
    const struct cg_workdir *w = *state;
    static char version_warning[256];
    snprintf(version_warning, sizeof(version_warning),
             "w CUPTI kernel records may not carry graphId where expected (graph kernels not "
             "counted): libcupti API version 140000, built for %u\n",
             (unsigned)CUPTI_API_VERSION);
    const struct {
        const char *env, *warning, *absent[5];
    } cases[] = {
        {"CG_STANDIN_FAIL=SYNCHRONIZATION",
         "w CUPTI activity kind SYNCHRONIZATION unavailable: CUPTI_ERROR_STANDIN_REFUSED\n",
         {"sync_stream", "sync_event", "sync_context", "sync_wait_event", "sync_ns"}},
        {"CG_STANDIN_FAIL=JIT",
         "w CUPTI activity kind JIT unavailable: CUPTI_ERROR_STANDIN_REFUSED\n",
         {"jit"}},
        {"CG_STANDIN_FAIL=enable-callback",
         "w CUPTI module load callback unavailable (module loads not counted): "
         "CUPTI_ERROR_STANDIN_REFUSED\n",
         {"module_loads"}},
        {"CG_STANDIN_FAIL=version",
         "w CUPTI kernel records may not carry graphId where expected (graph kernels not "
         "counted): CUPTI_ERROR_STANDIN_REFUSED\n",
         {"graph_kernels", "graph_launches"}},
        {"CG_STANDIN_VERSION=140000", version_warning, {"graph_kernels", "graph_launches"}},
        {"CG_STANDIN_FAIL=MEMCPY2", /* peer copies would be missing from the copies */
         "w CUPTI activity kind MEMCPY2 unavailable: CUPTI_ERROR_STANDIN_REFUSED\n",
         {"copies"}},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct cg_proc p;
        const char *env[] = {"CANARY_GATE_WARMUP=1", "CANARY_GATE_STEPS=2", cases[i].env, NULL};
        const char *args[] = {COUNTING_ARGS, NULL};
        assert_int_equal(run_standin(w, env, args, &p), 0);
        const char *shard = cg_canary_shard(w);
        if (cg_text_line(shard, "gpu ok\n") == NULL ||
            cg_text_line(shard, cases[i].warning) == NULL)
            fail_msg("%s: no gpu ok, or no '%s' in:\n%s", cases[i].env, cases[i].warning, shard);
        size_t n_absent = 0;
        for (size_t k = 0; k < 5 && cases[i].absent[k] != NULL; k++, n_absent++) {
            char line[64];
            if (counted(shard, cases[i].absent[k]))
                fail_msg("%s: '%s' is counted:\n%s", cases[i].env, cases[i].absent[k], shard);
            for (int step = 0; step < 4; step++) {
                snprintf(line, sizeof(line), "n %d %s ", step, cases[i].absent[k]);
                assert_null(cg_text_line(shard, line));
            }
        }
        /* the rest is counted as without the refusal */
        for (size_t k = 0; k < sizeof(counting_want) / sizeof(counting_want[0]); k++) {
            const char *name = counting_want[k].name;
            bool absent = false;
            for (size_t j = 0; j < n_absent; j++)
                absent |= strcmp(cases[i].absent[j], name) == 0;
            if (absent)
                continue;
            if (!counted(shard, name) ||
                cg_shard_count(shard, NULL, 1, name) != counting_want[k].per_step)
                fail_msg("%s: %s not counted as without the refusal:\n%s", cases[i].env, name,
                         shard);
        }
    }
}

/* How many times " EVENT" ends a line of the log. */
static int events(const char *log, const char *what)
{
    int n = 0;
    for (const char *p = event(log, what); p != NULL; p = event(p + 1, what))
        n++;
    return n;
}

/* CANARY_GATE_COMM_KERNELS naming the stand-in's kernel makes all of its kernels communication:
 * no compute time in any step; a value that is no list of name parts is a "w" line, and the
 * kernels stay compute. */
static void test_inject_standin__communication_kernels_named_by_the_user(void **state)
{
    const struct cg_workdir *w = *state;
    for (int bad = 0; bad < 2; bad++) {
        struct cg_proc p;
        const char *env[] = {"CANARY_GATE_WARMUP=1", "CANARY_GATE_STEPS=2",
                             bad ? "CANARY_GATE_COMM_KERNELS=standin kernel"
                                 : "CANARY_GATE_COMM_KERNELS=allgather,standin_kernel",
                             NULL};
        const char *args[] = {COUNTING_ARGS, NULL};
        assert_int_equal(run_standin(w, env, args, &p), 0);
        const char *shard = cg_canary_shard(w);
        const char *done = cg_text_line(shard, "done 3\n");
        if (done == NULL)
            fail_msg("no 'done 3':\n%s", shard);
        const char *warning = "w CANARY_GATE_COMM_KERNELS ignored: 'standin kernel': a space or a "
                              "character not printable ASCII (communication kernels are NCCL's "
                              "only)\n";
        if ((cg_text_line(shard, warning) != NULL) != bad)
            fail_msg("%s the warning:\n%s", bad ? "without" : "with", shard);
        for (int64_t step = 1; step <= 2; step++) {
            assert_true(busy_of(shard, step) > 0);
            assert_int_equal(cg_shard_count(shard, done, step, "compute_ns"),
                             bad ? busy_of(shard, step) : 0);
        }
    }
}

/* Step "n STEP kernels" and "b STEP" lines of steps first..last: one stand-in kernel of 100 us
 * each, the whole of it the step's busy time (it starts as the step begins and the step lasts
 * longer). Fails with the shard when one is not. */
static void one_kernel_per_step(const char *shard, int64_t first, int64_t last)
{
    for (int64_t step = first; step <= last; step++)
        if (cg_shard_count(shard, NULL, step, "kernels") != 1 || busy_of(shard, step) != 100000)
            fail_msg("step %lld: %lld kernels, busy %lld ns, expected 1 and 100000:\n%s",
                     (long long)step, (long long)cg_shard_count(shard, NULL, step, "kernels"),
                     busy_of(shard, step), shard);
}

/* A step boundary never waits for a buffer's reduction: the stand-in holds the reduction of the
 * buffer that holds step 1's kernel (inside cuptiActivityGetNextRecord, which the library calls
 * as it reduces) until 3 more kernels are launched, one at the start of each step, so the canary
 * must begin 3 steps while a reduction runs (a deadline in steps, not in time; the stand-in gives
 * up after 20 s). The boundaries made meanwhile are applied before the next buffer, whose records
 * straddle them: every step keeps its one kernel and its busy time. */
static void test_inject_standin__a_step_boundary_never_waits_for_a_reduction(void **state)
{
    const struct cg_workdir *w = *state;
    struct cg_proc p;
    const char *env[] = {"CANARY_GATE_WARMUP=0", "CG_STANDIN_HOLD=3,3", NULL};
    const char *args[] = {"--cuda-init", "--standin-kernels", "--steps", "12", "--step-ms", "5",
                          NULL};
    assert_int_equal(run_standin(w, env, args, &p), 0);
    const char *shard = cg_canary_shard(w);
    const char *log = calls(w);
    if (event(log, "hold") == NULL || event(log, "hold released") == NULL ||
        event(log, "hold timed out") != NULL)
        fail_msg("the canary could not begin 3 steps while a reduction was held:\n%s", log);
    /* step 0 also holds the end of the kernel launched just before it */
    assert_int_equal(cg_shard_count(shard, NULL, 0, "kernels"), 1);
    one_kernel_per_step(shard, 1, 11);
    long long c[7];
    cg_shard_counters(shard, c);
    assert_int_equal(c[0], 13); /* records */
    assert_int_equal(c[3], 1);  /* outside every step: the kernel before the first */
    assert_int_equal(c[4], 12);
}

/* Step boundaries queued with no buffer or flush to apply them (the flush after each step end
 * and the periodic flush left off): more than the queue holds (1024 events, 2 a step), so the
 * boundary that finds it full applies it; the records of every step come at exit in one buffer,
 * straddling all of those boundaries, and each is still counted in its own step. */
static void test_inject_standin__boundaries_queued_without_a_buffer_apply_in_order(void **state)
{
    const struct cg_workdir *w = *state;
    struct cg_proc p;
    const char *env[] = {"CANARY_GATE_WARMUP=0", "CANARY_GATE_CUPTI_OFF=step_flush,flush_period",
                         NULL};
    const char *args[] = {"--cuda-init", "--standin-kernels", "--steps", "700", "--step-ms", "0",
                          NULL};
    assert_int_equal(run_standin(w, env, args, &p), 0);
    const char *shard = cg_canary_shard(w);
    /* steps of no sleep: the next step begins within the 100 us kernel, which is then in two
     * steps; the first and last 350 steps' kernels are counted where they began */
    for (int64_t step = 0; step < 700; step++)
        if (cg_shard_count(shard, NULL, step, "kernels") != 1)
            fail_msg("step %lld: %lld kernels, expected 1:\n%s", (long long)step,
                     (long long)cg_shard_count(shard, NULL, step, "kernels"), shard);
    long long c[7];
    cg_shard_counters(shard, c);
    assert_int_equal(c[0], 701);
    assert_int_equal(c[3], 1);
    assert_int_equal(c[4], 700);
    assert_int_equal(events(calls(w), "flush"), 1); /* the first step end's only */
}

/* One process driving two GPUs: every stand-in kernel of 100 us on GPU 0 comes with a kernel of
 * 150 us on GPU 1 (CG_STANDIN_DEVICE1). GPU time is kept per device and a step's figures are its
 * slowest device's (the one with the most busy time): 150 us, not the 250 us during which some GPU
 * was busy when GPU 1's kernel follows GPU 0's; and when GPU 1's is a communication kernel running
 * beside GPU 0's compute, GPU 1 computes nothing (exposed communication 150 us), where GPU 0's
 * compute kernel on another device used to hide 100 us of it. */
static void test_inject_standin__each_device_of_a_process_has_its_own_gpu_time(void **state)
{
    const struct cg_workdir *w = *state;
    static const struct {
        const char *device1;
        int64_t busy, compute;
    } cases[] = {
        {"CG_STANDIN_DEVICE1=_Z14standin_kernelv,100000,150000", 150000, 150000},
        {"CG_STANDIN_DEVICE1=ncclDevKernel_AllReduce_Sum_f32_RING_LL,0,150000", 150000, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct cg_proc p;
        const char *env[] = {"CANARY_GATE_WARMUP=1", "CANARY_GATE_STEPS=2", cases[i].device1, NULL};
        const char *args[] = {"--cuda-init", "--standin-kernels", "--steps", "4", "--step-ms", "2",
                              NULL};
        assert_int_equal(run_standin(w, env, args, &p), 0);
        const char *shard = cg_canary_shard(w);
        const char *done = cg_text_line(shard, "done 3\n");
        if (done == NULL || cg_text_line(shard, "uuid 1 GPU-20212223-") == NULL)
            fail_msg("%s: no 'done 3' or no second GPU:\n%s", cases[i].device1, shard);
        for (int64_t step = 1; step <= 2; step++) {
            int64_t busy = 0;
            for (const char *b = cg_text_line(shard, "b "); b != NULL && b < done;
                 b = cg_text_line(b + 1, "b ")) {
                long long k = 0, v = 0;
                if (sscanf(b, "b %lld %lld", &k, &v) == 2 && k == step)
                    busy += v;
            }
            if (busy != cases[i].busy ||
                cg_shard_count(shard, done, step, "compute_ns") != cases[i].compute ||
                cg_shard_count(shard, done, step, "kernels") != 2)
                fail_msg("%s: step %lld: busy %lld, compute %lld, kernels %lld; expected %lld, "
                         "%lld, 2:\n%s",
                         cases[i].device1, (long long)step, (long long)busy,
                         (long long)cg_shard_count(shard, done, step, "compute_ns"),
                         (long long)cg_shard_count(shard, done, step, "kernels"),
                         (long long)cases[i].busy, (long long)cases[i].compute, shard);
        }
        assert_null(cg_text_line(shard, "w more than 8 GPUs"));
    }
}

/* The end of the measured window synchronises every context the process created, not only the
 * ending thread's: GPU 1's kernels complete only when the next one is launched or its context is
 * synchronised (CG_STANDIN_DEVICE1_ASYNC), so the last measured step's kernel on GPU 1 reaches
 * the window's figures (before "done") only if the window's end synchronised GPU 1 (its context
 * known from the CONTEXT_CREATED callback). */
static void test_inject_standin__the_window_end_synchronises_every_context(void **state)
{
    const struct cg_workdir *w = *state;
    struct cg_proc p;
    const char *env[] = {"CANARY_GATE_WARMUP=1", "CANARY_GATE_STEPS=2",
                         "CG_STANDIN_DEVICE1=_Z14standin_kernelv,0,150000",
                         "CG_STANDIN_DEVICE1_ASYNC=1", NULL};
    const char *args[] = {"--preload", CG_TEST_CUDA_STANDIN, "--cuda-init", "--standin-kernels",
                          "--steps", "4", "--step-ms", "2", NULL};
    assert_int_equal(run_standin(w, env, args, &p), 0);
    const char *shard = cg_canary_shard(w);
    const char *log = calls(w);
    const char *done = cg_text_line(shard, "done 3\n");
    if (done == NULL)
        fail_msg("no 'done 3':\n%s", shard);
    const char *sync0 = event(log, "sync ctx"), *sync1 = event(log, "sync ctx 1");
    const char *forced = event(log, "flush forced");
    if (event(log, "context created 1") == NULL || sync0 == NULL || sync1 == NULL ||
        forced == NULL || sync0 > forced || sync1 > forced || event(log, "sync no-ctx") != NULL)
        fail_msg("both GPUs' contexts not synchronised before the forced flush:\n%s", log);
    assert_int_equal(cg_shard_count(shard, done, 2, "kernels"), 2);
    assert_int_equal(cg_shard_count(shard, done, 1, "kernels"), 2);
    /* GPU 1's 150 us, the slower, is the step's busy time */
    for (int64_t step = 1; step <= 2; step++) {
        int64_t busy = 0;
        for (const char *b = cg_text_line(shard, "b "); b != NULL && b < done;
             b = cg_text_line(b + 1, "b ")) {
            long long k = 0, v = 0;
            if (sscanf(b, "b %lld %lld", &k, &v) == 2 && k == step)
                busy += v;
        }
        if (busy != 150000)
            fail_msg("step %lld: busy %lld before done, expected 150000:\n%s", (long long)step,
                     (long long)busy, shard);
    }
    assert_null(cg_text_line(shard, "w CUPTI context callbacks unavailable"));
}

/* The sum of the DELTAs of shard lines "HEAD<DELTA> NAME" (NAME the line's last field). */
static long long sum_lines(const char *shard, const char *head, const char *name)
{
    long long sum = 0;
    size_t hn = strlen(head), nn = strlen(name);
    for (const char *l = strstr(shard, head); l != NULL; l = strstr(l + 1, head)) {
        if (l != shard && l[-1] != '\n')
            continue;
        char *end;
        long long v = strtoll(l + hn, &end, 10);
        /* "o range CALLS NS NAME" has the time before the name */
        if (*end == ' ' && strncmp(head, "o range ", 8) == 0)
            (void)strtoll(end + 1, &end, 10);
        if (*end == ' ' && strncmp(end + 1, name, nn) == 0 && end[1 + nn] == '\n')
            sum += v;
    }
    return sum;
}

/* CANARY_GATE_OVERHEAD_TOGGLE=1 with 4 measured steps: on off off on. The off steps' ranges are
 * not timed and their calls not placed: the range ops and the places hold the two on steps'
 * alone, the steps are all there, and the shard says so (a "toggle" line and a warning); without
 * the variable, all four steps'. */
static void test_inject_standin__overhead_toggle_leaves_the_off_blocks_work_undone(void **state)
{
    const struct cg_workdir *w = *state;
    struct cg_proc p;
    const char *args[] = {"--cuda-init", "--standin-placed", "--steps", "6", "--step-ms", "2",
                          NULL};
    const char *on[] = {"CANARY_GATE_WARMUP=1", "CANARY_GATE_STEPS=4",
                        "CANARY_GATE_OVERHEAD_TOGGLE=1", NULL};
    assert_int_equal(run_standin(w, on, args, &p), 0);
    const char *shard = cg_canary_shard(w);
    if (cg_text_line(shard, "toggle 1\n") == NULL ||
        cg_text_line(shard, "w overhead toggle: measured steps in blocks of 1, on off off on") ==
            NULL ||
        cg_text_line(shard, "done 5\n") == NULL)
        fail_msg("no toggle line, warning or 'done 5':\n%s", shard);
    long long fw = sum_lines(shard, "o range ", "forward");
    long long placed = sum_lines(shard, "np sync_stream in ", "forward");
    if (fw != 2 || placed != 2)
        fail_msg("forward timed %lld times, its synchronisation placed %lld (expected 2 and 2: "
                 "the on steps'):\n%s",
                 fw, placed, shard);
    const char *off[] = {"CANARY_GATE_WARMUP=1", "CANARY_GATE_STEPS=4", NULL};
    assert_int_equal(run_standin(w, off, args, &p), 0);
    shard = cg_canary_shard(w);
    assert_null(cg_text_line(shard, "toggle "));
    fw = sum_lines(shard, "o range ", "forward");
    placed = sum_lines(shard, "np sync_stream in ", "forward");
    if (fw != 4 || placed != 4)
        fail_msg("without the toggle: forward %lld, placed %lld (expected 4 and 4):\n%s", fw,
                 placed, shard);
}

/* CANARY_GATE_CUPTI_OFF: each part named is left off with a warning (its counts unknown), a
 * name that is no optional part is a warning and changes nothing, and the steps are complete. */
static void test_inject_standin__parts_left_off_by_the_user(void **state)
{
    const struct cg_workdir *w = *state;
    const struct {
        const char *env, *absent_call, *absent[6], *warning[2];
    } cases[] = {
        {"CANARY_GATE_CUPTI_OFF=SYNCHRONIZATION,JIT",
         "enable SYNCHRONIZATION",
         {"sync_stream", "sync_event", "sync_context", "sync_wait_event", "sync_ns", "jit"},
         {"w CUPTI set-up part left off (CANARY_GATE_CUPTI_OFF): SYNCHRONIZATION\n",
          "w CUPTI set-up part left off (CANARY_GATE_CUPTI_OFF): JIT\n"}},
        {"CANARY_GATE_CUPTI_OFF=module_loads",
         "callback on MODULE_LOADED",
         {"module_loads"},
         {"w CUPTI set-up part left off (CANARY_GATE_CUPTI_OFF): module_loads\n"}},
        {"CANARY_GATE_CUPTI_OFF=places",
         "callback on RUNTIME cudaStreamSynchronize",
         {"places"},
         {"w CUPTI set-up part left off (CANARY_GATE_CUPTI_OFF): places\n"}},
        {"CANARY_GATE_CUPTI_OFF=one_buffer",
         "attribute PER_THREAD_ACTIVITY_BUFFER 0",
         {NULL},
         {"w CUPTI set-up part left off (CANARY_GATE_CUPTI_OFF): one_buffer\n"}},
        {"CANARY_GATE_CUPTI_OFF=flush_period",
         "flush period",
         {NULL},
         {"w CUPTI set-up part left off (CANARY_GATE_CUPTI_OFF): flush_period\n"}},
        {"CANARY_GATE_CUPTI_OFF=step_flush",
         NULL,
         {NULL},
         {"w CUPTI set-up part left off (CANARY_GATE_CUPTI_OFF): step_flush\n"}},
        /* a required kind, and the library's clock (records would leave their steps) */
        {"CANARY_GATE_CUPTI_OFF=CONCURRENT_KERNEL,timestamp",
         NULL,
         {NULL},
         {"w CANARY_GATE_CUPTI_OFF names no part that can be left off (ignored): "
          "CONCURRENT_KERNEL\n",
          "w CANARY_GATE_CUPTI_OFF names no part that can be left off (ignored): timestamp\n"}},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct cg_proc p;
        const char *env[] = {"CANARY_GATE_WARMUP=1", "CANARY_GATE_STEPS=2", cases[i].env, NULL};
        /* steps of 25 ms rather than 2: the flush thread, slow under ASan on a loaded machine,
         * once merged all the step ends' requests into one */
        const char *args[] = {COUNTING_ARGS, "--step-ms", "25", NULL};
        assert_int_equal(run_standin(w, env, args, &p), 0);
        const char *shard = cg_canary_shard(w);
        const char *log = calls(w);
        if (cg_text_line(shard, "gpu ok\n") == NULL || cg_text_line(shard, "done 3\n") == NULL)
            fail_msg("%s: no gpu ok or no done 3:\n%s", cases[i].env, shard);
        for (size_t k = 0; k < 2 && cases[i].warning[k] != NULL; k++)
            if (cg_text_line(shard, cases[i].warning[k]) == NULL)
                fail_msg("%s: no '%s' in:\n%s", cases[i].env, cases[i].warning[k], shard);
        if (cases[i].absent_call != NULL && event(log, cases[i].absent_call) != NULL)
            fail_msg("%s: '%s' was called:\n%s", cases[i].env, cases[i].absent_call, log);
        size_t n_absent = 0;
        for (size_t k = 0; k < 6 && cases[i].absent[k] != NULL; k++, n_absent++)
            if (counted(shard, cases[i].absent[k]))
                fail_msg("%s: '%s' is counted:\n%s", cases[i].env, cases[i].absent[k], shard);
        for (size_t k = 0; k < sizeof(counting_want) / sizeof(counting_want[0]); k++) {
            const char *name = counting_want[k].name;
            bool absent = false;
            for (size_t j = 0; j < n_absent; j++)
                absent |= strcmp(cases[i].absent[j], name) == 0;
            if (!absent && (!counted(shard, name) ||
                            cg_shard_count(shard, NULL, 1, name) != counting_want[k].per_step))
                fail_msg("%s: %s not counted as with every part on:\n%s", cases[i].env, name,
                         shard);
        }
        /* the flush after every step end but the window's last (requests may merge): more than
         * one with the part on, the first step's alone with it off */
        int flushes = events(log, "flush");
        bool step_flush_off = strstr(cases[i].env, "step_flush") != NULL;
        if (step_flush_off ? flushes != 1 : flushes < 2)
            fail_msg("%s: %d unforced flushes:\n%s", cases[i].env, flushes, log);
        assert_int_equal(events(log, "flush period") == 0,
                         strstr(cases[i].env, "flush_period") != NULL);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inject_standin__gpu_exit_flush_runs_before_libcupti_teardown),
        cmocka_unit_test(test_inject_standin__window_end_syncs_flushes_then_writes_done),
        cmocka_unit_test(test_inject_standin__window_end_complete_before_os_exit),
        cmocka_unit_test(test_inject_standin__one_activity_buffer_for_all_threads),
        cmocka_unit_test(test_inject_standin__exit_never_waits_forever_for_the_flush_thread),
        cmocka_unit_test(test_inject_standin__driver_version_from_the_loaded_libcuda),
        cmocka_unit_test(test_inject_standin__the_device_is_named_by_its_uuid),
        cmocka_unit_test(test_inject_standin__optional_kinds_and_clock_refused_are_warnings),
        cmocka_unit_test(test_inject_standin__fatal_refusal_disables_and_unsubscribes),
        cmocka_unit_test(test_inject_standin__an_already_loaded_libcupti_is_used),
        cmocka_unit_test(test_inject_standin__a_forked_child_never_flushes),
        cmocka_unit_test(
            test_inject_standin__a_fork_never_lands_inside_an_exit_handler_registration),
        cmocka_unit_test(test_inject_standin__counts_per_step_up_to_the_window_end),
        cmocka_unit_test(test_inject_standin__polling_queries_are_not_synchronisations),
        cmocka_unit_test(test_inject_standin__refusals_leave_their_counts_out_of_the_counted),
        cmocka_unit_test(test_inject_standin__calls_placed_in_their_nvtx_ranges),
        cmocka_unit_test(test_inject_standin__virtual_memory_calls_placed),
        cmocka_unit_test(test_inject_standin__calls_of_a_newer_libcuptis_functions_placed),
        cmocka_unit_test(
            test_inject_standin__calls_of_a_thread_without_ranges_placed_at_the_step_thread),
        cmocka_unit_test(
            test_inject_standin__calls_of_a_thread_with_closed_ranges_placed_at_the_step_thread),
        cmocka_unit_test(test_inject_standin__parts_left_off_by_the_user),
        cmocka_unit_test(test_inject_standin__overhead_toggle_leaves_the_off_blocks_work_undone),
        cmocka_unit_test(test_inject_standin__communication_kernels_named_by_the_user),
        cmocka_unit_test(test_inject_standin__a_step_boundary_never_waits_for_a_reduction),
        cmocka_unit_test(test_inject_standin__boundaries_queued_without_a_buffer_apply_in_order),
        cmocka_unit_test(test_inject_standin__each_device_of_a_process_has_its_own_gpu_time),
        cmocka_unit_test(test_inject_standin__the_window_end_synchronises_every_context),
    };
    return cmocka_run_group_tests(tests, cg_workdir_setup, cg_workdir_teardown);
}

#else

static void test_inject_standin__skipped_without_cupti(void **state)
{
    (void)state;
    skip();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inject_standin__skipped_without_cupti)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#endif
