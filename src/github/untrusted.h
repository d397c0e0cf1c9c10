/*
 * untrusted: a report that comes from a run the posting workflow does not trust (a fork's pull
 * request, uploaded as an artifact and posted by a privileged workflow_run job; docs/security.md
 * "The fork-comment trust boundary"). Its verdict must be the JSON verdict's, and its body is
 * sanitised again before it is posted: mentions, links, images and HTML that the report's own
 * renderer never writes cannot reach the pull request. Pure; no I/O, no threads.
 */
#ifndef CG_GITHUB_UNTRUSTED_H
#define CG_GITHUB_UNTRUSTED_H

#include "buf.h"
#include "err.h"
#include "github.h"

#include <stddef.h>

/* Checks the JSON verdict (json, len bytes, read from json_name) against the report's verdict
 * line (rep, read from report_name): the JSON must be one "canary-gate/verdict" document whose
 * "verdict" is pass, fail, inconclusive, error or recorded, and the report's verdict line must say
 * the same (a report "recorded" agrees with a JSON "pass", as the gate writes them). Sets *verdict
 * to the report's verdict. Returns 0 or CG_EINPUT with one line naming the files. */
int cg_github_untrusted_verdict(const char *json, size_t len, const char *json_name,
                                const struct cg_github_report *rep, const char *report_name,
                                enum cg_github_verdict *verdict, struct cg_err *err);

/* Appends the report (len bytes) sanitised again: its marker lines are replaced by the gate
 * marker of rep->id, the verdict line of verdict and (for an error) the reason line of
 * rep->reason, rebuilt; in the rest every '<' that does not open one of the report's own tags
 * (details, summary, sub, br, b, code, exactly; a </details> closing none is not one, and the
 * blocks left open are closed at the end) becomes "&lt;", every '@' (written or as an
 * entity) is followed by a zero-width joiner, "![", "](", "][" and "]:" lose their meaning, bare
 * URLs ("://", "www.") are not linked, and mermaid "click" lines are commented out. Invalid UTF-8
 * becomes U+FFFD. Returns 0 or CG_ENOMEM. */
int cg_github_untrusted_body(const char *report, size_t len, const struct cg_github_report *rep,
                             enum cg_github_verdict verdict, struct cg_buf *out);

#endif
