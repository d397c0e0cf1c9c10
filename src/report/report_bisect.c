/*
 * report_bisect: the terminal, markdown and JSON documents of a bisection (see report_bisect.h).
 */
#include "report_bisect.h"

#include "chart.h"
#include "comment_marker.h"
#include "fmt.h"
#include "report.h"
#include "utf8.h"

#include "cg_version.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SUBJECT_MAX_BYTES 120

static bool exact(const struct cg_bisect_report *r)
{
    return r->count_row >= 0;
}

/* A change against good: "+10.2% (+8.1% to +12.3%)", a count's "+1 per step". */
static void change_text(const struct cg_bisect_report *r, const struct cg_bisect_level *lv,
                        char *dst, size_t n)
{
    char a[32], b[32], c[32];
    if (exact(r)) {
        cg_report_count_value(fabs(lv->change), a, sizeof(a));
        snprintf(dst, n, "%s%s per step", lv->change < 0 ? "-" : "+", a);
        return;
    }
    cg_fmt_pct(lv->change, a, sizeof(a));
    cg_fmt_pct(lv->low, b, sizeof(b));
    cg_fmt_pct(lv->high, c, sizeof(c));
    int w = snprintf(dst, n, "%s (%s to %s)", a, isfinite(lv->low) ? b : "-inf",
                     isfinite(lv->high) ? c : "+inf");
    if (w < 0 || (size_t)w >= n)
        snprintf(dst, n, "%s", a);
}

static void value_text(const struct cg_bisect_report *r, double v, char *dst, size_t n)
{
    if (exact(r))
        cg_report_count_value(v, dst, n);
    else
        cg_fmt_metric(r->metric, v, dst, n);
}

static void short_sha(const struct cg_bisect_report *r, size_t i, char *dst, size_t n)
{
    snprintf(dst, n, "%.12s", r->commits[i].sha);
}

static const struct cg_bisect_probe *probe_of(const struct cg_bisect_report *r, size_t index)
{
    for (size_t i = 0; i < r->n_probes; i++) {
        if (r->probes[i].index == index)
            return &r->probes[i];
    }
    return NULL;
}

void cg_bisect_headline(const struct cg_bisect_report *r, char *dst, size_t n)
{
    struct cg_bisect_step steps[CG_BISECT_MAX_STEPS];
    size_t k = cg_bisect_steps(r->search, steps), len = 0;
    char sha[16], ch[96];
    const struct cg_bisect_level *bad = &r->search->c[r->search->n - 1].level;
    change_text(r, bad, ch, sizeof(ch));
    if (r->outcome == CG_BISECT_NOTHING) {
        snprintf(dst, n, "nothing to find: bad is not significantly worse than good (%s %s)",
                 r->metric_name, ch);
        return;
    }
    if (r->bad_end_cut != CG_BISECT_CUT_NONE && !cg_bisect_ends_differ(bad)) {
        snprintf(dst, n,
                 "could not decide: the budget ended the bad end's looks before it differed "
                 "from good (%s %s on %zu of %zu pairs)",
                 r->metric_name, ch, r->bad_end_pairs[0], r->bad_end_pairs[1]);
        return;
    }
    if (r->outcome == CG_BISECT_FOUND && k == 1) {
        short_sha(r, steps[0].first_high, sha, sizeof(sha));
        change_text(r, &r->search->c[steps[0].first_high].level, ch, sizeof(ch));
        snprintf(dst, n, "first bad commit %s: %s %s against good", sha, r->metric_name, ch);
        return;
    }
    if (r->outcome == CG_BISECT_FOUND) {
        int w = snprintf(dst, n, "the regression came in %zu steps:", k);
        len = w > 0 ? (size_t)w : 0;
        for (size_t s = 0; s < k && len < n; s++) {
            short_sha(r, steps[s].first_high, sha, sizeof(sha));
            w = snprintf(dst + len, n - len, "%s %s", s ? "," : "", sha);
            len += w > 0 ? (size_t)w : 0;
        }
        return;
    }
    for (size_t s = 0; s < k; s++) {
        if (steps[s].found)
            continue;
        char lo[16];
        short_sha(r, steps[s].last_low + 1, lo, sizeof(lo));
        short_sha(r, steps[s].first_high, sha, sizeof(sha));
        snprintf(dst, n, "could not decide: a first bad commit is one of the %zu from %s to %s%s",
                 steps[s].first_high - steps[s].last_low, lo, sha,
                 r->budget_spent ? " (the budget was spent)" : "");
        return;
    }
    snprintf(dst, n, "could not decide");
}

/* The chart's points: the measured commits in commit order. Arrays of room n_commits. */
static size_t chart_points(const struct cg_bisect_report *r, char (*labels)[16], double *v,
                           char (*texts)[48])
{
    size_t k = 0;
    for (size_t i = 0; i < r->n_commits; i++) {
        const struct cg_bisect_probe *p = probe_of(r, i);
        if (p == NULL || isnan(p->value))
            continue;
        snprintf(labels[k], 16, "%.7s", r->commits[i].sha);
        v[k] = exact(r) || r->metric == CG_M_TOKENS_PER_SEC ? p->value : p->value / 1e6;
        value_text(r, p->value, texts[k], 48);
        k++;
    }
    return k;
}

static int chart(const struct cg_bisect_report *r, bool markdown, bool ascii, struct cg_buf *out)
{
    size_t n = r->n_commits;
    char(*labels)[16] = calloc(n, sizeof(*labels));
    char(*texts)[48] = calloc(n, sizeof(*texts));
    double *v = calloc(n, sizeof(*v));
    const char **lp = calloc(n, sizeof(*lp)), **tp = calloc(n, sizeof(*tp));
    int rc = CG_ENOMEM;
    if (labels == NULL || texts == NULL || v == NULL || lp == NULL || tp == NULL)
        goto done;
    size_t k = chart_points(r, labels, v, texts);
    for (size_t i = 0; i < k; i++) {
        lp[i] = labels[i];
        tp[i] = texts[i];
    }
    const char *unit = exact(r) ? "per step" : r->metric == CG_M_TOKENS_PER_SEC ? "tok/s" : "ms";
    if (markdown)
        rc = cg_chart_mermaid_series(out, "Probed commits in commit order", unit, lp, v, k);
    else
        rc = cg_chart_terminal_series(out, lp, tp, v, k, ascii);
done:
    free(labels);
    free(texts);
    free(v);
    free(lp);
    free(tp);
    return rc;
}

/* The line saying the budget cut a bad end that differs short: its interval is wider than the
 * search assumes. Nothing otherwise. */
static int cut_text(const struct cg_bisect_report *r, bool md, struct cg_buf *out)
{
    if (r->bad_end_cut == CG_BISECT_CUT_NONE ||
        !cg_bisect_ends_differ(&r->search->c[r->search->n - 1].level))
        return 0;
    bool budget = r->bad_end_cut == CG_BISECT_CUT_BUDGET;
    return cg_buf_printf(out,
                         "%s%s cut the bad end's looks short (%zu of %zu pairs): its interval is "
                         "wider, and a step between may read as like bad\n%s",
                         md ? "" : "note: ",
                         budget ? (md ? "The budget" : "the budget")
                                : (md ? "A canary failure" : "a canary failure"),
                         r->bad_end_pairs[0], r->bad_end_pairs[1], md ? "\n" : "");
}

/* One step's first bad commit in words, for the terminal (md false) or markdown. */
static int step_text(const struct cg_bisect_report *r, const struct cg_bisect_step *s, bool md,
                     struct cg_buf *out)
{
    const struct cg_bisect_commit_info *c = &r->commits[s->first_high];
    char ch[96], before[96], step[96];
    struct cg_bisect_level size;
    cg_bisect_step_size(r->search, s, &size);
    change_text(r, &r->search->c[s->first_high].level, ch, sizeof(ch));
    change_text(r, &r->search->c[s->last_low].level, before, sizeof(before));
    change_text(r, &size, step, sizeof(step));
    int rc = cg_buf_printf(out, md ? "- **`%.12s`** " : "  %.12s  ", c->sha);
    if (md)
        rc |= cg_md_escape(out, c->subject ? c->subject : "", SUBJECT_MAX_BYTES);
    else
        rc |= cg_term_escape(out, c->subject ? c->subject : "", SUBJECT_MAX_BYTES);
    rc |= cg_buf_adds(out, md ? "<br>by " : "\n      by ");
    if (md)
        rc |= cg_md_escape(out, c->author ? c->author : "", 80);
    else
        rc |= cg_term_escape(out, c->author ? c->author : "", 80);
    rc |= cg_buf_adds(out, ", ");
    rc |= md ? cg_md_escape(out, c->date ? c->date : "", 40)
             : cg_term_escape(out, c->date ? c->date : "", 40);
    rc |= cg_buf_printf(out,
                        md ? "<br>%s against good; the commit before it: %s<br>the step itself: "
                             "%s%s\n"
                           : "\n      %s against good; the commit before it: %s\n"
                             "      the step itself: %s%s\n",
                        ch, before, step, exact(r) ? "" : " of good's level");
    return rc;
}

static int probes_terminal(const struct cg_bisect_report *r, struct cg_buf *out)
{
    int rc = cg_buf_adds(out, "probes, in the order made:\n");
    for (size_t i = 0; i < r->n_probes && rc == 0; i++) {
        const struct cg_bisect_probe *p = &r->probes[i];
        char ch[96], val[48];
        change_text(r, &p->level, ch, sizeof(ch));
        value_text(r, p->value, val, sizeof(val));
        const char *what = p->index == 0                ? "good"
                           : p->index + 1 == r->n_commits ? "bad"
                                                        : cg_bisect_answer_text(p->answer);
        rc = cg_buf_printf(out, "  %2zu  %.12s  #%-4zu %3zu run%s  ", i + 1,
                           r->commits[p->index].sha, p->index, p->runs, p->runs == 1 ? " " : "s");
        if (p->answer == CG_BISECT_SKIPPED) {
            rc |= cg_buf_adds(out, "skipped: ");
            rc |= cg_term_escape(out, p->reason, 200);
            rc |= cg_buf_adds(out, "\n");
        } else {
            rc |= cg_buf_printf(out, "%-10s %-28s %s\n", val, p->index == 0 ? "" : ch, what);
        }
    }
    return rc;
}

int cg_bisect_terminal(const struct cg_bisect_report *r, bool ascii, struct cg_buf *out)
{
    char head[512];
    struct cg_bisect_step steps[CG_BISECT_MAX_STEPS];
    size_t k = cg_bisect_steps(r->search, steps);
    cg_bisect_headline(r, head, sizeof(head));
    int rc = cg_buf_printf(out, "canary-gate bisect: %s\n", head);
    rc |= cut_text(r, false, out);
    for (size_t s = 0; s < k && r->outcome != CG_BISECT_NOTHING && rc == 0; s++) {
        if (steps[s].found)
            rc = step_text(r, &steps[s], false, out);
    }
    rc |= probes_terminal(r, out);
    rc |= cg_buf_printf(out, "%s of each measured commit, in commit order:\n", r->metric_name);
    rc |= chart(r, false, ascii, out);
    return rc;
}

static const char *verdict_word(const struct cg_bisect_report *r)
{
    return r->outcome == CG_BISECT_FOUND     ? "fail"
           : r->outcome == CG_BISECT_NOTHING ? "pass"
                                             : "inconclusive";
}

static int probes_markdown(const struct cg_bisect_report *r, struct cg_buf *out)
{
    int rc = cg_buf_adds(out, "\n| # | commit | subject | runs | value | change against good | "
                              "answer |\n|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < r->n_probes && rc == 0; i++) {
        const struct cg_bisect_probe *p = &r->probes[i];
        const struct cg_bisect_commit_info *c = &r->commits[p->index];
        char ch[96], val[48];
        change_text(r, &p->level, ch, sizeof(ch));
        value_text(r, p->value, val, sizeof(val));
        rc = cg_buf_printf(out, "| %zu | `%.12s` | ", i + 1, c->sha);
        rc |= cg_md_escape(out, c->subject ? c->subject : "", SUBJECT_MAX_BYTES);
        rc |= cg_buf_printf(out, " | %zu | %s | %s | ", p->runs, p->answer == CG_BISECT_SKIPPED ? "-" : val,
                            p->index == 0 || p->answer == CG_BISECT_SKIPPED ? "-" : ch);
        if (p->index == 0 || p->index + 1 == r->n_commits)
            rc |= cg_buf_adds(out, p->index == 0 ? "good end" : "bad end");
        else
            rc |= cg_buf_adds(out, cg_bisect_answer_text(p->answer));
        if (p->answer == CG_BISECT_SKIPPED) {
            rc |= cg_buf_adds(out, ": ");
            rc |= cg_md_escape(out, p->reason, 200);
        }
        rc |= cg_buf_adds(out, " |\n");
    }
    return rc;
}

int cg_bisect_markdown(const struct cg_bisect_report *r, struct cg_buf *out)
{
    char head[512];
    struct cg_bisect_step steps[CG_BISECT_MAX_STEPS];
    size_t k = cg_bisect_steps(r->search, steps);
    cg_bisect_headline(r, head, sizeof(head));
    int rc = cg_comment_marker_add_head(out, r->id != NULL && r->id[0] ? r->id : "bisect",
                                        verdict_word(r), NULL, 0);
    rc |= cg_buf_adds(out, "## canary-gate bisect: ");
    rc |= cg_md_escape(out, head, sizeof(head));
    rc |= cg_buf_printf(out, "\n\n%zu commits from `%.12s` (good) to `%.12s` (bad), metric "
                             "`%s`, %zu commits measured in %.0f s.\n\n",
                        r->n_commits, r->commits[0].sha, r->commits[r->n_commits - 1].sha,
                        r->metric_name, r->n_probes, r->seconds);
    rc |= cut_text(r, true, out);
    for (size_t s = 0; s < k && r->outcome != CG_BISECT_NOTHING && rc == 0; s++) {
        if (steps[s].found)
            rc = step_text(r, &steps[s], true, out);
    }
    rc |= probes_markdown(r, out);
    rc |= cg_buf_adds(out, "\n");
    rc |= chart(r, true, false, out);
    rc |= cg_buf_adds(out, "\n");
    rc |= cg_report_md_footer(out, "bisect");
    return rc;
}

static cJSON *level_json(const struct cg_bisect_level *lv)
{
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    cJSON_AddNumberToObject(o, "change", lv->change);
    if (isfinite(lv->low))
        cJSON_AddNumberToObject(o, "low", lv->low);
    else
        cJSON_AddNullToObject(o, "low");
    if (isfinite(lv->high))
        cJSON_AddNumberToObject(o, "high", lv->high);
    else
        cJSON_AddNullToObject(o, "high");
    return o;
}

/* Adds a string from git, repaired to UTF-8. False when out of memory. */
static bool add_text(cJSON *o, const char *name, const char *s)
{
    char *fixed = cg_utf8_dup(s != NULL ? s : "");
    bool ok = fixed != NULL && cJSON_AddStringToObject(o, name, fixed) != NULL;
    free(fixed);
    return ok;
}

static cJSON *commit_json(const struct cg_bisect_report *r, size_t i)
{
    cJSON *o = cJSON_CreateObject();
    const struct cg_bisect_commit_info *c = &r->commits[i];
    if (o == NULL || !add_text(o, "commit", c->sha) || !add_text(o, "subject", c->subject) ||
        !add_text(o, "author", c->author) || !add_text(o, "date", c->date)) {
        cJSON_Delete(o);
        return NULL;
    }
    cJSON_AddNumberToObject(o, "index", (double)i);
    return o;
}

static bool steps_json(const struct cg_bisect_report *r, cJSON *root)
{
    struct cg_bisect_step steps[CG_BISECT_MAX_STEPS];
    size_t k = r->outcome == CG_BISECT_NOTHING ? 0 : cg_bisect_steps(r->search, steps);
    cJSON *arr = cJSON_AddArrayToObject(root, "steps");
    for (size_t s = 0; arr != NULL && s < k; s++) {
        cJSON *o = cJSON_CreateObject();
        if (o == NULL)
            return false;
        cJSON_AddItemToArray(arr, o);
        cJSON_AddBoolToObject(o, "found", steps[s].found);
        cJSON *first = commit_json(r, steps[s].first_high);
        cJSON *last = commit_json(r, steps[s].last_low);
        if (first == NULL || last == NULL) {
            cJSON_Delete(first);
            cJSON_Delete(last);
            return false;
        }
        cJSON_AddItemToObject(o, steps[s].found ? "first_bad" : "first_like_bad", first);
        cJSON_AddItemToObject(o, "last_like_good", last);
        cJSON_AddItemToObject(o, "change", level_json(&r->search->c[steps[s].first_high].level));
        cJSON_AddItemToObject(o, "change_before", level_json(&r->search->c[steps[s].last_low].level));
        struct cg_bisect_level size;
        cg_bisect_step_size(r->search, &steps[s], &size);
        cJSON_AddItemToObject(o, "step", level_json(&size));
    }
    return arr != NULL;
}

static bool probes_json(const struct cg_bisect_report *r, cJSON *root)
{
    cJSON *arr = cJSON_AddArrayToObject(root, "probes");
    for (size_t i = 0; arr != NULL && i < r->n_probes; i++) {
        const struct cg_bisect_probe *p = &r->probes[i];
        cJSON *o = cJSON_CreateObject();
        if (o == NULL || !add_text(o, "commit", r->commits[p->index].sha)) {
            cJSON_Delete(o);
            return false;
        }
        cJSON_AddItemToArray(arr, o);
        cJSON_AddNumberToObject(o, "index", (double)p->index);
        cJSON_AddNumberToObject(o, "runs", (double)p->runs);
        cJSON_AddStringToObject(o, "answer", p->index == 0 ? "good_end"
                                             : p->index + 1 == r->n_commits
                                                 ? "bad_end"
                                                 : cg_bisect_answer_name(p->answer));
        if (p->answer == CG_BISECT_SKIPPED) {
            if (!add_text(o, "reason", p->reason))
                return false;
            continue;
        }
        cJSON_AddNumberToObject(o, "value", p->value);
        cJSON_AddItemToObject(o, "change", level_json(&p->level));
    }
    return arr != NULL;
}

char *cg_bisect_json(const struct cg_bisect_report *r)
{
    char head[512];
    char *text = NULL;
    cJSON *root = cJSON_CreateObject();
    if (root == NULL)
        return NULL;
    cg_bisect_headline(r, head, sizeof(head));
    cJSON_AddStringToObject(root, "schema", "canary-gate/bisect");
    cJSON_AddStringToObject(root, "version", CG_VERSION);
    cJSON_AddStringToObject(root, "outcome", r->outcome == CG_BISECT_FOUND     ? "found"
                                             : r->outcome == CG_BISECT_NOTHING ? "nothing"
                                                                               : "undecided");
    cJSON_AddStringToObject(root, "headline", head);
    cJSON_AddStringToObject(root, "metric", r->metric_name);
    cJSON_AddStringToObject(root, "change_unit", exact(r) ? "per_step" : "percent");
    cJSON_AddNumberToObject(root, "commits", (double)r->n_commits);
    cJSON_AddBoolToObject(root, "budget_spent", r->budget_spent);
    cJSON_AddBoolToObject(root, "bad_end_cut", r->bad_end_cut != CG_BISECT_CUT_NONE);
    if (r->bad_end_cut == CG_BISECT_CUT_NONE)
        cJSON_AddNullToObject(root, "bad_end_cut_by");
    else
        cJSON_AddStringToObject(root, "bad_end_cut_by",
                                r->bad_end_cut == CG_BISECT_CUT_BUDGET ? "budget"
                                                                       : "canary_failure");
    cJSON_AddNumberToObject(root, "seconds", r->seconds);
    cJSON *good = commit_json(r, 0), *bad = commit_json(r, r->n_commits - 1);
    if (good != NULL)
        cJSON_AddItemToObject(root, "good", good);
    if (bad != NULL)
        cJSON_AddItemToObject(root, "bad", bad);
    if (good != NULL && bad != NULL && steps_json(r, root) && probes_json(r, root))
        text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}
