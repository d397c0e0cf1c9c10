/*
 * cmd_options: the option families that several commands share, parsed in one place: the
 * measurement options (the main command, 'run', 'aa' and 'ab'), the sequential looks'
 * (the main command and 'ab': cmd_seq.c), the change-point options ('history check' and
 * 'history site'), and --color; and the one table of option codes.
 * Part of the command layer: a bad value is a usage error printed for the command's verb.
 */
#ifndef CG_CMD_OPTIONS_H
#define CG_CMD_OPTIONS_H

#include "changepoint.h"
#include "collect.h"
#include "err.h"
#include "thresholds.h"

#include <getopt.h>
#include <stdbool.h>

/* The option codes (above 255, for getopt_long) of every command, in one table so that none
 * collide: the families shared by several commands first, then each command's own, which start
 * at CG_OPT_COMMAND. */
enum {
    /* what cg_cmd_getopt returns for an option refused (and said): not an option */
    CG_OPT_REFUSED = 255,
    /* the measurement options (CG_MEASURE_OPTIONS, cg_measure_option) */
    CG_MOPT_THRESHOLDS = 256,
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
    CG_MOPT_STEP_OPTIMIZER,
    CG_MOPT_SHARD_DIR,
    CG_MOPT_FLOPS,
    CG_MOPT_PRECISION,
    CG_MOPT_PEAK,
    /* sequential looks and confirmation (CG_GATE_SEQ_OPTIONS, cg_cmd_seq_option) */
    CG_SOPT_MAX_RUNS,
    CG_SOPT_BUDGET,
    CG_SOPT_SPENDING,
    CG_SOPT_CONFIRM_RUNS,
    CG_SOPT_NO_CONFIRM,
    /* the report options (CG_REPORT_OPTIONS, cg_report_option: compare, ab, the main command) */
    CG_ROPT_REPORT,
    CG_ROPT_JSON,
    CG_ROPT_ID,
    CG_ROPT_FOI,
    CG_ROPT_ONLY,
    /* the change-point options (CG_CHANGEPOINT_OPTIONS, cg_cmd_cp_option: history check, site) */
    CG_CPOPT_ALPHA,
    CG_CPOPT_MIN_SEGMENT,
    CG_CPOPT_PERMUTATIONS,
    CG_CPOPT_KEEP,
    /* --color (compare, ab and the main command) */
    CG_OPT_COLOR,
    CG_OPT_COMMAND /* each command's own options start here */
};

/* The options one command line gave so far (cg_cmd_getopt): each option's code and first value.
 * Starts zeroed. */
#define CG_CMD_GIVEN_MAX 64
struct cg_cmd_given {
    size_t n;
    struct {
        int code;
        const char *value;
    } opt[CG_CMD_GIVEN_MAX];
};

/* getopt_long for every command, with the one rule for an option given more than once: an
 * option that takes a value may be given again with the same value (taken once); with another
 * value the command line is refused, naming both ("--id given twice with different values ('a',
 * 'b')", printed for verb), and CG_OPT_REFUSED is returned, which cg_cmd_option_error turns into
 * the exit code without a second message. The options that add up are the exception: --redact
 * (a pattern each) and --only (its groups, cg_report_option). An option without a value (a
 * switch) may be repeated. Options that contradict each other are refused by their family's
 * handler (--confirm-runs with --no-confirm, cg_cmd_seq_option). */
int cg_cmd_getopt(const char *verb, int argc, char *const *argv, const char *shortopts,
                  const struct option *longopts, struct cg_cmd_given *given);

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
        {"shard-dir", required_argument, NULL, CG_MOPT_SHARD_DIR},                                 \
        {"flops-per-token", required_argument, NULL, CG_MOPT_FLOPS},                               \
        {"precision", required_argument, NULL, CG_MOPT_PRECISION},                                 \
        {"peak-flop-per-clock", required_argument, NULL, CG_MOPT_PEAK},                            \
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
    "  --tokens-per-step N    tokens of a step, all ranks', with no payload\n"                     \
    "  --step-range NAME      NVTX range name that marks a step (default "                         \
    "step)\n" CG_MEASURE_LET_FINISH_USAGE

/* The --let-finish and --redact lines of every measuring command's usage. */
#define CG_MEASURE_LET_FINISH_USAGE                                                                \
    "  --let-finish           wait for the canary to exit by itself (default: stop it, SIGTERM\n"  \
    "                         then SIGKILL after --kill-grace, once warm-up + measured steps\n"    \
    "                         are done)\n"                                                         \
    "  --redact PATTERN       hide what matches PATTERN (a POSIX extended regular expression)\n"   \
    "                         wherever the canary's command or names are written; the values of\n" \
    "                         secret-looking variables (*TOKEN*, *SECRET*, *KEY*, *PASSWORD*,\n"   \
    "                         *PASSWD*, *CREDENTIAL*, any case; values of 8 bytes or more) and\n"  \
    "                         URL credentials are always hidden (repeatable, 16 at most)\n"        \
    "  --steps-from WHERE     auto (default): own step ranges if any, else a PyTorch canary's\n"   \
    "                         optimizer.step() calls; nvtx: own ranges only; optimizer: those\n"   \
    "                         calls only (the main command: as the baseline if it was)\n"          \
    "  --step-optimizer N     with steps from the optimizer, the N-th optimizer to step counts\n"  \
    "                         (default 1, the first; the main command: the baseline's)\n"          \
    "  --shard-dir DIR        write the shards into a fresh directory under DIR, removed after\n"  \
    "                         each run: a directory every node sees, for canaries launched on\n"   \
    "                         several nodes (srun, sbatch, mpirun, torchrun --nnodes; default:\n"  \
    "                         a private directory under TMPDIR)\n"                                 \
    "  --flops-per-token N    the model FLOPs of one token, forward and backward, for MFU\n"       \
    "                         (default: the canary's 'canary-gate flops_per_token: N' line;\n"     \
    "                         the built-in canary and examples/pytorch print one)\n"               \
    "  --precision P          the precision MFU's peak is for: fp32, tf32, bf16 (default),\n"      \
    "                         fp16, fp8\n"                                                         \
    "  --peak-flop-per-clock X  the GPU's dense peak FLOPs per SM clock cycle, for a GPU the\n"    \
    "                         built-in table lacks\n"

struct cg_measure_opts {
    const char *thresholds;
    long runs, steps, warmup, tokens_per_step; /* -1: not given */
    long timeout_s, grace_s;
    const char *step_range; /* NULL: not given ("step") */
    bool let_finish;
    enum cg_steps_from steps_from; /* default auto */
    bool steps_from_given;         /* --steps-from was given (auto too) */
    long step_optimizer;           /* -1: not given (1) */
    const char *shard_dir;         /* --shard-dir, NULL: not given */
    long flops_per_token;          /* --flops-per-token, -1: not given */
    const char *precision;         /* --precision, NULL: not given */
    double peak_flop_per_clock;    /* --peak-flop-per-clock, NAN: not given */
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

/* Fills the measurement settings of c (the fields above, MFU's FLOPs per token, precision and
 * peak, and say) and *runs from the options, else from base's settings when base has runs (the
 * main command measures as its baseline was), else from the thresholds. The other fields of c are left as they are. */
void cg_measure_apply(const struct cg_measure_opts *m, const struct cg_thresholds *t,
                      const struct cg_artifact *base, struct cg_collect_cfg *c, long *runs);

#define CG_GATE_SEQ_OPTIONS                                                                        \
    {"max-runs", required_argument, NULL, CG_SOPT_MAX_RUNS},                                       \
        {"budget", required_argument, NULL, CG_SOPT_BUDGET},                                       \
        {"spending", required_argument, NULL, CG_SOPT_SPENDING},                                   \
        {"confirm-runs", required_argument, NULL, CG_SOPT_CONFIRM_RUNS},                           \
    {                                                                                              \
        "no-confirm", no_argument, NULL, CG_SOPT_NO_CONFIRM                                        \
    }

#define CG_GATE_SEQ_USAGE                                                                          \
    "  --max-runs N           while a metric is inconclusive, add --runs more runs at a time\n"    \
    "                         up to N (default 2 x --runs; equal to --runs: never add)\n"          \
    "  --budget SEC           canary time of this side at most (first runs included); a batch\n"   \
    "                         is added only when its estimated time fits\n"                        \
    "  --spending NAME        alpha over the looks: pocock (default), obrien-fleming, "            \
    "bonferroni\n"                                                                                 \
    "  --confirm-runs N       fresh runs that must fail again before a FAIL is reported\n"         \
    "                         (default: 2 x --runs); their artifact goes beside --out "            \
    "(.confirm.json)\n"                                                                            \
    "  --no-confirm           report a FAIL without confirming it\n"

/* Handles one option code of CG_GATE_SEQ_OPTIONS (cmd_seq.h's options): 1 when it is not one of
 * them, 0 when taken, else the usage error's exit code (printed for verb). */
struct cg_cmd_seq_opts;
int cg_cmd_seq_option(const char *verb, int opt, const char *arg, struct cg_cmd_seq_opts *o);

#define CG_REPORT_OPTIONS                                                                          \
    {"report", required_argument, NULL, CG_ROPT_REPORT},                                           \
        {"json", required_argument, NULL, CG_ROPT_JSON},                                           \
        {"id", required_argument, NULL, CG_ROPT_ID},                                               \
        {"only", required_argument, NULL, CG_ROPT_ONLY},                                           \
    {                                                                                              \
        "fail-on-inconclusive", no_argument, NULL, CG_ROPT_FOI                                     \
    }

/* Handles one option code of CG_REPORT_OPTIONS into r (--report, --json, --id,
 * --fail-on-inconclusive, --only; the paths are checked where they are used): 1 when it is not
 * one of them, 0 when taken, else the usage error's exit code (printed for verb). */
struct cg_report_opts;
int cg_report_option(const char *verb, int opt, const char *arg, struct cg_report_opts *r);

/* The usage lines of --only (compare, ab and the main command). */
#define CG_ONLY_USAGE                                                                              \
    "  --only GROUPS          gate these alone: timing, anatomy, counts, memory (comma-\n"         \
    "                         separated, or --only again: the groups add up; e.g.\n"               \
    "                         counts,memory from one or two runs); the rest is shown, not\n"       \
    "                         gated\n"

#define CG_CHANGEPOINT_OPTIONS                                                                     \
    {"alpha", required_argument, NULL, CG_CPOPT_ALPHA},                                            \
        {"min-segment", required_argument, NULL, CG_CPOPT_MIN_SEGMENT},                            \
        {"permutations", required_argument, NULL, CG_CPOPT_PERMUTATIONS},                          \
    {                                                                                              \
        "keep", required_argument, NULL, CG_CPOPT_KEEP                                             \
    }

/* The most runs --keep may name: those 'history check' and 'history site' read, those
 * 'history append' keeps. */
#define CG_CMD_KEEP_MAX 1000000

/* How main's history is searched for change points (--alpha, --min-segment, --permutations)
 * and in how many of its newest runs (--keep). */
struct cg_cmd_cp_opts {
    struct cg_cp_options cp;
    long keep;
};

/* Sets the defaults: cg_cp_defaults, and the newest CG_HISTORY_DEFAULT_KEEP runs. */
void cg_cmd_cp_opts_init(struct cg_cmd_cp_opts *o);

/* Handles one option code of CG_CHANGEPOINT_OPTIONS: 1 when it is not one of them, 0 when taken,
 * else the usage error's exit code (printed for verb). */
int cg_cmd_cp_option(const char *verb, int opt, const char *arg, struct cg_cmd_cp_opts *o);

/* A --color value (auto, always or never) into *color: always, or auto when stdout is a
 * terminal and NO_COLOR is not set. 0, or the usage error's exit code (printed for verb). */
int cg_cmd_color(const char *verb, const char *when, bool *color);

#endif
