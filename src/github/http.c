/*
 * http: libcurl client with timeouts, bounded retries and capped bodies (see http.h).
 *
 * Retry policy, per request:
 *   - transport failures (connect, timeout, reset) and 5xx: wait backoff_base_ms, doubling each
 *     time, plus up to a quarter of jitter, never more than backoff_max_ms;
 *   - rate limits (429, or 403 with Retry-After, x-ratelimit-remaining: 0 or a body saying
 *     "rate limit"): wait what the server asks (Retry-After seconds, or until x-ratelimit-reset
 *     plus backoff_base_ms); without a hint wait backoff_max_ms. A requested wait longer than
 *     backoff_max_ms is not waited for: the request gives up at once;
 *   - at most max_attempts requests, and at most retry_budget_ms of waiting in all;
 *   - a request marked "once" (a create) is not repeated after a 5xx or a lost answer, since
 *     the server may have acted on it: the caller checks and decides.
 * Times are milliseconds. Not thread-safe.
 */
#include "http.h"

#include "redact.h"

#include <curl/curl.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define HTTP_ACCEPT "Accept: application/vnd.github+json"
#define HTTP_API_VERSION "X-GitHub-Api-Version: 2022-11-28"

void cg_http_options_default(struct cg_http_options *o)
{
    memset(o, 0, sizeof(*o));
    o->connect_timeout_ms = 10000;
    o->timeout_ms = 30000;
    o->max_attempts = 5;
    o->backoff_base_ms = 1000;
    o->backoff_max_ms = 60000;
    o->retry_budget_ms = 120000;
    o->max_body_bytes = (size_t)32 << 20;
    o->user_agent = "canary-gate";
}

static int env_long(const char *name, long min, long max, long *out, struct cg_err *err)
{
    const char *v = getenv(name);
    if (v == NULL || *v == '\0')
        return 0;
    char *end = NULL;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || n < min || n > max)
        return cg_err_set(err, CG_EINPUT, "environment variable %s='%s': expected an integer from %ld to %ld",
                          name, v, min, max);
    *out = n;
    return 0;
}

int cg_http_options_env(struct cg_http_options *o, struct cg_err *err)
{
    const long day_ms = 86400000L;
    long attempts = o->max_attempts;
    int rc;
    if ((rc = env_long("CANARY_GATE_HTTP_BACKOFF_MS", 0, day_ms, &o->backoff_base_ms, err)) != 0 ||
        (rc = env_long("CANARY_GATE_HTTP_MAX_WAIT_MS", 0, day_ms, &o->backoff_max_ms, err)) != 0 ||
        (rc = env_long("CANARY_GATE_HTTP_BUDGET_MS", 0, day_ms, &o->retry_budget_ms, err)) != 0 ||
        (rc = env_long("CANARY_GATE_HTTP_TIMEOUT_MS", 1, day_ms, &o->timeout_ms, err)) != 0 ||
        (rc = env_long("CANARY_GATE_HTTP_ATTEMPTS", 1, 20, &attempts, err)) != 0)
        return rc;
    o->max_attempts = (int)attempts;
    if (o->connect_timeout_ms > o->timeout_ms)
        o->connect_timeout_ms = o->timeout_ms;
    return 0;
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* What is left of the client's deadline in ms (LONG_MAX when it has none; 0 when passed). */
static long deadline_left_ms(const struct cg_http *h)
{
    if (h->deadline_s <= 0.0)
        return LONG_MAX;
    double left = (h->deadline_s - mono_s()) * 1000.0;
    return left <= 0.0 ? 0 : left >= (double)LONG_MAX ? LONG_MAX : (long)left;
}

static int deadline_passed(const struct cg_http *h, struct cg_err *err, const char *host,
                           int attempts)
{
    if (h->answers > 0) /* GitHub was reached: the work took longer than the deadline */
        return cg_err_set(err, CG_ENET,
                          "the %.0f s deadline for talking to GitHub passed after %ld answer%s "
                          "from '%s' (%d attempt%s at the last request)",
                          (double)h->opt.deadline_ms / 1000.0, h->answers,
                          h->answers == 1 ? "" : "s", host, attempts, attempts == 1 ? "" : "s");
    return cg_err_set(err, CG_ENET,
                      "cannot reach '%s': the %.0f s deadline for talking to GitHub passed "
                      "(%d attempt%s)",
                      host, (double)h->opt.deadline_ms / 1000.0, attempts,
                      attempts == 1 ? "" : "s");
}

int cg_http_init(struct cg_http *h, const struct cg_http_options *opt, struct cg_err *err)
{
    h->opt = *opt;
    if (h->opt.max_attempts < 1)
        h->opt.max_attempts = 1;
    h->curl = NULL;
    h->answers = 0;
    if (opt->dry_run)
        return 0;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return cg_err_set(err, CG_ENET, "cannot initialise libcurl");
    h->curl = curl_easy_init();
    if (h->curl == NULL)
        return cg_err_set(err, CG_ENOMEM, "cannot create a libcurl handle");
    h->deadline_s = opt->deadline_ms > 0 ? mono_s() + (double)opt->deadline_ms / 1000.0 : 0.0;
    return 0;
}

void cg_http_release(struct cg_http *h)
{
    if (h->curl != NULL)
        curl_easy_cleanup(h->curl);
    h->curl = NULL;
}

void cg_http_response_init(struct cg_http_response *r, size_t max_body_bytes)
{
    memset(r, 0, sizeof(*r));
    cg_buf_init(&r->body, max_body_bytes);
    r->retry_after_s = -1;
    r->ratelimit_remaining = -1;
    r->ratelimit_reset = -1;
}

void cg_http_response_release(struct cg_http_response *r)
{
    cg_buf_release(&r->body);
    free(r->link);
    r->link = NULL;
}

/* Clears what one attempt fills, keeping the counters. */
static void response_reset_attempt(struct cg_http_response *r)
{
    cg_buf_reset(&r->body);
    free(r->link);
    r->link = NULL;
    r->status = 0;
    r->retry_after_s = -1;
    r->ratelimit_remaining = -1;
    r->ratelimit_reset = -1;
    r->rate_limited = 0;
}

/* ---- request headers ----------------------------------------------------------------------- */

/* Appends the header lines of req to out, one per line ending in "\n"; the token appears as
 * "<redacted>" when redact is set. */
static int headers_text(const struct cg_http *h, const struct cg_http_request *req, int redact,
                        struct cg_buf *out)
{
    int rc = cg_buf_printf(out, "User-Agent: %s\n%s\n%s\n",
                           h->opt.user_agent ? h->opt.user_agent : "canary-gate", HTTP_ACCEPT,
                           HTTP_API_VERSION);
    if (rc == 0 && req->token != NULL)
        rc = cg_buf_printf(out, "Authorization: Bearer %s\n", redact ? "<redacted>" : req->token);
    if (rc == 0 && req->body != NULL)
        rc = cg_buf_adds(out, "Content-Type: application/json\n");
    return rc;
}

int cg_http_format_request(const struct cg_http *h, const struct cg_http_request *req,
                           struct cg_buf *out)
{
    char *url = cg_redact_apply(NULL, req->url); /* never a URL's userinfo */
    int rc = url != NULL ? cg_buf_printf(out, "%s %s\n", req->method, url) : CG_ENOMEM;
    free(url);
    if (rc == 0)
        rc = headers_text(h, req, 1, out);
    if (rc == 0 && req->body != NULL)
        rc = cg_buf_printf(out, "\n%s\n", req->body);
    return rc;
}

/* Turns the header lines into a curl list. The token lives in the list only while sending. */
static int headers_list(const struct cg_http *h, const struct cg_http_request *req,
                        struct curl_slist **out)
{
    struct cg_buf text;
    struct curl_slist *list = NULL;
    int rc = 0;
    cg_buf_init(&text, (size_t)64 * 1024);
    if (headers_text(h, req, 0, &text) != 0) {
        rc = CG_ENOMEM;
        goto done;
    }
    char *save = NULL;
    for (char *line = strtok_r(text.data, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        if (strncasecmp(line, "User-Agent:", 11) == 0)
            continue; /* set through CURLOPT_USERAGENT */
        struct curl_slist *next = curl_slist_append(list, line);
        if (next == NULL) {
            rc = CG_ENOMEM;
            goto done;
        }
        list = next;
    }
    struct curl_slist *next = curl_slist_append(list, "Expect:");
    if (next == NULL) {
        rc = CG_ENOMEM;
        goto done;
    }
    list = next;
    *out = list;
    list = NULL;
done:
    if (text.data != NULL)
        memset(text.data, 0, text.cap);
    cg_buf_release(&text);
    curl_slist_free_all(list);
    return rc;
}

/* ---- response callbacks ------------------------------------------------------------------- */

struct attempt {
    struct cg_http_response *resp;
    int overflow;
};

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
    struct attempt *a = ctx;
    size_t len = size * n;
    if (cg_buf_add(&a->resp->body, p, len) != 0) {
        a->overflow = 1;
        return 0;
    }
    return len;
}

static int parse_long(const char *s, long long *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || v < 0)
        return -1;
    while (*end == ' ' || *end == '\t')
        end++;
    if (*end != '\0')
        return -1;
    *out = v;
    return 0;
}

void cg_http_response_header(struct cg_http_response *r, const char *text, size_t len)
{
    char line[1024];
    if (len >= sizeof(line))
        return; /* no header we read is this long */
    memcpy(line, text, len);
    line[len] = '\0';
    len = strlen(line); /* a NUL byte ends the line */
    while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == '\n' || line[len - 1] == ' '))
        line[--len] = '\0';
    if (strncmp(line, "HTTP/", 5) == 0) { /* a new response (after 100 Continue): start over */
        response_reset_attempt(r);
        return;
    }
    char *colon = strchr(line, ':');
    if (colon == NULL)
        return;
    *colon = '\0';
    char *value = colon + 1;
    while (*value == ' ' || *value == '\t')
        value++;
    long long v = 0;
    if (strcasecmp(line, "link") == 0) {
        free(r->link);
        r->link = strdup(value);
    } else if (strcasecmp(line, "retry-after") == 0) {
        r->retry_after_s = parse_long(value, &v) == 0 && v < LONG_MAX ? (long)v : 0;
    } else if (strcasecmp(line, "x-ratelimit-remaining") == 0) {
        if (parse_long(value, &v) == 0 && v < LONG_MAX)
            r->ratelimit_remaining = (long)v;
    } else if (strcasecmp(line, "x-ratelimit-reset") == 0) {
        if (parse_long(value, &v) == 0)
            r->ratelimit_reset = v;
    }
}

static size_t on_header(char *p, size_t size, size_t n, void *ctx)
{
    struct attempt *a = ctx;
    cg_http_response_header(a->resp, p, size * n);
    return size * n;
}

/* ---- one attempt ---------------------------------------------------------------------------- */

/* Copies the host[:port] of url into out for messages. */
static void url_host(const char *url, char *out, size_t size)
{
    if (url == NULL)
        url = "";
    const char *p = strstr(url, "://");
    p = p ? p + 3 : url;
    size_t n = strcspn(p, "/?#");
    const char *at = memchr(p, '@', n); /* never show userinfo */
    if (at != NULL) {
        n -= (size_t)(at + 1 - p);
        p = at + 1;
    }
    if (n >= size)
        n = size - 1;
    memcpy(out, p, n);
    out[n] = '\0';
}

static CURLcode perform(struct cg_http *h, const struct cg_http_request *req,
                        struct curl_slist *headers, struct attempt *a, char *errbuf)
{
    CURL *c = h->curl;
    curl_easy_reset(c); /* keeps the live connection */
    errbuf[0] = '\0';
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_URL, req->url);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(c, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    long left = deadline_left_ms(h);
    long total = h->opt.timeout_ms < left ? h->opt.timeout_ms : left;
    total = total > 0 ? total : 1;
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                     h->opt.connect_timeout_ms < total ? h->opt.connect_timeout_ms : total);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, total);
    curl_easy_setopt(c, CURLOPT_USERAGENT, h->opt.user_agent ? h->opt.user_agent : "canary-gate");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, a);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, a);
    curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
    if (strcmp(req->method, "GET") == 0) {
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    } else {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req->method);
        const char *body = req->body ? req->body : "";
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
    }
    CURLcode cc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    a->resp->status = cc == CURLE_OK ? status : 0;
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, NULL);
    return cc;
}

/* Sets err for a request that got no answer; curl's message starts lowercase like ours. */
static int no_answer(struct cg_err *err, const char *host, CURLcode cc, char *errbuf, int attempts)
{
    const char *why = errbuf[0] ? errbuf : curl_easy_strerror(cc);
    char first = why[0] >= 'A' && why[0] <= 'Z' ? (char)(why[0] - 'A' + 'a') : why[0];
    return cg_err_set(err, CG_ENET, "cannot reach '%s': %c%s (%d attempt%s)", host, first,
                      why[0] ? why + 1 : "", attempts, attempts == 1 ? "" : "s");
}

static int transient(CURLcode cc)
{
    switch (cc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
        return 1;
    default:
        return 0;
    }
}

/* ---- waiting -------------------------------------------------------------------------------- */

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static long backoff_ms(const struct cg_http_options *o, int retry)
{
    long d = o->backoff_base_ms;
    for (int i = 1; i < retry && d < o->backoff_max_ms; i++)
        d = d > LONG_MAX / 2 ? LONG_MAX : d * 2;
    if (d > 3) {
        static unsigned seed;
        if (seed == 0)
            seed = (unsigned)time(NULL) ^ (unsigned)getpid();
        seed = seed * 1103515245u + 12345u;
        d += (long)((seed >> 8) % (unsigned long)(d / 4 + 1));
    }
    return d < o->backoff_max_ms ? d : o->backoff_max_ms;
}

/* Decides whether the answer in r is a rate limit; if so returns the wait the server asks for in
 * ms (-1 when it gives no hint). Returns -2 when r is not a rate limit. */
static long rate_limit_wait_ms(const struct cg_http_options *o, const struct cg_http_response *r)
{
    if (r->status != 403 && r->status != 429)
        return -2;
    if (r->retry_after_s >= 0)
        return r->retry_after_s > LONG_MAX / 1000 ? LONG_MAX : r->retry_after_s * 1000;
    if (r->ratelimit_remaining == 0 && r->ratelimit_reset >= 0) {
        long long left_s = r->ratelimit_reset - (long long)time(NULL);
        if (left_s < 0)
            left_s = 0;
        if (left_s > LONG_MAX / 1000 - o->backoff_base_ms)
            return LONG_MAX;
        return (long)left_s * 1000 + o->backoff_base_ms;
    }
    if (r->status == 429 || strstr(cg_buf_str(&r->body), "rate limit") != NULL)
        return -1;
    return -2;
}

int cg_http_send(struct cg_http *h, const struct cg_http_request *req,
                 struct cg_http_response *resp, struct cg_err *err)
{
    struct curl_slist *headers = NULL;
    struct cg_buf text;
    char host[256];
    char errbuf[CURL_ERROR_SIZE];
    int rc = 0;

    cg_buf_init(&text, (size_t)1 << 20);
    response_reset_attempt(resp);
    resp->attempts = 0;
    resp->waited_ms = 0;
    url_host(req->url, host, sizeof(host));
    if (req->method == NULL || req->url == NULL ||
        (strncmp(req->url, "http://", 7) != 0 && strncmp(req->url, "https://", 8) != 0)) {
        rc = cg_err_set(err, CG_EINPUT, "cannot send a request to '%s': not an http(s) URL", host);
        goto done;
    }
    if (h->opt.dry_run) {
        if (cg_http_format_request(h, req, &text) != 0) {
            rc = cg_err_set(err, CG_ENOMEM, "cannot format the request to '%s'", host);
            goto done;
        }
        if (h->opt.trace != NULL)
            h->opt.trace(h->opt.trace_ctx, cg_buf_str(&text));
        goto done;
    }
    if (h->curl == NULL) {
        rc = cg_err_set(err, CG_EINTERNAL, "http client used before cg_http_init");
        goto done;
    }
    if (headers_list(h, req, &headers) != 0) {
        rc = cg_err_set(err, CG_ENOMEM, "cannot build the request headers");
        goto done;
    }
    for (;;) {
        struct attempt a = {resp, 0};
        if (deadline_left_ms(h) == 0) {
            rc = deadline_passed(h, err, host, resp->attempts);
            goto done;
        }
        response_reset_attempt(resp);
        resp->attempts++;
        CURLcode cc = perform(h, req, headers, &a, errbuf);
        long wait = -1;
        if (cc == CURLE_OK)
            h->answers++;
        if (a.overflow) {
            rc = cg_err_set(err, CG_ENOMEM, "response from '%s' is larger than %zu bytes", host,
                            h->opt.max_body_bytes);
            goto done;
        }
        if (cc != CURLE_OK && deadline_left_ms(h) == 0) {
            rc = deadline_passed(h, err, host, resp->attempts);
            goto done;
        }
        if (cc != CURLE_OK) {
            int unsent = cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST;
            if (!transient(cc) || resp->attempts >= h->opt.max_attempts || (req->once && !unsent)) {
                rc = no_answer(err, host, cc, errbuf, resp->attempts);
                goto done;
            }
            wait = backoff_ms(&h->opt, resp->attempts);
        } else {
            long rl = rate_limit_wait_ms(&h->opt, resp);
            if (rl != -2) {
                resp->rate_limited = 1;
                wait = rl == -1 ? h->opt.backoff_max_ms : rl;
                if (wait > h->opt.backoff_max_ms)
                    goto done; /* the server asks for longer than we wait: give up now */
            } else if (resp->status >= 500 && !req->once) {
                wait = backoff_ms(&h->opt, resp->attempts);
            } else {
                goto done;
            }
            if (resp->attempts >= h->opt.max_attempts)
                goto done;
        }
        if (resp->waited_ms + wait > h->opt.retry_budget_ms) {
            if (cc != CURLE_OK)
                rc = no_answer(err, host, cc, errbuf, resp->attempts);
            goto done;
        }
        if (wait >= deadline_left_ms(h)) { /* no wait runs past the deadline */
            if (cc != CURLE_OK)
                rc = deadline_passed(h, err, host, resp->attempts);
            goto done;
        }
        sleep_ms(wait);
        resp->waited_ms += wait;
    }
done:
    curl_slist_free_all(headers);
    cg_buf_release(&text);
    return rc;
}
