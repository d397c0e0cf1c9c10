/*
 * test_shard_merge_rules: the rules that make one run of several processes' shards: one step
 * definition for the whole run (the ranks' steps from the same source, whatever order the shard
 * directory lists them in), from shard text and with the real tool and the NVTX test canary.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "shard.h"
#include "workdir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CANARY CG_BINARY_DIR "/tests/canaries/nvtx-canary"

/* Rank r of a world of w whose three steps (TOKENS each, -1: no payload) came from `from`
 * ("nvtx", "optimizer" or NULL: no steps_from line). */
static void ranked_shard(struct cg_shard *s, int r, int w, const char *from, int tokens)
{
    char text[512], line[64] = "";
    if (from != NULL)
        snprintf(line, sizeof(line), "steps_from %s\n", from);
    snprintf(text, sizeof(text),
             "canary-gate-shard 1\npid %d\nrank %d\nworld_size %d\nhost vm\nwarmup 0\n%s"
             "s 0 100 200 %d\ns 1 200 300 %d\ns 2 300 400 %d\n",
             1000 + r, r, w, line, tokens, tokens, tokens);
    struct cg_err err;
    cg_err_init(&err);
    if (cg_shard_parse(text, strlen(text), "t", s, &err) != 0)
        fail_msg("%s", err.msg);
}

/* Ranks whose steps come from different sources are refused with one line naming them, and
 * the status says the same whichever shard comes first (readdir's order once decided it). */
static void test_shard_merge__ranks_steps_from_two_sources_are_refused(void **state)
{
    (void)state;
    struct cg_shard sh[4];
    ranked_shard(&sh[0], 1, 4, "optimizer", -1);
    ranked_shard(&sh[1], 0, 4, "nvtx", -1);
    ranked_shard(&sh[2], 3, 4, "optimizer", -1);
    ranked_shard(&sh[3], 2, 4, "nvtx", -1);
    struct cg_err err;
    cg_err_init(&err);
    for (int order = 0; order < 2; order++) {
        if (order == 1) { /* the other order */
            struct cg_shard t = sh[0];
            sh[0] = sh[1];
            sh[1] = t;
        }
        struct cg_shard_status st;
        cg_shard_status(sh, 4, &st);
        assert_true(st.steps_mixed);
        assert_int_equal(st.steps_from, CG_STEPS_NVTX);
        assert_int_equal(cg_shard_check_steps_from(sh, 4, &err), CG_ECANARY);
        if (strstr(err.msg, "rank 0 (and 1 more) marks its steps with its own NVTX step ranges, "
                            "rank 1 (and 1 more) takes them from its optimizer") == NULL ||
            strstr(err.msg, "--steps-from optimizer") == NULL)
            fail_msg("order %d: %s", order, err.msg);
    }
    /* all from one source, or a shard that does not say (an older library): one definition */
    for (int i = 0; i < 4; i++)
        cg_shard_release(&sh[i]);
    ranked_shard(&sh[0], 1, 2, "optimizer", -1);
    ranked_shard(&sh[1], 0, 2, NULL, -1);
    struct cg_shard_status st;
    cg_shard_status(sh, 2, &st);
    assert_false(st.steps_mixed);
    assert_int_equal(st.steps_from, CG_STEPS_OPTIMIZER);
    assert_int_equal(cg_shard_check_steps_from(sh, 2, &err), 0);
    for (int i = 0; i < 2; i++)
        cg_shard_release(&sh[i]);
}

/* Two ranks of the real canary, rank 0 marking NVTX step ranges and rank 1 optimizer steps (a
 * script that annotates rank 0 only): the run fails with one line naming both, exit 3, nothing
 * written; every rank from its optimizer (--mode optimizer on both) is measured. */
static void test_shard_merge__real_ranks_of_two_step_sources_fail_the_run(void **state)
{
    const struct cg_workdir *w = *state;
    const char *script = "RANK=0 WORLD_SIZE=2 \"$0\" \"$@\" $M0 & "
                         "RANK=1 WORLD_SIZE=2 \"$0\" \"$@\" --mode optimizer; r=$?; "
                         "wait $! && exit $r";
    const char *args[] = {"run",      "--out", "mixed.json", "--runs",  "1",  "--steps", "3",
                          "--warmup", "1",     "--",         "/bin/sh", "-c", script,    CANARY,
                          "--steps",  "6",     "--step-ms",  "5",       NULL};
    struct cg_proc p;
    assert_int_equal(cg_workdir_run(w, CG_TOOL_PATH, NULL, args, &p), 3);
    if (strstr(p.err, "run 1 of 1: rank 0 marks its steps with its own NVTX step ranges, rank 1 "
                      "takes them from its optimizer") == NULL)
        fail_msg("not said:\n%s", p.err);
    assert_false(cg_workdir_exists(w, "mixed.json"));
    const char *env[] = {"M0=--mode optimizer", NULL};
    args[2] = "same.json";
    if (cg_workdir_run(w, CG_TOOL_PATH, env, args, &p) != 0)
        fail_msg("%s", p.err);
    assert_non_null(strstr(cg_workdir_read(w, "same.json"), "\"steps_from\":\t\"optimizer\""));
    /* and one artifact: a second run whose steps came from elsewhere than the first's fails */
    const char *alternate = "if [ -e ran ]; then set -- \"$0\" \"$@\" --mode optimizer; else "
                            "touch ran; set -- \"$0\" \"$@\"; fi; exec \"$@\"";
    const char *runs[] = {"run",      "--out", "two.json",  "--runs",  "2",  "--steps", "3",
                          "--warmup", "1",     "--",        "/bin/sh", "-c", alternate, CANARY,
                          "--steps",  "6",     "--step-ms", "5",       NULL};
    assert_int_equal(cg_workdir_run(w, CG_TOOL_PATH, NULL, runs, &p), 3);
    if (strstr(p.err, "run 2 of 2: its steps came from the optimizer, those of the runs before "
                      "it from NVTX step ranges") == NULL)
        fail_msg("not said:\n%s", p.err);
    assert_false(cg_workdir_exists(w, "two.json"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shard_merge__ranks_steps_from_two_sources_are_refused),
        cmocka_unit_test_setup_teardown(
            test_shard_merge__real_ranks_of_two_step_sources_fail_the_run, cg_workdir_setup,
            cg_workdir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
