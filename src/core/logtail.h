/*
 * logtail: the end of the canary's log, for the report of a canary that failed. A reviewer on
 * GitHub cannot open the log on the runner, so the report shows its last lines; this reads them,
 * bounded, and hides secrets with the redactor that guards the command line (redact.h).
 *
 * The whole log is streamed once to count its lines (the memory used is fixed whatever its size);
 * only its last CG_LOG_TAIL_WINDOW_BYTES are kept, and of them at most max_lines lines. The text
 * is raw otherwise: each renderer escapes it for its medium. Not thread-safe (the redactor).
 */
#ifndef CG_LOGTAIL_H
#define CG_LOGTAIL_H

#include "err.h"
#include "redact.h"

#include <stdbool.h>
#include <stddef.h>

#define CG_LOG_TAIL_LINES 20               /* lines a failed canary's report shows */
#define CG_LOG_TAIL_WINDOW_BYTES (64 * 1024) /* the most of the log's end that is read */

struct cg_log_tail {
    char *path;          /* the log's path, as given (a copy) */
    char *text;          /* the last lines, redacted, '\n' between them, no final newline; NULL
                          * when the log is empty */
    size_t n_lines;      /* lines in text */
    size_t lines_before; /* lines of the log before them, left out */
    bool first_cut;      /* text's first line is the end of a line longer than the window */
};

/* Zeroes t (no allocation). */
void cg_log_tail_init(struct cg_log_tail *t);

/* Reads the last max_lines lines of the log at path (at most CG_LOG_TAIL_WINDOW_BYTES of them)
 * into t, redacted by r (NULL: URL userinfo only). A missing or unreadable log is CG_EIO naming
 * it; a log that is not a regular file CG_EINPUT; CG_ENOMEM. Free t with cg_log_tail_release,
 * whatever the result. */
int cg_log_tail_read(const char *path, size_t max_lines, const struct cg_redact *r,
                     struct cg_log_tail *t, struct cg_err *err);

/* Frees t's path and text and zeroes it. */
void cg_log_tail_release(struct cg_log_tail *t);

#endif
