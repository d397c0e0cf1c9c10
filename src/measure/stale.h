/*
 * stale: the shard directories of gates that are no longer running.
 *
 * Each measuring command makes one directory for its shards under the shard root (TMPDIR or
 * --shard-dir), "canary-gate.XXXXXX", and removes it when it ends. A gate killed with SIGKILL,
 * or whose machine lost power, leaves it behind. So each such directory holds an owner file
 * naming the gate that made it (its pid, the pid's start time, the host, its PID namespace and
 * the machine's boot id), and the next gate to start under the same root removes the directories
 * whose owner is gone: in this PID namespace and boot, whatever host name the owner ran under
 * (a container with its own host name in the host's PID namespace), a pid that no longer runs,
 * or runs as another process (its start time differs). One whose owner it cannot look at
 * (another PID namespace: a container sharing --shard-dir; another boot: another machine
 * sharing it, or this one before a reboot; an owner file of an older version, without those
 * fields) only once nothing in it has changed for CG_STALE_UNSEEN_AGE_S, or, when its owner ran
 * under this host name, since this machine booted. Directories of another user, without an
 * owner file (being made), or whose owner still runs are left as they are. bisect's worktree
 * directories ("canary-gate-bisect.XXXXXX") are marked and cleaned the same way, by bisect.
 */
#ifndef CG_STALE_H
#define CG_STALE_H

#include "err.h"

#include <stddef.h>

#define CG_STALE_PREFIX "canary-gate."
#define CG_STALE_OWNER "owner"
/* A directory whose owner this gate cannot look at is removed once nothing in it has changed for
 * this long: longer than a run may take (--timeout is at most 7 days) */
#define CG_STALE_UNSEEN_AGE_S (8L * 24 * 3600)

/* Writes dir/owner for the calling process. Returns 0 or CG_EIO naming the file. */
int cg_stale_mark(const char *dir, struct cg_err *err);

/* Removes the shard directories under root whose owner is gone (see above), with what they
 * hold (files, and files in their folders). Returns how many it removed; *first (when not NULL,
 * cap bytes) gets the first one's path, "" when none. */
size_t cg_stale_clean(const char *root, char *first, size_t cap);

/* Removes one stale directory, with all it holds. */
typedef void (*cg_stale_remove_fn)(const char *dir, void *ctx);

/* The same for the directories named prefix + 6 characters under root (bisect's worktrees,
 * "canary-gate-bisect.XXXXXX"), each removed by remove(dir, ctx). */
size_t cg_stale_clean_named(const char *root, const char *prefix, cg_stale_remove_fn remove,
                            void *ctx, char *first, size_t cap);

#endif
