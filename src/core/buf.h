/*
 * buf: a capped, growable byte buffer for text and HTTP bodies.
 *
 * The contents are always NUL-terminated (the NUL is not counted in len). Appending past the
 * cap fails with CG_ENOMEM and leaves the buffer as it was, so a hostile server or artifact
 * cannot make it grow without bound. Not thread-safe.
 */
#ifndef CG_BUF_H
#define CG_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct cg_buf {
    char *data;  /* NULL until the first append */
    size_t len;  /* bytes used, excluding the NUL */
    size_t cap;  /* bytes allocated */
    size_t max;  /* hard cap on len */
};

/* Sets an empty buffer that may grow to max_bytes. Allocates nothing. */
void cg_buf_init(struct cg_buf *b, size_t max_bytes);

/* Frees the contents; the buffer is empty and reusable afterwards. */
void cg_buf_release(struct cg_buf *b);

/* Empties the buffer, keeping its memory. */
void cg_buf_reset(struct cg_buf *b);

/* Appends n bytes. Returns 0, or CG_ENOMEM (allocation failed or cap reached: nothing appended). */
int cg_buf_add(struct cg_buf *b, const void *p, size_t n);

/* Appends a NUL-terminated string. Same results as cg_buf_add. */
int cg_buf_adds(struct cg_buf *b, const char *s);

/* Appends printf-style text. Same results as cg_buf_add. */
int cg_buf_printf(struct cg_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same with a va_list (ap is used up). */
int cg_buf_vprintf(struct cg_buf *b, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/* Returns the contents ("" when empty); owned by the buffer. */
const char *cg_buf_str(const struct cg_buf *b);

/* Hands the contents to the caller (who frees them) and empties the buffer; NULL when empty. */
char *cg_buf_detach(struct cg_buf *b);

#endif
