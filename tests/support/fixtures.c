/* fixtures: seeded synthetic run artifacts (see fixtures.h). */
#include "fixtures.h"

#include "stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double uniform(uint64_t *rng)
{
    return (double)(cg_stats_rand(rng) >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

int cg_fixture_make(struct cg_artifact *a, const struct cg_fixture *f)
{
    uint64_t rng = f->seed;
    a->gpu_available = f->peak_device_bytes >= 0;
    a->gpu_reason = a->gpu_available ? NULL : strdup("no CUDA driver (test fixture)");
    a->created_utc = strdup("2026-01-01T00:00:00Z");
    a->env.cpu_model = strdup("Test CPU @ 3.0GHz");
    a->env.cupti_status = strdup(a->gpu_available ? "ok" : "unavailable");
    a->env.gpu_model = a->gpu_available ? strdup("Test GPU 80GB") : NULL;
    a->env.gpu_count = a->gpu_available ? 1 : 0;
    a->env.driver_version = a->gpu_available ? strdup("580.00") : NULL;
    a->env.cuda_version = a->gpu_available ? strdup("13.0") : NULL;
    a->env.tool_version = strdup("0.1.0");
    a->env.canary_hash = strdup("0123456789abcdef");
    a->env.canary_command = calloc(3, sizeof(char *));
    if (a->env.canary_command == NULL)
        return CG_ENOMEM;
    a->env.canary_command[0] = strdup("canary-train");
    a->env.canary_command[1] = strdup("--preset");
    a->env.canary_command[2] = strdup("tiny");
    a->env.n_canary_command = 3;
    a->settings.steps = (int64_t)f->steps;
    a->settings.warmup = 3;
    a->settings.runs = (int64_t)f->runs;
    a->settings.step_range = strdup("step");
    for (size_t r = 0; r < f->runs; r++) {
        struct cg_run *run = cg_artifact_add_run(a);
        if (run == NULL)
            return CG_ENOMEM;
        double offset = 1.0 + f->run_noise * uniform(&rng);
        double total = 0.0;
        for (size_t s = 0; s < f->steps; s++) {
            double t = f->mean_ns * offset * (1.0 + f->step_noise * uniform(&rng));
            total += t;
            if (cg_run_add_step(run, (int64_t)t, f->tokens, -1) != 0)
                return CG_ENOMEM;
        }
        for (size_t k = 0; k < f->n_ops; k++) {
            char name[64];
            snprintf(name, sizeof(name), "op_%zu", k);
            /* Op k takes a share proportional to 1/(k+1) of the run's time. */
            double share = 1.0 / (double)(k + 1) / 4.0;
            if (cg_run_add_op(run, name, NULL, CG_OP_RANGE, (int64_t)f->steps,
                              (int64_t)(total * share)) != 0)
                return CG_ENOMEM;
        }
        cg_run_summarize(run);
        run->summary.peak_device_bytes = f->peak_device_bytes;
        run->summary.peak_host_rss_bytes = f->peak_host_rss_bytes;
    }
    return 0;
}

void cg_fixture_set_busy(struct cg_artifact *a, double share)
{
    for (size_t r = 0; r < a->n_runs; r++) {
        struct cg_run *run = &a->runs[r];
        for (size_t s = 0; s < run->n_steps; s++)
            run->steps[s].gpu_busy_ns =
                share < 0 ? -1 : (int64_t)llround((double)run->steps[s].wall_ns * share);
    }
}

int cg_fixture_add_op(struct cg_artifact *a, const char *name, const char *family,
                      enum cg_op_kind kind, double calls_per_step, double ns_per_step)
{
    for (size_t r = 0; r < a->n_runs; r++) {
        struct cg_run *run = &a->runs[r];
        double steps = (double)run->n_steps;
        if (cg_run_add_op(run, name, family, kind, (int64_t)llround(calls_per_step * steps),
                          (int64_t)llround(ns_per_step * steps)) != 0)
            return CG_ENOMEM;
    }
    return 0;
}

void cg_fixture_set_loss(struct cg_artifact *a, double first, double last)
{
    for (size_t r = 0; r < a->n_runs; r++) {
        struct cg_run *run = &a->runs[r];
        double span = run->n_steps > 1 ? (double)(run->n_steps - 1) : 1.0;
        for (size_t s = 0; s < run->n_steps; s++)
            run->steps[s].loss = first + (last - first) * (double)s / span;
    }
}

void cg_fixture_contend(struct cg_artifact *a, uint64_t seed)
{
    uint64_t rng = seed;
    for (size_t r = 0; r < a->n_runs; r++) {
        struct cg_run *run = &a->runs[r];
        uint64_t x = cg_stats_rand(&rng);
        size_t from = x % 3 == 0 ? 0 : (size_t)((x >> 8) % run->n_steps);
        size_t to = x % 3 == 1 ? from : run->n_steps;
        double slow = 1.6 + 0.3 * (double)((x >> 20) % 1000) / 1000.0;
        for (size_t k = from; k < to; k++)
            run->steps[k].wall_ns = (int64_t)((double)run->steps[k].wall_ns * slow);
        cg_run_summarize(run);
    }
}

void cg_fixture_every(struct cg_artifact *a, size_t every, size_t phase, double pct)
{
    for (size_t r = 0; r < a->n_runs; r++) {
        struct cg_run *run = &a->runs[r];
        for (size_t k = phase; k < run->n_steps; k += every)
            run->steps[k].wall_ns = (int64_t)((double)run->steps[k].wall_ns * (1.0 + pct / 100.0));
        cg_run_summarize(run);
    }
}

int cg_fixture_set_gpu(struct cg_artifact *a, double joules_per_token, double mfu, int64_t sm_mhz)
{
    struct cg_gpu_env *e = &a->env.gpu_env;
    cg_gpu_env_release(e);
    e->recorded = true;
    e->power_limit_w = 700.0;
    e->persistence_mode = 1;
    e->clocks_locked = 0;
    e->app_sm_mhz = e->default_app_sm_mhz = 1755;
    e->app_mem_mhz = e->default_app_mem_mhz = 2619;
    a->settings.flops_per_token = isnan(mfu) ? -1 : 1000;
    for (size_t r = 0; r < a->n_runs; r++) {
        struct cg_run *run = &a->runs[r];
        struct cg_gpu_state *g = &run->gpu;
        cg_gpu_state_release(g);
        g->recorded = true;
        g->n_dev = 1;
        struct cg_gpu_device *d = &g->dev[0];
        memset(d, 0, sizeof(*d));
        d->index = 0;
        d->uuid = strdup("GPU-00000000-fixture");
        d->samples = 50;
        d->sm_min_mhz = d->sm_median_mhz = d->sm_max_mhz = sm_mhz;
        d->mem_median_mhz = 2619;
        d->temp_min_c = 40;
        d->temp_max_c = 60;
        d->power_min_w = 300.0;
        d->power_max_w = 500.0;
        d->energy_j = joules_per_token * (double)cg_run_tokens(run);
        g->energy_j = d->energy_j;
        g->mfu = mfu;
        g->peak_flops = 1e15;
        if (d->uuid == NULL)
            return CG_ENOMEM;
        if (isnan(mfu) && (g->mfu_reason = strdup("not available: give --flops-per-token")) == NULL)
            return CG_ENOMEM;
    }
    return 0;
}

void cg_fixture_hold(struct cg_artifact *a, size_t first, size_t n, int reason, int64_t samples)
{
    for (size_t r = first; r < first + n && r < a->n_runs; r++) {
        struct cg_gpu_device *d = &a->runs[r].gpu.dev[0];
        if (reason < 0) {
            d->other_samples = samples;
            d->other_pids[0] = 4242;
            d->n_other_pids = 1;
        } else {
            d->reasons[reason] = samples;
        }
    }
}
