/*
 * untrusted: the verdict check and the sanitiser of a report from an untrusted run (see
 * untrusted.h). The sanitiser reads the markdown without context (it does not track code blocks
 * or spans, which an attacker could open or close differently from GitHub's parser): each rule
 * holds wherever the text lands, at the price of entities shown literally inside code.
 */
#include "untrusted.h"

#include "comment_marker.h"
#include "jsonutil.h"
#include "utf8.h"

#include <cjson/cJSON.h>

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int cg_github_untrusted_verdict(const char *json, size_t len, const char *json_name,
                                const struct cg_github_report *rep, const char *report_name,
                                enum cg_github_verdict *verdict, struct cg_err *err)
{
    size_t at = 0;
    cJSON *root = cg_json_parse_whole(json, len, &at);
    int rc = 0;
    if (root == NULL) {
        rc = cg_err_set(err, CG_EINPUT, "cannot read '%s': not a JSON verdict (%s)", json_name,
                        at < len ? "trailing data after the document" : "not valid JSON");
        goto done;
    }
    char dup[256];
    if (cg_json_duplicate_key(root, dup, sizeof(dup))) {
        rc = cg_err_set(err, CG_EINPUT, "cannot read '%s': %s: the key appears twice", json_name,
                        dup);
        goto done;
    }
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(root, "schema");
    const cJSON *word = cJSON_GetObjectItemCaseSensitive(root, "verdict");
    if (!cJSON_IsString(schema) || strcmp(schema->valuestring, "canary-gate/verdict") != 0) {
        rc = cg_err_set(err, CG_EINPUT,
                        "cannot read '%s': not a JSON verdict (\"schema\" is not "
                        "\"canary-gate/verdict\")",
                        json_name);
        goto done;
    }
    enum cg_github_verdict v =
        cJSON_IsString(word) ? cg_github_verdict_parse(word->valuestring) : CG_GITHUB_VERDICT_NONE;
    if (v == CG_GITHUB_VERDICT_NONE) {
        rc = cg_err_set(err, CG_EINPUT,
                        "cannot read '%s': \"verdict\" is not pass, fail, inconclusive, error or "
                        "recorded",
                        json_name);
        goto done;
    }
    bool agree = rep->verdict == v || (v == CG_GITHUB_PASS && rep->verdict == CG_GITHUB_RECORDED);
    if (!agree) {
        rc = cg_err_set(err, CG_EINPUT,
                        "'%s' says %s but '%s' says %s: an untrusted report must agree with its "
                        "JSON verdict; nothing was posted",
                        report_name,
                        rep->verdict == CG_GITHUB_VERDICT_NONE ? "no verdict"
                                                               : cg_github_verdict_name(rep->verdict),
                        json_name, cg_github_verdict_name(v));
        goto done;
    }
    *verdict = rep->verdict;
done:
    cJSON_Delete(root);
    return rc;
}

/* The tags the report's renderer writes, without attributes; anything else is shown as text. */
static const char *const allowed_tags[] = {"details>", "/details>", "summary>", "/summary>",
                                           "sub>",     "/sub>",     "br>",      "br/>",
                                           "b>",       "/b>",       "code>",    "/code>"};

/* Whether p (after a '<') opens one of allowed_tags; *details counts the <details> blocks open,
 * so that a </details> closing none is shown as text. */
static bool allowed_tag(const char *p, const char *end, int *details)
{
    for (size_t i = 0; i < sizeof(allowed_tags) / sizeof(allowed_tags[0]); i++) {
        size_t n = strlen(allowed_tags[i]);
        if ((size_t)(end - p) < n || strncasecmp(p, allowed_tags[i], n) != 0)
            continue;
        if (i == 1 && *details == 0)
            return false;
        *details += i == 0 ? 1 : i == 1 ? -1 : 0;
        return true;
    }
    return false;
}

/* The length of an entity for '@' at p ("&#64;", "&#x40;" with any leading zeros, "&commat;"),
 * or 0. */
static size_t at_entity(const char *p, const char *end)
{
    size_t n = (size_t)(end - p);
    if (n >= 8 && strncasecmp(p, "&commat;", 8) == 0)
        return 8;
    if (n < 4 || p[0] != '&' || p[1] != '#')
        return 0;
    bool hex = p[2] == 'x' || p[2] == 'X';
    size_t i = hex ? 3 : 2;
    unsigned long v = 0;
    size_t digits = 0;
    for (; i < n && digits < 12; i++, digits++) {
        int c = (unsigned char)p[i];
        if (hex ? !isxdigit(c) : !isdigit(c))
            break;
        v = v * (hex ? 16 : 10) + (unsigned long)(isdigit(c) ? c - '0' : (tolower(c) - 'a' + 10));
    }
    return digits > 0 && i < n && p[i] == ';' && v == '@' ? i + 1 : 0;
}

/* Whether the line at p (to end) begins, after blanks, with mermaid's "click". */
static bool click_line(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    return (size_t)(end - p) >= 5 && strncasecmp(p, "click", 5) == 0;
}

static int sanitise_rest(const char *p, const char *end, struct cg_buf *out)
{
    int rc = 0, details = 0;
    bool line_start = true;
    while (p < end && rc == 0) {
        if (line_start && click_line(p, end) && (rc = cg_buf_adds(out, "%% ")) != 0)
            break;
        line_start = false;
        size_t ent = at_entity(p, end);
        if (ent > 0) {
            rc = cg_buf_add(out, p, ent) | cg_buf_adds(out, "&#8205;");
            p += ent;
            continue;
        }
        char c = *p;
        const char *next = p + 1 < end ? p + 1 : NULL;
        if (c == '<' && !(next != NULL && allowed_tag(next, end, &details)))
            rc = cg_buf_adds(out, "&lt;");
        else if (c == '@')
            rc = cg_buf_adds(out, "@&#8205;");
        else if (c == '!' && next != NULL && *next == '[')
            rc = cg_buf_adds(out, "&#33;");
        else if (c == ']' && next != NULL && (*next == '(' || *next == '[' || *next == ':'))
            rc = cg_buf_adds(out, *next == '(' ? "]&#40;" : *next == '[' ? "]&#91;" : "]&#58;"),
            p++;
        else if (c == ':' && end - p >= 3 && p[1] == '/' && p[2] == '/')
            rc = cg_buf_adds(out, "&#58;");
        else if ((c == 'w' || c == 'W') && end - p >= 4 && strncasecmp(p, "www.", 4) == 0)
            rc = cg_buf_adds(out, "www&#46;"), p += 3;
        else
            rc = cg_buf_add(out, p, 1);
        line_start = c == '\n';
        p++;
    }
    for (; rc == 0 && details > 0; details--) /* blocks left open close before what follows */
        rc = cg_buf_adds(out, "\n</details>\n");
    return rc;
}

int cg_github_untrusted_body(const char *report, size_t len, const struct cg_github_report *rep,
                             enum cg_github_verdict verdict, struct cg_buf *out)
{
    size_t fixed_len = 0;
    char *fixed = cg_utf8_repair(report, len, &fixed_len);
    if (fixed == NULL)
        return CG_ENOMEM;
    const char *p = fixed, *end = fixed + fixed_len;
    /* the report's own marker lines, dropped: they are rebuilt from what was checked */
    for (int line = 0; line < 3 && p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *stop = nl != NULL ? nl : end;
        if ((size_t)(stop - p) < strlen(CG_COMMENT_MARKER_HEAD) ||
            strncmp(p, CG_COMMENT_MARKER_HEAD, strlen(CG_COMMENT_MARKER_HEAD)) != 0)
            break;
        p = nl != NULL ? nl + 1 : end;
    }
    bool reason = verdict == CG_GITHUB_ERROR && rep->reason[0] != '\0';
    int rc = cg_comment_marker_add_head(out, rep->id, cg_github_verdict_name(verdict),
                                        reason ? rep->reason : NULL, CG_GITHUB_REASON_MAX);
    if (rc == 0)
        rc = sanitise_rest(p, end, out);
    free(fixed);
    return rc != 0 ? CG_ENOMEM : 0;
}
