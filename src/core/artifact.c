/*
 * artifact: the run artifact in memory: building runs, their identities, summaries, copies and
 * the machine and canary comparisons (see artifact.h and docs/artifact.md; the JSON side is
 * artifact_json.c). Not thread-safe.
 */
#include "artifact.h"

#include "cg_version.h"
#include "stats.h"
#include "utf8.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *const kind_names[CG_OP_KIND_COUNT] = {"kernel", "memcpy", "memset", "range"};

const char *cg_op_kind_name(enum cg_op_kind kind)
{
    return (unsigned)kind < CG_OP_KIND_COUNT ? kind_names[kind] : "unknown";
}

int cg_op_kind_parse(const char *s, enum cg_op_kind *out)
{
    for (int i = 0; i < CG_OP_KIND_COUNT; i++) {
        if (strcmp(s, kind_names[i]) == 0) {
            *out = (enum cg_op_kind)i;
            return 0;
        }
    }
    return CG_EINPUT;
}

void cg_artifact_init(struct cg_artifact *a)
{
    memset(a, 0, sizeof(*a));
    a->schema_version = CG_SCHEMA_VERSION;
    a->cuda_initialised = -1;
    a->env.gpu_count = 0;
    a->settings.tokens_per_step = -1;
    a->settings.step_optimizer = -1;
    a->settings.flops_per_token = -1;
    a->settings.peak_flop_per_clock = NAN;
    cg_gpu_env_init(&a->env.gpu_env);
}

void cg_run_code_release(struct cg_run_code *c)
{
    free(c->git_commit);
    for (size_t i = 0; i < c->n_files; i++) {
        free(c->files[i].path);
        free(c->files[i].hash);
    }
    free(c->files);
    memset(c, 0, sizeof(*c));
}

static void run_release(struct cg_run *r)
{
    cg_run_code_release(&r->code);
    cg_ranks_free(r->ranks, r->n_ranks);
    free(r->placement.cpus);
    free(r->id.host);
    free(r->id.started_utc);
    free(r->id.digest);
    for (size_t i = 0; i < r->n_ops; i++) {
        free(r->ops[i].name);
        free(r->ops[i].family);
    }
    free(r->ops);
    free(r->steps);
    for (size_t i = 0; i < r->n_warnings; i++)
        free(r->warnings[i]);
    free(r->warnings);
    for (size_t i = 0; i < r->n_places; i++)
        free(r->places[i].range);
    free(r->places);
    cg_gpu_state_release(&r->gpu);
}

static void env_release(struct cg_env *e)
{
    free(e->gpu_model);
    free(e->driver_version);
    free(e->cuda_version);
    free(e->cupti_status);
    free(e->cupti_library);
    free(e->cpu_model);
    free(e->tool_version);
    for (size_t i = 0; i < e->n_canary_command; i++)
        free(e->canary_command[i]);
    free(e->canary_command);
    free(e->canary_id);
    free(e->canary_hash);
    cg_gpu_env_release(&e->gpu_env);
}

void cg_artifact_release(struct cg_artifact *a)
{
    for (size_t i = 0; i < a->n_runs; i++)
        run_release(&a->runs[i]);
    free(a->runs);
    env_release(&a->env);
    free(a->settings.step_range);
    free(a->settings.steps_from);
    free(a->settings.comm_kernels);
    free(a->settings.precision);
    free(a->created_utc);
    free(a->gpu_reason);
    cg_artifact_init(a);
}

/* ---- building ---------------------------------------------------------------------------- */

static void run_init(struct cg_run *r)
{
    memset(r, 0, sizeof(*r));
    r->summary.step_time_mean_ns = NAN;
    r->summary.step_time_median_ns = NAN;
    r->summary.step_time_p95_ns = NAN;
    r->summary.tokens_per_sec = NAN;
    r->summary.peak_device_bytes = -1;
    r->summary.peak_host_rss_bytes = -1;
    r->dropped_records = -1;
    r->zero_timestamp_records = -1;
    r->outside_step_records = r->inside_step_records = -1;
    r->late_memory_records = r->cupti_overhead_ns = -1;
    r->stopped_after_steps = -1;
    r->stray_steps_nested = r->stray_steps_other_threads = -1;
    r->placement.cpu = r->placement.numa_node = -1;
    cg_gpu_state_init(&r->gpu);
}

struct cg_run *cg_artifact_add_blank_run(struct cg_artifact *a)
{
    struct cg_run *p = realloc(a->runs, (a->n_runs + 1) * sizeof(*p));
    if (p == NULL)
        return NULL;
    a->runs = p;
    run_init(&a->runs[a->n_runs]);
    return &a->runs[a->n_runs++];
}

/* This process's part of every new run's identity: the host name and the time of its first
 * run, taken once; then a counter. */
static struct {
    char host[256];
    char started[64];
    int64_t seq;
} g_ident;

static int stamp_identity(struct cg_run_id *id)
{
    if (g_ident.started[0] == '\0') {
        struct timespec ts;
        struct tm tm;
        char day[24];
        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(g_ident.started, sizeof(g_ident.started), "%.20s.%09ldZ", day,
                 (long)ts.tv_nsec % 1000000000L);
        if (gethostname(g_ident.host, sizeof(g_ident.host) - 1) != 0 || g_ident.host[0] == '\0')
            snprintf(g_ident.host, sizeof(g_ident.host), "unknown-host");
    }
    id->host = cg_utf8_dup(g_ident.host);
    id->started_utc = strdup(g_ident.started);
    id->pid = (int64_t)getpid();
    id->seq = ++g_ident.seq;
    return id->host != NULL && id->started_utc != NULL ? 0 : CG_ENOMEM;
}

struct cg_run *cg_artifact_add_run(struct cg_artifact *a)
{
    struct cg_run *r = cg_artifact_add_blank_run(a);
    if (r == NULL)
        return NULL;
    if (stamp_identity(&r->id) != 0) {
        run_release(r);
        a->n_runs--;
        return NULL;
    }
    return r;
}

static bool same_steps(const struct cg_run *a, const struct cg_run *b)
{
    if (a->n_steps != b->n_steps)
        return false;
    for (size_t i = 0; i < a->n_steps; i++) {
        if (a->steps[i].wall_ns != b->steps[i].wall_ns || a->steps[i].tokens != b->steps[i].tokens)
            return false;
    }
    return true;
}

bool cg_run_same(const struct cg_run *a, const struct cg_run *b)
{
    const struct cg_run_id *x = &a->id, *y = &b->id;
    if (x->host == NULL || y->host == NULL)
        return same_steps(a, b);
    if (x->pid == y->pid && x->seq == y->seq && strcmp(x->host, y->host) == 0 &&
        strcmp(x->started_utc, y->started_utc) == 0)
        return true;
    if (x->digest != NULL && y->digest != NULL && !x->unsealed && !y->unsealed &&
        strcmp(x->digest, y->digest) == 0)
        return true;
    /* an identity nothing sealed may have been edited: the steps tell a copy */
    return (x->unsealed || y->unsealed) && same_steps(a, b);
}

static void fnv_bytes(uint64_t *h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) {
        *h ^= c[i];
        *h *= 0x100000001b3ULL;
    }
}

/* An integer as 8 bytes, least significant first (the same on every host). */
static void fnv_i64(uint64_t *h, int64_t v)
{
    unsigned char b[8];
    uint64_t u = (uint64_t)v;
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(u >> (8 * i));
    fnv_bytes(h, b, sizeof(b));
}

/* v as a reader of the artifact gets it back: cJSON writes a number of more than 15 digits with
 * 15 significant ones when that is within DBL_EPSILON of it (the 2^53 cap reads back as
 * 9007199254740990), so the digest is made of what is read, not of what was held. */
static int64_t as_read(int64_t v)
{
    if (v > -1000000000000000LL && v < 1000000000000000LL)
        return v;
    cJSON *n = cJSON_CreateNumber((double)v);
    char *text = n != NULL ? cJSON_PrintUnformatted(n) : NULL;
    double back = text != NULL ? strtod(text, NULL) : (double)v;
    cJSON_free(text);
    cJSON_Delete(n);
    return (int64_t)back;
}

void cg_run_digest(const struct cg_run *r, char *dst)
{
    dst[0] = '\0';
    if (r->id.host == NULL || r->id.started_utc == NULL)
        return;
    uint64_t h = 0xcbf29ce484222325ULL;
    fnv_bytes(&h, "canary-gate run 1", 18); /* the scheme's version, its NUL included */
    fnv_bytes(&h, r->id.host, strlen(r->id.host) + 1);
    fnv_i64(&h, r->id.pid);
    fnv_bytes(&h, r->id.started_utc, strlen(r->id.started_utc) + 1);
    fnv_i64(&h, r->id.seq);
    fnv_i64(&h, (int64_t)r->n_steps);
    for (size_t i = 0; i < r->n_steps; i++) {
        fnv_i64(&h, as_read(r->steps[i].wall_ns));
        fnv_i64(&h, as_read(r->steps[i].tokens));
    }
    snprintf(dst, CG_RUN_DIGEST_LEN, CG_RUN_DIGEST_SCHEME "%016llx", (unsigned long long)h);
}

int cg_artifact_check_runs(const struct cg_artifact *a, const char *name, struct cg_err *err)
{
    char digest[CG_RUN_DIGEST_LEN];
    for (size_t i = 0; i < a->n_runs; i++) {
        const struct cg_run_id *id = &a->runs[i].id;
        if (id->digest == NULL || id->unsealed)
            continue;
        cg_run_digest(&a->runs[i], digest);
        if (strcmp(digest, id->digest) != 0)
            return cg_err_set(err, CG_EINPUT,
                              "cannot read '%s': runs[%zu] was edited: its identity or steps do "
                              "not match its digest (runs[%zu].id.digest)",
                              name, i, i);
    }
    size_t x, y;
    if (!cg_artifact_find_same_runs(a, &x, &y))
        return 0;
    const struct cg_run_id *id = &a->runs[x].id;
    char who[320];
    if (id->host != NULL)
        snprintf(who, sizeof(who), "run %lld of canary-gate pid %lld on '%.128s' from %.40s",
                 (long long)id->seq, (long long)id->pid, id->host, id->started_utc);
    else
        snprintf(who, sizeof(who), "no identity recorded; every step's time is the same");
    return cg_err_set(err, CG_EINPUT,
                      "cannot read '%s': runs[%zu] is a copy of runs[%zu] (%s): a run may be "
                      "counted only once",
                      name, y, x, who);
}

bool cg_artifact_find_same_runs(const struct cg_artifact *a, size_t *earlier, size_t *later)
{
    /* Quadratic, over runs (tens to a few hundred), not steps. */
    for (size_t k = 1; k < a->n_runs; k++) {
        for (size_t i = 0; i < k; i++) {
            if (cg_run_same(&a->runs[i], &a->runs[k])) {
                *earlier = i;
                *later = k;
                return true;
            }
        }
    }
    return false;
}

bool cg_artifacts_share_run(const struct cg_artifact *a, const struct cg_artifact *b, size_t *in_a,
                            size_t *in_b)
{
    for (size_t k = 0; k < b->n_runs; k++)
        for (size_t i = 0; i < a->n_runs; i++)
            if (cg_run_same(&a->runs[i], &b->runs[k])) {
                *in_a = i;
                *in_b = k;
                return true;
            }
    return false;
}

/* Grows *arr (elem bytes each) so that index n fits. The capacity is implicit: 8, then doubling,
 * so a reallocation happens exactly when n is 0 or a power of two from 8 on. 0 or CG_ENOMEM. */
static int grow(void **arr, size_t n, size_t elem)
{
    bool full = n == 0 || (n >= 8 && (n & (n - 1)) == 0);
    if (!full)
        return 0;
    size_t cap = n == 0 ? 8 : n * 2;
    void *p = realloc(*arr, cap * elem);
    if (p == NULL)
        return CG_ENOMEM;
    *arr = p;
    return 0;
}

int cg_run_add_step(struct cg_run *run, int64_t wall_ns, int64_t tokens, int64_t gpu_busy_ns)
{
    if (grow((void **)&run->steps, run->n_steps, sizeof(*run->steps)) != 0)
        return CG_ENOMEM;
    struct cg_step *s = &run->steps[run->n_steps++];
    s->wall_ns = wall_ns;
    s->tokens = tokens;
    s->gpu_busy_ns = gpu_busy_ns;
    s->loss = NAN;
    s->sync_ns = s->compute_ns = s->copy_ns = s->copy_hidden_ns = -1;
    for (int c = 0; c < CG_COUNT_N; c++)
        s->counts[c] = -1;
    return 0;
}

int cg_run_add_op(struct cg_run *run, const char *name, const char *family, enum cg_op_kind kind,
                  int64_t calls, int64_t total_ns)
{
    if (grow((void **)&run->ops, run->n_ops, sizeof(*run->ops)) != 0)
        return CG_ENOMEM;
    /* Names come from the canary's kernels and ranges: any bytes, repaired to UTF-8 here. */
    char *n = cg_utf8_dup(name);
    char *f = cg_utf8_dup(family != NULL ? family : name);
    if (n == NULL || f == NULL) {
        free(n);
        free(f);
        return CG_ENOMEM;
    }
    struct cg_op *op = &run->ops[run->n_ops++];
    op->name = n;
    op->family = f;
    op->kind = kind;
    op->calls = calls;
    op->total_ns = total_ns;
    return 0;
}

int cg_run_add_place(struct cg_run *run, int count, bool after, const char *range, int64_t calls)
{
    for (size_t i = 0; i < run->n_places; i++) {
        struct cg_count_place *p = &run->places[i];
        if (p->count == count && p->after == after && strcmp(p->range, range) == 0) {
            const int64_t cap = (int64_t)1 << 53; /* what the artifact holds exactly */
            p->calls = p->calls > cap - calls ? cap : p->calls + calls;
            return 0;
        }
    }
    if (run->n_places >= CG_ARTIFACT_MAX_PLACES)
        return CG_EINPUT;
    if (grow((void **)&run->places, run->n_places, sizeof(*run->places)) != 0)
        return CG_ENOMEM;
    char *r = cg_utf8_dup(range); /* the canary's range names: any bytes, repaired here */
    if (r == NULL)
        return CG_ENOMEM;
    run->places[run->n_places++] = (struct cg_count_place){count, after, r, calls};
    return 0;
}

int cg_run_add_warning(struct cg_run *run, const char *warning, size_t max)
{
    for (size_t i = 0; i < run->n_warnings; i++)
        if (strcmp(run->warnings[i], warning) == 0)
            return 0;
    if (run->n_warnings >= max)
        return 0;
    if (grow((void **)&run->warnings, run->n_warnings, sizeof(*run->warnings)) != 0)
        return CG_ENOMEM;
    char *w = strdup(warning);
    if (w == NULL)
        return CG_ENOMEM;
    run->warnings[run->n_warnings++] = w;
    return 0;
}

void cg_run_summarize(struct cg_run *run)
{
    struct cg_run_summary *s = &run->summary;
    s->step_time_mean_ns = s->step_time_median_ns = s->step_time_p95_ns = NAN;
    s->tokens_per_sec = NAN;
    size_t n = run->n_steps;
    if (n == 0)
        return;
    double *v = malloc(n * sizeof(*v)); /* step times in ns: exact as doubles below 2^53 */
    if (v == NULL)
        return;
    double mean = 0.0, wall_s = 0.0;
    double tokens = 0.0; /* a double: up to 2^53 per step over millions of steps */
    bool have_tokens = false;
    for (size_t i = 0; i < n; i++) {
        v[i] = (double)run->steps[i].wall_ns;
        mean += (v[i] - mean) / (double)(i + 1);
        wall_s += v[i] * 1e-9;
        if (run->steps[i].tokens >= 0) {
            tokens += (double)run->steps[i].tokens;
            have_tokens = true;
        }
    }
    qsort(v, n, sizeof(*v), cg_stats_cmp_double);
    s->step_time_mean_ns = mean;
    s->step_time_median_ns = cg_stats_sorted_quantile(v, n, 0.5);
    s->step_time_p95_ns = cg_stats_sorted_quantile(v, n, 0.95);
    if (have_tokens && wall_s > 0)
        s->tokens_per_sec = tokens / wall_s;
    free(v);
}

int64_t cg_run_tokens(const struct cg_run *run)
{
    int64_t tokens = -1;
    for (size_t i = 0; i < run->n_steps; i++)
        if (run->steps[i].tokens >= 0)
            tokens = (tokens < 0 ? 0 : tokens) + run->steps[i].tokens;
    return tokens;
}

double cg_run_energy_per_token(const struct cg_run *run)
{
    int64_t tokens = cg_run_tokens(run);
    if (!(run->gpu.energy_j >= 0) || tokens <= 0)
        return NAN;
    return run->gpu.energy_j / (double)tokens;
}

static int dup_str(char **dst, const char *src)
{
    *dst = NULL;
    if (src == NULL)
        return 0;
    *dst = strdup(src);
    return *dst != NULL ? 0 : CG_ENOMEM;
}

int cg_run_code_add_file(struct cg_run_code *code, const char *path, const char *hash)
{
    struct cg_code_file *p = realloc(code->files, (code->n_files + 1) * sizeof(*p));
    if (p == NULL)
        return CG_ENOMEM;
    code->files = p;
    struct cg_code_file *f = &p[code->n_files];
    if (dup_str(&f->path, path) != 0 || dup_str(&f->hash, hash) != 0) {
        free(f->path);
        return CG_ENOMEM;
    }
    code->n_files++;
    return 0;
}

int cg_run_code_copy(struct cg_run_code *dst, const struct cg_run_code *src)
{
    if (dup_str(&dst->git_commit, src->git_commit) != 0)
        return CG_ENOMEM;
    for (size_t i = 0; i < src->n_files; i++)
        if (cg_run_code_add_file(dst, src->files[i].path, src->files[i].hash) != 0)
            return CG_ENOMEM;
    return 0;
}

int cg_artifact_append_runs(struct cg_artifact *dst, const struct cg_artifact *src)
{
    for (size_t i = 0; i < src->n_runs; i++) {
        const struct cg_run *from = &src->runs[i];
        struct cg_run *to = cg_artifact_add_blank_run(dst);
        if (to == NULL)
            return CG_ENOMEM;
        to->id.pid = from->id.pid;
        to->id.unsealed = from->id.unsealed;
        if (dup_str(&to->id.digest, from->id.digest) != 0)
            return CG_ENOMEM;
        to->id.seq = from->id.seq;
        if (dup_str(&to->id.host, from->id.host) != 0 ||
            dup_str(&to->id.started_utc, from->id.started_utc) != 0 ||
            cg_run_code_copy(&to->code, &from->code) != 0 ||
            dup_str(&to->placement.cpus, from->placement.cpus) != 0)
            return CG_ENOMEM;
        to->placement.cpu = from->placement.cpu;
        to->placement.numa_node = from->placement.numa_node;
        if (cg_ranks_copy(&to->ranks, from->ranks, from->n_ranks) != 0)
            return CG_ENOMEM;
        to->n_ranks = from->n_ranks;
        to->ranks_recorded = from->ranks_recorded;
        if (cg_gpu_state_copy(&to->gpu, &from->gpu) != 0)
            return CG_ENOMEM;
        to->summary = from->summary;
        to->dropped_records = from->dropped_records;
        to->zero_timestamp_records = from->zero_timestamp_records;
        to->outside_step_records = from->outside_step_records;
        to->inside_step_records = from->inside_step_records;
        to->late_memory_records = from->late_memory_records;
        to->cupti_overhead_ns = from->cupti_overhead_ns;
        to->stopped_after_steps = from->stopped_after_steps;
        to->stray_steps_nested = from->stray_steps_nested;
        to->stray_steps_other_threads = from->stray_steps_other_threads;
        for (size_t k = 0; k < from->n_warnings; k++)
            if (cg_run_add_warning(to, from->warnings[k], CG_ARTIFACT_MAX_WARNINGS) != 0)
                return CG_ENOMEM;
        to->places_measured = from->places_measured;
        for (size_t k = 0; k < from->n_places; k++) {
            const struct cg_count_place *pl = &from->places[k];
            if (cg_run_add_place(to, pl->count, pl->after, pl->range, pl->calls) == CG_ENOMEM)
                return CG_ENOMEM;
        }
        for (size_t k = 0; k < from->n_steps; k++) {
            const struct cg_step *s = &from->steps[k];
            if (cg_run_add_step(to, s->wall_ns, s->tokens, s->gpu_busy_ns) != 0)
                return CG_ENOMEM;
            to->steps[to->n_steps - 1] = *s;
        }
        for (size_t k = 0; k < from->n_ops; k++) {
            const struct cg_op *op = &from->ops[k];
            if (cg_run_add_op(to, op->name, op->family, op->kind, op->calls, op->total_ns) != 0)
                return CG_ENOMEM;
        }
    }
    return 0;
}

int cg_artifact_copy_header(struct cg_artifact *dst, const struct cg_artifact *src)
{
    const struct cg_env *e = &src->env;
    struct cg_env *d = &dst->env;
    dst->schema_version = src->schema_version;
    dst->gpu_available = src->gpu_available;
    dst->cuda_initialised = src->cuda_initialised;
    dst->settings.steps = src->settings.steps;
    dst->settings.warmup = src->settings.warmup;
    dst->settings.runs = src->settings.runs;
    dst->settings.tokens_per_step = src->settings.tokens_per_step;
    dst->settings.step_optimizer = src->settings.step_optimizer;
    dst->settings.flops_per_token = src->settings.flops_per_token;
    dst->settings.peak_flop_per_clock = src->settings.peak_flop_per_clock;
    if (cg_gpu_env_copy(&dst->env.gpu_env, &src->env.gpu_env) != 0 ||
        dup_str(&dst->settings.precision, src->settings.precision) != 0)
        return CG_ENOMEM;
    d->gpu_count = e->gpu_count;
    int rc =
        dup_str(&dst->gpu_reason, src->gpu_reason) | dup_str(&dst->created_utc, src->created_utc) |
        dup_str(&dst->settings.step_range, src->settings.step_range) |
        dup_str(&dst->settings.steps_from, src->settings.steps_from) |
        dup_str(&dst->settings.comm_kernels, src->settings.comm_kernels) |
        dup_str(&d->gpu_model, e->gpu_model) | dup_str(&d->driver_version, e->driver_version) |
        dup_str(&d->cuda_version, e->cuda_version) | dup_str(&d->cupti_status, e->cupti_status) |
        dup_str(&d->cupti_library, e->cupti_library) | dup_str(&d->cpu_model, e->cpu_model) |
        dup_str(&d->tool_version, e->tool_version) | dup_str(&d->canary_id, e->canary_id) |
        dup_str(&d->canary_hash, e->canary_hash);
    if (rc != 0)
        return CG_ENOMEM;
    if (e->n_canary_command > 0) {
        d->canary_command = calloc(e->n_canary_command, sizeof(char *));
        if (d->canary_command == NULL)
            return CG_ENOMEM;
        d->n_canary_command = e->n_canary_command;
        for (size_t i = 0; i < e->n_canary_command; i++) {
            if (dup_str(&d->canary_command[i], e->canary_command[i]) != 0)
                return CG_ENOMEM;
        }
    }
    return 0;
}

/* ---- comparing identities ---------------------------------------------------------------- */

static bool str_eq(const char *a, const char *b)
{
    if (a == NULL || b == NULL)
        return a == b;
    return strcmp(a, b) == 0;
}

const char *cg_env_machine_diff(const struct cg_env *a, const struct cg_env *b, bool gpu)
{
    if (gpu) {
        if (!str_eq(a->gpu_model, b->gpu_model))
            return "environment.gpu_model";
        if (a->gpu_count != b->gpu_count)
            return "environment.gpu_count";
        if (!str_eq(a->driver_version, b->driver_version))
            return "environment.driver_version";
        if (!str_eq(a->cuda_version, b->cuda_version))
            return "environment.cuda_version";
        return NULL;
    }
    if (!str_eq(a->cpu_model, b->cpu_model))
        return "environment.cpu_model";
    return NULL;
}

int cg_artifact_shape(const struct cg_artifact *a, char *out, size_t cap, size_t *first,
                      size_t *other)
{
    char base[CG_SHAPE_MAX] = "", shape[CG_SHAPE_MAX];
    *first = *other = a->n_runs;
    for (size_t i = 0; i < a->n_runs; i++) {
        const struct cg_run *r = &a->runs[i];
        if (r->n_ranks == 0 && !r->ranks_recorded)
            continue; /* unknown: written before runs recorded their ranks */
        if (cg_ranks_shape(r->ranks, r->n_ranks, shape, sizeof(shape)) != 0)
            return CG_ENOMEM;
        if (*first == a->n_runs) {
            memcpy(base, shape, sizeof(base));
            *first = i;
        } else if (strcmp(shape, base) != 0) {
            *other = i;
            break;
        }
    }
    if (cap > 0)
        snprintf(out, cap, "%s", base);
    return 0;
}

static const char *canary_diff(const struct cg_artifact *a, const struct cg_artifact *b,
                               bool steps);

const char *cg_artifact_canary_diff(const struct cg_artifact *a, const struct cg_artifact *b)
{
    return canary_diff(a, b, true);
}

const char *cg_artifact_canary_diff_but_steps(const struct cg_artifact *a,
                                              const struct cg_artifact *b)
{
    return canary_diff(a, b, false);
}

bool cg_settings_step_optimizer_differs(const struct cg_settings *a, const struct cg_settings *b)
{
    if (a->step_optimizer <= 0 || b->step_optimizer <= 0 || a->step_optimizer == b->step_optimizer)
        return false; /* unknown on a side (older): taken as the other's */
    if ((a->steps_from != NULL && strcmp(a->steps_from, "optimizer") != 0) ||
        (b->steps_from != NULL && strcmp(b->steps_from, "optimizer") != 0))
        return false; /* a side's steps are its own ranges: no optimizer counted there */
    return true;
}

/* The first field in which a and b differ as canaries; steps false: step_range, steps_from and
 * step_optimizer are not compared. */
static const char *canary_diff(const struct cg_artifact *a, const struct cg_artifact *b, bool steps)
{
    const struct cg_env *x = &a->env, *y = &b->env;
    if (x->n_canary_command != y->n_canary_command)
        return "environment.canary_command";
    for (size_t i = 0; i < x->n_canary_command; i++) {
        if (!str_eq(x->canary_command[i], y->canary_command[i]))
            return "environment.canary_command";
    }
    if (a->settings.steps != b->settings.steps)
        return "settings.steps";
    if (a->settings.warmup != b->settings.warmup)
        return "settings.warmup";
    if (steps && !str_eq(a->settings.step_range, b->settings.step_range))
        return "settings.step_range";
    if (steps && a->settings.steps_from != NULL && b->settings.steps_from != NULL &&
        strcmp(a->settings.steps_from, b->settings.steps_from) != 0)
        return "settings.steps_from";
    if (steps && cg_settings_step_optimizer_differs(&a->settings, &b->settings))
        return "settings.step_optimizer";
    if (a->settings.tokens_per_step != b->settings.tokens_per_step)
        return "settings.tokens_per_step";
    if (!str_eq(a->settings.comm_kernels, b->settings.comm_kernels))
        return "settings.comm_kernels";
    /* what else the identity holds; an artifact without one (older) is unknown: the command
     * and settings above decide. canary_hash is never compared: an older one hashed the
     * contents of the files the command names, the code under test */
    if (x->canary_id != NULL && y->canary_id != NULL && strcmp(x->canary_id, y->canary_id) != 0)
        return "environment.canary_id";
    return NULL;
}
