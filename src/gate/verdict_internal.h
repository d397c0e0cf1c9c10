/*
 * verdict_internal: what verdict.c shares with the files that compute parts of a verdict
 * (verdict_ops.c, verdict_memory.c). Not for callers of the verdict: they use verdict.h.
 */
#ifndef CG_VERDICT_INTERNAL_H
#define CG_VERDICT_INTERNAL_H

#include "verdict.h"

/* Fills v->ops (listed ops, largest absolute change first), n_ops, n_ops_compared, n_ops_new,
 * n_ops_vanished and n_ops_significant from v->baseline and v->current under v->thresholds.
 * 0 or CG_ENOMEM (err set). */
int cg_verdict_ops(struct cg_verdict *v, struct cg_err *err);

/* The peak memory metric m (vb and vc: each side's runs' values) into r: its medians, change and
 * range, and the outcome by the memory rule (verdict_memory.c; memory's tests at
 * cg_verdict_memory_alpha). */
void cg_verdict_memory_metric(const struct cg_artifact *base, const struct cg_artifact *cur,
                              const struct cg_thresholds *t, enum cg_metric m, const double *vb,
                              const double *vc, struct cg_metric_result *r);

#endif
