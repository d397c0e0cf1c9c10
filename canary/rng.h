/*
 * rng: the deterministic random numbers of the canary (corpus, initial weights, gradient-check
 * probes). SplitMix64: tiny, seedable from any 64-bit value, identical on every platform, so a
 * seed names the same corpus and the same initial model on the CPU and CUDA back ends.
 * Header-only; a struct canary_rng belongs to one thread.
 */
#ifndef CANARY_RNG_H
#define CANARY_RNG_H

#include <math.h>
#include <stdint.h>

struct canary_rng {
    uint64_t state;
};

/* Starts a stream from a seed and a stream number (different streams are independent). */
static inline void canary_rng_seed(struct canary_rng *r, uint64_t seed, uint64_t stream)
{
    r->state =
        seed * 0x9E3779B97F4A7C15ull + stream * 0xD1B54A32D192ED03ull + 0x2545F4914F6CDD1Dull;
}

/* Next 64 random bits. */
static inline uint64_t canary_rng_next(struct canary_rng *r)
{
    uint64_t z = (r->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform double in [0, 1). */
static inline double canary_rng_uniform(struct canary_rng *r)
{
    return (double)(canary_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* Uniform integer in [0, n), n > 0 (modulo bias below 2^-32 for the sizes used here). */
static inline uint32_t canary_rng_below(struct canary_rng *r, uint32_t n)
{
    return (uint32_t)(canary_rng_next(r) % n);
}

/* Standard normal sample (Box-Muller, one of the pair). */
static inline double canary_rng_normal(struct canary_rng *r)
{
    double u1 = 1.0 - canary_rng_uniform(r); /* (0, 1] */
    double u2 = canary_rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

#endif
