/*
 * cmd_history_common: what the history commands (cmd_history_append.c, cmd_history_check.c,
 * cmd_history_site.c) and `canary-gate accept` (cmd_history_accept.c) share
 * (cmd_history_common.h): a value checked before it is written into the history, the history
 * read to be rewritten or to be checked, the time now.
 */
#include "cmd.h"
#include "cmd_history_common.h"

#include "fsutil.h"
#include "github.h"
#include "history.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

int cg_cmd_history_value_error(const char *verb, const char *opt, const char *value, size_t max,
                               bool date)
{
    const char *why = cg_history_text_problem(value, max);
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

int cg_cmd_history_gate_id_error(const char *verb, const char *gate_id)
{
    struct cg_err err;
    cg_err_init(&err);
    if (cg_github_id_check(gate_id, &err) != 0)
        return cg_cmd_usage_error(verb, "--gate-id: %s", err.msg);
    return 0;
}

int cg_cmd_history_rewritable(const char *path)
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

int cg_cmd_history_load_for_rewrite(const char *path, struct cg_history *h, int *lock)
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
const char *cg_cmd_history_now_utc(char *now, size_t n)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(now, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return now;
}

/* Says what h, read in part from path, left out: the older runs of its gates (of gate when one
 * is given) and the runs of the gates not read. */
static void say_left_out(const char *path, long keep, const char *of, const struct cg_history *h)
{
    if (h->left_out > 0)
        fprintf(stderr,
                "canary-gate: note: history '%s': the newest %ld runs %s are read; %zu older "
                "runs were left out (--keep)\n",
                path, keep, of, h->left_out);
}

int cg_cmd_history_load_newest(const char *path, long keep, struct cg_history *h)
{
    struct cg_err err;
    cg_err_init(&err);
    if (cg_history_load_newest(path, (size_t)keep, h, &err) != 0 ||
        cg_history_check_rewrite(h, path, &err) != 0)
        return cg_cmd_fail(&err);
    cg_cmd_say_history_skipped(h);
    say_left_out(path, keep, "of each gate", h);
    if (h->n_other_gates == 0 && !h->other_no_gate)
        return 0;
    fprintf(stderr, "canary-gate: note: history '%s' holds more than %d gates: the runs ", path,
            CG_HISTORY_MAX_GATES);
    for (size_t i = 0; i < h->n_other_gates; i++)
        fprintf(stderr, "%s'%s'", i ? ", " : "of ", h->other_gates[i]);
    if (h->other_gates_more)
        fputs(", ...", stderr);
    if (h->other_no_gate)
        fprintf(stderr, "%swithout a gate id", h->n_other_gates ? " and those " : "");
    fputs(" were left out\n", stderr);
    return 0;
}

int cg_cmd_history_load_gate(const char *path, const char *gate_id, long keep, struct cg_history *h)
{
    struct cg_err err;
    cg_err_init(&err);
    if (cg_history_load_gate(path, gate_id, (size_t)keep, h, &err) != 0 ||
        cg_history_check_rewrite(h, path, &err) != 0)
        return cg_cmd_fail(&err);
    cg_cmd_say_history_skipped(h);
    if (cg_history_gate_check(h, gate_id, path, &err) != 0)
        return cg_cmd_fail(&err);
    char of[CG_HISTORY_MAX_ID_CHARS + 16];
    if (gate_id == NULL)
        snprintf(of, sizeof(of), "without a gate id");
    else
        snprintf(of, sizeof(of), "of gate '%s'", gate_id);
    say_left_out(path, keep, of, h);
    return 0;
}
