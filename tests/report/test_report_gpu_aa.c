/*
 * test_report_gpu_aa: what `canary-gate aa` says of the GPU's own state across its runs
 * (report_gpu_aa.h): steady clocks, floating clocks with the advice to lock them (not when they
 * are locked), runs held back or shared, and a state that was not measured.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fixtures.h"
#include "report.h"
#include "report_gpu_aa.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static void make(struct cg_artifact *a)
{
    struct cg_fixture f = {6, 20, 10e6, 0.0, 0.0, 1024, 1 << 30, 200 << 20, 0, 1};
    cg_artifact_init(a);
    assert_int_equal(cg_fixture_make(a, &f), 0);
    assert_int_equal(cg_fixture_set_gpu(a, 0.5, 0.4, 1980), 0);
}

static const char *text(const struct cg_artifact *a, struct cg_buf *b, bool *advice)
{
    cg_buf_init(b, 1 << 16);
    assert_int_equal(cg_report_gpu_aa(a, b, advice), 0);
    return cg_buf_str(b);
}

static void test_report_gpu_aa__steady_floating_and_locked_clocks(void **state)
{
    (void)state;
    struct cg_artifact a;
    struct cg_buf b;
    bool advice;
    make(&a);
    const char *t = text(&a, &b, &advice);
    if (strstr(t, "GPU 0: SM clock medians 1980 to 1980 MHz over 6 runs (0.0% apart)") == NULL ||
        strstr(t, "clocks steady across these runs") == NULL ||
        strstr(t, "settings: clocks not locked, power limit 700 W, persistence mode on") == NULL)
        fail_msg("%s", t);
    assert_false(advice);
    cg_buf_release(&b);
    /* half the processes at 1755 MHz: floating, not locked -> lock them */
    for (size_t r = 0; r < 3; r++)
        a.runs[r].gpu.dev[0].sm_median_mhz = a.runs[r].gpu.dev[0].sm_min_mhz = 1755;
    t = text(&a, &b, &advice);
    if (strstr(t, "SM clock medians 1755 to 1980 MHz over 6 runs (11.4% apart)") == NULL ||
        strstr(t, "clocks float here") == NULL ||
        strstr(t, "--lock-gpu-clocks=F,F") == NULL || strstr(t, "lowest median here, 1755 MHz") == NULL)
        fail_msg("%s", t);
    assert_true(advice);
    cg_buf_release(&b);
    /* locked: no advice to lock, a pointer to the reasons */
    a.env.gpu_env.clocks_locked = 1;
    t = text(&a, &b, &advice);
    assert_false(advice);
    assert_non_null(strstr(t, "clocks float although they are locked"));
    cg_buf_release(&b);
    cg_artifact_release(&a);
}

static void test_report_gpu_aa__held_shared_and_unmeasured(void **state)
{
    (void)state;
    struct cg_artifact a;
    struct cg_buf b;
    make(&a);
    cg_fixture_hold(&a, 0, 2, CG_GPU_R_HW_SLOWDOWN, 10);
    cg_fixture_hold(&a, 4, 1, -1, 5);
    /* one sample in 200, as the gate reads it (gpu_rule.h): neither held back nor shared */
    a.runs[3].gpu.dev[0].samples = 200;
    cg_fixture_hold(&a, 3, 1, CG_GPU_R_HW_SLOWDOWN, 1);
    a.runs[5].gpu.dev[0].samples = 200;
    cg_fixture_hold(&a, 5, 1, -1, 1);
    const char *t = text(&a, &b, NULL);
    if (strstr(t, "GPU 0: 2 runs held back by a reason not the workload's own") == NULL ||
        strstr(t, "1 shared with another process") == NULL)
        fail_msg("%s", t);
    cg_buf_release(&b);
    cg_artifact_release(&a);
    /* no state recorded (an older artifact, or no NVML): said, nothing made up */
    struct cg_fixture f = {3, 20, 10e6, 0.0, 0.0, 1024, -1, 200 << 20, 0, 1};
    cg_artifact_init(&a);
    assert_int_equal(cg_fixture_make(&a, &f), 0);
    t = text(&a, &b, NULL);
    assert_non_null(strstr(t, "not measured: not recorded (an older artifact)"));
    assert_null(strstr(t, "clocks"));
    cg_buf_release(&b);
    cg_artifact_release(&a);
}

/* GPU metrics held by another tool: the reports say which and how to pause it; any other reason
 * gets no advice. */
static void test_report_gpu_aa__advice_names_the_tool_holding_the_gpu(void **state)
{
    (void)state;
    static const struct {
        const char *reason, *says;
    } cases[] = {
        {"another profiler holds the CUPTI subscriber slot: NVIDIA Nsight Systems", "nsys shutdown"},
        {"another profiler holds the CUPTI subscriber slot: kineto", "torch.profiler is on"},
        {"another profiler holds the CUPTI subscriber slot: unknown tool",
         "another CUPTI client"},
        {"CUPTI cannot start: CUPTI_ERROR_HARDWARE_BUSY", "dcgmi profile --pause"},
        {"another profiler holds the CUPTI subscriber slot: dcgm-exporter", "dcgmi profile --pause"},
        {"CUPTI cannot start: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES",
         "NVreg_RestrictProfilingToAdminUsers=0"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *a = cg_report_gpu_advice(cases[i].reason);
        if (a == NULL || strstr(a, cases[i].says) == NULL)
            fail_msg("'%s': %s", cases[i].reason, a != NULL ? a : "(none)");
    }
    assert_null(cg_report_gpu_advice("the canary never initialised CUDA"));
    assert_null(cg_report_gpu_advice(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_report_gpu_aa__steady_floating_and_locked_clocks),
        cmocka_unit_test(test_report_gpu_aa__held_shared_and_unmeasured),
        cmocka_unit_test(test_report_gpu_aa__advice_names_the_tool_holding_the_gpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
