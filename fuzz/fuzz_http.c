/*
 * fuzz_http: what the GitHub API sends back: response header lines (Link, Retry-After, the
 * rate-limit headers), the Link header's rel="next" URL, the page of comments the marker is
 * looked up in, and JSON error bodies turned into one-line messages.
 *
 * Input: the first byte picks the part. Even: the rest is one Link header value. Odd: the rest is
 * a response, header lines up to a blank line, then the body. Properties: a next URL is non-empty
 * and holds no '>' (it came from between the brackets); Retry-After and the rate-limit numbers
 * are -1 or non-negative; a found comment id is positive; the error line is within its buffer and
 * holds no control character (it goes to a terminal).
 */
#include "fuzz.h"

#include "github.h"
#include "http.h"

static void link_value(const char *value)
{
    char *next = NULL;
    int rc = cg_github_link_next(value, &next);
    CG_FUZZ_CHECK(rc == 0 || rc == 1 || rc == CG_ENOMEM, "rc %d", rc);
    if (rc == 1) {
        CG_FUZZ_CHECK(next != NULL && next[0] != '\0', "an empty next URL");
        CG_FUZZ_CHECK(strchr(next, '>') == NULL, "next URL '%s' runs past its bracket", next);
    } else {
        CG_FUZZ_CHECK(next == NULL, "no next page but a URL");
    }
    free(next);
}

static void response(const char *text, size_t len)
{
    struct cg_http_response r;
    cg_http_response_init(&r, 1u << 20);
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
        const char *next = p + n;
        if (n == 1 || (n == 2 && p[0] == '\r')) { /* the blank line: the body follows */
            p = next;
            break;
        }
        cg_http_response_header(&r, p, n);
        p = next;
    }
    CG_FUZZ_CHECK(r.retry_after_s >= -1, "retry_after %ld", r.retry_after_s);
    CG_FUZZ_CHECK(r.ratelimit_remaining >= -1, "remaining %ld", r.ratelimit_remaining);
    CG_FUZZ_CHECK(r.ratelimit_reset >= -1, "reset %lld", r.ratelimit_reset);
    if (r.link != NULL)
        link_value(r.link);

    size_t body_len = (size_t)(end - p);
    long long id = -1;
    int rc = cg_github_comments_scan(p, body_len, "<!-- canary-gate -->", NULL, &id, NULL);
    CG_FUZZ_CHECK(rc == 0 || rc == CG_EINPUT, "rc %d", rc);
    CG_FUZZ_CHECK(id >= 0, "comment id %lld", id);

    char msg[200];
    memset(msg, 'x', sizeof(msg));
    cg_github_api_message(p, body_len, msg, sizeof(msg));
    size_t n = strnlen(msg, sizeof(msg));
    CG_FUZZ_CHECK(n < sizeof(msg), "message not terminated");
    for (size_t i = 0; i < n; i++)
        CG_FUZZ_CHECK((unsigned char)msg[i] >= 0x20 && msg[i] != 0x7f, "control byte in '%s'", msg);
    cg_http_response_release(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (data[0] & 1) {
        response((const char *)data + 1, size - 1);
    } else {
        char *value = cg_fuzz_cstr(data + 1, size - 1);
        link_value(value);
        free(value);
    }
    return 0;
}
