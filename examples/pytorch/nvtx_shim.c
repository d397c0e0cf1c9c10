/*
 * nvtx_shim: NVTX ranges and marks of the default domain for a PyTorch built without CUDA.
 *
 * CPU-only PyTorch builds (such as Debian's python3-torch) have no torch.cuda.nvtx, so the
 * PyTorch canary (examples/pytorch/train_gpt.py --device cpu --nvtx-shim PATH) calls these
 * three functions through ctypes instead. They are the same NVTX v3 calls torch.cuda.nvtx makes
 * (nvtxRangePushA, nvtxRangePop, nvtxMarkA in the default domain), so the injection library sees
 * the same events: this lets the canary run under canary-gate on a machine without a GPU (tests,
 * rehearsals of ci/gpu-check). Not used on a GPU. Call from the training thread; strings are
 * copied by NVTX's tool before the call returns.
 */
#include <nvtx3/nvToolsExt.h>

/* Opens a range named name (NUL-terminated) on this thread. */
__attribute__((visibility("default"))) void canary_shim_push(const char *name);
/* Closes this thread's innermost open range. */
__attribute__((visibility("default"))) void canary_shim_pop(void);
/* A mark named message, e.g. "loss=2.5" (how torch.cuda.nvtx.mark reports a loss). */
__attribute__((visibility("default"))) void canary_shim_mark(const char *message);

void canary_shim_push(const char *name)
{
    nvtxRangePushA(name);
}

void canary_shim_pop(void)
{
    nvtxRangePop();
}

void canary_shim_mark(const char *message)
{
    nvtxMarkA(message);
}
