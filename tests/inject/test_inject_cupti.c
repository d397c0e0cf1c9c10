/*
 * test_inject_cupti: the CUPTI-cannot-start path with the real libcupti. The test canary calls
 * the injection library's InitializeInjection as the CUDA driver would; on a machine without a
 * driver CUPTI refuses, and the canary must still run unchanged with its steps measured and the
 * artifact saying "gpu": {"available": false, "reason": ...}. On a GPU machine CUPTI may start.
 *
 * Which libcupti file the library opens, and the shard's "cupti HOW PATH" line, are checked with
 * the real library too (the canary run directly, its shard read back): the build-time path by
 * default, CANARY_GATE_CUPTI_PATH when set (a warning and the build-time path when it cannot be
 * loaded), and a copy the canary mapped itself before CUDA started, which wins over both. The
 * soname, tried last, is not reached on a machine where the build-time path exists.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "artifact.h"
#include "inject_support.h"

#include <limits.h>
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

/* The PATH of the shard's "cupti HOW PATH" line when HOW is how, copied into path; fails the
 * test when there is no such line. */
static void cupti_line(const char *shard, const char *how, char *path, size_t cap)
{
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "cupti %s ", how);
    const char *l = cg_text_line(shard, prefix);
    if (l == NULL)
        fail_msg("no '%s' line in:\n%s", prefix, shard);
    l += strlen(prefix);
    size_t n = strcspn(l, "\n");
    assert_true(n < cap);
    memcpy(path, l, n);
    path[n] = '\0';
}

static void test_inject_cupti__libcupti_file_is_recorded(void **state)
{
    const struct cg_workdir *w = *state;
#if !CG_HAVE_CUPTI
    skip();
#endif
    struct cg_proc p;
    char configured[PATH_MAX], real[PATH_MAX], path[PATH_MAX], env_path[PATH_MAX + 32];
    const char *args[] = {"--cuda-init", "--steps", "1", "--step-ms", "0", NULL};

    /* by default: the toolkit's library found at build time, as the file behind it */
    assert_int_equal(cg_canary_run(w, NULL, args, &p), 0);
    cupti_line(cg_canary_shard(w), "configured", configured, sizeof(configured));
    assert_non_null(realpath(configured, real));
    assert_string_equal(real, configured);
    assert_non_null(strstr(configured, "libcupti"));

    /* the override */
    snprintf(env_path, sizeof(env_path), "CANARY_GATE_CUPTI_PATH=%s", configured);
    const char *env[] = {env_path, NULL};
    assert_int_equal(cg_canary_run(w, env, args, &p), 0);
    cupti_line(cg_canary_shard(w), "env", path, sizeof(path));
    assert_string_equal(path, configured);

    /* an override that cannot be loaded: said, and the build-time path used */
    const char *bad[] = {"CANARY_GATE_CUPTI_PATH=/nonexistent/libcupti.so.13", NULL};
    assert_int_equal(cg_canary_run(w, bad, args, &p), 0);
    const char *shard = cg_canary_shard(w);
    assert_non_null(cg_text_line(shard, "w CANARY_GATE_CUPTI_PATH cannot be loaded: "));
    assert_non_null(strstr(shard, "/nonexistent/libcupti.so.13"));
    cupti_line(shard, "configured", path, sizeof(path));
    assert_string_equal(path, configured);
}

static void test_inject_cupti__a_copy_already_mapped_is_used(void **state)
{
    const struct cg_workdir *w = *state;
#if !CG_HAVE_CUPTI
    skip();
#endif
    struct cg_proc p;
    char configured[PATH_MAX], path[PATH_MAX], env_path[PATH_MAX + 32];
    const char *args[] = {"--cuda-init", "--steps", "1", "--step-ms", "0", NULL};
    assert_int_equal(cg_canary_run(w, NULL, args, &p), 0);
    cupti_line(cg_canary_shard(w), "configured", configured, sizeof(configured));

    /* a copy of the real libcupti elsewhere, mapped by the canary before CUDA starts (as
     * PyTorch maps its wheel's libcupti.so.13), with the override naming the toolkit's: the
     * mapped copy is the one used, so the process holds one libcupti, not two */
    char copy[PATH_MAX];
    snprintf(copy, sizeof(copy), "%s/libcupti.so.13", cg_workdir_in(w, "wheel"));
    mkdir(cg_workdir_in(w, "wheel"), 0755);
    const char *cp[] = {"/bin/cp", configured, copy, NULL};
    struct cg_proc c;
    assert_int_equal(cg_proc_run(NULL, cp, NULL, &c), 0);
    assert_int_equal(c.exit_code, 0);
    snprintf(env_path, sizeof(env_path), "CANARY_GATE_CUPTI_PATH=%s", configured);
    const char *env[] = {env_path, NULL};
    const char *preload[] = {"--preload", copy, "--cuda-init", "--steps", "1", "--step-ms", "0",
                             NULL};
    assert_int_equal(cg_canary_run(w, env, preload, &p), 0);
    const char *shard = cg_canary_shard(w);
    cupti_line(shard, "loaded", path, sizeof(path));
    char real[PATH_MAX];
    assert_non_null(realpath(copy, real));
    assert_string_equal(path, real);
    assert_int_equal(cg_text_count(shard, "cupti "), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inject_cupti__unavailable_keeps_steps_and_says_why),
        cmocka_unit_test(test_inject_cupti__disabled_by_environment),
        cmocka_unit_test_setup_teardown(test_inject_cupti__libcupti_file_is_recorded,
                                        cg_workdir_setup, cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(test_inject_cupti__a_copy_already_mapped_is_used,
                                        cg_workdir_setup, cg_workdir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
