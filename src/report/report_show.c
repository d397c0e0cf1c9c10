/*
 * report_show: the summary `canary-gate show` prints of one run artifact (report_show.h). Every
 * string that came from the artifact is escaped for a terminal; the canary's command is shown
 * with its secrets hidden.
 */
#include "report_show.h"

#include "chart.h"
#include "diagnose.h"
#include "redact.h"
#include "report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_op_time(const void *a, const void *b)
{
    const struct cg_op *x = a, *y = b;
    return (x->total_ns < y->total_ns) - (x->total_ns > y->total_ns);
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

int cg_report_show(const struct cg_artifact *a, long top, enum cg_show_chart chart,
                   struct cg_buf *o)
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
    rc |= cg_buf_printf(
        o, "\nsettings: %lld steps after %lld warm-up, %lld runs asked, %zu in file\n\n",
        (long long)a->settings.steps, (long long)a->settings.warmup, (long long)a->settings.runs,
        a->n_runs);
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
    if (chart != CG_SHOW_CHART_NONE) {
        rc |= cg_buf_adds(o, "\n");
        rc |= cg_chart_terminal(o, a, 0, chart == CG_SHOW_CHART_ASCII);
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
