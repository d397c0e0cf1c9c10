/*
 * bench_cupti_agg: records per second through the injection library's CUPTI aggregation
 * (inject/aggregate.c, compiled in here), fed with synthetic records of the installed CUPTI
 * types (CUpti_ActivityKernel10, CUpti_ActivityMemcpy6), next to a bare loop that only sums the
 * same records' durations. One core, median of repeats. Prints a small table; never run by ctest.
 *
 * The workload: 50 buffers of 8 MiB (about 1.9 million records), one step per buffer, 200
 * distinct kernel names, 4 streams whose kernels overlap, one copy every 50 records, records in
 * time order within a buffer as CUPTI delivers them. The buffer is rewritten before each timed
 * pass, so both loops read it warm, as the library does right after CUPTI filled it.
 */
#include "bench.h"
#include <stdio.h>

#if CG_HAVE_CUPTI

#include "../inject/aggregate.c"

#include <time.h>

#define BUFFER_BYTES ((size_t)8 * 1024 * 1024)
#define N_BUFFERS 50
#define N_NAMES 200
#define REPEATS 7

union rec {
    CUpti_ActivityKernel10 k;
    CUpti_ActivityMemcpy6 m;
};

/* Rewrites the buffer's records for pass p (CUPTI has just written a buffer when we read it,
 * so this also leaves it warm in the cache, as it is in the library). */
static void fill(union rec *recs, size_t n, uint64_t p, char (*names)[48])
{
    for (uint64_t i = 0; i < n; i++) {
        uint64_t g = p * n + i;
        uint64_t t = 1000000 + g * 1000 + (g % 4) * 300; /* 4 streams, overlapping */
        memset(&recs[i], 0, sizeof(recs[i]));
        if (g % 50 == 49) {
            recs[i].m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
            recs[i].m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
            recs[i].m.start = t;
            recs[i].m.end = t + 400;
        } else {
            recs[i].k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
            recs[i].k.start = t;
            recs[i].k.end = t + 900 + (g % 7) * 100;
            recs[i].k.name = names[(g * 7919) % N_NAMES];
        }
    }
}

int main(void)
{
    static char names[N_NAMES][48];
    const size_t per_buf = BUFFER_BYTES / sizeof(union rec);
    union rec *recs = aligned_alloc(8, per_buf * sizeof(union rec));
    if (recs == NULL)
        return 1;
    for (int i = 0; i < N_NAMES; i++)
        snprintf(names[i], sizeof(names[i]), "_Z13kernel_%03dPfS_i", i);
    double agg_s[REPEATS], bare_s[REPEATS];
    volatile int64_t sink = 0;
    for (int r = 0; r < REPEATS; r++) {
        struct cg_agg g;
        if (cg_agg_init(&g, 1) != 0)
            return 1;
        bare_s[r] = agg_s[r] = 0.0;
        for (uint64_t p = 0; p < N_BUFFERS; p++) {
            /* one step per buffer, as NVTX reports it before its records arrive */
            uint64_t t_begin = 1000000 + p * per_buf * 1000;
            cg_agg_step_begin(&g, (int64_t)p, t_begin);
            cg_agg_step_end(&g, (int64_t)p, t_begin + per_buf * 1000 - 1);

            fill(recs, per_buf, p, names);
            double t0 = cg_bench_now_s();
            int64_t sum = 0;
            for (size_t i = 0; i < per_buf; i++) {
                const CUpti_Activity *a = (const CUpti_Activity *)(const void *)&recs[i];
                if (a->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
                    sum += (int64_t)(recs[i].k.end - recs[i].k.start);
                else
                    sum += (int64_t)(recs[i].m.end - recs[i].m.start);
            }
            bare_s[r] += cg_bench_now_s() - t0;
            sink += sum;

            fill(recs, per_buf, p, names);
            t0 = cg_bench_now_s();
            for (size_t i = 0; i < per_buf; i++)
                cg_agg_record(&g, (const CUpti_Activity *)(const void *)&recs[i]);
            cg_agg_settle(&g, p + 1 == N_BUFFERS);
            agg_s[r] += cg_bench_now_s() - t0;
        }
        sink += g.steps[N_BUFFERS - 1].busy_ns;
        cg_agg_release(&g);
    }
    double n = (double)per_buf * N_BUFFERS;
    double agg = cg_bench_median(agg_s, REPEATS), bare = cg_bench_median(bare_s, REPEATS);
    printf("bench_cupti_agg: %.0f records in %d buffers of %zu MiB (%zu-byte kernel records), "
           "%d kernel names, median of %d\n", n, N_BUFFERS, BUFFER_BYTES >> 20,
           sizeof(CUpti_ActivityKernel10), N_NAMES, REPEATS);
    printf("  %-38s %7.1f M records/s  %6.2f ns/record\n", "aggregation (attribution, union, ops)",
           n / agg / 1e6, agg / n * 1e9);
    printf("  %-38s %7.1f M records/s  %6.2f ns/record\n", "bare loop (sum of durations)",
           n / bare / 1e6, bare / n * 1e9);
    printf("  aggregation / bare loop speed: %.2f (target >= 0.5); target >= 20 M records/s\n",
           bare / agg);
    free(recs);
    return sink == 42 ? 2 : 0;
}

#else

int main(void)
{
    printf("bench_cupti_agg: built without CUPTI headers\n");
    return 0;
}

#endif
