/*
 * report_term: the terminal table, op changes, diagnosis and verdict line (see report.h).
 */
#include "report.h"
#include "report_ranks.h"

#include "anatomy.h"
#include "sequential.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define TERM_OPS 10

static const char *color_of(enum cg_outcome o, bool color)
{
    if (!color)
        return "";
    return o == CG_OUT_FAIL ? "\x1b[31m" : o == CG_OUT_INCONCLUSIVE ? "\x1b[33m" : "\x1b[32m";
}

/* "diagnosis:" and one entry a finding: severity, rule, evidence, then the action indented. */
static int add_diagnosis(struct cg_buf *out, const struct cg_diagnosis *d, bool color)
{
    if (d->n == 0)
        return 0;
    int rc = cg_buf_adds(out, "\ndiagnosis (never part of the verdict):\n");
    for (size_t i = 0; i < d->n && rc == 0; i++) {
        const struct cg_finding *f = &d->items[i];
        bool warn = f->severity == CG_DIAG_WARNING;
        rc = cg_buf_printf(out, "  %s%-7s%s %s: ", color && warn ? "\x1b[33m" : "",
                           cg_diag_severity_name(f->severity), color && warn ? "\x1b[0m" : "",
                           cg_diag_rule_name(f->rule));
        rc |= cg_term_escape(out, f->finding, CG_DIAG_TEXT_MAX);
        rc |= cg_buf_adds(out, "\n          try: ");
        rc |= cg_term_escape(out, f->action, 1024);
        rc |= cg_buf_adds(out, "\n");
    }
    if (rc == 0 && d->n_dropped > 0)
        rc = cg_buf_printf(out, "  (%zu more findings)\n", d->n_dropped);
    return rc;
}

/* "counts per step:" and the rows that changed or fail; one line when none did. */
static int add_counts(struct cg_buf *out, const struct cg_verdict *v, bool color)
{
    const struct cg_counts *c = &v->counts;
    const char *reset = color ? "\x1b[0m" : "";
    if (c->n == 0)
        return 0;
    int rc = cg_buf_printf(out, "\ncounts per step (exact, not runner-dependent): %zu compared, "
                                "%zu changed, %zu varying\n",
                           c->n_compared, c->n_changed, c->n_varying);
    for (size_t i = 0; i < c->n && rc == 0; i++) {
        const struct cg_count_result *r = &c->rows[i];
        if (!cg_report_count_listed(r))
            continue;
        char base[32], cur[32], d[32], allowed[64];
        cg_report_count_value(r->baseline, base, sizeof(base));
        cg_report_count_value(r->current, cur, sizeof(cur));
        cg_report_count_change(r, d, sizeof(d));
        cg_report_count_allowed(r, v->thresholds, allowed, sizeof(allowed));
        rc = cg_buf_printf(out, "  %8s -> %-8s %8s  allowed %-14s %s%s%s  %s", base, cur, d,
                           allowed, color_of(r->outcome, color), cg_outcome_name(r->outcome),
                           reset, r->row >= 0 ? cg_count_name(r->row) : "range ");
        if (r->row < 0)
            rc |= cg_term_escape(out, r->name, 100);
        rc |= cg_buf_adds(out, "\n");
        for (size_t k = 0; cg_report_where_shown(r) && k < r->n_where && rc == 0; k++) {
            char head[96], tail[64];
            cg_report_where_parts(&r->where[k], head, sizeof(head), tail, sizeof(tail));
            rc = cg_buf_printf(out, "%46s%s", "", head);
            if (r->where[k].range != NULL)
                rc |= cg_term_escape(out, r->where[k].range, 100);
            rc |= cg_buf_printf(out, "%s\n", tail);
        }
    }
    return rc;
}

/* "step anatomy:" each part's share of the step on both sides, and the gated ones' outcomes
 * (anatomy.h). */
static int add_anatomy(struct cg_buf *out, const struct cg_verdict *v)
{
    const struct cg_anatomy *an = &v->anatomy;
    int rc = 0;
    if (an->n > 0)
        rc = cg_buf_adds(out, "\nstep anatomy (share of step time, baseline -> current; GPU idle "
                              "and exposed communication gated in points of the step):\n");
    for (size_t i = 0; i < an->n && rc == 0; i++) {
        const struct cg_anatomy_part *p = &an->parts[i];
        char base[16] = "-", cur[16] = "-";
        if (!isnan(p->baseline))
            snprintf(base, sizeof(base), "%.1f%%", 100.0 * p->baseline);
        if (!isnan(p->current))
            snprintf(cur, sizeof(cur), "%.1f%%", 100.0 * p->current);
        rc = cg_buf_printf(out, "  %7s -> %7s  %s", base, cur, cg_anatomy_label(p->kind));
        if (p->kind == CG_ANAT_GPU_IDLE && cg_anatomy_copies_as_idle(an))
            rc |= cg_buf_adds(out, ", copies counted as idle");
        if (p->kind == CG_ANAT_EXPOSED_COMM && an->comm_named_differently)
            rc |= cg_buf_adds(out, ", not gated: CANARY_GATE_COMM_KERNELS differs");
        if (p->kind == CG_ANAT_RANGE) {
            rc |= cg_buf_adds(out, " ");
            rc |= cg_term_escape(out, p->name, 100);
        }
        if (p->outcome != CG_OUT_NOT_GATED && p->outcome != CG_OUT_UNAVAILABLE)
            rc |= cg_buf_printf(out, "  [%s: %+.1f points, p = %.3g, limit +%.1f]",
                                cg_outcome_name(p->outcome), p->shift_points, p->p_value,
                                p->threshold_points);
        rc |= cg_buf_adds(out, "\n");
    }
    return rc;
}

/* The GPU's own state (gpu_rule.h): settings that differ, runs it held back, clocks that moved
 * (numbers and fixed words only). */
static int gpu_lines(const struct cg_verdict *v, struct cg_buf *out)
{
    const struct cg_gpu_check *g = &v->gpu;
    int rc = 0;
    if (g->settings_diff[0])
        rc |= cg_buf_printf(out, "note: GPU settings differ (%s): not a different machine by "
                                 "itself\n",
                            g->settings_diff);
    if (g->reason[0])
        rc |= cg_buf_printf(out, "note: the GPU's own state: %s%s\n", g->reason,
                            g->decided ? " (a regression they decide is inconclusive)" : "");
    if (g->clocks_moved)
        rc |= cg_buf_printf(out, "note: %s%s\n", g->clock_reason,
                            g->decided ? " (a regression is inconclusive)" : "");
    return rc;
}

int cg_report_terminal(const struct cg_verdict *v, bool color, struct cg_buf *out,
                       struct cg_err *err)
{
    const char *reset = color ? "\x1b[0m" : "";
    int rc = cg_buf_printf(out, "%-20s %14s %14s %26s %8s %14s  %s\n", "metric", "baseline",
                           "current", "change (interval)", "p", "threshold", "outcome");
    for (int m = 0; m < CG_M_COUNT && rc == 0; m++) {
        const struct cg_metric_result *r = &v->metrics[m];
        char base[48], cur[48], ci[160], p[32], th[32];
        if (!cg_report_metric_shown(v, (enum cg_metric)m))
            continue;
        cg_fmt_metric(r->metric, r->baseline, base, sizeof(base));
        cg_fmt_metric(r->metric, r->current, cur, sizeof(cur));
        if (r->outcome == CG_OUT_UNAVAILABLE)
            snprintf(ci, sizeof(ci), "-");
        else
            cg_report_change_text(r, ci, sizeof(ci));
        if (isnan(r->p_value))
            snprintf(p, sizeof(p), "-");
        else
            snprintf(p, sizeof(p), "%.3g", r->p_value);
        if (isnan(r->threshold_pct)) /* a thresholds file without this metric */
            snprintf(th, sizeof(th), "none");
        else
            snprintf(th, sizeof(th), "%s%.1f%%",
                     cg_metric_higher_is_worse(r->metric) ? "+" : "-", r->threshold_pct);
        rc =
            cg_buf_printf(out, "%-20s %14s %14s %26s %8s %14s  %s%s%s%s", cg_metric_name(r->metric),
                          base, cur, ci, p, th, color_of(r->outcome, color),
                          cg_outcome_name(r->outcome), reset, r->note[0] ? ": " : "");
        rc |= cg_report_note(r->note, CG_TEXT_TERMINAL, out); /* it may quote artifact text */
        rc |= cg_buf_adds(out, "\n");
    }
    const struct cg_metric_result *f = &v->metrics[CG_M_STEP_TIME_FLOOR];
    if (f->method == CG_METHOD_FAST_RUNS)
        rc |= cg_buf_printf(out, "note: step_time_floor over the runs in the %s fast state: "
                                 "%zu of %zu baseline, %zu of %zu current\n",
                            f->own_states ? "sides' own" : "pooled", f->fast_runs[0],
                            v->baseline->n_runs, f->fast_runs[1], v->current->n_runs);
    char states[400];
    cg_report_states_text(v, states, sizeof(states));
    if (states[0])
        rc |= cg_buf_printf(out, "note: %s\n", states);
    rc |= cg_report_kernel_choices(v, false, out);
    rc |= cg_report_code_change(v, false, out);
    if (v->machine_diff != NULL && strcmp(v->machine_diff, CG_SHAPE_DIFF) == 0)
        rc |= cg_buf_printf(out,
                            "warning: different machine: the node shape differs (baseline %s; "
                            "this run %s)%s\n",
                            v->shape[0][0] ? v->shape[0] : "one process",
                            v->shape[1][0] ? v->shape[1] : "one process",
                            v->downgraded ? ": a regression is reported as inconclusive" : "");
    else if (v->machine_diff != NULL)
        rc |= cg_buf_printf(out, "warning: different machine (%s differs)%s\n", v->machine_diff,
                            v->downgraded ? ": a regression is reported as inconclusive" : "");
    if (v->canary_diff != NULL)
        rc |= cg_buf_printf(out, "note: canary configuration changed (%s differs); still gated\n",
                            v->canary_diff);
    rc |= gpu_lines(v, out);
    if (v->accepted != NULL) {
        char commit[64];
        cg_report_short_commit(v->accepted->commit, commit, sizeof(commit));
        rc |= cg_buf_adds(out, "note: baseline accepted at ");
        rc |= cg_term_escape(out, commit, sizeof(commit));
        if (v->accepted->who != NULL) {
            rc |= cg_buf_adds(out, " by ");
            rc |= cg_term_escape(out, v->accepted->who, 100);
        }
        rc |= cg_buf_adds(out, ": ");
        rc |= cg_term_escape(out, v->accepted->reason ? v->accepted->reason : "", 500);
        rc |= cg_buf_printf(out, " (%zu runs of main since)\n", v->accepted_runs_since);
    }
    const struct cg_artifact *nogpu = !v->current->gpu_available    ? v->current
                                      : !v->baseline->gpu_available ? v->baseline
                                                                    : NULL;
    if (nogpu != NULL) {
        rc |= cg_buf_printf(out, "note: GPU metrics unavailable on %s: ",
                            nogpu == v->current ? "this run" : "the baseline");
        rc |= cg_term_escape(out, nogpu->gpu_reason ? nogpu->gpu_reason : "no reason recorded", 300);
        const char *advice = cg_report_gpu_advice(nogpu->gpu_reason);
        if (advice != NULL)
            rc |= cg_buf_printf(out, "; to measure the GPU: %s", advice);
        rc |= cg_buf_adds(out, "\n");
    }
    char stopped_cur[160], stopped_base[160];
    cg_report_stopped_text(v->current, stopped_cur, sizeof(stopped_cur));
    cg_report_stopped_text(v->baseline, stopped_base, sizeof(stopped_base));
    if (stopped_cur[0] || stopped_base[0])
        rc |= cg_buf_printf(out, "note: canary stopped once measured: %s%s%s%s%s\n",
                            stopped_cur[0] ? "this run: " : "", stopped_cur,
                            stopped_cur[0] && stopped_base[0] ? "; " : "",
                            stopped_base[0] ? "baseline: " : "", stopped_base);
    char src_cur[256], src_base[256];
    cg_report_sources_text(v->current, src_cur, sizeof(src_cur));
    cg_report_sources_text(v->baseline, src_base, sizeof(src_base));
    if (strcmp(src_cur, src_base) == 0)
        rc |= cg_buf_printf(out, "note: %s\n", src_cur);
    else
        rc |= cg_buf_printf(out, "note: this run: %s; baseline: %s\n", src_cur, src_base);
    if (v->within_run)
        rc |= cg_buf_adds(out, "note: a side has fewer than 3 runs: timing is shown, compared "
                               "within the runs (block bootstrap), and not judged (one process "
                               "cannot show how much processes differ)\n");
    char looks[512] = "", confirm[512] = "";
    if (v->seq != NULL) {
        cg_seq_describe_looks(v->seq, looks, sizeof(looks));
        cg_seq_describe_confirmation(v->seq, v, confirm, sizeof(confirm));
    }
    if (looks[0])
        rc |= cg_buf_printf(out, "note: %s\n", looks);
    if (confirm[0])
        rc |= cg_buf_printf(out, "note: %s\n", confirm);
    if (v->metrics[CG_M_STEP_TIME_MEAN].method == CG_METHOD_PAIRED)
        rc |= cg_buf_adds(out, "note: runs paired (base and head turn about): Wilcoxon signed-rank "
                               "on the per-pair ratios\n");
    if (v->n_ops > 0)
        rc |= cg_buf_printf(out, "\ntop op changes per step (diagnostics, %zu ops compared):\n",
                            v->n_ops_compared);
    for (size_t i = 0; i < v->n_ops && i < TERM_OPS && rc == 0; i++) {
        const struct cg_op_delta *o = &v->ops[i];
        char delta[32], pct[32];
        cg_fmt_ns(o->delta_ns, delta, sizeof(delta));
        cg_fmt_pct(o->delta_pct, pct, sizeof(pct));
        rc = cg_buf_printf(out, "  %s%-12s %8s  %-7s ", delta[0] == '-' ? "" : "+", delta, pct,
                           cg_op_kind_name(o->kind));
        rc |= cg_term_escape(out, o->name, 100);
        rc |= cg_buf_adds(out, o->status == CG_OPD_NEW        ? "  (new)\n"
                               : o->status == CG_OPD_VANISHED ? "  (vanished)\n"
                                                              : "\n");
    }
    rc |= add_counts(out, v, color);
    rc |= add_anatomy(out, v);
    rc |= cg_report_ranks_term(v->baseline, v->current, out);
    rc |= add_diagnosis(out, &v->diagnosis, color);
    rc |= cg_buf_printf(out, "\n%scanary-gate ", color_of(v->overall, color));
    rc |= cg_verdict_headline_for(v, CG_TEXT_TERMINAL, out);
    rc |= cg_buf_printf(out, "%s\n", reset);
    if (rc != 0)
        return cg_err_set(err, CG_ENOMEM, "cannot render the report: out of memory");
    return 0;
}
