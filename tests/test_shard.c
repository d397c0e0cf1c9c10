/*
 * test_shard: the shard parser (a pure function of bytes) and the merge of several processes'
 * shards into one run: max wall per step, summed tokens, peak per device, summed ops.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "shard.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char rank0[] =
    "canary-gate-shard 1\n"
    "pid 100\nrank 0\nlocal_rank 0\nwarmup 1\nstep_range step\n"
    "gpu ok\ndevice 0 NVIDIA H100 80GB HBM3\ncuda 13.0\n"
    "s 0 1000 3000 10\n"
    "s 1 3000 4000 10\n"
    "b 1 200\nb 1 50\n"
    "o kernel 2 300 _Z3fooIiEvT_\n"
    "o range 1 900 fwd\\\\pass\\x09x\n"
    "s 2 4000 5500 10\n"
    "o kernel 1 100 _Z3fooIiEvT_\n"
    "m 0 5000\nm 0 4000\n"
    "c 10 1 2\nc 20 3 4\n"
    "future-record ignored by version 1 readers\n"
    "end\n";

static const char rank1_crashed[] =
    "canary-gate-shard 1\n"
    "pid 101\nrank 1\n"
    "gpu ok\n"
    "s 0 100 2200 20\n"
    "s 1 2200 3000 20\n"
    "s 2 3000 6000 20\n"
    "o range 2 100 fwd\\\\pass\\x09x\n"
    "m 0 7000\nm 1 1000\n"
    "c 5 0 0\n"
    "s 3 6000 70"; /* cut short by the crash */

static void parse(const char *text, struct cg_shard *s)
{
    struct cg_err err;
    cg_err_init(&err);
    if (cg_shard_parse(text, strlen(text), "t", s, &err) != 0)
        fail_msg("%s", err.msg);
}

static void test_shard__parses_every_record(void **state)
{
    (void)state;
    struct cg_shard s;
    parse(rank0, &s);
    assert_int_equal(s.pid, 100);
    assert_int_equal(s.rank, 0);
    assert_true(s.complete);
    assert_int_equal(s.n_steps, 3);
    assert_int_equal(s.steps[0].wall_ns, 2000);
    assert_int_equal(s.steps[1].gpu_busy_ns, 250);
    assert_int_equal(s.steps[0].gpu_busy_ns, -1);
    assert_int_equal(s.n_ops, 3);
    assert_string_equal(s.ops[1].name, "fwd\\pass\tx");
    assert_int_equal(s.ops[1].kind, CG_OP_RANGE);
    assert_int_equal(s.n_mem, 1);
    assert_int_equal(s.mem[0].peak_bytes, 5000);
    assert_int_equal(s.records, 20);
    assert_int_equal(s.dropped, 3);
    assert_int_equal(s.zero_ts, 4);
    assert_int_equal(s.gpu, 1);
    assert_string_equal(s.gpu_model, "NVIDIA H100 80GB HBM3");
    assert_string_equal(s.cuda_version, "13.0");
    cg_shard_release(&s);
}

static void test_shard__ignores_a_line_cut_short(void **state)
{
    (void)state;
    struct cg_shard s;
    parse(rank1_crashed, &s);
    assert_false(s.complete);
    assert_int_equal(s.n_steps, 3);
    cg_shard_release(&s);
}

static void test_shard__rejects_malformed_records(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "not a shard\n",
        "canary-gate-shard 2\n",
        "canary-gate-shard 1\ns 0 10\n",
        "canary-gate-shard 1\ns 0 10 5 1\n",           /* ends before it starts */
        "canary-gate-shard 1\ns -1 1 2 3\n",
        "canary-gate-shard 1\ns 99999999999 1 2 3\n",
        "canary-gate-shard 1\no warp 1 2 x\n",
        "canary-gate-shard 1\no kernel 1 2 bad\\q\n",
        "canary-gate-shard 1\nm 0 12abc\n",
        "canary-gate-shard 1\ngpu maybe\n",
        "canary-gate-shard 1\nl 0\n",
        "canary-gate-shard 1\nl 0 low\n",
        "canary-gate-shard 1\nl 0 1.5x\n",
        "canary-gate-shard 1\nl 0 1.5 2\n",
        "canary-gate-shard 1\ntw 4 3\n",                   /* last before first */
        "canary-gate-shard 1\ntr 1 500 400 0 x\n",         /* ends before it starts */
        "canary-gate-shard 1\ntg range 0 1 2 3 -1 x\n",    /* not GPU work */
        "canary-gate-shard 1\ntg kernel 0 1 2 3 -2 x\n",
        "canary-gate-shard 1\ntm 0 5\n",
        "canary-gate-shard 1\ntd 0 zero\n",
        "canary-gate-shard 1\nl -1 1.5\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct cg_shard s;
        struct cg_err err;
        cg_err_init(&err);
        if (cg_shard_parse(bad[i], strlen(bad[i]), "bad.shard", &s, &err) != CG_EINPUT)
            fail_msg("accepted case %zu", i);
        assert_non_null(strstr(err.msg, "bad.shard"));
    }
}

static void test_shard__merges_ranks(void **state)
{
    (void)state;
    struct cg_shard s[2];
    struct cg_artifact a;
    struct cg_err err;
    struct cg_shard_status st;
    parse(rank0, &s[0]);
    parse(rank1_crashed, &s[1]);
    cg_shard_status(s, 2, &st);
    assert_int_equal(st.steps_seen, 3);
    assert_false(st.all_complete);
    assert_int_equal(st.last_step_ns, 3000); /* rank 1's step 2 ended last */

    cg_artifact_init(&a);
    struct cg_run *run = cg_artifact_add_run(&a);
    struct cg_shard_merge_opts o = {1, 5, -1};
    cg_err_init(&err);
    assert_int_equal(cg_shard_merge(s, 2, &o, run, &err), 0);
    assert_int_equal(run->n_steps, 2); /* 3 seen - 1 warm-up, fewer than the 5 asked */
    assert_int_equal(run->steps[0].wall_ns, 1000);
    assert_int_equal(run->steps[1].wall_ns, 3000);
    assert_int_equal(run->steps[0].tokens, 30);
    assert_int_equal(run->steps[0].gpu_busy_ns, 250);
    assert_int_equal(run->summary.peak_device_bytes, 12000); /* device 0: 5000 + 7000 */
    assert_int_equal(run->dropped_records, 3);
    assert_int_equal(run->zero_timestamp_records, 4);
    assert_int_equal(run->n_ops, 2);
    bool saw_kernel = false;
    for (size_t i = 0; i < run->n_ops; i++) {
        if (run->ops[i].kind == CG_OP_RANGE) {
            assert_string_equal(run->ops[i].name, "fwd\\pass\tx");
            assert_int_equal(run->ops[i].calls, 3);
            assert_int_equal(run->ops[i].total_ns, 1000);
        } else {
            saw_kernel = true;
            assert_int_equal(run->ops[i].calls, 3);
            assert_int_equal(run->ops[i].total_ns, 400);
            /* demangled when libstdc++ can be found, family without template arguments */
            if (strcmp(run->ops[i].name, "_Z3fooIiEvT_") != 0) {
                assert_string_equal(run->ops[i].name, "void foo<int>(int)");
                assert_string_equal(run->ops[i].family, "foo");
            }
        }
    }
    assert_true(saw_kernel);
    assert_true(fabs(run->summary.step_time_median_ns - 2000.0) < 1e-6);
    const char *reason = NULL;
    assert_true(cg_shard_gpu_available(s, 2, &reason));
    cg_artifact_release(&a);
    cg_shard_release(&s[0]);
    cg_shard_release(&s[1]);
}

static void test_shard__loss_is_averaged_per_step_and_over_ranks(void **state)
{
    (void)state;
    static const char r0[] = "canary-gate-shard 1\n"
                             "s 0 0 10 -1\nl 0 4.5\n"
                             "s 1 10 20 -1\nl 1 2\nl 1 3\n" /* two reports: their mean */
                             "s 2 20 30 -1\n"
                             "l 2 1.25\n"
                             "s 3 30 40 -1\n"
                             "end\n";
    static const char r1[] = "canary-gate-shard 1\n"
                             "s 0 0 12 -1\nl 0 5.5\n"
                             "s 1 12 22 -1\n"            /* no loss for step 1 */
                             "s 2 22 32 -1\nl 2 -0.75\n"
                             "s 3 32 42 -1\n"
                             "end\n";
    struct cg_shard s[2];
    parse(r0, &s[0]);
    parse(r1, &s[1]);
    assert_float_equal(s[0].steps[1].loss, 2.5, 1e-12);
    assert_int_equal(s[0].steps[1].n_loss, 2);
    assert_true(isnan(s[0].steps[3].loss));
    assert_int_equal(s[0].nonfinite_loss_step, -1);

    struct cg_artifact a;
    struct cg_err err;
    cg_artifact_init(&a);
    struct cg_run *run = cg_artifact_add_run(&a);
    struct cg_shard_merge_opts o = {0, 4, -1};
    cg_err_init(&err);
    assert_int_equal(cg_shard_merge(s, 2, &o, run, &err), 0);
    assert_int_equal(run->n_steps, 4);
    assert_float_equal(run->steps[0].loss, 5.0, 1e-12);   /* mean of 4.5 and 5.5 */
    assert_float_equal(run->steps[1].loss, 2.5, 1e-12);   /* only rank 0 reported */
    assert_float_equal(run->steps[2].loss, 0.25, 1e-12);  /* mean of 1.25 and -0.75 */
    assert_true(isnan(run->steps[3].loss));               /* nobody reported */
    struct cg_shard_status st;
    cg_shard_status(s, 2, &st);
    assert_int_equal(st.nonfinite_loss_step, -1);
    assert_true(isnan(st.nonfinite_loss));
    cg_artifact_release(&a);
    cg_shard_release(&s[0]);
    cg_shard_release(&s[1]);
}

static void test_shard__nonfinite_loss_names_the_first_step(void **state)
{
    (void)state;
    static const char r0[] = "canary-gate-shard 1\n"
                             "s 0 0 10 -1\nl 0 1.5\n"
                             "s 1 10 20 -1\nl 1 1.25\n"
                             "s 2 20 30 -1\nl 2 inf\n"
                             "s 3 30 40 -1\nl 3 nan\n";
    static const char r1[] = "canary-gate-shard 1\n"
                             "s 0 0 10 -1\nl 0 1.5\n"
                             "l 1 -inf\n"; /* the step never ended: the process died in it */
    struct cg_shard s[2];
    parse(r0, &s[0]);
    parse(r1, &s[1]);
    assert_int_equal(s[0].nonfinite_loss_step, 2);
    assert_true(isinf(s[0].nonfinite_loss) && s[0].nonfinite_loss > 0);
    assert_true(isnan(s[0].steps[3].loss));
    assert_int_equal(s[1].nonfinite_loss_step, 1);
    struct cg_shard_status st;
    cg_shard_status(s, 2, &st);
    assert_int_equal(st.nonfinite_loss_step, 1);
    assert_true(isinf(st.nonfinite_loss) && st.nonfinite_loss < 0);
    assert_int_equal(st.steps_seen, 1); /* rank 1's step 1 has a loss but never ended */
    cg_shard_status(s, 1, &st);
    assert_int_equal(st.nonfinite_loss_step, 2);
    cg_shard_release(&s[0]);
    cg_shard_release(&s[1]);
}

static void test_shard__parses_trace_lines(void **state)
{
    (void)state;
    static const char text[] = "canary-gate-shard 1\n"
                               "pid 7\nwarmup 2\ntw 3 4\n"
                               "s 3 1000 5000 -1\n"
                               "td 1 NCCL\n"
                               "tr 4242 1100 1900 0 forward\n"
                               "tr 4243 1200 1300 1 AllReduce \\x1b[31m\n"
                               "tg kernel 0 7 1500 2500 -1 _Z3fooIiEvT_\n"
                               "tg memcpy 1 13 2600 2700 4096 memcpy HtoD pageable\n"
                               "tm 0 1400 1048576\ntm 0 1600 0\n"
                               "tx 5 2\ntx 6 9\n";
    struct cg_shard s;
    parse(text, &s);
    assert_int_equal(s.warmup, 2);
    assert_int_equal(s.trace_first, 3);
    assert_int_equal(s.trace_last, 4);
    assert_int_equal(s.n_ranges, 2);
    assert_int_equal(s.ranges[1].tid, 4243);
    assert_int_equal(s.ranges[1].domain, 1);
    assert_string_equal(s.ranges[1].name, "AllReduce \x1b[31m");
    assert_int_equal(s.n_domains, 1);
    assert_string_equal(s.domains[0].name, "NCCL");
    assert_int_equal(s.n_gpu_events, 2);
    assert_int_equal(s.gpu_events[0].kind, CG_OP_KERNEL);
    assert_int_equal(s.gpu_events[0].stream, 7);
    assert_int_equal(s.gpu_events[0].bytes, -1);
    assert_int_equal(s.gpu_events[1].bytes, 4096);
    assert_string_equal(s.gpu_events[1].name, "memcpy HtoD pageable");
    assert_int_equal(s.n_mem_events, 2);
    assert_int_equal(s.mem_events[0].total_bytes, 1048576);
    assert_int_equal(s.trace_events, 6); /* the last "tx" counts */
    assert_int_equal(s.trace_dropped, 9);
    cg_shard_release(&s);
    parse("canary-gate-shard 1\ns 0 1 2 -1\n", &s);
    assert_int_equal(s.trace_first, -1);
    assert_int_equal(s.n_ranges + s.n_gpu_events + s.n_mem_events, 0);
    cg_shard_release(&s);
}

static void test_shard__gpu_reasons(void **state)
{
    (void)state;
    struct cg_shard s;
    const char *reason = NULL;
    parse("canary-gate-shard 1\ngpu unavailable CUPTI cannot start: no driver\n", &s);
    assert_false(cg_shard_gpu_available(&s, 1, &reason));
    assert_string_equal(reason, "CUPTI cannot start: no driver");
    cg_shard_release(&s);
    parse("canary-gate-shard 1\ns 0 1 2 -1\n", &s);
    assert_false(cg_shard_gpu_available(&s, 1, &reason));
    assert_non_null(strstr(reason, "never initialised CUDA"));
    cg_shard_release(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shard__parses_every_record),
        cmocka_unit_test(test_shard__ignores_a_line_cut_short),
        cmocka_unit_test(test_shard__rejects_malformed_records),
        cmocka_unit_test(test_shard__merges_ranks),
        cmocka_unit_test(test_shard__loss_is_averaged_per_step_and_over_ranks),
        cmocka_unit_test(test_shard__nonfinite_loss_names_the_first_step),
        cmocka_unit_test(test_shard__parses_trace_lines),
        cmocka_unit_test(test_shard__gpu_reasons),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
