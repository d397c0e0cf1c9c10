/*
 * cmd_run: `canary-gate run [options] [-- CMD ARGS...]` runs the canary N times under the
 * injection library and writes one run artifact. Each run is its own process (launch.c) whose
 * processes write shards into a private directory (shard.c merges them). With no command the
 * built-in canary beside the tool runs ("canary-train --preset tiny --steps WARMUP+STEPS").
 * Progress goes to stderr; the canary's own output goes to the log file. Exit: 0 every run
 * measured, 2 usage, 3 the canary failed, timed out, measured too little, or was interrupted.
 */
#include "cmd.h"

#include "artifact.h"
#include "cg_version.h"
#include "fsutil.h"
#include "launch.h"
#include "shard.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
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

static const char usage_text[] =
    "usage: canary-gate run [options] [-- CMD ARGS...]\n"
    "\n"
    "Runs the canary under NVTX/CUPTI instrumentation and writes a run artifact. Without CMD\n"
    "the built-in canary runs (canary-train beside canary-gate). The canary marks each\n"
    "training step with an NVTX range (PyTorch: torch.cuda.nvtx.range_push(\"step\") and\n"
    "torch.cuda.nvtx.range_pop()); an int64 payload on the range is its token count.\n"
    "\n"
    "  --out FILE            the artifact (default canary-run.json)\n"
    "  --runs N              canary processes, one after another (default 3)\n"
    "  --steps N             measured steps expected per run after the warm-up (default 50)\n"
    "  --warmup N            steps dropped at the start of each run (default 5)\n"
    "  --timeout SEC         stop a run after SEC seconds: SIGTERM, then SIGKILL (default 1800)\n"
    "  --kill-grace SEC      seconds between SIGTERM and SIGKILL (default 5)\n"
    "  --tokens-per-step N   tokens of a step whose range has no payload\n"
    "  --step-range NAME     NVTX range name that marks a step (default step)\n"
    "  --log FILE            the canary's stdout and stderr (default: --out with .log)\n"
    "  -h, --help            show this help\n"
    "\n"
    "exit codes: 0 every run measured, 2 usage error, 3 the canary failed, timed out, marked\n"
    "            too few steps, or the run was interrupted (completed runs are written)\n";

enum { OPT_OUT = 256, OPT_RUNS, OPT_STEPS, OPT_WARMUP, OPT_TIMEOUT, OPT_GRACE, OPT_TOKENS,
       OPT_RANGE, OPT_LOG };

static const struct option options[] = {
    {"out", required_argument, NULL, OPT_OUT},
    {"runs", required_argument, NULL, OPT_RUNS},
    {"steps", required_argument, NULL, OPT_STEPS},
    {"warmup", required_argument, NULL, OPT_WARMUP},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"kill-grace", required_argument, NULL, OPT_GRACE},
    {"tokens-per-step", required_argument, NULL, OPT_TOKENS},
    {"step-range", required_argument, NULL, OPT_RANGE},
    {"log", required_argument, NULL, OPT_LOG},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int fmt_path(char *buf, size_t cap, struct cg_err *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

struct run_cfg {
    const char *out;
    const char *log;
    const char *step_range;
    long runs, steps, warmup, timeout_s, grace_s, tokens_per_step;
    char **cmd; /* NULL-terminated */
};

struct progress {
    const char *shard_dir;
    int run, n_runs;
    long expect; /* warm-up + measured */
    bool tty;
    int64_t last_seen;
    double last_print_s;
};

static void on_progress(void *ctx, double elapsed_s)
{
    struct progress *p = ctx;
    struct cg_shard *sh = NULL;
    size_t n = 0;
    struct cg_err err;
    struct cg_shard_status st;
    if (cg_shard_load_dir(p->shard_dir, &sh, &n, &err) != 0)
        return;
    cg_shard_status(sh, n, &st);
    cg_shard_free_all(sh, n);
    if (!p->tty && st.steps_seen == p->last_seen && elapsed_s - p->last_print_s < 30.0)
        return;
    if (!p->tty && elapsed_s - p->last_print_s < 5.0)
        return;
    char last[48] = "";
    if (st.last_step_ns > 0)
        snprintf(last, sizeof(last), ", last step %.1f ms", (double)st.last_step_ns / 1e6);
    fprintf(stderr, "%srun %d of %d: %lld of %ld steps%s, %.0f s%s", p->tty ? "\r\033[K" : "",
            p->run, p->n_runs, (long long)st.steps_seen, p->expect, last, elapsed_s,
            p->tty ? "" : "\n");
    fflush(stderr);
    p->last_seen = st.steps_seen;
    p->last_print_s = elapsed_s;
}

/* Removes the files of a shard directory and the directory. */
static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d != NULL) {
        struct dirent *e;
        char path[PATH_MAX];
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            int k = snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
            if (k > 0 && (size_t)k < sizeof(path))
                unlink(path);
        }
        closedir(d);
    }
    rmdir(dir);
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* The environment, settings and GPU status of the artifact (before the first run). */
static int fill_header(struct cg_artifact *a, const struct run_cfg *c, struct cg_err *err)
{
    char when[32], settings[512];
    time_t t = time(NULL);
    struct tm tm;
    size_t n_cmd = 0;
    while (c->cmd[n_cmd] != NULL)
        n_cmd++;
    gmtime_r(&t, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(settings, sizeof(settings), "steps=%ld warmup=%ld step_range=%s tokens_per_step=%ld",
             c->steps, c->warmup, c->step_range, c->tokens_per_step);
    a->created_utc = strdup(when);
    a->env.cpu_model = cg_launch_cpu_model();
    a->env.tool_version = strdup(CG_VERSION);
    a->env.canary_hash = cg_launch_canary_hash(c->cmd, settings);
    a->env.canary_command = calloc(n_cmd + 1, sizeof(char *));
    a->settings.steps = c->steps;
    a->settings.warmup = c->warmup;
    a->settings.runs = c->runs;
    a->settings.step_range = strdup(c->step_range);
    a->settings.tokens_per_step = c->tokens_per_step;
    if (a->created_utc == NULL || a->env.tool_version == NULL || a->env.canary_hash == NULL ||
        a->env.canary_command == NULL || a->settings.step_range == NULL)
        return cg_err_set(err, CG_ENOMEM, "out of memory");
    for (size_t i = 0; i < n_cmd; i++) {
        a->env.canary_command[i] = strdup(c->cmd[i]);
        if (a->env.canary_command[i] == NULL)
            return cg_err_set(err, CG_ENOMEM, "out of memory");
        a->env.n_canary_command++;
    }
    return 0;
}

/* GPU facts from the first run's shards. */
static int fill_gpu(struct cg_artifact *a, const struct cg_shard *sh, size_t n)
{
    const char *reason = NULL;
    a->gpu_available = cg_shard_gpu_available(sh, n, &reason);
    a->gpu_reason = dup_or_null(reason);
    a->env.cupti_status = strdup(a->gpu_available ? "ok" : reason);
    for (size_t i = 0; i < n; i++) {
        if (a->env.gpu_model == NULL && sh[i].gpu_model != NULL) {
            a->env.gpu_model = strdup(sh[i].gpu_model);
            a->env.gpu_count = sh[i].gpu_count;
        }
        if (a->env.cuda_version == NULL && sh[i].cuda_version != NULL)
            a->env.cuda_version = strdup(sh[i].cuda_version);
        if (a->env.driver_version == NULL && sh[i].driver_version != NULL)
            a->env.driver_version = strdup(sh[i].driver_version);
    }
    if (a->env.driver_version == NULL && a->gpu_available)
        a->env.driver_version = cg_launch_driver_version();
    if (a->env.cupti_status == NULL || (reason != NULL && a->gpu_reason == NULL))
        return CG_ENOMEM;
    return 0;
}

/* Why a run failed, as one line; NULL when it measured enough. */
static int check_run(const struct run_cfg *c, int i, const struct cg_launch_result *r,
                     const struct cg_shard_status *st, struct cg_err *err)
{
    long long seen = (long long)st->steps_seen;
    const char *steps_word = seen == 1 ? "step" : "steps";
    switch (r->end) {
    case CG_LAUNCH_TIMEOUT:
        return cg_err_set(err, CG_ECANARY,
                          "canary timed out in run %d of %ld after %ld s having marked %lld %s "
                          "(stopped with SIGTERM/SIGKILL); its output is in '%s'",
                          i, c->runs, c->timeout_s, seen, steps_word, c->log);
    case CG_LAUNCH_SIGNALED:
        return cg_err_set(err, CG_ECANARY,
                          "canary died of signal %d (%s) in run %d of %ld after %lld %s; its "
                          "output is in '%s'",
                          r->signal, strsignal(r->signal), i, c->runs, seen, steps_word, c->log);
    case CG_LAUNCH_EXITED:
        if (r->exit_code != 0)
            return cg_err_set(err, CG_ECANARY,
                              "canary exited with status %d in run %d of %ld after %lld %s; its "
                              "output is in '%s'",
                              r->exit_code, i, c->runs, seen, steps_word, c->log);
        break;
    case CG_LAUNCH_INTERRUPTED:
        return cg_err_set(err, CG_ECANARY, "interrupted in run %d of %ld", i, c->runs);
    }
    if (st->n_with_steps == 0)
        return cg_err_set(err, CG_ECANARY,
                          "canary marked no step in run %d of %ld (no NVTX range named '%s' in "
                          "the default domain); its output is in '%s'",
                          i, c->runs, c->step_range, c->log);
    if (seen < c->warmup + c->steps)
        return cg_err_set(err, CG_ECANARY,
                          "canary marked %lld %s in run %d of %ld, fewer than the %ld warm-up + "
                          "%ld measured asked for; its output is in '%s'",
                          seen, steps_word, i, c->runs, c->warmup, c->steps, c->log);
    return 0;
}

static void log_banner(const char *log, int i, long n, char *const *cmd)
{
    FILE *f = fopen(log, "a");
    if (f == NULL)
        return;
    fprintf(f, "==== canary-gate: run %d of %ld:", i, n);
    for (size_t k = 0; cmd[k] != NULL; k++)
        fprintf(f, " %s", cmd[k]);
    fprintf(f, "\n");
    fclose(f);
}

/* Runs the canary c->runs times into a; *completed counts the runs added. */
static int run_all(const struct run_cfg *c, const char *inject, const char *tmp,
                   struct cg_artifact *a, int *completed, struct cg_err *err)
{
    char shard_dir[PATH_MAX], e_cuda[PATH_MAX + 32], e_nvtx[PATH_MAX + 32], e_dir[PATH_MAX + 32],
        e_range[320], e_warm[64];
    char *env[5] = {e_cuda, e_nvtx, e_dir, e_range, e_warm};
    bool tty = isatty(STDERR_FILENO);
    for (int i = 1; i <= c->runs; i++) {
        struct cg_shard *sh = NULL;
        size_t n = 0;
        struct cg_shard_status st;
        struct cg_launch_result r;
        if (fmt_path(shard_dir, sizeof(shard_dir), err, "%s/run-%d", tmp, i) != 0 ||
            fmt_path(e_cuda, sizeof(e_cuda), err, "CUDA_INJECTION64_PATH=%s", inject) != 0 ||
            fmt_path(e_nvtx, sizeof(e_nvtx), err, "NVTX_INJECTION64_PATH=%s", inject) != 0 ||
            fmt_path(e_dir, sizeof(e_dir), err, "CANARY_GATE_SHARD_DIR=%s", shard_dir) != 0 ||
            fmt_path(e_range, sizeof(e_range), err, "CANARY_GATE_STEP_RANGE=%s", c->step_range) != 0 ||
            fmt_path(e_warm, sizeof(e_warm), err, "CANARY_GATE_WARMUP=%ld", c->warmup) != 0)
            return err->code;
        if (mkdir(shard_dir, 0700) != 0)
            return cg_err_set(err, CG_EIO, "cannot create '%s': %s", shard_dir, strerror(errno));
        struct progress p = {shard_dir, i, (int)c->runs, c->warmup + c->steps, tty, -1, -10.0};
        struct cg_launch_opts o = {c->cmd, env, 5, c->log, (double)c->timeout_s,
                                   (double)c->grace_s, on_progress, &p, tty ? 0.5 : 1.0};
        log_banner(c->log, i, c->runs, c->cmd);
        if (!tty)
            fprintf(stderr, "canary-gate: run %d of %ld\n", i, c->runs);
        int rc = cg_launch_run(&o, &r, err);
        if (tty)
            fprintf(stderr, "\r\033[K");
        if (rc == 0)
            rc = cg_shard_load_dir(shard_dir, &sh, &n, err);
        if (rc == 0) {
            cg_shard_status(sh, n, &st);
            rc = check_run(c, i, &r, &st, err);
        }
        if (rc == 0 && i == 1 && fill_gpu(a, sh, n) != 0)
            rc = cg_err_set(err, CG_ENOMEM, "out of memory");
        if (rc == 0) {
            struct cg_run *run = cg_artifact_add_run(a);
            struct cg_shard_merge_opts mo = {c->warmup, c->steps, c->tokens_per_step};
            if (run == NULL)
                rc = cg_err_set(err, CG_ENOMEM, "out of memory");
            else if ((rc = cg_shard_merge(sh, n, &mo, run, err)) == 0)
                run->summary.peak_host_rss_bytes = r.peak_rss_bytes;
        }
        cg_shard_free_all(sh, n);
        remove_dir(shard_dir);
        if (rc != 0)
            return rc;
        (*completed)++;
        const struct cg_run *done = &a->runs[a->n_runs - 1];
        fprintf(stderr, "canary-gate: run %d of %ld: %zu steps, median %.2f ms%s\n", i, c->runs,
                done->n_steps, done->summary.step_time_median_ns / 1e6,
                a->gpu_available ? "" : " (no GPU metrics)");
        if (cg_launch_interrupted())
            return cg_err_set(err, CG_ECANARY, "interrupted after run %d of %ld", i, c->runs);
    }
    return 0;
}

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

static int parse_seconds(const char *opt, const char *v, long *out)
{
    return cg_cmd_parse_count("run", opt, v, 1, 7 * 24 * 3600, out);
}

int cmd_run(int argc, char **argv)
{
    struct run_cfg c = {"canary-run.json", NULL, "step", 3, 50, 5, 1800, 5, -1, NULL};
    struct cg_artifact a;
    struct cg_err err;
    char *self = NULL, *log_owned = NULL, *builtin[6] = {NULL};
    char inject[PATH_MAX], tmp[PATH_MAX], count[32];
    int exit_code = CG_EXIT_PASS, completed = 0, opt;
    bool have_tmp = false;
    cg_artifact_init(&a);
    cg_err_init(&err);
    optind = 1;
    while ((opt = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
        int bad = 0;
        switch (opt) {
        case OPT_OUT: c.out = optarg; break;
        case OPT_LOG: c.log = optarg; break;
        case OPT_RANGE: c.step_range = optarg; break;
        case OPT_RUNS: bad = cg_cmd_parse_count("run", "--runs", optarg, 1, 1000, &c.runs); break;
        case OPT_STEPS: bad = cg_cmd_parse_count("run", "--steps", optarg, 1, 1000000, &c.steps); break;
        case OPT_WARMUP: bad = cg_cmd_parse_count("run", "--warmup", optarg, 0, 1000000, &c.warmup); break;
        case OPT_TIMEOUT: bad = parse_seconds("--timeout", optarg, &c.timeout_s); break;
        case OPT_GRACE: bad = parse_seconds("--kill-grace", optarg, &c.grace_s); break;
        case OPT_TOKENS:
            bad = cg_cmd_parse_count("run", "--tokens-per-step", optarg, 0, INT32_MAX, &c.tokens_per_step);
            break;
        case 'h': fputs(usage_text, stdout); return CG_EXIT_PASS;
        default: return cg_cmd_usage_error("run", "unknown or incomplete option");
        }
        if (bad)
            return bad;
    }
    if (c.step_range[0] == '\0' || strlen(c.step_range) > 255)
        return cg_cmd_usage_error("run", "--step-range: expected a name of 1 to 255 bytes");

    self = cg_self_dir();
    if (self == NULL) {
        cg_err_set(&err, CG_EIO, "cannot find the directory of the canary-gate executable");
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    if (fmt_path(inject, sizeof(inject), &err, "%s/%s", self, CG_INJECT_LIBRARY) != 0) {
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    if (access(inject, R_OK) != 0) {
        cg_err_set(&err, CG_EIO,
                   "cannot find the injection library '%s' (canary-gate was built without the "
                   "NVTX headers, or it was moved without it)", inject);
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    if (optind < argc) {
        c.cmd = argv + optind;
    } else {
        char path[PATH_MAX];
        if (fmt_path(path, sizeof(path), &err, "%s/canary-train", self) != 0) {
            exit_code = cg_cmd_fail(&err);
            goto done;
        }
        if (access(path, X_OK) != 0) {
            exit_code = cg_cmd_usage_error("run", "no canary command given and the built-in "
                                                  "canary '%s' is not there", path);
            goto done;
        }
        snprintf(count, sizeof(count), "%ld", c.warmup + c.steps);
        builtin[0] = strdup(path);
        builtin[1] = "--preset";
        builtin[2] = "tiny";
        builtin[3] = "--steps";
        builtin[4] = count;
        c.cmd = builtin;
        if (builtin[0] == NULL)
            goto oom;
    }
    if (c.log == NULL) {
        size_t n = strlen(c.out);
        bool json = n > 5 && strcmp(c.out + n - 5, ".json") == 0;
        log_owned = malloc(n + 5);
        if (log_owned == NULL)
            goto oom;
        snprintf(log_owned, n + 5, "%.*s.log", (int)(json ? n - 5 : n), c.out);
        c.log = log_owned;
    }
    FILE *lf = fopen(c.log, "w"); /* a fresh log per invocation */
    if (lf == NULL) {
        cg_err_set(&err, CG_EIO, "cannot write the log '%s': %s", c.log, strerror(errno));
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    fclose(lf);
    const char *tmpdir = getenv("TMPDIR");
    if (fmt_path(tmp, sizeof(tmp), &err, "%s/canary-gate.XXXXXX",
                 tmpdir && *tmpdir ? tmpdir : "/tmp") != 0) {
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    if (mkdtemp(tmp) == NULL) {
        cg_err_set(&err, CG_EIO, "cannot create a directory for shards in '%s': %s",
                   tmpdir && *tmpdir ? tmpdir : "/tmp", strerror(errno));
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    have_tmp = true;
    if (fill_header(&a, &c, &err) != 0) {
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    cg_launch_catch_interrupts();
    int rc = run_all(&c, inject, tmp, &a, &completed, &err);
    if (rc != 0) {
        exit_code = cg_cmd_fail(&err);
        if (err.code == CG_ECANARY && strstr(err.msg, "marked no step") != NULL)
            fprintf(stderr, "canary-gate: mark each training step with an NVTX range named '%s' "
                            "in the default domain, e.g. in PyTorch: torch.cuda.nvtx.range_push(\"%s\") "
                            "at the start of a step and torch.cuda.nvtx.range_pop() at its end\n",
                    c.step_range, c.step_range);
        if (cg_launch_interrupted() && completed > 0) {
            a.settings.runs = completed;
            if (cg_artifact_save(c.out, &a, &err) == 0)
                fprintf(stderr, "canary-gate: %d completed run%s written to '%s'\n", completed,
                        completed == 1 ? "" : "s", c.out);
            else
                cg_cmd_fail(&err);
        } else if (cg_launch_interrupted()) {
            fprintf(stderr, "canary-gate: no run completed; nothing written\n");
        }
        exit_code = CG_EXIT_RUNTIME;
        goto done;
    }
    if (cg_artifact_save(c.out, &a, &err) != 0) {
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    fprintf(stderr, "canary-gate: %ld run%s measured%s; artifact '%s', canary output '%s'\n",
            c.runs, c.runs == 1 ? "" : "s",
            a.gpu_available ? "" : " (GPU metrics unavailable)", c.out, c.log);
    if (!a.gpu_available && a.gpu_reason != NULL)
        fprintf(stderr, "canary-gate: GPU metrics unavailable: %s\n", a.gpu_reason);
    goto done;
oom:
    cg_err_set(&err, CG_ENOMEM, "out of memory");
    exit_code = cg_cmd_fail(&err);
done:
    if (have_tmp)
        remove_dir(tmp);
    cg_artifact_release(&a);
    free(builtin[0]);
    free(log_owned);
    free(self);
    return exit_code;
}
