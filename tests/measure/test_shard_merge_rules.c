/*
 * test_shard_merge_rules: the rules that make one run of several processes' shards: one step
 * definition for the whole run (the ranks' steps from the same source, whatever order the shard
 * directory lists them in); a step's tokens, the payloads of its processes summed, else
 * --tokens-per-step as the world's, and a run where some ranks give payloads and others none
 * told that --tokens-per-step was not used. From shard text and with the real tool and the NVTX
 * test canary.
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

/* Every rank marks NVTX step ranges, but rank 0 began its own after its optimizer's measured
 * steps (optimizer steps made before its loop, past the warm-up): its own were ignored and its
 * steps taken from the optimizer. The refusal told it to "mark the step ranges in every rank",
 * which every rank does, and never offered --steps-from nvtx; now it says what happened to rank
 * 0's own ranges and offers --steps-from nvtx and the warm-up that would have let them count.
 * (The real canary: rank 0 marks optimizer steps with "forward" nested in each, rank 1 "forward"
 * in plain steps; --step-range forward.) Where an optimizer rank marks none of its own, the
 * advice is as before. */
static void test_shard_merge__ranks_whose_own_steps_were_ignored_are_offered_nvtx(void **state)
{
    const struct cg_workdir *w = *state;
    const char *script = "RANK=0 WORLD_SIZE=2 \"$0\" \"$@\" --mode optimizer & "
                         "RANK=1 WORLD_SIZE=2 \"$0\" \"$@\"; r=$?; wait $! && exit $r";
    const char *args[] = {
        "run",          "--out",   "asym.json", "--runs",  "1",  "--steps", "3",    "--warmup", "0",
        "--step-range", "forward", "--",        "/bin/sh", "-c", script,    CANARY, "--steps",  "6",
        "--step-ms",    "5",       "--nested",  NULL};
    struct cg_proc p;
    assert_int_equal(cg_workdir_run(w, CG_TOOL_PATH, NULL, args, &p), 3);
    if (strstr(p.err, "rank 1 marks its steps with its own NVTX step ranges; rank 0 began its "
                      "own after its optimizer's measured steps (canary-gate's optimizer steps): "
                      "they were ignored and its steps taken from its optimizer") == NULL ||
        strstr(p.err, "give --steps-from nvtx, or a --warmup of at least 1") == NULL ||
        strstr(p.err, "mark the step ranges in every rank") != NULL)
        fail_msg("not said:\n%s", p.err);
    assert_false(cg_workdir_exists(w, "asym.json"));
    /* with --steps-from nvtx the same canary is measured */
    const char *nvtx[] = {"run",       "--out",
                          "asym.json", "--runs",
                          "1",         "--steps",
                          "3",         "--warmup",
                          "0",         "--step-range",
                          "forward",   "--steps-from",
                          "nvtx",      "--",
                          "/bin/sh",   "-c",
                          script,      CANARY,
                          "--steps",   "6",
                          "--step-ms", "5",
                          "--nested",  NULL};
    if (cg_workdir_run(w, CG_TOOL_PATH, NULL, nvtx, &p) != 0)
        fail_msg("%s", p.err);
    /* one optimizer rank with its own ranges ignored, one with none: mark them in every rank */
    struct cg_shard sh[3];
    struct cg_err err;
    cg_err_init(&err);
    ranked_shard(&sh[0], 0, 3, "nvtx", -1);
    ranked_shard(&sh[1], 1, 3, "optimizer", -1);
    const char *ignored = "canary-gate-shard 1\npid 1002\nrank 2\nworld_size 3\nhost vm\n"
                          "warmup 0\nsteps_from optimizer\nsteps_ignored 2\ns 0 100 200 -1\n"
                          "s 1 200 300 -1\ns 2 300 400 -1\n";
    assert_int_equal(cg_shard_parse(ignored, strlen(ignored), "t", &sh[2], &err), 0);
    assert_int_equal(cg_shard_check_steps_from(sh, 3, &err), CG_ECANARY);
    if (strstr(err.msg, "mark the step ranges in every rank, or give --steps-from optimizer") ==
            NULL ||
        strstr(err.msg, "rank 2's own began after its optimizer's measured steps and were "
                        "ignored") == NULL)
        fail_msg("%s", err.msg);
    for (int i = 0; i < 3; i++)
        cg_shard_release(&sh[i]);
}

/* The merged tokens of step 0 of shards a and b with --tokens-per-step per (-1: none). */
static int64_t merged_tokens(const struct cg_shard *sh, size_t n, int64_t per)
{
    struct cg_artifact a;
    cg_artifact_init(&a);
    struct cg_run *run = cg_artifact_add_run(&a);
    assert_non_null(run);
    struct cg_shard_merge_opts o = {0, 3, per};
    struct cg_err err;
    cg_err_init(&err);
    assert_int_equal(cg_shard_merge(sh, n, &o, run, &err), 0);
    int64_t t = run->steps[0].tokens;
    cg_artifact_release(&a);
    return t;
}

/* One rule for a step's tokens, the world's: the payloads its processes gave, summed (each
 * rank's own distinct tokens, or one rank's giving the world's); --tokens-per-step is the
 * world's tokens of a step in which no process gave one, never added per process. A run where
 * some ranks give payloads and others none is found (the gate says --tokens-per-step was not
 * used). */
static void test_shard_merge__tokens_are_the_payloads_summed_else_the_worlds_per_step(void **state)
{
    (void)state;
    struct cg_shard sh[2];
    char who[160];
    ranked_shard(&sh[0], 0, 2, "nvtx", 1000);
    ranked_shard(&sh[1], 1, 2, "nvtx", 1000);
    assert_int_equal(merged_tokens(sh, 2, -1), 2000);
    assert_int_equal(merged_tokens(sh, 2, 1000), 2000);
    assert_false(cg_shard_tokens_partial(sh, 2, 0, 3, who, sizeof(who)));
    cg_shard_release(&sh[1]);
    ranked_shard(&sh[1], 1, 2, "nvtx", -1);
    assert_int_equal(merged_tokens(sh, 2, 1000), 1000); /* rank 0's payload: the world's */
    assert_true(cg_shard_tokens_partial(sh, 2, 0, 3, who, sizeof(who)));
    assert_string_equal(who, "rank 0 gave its steps' tokens as payloads, rank 1 none");
    assert_true(cg_shard_tokens_partial(&sh[0], 1, 0, 3, who, sizeof(who)) == false);
    cg_shard_release(&sh[0]);
    ranked_shard(&sh[0], 0, 2, "nvtx", -1);
    assert_int_equal(merged_tokens(sh, 2, 1000), 1000); /* the world's, not 1000 per rank */
    assert_int_equal(merged_tokens(sh, 2, -1), -1);
    assert_false(cg_shard_tokens_partial(sh, 2, 0, 3, who, sizeof(who)));
    for (int i = 0; i < 2; i++)
        cg_shard_release(&sh[i]);
}

/* The real canary: rank 0 gives 1000 tokens a step as payloads, rank 1 none, with
 * --tokens-per-step 1000: each step has 1000 tokens and the gate says --tokens-per-step was not
 * used, naming the ranks. */
static void test_shard_merge__real_ranks_with_and_without_payloads_are_told(void **state)
{
    const struct cg_workdir *w = *state;
    const char *script = "RANK=0 WORLD_SIZE=2 \"$0\" \"$@\" --tokens 1000 & "
                         "RANK=1 WORLD_SIZE=2 \"$0\" \"$@\"; r=$?; wait $! && exit $r";
    const char *args[] = {
        "run",      "--out", "tok.json",          "--runs", "1",         "--steps", "3",
        "--warmup", "1",     "--tokens-per-step", "1000",   "--",        "/bin/sh", "-c",
        script,     CANARY,  "--steps",           "6",      "--step-ms", "5",       NULL};
    struct cg_proc p;
    if (cg_workdir_run(w, CG_TOOL_PATH, NULL, args, &p) != 0)
        fail_msg("%s", p.err);
    if (strstr(p.err, "--tokens-per-step 1000 not used: rank 0 gave its steps' tokens as "
                      "payloads, rank 1 none") == NULL)
        fail_msg("not said:\n%s", p.err);
    assert_non_null(strstr(cg_workdir_read(w, "tok.json"), "\"tokens\":\t1000"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shard_merge__ranks_steps_from_two_sources_are_refused),
        cmocka_unit_test_setup_teardown(
            test_shard_merge__real_ranks_of_two_step_sources_fail_the_run, cg_workdir_setup,
            cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(
            test_shard_merge__ranks_whose_own_steps_were_ignored_are_offered_nvtx, cg_workdir_setup,
            cg_workdir_teardown),
        cmocka_unit_test(test_shard_merge__tokens_are_the_payloads_summed_else_the_worlds_per_step),
        cmocka_unit_test_setup_teardown(
            test_shard_merge__real_ranks_with_and_without_payloads_are_told, cg_workdir_setup,
            cg_workdir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
