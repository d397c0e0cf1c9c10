/*
 * report_show: the document of `canary-gate show`, a human summary of one run artifact: its
 * environment and settings, each run's summary, what each run measured and where it ran, how the
 * runs ended and the library's warnings, the chart of per-step times, the diagnosis rules that
 * apply to the artifact on its own and the ops with the most time per step.
 */
#ifndef CG_REPORT_SHOW_H
#define CG_REPORT_SHOW_H

#include "artifact.h"
#include "buf.h"

/* How the chart of per-step times is drawn: left out, ASCII or UTF-8 block characters. */
enum cg_show_chart { CG_SHOW_CHART_NONE, CG_SHOW_CHART_ASCII, CG_SHOW_CHART_UTF8 };

/* The summary of a into o, with the top_ops ops of run 0 that take the most time per step (none
 * when 0). 0, or non-zero when out of memory (o then holds a part). */
int cg_report_show(const struct cg_artifact *a, long top_ops, enum cg_show_chart chart,
                   struct cg_buf *o);

#endif
