/*
 * nvtx_internal: what the NVTX side of the injection library shares between its two files,
 * private to them: nvtx.c (the NVTX ABI: the hooks NVTX calls, handles, messages and payloads)
 * and nvtx_steps.c (steps, ops and counts), which the hooks call. Threading as each file says.
 */
#ifndef CG_NVTX_INTERNAL_H
#define CG_NVTX_INTERNAL_H

#include "inject.h"

#include <stdatomic.h>
#include <stdint.h>

#define CG_KEY_MAX 512

struct cg_domain {
    _Atomic int32_t trace_id; /* its id in "tr" lines, 0 until its first traced range */
    struct cg_domain *next;
    uint64_t handle;          /* the handle given out for it */
    const char *name;         /* stored after the struct, in the same allocation */
};

/* --- nvtx_steps.c: what the hooks call ------------------------------------------------------ */

/* Takes the configuration (cg_inject_config), before any range. */
void nvtx_steps_config(const struct cg_inject_config *cfg);

/* Set once the hooks are in place: ranges and marks count from then on. */
extern __attribute__((visibility("hidden"))) bool nvtx_on;
/* The step most recently begun (-1: none yet). */
extern __attribute__((visibility("hidden"))) _Atomic int64_t nvtx_cur_step;

/* A push/pop range of domain d (NULL: the default) named name begins (tokens: its integer
 * payload, -1 none) or ends on the calling thread; the depth, as NVTX returns it (-1: no range to
 * end). */
int nvtx_push(const struct cg_domain *d, const char *name, int64_t tokens);
int nvtx_pop(const struct cg_domain *d);

/* A start/end range begins (its id, an nvtxRangeId_t: 0 when none could be kept) or ends (any
 * thread). */
uint64_t nvtx_start(const struct cg_domain *d, const char *name, int64_t tokens);
void nvtx_end(uint64_t id);

/* A mark of the default domain canary-gate's sitecustomize made (launch_env.h, CG_MARK_*): the
 * optimizers hooked (the work counts are measured: their "nc" line, once), or a backward pass or
 * an optimizer step, counted in the open step (before the window's end); any other message is
 * ignored. Any thread. */
void nvtx_work_mark(const char *message);

#endif
