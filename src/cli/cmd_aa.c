/*
 * cmd_aa: `canary-gate aa [options] [-- CMD ARGS...]` runs the same canary as both sides of a
 * comparison, N runs each, turn about (A B B A ...; interleave.c), and reports what that says
 * about this runner (noise.c): the within-run and between-run coefficient of variation of every
 * metric, the false-alarm rate of the thresholds measured on A/A decisions re-split from these
 * runs, and the smallest max_regression_pct per metric that keeps false alarms at or under the
 * target here, as a thresholds snippet that extends the thresholds in use. Writes the 2N runs as
 * one artifact in the order measured; every output is checked before the canary runs (none the
 * same file as an input or another output, each writable). Exit: 0 measured and reported,
 * 2 usage, 3 the canary failed, timed out or was interrupted, or a file could not be written.
 */
#include "cmd.h"

#include "artifact.h"
#include "buf.h"
#include "cmd_options.h"
#include "collect.h"
#include "counts.h"
#include "fmt.h"
#include "fsutil.h"
#include "interleave.h"
#include "noise.h"
#include "report.h"
#include "report_gpu_aa.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
    "usage: canary-gate aa [options] [-- CMD ARGS...]\n"
    "\n"
    "Runs the canary (the built-in one when no CMD is given) as both sides of a comparison,\n"
    "N runs each in the order A B B A ..., and reports this runner's noise, the false-alarm\n"
    "rate of the thresholds measured on these runs, and the smallest thresholds that keep\n"
    "false alarms at or under the target here; whether its exact per-step counts are\n"
    "identical in every step of every run (docs/counts.md); and the GPU's own state across\n"
    "the runs (NVML: clocks, temperature, power, runs held back), advising to lock the clocks\n"
    "when they float (docs/detection.md).\n"
    "\n" CG_MEASURE_USAGE
    "  --out FILE             all 2N runs, in the order measured (default canary-aa.json)\n"
    "  --log FILE             the canary's output (default: --out with .log)\n"
    "  --json FILE            the A/A report as JSON\n"
    "  --target PCT           false-alarm rate the recommendation keeps (default 1)\n"
    "  -h, --help             show this help\n"
    "\n"
    "The false-alarm rate is the share of A/A decisions that FAIL: every split of the 2N runs\n"
    "into a baseline and a current side of N (at most 2000, else 2000 drawn at random), each\n"
    "judged at the thresholds as 'canary-gate compare' judges. It assumes the runs are\n"
    "exchangeable: drift between a stored baseline and later runs is not in it.\n"
    "\n"
    "exit codes: 0 measured and reported, 2 usage error (incl. an output that is the same file\n"
    "            as an input or another output), 3 the canary failed, timed out or was\n"
    "            interrupted, or an output could not be written\n";

enum { OPT_OUT = CG_OPT_COMMAND, OPT_LOG, OPT_JSON, OPT_TARGET };

static const struct option options[] = {
    CG_MEASURE_OPTIONS,
    {"out", required_argument, NULL, OPT_OUT},
    {"log", required_argument, NULL, OPT_LOG},
    {"json", required_argument, NULL, OPT_JSON},
    {"target", required_argument, NULL, OPT_TARGET},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void fmt_cv(double pct, char *dst, size_t n)
{
    if (isnan(pct))
        snprintf(dst, n, "-");
    else
        snprintf(dst, n, "%.2f%%", pct);
}

static void print_noise(const struct cg_noise *z, const struct cg_thresholds *t)
{
    printf("noise of this runner (%zu runs; CV = standard deviation / mean)\n", z->runs);
    printf("  %-20s %14s %14s %16s %16s\n", "metric", "median run", "within-run CV",
           "steps would give", "between-run CV");
    for (int m = 0; m < CG_M_COUNT; m++) {
        const struct cg_noise_metric *nm = &z->m[m];
        if (!nm->measured)
            continue;
        char med[48], w[32], p[32], b[32];
        cg_fmt_metric((enum cg_metric)m, nm->median, med, sizeof(med));
        fmt_cv(nm->within_cv_pct, w, sizeof(w));
        fmt_cv(nm->steps_predict_cv_pct, p, sizeof(p));
        fmt_cv(nm->between_cv_pct, b, sizeof(b));
        printf("  %-20s %14s %14s %16s %16s\n", cg_metric_name((enum cg_metric)m), med, w, p, b);
    }
    printf("  within-run: spread of the steps inside a run (median over runs); steps would give:\n"
           "  the run-to-run spread of a run's mean if its steps were independent; between-run:\n"
           "  the spread of whole runs, which the gate compares against\n\n");
    printf("false alarms at thresholds %s, on %zu A/A decisions of %zu runs against %zu (%s)\n",
           t->source, z->decisions, z->side, z->side,
           z->every_split ? "every split of these runs" : "random splits of these runs");
    printf("  %-20s %12s %8s %22s %14s\n", "metric", "threshold", "alpha", "false alarms",
           "recommended");
    for (int m = 0; m < CG_M_COUNT; m++) {
        const struct cg_noise_metric *nm = &z->m[m];
        if (!nm->measured)
            continue;
        char fa[48], rec[32], alpha[16] = "-";
        snprintf(fa, sizeof(fa), "%.2f%% (%zu of %zu)",
                 100.0 * (double)nm->fails / (double)z->decisions, nm->fails, z->decisions);
        if (isnan(nm->recommended_pct))
            snprintf(rec, sizeof(rec), "n/a");
        else
            snprintf(rec, sizeof(rec), "+%.1f%%", nm->recommended_pct);
        if (m != CG_M_PEAK_DEVICE_MEMORY && m != CG_M_PEAK_HOST_RSS)
            snprintf(alpha, sizeof(alpha), "%.3g", t->metric[m].alpha);
        printf("  %-20s %11.1f%% %8s %22s %14s\n", cg_metric_name((enum cg_metric)m),
               nm->threshold_pct, alpha, fa, rec);
    }
    printf("  any metric: FAIL %.2f%% (%zu of %zu), INCONCLUSIVE %.2f%%\n",
           100.0 * (double)z->fails / (double)z->decisions, z->fails, z->decisions,
           100.0 * (double)z->inconclusive / (double)z->decisions);
    printf("  recommended: the smallest max_regression_pct with false alarms <= %.3g%% here; n/a:\n"
           "  no decision could fail at any threshold (too few runs a side for min_runs, or no\n"
           "  growth beyond the byte tolerance). Splits of the same %zu runs are not independent:\n"
           "  more runs give firmer figures\n\n",
           100.0 * z->target, z->runs);
}

/* Whether the counts are exact on this runner: every count compared with itself over all the
 * pooled runs; a count that varies (within a run or between runs) is listed. */
static void print_counts(const struct cg_counts *c, const struct cg_thresholds *t)
{
    if (c->n == 0)
        return;
    printf("counts per step over these runs (docs/counts.md): %zu measured, %zu identical in "
           "every step of every run\n",
           c->n_compared, c->n_compared - c->n_varying);
    for (size_t i = 0; i < c->n; i++) {
        const struct cg_count_result *r = &c->rows[i];
        if (!r->varies)
            continue;
        char lo[32], hi[32];
        cg_report_count_value(r->base_lo, lo, sizeof(lo));
        cg_report_count_value(r->base_hi, hi, sizeof(hi));
        struct cg_buf name;
        cg_buf_init(&name, 1024);
        if (r->row < 0 && cg_term_escape(&name, r->name, 100) != 0)
            cg_buf_reset(&name);
        printf("  varies: %s%.*s (per-run medians %s to %s per step)\n",
               r->row >= 0 ? cg_count_name(r->row) : "range ", (int)name.len,
               name.data ? name.data : "", lo, hi);
        cg_buf_release(&name);
    }
    if (c->n_varying > 0)
        printf("  a count that varies means data-dependent work in the canary: it is gated with\n"
               "  the varying tolerance (+%g%%, counts.varying) instead of exactly; make the\n"
               "  canary's steps alike (fixed shapes, no data-dependent branches) to gate it\n"
               "  exactly\n\n",
               t->varying.max_increase_pct);
    else
        printf("  counts are exact here: any change in them is the code's\n\n");
}

/* The thresholds snippet: extends the thresholds in use, the recommended percentages. NULL when
 * out of memory. */
static char *snippet(const struct cg_noise *z, const char *extends, struct cg_buf *b)
{
    cJSON *name = cJSON_CreateString(extends);
    char *quoted = name ? cJSON_PrintUnformatted(name) : NULL;
    cJSON_Delete(name);
    if (quoted == NULL)
        return NULL;
    int rc = cg_buf_printf(b, "{\n  \"extends\": %s,\n  \"metrics\": {", quoted);
    free(quoted);
    const char *sep = "\n";
    for (int m = 0; m < CG_M_COUNT && rc == 0; m++) {
        if (!z->m[m].measured || isnan(z->m[m].recommended_pct))
            continue;
        rc = cg_buf_printf(b, "%s    \"%s\": {\"max_regression_pct\": %.1f}", sep,
                           cg_metric_name((enum cg_metric)m), z->m[m].recommended_pct);
        sep = ",\n";
    }
    rc |= cg_buf_adds(b, "\n  }\n}\n");
    return rc == 0 ? (char *)cg_buf_str(b) : NULL;
}

static cJSON *num(double v)
{
    return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static cJSON *counts_json(const struct cg_counts *c)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "measured", (double)c->n_compared);
    cJSON_AddNumberToObject(o, "identical", (double)(c->n_compared - c->n_varying));
    cJSON *vary = cJSON_AddArrayToObject(o, "varying");
    for (size_t i = 0; i < c->n; i++) {
        const struct cg_count_result *r = &c->rows[i];
        if (!r->varies)
            continue;
        cJSON *x = cJSON_CreateObject();
        if (r->row >= 0)
            cJSON_AddStringToObject(x, "count", cg_count_name(r->row));
        else
            cJSON_AddStringToObject(x, "range", r->name);
        cJSON_AddItemToObject(x, "min_per_step", num(r->base_lo));
        cJSON_AddItemToObject(x, "max_per_step", num(r->base_hi));
        cJSON_AddItemToArray(vary, x);
    }
    return o;
}

static char *report_json(const struct cg_noise *z, const struct cg_counts *counts,
                         const struct cg_thresholds *t, const char *snip, const char *gpu_text,
                         bool lock_clocks)
{
    cJSON *root = cJSON_CreateObject();
    if (root == NULL)
        return NULL;
    cJSON_AddStringToObject(root, "gpu_state", gpu_text);
    cJSON_AddBoolToObject(root, "lock_clocks_advised", lock_clocks);
    cJSON_AddStringToObject(root, "schema", "canary-gate/aa");
    cJSON_AddNumberToObject(root, "schema_version", 1);
    cJSON_AddStringToObject(root, "thresholds", t->source);
    cJSON_AddNumberToObject(root, "runs", (double)z->runs);
    cJSON_AddNumberToObject(root, "runs_per_side", (double)z->side);
    cJSON_AddNumberToObject(root, "decisions", (double)z->decisions);
    cJSON_AddBoolToObject(root, "every_split", z->every_split);
    cJSON_AddNumberToObject(root, "target_false_alarm_rate", z->target);
    cJSON_AddNumberToObject(root, "false_alarm_rate", (double)z->fails / (double)z->decisions);
    cJSON_AddNumberToObject(root, "inconclusive_rate",
                            (double)z->inconclusive / (double)z->decisions);
    cJSON *metrics = cJSON_AddArrayToObject(root, "metrics");
    for (int m = 0; m < CG_M_COUNT; m++) {
        const struct cg_noise_metric *nm = &z->m[m];
        if (!nm->measured)
            continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", cg_metric_name((enum cg_metric)m));
        cJSON_AddItemToObject(o, "median", num(nm->median));
        cJSON_AddItemToObject(o, "within_run_cv_pct", num(nm->within_cv_pct));
        cJSON_AddItemToObject(o, "steps_predict_cv_pct", num(nm->steps_predict_cv_pct));
        cJSON_AddItemToObject(o, "between_run_cv_pct", num(nm->between_cv_pct));
        cJSON_AddItemToObject(o, "threshold_pct", num(nm->threshold_pct));
        cJSON_AddNumberToObject(o, "false_alarms", (double)nm->fails);
        cJSON_AddNumberToObject(o, "false_alarm_rate", (double)nm->fails / (double)z->decisions);
        cJSON_AddItemToObject(o, "recommended_max_regression_pct", num(nm->recommended_pct));
        cJSON_AddItemToArray(metrics, o);
    }
    cJSON_AddItemToObject(root, "counts", counts_json(counts));
    cJSON_AddItemToObject(root, "recommended_thresholds", cJSON_Parse(snip));
    char *s = cJSON_Print(root);
    cJSON_Delete(root);
    return s;
}

static int parse_target(const char *v, double *out)
{
    char *end = NULL;
    double d = strtod(v, &end);
    if (end == v || *end != '\0' || !(d > 0.0 && d < 100.0))
        return cg_cmd_usage_error("aa", "--target '%s': expected a percentage above 0, below 100",
                                  v);
    *out = d / 100.0;
    return 0;
}

/* Measures the pairs and pools them in the order measured; 0 or the exit code. */
static int measure(struct cg_collect_cfg *c, long runs, struct cg_artifact *pool)
{
    struct cg_collector *ca = NULL, *cb = NULL;
    struct cg_artifact a, b;
    struct cg_err err;
    int exit_code = 0;
    cg_err_init(&err);
    cg_artifact_init(&a);
    cg_artifact_init(&b);
    struct cg_collect_cfg cfg_a = *c, cfg_b = *c;
    cfg_a.label = "A";
    cfg_b.label = "B";
    if (cg_collector_new(&cfg_a, &ca, &err) != 0 || cg_collector_new(&cfg_b, &cb, &err) != 0) {
        exit_code =
            err.code == CG_EINPUT ? cg_cmd_usage_error("aa", "%s", err.msg) : cg_cmd_fail(&err);
        goto done;
    }
    if (cg_interleave_run(ca, &a, cb, &b, runs, &err) != 0) {
        exit_code = cg_cmd_fail(&err);
        cg_collect_hint(&err, c->step_range, &c->say);
        goto done;
    }
    if (cg_interleave_pool(&a, &b, pool) != 0) {
        cg_err_set(&err, CG_ENOMEM, "out of memory");
        exit_code = cg_cmd_fail(&err);
    }
done:
    cg_collector_free(ca);
    cg_collector_free(cb);
    cg_artifact_release(&a);
    cg_artifact_release(&b);
    return exit_code;
}

int cmd_aa(int argc, char **argv)
{
    struct cg_measure_opts mo;
    struct cg_collect_cfg c;
    struct cg_thresholds t;
    struct cg_artifact pool;
    struct cg_noise z;
    struct cg_counts counts = {0};
    struct cg_err err;
    const char *out = "canary-aa.json", *log = NULL, *json_path = NULL;
    char *log_owned = NULL, *json = NULL;
    const char *snip = NULL;
    struct cg_buf snip_buf, gpu_buf;
    double target = 0.01;
    long runs;
    int opt, exit_code = CG_EXIT_PASS;
    cg_measure_opts_init(&mo);
    cg_err_init(&err);
    cg_buf_init(&snip_buf, 1 << 16);
    cg_buf_init(&gpu_buf, 1 << 16);
    optind = 1;
    while ((opt = getopt_long(argc, argv, "+:h", options, NULL)) != -1) {
        int bad = cg_measure_option("aa", opt, optarg, &mo);
        if (bad == 1) {
            bad = 0;
            switch (opt) {
            case OPT_OUT:
                out = optarg;
                break;
            case OPT_LOG:
                log = optarg;
                break;
            case OPT_JSON:
                json_path = optarg;
                break;
            case OPT_TARGET:
                bad = parse_target(optarg, &target);
                break;
            case 'h':
                fputs(usage_text, stdout);
                return CG_EXIT_PASS;
            default:
                return cg_cmd_option_error("aa", opt, argv);
            }
        }
        if (bad)
            return bad;
    }
    if (cg_measure_settle(&mo, &t, &c, &runs, &err) != 0)
        return cg_cmd_fail(&err);
    if (optind < argc)
        c.cmd = argv + optind;
    if (log == NULL && (log = log_owned = cg_collect_log_path(out)) == NULL) {
        cg_err_set(&err, CG_ENOMEM, "out of memory");
        return cg_cmd_fail(&err);
    }
    c.log = log;
    cg_artifact_init(&pool);
    struct cg_outputs paths;
    cg_outputs_init(&paths);
    cg_cmd_add_thresholds(&paths, mo.thresholds);
    cg_outputs_add(&paths, CG_PATH_OUTPUT, "--out", out);
    cg_outputs_add(&paths, CG_PATH_IN_PLACE, log_owned == NULL ? "--log" : "the canary's log", log);
    cg_outputs_add(&paths, CG_PATH_OUTPUT, "--json", json_path);
    if ((exit_code = cg_cmd_check_outputs(&paths)) != 0)
        goto done;
    fprintf(stderr,
            "canary-gate aa: %ld runs a side (A B B A ...) of %ld steps after %ld warm-up, "
            "thresholds %s\n",
            runs, c.steps, c.warmup, t.source);
    if ((exit_code = measure(&c, runs, &pool)) != 0)
        goto done;
    if (cg_artifact_save(out, &pool, &err) != 0 ||
        cg_noise_analyse(&pool, (size_t)runs, &t, target, 0x6161ULL, &z, &err) != 0 ||
        cg_counts_compare(&pool, &pool, &t, &counts, &err) != 0) {
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    const char *extends = mo.thresholds ? mo.thresholds : "default";
    bool lock_clocks = false;
    if (cg_report_gpu_aa(&pool, &gpu_buf, &lock_clocks) != 0 ||
        (snip = snippet(&z, extends, &snip_buf)) == NULL ||
        (json_path != NULL &&
         (json = report_json(&z, &counts, &t, snip, cg_buf_str(&gpu_buf), lock_clocks)) == NULL)) {
        cg_err_set(&err, CG_ENOMEM, "out of memory");
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    print_noise(&z, &t);
    print_counts(&counts, &t);
    printf("%s\n", cg_buf_str(&gpu_buf));
    printf("thresholds for this runner (false alarms <= %.3g%% here):\n%s", 100.0 * target, snip);
    fflush(stdout);
    if (json_path != NULL && cg_file_write_atomic(json_path, json, strlen(json), &err) != 0) {
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    fprintf(stderr, "canary-gate aa: artifact '%s', canary output '%s'%s%s\n", out, log,
            json_path ? ", report " : "", json_path ? json_path : "");
done:
    cg_counts_release(&counts);
    cg_buf_release(&snip_buf);
    cg_buf_release(&gpu_buf);
    free(json);
    free(log_owned);
    cg_artifact_release(&pool);
    return exit_code;
}
