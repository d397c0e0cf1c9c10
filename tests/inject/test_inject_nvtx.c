/*
 * test_inject_nvtx: the injection library's NVTX side run for real: the test canary
 * (tests/canaries/nvtx_canary.c) loads libcanary-inject.so through NVTX as canary-gate makes it
 * (but without canary-gate, so the library's own lines are checked), and the shard it writes is
 * read back. Pinned here: ops counted only in the measured window (CANARY_GATE_STEPS), "done N"
 * written when the window's last step ends and before the process exits, the op table's overflow
 * reported, domain and string handles the library never gave out neither crash it nor count
 * as its own, and the NVTX ranges counted per step ("n I ranges DELTA": ranges begun in the step
 * on any thread, the step range not, every step before the window's end, complete before "done")
 * are, over the measured steps, the range ops' calls.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#if CG_HAVE_NVTX

#include "inject_support.h"

#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <time.h>

static void test_inject_nvtx__ops_count_only_in_the_measured_window(void **state)
{
    const struct cg_workdir *w = *state;
    struct cg_proc p;
    const char *env[] = {"CANARY_GATE_WARMUP=2", "CANARY_GATE_STEPS=3", NULL};
    const char *args[] = {"--steps", "9", "--step-ms", "1", "--nested", NULL};
    assert_int_equal(cg_canary_run(w, env, args, &p), 0);
    const char *shard = cg_canary_shard(w);
    assert_int_equal(cg_text_count(shard, "s "), 9); /* every step is still timed */
    assert_int_equal(cg_shard_op_calls(shard, NULL, "range", "forward"), 3);
    assert_int_equal(cg_shard_op_calls(shard, NULL, "range", "backward"), 3);
}

static void test_inject_nvtx__without_a_step_count_ops_count_to_the_end(void **state)
{
    const struct cg_workdir *w = *state;
    struct cg_proc p;
    const char *env[] = {"CANARY_GATE_WARMUP=2", NULL};
    const char *args[] = {"--steps", "9", "--step-ms", "1", "--nested", NULL};
    assert_int_equal(cg_canary_run(w, env, args, &p), 0);
    const char *shard = cg_canary_shard(w);
    assert_int_equal(cg_shard_op_calls(shard, NULL, "range", "forward"), 7);
    assert_null(cg_text_line(shard, "done"));
    assert_non_null(cg_text_line(shard, "end\n"));
}

static void test_inject_nvtx__done_follows_the_last_measured_step(void **state)
{
    const struct cg_workdir *w = *state;
    struct cg_proc p;
    const char *env[] = {"CANARY_GATE_WARMUP=2", "CANARY_GATE_STEPS=3", NULL};
    const char *args[] = {"--steps", "8", "--step-ms", "1", "--nested", NULL};
    assert_int_equal(cg_canary_run(w, env, args, &p), 0);
    const char *shard = cg_canary_shard(w);
    const char *done = cg_text_line(shard, "done ");
    assert_non_null(done);
    assert_int_equal(cg_text_count(shard, "done "), 1);
    assert_memory_equal(done, "done 5\n", 7);
    const char *last = cg_text_line(shard, "s 4 ");
    const char *after = cg_text_line(shard, "s 5 ");
    assert_non_null(last);
    assert_non_null(after);
    assert_true(last < done && done < after);
    /* everything measured is before "done": the window's op totals are all there */
    assert_int_equal(cg_shard_op_calls(shard, done, "range", "forward"), 3);
    assert_non_null(cg_text_line(done, "end\n"));
}

static void test_inject_nvtx__no_done_when_the_window_is_not_reached(void **state)
{
    const struct cg_workdir *w = *state;
    struct cg_proc p;
    const char *env[] = {"CANARY_GATE_WARMUP=2", "CANARY_GATE_STEPS=3", NULL};
    const char *args[] = {"--steps", "4", "--step-ms", "1", NULL};
    assert_int_equal(cg_canary_run(w, env, args, &p), 0);
    const char *shard = cg_canary_shard(w);
    assert_int_equal(cg_text_count(shard, "s "), 4);
    assert_null(cg_text_line(shard, "done"));
    assert_non_null(cg_text_line(shard, "end\n"));
}

/* A canary that hangs after the window: "done" is in its .part shard while it still runs. */
static void test_inject_nvtx__done_is_written_before_the_process_exits(void **state)
{
    const struct cg_workdir *w = *state;
    cg_canary_clear_shards(w);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("NVTX_INJECTION64_PATH", CG_TEST_LIB, 1);
        setenv("CANARY_GATE_SHARD_DIR", cg_workdir_in(w, "shards"), 1);
        setenv("CANARY_GATE_WARMUP", "1", 1);
        setenv("CANARY_GATE_STEPS", "2", 1);
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 1);
        execl(CG_TEST_CANARY, CG_TEST_CANARY, "--steps", "10", "--step-ms", "1", "--hang-at",
              "3", (char *)NULL);
        _exit(127);
    }
    bool seen = false;
    for (int i = 0; i < 1000 && !seen; i++) { /* up to 10 s */
        const char *name = cg_canary_shard_name(w);
        if (name != NULL && strstr(name, ".part") != NULL)
            seen = cg_text_line(cg_workdir_read(w, name), "done 3\n") != NULL;
        if (!seen) {
            struct timespec ts = {0, 10000000};
            nanosleep(&ts, NULL);
        }
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, WNOHANG), 0); /* still running */
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    assert_true(seen);
}

static void test_inject_nvtx__op_table_overflow_is_reported(void **state)
{
    const struct cg_workdir *w = *state;
    struct cg_proc p;
    /* the table takes 3072 names: 3100 distinct ones leave 28 out (one measured step, so the
     * shard's 3072 op lines stay within what the test reads) */
    const char *args[] = {"--steps", "2", "--step-ms", "0", "--many-names", "3100", NULL};
    const char *windowed[] = {"CANARY_GATE_WARMUP=1", "CANARY_GATE_STEPS=1", NULL};
    assert_int_equal(cg_canary_run(w, windowed, args, &p), 0);
    const char *shard = cg_canary_shard(w);
    const char *warning = cg_text_line(shard, "w op table full: 28 more names not recorded\n");
    assert_non_null(warning);
    assert_true(warning < cg_text_line(shard, "done 2\n"));
    assert_int_equal(cg_shard_op_calls(shard, NULL, "range", "name-0"), 1);

    const char *open_ended[] = {"CANARY_GATE_WARMUP=1", NULL};
    assert_int_equal(cg_canary_run(w, open_ended, args, &p), 0);
    shard = cg_canary_shard(w);
    warning = cg_text_line(shard, "w op table full: 28 more names not recorded\n");
    assert_non_null(warning);
    assert_true(warning < cg_text_line(shard, "end\n"));
}

static void test_inject_nvtx__foreign_handles_are_never_dereferenced(void **state)
{
    const struct cg_workdir *w = *state;
    struct cg_proc p;
    const char *env[] = {"CANARY_GATE_WARMUP=0", NULL};
    const char *args[] = {"--steps", "3", "--step-ms", "0", "--foreign-handles", NULL};
    int rc = cg_canary_run(w, env, args, &p);
    if (rc != 0)
        fail_msg("the canary exited %d: %s", rc, p.err);
    const char *shard = cg_canary_shard(w);
    assert_int_equal(cg_text_count(shard, "s "), 3);
    /* two made-up domain handles, a push and a start each, per step: never the default domain */
    assert_int_equal(cg_shard_op_calls(shard, NULL, "range", "(unknown domain):foreign"), 12);
    assert_int_equal(cg_shard_op_calls(shard, NULL, "range", "foreign"), 0);
    /* made-up string handles name nothing */
    assert_int_equal(cg_shard_op_calls(shard, NULL, "range", ""), 6);
}

/* --steps-from auto gives the library a second step name (the optimizer's, here "forward" and
 * "step" stand in): of the two, the first a process begins marks its steps and ranges of the
 * other are neither steps nor ops; the shard says where the steps came from. */
static void test_inject_nvtx__first_step_name_begun_marks_the_steps(void **state)
{
    const struct cg_workdir *w = *state;
    struct cg_proc p;
    const char *args[] = {"--steps", "4", "--step-ms", "1", "--nested", NULL};
    /* the step range first: the nested fallback name is ignored */
    const char *own[] = {"CANARY_GATE_STEP_FALLBACK=forward", NULL};
    assert_int_equal(cg_canary_run(w, own, args, &p), 0);
    const char *shard = cg_canary_shard(w);
    assert_int_equal(cg_text_count(shard, "s "), 4);
    assert_int_equal(cg_shard_op_calls(shard, NULL, "range", "forward"), 0);
    assert_int_equal(cg_shard_op_calls(shard, NULL, "range", "backward"), 4);
    assert_int_equal(cg_text_count(shard, "steps_from nvtx\n"), 1);
    /* only the fallback name is begun: it marks the steps */
    const char *fallback[] = {"CANARY_GATE_STEP_RANGE=absent", "CANARY_GATE_STEP_FALLBACK=step",
                              NULL};
    assert_int_equal(cg_canary_run(w, fallback, args, &p), 0);
    shard = cg_canary_shard(w);
    assert_int_equal(cg_text_count(shard, "s "), 4);
    assert_int_equal(cg_shard_op_calls(shard, NULL, "range", "forward"), 4);
    /* the step name is nested: the fallback began first and wins, the nested name is ignored */
    const char *nested[] = {"CANARY_GATE_STEP_RANGE=forward", "CANARY_GATE_STEP_FALLBACK=step",
                            NULL};
    assert_int_equal(cg_canary_run(w, nested, args, &p), 0);
    shard = cg_canary_shard(w);
    assert_int_equal(cg_text_count(shard, "s "), 4);
    assert_int_equal(cg_shard_op_calls(shard, NULL, "range", "forward"), 0);
    assert_int_equal(cg_shard_op_calls(shard, NULL, "range", "backward"), 4);
}

/* The step name begun after the fallback's steps (a script's own canary_gate.step ranges after
 * one optimizer step made before its loop): while every step the fallback began is a warm-up
 * step, the step name takes over, the fallback's running step is dropped and its index reused, and
 * the shard says so; once the fallback has begun a measured step, the step name is ignored, and
 * the shard says that too. ("step" stands in for the optimizer's name, "forward" for the own.) */
static void test_inject_nvtx__own_step_name_after_warm_up_fallback_steps_takes_over(void **state)
{
    const struct cg_workdir *w = *state;
    struct cg_proc p;
    const char *args[] = {"--steps", "6", "--step-ms", "1", "--nested", NULL};
    const char *warm[] = {"CANARY_GATE_STEP_RANGE=forward", "CANARY_GATE_STEP_FALLBACK=step",
                          "CANARY_GATE_WARMUP=2", "CANARY_GATE_STEPS=3", NULL};
    assert_int_equal(cg_canary_run(w, warm, args, &p), 0);
    const char *shard = cg_canary_shard(w);
    /* six "forward" steps from index 0, each written once; the dropped "step" is not */
    assert_int_equal(cg_text_count(shard, "s "), 6);
    for (int i = 0; i < 6; i++) {
        char line[16];
        snprintf(line, sizeof(line), "s %d ", i);
        assert_int_equal(cg_text_count(shard, line), 1);
    }
    assert_non_null(cg_text_line(shard, "done 5\n"));
    /* "backward" is no part of a "forward" step: not an op */
    assert_int_equal(cg_shard_op_calls(shard, NULL, "range", "backward"), 0);
    assert_non_null(cg_text_line(shard, "w the canary's own 'forward' ranges began after 1 'step' "
                                        "range, a warm-up step: they mark the steps\n"));
    assert_int_equal(cg_text_count(shard, "ss "), 0); /* no step was nested */

    /* no warm-up: the fallback's first step is measured, the step name is ignored and said */
    const char *late[] = {"CANARY_GATE_STEP_RANGE=forward", "CANARY_GATE_STEP_FALLBACK=step",
                          "CANARY_GATE_WARMUP=0", "CANARY_GATE_STEPS=3", NULL};
    assert_int_equal(cg_canary_run(w, late, args, &p), 0);
    shard = cg_canary_shard(w);
    assert_int_equal(cg_text_count(shard, "s "), 6);
    assert_int_equal(cg_shard_op_calls(shard, NULL, "range", "backward"), 3);
    assert_int_equal(cg_text_count(shard, "w the canary's own 'forward' ranges began after "
                                          "the 'step' ranges' measured steps: ignored"),
                     1);
}

/* The sum of the calls of every "o range ..." line of text before stop (NULL: the end). */
static int64_t range_op_calls(const char *text, const char *stop)
{
    int64_t sum = 0;
    for (const char *p = cg_text_line(text, "o range "); p != NULL && (stop == NULL || p < stop);
         p = cg_text_line(p + 1, "o range ")) {
        long long calls = 0;
        if (sscanf(p, "o range %lld ", &calls) != 1)
            fail_msg("bad op line: %.80s", p);
        sum += calls;
    }
    return sum;
}

/* The sum of the "ranges" counts of steps first..last (inclusive) before stop. */
static int64_t ranges_of_steps(const char *text, const char *stop, int64_t first, int64_t last)
{
    int64_t sum = 0;
    for (int64_t k = first; k <= last; k++)
        sum += cg_shard_count(text, stop, k, "ranges");
    return sum;
}

static void test_inject_nvtx__ranges_are_counted_per_step_on_every_thread(void **state)
{
    const struct cg_workdir *w = *state;
    struct cg_proc p;
    /* per step: "forward" and "backward" on the step's thread, "worker" on 3 threads, two
     * ranges of the NCCL domain (one of them named "step") around the step range: 5 in it */
    const char *env[] = {"CANARY_GATE_WARMUP=2", "CANARY_GATE_STEPS=3", NULL};
    const char *args[] = {"--steps",   "6", "--step-ms",      "1", "--nested",
                          "--threads", "3", "--other-domain", NULL};
    assert_int_equal(cg_canary_run(w, env, args, &p), 0);
    const char *shard = cg_canary_shard(w);
    const char *done = cg_text_line(shard, "done 5\n");
    assert_non_null(done);
    for (int64_t k = 0; k < 5; k++) /* warm-up included, complete before "done" */
        if (cg_shard_count(shard, done, k, "ranges") != 5)
            fail_msg("step %lld: %lld ranges, expected 5:\n%s", (long long)k,
                     (long long)cg_shard_count(shard, NULL, k, "ranges"), shard);
    assert_null(cg_text_line(shard, "n 5 ")); /* past the window's end */
    assert_int_equal(cg_shard_count(shard, NULL, -1, "ranges"), 25);
    /* each step's count is written when it ends: after its step line, before the next one's */
    for (int64_t k = 0; k < 5; k++) {
        char s_line[16], next_line[16], n_line[32];
        snprintf(s_line, sizeof(s_line), "s %lld ", (long long)k);
        snprintf(next_line, sizeof(next_line), "s %lld ", (long long)k + 1);
        snprintf(n_line, sizeof(n_line), "n %lld ranges ", (long long)k);
        const char *step = cg_text_line(shard, s_line), *count = cg_text_line(shard, n_line);
        const char *next = cg_text_line(shard, next_line);
        if (step == NULL || count == NULL || next == NULL || !(step < count && count < next))
            fail_msg("step %lld: its count is not written when it ends:\n%s", (long long)k, shard);
    }
}

/* Over the measured steps the ranges counted are the range ops' calls, whatever marks the steps
 * and the ranges (start/end, registered strings, other domains, handles the library never gave
 * out, many names); warm-up steps add their ranges but no calls. */
static void test_inject_nvtx__measured_ranges_are_the_range_ops_calls(void **state)
{
    const struct cg_workdir *w = *state;
    static const char *const cases[][12] = {
        {"--nested", "--threads", "2", NULL},
        {"--mode", "start-end", "--nested", "--many-names", "7", NULL},
        {"--mode", "registered", "--other-domain", "--foreign-handles", NULL},
        {"--mode", "wide", "--unbalanced", "--nested", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct cg_proc p;
        const char *env[] = {"CANARY_GATE_WARMUP=2", "CANARY_GATE_STEPS=3", NULL};
        const char *args[20] = {"--steps", "7", "--step-ms", "1"};
        size_t n = 4;
        for (size_t k = 0; cases[i][k] != NULL; k++)
            args[n++] = cases[i][k];
        args[n] = NULL;
        int rc = cg_canary_run(w, env, args, &p);
        if (rc != 0)
            fail_msg("case %zu: the canary exited %d: %s", i, rc, p.err);
        const char *shard = cg_canary_shard(w);
        const char *done = cg_text_line(shard, "done 5\n");
        assert_non_null(done);
        int64_t measured = ranges_of_steps(shard, done, 2, 4);
        if (measured == 0 || measured != range_op_calls(shard, done) ||
            measured != range_op_calls(shard, NULL))
            fail_msg("case %zu: %lld ranges in the measured steps, %lld range op calls:\n%s", i,
                     (long long)measured, (long long)range_op_calls(shard, NULL), shard);
        assert_int_equal(ranges_of_steps(shard, NULL, 0, 1), 2 * measured / 3); /* warm-up */
    }
}

/* Without a window's end every step is counted, and the counts are complete at exit. */
static void test_inject_nvtx__ranges_without_a_window_end_are_written_by_exit(void **state)
{
    const struct cg_workdir *w = *state;
    struct cg_proc p;
    const char *env[] = {"CANARY_GATE_WARMUP=1", NULL};
    const char *args[] = {"--steps", "4", "--step-ms", "0", "--nested", NULL};
    assert_int_equal(cg_canary_run(w, env, args, &p), 0);
    const char *shard = cg_canary_shard(w);
    const char *end = cg_text_line(shard, "end\n");
    assert_non_null(end);
    assert_int_equal(ranges_of_steps(shard, end, 0, 3), 8);
    assert_int_equal(ranges_of_steps(shard, end, 1, 3), range_op_calls(shard, NULL));
}

/* Names the op table turned away are not timed, but their ranges are counted all the same. */
static void test_inject_nvtx__ranges_count_names_the_op_table_turned_away(void **state)
{
    const struct cg_workdir *w = *state;
    struct cg_proc p;
    const char *env[] = {"CANARY_GATE_WARMUP=1", "CANARY_GATE_STEPS=1", NULL};
    const char *args[] = {"--steps", "2", "--step-ms", "0", "--many-names", "3100", NULL};
    assert_int_equal(cg_canary_run(w, env, args, &p), 0);
    const char *shard = cg_canary_shard(w);
    assert_int_equal(cg_shard_count(shard, NULL, 1, "ranges"), 3100);
    assert_int_equal(range_op_calls(shard, NULL), 3072);
}

/* The wall times of the shard's steps ("s I START END TOKENS"), in order of their lines; returns
 * how many (at most cap). */
static size_t shard_step_walls(const char *shard, long long *wall, size_t cap)
{
    size_t n = 0;
    for (const char *p = cg_text_line(shard, "s "); p != NULL && n < cap;
         p = cg_text_line(p + 1, "s ")) {
        long long i = 0, start = 0, end = 0;
        if (sscanf(p, "s %lld %lld %lld", &i, &start, &end) != 3)
            fail_msg("bad step line: %.80s", p);
        wall[n++] = end - start;
    }
    return n;
}

/* The last "ss NESTED OTHER" line's totals; false when there is none. */
static bool shard_stray(const char *shard, long long *nested, long long *other)
{
    const char *last = NULL;
    for (const char *p = cg_text_line(shard, "ss "); p != NULL; p = cg_text_line(p + 1, "ss "))
        last = p;
    if (last == NULL)
        return false;
    if (sscanf(last, "ss %lld %lld", nested, other) != 2)
        fail_msg("bad stray step line: %.80s", last);
    return true;
}

/* Issue 37, item 9: "step" ranges nested in a step, or of a side thread, were measured as steps
 * (a side thread's 0.2 ms ranges made a canary twice as slow "-98%"). Steps come from the thread
 * that began the first step; the others are counted and named, never steps. */
static void test_inject_nvtx__steps_come_from_one_thread_never_nested(void **state)
{
    const struct cg_workdir *w = *state;
    struct cg_proc p;
    long long wall[64], nested = 0, other = 0;
    const char *nest[] = {"--steps", "6", "--step-ms", "4", "--stray-steps", "nested", NULL};
    assert_int_equal(cg_canary_run(w, NULL, nest, &p), 0);
    const char *shard = cg_canary_shard(w);
    assert_int_equal(shard_step_walls(shard, wall, 64), 6);
    for (int i = 0; i < 6; i++)
        assert_true(wall[i] >= 6000000); /* 4 ms and the two nested ranges of 1 ms */
    assert_true(shard_stray(shard, &nested, &other));
    assert_int_equal(nested, 12);
    assert_int_equal(other, 0);
    assert_non_null(cg_text_line(shard, "w 'step' ranges nested in a step: counted, never "
                                        "measured as steps\n"));
    assert_int_equal(cg_shard_op_calls(shard, NULL, "range", "step"), 0); /* nor an op */

    const char *side[] = {"--steps", "6", "--step-ms", "5", "--stray-steps", "thread", NULL};
    assert_int_equal(cg_canary_run(w, NULL, side, &p), 0);
    shard = cg_canary_shard(w);
    assert_int_equal(shard_step_walls(shard, wall, 64), 6);
    for (int i = 0; i < 6; i++)
        assert_true(wall[i] >= 5000000);
    assert_true(shard_stray(shard, &nested, &other));
    assert_int_equal(nested, 0);
    assert_true(other >= 1);
    assert_non_null(cg_text_line(shard, "w 'step' ranges on threads other than the first "
                                        "step's: counted, never measured as steps\n"));

    const char *plain[] = {"--steps", "3", "--step-ms", "1", NULL};
    assert_int_equal(cg_canary_run(w, NULL, plain, &p), 0);
    shard = cg_canary_shard(w);
    assert_false(shard_stray(shard, &nested, &other));
    assert_null(cg_text_line(shard, "w "));
}

/* This host's name as the library writes it in a shard's file name ("" when it has a '/', ' ' or
 * '\\'). */
static const char *shard_host(void)
{
    static char host[256];
    memset(host, 0, sizeof(host));
    if (gethostname(host, sizeof(host) - 1) != 0 || strcspn(host, "/ \\") != strlen(host))
        host[0] = '\0';
    return host;
}

/* "shards/shard-rx-lx-p<pid><exec>-h<host><suffix>" (exec "" or "-e<N>"). */
static const char *shard_file(long pid, const char *exec, const char *suffix)
{
    static char name[512];
    snprintf(name, sizeof(name), "shards/shard-rx-lx-p%ld%s-h%s%s", pid, exec, shard_host(),
             suffix);
    return name;
}

/* The shard of another process of pid, with a step; start: its "pid_start" line ("" none). */
static const char *other_part(long pid, const char *start)
{
    static char text[256];
    snprintf(text, sizeof(text),
             "canary-gate-shard 1\npid %ld\n%swarmup 0\nstep_range step\ns 0 100 200 -1\n", pid,
             start);
    return text;
}

/* The canary under the library, with no rank set, run by a process that first wrote
 * other_part(its pid, start) under its own pid's first shard name; returns its pid once it
 * exited 0. */
static long canary_after_other_part(const struct cg_workdir *w, const char *start)
{
    cg_canary_clear_shards(w);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        FILE *f = fopen(cg_workdir_in(w, shard_file((long)getpid(), "", ".part")), "w");
        if (f == NULL || fputs(other_part((long)getpid(), start), f) < 0 || fclose(f) != 0)
            _exit(126);
        static const char *const ranks[] = {"RANK", "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                                            "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK"};
        for (size_t i = 0; i < sizeof(ranks) / sizeof(ranks[0]); i++)
            unsetenv(ranks[i]);
        setenv("NVTX_INJECTION64_PATH", CG_TEST_LIB, 1);
        setenv("CANARY_GATE_SHARD_DIR", cg_workdir_in(w, "shards"), 1);
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 1);
        execl(CG_TEST_CANARY, CG_TEST_CANARY, "--steps", "3", "--step-ms", "1", (char *)NULL);
        _exit(127);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    return (long)pid;
}

/* A .part shard under the process's pid and host that no earlier image of it wrote (a process
 * that had the pid before the pid space wrapped, or one of another PID namespace sharing the
 * directory: its header names another start, or has no "pid_start" line yet) is left as it is,
 * neither finished nor renamed: the process writes its own shard under the next name. */
static void
test_inject_nvtx__a_shard_of_another_process_with_the_same_pid_is_left_alone(void **state)
{
    const struct cg_workdir *w = *state;
    static const char *const starts[] = {"pid_start 1 1\n", ""};
    for (size_t k = 0; k < sizeof(starts) / sizeof(starts[0]); k++) {
        long pid = canary_after_other_part(w, starts[k]);
        const char *other = shard_file(pid, "", ".part");
        if (!cg_workdir_exists(w, other))
            fail_msg("the other process's shard was renamed (case %zu)", k);
        assert_string_equal(cg_workdir_read(w, other), other_part(pid, starts[k]));
        assert_false(cg_workdir_exists(w, shard_file(pid, "", ".shard")));
        const char *own = cg_workdir_read(w, shard_file(pid, "-e1", ".shard"));
        assert_int_equal(cg_text_count(own, "s "), 3);
        assert_non_null(cg_text_line(own, "end\n"));
    }
}

/* A process that execs finishes the shard its earlier image left (the same process: its start is
 * the same), and writes its own under the next name: a Python script (canary_gate, no torch) that
 * starts the library, execs itself, and marks 2 steps. */
static void test_inject_nvtx__the_shard_of_an_earlier_image_is_finished(void **state)
{
    const struct cg_workdir *w = *state;
    if (access("/usr/bin/python3", X_OK) != 0)
        skip();
    FILE *f = fopen(cg_workdir_in(w, "reexec.py"), "w");
    assert_non_null(f);
    int put = fputs("import os, sys, canary_gate\n"
                    "with canary_gate.range('image'):\n"
                    "    pass\n"
                    "if os.environ.get('REEXECED') != '1':\n"
                    "    os.environ['REEXECED'] = '1'\n"
                    "    os.execv(sys.executable, [sys.executable] + sys.argv)\n"
                    "for i in range(2):\n"
                    "    with canary_gate.step():\n"
                    "        pass\n"
                    "print(os.getpid())\n",
                    f);
    assert_true(put >= 0);
    assert_int_equal(fclose(f), 0);
    cg_canary_clear_shards(w);
    static char shards[512];
    snprintf(shards, sizeof(shards), "CANARY_GATE_SHARD_DIR=%s", cg_workdir_in(w, "shards"));
    const char *env[] = {"NVTX_INJECTION64_PATH=" CG_TEST_LIB,
                         shards,
                         "PYTHONPATH=" CG_SOURCE_DIR "/python",
                         "RANK=",
                         "LOCAL_RANK=",
                         NULL};
    const char *args[] = {"reexec.py", NULL};
    struct cg_proc p;
    int rc = cg_workdir_run(w, "/usr/bin/python3", env, args, &p);
    if (rc != 0)
        fail_msg("python3 exited %d: %s", rc, p.err);
    long pid = strtol(p.out, NULL, 10);
    assert_true(pid > 0);
    const char *first = cg_workdir_read(w, shard_file(pid, "", ".shard"));
    assert_int_equal(cg_text_count(first, "s "), 0);
    assert_non_null(cg_text_line(first, "end\n"));
    const char *second = cg_workdir_read(w, shard_file(pid, "-e1", ".shard"));
    assert_int_equal(cg_text_count(second, "s "), 2);
    assert_false(cg_workdir_exists(w, shard_file(pid, "", ".part")));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inject_nvtx__ops_count_only_in_the_measured_window),
        cmocka_unit_test(test_inject_nvtx__without_a_step_count_ops_count_to_the_end),
        cmocka_unit_test(test_inject_nvtx__done_follows_the_last_measured_step),
        cmocka_unit_test(test_inject_nvtx__no_done_when_the_window_is_not_reached),
        cmocka_unit_test(test_inject_nvtx__done_is_written_before_the_process_exits),
        cmocka_unit_test(test_inject_nvtx__op_table_overflow_is_reported),
        cmocka_unit_test(test_inject_nvtx__foreign_handles_are_never_dereferenced),
        cmocka_unit_test(test_inject_nvtx__first_step_name_begun_marks_the_steps),
        cmocka_unit_test(test_inject_nvtx__own_step_name_after_warm_up_fallback_steps_takes_over),
        cmocka_unit_test(test_inject_nvtx__ranges_are_counted_per_step_on_every_thread),
        cmocka_unit_test(test_inject_nvtx__measured_ranges_are_the_range_ops_calls),
        cmocka_unit_test(test_inject_nvtx__ranges_without_a_window_end_are_written_by_exit),
        cmocka_unit_test(test_inject_nvtx__ranges_count_names_the_op_table_turned_away),
        cmocka_unit_test(test_inject_nvtx__steps_come_from_one_thread_never_nested),
        cmocka_unit_test(
            test_inject_nvtx__a_shard_of_another_process_with_the_same_pid_is_left_alone),
        cmocka_unit_test(test_inject_nvtx__the_shard_of_an_earlier_image_is_finished),
    };
    return cmocka_run_group_tests(tests, cg_workdir_setup, cg_workdir_teardown);
}

#else

static void test_inject_nvtx__skipped_without_nvtx(void **state)
{
    (void)state;
    skip();
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_inject_nvtx__skipped_without_nvtx)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#endif
