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
#include "report_aa.h"
#include "report_gpu_aa.h"

#include <getopt.h>
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
    bool env_said = false; /* the inherited variables are named once, not once per side */
    cfg_a.env_said = cfg_b.env_said = &env_said;
    cfg_a.label = "A";
    cfg_b.label = "B";
    if (cg_collector_new(&cfg_a, &ca, &err) != 0 || cg_collector_new(&cfg_b, &cb, &err) != 0) {
        exit_code =
            err.code == CG_EINPUT ? cg_cmd_usage_error("aa", "%s", err.msg) : cg_cmd_fail(&err);
        goto done;
    }
    if (cg_interleave_run(ca, &a, cb, &b, runs, &err) != 0) {
        exit_code = cg_cmd_fail(&err);
        struct cg_collector *side = cg_interleave_failed_a(&a, &b) ? ca : cb;
        struct cg_collect_failure why = cg_collector_failure(side);
        cg_collect_hint(&why, &err, c->step_range, &c->say);
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
    struct cg_buf snip_buf, gpu_buf, text_buf;
    double target = 0.01;
    long runs;
    int opt, exit_code = CG_EXIT_PASS;
    cg_measure_opts_init(&mo);
    cg_err_init(&err);
    cg_buf_init(&snip_buf, 1 << 16);
    cg_buf_init(&gpu_buf, 1 << 16);
    cg_buf_init(&text_buf, 1 << 20);
    optind = 1;
    struct cg_cmd_given given = {0};
    while ((opt = cg_cmd_getopt("aa", argc, argv, "+:h", options, &given)) != -1) {
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
        (snip = cg_report_aa_snippet(&z, extends, &snip_buf)) == NULL ||
        (json_path != NULL && (json = cg_report_aa_json(&z, &counts, &t, snip, cg_buf_str(&gpu_buf),
                                                        lock_clocks)) == NULL) ||
        cg_report_aa_text(&z, &counts, &t, cg_buf_str(&gpu_buf), snip, &text_buf) != 0) {
        cg_err_set(&err, CG_ENOMEM, "out of memory");
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    fputs(cg_buf_str(&text_buf), stdout);
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
    cg_buf_release(&text_buf);
    free(json);
    free(log_owned);
    cg_artifact_release(&pool);
    return exit_code;
}
