/*
 * bench: helpers shared by the benchmarks: a monotonic clock and the median of repeats
 * (through cg_stats_quantile, the same quantile the gate reports).
 */
#ifndef CG_BENCH_H
#define CG_BENCH_H

#include "stats.h"

#include <stddef.h>
#include <time.h>

/* Seconds on CLOCK_MONOTONIC. */
static inline double cg_bench_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Median of n values (interpolated for even n); v is not modified. */
static inline double cg_bench_median(const double *v, size_t n)
{
    return cg_stats_quantile(v, n, 0.5);
}

#endif
