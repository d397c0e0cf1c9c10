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
        *r = (struct cg_count_result){row, name, NAN, NAN,   NAN,   NAN,
                                      NAN, NAN,  NAN, false, false, CG_OUT_UNAVAILABLE};
        bool in_b = side_values(baseline, ib, row, name, vb, &r->varies);
        bool in_c = side_values(current, ic, row, name, vc, &r->varies);
        if (!in_b && !in_c)
            continue; /* measured on neither side: not listed */
        c->n++;
        if (!in_b || !in_c)
            continue;
        const struct cg_count_limit *lim =
            row >= 0 ? &t->counts[row] : cg_counts_range_limit(t, name);
        decide(r, vb, nb, vc, nc, lim, &t->varying);
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
    free(c->rows);
    memset(c, 0, sizeof(*c));
}
