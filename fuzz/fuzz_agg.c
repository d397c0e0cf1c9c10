/*
 * fuzz_agg: CUPTI activity records into the injection library's aggregation (aggregate.h, from
 * its core, canary-inject-core): kernels (some launched by a CUDA graph), copies (MEMCPY and
 * MEMCPY2), sets, device memory allocations and releases, synchronisations of every type (some that
 * did not complete), JIT records, overhead records and module loads, in any order relative to the
 * NVTX step boundaries, with zero and inverted timestamps.
 *
 * The input is byte code: begin or end a step, let time pass, deliver a record (its start may lie
 * in the past, as CUPTI delivers buffers late) one by one or in a batch (cg_agg_records), settle;
 * the first byte chooses the warm-up, the steps traced, and whether the measured window ends
 * (cg_agg_measure) and records are delivered with a horizon (cg_agg_now, the time of delivery;
 * then some kernels are stamped in a far later clock, as without the timestamp callback). The
 * harness keeps every record and recomputes from scratch what the streaming aggregation must
 * give: per-op calls and time of the measured steps, how many timed records fell inside and
 * outside every step, each step's GPU busy time (the union of kernel intervals inside the step),
 * its compute time (between the compute kernels' union and the busy time) and copy time (the
 * union of copies and sets),
 * every step's counts (each counted event in the step its start or timestamp lies in), and each
 * device's peak memory. Busy time never exceeds the step's length; busy, compute and copy time
 * and the copies' overlap with kernels are exact when every timed record started no earlier than
 * the ones before it and had ended when delivered (bursts of up to 2111 kernels with copies
 * among them fill the interval ring and the kept rings), or else while the interval ring never
 * filled and nothing was settled early; memory peaks are exact when no event arrived later than
 * what was applied; trace events stay within their cap.
 */
#include "fuzz.h"

#include "aggregate.h"
#include "fuzz_records.h"

#include <stdbool.h>

#define MAX_EVENTS 512 /* byte-code operations */
#define MAX_RECS 4096  /* timed records: a burst adds many (room is left for one an operation) */
#define MAX_STEPS 128
#define N_DEVICES 3
#define BATCH 16
#define MAX_TRACE 32
#define MAX_COUNTED (3 * MAX_RECS)

static const char *const kernel_names[] = {"_Z4gemmv", "_Z4reluv", "triton_poi_fused_0",
                                           "ncclDevKernel_AllReduce_Sum_f32_RING_LL", NULL};

struct rec {
    uint64_t start, end;
    const char *name; /* as the aggregation names it */
    int kind;
};

struct memev {
    uint64_t ts;
    int64_t delta;
    uint32_t device;
};

/* Something the aggregation must count in the step t lies in (if any). */
struct counted {
    uint64_t t;
    enum cg_agg_count count;
    int64_t add;
};

struct model {
    struct cg_agg agg;
    uint64_t now;
    uint64_t step_start[MAX_STEPS], step_end[MAX_STEPS];
    int n_steps;
    bool open;
    struct rec recs[MAX_RECS];
    size_t n_recs;
    struct memev mem[MAX_EVENTS];
    size_t n_mem;
    struct counted counted[MAX_COUNTED];
    size_t n_counted;
    bool graph_ids_off;
    int64_t fed;
    int64_t timed; /* kernels, copies and sets fed, bad timestamps included */
    bool horizon;  /* deliveries say when they happen (cg_agg_now) */
    size_t kernels;
    bool settled_early;
    uint64_t max_start; /* of the timed records kept so far */
    bool out_of_order;  /* one started before another kept earlier, or ended after its delivery */
    bool batching;
    union record batch[BATCH];
    const CUpti_Activity *batch_ptrs[BATCH];
    size_t n_batch;
};

/* Hands over the records held for a batch. */
static void flush(struct model *m)
{
    if (m->n_batch > 0) {
        if (m->horizon)
            cg_agg_now(&m->agg, m->now);
        cg_agg_records(&m->agg, m->batch_ptrs, m->n_batch);
    }
    m->n_batch = 0;
}

/* Delivers a record now, or holds it for the next batch. */
static void feed(struct model *m, const union record *rec)
{
    m->fed++;
    if (!m->batching) {
        if (m->horizon)
            cg_agg_now(&m->agg, m->now);
        cg_agg_record(&m->agg, &rec->any);
        return;
    }
    if (m->n_batch == BATCH)
        flush(m);
    m->batch[m->n_batch] = *rec;
    m->batch_ptrs[m->n_batch] = &m->batch[m->n_batch].any;
    m->n_batch++;
}

static void keep(struct model *m, uint64_t start, uint64_t end, const char *name, int kind)
{
    if (start == 0 || end == 0 || end < start || m->n_recs == MAX_RECS)
        return;
    if (start < m->max_start || end > m->now)
        m->out_of_order = true;
    if (start > m->max_start)
        m->max_start = start;
    m->recs[m->n_recs++] = (struct rec){start, end, name, kind};
}

/* The aggregation must count add in count for the step t lies in. */
static void expect(struct model *m, uint64_t t, enum cg_agg_count count, int64_t add)
{
    if (m->n_counted < MAX_COUNTED)
        m->counted[m->n_counted++] = (struct counted){t, count, add};
}

/* True for timestamps a record counts with (others are zero or inverted). */
static bool good_times(uint64_t start, uint64_t end)
{
    return start != 0 && end != 0 && end >= start;
}

static void step_end(struct model *m)
{
    flush(m);
    if (!m->open)
        return;
    m->step_end[m->n_steps - 1] = m->now;
    cg_agg_step_end(&m->agg, m->n_steps - 1, m->now);
    m->open = false;
}

/* A burst: up to 2111 kernels in time order, each ended when delivered, on two streams (one
 * kernel in three overlaps the one before), some communication kernels', and a copy now and then
 * over a kernel's second half and the gap after it: enough intervals to fill the busy ring and
 * the kept rings of the copies' overlap. */
static void burst(struct model *m, uint64_t dur, uint64_t back)
{
    size_t n = 64 + (size_t)(dur % 2048), copy_every = 2 + (size_t)((back >> 4) % 40);
    uint64_t gap = 1 + back % 50, len = 1 + (dur >> 11) % 40, cover = 1 + (dur >> 17) % 90;
    uint64_t t = m->now;
    for (size_t i = 0; i < n && m->n_recs + 2 <= MAX_RECS - MAX_EVENTS; i++) {
        union record r;
        memset(&r, 0, sizeof(r));
        uint64_t start = i % 3 == 2 ? t - len / 2 : t + gap; /* the overlapping one */
        if (start <= m->max_start && m->max_start <= m->now) /* not a kernel of another clock */
            start = m->max_start + 1;
        r.kernel.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        r.kernel.name = kernel_names[(i * 7 + dur) % 4];
        r.kernel.start = start;
        r.kernel.end = start + len;
        if (r.kernel.end > m->now)
            m->now = r.kernel.end;
        keep(m, r.kernel.start, r.kernel.end, r.kernel.name, CG_AGG_KERNEL);
        expect(m, r.kernel.start, CG_AGG_N_KERNELS, 1);
        m->kernels++;
        m->timed++;
        feed(m, &r);
        t = r.kernel.end;
        if (i % copy_every != copy_every - 1)
            continue;
        memset(&r, 0, sizeof(r));
        r.copy.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
        r.copy.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
        r.copy.start =
            t - len / 2 > m->max_start || m->max_start > m->now ? t - len / 2 : m->max_start + 1;
        r.copy.end = r.copy.start + cover;
        r.copy.bytes = 4096;
        if (r.copy.end > m->now)
            m->now = r.copy.end;
        keep(m, r.copy.start, r.copy.end,
             cg_agg_memcpy_name(r.copy.copyKind, r.copy.srcKind, r.copy.dstKind), CG_AGG_MEMCPY);
        expect(m, r.copy.start, CG_AGG_N_COPIES, 1);
        m->timed++;
        feed(m, &r);
    }
}

static void one_event(struct model *m, struct cg_fuzz_in *in)
{
    uint8_t op = cg_fuzz_u8(in);
    uint64_t back = cg_fuzz_uint(in, 2) * (uint64_t)(1 + (op >> 4));
    uint64_t start = m->now > back ? m->now - back : 1;
    uint64_t dur = cg_fuzz_uint(in, 3);
    union record r;
    memset(&r, 0, sizeof(r));
    switch (op & 0x0f) { /* the high bits are the cases' flags */
    case 0:
        if (m->n_steps == MAX_STEPS)
            break;
        step_end(m);
        m->now += 1; /* steps never share an instant */
        m->step_start[m->n_steps] = m->now;
        m->step_end[m->n_steps] = UINT64_MAX;
        CG_FUZZ_CHECK(cg_agg_step_begin(&m->agg, m->n_steps, m->now) == 0, "step begin");
        m->n_steps++;
        m->open = true;
        break;
    case 1:
        step_end(m);
        break;
    case 2:
        m->now += dur;
        break;
    case 3: /* a kernel, sometimes with a zero or inverted timestamp */
        r.kernel.kind = (op & 0x10) ? CUPTI_ACTIVITY_KIND_KERNEL : CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        r.kernel.name = kernel_names[dur % 5];
        if (m->horizon && (op & 0xe0) == 0xa0)
            start = m->now + 1000000000000000ull; /* another clock: after every step */
        r.kernel.start = (op & 0xe0) == 0xe0 ? 0 : start;
        r.kernel.end = (op & 0xe0) == 0xc0 ? start - 1 : start + dur;
        r.kernel.graphId = (dur >> 5) & 1 ? (uint32_t)(1 + back % 7) : 0;
        r.kernel.graphNodeId = 100 * (uint64_t)r.kernel.graphId; /* one node a graph: every
                                                                  * record is a launch */
        keep(m, r.kernel.start, r.kernel.end, r.kernel.name ? r.kernel.name : "?", CG_AGG_KERNEL);
        if (good_times(r.kernel.start, r.kernel.end)) {
            expect(m, r.kernel.start, CG_AGG_N_KERNELS, 1);
            if (r.kernel.graphId != 0 && !m->graph_ids_off) {
                expect(m, r.kernel.start, CG_AGG_N_GRAPH_KERNELS, 1);
                expect(m, r.kernel.start, CG_AGG_N_GRAPH_LAUNCHES, 1);
            }
        }
        m->kernels++;
        m->timed++;
        feed(m, &r);
        break;
    case 4:
        r.copy.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
        r.copy.copyKind = (uint8_t)(dur % 12);
        r.copy.srcKind = (uint8_t)((dur >> 4) % 9);
        r.copy.dstKind = (uint8_t)((dur >> 8) % 9);
        r.copy.start = start;
        r.copy.end = start + dur;
        r.copy.bytes = back;
        keep(m, r.copy.start, r.copy.end,
             cg_agg_memcpy_name(r.copy.copyKind, r.copy.srcKind, r.copy.dstKind), CG_AGG_MEMCPY);
        expect(m, start, CG_AGG_N_COPIES, 1);
        if (r.copy.copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH &&
            r.copy.dstKind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE) {
            expect(m, start, CG_AGG_N_DTOH_PAGEABLE, 1);
            expect(m, start, CG_AGG_N_DTOH_PAGEABLE_BYTES, (int64_t)back);
        }
        m->timed++;
        feed(m, &r);
        break;
    case 5:
        r.set.kind = CUPTI_ACTIVITY_KIND_MEMSET;
        r.set.start = start;
        r.set.end = start + dur;
        keep(m, r.set.start, r.set.end, "memset", CG_AGG_MEMSET);
        m->timed++;
        feed(m, &r);
        break;
    case 6: /* device memory: sizes up to 2^40 bytes, timestamps out of order */
        r.memory.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
        r.memory.memoryOperationType = (op & 0x10) ? CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE
                                                   : CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
        r.memory.memoryKind = (op & 0x20) ? CUPTI_ACTIVITY_MEMORY_KIND_PINNED
                                          : CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
        r.memory.bytes = (dur & 0xffff) << ((dur >> 16) % 25);
        r.memory.timestamp = start;
        r.memory.deviceId = (uint32_t)(back % N_DEVICES);
        if (r.memory.memoryKind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE && m->n_mem < MAX_EVENTS) {
            int64_t b = (int64_t)r.memory.bytes;
            m->mem[m->n_mem++] = (struct memev){start, (op & 0x10) ? -b : b, r.memory.deviceId};
        }
        if (r.memory.memoryKind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE)
            expect(m, start, (op & 0x10) ? CG_AGG_N_FREES : CG_AGG_N_ALLOCS, 1);
        feed(m, &r);
        break;
    case 7:
        r.overhead.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
        r.overhead.start = start;
        r.overhead.end = start + dur;
        feed(m, &r);
        break;
    case 8:
        flush(m);
        cg_agg_settle(&m->agg, false);
        m->settled_early = true;
        break;
    case 9: /* from now on, records go in batches (or one by one again) */
        flush(m);
        m->batching = !m->batching;
        break;
    case 10: { /* a synchronisation of any type, some not completed, some with bad timestamps */
        r.sync.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
        r.sync.type = (CUpti_ActivitySynchronizationType)(dur % 6);
        r.sync.returnValue = (op & 0x10) ? 600 : 0;
        r.sync.start = (op & 0xe0) == 0xe0 ? 0 : start;
        r.sync.end = (op & 0xe0) == 0xc0 ? start - 1 : start + dur;
        static const enum cg_agg_count by_type[5] = {CG_AGG_COUNTS, CG_AGG_N_SYNC_EVENT,
                                                     CG_AGG_N_SYNC_WAIT, CG_AGG_N_SYNC_STREAM,
                                                     CG_AGG_N_SYNC_CONTEXT};
        enum cg_agg_count c = dur % 6 < 5 ? by_type[dur % 6] : CG_AGG_COUNTS;
        if (c != CG_AGG_COUNTS && r.sync.returnValue == 0 && good_times(r.sync.start, r.sync.end)) {
            expect(m, start, c, 1);
            if (c != CG_AGG_N_SYNC_WAIT)
                expect(m, start, CG_AGG_N_SYNC_NS, (int64_t)dur);
        }
        feed(m, &r);
        break;
    }
    case 11: /* a JIT record */
        r.jit.kind = CUPTI_ACTIVITY_KIND_JIT;
        r.jit.jitOperationType = (CUpti_ActivityJitOperationType)(dur % 4);
        r.jit.start = (op & 0xe0) == 0xe0 ? 0 : start;
        r.jit.end = r.jit.start + dur;
        if (good_times(r.jit.start, r.jit.end))
            expect(m, start, CG_AGG_N_JIT, 1);
        feed(m, &r);
        break;
    case 12: /* a peer copy (MEMCPY2) */
        r.peer.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
        r.peer.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
        r.peer.start = start;
        r.peer.end = start + dur;
        r.peer.bytes = back;
        keep(m, r.peer.start, r.peer.end, "memcpy PtoP", CG_AGG_MEMCPY);
        expect(m, start, CG_AGG_N_COPIES, 1);
        m->timed++;
        feed(m, &r);
        break;
    case 13: /* a module load, counted at the time it is reported */
        flush(m);
        if (m->horizon)
            cg_agg_now(&m->agg, m->now);
        cg_agg_module_load(&m->agg, m->now, 0);
        expect(m, m->now, CG_AGG_N_MODULE_LOADS, 1);
        break;
    case 14: /* graphId is read, or not, from the next kernel on */
        flush(m);
        m->graph_ids_off = !m->graph_ids_off;
        cg_agg_graph_ids(&m->agg, !m->graph_ids_off);
        break;
    case 15:
        if (op & 0x10) { /* a kind the aggregation does not read */
            r.kernel.kind = CUPTI_ACTIVITY_KIND_MARKER;
            feed(m, &r);
            break;
        }
        burst(m, dur, back);
        break;
    default:
        break;
    }
}

/* The step t lies in, or -1 (steps begin in order, each after the one before ended). */
static int step_of(const struct model *m, uint64_t t)
{
    int lo = 0, hi = m->n_steps; /* the first step starting after t */
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (m->step_start[mid] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && t <= m->step_end[lo - 1] ? lo - 1 : -1;
}

static int cmp_rec(const void *x, const void *y)
{
    const struct rec *a = x, *b = y;
    return (a->start > b->start) - (a->start < b->start);
}

/* Busy time of step k from scratch: the union of kernel intervals, cut to the step. */
static int64_t busy_of(const struct model *m, const struct rec *kernels, size_t n, int k)
{
    uint64_t lo = m->step_start[k], hi = m->step_end[k];
    int64_t busy = 0;
    uint64_t cur_s = 0, cur_e = 0;
    bool have = false;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && have && kernels[i].start <= cur_e) {
            if (kernels[i].end > cur_e)
                cur_e = kernels[i].end;
            continue;
        }
        if (have) {
            uint64_t a = cur_s > lo ? cur_s : lo, b = cur_e < hi ? cur_e : hi;
            if (b > a)
                busy += (int64_t)(b - a);
        }
        if (i < n) {
            cur_s = kernels[i].start;
            cur_e = kernels[i].end;
            have = true;
        }
    }
    return busy;
}

static void check_ops(const struct model *m)
{
    const struct cg_agg *a = &m->agg;
    size_t listed = 0;
    for (size_t i = 0; i < m->n_recs; i++) {
        const struct rec *r = &m->recs[i];
        int k = step_of(m, r->start);
        if (k < 0 || k < a->warmup || k >= a->end_step)
            continue;
        bool first = true;
        int64_t calls = 0, total = 0;
        for (size_t j = 0; j < m->n_recs; j++) {
            const struct rec *q = &m->recs[j];
            if (q->kind != r->kind || strcmp(q->name, r->name) != 0)
                continue;
            int kq = step_of(m, q->start);
            if (kq < 0 || kq < a->warmup || kq >= a->end_step)
                continue;
            if (j < i) {
                first = false;
                break;
            }
            calls++;
            total += (int64_t)(q->end - q->start);
        }
        if (!first)
            continue;
        listed++;
        /* the aggregation keys ops by name pointer: sum its ops of this kind and text */
        int64_t got_calls = 0, got_ns = 0;
        for (size_t j = 0; j < a->n_ops; j++)
            if ((int)a->ops[j].kind == r->kind && strcmp(a->ops[j].name, r->name) == 0) {
                got_calls += a->ops[j].calls;
                got_ns += a->ops[j].total_ns;
            }
        CG_FUZZ_CHECK(got_calls == calls && got_ns == total,
                      "op '%s': %lld calls %lld ns, expected %lld calls %lld ns", r->name,
                      (long long)got_calls, (long long)got_ns, (long long)calls, (long long)total);
    }
    size_t with_calls = 0;
    for (size_t j = 0; j < a->n_ops; j++)
        with_calls += a->ops[j].calls > 0;
    CG_FUZZ_CHECK(with_calls >= listed, "%zu ops, expected %zu", with_calls, listed);
}

static int cmp_mem_ev(const void *x, const void *y)
{
    const struct memev *p = x, *q = y;
    if (p->ts != q->ts)
        return p->ts < q->ts ? -1 : 1;
    return (p->delta > q->delta) - (p->delta < q->delta);
}

/* Every step's counts, from scratch. */
static void check_counts(const struct model *m)
{
    static int64_t want[MAX_STEPS][CG_AGG_COUNTS];
    memset(want, 0, sizeof(want));
    for (size_t i = 0; i < m->n_counted; i++) {
        int k = step_of(m, m->counted[i].t);
        if (k >= 0)
            want[k][m->counted[i].count] += m->counted[i].add;
    }
    for (int k = 0; k < m->n_steps; k++)
        for (int c = 0; c < CG_AGG_COUNTS; c++)
            if (c != CG_AGG_N_COMPUTE_NS && c != CG_AGG_N_COPY_NS &&
                c != CG_AGG_N_COPY_HIDDEN_NS) /* times: checked apart */
                CG_FUZZ_CHECK(m->agg.steps[k].count[c] == want[k][c], "step %d: %s %lld, expected %lld",
                          k, cg_agg_count_name((enum cg_agg_count)c),
                          (long long)m->agg.steps[k].count[c], (long long)want[k][c]);
}

static void check_memory(struct model *m)
{
    if (m->agg.late_mem != 0)
        return;
    qsort(m->mem, m->n_mem, sizeof(m->mem[0]), cmp_mem_ev);
    for (uint32_t d = 0; d < N_DEVICES; d++) {
        int64_t cur = 0, peak = -1;
        for (size_t i = 0; i < m->n_mem; i++) {
            if (m->mem[i].device != d)
                continue;
            cur += m->mem[i].delta;
            if (peak < 0)
                peak = 0;
            if (cur > peak)
                peak = cur;
        }
        CG_FUZZ_CHECK(cg_agg_peak(&m->agg, d) == peak, "device %u: peak %lld, expected %lld", d,
                      (long long)cg_agg_peak(&m->agg, d), (long long)peak);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct model m;
    struct cg_fuzz_in in = {data, size};
    memset(&m, 0, sizeof(m));
    m.now = 1000000000ull;
    uint8_t setup = cg_fuzz_u8(&in);
    CG_FUZZ_CHECK(cg_agg_new(&m.agg, setup % 3) == 0, "init");
    if (setup & 0x80) /* trace a few steps */
        CG_FUZZ_CHECK(cg_agg_trace(&m.agg, (setup >> 2) % 4, (setup >> 2) % 4 + (setup >> 4) % 4,
                                   MAX_TRACE) == 0,
                      "trace");
    if (setup & 0x40) { /* the window ends, and deliveries have a horizon */
        cg_agg_measure(&m.agg, setup % 3 + 1 + (setup >> 2) % 4);
        m.horizon = true;
    }
    for (int i = 0; in.left > 0 && i < MAX_EVENTS; i++)
        one_event(&m, &in);
    step_end(&m);
    flush(&m);
    cg_agg_settle(&m.agg, true);
    CG_FUZZ_CHECK(m.agg.n_trace <= MAX_TRACE && m.agg.trace_dropped >= 0, "%zu trace events",
                  m.agg.n_trace);

    CG_FUZZ_CHECK(m.agg.records == m.fed, "%lld records counted, %lld fed",
                  (long long)m.agg.records, (long long)m.fed);
    check_ops(&m);
    int64_t outside = 0;
    for (size_t i = 0; i < m.n_recs; i++)
        outside += step_of(&m, m.recs[i].start) < 0;
    CG_FUZZ_CHECK(m.agg.outside_steps == outside, "%lld records outside every step, expected %lld",
                  (long long)m.agg.outside_steps, (long long)outside);
    CG_FUZZ_CHECK(m.agg.inside_steps == (int64_t)m.n_recs - outside,
                  "%lld records inside a step, expected %lld", (long long)m.agg.inside_steps,
                  (long long)m.n_recs - outside);
    CG_FUZZ_CHECK(m.agg.inside_steps + m.agg.outside_steps + m.agg.zero_ts >= m.timed,
                  "timed records lost");

    static struct rec kernels[MAX_RECS], compute[MAX_RECS], copies[MAX_RECS], all[MAX_RECS];
    size_t nk = 0, ncompute = 0, ncopies = 0;
    for (size_t i = 0; i < m.n_recs; i++)
        all[i] = m.recs[i];
    qsort(all, m.n_recs, sizeof(all[0]), cmp_rec);
    for (size_t i = 0; i < m.n_recs; i++)
        if (m.recs[i].kind == CG_AGG_KERNEL) {
            kernels[nk++] = m.recs[i];
            if (!cg_agg_is_comm(m.recs[i].name))
                compute[ncompute++] = m.recs[i];
        } else {
            copies[ncopies++] = m.recs[i]; /* copies and sets */
        }
    qsort(kernels, nk, sizeof(kernels[0]), cmp_rec);
    qsort(compute, ncompute, sizeof(compute[0]), cmp_rec);
    qsort(copies, ncopies, sizeof(copies[0]), cmp_rec);
    /* exact: in time order (then a clipped record adds nothing the settled union lacks), or
     * with the rings never full and nothing settled early */
    bool exact = !m.out_of_order || (!m.settled_early && m.kernels < CG_AGG_INTERVALS);
    bool copies_exact = !m.out_of_order || (!m.settled_early && ncopies < CG_AGG_INTERVALS &&
                                            m.kernels < CG_AGG_INTERVALS); /* copies settle
                                                                            * as kernels do */
    for (int k = 0; k < m.n_steps; k++) {
        int64_t got = m.agg.steps[k].busy_ns;
        int64_t want = busy_of(&m, kernels, nk, k);
        CG_FUZZ_CHECK(got >= 0 && (uint64_t)got <= m.step_end[k] - m.step_start[k],
                      "step %d: busy %lld ns in a step of %llu ns", k, (long long)got,
                      (unsigned long long)(m.step_end[k] - m.step_start[k]));
        CG_FUZZ_CHECK(got <= want, "step %d: busy %lld ns, the kernels cover %lld", k,
                      (long long)got, (long long)want);
        if (exact)
            CG_FUZZ_CHECK(got == want, "step %d: busy %lld ns, expected %lld", k, (long long)got,
                          (long long)want);
        /* compute: within the busy union; when exact, at least the compute kernels' union (the
         * communication kernels before the first one told apart count as compute) */
        int64_t comp = m.agg.steps[k].count[CG_AGG_N_COMPUTE_NS];
        CG_FUZZ_CHECK(comp >= 0 && comp <= want, "step %d: compute %lld ns, kernels cover %lld", k,
                      (long long)comp, (long long)want);
        if (exact) {
            int64_t least = busy_of(&m, compute, ncompute, k);
            CG_FUZZ_CHECK(comp >= least, "step %d: compute %lld ns, compute kernels cover %lld", k,
                          (long long)comp, (long long)least);
            if (m.agg.n_lanes == 0 || !m.agg.lanes[0]->comm) /* every record is device 0's */
                CG_FUZZ_CHECK(comp == got, "step %d: compute %lld ns, busy %lld, no communication",
                              k, (long long)comp, (long long)got);
        }
        /* copies and sets: their union, exact when nothing was clipped */
        int64_t cp = m.agg.steps[k].count[CG_AGG_N_COPY_NS];
        int64_t cover = busy_of(&m, copies, ncopies, k);
        CG_FUZZ_CHECK(cp >= 0 && cp <= cover, "step %d: copies %lld ns, they cover %lld", k,
                      (long long)cp, (long long)cover);
        if (copies_exact)
            CG_FUZZ_CHECK(cp == cover, "step %d: copies %lld ns, expected %lld", k, (long long)cp,
                          (long long)cover);
        /* of them, the time some kernel ran: at most both unions' overlap, exact when they are */
        int64_t hidden = m.agg.steps[k].count[CG_AGG_N_COPY_HIDDEN_NS];
        int64_t overlap = cover + want - busy_of(&m, all, m.n_recs, k);
        CG_FUZZ_CHECK(hidden >= 0 && hidden <= cp && hidden <= overlap,
                      "step %d: copies' hidden %lld ns, copies %lld, overlap %lld", k,
                      (long long)hidden, (long long)cp, (long long)overlap);
        if (exact && copies_exact)
            CG_FUZZ_CHECK(hidden == overlap, "step %d: copies' hidden %lld ns, expected %lld", k,
                          (long long)hidden, (long long)overlap);
    }
    check_counts(&m);
    check_memory(&m);
    cg_agg_release(&m.agg);
    return 0;
}
