/*
 * paired: statistics of paired runs and the paired verdict of 'canary-gate ab'.
 * The words (run, step, side, look, spending, floor, fast state, confirmation): the glossary
 * atop docs/statistics.md.
 *
 * When base and head run interleaved on one machine (A B B A ...), run i of each side forms a
 * pair measured under the same conditions, and the per-pair difference of log values (the log
 * of the ratio head/base) cancels drift common to both runs of the pair. The differences are
 * tested with the Wilcoxon signed-rank test in Pratt's form: |d| are ranked over all pairs with
 * midranks, zero differences taking the lowest ranks and no sign, and W+ is the sum of the
 * ranks of the positive ones. The null distribution is exact, conditional on those ranks (each
 * non-zero difference carries its rank with a random sign), for at most CG_WSR_EXACT_MAX
 * differences, with or without ties; otherwise normal with the same conditional mean and
 * variance and a continuity correction. The change is the Hodges-Lehmann estimate, the median
 * of the Walsh averages (d_i + d_j) / 2 for i <= j, with the interval that inverts the same
 * test: T(s) = #{averages > s} + #{averages = s} / 2 is W+ + z(z + 1) / 4 at s = 0 (z zeros),
 * so the critical values of W+ become ranks among the averages, and a p at most alpha comes
 * with an interval that excludes 0 (an end can sit at 0 only when an average is exactly 0).
 *
 * Pure functions of their inputs except cg_paired_verdict (which fills a verdict pointing into
 * its inputs, as cg_verdict_compute does). Thread-safe.
 */
#ifndef CG_PAIRED_H
#define CG_PAIRED_H

#include "err.h"
#include "stats.h"
#include "thresholds.h"
#include "verdict.h"

#include <stddef.h>

#define CG_WSR_EXACT_MAX 60

struct cg_wsr {
    double w_plus;    /* sum of the (mid)ranks of |d| over the positive differences */
    size_t n;         /* non-zero differences (those with a sign; zeros are ranked too) */
    double p_greater; /* one-sided p-value, H1: the differences tend to be positive */
    double p_less;    /* one-sided p-value, H1: the differences tend to be negative */
    int exact;        /* 1 when the exact null distribution was used */
};

/* Signed-rank test (Pratt) of the n differences d. All zero: w_plus 0, n 0, both p 1.
 * Returns 0, or -1 when n is 0 or memory ran out. */
int cg_paired_signed_rank(const double *d, size_t n, struct cg_wsr *out);

/* Hodges-Lehmann estimate of the centre of the n differences d (median of the n(n+1)/2 Walsh
 * averages) with the interval of centres that the one-sided tests of cg_paired_signed_rank at
 * level alpha do not reject (infinite ends when no W+ reaches alpha). Returns 0, or -1 when n
 * is 0 or memory ran out. */
int cg_paired_hl(const double *d, size_t n, double alpha, struct cg_shift *out);

/* P(W+ <= w) under the null hypothesis for n untied non-zero differences (exact, n at most
 * CG_WSR_EXACT_MAX); NAN outside that range or when memory ran out. */
double cg_paired_wsr_cdf(size_t n, double w);

/* The verdict of head against base when run i of each side was measured as a pair: computed as
 * cg_verdict_compute does (memory, ops, environment), then the step time mean, p95 and tokens/sec
 * are replaced by the signed-rank test and Hodges-Lehmann interval on the per-pair log ratios of
 * the first min(runs) runs, with the same decision table (verdict.c). The step time floor keeps
 * the unpaired comparison of the fast runs (verdict.h): only pairs whose two runs both met the
 * runner's fast state would carry it, too few on a loaded runner, while the interleaving already
 * spreads drift over both sides alike. With fewer than 2 pairs the unpaired verdict stands.
 * cg_verdict_release frees it. Fails only when memory runs out (CG_ENOMEM). */
int cg_paired_verdict(const struct cg_artifact *base, const struct cg_artifact *head,
                      const struct cg_thresholds *t, struct cg_verdict *v, struct cg_err *err);

#endif
