/*
 * history: main's performance over time, one JSON object per line (docs/history.md).
 *
 * A history is a list of entries in the order they were appended: runs (one published
 * measurement of main: per metric the median over its runs and an interval, and the counts),
 * events (the environment changed, a regression was accepted, the baseline restarted) and at
 * most one summary, first, standing for the runs dropped to keep the file bounded. A line that
 * cannot be read is skipped with a warning naming the file and line; reading never fails on one.
 * Pure but for cg_history_load and cg_history_save; not thread-safe.
 */
#ifndef CG_HISTORY_H
#define CG_HISTORY_H

#include "buf.h"
#include "count.h"
#include "err.h"
#include "metric.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CG_HISTORY_SCHEMA 1
#define CG_HISTORY_DEFAULT_KEEP 1000
#define CG_HISTORY_MAX_BYTES ((size_t)256 * 1024 * 1024)
#define CG_HISTORY_MAX_WARNINGS 20 /* warnings kept; the rest are counted */

enum cg_history_type { CG_HIST_RUN, CG_HIST_EVENT, CG_HIST_SUMMARY };

enum cg_history_event {
    CG_HEV_ENVIRONMENT, /* the machine or software changed: a new segment begins */
    CG_HEV_ACCEPT,      /* a regression was accepted on the record */
    CG_HEV_RESTART      /* the baseline restarted (its runs could not be pooled) */
};

/* A metric's value in one entry: the median over the runs, and its interval. */
struct cg_history_value {
    bool present;
    double median, low, high;
    int64_t runs;
};

struct cg_history_entry {
    enum cg_history_type type;
    char *commit;      /* the commit measured (run), at which it happened (event), the newest
                        * summarised (summary); required */
    char *date;        /* UTC, ISO 8601; required */
    char *environment; /* the environment's id (run, environment event); may be NULL */
    char *gate_id;     /* which gate (several may share a history); may be NULL */
    /* run and summary */
    struct cg_history_value metric[CG_M_COUNT];
    int64_t counts[CG_COUNT_ROWS]; /* per step, median over the runs; -1 unknown */
    /* event */
    enum cg_history_event event;
    char *reason; /* accept: why; restart: why; environment: what changed */
    char *who;    /* accept: who */
    /* summary */
    int64_t summarised; /* runs it stands for */
    char *first_commit; /* the oldest summarised */
    char *first_date;
};

struct cg_history {
    struct cg_history_entry *entries;
    size_t n, cap;
    char *warnings[CG_HISTORY_MAX_WARNINGS]; /* lines skipped when read, "FILE:LINE: why" */
    size_t n_warnings;
    size_t skipped; /* lines skipped in all */
};

/* Sets e to an empty entry of type t (no value present, every count unknown). */
void cg_history_entry_init(struct cg_history_entry *e, enum cg_history_type t);

/* Frees what e holds. */
void cg_history_entry_release(struct cg_history_entry *e);

/* "environment", "accept", "restart"; parses them (0 or CG_EINPUT). */
const char *cg_history_event_name(enum cg_history_event ev);
int cg_history_event_parse(const char *s, enum cg_history_event *out);

/* Reads the JSON Lines at text (len bytes) into h (empty before), naming the file name in its
 * warnings; blank lines are ignored, unreadable ones skipped with a warning. 0 or CG_ENOMEM. */
int cg_history_parse(const char *text, size_t len, const char *name, struct cg_history *h);

/* Reads path into h: a missing file is an empty history. 0, or CG_EINPUT / CG_EIO / CG_ENOMEM
 * (a file that cannot be read at all: a directory, too large, unreadable). */
int cg_history_load(const char *path, struct cg_history *h, struct cg_err *err);

/* Appends a deep copy of e. 0, CG_EINPUT (no commit or date) or CG_ENOMEM. */
int cg_history_append(struct cg_history *h, const struct cg_history_entry *e);

/* Keeps the newest keep runs (>= 1) and the events from the oldest of them on; the runs before
 * are folded into the summary (first), with the events among them dropped. 0 or CG_ENOMEM. */
int cg_history_bound(struct cg_history *h, size_t keep);

/* One JSON object per line, in order. 0 or CG_ENOMEM. */
int cg_history_render(const struct cg_history *h, struct cg_buf *out);

/* Renders h and writes it to path atomically. 0, CG_ENOMEM or CG_EIO (named in err). */
int cg_history_save(const char *path, const struct cg_history *h, struct cg_err *err);

/* True when e belongs to gate_id's series (NULL: the entries recorded without a gate id). */
bool cg_history_of_gate(const struct cg_history_entry *e, const char *gate_id);

/* Runs of other commits after an accept during which a pull request's report mentions it. */
#define CG_HISTORY_ACCEPT_NOTE_RUNS 10

/* The gate's newest accept event in h while fewer than window runs of the gate, of commits
 * other than the accepted one, were recorded after it (then *runs_since is how many were), or
 * NULL. */
const struct cg_history_entry *cg_history_recent_accept(const struct cg_history *h,
                                                        const char *gate_id, size_t window,
                                                        size_t *runs_since);

void cg_history_release(struct cg_history *h);

#endif
