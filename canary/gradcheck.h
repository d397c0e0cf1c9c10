/*
 * gradcheck: numerical gradient check of every backward pass of the CPU back end, run by
 * `canary-train --gradcheck`. Uses the double instance of the very operator and model code
 * that trains (cpu_kernels.h), small sizes and central differences (step 1e-5), so errors
 * are ~1e-8 when a backward is right and ~1 when it is wrong. Each check compares the
 * analytic gradient of L = sum(out * R) (R fixed random; for cross-entropy and the model,
 * L = the loss) with the numerical one, at every input element of an operator and at up to
 * 16 sampled elements of every parameter tensor of the whole model. Never prints. One thread.
 */
#ifndef CANARY_GRADCHECK_H
#define CANARY_GRADCHECK_H

#include "common.h"

#include <stddef.h>

/* Worst relative error accepted: |a - n| / max(|a|, |n|, 1e-3 * largest |gradient| of the
 * tensor). */
#define CANARY_GRADCHECK_TOLERANCE 1e-5

struct canary_gradcheck_result {
    char name[48];      /* "matmul.w", "attention.qkv", "model.h0.qkv_w", ... */
    double max_rel_err; /* worst relative error over the checked elements */
    long checked;       /* elements compared */
};

/* Runs every check, filling up to max results (*count set to the number filled). Returns 0,
 * or CANARY_ENOMEM. Compare results with CANARY_GRADCHECK_TOLERANCE. */
int canary_gradcheck_run(struct canary_gradcheck_result *results, int max, int *count,
                         struct canary_err *err);

#endif
