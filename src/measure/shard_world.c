/*
 * shard_world: whether a run's shards hold every rank of the world they report, once each
 * (see shard.h, cg_shard_check_world). A shard's rank is RANK where the process had one (torchrun,
 * or a launcher that sets it), else an MPI launcher's rank (Open MPI, MPICH, MVAPICH: mpirun in a
 * Slurm job inherits the job's SLURM_PROCID), else SLURM_PROCID of a task srun started (the
 * shard's slurm_step: a batch script's process, or one in the gate's own step, inherited the
 * step's SLURM_PROCID and is no rank); its world WORLD_SIZE, else the MPI launcher's size, else
 * SLURM_NTASKS of a task srun started, wherever the rank came from; its node
 * SLURMD_NODENAME, else the host name. Only shards with steps count: a process that marked none (a
 * launcher's agent, a helper) is no rank of the training, though one with a missing rank's number
 * is named as the shard of that rank that marked no step. One pass over the shards and one over
 * the world. Pure; not thread-safe.
 *
 * A Slurm task is a process srun started and all it starts: every process inherits the task's
 * SLURM_PROCID. Where one task holds several processes with steps (torch.multiprocessing.spawn
 * under srun -n 1, a shell that starts two), they are that task's processes (task_group): the
 * world check counts the task once, none of them is Slurm's rank in the run (cg_shard_rank), and
 * SLURM_NTASKS, a count of tasks, is no world for ranks they set themselves (RANK). The same task
 * number in two steps is two launches. Processes merged as one run's because nothing tells them
 * apart (one task's, or without a rank on one host) ran together; one of them whose process
 * started after another had made its steps is the canary run again, a restart
 * (cg_shard_check_restarts; their starts and step times are on one host's clock).
 */
#include "shard.h"

#include "buf.h"
#include "fmt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where a rank or a world came from: RANK or WORLD_SIZE, an MPI launcher, Slurm. */
enum source { FROM_NONE, FROM_RANK, FROM_MPI, FROM_SLURM };

/* The rank of s and where it came from (-1 and FROM_NONE: none): RANK, else an MPI launcher's
 * (before Slurm's: mpirun in a job inherits its PROCID), else SLURM_PROCID of a task srun
 * started. */
static int64_t rank_of(const struct cg_shard *s, enum source *from)
{
    *from = FROM_NONE;
    if (s->rank >= 0) {
        *from = FROM_RANK;
        return s->rank;
    }
    if (s->mpi_rank >= 0) {
        *from = FROM_MPI;
        return s->mpi_rank;
    }
    if (s->slurm_step >= 0 && s->slurm_procid >= 0) {
        *from = FROM_SLURM;
        return s->slurm_procid;
    }
    return -1;
}

/* The world of s and where it came from (-1 and FROM_NONE: none): WORLD_SIZE, else the MPI
 * launcher's size, else SLURM_NTASKS of a task srun started, wherever its rank came from, but
 * for a rank of its own (RANK, MPI) in a task of several processes with steps. */
static int64_t world_of(const struct cg_shard *s, enum source *from)
{
    *from = FROM_NONE;
    if (s->world_size >= 0) {
        *from = FROM_RANK;
        return s->world_size;
    }
    if (s->mpi_size >= 0) {
        *from = FROM_MPI;
        return s->mpi_size;
    }
    /* a count of tasks: no world for ranks that processes of one task set themselves */
    bool own_ranks = s->rank >= 0 || s->mpi_rank >= 0;
    if (s->slurm_step >= 0 && s->slurm_ntasks >= 0 && !(own_ranks && s->task_group >= 0)) {
        *from = FROM_SLURM;
        return s->slurm_ntasks;
    }
    return -1;
}

bool cg_shard_rank(const struct cg_shard *s, int64_t *rank, int64_t *world)
{
    enum source rf, wf;
    *rank = rank_of(s, &rf);
    *world = world_of(s, &wf);
    if (rf == FROM_SLURM && s->task_group >= 0)
        *rank = -1; /* one of several processes of Slurm's task: not that rank itself */
    return *rank >= 0;
}

/* A shard with steps that may share its srun task with others, for sorting. */
struct task_at {
    const struct cg_shard *s;
    size_t at;
};

static int cmp_task(const void *x, const void *y)
{
    const struct cg_shard *a = ((const struct task_at *)x)->s, *b = ((const struct task_at *)y)->s;
    size_t ia = ((const struct task_at *)x)->at, ib = ((const struct task_at *)y)->at;
    int c =
        strcmp(a->slurm_job != NULL ? a->slurm_job : "", b->slurm_job != NULL ? b->slurm_job : "");
    if (c != 0)
        return c;
    if (a->slurm_step != b->slurm_step)
        return a->slurm_step < b->slurm_step ? -1 : 1;
    if (a->slurm_procid != b->slurm_procid)
        return a->slurm_procid < b->slurm_procid ? -1 : 1;
    return ia < ib ? -1 : ia > ib;
}

int cg_shard_mark_tasks(struct cg_shard *shards, size_t n)
{
    struct task_at *v = malloc((n > 0 ? n : 1) * sizeof(*v));
    for (size_t i = 0; i < n; i++)
        shards[i].task_group = -1;
    if (v == NULL)
        return CG_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const struct cg_shard *s = &shards[i];
        if (s->n_steps > 0 && s->steps[0].seen && s->slurm_step >= 0 && s->slurm_procid >= 0)
            v[k++] = (struct task_at){s, i};
    }
    qsort(v, k, sizeof(*v), cmp_task);
    for (size_t g = 0, e; g < k; g = e) {
        for (e = g + 1;
             e < k && cmp_task(&(struct task_at){v[e].s, 0}, &(struct task_at){v[g].s, 0}) == 0;
             e++)
            ;
        for (size_t j = g; j < e && e - g > 1; j++)
            shards[v[j].at].task_group = (int64_t)v[g].at;
    }
    free(v);
    return 0;
}

/* Whether shards a and b are processes of one srun task (cg_shard_mark_tasks). */
static bool one_task(const struct cg_shard *a, const struct cg_shard *b)
{
    return a->task_group >= 0 && a->task_group == b->task_group;
}

const char *cg_shard_clock_host(const struct cg_shard *s)
{
    if (s->clock_host != NULL)
        return s->clock_host;
    return s->host != NULL ? s->host : s->slurm_node != NULL ? s->slurm_node : "";
}

/* A process with steps that may have run after another of its task (cg_shard_check_restarts):
 * task, its task_group (-1: a process without a rank), rank, its own rank in the task (RANK, an
 * MPI rank; -1 none), and its steps' span in its host's clock (the span of all its images'
 * steps, when it exec'd). Only processes of one task, rank and clock are compared. */
struct span_at {
    size_t at;
    int64_t task, rank;
    const char *clock;
    int64_t first_ns, last_ns; /* the first step's start, the last step's end */
    int64_t pid, pid_start_ticks, pid_ns; /* the process (one_process) */
    int64_t started_ns;                   /* its start on the steps' clock, when started_known */
    bool started_known;
    int64_t ppid; /* its parent's pid when the library started; -1 unknown */
};

/* Whether a and b are images of one process that exec'd: one pid and one recorded start
 * ("pid_start", which exec keeps) on one host, in one task. */
static bool one_process(const struct span_at *a, const struct span_at *b)
{
    return a->task == b->task && a->rank == b->rank && a->pid == b->pid &&
           a->pid_start_ticks >= 0 && a->pid_start_ticks == b->pid_start_ticks &&
           a->pid_ns == b->pid_ns && strcmp(a->clock, b->clock) == 0;
}

static int cmp_i64(int64_t a, int64_t b)
{
    return (a > b) - (a < b);
}

/* By task, rank, clock, pid and recorded start (then the index): one process's images
 * together. */
static int cmp_process(const void *x, const void *y)
{
    const struct span_at *a = x, *b = y;
    int c = cmp_i64(a->task, b->task);
    if (c == 0)
        c = cmp_i64(a->rank, b->rank);
    if (c == 0)
        c = strcmp(a->clock, b->clock);
    if (c == 0)
        c = cmp_i64(a->pid, b->pid);
    if (c == 0)
        c = cmp_i64(a->pid_start_ticks, b->pid_start_ticks);
    if (c == 0)
        c = cmp_i64(a->pid_ns, b->pid_ns);
    return c != 0 ? c : (a->at > b->at) - (a->at < b->at);
}

/* Folds the spans of one process's images (one_process) into one span, the first image's: k
 * spans in, the number left. O(k log k). */
static size_t fold_images(struct span_at *v, size_t k)
{
    qsort(v, k, sizeof(*v), cmp_process);
    size_t m = 0;
    for (size_t i = 0; i < k; i++) {
        if (m == 0 || !one_process(&v[m - 1], &v[i])) {
            v[m++] = v[i];
            continue;
        }
        if (v[i].first_ns < v[m - 1].first_ns)
            v[m - 1].first_ns = v[i].first_ns;
        if (v[i].last_ns > v[m - 1].last_ns)
            v[m - 1].last_ns = v[i].last_ns;
        if (v[i].started_known &&
            (!v[m - 1].started_known || v[i].started_ns < v[m - 1].started_ns)) {
            v[m - 1].started_ns = v[i].started_ns;
            v[m - 1].started_known = true;
        }
    }
    return m;
}

/* By task, rank, then clock, then when the steps began (then the index: the order never
 * depends on qsort's). */
static int cmp_span(const void *x, const void *y)
{
    const struct span_at *a = x, *b = y;
    if (a->task != b->task)
        return a->task < b->task ? -1 : 1;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    int c = strcmp(a->clock, b->clock);
    if (c != 0)
        return c;
    if (a->first_ns != b->first_ns)
        return a->first_ns < b->first_ns ? -1 : 1;
    return (a->at > b->at) - (a->at < b->at);
}

static bool same_clock_task(const struct span_at *a, const struct span_at *b)
{
    return a->task == b->task && a->rank == b->rank && strcmp(a->clock, b->clock) == 0;
}

/* The span of s's steps into *sp: false when it marked none. */
static bool step_span(const struct cg_shard *s, struct span_at *sp)
{
    bool any = false;
    for (size_t k = 0; k < s->n_steps; k++) {
        const struct cg_shard_step *st = &s->steps[k];
        if (!st->seen)
            continue;
        int64_t start = st->end_ns - st->wall_ns;
        if (!any || start < sp->first_ns)
            sp->first_ns = start;
        if (!any || st->end_ns > sp->last_ns)
            sp->last_ns = st->end_ns;
        any = true;
    }
    return any;
}

/* "[srun task 0 of step 3 of job 42: ]pid 12 on n1 started after pid 11 had made its last step
 * ..." for b, which started after a had made its last step (a the earlier process of its task
 * whose steps ended first), with the two things that lead to it: CG_ECANARY. */
static int restart_error(const struct cg_shard *a, const struct span_at *sa,
                         const struct cg_shard *b, const struct span_at *sb, struct cg_err *err)
{
    char who[160] = "", gap[32];
    if (sb->task >= 0)
        snprintf(who, sizeof(who), "srun task %lld of step %lld%s%s: ", (long long)b->slurm_procid,
                 (long long)b->slurm_step, b->slurm_job != NULL ? " of job " : "",
                 b->slurm_job != NULL ? b->slurm_job : "");
    cg_fmt_ns((double)(sb->first_ns - sa->last_ns), gap, sizeof(gap));
    bool parent = sb->pid == sa->ppid; /* its start is the shell's, whatever the margin says */
    char seen[640];
    if (parent)
        snprintf(seen, sizeof(seen),
                 "pid %lld on %s, the parent of pid %lld (a shell that ran its last command as "
                 "itself), began its steps %s after pid %lld had made its last",
                 (long long)b->pid, cg_shard_node(b), (long long)a->pid, gap, (long long)a->pid);
    else
        snprintf(seen, sizeof(seen),
                 "pid %lld on %s started after pid %lld had made its last step, and began its "
                 "steps %s after it",
                 (long long)b->pid, cg_shard_node(b), (long long)a->pid, gap);
    return cg_err_set(err, CG_ECANARY,
                      "%s%s: a process with steps that began after another had ended its steps "
                      "is not one of the run's processes; either the canary ran again (a retry "
                      "such as 'cmd || cmd': let it run once%s), or a process before the trainer "
                      "marks steps (a launcher, a calibration or warm-up run: mark steps only in "
                      "the trainer, or name the trainer's step range with --step-range)",
                      who, seen, sb->task >= 0 ? " in its task" : "");
}

int cg_shard_check_restarts(const struct cg_shard *shards, size_t n, struct cg_err *err)
{
    struct span_at *v = malloc((n > 0 ? n : 1) * sizeof(*v));
    if (v == NULL)
        return cg_err_set(err, CG_ENOMEM, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const struct cg_shard *s = &shards[i];
        int64_t r, w;
        struct span_at sp = {.at = i,
                             .task = s->task_group,
                             .rank = -1,
                             .clock = cg_shard_clock_host(s),
                             .pid = s->pid,
                             .pid_start_ticks = s->pid_start_ticks,
                             .pid_ns = s->pid_ns,
                             .started_ns = s->started_ns,
                             .started_known = s->started_known,
                             .ppid = s->ppid};
        /* a rank of its own is told apart by it: outside a task never compared (a rank twice:
         * cg_shard_check_world), in a task only with processes of the same rank */
        if (cg_shard_rank(s, &r, &w)) {
            if (s->task_group < 0)
                continue;
            sp.rank = r;
        }
        if (step_span(s, &sp))
            v[k++] = sp;
    }
    k = fold_images(v, k);
    qsort(v, k, sizeof(*v), cmp_span);
    int rc = 0;
    /* in each task, rank and clock, by when their steps began: one that started (its process,
     * not its first step) after an earlier one had made its last step; a process whose start is
     * not recorded is not judged. A start up to CG_SHARD_START_ERROR_NS before that step counts
     * as after it: the record is up to that early, and a retry starts right after the first
     * attempt ended. So is the earlier one's parent whose steps began after its last: a shell
     * that ran the canary and then exec'd its retry ('cmd || cmd' as the shell's last command)
     * runs the retry as itself, with the shell's own start, before the first attempt's. */
    for (size_t g = 0, e; g < k && rc == 0; g = e) {
        size_t early = g; /* the earlier process whose steps ended first */
        for (e = g + 1; e < k && same_clock_task(&v[e], &v[g]) && rc == 0; e++) {
            int64_t end = v[early].last_ns;
            if (v[e].first_ns > end &&
                ((v[e].started_known && v[e].started_ns > end - CG_SHARD_START_ERROR_NS) ||
                 v[e].pid == v[early].ppid))
                rc = restart_error(&shards[v[early].at], &v[early], &shards[v[e].at], &v[e], err);
            else if (v[e].last_ns < end)
                early = e;
        }
    }
    free(v);
    return rc;
}

const char *cg_shard_node(const struct cg_shard *s)
{
    if (s->slurm_node != NULL && s->slurm_node[0] != '\0')
        return s->slurm_node;
    return s->host != NULL && s->host[0] != '\0' ? s->host : "?"; /* a name, never "" */
}

/* Whether s is a rank of the training: it has a rank and marked steps (a Slurm task's rank
 * whatever number of its processes have steps). */
static bool takes_part(const struct cg_shard *s, int64_t *rank, int64_t *world)
{
    enum source rf, wf;
    *rank = rank_of(s, &rf);
    *world = world_of(s, &wf);
    return s->n_steps > 0 && s->steps[0].seen && *rank >= 0;
}

/* The node index of s (SLURM_NODEID of a task srun started, else GROUP_RANK), -1 when neither
 * is known. */
static int64_t node_index(const struct cg_shard *s)
{
    return s->slurm_step >= 0 && s->slurm_nodeid >= 0 ? s->slurm_nodeid : s->group_rank;
}

/* Where missing ranks ran, told by block placement (Slurm's and torchrun's): when every rank
 * present ran on node index q / k (k the most ranks present on any node index), missing rank r
 * ran on node index r / k, and is named by a shard that reported that index (any shard, one
 * without steps too). named[x]: the shard reporting node index x (x < world), -1 none; k 0 when
 * the ranks present are not so placed. One pass over the shards and one over the world. */
struct placement {
    int64_t k;
    int64_t *named;
};

/* Fills p for the ranks present (owner[q]: the shard of rank q, -1 none). 0 or CG_ENOMEM. */
static int block_placement(const struct cg_shard *shards, size_t n, const int64_t *owner,
                           int64_t world, struct placement *p, struct cg_err *err)
{
    int64_t *count = calloc((size_t)world, sizeof(*count)); /* ranks present per node index */
    p->k = 0;
    p->named = malloc((size_t)world * sizeof(*p->named));
    if (count == NULL || p->named == NULL) {
        free(count);
        free(p->named);
        p->named = NULL;
        return cg_err_set(err, CG_ENOMEM, "out of memory");
    }
    for (int64_t x = 0; x < world; x++)
        p->named[x] = -1;
    bool block = true;
    for (int64_t q = 0; q < world && block; q++) {
        if (owner[q] < 0)
            continue;
        int64_t x = node_index(&shards[owner[q]]);
        block = x >= 0 && x <= q; /* block placement puts rank q on node index q / k <= q */
        if (block && ++count[x] > p->k)
            p->k = count[x];
    }
    for (int64_t q = 0; q < world && block && p->k > 0; q++)
        block = owner[q] < 0 || node_index(&shards[owner[q]]) == q / p->k;
    free(count);
    if (!block)
        p->k = 0;
    for (size_t i = 0; i < n && p->k > 0; i++) {
        int64_t x = node_index(&shards[i]);
        if (x >= 0 && x < world && p->named[x] < 0)
            p->named[x] = (int64_t)i;
    }
    return 0;
}

/* The shard naming the node missing rank r ran on (struct placement), -1 when it cannot be told:
 * a node index no shard reported is never named. */
static int64_t missing_node(const struct placement *p, int64_t r)
{
    return p->k > 0 ? p->named[r / p->k] : -1;
}

/* The ranks missing from owner (-1) whose process wrote a shard but marked no step, into quiet
 * (the shard, -1 none): a shard without steps whose rank and world come from where those of the
 * ranks with steps came from (a launcher's agent with Slurm's rank beside torchrun's ranks is
 * none of them). */
static void no_step_shards(const struct cg_shard *shards, size_t n, const int64_t *owner,
                           int64_t world, int64_t *quiet)
{
    enum source ranks_from = FROM_NONE, f, wf;
    for (int64_t q = 0; q < world; q++)
        quiet[q] = -1;
    for (int64_t q = 0; q < world && ranks_from == FROM_NONE; q++)
        if (owner[q] >= 0)
            rank_of(&shards[owner[q]], &ranks_from);
    for (size_t i = 0; i < n; i++) {
        const struct cg_shard *s = &shards[i];
        int64_t r = rank_of(s, &f);
        if (s->n_steps > 0 || r < 0 || r >= world || owner[r] >= 0 || quiet[r] >= 0 ||
            (ranks_from != FROM_NONE && f != ranks_from) || world_of(s, &wf) != world)
            continue;
        quiet[r] = (int64_t)i;
    }
}

/* Whether the shard of a rank without steps was cut off by the gate's stop: the gate stopped the
 * canary once the ranks with steps had made theirs, and this process had not ended ("end"). */
static bool cut_by_stop(const struct cg_shard *s, bool stopped)
{
    return stopped && !s->complete;
}

/* For the ranks quiet names whose shard cut_by_stop is `cut`: "rank 1 (pid 11 on vm) [of a world
 * of W] wrote a shard but marked no step named 'step'" (cut false) or "... was stopped before its
 * first step named 'step'" (cut true) into buf (the first four listed, the others counted; ""
 * when none); the world named when alone. 0 or CG_ENOMEM. */
static int no_step_ranks(const struct cg_shard *shards, const int64_t *quiet, int64_t world,
                         bool alone, bool stopped, bool cut, char *buf, size_t cap)
{
    enum { LISTED = 4 };
    size_t len = 0;
    int64_t count = 0, first = -1, listed = 0;
    buf[0] = '\0';
    for (int64_t q = 0; q < world; q++)
        if (quiet[q] >= 0 && cut_by_stop(&shards[quiet[q]], stopped) == cut && count++ == 0)
            first = quiet[q];
    if (count == 0)
        return 0;
    for (int64_t q = 0; q < world && listed < LISTED && len < cap; q++) {
        if (quiet[q] < 0 || cut_by_stop(&shards[quiet[q]], stopped) != cut)
            continue;
        const struct cg_shard *s = &shards[quiet[q]];
        const char *lead = count > 1 ? "ranks " : "rank ";
        int k = snprintf(buf + len, cap - len, "%s%lld (pid %lld on %s)", listed > 0 ? ", " : lead,
                         (long long)q, (long long)s->pid, cg_shard_node(s));
        len = k > 0 ? len + (size_t)k : len;
        listed++;
    }
    struct cg_buf name;
    cg_buf_init(&name, 512);
    const char *range = shards[first].step_range;
    if (range != NULL && cg_term_escape(&name, range, 100) != 0) {
        cg_buf_release(&name);
        return CG_ENOMEM;
    }
    char more[48] = "", of[48] = "", named[160] = "";
    if (count > listed)
        snprintf(more, sizeof(more), " and %lld more", (long long)(count - listed));
    if (alone)
        snprintf(of, sizeof(of), " of a world of %lld", (long long)world);
    if (range != NULL)
        snprintf(named, sizeof(named), " named '%s'", cg_buf_str(&name));
    if (len < cap && cut)
        snprintf(buf + len, cap - len,
                 "%s%s %s stopped before %s first step%s: the other ranks had made their steps "
                 "and the gate stopped the canary (each rank must make the measured steps with "
                 "the others: begin the ranks' loops together, e.g. after a barrier)",
                 more, of, count > 1 ? "were" : "was", count > 1 ? "their" : "its", named);
    else if (len < cap)
        snprintf(buf + len, cap - len, "%s%s %s but marked no step%s", more, of,
                 count > 1 ? "each wrote a shard" : "wrote a shard", named);
    cg_buf_release(&name);
    return 0;
}

/* "rank R reported twice (...)" for the shards owner and s of one rank: CG_ECANARY. */
static int twice_error(const struct cg_shard *o, const struct cg_shard *s, int64_t r,
                       struct cg_err *err)
{
    if (one_task(o, s))
        return cg_err_set(err, CG_ECANARY,
                          "rank %lld reported twice (pid %lld on %s, pid %lld on %s), by two "
                          "processes of one srun task (task %lld of step %lld) that inherited "
                          "its RANK: give each process the task starts its own RANK, or none",
                          (long long)r, (long long)o->pid, cg_shard_node(o), (long long)s->pid,
                          cg_shard_node(s), (long long)s->slurm_procid, (long long)s->slurm_step);
    return cg_err_set(err, CG_ECANARY,
                      "rank %lld reported twice (pid %lld on %s, pid %lld on %s): two launches "
                      "wrote into one run, or a rank was restarted",
                      (long long)r, (long long)o->pid, cg_shard_node(o), (long long)s->pid,
                      cg_shard_node(s));
}

/* Whether shards a and b hold one rank as processes of one srun task whose rank is Slurm's:
 * the task's processes, not its rank twice. */
static bool same_tasks_rank(const struct cg_shard *a, const struct cg_shard *b)
{
    enum source fa, fb;
    rank_of(a, &fa);
    rank_of(b, &fb);
    return fa == FROM_SLURM && fb == FROM_SLURM && one_task(a, b);
}

struct rank_at {
    int64_t rank;
    size_t at;
};

static int cmp_rank_at(const void *a, const void *b)
{
    const struct rank_at *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->at < y->at ? -1 : x->at > y->at;
}

/* The ranks of a world whose size no shard gave: each once (a rank twice was merged into an
 * artifact that did not load again). 0, CG_ECANARY or CG_ENOMEM. */
static int rank_twice(const struct cg_shard *shards, size_t n, struct cg_err *err)
{
    struct rank_at *v = malloc((n > 0 ? n : 1) * sizeof(*v));
    if (v == NULL)
        return cg_err_set(err, CG_ENOMEM, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t r, w;
        if (takes_part(&shards[i], &r, &w))
            v[k++] = (struct rank_at){r, i};
    }
    qsort(v, k, sizeof(*v), cmp_rank_at);
    int rc = 0;
    for (size_t i = 1; i < k && rc == 0; i++)
        if (v[i].rank == v[i - 1].rank && !same_tasks_rank(&shards[v[i - 1].at], &shards[v[i].at]))
            rc = twice_error(&shards[v[i - 1].at], &shards[v[i].at], v[i].rank, err);
    free(v);
    return rc;
}

int cg_shard_check_world(const struct cg_shard *shards, size_t n, const char *library_dir,
                         bool stopped, struct cg_err *err)
{
    int64_t world = -1;
    int64_t *owner = NULL; /* shard index of each rank, -1 none */
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t r, w;
        if (!takes_part(&shards[i], &r, &w) || w < 0)
            continue;
        if (world >= 0 && w != world)
            return cg_err_set(err, CG_ECANARY,
                              "the ranks disagree on the world's size (%lld and %lld): two "
                              "launches wrote into one run",
                              (long long)world, (long long)w);
        world = w;
    }
    if (world < 0)
        return rank_twice(shards, n, err); /* no world to fill: each rank once all the same */
    if (world > CG_SHARD_MAX_RANKS)
        return cg_err_set(err, CG_ECANARY, "a world of %lld ranks: canary-gate merges %d at most",
                          (long long)world, CG_SHARD_MAX_RANKS);
    owner = malloc((size_t)world * sizeof(*owner));
    if (owner == NULL)
        return cg_err_set(err, CG_ENOMEM, "out of memory");
    for (int64_t q = 0; q < world; q++)
        owner[q] = -1;
    /* only the shards that take part: those with steps and a rank */
    for (size_t i = 0; i < n && rc == 0; i++) {
        int64_t r, w;
        const struct cg_shard *s = &shards[i];
        if (!takes_part(s, &r, &w))
            continue;
        if (r >= world) {
            static const char *const rank_name[] = {"", "RANK", "the MPI rank", "SLURM_PROCID"};
            static const char *const world_name[] = {"", "WORLD_SIZE", "the MPI size",
                                                     "SLURM_NTASKS"};
            enum source rf, wf;
            char why[160] = "";
            rank_of(s, &rf);
            world_of(s, &wf);
            if (rf != wf)
                snprintf(why, sizeof(why), " (its size from %s: %s is set without %s)",
                         world_name[wf], rank_name[rf], world_name[rf]);
            rc = cg_err_set(err, CG_ECANARY, "rank %lld on %s is outside a world of %lld ranks%s",
                            (long long)r, cg_shard_node(s), (long long)world, why);
        } else if (owner[r] >= 0) {
            if (!same_tasks_rank(&shards[owner[r]], s))
                rc = twice_error(&shards[owner[r]], s, r, err);
        } else {
            owner[r] = (int64_t)i;
        }
    }
    struct placement place = {0, NULL};
    int64_t *quiet = NULL; /* a rank's shard without steps, -1 none */
    if (rc == 0)
        rc = block_placement(shards, n, owner, world, &place, err);
    if (rc == 0 && (quiet = malloc(((size_t)world + 1) * sizeof(*quiet))) == NULL) {
        rc = CG_ENOMEM;
        (void)cg_err_set(err, CG_ENOMEM, "out of memory");
    }
    if (rc == 0)
        no_step_shards(shards, n, owner, world, quiet);
    /* the missing ranks in groups of consecutive ranks on one node: the first few listed */
    enum { LISTED = 4 };
    char missing[CG_ERR_MSG_MAX] = "";
    size_t len = 0;
    int groups = 0;
    int64_t first_node = -1, unlisted = 0;
    for (int64_t q = 0; q < world && rc == 0;) {
        if (owner[q] >= 0 || quiet[q] >= 0) {
            q++;
            continue;
        }
        int64_t node = missing_node(&place, q), last = q;
        while (last + 1 < world && owner[last + 1] < 0 && quiet[last + 1] < 0 &&
               missing_node(&place, last + 1) == node)
            last++;
        if (groups == 0)
            first_node = node;
        if (groups < LISTED && len < sizeof(missing)) {
            char where[128] = "";
            if (node >= 0)
                snprintf(where, sizeof(where), " (node %s)", cg_shard_node(&shards[node]));
            int k;
            if (last == q)
                k = snprintf(missing + len, sizeof(missing) - len, "%srank %lld%s",
                             groups ? ", " : "", (long long)q, where);
            else
                k = snprintf(missing + len, sizeof(missing) - len, "%sranks %lld\xe2\x80\x93%lld%s",
                             groups ? ", " : "", (long long)q, (long long)last, where);
            len = k > 0 ? len + (size_t)k : len;
        } else {
            unlisted += last - q + 1;
        }
        groups++;
        q = last + 1;
    }
    /* ranks that ended without a step, then ranks the gate stopped before their first */
    char no_step[CG_ERR_MSG_MAX] = "", cut[CG_ERR_MSG_MAX] = "";
    if (rc == 0 &&
        (no_step_ranks(shards, quiet, world, groups == 0, stopped, false, no_step,
                       sizeof(no_step)) != 0 ||
         no_step_ranks(shards, quiet, world, groups == 0, stopped, true, cut, sizeof(cut)) != 0))
        rc = cg_err_set(err, CG_ENOMEM, "out of memory");
    char quiet_ranks[2 * CG_ERR_MSG_MAX + 64] = "";
    snprintf(quiet_ranks, sizeof(quiet_ranks), "%s%s%s%s", no_step,
             no_step[0] && groups == 0 ? ": every rank must mark its steps" : "",
             no_step[0] && cut[0] ? "; " : "", cut);
    if (rc == 0 && groups > 0) {
        char more[48] = "";
        if (unlisted > 0)
            snprintf(more, sizeof(more), " and %lld more", (long long)unlisted);
        rc = cg_err_set(err, CG_ECANARY,
                        "%s%s%s%s of a world of %lld wrote nothing: is canary-gate installed at %s "
                        "on %s, and does the launcher pass " CG_ENV_SHARD_DIR
                        " and the other CANARY_GATE_* variables on?",
                        quiet_ranks, quiet_ranks[0] ? "; " : "", missing, more, (long long)world,
                        library_dir,
                        first_node >= 0 ? cg_shard_node(&shards[first_node]) : "every node");
    } else if (rc == 0 && quiet_ranks[0] != '\0') {
        rc = cg_err_set(err, CG_ECANARY, "%s", quiet_ranks);
    }
    free(quiet);
    free(place.named);
    free(owner);
    return rc;
}
