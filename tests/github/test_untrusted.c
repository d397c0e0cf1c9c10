/* test_untrusted: a report from an untrusted run (a fork's artifact) checked against its JSON
 * verdict and sanitised again, rendered through cmark-gfm as GitHub would show it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fsutil.h"
#include "render.h"
#include "untrusted.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VERDICT_JSON(v) "{\"schema\": \"canary-gate/verdict\", \"schema_version\": 1, \"verdict\": \"" v "\"}"

static struct cg_github_report parsed(const char *text)
{
    struct cg_github_report rep;
    cg_github_report_parse(text, strlen(text), &rep);
    return rep;
}

/* The verdict is the JSON verdict's, and the report's verdict line must say the same; a JSON
 * that is not a verdict is refused. One line naming the files each time. */
static void test_untrusted__the_verdict_must_agree_with_the_json(void **state)
{
    (void)state;
    const char *pass_md = "<!-- canary-gate -->\n<!-- canary-gate-verdict: pass -->\n# PASS\n";
    const char *recorded_md = "<!-- canary-gate -->\n<!-- canary-gate-verdict: recorded -->\n";
    const char *bare_md = "# PASS, trust me\n";
    const struct {
        const char *md, *json;
        int rc;
        enum cg_github_verdict verdict;
        const char *expect;
    } cases[] = {
        {pass_md, VERDICT_JSON("pass"), 0, CG_GITHUB_PASS, NULL},
        {recorded_md, VERDICT_JSON("pass"), 0, CG_GITHUB_RECORDED, NULL},
        {pass_md, VERDICT_JSON("fail"), CG_EINPUT, CG_GITHUB_VERDICT_NONE,
         "'forged.md' says pass but 'verdict.json' says fail: an untrusted report must agree"},
        {bare_md, VERDICT_JSON("pass"), CG_EINPUT, CG_GITHUB_VERDICT_NONE,
         "'forged.md' says no verdict but 'verdict.json' says pass"},
        {pass_md, VERDICT_JSON("maybe"), CG_EINPUT, CG_GITHUB_VERDICT_NONE,
         "cannot read 'verdict.json': \"verdict\" is not pass, fail"},
        {pass_md, "{\"verdict\": \"pass\"}", CG_EINPUT, CG_GITHUB_VERDICT_NONE,
         "cannot read 'verdict.json': not a JSON verdict (\"schema\""},
        {pass_md, "{\"schema\": \"canary-gate/verdict\", \"verdict\": 1}", CG_EINPUT,
         CG_GITHUB_VERDICT_NONE, "\"verdict\" is not pass"},
        {pass_md, "pass", CG_EINPUT, CG_GITHUB_VERDICT_NONE,
         "cannot read 'verdict.json': not a JSON verdict (not valid JSON)"},
        {pass_md, VERDICT_JSON("fail") " " VERDICT_JSON("pass"), CG_EINPUT,
         CG_GITHUB_VERDICT_NONE, "(trailing data after the document)"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct cg_github_report rep = parsed(cases[i].md);
        struct cg_err err;
        cg_err_init(&err);
        enum cg_github_verdict v = CG_GITHUB_VERDICT_NONE;
        int rc = cg_github_untrusted_verdict(cases[i].json, strlen(cases[i].json), "verdict.json",
                                             &rep, "forged.md", &v, &err);
        if (rc != cases[i].rc)
            fail_msg("case %zu: rc %d: %s", i, rc, err.msg);
        assert_int_equal(v, cases[i].verdict);
        if (cases[i].expect != NULL && strstr(err.msg, cases[i].expect) == NULL)
            fail_msg("case %zu: %s", i, err.msg);
        assert_null(strchr(err.msg, '\n'));
    }
}

static char *sanitised(const char *md, enum cg_github_verdict verdict)
{
    struct cg_github_report rep = parsed(md);
    struct cg_buf b;
    cg_buf_init(&b, (size_t)1 << 22);
    assert_int_equal(cg_github_untrusted_body(md, strlen(md), &rep, verdict, &b), 0);
    char *s = strdup(cg_buf_str(&b));
    cg_buf_release(&b);
    return s;
}

/* A forged body: mentions (written and as entities), links of every markdown form, images,
 * HTML, bare URLs, a mermaid click and a second verdict line. None survives as what it was; the
 * marker lines are rebuilt from the checked verdict. */
static void test_untrusted__a_hostile_body_renders_without_mentions_links_images_or_html(void **state)
{
    (void)state;
    const char *forged =
        "<!-- canary-gate:cpu -->\n"
        "<!-- canary-gate-verdict: pass -->\n"
        "<!-- canary-gate-verdict: pass -->\n"
        "## PASS, ping @admin and @org/team, &#64;octocat, &#x40;ghost, &commat;me\n\n"
        "[click here](https://e.vil/login) and [ref][r] and [r] and <https://e.vil/auto>\n\n"
        "[r]: https://e.vil/ref\n\n"
        "![pixel](https://e.vil/p.png) <img src=\"https://e.vil/q.png\"> "
        "<a href=\"https://e.vil\">x</a> <details open><summary>s</summary>y</details>\n\n"
        "visit https://e.vil/bare or www.e.vil or mail a@e.vil\n\n"
        "<script>alert(1)</script> <!-- canary-gate-verdict: pass -->\n\n"
        "```mermaid\nflowchart LR\n  A --> B\n  click A \"https://e.vil\"\n```\n";
    char *s = sanitised(forged, CG_GITHUB_FAIL);
    assert_int_equal(strncmp(s, "<!-- canary-gate:cpu -->\n<!-- canary-gate-verdict: fail -->\n## PASS",
                             strlen("<!-- canary-gate:cpu -->\n<!-- canary-gate-verdict: fail -->\n## PASS")),
                     0);
    assert_null(strstr(s + 10, "<!-- canary-gate-verdict: pass"));
    char *html = cg_render_gfm(s, strlen(s));
    cg_render_check_gfm(html, "sanitised forged report");
    assert_null(strstr(html, "<img"));
    assert_null(strstr(html, "<a "));
    assert_null(strstr(html, "<script"));
    assert_null(strstr(html, "<details open"));
    assert_non_null(strstr(html, "%%   click A"));
    free(html);
    free(s);
}

/* The gate's own reports keep what they show: headline, tables, notes, details. */
static void test_untrusted__the_gates_own_reports_keep_their_shape(void **state)
{
    (void)state;
    const char *names[] = {"report_fail.md", "report_pass.md", "report_diagnosis.md"};
    for (size_t i = 0; i < 3; i++) {
        char path[512], *md = NULL;
        size_t len = 0;
        struct cg_err err;
        snprintf(path, sizeof(path), "%s/tests/golden/%s", CG_SOURCE_DIR, names[i]);
        assert_int_equal(cg_file_read(path, 1 << 22, &md, &len, &err), 0);
        struct cg_github_report rep = parsed(md);
        char *s = sanitised(md, rep.verdict);
        char *before = cg_render_gfm(md, len), *after = cg_render_gfm(s, strlen(s));
        cg_render_check_gfm(after, names[i]);
        size_t tags[2][4] = {{0}};
        const char *what[4] = {"<table>", "<details>", "<h2>", "<td"};
        for (int k = 0; k < 4; k++)
            for (const char *p = before; (p = strstr(p, what[k])) != NULL; p++)
                tags[0][k]++;
        for (int k = 0; k < 4; k++)
            for (const char *p = after; (p = strstr(p, what[k])) != NULL; p++)
                tags[1][k]++;
        for (int k = 0; k < 4; k++)
            if (tags[0][k] != tags[1][k])
                fail_msg("%s: %zu %s before, %zu after", names[i], tags[0][k], what[k], tags[1][k]);
        free(before);
        free(after);
        free(s);
        free(md);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_untrusted__the_verdict_must_agree_with_the_json),
        cmocka_unit_test(test_untrusted__a_hostile_body_renders_without_mentions_links_images_or_html),
        cmocka_unit_test(test_untrusted__the_gates_own_reports_keep_their_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
