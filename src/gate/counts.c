/*
 * counts: the exact per-step counts of two sides compared (see counts.h, docs/counts.md).
 */
#include "counts.h"

#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double cg_counts_run_value(const struct cg_run *r, int row, bool *varies)
{
    *varies = false;
    if (r->n_steps == 0)
        return NAN;
    double *v = malloc(r->n_steps * sizeof(*v));
    if (v == NULL)
        return NAN;
    for (size_t i = 0; i < r->n_steps; i++) {
        int64_t x = cg_count_value(r->steps[i].counts, row);
        if (x < 0) {
            free(v);
            return NAN;
        }
        v[i] = (double)x;
    }
    qsort(v, r->n_steps, sizeof(*v), cmp_double);
    *varies = v[0] != v[r->n_steps - 1];
    double m = cg_stats_sorted_median(v, r->n_steps);
    free(v);
    return m;
}

const struct cg_count_limit *cg_counts_range_limit(const struct cg_thresholds *t, const char *name)
{
    for (size_t i = 0; i < t->n_range_names; i++)
        if (strcmp(t->range_names[i].name, name) == 0)
            return &t->range_names[i].limit;
    return &t->range_calls;
}

/* The growth per step a limit allows from base; NAN when it does not gate. */
static double allowed(const struct cg_count_limit *lim, double base)
{
    if (!lim->set || !lim->gated)
        return NAN;
    double pct = base * lim->max_increase_pct / 100.0;
    return pct > lim->max_increase ? pct : lim->max_increase;
}

/* A run's NVTX range ops sorted by name (names point into the run), for lookups by name. */
struct range_index {
    const struct cg_op **ops;
    size_t n;
};

static int cmp_op_name(const void *a, const void *b)
{
    return strcmp((*(const struct cg_op *const *)a)->name, (*(const struct cg_op *const *)b)->name);
}

static int index_ranges(const struct cg_run *r, struct range_index *ix)
{
    ix->n = 0;
    ix->ops = malloc((r->n_ops + 1) * sizeof(const struct cg_op *));
    if (ix->ops == NULL)
        return -1;
    for (size_t i = 0; i < r->n_ops; i++)
        if (r->ops[i].kind == CG_OP_RANGE)
            ix->ops[ix->n++] = &r->ops[i];
    qsort(ix->ops, ix->n, sizeof(const struct cg_op *), cmp_op_name);
    return 0;
}

/* Calls per step of name in an indexed run (ops of one name may repeat: summed). */
static double indexed_range_value(const struct cg_run *r, const struct range_index *ix,
                                  const char *name)
{
    size_t lo = 0, hi = ix->n;
    while (lo < hi) { /* the first op whose name is not below name */
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(ix->ops[mid]->name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    int64_t calls = 0;
    for (; lo < ix->n && strcmp(ix->ops[lo]->name, name) == 0; lo++)
        calls += ix->ops[lo]->calls;
    return r->n_steps > 0 ? (double)calls / (double)r->n_steps : NAN;
}

/* Per-run values of one side into v (n_runs of them): false when some run lacks the row. ix
 * indexes the side's runs' ranges (for a range name). */
static bool side_values(const struct cg_artifact *a, const struct range_index *ix, int row,
                        const char *name, double *v, bool *varies)
{
    for (size_t i = 0; i < a->n_runs; i++) {
        bool var = false;
        v[i] = name != NULL ? indexed_range_value(&a->runs[i], &ix[i], name)
                            : cg_counts_run_value(&a->runs[i], row, &var);
        if (isnan(v[i]))
            return false;
        *varies |= var || v[i] != v[0];
    }
    return a->n_runs > 0;
}

double cg_counts_run_value_against(const struct cg_run *r, int row, double exact)
{
    bool varies = false;
    double median = cg_counts_run_value(r, row, &varies);
    if (isnan(median) || !varies)
        return median;
    double sum = 0.0;
    size_t differ = 0;
    for (size_t i = 0; i < r->n_steps; i++) {
        double x = (double)cg_count_value(r->steps[i].counts, row);
        sum += x;
        differ += x != exact;
    }
    return differ >= CG_COUNTS_PERIODIC_STEPS ? sum / (double)r->n_steps : median;
}

/* Against a side whose every step of every run has the value exact, the runs of the other side
 * a valued by cg_counts_run_value_against into v (its medians); with up_only (a a baseline that
 * varies, against an exact current side) only where that is above the median: the baseline's
 * dips would read as the current side's growth, its periodic extra work is an improvement. */
static void periodic_values(const struct cg_artifact *a, int row, double exact, bool up_only,
                            double *v)
{
    for (size_t i = 0; i < a->n_runs; i++) {
        double x = cg_counts_run_value_against(&a->runs[i], row, exact);
        v[i] = up_only ? fmax(v[i], x) : x;
    }
}

/* Indexes every run of a (ix has a->n_runs entries, zeroed); 0 or -1. */
static int index_side(const struct cg_artifact *a, struct range_index *ix)
{
    for (size_t i = 0; i < a->n_runs; i++)
        if (index_ranges(&a->runs[i], &ix[i]) != 0)
            return -1;
    return 0;
}

static void free_index(struct range_index *ix, size_t n)
{
    for (size_t i = 0; ix != NULL && i < n; i++)
        free(ix[i].ops);
    free(ix);
}

/* Fills r from both sides' per-run values (each side sorted in place). */
static void decide(struct cg_count_result *r, double *vb, size_t nb, double *vc, size_t nc,
                   const struct cg_count_limit *lim, const struct cg_count_limit *varying)
{
    qsort(vb, nb, sizeof(*vb), cmp_double);
    qsort(vc, nc, sizeof(*vc), cmp_double);
    r->baseline = cg_stats_sorted_median(vb, nb);
    r->current = cg_stats_sorted_median(vc, nc);
    r->base_lo = vb[0];
    r->base_hi = vb[nb - 1];
    r->cur_lo = vc[0];
    r->cur_hi = vc[nc - 1];
    r->allowed = allowed(lim, r->base_hi);
    if (r->varies && !isnan(r->allowed)) {
        double v = allowed(varying, r->base_hi);
        if (v > r->allowed)
            r->allowed = v;
    }
    if (isnan(r->allowed))
        r->outcome = CG_OUT_NOT_GATED;
    else if (r->cur_lo - r->base_hi > r->allowed + 1e-9)
        r->outcome = CG_OUT_FAIL; /* every current run above every baseline run, beyond */
    else if (r->cur_hi < r->base_lo)
        r->outcome = CG_OUT_IMPROVED;
    else
        r->outcome = CG_OUT_PASS;
}

/* --- where placed calls changed ----------------------------------------------------------- */

static bool side_placed(const struct cg_artifact *a)
{
    for (size_t i = 0; i < a->n_runs; i++)
        if (!a->runs[i].places_measured)
            return false;
    return a->n_runs > 0;
}

/* Calls per step of row in run r at place w (range NULL: at no place, the row's calls less all
 * its placed ones); NAN when a step lacks the row. */
static double place_value(const struct cg_run *r, int row, const struct cg_count_where *w)
{
    if (r->n_steps == 0)
        return NAN;
    int64_t placed = 0, total = 0;
    for (size_t i = 0; i < r->n_places; i++) {
        const struct cg_count_place *p = &r->places[i];
        if (cg_count_in_row(row, p->count) &&
            (w->range == NULL || (p->after == w->after && strcmp(p->range, w->range) == 0)))
            placed += p->calls;
    }
    if (w->range != NULL)
        return (double)placed / (double)r->n_steps;
    for (size_t i = 0; i < r->n_steps; i++) {
        int64_t x = cg_count_value(r->steps[i].counts, row);
        if (x < 0)
            return NAN;
        total += x;
    }
    return (double)(total - placed) / (double)r->n_steps;
}

/* The median over a's runs of place_value (v: room for a's runs). */
static double side_place(const struct cg_artifact *a, int row, const struct cg_count_where *w,
                         double *v)
{
    for (size_t i = 0; i < a->n_runs; i++)
        if (isnan(v[i] = place_value(&a->runs[i], row, w)))
            return NAN;
    qsort(v, a->n_runs, sizeof(*v), cmp_double);
    return cg_stats_sorted_median(v, a->n_runs);
}

static int cmp_where(const void *a, const void *b)
{
    const struct cg_count_where *x = a, *y = b;
    double gx = x->current - x->baseline, gy = y->current - y->baseline;
    if (gx != gy)
        return gx > gy ? -1 : 1;
    if ((x->range == NULL) != (y->range == NULL))
        return x->range == NULL ? 1 : -1;
    if (x->range != NULL && strcmp(x->range, y->range) != 0)
        return strcmp(x->range, y->range);
    return (int)x->after - (int)y->after;
}

/* Every place of r's row on either side, with its per-step values, the unchanged ones dropped.
 * 0 or -1 (no memory). */
static int places_changed(const struct cg_artifact *b, const struct cg_artifact *c,
                          struct cg_count_result *r, double *vb, double *vc)
{
    size_t cap = 1;
    for (size_t s = 0; s < 2; s++) {
        const struct cg_artifact *a = s == 0 ? b : c;
        for (size_t i = 0; i < a->n_runs; i++)
            cap += a->runs[i].n_places;
    }
    struct cg_count_where *w = malloc(cap * sizeof(*w));
    if (w == NULL)
        return -1;
    size_t n = 0;
    w[n++] = (struct cg_count_where){NULL, false, NAN, NAN};
    for (size_t s = 0; s < 2; s++) {
        const struct cg_artifact *a = s == 0 ? b : c;
        for (size_t i = 0; i < a->n_runs; i++)
            for (size_t k = 0; k < a->runs[i].n_places; k++) {
                const struct cg_count_place *p = &a->runs[i].places[k];
                if (!cg_count_in_row(r->row, p->count))
                    continue;
                size_t j = 1;
                while (j < n && !(w[j].after == p->after && strcmp(w[j].range, p->range) == 0))
                    j++;
                if (j == n)
                    w[n++] = (struct cg_count_where){p->range, p->after, NAN, NAN};
            }
    }
    size_t kept = 0;
    for (size_t j = 0; j < n; j++) {
        w[j].baseline = side_place(b, r->row, &w[j], vb);
        w[j].current = side_place(c, r->row, &w[j], vc);
        if (!isnan(w[j].baseline) && !isnan(w[j].current) &&
            fabs(w[j].current - w[j].baseline) > 1e-9)
            w[kept++] = w[j];
    }
    if (kept > 1)
        qsort(w, kept, sizeof(*w), cmp_where);
    r->where = w;
    r->n_where = kept;
    return 0;
}

struct names {
    const char **v;
    size_t n;
};

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Every range name of both sides' indexed runs, each once, sorted. 0 or -1 (no memory). */
static int range_names(const struct range_index *ib, size_t nb, const struct range_index *ic,
                       size_t nc, struct names *ns)
{
    size_t total = 0;
    for (size_t i = 0; i < nb; i++)
        total += ib[i].n;
    for (size_t i = 0; i < nc; i++)
        total += ic[i].n;
    ns->n = 0;
    if ((ns->v = malloc((total + 1) * sizeof(*ns->v))) == NULL)
        return -1;
    for (size_t i = 0; i < nb + nc; i++) {
        const struct range_index *x = i < nb ? &ib[i] : &ic[i - nb];
        for (size_t k = 0; k < x->n; k++)
            ns->v[ns->n++] = x->ops[k]->name;
    }
    qsort(ns->v, ns->n, sizeof(*ns->v), cmp_str);
    size_t w = 0;
    for (size_t i = 0; i < ns->n; i++)
        if (w == 0 || strcmp(ns->v[w - 1], ns->v[i]) != 0)
            ns->v[w++] = ns->v[i];
    ns->n = w;
    return 0;
}

/* True when a measured the NVTX ranges (so a range name it lacks ran 0 times). */
static bool has_ranges(const struct cg_artifact *a)
{
    bool varies = false;
    return a->n_runs > 0 && !isnan(cg_counts_run_value(&a->runs[0], CG_COUNT_RANGES, &varies));
}

static int rank(const struct cg_count_result *r)
{
    if (r->outcome == CG_OUT_FAIL) /* what must not happen at all before what grew too much */
        return r->allowed == 0 ? 0 : 1;
    if (r->outcome == CG_OUT_IMPROVED)
        return 2;
    return r->baseline != r->current ? 3 : 4;
}

static int cmp_result(const void *a, const void *b)
{
    const struct cg_count_result *x = a, *y = b;
    int gx = x->row < 0, gy = y->row < 0; /* rows before range names */
    if (gx != gy)
        return gx - gy;
    int rx = rank(x), ry = rank(y);
    if (rx != ry)
        return rx - ry;
    if (x->row >= 0)
        return x->row - y->row;
    return strcmp(x->name, y->name);
}

int cg_counts_compare(const struct cg_artifact *baseline, const struct cg_artifact *current,
                      const struct cg_thresholds *t, struct cg_counts *c, struct cg_err *err)
{
    memset(c, 0, sizeof(*c));
    struct names ns = {0};
    const size_t nb = baseline->n_runs, nc = current->n_runs;
    double *vb = malloc((nb + 1) * sizeof(*vb));
    double *vc = malloc((nc + 1) * sizeof(*vc));
    struct range_index *ib = calloc(nb + 1, sizeof(*ib)), *ic = calloc(nc + 1, sizeof(*ic));
    bool ranges = has_ranges(baseline) && has_ranges(current);
    int rc = vb == NULL || vc == NULL || ib == NULL || ic == NULL ? -1 : 0;
    if (rc == 0 && ranges)
        rc = index_side(baseline, ib) != 0 || index_side(current, ic) != 0 ||
                     range_names(ib, nb, ic, nc, &ns) != 0
                 ? -1
                 : 0;
    size_t cap = CG_COUNT_ROWS + ns.n;
    if (rc == 0 && (c->rows = calloc(cap, sizeof(*c->rows))) == NULL)
        rc = -1;
    for (size_t k = 0; rc == 0 && k < cap; k++) {
        int row = k < CG_COUNT_ROWS ? (int)k : -1;
        const char *name = row < 0 ? ns.v[k - CG_COUNT_ROWS] : NULL;
        struct cg_count_result *r = &c->rows[c->n];
        *r = (struct cg_count_result){row,  name, NAN, NAN,   NAN,   NAN,
                                      NAN,  NAN,  NAN, false, false, CG_OUT_UNAVAILABLE,
                                      NULL, 0};
        bool var_b = false, var_c = false;
        bool in_b = side_values(baseline, ib, row, name, vb, &var_b);
        bool in_c = side_values(current, ic, row, name, vc, &var_c);
        r->varies = var_b || var_c;
        if (!in_b && !in_c)
            continue; /* measured on neither side: not listed */
        c->n++;
        if (!in_b || !in_c)
            continue;
        if (row >= 0 && !var_b)
            periodic_values(current, row, vb[0], false, vc);
        else if (row >= 0 && !var_c)
            periodic_values(baseline, row, vc[0], true, vb);
        const struct cg_count_limit *lim =
            row >= 0 ? &t->counts[row] : cg_counts_range_limit(t, name);
        decide(r, vb, nb, vc, nc, lim, &t->varying);
        if (row >= 0 && (cg_count_placed(row) || row == CG_COUNT_SYNCS) &&
            r->baseline != r->current && side_placed(baseline) && side_placed(current) &&
            places_changed(baseline, current, r, vb, vc) != 0)
            rc = -1;
        c->n_compared++;
        c->n_changed += r->baseline != r->current;
        c->n_fail += r->outcome == CG_OUT_FAIL;
        c->n_improved += r->outcome == CG_OUT_IMPROVED;
        c->n_varying += r->varies;
    }
    free(vb);
    free(vc);
    free_index(ib, nb);
    free_index(ic, nc);
    free(ns.v);
    if (rc != 0) {
        cg_counts_release(c);
        return cg_err_set(err, CG_ENOMEM, "out of memory comparing counts");
    }
    qsort(c->rows, c->n, sizeof(*c->rows), cmp_result);
    return 0;
}

void cg_counts_release(struct cg_counts *c)
{
    for (size_t i = 0; c->rows != NULL && i < c->n; i++)
        free(c->rows[i].where);
    free(c->rows);
    memset(c, 0, sizeof(*c));
}
