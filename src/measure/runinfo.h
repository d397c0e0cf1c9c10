/*
 * runinfo: facts about one run that the gate records for information and never compares as the
 * canary's identity: the code it measured (the hashes of the files its command line names, the
 * git commit of the directory it ran in) and where its first process ran (CPU affinity, the CPU
 * and its NUMA node), read from /proc and /sys as the launcher sees them.
 *
 * The GPU's SM clock is not among them: the CUDA driver gives only the rated clock
 * (CU_DEVICE_ATTRIBUTE_CLOCK_RATE), the current one needs NVML (docs/artifact.md).
 *
 * Never prints; not thread-safe (cg_runinfo_git_commit forks).
 */
#ifndef CG_RUNINFO_H
#define CG_RUNINFO_H

#include "artifact.h"

/* Largest file hashed; a larger one is left out of the run's code facts. */
#define CG_RUNINFO_MAX_FILE_BYTES ((long long)64 * 1024 * 1024)

/* Fills code (empty) with the hash of every file argv names: the executable found in PATH for
 * argv[0], and every later element that is a regular file of at most CG_RUNINFO_MAX_FILE_BYTES.
 * Each is recorded under shown[i], the element as the artifact writes it (secrets hidden); argv
 * and shown have the same length. git_commit is cg_runinfo_git_commit("."). 0 or CG_ENOMEM. */
int cg_runinfo_code(char *const *argv, char *const *shown, struct cg_run_code *code);

/* "fnv1a64:<16 hex digits>" of the file at path, malloc'ed; NULL when it is not a regular file
 * of at most CG_RUNINFO_MAX_FILE_BYTES, cannot be read, or memory ran out. */
char *cg_runinfo_file_hash(const char *path);

/* The commit checked out in the git repository holding dir (git rev-parse HEAD, at most 5 s),
 * malloc'ed; NULL when dir is in none, git is missing or refuses. */
char *cg_runinfo_git_commit(const char *dir);

/* Where process pid runs now: its affinity list (/proc/PID/status, Cpus_allowed_list), the CPU
 * it last ran on (/proc/PID/stat) and that CPU's NUMA node (/sys/devices/system/cpu/cpuN/nodeM).
 * Fields it cannot read stay unknown. Fills out (its cpus freed first). 0 or CG_ENOMEM. */
int cg_runinfo_placement(long pid, struct cg_run_placement *out);

#endif
