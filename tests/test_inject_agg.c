/*
 * test_inject_agg: the injection library's record aggregation (inject/aggregate.c, compiled in
 * here) fed with synthetic records of the installed cupti.h types: attribution to steps, the
 * busy-time union with overlapping and out-of-order kernels, peak memory from out-of-order
 * allocation and release records, zero timestamps, and bounded memory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#if CG_HAVE_CUPTI

#include "../inject/aggregate.c"

#include <stdio.h>

static const char kernel_a[] = "_Z8kernel_av";
static const char kernel_b[] = "_Z8kernel_bv";

static void kernel(struct cg_agg *a, const char *name, uint64_t start, uint64_t end)
{
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof(k));
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = start;
    k.end = end;
    k.name = name;
    cg_agg_record(a, (const CUpti_Activity *)(const void *)&k);
}

static void copy(struct cg_agg *a, uint8_t kind, uint64_t start, uint64_t end)
{
    CUpti_ActivityMemcpy6 m;
    memset(&m, 0, sizeof(m));
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.copyKind = kind;
    m.start = start;
    m.end = end;
    cg_agg_record(a, (const CUpti_Activity *)(const void *)&m);
}

static void mem(struct cg_agg *a, uint32_t dev, bool alloc, uint64_t bytes, uint64_t ts)
{
    CUpti_ActivityMemory4 m;
    memset(&m, 0, sizeof(m));
    m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
    m.memoryOperationType = alloc ? CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION
                                  : CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
    m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.bytes = bytes;
    m.timestamp = ts;
    m.deviceId = dev;
    cg_agg_record(a, (const CUpti_Activity *)(const void *)&m);
}

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
    assert_int_equal(cg_agg_init(&a, 1), 0);
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
    assert_int_equal(op(&a, "memcpy HtoD")->kind, CG_AGG_MEMCPY);
    assert_int_equal(op(&a, "memcpy HtoD")->total_ns, 100);
    assert_int_equal(a.outside_steps, 1);
    assert_int_equal(a.steps[0].busy_ns, 100);
    assert_int_equal(a.steps[1].busy_ns, 300); /* kernels only, copies are not busy time */
    cg_agg_release(&a);
}

static void test_agg__busy_time_is_the_union_of_overlapping_kernels(void **state)
{
    (void)state;
    struct cg_agg a;
    assert_int_equal(cg_agg_init(&a, 0), 0);
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

static void test_agg__busy_union_stays_bounded_and_exact_in_order(void **state)
{
    (void)state;
    struct cg_agg a;
    assert_int_equal(cg_agg_init(&a, 0), 0);
    cg_agg_step_begin(&a, 0, 1000);
    for (uint64_t i = 0; i < 5000; i++) /* 5000 disjoint kernels, 20 ns apart */
        kernel(&a, kernel_a, 2000 + i * 100, 2000 + i * 100 + 80);
    assert_true(a.ring_len <= CG_AGG_INTERVALS);
    cg_agg_step_end(&a, 0, 2000 + 5000 * 100);
    cg_agg_settle(&a, true);
    assert_int_equal(a.steps[0].busy_ns, 5000 * 80);
    cg_agg_release(&a);
}

static void test_agg__peak_memory_from_out_of_order_records(void **state)
{
    (void)state;
    struct cg_agg a;
    assert_int_equal(cg_agg_init(&a, 0), 0);
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
    assert_int_equal(cg_agg_init(&a, 0), 0);
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
    assert_int_equal(cg_agg_init(&a, 0), 0);
    cg_agg_step_begin(&a, 0, 1);
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 3000; i++) {
            snprintf(names[i], sizeof(names[i]), "k%d", i);
            kernel(&a, names[i], 10 + (uint64_t)i, 11 + (uint64_t)i);
        }
    assert_int_equal(a.n_ops, 3000);
    for (size_t i = 0; i < a.n_ops; i++)
        assert_int_equal(a.ops[i].calls, 2);
    cg_agg_release(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_agg__records_are_attributed_to_steps_after_warmup),
        cmocka_unit_test(test_agg__busy_time_is_the_union_of_overlapping_kernels),
        cmocka_unit_test(test_agg__busy_union_stays_bounded_and_exact_in_order),
        cmocka_unit_test(test_agg__peak_memory_from_out_of_order_records),
        cmocka_unit_test(test_agg__zero_timestamps_are_counted_and_skipped),
        cmocka_unit_test(test_agg__many_kernel_names_grow_the_op_table),
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
