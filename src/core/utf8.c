/* utf8: well-formed UTF-8 and its repair (see utf8.h). */
#include "utf8.h"

#include <stdlib.h>
#include <string.h>

/* Length of the well-formed sequence at p (1-4; n bytes are left), or 0 when it is ill-formed;
 * then *bad gets the length of its maximal ill-formed subpart (at least 1): the lead byte and
 * the continuation bytes that could still have made a sequence. */
static size_t seq_len(const unsigned char *p, size_t n, size_t *bad)
{
    unsigned c = p[0];
    size_t need;
    unsigned lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    *bad = 1;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        need = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        if (c == 0xE0)
            lo = 0xA0; /* no overlong forms */
        else if (c == 0xED)
            hi = 0x9F; /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F; /* nothing past U+10FFFF */
    } else {
        return 0; /* a continuation byte, C0, C1 or F5..FF */
    }
    for (size_t i = 1; i < need; i++) {
        if (i >= n)
            return 0;
        unsigned b = p[i];
        unsigned l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
        if (b < l || b > h)
            return 0;
        *bad = i + 1;
    }
    return need;
}

size_t cg_utf8_decode(const char *s, size_t n, uint32_t *cp)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t bad;
    size_t k = n > 0 ? seq_len(p, n, &bad) : 0;
    if (k > 0 && cp != NULL) {
        /* the lead byte keeps 7, 5, 4 or 3 bits; each continuation byte 6 */
        uint32_t v = k == 1 ? p[0] : p[0] & (0x7Fu >> k);
        for (size_t i = 1; i < k; i++)
            v = v << 6 | (p[i] & 0x3Fu);
        *cp = v;
    }
    return k;
}

bool cg_utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t bad;
    for (size_t i = 0; i < n;) {
        if (p[i] < 0x80) { /* ASCII, most names: no call per byte */
            i++;
            continue;
        }
        size_t k = seq_len(p + i, n - i, &bad);
        if (k == 0)
            return false;
        i += k;
    }
    return true;
}

char *cg_utf8_repair(const char *s, size_t n, size_t *out_len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t bad, len = 0;
    /* At most 3 bytes for each byte in: a single ill-formed byte becomes EF BF BD. */
    if (n > ((size_t)-1 - 1) / 3)
        return NULL;
    if (cg_utf8_valid(s, n)) { /* the usual case: an exact copy, no oversized block to shrink */
        char *copy = malloc(n + 1);
        if (copy == NULL)
            return NULL;
        memcpy(copy, s, n);
        copy[n] = '\0';
        if (out_len != NULL)
            *out_len = n;
        return copy;
    }
    char *out = malloc(n * 3 + 1);
    if (out == NULL)
        return NULL;
    for (size_t i = 0; i < n;) {
        size_t k = seq_len(p + i, n - i, &bad);
        if (k > 0) {
            memcpy(out + len, p + i, k);
            len += k;
            i += k;
        } else {
            memcpy(out + len, "\xef\xbf\xbd", 3);
            len += 3;
            i += bad;
        }
    }
    out[len] = '\0';
    if (out_len != NULL)
        *out_len = len;
    char *shrunk = realloc(out, len + 1);
    return shrunk != NULL ? shrunk : out;
}

char *cg_utf8_dup(const char *s)
{
    return s != NULL ? cg_utf8_repair(s, strlen(s), NULL) : NULL;
}

int cg_utf8_fix(char **s)
{
    if (*s == NULL || cg_utf8_valid(*s, strlen(*s)))
        return 0;
    char *r = cg_utf8_dup(*s);
    if (r == NULL)
        return -1;
    free(*s);
    *s = r;
    return 0;
}

size_t cg_utf8_cut(const char *s, size_t n)
{
    size_t lead = n;
    while (lead > 0 && ((unsigned char)s[lead - 1] & 0xC0) == 0x80)
        lead--;
    if (lead == 0 || ((unsigned char)s[lead - 1] & 0xC0) != 0xC0)
        return n;
    unsigned char c = (unsigned char)s[lead - 1];
    size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    return n - (lead - 1) < len ? lead - 1 : n;
}
