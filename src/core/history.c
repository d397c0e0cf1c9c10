/*
 * history: a history's entries and their text checks, its lines as JSON (read, skipping and
 * keeping what cannot be read, and written back), a history parsed from text, and the queries
 * by gate (history.h). Pure; reading the file is history_load.c, bounding and writing it
 * history_write.c, and what they share with this file is history_internal.h. Not thread-safe.
 */
#include "history_internal.h"

#include "jsonutil.h"
#include "utf8.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void cg_history_warn_line(struct cg_history *h, const char *name, size_t line, const char *why,
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

int cg_history_push(struct cg_history *h, const struct cg_history_entry *e)
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
int cg_history_take_line(struct cg_history *h, const char *text, size_t len, size_t line,
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
            if ((keep && (e.line = strndup(text, len)) == NULL) || cg_history_push(h, &e) != 0) {
                cg_history_entry_release(&e);
                return CG_ENOMEM;
            }
            h->read++;
            return 0;
        }
        snprintf(why, sizeof(why), "%s", misplaced);
        cg_history_entry_release(&e);
    }
    cg_history_warn_line(h, name, line, why, keep ? "not read, kept as it is" : "not read");
    return keep ? push_raw(h, text, len) : 0;
}

int cg_history_parse(const char *text, size_t len, const char *name, struct cg_history *h)
{
    size_t line = 0;
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - text) : len;
        if (cg_history_take_line(h, text + at, end - at, ++line, name, true) != 0)
            return CG_ENOMEM;
        at = end + 1;
    }
    return 0;
}

/* --- writing the lines -------------------------------------------------------------------- */

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
