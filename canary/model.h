/*
 * model: the shape of the canary's transformer, shared by both back ends — where each parameter
 * tensor lives in the one flat parameter array, how the weights start, and how many FLOPs a
 * step costs.
 *
 * Model: token + position embeddings; L blocks of x += proj(attn(ln1(x))), x += fcproj(gelu(fc(
 * ln2(x)))) with causal multi-head self-attention; a final layernorm; a head (its own weights,
 * not tied) to vocab logits; softmax cross-entropy against the next token.
 * Matrices are stored row-major as [in][out] (y = x W + b), so the matrix of a linear layer from
 * K to N channels holds K*N floats. Offsets and counts are in floats. No allocation; pure
 * functions, thread-safe. Included from C and from the CUDA back end.
 */
#ifndef CANARY_MODEL_H
#define CANARY_MODEL_H

#include "config.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The parameter tensors of one block, in storage order. */
enum canary_block_tensor {
    CANARY_LN1_W,
    CANARY_LN1_B,
    CANARY_QKV_W, /* [C][3C]: q, k, v columns, each split into H heads of C/H */
    CANARY_QKV_B,
    CANARY_PROJ_W, /* [C][C] */
    CANARY_PROJ_B,
    CANARY_LN2_W,
    CANARY_LN2_B,
    CANARY_FC_W, /* [C][4C] */
    CANARY_FC_B,
    CANARY_FCPROJ_W, /* [4C][C] */
    CANARY_FCPROJ_B,
    CANARY_BLOCK_TENSORS
};

/* Offsets (in floats) of every tensor in the flat parameter array. */
struct canary_layout {
    size_t wte;    /* [vocab][C] */
    size_t wpe;    /* [seq][C] */
    size_t block0; /* first block's first tensor */
    size_t block_stride;
    size_t in_block[CANARY_BLOCK_TENSORS];
    size_t lnf_w, lnf_b; /* [C] each */
    size_t head_w;       /* [C][vocab] */
    size_t total;        /* number of parameters */
};

/* Computes the layout for dims. */
void canary_layout_init(struct canary_layout *lay, const struct canary_dims *dims);

/* Offset of tensor t of block l. */
size_t canary_layout_block(const struct canary_layout *lay, int l, enum canary_block_tensor t);

/* Number of tensors (5 + 12 per block). */
int canary_layout_tensor_count(const struct canary_dims *dims);

/* Describes tensor i (0 .. count-1): writes its name ("wte", "h0.qkv_w", ...) into name,
 * its offset and element count. Returns 0, or -1 when i is out of range. */
int canary_layout_tensor(const struct canary_layout *lay, const struct canary_dims *dims, int i,
                         char *name, size_t name_size, size_t *offset, size_t *count);

/* Fills params[0 .. lay->total) with the initial weights for seed: normal(0, 0.02) matrices and
 * embeddings (residual projections scaled by 1/sqrt(2L)), layernorm gains 1, biases 0. */
void canary_model_init_params(float *params, const struct canary_layout *lay,
                              const struct canary_dims *dims, uint64_t seed);

/* Model FLOPs of one optimizer step over dims.batch rows: matmuls and causal attention,
 * forward (1x) and backward (2x). Per token that is 6N + 6 L C (T + 1), N = 12 L C^2 + C V the
 * matmul weights (embeddings, biases and layernorms do no matmul): the "tiny" preset 664,320,
 * "small" 121,128,960 (tests/canary/test_canary_train.c computes them by hand). */
double canary_model_step_flops(const struct canary_dims *dims);

/* FLOPs of one extra-work unit: a [rows][C] x [C][4C] matmul. */
double canary_model_extra_unit_flops(const struct canary_dims *dims, long rows);

#ifdef __cplusplus
}
#endif

#endif
