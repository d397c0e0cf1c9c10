/*
 * cmd_ab: `canary-gate ab --base "CMD ARGS..." [options] [-- HEAD CMD ARGS...]` runs the base and
 * the head canary turn about on this machine (A B B A ...; interleave.c), N runs each (default
 * the thresholds' runs), and compares them pair by pair (paired.c: Wilcoxon
 * signed-rank on per-pair log ratios, Hodges-Lehmann with Tukey's interval; the floor over the
 * fast runs), with the outputs and exit codes of the main command. While a timing metric is
 * inconclusive it adds pairs, up to --max-runs, with alpha spent over the looks (sequential.h).
 * --base is split into words without a shell (argsplit.h); the head command is the words after
 * '--', or the built-in canary. Writes both sides' artifacts. Every output is checked before
 * the canaries run (none the same file as an input or another output, each writable); a failed
 * or interrupted measurement replaces neither side's artifact: the runs completed go beside each
 * (FILE.partial.json).
 * Exit: 0 pass (or inconclusive), 1 fail, 2 usage or input, 3 the canary failed or a file could
 * not be written, 4 inconclusive with --fail-on-inconclusive.
 */
#include "cmd.h"

#include "argsplit.h"
#include "artifact.h"
#include "cmd_options.h"
#include "collect.h"
#include "fsutil.h"
#include "report.h"

#include "cmd_seq.h"
#include "interleave.h"
#include "paired.h"
#include "sequential.h"
#include "verdict.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage_text[] =
    "usage: canary-gate ab --base \"CMD ARGS...\" [options] [-- HEAD CMD ARGS...]\n"
    "\n"
    "Runs the base and the head canary turn about on this machine (A B B A ...), N runs each\n"
    "(default: the thresholds' measurement.runs, pairs here), so drift falls\n"
    "on both alike, and compares run k of each side as a pair for the step time mean, p95 and\n"
    "tokens/sec: Wilcoxon signed-rank test on the per-pair ratios, Hodges-Lehmann change with its\n"
    "interval. The step time floor compares the two sides' fast runs (Mann-Whitney). While a\n"
    "timing metric is inconclusive, pairs are added (the thresholds' runs at a time) up to\n"
    "--max-runs, with alpha spent over the looks. Without HEAD CMD the built-in canary is the\n"
    "head.\n"
    "\n"
    "  --base \"CMD ARGS...\"   the base canary, split into words without a shell: blanks\n"
    "                         separate words, '...' is literal, \"...\" keeps blanks (\\\" and "
    "\\\\\n"
    "                         inside), a backslash outside quotes escapes the next character;\n"
    "                         $ * ; | and the like are plain characters\n" CG_MEASURE_USAGE
    "  --max-runs N           pairs at most while a metric is inconclusive (default: 2 x the\n"
    "                         first look's pairs; equal to --runs: one look)\n"
    "  --budget SEC           canary time of both sides at most; pairs are added only when\n"
    "                         their estimated time fits\n"
    "  --spending NAME        alpha over the looks: pocock (default), obrien-fleming, "
    "bonferroni\n";

/* The rest of the usage (one string would pass the length C99 compilers must take). */
static const char usage_outputs[] =
    "  --out FILE             the head's artifact (default canary-ab-head.json)\n"
    "  --out-base FILE        the base's artifact (default canary-ab-base.json)\n"
    "  --report FILE.md       write the markdown report\n"
    "  --json FILE            write the JSON verdict\n"
    "  --id NAME              gate id for the report's hidden marker\n"
    "  --fail-on-inconclusive exit 4 when the verdict is inconclusive\n" CG_ONLY_USAGE
    "  --color WHEN           auto (default), always or never\n"
    "  -h, --help             show this help\n"
    "\n"
    "Each side's canary output goes beside its artifact (FILE.log). A failed or interrupted\n"
    "measurement replaces neither artifact: the runs completed go beside each\n"
    "(FILE.partial.json).\n"
    "\n"
    "exit codes: 0 pass (or inconclusive), 1 fail, 2 usage error or invalid input (incl. an\n"
    "            output that is the same file as an input or another output),\n"
    "            3 the canary failed, timed out or was interrupted, or an output could not be\n"
    "            written, 4 inconclusive with --fail-on-inconclusive\n";

enum { OPT_BASE = CG_OPT_COMMAND, OPT_OUT, OPT_OUT_BASE };

static const struct option options[] = {
    CG_MEASURE_OPTIONS,
    {"max-runs", required_argument, NULL, CG_SOPT_MAX_RUNS},
    {"budget", required_argument, NULL, CG_SOPT_BUDGET},
    {"spending", required_argument, NULL, CG_SOPT_SPENDING},
    {"base", required_argument, NULL, OPT_BASE},
    {"out", required_argument, NULL, OPT_OUT},
    {"out-base", required_argument, NULL, OPT_OUT_BASE},
    CG_REPORT_OPTIONS,
    {"color", required_argument, NULL, CG_OPT_COLOR},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

struct ab_opts {
    struct cg_measure_opts m;
    struct cg_cmd_seq_opts seq; /* --max-runs, --budget, --spending (no confirmation) */
    const char *base, *out, *out_base, *color;
    struct cg_report_opts report;
    char *const *head;
};

static int parse_args(int argc, char **argv, struct ab_opts *o)
{
    int opt;
    optind = 1;
    struct cg_cmd_given given = {0};
    while ((opt = cg_cmd_getopt("ab", argc, argv, "+:h", options, &given)) != -1) {
        int bad = cg_measure_option("ab", opt, optarg, &o->m);
        if (bad == 1)
            bad = cg_cmd_seq_option("ab", opt, optarg, &o->seq);
        if (bad == 1)
            bad = cg_report_option("ab", opt, optarg, &o->report);
        if (bad != 1) {
            if (bad)
                return bad;
            continue;
        }
        switch (opt) {
        case OPT_BASE:
            o->base = optarg;
            break;
        case OPT_OUT:
            o->out = optarg;
            break;
        case OPT_OUT_BASE:
            o->out_base = optarg;
            break;
        case CG_OPT_COLOR:
            o->color = optarg;
            break;
        case 'h':
            fputs(usage_text, stdout);
            fputs(usage_outputs, stdout);
            return -1;
        default:
            return cg_cmd_option_error("ab", opt, argv);
        }
    }
    if (o->base == NULL)
        return cg_cmd_usage_error("ab", "--base \"CMD ARGS...\" is required");
    int bad = cg_cmd_color("ab", o->color, &o->report.color);
    if (bad != 0)
        return bad;
    if (optind < argc)
        o->head = argv + optind;
    return 0;
}

/* Saves the completed runs of both sides after a failure or an interruption, beside their
 * artifacts (FILE.partial.json), never over them. */
static void save_partial(const struct ab_opts *o, const struct cg_artifact *base,
                         const struct cg_artifact *head)
{
    if (base->n_runs > 0)
        cg_cmd_save_partial(o->out_base, base);
    if (head->n_runs > 0)
        cg_cmd_save_partial(o->out, head);
}

/* A canary failed: the "error" report (its markers, the reason line the commit status carries)
 * and JSON verdict where asked, as the main command writes them, so the Action's base-command
 * mode posts why. 0, or the exit code (printed) of an output that cannot be written. */
static int write_error(const struct ab_opts *o, const char *reason,
                       const struct cg_log_tail *tail)
{
    struct cg_notice n = {CG_NOTICE_CANARY_FAILED, o->report.gate_id, reason, tail, "ab", NULL};
    return cg_cmd_write_notice(&n, o->report.report_path, o->report.json_path);
}

struct ab_more {
    struct cg_collector *cb, *ch;
    struct cg_artifact *base;
};

/* cg_seq_measure_fn: n more pairs, the base's into more->base, the head's into head. */
static int add_pairs(void *ctx, struct cg_artifact *head, size_t n, bool confirming,
                     double *seconds, struct cg_err *err)
{
    struct ab_more *more = ctx;
    (void)confirming; /* pairs are not confirmed */
    fprintf(stderr, "canary-gate ab: inconclusive after %zu pairs; adding %zu\n", head->n_runs, n);
    double t0 = cg_cmd_seq_now_s();
    int rc = cg_interleave_run(more->cb, more->base, more->ch, head, (long)n, err);
    *seconds = cg_cmd_seq_now_s() - t0;
    return rc;
}

/* Measures the first pairs into base and head, decides with more pairs while that can help
 * (sequential.h), and reports. The exit code; *decided when a verdict was reported. */
static int measure_and_decide(struct ab_opts *o, char **base_argv, struct cg_collect_cfg *c,
                              const struct cg_thresholds *t, long runs, struct cg_artifact *base,
                              struct cg_artifact *head, char **logs, bool *decided)
{
    struct cg_collector *cb = NULL, *ch = NULL;
    struct cg_err err;
    struct cg_seq s;
    int exit_code = 0;
    cg_err_init(&err);
    struct cg_collect_cfg cfg_b = *c, cfg_h = *c;
    bool env_said = false; /* the inherited variables are named once, not once per side */
    cfg_b.env_said = cfg_h.env_said = &env_said;
    cfg_b.cmd = base_argv;
    cfg_b.label = "base";
    cfg_b.log = logs[0];
    cfg_h.cmd = o->head;
    cfg_h.label = "head";
    cfg_h.log = logs[1];
    if (cg_collector_new(&cfg_b, &cb, &err) != 0 || cg_collector_new(&cfg_h, &ch, &err) != 0) {
        exit_code =
            err.code == CG_EINPUT ? cg_cmd_usage_error("ab", "%s", err.msg) : cg_cmd_fail(&err);
        goto done;
    }
    double t0 = cg_cmd_seq_now_s();
    if (cg_interleave_run(cb, base, ch, head, runs, &err) != 0)
        goto failed;
    struct cg_seq_opts so = {0};
    so.max_runs =
        o->seq.max_runs > 0 ? (size_t)o->seq.max_runs : CG_AB_MAX_PAIRS_FACTOR * (size_t)runs;
    so.batch = (size_t)t->runs;
    so.budget_s = o->seq.budget_s;
    cg_spend_parse(o->seq.spending, &so.spend);
    so.paired = true;
    struct ab_more more = {cb, ch, base};
    if (cg_seq_decide(base, head, NULL, t, &so, cg_cmd_seq_now_s() - t0, add_pairs, &more, &s,
                      &err) != 0)
        goto failed;
    cg_cmd_seq_print_looks(&s.info);
    exit_code = cg_cmd_report_verdict(&s.verdict, &o->report);
    cg_seq_release(&s);
    *decided = true;
    goto done;
failed:
    exit_code = cg_cmd_fail(&err);
    struct cg_collector *side = cg_interleave_failed_a(base, head) ? cb : ch;
    struct cg_collect_failure why = cg_collector_failure(side);
    cg_collect_hint(&why, &err, c->step_range, &c->say);
    save_partial(o, base, head);
    if (err.code == CG_ECANARY && !cg_collect_interrupted()) {
        struct cg_log_tail tail;
        cg_cmd_show_log_tail(logs[cg_interleave_failed_a(base, head) ? 0 : 1], &tail);
        write_error(o, err.msg, &tail);
        cg_log_tail_release(&tail);
    }
done:
    cg_collector_free(cb);
    cg_collector_free(ch);
    return exit_code;
}

int cmd_ab(int argc, char **argv)
{
    struct ab_opts o;
    struct cg_collect_cfg c;
    struct cg_thresholds t;
    struct cg_artifact base, head;
    struct cg_err err;
    char **base_argv = NULL, *logs[2] = {NULL, NULL}, *partials[2] = {NULL, NULL};
    struct cg_outputs paths;
    size_t base_argc = 0;
    long runs;
    bool decided = false;
    int exit_code;
    memset(&o, 0, sizeof(o));
    cg_measure_opts_init(&o.m);
    cg_cmd_seq_opts_init(&o.seq);
    o.out = "canary-ab-head.json";
    o.out_base = "canary-ab-base.json";
    o.color = "auto";
    cg_err_init(&err);
    cg_artifact_init(&base);
    cg_artifact_init(&head);
    int rc = parse_args(argc, argv, &o);
    if (rc != 0)
        return rc < 0 ? CG_EXIT_PASS : rc;
    if (cg_argsplit(o.base, &base_argv, &base_argc, &err) != 0)
        return err.code == CG_EINPUT ? cg_cmd_usage_error("ab", "--base: %s", err.msg)
                                     : cg_cmd_fail(&err);
    if (cg_measure_settle(&o.m, &t, &c, &runs, &err) != 0) {
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    t.gate_only = o.report.only;
    if ((exit_code = cg_cmd_seq_check("ab", &o.seq, runs, o.m.runs > 0)) != 0)
        goto done;
    if ((logs[0] = cg_collect_log_path(o.out_base)) == NULL ||
        (logs[1] = cg_collect_log_path(o.out)) == NULL ||
        (partials[0] = cg_cmd_partial_path(o.out_base)) == NULL ||
        (partials[1] = cg_cmd_partial_path(o.out)) == NULL) {
        cg_err_set(&err, CG_ENOMEM, "out of memory");
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    cg_outputs_init(&paths);
    cg_cmd_add_thresholds(&paths, o.m.thresholds);
    cg_outputs_add(&paths, CG_PATH_OUTPUT, "--out", o.out);
    cg_outputs_add(&paths, CG_PATH_OUTPUT, "--out-base", o.out_base);
    cg_outputs_add(&paths, CG_PATH_IN_PLACE, "the head's log", logs[1]);
    cg_outputs_add(&paths, CG_PATH_IN_PLACE, "the base's log", logs[0]);
    cg_outputs_add(&paths, CG_PATH_OUTPUT, "--report", o.report.report_path);
    cg_outputs_add(&paths, CG_PATH_OUTPUT, "--json", o.report.json_path);
    cg_outputs_add(&paths, CG_PATH_OUTPUT, "the head's partial artifact", partials[1]);
    cg_outputs_add(&paths, CG_PATH_OUTPUT, "the base's partial artifact", partials[0]);
    if ((exit_code = cg_cmd_check_outputs(&paths)) != 0)
        goto done;
    fprintf(stderr,
            "canary-gate ab: %ld pairs (base and head turn about, A B B A ...) of %ld "
            "steps after %ld warm-up, thresholds %s\n",
            runs, c.steps, c.warmup, t.source);
    exit_code = measure_and_decide(&o, base_argv, &c, &t, runs, &base, &head, logs, &decided);
    if (!decided) /* a canary failed or was interrupted: no verdict, no artifact replaced */
        goto done;
    bool reported = exit_code != CG_EXIT_RUNTIME; /* the report and verdict were written */
    if (cg_artifact_save(o.out_base, &base, &err) != 0 ||
        cg_artifact_save(o.out, &head, &err) != 0) {
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    bool md = reported && o.report.report_path != NULL, js = reported && o.report.json_path != NULL;
    fprintf(stderr,
            "canary-gate ab: artifacts '%s' (base) and '%s' (head)%s%s%s%s%s%s, canary output "
            "'%s' and '%s'\n",
            o.out_base, o.out, md ? ", report '" : "", md ? o.report.report_path : "",
            md ? "'" : "", js ? ", verdict '" : "", js ? o.report.json_path : "", js ? "'" : "",
            logs[0], logs[1]);
done:
    cg_argsplit_free(base_argv);
    free(logs[0]);
    free(logs[1]);
    free(partials[0]);
    free(partials[1]);
    cg_artifact_release(&base);
    cg_artifact_release(&head);
    return exit_code;
}
