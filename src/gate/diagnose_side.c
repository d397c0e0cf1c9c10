/*
 * diagnose_side: a side's pooled figures and its ops joined with the other side's, for the
 * diagnosis rules (diagnose_internal.h). Every per-step figure is a total over all runs divided
 * by the side's measured steps.
 */
#include "diagnose_internal.h"

#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- pooled figures of one side ---------------------------------------------------------- */

/* Median over runs of a peak; NAN when any run lacks it. */
static int peak_median(const struct cg_artifact *a, bool device, double *out)
{
    *out = NAN;
    if (a->n_runs == 0)
        return 0;
    double *v = malloc(a->n_runs * sizeof(*v));
    if (v == NULL)
        return CG_ENOMEM;
    for (size_t i = 0; i < a->n_runs; i++) {
        const struct cg_run_summary *s = &a->runs[i].summary;
        int64_t b = device ? s->peak_device_bytes : s->peak_host_rss_bytes;
        if (b < 0) {
            free(v);
            return 0;
        }
        v[i] = (double)b;
    }
    *out = cg_stats_quantile(v, a->n_runs, 0.5);
    free(v);
    return isnan(*out) ? CG_ENOMEM : 0;
}

int cg_diag_side_make(struct cg_diag_side *s, const struct cg_artifact *a)
{
    memset(s, 0, sizeof(*s));
    s->a = a;
    for (size_t r = 0; r < a->n_runs; r++) {
        const struct cg_run *run = &a->runs[r];
        for (size_t k = 0; k < run->n_steps; k++) {
            const struct cg_step *st = &run->steps[k];
            s->wall_ns += (double)st->wall_ns;
            if (st->gpu_busy_ns >= 0) {
                s->busy_ns += (double)st->gpu_busy_ns;
                s->busy_wall_ns += (double)st->wall_ns;
                s->n_busy += 1.0;
            }
        }
        s->n_steps += (double)run->n_steps;
        for (size_t k = 0; k < run->n_ops; k++) {
            const struct cg_op *op = &run->ops[k];
            if ((unsigned)op->kind < CG_OP_KIND_COUNT) {
                s->kind_ns[op->kind] += (double)op->total_ns;
                s->kind_calls[op->kind] += (double)op->calls;
            }
        }
    }
    if (peak_median(a, true, &s->peak_dev) != 0 || peak_median(a, false, &s->peak_rss) != 0)
        return CG_ENOMEM;
    return 0;
}

double cg_diag_per_step(const struct cg_diag_side *s, double total)
{
    return s->n_steps > 0 ? total / s->n_steps : NAN;
}

double cg_diag_gpu_op_ns(const struct cg_diag_side *s)
{
    return s->kind_ns[CG_OP_KERNEL] + s->kind_ns[CG_OP_MEMCPY] + s->kind_ns[CG_OP_MEMSET];
}

double cg_diag_idle_pct(const struct cg_diag_side *s)
{
    if (s->n_busy <= 0 || s->busy_wall_ns <= 0)
        return NAN;
    return fmax(0.0, 100.0 * (1.0 - s->busy_ns / s->busy_wall_ns));
}

/* ---- ops of both sides joined by name or family ------------------------------------------ */

struct op_ref {
    const char *key;
    enum cg_op_kind kind;
    int side;
    double ns, calls; /* per step of its side */
};

static int cmp_ref(const void *pa, const void *pb)
{
    const struct op_ref *x = pa, *y = pb;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    return strcmp(x->key, y->key);
}

int cg_diag_join_ops(const struct cg_diag_side *sides[2], unsigned kind_mask, bool by_family,
                     struct cg_diag_op_sum **out, size_t *n_out)
{
    size_t n = 0;
    *out = NULL;
    *n_out = 0;
    for (int s = 0; s < 2; s++) {
        for (size_t r = 0; sides[s] != NULL && r < sides[s]->a->n_runs; r++)
            n += sides[s]->a->runs[r].n_ops;
    }
    struct op_ref *refs = malloc((n ? n : 1) * sizeof(*refs));
    struct cg_diag_op_sum *sums = calloc(n ? n : 1, sizeof(*sums));
    if (refs == NULL || sums == NULL) {
        free(refs);
        free(sums);
        return CG_ENOMEM;
    }
    size_t m = 0;
    for (int s = 0; s < 2; s++) {
        const struct cg_diag_side *sd = sides[s];
        for (size_t r = 0; sd != NULL && r < sd->a->n_runs; r++) {
            const struct cg_run *run = &sd->a->runs[r];
            for (size_t k = 0; k < run->n_ops; k++) {
                const struct cg_op *op = &run->ops[k];
                if ((unsigned)op->kind >= CG_OP_KIND_COUNT || !(kind_mask & (1u << op->kind)))
                    continue;
                const char *key = by_family && op->family != NULL ? op->family : op->name;
                refs[m++] =
                    (struct op_ref){key, op->kind, s, cg_diag_per_step(sd, (double)op->total_ns),
                                    cg_diag_per_step(sd, (double)op->calls)};
            }
        }
    }
    qsort(refs, m, sizeof(*refs), cmp_ref);
    size_t used = 0;
    for (size_t i = 0; i < m; i++) {
        if (used == 0 || cmp_ref(&refs[i], &refs[i - 1]) != 0) {
            sums[used].key = refs[i].key;
            sums[used].kind = refs[i].kind;
            used++;
        }
        struct cg_diag_op_sum *u = &sums[used - 1];
        u->ns[refs[i].side] += refs[i].ns;
        u->calls[refs[i].side] += refs[i].calls;
        u->in[refs[i].side] = true;
    }
    free(refs);
    *out = sums;
    *n_out = used;
    return 0;
}
