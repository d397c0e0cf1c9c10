/*
 * report_notice: the documents of a gate that produced no comparison (report.h, struct
 * cg_notice): the markdown report with its hidden markers and the JSON verdict, for the main
 * command and `ab`; and the text of a recorded baseline.
 */
#include "report.h"

#include "comment_marker.h"
#include "fmt.h"
#include "github_api.h"

#include <stdio.h>

void cg_report_recorded_text(const char *path, const struct cg_artifact *cur, char *dst, size_t n)
{
    snprintf(dst, n,
             "No baseline existed at '%s', so this run (%zu runs, median step time %.2f ms) was "
             "recorded as the baseline. Nothing was compared; later runs are gated against it.",
             path, cur->n_runs,
             cur->n_runs > 0 ? cur->runs[0].summary.step_time_median_ns / 1e6 : 0.0);
}

static int notice_markdown(const struct cg_notice *n, struct cg_buf *md, struct cg_err *err)
{
    char marker[CG_GITHUB_ID_MAX + 32];
    bool failed = n->kind == CG_NOTICE_CANARY_FAILED;
    if (cg_comment_marker_format(n->id, marker, sizeof(marker)) != 0) /* too long an id */
        return cg_err_set(err, CG_EINPUT, "--id '%s': not a valid gate id", n->id ? n->id : "");
    int rc = cg_comment_marker_add_head(md, n->id, failed ? "error" : "recorded",
                                        failed ? n->body : NULL, CG_GITHUB_REASON_MAX);
    rc |= cg_buf_printf(md, "## %s\n\n",
                        failed ? "\xe2\x9d\x8c canary-gate: the canary failed"
                               : "\xe2\x9c\x85 canary-gate: baseline recorded, nothing compared");
    rc |= cg_md_escape(md, n->body, 4096);
    rc |= cg_report_log_tail_markdown(n->tail, md);
    rc |= cg_buf_adds(md, "\n\n");
    rc |= cg_report_md_footer(md, n->by);
    return rc != 0 ? cg_err_set(err, CG_ENOMEM, "out of memory") : 0;
}

int cg_report_notice(const struct cg_notice *n, struct cg_buf *md, char **json, struct cg_err *err)
{
    if (md != NULL && notice_markdown(n, md, err) != 0)
        return err->code;
    if (json != NULL && (*json = cg_report_notice_json(n)) == NULL)
        return cg_err_set(err, CG_ENOMEM, "out of memory");
    return 0;
}
