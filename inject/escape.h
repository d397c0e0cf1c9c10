/*
 * escape: how a name is written into a shard line (the last field, read back by src/measure/shard.c):
 * a backslash is doubled, newlines and other control bytes (and DEL) become \xHH, everything
 * else passes as it is (the escape characters are shard_format.h's). Names are cut at
 * CG_NAME_MAX_BYTES input bytes. Pure, thread-safe.
 */
#ifndef CG_INJECT_ESCAPE_H
#define CG_INJECT_ESCAPE_H

#include "shard_format.h"

#include <stddef.h>

#define CG_NAME_MAX_BYTES 4096
/* Room an escaped name of CG_NAME_MAX_BYTES may take, with its NUL. */
#define CG_NAME_ESCAPED_MAX (4 * CG_NAME_MAX_BYTES + 1)

/* Escapes name (NULL reads as "?") from byte *from on into out (cap > 4 bytes), stopping when
 * out is nearly full; returns the bytes written (out is not NUL-terminated) and sets *from to
 * where it stopped, or to the name's end. */
static inline size_t cg_escape_name(const char *name, size_t *from, char *out, size_t cap)
{
    static const char hex[] = "0123456789abcdef";
    size_t k = 0, i = *from;
    if (name == NULL)
        name = "?";
    for (; i < CG_NAME_MAX_BYTES && name[i] != '\0' && k + 4 <= cap; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c == CG_SHARD_ESC) {
            out[k++] = CG_SHARD_ESC;
            out[k++] = CG_SHARD_ESC;
        } else if (c < 0x20 || c == 0x7f) {
            out[k++] = CG_SHARD_ESC;
            out[k++] = CG_SHARD_ESC_HEX;
            out[k++] = hex[c >> 4];
            out[k++] = hex[c & 15];
        } else {
            out[k++] = (char)c;
        }
    }
    *from = (name[i] == '\0' || i >= CG_NAME_MAX_BYTES) ? (size_t)-1 : i;
    return k;
}

#endif
