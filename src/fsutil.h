/*
 * fsutil: bounded file reads and atomic file writes.
 *
 * Writes go to a temporary file in the target's directory, are flushed and fsync'ed, and are
 * renamed over the target only when complete, so a failed or interrupted write never replaces
 * a good file. Reads refuse files larger than a caller-given cap.
 */
#ifndef CG_FSUTIL_H
#define CG_FSUTIL_H

#include "err.h"

#include <stddef.h>

/* Reads the whole file into a NUL-terminated malloc'ed string (caller frees *out).
 * Fails with CG_EINPUT (missing, empty, over max_bytes) or CG_EIO, naming the path. */
int cg_file_read(const char *path, size_t max_bytes, char **out, size_t *out_len,
                 struct cg_err *err);

/* Writes len bytes to path atomically (temp file + fsync + rename). "-" writes to stdout; an
 * existing special file (a device such as /dev/full, a FIFO) is written in place, never replaced.
 * On failure the previous file at path is untouched and err names the path: CG_EIO. */
int cg_file_write_atomic(const char *path, const void *data, size_t len, struct cg_err *err);

/* Returns the directory of the running executable (malloc'ed, caller frees), or NULL. */
char *cg_self_dir(void);

#endif
