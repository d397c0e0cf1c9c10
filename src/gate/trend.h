/*
 * trend: main's history entries made from run artifacts (docs/history.md). Pure.
 */
#ifndef CG_TREND_H
#define CG_TREND_H

#include "artifact.h"
#include "history.h"

#include <stddef.h>

/* A run entry for artifact a measured at commit on date (UTC, ISO 8601), for gate_id (may be
 * NULL): per metric the median of the runs' own values (cg_verdict_run_value) with a
 * distribution-free interval for it of at least 90% (order statistics; with fewer than 5 runs
 * the lowest and highest run), and per count the median over the runs of each run's median per
 * step (unknown when a run lacks it). Its environment is cg_trend_env_id(a). 0, CG_EINPUT (no
 * runs, no commit or date) or CG_ENOMEM. */
int cg_trend_entry(const struct cg_artifact *a, const char *commit, const char *date,
                   const char *gate_id, struct cg_history_entry *out);

/* The environment's id: 16 hex digits hashing the GPU model and count, the driver and CUDA
 * versions, the CPU model, and the measured steps and warm-up (what makes values comparable;
 * not the canary's own hash, which changes with the code measured). Malloc'ed; NULL when out of
 * memory. */
char *cg_trend_env_id(const struct cg_artifact *a);

/* The environment in words ("NVIDIA H100 80GB HBM3 x1, driver 580.159.04, CUDA 13.0, CPU ...,
 * 20 steps after 5"), truncated to fit n bytes. */
void cg_trend_env_text(const struct cg_artifact *a, char *out, size_t n);

#endif
