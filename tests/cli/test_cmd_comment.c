/*
 * test_cmd_comment: runs the built canary-gate (CG_TOOL_PATH) with fork/exec and a clean
 * environment whose GITHUB_API_URL points at the GitHub emulation of tests/support/httpd. Checks
 * what lands on the emulated pull request, the job summary, the exit codes and messages, and
 * that the token never appears in any output, written file or URL.
 */
#include "httpd.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TOKEN "ghp_TESTTOKEN123"
#define SHA "0123456789abcdef0123456789abcdef01234567"
#define MARKER "<!-- canary-gate -->"
#define REPORT_FAIL MARKER "\n<!-- canary-gate-verdict: fail -->\n# FAIL: step time +12%\n"
#define REPORT_PASS MARKER "\n<!-- canary-gate-verdict: pass -->\n# PASS\n"
#define EVENT_PR "{\"number\":7,\"pull_request\":{\"number\":7,\"head\":{\"sha\":\"" SHA "\"}}}"

struct fixture {
    struct cg_httpd *srv;
    char dir[64];
    char path[512]; /* scratch for file paths */
    int code;
    char *out;
    char *err;
};

static char *slurp(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (fp == NULL)
        return NULL;
    size_t cap = 4096, len = 0;
    char *s = malloc(cap);
    size_t n;
    while (s != NULL && (n = fread(s + len, 1, cap - len - 1, fp)) > 0) {
        len += n;
        if (cap - len < 2) {
            char *t = realloc(s, cap * 2);
            if (t == NULL) {
                free(s);
                s = NULL;
                break;
            }
            s = t;
            cap *= 2;
        }
    }
    fclose(fp);
    if (s != NULL)
        s[len] = '\0';
    return s;
}

static const char *in_dir(struct fixture *f, const char *name)
{
    snprintf(f->path, sizeof(f->path), "%s/%s", f->dir, name);
    return f->path;
}

static void put(struct fixture *f, const char *name, const char *text)
{
    FILE *fp = fopen(in_dir(f, name), "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(text, 1, strlen(text), fp), strlen(text));
    assert_int_equal(fclose(fp), 0);
}

static char *read_back(struct fixture *f, const char *name)
{
    return slurp(in_dir(f, name));
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    snprintf(f->dir, sizeof(f->dir), "/tmp/cg-comment-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    f->srv = cg_httpd_start();
    assert_non_null(f->srv);
    cg_httpd_github(f->srv, "o/r", 7, TOKEN, 100);
    put(f, "event.json", EVENT_PR);
    put(f, "fail.md", REPORT_FAIL);
    put(f, "pass.md", REPORT_PASS);
    *state = f;
    return 0;
}

/* The token must not be in any file the tool could have written, nor in any URL it asked for. */
static int teardown(void **state)
{
    struct fixture *f = *state;
    DIR *d = opendir(f->dir);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        struct stat st;
        if (lstat(in_dir(f, e->d_name), &st) == 0 && !S_ISREG(st.st_mode)) {
            unlink(in_dir(f, e->d_name)); /* a FIFO a test made: reading it would wait */
            continue;
        }
        char *text = read_back(f, e->d_name);
        if (text != NULL && strstr(text, TOKEN) != NULL) {
            fprintf(stderr, "token found in %s\n", e->d_name);
            abort();
        }
        free(text);
        unlink(in_dir(f, e->d_name));
    }
    if (d != NULL)
        closedir(d);
    rmdir(f->dir);
    for (size_t i = 0; i < cg_httpd_count(f->srv); i++)
        if (strstr(cg_httpd_request(f->srv, i)->target, TOKEN) != NULL)
            abort();
    cg_httpd_stop(f->srv);
    free(f->out);
    free(f->err);
    free(f);
    return 0;
}

/* Runs canary-gate with args (NULL-terminated, after the program name) in a clean environment:
 * the defaults below, changed by env entries ("NAME=value" sets, "NAME" removes). */
static void run_tool(struct fixture *f, const char *const *env, const char *const *args)
{
    char vars[16][600];
    char *envp[20];
    size_t nv = 0;
    snprintf(vars[nv++], sizeof(vars[0]), "GITHUB_TOKEN=%s", TOKEN);
    snprintf(vars[nv++], sizeof(vars[0]), "GITHUB_REPOSITORY=o/r");
    snprintf(vars[nv++], sizeof(vars[0]), "GITHUB_API_URL=%s", cg_httpd_url(f->srv));
    snprintf(vars[nv++], sizeof(vars[0]), "GITHUB_EVENT_PATH=%s/event.json", f->dir);
    snprintf(vars[nv++], sizeof(vars[0]), "GITHUB_STEP_SUMMARY=%s/summary.md", f->dir);
    snprintf(vars[nv++], sizeof(vars[0]), "CANARY_GATE_HTTP_BACKOFF_MS=5");
    snprintf(vars[nv++], sizeof(vars[0]), "CANARY_GATE_HTTP_MAX_WAIT_MS=2000");
    snprintf(vars[nv++], sizeof(vars[0]), "CANARY_GATE_HTTP_BUDGET_MS=5000");
    snprintf(vars[nv++], sizeof(vars[0]), "PATH=/usr/bin:/bin");
    for (size_t i = 0; env != NULL && env[i] != NULL; i++) {
        size_t name_len = strcspn(env[i], "=");
        size_t j = 0;
        for (; j < nv; j++)
            if (strncmp(vars[j], env[i], name_len) == 0 && vars[j][name_len] == '=')
                break;
        if (env[i][name_len] == '\0') { /* remove */
            if (j < nv)
                memmove(vars[j], vars[j + 1], (nv-- - j - 1) * sizeof(vars[0]));
            continue;
        }
        if (j == nv)
            nv++;
        snprintf(vars[j], sizeof(vars[0]), "%s", env[i]);
    }
    for (size_t i = 0; i < nv; i++)
        envp[i] = vars[i];
    envp[nv] = NULL;

    char *argv[32];
    size_t na = 0;
    argv[na++] = (char *)CG_TOOL_PATH;
    argv[na++] = (char *)"comment";
    for (size_t i = 0; args[i] != NULL && na < 31; i++)
        argv[na++] = (char *)args[i];
    argv[na] = NULL;

    char out_path[600], err_path[600];
    snprintf(out_path, sizeof(out_path), "%s/stdout.txt", f->dir);
    snprintf(err_path, sizeof(err_path), "%s/stderr.txt", f->dir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
            _exit(127);
        execve(CG_TOOL_PATH, argv, envp);
        _exit(127);
    }
    int status = 0;
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            break;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec > 15) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            fail_msg("canary-gate comment did not finish in 15 s");
        }
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    assert_true(WIFEXITED(status));
    f->code = WEXITSTATUS(status);
    free(f->out);
    free(f->err);
    f->out = slurp(out_path);
    f->err = slurp(err_path);
    assert_non_null(f->out);
    assert_non_null(f->err);
    assert_null(strstr(f->out, TOKEN));
    assert_null(strstr(f->err, TOKEN));
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define ENV(...) ((const char *const[]){__VA_ARGS__, NULL})

static void assert_comment(struct fixture *f, size_t i, const char *body)
{
    char *c = cg_httpd_comment(f->srv, i, NULL);
    assert_non_null(c);
    assert_string_equal(c, body);
    free(c);
}

/* ---- command line --------------------------------------------------------------------------- */

static void test_cmd_comment__help_and_usage_errors(void **state)
{
    struct fixture *f = *state;
    run_tool(f, NULL, ARGS("--help"));
    assert_int_equal(f->code, 0);
    assert_non_null(strstr(f->out, "usage: canary-gate comment --report FILE.md"));

    run_tool(f, NULL, ARGS("--status"));
    assert_int_equal(f->code, 2);
    assert_non_null(strstr(f->err, "canary-gate comment: --report FILE.md is required"));

    run_tool(f, NULL, ARGS("--report", in_dir(f, "fail.md"), "--comment-mode", "sometimes"));
    assert_int_equal(f->code, 2);
    assert_non_null(strstr(f->err, "--comment-mode 'sometimes'"));

    run_tool(f, NULL, ARGS("--report", in_dir(f, "fail.md"), "--pr", "7x"));
    assert_int_equal(f->code, 2);
    run_tool(f, NULL, ARGS("--report", in_dir(f, "fail.md"), "--id", "a b"));
    assert_int_equal(f->code, 2);
    run_tool(f, NULL, ARGS("--report", in_dir(f, "fail.md"), "--bogus"));
    assert_int_equal(f->code, 2);
    assert_non_null(strstr(f->err, "unknown option '--bogus'"));
    run_tool(f, NULL, ARGS("--report"));
    assert_int_equal(f->code, 2);
    run_tool(f, NULL, ARGS("--report", in_dir(f, "missing.md")));
    assert_int_equal(f->code, 2);
    assert_int_equal(cg_httpd_count(f->srv), 0);
}

static void test_cmd_comment__needs_a_verdict_for_status(void **state)
{
    struct fixture *f = *state;
    put(f, "bare.md", "# a report without markers\n");
    run_tool(f, NULL, ARGS("--report", in_dir(f, "bare.md"), "--status"));
    assert_int_equal(f->code, 2);
    assert_non_null(strstr(f->err, "has no '<!-- canary-gate-verdict: ... -->' line: pass --verdict"));
    assert_int_equal(cg_httpd_count(f->srv), 0);

    run_tool(f, NULL, ARGS("--report", in_dir(f, "bare.md"), "--status", "--verdict", "inconclusive"));
    assert_int_equal(f->code, 0);
    assert_int_equal(cg_httpd_comment_count(f->srv), 1);
    assert_comment(f, 0, MARKER "\n# a report without markers\n");
    char *s = cg_httpd_status(f->srv, 0);
    assert_non_null(strstr(s, "\"state\":\"error\""));
    free(s);
}

/* ---- posting -------------------------------------------------------------------------------- */

static void test_cmd_comment__creates_comment_status_and_summary(void **state)
{
    struct fixture *f = *state;
    run_tool(f, NULL, ARGS("--report", in_dir(f, "fail.md"), "--status"));
    assert_int_equal(f->code, 0);
    /* progress on stderr, each line with the tool's prefix; nothing on stdout, no warning */
    assert_string_equal(f->out, "");
    assert_null(strstr(f->err, "warning"));
    assert_non_null(strstr(f->err, "canary-gate: comment: created on o/r#7: https://github.com/o/r/pull/7#issuecomment-"));
    assert_non_null(strstr(f->err, "canary-gate: status: fail on o/r@0123456789ab"));
    assert_int_equal(cg_httpd_comment_count(f->srv), 1);
    assert_comment(f, 0, REPORT_FAIL);
    char *s = cg_httpd_status(f->srv, 0);
    assert_non_null(s);
    assert_int_equal(strncmp(s, SHA " ", 41), 0);
    assert_non_null(strstr(s, "{\"state\":\"failure\",\"context\":\"canary-gate\",\"description\""));
    free(s);
    char *summary = read_back(f, "summary.md");
    assert_string_equal(summary, REPORT_FAIL);
    free(summary);
    for (size_t i = 0; i < cg_httpd_count(f->srv); i++) {
        char v[128];
        assert_string_equal(cg_httpd_header(cg_httpd_request(f->srv, i), "Authorization", v, sizeof(v)),
                            "Bearer " TOKEN);
    }
}

/* A report of emoji under 65,536 characters but over 65,536 UTF-16 code units (an emoji above
 * U+FFFF is two) was posted whole, and GitHub, counting units, may refuse it: the comment was
 * lost (the emulation refuses it as GitHub would). It is cut to fit in units, with the note. */
static void test_cmd_comment__an_emoji_report_is_cut_to_githubs_limit_in_utf16_units(void **state)
{
    struct fixture *f = *state;
    size_t cap = 1 << 20, len = 0;
    char *report = malloc(cap);
    assert_non_null(report);
    len += (size_t)snprintf(report, cap, "%s", REPORT_FAIL);
    for (int i = 0; i < 1700; i++) { /* 62,900 characters, 93,500 UTF-16 units */
        len += (size_t)snprintf(report + len, cap - len, "| kernel %04d | ", i);
        for (int k = 0; k < 18; k++)
            len += (size_t)snprintf(report + len, cap - len, "\xF0\x9F\x9A\x80"); /* U+1F680 */
        len += (size_t)snprintf(report + len, cap - len, " |\n");
    }
    put(f, "emoji.md", report);
    free(report);
    run_tool(f, NULL, ARGS("--report", in_dir(f, "emoji.md"), "--require-comment"));
    if (f->code != 0)
        fail_msg("exit %d: %s", f->code, f->err);
    assert_int_equal(cg_httpd_comment_count(f->srv), 1);
    char *body = cg_httpd_comment(f->srv, 0, NULL);
    assert_non_null(body);
    size_t units = 0;
    for (const unsigned char *p = (const unsigned char *)body; *p != '\0'; p++)
        units += ((*p & 0xC0) != 0x80) + (*p >= 0xF0);
    assert_true(units <= 65536);
    assert_int_equal(strncmp(body, REPORT_FAIL, strlen(REPORT_FAIL)), 0);
    assert_non_null(strstr(body, "_The report was cut"));
    free(body);
}

static void test_cmd_comment__updates_in_place_on_the_next_run(void **state)
{
    struct fixture *f = *state;
    cg_httpd_add_comment(f->srv, "nice work");
    run_tool(f, NULL, ARGS("--report", in_dir(f, "fail.md")));
    assert_int_equal(f->code, 0);
    run_tool(f, NULL, ARGS("--report", in_dir(f, "pass.md")));
    assert_int_equal(f->code, 0);
    assert_non_null(strstr(f->err, "canary-gate: comment: updated on o/r#7"));
    assert_int_equal(cg_httpd_comment_count(f->srv), 2);
    assert_comment(f, 1, REPORT_PASS);
    char *summary = read_back(f, "summary.md");
    assert_string_equal(summary, REPORT_FAIL REPORT_PASS);
    free(summary);
}

static void test_cmd_comment__two_gate_ids_keep_two_comments(void **state)
{
    struct fixture *f = *state;
    put(f, "big.md", "<!-- canary-gate:big -->\n<!-- canary-gate-verdict: pass -->\n# big\n");
    run_tool(f, NULL, ARGS("--report", in_dir(f, "fail.md")));
    run_tool(f, NULL, ARGS("--report", in_dir(f, "big.md"), "--status"));       /* id from the report */
    run_tool(f, NULL, ARGS("--report", in_dir(f, "pass.md"), "--id", "small")); /* id from --id */
    run_tool(f, NULL, ARGS("--report", in_dir(f, "big.md")));
    assert_int_equal(f->code, 0);
    assert_int_equal(cg_httpd_comment_count(f->srv), 3);
    assert_comment(f, 0, REPORT_FAIL);
    assert_comment(f, 1, "<!-- canary-gate:big -->\n<!-- canary-gate-verdict: pass -->\n# big\n");
    assert_comment(f, 2, "<!-- canary-gate:small -->\n<!-- canary-gate-verdict: pass -->\n# PASS\n");
    char *s = cg_httpd_status(f->srv, 0);
    assert_non_null(strstr(s, "\"context\":\"canary-gate/big\""));
    free(s);
}

static void test_cmd_comment__comment_modes(void **state)
{
    struct fixture *f = *state;
    run_tool(f, NULL, ARGS("--report", in_dir(f, "fail.md"), "--comment-mode", "never"));
    assert_int_equal(f->code, 0);
    assert_int_equal(cg_httpd_count(f->srv), 0);

    run_tool(f, NULL, ARGS("--report", in_dir(f, "pass.md"), "--comment-mode", "on-regression"));
    assert_int_equal(f->code, 0);
    assert_non_null(strstr(f->err, "nothing posted"));
    assert_int_equal(cg_httpd_comment_count(f->srv), 0);

    run_tool(f, NULL, ARGS("--report", in_dir(f, "fail.md"), "--comment-mode", "on-regression"));
    assert_int_equal(cg_httpd_comment_count(f->srv), 1);
    assert_comment(f, 0, REPORT_FAIL);

    run_tool(f, NULL, ARGS("--report", in_dir(f, "pass.md"), "--comment-mode", "on-regression"));
    assert_int_equal(f->code, 0);
    assert_non_null(strstr(f->err, "canary-gate: comment: updated"));
    assert_int_equal(cg_httpd_comment_count(f->srv), 1);
    assert_comment(f, 0, REPORT_PASS);

    /* --verdict overrides the report's line */
    run_tool(f, NULL, ARGS("--report", in_dir(f, "pass.md"), "--comment-mode", "on-regression",
                           "--verdict", "fail", "--id", "other"));
    assert_int_equal(cg_httpd_comment_count(f->srv), 2);
}

/* A listening socket on 127.0.0.1 that never accepts: connections complete in the kernel's
 * backlog and requests are taken, but no answer ever comes. Returns the socket; *port its port. */
static int silent_server(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(fd, 64), 0);
    socklen_t len = sizeof(a);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

/* A GitHub API that never answers, with each attempt allowed a minute and five attempts per
 * request: posting ends at the overall deadline with a warning naming it (exit 0, or 3 with
 * --require-comment), not after several minutes. */
static void test_cmd_comment__deadline_bounds_a_silent_api(void **state)
{
    struct fixture *f = *state;
    int port = 0;
    int fd = silent_server(&port);
    char url[64];
    snprintf(url, sizeof(url), "GITHUB_API_URL=http://127.0.0.1:%d", port);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    run_tool(f, ENV(url, "CANARY_GATE_HTTP_TIMEOUT_MS=60000"),
             ARGS("--report", in_dir(f, "fail.md"), "--status", "--deadline", "2"));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    assert_int_equal(f->code, 0);
    if (wall > 6.0)
        fail_msg("posting took %.1f s with a 2 s deadline", wall);
    assert_non_null(strstr(f->err, "canary-gate: warning: "));
    assert_non_null(strstr(f->err, "the 2 s deadline for talking to GitHub passed"));
    char *summary = read_back(f, "summary.md");
    assert_non_null(summary); /* the job summary was written before posting */
    free(summary);
    run_tool(f, ENV(url, "CANARY_GATE_HTTP_TIMEOUT_MS=60000"),
             ARGS("--report", in_dir(f, "fail.md"), "--deadline", "1", "--require-comment"));
    assert_int_equal(f->code, 3);
    run_tool(f, NULL, ARGS("--report", in_dir(f, "fail.md"), "--deadline", "0"));
    assert_int_equal(f->code, 2);
    assert_non_null(strstr(f->err, "--deadline '0': expected an integer from 1 to 3600"));
    close(fd);
}

static void test_cmd_comment__rate_limit_then_success(void **state)
{
    struct fixture *f = *state;
    cg_httpd_push(f->srv, 429, "Retry-After: 0\r\n", "{\"message\":\"secondary rate limit\"}");
    run_tool(f, NULL, ARGS("--report", in_dir(f, "fail.md")));
    assert_int_equal(f->code, 0);
    assert_null(strstr(f->err, "warning")); /* retried quietly */
    assert_int_equal(cg_httpd_comment_count(f->srv), 1);
}

/* ---- failures: warnings, exit codes, the summary still written ------------------------------ */

static void assert_summary_written(struct fixture *f, const char *report)
{
    char *summary = read_back(f, "summary.md");
    assert_non_null(summary);
    assert_string_equal(summary, report);
    free(summary);
}

static void test_cmd_comment__403_warns_about_forks_and_exits_0(void **state)
{
    struct fixture *f = *state;
    cg_httpd_push(f->srv, 200, NULL, "[]");
    cg_httpd_push(f->srv, 403, NULL, "{\"message\":\"Resource not accessible by integration\"}");
    run_tool(f, NULL, ARGS("--report", in_dir(f, "fail.md")));
    assert_int_equal(f->code, 0);
    assert_non_null(strstr(f->err, "canary-gate: warning: cannot create the comment on 'o/r#7': the "
                                   "token cannot write to 'o/r' (403 Resource not accessible by "
                                   "integration)"));
    assert_non_null(strstr(f->err, "\"Pull requests from forks\" in docs/github.md"));
    assert_summary_written(f, REPORT_FAIL);

    cg_httpd_push(f->srv, 200, NULL, "[]");
    cg_httpd_push(f->srv, 403, NULL, "{\"message\":\"Resource not accessible by integration\"}");
    run_tool(f, NULL, ARGS("--report", in_dir(f, "fail.md"), "--require-comment"));
    assert_int_equal(f->code, 3);
    assert_non_null(strstr(f->err, "--require-comment"));
}

static void test_cmd_comment__401_404_422_messages(void **state)
{
    struct fixture *f = *state;
    run_tool(f, ENV("GITHUB_TOKEN=ghp_WRONG"), ARGS("--report", in_dir(f, "fail.md")));
    assert_int_equal(f->code, 0);
    assert_non_null(strstr(f->err, "github rejected the token (401 Bad credentials): check GITHUB_TOKEN"));

    run_tool(f, NULL, ARGS("--report", in_dir(f, "fail.md"), "--repo", "o/gone"));
    assert_int_equal(f->code, 0);
    assert_non_null(strstr(f->err, "repository 'o/gone' or pull request #7 not found (404)"));

    run_tool(f, NULL, ARGS("--report", in_dir(f, "fail.md"), "--pr", "99", "--require-comment"));
    assert_int_equal(f->code, 3);
    assert_non_null(strstr(f->err, "or pull request #99 not found (404)"));

    cg_httpd_push(f->srv, 422, NULL, "{\"message\":\"Validation Failed\",\"errors\":[{\"message\":"
                                     "\"No commit found for SHA: abcdef0\"}]}");
    run_tool(f, NULL, ARGS("--report", in_dir(f, "fail.md"), "--comment-mode", "never", "--status",
                           "--sha", "abcdef0"));
    assert_int_equal(f->code, 0);
    assert_non_null(strstr(f->err, "cannot set the commit status of 'o/r@abcdef0': github rejected "
                                   "the request (422 Validation Failed: No commit found for SHA: "
                                   "abcdef0)"));
}

static void test_cmd_comment__5xx_retried_then_given_up(void **state)
{
    struct fixture *f = *state;
    for (int i = 0; i < 3; i++)
        cg_httpd_push(f->srv, 503, NULL, "unavailable");
    run_tool(f, ENV("CANARY_GATE_HTTP_ATTEMPTS=3"), ARGS("--report", in_dir(f, "fail.md")));
    assert_int_equal(f->code, 0);
    assert_non_null(strstr(f->err, "canary-gate: warning: cannot list the comments of 'o/r#7': "
                                   "github answered 503 3 times over"));
    assert_non_null(strstr(f->err, "giving up"));
    assert_int_equal(cg_httpd_count(f->srv), 3);
    assert_summary_written(f, REPORT_FAIL);
}

static void test_cmd_comment__event_file(void **state)
{
    struct fixture *f = *state;
    /* --pr and --sha override the event */
    run_tool(f, NULL, ARGS("--report", in_dir(f, "fail.md"), "--pr", "7", "--sha", "abcdef0", "--status"));
    char *s = cg_httpd_status(f->srv, 0);
    assert_int_equal(strncmp(s, "abcdef0 ", 8), 0);
    free(s);

    /* malformed: a warning, nothing sent, summary written, exit 0 (3 with --require-comment) */
    put(f, "event.json", "{\"pull_request\": {\"number\": ");
    size_t before = cg_httpd_count(f->srv);
    run_tool(f, NULL, ARGS("--report", in_dir(f, "pass.md"), "--status"));
    assert_int_equal(f->code, 0);
    assert_non_null(strstr(f->err, "canary-gate: warning: cannot read event file '"));
    assert_non_null(strstr(f->err, "not a JSON object"));
    assert_int_equal(cg_httpd_count(f->srv), before);
    run_tool(f, NULL, ARGS("--report", in_dir(f, "pass.md"), "--require-comment"));
    assert_int_equal(f->code, 3);

    /* a push event: no pull request to comment on; the status goes to GITHUB_SHA */
    put(f, "event.json", "{\"ref\":\"refs/heads/main\"}");
    run_tool(f, ENV("GITHUB_SHA=" SHA), ARGS("--report", in_dir(f, "pass.md"), "--status"));
    assert_int_equal(f->code, 0);
    assert_non_null(strstr(f->err, "no pull request"));
    s = cg_httpd_status(f->srv, 1);
    assert_non_null(s);
    assert_non_null(strstr(s, "\"state\":\"success\""));
    assert_int_equal(strncmp(s, SHA " ", 41), 0);
    free(s);

    /* no event at all and no --pr */
    run_tool(f, ENV("GITHUB_EVENT_PATH"), ARGS("--report", in_dir(f, "pass.md"), "--require-comment"));
    assert_int_equal(f->code, 3);
    assert_non_null(strstr(f->err, "no pull request (not a pull_request event and no --pr)"));
}

static void test_cmd_comment__no_token_or_repository(void **state)
{
    struct fixture *f = *state;
    run_tool(f, ENV("GITHUB_TOKEN"), ARGS("--report", in_dir(f, "fail.md")));
    assert_int_equal(f->code, 0);
    assert_non_null(strstr(f->err, "canary-gate: warning: no GITHUB_TOKEN: the comment was not posted"));
    assert_summary_written(f, REPORT_FAIL);
    run_tool(f, ENV("GITHUB_REPOSITORY"), ARGS("--report", in_dir(f, "fail.md")));
    assert_non_null(strstr(f->err, "no repository (set GITHUB_REPOSITORY or pass --repo)"));
    assert_int_equal(cg_httpd_count(f->srv), 0);
}

static void test_cmd_comment__summary_failure_still_posts(void **state)
{
    struct fixture *f = *state;
    run_tool(f, ENV("GITHUB_STEP_SUMMARY=/nonexistent-dir/summary.md"),
             ARGS("--report", in_dir(f, "fail.md")));
    assert_int_equal(f->code, 0);
    assert_non_null(strstr(f->err, "cannot open the job summary '/nonexistent-dir/summary.md'"));
    assert_int_equal(cg_httpd_comment_count(f->srv), 1);
}

/* The fork-comment flow: a report from an untrusted artifact is posted only when its verdict
 * line agrees with the JSON verdict (which gives the verdict), and its body is sanitised again;
 * --verdict cannot override it. A forged "pass" over a failing JSON verdict posts nothing. */
static void test_cmd_comment__an_untrusted_report_must_agree_with_its_json_verdict(void **state)
{
    struct fixture *f = *state;
    put(f, "forged.md", MARKER "\n<!-- canary-gate-verdict: pass -->\n# PASS @admin\n"
                        "[login](https://e.vil/x) ![p](https://e.vil/p.png) <img src=x>\n");
    put(f, "fail.json", "{\"schema\": \"canary-gate/verdict\", \"verdict\": \"fail\"}");
    put(f, "pass.json", "{\"schema\": \"canary-gate/verdict\", \"verdict\": \"pass\"}");
    char forged[600], fail_json[600], pass_json[600];
    snprintf(forged, sizeof(forged), "%s", in_dir(f, "forged.md"));
    snprintf(fail_json, sizeof(fail_json), "%s", in_dir(f, "fail.json"));
    snprintf(pass_json, sizeof(pass_json), "%s", in_dir(f, "pass.json"));
    run_tool(f, NULL, ARGS("--report", forged, "--untrusted", fail_json,
                           "--pr", "12", "--sha", SHA, "--status"));
    assert_int_equal(f->code, 2);
    assert_non_null(strstr(f->err, "forged.md' says pass but '"));
    assert_non_null(strstr(f->err, "fail.json' says fail"));
    assert_int_equal(cg_httpd_count(f->srv), 0);
    run_tool(f, NULL, ARGS("--report", forged, "--untrusted", pass_json,
                           "--verdict", "pass", "--pr", "12", "--sha", SHA));
    assert_int_equal(f->code, 2);
    assert_int_equal(cg_httpd_count(f->srv), 0);

    run_tool(f, NULL, ARGS("--report", forged, "--untrusted", pass_json,
                           "--pr", "7", "--sha", SHA, "--status"));
    assert_int_equal(f->code, 0);
    char *c = cg_httpd_comment(f->srv, 0, NULL);
    assert_non_null(c);
    assert_non_null(strstr(c, "<!-- canary-gate-verdict: pass -->\n# PASS @&#8205;admin\n"));
    assert_null(strstr(c, "](https"));
    assert_null(strstr(c, "![p]"));
    assert_null(strstr(c, "<img"));
    free(c);
    char *st = cg_httpd_status(f->srv, 0);
    assert_non_null(st);
    assert_non_null(strstr(st, "\"state\":\"success\""));
    free(st);
}

/* --check-run: INCONCLUSIVE is a neutral check run on the event's head commit, updated in place
 * by the next run; a token without checks: write is a warning and exit 0 (3 under
 * --require-comment), the commit status still set. */
static void test_cmd_comment__check_run_is_neutral_for_inconclusive(void **state)
{
    struct fixture *f = *state;
    put(f, "inc.md", MARKER "\n<!-- canary-gate-verdict: inconclusive -->\n# INCONCLUSIVE\n");
    run_tool(f, NULL, ARGS("--report", in_dir(f, "inc.md"), "--comment-mode", "never",
                           "--check-run", "--status"));
    assert_int_equal(f->code, 0);
    assert_int_equal(cg_httpd_check_run_count(f->srv), 1);
    char *c = cg_httpd_check_run(f->srv, 0, NULL);
    assert_non_null(c);
    assert_non_null(strstr(c, "\"conclusion\":\"neutral\""));
    assert_non_null(strstr(c, "\"head_sha\":\"" SHA "\""));
    assert_non_null(strstr(c, "\"summary\":\"" MARKER "\\n<!-- canary-gate-verdict: inconclusive "
                              "-->\\n# INCONCLUSIVE\\n\""));
    free(c);
    assert_non_null(strstr(f->err, "canary-gate: check run: created, neutral on o/r@0123456789ab"));
    assert_int_equal(cg_httpd_status_count(f->srv), 1);

    run_tool(f, NULL, ARGS("--report", in_dir(f, "fail.md"), "--comment-mode", "never",
                           "--check-run"));
    assert_int_equal(f->code, 0);
    assert_int_equal(cg_httpd_check_run_count(f->srv), 1);
    c = cg_httpd_check_run(f->srv, 0, NULL);
    assert_non_null(strstr(c, "\"conclusion\":\"failure\""));
    free(c);
    assert_non_null(strstr(f->err, "canary-gate: check run: updated, failure"));

    cg_httpd_push(f->srv, 403, NULL, "{\"message\":\"Resource not accessible by integration\"}");
    run_tool(f, NULL, ARGS("--report", in_dir(f, "pass.md"), "--comment-mode", "never",
                           "--check-run"));
    assert_int_equal(f->code, 0);
    assert_non_null(strstr(f->err, "canary-gate: warning: cannot list the check runs of "
                                   "'o/r@0123456789ab': the token cannot use check runs in 'o/r' "
                                   "(403 Resource not accessible by integration): give the job "
                                   "'permissions: checks: write'"));

    cg_httpd_push(f->srv, 200, NULL, "{\"total_count\":0,\"check_runs\":[]}");
    cg_httpd_push(f->srv, 403, NULL, "{\"message\":\"Resource not accessible by integration\"}");
    run_tool(f, NULL, ARGS("--report", in_dir(f, "pass.md"), "--comment-mode", "never",
                           "--check-run", "--require-comment"));
    assert_int_equal(f->code, 3);
    assert_non_null(strstr(f->err, "give the job 'permissions: checks: write'"));
}

/* An untrusted report's check run: the commit is --sha (the trusted event's), the conclusion
 * the JSON verdict's, the summary the sanitised body. */
static void test_cmd_comment__untrusted_check_run_takes_the_trusted_commit(void **state)
{
    struct fixture *f = *state;
    static const char other[] = "fedcba9876543210fedcba9876543210fedcba98";
    put(f, "fork.md", MARKER "\n<!-- canary-gate-verdict: inconclusive -->\n# hi @admin "
                      "![p](https://e.vil/p.png)\n");
    put(f, "inc.json", "{\"schema\": \"canary-gate/verdict\", \"verdict\": \"inconclusive\"}");
    char md[600], json[600];
    snprintf(md, sizeof(md), "%s", in_dir(f, "fork.md"));
    snprintf(json, sizeof(json), "%s", in_dir(f, "inc.json"));
    run_tool(f, NULL, ARGS("--report", md, "--untrusted", json, "--pr", "7", "--sha", other,
                           "--comment-mode", "never", "--check-run"));
    assert_int_equal(f->code, 0);
    char *c = cg_httpd_check_run(f->srv, 0, NULL);
    assert_non_null(c);
    assert_non_null(strstr(c, "\"head_sha\":\"fedcba9876543210fedcba9876543210fedcba98\""));
    assert_non_null(strstr(c, "\"conclusion\":\"neutral\""));
    assert_null(strstr(c, "![p]"));
    assert_null(strstr(c, "@admin"));
    free(c);
}

/* A job summary that is a FIFO (nobody reading, or a reader that never drains it) is refused at
 * once with a warning naming it, never opened for a writer that would wait; the comment is posted. */
static void test_cmd_comment__a_summary_that_is_not_a_regular_file_is_refused(void **state)
{
    struct fixture *f = *state;
    char fifo[600], env_summary[640];
    snprintf(fifo, sizeof(fifo), "%s/summary.fifo", f->dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    snprintf(env_summary, sizeof(env_summary), "GITHUB_STEP_SUMMARY=%s", fifo);

    /* no reader: a blocking open would wait for one forever */
    run_tool(f, ENV(env_summary), ARGS("--report", in_dir(f, "fail.md"), "--dry-run"));
    assert_int_equal(f->code, 0);
    assert_non_null(strstr(f->err, "canary-gate: warning: "));
    assert_non_null(strstr(f->err, "summary.fifo"));
    assert_non_null(strstr(f->err, "not a regular file"));
    assert_non_null(strstr(f->out, "GET http://127.0.0.1:"));

    /* a reader holds it open: still refused, nothing written into it */
    int rd = open(fifo, O_RDONLY | O_NONBLOCK);
    assert_true(rd >= 0);
    run_tool(f, ENV(env_summary), ARGS("--report", in_dir(f, "fail.md")));
    assert_int_equal(f->code, 0);
    assert_non_null(strstr(f->err, "not a regular file"));
    assert_int_equal(cg_httpd_comment_count(f->srv), 1);
    char byte;
    assert_true(read(rd, &byte, 1) <= 0);
    close(rd);
}

static void test_cmd_comment__dry_run_prints_requests_without_the_token(void **state)
{
    struct fixture *f = *state;
    run_tool(f, NULL, ARGS("--report", in_dir(f, "fail.md"), "--status", "--dry-run", "--id", "big"));
    assert_int_equal(f->code, 0);
    assert_int_equal(cg_httpd_count(f->srv), 0);
    assert_non_null(strstr(f->out, "GET http://127.0.0.1:"));
    assert_non_null(strstr(f->out, "/repos/o/r/issues/7/comments?per_page=100\n"));
    assert_non_null(strstr(f->out, "POST http://127.0.0.1:"));
    assert_non_null(strstr(f->out, "/repos/o/r/statuses/" SHA "\n"));
    assert_non_null(strstr(f->out, "Authorization: Bearer <redacted>\n"));
    assert_non_null(strstr(f->out, "Accept: application/vnd.github+json\n"));
    assert_non_null(strstr(f->out, "{\"body\":\"<!-- canary-gate:big -->\\n<!-- canary-gate-verdict: fail"));
    assert_non_null(strstr(f->out, "\"context\":\"canary-gate/big\""));
    assert_summary_written(f, REPORT_FAIL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
        T(test_cmd_comment__help_and_usage_errors),
        T(test_cmd_comment__needs_a_verdict_for_status),
        T(test_cmd_comment__creates_comment_status_and_summary),
        T(test_cmd_comment__an_emoji_report_is_cut_to_githubs_limit_in_utf16_units),
        T(test_cmd_comment__updates_in_place_on_the_next_run),
        T(test_cmd_comment__two_gate_ids_keep_two_comments),
        T(test_cmd_comment__comment_modes),
        T(test_cmd_comment__rate_limit_then_success),
        T(test_cmd_comment__deadline_bounds_a_silent_api),
        T(test_cmd_comment__403_warns_about_forks_and_exits_0),
        T(test_cmd_comment__401_404_422_messages),
        T(test_cmd_comment__5xx_retried_then_given_up),
        T(test_cmd_comment__event_file),
        T(test_cmd_comment__no_token_or_repository),
        T(test_cmd_comment__summary_failure_still_posts),
        T(test_cmd_comment__dry_run_prints_requests_without_the_token),
        T(test_cmd_comment__a_summary_that_is_not_a_regular_file_is_refused),
        T(test_cmd_comment__an_untrusted_report_must_agree_with_its_json_verdict),
        T(test_cmd_comment__check_run_is_neutral_for_inconclusive),
        T(test_cmd_comment__untrusted_check_run_takes_the_trusted_commit),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
