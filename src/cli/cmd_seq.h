/*
 * cmd_seq: sequential looks and FAIL confirmation in the main command (sequential.h holds the
 * The words (run, step, side, look, spending, floor, fast state, confirmation): the glossary
 * atop docs/statistics.md.
 * rule; this is its command-layer side): the measuring callback over the gate's
 * open collector, saving the grown and the confirmation artifacts, and reporting the verdict.
 *
 * Prints progress on stderr and the verdict on stdout like cg_cmd_report_verdict. Single-threaded.
 */
#ifndef CG_CMD_SEQ_H
#define CG_CMD_SEQ_H

#include "artifact.h"
#include "cmd.h"
#include "cmd_options.h"
#include "collect.h"
#include "sequential.h"
#include "thresholds.h"

#include <getopt.h>
#include <stdbool.h>

/* The main command's defaults, in multiples of the thresholds' runs: the most current runs
 * (the first look and one batch of as many more), and the fresh runs that confirm a FAIL.
 * Interference comes in spells that can outlast a look, and a FAIL blocks a merge
 * (docs/detection.md, bench/RESULTS.md). */
#define CG_GATE_MAX_RUNS_FACTOR 2
#define CG_GATE_CONFIRM_FACTOR 2
/* 'canary-gate ab': the most pairs, in multiples of its first look's (the thresholds' runs). */
#define CG_AB_MAX_PAIRS_FACTOR 2

struct cg_cmd_seq_opts {
    long max_runs;   /* -1: CG_GATE_MAX_RUNS_FACTOR x runs */
    double budget_s; /* <= 0: none */
    const char *spending;
    long confirm_runs; /* -1: CG_GATE_CONFIRM_FACTOR x runs */
    bool no_confirm;
};

/* Sets the defaults. */
void cg_cmd_seq_opts_init(struct cg_cmd_seq_opts *o);

/* Refuses a --max-runs below the first look's runs (it was taken without a word): 0, or the
 * usage error's exit code with one line. */
int cg_cmd_seq_check(const char *verb, const struct cg_cmd_seq_opts *so, long runs,
                     bool runs_given);

/* One line on stderr about the looks when runs (or pairs) were added or the budget stopped them. */
void cg_cmd_seq_print_looks(const struct cg_seq_info *i);

/* Seconds on CLOCK_MONOTONIC, for timing the first runs. */
double cg_cmd_seq_now_s(void);

/* Decides cur (runs first runs, measured in first_s seconds, already saved at out) against base:
 * adds runs through col while a metric is inconclusive, confirms a FAIL with fresh runs, saves
 * what was measured (out again when runs were added, the confirmation beside it), prints the
 * table and writes the reports (cg_cmd_report_verdict). Returns the gate's exit code. */
int cg_cmd_seq_decide(const struct cg_artifact *base, struct cg_artifact *cur,
                      const struct cg_thresholds *t, struct cg_collector *col, long runs,
                      double first_s, const char *out, const struct cg_cmd_seq_opts *so,
                      const struct cg_report_opts *ro);

#endif
