/*
 * cuda_kernels: the CUDA back end's own kernels and their launchers (see cuda_kernels.cuh).
 * Row operations use one warp per row; column reductions one thread per column looping over
 * rows in order; the loss one block with a fixed tree. Default stream, no synchronisation.
 */
#include "cuda_kernels.cuh"

#include <cuda_runtime.h>
#include <math.h>

#define THREADS 256
#define WARPS_PER_BLOCK (THREADS / 32)

static unsigned blocks_for(size_t n, unsigned per)
{
    return (unsigned)((n + per - 1) / per);
}

__device__ static float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ static float warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* Sum (is_max 0) or max (is_max 1) over the block; every thread gets the result. */
__device__ static float block_reduce(float v, int is_max, float *shared)
{
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = blockDim.x / 32;
    v = is_max ? warp_max(v) : warp_sum(v);
    __syncthreads();
    if (lane == 0)
        shared[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float x = lane < nwarps ? shared[lane] : (is_max ? -INFINITY : 0.0f);
        x = is_max ? warp_max(x) : warp_sum(x);
        if (lane == 0)
            shared[0] = x;
    }
    __syncthreads();
    return shared[0];
}

__global__ static void broadcast_rows_kernel(float *out, const float *bias, int m, int n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (size_t)m * n)
        out[i] = bias != NULL ? bias[i % n] : 0.0f;
}

void cu_broadcast_rows(float *out, const float *bias, int m, int n)
{
    broadcast_rows_kernel<<<blocks_for((size_t)m * n, THREADS), THREADS>>>(out, bias, m, n);
}

__global__ static void column_sum_kernel(float *dbias, const float *dout, int m, int n)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n)
        return;
    float s = 0.0f;
    for (int i = 0; i < m; i++)
        s += dout[(size_t)i * n + j];
    dbias[j] += s;
}

void cu_column_sum(float *dbias, const float *dout, int m, int n)
{
    column_sum_kernel<<<blocks_for((size_t)n, THREADS), THREADS>>>(dbias, dout, m, n);
}

__global__ static void add_kernel(float *out, const float *a, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] += a[i];
}

void cu_add(float *out, const float *a, size_t n)
{
    add_kernel<<<blocks_for(n, THREADS), THREADS>>>(out, a, n);
}

__global__ static void encoder_forward_kernel(float *out, const int *tokens, const float *wte,
                                              const float *wpe, int bt, int t, int c)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)bt * c)
        return;
    int row = (int)(i / c), j = (int)(i % c);
    out[i] = wte[(size_t)tokens[row] * c + j] + wpe[(size_t)(row % t) * c + j];
}

void cu_encoder_forward(float *out, const int *tokens, const float *wte, const float *wpe, int bt,
                        int t, int c)
{
    encoder_forward_kernel<<<blocks_for((size_t)bt * c, THREADS), THREADS>>>(out, tokens, wte, wpe,
                                                                             bt, t, c);
}

__global__ static void wte_backward_kernel(float *dwte, const float *dout, const int *start,
                                           const int *pos, int vocab, int c)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)vocab * c)
        return;
    int v = (int)(i / c), j = (int)(i % c);
    float s = 0.0f;
    for (int p = start[v]; p < start[v + 1]; p++)
        s += dout[(size_t)pos[p] * c + j];
    dwte[i] += s;
}

__global__ static void wpe_backward_kernel(float *dwpe, const float *dout, int b, int t, int c)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)t * c)
        return;
    float s = 0.0f;
    for (int bi = 0; bi < b; bi++)
        s += dout[(size_t)bi * t * c + i];
    dwpe[i] += s;
}

void cu_encoder_backward(float *dwte, float *dwpe, const float *dout, const int *bucket_start,
                         const int *bucket_pos, int vocab, int b, int t, int c)
{
    wte_backward_kernel<<<blocks_for((size_t)vocab * c, THREADS), THREADS>>>(
        dwte, dout, bucket_start, bucket_pos, vocab, c);
    wpe_backward_kernel<<<blocks_for((size_t)t * c, THREADS), THREADS>>>(dwpe, dout, b, t, c);
}

__global__ static void layernorm_forward_kernel(float *out, float *mean, float *rstd,
                                                const float *inp, const float *w, const float *b,
                                                int n, int c)
{
    int row = blockIdx.x * WARPS_PER_BLOCK + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= n)
        return;
    const float *x = inp + (size_t)row * c;
    float s = 0.0f;
    for (int j = lane; j < c; j += 32)
        s += x[j];
    float mu = warp_sum(s) / c;
    float var = 0.0f;
    for (int j = lane; j < c; j += 32)
        var += (x[j] - mu) * (x[j] - mu);
    float r = 1.0f / sqrtf(warp_sum(var) / c + 1e-5f);
    float *y = out + (size_t)row * c;
    for (int j = lane; j < c; j += 32)
        y[j] = (x[j] - mu) * r * w[j] + b[j];
    if (lane == 0) {
        mean[row] = mu;
        rstd[row] = r;
    }
}

void cu_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                          const float *bias, int n, int c)
{
    layernorm_forward_kernel<<<blocks_for((size_t)n, WARPS_PER_BLOCK), THREADS>>>(
        out, mean, rstd, inp, w, bias, n, c);
}

__global__ static void layernorm_backward_dx_kernel(float *dinp, const float *dout,
                                                    const float *inp, const float *w,
                                                    const float *mean, const float *rstd, int n,
                                                    int c)
{
    int row = blockIdx.x * WARPS_PER_BLOCK + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= n)
        return;
    const float *x = inp + (size_t)row * c, *dy = dout + (size_t)row * c;
    float mu = mean[row], r = rstd[row];
    float a = 0.0f, bsum = 0.0f;
    for (int j = lane; j < c; j += 32) {
        float dnorm = w[j] * dy[j];
        a += dnorm;
        bsum += dnorm * (x[j] - mu) * r;
    }
    a = warp_sum(a) / c;
    bsum = warp_sum(bsum) / c;
    float *dx = dinp + (size_t)row * c;
    for (int j = lane; j < c; j += 32) {
        float norm = (x[j] - mu) * r;
        dx[j] += r * (w[j] * dy[j] - a - norm * bsum);
    }
}

__global__ static void layernorm_backward_dw_kernel(float *dw, float *db, const float *dout,
                                                    const float *inp, const float *mean,
                                                    const float *rstd, int n, int c)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= c)
        return;
    float sw = 0.0f, sb = 0.0f;
    for (int i = 0; i < n; i++) {
        float dy = dout[(size_t)i * c + j];
        sw += (inp[(size_t)i * c + j] - mean[i]) * rstd[i] * dy;
        sb += dy;
    }
    dw[j] += sw;
    db[j] += sb;
}

void cu_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                           const float *w, const float *mean, const float *rstd, int n, int c)
{
    layernorm_backward_dx_kernel<<<blocks_for((size_t)n, WARPS_PER_BLOCK), THREADS>>>(
        dinp, dout, inp, w, mean, rstd, n, c);
    layernorm_backward_dw_kernel<<<blocks_for((size_t)c, THREADS), THREADS>>>(dw, db, dout, inp,
                                                                              mean, rstd, n, c);
}

#define GELU_K 0.7978845608028654f

__global__ static void gelu_forward_kernel(float *out, const float *inp, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float x = inp[i];
    out[i] = 0.5f * x * (1.0f + tanhf(GELU_K * (x + 0.044715f * x * x * x)));
}

__global__ static void gelu_backward_kernel(float *dinp, const float *inp, const float *dout,
                                            size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float x = inp[i];
    float th = tanhf(GELU_K * (x + 0.044715f * x * x * x));
    float du = GELU_K * (1.0f + 3.0f * 0.044715f * x * x);
    dinp[i] = dout[i] * (0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du);
}

void cu_gelu_forward(float *out, const float *inp, size_t n)
{
    gelu_forward_kernel<<<blocks_for(n, THREADS), THREADS>>>(out, inp, n);
}

void cu_gelu_backward(float *dinp, const float *inp, const float *dout, size_t n)
{
    gelu_backward_kernel<<<blocks_for(n, THREADS), THREADS>>>(dinp, inp, dout, n);
}

/* Index helpers for [B][H][T][hd] element i: the matching offset in a [B][T][stride] row. */
__device__ static size_t head_to_row(size_t i, int t, int c, int h, int stride)
{
    int hd = c / h;
    int e = (int)(i % hd);
    size_t r = i / hd;
    int ti = (int)(r % t);
    r /= t;
    int hi = (int)(r % h);
    size_t bi = r / h;
    return (bi * t + ti) * (size_t)stride + (size_t)hi * hd + e;
}

__global__ static void permute_qkv_kernel(float *q, float *k, float *v, const float *qkv,
                                          size_t total, int t, int c, int h)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total)
        return;
    size_t src = head_to_row(i, t, c, h, 3 * c);
    q[i] = qkv[src];
    k[i] = qkv[src + c];
    v[i] = qkv[src + 2 * (size_t)c];
}

void cu_permute_qkv(float *q, float *k, float *v, const float *qkv, int b, int t, int c, int h)
{
    size_t total = (size_t)b * t * c;
    permute_qkv_kernel<<<blocks_for(total, THREADS), THREADS>>>(q, k, v, qkv, total, t, c, h);
}

__global__ static void unpermute_qkv_kernel(float *dqkv, const float *dq, const float *dk,
                                            const float *dv, size_t total, int t, int c, int h)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total)
        return;
    size_t dst = head_to_row(i, t, c, h, 3 * c);
    dqkv[dst] = dq[i];
    dqkv[dst + c] = dk[i];
    dqkv[dst + 2 * (size_t)c] = dv[i];
}

void cu_unpermute_qkv(float *dqkv, const float *dq, const float *dk, const float *dv, int b, int t,
                      int c, int h)
{
    size_t total = (size_t)b * t * c;
    unpermute_qkv_kernel<<<blocks_for(total, THREADS), THREADS>>>(dqkv, dq, dk, dv, total, t, c, h);
}

__global__ static void heads_rows_kernel(float *rows, float *heads, size_t total, int t, int c,
                                         int h, int to_rows)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total)
        return;
    size_t r = head_to_row(i, t, c, h, c);
    if (to_rows)
        rows[r] = heads[i];
    else
        heads[i] = rows[r];
}

void cu_heads_to_rows(float *out, const float *heads, int b, int t, int c, int h)
{
    size_t total = (size_t)b * t * c;
    heads_rows_kernel<<<blocks_for(total, THREADS), THREADS>>>(out, (float *)heads, total, t, c, h,
                                                               1);
}

void cu_rows_to_heads(float *heads, const float *rows, int b, int t, int c, int h)
{
    size_t total = (size_t)b * t * c;
    heads_rows_kernel<<<blocks_for(total, THREADS), THREADS>>>((float *)rows, heads, total, t, c, h,
                                                               0);
}

__global__ static void softmax_causal_forward_kernel(float *att, const float *preatt, int rows,
                                                     int t, float scale)
{
    int row = blockIdx.x * WARPS_PER_BLOCK + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= rows)
        return;
    int ti = row % t;
    const float *x = preatt + (size_t)row * t;
    float *y = att + (size_t)row * t;
    float mx = -INFINITY;
    for (int j = lane; j <= ti; j += 32)
        mx = fmaxf(mx, x[j] * scale);
    mx = warp_max(mx);
    float s = 0.0f;
    for (int j = lane; j <= ti; j += 32)
        s += expf(x[j] * scale - mx);
    float inv = 1.0f / warp_sum(s);
    for (int j = lane; j < t; j += 32)
        y[j] = j <= ti ? expf(x[j] * scale - mx) * inv : 0.0f;
}

void cu_softmax_causal_forward(float *att, const float *preatt, int rows, int t, float scale)
{
    softmax_causal_forward_kernel<<<blocks_for((size_t)rows, WARPS_PER_BLOCK), THREADS>>>(
        att, preatt, rows, t, scale);
}

__global__ static void softmax_causal_backward_kernel(float *dpre, const float *datt,
                                                      const float *att, int rows, int t,
                                                      float scale)
{
    int row = blockIdx.x * WARPS_PER_BLOCK + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= rows)
        return;
    int ti = row % t;
    const float *a = att + (size_t)row * t, *d = datt + (size_t)row * t;
    float dot = 0.0f;
    for (int j = lane; j <= ti; j += 32)
        dot += a[j] * d[j];
    dot = warp_sum(dot);
    float *out = dpre + (size_t)row * t;
    for (int j = lane; j < t; j += 32)
        out[j] = j <= ti ? a[j] * (d[j] - dot) * scale : 0.0f;
}

void cu_softmax_causal_backward(float *dpre, const float *datt, const float *att, int rows, int t,
                                float scale)
{
    softmax_causal_backward_kernel<<<blocks_for((size_t)rows, WARPS_PER_BLOCK), THREADS>>>(
        dpre, datt, att, rows, t, scale);
}

__global__ static void naive_scores_kernel(float *preatt, const float *qkv, int b, int t, int c,
                                           int h, float scale)
{
    size_t r = (size_t)blockIdx.x * blockDim.x + threadIdx.x; /* (b, h, t) */
    if (r >= (size_t)b * h * t)
        return;
    int hd = c / h, ti = (int)(r % t), hi = (int)((r / t) % h);
    size_t bi = r / ((size_t)t * h);
    const float *q = qkv + (bi * t + ti) * 3 * (size_t)c + (size_t)hi * hd;
    for (int t2 = 0; t2 < t; t2++) {
        const float *k = qkv + (bi * t + t2) * 3 * (size_t)c + c + (size_t)hi * hd;
        float s = 0.0f;
        for (int i = 0; i < hd; i++)
            s += q[i] * k[i];
        preatt[r * t + t2] = s * scale;
    }
}

__global__ static void naive_mask_kernel(float *preatt, size_t total, int t)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total)
        return;
    int t2 = (int)(i % t), ti = (int)((i / t) % t);
    if (t2 > ti)
        preatt[i] = -INFINITY;
}

__global__ static void naive_softmax_kernel(float *att, const float *preatt, size_t rows, int t)
{
    size_t r = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows)
        return;
    const float *x = preatt + r * t;
    float *y = att + r * t;
    float mx = -INFINITY, s = 0.0f;
    for (int j = 0; j < t; j++)
        mx = fmaxf(mx, x[j]);
    for (int j = 0; j < t; j++) {
        y[j] = expf(x[j] - mx);
        s += y[j];
    }
    for (int j = 0; j < t; j++)
        y[j] /= s;
}

__global__ static void naive_av_kernel(float *out, const float *att, const float *qkv, int b, int t,
                                       int c, int h)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; /* (b, t, channel) */
    if (i >= (size_t)b * t * c)
        return;
    int hd = c / h, ch = (int)(i % c), ti = (int)((i / c) % t);
    size_t bi = i / ((size_t)c * t);
    const float *a = att + ((bi * h + ch / hd) * t + ti) * (size_t)t;
    float s = 0.0f;
    for (int t2 = 0; t2 < t; t2++)
        s += a[t2] * qkv[(bi * t + t2) * 3 * (size_t)c + 2 * (size_t)c + ch];
    out[i] = s;
}

void cu_attention_naive_forward(float *out, float *preatt, float *att, const float *qkv, int b,
                                int t, int c, int h)
{
    size_t rows = (size_t)b * h * t;
    float scale = 1.0f / sqrtf((float)(c / h));
    naive_scores_kernel<<<blocks_for(rows, 64), 64>>>(preatt, qkv, b, t, c, h, scale);
    naive_mask_kernel<<<blocks_for(rows * t, THREADS), THREADS>>>(preatt, rows * t, t);
    naive_softmax_kernel<<<blocks_for(rows, 64), 64>>>(att, preatt, rows, t);
    naive_av_kernel<<<blocks_for((size_t)b * t * c, THREADS), THREADS>>>(out, att, qkv, b, t, c, h);
}

__global__ static void softmax_ce_forward_kernel(float *probs, float *losses, const float *logits,
                                                 const int *targets, int v)
{
    __shared__ float shared[32];
    __shared__ float target_logit;
    size_t row = blockIdx.x;
    const float *x = logits + row * v;
    float *p = probs + row * v;
    if (threadIdx.x == 0)
        target_logit = x[targets[row]]; /* before probs overwrite logits */
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < v; j += blockDim.x)
        mx = fmaxf(mx, x[j]);
    mx = block_reduce(mx, 1, shared);
    float s = 0.0f;
    for (int j = threadIdx.x; j < v; j += blockDim.x)
        s += expf(x[j] - mx);
    s = block_reduce(s, 0, shared); /* its barriers also publish target_logit */
    float inv = 1.0f / s;
    for (int j = threadIdx.x; j < v; j += blockDim.x)
        p[j] = expf(x[j] - mx) * inv;
    if (threadIdx.x == 0)
        losses[row] = logf(s) - (target_logit - mx);
}

void cu_softmax_ce_forward(float *probs, float *losses, const float *logits, const int *targets,
                           int n, int v)
{
    softmax_ce_forward_kernel<<<(unsigned)n, THREADS>>>(probs, losses, logits, targets, v);
}

__global__ static void softmax_ce_backward_kernel(float *dlogits, const float *probs,
                                                  const int *targets, size_t total, int v,
                                                  float scale)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total)
        return;
    size_t row = i / v;
    int j = (int)(i % v);
    dlogits[i] = probs[i] * scale - (j == targets[row] ? scale : 0.0f);
}

void cu_softmax_ce_backward(float *dlogits, const float *probs, const int *targets, int n, int v,
                            float scale)
{
    size_t total = (size_t)n * v;
    softmax_ce_backward_kernel<<<blocks_for(total, THREADS), THREADS>>>(dlogits, probs, targets,
                                                                        total, v, scale);
}

__global__ static void loss_accumulate_kernel(double *acc, const float *losses, int n)
{
    __shared__ double s[THREADS];
    double v = 0.0;
    for (int i = threadIdx.x; i < n; i += THREADS)
        v += losses[i];
    s[threadIdx.x] = v;
    __syncthreads();
    for (int half = THREADS / 2; half > 0; half /= 2) {
        if ((int)threadIdx.x < half)
            s[threadIdx.x] += s[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        *acc += s[0] / n;
}

void cu_loss_accumulate(double *acc, const float *losses, int n)
{
    loss_accumulate_kernel<<<1, THREADS>>>(acc, losses, n);
}

__global__ static void adamw_kernel(float *p, const float *g, float *m, float *v, size_t n,
                                    float lr, float beta1, float beta2, float eps, float wd,
                                    float c1, float c2)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float gi = g[i];
    float mi = beta1 * m[i] + (1.0f - beta1) * gi;
    float vi = beta2 * v[i] + (1.0f - beta2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    p[i] -= lr * ((mi / c1) / (sqrtf(vi / c2) + eps) + wd * p[i]);
}

void cu_adamw(float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1,
              float beta2, float eps, float wd, float c1, float c2)
{
    adamw_kernel<<<blocks_for(n, THREADS), THREADS>>>(p, g, m, v, n, lr, beta1, beta2, eps, wd, c1,
                                                      c2);
}
