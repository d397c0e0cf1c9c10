/*
 * bench_compare: time to compare two artifacts of 10,000 ops and 5 runs x 1,000 steps per side
 * (verdict plus all three reports, files already parsed), and to load both files from JSON.
 * Prints the median of repeated measurements (9, or the count given as the only argument) of
 * each against its target on a 2-core machine: under 50 ms for the comparison, under 300 ms for
 * the load. A step that fails stops the benchmark (exit 1): a failed step would time nothing.
 * Results beside the commit that set the targets: bench/RESULTS.md.
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
#define MAX_REPEATS 99
#define BASE_PATH "/tmp/cg-bench-base.json"
#define CUR_PATH "/tmp/cg-bench-cur.json"
#define COMPARE_TARGET_MS 50.0
#define LOAD_TARGET_MS 300.0

static void build(struct cg_artifact *a, double scale, uint64_t seed)
{
    cg_artifact_init(a);
    a->env.cpu_model = strdup("bench");
    a->settings.steps = STEPS;
    a->settings.runs = RUNS;
    for (int r = 0; r < RUNS; r++) {
        struct cg_run *run = cg_artifact_add_run(a);
        for (int s = 0; s < STEPS; s++)
            cg_run_add_step(
                run, (int64_t)(1e7 * scale * (1.0 + (double)(cg_stats_rand(&seed) % 1000) / 1e5)),
                1024, -1);
        for (int k = 0; k < OPS; k++) {
            char name[96];
            snprintf(name, sizeof(name), "void kernel_%d<float, %d>(float*, int)", k, k % 7);
            cg_run_add_op(run, name, NULL, CG_OP_KERNEL, STEPS,
                          (int64_t)(1e6 * scale + (double)(cg_stats_rand(&seed) % 1000)));
        }
        cg_run_summarize(run);
        run->summary.peak_host_rss_bytes = 100000000;
    }
}

/* One comparison: verdict and the three reports; 0 or the first error. */
static int compare_once(const struct cg_artifact *base, const struct cg_artifact *cur,
                        const struct cg_thresholds *t, struct cg_err *err)
{
    struct cg_verdict v;
    struct cg_buf md, term;
    cg_buf_init(&md, CG_REPORT_MAX_BYTES + 1);
    cg_buf_init(&term, 1 << 20);
    int rc = cg_verdict_compute(base, cur, t, &v, err);
    if (rc != 0)
        return rc;
    rc = cg_report_markdown(&v, NULL, &md, err);
    if (rc == 0)
        rc = cg_report_terminal(&v, false, &term, err);
    char *json = rc == 0 ? cg_report_json(&v) : NULL;
    if (rc == 0 && json == NULL)
        rc = cg_err_set(err, CG_ENOMEM, "cannot render the JSON verdict");
    free(json);
    cg_verdict_release(&v);
    cg_buf_release(&md);
    cg_buf_release(&term);
    return rc;
}

static void print_figure(const char *what, const double *ms, int n, double target_ms)
{
    double median = cg_bench_median(ms, (size_t)n);
    printf("%s: %.1f ms median (min %.1f, max %.1f; target < %.0f ms: %s)\n", what, median,
           cg_stats_quantile(ms, (size_t)n, 0.0), cg_stats_quantile(ms, (size_t)n, 1.0), target_ms,
           median < target_ms ? "met" : "MISSED");
}

int main(int argc, char **argv)
{
    int repeats = REPEATS;
    if (argc == 2) {
        char *end;
        long v = strtol(argv[1], &end, 10);
        repeats = end != argv[1] && *end == '\0' && v >= 1 && v <= MAX_REPEATS ? (int)v : 0;
    }
    if (argc > 2 || repeats == 0) {
        fprintf(stderr, "usage: bench_compare [REPEATS (1-%d, default %d)]\n", MAX_REPEATS,
                REPEATS);
        return 2;
    }
    struct cg_artifact base, cur, lb, lc;
    struct cg_thresholds t;
    struct cg_err err;
    build(&base, 1.0, 1);
    build(&cur, 1.03, 2);
    if (cg_thresholds_load(NULL, &t, &err) != 0 || cg_artifact_save(BASE_PATH, &base, &err) != 0 ||
        cg_artifact_save(CUR_PATH, &cur, &err) != 0) {
        fprintf(stderr, "bench_compare: %s\n", err.msg);
        return 1;
    }
    double cmp_ms[MAX_REPEATS], load_ms[MAX_REPEATS];
    int rc = 0;
    for (int i = 0; i < repeats && rc == 0; i++) {
        double t0 = 1e3 * cg_bench_now_s();
        rc = compare_once(&base, &cur, &t, &err);
        cmp_ms[i] = 1e3 * cg_bench_now_s() - t0;
        if (rc != 0)
            break;
        t0 = 1e3 * cg_bench_now_s();
        rc = cg_artifact_load(BASE_PATH, &lb, &err);
        if (rc == 0 && (rc = cg_artifact_load(CUR_PATH, &lc, &err)) != 0)
            cg_artifact_release(&lb);
        load_ms[i] = 1e3 * cg_bench_now_s() - t0;
        if (rc == 0) {
            cg_artifact_release(&lb);
            cg_artifact_release(&lc);
        }
    }
    if (rc == 0) {
        printf("bench_compare: %d ops, %d runs x %d steps per side, median of %d repeats\n", OPS,
               RUNS, STEPS, repeats);
        print_figure("compare (verdict + markdown + terminal + json)", cmp_ms, repeats,
                     COMPARE_TARGET_MS);
        print_figure("load (both artifacts from JSON)", load_ms, repeats, LOAD_TARGET_MS);
    } else {
        fprintf(stderr, "bench_compare: %s\n", err.msg);
    }
    cg_artifact_release(&base);
    cg_artifact_release(&cur);
    remove(BASE_PATH);
    remove(CUR_PATH);
    return rc == 0 ? 0 : 1;
}
