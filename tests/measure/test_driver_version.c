/*
 * test_driver_version: the GPU driver version read from /proc/driver/nvidia/version's first line,
 * in the forms the proprietary and the open kernel modules write.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "launch.h"

#include <stdlib.h>

static void expect(const char *line, const char *want)
{
    char *got = cg_launch_parse_driver_version(line);
    if (want == NULL) {
        if (got != NULL)
            fail_msg("'%s': got '%s', expected none", line, got);
        return;
    }
    if (got == NULL)
        fail_msg("'%s': got none, expected '%s'", line, want);
    assert_string_equal(got, want);
    free(got);
}

static void test_driver_version__proprietary_module(void **state)
{
    (void)state;
    expect("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 06:54:38 UTC "
           "2025\n",
           "580.65.06");
}

/* as read on an H100 machine: "for ARCH" sits between the words and the version */
static void test_driver_version__open_module_names_its_architecture_first(void **state)
{
    (void)state;
    expect("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  "
           "(nixbld@)  Thu Jan  1 00:00:00 UTC 1970\n",
           "580.159.04");
    expect("NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  570.86.15  Release Build\n",
           "570.86.15");
}

static void test_driver_version__none_without_a_version(void **state)
{
    (void)state;
    expect("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  Release Build\n", NULL);
    expect("GCC version:  gcc version 12.2.0\n", NULL);
    expect("", NULL);
    expect("Kernel Module 580.\n", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_driver_version__proprietary_module),
        cmocka_unit_test(test_driver_version__open_module_names_its_architecture_first),
        cmocka_unit_test(test_driver_version__none_without_a_version),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
