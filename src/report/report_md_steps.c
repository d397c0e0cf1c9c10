/*
 * report_md_steps: the markdown report's sections on what a step does (see report_md.c): the
 * counts per step, where the host made the changed counts, the notes on the counts, and the
 * anatomy of a step. Each renders into its own buffer; report_md.c keeps or leaves out the whole
 * section by importance. Every string from an artifact is escaped.
 */
#include "report_md_internal.h"

#include "anatomy.h"
#include "chart.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

const char *cg_report_md_icon(enum cg_outcome o)
{
    switch (o) {
    case CG_OUT_PASS:
        return "\xe2\x9c\x85 pass";
    case CG_OUT_IMPROVED:
        return "\xf0\x9f\x9a\x80 improved";
    case CG_OUT_FAIL:
        return "\xe2\x9d\x8c fail";
    case CG_OUT_INCONCLUSIVE:
        return "\xe2\x9a\xa0\xef\xb8\x8f inconclusive";
    case CG_OUT_NOT_GATED:
        return "shown, not gated";
    default:
        return "n/a";
    }
}

/* Count rows shown at most (the changed ones; the rest are counted). */
#define COUNTS_SHOWN 20

static int count_row(struct cg_buf *b, const struct cg_verdict *v, const struct cg_count_result *r)
{
    char base[32], cur[32], d[32], allowed[64];
    cg_report_count_value(r->baseline, base, sizeof(base));
    cg_report_count_value(r->current, cur, sizeof(cur));
    cg_report_count_change(r, d, sizeof(d));
    cg_report_count_allowed(r, v->thresholds, allowed, sizeof(allowed));
    int rc = cg_buf_printf(b, "| %s", cg_report_count_label(r));
    if (r->row < 0) {
        rc |= cg_buf_adds(b, " ");
        rc |= cg_md_escape(b, r->name, CG_REPORT_MD_NAME_MAX_BYTES);
    }
    if (r->outcome == CG_OUT_UNAVAILABLE)
        return rc | cg_buf_printf(b,
                                  " | %s | %s | &mdash; | &mdash; | n/a: measured on one side "
                                  "only |\n",
                                  base, cur);
    return rc | cg_buf_printf(b, " | %s | %s | %s | %s | %s%s |\n", base, cur, d[0] ? d : "0",
                              allowed, cg_report_md_icon(r->outcome),
                              r->other_machine ? ": measured on a different machine" : "");
}

/* Places listed per count row at most. */
#define WHERE_SHOWN 5

/* Where the changed synchronisations, pageable copies, allocations and releases were made: a line
 * per count row that knows, its places (the NVTX range the host thread was in, or had last ended).
 */
int cg_report_md_where(struct cg_buf *b, const struct cg_verdict *v)
{
    const struct cg_counts *c = &v->counts;
    int rc = 0;
    bool first = true;
    for (size_t i = 0; i < c->n; i++) {
        const struct cg_count_result *r = &c->rows[i];
        if (!cg_report_where_shown(r))
            continue;
        if (first)
            rc |= cg_buf_adds(b, "\nWhere the host made them (the NVTX range its thread was in, "
                                 "or had last ended):\n\n");
        first = false;
        rc |= cg_buf_printf(b, "- %s:", cg_count_label(r->row));
        for (size_t k = 0; k < r->n_where && k < WHERE_SHOWN; k++) {
            char head[96], tail[64];
            cg_report_where_parts(&r->where[k], head, sizeof(head), tail, sizeof(tail));
            rc |= cg_buf_printf(b, "%s %s", k > 0 ? ";" : "", head);
            if (r->where[k].range != NULL) {
                rc |= cg_buf_adds(b, "**");
                rc |= cg_md_escape(b, r->where[k].range, CG_REPORT_MD_NAME_MAX_BYTES);
                rc |= cg_buf_adds(b, "**");
            }
            rc |= cg_buf_adds(b, tail);
        }
        if (r->n_where > WHERE_SHOWN)
            rc |= cg_buf_printf(b, "; %zu more places", r->n_where - WHERE_SHOWN);
        rc |= cg_buf_adds(b, "\n");
    }
    return rc;
}

/* The counts section: what each step does, exactly; the rows that changed (or fail), then how
 * many did not. Nothing when neither side measured a count. */
int cg_report_md_counts(struct cg_buf *b, const struct cg_verdict *v)
{
    const struct cg_counts *c = &v->counts;
    if (c->n == 0)
        return 0;
    int rc = cg_buf_printf(b,
                           "\n### Counts per step\n\nWhat each step does, counted exactly "
                           "(kernels, synchronisations, copies, allocations, recompilations, "
                           "NVTX ranges). Counts do not depend on the runner: a change is the "
                           "code's, decided on the first run with no statistics. %zu compared, "
                           "%zu changed.\n\n",
                           c->n_compared, c->n_changed);
    size_t shown = 0, listed = 0;
    for (size_t i = 0; i < c->n; i++) {
        const struct cg_count_result *r = &c->rows[i];
        if (!cg_report_count_listed(r))
            continue;
        listed++;
        if (shown == COUNTS_SHOWN)
            continue;
        if (shown == 0)
            rc |= cg_buf_adds(b, "| Count | Baseline | Current | Change | Allowed | Outcome |\n"
                                 "|---|---:|---:|---:|---:|---|\n");
        rc |= count_row(b, v, r);
        shown++;
    }
    if (listed > shown)
        rc |= cg_buf_printf(b, "\n_%zu more changed counts not shown._\n", listed - shown);
    if (listed == 0)
        rc |= cg_buf_adds(b, "Every count is the same as the baseline's.\n");
    return rc;
}

/* What the counts section says after its rows and places: kernels new and vanished, counts that
 * fell, counts that vary. */
int cg_report_md_count_notes(struct cg_buf *b, const struct cg_verdict *v)
{
    const struct cg_counts *c = &v->counts;
    int rc = 0;
    if (c->n == 0)
        return 0;
    size_t new_k = 0, gone_k = 0;
    for (size_t i = 0; i < v->n_ops; i++)
        if (v->ops[i].kind == CG_OP_KERNEL) {
            new_k += v->ops[i].status == CG_OPD_NEW;
            gone_k += v->ops[i].status == CG_OPD_VANISHED;
        }
    if (new_k + gone_k > 0)
        rc |= cg_buf_printf(b,
                            "\nKernels against the baseline: %zu new, %zu vanished (in the op "
                            "table below).\n",
                            new_k, gone_k);
    if (c->n_improved > 0)
        rc |= cg_buf_printf(b,
                            "\n%zu count%s fell: record the baseline again to hold the "
                            "improvement.\n",
                            c->n_improved, c->n_improved == 1 ? "" : "s");
    size_t varying = 0; /* of the gated counts: those shown, not gated, take no tolerance */
    for (size_t i = 0; i < c->n; i++)
        varying += c->rows[i].varies && !isnan(c->rows[i].allowed);
    if (varying > 0)
        rc |= cg_buf_printf(b,
                            "\n%zu count%s from step to step or run to run "
                            "(data-dependent work): gated with the varying tolerance (+%g%%) "
                            "instead of exactly.\n",
                            varying, varying == 1 ? " varies" : "s vary",
                            v->thresholds->varying.max_increase_pct);
    return rc;
}

static void share_text(double share, char *dst, size_t n)
{
    if (isnan(share))
        snprintf(dst, n, "&mdash;");
    else
        snprintf(dst, n, "%.1f%%", 100.0 * share);
}

/* The stacked bar of compute, exposed communication, exposed copies and idle per side, when the
 * GPU's busy time is known on both (without communication, compute is the busy time; copies are
 * drawn where the idle share leaves them out). */
static int add_anatomy_chart(struct cg_buf *b, const struct cg_anatomy *an)
{
    const struct cg_anatomy_part *busy = cg_anatomy_part(an, CG_ANAT_GPU_BUSY);
    const struct cg_anatomy_part *idle = cg_anatomy_part(an, CG_ANAT_GPU_IDLE);
    const struct cg_anatomy_part *comm = cg_anatomy_part(an, CG_ANAT_EXPOSED_COMM);
    const struct cg_anatomy_part *compute = cg_anatomy_part(an, CG_ANAT_COMPUTE);
    const struct cg_anatomy_part *copies = cg_anatomy_part(an, CG_ANAT_EXPOSED_COPIES);
    if (busy == NULL || idle == NULL || isnan(busy->baseline) || isnan(busy->current))
        return 0;
    bool split = comm != NULL && compute != NULL && !isnan(comm->baseline) && !isnan(comm->current);
    bool copy = an->copies_in_idle && copies != NULL;
    double base[CG_CHART_ANATOMY_PARTS] = {split ? compute->baseline : busy->baseline,
                                           split ? comm->baseline : 0.0,
                                           copy ? copies->baseline : 0.0, idle->baseline};
    double cur[CG_CHART_ANATOMY_PARTS] = {split ? compute->current : busy->current,
                                          split ? comm->current : 0.0, copy ? copies->current : 0.0,
                                          idle->current};
    int rc = cg_buf_adds(b, "\n");
    rc |= cg_chart_anatomy(b, base, cur);
    rc |= cg_buf_printf(b,
                        "\n_Per side, bottom to top: GPU compute (blue), communication not "
                        "overlapped by compute (orange), %sGPU idle (grey)._\n",
                        copy ? "copies while no kernel runs (green), " : "");
    return rc;
}

/* Where the step's time goes on each side, and the gated parts' outcomes (anatomy.h). */
int cg_report_md_anatomy(struct cg_buf *b, const struct cg_verdict *v)
{
    const struct cg_anatomy *an = &v->anatomy;
    if (an->n == 0)
        return 0;
    int rc = cg_buf_adds(b, "\n### Anatomy of a step\n\nShare of the step time (median over "
                            "runs). The GPU's idle share and the communication no compute "
                            "overlapped are gated: their rise in points of the step, tested over "
                            "the runs; the other parts are shown. Copies may overlap kernels; "
                            "NVTX ranges nest and overlap across threads, so their shares can add "
                            "up to more than 100%.\n\n"
                            "| Part | Baseline | Current | Change | Outcome |\n"
                            "|---|---:|---:|---:|---|\n");
    for (size_t i = 0; i < an->n && rc == 0; i++) {
        const struct cg_anatomy_part *p = &an->parts[i];
        char base[32], cur[32], d[32] = "&mdash;";
        share_text(p->baseline, base, sizeof(base));
        share_text(p->current, cur, sizeof(cur));
        double pts = 100.0 * (p->current - p->baseline);
        if (!isnan(pts))
            snprintf(d, sizeof(d), "%+.1f pts", fabs(pts) < 0.05 ? 0.0 : pts);
        rc = cg_buf_printf(b, "| %s", cg_anatomy_label(p->kind));
        if (p->kind == CG_ANAT_GPU_IDLE && cg_anatomy_copies_as_idle(an))
            rc |= cg_buf_adds(b, ", copies counted as idle (a side did not measure their "
                                 "overlap with kernels)");
        if (p->kind == CG_ANAT_EXPOSED_COMM && an->comm_named_differently)
            rc |= cg_buf_adds(b, ", not gated: the sides name communication kernels otherwise "
                                 "(`CANARY_GATE_COMM_KERNELS`)");
        if (p->kind == CG_ANAT_RANGE) {
            rc |= cg_buf_adds(b, " ");
            rc |= cg_md_escape(b, p->name, CG_REPORT_MD_NAME_MAX_BYTES);
        }
        char outcome[160] = "shown";
        if (p->outcome != CG_OUT_NOT_GATED && p->outcome != CG_OUT_UNAVAILABLE)
            snprintf(outcome, sizeof(outcome), "%s (%+.1f pts, p = %.3g; limit +%.1f pts)%s",
                     cg_report_md_icon(p->outcome), p->shift_points, p->p_value,
                     p->threshold_points,
                     p->other_machine ? ", measured on a different machine" : "");
        else if (p->outcome == CG_OUT_UNAVAILABLE)
            snprintf(outcome, sizeof(outcome), "not on both sides");
        rc |= cg_buf_printf(b, " | %s | %s | %s | %s |\n", base, cur, d, outcome);
    }
    return rc | add_anatomy_chart(b, an);
}
