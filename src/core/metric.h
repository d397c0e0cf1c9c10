/*
 * metric: the gated metrics, with everything that is said of each in one place: its name in JSON
 * and the thresholds files, its label in reports, and which way is worse.
 */
#ifndef CG_METRIC_H
#define CG_METRIC_H

#include <stdbool.h>

/* The gated metrics, in report order. */
enum cg_metric {
    CG_M_STEP_TIME_MEAN,
    CG_M_STEP_TIME_P95,
    CG_M_STEP_TIME_FLOOR, /* the step time of the runner's fast state (verdict.h) */
    CG_M_TOKENS_PER_SEC,
    CG_M_PEAK_DEVICE_MEMORY,
    CG_M_PEAK_HOST_RSS,
    CG_M_ENERGY_PER_TOKEN, /* joules per token over the measured window (runs[].gpu_state, NVML) */
    CG_M_MFU,              /* model FLOPs utilisation at the SM clock run (artifact_gpu.h) */
    CG_M_COUNT
};

/* The metric's name in JSON, the thresholds files and the terminal table ("step_time_mean"). */
const char *cg_metric_name(enum cg_metric m);

/* The metric's label in the markdown report ("Step time mean"). */
const char *cg_metric_label(enum cg_metric m);

/* True when a larger value is worse (every metric but tokens/sec and MFU). */
bool cg_metric_higher_is_worse(enum cg_metric m);

/* True for the metrics read from the GPU's own state (energy per token, MFU): gated over runs
 * like the timing metrics, unavailable with the runs' reason where NVML gave nothing. */
bool cg_metric_from_gpu_state(enum cg_metric m);

#endif
