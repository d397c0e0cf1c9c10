/*
 * aggregate_union: the unions of intervals the aggregation measures into each step (aggregate.h):
 * per lane, the kernels' (busy), the compute kernels' and the copies' and sets', each a ring of
 * disjoint sorted intervals whose earlier half settles into the steps it overlaps when it fills;
 * and the copies' time some kernel ran in (hidden copy time), credited as the intervals settle.
 * The in-order add of the hot path is union_add (aggregate_internal.h); the rest is here. Times
 * in ns. Not thread-safe.
 */
#include "aggregate_internal.h"

#include <string.h>

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
static void steps_credit(struct cg_agg *a, const struct cg_agg_union *u, struct cg_agg_lane *hidden,
                         uint64_t start, uint64_t end)
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
static void overlap_credit(struct cg_agg *a, struct cg_agg_lane *l, struct span mine, struct span s)
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
        agg_union_settle(a, &l->copies, l->busy.frontier, false);
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
 * intervals inside the window step are summed in one pass, as agg_union_settle would one by one;
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
COLD_SHARED void agg_union_add_slow(struct cg_agg *a, struct cg_agg_union *u, uint64_t start,
                                    uint64_t end)
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
                        agg_union_add_slow(a, u, start, end);
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

/* Settles u's intervals that ended by upto (all when final). */
void agg_union_settle(struct cg_agg *a, struct cg_agg_union *u, uint64_t upto, bool final)
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
