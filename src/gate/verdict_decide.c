/*
 * verdict_decide: the rules that take a verdict's overall outcome from its metrics, counts and
 * parts (see verdict.h, cg_verdict_decide): the floor rule, the gate's --only, steps marked
 * differently on the two sides, the machine rule and the GPU rule.
 */
#include "verdict.h"

#include "floor.h"
#include "stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Tokens per measured step over all runs of a side; NAN when no step counted tokens. */
static double tokens_per_step(const struct cg_artifact *a)
{
    double tokens = 0.0, steps = 0.0;
    for (size_t r = 0; r < a->n_runs; r++) {
        for (size_t k = 0; k < a->runs[r].n_steps; k++) {
            if (a->runs[r].steps[k].tokens >= 0) {
                tokens += (double)a->runs[r].steps[k].tokens;
                steps += 1.0;
            }
        }
    }
    return steps > 0 ? tokens / steps : NAN;
}

/* True when a periodic slowdown (pattern.h) is significant at metric m's alpha and alone moves
 * m beyond its threshold: the mean and tokens/sec by one step in `period` slower, the p95 by
 * the slow steps' excess (one step in at most CG_PATTERN_MAX_PERIOD is above the 95th
 * percentile's share). The note says so. */
static bool periodic_explains(const struct cg_verdict *v, enum cg_metric m,
                              struct cg_metric_result *r)
{
    const struct cg_pattern *p = &v->pattern;
    const struct cg_metric_limits *l = &v->thresholds->metric[m];
    if (!p->tested || !(p->p_value <= l->alpha))
        return false;
    double moved = m == CG_M_STEP_TIME_P95 ? p->excess_pct : cg_pattern_mean_pct(p);
    if (!(moved > l->max_regression_pct))
        return false;
    snprintf(r->note, sizeof(r->note),
             "step %d of every %d is %+.1f%% slower in %zu of %zu current runs (p = %.2g): "
             "periodic work, which interference does not cause",
             p->phase + 1, p->period, p->excess_pct, p->runs_slower, p->runs, p->p_value);
    return true;
}

/* The floor's slowdown in metric m's terms: step time as it is; a throughput (tokens/sec, MFU)
 * loses 100 f / (100 + f) percent when the fastest steps take f percent longer. */
static double floor_in_terms_of(const struct cg_metric_result *f, enum cg_metric m)
{
    bool throughput = m == CG_M_TOKENS_PER_SEC || m == CG_M_MFU;
    double x = f->regression_pct;
    return throughput && x > -100.0 ? 100.0 * x / (100.0 + x) : x;
}

/* Whether the floor moved, significantly at its own alpha, by more than metric m's threshold. */
static bool floor_moved_as_far(const struct cg_verdict *v, enum cg_metric m)
{
    const struct cg_metric_result *f = &v->metrics[CG_M_STEP_TIME_FLOOR];
    return f->p_value <= v->thresholds->metric[CG_M_STEP_TIME_FLOOR].alpha &&
           floor_in_terms_of(f, m) > v->thresholds->metric[m].max_regression_pct;
}

/* The note of metric m's FAIL the floor rule held back: what the floor did, in words its
 * numbers beside it bear out. */
static void floor_note(const struct cg_verdict *v, enum cg_metric m, struct cg_metric_result *r)
{
    const struct cg_metric_result *f = &v->metrics[CG_M_STEP_TIME_FLOOR];
    const char *why = "interference on the runner, or a slowdown of some steps only";
    if (f->outcome == CG_OUT_INCONCLUSIVE)
        snprintf(r->note, sizeof(r->note), "the floor is inconclusive (floor %+.1f%%): %s",
                 f->delta_pct, f->wants_runs ? "add runs" : "see its own reason");
    else if (floor_in_terms_of(f, m) > v->thresholds->metric[m].max_regression_pct)
        snprintf(r->note, sizeof(r->note),
                 "the fastest steps' slowdown is not significant (floor %+.1f%%, p = %.2g): %s",
                 f->delta_pct, f->p_value, why);
    else if (f->regression_pct > 0 &&
             f->p_value <= v->thresholds->metric[CG_M_STEP_TIME_FLOOR].alpha)
        snprintf(r->note, sizeof(r->note),
                 "the fastest steps slowed down less than this row's threshold (floor %+.1f%%): %s",
                 f->delta_pct, why);
    else
        snprintf(r->note, sizeof(r->note),
                 "the fastest steps did not slow down (floor %+.1f%%): %s", f->delta_pct, why);
}

/* "require_floor_regression": interference on a shared runner slows whole spells of steps and
 * moves the mean, p95 and tokens/sec of the runs it meets, but not the floor. A FAIL of those
 * metrics stands when the floor FAILed too (or was not measured, or had fewer runs than its
 * min_runs and moved beyond its threshold), or when the floor moved significantly (at its own
 * alpha) by as much as the held metric's own threshold (floor_moved_as_far: a floor held to a
 * looser threshold than the metric's does not switch the metric off), or for tokens/sec when a
 * step carries fewer tokens, or when a slowdown locked to the step phase accounts for it
 * (periodic work: interference is not phase-locked); else it is INCONCLUSIVE: when the floor
 * passed, a spell of load (or a change that slows only some steps at no fixed phase, and leaves
 * the fast ones alone: the price of the rule, in the note); when the floor is itself
 * inconclusive, it waits for the floor. Runs after the machine rule, so a FAIL on another machine
 * keeps that reason. */
static void floor_rule(struct cg_verdict *v)
{
    const struct cg_metric_result *f = &v->metrics[CG_M_STEP_TIME_FLOOR];
    const struct cg_metric_limits *fl = &v->thresholds->metric[CG_M_STEP_TIME_FLOOR];
    bool few_runs = (int64_t)v->baseline->n_runs < fl->min_runs ||
                    (int64_t)v->current->n_runs < fl->min_runs;
    if (!v->thresholds->require_floor || f->outcome == CG_OUT_UNAVAILABLE ||
        f->outcome == CG_OUT_FAIL || (few_runs && f->regression_pct > fl->max_regression_pct))
        return;
    /* MFU is tokens/sec over the clock's peak: interference moves it as it moves tokens/sec */
    const enum cg_metric gated[] = {CG_M_STEP_TIME_MEAN, CG_M_STEP_TIME_P95, CG_M_TOKENS_PER_SEC,
                                    CG_M_MFU};
    for (size_t i = 0; i < sizeof(gated) / sizeof(gated[0]); i++) {
        struct cg_metric_result *r = &v->metrics[gated[i]];
        if (r->outcome != CG_OUT_FAIL ||
            (gated[i] == CG_M_TOKENS_PER_SEC &&
             tokens_per_step(v->current) < tokens_per_step(v->baseline) * (1.0 - 1e-3)) ||
            floor_moved_as_far(v, gated[i]) || periodic_explains(v, gated[i], r))
            continue;
        cg_ladder_hold_back(&r->outcome);
        floor_note(v, gated[i], r);
    }
}

void cg_verdict_overall(struct cg_verdict *v)
{
    bool any_fail = false, any_inconclusive = false;
    for (int m = 0; m < CG_M_COUNT; m++) {
        any_fail |= v->metrics[m].outcome == CG_OUT_FAIL;
        any_inconclusive |= v->metrics[m].outcome == CG_OUT_INCONCLUSIVE;
    }
    for (size_t i = 0; i < v->counts.n; i++) {
        any_fail |= v->counts.rows[i].outcome == CG_OUT_FAIL;
        any_inconclusive |= v->counts.rows[i].outcome == CG_OUT_INCONCLUSIVE;
    }
    for (size_t i = 0; i < v->anatomy.n; i++) {
        any_fail |= v->anatomy.parts[i].outcome == CG_OUT_FAIL;
        any_inconclusive |= v->anatomy.parts[i].outcome == CG_OUT_INCONCLUSIVE;
    }
    any_fail |= v->states.outcome == CG_OUT_FAIL;
    any_inconclusive |= v->states.outcome == CG_OUT_INCONCLUSIVE;
    any_inconclusive |= v->nothing_gated[0] != '\0';
    v->overall = any_fail ? CG_OUT_FAIL : any_inconclusive ? CG_OUT_INCONCLUSIVE : CG_OUT_PASS;
}

/* The group of --only a metric belongs to. */
static unsigned metric_group(enum cg_metric m)
{
    return m == CG_M_PEAK_DEVICE_MEMORY || m == CG_M_PEAK_HOST_RSS ? CG_GATE_MEMORY
                                                                   : CG_GATE_TIMING;
}

/* Whether an outcome is gated: anything but shown-only and unavailable. */
static bool gated(enum cg_outcome o)
{
    return o != CG_OUT_NOT_GATED && o != CG_OUT_UNAVAILABLE;
}

/* v->nothing_gated: the --only groups when nothing in them is gated (after only_rule). */
static void nothing_gated(struct cg_verdict *v, const char *names)
{
    bool any = false;
    for (int m = 0; m < CG_M_COUNT; m++)
        any |= gated(v->metrics[m].outcome);
    for (size_t i = 0; i < v->counts.n; i++)
        any |= gated(v->counts.rows[i].outcome);
    for (size_t i = 0; i < v->anatomy.n; i++)
        any |= gated(v->anatomy.parts[i].outcome);
    any |= gated(v->states.outcome);
    if (!any)
        snprintf(v->nothing_gated, sizeof(v->nothing_gated), "%s", names);
}

/* --only: what is outside the groups given is shown, not gated (the note says so). */
static void only_rule(struct cg_verdict *v)
{
    unsigned only = v->thresholds->gate_only;
    v->nothing_gated[0] = '\0';
    if (only == 0)
        return;
    char names[64];
    cg_thresholds_only_names(only, names, sizeof(names));
    for (int m = 0; m < CG_M_COUNT; m++) {
        struct cg_metric_result *r = &v->metrics[m];
        if ((only & metric_group((enum cg_metric)m)) || r->outcome == CG_OUT_UNAVAILABLE ||
            (v->gpu_lost && m == CG_M_PEAK_DEVICE_MEMORY)) /* a lost GPU always FAILs */
            continue;
        r->outcome = CG_OUT_NOT_GATED;
        r->wants_runs = false;
        snprintf(r->note, sizeof(r->note), "shown, not gated (--only %s)", names);
    }
    for (size_t i = 0; i < v->counts.n && !(only & CG_GATE_COUNTS); i++)
        if (v->counts.rows[i].outcome != CG_OUT_UNAVAILABLE)
            v->counts.rows[i].outcome = CG_OUT_NOT_GATED;
    if (!(only & CG_GATE_TIMING) && v->states.outcome != CG_OUT_UNAVAILABLE)
        v->states.outcome = CG_OUT_NOT_GATED;
    for (size_t i = 0; i < v->anatomy.n && !(only & CG_GATE_ANATOMY); i++)
        if (v->anatomy.parts[i].outcome != CG_OUT_UNAVAILABLE)
            v->anatomy.parts[i].outcome = CG_OUT_NOT_GATED;
    nothing_gated(v, names);
}

/* Whether an outcome decides (PASS, FAIL or improved). */
static bool decides(enum cg_outcome o)
{
    return o == CG_OUT_PASS || o == CG_OUT_FAIL || o == CG_OUT_IMPROVED;
}

/* Timing from steps marked differently on the two sides (v->steps_differ): what would PASS,
 * FAIL or improve is INCONCLUSIVE with that reason; with steps defined differently
 * (v->steps_redefined) the counts per step, the anatomy and the slow states' share too. */
static void steps_differ_rule(struct cg_verdict *v)
{
    if (v->steps_differ[0] == '\0')
        return;
    for (int m = 0; m < CG_M_COUNT; m++) {
        struct cg_metric_result *r = &v->metrics[m];
        if (metric_group((enum cg_metric)m) != CG_GATE_TIMING || !decides(r->outcome))
            continue;
        r->outcome = CG_OUT_INCONCLUSIVE;
        r->wants_runs = false;
        snprintf(r->note, sizeof(r->note), "%s", v->steps_differ);
    }
    for (size_t i = 0; i < v->counts.n && v->steps_redefined; i++)
        if (decides(v->counts.rows[i].outcome))
            v->counts.rows[i].outcome = CG_OUT_INCONCLUSIVE;
    for (size_t i = 0; i < v->anatomy.n && v->steps_redefined; i++)
        if (decides(v->anatomy.parts[i].outcome))
            v->anatomy.parts[i].outcome = CG_OUT_INCONCLUSIVE;
    if (v->steps_redefined && decides(v->states.outcome))
        v->states.outcome = CG_OUT_INCONCLUSIVE;
}

/* Whether m measures the steps' speed (step time mean, p95, floor, tokens/sec): what a GPU slowed
 * down can only make worse. Energy per token and MFU (over the clock's peak) are not. */
static bool step_speed(enum cg_metric m)
{
    return m == CG_M_STEP_TIME_MEAN || m == CG_M_STEP_TIME_P95 || m == CG_M_STEP_TIME_FLOOR ||
           m == CG_M_TOKENS_PER_SEC;
}

/* Side a's values of metric m into val (the run floors as they are, other metrics' logs), its
 * held-back runs left out unless keep_held; returns how many. */
static size_t side_clean_values(const struct cg_verdict *v, const struct cg_artifact *a,
                                enum cg_metric m, bool keep_held, double *val)
{
    size_t k = 0;
    for (size_t i = 0; i < a->n_runs; i++) {
        const char *why;
        long long dev;
        double x = cg_verdict_run_value(&a->runs[i], m);
        if ((keep_held || !cg_gpu_run_held(&v->gpu, &a->runs[i], &why, &dev)) && isfinite(x) &&
            x > 0)
            val[k++] = m == CG_M_STEP_TIME_FLOOR ? x : log(x);
    }
    return k;
}

/* Whether metric m would FAIL on the runs not held back, both sides' left out: false too when a
 * side has fewer than CG_TIMING_MIN_RUNS of them (the floor: fewer than CG_FLOOR_MIN_FAST_RUNS
 * in its fast state, as its own test needs). For the steps' speed a baseline with too few keeps
 * its held-back runs: slower, they can only hide a slowdown. The floor is tested as it was
 * (cg_floor_compare), the others with Mann-Whitney and Hodges-Lehmann on the logs. *delta_pct
 * and *p get what those runs gave (NAN: untested). */
static int clean_runs_fail(const struct cg_verdict *v, enum cg_metric m, bool *fails,
                           double *delta_pct, double *p)
{
    const struct cg_artifact *sides[2] = {v->baseline, v->current};
    double *val[2] = {NULL, NULL};
    size_t k[2] = {0, 0};
    int rc = 0;
    *fails = false;
    *delta_pct = *p = NAN;
    for (int s = 0; s < 2; s++) {
        val[s] = malloc((sides[s]->n_runs + 1) * sizeof(double));
        if (val[s] == NULL) {
            rc = CG_ENOMEM;
            goto done;
        }
        k[s] = side_clean_values(v, sides[s], m, false, val[s]);
    }
    if (k[0] < CG_TIMING_MIN_RUNS && step_speed(m))
        k[0] = side_clean_values(v, v->baseline, m, true, val[0]);
    if (k[0] < CG_TIMING_MIN_RUNS || k[1] < CG_TIMING_MIN_RUNS)
        goto done;
    const struct cg_metric_limits *lim = &v->thresholds->metric[m];
    bool up = cg_metric_higher_is_worse(m);
    double p_worse, p_better, shift;
    if (m == CG_M_STEP_TIME_FLOOR) {
        struct cg_floor_test f;
        if (cg_floor_compare(val[0], k[0], val[1], k[1], lim->alpha, &f) != 0) {
            rc = CG_ENOMEM;
            goto done;
        }
        if (f.fast[0] < CG_FLOOR_MIN_FAST_RUNS || f.fast[1] < CG_FLOOR_MIN_FAST_RUNS)
            goto done;
        p_worse = f.p_greater;
        p_better = f.p_less;
        shift = f.shift.estimate;
    } else {
        struct cg_mwu u;
        struct cg_shift sh;
        if (cg_stats_mwu_shift(val[0], k[0], val[1], k[1], lim->alpha, &u, &sh) != 0) {
            rc = CG_ENOMEM;
            goto done;
        }
        p_worse = up ? u.p_greater : u.p_less;
        p_better = up ? u.p_less : u.p_greater;
        shift = sh.estimate;
    }
    *delta_pct = (exp(shift) - 1.0) * 100.0;
    *p = p_worse;
    struct cg_evidence e = {up ? *delta_pct : -*delta_pct, p_worse, p_better,
                            (int64_t)k[0] >= lim->min_runs && (int64_t)k[1] >= lim->min_runs};
    *fails = cg_ladder_classify(&e, lim) == CG_RUNG_FAIL;
done:
    free(val[0]);
    free(val[1]);
    return rc;
}

/* The GPU rule (gpu_rule.h) applied to v's metric outcomes (v->gpu assessed); sets v->gpu.decided.
 * 0 or CG_ENOMEM (the outcomes are then left as they were). */
static int gpu_rule_apply(struct cg_verdict *v)
{
    static const enum cg_metric judged[] = {CG_M_STEP_TIME_MEAN,   CG_M_STEP_TIME_P95,
                                            CG_M_STEP_TIME_FLOOR,  CG_M_TOKENS_PER_SEC,
                                            CG_M_ENERGY_PER_TOKEN, CG_M_MFU};
    struct cg_gpu_check *g = &v->gpu;
    for (size_t i = 0; i < sizeof(judged) / sizeof(judged[0]); i++) {
        struct cg_metric_result *r = &v->metrics[judged[i]];
        /* a faster clock here, or a baseline held back, cannot explain slower steps */
        bool speed = step_speed(judged[i]);
        bool clocks = g->clocks_moved && (g->clocks_lower_here || !speed);
        size_t held = speed ? g->held[1] : g->held[0] + g->held[1];
        const char *why = speed ? g->side_reason[1] : g->reason;
        if (r->outcome != CG_OUT_FAIL || (!clocks && held == 0))
            continue;
        if (clocks) {
            snprintf(r->note, sizeof(r->note),
                     "%s: the GPU's clocks, not the change, may "
                     "explain it",
                     g->clock_reason);
        } else {
            bool fails;
            double d, p;
            if (clean_runs_fail(v, judged[i], &fails, &d, &p) != 0)
                return CG_ENOMEM;
            if (fails)
                continue; /* the runs the GPU did not hold back FAIL it too */
            if (isnan(p))
                snprintf(r->note, sizeof(r->note), "%.180s; too few runs without them to judge",
                         why);
            else
                snprintf(r->note, sizeof(r->note),
                         "%.180s; without those runs it would not FAIL (%+.1f%%, p = %.3g)", why, d,
                         p);
        }
        cg_ladder_hold_back(&r->outcome);
        r->wants_runs = false;
        g->decided = true;
    }
    return 0;
}

void cg_verdict_decide(struct cg_verdict *v)
{
    bool mismatch = v->machine_diff != NULL && !v->thresholds->env_mismatch_gates;
    v->downgraded = false;
    v->within_run = false;
    only_rule(v);
    for (int m = 0; m < CG_M_COUNT; m++) {
        struct cg_metric_result *r = &v->metrics[m];
        v->within_run |= r->method == CG_METHOD_BOOTSTRAP;
        bool lost_gpu = v->gpu_lost && m == CG_M_PEAK_DEVICE_MEMORY; /* the machine's GPU */
        if (mismatch && !lost_gpu && cg_ladder_hold_back(&r->outcome)) {
            r->other_machine = true;
            snprintf(r->note, sizeof(r->note),
                     "measured on a different machine (%s differs)", v->machine_diff);
        }
        if (r->outcome == CG_OUT_INCONCLUSIVE && mismatch && r->other_machine)
            v->downgraded = true;
    }
    floor_rule(v);
    (void)gpu_rule_apply(v); /* out of memory: the outcomes stay as they are */
    steps_differ_rule(v);
    for (size_t i = 0; i < v->counts.n; i++) {
        struct cg_count_result *r = &v->counts.rows[i];
        if (mismatch && cg_ladder_hold_back(&r->outcome)) {
            r->other_machine = true;
            v->downgraded = true;
        }
    }
    for (size_t i = 0; i < v->anatomy.n; i++) {
        struct cg_anatomy_part *p = &v->anatomy.parts[i];
        if (mismatch && cg_ladder_hold_back(&p->outcome)) {
            p->other_machine = true;
            v->downgraded = true;
        }
    }
    if (mismatch && cg_ladder_hold_back(&v->states.outcome)) {
        v->states.other_machine = true;
        v->downgraded = true;
    }
    cg_verdict_overall(v);
}
