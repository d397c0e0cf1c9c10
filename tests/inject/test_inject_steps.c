/*
 * test_inject_steps: the injection library's step logic (inject/nvtx_steps.c) compiled in, with
 * the shard writer and the GPU side stubbed (the lines it writes are kept in memory), so that its
 * per-process state can be reset between trials and two threads can race it many times in one
 * test. Pinned here: the script's own step name taking over from fallback steps begun in warm-up
 * (own_takes_over) while the fallback's thread ends its step and begins the next, as an optimizer
 * stepping on another thread than canary_gate.step() does: whatever the interleaving, every step
 * index is written once, the open step count is never off (so ranges in later steps are still
 * counted), and the own step is a step, never taken for another thread's.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../inject/nvtx_steps.c"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* --- the stubbed shard writer and GPU side ------------------------------------------------- */

static pthread_mutex_t g_text_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_text[1 << 16];
static size_t g_text_len;

void cg_inject_lock(void)
{
    pthread_mutex_lock(&g_text_lock);
}

void cg_inject_unlock(void)
{
    pthread_mutex_unlock(&g_text_lock);
}

void cg_inject_append_bytes(const char *p, size_t n)
{
    if (n > sizeof(g_text) - 1 - g_text_len)
        n = sizeof(g_text) - 1 - g_text_len;
    memcpy(g_text + g_text_len, p, n);
    g_text_len += n;
    g_text[g_text_len] = '\0';
}

void cg_inject_append(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n > 0)
        cg_inject_append_bytes(line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

void cg_inject_append_name(const char *name)
{
    cg_inject_append_bytes(name, strlen(name));
}

bool cg_inject_trace_take(void)
{
    return false;
}

void cg_inject_trace_dropped(int64_t n)
{
    (void)n;
}

void cg_inject_append_trace_counts(void)
{
}

void cg_inject_measured(void)
{
}

uint64_t cg_gpu_step_begin(int64_t index)
{
    (void)index;
    return cg_inject_now_ns();
}

uint64_t cg_gpu_step_end(int64_t index)
{
    (void)index;
    return cg_inject_now_ns();
}

/* --- the trials ------------------------------------------------------------------------------ */

/* "own" is the step name, "fallback" the fallback's (the optimizer's), 2 warm-up steps. */
static struct cg_inject_config g_cfg = {.step_range = "own",
                                        .step_fallback = "fallback",
                                        .warmup = 2,
                                        .steps = -1,
                                        .measure_end = INT64_MAX,
                                        .trace_first = -1,
                                        .trace_last = -1};

/* Resets the steps' state as a new process has it, and the lines written. */
static void reset_steps(void)
{
    atomic_store(&g_step_source, 0);
    atomic_store(&g_next_step, 0);
    atomic_store(&nvtx_cur_step, -1);
    atomic_store(&g_open_steps, 0);
    atomic_store(&g_steps_thread, NULL);
    atomic_store(&g_step_stack, NULL);
    atomic_store(&g_step_place, 0);
    atomic_store(&g_stray_nested, 0);
    atomic_store(&g_stray_other, 0);
    g_stray_written[0] = g_stray_written[1] = 0;
    g_ranges_from = 0;
    memset(g_se, 0, sizeof(g_se));
    g_se_next = 0;
    g_text_len = 0;
    g_text[0] = '\0';
}

/* A busy wait of n turns (a few ns each): the two threads' calls meet at every offset. */
static void spin(uint32_t n)
{
    for (volatile uint32_t i = 0; i < n; i++)
        ;
}

static uint32_t next_random(uint32_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 17;
    *x ^= *x << 5;
    return *x;
}

/* The fallback's thread: in each trial it begins a fallback step (its first, a warm-up step),
 * then, once the own thread is let go too, ends it and begins the next, as an optimizer does. */
struct race {
    _Atomic int trial; /* the trial to run, -1: stop */
    _Atomic int ready; /* the fallback step of this trial is open */
    _Atomic int go;    /* both threads may run */
    _Atomic int done;  /* the fallback's thread ended its step and began the next */
    uint32_t delay;    /* its spin before the end */
    uint64_t next_id;  /* the id of the step it began last */
};

static void *fallback_thread(void *arg)
{
    struct race *r = arg;
    for (int seen = 0;;) {
        int t;
        while ((t = atomic_load(&r->trial)) == seen)
            ;
        if (t < 0)
            return NULL;
        seen = t;
        uint64_t first = nvtx_start(NULL, "fallback", -1);
        atomic_store(&r->ready, t);
        while (atomic_load(&r->go) != t)
            ;
        spin(r->delay);
        nvtx_end(first);
        r->next_id = nvtx_start(NULL, "fallback", -1);
        atomic_store(&r->done, t);
    }
}

/* The step indices written ("s I ..." lines): each once, and together 0..n-1; returns n. */
static int assert_steps_once(int trial)
{
    int seen[8] = {0}, n = 0;
    for (const char *p = g_text; p != NULL && *p != '\0';) {
        int i = -1;
        if (strncmp(p, "s ", 2) == 0) {
            if (sscanf(p, "s %d ", &i) != 1 || i < 0 || i >= 8)
                fail_msg("trial %d: bad step line: %.60s", trial, p);
            if (seen[i]++ > 0)
                fail_msg("trial %d: step %d written twice:\n%s", trial, i, g_text);
            n++;
        }
        p = strchr(p, '\n');
        if (p != NULL)
            p++;
    }
    for (int i = 0; i < n; i++)
        if (seen[i] != 1)
            fail_msg("trial %d: the steps written are not 0..%d:\n%s", trial, n - 1, g_text);
    if (n < 1 || n > 2)
        fail_msg("trial %d: %d steps written:\n%s", trial, n, g_text);
    return n;
}

/* The own step name begins on this thread while the fallback's thread ends its warm-up step and
 * begins the next, at offsets spread over both calls, for up to 20000 trials or 20 s. Both ends
 * are seen: the takeover first (the fallback's step dropped, one step written) and the fallback's
 * end first (two). Skipped where the test may use one CPU only: the two threads never overlap. */
static void
test_inject_steps__own_step_name_racing_the_fallbacks_step_end_keeps_the_count(void **state)
{
    (void)state;
    cpu_set_t cpus;
    if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0 && CPU_COUNT(&cpus) < 2)
        skip();
    nvtx_steps_config(&g_cfg);
    nvtx_on = true;
    struct race r = {.trial = 0, .ready = 0, .go = 0, .done = 0};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, fallback_thread, &r), 0);
    uint32_t x = 2463534242u;
    time_t until = time(NULL) + 20;
    int trial = 1, written[3] = {0};
    for (; trial <= 20000 && time(NULL) < until; trial++) {
        reset_steps();
        r.delay = next_random(&x) % 400;
        uint32_t own_delay = next_random(&x) % 400;
        atomic_store(&r.trial, trial);
        while (atomic_load(&r.ready) != trial)
            ;
        atomic_store(&r.go, trial);
        spin(own_delay);
        nvtx_push(NULL, "own", -1);
        while (atomic_load(&r.done) != trial)
            ;
        /* the own step is a step, the only one open, and no range named as a step was stray */
        if (atomic_load(&g_open_steps) != 1 || atomic_load(&g_stray_other) != 0 ||
            atomic_load(&g_stray_nested) != 0)
            fail_msg("trial %d: %d steps open, %lld stray on other threads, %lld nested:\n%s",
                     trial, atomic_load(&g_open_steps), (long long)atomic_load(&g_stray_other),
                     (long long)atomic_load(&g_stray_nested), g_text);
        nvtx_end(r.next_id); /* the fallback's next step, if it was one: dropped */
        assert_int_equal(atomic_load(&g_open_steps), 1);
        assert_int_equal(nvtx_pop(NULL), 0);
        assert_int_equal(atomic_load(&g_open_steps), 0);
        written[assert_steps_once(trial)]++;
    }
    atomic_store(&r.trial, -1);
    pthread_join(th, NULL);
    assert_true(trial > 1000); /* the test ran enough trials to mean something */
    if (written[1] == 0 || written[2] == 0)
        fail_msg("the offsets did not cover the race: %d trials dropped the fallback's step, %d "
                 "ended it",
                 written[1], written[2]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_inject_steps__own_step_name_racing_the_fallbacks_step_end_keeps_the_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
