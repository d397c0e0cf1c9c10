/*
 * aggregate_records: one record of any kind on the aggregation's general path (aggregate.h), which
 * gives what the hot path (aggregate_hot.c) gives for the records it takes: timed records
 * (kernels, copies, sets: their step searched, their union, counts, ops and trace events), device
 * memory events (applied in time order to each device's running total), synchronisations and JIT
 * records, module loads; the places of API calls (the correlation table, whose notes come from
 * any thread: atomics only) and which kernels are communication. Kernel records are read as
 * aggregate_hot.c's top says. Times in ns, sizes in bytes. Not thread-safe, but for
 * cg_agg_place_note.
 */
#include "aggregate_internal.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- places: where the host was when it made a call ---------------------------------------- */

void cg_agg_places(struct cg_agg *a, struct cg_agg_corr *t)
{
    a->corr = t;
}

void cg_agg_place_note(struct cg_agg_corr *t, uint32_t corr, uint32_t place)
{
    if (corr == 0 || place == 0)
        return;
    _Atomic uint64_t *b = &t->e[(corr & (CG_AGG_CORR_BUCKETS - 1)) * CG_AGG_CORR_WAYS];
    uint64_t want = (uint64_t)corr << 32 | place;
    /* an empty entry, else the oldest call's (the lowest id), replaced only if it is still the
     * one chosen: another thread's note or take in between makes it look again, so a racing note
     * never overwrites a live place; a bucket that keeps changing leaves this call unplaced */
    for (int pass = 0; pass < 2 * CG_AGG_CORR_WAYS; pass++) {
        size_t oldest = 0;
        uint64_t oldest_v = UINT64_MAX;
        for (size_t i = 0; i < CG_AGG_CORR_WAYS; i++) {
            uint64_t v = atomic_load_explicit(&b[i], memory_order_relaxed);
            if (v == 0 && atomic_compare_exchange_strong_explicit(
                              &b[i], &v, want, memory_order_release, memory_order_relaxed))
                return;
            if (v != 0 && v < oldest_v) {
                oldest_v = v;
                oldest = i;
            }
        }
        if (oldest_v == UINT64_MAX)
            continue;                 /* every entry changed under us */
        if (cg_agg_corr_hook != NULL) /* a test's, never the library's (aggregate.h) */
            cg_agg_corr_hook(&b[oldest]);
        if (atomic_compare_exchange_strong_explicit(&b[oldest], &oldest_v, want,
                                                    memory_order_release, memory_order_relaxed))
            return;
    }
}

void cg_agg_queries(struct cg_agg *a, struct cg_agg_corr *t)
{
    a->queries = t;
}

/* The value noted for correlation id corr in t, taken out of the table (0: none). */
static uint32_t corr_take(struct cg_agg_corr *t, uint32_t corr)
{
    if (corr == 0 || t == NULL)
        return 0;
    _Atomic uint64_t *b = &t->e[(corr & (CG_AGG_CORR_BUCKETS - 1)) * CG_AGG_CORR_WAYS];
    for (size_t i = 0; i < CG_AGG_CORR_WAYS; i++) {
        uint64_t v = atomic_load_explicit(&b[i], memory_order_acquire);
        if (v != 0 && (uint32_t)(v >> 32) == corr &&
            atomic_compare_exchange_strong_explicit(&b[i], &v, 0, memory_order_relaxed,
                                                    memory_order_relaxed))
            return (uint32_t)v;
    }
    return 0;
}

/* Counts a call of count c made at place in step k (nothing when places are off, at no place, or
 * in a step not measured). */
static void place_add(struct cg_agg *a, enum cg_agg_count c, uint32_t place, int64_t k)
{
    if (a->corr == NULL || place == 0 || !counted_step(a, k))
        return;
    for (size_t i = 0; i < a->n_places; i++) {
        if (a->places[i].place == place && a->places[i].count == c) {
            a->places[i].calls++;
            return;
        }
    }
    if (a->n_places == CG_AGG_PLACES) {
        a->places_lost++;
        return;
    }
    a->places[a->n_places++] = (struct cg_agg_place){.place = place, .count = c, .calls = 1};
}

static void trace_add(struct cg_agg *a, const struct cg_agg_trace_event *e)
{
    if (a->n_trace == a->cap_trace && a->cap_trace < a->max_trace) {
        size_t cap = a->cap_trace ? a->cap_trace * 2 : 1024;
        if (cap > a->max_trace)
            cap = a->max_trace;
        struct cg_agg_trace_event *t = realloc(a->trace, cap * sizeof(*t));
        if (t != NULL) {
            a->trace = t;
            a->cap_trace = cap;
        }
    }
    if (a->n_trace < a->cap_trace)
        a->trace[a->n_trace++] = *e;
    else
        a->trace_dropped++;
}

/* --- timed records (kernels, copies, sets) ------------------------------------------------ */

struct timed_rec {
    const char *name;
    enum cg_agg_kind kind;
    uint64_t start, end;
    int64_t bytes;
    uint32_t device, stream;
    uint32_t graph;     /* a kernel's graphId when read: a CUDA graph launched it (0: none) */
    uint64_t node;      /* its graphNodeId */
    bool dtoh_pageable; /* a copy from the device into pageable host memory */
    uint32_t corr;      /* a copy's correlation id (its place, for dtoh_pageable) */
};

/* Counts a timed record of step k. */
static void timed_count(struct cg_agg *a, const struct timed_rec *r, int64_t k)
{
    int64_t *n = a->steps[k].count;
    if (r->kind == CG_AGG_KERNEL) {
        n[CG_AGG_N_KERNELS]++;
        if (r->graph != 0) {
            n[CG_AGG_N_GRAPH_KERNELS]++;
            n[CG_AGG_N_GRAPH_LAUNCHES] += agg_graph_launch(a, r->graph, r->node);
        }
    } else if (r->kind == CG_AGG_MEMCPY) {
        n[CG_AGG_N_COPIES]++;
        if (r->dtoh_pageable) {
            n[CG_AGG_N_DTOH_PAGEABLE]++;
            n[CG_AGG_N_DTOH_PAGEABLE_BYTES] += r->bytes;
        }
    }
}

/* The lane's first communication kernel: from now on its compute time is kept apart from its
 * busy time, the union starting as busy's unsettled part (every kernel so far was compute). */
COLD void comm_begin(struct cg_agg_lane *l)
{
    size_t field = l->compute.field;
    l->compute = l->busy;
    l->compute.field = field;
    l->comm = true;
}

static inline struct cg_agg_lane *lane_of(struct cg_agg *a, uint32_t dev)
{
    struct cg_agg_lane *l = lane_find(a, dev);
    return l != NULL ? l : agg_lane_make(a, dev);
}

/* A kernel's interval on lane l: busy time, and compute time unless it is communication. */
static void kernel_time(struct cg_agg *a, struct cg_agg_lane *l, const char *name, uint64_t start,
                        uint64_t end)
{
    const struct cg_agg_slot *sl = slot_find(a, name != NULL ? name : "?", CG_AGG_KERNEL);
    bool comm = sl->name != NULL ? (sl->kind & SLOT_COMM) != 0 : cg_agg_is_comm(name);
    if (comm && !l->comm)
        comm_begin(l);
    union_add(a, &l->busy, start, end);
    if (l->comm && !comm)
        union_add(a, &l->compute, start, end);
}

/* A timed record in general: timestamps checked, its step searched, counted, traced when
 * asked. */
static void timed(struct cg_agg *a, const struct timed_rec *r)
{
    /* a copy's place is taken out whether it counts or not: no entry outlives its record */
    uint32_t place = r->corr != 0 ? corr_take(a->corr, r->corr) : 0;
    if (r->start == 0 || r->end == 0 || r->end < r->start) {
        a->zero_ts++;
        return;
    }
    int64_t k = step_at(a, r->start, true);
    struct cg_agg_lane *l = lane_of(a, r->device);
    if (l == NULL || l->device != r->device)
        a->lanes_shared++;
    if (l != NULL && r->kind == CG_AGG_KERNEL)
        kernel_time(a, l, r->name, r->start, r->end);
    else if (l != NULL)
        union_add(a, &l->copies, r->start, r->end);
    if (k < 0) {
        a->outside_steps++;
        return;
    }
    a->inside_steps++;
    timed_count(a, r, k);
    if (r->dtoh_pageable)
        place_add(a, CG_AGG_N_DTOH_PAGEABLE, place, k);
    if (traced_step(a, k)) {
        struct cg_agg_trace_event e = {
            r->start, r->end, r->name ? r->name : "?", r->bytes, r->device, r->stream, r->kind};
        trace_add(a, &e);
    }
    if (counted_step(a, k))
        op_count(a, r->name, r->kind, r->end - r->start);
}

#define HOST_NAMES(dir)                                                                            \
    {                                                                                              \
        "memcpy " dir, "memcpy " dir " pageable", "memcpy " dir " pinned",                         \
            "memcpy " dir " device", "memcpy " dir " array", "memcpy " dir " managed",             \
            "memcpy " dir " device", "memcpy " dir " managed"                                      \
    }

const char *cg_agg_memcpy_name(uint8_t copy_kind, uint8_t src_kind, uint8_t dst_kind)
{
    /* by CUpti_ActivityMemoryKind: unknown, pageable, pinned, device, array, managed,
     * device static, managed static */
    static const char *const htod[8] = HOST_NAMES("HtoD"), *const dtoh[8] = HOST_NAMES("DtoH");
    static const char *const htoa[8] = HOST_NAMES("HtoA"), *const atoh[8] = HOST_NAMES("AtoH");
    size_t src = src_kind < 8 ? src_kind : 0, dst = dst_kind < 8 ? dst_kind : 0;
    switch (copy_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
        return htod[src];
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
        return dtoh[dst];
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
        return htoa[src];
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
        return atoh[dst];
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
        return "memcpy DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
        return "memcpy HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
        return "memcpy PtoP";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
        return "memcpy array";
    default:
        return "memcpy other";
    }
}

/* --- memory ------------------------------------------------------------------------------- */

static struct cg_agg_device *device(struct cg_agg *a, uint32_t id)
{
    for (size_t i = 0; i < a->n_devices; i++)
        if (a->devices[i].id == id)
            return &a->devices[i];
    if (a->n_devices == CG_AGG_MAX_DEVICES)
        return NULL;
    struct cg_agg_device *d = &a->devices[a->n_devices++];
    *d = (struct cg_agg_device){id, 0, 0, -1};
    return d;
}

/* The time span of the traced steps: [start of the first, end of the last] (while the last runs
 * or has not begun, open-ended); false when there is no trace or it has not begun. */
static bool trace_span(const struct cg_agg *a, uint64_t *from, uint64_t *to)
{
    if (a->trace_first < 0 || a->trace_first > a->last_step)
        return false;
    *from = a->steps[a->trace_first].start_ns;
    *to = a->trace_last <= a->last_step ? a->steps[a->trace_last].end_ns : UINT64_MAX;
    return *from != UINT64_MAX;
}

/* Once memory events reach the trace's start: every device's total at that start. */
static void mem_trace_start(struct cg_agg *a, uint64_t t)
{
    uint64_t from, to;
    if (a->trace_mem_started || !trace_span(a, &from, &to) || t < from)
        return;
    a->trace_mem_started = true;
    for (size_t i = 0; i < a->n_devices; i++) {
        const struct cg_agg_device *d = &a->devices[i];
        struct cg_agg_trace_event s = {from, from, NULL, d->current, d->id, 0, CG_AGG_MEMORY};
        trace_add(a, &s);
    }
}

static void mem_trace(struct cg_agg *a, const struct cg_agg_mem_event *e,
                      const struct cg_agg_device *d)
{
    uint64_t from, to;
    if (!trace_span(a, &from, &to) || e->ts < from || e->ts > to)
        return;
    struct cg_agg_trace_event t = {e->ts, e->ts, NULL, d->current, d->id, 0, CG_AGG_MEMORY};
    trace_add(a, &t);
}

static void mem_apply(struct cg_agg *a, const struct cg_agg_mem_event *e)
{
    if (a->trace_first >= 0)
        mem_trace_start(a, e->ts);
    struct cg_agg_device *d = device(a, e->device);
    if (d == NULL)
        return;
    d->current += e->delta;
    if (d->current > d->peak)
        d->peak = d->current;
    if (a->trace_first >= 0)
        mem_trace(a, e, d);
}

static int cmp_mem(const void *x, const void *y)
{
    const struct cg_agg_mem_event *p = x, *q = y;
    if (p->ts != q->ts)
        return p->ts < q->ts ? -1 : 1;
    /* at the same instant, releases first: a conservative peak */
    return (p->delta > q->delta) - (p->delta < q->delta);
}

/* Puts the pending events in time order (they usually came in it: then nothing is done). */
static void mem_sort(struct cg_agg *a)
{
    if (!a->pending_sorted)
        qsort(a->pending, a->n_pending, sizeof(*a->pending), cmp_mem);
    a->pending_sorted = true;
}

/* Applies pending events older than upto (all when upto is UINT64_MAX), in time order. */
void agg_mem_settle(struct cg_agg *a, uint64_t upto)
{
    if (a->n_pending > 0) {
        mem_sort(a);
        size_t k = 0;
        while (k < a->n_pending && a->pending[k].ts <= upto) {
            mem_apply(a, &a->pending[k]);
            if (a->pending[k].ts > a->mem_frontier)
                a->mem_frontier = a->pending[k].ts;
            k++;
        }
        memmove(a->pending, a->pending + k, (a->n_pending - k) * sizeof(*a->pending));
        a->n_pending -= k;
    }
    if (a->trace_first >= 0)
        mem_trace_start(a, upto); /* everything before upto is applied */
}

static void memory(struct cg_agg *a, const CUpti_ActivityMemory4 *m)
{
    uint32_t place = corr_take(a->corr, m->correlationId); /* whether it counts or not */
    if (m->memoryKind != CUPTI_ACTIVITY_MEMORY_KIND_DEVICE || m->timestamp == 0) {
        if (m->timestamp == 0)
            a->zero_ts++;
        return;
    }
    int64_t bytes = (int64_t)m->bytes;
    struct cg_agg_mem_event e = {m->timestamp, 0, m->deviceId};
    if (m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION)
        e.delta = bytes;
    else if (m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE)
        e.delta = -bytes;
    else
        return;
    int64_t k = step_at(a, e.ts, false);
    if (k >= 0) { /* by the operation: a release of 0 bytes is a release */
        enum cg_agg_count c =
            m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION
                ? CG_AGG_N_ALLOCS
                : CG_AGG_N_FREES;
        a->steps[k].count[c]++;
        place_add(a, c, place, k);
    }
    if (e.ts > a->mem_newest)
        a->mem_newest = e.ts;
    if (a->mem_frontier != 0 && e.ts < a->mem_frontier) {
        a->late_mem++;
        mem_apply(a, &e);
        return;
    }
    if (a->n_pending == CG_AGG_MEM_PENDING) {
        /* full: apply the older half */
        mem_sort(a);
        agg_mem_settle(a, a->pending[CG_AGG_MEM_PENDING / 2].ts);
    }
    if (a->n_pending > 0 && cmp_mem(&a->pending[a->n_pending - 1], &e) > 0)
        a->pending_sorted = false;
    a->pending[a->n_pending++] = e;
}

/* --- host-side records: synchronisations, JIT, module loads --------------------------------- */

/* The step a host-side record (or event) of [start, end] belongs to, or -1; a zero or inverted
 * timestamp is counted and belongs nowhere. The window is left where it is: these records come
 * between the kernels of the steps they lie in, not in runs of their own. */
static int64_t host_step(struct cg_agg *a, uint64_t start, uint64_t end)
{
    if (start == 0 || end == 0 || end < start) {
        a->zero_ts++;
        return -1;
    }
    return step_at(a, start, false);
}

/* A synchronisation of a known type that completed (a non-zero returnValue is a query that found
 * work pending, or a failed call: no wait happened) counts by type; the host time of the stream,
 * event and context ones is the time blocked (a stream's wait on an event does not block). A
 * record of a query (cudaStreamQuery, cudaEventQuery: its correlation id noted in the queries'
 * table) never counts, whatever its type and return value: polling does not block. */
static void sync_record(struct cg_agg *a, const CUpti_ActivitySynchronization2 *s)
{
    if (a->queries != NULL && corr_take(a->queries, s->correlationId) != 0)
        return;
    uint32_t place = corr_take(a->corr, s->correlationId); /* whether it counts or not */
    enum cg_agg_count c;
    switch (s->type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE:
        c = CG_AGG_N_SYNC_EVENT;
        break;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE:
        c = CG_AGG_N_SYNC_STREAM;
        break;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE:
        c = CG_AGG_N_SYNC_CONTEXT;
        break;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT:
        c = CG_AGG_N_SYNC_WAIT;
        break;
    default:
        return; /* unknown: counted nowhere */
    }
    if (s->returnValue != 0)
        return;
    int64_t k = host_step(a, s->start, s->end);
    if (k < 0)
        return;
    a->steps[k].count[c]++;
    if (c != CG_AGG_N_SYNC_WAIT) {
        a->steps[k].count[CG_AGG_N_SYNC_NS] += (int64_t)(s->end - s->start);
        place_add(a, c, place, k);
    }
}

static void jit_record(struct cg_agg *a, const CUpti_ActivityJit2 *j)
{
    int64_t k = host_step(a, j->start, j->end);
    if (k >= 0)
        a->steps[k].count[CG_AGG_N_JIT]++;
}

/* The name parts of communication kernels: NCCL's, then CANARY_GATE_COMM_KERNELS' */
_Static_assert(CG_AGG_COMM_PARTS == 8 && CG_AGG_COMM_PART_MAX == 63, "the messages below say so");
static char g_comm_parts[1 + CG_AGG_COMM_PARTS][CG_AGG_COMM_PART_MAX + 1] = {"nccl"};
static size_t g_n_comm_parts = 1;

int cg_agg_comm_kernels(const char *list, char *why, size_t cap)
{
    g_n_comm_parts = 1;
    if (list == NULL || *list == '\0')
        return 0;
    const char *part;
    unsigned long part_len;
    const char *bad = cg_comm_kernels_problem(list, &part, &part_len);
    if (bad != NULL) {
        int shown = part_len < 40 ? (int)part_len : 40;
        snprintf(why, cap, "'%.*s%s': %s (communication kernels are NCCL's only)", shown, part,
                 part_len > 40 ? "..." : "", bad);
        return -1;
    }
    size_t n = 1;
    for (const char *p = list;; p++) { /* each part, the one after a last comma too */
        size_t len = strcspn(p, ",");
        memcpy(g_comm_parts[n], p, len);
        g_comm_parts[n++][len] = '\0';
        p += len;
        if (*p == '\0')
            break;
    }
    g_n_comm_parts = n;
    return 0;
}

bool cg_agg_is_comm(const char *name)
{
    for (size_t i = 0; name != NULL && i < g_n_comm_parts; i++)
        if (strstr(name, g_comm_parts[i]) != NULL)
            return true;
    return false;
}

void cg_agg_module_load(struct cg_agg *a, uint64_t now_ns, uint32_t place)
{
    if (now_ns == 0)
        return;
    if (a->now_ns < now_ns) /* nothing can have been delivered later than now */
        cg_agg_now(a, now_ns);
    int64_t k = step_at(a, now_ns, false);
    if (k < 0)
        return;
    a->steps[k].count[CG_AGG_N_MODULE_LOADS]++;
    place_add(a, CG_AGG_N_MODULE_LOADS, place, k);
}

/* --- records ------------------------------------------------------------------------------ */

/* Any record, in general (the records of the hot path give the same results here). */
void agg_record_general(struct cg_agg *a, const CUpti_Activity *rec)
{
    struct timed_rec r;
    switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: {
        /* the leading fields, and graphId (see aggregate_hot.c's top) */
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)(const void *)rec;
        r = (struct timed_rec){.name = k->name,
                               .kind = CG_AGG_KERNEL,
                               .start = k->start,
                               .end = k->end,
                               .bytes = -1,
                               .device = k->deviceId,
                               .stream = k->streamId,
                               .graph = a->graph_ids ? k->graphId : 0,
                               .node = a->graph_ids ? k->graphNodeId : 0};
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)(const void *)rec;
        r = (struct timed_rec){.name = cg_agg_memcpy_name(m->copyKind, m->srcKind, m->dstKind),
                               .kind = CG_AGG_MEMCPY,
                               .start = m->start,
                               .end = m->end,
                               .bytes = (int64_t)m->bytes,
                               .device = m->deviceId,
                               .stream = m->streamId,
                               .dtoh_pageable = m->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH &&
                                                m->dstKind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
                               .corr = m->correlationId};
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY2: {
        const CUpti_ActivityMemcpyPtoP4 *m = (const CUpti_ActivityMemcpyPtoP4 *)(const void *)rec;
        r = (struct timed_rec){.name = "memcpy PtoP",
                               .kind = CG_AGG_MEMCPY,
                               .start = m->start,
                               .end = m->end,
                               .bytes = (int64_t)m->bytes,
                               .device = m->deviceId,
                               .stream = m->streamId,
                               .corr = m->correlationId};
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)(const void *)rec;
        r = (struct timed_rec){.name = "memset",
                               .kind = CG_AGG_MEMSET,
                               .start = m->start,
                               .end = m->end,
                               .bytes = (int64_t)m->bytes,
                               .device = m->deviceId,
                               .stream = m->streamId};
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMORY2:
        memory(a, (const CUpti_ActivityMemory4 *)(const void *)rec);
        return;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
        sync_record(a, (const CUpti_ActivitySynchronization2 *)(const void *)rec);
        return;
    case CUPTI_ACTIVITY_KIND_JIT:
        jit_record(a, (const CUpti_ActivityJit2 *)(const void *)rec);
        return;
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
        const CUpti_ActivityOverhead3 *o = (const CUpti_ActivityOverhead3 *)(const void *)rec;
        if (o->end > o->start && o->start != 0)
            a->overhead_ns += (int64_t)(o->end - o->start);
        return;
    }
    default:
        return;
    }
    timed(a, &r);
}
