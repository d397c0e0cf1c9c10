/*
 * cmd_comment: 'canary-gate comment' posts the markdown report as the PR comment (one per PR and
 * gate id, edited in place), optionally sets a commit status and publishes a check run on the PR
 * head, and appends the report to the Actions job summary.
 *
 * Defaults come from the Actions environment (GITHUB_TOKEN, GITHUB_REPOSITORY, GITHUB_API_URL,
 * GITHUB_EVENT_PATH, GITHUB_STEP_SUMMARY). Posting problems are warnings: the command exits 0
 * unless --require-comment, so they never change the gate's verdict. The token is only handed
 * to the http client; it is never printed. Single-threaded.
 */
#include "cg_version.h"
#include "checkrun.h"
#include "cmd.h"
#include "cmd_options.h"
#include "comment_marker.h"
#include "fsutil.h"
#include "github.h"
#include "http.h"
#include "redact.h"
#include "untrusted.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPORT_MAX_BYTES ((size_t)4 << 20)
#define EVENT_MAX_BYTES ((size_t)64 << 20)

static const char usage_text[] =
    "usage: canary-gate comment --report FILE.md [options]\n"
    "\n"
    "Posts the report as the pull request's canary-gate comment (edited in place on later runs),\n"
    "optionally sets a commit status and a check run, and appends the report to\n"
    "$GITHUB_STEP_SUMMARY.\n"
    "\n"
    "options:\n"
    "  --report FILE.md        the markdown report written by 'canary-gate compare' (required)\n"
    "  --repo OWNER/NAME       repository (default: $GITHUB_REPOSITORY)\n"
    "  --pr N                  pull request number (default: from $GITHUB_EVENT_PATH)\n"
    "  --sha SHA               commit for --status and --check-run (default: the pull\n"
    "                          request's head commit)\n"
    "  --status                also set the commit status 'canary-gate[/ID]'\n"
    "  --check-run             also publish the check run 'canary-gate[/ID]' (updated in place\n"
    "                          on re-runs): success, failure, or neutral for inconclusive and a\n"
    "                          recorded baseline; the report is its summary (checks: write)\n"
    "  --comment-mode MODE     always (default), on-regression (create only for fail,\n"
    "                          inconclusive or error, but keep an existing comment current),\n"
    "                          never\n"
    "  --id NAME               gate id, for several gates on one pull request (default: the\n"
    "                          report's, else none)\n"
    "  --verdict V             pass, fail, inconclusive, error (the canary failed) or recorded\n"
    "                          (a baseline was recorded) (default: the report's verdict line)\n"
    "  --untrusted VERDICT.json\n"
    "                          the report comes from a run this workflow does not trust (a\n"
    "                          fork's uploaded artifact): its verdict line must agree with\n"
    "                          VERDICT.json (the gate's --json), which gives the verdict (no\n"
    "                          --verdict), and its body is sanitised again before posting\n"
    "                          (mentions, links, images, HTML); take --pr and --sha from the\n"
    "                          trusted event, never from the artifact\n"
    "  --dry-run               print each request, token redacted, instead of sending it\n"
    "  --require-comment       exit 3 when the comment, status or check run cannot be posted\n"
    "  --deadline SEC          give up posting after SEC seconds in all, retries and every page\n"
    "                          of comments included (default 120)\n"
    "  -h, --help              show this help\n"
    "\n"
    "environment: GITHUB_TOKEN (sent only in the Authorization header), GITHUB_REPOSITORY,\n"
    "GITHUB_API_URL (default https://api.github.com), GITHUB_EVENT_PATH, GITHUB_STEP_SUMMARY.\n"
    "Posting problems are warnings on stderr and exit 0, unless --require-comment.\n";

struct comment_opts {
    const char *report;
    const char *repo;
    const char *sha;
    const char *id;
    char sha_buf[65]; /* the head SHA read from the event file */
    long pr;
    int status;
    int check_run;
    int dry_run;
    int require;
    long deadline_s;
    enum cg_github_mode mode;
    enum cg_github_verdict verdict;
    const char *reason; /* why the canary failed (an error report's reason line), or NULL */
};

static void print_request(void *ctx, const char *text)
{
    (void)ctx;
    printf("--- dry run: not sent ---\n%s", text);
    fflush(stdout);
}

static void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void warn(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "canary-gate: warning: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && *v != '\0' ? v : NULL;
}

void cg_post_opts_init(struct cg_post_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->mode = CG_GITHUB_MODE_ALWAYS;
    o->deadline_s = CG_COMMENT_DEADLINE_S;
}

bool cg_post_mode_parse(const char *s, enum cg_github_mode *mode)
{
    if (strcmp(s, "always") == 0)
        *mode = CG_GITHUB_MODE_ALWAYS;
    else if (strcmp(s, "on-regression") == 0)
        *mode = CG_GITHUB_MODE_ON_REGRESSION;
    else if (strcmp(s, "never") == 0)
        *mode = CG_GITHUB_MODE_NEVER;
    else
        return false;
    return true;
}

static int parse_args(int argc, char **argv, struct cg_post_opts *o)
{
    static const struct option longopts[] = {
        {"report", required_argument, NULL, 'r'},
        {"repo", required_argument, NULL, 'R'},
        {"pr", required_argument, NULL, 'p'},
        {"sha", required_argument, NULL, 's'},
        {"status", no_argument, NULL, 'S'},
        {"check-run", no_argument, NULL, 'C'},
        {"comment-mode", required_argument, NULL, 'm'},
        {"id", required_argument, NULL, 'i'},
        {"verdict", required_argument, NULL, 'v'},
        {"untrusted", required_argument, NULL, 'u'},
        {"dry-run", no_argument, NULL, 'n'},
        {"require-comment", no_argument, NULL, 'q'},
        {"deadline", required_argument, NULL, 'd'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct cg_err err;
    cg_err_init(&err);
    optind = 1;
    opterr = 0;
    int c;
    struct cg_cmd_given given = {0};
    while ((c = cg_cmd_getopt("comment", argc, argv, ":h", longopts, &given)) != -1) {
        switch (c) {
        case 'r':
            o->report = optarg;
            break;
        case 'R':
            if (cg_github_repo_check(optarg, &err) != 0)
                return cg_cmd_usage_error("comment", "--repo: %s", err.msg);
            o->repo = optarg;
            break;
        case 'p':
            if (cg_cmd_parse_count("comment", "--pr", optarg, 1, 2147483647L, &o->pr) != 0)
                return CG_EXIT_INPUT;
            break;
        case 's':
            if (cg_github_sha_check(optarg, &err) != 0)
                return cg_cmd_usage_error("comment", "--sha: %s", err.msg);
            o->sha = optarg;
            break;
        case 'S':
            o->status = true;
            break;
        case 'C':
            o->check_run = true;
            break;
        case 'm':
            if (!cg_post_mode_parse(optarg, &o->mode))
                return cg_cmd_usage_error("comment",
                                          "--comment-mode '%s': expected always, on-regression "
                                          "or never", optarg);
            break;
        case 'i':
            if (cg_github_id_check(optarg, &err) != 0)
                return cg_cmd_usage_error("comment", "--id: %s", err.msg);
            o->id = optarg;
            break;
        case 'v':
            o->verdict = cg_github_verdict_parse(optarg);
            if (o->verdict == CG_GITHUB_VERDICT_NONE)
                return cg_cmd_usage_error("comment",
                                          "--verdict '%s': expected pass, fail, inconclusive, "
                                          "error or recorded",
                                          optarg);
            break;
        case 'u':
            o->untrusted = optarg;
            break;
        case 'n':
            o->dry_run = true;
            break;
        case 'q':
            o->require = true;
            break;
        case 'd':
            if (cg_cmd_parse_count("comment", "--deadline", optarg, 1, 3600, &o->deadline_s) != 0)
                return CG_EXIT_INPUT;
            break;
        case 'h':
            fputs(usage_text, stdout);
            return -1;
        default:
            return cg_cmd_option_error("comment", c, argv);
        }
    }
    if (optind < argc)
        return cg_cmd_usage_error("comment", "unexpected argument '%s'", argv[optind]);
    if (o->report == NULL)
        return cg_cmd_usage_error("comment", "--report FILE.md is required");
    if (o->untrusted != NULL && o->verdict != CG_GITHUB_VERDICT_NONE)
        return cg_cmd_usage_error("comment", "--verdict and --untrusted: an untrusted report's "
                                             "verdict is its JSON verdict's");
    return 0;
}

/* Fills in the pull request and head SHA from the event file when the options lack them. A
 * problem is a warning (returns nonzero) since it only stops posting. */
static int read_event(struct comment_opts *o)
{
    const char *path = env("GITHUB_EVENT_PATH");
    char *json = NULL;
    size_t len = 0;
    struct cg_github_event ev;
    struct cg_err err;
    int rc = 0;
    cg_err_init(&err);
    if (path == NULL || (o->pr != 0 && (o->sha != NULL || (!o->status && !o->check_run))))
        return 0;
    if ((rc = cg_file_read(path, EVENT_MAX_BYTES, &json, &len, &err)) != 0 ||
        (rc = cg_github_event_parse(json, len, path, &ev, &err)) != 0) {
        warn("%s", err.msg);
        goto done;
    }
    if (o->pr == 0)
        o->pr = ev.pr_number;
    if (o->sha == NULL && ev.head_sha[0] != '\0') {
        memcpy(o->sha_buf, ev.head_sha, sizeof(o->sha_buf));
        o->sha = o->sha_buf;
    }
    if (o->sha == NULL && ev.pr_number == 0 && env("GITHUB_SHA") != NULL &&
        cg_github_sha_check(env("GITHUB_SHA"), NULL) == 0)
        o->sha = env("GITHUB_SHA"); /* push events: the pushed commit (never a merge commit) */
done:
    free(json);
    return rc;
}

/* An untrusted report (--untrusted JSON): its verdict checked against the JSON verdict (into
 * *verdict) and *report (len bytes, replaced) sanitised again. 0, or an error naming the files
 * (nothing is posted then). */
static int untrusted_report(const char *json_path, const char *report_path,
                            const struct cg_github_report *rep, char **report, size_t *len,
                            enum cg_github_verdict *verdict, struct cg_err *err)
{
    char *json = NULL;
    size_t json_len = 0;
    struct cg_buf body;
    cg_buf_init(&body, REPORT_MAX_BYTES * 2);
    int rc = cg_file_read(json_path, REPORT_MAX_BYTES * 4, &json, &json_len, err);
    if (rc == 0)
        rc = cg_github_untrusted_verdict(json, json_len, json_path, rep, report_path, verdict,
                                         err);
    if (rc == 0 && cg_github_untrusted_body(*report, *len, rep, *verdict, &body) != 0)
        rc = cg_err_set(err, CG_ENOMEM, "'%s': out of memory", report_path);
    if (rc == 0) {
        free(*report);
        *len = body.len;
        *report = cg_buf_detach(&body);
    }
    cg_buf_release(&body);
    free(json);
    return rc;
}

/* Returns 1 when the posting context is complete, else warns and returns 0. */
static int have_context(const struct comment_opts *o, const char *token, int need_pr,
                        int need_sha, const char *what)
{
    if (token == NULL && !o->dry_run) {
        warn("no GITHUB_TOKEN: the %s was not posted", what);
        return 0;
    }
    if (token != NULL && strpbrk(token, "\r\n\t ") != NULL) {
        warn("GITHUB_TOKEN holds a space or line break: the %s was not posted", what);
        return 0;
    }
    if (o->repo == NULL) {
        warn("no repository (set GITHUB_REPOSITORY or pass --repo): the %s was not posted", what);
        return 0;
    }
    if (need_pr && o->pr == 0) {
        warn("no pull request (not a pull_request event and no --pr): the %s was not posted", what);
        return 0;
    }
    if (need_sha && o->sha == NULL) {
        warn("no commit (pass --sha or run on a pull_request event): the %s was not posted", what);
        return 0;
    }
    return 1;
}

static const char *action_name(enum cg_github_action a)
{
    return a == CG_GITHUB_CREATED ? "created" : a == CG_GITHUB_UPDATED ? "updated" : "skipped";
}

/* Posts the comment; returns 0 when done or rightly skipped, 1 when it could not be posted. */
static int post_comment(struct comment_opts *o, struct cg_github *gh, const char *report,
                        size_t len, const char *token)
{
    struct cg_buf body;
    struct cg_github_comment_result res;
    struct cg_err err;
    int failed = 0;
    cg_err_init(&err);
    cg_buf_init(&body, (size_t)1 << 20);
    if (!have_context(o, token, 1, 0, "comment")) {
        failed = 1;
        goto done;
    }
    if (cg_github_comment_body(report, len, o->id, &body, &err) != 0 ||
        cg_github_comment_publish(gh, o->pr, o->id, cg_buf_str(&body), o->mode, o->verdict, &res,
                                  &err) != 0) {
        warn("%s", err.msg);
        failed = 1;
        goto done;
    }
    if (res.action == CG_GITHUB_SKIPPED)
        fprintf(stderr, "canary-gate: comment: none on %s#%ld and the verdict is %s: nothing "
                        "posted (on-regression)\n",
                o->repo, o->pr, cg_github_verdict_name(o->verdict));
    else if (o->dry_run)
        fprintf(stderr, "canary-gate: comment: dry run; the lookup was not sent, so a create is "
                        "shown (an existing comment would be updated with PATCH)\n");
    else
        fprintf(stderr, "canary-gate: comment: %s on %s#%ld%s%s\n", action_name(res.action),
                o->repo, o->pr, res.html_url[0] ? ": " : "", res.html_url);
done:
    cg_buf_release(&body);
    return failed;
}

/* The Actions run's page into target, when the environment names it; 1 then, else 0. */
static int run_url(struct cg_buf *target)
{
    const char *server = env("GITHUB_SERVER_URL"), *run = env("GITHUB_RUN_ID");
    const char *run_repo = env("GITHUB_REPOSITORY");
    return server != NULL && run != NULL && run_repo != NULL &&
           cg_buf_printf(target, "%s/%s/actions/runs/%s", server, run_repo, run) == 0;
}

/* Sets the commit status; returns 0 when done, 1 when it could not be set. */
static int post_status(struct comment_opts *o, struct cg_github *gh, const char *token)
{
    struct cg_buf target;
    struct cg_err err;
    int failed = 0;
    cg_err_init(&err);
    cg_buf_init(&target, 4096);
    if (!have_context(o, token, 0, 1, "commit status")) {
        failed = 1;
        goto done;
    }
    int has_target = run_url(&target);
    if (cg_github_status_set_reason(gh, o->sha, o->id, o->verdict, o->reason,
                                    has_target ? cg_buf_str(&target) : NULL, &err) != 0) {
        warn("%s", err.msg);
        failed = 1;
        goto done;
    }
    if (!o->dry_run)
        fprintf(stderr, "canary-gate: status: %s on %s@%.12s\n", cg_github_verdict_name(o->verdict),
                o->repo, o->sha);
done:
    cg_buf_release(&target);
    return failed;
}

/* Publishes the check run; returns 0 when done, 1 when it could not be. */
static int post_check_run(struct comment_opts *o, struct cg_github *gh, const char *report,
                          size_t len, const char *token)
{
    struct cg_buf target;
    struct cg_github_check_result res;
    struct cg_err err;
    int failed = 0;
    cg_err_init(&err);
    cg_buf_init(&target, 4096);
    if (!have_context(o, token, 0, 1, "check run")) {
        failed = 1;
        goto done;
    }
    int has_target = run_url(&target);
    if (cg_github_check_run_publish(gh, o->sha, o->id, o->verdict, o->reason, report, len,
                                    has_target ? cg_buf_str(&target) : NULL, &res, &err) != 0) {
        warn("%s", err.msg);
        failed = 1;
        goto done;
    }
    if (o->dry_run)
        fprintf(stderr, "canary-gate: check run: dry run; the lookup was not sent, so a create "
                        "is shown (an existing check run would be updated with PATCH)\n");
    else
        fprintf(stderr, "canary-gate: check run: %s, %s on %s@%.12s%s%s\n",
                action_name(res.action), cg_github_check_conclusion(o->verdict), o->repo, o->sha,
                res.html_url[0] ? ": " : "", res.html_url);
done:
    cg_buf_release(&target);
    return failed;
}

int cg_cmd_post(const struct cg_post_opts *p)
{
    struct comment_opts o;
    struct cg_github_report rep;
    struct cg_http_options hopt;
    struct cg_http http;
    struct cg_err err;
    char *report = NULL;
    size_t len = 0;
    char user_agent[64];
    int exit_code = CG_EXIT_PASS;
    int failed = 0;

    memset(&o, 0, sizeof(o));
    memset(&http, 0, sizeof(http));
    cg_err_init(&err);
    o.report = p->report;
    o.repo = p->repo;
    o.sha = p->sha;
    o.id = p->id;
    o.pr = p->pr;
    o.status = p->status;
    o.check_run = p->check_run;
    o.dry_run = p->dry_run;
    o.require = p->require;
    o.deadline_s = p->deadline_s;
    o.mode = p->mode;
    o.verdict = p->verdict;
    if (cg_file_read(o.report, REPORT_MAX_BYTES, &report, &len, &err) != 0) {
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    cg_github_report_parse(report, len, &rep);
    if (p->untrusted != NULL && untrusted_report(p->untrusted, o.report, &rep, &report, &len,
                                                 &o.verdict, &err) != 0) {
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    if (o.id == NULL && rep.id[0] != '\0')
        o.id = rep.id;
    if (o.verdict == CG_GITHUB_VERDICT_NONE)
        o.verdict = rep.verdict;
    if (rep.reason[0] != '\0')
        o.reason = rep.reason;
    if (o.verdict == CG_GITHUB_VERDICT_NONE &&
        (o.status || o.check_run || o.mode == CG_GITHUB_MODE_ON_REGRESSION)) {
        exit_code = cg_cmd_usage_error("comment",
                                       "'%s' has no '" CG_COMMENT_MARKER_VERDICT_HEAD
                                       " ... -->' line: pass "
                                       "--verdict pass|fail|inconclusive|error|recorded",
                                       o.report);
        goto done;
    }
    cg_http_options_default(&hopt);
    if (cg_http_options_env(&hopt, &err) != 0) {
        exit_code = cg_cmd_fail(&err);
        goto done;
    }

    /* The job summary first: it works even when posting cannot (fork pull requests). */
    const char *summary = env("GITHUB_STEP_SUMMARY");
    if (summary != NULL && cg_github_summary_append(summary, report, len, &err) != 0)
        warn("%s", err.msg);

    if (o.repo == NULL)
        o.repo = env("GITHUB_REPOSITORY");
    if (o.repo != NULL && cg_github_repo_check(o.repo, &err) != 0) {
        warn("GITHUB_REPOSITORY: %s", err.msg);
        o.repo = NULL;
    }
    const char *token = env("GITHUB_TOKEN");
    const char *api = env("GITHUB_API_URL") ? env("GITHUB_API_URL") : "https://api.github.com";
    if (strncmp(api, "https://", 8) != 0 && strncmp(api, "http://", 7) != 0) {
        char *shown = cg_redact_apply(NULL, api);
        warn("GITHUB_API_URL '%s' is not an http(s) URL: nothing was posted",
             shown != NULL ? shown : CG_REDACT_MARK);
        free(shown);
        failed = 1;
        goto finish;
    }
    if (read_event(&o) != 0 && (o.mode != CG_GITHUB_MODE_NEVER || o.status || o.check_run)) {
        failed = 1;
        goto finish;
    }

    snprintf(user_agent, sizeof(user_agent), "canary-gate/%s", CG_VERSION);
    hopt.user_agent = user_agent;
    hopt.dry_run = o.dry_run;
    hopt.deadline_ms = o.deadline_s * 1000;
    hopt.trace = print_request;
    if (cg_http_init(&http, &hopt, &err) != 0) {
        warn("%s", err.msg);
        failed = 1;
        goto finish;
    }
    struct cg_github gh = {&http, api, o.repo, token};
    if (o.mode != CG_GITHUB_MODE_NEVER)
        failed |= post_comment(&o, &gh, report, len, token);
    if (o.status)
        failed |= post_status(&o, &gh, token);
    if (o.check_run)
        failed |= post_check_run(&o, &gh, report, len, token);
finish:
    if (failed && o.require) {
        fprintf(stderr, "canary-gate: posting failed and --require-comment is set\n");
        exit_code = CG_EXIT_RUNTIME;
    }
done:
    cg_http_release(&http);
    free(report);
    fflush(stdout);
    return exit_code;
}

int cmd_comment(int argc, char **argv)
{
    struct cg_post_opts o;
    cg_post_opts_init(&o);
    int rc = parse_args(argc, argv, &o);
    if (rc != 0) {
        fflush(stdout);
        return rc < 0 ? CG_EXIT_PASS : rc;
    }
    return cg_cmd_post(&o);
}
