/* buf: a capped, growable byte buffer (see buf.h). */
#include "buf.h"

#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cg_buf_init(struct cg_buf *b, size_t max_bytes)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max_bytes;
}

void cg_buf_release(struct cg_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

void cg_buf_reset(struct cg_buf *b)
{
    b->len = 0;
    if (b->data != NULL)
        b->data[0] = '\0';
}

static int buf_reserve(struct cg_buf *b, size_t extra)
{
    if (extra > b->max || b->len > b->max - extra)
        return CG_ENOMEM;
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap = cap > ((size_t)-1) / 2 ? need : cap * 2;
    char *p = realloc(b->data, cap);
    if (p == NULL)
        return CG_ENOMEM;
    b->data = p;
    b->cap = cap;
    return 0;
}

int cg_buf_add(struct cg_buf *b, const void *p, size_t n)
{
    if (buf_reserve(b, n) != 0)
        return CG_ENOMEM;
    if (n > 0)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int cg_buf_adds(struct cg_buf *b, const char *s)
{
    return cg_buf_add(b, s, strlen(s));
}

int cg_buf_vprintf(struct cg_buf *b, const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    if (n < 0 || buf_reserve(b, (size_t)n) != 0) {
        va_end(again);
        return CG_ENOMEM;
    }
    int m = vsnprintf(b->data + b->len, (size_t)n + 1, fmt, again);
    va_end(again);
    if (m != n) {
        b->data[b->len] = '\0';
        return CG_ENOMEM;
    }
    b->len += (size_t)n;
    return 0;
}

int cg_buf_printf(struct cg_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = cg_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

const char *cg_buf_str(const struct cg_buf *b)
{
    return b->data != NULL ? b->data : "";
}

char *cg_buf_detach(struct cg_buf *b)
{
    char *p = b->data;
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    return p;
}
