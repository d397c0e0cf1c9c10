/*
 * test_nvml: the launcher's GPU-state sampling (src/measure/nvml.c). The window's figures from
 * synthetic samples (energy interpolated over the measured window, the counter wrapping or
 * stepping back, a GPU without an energy counter, throttling mid-run), and the loader and
 * sampler against the stand-in NVML (tests/standin/nvml: scripted clocks, reasons, processes and
 * energy; NVML missing, failing to initialise, or lacking functions).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "nvml.h"
#include "shard.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#define STANDIN CG_BINARY_DIR "/tests/standin/nvml/libnvml-standin.so"
#define STANDIN_MISSING CG_BINARY_DIR "/tests/standin/nvml/libnvml-standin-missing.so"
#define MS 1000000LL

/* n samples every 200 ms from t = 0 at watts, the counter starting at start (mJ); reasons mask
 * and 1200 MHz from sample `from` on (n: never). */
static void make(struct cg_nvml_sample *s, size_t n, double watts, uint64_t start,
                 uint64_t mask, size_t from)
{
    for (size_t i = 0; i < n; i++) {
        memset(&s[i], 0, sizeof(s[i]));
        s[i].t_ns = (int64_t)i * 200 * MS;
        s[i].energy_mj = start + (uint64_t)(watts * 200.0 * (double)i);
        s[i].energy_ok = true;
        s[i].reasons_ok = true;
        s[i].reasons = i >= from ? mask : 0;
        s[i].sm_mhz = i >= from ? 1200 : 1980;
        s[i].mem_mhz = 2619;
        s[i].temp_c = 60 + (int32_t)i;
        s[i].power_mw = (int64_t)(watts * 1000.0);
        s[i].n_other = 0;
    }
}

static void release(struct cg_gpu_device *d)
{
    free(d->uuid);
    free(d->energy_reason);
    memset(d, 0, sizeof(*d));
}

/* 300 W from 250 ms to 1450 ms: 360 J, the counter interpolated inside two intervals; the
 * samples outside the window (0, 200, 1600 ms) count for nothing. */
static void test_nvml__energy_over_the_measured_window_only(void **state)
{
    (void)state;
    struct cg_nvml_sample s[9];
    struct cg_gpu_device d = {0};
    make(s, 9, 300.0, 1000000, 0, 9);
    assert_int_equal(cg_nvml_summarize(s, 9, 250 * MS, 1450 * MS, 1, &d), 0);
    assert_true(fabs(d.energy_j - 360.0) < 1e-9);
    assert_null(d.energy_reason);
    assert_int_equal(d.samples, 6); /* 400 .. 1400 ms */
    assert_int_equal(d.sm_median_mhz, 1980);
    assert_int_equal(d.temp_min_c, 62);
    assert_int_equal(d.temp_max_c, 67);
    assert_true(fabs(d.power_max_w - 300.0) < 1e-9);
    release(&d);
}

/* The 64-bit counter wraps in the window: the same 360 J. */
static void test_nvml__energy_across_a_counter_wrap(void **state)
{
    (void)state;
    struct cg_nvml_sample s[9];
    struct cg_gpu_device d = {0};
    make(s, 9, 300.0, UINT64_MAX - 150000, 0, 9); /* wraps between 400 and 600 ms */
    assert_true(s[3].energy_mj < s[2].energy_mj);
    assert_int_equal(cg_nvml_summarize(s, 9, 250 * MS, 1450 * MS, 1, &d), 0);
    assert_true(fabs(d.energy_j - 360.0) < 1e-6);
    release(&d);
}

/* A counter that goes back by more than a wrap could (a driver reload), one that is not
 * supported, and samples that end before the window: no energy, each with its reason. */
static void test_nvml__energy_unavailable_with_the_reason(void **state)
{
    (void)state;
    struct cg_nvml_sample s[9];
    struct cg_gpu_device d = {0};
    make(s, 9, 300.0, 50000000000ULL, 0, 9);
    s[5].energy_mj = s[6].energy_mj = s[7].energy_mj = s[8].energy_mj = 10;
    assert_int_equal(cg_nvml_summarize(s, 9, 250 * MS, 1450 * MS, 1, &d), 0);
    assert_true(isnan(d.energy_j));
    assert_non_null(strstr(d.energy_reason, "went back"));
    release(&d);

    make(s, 9, 300.0, 0, 0, 9);
    for (int i = 0; i < 9; i++)
        s[i].energy_ok = false;
    assert_int_equal(cg_nvml_summarize(s, 9, 250 * MS, 1450 * MS, 1, &d), 0);
    assert_true(isnan(d.energy_j));
    assert_non_null(strstr(d.energy_reason, "no energy counter"));
    assert_int_equal(d.sm_median_mhz, 1980); /* the rest is still read */
    release(&d);

    make(s, 9, 300.0, 0, 0, 9);
    assert_int_equal(cg_nvml_summarize(s, 9, 250 * MS, 2000 * MS, 1, &d), 0);
    assert_true(isnan(d.energy_j));
    assert_non_null(strstr(d.energy_reason, "do not cover"));
    release(&d);
}

/* HW slowdown from the 5th sample on: counted in the window's samples, the SM clock's minimum
 * and median follow. */
static void test_nvml__throttling_mid_run_is_counted(void **state)
{
    (void)state;
    struct cg_nvml_sample s[10];
    struct cg_gpu_device d = {0};
    make(s, 10, 300.0, 0, 0x8 | 0x4, 6);
    assert_int_equal(cg_nvml_summarize(s, 10, 0, 1800 * MS, 1, &d), 0);
    assert_int_equal(d.samples, 10);
    assert_int_equal(d.reasons[CG_GPU_R_HW_SLOWDOWN], 4);
    assert_int_equal(d.reasons[CG_GPU_R_SW_POWER_CAP], 4);
    assert_int_equal(d.reasons[CG_GPU_R_HW_THERMAL], 0);
    assert_int_equal(d.sm_min_mhz, 1200);
    assert_int_equal(d.sm_max_mhz, 1980);
    assert_int_equal(d.sm_median_mhz, 1980);
    release(&d);
    /* a window between two samples reads its neighbours */
    assert_int_equal(cg_nvml_summarize(s, 10, 1010 * MS, 1050 * MS, 1, &d), 0);
    assert_int_equal(d.samples, 2);
    assert_int_equal(d.reasons[CG_GPU_R_HW_SLOWDOWN], 1);
    assert_true(fabs(d.energy_j - 12.0) < 1e-9);
    release(&d);
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void clear_env(void)
{
    const char *vars[] = {"CG_STANDIN_NVML_INIT_ERROR", "CG_STANDIN_NVML_DEVICES",
                          "CG_STANDIN_NVML_POWER_W",    "CG_STANDIN_NVML_ENERGY_START",
                          "CG_STANDIN_NVML_NO_ENERGY",  "CG_STANDIN_NVML_EVENT",
                          "CG_STANDIN_NVML_OTHER",      "CG_STANDIN_NVML_PID_OFFSET"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        unsetenv(vars[i]);
}

/* Samples the stand-in for 400 ms every 20 ms; the state of [100 ms, 300 ms] into g. */
static void sample(const char *lib, const char *const *uuids, size_t n_uuids,
                   struct cg_gpu_state *g, struct cg_gpu_env *e)
{
    char reason[256];
    struct cg_nvml *n = NULL;
    struct cg_nvml_sampler *s = NULL;
    struct cg_err err;
    cg_err_init(&err);
    setenv(CG_NVML_ENV_LIB, lib, 1);
    assert_int_equal(cg_nvml_open(&n, reason, sizeof(reason)), 0);
    int64_t t0 = now_ns();
    assert_int_equal(cg_nvml_sampler_start(n, 20, &s, &err), 0);
    usleep(400000);
    cg_nvml_sampler_stop(s);
    assert_int_equal(cg_nvml_sampler_state(s, uuids, n_uuids, t0 + 100 * MS, t0 + 300 * MS, g),
                     0);
    if (e != NULL)
        cg_nvml_env(n, n_uuids > 0 ? uuids[0] : NULL, e);
    cg_nvml_sampler_free(s);
    cg_nvml_close(n);
}

/* Through the loader: 250 W for 200 ms is 50 J on the device the tool's own process uses;
 * another process appears at 150 ms; HW thermal slowdown from 200 ms. */
static void test_nvml__standin_energy_throttling_and_a_neighbour(void **state)
{
    (void)state;
    clear_env();
    setenv("CG_STANDIN_NVML_DEVICES", "2", 1);
    setenv("CG_STANDIN_NVML_POWER_W", "250", 1);
    setenv("CG_STANDIN_NVML_OTHER", "1@150", 1);
    setenv("CG_STANDIN_NVML_EVENT", "0x40@200", 1);
    struct cg_gpu_state g;
    struct cg_gpu_env e;
    sample(STANDIN, NULL, 0, &g, &e);
    assert_null(g.reason);
    assert_int_equal(g.n_dev, 1); /* device 1 runs none of the tool's processes */
    assert_int_equal(g.dev[0].index, 0);
    assert_string_equal(g.dev[0].uuid, "GPU-00000000-0000-0000-0000-000000000000");
    assert_true(fabs(g.energy_j - 50.0) < 1.0);
    assert_true(g.dev[0].samples >= 5);
    assert_true(g.dev[0].reasons[CG_GPU_R_HW_THERMAL] > 0);
    assert_true(g.dev[0].reasons[CG_GPU_R_HW_THERMAL] < g.dev[0].samples);
    assert_int_equal(g.dev[0].sm_min_mhz, 1200);
    assert_int_equal(g.dev[0].sm_max_mhz, 1980);
    assert_true(g.dev[0].other_samples > 0);
    assert_int_equal(g.dev[0].n_other_pids, 1);
    assert_int_equal(g.dev[0].other_pids[0], 1);
    assert_true(fabs(e.power_limit_w - 700.0) < 1e-9);
    assert_int_equal(e.persistence_mode, 1);
    assert_int_equal(e.clocks_locked, 0);
    cg_gpu_state_release(&g);
    cg_gpu_env_release(&e);

    /* named by UUID (the shards' "uuid" lines): device 1 then, whatever runs where */
    const char *uuid1 = "GPU-00000000-0000-0000-0000-000000000001";
    sample(STANDIN, &uuid1, 1, &g, NULL);
    assert_int_equal(g.n_dev, 1);
    assert_int_equal(g.dev[0].index, 1);
    assert_int_equal(g.dev[0].other_samples, 0);
    cg_gpu_state_release(&g);
    clear_env();
}

/* In a container the driver lists host PIDs this namespace cannot see, the canary's own among
 * them: as many of those as the canary has processes on the GPU (the shards naming its UUID)
 * are taken as the canary's; one more, or one this namespace sees that is not the tool's, is
 * another process. */
static void test_nvml__pids_this_namespace_cannot_see_are_the_canarys_up_to_its_count(void **state)
{
    (void)state;
    clear_env();
    setenv("CG_STANDIN_NVML_PID_OFFSET", "4194304", 1); /* above any pid_max */
    const char *uuid0 = "GPU-00000000-0000-0000-0000-000000000000";
    struct cg_gpu_state g;
    sample(STANDIN, &uuid0, 1, &g, NULL);
    assert_int_equal(g.n_dev, 1);
    assert_int_equal(g.dev[0].other_samples, 0);
    assert_int_equal(g.dev[0].n_other_pids, 0);
    cg_gpu_state_release(&g);
    /* a second PID it cannot see: more than the canary's one process there */
    setenv("CG_STANDIN_NVML_OTHER", "4999999@0", 1);
    sample(STANDIN, &uuid0, 1, &g, NULL);
    assert_true(g.dev[0].other_samples > 0);
    assert_true(g.dev[0].n_other_pids >= 1);
    cg_gpu_state_release(&g);
    /* a visible process not the tool's (PID 1) is another's whatever the count */
    setenv("CG_STANDIN_NVML_OTHER", "1@0", 1);
    sample(STANDIN, &uuid0, 1, &g, NULL);
    assert_true(g.dev[0].other_samples > 0);
    assert_int_equal(g.dev[0].other_pids[0], 1);
    cg_gpu_state_release(&g);
    clear_env();
}

/* The UUIDs the canary's processes used, once per process: a process that exec'd itself writes
 * a shard per image, both naming its GPU, and counted twice it let one process of another
 * tenant that the namespace cannot see pass for the canary's own. */
static void test_nvml__a_process_counts_once_whatever_its_shards(void **state)
{
    (void)state;
    const char *g0 = "GPU-00000000-0000-0000-0000-000000000000";
    const char *g1 = "GPU-11111111-1111-1111-1111-111111111111";
    struct cg_shard sh[3];
    const int64_t pids[3] = {100, 100, 200}; /* two images of pid 100, and pid 200 */
    const char *used[3][2] = {{g0, NULL}, {g0, g1}, {g0, NULL}};
    for (size_t i = 0; i < 3; i++) {
        cg_shard_init(&sh[i]);
        sh[i].pid = pids[i];
        sh[i].uuids = calloc(2, sizeof(*sh[i].uuids));
        assert_non_null(sh[i].uuids);
        for (size_t k = 0; k < 2 && used[i][k] != NULL; k++) {
            sh[i].uuids[k].device = (int64_t)k;
            snprintf(sh[i].uuids[k].uuid, sizeof(sh[i].uuids[k].uuid), "%s", used[i][k]);
            sh[i].n_uuids++;
        }
    }
    const char *out[8];
    size_t n = cg_nvml_shard_uuids(sh, 3, out, 8);
    size_t on0 = 0, on1 = 0;
    for (size_t i = 0; i < n; i++) {
        on0 += strcmp(out[i], g0) == 0;
        on1 += strcmp(out[i], g1) == 0;
    }
    if (on0 != 2 || on1 != 1)
        fail_msg("GPU 0 named for %zu processes (2 expected), GPU 1 for %zu (1)", on0, on1);
    for (size_t i = 0; i < 3; i++)
        cg_shard_release(&sh[i]);
}

/* The counter near 2^64 wraps while sampled: the same energy. A GPU without the counter: none,
 * with the reason; everything else still read. */
static void test_nvml__standin_wrap_and_no_energy_support(void **state)
{
    (void)state;
    clear_env();
    setenv("CG_STANDIN_NVML_ENERGY_START", "18446744073709501615", 1); /* 2^64 - 50001 */
    struct cg_gpu_state g;
    sample(STANDIN, NULL, 0, &g, NULL);
    assert_true(fabs(g.energy_j - 60.0) < 1.2); /* 300 W x 0.2 s */
    cg_gpu_state_release(&g);
    clear_env();
    setenv("CG_STANDIN_NVML_NO_ENERGY", "1", 1);
    sample(STANDIN, NULL, 0, &g, NULL);
    assert_null(g.reason);
    assert_true(isnan(g.energy_j));
    assert_non_null(strstr(g.energy_reason, "no energy counter"));
    assert_int_equal(g.dev[0].sm_median_mhz, 1980);
    cg_gpu_state_release(&g);
    clear_env();
}

/* A library without the energy and process functions: the device named by UUID is still read,
 * its energy and neighbours unknown. */
static void test_nvml__a_missing_function_leaves_its_figure_unknown(void **state)
{
    (void)state;
    clear_env();
    const char *uuid0 = "GPU-00000000-0000-0000-0000-000000000000";
    struct cg_gpu_state g;
    sample(STANDIN_MISSING, &uuid0, 1, &g, NULL);
    assert_int_equal(g.n_dev, 1);
    assert_true(isnan(g.energy_j));
    assert_non_null(strstr(g.energy_reason, "no energy counter"));
    assert_int_equal(g.dev[0].other_samples, -1);
    assert_int_equal(g.dev[0].sm_median_mhz, 1980);
    cg_gpu_state_release(&g);
}

/* No library, or one whose init fails: unavailable, with the reason. */
static void test_nvml__nvml_missing_or_failing_is_a_reason(void **state)
{
    (void)state;
    clear_env();
    char reason[256];
    struct cg_nvml *n = NULL;
    setenv(CG_NVML_ENV_LIB, "/nonexistent/libnvidia-ml.so.1", 1);
    assert_int_equal(cg_nvml_open(&n, reason, sizeof(reason)), CG_EINPUT);
    assert_null(n);
    assert_non_null(strstr(reason, "NVML unavailable: cannot open /nonexistent/libnvidia-ml.so.1"));
    setenv(CG_NVML_ENV_LIB, STANDIN, 1);
    setenv("CG_STANDIN_NVML_INIT_ERROR", "9", 1);
    assert_int_equal(cg_nvml_open(&n, reason, sizeof(reason)), CG_EINPUT);
    assert_string_equal(reason, "NVML unavailable: nvmlInit_v2: Driver Not Loaded (9)");
    clear_env();
    unsetenv(CG_NVML_ENV_LIB);
}

#define CANARY CG_BINARY_DIR "/tests/canaries/nvtx-canary"

/* Runs the tool with the NVML library lib and args (NULL-terminated, after "run --out out"); it
 * must exit 0. With a, loads the artifact into it. */
static void run_with(const char *lib, const char *out, const char *const *args,
                     struct cg_artifact *a)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        const char *argv[32] = {CG_TOOL_PATH, "run", "--out", out};
        size_t n = 4;
        for (size_t i = 0; args[i] != NULL && n < 31; i++)
            argv[n++] = args[i];
        argv[n] = NULL;
        setenv(CG_NVML_ENV_LIB, lib, 1);
        execv(CG_TOOL_PATH, (char *const *)argv);
        _exit(127);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    if (a == NULL)
        return;
    struct cg_err err;
    cg_err_init(&err);
    assert_int_equal(cg_artifact_load(out, a, &err), 0);
}

/* The same with the stand-in NVML. */
static void run_args(const char *out, const char *const *args, struct cg_artifact *a)
{
    run_with(STANDIN, out, args, a);
}

/* canary-gate run of the NVTX canary (10 measured steps of 30 ms, 64 tokens each) with the
 * NVML library lib into out; loads it into a. */
static void run_gate(const char *lib, const char *out, struct cg_artifact *a)
{
    const char *args[] = {"--runs", "1", "--steps", "10", "--warmup", "1", "--let-finish", "--",
                          CANARY, "--steps", "11", "--step-ms", "30", "--tokens", "64", NULL};
    run_with(lib, out, args, a);
}

/* Through the tool: the run's energy is the stand-in's 300 W over the measured window (its
 * steps back to back: their summed time, within 2%), per token over its 640 tokens; the
 * environment's settings read; without NVML every field unavailable with the reason, in the
 * artifact as written and read back. */
static void test_nvml__a_run_records_the_gpu_state(void **state)
{
    (void)state;
    clear_env();
    struct cg_artifact a;
    cg_artifact_init(&a);
    run_gate(STANDIN, "nvml-run.json", &a);
    const struct cg_run *r = &a.runs[0];
    double wall_s = 0.0;
    for (size_t i = 0; i < r->n_steps; i++)
        wall_s += (double)r->steps[i].wall_ns / 1e9;
    assert_true(r->gpu.recorded);
    assert_null(r->gpu.reason);
    assert_int_equal(r->gpu.n_dev, 1);
    assert_true(fabs(r->gpu.energy_j - 300.0 * wall_s) < 0.02 * 300.0 * wall_s);
    assert_int_equal(cg_run_tokens(r), 640);
    assert_true(fabs(cg_run_energy_per_token(r) - r->gpu.energy_j / 640.0) < 1e-12);
    assert_string_equal(r->gpu.mfu_reason, "not available: give --flops-per-token");
    assert_true(a.env.gpu_env.recorded);
    assert_true(fabs(a.env.gpu_env.power_limit_w - 700.0) < 1e-9);
    cg_artifact_release(&a);

    /* turned off: no NVML opened, the reason says so */
    setenv(CG_NVML_ENV_OFF, "0", 1);
    run_gate(STANDIN, "nvml-off.json", &a);
    unsetenv(CG_NVML_ENV_OFF);
    assert_string_equal(a.runs[0].gpu.reason, "NVML sampling off (CANARY_GATE_NVML=0)");
    assert_true(isnan(a.runs[0].gpu.energy_j));
    cg_artifact_release(&a);

    run_gate("/nonexistent/libnvidia-ml.so.1", "nvml-none.json", &a);
    r = &a.runs[0];
    assert_true(r->gpu.recorded);
    assert_non_null(strstr(r->gpu.reason, "NVML unavailable: cannot open"));
    assert_non_null(strstr(r->gpu.energy_reason, "NVML unavailable"));
    assert_true(isnan(r->gpu.energy_j));
    assert_true(isnan(cg_run_energy_per_token(r)));
    assert_non_null(strstr(a.env.gpu_env.reason, "NVML unavailable"));
    cg_artifact_release(&a);
}

/* Through the tool with --trace: the trace has the stand-in's readings as counters of the
 * process "GPU state (NVML)" (SM clock, power, temperature), within the traced steps. */
static void test_nvml__a_trace_has_the_gpu_state_counters(void **state)
{
    (void)state;
    clear_env();
    const char *args[] = {"--runs", "1", "--steps", "10", "--warmup", "1", "--trace",
                          "nvml-trace.trace.json", "--trace-steps", "0:9", "--let-finish", "--",
                          CANARY, "--steps", "11", "--step-ms", "100", NULL};
    run_args("nvml-trace.json", args, NULL);
    FILE *f = fopen("nvml-trace.trace.json", "r");
    assert_non_null(f);
    static char text[1 << 20];
    size_t len = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[len] = '\0';
    assert_non_null(strstr(text, "\"GPU state (NVML)\""));
    size_t clocks = 0;
    for (const char *p = strstr(text, "\"GPU 0 SM clock\""); p != NULL;
         p = strstr(p + 1, "\"GPU 0 SM clock\""))
        clocks++;
    /* about 1 s traced at 5 readings a second */
    if (clocks < 3)
        fail_msg("%zu SM clock counters in:\n%.2000s", clocks, text);
    assert_non_null(strstr(text, "\"GPU 0 power\""));
    assert_non_null(strstr(text, "\"GPU 0 temperature\""));
}

/* The canary's "canary-gate flops_per_token: N" line: at a line's start only, a whole number. */
static void test_nvml__the_flops_line_is_read_from_the_log(void **state)
{
    (void)state;
    const char *path = "nvml-flops.log";
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "say canary-gate flops_per_token: 5\ncanary-gate flops_per_token: x\n"
               "canary-gate flops_per_token: 2.5\ncanary-gate flops_per_token: 664320\n"
               "canary-gate flops_per_token: 7\n");
    fclose(f);
    assert_int_equal(cg_nvml_flops_from_log(path), 664320);
    f = fopen(path, "w");
    fprintf(f, "nothing here\n");
    fclose(f);
    assert_int_equal(cg_nvml_flops_from_log(path), -1);
    assert_int_equal(cg_nvml_flops_from_log("/nonexistent/log"), -1);
}

#define TRAIN CG_BINARY_DIR "/canary-train"

/* MFU without flags for the built-in canary (its printed 664,320 FLOPs per token, recorded in
 * the settings), --flops-per-token over it, and the peak given: MFU = FLOPs per token x tokens/s
 * over the peak per clock x the median SM clock (the stand-in's) x 1e6 x 1 GPU. */
static void test_nvml__mfu_from_the_canarys_flops_line(void **state)
{
    (void)state;
    clear_env();
    struct cg_artifact a;
    cg_artifact_init(&a);
    const char *own[] = {"--runs", "1", "--steps", "2", "--warmup", "1", "--let-finish",
                         "--peak-flop-per-clock", "4096", "--precision", "fp16", "--",
                         TRAIN, "--device", "cpu", "--preset", "tiny", "--steps", "3", NULL};
    run_args("nvml-mfu.json", own, &a);
    assert_int_equal(a.settings.flops_per_token, 664320);
    assert_string_equal(a.settings.precision, "fp16");
    assert_true(a.settings.peak_flop_per_clock == 4096.0);
    const struct cg_run *r = &a.runs[0];
    if (r->gpu.n_dev > 0) { /* the stand-in saw the canary's device */
        double mhz = (double)r->gpu.dev[0].sm_median_mhz;
        double want = 664320.0 * r->summary.tokens_per_sec / (4096.0 * mhz * 1e6);
        assert_true(fabs(r->gpu.mfu - want) <= 1e-9 * want);
        assert_null(r->gpu.mfu_reason);
    } else {
        assert_non_null(strstr(r->gpu.mfu_reason, "no SM clock"));
    }
    cg_artifact_release(&a);
    const char *given[] = {"--runs", "1", "--steps", "2", "--warmup", "1", "--let-finish",
                           "--flops-per-token", "5000", "--", TRAIN, "--device", "cpu",
                           "--preset", "tiny", "--steps", "3", NULL};
    run_args("nvml-mfu2.json", given, &a);
    assert_int_equal(a.settings.flops_per_token, 5000);
    assert_null(a.settings.precision);
    cg_artifact_release(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nvml__energy_over_the_measured_window_only),
        cmocka_unit_test(test_nvml__energy_across_a_counter_wrap),
        cmocka_unit_test(test_nvml__energy_unavailable_with_the_reason),
        cmocka_unit_test(test_nvml__throttling_mid_run_is_counted),
        cmocka_unit_test(test_nvml__standin_energy_throttling_and_a_neighbour),
        cmocka_unit_test(test_nvml__pids_this_namespace_cannot_see_are_the_canarys_up_to_its_count),
        cmocka_unit_test(test_nvml__a_process_counts_once_whatever_its_shards),
        cmocka_unit_test(test_nvml__standin_wrap_and_no_energy_support),
        cmocka_unit_test(test_nvml__a_missing_function_leaves_its_figure_unknown),
        cmocka_unit_test(test_nvml__nvml_missing_or_failing_is_a_reason),
        cmocka_unit_test(test_nvml__a_run_records_the_gpu_state),
        cmocka_unit_test(test_nvml__a_trace_has_the_gpu_state_counters),
        cmocka_unit_test(test_nvml__the_flops_line_is_read_from_the_log),
        cmocka_unit_test(test_nvml__mfu_from_the_canarys_flops_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
