/*
 * report_history: `canary-gate history check`'s findings rendered as terminal lines, markdown
 * (the job summary) and JSON. Text from the history (commits, reasons) is escaped for each.
 */
#ifndef CG_REPORT_HISTORY_H
#define CG_REPORT_HISTORY_H

#include "buf.h"
#include "trend.h"

/* The terminal lines: one per change point, then the level across each segment with changes. */
int cg_report_history_terminal(const struct cg_trend_report *r, const char *path,
                               struct cg_buf *out);

/* The markdown section. */
int cg_report_history_markdown(const struct cg_trend_report *r, const char *path,
                               struct cg_buf *out);

/* The JSON document, malloc'ed; NULL when out of memory. */
char *cg_report_history_json(const struct cg_trend_report *r);

#endif
