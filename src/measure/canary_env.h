/*
 * canary_env: the canary's environment and the tool's companion programs, for the collector
 * (collect.c). The companions live beside the canary-gate executable in a build tree, else in
 * ../lib/canary-gate of an installed one: the injection library, the NVTX library and python/
 * (whose sitecustomize marks a PyTorch canary's optimizer steps), and the built-in canary
 * canary-train. Each run gets the injection library's variables (launch_env.h) set or removed
 * whatever the user's environment holds, the measured window, and, when steps may come from the
 * optimizer, python/ first on PYTHONPATH (the user's after it); the library's variables the
 * user's environment already holds are named once. Nothing here prints (say.h); single-threaded.
 */
#ifndef CG_CANARY_ENV_H
#define CG_CANARY_ENV_H

#include "collect.h"
#include "err.h"
#include "say.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

/* The companions a collector found. */
struct cg_canary_env {
    char inject[PATH_MAX];   /* the injection library (absolute) */
    char python[PATH_MAX];   /* the sitecustomize's folder, "" when steps never come from the
                              * optimizer (nvtx, or auto without the folder and library) */
    char nvtx_lib[PATH_MAX]; /* the NVTX library the sitecustomize marks steps through */
    char **builtin;          /* the built-in canary's argv when no command was given, else NULL */
};

/* The launcher's variables of one run: what it sets (add) and removes. */
struct cg_canary_run_env {
    char cuda[PATH_MAX + 32], nvtx[PATH_MAX + 32], dir[PATH_MAX + 32], fail[PATH_MAX + 32],
        range[320], warm[64], steps[64], trace[96], fallback[320], from[64], lib[PATH_MAX + 32],
        orange[320], which[64], slurm[128];
    char *pythonpath; /* malloc'ed "PYTHONPATH=..." or NULL */
    char *add[16], *remove[8];
    size_t n_add, n_remove;
};

/* snprintf into a path buffer that reports truncation: 0, or CG_EIO naming what did not fit
 * (the collector's paths and the run's variables alike). */
int cg_canary_env_fmt_path(char *buf, size_t cap, struct cg_err *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Finds the companions for cfg into ce (zeroed by the caller): the injection library (CG_EIO
 * when it is not there), python/ and the NVTX library (CG_EIO when --steps-from optimizer needs
 * them and they are not there), and the built-in canary's argv when cfg gives no command
 * (CG_EINPUT when it is not there; CG_ENOMEM). On failure ce may hold what cg_canary_env_release
 * frees. */
int cg_canary_env_find(struct cg_canary_env *ce, const struct cg_collect_cfg *cfg,
                       struct cg_err *err);

/* Frees what cg_canary_env_find allocated (the built-in canary's argv). */
void cg_canary_env_release(struct cg_canary_env *ce);

/* Fills e with the variables of a run of c's canary into shard_dir, with its failure file at
 * fail_path and a trace window when trace (e->pythonpath is the caller's to free, also on
 * failure). 0, CG_EIO (a value too long) or CG_ENOMEM. */
int cg_canary_env_run(const struct cg_canary_env *ce, const struct cg_collect_cfg *c,
                      const char *shard_dir, const char *fail_path, bool trace,
                      struct cg_canary_run_env *e, struct cg_err *err);

/* Names, unless *said, the injection library's variables the user's environment holds (the
 * launcher's own are ignored: set or removed for every run; the user's settings reach the
 * canary), and sets *said. */
void cg_canary_env_say_inherited(const struct cg_say *say, bool *said);

/* When argv runs Python (its program's name begins "python") with an option that keeps Python
 * from loading the sitecustomize on PYTHONPATH (-S: no site module; -E: PYTHON* variables
 * ignored; -I: both), that option ("-S", "-E" or "-I", also inside a cluster such as "-uS") into
 * flag; else "". Options end at the script, "-", "--", -c or -m. */
void cg_canary_env_python_flag(char *const *argv, char flag[4]);

#endif
