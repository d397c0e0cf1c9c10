/*
 * github_parse: the pure half of github.h, no network: the checks and names of gate ids,
 * repositories, commits and verdicts; the report's marker lines and the comment body cut to
 * GitHub's limit (also a check run's summary); the Link header's next page; the Actions event
 * file; GitHub's answers read (an error body's message, a page of comments, an id); the commit
 * status's words. Each allocates only what its contract says, so the fuzz harnesses call them
 * directly. github.c sends the requests. Thread-safe: no state.
 */
#include "github.h"

#include "comment_marker.h"
#include "checkrun.h"
#include "github_api.h"

#include <cjson/cJSON.h>

#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define GH_TRUNCATED_NOTE                                                                          \
    "\n_The report was cut to fit GitHub's comment limit; the job summary has all of it._\n"
#define GH_CHECK_TRUNCATED_NOTE                                                                    \
    "\n_The report was cut to fit GitHub's limit on a check run's summary; the job summary has "   \
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

/* The UTF-16 code units of the character a UTF-8 byte begins: 1, or 2 for a 4-byte sequence (a
 * character above U+FFFF, a surrogate pair in UTF-16); 0 for a byte that continues one. */
static size_t utf16_units_of(unsigned char c)
{
    return (size_t)((c & 0xC0) != 0x80) + (c >= 0xF0);
}

/* Counts the UTF-16 code units of n bytes of UTF-8: never fewer than its characters, so a text
 * within a limit in units is within it in characters too. */
static size_t utf16_units(const char *p, size_t n)
{
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        u += utf16_units_of((unsigned char)p[i]);
    return u;
}

/* <details> blocks a cut closes at most. */
#define GH_CLOSE_MAX_DETAILS 20

/* A code fence open at a point of a report: its character ('`' or '~') and length (0: none). */
struct fence {
    char c;
    size_t len;
};

/* Whether line p (len bytes) opens a fence (when f is none) or closes f, as CommonMark reads
 * one: up to 3 spaces, then 3 or more of one of ` ~; an opening backtick fence's info string
 * holds no backtick; a closing fence is f's character, at least f's length, then spaces only. */
static bool fence_line(const char *p, size_t len, struct fence *f)
{
    size_t ind = 0, k;
    while (ind < len && ind < 4 && p[ind] == ' ')
        ind++;
    if (ind >= 4 || ind >= len || (p[ind] != '`' && p[ind] != '~'))
        return false;
    char c = p[ind];
    for (k = ind; k < len && p[k] == c; k++)
        ;
    size_t run = k - ind;
    if (run < 3)
        return false;
    if (f->len == 0) {
        if (c == '`' && memchr(p + k, '`', len - k) != NULL)
            return false;
        *f = (struct fence){c, run};
        return true;
    }
    if (c != f->c || run < f->len)
        return false;
    for (; k < len; k++)
        if (p[k] != ' ' && p[k] != '\t')
            return false;
    f->len = 0;
    return true;
}

/* What the first n bytes of a report leave open: a code fence (*fence, of any length, backticks
 * or tildes) and *details <details> blocks outside code. */
static void open_blocks(const char *p, size_t n, struct fence *fence, int *details)
{
    const char *end = p + n, *next = NULL;
    *details = 0;
    *fence = (struct fence){0, 0};
    for (; p < end; p = next) {
        size_t len = line_len(p, end, &next);
        if (fence_line(p, len, fence) || fence->len > 0)
            continue;
        for (size_t i = 0; i + 8 <= len; i++) {
            if (memcmp(p + i, "<details", 8) == 0 &&
                (i + 8 == len || p[i + 8] == '>' || p[i + 8] == ' '))
                (*details)++;
            else if (i + 10 <= len && memcmp(p + i, "</details>", 10) == 0 && *details > 0)
                (*details)--;
        }
    }
}

/* Length of n bytes in the units of a limit: bytes, or UTF-16 code units. */
static size_t units(const char *p, size_t n, int bytes)
{
    return bytes ? n : utf16_units(p, n);
}

/* Appends head (a line, or "") and then as much of rest (rest_len bytes) as fits in limit units
 * (bytes when bytes, else UTF-16 code units) with the note, cut at a line, closing what the cut leaves
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
        counted += bytes ? 1 : utf16_units_of((unsigned char)rest[i]);
        if (counted > keep)
            break;
        if (rest[i] == '\n')
            cut = i + 1;
    }
    int details = 0;
    struct fence fence;
    for (;;) {
        open_blocks(rest, cut, &fence, &details);
        if (details > GH_CLOSE_MAX_DETAILS)
            details = GH_CLOSE_MAX_DETAILS;
        size_t closing = (fence.len > 0 ? fence.len + 1 : 0) + 12 * (size_t)details;
        if (cut == 0 || units(rest, cut, bytes) + closing <= keep)
            break;
        size_t prev = cut - 1; /* back to the line before */
        while (prev > 0 && rest[prev - 1] != '\n')
            prev--;
        cut = prev;
    }
    rc = cg_buf_add(out, rest, cut);
    for (size_t k = 0; rc == 0 && k < fence.len; k++) /* as many of its characters */
        rc = cg_buf_add(out, &fence.c, 1);
    if (rc == 0 && fence.len > 0)
        rc = cg_buf_adds(out, "\n");
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
    if (cg_github_marker(id, marker, sizeof(marker)) != 0 || strlen(marker) + 1 >= sizeof(marker))
        return cg_err_set(err, CG_EINPUT, "gate id '%s' is too long", id);
    size_t n = line_len(report, end, &rest);
    if (!cg_comment_marker_id(report, n, old_id, sizeof(old_id)))
        rest = report;
    memcpy(marker + strlen(marker), "\n", 2);
    if (fit_text(marker, rest, (size_t)(end - rest), CG_GITHUB_COMMENT_MAX_UNITS, 0,
                 GH_TRUNCATED_NOTE, out) != 0)
        return cg_err_set(err, CG_ENOMEM, "the comment body does not fit in memory");
    return 0;
}

int cg_github_check_summary(const char *report, size_t len, struct cg_buf *out, struct cg_err *err)
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

/* ---- GitHub's answers read ---------------------------------------------------------------- */

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

/* Is v a JSON number GitHub would use as an id: a whole number from 1 to 2^53 (so that converting
 * it to long long is defined)? */
int cg_github_json_id(const cJSON *v)
{
    return cJSON_IsNumber(v) && v->valuedouble >= 1 && v->valuedouble <= 9007199254740992.0 &&
           v->valuedouble == floor(v->valuedouble);
}

/* Whether comment c was written by the gate's token: a bot's, or own_login's. */
static int by_gate(const cJSON *c, const char *own_login)
{
    const cJSON *user = cJSON_GetObjectItemCaseSensitive(c, "user");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(user, "type");
    const cJSON *login = cJSON_GetObjectItemCaseSensitive(user, "login");
    if (cJSON_IsString(type) && strcmp(type->valuestring, "Bot") == 0)
        return 1;
    return own_login != NULL && cJSON_IsString(login) && strcmp(login->valuestring, own_login) == 0;
}

int cg_github_comments_scan(const char *body, size_t len, const char *marker, const char *own_login,
                            long long *comment_id, size_t *foreign)
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
    cJSON_ArrayForEach(c, root)
    {
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(c, "body");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(c, "id");
        if (!cJSON_IsString(text) || !cg_github_json_id(id))
            continue;
        const char *b = text->valuestring;
        if (strncmp(b, marker, ml) != 0 || !(b[ml] == '\0' || b[ml] == '\n' || b[ml] == '\r'))
            continue;
        if (!by_gate(c, own_login)) {
            if (foreign != NULL)
                ++*foreign;
            continue;
        }
        *comment_id = (long long)id->valuedouble;
        break;
    }
done:
    cJSON_Delete(root);
    return rc;
}

/* ---- the commit status's words ------------------------------------------------------------- */

const char *cg_github_status_of(enum cg_github_verdict verdict, const char *reason, char *desc,
                                size_t size)
{
    static const char *const state[] = {"error", "success", "failure", "error", "error", "success"};
    static const char *const text[] = {
        "no verdict",
        "PASS: no regression beyond the thresholds",
        "FAIL: training got slower or hungrier beyond the thresholds",
        "INCONCLUSIVE: a change beyond the thresholds, but the evidence is thin",
        "canary failed",
        "baseline recorded, nothing compared"};
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
