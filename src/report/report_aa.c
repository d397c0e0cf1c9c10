/*
 * report_aa: the A/A report of `canary-gate aa`, as terminal text and as JSON (report_aa.h).
 * Figures that are not finite read "-" or "n/a" in the text and null in the JSON.
 */
#include "report_aa.h"

#include "fmt.h"
#include "jsonutil.h"
#include "report.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static void fmt_cv(double pct, char *dst, size_t n)
{
    if (isnan(pct))
        snprintf(dst, n, "-");
    else
        snprintf(dst, n, "%.2f%%", pct);
}

static int noise_text(const struct cg_noise *z, const struct cg_thresholds *t, struct cg_buf *o)
{
    int rc = 0;
    rc |= cg_buf_printf(o, "noise of this runner (%zu runs; CV = standard deviation / mean)\n",
                        z->runs);
    rc |= cg_buf_printf(o, "  %-20s %14s %14s %16s %16s\n", "metric", "median run", "within-run CV",
                        "steps would give", "between-run CV");
    for (int m = 0; m < CG_M_COUNT; m++) {
        const struct cg_noise_metric *nm = &z->m[m];
        if (!nm->measured)
            continue;
        char med[48], w[32], p[32], b[32];
        cg_fmt_metric((enum cg_metric)m, nm->median, med, sizeof(med));
        fmt_cv(nm->within_cv_pct, w, sizeof(w));
        fmt_cv(nm->steps_predict_cv_pct, p, sizeof(p));
        fmt_cv(nm->between_cv_pct, b, sizeof(b));
        rc |= cg_buf_printf(o, "  %-20s %14s %14s %16s %16s\n", cg_metric_name((enum cg_metric)m),
                            med, w, p, b);
    }
    rc |= cg_buf_printf(
        o, "  within-run: spread of the steps inside a run (median over runs); steps would give:\n"
           "  the run-to-run spread of a run's mean if its steps were independent; between-run:\n"
           "  the spread of whole runs, which the gate compares against\n\n");
    rc |= cg_buf_printf(
        o, "false alarms at thresholds %s, on %zu A/A decisions of %zu runs against %zu (%s)\n",
        t->source, z->decisions, z->side, z->side,
        z->every_split ? "every split of these runs" : "random splits of these runs");
    rc |= cg_buf_printf(o, "  %-20s %12s %8s %22s %14s\n", "metric", "threshold", "alpha",
                        "false alarms", "recommended");
    for (int m = 0; m < CG_M_COUNT; m++) {
        const struct cg_noise_metric *nm = &z->m[m];
        if (!nm->measured)
            continue;
        char fa[48], rec[32], alpha[16] = "-";
        snprintf(fa, sizeof(fa), "%.2f%% (%zu of %zu)",
                 100.0 * (double)nm->fails / (double)z->decisions, nm->fails, z->decisions);
        if (isnan(nm->recommended_pct))
            snprintf(rec, sizeof(rec), "n/a");
        else
            snprintf(rec, sizeof(rec), "+%.1f%%", nm->recommended_pct);
        if (m != CG_M_PEAK_DEVICE_MEMORY && m != CG_M_PEAK_HOST_RSS)
            snprintf(alpha, sizeof(alpha), "%.3g", t->metric[m].alpha);
        rc |= cg_buf_printf(o, "  %-20s %11.1f%% %8s %22s %14s\n",
                            cg_metric_name((enum cg_metric)m), nm->threshold_pct, alpha, fa, rec);
    }
    rc |= cg_buf_printf(o, "  any metric: FAIL %.2f%% (%zu of %zu), INCONCLUSIVE %.2f%%\n",
                        100.0 * (double)z->fails / (double)z->decisions, z->fails, z->decisions,
                        100.0 * (double)z->inconclusive / (double)z->decisions);
    rc |= cg_buf_printf(
        o,
        "  recommended: the smallest max_regression_pct with false alarms <= %.3g%% here; n/a:\n"
        "  no decision could fail at any threshold (too few runs a side for min_runs, or no\n"
        "  growth beyond the byte tolerance). Splits of the same %zu runs are not independent:\n"
        "  more runs give firmer figures\n\n",
        100.0 * z->target, z->runs);
    return rc;
}

/* Whether the counts are exact on this runner: every count compared with itself over all the
 * pooled runs; a count that varies (within a run or between runs) is listed. */
static int counts_text(const struct cg_counts *c, const struct cg_thresholds *t, struct cg_buf *o)
{
    int rc = 0;
    if (c->n == 0)
        return 0;
    rc |= cg_buf_printf(
        o,
        "counts per step over these runs (docs/counts.md): %zu measured, %zu identical in "
        "every step of every run\n",
        c->n_compared, c->n_compared - c->n_varying);
    for (size_t i = 0; i < c->n; i++) {
        const struct cg_count_result *r = &c->rows[i];
        if (!r->varies)
            continue;
        char lo[32], hi[32];
        cg_report_count_value(r->base_lo, lo, sizeof(lo));
        cg_report_count_value(r->base_hi, hi, sizeof(hi));
        struct cg_buf name;
        cg_buf_init(&name, 1024);
        if (r->row < 0 && cg_term_escape(&name, r->name, 100) != 0)
            cg_buf_reset(&name);
        rc |= cg_buf_printf(o, "  varies: %s%.*s (per-run medians %s to %s per step)\n",
                            r->row >= 0 ? cg_count_name(r->row) : "range ", (int)name.len,
                            name.data ? name.data : "", lo, hi);
        cg_buf_release(&name);
    }
    if (c->n_varying > 0)
        rc |= cg_buf_printf(
            o,
            "  a count that varies means data-dependent work in the canary: it is gated with\n"
            "  the varying tolerance (+%g%%, counts.varying) instead of exactly; make the\n"
            "  canary's steps alike (fixed shapes, no data-dependent branches) to gate it\n"
            "  exactly\n\n",
            t->varying.max_increase_pct);
    else
        rc |= cg_buf_printf(o, "  counts are exact here: any change in them is the code's\n\n");
    return rc;
}

const char *cg_report_aa_snippet(const struct cg_noise *z, const char *extends, struct cg_buf *b)
{
    cJSON *name = cJSON_CreateString(extends);
    char *quoted = name ? cJSON_PrintUnformatted(name) : NULL;
    cJSON_Delete(name);
    if (quoted == NULL)
        return NULL;
    int rc = cg_buf_printf(b, "{\n  \"extends\": %s,\n  \"metrics\": {", quoted);
    free(quoted);
    const char *sep = "\n";
    for (int m = 0; m < CG_M_COUNT && rc == 0; m++) {
        if (!z->m[m].measured || isnan(z->m[m].recommended_pct))
            continue;
        rc = cg_buf_printf(b, "%s    \"%s\": {\"max_regression_pct\": %.1f}", sep,
                           cg_metric_name((enum cg_metric)m), z->m[m].recommended_pct);
        sep = ",\n";
    }
    rc |= cg_buf_adds(b, "\n  }\n}\n");
    return rc == 0 ? cg_buf_str(b) : NULL;
}

static cJSON *counts_json(const struct cg_counts *c)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "measured", (double)c->n_compared);
    cJSON_AddNumberToObject(o, "identical", (double)(c->n_compared - c->n_varying));
    cJSON *vary = cJSON_AddArrayToObject(o, "varying");
    for (size_t i = 0; i < c->n; i++) {
        const struct cg_count_result *r = &c->rows[i];
        if (!r->varies)
            continue;
        cJSON *x = cJSON_CreateObject();
        if (r->row >= 0)
            cJSON_AddStringToObject(x, "count", cg_count_name(r->row));
        else
            cJSON_AddStringToObject(x, "range", r->name);
        cJSON_AddItemToObject(x, "min_per_step", cg_json_number(r->base_lo));
        cJSON_AddItemToObject(x, "max_per_step", cg_json_number(r->base_hi));
        cJSON_AddItemToArray(vary, x);
    }
    return o;
}

char *cg_report_aa_json(const struct cg_noise *z, const struct cg_counts *counts,
                        const struct cg_thresholds *t, const char *snip, const char *gpu_text,
                        bool lock_clocks)
{
    cJSON *root = cJSON_CreateObject();
    if (root == NULL)
        return NULL;
    cJSON_AddStringToObject(root, "gpu_state", gpu_text);
    cJSON_AddBoolToObject(root, "lock_clocks_advised", lock_clocks);
    cJSON_AddStringToObject(root, "schema", "canary-gate/aa");
    cJSON_AddNumberToObject(root, "schema_version", 1);
    cJSON_AddStringToObject(root, "thresholds", t->source);
    cJSON_AddNumberToObject(root, "runs", (double)z->runs);
    cJSON_AddNumberToObject(root, "runs_per_side", (double)z->side);
    cJSON_AddNumberToObject(root, "decisions", (double)z->decisions);
    cJSON_AddBoolToObject(root, "every_split", z->every_split);
    cJSON_AddNumberToObject(root, "target_false_alarm_rate", z->target);
    cJSON_AddNumberToObject(root, "false_alarm_rate", (double)z->fails / (double)z->decisions);
    cJSON_AddNumberToObject(root, "inconclusive_rate",
                            (double)z->inconclusive / (double)z->decisions);
    cJSON *metrics = cJSON_AddArrayToObject(root, "metrics");
    for (int m = 0; m < CG_M_COUNT; m++) {
        const struct cg_noise_metric *nm = &z->m[m];
        if (!nm->measured)
            continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", cg_metric_name((enum cg_metric)m));
        cJSON_AddItemToObject(o, "median", cg_json_number(nm->median));
        cJSON_AddItemToObject(o, "within_run_cv_pct", cg_json_number(nm->within_cv_pct));
        cJSON_AddItemToObject(o, "steps_predict_cv_pct", cg_json_number(nm->steps_predict_cv_pct));
        cJSON_AddItemToObject(o, "between_run_cv_pct", cg_json_number(nm->between_cv_pct));
        cJSON_AddItemToObject(o, "threshold_pct", cg_json_number(nm->threshold_pct));
        cJSON_AddNumberToObject(o, "false_alarms", (double)nm->fails);
        cJSON_AddNumberToObject(o, "false_alarm_rate", (double)nm->fails / (double)z->decisions);
        cJSON_AddItemToObject(o, "recommended_max_regression_pct",
                              cg_json_number(nm->recommended_pct));
        cJSON_AddItemToArray(metrics, o);
    }
    cJSON_AddItemToObject(root, "counts", counts_json(counts));
    cJSON_AddItemToObject(root, "recommended_thresholds", cJSON_Parse(snip));
    char *s = cJSON_Print(root);
    cJSON_Delete(root);
    return s;
}

int cg_report_aa_text(const struct cg_noise *z, const struct cg_counts *counts,
                      const struct cg_thresholds *t, const char *gpu_text, const char *snip,
                      struct cg_buf *o)
{
    int rc = noise_text(z, t, o);
    rc |= counts_text(counts, t, o);
    rc |= cg_buf_printf(o, "%s\n", gpu_text);
    rc |= cg_buf_printf(o, "thresholds for this runner (false alarms <= %.3g%% here):\n%s",
                        100.0 * z->target, snip);
    return rc;
}
