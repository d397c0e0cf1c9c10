/*
 * cpu_backend: the CPU back end of canary-train — the float model of cpu_kernels.h plus AdamW
 * and the extra-work matmuls. Plain C; OpenMP threads when built with it (the thread count
 * changes speed, never results). Owns all its memory; one training thread.
 */
#include "backend.h"

#include "canary_nvtx.h"
#include "cpu_kernels.h"
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

struct canary_backend {
    struct canary_dims dims; /* batch = rows per optimizer step */
    struct canary_cpu_model_f32 *model;
    size_t nparams;
    float *m, *v; /* AdamW moments */
    double loss_sum;
    int loss_count;
    float *extra_a, *extra_w, *extra_c; /* extra work: [B*T][C] x [C][4C] */
    char description[64];
};

static void cpu_destroy(struct canary_backend *be)
{
    if (be == NULL)
        return;
    canary_cpu_model_free_f32(be->model);
    free(be->m);
    free(be->v);
    free(be->extra_a);
    free(be->extra_w);
    free(be->extra_c);
    free(be);
}

static int cpu_create(struct canary_backend **out, const struct canary_config *cfg,
                      const float *params, struct canary_err *err)
{
    int rc = 0;
    struct canary_backend *be = calloc(1, sizeof *be);
    *out = NULL;
    if (be == NULL)
        return canary_err_set(err, CANARY_ENOMEM, "out of memory for the CPU back end");
    be->dims = cfg->dims;
    struct canary_dims micro = cfg->dims;
    micro.batch = canary_config_micro_batch(cfg);
    unsigned flags = 0;
    if (cfg->variant == CANARY_VARIANT_SLOW_ATTENTION)
        flags |= CANARY_CPU_NAIVE_ATTENTION;
    if (cfg->variant == CANARY_VARIANT_EXTRA_SYNC)
        flags |= CANARY_CPU_EXTRA_COPIES;
    if (cfg->variant == CANARY_VARIANT_MEM_BLOAT)
        flags |= CANARY_CPU_KEEP_COPIES;
    be->model = canary_cpu_model_new_f32(&micro, flags, err);
    if (be->model == NULL) {
        rc = err != NULL ? err->code : CANARY_ENOMEM;
        goto done;
    }
    struct canary_layout lay;
    canary_layout_init(&lay, &cfg->dims);
    be->nparams = lay.total;
    memcpy(canary_cpu_model_params_f32(be->model), params, lay.total * sizeof *params);
    be->m = calloc(lay.total, sizeof *be->m);
    be->v = calloc(lay.total, sizeof *be->v);
    if (be->m == NULL || be->v == NULL) {
        rc = canary_err_set(err, CANARY_ENOMEM, "out of memory for the optimizer state");
        goto done;
    }
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    snprintf(be->description, sizeof be->description, "cpu, %d thread%s", threads,
             threads == 1 ? "" : "s");
    *out = be;
    be = NULL;
done:
    cpu_destroy(be);
    return rc;
}

static int cpu_zero_grad(struct canary_backend *be, struct canary_err *err)
{
    (void)err;
    memset(canary_cpu_model_grads_f32(be->model), 0, be->nparams * sizeof(float));
    be->loss_sum = 0;
    be->loss_count = 0;
    return 0;
}

static int cpu_forward(struct canary_backend *be, const int *inputs, const int *targets,
                       struct canary_err *err)
{
    (void)err;
    be->loss_sum += canary_cpu_model_forward_f32(be->model, inputs, targets);
    be->loss_count++;
    return 0;
}

static int cpu_backward(struct canary_backend *be, const int *inputs, const int *targets,
                        double grad_scale, struct canary_err *err)
{
    (void)err;
    canary_cpu_model_backward_f32(be->model, inputs, targets, grad_scale);
    return 0;
}

static int cpu_step_loss(struct canary_backend *be, double *loss, struct canary_err *err)
{
    (void)err;
    *loss = be->loss_count > 0 ? be->loss_sum / be->loss_count : 0.0;
    return 0;
}

static int cpu_update(struct canary_backend *be, double lr, double weight_decay, long t,
                      struct canary_err *err)
{
    (void)err;
    const float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
    float c1 = (float)(1.0 - pow(beta1, (double)t));
    float c2 = (float)(1.0 - pow(beta2, (double)t));
    float flr = (float)lr, fwd = (float)weight_decay;
    float *p = canary_cpu_model_params_f32(be->model);
    const float *g = canary_cpu_model_grads_f32(be->model);
    float *m = be->m, *v = be->v;
    long n = (long)be->nparams;
    canary_range_push("adamw");
    CANARY_OMP_FOR
    for (long i = 0; i < n; i++) {
        float gi = g[i];
        m[i] = beta1 * m[i] + (1.0f - beta1) * gi;
        v[i] = beta2 * v[i] + (1.0f - beta2) * gi * gi;
        float mhat = m[i] / c1, vhat = v[i] / c2;
        p[i] -= flr * (mhat / (sqrtf(vhat) + eps) + fwd * p[i]);
    }
    canary_range_pop();
    return 0;
}

static int cpu_extra_work(struct canary_backend *be, long units, long tail_rows,
                          struct canary_err *err)
{
    int rows = be->dims.batch * be->dims.seq, c = be->dims.width;
    if (be->extra_a == NULL) {
        be->extra_a = malloc((size_t)rows * c * sizeof(float));
        be->extra_w = malloc((size_t)c * 4 * c * sizeof(float));
        be->extra_c = malloc((size_t)rows * 4 * c * sizeof(float));
        if (be->extra_a == NULL || be->extra_w == NULL || be->extra_c == NULL)
            return canary_err_set(err, CANARY_ENOMEM, "out of memory for --extra-work");
        for (size_t i = 0; i < (size_t)rows * c; i++)
            be->extra_a[i] = (float)((i * 7919u) % 97u) / 97.0f - 0.5f;
        for (size_t i = 0; i < (size_t)c * 4 * c; i++)
            be->extra_w[i] = (float)((i * 104729u) % 89u) / 890.0f - 0.05f;
    }
    for (long u = 0; u <= units; u++) {
        int r = u < units ? rows : (int)tail_rows;
        if (r <= 0)
            continue;
        canary_range_push("matmul");
        canary_cpu_gemm_f32(be->extra_c, be->extra_a, be->extra_w, r, 4 * c, c, 0);
        canary_range_pop();
    }
    return 0;
}

static int cpu_set_param(struct canary_backend *be, size_t index, float value,
                         struct canary_err *err)
{
    if (index >= be->nparams)
        return canary_err_set(err, CANARY_EUSAGE, "parameter index %zu out of range", index);
    canary_cpu_model_params_f32(be->model)[index] = value;
    return 0;
}

static int cpu_sync(struct canary_backend *be, struct canary_err *err)
{
    (void)be;
    (void)err;
    return 0;
}

static size_t cpu_activation_bytes(const struct canary_backend *be)
{
    return canary_cpu_model_activation_bytes_f32(be->model);
}

static const char *cpu_describe(const struct canary_backend *be)
{
    return be->description;
}

const struct canary_backend_ops canary_cpu_backend = {
    .name = "cpu",
    .create = cpu_create,
    .destroy = cpu_destroy,
    .zero_grad = cpu_zero_grad,
    .forward = cpu_forward,
    .backward = cpu_backward,
    .step_loss = cpu_step_loss,
    .update = cpu_update,
    .extra_work = cpu_extra_work,
    .set_param = cpu_set_param,
    .sync = cpu_sync,
    .activation_bytes = cpu_activation_bytes,
    .describe = cpu_describe,
};
