/*
 * test_site: the history page (report_site.h): one chart per metric and one point per run,
 * segments, change points and accepts marked, hostile strings from the history escaped, commit
 * links percent-encoded under a checked prefix, and no script. ci/history-site loads the page of
 * a published history in chromium.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "history.h"
#include "report_site.h"

#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HOSTILE_REASON "<script>alert(1)</script> & \"quoted\" 'x' \x01"

static size_t occurrences(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(text, needle); p != NULL; p = strstr(p + 1, needle))
        n++;
    return n;
}

static void add_run(struct cg_history *h, const char *commit, const char *gate, double mean_ms,
                    bool with_memory)
{
    struct cg_history_entry e;
    cg_history_entry_init(&e, CG_HIST_RUN);
    e.commit = (char *)commit;
    e.date = (char *)"2026-11-24T10:00:00Z";
    e.gate_id = (char *)gate;
    e.metric[CG_M_STEP_TIME_MEAN] =
        (struct cg_history_value){true, mean_ms * 1e6, mean_ms * 0.99e6, mean_ms * 1.01e6, 5};
    e.metric[CG_M_STEP_TIME_FLOOR] =
        (struct cg_history_value){true, mean_ms * 0.9e6, mean_ms * 0.89e6, mean_ms * 0.91e6, 5};
    if (with_memory)
        e.metric[CG_M_PEAK_DEVICE_MEMORY] = (struct cg_history_value){true, 1e9, 1e9, 1e9, 5};
    assert_int_equal(cg_history_append(h, &e), 0); /* copies: e holds borrowed strings */
}

static void add_event(struct cg_history *h, enum cg_history_event ev, const char *commit,
                      const char *gate, const char *reason)
{
    struct cg_history_entry e;
    cg_history_entry_init(&e, CG_HIST_EVENT);
    e.event = ev;
    e.commit = (char *)commit;
    e.date = (char *)"2026-11-24T11:00:00Z";
    e.gate_id = (char *)gate;
    e.reason = (char *)reason;
    e.who = (char *)(ev == CG_HEV_ACCEPT ? "<b>octocat</b>" : NULL);
    assert_int_equal(cg_history_append(h, &e), 0);
}

/* Two gates: "h100" with 40 runs (a +8% step at c020, accepted; an environment change at
 * c030; device memory only in its last 10 runs) and an unnamed one with 6 runs. */
static void make_history(struct cg_history *h)
{
    char commit[64];
    for (int i = 0; i < 40; i++) {
        snprintf(commit, sizeof(commit), "c%03d\"q", i);
        if (i == 20)
            add_event(h, CG_HEV_ACCEPT, commit, "h100", HOSTILE_REASON);
        if (i == 30)
            add_event(h, CG_HEV_ENVIRONMENT, commit, "h100", "H200 <new>");
        double v = (i >= 20 ? 10.8 : 10.0) * (1 + 0.002 * (i % 5));
        add_run(h, commit, "h100", v, i >= 30);
        if (i < 6) {
            snprintf(commit, sizeof(commit), "u%d", i);
            add_run(h, commit, NULL, 5.0, false);
        }
    }
}

static char *render(const struct cg_history *h, const char *url)
{
    struct cg_buf b;
    cg_buf_init(&b, (size_t)1 << 26);
    struct cg_site_opts o = {.commit_url = url, .source = "history<.jsonl"};
    assert_int_equal(cg_report_site(h, &o, &b), 0);
    return cg_buf_detach(&b);
}

/* The section of gate g (data-gate="g"), up to the next section, as a new string. */
static char *section(const char *page, const char *g)
{
    char head[128];
    snprintf(head, sizeof(head), "<section class=\"cg-gate\" data-gate=\"%s\">", g);
    const char *s = strstr(page, head);
    assert_non_null(s);
    const char *e = strstr(s, "</section>");
    assert_non_null(e);
    char *out = strndup(s, (size_t)(e - s));
    assert_non_null(out);
    return out;
}

/* The chart of metric m in text, as a new string. */
static char *chart(const char *text, const char *m)
{
    char head[128];
    snprintf(head, sizeof(head), "<svg class=\"cg-chart\" data-metric=\"%s\"", m);
    const char *s = strstr(text, head);
    if (s == NULL)
        return NULL;
    const char *e = strstr(s, "</svg>");
    assert_non_null(e);
    char *out = strndup(s, (size_t)(e - s));
    assert_non_null(out);
    return out;
}

/* One section per gate, one chart per metric the gate's runs have, one point per run that has
 * it; the segments, the change point and the accept marked. */
static void test_site__a_chart_per_metric_and_a_point_per_run(void **state)
{
    (void)state;
    struct cg_history h = {0};
    make_history(&h);
    char *page = render(&h, NULL);
    assert_int_equal(occurrences(page, "<section class=\"cg-gate\""), 2);
    char *g = section(page, "h100");
    assert_int_equal(occurrences(g, "<svg class=\"cg-chart\""), 3);
    char *mean = chart(g, "step_time_mean"), *mem = chart(g, "peak_device_memory");
    assert_non_null(mean);
    assert_non_null(mem);
    char *tokens = chart(g, "tokens_per_sec");
    bool no_tokens = tokens == NULL;
    free(tokens);
    assert_true(no_tokens);
    assert_int_equal(occurrences(mean, "<circle class=\"cg-point\""), 40);
    assert_int_equal(occurrences(mean, "</title></circle>"), 40);
    assert_int_equal(occurrences(mem, "<circle class=\"cg-point\""), 10);
    assert_int_equal(occurrences(mean, "<rect class=\"cg-segment"), 2);
    assert_non_null(strstr(mean, "environment segment 2: environment at c030&quot;q: H200 "
                                 "&lt;new&gt;"));
    assert_int_equal(occurrences(mean, "<g class=\"cg-accept\">"), 1);
    /* the +8% step: one change point between c019 and c020, marked worse and accepted */
    assert_int_equal(occurrences(mean, "class=\"cg-change\""), 1);
    assert_non_null(strstr(mean, "cg-change-mark cg-worse"));
    assert_non_null(strstr(mean, "between c019&quot;q and c020&quot;q; accepted: "));
    assert_non_null(strstr(g, "<table class=\"cg-changes\">"));
    assert_int_equal(occurrences(g, "<tr class=\"cg-change-row"), 2); /* mean and floor */
    free(mean);
    free(mem);
    free(g);
    g = section(page, "");
    assert_int_equal(occurrences(g, "<svg class=\"cg-chart\""), 2);
    assert_int_equal(occurrences(g, "<circle class=\"cg-point\""), 12);
    assert_int_equal(occurrences(g, "<g class=\"cg-accept\">"), 0);
    assert_non_null(strstr(g, "No change point"));
    free(g);
    free(page);
    cg_history_release(&h);
}

/* Strings from the history never become markup; the page has no script and loads nothing. */
static void test_site__history_strings_are_escaped(void **state)
{
    (void)state;
    struct cg_history h = {0};
    make_history(&h);
    char *page = render(&h, "https://github.com/o/r/commit/");
    assert_null(strstr(page, "<script"));
    assert_null(strstr(page, "<b>"));
    assert_null(strstr(page, "<new>"));
    assert_null(strstr(page, "\x01"));
    assert_non_null(strstr(page, "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quoted&quot; "
                                 "&#39;x&#39;  "));
    assert_non_null(strstr(page, "from <code>history&lt;.jsonl</code>"));
    /* links: the prefix, then the commit percent-encoded */
    assert_non_null(strstr(page, "<a href=\"https://github.com/o/r/commit/c020%22q\">"));
    /* nothing fetched: no src attribute, no URL but the commit links */
    assert_null(strstr(page, "src="));
    assert_int_equal(occurrences(page, "http"), occurrences(page, "<a href=\"https://github.com/"));
    free(page);
    cg_history_release(&h);
}

static void test_site__commit_url_prefixes_are_checked(void **state)
{
    (void)state;
    assert_true(cg_site_url_ok("https://github.com/o/r/commit/"));
    assert_true(cg_site_url_ok("http://git.example/o/r/-/commit/"));
    assert_false(cg_site_url_ok("javascript:alert(1)//"));
    assert_false(cg_site_url_ok("https://e.vil/\"onmouseover=\"x"));
    assert_false(cg_site_url_ok("https://e.vil/ x"));
    assert_false(cg_site_url_ok("https://e.vil/<"));
    assert_false(cg_site_url_ok("ftp://e.vil/"));
}

/* An empty history is a page that says so. */
/* Whether text holds "nan" or "inf" as a printed number (after a quote, comma, space or sign). */
static bool non_number(const char *text)
{
    static const char *const words[] = {"nan", "inf"};
    for (size_t w = 0; w < 2; w++)
        for (const char *p = strstr(text, words[w]); p != NULL; p = strstr(p + 1, words[w]))
            if (p > text && strchr("\", -", p[-1]) != NULL && !isalpha((unsigned char)p[3]))
                return true;
    return false;
}

/* Every coordinate of the page is a number (no "nan" or "inf"), however large the values (the
 * largest finite doubles made -nan); a flat series is drawn on an axis of at least 5% of its
 * level, and says its span, so a +0.4% change is no cliff; the x axis labels commits between the
 * ends. */
static void test_site__axes_stay_finite_show_their_span_and_label_between_the_ends(void **state)
{
    (void)state;
    struct cg_history h = {0};
    static const double v[] = {1.0e7, 1.7e308, 1.2e7, 1.7976931348623157e308, 1.1e7};
    char commit[16];
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        snprintf(commit, sizeof(commit), "big%zu", i);
        add_run(&h, commit, "big", 1.0, false);
        h.entries[h.n - 1].metric[CG_M_STEP_TIME_MEAN] =
            (struct cg_history_value){true, v[i], v[i], v[i], 3};
    }
    for (int i = 0; i < 20; i++) { /* 10.00 ms, then +0.4% */
        snprintf(commit, sizeof(commit), "flat%02d", i);
        add_run(&h, commit, "flat", i < 10 ? 10.0 / 1.01 : 10.04 / 1.01, false);
        struct cg_history_value *m = &h.entries[h.n - 1].metric[CG_M_STEP_TIME_MEAN];
        m->low = m->high = m->median;
    }
    char *page = render(&h, NULL);
    char *big = section(page, "big"), *flat = section(page, "flat");
    if (non_number(big))
        fail_msg("a coordinate is no number:\n%s", big);
    char *c = chart(flat, "step_time_mean");
    assert_non_null(c);
    if (strstr(c, "axis spans 5.0% of the level") == NULL)
        fail_msg("no span said:\n%s", c);
    /* the 0.4% step moves the line by 0.4/5 of the plot's height, not all of it */
    const char *line = strstr(c, "<polyline class=\"cg-line\" points=\"");
    assert_non_null(line);
    line += strlen("<polyline class=\"cg-line\" points=\"");
    double x, y, y0 = NAN, y1 = NAN;
    int used;
    while (sscanf(line, "%lf,%lf %n", &x, &y, &used) == 2) {
        if (isnan(y0))
            y0 = y;
        y1 = y;
        line += used;
    }
    double plot = 250.0 - 14.0 - 34.0;
    if (!(y0 - y1 > 0.05 * plot && y0 - y1 < 0.12 * plot))
        fail_msg("the +0.4%% step moved the line %.1f of %.1f px:\n%s", y0 - y1, plot, c);
    /* commits between the ends under the axis */
    assert_int_equal(occurrences(c, "class=\"cg-xlabel cg-tick\""), 3);
    assert_non_null(strstr(c, ">flat05<"));
    assert_non_null(strstr(c, ">flat10<"));
    assert_non_null(strstr(c, ">flat14<"));
    assert_non_null(strstr(c, "20 runs of main"));
    free(c);
    free(big);
    free(flat);
    free(page);
    cg_history_release(&h);
}

static void test_site__an_empty_history(void **state)
{
    (void)state;
    struct cg_history h = {0};
    char *page = render(&h, NULL);
    assert_non_null(strstr(page, "No run of main is recorded yet."));
    assert_null(strstr(page, "<svg"));
    assert_non_null(strstr(page, "</html>"));
    free(page);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_site__a_chart_per_metric_and_a_point_per_run),
        cmocka_unit_test(test_site__history_strings_are_escaped),
        cmocka_unit_test(test_site__commit_url_prefixes_are_checked),
        cmocka_unit_test(test_site__axes_stay_finite_show_their_span_and_label_between_the_ends),
        cmocka_unit_test(test_site__an_empty_history),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
