/*
 * cmd: the subcommands of canary-gate. Only this layer prints to the user and picks exit codes.
 *
 * Each cmd_<verb>.c holds a usage text, an option table and one entry function that takes the
 * subcommand's argv (argv[0] is the verb) and returns the process exit code (enum cg_exit).
 */
#ifndef CG_CMD_H
#define CG_CMD_H

#include "artifact.h"
#include "err.h"
#include "github.h"
#include "logtail.h"
#include "outcome.h"
#include "outputs.h"
#include "say.h"
#include "thresholds.h"

#include <stdbool.h>
#include <stdio.h>

int cmd_compare(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_comment(int argc, char **argv);
int cmd_history(int argc, char **argv);
/* `canary-gate history append|check|site` (cmd_history.c hands them on): argv[0] is the
 * subcommand; the exit code. */
int cmd_history_append(int argc, char **argv);
int cmd_history_check(int argc, char **argv);
int cmd_history_site(int argc, char **argv);
int cmd_accept(int argc, char **argv);

/* The default overall deadline for posting the comment and status, in seconds. */
#define CG_COMMENT_DEADLINE_S 120
int cmd_gate(int argc, char **argv);
int cmd_aa(int argc, char **argv);
int cmd_ab(int argc, char **argv);
int cmd_bisect(int argc, char **argv);

/* Where and how the gate's verdict is reported. NULL paths are not written. */
struct cg_report_opts {
    const char *report_path;   /* markdown report (the PR comment body) */
    const char *json_path;     /* JSON verdict */
    const char *gate_id;       /* the report's hidden marker id, NULL for the default gate */
    bool fail_on_inconclusive; /* INCONCLUSIVE exits 4 */
    unsigned only;             /* --only: CG_GATE_* groups that decide; 0: every group */
    bool color;                /* ANSI colour in the terminal table */
    const struct cg_history *history; /* main's history (--history), for a recent accept */
};

struct cg_history;

/* Reads main's history at path for the reports' note of a recent accept (compare and the main
 * command's --history): a missing file is an empty history; its unreadable lines are warnings
 * (cg_cmd_say_history_skipped). 0, or the exit code (printed) of a file that cannot be read. */
int cg_cmd_load_history(const char *path, struct cg_history *h);

/* Prints the warnings of the lines skipped when h was read. */
void cg_cmd_say_history_skipped(const struct cg_history *h);

/* Computes the verdict of cur against base, prints the terminal table on stdout, writes the
 * report and JSON verdict (after everything rendered) and returns the gate's exit code
 * (cmd_report.c). */
int cg_cmd_report_compare(const struct cg_artifact *base, const struct cg_artifact *cur,
                   const struct cg_thresholds *t, const struct cg_report_opts *o);

struct cg_verdict;

/* The rendering half of cg_cmd_report_compare: prints the terminal table of a computed verdict
 * on stdout, writes the report and JSON verdict (after everything rendered) and returns the
 * gate's exit code. */
int cg_cmd_report_verdict(const struct cg_verdict *v, const struct cg_report_opts *o);

/* Prints "canary-gate: <msg>" on stderr and returns the exit code for err->code. */
int cg_cmd_fail(const struct cg_err *err);

/* Prints "canary-gate: " and the formatted line, control characters as '?' (names from the
 * command line may hold terminal escapes), as cg_cmd_fail and cg_cmd_usage_error do. */
void cg_cmd_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* "canary-gate: GPU metrics unavailable: REASON", with what to do when a tool holds CUPTI or
 * the profiling hardware (cg_report_gpu_advice), on stderr. */
void cg_cmd_say_gpu_unavailable(const char *reason);

/* Prints "canary-gate <verb>: <msg>" and a hint to run --help on stderr; returns CG_EXIT_INPUT. */
int cg_cmd_usage_error(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Adds a --thresholds spec to o as an input when it names an existing file (a built-in name such
 * as "default" is no file). NULL is ignored. */
void cg_cmd_add_thresholds(struct cg_outputs *o, const char *spec);

/* Checks the inputs and outputs of o before anything runs (cg_outputs_check) and releases o; on a
 * problem prints it and returns the exit code (2 the same file twice, 3 an output that cannot be
 * written), else 0. */
int cg_cmd_check_outputs(struct cg_outputs *o);

/* Where the runs of an interrupted or failed measurement go instead of out: FILE.json ->
 * FILE.partial.json. Malloc'ed (caller frees); NULL when out of memory. */
char *cg_cmd_partial_path(const char *out);

/* Saves the runs a failed or interrupted measurement completed (none: nothing) to
 * cg_cmd_partial_path(out), never to out, and says so in one line. 0, or the exit code when the
 * partial artifact could not be written (the problem is printed). */
int cg_cmd_save_partial(const char *out, const struct cg_artifact *a);

/* After a canary failed: reads the end of its log (cg_log_tail_read, the last
 * CG_LOG_TAIL_LINES lines, redacted) into t for the error report and prints it on stderr; a log
 * that cannot be read is said in one line and leaves t without lines (path NULL). */
void cg_cmd_show_log_tail(const char *log, struct cg_log_tail *t);

/* Exit codes of the canary-gate tool (README.md, "Exit codes"): only this layer picks them. */
enum cg_exit {
    CG_EXIT_PASS = 0,
    CG_EXIT_FAIL = 1,
    CG_EXIT_INPUT = 2,
    CG_EXIT_RUNTIME = 3,
    CG_EXIT_INCONCLUSIVE = 4
};

/* The exit code of a CG_E* code: CG_EXIT_INPUT for an invalid input or command line,
 * CG_EXIT_RUNTIME for every other failure, CG_EXIT_PASS for 0. */
int cg_cmd_error_exit_code(int code);

struct cg_notice;

/* The exit code of a verdict-giving command for the overall outcome: 1 FAIL, 4 INCONCLUSIVE with
 * fail_on_inconclusive, else 0 (enum cg_exit). */
int cg_cmd_exit_code(enum cg_outcome overall, bool fail_on_inconclusive);

/* Writes a notice's markdown report to report_path and JSON verdict to json_path (each when not
 * NULL; report/report_notice.c renders both before either is written). 0, or the exit code of a
 * failure, printed. */
int cg_cmd_write_notice(const struct cg_notice *n, const char *report_path, const char *json_path);

/* Warns on stderr when the baseline at path has fewer runs than any timing regression needs to
 * FAIL under t (cg_verdict_min_baseline_runs): such a gate cannot detect a slowdown. recorded:
 * the baseline was just recorded; fail_on_inconclusive: say that the gate will exit 4. */
void cg_cmd_warn_small_baseline(const char *path, const struct cg_artifact *base,
                                const struct cg_thresholds *t, bool recorded,
                                bool fail_on_inconclusive);

/* After getopt_long returned '?' or ':' (opterr 0, the short options led by ':'): prints one line
 * "canary-gate <verb>: unknown option '--x'" or "'--x' needs a value" and returns
 * CG_EXIT_INPUT; after cg_cmd_getopt returned CG_OPT_REFUSED (already said): CG_EXIT_INPUT. */
int cg_cmd_option_error(const char *verb, int opt, char *const *argv);

/* Where the terminal table and verdict lines go: stderr when the report or the JSON verdict is
 * written to stdout ("-"), so stdout holds that document alone; else stdout. */
FILE *cg_cmd_table_stream(const char *report, const char *json);

/* What 'canary-gate comment' and the main command post (cmd_comment.c). */
struct cg_post_opts {
    const char *report; /* the markdown report file (required) */
    const char *repo;   /* "owner/name"; NULL: GITHUB_REPOSITORY */
    const char *sha;    /* the commit of the status; NULL: the event's head */
    const char *id;     /* the gate id; NULL: the report's */
    long pr;            /* the pull request; 0: the event's */
    bool status;        /* set a commit status too */
    bool check_run;     /* publish the verdict as a check run too (checkrun.h) */
    bool dry_run;       /* print the requests instead of sending them */
    bool require;       /* a posting failure is exit 3 */
    long deadline_s;    /* for everything posted */
    enum cg_github_mode mode;
    enum cg_github_verdict verdict; /* CG_GITHUB_VERDICT_NONE: the report's */
    const char *untrusted; /* the JSON verdict of a report from an untrusted run (a fork's
                            * artifact): the verdict must agree with it and the body is
                            * sanitised again (untrusted.h); NULL: the report is trusted */
};

/* Sets the defaults: mode always, deadline CG_COMMENT_DEADLINE_S, nothing else. */
void cg_post_opts_init(struct cg_post_opts *o);

/* A --comment-mode value: always, on-regression or never. False for anything else. */
bool cg_post_mode_parse(const char *s, enum cg_github_mode *mode);

/* Appends the report to the job summary, posts the comment and sets the status as o says.
 * Posting problems are warnings; returns 0, or the exit code of a bad input (an unreadable
 * report, a report without a verdict where one is needed) or of a failure under require. */
int cg_cmd_post(const struct cg_post_opts *o);

/* The command layer's struct cg_say (say.h): prints on stderr, live when stderr is a terminal. */
struct cg_say cg_cmd_say(void);

/* Parses an option value that is, as a whole, a base-10 integer from min to max into *out: 0;
 * else prints "canary-gate VERB: OPT 'VALUE': expected an integer from MIN to MAX" and returns
 * CG_EXIT_INPUT. The one integer parser of the command layer's options. */
int cg_cmd_parse_count(const char *verb, const char *opt, const char *value, long min, long max,
                       long *out);

#endif
