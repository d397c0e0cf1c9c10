/*
 * chart-samples: writes the mermaid charts of full markdown reports (cg_report_markdown on seeded
 * fixture artifacts) for ci/mermaid, which renders each with @mermaid-js/mermaid-cli and fails on
 * a parse error. The samples span the step times the chart must draw: sub-millisecond, ordinary,
 * slow (12 s a step, where "%g" would write exponents), flat, and long runs drawn in fewer points;
 * the ordinary and flat ones have GPU busy time, the ordinary one communication, so their reports
 * also draw the step anatomy's stacked bars.
 *
 *   chart-samples DIR     writes DIR/<name>.mmd, <name>-2.mmd, ... (each chart's mermaid text,
 *                         without the fence)
 *
 * Exits 0, or 1 with a message when a report has no chart or a file cannot be written.
 */
#include "fixtures.h"
#include "report.h"
#include "thresholds.h"
#include "verdict.h"

#include <stdio.h>
#include <string.h>

struct sample {
    const char *name;
    size_t steps;
    double base_ns, cur_ns;
    double step_noise;
    double busy, compute; /* shares of the step (baseline; current 5 points lower), 0: none */
};

static const struct sample samples[] = {
    {"sub-millisecond", 40, 0.2e6, 0.23e6, 0.05, 0, 0},
    {"ordinary", 60, 10e6, 12e6, 0.02, 0.85, 0.7},
    {"slow-12s", 30, 12e9, 11.61e9, 0.01, 0, 0},
    {"flat", 20, 50e6, 50e6, 0.0, 0.6, 0.6},
    {"long-downsampled", 1000, 25e6, 26e6, 0.03, 0, 0},
};

static int write_chart(const char *dir, const struct sample *s)
{
    struct cg_artifact base, cur;
    struct cg_thresholds t;
    struct cg_verdict v;
    struct cg_err err;
    struct cg_buf md;
    struct cg_fixture fb = {3, s->steps, s->base_ns, 0.01, s->step_noise, 512, -1, 1 << 28, 2, 1};
    struct cg_fixture fc = fb;
    int rc = 1;
    fc.mean_ns = s->cur_ns;
    fc.seed = 2;
    cg_err_init(&err);
    cg_artifact_init(&base);
    cg_artifact_init(&cur);
    cg_buf_init(&md, CG_REPORT_MAX_BYTES + 1);
    if (cg_fixture_make(&base, &fb) != 0 || cg_fixture_make(&cur, &fc) != 0) {
        fprintf(stderr, "chart-samples: %s: out of memory\n", s->name);
        goto done;
    }
    for (int side = 0; s->busy > 0 && side < 2; side++) {
        struct cg_artifact *a = side ? &cur : &base;
        double busy = s->busy - side * 0.05, compute = s->compute - side * 0.05;
        cg_fixture_set_busy(a, busy);
        for (size_t r = 0; r < a->n_runs; r++)
            for (size_t k = 0; k < a->runs[r].n_steps; k++)
                a->runs[r].steps[k].compute_ns =
                    (int64_t)((double)a->runs[r].steps[k].gpu_busy_ns * compute / busy);
    }
    if (cg_thresholds_load("default", &t, &err) != 0 ||
        cg_verdict_compute(&base, &cur, &t, &v, &err) != 0) {
        fprintf(stderr, "chart-samples: %s: cannot compute a verdict: %s\n", s->name, err.msg);
        goto done;
    }
    if (cg_report_markdown(&v, NULL, &md, &err) != 0) {
        fprintf(stderr, "chart-samples: %s: %s\n", s->name, err.msg);
        goto verdict;
    }
    int charts = 0, want = s->busy > 0 ? 2 : 1;
    rc = 0;
    for (const char *open = strstr(cg_buf_str(&md), "```mermaid\n"); open != NULL && rc == 0;
         open = strstr(open + 1, "```mermaid\n")) {
        const char *close = strstr(open + 11, "\n```\n");
        if (close == NULL)
            break;
        char path[4096];
        int n = ++charts == 1 ? snprintf(path, sizeof(path), "%s/%s.mmd", dir, s->name)
                              : snprintf(path, sizeof(path), "%s/%s-%d.mmd", dir, s->name, charts);
        FILE *f = n > 0 && (size_t)n < sizeof(path) ? fopen(path, "w") : NULL;
        if (f == NULL) {
            fprintf(stderr, "chart-samples: cannot write a chart of '%s' in '%s'\n", s->name, dir);
            rc = 1;
            break;
        }
        size_t len = (size_t)(close - (open + 11)) + 1;
        rc = fwrite(open + 11, 1, len, f) == len ? 0 : 1;
        if (fclose(f) != 0 || rc != 0) {
            fprintf(stderr, "chart-samples: cannot write '%s'\n", path);
            rc = 1;
        }
    }
    if (rc == 0 && charts != want) {
        fprintf(stderr, "chart-samples: %s: the report has %d mermaid charts, not %d\n", s->name,
                charts, want);
        rc = 1;
    }
verdict:
    cg_verdict_release(&v);
done:
    cg_buf_release(&md);
    cg_artifact_release(&base);
    cg_artifact_release(&cur);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: chart-samples DIR\n");
        return 2;
    }
    int rc = 0;
    for (size_t i = 0; i < sizeof(samples) / sizeof(samples[0]); i++)
        rc |= write_chart(argv[1], &samples[i]);
    return rc;
}
