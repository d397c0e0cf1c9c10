/*
 * shard_parse: reading one shard's records (see shard.h for the format; the files and their
 * lifecycle are shard.c, merging them into a run shard_merge.c).
 *
 * The parser takes bytes and returns a struct; it never reads files, so it can be fuzzed. Every
 * number is read with strtoll and an end check, every array is capped. Not thread-safe.
 */
#include "shard.h"

#include "opname.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEVICES 4096
#define MAX_TRACE_EVENTS 50000000
#define MAX_TRACE_DOMAINS 100000
/* Durations, counts and sizes a run artifact holds exactly (its JSON numbers are doubles): larger
 * values are malformed, and sums stop there rather than overflow. */
#define MAX_VALUE ((int64_t)1 << 53)
/* How far a step index may run ahead of the lines read so far: steps end in order, give or take
 * the steps open at once, so a far index is malformed (and would cost memory, not bytes). */
#define MAX_STEP_AHEAD 4096

int64_t cg_shard_add_capped(int64_t a, int64_t b)
{
    return a > MAX_VALUE - b ? MAX_VALUE : a + b;
}

/* --- line scanning ------------------------------------------------------------------------ */

struct line {
    const char *p;   /* cursor */
    const char *end; /* one past the last byte (the newline excluded) */
};

static bool next_field(struct line *l, const char **f, size_t *n)
{
    if (l->p >= l->end)
        return false;
    const char *q = memchr(l->p, ' ', (size_t)(l->end - l->p));
    *f = l->p;
    *n = (size_t)((q ? q : l->end) - l->p);
    l->p = q ? q + 1 : l->end;
    return true;
}

static bool field_is(const char *f, size_t n, const char *word)
{
    return strlen(word) == n && memcmp(f, word, n) == 0;
}

/* The next field as a NUL-terminated string in buf; false when missing, empty or too long. */
static bool next_text(struct line *l, char *buf, size_t cap)
{
    const char *f;
    size_t n;
    if (!next_field(l, &f, &n) || n == 0 || n >= cap)
        return false;
    memcpy(buf, f, n);
    buf[n] = '\0';
    return true;
}

static bool next_int(struct line *l, int64_t min, int64_t max, int64_t *out)
{
    char buf[32];
    if (!next_text(l, buf, sizeof(buf)))
        return false;
    char *e = NULL;
    errno = 0;
    long long v = strtoll(buf, &e, 10);
    if (errno != 0 || *e != '\0' || v < min || v > max)
        return false;
    *out = v;
    return true;
}

/* A number as the library prints it: %.9g in the C locale, or nan, inf, -inf. */
static bool next_real(struct line *l, double *out)
{
    char buf[48];
    if (!next_text(l, buf, sizeof(buf)))
        return false;
    if (strcmp(buf, CG_SHARD_NAN) == 0 || strcmp(buf, "-" CG_SHARD_NAN) == 0) {
        *out = NAN;
        return true;
    }
    char *e = NULL;
    double v = strtod(buf, &e); /* out of range: +-HUGE_VAL or a denormal, both fine here */
    if (e == buf || *e != '\0')
        return false;
    *out = v;
    return true;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The rest of the line, unescaped, as a malloc'ed string; NULL when out of memory or bad. */
static char *rest_name(struct line *l, bool *bad)
{
    size_t n = (size_t)(l->end - l->p);
    char *out = malloc(n + 1);
    size_t k = 0;
    *bad = false;
    if (out == NULL)
        return NULL;
    for (const char *p = l->p; p < l->end; p++) {
        if (*p != CG_SHARD_ESC) {
            out[k++] = *p;
            continue;
        }
        if (p + 1 < l->end && p[1] == CG_SHARD_ESC) {
            out[k++] = CG_SHARD_ESC;
            p++;
        } else if (p + 3 < l->end && p[1] == CG_SHARD_ESC_HEX && hexval(p[2]) >= 0 &&
                   hexval(p[3]) >= 0) {
            int v = hexval(p[2]) * 16 + hexval(p[3]);
            out[k++] = v == 0 ? '?' : (char)v;
            p += 3;
        } else {
            *bad = true;
            free(out);
            return NULL;
        }
    }
    out[k] = '\0';
    l->p = l->end;
    return out;
}

static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void *p = realloc(*arr, c * elem);
    if (p == NULL)
        return CG_ENOMEM;
    *arr = p;
    *cap = c;
    return 0;
}

struct parse_state {
    struct cg_shard *s;
    size_t steps_cap, ops_cap, mem_cap, uuids_cap, places_cap;
    size_t lines; /* lines read so far */
    size_t ranges_cap, gpu_cap, mem_events_cap, domains_cap;
};

/* Makes step idx exist. Returns 0, CG_ENOMEM, or 1 when idx is far beyond the lines read. */
static int ensure_step(struct parse_state *ps, int64_t idx)
{
    struct cg_shard *s = ps->s;
    size_t need = (size_t)idx + 1;
    if (need <= s->n_steps)
        return 0;
    if (need > ps->lines + MAX_STEP_AHEAD)
        return 1;
    if (grow((void **)&s->steps, &ps->steps_cap, need, sizeof(*s->steps)) != 0)
        return CG_ENOMEM;
    for (size_t i = s->n_steps; i < need; i++) {
        s->steps[i].seen = false;
        s->steps[i].wall_ns = s->steps[i].end_ns = 0;
        s->steps[i].tokens = s->steps[i].gpu_busy_ns = -1;
        s->steps[i].loss = NAN;
        s->steps[i].n_loss = 0;
        memset(s->steps[i].counts, 0, sizeof(s->steps[i].counts));
        s->steps[i].sync_ns = s->steps[i].compute_ns = s->steps[i].copy_ns = 0;
        s->steps[i].copy_hidden_ns = 0;
    }
    s->n_steps = need;
    return 0;
}

static int set_str(char **dst, char *src)
{
    if (src == NULL)
        return CG_ENOMEM;
    if (*dst != NULL) {
        free(src);
        return 0;
    }
    *dst = src;
    return 0;
}

/* Appends one element of elem bytes to *arr (n elements, capacity *cap) from src; at most
 * MAX_TRACE_EVENTS. Returns 0, CG_ENOMEM, or 1 when full. */
static int push_event(void **arr, size_t *n, size_t *cap, const void *src, size_t elem)
{
    if (*n >= MAX_TRACE_EVENTS)
        return 1;
    if (grow(arr, cap, *n + 1, elem) != 0)
        return CG_ENOMEM;
    memcpy((char *)*arr + *n * elem, src, elem);
    (*n)++;
    return 0;
}

/* Appends w (taken over) to the shard's warnings unless it is already there or the list is full
 * (then w is freed). 0. */
static int add_warning(struct cg_shard *s, char *w)
{
    for (size_t i = 0; i < s->n_warnings; i++)
        if (strcmp(s->warnings[i], w) == 0) {
            free(w);
            return 0;
        }
    if (s->n_warnings == CG_SHARD_MAX_WARNINGS) {
        free(w);
        return 0;
    }
    s->warnings[s->n_warnings++] = w;
    return 0;
}

/* The next field as an op kind ("o" and "tg" lines); false when missing or not a kind. */
static bool next_kind(struct line *l, enum cg_op_kind *kind)
{
    const char *kf;
    size_t kfn;
    char kind_name[16];
    if (!next_field(l, &kf, &kfn) || kfn == 0 || kfn >= sizeof(kind_name))
        return false;
    memcpy(kind_name, kf, kfn);
    kind_name[kfn] = '\0';
    return cg_op_kind_parse(kind_name, kind) == 0;
}

/* The rest of the line, unescaped, into *dst unless it is already set. 0, CG_ENOMEM, or 1 when
 * malformed. */
static int rest_str(struct line *l, char **dst)
{
    bool bad = false;
    char *r = rest_name(l, &bad);
    if (r == NULL)
        return bad ? 1 : CG_ENOMEM;
    return set_str(dst, r);
}

/* --- records -------------------------------------------------------------------------------- */

/* Each record's parser reads the fields after its key (see shard.h) and returns 0, CG_ENOMEM,
 * 1 for a malformed line, 2 for a step of zero or negative duration, or 3 past CG_SHARD_MAX_OPS
 * op lines. */

static int parse_step(struct parse_state *ps, struct line *l)
{
    struct cg_shard *s = ps->s;
    int64_t idx, a, b, tokens;
    int rc;
    if (!next_int(l, 0, CG_SHARD_MAX_STEPS - 1, &idx) || !next_int(l, 0, INT64_MAX, &a) ||
        !next_int(l, 0, INT64_MAX, &b) || !next_int(l, -1, INT64_MAX, &tokens))
        return 1;
    if (tokens > MAX_VALUE) /* the canary's own payload, any int64 */
        tokens = MAX_VALUE;
    if (b <= a)
        return 2; /* zero or negative: the clock stepped, or is too coarse to time a step */
    if (b - a > MAX_VALUE)
        return 1;
    if ((rc = ensure_step(ps, idx)) != 0)
        return rc;
    struct cg_shard_step *st = &s->steps[idx];
    st->seen = true;
    st->wall_ns = b - a;
    st->end_ns = b;
    st->tokens = tokens;
    return 0;
}

static int parse_busy(struct parse_state *ps, struct line *l)
{
    int64_t a, b;
    int rc;
    if (!next_int(l, 0, CG_SHARD_MAX_STEPS - 1, &a) || !next_int(l, 0, MAX_VALUE, &b))
        return 1;
    if ((rc = ensure_step(ps, a)) != 0)
        return rc;
    int64_t *busy = &ps->s->steps[a].gpu_busy_ns;
    *busy = cg_shard_add_capped(*busy < 0 ? 0 : *busy, b);
    return 0;
}

static int parse_loss(struct parse_state *ps, struct line *l)
{
    struct cg_shard *s = ps->s;
    int64_t a;
    double v;
    int rc;
    if (!next_int(l, 0, CG_SHARD_MAX_STEPS - 1, &a) || !next_real(l, &v) || l->p < l->end)
        return 1;
    if ((rc = ensure_step(ps, a)) != 0)
        return rc;
    struct cg_shard_step *st = &s->steps[a];
    st->n_loss++;
    st->loss = st->n_loss == 1 ? v : st->loss + (v - st->loss) / (double)st->n_loss;
    if (!isfinite(v) && (s->nonfinite_loss_step < 0 || a < s->nonfinite_loss_step)) {
        s->nonfinite_loss_step = a;
        s->nonfinite_loss = v;
    }
    return 0;
}

static int parse_op(struct parse_state *ps, struct line *l)
{
    struct cg_shard *s = ps->s;
    enum cg_op_kind kind;
    int64_t a, b;
    bool bad = false;
    if (!next_kind(l, &kind) || !next_int(l, 0, MAX_VALUE, &a) || !next_int(l, 0, MAX_VALUE, &b))
        return 1;
    if (s->n_ops >= CG_SHARD_MAX_OPS)
        return 3;
    char *name = rest_name(l, &bad);
    if (name == NULL)
        return bad ? 1 : CG_ENOMEM;
    if (grow((void **)&s->ops, &ps->ops_cap, s->n_ops + 1, sizeof(*s->ops)) != 0) {
        free(name);
        return CG_ENOMEM;
    }
    s->ops[s->n_ops++] = (struct cg_shard_op){name, kind, a, b};
    return 0;
}

static int parse_mem(struct parse_state *ps, struct line *l)
{
    struct cg_shard *s = ps->s;
    int64_t a, b;
    if (!next_int(l, 0, MAX_DEVICES - 1, &a) || !next_int(l, 0, MAX_VALUE, &b))
        return 1;
    size_t i = 0;
    while (i < s->n_mem && s->mem[i].device != a)
        i++;
    if (i == s->n_mem) {
        if (grow((void **)&s->mem, &ps->mem_cap, s->n_mem + 1, sizeof(*s->mem)) != 0)
            return CG_ENOMEM;
        s->mem[s->n_mem++] = (struct cg_shard_mem){a, 0};
    }
    if (b > s->mem[i].peak_bytes)
        s->mem[i].peak_bytes = b;
    return 0;
}

static int parse_counters(struct parse_state *ps, struct line *l)
{
    struct cg_shard *s = ps->s;
    int64_t a, b, c;
    int64_t more[4] = {-1, -1, -1, -1};
    if (!next_int(l, 0, MAX_VALUE, &a) || !next_int(l, 0, MAX_VALUE, &b) ||
        !next_int(l, 0, MAX_VALUE, &c))
        return 1;
    if (l->p < l->end) /* the 7-field form (fields after it are skipped, as new keys are) */
        for (size_t i = 0; i < 4; i++)
            if (!next_int(l, 0, MAX_VALUE, &more[i]))
                return 1;
    s->records = a;
    s->dropped = b;
    s->zero_ts = c;
    s->outside_steps = more[0];
    s->inside_steps = more[1];
    s->late_memory = more[2];
    s->overhead_ns = more[3];
    return 0;
}

/* The count of a shard count word: its index in enum cg_count, a CG_SHARD_T_* for a step time,
 * -1 for a word this reader does not know. */
static int count_of(const char *f, size_t n)
{
    static const struct {
        const char *word;
        enum cg_count count;
    } words[] = {
        {CG_SHARD_COUNT_KERNELS, CG_COUNT_KERNELS},
        {CG_SHARD_COUNT_GRAPH_KERNELS, CG_COUNT_GRAPH_KERNELS},
        {CG_SHARD_COUNT_GRAPH_LAUNCHES, CG_COUNT_GRAPH_LAUNCHES},
        {CG_SHARD_COUNT_SYNC_STREAM, CG_COUNT_SYNC_STREAM},
        {CG_SHARD_COUNT_SYNC_EVENT, CG_COUNT_SYNC_EVENT},
        {CG_SHARD_COUNT_SYNC_CONTEXT, CG_COUNT_SYNC_CONTEXT},
        {CG_SHARD_COUNT_SYNC_WAIT, CG_COUNT_SYNC_WAIT},
        {CG_SHARD_COUNT_COPIES, CG_COUNT_COPIES},
        {CG_SHARD_COUNT_DTOH_PAGEABLE, CG_COUNT_DTOH_PAGEABLE},
        {CG_SHARD_COUNT_DTOH_PAGEABLE_BYTES, CG_COUNT_DTOH_PAGEABLE_BYTES},
        {CG_SHARD_COUNT_ALLOCS, CG_COUNT_ALLOCS},
        {CG_SHARD_COUNT_FREES, CG_COUNT_FREES},
        {CG_SHARD_COUNT_MODULE_LOADS, CG_COUNT_MODULE_LOADS},
        {CG_SHARD_COUNT_JIT, CG_COUNT_JIT},
        {CG_SHARD_COUNT_RANGES, CG_COUNT_RANGES},
        {CG_SHARD_COUNT_BACKWARD, CG_COUNT_BACKWARD},
        {CG_SHARD_COUNT_OPTIMIZER_STEPS, CG_COUNT_OPTIMIZER_STEPS},
    };
    if (field_is(f, n, CG_SHARD_COUNT_SYNC_NS))
        return CG_SHARD_T_SYNC;
    if (field_is(f, n, CG_SHARD_COUNT_COMPUTE_NS))
        return CG_SHARD_T_COMPUTE;
    if (field_is(f, n, CG_SHARD_COUNT_COPY_NS))
        return CG_SHARD_T_COPY;
    if (field_is(f, n, CG_SHARD_COUNT_COPY_HIDDEN_NS))
        return CG_SHARD_T_COPY_HIDDEN;
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (field_is(f, n, words[i].word))
            return (int)words[i].count;
    return -1;
}

static int parse_count(struct parse_state *ps, struct line *l)
{
    int64_t idx, delta;
    const char *f;
    size_t n;
    int rc;
    if (!next_int(l, 0, CG_SHARD_MAX_STEPS - 1, &idx) || !next_field(l, &f, &n) || n == 0 ||
        !next_int(l, 0, MAX_VALUE, &delta) || l->p < l->end)
        return 1;
    int c = count_of(f, n);
    if (c < 0)
        return 0; /* a count of a newer library */
    if ((rc = ensure_step(ps, idx)) != 0)
        return rc;
    struct cg_shard_step *st = &ps->s->steps[idx];
    int64_t *v = c == CG_SHARD_T_SYNC          ? &st->sync_ns
                 : c == CG_SHARD_T_COMPUTE     ? &st->compute_ns
                 : c == CG_SHARD_T_COPY        ? &st->copy_ns
                 : c == CG_SHARD_T_COPY_HIDDEN ? &st->copy_hidden_ns
                                               : &st->counts[c];
    *v = cg_shard_add_capped(*v, delta);
    return 0;
}

static int parse_counted(struct parse_state *ps, struct line *l)
{
    const char *f;
    size_t n;
    while (next_field(l, &f, &n) && n > 0) {
        int c = count_of(f, n);
        if (c >= CG_COUNT_N)
            ps->s->times_counted[c - CG_COUNT_N] = true;
        else if (c >= 0)
            ps->s->counted[c] = true;
        else if (field_is(f, n, CG_SHARD_COUNT_PLACES))
            ps->s->placed = true;
    }
    return 0;
}

static int parse_place(struct parse_state *ps, struct line *l)
{
    struct cg_shard *s = ps->s;
    const char *f, *w;
    size_t n, wn;
    int64_t calls;
    bool bad = false;
    if (!next_field(l, &f, &n) || n == 0 || !next_field(l, &w, &wn) ||
        !next_int(l, 0, MAX_VALUE, &calls))
        return 1;
    int c = count_of(f, n);
    if (c < 0)
        return 0; /* a count of a newer library */
    bool after = field_is(w, wn, CG_SHARD_PLACE_AFTER);
    if ((!after && !field_is(w, wn, CG_SHARD_PLACE_IN)) || c >= CG_COUNT_N || !cg_count_placed(c) ||
        l->p[-1] != ' ') /* the name's field, empty or not, is there */
        return 1;
    char *name = rest_name(l, &bad);
    if (name == NULL)
        return bad ? 1 : CG_ENOMEM;
    for (size_t i = 0; i < s->n_places; i++) {
        struct cg_shard_place *pl = &s->places[i];
        if (pl->count == c && pl->after == after && strcmp(pl->name, name) == 0) {
            pl->calls = cg_shard_add_capped(pl->calls, calls);
            free(name);
            return 0;
        }
    }
    if (s->n_places >= CG_ARTIFACT_MAX_PLACES ||
        grow((void **)&s->places, &ps->places_cap, s->n_places + 1, sizeof(*s->places)) != 0) {
        free(name);
        return s->n_places >= CG_ARTIFACT_MAX_PLACES ? 1 : CG_ENOMEM;
    }
    s->places[s->n_places++] = (struct cg_shard_place){name, c, after, calls};
    return 0;
}

static int parse_gpu(struct parse_state *ps, struct line *l)
{
    struct cg_shard *s = ps->s;
    const char *f;
    size_t n;
    if (!next_field(l, &f, &n))
        return 1;
    if (field_is(f, n, CG_SHARD_GPU_OK)) {
        s->gpu = 1;
        return 0;
    }
    if (!field_is(f, n, CG_SHARD_GPU_UNAVAILABLE))
        return 1;
    if (s->gpu != 1)
        s->gpu = 0;
    return rest_str(l, &s->gpu_reason);
}

static int parse_device(struct parse_state *ps, struct line *l)
{
    struct cg_shard *s = ps->s;
    int64_t a;
    if (!next_int(l, 0, MAX_DEVICES - 1, &a))
        return 1;
    s->gpu_count++;
    return rest_str(l, &s->gpu_model);
}

/* "uuid ID UUID": UUID one field of letters, digits and '-' (the library writes "GPU-..."). */
static int parse_uuid(struct parse_state *ps, struct line *l)
{
    struct cg_shard *s = ps->s;
    int64_t a;
    char uuid[CG_SHARD_UUID_MAX];
    if (!next_int(l, 0, MAX_DEVICES - 1, &a) || !next_text(l, uuid, sizeof(uuid)) || l->p < l->end)
        return 1;
    for (const char *c = uuid; *c != '\0'; c++)
        if (!isalnum((unsigned char)*c) && *c != '-')
            return 1;
    for (size_t i = 0; i < s->n_uuids; i++)
        if (s->uuids[i].device == a)
            return 0; /* the first line counts */
    if (grow((void **)&s->uuids, &ps->uuids_cap, s->n_uuids + 1, sizeof(*s->uuids)) != 0)
        return CG_ENOMEM;
    struct cg_shard_uuid *u = &s->uuids[s->n_uuids++];
    u->device = a;
    memcpy(u->uuid, uuid, sizeof(uuid));
    return 0;
}

static int parse_cuda(struct parse_state *ps, struct line *l)
{
    return rest_str(l, &ps->s->cuda_version);
}

static int parse_driver(struct parse_state *ps, struct line *l)
{
    return rest_str(l, &ps->s->driver_version);
}

static int parse_warning(struct parse_state *ps, struct line *l)
{
    bool bad = false;
    char *r = rest_name(l, &bad);
    if (r == NULL)
        return bad ? 1 : CG_ENOMEM;
    return add_warning(ps->s, r);
}

static int parse_cupti(struct parse_state *ps, struct line *l)
{
    const char *f;
    size_t n;
    bool bad = false;
    if (!next_field(l, &f, &n) ||
        !(field_is(f, n, CG_SHARD_CUPTI_LOADED) || field_is(f, n, CG_SHARD_CUPTI_ENV) ||
          field_is(f, n, CG_SHARD_CUPTI_CONFIGURED) || field_is(f, n, CG_SHARD_CUPTI_SONAME)))
        return 1;
    char *path = rest_name(l, &bad);
    if (path == NULL)
        return bad ? 1 : CG_ENOMEM;
    if (path[0] == '\0') {
        free(path);
        return 1;
    }
    size_t plen = strlen(path);
    char *how_path = malloc(n + 1 + plen + 1); /* "HOW PATH" */
    if (how_path != NULL) {
        memcpy(how_path, f, n);
        how_path[n] = ' ';
        memcpy(how_path + n + 1, path, plen + 1);
    }
    free(path);
    return how_path == NULL ? CG_ENOMEM : set_str(&ps->s->cupti_library, how_path);
}

static int parse_done(struct parse_state *ps, struct line *l)
{
    int64_t a;
    if (!next_int(l, 1, CG_SHARD_MAX_STEPS, &a) || l->p < l->end)
        return 1;
    ps->s->done_steps = a;
    return 0;
}

static int parse_stray_steps(struct parse_state *ps, struct line *l)
{
    int64_t nested, other;
    if (!next_int(l, 0, (int64_t)1 << 53, &nested) || !next_int(l, 0, (int64_t)1 << 53, &other) ||
        l->p < l->end)
        return 1;
    ps->s->stray_steps[0] = nested; /* totals so far: the last line counts */
    ps->s->stray_steps[1] = other;
    return 0;
}

static int parse_pid(struct parse_state *ps, struct line *l)
{
    return next_int(l, 0, INT32_MAX, &ps->s->pid) ? 0 : 1;
}

static int parse_pid_start(struct parse_state *ps, struct line *l)
{
    int64_t ticks, ns;
    if (!next_int(l, 0, INT64_MAX, &ticks) || !next_int(l, 0, INT64_MAX, &ns) || l->p < l->end)
        return 1;
    ps->s->pid_start_ticks = ticks;
    ps->s->pid_ns = ns;
    return 0;
}

static int parse_started(struct parse_state *ps, struct line *l)
{
    int64_t ns, ppid = -1;
    if (!next_int(l, -((int64_t)1 << 62), (int64_t)1 << 62, &ns) ||
        (l->p < l->end && !next_int(l, 0, INT32_MAX, &ppid)) || l->p < l->end)
        return 1;
    ps->s->started_ns = ns;
    ps->s->started_known = true;
    ps->s->ppid = ppid;
    return 0;
}

static int parse_rank(struct parse_state *ps, struct line *l)
{
    return next_int(l, 0, INT32_MAX, &ps->s->rank) ? 0 : 1;
}

static int parse_local_rank(struct parse_state *ps, struct line *l)
{
    return next_int(l, 0, INT32_MAX, &ps->s->local_rank) ? 0 : 1;
}

static int parse_host(struct parse_state *ps, struct line *l)
{
    return rest_str(l, &ps->s->host);
}

static int parse_slurm_node(struct parse_state *ps, struct line *l)
{
    return rest_str(l, &ps->s->slurm_node);
}

static int parse_step_range(struct parse_state *ps, struct line *l)
{
    return rest_str(l, &ps->s->step_range);
}

static int parse_slurm_job(struct parse_state *ps, struct line *l)
{
    return rest_str(l, &ps->s->slurm_job);
}

static int parse_world_size(struct parse_state *ps, struct line *l)
{
    return next_int(l, 1, INT32_MAX, &ps->s->world_size) ? 0 : 1;
}

static int parse_group_rank(struct parse_state *ps, struct line *l)
{
    return next_int(l, 0, INT32_MAX, &ps->s->group_rank) ? 0 : 1;
}

static int parse_slurm_procid(struct parse_state *ps, struct line *l)
{
    return next_int(l, 0, INT32_MAX, &ps->s->slurm_procid) ? 0 : 1;
}

static int parse_slurm_nodeid(struct parse_state *ps, struct line *l)
{
    return next_int(l, 0, INT32_MAX, &ps->s->slurm_nodeid) ? 0 : 1;
}

static int parse_slurm_ntasks(struct parse_state *ps, struct line *l)
{
    return next_int(l, 1, INT32_MAX, &ps->s->slurm_ntasks) ? 0 : 1;
}

static int parse_slurm_step(struct parse_state *ps, struct line *l)
{
    return next_int(l, 0, INT32_MAX, &ps->s->slurm_step) ? 0 : 1;
}

static int parse_mpi_rank(struct parse_state *ps, struct line *l)
{
    return next_int(l, 0, INT32_MAX, &ps->s->mpi_rank) ? 0 : 1;
}

static int parse_mpi_size(struct parse_state *ps, struct line *l)
{
    return next_int(l, 1, INT32_MAX, &ps->s->mpi_size) ? 0 : 1;
}

static int parse_end(struct parse_state *ps, struct line *l)
{
    (void)l;
    ps->s->complete = true;
    return 0;
}

static int parse_steps_from(struct parse_state *ps, struct line *l)
{
    struct cg_shard *s = ps->s;
    const char *f;
    size_t n;
    if (!next_field(l, &f, &n) || l->p < l->end)
        return 1;
    s->steps_from = field_is(f, n, CG_SHARD_STEPS_NVTX)        ? CG_STEPS_NVTX
                    : field_is(f, n, CG_SHARD_STEPS_OPTIMIZER) ? CG_STEPS_OPTIMIZER
                                                               : CG_STEPS_UNKNOWN;
    return s->steps_from == CG_STEPS_UNKNOWN ? 1 : 0;
}

static int parse_steps_ignored(struct parse_state *ps, struct line *l)
{
    return next_int(l, 0, INT32_MAX, &ps->s->steps_ignored) ? 0 : 1;
}

static int parse_warmup(struct parse_state *ps, struct line *l)
{
    return next_int(l, 0, INT32_MAX, &ps->s->warmup) ? 0 : 1;
}

/* --- trace records (see shard.h) ----------------------------------------------------------- */

static int parse_trace_window(struct parse_state *ps, struct line *l)
{
    int64_t a, b;
    if (!next_int(l, 0, CG_SHARD_MAX_STEPS - 1, &a) || !next_int(l, a, CG_SHARD_MAX_STEPS - 1, &b))
        return 1;
    ps->s->trace_first = a;
    ps->s->trace_last = b;
    return 0;
}

static int parse_trace_counts(struct parse_state *ps, struct line *l)
{
    int64_t a, b;
    if (!next_int(l, 0, MAX_VALUE, &a) || !next_int(l, 0, MAX_VALUE, &b))
        return 1;
    ps->s->trace_events = a;
    ps->s->trace_dropped = b;
    return 0;
}

static int parse_trace_mem(struct parse_state *ps, struct line *l)
{
    struct cg_shard *s = ps->s;
    int64_t a, b, c;
    if (!next_int(l, 0, MAX_DEVICES - 1, &a) || !next_int(l, 0, INT64_MAX, &b) ||
        !next_int(l, -MAX_VALUE, MAX_VALUE, &c) || l->p < l->end)
        return 1;
    struct cg_shard_mem_event m = {a, b, c};
    return push_event((void **)&s->mem_events, &s->n_mem_events, &ps->mem_events_cap, &m,
                      sizeof(m));
}

static int parse_trace_domain(struct parse_state *ps, struct line *l)
{
    struct cg_shard *s = ps->s;
    int64_t a;
    bool bad = false;
    char *name = NULL;
    if (!next_int(l, 1, INT32_MAX, &a) || s->n_domains >= MAX_TRACE_DOMAINS)
        return 1;
    if ((name = rest_name(l, &bad)) == NULL)
        return bad ? 1 : CG_ENOMEM;
    struct cg_shard_domain dm = {a, name};
    int rc = push_event((void **)&s->domains, &s->n_domains, &ps->domains_cap, &dm, sizeof(dm));
    if (rc != 0)
        free(name);
    return rc;
}

static int parse_trace_range(struct parse_state *ps, struct line *l)
{
    struct cg_shard *s = ps->s;
    int64_t a, b, c, d;
    bool bad = false;
    char *name = NULL;
    if (!next_int(l, 0, INT32_MAX, &a) || !next_int(l, 0, INT64_MAX, &b) ||
        !next_int(l, b, INT64_MAX, &c) || !next_int(l, 0, INT32_MAX, &d))
        return 1;
    if ((name = rest_name(l, &bad)) == NULL)
        return bad ? 1 : CG_ENOMEM;
    struct cg_shard_range r = {a, b, c, d, name};
    int rc = push_event((void **)&s->ranges, &s->n_ranges, &ps->ranges_cap, &r, sizeof(r));
    if (rc != 0)
        free(name);
    return rc;
}

static int parse_trace_gpu(struct parse_state *ps, struct line *l)
{
    struct cg_shard *s = ps->s;
    enum cg_op_kind kind;
    int64_t a, b, c, d, e;
    bool bad = false;
    char *name = NULL;
    if (!next_kind(l, &kind) || kind == CG_OP_RANGE || !next_int(l, 0, MAX_DEVICES - 1, &a) ||
        !next_int(l, 0, UINT32_MAX, &b) || !next_int(l, 0, INT64_MAX, &c) ||
        !next_int(l, c, INT64_MAX, &d) || !next_int(l, -1, MAX_VALUE, &e))
        return 1;
    if ((name = rest_name(l, &bad)) == NULL)
        return bad ? 1 : CG_ENOMEM;
    struct cg_shard_gpu_event g = {kind, a, b, c, d, e, name};
    int rc = push_event((void **)&s->gpu_events, &s->n_gpu_events, &ps->gpu_cap, &g, sizeof(g));
    if (rc != 0)
        free(name);
    return rc;
}

/* A record key and the parser of its fields. */
struct record {
    const char *key;
    int (*parse)(struct parse_state *ps, struct line *l);
};

/* Every record key the reader knows. Other keys (future records) are skipped. */
static const struct record records[] = {
    {CG_SHARD_KEY_STEP, parse_step},
    {CG_SHARD_KEY_BUSY, parse_busy},
    {CG_SHARD_KEY_LOSS, parse_loss},
    {CG_SHARD_KEY_OP, parse_op},
    {CG_SHARD_KEY_MEM, parse_mem},
    {CG_SHARD_KEY_COUNT, parse_count},
    {CG_SHARD_KEY_COUNTED, parse_counted},
    {CG_SHARD_KEY_COUNT_PLACE, parse_place},
    {CG_SHARD_KEY_COUNTERS, parse_counters},
    {CG_SHARD_KEY_GPU, parse_gpu},
    {CG_SHARD_KEY_DEVICE, parse_device},
    {CG_SHARD_KEY_DEVICE_UUID, parse_uuid},
    {CG_SHARD_KEY_CUDA, parse_cuda},
    {CG_SHARD_KEY_DRIVER, parse_driver},
    {CG_SHARD_KEY_WARNING, parse_warning},
    {CG_SHARD_KEY_CUPTI, parse_cupti},
    {CG_SHARD_KEY_DONE, parse_done},
    {CG_SHARD_KEY_STRAY_STEPS, parse_stray_steps},
    {CG_SHARD_KEY_PID, parse_pid},
    {CG_SHARD_KEY_PID_START, parse_pid_start},
    {CG_SHARD_KEY_STARTED, parse_started},
    {CG_SHARD_KEY_RANK, parse_rank},
    {CG_SHARD_KEY_LOCAL_RANK, parse_local_rank},
    {CG_SHARD_KEY_HOST, parse_host},
    {CG_SHARD_KEY_WORLD_SIZE, parse_world_size},
    {CG_SHARD_KEY_GROUP_RANK, parse_group_rank},
    {CG_SHARD_KEY_SLURM_PROCID, parse_slurm_procid},
    {CG_SHARD_KEY_SLURM_NODEID, parse_slurm_nodeid},
    {CG_SHARD_KEY_SLURM_NTASKS, parse_slurm_ntasks},
    {CG_SHARD_KEY_SLURM_NODE, parse_slurm_node},
    {CG_SHARD_KEY_SLURM_JOB, parse_slurm_job},
    {CG_SHARD_KEY_SLURM_STEP, parse_slurm_step},
    {CG_SHARD_KEY_STEP_RANGE, parse_step_range},
    {CG_SHARD_KEY_MPI_RANK, parse_mpi_rank},
    {CG_SHARD_KEY_MPI_SIZE, parse_mpi_size},
    {CG_SHARD_KEY_END, parse_end},
    {CG_SHARD_KEY_STEPS_FROM, parse_steps_from},
    {CG_SHARD_KEY_STEPS_IGNORED, parse_steps_ignored},
    {CG_SHARD_KEY_WARMUP, parse_warmup},
    {CG_SHARD_KEY_TRACE_WINDOW, parse_trace_window},
    {CG_SHARD_KEY_TRACE_RANGE, parse_trace_range},
    {CG_SHARD_KEY_TRACE_DOMAIN, parse_trace_domain},
    {CG_SHARD_KEY_TRACE_GPU, parse_trace_gpu},
    {CG_SHARD_KEY_TRACE_MEM, parse_trace_mem},
    {CG_SHARD_KEY_TRACE_COUNTS, parse_trace_counts},
};

/* One line: its key's parser, or nothing for an empty line or an unknown key. Returns what the
 * record parsers return (see above). */
static int parse_line(struct parse_state *ps, struct line *l)
{
    const char *key;
    size_t kn;
    if (!next_field(l, &key, &kn))
        return 0; /* empty line */
    for (size_t i = 0; i < sizeof(records) / sizeof(records[0]); i++)
        if (field_is(key, kn, records[i].key))
            return records[i].parse(ps, l);
    return 0;
}

int cg_shard_parse(const char *data, size_t len, const char *name, struct cg_shard *s,
                   struct cg_err *err)
{
    struct parse_state ps = {.s = s};
    size_t magic = strlen(CG_SHARD_MAGIC);
    cg_shard_init(s);
    if (len < magic + 1 || memcmp(data, CG_SHARD_MAGIC, magic) != 0 || data[magic] != '\n')
        return cg_err_set(err, CG_EINPUT, "shard '%s': not a canary-gate shard (version 1)", name);
    const char *p = data + magic + 1, *end = data + len;
    size_t lineno = 1;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (nl == NULL)
            break; /* a last line cut short by a crash */
        lineno++;
        ps.lines = lineno;
        struct line l = {p, nl};
        int rc = parse_line(&ps, &l);
        if (rc != 0) {
            cg_shard_release(s);
            if (rc == CG_ENOMEM)
                return cg_err_set(err, CG_ENOMEM, "shard '%s': out of memory", name);
            if (rc == 2)
                return cg_err_set(err, CG_EINPUT,
                                  "shard '%s' line %zu: a step of zero or negative duration (the "
                                  "clock stepped, or is too coarse to time steps)",
                                  name, lineno);
            if (rc == 3)
                return cg_err_set(err, CG_EINPUT,
                                  "shard '%s' line %zu: more than %d op lines (the shard limit)",
                                  name, lineno, CG_SHARD_MAX_OPS);
            return cg_err_set(err, CG_EINPUT, "shard '%s' line %zu: malformed record", name,
                              lineno);
        }
        p = nl + 1;
    }
    return 0;
}
