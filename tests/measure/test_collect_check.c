/*
 * test_collect_check: why a canary run failed, from what the run left
 * (src/measure/collect_check.c): the hint a failure gives, told by the failure's cause, not its
 * kind alone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "collect.h"
#include "err.h"
#include "say.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

struct heard {
    char text[4096];
};

static void hear(const struct cg_say *s, enum cg_say_kind kind, const char *text)
{
    (void)kind;
    struct heard *h = s->ctx;
    size_t have = strlen(h->text);
    snprintf(h->text + have, sizeof(h->text) - have, "%s\n", text);
}

/* A shard the library could not open or write: the hint follows the errno. Room or rights in
 * TMPDIR for ENOSPC, EDQUOT, EACCES, EROFS; the file size limit for EFBIG; the directory taken
 * away for ENOTDIR and ENOENT; nothing to say about TMPDIR for an errno it cannot mend (EEXIST,
 * EIO). */
static void test_collect_check__shard_write_hint_follows_the_errno(void **state)
{
    (void)state;
    static const struct {
        int e;
        const char *want, *absent; /* want NULL: no hint at all */
    } cases[] = {
        {ENOSPC, "free space there", NULL},
        {EDQUOT, "free space there", NULL},
        {EACCES, "a directory the canary can write", "free space"},
        {EROFS, "a directory the canary can write", "free space"},
        {EFBIG, "file size limit (ulimit -f", "TMPDIR"},
        {ENOTDIR, "removed or replaced while the canary ran", "free space"},
        {ENOENT, "removed or replaced while the canary ran", "free space"},
        {EEXIST, NULL, NULL},
        {EIO, NULL, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct heard h = {""};
        struct cg_say say = {hear, &h, false};
        struct cg_collect_failure f = {.reason = CG_COLLECT_FAILED_SHARD_WRITE,
                                       .shard_errno = cases[i].e};
        struct cg_err err;
        cg_err_init(&err);
        cg_err_set(&err, CG_ECANARY, "the injection library could not write its shard");
        cg_collect_hint(&f, &err, NULL, &say);
        if (cases[i].want == NULL) {
            if (h.text[0] != '\0')
                fail_msg("%s: a hint that cannot help: %s", strerror(cases[i].e), h.text);
            continue;
        }
        if (strstr(h.text, cases[i].want) == NULL)
            fail_msg("%s: no '%s' in: %s", strerror(cases[i].e), cases[i].want, h.text);
        if (cases[i].absent != NULL && strstr(h.text, cases[i].absent) != NULL)
            fail_msg("%s: '%s' in: %s", strerror(cases[i].e), cases[i].absent, h.text);
    }
    /* with --shard-dir the directory named is that one */
    struct heard h = {""};
    struct cg_say say = {hear, &h, false};
    struct cg_collect_failure f = {.reason = CG_COLLECT_FAILED_SHARD_WRITE,
                                   .shard_errno = ENOSPC,
                                   .shard_dir = "/shared/shards"};
    struct cg_err err;
    cg_err_init(&err);
    cg_err_set(&err, CG_ECANARY, "x");
    cg_collect_hint(&f, &err, NULL, &say);
    assert_non_null(strstr(h.text, "--shard-dir ('/shared/shards')"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_collect_check__shard_write_hint_follows_the_errno),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
