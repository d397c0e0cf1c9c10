/*
 * history_load: reading a history file (history.h): opened without ever waiting, loaded whole,
 * or a line at a time keeping the newest runs of each gate in bounded memory, the runs left out
 * counted in one summary per gate. Its lines are read by history.c (history_internal.h). Not
 * thread-safe.
 */
#include "history_internal.h"

#include "fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Opens the history at path for reading without ever waiting (a FIFO is refused, not opened
 * for a writer). 1 when there is no such file, 0 with *fd and *st, or CG_EINPUT / CG_EIO. */
static int open_history(const char *path, int *fd, struct stat *st, struct cg_err *err)
{
    *fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (*fd < 0 && errno == ENOENT)
        return 1;
    if (*fd < 0)
        return cg_err_set(err, CG_EINPUT, "cannot read history '%s': %s", path, strerror(errno));
    int flags;
    if (fstat(*fd, st) != 0 || (flags = fcntl(*fd, F_GETFL)) < 0 ||
        fcntl(*fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        cg_err_set(err, CG_EIO, "cannot read history '%s': %s", path, strerror(errno));
    } else if (!S_ISREG(st->st_mode)) {
        cg_err_set(err, CG_EINPUT, "cannot read history '%s': %s, not a regular file", path,
                   cg_file_type_name(st->st_mode));
    } else {
        return 0;
    }
    close(*fd);
    *fd = -1;
    return err->code;
}

int cg_history_load(const char *path, struct cg_history *h, struct cg_err *err)
{
    int fd = -1;
    struct stat st;
    memset(&st, 0, sizeof(st));
    int rc = open_history(path, &fd, &st, err);
    if (rc != 0)
        return rc > 0 ? 0 : rc; /* no such file: no history yet */
    char *text = NULL;
    size_t len = 0;
    if ((uint64_t)st.st_size > CG_HISTORY_MAX_BYTES) {
        rc = cg_err_set(err, CG_EINPUT, "cannot read history '%s': larger than %zu bytes", path,
                        CG_HISTORY_MAX_BYTES);
        goto done;
    }
    size_t cap = (size_t)st.st_size + 1; /* one more: a file that grew shows */
    if ((text = malloc(cap + 1)) == NULL) {
        rc = cg_err_set(err, CG_ENOMEM, "cannot read history '%s': out of memory", path);
        goto done;
    }
    for (;;) {
        ssize_t n = read(fd, text + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = cg_err_set(err, CG_EIO, "cannot read history '%s': %s", path, strerror(errno));
            goto done;
        }
        if (n == 0)
            break;
        if ((len += (size_t)n) == cap) {
            rc = cg_err_set(err, CG_EIO, "cannot read history '%s': it grew while read", path);
            goto done;
        }
    }
    if (cg_history_parse(text, len, path, h) != 0)
        rc = cg_err_set(err, CG_ENOMEM, "cannot read history '%s': out of memory", path);
done:
    free(text);
    close(fd);
    return rc;
}

/* --- reading the newest runs in bounded memory --------------------------------------------- */

struct line_reader {
    FILE *f;
    char *buf;
    size_t cap, start, end;
    bool eof;
};

/* The next line, without its line break, in *line and *len; *too_long (no text given) when it
 * is longer than the buffer. 1 a line, 0 the end, -1 a read error. */
static int next_line(struct line_reader *r, const char **line, size_t *len, bool *too_long)
{
    bool skipping = false;
    for (;;) {
        char *nl = memchr(r->buf + r->start, '\n', r->end - r->start);
        if (nl != NULL || (r->eof && (r->end > r->start || skipping))) {
            size_t stop = nl ? (size_t)(nl - r->buf) : r->end;
            *line = r->buf + r->start;
            *len = stop - r->start;
            *too_long = skipping;
            r->start = nl ? stop + 1 : stop;
            return 1;
        }
        if (r->eof)
            return 0;
        if (r->start > 0) {
            memmove(r->buf, r->buf + r->start, r->end - r->start);
            r->end -= r->start;
            r->start = 0;
        }
        if (r->end == r->cap) { /* a line longer than the buffer: drop what came of it */
            skipping = true;
            r->end = 0;
        }
        size_t n = fread(r->buf + r->end, 1, r->cap - r->end, r->f);
        if (n == 0 && ferror(r->f))
            return -1;
        r->eof = n == 0;
        r->end += n;
    }
}

/* One gate's share of a history read a line at a time: its runs in h, and what was left out of
 * it (the runs, the oldest and the newest). */
struct gate_window {
    char *gate;             /* its id; NULL: the entries recorded without one */
    size_t runs;            /* its runs in h */
    size_t kept, kept_runs; /* while trimming: its entries and runs kept so far, newest first */
    bool cut;               /* while trimming: its older entries are left out */
    bool took_newest;       /* while trimming: its newest run left out is taken */
    bool had;               /* while trimming: something of it was left out before */
    int64_t left_runs;
    char *first_commit, *first_date, *commit, *date;
};

/* The gates of a history read a line at a time, and how much of each is kept. */
struct gate_windows {
    struct gate_window w[CG_HISTORY_MAX_GATES];
    size_t n;
    bool one_gate; /* w[0] alone is read */
    size_t keep;   /* the newest runs of each gate */
    size_t max;    /* its entries at most: the runs and the events among them */
};

static int replace(char **dst, const char *src)
{
    char *d = strdup(src);
    if (d == NULL)
        return CG_ENOMEM;
    free(*dst);
    *dst = d;
    return 0;
}

/* The window of e's gate, or NULL (read as cg_history_of_gate reads it). */
static struct gate_window *window_of(struct gate_windows *g, const struct cg_history_entry *e)
{
    for (size_t i = 0; i < g->n; i++)
        if (cg_history_of_gate(e, g->w[i].gate))
            return &g->w[i];
    return NULL;
}

/* A new window for gate (NULL: none), or NULL when there is no room or memory (*rc). */
static struct gate_window *window_add(struct gate_windows *g, const char *gate, int *rc)
{
    if (g->n == CG_HISTORY_MAX_GATES)
        return NULL;
    struct gate_window *w = &g->w[g->n];
    memset(w, 0, sizeof(*w));
    if (gate != NULL && (w->gate = strdup(gate)) == NULL) {
        *rc = CG_ENOMEM;
        return NULL;
    }
    g->n++;
    return w;
}

static void windows_release(struct gate_windows *g)
{
    for (size_t i = 0; i < g->n; i++) {
        struct gate_window *w = &g->w[i];
        free(w->gate);
        free(w->first_commit);
        free(w->first_date);
        free(w->commit);
        free(w->date);
    }
    g->n = 0;
}

/* Names gate (NULL: none) among the gates of the runs h does not hold. 0 or CG_ENOMEM. */
static int note_other_gate(struct cg_history *h, const char *gate)
{
    if (gate == NULL) {
        h->other_no_gate = true;
        return 0;
    }
    for (size_t i = 0; i < h->n_other_gates; i++)
        if (strcmp(h->other_gates[i], gate) == 0)
            return 0;
    if (h->n_other_gates == CG_HISTORY_GATES_NAMED) {
        h->other_gates_more = true;
        return 0;
    }
    if ((h->other_gates[h->n_other_gates] = strdup(gate)) == NULL)
        return CG_ENOMEM;
    h->n_other_gates++;
    return 0;
}

/* Counts e, of w's gate and left out of h, in w: entries are left out newest first within one
 * trim, and each trim leaves out entries newer than the one before. */
static int leave_out(struct gate_window *w, const struct cg_history_entry *e)
{
    int rc = 0;
    if (e->type == CG_HIST_SUMMARY) { /* its gate's oldest entry: the last left out */
        w->left_runs += e->summarised;
        if (!w->had)
            rc |=
                replace(&w->first_commit, e->first_commit) | replace(&w->first_date, e->first_date);
        if (w->commit == NULL)
            rc |= replace(&w->commit, e->commit) | replace(&w->date, e->date);
    } else if (e->type == CG_HIST_RUN) {
        w->left_runs++;
        if (!w->took_newest)
            rc |= replace(&w->commit, e->commit) | replace(&w->date, e->date);
        w->took_newest = true;
        if (!w->had)
            rc |= replace(&w->first_commit, e->commit) | replace(&w->first_date, e->date);
    }
    return rc ? CG_ENOMEM : 0;
}

/* Leaves out of h, per gate, its entries up to its newest run older than its newest keep runs
 * (the events after it stay), and more of its oldest while more than max of its entries are
 * left (a flood of events), counting them in its window. */
static int trim(struct cg_history *h, struct gate_windows *g)
{
    for (size_t j = 0; j < g->n; j++) {
        struct gate_window *w = &g->w[j];
        w->kept = w->kept_runs = 0;
        w->cut = w->took_newest = false;
        w->had = w->left_runs > 0;
    }
    int rc = 0;
    size_t k = h->n; /* the entries kept, h->entries[k..n), in order */
    for (size_t i = h->n; i-- > 0;) {
        struct cg_history_entry *e = &h->entries[i];
        struct gate_window *w = window_of(g, e); /* every entry h holds has one */
        bool run = e->type == CG_HIST_RUN;
        if (!w->cut && ((run && w->kept_runs == g->keep) || w->kept == g->max))
            w->cut = true;
        if (w->cut) {
            rc |= leave_out(w, e);
            cg_history_entry_release(e);
            continue;
        }
        w->kept++;
        w->kept_runs += run;
        h->entries[--k] = *e;
    }
    if (k > 0 && h->n > k) /* (no entries: h->entries may be NULL) */
        memmove(h->entries, h->entries + k, (h->n - k) * sizeof(h->entries[0]));
    h->n -= k;
    for (size_t j = 0; j < g->n; j++)
        g->w[j].runs = g->w[j].kept_runs;
    return rc ? CG_ENOMEM : 0;
}

/* Puts a summary of each gate that had runs left out first in h, in the order of the gates. */
static int put_summaries(struct cg_history *h, struct gate_windows *g)
{
    size_t made = 0;
    for (size_t j = 0; j < g->n; j++)
        made += g->w[j].left_runs > 0;
    if (made == 0)
        return 0;
    struct cg_history_entry *p = realloc(h->entries, (h->n + made) * sizeof(*p));
    if (p == NULL)
        return CG_ENOMEM;
    h->entries = p;
    h->cap = h->n + made;
    memmove(h->entries + made, h->entries, h->n * sizeof(h->entries[0]));
    h->n += made;
    for (size_t j = 0, at = 0; j < g->n; j++) {
        struct gate_window *w = &g->w[j];
        if (w->left_runs == 0)
            continue;
        struct cg_history_entry *s = &h->entries[at++];
        cg_history_entry_init(s, CG_HIST_SUMMARY);
        s->summarised = w->left_runs;
        s->commit = w->commit;
        s->date = w->date;
        s->first_commit = w->first_commit;
        s->first_date = w->first_date;
        s->gate_id = w->gate;
        w->commit = w->date = w->first_commit = w->first_date = w->gate = NULL;
        h->left_out += (size_t)w->left_runs;
    }
    return 0;
}

/* Reads path a line at a time into h: of each gate g holds a window for (with g->one_gate,
 * that one alone; else the first CG_HISTORY_MAX_GATES gates of the file), its newest g->keep
 * runs and the entries after the newest run left out. */
static int load_windows(const char *path, struct gate_windows *g, struct cg_history *h,
                        struct cg_err *err)
{
    int fd = -1;
    struct stat st;
    memset(&st, 0, sizeof(st));
    h->streamed = true;
    int rc = open_history(path, &fd, &st, err);
    if (rc != 0)
        return rc > 0 ? 0 : rc;
    struct line_reader r = {.f = fdopen(fd, "rb"), .cap = CG_HISTORY_MAX_LINE_BYTES};
    if (r.f == NULL || (r.buf = calloc(1, r.cap)) == NULL) {
        rc = cg_err_set(err, CG_ENOMEM, "cannot read history '%s': out of memory", path);
        goto done;
    }
    size_t kept = 0; /* the entries after the last trim: it is done again once they doubled */
    const char *line;
    size_t len, lineno = 0;
    bool too_long;
    int got;
    while ((got = next_line(&r, &line, &len, &too_long)) > 0) {
        size_t before = h->n;
        lineno++;
        if (too_long)
            cg_history_warn_line(h, path, lineno, "longer than 1 MiB", "not read");
        else if ((rc = cg_history_take_line(h, line, len, lineno, path, false)) != 0)
            break;
        if (h->n == before)
            continue;
        struct cg_history_entry *e = &h->entries[h->n - 1];
        struct gate_window *w = window_of(g, e);
        if (w == NULL && !g->one_gate && (w = window_add(g, e->gate_id, &rc)) == NULL && rc != 0)
            break;
        if (w == NULL) { /* another gate's, or one past the gates read */
            rc = e->type == CG_HIST_EVENT ? 0 : note_other_gate(h, e->gate_id);
            cg_history_entry_release(e);
            h->n--;
            if (rc != 0)
                break;
            continue;
        }
        w->runs += e->type == CG_HIST_RUN;
        if ((w->runs >= 2 * g->keep || h->n >= 2 * g->max) && h->n >= 2 * kept) {
            if ((rc = trim(h, g)) != 0)
                break;
            kept = h->n;
        }
    }
    if (rc == 0 && got < 0)
        rc = cg_err_set(err, CG_EIO, "cannot read history '%s': %s", path, strerror(errno));
    if (rc == 0 && (rc = trim(h, g)) == 0)
        rc = put_summaries(h, g);
    if (rc == CG_ENOMEM)
        cg_err_set(err, rc, "cannot read history '%s': out of memory", path);
done:
    free(r.buf);
    if (r.f != NULL)
        fclose(r.f);
    else
        close(fd);
    return rc;
}

/* A window of keep runs of each gate; max: its entries at most (runs and the events among
 * them). */
static void windows_init(struct gate_windows *g, size_t keep)
{
    memset(g, 0, sizeof(*g));
    g->keep = keep < 1 ? 1 : keep;
    g->max = 4 * g->keep + 1024;
}

int cg_history_load_newest(const char *path, size_t keep, struct cg_history *h, struct cg_err *err)
{
    struct gate_windows *g = malloc(sizeof(*g));
    if (g == NULL)
        return cg_err_set(err, CG_ENOMEM, "cannot read history '%s': out of memory", path);
    windows_init(g, keep);
    int rc = load_windows(path, g, h, err);
    windows_release(g);
    free(g);
    return rc;
}

int cg_history_load_gate(const char *path, const char *gate_id, size_t keep, struct cg_history *h,
                         struct cg_err *err)
{
    struct gate_windows *g = malloc(sizeof(*g));
    int rc = 0;
    if (g != NULL) {
        windows_init(g, keep);
        g->one_gate = true;
        if (window_add(g, gate_id, &rc) == NULL)
            rc = CG_ENOMEM;
    }
    if (g == NULL || rc != 0)
        rc = cg_err_set(err, CG_ENOMEM, "cannot read history '%s': out of memory", path);
    else
        rc = load_windows(path, g, h, err);
    if (g != NULL)
        windows_release(g);
    free(g);
    return rc;
}
