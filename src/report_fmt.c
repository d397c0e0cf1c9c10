/*
 * report_fmt: escaping and number formatting shared by the renderers (see report.h).
 */
#include "report.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at p (1-4), or 0 when invalid. */
static size_t utf8_len(const unsigned char *p)
{
    if (p[0] < 0x80)
        return 1;
    size_t n = (p[0] & 0xE0) == 0xC0 ? 2 : (p[0] & 0xF0) == 0xE0 ? 3 : (p[0] & 0xF8) == 0xF0 ? 4 : 0;
    if (n == 0 || (n == 2 && p[0] < 0xC2) || (n == 4 && p[0] > 0xF4))
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
    }
    return n;
}

static const char *md_entity(unsigned char c)
{
    switch (c) {
    case '|': return "&#124;";
    case '<': return "&lt;";
    case '>': return "&gt;";
    case '&': return "&amp;";
    case '`': return "&#96;";
    case '@': return "&#64;";
    case '[': return "&#91;";
    case ']': return "&#93;";
    case '(': return "&#40;";
    case ')': return "&#41;";
    case '*': return "&#42;";
    case '_': return "&#95;";
    case '~': return "&#126;";
    case '\\': return "&#92;";
    case '#': return "&#35;";
    case ':': return "&#58;";
    case '!': return "&#33;";
    case '$': return "&#36;";
    default: return NULL;
    }
}

int cg_md_escape(struct cg_buf *out, const char *s, size_t max_bytes)
{
    const unsigned char *p = (const unsigned char *)(s != NULL ? s : "");
    size_t used = 0;
    int rc = 0;
    while (*p && rc == 0) {
        size_t n = utf8_len(p);
        size_t step = n ? n : 1;
        if (used + step > max_bytes) {
            rc = cg_buf_adds(out, "\xe2\x80\xa6"); /* U+2026 */
            break;
        }
        const char *ent = n == 1 ? md_entity(*p) : NULL;
        if (n == 0)
            rc = cg_buf_adds(out, "\xef\xbf\xbd"); /* U+FFFD */
        else if (*p == '@' && (isalnum(p[1]) || p[1] == '-' || p[1] == '_'))
            rc = cg_buf_adds(out, "&#64;&#8205;"); /* a zero-width joiner: never a mention */
        else if (ent != NULL)
            rc = cg_buf_adds(out, ent);
        else if (n == 1 && (*p < 0x20 || *p == 0x7f))
            rc = cg_buf_adds(out, " ");
        else
            rc = cg_buf_add(out, p, n);
        used += step;
        p += step;
    }
    return rc;
}

int cg_term_escape(struct cg_buf *out, const char *s, size_t max_bytes)
{
    const unsigned char *p = (const unsigned char *)(s != NULL ? s : "");
    size_t used = 0;
    int rc = 0;
    while (*p && rc == 0) {
        size_t n = utf8_len(p);
        size_t step = n ? n : 1;
        if (used + step > max_bytes) {
            rc = cg_buf_adds(out, "...");
            break;
        }
        /* C1 controls (U+0080..U+009F) are escape introducers on some terminals too. */
        bool c1 = n == 2 && p[0] == 0xC2 && p[1] < 0xA0;
        if (n == 0 || c1 || (n == 1 && (*p < 0x20 || *p == 0x7f)))
            rc = cg_buf_adds(out, "?");
        else
            rc = cg_buf_add(out, p, n);
        used += step;
        p += step;
    }
    return rc;
}

void cg_fmt_ns(double ns, char *dst, size_t n)
{
    if (!isfinite(ns))
        snprintf(dst, n, "n/a");
    else if (fabs(ns) < 1e3)
        snprintf(dst, n, "%.0f ns", ns);
    else if (fabs(ns) < 1e6)
        snprintf(dst, n, "%.2f us", ns / 1e3);
    else if (fabs(ns) < 1e9)
        snprintf(dst, n, "%.2f ms", ns / 1e6);
    else
        snprintf(dst, n, "%.2f s", ns / 1e9);
}

static void fmt_bytes(double b, char *dst, size_t n)
{
    if (!isfinite(b))
        snprintf(dst, n, "n/a");
    else if (b < 1024.0 * 1024.0)
        snprintf(dst, n, "%.1f KiB", b / 1024.0);
    else if (b < 1024.0 * 1024.0 * 1024.0)
        snprintf(dst, n, "%.1f MiB", b / (1024.0 * 1024.0));
    else
        snprintf(dst, n, "%.2f GiB", b / (1024.0 * 1024.0 * 1024.0));
}

void cg_fmt_metric(enum cg_metric m, double value, char *dst, size_t n)
{
    switch (m) {
    case CG_M_STEP_TIME_MEAN:
    case CG_M_STEP_TIME_P95:
    case CG_M_STEP_TIME_FLOOR:
        cg_fmt_ns(value, dst, n);
        break;
    case CG_M_TOKENS_PER_SEC:
        if (isfinite(value))
            snprintf(dst, n, "%.0f tok/s", value);
        else
            snprintf(dst, n, "n/a");
        break;
    default:
        fmt_bytes(value, dst, n);
        break;
    }
}

void cg_fmt_pct(double pct, char *dst, size_t n)
{
    if (isnan(pct))
        snprintf(dst, n, "n/a");
    else if (isinf(pct))
        snprintf(dst, n, "%s", pct > 0 ? "+inf" : "-inf");
    else
        snprintf(dst, n, "%+.1f%%", pct);
}

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

const char *cg_metric_label(enum cg_metric m)
{
    static const char *const labels[CG_M_COUNT] = {
        "Step time mean", "Step time p95",      "Step time floor",
        "Tokens/sec",     "Peak device memory", "Peak host RSS",
    };
    return (unsigned)m < CG_M_COUNT ? labels[m] : "unknown";
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
