/*
 * fuzz_opname: kernel and range names as any program may spell them, through the demangler,
 * the family keys and the escaping of the three outputs (markdown, terminal).
 *
 * Input: a name (NUL bytes end it). Properties: demangling and family keys never fail but for
 * memory; the family of a kernel is no longer than its name plus a few bytes; escaped for the
 * terminal, a name holds no control character and no C1 control (no escape sequence can reach
 * the terminal); escaped for markdown it holds no control character, none of the characters
 * that end a table cell or open HTML, a link or a mention, no "www." (any case) and no ':' (so no
 * autolink), and it is valid UTF-8.
 */
#include "fuzz.h"

#include "buf.h"
#include "opname.h"
#include "report.h"

#include <ctype.h>

static bool utf8_valid(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t k = p[i] < 0x80 ? 1 : (p[i] & 0xE0) == 0xC0 ? 2 : (p[i] & 0xF0) == 0xE0 ? 3
                                   : (p[i] & 0xF8) == 0xF0 ? 4 : 0;
        if (k == 0 || i + k > n)
            return false;
        for (size_t j = 1; j < k; j++)
            if ((p[i + j] & 0xC0) != 0x80)
                return false;
        i += k;
    }
    return true;
}

static void escapes(const char *s)
{
    struct cg_buf b;
    cg_buf_init(&b, 1 << 20);
    if (cg_term_escape(&b, s, 200) == 0) {
        const unsigned char *p = (const unsigned char *)cg_buf_str(&b);
        for (size_t i = 0; i < b.len; i++) {
            CG_FUZZ_CHECK(p[i] >= 0x20 && p[i] != 0x7f, "control byte 0x%02x for the terminal", p[i]);
            CG_FUZZ_CHECK(!(p[i] == 0xC2 && i + 1 < b.len && p[i + 1] >= 0x80 && p[i + 1] < 0xA0),
                          "a C1 control for the terminal");
        }
    }
    cg_buf_reset(&b);
    if (cg_md_escape(&b, s, 200) == 0) {
        const unsigned char *p = (const unsigned char *)cg_buf_str(&b);
        CG_FUZZ_CHECK(utf8_valid(p, b.len), "invalid UTF-8 in markdown");
        for (size_t i = 0; i < b.len; i++) {
            CG_FUZZ_CHECK(p[i] >= 0x20 && p[i] != 0x7f, "control byte 0x%02x in markdown", p[i]);
            CG_FUZZ_CHECK(strchr("|<>`[]@\\", p[i]) == NULL, "'%c' unescaped in markdown", p[i]);
            /* nothing GitHub links by itself: "www." in any case, a scheme's "://" */
            CG_FUZZ_CHECK(!(p[i] == '.' && i >= 3 && tolower(p[i - 1]) == 'w' &&
                            tolower(p[i - 2]) == 'w' && tolower(p[i - 3]) == 'w'),
                          "'www.' unescaped in markdown");
            CG_FUZZ_CHECK(p[i] != ':', "':' unescaped in markdown");
        }
    }
    cg_buf_release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *name = cg_fuzz_cstr(data, size);
    char *demangled = cg_opname_demangle(name);
    const char *exact = demangled != NULL ? demangled : name;
    for (int kind = 0; kind < CG_OP_KIND_COUNT; kind++) {
        char *family = cg_opname_family((enum cg_op_kind)kind, exact);
        CG_FUZZ_CHECK(family != NULL, "no family for '%s'", exact);
        CG_FUZZ_CHECK(strlen(family) <= strlen(exact) + 8, "family '%s' of '%s'", family, exact);
        (void)cg_opname_is_comm(family);
        escapes(family);
        free(family);
    }
    escapes(exact);
    free(demangled);
    free(name);
    return 0;
}
