/*
 * aggregate: streaming reduction of CUPTI activity records (see aggregate.h for the rules): the
 * aggregation's life (new, release, settle), its steps (the search for a record's step and the
 * hot path's window onto the step the last record fell in are in aggregate_internal.h, compiled
 * into each file that calls them), each device's lane and the step's figures chosen from them
 * (aggregate.h, "The step's figures"), and the trace's range and line format. The interval unions
 * live in aggregate_union.c, the records in general in aggregate_records.c, the hot path and the
 * op table in aggregate_hot.c; aggregate_internal.h holds what they share. Times in ns, sizes in
 * bytes. Not thread-safe.
 */
#include "aggregate_internal.h"

#include "escape.h"
#include "shard_format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The lane of device dev, made at its first record; past CG_AGG_LANES devices (or out of memory)
 * the last lane made, NULL when there is none. */
COLD_SHARED struct cg_agg_lane *agg_lane_make(struct cg_agg *a, uint32_t dev)
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

/* --- steps (step_at and window_refresh: aggregate_internal.h) ----------------------------- */

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
        a->steps[i] =
            (struct cg_agg_step){.start_ns = UINT64_MAX, .end_ns = UINT64_MAX, .lane = -1};
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

void cg_agg_settle(struct cg_agg *a, bool final)
{
    ops_sync(a);
    /* intervals that ended before the latest step began can no longer grow */
    uint64_t safe = a->last_step >= 0 ? a->steps[a->last_step].start_ns : 0;
    for (size_t d = 0; d < a->n_lanes; d++) {
        struct cg_agg_lane *l = a->lanes[d];
        agg_union_settle(a, &l->busy, safe, final);
        agg_union_settle(a, &l->compute, safe, final);
        agg_union_settle(a, &l->copies, safe, final);
    }
    steps_publish(a, final);
    if (final) {
        agg_mem_settle(a, UINT64_MAX);
        return;
    }
    if (a->mem_newest > CG_AGG_MEM_SLACK_NS)
        agg_mem_settle(a, a->mem_newest - CG_AGG_MEM_SLACK_NS);
}

int64_t cg_agg_peak(const struct cg_agg *a, uint32_t dev)
{
    for (size_t i = 0; i < a->n_devices; i++)
        if (a->devices[i].id == dev)
            return a->devices[i].peak;
    return -1;
}
