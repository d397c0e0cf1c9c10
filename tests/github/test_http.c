/*
 * test_http: the libcurl client against a real HTTP server on 127.0.0.1 (tests/support/httpd):
 * headers sent, retries on 5xx and rate limits, their bounds, the body cap, timeouts, refused
 * connections, dry-run text with the token redacted, and the environment overrides.
 */
#include "http.h"
#include "httpd.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TOKEN "ghp_TESTTOKEN123"

struct fixture {
    struct cg_httpd *srv;
    struct cg_http http;
    struct cg_http_response resp;
    struct cg_err err;
    char url[256];
};

static void fast_options(struct cg_http_options *o)
{
    cg_http_options_default(o);
    o->backoff_base_ms = 5;
    o->backoff_max_ms = 2000;
    o->retry_budget_ms = 5000;
    o->timeout_ms = 3000;
    o->connect_timeout_ms = 1000;
    o->max_attempts = 4;
    o->user_agent = "canary-gate-test";
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct cg_http_options o;
    assert_non_null(f);
    f->srv = cg_httpd_start();
    assert_non_null(f->srv);
    fast_options(&o);
    assert_int_equal(cg_http_init(&f->http, &o, &f->err), 0);
    cg_http_response_init(&f->resp, o.max_body_bytes);
    cg_err_init(&f->err);
    snprintf(f->url, sizeof(f->url), "%s/repos/o/r/issues/1/comments?per_page=100",
             cg_httpd_url(f->srv));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    cg_http_response_release(&f->resp);
    cg_http_release(&f->http);
    cg_httpd_stop(f->srv);
    free(f);
    return 0;
}

static int get(struct fixture *f)
{
    struct cg_http_request req = {"GET", f->url, TOKEN, NULL, 0};
    return cg_http_send(&f->http, &req, &f->resp, &f->err);
}

static void test_http__sends_github_headers_and_reads_body(void **state)
{
    struct fixture *f = *state;
    char v[256];
    cg_httpd_push(f->srv, 200, "Link: <http://x/?page=2>; rel=\"next\"\r\n", "{\"ok\":1}");
    assert_int_equal(get(f), 0);
    assert_int_equal(f->resp.status, 200);
    assert_string_equal(cg_buf_str(&f->resp.body), "{\"ok\":1}");
    assert_string_equal(f->resp.link, "<http://x/?page=2>; rel=\"next\"");
    assert_int_equal(f->resp.attempts, 1);

    const struct cg_httpd_request *r = cg_httpd_request(f->srv, 0);
    assert_non_null(r);
    assert_string_equal(r->method, "GET");
    assert_string_equal(r->target, "/repos/o/r/issues/1/comments?per_page=100");
    assert_string_equal(cg_httpd_header(r, "authorization", v, sizeof(v)), "Bearer " TOKEN);
    assert_string_equal(cg_httpd_header(r, "Accept", v, sizeof(v)), "application/vnd.github+json");
    assert_string_equal(cg_httpd_header(r, "X-GitHub-Api-Version", v, sizeof(v)), "2022-11-28");
    assert_string_equal(cg_httpd_header(r, "User-Agent", v, sizeof(v)), "canary-gate-test");
    assert_null(strstr(r->target, TOKEN));
}

static void test_http__post_and_patch_send_json_body(void **state)
{
    struct fixture *f = *state;
    char v[256];
    struct cg_http_request post = {"POST", f->url, TOKEN, "{\"body\":\"hi\"}", 0};
    struct cg_http_request patch = {"PATCH", f->url, TOKEN, "{\"body\":\"again\"}", 0};
    cg_httpd_push(f->srv, 201, NULL, "{}");
    cg_httpd_push(f->srv, 200, NULL, "{}");
    assert_int_equal(cg_http_send(&f->http, &post, &f->resp, &f->err), 0);
    assert_int_equal(f->resp.status, 201);
    assert_int_equal(cg_http_send(&f->http, &patch, &f->resp, &f->err), 0);
    assert_int_equal(f->resp.status, 200);
    const struct cg_httpd_request *r0 = cg_httpd_request(f->srv, 0);
    const struct cg_httpd_request *r1 = cg_httpd_request(f->srv, 1);
    assert_string_equal(r0->method, "POST");
    assert_string_equal(r0->body, "{\"body\":\"hi\"}");
    assert_string_equal(cg_httpd_header(r0, "Content-Type", v, sizeof(v)), "application/json");
    assert_string_equal(r1->method, "PATCH");
    assert_string_equal(r1->body, "{\"body\":\"again\"}");
}

static void test_http__5xx_retried_then_succeeds(void **state)
{
    struct fixture *f = *state;
    cg_httpd_push(f->srv, 502, NULL, "bad gateway");
    cg_httpd_push(f->srv, 503, NULL, "unavailable");
    cg_httpd_push(f->srv, 200, NULL, "[]");
    assert_int_equal(get(f), 0);
    assert_int_equal(f->resp.status, 200);
    assert_int_equal(f->resp.attempts, 3);
    assert_int_equal(cg_httpd_count(f->srv), 3);
    assert_true(f->resp.waited_ms >= 10);
}

static void test_http__5xx_given_up_after_max_attempts(void **state)
{
    struct fixture *f = *state;
    for (int i = 0; i < 6; i++)
        cg_httpd_push(f->srv, 500, NULL, "boom");
    assert_int_equal(get(f), 0);
    assert_int_equal(f->resp.status, 500);
    assert_int_equal(f->resp.attempts, 4);
    assert_int_equal(cg_httpd_count(f->srv), 4);
}

static void test_http__5xx_given_up_when_budget_spent(void **state)
{
    struct fixture *f = *state;
    f->http.opt.backoff_base_ms = 40;
    f->http.opt.retry_budget_ms = 50; /* one wait of 40-50 ms fits, the second (80+) does not */
    for (int i = 0; i < 6; i++)
        cg_httpd_push(f->srv, 503, NULL, "busy");
    assert_int_equal(get(f), 0);
    assert_int_equal(f->resp.status, 503);
    assert_int_equal(f->resp.attempts, 2);
    assert_true(f->resp.waited_ms <= 50);
}

static void test_http__create_is_not_repeated_after_5xx(void **state)
{
    struct fixture *f = *state;
    struct cg_http_request post = {"POST", f->url, TOKEN, "{}", 1};
    cg_httpd_push(f->srv, 502, NULL, "bad gateway");
    cg_httpd_push(f->srv, 429, "Retry-After: 0\r\n", "{}"); /* rate limits: nothing was done */
    cg_httpd_push(f->srv, 201, NULL, "{}");
    assert_int_equal(cg_http_send(&f->http, &post, &f->resp, &f->err), 0);
    assert_int_equal(f->resp.status, 502);
    assert_int_equal(f->resp.attempts, 1);
    assert_int_equal(cg_http_send(&f->http, &post, &f->resp, &f->err), 0);
    assert_int_equal(f->resp.status, 201);
    assert_int_equal(f->resp.attempts, 2);
}

static void test_http__rate_limit_retry_after_then_success(void **state)
{
    struct fixture *f = *state;
    cg_httpd_push(f->srv, 429, "Retry-After: 1\r\n", "{\"message\":\"slow down\"}");
    cg_httpd_push(f->srv, 200, NULL, "[]");
    assert_int_equal(get(f), 0);
    assert_int_equal(f->resp.status, 200);
    assert_int_equal(f->resp.attempts, 2);
    assert_true(f->resp.waited_ms >= 1000);
}

static void test_http__rate_limit_reset_header_then_success(void **state)
{
    struct fixture *f = *state;
    char headers[128];
    snprintf(headers, sizeof(headers), "x-ratelimit-remaining: 0\r\nx-ratelimit-reset: %lld\r\n",
             (long long)time(NULL) - 1);
    cg_httpd_push(f->srv, 403, headers, "{\"message\":\"API rate limit exceeded\"}");
    cg_httpd_push(f->srv, 200, NULL, "[]");
    assert_int_equal(get(f), 0);
    assert_int_equal(f->resp.status, 200);
    assert_int_equal(f->resp.attempts, 2);
}

static void test_http__rate_limit_longer_than_max_wait_gives_up_at_once(void **state)
{
    struct fixture *f = *state;
    cg_httpd_push(f->srv, 429, "Retry-After: 3600\r\n", "{}");
    cg_httpd_push(f->srv, 200, NULL, "[]");
    assert_int_equal(get(f), 0);
    assert_int_equal(f->resp.status, 429);
    assert_true(f->resp.rate_limited);
    assert_int_equal(f->resp.retry_after_s, 3600);
    assert_int_equal(f->resp.attempts, 1);
    assert_int_equal(cg_httpd_count(f->srv), 1);
}

static void test_http__secondary_rate_limit_in_body_is_retried(void **state)
{
    struct fixture *f = *state;
    f->http.opt.backoff_max_ms = 20;
    cg_httpd_push(f->srv, 403, NULL,
                  "{\"message\":\"You have exceeded a secondary rate limit. Please wait.\"}");
    cg_httpd_push(f->srv, 200, NULL, "[]");
    assert_int_equal(get(f), 0);
    assert_int_equal(f->resp.status, 200);
    assert_int_equal(f->resp.attempts, 2);
}

static void test_http__403_without_rate_limit_is_not_retried(void **state)
{
    struct fixture *f = *state;
    cg_httpd_push(f->srv, 403, NULL, "{\"message\":\"Resource not accessible by integration\"}");
    cg_httpd_push(f->srv, 200, NULL, "[]");
    assert_int_equal(get(f), 0);
    assert_int_equal(f->resp.status, 403);
    assert_false(f->resp.rate_limited);
    assert_int_equal(f->resp.attempts, 1);
}

static void test_http__body_over_cap_fails(void **state)
{
    struct fixture *f = *state;
    char *big = malloc(5001);
    assert_non_null(big);
    memset(big, 'x', 5000);
    big[5000] = '\0';
    cg_http_response_release(&f->resp);
    f->http.opt.max_body_bytes = 1024;
    cg_http_response_init(&f->resp, 1024);
    cg_httpd_push(f->srv, 200, NULL, big);
    free(big);
    assert_int_equal(get(f), CG_ENOMEM);
    assert_non_null(strstr(f->err.msg, "larger than 1024 bytes"));
    assert_int_equal(cg_httpd_count(f->srv), 1);
}

static void test_http__timeout_retried_then_reported(void **state)
{
    struct fixture *f = *state;
    f->http.opt.timeout_ms = 100;
    f->http.opt.max_attempts = 2;
    cg_httpd_push_delayed(f->srv, 300, 200, NULL, "[]");
    cg_httpd_push_delayed(f->srv, 300, 200, NULL, "[]");
    assert_int_equal(get(f), CG_ENET);
    assert_non_null(strstr(f->err.msg, "cannot reach '127.0.0.1:"));
    assert_non_null(strstr(f->err.msg, "timed out"));
    assert_non_null(strstr(f->err.msg, "(2 attempts)"));
}

/* The overall deadline passing after GitHub answered (page 138 of a long listing) is said as
 * that, with the answers counted, not as "cannot reach" the host. */
static void test_http__a_deadline_after_answers_is_not_unreachable(void **state)
{
    struct fixture *f = *state;
    struct cg_http_options o;
    cg_http_release(&f->http);
    fast_options(&o);
    o.deadline_ms = 1000;
    assert_int_equal(cg_http_init(&f->http, &o, &f->err), 0);
    cg_httpd_push(f->srv, 200, NULL, "[]");
    cg_httpd_push(f->srv, 200, NULL, "[]");
    assert_int_equal(get(f), 0);
    assert_int_equal(get(f), 0);
    cg_httpd_push_delayed(f->srv, 1500, 200, NULL, "[]");
    assert_int_equal(get(f), CG_ENET);
    if (strstr(f->err.msg, "the 1 s deadline for talking to GitHub passed after 2 answers from "
                           "'127.0.0.1:") == NULL ||
        strstr(f->err.msg, "cannot reach") != NULL)
        fail_msg("said: %s", f->err.msg);
}

static void test_http__connection_refused_is_reported(void **state)
{
    struct fixture *f = *state;
    struct sockaddr_in addr;
    socklen_t alen = sizeof(addr);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0); /* bound, not listening */
    assert_int_equal(getsockname(fd, (struct sockaddr *)&addr, &alen), 0);
    snprintf(f->url, sizeof(f->url), "http://127.0.0.1:%u/x", (unsigned)ntohs(addr.sin_port));
    f->http.opt.max_attempts = 2;
    assert_int_equal(get(f), CG_ENET);
    close(fd);
    assert_non_null(strstr(f->err.msg, "cannot reach '127.0.0.1:"));
    assert_non_null(strstr(f->err.msg, "(2 attempts)"));
    assert_null(strstr(f->err.msg, TOKEN));
}

static void collect(void *ctx, const char *text)
{
    cg_buf_adds(ctx, text);
}

static void test_http__dry_run_sends_nothing_and_redacts_the_token(void **state)
{
    struct fixture *f = *state;
    struct cg_buf out;
    struct cg_http dry;
    struct cg_http_options o;
    cg_buf_init(&out, 1 << 16);
    fast_options(&o);
    o.dry_run = 1;
    o.trace = collect;
    o.trace_ctx = &out;
    assert_int_equal(cg_http_init(&dry, &o, &f->err), 0);
    struct cg_http_request req = {"POST", f->url, TOKEN, "{\"body\":\"x\"}", 0};
    assert_int_equal(cg_http_send(&dry, &req, &f->resp, &f->err), 0);
    assert_int_equal(f->resp.status, 0);
    assert_int_equal(cg_httpd_count(f->srv), 0);
    const char *text = cg_buf_str(&out);
    assert_non_null(strstr(text, "POST http://127.0.0.1:"));
    assert_non_null(strstr(text, "Authorization: Bearer <redacted>\n"));
    assert_non_null(strstr(text, "X-GitHub-Api-Version: 2022-11-28\n"));
    assert_non_null(strstr(text, "\n\n{\"body\":\"x\"}\n"));
    assert_null(strstr(text, TOKEN));
    cg_http_release(&dry);
    cg_buf_release(&out);
}

static void test_http__options_from_environment(void **state)
{
    struct fixture *f = *state;
    struct cg_http_options o;
    cg_http_options_default(&o);
    setenv("CANARY_GATE_HTTP_BACKOFF_MS", "7", 1);
    setenv("CANARY_GATE_HTTP_ATTEMPTS", "2", 1);
    assert_int_equal(cg_http_options_env(&o, &f->err), 0);
    assert_int_equal(o.backoff_base_ms, 7);
    assert_int_equal(o.max_attempts, 2);
    setenv("CANARY_GATE_HTTP_BACKOFF_MS", "7ms", 1);
    assert_int_equal(cg_http_options_env(&o, &f->err), CG_EINPUT);
    assert_non_null(strstr(f->err.msg, "CANARY_GATE_HTTP_BACKOFF_MS='7ms'"));
    unsetenv("CANARY_GATE_HTTP_BACKOFF_MS");
    unsetenv("CANARY_GATE_HTTP_ATTEMPTS");
}

static void test_http__rejects_non_http_urls(void **state)
{
    struct fixture *f = *state;
    snprintf(f->url, sizeof(f->url), "file:///etc/passwd");
    assert_int_equal(get(f), CG_EINPUT);
    assert_int_equal(cg_httpd_count(f->srv), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
        T(test_http__sends_github_headers_and_reads_body),
        T(test_http__post_and_patch_send_json_body),
        T(test_http__5xx_retried_then_succeeds),
        T(test_http__5xx_given_up_after_max_attempts),
        T(test_http__5xx_given_up_when_budget_spent),
        T(test_http__create_is_not_repeated_after_5xx),
        T(test_http__rate_limit_retry_after_then_success),
        T(test_http__rate_limit_reset_header_then_success),
        T(test_http__rate_limit_longer_than_max_wait_gives_up_at_once),
        T(test_http__secondary_rate_limit_in_body_is_retried),
        T(test_http__403_without_rate_limit_is_not_retried),
        T(test_http__body_over_cap_fails),
        T(test_http__timeout_retried_then_reported),
        T(test_http__a_deadline_after_answers_is_not_unreachable),
        T(test_http__connection_refused_is_reported),
        T(test_http__dry_run_sends_nothing_and_redacts_the_token),
        T(test_http__options_from_environment),
        T(test_http__rejects_non_http_urls),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
