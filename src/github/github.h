/*
 * github: the PR comment (one per PR and gate id, edited in place), the commit status and the
 * job summary, over the GitHub REST API (through http.h).
 *
 * A comment is recognised by a hidden marker on its first line: "<!-- canary-gate -->" for the
 * default gate id, "<!-- canary-gate:<id> -->" otherwise. The markdown report written by the gate
 * starts with that marker and, on its second line, "<!-- canary-gate-verdict: V -->" with V one
 * of pass, fail, inconclusive, error (the canary failed: nothing was compared) or recorded (a
 * baseline was recorded: nothing was compared). An error report's third line may say why:
 * "<!-- canary-gate-reason: TEXT -->" (the commit status carries it). comment_marker.h writes and
 * reads these lines.
 * Existing comments are found by following the Link header's rel="next" through every page.
 *
 * The pure functions (report, marker, Link and event parsing) allocate only what they say and
 * never touch the network, so they can be fuzzed. The token only goes to the http client, in a
 * header. Not thread-safe: a struct cg_github belongs to one thread.
 */
#ifndef CG_GITHUB_H
#define CG_GITHUB_H

#include "buf.h"
#include "err.h"
#include "http.h"

#include <stddef.h>

#define CG_GITHUB_ID_MAX 64                /* longest gate id, in bytes */
/* GitHub's limit on a comment body, 65,536 "characters", counted as UTF-16 code units (a
 * character above U+FFFF is two): never fewer than characters, so safe whichever GitHub counts */
#define CG_GITHUB_COMMENT_MAX_UNITS 65536
#define CG_GITHUB_STATUS_CONTEXT "canary-gate"
#define CG_GITHUB_STATUS_MAX_CHARS 140 /* GitHub's limit on a status description */
#define CG_GITHUB_REASON_MAX 400       /* longest reason kept from a report, in bytes */

enum cg_github_verdict {
    CG_GITHUB_VERDICT_NONE = 0, /* not known */
    CG_GITHUB_PASS,
    CG_GITHUB_FAIL,
    CG_GITHUB_INCONCLUSIVE,
    CG_GITHUB_ERROR,   /* the canary failed: nothing was compared */
    CG_GITHUB_RECORDED /* a baseline was recorded: nothing was compared */
};

enum cg_github_mode {
    CG_GITHUB_MODE_ALWAYS,        /* create or update */
    CG_GITHUB_MODE_ON_REGRESSION, /* create only for fail/inconclusive; always update */
    CG_GITHUB_MODE_NEVER          /* no comment */
};

enum cg_github_action { CG_GITHUB_SKIPPED, CG_GITHUB_CREATED, CG_GITHUB_UPDATED };

/* What a report's marker lines say. */
struct cg_github_report {
    int has_marker;                       /* the first line is a canary-gate marker */
    char id[CG_GITHUB_ID_MAX + 1];        /* its gate id; "" for the default gate */
    enum cg_github_verdict verdict;       /* from the verdict line; NONE when absent */
    char reason[CG_GITHUB_REASON_MAX + 1]; /* from the reason line; "" when absent */
};

/* What the Actions event file says about the pull request. */
struct cg_github_event {
    long pr_number;    /* 0 when the event is not about a pull request */
    char head_sha[65]; /* pull_request.head.sha, "" when absent */
};

/* A client for one repository. All strings are borrowed and must outlive it. */
struct cg_github {
    struct cg_http *http; /* an initialised client (dry-run or not) */
    const char *api_url;  /* e.g. "https://api.github.com", no trailing slash needed */
    const char *repo;     /* "owner/name" */
    const char *token;    /* may be NULL only in dry-run */
};

/* The outcome of cg_github_comment_publish. */
struct cg_github_comment_result {
    enum cg_github_action action;
    long long comment_id; /* 0 when skipped or dry-run */
    char html_url[512];   /* the comment's page, "" when unknown */
};

/* Parses "pass", "fail", "inconclusive", "error" or "recorded" (any case). Returns the verdict,
 * or NONE. */
enum cg_github_verdict cg_github_verdict_parse(const char *s);

/* Returns "pass", "fail", "inconclusive", "error", "recorded" or "none" (static strings). */
const char *cg_github_verdict_name(enum cg_github_verdict v);

/* Checks a gate id: 1 to CG_GITHUB_ID_MAX of [A-Za-z0-9._-]. Returns 0 or CG_EINPUT. */
int cg_github_id_check(const char *id, struct cg_err *err);

/* Checks "owner/name" (GitHub's characters, one slash). Returns 0 or CG_EINPUT. */
int cg_github_repo_check(const char *repo, struct cg_err *err);

/* Checks a commit SHA: 7 to 64 hex digits. Returns 0 or CG_EINPUT. */
int cg_github_sha_check(const char *sha, struct cg_err *err);

/* Writes the marker line for id (NULL or "" for the default gate) into out (as
 * cg_comment_marker_format). Returns 0, or CG_EINPUT when it does not fit. */
int cg_github_marker(const char *id, char *out, size_t size);

/* Reads the marker lines at the top of a report of len bytes (marker, verdict, reason). Pure;
 * never fails. */
void cg_github_report_parse(const char *text, size_t len, struct cg_github_report *out);

/* Builds the comment body: the report with its marker line replaced by id's marker (prepended
 * when the report has none), cut at a line and marked as truncated when it passes GitHub's
 * limit; a cut closes the code fence and <details> blocks it leaves open before the note, so
 * the note shows. Appends to out. Returns 0 or CG_ENOMEM. */
int cg_github_comment_body(const char *report, size_t len, const char *id, struct cg_buf *out,
                           struct cg_err *err);

/* Finds the URL with rel="next" in a Link header value. Returns 1 and sets *next (malloc'ed,
 * caller frees) when there is one, 0 when there is none or the value is malformed, CG_ENOMEM.
 * Pure. */
int cg_github_link_next(const char *link, char **next);

/* Parses an Actions event file's JSON (len bytes; name is used in messages). Returns 0 (with
 * pr_number 0 for events that are not about a pull request), or CG_EINPUT when the JSON is
 * malformed or its pull request has no valid number or head SHA. Pure. */
int cg_github_event_parse(const char *json, size_t len, const char *name,
                          struct cg_github_event *ev, struct cg_err *err);

/* Finds, in one page of GitHub's comment list (JSON, len bytes), the first comment of the gate's
 * whose body's first line is exactly marker: by a bot (an Actions or app token's, "type": "Bot"),
 * or by the user own_login (a personal token's; NULL: none). Anyone can post a comment that
 * begins with the marker: one by another user is passed over and counted in *foreign (when not
 * NULL). Sets *comment_id (0 when none). Returns 0, or CG_EINPUT when the body is not a JSON
 * array. Pure. */
int cg_github_comments_scan(const char *body, size_t len, const char *marker, const char *own_login,
                            long long *comment_id, size_t *foreign);

/* Copies GitHub's "message" (and the first validation error) from a JSON error body of len bytes
 * into out as one printable line ("" when there is none). Pure. */
void cg_github_api_message(const char *body, size_t len, char *out, size_t size);

/* Finds the gate's comment on PR pr whose first line is marker (cg_github_comments_scan: a bot's,
 * or when a user's comment bears it, the token's own user's as GET /user names it), following
 * every page. Sets *comment_id (0 when none). Returns 0 or CG_ENET/CG_ENOMEM with a one-line
 * message. */
int cg_github_comment_find(struct cg_github *gh, long pr, const char *marker,
                           long long *comment_id, struct cg_err *err);

/* Creates or updates the gate id's comment on PR pr with body, as mode and verdict decide (see
 * enum cg_github_mode; on-regression creates one for fail, inconclusive and error). Fills res.
 * Returns 0 or CG_ENET/CG_ENOMEM/CG_EINPUT. */
int cg_github_comment_publish(struct cg_github *gh, long pr, const char *id, const char *body,
                              enum cg_github_mode mode, enum cg_github_verdict verdict,
                              struct cg_github_comment_result *res, struct cg_err *err);

/* The commit status of a verdict: its state ("success", "failure" or "error") and its
 * description into desc (at most CG_GITHUB_STATUS_MAX_CHARS characters, cut at a character):
 * "PASS: ...", "FAIL: ...", "INCONCLUSIVE: ...", "canary failed: <reason>" (error; reason may
 * be NULL or "") or "baseline recorded, nothing compared". Pure. */
const char *cg_github_status_of(enum cg_github_verdict verdict, const char *reason, char *desc,
                                size_t size);

/* Writes the commit status context, also the check run's name: "canary-gate", or
 * "canary-gate/<id>" when id is neither NULL nor "". Pure. */
void cg_github_context(const char *id, char *out, size_t size);

/* Sets the commit status on sha: context "canary-gate" or "canary-gate/<id>", the state and
 * description of cg_github_status_of (reason: why the canary failed, for error; may be NULL).
 * target_url may be NULL. Returns 0 or CG_ENET/CG_ENOMEM/CG_EINPUT. */
int cg_github_status_set_reason(struct cg_github *gh, const char *sha, const char *id,
                                enum cg_github_verdict verdict, const char *reason,
                                const char *target_url, struct cg_err *err);

/* cg_github_status_set_reason without a reason. */
int cg_github_status_set(struct cg_github *gh, const char *sha, const char *id,
                         enum cg_github_verdict verdict, const char *target_url,
                         struct cg_err *err);

/* Appends text (len bytes, plus a newline when it lacks one) to the job summary file at path,
 * creating it. A file that is not a regular one (a FIFO, a device) is refused without waiting
 * and without writing. Returns 0, CG_EINPUT (not a regular file) or CG_EIO naming the path. */
int cg_github_summary_append(const char *path, const char *text, size_t len, struct cg_err *err);

#endif
