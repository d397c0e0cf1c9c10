/*
 * bench_cupti_agg: records per second through the injection library's CUPTI aggregation
 * (aggregate.h, from its core, canary-inject-core), fed with synthetic records of the installed
 * CUPTI types (CUpti_ActivityKernel10, CUpti_ActivityMemcpy6, CUpti_ActivitySynchronization2,
 * CUpti_ActivityMemory4), next to bare loops over the same records. One core, median of repeats.
 * Prints a small table; never run by ctest.
 *
 * The workload: 50 buffers of 8 MiB (about 1.9 million records), one step per buffer, 200
 * distinct kernel names, 4 streams whose kernels overlap, one kernel in 64 launched by a CUDA
 * graph; one copy every 50 records (host to device from pinned and pageable memory, device to
 * host into pageable and pinned memory, in turn), one synchronisation every 100 (stream, event,
 * context, stream wait, in turn) and one device memory allocation or release every 200; records
 * in time order within a buffer as CUPTI delivers them (each in a 216-byte slot, the size of a
 * kernel record). The buffer is rewritten before each timed pass, so every loop reads it warm,
 * as the library does right after CUPTI filled it.
 *
 * The loops are out-of-line functions over the same records. The bare loop reads every record's
 * kind, and the start and end of kernels and copies, and returns the sum of their durations
 * (checked against the aggregation's op totals, so it cannot be optimised away). The name loop
 * does the same and also reads each kernel's name pointer (in the record's second cache line),
 * which any aggregation by kernel must: the memory floor of the aggregation, and the loop the
 * target compares with (at least 0.8 of its speed, and 20 M records/s). The aggregation loop
 * hands the record pointers to cg_agg_records in batches, as inject/cupti.c does with the
 * records CUPTI's iterator yields, through a pointer the compiler cannot see through (the
 * library calls it from another file); its per-step counts are checked against the workload's.
 * Times are the thread's CPU time (CLOCK_THREAD_CPUTIME_ID), so a busy shared machine that takes
 * the core away does not count against either loop. The pointer pass reads what the name loop
 * reads through the same batches of pointers, as the aggregation receives them (CUPTI's iterator
 * yields one record pointer at a time): the least any aggregation in the library can cost, its
 * sum checked against the name loop's. --comm makes one kernel name in 20 a communication
 * kernel's; --graphs launches every kernel from a CUDA graph.
 */
#include "bench.h"
#include <stdio.h>

#if CG_HAVE_CUPTI

#include "aggregate.h"

#include <inttypes.h>
#include <sys/mman.h>
#include <time.h>

#define BUFFER_BYTES ((size_t)8 * 1024 * 1024)
#define N_BUFFERS 50
#define N_NAMES 200
#define REPEATS 9
#define BATCH 256 /* record pointers per cg_agg_records call, as in inject/cupti.c */
/* Where the kernel names are put when the system lets them be (see main) */
#define NAMES_AT ((void *)0x200000000000ull)
#define NAMES_BYTES ((size_t)N_NAMES * 48)

static double cpu_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

union rec {
    CUpti_ActivityKernel10 k;
    CUpti_ActivityMemcpy6 m;
    CUpti_ActivitySynchronization2 s;
    CUpti_ActivityMemory4 mem;
};

/* What the workload holds per step, for checking the aggregation's counts. */
static int64_t want[CG_AGG_COUNTS];

/* --graphs: every kernel launched by a CUDA graph (as with torch.compile's CUDA graphs): those
 * not in graph 3 are graph 7's, launched every 32 records */
static bool all_graphs;

/* Record g of the workload at time t: a copy, a synchronisation, a memory event or a kernel. */
static void make(union rec *r, uint64_t g, uint64_t t, char (*names)[48])
{
    static const uint8_t copies[4][3] = {
        {CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
         CUPTI_ACTIVITY_MEMORY_KIND_DEVICE},
        {CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
         CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE},
        {CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
         CUPTI_ACTIVITY_MEMORY_KIND_DEVICE},
        {CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
         CUPTI_ACTIVITY_MEMORY_KIND_PINNED},
    };
    static const CUpti_ActivitySynchronizationType syncs[4] = {
        CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE,
        CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE,
        CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE,
        CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT};
    memset(r, 0, sizeof(*r));
    if (g % 50 == 49) {
        const uint8_t *c = copies[(g / 50) % 4];
        r->m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
        r->m.copyKind = c[0];
        r->m.srcKind = c[1];
        r->m.dstKind = c[2];
        r->m.start = t;
        r->m.end = t + 400;
        r->m.bytes = 4096;
    } else if (g % 100 == 37) {
        r->s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
        r->s.type = syncs[(g / 100) % 4];
        r->s.start = t;
        r->s.end = t + 200;
    } else if (g % 200 == 11) {
        r->mem.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
        r->mem.memoryOperationType = (g / 200) % 2
                                         ? CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE
                                         : CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
        r->mem.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
        r->mem.bytes = 1 << 20;
        r->mem.timestamp = t;
    } else {
        r->k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        r->k.start = t;
        r->k.end = t + 900 + (g % 7) * 100;
        r->k.name = names[(g * 7919) % N_NAMES];
        r->k.graphId = g % 64 == 5 ? 3 : 0;
        r->k.graphNodeId = g % 128 == 5 ? 1 : 2; /* graph 3: a launch every other of its kernels */
        if (all_graphs && r->k.graphId == 0) {   /* graph 7: its first kernel (g 0) is node 1 */
            r->k.graphId = 7;
            r->k.graphNodeId = g % 32 + 1;
        }
    }
}

/* Adds record r to the counts the aggregation must give (for one pass, outside the timing). */
static void expect(const union rec *r)
{
    switch (r->k.kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        want[CG_AGG_N_KERNELS]++;
        want[CG_AGG_N_GRAPH_KERNELS] += r->k.graphId != 0;
        want[CG_AGG_N_GRAPH_LAUNCHES] += r->k.graphId != 0 && r->k.graphNodeId == 1;
        break;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
        want[CG_AGG_N_COPIES]++;
        want[CG_AGG_N_COPY_NS] += (int64_t)(r->m.end - r->m.start); /* copies never overlap */
        if (r->m.copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH &&
            r->m.dstKind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE) {
            want[CG_AGG_N_DTOH_PAGEABLE]++;
            want[CG_AGG_N_DTOH_PAGEABLE_BYTES] += (int64_t)r->m.bytes;
        }
        break;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
        want[r->s.type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE
                 ? CG_AGG_N_SYNC_STREAM
             : r->s.type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE
                 ? CG_AGG_N_SYNC_EVENT
             : r->s.type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE
                 ? CG_AGG_N_SYNC_CONTEXT
                 : CG_AGG_N_SYNC_WAIT]++;
        if (r->s.type != CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT)
            want[CG_AGG_N_SYNC_NS] += (int64_t)(r->s.end - r->s.start);
        break;
    case CUPTI_ACTIVITY_KIND_MEMORY2:
        want[r->mem.memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION
                 ? CG_AGG_N_ALLOCS
                 : CG_AGG_N_FREES]++;
        break;
    default:
        break;
    }
}

/* Rewrites the buffer's records for pass p (CUPTI has just written a buffer when we read it,
 * so this also leaves it warm in the cache, as it is in the library). */
static void fill(union rec *recs, size_t n, uint64_t p, char (*names)[48])
{
    for (uint64_t i = 0; i < n; i++) {
        uint64_t g = p * n + i;
        make(&recs[i], g, 1000000 + g * 1000 + (g % 4) * 300, names); /* 4 streams, overlapping */
    }
}

/* The duration of a kernel or a copy (the records whose ops are timed), else 0. */
static inline int64_t duration(const union rec *r)
{
    if (r->k.kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
        return (int64_t)(r->k.end - r->k.start);
    if (r->k.kind == CUPTI_ACTIVITY_KIND_MEMCPY)
        return (int64_t)(r->m.end - r->m.start);
    return 0;
}

/* The bare loop: the sum of the kernels' and copies' durations. */
__attribute__((noinline)) static int64_t bare_sum(const union rec *recs, size_t n)
{
    int64_t sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += duration(&recs[i]);
    return sum;
}

/* The name loop: the bare loop also reading each kernel's name pointer (in the record's second
 * cache line), which any per-kernel aggregation must: the memory floor of the aggregation. */
__attribute__((noinline)) static int64_t bare_sum_names(const union rec *recs, size_t n)
{
    int64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        sum += duration(&recs[i]);
        if (recs[i].k.kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
            sum += (int64_t)((uintptr_t)recs[i].k.name & 1);
    }
    return sum;
}

/* The pointer pass: what the name loop reads, through the records' pointers (its sum kept in
 * pointer_sum). */
static int64_t pointer_sum;
static void pointer_pass(struct cg_agg *g, const CUpti_Activity *const *recs, size_t n)
{
    (void)g;
    int64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        const union rec *r = (const union rec *)(const void *)recs[i];
        sum += duration(r);
        if (r->k.kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
            sum += (int64_t)((uintptr_t)r->k.name & 1);
    }
    pointer_sum += sum;
}

typedef void records_fn(struct cg_agg *, const CUpti_Activity *const *, size_t);
static records_fn *volatile aggregation_fn = cg_agg_records, *volatile pointer_fn = pointer_pass;

/* The aggregation loop, or (fn pointer_fn) the pointer pass: the same records, handed over in
 * batches of pointers to a function the compiler cannot see. */
__attribute__((noinline)) static void aggregate(struct cg_agg *g, const union rec *recs, size_t n,
                                                records_fn *fn)
{
    const CUpti_Activity *batch[BATCH];
    for (size_t i = 0; i < n; i += BATCH) {
        size_t m = n - i < BATCH ? n - i : BATCH;
        for (size_t j = 0; j < m; j++)
            batch[j] = (const CUpti_Activity *)(const void *)&recs[i + j];
        fn(g, batch, m);
    }
}

int main(int argc, char **argv)
{
    /* --comm: one kernel name in 20 is a communication kernel's (NCCL's), as in data-parallel
     * training, so compute time is kept apart from busy time and every record takes the general
     * path */
    bool comm = argc > 1 && strcmp(argv[1], "--comm") == 0;
    all_graphs = argc > 1 && strcmp(argv[1], "--graphs") == 0;
    const size_t per_buf = BUFFER_BYTES / sizeof(union rec);
    union rec *recs = aligned_alloc(64, per_buf * sizeof(union rec));
    /* The kernel names at a fixed address, which the system gives when it is free (under valgrind
     * too): the op table hashes their addresses, so in the binary's data or on the heap the work
     * (and the instruction count under callgrind) would move with the layout of whatever is
     * linked in. */
    char(*names)[48] =
        mmap(NAMES_AT, NAMES_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (recs == NULL || names == MAP_FAILED)
        return 1;
    for (int i = 0; i < N_NAMES; i++)
        snprintf(names[i], sizeof(names[i]),
                 comm && i % 20 == 19 ? "_Z17ncclDevKernel_%03dP4Args" : "_Z13kernel_%03dPfS_i", i);
    double agg_s[REPEATS], bare_s[REPEATS], names_s[REPEATS], pointers_s[REPEATS];
    for (int r = 0; r < REPEATS; r++) {
        struct cg_agg g;
        if (cg_agg_new(&g, 1) != 0)
            return 1;
        bare_s[r] = agg_s[r] = names_s[r] = pointers_s[r] = 0.0;
        int64_t counted = 0; /* bare sums of the steps whose ops count (after the warm-up) */
        for (uint64_t p = 0; p < N_BUFFERS; p++) {
            /* one step per buffer, as NVTX reports it before its records arrive */
            uint64_t t_begin = 1000000 + p * per_buf * 1000;
            cg_agg_step_begin(&g, (int64_t)p, t_begin);
            cg_agg_step_end(&g, (int64_t)p, t_begin + per_buf * 1000 - 1);

            fill(recs, per_buf, p, names);
            if (r == 0)
                for (size_t i = 0; i < per_buf; i++)
                    expect(&recs[i]);
            double t0 = cpu_now_s();
            int64_t sum = bare_sum(recs, per_buf);
            bare_s[r] += cpu_now_s() - t0;
            if (p >= 1)
                counted += sum;

            fill(recs, per_buf, p, names);
            t0 = cpu_now_s();
            int64_t with_names = bare_sum_names(recs, per_buf);
            names_s[r] += cpu_now_s() - t0;
            if (with_names < sum) /* the names are even addresses: never */
                return 1;

            fill(recs, per_buf, p, names);
            pointer_sum = 0;
            t0 = cpu_now_s();
            aggregate(NULL, recs, per_buf, pointer_fn);
            pointers_s[r] += cpu_now_s() - t0;
            if (pointer_sum != with_names)
                return 1;

            fill(recs, per_buf, p, names);
            t0 = cpu_now_s();
            aggregate(&g, recs, per_buf, aggregation_fn);
            cg_agg_settle(&g, p + 1 == N_BUFFERS);
            agg_s[r] += cpu_now_s() - t0;
        }
        int64_t ops_ns = 0;
        for (size_t i = 0; i < g.n_ops; i++)
            ops_ns += g.ops[i].total_ns;
        if (ops_ns != counted || g.records != (int64_t)(per_buf * N_BUFFERS)) {
            fprintf(stderr, "bench_cupti_agg: op totals %" PRId64 " ns, bare loop %" PRId64
                    " ns: the loops disagree\n", ops_ns, counted);
            return 1;
        }
        int64_t busy = 0;
        for (size_t k = 0; k < g.n_steps; k++)
            busy += g.steps[k].busy_ns;
        want[CG_AGG_N_COMPUTE_NS] = busy; /* no communication: all of it */
        for (int c = 0; c < CG_AGG_COUNTS; c++) {
            int64_t got = 0;
            for (size_t k = 0; k < g.n_steps; k++)
                got += g.steps[k].count[c];
            bool bad = got != want[c];
            if (c == CG_AGG_N_COMPUTE_NS && comm)
                bad = got >= busy || got <= 0;
            else if (c == CG_AGG_N_COPY_NS) /* a copy at a step's end is clipped there */
                bad = got > want[c] || got < want[c] - 400 * N_BUFFERS;
            else if (c == CG_AGG_N_COPY_HIDDEN_NS) /* kernels run during most copies */
                bad = got <= 0 || got > want[CG_AGG_N_COPY_NS];
            if (bad) {
                fprintf(stderr,
                        "bench_cupti_agg: %s: %" PRId64 " counted, %" PRId64 " in the workload\n",
                        cg_agg_count_name((enum cg_agg_count)c), got, want[c]);
                return 1;
            }
        }
        cg_agg_release(&g);
    }
    double n = (double)per_buf * N_BUFFERS;
    double agg = cg_bench_median(agg_s, REPEATS), bare = cg_bench_median(bare_s, REPEATS);
    double with_names = cg_bench_median(names_s, REPEATS);
    double pointers = cg_bench_median(pointers_s, REPEATS);
    printf("bench_cupti_agg: %.0f records in %d buffers of %zu MiB (%zu-byte kernel records), "
           "%d kernel names%s, median of %d, thread CPU time\n",
           n, N_BUFFERS, BUFFER_BYTES >> 20, sizeof(CUpti_ActivityKernel10), N_NAMES,
           comm         ? " (1 in 20 a communication kernel's)"
           : all_graphs ? " (every kernel launched by a CUDA graph)"
                        : "",
           REPEATS);
    printf("  %-40s %7.1f M records/s  %6.2f ns/record\n",
           "aggregation (attribution, union, ops, counts)", n / agg / 1e6, agg / n * 1e9);
    printf("  %-40s %7.1f M records/s  %6.2f ns/record\n", "bare loop (sum of durations)",
           n / bare / 1e6, bare / n * 1e9);
    printf("  %-40s %7.1f M records/s  %6.2f ns/record\n", "name loop (bare, reading kernel names)",
           n / with_names / 1e6, with_names / n * 1e9);
    printf("  aggregation / name loop speed: %.2f (target >= 0.8); %.1f M records/s (target >= "
           "20)\n",
           with_names / agg, n / agg / 1e6);
    printf("  aggregation / bare loop speed: %.2f; name loop / bare loop speed: %.2f\n", bare / agg,
           bare / with_names);
    printf("  %-40s %7.1f M records/s  %6.2f ns/record\n",
           "pointer pass (name loop, via pointers)", n / pointers / 1e6, pointers / n * 1e9);
    printf("  aggregation / pointer pass speed: %.2f; pointer pass / name loop speed: %.2f\n",
           pointers / agg, with_names / pointers);
    munmap(names, NAMES_BYTES);
    free(recs);
    return 0;
}

#else

int main(void)
{
    printf("bench_cupti_agg: built without CUPTI headers\n");
    return 0;
}

#endif
