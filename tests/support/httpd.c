/*
 * httpd: a scriptable HTTP/1.1 test server with a small GitHub API emulation (see httpd.h).
 *
 * One server thread accepts connections on 127.0.0.1, reads one request per connection
 * (Content-Length bodies; "Expect: 100-continue" is honoured), answers it and closes. A mutex
 * guards the queue, the log and the emulated repository. Tests only: allocation failure aborts.
 */
#include "httpd.h"

#include <cjson/cJSON.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_HEAD 65536
#define MAX_BODY (16 << 20)

struct canned {
    int status;
    long delay_ms;
    char *headers;
    char *body;
};

struct comment {
    long long id;
    char *body;
    char *login; /* NULL: the Actions bot */
};

struct check_run {
    long long id;
    char *sha, *name, *external_id; /* as created (external_id "" when none) */
    char *body;                     /* the last create or update request's body */
};

struct cg_httpd {
    int listen_fd;
    int wake[2];
    pthread_t thread;
    pthread_mutex_t mu;
    char url[64];
    int running;

    struct canned *queue;
    size_t queue_len, queue_head;

    struct cg_httpd_request **log;
    size_t log_len;

    char repo[256];
    long pr;
    char *token;
    int max_per_page;
    struct comment *comments;
    size_t n_comments;
    char *token_user; /* GET /user's login, NULL: 403 */
    long long next_id;
    char **statuses;
    size_t n_statuses;
    struct check_run *check_runs;
    size_t n_check_runs;
};

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL)
        abort();
    return p;
}

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (p == NULL)
        abort();
    return p;
}

static char *xstrndup(const char *s, size_t n)
{
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

static char *xstrdup(const char *s)
{
    return s ? xstrndup(s, strlen(s)) : NULL;
}

/* ---- output --------------------------------------------------------------------------------- */

static int send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static const char *reason(int status)
{
    switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    default: return "Status";
    }
}

static void respond(int fd, int status, const char *headers, const char *body)
{
    size_t blen = body ? strlen(body) : 0;
    size_t cap = 256 + (headers ? strlen(headers) : 0);
    char *head = xmalloc(cap);
    int n = snprintf(head, cap,
                     "HTTP/1.1 %d %s\r\nContent-Length: %zu\r\nContent-Type: application/json; "
                     "charset=utf-8\r\nConnection: close\r\n%s\r\n",
                     status, reason(status), blen, headers ? headers : "");
    if (n > 0 && (size_t)n < cap && send_all(fd, head, (size_t)n) == 0 && blen > 0)
        send_all(fd, body, blen);
    free(head);
}

/* ---- reading a request ---------------------------------------------------------------------- */

static int wait_readable(int fd, int ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    int r;
    do
        r = poll(&p, 1, ms);
    while (r < 0 && errno == EINTR);
    return r > 0 ? 0 : -1;
}

const char *cg_httpd_header(const struct cg_httpd_request *r, const char *name, char *out,
                            size_t size)
{
    size_t nl = strlen(name);
    const char *p = r->headers;
    while (p != NULL && *p) {
        const char *eol = strstr(p, "\r\n");
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        if (len > nl && p[nl] == ':' && strncasecmp(p, name, nl) == 0) {
            const char *v = p + nl + 1;
            while (*v == ' ')
                v++;
            size_t vl = len - (size_t)(v - p);
            if (vl >= size)
                vl = size - 1;
            memcpy(out, v, vl);
            out[vl] = '\0';
            return out;
        }
        p = eol ? eol + 2 : NULL;
    }
    return NULL;
}

static void request_free(struct cg_httpd_request *r)
{
    if (r == NULL)
        return;
    free(r->target);
    free(r->headers);
    free(r->body);
    free(r);
}

/* Reads one request from fd; returns NULL when the peer sent nothing usable. */
static struct cg_httpd_request *read_request(int fd)
{
    char *buf = xmalloc(MAX_HEAD + 1);
    size_t len = 0;
    char *end = NULL;
    struct cg_httpd_request *r = NULL;
    while (end == NULL) {
        if (len >= MAX_HEAD || wait_readable(fd, 5000) != 0)
            goto fail;
        ssize_t n = recv(fd, buf + len, MAX_HEAD - len, 0);
        if (n <= 0)
            goto fail;
        len += (size_t)n;
        buf[len] = '\0';
        end = strstr(buf, "\r\n\r\n");
    }
    r = xmalloc(sizeof(*r));
    memset(r, 0, sizeof(*r));
    char *line_end = strstr(buf, "\r\n");
    char *sp1 = memchr(buf, ' ', (size_t)(line_end - buf));
    char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(line_end - sp1 - 1)) : NULL;
    if (sp1 == NULL || sp2 == NULL || (size_t)(sp1 - buf) >= sizeof(r->method))
        goto fail;
    memcpy(r->method, buf, (size_t)(sp1 - buf));
    r->target = xstrndup(sp1 + 1, (size_t)(sp2 - sp1 - 1));
    r->headers = xstrndup(line_end + 2, (size_t)(end + 2 - (line_end + 2)));
    char value[64];
    size_t want = 0;
    if (cg_httpd_header(r, "Content-Length", value, sizeof(value)) != NULL)
        want = strtoul(value, NULL, 10);
    if (want > MAX_BODY)
        goto fail;
    if (cg_httpd_header(r, "Expect", value, sizeof(value)) != NULL &&
        strcasecmp(value, "100-continue") == 0)
        send_all(fd, "HTTP/1.1 100 Continue\r\n\r\n", 25);
    r->body = xmalloc(want + 1);
    size_t have = len - (size_t)(end + 4 - buf);
    if (have > want)
        have = want;
    memcpy(r->body, end + 4, have);
    while (have < want) {
        if (wait_readable(fd, 5000) != 0)
            goto fail;
        ssize_t n = recv(fd, r->body + have, want - have, 0);
        if (n <= 0)
            goto fail;
        have += (size_t)n;
    }
    r->body[want] = '\0';
    r->body_len = want;
    free(buf);
    return r;
fail:
    free(buf);
    request_free(r);
    return NULL;
}

/* ---- the GitHub emulation ------------------------------------------------------------------- */

static char *json_error(const char *message)
{
    size_t n = strlen(message) + 64;
    char *s = xmalloc(n);
    snprintf(s, n, "{\"message\":\"%s\",\"documentation_url\":\"https://docs.github.com\"}",
             message);
    return s;
}

/* GitHub's limit on a comment body, counted in UTF-16 code units (a character above U+FFFF is
 * two): the stricter of the ways GitHub may count its 65,536 "characters". */
#define GITHUB_BODY_MAX_UNITS 65536

/* Whether a comment body is over GitHub's limit (GITHUB_BODY_MAX_UNITS). */
static int body_too_long(const char *body)
{
    size_t units = 0;
    for (const unsigned char *p = (const unsigned char *)body; *p != '\0'; p++)
        units += ((*p & 0xC0) != 0x80) + (*p >= 0xF0);
    return units > GITHUB_BODY_MAX_UNITS;
}

/* GitHub's answer to a body over its limit. */
static char *body_too_long_error(void)
{
    return xstrdup("{\"message\":\"Validation Failed\",\"errors\":[{\"resource\":"
                   "\"IssueComment\",\"code\":\"custom\",\"field\":\"body\",\"message\":"
                   "\"body is too long (maximum is 65536 characters)\"}],"
                   "\"documentation_url\":\"https://docs.github.com\"}");
}

static char *comment_json(const struct cg_httpd *s, const struct comment *c, int pretty)
{
    cJSON *o = cJSON_CreateObject();
    char html[512];
    snprintf(html, sizeof(html), "https://github.com/%s/pull/%ld#issuecomment-%lld", s->repo,
             s->pr, c->id);
    cJSON_AddNumberToObject(o, "id", (double)c->id);
    cJSON_AddStringToObject(o, "html_url", html);
    cJSON_AddStringToObject(o, "body", c->body);
    cJSON *user = cJSON_AddObjectToObject(o, "user");
    cJSON_AddStringToObject(user, "login", c->login != NULL ? c->login : "github-actions[bot]");
    cJSON_AddStringToObject(user, "type", c->login != NULL ? "User" : "Bot");
    char *text = pretty ? cJSON_Print(o) : cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (text == NULL)
        abort();
    return text;
}

static long query_long(const char *target, const char *key, long dflt)
{
    const char *q = strchr(target, '?');
    size_t kl = strlen(key);
    while (q != NULL) {
        q++;
        if (strncmp(q, key, kl) == 0 && q[kl] == '=')
            return strtol(q + kl + 1, NULL, 10);
        q = strchr(q, '&');
    }
    return dflt;
}

/* Copies query parameter key of target, percent-decoded, into out; returns out or NULL. */
static const char *query_string(const char *target, const char *key, char *out, size_t size)
{
    const char *q = strchr(target, '?');
    size_t kl = strlen(key);
    while (q != NULL) {
        q++;
        if (strncmp(q, key, kl) == 0 && q[kl] == '=') {
            size_t k = 0;
            for (const char *v = q + kl + 1; *v != '\0' && *v != '&' && k + 1 < size; v++) {
                unsigned hex = 0;
                if (*v == '%' && sscanf(v + 1, "%2x", &hex) == 1) {
                    out[k++] = (char)hex;
                    v += 2;
                } else {
                    out[k++] = *v;
                }
            }
            out[k] = '\0';
            return out;
        }
        q = strchr(q, '&');
    }
    return NULL;
}

static char *check_run_json(const struct cg_httpd *s, const struct check_run *c)
{
    cJSON *o = cJSON_Parse(c->body);
    char html[512];
    if (o == NULL)
        o = cJSON_CreateObject();
    snprintf(html, sizeof(html), "https://github.com/%s/runs/%lld", s->repo, c->id);
    cJSON_DeleteItemFromObjectCaseSensitive(o, "head_sha");
    cJSON_DeleteItemFromObjectCaseSensitive(o, "name");
    cJSON_DeleteItemFromObjectCaseSensitive(o, "external_id");
    cJSON_AddNumberToObject(o, "id", (double)c->id);
    cJSON_AddStringToObject(o, "head_sha", c->sha);
    cJSON_AddStringToObject(o, "name", c->name);
    cJSON_AddStringToObject(o, "external_id", c->external_id);
    cJSON_AddStringToObject(o, "html_url", html);
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (text == NULL)
        abort();
    return text;
}

/* The Checks API: list a commit's check runs by name (paged as comments are), create, update.
 * Returns 1 when it served the request. */
static int check_runs(struct cg_httpd *s, const struct cg_httpd_request *r, const char *path,
                      const char *rest, int *status, char **headers, char **body)
{
    char name[256];
    size_t rl = strlen(rest);
    if (strncmp(rest, "commits/", 8) == 0 && rl > 19 &&
        strcmp(rest + rl - 11, "/check-runs") == 0 && strcmp(r->method, "GET") == 0) {
        char sha[128];
        snprintf(sha, sizeof(sha), "%.*s", (int)(rl - 19), rest + 8);
        const char *want = query_string(r->target, "check_name", name, sizeof(name));
        long per = query_long(r->target, "per_page", 30), page = query_long(r->target, "page", 1);
        if (per > s->max_per_page)
            per = s->max_per_page;
        cJSON *out = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(out, "check_runs");
        long total = 0;
        for (size_t i = 0; i < s->n_check_runs; i++) {
            const struct check_run *c = &s->check_runs[i];
            if (strcmp(c->sha, sha) != 0 || (want != NULL && strcmp(c->name, want) != 0))
                continue;
            if (total >= (page - 1) * per && total < page * per) {
                char *one = check_run_json(s, c);
                cJSON_AddItemToArray(arr, cJSON_Parse(one));
                free(one);
            }
            total++;
        }
        cJSON_AddNumberToObject(out, "total_count", (double)total);
        *body = cJSON_PrintUnformatted(out);
        cJSON_Delete(out);
        *headers = xmalloc(4096);
        (*headers)[0] = '\0';
        if (page * per < total)
            snprintf(*headers, 4096, "Link: <%s%s?check_name=%s&per_page=%ld&page=%ld>; "
                                     "rel=\"next\"\r\n",
                     s->url, path, want != NULL ? want : "", per, page + 1);
        *status = 200;
        return 1;
    }
    int create = strcmp(rest, "check-runs") == 0 && strcmp(r->method, "POST") == 0;
    int update = strncmp(rest, "check-runs/", 11) == 0 && strcmp(r->method, "PATCH") == 0;
    if (!create && !update)
        return 0;
    cJSON *in = cJSON_Parse(r->body);
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(in, "name");
    const cJSON *sha = cJSON_GetObjectItemCaseSensitive(in, "head_sha");
    const cJSON *ext = cJSON_GetObjectItemCaseSensitive(in, "external_id");
    struct check_run *c = NULL;
    if (create && cJSON_IsString(n) && cJSON_IsString(sha)) {
        s->check_runs = xrealloc(s->check_runs, (s->n_check_runs + 1) * sizeof(*s->check_runs));
        c = &s->check_runs[s->n_check_runs++];
        c->id = s->next_id++;
        c->sha = xstrdup(sha->valuestring);
        c->name = xstrdup(n->valuestring);
        c->external_id = xstrdup(cJSON_IsString(ext) ? ext->valuestring : "");
        c->body = NULL;
    }
    for (size_t i = 0; update && i < s->n_check_runs; i++)
        if (s->check_runs[i].id == strtoll(rest + 11, NULL, 10))
            c = &s->check_runs[i];
    cJSON_Delete(in);
    if (c == NULL) {
        *status = update ? 404 : 422;
        *body = json_error(update ? "Not Found" : "Validation Failed");
        return 1;
    }
    free(c->body);
    c->body = xstrdup(r->body);
    *status = create ? 201 : 200;
    *body = check_run_json(s, c);
    return 1;
}

/* Serves a GitHub API request from the emulated repository; fills status/headers/body. */
static void github(struct cg_httpd *s, const struct cg_httpd_request *r, int *status,
                   char **headers, char **body)
{
    char path[1024], prefix[400], auth[512];
    size_t pl = strcspn(r->target, "?");
    if (pl >= sizeof(path))
        pl = sizeof(path) - 1;
    memcpy(path, r->target, pl);
    path[pl] = '\0';
    if (s->token != NULL) {
        char want[512];
        snprintf(want, sizeof(want), "Bearer %s", s->token);
        if (cg_httpd_header(r, "Authorization", auth, sizeof(auth)) == NULL ||
            strcmp(auth, want) != 0) {
            *status = 401;
            *body = json_error("Bad credentials");
            return;
        }
    }
    if (strcmp(path, "/user") == 0 && strcmp(r->method, "GET") == 0) {
        if (s->token_user == NULL) {
            *status = 403;
            *body = json_error("Resource not accessible by integration");
        } else {
            char text[300];
            snprintf(text, sizeof(text), "{\"login\":\"%s\",\"type\":\"User\"}", s->token_user);
            *status = 200;
            *body = xstrdup(text);
        }
        return;
    }
    snprintf(prefix, sizeof(prefix), "/repos/%s/", s->repo);
    if (s->repo[0] == '\0' || strncmp(path, prefix, strlen(prefix)) != 0) {
        *status = 404;
        *body = json_error("Not Found");
        return;
    }
    const char *rest = path + strlen(prefix);
    char want_list[64];
    snprintf(want_list, sizeof(want_list), "issues/%ld/comments", s->pr);
    if (strcmp(rest, want_list) == 0 && strcmp(r->method, "GET") == 0) {
        long per = query_long(r->target, "per_page", 30);
        long page = query_long(r->target, "page", 1);
        if (per > s->max_per_page)
            per = s->max_per_page;
        if (per < 1)
            per = 1;
        long pages = ((long)s->n_comments + per - 1) / per;
        if (pages < 1)
            pages = 1;
        cJSON *arr = cJSON_CreateArray();
        for (long i = (page - 1) * per; i >= 0 && i < page * per && (size_t)i < s->n_comments; i++) {
            char *one = comment_json(s, &s->comments[i], 0);
            cJSON_AddItemToArray(arr, cJSON_Parse(one));
            free(one);
        }
        *body = cJSON_PrintUnformatted(arr);
        cJSON_Delete(arr);
        size_t hcap = 4096;
        *headers = xmalloc(hcap);
        (*headers)[0] = '\0';
        if (page < pages)
            snprintf(*headers, hcap,
                     "Link: <%s%s?per_page=%ld&page=%ld>; rel=\"next\", "
                     "<%s%s?per_page=%ld&page=%ld>; rel=\"last\"\r\n",
                     s->url, path, per, page + 1, s->url, path, per, pages);
        else if (page > 1)
            snprintf(*headers, hcap,
                     "Link: <%s%s?per_page=%ld&page=%ld>; rel=\"prev\", "
                     "<%s%s?per_page=%ld&page=1>; rel=\"first\"\r\n",
                     s->url, path, per, page - 1, s->url, path, per);
        *status = 200;
        return;
    }
    if (strcmp(rest, want_list) == 0 && strcmp(r->method, "POST") == 0) {
        cJSON *in = cJSON_Parse(r->body);
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(in, "body");
        if (!cJSON_IsString(b)) {
            cJSON_Delete(in);
            *status = 422;
            *body = json_error("Validation Failed");
            return;
        }
        if (body_too_long(b->valuestring)) {
            cJSON_Delete(in);
            *status = 422;
            *body = body_too_long_error();
            return;
        }
        s->comments = xrealloc(s->comments, (s->n_comments + 1) * sizeof(*s->comments));
        struct comment *c = &s->comments[s->n_comments++];
        c->id = s->next_id++;
        c->body = xstrdup(b->valuestring);
        c->login = s->token_user != NULL ? xstrdup(s->token_user) : NULL;
        cJSON_Delete(in);
        *status = 201;
        *body = comment_json(s, c, 1);
        return;
    }
    if (strncmp(rest, "issues/comments/", 16) == 0 && strcmp(r->method, "PATCH") == 0) {
        long long id = strtoll(rest + 16, NULL, 10);
        for (size_t i = 0; i < s->n_comments; i++) {
            if (s->comments[i].id != id)
                continue;
            cJSON *in = cJSON_Parse(r->body);
            const cJSON *b = cJSON_GetObjectItemCaseSensitive(in, "body");
            if (!cJSON_IsString(b)) {
                cJSON_Delete(in);
                *status = 422;
                *body = json_error("Validation Failed");
                return;
            }
            if (body_too_long(b->valuestring)) {
                cJSON_Delete(in);
                *status = 422;
                *body = body_too_long_error();
                return;
            }
            free(s->comments[i].body);
            s->comments[i].body = xstrdup(b->valuestring);
            cJSON_Delete(in);
            *status = 200;
            *body = comment_json(s, &s->comments[i], 1);
            return;
        }
    }
    if (check_runs(s, r, path, rest, status, headers, body))
        return;
    if (strncmp(rest, "statuses/", 9) == 0 && strcmp(r->method, "POST") == 0) {
        size_t n = strlen(rest + 9) + r->body_len + 2;
        char *rec = xmalloc(n);
        snprintf(rec, n, "%s %s", rest + 9, r->body);
        s->statuses = xrealloc(s->statuses, (s->n_statuses + 1) * sizeof(*s->statuses));
        s->statuses[s->n_statuses++] = rec;
        *status = 201;
        *body = xstrdup(r->body);
        return;
    }
    *status = 404;
    *body = json_error("Not Found");
}

/* ---- the thread ----------------------------------------------------------------------------- */

static void serve(struct cg_httpd *s, int fd)
{
    struct cg_httpd_request *r = read_request(fd);
    if (r == NULL)
        return;
    int status = 0;
    char *headers = NULL, *body = NULL;
    long delay = 0;
    pthread_mutex_lock(&s->mu);
    s->log = xrealloc(s->log, (s->log_len + 1) * sizeof(*s->log));
    s->log[s->log_len++] = r;
    if (s->queue_head < s->queue_len) {
        struct canned *c = &s->queue[s->queue_head++];
        status = c->status;
        delay = c->delay_ms;
        headers = xstrdup(c->headers);
        body = xstrdup(c->body);
    } else {
        github(s, r, &status, &headers, &body);
    }
    pthread_mutex_unlock(&s->mu);
    if (delay > 0) {
        struct timespec ts = {delay / 1000, (delay % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
    }
    respond(fd, status, headers, body);
    free(headers);
    free(body);
}

static void *run(void *arg)
{
    struct cg_httpd *s = arg;
    for (;;) {
        struct pollfd p[2] = {{s->listen_fd, POLLIN, 0}, {s->wake[0], POLLIN, 0}};
        int r = poll(p, 2, -1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 || (p[1].revents & POLLIN))
            break;
        int fd = accept(s->listen_fd, NULL, NULL);
        if (fd < 0)
            continue;
        serve(s, fd);
        shutdown(fd, SHUT_WR);
        close(fd);
    }
    return NULL;
}

struct cg_httpd *cg_httpd_start(void)
{
    struct cg_httpd *s = xmalloc(sizeof(*s));
    memset(s, 0, sizeof(*s));
    s->wake[0] = s->wake[1] = -1;
    s->max_per_page = 100;
    s->next_id = 1000;
    pthread_mutex_init(&s->mu, NULL);
    struct sockaddr_in addr;
    socklen_t alen = sizeof(addr);
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    s->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s->listen_fd < 0 || bind(s->listen_fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
        listen(s->listen_fd, 16) != 0 ||
        getsockname(s->listen_fd, (struct sockaddr *)&addr, &alen) != 0 || pipe(s->wake) != 0) {
        fprintf(stderr, "httpd: cannot listen on 127.0.0.1: %s\n", strerror(errno));
        goto fail;
    }
    snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%u", (unsigned)ntohs(addr.sin_port));
    if (pthread_create(&s->thread, NULL, run, s) != 0) {
        fprintf(stderr, "httpd: cannot start the server thread\n");
        goto fail;
    }
    s->running = 1;
    return s;
fail:
    if (s->listen_fd >= 0)
        close(s->listen_fd);
    if (s->wake[0] >= 0) {
        close(s->wake[0]);
        close(s->wake[1]);
    }
    pthread_mutex_destroy(&s->mu);
    free(s);
    return NULL;
}

void cg_httpd_stop(struct cg_httpd *s)
{
    if (s == NULL)
        return;
    if (s->running) {
        ssize_t w;
        do
            w = write(s->wake[1], "x", 1);
        while (w < 0 && errno == EINTR);
        pthread_join(s->thread, NULL);
    }
    close(s->listen_fd);
    close(s->wake[0]);
    close(s->wake[1]);
    for (size_t i = 0; i < s->queue_len; i++) {
        free(s->queue[i].headers);
        free(s->queue[i].body);
    }
    free(s->queue);
    for (size_t i = 0; i < s->log_len; i++)
        request_free(s->log[i]);
    free(s->log);
    for (size_t i = 0; i < s->n_comments; i++) {
        free(s->comments[i].body);
        free(s->comments[i].login);
    }
    free(s->token_user);
    free(s->comments);
    for (size_t i = 0; i < s->n_statuses; i++)
        free(s->statuses[i]);
    free(s->statuses);
    for (size_t i = 0; i < s->n_check_runs; i++) {
        free(s->check_runs[i].sha);
        free(s->check_runs[i].name);
        free(s->check_runs[i].external_id);
        free(s->check_runs[i].body);
    }
    free(s->check_runs);
    free(s->token);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

const char *cg_httpd_url(const struct cg_httpd *s)
{
    return s->url;
}

void cg_httpd_push_delayed(struct cg_httpd *s, long delay_ms, int status, const char *headers,
                           const char *body)
{
    pthread_mutex_lock(&s->mu);
    s->queue = xrealloc(s->queue, (s->queue_len + 1) * sizeof(*s->queue));
    struct canned *c = &s->queue[s->queue_len++];
    c->status = status;
    c->delay_ms = delay_ms;
    c->headers = xstrdup(headers);
    c->body = xstrdup(body);
    pthread_mutex_unlock(&s->mu);
}

void cg_httpd_push(struct cg_httpd *s, int status, const char *headers, const char *body)
{
    cg_httpd_push_delayed(s, 0, status, headers, body);
}

size_t cg_httpd_count(struct cg_httpd *s)
{
    pthread_mutex_lock(&s->mu);
    size_t n = s->log_len;
    pthread_mutex_unlock(&s->mu);
    return n;
}

const struct cg_httpd_request *cg_httpd_request(struct cg_httpd *s, size_t i)
{
    pthread_mutex_lock(&s->mu);
    const struct cg_httpd_request *r = i < s->log_len ? s->log[i] : NULL;
    pthread_mutex_unlock(&s->mu);
    return r;
}

void cg_httpd_github(struct cg_httpd *s, const char *repo, long pr, const char *token,
                     int max_per_page)
{
    pthread_mutex_lock(&s->mu);
    snprintf(s->repo, sizeof(s->repo), "%s", repo);
    s->pr = pr;
    free(s->token);
    s->token = xstrdup(token);
    s->max_per_page = max_per_page > 0 ? max_per_page : 100;
    pthread_mutex_unlock(&s->mu);
}

long long cg_httpd_add_comment_by(struct cg_httpd *s, const char *body, const char *login)
{
    pthread_mutex_lock(&s->mu);
    s->comments = xrealloc(s->comments, (s->n_comments + 1) * sizeof(*s->comments));
    struct comment *c = &s->comments[s->n_comments++];
    c->id = s->next_id++;
    c->body = xstrdup(body);
    c->login = login != NULL ? xstrdup(login) : NULL;
    long long id = c->id;
    pthread_mutex_unlock(&s->mu);
    return id;
}

long long cg_httpd_add_comment(struct cg_httpd *s, const char *body)
{
    return cg_httpd_add_comment_by(s, body, NULL);
}

void cg_httpd_token_user(struct cg_httpd *s, const char *login)
{
    pthread_mutex_lock(&s->mu);
    free(s->token_user);
    s->token_user = login != NULL ? xstrdup(login) : NULL;
    pthread_mutex_unlock(&s->mu);
}

size_t cg_httpd_comment_count(struct cg_httpd *s)
{
    pthread_mutex_lock(&s->mu);
    size_t n = s->n_comments;
    pthread_mutex_unlock(&s->mu);
    return n;
}

char *cg_httpd_comment(struct cg_httpd *s, size_t i, long long *id)
{
    char *body = NULL;
    pthread_mutex_lock(&s->mu);
    if (i < s->n_comments) {
        body = xstrdup(s->comments[i].body);
        if (id != NULL)
            *id = s->comments[i].id;
    }
    pthread_mutex_unlock(&s->mu);
    return body;
}

size_t cg_httpd_status_count(struct cg_httpd *s)
{
    pthread_mutex_lock(&s->mu);
    size_t n = s->n_statuses;
    pthread_mutex_unlock(&s->mu);
    return n;
}

char *cg_httpd_status(struct cg_httpd *s, size_t i)
{
    pthread_mutex_lock(&s->mu);
    char *r = i < s->n_statuses ? xstrdup(s->statuses[i]) : NULL;
    pthread_mutex_unlock(&s->mu);
    return r;
}

long long cg_httpd_add_check_run(struct cg_httpd *s, const char *sha, const char *name,
                                 const char *external_id)
{
    pthread_mutex_lock(&s->mu);
    s->check_runs = xrealloc(s->check_runs, (s->n_check_runs + 1) * sizeof(*s->check_runs));
    struct check_run *c = &s->check_runs[s->n_check_runs++];
    c->id = s->next_id++;
    c->sha = xstrdup(sha);
    c->name = xstrdup(name);
    c->external_id = xstrdup(external_id != NULL ? external_id : "");
    c->body = xstrdup("{\"status\":\"completed\",\"conclusion\":\"success\"}");
    long long id = c->id;
    pthread_mutex_unlock(&s->mu);
    return id;
}

size_t cg_httpd_check_run_count(struct cg_httpd *s)
{
    pthread_mutex_lock(&s->mu);
    size_t n = s->n_check_runs;
    pthread_mutex_unlock(&s->mu);
    return n;
}

char *cg_httpd_check_run(struct cg_httpd *s, size_t i, long long *id)
{
    pthread_mutex_lock(&s->mu);
    char *r = NULL;
    if (i < s->n_check_runs) {
        r = check_run_json(s, &s->check_runs[i]);
        if (id != NULL)
            *id = s->check_runs[i].id;
    }
    pthread_mutex_unlock(&s->mu);
    return r;
}
