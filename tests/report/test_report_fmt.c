/* test_report_fmt: the report layer's small shared formatters (report_fmt.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "report.h"

/* A commit is shown by its first 12 hex digits, whether git names it with SHA-1 (40 digits) or
 * SHA-256 (64); anything else (a tag, a short name) is shown as given, cut to the buffer. */
static void test_report_fmt__short_commit_of_sha1_and_sha256(void **state)
{
    (void)state;
    static const struct {
        const char *commit, *shown;
    } cases[] = {
        {"0123456789abcdef0123456789abcdef01234567", "0123456789ab"},
        {"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "0123456789ab"},
        {"v1.2.3", "v1.2.3"},
        {"0123456789ABCDEF0123456789ABCDEF01234567", "0123456789ABCDEF0123456789ABCDEF01234567"},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char dst[80];
        cg_report_short_commit(cases[i].commit, dst, sizeof(dst));
        assert_string_equal(dst, cases[i].shown);
    }
    char small[8];
    cg_report_short_commit("main-branch-name", small, sizeof(small));
    assert_string_equal(small, "main-br");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_report_fmt__short_commit_of_sha1_and_sha256),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
