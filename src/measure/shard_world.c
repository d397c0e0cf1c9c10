/*
 * shard_world: whether a run's shards hold every rank of the world they report, once each
 * (see shard.h, cg_shard_check_world). A shard's rank is RANK where the process had one (torchrun,
 * or a launcher that sets it), else an MPI launcher's rank (Open MPI, MPICH, MVAPICH: mpirun in a
 * Slurm job inherits the job's SLURM_PROCID), else SLURM_PROCID of a task srun started (the
 * shard's slurm_step: a batch script's process, or one in the gate's own step, inherited the
 * step's SLURM_PROCID and is no rank); its world WORLD_SIZE, else the MPI launcher's size, else
 * SLURM_NTASKS of a task srun started, wherever the rank came from; its node
 * SLURMD_NODENAME, else the host name. Only shards with steps count: a process that marked none (a
 * launcher's agent, a helper) is no rank of the training. Pure; not thread-safe.
 */
#include "shard.h"

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
 * launcher's size, else SLURM_NTASKS of a task srun started, wherever its rank came from. */
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
    if (s->slurm_step >= 0 && s->slurm_ntasks >= 0) {
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
    return *rank >= 0;
}

const char *cg_shard_node(const struct cg_shard *s)
{
    if (s->slurm_node != NULL && s->slurm_node[0] != '\0')
        return s->slurm_node;
    return s->host != NULL && s->host[0] != '\0' ? s->host : "?"; /* a name, never "" */
}

/* Whether s is a rank of the training: it has a rank and marked steps. */
static bool takes_part(const struct cg_shard *s, int64_t *rank, int64_t *world)
{
    return s->n_steps > 0 && s->steps[0].seen && cg_shard_rank(s, rank, world);
}

/* The node index of s (SLURM_NODEID of a task srun started, else GROUP_RANK), -1 when neither
 * is known. */
static int64_t node_index(const struct cg_shard *s)
{
    return s->slurm_step >= 0 && s->slurm_nodeid >= 0 ? s->slurm_nodeid : s->group_rank;
}

/* The node a missing rank was placed on, into buf: where the ranks ran in blocks of k consecutive
 * ranks per node (Slurm's and torchrun's block placement; k the most ranks any node reported),
 * rank r ran on node index r / k, named by a shard of that index when one reported; "" when that
 * cannot be told. */
static void missing_node(const struct cg_shard *shards, size_t n, const int64_t *owner,
                         int64_t world, int64_t r, char *buf, size_t cap)
{
    int64_t k = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        int64_t idx = node_index(&shards[i]), per = 0;
        if (idx < 0)
            continue;
        for (int64_t q = 0; q < world; q++)
            per += owner[q] >= 0 && node_index(&shards[owner[q]]) == idx;
        k = per > k ? per : k;
    }
    if (k <= 0)
        return;
    for (int64_t q = 0; q < world; q++)
        if (owner[q] >= 0 && (node_index(&shards[owner[q]]) < 0 ||
                              q / k != node_index(&shards[owner[q]])))
            return; /* not block placement */
    for (size_t i = 0; i < n; i++)
        if (node_index(&shards[i]) == r / k) {
            snprintf(buf, cap, "node %s", cg_shard_node(&shards[i]));
            return;
        }
    snprintf(buf, cap, "node index %lld", (long long)(r / k));
}

/* "rank R reported twice (...)" for the shards owner and s of one rank: CG_ECANARY. */
static int twice_error(const struct cg_shard *o, const struct cg_shard *s, int64_t r,
                       struct cg_err *err)
{
    return cg_err_set(err, CG_ECANARY,
                      "rank %lld reported twice (pid %lld on %s, pid %lld on %s): two launches "
                      "wrote into one run, or a rank was restarted",
                      (long long)r, (long long)o->pid, cg_shard_node(o), (long long)s->pid,
                      cg_shard_node(s));
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
        if (v[i].rank == v[i - 1].rank)
            rc = twice_error(&shards[v[i - 1].at], &shards[v[i].at], v[i].rank, err);
    free(v);
    return rc;
}

int cg_shard_check_world(const struct cg_shard *shards, size_t n, const char *library_dir,
                         struct cg_err *err)
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
            rc = twice_error(&shards[owner[r]], s, r, err);
        } else {
            owner[r] = (int64_t)i;
        }
    }
    char missing[CG_ERR_MSG_MAX] = "", node[96] = "", first_node[96] = "";
    size_t len = 0;
    int groups = 0;
    for (int64_t q = 0; q < world && rc == 0;) {
        if (owner[q] >= 0) {
            q++;
            continue;
        }
        /* one group: consecutive missing ranks on one node */
        missing_node(shards, n, owner, world, q, node, sizeof(node));
        int64_t last = q;
        char next[96];
        while (last + 1 < world && owner[last + 1] < 0) {
            missing_node(shards, n, owner, world, last + 1, next, sizeof(next));
            if (strcmp(next, node) != 0)
                break;
            last++;
        }
        if (groups == 0)
            snprintf(first_node, sizeof(first_node), "%s", node);
        if (groups < 4 && len < sizeof(missing)) {
            int k;
            if (last == q)
                k = snprintf(missing + len, sizeof(missing) - len, "%srank %lld%s%s%s",
                             groups ? ", " : "", (long long)q, node[0] ? " (" : "", node,
                             node[0] ? ")" : "");
            else
                k = snprintf(missing + len, sizeof(missing) - len,
                             "%sranks %lld\xe2\x80\x93%lld%s%s%s", groups ? ", " : "",
                             (long long)q, (long long)last, node[0] ? " (" : "", node,
                             node[0] ? ")" : "");
            len = k > 0 ? len + (size_t)k : len;
        }
        groups++;
        q = last + 1;
    }
    if (rc == 0 && groups > 0) {
        bool named = strncmp(first_node, "node ", 5) == 0 &&
                     strncmp(first_node, "node index", 10) != 0;
        const char *where = named ? first_node + 5 : "every node";
        rc = cg_err_set(err, CG_ECANARY,
                        "%s%s of a world of %lld wrote nothing: is canary-gate installed at %s "
                        "on %s, and does the launcher pass " CG_ENV_SHARD_DIR
                        " and the other CANARY_GATE_* variables on?",
                        missing, groups > 4 ? " and more" : "", (long long)world, library_dir,
                        where);
    }
    free(owner);
    return rc;
}
