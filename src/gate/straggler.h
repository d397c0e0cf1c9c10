/*
 * straggler: the rank that holds the others back, from a run artifact's per-rank step times
 * (runs[].ranks, artifact_ranks.h). In every measured step of every run with two ranks or more,
 * the rank with the longest duration was the slowest; a rank that was the slowest in at least
 * CG_STRAGGLER_SHARE_PCT of those steps, with a median step time at least CG_STRAGGLER_MIN_PCT
 * above the median rank's, is a straggler. Durations only, so host clocks need not agree. Pure.
 *
 * "The median rank" (cg_straggler_median_rank) is one rank, not a mean of two, and the same for
 * the straggler rule and the anatomy's rank spread (anatomy.c), so the report's figures agree.
 */
#ifndef CG_STRAGGLER_H
#define CG_STRAGGLER_H

#include "artifact.h"

#include <stddef.h>
#include <stdint.h>

#define CG_STRAGGLER_SHARE_PCT 50.0
#define CG_STRAGGLER_MIN_PCT 2.0

struct cg_straggler {
    int64_t rank;
    char node[64];           /* cut to fit */
    int64_t slowest_steps;   /* steps it was the slowest in */
    int64_t steps;           /* steps compared (of runs with two ranks or more) */
    double over_median_pct;  /* its median step time over the median rank's, in percent */
};

/* The median rank of n ranks (n >= 1) ordered by step time, fastest first: its index, (n - 1) / 2.
 * The middle one of an odd count, the faster of the two middle ones of an even count: with two
 * ranks the slowest is compared with the other one. */
size_t cg_straggler_median_rank(size_t n);

/* Finds the straggler of a: 1 and *s filled, 0 when there is none (or fewer than two ranks or
 * three steps), CG_ENOMEM. */
int cg_straggler_find(const struct cg_artifact *a, struct cg_straggler *s);

#endif
