/*
 * chart: step-time charts for the PR comment and the terminal (see chart.h).
 *
 * Terminal chart geometry: each column is a step (or the mean of a bucket of steps); a value is
 * drawn as a bar of eighth-cell units, from one unit for the scale's minimum to every unit of
 * CG_CHART_TERM_ROWS rows for its maximum, so the lowest step still shows. Per-run lines use
 * one of eight levels per column on the same scale. The chart of a series (bisect's probed
 * commits) draws one horizontal bar per value from zero instead, each labelled with its value.
 */
#include "chart.h"

#include "fmt.h"
#include "stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* U+2581..U+2588, one to eight eighths of a cell. */
static const char *const blocks[9] = {
    " ",
    "\xe2\x96\x81",
    "\xe2\x96\x82",
    "\xe2\x96\x83",
    "\xe2\x96\x84",
    "\xe2\x96\x85",
    "\xe2\x96\x86",
    "\xe2\x96\x87",
    "\xe2\x96\x88",
};
static const char ascii_bar[9] = {' ', '.', '.', '.', ':', ':', ':', ':', '#'};
static const char ascii_levels[9] = {' ', '_', '.', '-', '~', '=', '+', '*', '#'};

int cg_chart_step_medians(const struct cg_artifact *a, double **out, size_t *n)
{
    size_t len = 0;
    *out = NULL;
    *n = 0;
    for (size_t r = 0; r < a->n_runs; r++)
        len = a->runs[r].n_steps > len ? a->runs[r].n_steps : len;
    if (len == 0)
        return 0;
    double *med = malloc(len * sizeof(*med));
    double *col = malloc(a->n_runs * sizeof(*col));
    if (med == NULL || col == NULL) {
        free(med);
        free(col);
        return CG_ENOMEM;
    }
    for (size_t s = 0; s < len; s++) {
        size_t k = 0;
        for (size_t r = 0; r < a->n_runs; r++) {
            if (s < a->runs[r].n_steps)
                col[k++] = (double)a->runs[r].steps[s].wall_ns;
        }
        med[s] = cg_stats_quantile(col, k, 0.5);
        if (isnan(med[s])) {
            free(med);
            free(col);
            return CG_ENOMEM;
        }
    }
    free(col);
    *out = med;
    *n = len;
    return 0;
}

size_t cg_chart_downsample(const double *v, size_t n, size_t max_points, double *out)
{
    size_t k = n < max_points ? n : max_points;
    for (size_t i = 0; i < k; i++) {
        size_t lo = i * n / k, hi = (i + 1) * n / k;
        double sum = 0.0;
        for (size_t j = lo; j < hi; j++)
            sum += v[j]; /* NOLINT(clang-analyzer-core.uninitialized.Assign): v[0, n) is set */
        out[i] = sum / (double)(hi - lo);
    }
    return k;
}

static void range_of(const double *v, size_t n, double *lo, double *hi)
{
    for (size_t i = 0; i < n; i++) {
        *lo = fmin(*lo, v[i]);
        *hi = fmax(*hi, v[i]);
    }
}

/* Appends v with four significant digits (all the digits before the point when it has more)
 * in plain decimal: mermaid's xychart reads no exponent notation ("1.161e+04"). Trailing zeros
 * and a bare point are dropped, as %g would. */
static int plain_number(struct cg_buf *out, double v)
{
    if (!isfinite(v))
        v = 0.0;
    int decimals = v == 0.0 ? 0 : 3 - (int)floor(log10(fabs(v)));
    decimals = decimals < 0 ? 0 : decimals > 9 ? 9 : decimals;
    char num[64];
    int n = snprintf(num, sizeof(num), "%.*f", decimals, v);
    if (n < 0 || (size_t)n >= sizeof(num))
        return CG_ENOMEM;
    if (strchr(num, '.') != NULL) {
        while (n > 0 && num[n - 1] == '0')
            num[--n] = '\0';
        if (n > 0 && num[n - 1] == '.')
            num[--n] = '\0';
    }
    if (strcmp(num, "-0") == 0)
        return cg_buf_adds(out, "0");
    return cg_buf_adds(out, num);
}

static int mermaid_line(struct cg_buf *out, const double *v, size_t k)
{
    int rc = cg_buf_adds(out, "    line [");
    for (size_t i = 0; i < k && rc == 0; i++) {
        rc = cg_buf_adds(out, i ? ", " : "");
        rc |= plain_number(out, v[i] / 1e6);
    }
    return rc | cg_buf_adds(out, "]\n");
}

int cg_chart_mermaid(struct cg_buf *out, const double *base, const double *cur, size_t n,
                     size_t max_points)
{
    if (n < 2 || max_points < 2)
        return 0;
    double *pts = malloc(2 * n * sizeof(*pts));
    if (pts == NULL)
        return CG_ENOMEM;
    size_t k = cg_chart_downsample(base, n, max_points, pts);
    cg_chart_downsample(cur, n, max_points, pts + k);
    double lo = INFINITY, hi = -INFINITY;
    range_of(pts, 2 * k, &lo, &hi);
    lo /= 1e6;
    hi /= 1e6;
    double pad = hi > lo ? (hi - lo) * 0.1 : fmax(hi * 0.05, 0.001);
    lo = fmax(0.0, lo - pad);
    hi += pad;
    int rc = cg_buf_printf(out,
                           "```mermaid\n"
                           "---\n"
                           "config:\n"
                           "  themeVariables:\n"
                           "    xyChart:\n"
                           "      plotColorPalette: \"#8c8c8c, #d62728\"\n"
                           "---\n"
                           "xychart-beta\n"
                           "    title \"Step time per measured step (ms)\"\n"
                           "    x-axis \"step\" 1 --> %zu\n"
                           "    y-axis \"ms\" ",
                           n);
    rc |= plain_number(out, lo);
    rc |= cg_buf_adds(out, " --> ");
    rc |= plain_number(out, hi);
    rc |= cg_buf_adds(out, "\n");
    rc |= mermaid_line(out, pts, k);
    rc |= mermaid_line(out, pts + k, k);
    rc |= cg_buf_adds(out, "```\n");
    free(pts);
    return rc;
}

int cg_chart_anatomy(struct cg_buf *out, const double base[CG_CHART_ANATOMY_PARTS],
                     const double cur[CG_CHART_ANATOMY_PARTS])
{
    /* running totals per side, in percent: compute, + communication, + copies, + idle (100) */
    enum { N = CG_CHART_ANATOMY_PARTS };
    double tot[2][N];
    const double *sides[2] = {base, cur};
    for (int s = 0; s < 2; s++) {
        double sum = 0.0;
        for (int i = 0; i < N; i++)
            sum += isfinite(sides[s][i]) && sides[s][i] > 0.0 ? sides[s][i] : 0.0;
        double run = 0.0;
        for (int i = 0; i < N; i++) {
            double v = isfinite(sides[s][i]) && sides[s][i] > 0.0 ? sides[s][i] : 0.0;
            run += sum > 0.0 ? 100.0 * v / sum : 0.0;
            tot[s][i] = run;
        }
    }
    int rc = cg_buf_adds(out, "```mermaid\n"
                              "---\n"
                              "config:\n"
                              "  themeVariables:\n"
                              "    xyChart:\n"
                              "      plotColorPalette: \"#c7c7c7, #2ca02c, #ff7f0e, #1f77b4\"\n"
                              "---\n"
                              "xychart-beta\n"
                              "    title \"Step anatomy (% of the step)\"\n"
                              "    x-axis [baseline, current]\n"
                              "    y-axis \"% of step\" 0 --> 100\n");
    for (int i = N - 1; i >= 0 && rc == 0; i--) { /* tallest first: later bars drawn over it */
        rc |= cg_buf_adds(out, "    bar [");
        rc |= plain_number(out, tot[0][i]);
        rc |= cg_buf_adds(out, ", ");
        rc |= plain_number(out, tot[1][i]);
        rc |= cg_buf_adds(out, "]\n");
    }
    return rc | cg_buf_adds(out, "```\n");
}

/* ---- terminal ---------------------------------------------------------------------------- */

struct scale {
    double lo, hi;
};

/* Units (0..max) that value v takes on the scale: 1 at lo, max at hi, max/2 when flat. */
static int units_of(const struct scale *s, double v, int max)
{
    if (!(s->hi > s->lo))
        return (max + 1) / 2;
    int u = 1 + (int)lround((v - s->lo) / (s->hi - s->lo) * (double)(max - 1));
    return u < 1 ? 1 : u > max ? max : u;
}

static int add_glyph(struct cg_buf *out, int eighths, bool ascii, const char *ascii_set)
{
    if (ascii)
        return cg_buf_add(out, &ascii_set[eighths], 1);
    return cg_buf_adds(out, blocks[eighths]);
}

static int add_repeat(struct cg_buf *out, const char *s, size_t n)
{
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = cg_buf_adds(out, s);
    return rc;
}

static int bar_rows(struct cg_buf *out, const double *cols, size_t k, const struct scale *s,
                    bool ascii, const char *top, const char *bottom, int label_w)
{
    const char *tick = ascii ? "|" : "\xe2\x94\xa4", *bar = ascii ? "|" : "\xe2\x94\x82";
    int rc = 0;
    for (int row = CG_CHART_TERM_ROWS - 1; row >= 0 && rc == 0; row--) {
        const char *label = row == CG_CHART_TERM_ROWS - 1 ? top : row == 0 ? bottom : "";
        rc = cg_buf_printf(out, "  %*s %s", label_w, label, label[0] ? tick : bar);
        size_t end = k; /* no trailing blanks */
        while (end > 0 && units_of(s, cols[end - 1], CG_CHART_TERM_ROWS * 8) <= row * 8)
            end--;
        for (size_t i = 0; i < end && rc == 0; i++) {
            int u = units_of(s, cols[i], CG_CHART_TERM_ROWS * 8) - row * 8;
            rc = add_glyph(out, u < 0 ? 0 : u > 8 ? 8 : u, ascii, ascii_bar);
        }
        rc |= cg_buf_adds(out, "\n");
    }
    rc |= cg_buf_printf(out, "  %*s %s", label_w, "", ascii ? "+" : "\xe2\x94\x94");
    rc |= add_repeat(out, ascii ? "-" : "\xe2\x94\x80", k);
    return rc;
}

static int x_labels(struct cg_buf *out, size_t k, size_t n, int label_w)
{
    char last[32];
    int len = snprintf(last, sizeof(last), "%zu", n);
    /* "1" under the first column, the last step number ending under the last column. */
    int gap = (int)k - 1 - len;
    if (gap < 1)
        return cg_buf_printf(out, "\n  %*s  1..%s\n", label_w, "", last);
    return cg_buf_printf(out, "\n  %*s  1%*s%s\n", label_w, "", gap, "", last);
}

/* Copies a run's step times into v (room for its steps) and downsamples them in place to at
 * most width points; returns the count. */
static size_t run_points(const struct cg_run *run, size_t width, double *v)
{
    for (size_t i = 0; i < run->n_steps; i++)
        v[i] = (double)run->steps[i].wall_ns;
    return cg_chart_downsample(v, run->n_steps, width, v);
}

/* One run on the scale s, padded to cols columns, then its own minimum and maximum step. */
static int run_line(struct cg_buf *out, const struct cg_run *run, size_t idx, size_t width,
                    size_t cols, const struct scale *s, bool ascii, double *v, int label_w)
{
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < run->n_steps; i++) {
        lo = fmin(lo, (double)run->steps[i].wall_ns);
        hi = fmax(hi, (double)run->steps[i].wall_ns);
    }
    size_t k = run_points(run, width, v);
    char name[32], a[32], b[32];
    snprintf(name, sizeof(name), "run %zu", idx);
    cg_fmt_ns(lo, a, sizeof(a));
    cg_fmt_ns(hi, b, sizeof(b));
    int rc = cg_buf_printf(out, "  %*s  ", label_w, name);
    for (size_t i = 0; i < k && rc == 0; i++)
        rc = add_glyph(out, units_of(s, v[i], 8), ascii, ascii_levels);
    return rc | cg_buf_printf(out, "%*s  %s .. %s\n", (int)(cols - k), "", a, b);
}

int cg_chart_terminal(struct cg_buf *out, const struct cg_artifact *a, size_t width, bool ascii)
{
    double *med = NULL, *cols = NULL;
    size_t n = 0;
    int rc = cg_chart_step_medians(a, &med, &n);
    if (rc != 0 || n == 0)
        return rc;
    width = width == 0 ? CG_CHART_TERM_WIDTH : width;
    cols = malloc(n * sizeof(*cols));
    if (cols == NULL) {
        free(med);
        return CG_ENOMEM;
    }
    size_t k = cg_chart_downsample(med, n, width, cols);
    size_t runs = a->n_runs > 1 ? a->n_runs : 0; /* one run is the median chart itself */
    if (runs > CG_CHART_TERM_RUNS)
        runs = CG_CHART_TERM_RUNS;
    /* One scale for the median chart and every run line: the range of all drawn values. med
     * is scratch from here on. */
    struct scale s = {INFINITY, -INFINITY};
    range_of(cols, k, &s.lo, &s.hi);
    for (size_t r = 0; r < runs; r++)
        range_of(med, run_points(&a->runs[r], width, med), &s.lo, &s.hi);
    char top[32], bottom[32];
    cg_fmt_ns(s.hi, top, sizeof(top));
    cg_fmt_ns(s.lo, bottom, sizeof(bottom));
    int label_w = (int)(strlen(top) > strlen(bottom) ? strlen(top) : strlen(bottom));
    label_w = label_w < 6 ? 6 : label_w;
    if (a->n_runs > 1)
        rc = cg_buf_printf(out, "step times: median of %zu runs per step, %zu steps", a->n_runs, n);
    else
        rc = cg_buf_printf(out, "step times: %zu steps", n);
    if (k > 0 && k < n && n % k == 0)
        rc |= cg_buf_printf(out, ", each column the mean of %zu steps", n / k);
    else if (k > 0 && k < n)
        rc |= cg_buf_printf(out, ", each column the mean of %zu or %zu steps", n / k, n / k + 1);
    rc |= cg_buf_adds(out, "\n");
    rc |= bar_rows(out, cols, k, &s, ascii, top, bottom, label_w);
    rc |= x_labels(out, k, n, label_w);
    for (size_t r = 0; r < runs && rc == 0; r++)
        rc = run_line(out, &a->runs[r], r, width, k, &s, ascii, med, label_w);
    if (rc == 0 && a->n_runs > runs && runs > 0)
        rc = cg_buf_printf(out, "  %*s  (%zu more runs)\n", label_w, "", a->n_runs - runs);
    free(med);
    free(cols);
    return rc;
}

/* Appends a category label for mermaid: its hex digits, letters and digits only (a label holds
 * no artifact text: a commit's short hash), quoted. */
static int category(struct cg_buf *out, const char *label)
{
    int rc = cg_buf_adds(out, "\"");
    for (size_t i = 0; i < 16 && label[i] != '\0' && rc == 0; i++) {
        char c = label[i];
        bool plain = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        rc = cg_buf_add(out, plain ? &c : "_", 1);
    }
    return rc | cg_buf_adds(out, "\"");
}

int cg_chart_mermaid_series(struct cg_buf *out, const char *title, const char *unit,
                            const char *const *labels, const double *v, size_t n)
{
    if (n < 2)
        return 0;
    double lo = INFINITY, hi = -INFINITY;
    range_of(v, n, &lo, &hi);
    double pad = hi > lo ? (hi - lo) * 0.1 : fmax(fabs(hi) * 0.05, 0.001);
    lo -= pad;
    hi += pad;
    int rc = cg_buf_printf(out,
                           "```mermaid\n"
                           "xychart-beta\n"
                           "    title \"%s\"\n"
                           "    x-axis [",
                           title);
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = cg_buf_adds(out, i ? ", " : "") | category(out, labels[i]);
    rc |= cg_buf_printf(out, "]\n    y-axis \"%s\" ", unit);
    rc |= plain_number(out, lo);
    rc |= cg_buf_adds(out, " --> ");
    rc |= plain_number(out, hi);
    rc |= cg_buf_adds(out, "\n    line [");
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = cg_buf_adds(out, i ? ", " : "") | plain_number(out, v[i]);
    return rc | cg_buf_adds(out, "]\n```\n");
}

int cg_chart_terminal_series(struct cg_buf *out, const char *const *labels, const char *const *values,
                             const double *v, size_t n, bool ascii)
{
    /* bars from zero (from the smallest value when one is below it): equal values draw equal
     * bars, and a bar's length is its value's, so noise of 0.01% does not look like 30x */
    struct scale s = {0.0, 0.0};
    range_of(v, n, &s.lo, &s.hi);
    const int width = CG_CHART_TERM_WIDTH / 2;
    int w = 0, vw = 0;
    for (size_t i = 0; i < n; i++) {
        w = (int)strlen(labels[i]) > w ? (int)strlen(labels[i]) : w;
        vw = (int)strlen(values[i]) > vw ? (int)strlen(values[i]) : vw;
    }
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        long cells = 0;
        if (s.hi > s.lo && v[i] > s.lo) { /* a value above the origin shows one cell at least */
            cells = lround((v[i] - s.lo) / (s.hi - s.lo) * (double)width);
            cells = cells < 1 ? 1 : cells > width ? width : cells;
        }
        rc = cg_buf_printf(out, "  %-*s %*s%s", w, labels[i], vw, values[i], cells > 0 ? " " : "");
        rc |= add_repeat(out, ascii ? "#" : blocks[8], (size_t)cells);
        rc |= cg_buf_adds(out, "\n");
    }
    return rc;
}
