/*
 * verdict_ops: the op deltas of a verdict (see verdict.h): every op of either side, its time and
 * calls per step in each run, the change between the sides with its test, listed largest
 * absolute change first. Part of cg_verdict_compute.
 */
#include "verdict_internal.h"

#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct op_slot {
    const struct cg_op *op; /* first occurrence, for name/family/kind */
    double *per_run;        /* [n_base + n_cur] time per step; 0 when absent from that run */
    double *calls;          /* same layout, calls per step */
    bool in_base, in_cur;
};

struct op_table {
    struct op_slot *slots;
    size_t cap, used;
    size_t nb, nc;
};

static uint64_t op_hash(const struct cg_op *op)
{
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)op->kind;
    for (const unsigned char *p = (const unsigned char *)op->name; *p; p++)
        h = (h ^ *p) * 1099511628211ULL;
    return h;
}

static struct op_slot *op_find(struct op_table *t, const struct cg_op *op)
{
    size_t i = (size_t)(op_hash(op) & (t->cap - 1));
    while (t->slots[i].op != NULL) {
        const struct cg_op *o = t->slots[i].op;
        if (o->kind == op->kind && strcmp(o->name, op->name) == 0)
            return &t->slots[i];
        i = (i + 1) & (t->cap - 1);
    }
    struct op_slot *s = &t->slots[i];
    size_t n = t->nb + t->nc;
    s->per_run = malloc(2 * n * sizeof(double));
    if (s->per_run == NULL)
        return NULL;
    s->calls = s->per_run + n;
    for (size_t k = 0; k < 2 * n; k++)
        s->per_run[k] = 0.0;
    s->op = op;
    t->used++;
    return s;
}

/* Adds a's ops to t (kernels, copies and sets only when gpu: when one side has GPU metrics and
 * the other has none, its GPU ops are missing, not vanished or new). */
static int op_table_fill(struct op_table *t, const struct cg_artifact *a, size_t offset,
                         bool is_base, bool gpu)
{
    for (size_t r = 0; r < a->n_runs; r++) {
        const struct cg_run *run = &a->runs[r];
        double steps = (double)run->n_steps;
        for (size_t k = 0; k < run->n_ops; k++) {
            if (!gpu && run->ops[k].kind != CG_OP_RANGE)
                continue;
            struct op_slot *s = op_find(t, &run->ops[k]);
            if (s == NULL)
                return CG_ENOMEM;
            s->per_run[offset + r] += (double)run->ops[k].total_ns / steps;
            s->calls[offset + r] += (double)run->ops[k].calls / steps;
            if (is_base)
                s->in_base = true;
            else
                s->in_cur = true;
        }
    }
    return 0;
}

static int cmp_delta(const void *a, const void *b)
{
    const struct cg_op_delta *x = a, *y = b;
    double dx = fabs(x->delta_ns), dy = fabs(y->delta_ns);
    if (dx != dy)
        return dx < dy ? 1 : -1;
    return strcmp(x->name, y->name);
}

static void op_delta_from_slot(const struct op_slot *s, size_t nb, size_t nc,
                               struct cg_op_delta *d)
{
    d->name = s->op->name;
    d->family = s->op->family;
    d->kind = s->op->kind;
    d->status = s->in_base && s->in_cur ? CG_OPD_BOTH : s->in_cur ? CG_OPD_NEW : CG_OPD_VANISHED;
    d->base_ns = cg_stats_quantile(s->per_run, nb, 0.5);
    d->cur_ns = cg_stats_quantile(s->per_run + nb, nc, 0.5);
    d->base_calls = cg_stats_quantile(s->calls, nb, 0.5);
    d->cur_calls = cg_stats_quantile(s->calls + nb, nc, 0.5);
    d->delta_ns = d->cur_ns - d->base_ns;
    d->delta_pct = d->base_ns > 0 ? d->delta_ns / d->base_ns * 100.0 : NAN;
    d->p_value = d->q_value = NAN;
    d->significant = false;
    struct cg_mwu u;
    if (nb >= 2 && nc >= 2 && cg_stats_mwu(s->per_run, nb, s->per_run + nb, nc, &u) == 0)
        d->p_value = fmin(1.0, 2.0 * fmin(u.p_greater, u.p_less));
}

int cg_verdict_ops(struct cg_verdict *v, struct cg_err *err)
{
    const struct cg_artifact *b = v->baseline, *c = v->current;
    struct op_table t = {NULL, 0, 0, b->n_runs, c->n_runs};
    struct cg_op_delta *all = NULL;
    double *p = NULL, *q = NULL;
    int rc = 0;
    size_t total = 0;
    for (size_t r = 0; r < b->n_runs; r++)
        total += b->runs[r].n_ops;
    for (size_t r = 0; r < c->n_runs; r++)
        total += c->runs[r].n_ops;
    t.cap = 16;
    while (t.cap < total * 2)
        t.cap *= 2;
    t.slots = calloc(t.cap, sizeof(*t.slots));
    bool gpu = b->gpu_available == c->gpu_available;
    if (t.slots == NULL || op_table_fill(&t, b, 0, true, gpu) != 0 ||
        op_table_fill(&t, c, b->n_runs, false, gpu) != 0) {
        rc = cg_err_set(err, CG_ENOMEM, "out of memory");
        goto done;
    }
    all = calloc(t.used ? t.used : 1, sizeof(*all));
    p = malloc((t.used ? t.used : 1) * sizeof(*p));
    q = malloc((t.used ? t.used : 1) * sizeof(*q));
    if (all == NULL || p == NULL || q == NULL) {
        rc = cg_err_set(err, CG_ENOMEM, "out of memory");
        goto done;
    }
    size_t n = 0;
    for (size_t i = 0; i < t.cap; i++) {
        if (t.slots[i].op == NULL)
            continue;
        op_delta_from_slot(&t.slots[i], b->n_runs, c->n_runs, &all[n]);
        p[n] = all[n].p_value;
        n++;
    }
    if (cg_stats_bh_adjust(p, n, q) != 0) {
        rc = cg_err_set(err, CG_ENOMEM, "out of memory");
        goto done;
    }
    double step_ns = v->metrics[CG_M_STEP_TIME_MEAN].baseline;
    double min_ns = step_ns * v->thresholds->ops_min_share_pct / 100.0;
    size_t kept = 0;
    v->n_ops_compared = n;
    for (size_t i = 0; i < n; i++) {
        all[i].q_value = q[i];
        all[i].significant = !isnan(q[i]) && q[i] <= v->thresholds->ops_fdr_q;
        v->n_ops_new += all[i].status == CG_OPD_NEW;
        v->n_ops_vanished += all[i].status == CG_OPD_VANISHED;
        v->n_ops_significant += all[i].significant;
        if (fmax(all[i].base_ns, all[i].cur_ns) >= min_ns)
            all[kept++] = all[i];
    }
    qsort(all, kept, sizeof(*all), cmp_delta);
    v->ops = all;
    v->n_ops = kept;
    all = NULL;
done:
    for (size_t i = 0; t.slots != NULL && i < t.cap; i++)
        free(t.slots[i].per_run);
    free(t.slots);
    free(all);
    free(p);
    free(q);
    return rc;
}
