/* utf8check: well-formed UTF-8 as glibc's iconv decides (see utf8check.h). */
#include "utf8check.h"

#include <errno.h>
#include <iconv.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

bool cg_test_strict_utf8(const char *s)
{
    iconv_t cd = iconv_open("UTF-32LE", "UTF-8");
    assert_true(cd != (iconv_t)-1);
    char *in = (char *)s;
    size_t in_left = strlen(s);
    char buf[4096];
    bool ok = true;
    while (in_left > 0 && ok) {
        char *out = buf;
        size_t out_left = sizeof(buf);
        ok = iconv(cd, &in, &in_left, &out, &out_left) != (size_t)-1 || errno == E2BIG;
    }
    iconv_close(cd);
    return ok;
}
