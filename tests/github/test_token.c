/*
 * test_token: the GitHub token leaves canary-gate in the Authorization header of requests to
 * GITHUB_API_URL's host and nowhere else (docs/security.md): not to another host through a
 * redirect or a Link header, not in a request URL, and not in an error message even when a
 * server echoes it back in its answer. Runs against the test HTTP server (tests/support/httpd.h),
 * with a second server standing for the host the token must never reach.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "github.h"
#include "http.h"
#include "httpd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOKEN "ghp_TESTTOKEN123"
#define MARKER "<!-- canary-gate -->"

struct fixture {
    struct cg_httpd *api, *elsewhere;
    struct cg_http http;
    struct cg_github gh;
    struct cg_err err;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct cg_http_options o;
    assert_non_null(f);
    f->api = cg_httpd_start();
    f->elsewhere = cg_httpd_start();
    assert_non_null(f->api);
    assert_non_null(f->elsewhere);
    cg_httpd_github(f->api, "o/r", 7, TOKEN, 100);
    cg_http_options_default(&o);
    o.backoff_base_ms = 5;
    o.max_attempts = 2;
    o.timeout_ms = 5000;
    assert_int_equal(cg_http_init(&f->http, &o, &f->err), 0);
    f->gh = (struct cg_github){&f->http, cg_httpd_url(f->api), "o/r", TOKEN};
    cg_err_init(&f->err);
    *state = f;
    return 0;
}

/* Whatever a test did: the other host saw nothing, and no request URL held the token. */
static int teardown(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(cg_httpd_count(f->elsewhere), 0);
    for (size_t i = 0; i < cg_httpd_count(f->api); i++)
        assert_null(strstr(cg_httpd_request(f->api, i)->target, TOKEN));
    assert_null(strstr(f->err.msg, TOKEN));
    cg_http_release(&f->http);
    cg_httpd_stop(f->api);
    cg_httpd_stop(f->elsewhere);
    free(f);
    return 0;
}

static void test_token__redirects_are_not_followed(void **state)
{
    struct fixture *f = *state;
    char headers[256];
    snprintf(headers, sizeof(headers), "Location: %s/steal\r\n", cg_httpd_url(f->elsewhere));
    static const int codes[] = {301, 302, 307, 308};
    for (size_t i = 0; i < 4; i++) {
        long long id = 0;
        cg_httpd_push(f->api, codes[i], headers, "");
        assert_int_equal(cg_github_comment_find(&f->gh, 7, MARKER, &id, &f->err), CG_ENET);
        assert_int_equal(id, 0);
    }
    /* a create answered with a redirect is not sent again elsewhere either */
    struct cg_github_comment_result res;
    cg_httpd_push(f->api, 200, NULL, "[]");
    cg_httpd_push(f->api, 307, headers, "");
    assert_int_equal(cg_github_comment_publish(&f->gh, 7, NULL, MARKER "\nbody",
                                               CG_GITHUB_MODE_ALWAYS, CG_GITHUB_FAIL, &res, &f->err),
                     CG_ENET);
    assert_int_equal(cg_httpd_count(f->api), 6);
}

static void test_token__next_page_links_stay_on_the_api_host(void **state)
{
    struct fixture *f = *state;
    char link[512];
    const char *api = cg_httpd_url(f->api);
    const char *other = cg_httpd_url(f->elsewhere);
    const char *host = strstr(api, "://") + 3;
    /* another port, credentials in the URL, a look-alike host: none is followed */
    const char *const fmts[] = {"Link: <%s/repos/o/r/issues/7/comments?page=2>; rel=\"next\"\r\n",
                                "Link: <http://x:y@%s/repos/o/r/issues/7/comments?page=2>; "
                                "rel=\"next\"\r\n",
                                "Link: <http://%s.evil.invalid/?page=2>; rel=\"next\"\r\n"};
    const char *const args[] = {other, host, host};
    for (size_t i = 0; i < 3; i++) {
        long long id = 0;
        snprintf(link, sizeof(link), fmts[i], args[i]);
        cg_httpd_push(f->api, 200, link, "[]");
        assert_int_equal(cg_github_comment_find(&f->gh, 7, MARKER, &id, &f->err), CG_ENET);
        assert_non_null(strstr(f->err.msg, "another host"));
    }
    assert_int_equal(cg_httpd_count(f->api), 3);
}

/* A proxy or a misconfigured server that echoes the Authorization header in its error body: the
 * message canary-gate prints quotes the server's reason, with the token taken out. */
static void test_token__echoed_in_an_error_body_is_redacted(void **state)
{
    struct fixture *f = *state;
    static const int codes[] = {401, 403, 422, 500};
    for (size_t i = 0; i < 4; i++) {
        long long id = 0;
        cg_httpd_push(f->api, codes[i], NULL,
                      "{\"message\": \"bad credentials: Bearer " TOKEN "\", \"errors\": [\"" TOKEN
                      "\"]}");
        if (codes[i] == 500)
            cg_httpd_push(f->api, codes[i], NULL, "{\"message\": \"" TOKEN "\"}");
        assert_int_equal(cg_github_comment_find(&f->gh, 7, MARKER, &id, &f->err), CG_ENET);
        if (strstr(f->err.msg, TOKEN) != NULL)
            fail_msg("%d: the message holds the token: %s", codes[i], f->err.msg);
        if (codes[i] != 500)
            assert_non_null(strstr(f->err.msg, "<redacted>"));
    }
}

static void test_token__not_in_messages_when_the_host_is_unreachable(void **state)
{
    struct fixture *f = *state;
    struct cg_github down = f->gh;
    down.api_url = "http://127.0.0.1:1"; /* nothing listens on port 1 */
    long long id = 0;
    assert_int_equal(cg_github_comment_find(&down, 7, MARKER, &id, &f->err), CG_ENET);
    assert_non_null(strstr(f->err.msg, "127.0.0.1:1"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_token__redirects_are_not_followed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_token__next_page_links_stay_on_the_api_host, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_token__echoed_in_an_error_body_is_redacted, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_token__not_in_messages_when_the_host_is_unreachable,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
