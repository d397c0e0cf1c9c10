/*
 * aggregate: streaming reduction of CUPTI activity records (see aggregate.h for the rules).
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
 * Kernel records: DESIGN.md's rule is to read only the leading fields (start, end, deviceId,
 * contextId, streamId, correlationId, name), whose offsets every version shares, so that a newer
 * libcupti keeps working. graphId and graphNodeId are read too, and only from kernel records
 * (kinds KERNEL and CONCURRENT_KERNEL), for CG_AGG_N_GRAPH_KERNELS and _LAUNCHES: they came with
 * CUpti_ActivityKernel5 (CUDA 11.0) and sit at the same offsets in every kernel record since (5
 * to 10, pinned below at build time),
 * as CUPTI only appends fields to a record's next version; every kernel record a libcupti of
 * CUDA 11 or later delivers is at least CUpti_ActivityKernel5's size, so the read stays inside
 * the record. Beyond that the caller decides (cg_agg_graph_ids): inject/cupti.c turns it off,
 * and leaves graph_kernels out of what it measures, unless the loaded libcupti reports the API
 * major version these headers are (cuptiGetVersion).
 */
#include "aggregate.h"

#include "escape.h"
#include "shard_format.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RING_MASK (CG_AGG_INTERVALS - 1)
_Static_assert((CG_AGG_SETTLED & (CG_AGG_SETTLED - 1)) == 0 && CG_AGG_SETTLED >= CG_AGG_INTERVALS,
               "the kept kernel intervals: a power of two, a ring's worth at least");
#define HOT static inline __attribute__((always_inline))
#define COLD static __attribute__((noinline, cold))
/* Reading ahead: the lines of the record about this many kernel records further on (records
 * lie back to back in a CUPTI buffer; a guess that misses only costs a useless prefetch). */
#define READ_AHEAD_RECORDS 16
#define SLOT_EMPTY UINT32_MAX
/* In a slot's kind: the kernel is communication (cg_agg_is_comm). The hot path's probe compares
 * the kind whole, so such a kernel misses it and takes the cold path that tells it apart. */
#define SLOT_COMM 0x100u

static void window_refresh(struct cg_agg *a);
static void record_general(struct cg_agg *a, const CUpti_Activity *rec);

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

int cg_agg_new(struct cg_agg *a, int64_t warmup)
{
    memset(a, 0, sizeof(*a));
    a->warmup = warmup;
    a->end_step = INT64_MAX;
    a->now_ns = UINT64_MAX;
    a->last_step = -1;
    a->win_lo = UINT64_MAX;
    a->win_next = UINT64_MAX;
    a->graph_ids = true;
    a->pending_sorted = true;
    a->trace_first = a->trace_last = -1;
    a->touched_from = SIZE_MAX;
    a->n_slots = 512;
    a->slots = malloc(a->n_slots * sizeof(*a->slots));
    a->pending = malloc(CG_AGG_MEM_PENDING * sizeof(*a->pending));
    if (a->slots == NULL || a->pending == NULL) {
        cg_agg_release(a);
        return -1;
    }
    for (size_t i = 0; i < a->n_slots; i++)
        a->slots[i] = (struct cg_agg_slot){.kind = SLOT_EMPTY};
    return 0;
}

void cg_agg_release(struct cg_agg *a)
{
    for (size_t d = 0; d < a->n_lanes; d++) {
        free(a->lanes[d]->times);
        free(a->lanes[d]);
    }
    free(a->steps);
    free(a->ops);
    free(a->slots);
    free(a->pending);
    free(a->trace);
    memset(a, 0, sizeof(*a));
}

void cg_agg_measure(struct cg_agg *a, int64_t end_step)
{
    a->end_step = end_step;
    window_refresh(a); /* the window step may lie past the end */
}

void cg_agg_now(struct cg_agg *a, uint64_t now_ns)
{
    a->now_ns = now_ns;
    window_refresh(a);
}

void cg_agg_graph_ids(struct cg_agg *a, bool read)
{
    a->graph_ids = read;
}

const char *cg_agg_count_name(enum cg_agg_count c)
{
    static const char *const names[CG_AGG_COUNTS] = {
        [CG_AGG_N_KERNELS] = CG_SHARD_COUNT_KERNELS,
        [CG_AGG_N_GRAPH_KERNELS] = CG_SHARD_COUNT_GRAPH_KERNELS,
        [CG_AGG_N_GRAPH_LAUNCHES] = CG_SHARD_COUNT_GRAPH_LAUNCHES,
        [CG_AGG_N_SYNC_STREAM] = CG_SHARD_COUNT_SYNC_STREAM,
        [CG_AGG_N_SYNC_EVENT] = CG_SHARD_COUNT_SYNC_EVENT,
        [CG_AGG_N_SYNC_CONTEXT] = CG_SHARD_COUNT_SYNC_CONTEXT,
        [CG_AGG_N_SYNC_WAIT] = CG_SHARD_COUNT_SYNC_WAIT,
        [CG_AGG_N_SYNC_NS] = CG_SHARD_COUNT_SYNC_NS,
        [CG_AGG_N_COPIES] = CG_SHARD_COUNT_COPIES,
        [CG_AGG_N_DTOH_PAGEABLE] = CG_SHARD_COUNT_DTOH_PAGEABLE,
        [CG_AGG_N_DTOH_PAGEABLE_BYTES] = CG_SHARD_COUNT_DTOH_PAGEABLE_BYTES,
        [CG_AGG_N_ALLOCS] = CG_SHARD_COUNT_ALLOCS,
        [CG_AGG_N_FREES] = CG_SHARD_COUNT_FREES,
        [CG_AGG_N_JIT] = CG_SHARD_COUNT_JIT,
        [CG_AGG_N_MODULE_LOADS] = CG_SHARD_COUNT_MODULE_LOADS,
        [CG_AGG_N_COMPUTE_NS] = CG_SHARD_COUNT_COMPUTE_NS,
        [CG_AGG_N_COPY_NS] = CG_SHARD_COUNT_COPY_NS,
        [CG_AGG_N_COPY_HIDDEN_NS] = CG_SHARD_COUNT_COPY_HIDDEN_NS,
    };
    return (unsigned)c < CG_AGG_COUNTS ? names[c] : "?";
}

/* True for the steps whose ops count. */
static bool counted_step(const struct cg_agg *a, int64_t k)
{
    return k >= a->warmup && k < a->end_step;
}

int cg_agg_trace(struct cg_agg *a, int64_t first, int64_t last, size_t max_events)
{
    if (first < 0 || last < first || max_events == 0)
        return -1;
    a->max_trace = max_events;
    a->n_trace = 0;
    a->trace_first = first;
    a->trace_last = last;
    window_refresh(a); /* the window step may be a traced one */
    return 0;
}

static bool traced_step(const struct cg_agg *a, int64_t k)
{
    return a->trace_first >= 0 && k >= a->trace_first && k <= a->trace_last;
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

size_t cg_agg_trace_format(const struct cg_agg_trace_event *e, char *out, size_t cap)
{
    static const char *const kinds[] = {CG_SHARD_KIND_KERNEL, CG_SHARD_KIND_MEMCPY,
                                        CG_SHARD_KIND_MEMSET};
    int n;
    if (e->kind == CG_AGG_MEMORY)
        n = snprintf(out, cap, CG_SHARD_KEY_TRACE_MEM " %u %llu %lld\n", e->device,
                     (unsigned long long)e->start, (long long)e->bytes);
    else
        n = snprintf(out, cap, CG_SHARD_KEY_TRACE_GPU " %s %u %u %llu %llu %lld ", kinds[e->kind],
                     e->device, e->stream, (unsigned long long)e->start, (unsigned long long)e->end,
                     (long long)e->bytes);
    if (n < 0 || (size_t)n >= cap)
        return 0;
    size_t k = (size_t)n;
    if (e->kind == CG_AGG_MEMORY)
        return k;
    size_t from = 0;
    if (cap - k < CG_NAME_ESCAPED_MAX + 1)
        return 0;
    k += cg_escape_name(e->name, &from, out + k, cap - k - 1); /* room for all of it */
    out[k++] = '\n';
    return k;
}

/* --- lanes: each device's GPU time ------------------------------------------------------- */

/* Grows l's times from have to cap steps, the new ones 0; 0 or -1 (no memory, l unchanged). */
static int lane_reserve(struct cg_agg_lane *l, size_t have, size_t cap)
{
    if (cap <= have)
        return 0;
    struct cg_agg_times *t = realloc(l->times, cap * sizeof(*t));
    if (t == NULL)
        return -1;
    memset(t + have, 0, (cap - have) * sizeof(*t));
    l->times = t;
    return 0;
}

/* The lane of device dev, or NULL. */
static struct cg_agg_lane *lane_find(const struct cg_agg *a, uint32_t dev)
{
    for (size_t d = 0; d < a->n_lanes; d++)
        if (a->lanes[d]->device == dev)
            return a->lanes[d];
    return NULL;
}

/* The lane of device dev, made at its first record; past CG_AGG_LANES devices (or out of memory)
 * the last lane made, NULL when there is none. */
COLD struct cg_agg_lane *lane_make(struct cg_agg *a, uint32_t dev)
{
    struct cg_agg_lane *l = a->n_lanes < CG_AGG_LANES ? malloc(sizeof(*l)) : NULL;
    if (l != NULL) {
        memset(l, 0, sizeof(*l));
        if (lane_reserve(l, 0, a->cap_steps ? a->cap_steps : 1) != 0) {
            free(l);
            l = NULL;
        }
    }
    if (l == NULL)
        return a->n_lanes > 0 ? a->lanes[a->n_lanes - 1] : NULL;
    l->device = dev;
    l->busy.lane = l->compute.lane = l->copies.lane = l;
    l->busy.field = offsetof(struct cg_agg_times, busy_ns);
    l->compute.field = offsetof(struct cg_agg_times, compute_ns);
    l->copies.field = offsetof(struct cg_agg_times, copy_ns);
    a->lanes[a->n_lanes++] = l;
    return l;
}

static inline struct cg_agg_lane *lane_of(struct cg_agg *a, uint32_t dev)
{
    struct cg_agg_lane *l = lane_find(a, dev);
    return l != NULL ? l : lane_make(a, dev);
}

/* Chooses the lane of every step that closed (aggregate.h, "The step's figures": the one with the
 * most busy time, then the most copy time, then the first made) and copies its times into the
 * step's: from the first step without a lane, or the first a lane's time was credited to since,
 * so that a long run does not go over all its steps at every settle. */
static void steps_publish(struct cg_agg *a, bool final)
{
    uint64_t safe = a->last_step >= 0 ? a->steps[a->last_step].start_ns : 0;
    size_t k = a->touched_from < a->publish_from ? a->touched_from : a->publish_from;
    size_t unchosen = SIZE_MAX;
    for (; k < a->n_steps && a->n_lanes > 0; k++) {
        struct cg_agg_step *s = &a->steps[k];
        if (s->lane < 0) {
            if (s->start_ns == UINT64_MAX ||
                (!final && ((int64_t)k + 2 > a->last_step || s->end_ns > safe))) {
                if (s->start_ns != UINT64_MAX && unchosen == SIZE_MAX)
                    unchosen = k;
                continue; /* it may still change */
            }
            const struct cg_agg_times *best = &a->lanes[0]->times[k];
            s->lane = 0;
            for (size_t d = 1; d < a->n_lanes; d++) {
                const struct cg_agg_times *t = &a->lanes[d]->times[k];
                if (t->busy_ns > best->busy_ns ||
                    (t->busy_ns == best->busy_ns && t->copy_ns > best->copy_ns)) {
                    best = t;
                    s->lane = (int32_t)d;
                }
            }
        }
        const struct cg_agg_times *t = &a->lanes[s->lane]->times[k];
        s->busy_ns = t->busy_ns;
        s->count[CG_AGG_N_COMPUTE_NS] = t->compute_ns;
        s->count[CG_AGG_N_COPY_NS] = t->copy_ns;
        s->count[CG_AGG_N_COPY_HIDDEN_NS] = t->copy_hidden_ns;
    }
    if (a->n_lanes > 0) {
        a->publish_from = unchosen != SIZE_MAX ? unchosen : a->n_steps;
        a->touched_from = SIZE_MAX;
    }
}

/* --- steps -------------------------------------------------------------------------------- */

/* The end of step s as records see it: a step still running ends at the delivery horizon. */
static uint64_t step_until(const struct cg_agg *a, const struct cg_agg_step *s)
{
    return s->end_ns == UINT64_MAX ? a->now_ns : s->end_ns;
}

/* Copies the hint step into the hot path's window (see struct cg_agg). */
static void window_refresh(struct cg_agg *a)
{
    a->win_lo = UINT64_MAX;
    a->win_len = 0;
    a->win_next = UINT64_MAX;
    a->win_counted = false;
    if (a->last_step < 0 || a->hint > a->last_step || traced_step(a, a->hint))
        return;
    const struct cg_agg_step *s = &a->steps[a->hint];
    if (s->start_ns == UINT64_MAX)
        return;
    /* a zero start is never a record's (those are zero-timestamp records) */
    a->win_lo = s->start_ns > 0 ? s->start_ns : 1;
    uint64_t end = step_until(a, s);
    if (end < a->win_lo)
        return;
    a->win_len = end - a->win_lo + (end < UINT64_MAX ? 1 : 0);
    for (int64_t k = a->hint + 1; k <= a->last_step; k++)
        if (a->steps[k].start_ns != UINT64_MAX) {
            a->win_next = a->steps[k].start_ns;
            break;
        }
    a->win_counted = counted_step(a, a->hint);
}

int cg_agg_step_begin(struct cg_agg *a, int64_t index, uint64_t start_ns)
{
    if (index < 0 || index > 100000000)
        return -1;
    size_t need = (size_t)index + 1;
    if (need > a->cap_steps) {
        size_t cap = a->cap_steps ? a->cap_steps : 64;
        while (cap < need)
            cap *= 2;
        for (size_t d = 0; d < a->n_lanes; d++)
            if (lane_reserve(a->lanes[d], a->cap_steps, cap) != 0)
                return -1;
        struct cg_agg_step *p = realloc(a->steps, cap * sizeof(*p));
        if (p == NULL)
            return -1;
        a->steps = p;
        a->cap_steps = cap;
    }
    for (size_t i = a->n_steps; i < need; i++)
        a->steps[i] = (struct cg_agg_step){.start_ns = UINT64_MAX, .end_ns = UINT64_MAX, .lane = -1};
    if (need > a->n_steps)
        a->n_steps = need;
    a->steps[index].start_ns = start_ns;
    a->steps[index].end_ns = UINT64_MAX;
    if (index > a->last_step)
        a->last_step = index;
    window_refresh(a);
    return 0;
}

void cg_agg_step_end(struct cg_agg *a, int64_t index, uint64_t end_ns)
{
    if (index >= 0 && (size_t)index < a->n_steps) {
        a->steps[index].end_ns = end_ns;
        window_refresh(a);
    }
}

/* The step whose interval holds t, or -1. Steps begin in index order, so starts are sorted
 * (a step that never began has start UINT64_MAX and is skipped by the search). The step found
 * becomes the hint when move_hint is set (records; not when settling older intervals). */
static int64_t step_at(struct cg_agg *a, uint64_t t, bool move_hint)
{
    int64_t last = a->last_step;
    if (last < 0)
        return -1;
    const struct cg_agg_step *s = &a->steps[a->hint];
    if (a->hint <= last && s->start_ns <= t && t <= step_until(a, s))
        return a->hint; /* records come in bursts from one step */
    int64_t found = -1;
    s = &a->steps[last];
    if (t >= s->start_ns) {
        found = t <= step_until(a, s) ? last : -1;
    } else {
        int64_t lo = 0, hi = last; /* find the last step with start <= t */
        while (lo < hi) {
            int64_t mid = lo + (hi - lo + 1) / 2;
            if (a->steps[mid].start_ns <= t && a->steps[mid].start_ns != UINT64_MAX)
                lo = mid;
            else
                hi = mid - 1;
        }
        s = &a->steps[lo];
        if (s->start_ns <= t && t <= step_until(a, s))
            found = lo;
    }
    if (found >= 0 && move_hint && a->hint != found) {
        a->hint = found;
        window_refresh(a);
    }
    return found;
}

/* --- interval unions ---------------------------------------------------------------------- */

#define FIELD_NONE SIZE_MAX

/* Adds v to its lane's time of u in step k: its own, and the one busy time shares with compute
 * time until a communication kernel is seen on the lane. */
static inline void union_credit(struct cg_agg *a, const struct cg_agg_union *u, int64_t k,
                                int64_t v)
{
    if ((size_t)k < a->touched_from)
        a->touched_from = (size_t)k;
    struct cg_agg_lane *l = u->lane;
    char *t = (char *)&l->times[k];
    *(int64_t *)(void *)(t + u->field) += v;
    if (u == &l->busy && !l->comm)
        l->times[k].compute_ns += v;
}

/* Adds v to step k's time of u, or (u NULL) to the copies' hidden time of lane hidden. */
static inline void step_credit(struct cg_agg *a, const struct cg_agg_union *u,
                               struct cg_agg_lane *hidden, int64_t k, int64_t v)
{
    if (u != NULL) {
        union_credit(a, u, k, v);
    } else {
        hidden->times[k].copy_hidden_ns += v;
        if ((size_t)k < a->touched_from)
            a->touched_from = (size_t)k;
    }
}

/* Adds the parts of [start, end) that lie in step intervals to those steps' time of u, or (u
 * NULL) to the copies' hidden time of lane hidden. */
static void steps_credit(struct cg_agg *a, const struct cg_agg_union *u,
                         struct cg_agg_lane *hidden, uint64_t start, uint64_t end)
{
    /* inside the window and before the next step: all of it is the window step's */
    if (start - a->win_lo < a->win_len && end - a->win_lo < a->win_len && end <= a->win_next) {
        step_credit(a, u, hidden, a->hint, (int64_t)(end - start));
        return;
    }
    int64_t k = step_at(a, start, false);
    if (k < 0) {
        /* the interval begins between steps: the first step starting after it */
        int64_t lo = 0, hi = a->last_step + 1;
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (a->steps[mid].start_ns < start)
                lo = mid + 1;
            else
                hi = mid;
        }
        k = lo;
    }
    for (; k >= 0 && k <= a->last_step; k++) {
        const struct cg_agg_step *s = &a->steps[k];
        if (s->start_ns == UINT64_MAX)
            continue;
        if (s->start_ns >= end)
            break;
        uint64_t lo = start > s->start_ns ? start : s->start_ns;
        uint64_t hi = end < s->end_ns ? end : s->end_ns;
        if (hi > lo)
            step_credit(a, u, hidden, k, (int64_t)(hi - lo));
    }
}

/* Settles [start, end) of u into the steps it overlaps. */
static void settle_interval(struct cg_agg *a, struct cg_agg_union *u, uint64_t start, uint64_t end)
{
    steps_credit(a, u, NULL, start, end);
    if (end > u->frontier)
        u->frontier = end;
}

static void union_settle(struct cg_agg *a, struct cg_agg_union *u, uint64_t upto, bool final);

/* --- the copies' time some kernel ran in ---------------------------------------------------
 * Each pair of a copy interval and a kernel interval is credited once, when the later of the two
 * settles: a union's settled intervals are kept (struct cg_agg_settled) until the other union's
 * later intervals can no longer reach them; one that must give way to a newer one first credits
 * its overlap with the other union's intervals not yet settled (which will not find it). */

/* Intervals [head, head + len) of iv, indices masked: sorted and disjoint. */
struct span {
    const struct cg_agg_interval *iv;
    size_t head, len, mask;
};

static struct span kept_span(const struct cg_agg_settled *h)
{
    return (struct span){h->iv, h->head, h->len, CG_AGG_SETTLED - 1};
}

static struct span held_span(const struct cg_agg_union *u)
{
    return (struct span){u->ring, u->head, u->len, RING_MASK};
}

static struct cg_agg_interval span_at(struct span s, size_t i)
{
    return s.iv[(s.head + i) & s.mask];
}

/* The index of the first interval of s from i on that ends after t (s.len: none): strides that
 * double from i, then a binary search in the last one, so that skipping d intervals costs about
 * 2 log d reads. */
static size_t span_skip(struct span s, size_t i, uint64_t t)
{
    size_t hi = i, stride = 1;
    while (hi < s.len && span_at(s, hi).end <= t) { /* every interval up to hi ends by t */
        i = hi + 1;
        hi = i + stride;
        stride *= 2;
    }
    if (hi > s.len)
        hi = s.len;
    while (i < hi) { /* the answer lies in [i, hi]: hi's interval, if any, ends after t */
        size_t mid = i + (hi - i) / 2;
        if (span_at(s, mid).end <= t)
            i = mid + 1;
        else
            hi = mid;
    }
    return i;
}

/* Credits the overlap of mine's intervals with s's to lane l's copies' hidden time of the steps
 * it lies in: both sorted and disjoint, so one pass, the side that ends first stepping on, and a
 * run of one side's intervals that lie before the other's next one skipped at once (a few copies
 * among hundreds of kernel intervals, or the other way round). */
static void overlap_credit(struct cg_agg *a, struct cg_agg_lane *l, struct span mine,
                           struct span s)
{
    size_t i = 0, j = 0;
    while (i < mine.len && j < s.len) {
        struct cg_agg_interval x = span_at(mine, i), y = span_at(s, j);
        if (x.end <= y.start) {
            i = span_skip(mine, i + 1, y.start);
        } else if (y.end <= x.start) {
            j = span_skip(s, j + 1, x.start);
        } else {
            steps_credit(a, NULL, l, x.start > y.start ? x.start : y.start,
                         x.end < y.end ? x.end : y.end);
            if (x.end <= y.end)
                i++;
            else
                j++;
        }
    }
}

/* Intervals [from, from + n) of u's ring have settled (u: busy or copies): their overlap with
 * the other union's kept intervals is credited (those that ended before them are let go: u's
 * later intervals start later still), and they are kept in turn, the oldest kept giving way
 * when full after crediting their overlap with the other union's held intervals. */
static void ring_settled(struct cg_agg *a, const struct cg_agg_union *u, size_t from, size_t n)
{
    struct cg_agg_lane *l = u->lane;
    bool kernels = u == &l->busy;
    if (!kernels && u != &l->copies)
        return;
    struct cg_agg_settled *mine = kernels ? &l->kept_kernels : &l->kept_copies;
    struct cg_agg_settled *theirs = kernels ? &l->kept_copies : &l->kept_kernels;
    const struct cg_agg_union *other = kernels ? &l->copies : &l->busy;
    struct span block = {u->ring, from, n, RING_MASK};
    if (theirs->len > 0) {
        size_t gone = span_skip(kept_span(theirs), 0, u->ring[from & RING_MASK].start);
        theirs->head = (theirs->head + gone) & (CG_AGG_SETTLED - 1);
        theirs->len -= gone;
        overlap_credit(a, l, block, kept_span(theirs));
    }
    size_t over = mine->len + n > CG_AGG_SETTLED ? mine->len + n - CG_AGG_SETTLED : 0;
    if (over > 0 && other->len > 0) {
        struct span old = kept_span(mine), held = held_span(other);
        old.len = over;
        size_t skip = span_skip(old, 0, held.iv[held.head].start); /* they end before it */
        old.head = (old.head + skip) & old.mask;
        old.len -= skip;
        overlap_credit(a, l, old, held);
    }
    mine->head = (mine->head + over) & (CG_AGG_SETTLED - 1);
    mine->len -= over;
    const size_t mask = CG_AGG_SETTLED - 1;
    while (n > 0) { /* block copies, both rings wrapping */
        size_t src = from & RING_MASK, dst = (mine->head + mine->len) & mask;
        size_t run = n;
        if (run > CG_AGG_INTERVALS - src)
            run = CG_AGG_INTERVALS - src;
        if (run > CG_AGG_SETTLED - dst)
            run = CG_AGG_SETTLED - dst;
        memcpy(&mine->iv[dst], &u->ring[src], run * sizeof(*u->ring));
        mine->len += run;
        from += run;
        n -= run;
    }
    /* the copies the kernels' frontier has passed settle now: few are held, and the kept kernels
     * they could reach are let go sooner */
    const struct cg_agg_union *c = &l->copies;
    if (kernels && c->len > 0 && c->ring[c->head].end <= l->busy.frontier)
        union_settle(a, &l->copies, l->busy.frontier, false);
}

static struct cg_agg_interval *ring_at(struct cg_agg_union *u, size_t i)
{
    return &u->ring[(u->head + i) & RING_MASK];
}

/* The total length of ring[from, to) (no wrap). */
static int64_t ring_length(const struct cg_agg_union *u, size_t from, size_t to)
{
    uint64_t sum = 0;
    for (size_t i = from; i < to; i++)
        sum += u->ring[i].end - u->ring[i].start;
    return (int64_t)sum;
}

/* A full ring settles its earlier half at once (so the full-ring check is rarely taken). The
 * intervals inside the window step are summed in one pass, as union_settle would one by one;
 * when the whole half lies in it (the usual case: its intervals are sorted and disjoint, so its
 * first and last tell), without a test per interval. */
static void ring_settle_half(struct cg_agg *a, struct cg_agg_union *u)
{
    const uint64_t lo = a->win_lo, len = a->win_len, next = a->win_next;
    int64_t in_window = 0;
    uint64_t frontier = u->frontier;
    size_t head = u->head;
    const struct cg_agg_interval *first = &u->ring[head];
    const struct cg_agg_interval *last = &u->ring[(head + CG_AGG_INTERVALS / 2 - 1) & RING_MASK];
    if (first->start - lo < len && last->end - lo < len && last->end <= next) {
        size_t end = head + CG_AGG_INTERVALS / 2;
        in_window = end <= CG_AGG_INTERVALS ? ring_length(u, head, end)
                                            : ring_length(u, head, CG_AGG_INTERVALS) +
                                                  ring_length(u, 0, end - CG_AGG_INTERVALS);
        if (last->end > frontier)
            frontier = last->end;
        head = end & RING_MASK;
    }
    for (size_t i = head == u->head ? 0 : CG_AGG_INTERVALS / 2; i < CG_AGG_INTERVALS / 2; i++) {
        struct cg_agg_interval f = u->ring[head];
        head = (head + 1) & RING_MASK;
        if (f.start - lo < len && f.end - lo < len && f.end <= next) {
            in_window += (int64_t)(f.end - f.start);
            frontier = f.end > frontier ? f.end : frontier;
        } else {
            u->frontier = frontier;
            settle_interval(a, u, f.start, f.end); /* leaves the hint and the window alone */
            frontier = u->frontier;
        }
    }
    size_t from = u->head;
    u->head = head;
    u->len -= CG_AGG_INTERVALS / 2;
    u->frontier = frontier;
    if (in_window > 0)
        union_credit(a, u, a->hint, in_window);
    ring_settled(a, u, from, CG_AGG_INTERVALS / 2);
}

static void ring_remove(struct cg_agg_union *u, size_t i)
{
    for (size_t j = i; j + 1 < u->len; j++)
        *ring_at(u, j) = *ring_at(u, j + 1);
    u->len--;
}

/* The general case of union_add: clipping at the settled frontier, records out of time order. */
COLD void union_add_slow(struct cg_agg *a, struct cg_agg_union *u, uint64_t start, uint64_t end)
{
    if (start < u->frontier)
        start = u->frontier;
    if (end <= start)
        return;
    size_t n = u->len;
    if (n > 0) {
        struct cg_agg_interval *tail = ring_at(u, n - 1);
        if (start > tail->end) {
            /* after everything held */
        } else if (start >= tail->start) {
            if (end > tail->end)
                tail->end = end;
            return;
        } else {
            /* out of order: find the last interval starting at or before start */
            size_t i = n;
            while (i > 0 && ring_at(u, i - 1)->start > start)
                i--;
            size_t at;
            if (i > 0 && ring_at(u, i - 1)->end >= start) {
                at = i - 1;
                if (end > ring_at(u, at)->end)
                    ring_at(u, at)->end = end;
            } else {
                if (u->len == CG_AGG_INTERVALS) {
                    ring_settle_half(a, u);
                    if (i < CG_AGG_INTERVALS / 2) { /* it belonged among the settled: clip */
                        union_add_slow(a, u, start, end);
                        return;
                    }
                    i -= CG_AGG_INTERVALS / 2;
                }
                for (size_t j = u->len; j > i; j--)
                    *ring_at(u, j) = *ring_at(u, j - 1);
                u->len++;
                *ring_at(u, i) = (struct cg_agg_interval){start, end};
                at = i;
            }
            /* absorb the intervals the grown one now reaches */
            struct cg_agg_interval *cur = ring_at(u, at);
            while (at + 1 < u->len && ring_at(u, at + 1)->start <= cur->end) {
                if (ring_at(u, at + 1)->end > cur->end)
                    cur->end = ring_at(u, at + 1)->end;
                ring_remove(u, at + 1);
            }
            return;
        }
    }
    if (u->len == CG_AGG_INTERVALS)
        ring_settle_half(a, u);
    *ring_at(u, u->len) = (struct cg_agg_interval){start, end};
    u->len++;
}

/* Adds interval [start, end) to the union u. In time order (at or after the last interval's
 * start, the usual case) it extends the last interval or follows it. */
HOT void union_add(struct cg_agg *a, struct cg_agg_union *u, uint64_t start, uint64_t end)
{
    size_t n = u->len;
    if (n > 0 && end > start) { /* the ring's intervals all lie after the settled frontier */
        struct cg_agg_interval *tail = &u->ring[(u->head + n - 1) & RING_MASK];
        if (start >= tail->start) {
            if (start <= tail->end) {
                if (end > tail->end)
                    tail->end = end;
                return;
            }
            if (n < CG_AGG_INTERVALS) {
                u->ring[(u->head + n) & RING_MASK] = (struct cg_agg_interval){start, end};
                u->len = n + 1;
                return;
            }
        }
    }
    union_add_slow(a, u, start, end);
}

/* Settles u's intervals that ended by upto (all when final). */
static void union_settle(struct cg_agg *a, struct cg_agg_union *u, uint64_t upto, bool final)
{
    size_t from = u->head, n = 0;
    for (; n < u->len; n++) {
        struct cg_agg_interval f = u->ring[(from + n) & RING_MASK];
        if (!final && f.end > upto)
            break;
        settle_interval(a, u, f.start, f.end);
    }
    if (n == 0)
        return;
    u->head = (from + n) & RING_MASK;
    u->len -= n;
    ring_settled(a, u, from, n); /* as one block: the overlap's search is done once */
}
/* --- ops ---------------------------------------------------------------------------------- */

static inline size_t slot_hash(const char *name, uint32_t kind)
{
    kind &= ~SLOT_COMM;
    uint64_t h = ((uint64_t)(uintptr_t)name + (uint64_t)kind) * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 32);
}

static inline size_t slot_of(const char *name, uint32_t kind, size_t n_slots)
{
    return slot_hash(name, kind) & (n_slots - 1);
}

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

/* The slot of (name, kind), or the empty slot where it would go (name NULL). */
static struct cg_agg_slot *slot_find(struct cg_agg *a, const char *name, uint32_t kind)
{
    size_t j = slot_of(name, kind, a->n_slots);
    for (;; j = (j + 1) & (a->n_slots - 1)) {
        struct cg_agg_slot *sl = &a->slots[j];
        if ((sl->name == name && (sl->kind & ~SLOT_COMM) == kind) || sl->name == NULL)
            return sl;
    }
}

/* The slot of (name, kind), created when new; NULL when out of memory. */
COLD struct cg_agg_slot *slot_get(struct cg_agg *a, const char *name, uint32_t kind)
{
    struct cg_agg_slot *found = slot_find(a, name, kind);
    if (found->name != NULL)
        return found;
    size_t j = (size_t)(found - a->slots);
    if ((a->n_ops + 1) * 2 > a->n_slots) {
        if (rehash(a) != 0)
            return NULL;
        return slot_get(a, name, kind);
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

/* Adds a call of duration_ns to the op (name, kind); a NULL kernel name is "?". */
HOT void op_count(struct cg_agg *a, const char *name, enum cg_agg_kind kind, uint64_t duration_ns)
{
    struct cg_agg_slot *sl = &a->slots[slot_of(name, (uint32_t)kind, a->n_slots)];
    if (sl->name != name || sl->kind != (uint32_t)kind)
        sl = slot_get(a, name != NULL ? name : "?", (uint32_t)kind);
    if (sl != NULL) {
        sl->calls++;
        sl->total_ns += (int64_t)duration_ns;
    }
}

static void ops_sync(struct cg_agg *a)
{
    for (size_t i = 0; i < a->n_slots; i++) {
        const struct cg_agg_slot *sl = &a->slots[i];
        if (sl->name != NULL) {
            a->ops[sl->op].calls = sl->calls;
            a->ops[sl->op].total_ns = sl->total_ns;
        }
    }
}

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
            continue; /* every entry changed under us */
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

/* 1 when a kernel of graph id ran its anchor node (one launch of the graph), else 0; the first
 * record of a graph names its anchor. A graph that finds no slot counts no launch. */
static int graph_launch(struct cg_agg *a, uint32_t id, uint64_t node)
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

/* Counts a timed record of step k. */
static void timed_count(struct cg_agg *a, const struct timed_rec *r, int64_t k)
{
    int64_t *n = a->steps[k].count;
    if (r->kind == CG_AGG_KERNEL) {
        n[CG_AGG_N_KERNELS]++;
        if (r->graph != 0) {
            n[CG_AGG_N_GRAPH_KERNELS]++;
            n[CG_AGG_N_GRAPH_LAUNCHES] += graph_launch(a, r->graph, r->node);
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
        struct cg_agg_trace_event e = {r->start, r->end, r->name ? r->name : "?", r->bytes,
                                       r->device, r->stream, r->kind};
        trace_add(a, &e);
    }
    if (counted_step(a, k))
        op_count(a, r->name, r->kind, r->end - r->start);
}

#define HOST_NAMES(dir)                                                                         \
    {                                                                                            \
        "memcpy " dir, "memcpy " dir " pageable", "memcpy " dir " pinned",                       \
            "memcpy " dir " device", "memcpy " dir " array", "memcpy " dir " managed",           \
            "memcpy " dir " device", "memcpy " dir " managed"                                    \
    }

const char *cg_agg_memcpy_name(uint8_t copy_kind, uint8_t src_kind, uint8_t dst_kind)
{
    /* by CUpti_ActivityMemoryKind: unknown, pageable, pinned, device, array, managed,
     * device static, managed static */
    static const char *const htod[8] = HOST_NAMES("HtoD"), *const dtoh[8] = HOST_NAMES("DtoH");
    static const char *const htoa[8] = HOST_NAMES("HtoA"), *const atoh[8] = HOST_NAMES("AtoH");
    size_t src = src_kind < 8 ? src_kind : 0, dst = dst_kind < 8 ? dst_kind : 0;
    switch (copy_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return htod[src];
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return dtoh[dst];
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return htoa[src];
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return atoh[dst];
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "memcpy DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "memcpy HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "memcpy PtoP";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return "memcpy array";
    default: return "memcpy other";
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
static void mem_settle(struct cg_agg *a, uint64_t upto)
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
        mem_settle(a, a->pending[CG_AGG_MEM_PENDING / 2].ts);
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
static void record_general(struct cg_agg *a, const CUpti_Activity *rec)
{
    struct timed_rec r;
    switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: {
        /* the leading fields, and graphId (see the top) */
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

/* The ring's length and last interval, for the hot path to keep in registers, and the index (at
 * most n) before which every record from i on finds room in the ring for a new interval. A full
 * ring sends every record to union_add_slow (its last interval's start reads as UINT64_MAX),
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
 * ring sends records to union_add_slow: see tail_of), so no record tests for a full ring. The op
 * table is held in registers too, reloaded after anything that may have grown it. */
HOT size_t window_loop(struct cg_agg *a, struct cg_agg_lane *lane, const CUpti_Activity *const *recs,
                       size_t i, size_t n, const bool counted, const bool graph_ids,
                       const bool comm)
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
                record_general(a, rec);
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
                if (sl->name != name ||
                    (sl->kind & (comm ? ~SLOT_COMM : ~0u)) != CG_AGG_KERNEL) {
                    sl = slot_get(a, name != NULL ? name : "?", CG_AGG_KERNEL);
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
                graph_launches += graph_launch(a, k->graphId, k->graphNodeId);
            }
            if (start < t.start) { /* before the last interval, or none held */
                u->len = t.held;
                union_add_slow(a, u, start, end);
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
            record_general(a, recs[i++]);
    }
}

void cg_agg_record(struct cg_agg *a, const CUpti_Activity *rec)
{
    cg_agg_records(a, &rec, 1);
}

void cg_agg_settle(struct cg_agg *a, bool final)
{
    ops_sync(a);
    /* intervals that ended before the latest step began can no longer grow */
    uint64_t safe = a->last_step >= 0 ? a->steps[a->last_step].start_ns : 0;
    for (size_t d = 0; d < a->n_lanes; d++) {
        struct cg_agg_lane *l = a->lanes[d];
        union_settle(a, &l->busy, safe, final);
        union_settle(a, &l->compute, safe, final);
        union_settle(a, &l->copies, safe, final);
    }
    steps_publish(a, final);
    if (final) {
        mem_settle(a, UINT64_MAX);
        return;
    }
    if (a->mem_newest > CG_AGG_MEM_SLACK_NS)
        mem_settle(a, a->mem_newest - CG_AGG_MEM_SLACK_NS);
}

int64_t cg_agg_peak(const struct cg_agg *a, uint32_t dev)
{
    for (size_t i = 0; i < a->n_devices; i++)
        if (a->devices[i].id == dev)
            return a->devices[i].peak;
    return -1;
}
