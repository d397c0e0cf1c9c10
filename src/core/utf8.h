/*
 * utf8: well-formed UTF-8, and repairing text that is not.
 *
 * Names that reach the tool from outside (kernel and range names, the canary's argv, the GPU's
 * name, paths) may hold any bytes; strict JSON readers reject a file with invalid UTF-8. Text is
 * repaired on the way in: every maximal ill-formed subpart (Unicode's recommended practice, as
 * in WHATWG's decoder) becomes U+FFFD. Well-formed means the sequences of Unicode's table 3-7:
 * no overlong forms, no surrogates, nothing past U+10FFFF. This is the project's one UTF-8
 * decoder: the escapes (fmt.c) and the trace writer decode through cg_utf8_decode, and decide
 * themselves what an ill-formed byte becomes. Pure functions, thread-safe.
 */
#ifndef CG_UTF8_H
#define CG_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Length (1-4) of the well-formed sequence that starts the n bytes at s, its code point in *cp
 * (when cp is not NULL); 0 when n is 0 or the sequence is ill-formed: an overlong form, a
 * surrogate, past U+10FFFF, cut short by n or by a byte that is not a continuation byte, or a
 * stray continuation byte (*cp is then left alone). Reads at most 4 bytes and never past n. */
size_t cg_utf8_decode(const char *s, size_t n, uint32_t *cp);

/* True when the n bytes at s are well-formed UTF-8. */
bool cg_utf8_valid(const char *s, size_t n);

/* A malloc'ed NUL-terminated copy of the n bytes at s with every ill-formed subpart replaced by
 * U+FFFD (caller frees); *out_len (when not NULL) gets its length. NULL when out of memory. */
char *cg_utf8_repair(const char *s, size_t n, size_t *out_len);

/* The length of the longest prefix of the n bytes at s that does not end inside a character: a
 * last sequence the n bytes cut short (its lead byte says how long it is) is left out; n when
 * none is. For cutting text to fit without leaving half a character. */
size_t cg_utf8_cut(const char *s, size_t n);

/* cg_utf8_repair of a NUL-terminated string; NULL in, NULL out. */
char *cg_utf8_dup(const char *s);

/* Repairs the malloc'ed string *s in place (reallocating only when it is ill-formed).
 * 0, or -1 when out of memory (*s is then unchanged). */
int cg_utf8_fix(char **s);

#endif
