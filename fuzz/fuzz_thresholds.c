/*
 * fuzz_thresholds: thresholds files (--thresholds FILE, a file from the repository under test).
 *
 * Input: the text of one thresholds file ("extends" resolves to the built-in files only).
 * Properties: it loads or fails with CG_EINPUT and a message naming the file; loaded thresholds
 * are complete and every value lies within the range docs/thresholds.md gives it.
 */
#include "fuzz.h"

#include "thresholds.h"

#include <math.h>

static void check_limits(const struct cg_thresholds *t)
{
    CG_FUZZ_CHECK(t->runs >= 1 && t->runs <= 1000, "runs %lld", (long long)t->runs);
    CG_FUZZ_CHECK(t->steps >= 1 && t->warmup >= 0, "steps/warmup");
    CG_FUZZ_CHECK(t->ops_top_n >= 0, "ops.top_n");
    CG_FUZZ_CHECK(t->ops_fdr_q > 0 && t->ops_fdr_q <= 1, "ops.fdr_q %g", t->ops_fdr_q);
    CG_FUZZ_CHECK(t->ops_min_share_pct >= 0 && t->ops_min_share_pct <= 100, "ops.min_share_pct");
    CG_FUZZ_CHECK(t->bootstrap_resamples >= 100, "bootstrap_resamples");
    for (int m = 0; m < CG_M_COUNT; m++) {
        const struct cg_metric_limits *l = &t->metric[m];
        /* a root file written before the GPU state's metrics may leave them out entirely: shown,
         * not gated (thresholds.c) */
        if (cg_metric_from_gpu_state((enum cg_metric)m) && isnan(l->max_regression_pct) &&
            isnan(l->alpha) && l->min_runs < 0)
            continue;
        CG_FUZZ_CHECK(isfinite(l->max_regression_pct) && l->max_regression_pct >= 0, "metric %d", m);
        bool memory = m == CG_M_PEAK_DEVICE_MEMORY || m == CG_M_PEAK_HOST_RSS;
        if (memory)
            CG_FUZZ_CHECK(isfinite(l->max_regression_bytes), "metric %d bytes", m);
        else
            CG_FUZZ_CHECK(l->alpha > 0 && l->alpha <= 0.5 && l->min_runs >= 1, "metric %d", m);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cg_thresholds t;
    struct cg_err err;
    cg_err_init(&err);
    int rc = cg_thresholds_parse((const char *)data, size, "fuzz.json", &t, &err);
    if (rc != 0) {
        CG_FUZZ_CHECK(rc == CG_EINPUT, "code %d: %s", rc, err.msg);
        CG_FUZZ_CHECK(err.msg[0] != '\0', "no message");
        return 0;
    }
    check_limits(&t);
    return 0;
}
