/*
 * interleave: A B B A runs of two collectors and the pooled order (see interleave.h).
 */
#include "interleave.h"

#include <stdint.h>
#include <string.h>

int cg_interleave_run(struct cg_collector *ca, struct cg_artifact *a, struct cg_collector *cb,
                      struct cg_artifact *b, long n, struct cg_err *err)
{
    size_t start = a->n_runs; /* a batch added to earlier pairs keeps the A B B A order */
    for (long k = 0; k < n; k++) {
        bool a_first = (start + (size_t)k) % 2 == 0;
        int rc = cg_collector_run(a_first ? ca : cb, a_first ? a : b, 1, n, err);
        if (rc == 0)
            rc = cg_collector_run(a_first ? cb : ca, a_first ? b : a, 1, n, err);
        if (rc != 0)
            return rc;
    }
    return 0;
}

bool cg_interleave_failed_a(const struct cg_artifact *a, const struct cg_artifact *b)
{
    if (a->n_runs != b->n_runs)
        return a->n_runs < b->n_runs; /* the pair's second side failed: the one behind */
    return a->n_runs % 2 == 0;        /* the pair's first side failed */
}

/* Appends run i of src to dst. */
static int append_one(struct cg_artifact *dst, const struct cg_artifact *src, size_t i)
{
    struct cg_artifact view = *src; /* shallow: only read by the copy */
    view.runs = src->runs + i;
    view.n_runs = 1;
    return cg_artifact_append_runs(dst, &view);
}

int cg_interleave_pool(const struct cg_artifact *a, const struct cg_artifact *b,
                       struct cg_artifact *pool)
{
    if (a->n_runs == 0)
        return 0;
    if (pool->n_runs == 0 && pool->env.canary_hash == NULL && cg_artifact_copy_header(pool, a) != 0)
        return CG_ENOMEM;
    size_t n = a->n_runs > b->n_runs ? a->n_runs : b->n_runs;
    for (size_t k = 0; k < n; k++) {
        const struct cg_artifact *first = k % 2 == 0 ? a : b, *second = k % 2 == 0 ? b : a;
        if ((k < first->n_runs && append_one(pool, first, k) != 0) ||
            (k < second->n_runs && append_one(pool, second, k) != 0))
            return CG_ENOMEM;
    }
    pool->settings.runs = (int64_t)pool->n_runs;
    return 0;
}
