/*
 * aggregate: CUPTI activity records in, per-step GPU busy time, per-op totals and peak device
 * memory out. Pure: no CUPTI calls, no I/O, no locks, so tests and benches feed it synthetic
 * records of the installed cupti.h types.
 *
 * Steps come from NVTX (begin/end in the same CLOCK_MONOTONIC_RAW ns as the records). A record
 * belongs to step k when its start lies in step k's CPU interval [begin, end] (open-ended while
 * the step runs); work outside every step is counted apart and never in an op. Ops (kernels by
 * their CUPTI name pointer, copies by direction, sets) are summed for steps >= warmup only.
 *
 * GPU busy time is the measure of the union of kernel intervals within each step's interval,
 * computed as records stream in: disjoint intervals are kept sorted in a ring of
 * CG_AGG_INTERVALS; when it fills, the earliest is settled into the steps it overlaps and later
 * records are clipped at what was settled, so memory stays bounded however many records come.
 * Device memory: allocation and release events of MEMORY2 records are applied in timestamp order
 * (a pending window sorted before applying, as records arrive out of order) to a running sum per
 * device whose maximum is the peak.
 *
 * Memory is O(steps + ops + devices). Not thread-safe: the caller serialises.
 */
#ifndef CG_AGGREGATE_H
#define CG_AGGREGATE_H

#include <cupti_activity.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CG_AGG_INTERVALS 256     /* power of two */
#define CG_AGG_MAX_DEVICES 64
#define CG_AGG_MEM_PENDING 8192  /* memory events held back for ordering */
#define CG_AGG_MEM_SLACK_NS 1000000000ull

enum cg_agg_kind { CG_AGG_KERNEL, CG_AGG_MEMCPY, CG_AGG_MEMSET };

struct cg_agg_step {
    uint64_t start_ns;
    uint64_t end_ns; /* UINT64_MAX while the step runs */
    int64_t busy_ns;
    int64_t busy_written; /* for the caller's delta writes */
};

struct cg_agg_op {
    const char *name; /* borrowed: CUPTI's kernel name or a static string */
    enum cg_agg_kind kind;
    int64_t calls, total_ns;
    int64_t written_calls, written_ns;
};

struct cg_agg_slot {
    const char *name; /* NULL: empty */
    uint32_t kind;
    uint32_t op;      /* index into ops */
};

struct cg_agg_interval {
    uint64_t start, end;
};

struct cg_agg_mem_event {
    uint64_t ts;
    int64_t delta;
    uint32_t device;
};

struct cg_agg_device {
    uint32_t id;
    int64_t current, peak, written_peak;
};

struct cg_agg {
    int64_t warmup;
    struct cg_agg_step *steps; /* by step index */
    size_t n_steps, cap_steps;
    int64_t last_step;         /* highest index begun, -1 none */
    int64_t hint;              /* the step the last record fell in */

    struct cg_agg_interval ring[CG_AGG_INTERVALS];
    size_t ring_head, ring_len;
    uint64_t busy_frontier;    /* everything before it is settled */

    struct cg_agg_op *ops;
    size_t n_ops, cap_ops;
    struct cg_agg_slot *slots; /* open addressing on (name pointer, kind) */
    size_t n_slots;

    struct cg_agg_mem_event *pending;
    size_t n_pending;
    uint64_t mem_frontier, mem_newest;
    struct cg_agg_device devices[CG_AGG_MAX_DEVICES];
    size_t n_devices;

    int64_t records;           /* records seen */
    int64_t zero_ts;           /* records with a zero or inverted timestamp (skipped) */
    int64_t outside_steps;     /* timed records outside every step */
    int64_t late_mem;          /* memory events older than what was applied */
    int64_t overhead_ns;       /* CUPTI's own overhead records */
};

/* Sets up an empty aggregation; returns 0 or -1 (no memory). */
int cg_agg_init(struct cg_agg *a, int64_t warmup);

/* Frees what the aggregation owns. */
void cg_agg_release(struct cg_agg *a);

/* Step index begins at start_ns; returns 0 or -1 (no memory, or index out of range). */
int cg_agg_step_begin(struct cg_agg *a, int64_t index, uint64_t start_ns);

/* Step index ended at end_ns. */
void cg_agg_step_end(struct cg_agg *a, int64_t index, uint64_t end_ns);

/* Takes one activity record (any kind; unknown kinds are counted and ignored). */
void cg_agg_record(struct cg_agg *a, const CUpti_Activity *rec);

/* Settles what can no longer change: busy intervals that ended before the latest step began and
 * memory events older than the newest by CG_AGG_MEM_SLACK_NS; everything when final. */
void cg_agg_settle(struct cg_agg *a, bool final);

/* Peak bytes of a device so far (-1 when it has no memory event). */
int64_t cg_agg_peak(const struct cg_agg *a, uint32_t device);

#endif
