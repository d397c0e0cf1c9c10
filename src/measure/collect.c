/*
 * collect: the canary run loop shared by the commands that measure (see collect.h). Each run:
 * a fresh shard directory, one canary process with the injection variables set (the measured
 * window included: CANARY_GATE_WARMUP and CANARY_GATE_STEPS), the shard directory polled while
 * it runs (progress, and the stop once every process wrote "done"), the shards loaded, checked
 * (exit status, steps marked) and merged into one run of the artifact.
 */
#include "collect.h"

#include "buf.h"
#include "cg_version.h"
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

#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* How often the shard directory is read while a canary runs (progress, and the stop once it is
 * measured), in seconds. */
#define CG_COLLECT_POLL_S 0.5

/* The injection library's variables (launch_env.h). The launcher sets or removes the ones it
 * owns for every run, whatever the user's environment holds; the user's settings pass through. */
static const char *const launcher_vars[] = {
    CG_ENV_CUDA_INJECTION, CG_ENV_NVTX_INJECTION,  CG_ENV_SHARD_DIR,       CG_ENV_FAIL_FILE,
    CG_ENV_STEP_RANGE,     CG_ENV_WARMUP,          CG_ENV_STEPS,           CG_ENV_TRACE_STEPS,
    CG_ENV_STEP_FALLBACK,  CG_ENV_STEPS_FROM,      CG_ENV_NVTX_LIB,        CG_ENV_OPTIMIZER_RANGE,
    CG_ENV_STEP_OPTIMIZER,
};
static const char *const user_vars[] = {CG_ENV_CUPTI, CG_ENV_BUFFER_MB, CG_ENV_CUPTI_PATH,
                                        CG_ENV_TRACE_MAX_EVENTS, CG_ENV_COMM_KERNELS,
                                        CG_ENV_OVERHEAD_TOGGLE};

struct cg_collector {
    struct cg_collect_cfg cfg;
    char inject[PATH_MAX];
    char python[PATH_MAX];   /* the sitecustomize's folder, "" when steps never come from the
                              * optimizer (nvtx, or auto without the folder and library) */
    char nvtx_lib[PATH_MAX];
    char tmp[PATH_MAX];
    bool have_tmp;
    char shard_root[PATH_MAX]; /* where tmp is made: --shard-dir (absolute) or TMPDIR */
    char **builtin;      /* the built-in canary's argv when no command was given */
    char *const *cmd;    /* cfg.cmd or builtin */
    int next_dir;        /* runs started, for shard directory names */
    char *warned[CG_ARTIFACT_MAX_WARNINGS]; /* library warnings printed so far */
    size_t n_warned;
    bool env_said; /* the inherited variables were named (when cfg.env_said is NULL) */
    struct cg_collect_failure failure; /* the last run's diagnosis, for cg_collect_hint */
};

struct progress {
    const char *shard_dir;
    const char *label;
    long run, n_runs;
    long expect; /* warm-up + measured */
    const struct cg_say *say;
    bool let_finish;    /* never ask for a stop */
    int64_t last_seen;
    double last_print_s;
    int64_t done_steps; /* the shards' "done" N when a stop was asked for, else -1 */
    long warmup;
    long pid; /* the canary's first process (cg_launch_opts.pid_out), 0 before */
    struct cg_run_placement placement; /* sampled at each poll until the measured window began */
    bool placed;                       /* the sample was taken once the measured window had begun */
    bool oom;
};

static int fmt_path(char *buf, size_t cap, struct cg_err *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* snprintf that reports truncation: 0, or CG_EIO naming what did not fit. */
static int fmt_path(char *buf, size_t cap, struct cg_err *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= cap)
        return cg_err_set(err, CG_EIO, "path too long: '%.200s...'", buf);
    return 0;
}

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

/* The environment, settings and GPU status of the artifact (before the first run). */
static int fill_header(struct cg_artifact *a, const struct cg_collector *col, struct cg_err *err)
{
    const struct cg_collect_cfg *c = &col->cfg;
    char when[32];
    time_t t = time(NULL);
    struct tm tm;
    size_t n_cmd = 0;
    while (col->cmd[n_cmd] != NULL)
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
    a->settings.flops_per_token = c->flops_per_token > 0 ? c->flops_per_token : -1;
    a->settings.peak_flop_per_clock = c->peak_flop_per_clock > 0 ? c->peak_flop_per_clock : NAN;
    if (c->precision != NULL && (a->settings.precision = strdup(c->precision)) == NULL)
        return cg_err_set(err, CG_ENOMEM, "out of memory");
    if (a->created_utc == NULL || a->env.tool_version == NULL ||
        a->env.canary_command == NULL || a->settings.step_range == NULL)
        return cg_err_set(err, CG_ENOMEM, "out of memory");
    /* the command as written everywhere: secrets hidden (redact.h); the identity too, so that
     * a token that changes between runs does not read as a changed canary */
    for (size_t i = 0; i < n_cmd; i++) {
        a->env.canary_command[i] = cg_redact_apply(cg_redact_default(), col->cmd[i]);
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
static int fill_gpu(struct cg_artifact *a, const struct cg_shard *sh, size_t n)
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

/* A process's shard write failure as one line (the path shown escaped). */
static int shard_write_failed(const struct cg_collect_cfg *c, long i, long total,
                              const struct cg_shard_fail *f, enum cg_collect_failed *reason,
                              struct cg_err *err)
{
    struct cg_buf path;
    cg_buf_init(&path, 512);
    int e = cg_term_escape(&path, f->path, 300);
    *reason = CG_COLLECT_FAILED_SHARD_WRITE;
    int rc = cg_err_set(err, CG_ECANARY,
                        "the injection library could not %s its shard in run %ld of %ld: '%s': "
                        "%s (canary process %lld); its output is in '%s'",
                        f->op, i, total, e == 0 ? cg_buf_str(&path) : "?",
                        strerror(f->errno_value), f->pid, c->log);
    cg_buf_release(&path);
    return rc;
}

/* Why a run failed, as one line and as *reason (what the hint can mend); 0 when it measured
 * enough. fail is the library's record of a shard it could not write (NULL when none). */
static int check_run(const struct cg_collect_cfg *c, long i, long total,
                     const struct cg_launch_result *r, const struct cg_shard_status *st,
                     const struct cg_shard_fail *fail, enum cg_collect_failed *reason,
                     struct cg_err *err)
{
    long long seen = (long long)st->steps_seen;
    const char *steps_word = seen == 1 ? "step" : "steps";
    *reason = CG_COLLECT_FAILED_OTHER;
    if (st->nonfinite_loss_step >= 0) {
        double v = st->nonfinite_loss;
        return cg_err_set(err, CG_ECANARY,
                          "canary reported a non-finite loss (%s) in step %lld (counting from 1, "
                          "warm-up included) of run %ld of %ld: training diverged; its output is "
                          "in '%s'",
                          isnan(v) ? "nan" : v > 0 ? "inf" : "-inf",
                          (long long)st->nonfinite_loss_step + 1, i, total, c->log);
    }
    switch (r->end) {
    case CG_LAUNCH_TIMEOUT:
        return cg_err_set(err, CG_ECANARY,
                          "canary timed out in run %ld of %ld after %ld s having marked %lld %s "
                          "(stopped with SIGTERM/SIGKILL); its output is in '%s'",
                          i, total, c->timeout_s, seen, steps_word, c->log);
    case CG_LAUNCH_SIGNALED:
        return cg_err_set(err, CG_ECANARY,
                          "canary died of signal %d (%s) in run %ld of %ld after %lld %s; its "
                          "output is in '%s'",
                          r->signal, strsignal(r->signal), i, total, seen, steps_word, c->log);
    case CG_LAUNCH_EXITED:
        if (r->exit_code != 0)
            return cg_err_set(err, CG_ECANARY,
                              "canary exited with status %d in run %ld of %ld after %lld %s; its "
                              "output is in '%s'",
                              r->exit_code, i, total, seen, steps_word, c->log);
        break;
    case CG_LAUNCH_INTERRUPTED:
        return cg_err_set(err, CG_ECANARY, "interrupted in run %ld of %ld", i, total);
    case CG_LAUNCH_STOPPED:
        break; /* stopped once measured: complete, whatever it ended with */
    }
    if (fail != NULL)
        return shard_write_failed(c, i, total, fail, reason, err);
    if (st->n_shards == 0) {
        *reason = CG_COLLECT_FAILED_NOT_LOADED;
        return cg_err_set(err, CG_ECANARY,
                          "the injection library was not loaded in the canary in run %ld of %ld "
                          "(no process wrote a shard); its output is in '%s'",
                          i, total, c->log);
    }
    if (st->n_with_steps == 0)
        *reason = CG_COLLECT_FAILED_NO_STEP;
    if (st->n_with_steps == 0)
        return cg_err_set(err, CG_ECANARY,
                          "canary marked no step in run %ld of %ld (no NVTX range named '%s' in "
                          "the default domain); its output is in '%s'",
                          i, total, c->step_range, c->log);
    if (seen < c->warmup + c->steps)
        return cg_err_set(err, CG_ECANARY,
                          "canary marked %lld %s in run %ld of %ld, fewer than the %ld warm-up + "
                          "%ld measured asked for; its output is in '%s'",
                          seen, steps_word, i, total, c->warmup, c->steps, c->log);
    return 0;
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

static void free_argv(char **argv)
{
    if (argv == NULL)
        return;
    for (size_t i = 0; argv[i] != NULL; i++)
        free(argv[i]);
    free(argv);
}

/* When argv runs Python (its program's name begins "python") with an option that keeps Python
 * from loading the sitecustomize on PYTHONPATH (-S: no site module; -E: PYTHON* variables
 * ignored; -I: both), that option ("-S", "-E" or "-I", also inside a cluster such as "-uS") into
 * flag; else "". Options end at the script, "-", "--", -c or -m. */
static void python_site_flag(char *const *argv, char flag[4])
{
    flag[0] = '\0';
    if (argv == NULL || argv[0] == NULL)
        return;
    const char *base = strrchr(argv[0], '/');
    if (strncmp(base != NULL ? base + 1 : argv[0], "python", 6) != 0)
        return;
    for (size_t i = 1; argv[i] != NULL && argv[i][0] == '-' && argv[i][1] != '\0'; i++) {
        const char *a = argv[i];
        if (a[1] == '-') {
            if (a[2] == '\0')
                return;
            continue; /* --help and the like */
        }
        for (const char *c = a + 1; *c != '\0'; c++) {
            if (*c == 'S' || *c == 'I' || *c == 'E') {
                snprintf(flag, 4, "-%c", *c);
                return;
            }
            if (*c == 'c' || *c == 'm')
                return;
            if (*c == 'W' || *c == 'X') { /* its value follows, here or as the next word */
                if (c[1] == '\0' && argv[i + 1] != NULL)
                    i++;
                break;
            }
        }
    }
}

/* The built-in canary's argv: canary-train --preset tiny --steps WARMUP+STEPS. */
static int builtin_argv(struct cg_collector *col, const char *self, struct cg_err *err)
{
    char path[PATH_MAX], count[32];
    if (fmt_path(path, sizeof(path), err, "%s/canary-train", self) != 0)
        return err->code;
    if (access(path, X_OK) != 0)
        return cg_err_set(err, CG_EINPUT,
                          "no canary command given and the built-in canary '%s' is not there",
                          path);
    snprintf(count, sizeof(count), "%ld", col->cfg.warmup + col->cfg.steps);
    const char *args[] = {path, "--preset", "tiny", "--steps", count};
    size_t n = sizeof(args) / sizeof(args[0]);
    col->builtin = calloc(n + 1, sizeof(char *));
    if (col->builtin == NULL)
        return cg_err_set(err, CG_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        col->builtin[i] = strdup(args[i]);
        if (col->builtin[i] == NULL)
            return cg_err_set(err, CG_ENOMEM, "out of memory");
    }
    return 0;
}

/* Where the tool's companions are (the injection library, the NVTX library, python/, the
 * built-in canary): beside the executable in a build tree, else in ../lib/canary-gate (an
 * installed tree, wherever it was installed or moved to); malloc'ed, NULL when the executable's
 * directory is unknown. When neither holds the library, the executable's directory (the error
 * then names the library there). */
static char *companion_dir(void)
{
    char *self = cg_self_dir(), path[PATH_MAX];
    if (self == NULL)
        return NULL;
    int n = snprintf(path, sizeof(path), "%s/%s", self, CG_INJECT_LIBRARY);
    if (n > 0 && (size_t)n < sizeof(path) && access(path, R_OK) == 0)
        return self;
    n = snprintf(path, sizeof(path), "%s/" CG_INSTALLED_COMPANIONS "/%s", self, CG_INJECT_LIBRARY);
    if (n <= 0 || (size_t)n >= sizeof(path) || access(path, R_OK) != 0)
        return self;
    char *lib = strrchr(path, '/');
    *lib = '\0';
    char *dir = realpath(path, NULL); /* bin/../lib/canary-gate as lib/canary-gate */
    if (dir == NULL)
        return self;
    free(self);
    return dir;
}

/* The sitecustomize's folder and the NVTX library beside the tool, for steps from the
 * optimizer: required with --steps-from optimizer, used when present with auto. */
static int find_python(struct cg_collector *col, const char *self, struct cg_err *err)
{
    char site[PATH_MAX];
    col->python[0] = '\0';
    if (col->cfg.steps_from == CG_STEPS_FROM_NVTX)
        return 0;
    int rc = fmt_path(col->nvtx_lib, sizeof(col->nvtx_lib), err, "%s/%s", self, CG_NVTX_LIBRARY);
    if (rc == 0)
        rc = fmt_path(site, sizeof(site), err, "%s/%s/sitecustomize.py", self, CG_PYTHON_DIR);
    if (rc != 0)
        return rc;
    if (access(col->nvtx_lib, R_OK) != 0 || access(site, R_OK) != 0) {
        if (col->cfg.steps_from == CG_STEPS_FROM_AUTO)
            return 0;
        return cg_err_set(err, CG_EIO,
                          "--steps-from optimizer: cannot find '%s' or '%s' beside canary-gate "
                          "(built without the NVTX headers, or moved without them)",
                          site, col->nvtx_lib);
    }
    return fmt_path(col->python, sizeof(col->python), err, "%s/%s", self, CG_PYTHON_DIR);
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
        const char *tmpdir = getenv("TMPDIR");
        return fmt_path(root, cap, err, "%s", tmpdir != NULL && *tmpdir != '\0' ? tmpdir : "/tmp");
    }
    struct stat st;
    char resolved[PATH_MAX];
    if (stat(cfg->shard_dir, &st) != 0 || realpath(cfg->shard_dir, resolved) == NULL)
        return cg_err_set(err, CG_EINPUT, "--shard-dir '%s': %s", cfg->shard_dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return cg_err_set(err, CG_EINPUT, "--shard-dir '%s': not a directory", cfg->shard_dir);
    return fmt_path(root, cap, err, "%s", resolved);
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
    char *self = NULL;
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
                        CG_ENV_COMM_KERNELS " '%.*s%s': %s (comma-separated name parts of "
                        "communication kernels, at most 8, each 1 to 63 printable bytes)",
                        part_len < 40 ? (int)part_len : 40, part, part_len > 40 ? "..." : "",
                        bad);
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
    self = companion_dir();
    if (self == NULL) {
        rc = cg_err_set(err, CG_EIO, "cannot find the directory of the canary-gate executable");
        goto out;
    }
    if ((rc = fmt_path(col->inject, sizeof(col->inject), err, "%s/%s", self, CG_INJECT_LIBRARY)) != 0)
        goto out;
    if (access(col->inject, R_OK) != 0) {
        rc = cg_err_set(err, CG_EIO,
                        "cannot find the injection library '%s' (canary-gate was built without "
                        "the NVTX headers, or it was moved without it)", col->inject);
        goto out;
    }
    if ((rc = find_python(col, self, err)) != 0)
        goto out;
    if (cfg->cmd != NULL && cfg->cmd[0] != NULL) {
        col->cmd = cfg->cmd;
    } else {
        if ((rc = builtin_argv(col, self, err)) != 0)
            goto out;
        col->cmd = col->builtin;
    }
    FILE *lf = fopen(col->cfg.log, "w"); /* a fresh log per invocation */
    if (lf == NULL) {
        rc = cg_err_set(err, CG_EIO, "cannot write the log '%s': %s", col->cfg.log,
                        strerror(errno));
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
    if ((rc = fmt_path(col->tmp, sizeof(col->tmp), err, "%s/" CG_STALE_PREFIX "XXXXXX",
                       tmpdir)) != 0)
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
    free(self);
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
    free_argv(col->builtin);
    for (size_t i = 0; i < col->n_warned; i++)
        free(col->warned[i]);
    free(col);
}

bool cg_collect_interrupted(void)
{
    return cg_launch_interrupted();
}

/* Names the processes that ended without finishing their shard (killed, crashed, os._exit):
 * their steps up to the last complete line were counted with the others'. A process stopped
 * once measured (stopped) had written "done", which is all it had to contribute. */
static void warn_unfinished(const struct cg_collect_cfg *c, long i, long total,
                            const struct cg_shard *sh, size_t n, bool stopped)
{
    for (size_t k = 0; k < n; k++) {
        if (sh[k].complete || (stopped && sh[k].done_steps >= 0))
            continue;
        char rank[40] = "";
        if (sh[k].rank >= 0)
            snprintf(rank, sizeof(rank), "rank %lld, ", (long long)sh[k].rank);
        cg_say(&c->say, CG_SAY_WARNING,
               "%s%srun %ld of %ld: a canary process (%spid %lld) ended without finishing its "
               "shard (killed or crashed); what it measured until then counts",
               c->label ? c->label : "", c->label ? " " : "", i, total, rank,
               (long long)sh[k].pid);
    }
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

/* Creates the run's failure file (CG_ENV_FAIL_FILE) at path, CG_FAIL_FILE_BYTES of NULs written
 * out so the library can record a failure in place even on a full disk. */
static int make_fail_file(const char *path, struct cg_err *err)
{
    char zeros[CG_FAIL_FILE_BYTES];
    memset(zeros, 0, sizeof(zeros));
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return cg_err_set(err, CG_EIO, "cannot create '%s': %s", path, strerror(errno));
    ssize_t w = write(fd, zeros, sizeof(zeros));
    int e = errno;
    close(fd);
    if (w != (ssize_t)sizeof(zeros))
        return cg_err_set(err, CG_EIO, "cannot write '%s': %s", path,
                          w < 0 ? strerror(e) : "short write");
    return 0;
}

/* Reads the failure file: 1 and f filled when a process recorded a failure, else 0. */
static int read_fail_file(const char *path, struct cg_shard_fail *f)
{
    char buf[CG_FAIL_FILE_BYTES];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t got = read(fd, buf, sizeof(buf));
    close(fd);
    if (got <= 0)
        return 0;
    int rc = cg_shard_fail_parse(buf, (size_t)got, f);
    if (rc < 0) { /* written, but not as the library writes: still a failure */
        snprintf(f->op, sizeof(f->op), "%s", CG_SHARD_FAIL_WRITE);
        f->errno_value = EIO;
        f->pid = -1;
        snprintf(f->path, sizeof(f->path), "%s", "(an unreadable failure record)");
    }
    return rc != 0;
}

/* Names, unless *said, the injection library's variables the user's environment holds (the
 * launcher's own are ignored: set or removed for every run; the user's settings reach the
 * canary), and sets *said. */
static void say_inherited_env(const struct cg_say *say, bool *said)
{
    if (*said)
        return;
    *said = true;
    for (size_t k = 0; k < 2; k++) {
        const char *const *names = k == 0 ? launcher_vars : user_vars;
        size_t n = k == 0 ? sizeof(launcher_vars) / sizeof(launcher_vars[0])
                          : sizeof(user_vars) / sizeof(user_vars[0]);
        for (size_t j = 0; j < n; j++) {
            const char *v = getenv(names[j]);
            if (v == NULL)
                continue;
            struct cg_buf text;
            cg_buf_init(&text, 1024);
            if (cg_term_escape(&text, v, 200) == 0) {
                if (k == 0)
                    cg_say(say, CG_SAY_WARNING,
                           "%s=%s from the environment is ignored: the gate sets the injection "
                           "library's variables itself%s",
                           names[j], cg_buf_str(&text),
                           strcmp(names[j], CG_ENV_TRACE_STEPS) == 0
                               ? " (a trace window comes from --trace and --trace-steps)"
                               : "");
                else
                    cg_say(say, CG_SAY_NOTE,
                           "the canary gets %s=%s from the environment (a setting of the "
                           "injection library, see docs/collector.md)",
                           names[j], cg_buf_str(&text));
            }
            cg_buf_release(&text);
        }
    }
}

/* The launcher's variables of one run: what it sets (add) and removes. */
struct run_env {
    char cuda[PATH_MAX + 32], nvtx[PATH_MAX + 32], dir[PATH_MAX + 32], fail[PATH_MAX + 32],
        range[320], warm[64], steps[64], trace[96], fallback[320], from[64], lib[PATH_MAX + 32],
        orange[320], which[64];
    char *pythonpath; /* malloc'ed "PYTHONPATH=..." or NULL */
    char *add[16], *remove[8];
    size_t n_add, n_remove;
};

/* Fills e for a run into shard_dir (e->pythonpath is the caller's to free, also on failure). */
static int run_env_make(const struct cg_collector *col, const char *shard_dir,
                        const char *fail_path, bool trace, struct run_env *e, struct cg_err *err)
{
    const struct cg_collect_cfg *c = &col->cfg;
    bool optimizer = col->python[0] != '\0';
    const char *range = c->steps_from == CG_STEPS_FROM_OPTIMIZER ? CG_OPTIMIZER_STEP_RANGE
                                                                 : c->step_range;
    memset(e, 0, sizeof(*e));
    if (fmt_path(e->cuda, sizeof(e->cuda), err, CG_ENV_CUDA_INJECTION "=%s", col->inject) != 0 ||
        fmt_path(e->nvtx, sizeof(e->nvtx), err, CG_ENV_NVTX_INJECTION "=%s", col->inject) != 0 ||
        fmt_path(e->dir, sizeof(e->dir), err, CG_ENV_SHARD_DIR "=%s", shard_dir) != 0 ||
        fmt_path(e->fail, sizeof(e->fail), err, CG_ENV_FAIL_FILE "=%s", fail_path) != 0 ||
        fmt_path(e->range, sizeof(e->range), err, CG_ENV_STEP_RANGE "=%s", range) != 0 ||
        fmt_path(e->warm, sizeof(e->warm), err, CG_ENV_WARMUP "=%ld", c->warmup) != 0 ||
        fmt_path(e->steps, sizeof(e->steps), err, CG_ENV_STEPS "=%ld", c->steps) != 0 ||
        fmt_path(e->trace, sizeof(e->trace), err, CG_ENV_TRACE_STEPS "=%s",
                 c->trace_steps ? c->trace_steps : "0:2") != 0)
        return err->code;
    char *always[] = {e->cuda, e->nvtx, e->dir, e->fail, e->range, e->warm, e->steps};
    for (size_t i = 0; i < sizeof(always) / sizeof(always[0]); i++)
        e->add[e->n_add++] = always[i];
    if (trace)
        e->add[e->n_add++] = e->trace;
    else
        e->remove[e->n_remove++] = (char *)CG_ENV_TRACE_STEPS;
    if (!optimizer || c->steps_from == CG_STEPS_FROM_OPTIMIZER)
        e->remove[e->n_remove++] = (char *)CG_ENV_STEP_FALLBACK;
    if (!optimizer) {
        const char *python_vars[] = {CG_ENV_STEPS_FROM, CG_ENV_NVTX_LIB, CG_ENV_OPTIMIZER_RANGE,
                                     CG_ENV_STEP_OPTIMIZER};
        for (size_t i = 0; i < sizeof(python_vars) / sizeof(python_vars[0]); i++)
            e->remove[e->n_remove++] = (char *)python_vars[i];
        return 0;
    }
    bool automatic = c->steps_from == CG_STEPS_FROM_AUTO;
    const char *user = getenv("PYTHONPATH");
    size_t cap = strlen(col->python) + (user != NULL ? strlen(user) : 0) + 16;
    if ((e->pythonpath = malloc(cap)) == NULL)
        return cg_err_set(err, CG_ENOMEM, "out of memory");
    snprintf(e->pythonpath, cap, "PYTHONPATH=%s%s%s", col->python,
             user != NULL && *user != '\0' ? ":" : "", user != NULL ? user : "");
    if ((automatic && fmt_path(e->fallback, sizeof(e->fallback), err,
                               CG_ENV_STEP_FALLBACK "=%s", CG_OPTIMIZER_STEP_RANGE) != 0) ||
        fmt_path(e->from, sizeof(e->from), err, CG_ENV_STEPS_FROM "=%s",
                 automatic ? "auto" : "optimizer") != 0 ||
        fmt_path(e->lib, sizeof(e->lib), err, CG_ENV_NVTX_LIB "=%s", col->nvtx_lib) != 0 ||
        fmt_path(e->orange, sizeof(e->orange), err, CG_ENV_OPTIMIZER_RANGE "=%s",
                 CG_OPTIMIZER_STEP_RANGE) != 0 ||
        fmt_path(e->which, sizeof(e->which), err, CG_ENV_STEP_OPTIMIZER "=%ld",
                 c->step_optimizer > 0 ? c->step_optimizer : 1) != 0)
        return err->code;
    char *python[] = {e->pythonpath, e->from, e->lib, e->orange, e->which};
    for (size_t i = 0; i < sizeof(python) / sizeof(python[0]); i++)
        e->add[e->n_add++] = python[i];
    if (automatic)
        e->add[e->n_add++] = e->fallback;
    return 0;
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

/* A failed run whose log (its last 64 KiB) names a known infrastructure failure says so: a
 * canary failure with that reason, never a regression. */
static void name_infra_failure(const char *log, struct cg_err *err)
{
    char why[256];
    char *tail = malloc(65536); /* the log's last 64 KiB */
    int fd = tail != NULL ? open(log, O_RDONLY | O_CLOEXEC) : -1;
    if (fd < 0) {
        free(tail);
        return;
    }
    off_t end = lseek(fd, 0, SEEK_END);
    ssize_t got = pread(fd, tail, 65536, end > 65536 ? end - 65536 : 0);
    close(fd);
    bool infra = got > 0 && cg_multinode_infra_failure(tail, (size_t)got, why, sizeof(why));
    free(tail);
    if (!infra)
        return;
    char msg[CG_ERR_MSG_MAX];
    snprintf(msg, sizeof(msg), "%s", err->msg);
    cg_err_set(err, CG_ECANARY, "infrastructure failure, not a regression: %s; %s", why, msg);
}

/* Every rank of the world the shards report wrote steps, once (cg_shard_check_world), the
 * message prefixed with the run. */
static int check_world(struct cg_collector *col, long i, long total, const struct cg_shard *sh,
                       size_t n, struct cg_err *err)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", col->inject);
    char *slash = strrchr(dir, '/');
    if (slash != NULL)
        *slash = '\0';
    struct cg_err e;
    cg_err_init(&e);
    int rc = cg_shard_check_world(sh, n, dir, &e);
    if (rc == 0)
        return 0;
    col->failure.reason = CG_COLLECT_FAILED_OTHER;
    return cg_err_set(err, rc, "run %ld of %ld: %s", i, total, e.msg);
}

/* One canary process into one run of a. */
static int run_one(struct cg_collector *col, struct cg_artifact *a, long i, long total,
                   struct cg_err *err)
{
    const struct cg_collect_cfg *c = &col->cfg;
    char shard_dir[PATH_MAX], fail_path[PATH_MAX];
    struct run_env env;
    bool trace = c->trace_path != NULL && col->next_dir == 0; /* the first run only */
    struct cg_shard *sh = NULL;
    size_t n = 0;
    struct cg_shard_status st;
    struct cg_shard_fail fail;
    struct cg_launch_result r;
    ++col->next_dir;
    if (fmt_path(shard_dir, sizeof(shard_dir), err, "%s/run-%d", col->tmp, col->next_dir) != 0 ||
        fmt_path(fail_path, sizeof(fail_path), err, "%s/run-%d.fail", col->tmp,
                 col->next_dir) != 0 ||
        run_env_make(col, shard_dir, fail_path, trace, &env, err) != 0)
        return err->code;
    say_inherited_env(&c->say, c->env_said != NULL ? c->env_said : &col->env_said);
    col->failure = (struct cg_collect_failure){.reason = CG_COLLECT_FAILED_OTHER,
                                               .steps_from = c->steps_from,
                                               .shard_dir = c->shard_dir,
                                               .steps_python = col->python[0] != '\0',
                                               .step_optimizer = c->step_optimizer};
    python_site_flag(col->cmd, col->failure.python_flag);
    if (make_fail_file(fail_path, err) != 0) {
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
        cg_say(&c->say, CG_SAY_INFO, "%s%srun %ld of %ld", c->label ? c->label : "",
               label_sep(&p), i, total);
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
    bool failed_write = rc == 0 && read_fail_file(fail_path, &fail);
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
        rc = check_run(c, i, total, &r, &st, failed_write ? &fail : NULL, &col->failure.reason,
                       err);
    }
    if (rc == 0)
        rc = check_world(col, i, total, sh, n, err);
    if (rc == CG_ECANARY && !cg_launch_interrupted())
        name_infra_failure(c->log, err);
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
    if (rc == 0 && fill_gpu(a, sh, n) != 0)
        rc = cg_err_set(err, CG_ENOMEM, "out of memory");
    if (rc == 0) {
        struct cg_run *run = cg_artifact_add_run(a);
        struct cg_shard_merge_opts mo = {c->warmup, c->steps, c->tokens_per_step};
        if (run == NULL)
            rc = cg_err_set(err, CG_ENOMEM, "out of memory");
        else if ((rc = cg_shard_merge(sh, n, &mo, run, err)) == 0) {
            run->summary.peak_host_rss_bytes = r.peak_rss_bytes;
            if (a->settings.steps_from == NULL && st.steps_from != CG_STEPS_UNKNOWN &&
                (a->settings.steps_from = strdup(st.steps_from == CG_STEPS_OPTIMIZER
                                                     ? "optimizer"
                                                     : "nvtx")) == NULL)
                rc = cg_err_set(err, CG_ENOMEM, "out of memory");
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
        warn_unfinished(c, i, total, sh, n, r.end == CG_LAUNCH_STOPPED);
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
        int rc = fill_header(a, col, err);
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

void cg_collect_hint(const struct cg_collect_failure *f, const struct cg_err *err,
                     const char *step_range, const struct cg_say *say)
{
    if (err->code != CG_ECANARY)
        return;
    if (f->reason == CG_COLLECT_FAILED_NOT_LOADED && f->steps_python && f->python_flag[0] != '\0') {
        cg_say(say, CG_SAY_INFO,
               "python's %s keeps it from loading canary-gate's sitecustomize, which marks "
               "the optimizer steps (and, in a script that calls neither NVTX nor CUDA, is "
               "what loads the library): drop %s, or mark each training step with an NVTX "
               "range",
               f->python_flag, f->python_flag);
        return;
    }
    if (f->reason == CG_COLLECT_FAILED_NOT_LOADED && f->steps_from == CG_STEPS_FROM_NVTX) {
        cg_say(say, CG_SAY_INFO,
               "with --steps-from nvtx the library is loaded by the canary's first NVTX call "
               "(or CUDA call): a canary that makes none never loads it. Mark each training "
               "step with an NVTX range, or for a PyTorch script drop --steps-from nvtx so that "
               "its optimizer steps are marked. (A canary that does call NVTX must keep the "
               "environment the gate gives it: " CG_ENV_NVTX_INJECTION ", "
               CG_ENV_CUDA_INJECTION " and the CANARY_GATE_* variables.)");
        return;
    }
    if (f->reason == CG_COLLECT_FAILED_NOT_LOADED) {
        cg_say(say, CG_SAY_INFO,
               "the canary must keep the environment the gate gives it "
               "(" CG_ENV_NVTX_INJECTION ", " CG_ENV_CUDA_INJECTION " and the "
               "CANARY_GATE_* variables) and call NVTX or CUDA: a container needs "
               "each passed on ('docker run -e " CG_ENV_NVTX_INJECTION " -e " CG_ENV_CUDA_INJECTION
               " -e " CG_ENV_SHARD_DIR " ...' with the library "
               "and the shard directory mounted at the same paths), sudo needs "
               "'sudo -E' or '--preserve-env', and 'env -i' clears them");
        return;
    }
    if (f->reason == CG_COLLECT_FAILED_SHARD_WRITE) {
        const char *tmp = f->shard_dir != NULL ? f->shard_dir : getenv("TMPDIR");
        if (f->shard_dir != NULL) {
            cg_say(say, CG_SAY_INFO,
                   "shards are written under --shard-dir ('%s'): free space there, and check "
                   "that every node can write to it at that path",
                   tmp);
            return;
        }
        cg_say(say, CG_SAY_INFO,
               "shards are written under TMPDIR ('%s'): free space there "
               "or point TMPDIR at a writable directory with room",
               tmp != NULL && *tmp != '\0' ? tmp : "/tmp");
        return;
    }
    if (f->reason != CG_COLLECT_FAILED_NO_STEP)
        return;
    if (step_range == NULL)
        step_range = "step";
    if (f->steps_python && f->step_optimizer > 1 && f->python_flag[0] == '\0') {
        cg_say(say, CG_SAY_INFO,
               "--step-optimizer %ld counts the optimizer that is number %ld to call step() in "
               "the script: a script that steps fewer marks no step (the canary's output says "
               "how many it stepped); give a number no larger than that, or leave it out for "
               "the first",
               f->step_optimizer, f->step_optimizer);
        return;
    }
    if (f->steps_from == CG_STEPS_FROM_OPTIMIZER) {
        cg_say(say, CG_SAY_INFO,
               "with --steps-from optimizer a step is a PyTorch "
               "optimizer.step(): the canary must be a Python script that imports "
               "torch.optim and steps an optimizer (with 'python -I' or '-S' Python "
               "skips the sitecustomize that marks them), or mark each step itself with "
               "an NVTX range named '%s' and use --steps-from auto",
               step_range);
        return;
    }
    cg_say(say, CG_SAY_INFO,
           "two ways to mark steps: (1) an NVTX range named '%s' in the "
           "default domain around each training step, e.g. in PyTorch "
           "torch.cuda.nvtx.range_push(\"%s\") at its start and "
           "torch.cuda.nvtx.range_pop() at its end; (2) for a PyTorch script, nothing: "
           "each optimizer.step() ends a step %s",
           step_range, step_range,
           f->steps_from == CG_STEPS_FROM_NVTX
               ? "when --steps-from is auto (the default) or optimizer, not nvtx as here"
           : f->steps_python && f->python_flag[0] != '\0'
               ? "(the canary called none: python's option given here keeps it from "
                 "loading the sitecustomize that marks them; drop it)"
           : f->steps_python
               ? "(the canary called none: no optimizer stepped, or 'python -I' or '-S' "
                 "skipped the sitecustomize that marks them)"
               : "once canary-gate is built with the NVTX headers (this one has no "
                 "python/sitecustomize.py and libcanary-nvtx-shim.so beside it)");
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
