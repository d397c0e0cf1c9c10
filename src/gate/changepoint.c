/*
 * changepoint: E-divisive means over a commit history (see changepoint.h).
 *
 * The scan. With W_L(t) the sum of |x_i - x_j| over pairs i < j < t, W_R(t) over t <= i < j < n
 * and B(t) = W_L(n) - W_L(t) - W_R(t) the sum over pairs split by t, the statistic of a split
 * with a = t values left and b = n - t right is
 *     Q(t) = (2 / n) * (B(t) - b * W_L(t) / (a - 1) - a * W_R(t) / (b - 1)),
 * the definition in changepoint.h multiplied out. W_L grows by the distances of x_t to the
 * values before it: with c of them below x_t summing to s, k in all summing to S, that is
 * (c * x_t - s) + (S - s - (k - c) * x_t). Counts and sums below a value come from Fenwick trees
 * indexed by the value's rank in the segment, so a scan is O(n log n). A permutation reorders
 * the ranks only; the sorted values stay. Values are centred on the segment's median first so
 * the running sums stay small (Q does not change under a shift of all values).
 */
#include "changepoint.h"

#include "err.h"
#include "stats.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Two maxima closer than this (relative) count as equal in the permutation test: the same values
 * in another order give sums rounded in another order. */
#define CP_TIE_REL 1e-9

/* A value and its position in its segment, for ranking. */
struct item {
    double v;
    size_t at;
};

/* Scratch for scans of segments of up to cap values. */
struct scan {
    double *sorted;  /* the segment's values ascending, minus their median */
    size_t *rank;    /* rank[i]: where the segment's i-th value is in sorted */
    size_t *perm;    /* ranks in a permuted order */
    size_t *fen_n;   /* Fenwick tree (1-based) of counts over ranks */
    double *fen_sum; /* and of values */
    double *left;    /* W_L(t), t = 0..n */
    double *right;   /* W_R(t) */
    struct item *items;
};

/* A segment [lo, hi) of the finite values and its best split. */
struct cand {
    size_t lo, hi;
    size_t tau; /* 0: no split possible */
    double q, p;
    bool significant;
};

void cg_cp_defaults(struct cg_cp_options *o)
{
    o->min_segment = CG_CP_MIN_SEGMENT;
    o->alpha = CG_CP_ALPHA;
    o->permutations = CG_CP_PERMUTATIONS;
    o->seed = CG_CP_SEED;
    o->max_points = CG_CP_MAX_POINTS;
}

/* Frees the scratch; s holds nothing after (freeing it again does nothing). */
static void scan_free(struct scan *s)
{
    free(s->sorted);
    free(s->rank);
    free(s->perm);
    free(s->fen_n);
    free(s->fen_sum);
    free(s->left);
    free(s->right);
    free(s->items);
    memset(s, 0, sizeof(*s));
}

static int scan_alloc(struct scan *s, size_t cap)
{
    memset(s, 0, sizeof(*s));
    if (cap == 0)
        cap = 1;
    s->sorted = malloc(cap * sizeof(*s->sorted));
    s->rank = malloc(cap * sizeof(*s->rank));
    s->perm = malloc(cap * sizeof(*s->perm));
    s->fen_n = malloc((cap + 1) * sizeof(*s->fen_n));
    s->fen_sum = malloc((cap + 1) * sizeof(*s->fen_sum));
    s->left = malloc((cap + 1) * sizeof(*s->left));
    s->right = malloc((cap + 1) * sizeof(*s->right));
    s->items = malloc(cap * sizeof(*s->items));
    if (!s->sorted || !s->rank || !s->perm || !s->fen_n || !s->fen_sum || !s->left || !s->right ||
        !s->items) {
        scan_free(s);
        return CG_ENOMEM;
    }
    return 0;
}

static int cmp_item(const void *pa, const void *pb)
{
    const struct item *a = pa, *b = pb;
    if (a->v != b->v)
        return a->v < b->v ? -1 : 1;
    return a->at < b->at ? -1 : a->at > b->at;
}

/* Ranks v[0..n) into s (sorted, centred; rank). */
static void scan_prepare(struct scan *s, const double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        s->items[i] = (struct item){v[i], i};
    qsort(s->items, n, sizeof(*s->items), cmp_item);
    double centre = s->items[n / 2].v;
    for (size_t k = 0; k < n; k++) {
        s->sorted[k] = s->items[k].v - centre;
        s->rank[s->items[k].at] = k;
    }
}

/* Distance sum of the value of rank r (x) to the k values already in the trees, which sum to
 * total; then r joins them. */
static double fen_take(struct scan *s, size_t n, size_t r, double x, size_t k, double total)
{
    size_t c = 0;
    double below = 0.0;
    for (size_t i = r; i > 0; i -= i & (0 - i)) {
        c += s->fen_n[i];
        below += s->fen_sum[i];
    }
    for (size_t i = r + 1; i <= n; i += i & (0 - i)) {
        s->fen_n[i]++;
        s->fen_sum[i] += x;
    }
    return ((double)c * x - below) + ((total - below) - (double)(k - c) * x);
}

/* The largest Q(t), t in [m, n - m], of the values in rank order r (q[t] filled when q is not
 * NULL); *best its first t. */
static double scan_best(struct scan *s, const size_t *r, size_t n, size_t m, double *q,
                        size_t *best)
{
    double total = 0.0;
    memset(s->fen_n, 0, (n + 1) * sizeof(*s->fen_n));
    memset(s->fen_sum, 0, (n + 1) * sizeof(*s->fen_sum));
    s->left[0] = 0.0;
    for (size_t t = 0; t < n; t++) {
        double x = s->sorted[r[t]];
        s->left[t + 1] = s->left[t] + fen_take(s, n, r[t], x, t, total);
        total += x;
    }
    total = 0.0;
    memset(s->fen_n, 0, (n + 1) * sizeof(*s->fen_n));
    memset(s->fen_sum, 0, (n + 1) * sizeof(*s->fen_sum));
    s->right[n] = 0.0;
    for (size_t t = n; t-- > 0;) {
        double x = s->sorted[r[t]];
        s->right[t] = s->right[t + 1] + fen_take(s, n, r[t], x, n - 1 - t, total);
        total += x;
    }
    double top = -INFINITY;
    *best = 0;
    for (size_t t = m; t + m <= n; t++) {
        double a = (double)t, b = (double)(n - t);
        double between = s->left[n] - s->left[t] - s->right[t];
        double qt =
            2.0 / (double)n * (between - b * s->left[t] / (a - 1.0) - a * s->right[t] / (b - 1.0));
        if (q != NULL)
            q[t] = qt;
        if (qt > top) {
            top = qt;
            *best = t;
        }
    }
    return top;
}

/* A generator's state from the seed, a tag and a position, so each test draws the same numbers
 * whatever was tested before it. */
static uint64_t seed_for(uint64_t seed, uint64_t tag, size_t a, size_t b)
{
    uint64_t st = seed ^ (tag * 0x9e3779b97f4a7c15ULL);
    st += (uint64_t)a * 0xbf58476d1ce4e5b9ULL;
    st = cg_stats_rand(&st);
    st ^= (uint64_t)b * 0x94d049bb133111ebULL;
    return cg_stats_rand(&st);
}

/* A number in [0, n); 0 when n is 0. */
static size_t rand_below(uint64_t *st, size_t n)
{
    return n ? (size_t)(cg_stats_rand(st) % (uint64_t)n) : 0;
}

/* The best split of v[lo, hi) and its permutation test. */
static struct cand test_segment_full(struct scan *s, const double *v, size_t lo, size_t hi,
                                     const struct cg_cp_options *o, bool full)
{
    struct cand c = {.lo = lo, .hi = hi, .p = 1.0};
    size_t n = hi - lo, m = o->min_segment, tau;
    if (hi < lo || m < 2 || n / 2 < m) /* n < 2m without overflow */
        return c;
    scan_prepare(s, v + lo, n);
    if (s->sorted[0] == s->sorted[n - 1])
        return c; /* constant: every split scores 0 */
    c.q = scan_best(s, s->rank, n, m, NULL, &tau);
    c.tau = lo + tau;
    size_t perms = (size_t)o->permutations;
    /* Largest 1 + hits that is still significant; once past it, further permutations only
     * confirm that this split is not a change. */
    size_t allowed = (size_t)floor(o->alpha * (double)(perms + 1) + 1e-9);
    if (allowed == 0 && !full)
        return c;
    double bar = c.q - CP_TIE_REL * fabs(c.q);
    uint64_t rng = seed_for(o->seed, 1, lo, hi);
    memcpy(s->perm, s->rank, n * sizeof(*s->perm));
    size_t hits = 0;
    for (size_t k = 0; k < perms; k++) {
        for (size_t i = n - 1; i > 0; i--) {
            size_t j = rand_below(&rng, i + 1);
            size_t t = s->perm[i];
            s->perm[i] = s->perm[j];
            s->perm[j] = t;
        }
        size_t at;
        if (scan_best(s, s->perm, n, m, NULL, &at) < bar)
            continue;
        hits++;
        if (1 + hits > allowed && !full)
            return c; /* p above alpha */
    }
    c.p = (double)(1 + hits) / (double)(perms + 1);
    c.significant = 1 + hits <= allowed;
    return c;
}

/* The best split of v[lo, hi) tested as binary segmentation does: permutations stop once the
 * split can no longer reach alpha. */
static struct cand test_segment(struct scan *s, const double *v, size_t lo, size_t hi,
                                const struct cg_cp_options *o)
{
    return test_segment_full(s, v, lo, hi, o, false);
}

/* Index of the candidate to accept next (smallest p, then largest Q, then earliest); n when
 * none is significant. */
static size_t pick(const struct cand *c, size_t n)
{
    size_t best = n;
    for (size_t i = 0; i < n; i++) {
        if (!c[i].significant)
            continue;
        if (best == n || c[i].p < c[best].p || (c[i].p == c[best].p && c[i].q > c[best].q) ||
            (c[i].p == c[best].p && c[i].q == c[best].q && c[i].tau < c[best].tau))
            best = i;
    }
    return best;
}

static int cmp_cand_tau(const void *pa, const void *pb)
{
    const struct cand *a = pa, *b = pb;
    return a->tau < b->tau ? -1 : a->tau > b->tau;
}

/* The median of a resample (with replacement) of the n sorted values v: counts of each drawn
 * position, walked in order to the middle. */
static double boot_median(const double *v, size_t n, size_t *counts, uint64_t *rng)
{
    memset(counts, 0, n * sizeof(*counts));
    for (size_t i = 0; i < n; i++)
        counts[rand_below(rng, n)]++;
    size_t lo = (n - 1) / 2, hi = n / 2, seen = 0;
    double a = NAN;
    for (size_t i = 0; i < n; i++) {
        if (seen <= lo && lo < seen + counts[i])
            a = v[i];
        if (seen <= hi && hi < seen + counts[i])
            return (a + v[i]) / 2.0;
        seen += counts[i];
    }
    return NAN; /* not reached: the counts sum to n */
}

/* Medians and the bootstrap interval of the change at tau between segments v[l, tau) and
 * v[tau, r); buf holds r - l values, counts r - l, shifts CG_CP_BOOTSTRAP. */
static void describe(const double *v, size_t l, size_t tau, size_t r, uint64_t seed, double *buf,
                     size_t *counts, double *shifts, struct cg_changepoint *out)
{
    size_t na = tau - l, nb = r - tau;
    memcpy(buf, v + l, (r - l) * sizeof(*buf));
    qsort(buf, na, sizeof(*buf), cg_stats_cmp_double);
    qsort(buf + na, nb, sizeof(*buf), cg_stats_cmp_double);
    out->before = cg_stats_sorted_median(buf, na);
    out->after = cg_stats_sorted_median(buf + na, nb);
    out->shift_pct = out->ci_low_pct = out->ci_high_pct = NAN;
    if (!(out->before > 0))
        return;
    out->shift_pct = (out->after / out->before - 1.0) * 100.0;
    uint64_t rng = seed_for(seed, 2, l, r);
    for (size_t k = 0; k < CG_CP_BOOTSTRAP; k++) {
        double a = boot_median(buf, na, counts, &rng);
        double b = boot_median(buf + na, nb, counts, &rng);
        if (!(a > 0))
            return;
        shifts[k] = (b / a - 1.0) * 100.0;
    }
    qsort(shifts, CG_CP_BOOTSTRAP, sizeof(*shifts), cg_stats_cmp_double);
    out->ci_low_pct = cg_stats_sorted_quantile(shifts, CG_CP_BOOTSTRAP, 0.025);
    out->ci_high_pct = cg_stats_sorted_quantile(shifts, CG_CP_BOOTSTRAP, 0.975);
}

static bool options_valid(const struct cg_cp_options *o)
{
    return o->min_segment >= 2 && o->alpha > 0 && o->alpha < 1 && o->permutations >= 1;
}

int cg_cp_scan(const double *x, size_t n, size_t min_segment, double *q, size_t *best)
{
    *best = 0;
    if (min_segment < 2)
        return CG_EINPUT;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(x[i]))
            return CG_EINPUT;
        q[i] = NAN;
    }
    if (n / 2 < min_segment)
        return 0;
    struct scan s;
    if (scan_alloc(&s, n) != 0)
        return CG_ENOMEM;
    scan_prepare(&s, x, n);
    scan_best(&s, s.rank, n, min_segment, q, best);
    scan_free(&s);
    return 0;
}

int cg_cp_detect(const double *x, size_t n, const struct cg_cp_options *o,
                 struct cg_changepoint *out, size_t cap, size_t *n_out)
{
    struct cg_cp_options defaults;
    struct scan s = {0};
    double *v = NULL, *buf = NULL, *shifts = NULL;
    size_t *orig = NULL, *counts = NULL;
    struct cand *segs = NULL, *found = NULL;
    int rc = CG_ENOMEM;
    *n_out = 0;
    if (o == NULL) {
        cg_cp_defaults(&defaults);
        o = &defaults;
    }
    if (!options_valid(o) || (out == NULL && cap > 0))
        return CG_EINPUT;
    size_t limit = o->max_points < cap ? o->max_points : cap;

    size_t m = 0;
    v = malloc((n ? n : 1) * sizeof(*v));
    orig = malloc((n ? n : 1) * sizeof(*orig));
    segs = malloc((limit + 1) * sizeof(*segs));
    found = malloc((limit + 1) * sizeof(*found));
    if (!v || !orig || !segs || !found)
        goto done;
    for (size_t i = 0; i < n; i++) {
        if (isfinite(x[i])) {
            v[m] = x[i];
            orig[m++] = i;
        }
    }
    rc = 0;
    if (limit == 0 || m / 2 < o->min_segment)
        goto done;
    rc = CG_ENOMEM;
    if (scan_alloc(&s, m) != 0)
        goto done;

    /* Binary segmentation: each segment tested once, the most significant split accepted. */
    size_t n_segs = 1, n_found = 0;
    segs[0] = test_segment(&s, v, 0, m, o);
    while (n_found < limit) {
        size_t i = pick(segs, n_segs);
        if (i == n_segs)
            break;
        struct cand c = segs[i];
        found[n_found++] = c;
        segs[i] = test_segment(&s, v, c.lo, c.tau, o);
        segs[n_segs++] = test_segment(&s, v, c.tau, c.hi, o);
    }
    qsort(found, n_found, sizeof(*found), cmp_cand_tau);

    buf = malloc(m * sizeof(*buf));
    counts = malloc(m * sizeof(*counts));
    shifts = malloc(CG_CP_BOOTSTRAP * sizeof(*shifts));
    if (!buf || !counts || !shifts)
        goto done;
    for (size_t k = 0; k < n_found; k++) {
        size_t l = k > 0 ? found[k - 1].tau : 0;
        size_t r = k + 1 < n_found ? found[k + 1].tau : m;
        struct cg_changepoint *cp = &out[k];
        describe(v, l, found[k].tau, r, o->seed, buf, counts, shifts, cp);
        cp->index = orig[found[k].tau];
        cp->q = found[k].q;
        cp->p_value = found[k].p;
        cp->segment_start = orig[found[k].lo];
        cp->segment_end = found[k].hi < m ? orig[found[k].hi] : n;
    }
    *n_out = n_found;
    rc = 0;
done:
    scan_free(&s);
    free(v);
    free(orig);
    free(segs);
    free(found);
    free(buf);
    free(counts);
    free(shifts);
    return rc;
}

/* C(n, k) as a double (exact up to 2^53). */
static double choose(size_t n, size_t k)
{
    double c = 1.0;
    for (size_t i = 1; i <= k; i++)
        c = c * (double)(n - k + i) / (double)i;
    return c;
}

int cg_cp_candidate(const double *x, size_t n, const struct cg_cp_options *o,
                    struct cg_cp_candidate *out)
{
    struct cg_cp_options defaults;
    struct scan s = {0};
    double *v = NULL, *buf = NULL, *shifts = NULL;
    size_t *orig = NULL, *counts = NULL;
    int rc = CG_ENOMEM;
    memset(out, 0, sizeof(*out));
    out->best_p = NAN;
    if (o == NULL) {
        cg_cp_defaults(&defaults);
        o = &defaults;
    }
    if (!options_valid(o))
        return CG_EINPUT;
    v = malloc((n ? n : 1) * sizeof(*v));
    orig = malloc((n ? n : 1) * sizeof(*orig));
    if (!v || !orig)
        goto done;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (isfinite(x[i])) {
            v[m] = x[i];
            orig[m++] = i;
        }
    }
    out->values = m;
    rc = 0;
    if (m / 2 < o->min_segment)
        goto done;
    double perms = (double)o->permutations;
    for (size_t t = o->min_segment; t + o->min_segment <= m; t++) {
        double k = 2 * t == m ? 2.0 : 1.0;
        double p = (1.0 + perms * fmin(1.0, k / choose(m, t))) / (1.0 + perms);
        out->best_p = isnan(out->best_p) || p < out->best_p ? p : out->best_p;
    }
    rc = CG_ENOMEM;
    if (scan_alloc(&s, m) != 0)
        goto done;
    struct cand c = test_segment_full(&s, v, 0, m, o, true);
    rc = 0;
    if (c.tau == 0)
        goto done; /* constant */
    rc = CG_ENOMEM;
    buf = malloc(m * sizeof(*buf));
    counts = malloc(m * sizeof(*counts));
    shifts = malloc(CG_CP_BOOTSTRAP * sizeof(*shifts));
    if (!buf || !counts || !shifts)
        goto done;
    describe(v, 0, c.tau, m, o->seed, buf, counts, shifts, &out->cp);
    out->cp.index = orig[c.tau];
    out->cp.q = c.q;
    out->cp.p_value = c.p;
    out->cp.segment_start = orig[0];
    out->cp.segment_end = n;
    out->found = true;
    rc = 0;
done:
    scan_free(&s);
    free(v);
    free(orig);
    free(buf);
    free(counts);
    free(shifts);
    return rc;
}
