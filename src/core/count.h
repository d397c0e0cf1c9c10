/*
 * count: the exact counts measured per step (docs/counts.md), with their names in JSON and the
 * thresholds files, their labels in reports and the unit they count in.
 *
 * A count is what happened in one step: kernels launched, synchronisations, copies, device
 * allocations, recompilations, NVTX ranges, and in a PyTorch canary whose optimizers canary-gate
 * hooked, backward passes and optimizer steps. For a fixed canary it is a property of the code, not
 * of the runner, so two runs of the same code agree exactly. Values are integers >= 0 per step;
 * -1 is unknown (not measured: no GPU, or a CUPTI kind the driver refused).
 */
#ifndef CG_COUNT_H
#define CG_COUNT_H

#include <stdbool.h>
#include <stdint.h>

/* The counts kept per step, in report order. */
enum cg_count {
    CG_COUNT_KERNELS,        /* kernel launches */
    CG_COUNT_GRAPH_KERNELS,  /* of those, launched by a CUDA graph */
    CG_COUNT_GRAPH_LAUNCHES, /* CUDA graph launches that ran kernels */
    CG_COUNT_SYNC_STREAM,    /* host synchronisations, by type */
    CG_COUNT_SYNC_EVENT,
    CG_COUNT_SYNC_CONTEXT,
    CG_COUNT_SYNC_WAIT,     /* streams waiting on an event (no host wait) */
    CG_COUNT_COPIES,        /* copies, every direction */
    CG_COUNT_DTOH_PAGEABLE, /* device to pageable host copies (.item(), .cpu()) */
    CG_COUNT_DTOH_PAGEABLE_BYTES,
    CG_COUNT_ALLOCS,          /* device memory allocations */
    CG_COUNT_FREES,           /* device memory releases */
    CG_COUNT_MODULE_LOADS,    /* modules loaded (compiled kernels arriving) */
    CG_COUNT_JIT,             /* JIT compilations */
    CG_COUNT_RANGES,          /* NVTX ranges begun in the step, the step range not */
    CG_COUNT_BACKWARD,        /* backward passes begun in the step (a PyTorch canary whose
                               * optimizers canary-gate hooked) */
    CG_COUNT_OPTIMIZER_STEPS, /* optimizer steps made in the step, every optimizer's (idem) */
    CG_COUNT_N
};

/* The rows that are gated and reported (docs/counts.md): every count, then two sums of them.
 * A row's functions below take a row; a count is the row of the same number. */
enum {
    CG_COUNT_SYNCS = CG_COUNT_N, /* host synchronisations: stream + event + device */
    CG_COUNT_UNGRAPHED,          /* kernels launched outside CUDA graphs: kernels - graph */
    CG_COUNT_ROWS
};

/* The row's name in JSON and the thresholds files ("kernels", "synchronizations"). */
const char *cg_count_name(int row);

/* Its label in reports ("kernel launches"). */
const char *cg_count_label(int row);

/* True for a row in bytes rather than in events. */
bool cg_count_is_bytes(int row);

/* The row of a name; 0, or -1 when no row has that name. */
int cg_count_parse(const char *name, int *row);

/* True when count adds to row: a count to its own row, the three host synchronisations to
 * CG_COUNT_SYNCS. */
bool cg_count_in_row(int row, int count);

/* True for a count whose calls are placed among the NVTX ranges (artifact.h, struct
 * cg_count_place): the host synchronisations, the pageable device-to-host copies and the device
 * memory allocations and releases. */
bool cg_count_placed(int count);

/* The row's value in a step's counts (-1 when a count it needs is unknown). */
int64_t cg_count_value(const int64_t counts[CG_COUNT_N], int row);

#endif
