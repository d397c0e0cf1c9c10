/*
 * fuzz: what the libFuzzer harnesses share: a check that stops the fuzzer with a message when a
 * property of the code under test is broken, and a reader that turns the fuzzer's bytes into
 * the small integers and strings a structured harness needs.
 *
 * Every harness defines LLVMFuzzerTestOneInput; crashes, leaks and undefined behaviour are
 * caught by ASan and UBSan, broken properties by CG_FUZZ_CHECK. Single-threaded.
 */
#ifndef CG_FUZZ_H
#define CG_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Stops with a message naming the broken property. */
#define CG_FUZZ_CHECK(cond, ...)                                                                   \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz check failed at %s:%d: %s: ", __FILE__, __LINE__, #cond);        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* A cursor over the fuzzer's bytes; reads past the end give zeros. */
struct cg_fuzz_in {
    const uint8_t *p;
    size_t left;
};

static inline uint8_t cg_fuzz_u8(struct cg_fuzz_in *in)
{
    if (in->left == 0)
        return 0;
    in->left--;
    return *in->p++;
}

static inline uint64_t cg_fuzz_uint(struct cg_fuzz_in *in, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v = (v << 8) | cg_fuzz_u8(in);
    return v;
}

/* Copies a length-prefixed string (at most max - 1 bytes, NUL bytes kept as they come, so the C
 * string may end early) into buf. Returns its length in bytes. */
static inline size_t cg_fuzz_str(struct cg_fuzz_in *in, char *buf, size_t max)
{
    size_t n = cg_fuzz_u8(in);
    if (n > in->left)
        n = in->left;
    if (n > max - 1)
        n = max - 1;
    memcpy(buf, in->p, n);
    buf[n] = '\0';
    in->p += n;
    in->left -= n;
    return n;
}

/* A NUL-terminated malloc'ed copy of the input (the parsers of C strings need one). */
static inline char *cg_fuzz_cstr(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (s == NULL)
        abort();
    if (size > 0)
        memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

#endif
