/*
 * corpus: the canary's synthetic training text, generated from the seed inside the program.
 *
 * The "language" is a second-order Markov chain over vocab tokens with structure a model can
 * learn: every token has CANARY_CORPUS_FANOUT possible successors (fixed by the seed), and the
 * token before it decides how likely each of them is (probabilities 0.55, 0.25, 0.12, 0.08,
 * rotated by a hash of that earlier token); 3% of tokens are uniform noise. A unigram model
 * sits at ln(vocab) nats, a bigram model near ln(4), a model that uses two tokens of context
 * near 1.3 nats. Row r of step s is a pure function of (seed, s, r), so batching and gradient
 * accumulation see the same tokens. A corpus is read-only after init: thread-safe to share.
 */
#ifndef CANARY_CORPUS_H
#define CANARY_CORPUS_H

#include "common.h"

#include <stdint.h>

#define CANARY_CORPUS_FANOUT 4

struct canary_corpus {
    int vocab;
    uint64_t seed;
    int *successors; /* [vocab][FANOUT], owned */
};

/* Builds the successor table for vocab and seed. Release with canary_corpus_release. */
int canary_corpus_init(struct canary_corpus *c, int vocab, uint64_t seed, struct canary_err *err);

/* Frees the table. */
void canary_corpus_release(struct canary_corpus *c);

/* Writes tokens[0 .. len) of row `row` of optimizer step `step` (both counted from 0). */
void canary_corpus_row(const struct canary_corpus *c, long step, long row, int *tokens, int len);

#endif
