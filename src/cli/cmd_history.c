/*
 * cmd_history: `canary-gate history append` records one published run of main in the history
 * file (docs/history.md): the run's values, and the events its environment or the baseline's
 * restart make. `canary-gate history check` finds the change points in it, `canary-gate
 * history site` draws it as a static site, and `canary-gate accept` records an accepted
 * regression.
 */
#include "cmd.h"

#include "fsutil.h"
#include "history.h"
#include "outputs.h"
#include "report_history.h"
#include "report_site.h"
#include "trend.h"
#include "utf8.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* The characters of a commit name printed into a bisect command line as it is. */
#define CG_HISTORY_BISECT_CHARS "0123456789abcdefABCDEF"

static const char usage_text[] =
    "usage: canary-gate history append --history FILE --commit SHA [options] RUN.json\n"
    "\n"
    "Appends one published run of main to the history (JSON Lines, written atomically):\n"
    "per metric the median of its runs with an interval, and its counts per step. When the\n"
    "run's environment (GPU, driver, CUDA, CPU, steps) differs from the gate's last run in the\n"
    "history, an environment event comes first: a new segment. Lines of FILE that cannot be read\n"
    "(damaged, or of a newer version) are warned about and kept as they are, in their places; a\n"
    "FILE of which no line can be read is not a history and is left alone. A missing FILE is a\n"
    "new history. Appends to one FILE wait for each other (a lock on FILE.lock).\n"
    "\n"
    "  --history FILE    the history file (created when missing)\n"
    "  --commit SHA      the commit measured\n"
    "  --date ISO        when (default: now, UTC)\n"
    "  --gate-id ID      which gate, when several share the file (default: none)\n"
    "  --restart TEXT    the baseline restarted with this run, and why (an event first)\n"
    "  --keep N          runs kept; older ones are folded into one summary (default 1000)\n"
    "  -h, --help        show this help\n"
    "\n"
    "exit codes: 0 appended, 2 usage error or invalid input (RUN.json not an artifact; FILE\n"
    "            unreadable, not a regular file, not a history, or RUN.json itself), 3 FILE\n"
    "            could not be written\n";

static const struct option options[] = {
    {"history", required_argument, NULL, 'f'}, {"commit", required_argument, NULL, 'c'},
    {"date", required_argument, NULL, 'd'},    {"gate-id", required_argument, NULL, 'g'},
    {"restart", required_argument, NULL, 'r'}, {"keep", required_argument, NULL, 'k'},
    {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
};

/* The gate's newest run in h, or NULL. */
static const struct cg_history_entry *last_run(const struct cg_history *h, const char *gate_id)
{
    for (size_t i = h->n; i-- > 0;)
        if (h->entries[i].type != CG_HIST_EVENT && cg_history_of_gate(&h->entries[i], gate_id))
            return &h->entries[i];
    return NULL;
}

static int append_event(struct cg_history *h, enum cg_history_event ev,
                        const struct cg_history_entry *run, const char *reason)
{
    struct cg_history_entry e;
    cg_history_entry_init(&e, CG_HIST_EVENT);
    e.event = ev;
    e.commit = run->commit;
    e.date = run->date;
    e.environment = run->environment;
    e.gate_id = run->gate_id;
    e.reason = (char *)reason;
    return cg_history_append(h, &e); /* copies; e's strings stay the run's */
}

static bool parse_long(const char *s, long lo, long hi, long *out)
{
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static const char *text_problem(const char *s, size_t max)
{
    return cg_history_text_problem(s, max);
}

/* The usage error of a value given for verb's option opt (printed), or 0 when it is one line
 * of 1 to max bytes of UTF-8 (and, for a date, ISO 8601). */
static int value_error(const char *verb, const char *opt, const char *value, size_t max,
                       bool date)
{
    const char *why = text_problem(value, max);
    if (why == NULL && date && !cg_history_date_ok(value))
        why = "is not an ISO 8601 date and time (e.g. 2026-11-20T14:03:00Z)";
    if (why == NULL)
        return 0;
    if (cg_history_text_problem(value, (size_t)-1) != NULL) /* not printable as it is */
        return cg_cmd_usage_error(verb, "%s: %s (one line of 1 to %zu bytes of UTF-8)", opt, why,
                                  max);
    return cg_cmd_usage_error(verb, "%s '%.60s%s': %s (one line of 1 to %zu bytes of UTF-8)", opt,
                              value, strlen(value) > 60 ? "..." : "", why, max);
}

/* The history at path, to be rewritten, must be a regular file when it exists (a FIFO is
 * refused at once, never opened): 0, or the exit code (printed). */
static int rewritable(const char *path)
{
    struct stat st;
    struct cg_err err;
    cg_err_init(&err);
    int r = stat(path, &st);
    if (r != 0 && errno != ENOENT)
        cg_err_set(&err, CG_EINPUT, "cannot read history '%s': %s", path, strerror(errno));
    else if (r == 0 && !S_ISREG(st.st_mode))
        cg_err_set(&err, CG_EINPUT, "cannot read history '%s': %s, not a regular file", path,
                   cg_file_type_name(st.st_mode));
    return err.code != 0 ? cg_cmd_fail(&err) : 0;
}

/* Reads the history at path to be rewritten, under the lock *lock takes: 0, or the exit code
 * (printed). */
static int load_for_rewrite(const char *path, struct cg_history *h, int *lock)
{
    struct cg_err err;
    cg_err_init(&err);
    if ((*lock = cg_history_lock(path, &err)) < 0 || cg_history_load(path, h, &err) != 0 ||
        cg_history_check_rewrite(h, path, &err) != 0)
        return cg_cmd_fail(&err);
    cg_cmd_say_history_skipped(h);
    return 0;
}

/* The current time, UTC, ISO 8601, into now[32]. */
static const char *now_utc(char *now, size_t n)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(now, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return now;
}

static int history_append(int argc, char **argv)
{
    const char *path = NULL, *commit = NULL, *date = NULL, *gate_id = NULL, *restart = NULL;
    long keep = CG_HISTORY_DEFAULT_KEEP;
    char now[32];
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
        switch (c) {
        case 'f':
            path = optarg;
            break;
        case 'c':
            commit = optarg;
            break;
        case 'd':
            date = optarg;
            break;
        case 'g':
            gate_id = optarg;
            break;
        case 'r':
            restart = optarg;
            break;
        case 'k':
            if (!parse_long(optarg, 1, 1000000, &keep))
                return cg_cmd_usage_error(
                    "history append", "--keep '%s': expected a whole number 1 to 1000000", optarg);
            break;
        case 'h':
            fputs(usage_text, stdout);
            return CG_EXIT_PASS;
        default:
            return cg_cmd_option_error("history append", c, argv);
        }
    }
    if (path == NULL || commit == NULL)
        return cg_cmd_usage_error("history append", "missing %s",
                                  path == NULL ? "--history FILE" : "--commit SHA");
    if (optind + 1 != argc)
        return cg_cmd_usage_error("history append", "expected one run artifact");
    int bad;
    if ((bad = value_error("history append", "--commit", commit, CG_HISTORY_MAX_ID_CHARS,
                           false)) != 0 ||
        (gate_id != NULL && (bad = value_error("history append", "--gate-id", gate_id,
                                               CG_HISTORY_MAX_ID_CHARS, false)) != 0) ||
        (restart != NULL && (bad = value_error("history append", "--restart", restart,
                                               CG_HISTORY_MAX_TEXT_CHARS, false)) != 0) ||
        (date != NULL && (bad = value_error("history append", "--date", date,
                                            CG_HISTORY_MAX_ID_CHARS, true)) != 0))
        return bad;
    if (date == NULL)
        date = now_utc(now, sizeof(now));
    if ((bad = rewritable(path)) != 0)
        return bad;
    struct cg_outputs paths;
    cg_outputs_init(&paths);
    cg_outputs_add(&paths, CG_PATH_INPUT, "RUN.json", argv[optind]);
    cg_outputs_add(&paths, CG_PATH_OUTPUT, "--history", path);
    if ((bad = cg_cmd_check_outputs(&paths)) != 0)
        return bad;

    struct cg_err err;
    struct cg_artifact a;
    struct cg_history h = {0};
    struct cg_history_entry run;
    int exit_code = CG_EXIT_PASS, rc, lock = -1;
    cg_err_init(&err);
    cg_artifact_init(&a);
    cg_history_entry_init(&run, CG_HIST_RUN);
    if (cg_artifact_load(argv[optind], &a, &err) != 0) {
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    if ((exit_code = load_for_rewrite(path, &h, &lock)) != 0)
        goto done;
    rc = cg_trend_entry(&a, commit, date, gate_id, &run);
    if (rc == CG_EINPUT) {
        cg_err_set(&err, CG_EINPUT, "'%s' has no runs: nothing to record", argv[optind]);
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    const struct cg_history_entry *prev = last_run(&h, gate_id);
    char env_text[512];
    cg_trend_env_text(&a, env_text, sizeof(env_text));
    size_t before = h.n;
    if (rc == 0 && prev != NULL &&
        (prev->environment == NULL || strcmp(prev->environment, run.environment) != 0))
        rc = append_event(&h, CG_HEV_ENVIRONMENT, &run, env_text);
    if (rc == 0 && restart != NULL)
        rc = append_event(&h, CG_HEV_RESTART, &run, restart);
    char said[64] = "";
    for (size_t i = before; i < h.n; i++)
        snprintf(said + strlen(said), sizeof(said) - strlen(said), "%s%s",
                 i == before ? "; events: " : ", ", cg_history_event_name(h.entries[i].event));
    if (rc == 0)
        rc = cg_history_append(&h, &run);
    if (rc == 0)
        rc = cg_history_bound(&h, (size_t)keep);
    if (rc != 0) {
        cg_err_set(&err, CG_ENOMEM, "cannot record in '%s': out of memory", path);
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    if (cg_history_save(path, &h, &err) != 0) {
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    fprintf(stderr, "canary-gate: history '%s': recorded %s (%zu runs)%s\n", path, commit, a.n_runs,
            said);
done:
    cg_history_unlock(lock);
    cg_history_entry_release(&run);
    cg_history_release(&h);
    cg_artifact_release(&a);
    return exit_code;
}

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
    "  --keep N            the newest N runs are checked (default 1000, as 'history append'\n"
    "                      keeps); the file is read a line at a time, in bounded memory\n"
    "  --markdown FILE     also write the findings as markdown (e.g. $GITHUB_STEP_SUMMARY)\n"
    "  --json FILE         also write them as JSON\n"
    "  --fail-on-change    exit 1 when the newest segment has a change for the worse that was\n"
    "                      not accepted\n"
    "  -h, --help          show this help\n"
    "\n"
    "exit codes: 0 checked, 1 a change for the worse with --fail-on-change, 2 usage error or\n"
    "            a history that cannot be read, 3 an output that cannot be written\n";

/* --alpha (a), --min-segment (m) or --permutations (p) into o: 0, or the usage error's exit
 * code (printed for verb). */
static int cp_option(const char *verb, int c, const char *arg, struct cg_cp_options *o)
{
    long v;
    if (c == 'a') {
        char *end = NULL;
        o->alpha = strtod(arg, &end);
        if (end == arg || *end != '\0' || !(o->alpha > 0 && o->alpha < 1))
            return cg_cmd_usage_error(verb, "--alpha '%s': expected a number between 0 and 1", arg);
    } else if (c == 'm') {
        if (!parse_long(arg, 2, 1000, &v))
            return cg_cmd_usage_error(verb, "--min-segment '%s': expected 2 to 1000", arg);
        o->min_segment = (size_t)v;
    } else {
        if (!parse_long(arg, 19, 100000, &v))
            return cg_cmd_usage_error(verb, "--permutations '%s': expected 19 to 100000", arg);
        o->permutations = (int)v;
    }
    return 0;
}

static const struct option check_options[] = {
    {"history", required_argument, NULL, 'f'},
    {"gate-id", required_argument, NULL, 'g'},
    {"alpha", required_argument, NULL, 'a'},
    {"min-segment", required_argument, NULL, 'm'},
    {"permutations", required_argument, NULL, 'p'},
    {"keep", required_argument, NULL, 'k'},
    {"markdown", required_argument, NULL, 'M'},
    {"json", required_argument, NULL, 'j'},
    {"fail-on-change", no_argument, NULL, 'F'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* Reads the newest keep runs of the history at path for verb: 0, or the exit code (printed). */
static int load_newest(const char *path, long keep, struct cg_history *h)
{
    struct cg_err err;
    cg_err_init(&err);
    if (cg_history_load_newest(path, (size_t)keep, h, &err) != 0 ||
        cg_history_check_rewrite(h, path, &err) != 0)
        return cg_cmd_fail(&err);
    cg_cmd_say_history_skipped(h);
    if (h->left_out > 0)
        fprintf(stderr,
                "canary-gate: note: history '%s': the newest %ld runs are read; %zu older runs "
                "were left out (--keep)\n",
                path, keep, h->left_out);
    return 0;
}

static int history_check(int argc, char **argv)
{
    const char *path = NULL, *gate_id = NULL, *md_path = NULL, *json_path = NULL;
    long keep = CG_HISTORY_DEFAULT_KEEP;
    bool fail_on_change = false;
    struct cg_cp_options o;
    cg_cp_defaults(&o);
    int c, bad;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", check_options, NULL)) != -1) {
        switch (c) {
        case 'f':
            path = optarg;
            break;
        case 'g':
            gate_id = optarg;
            break;
        case 'a':
        case 'm':
        case 'p':
            if ((bad = cp_option("history check", c, optarg, &o)) != 0)
                return bad;
            break;
        case 'k':
            if (!parse_long(optarg, 1, 1000000, &keep))
                return cg_cmd_usage_error(
                    "history check", "--keep '%s': expected a whole number 1 to 1000000", optarg);
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
    struct cg_outputs paths;
    cg_outputs_init(&paths);
    cg_outputs_add(&paths, CG_PATH_INPUT, "--history", path);
    if (md_path)
        cg_outputs_add(&paths, CG_PATH_OUTPUT, "--markdown", md_path);
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
    if ((exit_code = load_newest(path, keep, &h)) != 0)
        goto done;
    int rc = cg_trend_check(&h, gate_id, &o, &r);
    if (rc == 0)
        rc = cg_report_history_terminal(&r, path, &term);
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
            printf("bisect %s: canary-gate bisect --good %s --bad %s --metric %s -- CANARY CMD...\n",
                   cg_metric_name(r.changes[i].metric), r.changes[i].before->commit,
                   r.changes[i].after->commit, cg_metric_name(r.changes[i].metric));
    if ((md_path && cg_file_write_atomic(md_path, md.data ? md.data : "", md.len, &err) != 0) ||
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

static const char accept_usage[] =
    "usage: canary-gate accept --history FILE --reason TEXT [options]\n"
    "\n"
    "Records on main's history that a regression was accepted, by whom, why and at which\n"
    "commit (an accept event, written atomically). 'history check' marks the change points it\n"
    "covers as accepted, the history site marks it, and the reports of the next pull requests\n"
    "(--history) mention it while fewer than 10 runs of main were recorded after it. Record it\n"
    "before the accepted commit's run is appended (ci/baseline-publish --accept does), or after:\n"
    "an accept of the commit of a change's first run covers that change.\n"
    "\n"
    "  --history FILE    the history file (created when missing)\n"
    "  --reason TEXT     why it was accepted (1 to 2000 bytes of UTF-8, one line)\n"
    "  --commit SHA      the commit accepted (default: $GITHUB_SHA)\n"
    "  --who NAME        who accepted it (default: $GITHUB_ACTOR, else $USER)\n"
    "  --date ISO        when (default: now, UTC)\n"
    "  --gate-id ID      which gate, when several share the file (default: none)\n"
    "  -h, --help        show this help\n"
    "\n"
    "exit codes: 0 recorded, 2 usage error or invalid input (FILE not a regular file), 3 FILE\n"
    "            could not be written\n";

static const struct option accept_options[] = {
    {"history", required_argument, NULL, 'f'}, {"reason", required_argument, NULL, 'r'},
    {"commit", required_argument, NULL, 'c'},  {"who", required_argument, NULL, 'w'},
    {"date", required_argument, NULL, 'd'},    {"gate-id", required_argument, NULL, 'g'},
    {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
};

int cmd_accept(int argc, char **argv)
{
    const char *path = NULL, *reason = NULL, *commit = getenv("GITHUB_SHA");
    const char *who = getenv("GITHUB_ACTOR"), *date = NULL, *gate_id = NULL;
    const char *who_from = "GITHUB_ACTOR", *commit_from = "GITHUB_SHA"; /* for messages */
    char now[32];
    int c;
    if (who == NULL || who[0] == '\0')
        who = getenv("USER"), who_from = "USER";
    if (commit != NULL && commit[0] == '\0')
        commit = NULL;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", accept_options, NULL)) != -1) {
        switch (c) {
        case 'f': path = optarg; break;
        case 'r': reason = optarg; break;
        case 'c': commit = optarg, commit_from = "--commit"; break;
        case 'w': who = optarg, who_from = "--who"; break;
        case 'd': date = optarg; break;
        case 'g': gate_id = optarg; break;
        case 'h':
            fputs(accept_usage, stdout);
            return CG_EXIT_PASS;
        default:
            return cg_cmd_option_error("accept", c, argv);
        }
    }
    if (path == NULL || reason == NULL)
        return cg_cmd_usage_error("accept", "missing %s",
                                  path == NULL ? "--history FILE" : "--reason TEXT");
    if (commit == NULL)
        return cg_cmd_usage_error("accept", "missing --commit SHA (GITHUB_SHA is not set)");
    if (optind != argc)
        return cg_cmd_usage_error("accept", "unexpected argument '%s'", argv[optind]);
    const struct {
        const char *name, *value;
        size_t max;
        bool date;
    } fields[] = {{"--reason", reason, CG_HISTORY_MAX_TEXT_CHARS, false},
                  {commit_from, commit, CG_HISTORY_MAX_ID_CHARS, false},
                  {who_from, who && who[0] ? who : NULL, CG_HISTORY_MAX_ID_CHARS, false},
                  {"--date", date, CG_HISTORY_MAX_ID_CHARS, true},
                  {"--gate-id", gate_id, CG_HISTORY_MAX_ID_CHARS, false}};
    int bad;
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        if (fields[i].value != NULL && (bad = value_error("accept", fields[i].name,
                                                          fields[i].value, fields[i].max,
                                                          fields[i].date)) != 0)
            return bad;
    if (who != NULL && who[0] == '\0')
        who = NULL;
    if ((bad = rewritable(path)) != 0)
        return bad;
    struct cg_outputs paths;
    cg_outputs_init(&paths);
    cg_outputs_add(&paths, CG_PATH_OUTPUT, "--history", path);
    if ((bad = cg_cmd_check_outputs(&paths)) != 0)
        return bad;

    struct cg_err err;
    struct cg_history h = {0};
    int exit_code = CG_EXIT_PASS, lock = -1;
    cg_err_init(&err);
    if ((exit_code = load_for_rewrite(path, &h, &lock)) != 0)
        goto done;
    struct cg_history_entry e;
    cg_history_entry_init(&e, CG_HIST_EVENT);
    e.event = CG_HEV_ACCEPT;
    e.commit = (char *)commit;
    e.date = (char *)(date != NULL ? date : now_utc(now, sizeof(now)));
    e.gate_id = (char *)gate_id;
    e.reason = (char *)reason;
    e.who = (char *)who;
    if (cg_history_append(&h, &e) != 0) { /* copies; e holds only borrowed strings */
        cg_err_set(&err, CG_ENOMEM, "cannot record in '%s': out of memory", path);
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    if (cg_history_save(path, &h, &err) != 0) {
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    fprintf(stderr, "canary-gate: history '%s': recorded the accept of %s%s%s\n", path, commit,
            who ? " by " : "", who ? who : "");
done:
    cg_history_unlock(lock);
    cg_history_release(&h);
    return exit_code;
}

static const char site_usage[] =
    "usage: canary-gate history site --history FILE --out DIR [options]\n"
    "\n"
    "Writes main's history as a static site, DIR/index.html: per gate one chart per metric\n"
    "(each run of main a point, the median of its runs with their interval as a band,\n"
    "environment segments shaded, change points and accepted regressions marked, every mark\n"
    "titled with its commit), each metric's level across its segments, and a table of the\n"
    "latest change points with links to their commits. The charts are SVG drawn by canary-gate:\n"
    "the page has no script and loads nothing from the network. DIR is created when missing;\n"
    "index.html is replaced atomically.\n"
    "\n"
    "  --history FILE      the history file\n"
    "  --out DIR           where to write index.html\n"
    "  --title TEXT        the page's title (default \"canary-gate: main's history\")\n"
    "  --commit-url URL    prefix of a commit's link, e.g.\n"
    "                      https://github.com/OWNER/REPO/commit/ (default: none; from\n"
    "                      GITHUB_SERVER_URL and GITHUB_REPOSITORY when both are set)\n"
    "  --alpha A, --min-segment N, --permutations N, --keep N\n"
    "                      change point detection and the runs drawn, as for 'history check'\n"
    "  -h, --help          show this help\n"
    "\n"
    "exit codes: 0 written, 2 usage error or a history that cannot be read, 3 DIR or\n"
    "            index.html could not be written\n";

static const struct option site_options[] = {
    {"history", required_argument, NULL, 'f'},
    {"out", required_argument, NULL, 'o'},
    {"title", required_argument, NULL, 't'},
    {"commit-url", required_argument, NULL, 'u'},
    {"alpha", required_argument, NULL, 'a'},
    {"min-segment", required_argument, NULL, 'm'},
    {"permutations", required_argument, NULL, 'p'},
    {"keep", required_argument, NULL, 'k'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int history_site(int argc, char **argv)
{
    const char *path = NULL, *dir = NULL, *title = NULL, *url = NULL;
    long keep = CG_HISTORY_DEFAULT_KEEP;
    char env_url[600] = "";
    struct cg_cp_options cp;
    cg_cp_defaults(&cp);
    int c, bad;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", site_options, NULL)) != -1) {
        switch (c) {
        case 'f':
            path = optarg;
            break;
        case 'o':
            dir = optarg;
            break;
        case 't':
            title = optarg;
            break;
        case 'u':
            url = optarg;
            break;
        case 'a':
        case 'm':
        case 'p':
            if ((bad = cp_option("history site", c, optarg, &cp)) != 0)
                return bad;
            break;
        case 'k':
            if (!parse_long(optarg, 1, 1000000, &keep))
                return cg_cmd_usage_error(
                    "history site", "--keep '%s': expected a whole number 1 to 1000000", optarg);
            break;
        case 'h':
            fputs(site_usage, stdout);
            return CG_EXIT_PASS;
        default:
            return cg_cmd_option_error("history site", c, argv);
        }
    }
    if (path == NULL || dir == NULL)
        return cg_cmd_usage_error("history site", "missing %s",
                                  path == NULL ? "--history FILE" : "--out DIR");
    if (optind != argc)
        return cg_cmd_usage_error("history site", "unexpected argument '%s'", argv[optind]);
    const char *server = getenv("GITHUB_SERVER_URL"), *repo = getenv("GITHUB_REPOSITORY");
    if (url == NULL && server && repo && server[0] && repo[0]) {
        snprintf(env_url, sizeof(env_url), "%s/%s/commit/", server, repo);
        url = env_url;
    }
    if (url != NULL && !cg_site_url_ok(url))
        return cg_cmd_usage_error("history site",
                                  "%s '%s': expected http:// or https:// and printable ASCII "
                                  "without spaces, quotes or angle brackets%s",
                                  url == env_url ? "the commit URL made from GITHUB_SERVER_URL "
                                                   "and GITHUB_REPOSITORY"
                                                 : "--commit-url",
                                  url, url == env_url ? "; give --commit-url" : "");
    const char *why = title ? text_problem(title, 200) : NULL;
    if (why != NULL)
        return cg_cmd_usage_error("history site", "--title: %s (1 to 200 bytes of UTF-8)", why);

    struct cg_err err;
    struct cg_history h = {0};
    struct cg_buf page;
    int exit_code = CG_EXIT_PASS;
    size_t len = strlen(dir) + sizeof("/index.html");
    char *index = malloc(len);
    cg_err_init(&err);
    cg_buf_init(&page, (size_t)1 << 28);
    if (index == NULL) {
        cg_err_set(&err, CG_ENOMEM, "out of memory");
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    snprintf(index, len, "%s/index.html", dir);
    struct stat st;
    struct cg_outputs paths;
    cg_outputs_init(&paths);
    cg_outputs_add(&paths, CG_PATH_INPUT, "--history", path);
    if (stat(dir, &st) == 0) /* a DIR still to be made holds no history */
        cg_outputs_add(&paths, CG_PATH_OUTPUT, "--out's index.html", index);
    if ((exit_code = cg_cmd_check_outputs(&paths)) != 0 ||
        (exit_code = load_newest(path, keep, &h)) != 0)
        goto done;
    const char *base = strrchr(path, '/');
    struct cg_site_opts so = {
        .title = title, .commit_url = url, .source = base ? base + 1 : path, .cp = &cp};
    if (cg_report_site(&h, &so, &page) != 0) {
        cg_err_set(&err, CG_ENOMEM, "cannot draw '%s': out of memory", path);
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        cg_err_set(&err, CG_EIO, "cannot create '%s': %s", dir, strerror(errno));
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    if (cg_file_write_atomic(index, cg_buf_str(&page), page.len, &err) != 0) {
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    fprintf(stderr, "canary-gate: history site '%s' (%zu bytes) from '%s'\n", index, page.len,
            path);
done:
    free(index);
    cg_buf_release(&page);
    cg_history_release(&h);
    return exit_code;
}

int cmd_history(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs("usage: canary-gate history append|check|site ... (canary-gate history append\n"
              "       --help, canary-gate history check --help, canary-gate history site --help)\n",
              argc < 2 ? stderr : stdout);
        return argc < 2 ? CG_EXIT_INPUT : CG_EXIT_PASS;
    }
    if (strcmp(argv[1], "append") == 0)
        return history_append(argc - 1, argv + 1);
    if (strcmp(argv[1], "check") == 0)
        return history_check(argc - 1, argv + 1);
    if (strcmp(argv[1], "site") == 0)
        return history_site(argc - 1, argv + 1);
    return cg_cmd_usage_error("history", "unknown subcommand '%s' (append, check, site)", argv[1]);
}
