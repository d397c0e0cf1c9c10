/*
 * detect_model: pools of runs drawn from a model of per-process states (see detect_model.h).
 */
#include "detect_model.h"

#include "stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cg_detect_model_parse(const char *spec, struct cg_detect_model *m)
{
    *m = (struct cg_detect_model){0.5, 7.0, 28.0, 0.015, 0.02, 2e7, 0x6d6f64656cULL};
    char *end;
    m->slow_share = strtod(spec, &end);
    if (*end != ':' || !(m->slow_share >= 0.0 && m->slow_share <= 1.0))
        goto bad;
    m->slow_lo_pct = strtod(end + 1, &end);
    if (*end != ':')
        goto bad;
    m->slow_hi_pct = strtod(end + 1, &end);
    if (*end != '\0' || !(m->slow_lo_pct >= 0.0 && m->slow_hi_pct >= m->slow_lo_pct))
        goto bad;
    return 0;
bad:
    fprintf(stderr, "bench_detect: --model '%s': expected SHARE:LO:HI (a share from 0 to 1 of "
                    "slow processes, LO <= HI percent slower; e.g. 0.5:7:28)\n", spec);
    return -1;
}

static double unit(uint64_t *rng)
{
    return (double)(cg_stats_rand(rng) >> 11) / 9007199254740992.0; /* [0, 1) */
}

static double normal(uint64_t *rng)
{
    double u = unit(rng), v = unit(rng);
    return sqrt(-2.0 * log(u > 0.0 ? u : 1e-300)) * cos(6.283185307179586 * v);
}

/* One run of steps drawn from m into r (its steps already allocated). */
static void draw_run(struct cg_run *r, const struct cg_detect_model *m, double level,
                     uint64_t *rng)
{
    double process = exp(m->process_cv * normal(rng));
    if (unit(rng) < m->slow_share)
        process *= 1.0 + (m->slow_lo_pct + (m->slow_hi_pct - m->slow_lo_pct) * unit(rng)) / 100.0;
    for (size_t k = 0; k < r->n_steps; k++) {
        double ns = m->mean_ns * (1.0 + level) * process * exp(m->step_cv * normal(rng));
        r->steps[k].wall_ns = (int64_t)ns;
    }
    int64_t rss = r->summary.peak_host_rss_bytes;
    cg_run_summarize(r);
    r->summary.peak_device_bytes = -1;
    r->summary.peak_host_rss_bytes = rss;
}

/* A one-run artifact of t's steps with a fixed header (no GPU, a built-in canary's command,
 * 4096 tokens a step, a fixed host RSS), the shape every model run takes. */
static int model_template(struct cg_artifact *a, const struct cg_thresholds *t)
{
    a->gpu_available = false;
    a->gpu_reason = strdup("a model's runs (bench_detect --model)");
    a->created_utc = strdup("2026-01-01T00:00:00Z");
    a->env.cpu_model = strdup("bench_detect model");
    a->env.cupti_status = strdup("unavailable");
    a->env.tool_version = strdup("model");
    a->env.canary_hash = strdup("6d6f64656c000000");
    a->env.canary_command = calloc(1, sizeof(char *));
    if (a->env.canary_command == NULL || a->env.cpu_model == NULL || a->env.canary_hash == NULL)
        return -1;
    a->env.canary_command[0] = strdup("model");
    a->env.n_canary_command = 1;
    a->settings.steps = t->steps;
    a->settings.warmup = t->warmup;
    a->settings.runs = 1;
    a->settings.step_range = strdup("step");
    struct cg_run *run = cg_artifact_add_run(a);
    if (run == NULL)
        return -1;
    for (int64_t k = 0; k < t->steps; k++)
        if (cg_run_add_step(run, 1, 4096, -1) != 0)
            return -1;
    run->summary.peak_device_bytes = -1;
    run->summary.peak_host_rss_bytes = 100000000;
    return 0;
}

int cg_detect_model_pool(struct pool *p, const struct cg_detect_model *m,
                         const struct cg_thresholds *t, size_t n)
{
    struct cg_artifact one;
    cg_artifact_init(&one);
    /* The header and a run's shape from a one-run artifact of t's steps, as a measured run has. */
    if (model_template(&one, t) != 0) {
        cg_artifact_release(&one);
        return -1;
    }
    p->secs = malloc((n ? n : 1) * sizeof(double));
    if (p->secs == NULL)
        goto fail;
    p->cap = n;
    uint64_t rng = m->seed ^ (uint64_t)(p->work_pct * 1000.0 + 1.0) * 0x9e3779b97f4a7c15ULL;
    for (size_t i = 0; i < n; i++) {
        draw_run(&one.runs[0], m, p->work_pct / 100.0, &rng);
        if (cg_artifact_append_runs(&p->a, &one) != 0)
            goto fail;
        double s = 0.0;
        for (size_t k = 0; k < one.runs[0].n_steps; k++)
            s += (double)one.runs[0].steps[k].wall_ns / 1e9;
        p->secs[i] = s + (double)t->warmup * m->mean_ns / 1e9;
    }
    cg_artifact_release(&one);
    return 0;
fail:
    cg_artifact_release(&one);
    return -1;
}
