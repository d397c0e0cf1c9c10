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

/* Why nothing was called where r found no change point in segment (0: any): the runs tested,
 * the smallest p a clean split of them can expect, and the strongest candidate with its p
 * against alpha ("10 runs tested: the smallest p a clean split of them can expect is 0.0097
 * (199 permutations); the strongest candidate, Step time floor +37.6% (27.40 ms -> 37.70 ms)
 * between runs 5 and 6, has p = 0.02 > alpha 0.01"). Plain text, numbers and fixed words only.
 * "" when there is no candidate. */
void cg_report_history_candidate_text(const struct cg_trend_candidate *c, char *dst, size_t n);

/* The JSON document, malloc'ed; NULL when out of memory. */
char *cg_report_history_json(const struct cg_trend_report *r);

#endif
