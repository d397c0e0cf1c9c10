/*
 * test_github: the pure parsers (Link header, event file, report markers, comment body) and the
 * comment/status calls against the GitHub emulation of tests/support/httpd on 127.0.0.1: create,
 * update in place, the marker on page 2 of 3, two gate ids, comment modes, rate limits, 5xx, and
 * the 401/403/404/422 messages.
 */
#include "comment_marker.h"
#include "github.h"
#include "httpd.h"
#include "render.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <iconv.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TOKEN "ghp_TESTTOKEN123"
#define SHA "0123456789abcdef0123456789abcdef01234567"
#define MARKER "<!-- canary-gate -->"

/* ---- Link header ---------------------------------------------------------------------------- */

static void test_github__link_next_table(void **state)
{
    (void)state;
    static const struct {
        const char *link;
        const char *next; /* NULL: none */
    } cases[] = {
        {"<https://a/x?page=2>; rel=\"next\", <https://a/x?page=3>; rel=\"last\"", "https://a/x?page=2"},
        {"<https://a/x?page=1>; rel=\"prev\", <https://a/x?page=3>; rel=\"next\"", "https://a/x?page=3"},
        {"<https://a/n>; rel=next", "https://a/n"},
        {"<https://a/n> ; REL = \"Next\"", "https://a/n"},
        {"<https://a/l>; rel=\"last\", <https://a/n>; title=\"a, b; c\"; rel=\"next\"", "https://a/n"},
        {"<https://a/n>; rel=\"prev next\"", "https://a/n"},
        {"<https://a/x?a=1,2>; rel=\"next\"", "https://a/x?a=1,2"},
        {"<https://a/l>; rel=\"last\"", NULL},
        {"<https://a/l>; rel=\"nextpage\"", NULL},
        {"", NULL},
        {"garbage", NULL},
        {"<https://a/unterminated; rel=\"next\"", NULL},
        {"<https://a/n>; rel=\"next", NULL},
        {"<>; rel=\"next\"", NULL},
        {"<https://a/n>; rel", NULL},
        {";;;,,,<", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *next = NULL;
        int rc = cg_github_link_next(cases[i].link, &next);
        if (cases[i].next == NULL) {
            assert_int_equal(rc, 0);
            assert_null(next);
        } else {
            assert_int_equal(rc, 1);
            assert_string_equal(next, cases[i].next);
        }
        free(next);
    }
    char *next = NULL;
    assert_int_equal(cg_github_link_next(NULL, &next), 0);
}

/* ---- event file ----------------------------------------------------------------------------- */

static int parse_event(const char *json, struct cg_github_event *ev, struct cg_err *err)
{
    cg_err_init(err);
    return cg_github_event_parse(json, strlen(json), "event.json", ev, err);
}

static void test_github__event_pull_request(void **state)
{
    (void)state;
    struct cg_github_event ev;
    struct cg_err err;
    assert_int_equal(parse_event("{\"action\":\"synchronize\",\"number\":42,\"pull_request\":"
                                 "{\"number\":42,\"head\":{\"sha\":\"" SHA "\"},"
                                 "\"merge_commit_sha\":\"ffffffffffffffffffffffffffffffffffffffff\"}}",
                                 &ev, &err),
                     0);
    assert_int_equal(ev.pr_number, 42);
    assert_string_equal(ev.head_sha, SHA);
}

static void test_github__event_comment_on_pull_request(void **state)
{
    (void)state;
    struct cg_github_event ev;
    struct cg_err err;
    assert_int_equal(parse_event("{\"issue\":{\"number\":7,\"pull_request\":{\"url\":\"u\"}}}", &ev,
                                 &err),
                     0);
    assert_int_equal(ev.pr_number, 7);
    assert_string_equal(ev.head_sha, "");
    /* a comment on a plain issue is no pull request */
    assert_int_equal(parse_event("{\"issue\":{\"number\":7}}", &ev, &err), 0);
    assert_int_equal(ev.pr_number, 0);
}

static void test_github__event_push_has_no_pull_request(void **state)
{
    (void)state;
    struct cg_github_event ev;
    struct cg_err err;
    assert_int_equal(parse_event("{\"ref\":\"refs/heads/main\",\"after\":\"" SHA "\"}", &ev, &err), 0);
    assert_int_equal(ev.pr_number, 0);
    assert_string_equal(ev.head_sha, "");
}

static void test_github__event_malformed_is_rejected(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "{not json",
        "[1,2]",
        "",
        "{\"pull_request\":{\"number\":\"42\"}}",
        "{\"pull_request\":{\"number\":1.5}}",
        "{\"pull_request\":{\"number\":-3}}",
        "{\"pull_request\":{\"number\":1e300}}",
        "{\"pull_request\":{\"number\":4,\"head\":{\"sha\":\"not-a-sha\"}}}",
        "{\"pull_request\":{\"number\":4,\"head\":{\"sha\":17}}}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct cg_github_event ev;
        struct cg_err err;
        assert_int_equal(parse_event(bad[i], &ev, &err), CG_EINPUT);
        assert_non_null(strstr(err.msg, "event file 'event.json'"));
        assert_int_equal(ev.pr_number, 0);
    }
}

static void test_github__event_parser_survives_arbitrary_bytes(void **state)
{
    (void)state;
    char buf[256];
    unsigned seed = 12345;
    for (int round = 0; round < 2000; round++) {
        size_t n = (size_t)(round % (int)sizeof(buf));
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            buf[i] = "{}[]\":,0123456789pull_request numberheadsha"[(seed >> 16) % 44];
        }
        struct cg_github_event ev;
        struct cg_err err;
        cg_err_init(&err);
        (void)cg_github_event_parse(buf, n, "fuzz", &ev, &err);
        char *next = NULL;
        buf[n] = '\0';
        if (cg_github_link_next(buf, &next) == 1)
            free(next);
    }
}

/* ---- report markers and comment body -------------------------------------------------------- */

static void test_github__report_markers(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int has_marker;
        const char *id;
        enum cg_github_verdict verdict;
    } cases[] = {
        {MARKER "\n<!-- canary-gate-verdict: fail -->\n# x\n", 1, "", CG_GITHUB_FAIL},
        {"<!-- canary-gate:big-model -->\n<!-- canary-gate-verdict: pass -->\n", 1, "big-model",
         CG_GITHUB_PASS},
        {MARKER "\r\n<!-- canary-gate-verdict: inconclusive -->\r\n", 1, "", CG_GITHUB_INCONCLUSIVE},
        {MARKER "\n<!-- canary-gate-verdict: PASS -->", 1, "", CG_GITHUB_PASS},
        {MARKER "\n<!-- canary-gate-verdict: error -->\n", 1, "", CG_GITHUB_ERROR},
        {MARKER "\n<!-- canary-gate-verdict: recorded -->\n", 1, "", CG_GITHUB_RECORDED},
        {MARKER "\n# no verdict line\n", 1, "", CG_GITHUB_VERDICT_NONE},
        {MARKER "\n<!-- canary-gate-verdict: maybe -->\n", 1, "", CG_GITHUB_VERDICT_NONE},
        {"# report\n<!-- canary-gate -->\n", 0, "", CG_GITHUB_VERDICT_NONE},
        {"<!-- canary-gate:bad id -->\n", 0, "", CG_GITHUB_VERDICT_NONE},
        {"<!-- canary-gate: -->\n", 0, "", CG_GITHUB_VERDICT_NONE},
        {"", 0, "", CG_GITHUB_VERDICT_NONE},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct cg_github_report r;
        cg_github_report_parse(cases[i].text, strlen(cases[i].text), &r);
        assert_int_equal(r.has_marker, cases[i].has_marker);
        assert_string_equal(r.id, cases[i].id);
        assert_int_equal(r.verdict, cases[i].verdict);
    }
}

/* The marker lines as the report and the gate's notices write them, byte for byte, and read back
 * as they were written (a gate id's odd bytes as '_', a reason that cannot close the comment). */
static void test_github__marker_lines_written_are_read_back(void **state)
{
    (void)state;
    static const struct {
        const char *id;     /* NULL: the default gate */
        const char *reason; /* NULL: no reason line */
        const char *text;   /* what the writers give */
        const char *read_id, *read_reason;
    } cases[] = {
        {NULL, NULL, MARKER "\n<!-- canary-gate-verdict: error -->\n", "", ""},
        {"", NULL, MARKER "\n<!-- canary-gate-verdict: error -->\n", "", ""},
        {"big.model_2-x", NULL,
         "<!-- canary-gate:big.model_2-x -->\n<!-- canary-gate-verdict: error -->\n",
         "big.model_2-x", ""},
        {"two words/-->", NULL,
         "<!-- canary-gate:two_words_--_ -->\n<!-- canary-gate-verdict: error -->\n",
         "two_words_--_", ""},
        {NULL, "canary died --> see log\n(signal 9)",
         MARKER "\n<!-- canary-gate-verdict: error -->\n"
                "<!-- canary-gate-reason: canary died  -  see log (signal 9) -->\n",
         "", "canary died  -  see log (signal 9)"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct cg_buf b;
        struct cg_github_report r;
        cg_buf_init(&b, 4096);
        assert_int_equal(cg_comment_marker_add(&b, cases[i].id), 0);
        assert_int_equal(cg_comment_marker_add_verdict(&b, "error"), 0);
        if (cases[i].reason != NULL)
            assert_int_equal(cg_comment_marker_add_reason(&b, cases[i].reason, 140), 0);
        assert_string_equal(b.data, cases[i].text);
        cg_github_report_parse(b.data, b.len, &r);
        assert_int_equal(r.has_marker, 1);
        assert_string_equal(r.id, cases[i].read_id);
        assert_int_equal(r.verdict, CG_GITHUB_ERROR);
        assert_string_equal(r.reason, cases[i].read_reason);
        cg_buf_release(&b);
    }
}

/* An error report's reason line, and the commit status each verdict gives (GitHub's 140
 * characters at most, cut at a whole character). */
static void test_github__status_tells_what_happened(void **state)
{
    (void)state;
    struct cg_github_report r;
    const char *text = MARKER "\n<!-- canary-gate-verdict: error -->\n"
                              "<!-- canary-gate-reason: canary died of signal 6 (Aborted)\x01 -->\n";
    cg_github_report_parse(text, strlen(text), &r);
    assert_int_equal(r.verdict, CG_GITHUB_ERROR);
    assert_string_equal(r.reason, "canary died of signal 6 (Aborted)");
    char desc[600];
    assert_string_equal(cg_github_status_of(CG_GITHUB_ERROR, r.reason, desc, sizeof(desc)), "error");
    assert_string_equal(desc, "canary failed: canary died of signal 6 (Aborted)");
    assert_string_equal(cg_github_status_of(CG_GITHUB_ERROR, NULL, desc, sizeof(desc)), "error");
    assert_string_equal(desc, "canary failed");
    assert_string_equal(cg_github_status_of(CG_GITHUB_RECORDED, NULL, desc, sizeof(desc)),
                        "success");
    assert_string_equal(desc, "baseline recorded, nothing compared");
    assert_string_equal(cg_github_status_of(CG_GITHUB_FAIL, "ignored", desc, sizeof(desc)),
                        "failure");
    assert_int_equal(strncmp(desc, "FAIL: ", 6), 0);
    char reason[400];
    for (size_t i = 0; i < 199; i++) /* 199 two-byte characters */
        memcpy(reason + 2 * i, "\xc3\xa9", 2);
    reason[398] = '\0';
    cg_github_status_of(CG_GITHUB_ERROR, reason, desc, sizeof(desc));
    size_t chars = 0;
    for (size_t i = 0; desc[i]; i++)
        chars += ((unsigned char)desc[i] & 0xC0) != 0x80;
    assert_int_equal(chars, CG_GITHUB_STATUS_MAX_CHARS);
    assert_int_equal(((unsigned char)desc[strlen(desc) - 1] & 0xC0), 0x80); /* a whole é */
}

static void test_github__comment_body_takes_the_marker_of_the_id(void **state)
{
    (void)state;
    struct cg_buf b;
    struct cg_err err;
    const char *report = "<!-- canary-gate:old -->\n<!-- canary-gate-verdict: pass -->\n# PASS\n";
    cg_buf_init(&b, 1 << 20);
    assert_int_equal(cg_github_comment_body(report, strlen(report), "big", &b, &err), 0);
    assert_string_equal(cg_buf_str(&b),
                        "<!-- canary-gate:big -->\n<!-- canary-gate-verdict: pass -->\n# PASS\n");
    cg_buf_reset(&b);
    assert_int_equal(cg_github_comment_body(report, strlen(report), NULL, &b, &err), 0);
    assert_string_equal(cg_buf_str(&b), MARKER "\n<!-- canary-gate-verdict: pass -->\n# PASS\n");
    cg_buf_reset(&b);
    assert_int_equal(cg_github_comment_body("# bare\n", 7, NULL, &b, &err), 0);
    assert_string_equal(cg_buf_str(&b), MARKER "\n# bare\n");
    cg_buf_release(&b);
}

static void test_github__comment_body_is_cut_to_githubs_limit(void **state)
{
    (void)state;
    struct cg_buf report, b;
    struct cg_err err;
    cg_buf_init(&report, 1 << 22);
    cg_buf_init(&b, 1 << 22);
    assert_int_equal(cg_buf_adds(&report, MARKER "\n"), 0);
    for (int i = 0; i < 3000; i++) /* 3000 lines of 40 characters, 3 bytes each for "é" */
        assert_int_equal(cg_buf_printf(&report, "| kernel %04d | %s |\n", i,
                                       "éééééééééééééééééééééééééé"),
                         0);
    assert_int_equal(cg_github_comment_body(report.data, report.len, NULL, &b, &err), 0);
    size_t chars = 0;
    for (size_t i = 0; i < b.len; i++)
        chars += ((unsigned char)b.data[i] & 0xC0) != 0x80;
    assert_true(chars <= CG_GITHUB_COMMENT_MAX_UNITS);
    assert_true(chars > CG_GITHUB_COMMENT_MAX_UNITS - 200);
    assert_int_equal(strncmp(b.data, MARKER "\n| kernel 0000", strlen(MARKER) + 14), 0);
    assert_non_null(strstr(b.data, "|\n\n_The report was cut"));
    cg_buf_release(&report);
    cg_buf_release(&b);
}

/* The UTF-16 code units of n bytes of UTF-8, by glibc's iconv (an encoder of its own, not the
 * count under test): the bytes it writes to UTF-16LE, halved. A body that is not whole UTF-8 (a
 * cut inside a character) fails the test. */
static size_t utf16_units(const char *p, size_t n)
{
    iconv_t cd = iconv_open("UTF-16LE", "UTF-8");
    assert_true(cd != (iconv_t)-1);
    char out[1 << 16];
    char *in = (char *)p;
    size_t left = n, bytes = 0;
    while (left > 0) {
        char *o = out;
        size_t room = sizeof(out);
        size_t r = iconv(cd, &in, &left, &o, &room);
        if (r == (size_t)-1 && errno != E2BIG)
            fail_msg("not UTF-8 at byte %zu of %zu", n - left, n);
        bytes += sizeof(out) - room;
    }
    iconv_close(cd);
    return bytes / 2;
}

/* The body was cut to 65,536 characters, but GitHub may count UTF-16 code units, in which an
 * emoji (above U+FFFF) is two: a report of emoji lines under 65,536 characters but over 65,536
 * units was sent whole and could be refused, the comment lost. The cut counts UTF-16 units,
 * never fewer than characters, so the body fits whichever GitHub counts; a body within the
 * units is sent whole. The cut body is counted by iconv, and a report of 2-, 3- and 4-byte
 * characters is cut within 200 units of the limit (a 3-byte character counted as 2 units cut
 * it thousands early). Each report's size was computed once with Python 3:
 * len(s) characters and len(s.encode('utf-16-le')) // 2 units. */
static void test_github__comment_body_is_cut_to_githubs_limit_in_utf16_units(void **state)
{
    (void)state;
    static const struct {
        int lines, repeat; /* per line, repeat times glyphs */
        const char *glyphs;
        bool cut;
    } cases[] = {
        {3000, 20, "\xF0\x9F\x9A\x80", true},  /* U+1F680: 117,021 characters, 177,021 units */
        {1700, 18, "\xF0\x9F\x9A\x80", true},  /* 62,921 characters (under the limit), 93,521 */
        {1200, 16, "\xF0\x9F\x9A\x80", false}, /* 42,021 characters, 61,221 units: whole */
        /* "é€中🚀" (2, 3, 3 and 4 bytes; 1, 1, 1 and 2 units): 64,521 characters, 73,521 units */
        {1500, 6, "\xC3\xA9\xE2\x82\xAC\xE4\xB8\xAD\xF0\x9F\x9A\x80", true},
        {1000, 6, "\xC3\xA9\xE2\x82\xAC\xE4\xB8\xAD\xF0\x9F\x9A\x80", false}, /* 49,021 units */
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        struct cg_buf report, b;
        struct cg_err err;
        cg_buf_init(&report, 1 << 22);
        cg_buf_init(&b, 1 << 22);
        assert_int_equal(cg_buf_adds(&report, MARKER "\n"), 0);
        for (int i = 0; i < cases[c].lines; i++) {
            assert_int_equal(cg_buf_printf(&report, "| kernel %04d | ", i), 0);
            for (int k = 0; k < cases[c].repeat; k++)
                assert_int_equal(cg_buf_adds(&report, cases[c].glyphs), 0);
            assert_int_equal(cg_buf_adds(&report, " |\n"), 0);
        }
        assert_int_equal(cg_github_comment_body(report.data, report.len, NULL, &b, &err), 0);
        size_t units = utf16_units(b.data, b.len);
        if (units > CG_GITHUB_COMMENT_MAX_UNITS)
            fail_msg("case %zu: a body of %zu UTF-16 units", c, units);
        if (cases[c].cut) {
            if (units <= CG_GITHUB_COMMENT_MAX_UNITS - 200)
                fail_msg("case %zu: cut to %zu UTF-16 units, %d wanted", c, units,
                         CG_GITHUB_COMMENT_MAX_UNITS);
            assert_non_null(strstr(b.data, "|\n\n_The report was cut"));
        } else {
            assert_int_equal(b.len, report.len);
            assert_memory_equal(b.data, report.data, b.len);
        }
        cg_buf_release(&report);
        cg_buf_release(&b);
    }
}

/* A report cut inside open <details> blocks and inside a mermaid code fence: the comment closes
 * them before the note, so the note shows as text (rendered by cmark-gfm: balanced <details>,
 * the note outside every block and outside any code). */
static void test_github__cut_closes_open_blocks_before_the_note(void **state)
{
    (void)state;
    for (int fence = 0; fence < 2; fence++) {
        struct cg_buf report, b;
        struct cg_err err;
        cg_buf_init(&report, 1 << 22);
        cg_buf_init(&b, 1 << 22);
        assert_int_equal(cg_buf_adds(&report, MARKER "\n<!-- canary-gate-verdict: fail -->\n## head\n\n"
                                              "<details><summary>outer</summary>\n\n"
                                              "<details><summary>inner</summary>\n\n"),
                         0);
        if (fence)
            assert_int_equal(cg_buf_adds(&report, "```mermaid\nxychart-beta\n"), 0);
        for (int i = 0; i < 3000; i++)
            assert_int_equal(cg_buf_printf(&report, "    line [%04d, 10.5, 11.25, 12.125, 13]\n", i),
                             0);
        assert_int_equal(cg_buf_adds(&report, fence ? "```\n\n</details>\n</details>\n"
                                                    : "\n</details>\n</details>\n"),
                         0);
        assert_int_equal(cg_github_comment_body(report.data, report.len, NULL, &b, &err), 0);
        assert_true(b.len <= CG_GITHUB_COMMENT_MAX_UNITS);
        char *html = cg_render_gfm(b.data, b.len);
        cg_render_check_gfm(html, fence ? "cut in a code fence" : "cut in <details>");
        const char *note = strstr(html, "<em>The report was cut to fit GitHub's comment limit");
        if (note == NULL)
            fail_msg("the note is not shown as text:\n%s", html + strlen(html) - 400);
        const char *last_close = NULL;
        for (const char *p = strstr(html, "</details>"); p != NULL; p = strstr(p + 1, "</details>"))
            last_close = p;
        assert_non_null(last_close);
        assert_true(note > last_close); /* outside every <details> */
        free(html);
        cg_buf_release(&report);
        cg_buf_release(&b);
    }
}

/* A cut inside a fence of four backticks (the log tail's fence when the canary printed ```), of
 * tildes, or of more: the fence is closed with as many of its characters (``` inside closes
 * nothing), so the note shows as text. */
static void test_github__cut_closes_fences_of_any_length(void **state)
{
    (void)state;
    static const char *const fences[] = {"````text", "~~~~", "  `````", "~~~"};
    for (size_t f = 0; f < sizeof(fences) / sizeof(fences[0]); f++) {
        struct cg_buf report, b;
        struct cg_err err;
        cg_buf_init(&report, 1 << 22);
        cg_buf_init(&b, 1 << 22);
        assert_int_equal(cg_buf_printf(&report,
                                       MARKER "\n<!-- canary-gate-verdict: error -->\n## head\n\n"
                                              "%s\n",
                                       fences[f]),
                         0);
        for (int i = 0; i < 3000; i++)
            assert_int_equal(cg_buf_printf(&report, "%s\nlog line %04d of the canary ~~~\n",
                                           i % 7 == 0 ? "```" : "~~~ x", i),
                             0);
        assert_int_equal(cg_buf_adds(&report, fences[f][0] == ' ' ? "  `````\n" : fences[f]), 0);
        assert_int_equal(cg_buf_adds(&report, "\n\nafter\n"), 0);
        assert_int_equal(cg_github_comment_body(report.data, report.len, NULL, &b, &err), 0);
        assert_true(b.len <= CG_GITHUB_COMMENT_MAX_UNITS); /* ASCII: a byte a character */
        char *html = cg_render_gfm(b.data, b.len);
        cg_render_check_gfm(html, fences[f]);
        if (strstr(html, "<em>The report was cut to fit GitHub's comment limit") == NULL)
            fail_msg("%s: the note is not shown as text:\n%s", fences[f],
                     html + strlen(html) - 400);
        free(html);
        cg_buf_release(&report);
        cg_buf_release(&b);
    }
}

static void test_github__checks_ids_repos_and_shas(void **state)
{
    (void)state;
    struct cg_err err;
    char m[128];
    assert_int_equal(cg_github_id_check("big-model_2.x", &err), 0);
    assert_int_equal(cg_github_id_check("two words", &err), CG_EINPUT);
    assert_int_equal(cg_github_id_check("a-->b", &err), CG_EINPUT);
    assert_int_equal(cg_github_id_check("", &err), CG_EINPUT);
    assert_int_equal(cg_github_repo_check("octo/repo.js", &err), 0);
    assert_int_equal(cg_github_repo_check("octo", &err), CG_EINPUT);
    assert_int_equal(cg_github_repo_check("octo/a/b", &err), CG_EINPUT);
    assert_int_equal(cg_github_repo_check("octo/../x?y", &err), CG_EINPUT);
    assert_int_equal(cg_github_sha_check(SHA, &err), 0);
    assert_int_equal(cg_github_sha_check("abc", &err), CG_EINPUT);
    assert_int_equal(cg_github_sha_check("0123456g", &err), CG_EINPUT);
    assert_int_equal(cg_github_marker(NULL, m, sizeof(m)), 0);
    assert_string_equal(m, MARKER);
    assert_int_equal(cg_github_marker("x", m, sizeof(m)), 0);
    assert_string_equal(m, "<!-- canary-gate:x -->");
}

/* ---- against the server --------------------------------------------------------------------- */

struct fixture {
    struct cg_httpd *srv;
    struct cg_http http;
    struct cg_github gh;
    struct cg_github_comment_result res;
    struct cg_err err;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct cg_http_options o;
    assert_non_null(f);
    f->srv = cg_httpd_start();
    assert_non_null(f->srv);
    cg_httpd_github(f->srv, "o/r", 7, TOKEN, 100);
    cg_http_options_default(&o);
    o.backoff_base_ms = 5;
    o.backoff_max_ms = 1000;
    o.retry_budget_ms = 2000;
    o.max_attempts = 4;
    o.timeout_ms = 5000;
    assert_int_equal(cg_http_init(&f->http, &o, &f->err), 0);
    f->gh.http = &f->http;
    f->gh.api_url = cg_httpd_url(f->srv);
    f->gh.repo = "o/r";
    f->gh.token = TOKEN;
    cg_err_init(&f->err);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    cg_http_release(&f->http);
    cg_httpd_stop(f->srv);
    free(f);
    return 0;
}

static int publish(struct fixture *f, const char *id, const char *body, enum cg_github_mode mode,
                   enum cg_github_verdict v)
{
    cg_err_init(&f->err);
    return cg_github_comment_publish(&f->gh, 7, id, body, mode, v, &f->res, &f->err);
}

static void assert_comment(struct fixture *f, size_t i, const char *body)
{
    char *c = cg_httpd_comment(f->srv, i, NULL);
    assert_non_null(c);
    assert_string_equal(c, body);
    free(c);
}

static void test_github__creates_the_comment(void **state)
{
    struct fixture *f = *state;
    cg_httpd_add_comment(f->srv, "LGTM");
    assert_int_equal(publish(f, NULL, MARKER "\nfirst", CG_GITHUB_MODE_ALWAYS, CG_GITHUB_FAIL), 0);
    assert_int_equal(f->res.action, CG_GITHUB_CREATED);
    assert_true(f->res.comment_id > 0);
    assert_non_null(strstr(f->res.html_url, "https://github.com/o/r/pull/7#issuecomment-"));
    assert_int_equal(cg_httpd_comment_count(f->srv), 2);
    assert_comment(f, 1, MARKER "\nfirst");
    assert_int_equal(cg_httpd_count(f->srv), 2);
    const struct cg_httpd_request *r0 = cg_httpd_request(f->srv, 0);
    const struct cg_httpd_request *r1 = cg_httpd_request(f->srv, 1);
    assert_string_equal(r0->method, "GET");
    assert_string_equal(r0->target, "/repos/o/r/issues/7/comments?per_page=100");
    assert_string_equal(r1->method, "POST");
    assert_string_equal(r1->target, "/repos/o/r/issues/7/comments");
}

static void test_github__updates_the_comment_in_place(void **state)
{
    struct fixture *f = *state;
    char target[128];
    cg_httpd_add_comment(f->srv, "a review");
    long long id = cg_httpd_add_comment(f->srv, MARKER "\nold");
    cg_httpd_add_comment(f->srv, "> " MARKER "\nquoted by someone");
    assert_int_equal(publish(f, NULL, MARKER "\nnew", CG_GITHUB_MODE_ALWAYS, CG_GITHUB_PASS), 0);
    assert_int_equal(f->res.action, CG_GITHUB_UPDATED);
    assert_int_equal(f->res.comment_id, id);
    assert_int_equal(cg_httpd_comment_count(f->srv), 3);
    assert_comment(f, 1, MARKER "\nnew");
    assert_comment(f, 2, "> " MARKER "\nquoted by someone");
    const struct cg_httpd_request *r1 = cg_httpd_request(f->srv, 1);
    snprintf(target, sizeof(target), "/repos/o/r/issues/comments/%lld", id);
    assert_string_equal(r1->method, "PATCH");
    assert_string_equal(r1->target, target);
}

static void test_github__finds_the_marker_on_page_2_of_3(void **state)
{
    struct fixture *f = *state;
    cg_httpd_github(f->srv, "o/r", 7, TOKEN, 2); /* the server gives 2 per page */
    cg_httpd_add_comment(f->srv, "one");
    cg_httpd_add_comment(f->srv, "two");
    cg_httpd_add_comment(f->srv, "three");
    long long id = cg_httpd_add_comment(f->srv, MARKER "\nold");
    cg_httpd_add_comment(f->srv, "five");
    assert_int_equal(publish(f, NULL, MARKER "\nnew", CG_GITHUB_MODE_ALWAYS, CG_GITHUB_FAIL), 0);
    assert_int_equal(f->res.action, CG_GITHUB_UPDATED);
    assert_int_equal(f->res.comment_id, id);
    assert_comment(f, 3, MARKER "\nnew");
    assert_int_equal(cg_httpd_count(f->srv), 3); /* page 1, page 2 (found), PATCH */
    assert_non_null(strstr(cg_httpd_request(f->srv, 1)->target, "page=2"));
    assert_string_equal(cg_httpd_request(f->srv, 2)->method, "PATCH");
    assert_string_equal(cg_httpd_header(cg_httpd_request(f->srv, 1), "Authorization",
                                        (char[64]){0}, 64),
                        "Bearer " TOKEN);
}

static void test_github__reads_every_page_before_creating(void **state)
{
    struct fixture *f = *state;
    cg_httpd_github(f->srv, "o/r", 7, TOKEN, 2);
    for (int i = 0; i < 5; i++)
        cg_httpd_add_comment(f->srv, "chatter");
    assert_int_equal(publish(f, NULL, MARKER "\nnew", CG_GITHUB_MODE_ALWAYS, CG_GITHUB_FAIL), 0);
    assert_int_equal(f->res.action, CG_GITHUB_CREATED);
    assert_int_equal(cg_httpd_count(f->srv), 4);
    assert_non_null(strstr(cg_httpd_request(f->srv, 2)->target, "page=3"));
    assert_string_equal(cg_httpd_request(f->srv, 3)->method, "POST");
}

static void test_github__two_gate_ids_keep_two_comments(void **state)
{
    struct fixture *f = *state;
    const char *big = "<!-- canary-gate:big -->\nbig 1";
    assert_int_equal(publish(f, NULL, MARKER "\nsmall 1", CG_GITHUB_MODE_ALWAYS, CG_GITHUB_PASS), 0);
    assert_int_equal(publish(f, "big", big, CG_GITHUB_MODE_ALWAYS, CG_GITHUB_PASS), 0);
    assert_int_equal(f->res.action, CG_GITHUB_CREATED);
    assert_int_equal(publish(f, NULL, MARKER "\nsmall 2", CG_GITHUB_MODE_ALWAYS, CG_GITHUB_PASS), 0);
    assert_int_equal(f->res.action, CG_GITHUB_UPDATED);
    assert_int_equal(publish(f, "big", "<!-- canary-gate:big -->\nbig 2", CG_GITHUB_MODE_ALWAYS,
                             CG_GITHUB_PASS),
                     0);
    assert_int_equal(f->res.action, CG_GITHUB_UPDATED);
    assert_int_equal(cg_httpd_comment_count(f->srv), 2);
    assert_comment(f, 0, MARKER "\nsmall 2");
    assert_comment(f, 1, "<!-- canary-gate:big -->\nbig 2");
}

static void test_github__comment_modes(void **state)
{
    struct fixture *f = *state;
    /* never: not even a lookup */
    assert_int_equal(publish(f, NULL, MARKER "\nx", CG_GITHUB_MODE_NEVER, CG_GITHUB_FAIL), 0);
    assert_int_equal(f->res.action, CG_GITHUB_SKIPPED);
    assert_int_equal(cg_httpd_count(f->srv), 0);
    /* on-regression, pass, no comment yet: nothing posted */
    assert_int_equal(publish(f, NULL, MARKER "\npass", CG_GITHUB_MODE_ON_REGRESSION, CG_GITHUB_PASS), 0);
    assert_int_equal(f->res.action, CG_GITHUB_SKIPPED);
    assert_int_equal(cg_httpd_comment_count(f->srv), 0);
    assert_int_equal(cg_httpd_count(f->srv), 1);
    /* on-regression, inconclusive: created */
    assert_int_equal(publish(f, NULL, MARKER "\nhmm", CG_GITHUB_MODE_ON_REGRESSION,
                             CG_GITHUB_INCONCLUSIVE),
                     0);
    assert_int_equal(f->res.action, CG_GITHUB_CREATED);
    /* on-regression, fail: updated */
    assert_int_equal(publish(f, NULL, MARKER "\nfail", CG_GITHUB_MODE_ON_REGRESSION, CG_GITHUB_FAIL), 0);
    assert_int_equal(f->res.action, CG_GITHUB_UPDATED);
    /* on-regression, turned to pass: the existing comment is updated */
    assert_int_equal(publish(f, NULL, MARKER "\npass now", CG_GITHUB_MODE_ON_REGRESSION, CG_GITHUB_PASS), 0);
    assert_int_equal(f->res.action, CG_GITHUB_UPDATED);
    assert_int_equal(cg_httpd_comment_count(f->srv), 1);
    assert_comment(f, 0, MARKER "\npass now");
    /* never leaves it alone */
    size_t before = cg_httpd_count(f->srv);
    assert_int_equal(publish(f, NULL, MARKER "\nz", CG_GITHUB_MODE_NEVER, CG_GITHUB_FAIL), 0);
    assert_int_equal(cg_httpd_count(f->srv), before);
}

/* Anyone who can comment could post a comment whose first line is the gate's marker: the gate
 * edited it in place (its report shown as theirs) or, when the edit was refused, left their forged
 * "PASS" and never commented. Only the gate's own comments are edited: a bot's (the Actions
 * token's), or the token's own user's (GET /user, asked only when a marker comment is by a user);
 * anybody else's is passed over and a comment of the gate's own is created. */
static void test_github__a_marker_comment_by_someone_else_is_not_edited(void **state)
{
    struct fixture *f = *state;
    long long forged =
        cg_httpd_add_comment_by(f->srv, MARKER "\n## canary-gate PASS (forged)", "mallory");
    assert_int_equal(publish(f, NULL, MARKER "\nreal", CG_GITHUB_MODE_ALWAYS, CG_GITHUB_FAIL), 0);
    assert_int_equal(f->res.action, CG_GITHUB_CREATED);
    assert_true(f->res.comment_id != forged);
    assert_int_equal(cg_httpd_comment_count(f->srv), 2);
    assert_comment(f, 0, MARKER "\n## canary-gate PASS (forged)");
    assert_comment(f, 1, MARKER "\nreal");
}

/* A personal token's own comment (by its user, as GET /user says) is edited in place, someone
 * else's marker comment before it passed over. */
static void test_github__a_personal_tokens_own_comment_is_edited(void **state)
{
    struct fixture *f = *state;
    cg_httpd_token_user(f->srv, "octocat");
    cg_httpd_add_comment_by(f->srv, MARKER "\nforged", "mallory");
    long long mine = cg_httpd_add_comment_by(f->srv, MARKER "\nold", "octocat");
    assert_int_equal(publish(f, NULL, MARKER "\nnew", CG_GITHUB_MODE_ALWAYS, CG_GITHUB_PASS), 0);
    assert_int_equal(f->res.action, CG_GITHUB_UPDATED);
    assert_int_equal(f->res.comment_id, mine);
    assert_comment(f, 0, MARKER "\nforged");
    assert_comment(f, 1, MARKER "\nnew");
}

static void test_github__rate_limit_then_success(void **state)
{
    struct fixture *f = *state;
    char headers[128];
    snprintf(headers, sizeof(headers),
             "x-ratelimit-limit: 5000\r\nx-ratelimit-remaining: 0\r\nx-ratelimit-reset: %lld\r\n",
             (long long)time(NULL) - 1);
    cg_httpd_push(f->srv, 403, headers, "{\"message\":\"API rate limit exceeded\"}");
    cg_httpd_push(f->srv, 429, "Retry-After: 0\r\n", "{\"message\":\"secondary rate limit\"}");
    assert_int_equal(publish(f, NULL, MARKER "\nx", CG_GITHUB_MODE_ALWAYS, CG_GITHUB_FAIL), 0);
    assert_int_equal(f->res.action, CG_GITHUB_CREATED);
    assert_int_equal(cg_httpd_count(f->srv), 4); /* 403, 429, GET, POST */
}

static void test_github__rate_limit_too_long_gives_up_with_a_message(void **state)
{
    struct fixture *f = *state;
    char headers[128];
    snprintf(headers, sizeof(headers), "x-ratelimit-remaining: 0\r\nx-ratelimit-reset: %lld\r\n",
             (long long)time(NULL) + 3600);
    cg_httpd_push(f->srv, 403, headers, "{\"message\":\"API rate limit exceeded\"}");
    assert_int_equal(publish(f, NULL, MARKER "\nx", CG_GITHUB_MODE_ALWAYS, CG_GITHUB_FAIL), CG_ENET);
    assert_non_null(strstr(f->err.msg, "cannot list the comments of 'o/r#7': github rate limit reached (403)"));
    assert_non_null(strstr(f->err.msg, "resets in 3"));
    assert_int_equal(cg_httpd_count(f->srv), 1);
}

static void test_github__5xx_retried_then_given_up(void **state)
{
    struct fixture *f = *state;
    for (int i = 0; i < 4; i++)
        cg_httpd_push(f->srv, 502, NULL, "<html>bad gateway</html>");
    assert_int_equal(publish(f, NULL, MARKER "\nx", CG_GITHUB_MODE_ALWAYS, CG_GITHUB_FAIL), CG_ENET);
    assert_non_null(strstr(f->err.msg, "cannot list the comments of 'o/r#7': github answered 502 4 times"));
    assert_non_null(strstr(f->err.msg, "giving up"));
    assert_int_equal(cg_httpd_count(f->srv), 4);
    assert_int_equal(cg_httpd_comment_count(f->srv), 0);
}

static void test_github__create_retried_after_5xx_when_nothing_was_created(void **state)
{
    struct fixture *f = *state;
    cg_httpd_push(f->srv, 200, NULL, "[]");
    cg_httpd_push(f->srv, 503, NULL, "unavailable");
    assert_int_equal(publish(f, NULL, MARKER "\nx", CG_GITHUB_MODE_ALWAYS, CG_GITHUB_FAIL), 0);
    assert_int_equal(f->res.action, CG_GITHUB_CREATED);
    assert_int_equal(cg_httpd_comment_count(f->srv), 1);
    assert_int_equal(cg_httpd_count(f->srv), 4); /* GET, POST 503, GET, POST */
}

static void test_github__create_not_duplicated_when_a_5xx_hid_success(void **state)
{
    struct fixture *f = *state;
    /* the POST "failed" with 502 but GitHub had created the comment */
    long long id = cg_httpd_add_comment(f->srv, MARKER "\nx");
    cg_httpd_push(f->srv, 200, NULL, "[]");
    cg_httpd_push(f->srv, 502, NULL, "bad gateway");
    assert_int_equal(publish(f, NULL, MARKER "\nx", CG_GITHUB_MODE_ALWAYS, CG_GITHUB_FAIL), 0);
    assert_int_equal(f->res.action, CG_GITHUB_CREATED);
    assert_int_equal(f->res.comment_id, id);
    assert_int_equal(cg_httpd_comment_count(f->srv), 1);
    assert_string_equal(cg_httpd_request(f->srv, 3)->method, "PATCH");
}

static void test_github__a_comment_deleted_before_its_update_is_created_again(void **state)
{
    struct fixture *f = *state;
    /* the page listed the gate's comment; somebody deleted it before the PATCH arrived */
    cg_httpd_push(f->srv, 200, NULL,
                  "[{\"id\":424242,\"body\":\"" MARKER "\\nold\",\"user\":{\"login\":"
                  "\"github-actions[bot]\",\"type\":\"Bot\"}}]");
    assert_int_equal(publish(f, NULL, MARKER "\nnew", CG_GITHUB_MODE_ALWAYS, CG_GITHUB_FAIL), 0);
    assert_int_equal(f->res.action, CG_GITHUB_CREATED);
    assert_true(f->res.comment_id > 0 && f->res.comment_id != 424242);
    assert_int_equal(cg_httpd_comment_count(f->srv), 1);
    assert_comment(f, 0, MARKER "\nnew");
    assert_int_equal(cg_httpd_count(f->srv), 3); /* GET, PATCH 404, POST */
    assert_string_equal(cg_httpd_request(f->srv, 1)->method, "PATCH");
    assert_string_equal(cg_httpd_request(f->srv, 2)->method, "POST");
}

static void test_github__401_says_the_token_was_rejected(void **state)
{
    struct fixture *f = *state;
    cg_httpd_github(f->srv, "o/r", 7, "ghp_SOMEOTHERTOKEN", 100);
    assert_int_equal(publish(f, NULL, MARKER "\nx", CG_GITHUB_MODE_ALWAYS, CG_GITHUB_FAIL), CG_ENET);
    assert_string_equal(f->err.msg, "cannot list the comments of 'o/r#7': github rejected the token "
                                    "(401 Bad credentials): check GITHUB_TOKEN");
    assert_int_equal(cg_httpd_count(f->srv), 1);
}

static void test_github__403_points_to_forks(void **state)
{
    struct fixture *f = *state;
    cg_httpd_push(f->srv, 200, NULL, "[]");
    cg_httpd_push(f->srv, 403, NULL, "{\"message\":\"Resource not accessible by integration\"}");
    assert_int_equal(publish(f, NULL, MARKER "\nx", CG_GITHUB_MODE_ALWAYS, CG_GITHUB_FAIL), CG_ENET);
    assert_string_equal(f->err.msg,
                        "cannot create the comment on 'o/r#7': the token cannot write to 'o/r' (403 "
                        "Resource not accessible by integration); typical for pull requests from "
                        "forks, whose token is read-only: see \"Pull requests from forks\" in "
                        "docs/github.md");
    assert_int_equal(cg_httpd_count(f->srv), 2);
}

static void test_github__404_names_repository_and_pull_request(void **state)
{
    struct fixture *f = *state;
    f->gh.repo = "o/missing";
    assert_int_equal(publish(f, NULL, MARKER "\nx", CG_GITHUB_MODE_ALWAYS, CG_GITHUB_FAIL), CG_ENET);
    assert_string_equal(f->err.msg, "cannot list the comments of 'o/missing#7': repository "
                                    "'o/missing' or pull request #7 not found (404)");
}

static void test_github__422_carries_githubs_reason(void **state)
{
    struct fixture *f = *state;
    cg_httpd_push(f->srv, 422, NULL,
                  "{\"message\":\"Validation Failed\",\"errors\":[{\"resource\":\"Status\",\"code\":"
                  "\"custom\",\"field\":\"sha\",\"message\":\"No commit found for SHA: " SHA "\"}]}");
    assert_int_equal(cg_github_status_set(&f->gh, SHA, NULL, CG_GITHUB_FAIL, NULL, &f->err), CG_ENET);
    assert_string_equal(f->err.msg, "cannot set the commit status of 'o/r@0123456789ab': github "
                                    "rejected the request (422 Validation Failed: No commit found "
                                    "for SHA: " SHA ")");
}

static void test_github__status_context_state_and_description(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(cg_github_status_set(&f->gh, SHA, NULL, CG_GITHUB_PASS, NULL, &f->err), 0);
    assert_int_equal(cg_github_status_set(&f->gh, SHA, "big", CG_GITHUB_FAIL,
                                          "https://github.com/o/r/actions/runs/9", &f->err),
                     0);
    assert_int_equal(cg_github_status_set(&f->gh, SHA, NULL, CG_GITHUB_INCONCLUSIVE, NULL, &f->err), 0);
    assert_int_equal(cg_httpd_status_count(f->srv), 3);
    char *s0 = cg_httpd_status(f->srv, 0), *s1 = cg_httpd_status(f->srv, 1),
         *s2 = cg_httpd_status(f->srv, 2);
    assert_string_equal(s0, SHA " {\"state\":\"success\",\"context\":\"canary-gate\",\"description\":"
                            "\"PASS: no regression beyond the thresholds\"}");
    assert_non_null(strstr(s1, "\"state\":\"failure\",\"context\":\"canary-gate/big\""));
    assert_non_null(strstr(s1, "\"target_url\":\"https://github.com/o/r/actions/runs/9\""));
    assert_non_null(strstr(s2, "\"state\":\"error\""));
    assert_string_equal(cg_httpd_request(f->srv, 0)->target, "/repos/o/r/statuses/" SHA);
    free(s0);
    free(s1);
    free(s2);
    assert_int_equal(cg_github_status_set(&f->gh, "nope", NULL, CG_GITHUB_PASS, NULL, &f->err),
                     CG_EINPUT);
}

static void test_github__never_follows_a_link_to_another_host(void **state)
{
    struct fixture *f = *state;
    cg_httpd_push(f->srv, 200, "Link: <http://elsewhere.invalid/steal?page=2>; rel=\"next\"\r\n", "[]");
    long long id = 0;
    assert_int_equal(cg_github_comment_find(&f->gh, 7, MARKER, &id, &f->err), CG_ENET);
    assert_non_null(strstr(f->err.msg, "another host"));
    assert_int_equal(cg_httpd_count(f->srv), 1);
}

static void collect(void *ctx, const char *text)
{
    cg_buf_adds(ctx, text);
}

static void test_github__dry_run_sends_nothing(void **state)
{
    struct fixture *f = *state;
    struct cg_http dry;
    struct cg_http_options o;
    struct cg_buf out;
    cg_buf_init(&out, 1 << 20);
    cg_http_options_default(&o);
    o.dry_run = 1;
    o.trace = collect;
    o.trace_ctx = &out;
    assert_int_equal(cg_http_init(&dry, &o, &f->err), 0);
    f->gh.http = &dry;
    assert_int_equal(publish(f, NULL, MARKER "\nx", CG_GITHUB_MODE_ALWAYS, CG_GITHUB_FAIL), 0);
    assert_int_equal(f->res.action, CG_GITHUB_CREATED);
    assert_int_equal(cg_github_status_set(&f->gh, SHA, NULL, CG_GITHUB_FAIL, NULL, &f->err), 0);
    assert_int_equal(cg_httpd_count(f->srv), 0);
    assert_non_null(strstr(cg_buf_str(&out), "GET "));
    assert_non_null(strstr(cg_buf_str(&out), "POST "));
    assert_null(strstr(cg_buf_str(&out), TOKEN));
    cg_http_release(&dry);
    cg_buf_release(&out);
}

static void test_github__summary_is_appended(void **state)
{
    (void)state;
    struct cg_err err;
    char path[] = "/tmp/cg-summary-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(cg_github_summary_append(path, "# one\n", 6, &err), 0);
    assert_int_equal(cg_github_summary_append(path, "# two", 5, &err), 0);
    FILE *fp = fopen(path, "r");
    char buf[64] = {0};
    assert_non_null(fp);
    assert_int_equal(fread(buf, 1, sizeof(buf) - 1, fp), 12);
    fclose(fp);
    assert_string_equal(buf, "# one\n# two\n");
    unlink(path);
    assert_int_equal(cg_github_summary_append("/nonexistent-dir/x.md", "x", 1, &err), CG_EIO);
    assert_non_null(strstr(err.msg, "'/nonexistent-dir/x.md'"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_github__link_next_table),
        cmocka_unit_test(test_github__event_pull_request),
        cmocka_unit_test(test_github__event_comment_on_pull_request),
        cmocka_unit_test(test_github__event_push_has_no_pull_request),
        cmocka_unit_test(test_github__event_malformed_is_rejected),
        cmocka_unit_test(test_github__event_parser_survives_arbitrary_bytes),
        cmocka_unit_test(test_github__report_markers),
        cmocka_unit_test(test_github__marker_lines_written_are_read_back),
        cmocka_unit_test(test_github__status_tells_what_happened),
        cmocka_unit_test(test_github__comment_body_takes_the_marker_of_the_id),
        cmocka_unit_test(test_github__comment_body_is_cut_to_githubs_limit),
        cmocka_unit_test(test_github__comment_body_is_cut_to_githubs_limit_in_utf16_units),
        cmocka_unit_test(test_github__cut_closes_open_blocks_before_the_note),
        cmocka_unit_test(test_github__cut_closes_fences_of_any_length),
        cmocka_unit_test(test_github__checks_ids_repos_and_shas),
        cmocka_unit_test(test_github__summary_is_appended),
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
        T(test_github__creates_the_comment),
        T(test_github__updates_the_comment_in_place),
        T(test_github__finds_the_marker_on_page_2_of_3),
        T(test_github__reads_every_page_before_creating),
        T(test_github__two_gate_ids_keep_two_comments),
        T(test_github__comment_modes),
        T(test_github__a_marker_comment_by_someone_else_is_not_edited),
        T(test_github__a_personal_tokens_own_comment_is_edited),
        T(test_github__rate_limit_then_success),
        T(test_github__rate_limit_too_long_gives_up_with_a_message),
        T(test_github__5xx_retried_then_given_up),
        T(test_github__create_retried_after_5xx_when_nothing_was_created),
        T(test_github__create_not_duplicated_when_a_5xx_hid_success),
        T(test_github__a_comment_deleted_before_its_update_is_created_again),
        T(test_github__401_says_the_token_was_rejected),
        T(test_github__403_points_to_forks),
        T(test_github__404_names_repository_and_pull_request),
        T(test_github__422_carries_githubs_reason),
        T(test_github__status_context_state_and_description),
        T(test_github__never_follows_a_link_to_another_host),
        T(test_github__dry_run_sends_nothing),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
