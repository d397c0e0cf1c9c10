/*
 * report_history: the history check's findings as text (report_history.h).
 */
#include "report_history.h"

#include "fmt.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COMMIT_CHARS 12 /* commits are shown shortened */

static void interval(const struct cg_changepoint *cp, char *dst, size_t n)
{
    char lo[32], hi[32];
    cg_fmt_pct(cp->ci_low_pct, lo, sizeof(lo));
    cg_fmt_pct(cp->ci_high_pct, hi, sizeof(hi));
    snprintf(dst, n, "%s..%s", lo, hi);
}

/* A change's figures as text. */
struct texts {
    char pct[32], ci[72], before[32], after[32];
};

static void change_texts(const struct cg_trend_change *c, struct texts *t)
{
    cg_fmt_pct(c->cp.shift_pct, t->pct, sizeof(t->pct));
    interval(&c->cp, t->ci, sizeof(t->ci));
    cg_fmt_metric(c->metric, c->cp.before, t->before, sizeof(t->before));
    cg_fmt_metric(c->metric, c->cp.after, t->after, sizeof(t->after));
}

/* Text from the history in markdown: in <code>, escaped (a code span would show the entities
 * as they are written, "main&#95;history.jsonl"; <code> holds markdown, which decodes them). */
static int md_code(struct cg_buf *o, const char *s, size_t max_bytes)
{
    return cg_buf_adds(o, "<code>") | cg_md_escape(o, s, max_bytes) | cg_buf_adds(o, "</code>");
}

static int commit_text(struct cg_buf *o, const struct cg_history_entry *e, bool md)
{
    char c[COMMIT_CHARS + 1];
    snprintf(c, sizeof(c), "%s", e->commit);
    return md ? md_code(o, c, sizeof(c)) : cg_term_escape(o, c, sizeof(c));
}

void cg_report_history_candidate_text(const struct cg_trend_candidate *c, char *dst, size_t n)
{
    char pct[32], before[32], after[32];
    if (n == 0)
        return;
    dst[0] = '\0';
    if (c == NULL || !c->cand.found)
        return;
    const struct cg_changepoint *cp = &c->cand.cp;
    cg_fmt_pct(cp->shift_pct, pct, sizeof(pct));
    cg_fmt_metric(c->metric, cp->before, before, sizeof(before));
    cg_fmt_metric(c->metric, cp->after, after, sizeof(after));
    bool reachable = c->cand.best_p <= c->alpha;
    snprintf(dst, n,
             "%zu runs tested: the smallest p a clean split of them can expect is %.2g%s; the "
             "strongest candidate, %s %s (%s -> %s) between runs %zu and %zu, has p = %.2g %s "
             "alpha %.2g",
             c->cand.values, c->cand.best_p,
             reachable ? "" : ", above alpha: more runs are needed before any change can be called",
             cg_metric_label(c->metric), pct, before, after, c->before_run, c->after_run,
             cp->p_value, cp->p_value > c->alpha ? ">" : "<=", c->alpha);
}

int cg_report_history_terminal(const struct cg_trend_report *r, const char *path,
                               struct cg_buf *out)
{
    int rc = cg_buf_printf(out, "history check: %zu run%s in %zu segment%s, %zu change point%s\n",
                           r->runs, r->runs == 1 ? "" : "s", r->segments,
                           r->segments == 1 ? "" : "s", r->n_changes, r->n_changes == 1 ? "" : "s");
    (void)path;
    for (size_t g = 1; r->n_changes == 0 && g <= r->segments && rc == 0; g++) {
        char why[512];
        cg_report_history_candidate_text(cg_trend_strongest_candidate(r, g), why, sizeof(why));
        if (why[0])
            rc |= cg_buf_printf(out, "  nothing called in segment %zu: %s\n", g, why);
    }
    for (size_t i = 0; i < r->n_changes && rc == 0; i++) {
        const struct cg_trend_change *c = &r->changes[i];
        struct texts t;
        change_texts(c, &t);
        rc |=
            cg_buf_printf(out, "  %-18s %8s (%s) %s -> %s, p = %.3g, between ",
                          cg_metric_name(c->metric), t.pct, t.ci, t.before, t.after, c->cp.p_value);
        rc |= commit_text(out, c->before, false);
        rc |= cg_buf_adds(out, " and ");
        rc |= commit_text(out, c->after, false);
        rc |= cg_buf_printf(out, " (segment %zu)%s%s\n", c->segment,
                            c->worse ? ", worse" : ", better", c->accepted ? ", accepted" : "");
    }
    for (size_t i = 0; i < r->n_drifts && rc == 0; i++) {
        const struct cg_trend_drift *d = &r->drifts[i];
        char pct[32];
        cg_fmt_pct(d->shift_pct, pct, sizeof(pct));
        rc |= cg_buf_printf(out, "  level of %s in segment %zu: %s over %zu change point%s, from ",
                            cg_metric_name(d->metric), d->segment, pct, d->changes,
                            d->changes == 1 ? "" : "s");
        rc |= commit_text(out, d->from, false);
        rc |= cg_buf_adds(out, " to ");
        rc |= commit_text(out, d->to, false);
        rc |= cg_buf_adds(out, "\n");
    }
    return rc;
}

int cg_report_history_markdown(const struct cg_trend_report *r, const char *path,
                               struct cg_buf *out)
{
    int rc = cg_buf_adds(out, "## canary-gate: main's history\n\n");
    rc |= cg_buf_printf(out, "%zu run%s of ", r->runs, r->runs == 1 ? "" : "s");
    rc |= md_code(out, path, 300);
    rc |= cg_buf_printf(out, " in %zu environment segment%s: ", r->segments,
                        r->segments == 1 ? "" : "s");
    if (r->n_changes == 0) {
        rc |= cg_buf_adds(out, "no change point.\n");
        for (size_t g = 1; g <= r->segments && rc == 0; g++) {
            char why[512]; /* numbers and fixed words */
            cg_report_history_candidate_text(cg_trend_strongest_candidate(r, g), why, sizeof(why));
            if (why[0])
                rc |= cg_buf_printf(out, "\n* Segment %zu: %s.\n", g, why);
        }
        return rc;
    }
    rc |= cg_buf_printf(out, "%zu change point%s.\n\n", r->n_changes, r->n_changes == 1 ? "" : "s");
    rc |= cg_buf_adds(out, "| Metric | Change | Interval (95%) | Before → after | p | Between "
                           "commits | Segment | |\n|---|---:|---|---|---:|---|---:|---|\n");
    for (size_t i = 0; i < r->n_changes && rc == 0; i++) {
        const struct cg_trend_change *c = &r->changes[i];
        struct texts t;
        change_texts(c, &t);
        rc |= cg_buf_printf(out, "| %s | %s | %s | %s → %s | %.3g | ", cg_metric_label(c->metric),
                            t.pct, t.ci, t.before, t.after, c->cp.p_value);
        rc |= commit_text(out, c->before, true);
        rc |= cg_buf_adds(out, " → ");
        rc |= commit_text(out, c->after, true);
        rc |= cg_buf_printf(out, " | %zu | %s%s |\n", c->segment, c->worse ? "worse" : "better",
                            c->accepted ? ", accepted" : "");
    }
    if (r->n_drifts > 0)
        rc |= cg_buf_adds(out, "\nLevel across each segment with changes (slow drift that no "
                               "single change need show):\n\n");
    for (size_t i = 0; i < r->n_drifts && rc == 0; i++) {
        const struct cg_trend_drift *d = &r->drifts[i];
        char pct[32];
        cg_fmt_pct(d->shift_pct, pct, sizeof(pct));
        rc |= cg_buf_printf(out, "* %s, segment %zu: %s over %zu change point%s, ",
                            cg_metric_label(d->metric), d->segment, pct, d->changes,
                            d->changes == 1 ? "" : "s");
        rc |= commit_text(out, d->from, true);
        rc |= cg_buf_adds(out, " → ");
        rc |= commit_text(out, d->to, true);
        rc |= cg_buf_adds(out, "\n");
    }
    return rc;
}

static void add_number(cJSON *o, const char *key, double v)
{
    if (isfinite(v))
        cJSON_AddNumberToObject(o, key, v);
    else
        cJSON_AddNullToObject(o, key);
}

char *cg_report_history_json(const struct cg_trend_report *r)
{
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    cJSON_AddNumberToObject(o, "runs", (double)r->runs);
    cJSON_AddNumberToObject(o, "segments", (double)r->segments);
    cJSON *changes = cJSON_AddArrayToObject(o, "changes");
    for (size_t i = 0; changes && i < r->n_changes; i++) {
        const struct cg_trend_change *c = &r->changes[i];
        cJSON *x = cJSON_CreateObject();
        if (x == NULL || !cJSON_AddItemToArray(changes, x)) {
            cJSON_Delete(x);
            break;
        }
        cJSON_AddStringToObject(x, "metric", cg_metric_name(c->metric));
        cJSON_AddNumberToObject(x, "segment", (double)c->segment);
        add_number(x, "before", c->cp.before);
        add_number(x, "after", c->cp.after);
        add_number(x, "shift_pct", c->cp.shift_pct);
        add_number(x, "ci_low_pct", c->cp.ci_low_pct);
        add_number(x, "ci_high_pct", c->cp.ci_high_pct);
        add_number(x, "p_value", c->cp.p_value);
        cJSON_AddStringToObject(x, "last_commit_before", c->before->commit);
        cJSON_AddStringToObject(x, "first_commit_after", c->after->commit);
        cJSON_AddStringToObject(x, "date_after", c->after->date);
        cJSON_AddBoolToObject(x, "worse", c->worse);
        if (c->accepted)
            cJSON_AddStringToObject(x, "accepted", c->accepted->reason ? c->accepted->reason : "");
        else
            cJSON_AddNullToObject(x, "accepted");
    }
    cJSON *drifts = cJSON_AddArrayToObject(o, "levels");
    for (size_t i = 0; drifts && i < r->n_drifts; i++) {
        const struct cg_trend_drift *d = &r->drifts[i];
        cJSON *x = cJSON_CreateObject();
        if (x == NULL || !cJSON_AddItemToArray(drifts, x)) {
            cJSON_Delete(x);
            break;
        }
        cJSON_AddStringToObject(x, "metric", cg_metric_name(d->metric));
        cJSON_AddNumberToObject(x, "segment", (double)d->segment);
        add_number(x, "first", d->first);
        add_number(x, "last", d->last);
        add_number(x, "shift_pct", d->shift_pct);
        cJSON_AddNumberToObject(x, "changes", (double)d->changes);
        cJSON_AddStringToObject(x, "from_commit", d->from->commit);
        cJSON_AddStringToObject(x, "to_commit", d->to->commit);
    }
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return text;
}
