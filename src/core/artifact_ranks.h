/*
 * artifact_ranks: the figures of each rank of a run launched on several processes or nodes
 * (runs[].ranks in the artifact, docs/artifact.md), and what they say per node.
 *
 * A rank is one process of the training's world (its RANK, else Slurm's SLURM_PROCID), on a node
 * (SLURMD_NODENAME, else its host name). Its step times are its own durations of the run's
 * measured steps, index for index with runs[].steps (whose wall time is the slowest rank's), so
 * host clocks need not agree. Busy, compute and exposed communication time are totals over the
 * measured steps in ns (-1: not measured); peak device memory is the rank's own, on the device of
 * its UUID (NULL: the shard named none). Per node, figures are derived from the ranks (never
 * stored twice): a step's time is its slowest rank's, busy time the busiest rank's, peak memory
 * the largest over its devices of the peaks summed over the ranks on each device (a device named
 * by UUID, never by the CUDA ordinal). Units: ns and bytes. Not thread-safe.
 */
#ifndef CG_ARTIFACT_RANKS_H
#define CG_ARTIFACT_RANKS_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#define CG_ARTIFACT_MAX_RANKS 65536
/* The longest node name or GPU model a rank keeps, in bytes. */
#define CG_RANK_NAME_MAX 255

struct cg_rank {
    int64_t rank, local_rank; /* local_rank -1: unknown */
    char *node;               /* never NULL in a valid artifact */
    int64_t *step_ns;         /* n_steps measured step durations */
    size_t n_steps;
    int64_t busy_ns, compute_ns, comm_exposed_ns; /* totals, -1: not measured */
    int64_t peak_device_bytes;                    /* -1: not measured */
    char *device_uuid;                            /* NULL: unknown */
    char *gpu_model;                              /* its process's GPU, NULL: unknown */
};

struct cg_node_figures {
    const char *node; /* borrowed from a rank */
    size_t n_ranks;
    int64_t busy_ns;           /* the busiest rank's, -1 unknown */
    int64_t peak_device_bytes; /* see above, -1 unknown */
    double step_median_ns;     /* median over steps of the slowest rank's time, NAN none */
};

/* Frees n ranks' contents and the array (NULL is fine). */
void cg_ranks_free(struct cg_rank *ranks, size_t n);

/* Copies n ranks into *dst (malloc'ed; NULL when n is 0). 0 or CG_ENOMEM (*dst NULL). */
int cg_ranks_copy(struct cg_rank **dst, const struct cg_rank *src, size_t n);

/* {"ranks": [...], "nodes": [...]} members added to run (nothing when n is 0). 0 or CG_ENOMEM. */
int cg_ranks_json(cJSON *run, const struct cg_rank *ranks, size_t n);

/* Reads run's "ranks" (absent or null: none) into *out, *n; steps per rank at most max_steps.
 * 0, CG_ENOMEM, or CG_EINPUT with problem (cap bytes) naming the field under path. */
int cg_ranks_parse(const cJSON *run, const char *path, size_t max_steps, struct cg_rank **out,
                   size_t *n, char *problem, size_t cap);

/* The per-node figures of n ranks into nodes (room for n), in order of first appearance;
 * returns how many nodes. */
size_t cg_ranks_nodes(const struct cg_rank *ranks, size_t n, struct cg_node_figures *nodes);

/* The node shape of n ranks into out (cap bytes): how many nodes, and on each how many ranks
 * and distinct devices (by UUID; left out when no rank named one), e.g. "2 nodes of 8 ranks and
 * 8 GPUs", or per node, largest first, when they differ: "3 nodes: 8 ranks and 8 GPUs, 8 and 8,
 * 4 and 4"), then the ranks' GPU models where known, sorted, in parentheses ("... (NVIDIA
 * H100 80GB HBM3)"). "" when n is 0 (one process, no world). Two runs of the same machine and
 * launch line have the same text. Returns 0 or CG_ENOMEM. */
int cg_ranks_shape(const struct cg_rank *ranks, size_t n, char *out, size_t cap);

/* Room for a shape's whole text when two are compared (a text cut to fit compares alike). */
#define CG_SHAPE_MAX 1024

/* The median of a rank's step times (NAN when none). */
double cg_rank_step_median_ns(const struct cg_rank *r);

/* A rank's node name or GPU model as the artifact keeps it: s as valid UTF-8 (each ill-formed
 * part U+FFFD) cut to at most CG_RANK_NAME_MAX bytes at the end of a character, so what is
 * written loads again. Malloc'ed (caller frees); NULL when out of memory. */
char *cg_rank_name_dup(const char *s);

#endif
