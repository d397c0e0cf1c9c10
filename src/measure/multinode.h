/*
 * multinode: what a canary's command line says about where its ranks run. A command that names a
 * launcher placing ranks on other nodes (srun, sbatch, mpirun, mpiexec, or torchrun with
 * --nnodes above 1) writes shards on those nodes, which only a directory every node sees
 * (--shard-dir) brings back. Pure functions of the words; no I/O.
 */
#ifndef CG_MULTINODE_H
#define CG_MULTINODE_H

#include <stdbool.h>
#include <stddef.h>

/* The launcher word of argv (NULL-terminated) that may place ranks on other nodes: "srun",
 * "sbatch", "mpirun" or "mpiexec" (any word whose last path part is one of them), or
 * "torchrun --nnodes N" when a torchrun (or "torch.distributed.run") word is followed by
 * --nnodes N or --nnodes=N with N (or the MAX of MIN:MAX) above 1. Writes the word(s) into buf
 * (cap bytes, cut to fit) and returns true; false when none. */
bool cg_multinode_launcher(char *const *argv, char *buf, size_t cap);

/* True when argv names "sbatch" (a batch job: ending the command does not end the job, which
 * is cancelled by its id). */
bool cg_multinode_is_sbatch(char *const *argv);

#endif
