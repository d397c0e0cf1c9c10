/*
 * cuda_kernels: the CUDA back end's own kernels (everything but the matrix products, which
 * are cuBLAS calls in cuda_backend.cu), as host launchers on the default stream. Layouts match
 * cpu_kernels.h: row-major, N rows of C channels, attention [B][H][T][T], per-head tensors
 * [B][H][T][C/H]. Reductions are done in a fixed order (no atomics), so results repeat run to
 * run. Launchers only enqueue; errors surface from the next cudaGetLastError/synchronising call.
 */
#ifndef CANARY_CUDA_KERNELS_CUH
#define CANARY_CUDA_KERNELS_CUH

#include <stddef.h>

/* out[i] = bias[i % n] (or 0 when bias is NULL) for an [m][n] matrix. */
void cu_broadcast_rows(float *out, const float *bias, int m, int n);
/* dbias[j] += sum over rows of dout[i][j]. */
void cu_column_sum(float *dbias, const float *dout, int m, int n);
/* out[i] += a[i]. */
void cu_add(float *out, const float *a, size_t n);
/* Token + position embedding of B*T tokens. */
void cu_encoder_forward(float *out, const int *tokens, const float *wte, const float *wpe, int bt,
                        int t, int c);
/* dwte[v] += sum of dout rows whose token is v, visiting bucket_pos[bucket_start[v] ..
 * bucket_start[v+1]) in order; dwpe[t] += sum over batch rows. */
void cu_encoder_backward(float *dwte, float *dwpe, const float *dout, const int *bucket_start,
                         const int *bucket_pos, int vocab, int b, int t, int c);
/* Layernorm of n rows of c (eps 1e-5), saving mean and 1/std. */
void cu_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                          const float *bias, int n, int c);
/* dinp += input gradient; dw, db += parameter gradients. */
void cu_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                           const float *w, const float *mean, const float *rstd, int n, int c);
/* GELU (tanh approximation) of n values. */
void cu_gelu_forward(float *out, const float *inp, size_t n);
/* dinp = dout * GELU'(inp) for n values. */
void cu_gelu_backward(float *dinp, const float *inp, const float *dout, size_t n);
/* qkv [B][T][3C] -> q, k, v [B][H][T][hd]. */
void cu_permute_qkv(float *q, float *k, float *v, const float *qkv, int b, int t, int c, int h);
/* dq, dk, dv [B][H][T][hd] -> dqkv [B][T][3C]. */
void cu_unpermute_qkv(float *dqkv, const float *dq, const float *dk, const float *dv, int b, int t,
                      int c, int h);
/* [B][H][T][hd] -> [B][T][C]. */
void cu_heads_to_rows(float *out, const float *heads, int b, int t, int c, int h);
/* [B][T][C] -> [B][H][T][hd]. */
void cu_rows_to_heads(float *heads, const float *rows, int b, int t, int c, int h);
/* att = causal softmax(scale * preatt) over rows of T (row r is query position r % T). */
void cu_softmax_causal_forward(float *att, const float *preatt, int rows, int t, float scale);
/* dpre (may alias datt) = att * (datt - sum(att * datt)) * scale, 0 above the diagonal. */
void cu_softmax_causal_backward(float *dpre, const float *datt, const float *att, int rows, int t,
                                float scale);
/* Naive unfused attention (slow-attention variant): full T x T scores straight from qkv, a
 * masking pass, a one-thread-per-row softmax, and a weighted sum from qkv into out [B][T][C]. */
void cu_attention_naive_forward(float *out, float *preatt, float *att, const float *qkv, int b,
                                int t, int c, int h);
/* probs (may alias logits) = softmax rows; losses[i] = -log probs[i][targets[i]]. */
void cu_softmax_ce_forward(float *probs, float *losses, const float *logits, const int *targets,
                           int n, int v);
/* dlogits = (probs - onehot) * scale. */
void cu_softmax_ce_backward(float *dlogits, const float *probs, const int *targets, int n, int v,
                            float scale);
/* *acc += mean of losses[0 .. n) (one block, fixed order). */
void cu_loss_accumulate(double *acc, const float *losses, int n);
/* AdamW on n parameters. */
void cu_adamw(float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1,
              float beta2, float eps, float wd, float c1, float c2);

#endif
