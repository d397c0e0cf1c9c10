/*
 * test_exit_codes: the exit codes, which only the command layer picks: a verdict-giving
 * command's for the overall outcome (cmd_report.c: 1 for FAIL, 4 for INCONCLUSIVE only when
 * asked, 0 otherwise) and any command's for a failure (cmd_util.c: 2 for an invalid input or
 * command line, 3 for the rest).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cmd.h"

static void test_exit_codes__by_outcome(void **state)
{
    (void)state;
    static const struct {
        enum cg_outcome overall;
        bool fail_on_inconclusive;
        int want;
    } cases[] = {
        {CG_OUT_PASS, false, 0},         {CG_OUT_PASS, true, 0},
        {CG_OUT_FAIL, false, 1},         {CG_OUT_FAIL, true, 1},
        {CG_OUT_INCONCLUSIVE, false, 0}, {CG_OUT_INCONCLUSIVE, true, 4},
        {CG_OUT_IMPROVED, true, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        assert_int_equal(cg_cmd_exit_code(cases[i].overall, cases[i].fail_on_inconclusive),
                         cases[i].want);
}

static void test_exit_codes__by_error(void **state)
{
    (void)state;
    static const struct {
        int code;
        int want;
    } cases[] = {
        {CG_OK, 0},     {CG_EINPUT, 2},  {CG_EUSAGE, 2}, {CG_EIO, 3},
        {CG_ENOMEM, 3}, {CG_ECANARY, 3}, {CG_ENET, 3},   {CG_EINTERNAL, 3},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        assert_int_equal(cg_cmd_error_exit_code(cases[i].code), cases[i].want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_codes__by_outcome),
        cmocka_unit_test(test_exit_codes__by_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
