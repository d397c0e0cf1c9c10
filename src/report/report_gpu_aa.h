/*
 * report_gpu_aa: what `canary-gate aa` says about the GPU's own state across its runs (NVML,
 * artifact_gpu.h), and whether to lock the clocks.
 *
 * Per device the canary used (by NVML index, from the runs that measured it): the runs' median SM
 * clocks (lowest and highest), the lowest and highest clock any sample saw, the temperature and
 * power ranges, the runs held back by a reason that is not the workload's own (hardware
 * slowdown, thermal, an external power brake: cg_gpu_reason_external, as the gate holds them)
 * and the runs that
 * shared the GPU with another process; and the settings (application clocks, power limit,
 * persistence mode). Clocks float when they are not locked and the runs' median SM clocks differ
 * by more than CG_AA_CLOCK_FLOAT_PCT of the highest, or a run's samples span more than
 * CG_AA_CLOCK_SPAN_PCT: then it recommends locking them (nvidia-smi --lock-gpu-clocks), since
 * timing then moves with the clocks between processes and within one.
 */
#ifndef CG_REPORT_GPU_AA_H
#define CG_REPORT_GPU_AA_H

#include "artifact.h"
#include "buf.h"

#include <stdbool.h>

#define CG_AA_CLOCK_FLOAT_PCT 2.0
#define CG_AA_CLOCK_SPAN_PCT 10.0

/* The text (lines of plain text, each ending in a newline) into out; *float_advice (when not
 * NULL) true when it recommends locking the clocks. 0 or CG_ENOMEM. */
int cg_report_gpu_aa(const struct cg_artifact *a, struct cg_buf *out, bool *float_advice);

#endif
