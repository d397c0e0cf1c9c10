/*
 * collect: the canary run loop shared by the commands that measure (see collect.h). Each run:
 * a fresh shard directory, one canary process with the injection variables set (the measured
 * window included: CANARY_GATE_WARMUP and CANARY_GATE_STEPS), the shard directory polled while
 * it runs (progress, and the stop once every process wrote "done"), the shards loaded, checked
 * (exit status, steps marked) and merged into one run of the artifact. The canary's environment
 * and the tool's companions are canary_env.c's; the checks of a finished run and the hint
 * collect_check.c's; the artifact's header and GPU facts collect_artifact.c's.
 */
#include "collect.h"

#include "buf.h"
#include "canary_env.h"
#include "collect_artifact.h"
#include "collect_check.h"
#include "fmt.h"
#include "fsutil.h"
#include "launch.h"
#include "launch_env.h"
#include "nvml.h"
#include "multinode.h"
#include "redact.h"
#include "runinfo.h"
#include "shard.h"
#include "stale.h"
#include "trace.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* How often the shard directory is read while a canary runs (progress, and the stop once it is
 * measured), in seconds. */
#define CG_COLLECT_POLL_S 0.5

struct cg_collector {
    struct cg_collect_cfg cfg;
    struct cg_canary_env env; /* the injection library, python/, the built-in canary */
    char tmp[PATH_MAX];
    bool have_tmp;
    char shard_root[PATH_MAX]; /* where tmp is made: --shard-dir (absolute) or TMPDIR */
    char *const *cmd;          /* cfg.cmd or builtin */
    int next_dir;              /* runs started, for shard directory names */
    char *warned[CG_ARTIFACT_MAX_WARNINGS]; /* library warnings printed so far */
    size_t n_warned;
    bool tokens_said; /* --tokens-per-step unused beside payloads: said once */
    bool env_said; /* the inherited variables were named (when cfg.env_said is NULL) */
    struct cg_collect_failure failure; /* the last run's diagnosis, for cg_collect_hint */
};

struct progress {
    const char *shard_dir;
    const char *label;
    long run, n_runs;
    long expect; /* warm-up + measured */
    const struct cg_say *say;
    bool let_finish; /* never ask for a stop */
    int64_t last_seen;
    double last_print_s;
    int64_t done_steps; /* the shards' "done" N when a stop was asked for, else -1 */
    long warmup;
    long pid; /* the canary's first process (cg_launch_opts.pid_out), 0 before */
    struct cg_run_placement placement; /* sampled at each poll until the measured window began */
    bool placed;                       /* the sample was taken once the measured window had begun */
    bool oom;
};

static const char *label_sep(const struct progress *p)
{
    return p->label != NULL ? " " : "";
}

/* cg_launch_opts.progress: reads the shards, prints progress, and asks for the canary to be
 * stopped once every process that marked steps wrote "done" (unless let_finish). */
static bool on_progress(void *ctx, double elapsed_s)
{
    struct progress *p = ctx;
    struct cg_shard *sh = NULL;
    size_t n = 0;
    struct cg_err err;
    struct cg_shard_status st;
    if (cg_shard_load_dir(p->shard_dir, &sh, &n, &err) != 0)
        return false;
    cg_shard_status(sh, n, &st);
    cg_shard_free_all(sh, n);
    if (!p->placed && p->pid > 0) {
        p->oom |= cg_runinfo_placement(p->pid, &p->placement) != 0;
        p->placed = st.steps_seen >= p->warmup;
    }
    if (!p->let_finish && st.all_done) {
        p->done_steps = st.done_steps;
        return true;
    }
    bool live = p->say->live;
    if (!live && st.steps_seen == p->last_seen && elapsed_s - p->last_print_s < 30.0)
        return false;
    if (!live && elapsed_s - p->last_print_s < 5.0)
        return false;
    char last[48] = "";
    if (st.last_step_ns > 0)
        snprintf(last, sizeof(last), ", last step %.1f ms", (double)st.last_step_ns / 1e6);
    cg_say(p->say, CG_SAY_PROGRESS, "%s%srun %ld of %ld: %lld of %ld steps%s, %.0f s",
           p->label ? p->label : "", label_sep(p), p->run, p->n_runs, (long long)st.steps_seen,
           p->expect, last, elapsed_s);
    p->last_seen = st.steps_seen;
    p->last_print_s = elapsed_s;
    return false;
}

/* Appends the run's banner line to the canary's log (best effort: the log is the canary's). */
static void log_banner(const char *log, const char *label, long i, long n, char *const *cmd)
{
    struct cg_buf line;
    cg_buf_init(&line, SIZE_MAX);
    int rc = cg_buf_printf(&line, "==== canary-gate: %s%srun %ld of %ld:", label ? label : "",
                           label ? " " : "", i, n);
    for (size_t k = 0; rc == 0 && cmd[k] != NULL; k++) {
        char *shown = cg_redact_apply(cg_redact_default(), cmd[k]); /* never a secret */
        rc = cg_buf_printf(&line, " %s", shown != NULL ? shown : CG_REDACT_MARK);
        free(shown);
    }
    FILE *f = rc == 0 && cg_buf_adds(&line, "\n") == 0 ? fopen(log, "a") : NULL;
    if (f != NULL) {
        size_t len = strlen(cg_buf_str(&line));
        if (fwrite(cg_buf_str(&line), 1, len, f) != len)
            clearerr(f); /* the canary's log: a short write loses only the banner */
        fclose(f);
    }
    cg_buf_release(&line);
}

/* The directory the collector's shard directory goes under, into root: cfg->shard_dir made
 * absolute (the library needs an absolute path on every node), else TMPDIR or /tmp. Refuses a
 * command naming a multi-node launcher without shard_dir, before anything runs. CG_EINPUT. */
static int check_shard_dir(const struct cg_collect_cfg *cfg, char *root, size_t cap,
                           struct cg_err *err)
{
    char launcher[64];
    if (cfg->shard_dir == NULL) {
        if (cg_multinode_launcher(cfg->cmd, launcher, sizeof(launcher)))
            return cg_err_set(err, CG_EINPUT,
                              "the canary's command runs '%s', whose ranks on other nodes write "
                              "shards this host cannot collect from its temporary directory: "
                              "give --shard-dir DIR, a directory every node sees at the same path "
                              "(a shared filesystem)",
                              launcher);
        char buf[PATH_MAX];
        return cg_canary_env_fmt_path(root, cap, err, "%s", cg_tmp_dir(buf));
    }
    struct stat st;
    char resolved[PATH_MAX];
    if (stat(cfg->shard_dir, &st) != 0 || realpath(cfg->shard_dir, resolved) == NULL)
        return cg_err_set(err, CG_EINPUT, "--shard-dir '%s': %s", cfg->shard_dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return cg_err_set(err, CG_EINPUT, "--shard-dir '%s': not a directory", cfg->shard_dir);
    return cg_canary_env_fmt_path(root, cap, err, "%s", resolved);
}

int cg_collector_new(const struct cg_collect_cfg *cfg, struct cg_collector **out,
                     struct cg_err *err)
{
    *out = NULL;
    struct cg_collector *col = calloc(1, sizeof(*col));
    if (col == NULL)
        return cg_err_set(err, CG_ENOMEM, "out of memory");
    col->cfg = *cfg;
    if (col->cfg.step_range == NULL)
        col->cfg.step_range = "step";
    int rc = 0;
    if (col->cfg.step_range[0] == '\0' || strlen(col->cfg.step_range) > 255) {
        rc = cg_err_set(err, CG_EINPUT, "step range name '%.40s': expected 1 to 255 bytes",
                        col->cfg.step_range);
        goto out;
    }
    if (col->cfg.log == NULL) {
        rc = cg_err_set(err, CG_EINPUT, "no log file for the canary's output");
        goto out;
    }
    /* the library would take NCCL's only: no artifact may record a value it did not use */
    const char *comm = getenv(CG_ENV_COMM_KERNELS), *part = NULL, *bad = NULL;
    unsigned long part_len = 0;
    if (comm != NULL && *comm != '\0')
        bad = cg_comm_kernels_problem(comm, &part, &part_len);
    if (bad != NULL) {
        rc = cg_err_set(err, CG_EINPUT,
                        CG_ENV_COMM_KERNELS
                        " '%.*s%s': %s (comma-separated name parts of "
                        "communication kernels, at most 8, each 1 to 63 printable bytes)",
                        part_len < 40 ? (int)part_len : 40, part, part_len > 40 ? "..." : "", bad);
        goto out;
    }
    if ((rc = check_shard_dir(&col->cfg, col->shard_root, sizeof(col->shard_root), err)) != 0)
        goto out;
    if (col->cfg.trace_path != NULL && col->cfg.trace_steps != NULL) {
        const char *colon = strchr(col->cfg.trace_steps, ':');
        long long last = colon != NULL ? strtoll(colon + 1, NULL, 10) : 0;
        if (!cg_collect_trace_steps_valid(col->cfg.trace_steps) ||
            last + col->cfg.warmup >= CG_MAX_STEP_INDEX) {
            rc = cg_err_set(err, CG_EINPUT,
                            "--trace-steps '%.40s': after %ld warm-up steps, step %lld is beyond "
                            "the %d steps a canary process can record",
                            col->cfg.trace_steps, col->cfg.warmup, last, CG_MAX_STEP_INDEX);
            goto out;
        }
    }
    if ((rc = cg_canary_env_find(&col->env, &col->cfg, err)) != 0)
        goto out;
    col->cmd = col->env.builtin != NULL ? col->env.builtin : cfg->cmd;
    FILE *lf = fopen(col->cfg.log, "w"); /* a fresh log per invocation */
    if (lf == NULL) {
        rc =
            cg_err_set(err, CG_EIO, "cannot write the log '%s': %s", col->cfg.log, strerror(errno));
        goto out;
    }
    fclose(lf);
    const char *tmpdir = col->shard_root;
    char first[PATH_MAX];
    size_t stale = cg_stale_clean(tmpdir, first, sizeof(first));
    if (stale > 0)
        cg_say(&col->cfg.say, CG_SAY_INFO,
               "removed %zu shard director%s of gates no longer running ('%s'%s)", stale,
               stale == 1 ? "y" : "ies", first, stale > 1 ? ", ..." : "");
    if ((rc = cg_canary_env_fmt_path(col->tmp, sizeof(col->tmp), err,
                                     "%s/" CG_STALE_PREFIX "XXXXXX", tmpdir)) != 0)
        goto out;
    if (mkdtemp(col->tmp) == NULL) {
        rc = cg_err_set(err, CG_EIO, "cannot create a directory for shards in '%s': %s", tmpdir,
                        strerror(errno));
        goto out;
    }
    col->have_tmp = true;
    if ((rc = cg_stale_mark(col->tmp, err)) != 0)
        goto out;
    cg_launch_catch_interrupts();
out:
    if (rc != 0) {
        cg_collector_free(col);
        return rc;
    }
    *out = col;
    return 0;
}

char *const *cg_collector_cmd(const struct cg_collector *col)
{
    return col->cmd;
}

void cg_collector_free(struct cg_collector *col)
{
    if (col == NULL)
        return;
    if (col->have_tmp)
        cg_remove_tree(col->tmp, 0);
    cg_canary_env_release(&col->env);
    for (size_t i = 0; i < col->n_warned; i++)
        free(col->warned[i]);
    free(col);
}

bool cg_collect_interrupted(void)
{
    return cg_launch_interrupted();
}

/* Names the processes with steps that ended without finishing their shard (killed, crashed,
 * os._exit, or an exec of a program that does not load the library): their steps up to the last
 * complete line were counted with the others'. A process stopped once measured (stopped) had
 * written "done", which is all it had to contribute; one that marked no step measured nothing a cut
 * could lose, and a helper that ends with os._exit (a DataLoader worker started by forkserver or
 * spawn) is no crash. */
static void warn_unfinished(const struct cg_collect_cfg *c, long i, long total,
                            const struct cg_shard *sh, size_t n, bool stopped)
{
    for (size_t k = 0; k < n; k++) {
        if (sh[k].complete || sh[k].n_steps == 0 || (stopped && sh[k].done_steps >= 0))
            continue;
        char rank[40] = "";
        if (sh[k].rank >= 0)
            snprintf(rank, sizeof(rank), "rank %lld, ", (long long)sh[k].rank);
        cg_say(&c->say, CG_SAY_WARNING,
               "%s%srun %ld of %ld: a canary process (%spid %lld) ended without finishing its "
               "shard (killed, crashed, or it exec'd a program that does not load the library); "
               "what it measured until then counts",
               c->label ? c->label : "", c->label ? " " : "", i, total, rank, (long long)sh[k].pid);
    }
}

/* The canary ended itself with a failure after its measured window (the run counts): how. */
static void say_ended_after_window(const struct cg_collect_cfg *c, long i, long total,
                                   const struct cg_launch_result *r, int64_t done_steps)
{
    char how[96];
    if (r->end == CG_LAUNCH_SIGNALED)
        snprintf(how, sizeof(how), "died of signal %d (%s)", r->signal, strsignal(r->signal));
    else
        snprintf(how, sizeof(how), "exited with status %d", r->exit_code);
    cg_say(&c->say, CG_SAY_WARNING,
           "%s%srun %ld of %ld: the canary %s after its measured window (every process with "
           "steps had written the end of its %lld steps); the run counts, as it would have had "
           "the gate stopped it first; its output is in '%s'",
           c->label ? c->label : "", c->label ? " " : "", i, total, how, (long long)done_steps,
           c->log);
}

/* Prints the injection library's warnings of a run that earlier runs of this collector did not
 * have (each distinct warning once per collector). */
static void warn_library(struct cg_collector *col, long i, long total, const struct cg_run *run)
{
    const struct cg_collect_cfg *c = &col->cfg;
    for (size_t k = 0; k < run->n_warnings; k++) {
        const char *w = run->warnings[k];
        bool seen = false;
        for (size_t j = 0; j < col->n_warned && !seen; j++)
            seen = strcmp(col->warned[j], w) == 0;
        if (seen)
            continue;
        if (col->n_warned < CG_ARTIFACT_MAX_WARNINGS) {
            char *copy = strdup(w);
            if (copy != NULL)
                col->warned[col->n_warned++] = copy;
        }
        struct cg_buf text;
        cg_buf_init(&text, 1024);
        if (cg_term_escape(&text, w, 512) == 0) /* never a terminal escape from a shard */
            cg_say(&c->say, CG_SAY_WARNING, "%s%srun %ld of %ld: the injection library says: %s",
                   c->label ? c->label : "", c->label ? " " : "", i, total, cg_buf_str(&text));
        cg_buf_release(&text);
    }
}

/* The gate ended sbatch --wait (timeout, Ctrl-C, or stopped once measured): its job still runs,
 * so it is cancelled by the ids its shards (or sbatch's line in the log) name. */
static void cancel_batch_job(const struct cg_collect_cfg *c, const char *shard_dir, long i,
                             long total)
{
    struct cg_shard *sh = NULL;
    size_t n = 0;
    struct cg_err e;
    char ids[256], why[160];
    if (cg_shard_load_dir(shard_dir, &sh, &n, &e) != 0)
        n = 0;
    size_t k = cg_multinode_job_ids(sh, n, c->log, ids, sizeof(ids));
    cg_shard_free_all(sh, n);
    if (k == 0) {
        cg_say(&c->say, CG_SAY_WARNING,
               "run %ld of %ld: sbatch was ended but no Slurm job id is known (no shard named one, "
               "and the log has no 'Submitted batch job' line): cancel the job yourself",
               i, total);
        return;
    }
    if (cg_multinode_scancel(ids, 30.0, why, sizeof(why)) == 0)
        cg_say(&c->say, CG_SAY_INFO, "run %ld of %ld: cancelled Slurm job %s (scancel)", i, total,
               ids);
    else
        cg_say(&c->say, CG_SAY_WARNING, "run %ld of %ld: could not cancel Slurm job %s: %s", i,
               total, ids, why);
}

static const char *steps_from_word(enum cg_steps_source from)
{
    return from == CG_STEPS_OPTIMIZER ? "optimizer" : "nvtx";
}

/* One run has one definition of a step, and so has an artifact: the run's ranks take their
 * steps from one source (cg_shard_check_steps_from), the one of the artifact's earlier runs. */
static int check_steps_from(const struct cg_artifact *a, long i, long total,
                            const struct cg_shard *sh, size_t n, const struct cg_shard_status *st,
                            struct cg_err *err)
{
    struct cg_err e;
    cg_err_init(&e);
    if (cg_shard_check_steps_from(sh, n, &e) != 0)
        return cg_err_set(err, e.code, "run %ld of %ld: %s", i, total, e.msg);
    const char *was = a->settings.steps_from;
    if (was == NULL || st->steps_from == CG_STEPS_UNKNOWN ||
        strcmp(was, steps_from_word(st->steps_from)) == 0)
        return 0;
    return cg_err_set(err, CG_ECANARY,
                      "run %ld of %ld: its steps came from %s, those of the runs before it from "
                      "%s: a run has one definition of a step; give --steps-from %s",
                      i, total,
                      st->steps_from == CG_STEPS_OPTIMIZER ? "the optimizer" : "NVTX step ranges",
                      strcmp(was, "optimizer") == 0 ? "the optimizer" : "NVTX step ranges", was);
}

/* One canary process into one run of a. */
static int run_one(struct cg_collector *col, struct cg_artifact *a, long i, long total,
                   struct cg_err *err)
{
    const struct cg_collect_cfg *c = &col->cfg;
    char shard_dir[PATH_MAX], fail_path[PATH_MAX];
    struct cg_canary_run_env env;
    bool trace = c->trace_path != NULL && col->next_dir == 0; /* the first run only */
    struct cg_shard *sh = NULL;
    size_t n = 0;
    struct cg_shard_status st;
    struct cg_shard_fail fail;
    struct cg_launch_result r;
    ++col->next_dir;
    if (cg_canary_env_fmt_path(shard_dir, sizeof(shard_dir), err, "%s/run-%d", col->tmp,
                               col->next_dir) != 0 ||
        cg_canary_env_fmt_path(fail_path, sizeof(fail_path), err, "%s/run-%d.fail", col->tmp,
                               col->next_dir) != 0 ||
        cg_canary_env_run(&col->env, c, shard_dir, fail_path, trace, &env, err) != 0)
        return err->code;
    cg_canary_env_say_inherited(&c->say, c->env_said != NULL ? c->env_said : &col->env_said);
    col->failure = (struct cg_collect_failure){.reason = CG_COLLECT_FAILED_OTHER,
                                               .steps_from = c->steps_from,
                                               .shard_dir = c->shard_dir,
                                               .steps_python = col->env.python[0] != '\0',
                                               .step_optimizer = c->step_optimizer};
    cg_canary_env_python_flag(col->cmd, col->failure.python_flag);
    if (cg_collect_check_make_fail_file(fail_path, err) != 0) {
        free(env.pythonpath);
        return err->code;
    }
    if (mkdir(shard_dir, 0700) != 0) {
        free(env.pythonpath);
        return cg_err_set(err, CG_EIO, "cannot create '%s': %s", shard_dir, strerror(errno));
    }
    struct progress p = {.shard_dir = shard_dir,
                         .label = c->label,
                         .run = i,
                         .n_runs = total,
                         .expect = c->warmup + c->steps,
                         .say = &c->say,
                         .let_finish = c->let_finish,
                         .last_seen = -1,
                         .last_print_s = -10.0,
                         .done_steps = -1,
                         .warmup = c->warmup,
                         .placement = {NULL, -1, -1}};
    struct cg_run_code code = {NULL, NULL, 0};
    /* the code measured, as the run begins (for information: a.env.canary_command's words) */
    if (cg_runinfo_code(col->cmd, a->env.canary_command, &code) != 0) {
        free(env.pythonpath);
        cg_run_code_release(&code);
        return cg_err_set(err, CG_ENOMEM, "out of memory");
    }
    struct cg_launch_opts o = {.argv = col->cmd,
                               .env_add = env.add,
                               .n_env_add = env.n_add,
                               .env_remove = env.remove,
                               .n_env_remove = env.n_remove,
                               .log_path = c->log,
                               .timeout_s = (double)c->timeout_s,
                               .kill_grace_s = (double)c->grace_s,
                               .progress = on_progress,
                               .progress_ctx = &p,
                               .poll_s = CG_COLLECT_POLL_S,
                               .pid_out = &p.pid,
                               .cwd = c->cwd};
    log_banner(c->log, c->label, i, total, col->cmd);
    struct cg_nvml_run gpu_state; /* the GPU's own state, sampled from here (nvml.h) */
    cg_nvml_run_begin(&gpu_state);
    if (!c->say.live)
        cg_say(&c->say, CG_SAY_INFO, "%s%srun %ld of %ld", c->label ? c->label : "", label_sep(&p),
               i, total);
    int rc = cg_launch_run(&o, &r, err);
    free(env.pythonpath);
    cg_say(&c->say, CG_SAY_PROGRESS_END, "%s", "");
    if (rc == 0 && r.escaped > 0)
        cg_say(&c->say, CG_SAY_WARNING,
               "%s%srun %ld of %ld: %ld canary process%s had left its process group (setsid, a "
               "daemon) and still ran when the canary ended; the gate ended %s",
               c->label ? c->label : "", label_sep(&p), i, total, r.escaped,
               r.escaped == 1 ? "" : "es", r.escaped == 1 ? "it" : "them");
    char launcher[64];
    if (rc == 0 && r.after_grace > 0)
        cg_say(&c->say, CG_SAY_WARNING,
               "%s%srun %ld of %ld: %ld canary process%s still ran %.0f s after %s and %s "
               "killed (SIGKILL)%s",
               c->label ? c->label : "", label_sep(&p), i, total, r.after_grace,
               r.after_grace == 1 ? "" : "es", o.kill_grace_s,
               r.end == CG_LAUNCH_INTERRUPTED ? "the interrupt" : "SIGTERM",
               r.after_grace == 1 ? "was" : "were",
               cg_multinode_launcher(col->cmd, launcher, sizeof(launcher))
                   ? "; tasks the launcher started on other nodes are the launcher's to end "
                     "(srun forwards the signals; an sbatch job is cancelled)"
                   : "");
    if (rc == 0 && r.end != CG_LAUNCH_EXITED && cg_multinode_is_sbatch(col->cmd))
        cancel_batch_job(c, shard_dir, i, total);
    bool failed_write = rc == 0 && cg_collect_check_read_fail_file(fail_path, &fail);
    unlink(fail_path);
    if (rc == 0)
        rc = cg_shard_load_dir(shard_dir, &sh, &n, err);
    if (rc != 0 && failed_write && !cg_launch_interrupted()) {
        rc = 0; /* what the library recorded says more than an unreadable directory */
        n = 0;
    }
    if (rc == 0) /* the one place the canary's strings enter the artifact and the trace */
        rc = cg_shard_redact(sh, n, cg_redact_default(), err);
    if (rc == 0) {
        cg_shard_status(sh, n, &st);
        if (r.end != CG_LAUNCH_INTERRUPTED) /* an interrupt is told as such */
            rc = cg_collect_check_restarts(i, total, sh, n, &col->failure.reason, err);
    }
    if (rc == 0) {
        rc = cg_collect_check_run(c, i, total, &r, &st, failed_write ? &fail : NULL,
                                  &col->failure.reason, err);
        if (col->failure.reason == CG_COLLECT_FAILED_SHARD_WRITE)
            col->failure.shard_errno = fail.errno_value;
    }
    if (rc == 0)
        rc = cg_collect_check_world(col->env.inject, i, total, sh, n, r.end == CG_LAUNCH_STOPPED,
                                    &col->failure.reason, err);
    if (rc == 0)
        rc = check_steps_from(a, i, total, sh, n, &st, err);
    if (rc == CG_ECANARY && !cg_launch_interrupted())
        cg_collect_check_infra(c->log, col->cmd, sh, n, err);
    if (rc == 0 && trace) {
        struct cg_trace_sample *gpu = NULL; /* the GPU's own state, the canary ended: stopped */
        size_t n_gpu = 0;
        cg_nvml_sampler_stop(gpu_state.sampler);
        if (cg_nvml_sampler_trace(gpu_state.sampler, &gpu, &n_gpu) != 0)
            rc = cg_err_set(err, CG_ENOMEM, "out of memory");
        if (rc == 0)
            rc = cg_trace_write(sh, n, gpu, n_gpu, c->trace_path, err);
        free(gpu);
        if (rc == 0)
            cg_say(&c->say, CG_SAY_INFO, "trace of run %ld, measured steps %s: '%s'", i,
                   c->trace_steps ? c->trace_steps : "0:2", c->trace_path);
    }
    if (rc == 0 && cg_collect_artifact_gpu(a, sh, n) != 0)
        rc = cg_err_set(err, CG_ENOMEM, "out of memory");
    if (rc == 0) {
        struct cg_run *run = cg_artifact_add_run(a);
        struct cg_shard_merge_opts mo = {c->warmup, c->steps, c->tokens_per_step};
        if (run == NULL)
            rc = cg_err_set(err, CG_ENOMEM, "out of memory");
        else if ((rc = cg_shard_merge(sh, n, &mo, run, err)) == 0) {
            run->summary.peak_host_rss_bytes = r.peak_rss_bytes;
            if (a->settings.steps_from == NULL && st.steps_from != CG_STEPS_UNKNOWN &&
                (a->settings.steps_from = strdup(steps_from_word(st.steps_from))) == NULL)
                rc = cg_err_set(err, CG_ENOMEM, "out of memory");
            char who[160];
            if (c->tokens_per_step >= 0 && !col->tokens_said &&
                cg_shard_tokens_partial(sh, n, c->warmup, c->steps, who, sizeof(who))) {
                col->tokens_said = true;
                cg_say(&c->say, CG_SAY_WARNING,
                       "%s%srun %ld of %ld: --tokens-per-step %ld not used: %s; a step's tokens "
                       "are its processes' payloads summed (each rank's own, or one rank's the "
                       "world's), --tokens-per-step the world's tokens of a step in which none "
                       "gives one",
                       c->label ? c->label : "", label_sep(&p), i, total, c->tokens_per_step, who);
            }
            run->stopped_after_steps = r.end == CG_LAUNCH_STOPPED ? p.done_steps : -1;
            if (a->settings.flops_per_token <= 0) /* the canary's own line, once printed */
                a->settings.flops_per_token = cg_nvml_flops_from_log(c->log);
            if (rc == 0 && cg_nvml_run_end(&gpu_state, sh, n, c->warmup, c->steps, run, a) != 0)
                rc = cg_err_set(err, CG_ENOMEM, "out of memory");
            run->code = code;
            run->placement = p.placement;
            code = (struct cg_run_code){NULL, NULL, 0};
            p.placement.cpus = NULL;
        }
    }
    if (rc == 0 && p.oom)
        rc = cg_err_set(err, CG_ENOMEM, "out of memory");
    cg_run_code_release(&code);
    free(p.placement.cpus);
    if (rc == 0) {
        bool after_window = cg_collect_check_ended_after_window(c, &r, &st);
        if (after_window)
            say_ended_after_window(c, i, total, &r, st.done_steps);
        warn_unfinished(c, i, total, sh, n, r.end == CG_LAUNCH_STOPPED || after_window);
        warn_library(col, i, total, &a->runs[a->n_runs - 1]);
    }
    cg_nvml_sampler_free(gpu_state.sampler); /* a failed run's: nothing recorded */
    cg_nvml_close(gpu_state.nvml);
    cg_shard_free_all(sh, n);
    cg_remove_tree(shard_dir, 0);
    return rc;
}

int cg_collector_run(struct cg_collector *col, struct cg_artifact *a, long n, long total,
                     struct cg_err *err)
{
    const struct cg_collect_cfg *c = &col->cfg;
    if (total < (long)a->n_runs + n)
        total = (long)a->n_runs + n;
    if (a->n_runs == 0 && a->env.canary_hash == NULL) {
        int rc = cg_collect_artifact_header(a, &col->cfg, col->cmd, err);
        if (rc != 0)
            return rc;
    }
    for (long k = 0; k < n; k++) {
        long i = (long)a->n_runs + 1;
        int rc = run_one(col, a, i, total, err);
        if (rc != 0)
            return rc;
        a->settings.runs = (int64_t)a->n_runs;
        const struct cg_run *done = &a->runs[a->n_runs - 1];
        char stopped[64] = "";
        if (done->stopped_after_steps > 0)
            snprintf(stopped, sizeof(stopped), ", stopped after %lld steps",
                     (long long)done->stopped_after_steps);
        cg_say(&c->say, CG_SAY_INFO, "%s%srun %ld of %ld: %zu steps, median %.2f ms%s%s",
               c->label ? c->label : "", c->label ? " " : "", i, total, done->n_steps,
               done->summary.step_time_median_ns / 1e6, stopped,
               a->gpu_available ? "" : " (no GPU metrics)");
        if (cg_launch_interrupted())
            return cg_err_set(err, CG_ECANARY, "interrupted after run %ld of %ld", i, total);
    }
    return 0;
}

struct cg_collect_failure cg_collector_failure(const struct cg_collector *col)
{
    return col->failure;
}

char *cg_collect_sibling_path(const char *artifact_path, const char *ext)
{
    size_t n = strlen(artifact_path), cap = n + strlen(ext) + 1;
    bool json = n > 5 && strcmp(artifact_path + n - 5, ".json") == 0;
    char *p = malloc(cap);
    if (p != NULL)
        snprintf(p, cap, "%.*s%s", (int)(json ? n - 5 : n), artifact_path, ext);
    return p;
}

char *cg_collect_log_path(const char *artifact_path)
{
    if (strcmp(artifact_path, "-") == 0) /* the artifact on stdout: the default's log */
        return strdup("canary-run.log");
    return cg_collect_sibling_path(artifact_path, ".log");
}

/* "A:B" with 0 <= A <= B < CG_MAX_STEP_INDEX (the limit the injection library and the shard
 * reader share; the warm-up is checked at cg_collector_new). */
bool cg_collect_trace_steps_valid(const char *s)
{
    char *end = NULL;
    if (s[0] < '0' || s[0] > '9')
        return false;
    errno = 0;
    unsigned long a = strtoul(s, &end, 10);
    if (errno != 0 || *end != ':' || end[1] < '0' || end[1] > '9')
        return false;
    unsigned long b = strtoul(end + 1, &end, 10);
    return errno == 0 && *end == '\0' && a <= b && b < (unsigned long)CG_MAX_STEP_INDEX;
}
