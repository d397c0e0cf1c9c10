/*
 * test_inject_cupti: the CUPTI-cannot-start path with the real libcupti. The test canary calls
 * the injection library's InitializeInjection as the CUDA driver would; on a machine without a
 * driver CUPTI refuses, and the canary must still run unchanged with its steps measured and the
 * artifact saying "gpu": {"available": false, "reason": ...}. On a GPU machine CUPTI may start.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "artifact.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CANARY CG_BINARY_DIR "/tests/canaries/nvtx-canary"

static int run_tool(char *const *argv)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execv(CG_TOOL_PATH, argv);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void test_inject_cupti__unavailable_keeps_steps_and_says_why(void **state)
{
    (void)state;
#if !CG_HAVE_CUPTI
    skip();
#endif
    char *argv[] = {CG_TOOL_PATH, "run", "--out", "cupti-off.json", "--runs", "1", "--steps",
                    "3", "--warmup", "1", "--", CANARY, "--steps", "4", "--step-ms", "5",
                    "--cuda-init", NULL};
    assert_int_equal(run_tool(argv), 0);
    struct cg_artifact a;
    struct cg_err err;
    cg_err_init(&err);
    if (cg_artifact_load("cupti-off.json", &a, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(a.runs[0].n_steps, 3);
    if (!a.gpu_available) {
        assert_non_null(a.gpu_reason);
        assert_non_null(strstr(a.gpu_reason, "CUPTI"));
        assert_string_equal(a.env.cupti_status, a.gpu_reason);
        assert_int_equal(a.runs[0].summary.peak_device_bytes, -1);
        assert_int_equal(a.runs[0].dropped_records, -1);
    }
    /* the canary's own output is untouched: InitializeInjection returned 1 */
    FILE *f = fopen("cupti-off.log", "r");
    assert_non_null(f);
    char buf[2048];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    assert_non_null(strstr(buf, "InitializeInjection returned 1\ndone 4 steps\n"));
    cg_artifact_release(&a);
    unlink("cupti-off.json");
    unlink("cupti-off.log");
}

static void test_inject_cupti__disabled_by_environment(void **state)
{
    (void)state;
#if !CG_HAVE_CUPTI
    skip();
#endif
    setenv("CANARY_GATE_CUPTI", "0", 1);
    char *argv[] = {CG_TOOL_PATH, "run", "--out", "cupti-env.json", "--runs", "1", "--steps",
                    "2", "--warmup", "0", "--", CANARY, "--steps", "2", "--step-ms", "1",
                    "--cuda-init", NULL};
    assert_int_equal(run_tool(argv), 0);
    unsetenv("CANARY_GATE_CUPTI");
    struct cg_artifact a;
    struct cg_err err;
    cg_err_init(&err);
    if (cg_artifact_load("cupti-env.json", &a, &err) != 0)
        fail_msg("%s", err.msg);
    assert_false(a.gpu_available);
    assert_non_null(strstr(a.gpu_reason, "CANARY_GATE_CUPTI=0"));
    cg_artifact_release(&a);
    unlink("cupti-env.json");
    unlink("cupti-env.log");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inject_cupti__unavailable_keeps_steps_and_says_why),
        cmocka_unit_test(test_inject_cupti__disabled_by_environment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
