/*
 * launch: running one canary process under the injection library, and the facts about the
 * machine and canary that go into a run artifact's environment.
 *
 * The canary is started with fork + execvp (never a shell) in its own process group, stdin from
 * /dev/null, stdout and stderr appended to a log file, and the environment of the tool plus the
 * variables the caller gives (the injection library's path and its settings). A timeout, or a
 * stop the caller's progress callback asks for (the canary has been measured), sends SIGTERM to
 * the whole group, then SIGKILL after a grace period; an interrupt of the tool (SIGINT/SIGTERM,
 * see cg_launch_catch_interrupts) is forwarded to the group the same way (as SIGINT). Peak
 * RSS comes from wait4: the largest resident set of the canary or any descendant it waited for.
 *
 * Escaped processes: the tool makes itself a child subreaper (prctl PR_SET_CHILD_SUBREAPER), so
 * a descendant that leaves the canary's process group (setsid, a double-forked daemon) is
 * re-parented to the tool rather than to init, and stays findable through /proc as a
 * descendant. Signals that stop the canary reach those too; once the canary's first process has
 * ended, every descendant still running is killed (SIGKILL) and the ones outside the canary's
 * process group are counted (cg_launch_result.escaped).
 *
 * Times are seconds (double) at this interface. Not thread-safe: one launch at a time per process
 * (the interrupt flag is process-wide). Never prints.
 */
#ifndef CG_LAUNCH_H
#define CG_LAUNCH_H

#include "err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Name of the injection library, looked up beside the canary-gate executable (a build tree) or
 * in CG_INSTALLED_COMPANIONS (an installed one). */
#define CG_INJECT_LIBRARY "libcanary-inject.so"
/* Beside it: the tool's NVTX library and the folder of its sitecustomize (steps from the
 * optimizer, collect.h). */
#define CG_NVTX_LIBRARY "libcanary-nvtx-shim.so"
#define CG_PYTHON_DIR "python"
/* Where an installed tree keeps them, relative to the executable's directory (bin/). */
#define CG_INSTALLED_COMPANIONS "../lib/canary-gate"

enum cg_launch_end {
    CG_LAUNCH_EXITED,      /* exit_code is set (0 is success) */
    CG_LAUNCH_SIGNALED,    /* signal is set */
    CG_LAUNCH_TIMEOUT,     /* killed at the timeout */
    CG_LAUNCH_INTERRUPTED, /* the tool was interrupted; the canary was stopped */
    CG_LAUNCH_STOPPED      /* stopped at the progress callback's request (exit_code or signal
                            * is set as the canary ended) */
};

struct cg_launch_opts {
    char *const *argv;        /* the canary command, NULL-terminated; argv[0] searched in PATH */
    char *const *env_add;     /* "NAME=value" entries that replace or extend the environment */
    size_t n_env_add;
    char *const *env_remove;  /* names removed from the environment (after env_add) */
    size_t n_env_remove;
    const char *log_path;     /* stdout and stderr of the canary are appended here */
    double timeout_s;         /* 0: no timeout */
    double kill_grace_s;      /* between SIGTERM and SIGKILL */
    /* Called about every poll_s while the canary runs (may be NULL). Returning true asks for
     * the canary to be stopped (SIGTERM to its group, SIGKILL after kill_grace_s); the run then
     * ends as CG_LAUNCH_STOPPED, and the callback is not called again. */
    bool (*progress)(void *ctx, double elapsed_s);
    void *progress_ctx;
    double poll_s;
    long *pid_out; /* when not NULL, set to the canary's process id once it is started (before
                    * the first progress call) */
    const char *cwd; /* the canary's working directory (argv[0] with a '/' is found from it);
                      * NULL: the tool's */
};

struct cg_launch_result {
    enum cg_launch_end end;
    int exit_code;
    int signal;
    int64_t peak_rss_bytes; /* -1 when unknown */
    double wall_s;
    long escaped; /* processes outside the canary's process group still running when it ended,
                   * killed with it */
    long after_grace; /* after a timeout, an interrupt or a stop: the canary's processes (its
                       * group and descendants) still running when kill_grace_s had passed,
                       * killed then (SIGKILL); 0 when all had ended */
};

/* Installs SIGINT, SIGTERM, SIGHUP, SIGUSR1 and SIGALRM handlers that mark the tool interrupted
 * (see cg_launch_run; the canary gets the default dispositions back). */
void cg_launch_catch_interrupts(void);

/* True once SIGINT or SIGTERM reached the tool after cg_launch_catch_interrupts. */
bool cg_launch_interrupted(void);

/* Runs the canary to its end and fills r. Returns 0 whatever the canary did, or CG_EIO /
 * CG_ECANARY (the log cannot be opened, fork failed, the command cannot be executed). */
int cg_launch_run(const struct cg_launch_opts *o, struct cg_launch_result *r, struct cg_err *err);

/* The CPU model from /proc/cpuinfo ("model name"), malloc'ed; NULL when unknown. */
char *cg_launch_cpu_model(void);

/* The GPU driver version from /proc/driver/nvidia/version, malloc'ed; NULL when unknown. */
char *cg_launch_driver_version(void);

/* The driver version in that file's first line ("... Kernel Module  580.65.06  ...", or the open
 * module's "... Kernel Module for x86_64  580.159.04  ..."), malloc'ed; NULL when it has none. */
char *cg_launch_parse_driver_version(const char *line);

/* A hex hash of the canary's identity: its argv and the given settings text, never the contents
 * of the files argv names (the code under test: an edited training script is the same canary;
 * runinfo.h records the files' hashes for information). Malloc'ed ("fnv1a64:<16 hex digits>");
 * NULL when out of memory. */
char *cg_launch_canary_id(char *const *argv, const char *settings);

#endif
