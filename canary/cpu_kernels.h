/*
 * cpu_kernels: the CPU back end's operators and model, compiled twice from one source
 * (cpu_ops.inc, cpu_model.inc): in float (cpu_f32.c, used for training) and in double
 * (cpu_f64.c, used by the numerical gradient check, so the check tests the very code that
 * trains). Names end in _f32 or _f64.
 *
 * Layouts are row-major. N rows of C channels; matrices [in][out]; attention probabilities
 * [B][H][T][T]; qkv rows hold q (C), k (C), v (C), each split into H heads of C/H.
 * Backward functions accumulate (+=) into parameter gradients; input gradients are overwritten
 * unless the prototype says "adds". Parallel loops (OpenMP, when built with it) partition
 * outputs so every element is summed by one thread in a fixed order: results do not depend on
 * the thread count. Not reentrant on one model; separate models are independent.
 */
#ifndef CANARY_CPU_KERNELS_H
#define CANARY_CPU_KERNELS_H

#include "common.h"
#include "config.h"

#include <stddef.h>

/* Flags of canary_cpu_model_new_*: the regression variants that change the CPU work. */
#define CANARY_CPU_NAIVE_ATTENTION 1u /* unfused attention over the full T x T */
#define CANARY_CPU_EXTRA_COPIES 2u    /* copy each block's activations out and back */
#define CANARY_CPU_KEEP_COPIES 4u     /* keep a second copy of all activations */

#define CANARY_CPU_DECLARE(real, sfx)                                                              \
    /* C[M][N] = (accumulate ? C : 0) + A[M][K] B[K][N]. */                                        \
    void canary_cpu_gemm_##sfx(real *c, const real *a, const real *b, int m, int n, int k,         \
                               int accumulate);                                                    \
    /* out[M][N] = inp[M][K] w[K][N] + bias (bias may be NULL). */                                 \
    void canary_cpu_matmul_forward_##sfx(real *out, const real *inp, const real *w,                \
                                         const real *bias, int m, int k, int n);                   \
    /* dinp = dout w^T (skipped if NULL); dw += inp^T dout; dbias += column sums (if not NULL). */ \
    /* scratch holds max(K*N, M*K) values. */                                                      \
    void canary_cpu_matmul_backward_##sfx(real *dinp, real *dw, real *dbias, const real *dout,     \
                                          const real *inp, const real *w, int m, int k, int n,     \
                                          real *scratch);                                          \
    /* Layernorm over C channels of N rows, eps 1e-5; saves each row's mean and 1/std. */          \
    void canary_cpu_layernorm_forward_##sfx(real *out, real *mean, real *rstd, const real *inp,    \
                                            const real *w, const real *b, int n, int c);           \
    /* Adds the input gradient to dinp; dw, db += parameter gradients. */                          \
    void canary_cpu_layernorm_backward_##sfx(real *dinp, real *dw, real *db, const real *dout,     \
                                             const real *inp, const real *w, const real *mean,     \
                                             const real *rstd, int n, int c);                      \
    /* GELU, tanh approximation, elementwise over n values. */                                     \
    void canary_cpu_gelu_forward_##sfx(real *out, const real *inp, size_t n);                      \
    void canary_cpu_gelu_backward_##sfx(real *dinp, const real *inp, const real *dout, size_t n);  \
    /* out[b][t] = wte[tokens[b][t]] + wpe[t] for B rows of T tokens. */                           \
    void canary_cpu_encoder_forward_##sfx(real *out, const int *tokens, const real *wte,           \
                                          const real *wpe, int b, int t, int c);                   \
    /* dwte, dwpe += the gradients of the embedding lookups. */                                    \
    void canary_cpu_encoder_backward_##sfx(real *dwte, real *dwpe, const real *dout,               \
                                           const int *tokens, int b, int t, int c);                \
    /* Causal attention, fused per query row. scratch: 2*B*T*C values. */                          \
    void canary_cpu_attention_forward_##sfx(real *out, real *att, const real *qkv, int b, int t,   \
                                            int c, int h, real *scratch);                          \
    /* dqkv = gradient of qkv. scratch: 4*B*T*C + B*H*T values. */                                 \
    void canary_cpu_attention_backward_##sfx(real *dqkv, const real *dout, const real *qkv,        \
                                             const real *att, int b, int t, int c, int h,          \
                                             real *scratch);                                       \
    /* Unfused attention: full T x T scores in preatt, separate mask/softmax/sum passes. */        \
    void canary_cpu_attention_forward_naive_##sfx(real *out, real *preatt, real *att,              \
                                                  const real *qkv, int b, int t, int c, int h);    \
    /* Unfused backward over the full T x T; datt holds B*H*T*T values. */                         \
    void canary_cpu_attention_backward_naive_##sfx(real *dqkv, real *datt, const real *dout,       \
                                                   const real *qkv, const real *att, int b, int t, \
                                                   int c, int h);                                  \
    /* probs (may alias logits) = softmax of N rows of V logits; losses[i] = -log p[target]. */    \
    void canary_cpu_softmax_ce_forward_##sfx(real *probs, real *losses, const real *logits,        \
                                             const int *targets, int n, int v);                    \
    /* dlogits = (probs - onehot(target)) * scale. */                                              \
    void canary_cpu_softmax_ce_backward_##sfx(real *dlogits, const real *probs,                    \
                                              const int *targets, int n, int v, real scale);       \
    /* The whole model for one micro-batch of dims->batch rows (opaque). */                        \
    struct canary_cpu_model_##sfx;                                                                 \
    /* Allocates a model with zeroed parameters and gradients; flags: CANARY_CPU_*. NULL and */    \
    /* err filled on failure. Free with canary_cpu_model_free_*. */                                \
    struct canary_cpu_model_##sfx *canary_cpu_model_new_##sfx(                                     \
        const struct canary_dims *dims, unsigned flags, struct canary_err *err);                   \
    /* Frees the model and everything it owns; NULL is fine. */                                    \
    void canary_cpu_model_free_##sfx(struct canary_cpu_model_##sfx *m);                            \
    /* The parameter and gradient arrays (layout of model.h), owned by the model. */               \
    real *canary_cpu_model_params_##sfx(struct canary_cpu_model_##sfx *m);                         \
    real *canary_cpu_model_grads_##sfx(struct canary_cpu_model_##sfx *m);                          \
    /* Bytes of activation memory (kept copies included). */                                       \
    size_t canary_cpu_model_activation_bytes_##sfx(const struct canary_cpu_model_##sfx *m);        \
    /* Forward pass over B rows of T tokens; returns the mean cross-entropy (nats). */             \
    double canary_cpu_model_forward_##sfx(struct canary_cpu_model_##sfx *m, const int *inputs,     \
                                          const int *targets);                                     \
    /* Backward pass after forward; adds grad_scale * d(sum of token losses) to the gradients. */  \
    void canary_cpu_model_backward_##sfx(struct canary_cpu_model_##sfx *m, const int *inputs,      \
                                         const int *targets, double grad_scale);

CANARY_CPU_DECLARE(float, f32)
CANARY_CPU_DECLARE(double, f64)

#endif
