/*
 * changepoint: change points in a series of one value per commit (main's performance history,
 * oldest first, e.g. the median step time of each commit's runs in ns). The method and its
 * figures: "Change points in main's history" in docs/statistics.md.
 *
 * E-divisive means with exponent 1: a split of a segment at tau is scored by the energy
 * statistic Q(tau) = a*b/(a+b) * (2/(a*b) sum|l - r| - 1/C(a,2) sum|l - l'| - 1/C(b,2) sum|r - r'|)
 * over the a values left of tau and the b values from tau on (the pairs within a side counted
 * once each). Q is near 0 when both sides come from one distribution and grows with any
 * difference between them (level, spread or shape), no distribution assumed. The best split of
 * a segment maximises Q over tau with at least min_segment values on each side; its p-value is a
 * permutation test of that maximum (the segment's values shuffled, the best split searched
 * again). Binary segmentation: every segment is tested, a significant split cuts it in two and
 * both halves are tested in turn; splits are accepted most significant first (smallest p, then
 * largest Q) until none is left or max_points are accepted.
 *
 * Each scan costs O(n log n) (running sums of |x_i - x_j| kept in Fenwick trees over the ranks),
 * so a test is O(permutations * n log n); a test stops drawing permutations once it can no longer
 * reach alpha, so segments of noise cost a few scans. Deterministic for a seed: each segment's
 * and each interval's generator is seeded from the options' seed and the position.
 *
 * Non-finite values (NAN, +-inf: a commit with no measurement) are skipped: the series is
 * tested without them, min_segment counts finite values, and every index reported is an index
 * into the caller's series (a change point's index is that of the first finite value of its new
 * segment). No I/O; thread-safe (no state outside the call).
 */
#ifndef CG_CHANGEPOINT_H
#define CG_CHANGEPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CG_CP_MIN_SEGMENT 4
#define CG_CP_ALPHA 0.01
#define CG_CP_PERMUTATIONS 199
#define CG_CP_SEED 0x63616e617279ULL
#define CG_CP_MAX_POINTS 16
/* Resamples of the bootstrap interval of a change point's shift. */
#define CG_CP_BOOTSTRAP 2000

struct cg_cp_options {
    size_t min_segment; /* smallest segment on either side of a change, >= 2 (default 4) */
    double alpha;       /* significance of each change point's permutation test (default 0.01) */
    int permutations;   /* permutations per test (default 199) */
    uint64_t seed;      /* PRNG seed (default fixed) */
    size_t max_points;  /* most change points reported (default 16) */
};

/* Fills o with the defaults above. */
void cg_cp_defaults(struct cg_cp_options *o);

struct cg_changepoint {
    size_t index;         /* first point of the new segment (1..n-1) */
    double q;             /* the energy statistic of the accepted split, in the series' units */
    double p_value;       /* the permutation test's p: (1 + #perm >= observed) / (1 + perms) */
    double before, after; /* medians of the segments on either side (bounded by the
                           * neighbouring change points) */
    double shift_pct;     /* (after / before - 1) * 100; NAN unless before > 0 */
    double ci_low_pct;    /* 95% percentile interval of shift_pct from CG_CP_BOOTSTRAP */
    double ci_high_pct;   /* resamples of each side's values; NAN unless before > 0 */
    size_t segment_start; /* the segment the split was found in: [start, end) of the caller's */
    size_t segment_end;   /* series, as tested (neighbours accepted earlier bound it) */
};

/* Change points of x[0..n) in index order. 0; CG_ENOMEM; CG_EINPUT when the options are invalid
 * (min_segment < 2, alpha outside (0, 1), permutations < 1). o NULL: the defaults. At most
 * min(max_points, cap) are found (the most significant first), so *n_out <= cap; out may be NULL
 * when cap is 0. Fewer than 2 * min_segment finite values, or a constant series: none. p below
 * 1 / (1 + permutations) cannot occur, so alpha below it finds none. */
int cg_cp_detect(const double *x, size_t n, const struct cg_cp_options *o,
                 struct cg_changepoint *out, size_t cap, size_t *n_out);

/* The strongest split of a series in which nothing was called, so a reader can see what was
 * tested and why it fell short. */
struct cg_cp_candidate {
    bool found;               /* false: fewer than 2 * min_segment finite values, or constant */
    struct cg_changepoint cp; /* its split: p_value from every permutation (none stopped early),
                               * medians, shift and interval over the whole series */
    size_t values;            /* the finite values tested */
    double best_p;            /* the p a clean split of this many values can expect at best:
                               * (1 + permutations * k / C(n, t)) / (1 + permutations) minimised
                               * over the splits t allowed (k = 2 where t = n - t: both ways) */
};

/* The best split of x[0..n) (finite values only) and its full permutation test, with the p a
 * clean split can expect (see struct cg_cp_candidate). For a series in which cg_cp_detect found
 * nothing. 0, CG_EINPUT (bad options) or CG_ENOMEM; out->found false when there is no split. */
int cg_cp_candidate(const double *x, size_t n, const struct cg_cp_options *o,
                    struct cg_cp_candidate *out);

/* The energy statistic of every split of x[0..n) (all finite): q[tau] for tau in
 * [min_segment, n - min_segment], NAN elsewhere (q has n entries); *best the first tau with the
 * largest q (0 when there is no split). The scan cg_cp_detect runs, exposed for tests. 0,
 * CG_ENOMEM, or CG_EINPUT (min_segment < 2, a non-finite value). */
int cg_cp_scan(const double *x, size_t n, size_t min_segment, double *q, size_t *best);

#endif
