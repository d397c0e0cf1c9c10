/* corpus: the seeded synthetic Markov text of the canary (see corpus.h). */
#include "corpus.h"

#include "rng.h"

#include <stdlib.h>

static const double choice_prob[CANARY_CORPUS_FANOUT] = {0.55, 0.25, 0.12, 0.08};

int canary_corpus_init(struct canary_corpus *c, int vocab, uint64_t seed, struct canary_err *err)
{
    c->vocab = vocab;
    c->seed = seed;
    c->successors = malloc((size_t)vocab * CANARY_CORPUS_FANOUT * sizeof *c->successors);
    if (c->successors == NULL)
        return canary_err_set(err, CANARY_ENOMEM, "out of memory for the corpus table");
    struct canary_rng rng;
    canary_rng_seed(&rng, seed, 0xC0);
    for (int v = 0; v < vocab; v++) {
        int *s = c->successors + (size_t)v * CANARY_CORPUS_FANOUT;
        for (int k = 0; k < CANARY_CORPUS_FANOUT; k++) {
            /* distinct successors when the vocabulary allows it */
            int pick = 0, tries = 0;
            for (;;) {
                pick = (int)canary_rng_below(&rng, (uint32_t)vocab);
                int dup = 0;
                for (int j = 0; j < k; j++)
                    dup |= s[j] == pick;
                if (!dup || ++tries > 8)
                    break;
            }
            s[k] = pick;
        }
    }
    return 0;
}

void canary_corpus_release(struct canary_corpus *c)
{
    free(c->successors);
    c->successors = NULL;
}

void canary_corpus_row(const struct canary_corpus *c, long step, long row, int *tokens, int len)
{
    struct canary_rng rng;
    canary_rng_seed(&rng, c->seed ^ 0xA5A5A5A5ull, ((uint64_t)step << 20) ^ (uint64_t)row);
    int prev2 = (int)canary_rng_below(&rng, (uint32_t)c->vocab);
    int prev1 = (int)canary_rng_below(&rng, (uint32_t)c->vocab);
    for (int i = 0; i < len; i++) {
        int next;
        double u = canary_rng_uniform(&rng);
        if (u < 0.03) {
            next = (int)canary_rng_below(&rng, (uint32_t)c->vocab);
        } else {
            u = (u - 0.03) / 0.97;
            int k = 0;
            double acc = choice_prob[0];
            while (k < CANARY_CORPUS_FANOUT - 1 && u >= acc)
                acc += choice_prob[++k];
            uint32_t rot = ((uint32_t)prev2 * 2654435761u) >> 16;
            int slot = (int)((k + rot) % CANARY_CORPUS_FANOUT);
            next = c->successors[(size_t)prev1 * CANARY_CORPUS_FANOUT + (size_t)slot];
        }
        tokens[i] = next;
        prev2 = prev1;
        prev1 = next;
    }
}
