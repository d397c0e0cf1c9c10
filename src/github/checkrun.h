/*
 * checkrun: the verdict as a GitHub check run (the Checks API), beside the PR comment and the
 * commit status. A check run has a conclusion that is neither pass nor fail: INCONCLUSIVE is
 * `neutral`, so it never shows as a green check. One check run per commit and gate id, named as
 * the commit status ("canary-gate" or "canary-gate/<id>") and told apart from any other check
 * of that name (a workflow job called canary-gate) by its external_id
 * ("canary-gate-verdict" or "canary-gate-verdict:<id>"); a re-run of the same commit finds it
 * (GET .../commits/{sha}/check-runs?check_name=) and updates it in place (PATCH).
 *
 * Creating one needs the token's `checks: write`. The pure functions allocate only what they
 * say and never touch the network. Not thread-safe: a struct cg_github belongs to one thread.
 */
#ifndef CG_CHECKRUN_H
#define CG_CHECKRUN_H

#include "buf.h"
#include "err.h"
#include "github.h"

#include <stddef.h>

/* GitHub's limit on output.summary is 65535 characters; the summary is cut at 65535 bytes,
 * which no way of counting characters (code points, UTF-16 units, bytes) can exceed. */
#define CG_GITHUB_CHECK_SUMMARY_MAX_BYTES 65535
#define CG_GITHUB_CHECK_EXTERNAL_ID "canary-gate-verdict"

/* The outcome of cg_github_check_run_publish. */
struct cg_github_check_result {
    enum cg_github_action action; /* CREATED or UPDATED */
    long long check_run_id;       /* 0 in a dry run */
    char html_url[512];           /* the check run's page, "" when unknown */
};

/* The conclusion of a verdict: "success" (pass), "failure" (fail, and error: the canary
 * failed), "neutral" (inconclusive, and recorded: nothing was compared), or NULL for NONE.
 * Static strings. Pure. */
const char *cg_github_check_conclusion(enum cg_github_verdict verdict);

/* Writes the external_id of gate id (NULL or "" for the default gate). Pure. */
void cg_github_check_external_id(const char *id, char *out, size_t size);

/* Appends the check run's summary: the report, cut at a line and marked as cut when it passes
 * CG_GITHUB_CHECK_SUMMARY_MAX_BYTES, the blocks it leaves open closed first. Returns 0 or
 * CG_ENOMEM. (In github_parse.c, beside the comment's cut.) */
int cg_github_check_summary(const char *report, size_t len, struct cg_buf *out, struct cg_err *err);

/* Finds, in one page of GitHub's check-run list (JSON, len bytes), the first check run named name
 * whose external_id is external_id. Sets *check_run_id (0 when none). Returns 0, or CG_EINPUT
 * when the body is not a check-run list. Pure. */
int cg_github_check_runs_scan(const char *body, size_t len, const char *name,
                              const char *external_id, long long *check_run_id);

/* Finds gate id's check run on commit sha, following every page. Sets *check_run_id (0 when
 * none). Returns 0 or CG_ENET/CG_ENOMEM/CG_EINPUT with a one-line message. */
int cg_github_check_run_find(struct cg_github *gh, const char *sha, const char *id,
                             long long *check_run_id, struct cg_err *err);

/* Creates, or updates in place, gate id's check run on sha: completed, the verdict's conclusion,
 * the commit status's description as its title (reason: why the canary failed, for error; may
 * be NULL) and the report (len bytes) as its summary. details_url (the Actions run) may be
 * NULL. A create that got a 5xx or no answer looks again before it is repeated. Fills res.
 * Returns 0 or CG_ENET/CG_ENOMEM/CG_EINPUT; a 403 says the job needs `checks: write`. */
int cg_github_check_run_publish(struct cg_github *gh, const char *sha, const char *id,
                                enum cg_github_verdict verdict, const char *reason,
                                const char *report, size_t len, const char *details_url,
                                struct cg_github_check_result *res, struct cg_err *err);

#endif
