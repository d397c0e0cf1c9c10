/*
 * history: main's performance over time, one JSON object per line (docs/history.md).
 *
 * A history is a list of entries in the order they were appended: runs (one published
 * measurement of main: per metric the median over its runs and an interval, and the counts),
 * events (the environment changed, a regression was accepted, the baseline restarted) and at
 * most one summary per gate, the summaries first, each standing for the runs of its gate dropped
 * to keep the file bounded. A line that
 * cannot be read (damaged, or of a newer version) is warned about, naming the file and line, and
 * kept verbatim in its place: writing the history back never drops it. Reading never fails on
 * one line, but a file of which no line can be read is not a history and is never rewritten.
 * Pure but for cg_history_load, cg_history_load_newest, cg_history_load_gate, cg_history_lock
 * and cg_history_save; not thread-safe.
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
#define CG_HISTORY_MAX_WARNINGS 20                  /* warnings kept; the rest are counted */
#define CG_HISTORY_MAX_LINE_BYTES ((size_t)1 << 20) /* a longer line is unreadable when streamed   \
                                                     */
#define CG_HISTORY_MAX_ID_CHARS 200                 /* commit, date, environment, gate id */
#define CG_HISTORY_MAX_TEXT_CHARS 2000              /* reason, who */
#define CG_HISTORY_MAX_GATES 64  /* gates cg_history_load_newest reads of one file */
#define CG_HISTORY_GATES_NAMED 8 /* gates of runs not read that are named */

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
    /* the line it was read from (cg_history_parse, cg_history_load), written back as it was:
     * fields and counts of a newer version are kept; NULL for an entry made here */
    char *line;
};

/* A line that could not be read, kept to be written back as it was. */
struct cg_history_raw {
    size_t before; /* it stands before entries[before] (n: after the last entry) */
    char *text;    /* the line, without its line break (it may hold NUL bytes) */
    size_t len;
};

struct cg_history {
    struct cg_history_entry *entries;
    size_t n, cap;
    struct cg_history_raw *raw; /* unreadable lines, in file order (cg_history_parse, _load) */
    size_t n_raw, cap_raw;
    char *warnings[CG_HISTORY_MAX_WARNINGS]; /* lines not read, "FILE:LINE: why" */
    size_t n_warnings;
    size_t skipped;           /* lines not read in all */
    size_t read;              /* lines read into entries */
    size_t first_unread_line; /* the first line not read (1-based), 0 none */
    char first_unread_why[160];
    size_t left_out; /* runs older than the newest kept (cg_history_load_newest, _load_gate) */
    bool streamed;   /* read by cg_history_load_newest or _load_gate: cg_history_save refuses it */
    /* the gates of the runs not read (cg_history_load_gate: the other gates';
     * cg_history_load_newest: those past CG_HISTORY_MAX_GATES gates), the first named */
    char *other_gates[CG_HISTORY_GATES_NAMED];
    size_t n_other_gates;
    bool other_gates_more; /* more gates than those */
    bool other_no_gate;    /* runs without a gate id were among them */
};

/* Sets e to an empty entry of type t (no value present, every count unknown). */
void cg_history_entry_init(struct cg_history_entry *e, enum cg_history_type t);

/* Frees what e holds. */
void cg_history_entry_release(struct cg_history_entry *e);

/* "environment", "accept", "restart"; parses them (0 or CG_EINPUT). */
const char *cg_history_event_name(enum cg_history_event ev);
int cg_history_event_parse(const char *s, enum cg_history_event *out);

/* Reads the JSON Lines at text (len bytes) into h (empty before), naming the file name in its
 * warnings; blank lines are ignored, unreadable ones kept verbatim (h->raw) with a warning.
 * 0 or CG_ENOMEM. */
int cg_history_parse(const char *text, size_t len, const char *name, struct cg_history *h);

/* Reads path into h, whole: only a file that does not exist is an empty history. 0, or
 * CG_EINPUT naming the path and why (no permission, a directory, a FIFO or other file that is
 * not a regular one: refused at once, never waited on; over CG_HISTORY_MAX_BYTES), CG_EIO (a
 * read failed) or CG_ENOMEM. */
int cg_history_load(const char *path, struct cg_history *h, struct cg_err *err);

/* Reads path as cg_history_load does, a line at a time in bounded memory, keeping of each gate
 * (the entries without a gate id are one) its newest keep runs (>= 1) and its entries from the
 * newest of its runs left out on; a gate's older runs are counted in h->left_out and stand as one
 * summary of the gate (its runs and commits, no values), the summaries first. The first
 * CG_HISTORY_MAX_GATES gates of the file are read; the gates of the runs past them are named in
 * h->other_gates. Unreadable lines are warned about, not kept: h is for reading, never to be
 * saved. Memory: at most CG_HISTORY_MAX_GATES * 2 * (4 * keep + 1024) entries. */
int cg_history_load_newest(const char *path, size_t keep, struct cg_history *h, struct cg_err *err);

/* As cg_history_load_newest, keeping gate_id's entries alone (NULL: those recorded without a
 * gate id), so its newest keep runs are read however many runs other gates recorded since; the
 * gates of the other runs are named in h->other_gates, for cg_history_gate_check. Memory: at
 * most 2 * (4 * keep + 1024) entries. */
int cg_history_load_gate(const char *path, const char *gate_id, size_t keep, struct cg_history *h,
                         struct cg_err *err);

/* 0 when h is a history that may be read and written back over path: CG_EINPUT naming it when
 * it held lines and none of them could be read (not a history: another file named by mistake). */
int cg_history_check_rewrite(const struct cg_history *h, const char *path, struct cg_err *err);

/* Takes an exclusive lock for a read-modify-write of the history at path (flock on PATH.lock
 * beside it, or beside a symlink's target, created when missing and left in place: the history
 * itself is replaced by rename, so it cannot carry the lock), waiting for another holder. Returns
 * the lock's descriptor (cg_history_unlock releases it) or CG_EIO naming the lock file. */
int cg_history_lock(const char *path, struct cg_err *err);
void cg_history_unlock(int fd);

/* NULL when s is one line of 1 to max bytes of valid UTF-8 without control characters, else
 * what is wrong with it (static text). */
const char *cg_history_text_problem(const char *s, size_t max);

/* True when s is a UTC or offset ISO 8601 date and time: YYYY-MM-DDTHH:MM[:SS[.fff]] then Z or
 * +HH:MM / -HH:MM, each field in its range. */
bool cg_history_date_ok(const char *s);

/* Appends a deep copy of e. 0, CG_EINPUT (no commit or date) or CG_ENOMEM. */
int cg_history_append(struct cg_history *h, const struct cg_history_entry *e);

/* Keeps the newest keep runs (>= 1) of each gate and the gate's events from the oldest of them
 * on; the gate's runs before are folded into its summary (the summaries first), with its events
 * among them dropped; another gate's entries are never folded with them. Unreadable lines among
 * the folded entries stay, after the summaries. 0 or CG_ENOMEM (h unchanged). */
int cg_history_bound(struct cg_history *h, size_t keep);

/* One JSON object per line, in order, the unreadable lines kept in their places. 0 or
 * CG_ENOMEM. */
int cg_history_render(const struct cg_history *h, struct cg_buf *out);

/* Renders h and writes it to path atomically. 0, CG_ENOMEM, CG_EIO (named in err) or
 * CG_EINTERNAL (h was read by cg_history_load_newest). */
int cg_history_save(const char *path, const struct cg_history *h, struct cg_err *err);

/* True when e belongs to gate_id's series (NULL: the entries recorded without a gate id). */
bool cg_history_of_gate(const struct cg_history_entry *e, const char *gate_id);

/* 0 when gate_id's series (NULL: the runs recorded without a gate id) has a run or a summary in
 * h, or when h has none of any gate (no history yet) and names none in h->other_gates; else
 * CG_EINPUT naming the gate, path and the gates h has runs of, or names:
 * "no run of gate 'H100' in 'FILE' (its gates: h100)". */
int cg_history_gate_check(const struct cg_history *h, const char *gate_id, const char *path,
                          struct cg_err *err);

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
