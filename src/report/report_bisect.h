/*
 * report_bisect: the documents of 'canary-gate bisect' (docs/bisect.md): the terminal summary,
 * the markdown report (for an issue or a PR comment: the gate's marker and escaping rules, every
 * commit subject and author escaped) and the JSON result. One renderer per document; nothing here
 * measures or decides: the search (bisect.h) and the probes come filled in.
 *
 * Values: a timing metric's in nanoseconds (tokens/sec in tokens per second), a change against
 * good in percent; a count's per step, its change per step. Not thread-safe.
 */
#ifndef CG_REPORT_BISECT_H
#define CG_REPORT_BISECT_H

#include "bisect.h"
#include "buf.h"
#include "metric.h"

#include <stdbool.h>
#include <stddef.h>

struct cg_bisect_commit_info {
    const char *sha; /* 40 hex digits, or 64 in a SHA-256 repository */
    const char *subject, *author, *date;
};

/* One commit measured, in the order measured (the ends first). */
struct cg_bisect_probe {
    size_t index; /* in the range: 0 good ... n - 1 bad */
    size_t runs;  /* the commit's canary runs (each paired with a run of good when timing) */
    double value; /* the commit's value of the metric (median over its runs); NAN: skipped */
    struct cg_bisect_level level; /* against good (the good end: 0) */
    enum cg_bisect_answer answer; /* the ends: LIKE_GOOD and LIKE_BAD */
    char reason[256];             /* why it was skipped, else "" */
};

enum cg_bisect_outcome {
    CG_BISECT_FOUND,     /* every step named */
    CG_BISECT_NOTHING,   /* bad is not significantly worse than good */
    CG_BISECT_UNDECIDED  /* some step not named: skipped or unresolved commits, the budget */
};

/* What ended the bad end's looks before its last: nothing, the budget, or a canary run that
 * failed after a look that already differed (that look is kept). */
enum cg_bisect_cut { CG_BISECT_CUT_NONE, CG_BISECT_CUT_BUDGET, CG_BISECT_CUT_CANARY };

struct cg_bisect_report {
    enum cg_bisect_outcome outcome;
    const char *metric_name; /* "step_time_mean", or a count row's name */
    enum cg_metric metric;   /* a timing metric, when count_row < 0 */
    int count_row;           /* a count's row (count.h), or -1 */
    const struct cg_bisect_commit_info *commits;
    size_t n_commits;
    const struct cg_bisect *search;
    const struct cg_bisect_probe *probes;
    size_t n_probes;
    bool budget_spent; /* the budget ended the search before every step was named */
    enum cg_bisect_cut bad_end_cut; /* what ended the bad end's looks before its last */
    size_t bad_end_pairs[2];        /* then: the pairs it had, and those of its last look */
    double seconds;    /* the bisection's time, builds included */
    const char *id;    /* the report's marker id (NULL: "bisect") */
};

/* The one-line headline ("first bad commit 1a2b3c4d5e6f: ..."): fixed words, a short hash and
 * numbers only. */
void cg_bisect_headline(const struct cg_bisect_report *r, char *dst, size_t n);

/* Appends the terminal summary: headline, each step's commit (subject and author escaped for a
 * terminal), its change, the probes and the chart of the probed commits' values in commit
 * order. 0 or CG_ENOMEM. */
int cg_bisect_terminal(const struct cg_bisect_report *r, bool ascii, struct cg_buf *out);

/* Appends the markdown report. 0 or CG_ENOMEM. */
int cg_bisect_markdown(const struct cg_bisect_report *r, struct cg_buf *out);

/* The JSON result (schema "canary-gate/bisect"), malloc'ed; NULL when out of memory. */
char *cg_bisect_json(const struct cg_bisect_report *r);

#endif
