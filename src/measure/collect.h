/*
 * collect: running a canary under the injection library, run after run, into a run artifact.
 * Shared by 'canary-gate run', the main gate command and the detection commands.
 *
 * A collector owns what the runs need: the injection library's absolute path (beside the
 * canary-gate executable), the canary's argv (the built-in canary-train beside the tool when no
 * command is given), a private shard directory under $TMPDIR (or under shard_dir, which every
 * node of a multi-node canary sees), and the canary's log file, which it
 * truncates when it opens. Each run is one canary process (launch.c); its processes' shards are
 * merged into one run of the artifact (shard.c). The artifact's header (environment, settings,
 * GPU status) is filled at the first run added to an empty artifact.
 *
 * Steps from the optimizer: unless steps_from is CG_STEPS_FROM_NVTX, a run puts the python/
 * folder beside the tool first on PYTHONPATH (the user's after it) with the variables its
 * sitecustomize reads (launch_env.h), so a PyTorch canary's optimizer steps are marked as
 * CG_OPTIMIZER_STEP_RANGE ranges through the tool's NVTX library (libcanary-nvtx-shim.so);
 * with CG_STEPS_FROM_AUTO the injection library keeps the canary's own step ranges when they
 * come first. The artifact's settings.steps_from says which marked the steps.
 *
 * Stop once measured: the canary learns the measured window from CANARY_GATE_WARMUP and
 * CANARY_GATE_STEPS; once every process that marked steps has written its "done" line, the
 * collector ends the canary's process group (SIGTERM, then SIGKILL after grace_s) and counts the
 * run complete whatever it exits with (the run's stopped_after_steps says so). With let_finish
 * it waits for the canary to exit by itself instead.
 *
 * Progress, per-run lines, warnings and hints go to the configuration's say (say.h); nothing here
 * prints. Why a run failed stays with its collector (cg_collector_failure), for the hint: no
 * state outside the collector but the interrupt flag (launch.h). Interrupts
 * (SIGINT/SIGTERM) are caught once a collector is open; a run in progress is stopped and the
 * collector reports CG_ECANARY with cg_collect_interrupted() true. Single-threaded.
 */
#ifndef CG_COLLECT_H
#define CG_COLLECT_H

#include "artifact.h"
#include "err.h"
#include "say.h"

#include <stdbool.h>

/* Where a canary's steps come from (--steps-from). */
enum cg_steps_from {
    CG_STEPS_FROM_AUTO,     /* its own step ranges when it has them, else its optimizer's steps */
    CG_STEPS_FROM_NVTX,     /* its own step ranges only */
    CG_STEPS_FROM_OPTIMIZER /* its optimizer's steps only (python/canary_gate_steps.py) */
};

struct cg_collect_cfg {
    char *const *cmd;       /* the canary's argv, NULL-terminated; NULL: the built-in canary */
    const char *log;        /* the canary's stdout and stderr (required) */
    const char *step_range; /* NVTX range that marks a step; NULL: "step" */
    long steps;             /* measured steps per run */
    long warmup;            /* steps dropped at the start of a run */
    long timeout_s;         /* per run; SIGTERM to the group, SIGKILL after grace_s */
    long grace_s;
    long tokens_per_step;   /* -1: unknown */
    const char *label;      /* prefix of progress lines ("baseline", "head"), or NULL */
    const char *trace_path; /* write a Chrome trace of the first run here, or NULL */
    const char *trace_steps;/* "A:B": the measured steps the trace covers (NULL: "0:2") */
    bool let_finish;        /* wait for the canary to exit by itself, never stop it once measured */
    enum cg_steps_from steps_from;
    long step_optimizer;    /* with steps from the optimizer: the N-th to step counts (0: 1) */
    /* where each collector makes its fresh shard directory (every node must see it when ranks run
     * on several); NULL: TMPDIR. A command naming a multi-node launcher (multinode.h) needs it. */
    const char *shard_dir;
    const char *cwd;        /* the canary's working directory; NULL: the tool's */
    /* MFU's inputs, recorded in the settings: FLOPs per token (-1: the canary's own
     * CG_NVML_FLOPS_LINE, else unknown), precision (NULL: bf16) and peak per SM clock cycle
     * (NAN or 0: the built-in table) */
    long flops_per_token;
    const char *precision;
    double peak_flop_per_clock;
    struct cg_say say;      /* progress, per-run lines and warnings (nothing said: fn NULL) */
    /* the injection library's variables the user's environment holds are named once, at the
     * first run: of the first collector that sets *env_said when several share it (a command's
     * collectors share one), else of each collector (NULL) */
    bool *env_said;
};

/* Why a collector's last run failed, as far as the hint can mend it (carried as data, never read
 * back from the message). */
enum cg_collect_failed {
    CG_COLLECT_FAILED_OTHER,      /* nothing to mend, or no run failed */
    CG_COLLECT_FAILED_NO_STEP,    /* processes wrote shards, none marked a step */
    CG_COLLECT_FAILED_NOT_LOADED, /* no process wrote a shard: the library was not loaded */
    CG_COLLECT_FAILED_SHARD_WRITE /* the library could not write its shard */
};

/* The diagnosis of a collector's last run: why it failed and how it looked for steps. */
struct cg_collect_failure {
    enum cg_collect_failed reason;
    enum cg_steps_from steps_from;
    const char *shard_dir; /* cfg.shard_dir (the caller's string); NULL: TMPDIR */
    bool steps_python;     /* the sitecustomize was put on PYTHONPATH */
    long step_optimizer;   /* cfg.step_optimizer (0: 1) */
    char python_flag[4];   /* "-S", "-I" or "-E" when the canary is python given one, else "" */
    int shard_errno;       /* CG_COLLECT_FAILED_SHARD_WRITE: the library's errno, else 0 */
};

struct cg_collector;

/* Checks the configuration, finds the injection library and the canary, creates the shard
 * directory and truncates the log. CG_EINPUT (no command and no built-in canary, a bad step
 * range, a shard_dir that is not a directory, a command naming a multi-node launcher without
 * shard_dir), CG_EIO, CG_ENOMEM. */
int cg_collector_new(const struct cg_collect_cfg *cfg, struct cg_collector **out,
                     struct cg_err *err);

/* Runs the canary n more times, appending one run per process to a; total is the number of runs
 * the caller expects in all (for "run i of N"; at least a->n_runs + n). On the first run into an
 * empty artifact the header is filled. a->settings.runs counts the runs in a afterwards. On
 * failure the runs completed so far stay in a and CG_ECANARY (the canary failed, timed out,
 * marked too few steps, or the tool was interrupted), CG_EIO or CG_ENOMEM is returned. */
int cg_collector_run(struct cg_collector *col, struct cg_artifact *a, long n, long total,
                     struct cg_err *err);

/* The canary's argv (the built-in canary's when no command was given). */
char *const *cg_collector_cmd(const struct cg_collector *col);

/* Removes the shard directory and frees the collector (NULL is fine). */
void cg_collector_free(struct cg_collector *col);

/* True once SIGINT or SIGTERM reached the tool while a collector was open. */
bool cg_collect_interrupted(void);

/* The diagnosis of col's last run (reason CG_COLLECT_FAILED_OTHER before any run and after one
 * that measured enough); a copy, which outlives col. */
struct cg_collect_failure cg_collector_failure(const struct cg_collector *col);

/* When err (CG_ECANARY) and f (cg_collector_failure of the collector whose run failed) say the
 * run failed for a reason the user can mend (no step marked, the injection library never loaded,
 * no room for shards), says how, as one CG_SAY_INFO line; step_range NULL: "step". */
void cg_collect_hint(const struct cg_collect_failure *f, const struct cg_err *err,
                     const char *step_range, const struct cg_say *say);

/* True when s is "A:B", whole numbers with A <= B (a --trace-steps value). */
bool cg_collect_trace_steps_valid(const char *s);

/* A file beside an artifact: FILE.json -> FILE<ext> (ext like ".log", ".md"); a path without
 * ".json" gets ext appended. Malloc'ed; NULL when out of memory. */
char *cg_collect_sibling_path(const char *artifact_path, const char *ext);

/* The default log path for an artifact path: cg_collect_sibling_path(path, ".log"); for "-"
 * (standard output), canary-run.log. */
char *cg_collect_log_path(const char *artifact_path);

#endif
