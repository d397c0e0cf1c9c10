/* report_gpu_aa: the GPU's own state across an A/A's runs (see report_gpu_aa.h). */
#include "report_gpu_aa.h"

#include "err.h"
#include "gpu_rule.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

struct dev_sum {
    int64_t index;
    size_t runs, held, shared;
    int64_t med_lo, med_hi, lo, hi, temp_lo, temp_hi;
    double power_lo, power_hi;
    bool wide; /* a run whose samples span more than CG_AA_CLOCK_SPAN_PCT */
};

static void fold(struct dev_sum *s, const struct cg_gpu_device *d)
{
    if (s->runs++ == 0) {
        s->med_lo = s->med_hi = d->sm_median_mhz;
        s->lo = d->sm_min_mhz;
        s->hi = d->sm_max_mhz;
        s->temp_lo = d->temp_min_c;
        s->temp_hi = d->temp_max_c;
        s->power_lo = d->power_min_w;
        s->power_hi = d->power_max_w;
    } else {
        s->med_lo = d->sm_median_mhz < s->med_lo ? d->sm_median_mhz : s->med_lo;
        s->med_hi = d->sm_median_mhz > s->med_hi ? d->sm_median_mhz : s->med_hi;
        s->lo = d->sm_min_mhz < s->lo ? d->sm_min_mhz : s->lo;
        s->hi = d->sm_max_mhz > s->hi ? d->sm_max_mhz : s->hi;
        s->temp_lo = d->temp_min_c < s->temp_lo ? d->temp_min_c : s->temp_lo;
        s->temp_hi = d->temp_max_c > s->temp_hi ? d->temp_max_c : s->temp_hi;
        s->power_lo = fmin(s->power_lo, d->power_min_w);
        s->power_hi = fmax(s->power_hi, d->power_max_w);
    }
    bool held = false;
    for (int r = 0; r < CG_GPU_R_N; r++) /* the gate's own rule of what holds a run back */
        held |= cg_gpu_reason_external(r) && cg_gpu_held_share(d->reasons[r], d->samples);
    s->held += held;
    s->shared += cg_gpu_held_share(d->other_samples, d->samples);
    s->wide |= d->sm_max_mhz > 0 &&
               100.0 * (double)(d->sm_max_mhz - d->sm_min_mhz) / (double)d->sm_max_mhz >
                   CG_AA_CLOCK_SPAN_PCT;
}

int cg_report_gpu_aa(const struct cg_artifact *a, struct cg_buf *out, bool *float_advice)
{
    if (float_advice != NULL)
        *float_advice = false;
    struct dev_sum sum[CG_GPU_MAX_DEVICES];
    size_t n = 0, measured = 0;
    const char *why = NULL;
    for (size_t r = 0; r < a->n_runs; r++) {
        const struct cg_gpu_state *g = &a->runs[r].gpu;
        if (!g->recorded || g->reason != NULL) {
            why = g->recorded ? g->reason : "not recorded (an older artifact)";
            continue;
        }
        measured++;
        for (size_t k = 0; k < g->n_dev; k++) {
            size_t j = 0;
            while (j < n && sum[j].index != g->dev[k].index)
                j++;
            if (j == n && n == CG_GPU_MAX_DEVICES)
                continue;
            if (j == n)
                memset(&sum[n++], 0, sizeof(sum[0])), sum[j].index = g->dev[k].index;
            fold(&sum[j], &g->dev[k]);
        }
    }
    int rc = cg_buf_adds(out, "the GPU's own state across these runs (NVML, docs/collector.md)\n");
    if (n == 0) {
        rc |= cg_buf_printf(out, "  not measured: %s\n",
                            why != NULL ? why : "the canary used no GPU NVML saw");
        return rc;
    }
    char settings[256];
    cg_gpu_env_text(&a->env.gpu_env, settings, sizeof(settings));
    rc |= cg_buf_printf(out, "  settings: %s\n", settings);
    bool floating = false;
    for (size_t j = 0; j < n; j++) {
        const struct dev_sum *s = &sum[j];
        double spread = s->med_hi > 0 ? 100.0 * (double)(s->med_hi - s->med_lo) / (double)s->med_hi
                                      : 0.0;
        rc |= cg_buf_printf(out,
                            "  GPU %lld: SM clock medians %lld to %lld MHz over %zu runs (%.1f%% "
                            "apart), samples %lld to %lld MHz; %lld to %lld C, %.0f to %.0f W\n",
                            (long long)s->index, (long long)s->med_lo, (long long)s->med_hi,
                            s->runs, spread, (long long)s->lo, (long long)s->hi,
                            (long long)s->temp_lo, (long long)s->temp_hi, s->power_lo,
                            s->power_hi);
        if (s->held > 0 || s->shared > 0)
            rc |= cg_buf_printf(out,
                                "  GPU %lld: %zu run%s held back by a reason not the workload's "
                                "own (hardware slowdown, thermal, power brake), %zu "
                                "shared with another process: the gate makes a regression they "
                                "decide INCONCLUSIVE\n",
                                (long long)s->index, s->held, s->held == 1 ? "" : "s", s->shared);
        floating |= spread > CG_AA_CLOCK_FLOAT_PCT || s->wide;
    }
    if (measured < a->n_runs)
        rc |= cg_buf_printf(out, "  %zu of %zu runs without the GPU's state: %s\n",
                            a->n_runs - measured, a->n_runs, why != NULL ? why : "unknown");
    int locked = a->env.gpu_env.recorded ? a->env.gpu_env.clocks_locked : -1;
    if (floating && locked != 1) {
        rc |= cg_buf_printf(out,
                            "  clocks float here (medians more than %.0f%% apart across runs, or "
                            "a run's samples more than %.0f%% apart) and are %s: timing moves "
                            "with them between processes and within one. Lock them for steadier "
                            "figures: 'sudo nvidia-smi --lock-gpu-clocks=F,F' at a clock F the "
                            "GPU holds under load (e.g. the lowest median here, %lld MHz), and "
                            "'sudo nvidia-smi --reset-gpu-clocks' afterwards; record the baseline "
                            "the same way\n",
                            CG_AA_CLOCK_FLOAT_PCT, CG_AA_CLOCK_SPAN_PCT,
                            locked == 0 ? "not locked" : "perhaps not locked (NVML does not say)",
                            (long long)sum[0].med_lo);
        if (float_advice != NULL)
            *float_advice = true;
    } else if (floating) {
        rc |= cg_buf_adds(out, "  clocks float although they are locked: look for thermal or "
                               "power limits (the reasons above)\n");
    } else {
        rc |= cg_buf_adds(out, "  clocks steady across these runs\n");
    }
    return rc;
}
