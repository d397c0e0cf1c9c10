/*
 * signature: the code and kernel signatures of runs (see signature.h). Kernel sets are sorted
 * arrays of name pointers into the artifacts; runs are grouped by comparing them, which is
 * quadratic in the runs (tens) and linear in the kernels of a run (hundreds to tens of
 * thousands). Sorting a run's names is the costly part, so a run whose kernels come in the same
 * order as an earlier run's (runs recorded alike list their ops alike: sorted as the collector
 * merged them) shares that run's set instead of making its own, and when every run that ran
 * kernels lists the same ones there is one set, compared with nothing, and nothing is sorted.
 * Pure.
 */
#include "signature.h"

#include "floor.h"
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool str_eq(const char *a, const char *b)
{
    return a != NULL && b != NULL && strcmp(a, b) == 0;
}

/* ---- the code ------------------------------------------------------------------------------ */

static bool baseline_has(const struct cg_artifact *b, const char *path, const char *hash,
                         bool *path_seen)
{
    for (size_t r = 0; r < b->n_runs; r++) {
        const struct cg_run_code *c = &b->runs[r].code;
        for (size_t i = 0; i < c->n_files; i++) {
            if (!str_eq(c->files[i].path, path))
                continue;
            *path_seen = true;
            if (str_eq(c->files[i].hash, hash))
                return true;
        }
    }
    return false;
}

static bool already_named(const struct cg_code_change *out, const char *path, size_t upto)
{
    for (size_t i = 0; i < upto && i < out->n_files; i++)
        if (strcmp(out->files[i], path) == 0)
            return true;
    return false;
}

void cg_signature_code_change(const struct cg_artifact *baseline, const struct cg_artifact *current,
                              struct cg_code_change *out)
{
    memset(out, 0, sizeof(*out));
    for (size_t r = 0; r < current->n_runs; r++) {
        const struct cg_run_code *c = &current->runs[r].code;
        for (size_t i = 0; i < c->n_files; i++) {
            const struct cg_code_file *f = &c->files[i];
            bool seen = false;
            if (f->path == NULL || baseline_has(baseline, f->path, f->hash, &seen) || !seen ||
                already_named(out, f->path, out->n_files))
                continue;
            /* beyond the cap, a path counts once only if no earlier run of this side named it:
             * a rare overcount of a long list, never a missed change */
            out->n_changed++;
            if (out->n_files < CG_SIGNATURE_MAX_FILES)
                out->files[out->n_files++] = f->path;
        }
    }
}

/* ---- the kernels --------------------------------------------------------------------------- */

struct kset {
    const char **names; /* sorted, distinct; as listed when it is the runs' only list */
    size_t n;
    bool shared; /* names is an earlier run's (same kernels in the same order): not freed here */
};

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The next kernel op of run at or after *i (advancing *i), or NULL when none is left. */
static const char *next_kernel(const struct cg_run *run, size_t *i)
{
    for (; *i < run->n_ops; (*i)++)
        if (run->ops[*i].kind == CG_OP_KERNEL && run->ops[*i].name != NULL)
            return run->ops[(*i)++].name;
    return NULL;
}

/* True when runs a and b list the same kernel names in the same order. */
static bool same_kernel_list(const struct cg_run *a, const struct cg_run *b)
{
    size_t i = 0, j = 0;
    for (;;) {
        const char *x = next_kernel(a, &i), *y = next_kernel(b, &j);
        if (x == NULL || y == NULL)
            return x == y;
        if (strcmp(x, y) != 0)
            return false;
    }
}

/* The run's kernel set into s, sorted and distinct when sort (else as the run lists them); 0 or
 * CG_ENOMEM. */
static int kset_of(const struct cg_run *run, bool sort, struct kset *s)
{
    s->n = 0;
    s->shared = false;
    s->names = malloc((run->n_ops ? run->n_ops : 1) * sizeof(*s->names));
    if (s->names == NULL)
        return CG_ENOMEM;
    for (size_t i = 0; i < run->n_ops; i++)
        if (run->ops[i].kind == CG_OP_KERNEL && run->ops[i].name != NULL)
            s->names[s->n++] = run->ops[i].name;
    if (!sort)
        return 0;
    qsort(s->names, s->n, sizeof(*s->names), cmp_name);
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++)
        if (k == 0 || strcmp(s->names[k - 1], s->names[i]) != 0)
            s->names[k++] = s->names[i];
    s->n = k;
    return 0;
}

static bool kset_eq(const struct kset *a, const struct kset *b)
{
    if (a->names == b->names)
        return true;
    if (a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->names[i], b->names[i]) != 0)
            return false;
    return true;
}

static bool kset_has(const struct kset *s, const char *name)
{
    return bsearch(&name, s->names, s->n, sizeof(*s->names), cmp_name) != NULL;
}

/* Marks fast[i] for the runs (baseline's first) in the pooled fast state of their floors.
 * 0 or CG_ENOMEM. */
static int fast_runs(const struct cg_artifact *b, const struct cg_artifact *c, bool *fast)
{
    size_t n = b->n_runs + c->n_runs, m = 0;
    double *floors = malloc((n ? n : 1) * sizeof(*floors));
    double *sorted = malloc((n ? n : 1) * sizeof(*sorted));
    if (floors == NULL || sorted == NULL) {
        free(floors);
        free(sorted);
        return CG_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        floors[i] = cg_floor_run_ns(i < b->n_runs ? &b->runs[i] : &c->runs[i - b->n_runs]);
        if (isfinite(floors[i]))
            sorted[m++] = floors[i];
    }
    qsort(sorted, m, sizeof(*sorted), cg_stats_cmp_double);
    size_t k = cg_floor_fast_state(sorted, m);
    double cut = k > 0 ? sorted[k - 1] : -INFINITY;
    for (size_t i = 0; i < n; i++)
        fast[i] = isfinite(floors[i]) && floors[i] <= cut;
    free(floors);
    free(sorted);
    return 0;
}

/* Fills the names of each choice that tell it apart: those that some set lacks. */
static int name_differences(struct cg_kernel_choices *out, const struct kset *sets,
                            const size_t *rep)
{
    for (size_t g = 0; g < out->n; g++) {
        struct cg_kernel_choice *ch = &out->items[g];
        const struct kset *own = &sets[rep[g]];
        size_t cap = 0;
        for (size_t h = 0; h < out->n; h++)
            cap += sets[rep[h]].n;
        ch->only = malloc((own->n ? own->n : 1) * sizeof(*ch->only));
        ch->without = malloc((cap ? cap : 1) * sizeof(*ch->without));
        if (ch->only == NULL || ch->without == NULL)
            return CG_ENOMEM;
        for (size_t i = 0; i < own->n; i++) {
            bool everywhere = true;
            for (size_t h = 0; h < out->n && everywhere; h++)
                everywhere = h == g || kset_has(&sets[rep[h]], own->names[i]);
            if (!everywhere)
                ch->only[ch->n_only++] = own->names[i];
        }
        for (size_t h = 0; h < out->n; h++) {
            const struct kset *other = &sets[rep[h]];
            for (size_t i = 0; h != g && i < other->n; i++) {
                const char *name = other->names[i];
                if (kset_has(own, name))
                    continue;
                bool listed = false;
                for (size_t k = 0; k < ch->n_without && !listed; k++)
                    listed = strcmp(ch->without[k], name) == 0;
                if (!listed)
                    ch->without[ch->n_without++] = name;
            }
        }
        qsort(ch->without, ch->n_without, sizeof(*ch->without), cmp_name);
    }
    return 0;
}

static int cmp_choice(const void *a, const void *b)
{
    const struct cg_kernel_choice *x = a, *y = b;
    size_t nx = x->runs[0] + x->runs[1], ny = y->runs[0] + y->runs[1];
    if (nx != ny)
        return nx < ny ? 1 : -1;
    const char *fx = x->n_only ? x->only[0] : "", *fy = y->n_only ? y->only[0] : "";
    return strcmp(fx, fy);
}

/* Run i of the pooled runs, the baseline's first. */
static const struct cg_run *pooled_run(const struct cg_artifact *b, const struct cg_artifact *c,
                                       size_t i)
{
    return i < b->n_runs ? &b->runs[i] : &c->runs[i - b->n_runs];
}

int cg_signature_kernels(const struct cg_artifact *baseline, const struct cg_artifact *current,
                         bool states, struct cg_kernel_choices *out)
{
    size_t n = baseline->n_runs + current->n_runs, any = 0;
    struct kset *sets = calloc(n ? n : 1, sizeof(*sets));
    size_t *group = calloc(n ? n : 1, sizeof(*group)), *rep = calloc(n ? n : 1, sizeof(*rep));
    size_t *same = calloc(n ? n : 1, sizeof(*same)), lists = 0;
    bool *fast = calloc(n ? n : 1, sizeof(*fast));
    int rc = CG_ENOMEM;
    memset(out, 0, sizeof(*out));
    if (sets == NULL || group == NULL || rep == NULL || same == NULL || fast == NULL)
        goto done;
    for (size_t i = 0; i < n; i++) { /* same[i]: the first run listing i's kernels as i does */
        const struct cg_run *run = pooled_run(baseline, current, i);
        size_t k = 0;
        same[i] = i;
        for (size_t j = 0; j < i && same[i] == i; j++)
            if (same[j] == j && same_kernel_list(pooled_run(baseline, current, j), run))
                same[i] = j;
        lists += same[i] == i && next_kernel(run, &k) != NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (same[i] != i)
            sets[i] = (struct kset){sets[same[i]].names, sets[same[i]].n, true};
        else if (kset_of(pooled_run(baseline, current, i), lists > 1, &sets[i]) != 0)
            goto done;
        any += sets[i].n;
    }
    if (any == 0) { /* no kernels anywhere (a CPU canary): nothing to tell apart */
        rc = 0;
        goto done;
    }
    if (states && fast_runs(baseline, current, fast) != 0)
        goto done;
    out->items = calloc(n, sizeof(*out->items));
    if (out->items == NULL)
        goto done;
    out->states_known = states;
    for (size_t i = 0; i < n; i++) {
        size_t g = 0;
        if (sets[i].n == 0)
            continue; /* kernels not measured (no GPU metrics), or none ran: no choice seen */
        while (g < out->n && !kset_eq(&sets[rep[g]], &sets[i]))
            g++;
        if (g == out->n)
            rep[out->n++] = i;
        group[i] = g;
        int side = i >= baseline->n_runs;
        out->items[g].runs[side]++;
        out->items[g].fast[side] += states && fast[i];
    }
    if (name_differences(out, sets, rep) != 0)
        goto done;
    out->by_side = out->n == 2 && (out->items[0].runs[0] == 0 || out->items[0].runs[1] == 0) &&
                   (out->items[1].runs[0] == 0 || out->items[1].runs[1] == 0) &&
                   out->items[0].runs[0] + out->items[1].runs[0] > 0 &&
                   out->items[0].runs[1] + out->items[1].runs[1] > 0;
    qsort(out->items, out->n, sizeof(*out->items), cmp_choice);
    rc = 0;
done:
    for (size_t i = 0; sets != NULL && i < n; i++)
        if (!sets[i].shared)
            free(sets[i].names);
    free(sets);
    free(group);
    free(rep);
    free(same);
    free(fast);
    if (rc != 0)
        cg_kernel_choices_release(out);
    return rc;
}

void cg_kernel_choices_release(struct cg_kernel_choices *c)
{
    for (size_t i = 0; c->items != NULL && i < c->n; i++) {
        free(c->items[i].only);
        free(c->items[i].without);
    }
    free(c->items);
    memset(c, 0, sizeof(*c));
}
