/* jsonutil: one JSON document per file (see jsonutil.h). */
#include "jsonutil.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cJSON *cg_json_parse_whole(const char *text, size_t len, size_t *trailing_at)
{
    const char *end = NULL;
    if (trailing_at != NULL)
        *trailing_at = len;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, false);
    if (root == NULL)
        return NULL;
    size_t at = (size_t)(end - text);
    while (at < len &&
           (text[at] == ' ' || text[at] == '\t' || text[at] == '\n' || text[at] == '\r'))
        at++;
    if (at < len) {
        cJSON_Delete(root);
        if (trailing_at != NULL)
            *trailing_at = at;
        return NULL;
    }
    return root;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The first key of object o given twice, NULL when none (or out of memory for a large one). */
static const char *twice(const cJSON *o)
{
    size_t n = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, o) n++;
    if (n <= 16) { /* the usual object: compared pairwise */
        for (const cJSON *x = o->child; x != NULL; x = x->next)
            for (const cJSON *y = x->next; y != NULL; y = y->next)
                if (x->string != NULL && y->string != NULL && strcmp(x->string, y->string) == 0)
                    return x->string;
        return NULL;
    }
    const char **names = malloc(n * sizeof(*names));
    if (names == NULL)
        return NULL;
    size_t k = 0;
    cJSON_ArrayForEach(c, o) names[k++] = c->string != NULL ? c->string : "";
    qsort(names, n, sizeof(*names), cmp_name);
    const char *found = NULL;
    for (size_t i = 1; i < n && found == NULL; i++)
        if (strcmp(names[i - 1], names[i]) == 0)
            found = names[i];
    free(names);
    return found;
}

/* Depth-first search below node, whose path is path[0..len). */
static bool find_twice(const cJSON *node, char *path, size_t cap, size_t len, int depth)
{
    if (depth > 64 || !(cJSON_IsObject(node) || cJSON_IsArray(node)))
        return false;
    if (cJSON_IsObject(node)) {
        const char *dup = twice(node);
        if (dup != NULL) {
            snprintf(path + len, cap - len, "%s%s", len > 0 ? "." : "", dup);
            return true;
        }
    }
    size_t i = 0;
    for (const cJSON *c = node->child; c != NULL; c = c->next, i++) {
        int k = cJSON_IsObject(node)
                    ? snprintf(path + len, cap - len, "%s%s", len > 0 ? "." : "", c->string)
                    : snprintf(path + len, cap - len, "[%zu]", i);
        size_t at = k < 0 ? len : len + (size_t)k >= cap ? cap - 1 : len + (size_t)k;
        if (find_twice(c, path, cap, at, depth + 1))
            return true;
        path[len] = '\0';
    }
    return false;
}

bool cg_json_duplicate_key(const cJSON *root, char *path, size_t cap)
{
    if (cap == 0)
        return false;
    path[0] = '\0';
    return find_twice(root, path, cap, 0, 0);
}

cJSON *cg_json_number(double v)
{
    return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}
