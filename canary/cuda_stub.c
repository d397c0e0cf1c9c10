/* cuda_stub: the CUDA back end of a build without nvcc: probes say no, every call refuses. */
#include "backend.h"

#include <stdio.h>

int canary_cuda_probe(char *why, size_t why_size)
{
    snprintf(why, why_size, "this canary-train was built without CUDA (no nvcc)");
    return 0;
}

static int stub_create(struct canary_backend **out, const struct canary_config *cfg,
                       const float *params, struct canary_err *err)
{
    (void)cfg;
    (void)params;
    *out = NULL;
    return canary_err_set(err, CANARY_ENODEVICE,
                          "--device cuda: this canary-train was built without CUDA (no nvcc)");
}

const struct canary_backend_ops canary_cuda_backend = {
    .name = "cuda",
    .create = stub_create,
};
