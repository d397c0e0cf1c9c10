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
    int (*create)(struct canary_backend **out, const struct canary_config *cfg, const float *params,
                  struct canary_err *err);
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
    int (*set_param)(struct canary_backend *be, size_t index, float value, struct canary_err *err);
    /* Waits until all queued work has finished. */
    int (*sync)(struct canary_backend *be, struct canary_err *err);
    /* Bytes of activation memory held (extra copies included). */
    size_t (*activation_bytes)(const struct canary_backend *be);
    /* What runs the model, e.g. "cpu, 2 threads" or "NVIDIA H100 80GB HBM3" (owned by be). */
    const char *(*describe)(const struct canary_backend *be);
};

extern const struct canary_backend_ops canary_cpu_backend;

/* Returns 1 when the CUDA back end can run here, else 0 and a one-line reason in why. Cheap and
 * never fails hard: it asks the driver (libcuda.so.1, loaded with dlopen) for a device first and
 * only then loads the CUDA back end module (libcanary-train-cuda.so, beside the executable or in
 * ../lib/canary-gate), so CPU runs never map cuBLAS. A build without nvcc always says 0. */
int canary_cuda_probe(char *why, size_t why_size);

/* The CUDA back end, valid after canary_cuda_probe returned 1 (NULL before). */
const struct canary_backend_ops *canary_cuda_ops(void);

/* Inside the CUDA module: its back end and its own device check (cudaGetDeviceCount). */
#define CANARY_CUDA_MODULE_OPS "canary_cuda_module_ops"
#define CANARY_CUDA_MODULE_PROBE "canary_cuda_module_probe"
typedef int (*canary_cuda_module_probe_fn)(char *why, size_t why_size);

#ifdef __cplusplus
}
#endif

#endif
