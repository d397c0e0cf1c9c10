/*
 * chart-samples: writes the step-time chart of full markdown reports (cg_report_markdown on seeded
 * fixture artifacts) for ci/mermaid, which renders each with @mermaid-js/mermaid-cli and fails on
 * a parse error. The samples span the step times the chart must draw: sub-millisecond, ordinary,
 * slow (12 s a step, where "%g" would write exponents), flat, and long runs drawn in fewer points.
 *
 *   chart-samples DIR     writes DIR/<name>.mmd (the chart's mermaid text, without the fence)
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
};

static const struct sample samples[] = {
    {"sub-millisecond", 40, 0.2e6, 0.23e6, 0.05},
    {"ordinary", 60, 10e6, 12e6, 0.02},
    {"slow-12s", 30, 12e9, 11.61e9, 0.01},
    {"flat", 20, 50e6, 50e6, 0.0},
    {"long-downsampled", 1000, 25e6, 26e6, 0.03},
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
    if (cg_fixture_make(&base, &fb) != 0 || cg_fixture_make(&cur, &fc) != 0 ||
        cg_thresholds_load("default", &t, &err) != 0 ||
        cg_verdict_compute(&base, &cur, &t, &v, &err) != 0) {
        fprintf(stderr, "chart-samples: %s: cannot compute a verdict: %s\n", s->name, err.msg);
        goto done;
    }
    if (cg_report_markdown(&v, NULL, &md, &err) != 0) {
        fprintf(stderr, "chart-samples: %s: %s\n", s->name, err.msg);
        goto verdict;
    }
    const char *open = strstr(cg_buf_str(&md), "```mermaid\n");
    const char *close = open != NULL ? strstr(open + 11, "\n```\n") : NULL;
    if (close == NULL) {
        fprintf(stderr, "chart-samples: %s: the report has no mermaid chart\n", s->name);
        goto verdict;
    }
    char path[4096];
    int n = snprintf(path, sizeof(path), "%s/%s.mmd", dir, s->name);
    FILE *f = n > 0 && (size_t)n < sizeof(path) ? fopen(path, "w") : NULL;
    if (f == NULL) {
        fprintf(stderr, "chart-samples: cannot write '%s/%s.mmd'\n", dir, s->name);
        goto verdict;
    }
    size_t len = (size_t)(close - (open + 11)) + 1;
    rc = fwrite(open + 11, 1, len, f) == len ? 0 : 1;
    if (fclose(f) != 0 || rc != 0) {
        fprintf(stderr, "chart-samples: cannot write '%s'\n", path);
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
