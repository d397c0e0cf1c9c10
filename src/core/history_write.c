/*
 * history_write: changing a history and writing it back (history.h): the check before a
 * rewrite, the lock around a read-modify-write, appending an entry, bounding each gate to its
 * newest runs (the older ones folded into its summary) and saving atomically. The lines are
 * rendered by history.c (history_internal.h). Not thread-safe; the lock is between processes.
 */
#include "history_internal.h"

#include "fsutil.h"
#include "stats.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

int cg_history_check_rewrite(const struct cg_history *h, const char *path, struct cg_err *err)
{
    if (h->read > 0 || h->skipped == 0)
        return 0;
    return cg_err_set(err, CG_EINPUT,
                      "'%s' is not a history: none of its %zu lines can be read (line %zu: %s); "
                      "nothing was written",
                      path, h->skipped, h->first_unread_line, h->first_unread_why);
}

int cg_history_lock(const char *path, struct cg_err *err)
{
    char target[PATH_MAX];
    path = cg_file_target(path, target); /* a symlink's target: one lock whichever path */
    size_t n = strlen(path) + sizeof(".lock");
    char *lock = malloc(n);
    if (lock == NULL)
        return cg_err_set(err, CG_ENOMEM, "out of memory");
    snprintf(lock, n, "%s.lock", path);
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK, 0644);
    int rc;
    if (fd < 0)
        rc = cg_err_set(err, CG_EIO, "cannot lock history: cannot open '%s': %s", lock,
                        strerror(errno));
    else {
        while ((rc = flock(fd, LOCK_EX)) != 0 && errno == EINTR)
            ;
        if (rc != 0) {
            rc = cg_err_set(err, CG_EIO, "cannot lock history '%s': %s", lock, strerror(errno));
            close(fd);
        } else {
            rc = fd;
        }
    }
    free(lock);
    return rc;
}

void cg_history_unlock(int fd)
{
    if (fd >= 0)
        close(fd); /* releases the flock */
}

/* --- writing ------------------------------------------------------------------------------ */

static char *dup_or_null(const char *s, bool *failed)
{
    if (s == NULL)
        return NULL;
    char *d = strdup(s);
    *failed |= d == NULL;
    return d;
}

static int copy_entry(struct cg_history_entry *d, const struct cg_history_entry *s)
{
    bool failed = false;
    *d = *s;
    d->commit = dup_or_null(s->commit, &failed);
    d->date = dup_or_null(s->date, &failed);
    d->environment = dup_or_null(s->environment, &failed);
    d->gate_id = dup_or_null(s->gate_id, &failed);
    d->reason = dup_or_null(s->reason, &failed);
    d->who = dup_or_null(s->who, &failed);
    d->first_commit = dup_or_null(s->first_commit, &failed);
    d->first_date = dup_or_null(s->first_date, &failed);
    d->line = dup_or_null(s->line, &failed);
    if (failed) {
        cg_history_entry_release(d);
        return CG_ENOMEM;
    }
    return 0;
}

int cg_history_append(struct cg_history *h, const struct cg_history_entry *e)
{
    if (e->commit == NULL || e->commit[0] == '\0' || e->date == NULL || e->date[0] == '\0')
        return CG_EINPUT;
    struct cg_history_entry d;
    if (copy_entry(&d, e) != 0)
        return CG_ENOMEM;
    if (cg_history_push(h, &d) != 0) {
        cg_history_entry_release(&d);
        return CG_ENOMEM;
    }
    return 0;
}

/* Folds runs and the old summary among from[0..n) into *s (their values' median; interval: the
 * lowest low and the highest high). */
static int fold(const struct cg_history_entry *from, size_t n, struct cg_history_entry *s)
{
    double *v = malloc((n + 1) * sizeof(*v));
    if (v == NULL)
        return CG_ENOMEM;
    for (int m = 0; m < CG_M_COUNT; m++) {
        size_t k = 0;
        struct cg_history_value out = {false, 0, INFINITY, -INFINITY, 0};
        for (size_t i = 0; i < n; i++) {
            const struct cg_history_value *x = &from[i].metric[m];
            if (from[i].type == CG_HIST_EVENT || !x->present)
                continue;
            v[k++] = x->median;
            out.low = fmin(out.low, x->low);
            out.high = fmax(out.high, x->high);
            out.runs += x->runs;
        }
        if (k > 0) {
            out.present = true;
            out.median = cg_stats_quantile(v, k, 0.5);
            out.low = fmin(out.low, out.median);
            out.high = fmax(out.high, out.median);
        }
        s->metric[m] = out;
    }
    free(v);
    return 0;
}

/* An entry's place in the order by gate (the entries without one first), newest first. */
struct by_gate {
    const char *gate;
    size_t i;
};

static int gate_cmp(const char *a, const char *b)
{
    return a == NULL || b == NULL ? (a != NULL) - (b != NULL) : strcmp(a, b);
}

static int by_gate_cmp(const void *pa, const void *pb)
{
    const struct by_gate *a = pa, *b = pb;
    int c = gate_cmp(a->gate, b->gate);
    return c != 0 ? c : (a->i < b->i) - (a->i > b->i);
}

/* What bounding folds of one gate: its entries before its keep-th newest run, when runs are
 * among them (old[0..n): newest first), and the summary that stands for them. */
struct gate_fold {
    size_t first;                 /* the index of its oldest folded entry: where it stands */
    struct cg_history_entry made; /* the summary (type CG_HIST_SUMMARY) */
};

/* The summary of the folded entries old[0..n) (newest first, at least one run among them). */
static int fold_gate(const struct cg_history *h, const struct by_gate *old, size_t n,
                     struct cg_history_entry *s)
{
    struct cg_history_entry *from = malloc(n * sizeof(*from));
    if (from == NULL)
        return CG_ENOMEM;
    const struct cg_history_entry *newest = NULL, *oldest = NULL;
    int64_t count = 0;
    size_t k = 0;
    for (size_t j = n; j-- > 0;) { /* oldest first */
        const struct cg_history_entry *e = &h->entries[old[j].i];
        if (e->type == CG_HIST_EVENT)
            continue; /* dropped with the runs around it */
        from[k++] = *e;
        count += e->type == CG_HIST_SUMMARY ? e->summarised : 1;
        if (oldest == NULL)
            oldest = e;
        if (e->type == CG_HIST_RUN)
            newest = e;
    }
    cg_history_entry_init(s, CG_HIST_SUMMARY);
    bool failed = newest == NULL;
    if (!failed) {
        s->summarised = count;
        s->commit = dup_or_null(newest->commit, &failed);
        s->date = dup_or_null(newest->date, &failed);
        s->environment = dup_or_null(newest->environment, &failed);
        s->gate_id = dup_or_null(newest->gate_id, &failed);
        bool was_summary = oldest->type == CG_HIST_SUMMARY;
        s->first_commit = dup_or_null(was_summary ? oldest->first_commit : oldest->commit, &failed);
        s->first_date = dup_or_null(was_summary ? oldest->first_date : oldest->date, &failed);
    }
    int rc = failed ? CG_ENOMEM : fold(from, k, s);
    free(from);
    if (rc != 0)
        cg_history_entry_release(s);
    return rc;
}

static int by_first(const void *pa, const void *pb)
{
    const struct gate_fold *a = pa, *b = pb;
    return (a->first > b->first) - (a->first < b->first);
}

int cg_history_bound(struct cg_history *h, size_t keep)
{
    if (keep < 1)
        keep = 1;
    if (h->n == 0)
        return 0;
    struct by_gate *order = malloc(h->n * sizeof(*order));
    struct gate_fold *front = calloc(h->n, sizeof(*front));
    bool *folded = calloc(h->n, sizeof(*folded));
    struct cg_history_entry *kept = malloc(h->n * sizeof(*kept));
    size_t n_front = 0, n_made = 0;
    int rc = order && front && folded && kept ? 0 : CG_ENOMEM;
    for (size_t i = 0; i < h->n && rc == 0; i++)
        order[i] = (struct by_gate){h->entries[i].gate_id, i};
    if (rc == 0)
        qsort(order, h->n, sizeof(*order), by_gate_cmp);
    /* Per gate: its entries before its keep-th newest run, when runs are among them, become
     * its summary. */
    for (size_t a = 0, b; a < h->n && rc == 0; a = b) {
        size_t runs = 0, cut = 0; /* order[cut..b): older than the keep-th newest run */
        for (b = a; b < h->n && gate_cmp(order[b].gate, order[a].gate) == 0; b++)
            if (h->entries[order[b].i].type == CG_HIST_RUN && ++runs == keep)
                cut = b + 1;
        if (runs <= keep)
            continue;
        struct gate_fold *f = &front[n_front];
        if ((rc = fold_gate(h, order + cut, b - cut, &f->made)) != 0)
            break;
        f->first = order[b - 1].i;
        n_front++, n_made++;
        for (size_t j = cut; j < b; j++)
            folded[order[j].i] = true;
    }
    if (rc != 0 || n_made == 0) {
        for (size_t j = 0; j < n_front; j++)
            cg_history_entry_release(&front[j].made);
        goto done;
    }
    /* The summaries first (in the order of the entries they stand for, the old ones kept where
     * their gate folded nothing), then the entries kept, in order. */
    size_t n_kept = 0;
    for (size_t i = 0; i < h->n; i++) {
        if (folded[i])
            cg_history_entry_release(&h->entries[i]);
        else if (h->entries[i].type == CG_HIST_SUMMARY)
            front[n_front++] = (struct gate_fold){i, h->entries[i]};
        else
            kept[n_kept++] = h->entries[i];
    }
    qsort(front, n_front, sizeof(*front), by_first);
    /* Unreadable lines among the folded entries stay, in their order, after the summaries. */
    for (size_t r = 0, i = 0, k = 0; r < h->n_raw; r++) {
        size_t *at = &h->raw[r].before;
        for (; i < *at && i < h->n; i++)
            k += !folded[i] && h->entries[i].type != CG_HIST_SUMMARY;
        *at = *at == 0 ? 0 : n_front + k;
    }
    for (size_t j = 0; j < n_front; j++)
        h->entries[j] = front[j].made;
    memcpy(h->entries + n_front, kept, n_kept * sizeof(*kept));
    h->n = n_front + n_kept;
done:
    free(order);
    free(front);
    free(folded);
    free(kept);
    return rc;
}

int cg_history_save(const char *path, const struct cg_history *h, struct cg_err *err)
{
    if (h->streamed)
        return cg_err_set(err, CG_EINTERNAL,
                          "cannot write '%s': the history was read in part (a bug)", path);
    struct cg_buf b;
    cg_buf_init(&b, CG_HISTORY_MAX_BYTES);
    int rc = cg_history_render(h, &b);
    if (rc != 0)
        rc = cg_err_set(err, CG_ENOMEM, "cannot write '%s': out of memory", path);
    else
        rc = cg_file_write_atomic(path, b.data ? b.data : "", b.len, err);
    cg_buf_release(&b);
    return rc;
}
