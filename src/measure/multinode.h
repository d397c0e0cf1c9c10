/*
 * multinode: what a canary's command line says about where its ranks run. A command that names a
 * launcher placing ranks on other nodes (srun, sbatch, mpirun, mpiexec, or torchrun, deepspeed
 * or accelerate across machines) writes shards on those nodes, which only a directory every node
 * sees
 * (--shard-dir) brings back. A batch job outlives the sbatch --wait that submitted it: when the
 * gate ends sbatch, it cancels the job with scancel. The launcher words are pure functions;
 * cg_multinode_scancel runs scancel.
 */
#ifndef CG_MULTINODE_H
#define CG_MULTINODE_H

#include <stdbool.h>
#include <stddef.h>

/* The launcher word of argv (NULL-terminated) that may place ranks on other nodes: "srun",
 * "sbatch", "mpirun" or "mpiexec" (any word whose last path part is one of them, or one of them
 * with an MPI's suffix: mpirun.openmpi, mpiexec.mpich, mpiexec.hydra, .lam); "torchrun --nnodes N"
 * when a torchrun (or "torch.distributed.run") word is followed by --nnodes N or --nnodes=N with N
 * (or the MAX of MIN:MAX) above 1; "deepspeed --num_nodes N" (N above 1) or "deepspeed --hostfile"
 * (one that names another host, or cannot be read); "accelerate launch --num_machines N" (N above
 * 1). Writes the word(s) into buf (cap bytes, cut to fit) and returns true; false when none. */
bool cg_multinode_launcher(char *const *argv, char *buf, size_t cap);

/* True when argv names "sbatch" (a batch job: ending the command does not end the job, which
 * is cancelled by its id). */
bool cg_multinode_is_sbatch(char *const *argv);

/* Where the messages of an infrastructure failure may come from in a run
 * (cg_multinode_infra_scope). */
struct cg_infra_scope {
    bool ranks; /* several processes: a launcher of ranks in the command, or shards of ranks */
    bool slurm; /* Slurm ran it: srun or sbatch in the command, or a shard naming a Slurm job */
};

/* The scope of a run of argv (NULL-terminated) whose shards are shards[0..n): ranks when argv
 * names srun, sbatch, mpirun, mpiexec, torchrun (torch.distributed.run, torch.distributed.launch),
 * deepspeed or accelerate, or a shard records a rank or a world size above 1, or more than one
 * shard marked steps; slurm when argv names srun or sbatch or a shard names a Slurm job. */
struct cg_shard;
void cg_multinode_infra_scope(char *const *argv, const struct cg_shard *shards, size_t n,
                              struct cg_infra_scope *scope);

/* A known infrastructure failure a canary's log names, and how sure the gate is of it. */
struct cg_infra_failure {
    const char *reason; /* "an NCCL collective timed out", ...: static */
    bool certain;       /* the scheduler said so (Slurm's node failure); else a guess */
    char line[161];     /* the log line it was found on, cut, control bytes as spaces */
};

/* Whether text (len bytes, the end of a canary's log) names a known infrastructure failure that
 * the run's scope allows (docs/collector.md, "Infrastructure failures"): the last line holding a
 * known pattern is the evidence; an NCCL timeout, a rendezvous error, a refused or reset
 * connection count only with scope->ranks, Slurm's node failure only with scope->slurm. A guess
 * (every pattern but Slurm's) counts only when no Python traceback through the canary's own code
 * (a frame in a file outside the Python installation) ended with another error: when the log
 * holds such a traceback, the last one's exception must hold the pattern. Lines prefixed by a
 * launcher ("[default0]:") are read without the prefix. Fills f and returns true; false when none.
 * Pure. */
bool cg_multinode_infra_failure(const char *text, size_t len, const struct cg_infra_scope *scope,
                                struct cg_infra_failure *f);

/* The Slurm job ids of a run into ids (cap bytes, space-separated, cut at a whole id): the
 * slurm_job of every shard (distinct), else the last "Submitted batch job N" in the last 64 KiB
 * of log (sbatch prints it before any task starts). Returns how many. */
size_t cg_multinode_job_ids(const struct cg_shard *shards, size_t n, const char *log, char *ids,
                            size_t cap);

/* Runs "scancel ID..." for the space-separated ids (SLURM_CONF and the rest of the environment as
 * the tool has it), waiting at most timeout_s; 0 when it exited 0, else -1 with why (cap bytes). */
int cg_multinode_scancel(const char *ids, double timeout_s, char *why, size_t cap);

#endif
