/*
 * gate_seq: sequential looks and FAIL confirmation in the main command (sequential.h holds the
 * rule; this is its command-layer side): the options, the measuring callback over the gate's
 * open collector, saving the grown and the confirmation artifacts, and reporting the verdict.
 *
 * Prints progress on stderr and the verdict on stdout like cg_cmd_report_verdict. Single-threaded.
 */
#ifndef CG_GATE_SEQ_H
#define CG_GATE_SEQ_H

#include "artifact.h"
#include "cmd.h"
#include "collect.h"
#include "sequential.h"
#include "thresholds.h"

#include <getopt.h>
#include <stdbool.h>

enum {
    CG_SOPT_MAX_RUNS = 450,
    CG_SOPT_BUDGET,
    CG_SOPT_SPENDING,
    CG_SOPT_CONFIRM_RUNS,
    CG_SOPT_NO_CONFIRM
};

#define CG_GATE_SEQ_OPTIONS                                                                        \
    {"max-runs", required_argument, NULL, CG_SOPT_MAX_RUNS},                                       \
        {"budget", required_argument, NULL, CG_SOPT_BUDGET},                                       \
        {"spending", required_argument, NULL, CG_SOPT_SPENDING},                                   \
        {"confirm-runs", required_argument, NULL, CG_SOPT_CONFIRM_RUNS},                           \
    {                                                                                              \
        "no-confirm", no_argument, NULL, CG_SOPT_NO_CONFIRM                                        \
    }

/* The main command's defaults, in multiples of the thresholds' runs: the most current runs
 * (the first look and one batch of as many more), and the fresh runs that confirm a FAIL.
 * Interference comes in spells that can outlast a look, and a FAIL blocks a merge
 * (docs/detection.md, bench/RESULTS.md). */
#define CG_GATE_MAX_RUNS_FACTOR 2
#define CG_GATE_CONFIRM_FACTOR 2
/* 'canary-gate ab': the most pairs, in multiples of its first look's (the thresholds' runs). */
#define CG_AB_MAX_PAIRS_FACTOR 2

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

struct cg_gate_seq_opts {
    long max_runs;   /* -1: CG_GATE_MAX_RUNS_FACTOR x runs */
    double budget_s; /* <= 0: none */
    const char *spending;
    long confirm_runs; /* -1: CG_GATE_CONFIRM_FACTOR x runs */
    bool no_confirm;
};

/* Sets the defaults. */
void cg_gate_seq_opts_init(struct cg_gate_seq_opts *o);

/* Handles one option code of CG_GATE_SEQ_OPTIONS: 1 when it is not one of them, 0 when taken,
 * else the usage error's exit code (printed for verb). */
int cg_gate_seq_option(const char *verb, int opt, const char *arg, struct cg_gate_seq_opts *o);

/* One line on stderr about the looks when runs (or pairs) were added or the budget stopped them. */
void cg_gate_seq_print_looks(const struct cg_seq_info *i);

/* Seconds on CLOCK_MONOTONIC, for timing the first runs. */
double cg_gate_seq_now_s(void);

/* Decides cur (runs first runs, measured in first_s seconds, already saved at out) against base:
 * adds runs through col while a metric is inconclusive, confirms a FAIL with fresh runs, saves
 * what was measured (out again when runs were added, the confirmation beside it), prints the
 * table and writes the reports (cg_cmd_report_verdict). Returns the gate's exit code. */
int cg_gate_seq_decide(const struct cg_artifact *base, struct cg_artifact *cur,
                       const struct cg_thresholds *t, struct cg_collector *col, long runs,
                       double first_s, const char *out, const struct cg_gate_seq_opts *so,
                       const struct cg_report_opts *ro);

#endif
