/*
 * fsutil: bounded file reads and atomic file writes.
 *
 * Writes go to a temporary file in the target's directory, are flushed and fsync'ed, and are
 * renamed over the target only when complete, so a failed or interrupted write never replaces
 * a good file. Temporaries get unpredictable names and are created exclusively (O_EXCL,
 * O_NOFOLLOW): nothing planted in the directory can redirect a write. Reads take regular files
 * only (a FIFO or device is refused at once, never waited on) and refuse files larger than a
 * caller-given cap.
 */
#ifndef CG_FSUTIL_H
#define CG_FSUTIL_H

#include "err.h"

#include <stddef.h>

/* Reads the whole regular file into a NUL-terminated malloc'ed string (caller frees *out).
 * Fails with CG_EINPUT (missing, empty, over max_bytes, not a regular file: a FIFO, a device, a
 * directory) or CG_EIO, naming the path. Never blocks on a FIFO. */
int cg_file_read(const char *path, size_t max_bytes, char **out, size_t *out_len,
                 struct cg_err *err);

/* Writes len bytes to path atomically (temp file + fsync + rename). "-" writes to stdout; an
 * existing special file (a device such as /dev/full, a FIFO) is written in place, never replaced;
 * a symlink that resolves is written through (its target replaced, the link kept), as a shell's
 * redirection does; a dangling one is replaced by the file. A file replaced keeps its mode. On
 * failure the previous file at path is untouched and err names the path: CG_EIO. */
int cg_file_write_atomic(const char *path, const void *data, size_t len, struct cg_err *err);

/* What a write to path replaces: the resolved target (into buf, PATH_MAX bytes) when path is a
 * symlink that resolves, else path itself. */
const char *cg_file_target(const char *path, char *buf);

/* Creates a new empty temporary file beside path (same directory, a random hidden name) with
 * O_CREAT|O_EXCL|O_NOFOLLOW, mode 0644 less the umask; its name goes to tmp[n]. Returns the open
 * descriptor (the caller closes and renames or unlinks it), or -1 with the reason of the failure
 * in *why (static text: "path too long", strerror's). */
int cg_file_try_temp(const char *path, char *tmp, size_t n, const char **why);

/* "a FIFO", "a directory", "a character device", ... for a st_mode. */
const char *cg_file_type_name(unsigned mode);

/* Removes dir's files, and with depth > 0 its folders with what they hold to that depth
 * (depth 0: files only; a folder deeper stays, and so then does dir), then dir itself; nothing
 * behind a link is followed. Best effort: says nothing. */
void cg_remove_tree(const char *dir, int depth);

/* The directory for temporary files: TMPDIR, or /tmp when it is unset or empty; a relative
 * TMPDIR made absolute (into buf, PATH_MAX bytes) when it resolves, since a child may run
 * elsewhere (a canary in bisect's worktree, git in the repository). Returns buf or a string
 * that outlives the call. */
const char *cg_tmp_dir(char *buf);

/* Returns the directory of the running executable (malloc'ed, caller frees), or NULL. */
char *cg_self_dir(void);

#endif
