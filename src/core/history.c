/*
 * history: reading, bounding and writing main's performance history (history.h).
 */
#include "history.h"

#include "fsutil.h"
#include "jsonutil.h"
#include "stats.h"
#include "utf8.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_ID_CHARS CG_HISTORY_MAX_ID_CHARS
#define MAX_TEXT_CHARS CG_HISTORY_MAX_TEXT_CHARS

static const char *const event_names[] = {"environment", "accept", "restart"};
static const char *const type_names[] = {"run", "event", "summary"};

const char *cg_history_event_name(enum cg_history_event ev)
{
    return (unsigned)ev < sizeof(event_names) / sizeof(event_names[0]) ? event_names[ev] : "?";
}

int cg_history_event_parse(const char *s, enum cg_history_event *out)
{
    for (size_t i = 0; i < sizeof(event_names) / sizeof(event_names[0]); i++)
        if (strcmp(s, event_names[i]) == 0) {
            *out = (enum cg_history_event)i;
            return 0;
        }
    return CG_EINPUT;
}

void cg_history_entry_init(struct cg_history_entry *e, enum cg_history_type t)
{
    memset(e, 0, sizeof(*e));
    e->type = t;
    for (int r = 0; r < CG_COUNT_ROWS; r++)
        e->counts[r] = -1;
}

void cg_history_entry_release(struct cg_history_entry *e)
{
    free(e->commit);
    free(e->date);
    free(e->environment);
    free(e->gate_id);
    free(e->reason);
    free(e->who);
    free(e->first_commit);
    free(e->first_date);
    free(e->line);
    cg_history_entry_init(e, e->type);
}

void cg_history_release(struct cg_history *h)
{
    for (size_t i = 0; i < h->n; i++)
        cg_history_entry_release(&h->entries[i]);
    free(h->entries);
    for (size_t i = 0; i < h->n_raw; i++)
        free(h->raw[i].text);
    free(h->raw);
    for (size_t i = 0; i < h->n_warnings; i++)
        free(h->warnings[i]);
    for (size_t i = 0; i < h->n_other_gates; i++)
        free(h->other_gates[i]);
    memset(h, 0, sizeof(*h));
}

const char *cg_history_text_problem(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0)
        return "is empty";
    if (n > max)
        return "is too long";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return "holds a control character (a line break, a tab or an escape)";
    return cg_utf8_valid(s, n) ? NULL : "is not valid UTF-8";
}

/* n digits at s into *v, within [lo, hi]. */
static bool digits(const char *s, int n, int lo, int hi, int *v)
{
    *v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        *v = *v * 10 + (s[i] - '0');
    }
    return *v >= lo && *v <= hi;
}

bool cg_history_date_ok(const char *s)
{
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int y, mo, d, hh, mi, ss;
    if (strlen(s) > MAX_ID_CHARS || !digits(s, 4, 1970, 9999, &y) || s[4] != '-' ||
        !digits(s + 5, 2, 1, 12, &mo) || s[7] != '-' || !digits(s + 8, 2, 1, mdays[mo - 1], &d) ||
        (s[10] != 'T' && s[10] != 't') || !digits(s + 11, 2, 0, 23, &hh) || s[13] != ':' ||
        !digits(s + 14, 2, 0, 59, &mi))
        return false;
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (mo == 2 && d == 29 && !leap)
        return false;
    const char *p = s + 16;
    if (*p == ':') {
        if (!digits(p + 1, 2, 0, 60, &ss))
            return false;
        p += 3;
        if (*p == '.' || *p == ',') {
            const char *f = ++p;
            while (*p >= '0' && *p <= '9')
                p++;
            if (p == f || p - f > 9)
                return false;
        }
    }
    if ((*p == 'Z' || *p == 'z') && p[1] == '\0')
        return true;
    return (*p == '+' || *p == '-') && digits(p + 1, 2, 0, 23, &hh) && p[3] == ':' &&
           digits(p + 4, 2, 0, 59, &mi) && p[6] == '\0';
}

/* --- reading ------------------------------------------------------------------------------ */

/* A string field into *out: absent or null is NULL (a problem when required); else a copy.
 * False, with *why set, on a problem. */
static bool get_text(const cJSON *o, const char *key, bool required, size_t max, char **out,
                     char *why, size_t why_n)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    *out = NULL;
    if (v == NULL || cJSON_IsNull(v)) {
        if (required)
            snprintf(why, why_n, "no \"%s\"", key);
        return !required;
    }
    if (!cJSON_IsString(v) || v->valuestring[0] == '\0' || strlen(v->valuestring) > max) {
        snprintf(why, why_n, "\"%s\" is not a string of 1 to %zu characters", key, max);
        return false;
    }
    for (const unsigned char *p = (const unsigned char *)v->valuestring; *p; p++)
        if (*p < 0x20 || *p == 0x7f) {
            snprintf(why, why_n, "\"%s\" holds a control character", key);
            return false;
        }
    if (!cg_utf8_valid(v->valuestring, strlen(v->valuestring))) {
        snprintf(why, why_n, "\"%s\" is not valid UTF-8", key);
        return false;
    }
    *out = strdup(v->valuestring);
    if (*out == NULL)
        snprintf(why, why_n, "out of memory");
    return *out != NULL;
}

static bool get_counts(const cJSON *o, struct cg_history_entry *e, char *why, size_t why_n);

static bool get_values(const cJSON *o, struct cg_history_entry *e, char *why, size_t why_n)
{
    const cJSON *metrics = cJSON_GetObjectItemCaseSensitive(o, "metrics");
    if (metrics != NULL && !cJSON_IsNull(metrics) && !cJSON_IsObject(metrics)) {
        snprintf(why, why_n, "\"metrics\" is not an object");
        return false;
    }
    for (int m = 0; m < CG_M_COUNT && cJSON_IsObject(metrics); m++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(metrics, cg_metric_name(m));
        if (v == NULL || cJSON_IsNull(v))
            continue;
        const cJSON *med = cJSON_GetObjectItemCaseSensitive(v, "median");
        const cJSON *lo = cJSON_GetObjectItemCaseSensitive(v, "low");
        const cJSON *hi = cJSON_GetObjectItemCaseSensitive(v, "high");
        const cJSON *runs = cJSON_GetObjectItemCaseSensitive(v, "runs");
        struct cg_history_value *x = &e->metric[m];
        if (!cJSON_IsNumber(med) || !cJSON_IsNumber(lo) || !cJSON_IsNumber(hi) ||
            !cJSON_IsNumber(runs)) {
            snprintf(why, why_n, "metrics.%s needs numbers median, low, high and runs",
                     cg_metric_name(m));
            return false;
        }
        x->median = med->valuedouble;
        x->low = lo->valuedouble;
        x->high = hi->valuedouble;
        x->runs = (int64_t)runs->valuedouble;
        if (!isfinite(x->median) || !isfinite(x->low) || !isfinite(x->high) || x->median <= 0 ||
            x->low < 0 || x->low > x->median || x->high < x->median || runs->valuedouble < 1 ||
            runs->valuedouble != floor(runs->valuedouble) || runs->valuedouble > 1e9) {
            snprintf(why, why_n,
                     "metrics.%s: expected 0 < low <= median <= high and a whole number of runs",
                     cg_metric_name(m));
            return false;
        }
        x->present = true;
    }
    return get_counts(o, e, why, why_n);
}

static bool get_counts(const cJSON *o, struct cg_history_entry *e, char *why, size_t why_n)
{
    const cJSON *counts = cJSON_GetObjectItemCaseSensitive(o, "counts");
    if (counts == NULL || cJSON_IsNull(counts))
        return true;
    if (!cJSON_IsObject(counts)) {
        snprintf(why, why_n, "\"counts\" is not an object");
        return false;
    }
    const cJSON *c;
    cJSON_ArrayForEach(c, counts)
    {
        int row;
        if (c->string == NULL || cg_count_parse(c->string, &row) != 0)
            continue; /* a count of a newer version */
        if (!cJSON_IsNumber(c) || c->valuedouble < 0 || c->valuedouble > 9e15 ||
            c->valuedouble != floor(c->valuedouble)) {
            snprintf(why, why_n, "counts.%s is not a whole number >= 0", cg_count_name(row));
            return false;
        }
        e->counts[row] = (int64_t)c->valuedouble;
    }
    return true;
}

/* One line into e; false with *why set when it cannot be read. */
static bool parse_line(const char *line, size_t len, struct cg_history_entry *e, char *why,
                       size_t why_n)
{
    cJSON *o = cg_json_parse_whole(line, len, NULL);
    bool ok = false;
    cg_history_entry_init(e, CG_HIST_RUN);
    if (o == NULL || !cJSON_IsObject(o)) {
        snprintf(why, why_n, "not a JSON object");
        goto done;
    }
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(o, "schema");
    if (!cJSON_IsNumber(schema) || schema->valuedouble != CG_HISTORY_SCHEMA) {
        snprintf(why, why_n, "schema %s (this version reads %d)",
                 cJSON_IsNumber(schema) ? "of another version" : "missing", CG_HISTORY_SCHEMA);
        goto done;
    }
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(o, "type");
    size_t t = 0;
    while (t < 3 && !(cJSON_IsString(type) && strcmp(type->valuestring, type_names[t]) == 0))
        t++;
    if (t == 3) {
        snprintf(why, why_n, "\"type\" is not run, event or summary");
        goto done;
    }
    e->type = (enum cg_history_type)t;
    if (!get_text(o, "commit", true, MAX_ID_CHARS, &e->commit, why, why_n) ||
        !get_text(o, "date", true, MAX_ID_CHARS, &e->date, why, why_n) ||
        !get_text(o, "environment", false, MAX_ID_CHARS, &e->environment, why, why_n) ||
        !get_text(o, "gate_id", false, MAX_ID_CHARS, &e->gate_id, why, why_n))
        goto done;
    if (e->type == CG_HIST_EVENT) {
        const cJSON *ev = cJSON_GetObjectItemCaseSensitive(o, "event");
        if (!cJSON_IsString(ev) || cg_history_event_parse(ev->valuestring, &e->event) != 0) {
            snprintf(why, why_n, "\"event\" is not environment, accept or restart");
            goto done;
        }
        if (!get_text(o, "reason", e->event == CG_HEV_ACCEPT, MAX_TEXT_CHARS, &e->reason, why,
                      why_n) ||
            !get_text(o, "who", false, MAX_TEXT_CHARS, &e->who, why, why_n))
            goto done;
    } else {
        if (!get_values(o, e, why, why_n))
            goto done;
    }
    if (e->type == CG_HIST_SUMMARY) {
        const cJSON *runs = cJSON_GetObjectItemCaseSensitive(o, "runs");
        if (!cJSON_IsNumber(runs) || runs->valuedouble < 1 || runs->valuedouble > 1e12 ||
            runs->valuedouble != floor(runs->valuedouble)) {
            snprintf(why, why_n, "summary \"runs\" is not a whole number >= 1");
            goto done;
        }
        e->summarised = (int64_t)runs->valuedouble;
        if (!get_text(o, "first_commit", true, MAX_ID_CHARS, &e->first_commit, why, why_n) ||
            !get_text(o, "first_date", true, MAX_ID_CHARS, &e->first_date, why, why_n))
            goto done;
    }
    ok = true;
done:
    cJSON_Delete(o);
    if (!ok)
        cg_history_entry_release(e);
    return ok;
}

static void warn_line(struct cg_history *h, const char *name, size_t line, const char *why,
                      const char *fate)
{
    if (h->skipped++ == 0) {
        h->first_unread_line = line;
        snprintf(h->first_unread_why, sizeof(h->first_unread_why), "%s", why);
    }
    if (h->n_warnings == CG_HISTORY_MAX_WARNINGS)
        return;
    char text[CG_ERR_MSG_MAX];
    snprintf(text, sizeof(text), "%s:%zu: %s: %s", name, line, fate, why);
    h->warnings[h->n_warnings] = strdup(text);
    if (h->warnings[h->n_warnings] != NULL)
        h->n_warnings++;
}

static int push(struct cg_history *h, const struct cg_history_entry *e)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        struct cg_history_entry *p = realloc(h->entries, cap * sizeof(*p));
        if (p == NULL)
            return CG_ENOMEM;
        h->entries = p;
        h->cap = cap;
    }
    h->entries[h->n++] = *e;
    return 0;
}

/* Keeps line[0..len) verbatim before the next entry. */
static int push_raw(struct cg_history *h, const char *line, size_t len)
{
    if (h->n_raw == h->cap_raw) {
        size_t cap = h->cap_raw ? h->cap_raw * 2 : 8;
        struct cg_history_raw *p = realloc(h->raw, cap * sizeof(*p));
        if (p == NULL)
            return CG_ENOMEM;
        h->raw = p;
        h->cap_raw = cap;
    }
    struct cg_history_raw *raw = &h->raw[h->n_raw];
    if ((raw->text = malloc(len + 1)) == NULL)
        return CG_ENOMEM;
    memcpy(raw->text, line, len);
    raw->text[len] = '\0';
    raw->before = h->n;
    raw->len = len;
    h->n_raw++;
    return 0;
}

/* Why summary s cannot stand after the entries read into h (NULL: it can): the summaries come
 * first, at most one per gate. */
static const char *summary_problem(const struct cg_history *h, const struct cg_history_entry *s)
{
    for (size_t i = 0; i < h->n; i++) {
        if (h->entries[i].type != CG_HIST_SUMMARY)
            return "a summary after a run or event";
        if (cg_history_of_gate(&h->entries[i], s->gate_id))
            return "a second summary of its gate";
    }
    return NULL;
}

/* One line of the file into h: an entry, or (unreadable) a warning and, with keep, the line
 * itself. Blank lines are nothing. 0 or CG_ENOMEM. */
static int take_line(struct cg_history *h, const char *text, size_t len, size_t line,
                     const char *name, bool keep)
{
    size_t k = 0;
    while (k < len && (text[k] == ' ' || text[k] == '\t' || text[k] == '\r'))
        k++;
    if (k == len)
        return 0;
    struct cg_history_entry e;
    char why[160] = "";
    if (memchr(text, '\0', len) != NULL)
        snprintf(why, sizeof(why), "holds a NUL byte");
    else if (parse_line(text, len, &e, why, sizeof(why))) {
        const char *misplaced = e.type == CG_HIST_SUMMARY ? summary_problem(h, &e) : NULL;
        if (misplaced == NULL) {
            if ((keep && (e.line = strndup(text, len)) == NULL) || push(h, &e) != 0) {
                cg_history_entry_release(&e);
                return CG_ENOMEM;
            }
            h->read++;
            return 0;
        }
        snprintf(why, sizeof(why), "%s", misplaced);
        cg_history_entry_release(&e);
    }
    warn_line(h, name, line, why, keep ? "not read, kept as it is" : "not read");
    return keep ? push_raw(h, text, len) : 0;
}

int cg_history_parse(const char *text, size_t len, const char *name, struct cg_history *h)
{
    size_t line = 0;
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - text) : len;
        if (take_line(h, text + at, end - at, ++line, name, true) != 0)
            return CG_ENOMEM;
        at = end + 1;
    }
    return 0;
}

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
            warn_line(h, path, lineno, "longer than 1 MiB", "not read");
        else if ((rc = take_line(h, line, len, lineno, path, false)) != 0)
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

int cg_history_check_rewrite(const struct cg_history *h, const char *path, struct cg_err *err)
{
    if (h->read > 0 || h->skipped == 0)
        return 0;
    return cg_err_set(err, CG_EINPUT,
                      "'%s' is not a history: none of its %zu lines can be read (line %zu: %s); "
                      "nothing was written",
                      path, h->skipped, h->first_unread_line, h->first_unread_why);
}

int cg_history_lock(const char *path, struct cg_err *err)
{
    char target[PATH_MAX];
    path = cg_file_target(path, target); /* a symlink's target: one lock whichever path */
    size_t n = strlen(path) + sizeof(".lock");
    char *lock = malloc(n);
    if (lock == NULL)
        return cg_err_set(err, CG_ENOMEM, "out of memory");
    snprintf(lock, n, "%s.lock", path);
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK, 0644);
    int rc;
    if (fd < 0)
        rc = cg_err_set(err, CG_EIO, "cannot lock history: cannot open '%s': %s", lock,
                        strerror(errno));
    else {
        while ((rc = flock(fd, LOCK_EX)) != 0 && errno == EINTR)
            ;
        if (rc != 0) {
            rc = cg_err_set(err, CG_EIO, "cannot lock history '%s': %s", lock, strerror(errno));
            close(fd);
        } else {
            rc = fd;
        }
    }
    free(lock);
    return rc;
}

void cg_history_unlock(int fd)
{
    if (fd >= 0)
        close(fd); /* releases the flock */
}

/* --- writing ------------------------------------------------------------------------------ */

static char *dup_or_null(const char *s, bool *failed)
{
    if (s == NULL)
        return NULL;
    char *d = strdup(s);
    *failed |= d == NULL;
    return d;
}

static int copy_entry(struct cg_history_entry *d, const struct cg_history_entry *s)
{
    bool failed = false;
    *d = *s;
    d->commit = dup_or_null(s->commit, &failed);
    d->date = dup_or_null(s->date, &failed);
    d->environment = dup_or_null(s->environment, &failed);
    d->gate_id = dup_or_null(s->gate_id, &failed);
    d->reason = dup_or_null(s->reason, &failed);
    d->who = dup_or_null(s->who, &failed);
    d->first_commit = dup_or_null(s->first_commit, &failed);
    d->first_date = dup_or_null(s->first_date, &failed);
    d->line = dup_or_null(s->line, &failed);
    if (failed) {
        cg_history_entry_release(d);
        return CG_ENOMEM;
    }
    return 0;
}

int cg_history_append(struct cg_history *h, const struct cg_history_entry *e)
{
    if (e->commit == NULL || e->commit[0] == '\0' || e->date == NULL || e->date[0] == '\0')
        return CG_EINPUT;
    struct cg_history_entry d;
    if (copy_entry(&d, e) != 0)
        return CG_ENOMEM;
    if (push(h, &d) != 0) {
        cg_history_entry_release(&d);
        return CG_ENOMEM;
    }
    return 0;
}

/* Folds runs and the old summary among from[0..n) into *s (their values' median; interval: the
 * lowest low and the highest high). */
static int fold(const struct cg_history_entry *from, size_t n, struct cg_history_entry *s)
{
    double *v = malloc((n + 1) * sizeof(*v));
    if (v == NULL)
        return CG_ENOMEM;
    for (int m = 0; m < CG_M_COUNT; m++) {
        size_t k = 0;
        struct cg_history_value out = {false, 0, INFINITY, -INFINITY, 0};
        for (size_t i = 0; i < n; i++) {
            const struct cg_history_value *x = &from[i].metric[m];
            if (from[i].type == CG_HIST_EVENT || !x->present)
                continue;
            v[k++] = x->median;
            out.low = fmin(out.low, x->low);
            out.high = fmax(out.high, x->high);
            out.runs += x->runs;
        }
        if (k > 0) {
            out.present = true;
            out.median = cg_stats_quantile(v, k, 0.5);
            out.low = fmin(out.low, out.median);
            out.high = fmax(out.high, out.median);
        }
        s->metric[m] = out;
    }
    free(v);
    return 0;
}

/* An entry's place in the order by gate (the entries without one first), newest first. */
struct by_gate {
    const char *gate;
    size_t i;
};

static int gate_cmp(const char *a, const char *b)
{
    return a == NULL || b == NULL ? (a != NULL) - (b != NULL) : strcmp(a, b);
}

static int by_gate_cmp(const void *pa, const void *pb)
{
    const struct by_gate *a = pa, *b = pb;
    int c = gate_cmp(a->gate, b->gate);
    return c != 0 ? c : (a->i < b->i) - (a->i > b->i);
}

/* What bounding folds of one gate: its entries before its keep-th newest run, when runs are
 * among them (old[0..n): newest first), and the summary that stands for them. */
struct gate_fold {
    size_t first;                 /* the index of its oldest folded entry: where it stands */
    struct cg_history_entry made; /* the summary (type CG_HIST_SUMMARY) */
};

/* The summary of the folded entries old[0..n) (newest first, at least one run among them). */
static int fold_gate(const struct cg_history *h, const struct by_gate *old, size_t n,
                     struct cg_history_entry *s)
{
    struct cg_history_entry *from = malloc(n * sizeof(*from));
    if (from == NULL)
        return CG_ENOMEM;
    const struct cg_history_entry *newest = NULL, *oldest = NULL;
    int64_t count = 0;
    size_t k = 0;
    for (size_t j = n; j-- > 0;) { /* oldest first */
        const struct cg_history_entry *e = &h->entries[old[j].i];
        if (e->type == CG_HIST_EVENT)
            continue; /* dropped with the runs around it */
        from[k++] = *e;
        count += e->type == CG_HIST_SUMMARY ? e->summarised : 1;
        if (oldest == NULL)
            oldest = e;
        if (e->type == CG_HIST_RUN)
            newest = e;
    }
    cg_history_entry_init(s, CG_HIST_SUMMARY);
    bool failed = newest == NULL;
    if (!failed) {
        s->summarised = count;
        s->commit = dup_or_null(newest->commit, &failed);
        s->date = dup_or_null(newest->date, &failed);
        s->environment = dup_or_null(newest->environment, &failed);
        s->gate_id = dup_or_null(newest->gate_id, &failed);
        bool was_summary = oldest->type == CG_HIST_SUMMARY;
        s->first_commit = dup_or_null(was_summary ? oldest->first_commit : oldest->commit, &failed);
        s->first_date = dup_or_null(was_summary ? oldest->first_date : oldest->date, &failed);
    }
    int rc = failed ? CG_ENOMEM : fold(from, k, s);
    free(from);
    if (rc != 0)
        cg_history_entry_release(s);
    return rc;
}

static int by_first(const void *pa, const void *pb)
{
    const struct gate_fold *a = pa, *b = pb;
    return (a->first > b->first) - (a->first < b->first);
}

int cg_history_bound(struct cg_history *h, size_t keep)
{
    if (keep < 1)
        keep = 1;
    if (h->n == 0)
        return 0;
    struct by_gate *order = malloc(h->n * sizeof(*order));
    struct gate_fold *front = calloc(h->n, sizeof(*front));
    bool *folded = calloc(h->n, sizeof(*folded));
    struct cg_history_entry *kept = malloc(h->n * sizeof(*kept));
    size_t n_front = 0, n_made = 0;
    int rc = order && front && folded && kept ? 0 : CG_ENOMEM;
    for (size_t i = 0; i < h->n && rc == 0; i++)
        order[i] = (struct by_gate){h->entries[i].gate_id, i};
    if (rc == 0)
        qsort(order, h->n, sizeof(*order), by_gate_cmp);
    /* Per gate: its entries before its keep-th newest run, when runs are among them, become
     * its summary. */
    for (size_t a = 0, b; a < h->n && rc == 0; a = b) {
        size_t runs = 0, cut = 0; /* order[cut..b): older than the keep-th newest run */
        for (b = a; b < h->n && gate_cmp(order[b].gate, order[a].gate) == 0; b++)
            if (h->entries[order[b].i].type == CG_HIST_RUN && ++runs == keep)
                cut = b + 1;
        if (runs <= keep)
            continue;
        struct gate_fold *f = &front[n_front];
        if ((rc = fold_gate(h, order + cut, b - cut, &f->made)) != 0)
            break;
        f->first = order[b - 1].i;
        n_front++, n_made++;
        for (size_t j = cut; j < b; j++)
            folded[order[j].i] = true;
    }
    if (rc != 0 || n_made == 0) {
        for (size_t j = 0; j < n_front; j++)
            cg_history_entry_release(&front[j].made);
        goto done;
    }
    /* The summaries first (in the order of the entries they stand for, the old ones kept where
     * their gate folded nothing), then the entries kept, in order. */
    size_t n_kept = 0;
    for (size_t i = 0; i < h->n; i++) {
        if (folded[i])
            cg_history_entry_release(&h->entries[i]);
        else if (h->entries[i].type == CG_HIST_SUMMARY)
            front[n_front++] = (struct gate_fold){i, h->entries[i]};
        else
            kept[n_kept++] = h->entries[i];
    }
    qsort(front, n_front, sizeof(*front), by_first);
    /* Unreadable lines among the folded entries stay, in their order, after the summaries. */
    for (size_t r = 0, i = 0, k = 0; r < h->n_raw; r++) {
        size_t *at = &h->raw[r].before;
        for (; i < *at && i < h->n; i++)
            k += !folded[i] && h->entries[i].type != CG_HIST_SUMMARY;
        *at = *at == 0 ? 0 : n_front + k;
    }
    for (size_t j = 0; j < n_front; j++)
        h->entries[j] = front[j].made;
    memcpy(h->entries + n_front, kept, n_kept * sizeof(*kept));
    h->n = n_front + n_kept;
done:
    free(order);
    free(front);
    free(folded);
    free(kept);
    return rc;
}

static cJSON *entry_json(const struct cg_history_entry *e)
{
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    cJSON_AddNumberToObject(o, "schema", CG_HISTORY_SCHEMA);
    cJSON_AddStringToObject(o, "type", type_names[e->type]);
    if (e->type == CG_HIST_EVENT)
        cJSON_AddStringToObject(o, "event", cg_history_event_name(e->event));
    cJSON_AddStringToObject(o, "commit", e->commit);
    cJSON_AddStringToObject(o, "date", e->date);
    if (e->environment)
        cJSON_AddStringToObject(o, "environment", e->environment);
    if (e->gate_id)
        cJSON_AddStringToObject(o, "gate_id", e->gate_id);
    if (e->type == CG_HIST_EVENT) {
        if (e->reason)
            cJSON_AddStringToObject(o, "reason", e->reason);
        if (e->who)
            cJSON_AddStringToObject(o, "who", e->who);
        return o;
    }
    if (e->type == CG_HIST_SUMMARY) {
        cJSON_AddNumberToObject(o, "runs", (double)e->summarised);
        cJSON_AddStringToObject(o, "first_commit", e->first_commit);
        cJSON_AddStringToObject(o, "first_date", e->first_date);
    }
    cJSON *metrics = cJSON_AddObjectToObject(o, "metrics");
    for (int m = 0; m < CG_M_COUNT && metrics; m++) {
        const struct cg_history_value *x = &e->metric[m];
        if (!x->present)
            continue;
        cJSON *v = cJSON_AddObjectToObject(metrics, cg_metric_name(m));
        if (v == NULL)
            break;
        cJSON_AddNumberToObject(v, "median", x->median);
        cJSON_AddNumberToObject(v, "low", x->low);
        cJSON_AddNumberToObject(v, "high", x->high);
        cJSON_AddNumberToObject(v, "runs", (double)x->runs);
    }
    cJSON *counts = NULL;
    for (int r = 0; r < CG_COUNT_ROWS; r++)
        if (e->counts[r] >= 0 &&
            (counts != NULL || (counts = cJSON_AddObjectToObject(o, "counts")) != NULL))
            cJSON_AddNumberToObject(counts, cg_count_name(r), (double)e->counts[r]);
    return o;
}

int cg_history_render(const struct cg_history *h, struct cg_buf *out)
{
    size_t r = 0;
    for (size_t i = 0; i <= h->n; i++) {
        for (; r < h->n_raw && h->raw[r].before <= i; r++)
            if (cg_buf_add(out, h->raw[r].text, h->raw[r].len) != 0 || cg_buf_adds(out, "\n") != 0)
                return CG_ENOMEM;
        if (i == h->n)
            break;
        if (h->entries[i].line != NULL) {
            if (cg_buf_adds(out, h->entries[i].line) != 0 || cg_buf_adds(out, "\n") != 0)
                return CG_ENOMEM;
            continue;
        }
        cJSON *o = entry_json(&h->entries[i]);
        char *line = o ? cJSON_PrintUnformatted(o) : NULL;
        cJSON_Delete(o);
        int rc = line ? cg_buf_adds(out, line) | cg_buf_adds(out, "\n") : CG_ENOMEM;
        free(line);
        if (rc != 0)
            return CG_ENOMEM;
    }
    return 0;
}

int cg_history_save(const char *path, const struct cg_history *h, struct cg_err *err)
{
    if (h->streamed)
        return cg_err_set(err, CG_EINTERNAL,
                          "cannot write '%s': the history was read in part (a bug)", path);
    struct cg_buf b;
    cg_buf_init(&b, CG_HISTORY_MAX_BYTES);
    int rc = cg_history_render(h, &b);
    if (rc != 0)
        rc = cg_err_set(err, CG_ENOMEM, "cannot write '%s': out of memory", path);
    else
        rc = cg_file_write_atomic(path, b.data ? b.data : "", b.len, err);
    cg_buf_release(&b);
    return rc;
}

bool cg_history_of_gate(const struct cg_history_entry *e, const char *gate_id)
{
    return gate_id == NULL ? e->gate_id == NULL
                           : e->gate_id != NULL && strcmp(e->gate_id, gate_id) == 0;
}

/* The gates named in a message: the first CG_HISTORY_GATES_NAMED, whether there were more, and
 * whether runs without a gate id were among them. */
struct gate_names {
    const char *named[CG_HISTORY_GATES_NAMED];
    size_t n;
    bool more, none;
};

static void name_gate(struct gate_names *g, const char *gate)
{
    if (gate == NULL) {
        g->none = true;
        return;
    }
    for (size_t j = 0; j < g->n; j++)
        if (strcmp(g->named[j], gate) == 0)
            return;
    if (g->n < CG_HISTORY_GATES_NAMED)
        g->named[g->n++] = gate;
    else
        g->more = true;
}

int cg_history_gate_check(const struct cg_history *h, const char *gate_id, const char *path,
                          struct cg_err *err)
{
    struct gate_names g = {.more = h->other_gates_more, .none = h->other_no_gate};
    bool any = g.more || g.none; /* runs at all */
    for (size_t i = 0; i < h->n; i++) {
        const struct cg_history_entry *e = &h->entries[i];
        if (e->type == CG_HIST_EVENT)
            continue;
        if (cg_history_of_gate(e, gate_id))
            return 0;
        any = true;
        name_gate(&g, e->gate_id);
    }
    for (size_t j = 0; j < h->n_other_gates; j++) { /* runs of other gates not read */
        any = true;
        name_gate(&g, h->other_gates[j]);
    }
    if (!any)
        return 0;
    char list[CG_ERR_MSG_MAX / 2] = "";
    size_t at = 0;
    for (size_t j = 0; j < g.n && at < sizeof(list); j++)
        at += (size_t)snprintf(list + at, sizeof(list) - at, "%s%s", j ? ", " : "", g.named[j]);
    if (g.more && at < sizeof(list))
        at += (size_t)snprintf(list + at, sizeof(list) - at, ", ...");
    if (g.none && at < sizeof(list))
        snprintf(list + at, sizeof(list) - at, "%sruns without a gate id", at ? "; " : "");
    if (gate_id == NULL)
        return cg_err_set(err, CG_EINPUT, "no run without a gate id in '%s' (its gates: %s)", path,
                          list);
    return cg_err_set(err, CG_EINPUT, "no run of gate '%s' in '%s' (its gates: %s)", gate_id, path,
                      list);
}

const struct cg_history_entry *cg_history_recent_accept(const struct cg_history *h,
                                                        const char *gate_id, size_t window,
                                                        size_t *runs_since)
{
    for (size_t i = h->n; i-- > 0;) {
        const struct cg_history_entry *e = &h->entries[i];
        if (cg_history_of_gate(e, gate_id) && e->type == CG_HIST_EVENT &&
            e->event == CG_HEV_ACCEPT) {
            size_t other = 0;
            for (size_t j = i + 1; j < h->n; j++) {
                const struct cg_history_entry *r = &h->entries[j];
                other += r->type == CG_HIST_RUN && cg_history_of_gate(r, gate_id) &&
                         strcmp(r->commit, e->commit) != 0;
            }
            if (other >= window)
                return NULL;
            if (runs_since != NULL)
                *runs_since = other;
            return e;
        }
    }
    return NULL;
}
