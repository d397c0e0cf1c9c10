/* pattern: a slowdown locked to the step phase, tested over splits of the runs (see pattern.h). */
#include "pattern.h"

#include "stats.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Median of v[0..n) (n > 0); v is reordered. */
static double median_of(double *v, size_t n)
{
    qsort(v, n, sizeof(*v), cg_stats_cmp_double);
    return cg_stats_sorted_median(v, n);
}

/* Number of (period, phase) cells for periods 2..max_p. */
static size_t cell_count(int max_p)
{
    return max_p < 2 ? 0 : (size_t)((max_p + 1) * max_p / 2 - 1);
}

/* The cell of (p, f): periods in increasing order, phases within. */
static void cell_at(size_t c, int *p, int *f)
{
    int q = 2;
    while (c >= (size_t)q) {
        c -= (size_t)q;
        q++;
    }
    *p = q;
    *f = (int)c;
}

/* The cell of period p and phase f (the inverse of cell_at). */
static size_t cell_index(int p, int f)
{
    return cell_count(p - 1) + (size_t)f;
}

/* The Hodges-Lehmann shift of cell c's ratios, current against baseline (log units), with the
 * cell's ratios left in col (baseline first). */
static int cell_excess(const double *ratio, size_t cells, size_t c, size_t nb, size_t nc,
                       double *col, double *out)
{
    for (size_t i = 0; i < nb + nc; i++)
        col[i] = ratio[i * cells + c];
    struct cg_shift sh;
    if (cg_stats_hl_shift(col, nb, col + nb, nc, 0.05, &sh) != 0)
        return -1;
    *out = sh.estimate;
    return 0;
}

struct item {
    double v;
    size_t i;
};

static int cmp_item(const void *a, const void *b)
{
    double x = ((const struct item *)a)->v, y = ((const struct item *)b)->v;
    return (x > y) - (x < y);
}

/* Values i and j (i <= j) of the steps of one class, in increasing order, from the run's steps
 * sorted by time (by_time, s of them, with their phases at the period in phase): the class is
 * the steps at phase f (at) or the others (!at). */
static void class_pair(const struct item *by_time, const unsigned char *phase, size_t s, int f,
                       bool at, size_t i, size_t j, double *vi, double *vj)
{
    size_t k = 0;
    for (size_t t = 0; t < s; t++) {
        if ((phase[t] == f) != at)
            continue;
        if (k == i)
            *vi = by_time[t].v;
        if (k++ == j) {
            *vj = by_time[t].v;
            return;
        }
    }
}

/* Median of the n steps of one class (as cg_stats_sorted_median over them, sorted). */
static double class_median(const struct item *by_time, const unsigned char *phase, size_t s, int f,
                           bool at, size_t n)
{
    double lo = NAN, hi = NAN;
    class_pair(by_time, phase, s, f, at, (n - 1) / 2, n / 2, &lo, &hi);
    return n % 2 ? hi : (lo + hi) / 2.0;
}

/* One run's ratios, log(median at phase f / median of the other steps), for every cell, into
 * out. The run's first s steps are sorted by time once (into by_time, s entries); each cell's
 * two medians are read off that order (phase: s entries of scratch). */
static void run_ratios(const struct cg_run *r, size_t s, int max_p, struct item *by_time,
                       unsigned char *phase, double *out)
{
    for (size_t k = 0; k < s; k++)
        by_time[k] = (struct item){(double)r->steps[k].wall_ns, k};
    qsort(by_time, s, sizeof(*by_time), cmp_item);
    size_t c = 0;
    for (int p = 2; p <= max_p; p++) {
        for (size_t t = 0; t < s; t++)
            phase[t] = (unsigned char)(by_time[t].i % (size_t)p);
        for (int f = 0; f < p; f++) {
            size_t na = (s - (size_t)f + (size_t)p - 1) / (size_t)p; /* steps k = f, f + p, ... */
            out[c++] = log(class_median(by_time, phase, s, f, true, na)) -
                       log(class_median(by_time, phase, s, f, false, s - na));
        }
    }
}

/* Midranks (1-based) of v[0..n) into rank; items is scratch for n entries. */
static void midranks(const double *v, size_t n, struct item *items, double *rank)
{
    for (size_t i = 0; i < n; i++)
        items[i] = (struct item){v[i], i};
    qsort(items, n, sizeof(*items), cmp_item);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && items[j].v == items[i].v)
            j++;
        double mid = 0.5 * (double)(i + 1 + j); /* ranks i+1 .. j */
        for (size_t k = i; k < j; k++)
            rank[items[k].i] = mid;
        i = j;
    }
}

/* The largest z over the cells for the labels in cur (1: current): Mann-Whitney's rank sum of
 * the current runs, standardised. ranks: n per cell, cell-major. */
static double max_z(const double *ranks, size_t cells, size_t n, const unsigned char *cur,
                    size_t nc, size_t *best)
{
    double nb = (double)(n - nc), ncd = (double)nc;
    double mean = ncd * ((double)n + 1.0) / 2.0;
    double sd = sqrt(nb * ncd * ((double)n + 1.0) / 12.0);
    double top = -INFINITY;
    for (size_t c = 0; c < cells; c++) {
        const double *rk = ranks + c * n;
        double sum = 0.0;
        for (size_t i = 0; i < n; i++) {
            if (cur[i])
                sum += rk[i];
        }
        double z = (sum - mean) / sd;
        if (z > top) {
            top = z;
            if (best != NULL)
                *best = c;
        }
    }
    return top;
}

double cg_pattern_mean_pct(const struct cg_pattern *p)
{
    return p->tested && p->period > 0 ? p->excess_pct / (double)p->period : NAN;
}

/* The fewest steps of any run of a. */
static size_t fewest_steps(const struct cg_artifact *a)
{
    size_t s = SIZE_MAX;
    for (size_t r = 0; r < a->n_runs; r++)
        s = a->runs[r].n_steps < s ? a->runs[r].n_steps : s;
    return s;
}

int cg_pattern_test(const struct cg_artifact *base, const struct cg_artifact *cur,
                    struct cg_pattern *out)
{
    memset(out, 0, sizeof(*out));
    out->p_value = NAN;
    out->excess_pct = NAN;
    out->runs = cur->n_runs;
    size_t nb = base->n_runs, nc = cur->n_runs, n = nb + nc;
    if (nb < CG_PATTERN_MIN_RUNS || nc < CG_PATTERN_MIN_RUNS)
        return 0;
    size_t s = fewest_steps(base), sc = fewest_steps(cur);
    s = sc < s ? sc : s;
    s = s > CG_PATTERN_MAX_STEPS ? CG_PATTERN_MAX_STEPS : s;
    int max_p = (int)(s / 3) < CG_PATTERN_MAX_PERIOD ? (int)(s / 3) : CG_PATTERN_MAX_PERIOD;
    size_t cells = cell_count(max_p);
    if (cells == 0)
        return 0;
    int rc = -1;
    double *ratio = malloc(n * cells * sizeof(*ratio)); /* run-major */
    double *ranks = malloc(n * cells * sizeof(*ranks)); /* cell-major */
    double *scratch = malloc((2 * s > n ? 2 * s : n) * sizeof(*scratch));
    double *col = malloc(n * sizeof(*col));
    size_t *order = malloc(n * sizeof(*order));
    struct item *items = malloc((s > n ? s : n) * sizeof(*items));
    unsigned char *lab = malloc(n), *phase = malloc(s);
    if (ratio == NULL || ranks == NULL || scratch == NULL || col == NULL || order == NULL ||
        items == NULL || lab == NULL || phase == NULL)
        goto done;
    for (size_t i = 0; i < n; i++) {
        const struct cg_run *r = i < nb ? &base->runs[i] : &cur->runs[i - nb];
        run_ratios(r, s, max_p, items, phase, ratio + i * cells);
        lab[i] = i >= nb;
    }
    /* Seeded from the pooled ratios in increasing order: independent of the sides. */
    uint64_t seed = 0x7061747465726eULL;
    for (size_t c = 0; c < cells; c++) {
        for (size_t i = 0; i < n; i++)
            col[i] = ratio[i * cells + c];
        midranks(col, n, items, ranks + c * n);
        if (c == 0) {
            memcpy(scratch, col, n * sizeof(*col));
            qsort(scratch, n, sizeof(*scratch), cg_stats_cmp_double);
            for (size_t i = 0; i < n; i++) {
                uint64_t bits;
                memcpy(&bits, &scratch[i], sizeof(bits));
                seed = (seed ^ bits) * 0x100000001b3ULL;
            }
        }
    }
    size_t best = 0;
    double z0 = max_z(ranks, cells, n, lab, nc, &best);
    struct cg_splits sp;
    if (cg_stats_splits_init(&sp, order, n, nb, CG_STATS_SPLITS, seed) != 0)
        goto done;
    size_t k = 0;
    while (cg_stats_splits_next(&sp, lab))
        k += max_z(ranks, cells, n, lab, nc, NULL) >= z0 - 1e-12;
    out->p_value = sp.all ? (double)k / (double)sp.count
                          : ((double)k + 1.0) / ((double)sp.count + 1.0);
    cell_at(best, &out->period, &out->phase);
    double excess;
    if (cell_excess(ratio, cells, best, nb, nc, col, &excess) != 0)
        goto done;
    /* Every multiple of the period repeats the pattern (every 4th step slower is every 8th
     * slower at two phases): report the shortest period q dividing it whose every alias at the
     * found period is about as slow (at least 3/4 of the excess found). */
    int found = out->period;
    for (int q = 2; q < found; q++) {
        bool alike = found % q == 0;
        for (int f = out->phase % q; alike && f < found; f += q) {
            double e;
            alike = cell_excess(ratio, cells, cell_index(found, f), nb, nc, col, &e) == 0 &&
                    e >= 0.75 * excess;
        }
        if (alike) {
            out->phase %= q;
            out->period = q;
            best = cell_index(q, out->phase);
            break;
        }
    }
    if (cell_excess(ratio, cells, best, nb, nc, col, &excess) != 0) /* col: best's ratios */
        goto done;
    out->excess_pct = (exp(excess) - 1.0) * 100.0;
    memcpy(scratch, col, nb * sizeof(*col));
    double base_median = median_of(scratch, nb);
    for (size_t i = nb; i < n; i++)
        out->runs_slower += col[i] > base_median;
    out->tested = true;
    rc = 0;
done:
    free(ratio);
    free(ranks);
    free(scratch);
    free(col);
    free(order);
    free(items);
    free(lab);
    free(phase);
    return rc;
}
