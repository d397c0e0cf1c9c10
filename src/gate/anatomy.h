/*
 * anatomy: where a step's time goes, per side (docs/counts.md, "Anatomy of a step").
 *
 * From what every run already holds: the GPU busy time of each step (the union of its kernel
 * intervals) and, within it, the compute time (the union of the kernels that are not
 * communication) and the communication no compute overlapped (busy minus compute: exposed
 * communication); the union of the step's copies and sets (which may overlap kernels) and the
 * part of it no kernel overlapped (exposed copies: copy_ns minus copy_hidden_ns); the host time
 * blocked in synchronisations; and the time of each NVTX range name over the measured steps. A
 * run's share of a part is its time over the run's summed step time; a side's share is the median
 * over its runs. The GPU's idle share (nothing running: the GPU waits for the host, launch-bound
 * or host-bound work) is 1 minus its busy share and its exposed copies' share; when some run of
 * either side lacks the copies' hidden time (an artifact of an older version), 1 minus the busy
 * share on both sides, so that the two sides mean the same (copies_in_idle false). Range shares may
 * add up to more than 1: ranges nest, and ranges of several threads overlap. The ranges shown are
 * those with the largest share in some run, in the order of their larger median.
 *
 * The rank spread (runs of several ranks, runs[].ranks): per step, the slowest rank's duration
 * minus the median rank's (the lower middle of an even count), summed over the run's steps, over
 * its summed step time: the share of the step the world waited for its slowest rank beyond a
 * typical one. A run without ranks lacks it.
 *
 * Gated (with the thresholds' "anatomy" limits): the GPU idle share and the exposed
 * communication share, and the rank spread when a thresholds file gives "rank_spread" (the
 * built-in ones do not: shown, not gated). The shift is the Hodges-Lehmann estimate of the current
 * runs' shares minus the baseline's, in percentage points of the step, tested one-sided with
 * Mann-Whitney over the runs' shares; the ladder is the timing metrics' (cg_ladder_classify):
 * beyond the limit, significant and min_runs runs a side -> FAIL; beyond it otherwise ->
 * INCONCLUSIVE; lower beyond it and significant -> IMPROVED; else PASS. The other parts are shown,
 * never gated.
 *
 * Pure; the parts point into the artifacts. Not thread-safe.
 */
#ifndef CG_ANATOMY_H
#define CG_ANATOMY_H

#include "artifact.h"
#include "outcome.h"
#include "thresholds.h"

#include <stdbool.h>
#include <stddef.h>

enum cg_anatomy_kind {
    CG_ANAT_GPU_BUSY,       /* kernels running (their union) */
    CG_ANAT_COMPUTE,        /* compute kernels running (not communication) */
    CG_ANAT_EXPOSED_COMM,   /* communication kernels running, no compute kernel */
    CG_ANAT_COPIES,         /* copies and sets running (their union; may overlap kernels) */
    CG_ANAT_EXPOSED_COPIES, /* copies and sets running, no kernel */
    CG_ANAT_GPU_IDLE,       /* no kernel running, nor a copy (see copies_in_idle) */
    CG_ANAT_SYNC,           /* the host blocked in synchronisations */
    CG_ANAT_RANK_SPREAD,    /* worlds of ranks: the slowest rank's step time over the median
                             * rank's (the step's wall time is the slowest rank's) */
    CG_ANAT_RANGE           /* an NVTX range name's time */
};

#define CG_ANATOMY_MAX_RANGES 8 /* the ranges with the largest share on either side */
#define CG_ANATOMY_FIXED 8      /* the kinds before CG_ANAT_RANGE */

struct cg_anatomy_part {
    enum cg_anatomy_kind kind;
    const char *name;         /* the range name, NULL for the other kinds */
    double baseline, current; /* share of the step, 0..1 (ranges may exceed 1); NAN unknown */
    /* the gated parts (GPU idle, exposed communication); the others: CG_OUT_NOT_GATED, NAN */
    enum cg_outcome outcome;
    double shift_points;     /* Hodges-Lehmann shift of current over baseline, points */
    double p_value;          /* one-sided, H1: the current share is larger; NAN: not tested */
    double threshold_points; /* the limit it was held to, NAN when not gated */
    bool other_machine;      /* a FAIL made INCONCLUSIVE: the machines differ (verdict.c) */
};

struct cg_anatomy {
    struct cg_anatomy_part parts[CG_ANATOMY_FIXED + CG_ANATOMY_MAX_RANGES];
    size_t n; /* parts known on some side, in enum order; ranges by their larger median */
    bool copies_in_idle; /* the idle share leaves out the exposed copies (every run of both
                          * sides measured them); else it is 1 minus the busy share */
    bool comm_named_differently; /* the sides' CANARY_GATE_COMM_KERNELS differ: compute and
                                  * communication split the busy time otherwise on each side,
                                  * and exposed communication is shown, not gated */
};

/* The anatomy of both sides' steps; with t (NULL: nothing gated), its gated parts are decided.
 * 0, or -1 when out of memory. */
int cg_anatomy_compute(const struct cg_artifact *baseline, const struct cg_artifact *current,
                       const struct cg_thresholds *t, struct cg_anatomy *out);

/* The part of kind (not CG_ANAT_RANGE) or NULL when it is not there. */
const struct cg_anatomy_part *cg_anatomy_part(const struct cg_anatomy *a,
                                              enum cg_anatomy_kind kind);

/* True when copies count as idle time although some side measured copies: a run of either side
 * lacks their overlap with kernels (the reports say so). */
bool cg_anatomy_copies_as_idle(const struct cg_anatomy *a);

/* "GPU busy (kernels)", "GPU compute", ..., "NVTX range". */
const char *cg_anatomy_label(enum cg_anatomy_kind k);

/* The JSON name of a kind: "gpu_busy", "compute", "exposed_communication", "copies",
 * "exposed_copies", "gpu_idle", "sync", "range". */
const char *cg_anatomy_kind_name(enum cg_anatomy_kind k);

#endif
