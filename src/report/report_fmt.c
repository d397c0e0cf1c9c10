/*
 * report_fmt: the texts shared by the renderers: the stopped-runs and sources lines and the
 * verdict's headline (see report.h).
 */
#include "report.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

void cg_report_stopped(const struct cg_artifact *a, size_t *runs, int64_t *steps)
{
    *runs = 0;
    *steps = -1;
    for (size_t i = 0; i < a->n_runs; i++) {
        int64_t s = a->runs[i].stopped_after_steps;
        if (s <= 0)
            continue;
        (*runs)++;
        if (s > *steps)
            *steps = s;
    }
}

void cg_report_stopped_text(const struct cg_artifact *a, char *dst, size_t n)
{
    size_t runs;
    int64_t steps;
    cg_report_stopped(a, &runs, &steps);
    if (runs == 0) {
        snprintf(dst, n, "%s", "");
        return;
    }
    snprintf(dst, n, "stopped after %lld steps (warm-up + measured) in %zu of %zu runs",
             (long long)steps, runs, a->n_runs);
}

void cg_report_sources_text(const struct cg_artifact *a, char *dst, size_t n)
{
    const char *from = a->settings.steps_from;
    bool optimizer = from != NULL && strcmp(from, "optimizer") == 0;
    bool tokens = false;
    for (size_t i = 0; i < a->n_runs && !tokens; i++)
        tokens = a->runs[i].n_steps > 0 && a->runs[i].steps[0].tokens >= 0;
    int64_t per = a->settings.tokens_per_step;
    char tok[96];
    if (!tokens)
        snprintf(tok, sizeof(tok), "none counted (no range payload, no --tokens-per-step)");
    else if (per >= 0 && optimizer)
        snprintf(tok, sizeof(tok), "--tokens-per-step %lld", (long long)per);
    else if (per >= 0)
        snprintf(tok, sizeof(tok), "the step ranges' payloads, else --tokens-per-step %lld",
                 (long long)per);
    else
        snprintf(tok, sizeof(tok), "the step ranges' payloads");
    snprintf(dst, n, "steps from %s; tokens: %s",
             optimizer      ? "each optimizer.step() (marked by canary-gate)"
             : from != NULL ? "the canary's own NVTX step ranges"
                            : "NVTX step ranges",
             tok);
}

/* The metric that explains the overall outcome: the first FAIL, else the first INCONCLUSIVE. */
static const struct cg_metric_result *deciding_metric(const struct cg_verdict *v)
{
    enum cg_outcome want = v->overall == CG_OUT_FAIL ? CG_OUT_FAIL : CG_OUT_INCONCLUSIVE;
    for (int m = 0; m < CG_M_COUNT; m++) {
        if (v->metrics[m].outcome == want)
            return &v->metrics[m];
    }
    return NULL;
}

/* The headline of a verdict whose cause is no metric's change: the GPU lost, a metric that
 * vanished, a baseline too small to detect anything (verdict.h). False when none applies. */
static bool integrity_headline(const struct cg_verdict *v, char *dst, size_t n)
{
    const struct cg_metric_result *mean = &v->metrics[CG_M_STEP_TIME_MEAN];
    char d[32];
    if (v->overall == CG_OUT_FAIL && v->gpu_lost) {
        snprintf(dst, n, "FAIL: the canary did not use the GPU (the baseline did, and this "
                         "machine has one): CUDA was never initialised");
        return true;
    }
    if (v->overall != CG_OUT_INCONCLUSIVE)
        return false;
    if (v->metrics[CG_M_TOKENS_PER_SEC].vanished &&
        v->metrics[CG_M_TOKENS_PER_SEC].outcome == CG_OUT_INCONCLUSIVE) {
        snprintf(dst, n, "INCONCLUSIVE: tokens/sec vanished: the baseline measured it, this run "
                         "did not (the canary's steps no longer carry tokens)");
        return true;
    }
    /* ab measures both sides now: its pairs have their own rule */
    if (v->weak_baseline && mean->method != CG_METHOD_PAIRED) {
        size_t runs = v->baseline->n_runs;
        long long need = (long long)v->baseline_runs_needed;
        cg_fmt_pct(mean->delta_pct, d, sizeof(d));
        snprintf(dst, n,
                 "INCONCLUSIVE: the baseline has %zu run%s, fewer than the %lld a regression "
                 "needs to FAIL (step time mean %s): record it again with at least %lld runs",
                 runs, runs == 1 ? "" : "s", need, d, need);
        return true;
    }
    return false;
}

void cg_verdict_headline(const struct cg_verdict *v, char *dst, size_t n)
{
    const struct cg_metric_result *r = deciding_metric(v);
    const struct cg_metric_result *mean = &v->metrics[CG_M_STEP_TIME_MEAN];
    char d[32], lo[32], hi[32];
    if (integrity_headline(v, dst, n))
        return;
    if (v->overall == CG_OUT_PASS || r == NULL) {
        cg_fmt_pct(mean->delta_pct, d, sizeof(d));
        snprintf(dst, n, "PASS: no regression beyond the thresholds (step time mean %s)", d);
        return;
    }
    int fails = 0;
    for (int m = 0; m < CG_M_COUNT; m++)
        fails += v->metrics[m].outcome == r->outcome;
    cg_fmt_pct(r->delta_pct, d, sizeof(d));
    cg_fmt_pct(r->ci_low_pct, lo, sizeof(lo));
    cg_fmt_pct(r->ci_high_pct, hi, sizeof(hi));
    char more[32] = "";
    if (fails > 1)
        snprintf(more, sizeof(more), " (and %d more)", fails - 1);
    if (v->overall == CG_OUT_FAIL) {
        if (r->method == CG_METHOD_FIXED)
            snprintf(dst, n, "FAIL: %s regressed %s%s", cg_metric_label(r->metric), d, more);
        else
            snprintf(dst, n, "FAIL: %s regressed %s (interval %s to %s, p = %.3g)%s",
                     cg_metric_label(r->metric), d, lo, hi, r->p_value, more);
    } else {
        snprintf(dst, n, "INCONCLUSIVE: %s changed %s, beyond the threshold but %s%s",
                 cg_metric_label(r->metric), d, r->note[0] ? r->note : "not confirmed", more);
    }
}
