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
#include <stdio.h>
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

/* Where steps came from: the "steps_from" line of the shards with steps, the first known one. */
static void test_shard__steps_from(void **state)
{
    (void)state;
    struct cg_shard sh[3];
    parse("canary-gate-shard 1\npid 1\n", &sh[0]); /* no step */
    parse("canary-gate-shard 1\npid 2\nsteps_from optimizer\ns 0 10 20 -1\n", &sh[1]);
    parse("canary-gate-shard 1\npid 3\ns 0 10 20 -1\n", &sh[2]); /* an older library */
    assert_int_equal(sh[0].steps_from, CG_STEPS_UNKNOWN);
    assert_int_equal(sh[1].steps_from, CG_STEPS_OPTIMIZER);
    struct cg_shard_status st;
    cg_shard_status(sh, 3, &st);
    assert_int_equal(st.steps_from, CG_STEPS_OPTIMIZER);
    cg_shard_status(sh + 2, 1, &st);
    assert_int_equal(st.steps_from, CG_STEPS_UNKNOWN);
    for (int i = 0; i < 3; i++)
        cg_shard_release(&sh[i]);
    parse("canary-gate-shard 1\nsteps_from nvtx\n", &sh[0]);
    assert_int_equal(sh[0].steps_from, CG_STEPS_NVTX);
    cg_shard_release(&sh[0]);
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
        "canary-gate-shard 1\nc 1 2 3 4\n",              /* neither 3 nor 7 counters */
        "canary-gate-shard 1\nc 1 2 3 4 5 6\n",
        "canary-gate-shard 1\nc 1 2 3 4 5 -6 7\n",
        "canary-gate-shard 1\ndone 0\n",                  /* a window has at least one step */
        "canary-gate-shard 1\ndone\n",
        "canary-gate-shard 1\ndone 12 13\n",
        "canary-gate-shard 1\ndone twelve\n",
        "canary-gate-shard 1\ncupti found /usr/lib/libcupti.so.13\n",
        "canary-gate-shard 1\ncupti loaded\n",            /* no path */
        "canary-gate-shard 1\ncupti env /x\\q\n",        /* a bad escape in the path */
        "canary-gate-shard 1\nsteps_from\n",
        "canary-gate-shard 1\nsteps_from markers\n",
        "canary-gate-shard 1\nsteps_from nvtx optimizer\n",
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
    char reason[256];
    assert_true(cg_shard_gpu_available(s, 2, reason, sizeof(reason)));
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
    char reason[256];
    parse("canary-gate-shard 1\ngpu unavailable CUPTI cannot start: no driver\n", &s);
    assert_false(cg_shard_gpu_available(&s, 1, reason, sizeof(reason)));
    assert_string_equal(reason, "CUPTI cannot start: no driver");
    cg_shard_release(&s);
    parse("canary-gate-shard 1\ns 0 1 2 -1\n", &s);
    assert_false(cg_shard_gpu_available(&s, 1, reason, sizeof(reason)));
    assert_non_null(strstr(reason, "never initialised CUDA"));
    cg_shard_release(&s);
    /* no reason on the line (found by fuzz_shard): never an empty reason */
    parse("canary-gate-shard 1\ngpu unavailable \n", &s);
    assert_false(cg_shard_gpu_available(&s, 1, reason, sizeof(reason)));
    assert_string_equal(reason, "CUPTI did not start (no reason given)");
    cg_shard_release(&s);
}

/* The lines of the measured window: "done", "cupti", the 7-field counters, several warnings. */
static const char measured[] =
    "canary-gate-shard 1\npid 300\nwarmup 2\ngpu ok\n"
    "cupti loaded /opt/venv/lib/nvidia/cu13/lib/libcupti.so.13\n"
    "w CUPTI activity kind MEMCPY2 unavailable: CUPTI_ERROR_NOT_SUPPORTED\n"
    "s 0 0 10 -1\ns 1 10 20 -1\ns 2 20 30 -1\n"
    "c 40 1 0 3 30 2 5000\n"
    "w CUPTI activity kind MEMCPY2 unavailable: CUPTI_ERROR_NOT_SUPPORTED\n"
    "w op table full: 7 more names not recorded\n"
    "s 3 30 40 -1\n"
    "c 50 1 0 4 46 2 6000\n"
    "done 4\n";

static void test_shard__parses_the_measured_window_lines(void **state)
{
    (void)state;
    struct cg_shard s;
    parse(measured, &s);
    assert_int_equal(s.done_steps, 4);
    assert_false(s.complete); /* "done" is not "end": the process has not exited */
    assert_string_equal(s.cupti_library, "loaded /opt/venv/lib/nvidia/cu13/lib/libcupti.so.13");
    assert_int_equal(s.records, 50); /* the last "c" line counts */
    assert_int_equal(s.dropped, 1);
    assert_int_equal(s.outside_steps, 4);
    assert_int_equal(s.inside_steps, 46);
    assert_int_equal(s.late_memory, 2);
    assert_int_equal(s.overhead_ns, 6000);
    assert_int_equal(s.n_warnings, 2); /* the repeated one once */
    assert_string_equal(s.warnings[0],
                        "CUPTI activity kind MEMCPY2 unavailable: CUPTI_ERROR_NOT_SUPPORTED");
    assert_string_equal(s.warnings[1], "op table full: 7 more names not recorded");
    cg_shard_release(&s);

    /* an older library's 3-field counters: the new ones unknown, whatever came before */
    parse("canary-gate-shard 1\nc 5 0 0 1 2 3 4\nc 9 1 2\n", &s);
    assert_int_equal(s.records, 9);
    assert_int_equal(s.zero_ts, 2);
    assert_int_equal(s.outside_steps, -1);
    assert_int_equal(s.inside_steps, -1);
    assert_int_equal(s.late_memory, -1);
    assert_int_equal(s.overhead_ns, -1);
    assert_int_equal(s.done_steps, -1);
    assert_null(s.cupti_library);
    cg_shard_release(&s);

    /* fields after the seventh are a newer library's: skipped, as unknown keys are */
    parse("canary-gate-shard 1\nc 5 0 0 1 2 3 4 99 x\n", &s);
    assert_int_equal(s.overhead_ns, 4);
    cg_shard_release(&s);
}

static void test_shard__keeps_at_most_16_distinct_warnings(void **state)
{
    (void)state;
    char text[4096] = "canary-gate-shard 1\n";
    size_t len = strlen(text);
    for (int i = 0; i < 40; i++) {
        int k = snprintf(text + len, sizeof(text) - len, "w warning %d\n", i % 20);
        assert_true(k > 0 && (size_t)k < sizeof(text) - len);
        len += (size_t)k;
    }
    struct cg_shard s;
    parse(text, &s);
    assert_int_equal(s.n_warnings, CG_SHARD_MAX_WARNINGS);
    assert_int_equal(CG_SHARD_MAX_WARNINGS, 16);
    for (size_t i = 0; i < s.n_warnings; i++) {
        char want[32];
        snprintf(want, sizeof(want), "warning %zu", i);
        assert_string_equal(s.warnings[i], want);
    }
    cg_shard_release(&s);
}

static void test_shard__merge_sums_counters_and_gathers_warnings(void **state)
{
    (void)state;
    static const char other[] = "canary-gate-shard 1\npid 301\ngpu ok\n"
                                "s 0 0 12 -1\ns 1 12 22 -1\ns 2 22 32 -1\ns 3 32 45 -1\n"
                                "c 7 0 1 1 6 0 250\n"
                                "w op table full: 7 more names not recorded\n"
                                "w CANARY_GATE_CUPTI_PATH is not a file\n"
                                "done 4\n";
    static const char old_lib[] = "canary-gate-shard 1\npid 302\n"
                                  "s 0 0 12 -1\ns 1 12 22 -1\ns 2 22 32 -1\ns 3 32 45 -1\n"
                                  "c 3 0 0\nend\n";
    struct cg_shard s[3];
    parse(measured, &s[0]);
    parse(other, &s[1]);
    parse(old_lib, &s[2]);
    struct cg_artifact a;
    struct cg_err err;
    cg_artifact_init(&a);
    cg_err_init(&err);
    struct cg_run *run = cg_artifact_add_run(&a);
    struct cg_shard_merge_opts o = {2, 2, -1};
    assert_int_equal(cg_shard_merge(s, 3, &o, run, &err), 0);
    assert_int_equal(run->n_steps, 2);
    assert_int_equal(run->outside_step_records, 5);  /* 4 + 1; the old library's unknown */
    assert_int_equal(run->inside_step_records, 52);  /* 46 + 6 */
    assert_int_equal(run->late_memory_records, 2);
    assert_int_equal(run->cupti_overhead_ns, 6250);
    assert_int_equal(run->dropped_records, 1);
    assert_int_equal(run->stopped_after_steps, -1);  /* the collector's to set */
    assert_int_equal(run->n_warnings, 3);
    assert_string_equal(run->warnings[2], "CANARY_GATE_CUPTI_PATH is not a file");
    cg_artifact_release(&a);

    /* only older libraries: the new counters stay unknown */
    cg_artifact_init(&a);
    run = cg_artifact_add_run(&a);
    assert_int_equal(cg_shard_merge(&s[2], 1, &o, run, &err), 0);
    assert_int_equal(run->outside_step_records, -1);
    assert_int_equal(run->inside_step_records, -1);
    assert_int_equal(run->late_memory_records, -1);
    assert_int_equal(run->cupti_overhead_ns, -1);
    assert_int_equal(run->n_warnings, 0);
    cg_artifact_release(&a);
    for (size_t i = 0; i < 3; i++)
        cg_shard_release(&s[i]);
}

/* Issue 37, item 9: "ss NESTED OTHER" (the last line counts) is read and summed over the
 * processes into the run; a malformed one is refused naming the line. */
static void test_shard__stray_steps_are_read_and_summed(void **state)
{
    (void)state;
    static const char one[] = "canary-gate-shard 1\npid 9\nwarmup 0\n"
                              "s 0 1000 9000 -1\nss 2 0\ns 1 9000 17000 -1\nss 4 7\nend\n";
    static const char two[] = "canary-gate-shard 1\npid 10\nwarmup 0\n"
                              "s 0 1000 9000 -1\ns 1 9000 17000 -1\nss 0 3\nend\n";
    static const char none[] = "canary-gate-shard 1\npid 11\nwarmup 0\n"
                               "s 0 1000 9000 -1\ns 1 9000 17000 -1\nend\n";
    struct cg_shard s[3];
    parse(one, &s[0]);
    parse(two, &s[1]);
    parse(none, &s[2]);
    assert_int_equal(s[0].stray_steps[0], 4);
    assert_int_equal(s[0].stray_steps[1], 7);
    assert_int_equal(s[2].stray_steps[0], 0);
    struct cg_artifact a;
    struct cg_err err;
    cg_artifact_init(&a);
    cg_err_init(&err);
    struct cg_run *run = cg_artifact_add_run(&a);
    assert_int_equal(run->stray_steps_nested, -1); /* unknown until merged */
    struct cg_shard_merge_opts o = {0, 2, -1};
    assert_int_equal(cg_shard_merge(s, 3, &o, run, &err), 0);
    assert_int_equal(run->stray_steps_nested, 4);
    assert_int_equal(run->stray_steps_other_threads, 10);
    cg_artifact_release(&a);
    cg_artifact_init(&a);
    run = cg_artifact_add_run(&a);
    assert_int_equal(cg_shard_merge(&s[2], 1, &o, run, &err), 0);
    assert_int_equal(run->stray_steps_nested, 0); /* counted: none */
    assert_int_equal(run->stray_steps_other_threads, 0);
    cg_artifact_release(&a);
    for (size_t i = 0; i < 3; i++)
        cg_shard_release(&s[i]);
    const char *bad[] = {"ss 4\n", "ss 4 -1\n", "ss 4 7 1\n", "ss x 1\n"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char text[128];
        snprintf(text, sizeof(text), "canary-gate-shard 1\npid 9\n%s", bad[i]);
        struct cg_shard t;
        assert_int_equal(cg_shard_parse(text, strlen(text), "t", &t, &err), CG_EINPUT);
        assert_non_null(strstr(err.msg, "line 3"));
    }
}

static void test_shard__done_when_every_process_with_steps_is_done(void **state)
{
    (void)state;
    static const char done5[] = "canary-gate-shard 1\ns 0 0 10 -1\ns 1 10 20 -1\ndone 5\n";
    static const char done4[] = "canary-gate-shard 1\ns 0 0 10 -1\ndone 4\n";
    static const char running[] = "canary-gate-shard 1\ns 0 0 10 -1\ns 1 10 20 -1\n";
    static const char no_steps[] = "canary-gate-shard 1\npid 9\ngpu ok\n"; /* a data loader */
    struct cg_shard s[4];
    struct cg_shard_status st;
    parse(done5, &s[0]);
    parse(done4, &s[1]);
    parse(running, &s[2]);
    parse(no_steps, &s[3]);

    cg_shard_status(s, 0, &st); /* no shard yet */
    assert_false(st.all_done);
    assert_int_equal(st.done_steps, -1);
    cg_shard_status(&s[3], 1, &st); /* no process marked a step */
    assert_false(st.all_done);
    cg_shard_status(s, 1, &st);
    assert_true(st.all_done);
    assert_int_equal(st.done_steps, 5);
    cg_shard_status(s, 2, &st);
    assert_true(st.all_done);
    assert_int_equal(st.done_steps, 4); /* the smallest */
    struct cg_shard with_loader[2] = {s[0], s[3]};
    cg_shard_status(with_loader, 2, &st); /* a process without steps never holds it up */
    assert_true(st.all_done);
    cg_shard_status(s, 3, &st); /* one process still measuring */
    assert_false(st.all_done);
    assert_int_equal(st.done_steps, -1);
    struct cg_shard late[2] = {s[2], s[0]};
    cg_shard_status(late, 2, &st); /* whatever the order */
    assert_false(st.all_done);
    for (size_t i = 0; i < 4; i++)
        cg_shard_release(&s[i]);
}

static void test_shard__gpu_records_all_outside_the_steps_give_no_gpu_metrics(void **state)
{
    (void)state;
    static const char outside[] = "canary-gate-shard 1\ngpu ok\ns 0 0 10 -1\n"
                                  "c 40 0 0 37 0 3 0\n";
    static const char outside2[] = "canary-gate-shard 1\ngpu ok\ns 0 0 10 -1\n"
                                   "c 10 0 0 5 0 0 0\n";
    static const char inside[] = "canary-gate-shard 1\ngpu ok\ns 0 0 10 -1\n"
                                 "c 10 0 0 5 1 0 0\n";
    static const char old_lib[] = "canary-gate-shard 1\ngpu ok\ns 0 0 10 -1\nc 10 0 0\n";
    static const char no_cupti[] = "canary-gate-shard 1\ngpu unavailable no driver\n"
                                   "s 0 0 10 -1\nc 0 0 0 3 0 0 0\n";
    struct cg_shard s[5];
    char reason[256];
    parse(outside, &s[0]);
    parse(outside2, &s[1]);
    parse(inside, &s[2]);
    parse(old_lib, &s[3]);
    parse(no_cupti, &s[4]);
    assert_false(cg_shard_gpu_available(s, 1, reason, sizeof(reason)));
    assert_string_equal(reason, "37 GPU activity records fell outside every step");
    assert_false(cg_shard_gpu_available(s, 2, reason, sizeof(reason))); /* over all processes */
    assert_string_equal(reason, "42 GPU activity records fell outside every step");
    assert_true(cg_shard_gpu_available(s, 3, reason, sizeof(reason))); /* one record inside */
    assert_true(cg_shard_gpu_available(&s[3], 1, reason, sizeof(reason))); /* not counted */
    assert_false(cg_shard_gpu_available(&s[4], 1, reason, sizeof(reason)));
    assert_string_equal(reason, "no driver"); /* CUPTI never ran: its own reason */
    char small[8];
    assert_false(cg_shard_gpu_available(s, 1, small, sizeof(small)));
    assert_string_equal(small, "37 GPU "); /* cut to fit */
    for (size_t i = 0; i < 5; i++)
        cg_shard_release(&s[i]);
}

/* n "o" lines after the magic, in a malloc'ed buffer; *len its length. */
static char *op_lines(size_t n, size_t *len)
{
    static const char magic[] = "canary-gate-shard 1\n";
    size_t cap = sizeof(magic) + n * 32, k = strlen(magic);
    char *text = malloc(cap);
    assert_non_null(text);
    memcpy(text, magic, k);
    for (size_t i = 0; i < n; i++) {
        int w = snprintf(text + k, cap - k, "o range 1 10 r%zu\n", i % 1000);
        assert_true(w > 0 && (size_t)w < cap - k);
        k += (size_t)w;
    }
    *len = k;
    return text;
}

/* Count lines: deltas add up per step and name, "nc" names the GPU counts a process measures,
 * a count word of a newer library is skipped, a malformed count line is an error. */
static void test_shard__count_lines(void **state)
{
    (void)state;
    static const char text[] = "canary-gate-shard 1\n"
                               "gpu ok\n"
                               "nc kernels sync_stream sync_ns future_count\n"
                               "s 0 100 200 -1\n"
                               "n 0 kernels 3\nn 0 ranges 2\n"
                               "s 1 200 300 -1\n"
                               "n 0 kernels 2\nn 1 kernels 7\nn 1 sync_stream 1\n"
                               "n 1 sync_ns 4000\nn 1 future_count 9\n"
                               "end\n";
    struct cg_shard s;
    parse(text, &s);
    assert_int_equal(s.steps[0].counts[CG_COUNT_KERNELS], 5);
    assert_int_equal(s.steps[0].counts[CG_COUNT_RANGES], 2);
    assert_int_equal(s.steps[1].counts[CG_COUNT_KERNELS], 7);
    assert_int_equal(s.steps[1].counts[CG_COUNT_SYNC_STREAM], 1);
    assert_int_equal(s.steps[1].sync_ns, 4000);
    assert_true(s.counted[CG_COUNT_KERNELS] && s.counted[CG_COUNT_SYNC_STREAM]);
    assert_false(s.counted[CG_COUNT_JIT]);
    assert_true(s.times_counted[CG_SHARD_T_SYNC - CG_COUNT_N]);
    cg_shard_release(&s);
    static const char *const bad[] = {"n 0 kernels\n", "n x kernels 1\n", "n 0 kernels -1\n",
                                      "n 0 kernels 1 2\n", "n 0  1\n"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char buf[256];
        struct cg_err err;
        cg_err_init(&err);
        snprintf(buf, sizeof(buf), "canary-gate-shard 1\n%s", bad[i]);
        if (cg_shard_parse(buf, strlen(buf), "bad.shard", &s, &err) != CG_EINPUT)
            fail_msg("'%s' was accepted", bad[i]);
        cg_shard_release(&s);
    }
}

/* Merged counts: summed over processes with steps, warm-up dropped; unknown when some process
 * did not measure the count (no "nc" for it, or no GPU); "ranges" always known. */
static void test_shard__merge_counts(void **state)
{
    (void)state;
    static const char a[] = "canary-gate-shard 1\ngpu ok\nnc kernels jit sync_ns\n"
                            "s 0 100 200 -1\ns 1 200 300 -1\ns 2 300 400 -1\n"
                            "n 0 kernels 50\nn 1 kernels 4\nn 2 kernels 4\nn 1 ranges 3\n"
                            "n 1 sync_ns 700\nn 2 sync_ns 100\nend\n";
    static const char b[] = "canary-gate-shard 1\ngpu ok\nnc kernels sync_ns\n"
                            "s 0 100 200 -1\ns 1 200 300 -1\ns 2 300 400 -1\n"
                            "n 1 kernels 6\nn 2 kernels 6\nn 2 ranges 1\n"
                            "n 1 sync_ns 500\nn 2 sync_ns 900\nend\n";
    struct cg_shard s[2];
    parse(a, &s[0]);
    parse(b, &s[1]);
    struct cg_artifact art;
    cg_artifact_init(&art);
    struct cg_run *run = cg_artifact_add_run(&art);
    struct cg_shard_merge_opts o = {1, 5, -1};
    struct cg_err err;
    cg_err_init(&err);
    assert_int_equal(cg_shard_merge(s, 2, &o, run, &err), 0);
    assert_int_equal(run->n_steps, 2);
    assert_int_equal(run->steps[0].counts[CG_COUNT_KERNELS], 10); /* 4 + 6 */
    assert_int_equal(run->steps[1].counts[CG_COUNT_KERNELS], 10);
    assert_int_equal(run->steps[0].counts[CG_COUNT_RANGES], 3);
    assert_int_equal(run->steps[1].counts[CG_COUNT_RANGES], 1);
    assert_int_equal(run->steps[0].counts[CG_COUNT_JIT], -1); /* b did not measure it */
    assert_int_equal(run->steps[0].counts[CG_COUNT_SYNC_STREAM], -1);
    assert_int_equal(run->steps[0].sync_ns, 700); /* the longest wait of any process */
    assert_int_equal(run->steps[1].sync_ns, 900);
    cg_artifact_release(&art);
    cg_shard_release(&s[0]);
    cg_shard_release(&s[1]);
    /* without a GPU only the NVTX ranges are known */
    static const char cpu[] = "canary-gate-shard 1\ngpu unavailable no driver\nnc kernels\n"
                              "s 0 100 200 -1\ns 1 200 300 -1\nn 1 ranges 2\nn 1 kernels 3\n"
                              "end\n";
    parse(cpu, &s[0]);
    cg_artifact_init(&art);
    run = cg_artifact_add_run(&art);
    assert_int_equal(cg_shard_merge(s, 1, &o, run, &err), 0);
    assert_int_equal(run->steps[0].counts[CG_COUNT_RANGES], 2);
    assert_int_equal(run->steps[0].counts[CG_COUNT_KERNELS], -1);
    assert_int_equal(run->steps[0].sync_ns, -1);
    cg_artifact_release(&art);
    cg_shard_release(&s[0]);
}

/* The work counts of steps from the optimizer (backward passes, optimizer steps): known, GPU or
 * not, in a process that named them in an "nc" line (its optimizers hooked), summed over the
 * processes; unknown when a process with steps did not name them. */
static void test_shard__work_counts_are_known_where_named(void **state)
{
    (void)state;
    static const char a[] = "canary-gate-shard 1\ngpu unavailable no driver\n"
                            "nc backward optimizer_steps\n"
                            "s 0 100 200 -1\ns 1 200 300 -1\ns 2 300 400 -1\n"
                            "n 1 backward 1\nn 1 backward 1\nn 1 optimizer_steps 1\n"
                            "n 2 optimizer_steps 2\nend\n";
    static const char b[] = "canary-gate-shard 1\ngpu ok\nnc kernels\nnc backward optimizer_steps\n"
                            "s 0 100 200 -1\ns 1 200 300 -1\ns 2 300 400 -1\n"
                            "n 1 backward 2\nn 2 backward 2\nn 1 optimizer_steps 1\nend\n";
    static const char none[] = "canary-gate-shard 1\ngpu unavailable no driver\n"
                               "s 0 100 200 -1\ns 1 200 300 -1\ns 2 300 400 -1\nend\n";
    struct cg_shard s[2];
    parse(a, &s[0]);
    parse(b, &s[1]);
    struct cg_artifact art;
    cg_artifact_init(&art);
    struct cg_run *run = cg_artifact_add_run(&art);
    struct cg_shard_merge_opts o = {1, 5, -1};
    struct cg_err err;
    cg_err_init(&err);
    assert_int_equal(cg_shard_merge(s, 2, &o, run, &err), 0);
    assert_int_equal(run->n_steps, 2);
    assert_int_equal(run->steps[0].counts[CG_COUNT_BACKWARD], 4); /* 1 + 1 + 2 */
    assert_int_equal(run->steps[1].counts[CG_COUNT_BACKWARD], 2);
    assert_int_equal(run->steps[0].counts[CG_COUNT_OPTIMIZER_STEPS], 2);
    assert_int_equal(run->steps[1].counts[CG_COUNT_OPTIMIZER_STEPS], 2);
    assert_int_equal(run->steps[0].counts[CG_COUNT_KERNELS], -1); /* a had no GPU */
    cg_artifact_release(&art);
    cg_shard_release(&s[1]);
    parse(none, &s[1]);
    cg_artifact_init(&art);
    run = cg_artifact_add_run(&art);
    assert_int_equal(cg_shard_merge(s, 2, &o, run, &err), 0);
    assert_int_equal(run->steps[0].counts[CG_COUNT_BACKWARD], -1); /* not counted by one */
    assert_int_equal(run->steps[0].counts[CG_COUNT_OPTIMIZER_STEPS], -1);
    cg_artifact_release(&art);
    cg_shard_release(&s[0]);
    cg_shard_release(&s[1]);
}

/* Merged compute and copy time: the busiest process's (by GPU busy time), so that busy minus
 * compute is one process's exposed communication; unknown when some process did not name them. */
static void test_shard__merge_compute_and_copy_time(void **state)
{
    (void)state;
    static const char a[] = "canary-gate-shard 1\ngpu ok\n"
                            "nc kernels compute_ns copy_ns copy_hidden_ns\n"
                            "s 0 100 2000 -1\ns 1 2000 4000 -1\n"
                            "b 0 900\nb 1 1500\nn 0 compute_ns 800\nn 1 compute_ns 1000\n"
                            "n 1 compute_ns 100\nn 0 copy_ns 30\nn 1 copy_ns 40\n"
                            "n 1 copy_hidden_ns 15\nn 1 copy_hidden_ns 10\nend\n";
    static const char b[] = "canary-gate-shard 1\ngpu ok\n"
                            "nc kernels compute_ns copy_ns copy_hidden_ns\n"
                            "s 0 100 2000 -1\ns 1 2000 4000 -1\n"
                            "b 0 1200\nb 1 1000\nn 0 compute_ns 1200\nn 1 compute_ns 900\n"
                            "n 0 copy_ns 70\nn 0 copy_hidden_ns 70\nend\n";
    struct cg_shard s[2];
    parse(a, &s[0]);
    parse(b, &s[1]);
    assert_int_equal(s[0].steps[1].compute_ns, 1100);
    assert_true(s[0].times_counted[CG_SHARD_T_COMPUTE - CG_COUNT_N]);
    assert_true(s[0].times_counted[CG_SHARD_T_COPY - CG_COUNT_N]);
    assert_false(s[0].times_counted[CG_SHARD_T_SYNC - CG_COUNT_N]);
    assert_true(s[0].times_counted[CG_SHARD_T_COPY_HIDDEN - CG_COUNT_N]);
    assert_int_equal(s[0].steps[1].copy_hidden_ns, 25);
    struct cg_artifact art;
    cg_artifact_init(&art);
    struct cg_run *run = cg_artifact_add_run(&art);
    struct cg_shard_merge_opts o = {0, 5, -1};
    struct cg_err err;
    cg_err_init(&err);
    assert_int_equal(cg_shard_merge(s, 2, &o, run, &err), 0);
    assert_int_equal(run->steps[0].gpu_busy_ns, 1200);
    assert_int_equal(run->steps[0].compute_ns, 1200); /* b's: busiest in step 0 */
    assert_int_equal(run->steps[0].copy_ns, 70);
    assert_int_equal(run->steps[0].copy_hidden_ns, 70);
    assert_int_equal(run->steps[1].gpu_busy_ns, 1500);
    assert_int_equal(run->steps[1].compute_ns, 1100); /* a's: busiest in step 1 */
    assert_int_equal(run->steps[1].copy_ns, 40);
    assert_int_equal(run->steps[1].copy_hidden_ns, 25);
    cg_artifact_release(&art);
    cg_shard_release(&s[1]);
    /* a process that did not name them: unknown */
    static const char c[] = "canary-gate-shard 1\ngpu ok\nnc kernels\n"
                            "s 0 100 2000 -1\ns 1 2000 4000 -1\nb 0 100\nb 1 100\nend\n";
    parse(c, &s[1]);
    cg_artifact_init(&art);
    run = cg_artifact_add_run(&art);
    assert_int_equal(cg_shard_merge(s, 2, &o, run, &err), 0);
    assert_int_equal(run->steps[0].compute_ns, -1);
    assert_int_equal(run->steps[0].copy_ns, -1);
    assert_int_equal(run->steps[0].copy_hidden_ns, -1);
    cg_artifact_release(&art);
    cg_shard_release(&s[0]);
    cg_shard_release(&s[1]);
}

/* "np" lines: summed by count, place and name (a newer count skipped, a bad one an error);
 * merged over processes when every process with steps placed its calls ("places" in "nc"),
 * sorted, an empty name as its op's "(unnamed)"; unknown when one did not. */
static void test_shard__places(void **state)
{
    (void)state;
    static const char a[] = "canary-gate-shard 1\ngpu ok\nnc sync_stream places\n"
                            "s 0 100 200 -1\ns 1 200 300 -1\n"
                            "np sync_stream in 1 fwd pass\nnp sync_stream in 2 fwd pass\n"
                            "np sync_stream after 1 fwd pass\nnp dtoh_pageable in 4 \n"
                            "np future_count in 9 fwd\nend\n";
    static const char b[] = "canary-gate-shard 1\ngpu ok\nnc sync_stream places\n"
                            "s 0 100 200 -1\ns 1 200 300 -1\n"
                            "np sync_stream in 5 fwd pass\nnp sync_context in 1 bwd\nend\n";
    struct cg_shard s[2];
    parse(a, &s[0]);
    parse(b, &s[1]);
    assert_true(s[0].placed);
    assert_int_equal(s[0].n_places, 3);
    assert_string_equal(s[0].places[0].name, "fwd pass");
    assert_int_equal(s[0].places[0].calls, 3);
    assert_false(s[0].places[0].after);
    assert_true(s[0].places[1].after);
    struct cg_artifact art;
    cg_artifact_init(&art);
    struct cg_run *run = cg_artifact_add_run(&art);
    struct cg_shard_merge_opts o = {0, 5, -1};
    struct cg_err err;
    cg_err_init(&err);
    assert_int_equal(cg_shard_merge(s, 2, &o, run, &err), 0);
    assert_true(run->places_measured);
    struct {
        int count;
        bool after;
        const char *range;
        int64_t calls;
    } want[] = {{CG_COUNT_SYNC_STREAM, false, "fwd pass", 8},
                {CG_COUNT_SYNC_STREAM, true, "fwd pass", 1},
                {CG_COUNT_SYNC_CONTEXT, false, "bwd", 1},
                {CG_COUNT_DTOH_PAGEABLE, false, "(unnamed)", 4}};
    assert_int_equal(run->n_places, 4);
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(run->places[i].count, want[i].count);
        assert_int_equal(run->places[i].after, want[i].after);
        assert_string_equal(run->places[i].range, want[i].range);
        assert_int_equal(run->places[i].calls, want[i].calls);
    }
    cg_artifact_release(&art);
    cg_shard_release(&s[1]);
    /* a process that did not place its calls: the run's places are unknown */
    static const char c[] = "canary-gate-shard 1\ngpu ok\nnc sync_stream\n"
                            "s 0 100 200 -1\ns 1 200 300 -1\nend\n";
    parse(c, &s[1]);
    cg_artifact_init(&art);
    run = cg_artifact_add_run(&art);
    assert_int_equal(cg_shard_merge(s, 2, &o, run, &err), 0);
    assert_false(run->places_measured);
    assert_int_equal(run->n_places, 0);
    cg_artifact_release(&art);
    cg_shard_release(&s[0]);
    cg_shard_release(&s[1]);
    static const char *const bad[] = {"np sync_stream in 1\n",       "np sync_stream near 1 x\n",
                                      "np sync_stream in -1 x\n",    "np kernels in 1 x\n",
                                      "np sync_wait_event in 1 x\n", "np  in 1 x\n"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char buf[256];
        snprintf(buf, sizeof(buf), "canary-gate-shard 1\n%s", bad[i]);
        if (cg_shard_parse(buf, strlen(buf), "bad.shard", &s[0], &err) != CG_EINPUT)
            fail_msg("'%s' was accepted", bad[i]);
        cg_shard_release(&s[0]);
    }
}

static void test_shard__op_line_limit_is_named(void **state)
{
    (void)state;
    struct cg_shard s;
    struct cg_err err;
    size_t len;
    char *text = op_lines(CG_SHARD_MAX_OPS, &len);
    cg_err_init(&err);
    if (cg_shard_parse(text, len, "ops.shard", &s, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(s.n_ops, 1000000);
    cg_shard_release(&s);
    free(text);

    text = op_lines(CG_SHARD_MAX_OPS + 1, &len);
    assert_int_equal(cg_shard_parse(text, len, "ops.shard", &s, &err), CG_EINPUT);
    assert_string_equal(err.msg, "shard 'ops.shard' line 1000002: more than 1000000 op lines "
                                 "(the shard limit)");
    assert_int_equal(s.n_ops, 0);
    free(text);
}

/* A shard of rank r (-1: none) on host (and Slurm node, NULL: none), with three steps. */
static void placed_shard(struct cg_shard *s, int r, const char *host, const char *node)
{
    char text[512], rank[32] = "", slurm[96] = "";
    if (r >= 0)
        snprintf(rank, sizeof(rank), "rank %d\nworld_size 4\n", r);
    if (node != NULL)
        snprintf(slurm, sizeof(slurm), "slurm_node %s\n", node);
    snprintf(text, sizeof(text),
             "canary-gate-shard 1\npid %d\n%shost %s\n%swarmup 0\n"
             "s 0 100 200 -1\ns 1 200 300 -1\ns 2 300 400 -1\nend\n",
             r >= 0 ? 1000 + r : 999, rank, host, slurm);
    parse(text, s);
}

/* --redact matching host names made every hidden host one "***" node: a run of two nodes read
 * as one node of all the ranks (its per-node figures merged, its node shape another machine's).
 * Each hidden name is shown by what redaction left and a number, the names numbered by the
 * lowest rank that ran there (shards without a rank after), so hosts stay apart, the same in
 * every output, whatever order the shard directory lists them in; a name no pattern matched
 * keeps its number from being taken. */
static void test_shard__redacted_host_names_stay_distinct_nodes(void **state)
{
    (void)state;
    static const struct {
        const char *what, *hosts[5], *nodes[5], *pattern, *shown[5], *shape;
    } cases[] = {
        {"two hidden hosts, one also its Slurm node, and a process without a rank",
         {"gpu-b7", "gpu-a1", "gpu-b7", "gpu-a1", "gpu-c9"},
         {NULL, NULL, NULL, "gpu-a1", NULL},
         "gpu-[a-z][0-9]",
         {"*** #2", "*** #1", "*** #2", "*** #1", "*** #3"},
         "2 nodes of 2 ranks"},
        {"a partial match keeps what it did not hide",
         {"n-secret-2", "n-secret-1", "n-secret-2", "n-secret-1", "n-secret-1"},
         {NULL, NULL, NULL, NULL, NULL},
         "secret",
         {"n-***-2 #2", "n-***-1 #1", "n-***-2 #2", "n-***-1 #1", "n-***-1 #1"},
         "2 nodes of 2 ranks"},
        {"a visible host already shown as a placeholder",
         {"*** #1", "gpu-a1", "*** #1", "gpu-a1", "gpu-a1"},
         {NULL, NULL, NULL, NULL, NULL},
         "gpu-[a-z][0-9]",
         {"*** #1", "*** #2", "*** #1", "*** #2", "*** #2"},
         "2 nodes of 2 ranks"},
    };
    static const int ranks[5] = {3, 0, 2, 1, -1};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        struct cg_shard s[5];
        for (int i = 0; i < 5; i++)
            placed_shard(&s[i], ranks[i], cases[c].hosts[i], cases[c].nodes[i]);
        struct cg_redact *r = NULL;
        struct cg_err err;
        cg_err_init(&err);
        assert_int_equal(cg_redact_new(NULL, &r, &err), 0);
        assert_int_equal(cg_redact_add_pattern(r, cases[c].pattern, &err), 0);
        assert_int_equal(cg_shard_redact(s, 5, r, &err), 0);
        cg_redact_free(r);
        for (int i = 0; i < 5; i++) {
            if (strcmp(s[i].host, cases[c].shown[i]) != 0)
                fail_msg("%s: shard %d's host shown as '%s', expected '%s'", cases[c].what, i,
                         s[i].host, cases[c].shown[i]);
            if (s[i].slurm_node != NULL && strcmp(s[i].slurm_node, cases[c].shown[i]) != 0)
                fail_msg("%s: shard %d's Slurm node shown as '%s'", cases[c].what, i,
                         s[i].slurm_node);
        }
        struct cg_artifact a;
        cg_artifact_init(&a);
        struct cg_run *run = cg_artifact_add_run(&a);
        struct cg_shard_merge_opts o = {0, 3, -1};
        assert_int_equal(cg_shard_merge(s, 4, &o, run, &err), 0);
        char shape[CG_SHAPE_MAX];
        assert_int_equal(cg_ranks_shape(run->ranks, run->n_ranks, shape, sizeof(shape)), 0);
        if (strcmp(shape, cases[c].shape) != 0)
            fail_msg("%s: the run's shape is '%s', expected '%s'", cases[c].what, shape,
                     cases[c].shape);
        cg_artifact_release(&a);
        for (int i = 0; i < 5; i++)
            cg_shard_release(&s[i]);
    }
}

/* --redact hiding a Slurm node's name and its host's longer one (NodeName gpu-a01, host name
 * gpu-a01.cluster) numbered every name it hid in one sequence: the nodes were "*** #1" and
 * "*** #3" (no #2) and the trace's hosts "***.cluster #2" and "***.cluster #4". A host and its
 * node share one number, the node's, so the artifact's nodes are #1 and #2 and the trace names
 * each host by its node's number; two Slurm nodes on one host stay two numbers. */
static void test_shard__a_hidden_host_has_the_number_of_its_slurm_node(void **state)
{
    (void)state;
    static const struct {
        const char *what, *hosts[4], *nodes[4], *shown_host[4], *shown_node[4];
    } cases[] = {
        {"each node its own host",
         {"gpu-a02.cluster", "gpu-a01.cluster", "gpu-a02.cluster", "gpu-a01.cluster"},
         {"gpu-a02", "gpu-a01", "gpu-a02", "gpu-a01"},
         {"***.cluster #2", "***.cluster #1", "***.cluster #2", "***.cluster #1"},
         {"*** #2", "*** #1", "*** #2", "*** #1"}},
        {"two Slurm nodes on one host",
         {"gpu-a01.cluster", "gpu-a01.cluster", "gpu-a01.cluster", "gpu-a01.cluster"},
         {"gpu-a02", "gpu-a01", "gpu-a02", "gpu-a01"},
         {"***.cluster #1", "***.cluster #1", "***.cluster #1", "***.cluster #1"},
         {"*** #2", "*** #1", "*** #2", "*** #1"}},
        {"one name hidden of each node and its host's in clear",
         {"h1", "h0", "h1", "h0"},
         {"gpu-a02", "gpu-a01", "gpu-a02", "gpu-a01"},
         {"h1", "h0", "h1", "h0"},
         {"*** #2", "*** #1", "*** #2", "*** #1"}},
    };
    static const int ranks[4] = {3, 0, 2, 1};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        struct cg_shard s[4];
        for (int i = 0; i < 4; i++)
            placed_shard(&s[i], ranks[i], cases[c].hosts[i], cases[c].nodes[i]);
        struct cg_redact *r = NULL;
        struct cg_err err;
        cg_err_init(&err);
        assert_int_equal(cg_redact_new(NULL, &r, &err), 0);
        assert_int_equal(cg_redact_add_pattern(r, "gpu-a0[0-9]", &err), 0);
        assert_int_equal(cg_shard_redact(s, 4, r, &err), 0);
        cg_redact_free(r);
        for (int i = 0; i < 4; i++)
            if (strcmp(s[i].host, cases[c].shown_host[i]) != 0 ||
                strcmp(s[i].slurm_node, cases[c].shown_node[i]) != 0)
                fail_msg("%s: shard %d shown as host '%s' on node '%s', expected '%s' on '%s'",
                         cases[c].what, i, s[i].host, s[i].slurm_node, cases[c].shown_host[i],
                         cases[c].shown_node[i]);
        for (int i = 0; i < 4; i++)
            cg_shard_release(&s[i]);
    }
}

/* Peak device memory is per device, the device named by its UUID ("uuid ID UUID"), not by the CUDA
 * id a process sees: with CUDA_VISIBLE_DEVICES set per rank every rank's device is 0. Processes on
 * one device add up (an upper bound of what they held together: docs/collector.md); a shard
 * without "uuid" lines (an older library, or no DEVICE record) keeps the CUDA id. */
static void test_shard__peak_per_device_by_uuid(void **state)
{
    (void)state;
#define SHARD_HEAD "canary-gate-shard 1\npid 1\ngpu ok\ns 0 1000 2000 -1\n"
#define UUID_A "GPU-6a1e2f30-0b1c-4d2e-8f30-415263748596"
#define UUID_B "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f"
    static const struct {
        const char *what, *shard[2];
        int64_t peak;
    } cases[] = {
        {"one GPU per rank, each its device 0",
         {SHARD_HEAD "uuid 0 " UUID_A "\nm 0 5000\nend\n",
          SHARD_HEAD "m 0 7000\nuuid 0 " UUID_B "\nend\n"},
         7000},
        {"two ranks on one GPU",
         {SHARD_HEAD "uuid 0 " UUID_A "\nm 0 5000\nend\n",
          SHARD_HEAD "uuid 0 " UUID_A "\nm 0 7000\nend\n"},
         12000},
        {"the same GPU under other ids",
         {SHARD_HEAD "uuid 0 " UUID_A "\nuuid 1 " UUID_B "\nm 0 5000\nm 1 3000\nend\n",
          SHARD_HEAD "uuid 0 " UUID_B "\nm 0 4000\nend\n"},
         7000},
        {"shards without uuid lines: by CUDA id",
         {SHARD_HEAD "m 0 5000\nend\n", SHARD_HEAD "m 0 7000\nend\n"},
         12000},
        {"no memory line: unknown", {SHARD_HEAD "uuid 0 " UUID_A "\nend\n", SHARD_HEAD "end\n"},
         -1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct cg_shard s[2];
        struct cg_artifact a;
        struct cg_err err;
        parse(cases[i].shard[0], &s[0]);
        parse(cases[i].shard[1], &s[1]);
        cg_artifact_init(&a);
        struct cg_run *run = cg_artifact_add_run(&a);
        struct cg_shard_merge_opts o = {0, 5, -1};
        cg_err_init(&err);
        assert_int_equal(cg_shard_merge(s, 2, &o, run, &err), 0);
        if (run->summary.peak_device_bytes != cases[i].peak)
            fail_msg("%s: peak %lld, expected %lld", cases[i].what,
                     (long long)run->summary.peak_device_bytes, (long long)cases[i].peak);
        cg_artifact_release(&a);
        cg_shard_release(&s[0]);
        cg_shard_release(&s[1]);
    }
    static const char *const bad[] = {
        "canary-gate-shard 1\nuuid 0\n",
        "canary-gate-shard 1\nuuid x " UUID_A "\n",
        "canary-gate-shard 1\nuuid 0 GPU-a b\n",
        "canary-gate-shard 1\nuuid 0 GPU-\\x09\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct cg_shard s;
        struct cg_err err;
        cg_err_init(&err);
        if (cg_shard_parse(bad[i], strlen(bad[i]), "bad.shard", &s, &err) != CG_EINPUT)
            fail_msg("accepted '%s'", bad[i]);
    }
#undef SHARD_HEAD
#undef UUID_A
#undef UUID_B
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shard__parses_every_record),
        cmocka_unit_test(test_shard__count_lines),
        cmocka_unit_test(test_shard__merge_counts),
        cmocka_unit_test(test_shard__work_counts_are_known_where_named),
        cmocka_unit_test(test_shard__merge_compute_and_copy_time),
        cmocka_unit_test(test_shard__steps_from),
        cmocka_unit_test(test_shard__ignores_a_line_cut_short),
        cmocka_unit_test(test_shard__rejects_malformed_records),
        cmocka_unit_test(test_shard__merges_ranks),
        cmocka_unit_test(test_shard__peak_per_device_by_uuid),
        cmocka_unit_test(test_shard__redacted_host_names_stay_distinct_nodes),
        cmocka_unit_test(test_shard__a_hidden_host_has_the_number_of_its_slurm_node),
        cmocka_unit_test(test_shard__loss_is_averaged_per_step_and_over_ranks),
        cmocka_unit_test(test_shard__nonfinite_loss_names_the_first_step),
        cmocka_unit_test(test_shard__parses_trace_lines),
        cmocka_unit_test(test_shard__gpu_reasons),
        cmocka_unit_test(test_shard__parses_the_measured_window_lines),
        cmocka_unit_test(test_shard__keeps_at_most_16_distinct_warnings),
        cmocka_unit_test(test_shard__merge_sums_counters_and_gathers_warnings),
        cmocka_unit_test(test_shard__stray_steps_are_read_and_summed),
        cmocka_unit_test(test_shard__done_when_every_process_with_steps_is_done),
        cmocka_unit_test(test_shard__gpu_records_all_outside_the_steps_give_no_gpu_metrics),
        cmocka_unit_test(test_shard__places),
        cmocka_unit_test(test_shard__op_line_limit_is_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
