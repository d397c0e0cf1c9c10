/*
 * aggregate_hot: the aggregation's hot path (cg_agg_records) and its op table.
 *
 * Hot path per kernel record (cg_agg_records, window_run): one unsigned compare puts the record
 * in the step the previous record fell in (the "window", a copy of that step's interval), one
 * compare keeps it on the run's device (a run is one device's lane: a record of another device
 * ends it, and the next run takes that device's lane), one compare against the lane's busy ring's
 * last interval extends it or appends after it, and one probe of the
 * op table on the name pointer adds to the op's totals, which live in the table. The window
 * step's kernel counts (and the records inside steps) are kept in registers for a run of such
 * records and added once when the run ends. The loop reads the buffer a few records ahead of
 * use. Records outside the window, out of time order, with bad timestamps, of other kinds or in
 * traced steps take the general path (step search, ordered ring insert), which gives the same
 * results. Times in ns, sizes in bytes. Not thread-safe.
 *
 * Kernel records (here and in aggregate_records.c): DESIGN.md's rule is to read only the leading
 * fields (start, end, deviceId, contextId, streamId, correlationId, name), whose offsets every
 * version shares, so that a newer libcupti keeps working. graphId and graphNodeId are read too, and
 * only from kernel records (kinds KERNEL and CONCURRENT_KERNEL), for CG_AGG_N_GRAPH_KERNELS and
 * _LAUNCHES: they came with CUpti_ActivityKernel5 (CUDA 11.0) and sit at the same offsets in every
 * kernel record since (5 to 10, pinned below at build time), as CUPTI only appends fields to a
 * record's next version; every kernel record a libcupti of CUDA 11 or later delivers is at least
 * CUpti_ActivityKernel5's size, so the read stays inside the record. Beyond that the caller decides
 * (cg_agg_graph_ids): inject/cupti.c turns it off, and leaves graph_kernels out of what it
 * measures, unless the loaded libcupti reports the API major version these headers are
 * (cuptiGetVersion).
 */
#include "aggregate_internal.h"

#include <stdlib.h>

/* Reading ahead: the lines of the record about this many kernel records further on (records
 * lie back to back in a CUPTI buffer; a guess that misses only costs a useless prefetch). */
#define READ_AHEAD_RECORDS 16

#define GRAPH_ID_OFFSET 156
_Static_assert(offsetof(CUpti_ActivityKernel5, graphId) == GRAPH_ID_OFFSET &&
                   offsetof(CUpti_ActivityKernel6, graphId) == GRAPH_ID_OFFSET &&
                   offsetof(CUpti_ActivityKernel7, graphId) == GRAPH_ID_OFFSET &&
                   offsetof(CUpti_ActivityKernel8, graphId) == GRAPH_ID_OFFSET &&
                   offsetof(CUpti_ActivityKernel9, graphId) == GRAPH_ID_OFFSET &&
                   offsetof(CUpti_ActivityKernel10, graphId) == GRAPH_ID_OFFSET &&
                   sizeof(CUpti_ActivityKernel5) >= GRAPH_ID_OFFSET + sizeof(uint32_t),
               "graphId has one offset in every kernel record that has it (see the top)");
#define GRAPH_NODE_OFFSET 144
_Static_assert(offsetof(CUpti_ActivityKernel5, graphNodeId) == GRAPH_NODE_OFFSET &&
                   offsetof(CUpti_ActivityKernel6, graphNodeId) == GRAPH_NODE_OFFSET &&
                   offsetof(CUpti_ActivityKernel7, graphNodeId) == GRAPH_NODE_OFFSET &&
                   offsetof(CUpti_ActivityKernel8, graphNodeId) == GRAPH_NODE_OFFSET &&
                   offsetof(CUpti_ActivityKernel9, graphNodeId) == GRAPH_NODE_OFFSET &&
                   offsetof(CUpti_ActivityKernel10, graphNodeId) == GRAPH_NODE_OFFSET,
               "graphNodeId too (see the top)");

/* --- ops ---------------------------------------------------------------------------------- */

static int rehash(struct cg_agg *a)
{
    size_t n = a->n_slots * 2;
    struct cg_agg_slot *s = malloc(n * sizeof(*s));
    if (s == NULL)
        return -1;
    for (size_t i = 0; i < n; i++)
        s[i] = (struct cg_agg_slot){.kind = SLOT_EMPTY};
    for (size_t i = 0; i < a->n_slots; i++) {
        const struct cg_agg_slot *old = &a->slots[i];
        if (old->name == NULL)
            continue;
        size_t j = slot_of(old->name, old->kind, n);
        while (s[j].name != NULL)
            j = (j + 1) & (n - 1);
        s[j] = *old;
    }
    free(a->slots);
    a->slots = s;
    a->n_slots = n;
    return 0;
}

/* The slot of (name, kind), created when new; NULL when out of memory. */
COLD_SHARED struct cg_agg_slot *agg_slot_get(struct cg_agg *a, const char *name, uint32_t kind)
{
    struct cg_agg_slot *found = slot_find(a, name, kind);
    if (found->name != NULL)
        return found;
    size_t j = (size_t)(found - a->slots);
    if ((a->n_ops + 1) * 2 > a->n_slots) {
        if (rehash(a) != 0)
            return NULL;
        return agg_slot_get(a, name, kind);
    }
    if (a->n_ops == a->cap_ops) {
        size_t cap = a->cap_ops ? a->cap_ops * 2 : 256;
        struct cg_agg_op *p = realloc(a->ops, cap * sizeof(*p));
        if (p == NULL)
            return NULL;
        a->ops = p;
        a->cap_ops = cap;
    }
    a->ops[a->n_ops] = (struct cg_agg_op){name, (enum cg_agg_kind)kind, 0, 0, 0, 0};
    uint32_t comm = kind == CG_AGG_KERNEL && cg_agg_is_comm(name) ? SLOT_COMM : 0;
    a->slots[j] = (struct cg_agg_slot){.name = name, .kind = kind | comm, .op = (uint32_t)a->n_ops};
    a->n_ops++;
    return &a->slots[j];
}

/* 1 when a kernel of graph id ran its anchor node (one launch of the graph), else 0; the first
 * record of a graph names its anchor. A graph that finds no slot counts no launch. */
int agg_graph_launch(struct cg_agg *a, uint32_t id, uint64_t node)
{
    for (size_t i = id & (CG_AGG_GRAPHS - 1), n = 0; n < CG_AGG_GRAPHS;
         i = (i + 1) & (CG_AGG_GRAPHS - 1), n++) {
        struct cg_agg_graph *g = &a->graphs[i];
        if (g->id == id)
            return g->anchor == node;
        if (g->id != 0)
            continue;
        if (a->n_graphs >= CG_AGG_GRAPHS / 4 * 3)
            break;
        *g = (struct cg_agg_graph){id, node};
        a->n_graphs++;
        return 1;
    }
    a->graphs_full = true;
    return 0;
}

/* The ring's length and last interval, for the hot path to keep in registers, and the index (at
 * most n) before which every record from i on finds room in the ring for a new interval. A full
 * ring sends every record to agg_union_add_slow (its last interval's start reads as UINT64_MAX),
 * which settles the earlier half when a new interval needs room, as the general path does. */
struct tail {
    size_t held, at, stop;
    uint64_t start, end;
};

HOT struct tail tail_of(const struct cg_agg_union *u, size_t i, size_t n)
{
    struct tail t = {u->len, (u->head + u->len - 1) & RING_MASK, n, UINT64_MAX, 0};
    if (t.held > 0) {
        t.start = u->ring[t.at].start;
        t.end = u->ring[t.at].end;
    }
    if (t.held == CG_AGG_INTERVALS)
        t.start = UINT64_MAX;
    else if (n - i > CG_AGG_INTERVALS - t.held)
        t.stop = i + (CG_AGG_INTERVALS - t.held);
    return t;
}

/* The hot path: from recs[i], the run of concurrent kernels that start in the window step (busy
 * time, ops when the step counts, and its counts, added once at the end of the run), with the
 * records of other kinds among them handed to the general path on the way; returns the index of
 * the first kernel it did not take (the first communication kernel, when the step counts: the
 * general path tells it apart). With comm (communication seen, the step counted) a kernel's slot
 * says whether it is communication, and a compute kernel is added to compute's union as well.
 * counted, graph_ids and comm are constants in each copy window_run makes of it.
 * union_add's in-order cases are done here without a branch on which one (kernels of
 * overlapping streams alternate between them unpredictably): the ring's last interval is kept in
 * registers and stored back whole every record, and a run stops where the ring could fill (a full
 * ring sends records to agg_union_add_slow: see tail_of), so no record tests for a full ring. The
 * op table is held in registers too, reloaded after anything that may have grown it. */
HOT size_t window_loop(struct cg_agg *a, struct cg_agg_lane *lane,
                       const CUpti_Activity *const *recs, size_t i, size_t n, const bool counted,
                       const bool graph_ids, const bool comm)
{
    const uint64_t lo = a->win_lo, len = a->win_len;
    const uint32_t device = lane->device;
    const int64_t step = a->hint;
    const size_t from = i;
    size_t others = 0; /* records of other kinds handed on: the rest of [from, i) is taken */
    int64_t graph_kernels = 0, graph_launches = 0;
    struct cg_agg_union *u = &lane->busy;
    struct tail t = tail_of(u, i, n);
    struct cg_agg_slot *slots = a->slots;
    size_t mask = a->n_slots - 1;
    for (;;) {
        for (; i < t.stop; i++) {
            const CUpti_Activity *rec = recs[i];
            const char *ahead =
                (const char *)rec + READ_AHEAD_RECORDS * sizeof(CUpti_ActivityKernel10);
            __builtin_prefetch(ahead);
            __builtin_prefetch(ahead + offsetof(CUpti_ActivityKernel10, name));
            if (graph_ids)
                __builtin_prefetch(ahead + GRAPH_ID_OFFSET);
            if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
                /* another kind: the general path, and the run goes on (the general path may
                 * move the window to another step, but lo, len, step and counted still describe
                 * the step this run's kernels lie in, which nothing here changes) unless it found
                 * the first communication kernel */
                u->len = t.held;
                agg_record_general(a, rec);
                t = tail_of(u, i + 1, n);
                slots = a->slots;
                mask = a->n_slots - 1;
                others++;
                if (!comm && lane->comm) {
                    i++;
                    goto out;
                }
                continue;
            }
            const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)(const void *)rec;
            uint64_t start = k->start, end = k->end;
            /* of no duration: no interval; of another device: its lane */
            if (start - lo >= len || end <= start || k->deviceId != device)
                goto out;
            struct cg_agg_slot *sl = NULL;
            if (counted) { /* op_count, with the table in registers */
                const char *name = k->name;
                sl = &slots[slot_hash(name, CG_AGG_KERNEL) & mask];
                /* with communication seen, a communication kernel's slot is a hit too */
                if (sl->name != name || (sl->kind & (comm ? ~SLOT_COMM : ~0u)) != CG_AGG_KERNEL) {
                    sl = agg_slot_get(a, name != NULL ? name : "?", CG_AGG_KERNEL);
                    slots = a->slots;
                    mask = a->n_slots - 1;
                    if (sl == NULL || (!comm && (sl->kind & SLOT_COMM)))
                        goto out; /* the first communication kernel, or no slot to tell */
                }
            }
            /* taken: a graph's kernel, and maybe its graph's launch (not before a communication
             * kernel has left for the general path, which counts it) */
            if (graph_ids && k->graphId != 0) {
                graph_kernels++;
                graph_launches += agg_graph_launch(a, k->graphId, k->graphNodeId);
            }
            if (start < t.start) { /* before the last interval, or none held */
                u->len = t.held;
                agg_union_add_slow(a, u, start, end);
                t = tail_of(u, i + 1, n);
            } else { /* extends the last interval, or follows it (then end > t.end too) */
                bool follows = start > t.end;
                t.at = (t.at + follows) & RING_MASK;
                t.held += follows;
                t.start = follows ? start : t.start;
                t.end = end > t.end ? end : t.end;
                u->ring[t.at] = (struct cg_agg_interval){t.start, t.end};
            }
            if (comm && !(sl->kind & SLOT_COMM)) /* compute: its own union too */
                union_add(a, &lane->compute, start, end);
            if (counted) {
                sl->calls++;
                sl->total_ns += (int64_t)(end - start);
            }
        }
        if (i >= n)
            break;
        u->len = t.held;
        t = tail_of(u, i, n); /* room for more, or the ring is full: see tail_of */
    }
out:
    u->len = t.held;
    int64_t taken = (int64_t)(i - from - others);
    if (taken > 0) {
        int64_t *c = a->steps[step].count;
        a->inside_steps += taken;
        c[CG_AGG_N_KERNELS] += taken;
        c[CG_AGG_N_GRAPH_KERNELS] += graph_kernels;
        c[CG_AGG_N_GRAPH_LAUNCHES] += graph_launches;
    }
    return i;
}

/* The hot path from recs[i], in the lane of its device when it is a kernel (else the last one
 * the hot path took); a device with no lane of its own yet, or sharing the last one, takes the
 * general path. */
static size_t window_run(struct cg_agg *a, const CUpti_Activity *const *recs, size_t i, size_t n)
{
    if (a->win_len == 0)
        return i;
    struct cg_agg_lane *l = a->lane;
    if (recs[i]->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
        uint32_t dev = ((const CUpti_ActivityKernel10 *)(const void *)recs[i])->deviceId;
        if (l == NULL || l->device != dev)
            l = a->lane = lane_find(a, dev);
    }
    if (l == NULL)
        return i;
    if (l->comm) { /* compute time apart: kernels tell it by their op's slot */
        if (!a->win_counted)
            return i; /* no slot is probed in a step not counted: the general path */
        return a->graph_ids ? window_loop(a, l, recs, i, n, true, true, true)
                            : window_loop(a, l, recs, i, n, true, false, true);
    }
    if (a->win_counted)
        return a->graph_ids ? window_loop(a, l, recs, i, n, true, true, false)
                            : window_loop(a, l, recs, i, n, true, false, false);
    return a->graph_ids ? window_loop(a, l, recs, i, n, false, true, false)
                        : window_loop(a, l, recs, i, n, false, false, false);
}

void cg_agg_records(struct cg_agg *a, const CUpti_Activity *const *recs, size_t n)
{
    a->records += (int64_t)n;

    for (size_t i = 0; i < n;) {
        i = window_run(a, recs, i, n);
        if (i < n)
            agg_record_general(a, recs[i++]);
    }
}

void cg_agg_record(struct cg_agg *a, const CUpti_Activity *rec)
{
    cg_agg_records(a, &rec, 1);
}
