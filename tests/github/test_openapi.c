/*
 * test_openapi: every request canary-gate sends to GitHub (the check run's lookup, create and
 * update, the commit status, the comment's lookup, create and update) is checked against
 * GitHub's published OpenAPI description of api.github.com: the path and method are an
 * operation of it, every query parameter is one the operation declares (with its enum), and the
 * JSON body validates against the operation's request schema ($ref, type, enum, required,
 * properties, maxLength in characters, maxItems, items, anyOf/oneOf/allOf), strictly: a field the
 * schema does not declare is an error (GitHub ignores it, so sending one is a mistake).
 *
 * The description is the npm package @octokit/openapi (generated/api.github.com.json, 13 MB):
 * CG_GITHUB_OPENAPI names the file, else it is looked for in
 * ~/.cache/canary-gate/github-openapi-VERSION and installed there with npm when npm is on PATH.
 * Without it (no npm, no registry) the test is skipped, saying why. A first test checks that
 * the validator rejects wrong bodies (an "inconclusive" conclusion, a summary one character
 * too long, an undeclared field), so a pass means something.
 */
#include "checkrun.h"
#include "github.h"
#include "http.h"
#include "httpd.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define OPENAPI_VERSION "23.0.2"
#define TOKEN "ghp_TESTTOKEN123"
#define SHA "0123456789abcdef0123456789abcdef01234567"
#define REPORT "<!-- canary-gate -->\n<!-- canary-gate-verdict: inconclusive -->\n# report\n"

static cJSON *g_spec; /* the description, loaded once */

/* ---- the description ------------------------------------------------------------------------ */

static char *slurp(const char *path)
{
    FILE *fp = fopen(path, "rb");
    char *s = NULL;
    long n = 0;
    if (fp != NULL && fseek(fp, 0, SEEK_END) == 0 && (n = ftell(fp)) > 0 &&
        fseek(fp, 0, SEEK_SET) == 0 && (s = malloc((size_t)n + 1)) != NULL) {
        if (fread(s, 1, (size_t)n, fp) != (size_t)n) {
            free(s);
            s = NULL;
        } else {
            s[n] = '\0';
        }
    }
    if (fp != NULL)
        fclose(fp);
    return s;
}

/* Finds or installs the description; returns its path in out, or NULL with why in why. */
static const char *find_spec(char *out, size_t size, char *why, size_t why_size)
{
    const char *given = getenv("CG_GITHUB_OPENAPI"), *home = getenv("HOME");
    struct stat st;
    if (given != NULL && *given != '\0') {
        snprintf(out, size, "%s", given);
        return out;
    }
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/.cache/canary-gate/github-openapi-" OPENAPI_VERSION,
             home != NULL ? home : "/tmp");
    snprintf(out, size, "%s/node_modules/@octokit/openapi/generated/api.github.com.json", dir);
    if (stat(out, &st) == 0)
        return out;
    char cmd[1200];
    snprintf(cmd, sizeof(cmd),
             "command -v npm >/dev/null && mkdir -p '%s' && npm install --prefix '%s' --no-audit "
             "--no-fund --loglevel=error @octokit/openapi@" OPENAPI_VERSION " >&2",
             dir, dir);
    fprintf(stderr, "test_openapi: installing @octokit/openapi@" OPENAPI_VERSION " into %s\n", dir);
    if (system(cmd) == 0 && stat(out, &st) == 0)
        return out;
    snprintf(why, why_size, "GitHub's OpenAPI description is not here and npm could not install "
                            "@octokit/openapi@" OPENAPI_VERSION " (set CG_GITHUB_OPENAPI)");
    return NULL;
}

static int group_setup(void **state)
{
    (void)state;
    char path[1024], why[256] = "";
    if (find_spec(path, sizeof(path), why, sizeof(why)) == NULL) {
        fprintf(stderr, "test_openapi: skipped: %s\n", why);
        return 0;
    }
    char *text = slurp(path);
    g_spec = text != NULL ? cJSON_Parse(text) : NULL;
    free(text);
    if (g_spec == NULL)
        fprintf(stderr, "test_openapi: cannot read '%s' as JSON\n", path);
    return g_spec == NULL ? -1 : 0;
}

static int group_teardown(void **state)
{
    (void)state;
    cJSON_Delete(g_spec);
    return 0;
}

/* ---- a JSON Schema subset, as OpenAPI 3.0 uses it -------------------------------------------- */

/* Resolves "#/a/b/c" in the description. */
static const cJSON *resolve(const cJSON *schema)
{
    for (int depth = 0; depth < 16; depth++) {
        const cJSON *ref = cJSON_GetObjectItemCaseSensitive(schema, "$ref");
        if (!cJSON_IsString(ref))
            return schema;
        const char *p = ref->valuestring;
        if (strncmp(p, "#/", 2) != 0)
            return NULL;
        const cJSON *at = g_spec;
        char part[256];
        for (p += 2; *p != '\0' && at != NULL;) {
            size_t n = strcspn(p, "/");
            snprintf(part, sizeof(part), "%.*s", (int)n, p);
            at = cJSON_GetObjectItemCaseSensitive(at, part);
            p += n + (p[n] == '/');
        }
        schema = at;
    }
    return NULL;
}

static size_t utf8_chars(const char *s)
{
    size_t c = 0;
    for (; *s != '\0'; s++)
        c += ((unsigned char)*s & 0xC0) != 0x80;
    return c;
}

static int type_is(const cJSON *v, const char *type)
{
    if (strcmp(type, "string") == 0)
        return cJSON_IsString(v);
    if (strcmp(type, "integer") == 0)
        return cJSON_IsNumber(v) && v->valuedouble == (double)(long long)v->valuedouble;
    if (strcmp(type, "number") == 0)
        return cJSON_IsNumber(v);
    if (strcmp(type, "boolean") == 0)
        return cJSON_IsBool(v);
    if (strcmp(type, "object") == 0)
        return cJSON_IsObject(v);
    if (strcmp(type, "array") == 0)
        return cJSON_IsArray(v);
    return strcmp(type, "null") == 0 && cJSON_IsNull(v);
}

static int string_eq(const cJSON *o, const char *key, const char *want)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) && strcmp(v->valuestring, want) == 0;
}

static int type_of(const cJSON *schema, const char *type)
{
    return string_eq(resolve(schema), "type", type);
}

/* 1 when v is valid under schema; else 0 with the first problem (at path) in why. */
static int valid(const cJSON *v, const cJSON *schema, const char *path, char *why, size_t n)
{
    schema = resolve(schema);
    if (schema == NULL)
        return snprintf(why, n, "%s: unresolvable $ref", path), 0;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(schema, "type");
    const cJSON *nullable = cJSON_GetObjectItemCaseSensitive(schema, "nullable");
    if (cJSON_IsNull(v) && cJSON_IsTrue(nullable))
        return 1;
    if (cJSON_IsString(type) && !type_is(v, type->valuestring))
        return snprintf(why, n, "%s: not of type %s", path, type->valuestring), 0;
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(schema, "enum"), *x = NULL;
    if (cJSON_IsArray(e)) {
        int found = 0;
        cJSON_ArrayForEach(x, e) found |= cJSON_Compare(x, v, 1);
        if (!found)
            return snprintf(why, n, "%s: not one of the enum's values", path), 0;
    }
    const cJSON *max = cJSON_GetObjectItemCaseSensitive(schema, "maxLength");
    if (cJSON_IsString(v) && cJSON_IsNumber(max) && utf8_chars(v->valuestring) > (size_t)max->valuedouble)
        return snprintf(why, n, "%s: longer than maxLength %.0f", path, max->valuedouble), 0;
    const cJSON *maxi = cJSON_GetObjectItemCaseSensitive(schema, "maxItems");
    if (cJSON_IsArray(v) && cJSON_IsNumber(maxi) && cJSON_GetArraySize(v) > (int)maxi->valuedouble)
        return snprintf(why, n, "%s: more than maxItems", path), 0;
    char sub[512];
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(schema, "items");
    if (cJSON_IsArray(v) && items != NULL) {
        int i = 0;
        cJSON_ArrayForEach(x, v) {
            snprintf(sub, sizeof(sub), "%s[%d]", path, i++);
            if (!valid(x, items, sub, why, n))
                return 0;
        }
    }
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(schema, "properties");
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(schema, "required");
    if (cJSON_IsObject(v)) {
        cJSON_ArrayForEach(x, req) {
            if (cJSON_IsString(x) && cJSON_GetObjectItemCaseSensitive(v, x->valuestring) == NULL)
                return snprintf(why, n, "%s: lacks the required '%s'", path, x->valuestring), 0;
        }
        cJSON_ArrayForEach(x, v) {
            const cJSON *p = cJSON_GetObjectItemCaseSensitive(props, x->string);
            snprintf(sub, sizeof(sub), "%s.%s", path, x->string);
            if (props != NULL && p == NULL)
                return snprintf(why, n, "%s: not a field of the schema", sub), 0;
            if (p != NULL && !valid(x, p, sub, why, n))
                return 0;
        }
    }
    const cJSON *all = cJSON_GetObjectItemCaseSensitive(schema, "allOf");
    cJSON_ArrayForEach(x, all) {
        if (!valid(v, x, path, why, n))
            return 0;
    }
    static const char *const anyish[] = {"anyOf", "oneOf"};
    for (size_t k = 0; k < 2; k++) {
        const cJSON *alts = cJSON_GetObjectItemCaseSensitive(schema, anyish[k]);
        if (!cJSON_IsArray(alts))
            continue;
        int ok = 0;
        char first[512] = "";
        cJSON_ArrayForEach(x, alts) {
            /* an alternative may restrict some fields only: not strict about the others */
            cJSON *loose = cJSON_Duplicate(resolve(x), 1);
            cJSON_DeleteItemFromObjectCaseSensitive(loose, "properties");
            const cJSON *own = cJSON_GetObjectItemCaseSensitive(resolve(x), "properties");
            int good = valid(v, loose, path, first[0] ? why : first, first[0] ? n : sizeof(first));
            const cJSON *f = NULL;
            cJSON_ArrayForEach(f, own) {
                const cJSON *have = cJSON_GetObjectItemCaseSensitive(v, f->string);
                snprintf(sub, sizeof(sub), "%s.%s", path, f->string);
                if (good && have != NULL && !valid(have, f, sub, first, sizeof(first)))
                    good = 0;
            }
            cJSON_Delete(loose);
            ok |= good;
        }
        if (!ok)
            return snprintf(why, n, "%s: matches none of %s (%s)", path, anyish[k], first), 0;
    }
    return 1;
}

/* ---- requests against operations ------------------------------------------------------------ */

/* Does the request path match the template ("/repos/{owner}/{repo}/check-runs")? */
static int path_matches(const char *tmpl, const char *path)
{
    while (*tmpl != '\0' && *path != '\0') {
        if (*tmpl == '{') {
            const char *close = strchr(tmpl, '}');
            size_t seg = strcspn(path, "/");
            if (close == NULL || seg == 0)
                return 0;
            tmpl = close + 1;
            path += seg;
        } else if (*tmpl++ != *path++) {
            return 0;
        }
    }
    return *tmpl == '\0' && *path == '\0';
}

/* Checks one request; 1 when valid, else 0 with why. */
static int check_request(const char *method, const char *target, const char *body, char *why,
                         size_t n)
{
    char path[1024], lower[16];
    size_t pl = strcspn(target, "?");
    snprintf(path, sizeof(path), "%.*s", (int)pl, target);
    size_t ml = 0;
    for (; ml + 1 < sizeof(lower) && method[ml] != '\0'; ml++)
        lower[ml] = (char)(method[ml] | 0x20);
    lower[ml] = '\0';
    const cJSON *paths = cJSON_GetObjectItemCaseSensitive(g_spec, "paths"), *p = NULL,
                *op = NULL;
    cJSON_ArrayForEach(p, paths) {
        if (path_matches(p->string, path) &&
            (op = cJSON_GetObjectItemCaseSensitive(p, lower)) != NULL)
            break;
    }
    if (op == NULL)
        return snprintf(why, n, "%.15s %.200s: no such operation in the description", method, path), 0;
    for (const char *q = target[pl] == '?' ? target + pl + 1 : NULL; q != NULL && *q != '\0';) {
        char name[128], value[256];
        size_t kl = strcspn(q, "="), vl = strcspn(q + kl + 1, "&");
        snprintf(name, sizeof(name), "%.*s", (int)kl, q);
        snprintf(value, sizeof(value), "%.*s", (int)vl, q + kl + 1);
        const cJSON *params = cJSON_GetObjectItemCaseSensitive(op, "parameters"), *a = NULL;
        const cJSON *declared = NULL;
        cJSON_ArrayForEach(a, params) {
            const cJSON *r = resolve(a);
            if (string_eq(r, "in", "query") && string_eq(r, "name", name))
                declared = r;
        }
        if (declared == NULL)
            return snprintf(why, n, "%.15s %.200s: query '%s' is not a parameter", method, path, name), 0;
        const cJSON *schema = cJSON_GetObjectItemCaseSensitive(declared, "schema");
        cJSON *as_json = type_of(schema, "integer") ? cJSON_CreateNumber(strtod(value, NULL))
                                                    : cJSON_CreateString(value);
        char where[400];
        snprintf(where, sizeof(where), "%.15s %.200s ?%.100s", method, path, name);
        int ok = valid(as_json, schema, where, why, n);
        cJSON_Delete(as_json);
        if (!ok)
            return 0;
        q = q[kl + 1 + vl] == '&' ? q + kl + 2 + vl : NULL;
    }
    const cJSON *rb = resolve(cJSON_GetObjectItemCaseSensitive(op, "requestBody"));
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(rb, "content"),
                                         "application/json"),
        "schema");
    if (body == NULL || body[0] == '\0')
        return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rb, "required"))
                   ? (snprintf(why, n, "%.15s %.200s: the body is required", method, path), 0)
                   : 1;
    if (schema == NULL)
        return snprintf(why, n, "%.15s %.200s: the operation takes no JSON body", method, path), 0;
    cJSON *v = cJSON_Parse(body);
    char where[400];
    snprintf(where, sizeof(where), "%.15s %.200s body", method, path);
    int ok = v != NULL && valid(v, schema, where, why, n);
    if (v == NULL)
        snprintf(why, n, "%s: not JSON", where);
    cJSON_Delete(v);
    return ok;
}

/* ---- the tests ------------------------------------------------------------------------------ */

#define NEED_SPEC()                                                                                \
    do {                                                                                           \
        if (g_spec == NULL)                                                                        \
            skip();                                                                                \
    } while (0)

static void expect_invalid(const char *method, const char *target, const char *body,
                           const char *part)
{
    char why[600] = "";
    if (check_request(method, target, body, why, sizeof(why)))
        fail_msg("accepted: %s %s %s", method, target, body);
    if (strstr(why, part) == NULL)
        fail_msg("'%s' does not say '%s'", why, part);
}

/* The validator and the description together reject what GitHub would: so a pass means it. */
static void test_openapi__wrong_requests_are_rejected(void **state)
{
    (void)state;
    NEED_SPEC();
    const char *create = "/repos/o/r/check-runs";
    expect_invalid("POST", create, "{\"name\":\"canary-gate\",\"head_sha\":\"" SHA "\","
                                   "\"conclusion\":\"inconclusive\"}", "conclusion: not one of");
    expect_invalid("POST", create, "{\"name\":\"canary-gate\"}", "lacks the required 'head_sha'");
    expect_invalid("POST", create, "{\"name\":\"canary-gate\",\"head_sha\":\"" SHA "\","
                                   "\"verdict\":\"pass\"}", "verdict: not a field");
    expect_invalid("PATCH", "/repos/o/r/check-runs/5", "{\"status\":\"completed\"}",
                   "matches none of anyOf");
    expect_invalid("POST", create, "{\"name\":\"c\",\"head_sha\":\"" SHA "\","
                                   "\"output\":{\"summary\":\"s\"}}", "lacks the required 'title'");
    expect_invalid("GET", "/repos/o/r/commits/" SHA "/check-runs?filter=newest", NULL,
                   "?filter: not one of");
    expect_invalid("GET", "/repos/o/r/commits/" SHA "/check-runs?name=x", NULL,
                   "query 'name' is not a parameter");
    expect_invalid("POST", "/repos/o/r/check-run", "{}", "no such operation");
    /* a summary one character past 65535, in characters not bytes */
    size_t n = 65536;
    char *big = malloc(n * 2 + 200);
    assert_non_null(big);
    int k = snprintf(big, 200, "{\"name\":\"c\",\"head_sha\":\"%s\",\"output\":{\"title\":\"t\","
                               "\"summary\":\"", SHA);
    for (size_t i = 0; i < n; i++) {
        big[k++] = '\xc3';
        big[k++] = '\xa9';
    }
    memcpy(big + k, "\"}}", 4);
    expect_invalid("POST", create, big, "summary: longer than maxLength 65535");
    free(big);
}

struct session {
    struct cg_httpd *srv;
    struct cg_http http;
    struct cg_github gh;
    struct cg_err err;
};

static void session_start(struct session *s)
{
    struct cg_http_options o;
    s->srv = cg_httpd_start();
    assert_non_null(s->srv);
    cg_httpd_github(s->srv, "o/r", 7, TOKEN, 100);
    cg_http_options_default(&o);
    o.backoff_base_ms = 5;
    o.max_attempts = 2;
    assert_int_equal(cg_http_init(&s->http, &o, &s->err), 0);
    s->gh.http = &s->http;
    s->gh.api_url = cg_httpd_url(s->srv);
    s->gh.repo = "o/r";
    s->gh.token = TOKEN;
    cg_err_init(&s->err);
}

static void session_check_all(struct session *s, size_t want)
{
    char why[600];
    assert_int_equal(cg_httpd_count(s->srv), want);
    for (size_t i = 0; i < cg_httpd_count(s->srv); i++) {
        const struct cg_httpd_request *r = cg_httpd_request(s->srv, i);
        if (!check_request(r->method, r->target, r->body, why, sizeof(why)))
            fail_msg("request %zu: %s", i, why);
    }
    cg_http_release(&s->http);
    cg_httpd_stop(s->srv);
}

/* The check run's lookup, create and update, with and without a gate id, for every verdict,
 * a report past the summary's limit included; the create after a 5xx. */
static void test_openapi__check_run_requests_follow_the_description(void **state)
{
    (void)state;
    NEED_SPEC();
    struct session s;
    struct cg_github_check_result res;
    session_start(&s);
    static const enum cg_github_verdict verdicts[] = {CG_GITHUB_INCONCLUSIVE, CG_GITHUB_PASS,
                                                      CG_GITHUB_FAIL, CG_GITHUB_ERROR,
                                                      CG_GITHUB_RECORDED};
    for (size_t i = 0; i < sizeof(verdicts) / sizeof(verdicts[0]); i++)
        assert_int_equal(cg_github_check_run_publish(&s.gh, SHA, i % 2 ? "h100" : NULL,
                                                     verdicts[i], "canary died of signal 6", REPORT,
                                                     strlen(REPORT),
                                                     i == 0 ? NULL
                                                            : "https://github.com/o/r/actions/runs/9",
                                                     &res, &s.err),
                         0);
    struct cg_buf big;
    cg_buf_init(&big, (size_t)1 << 20);
    while (big.len < 200000)
        assert_int_equal(cg_buf_adds(&big, "| \xc3\xa9t\xc3\xa9 | <kernel> | +1.0% |\n"), 0);
    assert_int_equal(cg_github_check_run_publish(&s.gh, SHA, "big", CG_GITHUB_FAIL, NULL, big.data,
                                                 big.len, NULL, &res, &s.err),
                     0);
    cg_buf_release(&big);
    cg_httpd_push(s.srv, 200, NULL, "{\"total_count\":0,\"check_runs\":[]}");
    cg_httpd_push(s.srv, 502, NULL, "{\"message\":\"Bad Gateway\"}");
    assert_int_equal(cg_github_check_run_publish(&s.gh, SHA, "retry", CG_GITHUB_PASS, NULL, REPORT,
                                                 strlen(REPORT), NULL, &res, &s.err),
                     0);
    session_check_all(&s, 5 * 2 + 2 + 4);
}

/* The comment's lookup, create and update and the commit status, for comparison. */
static void test_openapi__comment_and_status_requests_follow_the_description(void **state)
{
    (void)state;
    NEED_SPEC();
    struct session s;
    struct cg_github_comment_result res;
    session_start(&s);
    assert_int_equal(cg_github_comment_publish(&s.gh, 7, NULL, REPORT, CG_GITHUB_MODE_ALWAYS,
                                               CG_GITHUB_FAIL, &res, &s.err),
                     0);
    assert_int_equal(cg_github_comment_publish(&s.gh, 7, NULL, REPORT, CG_GITHUB_MODE_ALWAYS,
                                               CG_GITHUB_PASS, &res, &s.err),
                     0);
    assert_int_equal(cg_github_status_set_reason(&s.gh, SHA, "h100", CG_GITHUB_ERROR, "died",
                                                 "https://github.com/o/r/actions/runs/9", &s.err),
                     0);
    session_check_all(&s, 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_openapi__wrong_requests_are_rejected),
        cmocka_unit_test(test_openapi__check_run_requests_follow_the_description),
        cmocka_unit_test(test_openapi__comment_and_status_requests_follow_the_description),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
