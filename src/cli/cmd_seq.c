/*
 * cmd_seq: the main command's sequential looks and FAIL confirmation (see cmd_seq.h).
 */
#include "cmd_seq.h"

#include "sequential.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void cg_cmd_seq_opts_init(struct cg_cmd_seq_opts *o)
{
    o->max_runs = -1;
    o->budget_s = 0;
    o->spending = "pocock";
    o->confirm_runs = -1;
    o->no_confirm = false;
}

double cg_cmd_seq_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int collect_more(void *ctx, struct cg_artifact *a, size_t n, bool confirming,
                        double *seconds, struct cg_err *err)
{
    struct cg_collector *col = ctx;
    if (confirming)
        fprintf(stderr,
                "canary-gate: a regression failed the gate; confirming it with %zu fresh "
                "run%s against the same baseline\n",
                n, n == 1 ? "" : "s");
    else
        fprintf(stderr, "canary-gate: inconclusive after %zu runs; adding %zu\n", a->n_runs, n);
    double t0 = cg_cmd_seq_now_s();
    int rc = cg_collector_run(col, a, (long)n, (long)(a->n_runs + n), err);
    *seconds = cg_cmd_seq_now_s() - t0;
    return rc;
}

void cg_cmd_seq_print_looks(const struct cg_seq_info *i)
{
    const char *unit = i->paired ? "pairs" : "runs";
    if (i->looks > 1 || i->budget_stopped)
        fprintf(stderr,
                "canary-gate%s: %zu look%s (%s spending), %zu %s (%zu added), %.0f s of "
                "canary time%s%s%s\n",
                i->paired ? " ab" : "", i->looks, i->looks == 1 ? "" : "s", cg_spend_name(i->spend),
                i->current_runs, i->paired ? "pairs" : "runs on this side",
                i->current_runs - i->first_runs, i->canary_s, i->paired ? " on both sides" : "",
                i->budget_stopped ? "; the budget stopped further " : "",
                i->budget_stopped ? unit : "");
}

static void print_summary(const struct cg_seq_info *i)
{
    cg_cmd_seq_print_looks(i);
    if (i->confirm == CG_CONFIRM_CONFIRMED)
        fprintf(stderr, "canary-gate: the FAIL was confirmed by %zu fresh runs\n", i->confirm_runs);
    else if (i->confirm == CG_CONFIRM_REJECTED)
        fprintf(stderr,
                "canary-gate: %zu fresh runs did not confirm the FAIL: reported as "
                "inconclusive\n",
                i->confirm_runs);
}

int cg_cmd_seq_check(const char *verb, const struct cg_cmd_seq_opts *so, long runs, bool runs_given)
{
    if (so->max_runs > 0 && so->max_runs < runs)
        return cg_cmd_usage_error(
            verb,
            "--max-runs %ld is below %s %ld: the first look alone takes "
            "more; give --max-runs %ld at least",
            so->max_runs, runs_given ? "--runs" : "the thresholds' measurement.runs", runs, runs);
    return 0;
}

int cg_cmd_seq_decide(const struct cg_artifact *base, struct cg_artifact *cur,
                      const struct cg_thresholds *t, struct cg_collector *col, long runs,
                      double first_s, const char *out, const struct cg_cmd_seq_opts *so,
                      const struct cg_report_opts *ro)
{
    struct cg_artifact conf;
    struct cg_seq s;
    struct cg_err err;
    struct cg_seq_opts o = {0};
    char *conf_out = NULL;
    int exit_code;
    cg_artifact_init(&conf);
    cg_err_init(&err);
    size_t first = cur->n_runs;
    o.max_runs = so->max_runs > 0 ? (size_t)so->max_runs : CG_GATE_MAX_RUNS_FACTOR * (size_t)runs;
    o.batch = (size_t)runs;
    o.budget_s = so->budget_s;
    cg_spend_parse(so->spending, &o.spend);
    o.confirm = !so->no_confirm;
    o.confirm_runs =
        so->confirm_runs > 0 ? (size_t)so->confirm_runs : CG_GATE_CONFIRM_FACTOR * (size_t)runs;
    if (cg_seq_decide(base, cur, &conf, t, &o, first_s, collect_more, col, &s, &err) != 0) {
        exit_code = cg_cmd_fail(&err);
        struct cg_say say = cg_cmd_say();
        struct cg_collect_failure why = cg_collector_failure(col);
        cg_collect_hint(&why, &err, NULL, &say);
        /* What was measured is kept, also when a later run failed: beside --out, which keeps
         * the first look's runs (a failed measurement never replaces an artifact). */
        if (cur->n_runs > first)
            cg_cmd_save_partial(out, cur);
        goto save;
    }
    print_summary(&s.info);
    exit_code = cg_cmd_report_verdict(&s.verdict, ro);
    cg_seq_release(&s);
    if (cur->n_runs > first && cg_artifact_save(out, cur, &err) != 0)
        exit_code = cg_cmd_fail(&err);
save:
    if (conf.n_runs > 0) {
        if ((conf_out = cg_collect_sibling_path(out, ".confirm.json")) == NULL)
            cg_err_set(&err, CG_ENOMEM, "out of memory");
        if (conf_out == NULL || cg_artifact_save(conf_out, &conf, &err) != 0)
            exit_code = cg_cmd_fail(&err);
        else
            fprintf(stderr, "canary-gate: confirmation runs in '%s'\n", conf_out);
    }
    free(conf_out);
    cg_artifact_release(&conf);
    return exit_code;
}
