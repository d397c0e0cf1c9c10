/*
 * trace: Chrome trace event JSON from the shards' trace lines (see trace.h for the layout).
 *
 * Events are appended to one capped buffer (src/core/buf.h) and written atomically. GPU tracks get
 * track ids above any Linux thread id, in the order their (device, stream) first appears; the
 * steps track sorts first, GPU tracks after the threads. Kernel names are demangled through a
 * small cache (a step repeats the same few hundred kernels). Not thread-safe.
 */
#include "trace.h"

#include "buf.h"
#include "fsutil.h"
#include "launch_env.h"
#include "opname.h"
#include "utf8.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TID_STEPS 1000000000LL    /* above any Linux thread id (at most 2^22) */
#define TID_GPU (TID_STEPS + 1)   /* + the track's index */
#define DEMANGLE_SLOTS 1024       /* power of two */
#define MAX_GPU_TRACKS 4096

struct demangle_slot {
    const char *key; /* borrowed from a shard */
    char *value;     /* demangled, or NULL when it does not demangle */
};

struct gpu_track {
    int64_t device, stream;
};

struct writer {
    struct cg_buf b;
    int rc;               /* first append failure */
    int64_t t0;           /* the earliest event, ns, on the common clock (after shifts) */
    int64_t shift;        /* ns added to the times of the process being written (its host's) */
    bool first;           /* no event written yet (no comma) */
    struct demangle_slot demangled[DEMANGLE_SLOTS];
    struct gpu_track tracks[MAX_GPU_TRACKS];
    size_t n_tracks;
};

static void put(struct writer *w, const char *s)
{
    if (w->rc == 0)
        w->rc = cg_buf_adds(&w->b, s);
}

static void putf(struct writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void putf(struct writer *w, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(tmp)) {
        w->rc = CG_EINTERNAL;
        return;
    }
    if (w->rc == 0)
        w->rc = cg_buf_add(&w->b, tmp, (size_t)n);
}

/* s as a JSON string: quotes and backslashes escaped, control bytes and DEL as \u00XX, each
 * byte that cg_utf8_decode finds ill-formed as U+FFFD. */
static void put_str(struct writer *w, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    char tmp[512];
    size_t k = 0;
    const char *p = s ? s : "", *end = p + strlen(p);
    tmp[k++] = '"';
    while (p < end) {
        if (k + 8 > sizeof(tmp)) {
            if (w->rc == 0)
                w->rc = cg_buf_add(&w->b, tmp, k);
            k = 0;
        }
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c == '\\') {
            tmp[k++] = '\\';
            tmp[k++] = (char)c;
            p++;
        } else if (c < 0x20 || c == 0x7f) {
            memcpy(tmp + k, "\\u00", 4);
            k += 4;
            tmp[k++] = hex[c >> 4];
            tmp[k++] = hex[c & 15];
            p++;
        } else if (c < 0x80) {
            tmp[k++] = (char)c;
            p++;
        } else {
            size_t n = cg_utf8_decode(p, (size_t)(end - p), NULL);
            if (n == 0) {
                memcpy(tmp + k, "\\ufffd", 6);
                k += 6;
                p++;
            } else {
                memcpy(tmp + k, p, n);
                k += n;
                p += n;
            }
        }
    }
    tmp[k++] = '"';
    if (w->rc == 0)
        w->rc = cg_buf_add(&w->b, tmp, k);
}

/* Starts an event object: {"name":..., "ph":..., "pid":..., "tid":... */
static void event_open(struct writer *w, const char *name, const char *ph, int64_t pid,
                       int64_t tid)
{
    put(w, w->first ? "\n{\"name\":" : ",\n{\"name\":");
    w->first = false;
    put_str(w, name);
    putf(w, ",\"ph\":\"%s\",\"pid\":%" PRId64 ",\"tid\":%" PRId64, ph, pid, tid);
}

static void put_time(struct writer *w, const char *key, uint64_t ns)
{
    int64_t at = (int64_t)ns + w->shift;
    uint64_t d = at > w->t0 ? (uint64_t)(at - w->t0) : 0;
    putf(w, ",\"%s\":%" PRIu64 ".%03" PRIu64, key, d / 1000, d % 1000);
}

/* A complete ("X") event from start to end. */
static void complete(struct writer *w, const char *name, const char *cat, int64_t pid,
                     int64_t tid, uint64_t start, uint64_t end)
{
    event_open(w, name, "X", pid, tid);
    put(w, ",\"cat\":");
    put_str(w, cat);
    put_time(w, "ts", start);
    uint64_t d = end > start ? end - start : 0;
    putf(w, ",\"dur\":%" PRIu64 ".%03" PRIu64, d / 1000, d % 1000);
}

/* A metadata ("M") event: name is process_name, thread_name or thread_sort_index. */
static void metadata(struct writer *w, const char *what, int64_t pid, int64_t tid,
                     const char *name, int64_t sort_index)
{
    event_open(w, what, "M", pid, tid);
    put(w, ",\"args\":{");
    if (name != NULL) {
        put(w, "\"name\":");
        put_str(w, name);
    } else {
        putf(w, "\"sort_index\":%" PRId64, sort_index);
    }
    put(w, "}}");
}

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

/* The demangled name of a kernel (or the name itself), cached. */
static const char *demangled(struct writer *w, const char *mangled)
{
    struct demangle_slot *sl = &w->demangled[fnv1a(mangled) & (DEMANGLE_SLOTS - 1)];
    if (sl->key == NULL || strcmp(sl->key, mangled) != 0) {
        free(sl->value);
        sl->key = mangled;
        sl->value = cg_opname_demangle(mangled);
    }
    return sl->value != NULL ? sl->value : mangled;
}

/* The track id of (device, stream) in the process being written. */
static int64_t gpu_tid(struct writer *w, int64_t device, int64_t stream, int64_t pid)
{
    for (size_t i = 0; i < w->n_tracks; i++)
        if (w->tracks[i].device == device && w->tracks[i].stream == stream)
            return TID_GPU + (int64_t)i;
    if (w->n_tracks == MAX_GPU_TRACKS)
        return TID_GPU + MAX_GPU_TRACKS; /* one shared track past the cap */
    w->tracks[w->n_tracks] = (struct gpu_track){device, stream};
    int64_t tid = TID_GPU + (int64_t)w->n_tracks++;
    char name[96];
    snprintf(name, sizeof(name), "GPU %" PRId64 " stream %" PRId64, device, stream);
    metadata(w, "thread_name", pid, tid, name, 0);
    metadata(w, "thread_sort_index", pid, tid, NULL, 1000 + (int64_t)w->n_tracks);
    return tid;
}

static int64_t shard_pid(const struct cg_shard *s, size_t i)
{
    return s->pid >= 0 ? s->pid : (int64_t)i + 1;
}

/* The start of shard s's first traced step on its own clock, or -1 when it traced none. */
static int64_t first_traced_start(const struct cg_shard *s)
{
    for (int64_t k = s->trace_first; k >= 0 && k <= s->trace_last; k++)
        if ((size_t)k < s->n_steps && s->steps[k].seen)
            return s->steps[k].end_ns - s->steps[k].wall_ns;
    return -1;
}

static void keep_earlier(int64_t *t0, int64_t t)
{
    if (t < *t0)
        *t0 = t;
}

/* The earliest event over the shards, each shifted by shift[i]; 0 when none. */
static int64_t earliest(const struct cg_shard *shards, size_t n, const int64_t *shift)
{
    int64_t t0 = INT64_MAX;
    for (size_t i = 0; i < n; i++) {
        const struct cg_shard *s = &shards[i];
        for (size_t j = 0; j < s->n_ranges; j++)
            keep_earlier(&t0, s->ranges[j].start_ns + shift[i]);
        for (size_t j = 0; j < s->n_gpu_events; j++)
            keep_earlier(&t0, s->gpu_events[j].start_ns + shift[i]);
        for (size_t j = 0; j < s->n_mem_events; j++)
            keep_earlier(&t0, s->mem_events[j].ts_ns + shift[i]);
        for (int64_t k = s->trace_first; k >= 0 && k <= s->trace_last; k++)
            if ((size_t)k < s->n_steps && s->steps[k].seen)
                keep_earlier(&t0, s->steps[k].end_ns - s->steps[k].wall_ns + shift[i]);
    }
    return t0 == INT64_MAX ? 0 : t0;
}

/* The name a shard's host is shown by: its host name, else its Slurm node, as redacted (a
 * hidden host's name is its own, with its node's number: "***.cluster #1" on the artifact's
 * node "*** #1", cg_shard_redact), so one per clock. */
static const char *shown_host(const struct cg_shard *s)
{
    return s->host != NULL ? s->host : s->slurm_node != NULL ? s->slurm_node : "";
}

/* A traced shard and its host, sorted by the name shown (then clock, then shard) so one host's
 * shards are together, in an order that tells nothing of a hidden name. */
struct on_host {
    const char *host;  /* cg_shard_clock_host, borrowed */
    const char *shown; /* shown_host, borrowed */
    size_t i;
};

static int cmp_on_host(const void *x, const void *y)
{
    const struct on_host *a = x, *b = y;
    int c = strcmp(a->shown, b->shown);
    c = c != 0 ? c : strcmp(a->host, b->host);
    return c != 0 ? c : (a->i > b->i) - (a->i < b->i);
}

/* How the trace puts several hosts' clocks on one. */
struct clocks {
    int64_t *shift;         /* per shard, ns added to its times */
    bool *unaligned;        /* per shard, its host has no traced step: its own clock */
    struct on_host *traced; /* the traced shards by host */
    size_t n_traced, n_hosts;
    const char *ref; /* the reference host (shift 0), borrowed; NULL when no traced step */
    size_t ref_at;   /* its first shard's index in traced */
    bool samples_ok; /* the launcher's GPU readings are on the reference host's clock */
};

/* Whether shard b, with a traced step, should be the reference rather than a (NULL: none yet):
 * the gate's own host first, then the lowest rank, then (no ranks) the first host name in byte
 * order. */
static bool better_ref(const struct cg_shard *a, const struct cg_shard *b, const char *me)
{
    if (a == NULL)
        return true;
    bool ma = strcmp(cg_shard_clock_host(a), me) == 0, mb = strcmp(cg_shard_clock_host(b), me) == 0;
    if (ma != mb)
        return mb;
    if (a->rank >= 0 || b->rank >= 0)
        return b->rank >= 0 && (a->rank < 0 || b->rank < a->rank);
    return strcmp(shown_host(b), shown_host(a)) < 0;
}

/* Each host's events are shifted so that its first traced step starts with the reference
 * host's (better_ref among the shards with a traced step: a launcher's process without one has
 * nothing to align on; the gate's host's GPU readings share the gate's clock). One host's
 * processes share its clock and keep their offsets; a host without a traced step keeps its own
 * (unaligned). 0 or CG_ENOMEM; release with clocks_release. */
static int align_clocks(const struct cg_shard *shards, size_t n, struct clocks *c)
{
    char me[256];
    if (gethostname(me, sizeof(me)) != 0)
        me[0] = '\0';
    me[sizeof(me) - 1] = '\0';
    *c = (struct clocks){.shift = calloc(n > 0 ? n : 1, sizeof(int64_t)),
                         .unaligned = calloc(n > 0 ? n : 1, sizeof(bool)),
                         .traced = malloc((n > 0 ? n : 1) * sizeof(struct on_host))};
    if (c->shift == NULL || c->unaligned == NULL || c->traced == NULL)
        return CG_ENOMEM;
    const struct cg_shard *ref = NULL;
    for (size_t i = 0; i < n; i++) {
        if (shards[i].trace_first < 0)
            continue;
        c->traced[c->n_traced++] =
            (struct on_host){cg_shard_clock_host(&shards[i]), shown_host(&shards[i]), i};
        if (first_traced_start(&shards[i]) >= 0 && better_ref(ref, &shards[i], me))
            ref = &shards[i];
    }
    if (c->n_traced == 0)
        return 0;
    qsort(c->traced, c->n_traced, sizeof(*c->traced), cmp_on_host);
    c->ref = ref != NULL ? cg_shard_clock_host(ref) : NULL;
    /* each host's anchor: the earliest start of its shards' first traced steps (-1: none) */
    int64_t at = -1;
    for (size_t g = 0, e; g < c->n_traced; g = e) {
        int64_t anchor = -1;
        for (e = g; e < c->n_traced && strcmp(c->traced[e].host, c->traced[g].host) == 0; e++) {
            int64_t t = first_traced_start(&shards[c->traced[e].i]);
            if (t >= 0 && (anchor < 0 || t < anchor))
                anchor = t;
        }
        c->n_hosts++;
        for (size_t k = g; k < e; k++) {
            c->shift[c->traced[k].i] = anchor; /* for now: the host's anchor */
            c->unaligned[c->traced[k].i] = anchor < 0;
        }
        if (c->ref != NULL && strcmp(c->traced[g].host, c->ref) == 0) {
            at = anchor;
            c->ref_at = g;
        }
    }
    c->samples_ok = c->n_hosts <= 1 || (c->ref != NULL && strcmp(c->ref, me) == 0);
    for (size_t k = 0; k < c->n_traced; k++) {
        int64_t *sh = &c->shift[c->traced[k].i];
        *sh = c->n_hosts > 1 && at >= 0 && *sh >= 0 ? at - *sh : 0;
    }
    return 0;
}

static void clocks_release(struct clocks *c)
{
    free(c->shift);
    free(c->unaligned);
    free(c->traced);
}

/* otherData's account of the clocks: how many hosts, and with several, how they were aligned
 * and each host's shift in microseconds (null: a host without a traced step, on its own clock;
 * the reference null when no host has one). */
static void write_clocks(struct writer *w, const struct clocks *c)
{
    putf(w, ",\"host_clocks\":%zu", c->n_hosts);
    if (c->n_hosts <= 1)
        return;
    put(w, ",\"clock_alignment\":");
    put_str(w, "each host's monotonic clock counts from its own boot: its events are shifted so "
               "that its first traced step starts with the reference host's; within a host, the "
               "host's own clock; a host without a traced step keeps its own (shift null)");
    put(w, ",\"clock_reference_host\":");
    if (c->ref != NULL)
        put_str(w, c->traced[c->ref_at].shown);
    else
        put(w, "null");
    put(w, ",\"host_shift_us\":{");
    for (size_t k = 0; k < c->n_traced; k++) {
        if (k > 0 && strcmp(c->traced[k].host, c->traced[k - 1].host) == 0)
            continue;
        put(w, k > 0 ? "," : "");
        put_str(w, c->traced[k].shown);
        if (c->unaligned[c->traced[k].i]) {
            put(w, ":null");
            continue;
        }
        int64_t d = c->shift[c->traced[k].i];
        uint64_t a = d < 0 ? (uint64_t)0 - (uint64_t)d : (uint64_t)d;
        putf(w, ":%s%" PRIu64 ".%03" PRIu64, d < 0 ? "-" : "", a / 1000, a % 1000);
    }
    put(w, "}");
}

static const char *domain_name(const struct cg_shard *s, int64_t id)
{
    for (size_t i = 0; i < s->n_domains; i++)
        if (s->domains[i].id == id)
            return s->domains[i].name;
    return id == 0 ? "nvtx" : "nvtx domain";
}

static void write_steps(struct writer *w, const struct cg_shard *s, int64_t pid)
{
    int64_t warmup = s->warmup > 0 ? s->warmup : 0;
    for (int64_t k = s->trace_first; k >= 0 && k <= s->trace_last; k++) {
        if ((size_t)k >= s->n_steps || !s->steps[k].seen)
            continue;
        const struct cg_shard_step *st = &s->steps[k];
        uint64_t end = (uint64_t)st->end_ns, start = end - (uint64_t)st->wall_ns;
        char name[64];
        snprintf(name, sizeof(name), "step %" PRId64, k - warmup);
        complete(w, name, "step", pid, TID_STEPS, start, end);
        putf(w, ",\"args\":{\"step\":%" PRId64, k - warmup);
        if (st->tokens >= 0)
            putf(w, ",\"tokens\":%" PRId64, st->tokens);
        if (st->gpu_busy_ns >= 0)
            putf(w, ",\"gpu_busy_ns\":%" PRId64, st->gpu_busy_ns);
        if (isfinite(st->loss))
            putf(w, ",\"loss\":%.9g", st->loss);
        put(w, "}}");
        if (isfinite(st->loss)) {
            event_open(w, "loss", "C", pid, TID_STEPS);
            put_time(w, "ts", end);
            putf(w, ",\"args\":{\"loss\":%.9g}}", st->loss);
        }
    }
}

static void write_threads(struct writer *w, const struct cg_shard *s, int64_t pid)
{
    int64_t *seen = malloc((s->n_ranges + 1) * sizeof(*seen));
    size_t n_seen = 0;
    if (seen == NULL) {
        w->rc = CG_ENOMEM;
        return;
    }
    for (size_t i = 0; i < s->n_ranges; i++) {
        const struct cg_shard_range *r = &s->ranges[i];
        size_t j = n_seen > 0 && seen[n_seen - 1] == r->tid ? n_seen - 1 : 0;
        while (j < n_seen && seen[j] != r->tid)
            j++;
        if (j == n_seen) {
            char name[64];
            seen[n_seen++] = r->tid;
            snprintf(name, sizeof(name), "%s %" PRId64, r->tid == s->pid ? "main thread" : "thread",
                     r->tid);
            metadata(w, "thread_name", pid, r->tid, name, 0);
        }
        complete(w, r->name, domain_name(s, r->domain), pid, r->tid, (uint64_t)r->start_ns,
                 (uint64_t)r->end_ns);
        put(w, "}");
    }
    free(seen);
}

static void write_gpu(struct writer *w, const struct cg_shard *s, int64_t pid)
{
    w->n_tracks = 0;
    for (size_t i = 0; i < s->n_gpu_events; i++) {
        const struct cg_shard_gpu_event *g = &s->gpu_events[i];
        int64_t tid = gpu_tid(w, g->device, g->stream, pid);
        const char *name = g->kind == CG_OP_KERNEL ? demangled(w, g->name) : g->name;
        complete(w, name, cg_op_kind_name(g->kind), pid, tid, (uint64_t)g->start_ns,
                 (uint64_t)g->end_ns);
        putf(w, ",\"args\":{\"device\":%" PRId64 ",\"stream\":%" PRId64, g->device, g->stream);
        if (g->bytes >= 0)
            putf(w, ",\"bytes\":%" PRId64, g->bytes);
        if (name != g->name) {
            put(w, ",\"mangled\":");
            put_str(w, g->name);
        }
        put(w, "}}");
    }
    for (size_t i = 0; i < s->n_mem_events; i++) {
        const struct cg_shard_mem_event *m = &s->mem_events[i];
        char name[64];
        snprintf(name, sizeof(name), "GPU %" PRId64 " memory", m->device);
        event_open(w, name, "C", pid, TID_STEPS);
        put_time(w, "ts", (uint64_t)m->ts_ns);
        putf(w, ",\"args\":{\"bytes\":%" PRId64 "}}", m->total_bytes);
    }
}

static void write_process(struct writer *w, const struct cg_shard *s, size_t i)
{
    int64_t pid = shard_pid(s, i);
    char name[96];
    if (s->rank >= 0)
        snprintf(name, sizeof(name), "rank %" PRId64 " (pid %" PRId64 ")", s->rank, pid);
    else
        snprintf(name, sizeof(name), "pid %" PRId64, pid);
    metadata(w, "process_name", pid, 0, name, 0);
    metadata(w, "process_sort_index", pid, 0, NULL, s->rank >= 0 ? s->rank : (int64_t)i);
    metadata(w, "thread_name", pid, TID_STEPS, "steps", 0);
    metadata(w, "thread_sort_index", pid, TID_STEPS, NULL, -1);
    write_steps(w, s, pid);
    write_threads(w, s, pid);
    write_gpu(w, s, pid);
}

/* The latest end of the traced events, ns on the common clock (0: none). */
static int64_t latest(const struct cg_shard *shards, size_t n, const int64_t *shift)
{
    int64_t t1 = 0;
    for (size_t i = 0; i < n; i++) {
        const struct cg_shard *s = &shards[i];
        if (s->trace_first < 0)
            continue;
        for (size_t j = 0; j < s->n_ranges; j++)
            if (s->ranges[j].end_ns + shift[i] > t1)
                t1 = s->ranges[j].end_ns + shift[i];
        for (size_t j = 0; j < s->n_gpu_events; j++)
            if (s->gpu_events[j].end_ns + shift[i] > t1)
                t1 = s->gpu_events[j].end_ns + shift[i];
    }
    return t1;
}

#define PID_GPU_STATE 0 /* no canary process has pid 0 */

/* The GPU's own state as counters, the readings inside [w->t0, t1]. */
static void write_gpu_state(struct writer *w, const struct cg_trace_sample *g, size_t n, int64_t t1)
{
    bool named = false;
    for (size_t i = 0; i < n; i++) {
        if (g[i].t_ns < 0 || g[i].t_ns < w->t0 || g[i].t_ns > t1)
            continue;
        if (!named) {
            metadata(w, "process_name", PID_GPU_STATE, 0, "GPU state (NVML)", 0);
            metadata(w, "process_sort_index", PID_GPU_STATE, 0, NULL, -1);
            named = true;
        }
        static const char *const what[3] = {"SM clock", "power", "temperature"};
        static const char *const unit[3] = {"MHz", "W", "C"};
        const double v[3] = {g[i].sm_mhz, g[i].power_w, g[i].temp_c};
        for (int k = 0; k < 3; k++) {
            if (!isfinite(v[k]))
                continue;
            char name[64];
            snprintf(name, sizeof(name), "GPU %" PRId64 " %s", g[i].device, what[k]);
            event_open(w, name, "C", PID_GPU_STATE, TID_STEPS);
            put_time(w, "ts", (uint64_t)g[i].t_ns);
            putf(w, ",\"args\":{\"%s\":%.6g}}", unit[k], v[k]);
        }
    }
}

char *cg_trace_to_json(const struct cg_shard *shards, size_t n,
                       const struct cg_trace_sample *samples, size_t n_samples)
{
    struct writer *w = calloc(1, sizeof(*w));
    char *out = NULL;
    if (w == NULL)
        return NULL;
    cg_buf_init(&w->b, CG_TRACE_MAX_BYTES);
    w->first = true;
    struct clocks c;
    if (align_clocks(shards, n, &c) != 0) {
        clocks_release(&c);
        free(w);
        return NULL;
    }
    w->t0 = earliest(shards, n, c.shift);
    int64_t dropped = 0, traced = 0;
    put(w, "{\"traceEvents\":[");
    for (size_t i = 0; i < n; i++) {
        if (shards[i].trace_first < 0)
            continue;
        traced++;
        if (shards[i].trace_dropped > 0)
            dropped += shards[i].trace_dropped;
        w->shift = c.shift[i];
        write_process(w, &shards[i], i);
    }
    w->shift = 0; /* the reference host's clock */
    if (traced > 0 && samples != NULL && c.samples_ok)
        write_gpu_state(w, samples, n_samples, latest(shards, n, c.shift));
    if (dropped > 0 || traced == 0) {
        char note[160];
        if (dropped > 0)
            snprintf(note, sizeof(note), "trace cap reached: %" PRId64 " events dropped (raise "
                     CG_ENV_TRACE_MAX_EVENTS ")", dropped);
        else
            snprintf(note, sizeof(note), "no trace: no process traced a step");
        event_open(w, note, "i", n > 0 ? shard_pid(&shards[0], 0) : 1, TID_STEPS);
        put(w, ",\"cat\":\"trace\",\"s\":\"g\",\"ts\":0}");
    }
    putf(w,
         "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"canary-gate\","
         "\"processes_traced\":%" PRId64 ",\"events_dropped\":%" PRId64,
         traced, dropped);
    write_clocks(w, &c);
    put(w, "}}\n");
    clocks_release(&c);
    if (w->rc == 0)
        out = cg_buf_detach(&w->b);
    cg_buf_release(&w->b);
    for (size_t i = 0; i < DEMANGLE_SLOTS; i++)
        free(w->demangled[i].value);
    free(w);
    return out;
}

int cg_trace_write(const struct cg_shard *shards, size_t n, const struct cg_trace_sample *samples,
                   size_t n_samples, const char *path, struct cg_err *err)
{
    char *text = cg_trace_to_json(shards, n, samples, n_samples);
    if (text == NULL)
        return cg_err_set(err, CG_ENOMEM, "cannot write '%s': out of memory or the trace is "
                          "over %zu MiB", path, CG_TRACE_MAX_BYTES >> 20);
    int rc = cg_file_write_atomic(path, text, strlen(text), err);
    free(text);
    return rc;
}
