/*
 * history: reading, bounding and writing main's performance history (history.h).
 */
#include "history.h"

#include "fsutil.h"
#include "jsonutil.h"
#include "stats.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_ID_CHARS 200    /* commit, date, environment, gate id */
#define MAX_TEXT_CHARS 2000 /* reason, who */

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
    cg_history_entry_init(e, e->type);
}

void cg_history_release(struct cg_history *h)
{
    for (size_t i = 0; i < h->n; i++)
        cg_history_entry_release(&h->entries[i]);
    free(h->entries);
    for (size_t i = 0; i < h->n_warnings; i++)
        free(h->warnings[i]);
    memset(h, 0, sizeof(*h));
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
            x->low > x->median || x->high < x->median || runs->valuedouble < 1 ||
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

static void warn_line(struct cg_history *h, const char *name, size_t line, const char *why)
{
    h->skipped++;
    if (h->n_warnings == CG_HISTORY_MAX_WARNINGS)
        return;
    char text[CG_ERR_MSG_MAX];
    snprintf(text, sizeof(text), "%s:%zu: skipped: %s", name, line, why);
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

int cg_history_parse(const char *text, size_t len, const char *name, struct cg_history *h)
{
    size_t line = 0;
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - text) : len;
        line++;
        size_t k = at;
        while (k < end && (text[k] == ' ' || text[k] == '\t' || text[k] == '\r'))
            k++;
        if (k < end) {
            struct cg_history_entry e;
            char why[160] = "";
            if (memchr(text + at, '\0', end - at) != NULL)
                warn_line(h, name, line, "holds a NUL byte");
            else if (!parse_line(text + at, end - at, &e, why, sizeof(why)))
                warn_line(h, name, line, why);
            else if (e.type == CG_HIST_SUMMARY && h->n > 0) {
                warn_line(h, name, line, "a summary after the first entry");
                cg_history_entry_release(&e);
            } else if (push(h, &e) != 0) {
                cg_history_entry_release(&e);
                return CG_ENOMEM;
            }
        }
        at = end + 1;
    }
    return 0;
}

int cg_history_load(const char *path, struct cg_history *h, struct cg_err *err)
{
    FILE *probe = fopen(path, "rb");
    if (probe == NULL)
        return 0; /* no history yet (other problems show when it is written) */
    struct stat st;
    bool empty = fstat(fileno(probe), &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0;
    fclose(probe);
    if (empty)
        return 0; /* an empty file holds no lines */
    char *text = NULL;
    size_t len = 0;
    int rc = cg_file_read(path, CG_HISTORY_MAX_BYTES, &text, &len, err);
    if (rc == 0 && (rc = cg_history_parse(text, len, path, h)) != 0)
        cg_err_set(err, rc, "cannot read '%s': out of memory", path);
    free(text);
    return rc;
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

int cg_history_bound(struct cg_history *h, size_t keep)
{
    size_t runs = 0, first_kept = h->n;
    if (keep < 1)
        keep = 1;
    for (size_t i = h->n; i-- > 0;)
        if (h->entries[i].type == CG_HIST_RUN && ++runs == keep) {
            first_kept = i;
            break;
        }
    size_t n_old = 0;
    for (size_t i = 0; i < first_kept; i++)
        n_old += h->entries[i].type == CG_HIST_RUN;
    if (runs < keep || n_old == 0)
        return 0;
    struct cg_history_entry s;
    cg_history_entry_init(&s, CG_HIST_SUMMARY);
    const struct cg_history_entry *oldest = &h->entries[0], *newest = NULL;
    int64_t count = 0;
    for (size_t i = 0; i < first_kept; i++) {
        const struct cg_history_entry *e = &h->entries[i];
        if (e->type == CG_HIST_SUMMARY)
            count += e->summarised;
        else if (e->type == CG_HIST_RUN)
            count++, newest = e;
    }
    if (newest == NULL) /* n_old > 0: never */
        return 0;
    bool failed = false;
    s.summarised = count;
    s.commit = dup_or_null(newest->commit, &failed);
    s.date = dup_or_null(newest->date, &failed);
    s.environment = dup_or_null(newest->environment, &failed);
    s.gate_id = dup_or_null(newest->gate_id, &failed);
    s.first_commit = dup_or_null(
        oldest->type == CG_HIST_SUMMARY ? oldest->first_commit : oldest->commit, &failed);
    s.first_date =
        dup_or_null(oldest->type == CG_HIST_SUMMARY ? oldest->first_date : oldest->date, &failed);
    if (failed || fold(h->entries, first_kept, &s) != 0) {
        cg_history_entry_release(&s);
        return CG_ENOMEM;
    }
    for (size_t i = 0; i < first_kept; i++)
        cg_history_entry_release(&h->entries[i]);
    h->entries[0] = s;
    memmove(&h->entries[1], &h->entries[first_kept], (h->n - first_kept) * sizeof(h->entries[0]));
    h->n = h->n - first_kept + 1;
    return 0;
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
    for (size_t i = 0; i < h->n; i++) {
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
