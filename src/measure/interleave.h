/*
 * interleave: two sides measured turn about on one machine, for 'canary-gate aa' and
 * 'canary-gate ab'.
 *
 * Pair k runs side A then side B when k is even and B then A when k is odd (A B B A A B ...), so
 * a drift that is linear over a pair of pairs weighs on both sides alike, and run k of each side
 * forms pair k. Progress lines come from the collectors (their say). Single-threaded.
 */
#ifndef CG_INTERLEAVE_H
#define CG_INTERLEAVE_H

#include "artifact.h"
#include "collect.h"
#include "err.h"

#include <stdbool.h>

/* Runs n pairs: collector ca appends to a, cb to b (ca and cb may be the same collector), A first
 * in pairs of even index counting a's runs so far, B first in odd ones (A B B A ...). On failure
 * the runs completed stay in a and b and the collector's error is returned. */
int cg_interleave_run(struct cg_collector *ca, struct cg_artifact *a, struct cg_collector *cb,
                      struct cg_artifact *b, long n, struct cg_err *err);

/* After cg_interleave_run failed on a and b, which held as many runs when it began: true when
 * the run that failed was side a's (the failed run is in neither; pair k's first side is a when
 * a's runs before it are even in number, as cg_interleave_run orders them). */
bool cg_interleave_failed_a(const struct cg_artifact *a, const struct cg_artifact *b);

/* Appends the runs of a and b to pool in the order they were measured (a0 b0 b1 a1 a2 b2 ...),
 * copying a's header when pool is empty. 0 or CG_ENOMEM. */
int cg_interleave_pool(const struct cg_artifact *a, const struct cg_artifact *b,
                       struct cg_artifact *pool);

#endif
