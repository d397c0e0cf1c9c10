/*
 * test_logtail: the end of the canary's log for a failed canary's report: the last lines and how
 * many came before, whatever the log's size (a log far over the window is counted in full), a
 * line longer than the window, a last line without a newline, secrets hidden, an empty log, and a
 * FIFO refused at once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "logtail.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64], path[128];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/cg-logtail-XXXXXX");
    if (mkdtemp(dir) == NULL)
        return -1;
    snprintf(path, sizeof(path), "%s/canary.log", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(path);
    return rmdir(dir);
}

static void write_log(const char *text, size_t len)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(text, 1, len, fp), len);
    assert_int_equal(fclose(fp), 0);
}

/* A log of n lines "line <i>" (from 1), each padded to width bytes before its newline. */
static void write_lines(size_t n, size_t width)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    for (size_t i = 1; i <= n; i++)
        fprintf(fp, "line %-*zu\n", (int)(width > 5 ? width - 5 : 0), i);
    assert_int_equal(fclose(fp), 0);
}

static void read_tail(size_t max_lines, const struct cg_redact *r, struct cg_log_tail *t)
{
    struct cg_err err;
    cg_err_init(&err);
    if (cg_log_tail_read(path, max_lines, r, t, &err) != 0)
        fail_msg("%s", err.msg);
    assert_string_equal(t->path, path);
}

static void test_logtail__the_last_lines_and_how_many_came_before(void **state)
{
    (void)state;
    struct cg_log_tail t;
    write_lines(30, 0);
    read_tail(20, NULL, &t);
    assert_int_equal(t.n_lines, 20);
    assert_int_equal(t.lines_before, 10);
    assert_false(t.first_cut);
    assert_true(strncmp(t.text, "line 11\n", 8) == 0);
    assert_non_null(strstr(t.text, "\nline 30"));
    assert_int_equal(t.text[strlen(t.text) - 1], '0'); /* no final newline */
    cg_log_tail_release(&t);
    /* fewer lines than asked: all of them, nothing left out */
    write_lines(3, 0);
    read_tail(20, NULL, &t);
    assert_int_equal(t.n_lines, 3);
    assert_int_equal(t.lines_before, 0);
    assert_string_equal(t.text, "line 1\nline 2\nline 3");
    cg_log_tail_release(&t);
}

static void test_logtail__a_log_far_over_the_window_is_counted_in_full(void **state)
{
    (void)state;
    struct cg_log_tail t;
    /* 100,000 lines of 100 bytes: 10 MB, 150 times the window */
    write_lines(100000, 99);
    read_tail(20, NULL, &t);
    assert_int_equal(t.n_lines, 20);
    assert_int_equal(t.lines_before, 99980);
    assert_true(strncmp(t.text, "line 99981 ", 11) == 0);
    cg_log_tail_release(&t);
    /* lines so long that 20 do not fit the window: the whole lines that do, the rest counted */
    write_lines(100, 10000);
    read_tail(20, NULL, &t);
    assert_int_equal(t.n_lines, CG_LOG_TAIL_WINDOW_BYTES / 10000);
    assert_int_equal(t.lines_before + t.n_lines, 100);
    assert_false(t.first_cut);
    assert_true(strncmp(t.text, "line ", 5) == 0);
    cg_log_tail_release(&t);
}

static void test_logtail__a_line_longer_than_the_window_shows_its_end(void **state)
{
    (void)state;
    struct cg_log_tail t;
    size_t n = 3 * CG_LOG_TAIL_WINDOW_BYTES;
    char *text = malloc(n + 16);
    assert_non_null(text);
    memcpy(text, "first\n", 6);
    memset(text + 6, 'x', n);
    memcpy(text + 6 + n, "END", 3);
    write_log(text, n + 9);
    free(text);
    read_tail(20, NULL, &t);
    assert_true(t.first_cut);
    assert_int_equal(t.n_lines, 1);
    assert_int_equal(t.lines_before, 1);
    assert_int_equal(strlen(t.text), CG_LOG_TAIL_WINDOW_BYTES);
    assert_string_equal(t.text + strlen(t.text) - 3, "END");
    cg_log_tail_release(&t);
}

static void test_logtail__secrets_are_hidden(void **state)
{
    (void)state;
    struct cg_redact *r = NULL;
    struct cg_err err;
    struct cg_log_tail t;
    char *const env[] = {"WANDB_API_KEY=wandb_secret_value_0123", NULL};
    cg_err_init(&err);
    assert_int_equal(cg_redact_new(env, &r, &err), 0);
    assert_int_equal(cg_redact_add_pattern(r, "hf_[A-Za-z0-9]+", &err), 0);
    const char log[] = "loading\nkey wandb_secret_value_0123 hf_abcDEF123\n"
                       "fetch https://bob:pw_0123456@data.example/x\n";
    write_log(log, sizeof(log) - 1);
    read_tail(20, r, &t);
    assert_string_equal(t.text, "loading\nkey *** ***\nfetch https://***@data.example/x");
    cg_log_tail_release(&t);
    cg_redact_free(r);
}

static void test_logtail__empty_logs_blank_lines_and_fifos(void **state)
{
    (void)state;
    struct cg_log_tail t;
    struct cg_err err;
    cg_err_init(&err);
    write_log("", 0);
    read_tail(20, NULL, &t);
    assert_null(t.text);
    assert_int_equal(t.n_lines + t.lines_before, 0);
    cg_log_tail_release(&t);
    write_log("a\n\n\nb", 5); /* blank lines are lines; the last needs no newline */
    read_tail(2, NULL, &t);
    assert_string_equal(t.text, "\nb");
    assert_int_equal(t.lines_before, 2);
    cg_log_tail_release(&t);
    unlink(path);
    assert_int_equal(cg_log_tail_read(path, 20, NULL, &t, &err), CG_EIO);
    assert_non_null(strstr(err.msg, "canary.log"));
    cg_log_tail_release(&t);
    assert_int_equal(mkfifo(path, 0600), 0); /* never waited on */
    assert_int_equal(cg_log_tail_read(path, 20, NULL, &t, &err), CG_EINPUT);
    assert_non_null(strstr(err.msg, "a FIFO, not a log file"));
    cg_log_tail_release(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_logtail__the_last_lines_and_how_many_came_before),
        cmocka_unit_test(test_logtail__a_log_far_over_the_window_is_counted_in_full),
        cmocka_unit_test(test_logtail__a_line_longer_than_the_window_shows_its_end),
        cmocka_unit_test(test_logtail__secrets_are_hidden),
        cmocka_unit_test(test_logtail__empty_logs_blank_lines_and_fifos),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
