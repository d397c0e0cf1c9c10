/*
 * collect_check: why a canary run failed, for the collector (collect.c): a finished run checked
 * against what it had to measure, as one line in the err and as a reason (enum
 * cg_collect_failed, collect.h) the hint reads; the failure file the injection library records
 * a shard it could not write into; a failed run's log read for a known infrastructure failure.
 * cg_collect_hint (collect.h) is here too. Nothing here prints; single-threaded.
 */
#ifndef CG_COLLECT_CHECK_H
#define CG_COLLECT_CHECK_H

#include "collect.h"
#include "err.h"
#include "launch.h"
#include "shard.h"

#include <stddef.h>

/* Why run i of total failed, as one line (CG_ECANARY) and as *reason (what the hint can mend);
 * 0 when it measured enough. r is how the canary ended, st its shards' status, fail the
 * library's record of a shard it could not write (NULL when none). */
int cg_collect_check_run(const struct cg_collect_cfg *c, long i, long total,
                         const struct cg_launch_result *r, const struct cg_shard_status *st,
                         const struct cg_shard_fail *fail, enum cg_collect_failed *reason,
                         struct cg_err *err);

/* True when the canary ended itself with a failure (a non-zero status, a signal) after every
 * process with steps had written "done" (st->all_done), without --let-finish: the gate would have
 * stopped it at its next look at the shards, so the run is complete, as a stopped one is, and
 * the caller says how the canary ended. */
bool cg_collect_check_ended_after_window(const struct cg_collect_cfg *c,
                                         const struct cg_launch_result *r,
                                         const struct cg_shard_status *st);

/* No process ran twice one after the other where its two runs would be merged as one run's
 * processes (cg_shard_check_restarts: 'cmd || cmd', a retry wrapper), the message prefixed with
 * the run; judged before how the run ended and how many steps it made, which the first run's
 * failure or shortness would otherwise be told as. *reason CG_COLLECT_FAILED_OTHER on failure. */
int cg_collect_check_restarts(long i, long total, const struct cg_shard *sh, size_t n,
                              enum cg_collect_failed *reason, struct cg_err *err);

/* Every rank of the world the shards report wrote steps, once (cg_shard_check_world, the ranks'
 * library beside inject; stopped: the gate stopped the canary once the ranks with steps had made
 * theirs), the message prefixed with the run; *reason CG_COLLECT_FAILED_OTHER on failure. */
int cg_collect_check_world(const char *inject, long i, long total, const struct cg_shard *sh,
                           size_t n, bool stopped, enum cg_collect_failed *reason,
                           struct cg_err *err);

/* Creates the run's failure file (CG_ENV_FAIL_FILE) at path, CG_FAIL_FILE_BYTES of NULs written
 * out so the library can record a failure in place even on a full disk. 0 or CG_EIO. */
int cg_collect_check_make_fail_file(const char *path, struct cg_err *err);

/* Reads the failure file: 1 and f filled when a process recorded a failure, else 0. */
int cg_collect_check_read_fail_file(const char *path, struct cg_shard_fail *f);

/* A failed run whose log (its last 64 KiB) names a known infrastructure failure that the run
 * supports says so in err (cmd the canary's command, sh[0..n) its shards; see
 * cg_multinode_infra_failure): a canary failure with that reason and the log line quoted, stated
 * when Slurm said it and called a guess otherwise, never a regression. */
void cg_collect_check_infra(const char *log, char *const *cmd, const struct cg_shard *sh, size_t n,
                            struct cg_err *err);

#endif
