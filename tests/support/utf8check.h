/*
 * utf8check: whether text is well-formed UTF-8, as glibc's iconv decides (a third party, not this
 * project's utf8.c), for the tests that check what the tool writes.
 */
#ifndef CG_TEST_UTF8CHECK_H
#define CG_TEST_UTF8CHECK_H

#include <stdbool.h>

/* True when s (NUL-terminated) is well-formed UTF-8; fails the test when iconv cannot open. */
bool cg_test_strict_utf8(const char *s);

#endif
