/*
 * comment_marker: the hidden HTML comment lines at the top of the markdown report, by which
 * canary-gate finds its own PR comment and updates it instead of adding another. Written by the
 * report (report_md.c), the gate's notices and the comment body (github_parse.c); read back from
 * a report by github_parse.c. The lines, in order:
 *
 *   <!-- canary-gate -->                 the default gate; or
 *   <!-- canary-gate:ID -->              gate ID (letters, digits, '.', '_', '-')
 *   <!-- canary-gate-verdict: V -->      the verdict word (see github.h)
 *   <!-- canary-gate-reason: TEXT -->    only after an "error" verdict: why, on one line
 *
 * Pure functions; the writers append to a struct cg_buf or a caller's array. Thread-safe.
 */
#ifndef CG_COMMENT_MARKER_H
#define CG_COMMENT_MARKER_H

#include "buf.h"

#include <stddef.h>

/* The gate marker: CG_COMMENT_MARKER_HEAD CG_COMMENT_MARKER_TAIL, or CG_COMMENT_MARKER_HEAD
 * ":" ID CG_COMMENT_MARKER_TAIL. */
#define CG_COMMENT_MARKER_HEAD "<!-- canary-gate"
#define CG_COMMENT_MARKER_TAIL " -->"
#define CG_COMMENT_MARKER_DEFAULT CG_COMMENT_MARKER_HEAD CG_COMMENT_MARKER_TAIL
/* The verdict and reason lines: HEAD, a space, the value, " -->" (read back: HEAD, the value
 * with the spaces around it trimmed, "-->"). */
#define CG_COMMENT_MARKER_VERDICT_HEAD "<!-- canary-gate-verdict:"
#define CG_COMMENT_MARKER_REASON_HEAD "<!-- canary-gate-reason:"
#define CG_COMMENT_MARKER_CLOSE "-->"

/* Whether c may appear in a gate id (and so in a marker): an ASCII letter or digit, '.', '_' or
 * '-'. c is an unsigned char value. */
int cg_comment_marker_id_char(int c);

/* Writes the gate marker for id (NULL or "" for the default gate), without a newline, into out
 * (size bytes). Returns 0, or CG_EINPUT when it does not fit. id is not checked. */
int cg_comment_marker_format(const char *id, char *out, size_t size);

/* Appends the gate marker line for id (NULL or "" for the default gate) and its newline; bytes
 * of id that may not appear in a gate id are written as '_'. Returns 0 or CG_ENOMEM. */
int cg_comment_marker_add(struct cg_buf *b, const char *id);

/* Appends the verdict line for the word verdict ("pass", "fail", ...) and its newline. Returns 0
 * or CG_ENOMEM. */
int cg_comment_marker_add_verdict(struct cg_buf *b, const char *verdict);

/* Appends the reason line for text, at most max_bytes of it, and its newline. The line never
 * closes the comment early: bytes below 0x20, '>' and each '-' followed by another '-' become
 * spaces. Returns 0 or CG_ENOMEM. */
int cg_comment_marker_add_reason(struct cg_buf *b, const char *text, size_t max_bytes);

/* Appends the hidden lines every comment opens with: the gate marker for id, the verdict line
 * and, when reason is not NULL, the reason line (at most max_reason bytes of it). Returns 0 or
 * CG_ENOMEM. */
int cg_comment_marker_add_head(struct cg_buf *b, const char *id, const char *verdict,
                               const char *reason, size_t max_reason);

/* Reads a gate marker line (p, n bytes, without its line end). Returns 1 and copies the gate id
 * ("" for the default gate) into id (id_size bytes) when the line is one whose id fits, else 0. */
int cg_comment_marker_id(const char *p, size_t n, char *id, size_t id_size);

/* Reads a verdict line (p, n bytes, without its line end). Returns 1 and copies its word into
 * word (size bytes) when the line is one and the word fits, else 0. The word is not checked. */
int cg_comment_marker_verdict(const char *p, size_t n, char *word, size_t size);

/* Reads a reason line (p, n bytes, without its line end) into out (size bytes): its TEXT with
 * control bytes as spaces, cut to fit (never inside a UTF-8 character) and trimmed; "" when the
 * line is not one. */
void cg_comment_marker_reason(const char *p, size_t n, char *out, size_t size);

#endif
