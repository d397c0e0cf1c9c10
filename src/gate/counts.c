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

double cg_counts_range_value(const struct cg_run *r, const char *name)
{
    int64_t calls = 0;
    for (size_t i = 0; i < r->n_ops; i++)
        if (r->ops[i].kind == CG_OP_RANGE && strcmp(r->ops[i].name, name) == 0)
            calls += r->ops[i].calls;
    return r->n_steps > 0 ? (double)calls / (double)r->n_steps : NAN;
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

/* Per-run values of one side into v (n_runs of them): false when some run lacks the row. */
static bool side_values(const struct cg_artifact *a, int row, const char *name, double *v,
                        bool *varies)
{
    for (size_t i = 0; i < a->n_runs; i++) {
        bool var = false;
        v[i] = name != NULL ? cg_counts_range_value(&a->runs[i], name)
                            : cg_counts_run_value(&a->runs[i], row, &var);
        if (isnan(v[i]))
            return false;
        *varies |= var || v[i] != v[0];
    }
    return a->n_runs > 0;
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
    size_t n, cap;
};

/* Adds the range op names of a's runs to ns, each once. 0 or -1 (no memory). */
static int add_range_names(struct names *ns, const struct cg_artifact *a)
{
    for (size_t i = 0; i < a->n_runs; i++)
        for (size_t j = 0; j < a->runs[i].n_ops; j++) {
            const struct cg_op *op = &a->runs[i].ops[j];
            if (op->kind != CG_OP_RANGE)
                continue;
            size_t k = 0;
            while (k < ns->n && strcmp(ns->v[k], op->name) != 0)
                k++;
            if (k < ns->n)
                continue;
            if (ns->n == ns->cap) {
                size_t cap = ns->cap ? ns->cap * 2 : 16;
                const char **p = realloc(ns->v, cap * sizeof(*p));
                if (p == NULL)
                    return -1;
                ns->v = p;
                ns->cap = cap;
            }
            ns->v[ns->n++] = op->name;
        }
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
    if (r->outcome == CG_OUT_FAIL)
        return 0;
    if (r->outcome == CG_OUT_IMPROVED)
        return 1;
    return r->baseline != r->current ? 2 : 3;
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
    double *vb = malloc((baseline->n_runs + 1) * sizeof(*vb));
    double *vc = malloc((current->n_runs + 1) * sizeof(*vc));
    bool ranges = has_ranges(baseline) && has_ranges(current);
    int rc = vb == NULL || vc == NULL ? -1 : 0;
    if (rc == 0 && ranges)
        rc = add_range_names(&ns, baseline) != 0 || add_range_names(&ns, current) != 0 ? -1 : 0;
    size_t cap = CG_COUNT_ROWS + ns.n;
    if (rc == 0 && (c->rows = calloc(cap, sizeof(*c->rows))) == NULL)
        rc = -1;
    for (size_t k = 0; rc == 0 && k < cap; k++) {
        int row = k < CG_COUNT_ROWS ? (int)k : -1;
        const char *name = row < 0 ? ns.v[k - CG_COUNT_ROWS] : NULL;
        struct cg_count_result *r = &c->rows[c->n];
        *r = (struct cg_count_result){row, name, NAN, NAN,   NAN,   NAN,
                                      NAN, NAN,  NAN, false, false, CG_OUT_UNAVAILABLE};
        bool in_b = side_values(baseline, row, name, vb, &r->varies);
        bool in_c = side_values(current, row, name, vc, &r->varies);
        if (!in_b && !in_c)
            continue; /* measured on neither side: not listed */
        c->n++;
        if (!in_b || !in_c)
            continue;
        const struct cg_count_limit *lim =
            row >= 0 ? &t->counts[row] : cg_counts_range_limit(t, name);
        decide(r, vb, baseline->n_runs, vc, current->n_runs, lim, &t->varying);
        c->n_compared++;
        c->n_changed += r->baseline != r->current;
        c->n_fail += r->outcome == CG_OUT_FAIL;
        c->n_improved += r->outcome == CG_OUT_IMPROVED;
        c->n_varying += r->varies;
    }
    free(vb);
    free(vc);
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
