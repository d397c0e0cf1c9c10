/*
 * gpu_none: the GPU side of the injection library when it is built without CUPTI headers.
 * Steps are still timed by NVTX; no GPU metrics are collected and the shard says so.
 */
#include "inject.h"

void cg_gpu_step_begin(int64_t index, uint64_t start_ns)
{
    (void)index;
    (void)start_ns;
}

void cg_gpu_step_end(int64_t index, uint64_t end_ns)
{
    (void)index;
    (void)end_ns;
}

bool cg_gpu_measured(void)
{
    return false; /* nothing to finish: the caller writes "done" */
}
