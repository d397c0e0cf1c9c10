/*
 * comment_marker: writing and reading the hidden marker lines of the report and the PR comment
 * (see comment_marker.h for the lines). Pure; thread-safe.
 */
#include "comment_marker.h"

#include "err.h"
#include "utf8.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

int cg_comment_marker_id_char(int c)
{
    return isalnum(c) || c == '.' || c == '_' || c == '-';
}

int cg_comment_marker_format(const char *id, char *out, size_t size)
{
    int n = (id == NULL || *id == '\0')
                ? snprintf(out, size, CG_COMMENT_MARKER_DEFAULT)
                : snprintf(out, size, CG_COMMENT_MARKER_HEAD ":%s" CG_COMMENT_MARKER_TAIL, id);
    return n < 0 || (size_t)n >= size ? CG_EINPUT : 0;
}

int cg_comment_marker_add(struct cg_buf *b, const char *id)
{
    if (id == NULL || id[0] == '\0')
        return cg_buf_adds(b, CG_COMMENT_MARKER_DEFAULT "\n");
    int rc = cg_buf_adds(b, CG_COMMENT_MARKER_HEAD ":");
    for (const char *p = id; *p && rc == 0; p++) {
        char c = cg_comment_marker_id_char((unsigned char)*p) ? *p : '_';
        rc = cg_buf_add(b, &c, 1);
    }
    return rc | cg_buf_adds(b, CG_COMMENT_MARKER_TAIL "\n");
}

int cg_comment_marker_add_verdict(struct cg_buf *b, const char *verdict)
{
    return cg_buf_printf(b, CG_COMMENT_MARKER_VERDICT_HEAD " %s" CG_COMMENT_MARKER_TAIL "\n",
                         verdict);
}

int cg_comment_marker_add_reason(struct cg_buf *b, const char *text, size_t max_bytes)
{
    int rc = cg_buf_adds(b, CG_COMMENT_MARKER_REASON_HEAD " ");
    for (size_t i = 0; i < max_bytes && text[i] != '\0' && rc == 0; i++) {
        char c = (unsigned char)text[i] < 0x20 || text[i] == '>' ? ' ' : text[i];
        if (c == '-' && text[i + 1] == '-')
            c = ' ';
        rc = cg_buf_add(b, &c, 1);
    }
    return rc | cg_buf_adds(b, CG_COMMENT_MARKER_TAIL "\n");
}

int cg_comment_marker_add_head(struct cg_buf *b, const char *id, const char *verdict,
                               const char *reason, size_t max_reason)
{
    int rc = cg_comment_marker_add(b, id);
    rc |= cg_comment_marker_add_verdict(b, verdict);
    if (reason != NULL)
        rc |= cg_comment_marker_add_reason(b, reason, max_reason);
    return rc;
}

int cg_comment_marker_id(const char *p, size_t n, char *id, size_t id_size)
{
    static const char head[] = CG_COMMENT_MARKER_HEAD;
    static const char tail[] = CG_COMMENT_MARKER_TAIL;
    size_t hl = sizeof(head) - 1, tl = sizeof(tail) - 1;
    if (n < hl + tl || memcmp(p, head, hl) != 0 || memcmp(p + n - tl, tail, tl) != 0)
        return 0;
    const char *mid = p + hl;
    size_t ml = n - hl - tl;
    if (ml == 0) {
        id[0] = '\0';
        return 1;
    }
    if (mid[0] != ':' || ml - 1 == 0 || ml - 1 >= id_size)
        return 0;
    for (size_t i = 1; i < ml; i++)
        if (!cg_comment_marker_id_char((unsigned char)mid[i]))
            return 0;
    memcpy(id, mid + 1, ml - 1);
    id[ml - 1] = '\0';
    return 1;
}

/* The value of a "HEAD value -->" line (p, n bytes), the spaces around it trimmed: 1 and
 * [*a, *b) when the line starts with head and ends with CG_COMMENT_MARKER_CLOSE, else 0. */
static int value_span(const char *p, size_t n, const char *head, const char **a, const char **b)
{
    static const char tail[] = CG_COMMENT_MARKER_CLOSE;
    size_t hl = strlen(head), tl = sizeof(tail) - 1;
    if (n < hl + tl || memcmp(p, head, hl) != 0 || memcmp(p + n - tl, tail, tl) != 0)
        return 0;
    *a = p + hl;
    *b = p + n - tl;
    while (*a < *b && **a == ' ')
        (*a)++;
    while (*b > *a && (*b)[-1] == ' ')
        (*b)--;
    return 1;
}

int cg_comment_marker_verdict(const char *p, size_t n, char *word, size_t size)
{
    const char *a, *b;
    if (!value_span(p, n, CG_COMMENT_MARKER_VERDICT_HEAD, &a, &b) || (size_t)(b - a) >= size)
        return 0;
    memcpy(word, a, (size_t)(b - a));
    word[b - a] = '\0';
    return 1;
}

void cg_comment_marker_reason(const char *p, size_t n, char *out, size_t size)
{
    const char *a, *b;
    out[0] = '\0';
    if (!value_span(p, n, CG_COMMENT_MARKER_REASON_HEAD, &a, &b))
        return;
    size_t k = 0;
    for (; a < b && k + 1 < size; a++)
        out[k++] = (unsigned char)*a < 0x20 || *a == 0x7f ? ' ' : *a;
    if (a < b) /* cut: never half a character */
        k = cg_utf8_cut(out, k);
    while (k > 0 && out[k - 1] == ' ')
        k--;
    out[k] = '\0';
}
