/*
 * github: PR comment, commit status and job summary over the GitHub REST API (see github.h);
 * what needs no network (parsing the report, comment bodies, Link headers, the event file and
 * GitHub's answers) is in github_parse.c.
 *
 * Every request goes through cg_http_send, which retries 5xx and rate limits. This file turns the
 * final status into one-line messages: 401 token rejected, 403 the token cannot write (forks),
 * 404 repository or pull request not found, 422 validation failed, rate limits, 5xx. Pagination
 * links are only followed to the API's own origin, so the token never goes to another host.
 * Not thread-safe.
 */
#include "github.h"

#include "github_api.h"

#include <cjson/cJSON.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define GH_MAX_PAGES 500

/* ---- talking to the API --------------------------------------------------------------------- */

static void api_message(const struct cg_http_response *r, char *out, size_t size)
{
    cg_github_api_message(r->body.data, r->body.len, out, size);
}

/* Turns a non-2xx final answer into a one-line message. what says what was being done. */
static int status_error(const struct cg_github *gh, const struct cg_http_response *r,
                        const char *what, const char *missing, struct cg_err *err)
{
    char msg[200];
    api_message(r, msg, sizeof(msg));
    const char *sep = msg[0] ? " " : "";
    if (r->rate_limited) {
        long long wait_s = r->retry_after_s >= 0     ? r->retry_after_s
                           : r->ratelimit_reset >= 0 ? r->ratelimit_reset - (long long)time(NULL)
                                                     : -1;
        if (wait_s >= 0)
            return cg_err_set(err, CG_ENET,
                              "%s: github rate limit reached (%ld), it resets in %lld s; gave up "
                              "after %d attempt%s",
                              what, r->status, wait_s, r->attempts, r->attempts == 1 ? "" : "s");
        return cg_err_set(err, CG_ENET,
                          "%s: github rate limit reached (%ld); gave up after %d attempt%s", what,
                          r->status, r->attempts, r->attempts == 1 ? "" : "s");
    }
    switch (r->status) {
    case 401:
        return cg_err_set(err, CG_ENET,
                          "%s: github rejected the token (401%s%s): check GITHUB_TOKEN", what, sep,
                          msg);
    case 403:
        return cg_err_set(err, CG_ENET,
                          "%s: the token cannot write to '%s' (403%s%s); typical for pull requests "
                          "from forks, whose token is read-only: see \"Pull requests from forks\" "
                          "in docs/github.md",
                          what, gh->repo, sep, msg);
    case 404:
        return cg_err_set(err, CG_ENET, "%s: repository '%s' or %s not found (404)", what, gh->repo,
                          missing);
    case 422:
        return cg_err_set(err, CG_ENET, "%s: github rejected the request (422%s%s)", what, sep,
                          msg);
    default:
        if (r->status >= 500)
            return cg_err_set(
                err, CG_ENET, "%s: github answered %ld %d time%s over %.1f s; giving up", what,
                r->status, r->attempts, r->attempts == 1 ? "" : "s", (double)r->waited_ms / 1000.0);
        return cg_err_set(err, CG_ENET, "%s: github answered %ld%s%s", what, r->status, sep, msg);
    }
}

/* Replaces every occurrence of the token in msg (size bytes) with "<redacted>": a server or proxy
 * that echoes the Authorization header in its answer must not get the token into a log. */
static void redact(char *msg, size_t size, const char *token)
{
    size_t n = token != NULL ? strlen(token) : 0;
    char out[CG_ERR_MSG_MAX];
    size_t k = 0;
    if (n < 4 || strstr(msg, token) == NULL)
        return;
    for (const char *p = msg; *p != '\0' && k + 1 < sizeof(out);) {
        if (strncmp(p, token, n) == 0) {
            int w = snprintf(out + k, sizeof(out) - k, "<redacted>");
            k = w < 0 || (size_t)w >= sizeof(out) - k ? sizeof(out) - 1 : k + (size_t)w;
            p += n;
        } else {
            out[k++] = *p++;
        }
    }
    out[k] = '\0';
    snprintf(msg, size, "%s", out);
}

int cg_github_is_dry(const struct cg_github *gh)
{
    return gh->http->opt.dry_run;
}

/* Sends one request; returns 0 for a 2xx answer (or a dry run), else a message. */
int cg_github_call(struct cg_github *gh, const char *method, const char *url, const char *body,
                   int once, struct cg_http_response *resp, const char *what, const char *missing,
                   struct cg_err *err)
{
    struct cg_http_request req = {method, url, gh->token, body, once};
    char sub[CG_ERR_MSG_MAX];
    struct cg_err e;
    cg_err_init(&e);
    int rc = cg_http_send(gh->http, &req, resp, &e);
    if (rc != 0) {
        snprintf(sub, sizeof(sub), "%s", e.msg);
        rc = cg_err_set(err, rc, "%s: %s", what, sub);
    } else if (cg_github_is_dry(gh) || (resp->status >= 200 && resp->status < 300)) {
        return 0;
    } else {
        rc = status_error(gh, resp, what, missing, err);
    }
    if (err != NULL)
        redact(err->msg, sizeof(err->msg), gh->token);
    return rc;
}

/* Is url on the API's own origin (scheme, host and port)? */
int cg_github_same_origin(const char *api, const char *url)
{
    const char *h = strstr(api, "://");
    if (h == NULL)
        return 0;
    size_t n = (size_t)(h + 3 - api) + strcspn(h + 3, "/?#");
    return strncmp(api, url, n) == 0 && (url[n] == '/' || url[n] == '\0');
}

int cg_github_api_base(const struct cg_github *gh, struct cg_buf *url)
{
    size_t n = strlen(gh->api_url);
    while (n > 0 && gh->api_url[n - 1] == '/')
        n--;
    return cg_buf_add(url, gh->api_url, n);
}

/* Scans one page of comments for marker. */
static int scan_page(const struct cg_http_response *r, const char *marker, const char *own,
                     long long *found, size_t *foreign, const char *what, struct cg_err *err)
{
    if (cg_github_comments_scan(r->body.data, r->body.len, marker, own, found, foreign) != 0)
        return cg_err_set(err, CG_ENET, "%s: github's answer is not a list of comments", what);
    return 0;
}

/* The login of the token's user (GET /user: a personal token's) into login; "" when GitHub does
 * not say (an Actions or app token is refused there: its comments are a bot's). */
static void token_login(struct cg_github *gh, char *login, size_t cap)
{
    struct cg_http_response resp;
    struct cg_buf url;
    struct cg_err ignored;
    login[0] = '\0';
    cg_err_init(&ignored);
    cg_http_response_init(&resp, gh->http->opt.max_body_bytes);
    cg_buf_init(&url, 8192);
    if (cg_github_api_base(gh, &url) == 0 && cg_buf_adds(&url, "/user") == 0 &&
        cg_github_call(gh, "GET", cg_buf_str(&url), NULL, 0, &resp, "cannot ask who the token is",
                       "the token's user", &ignored) == 0 &&
        !cg_github_is_dry(gh)) {
        cJSON *root = cJSON_ParseWithLength(resp.body.data ? resp.body.data : "", resp.body.len);
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(root, "login");
        if (cJSON_IsString(l) && strlen(l->valuestring) < cap)
            snprintf(login, cap, "%s", l->valuestring);
        cJSON_Delete(root);
    }
    cg_buf_release(&url);
    cg_http_response_release(&resp);
}

static int find_as(struct cg_github *gh, long pr, const char *marker, const char *own,
                   long long *comment_id, size_t *foreign, struct cg_err *err);

int cg_github_comment_find(struct cg_github *gh, long pr, const char *marker, long long *comment_id,
                           struct cg_err *err)
{
    size_t foreign = 0;
    int rc = find_as(gh, pr, marker, NULL, comment_id, &foreign, err);
    if (rc != 0 || *comment_id != 0 || foreign == 0)
        return rc;
    /* a user's comment bears the marker: the gate's own only when the token is that user's */
    char login[256];
    token_login(gh, login, sizeof(login));
    if (login[0] == '\0')
        return 0;
    return find_as(gh, pr, marker, login, comment_id, &foreign, err);
}

/* The first marker comment by a bot or by own (NULL: none), every page; *foreign counts the
 * others'. */
static int find_as(struct cg_github *gh, long pr, const char *marker, const char *own,
                   long long *comment_id, size_t *foreign, struct cg_err *err)
{
    struct cg_http_response resp;
    struct cg_buf url;
    char what[400];
    char missing[64];
    char *next = NULL;
    int rc = 0;

    *comment_id = 0;
    cg_http_response_init(&resp, gh->http->opt.max_body_bytes);
    cg_buf_init(&url, 8192);
    snprintf(what, sizeof(what), "cannot list the comments of '%s#%ld'", gh->repo, pr);
    snprintf(missing, sizeof(missing), "pull request #%ld", pr);
    if (cg_github_api_base(gh, &url) != 0 ||
        cg_buf_printf(&url, "/repos/%s/issues/%ld/comments?per_page=100", gh->repo, pr) != 0) {
        rc = cg_err_set(err, CG_ENOMEM, "%s: URL too long", what);
        goto done;
    }
    for (int page = 1;; page++) {
        if ((rc = cg_github_call(gh, "GET", cg_buf_str(&url), NULL, 0, &resp, what, missing,
                                 err)) != 0)
            goto done;
        if (cg_github_is_dry(gh))
            goto done; /* nothing was sent: no comment is known */
        if ((rc = scan_page(&resp, marker, own, comment_id, foreign, what, err)) != 0 ||
            *comment_id != 0)
            goto done;
        free(next);
        next = NULL;
        int has = cg_github_link_next(resp.link, &next);
        if (has < 0) {
            rc = cg_err_set(err, CG_ENOMEM, "%s: out of memory", what);
            goto done;
        }
        if (has == 0)
            goto done;
        if (!cg_github_same_origin(gh->api_url, next)) {
            rc = cg_err_set(err, CG_ENET, "%s: the next page is on another host; not following it",
                            what);
            goto done;
        }
        if (page >= GH_MAX_PAGES) {
            rc = cg_err_set(err, CG_ENET, "%s: more than %d pages of comments", what, GH_MAX_PAGES);
            goto done;
        }
        cg_buf_reset(&url);
        if (cg_buf_adds(&url, next) != 0) {
            rc = cg_err_set(err, CG_ENOMEM, "%s: the next page's URL is too long", what);
            goto done;
        }
    }
done:
    free(next);
    cg_buf_release(&url);
    cg_http_response_release(&resp);
    return rc;
}

/* Reads id and html_url from a created or updated comment. */
static void read_comment(const struct cg_http_response *r, struct cg_github_comment_result *res)
{
    cJSON *root = cJSON_ParseWithLength(r->body.data ? r->body.data : "", r->body.len);
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(root, "id");
    const cJSON *url = cJSON_GetObjectItemCaseSensitive(root, "html_url");
    if (cg_github_json_id(id))
        res->comment_id = (long long)id->valuedouble;
    if (cJSON_IsString(url) && strlen(url->valuestring) < sizeof(res->html_url))
        memcpy(res->html_url, url->valuestring, strlen(url->valuestring) + 1);
    cJSON_Delete(root);
}

/* PATCHes comment id with the JSON text. */
static int update_comment(struct cg_github *gh, long pr, long long id, const char *text,
                          struct cg_http_response *resp, struct cg_err *err)
{
    struct cg_buf url;
    char what[400];
    char missing[64];
    int rc = 0;
    cg_buf_init(&url, 8192);
    snprintf(what, sizeof(what), "cannot update comment %lld on '%s#%ld'", id, gh->repo, pr);
    snprintf(missing, sizeof(missing), "comment %lld", id);
    if (cg_github_api_base(gh, &url) != 0 ||
        cg_buf_printf(&url, "/repos/%s/issues/comments/%lld", gh->repo, id) != 0)
        rc = cg_err_set(err, CG_ENOMEM, "%s: URL too long", what);
    else
        rc = cg_github_call(gh, "PATCH", cg_buf_str(&url), text, 0, resp, what, missing, err);
    cg_buf_release(&url);
    return rc;
}

/* POSTs a new comment. A create is not blindly repeated: after a 5xx or a lost answer the
 * comment may exist, so the marker is looked up again and the comment updated if it is there. */
static int create_comment(struct cg_github *gh, long pr, const char *marker, const char *text,
                          struct cg_http_response *resp, long long *created, struct cg_err *err)
{
    struct cg_buf url;
    char what[400];
    char missing[64];
    int rc = 0;
    cg_buf_init(&url, 8192);
    *created = 0;
    snprintf(what, sizeof(what), "cannot create the comment on '%s#%ld'", gh->repo, pr);
    snprintf(missing, sizeof(missing), "pull request #%ld", pr);
    if (cg_github_api_base(gh, &url) != 0 ||
        cg_buf_printf(&url, "/repos/%s/issues/%ld/comments", gh->repo, pr) != 0) {
        rc = cg_err_set(err, CG_ENOMEM, "%s: URL too long", what);
        goto done;
    }
    for (int attempt = 1;; attempt++) {
        rc = cg_github_call(gh, "POST", cg_buf_str(&url), text, 1, resp, what, missing, err);
        if (rc == 0)
            goto done;
        int unsure = rc == CG_ENET && (resp->status == 0 || resp->status >= 500);
        if (!unsure || attempt >= gh->http->opt.max_attempts)
            goto done;
        struct cg_err again;
        cg_err_init(&again);
        long long found = 0;
        if (cg_github_comment_find(gh, pr, marker, &found, &again) != 0)
            goto done; /* keep the create's message */
        if (found != 0) {
            *created = found;
            rc = update_comment(gh, pr, found, text, resp, err);
            goto done;
        }
    }
done:
    cg_buf_release(&url);
    return rc;
}

int cg_github_comment_publish(struct cg_github *gh, long pr, const char *id, const char *body,
                              enum cg_github_mode mode, enum cg_github_verdict verdict,
                              struct cg_github_comment_result *res, struct cg_err *err)
{
    struct cg_http_response resp;
    cJSON *json = NULL;
    char *text = NULL;
    char marker[CG_GITHUB_ID_MAX + 32];
    long long existing = 0;
    int rc = 0;

    memset(res, 0, sizeof(*res));
    cg_http_response_init(&resp, gh->http->opt.max_body_bytes);
    if (mode == CG_GITHUB_MODE_NEVER)
        goto done;
    if (cg_github_marker(id, marker, sizeof(marker)) != 0) {
        rc = cg_err_set(err, CG_EINPUT, "gate id '%s' is too long", id);
        goto done;
    }
    if ((rc = cg_github_comment_find(gh, pr, marker, &existing, err)) != 0)
        goto done;
    int regressed = verdict == CG_GITHUB_FAIL || verdict == CG_GITHUB_INCONCLUSIVE ||
                    verdict == CG_GITHUB_ERROR;
    if (existing == 0 && mode == CG_GITHUB_MODE_ON_REGRESSION && !regressed)
        goto done;
    json = cJSON_CreateObject();
    if (json == NULL || cJSON_AddStringToObject(json, "body", body) == NULL ||
        (text = cJSON_PrintUnformatted(json)) == NULL) {
        rc = cg_err_set(err, CG_ENOMEM, "cannot build the comment request");
        goto done;
    }
    if (existing != 0) {
        rc = update_comment(gh, pr, existing, text, &resp, err);
        if (rc == CG_ENET && resp.status == 404) {
            /* deleted between the listing and the update: the verdict still needs a comment */
            cg_err_init(err);
            existing = 0;
        } else if (rc != 0) {
            goto done;
        } else {
            res->action = CG_GITHUB_UPDATED;
            res->comment_id = existing;
        }
    }
    if (existing == 0) {
        if ((rc = create_comment(gh, pr, marker, text, &resp, &res->comment_id, err)) != 0)
            goto done;
        res->action = CG_GITHUB_CREATED;
    }
    if (!cg_github_is_dry(gh))
        read_comment(&resp, res);
done:
    cJSON_free(text);
    cJSON_Delete(json);
    cg_http_response_release(&resp);
    return rc;
}

int cg_github_status_set(struct cg_github *gh, const char *sha, const char *id,
                         enum cg_github_verdict verdict, const char *target_url, struct cg_err *err)
{
    return cg_github_status_set_reason(gh, sha, id, verdict, NULL, target_url, err);
}

int cg_github_status_set_reason(struct cg_github *gh, const char *sha, const char *id,
                                enum cg_github_verdict verdict, const char *reason,
                                const char *target_url, struct cg_err *err)
{
    struct cg_http_response resp;
    struct cg_buf url;
    cJSON *json = NULL;
    char *text = NULL;
    char context[CG_GITHUB_ID_MAX + 32];
    char what[400];
    char missing[100];
    char desc[CG_GITHUB_REASON_MAX + 64];
    int rc = 0;

    cg_http_response_init(&resp, gh->http->opt.max_body_bytes);
    cg_buf_init(&url, 8192);
    snprintf(what, sizeof(what), "cannot set the commit status of '%s@%.12s'", gh->repo, sha);
    snprintf(missing, sizeof(missing), "commit '%.40s'", sha);
    if ((rc = cg_github_sha_check(sha, err)) != 0)
        goto done;
    if (verdict < CG_GITHUB_PASS || verdict > CG_GITHUB_RECORDED) {
        rc = cg_err_set(err, CG_EINPUT, "%s: no verdict to report", what);
        goto done;
    }
    const char *state = cg_github_status_of(verdict, reason, desc, sizeof(desc));
    cg_github_context(id, context, sizeof(context));
    json = cJSON_CreateObject();
    if (json == NULL || cJSON_AddStringToObject(json, "state", state) == NULL ||
        cJSON_AddStringToObject(json, "context", context) == NULL ||
        cJSON_AddStringToObject(json, "description", desc) == NULL ||
        (target_url != NULL && cJSON_AddStringToObject(json, "target_url", target_url) == NULL) ||
        (text = cJSON_PrintUnformatted(json)) == NULL || cg_github_api_base(gh, &url) != 0 ||
        cg_buf_printf(&url, "/repos/%s/statuses/%s", gh->repo, sha) != 0) {
        rc = cg_err_set(err, CG_ENOMEM, "%s: out of memory", what);
        goto done;
    }
    rc = cg_github_call(gh, "POST", cg_buf_str(&url), text, 0, &resp, what, missing, err);
done:
    cJSON_free(text);
    cJSON_Delete(json);
    cg_buf_release(&url);
    cg_http_response_release(&resp);
    return rc;
}

int cg_github_summary_append(const char *path, const char *text, size_t len, struct cg_err *err)
{
    /* O_NONBLOCK so a FIFO is refused at once (ENXIO with no reader) rather than waited on;
     * cleared again once the file is known to be a regular one. */
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0644);
    int rc = 0;
    struct stat st;
    if (fd < 0 && errno == ENXIO)
        return cg_err_set(err, CG_EINPUT, "cannot use the job summary '%s': not a regular file",
                          path);
    if (fd < 0)
        return cg_err_set(err, CG_EIO, "cannot open the job summary '%s': %s", path,
                          strerror(errno));
    if (fstat(fd, &st) != 0) {
        rc = cg_err_set(err, CG_EIO, "cannot open the job summary '%s': %s", path, strerror(errno));
        goto done;
    }
    if (!S_ISREG(st.st_mode)) {
        rc =
            cg_err_set(err, CG_EINPUT, "cannot use the job summary '%s': not a regular file", path);
        goto done;
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        rc = cg_err_set(err, CG_EIO, "cannot open the job summary '%s': %s", path, strerror(errno));
        goto done;
    }
    const char *p = text;
    size_t left = len;
    int newline = len == 0 || text[len - 1] != '\n';
    while (left > 0 || newline) {
        if (left == 0) {
            p = "\n";
            left = 1;
            newline = 0;
        }
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            rc = cg_err_set(err, CG_EIO, "cannot write the job summary '%s': %s", path,
                            w < 0 ? strerror(errno) : "short write");
            goto done;
        }
        p += w;
        left -= (size_t)w;
    }
done:
    if (close(fd) != 0 && rc == 0)
        rc =
            cg_err_set(err, CG_EIO, "cannot write the job summary '%s': %s", path, strerror(errno));
    return rc;
}
