/*
 * bench_step_lock: how long an NVTX step boundary (the push that begins a step, the pop that ends
 * it) takes in a process whose injection library is reducing a flood of CUPTI records, for the
 * library built here and, with --old LIB, another build of it (an earlier commit's), side by side.
 *
 * No GPU: each run is a child process that loads the library as the CUDA driver would (its
 * InitializeInjection) with the stand-in libcupti of tests/standin/ (CANARY_GATE_CUPTI_PATH),
 * whose every flush also hands over --flood kernel records (CG_STANDIN_FLOOD; the library flushes
 * after every step end, on its own thread). The child runs --steps steps of --step-us of busy
 * work, launching one stand-in kernel per step, and times each step's push and pop on
 * CLOCK_MONOTONIC; it prints their p50, p99 and maximum, and the records the library reduced (its
 * shard's last "c" line) so a run that reduced nothing is seen. Runs alternate between the
 * libraries; the table gives the median over runs of each figure. Never run by ctest.
 *
 *   bench_step_lock [--old LIB] [--runs R] [--steps S] [--step-us U] [--flood F]
 */
#include "bench.h"
#include <stdio.h>

#if CG_HAVE_NVTX && CG_HAVE_CUPTI

#include <nvtx3/nvToolsExt.h>

#include <dirent.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define LIB CG_BINARY_DIR "/libcanary-inject.so"
#define STANDIN CG_BINARY_DIR "/tests/standin/libcupti-standin.so"
#define MAX_RUNS 64
#define FIGURES 7 /* begin p50 p99 max, end p50 p99 max, records */

struct opts {
    const char *old;
    long runs, steps, step_us, flood;
};

static long number(const char *s, long lo, long hi)
{
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "bench_step_lock: '%s' is not a number from %ld to %ld\n", s, lo, hi);
        exit(2);
    }
    return v;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* The q quantile of the n sorted values v (nearest rank). */
static double rank_q(const double *v, size_t n, double q)
{
    size_t i = (size_t)(q * (double)n);
    return v[i < n ? i : n - 1];
}

static void spin_us(long us)
{
    double until = cg_bench_now_s() + (double)us * 1e-6;
    while (cg_bench_now_s() < until) {
    }
}

/* The records field of the last "c" line of the one shard in dir (-1: none). */
static long long shard_records(const char *dir)
{
    long long records = -1;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        char path[1024], line[512];
        if (strncmp(e->d_name, "shard-", 6) != 0 ||
            snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path))
            continue;
        FILE *f = fopen(path, "r");
        while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
            long long v;
            if (sscanf(line, "c %lld ", &v) == 1)
                records = v;
        }
        if (f != NULL)
            fclose(f);
        unlink(path);
    }
    if (d != NULL)
        closedir(d);
    return records;
}

/* A child's run under lib: writes its figures (the records read later by the parent) to fd. */
static int child(const struct opts *o, const char *lib, const char *dir, int fd)
{
    char flood[32];
    snprintf(flood, sizeof(flood), "%ld", o->flood);
    setenv("NVTX_INJECTION64_PATH", lib, 1);
    setenv("CUDA_INJECTION64_PATH", lib, 1);
    setenv("CANARY_GATE_SHARD_DIR", dir, 1);
    setenv("CANARY_GATE_CUPTI_PATH", STANDIN, 1);
    setenv("CANARY_GATE_WARMUP", "0", 1);
    setenv("CG_STANDIN_FLOOD", flood, 1);
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    void *sym = h != NULL ? dlsym(h, "InitializeInjection") : NULL;
    int (*init)(void) = NULL;
    memcpy(&init, &sym, sizeof(init));
    if (init == NULL) {
        fprintf(stderr, "bench_step_lock: cannot load '%s'\n", lib);
        return 1;
    }
    init();
    void *standin = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
    sym = standin != NULL ? dlsym(standin, "cg_standin_kernel") : NULL;
    void (*kernel)(uint64_t) = NULL;
    memcpy(&kernel, &sym, sizeof(kernel));
    if (kernel == NULL) {
        fprintf(stderr, "bench_step_lock: the stand-in libcupti was not loaded\n");
        return 1;
    }
    double *begin = calloc((size_t)o->steps, sizeof(double));
    double *end = calloc((size_t)o->steps, sizeof(double));
    if (begin == NULL || end == NULL)
        return 1;
    for (long s = 0; s < o->steps; s++) {
        double t0 = cg_bench_now_s();
        nvtxRangePushA("step");
        double t1 = cg_bench_now_s();
        kernel(1000);
        spin_us(o->step_us);
        double t2 = cg_bench_now_s();
        nvtxRangePop();
        double t3 = cg_bench_now_s();
        begin[s] = (t1 - t0) * 1e6;
        end[s] = (t3 - t2) * 1e6;
    }
    size_t n = (size_t)o->steps;
    qsort(begin, n, sizeof(double), cmp_double);
    qsort(end, n, sizeof(double), cmp_double);
    double fig[FIGURES - 1] = {rank_q(begin, n, 0.5), rank_q(begin, n, 0.99), begin[n - 1],
                               rank_q(end, n, 0.5),   rank_q(end, n, 0.99),   end[n - 1]};
    ssize_t w = write(fd, fig, sizeof(fig));
    free(begin);
    free(end);
    return w == (ssize_t)sizeof(fig) ? 0 : 1;
}

/* One run under lib: its figures into fig; false when it failed. */
static bool run(const struct opts *o, const char *lib, const char *dir, double fig[FIGURES])
{
    int p[2];
    if (pipe(p) != 0)
        return false;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        int rc = child(o, lib, dir, p[1]);
        close(p[1]);
        exit(rc); /* the library's exit handlers flush and close the shard */
    }
    close(p[1]);
    ssize_t got = pid > 0 ? read(p[0], fig, (FIGURES - 1) * sizeof(double)) : -1;
    close(p[0]);
    int st = 0;
    if (pid > 0)
        waitpid(pid, &st, 0);
    fig[FIGURES - 1] = (double)shard_records(dir);
    return got == (ssize_t)((FIGURES - 1) * sizeof(double)) && WIFEXITED(st) &&
           WEXITSTATUS(st) == 0;
}

static void row(const char *name, double fig[][FIGURES], size_t runs)
{
    double med[FIGURES], col[MAX_RUNS];
    for (int f = 0; f < FIGURES; f++) {
        for (size_t r = 0; r < runs; r++)
            col[r] = fig[r][f];
        med[f] = cg_bench_median(col, runs);
    }
    printf("%-6s %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f %12.0f\n", name, med[0], med[1], med[2],
           med[3], med[4], med[5], med[6]);
}

int main(int argc, char **argv)
{
    struct opts o = {NULL, 7, 2000, 200, 100000};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
        if (strcmp(a, "--old") == 0 && ++i)
            o.old = v;
        else if (strcmp(a, "--runs") == 0 && ++i)
            o.runs = number(v, 1, MAX_RUNS);
        else if (strcmp(a, "--steps") == 0 && ++i)
            o.steps = number(v, 10, 1000000);
        else if (strcmp(a, "--step-us") == 0 && ++i)
            o.step_us = number(v, 0, 1000000);
        else if (strcmp(a, "--flood") == 0 && ++i)
            o.flood = number(v, 0, 100000000);
        else {
            fprintf(stderr, "usage: bench_step_lock [--old LIB] [--runs R] [--steps S] "
                            "[--step-us U] [--flood F]\n");
            return 2;
        }
    }
    char dir[] = "/tmp/bench_step_lock.XXXXXX";
    if (mkdtemp(dir) == NULL) {
        perror("bench_step_lock: mkdtemp");
        return 1;
    }
    static double now[MAX_RUNS][FIGURES], old[MAX_RUNS][FIGURES];
    size_t runs = (size_t)o.runs;
    for (size_t r = 0; r < runs; r++) {
        bool ok = run(&o, LIB, dir, now[r]);
        if (ok && o.old != NULL)
            ok = run(&o, o.old, dir, old[r]);
        if (!ok) {
            fprintf(stderr, "bench_step_lock: run %zu failed\n", r + 1);
            return 1;
        }
    }
    rmdir(dir);
    printf("step boundary latency in us (medians of %zu runs, alternating): %ld steps of %ld us, "
           "a flush of %ld flooded kernel records after every step end\n",
           runs, o.steps, o.step_us, o.flood);
    printf("%-6s %10s %10s %10s %10s %10s %10s %12s\n", "lib", "begin p50", "begin p99",
           "begin max", "end p50", "end p99", "end max", "records");
    if (o.old != NULL)
        row("old", old, runs);
    row("this", now, runs);
    if (o.old != NULL)
        printf("old: %s\n", o.old);
    return 0;
}

#else

int main(void)
{
    printf("bench_step_lock: skipped (built without the NVTX or CUPTI headers)\n");
    return 0;
}

#endif
