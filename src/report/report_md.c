/*
 * report_md: the markdown report, used as the PR comment and the job summary (see report.h).
 *
 * Layout: two hidden marker lines (gate id, verdict), a headline that agrees with the table,
 * banners, the metric table, runs and thresholds, the counts per step, the anatomy of a step,
 * the diagnosis, a mermaid chart of step times,
 * the top op changes, and folded details (environment, method). The whole report stays under
 * CG_REPORT_MAX_BYTES, whatever the artifacts' strings: the sections that hold them without a
 * budget of their own (banners, the library's warnings, the tables, the places of the counts,
 * the anatomy, the ranks, the details) are rendered apart first and kept whole by importance
 * (the metric table first, the baseline's library warnings last) while they fit; one that does
 * not is left out with a note saying so. Room is kept for the rest: diagnosis findings are added
 * one by one while they fit; the chart is drawn with CG_CHART_MAX_POINTS points, then fewer,
 * then left out with a note, so it gives way before the findings; the op table is filled last,
 * row by row, and rows that do not fit are counted in an "N more" line.
 */
#include "report.h"
#include "report_md_internal.h"
#include "report_ranks.h"

#include "anatomy.h"
#include "chart.h"
#include "cg_version.h"
#include "comment_marker.h"
#include "github.h"
#include "redact.h"

#include "sequential.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room kept for the op section's heading, table head and "N more" line. */
#define OPS_RESERVE 640

static int add_marker(struct cg_buf *b, const struct cg_verdict *v, const char *gate_id)
{
    return cg_comment_marker_add_head(b, gate_id, cg_outcome_name(v->overall), NULL, 0);
}

static int add_headline(struct cg_buf *b, const struct cg_verdict *v)
{
    const char *icon = v->overall == CG_OUT_FAIL   ? "\xe2\x9d\x8c"
                       : v->overall == CG_OUT_PASS ? "\xe2\x9c\x85"
                                                   : "\xe2\x9a\xa0\xef\xb8\x8f";
    /* Numbers and fixed words, and a metric's note escaped (it may quote artifact text). */
    int rc = cg_buf_printf(b, "## %s canary-gate ", icon);
    rc |= cg_verdict_headline_for(v, CG_TEXT_MARKDOWN, b);
    return rc | cg_buf_adds(b, "\n\n");
}

static const char *w_or_empty(const char *s)
{
    return s != NULL ? s : "";
}

/* Distinct warnings of the injection library over a's runs shown at most. */
#define WARNINGS_SHOWN 8

/* A note with the injection library's warnings of a's runs (each once; escaped), or nothing. */
static int library_warnings(struct cg_buf *b, const struct cg_artifact *a, const char *side)
{
    const char *shown[WARNINGS_SHOWN];
    size_t n_shown = 0, more = 0;
    int rc = 0;
    for (size_t i = 0; i < a->n_runs; i++) {
        for (size_t k = 0; k < a->runs[i].n_warnings; k++) {
            const char *w = a->runs[i].warnings[k];
            bool seen = false;
            for (size_t j = 0; j < n_shown && !seen; j++)
                seen = strcmp(shown[j], w) == 0;
            for (size_t j = 0; j < i && !seen; j++) /* past the shown ones: counted once */
                for (size_t m = 0; m < a->runs[j].n_warnings && !seen; m++)
                    seen = strcmp(a->runs[j].warnings[m], w) == 0;
            if (seen)
                continue;
            if (n_shown < WARNINGS_SHOWN)
                shown[n_shown++] = w;
            else
                more++;
        }
    }
    if (n_shown == 0)
        return 0;
    rc |= cg_buf_printf(b, "> [!NOTE]\n> **The injection library's warnings** on %s:\n", side);
    for (size_t j = 0; j < n_shown; j++) {
        rc |= cg_buf_adds(b, "> - ");
        rc |= cg_md_escape(b, w_or_empty(shown[j]), 300);
        rc |= cg_buf_adds(b, "\n");
    }
    if (more > 0)
        rc |= cg_buf_printf(b, "> - and %zu more\n", more);
    return rc | cg_buf_adds(b, "\n");
}

static int add_banners(struct cg_buf *b, const struct cg_verdict *v)
{
    int rc = 0;
    const struct cg_artifact *base = v->baseline, *cur = v->current;
    if (v->machine_diff != NULL && strcmp(v->machine_diff, CG_SHAPE_DIFF) == 0)
        rc |= cg_buf_printf(b, "> [!WARNING]\n> **Different machine**: the node shape differs "
                               "(baseline %s; this run %s). %s\n\n",
                            v->shape[0][0] ? v->shape[0] : "one process",
                            v->shape[1][0] ? v->shape[1] : "one process",
                            v->downgraded ? "A regression was found but is reported as "
                                            "inconclusive: re-record the baseline on this shape."
                                          : "Numbers may not be comparable.");
    else if (v->machine_diff != NULL)
        rc |= cg_buf_printf(b, "> [!WARNING]\n> **Different machine** (`%s` differs between "
                               "baseline and this run). %s\n\n",
                            v->machine_diff,
                            v->downgraded ? "A regression was found but is reported as "
                                            "inconclusive: re-record the baseline on this runner."
                                          : "Numbers may not be comparable.");
    const struct cg_gpu_check *g = &v->gpu; /* numbers and fixed words only */
    if (g->reason[0] || g->clocks_moved)
        rc |= cg_buf_printf(b, "> [!WARNING]\n> **The GPU's own state:** %s%s%s.%s\n\n",
                            g->reason, g->reason[0] && g->clocks_moved ? "; " : "",
                            g->clock_reason,
                            g->decided ? " A regression they decide is reported as inconclusive."
                                       : "");
    if (g->settings_diff[0])
        rc |= cg_buf_printf(b, "> [!NOTE]\n> **GPU settings differ:** %s. Not a different "
                               "machine by itself; lock the clocks and set the same power limit "
                               "for comparable runs.\n\n",
                            g->settings_diff);
    if (v->canary_diff != NULL)
        rc |= cg_buf_printf(b, "> [!NOTE]\n> **Canary configuration changed** (`%s` differs). "
                               "It is still gated: a changed configuration is a common cause of "
                               "real regressions.\n\n",
                            v->canary_diff);
    const struct cg_artifact *nogpu = !cur->gpu_available ? cur : !base->gpu_available ? base : NULL;
    if (nogpu != NULL) {
        rc |= cg_buf_printf(b, "> [!NOTE]\n> **GPU metrics unavailable** on %s: ",
                            nogpu == cur ? "this run" : "the baseline");
        rc |= cg_md_escape(b, nogpu->gpu_reason != NULL ? nogpu->gpu_reason : "no reason recorded",
                           300);
        rc |= cg_buf_adds(b, ". Step times and host memory are still measured.");
        const char *advice = cg_report_gpu_advice(nogpu->gpu_reason);
        if (advice != NULL)
            rc |= cg_buf_printf(b, " **To measure the GPU:** %s.", advice);
        rc |= cg_buf_adds(b, "\n\n");
    }
    if (v->accepted != NULL) {
        const struct cg_history_entry *a = v->accepted;
        char commit[64];
        cg_report_short_commit(a->commit, commit, sizeof(commit));
        rc |= cg_buf_adds(b, "> [!NOTE]\n> **Baseline accepted** at ");
        rc |= cg_md_escape(b, commit, sizeof(commit));
        if (a->who != NULL) {
            rc |= cg_buf_adds(b, " by ");
            rc |= cg_md_escape(b, a->who, 100);
        }
        char day[11];
        snprintf(day, sizeof(day), "%s", a->date); /* the date of an ISO time */
        rc |= cg_buf_adds(b, " (");
        rc |= cg_md_escape(b, day, sizeof(day));
        rc |= cg_buf_adds(b, "): ");
        rc |= cg_md_escape(b, a->reason != NULL ? a->reason : "no reason recorded", 500);
        rc |= cg_buf_printf(b, "\n>\n> A regression accepted on main is part of the baseline; "
                               "%zu run%s of main recorded since.\n\n",
                            v->accepted_runs_since, v->accepted_runs_since == 1 ? "" : "s");
    }
    return rc;
}

static int add_warnings_current(struct cg_buf *b, const struct cg_verdict *v)
{
    return library_warnings(b, v->current, "this run");
}

static int add_warnings_baseline(struct cg_buf *b, const struct cg_verdict *v)
{
    return library_warnings(b, v->baseline, "the baseline");
}

static int add_within_run(struct cg_buf *b, const struct cg_verdict *v)
{
    if (!v->within_run)
        return 0;
    return cg_buf_adds(b, "> [!NOTE]\n> A side has fewer than 3 runs, so timing is shown, "
                          "compared within the runs (block bootstrap over steps), and not "
                          "judged: each process runs at a speed of its own, and one process "
                          "cannot show how much processes differ. Counts and memory still "
                          "decide; use 3 runs a side or more for timing.\n\n");
}

static int add_metric_table(struct cg_buf *b, const struct cg_verdict *v)
{
    double alpha = v->thresholds->metric[CG_M_STEP_TIME_MEAN].alpha;
    int rc = cg_buf_printf(b, "| Metric | Baseline | Current | Change (its %.0f%% interval) | p | "
                              "Threshold | Outcome |\n|---|---:|---:|---:|---:|---:|---|\n",
                           (1.0 - 2.0 * alpha) * 100.0);
    for (int m = 0; m < CG_M_COUNT && rc == 0; m++) {
        const struct cg_metric_result *r = &v->metrics[m];
        char base[48], cur[48], p[32], th[64];
        if (!cg_report_metric_shown(v, (enum cg_metric)m))
            continue;
        cg_fmt_metric(r->metric, r->baseline, base, sizeof(base));
        cg_fmt_metric(r->metric, r->current, cur, sizeof(cur));
        if (isnan(r->p_value))
            snprintf(p, sizeof(p), "&mdash;");
        else
            snprintf(p, sizeof(p), "%.3g", r->p_value);
        if (isnan(r->threshold_pct)) { /* a thresholds file without this metric */
            snprintf(th, sizeof(th), "none");
        } else if (isnan(r->threshold_bytes)) {
            snprintf(th, sizeof(th), "%s%.1f%%", cg_metric_higher_is_worse(r->metric) ? "+" : "-",
                     r->threshold_pct);
        } else {
            char bytes[32];
            cg_fmt_metric(r->metric, r->threshold_bytes, bytes, sizeof(bytes));
            snprintf(th, sizeof(th), "+%.1f%% and +%s", r->threshold_pct, bytes);
        }
        if (r->outcome == CG_OUT_UNAVAILABLE) {
            rc = cg_buf_printf(b, "| %s | %s | %s | &mdash; | &mdash; | %s | n/a: ",
                               cg_metric_label(r->metric), base, cur, th);
        } else {
            char change[160];
            cg_report_change_text(r, change, sizeof(change));
            rc = cg_buf_printf(b, "| %s | %s | %s | %s | %s | %s | %s%s",
                               cg_metric_label(r->metric), base, cur, change, p, th,
                               cg_report_md_icon(r->outcome), r->note[0] ? ": " : "");
        }
        rc |= cg_report_note(r->note, CG_TEXT_MARKDOWN, b); /* it may quote artifact text */
        rc |= cg_buf_adds(b, " |\n");
    }
    if (rc == 0)
        rc = cg_buf_printf(
            b, "\nBaseline and Current are the medians of the runs. Change is the shift the test "
               "decides on (Hodges-Lehmann: the median of the ratios between every baseline run "
               "and every current run; memory: the medians' change) with its interval at %.0f%% "
               "(the one-sided test at alpha %.2g, from each end); where the medians' own change "
               "differs by a point or more it is shown beside it (the words: the glossary of "
               "canary-gate's docs/statistics.md).\n",
            (1.0 - 2.0 * alpha) * 100.0, alpha);
    return rc;
}

/* An item of the run summary from a helper that writes "**Label:** text.\n" (or nothing). */
static int add_item_from(struct cg_buf *b, int (*fn)(const struct cg_verdict *, bool,
                                                     struct cg_buf *),
                         const struct cg_verdict *v)
{
    struct cg_buf item;
    cg_buf_init(&item, SIZE_MAX);
    int rc = fn(v, true, &item);
    if (rc == 0 && item.len >= 2 && memcmp(item.data + item.len - 2, ".\n", 2) == 0)
    { /* items end without a full stop */
        item.len--;
        item.data[item.len - 1] = '\n';
        item.data[item.len] = '\0';
    }
    if (rc == 0 && item.len > 0)
        rc = cg_buf_adds(b, "- ") | cg_buf_adds(b, cg_buf_str(&item));
    cg_buf_release(&item);
    return rc;
}

/* The run summary: one list item per fact (runs, thresholds, steps and tokens, runs added,
 * confirmation, floor, process states, kernel choices, script, pairing), then a pointer to the
 * glossary for the statistical words it used. */
static int add_runs_line(struct cg_buf *b, const struct cg_verdict *v)
{
    const struct cg_artifact *base = v->baseline, *cur = v->current;
    size_t bs = base->n_runs ? base->runs[0].n_steps : 0, cs = cur->n_runs ? cur->runs[0].n_steps : 0;
    bool floor_word = false, fast_word = false, state_word = false, spend_word = false;
    int rc = cg_buf_printf(b, "\n**Run summary**\n\n- **Runs:** baseline %zu × %zu steps, this "
                              "run %zu × %zu steps (warm-up %lld dropped)\n- **Thresholds:** ",
                           base->n_runs, bs, cur->n_runs, cs, (long long)cur->settings.warmup);
    rc |= cg_md_escape(b, v->thresholds->source, 200);
    rc |= cg_buf_adds(b, "\n");
    char stopped_cur[160], stopped_base[160];
    cg_report_stopped_text(cur, stopped_cur, sizeof(stopped_cur));
    cg_report_stopped_text(base, stopped_base, sizeof(stopped_base));
    char src_cur[256], src_base[256]; /* fixed words and numbers only */
    cg_report_sources_text(cur, src_cur, sizeof(src_cur));
    cg_report_sources_text(base, src_base, sizeof(src_base));
    if (strcmp(src_cur, src_base) == 0)
        rc |= cg_buf_printf(b, "- **Steps and tokens:** %s\n", src_cur);
    else
        rc |= cg_buf_printf(b, "- **Steps and tokens:** this run: %s; baseline: %s\n", src_cur,
                            src_base);
    if (stopped_cur[0] || stopped_base[0]) /* numbers and fixed words only */
        rc |= cg_buf_printf(b, "- **Canary stopped once measured:** %s%s%s%s%s\n",
                            stopped_cur[0] ? "this run: " : "", stopped_cur,
                            stopped_cur[0] && stopped_base[0] ? "; " : "",
                            stopped_base[0] ? "baseline: " : "", stopped_base);
    char looks[512] = "", confirm[512] = "";
    if (v->seq != NULL) {
        cg_seq_describe_looks(v->seq, looks, sizeof(looks));
        cg_seq_describe_confirmation(v->seq, v, confirm, sizeof(confirm));
    }
    /* Numbers and fixed words only: no escaping needed. */
    if (looks[0]) {
        rc |= cg_buf_printf(b, "- **Runs added:** %s\n", looks);
        spend_word = true; /* the looks name their spending */
    }
    if (confirm[0])
        rc |= cg_buf_printf(b, "- **Confirmation:** %s\n", confirm);
    const struct cg_metric_result *f = &v->metrics[CG_M_STEP_TIME_FLOOR];
    if (f->method == CG_METHOD_FAST_RUNS) {
        rc |= cg_buf_printf(b, "- **Step time floor** over the runs in the %s fast state: "
                               "%zu of %zu baseline runs, %zu of %zu current runs\n",
                            f->own_states ? "sides' own" : "pooled", f->fast_runs[0],
                            base->n_runs, f->fast_runs[1], cur->n_runs);
        floor_word = fast_word = true;
    }
    char states[400];
    cg_report_states_text(v, states, sizeof(states));
    if (states[0]) { /* numbers and fixed words */
        rc |= cg_buf_printf(b, "- **Process states:** %s\n", states + strlen("process states: "));
        state_word = fast_word = true; /* states are told by the pooled fast state */
    }
    rc |= add_item_from(b, cg_report_kernel_choices, v);
    rc |= add_item_from(b, cg_report_code_change, v);
    if (v->metrics[CG_M_STEP_TIME_MEAN].method == CG_METHOD_PAIRED)
        rc |= cg_buf_adds(b, "- **Paired:** base and head ran turn about (A B B A ...); timing "
                             "compares run k of each side with a one-sided Wilcoxon signed-rank "
                             "test on the per-pair ratios and a Hodges-Lehmann change with "
                             "Tukey's interval\n");
    if (floor_word || fast_word || state_word || spend_word) {
        const char *words[4] = {floor_word ? "floor" : NULL, fast_word ? "fast state" : NULL,
                                state_word ? "process state" : NULL,
                                spend_word ? "spending" : NULL};
        size_t shown = 0, total = floor_word + fast_word + state_word + spend_word;
        rc |= cg_buf_adds(b, "\nThe words ");
        for (size_t k = 0; k < 4; k++) {
            if (words[k] == NULL)
                continue;
            rc |= cg_buf_printf(b, "%s_%s_", shown == 0 ? "" : shown + 1 == total ? " and " : ", ",
                                words[k]);
            shown++;
        }
        rc |= cg_buf_adds(b, " are explained in the glossary at the top of docs/statistics.md in "
                             "canary-gate's repository.\n");
    }
    return rc;
}

static int finding_item(struct cg_buf *b, const struct cg_finding *f)
{
    int rc = cg_buf_printf(b, "- %s **%s**: ",
                           f->severity == CG_DIAG_WARNING ? "\xe2\x9a\xa0\xef\xb8\x8f"
                                                          : "\xe2\x84\xb9\xef\xb8\x8f",
                           cg_diag_rule_title(f->rule));
    rc |= cg_md_escape(b, f->finding, CG_DIAG_TEXT_MAX);
    rc |= cg_buf_adds(b, "  \n  _Try:_ ");
    rc |= cg_md_escape(b, f->action, 1024);
    return rc | cg_buf_adds(b, "\n");
}

static int add_diagnosis(struct cg_buf *b, const struct cg_verdict *v, size_t reserve)
{
    const struct cg_diagnosis *d = &v->diagnosis;
    int rc = cg_buf_adds(b, "\n### Diagnosis\n\n");
    if (d->n == 0)
        return rc | cg_buf_adds(b, "No known pattern stands out in what was measured.\n");
    rc |= cg_buf_adds(b, "What the measurements point to, with the evidence and what to try "
                         "(never part of the verdict). \xe2\x9a\xa0\xef\xb8\x8f new or grown "
                         "against the baseline; \xe2\x84\xb9\xef\xb8\x8f present on both "
                         "sides.\n\n");
    struct cg_buf item;
    cg_buf_init(&item, 16384);
    size_t shown = 0;
    for (size_t i = 0; i < d->n && rc == 0; i++) {
        cg_buf_reset(&item);
        if (finding_item(&item, &d->items[i]) != 0 ||
            b->len + item.len + reserve + 128 > CG_REPORT_MAX_BYTES)
            break;
        rc = cg_buf_add(b, item.data, item.len);
        shown++;
    }
    cg_buf_release(&item);
    size_t more = d->n - shown + d->n_dropped;
    if (rc == 0 && more > 0)
        rc = cg_buf_printf(b, "\n_%zu more findings not shown._\n", more);
    return rc;
}

static int chart_caption(struct cg_buf *b, const struct cg_verdict *v, size_t n, size_t nb,
                         size_t nc, size_t points)
{
    int rc = cg_buf_printf(b, "\nGrey: baseline (median of %zu runs per step); red: this run "
                              "(median of %zu runs). ",
                           v->baseline->n_runs, v->current->n_runs);
    if (nb != nc)
        rc |= cg_buf_printf(b, "The first %zu steps of each side (baseline %zu, this run %zu). ",
                            n, nb, nc);
    if (points < n)
        rc |= cg_buf_printf(b, "%zu steps in %zu points, each the mean of consecutive steps.\n",
                            n, points);
    else
        rc |= cg_buf_printf(b, "%zu steps, one point each.\n", n);
    return rc;
}

/* The step-time chart in at most CG_CHART_MAX_POINTS points, fewer when space is short, or a
 * note that it was left out; nothing when a side has fewer than two steps. */
static int add_chart(struct cg_buf *b, const struct cg_verdict *v, size_t reserve)
{
    double *base = NULL, *cur = NULL;
    size_t nb = 0, nc = 0;
    struct cg_buf sec;
    cg_buf_init(&sec, CG_REPORT_MAX_BYTES);
    int rc = cg_chart_step_medians(v->baseline, &base, &nb);
    if (rc == 0)
        rc = cg_chart_step_medians(v->current, &cur, &nc);
    size_t n = nb < nc ? nb : nc;
    bool placed = n < 2;
    for (size_t points = CG_CHART_MAX_POINTS; rc == 0 && !placed && points >= 25; points /= 2) {
        cg_buf_reset(&sec);
        rc = cg_buf_adds(&sec, "\n### Step times\n\n");
        rc |= cg_chart_mermaid(&sec, base, cur, n, points);
        rc |= chart_caption(&sec, v, n, nb, nc, points < n ? points : n);
        if (rc == 0 && b->len + sec.len + reserve <= CG_REPORT_MAX_BYTES) {
            rc = cg_buf_add(b, sec.data, sec.len);
            placed = true;
        }
    }
    static const char left_out[] = "\n_The step-time chart was left out to keep the comment "
                                   "within GitHub's size limit._\n";
    if (rc == 0 && !placed && b->len + sizeof(left_out) + reserve <= CG_REPORT_MAX_BYTES)
        rc = cg_buf_adds(b, left_out);
    cg_buf_release(&sec);
    free(base);
    free(cur);
    return rc;
}

static int op_row(struct cg_buf *b, const struct cg_op_delta *d)
{
    char base[32], cur[32], delta[32], pct[32];
    cg_fmt_ns(d->base_ns, base, sizeof(base));
    cg_fmt_ns(d->cur_ns, cur, sizeof(cur));
    cg_fmt_ns(d->delta_ns, delta, sizeof(delta));
    cg_fmt_pct(d->delta_pct, pct, sizeof(pct));
    const char *status = d->status == CG_OPD_NEW        ? "new"
                         : d->status == CG_OPD_VANISHED ? "vanished"
                         : d->significant               ? "significant"
                                                        : "";
    int rc = cg_buf_adds(b, "| ");
    rc |= cg_md_escape(b, d->name, CG_REPORT_MD_NAME_MAX_BYTES);
    rc |= cg_buf_printf(b, " | %s | %s | %s | %s%s | %s | %s |\n", cg_op_kind_name(d->kind), base,
                        cur, delta[0] == '-' ? "" : "+", delta, pct, status);
    return rc;
}

static int add_ops(struct cg_buf *b, const struct cg_verdict *v, size_t reserve)
{
    int rc = cg_buf_printf(b, "\n### Top op changes (time per step)\n\nDiagnostics only: op "
                              "changes never decide the verdict. %zu ops compared, %zu new, "
                              "%zu vanished, %zu significant after false-discovery control.\n\n",
                           v->n_ops_compared, v->n_ops_new, v->n_ops_vanished,
                           v->n_ops_significant);
    if (v->n_ops == 0)
        return rc | cg_buf_adds(b, "No op takes a noticeable share of the step.\n");
    rc |= cg_buf_adds(b, "| Op | Kind | Baseline | Current | Change | % | |\n"
                         "|---|---|---:|---:|---:|---:|---|\n");
    size_t limit = (size_t)v->thresholds->ops_top_n, shown = 0;
    struct cg_buf row;
    cg_buf_init(&row, 4096);
    for (size_t i = 0; i < v->n_ops && shown < limit && rc == 0; i++) {
        cg_buf_reset(&row);
        if (op_row(&row, &v->ops[i]) != 0)
            break;
        if (b->len + row.len + reserve + 128 > CG_REPORT_MAX_BYTES)
            break;
        rc = cg_buf_add(b, row.data, row.len);
        shown++;
    }
    cg_buf_release(&row);
    if (rc == 0 && shown < v->n_ops)
        rc = cg_buf_printf(b, "\n_%zu more ops not shown._\n", v->n_ops - shown);
    return rc;
}

/* Longest text of an environment cell, in bytes of the artifact's string. */
#define CELL_MAX_BYTES 200
/* Longest canary command text built for its cell (the cell shows CELL_MAX_BYTES of it). */
#define COMMAND_MAX_BYTES 1024

/* One cell's text: escaped, and when longer than CELL_MAX_BYTES, cut with a note of its full
 * length (total, in bytes; 0: strlen(s)). */
static int env_cell(struct cg_buf *b, const char *s, size_t total)
{
    if (s == NULL)
        return cg_buf_adds(b, "n/a");
    if (total == 0)
        total = strlen(s);
    int rc = cg_md_escape(b, s, CELL_MAX_BYTES);
    if (total > CELL_MAX_BYTES)
        rc |= cg_buf_printf(b, " (cut: %zu bytes in all)", total);
    return rc;
}

static int env_row(struct cg_buf *b, const char *label, const char *x, size_t x_total,
                   const char *y, size_t y_total)
{
    int rc = cg_buf_printf(b, "| %s | ", label);
    rc |= env_cell(b, x, x_total);
    rc |= cg_buf_adds(b, " | ");
    rc |= env_cell(b, y, y_total);
    return rc | cg_buf_adds(b, " |\n");
}

/* The canary command as one line, its first COMMAND_MAX_BYTES into out; *total receives the
 * whole line's length. */
static int command_text(const struct cg_env *e, struct cg_buf *out, size_t *total)
{
    int rc = 0;
    *total = 0;
    for (size_t i = 0; i < e->n_canary_command && rc == 0; i++) {
        /* an artifact written before redaction, or under other secrets, shows none of them */
        char *shown = cg_redact_apply(cg_redact_default(), e->canary_command[i]);
        if (shown == NULL)
            return CG_ENOMEM;
        const char *arg = shown;
        size_t n = strlen(arg) + (i ? 1 : 0);
        if (rc == 0 && out->len + n <= COMMAND_MAX_BYTES)
            rc = cg_buf_printf(out, "%s%s", i ? " " : "", arg);
        else if (rc == 0 && out->len < COMMAND_MAX_BYTES)
            rc = cg_buf_printf(out, "%s%.*s", i ? " " : "",
                               (int)(COMMAND_MAX_BYTES - out->len - (i ? 1 : 0)), arg);
        *total += n;
        free(shown);
    }
    return rc;
}

static int add_details(struct cg_buf *b, const struct cg_verdict *v)
{
    const struct cg_env *x = &v->baseline->env, *y = &v->current->env;
    char gx[32], gy[32];
    snprintf(gx, sizeof(gx), "%lld", (long long)x->gpu_count);
    snprintf(gy, sizeof(gy), "%lld", (long long)y->gpu_count);
    struct cg_buf cx, cy;
    size_t tx = 0, ty = 0;
    cg_buf_init(&cx, COMMAND_MAX_BYTES + 1);
    cg_buf_init(&cy, COMMAND_MAX_BYTES + 1);
    int rc = command_text(x, &cx, &tx) | command_text(y, &cy, &ty);
    rc |= cg_buf_adds(b, "\n<details><summary>Environment</summary>\n\n| | Baseline | This run |\n"
                         "|---|---|---|\n");
    rc |= env_row(b, "GPU", x->gpu_model, 0, y->gpu_model, 0);
    rc |= env_row(b, "GPU count", gx, 0, gy, 0);
    rc |= env_row(b, "Driver", x->driver_version, 0, y->driver_version, 0);
    if (v->baseline->env.gpu_env.recorded || v->current->env.gpu_env.recorded) {
        char sx[200], sy[200];
        cg_gpu_env_text(&v->baseline->env.gpu_env, sx, sizeof(sx));
        cg_gpu_env_text(&v->current->env.gpu_env, sy, sizeof(sy));
        rc |= env_row(b, "GPU settings", sx, 0, sy, 0);
    }
    rc |= env_row(b, "CUDA", x->cuda_version, 0, y->cuda_version, 0);
    rc |= env_row(b, "CUPTI", x->cupti_status, 0, y->cupti_status, 0);
    rc |= env_row(b, "CPU", x->cpu_model, 0, y->cpu_model, 0);
    rc |= env_row(b, "canary-gate", x->tool_version, 0, y->tool_version, 0);
    rc |= env_row(b, "Canary", cg_buf_str(&cx), tx, cg_buf_str(&cy), ty);
    rc |= env_row(b, "Canary hash", x->canary_hash, 0, y->canary_hash, 0);
    rc |= env_row(b, "Recorded", v->baseline->created_utc, 0, v->current->created_utc, 0);
    rc |= cg_buf_adds(b, "\n</details>\n");
    cg_buf_release(&cx);
    cg_buf_release(&cy);
    double alpha = v->thresholds->metric[CG_M_STEP_TIME_MEAN].alpha;
    rc |= cg_buf_printf(
        b,
        "\n<details><summary>How this was decided</summary>\n\n"
        "Each run (one canary process) is one sample. Timing metrics compare the per-run values "
        "of the two sides with a one-sided Mann-Whitney test (p) and a Hodges-Lehmann estimate "
        "of the ratio with its distribution-free %.0f%% interval. A metric fails only when the "
        "change exceeds its threshold and p is at most alpha (%.3g) with enough runs; beyond the "
        "threshold without that evidence it is inconclusive. With a single run on a side, steps "
        "are resampled in blocks within the run. Peak memory is gated with fixed tolerances. "
        "Op changes are controlled for false discoveries and never decide.\n\n</details>\n",
        (1.0 - 2.0 * alpha) * 100.0, alpha);
    return rc;
}

static int add_ranks(struct cg_buf *b, const struct cg_verdict *v)
{
    return cg_report_ranks_markdown(v->baseline, v->current, b);
}

/* A section of the report placed whole, or left out with a note when the report's size does not
 * hold it. Sections are kept by rank (0 first) while they fit; the document keeps their order. */
struct part {
    int (*render)(struct cg_buf *b, const struct cg_verdict *v);
    unsigned rank;
    const char *left_out; /* the note's subject: "The counts per step were" */
};

/* In document order; the folded details (last) come after the diagnosis, chart and op table. */
static const struct part parts[] = {
    {add_banners, 1, "Warnings about this comparison were"},
    {add_warnings_current, 9, "The injection library's warnings on this run were"},
    {add_warnings_baseline, 11, "The injection library's warnings on the baseline were"},
    {add_within_run, 5, "A note on sides of fewer than 3 runs was"},
    {add_metric_table, 0, "The metric table was"},
    {add_runs_line, 2, "The run summary was"},
    {cg_report_md_counts, 3, "The counts per step were"},
    {cg_report_md_where, 8, "Where the host made the changed counts was"},
    {cg_report_md_count_notes, 3, "Notes on the counts were"},
    {cg_report_md_anatomy, 4, "The anatomy of a step was"},
    {add_ranks, 10, "The ranks were"},
    {add_details, 6, "The environment and the method were"},
};
#define N_PARTS (sizeof(parts) / sizeof(parts[0]))
#define DETAILS_PART (N_PARTS - 1)
#define PART_MAX_RANK 11
/* Room kept for the diagnosis heading and its "N more" line, and the op section's. */
#define FLEX_RESERVE (OPS_RESERVE + 512)

static int left_out_note(struct cg_buf *b, const struct part *p)
{
    return cg_buf_printf(b, "\n_%s left out to keep the comment within GitHub's size limit._\n\n",
                         p->left_out);
}

/* Part i as placed: its text when kept, else its note (nothing for an empty part). */
static int place_part(struct cg_buf *out, size_t i, const struct cg_buf *text, bool kept)
{
    if (kept)
        return cg_buf_add(out, text->data, text->len);
    return text->len > 0 ? left_out_note(out, &parts[i]) : 0;
}

/* Decides which parts are kept: by rank while the texts, with the notes of those left out, fit
 * in budget bytes. A part that could not be rendered within the limit is left out. */
static void choose_parts(const struct cg_buf text[N_PARTS], const bool failed[N_PARTS],
                         size_t budget, bool kept[N_PARTS])
{
    size_t note[N_PARTS], used = 0;
    for (size_t i = 0; i < N_PARTS; i++) {
        struct cg_buf probe;
        cg_buf_init(&probe, 1024);
        note[i] = text[i].len > 0 || failed[i]
                      ? (left_out_note(&probe, &parts[i]) == 0 ? probe.len : 1024)
                      : 0;
        cg_buf_release(&probe);
        used += note[i];
        kept[i] = false;
    }
    for (unsigned r = 0; r <= PART_MAX_RANK; r++)
        for (size_t i = 0; i < N_PARTS; i++)
            if (parts[i].rank == r && !failed[i] && used - note[i] + text[i].len <= budget) {
                kept[i] = true;
                used = used - note[i] + text[i].len;
            }
}

int cg_report_markdown(const struct cg_verdict *v, const char *gate_id, struct cg_buf *out,
                       struct cg_err *err)
{
    struct cg_buf text[N_PARTS];
    bool failed[N_PARTS], kept[N_PARTS];
    int rc = add_marker(out, v, gate_id);
    rc |= add_headline(out, v);
    for (size_t i = 0; i < N_PARTS; i++) {
        cg_buf_init(&text[i], CG_REPORT_MAX_BYTES);
        failed[i] = parts[i].render(&text[i], v) != 0;
    }
    size_t fixed = out->len + FLEX_RESERVE;
    choose_parts(text, failed, fixed < CG_REPORT_MAX_BYTES ? CG_REPORT_MAX_BYTES - fixed : 0, kept);
    for (size_t i = 0; i < DETAILS_PART && rc == 0; i++)
        rc = place_part(out, i, &text[i], kept[i]);
    struct cg_buf tail;
    cg_buf_init(&tail, CG_REPORT_MAX_BYTES);
    if (rc == 0)
        rc = place_part(&tail, DETAILS_PART, &text[DETAILS_PART], kept[DETAILS_PART]);
    if (rc == 0)
        rc = add_diagnosis(out, v, tail.len + OPS_RESERVE);
    if (rc == 0)
        rc = add_chart(out, v, tail.len + OPS_RESERVE);
    if (rc == 0)
        rc = add_ops(out, v, tail.len);
    if (rc == 0)
        rc = cg_buf_add(out, tail.data, tail.len);
    cg_buf_release(&tail);
    for (size_t i = 0; i < N_PARTS; i++)
        cg_buf_release(&text[i]);
    if (rc != 0)
        return cg_err_set(err, CG_ENOMEM, "cannot render the markdown report: out of memory");
    return 0;
}

int cg_report_md_footer(struct cg_buf *md, const char *by)
{
    if (by != NULL)
        return cg_buf_printf(md, "<sub>canary-gate %s (%s)</sub>\n", CG_VERSION, by);
    return cg_buf_printf(md, "<sub>canary-gate %s</sub>\n", CG_VERSION);
}
