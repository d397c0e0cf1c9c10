/*
 * shard_redact: the secrets of a run's shards hidden where they are read to be merged (see
 * cg_shard_redact in shard.h), and the hidden host names told apart.
 *
 * A --redact pattern that matches host names would show every host it hides as the same text
 * ("***"), so the merge would make one node of them all. Each host or Slurm node name that
 * redaction changed is shown instead by what redaction left and a number, "*** #1", "*** #2",
 * the hidden names numbered by the lowest rank that ran there (shards without a rank after, by
 * pid): distinct hosts stay distinct, one host is one name in every output, and the number
 * tells nothing of the name. A node's Slurm name and its host name, both hidden, share one
 * number ("*** #1" in the artifact, "***.cluster #1" in the trace, which names clocks by host);
 * two Slurm nodes on one host keep two. A number that would give a name some other host
 * already shows is skipped. The names are per run (each run's shards are redacted on their
 * own): "*** #1" is the hidden host of the run's lowest rank. O(n log n) in the shards (O(n^2)
 * at worst where hosts hold several Slurm nodes). Not thread-safe.
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
    char **field;        /* the shard's host or slurm_node, still as recorded */
    char *redacted;      /* what redaction made of it (owned) */
    size_t shard;        /* its shard's place by rank */
    struct hidden *lead; /* the first of its name's group (itself when first) */
    size_t number;       /* the group's number, in lead (0: none yet) */
    char *shown;         /* the name it is shown by, in lead only */
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
    const struct hidden *a = *(struct hidden *const *)x, *b = *(struct hidden *const *)y;
    int c = strcmp(*a->field, *b->field);
    return c != 0 ? c : (a > b) - (a < b);
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* The name of a hidden host whose redacted text is redacted, numbered number: "REDACTED #N",
 * REDACTED cut to HIDDEN_HOST_KEEP bytes at a character's end. NULL when out of memory. */
static char *hidden_name(const char *redacted, size_t number)
{
    size_t keep = cg_utf8_cut(redacted, strnlen(redacted, HIDDEN_HOST_KEEP));
    size_t cap = keep + 32;
    char *name = malloc(cap);
    if (name != NULL)
        snprintf(name, cap, "%.*s #%zu", (int)keep, redacted, number);
    return name;
}

/* Whether the names of the n groups g would be free with number: none is a name redaction left
 * alone (shown, sorted, n_shown of them) or, with others, another group's (the n_h of
 * h). 0 (free), 1 (taken) or CG_ENOMEM. */
static int name_taken(struct hidden *const *g, size_t n, size_t number, char *const *shown,
                      size_t n_shown, const struct hidden *h, size_t n_h, bool others)
{
    for (size_t k = 0; k < n; k++) {
        char *name = hidden_name(g[k]->redacted, number);
        if (name == NULL)
            return CG_ENOMEM;
        const char *key = name;
        int taken = bsearch(&key, shown, n_shown, sizeof(*shown), cmp_str) != NULL;
        for (size_t j = 0; others && taken == 0 && j < n_h; j++) {
            if (h[j].lead != &h[j] || &h[j] == g[k] || h[j].number != number)
                continue;
            char *theirs = hidden_name(h[j].redacted, number);
            taken = theirs == NULL ? CG_ENOMEM : strcmp(theirs, name) == 0;
            free(theirs);
        }
        free(name);
        if (taken != 0)
            return taken;
    }
    return 0;
}

/* Numbers the groups of the hidden names of one shard (g, n of 1 or 2: its Slurm node's and
 * its host's) not yet numbered: the number its other group has where that gives no name already
 * shown, else the next number (*next on) that gives none; *next is set past a new one. 0 or
 * CG_ENOMEM. */
static int number_node(struct hidden **g, size_t n, size_t *next, char *const *shown,
                       size_t n_shown, const struct hidden *h, size_t n_h)
{
    struct hidden *todo[2];
    size_t n_todo = 0, known = 0;
    for (size_t k = 0; k < n; k++) {
        if (g[k]->number != 0)
            known = known != 0 ? known : g[k]->number;
        else if (n_todo == 0 || todo[0] != g[k])
            todo[n_todo++] = g[k];
    }
    if (n_todo == 0)
        return 0;
    size_t number = known;
    int rc = number != 0 ? name_taken(todo, n_todo, number, shown, n_shown, h, n_h, true) : 1;
    if (rc == 1) {
        /* a new number is no other group's: only the names left alone can hold it */
        for (number = *next;
             (rc = name_taken(todo, n_todo, number, shown, n_shown, h, n_h, false)) == 1; number++)
            ;
        *next = number + 1;
    }
    for (size_t k = 0; k < n_todo && rc == 0; k++)
        todo[k]->number = number;
    return rc;
}

/* Redacts the host and Slurm node names of n shards, showing each hidden name by what
 * redaction left and a number (see the file's header). 0 or CG_ENOMEM (then the names may be
 * left as recorded; the caller fails the run). */
static int redact_hosts(struct cg_shard *shards, size_t n, const struct cg_redact *r)
{
    struct placed *by_rank = malloc((n > 0 ? n : 1) * sizeof(*by_rank));
    struct hidden *h = calloc(2 * n + 1, sizeof(*h)); /* by shard, its node's name first */
    struct hidden **by_name = NULL;
    char **shown = malloc((2 * n + 1) * sizeof(*shown)); /* the names redaction left alone */
    size_t n_hidden = 0, n_shown = 0;
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
            h[n_hidden++] = (struct hidden){fields[f], t, k, NULL, 0, NULL};
        }
    }
    if (rc != 0 || n_hidden == 0)
        goto done;
    qsort(shown, n_shown, sizeof(*shown), cmp_str);
    /* one group per name as recorded, led by its first appearance */
    if ((by_name = malloc(n_hidden * sizeof(struct hidden *))) == NULL) {
        rc = CG_ENOMEM;
        goto done;
    }
    for (size_t k = 0; k < n_hidden; k++)
        by_name[k] = &h[k];
    qsort(by_name, n_hidden, sizeof(struct hidden *), cmp_recorded);
    for (size_t k = 0; k < n_hidden; k++)
        by_name[k]->lead = k > 0 && strcmp(*by_name[k]->field, *by_name[k - 1]->field) == 0
                               ? by_name[k - 1]->lead
                               : by_name[k];
    /* numbered shard by shard in rank order: a node's two names, one number */
    size_t next = 1;
    for (size_t k = 0, e; k < n_hidden && rc == 0; k = e) {
        struct hidden *g[2];
        for (e = k; e < n_hidden && h[e].shard == h[k].shard; e++)
            g[e - k] = h[e].lead;
        rc = number_node(g, e - k, &next, shown, n_shown, h, n_hidden);
    }
    for (size_t k = 0; k < n_hidden && rc == 0; k++) {
        struct hidden *lead = h[k].lead;
        if (lead->shown == NULL &&
            (lead->shown = hidden_name(lead->redacted, lead->number)) == NULL)
            rc = CG_ENOMEM;
    }
    for (size_t k = 0; k < n_hidden && rc == 0; k++) {
        char *name = strdup(h[k].lead->shown);
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
    free(by_name);
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
