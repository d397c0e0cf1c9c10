/*
 * nvml_standin: a stand-in for the driver's libnvidia-ml.so.1 with scripted answers, for the
 * launcher's GPU-state sampling (src/measure/nvml.c) on machines without a GPU. The tests point
 * CANARY_GATE_NVML_LIB at it. It proves that the sampler reads what NVML would give, lines it up
 * with the measured window and summarises it; it cannot prove what a real driver answers (the
 * GPU check does: docs/gpu.md).
 *
 * Times are from nvmlInit_v2's call (CLOCK_MONOTONIC_RAW). Variables, read at nvmlInit_v2:
 *   CG_STANDIN_NVML_INIT_ERROR=N     nvmlInit_v2 returns N (nvmlErrorString: 9 "Driver Not
 *                                    Loaded", others "Unknown Error")
 *   CG_STANDIN_NVML_DEVICES=N        devices (default 1), UUIDs
 *                                    GPU-00000000-0000-0000-0000-00000000000K
 *   CG_STANDIN_NVML_POWER_W=W        power draw (default 300); the energy counter grows by it
 *   CG_STANDIN_NVML_ENERGY_START=MJ  the counter at init (default 1000000; near 2^64: a wrap)
 *   CG_STANDIN_NVML_NO_ENERGY=1      the energy counter is not supported (NOT_SUPPORTED, 3)
 *   CG_STANDIN_NVML_EVENT=MASK@MS    clock event reasons MASK from MS ms on, the SM clock then
 *                                    1200 MHz instead of 1980
 *   CG_STANDIN_NVML_OTHER=PID@MS     process PID (not the tool's) on device 0 from MS ms on
 *   CG_STANDIN_NVML_PID_OFFSET=N     the calling process listed as its PID + N, as the driver
 *                                    lists host PIDs to a container that cannot see them
 * Device 0 always lists the calling process (the tool: its own, never another's).
 * Built twice: nvml-standin, and nvml-standin-missing (-DSTANDIN_MISSING, without
 * nvmlDeviceGetTotalEnergyConsumption and nvmlDeviceGetComputeRunningProcesses_v3).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

struct proc_info {
    unsigned int pid;
    unsigned long long used_memory;
    unsigned int gpu_instance, compute_instance;
};

/* The entry points, as the launcher declares them (src/measure/nvml.c). */
EXPORT int nvmlInit_v2(void);
EXPORT int nvmlShutdown(void);
EXPORT const char *nvmlErrorString(int rc);
EXPORT int nvmlDeviceGetCount_v2(unsigned int *n);
EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **dev);
EXPORT int nvmlDeviceGetUUID(void *dev, char *out, unsigned int len);
EXPORT int nvmlDeviceGetHandleByUUID(const char *uuid, void **dev);
EXPORT int nvmlDeviceGetClockInfo(void *dev, int type, unsigned int *mhz);
EXPORT int nvmlDeviceGetCurrentClocksEventReasons(void *dev, unsigned long long *mask);
EXPORT int nvmlDeviceGetTemperature(void *dev, int sensor, unsigned int *c);
EXPORT int nvmlDeviceGetPowerUsage(void *dev, unsigned int *mw);
EXPORT int nvmlDeviceGetPowerManagementLimit(void *dev, unsigned int *mw);
EXPORT int nvmlDeviceGetPersistenceMode(void *dev, int *mode);
EXPORT int nvmlDeviceGetApplicationsClock(void *dev, int type, unsigned int *mhz);
EXPORT int nvmlDeviceGetDefaultApplicationsClock(void *dev, int type, unsigned int *mhz);
#ifndef STANDIN_MISSING
EXPORT int nvmlDeviceGetTotalEnergyConsumption(void *dev, unsigned long long *mj);
EXPORT int nvmlDeviceGetComputeRunningProcesses_v3(void *dev, unsigned int *count,
                                                   struct proc_info *infos);
#endif

static int64_t g_t0;
static unsigned g_devices = 1;
static double g_power_w = 300.0;
static unsigned long long g_energy_start = 1000000ULL;
static int g_no_energy;
static unsigned long long g_event_mask;
static long g_event_ms = -1, g_other_ms = -1;
static unsigned g_other_pid;
static unsigned g_pid_offset;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static double elapsed_ms(void)
{
    return (double)(now_ns() - g_t0) / 1e6;
}

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && *v != '\0' ? v : NULL;
}

static void at(const char *v, unsigned long long *what, long *ms)
{
    char *end;
    *what = strtoull(v, &end, 0);
    *ms = *end == '@' ? strtol(end + 1, NULL, 10) : 0;
}

EXPORT int nvmlInit_v2(void)
{
    const char *v;
    if ((v = env("CG_STANDIN_NVML_INIT_ERROR")) != NULL)
        return (int)strtol(v, NULL, 10);
    g_t0 = now_ns();
    if ((v = env("CG_STANDIN_NVML_DEVICES")) != NULL)
        g_devices = (unsigned)strtoul(v, NULL, 10);
    if ((v = env("CG_STANDIN_NVML_POWER_W")) != NULL)
        g_power_w = strtod(v, NULL);
    if ((v = env("CG_STANDIN_NVML_ENERGY_START")) != NULL)
        g_energy_start = strtoull(v, NULL, 10);
    g_no_energy = env("CG_STANDIN_NVML_NO_ENERGY") != NULL;
    if ((v = env("CG_STANDIN_NVML_EVENT")) != NULL)
        at(v, &g_event_mask, &g_event_ms);
    if ((v = env("CG_STANDIN_NVML_PID_OFFSET")) != NULL)
        g_pid_offset = (unsigned)strtoul(v, NULL, 10);
    if ((v = env("CG_STANDIN_NVML_OTHER")) != NULL) {
        unsigned long long pid;
        at(v, &pid, &g_other_ms);
        g_other_pid = (unsigned)pid;
    }
    return 0;
}

EXPORT int nvmlShutdown(void)
{
    return 0;
}

EXPORT const char *nvmlErrorString(int rc)
{
    return rc == 9 ? "Driver Not Loaded" : "Unknown Error";
}

EXPORT int nvmlDeviceGetCount_v2(unsigned int *n)
{
    *n = g_devices;
    return 0;
}

/* A handle is the device's index + 1. */
EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **dev)
{
    if (i >= g_devices)
        return 2;
    *dev = (void *)(uintptr_t)(i + 1);
    return 0;
}

static unsigned index_of(void *dev)
{
    return (unsigned)((uintptr_t)dev - 1);
}

EXPORT int nvmlDeviceGetUUID(void *dev, char *out, unsigned int len)
{
    snprintf(out, len, "GPU-00000000-0000-0000-0000-%012u", index_of(dev));
    return 0;
}

EXPORT int nvmlDeviceGetHandleByUUID(const char *uuid, void **dev)
{
    for (unsigned i = 0; i < g_devices; i++) {
        char u[96];
        snprintf(u, sizeof(u), "GPU-00000000-0000-0000-0000-%012u", i);
        if (strcmp(u, uuid) == 0) {
            *dev = (void *)(uintptr_t)(i + 1);
            return 0;
        }
    }
    return 2;
}

static int throttled(void)
{
    return g_event_ms >= 0 && elapsed_ms() >= (double)g_event_ms;
}

EXPORT int nvmlDeviceGetClockInfo(void *dev, int type, unsigned int *mhz)
{
    (void)dev;
    *mhz = type == 2 ? 2619 : throttled() ? 1200 : 1980;
    return 0;
}

EXPORT int nvmlDeviceGetCurrentClocksEventReasons(void *dev, unsigned long long *mask)
{
    (void)dev;
    *mask = throttled() ? g_event_mask : 0;
    return 0;
}

EXPORT int nvmlDeviceGetTemperature(void *dev, int sensor, unsigned int *c)
{
    (void)dev;
    (void)sensor;
    *c = throttled() ? 87 : 61;
    return 0;
}

EXPORT int nvmlDeviceGetPowerUsage(void *dev, unsigned int *mw)
{
    (void)dev;
    *mw = (unsigned)(g_power_w * 1000.0);
    return 0;
}

EXPORT int nvmlDeviceGetPowerManagementLimit(void *dev, unsigned int *mw)
{
    (void)dev;
    *mw = 700000;
    return 0;
}

EXPORT int nvmlDeviceGetPersistenceMode(void *dev, int *mode)
{
    (void)dev;
    *mode = 1;
    return 0;
}

EXPORT int nvmlDeviceGetApplicationsClock(void *dev, int type, unsigned int *mhz)
{
    (void)dev;
    *mhz = type == 2 ? 2619 : 1755;
    return 0;
}

EXPORT int nvmlDeviceGetDefaultApplicationsClock(void *dev, int type, unsigned int *mhz)
{
    (void)dev;
    *mhz = type == 2 ? 2619 : 1755;
    return 0;
}

#ifndef STANDIN_MISSING
/* Energy: the start value plus the power over the time since init, modulo 2^64. */
EXPORT int nvmlDeviceGetTotalEnergyConsumption(void *dev, unsigned long long *mj)
{
    (void)dev;
    if (g_no_energy)
        return 3;
    *mj = g_energy_start + (unsigned long long)(g_power_w * elapsed_ms());
    return 0;
}

EXPORT int nvmlDeviceGetComputeRunningProcesses_v3(void *dev, unsigned int *count,
                                                   struct proc_info *infos)
{
    unsigned n = 0;
    struct proc_info want[2];
    memset(want, 0, sizeof(want));
    if (index_of(dev) == 0) {
        want[n++].pid = (unsigned)getpid() + g_pid_offset;
        if (g_other_ms >= 0 && elapsed_ms() >= (double)g_other_ms)
            want[n++].pid = g_other_pid;
    }
    if (*count < n) {
        *count = n;
        return 7;
    }
    memcpy(infos, want, n * sizeof(*want));
    *count = n;
    return 0;
}
#endif
