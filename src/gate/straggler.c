/*
 * straggler: the consistently slowest rank of a run artifact (see straggler.h).
 */
#include "straggler.h"

#include "err.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return a < b ? -1 : a > b;
}

size_t cg_straggler_median_rank(size_t n)
{
    return n > 0 ? (n - 1) / 2 : 0;
}

/* The median rank's value of the n ranks' values v (sorted here). */
static double median_rank_d(double *v, size_t n)
{
    qsort(v, n, sizeof(*v), cmp_double);
    return v[cg_straggler_median_rank(n)];
}

/* The median of every step time of rank id over a's runs, NAN when none. */
static double rank_median(const struct cg_artifact *a, int64_t id)
{
    size_t total = 0, k = 0;
    for (size_t i = 0; i < a->n_runs; i++)
        for (size_t j = 0; j < a->runs[i].n_ranks; j++)
            if (a->runs[i].ranks[j].rank == id)
                total += a->runs[i].ranks[j].n_steps;
    int64_t *v = total ? malloc(total * sizeof(*v)) : NULL;
    if (v == NULL)
        return NAN;
    for (size_t i = 0; i < a->n_runs; i++)
        for (size_t j = 0; j < a->runs[i].n_ranks; j++) {
            const struct cg_rank *r = &a->runs[i].ranks[j];
            if (r->rank == id)
                for (size_t s = 0; s < r->n_steps; s++)
                    v[k++] = r->step_ns[s];
        }
    qsort(v, k, sizeof(*v), cmp_i64);
    size_t mid = k / 2;
    double m = k % 2 ? (double)v[mid] : ((double)v[mid - 1] + (double)v[mid]) / 2.0;
    free(v);
    return m;
}

int cg_straggler_find(const struct cg_artifact *a, struct cg_straggler *s)
{
    int64_t max_rank = -1, steps = 0;
    for (size_t i = 0; i < a->n_runs; i++)
        for (size_t j = 0; j < a->runs[i].n_ranks; j++)
            if (a->runs[i].ranks[j].rank > max_rank)
                max_rank = a->runs[i].ranks[j].rank;
    if (max_rank < 1 || max_rank >= CG_ARTIFACT_MAX_RANKS)
        return 0;
    int64_t *slowest = calloc((size_t)max_rank + 1, sizeof(*slowest));
    double *medians = calloc((size_t)max_rank + 1, sizeof(*medians));
    if (slowest == NULL || medians == NULL) {
        free(slowest);
        free(medians);
        return CG_ENOMEM;
    }
    for (size_t i = 0; i < a->n_runs; i++) {
        const struct cg_run *run = &a->runs[i];
        if (run->n_ranks < 2)
            continue;
        for (size_t st = 0;; st++) {
            const struct cg_rank *worst = NULL;
            size_t have = 0;
            for (size_t j = 0; j < run->n_ranks; j++) {
                const struct cg_rank *r = &run->ranks[j];
                if (st >= r->n_steps)
                    continue;
                have++;
                if (worst == NULL || r->step_ns[st] > worst->step_ns[st])
                    worst = r;
            }
            if (have < 2)
                break;
            slowest[worst->rank]++;
            steps++;
        }
    }
    int64_t best = 0;
    for (int64_t r = 1; r <= max_rank; r++)
        if (slowest[r] > slowest[best])
            best = r;
    int found = 0;
    size_t n_med = 0;
    if (steps >= 3 && 100.0 * (double)slowest[best] >= CG_STRAGGLER_SHARE_PCT * (double)steps) {
        for (int64_t r = 0; r <= max_rank; r++) {
            double m = rank_median(a, r);
            if (!isnan(m))
                medians[n_med++] = m;
        }
        double mine = rank_median(a, best);
        double mid = n_med >= 2 ? median_rank_d(medians, n_med) : NAN;
        double pct = 100.0 * (mine / mid - 1.0);
        if (!isnan(pct) && pct >= CG_STRAGGLER_MIN_PCT) {
            s->rank = best;
            s->slowest_steps = slowest[best];
            s->steps = steps;
            s->over_median_pct = pct;
            s->node[0] = '\0';
            for (size_t i = 0; i < a->n_runs && s->node[0] == '\0'; i++)
                for (size_t j = 0; j < a->runs[i].n_ranks; j++)
                    if (a->runs[i].ranks[j].rank == best) {
                        snprintf(s->node, sizeof(s->node), "%s", a->runs[i].ranks[j].node);
                        break;
                    }
            found = 1;
        }
    }
    free(slowest);
    free(medians);
    return found;
}
