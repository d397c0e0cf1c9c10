/*
 * github: PR comment, commit status and job summary over the GitHub REST API (see github.h).
 *
 * Every request goes through cg_http_send, which retries 5xx and rate limits. This file turns the
 * final status into one-line messages: 401 token rejected, 403 the token cannot write (forks),
 * 404 repository or pull request not found, 422 validation failed, rate limits, 5xx. Pagination
 * links are only followed to the API's own origin, so the token never goes to another host.
 * Not thread-safe.
 */
#include "github.h"

#include "comment_marker.h"
#include "checkrun.h"
#include "github_api.h"

#include <cjson/cJSON.h>

#include <ctype.h>
#include <math.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define GH_MAX_PAGES 500
#define GH_TRUNCATED_NOTE "\n_The report was cut to fit GitHub's comment limit; the job summary has all of it._\n"
#define GH_CHECK_TRUNCATED_NOTE                                                                    \
    "\n_The report was cut to fit GitHub's limit on a check run's summary; the job summary has "    \
    "all of it._\n"

/* ---- small checks and names ---------------------------------------------------------------- */

enum cg_github_verdict cg_github_verdict_parse(const char *s)
{
    if (s == NULL)
        return CG_GITHUB_VERDICT_NONE;
    if (strcasecmp(s, "pass") == 0)
        return CG_GITHUB_PASS;
    if (strcasecmp(s, "fail") == 0)
        return CG_GITHUB_FAIL;
    if (strcasecmp(s, "inconclusive") == 0)
        return CG_GITHUB_INCONCLUSIVE;
    if (strcasecmp(s, "error") == 0)
        return CG_GITHUB_ERROR;
    if (strcasecmp(s, "recorded") == 0)
        return CG_GITHUB_RECORDED;
    return CG_GITHUB_VERDICT_NONE;
}

const char *cg_github_verdict_name(enum cg_github_verdict v)
{
    switch (v) {
    case CG_GITHUB_PASS:
        return "pass";
    case CG_GITHUB_FAIL:
        return "fail";
    case CG_GITHUB_INCONCLUSIVE:
        return "inconclusive";
    case CG_GITHUB_ERROR:
        return "error";
    case CG_GITHUB_RECORDED:
        return "recorded";
    default:
        return "none";
    }
}

int cg_github_id_check(const char *id, struct cg_err *err)
{
    size_t n = strlen(id);
    if (n == 0 || n > CG_GITHUB_ID_MAX)
        return cg_err_set(err, CG_EINPUT, "gate id '%s': expected 1 to %d characters", id,
                          CG_GITHUB_ID_MAX);
    for (size_t i = 0; i < n; i++)
        if (!cg_comment_marker_id_char((unsigned char)id[i]))
            return cg_err_set(err, CG_EINPUT,
                              "gate id '%s': use only letters, digits, '.', '_' and '-'", id);
    return 0;
}

/* GitHub's characters of an owner or repository name. */
static int repo_char(int c)
{
    return isalnum(c) || c == '.' || c == '_' || c == '-';
}

int cg_github_repo_check(const char *repo, struct cg_err *err)
{
    const char *slash = strchr(repo, '/');
    size_t n = strlen(repo);
    int ok = slash != NULL && slash != repo && slash[1] != '\0' && strchr(slash + 1, '/') == NULL &&
             n < 256;
    for (size_t i = 0; ok && i < n; i++)
        ok = repo[i] == '/' || repo_char((unsigned char)repo[i]);
    if (!ok)
        return cg_err_set(err, CG_EINPUT, "repository '%s': expected OWNER/NAME", repo);
    return 0;
}

int cg_github_sha_check(const char *sha, struct cg_err *err)
{
    size_t n = strlen(sha);
    int ok = n >= 7 && n <= 64;
    for (size_t i = 0; ok && i < n; i++)
        ok = isxdigit((unsigned char)sha[i]);
    if (!ok)
        return cg_err_set(err, CG_EINPUT, "commit '%s': expected a hex SHA", sha);
    return 0;
}

int cg_github_marker(const char *id, char *out, size_t size)
{
    return cg_comment_marker_format(id, out, size);
}

/* ---- the report ----------------------------------------------------------------------------- */

/* Returns the length of the line at p (without its "\n" or "\r\n") within end. */
static size_t line_len(const char *p, const char *end, const char **next)
{
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *stop = nl ? nl : end;
    *next = nl ? nl + 1 : end;
    if (stop > p && stop[-1] == '\r')
        stop--;
    return (size_t)(stop - p);
}

static enum cg_github_verdict verdict_line(const char *p, size_t n)
{
    char word[16];
    if (!cg_comment_marker_verdict(p, n, word, sizeof(word)))
        return CG_GITHUB_VERDICT_NONE;
    return cg_github_verdict_parse(word);
}

void cg_github_report_parse(const char *text, size_t len, struct cg_github_report *out)
{
    memset(out, 0, sizeof(*out));
    const char *end = text + len, *next = NULL;
    size_t n = line_len(text, end, &next);
    if (!cg_comment_marker_id(text, n, out->id, sizeof(out->id)))
        return;
    out->has_marker = 1;
    const char *second = next;
    n = line_len(second, end, &next);
    out->verdict = verdict_line(second, n);
    if (out->verdict == CG_GITHUB_VERDICT_NONE)
        return;
    const char *third = next;
    n = line_len(third, end, &next);
    cg_comment_marker_reason(third, n, out->reason, sizeof(out->reason));
}

/* Counts UTF-8 characters (bytes that do not continue a sequence). */
static size_t utf8_chars(const char *p, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)p[i] & 0xC0) != 0x80;
    return c;
}

/* <details> blocks a cut closes at most. */
#define GH_CLOSE_MAX_DETAILS 20

/* What the first n bytes of a report leave open: a code fence (returned as its marker, "```"
 * or "~~~", else NULL) and *details <details> blocks outside code. */
static const char *open_blocks(const char *p, size_t n, int *details)
{
    const char *end = p + n, *next = NULL, *fence = NULL;
    *details = 0;
    for (; p < end; p = next) {
        size_t len = line_len(p, end, &next);
        size_t ind = 0;
        while (ind < len && ind < 4 && p[ind] == ' ')
            ind++;
        if (ind < 4 && len - ind >= 3 &&
            (memcmp(p + ind, "```", 3) == 0 || memcmp(p + ind, "~~~", 3) == 0)) {
            const char *mark = p[ind] == '`' ? "```" : "~~~";
            if (fence == NULL)
                fence = mark;
            else if (fence[0] == mark[0])
                fence = NULL;
            continue;
        }
        if (fence != NULL)
            continue;
        for (size_t i = 0; i + 8 <= len; i++) {
            if (memcmp(p + i, "<details", 8) == 0 && (i + 8 == len || p[i + 8] == '>' ||
                                                       p[i + 8] == ' '))
                (*details)++;
            else if (i + 10 <= len && memcmp(p + i, "</details>", 10) == 0 && *details > 0)
                (*details)--;
        }
    }
    return fence;
}

/* Length of n bytes in the units of a limit: bytes, or UTF-8 characters. */
static size_t units(const char *p, size_t n, int bytes)
{
    return bytes ? n : utf8_chars(p, n);
}

/* Appends head (a line, or "") and then as much of rest (rest_len bytes) as fits in limit units
 * (bytes when bytes, else characters) with the note, cut at a line, closing what the cut leaves
 * open (so the note shows, outside every block). Returns 0 or nonzero (no memory). */
static int fit_text(const char *head, const char *rest, size_t rest_len, size_t limit, int bytes,
                    const char *note, struct cg_buf *out)
{
    size_t budget = limit - units(head, strlen(head), bytes);
    int rc = cg_buf_adds(out, head);
    if (rc != 0 || units(rest, rest_len, bytes) <= budget)
        return rc != 0 ? rc : cg_buf_add(out, rest, rest_len);
    size_t keep = budget - units(note, strlen(note), bytes);
    size_t i = 0, counted = 0, cut = 0;
    for (; i < rest_len; i++) {
        if ((bytes || ((unsigned char)rest[i] & 0xC0) != 0x80) && ++counted > keep)
            break;
        if (rest[i] == '\n')
            cut = i + 1;
    }
    int details = 0;
    const char *fence = NULL;
    for (;;) {
        fence = open_blocks(rest, cut, &details);
        if (details > GH_CLOSE_MAX_DETAILS)
            details = GH_CLOSE_MAX_DETAILS;
        size_t closing = (fence != NULL ? 4 : 0) + 12 * (size_t)details;
        if (cut == 0 || units(rest, cut, bytes) + closing <= keep)
            break;
        size_t prev = cut - 1; /* back to the line before */
        while (prev > 0 && rest[prev - 1] != '\n')
            prev--;
        cut = prev;
    }
    rc = cg_buf_add(out, rest, cut);
    if (rc == 0 && fence != NULL)
        rc = cg_buf_printf(out, "%s\n", fence);
    for (int k = 0; rc == 0 && k < details; k++)
        rc = cg_buf_adds(out, "\n</details>\n");
    return rc != 0 ? rc : cg_buf_adds(out, note);
}

int cg_github_comment_body(const char *report, size_t len, const char *id, struct cg_buf *out,
                           struct cg_err *err)
{
    char marker[CG_GITHUB_ID_MAX + 32];
    char old_id[CG_GITHUB_ID_MAX + 1];
    const char *end = report + len, *rest = report;
    if (cg_github_marker(id, marker, sizeof(marker)) != 0 ||
        strlen(marker) + 1 >= sizeof(marker))
        return cg_err_set(err, CG_EINPUT, "gate id '%s' is too long", id);
    size_t n = line_len(report, end, &rest);
    if (!cg_comment_marker_id(report, n, old_id, sizeof(old_id)))
        rest = report;
    memcpy(marker + strlen(marker), "\n", 2);
    if (fit_text(marker, rest, (size_t)(end - rest), CG_GITHUB_COMMENT_MAX_CHARS, 0,
                 GH_TRUNCATED_NOTE, out) != 0)
        return cg_err_set(err, CG_ENOMEM, "the comment body does not fit in memory");
    return 0;
}

int cg_github_check_summary(const char *report, size_t len, struct cg_buf *out,
                            struct cg_err *err)
{
    if (fit_text("", report, len, CG_GITHUB_CHECK_SUMMARY_MAX_BYTES, 1, GH_CHECK_TRUNCATED_NOTE,
                 out) != 0)
        return cg_err_set(err, CG_ENOMEM, "the check run's summary does not fit in memory");
    return 0;
}

/* ---- Link header and event file ------------------------------------------------------------- */

/* Does a rel parameter value (quotes removed) name "next" among its space-separated words? */
static int rel_has_next(const char *v, size_t n)
{
    size_t i = 0;
    while (i < n) {
        while (i < n && v[i] == ' ')
            i++;
        size_t w = i;
        while (i < n && v[i] != ' ')
            i++;
        if (i - w == 4 && strncasecmp(v + w, "next", 4) == 0)
            return 1;
    }
    return 0;
}

int cg_github_link_next(const char *link, char **next)
{
    const char *p = link;
    *next = NULL;
    if (link == NULL)
        return 0;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        if (*p != '<')
            return 0;
        const char *url = p + 1;
        const char *close = strchr(url, '>');
        if (close == NULL)
            return 0;
        p = close + 1;
        int is_next = 0;
        /* parameters: ; name=value or ; name="value", up to the next ',' outside quotes */
        for (;;) {
            while (*p == ' ' || *p == '\t')
                p++;
            if (*p != ';')
                break;
            p++;
            while (*p == ' ' || *p == '\t')
                p++;
            const char *name = p;
            while (*p && *p != '=' && *p != ';' && *p != ',')
                p++;
            size_t name_len = (size_t)(p - name);
            while (name_len > 0 && (name[name_len - 1] == ' ' || name[name_len - 1] == '\t'))
                name_len--;
            if (*p != '=')
                continue;
            p++;
            while (*p == ' ' || *p == '\t')
                p++;
            const char *val = p;
            size_t val_len;
            if (*p == '"') {
                val = ++p;
                while (*p && *p != '"')
                    p++;
                if (*p != '"')
                    return 0;
                val_len = (size_t)(p - val);
                p++;
            } else {
                while (*p && *p != ';' && *p != ',' && *p != ' ' && *p != '\t')
                    p++;
                val_len = (size_t)(p - val);
            }
            if (name_len == 3 && strncasecmp(name, "rel", 3) == 0 && rel_has_next(val, val_len))
                is_next = 1;
        }
        if (is_next) {
            size_t n = (size_t)(close - url);
            if (n == 0)
                return 0;
            *next = malloc(n + 1);
            if (*next == NULL)
                return CG_ENOMEM;
            memcpy(*next, url, n);
            (*next)[n] = '\0';
            return 1;
        }
        if (*p != ',')
            return 0;
    }
}

int cg_github_event_parse(const char *json, size_t len, const char *name,
                          struct cg_github_event *ev, struct cg_err *err)
{
    cJSON *root = NULL;
    int rc = 0;
    memset(ev, 0, sizeof(*ev));
    root = cJSON_ParseWithLength(json, len);
    if (!cJSON_IsObject(root)) {
        rc = cg_err_set(err, CG_EINPUT, "cannot read event file '%s': not a JSON object", name);
        goto done;
    }
    const cJSON *pr = cJSON_GetObjectItemCaseSensitive(root, "pull_request");
    const cJSON *issue = cJSON_GetObjectItemCaseSensitive(root, "issue");
    const cJSON *number = NULL;
    if (cJSON_IsObject(pr)) {
        number = cJSON_GetObjectItemCaseSensitive(pr, "number");
        if (number == NULL)
            number = cJSON_GetObjectItemCaseSensitive(root, "number");
    } else if (cJSON_IsObject(issue) &&
               cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(issue, "pull_request"))) {
        number = cJSON_GetObjectItemCaseSensitive(issue, "number"); /* a comment on a PR */
    } else {
        goto done; /* push, schedule, workflow_dispatch...: no pull request */
    }
    if (!cJSON_IsNumber(number) || number->valuedouble < 1 || number->valuedouble > 2147483647.0 ||
        number->valuedouble != (double)(long)number->valuedouble) {
        rc = cg_err_set(err, CG_EINPUT,
                        "cannot read event file '%s': the pull request has no valid number", name);
        goto done;
    }
    ev->pr_number = (long)number->valuedouble;
    if (!cJSON_IsObject(pr))
        goto done;
    const cJSON *head = cJSON_GetObjectItemCaseSensitive(pr, "head");
    const cJSON *sha = cJSON_GetObjectItemCaseSensitive(head, "sha");
    if (sha == NULL)
        goto done;
    if (!cJSON_IsString(sha) || cg_github_sha_check(sha->valuestring, NULL) != 0 ||
        strlen(sha->valuestring) >= sizeof(ev->head_sha)) {
        ev->pr_number = 0;
        rc = cg_err_set(err, CG_EINPUT,
                        "cannot read event file '%s': pull_request.head.sha is not a commit SHA",
                        name);
        goto done;
    }
    memcpy(ev->head_sha, sha->valuestring, strlen(sha->valuestring) + 1);
done:
    cJSON_Delete(root);
    return rc;
}

/* ---- talking to the API --------------------------------------------------------------------- */

void cg_github_api_message(const char *body, size_t len, char *out, size_t size)
{
    cJSON *root = cJSON_ParseWithLength(body != NULL ? body : "", body != NULL ? len : 0);
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(root, "message");
    const cJSON *errs = cJSON_GetObjectItemCaseSensitive(root, "errors");
    const cJSON *first = cJSON_IsArray(errs) ? cJSON_GetArrayItem(errs, 0) : NULL;
    const cJSON *detail = cJSON_GetObjectItemCaseSensitive(first, "message");
    if (!cJSON_IsString(detail))
        detail = cJSON_GetObjectItemCaseSensitive(first, "code");
    if (cJSON_IsString(first))
        detail = first;
    const char *m = msg != NULL && cJSON_IsString(msg) ? msg->valuestring : NULL;
    const char *d = detail != NULL && cJSON_IsString(detail) ? detail->valuestring : NULL;
    int n = snprintf(out, size, "%s%s%s", m != NULL ? m : "", m != NULL && d != NULL ? ": " : "",
                     d != NULL ? d : "");
    if (n < 0)
        out[0] = '\0';
    for (char *p = out; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = ' ';
    cJSON_Delete(root);
}

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
        long long wait_s = r->retry_after_s >= 0 ? r->retry_after_s
                           : r->ratelimit_reset >= 0 ? r->ratelimit_reset - (long long)time(NULL)
                                                     : -1;
        if (wait_s >= 0)
            return cg_err_set(err, CG_ENET,
                              "%s: github rate limit reached (%ld), it resets in %lld s; gave up "
                              "after %d attempt%s",
                              what, r->status, wait_s, r->attempts, r->attempts == 1 ? "" : "s");
        return cg_err_set(err, CG_ENET, "%s: github rate limit reached (%ld); gave up after %d attempt%s",
                          what, r->status, r->attempts, r->attempts == 1 ? "" : "s");
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
                          "in the README",
                          what, gh->repo, sep, msg);
    case 404:
        return cg_err_set(err, CG_ENET, "%s: repository '%s' or %s not found (404)", what,
                          gh->repo, missing);
    case 422:
        return cg_err_set(err, CG_ENET, "%s: github rejected the request (422%s%s)", what, sep,
                          msg);
    default:
        if (r->status >= 500)
            return cg_err_set(err, CG_ENET,
                              "%s: github answered %ld %d time%s over %.1f s; giving up", what,
                              r->status, r->attempts, r->attempts == 1 ? "" : "s",
                              (double)r->waited_ms / 1000.0);
        return cg_err_set(err, CG_ENET, "%s: github answered %ld%s%s", what, r->status, sep, msg);
    }
}

/* Is v a JSON number GitHub would use as an id: a whole number from 1 to 2^53 (so that converting
 * it to long long is defined)? */
int cg_github_json_id(const cJSON *v)
{
    return cJSON_IsNumber(v) && v->valuedouble >= 1 && v->valuedouble <= 9007199254740992.0 &&
           v->valuedouble == floor(v->valuedouble);
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
                   int once, struct cg_http_response *resp, const char *what,
                   const char *missing, struct cg_err *err)
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

int cg_github_comments_scan(const char *body, size_t len, const char *marker,
                            long long *comment_id)
{
    cJSON *root = cJSON_ParseWithLength(body != NULL ? body : "", body != NULL ? len : 0);
    int rc = 0;
    size_t ml = strlen(marker);
    *comment_id = 0;
    if (!cJSON_IsArray(root)) {
        rc = CG_EINPUT;
        goto done;
    }
    const cJSON *c = NULL;
    cJSON_ArrayForEach(c, root) {
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(c, "body");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(c, "id");
        if (!cJSON_IsString(text) || !cg_github_json_id(id))
            continue;
        const char *b = text->valuestring;
        if (strncmp(b, marker, ml) == 0 && (b[ml] == '\0' || b[ml] == '\n' || b[ml] == '\r')) {
            *comment_id = (long long)id->valuedouble;
            break;
        }
    }
done:
    cJSON_Delete(root);
    return rc;
}

/* Scans one page of comments for marker. */
static int scan_page(const struct cg_http_response *r, const char *marker, long long *found,
                     const char *what, struct cg_err *err)
{
    if (cg_github_comments_scan(r->body.data, r->body.len, marker, found) != 0)
        return cg_err_set(err, CG_ENET, "%s: github's answer is not a list of comments", what);
    return 0;
}

int cg_github_comment_find(struct cg_github *gh, long pr, const char *marker,
                           long long *comment_id, struct cg_err *err)
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
        if ((rc = cg_github_call(gh, "GET", cg_buf_str(&url), NULL, 0, &resp, what, missing, err)) != 0)
            goto done;
        if (cg_github_is_dry(gh))
            goto done; /* nothing was sent: no comment is known */
        if ((rc = scan_page(&resp, marker, comment_id, what, err)) != 0 || *comment_id != 0)
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
        if ((rc = update_comment(gh, pr, existing, text, &resp, err)) != 0)
            goto done;
        res->action = CG_GITHUB_UPDATED;
        res->comment_id = existing;
    } else {
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

const char *cg_github_status_of(enum cg_github_verdict verdict, const char *reason, char *desc,
                                size_t size)
{
    static const char *const state[] = {"error", "success", "failure", "error", "error",
                                        "success"};
    static const char *const text[] = {
        "no verdict", "PASS: no regression beyond the thresholds",
        "FAIL: training got slower or hungrier beyond the thresholds",
        "INCONCLUSIVE: a change beyond the thresholds, but the evidence is thin",
        "canary failed", "baseline recorded, nothing compared"};
    size_t v = (size_t)verdict < sizeof(state) / sizeof(state[0]) ? (size_t)verdict : 0;
    int n = verdict == CG_GITHUB_ERROR && reason != NULL && reason[0] != '\0'
                ? snprintf(desc, size, "%s: %s", text[v], reason)
                : snprintf(desc, size, "%s", text[v]);
    if (n < 0)
        desc[0] = '\0';
    /* GitHub's limit is in characters: cut at the last whole one that fits */
    size_t chars = 0, i = 0;
    for (; desc[i] != '\0'; i++)
        if (((unsigned char)desc[i] & 0xC0) != 0x80 && ++chars > CG_GITHUB_STATUS_MAX_CHARS)
            break;
    desc[i] = '\0';
    return state[v];
}

void cg_github_context(const char *id, char *out, size_t size)
{
    if (id != NULL && *id != '\0')
        snprintf(out, size, "%s/%.*s", CG_GITHUB_STATUS_CONTEXT, CG_GITHUB_ID_MAX, id);
    else
        snprintf(out, size, "%s", CG_GITHUB_STATUS_CONTEXT);
}

int cg_github_status_set(struct cg_github *gh, const char *sha, const char *id,
                         enum cg_github_verdict verdict, const char *target_url,
                         struct cg_err *err)
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
        rc = cg_err_set(err, CG_EIO, "cannot open the job summary '%s': %s", path,
                        strerror(errno));
        goto done;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = cg_err_set(err, CG_EINPUT, "cannot use the job summary '%s': not a regular file",
                        path);
        goto done;
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        rc = cg_err_set(err, CG_EIO, "cannot open the job summary '%s': %s", path,
                        strerror(errno));
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
        rc = cg_err_set(err, CG_EIO, "cannot write the job summary '%s': %s", path,
                        strerror(errno));
    return rc;
}
