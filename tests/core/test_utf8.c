/*
 * test_utf8: one rule for what counts as well-formed UTF-8 (src/core/utf8.c), checked through
 * every output that decodes it: the decoder itself, its repair, the formatter's escapes
 * (src/core/fmt.c: markdown, HTML, terminal) and the trace writer's JSON strings
 * (src/measure/trace.c). One table of byte sequences: overlong forms, surrogates, code points
 * past U+10FFFF, truncated sequences and stray continuation bytes are ill-formed in all of them;
 * the 2-, 3- and 4-byte sequences at the edges of their ranges pass through. What an output does
 * with an ill-formed byte stays its own: the formatter and the trace writer replace each byte
 * (U+FFFD, '?' on a terminal, \ufffd in JSON), the repair each maximal ill-formed subpart.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "buf.h"
#include "fmt.h"
#include "shard.h"
#include "trace.h"
#include "utf8.h"
#include "utf8check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FFFD "\xef\xbf\xbd"

struct utf8_case {
    const char *what;
    const char *bytes; /* the sequence, no NUL in it */
    uint32_t cp;       /* well-formed: its code point */
    size_t subparts;   /* ill-formed: its maximal ill-formed subparts; 0: well-formed */
};

static const struct utf8_case cases[] = {
    {"U+0080, the first 2-byte", "\xc2\x80", 0x80, 0},
    {"U+07FF, the last 2-byte", "\xdf\xbf", 0x7ff, 0},
    {"U+0800, the first 3-byte", "\xe0\xa0\x80", 0x800, 0},
    {"U+D7FF, below the surrogates", "\xed\x9f\xbf", 0xd7ff, 0},
    {"U+E000, above the surrogates", "\xee\x80\x80", 0xe000, 0},
    {"U+FFFF, the last 3-byte", "\xef\xbf\xbf", 0xffff, 0},
    {"U+10000, the first 4-byte", "\xf0\x90\x80\x80", 0x10000, 0},
    {"U+10FFFF, the last code point", "\xf4\x8f\xbf\xbf", 0x10ffff, 0},
    {"overlong '/' in 2 bytes", "\xc0\xaf", 0, 2},
    {"overlong '/' in 3 bytes", "\xe0\x80\xaf", 0, 3},
    {"overlong '/' in 4 bytes", "\xf0\x80\x80\xaf", 0, 4},
    {"overlong U+07FF in 3 bytes", "\xe0\x9f\xbf", 0, 3},
    {"overlong U+FFFF in 4 bytes", "\xf0\x8f\xbf\xbf", 0, 4},
    {"surrogate U+D800", "\xed\xa0\x80", 0, 3},
    {"surrogate U+DFFF", "\xed\xbf\xbf", 0, 3},
    {"U+110000, past the last", "\xf4\x90\x80\x80", 0, 4},
    {"lead byte F5", "\xf5\x80\x80\x80", 0, 4},
    {"byte FF", "\xff", 0, 1},
    {"truncated 2-byte", "\xc3", 0, 1},
    {"truncated 3-byte", "\xe2\x82", 0, 1},
    {"truncated 4-byte", "\xf0\x9f\x98", 0, 1},
    {"stray continuation 80", "\x80", 0, 1},
    {"stray continuation BF", "\xbf", 0, 1},
};
#define N_CASES (sizeof(cases) / sizeof(cases[0]))

/* "a", then `middle` `times` times, then "z": a sequence is tested between two letters, so a
 * truncated one ends at a letter. */
static char *framed(const char *middle, size_t times)
{
    struct cg_buf b;
    cg_buf_init(&b, 4096);
    assert_int_equal(cg_buf_adds(&b, "a"), 0);
    for (size_t i = 0; i < times; i++)
        assert_int_equal(cg_buf_adds(&b, middle), 0);
    assert_int_equal(cg_buf_adds(&b, "z"), 0);
    char *s = cg_buf_detach(&b);
    assert_non_null(s);
    return s;
}

/* The case's sequence between the letters, as the outputs get it. */
static char *input(const struct utf8_case *c)
{
    return framed(c->bytes, 1);
}

/* What an output gives for the case: the sequence when it is well-formed, else `bad` once per
 * ill-formed piece (its bytes, or its maximal subparts), between the letters. */
static char *expected(const struct utf8_case *c, const char *bad, size_t pieces)
{
    return c->subparts == 0 ? input(c) : framed(bad, pieces);
}

typedef int (*escape_fn)(struct cg_buf *out, const char *s);

static int md(struct cg_buf *out, const char *s)
{
    return cg_md_escape(out, s, 4096);
}

static int term(struct cg_buf *out, const char *s)
{
    return cg_term_escape(out, s, 4096);
}

/* Each case through one of the formatter's escapes: an ill-formed byte becomes `bad`. */
static void check_escape(const char *name, escape_fn escape, const char *bad)
{
    size_t wrong = 0;
    for (size_t i = 0; i < N_CASES; i++) {
        const struct utf8_case *c = &cases[i];
        char *in = input(c);
        /* C1 controls are escape introducers on some terminals: '?' there, well-formed or not */
        bool c1 = escape == term && c->subparts == 0 && c->cp >= 0x80 && c->cp < 0xa0;
        char *want = c1 ? strdup("a?z") : expected(c, bad, strlen(c->bytes));
        struct cg_buf b;
        cg_buf_init(&b, 4096);
        assert_int_equal(escape(&b, in), 0);
        const char *got = cg_buf_str(&b);
        if (strcmp(got, want) != 0 || !cg_test_strict_utf8(got)) {
            print_error("%s of %s: got '%s', expected '%s'\n", name, c->what, got, want);
            wrong++;
        }
        cg_buf_release(&b);
        free(want);
        free(in);
    }
    if (wrong > 0)
        fail_msg("%s: %zu of %zu cases wrong", name, wrong, N_CASES);
}

static void test_utf8__markdown_escape_replaces_each_ill_formed_byte(void **state)
{
    (void)state;
    check_escape("cg_md_escape", md, FFFD);
}

static void test_utf8__html_escape_replaces_each_ill_formed_byte(void **state)
{
    (void)state;
    check_escape("cg_html_escape", cg_html_escape, FFFD);
}

static void test_utf8__terminal_escape_shows_each_ill_formed_byte_as_a_question_mark(void **state)
{
    (void)state;
    check_escape("cg_term_escape", term, "?");
}

static void test_utf8__trace_strings_replace_each_ill_formed_byte(void **state)
{
    (void)state;
    size_t wrong = 0;
    for (size_t i = 0; i < N_CASES; i++) {
        const struct utf8_case *c = &cases[i];
        char *in = input(c);
        struct cg_shard_range r = {.tid = 7, .start_ns = 1000, .end_ns = 2000, .name = in};
        struct cg_shard s;
        memset(&s, 0, sizeof(s));
        s.pid = 7;
        s.rank = -1;
        s.trace_first = 0;
        s.trace_last = -1;
        s.ranges = &r;
        s.n_ranges = 1;
        char *json = cg_trace_to_json(&s, 1, NULL, 0);
        assert_non_null(json);
        char *body = expected(c, "\\ufffd", strlen(c->bytes));
        char *want = malloc(strlen(body) + 16);
        assert_non_null(want);
        snprintf(want, strlen(body) + 16, "{\"name\":\"%s\"", body);
        if (strstr(json, want) == NULL || !cg_test_strict_utf8(json)) {
            print_error("trace of %s: no %s in %s\n", c->what, want, json);
            wrong++;
        }
        free(want);
        free(body);
        free(json);
        free(in);
    }
    if (wrong > 0)
        fail_msg("trace: %zu of %zu cases wrong", wrong, N_CASES);
}

static void test_utf8__decode_gives_the_code_point_of_well_formed_sequences_only(void **state)
{
    (void)state;
    size_t wrong = 0;
    for (size_t i = 0; i < N_CASES; i++) {
        const struct utf8_case *c = &cases[i];
        char *in = input(c);
        size_t len = strlen(c->bytes);
        uint32_t cp = 0xDEAD;
        size_t got = cg_utf8_decode(in + 1, strlen(in + 1), &cp); /* the sequence, then "z" */
        size_t want = c->subparts == 0 ? len : 0;
        if (got != want || cp != (c->subparts == 0 ? c->cp : 0xDEAD)) {
            print_error("cg_utf8_decode of %s: %zu bytes, U+%04X\n", c->what, got, (unsigned)cp);
            wrong++;
        }
        /* the same bytes cut short by n: never well-formed, never read past n */
        for (size_t n = 0; n < len; n++)
            if (cg_utf8_decode(c->bytes, n, NULL) != 0) {
                print_error("cg_utf8_decode of %s in %zu bytes: well-formed\n", c->what, n);
                wrong++;
            }
        free(in);
    }
    uint32_t cp = 0;
    assert_int_equal(cg_utf8_decode("A\xc3", 2, &cp), 1);
    assert_int_equal(cp, 'A');
    if (wrong > 0)
        fail_msg("cg_utf8_decode: %zu wrong answers over %zu cases", wrong, N_CASES);
}

static void test_utf8__repair_replaces_each_maximal_ill_formed_subpart(void **state)
{
    (void)state;
    size_t wrong = 0;
    for (size_t i = 0; i < N_CASES; i++) {
        const struct utf8_case *c = &cases[i];
        char *in = input(c);
        char *want = expected(c, FFFD, c->subparts);
        if (cg_utf8_valid(in, strlen(in)) != (c->subparts == 0)) {
            print_error("cg_utf8_valid of %s: %s\n", c->what, c->subparts ? "true" : "false");
            wrong++;
        }
        size_t len = 0;
        char *got = cg_utf8_repair(in, strlen(in), &len);
        assert_non_null(got);
        if (strcmp(got, want) != 0) {
            print_error("cg_utf8_repair of %s: got '%s', expected '%s'\n", c->what, got, want);
            wrong++;
        } else {
            assert_int_equal(len, strlen(want));
        }
        free(got);
        free(want);
        free(in);
    }
    if (wrong > 0)
        fail_msg("utf8: %zu wrong answers over %zu cases", wrong, N_CASES);
}

/* A cut never leaves half a character: a last sequence cut short is left out, whole ones and
 * ASCII are kept, whatever the sequence's length. */
static void test_utf8__cut_leaves_out_a_character_cut_short(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        size_t n, want;
    } cuts[] = {
        {"abc", 3, 3},
        {"ab", 0, 0},
        {"a\xc3\xa9", 3, 3},     /* é whole */
        {"a\xc3\xa9", 2, 1},     /* é cut after its lead byte */
        {"a\xe2\x80\xa6", 3, 1}, /* … cut after two of three bytes */
        {"a\xe2\x80\xa6", 4, 4},
        {"a\xf0\x9f\x9a\x80", 4, 1}, /* a 4-byte character cut after three */
        {"a\xf0\x9f\x9a\x80", 5, 5},
        {"\xe2\x80\xa6\xe2\x80\xa6", 5, 3}, /* the second cut short, the first kept */
    };
    for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++)
        if (cg_utf8_cut(cuts[i].s, cuts[i].n) != cuts[i].want)
            fail_msg("case %zu: cut %zu, want %zu", i, cg_utf8_cut(cuts[i].s, cuts[i].n),
                     cuts[i].want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_utf8__markdown_escape_replaces_each_ill_formed_byte),
        cmocka_unit_test(test_utf8__html_escape_replaces_each_ill_formed_byte),
        cmocka_unit_test(test_utf8__terminal_escape_shows_each_ill_formed_byte_as_a_question_mark),
        cmocka_unit_test(test_utf8__trace_strings_replace_each_ill_formed_byte),
        cmocka_unit_test(test_utf8__cut_leaves_out_a_character_cut_short),
        cmocka_unit_test(test_utf8__decode_gives_the_code_point_of_well_formed_sequences_only),
        cmocka_unit_test(test_utf8__repair_replaces_each_maximal_ill_formed_subpart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
