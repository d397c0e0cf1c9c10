/* anatomy: where a step's time goes, per side (see anatomy.h). */
#include "anatomy.h"

#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *cg_anatomy_label(enum cg_anatomy_kind k)
{
    switch (k) {
    case CG_ANAT_GPU_BUSY:
        return "GPU busy (kernels)";
    case CG_ANAT_GPU_IDLE:
        return "GPU idle (waiting for the host)";
    case CG_ANAT_SYNC:
        return "host blocked in synchronisation";
    default:
        return "NVTX range";
    }
}

/* A run's share of the step spent in kind (range: name), NAN when the run lacks it. */
static double run_share(const struct cg_run *r, enum cg_anatomy_kind kind, const char *name)
{
    double wall = 0.0, part = 0.0;
    for (size_t i = 0; i < r->n_steps; i++) {
        const struct cg_step *s = &r->steps[i];
        wall += (double)s->wall_ns;
        if (kind == CG_ANAT_RANGE)
            continue;
        int64_t v = kind == CG_ANAT_SYNC ? s->sync_ns : s->gpu_busy_ns;
        if (v < 0)
            return NAN;
        part += (double)(v < s->wall_ns ? v : s->wall_ns);
    }
    if (wall <= 0.0)
        return NAN;
    if (kind == CG_ANAT_RANGE) {
        bool seen = false;
        for (size_t i = 0; i < r->n_ops; i++)
            if (r->ops[i].kind == CG_OP_RANGE && name != NULL &&
                strcmp(r->ops[i].name, name) == 0) {
                part += (double)r->ops[i].total_ns;
                seen = true;
            }
        if (!seen)
            return 0.0;
    }
    double share = part / wall;
    return kind == CG_ANAT_GPU_IDLE ? 1.0 - share : share;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median over a's runs of their shares, NAN when some run lacks it or there is none. */
static double side_share(const struct cg_artifact *a, enum cg_anatomy_kind kind, const char *name,
                         double *buf)
{
    for (size_t i = 0; i < a->n_runs; i++)
        if (isnan(buf[i] = run_share(&a->runs[i], kind, name)))
            return NAN;
    if (a->n_runs == 0)
        return NAN;
    qsort(buf, a->n_runs, sizeof(*buf), cmp_double);
    return cg_stats_sorted_median(buf, a->n_runs);
}

/* Keeps name among the CG_ANATOMY_MAX_RANGES range names with the largest share (names, shares:
 * the kept ones, largest first). */
static void keep_range(const char **names, double *shares, size_t *n, const char *name,
                       double share)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp(names[i], name) == 0) {
            if (share <= shares[i])
                return;
            memmove(names + i, names + i + 1, (*n - i - 1) * sizeof(*names));
            memmove(shares + i, shares + i + 1, (*n - i - 1) * sizeof(*shares));
            (*n)--;
            break;
        }
    size_t at = *n;
    while (at > 0 && shares[at - 1] < share)
        at--;
    if (at >= CG_ANATOMY_MAX_RANGES)
        return;
    size_t move = (*n < CG_ANATOMY_MAX_RANGES ? *n : CG_ANATOMY_MAX_RANGES - 1) - at;
    memmove(names + at + 1, names + at, move * sizeof(*names));
    memmove(shares + at + 1, shares + at, move * sizeof(*shares));
    names[at] = name;
    shares[at] = share;
    if (*n < CG_ANATOMY_MAX_RANGES)
        (*n)++;
}

/* The larger of a part's two shares (a side without it counts as 0). */
static double larger_share(const struct cg_anatomy_part *p)
{
    double b = isnan(p->baseline) ? 0.0 : p->baseline, c = isnan(p->current) ? 0.0 : p->current;
    return b > c ? b : c;
}

static int cmp_part(const void *x, const void *y)
{
    double a = larger_share(x), b = larger_share(y);
    return (a < b) - (a > b); /* largest first */
}

int cg_anatomy_compute(const struct cg_artifact *baseline, const struct cg_artifact *current,
                       struct cg_anatomy *out)
{
    size_t most = baseline->n_runs > current->n_runs ? baseline->n_runs : current->n_runs;
    double *buf = malloc((most + 1) * sizeof(*buf));
    if (buf == NULL)
        return -1;
    out->n = 0;
    static const enum cg_anatomy_kind fixed[] = {CG_ANAT_GPU_BUSY, CG_ANAT_GPU_IDLE, CG_ANAT_SYNC};
    for (size_t k = 0; k < sizeof(fixed) / sizeof(fixed[0]); k++) {
        struct cg_anatomy_part p = {fixed[k], NULL, side_share(baseline, fixed[k], NULL, buf),
                                    side_share(current, fixed[k], NULL, buf)};
        if (!isnan(p.baseline) || !isnan(p.current))
            out->parts[out->n++] = p;
    }
    const char *names[CG_ANATOMY_MAX_RANGES];
    double shares[CG_ANATOMY_MAX_RANGES];
    size_t n_names = 0;
    for (int side = 0; side < 2; side++) {
        const struct cg_artifact *a = side ? current : baseline;
        for (size_t i = 0; i < a->n_runs; i++) {
            double wall = 0.0;
            for (size_t k = 0; k < a->runs[i].n_steps; k++)
                wall += (double)a->runs[i].steps[k].wall_ns;
            for (size_t j = 0; j < a->runs[i].n_ops && wall > 0.0; j++) {
                const struct cg_op *op = &a->runs[i].ops[j];
                if (op->kind == CG_OP_RANGE) /* a run holds each range name once */
                    keep_range(names, shares, &n_names, op->name, (double)op->total_ns / wall);
            }
        }
    }
    for (size_t i = 0; i < n_names; i++)
        out->parts[out->n++] = (struct cg_anatomy_part){
            CG_ANAT_RANGE, names[i], side_share(baseline, CG_ANAT_RANGE, names[i], buf),
            side_share(current, CG_ANAT_RANGE, names[i], buf)};
    /* chosen by their largest run, shown by their medians */
    qsort(out->parts + out->n - n_names, n_names, sizeof(*out->parts), cmp_part);
    free(buf);
    return 0;
}
