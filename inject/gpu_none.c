/*
 * gpu_none: the GPU side of the injection library when it is built without CUPTI headers.
 * Steps are still timed by NVTX; no GPU metrics are collected and the shard says so.
 */
#include "inject.h"

uint64_t cg_gpu_step_begin(int64_t index)
{
    (void)index;
    return cg_inject_now_ns();
}

uint64_t cg_gpu_step_end(int64_t index)
{
    (void)index;
    return cg_inject_now_ns();
}

bool cg_gpu_measured(void)
{
    return false; /* nothing to finish: the caller writes "done" */
}
