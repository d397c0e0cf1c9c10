/*
 * chart: per-step times as pictures: a mermaid xychart for the PR comment (GitHub renders
 * mermaid code blocks) and a block chart for the terminal (canary-gate show).
 *
 * A step's time on one side is the median over that side's runs of the step with that index
 * (runs that stop earlier leave it out). Long series are downsampled by averaging consecutive
 * buckets of steps. Inputs are nanoseconds; the mermaid chart plots milliseconds. Charts hold
 * only numbers and fixed words, never artifact strings. Not thread-safe.
 */
#ifndef CG_CHART_H
#define CG_CHART_H

#include "artifact.h"
#include "buf.h"

#include <stdbool.h>
#include <stddef.h>

/* Points per line in the PR comment's chart, at most. */
#define CG_CHART_MAX_POINTS 100
/* Columns of the terminal chart, at most, and its height in rows. */
#define CG_CHART_TERM_WIDTH 60
#define CG_CHART_TERM_ROWS 6
/* Per-run lines under the terminal chart, at most. */
#define CG_CHART_TERM_RUNS 12

/* Median over runs of each step index (ns). *out is malloc'ed (caller frees) with *n values,
 * the longest run's step count; *out NULL and *n 0 when a has no steps. 0 or CG_ENOMEM. */
int cg_chart_step_medians(const struct cg_artifact *a, double **out, size_t *n);

/* Reduces v[0..n) to k = min(n, max_points) points, point i the mean of v over the steps
 * [i*n/k, (i+1)*n/k). out has room for k values. Returns k. */
size_t cg_chart_downsample(const double *v, size_t n, size_t max_points, double *out);

#define CG_CHART_ANATOMY_PARTS 4

/* Appends a fenced mermaid xychart-beta block of one stacked bar per side (baseline, current):
 * the step's GPU compute, then exposed communication, then copies while no kernel runs, then GPU
 * idle, each side's shares (0..1; NAN or negative: 0) scaled to add up to 100%. Mermaid's xychart
 * draws the bars of one x value over each other, so the stack is drawn as the bars of its running
 * totals, tallest first: idle grey, copies green, communication orange, compute blue. 0 or
 * CG_ENOMEM. */
int cg_chart_anatomy(struct cg_buf *out, const double base[CG_CHART_ANATOMY_PARTS],
                     const double cur[CG_CHART_ANATOMY_PARTS]);

/* Appends a fenced mermaid xychart-beta block with two lines, base then cur (n values each,
 * ns), downsampled to at most max_points points and plotted in ms. The first line is grey, the
 * second red. n must be at least 2 (else nothing is appended). 0 or CG_ENOMEM. */
int cg_chart_mermaid(struct cg_buf *out, const double *base, const double *cur, size_t n,
                     size_t max_points);

/* Appends the terminal chart of a's per-step times: a block chart of the median per step,
 * labelled with the scale's minimum and maximum and the first and last step, then one line per
 * run (up to CG_CHART_TERM_RUNS) on the same scale with its own minimum and maximum. width caps
 * the columns (CG_CHART_TERM_WIDTH when 0). ascii draws with ASCII characters only instead of
 * Unicode blocks. Appends nothing when a has no steps. 0 or CG_ENOMEM. */
int cg_chart_terminal(struct cg_buf *out, const struct cg_artifact *a, size_t width, bool ascii);

/* Appends a fenced mermaid xychart-beta block of one line over categories: v[i] at labels[i]
 * (letters and digits kept, anything else '_', 16 at most: a commit's short hash), the y axis
 * named unit, under title (fixed words). n must be at least 2 (else nothing). 0 or CG_ENOMEM. */
int cg_chart_mermaid_series(struct cg_buf *out, const char *title, const char *unit,
                            const char *const *labels, const double *v, size_t n);

/* Appends one line per value for the terminal: its label, its text values[i] and a bar from
 * zero (or from the smallest v when one is negative) to CG_CHART_TERM_WIDTH / 2 cells for the
 * largest, so equal values draw equal bars; a value at the origin draws none, one above it one
 * cell at least. 0 or CG_ENOMEM. */
int cg_chart_terminal_series(struct cg_buf *out, const char *const *labels,
                             const char *const *values, const double *v, size_t n, bool ascii);

#endif
