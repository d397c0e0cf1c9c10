/*
 * bench_nvtx: the cost of an NVTX push/pop pair with the injection library against without it,
 * and the wall time of the built-in CPU canary with the library against without it.
 *
 * NVTX binds its tool once per process, so the bench runs itself as a child twice per repeat:
 * once with no NVTX_INJECTION64_PATH (NVTX's own no-op path) and once with the library and a
 * shard directory, alternating. A child times 1,000,000 pairs in three places: outside any step
 * (the library only compares the name), nested in a step (timed as a range op), and steps
 * themselves (a step pair writes a shard line). Medians of repeats, side by side, and the
 * fastest process of each. With --pairs-only the built-in canary's overhead is not measured.
 * Never run by ctest; prints a table.
 */
#include "bench.h"
#include <stdio.h>

#if CG_HAVE_NVTX

#include <nvtx3/nvToolsExt.h>

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAIRS 1000000
#define STEP_PAIRS 20000
#define REPEATS 7
#define CANARY_REPEATS 9
#define LIB CG_BINARY_DIR "/libcanary-inject.so"
#define TRAIN CG_BINARY_DIR "/canary-train"

/* Child: prints "outside nested step" ns per pair. */
static int child(void)
{
    nvtxRangePushA("warm-up"); /* binds the tool */
    nvtxRangePop();
    double t0 = cg_bench_now_s();
    for (int i = 0; i < PAIRS; i++) {
        nvtxRangePushA("outside");
        nvtxRangePop();
    }
    double outside = (cg_bench_now_s() - t0) / PAIRS * 1e9;
    nvtxRangePushA("step");
    t0 = cg_bench_now_s();
    for (int i = 0; i < PAIRS; i++) {
        nvtxRangePushA("matmul");
        nvtxRangePop();
    }
    double nested = (cg_bench_now_s() - t0) / PAIRS * 1e9;
    nvtxRangePop();
    t0 = cg_bench_now_s();
    for (int i = 0; i < STEP_PAIRS; i++) {
        nvtxRangePushA("step");
        nvtxRangePop();
    }
    double step = (cg_bench_now_s() - t0) / STEP_PAIRS * 1e9;
    printf("%.3f %.3f %.3f\n", outside, nested, step);
    return 0;
}

/* Runs argv with or without the library; returns the wall seconds, and the child's stdout in
 * out (cap bytes) when out is not NULL. */
static double spawn(char *const *argv, int with_lib, char *out, size_t cap)
{
    char dir[] = "/tmp/bench-nvtx-XXXXXX";
    int pfd[2];
    if (mkdtemp(dir) == NULL || pipe(pfd) != 0)
        return -1.0;
    double t0 = cg_bench_now_s();
    pid_t pid = fork();
    if (pid == 0) {
        dup2(pfd[1], 1);
        close(pfd[0]);
        if (with_lib) {
            setenv("NVTX_INJECTION64_PATH", LIB, 1);
            setenv("CANARY_GATE_SHARD_DIR", dir, 1);
        } else {
            unsetenv("NVTX_INJECTION64_PATH");
        }
        execv(argv[0], argv);
        _exit(127);
    }
    close(pfd[1]);
    size_t k = 0;
    ssize_t n;
    char sink[4096];
    while ((n = read(pfd[0], out && k + 1 < cap ? out + k : sink,
                     out && k + 1 < cap ? cap - 1 - k : sizeof(sink))) > 0)
        if (out && k + 1 < cap)
            k += (size_t)n;
    if (out)
        out[k] = '\0';
    close(pfd[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    double wall = cg_bench_now_s() - t0;
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir); /* a fixed-format path made by mkdtemp */
    if (system(cmd) != 0)
        return -1.0;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? wall : -1.0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--child") == 0)
        return child();
    double v[2][3][REPEATS];
    char *cargv[] = {argv[0], "--child", NULL};
    for (int r = 0; r < REPEATS; r++)
        for (int lib = 0; lib < 2; lib++) {
            char out[256];
            if (spawn(cargv, lib, out, sizeof(out)) < 0 ||
                sscanf(out, "%lf %lf %lf", &v[lib][0][r], &v[lib][1][r], &v[lib][2][r]) != 3) {
                fprintf(stderr, "bench_nvtx: child failed\n");
                return 1;
            }
        }
    static const char *const what[] = {"pair outside a step", "pair nested in a step (range op)",
                                       "step pair (writes a shard line)"};
    printf("bench_nvtx: ns per NVTX push/pop pair, median (and fastest) of %d processes\n",
           REPEATS);
    printf("  %-34s %10s %10s %10s %12s\n", "", "without", "with lib", "extra", "fastest extra");
    for (int i = 0; i < 3; i++) {
        double a = cg_bench_median(v[0][i], REPEATS), b = cg_bench_median(v[1][i], REPEATS);
        double fa = v[0][i][0], fb = v[1][i][0];
        for (int r = 1; r < REPEATS; r++) {
            fa = v[0][i][r] < fa ? v[0][i][r] : fa;
            fb = v[1][i][r] < fb ? v[1][i][r] : fb;
        }
        printf("  %-34s %10.1f %10.1f %10.1f %12.1f\n", what[i], a, b, b - a, fb - fa);
    }
    printf("  target: at most 100 ns extra per pair\n");
    if (argc > 1 && strcmp(argv[1], "--pairs-only") == 0)
        return 0;

    if (access(TRAIN, X_OK) != 0) {
        printf("bench_nvtx: %s not built; canary overhead not measured\n", TRAIN);
        return 0;
    }
    char *targv[] = {TRAIN, "--preset", "tiny", "--steps", "60", NULL};
    double w[2][CANARY_REPEATS], m[2][CANARY_REPEATS];
    for (int r = 0; r < CANARY_REPEATS; r++)
        for (int lib = 0; lib < 2; lib++) { /* interleaved: A B A B ... */
            char out[8192];
            const char *p;
            w[lib][r] = spawn(targv, lib, out, sizeof(out));
            if (w[lib][r] < 0 || (p = strstr(out, "mean_step_ms=")) == NULL ||
                sscanf(p, "mean_step_ms=%lf", &m[lib][r]) != 1) {
                fprintf(stderr, "bench_nvtx: canary-train failed\n");
                return 1;
            }
        }
    double a = cg_bench_median(w[0], CANARY_REPEATS), b = cg_bench_median(w[1], CANARY_REPEATS);
    double sa = cg_bench_median(m[0], CANARY_REPEATS), sb = cg_bench_median(m[1], CANARY_REPEATS);
    printf("bench_nvtx: built-in CPU canary (canary-train --preset tiny --steps 60), median of %d "
           "interleaved\n", CANARY_REPEATS);
    printf("  mean step   without %8.3f ms, with lib %8.3f ms: %+.2f%% (target at most 1%%)\n",
           sa, sb, (sb - sa) / sa * 100.0);
    printf("  process     without %8.1f ms, with lib %8.1f ms: %+.2f%%\n", a * 1e3, b * 1e3,
           (b - a) / a * 100.0);
    return 0;
}

#else

int main(void)
{
    printf("bench_nvtx: built without NVTX headers\n");
    return 0;
}

#endif
