/*
 * fmt: escaping for markdown and terminals and the number formats (see fmt.h).
 */
#include "fmt.h"

#include "utf8.h"

#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static const char *md_entity(unsigned char c)
{
    switch (c) {
    case '|':
        return "&#124;";
    case '<':
        return "&lt;";
    case '>':
        return "&gt;";
    case '&':
        return "&amp;";
    case '`':
        return "&#96;";
    case '@':
        return "&#64;";
    case '[':
        return "&#91;";
    case ']':
        return "&#93;";
    case '(':
        return "&#40;";
    case ')':
        return "&#41;";
    case '*':
        return "&#42;";
    case '_':
        return "&#95;";
    case '~':
        return "&#126;";
    case '\\':
        return "&#92;";
    case '#':
        return "&#35;";
    case ':':
        return "&#58;";
    case '!':
        return "&#33;";
    case '$':
        return "&#36;";
    default:
        return NULL;
    }
}

/* Whether p (a '.') ends "www" in any case: GitHub links "www.host" by itself wherever the text
 * stands, so that dot becomes an entity. */
static bool ends_www(const unsigned char *start, const unsigned char *p)
{
    return *p == '.' && p - start >= 3 && tolower(p[-1]) == 'w' && tolower(p[-2]) == 'w' &&
           tolower(p[-3]) == 'w';
}

int cg_md_escape(struct cg_buf *out, const char *s, size_t max_bytes)
{
    const unsigned char *p = (const unsigned char *)(s != NULL ? s : "");
    const unsigned char *start = p, *end = p + strlen((const char *)p);
    size_t used = 0;
    int rc = 0;
    while (p < end && rc == 0) {
        size_t n = cg_utf8_decode((const char *)p, (size_t)(end - p), NULL);
        size_t step = n ? n : 1;
        if (used + step > max_bytes) {
            rc = cg_buf_adds(out, "\xe2\x80\xa6"); /* U+2026 */
            break;
        }
        const char *ent = n == 1 ? md_entity(*p) : NULL;
        if (n == 0)
            rc = cg_buf_adds(out, "\xef\xbf\xbd"); /* U+FFFD */
        else if (*p == '@' && (isalnum(p[1]) || p[1] == '-' || p[1] == '_'))
            rc = cg_buf_adds(out, "&#64;&#8205;"); /* a zero-width joiner: never a mention */
        else if (ent != NULL)
            rc = cg_buf_adds(out, ent);
        else if (ends_www(start, p))
            rc = cg_buf_adds(out, "&#46;");
        else if (n == 1 && (*p < 0x20 || *p == 0x7f))
            rc = cg_buf_adds(out, " ");
        else
            rc = cg_buf_add(out, p, n);
        used += step;
        p += step;
    }
    return rc;
}

int cg_term_escape(struct cg_buf *out, const char *s, size_t max_bytes)
{
    const unsigned char *p = (const unsigned char *)(s != NULL ? s : "");
    const unsigned char *end = p + strlen((const char *)p);
    size_t used = 0;
    int rc = 0;
    while (p < end && rc == 0) {
        uint32_t cp = 0;
        size_t n = cg_utf8_decode((const char *)p, (size_t)(end - p), &cp);
        size_t step = n ? n : 1;
        if (used + step > max_bytes) {
            rc = cg_buf_adds(out, "...");
            break;
        }
        /* C1 controls (U+0080..U+009F) are escape introducers on some terminals too. */
        bool control = cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0);
        if (n == 0 || control)
            rc = cg_buf_adds(out, "?");
        else
            rc = cg_buf_add(out, p, n);
        used += step;
        p += step;
    }
    return rc;
}

int cg_html_escape(struct cg_buf *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s != NULL ? s : "");
    const unsigned char *end = p + strlen((const char *)p);
    int rc = 0;
    while (p < end && rc == 0) {
        size_t n = cg_utf8_decode((const char *)p, (size_t)(end - p), NULL);
        if (n == 0)
            rc = cg_buf_adds(out, "\xef\xbf\xbd"); /* U+FFFD */
        else if (n > 1)
            rc = cg_buf_add(out, p, n);
        else if (*p == '&')
            rc = cg_buf_adds(out, "&amp;");
        else if (*p == '<')
            rc = cg_buf_adds(out, "&lt;");
        else if (*p == '>')
            rc = cg_buf_adds(out, "&gt;");
        else if (*p == '"')
            rc = cg_buf_adds(out, "&quot;");
        else if (*p == '\'')
            rc = cg_buf_adds(out, "&#39;");
        else
            rc = cg_buf_add(out, *p < 0x20 || *p == 0x7f ? " " : (const char *)p, 1);
        p += n ? n : 1;
    }
    return rc;
}

void cg_fmt_ns(double ns, char *dst, size_t n)
{
    if (!isfinite(ns))
        snprintf(dst, n, "n/a");
    else if (fabs(ns) < 1e3)
        snprintf(dst, n, "%.0f ns", ns);
    else if (fabs(ns) < 1e6)
        snprintf(dst, n, "%.2f us", ns / 1e3);
    else if (fabs(ns) < 1e9)
        snprintf(dst, n, "%.2f ms", ns / 1e6);
    else
        snprintf(dst, n, "%.2f s", ns / 1e9);
}

static void fmt_bytes(double b, char *dst, size_t n)
{
    if (!isfinite(b))
        snprintf(dst, n, "n/a");
    else if (b < 1024.0 * 1024.0)
        snprintf(dst, n, "%.1f KiB", b / 1024.0);
    else if (b < 1024.0 * 1024.0 * 1024.0)
        snprintf(dst, n, "%.1f MiB", b / (1024.0 * 1024.0));
    else
        snprintf(dst, n, "%.2f GiB", b / (1024.0 * 1024.0 * 1024.0));
}

void cg_fmt_metric(enum cg_metric m, double value, char *dst, size_t n)
{
    switch (m) {
    case CG_M_STEP_TIME_MEAN:
    case CG_M_STEP_TIME_P95:
    case CG_M_STEP_TIME_FLOOR:
        cg_fmt_ns(value, dst, n);
        break;
    case CG_M_TOKENS_PER_SEC:
        if (isfinite(value))
            snprintf(dst, n, "%.0f tok/s", value);
        else
            snprintf(dst, n, "n/a");
        break;
    case CG_M_ENERGY_PER_TOKEN:
        if (isfinite(value))
            snprintf(dst, n, "%.3g J/tok", value);
        else
            snprintf(dst, n, "n/a");
        break;
    case CG_M_MFU:
        if (isfinite(value))
            snprintf(dst, n, "%.2f%% MFU", value * 100.0);
        else
            snprintf(dst, n, "n/a");
        break;
    default:
        fmt_bytes(value, dst, n);
        break;
    }
}

void cg_fmt_pct(double pct, char *dst, size_t n)
{
    if (isnan(pct))
        snprintf(dst, n, "n/a");
    else if (isinf(pct))
        snprintf(dst, n, "%s", pct > 0 ? "+inf" : "-inf");
    else
        snprintf(dst, n, "%+.1f%%", pct);
}
