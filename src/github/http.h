/*
 * http: a small HTTPS client over libcurl for talking to the GitHub REST API.
 *
 * One request at a time through a reusable client (struct cg_http), which keeps the connection
 * alive between requests. Every request has a connect timeout and a total timeout; 5xx answers,
 * transport failures and rate limits (403/429 with Retry-After, or x-ratelimit-remaining: 0 with
 * x-ratelimit-reset) are retried with exponential backoff, bounded in attempts and in total
 * waiting time, and all of a client's requests by one overall deadline (deadline_ms): an attempt's
 * timeouts shrink to what is left of it, no wait runs past it, and a request after it fails at
 * once. Response bodies are read into a capped struct cg_buf. Redirects are never
 * followed, so the token only goes to the URL the caller named.
 *
 * The token travels only in the Authorization header: it is never put in a URL, never printed,
 * and in dry-run text it is replaced by "<redacted>". In dry-run mode nothing is sent: each
 * request is formatted as text (method, URL, headers, body) and handed to a caller-given
 * callback, since modules never print. Times are milliseconds unless a name says otherwise.
 * Not thread-safe: one client per thread.
 */
#ifndef CG_HTTP_H
#define CG_HTTP_H

#include "buf.h"
#include "err.h"

#include <stddef.h>

/* Receives the text of a request that dry-run mode did not send (one request per call). */
typedef void (*cg_http_trace_fn)(void *ctx, const char *text);

struct cg_http_options {
    long connect_timeout_ms; /* TCP + TLS connect, per attempt */
    long timeout_ms;         /* whole request, per attempt */
    int max_attempts;        /* first try included; >= 1 */
    long backoff_base_ms;    /* first retry wait for 5xx and transport errors; doubles each time */
    long backoff_max_ms;     /* longest single wait, also for server-requested rate-limit waits */
    long retry_budget_ms;    /* most total time spent waiting between attempts */
    long deadline_ms;        /* every request of the client, retries and waits included, ends
                              * within this long after cg_http_init; 0: no overall deadline */
    size_t max_body_bytes;   /* cap on a response body */
    const char *user_agent;  /* User-Agent header; not copied, must outlive the client */
    int dry_run;             /* nonzero: format requests for trace instead of sending them */
    cg_http_trace_fn trace;  /* receives dry-run text; may be NULL */
    void *trace_ctx;
};

/* One request. Strings are borrowed for the duration of cg_http_send. */
struct cg_http_request {
    const char *method; /* "GET", "POST", "PATCH" */
    const char *url;    /* absolute http(s) URL; never holds a credential */
    const char *token;  /* sent as "Authorization: Bearer <token>"; NULL sends none */
    const char *body;   /* request body (JSON), or NULL */
    int once;           /* not idempotent (creates something): a 5xx or a lost answer is returned
                           at once instead of retried; refused connections and rate limits, which
                           mean nothing was done, are still retried */
};

/* The final answer after any retries. */
struct cg_http_response {
    long status;             /* HTTP status of the last attempt; 0 when dry-run */
    struct cg_buf body;      /* response body, capped at max_body_bytes */
    char *link;              /* Link header value (malloc'ed) or NULL */
    long retry_after_s;      /* Retry-After in seconds, or -1 */
    long ratelimit_remaining; /* x-ratelimit-remaining, or -1 */
    long long ratelimit_reset; /* x-ratelimit-reset (Unix seconds), or -1 */
    int rate_limited;        /* the last answer was a rate limit (403/429 with a limit signal) */
    int attempts;            /* requests made, retries included; 0 when dry-run */
    long waited_ms;          /* total time spent waiting between attempts */
};

/* A reusable client. Fields are private to http.c. */
struct cg_http {
    void *curl; /* CURL handle, created by cg_http_init */
    struct cg_http_options opt;
    double deadline_s; /* CLOCK_MONOTONIC seconds when the deadline passes; 0: none */
    long answers;      /* responses received (any status), for the deadline's message */
};

/* Fills o with the production defaults (10 s connect, 30 s total, 5 attempts, 1 s backoff base,
 * 60 s longest wait, 120 s budget, no overall deadline, 32 MiB bodies). Allocates nothing. */
void cg_http_options_default(struct cg_http_options *o);

/* Applies the overrides in the environment to o: CANARY_GATE_HTTP_BACKOFF_MS,
 * CANARY_GATE_HTTP_MAX_WAIT_MS, CANARY_GATE_HTTP_BUDGET_MS, CANARY_GATE_HTTP_ATTEMPTS,
 * CANARY_GATE_HTTP_TIMEOUT_MS. Returns 0, or CG_EINPUT naming a variable that is not a
 * non-negative integer (attempts: 1 to 20). */
int cg_http_options_env(struct cg_http_options *o, struct cg_err *err);

/* Creates the client's curl handle and copies opt. Returns 0 or CG_ENOMEM/CG_ENET. Release with
 * cg_http_release. */
int cg_http_init(struct cg_http *h, const struct cg_http_options *opt, struct cg_err *err);

/* Frees the client's handle; safe on a client whose init failed or that was zeroed. */
void cg_http_release(struct cg_http *h);

/* Sets an empty response (capped at max_body_bytes). Allocates nothing. */
void cg_http_response_init(struct cg_http_response *r, size_t max_body_bytes);

/* Frees a response's body and Link value; the response can be reused after cg_http_response_init. */
void cg_http_response_release(struct cg_http_response *r);

/* Sends req, retrying as described above, and fills resp (which must be initialised; its previous
 * contents are replaced). Returns 0 whenever an HTTP answer arrived, whatever its status (the caller
 * judges the status); in dry-run mode returns 0 with status 0 after tracing. Returns CG_ENET when no
 * answer arrived (connection, timeout) after all attempts or before the deadline (the message
 * names the deadline), CG_ENOMEM when the body passed its cap,
 * CG_EINPUT for a malformed request. err names the host, never the token. */
int cg_http_send(struct cg_http *h, const struct cg_http_request *req,
                 struct cg_http_response *resp, struct cg_err *err);

/* Reads one response header line of len bytes (with or without its CRLF) into r: Link,
 * Retry-After, x-ratelimit-remaining and x-ratelimit-reset; a status line ("HTTP/...") clears
 * what an earlier response of the attempt set; other headers are ignored. Pure. */
void cg_http_response_header(struct cg_http_response *r, const char *line, size_t len);

/* Writes req as dry-run text (method and URL, headers with the token as "<redacted>", blank line,
 * body) to out. Returns 0 or CG_ENOMEM. */
int cg_http_format_request(const struct cg_http *h, const struct cg_http_request *req,
                           struct cg_buf *out);

#endif
