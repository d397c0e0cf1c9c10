/*
 * cmd_gate: the main command, `canary-gate --baseline FILE [options] [-- CMD ARGS...]` (also
 * `canary-gate gate ...`). Runs the canary under instrumentation (the built-in canary when no
 * command is given), writes this run's artifact, compares it with the baseline, prints the table
 * and verdict, writes the markdown report and JSON verdict, optionally posts the PR comment,
 * commit status and check run, and exits with the gate's code.
 *
 * The baseline is loaded and checked before any canary time is spent. Measurement settings come
 * from the command line, else from the baseline (so both sides run the same canary), else from
 * the thresholds file. A canary that fails is reported (terminal, report, JSON, comment) as a
 * canary failure with its reason, exit 3. A missing baseline is exit 2 with how to record one,
 * unless --record-if-missing, which records this run as the baseline and passes with a note.
 * Every output is checked before the canary runs: none may be the same file as the baseline, the
 * thresholds or another output, and each must be writable. A failed or interrupted measurement
 * never replaces --out: the runs it completed go to FILE.partial.json.
 */
#include "cmd.h"

#include "artifact.h"
#include "buf.h"
#include "cg_version.h"
#include "cmd_options.h"
#include "cmd_seq.h"
#include "collect.h"
#include "fsutil.h"
#include "github.h"
#include "history.h"
#include "launch_env.h"
#include "report.h"
#include "thresholds.h"

#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage_text[] =
    "usage: canary-gate --baseline FILE [options] [-- CMD ARGS...]\n"
    "       canary-gate gate --baseline FILE [options] [-- CMD ARGS...]\n"
    "\n"
    "Runs the canary (the built-in one when no CMD is given) under instrumentation, writes this\n"
    "run's artifact, compares it with the baseline, prints the table and the verdict, writes the\n"
    "report and JSON verdict, and optionally posts the PR comment, commit status and check run.\n"
    "\n"
    "  --baseline FILE        the baseline artifact (record one with 'canary-gate run --out FILE')\n"
    "  --record-if-missing    when FILE does not exist, record this run as the baseline and pass\n"
    "  --thresholds FILE      thresholds file or built-in name (default, strict, smoke)\n"
    "  --runs N               canary runs (default: the thresholds file's measurement.runs)\n"
    "  --steps N              measured steps per run (default: the baseline's, else thresholds)\n"
    "  --warmup N             steps dropped per run (default: the baseline's, else thresholds)\n"
    "  --timeout SEC          per run: SIGTERM, then SIGKILL after --kill-grace (default 1800)\n"
    "  --kill-grace SEC       seconds between SIGTERM and SIGKILL (default 5)\n"
    "  --tokens-per-step N    tokens of a step, all ranks', with no payload\n"
    "  --step-range NAME      NVTX range name that marks a step (default: the baseline's, step)\n"
    CG_MEASURE_LET_FINISH_USAGE
    "  --out FILE             this run's artifact (default canary-run.json)\n"
    "  --log FILE             the canary's output (default: --out with .log)\n"
    "  --report FILE.md       the markdown report (the PR comment body)\n"
    "  --json FILE            the JSON verdict\n"
    "  --trace FILE.json      a Chrome trace (Perfetto) of the first run's --trace-steps A:B\n"
    "                         (measured steps from 0, default 0:2)\n"
    "  --comment              post the report as the pull request's comment (edited in place)\n"
    "  --comment-mode MODE    always (default with --comment), on-regression, never\n"
    "  --status               set the commit status canary-gate[/ID] on the pull request's head\n"
    "  --check-run            publish the check run canary-gate[/ID] there too (neutral when\n"
    "                         inconclusive; the report is its summary; needs checks: write)\n"
    "  --id NAME              gate id, for several gates on one pull request\n";

/* The rest of the help, apart: one string literal would pass the length C11 guarantees. */
static const char usage_notes[] =
    "  --history FILE         main's history (history.jsonl on the baseline branch): the\n"
    "                         reports mention a regression accepted there lately\n"
    "  --post-deadline SEC    give up posting the comment, status and check run after SEC\n"
    "                         seconds in all (default 120; the gate's exit code stands)\n"
    "  --fail-on-inconclusive exit 4 when the verdict is inconclusive\n" CG_ONLY_USAGE
    "  --color WHEN           auto (default), always or never\n" CG_GATE_SEQ_USAGE
    "  -h, --help             show this help\n"
    "\n"
    "--comment, --status and --check-run read GITHUB_TOKEN, GITHUB_REPOSITORY, GITHUB_EVENT_PATH (see\n"
    "'canary-gate comment --help'); without --report the report goes beside --out (FILE.md).\n"
    "\n"
    "Every output is checked before the canary runs: none may be the baseline, the thresholds\n"
    "or another output (exit 2), and each must be writable (exit 3). A failed or interrupted\n"
    "measurement never replaces --out: the runs it completed go to FILE.partial.json.\n"
    "\n"
    "exit codes: 0 pass (or inconclusive, or a baseline recorded), 1 fail, 2 usage or invalid\n"
    "            input (a missing or unreadable baseline, an output that is an input), 3 the\n"
    "            canary failed or a file could not be written, 4 inconclusive with\n"
    "            --fail-on-inconclusive\n";

enum {
    OPT_BASELINE = CG_OPT_COMMAND,
    OPT_RECORD,
    OPT_OUT,
    OPT_LOG,
    OPT_COMMENT,
    OPT_MODE,
    OPT_STATUS,
    OPT_CHECK_RUN,
    OPT_TRACE,
    OPT_TRACE_STEPS,
    OPT_DEADLINE,
    OPT_HISTORY
};

static const struct option options[] = {
    {"baseline", required_argument, NULL, OPT_BASELINE},
    {"record-if-missing", no_argument, NULL, OPT_RECORD},
    CG_MEASURE_OPTIONS,
    {"out", required_argument, NULL, OPT_OUT},
    {"log", required_argument, NULL, OPT_LOG},
    CG_REPORT_OPTIONS,
    {"comment", no_argument, NULL, OPT_COMMENT},
    {"comment-mode", required_argument, NULL, OPT_MODE},
    {"status", no_argument, NULL, OPT_STATUS},
    {"check-run", no_argument, NULL, OPT_CHECK_RUN},
    {"color", required_argument, NULL, CG_OPT_COLOR},
    {"trace", required_argument, NULL, OPT_TRACE},
    {"trace-steps", required_argument, NULL, OPT_TRACE_STEPS},
    {"post-deadline", required_argument, NULL, OPT_DEADLINE},
    {"history", required_argument, NULL, OPT_HISTORY},
    CG_GATE_SEQ_OPTIONS,
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

struct gate_opts {
    const char *baseline;
    const char *out;
    const char *comment_mode; /* NULL: always when --comment */
    enum cg_github_mode post_mode; /* settled: never without --comment, else comment_mode's */
    const char *color;
    const char *history; /* --history, or NULL */
    bool color_on; /* settled from color */
    long post_deadline_s; /* 0: the default */
    struct cg_report_opts ro; /* --report, --json, --id, --fail-on-inconclusive; color settled */
    bool record_if_missing, comment, status, check_run;
    struct cg_measure_opts m;    /* the measurement options (nothing given: -1, NULL) */
    long runs;                   /* settled */
    bool log_given, report_given;
    struct cg_collect_cfg collect;
    struct cg_cmd_seq_opts seq; /* sequential looks and confirmation */
};

static int parse_args(int argc, char **argv, struct gate_opts *o)
{
    int opt;
    optind = 1;
    struct cg_cmd_given given = {0};
    while ((opt = cg_cmd_getopt("gate", argc, argv, "+:h", options, &given)) != -1) {
        int bad = cg_measure_option("gate", opt, optarg, &o->m);
        if (bad == 1)
            bad = cg_report_option("gate", opt, optarg, &o->ro);
        if (bad != 1) {
            if (bad)
                return bad;
            continue;
        }
        bad = 0;
        switch (opt) {
        case OPT_BASELINE: o->baseline = optarg; break;
        case OPT_RECORD: o->record_if_missing = true; break;
        case OPT_OUT: o->out = optarg; break;
        case OPT_LOG:
            o->collect.log = optarg;
            o->log_given = true;
            break;
        case OPT_COMMENT: o->comment = true; break;
        case OPT_MODE: o->comment_mode = optarg; break;
        case OPT_STATUS:
            o->status = true;
            break;
        case OPT_CHECK_RUN: o->check_run = true; break;
        case CG_OPT_COLOR: o->color = optarg; break;
        case OPT_TRACE: o->collect.trace_path = optarg; break;
        case OPT_HISTORY: o->history = optarg; break;
        case OPT_TRACE_STEPS: o->collect.trace_steps = optarg; break;
        case OPT_DEADLINE: {
            if (cg_cmd_parse_count("gate", "--post-deadline", optarg, 1, 3600,
                                   &o->post_deadline_s) != 0)
                return CG_EXIT_INPUT;
            break;
        }
        case 'h':
            fputs(usage_text, stdout);
            fputs(usage_notes, stdout);
            return -1;
        default:
            if ((bad = cg_cmd_seq_option("gate", opt, optarg, &o->seq)) == 1)
                return cg_cmd_option_error("gate", opt, argv);
        }
        if (bad)
            return bad;
    }
    o->report_given = o->ro.report_path != NULL;
    if (o->baseline == NULL)
        return cg_cmd_usage_error("gate", "--baseline FILE is required");
    if (o->collect.trace_steps != NULL && !cg_collect_trace_steps_valid(o->collect.trace_steps))
        return cg_cmd_usage_error("gate", "--trace-steps '%s': expected A:B, whole numbers with "
                                          "A <= B < %d (measured steps, from 0)",
                                  o->collect.trace_steps, CG_MAX_STEP_INDEX);
    if (o->color == NULL)
        o->color = "auto";
    int bad = cg_cmd_color("gate", o->color, &o->color_on);
    if (bad != 0)
        return bad;
    o->post_mode = CG_GITHUB_MODE_ALWAYS;
    if (o->comment_mode != NULL && !cg_post_mode_parse(o->comment_mode, &o->post_mode))
        return cg_cmd_usage_error("gate", "--comment-mode '%s': expected always, on-regression "
                                          "or never", o->comment_mode);
    if (o->comment_mode != NULL && !o->comment)
        o->comment = o->post_mode != CG_GITHUB_MODE_NEVER;
    if (!o->comment)
        o->post_mode = CG_GITHUB_MODE_NEVER;
    if (optind < argc)
        o->collect.cmd = argv + optind;
    return 0;
}

/* Measurement settings: the command line, else the baseline's, else the thresholds file's. */
static void settle_settings(struct gate_opts *o, const struct cg_artifact *base,
                            const struct cg_thresholds *t)
{
    struct cg_collect_cfg *c = &o->collect;
    const struct cg_measure_opts *m = &o->m;
    bool have_base = base != NULL && base->n_runs > 0;
    cg_measure_apply(m, t, base, c, &o->runs);
    if (have_base && m->steps < 0 && m->warmup < 0 &&
        (base->settings.steps != t->steps || base->settings.warmup != t->warmup))
        fprintf(stderr, "canary-gate: measuring %ld steps after %ld warm-up per run, as the "
                        "baseline '%s' was (the thresholds say %lld after %lld)\n",
                c->steps, c->warmup, o->baseline, (long long)t->steps, (long long)t->warmup);
}

/* Posts the report (comment, status, check run) as 'canary-gate comment' does. Posting problems
 * are warnings there; they never change the gate's exit code. */
static void post(const struct gate_opts *o)
{
    if (!o->comment && !o->status && !o->check_run)
        return;
    struct cg_post_opts p;
    cg_post_opts_init(&p);
    p.report = o->ro.report_path;
    p.mode = o->post_mode;
    p.status = o->status;
    p.check_run = o->check_run;
    p.id = o->ro.gate_id;
    if (o->post_deadline_s > 0)
        p.deadline_s = o->post_deadline_s;
    fflush(stdout);
    cg_cmd_post(&p);
}

/* Runs o->runs canary runs into cur. On a canary failure prints it, reports it and returns its
 * exit code; 0 when every run was measured, with the collector left open in *colp for more. */
static int measure(struct gate_opts *o, struct cg_artifact *cur, struct cg_collector **colp)
{
    struct cg_err err;
    struct cg_collector *col = NULL;
    cg_err_init(&err);
    if (cg_collector_new(&o->collect, &col, &err) != 0)
        return err.code == CG_EINPUT ? cg_cmd_usage_error("gate", "%s", err.msg)
                                     : cg_cmd_fail(&err);
    int rc = cg_collector_run(col, cur, o->runs, o->runs, &err);
    if (rc == 0) {
        *colp = col;
        return 0;
    }
    struct cg_collect_failure why = cg_collector_failure(col);
    cg_collector_free(col);
    cg_cmd_fail(&err);
    cg_collect_hint(&why, &err, o->collect.step_range, &o->collect.say);
    cg_cmd_save_partial(o->out, cur); /* never over --out */
    if (err.code == CG_ECANARY && !cg_collect_interrupted()) {
        struct cg_log_tail tail;
        cg_cmd_show_log_tail(o->collect.log, &tail);
        struct cg_notice n = {CG_NOTICE_CANARY_FAILED, o->ro.gate_id, err.msg, &tail, NULL, NULL};
        if (cg_cmd_write_notice(&n, o->ro.report_path, o->ro.json_path) == 0 &&
            o->ro.report_path != NULL)
            post(o);
        cg_log_tail_release(&tail);
    }
    return CG_EXIT_RUNTIME;
}

/* --record-if-missing: this run becomes the baseline. */
static int record(struct gate_opts *o, const struct cg_artifact *cur,
                  const struct cg_thresholds *t)
{
    struct cg_err err;
    char body[1024];
    cg_err_init(&err);
    if (cg_artifact_save(o->baseline, cur, &err) != 0)
        return cg_cmd_fail(&err);
    cg_report_recorded_text(o->baseline, cur, body, sizeof(body));
    fprintf(cg_cmd_table_stream(o->ro.report_path, o->ro.json_path),
            "canary-gate: PASS (baseline recorded): %s\n", body);
    cg_cmd_warn_small_baseline(o->baseline, cur, t, true, false);
    struct cg_notice n = {
        CG_NOTICE_BASELINE_RECORDED, o->ro.gate_id, body, NULL, NULL, o->baseline};
    int rc = cg_cmd_write_notice(&n, o->ro.report_path, o->ro.json_path);
    if (rc == 0 && o->ro.report_path != NULL)
        post(o);
    return rc != 0 ? rc : CG_EXIT_PASS;
}

int cmd_gate(int argc, char **argv)
{
    struct gate_opts o = {0};
    struct cg_artifact base, cur;
    struct cg_thresholds t;
    struct cg_err err;
    struct cg_collector *col = NULL;
    struct cg_outputs paths;
    char *log_owned = NULL, *report_owned = NULL, *partial = NULL, *confirm = NULL;
    int exit_code;
    bool have_base = false;
    struct cg_history history = {0};
    o.out = "canary-run.json";
    o.color = "auto";
    cg_measure_opts_init(&o.m);
    cg_cmd_seq_opts_init(&o.seq);
    cg_err_init(&err);
    cg_artifact_init(&base);
    cg_artifact_init(&cur);

    int rc = parse_args(argc, argv, &o);
    if (rc != 0)
        return rc < 0 ? CG_EXIT_PASS : rc;
    if (cg_thresholds_load(o.m.thresholds, &t, &err) != 0)
        return cg_cmd_fail(&err);
    t.gate_only = o.ro.only;
    struct stat st;
    if (stat(o.baseline, &st) != 0 && errno == ENOENT) {
        if (!o.record_if_missing) {
            cg_cmd_errorf("baseline '%s' does not exist; record one on the main branch with "
                          "'canary-gate run --out %s' (the same canary and options), or pass "
                          "--record-if-missing to record it now",
                          o.baseline, o.baseline);
            return CG_EXIT_INPUT;
        }
    } else {
        if (cg_artifact_load(o.baseline, &base, &err) != 0)
            return cg_cmd_fail(&err);
        have_base = true;
        cg_cmd_warn_small_baseline(o.baseline, &base, &t, false, o.ro.fail_on_inconclusive);
    }
    settle_settings(&o, have_base ? &base : NULL, &t);
    if ((exit_code = cg_cmd_seq_check("gate", &o.seq, o.runs, o.m.runs > 0)) != 0)
        goto done;
    if (o.collect.log == NULL && (o.collect.log = log_owned = cg_collect_log_path(o.out)) == NULL)
        goto oom;
    if (o.ro.report_path == NULL && (o.comment || o.status || o.check_run) &&
        (o.ro.report_path = report_owned = cg_collect_sibling_path(o.out, ".md")) == NULL)
        goto oom;
    if ((partial = cg_cmd_partial_path(o.out)) == NULL ||
        (confirm = cg_collect_sibling_path(o.out, ".confirm.json")) == NULL)
        goto oom;
    /* Before any canary time: the log is truncated when the first run starts. */
    cg_outputs_init(&paths);
    cg_outputs_add(&paths, have_base ? CG_PATH_INPUT : CG_PATH_OUTPUT, "--baseline", o.baseline);
    cg_cmd_add_thresholds(&paths, o.m.thresholds);
    cg_outputs_add(&paths, CG_PATH_OUTPUT, "--out", o.out);
    cg_outputs_add(&paths, CG_PATH_IN_PLACE, o.log_given ? "--log" : "the canary's log",
                   o.collect.log);
    cg_outputs_add(&paths, CG_PATH_OUTPUT, o.report_given ? "--report" : "the report",
                   o.ro.report_path);
    cg_outputs_add(&paths, CG_PATH_OUTPUT, "--json", o.ro.json_path);
    cg_outputs_add(&paths, CG_PATH_OUTPUT, "--trace", o.collect.trace_path);
    cg_outputs_add(&paths, CG_PATH_OUTPUT, "the partial artifact", partial);
    cg_outputs_add(&paths, CG_PATH_OUTPUT, "the confirmation artifact", confirm);
    cg_outputs_add(&paths, CG_PATH_INPUT, "--history", o.history);
    if ((exit_code = cg_cmd_check_outputs(&paths)) != 0)
        goto done;
    if (o.history != NULL && have_base) {
        if ((exit_code = cg_cmd_load_history(o.history, &history)) != 0)
            goto done;
        o.ro.history = &history;
    }
    fprintf(stderr, "canary-gate: %s '%s': %ld run%s of %ld steps after %ld warm-up, thresholds "
                    "%s\n",
            have_base ? "gating against" : "recording the baseline", o.baseline, o.runs,
            o.runs == 1 ? "" : "s", o.collect.steps, o.collect.warmup, t.source);

    double first_t0 = cg_cmd_seq_now_s();
    exit_code = measure(&o, &cur, &col);
    double first_s = cg_cmd_seq_now_s() - first_t0;
    if (exit_code != 0)
        goto done;
    if (cg_artifact_save(o.out, &cur, &err) != 0) {
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    if (!cur.gpu_available && cur.gpu_reason != NULL)
        cg_cmd_say_gpu_unavailable(cur.gpu_reason);
    if (!have_base) {
        exit_code = record(&o, &cur, &t);
        goto done;
    }
    o.ro.color = o.color_on;
    exit_code = cg_cmd_seq_decide(&base, &cur, &t, col, o.runs, first_s, o.out, &o.seq, &o.ro);
    /* A verdict's exit code means the report and the JSON verdict were written; 3 means one of
     * them (or a later run) failed, and the line below names only what was written. */
    bool reported = exit_code == CG_EXIT_PASS || exit_code == CG_EXIT_FAIL ||
                    exit_code == CG_EXIT_INCONCLUSIVE;
    if (reported)
        post(&o);
    bool md = reported && o.ro.report_path != NULL, js = reported && o.ro.json_path != NULL;
    fprintf(stderr, "canary-gate: artifact '%s'%s%s%s%s%s%s, canary output '%s'\n", o.out,
            md ? ", report '" : "", md ? o.ro.report_path : "", md ? "'" : "",
            js ? ", verdict '" : "", js ? o.ro.json_path : "", js ? "'" : "", o.collect.log);
    goto done;
oom:
    cg_err_set(&err, CG_ENOMEM, "out of memory");
    exit_code = cg_cmd_fail(&err);
done:
    cg_collector_free(col);
    cg_artifact_release(&base);
    cg_artifact_release(&cur);
    cg_history_release(&history);
    free(log_owned);
    free(report_owned);
    free(partial);
    free(confirm);
    return exit_code;
}
