/* metric: names, labels and directions of the gated metrics (see metric.h). */
#include "metric.h"

static const char *const metric_names[CG_M_COUNT] = {
    "step_time_mean", "step_time_p95",      "step_time_floor",
    "tokens_per_sec", "peak_device_memory", "peak_host_rss",
    "energy_per_token", "mfu",
};

const char *cg_metric_name(enum cg_metric m)
{
    return (unsigned)m < CG_M_COUNT ? metric_names[m] : "unknown";
}

const char *cg_metric_label(enum cg_metric m)
{
    static const char *const labels[CG_M_COUNT] = {
        "Step time mean", "Step time p95",      "Step time floor",
        "Tokens/sec",     "Peak device memory", "Peak host RSS",
        "Energy per token", "MFU",
    };
    return (unsigned)m < CG_M_COUNT ? labels[m] : "unknown";
}

bool cg_metric_higher_is_worse(enum cg_metric m)
{
    return m != CG_M_TOKENS_PER_SEC && m != CG_M_MFU;
}

bool cg_metric_from_gpu_state(enum cg_metric m)
{
    return m == CG_M_ENERGY_PER_TOKEN || m == CG_M_MFU;
}
