/*
 * cmd_bisect_probe: measuring one commit of `canary-gate bisect` (cmd_bisect_session.h): its
 * worktree built, its canary run in pairs with the good end's (timing, looks planned as the
 * main command's) or once (a count), and the search that picks the commits. Times in seconds;
 * one thread.
 */
#include "cmd_bisect_session.h"

#include "cmd.h"
#include "count.h"
#include "fmt.h"
#include "fsutil.h"
#include "interleave.h"
#include "ladder.h"
#include "launch.h"
#include "paired.h"
#include "report.h"
#include "verdict.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool cg_cmd_bisect_exact(const struct cg_bisect_session *s)
{
    return s->o->count_row >= 0;
}

double cg_cmd_bisect_elapsed(const struct cg_bisect_session *s)
{
    return cg_cmd_seq_now_s() - s->t0;
}

/* The worktree path of commit i into dst. */
void cg_cmd_bisect_worktree_path(const struct cg_bisect_session *s, size_t i, char *dst, size_t n)
{
    snprintf(dst, n, "%s/%.12s", s->tmp, s->commits[i].sha);
}

static void log_path(const struct cg_bisect_session *s, size_t i, const char *what, char *dst,
                     size_t n)
{
    snprintf(dst, n, "%s/%.12s.%s.log", s->tmp, s->commits[i].sha, what);
}

/* The last non-empty line of a log (at most n - 1 bytes of its last 4 KiB) into dst. */
static void last_line(const char *path, char *dst, size_t n)
{
    char buf[4096];
    dst[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return;
    if (fseek(f, 0, SEEK_END) == 0) {
        long size = ftell(f);
        fseek(f, size > (long)sizeof(buf) - 1 ? size - (long)sizeof(buf) + 1 : 0, SEEK_SET);
    }
    size_t got = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    while (got > 0 && (buf[got - 1] == '\n' || buf[got - 1] == '\r' || buf[got - 1] == ' '))
        got--;
    buf[got] = '\0';
    char *start = strrchr(buf, '\n');
    start = start != NULL ? start + 1 : buf;
    size_t k = strlen(start) < n - 1 ? strlen(start) : n - 1;
    memcpy(dst, start, k);
    dst[k] = '\0';
}

/* Checks out commit i and builds it: 0, 1 when it is to be skipped (reason filled), or a
 * CG_E* code (interrupted: CG_ECANARY). */
/* A skipped commit's reason (rn bytes): "what: the error's message", cut with "..." to fit;
 * the error is cleared (a skip is not a failure of the bisection). */
static void reason_from(char *reason, size_t rn, const char *what, struct cg_err *err)
{
    int w = snprintf(reason, rn, "%s: %s", what, err->msg);
    if (w < 0 || (size_t)w >= rn)
        memcpy(reason + rn - 4, "...", 4);
    cg_err_init(err);
}

static int prepare(struct cg_bisect_session *s, size_t i, char *reason, size_t rn,
                   struct cg_err *err)
{
    char wt[4200], log[4300];
    cg_cmd_bisect_worktree_path(s, i, wt, sizeof(wt));
    if (access(wt, F_OK) == 0)
        return 0; /* already there (the good end) */
    int rc = cg_worktree_add(s->repo, s->commits[i].sha, wt, err);
    if (rc == CG_EIO && !cg_launch_interrupted()) { /* git could not check it out: skipped */
        reason_from(reason, rn, "it cannot be checked out", err);
        return 1;
    }
    if (rc != 0)
        return rc;
    if (s->o->build == NULL)
        return 0;
    log_path(s, i, "build", log, sizeof(log));
    char *argv[] = {"/bin/sh", "-c", (char *)s->o->build, NULL};
    struct cg_launch_opts lo = {.argv = argv,
                                .log_path = log,
                                .timeout_s = (double)s->c.timeout_s,
                                .kill_grace_s = (double)s->c.grace_s,
                                .poll_s = 0.5,
                                .cwd = wt};
    struct cg_launch_result r;
    fprintf(stderr, "canary-gate bisect: building %.12s\n", s->commits[i].sha);
    if ((rc = cg_launch_run(&lo, &r, err)) != 0)
        return rc;
    if (r.end == CG_LAUNCH_INTERRUPTED || cg_launch_interrupted())
        return cg_err_set(err, CG_ECANARY, "interrupted while building %.12s", s->commits[i].sha);
    if (r.end == CG_LAUNCH_EXITED && r.exit_code == 0)
        return 0;
    char tail[160];
    last_line(log, tail, sizeof(tail));
    if (r.end == CG_LAUNCH_TIMEOUT)
        snprintf(reason, rn, "the build ran past %ld s", s->c.timeout_s);
    else if (r.end == CG_LAUNCH_EXITED)
        snprintf(reason, rn, "the build failed (exit %d)%s%s", r.exit_code, tail[0] ? ": " : "",
                 tail);
    else
        snprintf(reason, rn, "the build was killed by signal %d", r.signal);
    return 1;
}

/* A collector for commit i's canary in its worktree. */
static int open_collector(struct cg_bisect_session *s, size_t i, struct cg_bisect_place *p,
                          struct cg_collector **col, struct cg_err *err)
{
    cg_cmd_bisect_worktree_path(s, i, p->wt, sizeof(p->wt));
    log_path(s, i, "canary", p->log, sizeof(p->log));
    struct cg_collect_cfg c = s->c;
    c.cmd = s->o->canary;
    c.cwd = p->wt;
    c.log = p->log;
    c.label = i == 0 ? "good" : NULL;
    c.env_said = &s->env_said;
    return cg_collector_new(&c, col, err);
}

/* A commit's level from a paired verdict's metric, worse positive. */
static void level_of(const struct cg_metric_result *r, enum cg_metric m, struct cg_bisect_level *lv)
{
    if (cg_metric_higher_is_worse(m)) {
        lv->change = r->delta_pct;
        lv->low = r->ci_low_pct;
        lv->high = r->ci_high_pct;
    } else {
        lv->change = -r->delta_pct;
        lv->low = -r->ci_high_pct;
        lv->high = -r->ci_low_pct;
    }
}

/* The plan of a commit's looks: --runs pairs a look up to --max-runs, alpha spent as
 * --spending says. */
int cg_cmd_bisect_make_plan(const struct cg_bisect_session *s, struct cg_seq_plan *plan,
                            struct cg_err *err)
{
    enum cg_spend spend = CG_SPEND_POCOCK;
    cg_spend_parse(s->o->seq.spending, &spend);
    return cg_seq_plan_make_paired(spend, (size_t)s->pairs, (size_t)s->pairs, (size_t)s->max_pairs,
                                   plan, err);
}

/* The bad end's looks ended at `pairs` of the plan's last look's, by why. */
static void cut_bad_end(struct cg_bisect_session *s, enum cg_bisect_cut why, size_t pairs,
                        const struct cg_seq_plan *plan)
{
    s->bad_end_cut = why;
    s->bad_end_pairs[0] = pairs;
    s->bad_end_pairs[1] = plan->runs_at[plan->n_looks - 1];
}

/* Commit i's runs (a) against good's (good): 0 when their steps are the same unit of work; else
 * a middle commit is skipped (1, the reason in reason) and the bad end cannot be bisected
 * (CG_EINPUT naming both). */
static int same_steps(const struct cg_bisect_session *s, size_t i, const struct cg_artifact *good,
                      const struct cg_artifact *a, char *reason, size_t rn, struct cg_err *err)
{
    char why[256];
    if (!cg_verdict_steps_redefined(good, a, why, sizeof(why)))
        return 0;
    if (i + 1 == s->n)
        return cg_err_set(err, CG_EINPUT,
                          "the bad end %.12s cannot be compared with the good end: %s",
                          s->commits[i].sha, why);
    snprintf(reason, rn, "%.220s", why);
    return 1;
}

/* Measures commit i (its collector col) in pairs against good, look after look, until its
 * answer is settled (the bad end: all its looks, as the budget allows). */
static int measure_timing(struct cg_bisect_session *s, size_t i, struct cg_collector *col,
                          struct cg_bisect_measured *out, char *reason, size_t rn,
                          struct cg_err *err)
{
    struct cg_artifact base, head;
    struct cg_seq_plan plan;
    cg_artifact_init(&base);
    cg_artifact_init(&head);
    int rc = cg_cmd_bisect_make_plan(s, &plan, err);
    bool is_bad = i + 1 == s->n, differed = false;
    out->answer = CG_BISECT_UNRESOLVED;
    for (size_t k = 0; rc == 0 && k < plan.n_looks; k++) {
        size_t want = plan.runs_at[k] - head.n_runs;
        double t_look = cg_cmd_seq_now_s();
        if ((rc = cg_interleave_run(s->good_col, &base, col, &head, (long)want, err)) != 0) {
            if (differed && rc == CG_ECANARY && !cg_launch_interrupted() &&
                !cg_collect_interrupted()) {
                /* a bad end that already differs keeps that look; the failure is said */
                fprintf(stderr,
                        "canary-gate bisect: the bad end's canary failed in its look %zu (%s): "
                        "its interval is from %zu of %zu pairs\n",
                        k + 1, err->msg, out->runs, plan.runs_at[plan.n_looks - 1]);
                cut_bad_end(s, CG_BISECT_CUT_CANARY, out->runs, &plan);
                cg_err_init(err);
                rc = 0;
            }
            break;
        }
        struct cg_thresholds tk;
        struct cg_verdict v;
        cg_seq_look_thresholds(&plan, k, &s->t, &tk);
        if ((rc = cg_paired_verdict(&base, &head, &tk, &v, err)) != 0)
            break;
        if (v.steps_redefined) {
            cg_verdict_release(&v);
            rc = same_steps(s, i, &base, &head, reason, rn, err);
            break;
        }
        level_of(&v.metrics[s->o->timing], s->o->timing, &out->level);
        out->value = v.metrics[s->o->timing].current;
        out->good_value = v.metrics[s->o->timing].baseline;
        cg_verdict_release(&v);
        out->runs = head.n_runs;
        bool final = k + 1 == plan.n_looks;
        if (is_bad) {
            /* the bad end is every probe's anchor: it takes all its looks, its interval
             * narrower than its first look's (bench/RESULTS.md, "the bad end on all its looks") */
            out->answer = CG_BISECT_LIKE_BAD;
        } else {
            out->answer = cg_bisect_classify(&s->search, i, &out->level, final);
            if (out->answer != CG_BISECT_UNRESOLVED)
                break;
        }
        /* the next look only when its time fits the budget */
        double look_s = cg_cmd_seq_now_s() - t_look;
        double next_s = k + 1 < plan.n_looks
                            ? look_s * (double)(plan.runs_at[k + 1] - head.n_runs) /
                                  (double)(want > 0 ? want : 1)
                            : 0;
        bool differs = is_bad && cg_bisect_ends_differ(&out->level);
        differed = differs;
        if (s->budget_s > 0 && cg_cmd_bisect_elapsed(s) + next_s > s->budget_s && !final) {
            /* the bad end's interval stays as wide as it is; the search checks the budget */
            s->budget_spent = !differs;
            if (is_bad)
                cut_bad_end(s, CG_BISECT_CUT_BUDGET, head.n_runs, &plan);
            if (differs)
                fprintf(stderr,
                        "canary-gate bisect: the budget leaves no time for the bad end's other "
                        "looks: its interval is from %zu of %zu pairs\n",
                        head.n_runs, plan.runs_at[plan.n_looks - 1]);
            break;
        }
        if (!final && differs)
            fprintf(stderr,
                    "canary-gate bisect: %.12s (the bad end) after %zu pairs; adding %zu: it "
                    "takes all its looks, every probe is read against it\n",
                    s->commits[i].sha, head.n_runs, plan.runs_at[k + 1] - head.n_runs);
        else if (!final)
            fprintf(stderr, "canary-gate bisect: %.12s unresolved after %zu pairs; adding %zu\n",
                    s->commits[i].sha, head.n_runs, plan.runs_at[k + 1] - head.n_runs);
    }
    cg_artifact_release(&base);
    cg_artifact_release(&head);
    return rc;
}

/* A run's count, as compare values it against good's run (cg_counts_run_value_against when
 * good's is the same in every step). */
static double count_value(const struct cg_bisect_session *s, const struct cg_run *r)
{
    bool varies = false;
    return s->good_exact ? cg_counts_run_value_against(r, s->o->count_row, s->good_value)
                         : cg_counts_run_value(r, s->o->count_row, &varies);
}

/* The count of one run of commit i (its collector col): NAN when the run did not measure it. */
static int measure_count(struct cg_bisect_session *s, struct cg_collector *col,
                         struct cg_artifact *a, double *value, struct cg_err *err)
{
    int rc = cg_collector_run(col, a, 1, 1, err);
    *value = rc == 0 && a->n_runs > 0 ? count_value(s, &a->runs[0]) : NAN;
    return rc;
}

/* An end's count runs once more (into a, after its first run: *value): a count that differs
 * between two runs of one commit is not exact for this canary, and one run a commit cannot
 * bisect it (CG_EINPUT naming the end and both values). */
static int count_again(struct cg_bisect_session *s, size_t i, struct cg_collector *col,
                       struct cg_artifact *a, double value, struct cg_err *err)
{
    int rc = cg_collector_run(col, a, 1, 2, err);
    if (rc != 0 || a->n_runs < 2)
        return rc;
    double again = count_value(s, &a->runs[a->n_runs - 1]);
    if (again == value || (isnan(again) && isnan(value)))
        return 0;
    char v1[32], v2[32];
    cg_report_count_value(value, v1, sizeof(v1));
    cg_report_count_value(again, v2, sizeof(v2));
    return cg_err_set(err, CG_EINPUT,
                      "the count '%s' differs between two runs of the %s end %.12s (%s and %s "
                      "per step): it is not exact for this canary, and one run a commit cannot "
                      "bisect it; bisect a timing metric (--metric step_time_floor)",
                      s->o->metric, i == 0 ? "good" : "bad", s->commits[i].sha, v1, v2);
}

/* Probes commit i (an end or not): builds it, measures it and records its answer. */
int cg_cmd_bisect_probe(struct cg_bisect_session *s, size_t i, struct cg_bisect_measured *m,
                        char *reason, size_t rn, struct cg_err *err)
{
    struct cg_collector *col = NULL;
    struct cg_artifact a;
    struct cg_bisect_place *place = malloc(sizeof(*place));
    if (place == NULL)
        return cg_err_set(err, CG_ENOMEM, "out of memory");
    cg_artifact_init(&a);
    reason[0] = '\0';
    m->value = m->good_value = NAN;
    m->runs = 0;
    m->level = (struct cg_bisect_level){NAN, NAN, NAN};
    m->answer = CG_BISECT_SKIPPED;
    if (cg_git_describe(s->repo, &s->commits[i], err) != 0) {
        free(place);
        return err->code;
    }
    fprintf(stderr, "canary-gate bisect: probing %.12s (#%zu of %zu)\n", s->commits[i].sha, i,
            s->n - 1);
    int rc = prepare(s, i, reason, rn, err);
    if (rc == 0)
        rc = open_collector(s, i, place, &col, err);
    if (rc == 0 && cg_cmd_bisect_exact(s)) {
        rc = measure_count(s, col, &a, &m->value, err);
        if (rc == 0)
            rc = same_steps(s, i, &s->good_count, &a, reason, rn, err);
        if (rc == 0 && i + 1 == s->n && !isnan(m->value))
            rc = count_again(s, i, col, &a, m->value, err);
        if (rc == 0 && isnan(m->value)) {
            snprintf(reason, rn, "its canary measured no '%s'", s->o->metric);
            rc = 1;
        } else if (rc == 0) {
            double d = m->value - s->good_value;
            m->level = (struct cg_bisect_level){d, d, d};
            m->runs = 1;
            m->answer = i + 1 == s->n ? CG_BISECT_LIKE_BAD
                                      : cg_bisect_classify(&s->search, i, &m->level, true);
        }
    } else if (rc == 0) {
        rc = measure_timing(s, i, col, m, reason, rn, err);
    }
    if (rc == CG_ECANARY && !cg_launch_interrupted() && !cg_collect_interrupted()) {
        reason_from(reason, rn, "its canary failed", err);
        rc = 1;
    }
    cg_collector_free(col);
    free(place);
    cg_artifact_release(&a);
    char wt[4200];
    cg_cmd_bisect_worktree_path(s, i, wt, sizeof(wt));
    struct cg_err rm;
    cg_err_init(&rm);
    if (cg_worktree_remove(s->repo, wt, &rm) != 0)
        fprintf(stderr, "canary-gate: %s\n", rm.msg);
    if (rc == 1) {
        s->keep_logs = true;
        m->answer = CG_BISECT_SKIPPED;
        struct cg_buf shown; /* a build's or canary's words, for a terminal */
        cg_buf_init(&shown, 4096);
        if (cg_term_escape(&shown, reason, 1024) != 0)
            cg_buf_reset(&shown);
        fprintf(stderr, "canary-gate bisect: %.12s skipped: %s\n", s->commits[i].sha,
                shown.len > 0 ? shown.data : "(out of memory)");
        cg_buf_release(&shown);
        return 0;
    }
    return rc;
}

int cg_cmd_bisect_add_probe(struct cg_bisect_session *s, size_t i,
                            const struct cg_bisect_measured *m, const char *reason)
{
    struct cg_bisect_probe *p = &s->probes[s->n_probes++];
    p->index = i;
    p->runs = m->runs;
    p->value = m->value;
    p->level = m->level;
    p->answer = m->answer;
    snprintf(p->reason, sizeof(p->reason), "%s", reason);
    if (m->answer != CG_BISECT_SKIPPED) {
        char ch[32];
        cg_fmt_pct(m->level.change, ch, sizeof(ch));
        fprintf(stderr, "canary-gate bisect: %.12s %s (%s%s against good, %zu run%s)\n",
                s->commits[i].sha, i + 1 == s->n ? "measured" : cg_bisect_answer_text(m->answer),
                cg_cmd_bisect_exact(s) ? "" : ch, cg_cmd_bisect_exact(s) ? "count" : "", m->runs,
                m->runs == 1 ? "" : "s");
    }
    return 0;
}

/* The good end: its worktree and build stay for the whole bisection. */
int cg_cmd_bisect_open_good(struct cg_bisect_session *s, struct cg_err *err)
{
    char reason[256];
    if (cg_git_describe(s->repo, &s->commits[0], err) != 0)
        return err->code;
    int rc = prepare(s, 0, reason, sizeof(reason), err);
    if (rc == 1)
        return cg_err_set(err, CG_EINPUT, "the good end %.12s cannot be measured: %s",
                          s->commits[0].sha, reason);
    if (rc == 0)
        rc = open_collector(s, 0, &s->good_place, &s->good_col, err);
    if (rc == 0 && cg_cmd_bisect_exact(s)) {
        rc = measure_count(s, s->good_col, &s->good_count, &s->good_value, err);
        if (rc == 0 && isnan(s->good_value))
            rc = cg_err_set(err, CG_EINPUT, "the good end's canary measured no '%s'", s->o->metric);
        if (rc == 0)
            rc = count_again(s, 0, s->good_col, &s->good_count, s->good_value, err);
        bool varies = false;
        if (rc == 0)
            cg_counts_run_value(&s->good_count.runs[0], s->o->count_row, &varies);
        s->good_exact = rc == 0 && !varies;
    }
    if (rc == CG_ECANARY && !cg_launch_interrupted() && !cg_collect_interrupted()) {
        char why[CG_ERR_MSG_MAX];
        snprintf(why, sizeof(why), "%s", err->msg);
        s->keep_logs = true; /* the message names its log */
        rc = cg_err_set(err, CG_EINPUT,
                        "the good end %.12s cannot be measured: its canary "
                        "failed: %.400s",
                        s->commits[0].sha, why);
    }
    return rc;
}

/* The search after the ends: probe by probe until it is over, interrupted or out of budget. */
int cg_cmd_bisect_search(struct cg_bisect_session *s, struct cg_err *err)
{
    size_t i;
    while (cg_bisect_next(&s->search, &i)) {
        if (s->budget_s > 0 && s->n_probes > 1) {
            double per = cg_cmd_bisect_elapsed(s) / (double)s->n_probes;
            if (cg_cmd_bisect_elapsed(s) + per > s->budget_s) {
                s->budget_spent = true;
                break;
            }
        }
        struct cg_bisect_measured m = {.answer = CG_BISECT_SKIPPED};
        char reason[256];
        int rc = cg_cmd_bisect_probe(s, i, &m, reason, sizeof(reason), err);
        if (rc != 0)
            return rc;
        cg_bisect_record(&s->search, i, m.answer, m.answer == CG_BISECT_SKIPPED ? NULL : &m.level);
        cg_cmd_bisect_add_probe(s, i, &m, reason);
        if (s->budget_spent)
            break;
    }
    return 0;
}
