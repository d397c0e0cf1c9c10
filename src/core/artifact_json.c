/*
 * artifact_json: the run artifact as JSON (see artifact.h and docs/artifact.md).
 *
 * Parsing walks the cJSON tree with small typed getters that name the field path of the first
 * problem ("runs[2].steps[5].wall_ns: must be a positive integer"). Integers are read from JSON
 * numbers and must be whole and within +-2^53. Not thread-safe.
 */
#include "artifact.h"

#include "cg_version.h"
#include "fsutil.h"
#include "jsonutil.h"
#include "utf8.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_EXACT_INT 9007199254740992.0 /* 2^53 */

/* ---- parsing ----------------------------------------------------------------------------- */

struct parser {
    const char *name; /* file name for messages */
    struct cg_err *err;
};

static int bad(struct parser *p, const char *path, const char *problem)
{
    return cg_err_set(p->err, CG_EINPUT, "cannot read '%s': %s: %s", p->name, path, problem);
}

/* Looks up key in obj; path is the parent's path, used in messages. Missing → error unless
 * optional (then *out = NULL). A JSON null counts as missing for optional fields only. */
static int field(struct parser *p, const cJSON *obj, const char *parent, const char *key,
                 bool optional, const cJSON **out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    *out = v;
    if (v != NULL && !(optional && cJSON_IsNull(v)))
        return 0;
    *out = NULL;
    if (optional)
        return 0;
    char path[256];
    snprintf(path, sizeof(path), "%s%s%s", parent, parent[0] ? "." : "", key);
    return bad(p, path, "missing");
}

static void join_path(char *dst, size_t n, const char *parent, const char *key)
{
    int w = snprintf(dst, n, "%s%s%s", parent, parent[0] ? "." : "", key);
    if (w < 0 || (size_t)w >= n)
        dst[n - 1] = '\0';
}

/* bad() for the field key of parent: its full path is written only for the message, never for
 * the fields that are read without a problem (hundreds of thousands in a large artifact). */
static int bad_field(struct parser *p, const char *parent, const char *key, const char *problem)
{
    char path[256];
    join_path(path, sizeof(path), parent, key);
    return bad(p, path, problem);
}

/* Reads an integer field >= min. Optional fields default to -1 when missing or null. */
static int get_int(struct parser *p, const cJSON *obj, const char *parent, const char *key,
                   bool optional, int64_t min, int64_t *out)
{
    const cJSON *v;
    *out = -1;
    if (field(p, obj, parent, key, optional, &v) != 0)
        return CG_EINPUT;
    if (v == NULL)
        return 0;
    if (!cJSON_IsNumber(v))
        return bad_field(p, parent, key, "must be a number");
    double d = v->valuedouble;
    if (!isfinite(d) || d != floor(d) || fabs(d) > MAX_EXACT_INT)
        return bad_field(p, parent, key, "must be a whole number");
    if (d < (double)min) {
        char msg[64];
        snprintf(msg, sizeof(msg), "must be at least %lld", (long long)min);
        return bad_field(p, parent, key, msg);
    }
    *out = (int64_t)d;
    return 0;
}

/* Reads a finite number, negative or not; optional fields default to NAN. */
static int get_real(struct parser *p, const cJSON *obj, const char *parent, const char *key,
                    bool optional, double *out)
{
    const cJSON *v;
    *out = NAN;
    if (field(p, obj, parent, key, optional, &v) != 0)
        return CG_EINPUT;
    if (v == NULL)
        return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return bad_field(p, parent, key, "must be a finite number");
    *out = v->valuedouble;
    return 0;
}

/* Reads a finite non-negative number; optional fields default to NAN. */
static int get_num(struct parser *p, const cJSON *obj, const char *parent, const char *key,
                   bool optional, double *out)
{
    if (get_real(p, obj, parent, key, optional, out) != 0)
        return CG_EINPUT;
    if (*out < 0)
        return bad_field(p, parent, key, "must not be negative");
    return 0;
}

/* Reads a string (copied); optional fields default to NULL. */
static int get_str(struct parser *p, const cJSON *obj, const char *parent, const char *key,
                   bool optional, char **out)
{
    const cJSON *v;
    *out = NULL;
    if (field(p, obj, parent, key, optional, &v) != 0)
        return CG_EINPUT;
    if (v == NULL)
        return 0;
    if (!cJSON_IsString(v))
        return bad_field(p, parent, key, "must be a string");
    *out = cg_utf8_dup(v->valuestring);
    return *out != NULL ? 0 : cg_err_set(p->err, CG_ENOMEM, "out of memory");
}

static int parse_env(struct parser *p, const cJSON *root, struct cg_artifact *a)
{
    const cJSON *env;
    struct cg_env *e = &a->env;
    if (field(p, root, "", "environment", false, &env) != 0)
        return CG_EINPUT;
    if (!cJSON_IsObject(env))
        return bad(p, "environment", "must be an object");
    const char *pe = "environment";
    if (get_str(p, env, pe, "gpu_model", true, &e->gpu_model) ||
        get_int(p, env, pe, "gpu_count", false, 0, &e->gpu_count) ||
        get_str(p, env, pe, "driver_version", true, &e->driver_version) ||
        get_str(p, env, pe, "cuda_version", true, &e->cuda_version) ||
        get_str(p, env, pe, "cupti_status", true, &e->cupti_status) ||
        get_str(p, env, pe, "cupti_library", true, &e->cupti_library) ||
        get_str(p, env, pe, "cpu_model", true, &e->cpu_model) ||
        get_str(p, env, pe, "tool_version", true, &e->tool_version) ||
        get_str(p, env, pe, "canary_id", true, &e->canary_id) ||
        get_str(p, env, pe, "canary_hash", true, &e->canary_hash))
        return CG_EINPUT;
    const cJSON *gs = cJSON_GetObjectItemCaseSensitive(env, "gpu_state");
    if (gs != NULL && !cJSON_IsNull(gs)) {
        char problem[256];
        int rc = cg_gpu_env_parse(gs, "environment.gpu_state", &e->gpu_env, problem,
                                  sizeof(problem));
        if (rc == CG_ENOMEM)
            return cg_err_set(p->err, CG_ENOMEM, "out of memory");
        if (rc != 0)
            return cg_err_set(p->err, CG_EINPUT, "cannot read '%s': %s", p->name, problem);
    }
    const cJSON *cmd;
    if (field(p, env, pe, "canary_command", true, &cmd) != 0)
        return CG_EINPUT;
    if (cmd == NULL)
        return 0;
    if (!cJSON_IsArray(cmd))
        return bad(p, "environment.canary_command", "must be an array of strings");
    size_t n = (size_t)cJSON_GetArraySize(cmd);
    e->canary_command = calloc(n ? n : 1, sizeof(char *));
    if (e->canary_command == NULL)
        return cg_err_set(p->err, CG_ENOMEM, "out of memory");
    const cJSON *arg;
    cJSON_ArrayForEach(arg, cmd)
    {
        if (!cJSON_IsString(arg))
            return bad(p, "environment.canary_command", "must be an array of strings");
        e->canary_command[e->n_canary_command] = cg_utf8_dup(arg->valuestring);
        if (e->canary_command[e->n_canary_command++] == NULL)
            return cg_err_set(p->err, CG_ENOMEM, "out of memory");
    }
    return 0;
}

static int parse_settings(struct parser *p, const cJSON *root, struct cg_artifact *a)
{
    const cJSON *s;
    if (field(p, root, "", "settings", false, &s) != 0)
        return CG_EINPUT;
    if (!cJSON_IsObject(s))
        return bad(p, "settings", "must be an object");
    struct cg_settings *st = &a->settings;
    if (get_int(p, s, "settings", "steps", false, 1, &st->steps) ||
        get_int(p, s, "settings", "warmup", false, 0, &st->warmup) ||
        get_int(p, s, "settings", "runs", false, 1, &st->runs) ||
        get_str(p, s, "settings", "step_range", true, &st->step_range) ||
        get_str(p, s, "settings", "steps_from", true, &st->steps_from) ||
        get_int(p, s, "settings", "step_optimizer", true, 1, &st->step_optimizer) ||
        get_str(p, s, "settings", "comm_kernels", true, &st->comm_kernels) ||
        get_int(p, s, "settings", "tokens_per_step", true, 0, &st->tokens_per_step) ||
        get_int(p, s, "settings", "flops_per_token", true, 1, &st->flops_per_token) ||
        get_str(p, s, "settings", "precision", true, &st->precision) ||
        get_real(p, s, "settings", "peak_flop_per_clock", true, &st->peak_flop_per_clock))
        return CG_EINPUT;
    if (st->precision != NULL && !cg_gpu_precision_valid(st->precision))
        return bad(p, "settings.precision", "must be fp32, tf32, bf16, fp16, fp8 or null");
    if (st->steps_from != NULL && strcmp(st->steps_from, "nvtx") != 0 &&
        strcmp(st->steps_from, "optimizer") != 0)
        return bad(p, "settings.steps_from", "must be \"nvtx\", \"optimizer\" or null");
    if (st->step_optimizer > CG_STEP_OPTIMIZER_MAX)
        return bad(p, "settings.step_optimizer", "must be at most 1000");
    return 0;
}

/* A step's "counts": an object of count names (count.h) and whole numbers >= 0; absent when no
 * count is known. A name this version does not know (a newer one's count) is ignored. */
static int parse_counts(struct parser *p, const cJSON *counts, const char *sp, struct cg_step *s)
{
    char path[160];
    snprintf(path, sizeof(path), "%s.counts", sp);
    if (counts == NULL)
        return 0;
    if (!cJSON_IsObject(counts))
        return bad(p, path, "must be an object");
    const cJSON *c;
    cJSON_ArrayForEach(c, counts)
    {
        int which;
        if (cg_count_parse(c->string, &which) != 0 || which >= CG_COUNT_N)
            continue; /* a newer canary-gate's count, as any unknown field: not read */
        if (get_int(p, counts, path, c->string, false, 0, &s->counts[which]))
            return CG_EINPUT;
    }
    return 0;
}

static int parse_steps(struct parser *p, const cJSON *steps, const char *rp, struct cg_run *r)
{
    char path[128];
    snprintf(path, sizeof(path), "%s.steps", rp);
    if (!cJSON_IsArray(steps))
        return bad(p, path, "must be an array");
    if (cJSON_GetArraySize(steps) == 0)
        return bad(p, path, "is empty: the run measured no steps");
    size_t i = 0;
    const cJSON *st;
    cJSON_ArrayForEach(st, steps)
    {
        snprintf(path, sizeof(path), "%s.steps[%zu]", rp, i++);
        if (!cJSON_IsObject(st))
            return bad(p, path, "must be an object");
        int64_t wall, tokens, busy, sync, compute, copy, hidden;
        double loss;
        if (get_int(p, st, path, "wall_ns", false, 1, &wall) ||
            get_int(p, st, path, "tokens", true, 0, &tokens) ||
            get_int(p, st, path, "gpu_busy_ns", true, 0, &busy) ||
            get_real(p, st, path, "loss", true, &loss) ||
            get_int(p, st, path, "sync_ns", true, 0, &sync) ||
            get_int(p, st, path, "compute_ns", true, 0, &compute) ||
            get_int(p, st, path, "copy_ns", true, 0, &copy) ||
            get_int(p, st, path, "copy_hidden_ns", true, 0, &hidden))
            return CG_EINPUT;
        if (compute >= 0 && (busy < 0 || compute > busy))
            return bad(p, path, "compute_ns needs a gpu_busy_ns at least as large");
        if (hidden >= 0 && (copy < 0 || hidden > copy))
            return bad(p, path, "copy_hidden_ns needs a copy_ns at least as large");
        if (cg_run_add_step(r, wall, tokens, busy) != 0)
            return cg_err_set(p->err, CG_ENOMEM, "out of memory");
        struct cg_step *added = &r->steps[r->n_steps - 1];
        added->loss = loss;
        added->sync_ns = sync;
        added->compute_ns = compute;
        added->copy_ns = copy;
        added->copy_hidden_ns = hidden;
        if (parse_counts(p, cJSON_GetObjectItemCaseSensitive(st, "counts"), path, added) != 0)
            return CG_EINPUT;
    }
    return 0;
}

static int parse_ops(struct parser *p, const cJSON *ops, const char *rp, struct cg_run *r)
{
    char path[128];
    snprintf(path, sizeof(path), "%s.ops", rp);
    if (!cJSON_IsArray(ops))
        return bad(p, path, "must be an array");
    size_t i = 0;
    const cJSON *op;
    cJSON_ArrayForEach(op, ops)
    {
        snprintf(path, sizeof(path), "%s.ops[%zu]", rp, i++);
        if (!cJSON_IsObject(op))
            return bad(p, path, "must be an object");
        const cJSON *name, *family, *kind;
        int64_t calls, total;
        if (field(p, op, path, "name", false, &name) || field(p, op, path, "kind", false, &kind) ||
            field(p, op, path, "family", true, &family) ||
            get_int(p, op, path, "calls", false, 0, &calls) ||
            get_int(p, op, path, "total_ns", false, 0, &total))
            return CG_EINPUT;
        if (!cJSON_IsString(name) || name->valuestring[0] == '\0')
            return bad(p, path, "name must be a non-empty string");
        if (family != NULL && !cJSON_IsString(family))
            return bad(p, path, "family must be a string");
        enum cg_op_kind k;
        if (!cJSON_IsString(kind) || cg_op_kind_parse(kind->valuestring, &k) != 0)
            return bad(p, path, "kind must be one of kernel, memcpy, memset, range");
        if (cg_run_add_op(r, name->valuestring, family ? family->valuestring : NULL, k, calls,
                          total) != 0)
            return cg_err_set(p->err, CG_ENOMEM, "out of memory");
    }
    return 0;
}

static int parse_summary(struct parser *p, const cJSON *run, const char *rp, struct cg_run *r)
{
    const cJSON *s;
    char path[128];
    snprintf(path, sizeof(path), "%s.summary", rp);
    if (field(p, run, rp, "summary", false, &s) != 0)
        return CG_EINPUT;
    if (!cJSON_IsObject(s))
        return bad(p, path, "must be an object");
    struct cg_run_summary *m = &r->summary;
    if (get_num(p, s, path, "step_time_mean_ns", false, &m->step_time_mean_ns) ||
        get_num(p, s, path, "step_time_median_ns", false, &m->step_time_median_ns) ||
        get_num(p, s, path, "step_time_p95_ns", false, &m->step_time_p95_ns) ||
        get_num(p, s, path, "tokens_per_sec", true, &m->tokens_per_sec) ||
        get_int(p, s, path, "peak_device_bytes", true, 0, &m->peak_device_bytes) ||
        get_int(p, s, path, "peak_host_rss_bytes", true, 0, &m->peak_host_rss_bytes))
        return CG_EINPUT;
    /* The summary must agree with the steps it summarises: a hand-edited or corrupted summary
     * would otherwise be compared while the steps say something else. */
    double mean = m->step_time_mean_ns, median = m->step_time_median_ns, p95 = m->step_time_p95_ns;
    double rate = m->tokens_per_sec;
    cg_run_summarize(r);
    const double tol = 1e-6;
    if (fabs(mean - m->step_time_mean_ns) > tol * m->step_time_mean_ns + 1.0 ||
        fabs(median - m->step_time_median_ns) > tol * m->step_time_median_ns + 1.0 ||
        fabs(p95 - m->step_time_p95_ns) > tol * m->step_time_p95_ns + 1.0)
        return bad(p, path, "step times do not match the run's steps");
    /* Unknown exactly when no step has tokens; else tokens over the steps' time. */
    if (isnan(rate) != isnan(m->tokens_per_sec) ||
        (!isnan(rate) && fabs(rate - m->tokens_per_sec) > tol * m->tokens_per_sec + 1e-9))
        return bad(p, path, "tokens_per_sec does not match the run's steps");
    return 0;
}

/* The run's identity: optional (artifacts written before it have none), whole when present. */
static int parse_id(struct parser *p, const cJSON *run, const char *rp, struct cg_run *r)
{
    const cJSON *id;
    char path[96];
    if (field(p, run, rp, "id", true, &id) != 0)
        return CG_EINPUT;
    if (id == NULL)
        return 0;
    snprintf(path, sizeof(path), "%s.id", rp);
    if (!cJSON_IsObject(id))
        return bad(p, path, "must be an object");
    struct cg_run_id *x = &r->id;
    if (get_str(p, id, path, "host", false, &x->host) ||
        get_int(p, id, path, "pid", false, 0, &x->pid) ||
        get_str(p, id, path, "started_utc", false, &x->started_utc) ||
        get_int(p, id, path, "seq", false, 1, &x->seq) ||
        get_str(p, id, path, "digest", true, &x->digest))
        return CG_EINPUT;
    /* none, or another scheme (a newer tool's): nothing this tool can check */
    x->unsealed = x->digest == NULL || strncmp(x->digest, CG_RUN_DIGEST_SCHEME,
                                               strlen(CG_RUN_DIGEST_SCHEME)) != 0;
    return 0;
}

/* runs[].code: optional (absent or null: not recorded), {"git_commit", "files": [{"path",
 * "hash"}]}. */
static int parse_code(struct parser *p, const cJSON *run, const char *rp, struct cg_run *r)
{
    const cJSON *code, *files, *f;
    char path[128];
    if (field(p, run, rp, "code", true, &code) != 0)
        return CG_EINPUT;
    if (code == NULL)
        return 0;
    snprintf(path, sizeof(path), "%s.code", rp);
    if (!cJSON_IsObject(code))
        return bad(p, path, "must be an object");
    if (get_str(p, code, path, "git_commit", true, &r->code.git_commit) ||
        field(p, code, path, "files", true, &files) != 0)
        return CG_EINPUT;
    if (files == NULL)
        return 0;
    if (!cJSON_IsArray(files))
        return bad(p, path, "files must be an array");
    size_t i = 0;
    cJSON_ArrayForEach(f, files)
    {
        char fp[160];
        char *name = NULL, *hash = NULL;
        snprintf(fp, sizeof(fp), "%s.files[%zu]", path, i++);
        if (!cJSON_IsObject(f))
            return bad(p, fp, "must be an object");
        int rc = get_str(p, f, fp, "path", false, &name);
        if (rc == 0)
            rc = get_str(p, f, fp, "hash", false, &hash);
        if (rc == 0 && cg_run_code_add_file(&r->code, name, hash) != 0)
            rc = cg_err_set(p->err, CG_ENOMEM, "out of memory");
        free(name);
        free(hash);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* runs[].placement: optional (absent or null: not recorded), {"cpus", "cpu", "numa_node"}. */
static int parse_placement(struct parser *p, const cJSON *run, const char *rp, struct cg_run *r)
{
    const cJSON *pl;
    char path[128];
    if (field(p, run, rp, "placement", true, &pl) != 0)
        return CG_EINPUT;
    if (pl == NULL)
        return 0;
    snprintf(path, sizeof(path), "%s.placement", rp);
    if (!cJSON_IsObject(pl))
        return bad(p, path, "must be an object");
    if (get_str(p, pl, path, "cpus", true, &r->placement.cpus) ||
        get_int(p, pl, path, "cpu", true, 0, &r->placement.cpu) ||
        get_int(p, pl, path, "numa_node", true, 0, &r->placement.numa_node))
        return CG_EINPUT;
    return 0;
}

/* runs[].warnings: optional, an array of strings (at most CG_ARTIFACT_MAX_WARNINGS kept). */
static int parse_warnings(struct parser *p, const cJSON *run, const char *rp, struct cg_run *r)
{
    const cJSON *w, *item;
    char path[128];
    if (field(p, run, rp, "warnings", true, &w) != 0)
        return CG_EINPUT;
    if (w == NULL)
        return 0;
    snprintf(path, sizeof(path), "%s.warnings", rp);
    if (!cJSON_IsArray(w))
        return bad(p, path, "must be an array of strings");
    cJSON_ArrayForEach(item, w)
    {
        if (!cJSON_IsString(item))
            return bad(p, path, "must be an array of strings");
        if (cg_run_add_warning(r, item->valuestring, CG_ARTIFACT_MAX_WARNINGS) != 0)
            return cg_err_set(p->err, CG_ENOMEM, "out of memory");
    }
    return 0;
}

/* runs[].count_places: optional (absent or null: not measured), an array of {count, where,
 * range, calls}. */
static int parse_places(struct parser *p, const cJSON *run, const char *rp, struct cg_run *r)
{
    const cJSON *places, *pl;
    char path[128];
    if (field(p, run, rp, "count_places", true, &places) != 0)
        return CG_EINPUT;
    if (places == NULL)
        return 0;
    snprintf(path, sizeof(path), "%s.count_places", rp);
    if (!cJSON_IsArray(places))
        return bad(p, path, "must be an array");
    r->places_measured = true;
    size_t i = 0;
    cJSON_ArrayForEach(pl, places)
    {
        snprintf(path, sizeof(path), "%s.count_places[%zu]", rp, i++);
        if (!cJSON_IsObject(pl))
            return bad(p, path, "must be an object");
        const cJSON *count, *where, *range;
        int64_t calls;
        int which;
        if (field(p, pl, path, "count", false, &count) ||
            field(p, pl, path, "where", false, &where) ||
            field(p, pl, path, "range", false, &range) ||
            get_int(p, pl, path, "calls", false, 0, &calls))
            return CG_EINPUT;
        if (!cJSON_IsString(count) || cg_count_parse(count->valuestring, &which) != 0 ||
            !cg_count_placed(which))
            return bad(p, path,
                       "count must be one of sync_stream, sync_event, sync_context, "
                       "dtoh_pageable, allocs, frees, module_loads");
        if (!cJSON_IsString(where) ||
            (strcmp(where->valuestring, "in") != 0 && strcmp(where->valuestring, "after") != 0))
            return bad(p, path, "where must be \"in\" or \"after\"");
        if (!cJSON_IsString(range) || range->valuestring[0] == '\0')
            return bad(p, path, "range must be a non-empty string");
        int e = cg_run_add_place(r, which, where->valuestring[0] == 'a', range->valuestring, calls);
        if (e == CG_EINPUT)
            return bad(p, path, "one place too many (at most 4096 per run)");
        if (e != 0)
            return cg_err_set(p->err, CG_ENOMEM, "out of memory");
    }
    return 0;
}

/* runs[].gpu_state: optional (absent: not recorded, every field unknown); artifact_gpu.h. */
static int parse_gpu_state(struct parser *p, const cJSON *run, const char *rp, struct cg_run *r)
{
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(run, "gpu_state");
    if (g == NULL || cJSON_IsNull(g))
        return 0;
    char path[96], problem[256];
    snprintf(path, sizeof(path), "%s.gpu_state", rp);
    int rc = cg_gpu_state_parse(g, path, &r->gpu, problem, sizeof(problem));
    if (rc == CG_ENOMEM)
        return cg_err_set(p->err, CG_ENOMEM, "out of memory");
    if (rc != 0)
        return cg_err_set(p->err, CG_EINPUT, "cannot read '%s': %s", p->name, problem);
    return 0;
}

/* runs[].ranks: optional (an empty array: one process; absent or null: not recorded, an older
 * artifact's, or one process there). */
static int parse_ranks(struct parser *p, const cJSON *run, const char *rp, struct cg_run *r)
{
    char problem[256];
    r->ranks_recorded = cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(run, "ranks"));
    int rc = cg_ranks_parse(run, rp, r->n_steps, &r->ranks, &r->n_ranks, problem, sizeof(problem));
    if (rc == CG_ENOMEM)
        return cg_err_set(p->err, CG_ENOMEM, "out of memory");
    if (rc != 0)
        return cg_err_set(p->err, CG_EINPUT, "cannot read '%s': %s", p->name, problem);
    return 0;
}

static int parse_runs(struct parser *p, const cJSON *root, struct cg_artifact *a)
{
    const cJSON *runs;
    if (field(p, root, "", "runs", false, &runs) != 0)
        return CG_EINPUT;
    if (!cJSON_IsArray(runs))
        return bad(p, "runs", "must be an array");
    if (cJSON_GetArraySize(runs) == 0)
        return bad(p, "runs", "is empty: the artifact holds no measured run");
    size_t i = 0;
    const cJSON *run;
    cJSON_ArrayForEach(run, runs)
    {
        char rp[64];
        snprintf(rp, sizeof(rp), "runs[%zu]", i++);
        if (!cJSON_IsObject(run))
            return bad(p, rp, "must be an object");
        struct cg_run *r = cg_artifact_add_blank_run(a);
        if (r == NULL)
            return cg_err_set(p->err, CG_ENOMEM, "out of memory");
        const cJSON *steps, *ops;
        if (parse_id(p, run, rp, r) || field(p, run, rp, "steps", false, &steps) ||
            parse_steps(p, steps, rp, r) || field(p, run, rp, "ops", false, &ops) ||
            parse_ops(p, ops, rp, r) || parse_summary(p, run, rp, r) ||
            get_int(p, run, rp, "dropped_records", true, 0, &r->dropped_records) ||
            get_int(p, run, rp, "zero_timestamp_records", true, 0, &r->zero_timestamp_records) ||
            get_int(p, run, rp, "outside_step_records", true, 0, &r->outside_step_records) ||
            get_int(p, run, rp, "inside_step_records", true, 0, &r->inside_step_records) ||
            get_int(p, run, rp, "late_memory_records", true, 0, &r->late_memory_records) ||
            get_int(p, run, rp, "cupti_overhead_ns", true, 0, &r->cupti_overhead_ns) ||
            get_int(p, run, rp, "stopped_after_steps", true, 1, &r->stopped_after_steps) ||
            get_int(p, run, rp, "stray_steps_nested", true, 0, &r->stray_steps_nested) ||
            get_int(p, run, rp, "stray_steps_other_threads", true, 0,
                    &r->stray_steps_other_threads) ||
            parse_warnings(p, run, rp, r) || parse_places(p, run, rp, r) ||
            parse_code(p, run, rp, r) || parse_placement(p, run, rp, r) ||
            parse_gpu_state(p, run, rp, r) || parse_ranks(p, run, rp, r))
            return CG_EINPUT;
    }
    return 0;
}

static int parse_root(struct parser *p, const cJSON *root, struct cg_artifact *a)
{
    if (!cJSON_IsObject(root))
        return cg_err_set(p->err, CG_EINPUT, "cannot read '%s': not a run artifact (not a JSON object)",
                          p->name);
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(root, "schema");
    if (schema == NULL)
        return cg_err_set(p->err, CG_EINPUT, "cannot read '%s': not a run artifact (missing \"schema\")",
                          p->name);
    if (!cJSON_IsString(schema) || strcmp(schema->valuestring, CG_ARTIFACT_SCHEMA) != 0)
        return cg_err_set(p->err, CG_EINPUT,
                          "cannot read '%s': not a run artifact (\"schema\" is not \"%s\")", p->name,
                          CG_ARTIFACT_SCHEMA);
    if (get_int(p, root, "", "schema_version", false, 1, &a->schema_version) != 0)
        return CG_EINPUT;
    if (a->schema_version > CG_SCHEMA_VERSION)
        return cg_err_set(p->err, CG_EINPUT,
                          "cannot read '%s': schema_version %lld is newer than this canary-gate "
                          "reads (up to %d): upgrade canary-gate",
                          p->name, (long long)a->schema_version, CG_SCHEMA_VERSION);
    const cJSON *gpu, *avail;
    if (field(p, root, "", "gpu", false, &gpu) != 0)
        return CG_EINPUT;
    if (!cJSON_IsObject(gpu))
        return bad(p, "gpu", "must be an object");
    if (field(p, gpu, "gpu", "available", false, &avail) != 0)
        return CG_EINPUT;
    if (!cJSON_IsBool(avail))
        return bad(p, "gpu.available", "must be true or false");
    a->gpu_available = cJSON_IsTrue(avail);
    const cJSON *cuda;
    if (field(p, gpu, "gpu", "cuda_initialised", true, &cuda) != 0)
        return CG_EINPUT;
    if (cuda != NULL && !cJSON_IsBool(cuda))
        return bad(p, "gpu.cuda_initialised", "must be true, false or null");
    a->cuda_initialised = cuda == NULL ? -1 : cJSON_IsTrue(cuda) ? 1 : 0;
    if (get_str(p, gpu, "gpu", "reason", true, &a->gpu_reason) ||
        get_str(p, root, "", "created_utc", true, &a->created_utc) || parse_env(p, root, a) ||
        parse_settings(p, root, a) || parse_runs(p, root, a))
        return CG_EINPUT;
    return 0;
}

int cg_artifact_parse(const char *text, size_t len, const char *name, struct cg_artifact *a,
                      struct cg_err *err)
{
    struct parser p = {name, err};
    size_t at;
    cg_artifact_init(a);
    /* One document per file: `cat base.json slow.json` must not read as base.json. */
    cJSON *root = cg_json_parse_whole(text, len, &at);
    if (root == NULL && at < len)
        return cg_err_set(err, CG_EINPUT,
                          "cannot read '%s': trailing data after the JSON document (at byte %zu): "
                          "one artifact per file",
                          name, at);
    if (root == NULL)
        return cg_err_set(err, CG_EINPUT, "cannot read '%s': not valid JSON (truncated or corrupt)",
                          name);
    char dup[256];
    if (cg_json_duplicate_key(root, dup, sizeof(dup))) {
        cJSON_Delete(root);
        return cg_err_set(err, CG_EINPUT,
                          "cannot read '%s': %s: the key appears twice (readers disagree on "
                          "which one counts)",
                          name, dup);
    }
    int rc = parse_root(&p, root, a);
    cJSON_Delete(root);
    if (rc == 0)
        rc = cg_artifact_check_runs(a, name, err);
    if (rc != 0)
        cg_artifact_release(a);
    return rc;
}

int cg_artifact_load(const char *path, struct cg_artifact *a, struct cg_err *err)
{
    char *text = NULL;
    size_t len = 0;
    cg_artifact_init(a);
    int rc = cg_file_read(path, CG_ARTIFACT_MAX_BYTES, &text, &len, err);
    if (rc == 0)
        rc = cg_artifact_parse(text, len, path, a, err);
    free(text);
    return rc;
}

/* ---- writing ----------------------------------------------------------------------------- */

static cJSON *int_or_null(int64_t v)
{
    return v >= 0 ? cJSON_CreateNumber((double)v) : cJSON_CreateNull();
}

static cJSON *str_or_null(const char *s)
{
    return s != NULL ? cJSON_CreateString(s) : cJSON_CreateNull();
}

static cJSON *run_to_json(const struct cg_run *r)
{
    cJSON *run = cJSON_CreateObject();
    if (r->id.host != NULL && r->id.started_utc != NULL) {
        cJSON *id = cJSON_AddObjectToObject(run, "id");
        cJSON_AddStringToObject(id, "host", r->id.host);
        cJSON_AddNumberToObject(id, "pid", (double)r->id.pid);
        cJSON_AddStringToObject(id, "started_utc", r->id.started_utc);
        cJSON_AddNumberToObject(id, "seq", (double)r->id.seq);
        char digest[CG_RUN_DIGEST_LEN];
        cg_run_digest(r, digest);
        cJSON_AddStringToObject(id, "digest", digest);
    }
    if (r->code.git_commit != NULL || r->code.n_files > 0) {
        cJSON *code = cJSON_AddObjectToObject(run, "code");
        cJSON_AddItemToObject(code, "git_commit", str_or_null(r->code.git_commit));
        cJSON *files = cJSON_AddArrayToObject(code, "files");
        for (size_t i = 0; files != NULL && i < r->code.n_files; i++) {
            cJSON *f = cJSON_CreateObject();
            cJSON_AddStringToObject(f, "path", r->code.files[i].path);
            cJSON_AddStringToObject(f, "hash", r->code.files[i].hash);
            cJSON_AddItemToArray(files, f);
        }
    }
    const struct cg_run_placement *where = &r->placement;
    if (where->cpus != NULL || where->cpu >= 0 || where->numa_node >= 0) {
        cJSON *o = cJSON_AddObjectToObject(run, "placement");
        cJSON_AddItemToObject(o, "cpus", str_or_null(where->cpus));
        cJSON_AddItemToObject(o, "cpu", int_or_null(where->cpu));
        cJSON_AddItemToObject(o, "numa_node", int_or_null(where->numa_node));
    }
    if (r->gpu.recorded)
        cJSON_AddItemToObject(run, "gpu_state", cg_gpu_state_json(&r->gpu));
    if (r->n_ranks == 0 && r->ranks_recorded)
        cJSON_AddArrayToObject(run, "ranks"); /* one process, said so */
    else
        cg_ranks_json(run, r->ranks, r->n_ranks);
    cJSON *steps = cJSON_AddArrayToObject(run, "steps");
    for (size_t i = 0; steps != NULL && i < r->n_steps; i++) {
        const struct cg_step *s = &r->steps[i];
        cJSON *st = cJSON_CreateObject();
        cJSON_AddNumberToObject(st, "wall_ns", (double)s->wall_ns);
        if (s->tokens >= 0)
            cJSON_AddNumberToObject(st, "tokens", (double)s->tokens);
        if (s->gpu_busy_ns >= 0)
            cJSON_AddNumberToObject(st, "gpu_busy_ns", (double)s->gpu_busy_ns);
        if (isfinite(s->loss))
            cJSON_AddNumberToObject(st, "loss", s->loss);
        if (s->sync_ns >= 0)
            cJSON_AddNumberToObject(st, "sync_ns", (double)s->sync_ns);
        if (s->compute_ns >= 0)
            cJSON_AddNumberToObject(st, "compute_ns", (double)s->compute_ns);
        if (s->copy_ns >= 0)
            cJSON_AddNumberToObject(st, "copy_ns", (double)s->copy_ns);
        if (s->copy_hidden_ns >= 0)
            cJSON_AddNumberToObject(st, "copy_hidden_ns", (double)s->copy_hidden_ns);
        cJSON *counts = NULL;
        for (int c = 0; c < CG_COUNT_N; c++) {
            if (s->counts[c] < 0)
                continue;
            if (counts == NULL)
                counts = cJSON_AddObjectToObject(st, "counts");
            cJSON_AddNumberToObject(counts, cg_count_name(c), (double)s->counts[c]);
        }
        cJSON_AddItemToArray(steps, st);
    }
    cJSON *sum = cJSON_AddObjectToObject(run, "summary");
    const struct cg_run_summary *m = &r->summary;
    cJSON_AddItemToObject(sum, "step_time_mean_ns", cg_json_number(m->step_time_mean_ns));
    cJSON_AddItemToObject(sum, "step_time_median_ns", cg_json_number(m->step_time_median_ns));
    cJSON_AddItemToObject(sum, "step_time_p95_ns", cg_json_number(m->step_time_p95_ns));
    cJSON_AddItemToObject(sum, "tokens_per_sec", cg_json_number(m->tokens_per_sec));
    cJSON_AddItemToObject(sum, "peak_device_bytes", int_or_null(m->peak_device_bytes));
    cJSON_AddItemToObject(sum, "peak_host_rss_bytes", int_or_null(m->peak_host_rss_bytes));
    cJSON *ops = cJSON_AddArrayToObject(run, "ops");
    for (size_t i = 0; ops != NULL && i < r->n_ops; i++) {
        const struct cg_op *o = &r->ops[i];
        cJSON *op = cJSON_CreateObject();
        cJSON_AddStringToObject(op, "name", o->name);
        cJSON_AddStringToObject(op, "family", o->family);
        cJSON_AddStringToObject(op, "kind", cg_op_kind_name(o->kind));
        cJSON_AddNumberToObject(op, "calls", (double)o->calls);
        cJSON_AddNumberToObject(op, "total_ns", (double)o->total_ns);
        cJSON_AddItemToArray(ops, op);
    }
    cJSON_AddItemToObject(run, "dropped_records", int_or_null(r->dropped_records));
    cJSON_AddItemToObject(run, "zero_timestamp_records", int_or_null(r->zero_timestamp_records));
    cJSON_AddItemToObject(run, "outside_step_records", int_or_null(r->outside_step_records));
    cJSON_AddItemToObject(run, "inside_step_records", int_or_null(r->inside_step_records));
    cJSON_AddItemToObject(run, "late_memory_records", int_or_null(r->late_memory_records));
    cJSON_AddItemToObject(run, "cupti_overhead_ns", int_or_null(r->cupti_overhead_ns));
    cJSON_AddItemToObject(run, "stopped_after_steps", int_or_null(r->stopped_after_steps));
    cJSON_AddItemToObject(run, "stray_steps_nested", int_or_null(r->stray_steps_nested));
    cJSON_AddItemToObject(run, "stray_steps_other_threads",
                          int_or_null(r->stray_steps_other_threads));
    cJSON *warnings = cJSON_AddArrayToObject(run, "warnings");
    for (size_t i = 0; warnings != NULL && i < r->n_warnings; i++)
        cJSON_AddItemToArray(warnings, cJSON_CreateString(r->warnings[i]));
    if (r->places_measured) {
        cJSON *places = cJSON_AddArrayToObject(run, "count_places");
        for (size_t i = 0; places != NULL && i < r->n_places; i++) {
            const struct cg_count_place *pl = &r->places[i];
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "count", cg_count_name(pl->count));
            cJSON_AddStringToObject(o, "where", pl->after ? "after" : "in");
            cJSON_AddStringToObject(o, "range", pl->range);
            cJSON_AddNumberToObject(o, "calls", (double)pl->calls);
            cJSON_AddItemToArray(places, o);
        }
    }
    return run;
}

char *cg_artifact_to_json(const struct cg_artifact *a)
{
    cJSON *root = cJSON_CreateObject();
    if (root == NULL)
        return NULL;
    cJSON_AddStringToObject(root, "schema", CG_ARTIFACT_SCHEMA);
    cJSON_AddNumberToObject(root, "schema_version", CG_SCHEMA_VERSION);
    cJSON_AddItemToObject(root, "created_utc", str_or_null(a->created_utc));
    cJSON *gpu = cJSON_AddObjectToObject(root, "gpu");
    cJSON_AddBoolToObject(gpu, "available", a->gpu_available);
    cJSON_AddItemToObject(gpu, "reason", str_or_null(a->gpu_reason));
    cJSON_AddItemToObject(gpu, "cuda_initialised", a->cuda_initialised < 0 ? cJSON_CreateNull()
                                                   : cJSON_CreateBool(a->cuda_initialised));

    const struct cg_env *e = &a->env;
    cJSON *env = cJSON_AddObjectToObject(root, "environment");
    cJSON_AddItemToObject(env, "gpu_model", str_or_null(e->gpu_model));
    cJSON_AddNumberToObject(env, "gpu_count", (double)(e->gpu_count > 0 ? e->gpu_count : 0));
    cJSON_AddItemToObject(env, "driver_version", str_or_null(e->driver_version));
    cJSON_AddItemToObject(env, "cuda_version", str_or_null(e->cuda_version));
    cJSON_AddItemToObject(env, "cupti_status", str_or_null(e->cupti_status));
    cJSON_AddItemToObject(env, "cupti_library", str_or_null(e->cupti_library));
    cJSON_AddItemToObject(env, "cpu_model", str_or_null(e->cpu_model));
    cJSON_AddItemToObject(env, "tool_version", str_or_null(e->tool_version ? e->tool_version
                                                                           : CG_VERSION));
    cJSON *cmd = cJSON_AddArrayToObject(env, "canary_command");
    for (size_t i = 0; cmd != NULL && i < e->n_canary_command; i++)
        cJSON_AddItemToArray(cmd, cJSON_CreateString(e->canary_command[i]));
    if (e->canary_id != NULL)
        cJSON_AddStringToObject(env, "canary_id", e->canary_id);
    cJSON_AddItemToObject(env, "canary_hash", str_or_null(e->canary_hash));
    if (e->gpu_env.recorded)
        cJSON_AddItemToObject(env, "gpu_state", cg_gpu_env_json(&e->gpu_env));

    const struct cg_settings *s = &a->settings;
    cJSON *set = cJSON_AddObjectToObject(root, "settings");
    cJSON_AddNumberToObject(set, "steps", (double)s->steps);
    cJSON_AddNumberToObject(set, "warmup", (double)s->warmup);
    cJSON_AddNumberToObject(set, "runs", (double)s->runs);
    cJSON_AddItemToObject(set, "step_range", str_or_null(s->step_range));
    cJSON_AddItemToObject(set, "steps_from", str_or_null(s->steps_from));
    if (s->step_optimizer > 0) /* absent: unknown, as in artifacts from before it was recorded */
        cJSON_AddNumberToObject(set, "step_optimizer", (double)s->step_optimizer);
    if (s->comm_kernels != NULL) /* absent: unset, as in artifacts from before it was recorded */
        cJSON_AddStringToObject(set, "comm_kernels", s->comm_kernels);
    cJSON_AddItemToObject(set, "tokens_per_step", int_or_null(s->tokens_per_step));
    /* absent when unset, as in artifacts from before they were recorded */
    if (s->flops_per_token >= 0)
        cJSON_AddNumberToObject(set, "flops_per_token", (double)s->flops_per_token);
    if (s->precision != NULL)
        cJSON_AddStringToObject(set, "precision", s->precision);
    if (isfinite(s->peak_flop_per_clock))
        cJSON_AddNumberToObject(set, "peak_flop_per_clock", s->peak_flop_per_clock);

    cJSON *runs = cJSON_AddArrayToObject(root, "runs");
    for (size_t i = 0; runs != NULL && i < a->n_runs; i++)
        cJSON_AddItemToArray(runs, run_to_json(&a->runs[i]));
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    /* Strings the collector set directly (argv, the GPU's and CPU's names) may be ill-formed:
     * repair them here too, so no artifact is ever written with invalid UTF-8. Only strings can
     * hold bytes above 0x7F in printed JSON, so the document stays valid. */
    if (text != NULL && cg_utf8_fix(&text) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

int cg_artifact_save(const char *path, const struct cg_artifact *a, struct cg_err *err)
{
    char *text = cg_artifact_to_json(a);
    if (text == NULL)
        return cg_err_set(err, CG_ENOMEM, "cannot write '%s': out of memory", path);
    size_t len = strlen(text);
    int rc = cg_file_write_atomic(path, text, len, err);
    if (rc == 0 && strcmp(path, "-") == 0)
        rc = cg_file_write_atomic(path, "\n", 1, err);
    free(text);
    return rc;
}
