/*
 * canary_env: the canary's environment and the tool's companions (see canary_env.h): where the
 * injection library, the NVTX library, python/ and the built-in canary are; the variables of
 * each run (the injection library's, the measured window, PYTHONPATH with the sitecustomize
 * first); the variables the user's environment already holds, named; and whether a Python canary
 * was given an option that skips the sitecustomize.
 */
#include "canary_env.h"

#include "buf.h"
#include "fmt.h"
#include "fsutil.h"
#include "launch.h"
#include "launch_env.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The injection library's variables (launch_env.h). The launcher sets or removes the ones it
 * owns for every run, whatever the user's environment holds; the user's settings pass through. */
static const char *const launcher_vars[] = {
    CG_ENV_CUDA_INJECTION, CG_ENV_NVTX_INJECTION, CG_ENV_SHARD_DIR, CG_ENV_FAIL_FILE,
    CG_ENV_STEP_RANGE,     CG_ENV_WARMUP,         CG_ENV_STEPS,     CG_ENV_TRACE_STEPS,
    CG_ENV_STEP_FALLBACK,  CG_ENV_STEPS_FROM,     CG_ENV_NVTX_LIB,  CG_ENV_OPTIMIZER_RANGE,
    CG_ENV_STEP_OPTIMIZER, CG_ENV_SLURM_STEP,
};
static const char *const user_vars[] = {CG_ENV_CUPTI,        CG_ENV_BUFFER_MB,
                                        CG_ENV_CUPTI_PATH,   CG_ENV_TRACE_MAX_EVENTS,
                                        CG_ENV_COMM_KERNELS, CG_ENV_OVERHEAD_TOGGLE};

/* snprintf that reports truncation: 0, or CG_EIO naming what did not fit. */
int cg_canary_env_fmt_path(char *buf, size_t cap, struct cg_err *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= cap)
        return cg_err_set(err, CG_EIO, "path too long: '%.200s...'", buf);
    return 0;
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
void cg_canary_env_python_flag(char *const *argv, char flag[4])
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
static int builtin_argv(struct cg_canary_env *ce, const struct cg_collect_cfg *cfg,
                        const char *self, struct cg_err *err)
{
    char path[PATH_MAX], count[32];
    if (cg_canary_env_fmt_path(path, sizeof(path), err, "%s/canary-train", self) != 0)
        return err->code;
    if (access(path, X_OK) != 0)
        return cg_err_set(err, CG_EINPUT,
                          "no canary command given and the built-in canary '%s' is not there",
                          path);
    snprintf(count, sizeof(count), "%ld", cfg->warmup + cfg->steps);
    const char *args[] = {path, "--preset", "tiny", "--steps", count};
    size_t n = sizeof(args) / sizeof(args[0]);
    ce->builtin = calloc(n + 1, sizeof(char *));
    if (ce->builtin == NULL)
        return cg_err_set(err, CG_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        ce->builtin[i] = strdup(args[i]);
        if (ce->builtin[i] == NULL)
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
static int find_python(struct cg_canary_env *ce, enum cg_steps_from steps_from, const char *self,
                       struct cg_err *err)
{
    char site[PATH_MAX];
    ce->python[0] = '\0';
    if (steps_from == CG_STEPS_FROM_NVTX)
        return 0;
    int rc = cg_canary_env_fmt_path(ce->nvtx_lib, sizeof(ce->nvtx_lib), err, "%s/%s", self,
                                    CG_NVTX_LIBRARY);
    if (rc == 0)
        rc = cg_canary_env_fmt_path(site, sizeof(site), err, "%s/%s/sitecustomize.py", self,
                                    CG_PYTHON_DIR);
    if (rc != 0)
        return rc;
    if (access(ce->nvtx_lib, R_OK) != 0 || access(site, R_OK) != 0) {
        if (steps_from == CG_STEPS_FROM_AUTO)
            return 0;
        return cg_err_set(err, CG_EIO,
                          "--steps-from optimizer: cannot find '%s' or '%s' beside canary-gate "
                          "(built without the NVTX headers, or moved without them)",
                          site, ce->nvtx_lib);
    }
    return cg_canary_env_fmt_path(ce->python, sizeof(ce->python), err, "%s/%s", self,
                                  CG_PYTHON_DIR);
}

int cg_canary_env_find(struct cg_canary_env *ce, const struct cg_collect_cfg *cfg,
                       struct cg_err *err)
{
    int rc = 0;
    char *self = companion_dir();
    if (self == NULL)
        return cg_err_set(err, CG_EIO, "cannot find the directory of the canary-gate executable");
    if ((rc = cg_canary_env_fmt_path(ce->inject, sizeof(ce->inject), err, "%s/%s", self,
                                     CG_INJECT_LIBRARY)) != 0)
        goto out;
    if (access(ce->inject, R_OK) != 0) {
        rc = cg_err_set(err, CG_EIO,
                        "cannot find the injection library '%s' (canary-gate was built without "
                        "the NVTX headers, or it was moved without it)",
                        ce->inject);
        goto out;
    }
    if ((rc = find_python(ce, cfg->steps_from, self, err)) != 0)
        goto out;
    if (cfg->cmd == NULL || cfg->cmd[0] == NULL)
        rc = builtin_argv(ce, cfg, self, err);
out:
    free(self);
    return rc;
}

void cg_canary_env_release(struct cg_canary_env *ce)
{
    free_argv(ce->builtin);
    ce->builtin = NULL;
}

/* Names, unless *said, the injection library's variables the user's environment holds (the
 * launcher's own are ignored: set or removed for every run; the user's settings reach the
 * canary), and sets *said. */
void cg_canary_env_say_inherited(const struct cg_say *say, bool *said)
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

int cg_canary_env_run(const struct cg_canary_env *ce, const struct cg_collect_cfg *c,
                      const char *shard_dir, const char *fail_path, bool trace,
                      struct cg_canary_run_env *e, struct cg_err *err)
{
    bool optimizer = ce->python[0] != '\0';
    const char *range =
        c->steps_from == CG_STEPS_FROM_OPTIMIZER ? CG_OPTIMIZER_STEP_RANGE : c->step_range;
    memset(e, 0, sizeof(*e));
    if (cg_canary_env_fmt_path(e->cuda, sizeof(e->cuda), err, CG_ENV_CUDA_INJECTION "=%s",
                               ce->inject) != 0 ||
        cg_canary_env_fmt_path(e->nvtx, sizeof(e->nvtx), err, CG_ENV_NVTX_INJECTION "=%s",
                               ce->inject) != 0 ||
        cg_canary_env_fmt_path(e->dir, sizeof(e->dir), err, CG_ENV_SHARD_DIR "=%s", shard_dir) !=
            0 ||
        cg_canary_env_fmt_path(e->fail, sizeof(e->fail), err, CG_ENV_FAIL_FILE "=%s", fail_path) !=
            0 ||
        cg_canary_env_fmt_path(e->range, sizeof(e->range), err, CG_ENV_STEP_RANGE "=%s", range) !=
            0 ||
        cg_canary_env_fmt_path(e->warm, sizeof(e->warm), err, CG_ENV_WARMUP "=%ld", c->warmup) !=
            0 ||
        cg_canary_env_fmt_path(e->steps, sizeof(e->steps), err, CG_ENV_STEPS "=%ld", c->steps) !=
            0 ||
        cg_canary_env_fmt_path(e->trace, sizeof(e->trace), err, CG_ENV_TRACE_STEPS "=%s",
                               c->trace_steps ? c->trace_steps : "0:2") != 0)
        return err->code;
    char *always[] = {e->cuda, e->nvtx, e->dir, e->fail, e->range, e->warm, e->steps};
    for (size_t i = 0; i < sizeof(always) / sizeof(always[0]); i++)
        e->add[e->n_add++] = always[i];
    /* the Slurm step the gate runs in: a canary process of the same step is no task of its own */
    const char *job = getenv("SLURM_JOB_ID"), *step = getenv("SLURM_STEP_ID");
    if (step == NULL || *step == '\0')
        step = getenv("SLURM_STEPID");
    if (job != NULL && *job != '\0' && step != NULL && *step != '\0') {
        if (cg_canary_env_fmt_path(e->slurm, sizeof(e->slurm), err, CG_ENV_SLURM_STEP "=%s.%s", job,
                                   step) != 0)
            return err->code;
        e->add[e->n_add++] = e->slurm;
    } else {
        e->remove[e->n_remove++] = (char *)CG_ENV_SLURM_STEP;
    }
    /* the gate's token, for posting (the Action's step sets it): the canary never needs it, and
     * a script that prints its environment would put it in the log the Action uploads */
    e->remove[e->n_remove++] = (char *)CG_ENV_GATE_TOKEN;
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
    size_t cap = strlen(ce->python) + (user != NULL ? strlen(user) : 0) + 16;
    if ((e->pythonpath = malloc(cap)) == NULL)
        return cg_err_set(err, CG_ENOMEM, "out of memory");
    snprintf(e->pythonpath, cap, "PYTHONPATH=%s%s%s", ce->python,
             user != NULL && *user != '\0' ? ":" : "", user != NULL ? user : "");
    if ((automatic &&
         cg_canary_env_fmt_path(e->fallback, sizeof(e->fallback), err, CG_ENV_STEP_FALLBACK "=%s",
                                CG_OPTIMIZER_STEP_RANGE) != 0) ||
        cg_canary_env_fmt_path(e->from, sizeof(e->from), err, CG_ENV_STEPS_FROM "=%s",
                               automatic ? "auto" : "optimizer") != 0 ||
        cg_canary_env_fmt_path(e->lib, sizeof(e->lib), err, CG_ENV_NVTX_LIB "=%s", ce->nvtx_lib) !=
            0 ||
        cg_canary_env_fmt_path(e->orange, sizeof(e->orange), err, CG_ENV_OPTIMIZER_RANGE "=%s",
                               CG_OPTIMIZER_STEP_RANGE) != 0 ||
        cg_canary_env_fmt_path(e->which, sizeof(e->which), err, CG_ENV_STEP_OPTIMIZER "=%ld",
                               c->step_optimizer > 0 ? c->step_optimizer : 1) != 0)
        return err->code;
    char *python[] = {e->pythonpath, e->from, e->lib, e->orange, e->which};
    for (size_t i = 0; i < sizeof(python) / sizeof(python[0]); i++)
        e->add[e->n_add++] = python[i];
    if (automatic)
        e->add[e->n_add++] = e->fallback;
    return 0;
}
