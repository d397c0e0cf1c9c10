/*
 * artifact_gpu: the GPU's own state while a run was measured, as the launcher read it through
 * NVML (src/measure/nvml.h), and the facts derived from it: energy over the measured window and
 * model FLOPs utilisation (docs/artifact.md, "gpu_state").
 *
 * Units: clocks MHz, temperatures degrees C, power W, energy J, FLOPs per token and per SM clock
 * cycle as counts. Unknown integers are -1, unknown doubles NAN, unknown strings NULL; a state
 * that was not measured at all carries the reason (every field then unavailable). The clock
 * event reasons are NVML's bits (1 << enum cg_gpu_reason). Pure; not thread-safe; every string
 * is owned by the struct that holds it.
 */
#ifndef CG_ARTIFACT_GPU_H
#define CG_ARTIFACT_GPU_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* NVML's clock event reasons, by bit: reason r is the mask bit 1 << r. */
enum cg_gpu_reason {
    CG_GPU_R_IDLE,             /* 0x1 nothing runs */
    CG_GPU_R_APP_CLOCKS,       /* 0x2 application clocks setting */
    CG_GPU_R_SW_POWER_CAP,     /* 0x4 the power limit: the workload's own draw */
    CG_GPU_R_HW_SLOWDOWN,      /* 0x8 hardware slowdown (temperature, power brake, ...) */
    CG_GPU_R_SYNC_BOOST,       /* 0x10 a sync boost group's member holds it back */
    CG_GPU_R_SW_THERMAL,       /* 0x20 software thermal slowdown */
    CG_GPU_R_HW_THERMAL,       /* 0x40 hardware thermal slowdown */
    CG_GPU_R_HW_POWER_BRAKE,   /* 0x80 external power brake */
    CG_GPU_R_DISPLAY_CLOCKS,   /* 0x100 display clock setting */
    CG_GPU_R_N
};

#define CG_GPU_MAX_DEVICES 8 /* devices recorded per run (the canary's) */
#define CG_GPU_MAX_OTHERS 8  /* other processes' ids recorded per device */

/* One GPU the canary used, over the samples inside the run's measured window. */
struct cg_gpu_device {
    int64_t index;                  /* NVML's index of the device */
    char *uuid;                     /* "GPU-..." */
    int64_t samples;                /* samples inside the measured window */
    int64_t sm_min_mhz, sm_median_mhz, sm_max_mhz;
    int64_t mem_median_mhz;
    int64_t reasons[CG_GPU_R_N];    /* samples with each reason (-1: reasons unreadable) */
    int64_t temp_min_c, temp_max_c;
    double power_min_w, power_max_w;
    int64_t other_samples;          /* samples with another process on the GPU (-1 unknown) */
    int64_t other_pids[CG_GPU_MAX_OTHERS]; /* distinct, the first CG_GPU_MAX_OTHERS seen */
    size_t n_other_pids;
    double energy_j;                /* over the measured window; NAN with energy_reason */
    char *energy_reason;
};

/* A run's GPU state. reason NULL: measured (devices may still be 0: the canary used no GPU
 * NVML saw, said in energy_reason and mfu_reason). */
struct cg_gpu_state {
    bool recorded;      /* false: an artifact written before the GPU state was (all unknown) */
    char *reason;       /* why the state is unavailable (no NVML, ...), NULL when measured */
    struct cg_gpu_device dev[CG_GPU_MAX_DEVICES];
    size_t n_dev;
    double energy_j;    /* summed over the devices; NAN with energy_reason */
    char *energy_reason;
    double mfu;         /* achieved FLOP/s over peak FLOP/s at the SM clock run; NAN with
                         * mfu_reason */
    double peak_flops;  /* the peak it was divided by, FLOP/s (NAN unknown) */
    char *mfu_reason;
};

/* The GPU's settings for the environment, read once per artifact (docs/artifact.md). */
struct cg_gpu_env {
    bool recorded;
    char *reason;           /* why unavailable, NULL when read */
    double power_limit_w;   /* NAN unknown */
    int persistence_mode;   /* 1 on, 0 off, -1 unknown */
    int64_t app_sm_mhz, app_mem_mhz;         /* application clocks */
    int64_t default_app_sm_mhz, default_app_mem_mhz;
    int clocks_locked;      /* 1: application clocks set away from their defaults, 0: not,
                             * -1: NVML does not say */
};

/* "gpu_idle", "applications_clocks", "sw_power_cap", "hw_slowdown", "sync_boost",
 * "sw_thermal", "hw_thermal", "hw_power_brake", "display_clocks". */
const char *cg_gpu_reason_name(int r);

/* "idle", "applications clocks", "SW power cap", "HW slowdown", ... for reports. */
const char *cg_gpu_reason_label(int r);

/* True for a reason that is not the workload's own: HW slowdown, SW and HW thermal slowdown,
 * HW power brake (the power cap is the workload's own draw; idle is no work). */
bool cg_gpu_reason_external(int r);

/* Sets a state / environment with everything unknown. Allocates nothing. */
void cg_gpu_state_init(struct cg_gpu_state *g);
void cg_gpu_env_init(struct cg_gpu_env *e);

/* Frees what they own; they are as after init afterwards. */
void cg_gpu_state_release(struct cg_gpu_state *g);
void cg_gpu_env_release(struct cg_gpu_env *e);

/* Deep copies into dst (initialised, empty). 0 or CG_ENOMEM. */
int cg_gpu_state_copy(struct cg_gpu_state *dst, const struct cg_gpu_state *src);
int cg_gpu_env_copy(struct cg_gpu_env *dst, const struct cg_gpu_env *src);

/* The JSON of a state or environment (caller owns it); NULL when out of memory. */
cJSON *cg_gpu_state_json(const struct cg_gpu_state *g);
cJSON *cg_gpu_env_json(const struct cg_gpu_env *e);

/* Reads what cg_gpu_state_json / cg_gpu_env_json wrote (o not NULL). On a bad field returns
 * CG_EINPUT with "PATH.field: problem" in problem (cap bytes); CG_ENOMEM. */
int cg_gpu_state_parse(const cJSON *o, const char *path, struct cg_gpu_state *g, char *problem,
                       size_t cap);
int cg_gpu_env_parse(const cJSON *o, const char *path, struct cg_gpu_env *e, char *problem,
                     size_t cap);

/* FLOPs one streaming multiprocessor clock cycle can do on the whole GPU at precision ("fp32",
 * "tf32", "bf16", "fp16", "fp8"), dense, from the built-in table of data-centre GPUs matched by
 * model name (docs/statistics.md says how each entry is derived). NAN when the model or the
 * precision is not in the table. */
double cg_gpu_peak_flop_per_clock(const char *model, const char *precision);

/* True when precision is one of the table's words. */
bool cg_gpu_precision_valid(const char *precision);

/* Model FLOPs utilisation: flops_per_token * tokens_per_sec over flop_per_clock * sm_mhz * 1e6
 * * gpus. NAN when any input is unknown or not positive. */
double cg_gpu_mfu(double flops_per_token, double tokens_per_sec, double flop_per_clock,
                  double sm_mhz, size_t gpus);

#endif
