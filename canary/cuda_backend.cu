/*
 * cuda_backend: the CUDA back end of canary-train — the same model as the CPU back end
 * (model.h), with the matrix products (linear layers, attention scores and weighted sums) on
 * cuBLAS in FP32 and everything else in this project's kernels (cuda_kernels.cu). Parameters,
 * gradients, AdamW moments and activations live in device memory; tokens are copied in per
 * micro-batch. All work goes to the default stream; step_loss and sync wait for it. Every
 * CUDA/cuBLAS call is checked and reported as "<file>:<line>: <call>: <error>". One thread.
 * Built into the module libcanary-train-cuda.so, which canary-train loads with dlopen
 * (cuda_loader.c); it exports only canary_cuda_module_ops and canary_cuda_module_probe.
 */
#include "backend.h"
#include "canary_nvtx.h"
#include "cuda_kernels.cuh"
#include "model.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CU_CHECK(call)                                                                             \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess)                                                                     \
            return canary_err_set(                                                                 \
                err, e_ == cudaErrorMemoryAllocation ? CANARY_ENOMEM : CANARY_ERUNTIME,            \
                "%s:%d: %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(e_));               \
    } while (0)

#define BLAS_CHECK(call)                                                                           \
    do {                                                                                           \
        cublasStatus_t s_ = (call);                                                                \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                                           \
            return canary_err_set(err, CANARY_ERUNTIME, "%s:%d: %s: %s", __FILE__, __LINE__,       \
                                  #call, cublasGetStatusString(s_));                               \
    } while (0)

/* Activations of one block (pointers into the device arena). */
struct block_acts {
    float *ln1, *ln1_mean, *ln1_rstd, *qkv, *att, *atty, *res1;
    float *ln2, *ln2_mean, *ln2_rstd, *fch, *fch_gelu, *res2;
};

struct canary_backend {
    struct canary_dims dims; /* batch = rows per optimizer step */
    int bm;                  /* rows per forward/backward pass */
    enum canary_variant variant;
    struct canary_layout lay;
    cublasHandle_t blas;
    float *params, *grads, *m, *v;
    float *arena, *keep;
    size_t arena_count, block_count;
    float *x0, *lnf, *lnf_mean, *lnf_rstd, *probs, *losses;
    float *scratch;
    float *d_res, *d_ln, *d_atty, *d_qkv, *d_fch, *d_fch_gelu, *d_logits;
    float *q, *k, *vv, *heads, *patt, *dq, *dk, *dv;
    int *tokens, *targets, *bucket_start, *bucket_pos; /* device */
    int *h_bucket_start, *h_bucket_pos;                /* host */
    double *loss_acc;
    int loss_count;
    float *extra_a, *extra_w, *extra_c;
    char description[320];
};

/* Row-major C[M][N] = op(A) op(B) (+ beta C) for `batch` matrices at the given strides; ld* are
 * the row lengths of the stored matrices. cuBLAS is column-major: compute C^T = op(B)^T op(A)^T. */
static cublasStatus_t gemm_rm(cublasHandle_t h, bool ta, bool tb, int m, int n, int k,
                              const float *a, int lda, long long sa, const float *b, int ldb,
                              long long sb, float beta, float *c, int ldc, long long sc, int batch)
{
    const float one = 1.0f;
    return cublasSgemmStridedBatched(h, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                     ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &one, b, ldb, sb, a,
                                     lda, sa, &beta, c, ldc, sc, batch);
}

static int dev_alloc(float **p, size_t count, struct canary_err *err)
{
    CU_CHECK(cudaMalloc((void **)p, (count > 0 ? count : 1) * sizeof(float)));
    CU_CHECK(cudaMemset(*p, 0, (count > 0 ? count : 1) * sizeof(float)));
    return 0;
}

static struct block_acts block_at(const struct canary_backend *be, int l)
{
    const struct canary_dims *d = &be->dims;
    size_t n = (size_t)be->bm * d->seq, c = (size_t)d->width;
    size_t att = (size_t)be->bm * d->heads * d->seq * d->seq;
    float *p = be->arena + n * c + (size_t)l * be->block_count;
    struct block_acts a;
    a.ln1 = p, p += n * c;
    a.ln1_mean = p, p += n;
    a.ln1_rstd = p, p += n;
    a.qkv = p, p += n * 3 * c;
    a.att = p, p += att;
    a.atty = p, p += n * c;
    a.res1 = p, p += n * c;
    a.ln2 = p, p += n * c;
    a.ln2_mean = p, p += n;
    a.ln2_rstd = p, p += n;
    a.fch = p, p += n * 4 * c;
    a.fch_gelu = p, p += n * 4 * c;
    a.res2 = p;
    return a;
}

static float *param(const struct canary_backend *be, float *base, int l, enum canary_block_tensor t)
{
    return base + canary_layout_block(&be->lay, l, t);
}

extern "C" __attribute__((visibility("default"))) int canary_cuda_module_probe(char *why,
                                                                               size_t why_size)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        snprintf(why, why_size, "cudaGetDeviceCount: %s", cudaGetErrorString(e));
        cudaGetLastError(); /* clear the sticky-free error */
        return 0;
    }
    if (count < 1) {
        snprintf(why, why_size, "cudaGetDeviceCount found no device");
        return 0;
    }
    return 1;
}

static void cu_destroy(struct canary_backend *be)
{
    if (be == NULL)
        return;
    if (be->blas != NULL)
        cublasDestroy(be->blas);
    float *bufs[] = {be->params, be->grads,   be->m,       be->v,       be->arena,
                     be->keep,   be->scratch, be->extra_a, be->extra_w, be->extra_c};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i] != NULL)
            cudaFree(bufs[i]);
    int *ibufs[] = {be->tokens, be->targets, be->bucket_start, be->bucket_pos};
    for (size_t i = 0; i < sizeof ibufs / sizeof ibufs[0]; i++)
        if (ibufs[i] != NULL)
            cudaFree(ibufs[i]);
    if (be->loss_acc != NULL)
        cudaFree(be->loss_acc);
    free(be->h_bucket_start);
    free(be->h_bucket_pos);
    free(be);
}

static int create_buffers(struct canary_backend *be, const float *params, struct canary_err *err)
{
    const struct canary_dims *d = &be->dims;
    size_t n = (size_t)be->bm * d->seq, c = (size_t)d->width, v = (size_t)d->vocab;
    size_t att = (size_t)be->bm * d->heads * d->seq * d->seq;
    size_t total = be->lay.total;
    int rc = 0;
    if ((rc = dev_alloc(&be->params, total, err)) != 0 ||
        (rc = dev_alloc(&be->grads, total, err)) != 0 ||
        (rc = dev_alloc(&be->m, total, err)) != 0 || (rc = dev_alloc(&be->v, total, err)) != 0)
        return rc;
    CU_CHECK(cudaMemcpy(be->params, params, total * sizeof(float), cudaMemcpyHostToDevice));
    be->block_count = n * c * 5 + n * 4 + n * 3 * c + n * 8 * c + att;
    be->arena_count = n * c + be->block_count * (size_t)d->layers + n * c + 2 * n + n * v + n;
    if ((rc = dev_alloc(&be->arena, be->arena_count, err)) != 0)
        return rc;
    if (be->variant == CANARY_VARIANT_MEM_BLOAT &&
        (rc = dev_alloc(&be->keep, be->arena_count, err)) != 0)
        return rc;
    float *p = be->arena + n * c + be->block_count * (size_t)d->layers;
    be->x0 = be->arena;
    be->lnf = p, p += n * c;
    be->lnf_mean = p, p += n;
    be->lnf_rstd = p, p += n;
    be->probs = p, p += n * v;
    be->losses = p;
    size_t scratch = n * c * 3 + n * 3 * c + n * 8 * c + n * v + 7 * n * c + att;
    if ((rc = dev_alloc(&be->scratch, scratch, err)) != 0)
        return rc;
    p = be->scratch;
    be->d_res = p, p += n * c;
    be->d_ln = p, p += n * c;
    be->d_atty = p, p += n * c;
    be->d_qkv = p, p += n * 3 * c;
    be->d_fch = p, p += n * 4 * c;
    be->d_fch_gelu = p, p += n * 4 * c;
    be->d_logits = p, p += n * v;
    be->q = p, p += n * c;
    be->k = p, p += n * c;
    be->vv = p, p += n * c;
    be->heads = p, p += n * c;
    be->dq = p, p += n * c;
    be->dk = p, p += n * c;
    be->dv = p, p += n * c;
    be->patt = p;
    CU_CHECK(cudaMalloc((void **)&be->tokens, n * sizeof(int)));
    CU_CHECK(cudaMalloc((void **)&be->targets, n * sizeof(int)));
    CU_CHECK(cudaMalloc((void **)&be->bucket_start, (v + 1) * sizeof(int)));
    CU_CHECK(cudaMalloc((void **)&be->bucket_pos, n * sizeof(int)));
    CU_CHECK(cudaMalloc((void **)&be->loss_acc, sizeof(double)));
    be->h_bucket_start = (int *)malloc((v + 1) * sizeof(int));
    be->h_bucket_pos = (int *)malloc(n * sizeof(int));
    if (be->h_bucket_start == NULL || be->h_bucket_pos == NULL)
        return canary_err_set(err, CANARY_ENOMEM, "out of host memory for token buckets");
    return 0;
}

static int cu_create(struct canary_backend **out, const struct canary_config *cfg,
                     const float *params, struct canary_err *err)
{
    int rc = 0;
    cudaDeviceProp prop;
    struct canary_backend *be = (struct canary_backend *)calloc(1, sizeof *be);
    *out = NULL;
    if (be == NULL)
        return canary_err_set(err, CANARY_ENOMEM, "out of memory for the CUDA back end");
    be->dims = cfg->dims;
    be->bm = canary_config_micro_batch(cfg);
    be->variant = cfg->variant;
    canary_layout_init(&be->lay, &cfg->dims);
    cudaError_t e = cudaSetDevice(0);
    if (e == cudaSuccess)
        e = cudaGetDeviceProperties(&prop, 0);
    if (e != cudaSuccess) {
        rc = canary_err_set(err, CANARY_ENODEVICE, "--device cuda: %s", cudaGetErrorString(e));
        goto done;
    }
    snprintf(be->description, sizeof be->description, "%.200s, cc %d.%d, %.1f GiB", prop.name,
             prop.major, prop.minor, (double)prop.totalGlobalMem / (1024.0 * 1024.0 * 1024.0));
    if (cublasCreate(&be->blas) != CUBLAS_STATUS_SUCCESS) {
        be->blas = NULL;
        rc = canary_err_set(err, CANARY_ERUNTIME, "cublasCreate failed");
        goto done;
    }
    /* plain FP32 products (no TF32), so the CUDA loss curve can be compared with the CPU's */
    if (cublasSetMathMode(be->blas, CUBLAS_DEFAULT_MATH) != CUBLAS_STATUS_SUCCESS) {
        rc = canary_err_set(err, CANARY_ERUNTIME, "cublasSetMathMode failed");
        goto done;
    }
    rc = create_buffers(be, params, err);
    if (rc != 0)
        goto done;
    *out = be;
    be = NULL;
done:
    cu_destroy(be);
    return rc;
}

static int cu_zero_grad(struct canary_backend *be, struct canary_err *err)
{
    CU_CHECK(cudaMemsetAsync(be->grads, 0, be->lay.total * sizeof(float)));
    CU_CHECK(cudaMemsetAsync(be->loss_acc, 0, sizeof(double)));
    be->loss_count = 0;
    return 0;
}

/* out[rows][oc] = inp[rows][ic] w[ic][oc] + bias. */
static int linear_forward(struct canary_backend *be, float *out, const float *inp, const float *w,
                          const float *bias, int rows, int ic, int oc, struct canary_err *err)
{
    canary_range_push("matmul");
    cu_broadcast_rows(out, bias, rows, oc);
    cublasStatus_t s =
        gemm_rm(be->blas, false, false, rows, oc, ic, inp, ic, 0, w, oc, 0, 1.0f, out, oc, 0, 1);
    canary_range_pop();
    BLAS_CHECK(s);
    return 0;
}

/* dinp = dout w^T (if dinp); dw += inp^T dout; dbias += column sums (if dbias). */
static int linear_backward(struct canary_backend *be, float *dinp, float *dw, float *dbias,
                           const float *dout, const float *inp, const float *w, int rows, int ic,
                           int oc, struct canary_err *err)
{
    cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
    canary_range_push("matmul");
    if (dinp != NULL)
        s = gemm_rm(be->blas, false, true, rows, ic, oc, dout, oc, 0, w, oc, 0, 0.0f, dinp, ic, 0,
                    1);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = gemm_rm(be->blas, true, false, ic, oc, rows, inp, ic, 0, dout, oc, 0, 1.0f, dw, oc, 0,
                    1);
    if (dbias != NULL)
        cu_column_sum(dbias, dout, rows, oc);
    canary_range_pop();
    BLAS_CHECK(s);
    return 0;
}

static int attention_forward(struct canary_backend *be, const struct block_acts *a,
                             struct canary_err *err)
{
    const struct canary_dims *d = &be->dims;
    int b = be->bm, t = d->seq, c = d->width, h = d->heads, hd = c / h;
    long long th = (long long)t * hd, tt = (long long)t * t;
    cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
    canary_range_push("attention");
    if (be->variant == CANARY_VARIANT_SLOW_ATTENTION) {
        cu_attention_naive_forward(a->atty, be->patt, a->att, a->qkv, b, t, c, h);
    } else {
        cu_permute_qkv(be->q, be->k, be->vv, a->qkv, b, t, c, h);
        s = gemm_rm(be->blas, false, true, t, t, hd, be->q, hd, th, be->k, hd, th, 0.0f, be->patt,
                    t, tt, b * h);
        cu_softmax_causal_forward(a->att, be->patt, b * h * t, t, 1.0f / sqrtf((float)hd));
        if (s == CUBLAS_STATUS_SUCCESS)
            s = gemm_rm(be->blas, false, false, t, hd, t, a->att, t, tt, be->vv, hd, th, 0.0f,
                        be->heads, hd, th, b * h);
        cu_heads_to_rows(a->atty, be->heads, b, t, c, h);
    }
    canary_range_pop();
    BLAS_CHECK(s);
    return 0;
}

static int attention_backward(struct canary_backend *be, const struct block_acts *a,
                              struct canary_err *err)
{
    const struct canary_dims *d = &be->dims;
    int b = be->bm, t = d->seq, c = d->width, h = d->heads, hd = c / h;
    long long th = (long long)t * hd, tt = (long long)t * t;
    cublasHandle_t bl = be->blas;
    cublasStatus_t s;
    canary_range_push("attention");
    cu_permute_qkv(be->q, be->k, be->vv, a->qkv, b, t, c, h);
    cu_rows_to_heads(be->heads, be->d_atty, b, t, c, h); /* dy per head */
    s = gemm_rm(bl, false, true, t, t, hd, be->heads, hd, th, be->vv, hd, th, 0.0f, be->patt, t, tt,
                b * h);             /* datt = dy v^T */
    if (s == CUBLAS_STATUS_SUCCESS) /* dv = att^T dy */
        s = gemm_rm(bl, true, false, t, hd, t, a->att, t, tt, be->heads, hd, th, 0.0f, be->dv, hd,
                    th, b * h);
    cu_softmax_causal_backward(be->patt, be->patt, a->att, b * h * t, t, 1.0f / sqrtf((float)hd));
    if (s == CUBLAS_STATUS_SUCCESS) /* dq = dpre k */
        s = gemm_rm(bl, false, false, t, hd, t, be->patt, t, tt, be->k, hd, th, 0.0f, be->dq, hd,
                    th, b * h);
    if (s == CUBLAS_STATUS_SUCCESS) /* dk = dpre^T q */
        s = gemm_rm(bl, true, false, t, hd, t, be->patt, t, tt, be->q, hd, th, 0.0f, be->dk, hd, th,
                    b * h);
    cu_unpermute_qkv(be->d_qkv, be->dq, be->dk, be->dv, b, t, c, h);
    canary_range_pop();
    BLAS_CHECK(s);
    return 0;
}

/* Copies the micro-batch's tokens in and sorts positions by token for the wte gradient. */
static int upload_tokens(struct canary_backend *be, const int *inputs, const int *targets,
                         struct canary_err *err)
{
    int n = be->bm * be->dims.seq, v = be->dims.vocab;
    int *start = be->h_bucket_start, *pos = be->h_bucket_pos;
    memset(start, 0, ((size_t)v + 1) * sizeof(int));
    for (int i = 0; i < n; i++)
        start[inputs[i] + 1]++;
    for (int j = 0; j < v; j++)
        start[j + 1] += start[j];
    for (int i = 0; i < n; i++) /* positions in increasing order within each bucket */
        pos[start[inputs[i]]++] = i;
    for (int j = v; j > 0; j--)
        start[j] = start[j - 1];
    start[0] = 0;
    CU_CHECK(cudaMemcpy(be->tokens, inputs, (size_t)n * sizeof(int), cudaMemcpyHostToDevice));
    CU_CHECK(cudaMemcpy(be->targets, targets, (size_t)n * sizeof(int), cudaMemcpyHostToDevice));
    CU_CHECK(
        cudaMemcpy(be->bucket_start, start, ((size_t)v + 1) * sizeof(int), cudaMemcpyHostToDevice));
    CU_CHECK(cudaMemcpy(be->bucket_pos, pos, (size_t)n * sizeof(int), cudaMemcpyHostToDevice));
    return 0;
}

static int block_forward(struct canary_backend *be, int l, const float *x, struct canary_err *err)
{
    const struct canary_dims *d = &be->dims;
    int n = be->bm * d->seq, c = d->width, rc = 0;
    float *w = be->params;
    struct block_acts a = block_at(be, l);
    canary_range_push("layernorm");
    cu_layernorm_forward(a.ln1, a.ln1_mean, a.ln1_rstd, x, param(be, w, l, CANARY_LN1_W),
                         param(be, w, l, CANARY_LN1_B), n, c);
    canary_range_pop();
    if ((rc = linear_forward(be, a.qkv, a.ln1, param(be, w, l, CANARY_QKV_W),
                             param(be, w, l, CANARY_QKV_B), n, c, 3 * c, err)) != 0 ||
        (rc = attention_forward(be, &a, err)) != 0 ||
        (rc = linear_forward(be, a.res1, a.atty, param(be, w, l, CANARY_PROJ_W),
                             param(be, w, l, CANARY_PROJ_B), n, c, c, err)) != 0)
        return rc;
    canary_range_push("residual");
    cu_add(a.res1, x, (size_t)n * c);
    canary_range_pop();
    canary_range_push("layernorm");
    cu_layernorm_forward(a.ln2, a.ln2_mean, a.ln2_rstd, a.res1, param(be, w, l, CANARY_LN2_W),
                         param(be, w, l, CANARY_LN2_B), n, c);
    canary_range_pop();
    if ((rc = linear_forward(be, a.fch, a.ln2, param(be, w, l, CANARY_FC_W),
                             param(be, w, l, CANARY_FC_B), n, c, 4 * c, err)) != 0)
        return rc;
    canary_range_push("gelu");
    cu_gelu_forward(a.fch_gelu, a.fch, (size_t)n * 4 * c);
    canary_range_pop();
    if ((rc = linear_forward(be, a.res2, a.fch_gelu, param(be, w, l, CANARY_FCPROJ_W),
                             param(be, w, l, CANARY_FCPROJ_B), n, 4 * c, c, err)) != 0)
        return rc;
    canary_range_push("residual");
    cu_add(a.res2, a.res1, (size_t)n * c);
    canary_range_pop();
    if (be->variant == CANARY_VARIANT_EXTRA_SYNC) {
        /* a host round trip per block: the device drains before the next block is queued */
        float probe = 0.0f;
        canary_range_push("extra-sync");
        cudaError_t e = cudaMemcpy(&probe, a.res2, sizeof probe, cudaMemcpyDeviceToHost);
        canary_range_pop();
        CU_CHECK(e);
    }
    CU_CHECK(cudaGetLastError());
    return 0;
}

static int cu_forward(struct canary_backend *be, const int *inputs, const int *targets,
                      struct canary_err *err)
{
    const struct canary_dims *d = &be->dims;
    int n = be->bm * d->seq, c = d->width, rc = 0;
    float *w = be->params;
    if ((rc = upload_tokens(be, inputs, targets, err)) != 0)
        return rc;
    canary_range_push("embedding");
    cu_encoder_forward(be->x0, be->tokens, w + be->lay.wte, w + be->lay.wpe, n, d->seq, c);
    canary_range_pop();
    const float *x = be->x0;
    for (int l = 0; l < d->layers; l++) {
        if ((rc = block_forward(be, l, x, err)) != 0)
            return rc;
        x = block_at(be, l).res2;
    }
    canary_range_push("layernorm");
    cu_layernorm_forward(be->lnf, be->lnf_mean, be->lnf_rstd, x, w + be->lay.lnf_w,
                         w + be->lay.lnf_b, n, c);
    canary_range_pop();
    if ((rc = linear_forward(be, be->probs, be->lnf, w + be->lay.head_w, NULL, n, c, d->vocab,
                             err)) != 0)
        return rc;
    canary_range_push("softmax-cross-entropy");
    cu_softmax_ce_forward(be->probs, be->losses, be->probs, be->targets, n, d->vocab);
    cu_loss_accumulate(be->loss_acc, be->losses, n);
    canary_range_pop();
    be->loss_count++;
    if (be->keep != NULL) {
        /* mem-bloat: a second, live copy of every activation */
        canary_range_push("keep-activations");
        cudaError_t e = cudaMemcpyAsync(be->keep, be->arena, be->arena_count * sizeof(float),
                                        cudaMemcpyDeviceToDevice);
        canary_range_pop();
        CU_CHECK(e);
    }
    CU_CHECK(cudaGetLastError());
    return 0;
}

static int block_backward(struct canary_backend *be, int l, struct canary_err *err)
{
    const struct canary_dims *d = &be->dims;
    int n = be->bm * d->seq, c = d->width, rc = 0;
    float *w = be->params, *g = be->grads;
    struct block_acts a = block_at(be, l);
    const float *x_in = l == 0 ? be->x0 : block_at(be, l - 1).res2;
    if ((rc = linear_backward(be, be->d_fch_gelu, param(be, g, l, CANARY_FCPROJ_W),
                              param(be, g, l, CANARY_FCPROJ_B), be->d_res, a.fch_gelu,
                              param(be, w, l, CANARY_FCPROJ_W), n, 4 * c, c, err)) != 0)
        return rc;
    canary_range_push("gelu");
    cu_gelu_backward(be->d_fch, a.fch, be->d_fch_gelu, (size_t)n * 4 * c);
    canary_range_pop();
    if ((rc = linear_backward(be, be->d_ln, param(be, g, l, CANARY_FC_W),
                              param(be, g, l, CANARY_FC_B), be->d_fch, a.ln2,
                              param(be, w, l, CANARY_FC_W), n, c, 4 * c, err)) != 0)
        return rc;
    canary_range_push("layernorm");
    cu_layernorm_backward(be->d_res, param(be, g, l, CANARY_LN2_W), param(be, g, l, CANARY_LN2_B),
                          be->d_ln, a.res1, param(be, w, l, CANARY_LN2_W), a.ln2_mean, a.ln2_rstd,
                          n, c);
    canary_range_pop();
    if ((rc = linear_backward(be, be->d_atty, param(be, g, l, CANARY_PROJ_W),
                              param(be, g, l, CANARY_PROJ_B), be->d_res, a.atty,
                              param(be, w, l, CANARY_PROJ_W), n, c, c, err)) != 0 ||
        (rc = attention_backward(be, &a, err)) != 0 ||
        (rc = linear_backward(be, be->d_ln, param(be, g, l, CANARY_QKV_W),
                              param(be, g, l, CANARY_QKV_B), be->d_qkv, a.ln1,
                              param(be, w, l, CANARY_QKV_W), n, c, 3 * c, err)) != 0)
        return rc;
    canary_range_push("layernorm");
    cu_layernorm_backward(be->d_res, param(be, g, l, CANARY_LN1_W), param(be, g, l, CANARY_LN1_B),
                          be->d_ln, x_in, param(be, w, l, CANARY_LN1_W), a.ln1_mean, a.ln1_rstd, n,
                          c);
    canary_range_pop();
    CU_CHECK(cudaGetLastError());
    return 0;
}

static int cu_backward(struct canary_backend *be, const int *inputs, const int *targets,
                       double grad_scale, struct canary_err *err)
{
    (void)inputs; /* uploaded by cu_forward */
    (void)targets;
    const struct canary_dims *d = &be->dims;
    int n = be->bm * d->seq, c = d->width, rc = 0;
    float *w = be->params, *g = be->grads;
    canary_range_push("softmax-cross-entropy");
    cu_softmax_ce_backward(be->d_logits, be->probs, be->targets, n, d->vocab, (float)grad_scale);
    canary_range_pop();
    if ((rc = linear_backward(be, be->d_ln, g + be->lay.head_w, NULL, be->d_logits, be->lnf,
                              w + be->lay.head_w, n, c, d->vocab, err)) != 0)
        return rc;
    const float *x_last = block_at(be, d->layers - 1).res2;
    CU_CHECK(cudaMemsetAsync(be->d_res, 0, (size_t)n * c * sizeof(float)));
    canary_range_push("layernorm");
    cu_layernorm_backward(be->d_res, g + be->lay.lnf_w, g + be->lay.lnf_b, be->d_ln, x_last,
                          w + be->lay.lnf_w, be->lnf_mean, be->lnf_rstd, n, c);
    canary_range_pop();
    for (int l = d->layers - 1; l >= 0; l--)
        if ((rc = block_backward(be, l, err)) != 0)
            return rc;
    canary_range_push("embedding");
    cu_encoder_backward(g + be->lay.wte, g + be->lay.wpe, be->d_res, be->bucket_start,
                        be->bucket_pos, d->vocab, be->bm, d->seq, c);
    canary_range_pop();
    CU_CHECK(cudaGetLastError());
    return 0;
}

static int cu_step_loss(struct canary_backend *be, double *loss, struct canary_err *err)
{
    double sum = 0.0;
    CU_CHECK(cudaMemcpy(&sum, be->loss_acc, sizeof sum, cudaMemcpyDeviceToHost));
    *loss = be->loss_count > 0 ? sum / be->loss_count : 0.0;
    return 0;
}

static int cu_update(struct canary_backend *be, double lr, double weight_decay, long t,
                     struct canary_err *err)
{
    const float beta1 = 0.9f, beta2 = 0.999f;
    float c1 = (float)(1.0 - pow(beta1, (double)t));
    float c2 = (float)(1.0 - pow(beta2, (double)t));
    canary_range_push("adamw");
    cu_adamw(be->params, be->grads, be->m, be->v, be->lay.total, (float)lr, beta1, beta2, 1e-8f,
             (float)weight_decay, c1, c2);
    canary_range_pop();
    CU_CHECK(cudaGetLastError());
    return 0;
}

static int cu_extra_work(struct canary_backend *be, long units, long tail_rows,
                         struct canary_err *err)
{
    int rows = be->dims.batch * be->dims.seq, c = be->dims.width, rc = 0;
    if (be->extra_a == NULL) {
        if ((rc = dev_alloc(&be->extra_a, (size_t)rows * c, err)) != 0 ||
            (rc = dev_alloc(&be->extra_w, (size_t)c * 4 * c, err)) != 0 ||
            (rc = dev_alloc(&be->extra_c, (size_t)rows * 4 * c, err)) != 0)
            return rc;
        /* inputs: copies of live parameters (any finite values do) */
        size_t na = (size_t)rows * c < be->lay.total ? (size_t)rows * c : be->lay.total;
        size_t nw = (size_t)c * 4 * c < be->lay.total ? (size_t)c * 4 * c : be->lay.total;
        CU_CHECK(cudaMemcpy(be->extra_a, be->params, na * sizeof(float), cudaMemcpyDeviceToDevice));
        CU_CHECK(cudaMemcpy(be->extra_w, be->params, nw * sizeof(float), cudaMemcpyDeviceToDevice));
    }
    for (long u = 0; u <= units; u++) {
        int r = u < units ? rows : (int)tail_rows;
        if (r <= 0)
            continue;
        canary_range_push("matmul");
        cublasStatus_t s = gemm_rm(be->blas, false, false, r, 4 * c, c, be->extra_a, c, 0,
                                   be->extra_w, 4 * c, 0, 0.0f, be->extra_c, 4 * c, 0, 1);
        canary_range_pop();
        BLAS_CHECK(s);
    }
    return 0;
}

static int cu_set_param(struct canary_backend *be, size_t index, float value,
                        struct canary_err *err)
{
    if (index >= be->lay.total)
        return canary_err_set(err, CANARY_EUSAGE, "parameter index %zu out of range", index);
    CU_CHECK(cudaMemcpy(be->params + index, &value, sizeof value, cudaMemcpyHostToDevice));
    return 0;
}

static int cu_sync(struct canary_backend *be, struct canary_err *err)
{
    (void)be;
    CU_CHECK(cudaDeviceSynchronize());
    return 0;
}

static size_t cu_activation_bytes(const struct canary_backend *be)
{
    return be->arena_count * sizeof(float) * (be->keep != NULL ? 2 : 1);
}

static const char *cu_describe(const struct canary_backend *be)
{
    return be->description;
}

extern "C" __attribute__((visibility("default")))
const struct canary_backend_ops canary_cuda_module_ops = {
    "cuda",      cu_create,           cu_destroy,  cu_zero_grad,  cu_forward,
    cu_backward, cu_step_loss,        cu_update,   cu_extra_work, cu_set_param,
    cu_sync,     cu_activation_bytes, cu_describe,
};
