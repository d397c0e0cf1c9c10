/*
 * checkrun: the verdict as a GitHub check run (see checkrun.h).
 *
 * Requests: GET /repos/{owner}/{repo}/commits/{sha}/check-runs?check_name=NAME&filter=latest
 * (every page, Link rel="next" followed on the API's own origin only), then PATCH
 * /repos/{owner}/{repo}/check-runs/{id} or POST /repos/{owner}/{repo}/check-runs. Bodies carry
 * only fields of GitHub's published request schemas (tests/github/test_openapi.c checks them).
 * Not thread-safe.
 */
#include "checkrun.h"

#include "github_api.h"

#include <cjson/cJSON.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CR_MAX_PAGES 100

const char *cg_github_check_conclusion(enum cg_github_verdict verdict)
{
    switch (verdict) {
    case CG_GITHUB_PASS:
        return "success";
    case CG_GITHUB_FAIL:
    case CG_GITHUB_ERROR:
        return "failure";
    case CG_GITHUB_INCONCLUSIVE:
    case CG_GITHUB_RECORDED:
        return "neutral";
    default:
        return NULL;
    }
}

void cg_github_check_external_id(const char *id, char *out, size_t size)
{
    if (id != NULL && *id != '\0')
        snprintf(out, size, "%s:%.*s", CG_GITHUB_CHECK_EXTERNAL_ID, CG_GITHUB_ID_MAX, id);
    else
        snprintf(out, size, "%s", CG_GITHUB_CHECK_EXTERNAL_ID);
}

static int string_is(const cJSON *o, const char *key, const char *want)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) && strcmp(v->valuestring, want) == 0;
}

int cg_github_check_runs_scan(const char *body, size_t len, const char *name,
                              const char *external_id, long long *check_run_id)
{
    cJSON *root = cJSON_ParseWithLength(body != NULL ? body : "", body != NULL ? len : 0);
    const cJSON *runs = cJSON_GetObjectItemCaseSensitive(root, "check_runs");
    const cJSON *r = NULL;
    int rc = cJSON_IsArray(runs) ? 0 : CG_EINPUT;
    *check_run_id = 0;
    if (rc != 0)
        runs = NULL;
    cJSON_ArrayForEach(r, runs) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(r, "id");
        if (cg_github_json_id(id) && string_is(r, "name", name) &&
            string_is(r, "external_id", external_id)) {
            *check_run_id = (long long)id->valuedouble;
            break;
        }
    }
    cJSON_Delete(root);
    return rc;
}

/* The first page's URL: the check name in the query, its '/' percent-encoded (gate ids are
 * [A-Za-z0-9._-], so nothing else needs it). */
static int list_url(const struct cg_github *gh, const char *sha, const char *name,
                    struct cg_buf *url)
{
    int rc = cg_github_api_base(gh, url);
    if (rc == 0)
        rc = cg_buf_printf(url, "/repos/%s/commits/%s/check-runs?check_name=", gh->repo, sha);
    for (const char *p = name; rc == 0 && *p != '\0'; p++)
        rc = *p == '/' ? cg_buf_adds(url, "%2F") : cg_buf_add(url, p, 1);
    if (rc == 0)
        rc = cg_buf_adds(url, "&filter=latest&per_page=100");
    return rc;
}

/* A 403 that is no rate limit: the token lacks `checks: write` (or is a fork's read-only one). */
static int forbidden(const struct cg_github *gh, const struct cg_http_response *r,
                     const char *what, struct cg_err *err)
{
    char msg[200];
    cg_github_api_message(r->body.data, r->body.len, msg, sizeof(msg));
    return cg_err_set(err, CG_ENET,
                      "%s: the token cannot use check runs in '%s' (403%s%s): give the job "
                      "'permissions: checks: write' (a pull request from a fork gets a read-only "
                      "token: see \"Pull requests from forks\" in docs/github.md)",
                      what, gh->repo, msg[0] ? " " : "", msg);
}

int cg_github_check_run_find(struct cg_github *gh, const char *sha, const char *id,
                             long long *check_run_id, struct cg_err *err)
{
    struct cg_http_response resp;
    struct cg_buf url;
    char name[CG_GITHUB_ID_MAX + 32], ext[CG_GITHUB_ID_MAX + 32];
    char what[400], missing[100];
    char *next = NULL;
    int rc = 0;

    *check_run_id = 0;
    cg_http_response_init(&resp, gh->http->opt.max_body_bytes);
    cg_buf_init(&url, 8192);
    cg_github_context(id, name, sizeof(name));
    cg_github_check_external_id(id, ext, sizeof(ext));
    snprintf(what, sizeof(what), "cannot list the check runs of '%s@%.12s'", gh->repo, sha);
    snprintf(missing, sizeof(missing), "commit '%.40s'", sha);
    if ((rc = cg_github_sha_check(sha, err)) != 0)
        goto done;
    if (list_url(gh, sha, name, &url) != 0) {
        rc = cg_err_set(err, CG_ENOMEM, "%s: URL too long", what);
        goto done;
    }
    for (int page = 1;; page++) {
        rc = cg_github_call(gh, "GET", cg_buf_str(&url), NULL, 0, &resp, what, missing, err);
        if (rc != 0 && resp.status == 403 && !resp.rate_limited)
            rc = forbidden(gh, &resp, what, err);
        if (rc != 0 || cg_github_is_dry(gh))
            goto done; /* a dry run sent nothing: no check run is known */
        if (cg_github_check_runs_scan(resp.body.data, resp.body.len, name, ext, check_run_id) !=
            0) {
            rc = cg_err_set(err, CG_ENET, "%s: github's answer is not a list of check runs", what);
            goto done;
        }
        if (*check_run_id != 0)
            goto done;
        free(next);
        next = NULL;
        int has = cg_github_link_next(resp.link, &next);
        if (has <= 0) {
            if (has < 0)
                rc = cg_err_set(err, CG_ENOMEM, "%s: out of memory", what);
            goto done;
        }
        if (!cg_github_same_origin(gh->api_url, next)) {
            rc = cg_err_set(err, CG_ENET, "%s: the next page is on another host; not following it",
                            what);
            goto done;
        }
        if (page >= CR_MAX_PAGES) {
            rc = cg_err_set(err, CG_ENET, "%s: more than %d pages of check runs", what,
                            CR_MAX_PAGES);
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

/* The request body: head_sha only for a create (an update's schema has none). NULL: no memory. */
static char *request_json(const char *name, const char *ext, const char *head_sha,
                          const char *conclusion, const char *title, const char *summary,
                          const char *details_url)
{
    cJSON *json = cJSON_CreateObject();
    cJSON *output = cJSON_CreateObject();
    char *text = NULL;
    if (json == NULL || output == NULL || cJSON_AddStringToObject(json, "name", name) == NULL ||
        (head_sha != NULL && cJSON_AddStringToObject(json, "head_sha", head_sha) == NULL) ||
        cJSON_AddStringToObject(json, "external_id", ext) == NULL ||
        (details_url != NULL && cJSON_AddStringToObject(json, "details_url", details_url) == NULL) ||
        cJSON_AddStringToObject(json, "status", "completed") == NULL ||
        cJSON_AddStringToObject(json, "conclusion", conclusion) == NULL ||
        cJSON_AddStringToObject(output, "title", title) == NULL ||
        cJSON_AddStringToObject(output, "summary", summary) == NULL)
        goto done;
    cJSON_AddItemToObject(json, "output", output);
    output = NULL;
    text = cJSON_PrintUnformatted(json);
done:
    cJSON_Delete(output);
    cJSON_Delete(json);
    return text;
}

/* Sends one create or update and reads the answer's id and page into res. *unsure: the request
 * may have been carried out all the same (a 5xx, or no answer). */
static int send_one(struct cg_github *gh, const char *method, const char *url, const char *text,
                    int once, const char *what, const char *missing,
                    struct cg_github_check_result *res, int *unsure, struct cg_err *err)
{
    struct cg_http_response resp;
    cg_http_response_init(&resp, gh->http->opt.max_body_bytes);
    int rc = cg_github_call(gh, method, url, text, once, &resp, what, missing, err);
    if (rc != 0 && resp.status == 403 && !resp.rate_limited)
        rc = forbidden(gh, &resp, what, err);
    *unsure = rc == CG_ENET && (resp.status == 0 || resp.status >= 500);
    if (rc == 0 && !cg_github_is_dry(gh)) {
        cJSON *root = cJSON_ParseWithLength(resp.body.data ? resp.body.data : "", resp.body.len);
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(root, "id");
        const cJSON *page = cJSON_GetObjectItemCaseSensitive(root, "html_url");
        if (cg_github_json_id(id))
            res->check_run_id = (long long)id->valuedouble;
        if (cJSON_IsString(page) && strlen(page->valuestring) < sizeof(res->html_url))
            memcpy(res->html_url, page->valuestring, strlen(page->valuestring) + 1);
        cJSON_Delete(root);
    }
    cg_http_response_release(&resp);
    return rc;
}

/* PATCHes check run check_id with the update's body. */
static int update(struct cg_github *gh, long long check_id, const char *text, const char *name,
                  const char *sha, struct cg_github_check_result *res, struct cg_err *err)
{
    struct cg_buf url;
    char what[400], missing[64];
    int unsure = 0, rc;
    cg_buf_init(&url, 8192);
    snprintf(what, sizeof(what), "cannot update the check run '%s' (%lld) on '%s@%.12s'", name,
             check_id, gh->repo, sha);
    snprintf(missing, sizeof(missing), "check run %lld", check_id);
    if (cg_github_api_base(gh, &url) != 0 ||
        cg_buf_printf(&url, "/repos/%s/check-runs/%lld", gh->repo, check_id) != 0)
        rc = cg_err_set(err, CG_ENOMEM, "%s: URL too long", what);
    else
        rc = send_one(gh, "PATCH", cg_buf_str(&url), text, 0, what, missing, res, &unsure, err);
    if (rc == 0) {
        res->action = CG_GITHUB_UPDATED;
        res->check_run_id = check_id;
    }
    cg_buf_release(&url);
    return rc;
}

/* POSTs a new check run. After a 5xx or a lost answer it may exist: it is looked up again and
 * updated if it is there, else the create is repeated (at most the client's attempts). */
static int create(struct cg_github *gh, const char *sha, const char *id, const char *name,
                  const char *create_text, const char *update_text,
                  struct cg_github_check_result *res, struct cg_err *err)
{
    struct cg_buf url;
    char what[400], missing[100];
    int rc = 0, unsure = 0;
    cg_buf_init(&url, 8192);
    snprintf(what, sizeof(what), "cannot create the check run '%s' on '%s@%.12s'", name,
             gh->repo, sha);
    snprintf(missing, sizeof(missing), "commit '%.40s'", sha);
    if (cg_github_api_base(gh, &url) != 0 ||
        cg_buf_printf(&url, "/repos/%s/check-runs", gh->repo) != 0) {
        rc = cg_err_set(err, CG_ENOMEM, "%s: URL too long", what);
        goto done;
    }
    for (int attempt = 1;; attempt++) {
        rc = send_one(gh, "POST", cg_buf_str(&url), create_text, 1, what, missing, res, &unsure,
                      err);
        if (rc == 0) {
            res->action = CG_GITHUB_CREATED;
            goto done;
        }
        if (!unsure || attempt >= gh->http->opt.max_attempts)
            goto done;
        struct cg_err again;
        long long found = 0;
        cg_err_init(&again);
        if (cg_github_check_run_find(gh, sha, id, &found, &again) != 0)
            goto done; /* keep the create's message */
        if (found != 0) {
            rc = update(gh, found, update_text, name, sha, res, err);
            if (rc == 0)
                res->action = CG_GITHUB_CREATED;
            goto done;
        }
    }
done:
    cg_buf_release(&url);
    return rc;
}

int cg_github_check_run_publish(struct cg_github *gh, const char *sha, const char *id,
                                enum cg_github_verdict verdict, const char *reason,
                                const char *report, size_t len, const char *details_url,
                                struct cg_github_check_result *res, struct cg_err *err)
{
    struct cg_buf summary;
    char name[CG_GITHUB_ID_MAX + 32], ext[CG_GITHUB_ID_MAX + 32];
    char title[CG_GITHUB_REASON_MAX + 64];
    char *create_text = NULL, *update_text = NULL;
    long long existing = 0;
    int rc = 0;

    memset(res, 0, sizeof(*res));
    cg_buf_init(&summary, (size_t)CG_GITHUB_CHECK_SUMMARY_MAX_BYTES * 2);
    cg_github_context(id, name, sizeof(name));
    cg_github_check_external_id(id, ext, sizeof(ext));
    const char *conclusion = cg_github_check_conclusion(verdict);
    if ((rc = cg_github_sha_check(sha, err)) != 0)
        goto done;
    if (conclusion == NULL) {
        rc = cg_err_set(err, CG_EINPUT, "cannot publish the check run '%s': no verdict", name);
        goto done;
    }
    cg_github_status_of(verdict, reason, title, sizeof(title));
    if ((rc = cg_github_check_summary(report, len, &summary, err)) != 0)
        goto done;
    create_text = request_json(name, ext, sha, conclusion, title, cg_buf_str(&summary),
                               details_url);
    update_text = request_json(name, ext, NULL, conclusion, title, cg_buf_str(&summary),
                               details_url);
    if (create_text == NULL || update_text == NULL) {
        rc = cg_err_set(err, CG_ENOMEM, "cannot build the check run '%s': out of memory", name);
        goto done;
    }
    if ((rc = cg_github_check_run_find(gh, sha, id, &existing, err)) != 0)
        goto done;
    if (existing != 0)
        rc = update(gh, existing, update_text, name, sha, res, err);
    else
        rc = create(gh, sha, id, name, create_text, update_text, res, err);
done:
    cJSON_free(create_text);
    cJSON_free(update_text);
    cg_buf_release(&summary);
    return rc;
}
