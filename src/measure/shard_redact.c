/*
 * shard_redact: the secrets of a run's shards hidden where they are read to be merged (see
 * cg_shard_redact in shard.h), and the hidden host names told apart.
 *
 * A --redact pattern that matches host names would show every host it hides as the same text
 * ("***"), so the merge would make one node of them all. Each host or Slurm node name that
 * redaction changed is shown instead by what redaction left and a number, "*** #1", "*** #2",
 * the hidden names numbered by the lowest rank that ran there (shards without a rank after, by
 * pid): distinct hosts stay distinct, one host is one name in every output, and the number
 * tells nothing of the name. A number that would give a name some other host already shows is
 * skipped. The names are per run (each run's shards are redacted on their own): "*** #1" is
 * the hidden host of the run's lowest rank. O(n log n) in the shards. Not thread-safe.
 */
#include "shard.h"

#include "utf8.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The longest part of what redaction left that a hidden host's name keeps, in bytes: the name
 * and its number stay within an artifact's node names (CG_RANK_NAME_MAX). */
#define HIDDEN_HOST_KEEP 200

/* *s redacted in place (NULL stays NULL); 0 or CG_ENOMEM. */
static int redact_str(char **s, const struct cg_redact *r)
{
    if (*s == NULL)
        return 0;
    char *t = cg_redact_apply(r, *s);
    if (t == NULL)
        return CG_ENOMEM;
    free(*s);
    *s = t;
    return 0;
}

/* A host or Slurm node name that redaction changed. */
struct hidden {
    char **field;     /* the shard's host or slurm_node, still as recorded */
    char *redacted;   /* what redaction made of it (owned) */
    size_t order;     /* where it first appears: its shard's place by rank, then its field */
    const char *name; /* the name it is shown by (owned by the first of its name's group) */
    char *shown;      /* that name, in the first of its group only */
};

/* A shard's place in the numbering: its lowest rank first (cg_shard_rank), shards without a
 * rank after by pid, then by their place in the directory. */
struct placed {
    bool ranked;
    int64_t rank, pid;
    size_t i;
};

static int cmp_placed(const void *x, const void *y)
{
    const struct placed *a = x, *b = y;
    if (a->ranked != b->ranked)
        return a->ranked ? -1 : 1;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/* By the name as recorded, then where it first appears. */
static int cmp_recorded(const void *x, const void *y)
{
    const struct hidden *a = x, *b = y;
    int c = strcmp(*a->field, *b->field);
    return c != 0 ? c : (a->order > b->order) - (a->order < b->order);
}

/* Groups by where they first appear. */
static int cmp_first(const void *x, const void *y)
{
    const struct hidden *a = *(struct hidden *const *)x, *b = *(struct hidden *const *)y;
    return (a->order > b->order) - (a->order < b->order);
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* The name of the hidden host whose redacted text is redacted and whose number is at least
 * *number: "REDACTED #N" (REDACTED cut to HIDDEN_HOST_KEEP bytes at a character's end), the
 * first N not giving one of the shown names (sorted, n_shown of them); *number is set past
 * it. NULL when out of memory. */
static char *hidden_name(const char *redacted, size_t *number, char *const *shown, size_t n_shown)
{
    size_t keep = cg_utf8_cut(redacted, strnlen(redacted, HIDDEN_HOST_KEEP));
    size_t cap = keep + 32;
    char *name = malloc(cap);
    if (name == NULL)
        return NULL;
    for (;; (*number)++) {
        snprintf(name, cap, "%.*s #%zu", (int)keep, redacted, *number);
        const char *key = name;
        if (bsearch(&key, shown, n_shown, sizeof(*shown), cmp_str) == NULL)
            break;
    }
    (*number)++;
    return name;
}

/* Redacts the host and Slurm node names of n shards, showing each hidden name as hidden_name
 * gives it (see the file's header). 0 or CG_ENOMEM (then the names may be left as recorded;
 * the caller fails the run). */
static int redact_hosts(struct cg_shard *shards, size_t n, const struct cg_redact *r)
{
    struct placed *by_rank = malloc((n > 0 ? n : 1) * sizeof(*by_rank));
    struct hidden *h = calloc(2 * n + 1, sizeof(*h));
    struct hidden **first = NULL;                        /* the first of each name's group */
    char **shown = malloc((2 * n + 1) * sizeof(*shown)); /* the names redaction left alone */
    size_t n_hidden = 0, n_shown = 0, n_first = 0;
    int rc = 0;
    if (by_rank == NULL || h == NULL || shown == NULL) {
        rc = CG_ENOMEM;
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        int64_t w;
        by_rank[i] = (struct placed){false, -1, shards[i].pid, i};
        by_rank[i].ranked = cg_shard_rank(&shards[i], &by_rank[i].rank, &w);
    }
    qsort(by_rank, n, sizeof(*by_rank), cmp_placed);
    for (size_t k = 0; k < n && rc == 0; k++) {
        struct cg_shard *s = &shards[by_rank[k].i];
        char **fields[2] = {&s->slurm_node, &s->host}; /* the node's name first (cg_shard_node) */
        for (size_t f = 0; f < 2; f++) {
            if (*fields[f] == NULL)
                continue;
            char *t = cg_redact_apply(r, *fields[f]);
            if (t == NULL) {
                rc = CG_ENOMEM;
                break;
            }
            if (strcmp(t, *fields[f]) == 0) {
                free(t);
                shown[n_shown++] = *fields[f];
                continue;
            }
            h[n_hidden++] = (struct hidden){fields[f], t, 2 * k + f, NULL, NULL};
        }
    }
    if (rc != 0 || n_hidden == 0)
        goto done;
    qsort(shown, n_shown, sizeof(*shown), cmp_str);
    /* one group per name as recorded, its first appearance first; numbered in that order */
    qsort(h, n_hidden, sizeof(*h), cmp_recorded);
    if ((first = malloc(n_hidden * sizeof(*first))) == NULL) {
        rc = CG_ENOMEM;
        goto done;
    }
    for (size_t k = 0; k < n_hidden; k++)
        if (k == 0 || strcmp(*h[k].field, *h[k - 1].field) != 0)
            first[n_first++] = &h[k];
    qsort(first, n_first, sizeof(*first), cmp_first);
    size_t number = 1;
    for (size_t g = 0; g < n_first && rc == 0; g++)
        if ((first[g]->shown = hidden_name(first[g]->redacted, &number, shown, n_shown)) == NULL)
            rc = CG_ENOMEM;
    for (size_t k = 0; k < n_hidden && rc == 0; k++) {
        h[k].name = h[k].shown != NULL ? h[k].shown : h[k - 1].name;
        char *name = strdup(h[k].name);
        if (name == NULL) {
            rc = CG_ENOMEM;
            break;
        }
        free(*h[k].field);
        *h[k].field = name;
    }
done:
    for (size_t k = 0; h != NULL && k < n_hidden; k++) {
        free(h[k].redacted);
        free(h[k].shown);
    }
    free(h);
    free(first);
    free(shown);
    free(by_rank);
    return rc;
}

int cg_shard_redact(struct cg_shard *shards, size_t n, const struct cg_redact *r,
                    struct cg_err *err)
{
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        struct cg_shard *s = &shards[i];
        const char *clock = s->host != NULL ? s->host : s->slurm_node;
        if (s->clock_host == NULL && clock != NULL && (s->clock_host = strdup(clock)) == NULL)
            rc |= CG_ENOMEM;
        char **one[] = {&s->slurm_job,    &s->step_range,     &s->gpu_reason,   &s->gpu_model,
                        &s->cuda_version, &s->driver_version, &s->cupti_library};
        for (size_t k = 0; k < sizeof(one) / sizeof(one[0]); k++)
            rc |= redact_str(one[k], r);
        for (size_t k = 0; k < s->n_ops; k++)
            rc |= redact_str(&s->ops[k].name, r);
        for (size_t k = 0; k < s->n_places; k++)
            rc |= redact_str(&s->places[k].name, r);
        for (size_t k = 0; k < s->n_warnings; k++)
            rc |= redact_str(&s->warnings[k], r);
        for (size_t k = 0; k < s->n_ranges; k++)
            rc |= redact_str(&s->ranges[k].name, r);
        for (size_t k = 0; k < s->n_gpu_events; k++)
            rc |= redact_str(&s->gpu_events[k].name, r);
        for (size_t k = 0; k < s->n_domains; k++)
            rc |= redact_str(&s->domains[k].name, r);
    }
    if (rc == 0)
        rc = redact_hosts(shards, n, r);
    return rc != 0 ? cg_err_set(err, CG_ENOMEM, "out of memory redacting shards") : 0;
}
