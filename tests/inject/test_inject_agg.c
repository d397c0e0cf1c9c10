/*
 * test_inject_agg: the injection library's record aggregation (aggregate.h, from its core,
 * canary-inject-core) fed with synthetic records of the installed cupti.h types: attribution to
 * steps, the busy-time union with overlapping and out-of-order kernels, peak memory from
 * out-of-order allocation and release records, zero timestamps, bounded memory, copy names, the
 * shard's counters (records inside and outside every step, late memory events, CUPTI overhead), ops
 * counted only in the measured window, the running step bounded by the delivery horizon, the
 * per-step counts (kernels and graph kernels, synchronisations by type and their blocked time,
 * copies and device-to-pageable copies with their bytes, allocations and releases by timestamp,
 * JIT records, module loads: warm-up steps included, records outside every step in none), and
 * the hot path (records in the current step, in time order) checked against a brute-force
 * reference on seeded streams, one record at a time and in batches.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#if CG_HAVE_CUPTI

#include "aggregate.h"
#include "synthetic.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char kernel_a[] = "_Z8kernel_av";
static const char kernel_b[] = "_Z8kernel_bv";

static void kernel(struct cg_agg *a, const char *name, uint64_t start, uint64_t end)
{
    cg_synth_kernel(a, name, 7, start, end);
}

/* A copy whose host side (if any) is pageable memory (HtoD) or pinned memory (DtoH). */
static void copy(struct cg_agg *a, uint8_t kind, uint64_t start, uint64_t end)
{
    uint8_t src = kind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD ? CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE
                                                          : CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    uint8_t dst = kind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH ? CUPTI_ACTIVITY_MEMORY_KIND_PINNED
                                                          : CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    cg_synth_copy(a, kind, src, dst, 7, start, end, 64);
}

static void mem(struct cg_agg *a, uint32_t dev, bool alloc, uint64_t bytes, uint64_t ts)
{
    cg_synth_memory(a, dev, alloc, bytes, ts);
}

static int64_t count(const struct cg_agg *a, int64_t step, enum cg_agg_count c);

static const struct cg_agg_op *op(const struct cg_agg *a, const char *name)
{
    for (size_t i = 0; i < a->n_ops; i++)
        if (strcmp(a->ops[i].name, name) == 0)
            return &a->ops[i];
    return NULL;
}

static void test_agg__records_are_attributed_to_steps_after_warmup(void **state)
{
    (void)state;
    struct cg_agg a;
    assert_int_equal(cg_agg_new(&a, 1), 0);
    cg_agg_step_begin(&a, 0, 1000);
    kernel(&a, kernel_a, 1100, 1200); /* warm-up step: busy time only */
    cg_agg_step_end(&a, 0, 2000);
    kernel(&a, kernel_a, 2500, 2600); /* between steps */
    cg_agg_step_begin(&a, 1, 3000);
    kernel(&a, kernel_a, 3100, 3300);
    kernel(&a, kernel_b, 3500, 3600);
    copy(&a, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 3700, 3800);
    cg_agg_step_end(&a, 1, 4000);
    cg_agg_settle(&a, true);

    assert_int_equal(a.n_ops, 3);
    assert_int_equal(op(&a, kernel_a)->calls, 1);
    assert_int_equal(op(&a, kernel_a)->total_ns, 200);
    assert_int_equal(op(&a, kernel_b)->total_ns, 100);
    assert_int_equal(op(&a, "memcpy HtoD pageable")->kind, CG_AGG_MEMCPY);
    assert_int_equal(op(&a, "memcpy HtoD pageable")->total_ns, 100);
    assert_int_equal(a.outside_steps, 1);
    assert_int_equal(a.steps[0].busy_ns, 100);
    assert_int_equal(a.steps[1].busy_ns, 300); /* kernels only, copies are not busy time */
    cg_agg_release(&a);
}

static void test_agg__busy_time_is_the_union_of_overlapping_kernels(void **state)
{
    (void)state;
    struct cg_agg a;
    assert_int_equal(cg_agg_new(&a, 0), 0);
    cg_agg_step_begin(&a, 0, 1000);
    kernel(&a, kernel_a, 2000, 4000);
    kernel(&a, kernel_b, 3000, 5000);  /* overlaps on another stream */
    kernel(&a, kernel_a, 4500, 4700);  /* inside */
    kernel(&a, kernel_a, 6000, 7000);
    kernel(&a, kernel_b, 1500, 2100);  /* arrives late, joins the first */
    kernel(&a, kernel_b, 9500, 10500); /* runs past the step's end: clipped */
    cg_agg_step_end(&a, 0, 10000);
    cg_agg_step_begin(&a, 1, 20000);
    cg_agg_step_end(&a, 1, 30000);
    cg_agg_settle(&a, true);
    assert_int_equal(a.steps[0].busy_ns, 3500 + 1000 + 500);
    assert_int_equal(a.steps[1].busy_ns, 0);
    assert_int_equal(op(&a, kernel_a)->calls, 3);
    assert_int_equal(op(&a, kernel_b)->calls, 3);
    cg_agg_release(&a);
}

/* Communication (NCCL) kernels on one stream overlapping compute kernels on another: busy time
 * is the union of both, compute time the union of the compute ones, and the communication no
 * compute overlapped (exposed) their difference; copies and sets have their own union. Step 0
 * (before any communication) has compute equal to busy; the first NCCL kernel comes in a batch
 * of compute kernels of the measured step, which leaves the hot path for the general one, and the
 * records after it take the hot path's copy that keeps compute apart. */
static void test_agg__communication_overlapped_by_compute_and_copies(void **state)
{
    (void)state;
    static const char nccl[] = "_Z32ncclDevKernel_AllReduce_Sum_f32P20ncclDevKernelArgs";
    struct cg_agg a;
    assert_int_equal(cg_agg_new(&a, 1), 0);
    cg_agg_step_begin(&a, 0, 1000);
    cg_synth_kernel(&a, kernel_a, 7, 1100, 1500);
    cg_synth_kernel(&a, kernel_b, 8, 1400, 1600);
    cg_agg_step_end(&a, 0, 2000);
    cg_agg_step_begin(&a, 1, 10000);
    /* compute on stream 7: [10100, 10500) [10600, 11000) [12000, 12100) */
    CUpti_ActivityKernel10 k[7];
    memset(k, 0, sizeof(k));
    static const struct {
        const char *name;
        uint32_t stream;
        uint64_t start, end;
    } recs[] = {
        {kernel_a, 7, 10100, 10500}, {kernel_b, 7, 10600, 11000},
        {nccl, 9, 10400, 11500}, /* overlapped by [10400, 10500) and [10600, 11000) */
        {kernel_a, 7, 12000, 12100}, {nccl, 9, 12050, 12300}, /* [12100, 12300) exposed */
        {kernel_b, 8, 11400, 11450}, /* late, inside the first all-reduce */
        {nccl, 9, 13000, 13100},     /* nothing overlaps it */
    };
    const CUpti_Activity *ptrs[7];
    for (int i = 0; i < 7; i++) {
        k[i].kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        k[i].name = recs[i].name;
        k[i].streamId = recs[i].stream;
        k[i].start = recs[i].start;
        k[i].end = recs[i].end;
        ptrs[i] = (const CUpti_Activity *)(const void *)&k[i];
    }
    cg_agg_records(&a, ptrs, 7);
    copy(&a, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 10050, 10300);
    copy(&a, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, 10200, 10350); /* overlaps the first */
    cg_synth_peer_copy(&a, 9, 14000, 14100, 64);
    cg_agg_step_end(&a, 1, 15000);
    cg_agg_settle(&a, true);
    assert_true(a.lanes[0]->comm);
    assert_int_equal(a.steps[0].busy_ns, 500);
    assert_int_equal(count(&a, 0, CG_AGG_N_COMPUTE_NS), 500);
    int64_t compute = 400 + 400 + 100 + 50;
    int64_t busy = (11500 - 10100) + (12300 - 12000) + 100;
    assert_int_equal(count(&a, 1, CG_AGG_N_COMPUTE_NS), compute);
    assert_int_equal(a.steps[1].busy_ns, busy);
    assert_int_equal(busy - compute, 100 + 400 + 50 + 200 + 100); /* exposed communication */
    assert_int_equal(count(&a, 1, CG_AGG_N_COPY_NS), (10350 - 10050) + 100);
    assert_int_equal(count(&a, 1, CG_AGG_N_COPY_HIDDEN_NS), 10350 - 10100); /* peer: exposed */
    assert_int_equal(count(&a, 1, CG_AGG_N_KERNELS), 7);
    assert_int_equal(op(&a, nccl)->calls, 3);
    assert_int_equal(op(&a, nccl)->total_ns, 1100 + 250 + 100);
    assert_int_equal(op(&a, kernel_a)->calls, 2);
    cg_agg_release(&a);
}

/* Kernel records of kernel_a in recs[from, from + n): [start + step * j, ... + len). */
static void kernels_at(CUpti_ActivityKernel10 *recs, size_t from, size_t n, uint64_t start,
                       uint64_t step, uint64_t len)
{
    for (size_t j = 0; j < n; j++) {
        CUpti_ActivityKernel10 *k = &recs[from + j];
        memset(k, 0, sizeof(*k));
        k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        k->name = kernel_a;
        k->start = start + step * j;
        k->end = k->start + len;
    }
}

/* The busy time of step 0 (from 1000) when recs[0, n) are handed over batch at a time. */
static int64_t busy_in_batches(const CUpti_ActivityKernel10 *recs, size_t n, size_t batch)
{
    static const CUpti_Activity *ptrs[1024];
    assert_true(n <= 1024);
    for (size_t i = 0; i < n; i++)
        ptrs[i] = (const CUpti_Activity *)(const void *)&recs[i];
    struct cg_agg a;
    assert_int_equal(cg_agg_new(&a, 0), 0);
    cg_agg_step_begin(&a, 0, 1000);
    for (size_t i = 0; i < n; i += batch)
        cg_agg_records(&a, ptrs + i, n - i < batch ? n - i : batch);
    cg_agg_step_end(&a, 0, 100000);
    cg_agg_settle(&a, true);
    int64_t busy = a.steps[0].busy_ns;
    assert_int_equal(count(&a, 0, CG_AGG_N_COMPUTE_NS), busy);
    cg_agg_release(&a);
    return busy;
}

/* The busy ring's earlier half settles when the ring is full and a new interval needs room,
 * whatever the batches: a kernel less than half a ring late, in a gap, still counts. Here 300
 * intervals are held, 424 kernels inside the last one extend nothing, and one comes late. */
static void test_agg__the_ring_settles_when_full_whatever_the_batches(void **state)
{
    (void)state;
    static CUpti_ActivityKernel10 recs[725];
    kernels_at(recs, 0, 300, 10000, 10, 5); /* [10000, 10005) ... [12990, 12995) */
    kernels_at(recs, 300, 424, 12990, 0, 1);
    kernels_at(recs, 724, 1, 11006, 0, 2); /* in the gap [11005, 11010) */
    static const size_t batches[] = {1, 255, 256, 300, 725};
    for (size_t b = 0; b < sizeof(batches) / sizeof(batches[0]); b++)
        if (busy_in_batches(recs, 725, batches[b]) != 300 * 5 + 2)
            fail_msg("batches of %zu: busy %lld, not %d", batches[b],
                     (long long)busy_in_batches(recs, 725, batches[b]), 300 * 5 + 2);
}

/* A kernel of no duration adds no interval to the busy ring (it would fill the ring sooner and
 * settle a kernel's gap before a late kernel could fill it). */
static void test_agg__kernels_of_no_duration_take_no_room(void **state)
{
    (void)state;
    static CUpti_ActivityKernel10 recs[514];
    kernels_at(recs, 0, 300, 10000, 10, 5);
    kernels_at(recs, 300, 212, 13000, 10, 0); /* no duration, each after the last interval */
    kernels_at(recs, 512, 1, 20000, 0, 5);
    kernels_at(recs, 513, 1, 11006, 0, 2); /* in the gap [11005, 11010) */
    static const size_t batches[] = {1, 256, 514};
    for (size_t b = 0; b < sizeof(batches) / sizeof(batches[0]); b++)
        if (busy_in_batches(recs, 514, batches[b]) != 300 * 5 + 5 + 2)
            fail_msg("batches of %zu: busy %lld, not %d", batches[b],
                     (long long)busy_in_batches(recs, 514, batches[b]), 300 * 5 + 5 + 2);
}

/* CANARY_GATE_COMM_KERNELS' name parts make other kernels communication too (NCCL's stay); a
 * list that is not one says which part and why, and leaves NCCL's only. */
static void test_agg__communication_kernels_named_by_the_user(void **state)
{
    (void)state;
    static const char ub[] = "_Z25userbuffers_fp16_sum_inplace_gpu_rwPv";
    char why[160];
    assert_false(cg_agg_is_comm(ub));
    assert_int_equal(cg_agg_comm_kernels("userbuffers,cross_device_reduce", why, sizeof(why)), 0);
    assert_true(cg_agg_is_comm(ub));
    assert_true(cg_agg_is_comm("cross_device_reduce_2stage<float>"));
    assert_true(cg_agg_is_comm("ncclDevKernel_AllGather_RING_LL"));
    assert_false(cg_agg_is_comm(kernel_a));
    assert_false(cg_agg_is_comm(NULL));

    /* a user's communication kernel overlapped by compute: busy [100, 700), compute [100, 300)
     * and [600, 700), the rest communication no compute overlapped */
    struct cg_agg a;
    assert_int_equal(cg_agg_new(&a, 0), 0);
    cg_agg_step_begin(&a, 0, 0);
    cg_synth_kernel(&a, kernel_a, 7, 100, 300);
    cg_synth_kernel(&a, ub, 9, 200, 650);
    cg_synth_kernel(&a, kernel_b, 7, 600, 700);
    cg_agg_step_end(&a, 0, 1000);
    cg_agg_settle(&a, true);
    assert_true(a.lanes[0]->comm);
    assert_int_equal(a.steps[0].busy_ns, 600);
    assert_int_equal(count(&a, 0, CG_AGG_N_COMPUTE_NS), 200 + 100);
    cg_agg_release(&a);

    static const struct {
        const char *list, *why;
    } bad[] = {
        {"userbuffers,", "'': an empty name part"},
        {",userbuffers", "'': an empty name part"},
        {"a,,b", "'': an empty name part"},
        {"user buffers", "'user buffers': a space or a character not printable ASCII"},
        {"a,b,c,d,e,f,g,h,i", "'i': more than 8 name parts"},
        {"0123456789012345678901234567890123456789012345678901234567890123",
         "'0123456789012345678901234567890123456789...': a name part longer than 63 bytes"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(cg_agg_comm_kernels("userbuffers", why, sizeof(why)), 0);
        why[0] = '\0';
        assert_int_equal(cg_agg_comm_kernels(bad[i].list, why, sizeof(why)), -1);
        if (strncmp(why, bad[i].why, strlen(bad[i].why)) != 0 ||
            strstr(why, "(communication kernels are NCCL's only)") == NULL)
            fail_msg("'%s': %s", bad[i].list, why);
        assert_false(cg_agg_is_comm(ub)); /* NCCL's only now */
        assert_true(cg_agg_is_comm("ncclKernel_AllReduce"));
    }
    assert_int_equal(cg_agg_comm_kernels("userbuffers", why, sizeof(why)), 0);
    assert_int_equal(cg_agg_comm_kernels(NULL, why, sizeof(why)), 0); /* unset: NCCL's only */
    assert_false(cg_agg_is_comm(ub));
    assert_int_equal(cg_agg_comm_kernels("", why, sizeof(why)), 0);
    assert_false(cg_agg_is_comm(ub));
}

/* One copy over [2000, 2000 + 50 n), its record first, then n kernels of 10 ns inside it, 50 ns
 * apart: 10 n ns of the copy hidden. */
static void copy_over_kernels(struct cg_agg *a, int n)
{
    copy(a, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 2000, 2000 + 50 * (uint64_t)n);
    for (int i = 0; i < n; i++)
        kernel(a, kernel_a, 2000 + 50 * (uint64_t)i + 20, 2000 + 50 * (uint64_t)i + 30);
}

/* A long copy with many short kernels inside it, more than the busy ring holds, so kernel
 * intervals settle long before the copy does: its hidden time is still exact, whether the copy's
 * record came before the kernels' or (a second step) after them; a copy during the idle gap
 * between two kernels has none. */
static void test_agg__copy_time_some_kernel_ran_in_is_exact(void **state)
{
    (void)state;
    struct cg_agg a;
    assert_int_equal(cg_agg_new(&a, 0), 0);
    const int n = 2 * CG_AGG_INTERVALS; /* the busy ring and the kept ones hold them all */
    cg_agg_step_begin(&a, 0, 1000);
    copy_over_kernels(&a, n);
    cg_agg_step_end(&a, 0, 200000);
    cg_agg_step_begin(&a, 1, 300000);
    for (int i = 0; i < n; i++)
        kernel(&a, kernel_b, 301000 + 50 * (uint64_t)i, 301000 + 50 * (uint64_t)i + 10);
    copy(&a, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, 301000 + 5, 301000 + 50 * (uint64_t)n);
    copy(&a, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, 301000 + 20, 301000 + 40); /* in the union already */
    cg_agg_step_end(&a, 1, 500000);
    cg_agg_step_begin(&a, 2, 600000);
    kernel(&a, kernel_a, 600100, 600200);
    copy(&a, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 600250, 600300);
    kernel(&a, kernel_a, 600400, 600500);
    cg_agg_step_end(&a, 2, 700000);
    cg_agg_settle(&a, true);
    assert_int_equal(count(&a, 0, CG_AGG_N_COPY_NS), 50 * n);
    assert_int_equal(count(&a, 0, CG_AGG_N_COPY_HIDDEN_NS), 10 * n);
    assert_int_equal(count(&a, 1, CG_AGG_N_COPY_NS), 50 * n - 5);
    assert_int_equal(count(&a, 1, CG_AGG_N_COPY_HIDDEN_NS), 10 * n - 5);
    assert_int_equal(count(&a, 2, CG_AGG_N_COPY_NS), 50);
    assert_int_equal(count(&a, 2, CG_AGG_N_COPY_HIDDEN_NS), 0);
    assert_true(a.lanes[0]->kept_kernels.len <= CG_AGG_SETTLED &&
                a.lanes[0]->kept_copies.len <= CG_AGG_SETTLED);
    cg_agg_release(&a);
}

/* The copies' hidden time whichever of a copy and a kernel settles last: more kernel intervals
 * under one copy than the kept ones and the busy ring hold; more copies inside one kernel than
 * the copies' ring holds, the kernel's record after theirs; a copy whose record comes after the
 * kernels it overlapped settled, before any copy was seen; a kernel whose record comes after the
 * copy it overlapped settled. */
static void test_agg__copy_hidden_time_whichever_settles_last(void **state)
{
    (void)state;
    struct cg_agg a;
    assert_int_equal(cg_agg_new(&a, 0), 0);
    const int n = 3000;
    cg_agg_step_begin(&a, 0, 1000);
    copy_over_kernels(&a, n);
    cg_agg_step_end(&a, 0, 1000000);
    cg_agg_step_begin(&a, 1, 2000000);
    for (int i = 0; i < 600; i++) /* the kernel's record comes after them */
        copy(&a, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, 2002000 + 20 * (uint64_t)i,
             2002000 + 20 * (uint64_t)i + 10);
    kernel(&a, kernel_a, 2001500, 2014000);
    cg_agg_step_end(&a, 1, 3000000);
    cg_agg_settle(&a, true);
    assert_int_equal(count(&a, 0, CG_AGG_N_COPY_HIDDEN_NS), 10 * n);
    assert_int_equal(count(&a, 1, CG_AGG_N_COPY_HIDDEN_NS), 6000);
    cg_agg_release(&a);

    assert_int_equal(cg_agg_new(&a, 0), 0);
    cg_agg_step_begin(&a, 0, 1000);
    kernel(&a, kernel_a, 1100, 1200);
    kernel(&a, kernel_a, 1300, 1400);
    cg_agg_step_end(&a, 0, 2000);
    cg_agg_step_begin(&a, 1, 3000);
    cg_agg_settle(&a, false);                              /* the kernels settle */
    copy(&a, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 1150, 1350); /* then the first copy */
    copy(&a, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 1500, 1600);
    cg_agg_step_begin(&a, 2, 4000);
    cg_agg_settle(&a, false);         /* the copies settle */
    kernel(&a, kernel_a, 1550, 1580); /* then a kernel under the second */
    cg_agg_settle(&a, true);
    assert_int_equal(count(&a, 0, CG_AGG_N_COPY_NS), 200 + 100);
    assert_int_equal(count(&a, 0, CG_AGG_N_COPY_HIDDEN_NS), 50 + 50 + 30);
    cg_agg_release(&a);
}

static void test_agg__busy_union_stays_bounded_and_exact_in_order(void **state)
{
    (void)state;
    struct cg_agg a;
    assert_int_equal(cg_agg_new(&a, 0), 0);
    cg_agg_step_begin(&a, 0, 1000);
    for (uint64_t i = 0; i < 5000; i++) /* 5000 disjoint kernels, 20 ns apart */
        kernel(&a, kernel_a, 2000 + i * 100, 2000 + i * 100 + 80);
    assert_true(a.lanes[0]->busy.len <= CG_AGG_INTERVALS);
    cg_agg_step_end(&a, 0, 2000 + 5000 * 100);
    cg_agg_settle(&a, true);
    assert_int_equal(a.steps[0].busy_ns, 5000 * 80);
    cg_agg_release(&a);
}

static void test_agg__peak_memory_from_out_of_order_records(void **state)
{
    (void)state;
    struct cg_agg a;
    assert_int_equal(cg_agg_new(&a, 0), 0);
    /* in time: +100 @10, +200 @20, -100 @30, +50 @40, -200 @50, -50 @60: peak 300 at 20 */
    mem(&a, 0, false, 100, 30);
    mem(&a, 0, true, 50, 40);
    mem(&a, 0, true, 200, 20);
    mem(&a, 0, false, 50, 60);
    mem(&a, 0, true, 100, 10);
    mem(&a, 0, false, 200, 50);
    mem(&a, 1, true, 1000, 15);
    cg_agg_settle(&a, true);
    assert_int_equal(cg_agg_peak(&a, 0), 300);
    assert_int_equal(cg_agg_peak(&a, 1), 1000);
    assert_int_equal(cg_agg_peak(&a, 7), -1);
    assert_int_equal(a.devices[0].current, 0);
    cg_agg_release(&a);
}

static void test_agg__zero_timestamps_are_counted_and_skipped(void **state)
{
    (void)state;
    struct cg_agg a;
    assert_int_equal(cg_agg_new(&a, 0), 0);
    cg_agg_step_begin(&a, 0, 1000);
    kernel(&a, kernel_a, 0, 1500);
    kernel(&a, kernel_a, 1600, 0);
    kernel(&a, kernel_a, 1700, 1650);
    cg_agg_step_end(&a, 0, 2000);
    cg_agg_settle(&a, true);
    assert_int_equal(a.zero_ts, 3);
    assert_int_equal(a.records, 3);
    assert_int_equal(a.n_ops, 0);
    assert_int_equal(a.steps[0].busy_ns, 0);
    cg_agg_release(&a);
}

static void test_agg__many_kernel_names_grow_the_op_table(void **state)
{
    (void)state;
    static char names[3000][16];
    struct cg_agg a;
    assert_int_equal(cg_agg_new(&a, 0), 0);
    cg_agg_step_begin(&a, 0, 1);
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 3000; i++) {
            snprintf(names[i], sizeof(names[i]), "k%d", i);
            kernel(&a, names[i], 10 + (uint64_t)i, 11 + (uint64_t)i);
        }
    cg_agg_settle(&a, true);
    assert_int_equal(a.n_ops, 3000);
    for (size_t i = 0; i < a.n_ops; i++)
        assert_int_equal(a.ops[i].calls, 2);
    cg_agg_release(&a);
}

/* --- the hot path against a reference ------------------------------------------------------ */

struct ref_rec {
    bool copy;
    uint64_t start, end;
    int name; /* kernel name index */
};

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

#define REF_STEPS 12
#define REF_NAMES 40
#define REF_RECS 12000

static const char *ref_names[REF_NAMES];

/* A seeded stream: 4 streams of kernels with gaps, some copies, some records between steps,
 * a few zero timestamps and zero-length kernels, copies stamped in the step before (as a late
 * record of another step moves the window away and back), and records swapped with their
 * neighbour (out of time order). */
static size_t ref_stream(uint64_t seed, struct ref_rec *r, uint64_t *step_start,
                         uint64_t *step_end)
{
    size_t n = 0;
    uint64_t t = 1000;
    for (int k = 0; k < REF_STEPS; k++) {
        step_start[k] = t;
        for (int i = 0; i < REF_RECS / REF_STEPS; i++) {
            t += 50 + rng_next(&seed) % 400;
            uint64_t dur = 20 + rng_next(&seed) % 1500; /* overlaps the next ones often */
            r[n] = (struct ref_rec){rng_next(&seed) % 40 == 0, t, t + dur,
                                    (int)(rng_next(&seed) % REF_NAMES)};
            if (rng_next(&seed) % 500 == 0)
                r[n].start = 0; /* a zero timestamp */
            else if (rng_next(&seed) % 300 == 0)
                r[n].end = r[n].start; /* zero length */
            else if (k > 0 && rng_next(&seed) % 100 == 0)
                r[n] = (struct ref_rec){true, step_start[k - 1] + 10, step_start[k - 1] + 20, 0};
            n++;
        }
        step_end[k] = t + 200;
        t += 3000; /* idle between steps; the records there belong to no step */
        r[n++] = (struct ref_rec){false, t - 1500, t - 1000, 0};
    }
    for (size_t i = 1; i < n; i++) /* a few neighbours swapped */
        if (rng_next(&seed) % 7 == 0) {
            struct ref_rec x = r[i];
            r[i] = r[i - 1];
            r[i - 1] = x;
        }
    return n;
}

static int cmp_u64_pair(const void *x, const void *y)
{
    const uint64_t *p = x, *q = y;
    return (p[0] > q[0]) - (p[0] < q[0]);
}

/* The reference's communication kernels (their names hold "nccl"). */
static bool ref_comm(int name)
{
    return name % 8 == 7;
}

enum ref_union { REF_KERNELS, REF_COMPUTE, REF_COPIES, REF_ALL };

/* Exact time of step [lo, hi] in the union of the intervals of which records, clipped to it. */
static int64_t ref_union(const struct ref_rec *r, size_t n, uint64_t lo, uint64_t hi,
                         enum ref_union which)
{
    uint64_t(*iv)[2] = malloc(n * sizeof(*iv));
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if ((which == REF_ALL ? true
             : which == REF_COPIES
                 ? r[i].copy
                 : !r[i].copy && (which == REF_KERNELS || !ref_comm(r[i].name))) &&
            r[i].start != 0 && r[i].end > r[i].start) {
            iv[m][0] = r[i].start > lo ? r[i].start : lo;
            iv[m][1] = r[i].end < hi ? r[i].end : hi;
            if (iv[m][1] > iv[m][0])
                m++;
        }
    qsort(iv, m, sizeof(*iv), cmp_u64_pair);
    int64_t busy = 0;
    uint64_t cs = 0, ce = 0;
    for (size_t i = 0; i < m; i++) {
        if (i == 0 || iv[i][0] > ce) {
            busy += (int64_t)(ce - cs);
            cs = iv[i][0];
            ce = iv[i][1];
        } else if (iv[i][1] > ce) {
            ce = iv[i][1];
        }
    }
    busy += (int64_t)(ce - cs);
    free(iv);
    return busy;
}

static void feed(struct cg_agg *a, const struct ref_rec *r, size_t n, uint64_t seed)
{
    static union {
        CUpti_ActivityKernel10 k;
        CUpti_ActivityMemcpy6 m;
    } buf[REF_RECS + REF_STEPS];
    const CUpti_Activity *ptrs[REF_RECS + REF_STEPS];
    for (size_t i = 0; i < n; i++) {
        memset(&buf[i], 0, sizeof(buf[i]));
        if (r[i].copy) {
            buf[i].m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
            buf[i].m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
            buf[i].m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
            buf[i].m.start = r[i].start;
            buf[i].m.end = r[i].end;
        } else {
            buf[i].k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
            buf[i].k.start = r[i].start;
            buf[i].k.end = r[i].end;
            buf[i].k.name = ref_names[r[i].name];
        }
        ptrs[i] = (const CUpti_Activity *)(const void *)&buf[i];
    }
    if (seed == 0) { /* one by one */
        for (size_t i = 0; i < n; i++)
            cg_agg_record(a, ptrs[i]);
        return;
    }
    for (size_t i = 0; i < n;) { /* batches of random sizes */
        size_t m = 1 + rng_next(&seed) % 700;
        if (m > n - i)
            m = n - i;
        cg_agg_records(a, ptrs + i, m);
        i += m;
    }
}

static void test_agg__hot_path_matches_a_reference(void **state)
{
    (void)state;
    static char names[REF_NAMES][16];
    static struct ref_rec r[REF_RECS + REF_STEPS];
    uint64_t step_start[REF_STEPS], step_end[REF_STEPS];
    for (int i = 0; i < REF_NAMES; i++) {
        snprintf(names[i], sizeof(names[i]), ref_comm(i) ? "ncclDevK%d" : "k%d", i);
        ref_names[i] = names[i];
    }
    for (uint64_t seed = 1; seed <= 3; seed++) {
        size_t n = ref_stream(seed * 7919, r, step_start, step_end);
        /* reference: ops of steps >= 2 (the warm-up), busy per step */
        int64_t calls[REF_NAMES] = {0}, total[REF_NAMES] = {0}, copies = 0, outside = 0;
        int64_t zero = 0, step_kernels[REF_STEPS] = {0}, step_copies[REF_STEPS] = {0};
        for (size_t i = 0; i < n; i++) {
            if (r[i].start == 0) {
                zero++;
                continue;
            }
            int k = -1;
            for (int s = 0; s < REF_STEPS; s++)
                if (r[i].start >= step_start[s] && r[i].start <= step_end[s])
                    k = s;
            if (k >= 0)
                (r[i].copy ? step_copies : step_kernels)[k]++;
            if (k < 0) {
                outside++;
            } else if (k >= 2 && r[i].copy) {
                copies++;
            } else if (k >= 2) {
                calls[r[i].name]++;
                total[r[i].name] += (int64_t)(r[i].end - r[i].start);
            }
        }
        for (uint64_t mode = 0; mode < 3; mode++) { /* one by one, two batch patterns */
            struct cg_agg a;
            assert_int_equal(cg_agg_new(&a, 2), 0);
            for (int s = 0; s < REF_STEPS; s++) {
                cg_agg_step_begin(&a, s, step_start[s]);
                cg_agg_step_end(&a, s, step_end[s]);
            }
            feed(&a, r, n, mode * 31);
            cg_agg_settle(&a, true);
            assert_int_equal(a.records, (int64_t)n);
            assert_int_equal(a.zero_ts, zero);
            assert_int_equal(a.outside_steps, outside);
            for (int s = 0; s < REF_STEPS; s++) {
                uint64_t lo = step_start[s], hi = step_end[s];
                assert_int_equal(a.steps[s].busy_ns, ref_union(r, n, lo, hi, REF_KERNELS));
                int64_t kernels = ref_union(r, n, lo, hi, REF_KERNELS);
                int64_t copies_ns = ref_union(r, n, lo, hi, REF_COPIES);
                assert_int_equal(a.steps[s].count[CG_AGG_N_COPY_NS], copies_ns);
                /* the copies' time some kernel ran in: |copies| + |kernels| - |either| */
                assert_int_equal(a.steps[s].count[CG_AGG_N_COPY_HIDDEN_NS],
                                 copies_ns + kernels - ref_union(r, n, lo, hi, REF_ALL));
                if (s >= 2) /* warm-up kernels before the first measured communication: compute */
                    assert_int_equal(a.steps[s].count[CG_AGG_N_COMPUTE_NS],
                                     ref_union(r, n, lo, hi, REF_COMPUTE));
                assert_int_equal(a.steps[s].count[CG_AGG_N_KERNELS], step_kernels[s]);
                assert_int_equal(a.steps[s].count[CG_AGG_N_COPIES], step_copies[s]);
            }
            for (int i = 0; i < REF_NAMES; i++) {
                const struct cg_agg_op *o = op(&a, names[i]);
                assert_int_equal(o ? o->calls : 0, calls[i]);
                assert_int_equal(o ? o->total_ns : 0, total[i]);
            }
            const struct cg_agg_op *c = op(&a, "memcpy HtoD pinned");
            assert_int_equal(c ? c->calls : 0, copies);
            cg_agg_release(&a);
        }
    }
}

static void test_agg__ring_settling_an_earlier_step_keeps_the_current_record(void **state)
{
    (void)state;
    struct cg_agg a;
    assert_int_equal(cg_agg_new(&a, 1), 0);
    /* warm-up step 0 fills the ring with disjoint intervals; step 1's kernels push them out
     * while the hot path is in step 1: every step-1 kernel still counts */
    cg_agg_step_begin(&a, 0, 1000);
    cg_agg_step_end(&a, 0, 1000 + 600 * 100);
    cg_agg_step_begin(&a, 1, 100000);
    cg_agg_step_end(&a, 1, 100000 + 2000 * 100);
    for (uint64_t i = 0; i < 600; i++)
        kernel(&a, kernel_a, 1000 + i * 100, 1000 + i * 100 + 50);
    for (uint64_t i = 0; i < 2000; i++)
        kernel(&a, kernel_b, 100000 + i * 100, 100000 + i * 100 + 60);
    cg_agg_settle(&a, true);
    assert_null(op(&a, kernel_a)); /* warm-up */
    assert_int_equal(op(&a, kernel_b)->calls, 2000);
    assert_int_equal(op(&a, kernel_b)->total_ns, 2000 * 60);
    assert_int_equal(a.steps[0].busy_ns, 600 * 50);
    assert_int_equal(a.steps[1].busy_ns, 2000 * 60);
    cg_agg_release(&a);
}

static void test_agg__late_records_behind_the_settled_half_are_clipped(void **state)
{
    (void)state;
    struct cg_agg a;
    assert_int_equal(cg_agg_new(&a, 0), 0);
    cg_agg_step_begin(&a, 0, 1);
    for (uint64_t i = 0; i < CG_AGG_INTERVALS + 10; i++) /* one more than fits: half settles */
        kernel(&a, kernel_a, 1000 + i * 100, 1000 + i * 100 + 50);
    assert_int_equal(a.lanes[0]->busy.len, CG_AGG_INTERVALS / 2 + 10);
    uint64_t frontier = a.lanes[0]->busy.frontier;
    assert_int_equal(frontier, 1000 + (CG_AGG_INTERVALS / 2 - 1) * 100 + 50);
    /* a late kernel over the settled part: only what lies after the frontier is new */
    kernel(&a, kernel_b, 1000, frontier + 30);
    /* a late kernel between two held intervals: exact */
    uint64_t held = 1000 + (CG_AGG_INTERVALS / 2 + 3) * 100;
    kernel(&a, kernel_b, held + 60, held + 90);
    cg_agg_step_end(&a, 0, 1000000);
    cg_agg_settle(&a, true);
    assert_int_equal(a.steps[0].busy_ns, (CG_AGG_INTERVALS + 10) * 50 + 30 + 30);
    assert_int_equal(op(&a, kernel_b)->calls, 2);
    cg_agg_release(&a);
}

static void test_agg__step_window_edges(void **state)
{
    (void)state;
    struct cg_agg a;
    assert_int_equal(cg_agg_new(&a, 0), 0);
    cg_agg_step_begin(&a, 0, 1000);
    cg_agg_step_end(&a, 0, 2000);
    cg_agg_step_begin(&a, 1, 3000); /* still running */
    kernel(&a, kernel_a, 1500, 1510); /* the window moves to step 0 */
    kernel(&a, kernel_a, 1000, 1005); /* its first nanosecond */
    kernel(&a, kernel_a, 2000, 2010); /* its last: in it, busy clipped at its end */
    kernel(&a, kernel_b, 2001, 2010); /* one past: between steps */
    kernel(&a, kernel_b, 999, 1000);  /* one before */
    kernel(&a, kernel_a, 3000, 3010); /* the running step, open-ended */
    kernel(&a, kernel_a, UINT64_MAX - 10, UINT64_MAX - 5);
    cg_agg_settle(&a, true);
    assert_int_equal(op(&a, kernel_a)->calls, 5);
    assert_null(op(&a, kernel_b));
    assert_int_equal(a.outside_steps, 2);
    assert_int_equal(a.steps[0].busy_ns, 10 + 5);
    assert_int_equal(a.steps[1].busy_ns, 10 + 5);
    cg_agg_release(&a);
}

static void overhead(struct cg_agg *a, uint64_t start, uint64_t end)
{
    CUpti_ActivityOverhead3 o;
    memset(&o, 0, sizeof(o));
    o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
    o.start = start;
    o.end = end;
    cg_agg_record(a, (const CUpti_Activity *)(const void *)&o);
}

static void test_agg__counters_for_the_shard(void **state)
{
    (void)state;
    struct cg_agg a;
    assert_int_equal(cg_agg_new(&a, 0), 0);
    cg_agg_step_begin(&a, 0, 1000);
    kernel(&a, kernel_a, 1100, 1200);                     /* inside */
    kernel(&a, kernel_a, 1300, 1400);                     /* inside, the hot path */
    cg_agg_step_end(&a, 0, 2000);
    kernel(&a, kernel_a, 2500, 2600);                     /* outside */
    cg_agg_step_begin(&a, 1, 3000);
    copy(&a, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 3100, 3200); /* inside */
    kernel(&a, kernel_b, 0, 3300);                        /* zero timestamp: neither */
    cg_agg_step_end(&a, 1, 4000);
    kernel(&a, kernel_b, 5000, 5100);                     /* outside */
    overhead(&a, 100, 350);
    overhead(&a, 400, 400);                               /* empty */
    overhead(&a, 0, 50);                                  /* no start */
    mem(&a, 0, true, 64, 3000000000ull);
    cg_agg_settle(&a, true);                              /* applied up to 3 s */
    mem(&a, 0, true, 64, 2000000000ull);                  /* older: late */
    mem(&a, 0, true, 64, 4000000000ull);
    cg_agg_settle(&a, true);
    assert_int_equal(a.records, 12);
    assert_int_equal(a.inside_steps, 3);
    assert_int_equal(a.outside_steps, 2);
    assert_int_equal(a.zero_ts, 1);
    assert_int_equal(a.late_mem, 1);
    assert_int_equal(a.overhead_ns, 250);
    assert_int_equal(cg_agg_peak(&a, 0), 192);
    cg_agg_release(&a);
}

/* Kernels in 6 steps (3 per step), warm-up 1, window end 3: only steps 1 and 2 count, whether
 * the records take the hot path or the general one, and every step keeps its busy time. */
static void test_agg__ops_count_only_in_the_measured_window(void **state)
{
    (void)state;
    for (int batch = 0; batch < 2; batch++) {
        struct cg_agg a;
        assert_int_equal(cg_agg_new(&a, 1), 0);
        cg_agg_measure(&a, 3);
        CUpti_ActivityKernel10 recs[18];
        const CUpti_Activity *ptrs[18];
        memset(recs, 0, sizeof(recs));
        for (int64_t k = 0; k < 6; k++) {
            uint64_t t0 = 10000 * (uint64_t)(k + 1);
            cg_agg_step_begin(&a, k, t0);
            cg_agg_step_end(&a, k, t0 + 5000);
            for (int j = 0; j < 3; j++) {
                CUpti_ActivityKernel10 *r = &recs[k * 3 + j];
                r->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
                r->start = t0 + 100 + 1000 * (uint64_t)j;
                r->end = r->start + 500;
                r->name = kernel_a;
                ptrs[k * 3 + j] = (const CUpti_Activity *)(const void *)r;
            }
        }
        if (batch)
            cg_agg_records(&a, ptrs, 18);
        else
            for (int i = 0; i < 18; i++)
                cg_agg_record(&a, ptrs[i]);
        cg_agg_settle(&a, true);
        assert_int_equal(op(&a, kernel_a)->calls, 6);
        assert_int_equal(op(&a, kernel_a)->total_ns, 6 * 500);
        assert_int_equal(a.inside_steps, 18);
        for (size_t k = 0; k < 6; k++)
            assert_int_equal(a.steps[k].busy_ns, 1500);
        cg_agg_release(&a);
    }
}

/* A record that starts after it was delivered is in another clock (CUPTI's default clock when
 * the timestamp callback was refused): it must not land in the step still running. */
static void test_agg__running_step_ends_at_the_delivery_horizon(void **state)
{
    (void)state;
    struct cg_agg a;
    assert_int_equal(cg_agg_new(&a, 0), 0);
    cg_agg_step_begin(&a, 0, 1000);
    cg_agg_step_end(&a, 0, 2000);
    cg_agg_step_begin(&a, 1, 3000); /* running */
    cg_agg_now(&a, 5000);
    kernel(&a, kernel_a, 3100, 3200);     /* before the horizon: in the running step */
    kernel(&a, kernel_a, 4000, 4100);     /* the hot path */
    kernel(&a, kernel_b, 5001, 5100);     /* after it: outside */
    kernel(&a, kernel_b, 1700000000000000000ull, 1700000000000001000ull); /* a wall clock */
    kernel(&a, kernel_a, 5000, 5010);     /* at it: in */
    cg_agg_now(&a, 9000);                 /* the next buffer */
    kernel(&a, kernel_b, 6000, 6100);     /* in now */
    cg_agg_step_end(&a, 1, 10000);
    cg_agg_settle(&a, true);
    assert_int_equal(op(&a, kernel_a)->calls, 3);
    assert_int_equal(op(&a, kernel_b)->calls, 1);
    assert_int_equal(a.outside_steps, 2);
    assert_int_equal(a.inside_steps, 4);
    cg_agg_release(&a);
}

static void test_agg__zero_length_kernels_count_as_calls_not_busy(void **state)
{
    (void)state;
    struct cg_agg a;
    assert_int_equal(cg_agg_new(&a, 0), 0);
    cg_agg_step_begin(&a, 0, 1000);
    kernel(&a, kernel_a, 1100, 1200);
    kernel(&a, kernel_a, 1300, 1300); /* in the window, after the last interval */
    kernel(&a, kernel_a, 1350, 1400);
    cg_agg_step_end(&a, 0, 2000);
    cg_agg_settle(&a, true);
    assert_int_equal(op(&a, kernel_a)->calls, 3);
    assert_int_equal(op(&a, kernel_a)->total_ns, 150);
    assert_int_equal(a.steps[0].busy_ns, 150);
    cg_agg_release(&a);
}

static void test_agg__trace_keeps_traced_steps_memory_start_and_its_cap(void **state)
{
    (void)state;
    struct cg_agg a;
    assert_int_equal(cg_agg_new(&a, 0), 0);
    assert_int_equal(cg_agg_trace(&a, 1, 1, 5), 0);
    cg_agg_step_begin(&a, 0, 1000);
    cg_agg_step_end(&a, 0, 2000);
    mem(&a, 0, true, 4096, 1500);  /* before the trace */
    mem(&a, 1, true, 100, 1600);
    kernel(&a, kernel_a, 1100, 1200); /* step 0: untraced, on the hot path */
    cg_agg_step_begin(&a, 1, 3000);
    for (uint64_t i = 0; i < 4; i++)
        kernel(&a, kernel_b, 3100 + i * 100, 3150 + i * 100);
    cg_agg_step_end(&a, 1, 4000);
    cg_agg_settle(&a, true);
    /* no memory event inside the traced step: each device's total at its start is still there */
    assert_int_equal(a.n_trace, 5);
    assert_int_equal(a.trace_dropped, 1); /* 4 kernels, 2 devices' totals: the last one dropped */
    assert_int_equal(a.trace[0].kind, CG_AGG_KERNEL);
    assert_int_equal(a.trace[0].start, 3100);
    assert_int_equal(a.trace[0].stream, 7);
    assert_int_equal(a.trace[0].bytes, -1);
    assert_int_equal(a.trace[4].kind, CG_AGG_MEMORY);
    assert_int_equal(a.trace[4].start, 3000);
    assert_int_equal(a.trace[4].device, 0);
    assert_int_equal(a.trace[4].bytes, 4096);
    /* traced or not, the totals are the same */
    assert_int_equal(op(&a, kernel_b)->calls, 4);
    assert_int_equal(a.steps[1].busy_ns, 200);
    char line[CG_AGG_TRACE_LINE_MAX];
    size_t n = cg_agg_trace_format(&a.trace[0], line, sizeof(line));
    assert_int_equal(n, strlen("tg kernel 0 7 3100 3150 -1 _Z8kernel_bv\n"));
    assert_memory_equal(line, "tg kernel 0 7 3100 3150 -1 _Z8kernel_bv\n", n);
    n = cg_agg_trace_format(&a.trace[4], line, sizeof(line));
    assert_memory_equal(line, "tm 0 3000 4096\n", n);
    assert_int_equal(cg_agg_trace_format(&a.trace[0], line, 64), 0); /* too small: nothing */
    cg_agg_release(&a);
}

static void test_agg__copies_are_named_by_direction_and_host_memory(void **state)
{
    (void)state;
    static const struct {
        uint8_t copy, src, dst;
        const char *name;
    } cases[] = {
        {CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
         CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, "memcpy HtoD pageable"},
        {CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
         CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, "memcpy HtoD pinned"},
        {CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_MANAGED,
         CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, "memcpy HtoD managed"},
        {CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN,
         CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, "memcpy HtoD"},
        {CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
         CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, "memcpy DtoH pageable"},
        {CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
         CUPTI_ACTIVITY_MEMORY_KIND_PINNED, "memcpy DtoH pinned"},
        {CUPTI_ACTIVITY_MEMCPY_KIND_HTOA, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
         CUPTI_ACTIVITY_MEMORY_KIND_ARRAY, "memcpy HtoA pageable"},
        {CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
         CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, "memcpy DtoD"},
        {CUPTI_ACTIVITY_MEMCPY_KIND_PTOP, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
         CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, "memcpy PtoP"},
        {CUPTI_ACTIVITY_MEMCPY_KIND_DTOA, 0, 0, "memcpy array"},
        {CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 200, 0, "memcpy HtoD"}, /* a kind newer than us */
        {99, 1, 1, "memcpy other"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        assert_string_equal(cg_agg_memcpy_name(cases[i].copy, cases[i].src, cases[i].dst),
                            cases[i].name);
    /* the same name is the same op, whatever the record */
    assert_ptr_equal(cg_agg_memcpy_name(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 1, 3),
                     cg_agg_memcpy_name(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 1, 5));
}

/* --- per-step counts ----------------------------------------------------------------------- */

static int64_t count(const struct cg_agg *a, int64_t step, enum cg_agg_count c)
{
    return a->steps[step].count[c];
}

/* Three steps (warm-up 1, window end 2): kernels on both paths, graph kernels, a kernel of the
 * serial kind, kernels between steps and with bad timestamps; every step keeps its counts. */
static void test_agg__counts_kernels_and_graph_kernels_per_step(void **state)
{
    (void)state;
    for (int graph_ids = 0; graph_ids < 2; graph_ids++) {
        struct cg_agg a;
        assert_int_equal(cg_agg_new(&a, 1), 0);
        cg_agg_measure(&a, 2);
        if (!graph_ids)
            cg_agg_graph_ids(&a, false);
        cg_agg_step_begin(&a, 0, 1000);
        kernel(&a, kernel_a, 1100, 1200);
        cg_synth_graph_kernel(&a, kernel_a, 7, 1300, 1400, 9); /* the hot path */
        cg_agg_step_end(&a, 0, 2000);
        kernel(&a, kernel_a, 2100, 2200);                      /* between steps */
        cg_synth_graph_kernel(&a, kernel_b, 7, 2300, 2400, 9); /* between steps */
        cg_agg_step_begin(&a, 1, 3000);
        cg_synth_graph_kernel(&a, kernel_b, 7, 3100, 3200, 4);
        cg_synth_graph_kernel(&a, kernel_b, 8, 3150, 3300, 4);
        kernel(&a, kernel_a, 3400, 3500);
        kernel(&a, kernel_a, 0, 3600); /* zero timestamp: in no step */
        CUpti_ActivityKernel10 serial; /* the KERNEL kind counts too */
        memset(&serial, 0, sizeof(serial));
        serial.kind = CUPTI_ACTIVITY_KIND_KERNEL;
        serial.start = 3700;
        serial.end = 3800;
        serial.name = kernel_a;
        serial.graphId = 2;
        cg_agg_record(&a, (const CUpti_Activity *)(const void *)&serial);
        cg_agg_step_end(&a, 1, 4000);
        cg_agg_step_begin(&a, 2, 5000); /* past the window: still counted */
        cg_synth_graph_kernel(&a, kernel_a, 7, 5100, 5200, 3);
        cg_agg_step_end(&a, 2, 6000);
        cg_agg_settle(&a, true);
        assert_int_equal(count(&a, 0, CG_AGG_N_KERNELS), 2);
        assert_int_equal(count(&a, 1, CG_AGG_N_KERNELS), 4);
        assert_int_equal(count(&a, 2, CG_AGG_N_KERNELS), 1);
        assert_int_equal(count(&a, 0, CG_AGG_N_GRAPH_KERNELS), graph_ids ? 1 : 0);
        assert_int_equal(count(&a, 1, CG_AGG_N_GRAPH_KERNELS), graph_ids ? 3 : 0);
        assert_int_equal(count(&a, 2, CG_AGG_N_GRAPH_KERNELS), graph_ids ? 1 : 0);
        assert_int_equal(a.outside_steps, 2);
        assert_int_equal(a.zero_ts, 1);
        assert_int_equal(op(&a, kernel_a)->calls, 2); /* ops: step 1 only */
        cg_agg_release(&a);
    }
}

/* Graph launches: a graph's first kernel record in a step names its anchor node, and every record
 * of that node is one launch, whatever order a launch's kernels arrive in; fed as one batch
 * (the hot path counts graph kernels and their launches as the general path does). Not counted
 * without graph ids. */
static void test_agg__counts_graph_launches_by_their_anchor_node(void **state)
{
    (void)state;
    static const struct {
        uint32_t graph;
        uint64_t node, start;
    } recs
        [] =
            {
                {0, 0, 1050},  {4, 11, 1100}, {4, 12, 1200}, {4, 13, 1300},
                {0, 0, 1350},  {4, 11, 1400}, {4, 12, 1500}, {4, 13, 1600},
                {5, 22, 1700}, {5, 21, 1800}, {0, 0, 1900}, /* step 1: graph 4 once more, its
                                                               kernels in another order */
                {4, 12, 3100}, {4, 11, 3200}, {4, 13, 3300}, {0, 0, 3400},
            };
    enum { N = sizeof(recs) / sizeof(recs[0]) };
    static CUpti_ActivityKernel10 k[N];
    const CUpti_Activity *ptr[N];
    for (int graph_ids = 0; graph_ids < 2; graph_ids++) {
        struct cg_agg a;
        assert_int_equal(cg_agg_new(&a, 0), 0);
        if (!graph_ids)
            cg_agg_graph_ids(&a, false);
        cg_agg_step_begin(&a, 0, 1000);
        cg_agg_step_end(&a, 0, 2000);
        cg_agg_step_begin(&a, 1, 3000);
        cg_agg_step_end(&a, 1, 4000);
        for (size_t i = 0; i < N; i++) {
            memset(&k[i], 0, sizeof(k[i]));
            k[i].kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
            k[i].start = recs[i].start;
            k[i].end = recs[i].start + 50;
            k[i].name = kernel_a;
            k[i].graphId = recs[i].graph;
            k[i].graphNodeId = recs[i].node;
            ptr[i] = (const CUpti_Activity *)(const void *)&k[i];
        }
        cg_agg_records(&a, ptr, N);
        cg_agg_settle(&a, true);
        assert_int_equal(count(&a, 0, CG_AGG_N_KERNELS), 11);
        assert_int_equal(count(&a, 1, CG_AGG_N_KERNELS), 4);
        assert_int_equal(count(&a, 0, CG_AGG_N_GRAPH_KERNELS), graph_ids ? 8 : 0);
        assert_int_equal(count(&a, 0, CG_AGG_N_GRAPH_LAUNCHES), graph_ids ? 3 : 0);
        assert_int_equal(count(&a, 1, CG_AGG_N_GRAPH_LAUNCHES), graph_ids ? 1 : 0);
        assert_int_equal(op(&a, kernel_a)->calls, 15);
        assert_int_equal(a.steps[0].busy_ns, 11 * 50);
        cg_agg_release(&a);
    }
}

/* A communication kernel launched by a graph, met on the hot path: the hot path leaves it to the
 * general one (compute time is kept apart from then on), which counts it and its graph's launch;
 * the hot path must not have counted them already (the fuzzer's find: 2 graph kernels, 1 fed). */
static void test_agg__counts_a_graphs_communication_kernel_once(void **state)
{
    (void)state;
    static const char nccl[] = "_Z32ncclDevKernel_AllReduce_Sum_f32P20ncclDevKernelArgs";
    static CUpti_ActivityKernel10 k[3];
    const char *names[3] = {kernel_a, nccl, kernel_b};
    const CUpti_Activity *ptr[3];
    for (int i = 0; i < 3; i++) {
        memset(&k[i], 0, sizeof(k[i]));
        k[i].kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        k[i].start = 1100 + 100 * (uint64_t)i;
        k[i].end = k[i].start + 50;
        k[i].name = names[i];
        k[i].graphId = 4;
        k[i].graphNodeId = 11 + (uint64_t)i;
        ptr[i] = (const CUpti_Activity *)(const void *)&k[i];
    }
    struct cg_agg a;
    assert_int_equal(cg_agg_new(&a, 0), 0);
    cg_agg_step_begin(&a, 0, 1000);
    cg_agg_step_end(&a, 0, 2000);
    cg_agg_records(&a, ptr, 3);
    cg_agg_settle(&a, true);
    assert_int_equal(count(&a, 0, CG_AGG_N_KERNELS), 3);
    assert_int_equal(count(&a, 0, CG_AGG_N_GRAPH_KERNELS), 3);
    assert_int_equal(count(&a, 0, CG_AGG_N_GRAPH_LAUNCHES), 1);
    assert_int_equal(op(&a, nccl)->calls, 1);
    assert_int_equal(a.steps[0].busy_ns, 150);
    assert_int_equal(count(&a, 0, CG_AGG_N_COMPUTE_NS), 100);
    cg_agg_release(&a);
}

static void test_agg__counts_synchronisations_by_type_and_blocked_time(void **state)
{
    (void)state;
    struct cg_agg a;
    assert_int_equal(cg_agg_new(&a, 0), 0);
    cg_agg_step_begin(&a, 0, 1000);
    cg_synth_sync(&a, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 1100, 1150, 0);
    cg_synth_sync(&a, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 1200, 1230, 0);
    cg_synth_sync(&a, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, 1300, 1307, 0);
    cg_synth_sync(&a, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, 1400, 1900, 0);
    cg_synth_sync(&a, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, 1500, 1600, 0);
    cg_synth_sync(&a, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN, 1600, 1700, 0); /* ignored */
    /* a query that found work pending (CUDA_ERROR_NOT_READY): no wait happened */
    cg_synth_sync(&a, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, 1700, 1701, 600);
    cg_synth_sync(&a, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 0, 1800, 0);
    cg_agg_step_end(&a, 0, 2000);
    cg_synth_sync(&a, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, 2500, 2900, 0);
    cg_agg_step_begin(&a, 1, 3000);
    cg_synth_sync(&a, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, 3000, 3500, 0);
    cg_agg_step_end(&a, 1, 4000);
    cg_agg_settle(&a, true);
    assert_int_equal(count(&a, 0, CG_AGG_N_SYNC_STREAM), 2);
    assert_int_equal(count(&a, 0, CG_AGG_N_SYNC_EVENT), 1);
    assert_int_equal(count(&a, 0, CG_AGG_N_SYNC_CONTEXT), 1);
    assert_int_equal(count(&a, 0, CG_AGG_N_SYNC_WAIT), 1);
    assert_int_equal(count(&a, 0, CG_AGG_N_SYNC_NS), 50 + 30 + 7 + 500); /* not the wait's */
    assert_int_equal(count(&a, 1, CG_AGG_N_SYNC_EVENT), 1);
    assert_int_equal(count(&a, 1, CG_AGG_N_SYNC_NS), 500);
    assert_int_equal(count(&a, 1, CG_AGG_N_SYNC_CONTEXT), 0); /* the one between steps */
    assert_int_equal(a.zero_ts, 1);
    assert_int_equal(a.records, 10);
    /* host calls: never GPU work inside or outside a step, never ops, no other count */
    assert_int_equal(a.inside_steps + a.outside_steps, 0);
    assert_int_equal(a.n_ops, 0);
    for (int c = 0; c < CG_AGG_COUNTS; c++)
        if (c < CG_AGG_N_SYNC_STREAM || c > CG_AGG_N_SYNC_NS)
            assert_int_equal(count(&a, 0, (enum cg_agg_count)c), 0);
    cg_agg_release(&a);
}

static void test_agg__counts_copies_and_pageable_device_to_host_bytes(void **state)
{
    (void)state;
    struct cg_agg a;
    assert_int_equal(cg_agg_new(&a, 1), 0); /* step 0 is warm-up: counted all the same */
    cg_agg_step_begin(&a, 0, 1000);
    cg_synth_copy(&a, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                  CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, 7, 1100, 1200, 4096);
    cg_synth_copy(&a, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                  CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, 7, 1300, 1400, 100);
    cg_synth_copy(&a, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                  CUPTI_ACTIVITY_MEMORY_KIND_PINNED, 7, 1500, 1600, 1 << 20);
    cg_synth_copy(&a, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
                  CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 7, 1700, 1800, 1 << 20);
    cg_synth_copy(&a, CUPTI_ACTIVITY_MEMCPY_KIND_ATOH, CUPTI_ACTIVITY_MEMORY_KIND_ARRAY,
                  CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, 7, 1850, 1860, 1 << 20); /* not DtoH */
    cg_synth_peer_copy(&a, 7, 1900, 1950, 1 << 20);
    cg_agg_step_end(&a, 0, 2000);
    cg_synth_copy(&a, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                  CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, 7, 2100, 2200, 8); /* between steps */
    cg_agg_step_begin(&a, 1, 3000);
    cg_synth_copy(&a, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                  CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, 7, 3100, 3200, 333);
    cg_agg_step_end(&a, 1, 4000);
    cg_agg_settle(&a, true);
    assert_int_equal(count(&a, 0, CG_AGG_N_COPIES), 6);
    assert_int_equal(count(&a, 0, CG_AGG_N_DTOH_PAGEABLE), 2);
    assert_int_equal(count(&a, 0, CG_AGG_N_DTOH_PAGEABLE_BYTES), 4096 + 100);
    assert_int_equal(count(&a, 1, CG_AGG_N_COPIES), 1);
    assert_int_equal(count(&a, 1, CG_AGG_N_DTOH_PAGEABLE), 1);
    assert_int_equal(count(&a, 1, CG_AGG_N_DTOH_PAGEABLE_BYTES), 333);
    assert_int_equal(count(&a, 0, CG_AGG_N_KERNELS), 0);
    assert_int_equal(a.outside_steps, 1);
    assert_int_equal(op(&a, "memcpy DtoH pageable")->calls, 1); /* ops: step 1 only */
    cg_agg_release(&a);
}

/* The calls made in a place (cg_agg_place_note): stream, event and context synchronisations,
 * device-to-pageable copies and device memory allocations and releases whose records fall in a
 * measured step are counted at their place; a wait on an event, a pinned copy, a warm-up step, an
 * unknown correlation id or a call with no place are not. An id is taken once; a bucket's oldest id
 * gives way to a newer. */
static void test_agg__places_count_calls_of_measured_steps(void **state)
{
    (void)state;
    static struct cg_agg_corr t; /* 128 KiB: not on the stack */
    memset(&t, 0, sizeof(t));
    struct cg_agg a;
    assert_int_equal(cg_agg_new(&a, 1), 0);
    cg_agg_places(&a, &t);
    const uint32_t in_fwd = 0x40000000u | 3, after_fwd = 0x80000000u | 3, in_bwd = 0x40000000u | 4;
    for (uint32_t id = 10; id < 40; id++)
        cg_agg_place_note(&t, id, id < 20 ? in_fwd : id < 30 ? after_fwd : in_bwd);
    cg_agg_place_note(&t, 50, 0);   /* no place: nothing noted */
    cg_agg_step_begin(&a, 0, 1000); /* warm-up */
    cg_synth_sync_corr(&a, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 1100, 1150, 0,
                       10);
    cg_agg_step_end(&a, 0, 2000);
    cg_agg_step_begin(&a, 1, 3000);
    cg_synth_sync_corr(&a, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 3100, 3150, 0,
                       11);
    cg_synth_sync_corr(&a, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 3200, 3250, 0,
                       11); /* taken already */
    cg_synth_sync_corr(&a, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, 3300, 3350, 0,
                       12);
    cg_synth_sync_corr(&a, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, 3400, 3450, 0,
                       13);
    cg_synth_sync_corr(&a, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, 3500, 3550, 0,
                       30);
    cg_synth_copy_corr(&a, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                       CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, 7, 3600, 3650, 4, 20);
    cg_synth_copy_corr(&a, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                       CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, 7, 3700, 3750, 4, 21);
    cg_synth_copy_corr(&a, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                       CUPTI_ACTIVITY_MEMORY_KIND_PINNED, 7, 3800, 3850, 4, 22);
    cg_synth_copy_corr(&a, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                       CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, 7, 3900, 3950, 4, 50);
    cg_synth_copy_corr(&a, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                       CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, 7, 3960, 3970, 4, 0);
    cg_synth_memory_corr(&a, 0, true, 1 << 20, 3975, 31);
    cg_synth_memory_corr(&a, 0, false, 1 << 20, 3980, 32);
    cg_synth_memory_corr(&a, 0, false, 1 << 20, 3985, 0);
    cg_agg_step_end(&a, 1, 4000);
    cg_agg_settle(&a, true);
    assert_int_equal(count(&a, 1, CG_AGG_N_SYNC_STREAM), 2); /* counted all the same */
    struct {
        uint32_t place;
        enum cg_agg_count count;
        int64_t calls;
    } want[] = {{in_fwd, CG_AGG_N_SYNC_STREAM, 1},  {in_fwd, CG_AGG_N_SYNC_EVENT, 1},
                {in_bwd, CG_AGG_N_SYNC_CONTEXT, 1}, {after_fwd, CG_AGG_N_DTOH_PAGEABLE, 2},
                {in_bwd, CG_AGG_N_ALLOCS, 1},       {in_bwd, CG_AGG_N_FREES, 1}};
    assert_int_equal(a.n_places, 6);
    for (size_t i = 0; i < 6; i++) {
        size_t k = 0;
        while (k < a.n_places &&
               !(a.places[k].place == want[i].place && a.places[k].count == want[i].count))
            k++;
        assert_true(k < a.n_places);
        assert_int_equal(a.places[k].calls, want[i].calls);
    }
    /* a bucket's ways full: the oldest id gives way */
    uint32_t bucket = 7;
    for (uint32_t w = 0; w <= CG_AGG_CORR_WAYS; w++)
        cg_agg_place_note(&t, bucket + (w + 1000) * CG_AGG_CORR_BUCKETS, in_fwd);
    cg_agg_step_begin(&a, 2, 5000);
    cg_synth_sync_corr(&a, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 5100, 5150, 0,
                       bucket + 1000 * CG_AGG_CORR_BUCKETS); /* gave way */
    cg_synth_sync_corr(&a, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 5200, 5250, 0,
                       bucket + (1000 + CG_AGG_CORR_WAYS) * CG_AGG_CORR_BUCKETS);
    cg_agg_step_end(&a, 2, 6000);
    cg_agg_settle(&a, true);
    assert_int_equal(a.places[0].place, in_fwd);
    assert_int_equal(a.places[0].count, CG_AGG_N_SYNC_STREAM);
    assert_int_equal(a.places[0].calls, 2);
    /* the table holds CG_AGG_PLACES places: the calls of the others are counted as lost */
    cg_agg_step_begin(&a, 3, 7000);
    for (uint32_t i = 0; i < 300; i++) {
        cg_agg_place_note(&t, 100000 + i, 0x40000000u | (100 + i));
        cg_synth_sync_corr(&a, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 7001 + i,
                           7001 + i, 0, 100000 + i);
    }
    cg_agg_step_end(&a, 3, 8000);
    cg_agg_settle(&a, true);
    assert_int_equal(a.n_places, CG_AGG_PLACES);
    assert_int_equal(a.places_lost, 300 - (CG_AGG_PLACES - 6));
    cg_agg_release(&a);
}

static void test_agg__counts_allocations_and_releases_by_timestamp(void **state)
{
    (void)state;
    struct cg_agg a;
    assert_int_equal(cg_agg_new(&a, 0), 0);
    cg_agg_step_begin(&a, 0, 1000);
    cg_agg_step_end(&a, 0, 2000);
    cg_agg_step_begin(&a, 1, 3000);
    cg_agg_step_end(&a, 1, 4000);
    mem(&a, 0, true, 64, 3500);   /* out of order: step 1 */
    mem(&a, 0, true, 64, 1500);   /* step 0 */
    mem(&a, 1, true, 64, 1600);   /* step 0, another device */
    mem(&a, 0, false, 64, 1700);  /* step 0 */
    mem(&a, 0, false, 0, 1750);   /* step 0: a release of nothing is still a release */
    mem(&a, 0, false, 64, 2500);  /* between steps */
    mem(&a, 0, true, 64, 999);    /* before the first */
    mem(&a, 0, false, 64, 4000);  /* step 1's last nanosecond */
    mem(&a, 0, true, 64, 0);      /* zero timestamp */
    CUpti_ActivityMemory4 pinned; /* host memory: not counted */
    memset(&pinned, 0, sizeof(pinned));
    pinned.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
    pinned.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
    pinned.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
    pinned.bytes = 64;
    pinned.timestamp = 1800;
    cg_agg_record(&a, (const CUpti_Activity *)(const void *)&pinned);
    cg_agg_settle(&a, true);
    mem(&a, 0, true, 64, 3600); /* older than what was applied (late): still counted */
    cg_agg_settle(&a, true);
    assert_int_equal(count(&a, 0, CG_AGG_N_ALLOCS), 2);
    assert_int_equal(count(&a, 0, CG_AGG_N_FREES), 2);
    assert_int_equal(count(&a, 1, CG_AGG_N_ALLOCS), 2);
    assert_int_equal(count(&a, 1, CG_AGG_N_FREES), 1);
    assert_int_equal(a.late_mem, 1);
    assert_int_equal(a.zero_ts, 1);
    cg_agg_release(&a);
}

/* A module loaded in a measured step is counted at the place the loading thread was in (the
 * resource callback runs on it), when places are on; not in the warm-up, not with no place, and
 * not when places are off. */
static void test_agg__places_count_module_loads(void **state)
{
    (void)state;
    static struct cg_agg_corr t;
    memset(&t, 0, sizeof(t));
    const uint32_t in_fwd = 0x40000000u | 3, after_bwd = 0x80000000u | 4;
    for (int on = 0; on < 2; on++) {
        struct cg_agg a;
        assert_int_equal(cg_agg_new(&a, 1), 0);
        if (on)
            cg_agg_places(&a, &t);
        cg_agg_step_begin(&a, 0, 1000); /* warm-up */
        cg_agg_module_load(&a, 1100, in_fwd);
        cg_agg_step_end(&a, 0, 2000);
        cg_agg_step_begin(&a, 1, 3000);
        cg_agg_module_load(&a, 3100, in_fwd);
        cg_agg_module_load(&a, 3200, after_bwd);
        cg_agg_module_load(&a, 3300, after_bwd);
        cg_agg_module_load(&a, 3400, 0);
        cg_agg_step_end(&a, 1, 4000);
        cg_agg_settle(&a, true);
        assert_int_equal(count(&a, 1, CG_AGG_N_MODULE_LOADS), 4);
        assert_int_equal(a.n_places, on ? 2 : 0);
        for (size_t i = 0; i < a.n_places; i++) {
            assert_int_equal(a.places[i].count, CG_AGG_N_MODULE_LOADS);
            assert_int_equal(a.places[i].calls, a.places[i].place == in_fwd ? 1 : 2);
        }
        cg_agg_release(&a);
    }
}

/* JIT records by start; module loads at the library's clock, which lies past the delivery
 * horizon while a step runs (a record delivered then could not have started later) and still
 * counts in the running step. */
static void test_agg__counts_jit_records_and_module_loads(void **state)
{
    (void)state;
    struct cg_agg a;
    assert_int_equal(cg_agg_new(&a, 0), 0);
    cg_agg_module_load(&a, 500, 0); /* before any step */
    cg_agg_step_begin(&a, 0, 1000);
    cg_agg_now(&a, 1200);
    cg_synth_jit(&a, 1100, 1900);
    cg_synth_jit(&a, 1150, 1160);
    cg_agg_module_load(&a, 1500, 0); /* past the horizon, in the running step */
    cg_agg_module_load(&a, 1600, 0);
    cg_agg_now(&a, 1850); /* the next buffer */
    cg_synth_jit(&a, 1700, 1800);
    cg_agg_step_end(&a, 0, 2000);
    cg_agg_module_load(&a, 2500, 0); /* between steps */
    cg_synth_jit(&a, 2600, 2700);
    cg_agg_step_begin(&a, 1, 3000);
    cg_agg_module_load(&a, 3000, 0);
    cg_synth_jit(&a, 0, 3100); /* zero timestamp */
    cg_agg_settle(&a, true);
    assert_int_equal(count(&a, 0, CG_AGG_N_JIT), 3);
    assert_int_equal(count(&a, 0, CG_AGG_N_MODULE_LOADS), 2);
    assert_int_equal(count(&a, 1, CG_AGG_N_MODULE_LOADS), 1);
    assert_int_equal(count(&a, 1, CG_AGG_N_JIT), 0);
    assert_int_equal(a.zero_ts, 1);
    cg_agg_release(&a);
}

static void test_agg__count_names_are_the_shard_format(void **state)
{
    (void)state;
    static const char *const want[CG_AGG_COUNTS] = {
        "kernels",    "graph_kernels", "graph_launches",      "sync_stream",
        "sync_event", "sync_context",  "sync_wait_event",     "sync_ns",
        "copies",     "dtoh_pageable", "dtoh_pageable_bytes", "allocs",
        "frees",      "jit",           "module_loads",        "compute_ns",
        "copy_ns",    "copy_hidden_ns"};
    for (int c = 0; c < CG_AGG_COUNTS; c++)
        assert_string_equal(cg_agg_count_name((enum cg_agg_count)c), want[c]);
    assert_string_equal(cg_agg_count_name(CG_AGG_COUNTS), "?");
}

/* --- GPU time per device ------------------------------------------------------------------ */

/* A kernel record of device dev, for cg_agg_records batches. */
static CUpti_ActivityKernel10 dev_kernel(const char *name, uint32_t dev, uint64_t start,
                                         uint64_t end)
{
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof(k));
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = start;
    k.end = end;
    k.name = name;
    k.deviceId = dev;
    k.streamId = 7;
    return k;
}

/* A host-to-device copy from pinned memory on device dev. */
static void dev_copy(struct cg_agg *a, uint32_t dev, uint64_t start, uint64_t end)
{
    CUpti_ActivityMemcpy6 m;
    memset(&m, 0, sizeof(m));
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
    m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
    m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.start = start;
    m.end = end;
    m.deviceId = dev;
    m.bytes = 64;
    cg_agg_record(a, (const CUpti_Activity *)(const void *)&m);
}

/* Hands the n kernels of k over in one batch (the hot path, device changes among them). */
static void batch(struct cg_agg *a, const CUpti_ActivityKernel10 *k, size_t n)
{
    const CUpti_Activity *p[16];
    assert_true(n <= 16);
    for (size_t i = 0; i < n; i++)
        p[i] = (const CUpti_Activity *)(const void *)&k[i];
    cg_agg_records(a, p, n);
}

/* One process driving two GPUs: each device's busy, compute, copy and hidden copy time is its
 * own, and a step's are its slowest device's (the most busy time; ties: the most copy time). */
static void test_agg__gpu_time_per_device_the_slowest_decides(void **state)
{
    (void)state;
    static const char nccl[] = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
    struct cg_agg a;
    assert_int_equal(cg_agg_new(&a, 0), 0);
    /* step 0: GPU 0 computes [100, 300), GPU 1 then computes [300, 450): 350 ns of some GPU busy,
     * but no GPU was busy more than 200 */
    cg_agg_step_begin(&a, 0, 0);
    const CUpti_ActivityKernel10 s0[] = {
        dev_kernel(kernel_a, 0, 100, 200), dev_kernel(kernel_a, 1, 300, 400),
        dev_kernel(kernel_b, 0, 200, 300), dev_kernel(kernel_b, 1, 400, 450)};
    batch(&a, s0, 4);
    dev_copy(&a, 0, 250, 350); /* 50 of it beside GPU 0's kernel: none beside GPU 1's counts */
    cg_agg_step_end(&a, 0, 1000);
    /* step 1: GPU 0 computes [1100, 1200) while GPU 1 all-reduces [1100, 1400): GPU 1 is the
     * slowest and computes nothing, its communication all exposed */
    cg_agg_step_begin(&a, 1, 1000);
    const CUpti_ActivityKernel10 s1[] = {dev_kernel(kernel_a, 0, 1100, 1200),
                                         dev_kernel(nccl, 1, 1100, 1400)};
    batch(&a, s1, 2);
    dev_copy(&a, 1, 1500, 1600);
    cg_agg_step_end(&a, 1, 2000);
    /* step 2: no kernel, copies on both GPUs: the one with more copy time */
    cg_agg_step_begin(&a, 2, 2000);
    dev_copy(&a, 0, 2100, 2150);
    dev_copy(&a, 1, 2100, 2180);
    cg_agg_step_end(&a, 2, 3000);
    cg_agg_settle(&a, true);
    assert_int_equal(a.n_lanes, 2);
    assert_int_equal(a.lanes_shared, 0);
    assert_int_equal(a.steps[0].lane, 0); /* GPU 0: 200 ns, GPU 1: 150 */
    assert_int_equal(a.steps[0].busy_ns, 200);
    assert_int_equal(count(&a, 0, CG_AGG_N_COMPUTE_NS), 200);
    assert_int_equal(count(&a, 0, CG_AGG_N_COPY_NS), 100);
    assert_int_equal(count(&a, 0, CG_AGG_N_COPY_HIDDEN_NS), 50);
    assert_int_equal(a.lanes[1]->times[0].busy_ns, 150);
    assert_int_equal(a.lanes[1]->times[0].copy_hidden_ns, 0);
    assert_int_equal(a.steps[1].lane, 1);
    assert_int_equal(a.steps[1].busy_ns, 300);
    assert_int_equal(count(&a, 1, CG_AGG_N_COMPUTE_NS), 0);
    assert_int_equal(count(&a, 1, CG_AGG_N_COPY_NS), 100);
    assert_true(a.lanes[1]->comm && !a.lanes[0]->comm);
    assert_int_equal(a.lanes[0]->times[1].compute_ns, 100);
    assert_int_equal(a.steps[2].lane, 1);
    assert_int_equal(a.steps[2].busy_ns, 0);
    assert_int_equal(count(&a, 2, CG_AGG_N_COPY_NS), 80);
    /* kernels count whatever their device */
    assert_int_equal(count(&a, 0, CG_AGG_N_KERNELS), 4);
    assert_int_equal(count(&a, 1, CG_AGG_N_KERNELS), 2);
    assert_int_equal(op(&a, kernel_a)->calls, 3);
    cg_agg_release(&a);
}

/* A step's figures are chosen when it closes (two later steps began, the later before a settle,
 * or the settle is final), never before, and only grow after: a late record of the chosen device
 * adds to them, one of another device does not move them to it. */
static void test_agg__a_steps_device_is_chosen_when_it_closes(void **state)
{
    (void)state;
    struct cg_agg a;
    assert_int_equal(cg_agg_new(&a, 0), 0);
    cg_agg_step_begin(&a, 0, 0);
    const CUpti_ActivityKernel10 k[] = {dev_kernel(kernel_a, 0, 100, 300),
                                        dev_kernel(kernel_a, 1, 100, 200)};
    batch(&a, k, 2);
    cg_agg_step_end(&a, 0, 1000);
    cg_agg_settle(&a, false);
    assert_int_equal(a.steps[0].lane, -1); /* the latest step: not closed */
    assert_int_equal(a.steps[0].busy_ns, 0);
    cg_agg_step_begin(&a, 1, 1000);
    cg_agg_settle(&a, false);
    assert_int_equal(a.steps[0].lane, -1); /* one step later: GPU 1's records may still come */
    const CUpti_ActivityKernel10 one_late[] = {dev_kernel(kernel_b, 1, 200, 400)};
    batch(&a, one_late, 1);
    cg_agg_step_end(&a, 1, 2000);
    cg_agg_step_begin(&a, 2, 2000);
    cg_agg_settle(&a, false);
    assert_int_equal(a.steps[0].lane, 1); /* GPU 1: 300 ns, GPU 0: 200 */
    assert_int_equal(a.steps[0].busy_ns, 300);
    assert_int_equal(a.steps[1].lane, -1);
    const CUpti_ActivityKernel10 late[] = {dev_kernel(kernel_b, 0, 400, 700),
                                           dev_kernel(kernel_b, 1, 500, 550)};
    batch(&a, late, 2);
    cg_agg_step_end(&a, 2, 3000);
    cg_agg_settle(&a, true);
    assert_int_equal(a.steps[0].lane, 1);
    assert_int_equal(a.steps[0].busy_ns, 350); /* GPU 0 now has 500: not chosen any more */
    assert_int_equal(a.lanes[0]->times[0].busy_ns, 500);
    cg_agg_release(&a);
}

/* The first CG_AGG_LANES devices have a lane each; every later one shares the last (its kernels
 * in one union with that lane's, as all devices were before), and lanes_shared counts their
 * records. */
static void test_agg__devices_past_the_eighth_share_the_last_lane(void **state)
{
    (void)state;
    struct cg_agg a;
    assert_int_equal(cg_agg_new(&a, 0), 0);
    cg_agg_step_begin(&a, 0, 0);
    /* device d runs 100 (d + 1) ns from 1000 (d + 1), apart from the others: device 9's 1000 ns
     * is the most of one device, but it shares lane 7 with devices 7 and 8: 800 + 900 + 1000 */
    for (uint32_t d = 0; d < 10; d++) {
        uint64_t start = 1000 * (uint64_t)(d + 1);
        CUpti_ActivityKernel10 k = dev_kernel(kernel_a, d, start, start + 100 * (d + 1));
        batch(&a, &k, 1);
    }
    cg_agg_step_end(&a, 0, 20000);
    cg_agg_settle(&a, true);
    assert_int_equal(a.n_lanes, CG_AGG_LANES);
    assert_int_equal(a.lanes[CG_AGG_LANES - 1]->device, 7);
    assert_int_equal(a.lanes_shared, 2);
    assert_int_equal(a.steps[0].lane, CG_AGG_LANES - 1);
    assert_int_equal(a.steps[0].busy_ns, 800 + 900 + 1000);
    assert_int_equal(count(&a, 0, CG_AGG_N_KERNELS), 10);
    cg_agg_release(&a);
}

/* --- places: the correlation table --------------------------------------------------------- */

static struct cg_agg_corr *g_race_table; /* armed: the table the racing note goes to */
static uint32_t g_race_corr;

/* Between a place note's choice of the entry it replaces and the replacement (aggregate.h): when
 * armed, another call's note lands there first, as a thread racing it would. */
void cg_agg_corr_hook(_Atomic uint64_t *entry)
{
    (void)entry;
    struct cg_agg_corr *t = g_race_table;
    g_race_table = NULL; /* once */
    if (t != NULL)
        cg_agg_place_note(t, g_race_corr, 9);
}

/* Whether t holds corr noted at place. */
static bool noted(struct cg_agg_corr *t, uint32_t corr, uint32_t place)
{
    _Atomic uint64_t *b = &t->e[(corr & (CG_AGG_CORR_BUCKETS - 1)) * CG_AGG_CORR_WAYS];
    for (size_t i = 0; i < CG_AGG_CORR_WAYS; i++)
        if (atomic_load(&b[i]) == ((uint64_t)corr << 32 | place))
            return true;
    return false;
}

/* A full bucket: a note replaces its oldest call's entry; another call noted into that same entry
 * in between (a racing thread) is kept, and the note takes the next oldest. */
static void test_agg__a_racing_note_never_drops_a_live_place(void **state)
{
    (void)state;
    static struct cg_agg_corr t;
    memset(&t, 0, sizeof(t));
    const uint32_t id = 5, apart = CG_AGG_CORR_BUCKETS; /* one bucket */
    for (uint32_t w = 0; w < CG_AGG_CORR_WAYS; w++)
        cg_agg_place_note(&t, id + w * apart, 1);
    g_race_table = &t;
    g_race_corr = id + 5 * apart;
    cg_agg_place_note(&t, id + 4 * apart, 2);
    assert_null(g_race_table); /* the race happened */
    assert_true(noted(&t, id + 5 * apart, 9));
    assert_true(noted(&t, id + 4 * apart, 2));
    assert_false(noted(&t, id, 1)); /* the two oldest gave way */
    assert_false(noted(&t, id + apart, 1));
    assert_true(noted(&t, id + 2 * apart, 1) && noted(&t, id + 3 * apart, 1));
}

/* Every synchronisation, copy and memory record takes its call's entry out of the table, whether
 * it counts or not: a copy that is no pageable one, a synchronisation that did not complete, a
 * copy and an allocation outside every step, pinned host memory, a peer copy. None is left to
 * crowd out live places. */
static void test_agg__places_are_taken_out_whatever_their_records_count(void **state)
{
    (void)state;
    static struct cg_agg_corr t;
    memset(&t, 0, sizeof(t));
    struct cg_agg a;
    assert_int_equal(cg_agg_new(&a, 0), 0);
    cg_agg_places(&a, &t);
    for (uint32_t corr = 1; corr <= 6; corr++)
        cg_agg_place_note(&t, corr, 3);
    cg_synth_copy_corr(&a, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                       CUPTI_ACTIVITY_MEMORY_KIND_PINNED, 7, 500, 600, 64, 3); /* before */
    cg_synth_memory_corr(&a, 0, true, 64, 700, 4);                               /* before */
    cg_agg_step_begin(&a, 0, 1000);
    cg_synth_copy_corr(&a, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
                       CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 7, 1100, 1200, 64, 1);
    cg_synth_sync_corr(&a, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 1300, 1400,
                       600 /* not ready */, 2);
    CUpti_ActivityMemory4 m;
    memset(&m, 0, sizeof(m));
    m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
    m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
    m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
    m.bytes = 64;
    m.timestamp = 1500;
    m.correlationId = 5;
    cg_agg_record(&a, (const CUpti_Activity *)(const void *)&m);
    CUpti_ActivityMemcpyPtoP4 peer;
    memset(&peer, 0, sizeof(peer));
    peer.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
    peer.start = 1600;
    peer.end = 1700;
    peer.bytes = 64;
    peer.correlationId = 6;
    cg_agg_record(&a, (const CUpti_Activity *)(const void *)&peer);
    cg_agg_step_end(&a, 0, 5000);
    cg_agg_settle(&a, true);
    for (size_t i = 0; i < CG_AGG_CORR_BUCKETS * CG_AGG_CORR_WAYS; i++)
        if (atomic_load(&t.e[i]) != 0)
            fail_msg("call %u's entry is left", (unsigned)(atomic_load(&t.e[i]) >> 32));
    assert_int_equal(a.n_places, 0); /* none of them counts at a place */
    cg_agg_release(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_agg__records_are_attributed_to_steps_after_warmup),
        cmocka_unit_test(test_agg__busy_time_is_the_union_of_overlapping_kernels),
        cmocka_unit_test(test_agg__copy_time_some_kernel_ran_in_is_exact),
        cmocka_unit_test(test_agg__copy_hidden_time_whichever_settles_last),
        cmocka_unit_test(test_agg__busy_union_stays_bounded_and_exact_in_order),
        cmocka_unit_test(test_agg__peak_memory_from_out_of_order_records),
        cmocka_unit_test(test_agg__zero_timestamps_are_counted_and_skipped),
        cmocka_unit_test(test_agg__many_kernel_names_grow_the_op_table),
        cmocka_unit_test(test_agg__hot_path_matches_a_reference),
        cmocka_unit_test(test_agg__communication_overlapped_by_compute_and_copies),
        cmocka_unit_test(test_agg__communication_kernels_named_by_the_user),
        cmocka_unit_test(test_agg__the_ring_settles_when_full_whatever_the_batches),
        cmocka_unit_test(test_agg__kernels_of_no_duration_take_no_room),
        cmocka_unit_test(test_agg__ring_settling_an_earlier_step_keeps_the_current_record),
        cmocka_unit_test(test_agg__late_records_behind_the_settled_half_are_clipped),
        cmocka_unit_test(test_agg__step_window_edges),
        cmocka_unit_test(test_agg__counters_for_the_shard),
        cmocka_unit_test(test_agg__ops_count_only_in_the_measured_window),
        cmocka_unit_test(test_agg__running_step_ends_at_the_delivery_horizon),
        cmocka_unit_test(test_agg__zero_length_kernels_count_as_calls_not_busy),
        cmocka_unit_test(test_agg__trace_keeps_traced_steps_memory_start_and_its_cap),
        cmocka_unit_test(test_agg__copies_are_named_by_direction_and_host_memory),
        cmocka_unit_test(test_agg__counts_kernels_and_graph_kernels_per_step),
        cmocka_unit_test(test_agg__counts_synchronisations_by_type_and_blocked_time),
        cmocka_unit_test(test_agg__counts_copies_and_pageable_device_to_host_bytes),
        cmocka_unit_test(test_agg__places_count_calls_of_measured_steps),
        cmocka_unit_test(test_agg__counts_graph_launches_by_their_anchor_node),
        cmocka_unit_test(test_agg__counts_a_graphs_communication_kernel_once),
        cmocka_unit_test(test_agg__counts_allocations_and_releases_by_timestamp),
        cmocka_unit_test(test_agg__places_count_module_loads),
        cmocka_unit_test(test_agg__counts_jit_records_and_module_loads),
        cmocka_unit_test(test_agg__count_names_are_the_shard_format),
        cmocka_unit_test(test_agg__gpu_time_per_device_the_slowest_decides),
        cmocka_unit_test(test_agg__a_steps_device_is_chosen_when_it_closes),
        cmocka_unit_test(test_agg__devices_past_the_eighth_share_the_last_lane),
        cmocka_unit_test(test_agg__a_racing_note_never_drops_a_live_place),
        cmocka_unit_test(test_agg__places_are_taken_out_whatever_their_records_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#else

static void test_agg__skipped_without_cupti(void **state)
{
    (void)state;
    skip();
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_agg__skipped_without_cupti)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#endif
