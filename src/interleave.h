/*
 * interleave: two sides measured turn about on one machine, for 'canary-gate aa' and
 * 'canary-gate ab'; and the measurement options every measuring command shares (the main
 * command, 'run', 'aa' and 'ab' parse them here).
 *
 * Pair k runs side A then side B when k is even and B then A when k is odd (A B B A A B ...), so
 * a drift that is linear over a pair of pairs weighs on both sides alike, and run k of each side
 * forms pair k. Part of the command layer: progress lines come from the collectors (stderr).
 * Single-threaded.
 */
#ifndef CG_INTERLEAVE_H
#define CG_INTERLEAVE_H

#include "artifact.h"
#include "collect.h"
#include "err.h"
#include "thresholds.h"

#include <getopt.h>
#include <stdbool.h>

/* Runs n pairs: collector ca appends to a, cb to b (ca and cb may be the same collector), A first
 * in pairs of even index counting a's runs so far, B first in odd ones (A B B A ...). On failure
 * the runs completed stay in a and b and the collector's error is returned. */
int cg_interleave_run(struct cg_collector *ca, struct cg_artifact *a, struct cg_collector *cb,
                      struct cg_artifact *b, long n, struct cg_err *err);

/* Appends the runs of a and b to pool in the order they were measured (a0 b0 b1 a1 a2 b2 ...),
 * copying a's header when pool is empty. 0 or CG_ENOMEM. */
int cg_interleave_pool(const struct cg_artifact *a, const struct cg_artifact *b,
                       struct cg_artifact *pool);

/* The options of measuring commands, parsed by cg_measure_option. */
enum {
    CG_MOPT_THRESHOLDS = 400,
    CG_MOPT_RUNS,
    CG_MOPT_STEPS,
    CG_MOPT_WARMUP,
    CG_MOPT_TIMEOUT,
    CG_MOPT_GRACE,
    CG_MOPT_TOKENS,
    CG_MOPT_RANGE,
    CG_MOPT_LET_FINISH,
    CG_MOPT_REDACT,
    CG_MOPT_STEPS_FROM,
    CG_MOPT_STEP_OPTIMIZER
};

#define CG_MEASURE_OPTIONS                                                                         \
    {"thresholds", required_argument, NULL, CG_MOPT_THRESHOLDS},                                   \
        {"runs", required_argument, NULL, CG_MOPT_RUNS},                                           \
        {"steps", required_argument, NULL, CG_MOPT_STEPS},                                         \
        {"warmup", required_argument, NULL, CG_MOPT_WARMUP},                                       \
        {"timeout", required_argument, NULL, CG_MOPT_TIMEOUT},                                     \
        {"kill-grace", required_argument, NULL, CG_MOPT_GRACE},                                    \
        {"tokens-per-step", required_argument, NULL, CG_MOPT_TOKENS},                              \
        {"step-range", required_argument, NULL, CG_MOPT_RANGE},                                    \
        {"redact", required_argument, NULL, CG_MOPT_REDACT},                                       \
        {"steps-from", required_argument, NULL, CG_MOPT_STEPS_FROM},                               \
        {"step-optimizer", required_argument, NULL, CG_MOPT_STEP_OPTIMIZER},                       \
    {                                                                                              \
        "let-finish", no_argument, NULL, CG_MOPT_LET_FINISH                                        \
    }

#define CG_MEASURE_USAGE                                                                           \
    "  --thresholds FILE      thresholds file or built-in name (default, strict, smoke)\n"         \
    "  --runs N               runs per side (default: the thresholds' measurement.runs)\n"         \
    "  --steps N              measured steps per run (default: the thresholds')\n"                 \
    "  --warmup N             steps dropped at the start of each run (default: the thresholds')\n" \
    "  --timeout SEC          per run: SIGTERM, then SIGKILL after --kill-grace (default 1800)\n"  \
    "  --kill-grace SEC       seconds between SIGTERM and SIGKILL (default 5)\n"                   \
    "  --tokens-per-step N    tokens of a step whose NVTX range has no payload\n"                  \
    "  --step-range NAME      NVTX range name that marks a step (default step)\n"                 \
    CG_MEASURE_LET_FINISH_USAGE

/* The --let-finish and --redact lines of every measuring command's usage. */
#define CG_MEASURE_LET_FINISH_USAGE                                                                \
    "  --let-finish           wait for the canary to exit by itself (default: stop it, SIGTERM\n"  \
    "                         then SIGKILL after --kill-grace, once warm-up + measured steps\n"    \
    "                         are done)\n"                                                         \
    "  --redact PATTERN       hide what matches PATTERN (a POSIX extended regular expression)\n"   \
    "                         wherever the canary's command is written; the values of secret-\n"   \
    "                         looking variables (*TOKEN*, *SECRET*, *KEY*, *PASSWORD*,\n"          \
    "                         *PASSWD*, *CREDENTIAL*, any case; values of 8 bytes or more) and\n"  \
    "                         URL credentials are always hidden (repeatable, 16 at most)\n"   \
    "  --steps-from WHERE     auto (default): the canary's own step ranges when it has them,\n"   \
    "                         else a PyTorch canary's optimizer.step() calls; nvtx: its own\n"     \
    "                         ranges only; optimizer: optimizer steps only\n"                      \
    "  --step-optimizer N     with steps from the optimizer, the N-th optimizer to step counts\n"  \
    "                         (default 1: with several per step, the first)\n"

struct cg_measure_opts {
    const char *thresholds;
    long runs, steps, warmup, tokens_per_step; /* -1: not given */
    long timeout_s, grace_s;
    const char *step_range;                    /* NULL: not given ("step") */
    bool let_finish;
    enum cg_steps_from steps_from;             /* default auto */
    long step_optimizer;                       /* -1: not given (1) */
};

/* Sets the defaults (nothing given, timeout 1800 s, grace 5 s, range not given). */
void cg_measure_opts_init(struct cg_measure_opts *m);

/* Handles one option code of CG_MEASURE_OPTIONS: 1 when it is not one of them, 0 when taken,
 * else the usage error's exit code (printed for verb). */
int cg_measure_option(const char *verb, int opt, const char *arg, struct cg_measure_opts *m);

/* Loads the thresholds and fills the collector settings (steps, warm-up, range, tokens, timeout,
 * let-finish) and *runs from the options, else from the thresholds. CG_EINPUT on a bad
 * thresholds file. */
int cg_measure_settle(const struct cg_measure_opts *m, struct cg_thresholds *t,
                      struct cg_collect_cfg *c, long *runs, struct cg_err *err);

#endif
