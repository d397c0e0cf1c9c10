/*
 * collect_artifact: what a collector (collect.c) writes into the run artifact besides the runs:
 * the header before the first run and the GPU facts of each run's shards. Single-threaded.
 */
#ifndef CG_COLLECT_ARTIFACT_H
#define CG_COLLECT_ARTIFACT_H

#include "artifact.h"
#include "collect.h"
#include "err.h"
#include "shard.h"

#include <stddef.h>

/* The environment, settings and canary identity of a (before the first run) for c's canary, whose
 * argv is cmd. 0 or CG_ENOMEM. */
int cg_collect_artifact_header(struct cg_artifact *a, const struct cg_collect_cfg *c,
                               char *const *cmd, struct cg_err *err);

/* GPU facts from a run's n shards: the first run fills them in; a later run without GPU metrics
 * (all its GPU records outside the steps, CUPTI taken by another profiler) makes the whole
 * artifact's GPU metrics unavailable with its reason, so that no run's missing GPU data is
 * compared as if it were measured. 0 or CG_ENOMEM. */
int cg_collect_artifact_gpu(struct cg_artifact *a, const struct cg_shard *sh, size_t n);

#endif
