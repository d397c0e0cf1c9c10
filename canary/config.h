/*
 * config: what one canary-train run does — model sizes, training length, device, variant — and
 * the named presets. Sizes are counts (tokens, channels, layers); the learning rate is per
 * AdamW step; extra work is a percentage of the step's model FLOPs. No allocation, no I/O;
 * plain values, safe to copy between threads. Included from C and from the CUDA back end.
 */
#ifndef CANARY_CONFIG_H
#define CANARY_CONFIG_H

#include "common.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Model and batch sizes. batch is rows per optimizer step; seq is tokens per row. */
struct canary_dims {
    int vocab;  /* token ids are 0 .. vocab-1 */
    int seq;    /* context length T (also the position-embedding table size) */
    int width;  /* channels C */
    int heads;  /* attention heads H; width % heads == 0 */
    int layers; /* transformer blocks L */
    int batch;  /* rows B per optimizer step */
};

enum canary_device { CANARY_DEVICE_AUTO, CANARY_DEVICE_CPU, CANARY_DEVICE_CUDA };

enum canary_variant {
    CANARY_VARIANT_NONE,
    CANARY_VARIANT_SLOW_ATTENTION, /* unfused, naive attention */
    CANARY_VARIANT_SMALL_BATCH,    /* micro-batch 1, gradients accumulated over batch rows */
    CANARY_VARIANT_EXTRA_SYNC,     /* host round trip per layer (GPU), extra copies (CPU) */
    CANARY_VARIANT_MEM_BLOAT       /* keeps an extra copy of every activation */
};

struct canary_config {
    const char *preset; /* name of the preset the sizes started from (static string) */
    struct canary_dims dims;
    long steps;
    uint64_t seed;
    double lr;
    double weight_decay;
    double extra_work_pct; /* additional matmul work per step, % of the step's model FLOPs */
    long extra_work_every; /* the extra work runs on steps whose number is a multiple of this
                            * (1: every step; 4: steps 4, 8, ...: a periodic regression) */
    long log_every;        /* print the loss every this many steps (first and last always) */
    long inject_nan_at;    /* 0: never; else poison a weight before this step (tests) */
    int threads;           /* CPU threads; 0: OpenMP's default (tiny preset: 1) */
    enum canary_device device;
    enum canary_variant variant;
};

/* Fills cfg with the named preset ("tiny" or "small") and the shared defaults; CANARY_EUSAGE
 * for an unknown name. */
int canary_config_preset(struct canary_config *cfg, const char *name, struct canary_err *err);

/* Checks sizes and values for consistency (CANARY_EUSAGE with the first problem found). */
int canary_config_check(const struct canary_config *cfg, struct canary_err *err);

/* Rows per forward/backward pass: 1 for small-batch, else dims.batch. */
int canary_config_micro_batch(const struct canary_config *cfg);

/* Parses a variant name ("none", "slow-attention", ...); CANARY_EUSAGE if unknown. */
int canary_variant_parse(const char *name, enum canary_variant *out, struct canary_err *err);

/* The variant's name as accepted by --variant (static string). */
const char *canary_variant_name(enum canary_variant v);

/* Parses "auto", "cpu" or "cuda"; CANARY_EUSAGE if unknown. */
int canary_device_parse(const char *name, enum canary_device *out, struct canary_err *err);

#ifdef __cplusplus
}
#endif

#endif
