/*
 * aggregate: streaming reduction of CUPTI activity records (see aggregate.h for the rules).
 *
 * Hot path per kernel record: one step lookup (the latest step first, then binary search), one
 * hash probe on the name pointer, and one ring operation that is O(1) when records come roughly
 * in time order. Times in ns, sizes in bytes. Not thread-safe.
 */
#include "aggregate.h"

#include <stdlib.h>
#include <string.h>

#define RING_MASK (CG_AGG_INTERVALS - 1)

int cg_agg_init(struct cg_agg *a, int64_t warmup)
{
    memset(a, 0, sizeof(*a));
    a->warmup = warmup;
    a->last_step = -1;
    a->n_slots = 1024;
    a->slots = calloc(a->n_slots, sizeof(*a->slots));
    a->pending = malloc(CG_AGG_MEM_PENDING * sizeof(*a->pending));
    if (a->slots == NULL || a->pending == NULL) {
        cg_agg_release(a);
        return -1;
    }
    return 0;
}

void cg_agg_release(struct cg_agg *a)
{
    free(a->steps);
    free(a->ops);
    free(a->slots);
    free(a->pending);
    memset(a, 0, sizeof(*a));
}

/* --- steps -------------------------------------------------------------------------------- */

int cg_agg_step_begin(struct cg_agg *a, int64_t index, uint64_t start_ns)
{
    if (index < 0 || index > 100000000)
        return -1;
    size_t need = (size_t)index + 1;
    if (need > a->cap_steps) {
        size_t cap = a->cap_steps ? a->cap_steps : 64;
        while (cap < need)
            cap *= 2;
        struct cg_agg_step *p = realloc(a->steps, cap * sizeof(*p));
        if (p == NULL)
            return -1;
        a->steps = p;
        a->cap_steps = cap;
    }
    for (size_t i = a->n_steps; i < need; i++)
        a->steps[i] = (struct cg_agg_step){UINT64_MAX, UINT64_MAX, 0, 0};
    if (need > a->n_steps)
        a->n_steps = need;
    a->steps[index].start_ns = start_ns;
    a->steps[index].end_ns = UINT64_MAX;
    if (index > a->last_step)
        a->last_step = index;
    return 0;
}

void cg_agg_step_end(struct cg_agg *a, int64_t index, uint64_t end_ns)
{
    if (index >= 0 && (size_t)index < a->n_steps)
        a->steps[index].end_ns = end_ns;
}

/* The step whose interval holds t, or -1. Steps begin in index order, so starts are sorted
 * (a step that never began has start UINT64_MAX and is skipped by the search). */
static int64_t step_at(struct cg_agg *a, uint64_t t)
{
    int64_t last = a->last_step;
    if (last < 0)
        return -1;
    const struct cg_agg_step *s = &a->steps[a->hint];
    if (a->hint <= last && s->start_ns <= t && t <= s->end_ns)
        return a->hint; /* records come in bursts from one step */
    s = &a->steps[last];
    if (t >= s->start_ns)
        return t <= s->end_ns ? last : -1;
    int64_t lo = 0, hi = last; /* find the last step with start <= t */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (a->steps[mid].start_ns <= t && a->steps[mid].start_ns != UINT64_MAX)
            lo = mid;
        else
            hi = mid - 1;
    }
    s = &a->steps[lo];
    if (s->start_ns <= t && t <= s->end_ns) {
        a->hint = lo;
        return lo;
    }
    return -1;
}

/* Adds the parts of [start, end) that lie in step intervals to those steps' busy time. */
static void settle_interval(struct cg_agg *a, uint64_t start, uint64_t end)
{
    int64_t k = step_at(a, start);
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
            a->steps[k].busy_ns += (int64_t)(hi - lo);
    }
    if (end > a->busy_frontier)
        a->busy_frontier = end;
}

/* --- busy union ring ---------------------------------------------------------------------- */

static struct cg_agg_interval *ring_at(struct cg_agg *a, size_t i)
{
    return &a->ring[(a->ring_head + i) & RING_MASK];
}

static void ring_pop_front(struct cg_agg *a)
{
    struct cg_agg_interval *f = ring_at(a, 0);
    settle_interval(a, f->start, f->end);
    a->ring_head = (a->ring_head + 1) & RING_MASK;
    a->ring_len--;
}

static void ring_remove(struct cg_agg *a, size_t i)
{
    for (size_t j = i; j + 1 < a->ring_len; j++)
        *ring_at(a, j) = *ring_at(a, j + 1);
    a->ring_len--;
}

static void busy_add(struct cg_agg *a, uint64_t start, uint64_t end)
{
    if (start < a->busy_frontier)
        start = a->busy_frontier;
    if (end <= start)
        return;
    size_t n = a->ring_len;
    if (n > 0) {
        struct cg_agg_interval *tail = ring_at(a, n - 1);
        if (start > tail->end) {
            /* fast path: after everything held */
        } else if (start >= tail->start) {
            if (end > tail->end)
                tail->end = end;
            return;
        } else {
            /* out of order: find the last interval starting at or before start */
            size_t i = n;
            while (i > 0 && ring_at(a, i - 1)->start > start)
                i--;
            size_t at;
            if (i > 0 && ring_at(a, i - 1)->end >= start) {
                at = i - 1;
                if (end > ring_at(a, at)->end)
                    ring_at(a, at)->end = end;
            } else {
                if (a->ring_len == CG_AGG_INTERVALS) {
                    ring_pop_front(a);
                    if (i == 0) { /* it belonged before the settled one: clip and retry */
                        busy_add(a, start, end);
                        return;
                    }
                    i--;
                }
                for (size_t j = a->ring_len; j > i; j--)
                    *ring_at(a, j) = *ring_at(a, j - 1);
                a->ring_len++;
                *ring_at(a, i) = (struct cg_agg_interval){start, end};
                at = i;
            }
            /* absorb the intervals the grown one now reaches */
            struct cg_agg_interval *cur = ring_at(a, at);
            while (at + 1 < a->ring_len && ring_at(a, at + 1)->start <= cur->end) {
                if (ring_at(a, at + 1)->end > cur->end)
                    cur->end = ring_at(a, at + 1)->end;
                ring_remove(a, at + 1);
            }
            return;
        }
    }
    if (a->ring_len == CG_AGG_INTERVALS)
        ring_pop_front(a);
    *ring_at(a, a->ring_len) = (struct cg_agg_interval){start, end};
    a->ring_len++;
}

/* --- ops ---------------------------------------------------------------------------------- */

static size_t slot_of(const char *name, enum cg_agg_kind kind, size_t n_slots)
{
    uint64_t h = ((uint64_t)(uintptr_t)name + (uint64_t)kind) * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 32) & (n_slots - 1);
}

static int rehash(struct cg_agg *a)
{
    size_t n = a->n_slots * 2;
    struct cg_agg_slot *s = calloc(n, sizeof(*s));
    if (s == NULL)
        return -1;
    for (size_t i = 0; i < a->n_ops; i++) {
        size_t j = slot_of(a->ops[i].name, a->ops[i].kind, n);
        while (s[j].name != NULL)
            j = (j + 1) & (n - 1);
        s[j] = (struct cg_agg_slot){a->ops[i].name, (uint32_t)a->ops[i].kind, (uint32_t)i};
    }
    free(a->slots);
    a->slots = s;
    a->n_slots = n;
    return 0;
}

static struct cg_agg_op *op_add(struct cg_agg *a, const char *name, enum cg_agg_kind kind)
{
    if ((a->n_ops + 1) * 2 > a->n_slots && rehash(a) != 0)
        return NULL;
    if (a->n_ops == a->cap_ops) {
        size_t cap = a->cap_ops ? a->cap_ops * 2 : 256;
        struct cg_agg_op *p = realloc(a->ops, cap * sizeof(*p));
        if (p == NULL)
            return NULL;
        a->ops = p;
        a->cap_ops = cap;
    }
    size_t j = slot_of(name, kind, a->n_slots);
    while (a->slots[j].name != NULL)
        j = (j + 1) & (a->n_slots - 1);
    a->slots[j] = (struct cg_agg_slot){name, (uint32_t)kind, (uint32_t)a->n_ops};
    struct cg_agg_op *o = &a->ops[a->n_ops++];
    *o = (struct cg_agg_op){name, kind, 0, 0, 0, 0};
    return o;
}

static inline struct cg_agg_op *op_get(struct cg_agg *a, const char *name, enum cg_agg_kind kind)
{
    size_t j = slot_of(name, kind, a->n_slots);
    for (;;) {
        const struct cg_agg_slot *sl = &a->slots[j];
        if (sl->name == name && sl->kind == (uint32_t)kind)
            return &a->ops[sl->op];
        if (sl->name == NULL)
            return op_add(a, name, kind);
        j = (j + 1) & (a->n_slots - 1);
    }
}

static void timed(struct cg_agg *a, const char *name, enum cg_agg_kind kind, uint64_t start,
                  uint64_t end)
{
    if (start == 0 || end == 0 || end < start) {
        a->zero_ts++;
        return;
    }
    int64_t k = step_at(a, start);
    if (kind == CG_AGG_KERNEL)
        busy_add(a, start, end);
    if (k < 0) {
        a->outside_steps++;
        return;
    }
    if (k < a->warmup)
        return;
    struct cg_agg_op *o = op_get(a, name ? name : "?", kind);
    if (o != NULL) {
        o->calls++;
        o->total_ns += (int64_t)(end - start);
    }
}

static const char *memcpy_name(uint8_t copy_kind)
{
    switch (copy_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "memcpy HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "memcpy DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "memcpy DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "memcpy HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "memcpy PtoP";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
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

static void mem_apply(struct cg_agg *a, const struct cg_agg_mem_event *e)
{
    struct cg_agg_device *d = device(a, e->device);
    if (d == NULL)
        return;
    d->current += e->delta;
    if (d->current > d->peak)
        d->peak = d->current;
}

static int cmp_mem(const void *x, const void *y)
{
    const struct cg_agg_mem_event *p = x, *q = y;
    if (p->ts != q->ts)
        return p->ts < q->ts ? -1 : 1;
    /* at the same instant, releases first: a conservative peak */
    return (p->delta > q->delta) - (p->delta < q->delta);
}

/* Applies pending events older than upto (all when upto is UINT64_MAX), in time order. */
static void mem_settle(struct cg_agg *a, uint64_t upto)
{
    if (a->n_pending == 0)
        return;
    qsort(a->pending, a->n_pending, sizeof(*a->pending), cmp_mem);
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

static void memory(struct cg_agg *a, const CUpti_ActivityMemory4 *m)
{
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
    if (e.ts > a->mem_newest)
        a->mem_newest = e.ts;
    if (a->mem_frontier != 0 && e.ts < a->mem_frontier) {
        a->late_mem++;
        mem_apply(a, &e);
        return;
    }
    if (a->n_pending == CG_AGG_MEM_PENDING) {
        /* full: apply the older half */
        qsort(a->pending, a->n_pending, sizeof(*a->pending), cmp_mem);
        mem_settle(a, a->pending[CG_AGG_MEM_PENDING / 2].ts);
    }
    a->pending[a->n_pending++] = e;
}

/* --- records ------------------------------------------------------------------------------ */

void cg_agg_record(struct cg_agg *a, const CUpti_Activity *rec)
{
    a->records++;
    switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: {
        /* only the leading fields, whose offsets every kernel record version shares */
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)(const void *)rec;
        timed(a, k->name, CG_AGG_KERNEL, k->start, k->end);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)(const void *)rec;
        timed(a, memcpy_name(m->copyKind), CG_AGG_MEMCPY, m->start, m->end);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY2: {
        const CUpti_ActivityMemcpyPtoP4 *m = (const CUpti_ActivityMemcpyPtoP4 *)(const void *)rec;
        timed(a, "memcpy PtoP", CG_AGG_MEMCPY, m->start, m->end);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)(const void *)rec;
        timed(a, "memset", CG_AGG_MEMSET, m->start, m->end);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMORY2:
        memory(a, (const CUpti_ActivityMemory4 *)(const void *)rec);
        break;
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
        const CUpti_ActivityOverhead3 *o = (const CUpti_ActivityOverhead3 *)(const void *)rec;
        if (o->end > o->start && o->start != 0)
            a->overhead_ns += (int64_t)(o->end - o->start);
        break;
    }
    default:
        break;
    }
}

void cg_agg_settle(struct cg_agg *a, bool final)
{
    if (final) {
        while (a->ring_len > 0)
            ring_pop_front(a);
        mem_settle(a, UINT64_MAX);
        return;
    }
    /* intervals that ended before the latest step began can no longer grow */
    uint64_t safe = a->last_step >= 0 ? a->steps[a->last_step].start_ns : 0;
    while (a->ring_len > 0 && ring_at(a, 0)->end <= safe)
        ring_pop_front(a);
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
