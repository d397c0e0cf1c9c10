/*
 * aggregate_internal: what the aggregation's files (aggregate.c, aggregate_union.c,
 * aggregate_records.c, aggregate_hot.c) share, private to them: the ring and op-table constants,
 * the helpers the hot path needs inlined (static inline, so that no record pays a call between
 * files for them), the search for a record's step with the window it keeps (FILE_COPY: each file
 * that calls them has its own copy, so that the compiler knows them at every call, as when the
 * aggregation was one file), and the functions one file calls in another (prefixed agg_). Not
 * thread-safe, as the aggregation (aggregate.h).
 */
#ifndef CG_AGGREGATE_INTERNAL_H
#define CG_AGGREGATE_INTERNAL_H

#include "aggregate.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RING_MASK (CG_AGG_INTERVALS - 1)
_Static_assert((CG_AGG_SETTLED & (CG_AGG_SETTLED - 1)) == 0 && CG_AGG_SETTLED >= CG_AGG_INTERVALS,
               "the kept kernel intervals: a power of two, a ring's worth at least");
#define HOT static inline __attribute__((always_inline))
#define COLD static __attribute__((noinline, cold))
/* A cold function another file calls (declared below with it too). */
#define COLD_SHARED __attribute__((noinline, cold))
/* A function every file that calls it compiles a copy of (below): the compiler sees its body at
 * each call, as when the aggregation was one file (what it may change, which registers it
 * keeps), and makes the same code of its callers. Unused in the files that do not call it. */
#define FILE_COPY static __attribute__((unused))
#define SLOT_EMPTY UINT32_MAX
/* In a slot's kind: the kernel is communication (cg_agg_is_comm). The hot path's probe compares
 * the kind whole, so such a kernel misses it and takes the cold path that tells it apart. */
#define SLOT_COMM 0x100u

/* --- functions of one file that another calls -------------------------------------------- */

/* aggregate.c: the lane of device dev, made at its first record (see there); NULL when none. */
COLD_SHARED struct cg_agg_lane *agg_lane_make(struct cg_agg *a, uint32_t dev);

/* aggregate_union.c: the general case of union_add (below). */
COLD_SHARED void agg_union_add_slow(struct cg_agg *a, struct cg_agg_union *u, uint64_t start,
                                    uint64_t end);

/* aggregate_union.c: settles u's intervals that ended by upto (all when final). */
void agg_union_settle(struct cg_agg *a, struct cg_agg_union *u, uint64_t upto, bool final);

/* aggregate_hot.c: the op table's slot of (name, kind), created when new; NULL when out of
 * memory. */
COLD_SHARED __attribute__((nonnull)) struct cg_agg_slot *
agg_slot_get(struct cg_agg *a, const char *name, uint32_t kind);

/* aggregate_hot.c: 1 when a kernel of graph id ran its anchor node (one launch of the graph). */
int agg_graph_launch(struct cg_agg *a, uint32_t id, uint64_t node);

/* aggregate_records.c: any record, in general (the records of the hot path give the same
 * results here). */
void agg_record_general(struct cg_agg *a, const CUpti_Activity *rec);

/* aggregate_records.c: applies pending memory events older than upto (all when UINT64_MAX). */
void agg_mem_settle(struct cg_agg *a, uint64_t upto);

/* --- inlined helpers ----------------------------------------------------------------------- */

/* True for the steps whose ops count. */
static inline bool counted_step(const struct cg_agg *a, int64_t k)
{
    return k >= a->warmup && k < a->end_step;
}

static inline bool traced_step(const struct cg_agg *a, int64_t k)
{
    return a->trace_first >= 0 && k >= a->trace_first && k <= a->trace_last;
}

/* --- steps (aggregate.c has the rest) ------------------------------------------------------ */

/* The end of step s as records see it: a step still running ends at the delivery horizon. */
FILE_COPY uint64_t step_until(const struct cg_agg *a, const struct cg_agg_step *s)
{
    return s->end_ns == UINT64_MAX ? a->now_ns : s->end_ns;
}

/* Copies the hint step into the hot path's window (see struct cg_agg). */
FILE_COPY void window_refresh(struct cg_agg *a)
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

/* The step whose interval holds t, or -1. Steps begin in index order, so starts are sorted
 * (a step that never began has start UINT64_MAX and is skipped by the search). The step found
 * becomes the hint when move_hint is set (records; not when settling older intervals). */
FILE_COPY int64_t step_at(struct cg_agg *a, uint64_t t, bool move_hint)
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

/* The lane of device dev, or NULL. */
static inline struct cg_agg_lane *lane_find(const struct cg_agg *a, uint32_t dev)
{
    for (size_t d = 0; d < a->n_lanes; d++)
        if (a->lanes[d]->device == dev)
            return a->lanes[d];
    return NULL;
}

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

/* The slot of (name, kind), or the empty slot where it would go (name NULL). */
static inline struct cg_agg_slot *slot_find(struct cg_agg *a, const char *name, uint32_t kind)
{
    size_t j = slot_of(name, kind, a->n_slots);
    for (;; j = (j + 1) & (a->n_slots - 1)) {
        struct cg_agg_slot *sl = &a->slots[j];
        if ((sl->name == name && (sl->kind & ~SLOT_COMM) == kind) || sl->name == NULL)
            return sl;
    }
}

/* Adds a call of duration_ns to the op (name, kind); a NULL kernel name is "?". */
HOT void op_count(struct cg_agg *a, const char *name, enum cg_agg_kind kind, uint64_t duration_ns)
{
    struct cg_agg_slot *sl = &a->slots[slot_of(name, (uint32_t)kind, a->n_slots)];
    if (sl->name != name || sl->kind != (uint32_t)kind)
        sl = agg_slot_get(a, name != NULL ? name : "?", (uint32_t)kind);
    if (sl != NULL) {
        sl->calls++;
        sl->total_ns += (int64_t)duration_ns;
    }
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
    agg_union_add_slow(a, u, start, end);
}

#endif
