/*
 * test_stale: the shard directories of gates that are no longer running (stale.h) are removed
 * by the next gate under the same root; those of running gates, of other hosts, of reused pids'
 * new processes and those without an owner file are kept.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "stale.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char root[] = "/tmp/cg-stale-XXXXXX";

static void path_of(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", root, name);
}

/* Makes root/name with an owner file of text (NULL: none), a run folder with a shard and a
 * fail file, as a gate killed mid-run leaves them. */
static void make_dir(const char *name, const char *owner)
{
    char p[512];
    path_of(p, sizeof(p), name);
    assert_int_equal(mkdir(p, 0700), 0);
    char q[600];
    snprintf(q, sizeof(q), "%s/run-1", p);
    assert_int_equal(mkdir(q, 0700), 0);
    snprintf(q, sizeof(q), "%s/run-1/shard-r0-l0-p1.part", p);
    FILE *f = fopen(q, "w");
    assert_non_null(f);
    fputs("canary-gate-shard 1\n", f);
    fclose(f);
    snprintf(q, sizeof(q), "%s/run-1.fail", p);
    f = fopen(q, "w");
    assert_non_null(f);
    fclose(f);
    if (owner != NULL) {
        snprintf(q, sizeof(q), "%s/" CG_STALE_OWNER, p);
        f = fopen(q, "w");
        assert_non_null(f);
        fputs(owner, f);
        fclose(f);
    }
}

static int exists(const char *name)
{
    char p[512];
    path_of(p, sizeof(p), name);
    struct stat st;
    return lstat(p, &st) == 0;
}

/* A pid that no longer runs: a child's, reaped. */
static long dead_pid(void)
{
    pid_t c = fork();
    if (c == 0)
        _exit(0);
    assert_true(c > 0);
    assert_int_equal(waitpid(c, NULL, 0), c);
    return (long)c;
}

static void test_stale__dead_gates_directories_are_removed_the_others_kept(void **state)
{
    (void)state;
    assert_non_null(mkdtemp(root));
    char host[256], text[600], me[512], first[512];
    assert_int_equal(gethostname(host, sizeof(host)), 0);
    host[sizeof(host) - 1] = '\0';
    /* this process's own, as cg_stale_mark writes it: running */
    path_of(me, sizeof(me), "canary-gate.LIVE01");
    assert_int_equal(mkdir(me, 0700), 0);
    struct cg_err err;
    assert_int_equal(cg_stale_mark(me, &err), 0);
    snprintf(text, sizeof(text), "pid %ld\nstart 1\nhost %s\n", dead_pid(), host);
    make_dir("canary-gate.DEAD01", text);
    /* this process's pid, but another start time: the pid was reused */
    snprintf(text, sizeof(text), "pid %ld\nstart 1\nhost %s\n", (long)getpid(), host);
    make_dir("canary-gate.REUSE1", text);
    snprintf(text, sizeof(text), "pid %ld\nstart 1\nhost another-host\n", dead_pid());
    make_dir("canary-gate.OTHER1", text);
    make_dir("canary-gate.NOOWNR", NULL);
    snprintf(text, sizeof(text), "pid %ld\nstart 1\nhost %s\n", dead_pid(), host);
    make_dir("not-a-gate.DEAD02", text);
    make_dir("canary-gate.TOOLONG", text); /* not a name mkdtemp makes */
    size_t n = cg_stale_clean(root, first, sizeof(first));
    assert_int_equal(n, 2);
    assert_non_null(strstr(first, "/canary-gate."));
    assert_false(exists("canary-gate.DEAD01"));
    assert_false(exists("canary-gate.REUSE1"));
    assert_true(exists("canary-gate.LIVE01"));
    assert_true(exists("canary-gate.OTHER1"));
    assert_true(exists("canary-gate.NOOWNR"));
    assert_true(exists("not-a-gate.DEAD02"));
    assert_true(exists("canary-gate.TOOLONG"));
    /* nothing more to remove; a root that is not there removes nothing */
    assert_int_equal(cg_stale_clean(root, first, sizeof(first)), 0);
    assert_string_equal(first, "");
    assert_int_equal(cg_stale_clean("/nonexistent/cg-stale", NULL, 0), 0);
    /* a second mark in the same directory is refused (the owner file is made once) */
    assert_int_equal(cg_stale_mark(me, &err), CG_EIO);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stale__dead_gates_directories_are_removed_the_others_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
