/*
 * fuzz_agg_paths: the aggregation's hot path against its general path (inject/aggregate*.c,
 * compiled in). The same records go to two aggregations: the first through cg_agg_records in
 * batches of a size the input chooses (1 to 100000 records: the hot path takes the runs of
 * kernels that start in the window step), the second through agg_record_general one record at a
 * time, the path the hot one stands in for. Whatever the records (kernels of both kinds, some in
 * CUDA graphs, some communication kernels, some of no duration, inverted or with a zero
 * timestamp, delivered late; bursts of up to 2999 kernels, disjoint or overlapping, with other
 * kinds among them; copies, sets, peer copies, allocations and releases, synchronisations, JIT and
 * overhead records), the steps, the batches, early settles, module loads and delivery horizons,
 * everything the two give must be equal: every step's busy time and counts (compute, copy and
 * hidden copy time among them) and the device they are of, every device's own times per step
 * (kernels and copies of up to 3 devices, interleaved, when the input asks), every op's calls and
 * time, the records inside and outside steps and with a zero timestamp, the graphs, the devices'
 * peaks.
 *
 * One difference is by design (aggregate.h): in a step whose ops do not count (the warm-up, or
 * after the measured window) the hot path does not probe the op table, so the first
 * communication kernel is told apart only in a counted step. Inputs use communication kernels'
 * names only when every step counts (no warm-up, no end to the window).
 */
#include "fuzz.h"

#include "../inject/aggregate.c"
#include "../inject/aggregate_hot.c"
#include "../inject/aggregate_records.c"
#include "../inject/aggregate_union.c"
#include "fuzz_records.h"

#include <stdbool.h>

#define MAX_RECS 20000
#define N_NAMES 600 /* the last one stands for a kernel record without a name */

static union record g_recs[MAX_RECS];
static const CUpti_Activity *g_ptrs[MAX_RECS];
static size_t g_n, g_handed; /* records made; those handed to both aggregations */
static char g_names[N_NAMES][24];
static struct cg_agg g_hot, g_general;
static size_t g_batch;
static bool g_horizon, g_comm_names;
static unsigned g_devices; /* kernels, copies and sets are of devices 0 .. g_devices - 1 */
static uint64_t g_now;

static const size_t batches[8] = {1, 5, 16, 255, 256, 300, 600, 100000};

/* Hands the records made since the last call to both aggregations (with the delivery time as
 * their horizon, when the input asked for one). */
static void deliver(void)
{
    if (g_horizon) {
        cg_agg_now(&g_hot, g_now);
        cg_agg_now(&g_general, g_now);
    }
    for (size_t i = g_handed; i < g_n;) {
        size_t k = g_n - i < g_batch ? g_n - i : g_batch;
        cg_agg_records(&g_hot, g_ptrs + i, k);
        i += k;
    }
    for (size_t i = g_handed; i < g_n; i++) {
        g_general.records++;
        agg_record_general(&g_general, g_ptrs[i]);
    }
    g_handed = g_n;
}

static union record *new_record(void)
{
    if (g_n == MAX_RECS)
        return NULL;
    union record *r = &g_recs[g_n];
    memset(r, 0, sizeof(*r));
    g_ptrs[g_n++] = &r->any;
    return r;
}

/* A kernel of name number name (N_NAMES - 1: none), concurrent or not, in graph (0: none). */
static void kernel(uint64_t start, uint64_t end, unsigned name, bool concurrent, uint32_t graph)
{
    union record *r = new_record();
    if (r == NULL)
        return;
    name %= N_NAMES;
    if (!g_comm_names && strncmp(g_names[name], "nccl", 4) == 0)
        name = (name + 1) % N_NAMES;
    r->kernel.kind =
        concurrent ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL : CUPTI_ACTIVITY_KIND_KERNEL;
    r->kernel.name = name == N_NAMES - 1 ? NULL : g_names[name];
    r->kernel.start = start;
    r->kernel.end = end;
    r->kernel.graphId = graph;
    r->kernel.deviceId = name % g_devices;
    r->kernel.graphNodeId = graph != 0 ? 1 + (name & 1) : 0;
}

/* A record of another kind (what % 7) over [start, start + len). */
static void other(unsigned what, uint64_t start, uint64_t len)
{
    union record *r = new_record();
    if (r == NULL)
        return;
    switch (what % 7) {
    case 0:
        r->copy.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
        r->copy.copyKind = (uint8_t)(len % 11);
        r->copy.dstKind = (uint8_t)(len % 3);
        r->copy.start = start;
        r->copy.end = start + len;
        r->copy.bytes = len;
        r->copy.deviceId = (what / 7) % g_devices;
        break;
    case 1:
        r->set.kind = CUPTI_ACTIVITY_KIND_MEMSET;
        r->set.start = start;
        r->set.end = start + len;
        r->set.deviceId = (what / 7) % g_devices;
        break;
    case 2:
        r->memory.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
        r->memory.memoryOperationType = len & 1 ? CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE
                                                : CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
        r->memory.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
        r->memory.deviceId = (uint32_t)(what / 7 % 3);
        r->memory.bytes = len;
        r->memory.timestamp = start;
        break;
    case 3:
        r->sync.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
        r->sync.type = (CUpti_ActivitySynchronizationType)(len % 5);
        r->sync.start = start;
        r->sync.end = start + len;
        break;
    case 4:
        r->jit.kind = CUPTI_ACTIVITY_KIND_JIT;
        r->jit.start = start;
        r->jit.end = start + len;
        break;
    case 5:
        r->overhead.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
        r->overhead.start = start;
        r->overhead.end = start + len;
        break;
    default:
        r->peer.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
        r->peer.start = start;
        r->peer.end = start + len;
        r->peer.deviceId = (what / 7) % g_devices;
        break;
    }
}

/* A burst of kernels from now: disjoint ones gap apart, some overlapping the one before, some
 * late by a few intervals, some in graphs, records of other kinds among them. */
static void burst(struct cg_fuzz_in *in, unsigned op, unsigned base, unsigned span)
{
    unsigned n = (unsigned)cg_fuzz_uint(in, 2) % 3000, gap = cg_fuzz_u8(in) % 8;
    unsigned len = 1 + cg_fuzz_u8(in) % 16, mix = cg_fuzz_u8(in), late = cg_fuzz_u8(in);
    for (unsigned j = 0; j < n && g_n < MAX_RECS - 1; j++) {
        uint64_t start = g_now + (j % (1 + (mix & 7)) == 0 ? gap : 0);
        if (late != 0 && j % (late + 1u) == late) {
            uint64_t back = (uint64_t)(cg_fuzz_u8(in) + 1) * (gap + len) * ((op >> 4) + 1);
            start = g_now > back ? g_now - back : 1;
        } else if ((mix & 8) && j % 3 == 1) {
            start = g_now > len ? g_now - len / 2 : g_now;
        }
        unsigned name =
            (mix & 0x80) ? (base + j * 7 + mix) % (N_NAMES - 1) : base + (j * 7 + mix) % span;
        kernel(start, start + len, name, true, (mix & 0x40) && j % 5 == 0 ? 1 + j % 3 : 0);
        if (start + len > g_now)
            g_now = start + len;
        if ((mix & 0x30) && j % (1 + ((mix >> 4) & 3) * 13) == 7)
            other(j + mix, start, len);
    }
}

static void both_step_begin(int64_t k)
{
    cg_agg_step_begin(&g_hot, k, g_now);
    cg_agg_step_begin(&g_general, k, g_now);
}

static void both_step_end(int64_t k)
{
    cg_agg_step_end(&g_hot, k, g_now);
    cg_agg_step_end(&g_general, k, g_now);
}

static void check_equal(void)
{
    const struct cg_agg *x = &g_hot, *y = &g_general;
    CG_FUZZ_CHECK(x->n_steps == y->n_steps, "%zu steps, %zu", x->n_steps, y->n_steps);
    CG_FUZZ_CHECK(x->n_lanes == y->n_lanes && x->lanes_shared == y->lanes_shared,
                  "%zu lanes, %zu; %lld shared, %lld", x->n_lanes, y->n_lanes,
                  (long long)x->lanes_shared, (long long)y->lanes_shared);
    for (size_t d = 0; d < x->n_lanes; d++) {
        const struct cg_agg_lane *p = x->lanes[d], *q = y->lanes[d];
        CG_FUZZ_CHECK(p->device == q->device && p->comm == q->comm,
                      "lane %zu: device %u, %u; comm %d, %d", d, p->device, q->device, p->comm,
                      q->comm);
        for (size_t k = 0; k < x->n_steps; k++)
            CG_FUZZ_CHECK(memcmp(&p->times[k], &q->times[k], sizeof(p->times[k])) == 0,
                          "lane %zu step %zu: busy %lld, %lld; compute %lld, %lld; copies %lld, "
                          "%lld; hidden %lld, %lld",
                          d, k, (long long)p->times[k].busy_ns, (long long)q->times[k].busy_ns,
                          (long long)p->times[k].compute_ns, (long long)q->times[k].compute_ns,
                          (long long)p->times[k].copy_ns, (long long)q->times[k].copy_ns,
                          (long long)p->times[k].copy_hidden_ns,
                          (long long)q->times[k].copy_hidden_ns);
    }
    for (size_t k = 0; k < x->n_steps; k++) {
        CG_FUZZ_CHECK(x->steps[k].busy_ns == y->steps[k].busy_ns, "step %zu busy %lld, %lld", k,
                      (long long)x->steps[k].busy_ns, (long long)y->steps[k].busy_ns);
        CG_FUZZ_CHECK(x->steps[k].lane == y->steps[k].lane, "step %zu lane %d, %d", k,
                      x->steps[k].lane, y->steps[k].lane);
        for (int c = 0; c < CG_AGG_COUNTS; c++)
            CG_FUZZ_CHECK(x->steps[k].count[c] == y->steps[k].count[c], "step %zu %s %lld, %lld", k,
                          cg_agg_count_name((enum cg_agg_count)c), (long long)x->steps[k].count[c],
                          (long long)y->steps[k].count[c]);
    }
    CG_FUZZ_CHECK(x->n_ops == y->n_ops, "%zu ops, %zu", x->n_ops, y->n_ops);
    for (size_t j = 0; j < x->n_ops; j++) {
        const struct cg_agg_op *p = &x->ops[j], *q = &y->ops[j];
        CG_FUZZ_CHECK(p->name == q->name && p->kind == q->kind && p->calls == q->calls &&
                          p->total_ns == q->total_ns,
                      "op %zu %s: %lld calls, %lld ns; %lld calls, %lld ns", j,
                      p->name ? p->name : "(null)", (long long)p->calls, (long long)p->total_ns,
                      (long long)q->calls, (long long)q->total_ns);
    }
    CG_FUZZ_CHECK(x->records == y->records && x->inside_steps == y->inside_steps &&
                      x->outside_steps == y->outside_steps && x->zero_ts == y->zero_ts,
                  "records %lld/%lld, inside %lld/%lld, outside %lld/%lld, zero %lld/%lld",
                  (long long)x->records, (long long)y->records, (long long)x->inside_steps,
                  (long long)y->inside_steps, (long long)x->outside_steps,
                  (long long)y->outside_steps, (long long)x->zero_ts, (long long)y->zero_ts);
    CG_FUZZ_CHECK(x->overhead_ns == y->overhead_ns && x->n_graphs == y->n_graphs &&
                      x->graphs_full == y->graphs_full,
                  "overhead %lld/%lld, graphs %zu/%zu", (long long)x->overhead_ns,
                  (long long)y->overhead_ns, x->n_graphs, y->n_graphs);
    CG_FUZZ_CHECK(x->n_devices == y->n_devices, "%zu devices, %zu", x->n_devices, y->n_devices);
    for (size_t d = 0; d < x->n_devices; d++)
        CG_FUZZ_CHECK(x->devices[d].peak == y->devices[d].peak, "device %zu peak %lld, %lld", d,
                      (long long)x->devices[d].peak, (long long)y->devices[d].peak);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (g_names[0][0] == '\0')
        for (int i = 0; i < N_NAMES; i++)
            snprintf(g_names[i], sizeof(g_names[i]), i % 37 == 5 ? "ncclKernel_%d" : "k%d", i);
    struct cg_fuzz_in in = {data, size};
    unsigned setup = cg_fuzz_u8(&in);
    int64_t warmup = setup % 3;
    bool window_ends = setup & 0x80;
    if (cg_agg_new(&g_hot, warmup) != 0 || cg_agg_new(&g_general, warmup) != 0)
        abort();
    g_horizon = setup & 0x40;
    g_comm_names = warmup == 0 && !window_ends; /* see the top */
    if (window_ends) {
        cg_agg_measure(&g_hot, 2 + (setup >> 3) % 4);
        cg_agg_measure(&g_general, 2 + (setup >> 3) % 4);
    }
    if (setup & 0x20) {
        cg_agg_graph_ids(&g_hot, false);
        cg_agg_graph_ids(&g_general, false);
    }
    g_batch = batches[(setup >> 2) & 7];
    g_n = g_handed = 0;
    g_now = 1000;
    g_devices = 1;
    int64_t steps = 0;
    bool open = false;
    unsigned base = 0, span = 8;
    while (in.left > 0 && g_n < MAX_RECS - 1) {
        unsigned op = cg_fuzz_u8(&in);
        switch (op & 15) {
        case 0:
        case 1: /* a step begins (the open one ends) */
            deliver();
            if (open)
                both_step_end(steps - 1);
            g_now += 1 + (op >> 4);
            both_step_begin(steps++);
            open = true;
            break;
        case 2:
            deliver();
            if (open)
                both_step_end(steps - 1);
            open = false;
            break;
        case 3:
            g_now += cg_fuzz_u8(&in);
            break;
        case 4:
        case 5:
        case 6: { /* one kernel: maybe late, of no duration, inverted or at time 0 */
            unsigned back = (op & 0x80) ? (unsigned)cg_fuzz_uint(&in, 2) : 0;
            unsigned len = cg_fuzz_u8(&in), name = base + cg_fuzz_u8(&in) % span;
            uint64_t start = g_now > back ? g_now - back : 1;
            if ((op & 0x70) == 0x70)
                start = 0;
            uint64_t end = (op & 0x70) == 0x60 ? start - 1 : start + len;
            kernel(start, end, name, !(op & 0x40) || (op & 0x20),
                   (op & 0x10) ? 1 + (cg_fuzz_u8(&in) & 3) : 0);
            if (start + len > g_now && !(op & 0x80))
                g_now = start + len;
            break;
        }
        case 7:
        case 8:
            burst(&in, op, base, span);
            break;
        case 9: {
            unsigned what = cg_fuzz_u8(&in), back = (op & 0x80) ? cg_fuzz_u8(&in) : 0;
            other(what, g_now > back ? g_now - back : 1, cg_fuzz_u8(&in));
            break;
        }
        case 10:
            deliver();
            cg_agg_settle(&g_hot, false);
            cg_agg_settle(&g_general, false);
            break;
        case 11:
            deliver();
            g_batch = batches[(op >> 4) & 7];
            break;
        case 12: /* the names of the kernels to come, and how many devices they are of */
            base = (unsigned)cg_fuzz_uint(&in, 2) % N_NAMES;
            span = 1 + (unsigned)cg_fuzz_uint(&in, 2) % N_NAMES;
            g_devices = 1 + (op >> 4) % 3;
            break;
        case 13:
            deliver();
            cg_agg_graph_ids(&g_hot, op & 0x10);
            cg_agg_graph_ids(&g_general, op & 0x10);
            break;
        case 14:
            deliver();
            cg_agg_module_load(&g_hot, g_now, 0);
            cg_agg_module_load(&g_general, g_now, 0);
            break;
        default:
            g_now += cg_fuzz_uint(&in, 2);
            break;
        }
    }
    deliver();
    if (open)
        both_step_end(steps - 1);
    cg_agg_settle(&g_hot, true);
    cg_agg_settle(&g_general, true);
    check_equal();
    cg_agg_release(&g_hot);
    cg_agg_release(&g_general);
    return 0;
}
