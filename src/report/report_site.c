/*
 * report_site: the history page (report_site.h).
 *
 * Layout: a header (the history's span), then per gate a section with one SVG chart per metric
 * and a table of its latest change points. A chart's x axis is the gate's runs in the order they
 * were recorded (one point per run, so commits hours or weeks apart are evenly spaced); its y
 * axis is the metric in its own unit. Behind the points: the environment segments, alternately
 * shaded; the interval band and the median line are drawn per segment, never across a change of
 * environment.
 */
#include "report_site.h"

#include "fmt.h"
#include "report_history.h"
#include "trend.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The chart's box, in SVG user units. */
#define W 960.0
#define H 250.0
#define LEFT 86.0
#define RIGHT 18.0
#define TOP 14.0
#define BOTTOM 34.0
#define COMMIT_CHARS 12

/* --- escaping ------------------------------------------------------------------------------ */

/* A commit cut to COMMIT_CHARS, escaped. */
static int short_commit(struct cg_buf *b, const char *commit)
{
    char c[COMMIT_CHARS + 1];
    snprintf(c, sizeof(c), "%s", commit);
    return cg_html_escape(b, c);
}

bool cg_site_url_ok(const char *prefix)
{
    if (strncmp(prefix, "https://", 8) != 0 && strncmp(prefix, "http://", 7) != 0)
        return false;
    for (const unsigned char *p = (const unsigned char *)prefix; *p; p++)
        if (*p <= 0x20 || *p >= 0x7f || strchr("\"'<>\\`", *p) != NULL)
            return false;
    return true;
}

/* The commit, linked when there is a prefix: the prefix, then the commit percent-encoded. */
static int commit_link(struct cg_buf *b, const struct cg_site_opts *o, const char *commit)
{
    int rc = 0;
    if (o->commit_url != NULL) {
        rc |= cg_buf_adds(b, "<a href=\"");
        rc |= cg_html_escape(b, o->commit_url);
        for (const unsigned char *p = (const unsigned char *)commit; *p; p++) {
            bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                         (*p >= '0' && *p <= '9') || strchr("-._~", *p) != NULL;
            rc |= plain ? cg_buf_add(b, p, 1) : cg_buf_printf(b, "%%%02X", *p);
        }
        rc |= cg_buf_adds(b, "\">");
    }
    rc |= cg_buf_adds(b, "<code>");
    rc |= short_commit(b, commit);
    rc |= cg_buf_adds(b, "</code>");
    if (o->commit_url != NULL)
        rc |= cg_buf_adds(b, "</a>");
    return rc;
}

/* --- one gate's series ------------------------------------------------------------------------ */

struct series {
    const struct cg_history *h;
    const char *gate;
    const struct cg_history_entry **runs; /* the gate's runs, in order */
    size_t *segment;                      /* of each run, from 0 */
    size_t *entry;                        /* each run's index in h */
    size_t n, segments;
    const struct cg_history_entry **accepts; /* the gate's accept events */
    double *accept_at;                       /* their x position, in runs */
    size_t n_accepts;
    const struct cg_history_entry **env; /* the event that began each segment, or NULL */
};

static bool splits(const struct cg_history_entry *e, const char *gate)
{
    return e->type == CG_HIST_EVENT && cg_history_of_gate(e, gate) &&
           (e->event == CG_HEV_ENVIRONMENT || e->event == CG_HEV_RESTART);
}

static void series_release(struct series *s)
{
    free(s->runs);
    free(s->segment);
    free(s->entry);
    free(s->accepts);
    free(s->accept_at);
    free(s->env);
}

/* The runs of gate in h with their segments, split as cg_trend_check splits them. */
static int series_make(const struct cg_history *h, const char *gate, struct series *s)
{
    memset(s, 0, sizeof(*s));
    s->h = h;
    s->gate = gate;
    size_t cap = h->n ? h->n : 1;
    s->runs = calloc(cap, sizeof(const void *));
    s->segment = calloc(cap, sizeof(*s->segment));
    s->entry = calloc(cap, sizeof(*s->entry));
    s->accepts = calloc(cap, sizeof(const void *));
    s->accept_at = calloc(cap, sizeof(*s->accept_at));
    s->env = calloc(cap + 1, sizeof(const void *));
    if (!s->runs || !s->segment || !s->entry || !s->accepts || !s->accept_at || !s->env) {
        series_release(s);
        return CG_ENOMEM;
    }
    const struct cg_history_entry *pending = NULL; /* a split event not yet followed by a run */
    bool split = false;
    for (size_t i = 0; i < h->n; i++) {
        const struct cg_history_entry *e = &h->entries[i];
        if (splits(e, gate)) {
            split = s->n > 0;
            pending = e;
        }
        if (e->type == CG_HIST_EVENT && e->event == CG_HEV_ACCEPT && cg_history_of_gate(e, gate))
            s->accepts[s->n_accepts++] = e;
        if (e->type != CG_HIST_RUN || !cg_history_of_gate(e, gate))
            continue;
        if (split) {
            s->segments++;
            split = false;
        }
        if (s->n == 0 || pending != NULL) /* the first run, or the first after a split */
            s->env[s->segments] = pending;
        pending = NULL;
        s->segment[s->n] = s->segments;
        s->entry[s->n] = i;
        s->runs[s->n++] = e;
    }
    s->segments = s->n > 0 ? s->segments + 1 : 0;
    /* An accept sits on the run of its commit (the first after it, else the last before), or
     * between the runs it was recorded between. */
    for (size_t a = 0; a < s->n_accepts; a++) {
        size_t at = (size_t)(s->accepts[a] - h->entries), before = 0, after = s->n, last = s->n;
        for (size_t r = 0; r < s->n; r++) {
            before += s->entry[r] < at;
            if (strcmp(s->runs[r]->commit, s->accepts[a]->commit) != 0)
                continue;
            if (s->entry[r] > at && after == s->n)
                after = r;
            if (s->entry[r] < at)
                last = r;
        }
        s->accept_at[a] = after < s->n  ? (double)after
                          : last < s->n ? (double)last
                                        : (double)before - 0.5;
    }
    return 0;
}

/* --- charts ----------------------------------------------------------------------------------- */

struct scale {
    double lo, hi; /* the values at the bottom and top of the plot */
    size_t n;      /* runs across */
};

static double xpos(const struct scale *sc, double i)
{
    return LEFT + (i + 0.5) * (W - LEFT - RIGHT) / (double)(sc->n ? sc->n : 1);
}

/* Halves keep differences of the largest finite values finite. */
static double ypos(const struct scale *sc, double v)
{
    double t = (v * 0.5 - sc->lo * 0.5) / (sc->hi * 0.5 - sc->lo * 0.5);
    return TOP + (H - TOP - BOTTOM) * (1.0 - t);
}

/* The y range of metric m over the series: its lowest low to highest high, at least
 * SITE_MIN_SPAN of the level (a flat series would otherwise zoom until noise is a cliff),
 * padded, finite however large the values. */
#define SITE_MIN_SPAN 0.05
static bool scale_of(const struct series *s, enum cg_metric m, struct scale *sc)
{
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < s->n; i++) {
        const struct cg_history_value *v = &s->runs[i]->metric[m];
        if (v->present) {
            lo = fmin(lo, v->low);
            hi = fmax(hi, v->high);
        }
    }
    if (!isfinite(lo) || !isfinite(hi))
        return false;
    double mid = lo * 0.5 + hi * 0.5, half = hi * 0.5 - lo * 0.5;
    half = fmax(fmax(half * 1.08, fabs(mid) * SITE_MIN_SPAN * 0.5), 1e-9);
    sc->lo = fmax(0.0, mid - half);
    sc->hi = fmin(mid + half, DBL_MAX);
    sc->n = s->n;
    return true;
}

/* "axis spans 5.0% of the level": the plot's height against the middle of its values. */
static int span_text(struct cg_buf *b, const struct scale *sc)
{
    double mid = sc->lo * 0.5 + sc->hi * 0.5;
    if (!(mid > 0))
        return 0;
    double pct = (sc->hi * 0.5 - sc->lo * 0.5) / mid * 200.0;
    return cg_buf_printf(b,
                         "<text class=\"cg-span\" x=\"%.1f\" y=\"%.1f\">axis spans %.*f%% of "
                         "the level</text>\n",
                         LEFT, TOP - 3, pct < 1000 ? 1 : 0, pct);
}

/* A value as the chart labels it ("25.31 ms", "1.50 GiB"), escaped. */
static int value_text(struct cg_buf *b, enum cg_metric m, double v)
{
    char t[64];
    cg_fmt_metric(m, v, t, sizeof(t));
    return cg_html_escape(b, t);
}

static int chart_axes(struct cg_buf *b, const struct series *s, enum cg_metric m,
                      const struct scale *sc)
{
    int rc = 0;
    /* the environment segments, alternately shaded, each titled with what began it */
    for (size_t g = 0, first = 0; g < s->segments; g++) {
        size_t last = first;
        while (last + 1 < s->n && s->segment[last + 1] == g)
            last++;
        double x0 = xpos(sc, (double)first - 0.5), x1 = xpos(sc, (double)last + 0.5);
        rc |= cg_buf_printf(b,
                            "<rect class=\"cg-segment cg-segment-%zu\" x=\"%.1f\" y=\"%.1f\" "
                            "width=\"%.1f\" height=\"%.1f\"><title>environment segment %zu: ",
                            g % 2, x0, TOP, x1 - x0, H - TOP - BOTTOM, g + 1);
        const struct cg_history_entry *ev = s->env[g];
        if (ev != NULL) {
            rc |= cg_html_escape(b, cg_history_event_name(ev->event));
            rc |= cg_buf_adds(b, " at ");
            rc |= cg_html_escape(b, ev->commit);
            rc |= cg_buf_adds(b, ": ");
            rc |= cg_html_escape(b, ev->reason ? ev->reason : "");
        } else {
            rc |= cg_buf_adds(b, "from the first run");
        }
        rc |= cg_buf_adds(b, "</title></rect>\n");
        first = last + 1;
    }
    /* four gridlines with their values */
    for (int k = 0; k <= 3; k++) {
        double v = sc->lo + (sc->hi - sc->lo) * (0.05 + 0.3 * k), y = ypos(sc, v);
        rc |= cg_buf_printf(b,
                            "<line class=\"cg-grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" "
                            "y2=\"%.1f\"/><text class=\"cg-ylabel\" x=\"%.1f\" y=\"%.1f\">",
                            LEFT, W - RIGHT, y, y, LEFT - 6, y + 4);
        rc |= value_text(b, m, v);
        rc |= cg_buf_adds(b, "</text>\n");
    }
    rc |= span_text(b, sc);
    /* the first and last commits under the axis, and the quarters' between them (from 5 runs) */
    if (s->n > 0) {
        rc |= cg_buf_printf(b, "<text class=\"cg-xlabel cg-start\" x=\"%.1f\" y=\"%.1f\">",
                            xpos(sc, 0) - 3, H - 10);
        rc |= short_commit(b, s->runs[0]->commit);
        rc |= cg_buf_printf(b, "</text><text class=\"cg-xlabel cg-end\" x=\"%.1f\" y=\"%.1f\">",
                            xpos(sc, (double)s->n - 1) + 3, H - 10);
        rc |= short_commit(b, s->runs[s->n - 1]->commit);
        rc |= cg_buf_adds(b, "</text>");
        for (size_t k = 1; s->n >= 5 && k <= 3; k++) {
            size_t i = (k * (s->n - 1) + 2) / 4;
            rc |= cg_buf_printf(b,
                                "<line class=\"cg-tick-line\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" "
                                "y2=\"%.1f\"/><text class=\"cg-xlabel cg-tick\" x=\"%.1f\" "
                                "y=\"%.1f\">",
                                xpos(sc, (double)i), xpos(sc, (double)i), H - BOTTOM,
                                H - BOTTOM + 4, xpos(sc, (double)i), H - 10);
            rc |= short_commit(b, s->runs[i]->commit);
            rc |= cg_buf_adds(b, "</text>");
        }
        rc |= cg_buf_printf(b,
                            "<text class=\"cg-runs\" x=\"%.1f\" y=\"%.1f\">%zu run%s of main"
                            "</text>\n",
                            W - RIGHT, TOP - 3, s->n, s->n == 1 ? "" : "s");
    }
    return rc;
}

/* The band and the median line of each segment's stretch of present values. */
static int chart_series(struct cg_buf *b, const struct series *s, enum cg_metric m,
                        const struct scale *sc)
{
    int rc = 0;
    size_t i = 0;
    while (i < s->n && rc == 0) {
        if (!s->runs[i]->metric[m].present) {
            i++;
            continue;
        }
        size_t j = i;
        while (j + 1 < s->n && s->segment[j + 1] == s->segment[i] &&
               s->runs[j + 1]->metric[m].present)
            j++;
        rc |= cg_buf_adds(b, "<polygon class=\"cg-band\" points=\"");
        for (size_t k = i; k <= j; k++)
            rc |= cg_buf_printf(b, "%.1f,%.1f ", xpos(sc, (double)k),
                                ypos(sc, s->runs[k]->metric[m].high));
        for (size_t k = j + 1; k-- > i;)
            rc |= cg_buf_printf(b, "%.1f,%.1f ", xpos(sc, (double)k),
                                ypos(sc, s->runs[k]->metric[m].low));
        rc |= cg_buf_adds(b, "\"/>\n<polyline class=\"cg-line\" points=\"");
        for (size_t k = i; k <= j; k++)
            rc |= cg_buf_printf(b, "%.1f,%.1f ", xpos(sc, (double)k),
                                ypos(sc, s->runs[k]->metric[m].median));
        rc |= cg_buf_adds(b, "\"/>\n");
        i = j + 1;
    }
    return rc;
}

/* The index of run e in the series, or s->n. */
static size_t run_index(const struct series *s, const struct cg_history_entry *e)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->runs[i] == e)
            return i;
    return s->n;
}

static int change_title(struct cg_buf *b, const struct cg_trend_change *c)
{
    char pct[32], lo[32], hi[32];
    cg_fmt_pct(c->cp.shift_pct, pct, sizeof(pct));
    cg_fmt_pct(c->cp.ci_low_pct, lo, sizeof(lo));
    cg_fmt_pct(c->cp.ci_high_pct, hi, sizeof(hi));
    int rc = cg_buf_printf(b, "<title>%s %s (%s to %s), p = %.3g, between ",
                           cg_metric_label(c->metric), pct, lo, hi, c->cp.p_value);
    rc |= cg_html_escape(b, c->before->commit);
    rc |= cg_buf_adds(b, " and ");
    rc |= cg_html_escape(b, c->after->commit);
    if (c->accepted != NULL) {
        rc |= cg_buf_adds(b, "; accepted: ");
        rc |= cg_html_escape(b, c->accepted->reason);
    }
    return rc | cg_buf_adds(b, "</title>");
}

static int chart_marks(struct cg_buf *b, const struct series *s, enum cg_metric m,
                       const struct scale *sc, const struct cg_trend_report *r)
{
    int rc = 0;
    for (size_t i = 0; i < r->n_changes; i++) {
        const struct cg_trend_change *c = &r->changes[i];
        if (c->metric != m)
            continue;
        size_t before = run_index(s, c->before), after = run_index(s, c->after);
        double x = xpos(sc, ((double)before + (double)after) / 2.0);
        char pct[32];
        cg_fmt_pct(c->cp.shift_pct, pct, sizeof(pct));
        rc |= cg_buf_printf(b,
                            "<g class=\"cg-change-mark%s\"><line class=\"cg-change\" x1=\"%.1f\" "
                            "x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/><text class=\"cg-change-label\" "
                            "x=\"%.1f\" y=\"%.1f\">%s%s</text>",
                            c->worse ? " cg-worse" : " cg-better", x, x, TOP, H - BOTTOM, x + 3,
                            TOP + 11, pct, c->accepted != NULL ? " accepted" : "");
        rc |= change_title(b, c);
        rc |= cg_buf_adds(b, "</g>\n");
    }
    for (size_t i = 0; r->n_changes == 0 && i < r->n_candidates; i++) {
        const struct cg_trend_candidate *c = &r->candidates[i];
        if (c->metric != m)
            continue;
        size_t before = run_index(s, c->before), after = run_index(s, c->after);
        double x = xpos(sc, ((double)before + (double)after) / 2.0);
        char pct[32], why[512];
        cg_fmt_pct(c->cand.cp.shift_pct, pct, sizeof(pct));
        cg_report_history_candidate_text(c, why, sizeof(why));
        rc |= cg_buf_printf(b,
                            "<g class=\"cg-candidate\"><line class=\"cg-candidate-line\" "
                            "x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/><text "
                            "class=\"cg-change-label\" x=\"%.1f\" y=\"%.1f\">%s, p = %.2g: "
                            "not called</text><title>",
                            x, x, TOP, H - BOTTOM, x + 3, TOP + 11, pct, c->cand.cp.p_value);
        rc |= cg_html_escape(b, why);
        rc |= cg_buf_adds(b, "</title></g>\n");
    }
    for (size_t a = 0; a < s->n_accepts; a++) {
        const struct cg_history_entry *e = s->accepts[a];
        double x = xpos(sc, s->accept_at[a]);
        rc |= cg_buf_printf(b,
                            "<g class=\"cg-accept\"><line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" "
                            "y2=\"%.1f\"/><path d=\"M%.1f %.1fl6 -5l-6 -5z\"/><text "
                            "class=\"cg-accept-label\" x=\"%.1f\" y=\"%.1f\">accepted</text>"
                            "<title>accepted at ",
                            x, x, TOP, H - BOTTOM, x, H - BOTTOM, x + 3, H - BOTTOM - 12);
        rc |= cg_html_escape(b, e->commit);
        if (e->who != NULL) {
            rc |= cg_buf_adds(b, " by ");
            rc |= cg_html_escape(b, e->who);
        }
        rc |= cg_buf_adds(b, " (");
        rc |= cg_html_escape(b, e->date);
        rc |= cg_buf_adds(b, "): ");
        rc |= cg_html_escape(b, e->reason);
        rc |= cg_buf_adds(b, "</title></g>\n");
    }
    return rc;
}

static int chart_points(struct cg_buf *b, const struct series *s, enum cg_metric m,
                        const struct scale *sc)
{
    int rc = 0;
    for (size_t i = 0; i < s->n; i++) {
        const struct cg_history_entry *e = s->runs[i];
        const struct cg_history_value *v = &e->metric[m];
        if (!v->present)
            continue;
        rc |= cg_buf_printf(b,
                            "<circle class=\"cg-point\" cx=\"%.1f\" cy=\"%.1f\" r=\"3\" "
                            "data-commit=\"",
                            xpos(sc, (double)i), ypos(sc, v->median));
        rc |= cg_html_escape(b, e->commit);
        rc |= cg_buf_adds(b, "\"><title>");
        rc |= cg_html_escape(b, e->commit);
        rc |= cg_buf_adds(b, " (");
        rc |= cg_html_escape(b, e->date);
        rc |= cg_buf_adds(b, "): ");
        rc |= value_text(b, m, v->median);
        rc |= cg_buf_adds(b, ", interval ");
        rc |= value_text(b, m, v->low);
        rc |= cg_buf_adds(b, " to ");
        rc |= value_text(b, m, v->high);
        rc |= cg_buf_printf(b, ", %lld run%s</title></circle>\n", (long long)v->runs,
                            v->runs == 1 ? "" : "s");
    }
    return rc;
}

static int chart(struct cg_buf *b, const struct series *s, enum cg_metric m,
                 const struct cg_trend_report *r)
{
    struct scale sc;
    if (!scale_of(s, m, &sc))
        return 0;
    const struct cg_history_value *last = NULL;
    for (size_t i = s->n; i-- > 0 && last == NULL;)
        if (s->runs[i]->metric[m].present)
            last = &s->runs[i]->metric[m];
    if (last == NULL)
        return 0;
    int rc = cg_buf_printf(b,
                           "<figure class=\"cg-figure\"><figcaption><strong>%s</strong> "
                           "<span class=\"cg-latest\">latest ",
                           cg_metric_label(m));
    rc |= value_text(b, m, last->median);
    rc |= cg_buf_printf(b,
                        "</span> <span class=\"cg-direction\">(%s is worse)</span>"
                        "</figcaption>\n<svg class=\"cg-chart\" data-metric=\"%s\" "
                        "viewBox=\"0 0 %.0f %.0f\" role=\"img\" aria-label=\"%s over the runs "
                        "of main\">\n",
                        cg_metric_higher_is_worse(m) ? "higher" : "lower", cg_metric_name(m), W, H,
                        cg_metric_label(m));
    rc |= chart_axes(b, s, m, &sc);
    rc |= chart_series(b, s, m, &sc);
    rc |= chart_marks(b, s, m, &sc, r);
    rc |= chart_points(b, s, m, &sc);
    return rc | cg_buf_adds(b, "</svg></figure>\n");
}

/* --- tables ----------------------------------------------------------------------------------- */

static int changes_table(struct cg_buf *b, const struct cg_trend_report *r,
                         const struct cg_site_opts *o)
{
    int rc = cg_buf_adds(b, "<h3>Latest change points</h3>\n");
    if (r->n_changes == 0) {
        rc |= cg_buf_adds(b, "<p class=\"cg-none\">No change point was called.");
        for (size_t g = 1; g <= r->segments; g++) {
            char why[512]; /* numbers and fixed words; the labels' arrow escaped below */
            cg_report_history_candidate_text(cg_trend_strongest_candidate(r, g), why, sizeof(why));
            if (why[0] == '\0')
                continue;
            rc |= cg_buf_printf(b, " Segment %zu: ", g);
            rc |= cg_html_escape(b, why);
            rc |= cg_buf_adds(b, " (the dotted line on its chart).");
        }
        rc |= cg_buf_adds(b, "</p>\n");
    }
    rc |= cg_buf_adds(b, "<table class=\"cg-changes\"><thead><tr><th>Metric</th><th>Change "
                         "(95% interval)</th><th>Before → after</th><th>p</th><th>Between "
                         "commits</th><th>Date</th><th>Segment</th><th>Accepted</th></tr>"
                         "</thead><tbody>\n");
    if (r->n_changes == 0)
        rc |= cg_buf_adds(b, "<tr><td colspan=\"8\">none</td></tr>\n");
    /* newest first: the changes come by segment, metric, then index */
    size_t shown = 0;
    for (size_t k = r->n_changes; k-- > 0 && shown < CG_SITE_MAX_CHANGES; shown++) {
        const struct cg_trend_change *c = &r->changes[k];
        char pct[32], lo[32], hi[32], before[64], after[64];
        cg_fmt_pct(c->cp.shift_pct, pct, sizeof(pct));
        cg_fmt_pct(c->cp.ci_low_pct, lo, sizeof(lo));
        cg_fmt_pct(c->cp.ci_high_pct, hi, sizeof(hi));
        cg_fmt_metric(c->metric, c->cp.before, before, sizeof(before));
        cg_fmt_metric(c->metric, c->cp.after, after, sizeof(after));
        rc |= cg_buf_printf(b,
                            "<tr class=\"cg-change-row%s\"><td>%s</td><td>%s (%s to %s)</td>"
                            "<td>%s → %s</td><td>%.3g</td><td>",
                            c->worse ? " cg-worse" : " cg-better", cg_metric_label(c->metric), pct,
                            lo, hi, before, after, c->cp.p_value);
        rc |= commit_link(b, o, c->before->commit);
        rc |= cg_buf_adds(b, " → ");
        rc |= commit_link(b, o, c->after->commit);
        rc |= cg_buf_adds(b, "</td><td>");
        rc |= cg_html_escape(b, c->after->date);
        rc |= cg_buf_printf(b, "</td><td>%zu</td><td>", c->segment);
        if (c->accepted != NULL) {
            rc |= cg_html_escape(b, c->accepted->reason);
            if (c->accepted->who != NULL) {
                rc |= cg_buf_adds(b, " (");
                rc |= cg_html_escape(b, c->accepted->who);
                rc |= cg_buf_adds(b, ")");
            }
        } else {
            rc |= cg_buf_adds(b, c->worse ? "no" : "&mdash;");
        }
        rc |= cg_buf_adds(b, "</td></tr>\n");
    }
    rc |= cg_buf_adds(b, "</tbody></table>\n");
    if (r->n_changes > shown)
        rc |= cg_buf_printf(b,
                            "<p>and %zu older change points (<code>canary-gate history "
                            "check</code> lists them all).</p>\n",
                            r->n_changes - shown);
    if (r->n_drifts == 0)
        return rc;
    rc |= cg_buf_adds(b, "<h3>Level across each segment</h3>\n<table class=\"cg-levels\"><thead>"
                         "<tr><th>Metric</th><th>Segment</th><th>First stretch</th><th>Last "
                         "stretch</th><th>In all</th><th>Change points</th><th>Runs</th></tr>"
                         "</thead><tbody>\n");
    for (size_t i = 0; i < r->n_drifts; i++) {
        const struct cg_trend_drift *d = &r->drifts[i];
        char first[64], last[64], pct[32];
        cg_fmt_metric(d->metric, d->first, first, sizeof(first));
        cg_fmt_metric(d->metric, d->last, last, sizeof(last));
        cg_fmt_pct(d->shift_pct, pct, sizeof(pct));
        rc |= cg_buf_printf(b,
                            "<tr><td>%s</td><td>%zu</td><td>%s</td><td>%s</td><td>%s</td>"
                            "<td>%zu</td><td>",
                            cg_metric_label(d->metric), d->segment, first, last, pct, d->changes);
        rc |= commit_link(b, o, d->from->commit);
        rc |= cg_buf_adds(b, " → ");
        rc |= commit_link(b, o, d->to->commit);
        rc |= cg_buf_adds(b, "</td></tr>\n");
    }
    return rc | cg_buf_adds(b, "</tbody></table>\n");
}

/* --- the page --------------------------------------------------------------------------------- */

static const char style[] =
    "<style>\n"
    ":root{color-scheme:light dark;--fg:#1f2328;--muted:#59636e;--bg:#fff;--panel:#f6f8fa;"
    "--seg0:#eef3f9;--seg1:#f8f3ea;--line:#0969da;--band:rgba(9,105,218,.18);--worse:#cf222e;"
    "--better:#1a7f37;--accept:#8250df;--grid:#d1d9e0}\n"
    "@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9198a1;--bg:#0d1117;"
    "--panel:#151b23;--seg0:#16202c;--seg1:#221d16;--line:#4493f8;--band:rgba(68,147,248,.22);"
    "--worse:#f85149;--better:#3fb950;--accept:#ab7df8;--grid:#3d444d}}\n"
    "body{font:14px/1.5 system-ui,-apple-system,'Segoe UI',sans-serif;color:var(--fg);"
    "background:var(--bg);margin:0 auto;max-width:1000px;padding:16px}\n"
    "h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 4px}h3{font-size:15px}\n"
    ".cg-meta{color:var(--muted);margin:0 0 12px}\n"
    ".cg-figure{margin:14px 0;background:var(--panel);border-radius:6px;padding:8px}\n"
    ".cg-figure figcaption{margin:0 0 2px 4px}.cg-latest,.cg-direction{color:var(--muted)}\n"
    "svg.cg-chart{width:100%;height:auto;display:block}\n"
    ".cg-segment-0{fill:var(--seg0)}.cg-segment-1{fill:var(--seg1)}\n"
    ".cg-grid{stroke:var(--grid);stroke-width:1}\n"
    ".cg-ylabel{fill:var(--muted);font-size:11px;text-anchor:end}\n"
    ".cg-xlabel{fill:var(--muted);font-size:11px;font-family:ui-monospace,monospace}\n"
    ".cg-start{text-anchor:start}.cg-end{text-anchor:end}"
    ".cg-middle,.cg-tick{text-anchor:middle}.cg-middle{font-family:inherit}\n"
    ".cg-span,.cg-runs{fill:var(--muted);font-size:11px}.cg-runs{text-anchor:end}"
    ".cg-tick-line{stroke:var(--muted)}\n"
    ".cg-band{fill:var(--band);stroke:none}\n"
    ".cg-line{fill:none;stroke:var(--line);stroke-width:1.5}\n"
    ".cg-point{fill:var(--line);stroke:var(--bg);stroke-width:1}\n"
    ".cg-change{stroke-width:1.5;stroke-dasharray:5 3}\n"
    ".cg-worse .cg-change{stroke:var(--worse)}.cg-better .cg-change{stroke:var(--better)}\n"
    ".cg-change-label{font-size:11px;font-weight:600}"
    ".cg-worse .cg-change-label{fill:var(--worse)}.cg-better .cg-change-label{fill:var(--better)}\n"
    ".cg-accept line{stroke:var(--accept);stroke-width:1.5;stroke-dasharray:2 2}"
    ".cg-accept path{fill:var(--accept)}.cg-accept-label{font-size:11px;fill:var(--accept)}\n"
    ".cg-candidate-line{stroke:#888;stroke-width:1.5;stroke-dasharray:1 3}"
    ".cg-candidate .cg-change-label{fill:#666;font-weight:400}\n"
    "table{border-collapse:collapse;width:100%;font-size:13px}"
    "th,td{border:1px solid var(--grid);padding:3px 6px;text-align:left;vertical-align:top}\n"
    "th{background:var(--panel)}tr.cg-worse td:first-child{border-left:3px solid var(--worse)}"
    "tr.cg-better td:first-child{border-left:3px solid var(--better)}\n"
    "a{color:var(--line)}code{font-family:ui-monospace,monospace;font-size:12px}\n"
    "</style>\n";

/* The distinct gate ids of h's runs, in order of first appearance; NULL stands for none. */
static int gates_of(const struct cg_history *h, const char ***out, size_t *n)
{
    const char **g = calloc(h->n ? h->n : 1, sizeof(*g));
    if (g == NULL)
        return CG_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < h->n; i++) {
        const struct cg_history_entry *e = &h->entries[i];
        if (e->type != CG_HIST_RUN)
            continue;
        bool seen = false;
        for (size_t j = 0; j < k && !seen; j++)
            seen = cg_history_of_gate(e, g[j]);
        if (!seen)
            g[k++] = e->gate_id;
    }
    *out = g;
    *n = k;
    return 0;
}

/* Whether h holds the series of more than one gate (runs and summaries alike; NULL, the runs
 * recorded without a gate id, is one). */
static bool several_gates(const struct cg_history *h)
{
    const struct cg_history_entry *first = NULL;
    for (size_t i = 0; i < h->n; i++) {
        const struct cg_history_entry *e = &h->entries[i];
        if (e->type != CG_HIST_RUN && e->type != CG_HIST_SUMMARY)
            continue;
        if (first == NULL)
            first = e;
        else if (!cg_history_of_gate(e, first->gate_id))
            return true;
    }
    return false;
}

static int gate_section(struct cg_buf *b, const struct cg_history *h, const char *gate,
                        bool several, const struct cg_site_opts *o)
{
    struct series s;
    struct cg_trend_report r;
    int rc = series_make(h, gate, &s);
    if (rc != 0)
        return rc;
    if (s.n == 0) { /* a gate is drawn only when it has runs (gates_of) */
        series_release(&s);
        return 0;
    }
    if ((rc = cg_trend_check(h, gate, o->cp, &r)) != 0) {
        series_release(&s);
        return rc;
    }
    rc |= cg_buf_adds(b, "<section class=\"cg-gate\" data-gate=\"");
    rc |= cg_html_escape(b, gate ? gate : "");
    rc |= cg_buf_adds(b, "\">\n");
    if (several || gate != NULL) {
        rc |= cg_buf_adds(b, "<h2>Gate ");
        rc |= cg_html_escape(b, gate ? gate : "(no gate id)");
        rc |= cg_buf_adds(b, "</h2>\n");
    }
    rc |= cg_buf_printf(b,
                        "<p class=\"cg-meta\">%zu run%s of main in %zu environment segment%s, "
                        "from ",
                        s.n, s.n == 1 ? "" : "s", s.segments, s.segments == 1 ? "" : "s");
    rc |= commit_link(b, o, s.runs[0]->commit);
    rc |= cg_buf_adds(b, " (");
    rc |= cg_html_escape(b, s.runs[0]->date);
    rc |= cg_buf_adds(b, ") to ");
    rc |= commit_link(b, o, s.runs[s.n - 1]->commit);
    rc |= cg_buf_adds(b, " (");
    rc |= cg_html_escape(b, s.runs[s.n - 1]->date);
    rc |= cg_buf_printf(b,
                        "); %zu change point%s, %zu accepted regression%s. Each point is one "
                        "run of main: the median of its runs, the band their interval.</p>\n",
                        r.n_changes, r.n_changes == 1 ? "" : "s", s.n_accepts,
                        s.n_accepts == 1 ? "" : "s");
    for (int m = 0; m < CG_M_COUNT && rc == 0; m++)
        rc |= chart(b, &s, (enum cg_metric)m, &r);
    rc |= changes_table(b, &r, o);
    rc |= cg_buf_adds(b, "</section>\n");
    cg_trend_report_release(&r);
    series_release(&s);
    return rc ? CG_ENOMEM : 0;
}

int cg_report_site(const struct cg_history *h, const struct cg_site_opts *o, struct cg_buf *out)
{
    const char *title = o->title ? o->title : "canary-gate: main's history";
    int rc = cg_buf_adds(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                              "<meta name=\"viewport\" content=\"width=device-width, "
                              "initial-scale=1\"><link rel=\"icon\" href=\"data:,\"><title>");
    rc |= cg_html_escape(out, title);
    rc |= cg_buf_adds(out, "</title>\n");
    rc |= cg_buf_adds(out, style);
    rc |= cg_buf_adds(out, "</head><body>\n<h1>");
    rc |= cg_html_escape(out, title);
    rc |= cg_buf_adds(out, "</h1>\n<p class=\"cg-meta\">Every run published on main");
    if (o->source != NULL) {
        rc |= cg_buf_adds(out, ", from <code>");
        rc |= cg_html_escape(out, o->source);
        rc |= cg_buf_adds(out, "</code>");
    }
    rc |= cg_buf_adds(out, ". Dashed lines: change points (red worse, green better); violet "
                           "flags: accepted regressions; shading: environment segments (values in "
                           "different segments are not compared). Hover a mark for its "
                           "commit.</p>\n");
    bool several = several_gates(h);
    for (size_t i = 0; i < h->n && rc == 0; i++) {
        const struct cg_history_entry *e = &h->entries[i];
        if (e->type != CG_HIST_SUMMARY)
            continue;
        rc |= cg_buf_printf(out, "<p class=\"cg-meta\">%lld older run%s ", (long long)e->summarised,
                            e->summarised == 1 ? "" : "s");
        if (several && e->gate_id != NULL) { /* named as the gate's section is */
            rc |= cg_buf_adds(out, "of gate ");
            rc |= cg_html_escape(out, e->gate_id);
            rc |= cg_buf_adds(out, " ");
        } else if (several) {
            rc |= cg_buf_adds(out, "without a gate id ");
        }
        rc |= cg_buf_adds(out, "folded into a summary, from ");
        rc |= commit_link(out, o, e->first_commit ? e->first_commit : e->commit);
        rc |= cg_buf_adds(out, " to ");
        rc |= commit_link(out, o, e->commit);
        rc |= cg_buf_adds(out, " (not drawn).</p>\n");
    }
    const char **gates = NULL;
    size_t n = 0;
    if (rc == 0)
        rc = gates_of(h, &gates, &n);
    if (rc == 0 && n == 0)
        rc = cg_buf_adds(out, "<p class=\"cg-none\">No run of main is recorded yet.</p>\n");
    for (size_t g = 0; g < n && rc == 0; g++)
        rc = gate_section(out, h, gates[g], n > 1, o);
    free(gates);
    if (rc == 0)
        rc = cg_buf_adds(out, "<p class=\"cg-meta\">Drawn by canary-gate history site.</p>\n"
                              "</body></html>\n");
    return rc == CG_EINPUT ? CG_EINPUT : rc ? CG_ENOMEM : 0;
}
