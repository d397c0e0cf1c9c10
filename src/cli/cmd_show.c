/*
 * cmd_show: `canary-gate show FILE` prints a human summary of a run artifact: environment,
 * settings, each run's summary, a chart of the per-step times, the ops that take the most time
 * per step, and the diagnosis rules that apply to the artifact on its own.
 */
#include "cmd.h"
#include "redact.h"

#include "artifact.h"
#include "buf.h"
#include "chart.h"
#include "diagnose.h"
#include "report.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char usage_text[] =
    "usage: canary-gate show FILE [--ops N] [--ascii] [--no-chart]\n"
    "\n"
    "Prints a human summary of a run artifact, with a chart of its per-step times.\n"
    "\n"
    "  --ops N      list the N ops with the most time per step (default 10)\n"
    "  --ascii      draw the chart with ASCII characters (the default when the locale\n"
    "               (LC_ALL, LC_CTYPE, LANG) is not UTF-8)\n"
    "  --no-chart   leave the chart out\n"
    "  -h, --help   show this help\n";

enum { CHART_NONE, CHART_ASCII, CHART_UTF8 };

static const struct option options[] = {
    {"ops", required_argument, NULL, 'n'},
    {"ascii", no_argument, NULL, 'a'},
    {"no-chart", no_argument, NULL, 'c'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int cmp_op_time(const void *a, const void *b)
{
    const struct cg_op *x = a, *y = b;
    return (x->total_ns < y->total_ns) - (x->total_ns > y->total_ns);
}

/* True when the locale in effect for characters (the first set of LC_ALL, LC_CTYPE, LANG) is
 * UTF-8; an unset locale is "C", which is not. */
static bool locale_is_utf8(void)
{
    const char *vars[] = {"LC_ALL", "LC_CTYPE", "LANG"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);
        if (v == NULL || v[0] == '\0')
            continue;
        const char *dot = strchr(v, '.');
        return dot != NULL && (strncasecmp(dot + 1, "utf-8", 5) == 0 ||
                               strncasecmp(dot + 1, "utf8", 4) == 0);
    }
    return false;
}

static int render_findings(const struct cg_artifact *a, struct cg_buf *o)
{
    struct cg_diagnosis d;
    if (cg_diagnose(NULL, a, &d) != 0)
        return CG_ENOMEM;
    int rc = cg_buf_adds(o, d.n ? "\ndiagnosis (this artifact alone):\n" : "");
    for (size_t i = 0; i < d.n && rc == 0; i++) {
        const struct cg_finding *f = &d.items[i];
        rc = cg_buf_printf(o, "  %s: ", cg_diag_rule_name(f->rule));
        rc |= cg_term_escape(o, f->finding, CG_DIAG_TEXT_MAX);
        rc |= cg_buf_printf(o, "\n    try: %s\n", f->action);
    }
    return rc;
}

/* How the runs ended and what the injection library warned about (each warning once). */
static int render_measurement_notes(const struct cg_artifact *a, struct cg_buf *o)
{
    char stopped[160];
    int rc = 0;
    cg_report_stopped_text(a, stopped, sizeof(stopped));
    if (stopped[0])
        rc |= cg_buf_printf(o, "canary %s, once measured\n", stopped);
    for (size_t i = 0; i < a->n_runs; i++)
        for (size_t k = 0; k < a->runs[i].n_warnings; k++) {
            const char *w = a->runs[i].warnings[k];
            bool earlier = false;
            for (size_t j = 0; j < i && !earlier; j++)
                for (size_t m = 0; m < a->runs[j].n_warnings && !earlier; m++)
                    earlier = strcmp(a->runs[j].warnings[m], w) == 0;
            if (earlier)
                continue;
            rc |= cg_buf_adds(o, "library warning: ");
            rc |= cg_term_escape(o, w, 300);
            rc |= cg_buf_adds(o, "\n");
        }
    return rc;
}

/* What each run measured and where it ran, when recorded (docs/artifact.md: runs[].code and
 * runs[].placement): one line a run. */
static int render_run_facts(const struct cg_artifact *a, struct cg_buf *o)
{
    int rc = 0;
    for (size_t i = 0; i < a->n_runs; i++) {
        const struct cg_run *r = &a->runs[i];
        const struct cg_run_placement *pl = &r->placement;
        bool placed = pl->cpus != NULL || pl->cpu >= 0;
        if (!placed && r->code.git_commit == NULL && r->code.n_files == 0)
            continue;
        rc |= cg_buf_printf(o, "run %zu:", i);
        if (placed) {
            rc |= cg_buf_adds(o, " cpus ");
            rc |= cg_term_escape(o, pl->cpus != NULL ? pl->cpus : "unknown", 200);
            if (pl->cpu >= 0)
                rc |= cg_buf_printf(o, ", on cpu %lld", (long long)pl->cpu);
            if (pl->numa_node >= 0)
                rc |= cg_buf_printf(o, ", NUMA node %lld", (long long)pl->numa_node);
            rc |= cg_buf_adds(o, ";");
        }
        if (r->code.git_commit != NULL) {
            char commit[64];
            cg_report_short_commit(r->code.git_commit, commit, sizeof(commit));
            rc |= cg_buf_adds(o, " commit ");
            rc |= cg_term_escape(o, commit, sizeof(commit));
            rc |= cg_buf_adds(o, ";");
        }
        for (size_t k = 0; k < r->code.n_files; k++) {
            rc |= cg_buf_adds(o, " ");
            rc |= cg_term_escape(o, r->code.files[k].path, 200);
            rc |= cg_buf_adds(o, " ");
            rc |= cg_term_escape(o, r->code.files[k].hash, 64);
        }
        rc |= cg_buf_adds(o, "\n");
    }
    return rc;
}

static int render(const struct cg_artifact *a, long top, int chart, struct cg_buf *o)
{
    const struct cg_env *e = &a->env;
    int rc = cg_buf_printf(o, "schema_version %lld, recorded %s\n", (long long)a->schema_version,
                           a->created_utc ? a->created_utc : "n/a");
    rc |= cg_buf_adds(o, "gpu:     ");
    if (a->gpu_available) {
        rc |= cg_buf_printf(o, "%lld x ", (long long)e->gpu_count);
        rc |= cg_term_escape(o, e->gpu_model ? e->gpu_model : "unknown", 200);
    } else {
        rc |= cg_buf_adds(o, "unavailable: ");
        rc |= cg_term_escape(o, a->gpu_reason ? a->gpu_reason : "no reason recorded", 300);
    }
    rc |= cg_buf_adds(o, "\ncpu:     ");
    rc |= cg_term_escape(o, e->cpu_model ? e->cpu_model : "unknown", 200);
    rc |= cg_buf_adds(o, "\ncanary: ");
    for (size_t i = 0; i < e->n_canary_command; i++) {
        char *shown = cg_redact_apply(cg_redact_default(), e->canary_command[i]);
        rc |= cg_buf_adds(o, " ");
        rc |= shown != NULL ? cg_term_escape(o, shown, 200) : CG_ENOMEM;
        free(shown);
    }
    if (e->cupti_library != NULL) {
        rc |= cg_buf_adds(o, "\ncupti:   ");
        rc |= cg_term_escape(o, e->cupti_library, 300);
    }
    rc |= cg_buf_printf(o, "\nsettings: %lld steps after %lld warm-up, %lld runs asked, %zu in file\n\n",
                        (long long)a->settings.steps, (long long)a->settings.warmup,
                        (long long)a->settings.runs, a->n_runs);
    rc |= cg_buf_printf(o, "%4s %6s %12s %12s %12s %14s %12s %12s\n", "run", "steps", "mean",
                        "median", "p95", "tokens/s", "peak dev", "peak rss");
    for (size_t i = 0; i < a->n_runs; i++) {
        const struct cg_run_summary *s = &a->runs[i].summary;
        char mean[32], med[32], p95[32], tps[32], dev[32], rss[32];
        cg_fmt_ns(s->step_time_mean_ns, mean, sizeof(mean));
        cg_fmt_ns(s->step_time_median_ns, med, sizeof(med));
        cg_fmt_ns(s->step_time_p95_ns, p95, sizeof(p95));
        cg_fmt_metric(CG_M_TOKENS_PER_SEC, s->tokens_per_sec, tps, sizeof(tps));
        cg_fmt_metric(CG_M_PEAK_DEVICE_MEMORY,
                      s->peak_device_bytes >= 0 ? (double)s->peak_device_bytes : NAN, dev,
                      sizeof(dev));
        cg_fmt_metric(CG_M_PEAK_HOST_RSS,
                      s->peak_host_rss_bytes >= 0 ? (double)s->peak_host_rss_bytes : NAN, rss,
                      sizeof(rss));
        rc |= cg_buf_printf(o, "%4zu %6zu %12s %12s %12s %14s %12s %12s\n", i, a->runs[i].n_steps,
                            mean, med, p95, tps, dev, rss);
    }
    rc |= render_run_facts(a, o);
    rc |= render_measurement_notes(a, o);
    if (chart != CHART_NONE) {
        rc |= cg_buf_adds(o, "\n");
        rc |= cg_chart_terminal(o, a, 0, chart == CHART_ASCII);
    }
    rc |= render_findings(a, o);
    if (a->n_runs == 0 || a->runs[0].n_ops == 0 || top <= 0)
        return rc;
    const struct cg_run *r0 = &a->runs[0];
    struct cg_op *ops = malloc(r0->n_ops * sizeof(*ops));
    if (ops == NULL)
        return CG_ENOMEM;
    memcpy(ops, r0->ops, r0->n_ops * sizeof(*ops));
    qsort(ops, r0->n_ops, sizeof(*ops), cmp_op_time);
    rc |= cg_buf_printf(o, "\ntop ops of run 0 (time per step):\n");
    for (size_t i = 0; i < r0->n_ops && i < (size_t)top; i++) {
        char t[32];
        cg_fmt_ns((double)ops[i].total_ns / (double)r0->n_steps, t, sizeof(t));
        rc |= cg_buf_printf(o, "  %12s  %-7s %8.1f calls  ", t, cg_op_kind_name(ops[i].kind),
                            (double)ops[i].calls / (double)r0->n_steps);
        rc |= cg_term_escape(o, ops[i].name, 120);
        rc |= cg_buf_adds(o, "\n");
    }
    free(ops);
    return rc;
}

int cmd_show(int argc, char **argv)
{
    long top = 10;
    bool ascii = false, no_chart = false;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
        switch (c) {
        case 'n':
            if (cg_cmd_parse_count("show", "--ops", optarg, 0, 100000, &top) != 0)
                return CG_EXIT_INPUT;
            break;
        case 'a': ascii = true; break;
        case 'c': no_chart = true; break;
        case 'h': fputs(usage_text, stdout); return CG_EXIT_PASS;
        default: return cg_cmd_option_error("show", c, argv);
        }
    }
    if (argc - optind != 1)
        return cg_cmd_usage_error("show", "expected one artifact");
    struct cg_err err;
    struct cg_artifact a;
    struct cg_buf out;
    cg_err_init(&err);
    cg_buf_init(&out, 16 << 20);
    int exit_code = CG_EXIT_PASS;
    if (cg_artifact_load(argv[optind], &a, &err) != 0) {
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    int chart = no_chart ? CHART_NONE : ascii || !locale_is_utf8() ? CHART_ASCII : CHART_UTF8;
    if (render(&a, top, chart, &out) != 0) {
        cg_err_set(&err, CG_ENOMEM, "cannot show '%s': out of memory", argv[optind]);
        exit_code = cg_cmd_fail(&err);
    } else {
        fputs(cg_buf_str(&out), stdout);
    }
done:
    cg_buf_release(&out);
    cg_artifact_release(&a);
    return exit_code;
}
