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

/* Appends the runs of a and b to pool in the order they were measured (a0 b0 b1 a1 a2 b2 ...),
 * copying a's header when pool is empty. 0 or CG_ENOMEM. */
int cg_interleave_pool(const struct cg_artifact *a, const struct cg_artifact *b,
                       struct cg_artifact *pool);

#endif
