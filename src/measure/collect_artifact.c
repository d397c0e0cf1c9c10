/*
 * collect_artifact: what a collector writes into the artifact besides its runs (see
 * collect_artifact.h): the header before the first run (when, the machine, the tool, the
 * canary's command and identity, the settings) and the GPU facts each run's shards bring.
 */
#include "collect_artifact.h"

#include "buf.h"
#include "cg_version.h"
#include "launch.h"
#include "launch_env.h"
#include "redact.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The environment, settings and GPU status of the artifact (before the first run). */
int cg_collect_artifact_header(struct cg_artifact *a, const struct cg_collect_cfg *c,
                               char *const *cmd, struct cg_err *err)
{
    char when[32];
    time_t t = time(NULL);
    struct tm tm;
    size_t n_cmd = 0;
    while (cmd[n_cmd] != NULL)
        n_cmd++;
    gmtime_r(&t, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    a->created_utc = strdup(when);
    a->env.cpu_model = cg_launch_cpu_model();
    a->env.tool_version = strdup(CG_VERSION);
    a->env.canary_command = calloc(n_cmd + 1, sizeof(char *));
    a->settings.steps = c->steps;
    a->settings.warmup = c->warmup;
    a->settings.runs = 0;
    a->settings.step_range = strdup(c->step_range);
    a->settings.tokens_per_step = c->tokens_per_step;
    a->settings.step_optimizer = c->step_optimizer > 0 ? c->step_optimizer : 1;
    a->settings.flops_per_token = c->flops_per_token > 0 ? c->flops_per_token : -1;
    a->settings.peak_flop_per_clock = c->peak_flop_per_clock > 0 ? c->peak_flop_per_clock : NAN;
    if (c->precision != NULL && (a->settings.precision = strdup(c->precision)) == NULL)
        return cg_err_set(err, CG_ENOMEM, "out of memory");
    if (a->created_utc == NULL || a->env.tool_version == NULL || a->env.canary_command == NULL ||
        a->settings.step_range == NULL)
        return cg_err_set(err, CG_ENOMEM, "out of memory");
    /* the command as written everywhere: secrets hidden (redact.h); the identity too, so that
     * a token that changes between runs does not read as a changed canary */
    for (size_t i = 0; i < n_cmd; i++) {
        a->env.canary_command[i] = cg_redact_apply(cg_redact_default(), cmd[i]);
        if (a->env.canary_command[i] == NULL)
            return cg_err_set(err, CG_ENOMEM, "out of memory");
        a->env.n_canary_command++;
    }
    /* runs that tell communication kernels apart otherwise (the canary inherits the variable;
     * empty is unset) are another canary's: never pooled. The settings are hashed whole. */
    const char *comm = getenv(CG_ENV_COMM_KERNELS); /* checked by cg_collector_new */
    if (comm != NULL && *comm != '\0' && (a->settings.comm_kernels = strdup(comm)) == NULL)
        return cg_err_set(err, CG_ENOMEM, "out of memory");
    struct cg_buf settings;
    cg_buf_init(&settings, (size_t)1 << 20);
    int rc = cg_buf_printf(&settings, "steps=%ld warmup=%ld step_range=%s tokens_per_step=%ld",
                           c->steps, c->warmup, c->step_range, c->tokens_per_step);
    if (a->settings.comm_kernels != NULL)
        rc |= cg_buf_printf(&settings, " comm_kernels=%s", a->settings.comm_kernels);
    /* the identity is what the user chose to run and how it is measured, never the contents of
     * the files it names (runs[].code); canary_hash repeats it for older readers */
    if (rc == 0)
        a->env.canary_id = cg_launch_canary_id(a->env.canary_command, cg_buf_str(&settings));
    cg_buf_release(&settings);
    if (a->env.canary_id == NULL || (a->env.canary_hash = strdup(a->env.canary_id)) == NULL)
        return cg_err_set(err, CG_ENOMEM, "out of memory");
    return 0;
}

/* GPU facts from a run's shards: the first run fills them in; a later run without GPU metrics
 * (all its GPU records outside the steps, CUPTI taken by another profiler) makes the whole
 * artifact's GPU metrics unavailable with its reason, so that no run's missing GPU data is
 * compared as if it were measured. 0 or CG_ENOMEM. */
int cg_collect_artifact_gpu(struct cg_artifact *a, const struct cg_shard *sh, size_t n)
{
    char reason[512];
    bool avail = cg_shard_gpu_available(sh, n, reason, sizeof(reason));
    bool cuda = false; /* a "gpu" line: cuInit loaded the injection library */
    for (size_t i = 0; i < n; i++)
        cuda |= sh[i].gpu >= 0;
    /* in every run: one run without CUDA is a run that did not use the GPU */
    a->cuda_initialised = a->n_runs > 0 ? (a->cuda_initialised != 0 && cuda) : cuda;
    if (a->n_runs > 0) {
        if (avail || !a->gpu_available)
            return 0;
        free(a->gpu_reason);
        free(a->env.cupti_status);
        a->gpu_available = false;
        a->gpu_reason = strdup(reason);
        a->env.cupti_status = strdup(reason);
        return a->gpu_reason == NULL || a->env.cupti_status == NULL ? CG_ENOMEM : 0;
    }
    a->gpu_available = avail;
    a->gpu_reason = avail ? NULL : strdup(reason);
    a->env.cupti_status = strdup(avail ? "ok" : reason);
    for (size_t i = 0; i < n; i++) {
        if (a->env.cupti_library == NULL && sh[i].cupti_library != NULL &&
            (a->env.cupti_library = strdup(sh[i].cupti_library)) == NULL)
            return CG_ENOMEM;
        if (a->env.gpu_model == NULL && sh[i].gpu_model != NULL) {
            a->env.gpu_model = strdup(sh[i].gpu_model);
            a->env.gpu_count = sh[i].gpu_count;
        }
        if (a->env.cuda_version == NULL && sh[i].cuda_version != NULL)
            a->env.cuda_version = strdup(sh[i].cuda_version);
        if (a->env.driver_version == NULL && sh[i].driver_version != NULL)
            a->env.driver_version = strdup(sh[i].driver_version);
    }
    if (a->env.driver_version == NULL) /* the machine's, whether the canary used it or not */
        a->env.driver_version = cg_launch_driver_version();
    if (a->env.cupti_status == NULL || (!avail && a->gpu_reason == NULL))
        return CG_ENOMEM;
    return 0;
}
