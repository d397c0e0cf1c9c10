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

/* A known infrastructure failure named in text (len bytes, a canary's log): an NCCL timeout, a
 * refused or failed rendezvous, "Connection reset by peer", a node failure reported by Slurm.
 * Writes its reason and the line it was found on into why (cap bytes, cut to fit) and returns
 * true; false when the text names none (the last match counts). Pure. */
bool cg_multinode_infra_failure(const char *text, size_t len, char *why, size_t cap);

/* The Slurm job ids of a run into ids (cap bytes, space-separated, cut at a whole id): the
 * slurm_job of every shard (distinct), else the last "Submitted batch job N" in the last 64 KiB
 * of log (sbatch prints it before any task starts). Returns how many. */
struct cg_shard;
size_t cg_multinode_job_ids(const struct cg_shard *shards, size_t n, const char *log, char *ids,
                            size_t cap);

/* Runs "scancel ID..." for the space-separated ids (SLURM_CONF and the rest of the environment as
 * the tool has it), waiting at most timeout_s; 0 when it exited 0, else -1 with why (cap bytes). */
int cg_multinode_scancel(const char *ids, double timeout_s, char *why, size_t cap);

#endif
