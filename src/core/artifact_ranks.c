/*
 * artifact_ranks: per-rank figures of a run, their JSON and what they say per node (see
 * artifact_ranks.h).
 */
#include "artifact_ranks.h"

#include "err.h"
#include "utf8.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cg_ranks_free(struct cg_rank *ranks, size_t n)
{
    for (size_t i = 0; ranks != NULL && i < n; i++) {
        free(ranks[i].node);
        free(ranks[i].step_ns);
        free(ranks[i].device_uuid);
        free(ranks[i].gpu_model);
    }
    free(ranks);
}

static char *dup_or_null(const char *s)
{
    return s != NULL ? strdup(s) : NULL;
}

int cg_ranks_copy(struct cg_rank **dst, const struct cg_rank *src, size_t n)
{
    *dst = NULL;
    if (n == 0)
        return 0;
    struct cg_rank *r = calloc(n, sizeof(*r));
    if (r == NULL)
        return CG_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        r[i] = src[i];
        r[i].node = dup_or_null(src[i].node);
        r[i].device_uuid = dup_or_null(src[i].device_uuid);
        r[i].gpu_model = dup_or_null(src[i].gpu_model);
        r[i].step_ns = src[i].n_steps ? malloc(src[i].n_steps * sizeof(int64_t)) : NULL;
        if ((src[i].node && !r[i].node) || (src[i].device_uuid && !r[i].device_uuid) ||
            (src[i].gpu_model && !r[i].gpu_model) ||
            (src[i].n_steps && !r[i].step_ns)) {
            cg_ranks_free(r, i + 1);
            return CG_ENOMEM;
        }
        if (src[i].n_steps)
            memcpy(r[i].step_ns, src[i].step_ns, src[i].n_steps * sizeof(int64_t));
    }
    *dst = r;
    return 0;
}

static cJSON *num_or_null(int64_t v)
{
    return v >= 0 ? cJSON_CreateNumber((double)v) : cJSON_CreateNull();
}

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return a < b ? -1 : a > b;
}

static double median_of(int64_t *v, size_t n)
{
    if (n == 0)
        return NAN;
    qsort(v, n, sizeof(*v), cmp_i64);
    size_t mid = n / 2;
    return n % 2 ? (double)v[mid] : ((double)v[mid - 1] + (double)v[mid]) / 2.0;
}

double cg_rank_step_median_ns(const struct cg_rank *r)
{
    int64_t *v = r->n_steps ? malloc(r->n_steps * sizeof(*v)) : NULL;
    if (v == NULL)
        return NAN;
    memcpy(v, r->step_ns, r->n_steps * sizeof(*v));
    double m = median_of(v, r->n_steps);
    free(v);
    return m;
}

/* The peak of node's ranks: per device UUID the sum of the ranks' peaks on it, the largest of
 * those; ranks with no UUID count as a device of their own each. -1 when none is known. */
static int64_t node_peak(const struct cg_rank *ranks, size_t n, const char *node)
{
    int64_t best = -1;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(ranks[i].node, node) != 0 || ranks[i].peak_device_bytes < 0)
            continue;
        int64_t sum = ranks[i].peak_device_bytes;
        for (size_t j = 0; ranks[i].device_uuid != NULL && j < n; j++)
            if (j != i && strcmp(ranks[j].node, node) == 0 && ranks[j].peak_device_bytes >= 0 &&
                ranks[j].device_uuid != NULL &&
                strcmp(ranks[j].device_uuid, ranks[i].device_uuid) == 0)
                sum += ranks[j].peak_device_bytes;
        best = sum > best ? sum : best;
    }
    return best;
}

size_t cg_ranks_nodes(const struct cg_rank *ranks, size_t n, struct cg_node_figures *nodes)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        size_t j = 0;
        while (j < k && strcmp(nodes[j].node, ranks[i].node) != 0)
            j++;
        if (j == k)
            nodes[k++] = (struct cg_node_figures){ranks[i].node, 0, -1, -1, NAN};
        nodes[j].n_ranks++;
        if (ranks[i].busy_ns > nodes[j].busy_ns)
            nodes[j].busy_ns = ranks[i].busy_ns;
    }
    for (size_t j = 0; j < k; j++) {
        nodes[j].peak_device_bytes = node_peak(ranks, n, nodes[j].node);
        size_t steps = 0;
        for (size_t i = 0; i < n; i++)
            if (strcmp(ranks[i].node, nodes[j].node) == 0 && ranks[i].n_steps > steps)
                steps = ranks[i].n_steps;
        int64_t *slowest = steps ? calloc(steps, sizeof(*slowest)) : NULL;
        if (slowest == NULL)
            continue;
        for (size_t i = 0; i < n; i++)
            for (size_t s = 0; strcmp(ranks[i].node, nodes[j].node) == 0 && s < ranks[i].n_steps;
                 s++)
                if (ranks[i].step_ns[s] > slowest[s])
                    slowest[s] = ranks[i].step_ns[s];
        nodes[j].step_median_ns = median_of(slowest, steps);
        free(slowest);
    }
    return k;
}

struct node_shape {
    size_t ranks, gpus;
};

static int cmp_shape(const void *pa, const void *pb)
{
    const struct node_shape *a = pa, *b = pb;
    if (a->ranks != b->ranks)
        return a->ranks > b->ranks ? -1 : 1;
    return a->gpus > b->gpus ? -1 : a->gpus < b->gpus ? 1 : 0;
}

int cg_ranks_shape(const struct cg_rank *ranks, size_t n, char *out, size_t cap)
{
    if (cap > 0)
        out[0] = '\0';
    if (n == 0 || cap == 0)
        return 0;
    struct cg_node_figures *nodes = malloc(n * sizeof(*nodes));
    struct node_shape *shape = calloc(n, sizeof(*shape));
    if (nodes == NULL || shape == NULL) {
        free(nodes);
        free(shape);
        return CG_ENOMEM;
    }
    size_t k = cg_ranks_nodes(ranks, n, nodes);
    bool any_gpu = false;
    for (size_t j = 0; j < k; j++) {
        shape[j].ranks = nodes[j].n_ranks;
        for (size_t i = 0; i < n; i++) { /* distinct devices of the node's ranks */
            if (strcmp(ranks[i].node, nodes[j].node) != 0 || ranks[i].device_uuid == NULL)
                continue;
            any_gpu = true;
            size_t before = 0;
            while (before < i && !(strcmp(ranks[before].node, nodes[j].node) == 0 &&
                                   ranks[before].device_uuid != NULL &&
                                   strcmp(ranks[before].device_uuid, ranks[i].device_uuid) == 0))
                before++;
            shape[j].gpus += before == i;
        }
    }
    qsort(shape, k, sizeof(*shape), cmp_shape);
    bool even = true;
    for (size_t j = 1; j < k; j++)
        even &= cmp_shape(&shape[j], &shape[0]) == 0;
    size_t used = 0;
    int w;
    if (even)
        w = snprintf(out, cap, "%zu node%s of %zu rank%s", k, k == 1 ? "" : "s", shape[0].ranks,
                     shape[0].ranks == 1 ? "" : "s");
    else
        w = snprintf(out, cap, "%zu nodes: %zu ranks", k, shape[0].ranks);
    used = w > 0 ? (size_t)w : 0;
    if (any_gpu && used < cap) {
        w = snprintf(out + used, cap - used, " and %zu GPU%s", shape[0].gpus,
                     shape[0].gpus == 1 ? "" : "s");
        used += w > 0 ? (size_t)w : 0;
    }
    for (size_t j = 1; !even && j < k && used < cap; j++) {
        if (any_gpu)
            w = snprintf(out + used, cap - used, ", %zu and %zu", shape[j].ranks, shape[j].gpus);
        else
            w = snprintf(out + used, cap - used, ", %zu", shape[j].ranks);
        used += w > 0 ? (size_t)w : 0;
    }
    /* the distinct GPU models, sorted (a selection sort over the ranks: worlds are small) */
    const char *last = NULL;
    for (bool first = true;; first = false) {
        const char *next = NULL;
        for (size_t i = 0; i < n; i++) {
            const char *m = ranks[i].gpu_model;
            if (m != NULL && (last == NULL || strcmp(m, last) > 0) &&
                (next == NULL || strcmp(m, next) < 0))
                next = m;
        }
        if (next == NULL) {
            if (!first && used < cap)
                (void)snprintf(out + used, cap - used, ")");
            break;
        }
        if (used < cap) {
            w = snprintf(out + used, cap - used, "%s%s", first ? " (" : ", ", next);
            used += w > 0 ? (size_t)w : 0;
        }
        last = next;
    }
    free(nodes);
    free(shape);
    return 0;
}

int cg_ranks_json(cJSON *run, const struct cg_rank *ranks, size_t n)
{
    if (n == 0)
        return 0;
    cJSON *arr = cJSON_AddArrayToObject(run, "ranks");
    struct cg_node_figures *nodes = malloc(n * sizeof(*nodes));
    if (arr == NULL || nodes == NULL) {
        free(nodes);
        return CG_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        const struct cg_rank *r = &ranks[i];
        cJSON *o = cJSON_CreateObject();
        if (o == NULL || !cJSON_AddItemToArray(arr, o)) {
            cJSON_Delete(o);
            free(nodes);
            return CG_ENOMEM;
        }
        cJSON_AddNumberToObject(o, "rank", (double)r->rank);
        cJSON_AddItemToObject(o, "local_rank", num_or_null(r->local_rank));
        cJSON_AddStringToObject(o, "node", r->node);
        cJSON *steps = cJSON_AddArrayToObject(o, "step_ns");
        for (size_t s = 0; steps != NULL && s < r->n_steps; s++)
            cJSON_AddItemToArray(steps, cJSON_CreateNumber((double)r->step_ns[s]));
        cJSON_AddItemToObject(o, "busy_ns", num_or_null(r->busy_ns));
        cJSON_AddItemToObject(o, "compute_ns", num_or_null(r->compute_ns));
        cJSON_AddItemToObject(o, "comm_exposed_ns", num_or_null(r->comm_exposed_ns));
        cJSON_AddItemToObject(o, "peak_device_bytes", num_or_null(r->peak_device_bytes));
        cJSON_AddItemToObject(o, "device_uuid", r->device_uuid ? cJSON_CreateString(r->device_uuid)
                                                               : cJSON_CreateNull());
        cJSON_AddItemToObject(o, "gpu_model", r->gpu_model ? cJSON_CreateString(r->gpu_model)
                                                           : cJSON_CreateNull());
    }
    size_t k = cg_ranks_nodes(ranks, n, nodes);
    cJSON *narr = cJSON_AddArrayToObject(run, "nodes");
    for (size_t j = 0; narr != NULL && j < k; j++) {
        cJSON *o = cJSON_CreateObject();
        if (o == NULL)
            break;
        cJSON_AddStringToObject(o, "node", nodes[j].node);
        cJSON_AddNumberToObject(o, "ranks", (double)nodes[j].n_ranks);
        cJSON_AddItemToObject(o, "step_median_ns",
                              isnan(nodes[j].step_median_ns)
                                  ? cJSON_CreateNull()
                                  : cJSON_CreateNumber(nodes[j].step_median_ns));
        cJSON_AddItemToObject(o, "busy_ns", num_or_null(nodes[j].busy_ns));
        cJSON_AddItemToObject(o, "peak_device_bytes", num_or_null(nodes[j].peak_device_bytes));
        cJSON_AddItemToArray(narr, o);
    }
    free(nodes);
    return 0;
}

/* An optional whole number >= -1 (null: -1). */
static bool get_num(const cJSON *o, const char *key, bool optional, int64_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (v == NULL || cJSON_IsNull(v)) {
        *out = -1;
        return optional;
    }
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 9007199254740992.0 ||
        v->valuedouble != floor(v->valuedouble))
        return false;
    *out = (int64_t)v->valuedouble;
    return true;
}

static int parse_one(const cJSON *o, size_t max_steps, struct cg_rank *r, const char **what)
{
    const cJSON *node = cJSON_GetObjectItemCaseSensitive(o, "node");
    const cJSON *uuid = cJSON_GetObjectItemCaseSensitive(o, "device_uuid");
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(o, "gpu_model");
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(o, "step_ns");
    if (!cJSON_IsObject(o))
        return *what = "must be an object", CG_EINPUT;
    if (!get_num(o, "rank", false, &r->rank))
        return *what = "rank: expected a whole number", CG_EINPUT;
    if (!get_num(o, "local_rank", true, &r->local_rank) || !get_num(o, "busy_ns", true, &r->busy_ns) ||
        !get_num(o, "compute_ns", true, &r->compute_ns) ||
        !get_num(o, "comm_exposed_ns", true, &r->comm_exposed_ns) ||
        !get_num(o, "peak_device_bytes", true, &r->peak_device_bytes))
        return *what = "a figure is not a whole number or null", CG_EINPUT;
    if (!cJSON_IsString(node) || node->valuestring[0] == '\0' ||
        strlen(node->valuestring) > CG_RANK_NAME_MAX)
        return *what = "node: expected a name", CG_EINPUT;
    if (uuid != NULL && !cJSON_IsNull(uuid) &&
        (!cJSON_IsString(uuid) || uuid->valuestring == NULL || strlen(uuid->valuestring) > 63))
        return *what = "device_uuid: expected a UUID or null", CG_EINPUT;
    if (model != NULL && !cJSON_IsNull(model) &&
        (!cJSON_IsString(model) || model->valuestring == NULL ||
         strlen(model->valuestring) > CG_RANK_NAME_MAX))
        return *what = "gpu_model: expected a name or null", CG_EINPUT;
    if (!cJSON_IsArray(steps) || (size_t)cJSON_GetArraySize(steps) > max_steps)
        return *what = "step_ns: expected at most the run's steps", CG_EINPUT;
    const char *uuid_text = uuid != NULL && cJSON_IsString(uuid) ? uuid->valuestring : NULL;
    if ((r->node = strdup(node->valuestring)) == NULL ||
        (uuid_text != NULL && (r->device_uuid = strdup(uuid_text)) == NULL) ||
        (model != NULL && cJSON_IsString(model) && model->valuestring != NULL &&
         (r->gpu_model = strdup(model->valuestring)) == NULL))
        return CG_ENOMEM;
    size_t ns = (size_t)cJSON_GetArraySize(steps);
    if (ns == 0)
        return 0;
    if ((r->step_ns = malloc(ns * sizeof(int64_t))) == NULL)
        return CG_ENOMEM;
    const cJSON *s;
    cJSON_ArrayForEach(s, steps)
    {
        if (!cJSON_IsNumber(s) || s->valuedouble < 1 || s->valuedouble > 9007199254740992.0 ||
            s->valuedouble != floor(s->valuedouble))
            return *what = "step_ns: expected positive whole nanoseconds", CG_EINPUT;
        if (r->n_steps < ns)
            r->step_ns[r->n_steps++] = (int64_t)s->valuedouble;
    }
    return 0;
}

/* A rank number given to two ranks into *twice (-1: none). 0 or CG_ENOMEM. */
static int rank_twice(const struct cg_rank *r, size_t n, int64_t *twice)
{
    int64_t *v = malloc((n > 0 ? n : 1) * sizeof(*v));
    if (v == NULL)
        return CG_ENOMEM;
    for (size_t i = 0; i < n; i++)
        v[i] = r[i].rank;
    qsort(v, n, sizeof(*v), cmp_i64);
    *twice = -1;
    for (size_t i = 1; i < n && *twice < 0; i++)
        if (v[i] == v[i - 1])
            *twice = v[i];
    free(v);
    return 0;
}

int cg_ranks_parse(const cJSON *run, const char *path, size_t max_steps, struct cg_rank **out,
                   size_t *n, char *problem, size_t cap)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(run, "ranks");
    *out = NULL;
    *n = 0;
    if (arr == NULL || cJSON_IsNull(arr))
        return 0;
    int size = cJSON_IsArray(arr) ? cJSON_GetArraySize(arr) : -1;
    if (size < 0 || size > CG_ARTIFACT_MAX_RANKS) {
        snprintf(problem, cap, "%s.ranks: expected an array of at most %d ranks", path,
                 CG_ARTIFACT_MAX_RANKS);
        return CG_EINPUT;
    }
    if (size == 0)
        return 0;
    struct cg_rank *r = calloc((size_t)size, sizeof(*r));
    if (r == NULL)
        return CG_ENOMEM;
    size_t i = 0;
    const cJSON *o;
    int rc = 0;
    cJSON_ArrayForEach(o, arr)
    {
        const char *what = "";
        if ((rc = parse_one(o, max_steps, &r[i], &what)) != 0) {
            if (rc == CG_EINPUT)
                snprintf(problem, cap, "%s.ranks[%zu]: %s", path, i, what);
            cg_ranks_free(r, i + 1);
            return rc;
        }
        i++;
    }
    int64_t twice = -1;
    if ((rc = rank_twice(r, i, &twice)) != 0 || twice >= 0) {
        if (rc == 0) {
            snprintf(problem, cap, "%s.ranks: rank %lld twice", path, (long long)twice);
            rc = CG_EINPUT;
        }
        cg_ranks_free(r, i);
        return rc;
    }
    *out = r;
    *n = i;
    return 0;
}

char *cg_rank_name_dup(const char *s)
{
    char *t = cg_utf8_dup(s);
    if (t == NULL)
        return NULL;
    if (strlen(t) > CG_RANK_NAME_MAX)
        t[cg_utf8_cut(t, CG_RANK_NAME_MAX)] = '\0';
    return t;
}
