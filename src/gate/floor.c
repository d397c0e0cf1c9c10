/*
 * floor: a run's and a side's floor, and the floor's test over runs with its null distribution
 * from splits of the runs between the sides (see floor.h).
 */
#include "floor.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double cg_floor_run_ns(const struct cg_run *run)
{
    double *v = run->n_steps ? malloc(run->n_steps * sizeof(*v)) : NULL;
    if (v == NULL)
        return NAN;
    for (size_t i = 0; i < run->n_steps; i++)
        v[i] = (double)run->steps[i].wall_ns;
    double f = cg_stats_floor(v, run->n_steps);
    free(v);
    return f;
}

size_t cg_floor_fast_runs(double *v, size_t n)
{
    double lowest = INFINITY;
    for (size_t i = 0; i < n; i++)
        lowest = fmin(lowest, v[i]);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] <= lowest * CG_FLOOR_RUN_WINDOW)
            v[k++] = v[i];
    }
    return k;
}

double cg_floor_side_ns(const struct cg_run *runs, size_t n_runs)
{
    double *v = n_runs ? malloc(n_runs * sizeof(*v)) : NULL;
    if (v == NULL)
        return NAN;
    double f = NAN;
    for (size_t i = 0; i < n_runs; i++) {
        v[i] = cg_floor_run_ns(&runs[i]);
        if (!isfinite(v[i]))
            goto done;
    }
    f = cg_stats_quantile(v, cg_floor_fast_runs(v, n_runs), 0.5);
done:
    free(v);
    return f;
}

/* ---- the floor's test over runs (verdict.h) ------------------------------------------------ */

/* The pooled run floors in increasing order, with the side each came from. */
struct floor_pool {
    double *v;          /* floors, increasing */
    unsigned char *cur; /* 1: the current side's, in the same order */
    size_t n, nb, nc;
    size_t fast;        /* the pooled fast state: the first `fast` of v (cg_floor_fast_state) */
};

size_t cg_floor_fast_state(const double *v, size_t n)
{
    if (n == 0)
        return 0;
    size_t least = (n + 5) / 6;
    if (least < CG_FLOOR_MIN_FAST_RUNS)
        least = CG_FLOOR_MIN_FAST_RUNS;
    if (least >= n)
        return n;
    size_t k = least;
    while (k < n && v[k] <= v[k - 1] * CG_FLOOR_STATE_GAP &&
           v[k] <= v[least - 1] * CG_FLOOR_STATE_WINDOW)
        k++;
    return k;
}

/* Which runs of a split are compared: those of the pooled fast state (the first `fast` of the
 * pool), or each side's own fast state (its runs up to cut[side]). */
struct floor_pick {
    size_t lim;     /* runs of the pool considered: the first lim */
    double cut[2];  /* and of those, the runs at most this floor, per side (INFINITY: all) */
};

/* 2U (current above baseline, ties one half) over the runs of the pool that pick takes, labelled
 * by cur, with the sizes of each side among them. */
static void floor_u(const struct floor_pool *p, const unsigned char *cur,
                    const struct floor_pick *pick, size_t *kb, size_t *kc, size_t *h)
{
    size_t k[2] = {0, 0}, twice_u = 0;
    for (size_t i = 0; i < pick->lim;) {
        size_t j = i, g[2] = {0, 0};
        for (; j < pick->lim && p->v[j] == p->v[i]; j++)
            g[cur[j]] += p->v[j] <= pick->cut[cur[j]];
        twice_u += g[1] * (2 * k[0] + g[0]);
        k[0] += g[0];
        k[1] += g[1];
        i = j;
    }
    *kb = k[0];
    *kc = k[1];
    *h = twice_u;
}

/* The highest floor of side s's own fast state under the labels cur: its runs within
 * CG_FLOOR_RUN_WINDOW of its lowest (cg_floor_fast_runs' rule; no gap rule here: a side's few
 * runs near its lowest say too little to split a state, and the verdict asks for
 * CG_FLOOR_MIN_FAST_RUNS of them). NAN for a side without runs. */
static double own_state_cut(const struct floor_pool *p, const unsigned char *cur, int s)
{
    for (size_t i = 0; i < p->n; i++)
        if (cur[i] == s)
            return p->v[i] * CG_FLOOR_RUN_WINDOW;
    return NAN;
}

/* What a split compares (floor_pick): the pooled fast state when both sides have
 * CG_FLOOR_MIN_FAST_RUNS runs there, else each side's own fast state (a side with few or no runs
 * in the pooled fast state: every run of it slower, a uniform slowdown whose fastest runs reach
 * into the other side's state, or a spell of load on most of its runs). */
static struct floor_pick floor_pick_of(const struct floor_pool *p, const unsigned char *cur,
                                       bool *own)
{
    struct floor_pick pick = {p->fast, {INFINITY, INFINITY}};
    size_t k[2] = {0, 0};
    for (size_t i = 0; i < p->fast; i++) /* cur holds p->n >= p->fast labels */
        k[cur[i] != 0]++; /* NOLINT(clang-analyzer-core.UndefinedBinaryOperatorResult) */
    *own = k[0] < CG_FLOOR_MIN_FAST_RUNS || k[1] < CG_FLOOR_MIN_FAST_RUNS;
    if (*own)
        pick = (struct floor_pick){p->n, {own_state_cut(p, cur, 0), own_state_cut(p, cur, 1)}};
    return pick;
}

/* Mann-Whitney's z for 2U = h with kb and kc runs (at least 1 each). No tie correction: it is a
 * statistic whose distribution the splits give, whatever the sizes. */
static double floor_z(size_t kb, size_t kc, size_t h)
{
    double mn = (double)kb * (double)kc;
    return ((double)h / 2.0 - mn / 2.0) / sqrt(mn * (double)(kb + kc + 1) / 12.0);
}

/* The statistic of one split: Mann-Whitney's z over the runs it compares (floor_pick_of). */
static double floor_stat(const struct floor_pool *p, const unsigned char *cur)
{
    bool own;
    struct floor_pick pick = floor_pick_of(p, cur, &own);
    size_t kb, kc, h;
    floor_u(p, cur, &pick, &kb, &kc, &h);
    return floor_z(kb, kc, h);
}

double cg_floor_smallest_p(size_t nb, size_t nc)
{
    double c = cg_stats_choose(nb + nc, nb);
    return c <= CG_FLOOR_PERMUTATIONS ? 1.0 / c : 1.0 / (CG_FLOOR_PERMUTATIONS + 1.0);
}

/* The statistic of every split (all of them, or CG_FLOOR_PERMUTATIONS seeded ones) into z,
 * sorted; returns how many (0 when memory ran out). */
static size_t floor_null(const struct floor_pool *p, double *z)
{
    if (p->n == 0)
        return 0;
    size_t n = p->n, count = 0;
    /* NOLINTNEXTLINE(clang-analyzer-optin.portability.UnixAPI): n >= 2, checked by the caller */
    unsigned char *cur = calloc(n, 1);
    size_t *idx = calloc(n, sizeof(*idx));
    /* Seeded from the pooled floors, which do not depend on the sides: the same runs give the
     * same verdict, and the splits drawn are independent of which side a run is on. */
    uint64_t rng = 0x666c6f6f72ULL;
    for (size_t i = 0; i < n; i++) {
        uint64_t bits;
        memcpy(&bits, &p->v[i], sizeof(bits));
        rng = (rng ^ bits) * 0x100000001b3ULL;
    }
    struct cg_splits sp;
    if (cur == NULL || idx == NULL ||
        cg_stats_splits_init(&sp, idx, n, p->nb, CG_FLOOR_PERMUTATIONS, rng) != 0)
        goto done;
    while (cg_stats_splits_next(&sp, cur))
        z[count++] = floor_stat(p, cur);
    qsort(z, count, sizeof(*z), cg_stats_cmp_double);
done:
    free(cur);
    free(idx);
    return count;
}

/* The null distribution of the floor's statistic: the sorted statistics of the splits, and
 * whether the observed split is among them (every split taken) or is added to the count (drawn
 * splits: p = (1 + k) / (1 + B)). */
struct floor_null {
    const double *z;
    size_t count;
    bool all;
};

/* Two z that are one number in exact arithmetic (sqrt(1.5) from fast-run counts (1, 2, 4) and
 * from (3, 8, 36)) can differ in their last bits; distinct z of splits of a few thousand runs
 * differ by far more than this relative tolerance, so z within it are the same z. */
#define FLOOR_Z_TOLERANCE 1e-9

/* First index of the sorted z with z >= x (strict: z > x), z within FLOOR_Z_TOLERANCE of x
 * counting as equal to it. */
static size_t first_index(const double *z, size_t count, double x, bool strict)
{
    double tol = FLOOR_Z_TOLERANCE * fmax(1.0, fabs(x));
    double edge = strict ? x + tol : x - tol;
    size_t lo = 0, hi = count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strict ? z[mid] > edge : z[mid] >= edge)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* P(z >= x) under the splits; x finite. */
static double floor_p_greater(const struct floor_null *f, double x)
{
    double k = (double)(f->count - first_index(f->z, f->count, x, false));
    return f->all ? k / (double)f->count : (k + 1.0) / ((double)f->count + 1.0);
}

/* P(z <= x) under the splits; x finite. */
static double floor_p_less(const struct floor_null *f, double x)
{
    double k = (double)first_index(f->z, f->count, x, true);
    return f->all ? k / (double)f->count : (k + 1.0) / ((double)f->count + 1.0);
}

/* The tails of 2U = h for the observed sizes kb and kc under the splits, through its z, as
 * cg_stats_critical takes them. */
struct floor_tails {
    const struct floor_null *f;
    size_t kb, kc;
};

static double floor_tail_upper(const void *p, size_t h)
{
    const struct floor_tails *t = p;
    return floor_p_greater(t->f, floor_z(t->kb, t->kc, h));
}

static double floor_tail_lower(const void *p, size_t h)
{
    const struct floor_tails *t = p;
    return floor_p_less(t->f, floor_z(t->kb, t->kc, h));
}

struct floor_item {
    double v;
    unsigned char cur;
};

static int cmp_floor_item(const void *a, const void *b)
{
    const struct floor_item *x = a, *y = b;
    return (x->v > y->v) - (x->v < y->v);
}

/* Pools the floors in increasing order with their sides, and finds the pooled fast state. */
static int floor_pool_make(const double *base, size_t nb, const double *cur, size_t nc,
                           struct floor_pool *p)
{
    p->n = nb + nc;
    p->nb = nb;
    p->nc = nc;
    struct floor_item *items = malloc(p->n * sizeof(*items));
    p->v = malloc(p->n * sizeof(*p->v));
    p->cur = malloc(p->n);
    if (items == NULL || p->v == NULL || p->cur == NULL) {
        free(items);
        return -1;
    }
    for (size_t i = 0; i < p->n; i++)
        items[i] = (struct floor_item){i < nb ? base[i] : cur[i - nb], i >= nb};
    qsort(items, p->n, sizeof(*items), cmp_floor_item);
    for (size_t i = 0; i < p->n; i++) {
        p->v[i] = items[i].v;
        p->cur[i] = items[i].cur;
    }
    free(items);
    p->fast = cg_floor_fast_state(p->v, p->n);
    return 0;
}

/* The logs of side s's runs that pick takes into out; returns how many. */
static size_t side_logs(const struct floor_pool *p, int s, const struct floor_pick *pick,
                        double *out)
{
    size_t k = 0, lim = pick->lim < p->n ? pick->lim : p->n;
    for (size_t i = 0; i < lim; i++)
        /* NOLINTNEXTLINE(clang-analyzer-core.UndefinedBinaryOperatorResult): cur holds p->n */
        if (p->cur[i] == s && p->v[i] <= pick->cut[s])
            out[k++] = log(p->v[i]);
    return k;
}

/* The median of k logs in increasing order, as a floor. */
static double median_floor(const double *logs, size_t k)
{
    return k == 0 ? NAN : (exp(logs[(k - 1) / 2]) + exp(logs[k / 2])) / 2.0;
}

int cg_floor_compare(const double *base, size_t nb, const double *cur, size_t nc, double alpha,
                     struct cg_floor_test *out)
{
    if (nb == 0 || nc == 0)
        return -1;
    struct floor_pool pool = {NULL, NULL, 0, 0, 0, 0};
    double *z = NULL, *lb = malloc(nb * sizeof(*lb)), *lc = malloc(nc * sizeof(*lc));
    int rc = -1;
    memset(out, 0, sizeof(*out));
    if (lb == NULL || lc == NULL || floor_pool_make(base, nb, cur, nc, &pool) != 0)
        goto done;
    struct floor_pick in_state = {pool.fast, {INFINITY, INFINITY}};
    out->state_runs = pool.fast;
    out->slow[0] = nb - side_logs(&pool, 0, &in_state, lb);
    out->slow[1] = nc - side_logs(&pool, 1, &in_state, lc);
    struct floor_pick pick = floor_pick_of(&pool, pool.cur, &out->own_states);
    size_t kb = side_logs(&pool, 0, &pick, lb), kc = side_logs(&pool, 1, &pick, lc), h;
    out->fast[0] = kb;
    out->fast[1] = kc;
    out->side_floor[0] = median_floor(lb, kb);
    out->side_floor[1] = median_floor(lc, kc);
    size_t splits = CG_FLOOR_PERMUTATIONS;
    bool all = cg_stats_choose(pool.n, nb) <= CG_FLOOR_PERMUTATIONS;
    if (all)
        splits = (size_t)llround(cg_stats_choose(pool.n, nb));
    if ((z = malloc(splits * sizeof(*z))) == NULL)
        goto done;
    struct floor_null f = {z, floor_null(&pool, z), all};
    if (f.count != splits)
        goto done;
    size_t kb2, kc2;
    floor_u(&pool, pool.cur, &pick, &kb2, &kc2, &h); /* kb2 = kb, kc2 = kc */
    double zo = floor_z(kb, kc, h);
    out->p_greater = floor_p_greater(&f, zo);
    out->p_less = floor_p_less(&f, zo);
    out->all_splits = all;
    /* Critical values of 2U for the observed sizes, from the same p functions (both are
     * monotone in h), so the interval and the p-values cannot disagree. */
    struct floor_tails ft = {&f, kb, kc};
    size_t h_up, h_down;
    cg_stats_critical(2 * kb * kc, alpha, floor_tail_upper, floor_tail_lower, &ft, &h_up, &h_down);
    rc = cg_stats_shift_interval(lb, kb, lc, kc, h_up, h_down, &out->shift);
    /* the slow states' share, current above baseline: Fisher's exact test */
    out->share_p = cg_stats_fisher_greater(out->slow[0], nb, out->slow[1], nc);
done:
    free(pool.v);
    free(pool.cur);
    free(z);
    free(lb);
    free(lc);
    return rc;
}
