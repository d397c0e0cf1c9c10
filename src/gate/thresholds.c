/*
 * thresholds: loading thresholds files with "extends" (see thresholds.h, docs/thresholds.md).
 *
 * Every accepted key is one row of a descriptor table (JSON path, type, range, where it lands
 * in struct cg_thresholds). Each file is checked against the table on its own, then the chain
 * is applied from the root down, so the leaf's fields win. Fields start unset (NAN or -1) and
 * a chain that leaves one unset is an error naming the key.
 */
#include "thresholds.h"

#include "fsutil.h"
#include "jsonutil.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DEPTH (CG_THRESHOLDS_MAX_FILES - 1)
#define MAX_FILE_BYTES ((size_t)1024 * 1024)

static bool is_memory(int m)
{
    return m == CG_M_PEAK_DEVICE_MEMORY || m == CG_M_PEAK_HOST_RSS;
}

enum ftype { F_INT, F_NUM };

struct fdesc {
    const char *key;
    enum ftype type;
    double min, max;
    size_t offset; /* into struct cg_metric_limits for metric keys, else struct cg_thresholds */
};

#define T_OFF(f) offsetof(struct cg_thresholds, f)
#define M_OFF(f) offsetof(struct cg_metric_limits, f)

static const struct fdesc measurement_keys[] = {
    {"runs", F_INT, 1, 1000, T_OFF(runs)},
    {"steps", F_INT, 1, 1000000, T_OFF(steps)},
    {"warmup", F_INT, 0, 1000000, T_OFF(warmup)},
};
static const struct fdesc ops_keys[] = {
    {"top_n", F_INT, 0, 10000, T_OFF(ops_top_n)},
    {"min_share_pct", F_NUM, 0, 100, T_OFF(ops_min_share_pct)},
    {"fdr_q", F_NUM, 1e-9, 1, T_OFF(ops_fdr_q)},
};
static const struct fdesc metric_keys[] = {
    {"max_regression_pct", F_NUM, 0, 1e6, M_OFF(max_regression_pct)},
    {"max_regression_bytes", F_NUM, 0, 1e18, M_OFF(max_regression_bytes)},
    {"alpha", F_NUM, 1e-9, 0.5, M_OFF(alpha)},
    {"min_runs", F_INT, 1, 1000, M_OFF(min_runs)},
};
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

struct loader {
    struct cg_err *err;
    const char *file; /* current file's display name */
};

static int bad(struct loader *l, const char *key, const char *problem)
{
    return cg_err_set(l->err, CG_EINPUT, "invalid thresholds file '%s': %s: %s", l->file, key,
                      problem);
}

/* Checks one numeric value against its descriptor and, when base is not NULL, stores it. */
static int store_value(struct loader *l, const char *key, const cJSON *item, const struct fdesc *d,
                       char *base)
{
    if (!cJSON_IsNumber(item) || !isfinite(item->valuedouble))
        return bad(l, key, d->type == F_INT ? "must be an integer" : "must be a number");
    double v = item->valuedouble;
    if (d->type == F_INT && v != floor(v))
        return bad(l, key, "must be an integer");
    if (v < d->min || v > d->max) {
        char msg[96];
        snprintf(msg, sizeof(msg), "must be from %g to %g", d->min, d->max);
        return bad(l, key, msg);
    }
    if (base == NULL)
        return 0;
    if (d->type == F_INT)
        *(int64_t *)(void *)(base + d->offset) = (int64_t)v;
    else
        *(double *)(void *)(base + d->offset) = v;
    return 0;
}

/* Checks obj's members against table and, when base is not NULL, stores them there. */
static int apply_table(struct loader *l, const cJSON *obj, const char *section,
                       const struct fdesc *table, size_t n, char *base, bool memory_metric)
{
    char key[128];
    if (!cJSON_IsObject(obj))
        return bad(l, section, "must be an object");
    const cJSON *item;
    cJSON_ArrayForEach(item, obj)
    {
        snprintf(key, sizeof(key), "%s.%s", section, item->string);
        const struct fdesc *d = NULL;
        for (size_t i = 0; i < n; i++) {
            if (strcmp(table[i].key, item->string) == 0)
                d = &table[i];
        }
        if (d == NULL || (!memory_metric && strcmp(item->string, "max_regression_bytes") == 0))
            return bad(l, key, "unknown key");
        int rc = store_value(l, key, item, d, base);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* One count limit: {"max_increase": N, "max_increase_pct": P} (either may be left out: 0) or
 * null (not gated). Checks it and, when out is not NULL, stores it. */
static int count_limit(struct loader *l, const cJSON *item, const char *key,
                       struct cg_count_limit *out)
{
    static const struct fdesc keys[] = {
        {"max_increase", F_NUM, 0, 1e15, offsetof(struct cg_count_limit, max_increase)},
        {"max_increase_pct", F_NUM, 0, 1e6, offsetof(struct cg_count_limit, max_increase_pct)},
    };
    struct cg_count_limit lim = {true, !cJSON_IsNull(item), 0, 0};
    if (lim.gated) {
        int rc = apply_table(l, item, key, keys, N_OF(keys), (char *)&lim, false);
        if (rc != 0)
            return rc;
    }
    if (out != NULL)
        *out = lim;
    return 0;
}

/* A metric where lower is worse (cg_metric_higher_is_worse: tokens/sec, MFU) cannot fall by 100%
 * or more, so a max_regression_pct of 100 or above would leave it unable to FAIL: refused. */
static int check_can_fail(struct loader *l, const char *section, const cJSON *m, int idx)
{
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(m, "max_regression_pct");
    if (p == NULL || !cJSON_IsNumber(p) || p->valuedouble < 100.0 ||
        cg_metric_higher_is_worse((enum cg_metric)idx))
        return 0;
    char key[96];
    snprintf(key, sizeof(key), "%s.max_regression_pct", section);
    return bad(l, key,
               "must be below 100 (lower is worse: a fall of 100% or more cannot happen, so the "
               "metric could never fail)");
}

/* "counts": a limit per row name, "range_calls", "varying" and "range_names" (an object of
 * range names and limits). Each entry replaces the parent's entry whole. */
static int apply_counts(struct loader *l, const cJSON *obj, struct cg_thresholds *t)
{
    char key[CG_RANGE_LIMIT_NAME_MAX + 64];
    if (!cJSON_IsObject(obj))
        return bad(l, "counts", "must be an object");
    const cJSON *item;
    cJSON_ArrayForEach(item, obj)
    {
        const char *k = item->string;
        int row, rc;
        snprintf(key, sizeof(key), "counts.%.64s", k);
        if (strcmp(k, "range_calls") == 0) {
            rc = count_limit(l, item, key, t != NULL ? &t->range_calls : NULL);
        } else if (strcmp(k, "varying") == 0) {
            rc = count_limit(l, item, key, t != NULL ? &t->varying : NULL);
            if (rc == 0 && cJSON_IsNull(item))
                rc = bad(l, key, "must be an object (a varying count is gated with it)");
        } else if (strcmp(k, "range_names") == 0) {
            if (!cJSON_IsObject(item))
                return bad(l, key, "must be an object of NVTX range names");
            const cJSON *r;
            cJSON_ArrayForEach(r, item)
            {
                snprintf(key, sizeof(key), "counts.range_names.%.*s", CG_RANGE_LIMIT_NAME_MAX,
                         r->string);
                if (r->string[0] == '\0' || strlen(r->string) >= CG_RANGE_LIMIT_NAME_MAX)
                    return bad(l, key, "a range name must have 1 to 255 bytes");
                struct cg_count_limit lim;
                if ((rc = count_limit(l, r, key, &lim)) != 0)
                    return rc;
                if (t == NULL)
                    continue;
                size_t i = 0;
                while (i < t->n_range_names && strcmp(t->range_names[i].name, r->string) != 0)
                    i++;
                if (i == CG_MAX_RANGE_LIMITS)
                    return bad(l, key, "too many range names (at most 32 over the chain)");
                if (i == t->n_range_names) {
                    snprintf(t->range_names[i].name, sizeof(t->range_names[i].name), "%s",
                             r->string);
                    t->n_range_names++;
                }
                t->range_names[i].limit = lim;
            }
            rc = 0;
        } else if (cg_count_parse(k, &row) == 0) {
            rc = count_limit(l, item, key, t != NULL ? &t->counts[row] : NULL);
        } else {
            rc = bad(l, key, "unknown count");
        }
        if (rc != 0)
            return rc;
    }
    return 0;
}

const char *cg_anatomy_gated_name(enum cg_anatomy_gated g)
{
    return g == CG_ANAT_GATE_GPU_IDLE       ? "gpu_idle"
           : g == CG_ANAT_GATE_EXPOSED_COMM ? "exposed_communication"
                                            : "rank_spread";
}

/* "anatomy": {"gpu_idle": {...} or null, "exposed_communication": ...}; each replaces the
 * parent's whole. */
static int apply_anatomy(struct loader *l, const cJSON *obj, struct cg_thresholds *t)
{
    static const struct fdesc keys[] = {
        {"max_increase_points", F_NUM, 0, 100,
         offsetof(struct cg_anatomy_limit, max_increase_points)},
        {"alpha", F_NUM, 1e-9, 0.5, offsetof(struct cg_anatomy_limit, alpha)},
        {"min_runs", F_INT, 2, 1000, offsetof(struct cg_anatomy_limit, min_runs)},
    };
    if (!cJSON_IsObject(obj))
        return bad(l, "anatomy", "must be an object");
    const cJSON *item;
    cJSON_ArrayForEach(item, obj)
    {
        char key[128];
        snprintf(key, sizeof(key), "anatomy.%s", item->string);
        int g = -1;
        for (int i = 0; i < CG_ANAT_GATES; i++)
            if (strcmp(item->string, cg_anatomy_gated_name((enum cg_anatomy_gated)i)) == 0)
                g = i;
        if (g < 0)
            return bad(l, key, "unknown part (gpu_idle, exposed_communication, rank_spread)");
        struct cg_anatomy_limit lim = {!cJSON_IsNull(item), 2.0, 0.05, 3};
        if (lim.set) {
            int rc = apply_table(l, item, key, keys, N_OF(keys), (char *)&lim, false);
            if (rc != 0)
                return rc;
        }
        if (t != NULL)
            t->anatomy[g] = lim;
    }
    return 0;
}

/* "slow_state": null (reported, not gated) or {"max_increase_points": N, "alpha": A}, which
 * replaces the parent's whole. */
static int apply_slow_state(struct loader *l, const cJSON *item, struct cg_thresholds *t)
{
    static const struct fdesc keys[] = {
        {"max_increase_points", F_NUM, 0, 100,
         offsetof(struct cg_state_limit, max_increase_points)},
        {"alpha", F_NUM, 1e-9, 0.5, offsetof(struct cg_state_limit, alpha)},
    };
    struct cg_state_limit lim = {!cJSON_IsNull(item), 20.0, 0.05};
    if (lim.gated) {
        int rc = apply_table(l, item, "slow_state", keys, N_OF(keys), (char *)&lim, false);
        if (rc != 0)
            return rc;
    }
    if (t != NULL)
        t->slow_state = lim;
    return 0;
}

/* Checks (t == NULL) or applies (t != NULL) one file's settings. */
static int apply_file(struct loader *l, const cJSON *root, struct cg_thresholds *t)
{
    char *base = (char *)t;
    const cJSON *item;
    cJSON_ArrayForEach(item, root)
    {
        const char *k = item->string;
        int rc = 0;
        if (strcmp(k, "description") == 0) {
            if (!cJSON_IsString(item))
                rc = bad(l, k, "must be a string");
        } else if (strcmp(k, "extends") == 0) {
            if (!cJSON_IsString(item) && !cJSON_IsNull(item))
                rc = bad(l, k, "must be a file name, a built-in name or null");
        } else if (strcmp(k, "measurement") == 0) {
            rc = apply_table(l, item, k, measurement_keys, N_OF(measurement_keys), base, false);
        } else if (strcmp(k, "ops") == 0) {
            rc = apply_table(l, item, k, ops_keys, N_OF(ops_keys), base, false);
        } else if (strcmp(k, "metrics") == 0) {
            if (!cJSON_IsObject(item))
                return bad(l, k, "must be an object");
            const cJSON *m;
            cJSON_ArrayForEach(m, item)
            {
                char section[64];
                snprintf(section, sizeof(section), "metrics.%s", m->string);
                int idx = -1;
                for (int i = 0; i < CG_M_COUNT; i++) {
                    if (strcmp(cg_metric_name((enum cg_metric)i), m->string) == 0)
                        idx = i;
                }
                if (idx < 0)
                    return bad(l, section, "unknown metric");
                char *mbase = t != NULL ? (char *)&t->metric[idx] : NULL;
                rc = apply_table(l, m, section, metric_keys, N_OF(metric_keys), mbase,
                                 is_memory(idx));
                if (rc == 0)
                    rc = check_can_fail(l, section, m, idx);
                if (rc != 0)
                    return rc;
            }
        } else if (strcmp(k, "counts") == 0) {
            rc = apply_counts(l, item, t);
        } else if (strcmp(k, "anatomy") == 0) {
            rc = apply_anatomy(l, item, t);
        } else if (strcmp(k, "slow_state") == 0) {
            rc = apply_slow_state(l, item, t);
        } else if (strcmp(k, "environment_mismatch") == 0) {
            if (!cJSON_IsString(item) || (strcmp(item->valuestring, "inconclusive") != 0 &&
                                          strcmp(item->valuestring, "gate") != 0))
                rc = bad(l, k, "must be \"inconclusive\" or \"gate\"");
            else if (t != NULL)
                t->env_mismatch_gates = strcmp(item->valuestring, "gate") == 0;
        } else if (strcmp(k, "require_floor_regression") == 0) {
            if (!cJSON_IsBool(item))
                rc = bad(l, k, "must be true or false");
            else if (t != NULL)
                t->require_floor = cJSON_IsTrue(item);
        } else if (strcmp(k, "bootstrap_resamples") == 0) {
            static const struct fdesc d = {"bootstrap_resamples", F_INT, 100, 1000000,
                                           T_OFF(bootstrap_resamples)};
            rc = store_value(l, k, item, &d, base);
        } else {
            rc = bad(l, k, "unknown key");
        }
        if (rc != 0)
            return rc;
    }
    return 0;
}

static const char *builtin_text(const char *name)
{
    for (size_t i = 0; cg_builtin_thresholds[i].name != NULL; i++) {
        if (strcmp(cg_builtin_thresholds[i].name, name) == 0)
            return cg_builtin_thresholds[i].json;
    }
    return NULL;
}

/* Resolves a spec to text. dir is the directory of the extending file, "" for the command line
 * (spec is then a path relative to the working directory), or NULL when the extending file is
 * itself built in (only built-in names then). An existing file wins over a built-in name.
 * Fills display (the name used in messages) and *builtin. */
static int read_spec(const char *spec, const char *dir, char **text, char *display, size_t dn,
                     bool *builtin, struct cg_err *err)
{
    char path[1024];
    bool explicit_path = strchr(spec, '/') != NULL || strstr(spec, ".json") != NULL;
    int n = 0;
    *builtin = false;
    if (dir != NULL) {
        if (dir[0] == '\0' || spec[0] == '/')
            n = snprintf(path, sizeof(path), "%s", spec);
        else
            n = snprintf(path, sizeof(path), "%s/%s%s", dir, spec, explicit_path ? "" : ".json");
        if (n < 0 || (size_t)n >= sizeof(path))
            return cg_err_set(err, CG_EINPUT, "cannot read thresholds '%s': path too long", spec);
        /* a folder that has a built-in's name does not hide the built-in thresholds */
        struct stat st;
        bool folder = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
        bool found = folder || access(path, F_OK) == 0;
        bool folder_of_builtin = folder && builtin_text(spec) != NULL;
        if (explicit_path || (found && !folder_of_builtin)) {
            snprintf(display, dn, "%s", path);
            return cg_file_read(path, MAX_FILE_BYTES, text, NULL, err);
        }
    }
    const char *b = builtin_text(spec);
    if (b == NULL)
        return cg_err_set(err, CG_EINPUT,
                          "cannot read thresholds '%s': no such file and no built-in thresholds of "
                          "that name (built-in: default, strict, smoke)",
                          spec);
    *text = strdup(b);
    if (*text == NULL)
        return cg_err_set(err, CG_ENOMEM, "out of memory");
    snprintf(display, dn, "built-in %s", spec);
    *builtin = true;
    return 0;
}

static int load_chain(const char *spec, const char *dir, int depth, struct cg_thresholds *t,
                      struct cg_err *err);

/* Checks one file's text, loads its parent chain, then applies the file over it. parent_dir is
 * where a parent named by a relative path is looked up, NULL for built-in names only. */
static int apply_text(const char *text, size_t len, const char *display, bool builtin,
                      const char *parent_dir, int depth, struct cg_thresholds *t,
                      struct cg_err *err)
{
    struct loader l = {err, display};
    int rc = 0;
    size_t at;
    cJSON *root = cg_json_parse_whole(text, len, &at);
    if (root == NULL && at < len) {
        rc = cg_err_set(err, CG_EINPUT,
                        "invalid thresholds file '%s': trailing data after the JSON document (at "
                        "byte %zu)",
                        display, at);
        goto done;
    }
    if (root == NULL || !cJSON_IsObject(root)) {
        rc = cg_err_set(err, CG_EINPUT, "invalid thresholds file '%s': not a JSON object", display);
        goto done;
    }
    char dup[256];
    if (cg_json_duplicate_key(root, dup, sizeof(dup))) {
        rc = cg_err_set(err, CG_EINPUT,
                        "invalid thresholds file '%s': %s: the key appears twice (readers "
                        "disagree on which one counts)",
                        display, dup);
        goto done;
    }
    rc = apply_file(&l, root, NULL);
    if (rc != 0)
        goto done;
    const cJSON *ext = cJSON_GetObjectItemCaseSensitive(root, "extends");
    if (ext == NULL || cJSON_IsString(ext)) {
        if (builtin && ext == NULL) {
            rc = cg_err_set(err, CG_EINTERNAL, "built-in thresholds '%s' have no parent", display);
            goto done;
        }
        rc = load_chain(ext != NULL ? ext->valuestring : "default", parent_dir, depth + 1, t, err);
        if (rc != 0)
            goto done;
    }
    rc = apply_file(&l, root, t);
    if (rc == 0)
        snprintf(t->source, sizeof(t->source), "%s", display);
done:
    cJSON_Delete(root);
    return rc;
}

static int load_chain(const char *spec, const char *dir, int depth, struct cg_thresholds *t,
                      struct cg_err *err)
{
    char *text = NULL;
    char display[1024];
    char pdir[1024] = "";
    bool builtin;
    if (depth > MAX_DEPTH)
        return cg_err_set(err, CG_EINPUT,
                          "invalid thresholds '%s': \"extends\" goes more than %d files deep (a cycle?)",
                          spec, MAX_DEPTH);
    int rc = read_spec(spec, dir, &text, display, sizeof(display), &builtin, err);
    if (rc != 0 || text == NULL)
        return rc != 0 ? rc : cg_err_set(err, CG_EINTERNAL, "thresholds '%s' read as nothing", spec);
    if (!builtin && t->n_files < CG_THRESHOLDS_MAX_FILES)
        snprintf(t->files[t->n_files++], sizeof(t->files[0]), "%s", display);
    if (!builtin) {
        snprintf(pdir, sizeof(pdir), "%s", display);
        char *slash = strrchr(pdir, '/');
        if (slash != NULL)
            *slash = '\0';
        else
            snprintf(pdir, sizeof(pdir), ".");
    }
    rc = apply_text(text, strlen(text), display, builtin, builtin ? NULL : pdir, depth, t, err);
    free(text);
    return rc;
}

static void set_unset(struct cg_thresholds *t)
{
    memset(t, 0, sizeof(*t));
    t->runs = t->steps = t->warmup = t->ops_top_n = t->bootstrap_resamples = -1;
    t->ops_min_share_pct = t->ops_fdr_q = NAN;
    for (int i = 0; i < CG_M_COUNT; i++) {
        t->metric[i].max_regression_pct = NAN;
        t->metric[i].max_regression_bytes = NAN;
        t->metric[i].alpha = NAN;
        t->metric[i].min_runs = -1;
    }
}

static int check_complete(const struct cg_thresholds *t, struct cg_err *err)
{
    const char *missing = NULL;
    char key[96];
    if (t->runs < 0)
        missing = "measurement.runs";
    else if (t->steps < 0)
        missing = "measurement.steps";
    else if (t->warmup < 0)
        missing = "measurement.warmup";
    else if (t->ops_top_n < 0)
        missing = "ops.top_n";
    else if (isnan(t->ops_min_share_pct))
        missing = "ops.min_share_pct";
    else if (isnan(t->ops_fdr_q))
        missing = "ops.fdr_q";
    else if (t->bootstrap_resamples < 0)
        missing = "bootstrap_resamples";
    else if (!t->varying.set)
        missing = "counts.varying";
    else if (!t->range_calls.set)
        missing = "counts.range_calls";
    for (int i = 0; missing == NULL && i < CG_M_COUNT; i++) {
        const struct cg_metric_limits *m = &t->metric[i];
        const char *field = NULL;
        /* a file written before the GPU state's metrics may leave them out: shown, not gated */
        if (cg_metric_from_gpu_state((enum cg_metric)i) && isnan(m->max_regression_pct) &&
            isnan(m->alpha) && m->min_runs < 0)
            continue;
        if (isnan(m->max_regression_pct))
            field = "max_regression_pct";
        else if (is_memory(i) && isnan(m->max_regression_bytes))
            field = "max_regression_bytes";
        else if (!is_memory(i) && isnan(m->alpha))
            field = "alpha";
        else if (!is_memory(i) && m->min_runs < 0)
            field = "min_runs";
        if (field != NULL) {
            snprintf(key, sizeof(key), "metrics.%s.%s", cg_metric_name((enum cg_metric)i), field);
            missing = key;
        }
    }
    if (missing != NULL)
        return cg_err_set(err, CG_EINPUT, "invalid thresholds '%s': %s: missing", t->source,
                          missing);
    return 0;
}

int cg_thresholds_load(const char *spec, struct cg_thresholds *t, struct cg_err *err)
{
    set_unset(t);
    int rc = load_chain(spec != NULL ? spec : "default", "", 0, t, err);
    if (rc == 0)
        rc = check_complete(t, err);
    return rc;
}

int cg_thresholds_parse(const char *text, size_t len, const char *name, struct cg_thresholds *t,
                        struct cg_err *err)
{
    set_unset(t);
    int rc = apply_text(text, len, name, false, NULL, 0, t, err);
    if (rc == 0)
        rc = check_complete(t, err);
    return rc;
}

/* ---- --only ------------------------------------------------------------------------------- */

static const char *const gate_group_names[] = {"timing", "anatomy", "counts", "memory"};
#define GATE_GROUPS (sizeof(gate_group_names) / sizeof(gate_group_names[0]))

int cg_thresholds_parse_only(const char *list, unsigned *mask, struct cg_err *err)
{
    *mask = 0;
    const char *p = list;
    for (;;) {
        size_t len = strcspn(p, ",");
        unsigned bit = 0;
        for (size_t g = 0; g < GATE_GROUPS; g++)
            if (len == strlen(gate_group_names[g]) && strncmp(p, gate_group_names[g], len) == 0)
                bit = 1u << g;
        if (bit == 0)
            return cg_err_set(err, CG_EINPUT,
                              "--only '%s': '%.*s' is not a group (timing, anatomy, counts, "
                              "memory, comma-separated)",
                              list, (int)(len > 64 ? 64 : len), p);
        *mask |= bit;
        if (p[len] == '\0')
            return 0;
        p += len + 1;
    }
}

void cg_thresholds_only_names(unsigned mask, char *out, size_t size)
{
    size_t used = 0;
    if (size > 0)
        out[0] = '\0';
    for (size_t g = 0; g < GATE_GROUPS; g++) {
        if (!(mask & (1u << g)))
            continue;
        int w = snprintf(out + used, size > used ? size - used : 0, "%s%s", used ? "," : "",
                         gate_group_names[g]);
        if (w < 0 || (size_t)w >= size - used)
            return;
        used += (size_t)w;
    }
}
