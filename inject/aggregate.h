/*
 * aggregate: CUPTI activity records in, per-step GPU busy time and counts, per-op totals, peak
 * device memory and (on request) trace events out. Pure: no CUPTI calls, no I/O, no locks, so tests
 * and benches feed it synthetic records of the installed cupti.h types.
 *
 * Steps come from NVTX (begin/end in the same CLOCK_MONOTONIC_RAW ns as the records). A record
 * belongs to step k when its start lies in step k's CPU interval [begin, end]; while the step
 * runs, its interval ends at the delivery horizon (cg_agg_now: no record delivered can have
 * started later, so a record stamped in another clock never lands in the running step); work
 * outside every step is counted apart and never in an op. Ops (kernels by
 * their CUPTI name pointer, copies by direction and host memory kind, sets) are summed for the
 * steps of the measured window only: warmup <= step < the end set by cg_agg_measure (no end by
 * default). Records inside and outside every step, memory events that came later than what was
 * applied, and CUPTI's own overhead are counted for the shard's "c" line.
 *
 * GPU time is kept per device (a "lane" each, for the first CG_AGG_LANES devices a record names;
 * every later device shares the last lane, counted in lanes_shared), and a step's figures are
 * those of its slowest device (see "The step's figures" below).
 * GPU busy time is the measure of the union of a device's kernel intervals within each step's
 * interval, computed as records stream in: disjoint intervals are kept sorted in a ring of
 * CG_AGG_INTERVALS; when it fills, its earlier half is settled into the steps it overlaps and
 * later records are clipped at what was settled, so memory stays bounded however many records
 * come (records may arrive up to half a ring of intervals late and still count exactly).
 * The same union is kept for copies and sets (CG_AGG_N_COPY_NS) and, once a communication kernel
 * (cg_agg_is_comm) has been seen, for the kernels that are not communication
 * (CG_AGG_N_COMPUTE_NS, else equal to the busy time): busy minus compute is the communication
 * no compute overlapped (exposed). The part of the copies' union during which some kernel ran is
 * CG_AGG_N_COPY_HIDDEN_NS (the rest is copying while no kernel runs): a copy interval and a
 * kernel interval are credited their overlap when the later of the two settles, each union
 * keeping its last CG_AGG_SETTLED settled intervals for the other's (one giving way first credits
 * its overlap with the other's intervals not yet settled), so it is exact whatever the order the
 * records come in, but for the time a held interval gains (from a record out of order) after an
 * interval that gave way was credited against it. A communication kernel is told apart by its
 * op-table entry when a measured step's kernels reach it (those of warm-up steps before it count as
 * compute); from then on the hot path adds compute kernels to compute's union too, in steps
 * whose ops count (in others every record takes the general path). Device memory: allocation and
 * release events of MEMORY2 records are applied in timestamp order (a pending window sorted before
 * applying, as records arrive out of order) to a running sum per device whose maximum is the peak.
 *
 * The step's figures. Each device's busy, compute, copy and hidden copy time per step is kept in
 * its lane; a step's busy_ns and its CG_AGG_N_COMPUTE_NS, _COPY_NS and _COPY_HIDDEN_NS counts are
 * those of one device, its slowest: the device with the most busy time in the step (ties: the most
 * copy time, then the lane first made), so that busy minus compute (exposed communication) and
 * copy minus hidden (exposed copies) are one device's. The device is chosen when the step closes
 * (two later steps have begun, the later before the last settle, so that a device's records
 * delivered a step late still count; or the settle is final), and kept: the step's figures stay 0
 * until then, and only grow after (records that come later still add to the chosen device's), so
 * the caller may write them as deltas.
 *
 * Counts (cg_agg_count): per step, whatever the window, how many kernels (and of those, how many a
 * CUDA graph launched, and how many graph launches they make: a graph's first kernel record seen
 * names its anchor node, and every record of that node is one launch; kernels of graphs take the
 * general path), synchronisations by type and the host time blocked in them, copies (and
 * device-to-pageable-host copies with their bytes), device memory allocations and releases, JIT
 * records and module loads began in it; a record counts in the step its start (or timestamp)
 * lies in, by the rule above, and records outside every step count nowhere. Warm-up steps and
 * steps past the window's end are counted too (the caller writes what it needs).
 *
 * Trace (cg_agg_trace): for a range of steps, every kernel, copy and set attributed to them and
 * every device memory event inside their time span (with the device's running total) is also
 * kept as a trace event, at most a given number between two drains; the rest are counted.
 *
 * Memory is O(steps + ops + devices + trace events held). Not thread-safe: the caller
 * serialises.
 */
#ifndef CG_AGGREGATE_H
#define CG_AGGREGATE_H

#include "launch_env.h"

#include <cupti_activity.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CG_AGG_INTERVALS 512     /* power of two */
#define CG_AGG_LANES 8           /* devices whose GPU time is kept apart */
#define CG_AGG_MAX_DEVICES 64
#define CG_AGG_MEM_PENDING 8192  /* memory events held back for ordering */
#define CG_AGG_MEM_SLACK_NS 1000000000ull
#define CG_AGG_CORR_BUCKETS 4096 /* power of two; CG_AGG_CORR_WAYS calls each */
#define CG_AGG_CORR_WAYS 4
#define CG_AGG_PLACES 256
#define CG_AGG_GRAPHS 1024 /* power of two; CUDA graphs whose launches are counted */
#define CG_AGG_SETTLED 1024 /* power of two; settled kernel and copy intervals kept */

enum cg_agg_kind { CG_AGG_KERNEL, CG_AGG_MEMCPY, CG_AGG_MEMSET, CG_AGG_MEMORY };

/* The per-step counts, each named in the shard by cg_agg_count_name (CG_SHARD_COUNT_*). */
enum cg_agg_count {
    CG_AGG_N_KERNELS,        /* kernel records */
    CG_AGG_N_GRAPH_KERNELS,  /* of those, with a graphId (see cg_agg_graph_ids) */
    CG_AGG_N_GRAPH_LAUNCHES, /* of those, of their graph's anchor node (see the top) */
    CG_AGG_N_SYNC_STREAM,    /* SYNCHRONIZATION records by type (completed calls only, queries
                              * left out: cg_agg_queries) */
    CG_AGG_N_SYNC_EVENT,
    CG_AGG_N_SYNC_CONTEXT,
    CG_AGG_N_SYNC_WAIT,           /* stream waits on an event: no host wait */
    CG_AGG_N_SYNC_NS,             /* end - start of the stream, event and context ones */
    CG_AGG_N_COPIES,              /* MEMCPY and MEMCPY2 records */
    CG_AGG_N_DTOH_PAGEABLE,       /* MEMCPY device to host into pageable memory */
    CG_AGG_N_DTOH_PAGEABLE_BYTES, /* their bytes */
    CG_AGG_N_ALLOCS,              /* MEMORY2 device memory allocations (by timestamp) */
    CG_AGG_N_FREES,               /* MEMORY2 device memory releases (by timestamp) */
    CG_AGG_N_JIT,                 /* JIT records */
    CG_AGG_N_MODULE_LOADS,        /* cg_agg_module_load calls */
    CG_AGG_N_COMPUTE_NS,     /* the union of the compute kernels (not communication) in the step */
    CG_AGG_N_COPY_NS,        /* the union of the copies and sets in the step */
    CG_AGG_N_COPY_HIDDEN_NS, /* of it, the time some kernel ran too */
    CG_AGG_COUNTS
};

struct cg_agg_step {
    uint64_t start_ns;
    uint64_t end_ns; /* UINT64_MAX while the step runs */
    int32_t lane;    /* the lane whose times are the step's (-1: not chosen yet; see the top) */
    int64_t busy_ns;
    int64_t busy_written; /* for the caller's delta writes */
    int64_t count[CG_AGG_COUNTS];
    int64_t count_written[CG_AGG_COUNTS]; /* for the caller's delta writes */
};

struct cg_agg_op {
    const char *name; /* borrowed: CUPTI's kernel name or a static string */
    enum cg_agg_kind kind;
    int64_t calls, total_ns; /* brought up to date by cg_agg_settle */
    int64_t written_calls, written_ns;
};

/* The op table: open addressing on (name pointer, kind), holding the live totals. */
struct cg_agg_slot {
    const char *name; /* NULL: empty (kind UINT32_MAX) */
    int64_t calls;    /* apart from total_ns: two scalar adds beat the vector add they would
                       * otherwise become in the hot path */
    uint32_t kind;
    uint32_t op;      /* index into ops */
    int64_t total_ns;
};

struct cg_agg_interval {
    uint64_t start, end;
};

struct cg_agg_lane;

/* A union of intervals being measured into each step: disjoint intervals kept sorted in a ring,
 * its earlier half settled into the steps when it fills (see the top). */
struct cg_agg_union {
    struct cg_agg_interval ring[CG_AGG_INTERVALS];
    size_t head, len;
    uint64_t frontier;        /* everything before it is settled */
    struct cg_agg_lane *lane; /* the device's lane it belongs to */
    size_t field;             /* the int64_t of struct cg_agg_times it settles into (offsetof) */
};

/* One device's GPU time in one step. */
struct cg_agg_times {
    int64_t busy_ns, compute_ns, copy_ns, copy_hidden_ns;
};

/* A union's settled intervals, kept for the other union's intervals settling later (at most
 * CG_AGG_SETTLED, the oldest giving way), in time order (see aggregate_union.c, "the copies'
 * time"). */
struct cg_agg_settled {
    struct cg_agg_interval iv[CG_AGG_SETTLED];
    size_t head, len;
};

/* Where the host was when it made a synchronisation, a pageable copy, a device memory allocation
 * or release: a count, a place (a non-zero value the caller gave cg_agg_place_note) and how
 * often, over the measured window. */
struct cg_agg_place {
    uint32_t place;
    enum cg_agg_count count; /* CG_AGG_N_SYNC_STREAM, _EVENT, _CONTEXT, _DTOH_PAGEABLE, _ALLOCS
                              * or _FREES */
    int64_t calls, written;
};

/* A CUDA graph's anchor: the node of the first of its kernel records seen; every record of that
 * node is one launch of the graph. */
struct cg_agg_graph {
    uint32_t id; /* graphId, 0: empty slot */
    uint64_t anchor;
};

/* The places of API calls by correlation id (cg_agg_place_note): bucket corr %
 * CG_AGG_CORR_BUCKETS holds CG_AGG_CORR_WAYS entries (id << 32 | place, 0 empty). */
struct cg_agg_corr {
    _Atomic uint64_t e[CG_AGG_CORR_BUCKETS * CG_AGG_CORR_WAYS];
};

/* A device's GPU time (see the top): its unions, and its times per step. */
struct cg_agg_lane {
    uint32_t device;             /* the first device of the lane (the last lane takes others) */
    bool comm;                   /* a communication kernel was seen on it: compute is kept apart
                                  * from busy (see cg_agg_is_comm); until then every kernel is
                                  * compute */
    struct cg_agg_union busy;    /* every kernel: the hot path's */
    struct cg_agg_union compute; /* kernels but communication: once comm is set */
    struct cg_agg_union copies;  /* copies and sets */
    struct cg_agg_settled kept_kernels, kept_copies; /* for the copies' hidden time */
    struct cg_agg_times *times;  /* by step index, as many as the aggregation's cap_steps */
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

/* One traced event: a kernel, copy or set (start, end, name, bytes; -1 for kernels), or a device
 * memory event (kind CG_AGG_MEMORY: start = end = its time, bytes = the device's total after). */
struct cg_agg_trace_event {
    uint64_t start, end;
    const char *name; /* borrowed as the op names are; NULL for memory events */
    int64_t bytes;
    uint32_t device, stream;
    enum cg_agg_kind kind;
};

struct cg_agg {
    int64_t warmup;
    int64_t end_step;          /* ops count for steps < end_step (INT64_MAX: no end) */
    uint64_t now_ns;           /* delivery horizon (UINT64_MAX: none), see cg_agg_now */
    struct cg_agg_step *steps; /* by step index */
    size_t n_steps, cap_steps;
    int64_t last_step;         /* highest index begun, -1 none */
    int64_t hint;              /* the step the last record fell in */
    /* The hint step as the hot path sees it (refreshed whenever a step or the hint changes):
     * times t with t - win_lo < win_len lie in it (win_len 0: none, or a traced step, whose
     * records take the general path); win_next is the start of the next step begun after it
     * (UINT64_MAX: none); win_counted: its ops count. */
    uint64_t win_lo, win_len, win_next;
    bool win_counted;
    bool graph_ids; /* kernel records' graphId is read (cg_agg_graph_ids) */

    struct cg_agg_lane *lanes[CG_AGG_LANES]; /* made at a device's first record */
    size_t n_lanes;
    struct cg_agg_lane *lane; /* the lane of the last kernel the hot path took (NULL: none) */
    int64_t lanes_shared;     /* timed records of devices past the CG_AGG_LANES-th (in the last
                               * lane), or of no lane (out of memory: their time is lost) */
    size_t publish_from;      /* steps before it have their lane (see "The step's figures") */
    size_t touched_from;      /* the first step a lane's time was credited to since the last
                               * settle (SIZE_MAX: none) */

    struct cg_agg_op *ops;
    size_t n_ops, cap_ops;
    struct cg_agg_slot *slots;
    size_t n_slots;

    struct cg_agg_mem_event *pending;
    size_t n_pending;
    bool pending_sorted; /* pending is in time order */
    uint64_t mem_frontier, mem_newest;
    struct cg_agg_device devices[CG_AGG_MAX_DEVICES];
    size_t n_devices;

    struct cg_agg_corr *corr; /* borrowed (cg_agg_places); NULL: no places */
    struct cg_agg_corr *queries; /* borrowed (cg_agg_queries); NULL: queries not told apart */
    struct cg_agg_graph graphs[CG_AGG_GRAPHS]; /* open addressing on the graph id */
    size_t n_graphs;
    bool graphs_full; /* a graph found no slot: its launches are not counted */
    struct cg_agg_place places[CG_AGG_PLACES];
    size_t n_places;
    int64_t places_lost; /* counted calls with a place the table had no room for */

    int64_t trace_first, trace_last; /* step indices traced, -1: no trace */
    struct cg_agg_trace_event *trace; /* events since the caller last drained them */
    size_t n_trace, cap_trace, max_trace;
    int64_t trace_dropped;     /* events not kept: max_trace were held */
    bool trace_mem_started;    /* the memory totals at the trace's start were recorded */

    int64_t records;           /* records seen */
    int64_t zero_ts;           /* records with a zero or inverted timestamp (skipped) */
    int64_t outside_steps;     /* timed records outside every step */
    int64_t inside_steps;      /* timed records inside a step (any step, counted or not) */
    int64_t late_mem;          /* memory events older than what was applied */
    int64_t overhead_ns;       /* CUPTI's own overhead records */
};

/* Allocates what an empty aggregation owns (cg_agg_release frees it); returns 0 or -1 (no
 * memory). */
int cg_agg_new(struct cg_agg *a, int64_t warmup);

/* Ops count only for steps before end_step from now on (call before the records come). */
void cg_agg_measure(struct cg_agg *a, int64_t end_step);

/* The records handed over from now on were delivered at now_ns (the library's clock): none of
 * them started later, so a running step's interval ends there for them. */
void cg_agg_now(struct cg_agg *a, uint64_t now_ns);

/* Frees what the aggregation owns. */
void cg_agg_release(struct cg_agg *a);

/* Step index begins at start_ns; returns 0 or -1 (no memory, or index out of range). */
int cg_agg_step_begin(struct cg_agg *a, int64_t index, uint64_t start_ns);

/* Step index ended at end_ns. */
void cg_agg_step_end(struct cg_agg *a, int64_t index, uint64_t end_ns);

/* Also keeps trace events for steps first..last (indices as given to cg_agg_step_begin),
 * holding at most max_events until the caller drains them (writes trace[0..n_trace) and sets
 * n_trace to 0); more are counted in trace_dropped. Call before the records come. 0 or -1. */
int cg_agg_trace(struct cg_agg *a, int64_t first, int64_t last, size_t max_events);

/* Writes e as a shard line ("tg KIND DEVICE STREAM START END BYTES NAME" or
 * "tm DEVICE TIME BYTES", see src/measure/shard.h) into out, which needs CG_AGG_TRACE_LINE_MAX bytes;
 * returns its length (0 when out is too small). Not NUL-terminated. */
size_t cg_agg_trace_format(const struct cg_agg_trace_event *e, char *out, size_t cap);
#define CG_AGG_TRACE_LINE_MAX (128 + 4 * 4096 + 2)

/* Whether kernel records' graphId is read for CG_AGG_N_GRAPH_KERNELS (on by default): the
 * caller turns it off when the records may not be the installed cupti_activity.h's layout
 * (graphId is not a leading field of the kernel record; see aggregate_hot.c). */
void cg_agg_graph_ids(struct cg_agg *a, bool read);

/* A CUDA module was loaded at now_ns, the library's clock read at the load (so a step still
 * running holds it whatever the delivery horizon), by a thread at place (cg_nvtx_place; 0:
 * none): counted in the step it lies in, and at its place when places are on. */
void cg_agg_module_load(struct cg_agg *a, uint64_t now_ns, uint32_t place);

/* The API call of correlation id corr was made at place (non-zero). Safe from any thread without
 * the aggregation's lock (atomics only): the CUPTI callback of a call knows its place, its record
 * comes later. A call whose record never comes holds its entry until a later call of the same
 * bucket needs it (the oldest id gives way, replaced by compare-and-swap: two notes racing for
 * one entry both stay, or the loser looks again). */
void cg_agg_place_note(struct cg_agg_corr *t, uint32_t corr, uint32_t place);

/* A test's hook, called by cg_agg_place_note between its choice of the entry it replaces and the
 * replacement (a racing note lands there first). Weak and left undefined by the library, so it is
 * NULL there and never called; a test that defines it gets the calls. */
__attribute__((weak, visibility("hidden"))) void cg_agg_corr_hook(_Atomic uint64_t *entry);

/* Takes places from t (borrowed, outliving the aggregation; NULL: none): a synchronisation, copy
 * or device memory record whose correlation id t holds and that counts in a measured step
 * (warmup <= step < the end) is counted in places[] too (the stream, event and context
 * synchronisations, the copies from the device to pageable host memory, the device memory
 * allocations and releases). Every synchronisation, copy (peer copies too) and memory record takes
 * its entry out of t, whether it counts or not, so entries never outlive their records. */
void cg_agg_places(struct cg_agg *a, struct cg_agg_corr *t);

/* Takes the correlation ids of queries from t (borrowed, outliving the aggregation; NULL: none),
 * noted with cg_agg_place_note (any non-zero place): a SYNCHRONIZATION record of one of them is
 * polling (cudaStreamQuery, cudaEventQuery), counted nowhere, and its entry is taken out of t. */
void cg_agg_queries(struct cg_agg *a, struct cg_agg_corr *t);

/* True for the name of a communication kernel: NCCL's (the name holds "nccl"), or one holding
 * a part cg_agg_comm_kernels set. */
bool cg_agg_is_comm(const char *name);

/* Communication kernels besides NCCL's (CANARY_GATE_COMM_KERNELS): list is comma-separated name
 * parts, each 1 to CG_AGG_COMM_PART_MAX bytes of printable ASCII but space and comma, at most
 * CG_AGG_COMM_PARTS of them. NULL or "" leaves NCCL's only. Returns 0, or -1 with why (a line,
 * for a "w" record) and NCCL's only. For the whole process: set it before the first record. */
#define CG_AGG_COMM_PARTS CG_COMM_PARTS /* launch_env.h, which the launcher checks too */
#define CG_AGG_COMM_PART_MAX CG_COMM_PART_MAX
int cg_agg_comm_kernels(const char *list, char *why, size_t cap);

/* The shard's name of count c (a CG_SHARD_COUNT_* string). */
const char *cg_agg_count_name(enum cg_agg_count c);

/* Takes one activity record (any kind; unknown kinds are counted and ignored). */
void cg_agg_record(struct cg_agg *a, const CUpti_Activity *rec);

/* Takes n records in buffer order, as cg_agg_record would one by one (faster: the loop runs
 * inside the aggregation and reads ahead in the buffer the records lie in). */
void cg_agg_records(struct cg_agg *a, const CUpti_Activity *const *recs, size_t n);

/* Settles what can no longer change: busy intervals that ended before the latest step began and
 * memory events older than the newest by CG_AGG_MEM_SLACK_NS; everything when final. Brings
 * ops[].calls and ops[].total_ns up to date. */
void cg_agg_settle(struct cg_agg *a, bool final);

/* Peak bytes of a device so far (-1 when it has no memory event). */
int64_t cg_agg_peak(const struct cg_agg *a, uint32_t device);

/* The op name of a copy: "memcpy <direction>" and, for copies to or from host memory, the host
 * memory's kind: "memcpy HtoD pageable", "memcpy DtoH pinned", ... (a static string). */
const char *cg_agg_memcpy_name(uint8_t copy_kind, uint8_t src_kind, uint8_t dst_kind);

#endif
