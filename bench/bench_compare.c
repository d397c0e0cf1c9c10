/*
 * bench_compare: time to compare two artifacts of 10,000 ops and 5 runs x 1,000 steps per side
 * (verdict plus all three reports, files already parsed), and to load both files. Prints the
 * median of repeated measurements. Target: under 50 ms for the comparison on a 2-core machine.
 */
#include "artifact.h"
#include "bench.h"
#include "report.h"
#include "stats.h"
#include "thresholds.h"
#include "verdict.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OPS 10000
#define RUNS 5
#define STEPS 1000
#define REPEATS 9

static void build(struct cg_artifact *a, double scale, uint64_t seed)
{
    cg_artifact_init(a);
    a->env.cpu_model = strdup("bench");
    a->settings.steps = STEPS;
    a->settings.runs = RUNS;
    for (int r = 0; r < RUNS; r++) {
        struct cg_run *run = cg_artifact_add_run(a);
        for (int s = 0; s < STEPS; s++)
            cg_run_add_step(run, (int64_t)(1e7 * scale * (1.0 + (double)(cg_stats_rand(&seed) % 1000) / 1e5)), 1024, -1);
        for (int k = 0; k < OPS; k++) {
            char name[96];
            snprintf(name, sizeof(name), "void kernel_%d<float, %d>(float*, int)", k, k % 7);
            cg_run_add_op(run, name, NULL, CG_OP_KERNEL, STEPS, (int64_t)(1e6 * scale + (double)(cg_stats_rand(&seed) % 1000)));
        }
        cg_run_summarize(run);
        run->summary.peak_host_rss_bytes = 100000000;
    }
}

int main(void)
{
    struct cg_artifact base, cur, lb, lc;
    struct cg_thresholds t;
    struct cg_err err;
    build(&base, 1.0, 1);
    build(&cur, 1.03, 2);
    if (cg_thresholds_load(NULL, &t, &err) != 0 || cg_artifact_save("/tmp/cg-bench-base.json", &base, &err) != 0 ||
        cg_artifact_save("/tmp/cg-bench-cur.json", &cur, &err) != 0) {
        fprintf(stderr, "bench_compare: %s\n", err.msg);
        return 1;
    }
    double cmp_ms[REPEATS], load_ms[REPEATS];
    for (int i = 0; i < REPEATS; i++) {
        double t0 = 1e3 * cg_bench_now_s();
        struct cg_verdict v;
        struct cg_buf md, term;
        cg_buf_init(&md, CG_REPORT_MAX_BYTES + 1);
        cg_buf_init(&term, 1 << 20);
        cg_verdict_compute(&base, &cur, &t, &v, &err);
        cg_report_markdown(&v, NULL, &md, &err);
        cg_report_terminal(&v, false, &term, &err);
        free(cg_report_json(&v));
        cmp_ms[i] = 1e3 * cg_bench_now_s() - t0;
        cg_verdict_release(&v);
        cg_buf_release(&md);
        cg_buf_release(&term);
        t0 = 1e3 * cg_bench_now_s();
        cg_artifact_load("/tmp/cg-bench-base.json", &lb, &err);
        cg_artifact_load("/tmp/cg-bench-cur.json", &lc, &err);
        load_ms[i] = 1e3 * cg_bench_now_s() - t0;
        cg_artifact_release(&lb);
        cg_artifact_release(&lc);
    }
    printf("compare (verdict + markdown + terminal + json), %d ops, %d runs x %d steps per side:\n", OPS, RUNS, STEPS);
    printf("  median %.1f ms (min %.1f, max %.1f) over %d repeats; target < 50 ms\n", cg_bench_median(cmp_ms, REPEATS), cg_stats_quantile(cmp_ms, REPEATS, 0.0),
           cg_stats_quantile(cmp_ms, REPEATS, 1.0), REPEATS);
    printf("load both artifacts from JSON: median %.1f ms\n", cg_bench_median(load_ms, REPEATS));
    cg_artifact_release(&base);
    cg_artifact_release(&cur);
    remove("/tmp/cg-bench-base.json");
    remove("/tmp/cg-bench-cur.json");
    return 0;
}
