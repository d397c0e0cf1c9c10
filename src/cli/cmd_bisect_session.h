/*
 * cmd_bisect_session (private to `canary-gate bisect`: cmd_bisect.c, cmd_bisect_probe.c): the
 * options and the state of one bisection, and the measuring of its commits. cmd_bisect.c parses
 * the command line, drives the search and reports; cmd_bisect_probe.c builds and measures one
 * commit in its worktree against the good end (paired runs for timing, one run for a count). Part
 * of the command layer: these print progress on stderr.
 */
#ifndef CG_CMD_BISECT_SESSION_H
#define CG_CMD_BISECT_SESSION_H

#include "bisect.h"
#include "cmd_options.h"
#include "cmd_seq.h"
#include "collect.h"
#include "report_bisect.h"
#include "sequential.h"
#include "worktree.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

struct cg_bisect_opts {
    struct cg_measure_opts m;
    struct cg_cmd_seq_opts seq;
    struct cg_report_opts report;
    const char *good, *bad, *build, *metric, *repo;
    char *const *canary;
    enum cg_metric timing; /* when count_row < 0 */
    int count_row;
};

/* Where commit i's collector runs and logs: they must outlive it (it keeps the pointers). */
struct cg_bisect_place {
    char wt[4200], log[4300];
};

/* Everything one bisection holds; released by session_end whatever happened. */
struct cg_bisect_session {
    struct cg_bisect_opts *o;
    struct cg_thresholds t;
    struct cg_collect_cfg c;
    long pairs, max_pairs;
    char *repo;                    /* the repository's top */
    char tmp[4096];                /* the private directory of worktrees and logs, "" if none */
    struct cg_git_commit *commits; /* the range, good first */
    size_t n;
    struct cg_bisect_commit_info *info;
    struct cg_bisect search;
    struct cg_bisect_probe *probes;
    size_t n_probes;
    struct cg_collector *good_col; /* the good end's canary, in its worktree */
    struct cg_bisect_place good_place;
    struct cg_artifact good_count; /* a count: the good end's one run */
    double good_value;
    bool good_exact; /* the count is the same in every step of good's run */
    double t0, budget_s;
    bool budget_spent;
    enum cg_bisect_cut bad_end_cut; /* what ended the bad end's looks before its last */
    size_t bad_end_pairs[2];        /* then: its pairs, and those of its last look */
    bool env_said;  /* the inherited variables were named (by the first collector's first run) */
    bool keep_logs; /* a commit was skipped: its reason may name a log in tmp, which stays */
    char checkout_path[PATH_MAX]; /* the user's checkout's path warned about, "" if none */
};

/* A probe's outcome: what it measured and whether the search may go on. */
struct cg_bisect_measured {
    struct cg_bisect_level level;
    double value, good_value; /* medians of the commit's runs and of good's paired with them */
    size_t runs;
    enum cg_bisect_answer answer;
};

/* True when the metric bisected is a count (one run a commit), false for a timing metric. */
bool cg_cmd_bisect_exact(const struct cg_bisect_session *s);

/* Seconds since the bisection began. */
double cg_cmd_bisect_elapsed(const struct cg_bisect_session *s);

/* The path of commit i's worktree in the session's private directory. */
void cg_cmd_bisect_worktree_path(const struct cg_bisect_session *s, size_t i, char *dst, size_t n);

/* The plan of a commit's looks (--runs pairs a look up to --max-runs). 0, or an error in err. */
int cg_cmd_bisect_make_plan(const struct cg_bisect_session *s, struct cg_seq_plan *plan,
                            struct cg_err *err);

/* Probes commit i (an end or not): builds it, measures it and records its answer in *m (a
 * commit skipped: its reason in reason[rn]). 0, or an error in err that ends the bisection. */
int cg_cmd_bisect_probe(struct cg_bisect_session *s, size_t i, struct cg_bisect_measured *m,
                        char *reason, size_t rn, struct cg_err *err);

/* Records commit i's probe (measured, or skipped for reason) in the session's probes, which
 * have room for every commit, and says a measured one on stderr. Returns 0. */
int cg_cmd_bisect_add_probe(struct cg_bisect_session *s, size_t i,
                            const struct cg_bisect_measured *m, const char *reason);

/* The good end: its worktree and build, which stay for the whole bisection (its canary runs
 * beside every probe's). 0, or an error in err. */
int cg_cmd_bisect_open_good(struct cg_bisect_session *s, struct cg_err *err);

/* The search after the ends: probe by probe until it is over, interrupted or out of budget.
 * 0, or an error in err. */
int cg_cmd_bisect_search(struct cg_bisect_session *s, struct cg_err *err);

#endif
