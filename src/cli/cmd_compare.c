/*
 * cmd_compare: `canary-gate compare BASELINE CURRENT` prints the table and verdict, and writes
 * the markdown report and JSON verdict when asked. Exit: 0 pass or inconclusive, 1 fail,
 * 2 bad input, 3 could not write, 4 inconclusive with --fail-on-inconclusive.
 */
#include "cmd.h"

#include "cmd_options.h"

#include "artifact.h"
#include "fsutil.h"
#include "history.h"
#include "report.h"
#include "thresholds.h"
#include "verdict.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage_text[] =
    "usage: canary-gate compare BASELINE CURRENT [options]\n"
    "\n"
    "Compares two run artifacts and prints the metric table and the verdict.\n"
    "\n"
    "  --thresholds FILE      thresholds file or built-in name (default, strict, smoke);\n"
    "                         default: the built-in default\n"
    "  --report FILE.md       write the markdown report (the PR comment body)\n"
    "  --json FILE            write the JSON verdict\n"
    "  --id NAME              gate id for the report's hidden marker (several gates per PR)\n"
    "  --history FILE         main's history (history.jsonl on the baseline branch): the\n"
    "                         reports mention a regression accepted there lately\n"
    "  --fail-on-inconclusive exit 4 when the verdict is inconclusive\n" CG_ONLY_USAGE
    "  --color WHEN           auto (default), always or never\n"
    "  -h, --help             show this help\n"
    "\n"
    "exit codes: 0 pass (or inconclusive), 1 fail, 2 usage error or invalid input (an output\n"
    "            that is an input or another output), 3 could not write an output,\n"
    "            4 inconclusive with --fail-on-inconclusive\n";

enum { OPT_THRESHOLDS = CG_OPT_COMMAND, OPT_HISTORY };

static const struct option options[] = {
    {"thresholds", required_argument, NULL, OPT_THRESHOLDS},
    {"history", required_argument, NULL, OPT_HISTORY},
    CG_REPORT_OPTIONS,
    {"color", required_argument, NULL, CG_OPT_COLOR},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* Loads both artifacts and the thresholds and reports the verdict (cg_cmd_report_compare). */
static int compare_and_report(const char *baseline_path, const char *current_path,
                              const char *thresholds_spec, const struct cg_report_opts *o)
{
    struct cg_err err;
    struct cg_artifact base, cur;
    struct cg_thresholds t;
    int exit_code;
    cg_err_init(&err);
    cg_artifact_init(&base);
    cg_artifact_init(&cur);
    size_t in_base, in_cur;
    if (cg_thresholds_load(thresholds_spec, &t, &err) != 0 ||
        cg_artifact_load(baseline_path, &base, &err) != 0 ||
        cg_artifact_load(current_path, &cur, &err) != 0) {
        exit_code = cg_cmd_fail(&err);
    } else if (cg_artifacts_share_run(&base, &cur, &in_base, &in_cur)) {
        /* a side compared with itself passes for ever (CURRENT pointed at the baseline) */
        exit_code = cg_cmd_usage_error("compare",
                                       "'%s' and '%s' hold the same run (runs[%zu] of the "
                                       "baseline is runs[%zu] of the current): a run compared "
                                       "with itself proves nothing",
                                       baseline_path, current_path, in_base, in_cur);
    } else {
        t.gate_only = o->only;
        cg_cmd_warn_small_baseline(baseline_path, &base, &t, false, o->fail_on_inconclusive);
        exit_code = cg_cmd_report_compare(&base, &cur, &t, o);
    }
    cg_artifact_release(&base);
    cg_artifact_release(&cur);
    return exit_code;
}

int cmd_compare(int argc, char **argv)
{
    const char *thresholds_spec = NULL, *history_path = NULL;
    const char *color_when = "auto";
    struct cg_report_opts ro = {0};
    int c;
    optind = 1;
    struct cg_cmd_given given = {0};
    while ((c = cg_cmd_getopt("compare", argc, argv, ":h", options, &given)) != -1) {
        int bad = cg_report_option("compare", c, optarg, &ro);
        if (bad == 0)
            continue;
        if (bad != 1)
            return bad;
        switch (c) {
        case OPT_THRESHOLDS:
            thresholds_spec = optarg;
            break;
        case OPT_HISTORY:
            history_path = optarg;
            break;
        case CG_OPT_COLOR:
            color_when = optarg;
            break;
        case 'h':
            fputs(usage_text, stdout);
            return CG_EXIT_PASS;
        default:
            return cg_cmd_option_error("compare", c, argv);
        }
    }
    if (argc - optind != 2)
        return cg_cmd_usage_error("compare", "expected BASELINE and CURRENT artifacts");
    int bad = cg_cmd_color("compare", color_when, &ro.color);
    if (bad != 0)
        return bad;
    struct cg_outputs paths;
    cg_outputs_init(&paths);
    cg_outputs_add(&paths, CG_PATH_INPUT, "BASELINE", argv[optind]);
    cg_outputs_add(&paths, CG_PATH_INPUT, "CURRENT", argv[optind + 1]);
    cg_cmd_add_thresholds(&paths, thresholds_spec);
    cg_outputs_add(&paths, CG_PATH_OUTPUT, "--report", ro.report_path);
    cg_outputs_add(&paths, CG_PATH_OUTPUT, "--json", ro.json_path);
    cg_outputs_add(&paths, CG_PATH_INPUT, "--history", history_path);
    int rc = cg_cmd_check_outputs(&paths);
    if (rc != 0)
        return rc;
    struct cg_history h = {0};
    if (history_path != NULL && (rc = cg_cmd_load_history(history_path, &h)) != 0)
        return rc;
    ro.history = history_path != NULL ? &h : NULL;
    rc = compare_and_report(argv[optind], argv[optind + 1], thresholds_spec, &ro);
    cg_history_release(&h);
    return rc;
}
