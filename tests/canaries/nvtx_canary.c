/*
 * nvtx-canary: a small annotated program for the collector's end-to-end tests.
 *
 * It marks steps with NVTX ranges like a training loop does and misbehaves on request. Options:
 *   --steps N        steps to run (default 5)
 *   --step-ms MS     sleep per step (default 10)
 *   --tokens K       give every step an int64 payload of K tokens (nvtxRangePushEx)
 *   --nested         ranges "forward" and "backward" nested in every step
 *   --threads T      T threads each mark a range "worker" inside every step
 *   --mode M         how steps are marked: push (default), wide, registered, start-end,
 *                    optimizer (start/end ranges named as canary-gate's Python hook names an
 *                    optimizer's steps: the steps of --steps-from auto when no "step" is seen)
 *   --other-domain   also push ranges named "step" in a domain "NCCL" (never steps)
 *   --unbalanced     stray pops and ends, and a range left open at exit
 *   --crash-at K     abort() after K steps
 *   --exit-at K      _exit(0) right after K steps (no exit handlers, as Python's os._exit)
 *   --hang-at K      sleep forever after K steps
 *   --no-steps       mark ranges named "compute" only
 * A rank (RANK, else Slurm's SLURM_PROCID; none: -1) can be singled out, as in a multi-node job:
 *   --only-rank R    --crash-at, --exit-at and --hang-at apply to rank R alone
 *   --slow-rank R    rank R sleeps --slow-ms MS (default 5) more in every step: a straggler
 *   --skip-rank R    rank R exits 0 at once, before any NVTX call: a rank that wrote nothing
 *   --workers W      spawn W copies of itself (fork + exec, RANK=i) and wait for them
 *   --cuda-init      call the injection library's InitializeInjection as the CUDA driver would
 *   --loss           report a loss of 8/(s+1) in step s: a "loss" mark with a double payload in
 *                    even steps, a mark "loss=<value>" (as torch.cuda.nvtx.mark sends) in odd ones
 *   --nan-loss-at K  report a NaN loss in step K (with --loss)
 *   --preload PATH   dlopen PATH (RTLD_LOCAL) before anything else, as PyTorch loads its own
 *                    libcupti or the CUDA runtime its driver (up to 4 times)
 *   --standin-kernels  "launch" a kernel of 100 us before the first step and at the start of
 *                    every step through the stand-in libcupti's cg_standin_kernel
 *                    (tests/standin/; found by its soname, libcupti.so.13, once it is loaded)
 * The options below call the stand-in's other exports the same way: once before the first step
 * (outside every step) and then in every step (or in step K), right after the step begins:
 *   --standin-graph-kernels N  N kernels of 50 us launched by a CUDA graph (graphId 5)
 *   --standin-syncs N  N synchronisations of each type: stream (100 us), event (50 us), context
 *                    (200 us) and a stream's wait on an event (10 us); and one of unknown type
 *   --standin-copies N  N host-to-device copies of 1 MiB from pinned memory (20 us)
 *   --standin-dtoh-pageable N  N device-to-host copies of 4096 bytes into pageable memory (10 us)
 *   --standin-allocs N  N device memory allocations of 1 MiB, then N releases
 *   --standin-jit-at K  one JIT compilation in step K
 *   --standin-module-load-at K  one module load in step K (the stand-in calls the library's
 *                    CUPTI callback, when it enabled it)
 *   --standin-placed  in every step, calls made among ranges: a stream synchronisation in a
 *                    range "forward", a device-to-pageable copy after it (no range open), a
 *                    context synchronisation in "inner" nested in "backward", a copy into
 *                    pinned memory (not a pageable one) and a device memory allocation in
 *                    "backward", and its release after it
 *   --fork-child K   after the first step, fork a child that runs K steps and returns from
 *                    main (its exit handlers run); the parent waits for it
 *   --fork-delay-ms N  with --fork-child, wait N ms after the first step before the fork
 *   --foreign-handles  in every step, NVTX calls with domain and string handles the tool never
 *                    gave out (made-up values and a pointer to the canary's own memory)
 *   --many-names K   in every step, K ranges of distinct names "name-<i>"
 *   --range-every K  a range named "every" in every K-th step only (steps 0, K, 2K, ...)
 *   --step-us US     a step of US microseconds instead of --step-ms (plain steps)
 *   --noise-pct P    each plain step's time times 1 + P% of a standard normal draw
 *   --drift-pct P    every plain step of this process times 1 + P% of one draw per process
 *                    (a process's state for its whole life); the draws seeded by pid and clock
 *   --range-name NAME  in every step, a range named NAME (up to 4 names; a secret in a name, as
 *                    a data loader naming its shard's URL, is the test)
 *   --stray-steps nested  two ranges of 1 ms named "step" nested in every step (no steps)
 *   --stray-steps thread  from inside the first step on, a side thread marks ranges of 0.2 ms
 *                    named "step" (0.2 ms apart) until the last step ends (no steps)
 * Writes one line to stdout at the end ("done N steps"). Single file, no dependencies but NVTX.
 */
#include <nvtx3/nvToolsExt.h>

#include <dlfcn.h>
#include <stdint.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct opts {
    long steps, step_ms, tokens, threads, crash_at, hang_at, workers, nan_loss_at, exit_at;
    const char *mode, *stray_steps;
    int nested, other_domain, unbalanced, no_steps, cuda_init, loss;
    long fork_child, many_names, fork_delay_ms, range_every;
    int standin_kernels, foreign_handles;
    long standin_graph_kernels, standin_syncs, standin_copies, standin_dtoh_pageable;
    long standin_allocs, standin_jit_at, standin_module_load_at, standin_placed;
    long only_rank, slow_rank, slow_ms, skip_rank, rank;
    long step_us;
    double noise_pct, drift_pct;
};

static struct opts o = {.steps = 5,
                        .step_ms = 10,
                        .tokens = -1,
                        .crash_at = -1,
                        .only_rank = -1,
                        .slow_rank = -1,
                        .slow_ms = 5,
                        .skip_rank = -1,
                        .hang_at = -1,
                        .nan_loss_at = -1,
                        .exit_at = -1,
                        .mode = "push",
                        .stray_steps = "",
                        .standin_jit_at = -1,
                        .standin_module_load_at = -1};
static void (*standin_kernel)(uint64_t ns);
static const char *range_names[4];
static int n_range_names;

/* The stand-in libcupti's other exports (tests/standin/cupti_standin.c), and the values of
 * cupti_activity.h's enums they take (CUDA 13.0), so that the canary needs no CUPTI headers. */
static struct {
    void (*graph_kernel)(uint64_t ns, uint32_t graph_id);
    void (*sync)(uint32_t type, uint64_t ns);
    void (*memcpy)(uint8_t copy_kind, uint8_t src_kind, uint8_t dst_kind, uint64_t bytes,
                   uint64_t ns);
    void (*memory)(int alloc, uint64_t bytes);
    void (*jit)(void);
    void (*module_load)(void);
} standin;
enum { SYNC_UNKNOWN, SYNC_EVENT, SYNC_STREAM_WAIT_EVENT, SYNC_STREAM, SYNC_CONTEXT };
enum { COPY_HTOD = 1, COPY_DTOH = 2 };
enum { MEMORY_PAGEABLE = 1, MEMORY_PINNED = 2, MEMORY_DEVICE = 3 };
static nvtxDomainHandle_t nccl;
static nvtxStringHandle_t step_str;

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static long num(const char *s)
{
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0') {
        fprintf(stderr, "nvtx-canary: bad number '%s'\n", s);
        exit(2);
    }
    return v;
}

static atomic_int side_stop;
static pthread_t side;
static int side_started;

/* --stray-steps thread: "step" ranges of 0.2 ms on a thread of their own. */
static void *side_steps(void *arg)
{
    (void)arg;
    do { /* one at least */
        struct timespec ts = {0, 200000};
        nvtxRangePushA("step");
        nanosleep(&ts, NULL);
        nvtxRangePop();
        nanosleep(&ts, NULL);
    } while (!atomic_load(&side_stop));
    return NULL;
}

/* The --stray-steps ranges inside step s. */
static void stray_steps(long s)
{
    if (strcmp(o.stray_steps, "nested") == 0) {
        for (int i = 0; i < 2; i++) {
            nvtxRangePushA("step");
            sleep_ms(1);
            nvtxRangePop();
        }
    } else if (strcmp(o.stray_steps, "thread") == 0 && s == 0 && !side_started) {
        side_started = pthread_create(&side, NULL, side_steps, NULL) == 0;
        sleep_ms(1); /* its first range begins while this step is open */
    }
}

static void *worker(void *arg)
{
    (void)arg;
    nvtxRangePushA("worker");
    sleep_ms(1);
    nvtxRangePop();
    return NULL;
}

/* Event attributes with an ASCII message and no payload. */
static nvtxEventAttributes_t ascii_attr(const char *message)
{
    nvtxEventAttributes_t a = {0};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = message;
    return a;
}

static nvtxRangeId_t step_begin(void)
{
    if (strcmp(o.mode, "wide") == 0) {
        nvtxRangePushW(L"step");
    } else if (strcmp(o.mode, "registered") == 0) {
        nvtxEventAttributes_t a = {0};
        a.version = NVTX_VERSION;
        a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
        a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
        a.message.registered = step_str;
        nvtxDomainRangePushEx(NULL, &a);
    } else if (strcmp(o.mode, "start-end") == 0) {
        return nvtxRangeStartA("step");
    } else if (strcmp(o.mode, "optimizer") == 0) {
        return nvtxRangeStartA("canary-gate/optimizer-step");
    } else if (o.tokens >= 0) {
        nvtxEventAttributes_t a = ascii_attr("step");
        a.payloadType = NVTX_PAYLOAD_TYPE_INT64;
        a.payload.llValue = o.tokens;
        nvtxRangePushEx(&a);
    } else {
        nvtxRangePushA("step");
    }
    return 0;
}

static void step_end(nvtxRangeId_t id)
{
    if (strcmp(o.mode, "start-end") == 0 || strcmp(o.mode, "optimizer") == 0)
        nvtxRangeEnd(id);
    else if (strcmp(o.mode, "registered") == 0)
        nvtxDomainRangePop(NULL);
    else
        nvtxRangePop();
}

static void report_loss(long s)
{
    double v = s == o.nan_loss_at ? NAN : 8.0 / (double)(s + 1);
    if (s % 2 == 0) {
        nvtxEventAttributes_t a = ascii_attr("loss");
        a.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;
        a.payload.dValue = v;
        nvtxMarkEx(&a);
    } else {
        char msg[64];
        snprintf(msg, sizeof(msg), "loss=%.17g", v);
        nvtxMarkA(msg);
    }
}

/* NVTX calls with handles the tool never gave out: they must neither crash nor count. */
static void foreign_handles(void)
{
    char own[64] = "not a handle";
    nvtxDomainHandle_t made_up[] = {(nvtxDomainHandle_t)(uintptr_t)0x1234,
                                    (nvtxDomainHandle_t)(void *)own};
    for (size_t i = 0; i < sizeof(made_up) / sizeof(made_up[0]); i++) {
        nvtxEventAttributes_t a = ascii_attr("foreign");
        nvtxDomainRangePushEx(made_up[i], &a);
        nvtxDomainRangePop(made_up[i]);
        nvtxDomainRangeEnd(made_up[i], nvtxDomainRangeStartEx(made_up[i], &a));
        nvtxDomainMarkEx(made_up[i], &a);
    }
    static int registered; /* strings live as long as the process: once, not per step */
    if (!registered++)
        for (size_t i = 0; i < sizeof(made_up) / sizeof(made_up[0]); i++)
            nvtxDomainRegisterStringA(made_up[i], "foreign string");
    nvtxEventAttributes_t r = ascii_attr("");
    r.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    r.message.registered = (nvtxStringHandle_t)(uintptr_t)0x5678;
    nvtxRangePushEx(&r);
    nvtxRangePop();
    r.message.registered = (nvtxStringHandle_t)(void *)own;
    nvtxRangePushEx(&r);
    nvtxRangePop();
}

/* The stand-in records of the --standin-* options for step s (-1: before the first step). */
static void standin_records(long s)
{
    for (long i = 0; i < o.standin_graph_kernels; i++)
        standin.graph_kernel(50000, 5);
    for (long i = 0; i < o.standin_syncs; i++) {
        standin.sync(SYNC_STREAM, 100000);
        standin.sync(SYNC_EVENT, 50000);
        standin.sync(SYNC_CONTEXT, 200000);
        standin.sync(SYNC_STREAM_WAIT_EVENT, 10000);
    }
    if (o.standin_syncs > 0)
        standin.sync(SYNC_UNKNOWN, 1000);
    for (long i = 0; i < o.standin_copies; i++)
        standin.memcpy(COPY_HTOD, MEMORY_PINNED, MEMORY_DEVICE, 1 << 20, 20000);
    for (long i = 0; i < o.standin_dtoh_pageable; i++)
        standin.memcpy(COPY_DTOH, MEMORY_DEVICE, MEMORY_PAGEABLE, 4096, 10000);
    for (long i = 0; i < o.standin_allocs; i++)
        standin.memory(1, 1 << 20);
    for (long i = 0; i < o.standin_allocs; i++)
        standin.memory(0, 1 << 20);
    if (standin.jit != NULL && (s < 0 || s == o.standin_jit_at))
        standin.jit();
    if (o.standin_placed && s >= 0) {
        nvtxRangePushA("forward");
        standin.sync(SYNC_STREAM, 1000);
        nvtxRangePop();
        standin.memcpy(COPY_DTOH, MEMORY_DEVICE, MEMORY_PAGEABLE, 4, 1000);
        nvtxRangePushA("backward");
        nvtxRangePushA("inner");
        standin.sync(SYNC_CONTEXT, 1000);
        nvtxRangePop();
        standin.memcpy(COPY_DTOH, MEMORY_DEVICE, MEMORY_PINNED, 4, 1000);
        standin.memory(1, 4096);
        nvtxRangePop();
        standin.memory(0, 4096);
    }
    if (standin.module_load != NULL && (s < 0 || s == o.standin_module_load_at))
        standin.module_load();
}

/* A near-normal draw of mean 0 and variance 1: the sum of 12 uniforms less 6 (no libm), from a
 * per-process xorshift generator. */
static double normal_draw(void)
{
    static uint64_t x;
    if (x == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        x = ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^ 0x9e3779b97f4a7c15ull;
    }
    double sum = 0.0;
    for (int i = 0; i < 12; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        sum += (double)(x >> 11) / 9007199254740992.0;
    }
    return sum - 6.0;
}

/* A plain step's sleep: --step-us or --step-ms, with --drift-pct and --noise-pct. */
static void plain_step_sleep(void)
{
    static double drift = 0.0; /* 0: not drawn yet */
    if (o.step_us <= 0 && o.noise_pct == 0 && o.drift_pct == 0) {
        sleep_ms(o.step_ms);
        return;
    }
    if (drift == 0.0)
        drift = 1.0 + o.drift_pct / 100.0 * normal_draw();
    double us = (double)(o.step_us > 0 ? o.step_us : o.step_ms * 1000) * drift *
                (1.0 + o.noise_pct / 100.0 * normal_draw());
    long ns = us > 0 ? (long)(us * 1000.0) : 0;
    struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void one_step(long s)
{
    if (o.other_domain) {
        nvtxEventAttributes_t a = ascii_attr("step");
        nvtxDomainRangePushEx(nccl, &a);
    }
    nvtxRangeId_t id = step_begin();
    if (standin_kernel != NULL)
        standin_kernel(100000);
    if (standin.sync != NULL)
        standin_records(s);
    if (o.foreign_handles)
        foreign_handles();
    stray_steps(s);
    for (int i = 0; i < n_range_names; i++) {
        nvtxRangePushA(range_names[i]);
        nvtxRangePop();
    }
    if (o.range_every > 0 && s % o.range_every == 0) {
        nvtxRangePushA("every");
        nvtxRangePop();
    }
    for (long i = 0; i < o.many_names; i++) {
        char name[32];
        snprintf(name, sizeof(name), "name-%ld", i);
        nvtxRangePushA(name);
        nvtxRangePop();
    }
    if (o.nested) {
        nvtxRangePushA("forward");
        sleep_ms(o.step_ms / 2);
        nvtxRangePop();
        nvtxRangePushA("backward");
        sleep_ms(o.step_ms - o.step_ms / 2);
        nvtxRangePop();
    } else {
        plain_step_sleep();
    }
    if (o.slow_rank >= 0 && o.slow_rank == o.rank)
        sleep_ms(o.slow_ms);
    if (o.threads > 0) {
        pthread_t t[64];
        long n = o.threads > 64 ? 64 : o.threads;
        for (long i = 0; i < n; i++)
            pthread_create(&t[i], NULL, worker, NULL);
        for (long i = 0; i < n; i++)
            pthread_join(t[i], NULL);
    }
    if (o.loss)
        report_loss(s);
    if (o.unbalanced) {
        nvtxDomainRangePop(nccl); /* nothing open in that domain */
        nvtxRangeEnd(12345);
    }
    step_end(id);
    if (o.other_domain)
        nvtxDomainRangePop(nccl);
}

static int spawn_workers(char *self)
{
    pid_t pids[16];
    long n = o.workers > 16 ? 16 : o.workers;
    for (long i = 0; i < n; i++) {
        char rank[16], steps[32], ms[32];
        snprintf(rank, sizeof(rank), "%ld", i);
        snprintf(steps, sizeof(steps), "%ld", o.steps);
        snprintf(ms, sizeof(ms), "%ld", o.step_ms + 5 * i);
        pids[i] = fork();
        if (pids[i] == 0) {
            setenv("RANK", rank, 1);
            setenv("LOCAL_RANK", rank, 1);
            char *argv[] = {self, "--steps", steps, "--step-ms", ms, "--tokens", "100", NULL};
            execv(self, argv);
            _exit(127);
        }
    }
    int rc = 0;
    for (long i = 0; i < n; i++) {
        int st = 0;
        waitpid(pids[i], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            rc = 1;
    }
    printf("done %ld workers\n", n);
    return rc;
}

static void cuda_init(void)
{
    const char *path = getenv("CUDA_INJECTION64_PATH");
    if (path == NULL)
        return;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL)
        return;
    int (*init)(void) = NULL;
    void *sym = dlsym(h, "InitializeInjection");
    memcpy(&init, &sym, sizeof(init)); /* POSIX: dlsym results may be function pointers */
    if (init != NULL)
        printf("InitializeInjection returned %d\n", init());
}

static void preload(const char *path)
{
    if (dlopen(path, RTLD_NOW | RTLD_LOCAL) == NULL) {
        fprintf(stderr, "nvtx-canary: cannot load '%s': %s\n", path, dlerror());
        exit(2);
    }
}

/* dlsym(h, name) into the function pointer at fn (POSIX: a data pointer converts); exits when
 * the stand-in does not export it. */
static void standin_symbol(void *h, const char *name, void *fn, size_t size)
{
    void *sym = h != NULL ? dlsym(h, name) : NULL;
    if (sym == NULL) {
        fprintf(stderr, "nvtx-canary: --standin-*: no stand-in libcupti with %s is loaded\n", name);
        exit(2);
    }
    memcpy(fn, &sym, size);
}

/* The stand-in libcupti's exports, once the library has loaded it: the kernel launcher for
 * --standin-kernels (kernels), the others for the other --standin-* options (others). */
static void find_standin(int kernels, int others)
{
    void *h = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
#define SYMBOL(field, name) standin_symbol(h, name, &(field), sizeof(field))
    if (kernels)
        SYMBOL(standin_kernel, "cg_standin_kernel");
    if (!others)
        return;
    SYMBOL(standin.graph_kernel, "cg_standin_graph_kernel");
    SYMBOL(standin.sync, "cg_standin_sync");
    SYMBOL(standin.memcpy, "cg_standin_memcpy");
    SYMBOL(standin.memory, "cg_standin_memory");
    if (o.standin_jit_at >= 0)
        SYMBOL(standin.jit, "cg_standin_jit");
    if (o.standin_module_load_at >= 0)
        SYMBOL(standin.module_load, "cg_standin_module_load");
#undef SYMBOL
}

/* The child of --fork-child: K steps, then back to main's return (exit handlers run). */
static int forked_child(void)
{
    for (long s = 0; s < o.fork_child; s++)
        one_step(s);
    return 0;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : "";
        if (strcmp(a, "--steps") == 0 && ++i)
            o.steps = num(v);
        else if (strcmp(a, "--step-ms") == 0 && ++i)
            o.step_ms = num(v);
        else if (strcmp(a, "--step-us") == 0 && ++i)
            o.step_us = num(v);
        else if (strcmp(a, "--noise-pct") == 0 && ++i)
            o.noise_pct = (double)num(v);
        else if (strcmp(a, "--drift-pct") == 0 && ++i)
            o.drift_pct = (double)num(v);
        else if (strcmp(a, "--tokens") == 0 && ++i)
            o.tokens = num(v);
        else if (strcmp(a, "--threads") == 0 && ++i)
            o.threads = num(v);
        else if (strcmp(a, "--crash-at") == 0 && ++i)
            o.crash_at = num(v);
        else if (strcmp(a, "--exit-at") == 0 && ++i)
            o.exit_at = num(v);
        else if (strcmp(a, "--hang-at") == 0 && ++i)
            o.hang_at = num(v);
        else if (strcmp(a, "--workers") == 0 && ++i)
            o.workers = num(v);
        else if (strcmp(a, "--nan-loss-at") == 0 && ++i)
            o.nan_loss_at = num(v);
        else if (strcmp(a, "--loss") == 0)
            o.loss = 1;
        else if (strcmp(a, "--mode") == 0 && ++i)
            o.mode = v;
        else if (strcmp(a, "--nested") == 0)
            o.nested = 1;
        else if (strcmp(a, "--other-domain") == 0)
            o.other_domain = 1;
        else if (strcmp(a, "--unbalanced") == 0)
            o.unbalanced = 1;
        else if (strcmp(a, "--no-steps") == 0)
            o.no_steps = 1;
        else if (strcmp(a, "--cuda-init") == 0)
            o.cuda_init = 1;
        else if (strcmp(a, "--preload") == 0 && ++i)
            preload(v);
        else if (strcmp(a, "--standin-kernels") == 0)
            o.standin_kernels = 1;
        else if (strcmp(a, "--fork-child") == 0 && ++i)
            o.fork_child = num(v);
        else if (strcmp(a, "--fork-delay-ms") == 0 && ++i)
            o.fork_delay_ms = num(v);
        else if (strcmp(a, "--foreign-handles") == 0)
            o.foreign_handles = 1;
        else if (strcmp(a, "--range-every") == 0 && ++i)
            o.range_every = num(v);
        else if (strcmp(a, "--many-names") == 0 && ++i)
            o.many_names = num(v);
        else if (strcmp(a, "--stray-steps") == 0 && ++i)
            o.stray_steps = v;
        else if (strcmp(a, "--range-name") == 0 && ++i && n_range_names < 4)
            range_names[n_range_names++] = v;
        else if (strcmp(a, "--standin-graph-kernels") == 0 && ++i)
            o.standin_graph_kernels = num(v);
        else if (strcmp(a, "--standin-syncs") == 0 && ++i)
            o.standin_syncs = num(v);
        else if (strcmp(a, "--standin-copies") == 0 && ++i)
            o.standin_copies = num(v);
        else if (strcmp(a, "--standin-dtoh-pageable") == 0 && ++i)
            o.standin_dtoh_pageable = num(v);
        else if (strcmp(a, "--standin-allocs") == 0 && ++i)
            o.standin_allocs = num(v);
        else if (strcmp(a, "--standin-jit-at") == 0 && ++i)
            o.standin_jit_at = num(v);
        else if (strcmp(a, "--standin-module-load-at") == 0 && ++i)
            o.standin_module_load_at = num(v);
        else if (strcmp(a, "--standin-placed") == 0)
            o.standin_placed = 1;
        else if (strcmp(a, "--only-rank") == 0 && ++i)
            o.only_rank = num(v);
        else if (strcmp(a, "--slow-rank") == 0 && ++i)
            o.slow_rank = num(v);
        else if (strcmp(a, "--slow-ms") == 0 && ++i)
            o.slow_ms = num(v);
        else if (strcmp(a, "--skip-rank") == 0 && ++i)
            o.skip_rank = num(v);
        else {
            fprintf(stderr, "nvtx-canary: unknown option '%s'\n", a);
            return 2;
        }
    }
    const char *rank = getenv("RANK") != NULL ? getenv("RANK") : getenv("SLURM_PROCID");
    o.rank = rank != NULL && *rank != '\0' ? num(rank) : -1;
    if (o.skip_rank >= 0 && o.skip_rank == o.rank) {
        printf("rank %ld skipped\n", o.rank);
        return 0;
    }
    if (o.only_rank >= 0 && o.only_rank != o.rank)
        o.crash_at = o.exit_at = o.hang_at = -1;
    if (o.workers > 0)
        return spawn_workers(argv[0]);
    if (o.cuda_init)
        cuda_init();
    int others = o.standin_graph_kernels > 0 || o.standin_syncs > 0 || o.standin_copies > 0 ||
                 o.standin_dtoh_pageable > 0 || o.standin_allocs > 0 || o.standin_jit_at >= 0 ||
                 o.standin_module_load_at >= 0 || o.standin_placed;
    if (o.standin_kernels || others)
        find_standin(o.standin_kernels, others);
    if (o.standin_kernels)
        standin_kernel(100000); /* before the first step: outside every step */
    if (others)
        standin_records(-1);
    nccl = nvtxDomainCreateA("NCCL");
    step_str = nvtxDomainRegisterStringA(NULL, "step");
    if (o.unbalanced) {
        nvtxRangePop();              /* pop before any push */
        nvtxRangePushA("left-open"); /* never popped */
    }
    for (long s = 0; s < o.steps; s++) {
        if (s == o.crash_at) {
            fflush(stdout);
            abort();
        }
        if (s == o.exit_at)
            _exit(0);
        if (s == o.hang_at)
            for (;;)
                sleep_ms(1000);
        if (o.no_steps) {
            nvtxRangePushA("compute");
            sleep_ms(o.step_ms);
            nvtxRangePop();
        } else {
            one_step(s);
        }
        if (s == 0 && o.fork_child > 0) {
            sleep_ms(o.fork_delay_ms);
            fflush(stdout);
            pid_t child = fork();
            if (child == 0)
                return forked_child();
            int st = 0;
            waitpid(child, &st, 0);
        }
    }
    if (side_started) {
        atomic_store(&side_stop, 1);
        pthread_join(side, NULL);
    }
    if (o.unbalanced) {
        nvtxRangePop();
        nvtxRangePop();
        nvtxRangePop();
    }
    printf("done %ld steps\n", o.steps);
    return 0;
}
