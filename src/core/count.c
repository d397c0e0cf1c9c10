/* count: names, labels and units of the per-step counts and their rows (see count.h). */
#include "count.h"

#include <string.h>

static const struct {
    const char *name, *label;
} rows[CG_COUNT_ROWS] = {
    [CG_COUNT_KERNELS] = {"kernels", "kernel launches"},
    [CG_COUNT_GRAPH_KERNELS] = {"graph_kernels", "kernels launched by CUDA graphs"},
    [CG_COUNT_GRAPH_LAUNCHES] = {"graph_launches", "CUDA graph launches"},
    [CG_COUNT_SYNC_STREAM] = {"sync_stream", "stream synchronisations"},
    [CG_COUNT_SYNC_EVENT] = {"sync_event", "event synchronisations"},
    [CG_COUNT_SYNC_CONTEXT] = {"sync_context", "device synchronisations"},
    [CG_COUNT_SYNC_WAIT] = {"sync_wait_event", "stream waits on events"},
    [CG_COUNT_COPIES] = {"copies", "copies"},
    [CG_COUNT_DTOH_PAGEABLE] = {"dtoh_pageable", "pageable device-to-host copies"},
    [CG_COUNT_DTOH_PAGEABLE_BYTES] = {"dtoh_pageable_bytes",
                                      "bytes copied to pageable host memory"},
    [CG_COUNT_ALLOCS] = {"allocs", "device allocations"},
    [CG_COUNT_FREES] = {"frees", "device frees"},
    [CG_COUNT_MODULE_LOADS] = {"module_loads", "module loads"},
    [CG_COUNT_JIT] = {"jit", "JIT compilations"},
    [CG_COUNT_RANGES] = {"ranges", "NVTX ranges"},
    [CG_COUNT_BACKWARD] = {"backward", "backward passes"},
    [CG_COUNT_OPTIMIZER_STEPS] = {"optimizer_steps", "optimizer steps"},
    [CG_COUNT_SYNCS] = {"synchronizations", "host synchronisations"},
    [CG_COUNT_UNGRAPHED] = {"kernels_outside_graphs", "kernels launched outside CUDA graphs"},
};

const char *cg_count_name(int row)
{
    return row >= 0 && row < CG_COUNT_ROWS ? rows[row].name : "unknown";
}

const char *cg_count_label(int row)
{
    return row >= 0 && row < CG_COUNT_ROWS ? rows[row].label : "unknown";
}

bool cg_count_is_bytes(int row)
{
    return row == CG_COUNT_DTOH_PAGEABLE_BYTES;
}

int cg_count_parse(const char *name, int *row)
{
    for (int r = 0; r < CG_COUNT_ROWS; r++)
        if (strcmp(rows[r].name, name) == 0) {
            *row = r;
            return 0;
        }
    return -1;
}

bool cg_count_in_row(int row, int count)
{
    if (row == CG_COUNT_SYNCS)
        return count == CG_COUNT_SYNC_STREAM || count == CG_COUNT_SYNC_EVENT ||
               count == CG_COUNT_SYNC_CONTEXT;
    return row == count && row >= 0 && row < CG_COUNT_N;
}

bool cg_count_placed(int count)
{
    return cg_count_in_row(CG_COUNT_SYNCS, count) || count == CG_COUNT_DTOH_PAGEABLE ||
           count == CG_COUNT_ALLOCS || count == CG_COUNT_FREES || count == CG_COUNT_MODULE_LOADS;
}

int64_t cg_count_value(const int64_t counts[CG_COUNT_N], int row)
{
    if (row >= 0 && row < CG_COUNT_N)
        return counts[row];
    if (row == CG_COUNT_SYNCS) {
        int64_t sum = 0;
        for (int c = 0; c < CG_COUNT_N; c++) {
            if (!cg_count_in_row(row, c))
                continue;
            if (counts[c] < 0)
                return -1;
            sum += counts[c];
        }
        return sum;
    }
    if (row == CG_COUNT_UNGRAPHED) {
        const int64_t k = counts[CG_COUNT_KERNELS], g = counts[CG_COUNT_GRAPH_KERNELS];
        return k < 0 || g < 0 || g > k ? -1 : k - g;
    }
    return -1;
}
