/*
 * backend: the interface both back ends (CPU: cpu_backend.c, CUDA: cuda_backend.cu) implement,
 * so one training loop (train.c) drives either. A back end owns the parameters, gradients,
 * AdamW moments and activations of one model, sized for the configuration's micro-batch.
 * Calls may be asynchronous on a device: sync() waits for all queued work, step_loss() returns
 * a value the host can test. Losses are nats; learning rates per step. One thread at a time.
 */
#ifndef CANARY_BACKEND_H
#define CANARY_BACKEND_H

#include "common.h"
#include "config.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct canary_backend;

struct canary_backend_ops {
    const char *name; /* "cpu" or "cuda" */
    /* Creates the back end for cfg, copying the initial parameters (model.h layout). */
    int (*create)(struct canary_backend **out, const struct canary_config *cfg,
                  const float *params, struct canary_err *err);
    /* Frees everything; NULL is fine. */
    void (*destroy)(struct canary_backend *be);
    /* Zeroes the gradients and the step's loss accumulator. */
    int (*zero_grad)(struct canary_backend *be, struct canary_err *err);
    /* Forward pass over micro-batch rows (micro_batch x seq tokens each array). */
    int (*forward)(struct canary_backend *be, const int *inputs, const int *targets,
                   struct canary_err *err);
    /* Backward pass of the last forward: gradients += grad_scale * d(sum of token losses). */
    int (*backward)(struct canary_backend *be, const int *inputs, const int *targets,
                    double grad_scale, struct canary_err *err);
    /* Mean loss over the forward passes since zero_grad (waits for the device). */
    int (*step_loss)(struct canary_backend *be, double *loss, struct canary_err *err);
    /* One AdamW update (t counts updates from 1). */
    int (*update)(struct canary_backend *be, double lr, double weight_decay, long t,
                  struct canary_err *err);
    /* Extra real work: `units` matmuls of [batch*seq][C] x [C][4C], then one of tail_rows rows. */
    int (*extra_work)(struct canary_backend *be, long units, long tail_rows,
                      struct canary_err *err);
    /* Overwrites parameter `index` (tests: makes the loss non-finite). */
    int (*set_param)(struct canary_backend *be, size_t index, float value,
                     struct canary_err *err);
    /* Waits until all queued work has finished. */
    int (*sync)(struct canary_backend *be, struct canary_err *err);
    /* Bytes of activation memory held (extra copies included). */
    size_t (*activation_bytes)(const struct canary_backend *be);
    /* What runs the model, e.g. "cpu, 2 threads" or "NVIDIA H100 80GB HBM3" (owned by be). */
    const char *(*describe)(const struct canary_backend *be);
};

extern const struct canary_backend_ops canary_cpu_backend;

/* The CUDA back end; in a build without nvcc every call fails with CANARY_ENODEVICE. */
extern const struct canary_backend_ops canary_cuda_backend;

/* Returns 1 when a CUDA device can be used; else 0 and a one-line reason in why. Never fails
 * hard: no driver, no device and a build without CUDA all give 0. */
int canary_cuda_probe(char *why, size_t why_size);

#ifdef __cplusplus
}
#endif

#endif
