/*
 * anatomy: where a step's time goes, per side (docs/counts.md, "Anatomy of a step").
 *
 * From what every run already holds: the GPU busy time of each step (the union of its kernel
 * intervals), the host time blocked in synchronisations, and the time of each NVTX range name
 * over the measured steps. A run's share of a part is its time over the run's summed step time;
 * a side's share is the median over its runs. The GPU's idle share (steps in which the GPU waits
 * for the host: launch-bound or host-bound work) is 1 minus its busy share. Range shares may
 * add up to more than 1: ranges nest, and ranges of several threads overlap. The ranges shown
 * are those with the largest share in some run, in the order of their larger median.
 *
 * Shown, never gated. Pure; the parts point into the artifacts. Not thread-safe.
 */
#ifndef CG_ANATOMY_H
#define CG_ANATOMY_H

#include "artifact.h"

#include <stddef.h>

enum cg_anatomy_kind {
    CG_ANAT_GPU_BUSY, /* kernels running (their union) */
    CG_ANAT_GPU_IDLE, /* no kernel running */
    CG_ANAT_SYNC,     /* the host blocked in synchronisations */
    CG_ANAT_RANGE     /* an NVTX range name's time */
};

#define CG_ANATOMY_MAX_RANGES 8 /* the ranges with the largest share on either side */

struct cg_anatomy_part {
    enum cg_anatomy_kind kind;
    const char *name;         /* the range name, NULL for the other kinds */
    double baseline, current; /* share of the step, 0..1 (ranges may exceed 1); NAN unknown */
};

struct cg_anatomy {
    struct cg_anatomy_part parts[3 + CG_ANATOMY_MAX_RANGES];
    size_t n; /* parts known on some side, in enum order; ranges by their larger median */
};

/* The anatomy of both sides' steps. 0, or -1 when out of memory. */
int cg_anatomy_compute(const struct cg_artifact *baseline, const struct cg_artifact *current,
                       struct cg_anatomy *out);

/* "GPU busy (kernels)", "GPU idle", "host blocked in synchronisation", "NVTX range". */
const char *cg_anatomy_label(enum cg_anatomy_kind k);

#endif
