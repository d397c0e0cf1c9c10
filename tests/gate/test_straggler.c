/*
 * test_straggler: the straggler rule from per-rank step times (straggler.c, diagnose.c's
 * "straggler"), the per-node figures derived from ranks, and runs[].ranks read back from JSON.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "artifact.h"
#include "diagnose.h"
#include "anatomy.h"
#include "fixtures.h"
#include "stats.h"
#include "straggler.h"
#include "thresholds.h"
#include "verdict.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The run's merged steps from its 4 ranks: each step the slowest rank's (tokens: 1024, or -1). */
static void merge_steps(struct cg_run *run, int64_t tokens)
{
    for (int s = 0; s < 30; s++) {
        int64_t m = 0;
        for (int r = 0; r < 4; r++)
            m = run->ranks[r].step_ns[s] > m ? run->ranks[r].step_ns[s] : m;
        assert_int_equal(cg_run_add_step(run, m, tokens, -1), 0);
    }
}

/* A new run of 4 ranks of 30 steps each (step_ns to be filled), rank r on node nodes[r]
 * (NULL: n1 for ranks 0-1, n2 for 2-3), figures unknown. */
static struct cg_run *world_run(struct cg_artifact *a, const char *const nodes[4])
{
    struct cg_run *run = cg_artifact_add_run(a);
    assert_non_null(run);
    run->n_ranks = 4;
    run->ranks = calloc(4, sizeof(*run->ranks));
    assert_non_null(run->ranks);
    for (int r = 0; r < 4; r++) {
        struct cg_rank *k = &run->ranks[r];
        k->rank = r;
        k->local_rank = r % 2;
        k->node = strdup(nodes != NULL ? nodes[r] : r < 2 ? "n1" : "n2");
        k->busy_ns = k->compute_ns = k->comm_exposed_ns = k->peak_device_bytes = -1;
        k->step_ns = malloc(30 * sizeof(int64_t));
        k->n_steps = 30;
    }
    return run;
}

/* One run of 4 ranks (2 per node, n1 and n2) of 30 steps of 10 ms; rank slow (if >= 0) takes
 * extra_pct more in every step but those in fast_steps. */
static void add_run(struct cg_artifact *a, int slow, double extra_pct, int fast_steps)
{
    struct cg_run *run = world_run(a, NULL);
    for (int r = 0; r < 4; r++) {
        struct cg_rank *k = &run->ranks[r];
        for (int s = 0; s < 30; s++) {
            int64_t base = 10000000 + r * 1000 + s; /* ties broken, no rank always slowest */
            if (s % 4 == r % 4)
                base += 50000;
            k->step_ns[s] = r == slow && s >= fast_steps
                                ? (int64_t)(10000000.0 * (1.0 + extra_pct / 100.0))
                                : base;
        }
    }
    merge_steps(run, -1);
}

static void test_straggler__consistent_laggard_is_named_with_figures(void **state)
{
    (void)state;
    struct cg_artifact a;
    cg_artifact_init(&a);
    add_run(&a, 3, 9.0, 2); /* rank 3 slowest in 28 of 30 steps, +9% */
    struct cg_straggler s;
    assert_int_equal(cg_straggler_find(&a, &s), 1);
    assert_int_equal(s.rank, 3);
    assert_string_equal(s.node, "n2");
    assert_int_equal(s.slowest_steps, 28);
    assert_int_equal(s.steps, 30);
    assert_true(fabs(s.over_median_pct - 9.0) < 0.5);
    struct cg_diagnosis d;
    assert_int_equal(cg_diagnose(NULL, &a, &d), 0);
    size_t i = 0;
    while (i < d.n && d.items[i].rule != CG_DIAG_STRAGGLER)
        i++;
    assert_true(i < d.n);
    assert_string_equal(d.items[i].finding,
                        "rank 3 on n2 was the slowest in 28 of 30 steps, +9% over the median rank");
    assert_string_equal(cg_diag_rule_name(CG_DIAG_STRAGGLER), "straggler");
    /* against a baseline without the straggler it is a warning */
    struct cg_artifact b;
    cg_artifact_init(&b);
    add_run(&b, -1, 0, 0);
    assert_int_equal(cg_straggler_find(&b, &s), 0);
    assert_int_equal(cg_diagnose(&b, &a, &d), 0);
    assert_int_equal(d.items[0].rule, CG_DIAG_STRAGGLER);
    assert_int_equal(d.items[0].severity, CG_DIAG_WARNING);
    cg_artifact_release(&a);
    cg_artifact_release(&b);
}

static void test_straggler__none_when_slowness_moves_or_is_small(void **state)
{
    (void)state;
    struct cg_artifact a;
    cg_artifact_init(&a);
    add_run(&a, -1, 0, 0); /* the slowest rank rotates */
    struct cg_straggler s;
    assert_int_equal(cg_straggler_find(&a, &s), 0);
    cg_artifact_release(&a);
    cg_artifact_init(&a);
    add_run(&a, 2, 1.0, 0); /* always slowest, but +1% only */
    assert_int_equal(cg_straggler_find(&a, &s), 0);
    cg_artifact_release(&a);
    cg_artifact_init(&a);
    add_run(&a, 2, 9.0, 20); /* slowest in 10 of 30 steps */
    assert_int_equal(cg_straggler_find(&a, &s), 0);
    cg_artifact_release(&a);
}

static void test_straggler__nodes_and_json_round_trip(void **state)
{
    (void)state;
    struct cg_artifact a;
    cg_artifact_init(&a);
    add_run(&a, 3, 9.0, 0);
    /* two ranks of n2 on one GPU, one of n1 on each of two GPUs */
    struct cg_rank *k = a.runs[0].ranks;
    const char *uuid[] = {"GPU-a", "GPU-b", "GPU-c", "GPU-c"};
    for (int r = 0; r < 4; r++) {
        k[r].peak_device_bytes = 1000 * (r + 1);
        k[r].device_uuid = strdup(uuid[r]);
        k[r].gpu_model = r == 0 ? NULL : strdup("NVIDIA H100 80GB HBM3");
        k[r].busy_ns = 5000 + r;
    }
    struct cg_node_figures nodes[4];
    assert_int_equal(cg_ranks_nodes(k, 4, nodes), 2);
    assert_string_equal(nodes[0].node, "n1");
    assert_int_equal(nodes[0].peak_device_bytes, 2000); /* two GPUs: the larger, never summed */
    assert_int_equal(nodes[1].peak_device_bytes, 7000); /* one GPU shared: summed */
    assert_int_equal(nodes[1].busy_ns, 5003);
    assert_true(nodes[1].step_median_ns > nodes[0].step_median_ns);
    cJSON *run = cJSON_CreateObject();
    assert_int_equal(cg_ranks_json(run, k, 4), 0);
    char *text = cJSON_PrintUnformatted(run);
    cJSON_Delete(run);
    cJSON *again = cJSON_Parse(text);
    free(text);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(again, "nodes")), 2);
    struct cg_rank *back = NULL;
    size_t n = 0;
    char problem[256];
    assert_int_equal(cg_ranks_parse(again, "runs[0]", 30, &back, &n, problem, sizeof(problem)), 0);
    assert_int_equal(n, 4);
    assert_string_equal(back[3].node, "n2");
    assert_string_equal(back[3].device_uuid, "GPU-c");
    assert_string_equal(back[3].gpu_model, "NVIDIA H100 80GB HBM3");
    assert_null(back[0].gpu_model); /* unknown, and an artifact without the field reads so */
    assert_int_equal(back[3].n_steps, 30);
    assert_int_equal(back[2].step_ns[5], k[2].step_ns[5]);
    assert_int_equal(back[1].compute_ns, -1);
    cg_ranks_free(back, n);
    /* more steps than the run has, a rank without a node: refused with the field */
    assert_int_equal(cg_ranks_parse(again, "runs[0]", 29, &back, &n, problem, sizeof(problem)),
                     CG_EINPUT);
    assert_non_null(strstr(problem, "runs[0].ranks[0]: step_ns"));
    /* a fractional duration (0.5 ns read as 0: "-100%"), a rank number twice */
    cJSON *r2 = cJSON_GetArrayItem(cJSON_GetObjectItem(again, "ranks"), 2);
    cJSON *keep = cJSON_Duplicate(cJSON_GetObjectItem(r2, "step_ns"), 1);
    cJSON_ReplaceItemInArray(cJSON_GetObjectItem(r2, "step_ns"), 0, cJSON_CreateNumber(0.5));
    assert_int_equal(cg_ranks_parse(again, "runs[0]", 30, &back, &n, problem, sizeof(problem)),
                     CG_EINPUT);
    assert_non_null(strstr(problem, "runs[0].ranks[2]: step_ns"));
    cJSON_ReplaceItemInObject(r2, "step_ns", keep);
    cJSON_ReplaceItemInObject(r2, "rank", cJSON_CreateNumber(0));
    assert_int_equal(cg_ranks_parse(again, "runs[0]", 30, &back, &n, problem, sizeof(problem)),
                     CG_EINPUT);
    assert_non_null(strstr(problem, "runs[0].ranks: rank 0 twice"));
    cJSON_ReplaceItemInObject(r2, "rank", cJSON_CreateNumber(2));
    cJSON_DeleteItemFromObject(cJSON_GetArrayItem(cJSON_GetObjectItem(again, "ranks"), 1), "node");
    assert_int_equal(cg_ranks_parse(again, "runs[0]", 30, &back, &n, problem, sizeof(problem)),
                     CG_EINPUT);
    assert_non_null(strstr(problem, "runs[0].ranks[1]: node"));
    cJSON_Delete(again);
    cg_artifact_release(&a);
}

/* A run of 4 ranks on the nodes named, steps of ms each (every rank alike), devices named by
 * uuids (NULL: none). */
static void add_world_run(struct cg_artifact *a, const char *const nodes[4],
                          const char *const uuids[4], double ms, uint64_t seed)
{
    struct cg_run *run = world_run(a, nodes);
    for (int r = 0; r < 4; r++) {
        struct cg_rank *k = &run->ranks[r];
        k->device_uuid = uuids != NULL ? strdup(uuids[r]) : NULL;
        for (int s = 0; s < 30; s++)
            k->step_ns[s] = (int64_t)(ms * 1e6 * (1.0 + 0.002 * (double)((seed + (uint64_t)s * 7
                                                                           + (uint64_t)r) % 5)));
    }
    merge_steps(run, 1024);
    cg_run_summarize(run);
}

static void test_straggler__node_shape_text(void **state)
{
    (void)state;
    static const char *const two[4] = {"n1", "n1", "n2", "n2"}, *const one[4] = {"n1", "n1", "n1",
                                                                                 "n1"};
    static const char *const gpus[4] = {"GPU-a", "GPU-b", "GPU-c", "GPU-c"};
    static const char *const even[4] = {"GPU-a", "GPU-b", "GPU-c", "GPU-d"};
    struct cg_artifact a;
    cg_artifact_init(&a);
    add_world_run(&a, two, NULL, 10, 1);
    add_world_run(&a, two, gpus, 10, 1);
    add_world_run(&a, one, even, 10, 1);
    add_world_run(&a, two, even, 10, 1);
    char text[160];
    assert_int_equal(cg_ranks_shape(a.runs[0].ranks, 4, text, sizeof(text)), 0);
    assert_string_equal(text, "2 nodes of 2 ranks");
    assert_int_equal(cg_ranks_shape(a.runs[1].ranks, 4, text, sizeof(text)), 0);
    assert_string_equal(text, "2 nodes: 2 ranks and 2 GPUs, 2 and 1");
    assert_int_equal(cg_ranks_shape(a.runs[2].ranks, 4, text, sizeof(text)), 0);
    assert_string_equal(text, "1 node of 4 ranks and 4 GPUs");
    assert_int_equal(cg_ranks_shape(a.runs[3].ranks, 4, text, sizeof(text)), 0);
    assert_string_equal(text, "2 nodes of 2 ranks and 2 GPUs");
    assert_int_equal(cg_ranks_shape(a.runs[3].ranks, 1, text, sizeof(text)), 0);
    assert_string_equal(text, "1 node of 1 rank and 1 GPU");
    assert_int_equal(cg_ranks_shape(NULL, 0, text, sizeof(text)), 0);
    assert_string_equal(text, "");
    /* the GPU models, sorted, distinct: another model on a node is another shape */
    for (int r = 0; r < 4; r++)
        a.runs[3].ranks[r].gpu_model = strdup(r < 2 ? "NVIDIA H100 80GB HBM3" : "NVIDIA A100");
    assert_int_equal(cg_ranks_shape(a.runs[3].ranks, 4, text, sizeof(text)), 0);
    assert_string_equal(text, "2 nodes of 2 ranks and 2 GPUs (NVIDIA A100, NVIDIA H100 80GB HBM3)");
    for (int r = 2; r < 4; r++) {
        free(a.runs[3].ranks[r].gpu_model);
        a.runs[3].ranks[r].gpu_model = strdup("NVIDIA H100 80GB HBM3");
    }
    assert_int_equal(cg_ranks_shape(a.runs[3].ranks, 4, text, sizeof(text)), 0);
    assert_string_equal(text, "2 nodes of 2 ranks and 2 GPUs (NVIDIA H100 80GB HBM3)");
    cg_artifact_release(&a);
}

/* The verdict of current against baseline under the default thresholds, into v. */
static void default_verdict(const struct cg_artifact *baseline, const struct cg_artifact *current,
                            struct cg_verdict *v)
{
    static struct cg_thresholds t; /* the verdict points at it */
    struct cg_err err;
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);
    assert_int_equal(cg_verdict_compute(baseline, current, &t, v, &err), 0);
}

/* A world of another shape is another machine: the verdict says both shapes, and a regression
 * measured on it is INCONCLUSIVE (issue 39); the same shape gates as before. */
static void test_straggler__another_node_shape_is_another_machine(void **state)
{
    (void)state;
    static const char *const two[4] = {"n1", "n1", "n2", "n2"}, *const one[4] = {"n1", "n1", "n1",
                                                                                 "n1"};
    static const char *const uuids[4] = {"GPU-a", "GPU-b", "GPU-c", "GPU-d"};
    struct cg_artifact b, same, other;
    cg_artifact_init(&b);
    cg_artifact_init(&same);
    cg_artifact_init(&other);
    for (uint64_t i = 0; i < 5; i++) {
        add_world_run(&b, two, uuids, 10, i);
        add_world_run(&same, two, uuids, 13, i + 3);
        add_world_run(&other, one, uuids, 13, i + 3);
    }
    struct cg_verdict v;
    default_verdict(&b, &same, &v);
    assert_null(v.machine_diff);
    assert_string_equal(v.shape[0], "2 nodes of 2 ranks and 2 GPUs");
    assert_int_equal(v.overall, CG_OUT_FAIL);
    cg_verdict_release(&v);
    default_verdict(&b, &other, &v);
    assert_non_null(v.machine_diff);
    assert_string_equal(v.machine_diff, CG_SHAPE_DIFF);
    assert_string_equal(v.shape[1], "1 node of 4 ranks and 4 GPUs");
    assert_int_equal(v.overall, CG_OUT_INCONCLUSIVE);
    assert_true(v.downgraded);
    cg_verdict_release(&v);
    cg_artifact_release(&b);
    cg_artifact_release(&same);
    cg_artifact_release(&other);
}

/* A side whose runs were measured on worlds of different shapes (a baseline pooled across a
 * change of the job's nodes) is no one machine: its timings mix the two, and a comparison with
 * it is a machine difference, whichever shape the first run had. Before, the first run's shape
 * stood for the side's and a +30% regression against the mixed pool FAILed as if alike. */
static void test_straggler__a_side_of_mixed_node_shapes_is_another_machine(void **state)
{
    (void)state;
    static const char *const two[4] = {"n1", "n1", "n2", "n2"}, *const one[4] = {"n1", "n1", "n1",
                                                                                 "n1"};
    static const char *const uuids[4] = {"GPU-a", "GPU-b", "GPU-c", "GPU-d"};
    struct cg_artifact b, c;
    cg_artifact_init(&b);
    cg_artifact_init(&c);
    for (uint64_t i = 0; i < 5; i++) {
        add_world_run(&b, i < 3 ? two : one, uuids, 10, i);
        add_world_run(&c, two, uuids, 13, i + 3);
    }
    struct cg_verdict v;
    default_verdict(&b, &c, &v);
    assert_non_null(v.machine_diff);
    assert_string_equal(v.machine_diff, CG_SHAPE_DIFF);
    assert_string_equal(v.shape[0], "runs differ: 2 nodes of 2 ranks and 2 GPUs (run 1), 1 node "
                                    "of 4 ranks and 4 GPUs (run 4)");
    assert_string_equal(v.shape[1], "2 nodes of 2 ranks and 2 GPUs");
    assert_int_equal(v.overall, CG_OUT_INCONCLUSIVE);
    assert_true(v.downgraded);
    cg_verdict_release(&v);
    /* the mixed side as the current one too */
    default_verdict(&c, &b, &v);
    assert_string_equal(v.machine_diff, CG_SHAPE_DIFF);
    assert_non_null(strstr(v.shape[1], "runs differ: "));
    cg_verdict_release(&v);
    cg_artifact_release(&b);
    cg_artifact_release(&c);
}

/* A run of one process (no ranks) measured by a tool that records ranks, 30 steps of ms. */
static void add_single_run(struct cg_artifact *a, bool recorded, double ms, uint64_t seed)
{
    struct cg_run *run = cg_artifact_add_run(a);
    assert_non_null(run);
    run->ranks_recorded = recorded;
    for (int s = 0; s < 30; s++)
        assert_int_equal(
            cg_run_add_step(
                run, (int64_t)(ms * 1e6 * (1.0 + 0.002 * (double)((seed + (uint64_t)s * 7) % 5))),
                1024, -1),
            0);
    cg_run_summarize(run);
}

/* Runs of one process pooled with runs of a world (a job script changed from one process to
 * srun or torchrun, under the same command): the side was judged as one machine and its node
 * shape was the world's (runs without ranks were skipped as written before ranks existed), so a
 * +30% regression against it FAILed or passed as if alike. A run that says it had no ranks
 * ("ranks": [], one process) is a shape of its own; a run of an older artifact that says
 * nothing is still not compared. */
static void test_straggler__one_process_runs_among_a_worlds_are_another_shape(void **state)
{
    (void)state;
    static const char *const two[4] = {"n1", "n1", "n2", "n2"};
    static const char *const uuids[4] = {"GPU-a", "GPU-b", "GPU-c", "GPU-d"};
    struct cg_artifact b, c, old;
    cg_artifact_init(&b);
    cg_artifact_init(&c);
    cg_artifact_init(&old);
    for (uint64_t i = 0; i < 5; i++) {
        if (i < 3)
            add_world_run(&b, two, uuids, 10, i);
        else
            add_single_run(&b, true, 10, i);
        add_world_run(&c, two, uuids, 13, i + 3);
        if (i < 3)
            add_world_run(&old, two, uuids, 10, i);
        else
            add_single_run(&old, false, 10, i);
    }
    struct cg_verdict v;
    default_verdict(&b, &c, &v);
    assert_non_null(v.machine_diff);
    assert_string_equal(v.machine_diff, CG_SHAPE_DIFF);
    assert_string_equal(v.shape[0], "runs differ: 2 nodes of 2 ranks and 2 GPUs (run 1), one "
                                    "process (run 4)");
    assert_int_equal(v.overall, CG_OUT_INCONCLUSIVE);
    cg_verdict_release(&v);
    default_verdict(&old, &c, &v); /* older runs that say nothing: not compared */
    assert_null(v.machine_diff);
    cg_verdict_release(&v);
    /* the flag survives JSON: one process writes "ranks": [], an older run nothing */
    struct cg_fixture f = {5, 20, 1e7, 0.01, 0.02, 512, -1, 100000000, 2, 1};
    struct cg_artifact fx, again;
    struct cg_err err;
    cg_artifact_init(&fx);
    cg_artifact_init(&again);
    assert_int_equal(cg_fixture_make(&fx, &f), 0);
    fx.runs[3].ranks_recorded = true;
    char *text = cg_artifact_to_json(&fx);
    assert_non_null(text);
    if (cg_artifact_parse(text, strlen(text), "t", &again, &err) != 0)
        fail_msg("%s", err.msg);
    assert_true(again.runs[3].ranks_recorded);
    assert_false(again.runs[2].ranks_recorded);
    assert_int_equal(again.runs[3].n_ranks, 0);
    free(text);
    cg_artifact_release(&fx);
    cg_artifact_release(&again);
    cg_artifact_release(&b);
    cg_artifact_release(&c);
    cg_artifact_release(&old);
}

/* A run of 4 ranks on 2 nodes, 30 steps of 10 ms with +-noise_pct per rank and step (drawn
 * from rng), rank 3 slow_pct slower in every step. */
static void add_spread_run(struct cg_artifact *a, double slow_pct, double noise_pct,
                           uint64_t *rng)
{
    struct cg_run *run = world_run(a, NULL);
    for (int r = 0; r < 4; r++) {
        struct cg_rank *k = &run->ranks[r];
        for (int s = 0; s < 30; s++) {
            double u = (double)(cg_stats_rand(rng) >> 11) / 9007199254740992.0;
            double f = (1.0 + noise_pct / 100.0 * (2.0 * u - 1.0)) *
                       (r == 3 ? 1.0 + slow_pct / 100.0 : 1.0);
            k->step_ns[s] = (int64_t)(10e6 * f);
        }
    }
    merge_steps(run, 1024);
    cg_run_summarize(run);
}

/* The rank spread: the share of the step the world waited for its slowest rank beyond the
 * median rank, shown for worlds of ranks, gated only when a thresholds file gives
 * "rank_spread" (the built-in ones do not). */
static void test_straggler__rank_spread_is_shown_and_gated_when_asked(void **state)
{
    (void)state;
    uint64_t rng = 7;
    struct cg_artifact b, c;
    cg_artifact_init(&b);
    cg_artifact_init(&c);
    for (int i = 0; i < 5; i++) {
        add_spread_run(&b, 0.0, 0.0, &rng);
        add_spread_run(&c, 20.0, 0.0, &rng);
    }
    struct cg_thresholds t;
    struct cg_err err;
    struct cg_verdict v;
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    const struct cg_anatomy_part *p = cg_anatomy_part(&v.anatomy, CG_ANAT_RANK_SPREAD);
    assert_non_null(p);
    assert_float_equal(p->baseline, 0.0, 1e-9);
    assert_float_equal(p->current, 2.0 / 12.0, 1e-6); /* 2 ms of a 12 ms step */
    assert_int_equal(p->outcome, CG_OUT_NOT_GATED);
    assert_string_equal(cg_anatomy_kind_name(CG_ANAT_RANK_SPREAD), "rank_spread");
    cg_verdict_release(&v);
    static const char text[] = "{\"extends\": \"default\", \"anatomy\": {\"rank_spread\": "
                               "{\"max_increase_points\": 2.0}}}";
    assert_int_equal(cg_thresholds_parse(text, sizeof(text) - 1, "spread.json", &t, &err), 0);
    assert_true(t.anatomy[CG_ANAT_GATE_RANK_SPREAD].set);
    assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
    p = cg_anatomy_part(&v.anatomy, CG_ANAT_RANK_SPREAD);
    assert_int_equal(p->outcome, CG_OUT_FAIL);
    assert_float_equal(p->shift_points, 100.0 * 2.0 / 12.0, 1e-3);
    cg_verdict_release(&v);
    /* one process a side: no spread, nothing shown */
    struct cg_artifact one;
    cg_artifact_init(&one);
    struct cg_fixture f = {3, 20, 10e6, 0.0, 0.0, 1024, -1, 200 << 20, 0, 1};
    assert_int_equal(cg_fixture_make(&one, &f), 0);
    assert_int_equal(cg_verdict_compute(&one, &one, &t, &v, &err), 0);
    assert_null(cg_anatomy_part(&v.anatomy, CG_ANAT_RANK_SPREAD));
    cg_verdict_release(&v);
    cg_artifact_release(&one);
    cg_artifact_release(&b);
    cg_artifact_release(&c);
}

/* Size and power of the gated rank spread ("rank_spread": 2 points at 0.05 with 3 runs): ranks
 * with +-5% noise in every step, 5 runs a side; under the null no rank is slower (the spread
 * comes from the noise alone); the alternative makes rank 3 10% slower in every current step.
 * Simulated 400 times each (seeded): 0 FAILs under the null, 400 with the slow rank; with rank 3
 * only 5% slower, a spread near the 2-point limit, 13 of 400. */
static void test_straggler__rank_spread_size_and_power(void **state)
{
    (void)state;
    static const char text[] = "{\"extends\": \"default\", \"anatomy\": {\"rank_spread\": "
                               "{\"max_increase_points\": 2.0}}}";
    struct cg_thresholds t;
    struct cg_err err;
    assert_int_equal(cg_thresholds_parse(text, sizeof(text) - 1, "spread.json", &t, &err), 0);
    int fails[2] = {0, 0};
    const int reps = 400;
    uint64_t rng = 99;
    for (int alt = 0; alt < 2; alt++)
        for (int i = 0; i < reps; i++) {
            struct cg_artifact b, c;
            cg_artifact_init(&b);
            cg_artifact_init(&c);
            for (int r = 0; r < 5; r++) {
                add_spread_run(&b, 0.0, 5.0, &rng);
                add_spread_run(&c, alt ? 10.0 : 0.0, 5.0, &rng);
            }
            struct cg_verdict v;
            assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
            fails[alt] += cg_anatomy_part(&v.anatomy, CG_ANAT_RANK_SPREAD)->outcome == CG_OUT_FAIL;
            cg_verdict_release(&v);
            cg_artifact_release(&b);
            cg_artifact_release(&c);
        }
    print_message("rank_spread, 5 v 5 runs: FAIL under the null %d of %d, with a rank 10%% slower "
                  "%d of %d\n", fails[0], reps, fails[1], reps);
    assert_true(fails[0] <= reps * 5 / 100);
    assert_true(fails[1] >= reps * 90 / 100);
}

/* A run of n ranks (at most 8; the first half on n1, the rest on n2) of 30 steps: rank r takes
 * ms[r] milliseconds a step, times (1 +- noise_pct) drawn from rng per rank and step (noise_pct
 * 0: no draw), and offset_pct[r] more in this run (NULL: none); the merged steps are the slowest
 * rank's. */
static void add_ranks_run(struct cg_artifact *a, int n, const double *ms, double noise_pct,
                          const double *offset_pct, uint64_t *rng)
{
    struct cg_run *run = cg_artifact_add_run(a);
    assert_non_null(run);
    run->n_ranks = (size_t)n;
    run->ranks = calloc((size_t)n, sizeof(*run->ranks));
    assert_non_null(run->ranks);
    for (int r = 0; r < n; r++) {
        struct cg_rank *k = &run->ranks[r];
        k->rank = r;
        k->local_rank = r % ((n + 1) / 2);
        k->node = strdup(r < (n + 1) / 2 ? "n1" : "n2");
        k->busy_ns = k->compute_ns = k->comm_exposed_ns = k->peak_device_bytes = -1;
        k->step_ns = malloc(30 * sizeof(int64_t));
        k->n_steps = 30;
        for (int s = 0; s < 30; s++) {
            double f = 1.0 + (offset_pct != NULL ? offset_pct[r] / 100.0 : 0.0);
            if (noise_pct > 0) {
                double u = (double)(cg_stats_rand(rng) >> 11) / 9007199254740992.0;
                f *= 1.0 + noise_pct / 100.0 * (2.0 * u - 1.0);
            }
            k->step_ns[s] = (int64_t)(ms[r] * 1e6 * f) + s % 3; /* no two steps alike */
        }
    }
    for (int s = 0; s < 30; s++) {
        int64_t m = 0;
        for (int r = 0; r < n; r++)
            m = run->ranks[r].step_ns[s] > m ? run->ranks[r].step_ns[s] : m;
        assert_int_equal(cg_run_add_step(run, m, 1024, -1), 0);
    }
    cg_run_summarize(run);
}

/* "The median rank" is one rank, the same for the straggler rule and the anatomy's rank spread:
 * of n ranks ordered by step time, the ((n + 1) / 2)-th fastest, so with two ranks the other
 * one. A rank 3% slower than its one peer is a straggler of +3% (not +1.5% over the mean of the
 * two), and the diagnosis's figure and the anatomy's share of the step describe the same wait. */
static void test_straggler__the_median_rank_is_one_rank_for_diagnosis_and_anatomy(void **state)
{
    (void)state;
    struct {
        int n;
        double ms[4];
        double over_pct; /* the straggler's, over the median rank */
    } cases[] = {
        {2, {10.0, 10.3}, 3.0},
        {2, {10.0, 13.0}, 30.0},
        {3, {10.0, 10.4, 13.0}, 25.0},
        {4, {10.0, 10.2, 10.4, 13.0}, 100.0 * (13.0 / 10.2 - 1.0)},
    };
    struct cg_thresholds t;
    struct cg_err err;
    assert_int_equal(cg_thresholds_load("default", &t, &err), 0);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct cg_artifact b, c;
        cg_artifact_init(&b);
        cg_artifact_init(&c);
        double even[4] = {10.0, 10.0, 10.0, 10.0};
        for (int r = 0; r < 3; r++) {
            add_ranks_run(&b, cases[i].n, even, 0.0, NULL, NULL);
            add_ranks_run(&c, cases[i].n, cases[i].ms, 0.0, NULL, NULL);
        }
        struct cg_straggler s;
        assert_int_equal(cg_straggler_find(&c, &s), 1);
        assert_int_equal(s.rank, cases[i].n - 1);
        if (fabs(s.over_median_pct - cases[i].over_pct) > 0.05)
            fail_msg("%d ranks: +%.2f%% over the median rank, expected +%.2f%%", cases[i].n,
                     s.over_median_pct, cases[i].over_pct);
        /* the anatomy: the slowest rank's time over the median rank's, as a share of the step */
        struct cg_verdict v;
        assert_int_equal(cg_verdict_compute(&b, &c, &t, &v, &err), 0);
        const struct cg_anatomy_part *p = cg_anatomy_part(&v.anatomy, CG_ANAT_RANK_SPREAD);
        assert_non_null(p);
        double share = s.over_median_pct / (100.0 + s.over_median_pct);
        if (fabs(p->current - share) > 1e-3)
            fail_msg("%d ranks: the anatomy's %.4f of the step, the straggler's +%.2f%% makes %.4f",
                     cases[i].n, p->current, s.over_median_pct, share);
        cg_verdict_release(&v);
        cg_artifact_release(&b);
        cg_artifact_release(&c);
    }
}

/* Size and power of the straggler rule (slowest in half the steps or more, its median step 2% or
 * more over the median rank's): worlds of 2 and 4 ranks, 5 runs of 30 steps of 10 ms, each step
 * +-5% noise per rank, each run +-1% per rank (a node a little faster or slower for a while);
 * under the null every rank alike, the alternatives make the last rank 3% or 5% slower in every
 * step. Simulated 400 times each (seeded); named: the right rank. */
static void test_straggler__straggler_rule_size_and_power(void **state)
{
    (void)state;
    const int worlds[] = {2, 4};
    const double slow_pcts[] = {0.0, 3.0, 5.0};
    const int reps = 400;
    uint64_t rng = 2027;
    int named[2][3] = {{0}};
    for (int w = 0; w < 2; w++)
        for (int k = 0; k < 3; k++)
            for (int i = 0; i < reps; i++) {
                int n = worlds[w];
                double ms[4] = {10.0, 10.0, 10.0, 10.0};
                ms[n - 1] *= 1.0 + slow_pcts[k] / 100.0;
                struct cg_artifact a;
                cg_artifact_init(&a);
                for (int run = 0; run < 5; run++) {
                    double offset[4];
                    for (int r = 0; r < n; r++)
                        offset[r] =
                            (double)(cg_stats_rand(&rng) >> 11) / 9007199254740992.0 * 2.0 - 1.0;
                    add_ranks_run(&a, n, ms, 5.0, offset, &rng);
                }
                struct cg_straggler s;
                int found = cg_straggler_find(&a, &s);
                assert_true(found >= 0);
                named[w][k] += found == 1 && (k == 0 || s.rank == n - 1);
                cg_artifact_release(&a);
            }
    for (int w = 0; w < 2; w++)
        print_message("straggler rule, %d ranks: named under the null %d of %d, a rank 3%% slower "
                      "%d, 5%% slower %d\n",
                      worlds[w], named[w][0], reps, named[w][1], named[w][2]);
    for (int w = 0; w < 2; w++) {
        assert_true(named[w][0] <= reps * 5 / 100);
        assert_true(named[w][2] >= reps * 90 / 100);
    }
    assert_true(named[0][1] >= reps * 80 / 100); /* two ranks: +3% against the other one */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_straggler__consistent_laggard_is_named_with_figures),
        cmocka_unit_test(test_straggler__none_when_slowness_moves_or_is_small),
        cmocka_unit_test(test_straggler__nodes_and_json_round_trip),
        cmocka_unit_test(test_straggler__node_shape_text),
        cmocka_unit_test(test_straggler__another_node_shape_is_another_machine),
        cmocka_unit_test(test_straggler__a_side_of_mixed_node_shapes_is_another_machine),
        cmocka_unit_test(test_straggler__one_process_runs_among_a_worlds_are_another_shape),
        cmocka_unit_test(test_straggler__rank_spread_is_shown_and_gated_when_asked),
        cmocka_unit_test(test_straggler__rank_spread_size_and_power),
        cmocka_unit_test(test_straggler__the_median_rank_is_one_rank_for_diagnosis_and_anatomy),
        cmocka_unit_test(test_straggler__straggler_rule_size_and_power),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
