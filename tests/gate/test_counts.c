/* test_counts: exact per-step counts compared (src/gate/counts.c) and their place in the
 * verdict, the sequential looks and the reports. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "anatomy.h"
#include "counts.h"
#include "fixtures.h"
#include "report.h"
#include "sequential.h"
#include "verdict.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Two sides of 5 runs x 20 steps at the same speed, every step with the given GPU counts (the
 * same on both sides) and 3 NVTX ranges (forward, backward, optimizer). */
struct sides {
    struct cg_artifact base, cur;
    struct cg_thresholds t;
};

static void set_count(struct cg_artifact *a, int count, int64_t v)
{
    for (size_t r = 0; r < a->n_runs; r++)
        for (size_t s = 0; s < a->runs[r].n_steps; s++)
            a->runs[r].steps[s].counts[count] = v;
}

static void make_side(struct cg_artifact *a, size_t runs, uint64_t seed)
{
    struct cg_fixture f = {runs, 20, 1e7, 0.01, 0.02, 1024, 1000000000, 200000000, 0, seed};
    cg_artifact_init(a);
    assert_int_equal(cg_fixture_make(a, &f), 0);
    static const int64_t gpu[CG_COUNT_N] = {
        [CG_COUNT_KERNELS] = 100, [CG_COUNT_GRAPH_KERNELS] = 0,       [CG_COUNT_SYNC_STREAM] = 1,
        [CG_COUNT_COPIES] = 4,    [CG_COUNT_DTOH_PAGEABLE_BYTES] = 0, [CG_COUNT_RANGES] = 3};
    for (int c = 0; c < CG_COUNT_N; c++)
        set_count(a, c, gpu[c]);
    assert_int_equal(cg_fixture_add_op(a, "forward", NULL, CG_OP_RANGE, 1, 1000), 0);
    assert_int_equal(cg_fixture_add_op(a, "backward", NULL, CG_OP_RANGE, 1, 1000), 0);
    assert_int_equal(cg_fixture_add_op(a, "optimizer", NULL, CG_OP_RANGE, 1, 1000), 0);
}

static int setup(void **state)
{
    struct sides *s = calloc(1, sizeof(*s));
    struct cg_err err;
    cg_err_init(&err);
    make_side(&s->base, 5, 1);
    make_side(&s->cur, 5, 2);
    assert_int_equal(cg_thresholds_load("default", &s->t, &err), 0);
    *state = s;
    return 0;
}

static int teardown(void **state)
{
    struct sides *s = *state;
    cg_artifact_release(&s->base);
    cg_artifact_release(&s->cur);
    free(s);
    return 0;
}

static const struct cg_count_result *row_of(const struct cg_verdict *v, int row)
{
    for (size_t i = 0; i < v->counts.n; i++)
        if (v->counts.rows[i].row == row)
            return &v->counts.rows[i];
    return NULL;
}

static const struct cg_count_result *range_of(const struct cg_verdict *v, const char *name)
{
    for (size_t i = 0; i < v->counts.n; i++)
        if (v->counts.rows[i].row < 0 && strcmp(v->counts.rows[i].name, name) == 0)
            return &v->counts.rows[i];
    return NULL;
}

static void verdict(struct sides *s, struct cg_verdict *v)
{
    struct cg_err err;
    cg_err_init(&err);
    assert_int_equal(cg_verdict_compute(&s->base, &s->cur, &s->t, v, &err), 0);
}

/* v's markdown report into md, NUL-terminated (md released by the caller). */
static void markdown_of(const struct cg_verdict *v, struct cg_buf *md)
{
    struct cg_err err;
    cg_err_init(&err);
    cg_buf_init(md, CG_REPORT_MAX_BYTES + 1);
    assert_int_equal(cg_report_markdown(v, NULL, md, &err), 0);
    assert_int_equal(cg_buf_adds(md, ""), 0);
}

static void same_counts_pass(void **state)
{
    struct sides *s = *state;
    struct cg_verdict v;
    verdict(s, &v);
    assert_int_equal(v.overall, CG_OUT_PASS);
    assert_int_equal(v.counts.n_fail, 0);
    assert_int_equal(v.counts.n_changed, 0);
    assert_int_equal(v.counts.n_varying, 0);
    /* every row measured on both sides, then the three range names */
    assert_int_equal(v.counts.n_compared, CG_COUNT_ROWS + 3);
    const struct cg_count_result *k = row_of(&v, CG_COUNT_KERNELS);
    assert_non_null(k);
    assert_true(k->baseline == 100 && k->current == 100);
    assert_int_equal(k->outcome, CG_OUT_PASS);
    assert_true(k->allowed == 10.0); /* +10% of 100 */
    assert_int_equal(row_of(&v, CG_COUNT_SYNCS)->outcome, CG_OUT_PASS);
    assert_true(row_of(&v, CG_COUNT_SYNCS)->baseline == 1);
    assert_int_equal(row_of(&v, CG_COUNT_GRAPH_KERNELS)->outcome, CG_OUT_NOT_GATED);
    assert_true(row_of(&v, CG_COUNT_UNGRAPHED)->current == 100);
    cg_verdict_release(&v);
}

/* One more stream synchronisation per step: a FAIL on the first look, without statistics. */
static void one_more_sync_fails(void **state)
{
    struct sides *s = *state;
    set_count(&s->cur, CG_COUNT_SYNC_STREAM, 2);
    struct cg_verdict v;
    verdict(s, &v);
    assert_int_equal(v.overall, CG_OUT_FAIL);
    assert_int_equal(v.metrics[CG_M_STEP_TIME_MEAN].outcome, CG_OUT_PASS);
    const struct cg_count_result *r = row_of(&v, CG_COUNT_SYNCS);
    assert_int_equal(r->outcome, CG_OUT_FAIL);
    assert_true(r->baseline == 1 && r->current == 2 && r->allowed == 0);
    assert_int_equal(v.counts.rows[0].row, CG_COUNT_SYNCS); /* failures first */
    /* the by-type row is shown, not gated */
    assert_int_equal(row_of(&v, CG_COUNT_SYNC_STREAM)->outcome, CG_OUT_NOT_GATED);
    char line[512];
    cg_verdict_headline(&v, line, sizeof(line));
    assert_string_equal(line, "FAIL: +1 host synchronisations per step (1 -> 2)");
    cg_verdict_release(&v);
}

/* Kernels may grow by 10%: 110 passes, 111 fails. */
static void kernels_within_ten_percent(void **state)
{
    struct sides *s = *state;
    struct cg_verdict v;
    set_count(&s->cur, CG_COUNT_KERNELS, 110);
    verdict(s, &v);
    assert_int_equal(row_of(&v, CG_COUNT_KERNELS)->outcome, CG_OUT_PASS);
    assert_int_equal(v.overall, CG_OUT_PASS);
    cg_verdict_release(&v);
    set_count(&s->cur, CG_COUNT_KERNELS, 111);
    verdict(s, &v);
    assert_int_equal(row_of(&v, CG_COUNT_KERNELS)->outcome, CG_OUT_FAIL);
    assert_int_equal(row_of(&v, CG_COUNT_UNGRAPHED)->outcome, CG_OUT_FAIL);
    assert_int_equal(v.overall, CG_OUT_FAIL);
    cg_verdict_release(&v);
}

/* A count that fell in every run is an improvement, and passes. */
static void fewer_copies_improve(void **state)
{
    struct sides *s = *state;
    set_count(&s->cur, CG_COUNT_COPIES, 2);
    struct cg_verdict v;
    verdict(s, &v);
    assert_int_equal(row_of(&v, CG_COUNT_COPIES)->outcome, CG_OUT_IMPROVED);
    assert_int_equal(v.counts.n_improved, 1);
    assert_int_equal(v.overall, CG_OUT_PASS);
    cg_verdict_release(&v);
}

/* A FAIL needs every current run above every baseline run: one current run that kept the old
 * count makes the change not the code's alone; the count varies and gets the varying limit. */
static void one_run_disagreeing_does_not_fail(void **state)
{
    struct sides *s = *state;
    set_count(&s->cur, CG_COUNT_DTOH_PAGEABLE, 1);
    for (size_t k = 0; k < s->cur.runs[2].n_steps; k++)
        s->cur.runs[2].steps[k].counts[CG_COUNT_DTOH_PAGEABLE] = 0;
    struct cg_verdict v;
    verdict(s, &v);
    const struct cg_count_result *r = row_of(&v, CG_COUNT_DTOH_PAGEABLE);
    assert_true(r->varies);
    assert_true(r->cur_lo == 0 && r->cur_hi == 1 && r->current == 1);
    assert_int_equal(r->outcome, CG_OUT_PASS);
    assert_int_equal(v.overall, CG_OUT_PASS);
    cg_verdict_release(&v);
}

/* Counts that vary from step to step take the run's median and at least the varying limit. */
static void varying_counts_get_the_varying_limit(void **state)
{
    struct sides *s = *state;
    for (int side = 0; side < 2; side++) {
        struct cg_artifact *a = side ? &s->cur : &s->base;
        for (size_t r = 0; r < a->n_runs; r++)
            for (size_t k = 0; k < a->runs[r].n_steps; k++) /* 2, 3, 2, 3, ... (+1 current) */
                a->runs[r].steps[k].counts[CG_COUNT_ALLOCS] = 2 + (int64_t)(k % 2) + side;
    }
    struct cg_verdict v;
    verdict(s, &v);
    const struct cg_count_result *r = row_of(&v, CG_COUNT_ALLOCS);
    assert_true(r->varies);
    assert_true(r->baseline == 2.5 && r->current == 3.5);
    assert_true(fabs(r->allowed - 0.25) < 1e-12); /* 10% of 2.5 beats the exact limit of 0 */
    assert_int_equal(r->outcome, CG_OUT_FAIL);
    assert_int_equal(v.counts.n_varying, 1);
    cg_verdict_release(&v);
}

/* Every step k of every run of a with k % every == phase gets count + add. */
static void add_every(struct cg_artifact *a, int count, size_t every, size_t phase, int64_t add)
{
    for (size_t r = 0; r < a->n_runs; r++)
        for (size_t k = 0; k < a->runs[r].n_steps; k++)
            if (k % every == phase)
                a->runs[r].steps[k].counts[count] += add;
}

/* A pull request that reads the loss (.item(): a synchronisation and a pageable copy) every third
 * step moves no run's median (0 in 13 of 20 steps): a run against a baseline that is the same in
 * every step is valued at its mean, so the work added every k-th step FAILs. */
static void work_added_every_third_step_fails(void **state)
{
    struct sides *s = *state;
    add_every(&s->cur, CG_COUNT_SYNC_STREAM, 3, 1, 1);
    add_every(&s->cur, CG_COUNT_DTOH_PAGEABLE, 3, 1, 1);
    struct cg_verdict v;
    verdict(s, &v);
    const struct cg_count_result *r = row_of(&v, CG_COUNT_DTOH_PAGEABLE);
    assert_non_null(r);
    assert_int_equal(r->outcome, CG_OUT_FAIL);
    assert_true(r->baseline == 0 && fabs(r->current - 0.35) < 1e-12); /* 7 of 20 steps */
    assert_int_equal(row_of(&v, CG_COUNT_SYNCS)->outcome, CG_OUT_FAIL);
    assert_int_equal(v.overall, CG_OUT_FAIL);
    cg_verdict_release(&v);
}

/* The same work taken away every third step is an improvement; one step of each current run off
 * the baseline's value (a one-off) keeps the run's median and decides nothing. */
static void work_removed_every_third_step_improves_a_one_off_does_not(void **state)
{
    struct sides *s = *state;
    add_every(&s->base, CG_COUNT_SYNC_STREAM, 3, 1, 1);
    add_every(&s->cur, CG_COUNT_ALLOCS, 20, 7, 1);
    struct cg_verdict v;
    verdict(s, &v);
    const struct cg_count_result *r = row_of(&v, CG_COUNT_SYNCS);
    assert_int_equal(r->outcome, CG_OUT_IMPROVED);
    assert_true(fabs(r->baseline - 1.35) < 1e-12 && r->current == 1);
    r = row_of(&v, CG_COUNT_ALLOCS);
    assert_int_equal(r->outcome, CG_OUT_PASS);
    assert_true(r->baseline == 0 && r->current == 0 && r->varies);
    assert_int_equal(v.overall, CG_OUT_PASS);
    cg_verdict_release(&v);
}

/* A baseline whose count dips in two steps of each run (1 a step, 0 in steps 4 and 11) against a
 * current side exactly at the usual 1: valued at its mean the baseline read 0.9 and the current
 * FAILed "+0.1 host synchronisations per step"; a side valued against the other's exact value
 * is taken at its mean only where that is above its median, for an improvement to show. */
static void a_baseline_that_dips_does_not_fail_an_exact_current(void **state)
{
    struct sides *s = *state;
    add_every(&s->base, CG_COUNT_SYNC_STREAM, 20, 4, -1);
    add_every(&s->base, CG_COUNT_SYNC_STREAM, 20, 11, -1);
    struct cg_verdict v;
    verdict(s, &v);
    const struct cg_count_result *r = row_of(&v, CG_COUNT_SYNCS);
    assert_int_equal(r->outcome, CG_OUT_PASS);
    assert_true(r->baseline == 1 && r->current == 1);
    assert_int_equal(v.overall, CG_OUT_PASS);
    cg_verdict_release(&v);
}

/* Size and power of valuing runs at their mean against a side the same in every step. Under the
 * null both sides draw one allocation in a step with probability p, independently (a canary with
 * rare data-dependent allocations): a FAIL needs the baseline to show none in any step and every
 * current run to show 2 or more. Power: work added every k-th step in every current run. 2,000
 * comparisons a cell, seeded; the rates found are in docs/counts.md. */
static void periodic_rule_size_and_power(void **state)
{
    struct sides *s = *state;
    const size_t shapes[][2] = {{3, 3}, {5, 5}, {3, 1}};
    const double ps[] = {0.01, 0.02, 0.03, 0.05, 0.08, 0.12};
    const double most[] = {0.005, 0.002, 0.035}; /* largest size allowed per shape */
    uint64_t x = 88172645463325252ull;
    for (size_t sh = 0; sh < 3; sh++) {
        cg_artifact_release(&s->base);
        cg_artifact_release(&s->cur);
        make_side(&s->base, shapes[sh][0], 5);
        make_side(&s->cur, shapes[sh][1], 6);
        double worst = 0;
        for (size_t pi = 0; pi < sizeof(ps) / sizeof(ps[0]); pi++) {
            size_t fails = 0, trials = 2000;
            for (size_t t = 0; t < trials; t++) {
                for (int side = 0; side < 2; side++) {
                    struct cg_artifact *a = side ? &s->cur : &s->base;
                    for (size_t r = 0; r < a->n_runs; r++)
                        for (size_t k = 0; k < a->runs[r].n_steps; k++) {
                            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                            a->runs[r].steps[k].counts[CG_COUNT_ALLOCS] =
                                (double)(x >> 11) / 9007199254740992.0 < ps[pi];
                        }
                }
                struct cg_counts c;
                struct cg_err err;
                cg_err_init(&err);
                assert_int_equal(cg_counts_compare(&s->base, &s->cur, &s->t, &c, &err), 0);
                for (size_t i = 0; i < c.n; i++)
                    fails += c.rows[i].row == CG_COUNT_ALLOCS && c.rows[i].outcome == CG_OUT_FAIL;
                cg_counts_release(&c);
            }
            double size = (double)fails / (double)trials;
            printf("# %zu v %zu runs, p %.2f: size %.4f\n", shapes[sh][0], shapes[sh][1], ps[pi],
                   size);
            worst = fmax(worst, size);
        }
        if (worst > most[sh])
            fail_msg("%zu v %zu runs: size %.4f above %.4f", shapes[sh][0], shapes[sh][1], worst,
                     most[sh]);
        for (size_t every = 3; every <= 10; every++) { /* power: every current run, every k */
            set_count(&s->base, CG_COUNT_ALLOCS, 0);
            set_count(&s->cur, CG_COUNT_ALLOCS, 0);
            add_every(&s->cur, CG_COUNT_ALLOCS, every, 1, 1);
            struct cg_counts c;
            struct cg_err err;
            cg_err_init(&err);
            assert_int_equal(cg_counts_compare(&s->base, &s->cur, &s->t, &c, &err), 0);
            bool failed = false;
            for (size_t i = 0; i < c.n; i++)
                failed |= c.rows[i].row == CG_COUNT_ALLOCS && c.rows[i].outcome == CG_OUT_FAIL;
            cg_counts_release(&c);
            if (!failed)
                fail_msg("an allocation every %zu steps passed (%zu v %zu runs)", every,
                         shapes[sh][0], shapes[sh][1]);
        }
    }
}

/* A range called twice a step now FAILs; a new range name FAILs; an override allows one. */
static void range_calls_per_name(void **state)
{
    struct sides *s = *state;
    for (size_t r = 0; r < s->cur.n_runs; r++)
        for (size_t i = 0; i < s->cur.runs[r].n_ops; i++)
            if (strcmp(s->cur.runs[r].ops[i].name, "forward") == 0)
                s->cur.runs[r].ops[i].calls *= 2;
    assert_int_equal(cg_fixture_add_op(&s->cur, "all_reduce", NULL, CG_OP_RANGE, 1, 10), 0);
    struct cg_verdict v;
    verdict(s, &v);
    assert_int_equal(range_of(&v, "forward")->outcome, CG_OUT_FAIL);
    assert_true(range_of(&v, "forward")->current == 2);
    assert_int_equal(range_of(&v, "all_reduce")->outcome, CG_OUT_FAIL);
    assert_true(range_of(&v, "all_reduce")->baseline == 0);
    assert_int_equal(range_of(&v, "backward")->outcome, CG_OUT_PASS);
    assert_int_equal(v.overall, CG_OUT_FAIL);
    char line[512];
    cg_verdict_headline(&v, line, sizeof(line));
    /* a range name is the canary's string: the headline never carries it */
    assert_string_equal(line, "FAIL: +1 calls of an NVTX range per step (0 -> 1) (and 1 more)");
    cg_verdict_release(&v);
    struct cg_err err;
    cg_err_init(&err);
    static const char override[] =
        "{\"counts\": {\"range_names\": {\"forward\": {\"max_increase\": 1}, "
        "\"all_reduce\": null}}}";
    assert_int_equal(cg_thresholds_parse(override, strlen(override), "o.json", &s->t, &err), 0);
    verdict(s, &v);
    assert_int_equal(range_of(&v, "forward")->outcome, CG_OUT_PASS);
    assert_int_equal(range_of(&v, "all_reduce")->outcome, CG_OUT_NOT_GATED);
    assert_int_equal(v.overall, CG_OUT_PASS);
    cg_verdict_release(&v);
}

/* A count one side did not measure is unavailable and never decides; the GPU counts of a side
 * without a GPU are not listed when neither side has them. */
static void unmeasured_counts_never_decide(void **state)
{
    struct sides *s = *state;
    set_count(&s->cur, CG_COUNT_JIT, -1);
    set_count(&s->base, CG_COUNT_SYNC_STREAM, -1);
    set_count(&s->cur, CG_COUNT_SYNC_STREAM, -1);
    struct cg_verdict v;
    verdict(s, &v);
    assert_int_equal(row_of(&v, CG_COUNT_JIT)->outcome, CG_OUT_UNAVAILABLE);
    assert_null(row_of(&v, CG_COUNT_SYNC_STREAM));
    assert_null(row_of(&v, CG_COUNT_SYNCS));
    assert_int_equal(v.overall, CG_OUT_PASS);
    cg_verdict_release(&v);
}

/* Counts need no runs: one run a side, a baseline too small for timing, still FAILs. */
static void one_run_a_side_still_fails_on_counts(void **state)
{
    struct sides *s = *state;
    cg_artifact_release(&s->base);
    cg_artifact_release(&s->cur);
    make_side(&s->base, 1, 3);
    make_side(&s->cur, 1, 4);
    set_count(&s->cur, CG_COUNT_MODULE_LOADS, 1);
    struct cg_verdict v;
    verdict(s, &v);
    assert_true(v.weak_baseline);
    assert_int_equal(row_of(&v, CG_COUNT_MODULE_LOADS)->outcome, CG_OUT_FAIL);
    assert_int_equal(v.overall, CG_OUT_FAIL);
    cg_verdict_release(&v);
}

/* On another machine a count FAIL is INCONCLUSIVE (kernel choice follows the GPU and
 * libraries), unless the thresholds gate environment mismatches. */
static void other_machine_makes_counts_inconclusive(void **state)
{
    struct sides *s = *state;
    free(s->cur.env.gpu_model);
    s->cur.env.gpu_model = strdup("another GPU");
    s->base.gpu_available = s->cur.gpu_available = true;
    set_count(&s->cur, CG_COUNT_SYNC_EVENT, 1);
    struct cg_verdict v;
    verdict(s, &v);
    assert_non_null(v.machine_diff);
    const struct cg_count_result *r = row_of(&v, CG_COUNT_SYNCS);
    assert_int_equal(r->outcome, CG_OUT_INCONCLUSIVE);
    assert_true(r->other_machine);
    assert_int_equal(v.overall, CG_OUT_INCONCLUSIVE);
    assert_true(v.downgraded);
    char line[512];
    cg_verdict_headline(&v, line, sizeof(line));
    if (strstr(line, "INCONCLUSIVE: +1 host synchronisations per step (1 -> 2): measured on a "
                     "different machine (") == NULL)
        fail_msg("headline: %s", line); /* one sentence: the change, then its reason */
    cg_verdict_release(&v);
    s->t.env_mismatch_gates = true;
    verdict(s, &v);
    assert_int_equal(row_of(&v, CG_COUNT_SYNCS)->outcome, CG_OUT_FAIL);
    cg_verdict_release(&v);
}

/* The sequential loop: a count FAIL ends the looks at once and is not sent to confirmation. */
struct measure_ctx {
    int calls;
};

static int no_measure(void *ctx, struct cg_artifact *into, size_t n, bool confirmation,
                      double *secs, struct cg_err *err)
{
    (void)into;
    (void)n;
    (void)confirmation;
    (void)secs;
    (void)err;
    ((struct measure_ctx *)ctx)->calls++;
    return CG_EINPUT;
}

static void counts_fail_needs_no_confirmation(void **state)
{
    struct sides *s = *state;
    set_count(&s->cur, CG_COUNT_DTOH_PAGEABLE, 1);
    struct cg_seq_opts o;
    memset(&o, 0, sizeof(o));
    o.spend = CG_SPEND_POCOCK;
    o.batch = 5;
    o.max_runs = 20;
    o.confirm = true;
    struct cg_artifact conf;
    cg_artifact_init(&conf);
    struct cg_seq seq;
    struct measure_ctx ctx = {0};
    struct cg_err err;
    cg_err_init(&err);
    assert_int_equal(
        cg_seq_decide(&s->base, &s->cur, &conf, &s->t, &o, 1.0, no_measure, &ctx, &seq, &err), 0);
    assert_int_equal(ctx.calls, 0); /* neither more runs nor confirmation runs */
    assert_int_equal(seq.info.looks, 1);
    assert_int_equal(seq.info.confirm, CG_CONFIRM_NOT_NEEDED);
    assert_int_equal(seq.verdict.overall, CG_OUT_FAIL);
    cg_seq_release(&seq);
    cg_artifact_release(&conf);
}

/* The reports: a markdown section with the changed rows, the JSON rows, the terminal lines. */
static void reports_show_the_changed_counts(void **state)
{
    struct sides *s = *state;
    set_count(&s->cur, CG_COUNT_SYNC_STREAM, 2);
    set_count(&s->cur, CG_COUNT_COPIES, 3);
    struct cg_verdict v;
    verdict(s, &v);
    struct cg_buf md, term;
    markdown_of(&v, &md);
    struct cg_err err;
    cg_err_init(&err);
    cg_buf_init(&term, 1 << 20);
    assert_non_null(strstr(md.data, "### Counts per step"));
    assert_non_null(
        strstr(md.data, "| host synchronisations | 1 | 2 | +1 | +0 | \xe2\x9d\x8c fail |"));
    assert_non_null(
        strstr(md.data, "| copies | 4 | 3 | -1 | +10% (+0.4) | \xf0\x9f\x9a\x80 improved |"));
    assert_non_null(strstr(md.data, "1 count fell: record the baseline again"));
    assert_null(strstr(md.data, "| kernel launches |")); /* unchanged rows are counted, not shown */
    assert_int_equal(cg_report_terminal(&v, false, &term, &err), 0);
    assert_int_equal(cg_buf_adds(&term, ""), 0);
    assert_non_null(strstr(term.data, "fail  synchronizations"));
    char *json = cg_report_json(&v);
    assert_non_null(json);
    assert_non_null(strstr(json, "\"count\":\t\"synchronizations\""));
    assert_non_null(strstr(json, "\"failed\":\t1"));
    free(json);
    cg_buf_release(&md);
    cg_buf_release(&term);
    cg_verdict_release(&v);
}

/* Every run of a side placed its calls: per run, calls over its steps at (count, after, range). */
static void place_all(struct cg_artifact *a, int count, bool after, const char *range,
                      int64_t per_step)
{
    for (size_t r = 0; r < a->n_runs; r++) {
        a->runs[r].places_measured = true;
        if (per_step > 0)
            assert_int_equal(cg_run_add_place(&a->runs[r], count, after, range,
                                              per_step * (int64_t)a->runs[r].n_steps),
                             0);
    }
}

/* A synchronisation added after `backward`: the rows say where (the place that grew, none that
 * did not); a call in no range is the rest; a side that did not place its calls says nothing.
 * The reports carry it, the range names escaped. */
static void changed_calls_say_where(void **state)
{
    struct sides *s = *state;
    place_all(&s->base, CG_COUNT_SYNC_STREAM, false, "forward", 1);
    set_count(&s->cur, CG_COUNT_SYNC_STREAM, 3);
    place_all(&s->cur, CG_COUNT_SYNC_STREAM, false, "forward", 1);
    place_all(&s->cur, CG_COUNT_SYNC_STREAM, true, "back|ward", 1); /* and one in no range */
    set_count(&s->cur, CG_COUNT_ALLOCS, 1); /* allocator churn: an allocation in `forward` */
    place_all(&s->cur, CG_COUNT_ALLOCS, false, "forward", 1);
    set_count(&s->cur, CG_COUNT_MODULE_LOADS, 1); /* a recompilation after `loss` */
    place_all(&s->cur, CG_COUNT_MODULE_LOADS, true, "loss", 1);
    struct cg_verdict v;
    verdict(s, &v);
    const struct cg_count_result *loads = row_of(&v, CG_COUNT_MODULE_LOADS);
    assert_int_equal(loads->n_where, 1);
    assert_string_equal(loads->where[0].range, "loss");
    assert_true(loads->where[0].after);
    const struct cg_count_result *allocs = row_of(&v, CG_COUNT_ALLOCS);
    assert_int_equal(allocs->outcome, CG_OUT_FAIL);
    assert_int_equal(allocs->n_where, 1);
    assert_string_equal(allocs->where[0].range, "forward");
    assert_false(allocs->where[0].after);
    assert_true(allocs->where[0].baseline == 0 && allocs->where[0].current == 1);
    for (int row = CG_COUNT_SYNC_STREAM; row != -1;
         row = row == CG_COUNT_SYNCS ? -1 : CG_COUNT_SYNCS) {
        const struct cg_count_result *r = row_of(&v, row);
        assert_int_equal(r->n_where, 2);
        assert_string_equal(r->where[0].range, "back|ward");
        assert_true(r->where[0].after);
        assert_true(r->where[0].baseline == 0 && r->where[0].current == 1);
        assert_null(r->where[1].range); /* in no range */
        assert_true(r->where[1].baseline == 0 && r->where[1].current == 1);
    }
    assert_int_equal(row_of(&v, CG_COUNT_COPIES)->n_where, 0); /* copies are not placed */
    struct cg_buf md, term;
    markdown_of(&v, &md);
    struct cg_err err;
    cg_err_init(&err);
    cg_buf_init(&term, 1 << 20);
    if (strstr(md.data, "- host synchronisations: +1 per step after **back&#124;ward** (0 -> 1); "
                        "+1 per step in no NVTX range (0 -> 1)\n") == NULL ||
        strstr(md.data, "- stream synchronisations:") != NULL || /* the sum's, once */
        strstr(md.data, "- device allocations: +1 per step in **forward** (0 -> 1)\n") == NULL)
        fail_msg("no place line in:\n%s", strstr(md.data, "### Counts"));
    assert_int_equal(cg_report_terminal(&v, false, &term, &err), 0);
    assert_int_equal(cg_buf_adds(&term, ""), 0);
    assert_non_null(strstr(term.data, "+1 per step after back|ward (0 -> 1)\n"));
    char *json = cg_report_json(&v);
    assert_non_null(json);
    assert_non_null(strstr(json, "\"place\":\t\"after\",\n"));
    assert_non_null(strstr(json, "\"range\":\t\"back|ward\""));
    assert_non_null(strstr(json, "\"place\":\t\"none\""));
    free(json);
    cg_buf_release(&md);
    cg_buf_release(&term);
    cg_verdict_release(&v);
    /* a baseline that did not place its calls: no places */
    for (size_t r = 0; r < s->base.n_runs; r++)
        s->base.runs[r].places_measured = false;
    verdict(s, &v);
    assert_int_equal(row_of(&v, CG_COUNT_SYNCS)->n_where, 0);
    assert_int_equal(row_of(&v, CG_COUNT_SYNCS)->outcome, CG_OUT_FAIL);
    cg_verdict_release(&v);
}

/* The anatomy of a step: GPU busy and idle from the busy time, the host's synchronisation
 * share, the NVTX ranges' shares, the median over runs; unknown parts left out. */
static void anatomy_shares(void **state)
{
    struct sides *s = *state;
    struct cg_anatomy an;
    assert_int_equal(cg_anatomy_compute(&s->base, &s->cur, NULL, &an), 0);
    assert_int_equal(an.n, 3); /* no busy time, no sync time: only the three ranges */
    cg_fixture_set_busy(&s->base, 0.6);
    cg_fixture_set_busy(&s->cur, 0.3);
    for (size_t r = 0; r < s->cur.n_runs; r++)
        for (size_t k = 0; k < s->cur.runs[r].n_steps; k++)
            s->cur.runs[r].steps[k].sync_ns = s->cur.runs[r].steps[k].wall_ns / 4;
    assert_int_equal(cg_anatomy_compute(&s->base, &s->cur, NULL, &an), 0);
    assert_int_equal(an.n, 6);
    assert_int_equal(an.parts[0].kind, CG_ANAT_GPU_BUSY);
    assert_true(fabs(an.parts[0].baseline - 0.6) < 1e-6 && fabs(an.parts[0].current - 0.3) < 1e-6);
    assert_int_equal(an.parts[1].kind, CG_ANAT_GPU_IDLE);
    assert_true(fabs(an.parts[1].current - 0.7) < 1e-6);
    assert_int_equal(an.parts[2].kind, CG_ANAT_SYNC);
    assert_true(isnan(an.parts[2].baseline));
    assert_true(fabs(an.parts[2].current - 0.25) < 1e-6);
    assert_int_equal(an.parts[3].kind, CG_ANAT_RANGE);
    /* each range: 1000 ns of a 1e7 ns step */
    assert_true(fabs(an.parts[3].baseline - 1e-4) < 1e-6);
    struct cg_verdict v;
    verdict(s, &v);
    struct cg_buf md;
    markdown_of(&v, &md);
    assert_non_null(strstr(md.data, "| GPU busy (kernels) | 60.0% | 30.0% | -30.0 pts | shown |"));
    assert_non_null(
        strstr(md.data, "| host blocked in synchronisation | &mdash; | 25.0% | &mdash; | shown |"));
    cg_buf_release(&md);
    cg_verdict_release(&v);
}

/* The ranges shown are chosen by their largest run but listed by their medians: one run in
 * which "backward" took most of the step does not put it above "forward". */
static void anatomy_lists_ranges_by_their_medians(void **state)
{
    struct sides *s = *state;
    for (int side = 0; side < 2; side++) {
        struct cg_artifact *a = side ? &s->cur : &s->base;
        for (size_t r = 0; r < a->n_runs; r++)
            for (size_t i = 0; i < a->runs[r].n_ops; i++) {
                struct cg_op *op = &a->runs[r].ops[i];
                double share = strcmp(op->name, "forward") == 0    ? 0.4
                               : strcmp(op->name, "backward") == 0 ? (r == 0 ? 0.9 : 0.2)
                                                                   : 0.1;
                op->total_ns = (int64_t)(share * 1e7) * (int64_t)a->runs[r].n_steps;
            }
    }
    struct cg_anatomy an;
    assert_int_equal(cg_anatomy_compute(&s->base, &s->cur, NULL, &an), 0);
    assert_int_equal(an.n, 3);
    assert_string_equal(an.parts[0].name, "forward");
    assert_string_equal(an.parts[1].name, "backward");
    assert_string_equal(an.parts[2].name, "optimizer");
}

/* Sets every step's compute time to share of its busy time on side a (run r: share + r * jitter,
 * so the runs differ). */
static void set_compute(struct cg_artifact *a, double share, double jitter)
{
    for (size_t r = 0; r < a->n_runs; r++)
        for (size_t k = 0; k < a->runs[r].n_steps; k++) {
            struct cg_step *st = &a->runs[r].steps[k];
            st->compute_ns = (int64_t)((double)st->gpu_busy_ns * (share + (double)r * jitter));
            st->copy_ns = st->copy_hidden_ns = st->wall_ns / 20; /* kernels run during them */
        }
}

/* The GPU busy 90% of the base side's steps and 70% of the current's, all of it compute. */
static void busy_90_then_70(struct sides *s)
{
    cg_fixture_set_busy(&s->base, 0.9);
    cg_fixture_set_busy(&s->cur, 0.7);
    set_compute(&s->base, 1.0, 0.0);
    set_compute(&s->cur, 1.0, 0.0);
}

/* Communication no compute overlapped: busy minus compute, shown with compute; gated in points of
 * the step (3 by default): +8 points over 5 runs a side FAILs and says so in the headline; +1
 * point PASSes; with 2 runs a side, +8 points is INCONCLUSIVE (min_runs 3). */
static void exposed_communication_is_gated(void **state)
{
    struct sides *s = *state;
    cg_fixture_set_busy(&s->base, 0.8);
    cg_fixture_set_busy(&s->cur, 0.8);
    set_compute(&s->base, 0.9, 0.001); /* exposed: 0.8 * 0.1 = 8% of the step */
    set_compute(&s->cur, 0.8, 0.001);  /* 16% */
    struct cg_verdict v;
    verdict(s, &v);
    const struct cg_anatomy_part *e = cg_anatomy_part(&v.anatomy, CG_ANAT_EXPOSED_COMM);
    const struct cg_anatomy_part *c = cg_anatomy_part(&v.anatomy, CG_ANAT_COMPUTE);
    assert_non_null(e);
    assert_non_null(c);
    assert_true(fabs(e->baseline - 0.08 + 0.8 * 0.002) < 1e-3); /* the median run: r = 2 */
    assert_true(fabs(e->shift_points - 8.0) < 0.01);
    assert_int_equal(e->outcome, CG_OUT_FAIL);
    assert_true(e->p_value < 0.01);
    assert_int_equal(c->outcome, CG_OUT_NOT_GATED);
    assert_non_null(cg_anatomy_part(&v.anatomy, CG_ANAT_COPIES));
    assert_int_equal(v.overall, CG_OUT_FAIL);
    char line[512];
    cg_verdict_headline(&v, line, sizeof(line));
    assert_non_null(strstr(line, "FAIL: communication not overlapped by compute share of the step "
                                 "+8.0 points"));
    char *json = cg_report_json(&v);
    assert_non_null(strstr(json, "\"part\":\t\"exposed_communication\""));
    assert_non_null(strstr(json, "\"outcome\":\t\"fail\""));
    free(json);
    cg_verdict_release(&v);
    set_compute(&s->cur, 0.89, 0.001); /* +0.8 points */
    verdict(s, &v);
    assert_int_equal(cg_anatomy_part(&v.anatomy, CG_ANAT_EXPOSED_COMM)->outcome, CG_OUT_PASS);
    assert_int_equal(v.overall, CG_OUT_PASS);
    cg_verdict_release(&v);
    set_compute(&s->cur, 0.8, 0.001);
    s->base.n_runs = s->cur.n_runs = 2; /* the fixture's later runs stay allocated */
    verdict(s, &v);
    assert_int_equal(cg_anatomy_part(&v.anatomy, CG_ANAT_EXPOSED_COMM)->outcome,
                     CG_OUT_INCONCLUSIVE);
    cg_verdict_release(&v);
    s->base.n_runs = s->cur.n_runs = 5;
}

/* Sides that name communication kernels otherwise (CANARY_GATE_COMM_KERNELS set on one) split
 * busy time into compute and communication otherwise: the +8 points of exposed communication are
 * shown, not gated, and the reports say why; the same names (unset and "" alike) gate them. */
static void exposed_communication_named_otherwise_is_not_gated(void **state)
{
    struct sides *s = *state;
    cg_fixture_set_busy(&s->base, 0.8);
    cg_fixture_set_busy(&s->cur, 0.8);
    set_compute(&s->base, 0.9, 0.001);
    set_compute(&s->cur, 0.8, 0.001);
    s->cur.settings.comm_kernels = strdup("userbuffers");
    struct cg_verdict v;
    verdict(s, &v);
    const struct cg_anatomy_part *e = cg_anatomy_part(&v.anatomy, CG_ANAT_EXPOSED_COMM);
    assert_non_null(e);
    assert_true(v.anatomy.comm_named_differently);
    assert_int_equal(e->outcome, CG_OUT_NOT_GATED);
    assert_true(fabs(100.0 * (e->current - e->baseline) - 8.0) < 0.01); /* shown */
    assert_int_equal(v.overall, CG_OUT_PASS);
    struct cg_buf md;
    markdown_of(&v, &md);
    assert_non_null(strstr(md.data, "| communication not overlapped by compute, not gated: the "
                                    "sides name communication kernels otherwise "
                                    "(`CANARY_GATE_COMM_KERNELS`) | "));
    cg_buf_release(&md);
    char *json = cg_report_json(&v);
    assert_non_null(strstr(json, "\"communication_named_differently\":\ttrue"));
    free(json);
    cg_verdict_release(&v);
    free(s->cur.settings.comm_kernels);
    s->cur.settings.comm_kernels = strdup(""); /* as unset */
    verdict(s, &v);
    assert_false(v.anatomy.comm_named_differently);
    assert_int_equal(cg_anatomy_part(&v.anatomy, CG_ANAT_EXPOSED_COMM)->outcome, CG_OUT_FAIL);
    cg_verdict_release(&v);
    free(s->cur.settings.comm_kernels);
    s->cur.settings.comm_kernels = NULL;
}

/* The GPU's idle share is gated too (5 points by default), and a machine that differs makes its
 * FAIL INCONCLUSIVE; without communication, compute and exposed communication are not shown. */
static void gpu_idle_share_is_gated(void **state)
{
    struct sides *s = *state;
    busy_90_then_70(s);
    struct cg_verdict v;
    verdict(s, &v);
    const struct cg_anatomy_part *idle = cg_anatomy_part(&v.anatomy, CG_ANAT_GPU_IDLE);
    assert_non_null(idle);
    assert_true(fabs(idle->shift_points - 20.0) < 0.01);
    assert_int_equal(idle->outcome, CG_OUT_FAIL);
    assert_null(cg_anatomy_part(&v.anatomy, CG_ANAT_EXPOSED_COMM));
    assert_null(cg_anatomy_part(&v.anatomy, CG_ANAT_COMPUTE));
    assert_int_equal(v.overall, CG_OUT_FAIL);
    struct cg_buf md;
    markdown_of(&v, &md);
    assert_non_null(strstr(md.data,
                           "| GPU idle (waiting for the host) | 10.0% | 30.0% | +20.0 pts | "
                           "\xe2\x9d\x8c fail (+20.0 pts, p = "));
    cg_buf_release(&md);
    cg_verdict_release(&v);
    free(s->cur.env.gpu_model);
    s->cur.env.gpu_model = strdup("another GPU");
    s->base.gpu_available = s->cur.gpu_available = true;
    verdict(s, &v);
    idle = cg_anatomy_part(&v.anatomy, CG_ANAT_GPU_IDLE);
    assert_int_equal(idle->outcome, CG_OUT_INCONCLUSIVE);
    assert_true(idle->other_machine);
    assert_int_equal(v.overall, CG_OUT_INCONCLUSIVE);
    cg_verdict_release(&v);
    /* a share of the step is timing: from 2 current runs it is shown, never judged, whatever
     * min_runs the thresholds give */
    s->t.anatomy[CG_ANAT_GATE_GPU_IDLE].min_runs = 1;
    free(s->cur.env.gpu_model);
    s->cur.env.gpu_model = strdup(s->base.env.gpu_model);
    size_t runs = s->cur.n_runs;
    s->cur.n_runs = 2;
    verdict(s, &v);
    idle = cg_anatomy_part(&v.anatomy, CG_ANAT_GPU_IDLE);
    assert_true(fabs(idle->shift_points - 20.0) < 0.01);
    assert_int_equal(idle->outcome, CG_OUT_INCONCLUSIVE);
    assert_false(idle->other_machine);
    cg_verdict_release(&v);
    s->cur.n_runs = runs;
}

/* Copies while no kernel runs are the GPU's work, not idle time: a kernel's 20% of the step
 * moved into copies no kernel overlaps leaves the idle share as it was (PASS); they are a part of
 * their own and the chart's green bar. When a side lacks the copies' overlap with kernels (an
 * older artifact), both sides count copies as idle and say so: the same change FAILs then. */
static void copies_while_no_kernel_runs_are_not_idle(void **state)
{
    struct sides *s = *state;
    busy_90_then_70(s);
    for (size_t r = 0; r < s->cur.n_runs; r++)
        for (size_t k = 0; k < s->cur.runs[r].n_steps; k++) {
            struct cg_step *st = &s->cur.runs[r].steps[k];
            st->copy_ns = st->wall_ns / 5;
            st->copy_hidden_ns = 0;
        }
    struct cg_verdict v;
    verdict(s, &v);
    assert_true(v.anatomy.copies_in_idle);
    const struct cg_anatomy_part *idle = cg_anatomy_part(&v.anatomy, CG_ANAT_GPU_IDLE);
    const struct cg_anatomy_part *copies = cg_anatomy_part(&v.anatomy, CG_ANAT_EXPOSED_COPIES);
    assert_non_null(copies);
    assert_true(fabs(copies->baseline) < 1e-9 && fabs(copies->current - 0.2) < 1e-6);
    assert_true(fabs(idle->baseline - 0.1) < 1e-6 && fabs(idle->current - 0.1) < 1e-6);
    assert_int_equal(idle->outcome, CG_OUT_PASS);
    assert_int_equal(v.overall, CG_OUT_PASS);
    struct cg_buf md;
    markdown_of(&v, &md);
    assert_non_null(strstr(md.data, "| copies and sets while no kernel runs | 0.0% | 20.0% | "));
    assert_non_null(strstr(md.data, "copies while no kernel runs (green), GPU idle (grey)"));
    /* running totals, tallest first: idle, + copies, + communication, compute */
    assert_non_null(strstr(md.data, "    bar [100, 100]\n    bar [90, 90]\n    bar [90, 70]\n"
                                    "    bar [90, 70]\n"));
    char *json = cg_report_json(&v);
    assert_non_null(strstr(json, "\"part\":\t\"exposed_copies\""));
    assert_non_null(strstr(json, "\"copies_counted_as_idle\":\tfalse"));
    free(json);
    cg_buf_release(&md);
    cg_verdict_release(&v);
    s->base.runs[0].steps[0].copy_hidden_ns = -1; /* one step of an older artifact */
    verdict(s, &v);
    assert_false(v.anatomy.copies_in_idle);
    idle = cg_anatomy_part(&v.anatomy, CG_ANAT_GPU_IDLE);
    assert_true(fabs(idle->shift_points - 20.0) < 0.01);
    assert_int_equal(idle->outcome, CG_OUT_FAIL);
    markdown_of(&v, &md);
    assert_non_null(strstr(md.data, "| GPU idle (waiting for the host), copies counted as idle (a "
                                    "side did not measure their overlap with kernels) | 10.0% | "
                                    "30.0% |"));
    json = cg_report_json(&v);
    assert_non_null(strstr(json, "\"copies_counted_as_idle\":\ttrue"));
    free(json);
    cg_buf_release(&md);
    cg_verdict_release(&v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(same_counts_pass, setup, teardown),
        cmocka_unit_test_setup_teardown(work_added_every_third_step_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(work_removed_every_third_step_improves_a_one_off_does_not,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(periodic_rule_size_and_power, setup, teardown),
        cmocka_unit_test_setup_teardown(a_baseline_that_dips_does_not_fail_an_exact_current, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(exposed_communication_is_gated, setup, teardown),
        cmocka_unit_test_setup_teardown(exposed_communication_named_otherwise_is_not_gated, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(gpu_idle_share_is_gated, setup, teardown),
        cmocka_unit_test_setup_teardown(copies_while_no_kernel_runs_are_not_idle, setup, teardown),
        cmocka_unit_test_setup_teardown(one_more_sync_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(changed_calls_say_where, setup, teardown),
        cmocka_unit_test_setup_teardown(kernels_within_ten_percent, setup, teardown),
        cmocka_unit_test_setup_teardown(fewer_copies_improve, setup, teardown),
        cmocka_unit_test_setup_teardown(one_run_disagreeing_does_not_fail, setup, teardown),
        cmocka_unit_test_setup_teardown(varying_counts_get_the_varying_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(range_calls_per_name, setup, teardown),
        cmocka_unit_test_setup_teardown(unmeasured_counts_never_decide, setup, teardown),
        cmocka_unit_test_setup_teardown(one_run_a_side_still_fails_on_counts, setup, teardown),
        cmocka_unit_test_setup_teardown(other_machine_makes_counts_inconclusive, setup, teardown),
        cmocka_unit_test_setup_teardown(counts_fail_needs_no_confirmation, setup, teardown),
        cmocka_unit_test_setup_teardown(reports_show_the_changed_counts, setup, teardown),
        cmocka_unit_test_setup_teardown(anatomy_shares, setup, teardown),
        cmocka_unit_test_setup_teardown(anatomy_lists_ranges_by_their_medians, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
