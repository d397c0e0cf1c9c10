/* cmd_util: helpers shared by the cmd_*.c files for messages, option values, the inputs and
 * outputs checked before anything runs, and the partial artifact of a run cut short. */
#include "cmd.h"

#include "buf.h"
#include "cmd_options.h"
#include "collect.h"
#include "fmt.h"
#include "fsutil.h"
#include "redact.h"
#include "report.h"
#include "verdict.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

/* struct cg_say's printer: "canary-gate: " and the kind's word before the text, on stderr; on a
 * terminal a progress line is rewritten in place and cleared when the progress ends. */
static void say_stderr(const struct cg_say *s, enum cg_say_kind kind, const char *text)
{
    switch (kind) {
    case CG_SAY_INFO: fprintf(stderr, "canary-gate: %s\n", text); break;
    case CG_SAY_WARNING: fprintf(stderr, "canary-gate: warning: %s\n", text); break;
    case CG_SAY_NOTE: fprintf(stderr, "canary-gate: note: %s\n", text); break;
    case CG_SAY_PROGRESS:
        fprintf(stderr, "%scanary-gate: %s%s", s->live ? "\r\033[K" : "", text,
                s->live ? "" : "\n");
        fflush(stderr);
        break;
    case CG_SAY_PROGRESS_END:
        if (s->live)
            fprintf(stderr, "\r\033[K");
        break;
    }
}

struct cg_say cg_cmd_say(void)
{
    struct cg_say s = {.fn = say_stderr, .ctx = NULL, .live = isatty(STDERR_FILENO) != 0};
    return s;
}

/* Writes head, text with its control characters (a name's terminal escapes) as '?', and tail
 * as one line on stderr. */
static void say_escaped(const char *head, const char *text, const char *tail)
{
    struct cg_buf b;
    cg_buf_init(&b, 1 << 16);
    if (cg_term_escape(&b, text, 1 << 15) == 0 && cg_buf_add(&b, "", 1) == 0)
        fprintf(stderr, "%s%s%s\n", head, b.data, tail);
    else
        fprintf(stderr, "%s(a message that could not be shown)%s\n", head, tail);
    cg_buf_release(&b);
}

void cg_cmd_errorf(const char *fmt, ...)
{
    char text[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    say_escaped("canary-gate: ", text, "");
}

int cg_cmd_fail(const struct cg_err *err)
{
    say_escaped("canary-gate: ", err->msg[0] ? err->msg : "unknown error", "");
    return cg_cmd_error_exit_code(err->code);
}

void cg_cmd_say_gpu_unavailable(const char *reason)
{
    const char *advice = cg_report_gpu_advice(reason);
    fprintf(stderr, "canary-gate: GPU metrics unavailable: %s%s%s\n", reason,
            advice != NULL ? "; to measure the GPU: " : "", advice != NULL ? advice : "");
}

int cg_cmd_usage_error(const char *verb, const char *fmt, ...)
{
    va_list ap;
    char head[64], tail[96], text[4096];
    snprintf(head, sizeof(head), "canary-gate %s: ", verb);
    snprintf(tail, sizeof(tail), " (see 'canary-gate %s --help')", verb);
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    say_escaped(head, text, tail);
    return CG_EXIT_INPUT;
}

int cg_cmd_option_error(const char *verb, int opt, char *const *argv)
{
    if (opt == CG_OPT_REFUSED) /* said by cg_cmd_getopt */
        return CG_EXIT_INPUT;
    char name[64];
    const char *arg = optind > 0 ? argv[optind - 1] : NULL;
    if (arg != NULL && strncmp(arg, "--", 2) == 0)
        snprintf(name, sizeof(name), "%.*s", (int)strcspn(arg, "="), arg);
    else if (optopt > 0 && optopt < 128)
        snprintf(name, sizeof(name), "-%c", optopt);
    else
        snprintf(name, sizeof(name), "%s", arg != NULL ? arg : "?");
    if (opt == ':')
        return cg_cmd_usage_error(verb, "'%s' needs a value", name);
    return cg_cmd_usage_error(verb, "unknown option '%s'", name);
}

int cg_cmd_parse_count(const char *verb, const char *opt, const char *value, long min, long max,
                       long *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (errno != 0 || end == value || *end != '\0' || v < min || v > max)
        return cg_cmd_usage_error(verb, "%s '%s': expected an integer from %ld to %ld", opt, value,
                                  min, max);
    *out = v;
    return 0;
}

void cg_cmd_add_thresholds(struct cg_outputs *o, const char *spec)
{
    struct stat st;
    if (spec == NULL || stat(spec, &st) != 0)
        return;
    cg_outputs_add(o, CG_PATH_INPUT, "--thresholds", spec);
    /* the files it extends are inputs too (an output over one replaced it); a file that does
     * not load is said by the command that loads it */
    struct cg_thresholds *t = malloc(sizeof(*t));
    struct cg_err err;
    cg_err_init(&err);
    if (t != NULL && cg_thresholds_load(spec, t, &err) == 0)
        for (size_t i = 1; i < t->n_files; i++)
            cg_outputs_add(o, CG_PATH_INPUT, "the thresholds' extends", t->files[i]);
    free(t);
}

int cg_cmd_check_outputs(struct cg_outputs *o)
{
    struct cg_err err;
    cg_err_init(&err);
    int rc = cg_outputs_check(o, &err) != 0 ? cg_cmd_fail(&err) : 0;
    cg_outputs_release(o);
    return rc;
}

char *cg_cmd_partial_path(const char *out)
{
    return cg_collect_sibling_path(out, ".partial.json");
}

int cg_cmd_save_partial(const char *out, const struct cg_artifact *a)
{
    struct cg_err err;
    cg_err_init(&err);
    if (a->n_runs == 0) {
        fprintf(stderr, "canary-gate: no run completed; nothing written\n");
        return 0;
    }
    char *partial = cg_cmd_partial_path(out);
    int rc = 0;
    if (partial == NULL) {
        cg_err_set(&err, CG_ENOMEM, "out of memory");
        rc = cg_cmd_fail(&err);
    } else if (cg_artifact_save(partial, a, &err) != 0) {
        rc = cg_cmd_fail(&err);
    } else {
        fprintf(stderr, "canary-gate: %zu completed run%s written to '%s'; '%s' was left as it was\n",
                a->n_runs, a->n_runs == 1 ? "" : "s", partial, out);
    }
    free(partial);
    return rc;
}

void cg_cmd_show_log_tail(const char *log, struct cg_log_tail *t)
{
    struct cg_err err;
    struct cg_buf out;
    cg_err_init(&err);
    cg_buf_init(&out, SIZE_MAX);
    if (cg_log_tail_read(log, CG_LOG_TAIL_LINES, cg_redact_default(), t, &err) != 0) {
        fprintf(stderr, "canary-gate: warning: the report cannot show the end of the canary's "
                        "output: %s\n", err.msg);
        cg_log_tail_release(t);
    } else if (cg_report_log_tail_terminal(t, &out) == 0) {
        fputs(cg_buf_str(&out), stderr);
    }
    cg_buf_release(&out);
}

void cg_cmd_warn_small_baseline(const char *path, const struct cg_artifact *base,
                                const struct cg_thresholds *t, bool recorded,
                                bool fail_on_inconclusive)
{
    int64_t need = cg_verdict_min_baseline_runs(t);
    if ((int64_t)base->n_runs >= need)
        return;
    fprintf(stderr,
            "canary-gate: warning: %sbaseline '%s' has %zu run%s, fewer than the %lld a regression "
            "needs to FAIL (the thresholds' min_runs): %s cannot detect a slowdown and reports "
            "INCONCLUSIVE%s; record it again with at least %lld runs\n",
            recorded ? "the recorded " : "", path, base->n_runs, base->n_runs == 1 ? "" : "s",
            (long long)need, recorded ? "gating against it" : "this gate",
            fail_on_inconclusive ? " (exit 4 with --fail-on-inconclusive)" : "",
            (long long)need);
}

FILE *cg_cmd_table_stream(const char *report, const char *json)
{
    bool piped = (json != NULL && strcmp(json, "-") == 0) ||
                 (report != NULL && strcmp(report, "-") == 0);
    return piped ? stderr : stdout;
}

int cg_cmd_write_notice(const struct cg_notice *n, const char *report_path, const char *json_path)
{
    struct cg_err err;
    struct cg_buf md;
    char *json = NULL;
    int rc = 0;
    cg_err_init(&err);
    cg_buf_init(&md, CG_REPORT_MAX_BYTES);
    if (cg_report_notice(n, report_path != NULL ? &md : NULL, json_path != NULL ? &json : NULL,
                         &err) != 0 ||
        (report_path != NULL && cg_file_write_atomic(report_path, md.data, md.len, &err) != 0) ||
        (json_path != NULL && cg_file_write_atomic(json_path, json, strlen(json), &err) != 0))
        rc = cg_cmd_fail(&err);
    cg_buf_release(&md);
    free(json);
    return rc;
}

int cg_cmd_error_exit_code(int code)
{
    switch (code) {
    case CG_OK:
        return CG_EXIT_PASS;
    case CG_EINPUT:
    case CG_EUSAGE:
        return CG_EXIT_INPUT;
    default:
        return CG_EXIT_RUNTIME;
    }
}
