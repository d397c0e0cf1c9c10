/*
 * bisect: the search of 'canary-gate bisect' (docs/bisect.md), with no I/O: which commit to probe
 * next, what a probe's measurement answers, and the first bad commit of each step the regression
 * came in.
 *
 * Commits are numbered in commit order, 0 the good end and n - 1 the bad end. Every probe is
 * measured against the good end, so a commit's level is its change against good in the worse
 * direction (percent for timing metrics, per step for an exact count) with an interval (both ends
 * equal to the change when the metric is exact). The good end's level is 0 exactly.
 *
 * Steps. The levels at the good end, at the bad end and at every commit answered "between" are
 * anchors; two neighbouring anchors bound a segment, which holds one step of the regression.
 * Within a segment of low level L and high level H (midpoint M), a probe of change d and interval
 * [lo, hi] answers
 *   between     significantly apart from both (d - L and H - d each beyond the root of the sum
 *               of the squares of the half-widths facing each other), and d - L and H - d
 *               both at least min_step_fraction of the whole regression: a level of its own, so
 *               the regression came in steps; taken only at a probe's last look (more runs first)
 *   like bad    d >= M and lo > L: the regression, or most of it, is there
 *   like good   d < M and hi < H (the mirror image)
 *   unresolved  neither: more runs, else a neighbour is probed (as 'git bisect skip' does)
 * and a commit that could not be measured (it does not build, its canary fails) is skipped.
 * Against the good end and the bad end this is the rule: like bad is a significant change
 * of at least half the bad end's.
 *
 * The next probe is, in the first segment that has one, the unprobed commit nearest the middle of
 * the last commit like its low level and the first like its high level (ties: the earlier). A
 * segment's step is found when those two are neighbours; when every commit between them is
 * skipped or unresolved, the step lies among them and the segment is undecided. A probe answered
 * before a later "between" split its segment is placed in its new segment by the midpoint alone.
 *
 * Not thread-safe (a struct cg_bisect belongs to its caller); never prints.
 */
#ifndef CG_BISECT_H
#define CG_BISECT_H

#include "err.h"

#include <stdbool.h>
#include <stddef.h>

/* The smallest part of the whole regression a step must be (default of min_step_fraction). */
#define CG_BISECT_MIN_STEP_FRACTION 0.25
/* Steps at most (segments between anchors). */
#define CG_BISECT_MAX_STEPS 8

enum cg_bisect_answer {
    CG_BISECT_UNPROBED,
    CG_BISECT_LIKE_GOOD, /* like its segment's low level */
    CG_BISECT_LIKE_BAD,  /* like its segment's high level */
    CG_BISECT_BETWEEN,   /* a level of its own between them: an anchor */
    CG_BISECT_UNRESOLVED,
    CG_BISECT_SKIPPED
};

/* A commit's change against the good end, worse positive, with its interval. */
struct cg_bisect_level {
    double change;
    double low, high;
};

struct cg_bisect_commit {
    enum cg_bisect_answer answer;
    bool measured;                /* level holds a measurement (also when unresolved) */
    struct cg_bisect_level level;
    int probe;                    /* 0-based order of its probe; -1: not probed (or an end) */
    size_t seg_low, seg_high;     /* the anchors it was answered against */
};

struct cg_bisect {
    size_t n;                   /* commits, good first, bad last */
    struct cg_bisect_commit *c; /* n entries */
    double min_step_fraction;
    int probes;                 /* probes recorded (the ends not counted) */
};

/* A step of the regression: the segment between two anchors and what the probes found. */
struct cg_bisect_step {
    size_t from, to;   /* its anchors (from: 0 or a "between" commit; to: one, or n - 1) */
    size_t last_low;   /* the last commit like from's level */
    size_t first_high; /* the first commit like to's level */
    bool found;        /* last_low + 1 == first_high: first_high is the step's first bad commit */
    bool open;         /* an unprobed commit lies between them: the search was cut short */
};

/* Sets up n commits (at least 2) with the bad end's level measured against good (the good end's
 * is 0). Owns an array (cg_bisect_release). CG_EINPUT when n < 2, CG_ENOMEM. */
int cg_bisect_init(struct cg_bisect *b, size_t n, const struct cg_bisect_level *bad,
                   struct cg_err *err);

void cg_bisect_release(struct cg_bisect *b);

/* True when the bad end is significantly worse than the good end (its interval above 0): there
 * is something to find. */
bool cg_bisect_ends_differ(const struct cg_bisect_level *bad);

/* The answer of commit i's measurement (not an end) against the segment it lies in. final: no
 * more runs can be added (its last look); before that, what would be "between" is unresolved, so
 * a new anchor is only ever taken on all the runs a probe may have. Never UNPROBED or SKIPPED. */
enum cg_bisect_answer cg_bisect_classify(const struct cg_bisect *b, size_t i,
                                         const struct cg_bisect_level *lv, bool final);

/* Records commit i's probe: answer (SKIPPED: lv may be NULL) and its measurement. */
void cg_bisect_record(struct cg_bisect *b, size_t i, enum cg_bisect_answer answer,
                      const struct cg_bisect_level *lv);

/* The next commit to probe into *i: true, or false when no segment has an unprobed commit left
 * between its last low and first high commit (the search is over). */
bool cg_bisect_next(const struct cg_bisect *b, size_t *i);

/* The steps, in commit order, into steps (room for CG_BISECT_MAX_STEPS); their count. */
size_t cg_bisect_steps(const struct cg_bisect *b, struct cg_bisect_step *steps);

/* The size of step s (found or not): its first high commit's change less its last low
 * commit's, in the changes' units (percent of the good end's level, or per step for a count),
 * with an interval from the two (each end the root of the sum of the squares of the
 * half-widths on that side: the two are measured in runs of their own). A timing step's
 * interval is that of a difference of two changes against good; bench/RESULTS.md gives how
 * often it holds the step's true size. */
void cg_bisect_step_size(const struct cg_bisect *b, const struct cg_bisect_step *s,
                         struct cg_bisect_level *out);

/* "like good", "like bad", "between", "unresolved", "skipped", "not probed". */
const char *cg_bisect_answer_text(enum cg_bisect_answer a);

/* "like_good", "like_bad", "between", "unresolved", "skipped", "not_probed" (JSON). */
const char *cg_bisect_answer_name(enum cg_bisect_answer a);

#endif
