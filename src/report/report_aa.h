/*
 * report_aa: the documents of `canary-gate aa`: the A/A report a terminal shows (this runner's
 * noise per metric, the false alarms of the thresholds on A/A decisions and the smallest
 * thresholds that keep them at the target, whether the counts are exact here, the GPU's own
 * state, the thresholds snippet), the snippet alone, and the report as JSON (schema
 * canary-gate/aa).
 */
#ifndef CG_REPORT_AA_H
#define CG_REPORT_AA_H

#include "buf.h"
#include "counts.h"
#include "noise.h"
#include "thresholds.h"

#include <stdbool.h>

/* The thresholds snippet: a thresholds file that extends `extends` with the recommended
 * max_regression_pct of every metric that has one, into b. b's text, or NULL when out of memory. */
const char *cg_report_aa_snippet(const struct cg_noise *z, const char *extends, struct cg_buf *b);

/* The terminal report into o: noise, false alarms, counts, gpu_text (report_gpu_aa.h) and the
 * snippet. 0, or non-zero when out of memory. */
int cg_report_aa_text(const struct cg_noise *z, const struct cg_counts *counts,
                      const struct cg_thresholds *t, const char *gpu_text, const char *snip,
                      struct cg_buf *o);

/* The report as JSON, with the snippet parsed in and whether locking the clocks is advised.
 * Allocated (the caller frees it), or NULL when out of memory. */
char *cg_report_aa_json(const struct cg_noise *z, const struct cg_counts *counts,
                        const struct cg_thresholds *t, const char *snip, const char *gpu_text,
                        bool lock_clocks);

#endif
