/*
 * verdict: metric outcomes, op deltas and the overall decision (see verdict.h).
 *
 * Decision per timing metric (cg_ladder_classify, which the paired verdict and the noise
 * analysis apply too), with regression r (percent, in the worse direction), threshold T,
 * one-sided p-value p and alpha:
 *   r > T and p <= alpha and both sides have min_runs runs   -> FAIL
 *   r > T otherwise                                          -> INCONCLUSIVE
 *   -r > T and the opposite one-sided p <= alpha             -> IMPROVED
 *   else                                                     -> PASS
 * The step time floor compared over runs needs CG_FLOOR_MIN_FAST_RUNS fast runs a side first;
 * with fewer it is INCONCLUSIVE whatever r is (verdict.h).
 * Memory: growth above both max_regression_pct and max_regression_bytes -> FAIL.
 * A FAIL on a different machine becomes INCONCLUSIVE unless the thresholds say "gate".
 */
#include "verdict.h"
#include "verdict_internal.h"

#include "fmt.h"
#include "stats.h"
#include "utf8.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const outcome_names[] = {"pass",         "improved",  "fail",
                                            "inconclusive", "not_gated", "unavailable"};

const char *cg_outcome_name(enum cg_outcome o)
{
    return (unsigned)o <= CG_OUT_UNAVAILABLE ? outcome_names[o] : "unknown";
}

double cg_verdict_run_value(const struct cg_run *r, enum cg_metric m)
{
    switch (m) {
    case CG_M_STEP_TIME_MEAN:
        return r->summary.step_time_mean_ns;
    case CG_M_STEP_TIME_P95:
        return r->summary.step_time_p95_ns;
    case CG_M_STEP_TIME_FLOOR:
        return cg_floor_run_ns(r);
    case CG_M_TOKENS_PER_SEC:
        return r->summary.tokens_per_sec;
    case CG_M_PEAK_DEVICE_MEMORY:
        return r->summary.peak_device_bytes >= 0 ? (double)r->summary.peak_device_bytes : NAN;
    case CG_M_PEAK_HOST_RSS:
        return r->summary.peak_host_rss_bytes >= 0 ? (double)r->summary.peak_host_rss_bytes : NAN;
    case CG_M_ENERGY_PER_TOKEN:
        return cg_run_energy_per_token(r);
    case CG_M_MFU:
        return r->gpu.mfu;
    default:
        return NAN;
    }
}

/* Fills out[] with the per-run values; returns false when any run lacks the metric. */
static bool side_values(const struct cg_artifact *a, enum cg_metric m, double *out)
{
    for (size_t i = 0; i < a->n_runs; i++) {
        out[i] = cg_verdict_run_value(&a->runs[i], m);
        if (!isfinite(out[i]) || out[i] <= 0)
            return false;
    }
    return true;
}

/* Between-run comparison: Mann-Whitney on the values, Hodges-Lehmann on their logs. */
static int compare_runs(const double *b, size_t nb, const double *c, size_t nc, bool worse_up,
                        double alpha, struct cg_metric_result *r, double *p_better)
{
    double *lb = malloc(nb * sizeof(*lb)), *lc = malloc(nc * sizeof(*lc));
    int rc = -1;
    if (lb == NULL || lc == NULL)
        goto done;
    for (size_t i = 0; i < nb; i++)
        lb[i] = log(b[i]);
    for (size_t i = 0; i < nc; i++)
        lc[i] = log(c[i]);
    struct cg_mwu u;
    struct cg_shift s;
    if (cg_stats_mwu_shift(lb, nb, lc, nc, alpha, &u, &s) != 0)
        goto done;
    r->delta_pct = (exp(s.estimate) - 1.0) * 100.0;
    r->ci_low_pct = isfinite(s.low) ? (exp(s.low) - 1.0) * 100.0 : -INFINITY;
    r->ci_high_pct = isfinite(s.high) ? (exp(s.high) - 1.0) * 100.0 : INFINITY;
    r->p_value = worse_up ? u.p_greater : u.p_less;
    *p_better = worse_up ? u.p_less : u.p_greater;
    r->method = CG_METHOD_RUNS;
    rc = 0;
done:
    free(lb);
    free(lc);
    return rc;
}

/* The floor over runs: the runs of the pooled fast state, tested with the null distribution of
 * the whole classify-then-compare procedure (cg_floor_compare); the share of slow runs goes to
 * states. vb and vc are left as they are. */
static int compare_floors(const double *vb, size_t nb, const double *vc, size_t nc, double alpha,
                          struct cg_metric_result *r, double *p_better, struct cg_states *states)
{
    struct cg_floor_test f;
    if (cg_floor_compare(vb, nb, vc, nc, alpha, &f) != 0)
        return -1;
    r->baseline = f.side_floor[0];
    r->current = f.side_floor[1];
    r->own_states = f.own_states;
    states->tested = true;
    states->slow[0] = f.slow[0];
    states->slow[1] = f.slow[1];
    states->runs[0] = nb;
    states->runs[1] = nc;
    states->p_value = f.share_p;
    r->delta_pct = (exp(f.shift.estimate) - 1.0) * 100.0;
    r->ci_low_pct = isfinite(f.shift.low) ? (exp(f.shift.low) - 1.0) * 100.0 : -INFINITY;
    r->ci_high_pct = isfinite(f.shift.high) ? (exp(f.shift.high) - 1.0) * 100.0 : INFINITY;
    r->p_value = f.p_greater;
    *p_better = f.p_less;
    r->method = CG_METHOD_FAST_RUNS;
    r->fast_runs[0] = f.fast[0];
    r->fast_runs[1] = f.fast[1];
    return 0;
}

/* Comparison over the steps of every run of each side, for a timing metric when a side has one
 * run: a moving-block bootstrap within the runs (the floor: of the steps' own floor). */
static int compare_steps(const struct cg_artifact *base, const struct cg_artifact *cur,
                         enum cg_metric m, const struct cg_thresholds *t, double alpha,
                         struct cg_metric_result *r, double *p_better)
{
    const struct cg_artifact *sides[2] = {base, cur};
    struct cg_boot_side bs[2];
    double **vals[2] = {NULL, NULL}, **wts[2] = {NULL, NULL};
    size_t *lens[2] = {NULL, NULL};
    int rc = -1;
    for (int s = 0; s < 2; s++) {
        size_t n = sides[s]->n_runs;
        vals[s] = calloc(n, sizeof(double *));
        wts[s] = calloc(n, sizeof(double *));
        lens[s] = calloc(n, sizeof(size_t));
        if (vals[s] == NULL || wts[s] == NULL || lens[s] == NULL)
            goto done;
        for (size_t i = 0; i < n; i++) {
            const struct cg_run *run = &sides[s]->runs[i];
            vals[s][i] = malloc(run->n_steps * sizeof(double));
            wts[s][i] = malloc(run->n_steps * sizeof(double));
            if (vals[s][i] == NULL || wts[s][i] == NULL)
                goto done;
            lens[s][i] = run->n_steps;
            for (size_t k = 0; k < run->n_steps; k++) {
                vals[s][i][k] = (double)run->steps[k].wall_ns;
                wts[s][i][k] = run->steps[k].tokens >= 0 ? (double)run->steps[k].tokens : 0.0;
            }
        }
        bs[s] = (struct cg_boot_side){(const double *const *)vals[s],
                                      (const double *const *)wts[s], lens[s], n};
    }
    enum cg_boot_stat stat = m == CG_M_STEP_TIME_MEAN    ? CG_BOOT_MEAN
                             : m == CG_M_STEP_TIME_P95   ? CG_BOOT_P95
                             : m == CG_M_STEP_TIME_FLOOR ? CG_BOOT_FLOOR
                                                         : CG_BOOT_RATE;
    struct cg_boot_result br;
    uint64_t seed = 0x63616e617279ULL + (uint64_t)m;
    if (cg_stats_block_bootstrap(&bs[0], &bs[1], stat, (size_t)t->bootstrap_resamples, alpha, seed,
                                 &br) != 0)
        goto done;
    if (m == CG_M_STEP_TIME_FLOOR) {
        r->baseline = br.x_stat; /* the statistic compared, over the steps of all runs */
        r->current = br.y_stat;
    }
    bool worse_up = cg_metric_higher_is_worse(m);
    r->delta_pct = (br.ratio - 1.0) * 100.0;
    r->ci_low_pct = (br.low - 1.0) * 100.0;
    r->ci_high_pct = (br.high - 1.0) * 100.0;
    r->p_value = worse_up ? br.p_greater : br.p_less;
    *p_better = worse_up ? br.p_less : br.p_greater;
    r->method = CG_METHOD_BOOTSTRAP;
    rc = 0;
done:
    for (int s = 0; s < 2; s++) {
        for (size_t i = 0; vals[s] != NULL && wts[s] != NULL && i < sides[s]->n_runs; i++) {
            free(vals[s][i]);
            free(wts[s][i]);
        }
        free(vals[s]);
        free(wts[s]);
        free(lens[s]);
    }
    return rc;
}

/* The baseline cannot detect a slowdown (cg_verdict_min_baseline_runs): a timing metric that
 * would PASS, or is inconclusive for too few runs, is INCONCLUSIVE for that reason, which more
 * current runs cannot settle. */
static void weak_baseline_rule(const struct cg_verdict *v, bool enough,
                               struct cg_metric_result *r)
{
    if (!v->weak_baseline ||
        !(r->outcome == CG_OUT_PASS || (r->outcome == CG_OUT_INCONCLUSIVE && !enough)))
        return;
    r->outcome = CG_OUT_INCONCLUSIVE;
    r->wants_runs = false;
    snprintf(r->note, sizeof(r->note),
             "the baseline has %zu run%s, fewer than the %lld a regression needs to FAIL "
             "(min_runs): it cannot detect one",
             v->baseline->n_runs, v->baseline->n_runs == 1 ? "" : "s",
             (long long)v->baseline_runs_needed);
}

/* A metric of the GPU's state with a single run on a side: one value per run and no steps to
 * bootstrap, so only the medians' change is shown (judged by nobody: CG_TIMING_MIN_RUNS). */
static void compare_medians(const double *vb, size_t nb, const double *vc, size_t nc,
                            struct cg_metric_result *r)
{
    r->delta_pct = (cg_stats_quantile(vc, nc, 0.5) / cg_stats_quantile(vb, nb, 0.5) - 1.0) * 100.0;
    r->ci_low_pct = -INFINITY;
    r->ci_high_pct = INFINITY;
}

static int timing_metric(struct cg_verdict *v, enum cg_metric m, double *vb, double *vc,
                         struct cg_metric_result *r)
{
    const struct cg_artifact *base = v->baseline, *cur = v->current;
    const struct cg_thresholds *t = v->thresholds;
    const struct cg_metric_limits *lim = &t->metric[m];
    size_t nb = base->n_runs, nc = cur->n_runs;
    bool worse_up = cg_metric_higher_is_worse(m);
    double p_better = NAN;
    /* With CG_FLOOR_MIN_FAST_RUNS runs or more a side the floor compares the runs each side
     * measured in the runner's fast state; with fewer (a quick check), the steps. */
    bool floor = m == CG_M_STEP_TIME_FLOOR && nb >= CG_FLOOR_MIN_FAST_RUNS &&
                 nc >= CG_FLOOR_MIN_FAST_RUNS;
    bool runs = floor || (m != CG_M_STEP_TIME_FLOOR && nb >= 2 && nc >= 2);
    int rc = 0;
    if (floor)
        rc = compare_floors(vb, nb, vc, nc, lim->alpha, r, &p_better, &v->states);
    else if (runs)
        rc = compare_runs(vb, nb, vc, nc, worse_up, lim->alpha, r, &p_better);
    else if (cg_metric_from_gpu_state(m))
        compare_medians(vb, nb, vc, nc, r);
    else
        rc = compare_steps(base, cur, m, t, lim->alpha, r, &p_better);
    if (rc != 0)
        return CG_ENOMEM;
    size_t kb = floor ? r->fast_runs[0] : nb, kc = floor ? r->fast_runs[1] : nc;
    if (!floor && (runs || m != CG_M_STEP_TIME_FLOOR)) {
        r->baseline = cg_stats_quantile(vb, nb, 0.5);
        r->current = cg_stats_quantile(vc, nc, 0.5);
    }
    r->regression_pct = worse_up ? r->delta_pct : -r->delta_pct;
    if (nb < CG_TIMING_MIN_RUNS || nc < CG_TIMING_MIN_RUNS) {
        /* shown, never judged: whatever the change, and whatever min_runs says */
        r->outcome = CG_OUT_INCONCLUSIVE;
        r->wants_runs = nb >= CG_TIMING_MIN_RUNS;
        snprintf(r->note, sizeof(r->note), CG_TIMING_FEW_RUNS_NOTE " (%zu and %zu runs)", nb, nc);
        weak_baseline_rule(v, false, r); /* a short baseline: record it again, says the note */
        return 0;
    }
    bool enough = (int64_t)nb >= lim->min_runs && (int64_t)nc >= lim->min_runs;
    if (floor &&  (kb < CG_FLOOR_MIN_FAST_RUNS || kc < CG_FLOOR_MIN_FAST_RUNS)) {
        /* Too few fast runs to say anything, either way: a PASS would be as weak as a FAIL. */
        r->outcome = CG_OUT_INCONCLUSIVE;
        r->wants_runs = kb >= CG_FLOOR_MIN_FAST_RUNS;
        if (r->wants_runs)
            snprintf(r->note, sizeof(r->note),
                     "too few current runs in the runner's fast state (%zu of %zu, need %d): "
                     "the runner was busy; add runs",
                     kc, nc, CG_FLOOR_MIN_FAST_RUNS);
        else
            snprintf(r->note, sizeof(r->note),
                     "too few baseline runs in the runner's fast state (%zu of %zu, need %d): "
                     "record the baseline again",
                     kb, nb, CG_FLOOR_MIN_FAST_RUNS);
        return 0;
    }
    struct cg_evidence e = {r->regression_pct, r->p_value, p_better, enough};
    enum cg_rung rung = cg_ladder_classify(&e, lim);
    r->outcome = cg_ladder_outcome(rung);
    if (rung == CG_RUNG_TOO_FEW_RUNS) {
        r->wants_runs = (int64_t)nb >= lim->min_runs;
        snprintf(r->note, sizeof(r->note), "too few runs (%zu and %zu, need %lld a side)", nb, nc,
                 (long long)lim->min_runs);
    } else if (rung == CG_RUNG_NOT_SIGNIFICANT) {
        r->wants_runs = true;
        snprintf(r->note, sizeof(r->note), "not significant (p = %.3g > alpha %.3g): add runs",
                 r->p_value, lim->alpha);
    }
    weak_baseline_rule(v, enough, r);
    return 0;
}

static void init_result(struct cg_metric_result *r, enum cg_metric m,
                        const struct cg_thresholds *t)
{
    memset(r, 0, sizeof(*r));
    r->metric = m;
    r->baseline = r->current = r->delta_pct = r->ci_low_pct = r->ci_high_pct = NAN;
    r->p_value = r->regression_pct = NAN;
    r->threshold_pct = t->metric[m].max_regression_pct;
    r->threshold_bytes = t->metric[m].max_regression_bytes;
    r->outcome = CG_OUT_UNAVAILABLE;
    r->method = CG_METHOD_NONE;
}

/* The GPU was lost (cg_verdict_gpu_lost): peak device memory, measured on the baseline and gone
 * from this run, FAILs with the reason. vb: the baseline's values, or NULL when it lacks them. */
static void gpu_lost_result(const struct cg_verdict *v, const double *vb,
                            struct cg_metric_result *r)
{
    if (vb != NULL)
        r->baseline = cg_stats_quantile(vb, v->baseline->n_runs, 0.5);
    r->method = CG_METHOD_FIXED;
    r->outcome = CG_OUT_FAIL;
    snprintf(r->note, sizeof(r->note),
             "the canary did not use the GPU: the baseline did, this machine has one (driver "
             "%.24s) and CUDA was never initialised",
             v->current->env.driver_version);
}

/* tokens/sec on every baseline run and missing or zero on some current run: the canary changed
 * (its steps no longer carry tokens), which more runs cannot settle. */
static void vanished_result(const struct cg_verdict *v, const double *vb,
                            struct cg_metric_result *r)
{
    const struct cg_artifact *c = v->current;
    size_t missing = 0;
    for (size_t i = 0; i < c->n_runs; i++) {
        double x = cg_verdict_run_value(&c->runs[i], CG_M_TOKENS_PER_SEC);
        missing += !isfinite(x) || x <= 0;
    }
    r->baseline = cg_stats_quantile(vb, v->baseline->n_runs, 0.5);
    r->outcome = CG_OUT_INCONCLUSIVE;
    r->vanished = true;
    r->wants_runs = false;
    snprintf(r->note, sizeof(r->note),
             "measured on the baseline, not on this run (%zu of %zu runs have no tokens or "
             "zero): the canary changed",
             missing, c->n_runs);
}

/* The slow states' share (cg_states) once the floor was compared over runs: its rise, the
 * finding at the gate's alpha (else the floor's), and the outcome when gated. */
static void states_decide(struct cg_verdict *v)
{
    struct cg_states *s = &v->states;
    const struct cg_state_limit *lim = &v->thresholds->slow_state;
    s->outcome = CG_OUT_UNAVAILABLE;
    if (!s->tested)
        return;
    s->own_states = v->metrics[CG_M_STEP_TIME_FLOOR].own_states;
    s->rise_points = 100.0 * ((double)s->slow[1] / (double)s->runs[1] -
                              (double)s->slow[0] / (double)s->runs[0]);
    s->alpha = lim->gated ? lim->alpha : v->thresholds->metric[CG_M_STEP_TIME_FLOOR].alpha;
    s->finding = !s->own_states && s->rise_points > 0.0 && s->p_value <= s->alpha;
    if (!lim->gated || s->own_states) {
        s->outcome = CG_OUT_NOT_GATED;
        return;
    }
    struct cg_evidence e = {s->rise_points, s->p_value, NAN, true};
    struct cg_metric_limits ml = {lim->max_increase_points, NAN, lim->alpha, 0};
    s->outcome = cg_ladder_outcome(cg_ladder_classify(&e, &ml));
}

/* The note of peak device memory when one side's GPU metrics are missing on the same machine
 * (gpu_metrics_missing): unavailable there, with the side's reason, cut at a UTF-8 boundary. */
static void gpu_metrics_missing_note(const struct cg_verdict *v, struct cg_metric_result *r)
{
    const struct cg_artifact *a = v->gpu_metrics_missing;
    int n = snprintf(r->note, sizeof(r->note), "GPU metrics unavailable in the %s runs: %s",
                     a == v->current ? "current" : "baseline",
                     a->gpu_reason != NULL ? a->gpu_reason : "no reason recorded");
    if (n < 0 || (size_t)n < sizeof(r->note))
        return;
    r->note[cg_utf8_cut(r->note, sizeof(r->note) - 1)] = '\0'; /* never half a character */
}

/* Why a run lacks a metric of the GPU's state, without a leading "not available: ". */
static const char *gpu_state_why(const struct cg_run *run, enum cg_metric m)
{
    const struct cg_gpu_state *g = &run->gpu;
    const char *why = NULL;
    if (!g->recorded)
        return "not recorded (an artifact from before the GPU state was)";
    if (m == CG_M_MFU)
        why = g->mfu_reason;
    else if (!(g->energy_j >= 0))
        why = g->energy_reason != NULL ? g->energy_reason : g->reason;
    else if (cg_run_tokens(run) <= 0)
        why = "the steps carry no tokens";
    if (why == NULL)
        return "no reason recorded";
    static const char lead[] = "not available: ";
    return strncmp(why, lead, sizeof(lead) - 1) == 0 ? why + sizeof(lead) - 1 : why;
}

/* Energy per token or MFU missing on a side: unavailable with the first such run's reason
 * ("not available: give --flops-per-token", "... no energy counter ..."), naming the side when
 * the other has it. */
static void gpu_state_unavailable(const struct cg_verdict *v, enum cg_metric m, bool in_base,
                                  bool in_cur, struct cg_metric_result *r)
{
    const struct cg_artifact *side = in_cur ? v->baseline : v->current;
    const char *why = "no runs";
    for (size_t i = 0; i < side->n_runs; i++) {
        double x = cg_verdict_run_value(&side->runs[i], m);
        if (!isfinite(x) || x <= 0) {
            why = gpu_state_why(&side->runs[i], m);
            break;
        }
    }
    snprintf(r->note, sizeof(r->note), "not available%s: %.200s",
             !in_base && !in_cur ? "" : in_cur ? " on the baseline" : " on this run", why);
}

static int compute_metrics(struct cg_verdict *v, struct cg_err *err)
{
    const struct cg_artifact *b = v->baseline, *c = v->current;
    /* zeroed: every metric refills them, but the analyser cannot tell */
    double *vb = calloc(b->n_runs + 1, sizeof(*vb)), *vc = calloc(c->n_runs + 1, sizeof(*vc));
    int rc = 0;
    if (vb == NULL || vc == NULL) {
        rc = cg_err_set(err, CG_ENOMEM, "out of memory");
        goto done;
    }
    bool device_gated = false;
    for (int m = 0; m < CG_M_COUNT; m++) {
        struct cg_metric_result *r = &v->metrics[m];
        init_result(r, (enum cg_metric)m, v->thresholds);
        bool in_base = side_values(b, (enum cg_metric)m, vb);
        bool in_cur = side_values(c, (enum cg_metric)m, vc);
        if (m == CG_M_PEAK_DEVICE_MEMORY && v->gpu_lost) {
            gpu_lost_result(v, in_base ? vb : NULL, r);
            device_gated = true;
            continue;
        }
        if (m == CG_M_TOKENS_PER_SEC && in_base && !in_cur) {
            vanished_result(v, vb, r);
            continue;
        }
        if (m == CG_M_PEAK_DEVICE_MEMORY && v->gpu_metrics_missing != NULL) {
            gpu_metrics_missing_note(v, r);
            continue;
        }
        if (cg_metric_from_gpu_state((enum cg_metric)m) && (!in_base || !in_cur)) {
            gpu_state_unavailable(v, (enum cg_metric)m, in_base, in_cur, r);
            continue;
        }
        if (m == CG_M_MFU && b->settings.flops_per_token != c->settings.flops_per_token) {
            snprintf(r->note, sizeof(r->note),
                     "not comparable: the sides count %lld and %lld FLOPs per token "
                     "(--flops-per-token)",
                     (long long)b->settings.flops_per_token,
                     (long long)c->settings.flops_per_token);
            continue;
        }
        if (!in_base || !in_cur) {
            snprintf(r->note, sizeof(r->note), "not measured on %s",
                     !in_base && !in_cur ? "either side"
                     : !in_base          ? "the baseline"
                                         : "this run");
            continue;
        }
        if (m == CG_M_PEAK_DEVICE_MEMORY || m == CG_M_PEAK_HOST_RSS) {
            cg_verdict_memory_metric(b, c, v->thresholds, (enum cg_metric)m, vb, vc, r);
            if (m == CG_M_PEAK_DEVICE_MEMORY)
                device_gated = true;
            else if (device_gated) {
                r->outcome = CG_OUT_NOT_GATED;
                snprintf(r->note, sizeof(r->note), "peak device memory is gated instead");
            }
            continue;
        }
        if (timing_metric(v, (enum cg_metric)m, vb, vc, r) != 0) {
            rc = cg_err_set(err, CG_ENOMEM, "out of memory");
            goto done;
        }
        if (isnan(r->threshold_pct)) { /* a thresholds file that leaves it out */
            r->outcome = CG_OUT_NOT_GATED;
            r->wants_runs = false;
            snprintf(r->note, sizeof(r->note), "shown, not gated: the thresholds give no limit");
        }
    }
    states_decide(v);
done:
    free(vb);
    free(vc);
    return rc;
}

/* The ranges named as a step that were no step in a's runs: summed (nested and of other
 * threads), and which kinds some run has (bit 0 nested, bit 1 other threads); false when some
 * run did not count them. */
static bool stray_steps(const struct cg_artifact *a, int64_t n[2], unsigned *kinds)
{
    n[0] = n[1] = 0;
    *kinds = 0;
    for (size_t i = 0; i < a->n_runs; i++) {
        const struct cg_run *r = &a->runs[i];
        if (r->stray_steps_nested < 0 || r->stray_steps_other_threads < 0)
            return false;
        n[0] += r->stray_steps_nested;
        n[1] += r->stray_steps_other_threads;
        *kinds |= (r->stray_steps_nested > 0 ? 1u : 0u) | (r->stray_steps_other_threads > 0 ? 2u : 0u);
    }
    return true;
}

/* "from the optimizer" or "from NVTX ranges" for a settings.steps_from. */
static const char *steps_from_text(const char *from)
{
    return strcmp(from, "optimizer") == 0 ? "from the optimizer" : "from NVTX ranges";
}

/* A side's per-step work of count row (backward passes, optimizer steps): each run's mean over
 * its steps; the smallest and largest run and the median of the runs. False when some run did
 * not count it. */
static bool step_work(const struct cg_artifact *a, int row, double *lo, double *hi, double *mid)
{
    double *v = malloc((a->n_runs + 1) * sizeof(*v));
    bool known = v != NULL && a->n_runs > 0;
    for (size_t i = 0; known && i < a->n_runs; i++) {
        const struct cg_run *r = &a->runs[i];
        double sum = 0.0;
        known = r->n_steps > 0;
        for (size_t k = 0; known && k < r->n_steps; k++) {
            int64_t x = r->steps[k].counts[row];
            known = x >= 0;
            sum += (double)x;
        }
        v[i] = known ? sum / (double)r->n_steps : NAN;
    }
    if (known) {
        qsort(v, a->n_runs, sizeof(*v), cg_stats_cmp_double);
        *lo = v[0];
        *hi = v[a->n_runs - 1];
        *mid = cg_stats_sorted_median(v, a->n_runs);
    }
    free(v);
    return known;
}

/* How far apart the sides' backward passes or optimizer steps per step (the medians of the
 * runs' means) must be, as a share of the larger, to hold different work: an optimizer step a
 * mixed-precision loss scaler skips now and then moves a run's mean by a step's share; a critic
 * stepping six times a loop rather than five, its steps counted, moves it 3%. */
#define CG_STEP_WORK_TOLERANCE 0.02

/* Steps from the optimizer on both sides that hold different work: the backward passes per step
 * of every run of one side outside the other side's runs, and the medians more than
 * CG_STEP_WORK_TOLERANCE apart (a counted optimizer stepping five times where it stepped once,
 * gradients accumulated over another number of backward passes). The step is then another unit
 * of work: a shorter one is no speed-up. The optimizer steps a step holds (every optimizer's)
 * decide so only where neither side made a backward pass (gradients from torch.autograd.grad):
 * an optimizer split in two or added to a loop changes them, not the step. */
static bool step_work_differs(const struct cg_artifact *b, const struct cg_artifact *c, char *why,
                              size_t n)
{
    const char *fb = b->settings.steps_from, *fc = c->settings.steps_from;
    if (fb == NULL || fc == NULL || strcmp(fb, "optimizer") != 0 || strcmp(fc, "optimizer") != 0)
        return false;
    static const int rows[] = {CG_COUNT_BACKWARD, CG_COUNT_OPTIMIZER_STEPS};
    double mid[2][2];
    bool differs[2], backward = false;
    for (int i = 0; i < 2; i++) {
        double blo, bhi, clo, chi;
        if (!step_work(b, rows[i], &blo, &bhi, &mid[0][i]) ||
            !step_work(c, rows[i], &clo, &chi, &mid[1][i]))
            return false; /* a side that did not count them (older runs, no optimizer hooked) */
        differs[i] =
            (clo > bhi || chi < blo) &&
            fabs(mid[1][i] - mid[0][i]) > CG_STEP_WORK_TOLERANCE * fmax(mid[0][i], mid[1][i]);
        if (i == 0)
            backward = bhi > 0.0 || chi > 0.0;
    }
    bool differ = differs[0] || (!backward && differs[1]);
    if (!differ)
        return false;
    snprintf(why, n,
             "the sides' steps hold different work: per step, backward passes %.3g -> %.3g and "
             "optimizer steps %.3g -> %.3g (a step is another unit of work: mark each "
             "iteration with canary_gate.step())",
             mid[0][0], mid[1][0], mid[0][1], mid[1][1]);
    return true;
}

bool cg_verdict_steps_redefined(const struct cg_artifact *baseline,
                                const struct cg_artifact *current, char *why, size_t n)
{
    const struct cg_settings *b = &baseline->settings, *c = &current->settings;
    const char *rb = b->step_range != NULL ? b->step_range : "step";
    const char *rc = c->step_range != NULL ? c->step_range : "step";
    if (b->steps_from != NULL && c->steps_from != NULL && strcmp(b->steps_from, c->steps_from) != 0)
        snprintf(why, n,
                 "the sides define a step differently: baseline's steps %s, current's %s (a "
                 "step is another unit of work: measure both the same way, --steps-from)",
                 steps_from_text(b->steps_from), steps_from_text(c->steps_from));
    else if ((b->steps_from == NULL || strcmp(b->steps_from, "nvtx") == 0) &&
             (c->steps_from == NULL || strcmp(c->steps_from, "nvtx") == 0) && strcmp(rb, rc) != 0)
        snprintf(why, n,
                 "the sides define a step differently: baseline's range '%.40s', current's "
                 "'%.40s' (a step is another unit of work: measure both the same way, "
                 "--step-range)",
                 rb, rc);
    else if (cg_settings_step_optimizer_differs(b, c))
        snprintf(why, n,
                 "the sides define a step differently: baseline's steps are optimizer %lld's, "
                 "current's optimizer %lld's (a step is another unit of work: measure both the "
                 "same way, --step-optimizer)",
                 (long long)b->step_optimizer, (long long)c->step_optimizer);
    else if (!step_work_differs(baseline, current, why, n))
        return false;
    return true;
}

/* v->steps_differ (see verdict.h). */
static void steps_differ(struct cg_verdict *v)
{
    int64_t nb[2], nc[2];
    unsigned kb, kc;
    v->steps_differ[0] = '\0';
    if ((v->steps_redefined = cg_verdict_steps_redefined(v->baseline, v->current, v->steps_differ,
                                                         sizeof(v->steps_differ))))
        return;
    bool known_b = stray_steps(v->baseline, nb, &kb), known_c = stray_steps(v->current, nc, &kc);
    const char *name =
        v->current->settings.step_range != NULL ? v->current->settings.step_range : "step";
    if (known_b && known_c && kb == kc)
        return;
    if (!known_b && !known_c)
        return;
    if ((!known_b && kc == 0) || (!known_c && kb == 0))
        return; /* no such range where they are counted: the runs that did not count had none */
    char side[2][64];
    const int64_t *n[2] = {nb, nc};
    bool known[2] = {known_b, known_c};
    for (int i = 0; i < 2; i++)
        if (known[i])
            snprintf(side[i], sizeof(side[i]), "%lld nested, %lld on other threads",
                     (long long)n[i][0], (long long)n[i][1]);
        else
            snprintf(side[i], sizeof(side[i]), "not counted (runs of an older canary-gate)");
    snprintf(v->steps_differ, sizeof(v->steps_differ),
             "the sides mark steps differently: '%.24s' ranges that were no steps: baseline %.60s; "
             "current %.60s",
             name, side[0], side[1]);
}

/* Whether sides that differ in gpu.available ran on the same machine, off being the side without
 * GPU metrics: its canary initialised CUDA (so the GPU was used and only tracing was missing:
 * CUPTI held by another subscriber), both know the same NVIDIA driver and CPU, and the GPU model,
 * count and CUDA version agree where off read them. */
static bool same_machine_without_gpu_metrics(const struct cg_artifact *b,
                                             const struct cg_artifact *c,
                                             const struct cg_artifact *off)
{
    const struct cg_env *x = &b->env, *y = &c->env;
    if (off->cuda_initialised != 1 || x->driver_version == NULL || y->driver_version == NULL ||
        strcmp(x->driver_version, y->driver_version) != 0 ||
        cg_env_machine_diff(x, y, false) != NULL)
        return false;
    if (off->env.gpu_model == NULL)
        return true;
    return cg_env_machine_diff(x, y, true) == NULL;
}

/* A side's node shape into out (the verdict's shape[]): its runs' one shape, or when its runs
 * with ranks differ, "runs differ: SHAPE (run i), SHAPE (run j)" (the first two that do, cut at
 * a character's end to fit) and *mixed set: a side measured on two shapes is no one machine. */
static int side_shape(const struct cg_artifact *a, char out[CG_VERDICT_SHAPE], bool *mixed)
{
    size_t other, first;
    char base[CG_SHAPE_MAX], shape[CG_SHAPE_MAX], text[2 * CG_SHAPE_MAX + 64];
    if (cg_artifact_shape(a, base, sizeof(base), &first, &other) != 0)
        return CG_ENOMEM;
    if (other == a->n_runs) {
        snprintf(text, sizeof(text), "%s", base);
    } else {
        *mixed = true;
        if (cg_ranks_shape(a->runs[other].ranks, a->runs[other].n_ranks, shape, sizeof(shape)) != 0)
            return CG_ENOMEM;
        snprintf(text, sizeof(text), "runs differ: %s (run %zu), %s (run %zu)",
                 base[0] ? base : "one process", first + 1, shape[0] ? shape : "one process",
                 other + 1);
    }
    size_t n = cg_utf8_cut(text, strnlen(text, CG_VERDICT_SHAPE - 1));
    memcpy(out, text, n);
    out[n] = '\0';
    return 0;
}

int cg_verdict_compute(const struct cg_artifact *baseline, const struct cg_artifact *current,
                       const struct cg_thresholds *t, struct cg_verdict *v, struct cg_err *err)
{
    memset(v, 0, sizeof(*v));
    v->baseline = baseline;
    v->current = current;
    v->thresholds = t;
    v->baseline_runs_needed = cg_verdict_min_baseline_runs(t);
    v->weak_baseline = (int64_t)baseline->n_runs < v->baseline_runs_needed;
    v->gpu_lost = cg_verdict_gpu_lost(baseline, current);
    bool gpu = baseline->gpu_available && current->gpu_available;
    if (v->gpu_lost) {
        /* the same machine as far as both sides can tell without the GPU */
        v->machine_diff = cg_env_machine_diff(&baseline->env, &current->env, false);
        if (v->machine_diff == NULL && baseline->env.driver_version != NULL &&
            strcmp(baseline->env.driver_version, current->env.driver_version) != 0)
            v->machine_diff = "environment.driver_version";
    } else if (baseline->gpu_available != current->gpu_available) {
        const struct cg_artifact *off = baseline->gpu_available ? current : baseline;
        if (same_machine_without_gpu_metrics(baseline, current, off))
            v->gpu_metrics_missing = off;
        else
            v->machine_diff = "gpu.available";
    } else {
        v->machine_diff = cg_env_machine_diff(&baseline->env, &current->env, gpu);
    }
    bool mixed = false;
    if (side_shape(baseline, v->shape[0], &mixed) != 0 ||
        side_shape(current, v->shape[1], &mixed) != 0)
        return cg_err_set(err, CG_ENOMEM, "out of memory");
    if (v->machine_diff == NULL && (mixed || strcmp(v->shape[0], v->shape[1]) != 0))
        v->machine_diff = CG_SHAPE_DIFF;
    v->canary_diff = cg_artifact_canary_diff(baseline, current);
    steps_differ(v);
    if (v->steps_redefined) /* said by steps_differ; the note names any other difference */
        v->canary_diff = cg_artifact_canary_diff_but_steps(baseline, current);
    cg_gpu_check_assess(baseline, current, &v->gpu);
    int rc = compute_metrics(v, err);
    if (rc == 0)
        rc = cg_verdict_ops(v, err);
    if (rc == 0)
        rc = cg_counts_compare(baseline, current, t, &v->counts, err);
    if (rc == 0 && cg_anatomy_compute(baseline, current, t, &v->anatomy) != 0)
        rc = cg_err_set(err, CG_ENOMEM, "out of memory");
    if (rc == 0 && t->require_floor && cg_pattern_test(baseline, current, &v->pattern) != 0)
        rc = cg_err_set(err, CG_ENOMEM, "out of memory");
    if (rc == 0 && cg_diagnose(baseline, current, &v->diagnosis) != 0)
        rc = cg_err_set(err, CG_ENOMEM, "out of memory");
    if (rc != 0) {
        cg_verdict_release(v);
        return rc;
    }
    cg_verdict_decide(v);
    return 0;
}

int64_t cg_verdict_min_baseline_runs(const struct cg_thresholds *t)
{
    const enum cg_metric timing[] = {CG_M_STEP_TIME_MEAN, CG_M_STEP_TIME_P95,
                                     CG_M_STEP_TIME_FLOOR, CG_M_TOKENS_PER_SEC};
    int64_t fewest = t->metric[timing[0]].min_runs;
    for (size_t i = 1; i < sizeof(timing) / sizeof(timing[0]); i++)
        if (t->metric[timing[i]].min_runs < fewest)
            fewest = t->metric[timing[i]].min_runs;
    return fewest > CG_TIMING_MIN_RUNS ? fewest : CG_TIMING_MIN_RUNS;
}

bool cg_verdict_gpu_lost(const struct cg_artifact *baseline, const struct cg_artifact *current)
{
    return baseline->gpu_available && !current->gpu_available &&
           current->cuda_initialised == 0 && current->env.driver_version != NULL;
}

void cg_verdict_explain_runs(struct cg_verdict *v, const char *why)
{
    static const char ask[] = "add runs";
    for (int m = 0; m < CG_M_COUNT; m++) {
        struct cg_metric_result *r = &v->metrics[m];
        size_t len = strlen(r->note), k = sizeof(ask) - 1;
        if (r->outcome != CG_OUT_INCONCLUSIVE)
            continue;
        bool asks = len >= k && strcmp(r->note + len - k, ask) == 0;
        if (!asks && !r->wants_runs)
            continue;
        char joined[2 * sizeof(r->note) + 256];
        snprintf(joined, sizeof(joined), "%.*s%s%.255s", (int)(asks ? len - k : len), r->note,
                 asks ? "" : "; ", why);
        snprintf(r->note, sizeof(r->note), "%.*s", (int)(sizeof(r->note) - 1), joined);
    }
}

void cg_verdict_release(struct cg_verdict *v)
{
    cg_counts_release(&v->counts);
    free(v->ops);
    v->ops = NULL;
    v->n_ops = 0;
}
