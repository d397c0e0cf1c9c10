/*
 * report_fmt: the texts shared by the renderers: the stopped-runs and sources lines and the
 * verdict's headline (see report.h).
 */
#include "report.h"
#include "signature.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* Room for a note escaped at its widest (12 bytes a byte), and for a headline quoting one. */
#define NOTE_ESCAPED_MAX_BYTES (CG_NOTE_MAX_BYTES * 12 + 4)
#define HEADLINE_MAX_BYTES (NOTE_ESCAPED_MAX_BYTES + 512)
_Static_assert(sizeof(((struct cg_metric_result *)0)->note) == CG_NOTE_MAX_BYTES + 1,
               "CG_NOTE_MAX_BYTES is a metric note's length");

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

void cg_report_short_commit(const char *commit, char *dst, size_t n)
{
    size_t len = strlen(commit);
    bool hash = (len == 40 || len == 64) && strspn(commit, "0123456789abcdef") == len;
    snprintf(dst, n, "%.*s", hash ? 12 : (int)(len < n ? len : n - 1), commit);
}

void cg_report_count_value(double v, char *dst, size_t n)
{
    if (isnan(v))
        snprintf(dst, n, "-");
    else if (v == floor(v))
        snprintf(dst, n, "%.0f", v);
    else {
        int len = snprintf(dst, n, "%.2f", v); /* 2.50 -> 2.5 */
        if (len > 0 && (size_t)len < n && dst[len - 1] == '0')
            dst[len - 1] = '\0';
    }
}

void cg_report_count_change(const struct cg_count_result *r, char *dst, size_t n)
{
    char d[24]; /* a count's digits; the sign and d fit the callers' 32 bytes */
    double delta = r->current - r->baseline;
    if (isnan(delta)) {
        snprintf(dst, n, "%s", "");
        return;
    }
    cg_report_count_value(fabs(delta), d, sizeof(d));
    snprintf(dst, n, "%s%s", delta < 0 ? "-" : "+", d);
}

void cg_report_count_allowed(const struct cg_count_result *r, const struct cg_thresholds *t,
                             char *dst, size_t n)
{
    char a[32];
    if (isnan(r->allowed)) {
        snprintf(dst, n, "%s", r->outcome == CG_OUT_UNAVAILABLE ? "-" : "not gated");
        return;
    }
    const struct cg_count_limit *lim =
        r->row >= 0 ? &t->counts[r->row] : cg_counts_range_limit(t, r->name);
    cg_report_count_value(r->allowed, a, sizeof(a));
    if (r->varies)
        snprintf(dst, n, "+%s (varies)", a);
    else if (lim->max_increase_pct > 0 && r->allowed > lim->max_increase)
        snprintf(dst, n, "+%g%% (+%s)", lim->max_increase_pct, a);
    else
        snprintf(dst, n, "+%s", a);
}

bool cg_report_where_shown(const struct cg_count_result *r)
{
    return r->n_where > 0 && r->row != CG_COUNT_SYNC_STREAM && r->row != CG_COUNT_SYNC_EVENT &&
           r->row != CG_COUNT_SYNC_CONTEXT;
}

void cg_report_where_parts(const struct cg_count_where *w, char *head, size_t hn, char *tail,
                           size_t tn)
{
    char d[24], b[24], c[24];
    double delta = w->current - w->baseline;
    cg_report_count_value(fabs(delta), d, sizeof(d));
    cg_report_count_value(w->baseline, b, sizeof(b));
    cg_report_count_value(w->current, c, sizeof(c));
    if (w->range == NULL) {
        snprintf(head, hn, "%s%s per step in no NVTX range (%s -> %s)", delta < 0 ? "-" : "+", d, b,
                 c);
        snprintf(tail, tn, "%s", "");
        return;
    }
    snprintf(head, hn, "%s%s per step %s ", delta < 0 ? "-" : "+", d, w->after ? "after" : "in");
    snprintf(tail, tn, " (%s -> %s)", b, c);
}

bool cg_report_count_listed(const struct cg_count_result *r)
{
    return r->outcome == CG_OUT_FAIL || r->outcome == CG_OUT_INCONCLUSIVE ||
           r->outcome == CG_OUT_UNAVAILABLE || r->baseline != r->current;
}

const char *cg_report_count_label(const struct cg_count_result *r)
{
    return r->row >= 0 ? cg_count_label(r->row) : "calls of the NVTX range";
}

/* How far beyond its limit a FAIL is, to rank the FAILs for the headline: a metric's regression
 * over its threshold, a share's rise over its limit, a count's growth over its allowed growth
 * (a count allowed no growth at all, e.g. any new synchronisation, ranks above every ratio, by
 * its growth); -1 for what does not FAIL. */
static double metric_excess(const struct cg_metric_result *r)
{
    if (r->outcome != CG_OUT_FAIL)
        return -1.0;
    return r->threshold_pct > 0 ? r->regression_pct / r->threshold_pct : 1.0;
}

static double count_excess(const struct cg_count_result *c)
{
    if (c->outcome != CG_OUT_FAIL)
        return -1.0;
    double growth = c->current - c->baseline;
    return c->allowed > 0 ? growth / c->allowed : 1e6 + growth;
}

static double part_excess(const struct cg_anatomy_part *p)
{
    if (p->outcome != CG_OUT_FAIL)
        return -1.0;
    return p->threshold_points > 0 ? p->shift_points / p->threshold_points : 1.0;
}

/* The worst FAIL of v by how far beyond its limit it is (metric_excess and kin): the kind
 * (0 metric, 1 count, 2 share of the step, 3 slow states; -1 none) and its index, and how many
 * FAIL in all. */
static int worst_fail(const struct cg_verdict *v, size_t *at, int *fails)
{
    int kind = -1;
    double best = -1.0;
    *fails = 0;
    for (int m = 0; m < CG_M_COUNT; m++) {
        double x = metric_excess(&v->metrics[m]);
        *fails += x >= 0;
        if (x > best) {
            best = x;
            kind = 0;
            *at = (size_t)m;
        }
    }
    for (size_t i = 0; i < v->counts.n; i++) {
        double x = count_excess(&v->counts.rows[i]);
        *fails += x >= 0;
        if (x > best) {
            best = x;
            kind = 1;
            *at = i;
        }
    }
    for (size_t i = 0; i < v->anatomy.n; i++) {
        double x = part_excess(&v->anatomy.parts[i]);
        *fails += x >= 0;
        if (x > best) {
            best = x;
            kind = 2;
            *at = i;
        }
    }
    if (v->states.outcome == CG_OUT_FAIL) {
        ++*fails;
        double x = v->states.rise_points / v->thresholds->slow_state.max_increase_points;
        if (x > best) {
            kind = 3;
            *at = 0;
        }
    }
    return kind;
}

/* A count's change in a headline: "+1 host synchronisations per step (0 -> 1)". Range names are
 * artifact strings: the headline says how many names, never which. */
static void count_phrase(const struct cg_count_result *c, char *dst, size_t n)
{
    char d[32], b[32], cu[32];
    cg_report_count_change(c, d, sizeof(d));
    cg_report_count_value(c->baseline, b, sizeof(b));
    cg_report_count_value(c->current, cu, sizeof(cu));
    snprintf(dst, n, "%s %s per step (%s -> %s)", d,
             c->row >= 0 ? cg_count_label(c->row) : "calls of an NVTX range", b, cu);
}

int cg_report_note(const char *note, enum cg_text_for to, struct cg_buf *out)
{
    if (to == CG_TEXT_MARKDOWN)
        return cg_md_escape(out, note, CG_NOTE_MAX_BYTES);
    if (to == CG_TEXT_TERMINAL)
        return cg_term_escape(out, note, CG_NOTE_MAX_BYTES);
    return cg_buf_adds(out, note);
}

/* A note as the headline for output to quotes it, into dst (NOTE_ESCAPED_MAX_BYTES holds the
 * widest); "" when it cannot be rendered. */
static void note_for(const char *note, enum cg_text_for to, char *dst, size_t n)
{
    struct cg_buf b;
    cg_buf_init(&b, n - 1);
    snprintf(dst, n, "%s", cg_report_note(note, to, &b) == 0 ? cg_buf_str(&b) : "");
    cg_buf_release(&b);
}

/* The FAIL headline: the worst FAIL by how far beyond its limit it is, and how many more. */
static void fail_headline(const struct cg_verdict *v, enum cg_text_for to, char *dst, size_t n)
{
    size_t at = 0;
    int fails = 0, kind = worst_fail(v, &at, &fails);
    char more[48] = "", what[HEADLINE_MAX_BYTES] = "";
    if (fails > 1)
        snprintf(more, sizeof(more), " (and %d more)", fails - 1);
    if (kind == 1) {
        count_phrase(&v->counts.rows[at], what, sizeof(what));
    } else if (kind == 2) {
        const struct cg_anatomy_part *p = &v->anatomy.parts[at];
        snprintf(what, sizeof(what), "%s share of the step %+.1f points (%.1f%% to %.1f%%, p = %.3g)",
                 cg_anatomy_label(p->kind), p->shift_points, 100.0 * p->baseline,
                 100.0 * p->current, p->p_value);
    } else if (kind == 3) {
        const struct cg_states *s = &v->states;
        snprintf(what, sizeof(what),
                 "%zu of %zu current runs in a slow state against %zu of %zu baseline runs "
                 "(%+.0f points, p = %.2g)",
                 s->slow[1], s->runs[1], s->slow[0], s->runs[0], s->rise_points, s->p_value);
    } else if (kind == 0) {
        const struct cg_metric_result *r = &v->metrics[at];
        char d[32], lo[32], hi[32];
        cg_fmt_pct(r->delta_pct, d, sizeof(d));
        cg_fmt_pct(r->ci_low_pct, lo, sizeof(lo));
        cg_fmt_pct(r->ci_high_pct, hi, sizeof(hi));
        if (r->grown_some) {
            char note[NOTE_ESCAPED_MAX_BYTES];
            note_for(r->note, to, note, sizeof(note));
            snprintf(what, sizeof(what), "%s: %s", cg_metric_label(r->metric), note);
        } else if (r->method == CG_METHOD_FIXED)
            snprintf(what, sizeof(what), "%s regressed %s", cg_metric_label(r->metric), d);
        else
            snprintf(what, sizeof(what), "%s regressed %s (interval %s to %s, p = %.3g)",
                     cg_metric_label(r->metric), d, lo, hi, r->p_value);
    }
    snprintf(dst, n, "FAIL: %s%s", what, more);
}

/* The metric that explains an INCONCLUSIVE: the first INCONCLUSIVE one. */
static const struct cg_metric_result *inconclusive_metric(const struct cg_verdict *v)
{
    for (int m = 0; m < CG_M_COUNT; m++) {
        if (v->metrics[m].outcome == CG_OUT_INCONCLUSIVE)
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
    if (v->nothing_gated[0] != '\0') {
        cg_fmt_pct(mean->delta_pct, d, sizeof(d));
        snprintf(dst, n,
                 "INCONCLUSIVE: nothing in --only %s could be gated on these runs (each is "
                 "unavailable or shown only; step time mean %s, not judged)",
                 v->nothing_gated, d);
        return true;
    }
    if (v->metrics[CG_M_TOKENS_PER_SEC].vanished &&
        v->metrics[CG_M_TOKENS_PER_SEC].outcome == CG_OUT_INCONCLUSIVE) {
        snprintf(dst, n, "INCONCLUSIVE: tokens/sec vanished: the baseline measured it, this run "
                         "did not (the canary's steps no longer carry tokens)");
        return true;
    }
    /* ab measures both sides now: its pairs have their own rule; and with timing not gated
     * (--only) a short baseline explains nothing */
    if (v->weak_baseline && mean->method != CG_METHOD_PAIRED &&
        mean->outcome == CG_OUT_INCONCLUSIVE) {
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

/* The headline with the notes it quotes escaped for output to. */
static void headline(const struct cg_verdict *v, enum cg_text_for to, char *dst, size_t n)
{
    const struct cg_metric_result *mean = &v->metrics[CG_M_STEP_TIME_MEAN];
    char d[32];
    if (integrity_headline(v, dst, n))
        return;
    if (v->overall == CG_OUT_FAIL) {
        fail_headline(v, to, dst, n);
        return;
    }
    if (v->overall == CG_OUT_PASS) {
        cg_fmt_pct(mean->delta_pct, d, sizeof(d));
        snprintf(dst, n, "PASS: no regression beyond the thresholds (step time mean %s)", d);
        return;
    }
    /* INCONCLUSIVE: one sentence, the change and then its reason */
    const struct cg_metric_result *r = inconclusive_metric(v);
    int count = 0;
    for (int m = 0; m < CG_M_COUNT; m++)
        count += v->metrics[m].outcome == CG_OUT_INCONCLUSIVE;
    char more[48] = "";
    if (count > 1)
        snprintf(more, sizeof(more), " (and %d more)", count - 1);
    if (r != NULL) {
        char th[32] = "";
        cg_fmt_pct(r->delta_pct, d, sizeof(d));
        if (r->regression_pct > r->threshold_pct)
            snprintf(th, sizeof(th), " beyond its %s%.1f%% threshold",
                     cg_metric_higher_is_worse(r->metric) ? "+" : "-", r->threshold_pct);
        char note[NOTE_ESCAPED_MAX_BYTES];
        note_for(r->note[0] ? r->note : "not confirmed", to, note, sizeof(note));
        snprintf(dst, n, "INCONCLUSIVE: %s %s%s: %s%s", cg_metric_label(r->metric), d, th, note,
                 more);
        return;
    }
    for (size_t i = 0; i < v->counts.n; i++) {
        const struct cg_count_result *x = &v->counts.rows[i];
        if (x->outcome != CG_OUT_INCONCLUSIVE)
            continue;
        char what[160];
        count_phrase(x, what, sizeof(what));
        snprintf(dst, n, "INCONCLUSIVE: %s: measured on a different machine (%s differs)", what,
                 v->machine_diff != NULL ? v->machine_diff : "environment");
        return;
    }
    for (size_t i = 0; i < v->anatomy.n; i++) {
        const struct cg_anatomy_part *p = &v->anatomy.parts[i];
        if (p->outcome != CG_OUT_INCONCLUSIVE)
            continue;
        snprintf(dst, n, "INCONCLUSIVE: %s share of the step %+.1f points (%.1f%% to %.1f%%, "
                         "p = %.3g): %s",
                 cg_anatomy_label(p->kind), p->shift_points, 100.0 * p->baseline,
                 100.0 * p->current, p->p_value,
                 p->other_machine ? "measured on a different machine"
                                  : "beyond its limit without enough runs or significance");
        return;
    }
    if (v->states.outcome == CG_OUT_INCONCLUSIVE) {
        snprintf(dst, n, "INCONCLUSIVE: %zu of %zu current runs in a slow state against %zu of "
                         "%zu baseline runs: %s",
                 v->states.slow[1], v->states.runs[1], v->states.slow[0], v->states.runs[0],
                 v->states.other_machine ? "measured on a different machine"
                                         : "beyond its limit, not significant");
        return;
    }
    snprintf(dst, n, "INCONCLUSIVE");
}

void cg_verdict_headline(const struct cg_verdict *v, char *dst, size_t n)
{
    headline(v, CG_TEXT_PLAIN, dst, n);
}

int cg_verdict_headline_for(const struct cg_verdict *v, enum cg_text_for to, struct cg_buf *out)
{
    char line[HEADLINE_MAX_BYTES];
    headline(v, to, line, sizeof(line));
    return cg_buf_adds(out, line);
}

void cg_report_states_text(const struct cg_verdict *v, char *dst, size_t n)
{
    const struct cg_states *s = &v->states;
    const struct cg_metric_result *f = &v->metrics[CG_M_STEP_TIME_FLOOR];
    if (n > 0)
        dst[0] = '\0';
    if (!s->tested ||
        (!s->own_states && s->slow[0] == 0 && s->slow[1] == 0 && s->outcome == CG_OUT_NOT_GATED))
        return; /* nothing to say: every run in the fast state, not gated */
    if (s->own_states) {
        bool cur_short = f->fast_runs[1] < f->fast_runs[0] ||
                         s->runs[1] - s->slow[1] < CG_FLOOR_MIN_FAST_RUNS;
        snprintf(dst, n,
                 "process states: %zu of %zu %s runs in the pooled fast state (need %d), so the "
                 "floor compared each side's own fastest runs; %zu of %zu current and %zu of %zu "
                 "baseline runs slower than it",
                 cur_short ? s->runs[1] - s->slow[1] : s->runs[0] - s->slow[0],
                 cur_short ? s->runs[1] : s->runs[0], cur_short ? "current" : "baseline",
                 CG_FLOOR_MIN_FAST_RUNS, s->slow[1], s->runs[1], s->slow[0], s->runs[0]);
        return;
    }
    const char *gate = s->outcome == CG_OUT_NOT_GATED ? "reported, not gated"
                       : s->outcome == CG_OUT_FAIL    ? "FAIL"
                       : s->outcome == CG_OUT_INCONCLUSIVE ? "inconclusive"
                                                           : "pass";
    if (s->finding)
        snprintf(dst, n,
                 "process states: %zu of %zu current runs in a slow state against %zu of %zu "
                 "baseline runs (%+.0f points, p = %.2g): a change that makes slow processes "
                 "likelier, which the floor of the fast state does not show (%s)",
                 s->slow[1], s->runs[1], s->slow[0], s->runs[0], s->rise_points, s->p_value, gate);
    else
        snprintf(dst, n,
                 "process states: %zu of %zu current and %zu of %zu baseline runs in a slow state "
                 "(p = %.2g; %s)",
                 s->slow[1], s->runs[1], s->slow[0], s->runs[0], s->p_value, gate);
}

/* ---- what the runs ran: the code and the kernel choices (signature.h) -------------------- */

/* A kernel name as the reports show it: without a leading "void ", cut to NAME_SHORT_BYTES,
 * escaped for markdown (in <code>) or the terminal. */
#define NAME_SHORT_BYTES 40
/* Kernel choices named at most; the rest are counted. */
#define REPORT_CHOICES_SHOWN 4

static int short_name(struct cg_buf *out, const char *name, bool markdown)
{
    if (strncmp(name, "void ", 5) == 0)
        name += 5;
    if (!markdown)
        return cg_term_escape(out, name, NAME_SHORT_BYTES);
    return cg_buf_adds(out, "<code>") | cg_md_escape(out, name, NAME_SHORT_BYTES) |
           cg_buf_adds(out, "</code>");
}

int cg_report_code_change(const struct cg_verdict *v, bool markdown, struct cg_buf *out)
{
    struct cg_code_change c;
    cg_signature_code_change(v->baseline, v->current, &c);
    if (c.n_changed == 0)
        return 0;
    int rc = cg_buf_adds(out, markdown ? "**Script:** the script changed since the baseline ("
                                       : "note: the script changed since the baseline (");
    for (size_t i = 0; i < c.n_files; i++) {
        rc |= cg_buf_adds(out, i ? ", " : "");
        rc |= markdown ? cg_buf_adds(out, "<code>") | cg_md_escape(out, c.files[i], 200) |
                             cg_buf_adds(out, "</code>")
                       : cg_term_escape(out, c.files[i], 200);
    }
    if (c.n_changed > c.n_files)
        rc |= cg_buf_printf(out, " and %zu more", c.n_changed - c.n_files);
    return rc | cg_buf_adds(out, markdown ? "); the canary is the same: its command and "
                                            "settings.\n"
                                          : "); the canary is the same\n");
}

int cg_report_kernel_choices(const struct cg_verdict *v, bool markdown, struct cg_buf *out)
{
    struct cg_kernel_choices kc;
    bool states = v->states.tested && !v->states.own_states;
    if (cg_signature_kernels(v->baseline, v->current, states, &kc) != 0)
        return CG_ENOMEM;
    int rc = 0;
    if (kc.n < 2 || kc.by_side)
        goto done; /* one choice, or the sides' difference: the op table shows it */
    rc |= cg_buf_printf(out,
                        markdown ? "**%zu kernel choices among the runs:** "
                                 : "note: %zu kernel choices among the runs: ",
                        kc.n);
    size_t shown = kc.n < REPORT_CHOICES_SHOWN ? kc.n : REPORT_CHOICES_SHOWN;
    for (size_t i = 0; i < shown; i++) {
        const struct cg_kernel_choice *ch = &kc.items[i];
        size_t runs = ch->runs[0] + ch->runs[1];
        rc |= cg_buf_adds(out, i ? ", " : "");
        if (ch->n_only > 0) {
            rc |= short_name(out, ch->only[0], markdown);
            if (ch->n_only > 1)
                rc |= cg_buf_printf(out, " (+%zu more)", ch->n_only - 1);
        } else {
            rc |= cg_buf_adds(out, "without ");
            rc |= short_name(out, ch->without[0], markdown);
            if (ch->n_without > 1)
                rc |= cg_buf_printf(out, " (+%zu more)", ch->n_without - 1);
        }
        rc |= cg_buf_printf(out, " in %zu run%s (baseline %zu, current %zu", runs,
                            runs == 1 ? "" : "s", ch->runs[0], ch->runs[1]);
        if (kc.states_known)
            rc |= cg_buf_printf(out, "; %zu in the fast state, %zu slow", ch->fast[0] + ch->fast[1],
                                runs - ch->fast[0] - ch->fast[1]);
        rc |= cg_buf_adds(out, ")");
    }
    if (kc.n > shown)
        rc |= cg_buf_printf(out, " and %zu more choices", kc.n - shown);
    rc |= cg_buf_adds(out, markdown ? ".\n" : "\n");
done:
    cg_kernel_choices_release(&kc);
    return rc;
}

bool cg_report_metric_shown(const struct cg_verdict *v, enum cg_metric m)
{
    if (!cg_metric_from_gpu_state(m))
        return true;
    const struct cg_artifact *sides[2] = {v->baseline, v->current};
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; sides[s] != NULL && i < sides[s]->n_runs; i++)
            if (sides[s]->runs[i].gpu.recorded)
                return true;
    return false;
}

void cg_report_change_text(const struct cg_metric_result *r, char *dst, size_t n)
{
    char d[32], lo[32], hi[32], interval[96], medians[48] = "";
    cg_fmt_pct(r->delta_pct, d, sizeof(d));
    bool low = isfinite(r->ci_low_pct), high = isfinite(r->ci_high_pct);
    cg_fmt_pct(r->ci_low_pct, lo, sizeof(lo));
    cg_fmt_pct(r->ci_high_pct, hi, sizeof(hi));
    if (!low && !high)
        snprintf(interval, sizeof(interval), "no interval with these runs");
    else
        snprintf(interval, sizeof(interval), "%s to %s", low ? lo : "no bound",
                 high ? hi : "no bound");
    if (r->method != CG_METHOD_FIXED && r->baseline > 0 && isfinite(r->current)) {
        double m = (r->current / r->baseline - 1.0) * 100.0;
        if (isfinite(m) && isfinite(r->delta_pct) &&
            (fabs(m - r->delta_pct) >= 1.0 || (m > 0) != (r->delta_pct > 0))) {
            char md[32];
            cg_fmt_pct(m, md, sizeof(md));
            snprintf(medians, sizeof(medians), "; medians %s", md);
        }
    }
    snprintf(dst, n, "%s (%s)%s", d, interval, medians);
}

/* Whether s holds word, ASCII case ignored. */
static bool holds_nocase(const char *s, const char *word)
{
    size_t n = strlen(word);
    for (; *s != '\0'; s++) {
        size_t i = 0;
        while (i < n && s[i] != '\0' &&
               tolower((unsigned char)s[i]) == tolower((unsigned char)word[i]))
            i++;
        if (i == n)
            return true;
    }
    return false;
}

const char *cg_report_gpu_advice(const char *reason)
{
    if (reason == NULL)
        return NULL;
    bool slot = strstr(reason, "subscriber slot") != NULL;
    if (holds_nocase(reason, "dcgm") || strstr(reason, "CUPTI_ERROR_HARDWARE_BUSY") != NULL)
        return "DCGM profiling (dcgm-exporter's profiling metrics) or another tool holds the "
               "GPU's profiling hardware: pause it for the gated runs ('dcgmi profile --pause', "
               "then 'dcgmi profile --resume')";
    if (slot && (holds_nocase(reason, "nsys") || holds_nocase(reason, "nsight")))
        return "Nsight is tracing the canary: run the gate outside the capture (or end the "
               "session: 'nsys shutdown')";
    if (slot && (holds_nocase(reason, "kineto") || holds_nocase(reason, "torch")))
        return "torch.profiler is on in the canary: gate the steps without it (profile in "
               "another run)";
    if (slot)
        return "another CUPTI client is attached to the canary: run it without that tool for "
               "the gated runs";
    if (strstr(reason, "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES") != NULL)
        return "the driver restricts profiling to administrators: allow it "
               "('NVreg_RestrictProfilingToAdminUsers=0') or run the canary with the rights";
    return NULL;
}
