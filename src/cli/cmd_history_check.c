/*
 * cmd_history_check: `canary-gate history check` finds the change points in main's history and
 * prints them, with the command that bisects each.
 */
#include "cmd.h"
#include "cmd_history_common.h"
#include "cmd_options.h"

#include "fsutil.h"
#include "github.h"
#include "history.h"
#include "outputs.h"
#include "report_history.h"
#include "trend.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The characters of a commit name printed into a bisect command line as it is. */
#define CG_HISTORY_BISECT_CHARS "0123456789abcdefABCDEF"

static const char check_usage[] =
    "usage: canary-gate history check --history FILE [options]\n"
    "\n"
    "Finds the step changes in each metric of main's history (E-divisive means with a\n"
    "permutation test, per environment segment: docs/statistics.md) and prints them: the\n"
    "metric, its change with a 95% interval, the commits between which it happened, p, and\n"
    "whether it was accepted; then each segment's level from its first stretch to its last, so\n"
    "slow drift that no single pull request crossed shows.\n"
    "\n"
    "  --history FILE      the history file\n"
    "  --gate-id ID        the gate's series (default: the runs recorded without one)\n"
    "  --alpha A           significance of each change point (default 0.01)\n"
    "  --min-segment N     fewest runs on either side of a change (default 4)\n"
    "  --permutations N    per test (default 199)\n"
    "  --keep N            the newest N runs of the gate are read, however many runs other\n"
    "                      gates recorded since (default 1000, what 'history append' keeps of\n"
    "                      each gate); the file is read a line at a time, in bounded memory\n"
    "  --markdown FILE     also write the findings as markdown: appended to FILE when it is\n"
    "                      the job summary ($GITHUB_STEP_SUMMARY), else FILE is replaced\n"
    "  --json FILE         also write them as JSON\n"
    "  --fail-on-change    exit 1 when the newest segment has a change for the worse that was\n"
    "                      not accepted\n"
    "  -h, --help          show this help\n"
    "\n"
    "exit codes: 0 checked, 1 a change for the worse with --fail-on-change, 2 usage error, a\n"
    "            history that cannot be read or no run of the gate in a history of other\n"
    "            gates' runs, 3 an output that cannot be written\n";

static const struct option check_options[] = {
    {"history", required_argument, NULL, 'f'},
    {"gate-id", required_argument, NULL, 'g'},
    CG_CHANGEPOINT_OPTIONS,
    {"markdown", required_argument, NULL, 'M'},
    {"json", required_argument, NULL, 'j'},
    {"fail-on-change", no_argument, NULL, 'F'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* True when path names the job summary, $GITHUB_STEP_SUMMARY: the same file (device and inode),
 * or the same path while there is none. The job summary is appended to, never replaced: the
 * gate's report may be there already. */
static bool is_job_summary(const char *path)
{
    const char *summary = getenv("GITHUB_STEP_SUMMARY");
    struct stat a, b;
    if (summary == NULL || summary[0] == '\0')
        return false;
    if (stat(path, &a) == 0 && stat(summary, &b) == 0)
        return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
    return strcmp(path, summary) == 0;
}

int cmd_history_check(int argc, char **argv)
{
    const char *path = NULL, *gate_id = NULL, *md_path = NULL, *json_path = NULL;
    bool fail_on_change = false;
    struct cg_cmd_cp_opts o;
    cg_cmd_cp_opts_init(&o);
    int c, bad;
    optind = 1;
    struct cg_cmd_given given = {0};
    while ((c = cg_cmd_getopt("history check", argc, argv, ":h", check_options, &given)) != -1) {
        if ((bad = cg_cmd_cp_option("history check", c, optarg, &o)) != 1) {
            if (bad)
                return bad;
            continue;
        }
        switch (c) {
        case 'f':
            path = optarg;
            break;
        case 'g':
            gate_id = optarg;
            break;
        case 'M':
            md_path = optarg;
            break;
        case 'j':
            json_path = optarg;
            break;
        case 'F':
            fail_on_change = true;
            break;
        case 'h':
            fputs(check_usage, stdout);
            return CG_EXIT_PASS;
        default:
            return cg_cmd_option_error("history check", c, argv);
        }
    }
    if (path == NULL)
        return cg_cmd_usage_error("history check", "missing --history FILE");
    if (optind != argc)
        return cg_cmd_usage_error("history check", "unexpected argument '%s'", argv[optind]);
    bool md_append = md_path != NULL && is_job_summary(md_path);
    struct cg_outputs paths;
    cg_outputs_init(&paths);
    cg_outputs_add(&paths, CG_PATH_INPUT, "--history", path);
    if (md_path)
        cg_outputs_add(&paths, md_append ? CG_PATH_IN_PLACE : CG_PATH_OUTPUT, "--markdown",
                       md_path);
    if (json_path)
        cg_outputs_add(&paths, CG_PATH_OUTPUT, "--json", json_path);
    int exit_code = cg_cmd_check_outputs(&paths);
    if (exit_code != 0)
        return exit_code;

    struct cg_err err;
    struct cg_history h = {0};
    struct cg_trend_report r = {0};
    struct cg_buf term, md;
    char *json = NULL;
    cg_err_init(&err);
    cg_buf_init(&term, 1 << 22);
    cg_buf_init(&md, 1 << 22);
    if ((exit_code = cg_cmd_history_load_gate(path, gate_id, o.keep, &h)) != 0)
        goto done;
    int rc = cg_trend_check(&h, gate_id, &o.cp, &r);
    if (rc == 0)
        rc = cg_report_history_terminal(&r, path, &term);
    /* appended after a blank line: it ends the HTML block a report may end in (</details>),
     * which would take the heading in */
    if (rc == 0 && md_append)
        rc = cg_buf_adds(&md, "\n");
    if (rc == 0 && md_path)
        rc = cg_report_history_markdown(&r, path, &md);
    if (rc == 0 && json_path && (json = cg_report_history_json(&r)) == NULL)
        rc = CG_ENOMEM;
    if (rc != 0) {
        cg_err_set(&err, CG_ENOMEM, "cannot check '%s': out of memory", path);
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    fputs(term.data ? term.data : "", stdout);
    for (size_t i = 0; i < r.n_changes; i++) /* the range each change came in, to bisect */
        if (r.changes[i].before != NULL && r.changes[i].after != NULL &&
            strspn(r.changes[i].before->commit, CG_HISTORY_BISECT_CHARS) ==
                strlen(r.changes[i].before->commit) &&
            strspn(r.changes[i].after->commit, CG_HISTORY_BISECT_CHARS) ==
                strlen(r.changes[i].after->commit))
            printf(
                "bisect %s: canary-gate bisect --good %s --bad %s --metric %s -- CANARY CMD...\n",
                cg_metric_name(r.changes[i].metric), r.changes[i].before->commit,
                r.changes[i].after->commit, cg_metric_name(r.changes[i].metric));
    const char *md_text = md.data ? md.data : "";
    if ((md_append && cg_github_summary_append(md_path, md_text, md.len, &err) != 0) ||
        (md_path && !md_append && cg_file_write_atomic(md_path, md_text, md.len, &err) != 0) ||
        (json_path && cg_file_write_atomic(json_path, json, strlen(json), &err) != 0)) {
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    for (size_t i = 0; i < r.n_changes && fail_on_change; i++)
        if (r.changes[i].segment == r.segments && r.changes[i].worse && !r.changes[i].accepted)
            exit_code = CG_EXIT_FAIL;
done:
    free(json);
    cg_buf_release(&term);
    cg_buf_release(&md);
    cg_trend_report_release(&r);
    cg_history_release(&h);
    return exit_code;
}
