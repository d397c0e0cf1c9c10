/*
 * diagnose_internal: what the diagnosis rules (diagnose.c) share with the pooled figures of a
 * side and its ops joined with the other side's (diagnose_side.c). Not for callers of the
 * diagnosis: they use diagnose.h. Times are nanoseconds, sizes bytes.
 */
#ifndef CG_DIAGNOSE_INTERNAL_H
#define CG_DIAGNOSE_INTERNAL_H

#include "diagnose.h"

#include <stdbool.h>
#include <stddef.h>

/* One side (baseline or current) pooled: totals over all its runs' measured steps. */
struct cg_diag_side {
    const struct cg_artifact *a;
    double n_steps;
    double wall_ns;
    double busy_ns, busy_wall_ns; /* over the steps that carry gpu_busy_ns */
    double n_busy;
    double kind_ns[CG_OP_KIND_COUNT];
    double kind_calls[CG_OP_KIND_COUNT];
    double peak_dev, peak_rss; /* median over runs, NAN when a run lacks it */
};

/* An op (or family) of both sides: its time and calls per step of each side. */
struct cg_diag_op_sum {
    const char *key;
    enum cg_op_kind kind;
    double ns[2], calls[2]; /* per step; [0] baseline, [1] current */
    bool in[2];
};

/* Pools the artifact a into s (s->a points into it). 0 or CG_ENOMEM. */
int cg_diag_side_make(struct cg_diag_side *s, const struct cg_artifact *a);

/* total per measured step of s; NAN when s has no step. */
double cg_diag_per_step(const struct cg_diag_side *s, double total);

/* The side's time in kernels, copies and sets, summed over its runs. */
double cg_diag_gpu_op_ns(const struct cg_diag_side *s);

/* The share of the steps' wall time the GPU was idle (percent), over the steps that carry GPU
 * busy time; NAN when none does. */
double cg_diag_idle_pct(const struct cg_diag_side *s);

/* Joins the ops of the kinds in kind_mask (bit per kind) of both sides (sides[0] may be NULL)
 * into *out, one entry per (kind, key: the family when by_family and the op has one, else the
 * name), sorted. *out is malloc'ed (the caller frees). 0 or CG_ENOMEM. */
int cg_diag_join_ops(const struct cg_diag_side *sides[2], unsigned kind_mask, bool by_family,
                     struct cg_diag_op_sum **out, size_t *n_out);

#endif
