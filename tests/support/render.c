/* render: see render.h. */
#include "render.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define CMARK "cmark-gfm"

char *cg_render_gfm(const char *md, size_t len)
{
    char in_path[] = "/tmp/cg-render-in-XXXXXX", out_path[] = "/tmp/cg-render-out-XXXXXX";
    int fi = mkstemp(in_path), fo = mkstemp(out_path);
    assert_true(fi >= 0 && fo >= 0);
    assert_int_equal(write(fi, md, len), (ssize_t)len);
    close(fi);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fo, STDOUT_FILENO);
        execlp(CMARK, CMARK, "--unsafe", "-e", "table", "-e", "strikethrough", "-e", "autolink",
               "-e", "tagfilter", in_path, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    unlink(in_path);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        close(fo);
        unlink(out_path);
        fail_msg(CMARK " failed (exit %d): install it with ci/deps",
                 WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    }
    struct stat sb;
    assert_int_equal(fstat(fo, &sb), 0);
    char *html = malloc((size_t)sb.st_size + 1);
    assert_non_null(html);
    ssize_t got = pread(fo, html, (size_t)sb.st_size, 0);
    assert_int_equal(got, (ssize_t)sb.st_size);
    html[got] = '\0';
    close(fo);
    unlink(out_path);
    return html;
}

static bool allowed_tag(const char *name, size_t n)
{
    static const char *const tags[] = {
        "h1",    "h2",    "h3",    "h4",    "h5",     "h6",  "p",          "ul",
        "ol",    "li",    "table", "thead", "tbody",  "tr",  "th",         "td",
        "code",  "pre",   "strong", "em",   "br",     "hr",  "blockquote", "details",
        "summary", "sub", "del",
    };
    for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++)
        if (strlen(tags[i]) == n && strncmp(tags[i], name, n) == 0)
            return true;
    return false;
}

static bool handle_char(unsigned char c)
{
    return isalnum(c) || c == '-' || c == '_';
}

/* Prints a window of html around p in the failure message. */
static void fail_at(const char *what, const char *html, const char *p, const char *problem)
{
    const char *from = p - html > 120 ? p - 120 : html;
    fail_msg("%s: %s at byte %ld: ...%.240s...", what, problem, (long)(p - html), from);
}

void cg_render_check_gfm(const char *html, const char *what)
{
    int code_depth = 0, details = 0;
    for (const char *p = html; *p;) {
        if (strncmp(p, "<!--", 4) == 0) {
            const char *end = strstr(p, "-->");
            if (strncmp(p, "<!-- canary-gate", 16) != 0 || end == NULL) {
                fail_at(what, html, p, "an HTML comment that is not the report's marker");
                return;
            }
            p = end + 3;
            continue;
        }
        if (*p == '<') {
            bool closing = p[1] == '/';
            const char *name = p + 1 + closing;
            size_t n = 0;
            while (isalnum((unsigned char)name[n]))
                n++;
            if (n == 1 && name[0] == 'a')
                fail_at(what, html, p, "a link");
            if (n == 0 || !allowed_tag(name, n))
                fail_at(what, html, p, "raw HTML that is not the report's own");
            if ((n == 4 && strncmp(name, "code", 4) == 0) || (n == 3 && strncmp(name, "pre", 3) == 0))
                code_depth += closing ? -1 : 1;
            if (n == 7 && strncmp(name, "details", 7) == 0) {
                details += closing ? -1 : 1;
                if (details < 0)
                    fail_at(what, html, p, "</details> without its <details>");
            }
            const char *end = strchr(p, '>');
            if (end == NULL) {
                fail_at(what, html, p, "an unterminated tag");
                return;
            }
            p = end + 1;
            continue;
        }
        if (*p == '@' && code_depth == 0 && handle_char((unsigned char)p[1]))
            fail_at(what, html, p, "a mention");
        p++;
    }
    if (details != 0)
        fail_msg("%s: %d <details> block%s left open", what, details, details == 1 ? "" : "s");
}

char *cg_render_cell_with(const char *html, const char *needle)
{
    for (const char *p = strstr(html, "<td"); p != NULL; p = strstr(p + 1, "<td")) {
        const char *open = strchr(p, '>');
        const char *close = open != NULL ? strstr(open, "</td>") : NULL;
        if (close == NULL)
            return NULL;
        size_t n = (size_t)(close - open - 1);
        char *cell = malloc(n + 1);
        assert_non_null(cell);
        memcpy(cell, open + 1, n);
        cell[n] = '\0';
        if (strstr(cell, needle) != NULL)
            return cell;
        free(cell);
    }
    return NULL;
}
