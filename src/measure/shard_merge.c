/*
 * shard_merge: a run's shards summed up (progress, "done") and merged into one run of the
 * artifact (see shard.h for the merge rules). Not thread-safe.
 */
#include "shard.h"

#include "opname.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t contiguous_steps(const struct cg_shard *s)
{
    int64_t k = 0;
    while ((size_t)k < s->n_steps && s->steps[k].seen)
        k++;
    return k;
}

void cg_shard_status(const struct cg_shard *shards, size_t n, struct cg_shard_status *st)
{
    int64_t best_end = -1;
    memset(st, 0, sizeof(*st));
    st->n_shards = n;
    st->last_step_ns = -1;
    st->all_complete = n > 0;
    st->nonfinite_loss_step = -1;
    st->nonfinite_loss = NAN;
    st->done_steps = -1;
    for (size_t i = 0; i < n; i++) {
        const struct cg_shard *s = &shards[i];
        if (!s->complete)
            st->all_complete = false;
        if (s->nonfinite_loss_step >= 0 &&
            (st->nonfinite_loss_step < 0 || s->nonfinite_loss_step < st->nonfinite_loss_step)) {
            st->nonfinite_loss_step = s->nonfinite_loss_step;
            st->nonfinite_loss = s->nonfinite_loss;
        }
        int64_t k = contiguous_steps(s);
        if (k == 0)
            continue;
        st->steps_seen = st->n_with_steps == 0 || k < st->steps_seen ? k : st->steps_seen;
        st->all_done = (st->n_with_steps == 0 || st->all_done) && s->done_steps >= 0;
        if (st->all_done && (st->done_steps < 0 || s->done_steps < st->done_steps))
            st->done_steps = s->done_steps;
        st->n_with_steps++;
        if (st->steps_from == CG_STEPS_UNKNOWN)
            st->steps_from = s->steps_from;
        else if (s->steps_from != CG_STEPS_UNKNOWN && s->steps_from != st->steps_from)
            st->steps_mixed = true;
        for (size_t j = 0; j < s->n_steps; j++) {
            if (s->steps[j].seen && s->steps[j].end_ns > best_end) {
                best_end = s->steps[j].end_ns;
                st->last_step_ns = s->steps[j].wall_ns;
            }
        }
    }
    if (!st->all_done)
        st->done_steps = -1;
    if (st->steps_mixed)
        st->steps_from = CG_STEPS_NVTX; /* the same whatever order the shards come in */
}

/* Which of shards a and b (NULL: none) comes first when ranks are named: the lower rank, then
 * shards without a rank by pid. */
static const struct cg_shard *first_named(const struct cg_shard *a, const struct cg_shard *b)
{
    int64_t ra, rb, w;
    if (a == NULL)
        return b;
    bool ka = cg_shard_rank(a, &ra, &w), kb = cg_shard_rank(b, &rb, &w);
    if (ka != kb)
        return ka ? a : b;
    return (ka ? rb < ra : b->pid < a->pid) ? b : a;
}

/* "rank R" or "pid P" for shard s, and " (and N more)" when others share its source. */
static void name_shard(const struct cg_shard *s, size_t others, char *dst, size_t cap)
{
    int64_t r, w;
    char more[48] = "";
    if (others > 0)
        snprintf(more, sizeof(more), " (and %zu more)", others);
    if (cg_shard_rank(s, &r, &w))
        snprintf(dst, cap, "rank %lld%s", (long long)r, more);
    else
        snprintf(dst, cap, "pid %lld%s", (long long)s->pid, more);
}

int cg_shard_check_steps_from(const struct cg_shard *shards, size_t n, struct cg_err *err)
{
    /* NVTX; optimizer, its own ranges ignored (steps_ignored); optimizer, none of its own */
    const struct cg_shard *first[3] = {NULL, NULL, NULL};
    size_t count[3] = {0, 0, 0};
    int64_t warmup = 0; /* the warm-up that would have let every optimizer rank's own count */
    for (size_t i = 0; i < n; i++) {
        const struct cg_shard *s = &shards[i];
        if (contiguous_steps(s) == 0 || s->steps_from == CG_STEPS_UNKNOWN)
            continue;
        int k = s->steps_from == CG_STEPS_NVTX ? 0 : s->steps_ignored >= 0 ? 1 : 2;
        count[k]++;
        first[k] = first_named(first[k], s);
        if (k == 1 && s->steps_ignored > warmup)
            warmup = s->steps_ignored;
    }
    if (count[0] == 0 || count[1] + count[2] == 0)
        return 0;
    char nvtx[64], ign[64], opt[64];
    name_shard(first[0], count[0] - 1, nvtx, sizeof(nvtx));
    if (count[2] ==
        0) { /* every rank began its own: the optimizer's steps won where they came late */
        name_shard(first[1], count[1] - 1, ign, sizeof(ign));
        return cg_err_set(
            err, CG_ECANARY,
            "%s marks its steps with its own NVTX step ranges; %s began its own after "
            "its optimizer's measured steps (canary-gate's optimizer steps): they "
            "were ignored and its steps taken from its optimizer: a run has one "
            "definition of a step; give --steps-from nvtx, or a --warmup of at "
            "least %lld",
            nvtx, ign, (long long)warmup);
    }
    char also[256] = ""; /* the text and ign and more in full */
    name_shard(first_named(first[1], first[2]), count[2] + count[1] - 1, opt, sizeof(opt));
    if (count[1] > 0) {
        name_shard(first[1], 0, ign, sizeof(ign));
        char more[64] = "";
        if (count[1] > 1)
            snprintf(more, sizeof(more), " and those of %zu more", count[1] - 1);
        snprintf(also, sizeof(also),
                 " (%s's own%s began after its optimizer's measured steps and were ignored)", ign,
                 more);
    }
    return cg_err_set(err, CG_ECANARY,
                      "%s marks its steps with its own NVTX step ranges, %s takes them from its "
                      "optimizer (canary-gate's optimizer steps)%s: a run has one definition of a "
                      "step; mark the step ranges in every rank, or give --steps-from optimizer",
                      nvtx, opt, also);
}

bool cg_shard_tokens_partial(const struct cg_shard *shards, size_t n, int64_t warmup, int64_t steps,
                             char *who, size_t cap)
{
    const struct cg_shard *first[2] = {NULL, NULL}; /* with a payload, without one */
    if (cap > 0)
        who[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        const struct cg_shard *s = &shards[i];
        int64_t seen = contiguous_steps(s);
        int64_t end = seen < warmup + steps ? seen : warmup + steps;
        if (seen == 0)
            continue;
        bool gave = false;
        for (int64_t k = warmup; k < end && !gave; k++)
            gave = s->steps[k].tokens >= 0;
        first[!gave] = first_named(first[!gave], s);
    }
    if (first[0] == NULL || first[1] == NULL)
        return false;
    char with[48], without[48];
    name_shard(first[0], 0, with, sizeof(with));
    name_shard(first[1], 0, without, sizeof(without));
    snprintf(who, cap, "%s gave its steps' tokens as payloads, %s none", with, without);
    return true;
}

struct merged_op {
    const char *name; /* borrowed from a shard */
    enum cg_op_kind kind;
    int64_t calls, total_ns;
};

static int cmp_op(const void *x, const void *y)
{
    const struct merged_op *a = x, *b = y;
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    return strcmp(a->name, b->name);
}

static int add_op(struct cg_run *run, const struct merged_op *m)
{
    char *demangled = m->kind == CG_OP_KERNEL ? cg_opname_demangle(m->name) : NULL;
    const char *name = demangled ? demangled : m->name;
    if (name[0] == '\0')
        name = "(unnamed)"; /* nvtxRangePushA(""): an artifact's op names are never empty */
    char *family = cg_opname_family(m->kind, name);
    int rc = family == NULL ? CG_ENOMEM
                            : cg_run_add_op(run, name, family, m->kind, m->calls, m->total_ns);
    free(demangled);
    free(family);
    return rc;
}

static int merge_ops(const struct cg_shard *shards, size_t n, struct cg_run *run)
{
    size_t total = 0, k = 0;
    int rc = 0;
    for (size_t i = 0; i < n; i++)
        total += shards[i].n_ops;
    if (total == 0)
        return 0;
    struct merged_op *all = malloc(total * sizeof(*all));
    if (all == NULL)
        return CG_ENOMEM;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < shards[i].n_ops; j++) {
            const struct cg_shard_op *o = &shards[i].ops[j];
            all[k++] = (struct merged_op){o->name, o->kind, o->calls, o->total_ns};
        }
    qsort(all, total, sizeof(*all), cmp_op);
    for (size_t i = 0; i < total && rc == 0;) {
        struct merged_op m = all[i];
        size_t j = i + 1;
        for (; j < total && cmp_op(&all[j], &m) == 0; j++) {
            m.calls = cg_shard_add_capped(m.calls, all[j].calls);
            m.total_ns = cg_shard_add_capped(m.total_ns, all[j].total_ns);
        }
        if (m.calls > 0)
            rc = add_op(run, &m);
        i = j;
    }
    free(all);
    return rc;
}

/* The UUID of device id dev in shard s, NULL when the shard names none. */
static const char *device_uuid(const struct cg_shard *s, int64_t dev)
{
    for (size_t i = 0; i < s->n_uuids; i++)
        if (s->uuids[i].device == dev)
            return s->uuids[i].uuid;
    return NULL;
}

/* Whether memory line b of shard sb is on the same device as line a of shard sa: the same UUID,
 * or, where either shard names none, the same CUDA id (the rule before shards named UUIDs). */
static bool same_device(const struct cg_shard *sa, const struct cg_shard_mem *a,
                        const struct cg_shard *sb, const struct cg_shard_mem *b)
{
    const char *ua = device_uuid(sa, a->device), *ub = device_uuid(sb, b->device);
    if (ua != NULL && ub != NULL)
        return strcmp(ua, ub) == 0;
    return ua == NULL && ub == NULL && a->device == b->device;
}

/* The largest over devices of the peaks summed over the processes on that device (-1: none):
 * each process's own peak, so two processes sharing a GPU give an upper bound of what they held
 * at once, the same from run to run (docs/collector.md says why not the exact sum). */
static int64_t merged_peak(const struct cg_shard *shards, size_t n)
{
    int64_t best = -1;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < shards[i].n_mem; j++) {
            int64_t sum = 0;
            for (size_t a = 0; a < n; a++)
                for (size_t b = 0; b < shards[a].n_mem; b++)
                    if (same_device(&shards[i], &shards[i].mem[j], &shards[a], &shards[a].mem[b]))
                        sum = cg_shard_add_capped(sum, shards[a].mem[b].peak_bytes);
            if (sum > best)
                best = sum;
        }
    return best;
}

/* The sum over shards of the int64_t counter at offset (capped), -1 when no shard knows it. */
static int64_t sum_counter(const struct cg_shard *shards, size_t n, size_t offset)
{
    int64_t sum = -1;
    for (size_t i = 0; i < n; i++) {
        int64_t v;
        memcpy(&v, (const char *)&shards[i] + offset, sizeof(v));
        if (v >= 0)
            sum = cg_shard_add_capped(sum < 0 ? 0 : sum, v);
    }
    return sum;
}

/* True when shard s measured count c (or step time c, a CG_SHARD_T_*). */
static bool shard_counts(const struct cg_shard *s, int c)
{
    if (c == CG_COUNT_RANGES)
        return true;
    if (c == CG_COUNT_BACKWARD || c == CG_COUNT_OPTIMIZER_STEPS)
        return s->counted[c]; /* named once the optimizers were hooked, GPU or not */
    return s->gpu == 1 && (c >= CG_COUNT_N ? s->times_counted[c - CG_COUNT_N] : s->counted[c]);
}

/* True when every shard with steps measured step time c (a CG_SHARD_T_*). */
static bool all_measured(const struct cg_shard *shards, size_t n, int c)
{
    for (size_t i = 0; i < n; i++)
        if (contiguous_steps(&shards[i]) > 0 && !shard_counts(&shards[i], c))
            return false;
    return true;
}

/* Step k's counts and host time in synchronisations over the shards with steps (see shard.h). */
static void merge_counts(const struct cg_shard *shards, size_t n, int64_t k, struct cg_step *to)
{
    for (int c = 0; c <= CG_COUNT_N; c++) {
        int64_t v = -1;
        bool known = true;
        for (size_t i = 0; i < n && known; i++) {
            const struct cg_shard *s = &shards[i];
            if (contiguous_steps(s) == 0)
                continue;
            known = shard_counts(s, c);
            if (c == CG_COUNT_N) {
                if (s->steps[k].sync_ns > v)
                    v = s->steps[k].sync_ns;
            } else {
                v = cg_shard_add_capped(v < 0 ? 0 : v, s->steps[k].counts[c]);
            }
        }
        int64_t *dst = c == CG_COUNT_N ? &to->sync_ns : &to->counts[c];
        *dst = known ? v : -1;
    }
}

static int cmp_place(const void *x, const void *y)
{
    const struct cg_count_place *a = x, *b = y;
    if (a->count != b->count)
        return a->count < b->count ? -1 : 1;
    if (a->after != b->after)
        return a->after ? 1 : -1;
    return strcmp(a->range, b->range);
}

/* The places of the shards with steps, summed, when every one of them placed its calls (with
 * CUPTI running); a place the run has no room for is left out with a warning. */
static int merge_places(const struct cg_shard *shards, size_t n, struct cg_run *run)
{
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        if (contiguous_steps(&shards[i]) == 0)
            continue;
        if (shards[i].gpu != 1 || !shards[i].placed)
            return 0;
        any = true;
    }
    if (!any)
        return 0;
    run->places_measured = true;
    bool full = false;
    for (size_t i = 0; i < n; i++) {
        if (contiguous_steps(&shards[i]) == 0)
            continue;
        for (size_t j = 0; j < shards[i].n_places; j++) {
            const struct cg_shard_place *p = &shards[i].places[j];
            const char *name = p->name[0] != '\0' ? p->name : "(unnamed)"; /* as its op */
            int rc = p->calls > 0 ? cg_run_add_place(run, p->count, p->after, name, p->calls) : 0;
            if (rc == CG_ENOMEM)
                return rc;
            full |= rc != 0;
        }
    }
    if (run->n_places > 1)
        qsort(run->places, run->n_places, sizeof(*run->places), cmp_place);
    return full ? cg_run_add_warning(run, "count places beyond the artifact's limit left out",
                                     CG_SHARD_MAX_WARNINGS)
                : 0;
}

/* The figures of shard s over measured steps [first, first + keep) into r (see artifact_ranks.h). */
static int rank_figures(const struct cg_shard *s, int64_t rank, int64_t first, int64_t keep,
                        struct cg_rank *r)
{
    bool compute = shard_counts(s, CG_SHARD_T_COMPUTE), copy = shard_counts(s, CG_SHARD_T_COPY);
    bool hidden = copy && shard_counts(s, CG_SHARD_T_COPY_HIDDEN);
    *r = (struct cg_rank){.rank = rank, .local_rank = s->local_rank, .busy_ns = -1,
                          .compute_ns = -1, .comm_exposed_ns = -1, .peak_device_bytes = -1};
    if ((s->gpu_model != NULL && (r->gpu_model = cg_rank_name_dup(s->gpu_model)) == NULL) ||
        (r->node = cg_rank_name_dup(cg_shard_node(s))) == NULL ||
        (keep > 0 && (r->step_ns = malloc((size_t)keep * sizeof(int64_t))) == NULL))
        return CG_ENOMEM;
    for (int64_t k = first; k < first + keep; k++) {
        const struct cg_shard_step *sp = &s->steps[k];
        r->step_ns[r->n_steps++] = sp->wall_ns;
        if (sp->gpu_busy_ns < 0)
            continue;
        r->busy_ns = cg_shard_add_capped(r->busy_ns < 0 ? 0 : r->busy_ns, sp->gpu_busy_ns);
        if (!compute)
            continue;
        int64_t c = sp->compute_ns < sp->gpu_busy_ns ? sp->compute_ns : sp->gpu_busy_ns;
        r->compute_ns = cg_shard_add_capped(r->compute_ns < 0 ? 0 : r->compute_ns, c);
        if (!copy)
            continue;
        /* what the GPU was busy with besides compute and copies no kernel hid: communication
         * kernels running alone, the part of communication that the step waits for */
        int64_t exposed_copy = sp->copy_ns - (hidden ? sp->copy_hidden_ns : 0);
        int64_t comm = sp->gpu_busy_ns - c - (exposed_copy > 0 ? exposed_copy : 0);
        r->comm_exposed_ns =
            cg_shard_add_capped(r->comm_exposed_ns < 0 ? 0 : r->comm_exposed_ns, comm > 0 ? comm : 0);
    }
    for (size_t j = 0; j < s->n_mem; j++)
        if (s->mem[j].peak_bytes > r->peak_device_bytes) {
            r->peak_device_bytes = s->mem[j].peak_bytes;
            free(r->device_uuid);
            const char *u = device_uuid(s, s->mem[j].device);
            r->device_uuid = u != NULL ? strdup(u) : NULL;
            if (u != NULL && r->device_uuid == NULL)
                return CG_ENOMEM;
        }
    return 0;
}

static int cmp_rank(const void *x, const void *y)
{
    const struct cg_rank *a = x, *b = y;
    return a->rank < b->rank ? -1 : a->rank > b->rank;
}

/* The run's ranks: one per shard with steps and a rank (cg_shard_rank), in rank order; none
 * when no shard has a rank. */
static int merge_ranks(const struct cg_shard *shards, size_t n, int64_t first, int64_t keep,
                       struct cg_run *run)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t r, w;
        k += contiguous_steps(&shards[i]) > 0 && cg_shard_rank(&shards[i], &r, &w);
    }
    run->ranks_recorded = k <= CG_ARTIFACT_MAX_RANKS; /* none: one process, said so */
    if (k == 0 || k > CG_ARTIFACT_MAX_RANKS)
        return 0;
    struct cg_rank *ranks = calloc(k, sizeof(*ranks));
    if (ranks == NULL)
        return CG_ENOMEM;
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t r, w;
        if (contiguous_steps(&shards[i]) == 0 || !cg_shard_rank(&shards[i], &r, &w))
            continue;
        if (rank_figures(&shards[i], r, first, keep, &ranks[j++]) != 0) {
            cg_ranks_free(ranks, j);
            return CG_ENOMEM;
        }
    }
    qsort(ranks, k, sizeof(*ranks), cmp_rank);
    run->ranks = ranks;
    run->n_ranks = k;
    return 0;
}

int cg_shard_merge(const struct cg_shard *shards, size_t n, const struct cg_shard_merge_opts *o,
                   struct cg_run *run, struct cg_err *err)
{
    struct cg_shard_status st;
    cg_shard_status(shards, n, &st);
    int64_t avail = st.steps_seen - o->warmup;
    int64_t keep = avail < 0 ? 0 : (avail < o->steps ? avail : o->steps);
    bool compute = all_measured(shards, n, CG_SHARD_T_COMPUTE);
    bool copy = all_measured(shards, n, CG_SHARD_T_COPY);
    bool hidden = copy && all_measured(shards, n, CG_SHARD_T_COPY_HIDDEN);
    for (int64_t k = o->warmup; k < o->warmup + keep; k++) {
        int64_t wall = 0, tokens = -1, busy = -1, n_loss = 0;
        double loss = NAN;
        /* compute and copy time are those of the process with the longest busy time, as the
         * merged busy time is its */
        const struct cg_shard_step *busiest = NULL;
        for (size_t i = 0; i < n; i++) {
            const struct cg_shard *s = &shards[i];
            if (contiguous_steps(s) == 0)
                continue;
            const struct cg_shard_step *sp = &s->steps[k];
            if (sp->wall_ns > wall)
                wall = sp->wall_ns;
            if (sp->tokens >= 0)
                tokens = cg_shard_add_capped(tokens < 0 ? 0 : tokens, sp->tokens);
            if (sp->gpu_busy_ns > busy) {
                busy = sp->gpu_busy_ns;
                busiest = sp;
            }
            if (sp->n_loss > 0) { /* the mean over the ranks that reported one */
                n_loss++;
                loss = n_loss == 1 ? sp->loss : loss + (sp->loss - loss) / (double)n_loss;
            }
        }
        if (tokens < 0)
            tokens = o->tokens_per_step;
        if (cg_run_add_step(run, wall, tokens, busy) != 0)
            return cg_err_set(err, CG_ENOMEM, "out of memory merging shards");
        struct cg_step *to = &run->steps[run->n_steps - 1];
        to->loss = loss;
        merge_counts(shards, n, k, to);
        if (busiest != NULL && compute)
            to->compute_ns = busiest->compute_ns < busy ? busiest->compute_ns : busy;
        if (busiest != NULL && copy)
            to->copy_ns = busiest->copy_ns;
        if (busiest != NULL && hidden)
            to->copy_hidden_ns = busiest->copy_hidden_ns < busiest->copy_ns
                                     ? busiest->copy_hidden_ns
                                     : busiest->copy_ns;
    }
    if (merge_ops(shards, n, run) != 0 || merge_places(shards, n, run) != 0 ||
        merge_ranks(shards, n, o->warmup, keep, run) != 0)
        return cg_err_set(err, CG_ENOMEM, "out of memory merging shards");
    run->dropped_records = sum_counter(shards, n, offsetof(struct cg_shard, dropped));
    run->zero_timestamp_records = sum_counter(shards, n, offsetof(struct cg_shard, zero_ts));
    run->outside_step_records = sum_counter(shards, n, offsetof(struct cg_shard, outside_steps));
    run->inside_step_records = sum_counter(shards, n, offsetof(struct cg_shard, inside_steps));
    run->late_memory_records = sum_counter(shards, n, offsetof(struct cg_shard, late_memory));
    run->cupti_overhead_ns = sum_counter(shards, n, offsetof(struct cg_shard, overhead_ns));
    run->stray_steps_nested = run->stray_steps_other_threads = 0;
    for (size_t i = 0; i < n; i++) {
        run->stray_steps_nested =
            cg_shard_add_capped(run->stray_steps_nested, shards[i].stray_steps[0]);
        run->stray_steps_other_threads =
            cg_shard_add_capped(run->stray_steps_other_threads, shards[i].stray_steps[1]);
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < shards[i].n_warnings; j++)
            if (cg_run_add_warning(run, shards[i].warnings[j], CG_SHARD_MAX_WARNINGS) != 0)
                return cg_err_set(err, CG_ENOMEM, "out of memory merging shards");
    cg_run_summarize(run);
    run->summary.peak_device_bytes = merged_peak(shards, n);
    return 0;
}

bool cg_shard_gpu_available(const struct cg_shard *shards, size_t n, char *reason, size_t cap)
{
    bool ran = false;
    for (size_t i = 0; i < n; i++)
        ran = ran || shards[i].gpu == 1;
    if (ran) {
        int64_t outside = sum_counter(shards, n, offsetof(struct cg_shard, outside_steps));
        int64_t inside = sum_counter(shards, n, offsetof(struct cg_shard, inside_steps));
        if (outside <= 0 || inside > 0)
            return true;
        snprintf(reason, cap, "%lld GPU activity records fell outside every step",
                 (long long)outside);
        return false;
    }
    const char *why = "the canary never initialised CUDA (no CUDA context, so no CUPTI activity)";
    for (size_t i = 0; i < n; i++)
        if (shards[i].gpu == 0) {
            const char *r = shards[i].gpu_reason; /* "gpu unavailable" may end the line */
            why = r != NULL && r[0] != '\0' ? r : "CUPTI did not start (no reason given)";
            break;
        }
    snprintf(reason, cap, "%s", why);
    return false;
}
