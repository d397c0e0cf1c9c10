/*
 * test_fsutil: bounded reads and atomic writes. Reads take regular files only (a FIFO or a device
 * is refused at once, never waited on); writes go through a temporary created exclusively in the
 * target's directory, so nothing planted at a predictable name can redirect them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fsutil.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/cg-fsutil-XXXXXX");
    return mkdtemp(dir) != NULL ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[PATH_MAX];
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        unlink(p);
    }
    if (d != NULL)
        closedir(d);
    return rmdir(dir);
}

static const char *in_dir(const char *name)
{
    static char buf[4][PATH_MAX];
    static int i;
    i = (i + 1) % 4;
    snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, name);
    return buf[i];
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static char *get(const char *path)
{
    char *text = NULL;
    struct cg_err err;
    cg_err_init(&err);
    if (cg_file_read(path, 1 << 20, &text, NULL, &err) != 0)
        fail_msg("%s", err.msg);
    return text;
}

/* Entries of the directory other than "." and ".."; names[] gets up to 16 of them. */
static size_t entries(char names[16][NAME_MAX + 1])
{
    DIR *d = opendir(dir);
    struct dirent *e;
    size_t n = 0;
    assert_non_null(d);
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (n < 16)
            snprintf(names[n], NAME_MAX + 1, "%s", e->d_name);
        n++;
    }
    closedir(d);
    return n;
}

/* A symlink planted at the name the temporary file used to have (<path>.tmp.<pid>) pointing at
 * another file: writing must neither follow it into that file nor be diverted by it. */
static void test_fsutil__planted_symlink_at_the_old_temp_name_changes_nothing(void **state)
{
    (void)state;
    const char *victim = in_dir("victim.json"), *out = in_dir("out.json");
    char planted[PATH_MAX];
    put(victim, "precious");
    snprintf(planted, sizeof(planted), "%s.tmp.%ld", out, (long)getpid());
    assert_int_equal(symlink(victim, planted), 0);
    struct cg_err err;
    cg_err_init(&err);
    assert_int_equal(cg_file_write_atomic(out, "new", 3, &err), 0);
    char *v = get(victim), *o = get(out);
    assert_string_equal(v, "precious");
    assert_string_equal(o, "new");
    free(v);
    free(o);
    struct stat st;
    assert_int_equal(lstat(out, &st), 0);
    assert_true(S_ISREG(st.st_mode)); /* the output is a file of its own, not the planted link */
    assert_int_equal(lstat(planted, &st), 0);
    assert_true(S_ISLNK(st.st_mode)); /* left as it was */
    unlink(planted);
    unlink(victim);
    unlink(out);
}

/* Temporaries live in the target's directory and are gone after a write, successful or not. */
static void test_fsutil__temporaries_are_created_beside_the_target_and_removed(void **state)
{
    (void)state;
    char names[16][NAME_MAX + 1];
    const char *out = in_dir("a.json");
    struct cg_err err;
    cg_err_init(&err);
    for (int i = 0; i < 3; i++)
        assert_int_equal(cg_file_write_atomic(out, "x", 1, &err), 0);
    assert_int_equal(entries(names), 1);
    assert_string_equal(names[0], "a.json");
    /* a target that is a directory cannot be replaced: the temporary is removed */
    assert_int_equal(mkdir(in_dir("d.json"), 0755), 0);
    assert_int_not_equal(cg_file_write_atomic(in_dir("d.json"), "x", 1, &err), 0);
    assert_non_null(strstr(err.msg, "d.json"));
    assert_int_equal(entries(names), 2);
    rmdir(in_dir("d.json"));
    unlink(out);
}

/* An output that is a symlink to a file (latest.json -> runs/7.json) is written through: the
 * link stays a link and its target gets the new bytes, as a shell's redirection would do. It
 * used to be replaced by a regular file, the target keeping the old bytes. */
static void test_fsutil__a_symlinked_output_is_written_through(void **state)
{
    (void)state;
    const char *target = in_dir("run7.json"), *link = in_dir("latest.json");
    put(target, "old");
    assert_int_equal(symlink("run7.json", link), 0); /* relative, as users make them */
    struct cg_err err;
    cg_err_init(&err);
    assert_int_equal(cg_file_write_atomic(link, "new", 3, &err), 0);
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    char *t = get(target);
    assert_string_equal(t, "new");
    free(t);
    char names[16][NAME_MAX + 1];
    assert_int_equal(entries(names), 2); /* no temporary left beside either */
    /* the file replaced keeps its mode: a history shared as 0640 became 0644 */
    assert_int_equal(chmod(target, 0640), 0);
    assert_int_equal(cg_file_write_atomic(link, "newer", 5, &err), 0);
    assert_int_equal(stat(target, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0640);
    unlink(link);
    unlink(target);
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "reading a FIFO blocked: cg_file_read waited for a writer\n";
    ssize_t w = write(2, msg, sizeof(msg) - 1);
    (void)w;
    _exit(99);
}

/* A FIFO given as an input has no writer: opening or reading it would block for ever. It is
 * refused at once (a 5 s alarm ends the test as a failure if it blocks). */
static void test_fsutil__fifo_input_is_refused_at_once(void **state)
{
    (void)state;
    const char *fifo = in_dir("base.json");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    signal(SIGALRM, on_alarm);
    alarm(5);
    char *text = NULL;
    struct cg_err err;
    cg_err_init(&err);
    int rc = cg_file_read(fifo, 1 << 20, &text, NULL, &err);
    alarm(0);
    assert_int_equal(rc, CG_EINPUT);
    assert_null(text);
    assert_non_null(strstr(err.msg, fifo));
    assert_non_null(strstr(err.msg, "not a regular file"));
    unlink(fifo);
}

/* Devices are not inputs either: /dev/zero would be read up to the cap, /dev/stdin would wait. */
static void test_fsutil__device_input_is_refused(void **state)
{
    (void)state;
    char *text = NULL;
    struct cg_err err;
    cg_err_init(&err);
    assert_int_equal(cg_file_read("/dev/zero", 1 << 20, &text, NULL, &err), CG_EINPUT);
    assert_non_null(strstr(err.msg, "'/dev/zero': not a regular file"));
    assert_null(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fsutil__planted_symlink_at_the_old_temp_name_changes_nothing),
        cmocka_unit_test(test_fsutil__temporaries_are_created_beside_the_target_and_removed),
        cmocka_unit_test(test_fsutil__a_symlinked_output_is_written_through),
        cmocka_unit_test(test_fsutil__fifo_input_is_refused_at_once),
        cmocka_unit_test(test_fsutil__device_input_is_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
