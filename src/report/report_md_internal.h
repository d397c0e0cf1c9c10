/*
 * report_md_internal: what the markdown report's files share (report_md.c, the report and its
 * layout; report_md_steps.c, the sections on what a step does). Not for other renderers.
 */
#ifndef CG_REPORT_MD_INTERNAL_H
#define CG_REPORT_MD_INTERNAL_H

#include "buf.h"
#include "report.h"
#include "verdict.h"

/* The longest name (kernel, range, count) a table shows, escaped, in bytes. */
#define CG_REPORT_MD_NAME_MAX_BYTES 160

/* An outcome as a table cell: its icon and word (a static string). */
const char *cg_report_md_icon(enum cg_outcome o);

/* The sections of report_md_steps.c: each appends its markdown to b (nothing when it has
 * nothing to say) and returns 0, or non-zero when b is full. */
int cg_report_md_counts(struct cg_buf *b, const struct cg_verdict *v);
int cg_report_md_where(struct cg_buf *b, const struct cg_verdict *v);
int cg_report_md_count_notes(struct cg_buf *b, const struct cg_verdict *v);
int cg_report_md_anatomy(struct cg_buf *b, const struct cg_verdict *v);

#endif
