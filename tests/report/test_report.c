/*
 * test_report: the markdown report against golden files, hostile names escaped everywhere, the
 * size cap with thousands of ops and with a full diagnosis, the JSON verdict's contract fields,
 * the diagnosis in every output, and the step-time charts (mermaid and terminal). Reports with
 * hostile strings are rendered by cmark-gfm (tests/support/render.h): no raw HTML but the
 * report's own, no links, no mentions, balanced <details>, table cells that keep their text.
 * CG_UPDATE_GOLDEN=1 rewrites the golden files instead of comparing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "chart.h"
#include "fixtures.h"
#include "fsutil.h"
#include "render.h"
#include "report.h"
#include "report_history.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HOSTILE "evil|kernel<script>alert(1)</script>`rm` @team [x](http://e.vil) **b** \x1b[31mred"

struct pair {
    struct cg_artifact base, cur;
    struct cg_thresholds t;
    struct cg_verdict v;
};

static void make_pair(struct pair *p, double cur_mean, size_t extra_ops)
{
    struct cg_err err;
    struct cg_fixture b = {5, 30, 1e7, 0.01, 0.02, 1024, -1, 200000000, 4, 1};
    struct cg_fixture c = b;
    c.mean_ns = cur_mean;
    c.seed = 2;
    cg_artifact_init(&p->base);
    cg_artifact_init(&p->cur);
    assert_int_equal(cg_fixture_make(&p->base, &b), 0);
    assert_int_equal(cg_fixture_make(&p->cur, &c), 0);
    for (size_t r = 0; r < p->cur.n_runs; r++) {
        assert_int_equal(
            cg_run_add_op(&p->cur.runs[r], HOSTILE, "evil", CG_OP_KERNEL, 30, 60000000), 0);
        for (size_t k = 0; k < extra_ops; k++) {
            char name[600];
            snprintf(name, sizeof(name),
                     "void cutlass::Kernel<cutlass::gemm::GemmUniversal<%zu|%0400zu>>", k, k);
            assert_int_equal(cg_run_add_op(&p->cur.runs[r], name, NULL, CG_OP_KERNEL, 30, 30000000),
                             0);
        }
    }
    free(p->cur.gpu_reason);
    p->cur.gpu_reason = strdup("no CUDA driver <b>loaded</b> | @admin");
    assert_int_equal(cg_thresholds_load("default", &p->t, &err), 0);
    assert_int_equal(cg_verdict_compute(&p->base, &p->cur, &p->t, &p->v, &err), 0);
}

static void free_pair(struct pair *p)
{
    cg_verdict_release(&p->v);
    cg_artifact_release(&p->base);
    cg_artifact_release(&p->cur);
}

static void check_golden(const char *name, const char *text)
{
    char path[1024];
    struct cg_err err;
    snprintf(path, sizeof(path), "%s/tests/golden/%s", CG_SOURCE_DIR, name);
    if (getenv("CG_UPDATE_GOLDEN") != NULL) {
        assert_int_equal(cg_file_write_atomic(path, text, strlen(text), &err), 0);
        return;
    }
    char *want = NULL;
    if (cg_file_read(path, 1 << 20, &want, NULL, &err) != 0)
        fail_msg("%s (run with CG_UPDATE_GOLDEN=1 to create it)", err.msg);
    if (strcmp(want, text) != 0)
        fail_msg("%s differs from the rendered report:\n%s", path, text);
    free(want);
}

static void test_report__fail_matches_golden(void **state)
{
    (void)state;
    struct pair p;
    struct cg_buf md;
    struct cg_err err;
    make_pair(&p, 1.2e7, 0);
    assert_int_equal(p.v.overall, CG_OUT_FAIL);
    cg_buf_init(&md, CG_REPORT_MAX_BYTES + 1);
    assert_int_equal(cg_report_markdown(&p.v, NULL, &md, &err), 0);
    const char *head = "<!-- canary-gate -->\n<!-- canary-gate-verdict: fail -->\n";
    assert_int_equal(strncmp(md.data, head, strlen(head)), 0);
    check_golden("report_fail.md", md.data);
    cg_buf_release(&md);
    free_pair(&p);
}

static void test_report__pass_matches_golden_with_gate_id(void **state)
{
    (void)state;
    struct pair p;
    struct cg_buf md;
    struct cg_err err;
    make_pair(&p, 1.0e7, 0);
    assert_int_equal(p.v.overall, CG_OUT_PASS);
    cg_buf_init(&md, CG_REPORT_MAX_BYTES + 1);
    assert_int_equal(cg_report_markdown(&p.v, "gpu <small>", &md, &err), 0);
    const char *head = "<!-- canary-gate:gpu__small_ -->\n";
    assert_int_equal(strncmp(md.data, head, strlen(head)), 0);
    check_golden("report_pass.md", md.data);
    cg_buf_release(&md);
    free_pair(&p);
}

static void test_report__hostile_names_are_escaped(void **state)
{
    (void)state;
    struct pair p;
    struct cg_buf md, term;
    struct cg_err err;
    make_pair(&p, 1.2e7, 0);
    cg_buf_init(&md, CG_REPORT_MAX_BYTES + 1);
    cg_buf_init(&term, 1 << 20);
    assert_int_equal(cg_report_markdown(&p.v, NULL, &md, &err), 0);
    assert_int_equal(cg_report_terminal(&p.v, false, &term, &err), 0);
    const char *forbidden[] = {"<script>", "evil|kernel", "`rm`",      "@team", "](http",
                               "**b**",    "\x1b[31m",    "<b>loaded", "@admin"};
    for (size_t i = 0; i < sizeof(forbidden) / sizeof(forbidden[0]); i++) {
        if (strstr(md.data, forbidden[i]) != NULL)
            fail_msg("markdown contains '%s'", forbidden[i]);
    }
    assert_non_null(strstr(md.data, "evil&#124;kernel&lt;script&gt;"));
    assert_null(strchr(term.data, '\x1b'));
    assert_non_null(strstr(term.data, "?[31mred"));
    /* every table row keeps its column count: 8 pipes in op rows */
    const char *row = strstr(md.data, "| evil");
    assert_non_null(row);
    int pipes = 0;
    for (const char *c = row; *c && *c != '\n'; c++)
        pipes += *c == '|';
    assert_int_equal(pipes, 8);
    cg_buf_release(&md);
    cg_buf_release(&term);
    free_pair(&p);
}

static void test_report__size_cap_with_many_ops(void **state)
{
    (void)state;
    struct pair p;
    struct cg_buf md;
    struct cg_err err;
    make_pair(&p, 1.2e7, 3000);
    p.t.ops_top_n = 5000; /* only the size cap can stop the table */
    cg_buf_init(&md, CG_REPORT_MAX_BYTES + 1);
    assert_int_equal(cg_report_markdown(&p.v, NULL, &md, &err), 0);
    assert_true(md.len <= CG_REPORT_MAX_BYTES);
    assert_non_null(strstr(md.data, "more ops not shown"));
    assert_non_null(strstr(md.data, "</details>")); /* the tail survived the cut */
    cg_buf_release(&md);
    free_pair(&p);
}

/* A side whose every artifact string is at its widest in escaped bytes: range names of 255 '|'
 * (six bytes each in markdown), every placed count changed and placed in each range, and eight
 * distinct library warnings of 300 '|' per side. */
static void make_wide_side(struct cg_artifact *a, int64_t count, char tag, uint64_t seed)
{
    struct cg_fixture f = {3, 10, 1e7, 0.01, 0.02, 1024, 1000000000, 200000000, 0, seed};
    cg_artifact_init(a);
    assert_int_equal(cg_fixture_make(a, &f), 0);
    char names[8][256];
    for (size_t j = 0; j < 8; j++) {
        memset(names[j], '|', 255);
        names[j][255] = '\0';
        names[j][0] = (char)('a' + j);
        assert_int_equal(cg_fixture_add_op(a, names[j], NULL, CG_OP_RANGE, 1, 1e6), 0);
    }
    for (size_t r = 0; r < a->n_runs; r++) {
        struct cg_run *run = &a->runs[r];
        for (size_t s = 0; s < run->n_steps; s++)
            for (int c = 0; c < CG_COUNT_N; c++)
                run->steps[s].counts[c] = count;
        run->places_measured = true;
        for (int c = 0; c < CG_COUNT_N; c++)
            for (size_t j = 0; j < 8 && cg_count_placed(c); j++)
                assert_int_equal(cg_run_add_place(run, c, false, names[j],
                                                  count * (int64_t)(run->n_steps * (j + 1))),
                                 0);
        for (size_t k = 0; k < 3; k++) {
            char w[301];
            memset(w, '|', 300);
            w[300] = '\0';
            w[0] = tag;
            w[1] = (char)('0' + r);
            w[2] = (char)('0' + k);
            assert_int_equal(cg_run_add_warning(run, w, 16), 0);
        }
    }
}

/* Sections that escape artifact text without a budget of their own (the library's warnings,
 * the counts and where they were made, the anatomy's ranges) are cut to fit the report's size,
 * never reported as "out of memory"; the verdict's table and the folded details stay. */
static void test_report__widest_artifact_text_is_cut_to_fit_not_failed(void **state)
{
    (void)state;
    struct pair p;
    struct cg_err err;
    cg_err_init(&err);
    make_wide_side(&p.base, 7, 'B', 1);
    make_wide_side(&p.cur, 35, 'C', 2);
    assert_int_equal(cg_thresholds_load("default", &p.t, &err), 0);
    assert_int_equal(cg_verdict_compute(&p.base, &p.cur, &p.t, &p.v, &err), 0);
    assert_int_equal(p.v.overall, CG_OUT_FAIL);
    struct cg_buf md;
    cg_buf_init(&md, CG_REPORT_MAX_BYTES); /* as the commands give it */
    if (cg_report_markdown(&p.v, NULL, &md, &err) != 0)
        fail_msg("the report failed: %s", err.msg);
    assert_true(md.len <= CG_REPORT_MAX_BYTES);
    assert_non_null(strstr(md.data, "<!-- canary-gate-verdict: fail -->"));
    assert_non_null(strstr(md.data, "| Metric | Baseline | Current |"));
    assert_non_null(strstr(md.data, "### Counts per step"));
    assert_non_null(strstr(md.data, "</details>"));
    assert_non_null(strstr(md.data, "to keep the comment within GitHub's size limit"));
    char *html = cg_render_gfm(md.data, md.len);
    cg_render_check_gfm(html, "the widest report");
    free(html);
    cg_buf_release(&md);
    free_pair(&p);
}

static void test_report__json_has_contract_fields(void **state)
{
    (void)state;
    struct pair p;
    make_pair(&p, 1.2e7, 0);
    char *text = cg_report_json(&p.v);
    cJSON *root = cJSON_Parse(text);
    assert_non_null(root);
    assert_string_equal(cJSON_GetObjectItem(root, "verdict")->valuestring, "fail");
    cJSON *metrics = cJSON_GetObjectItem(root, "metrics");
    assert_int_equal(cJSON_GetArraySize(metrics), CG_M_COUNT);
    const char *names[] = {"step_time_mean", "step_time_p95",      "step_time_floor",
                           "tokens_per_sec", "peak_device_memory", "peak_host_rss",
                           "energy_per_token", "mfu"};
    const char *keys[] = {"name",       "baseline",    "current", "delta_pct",
                          "ci_low_pct", "ci_high_pct", "p_value", "outcome"};
    for (int i = 0; i < CG_M_COUNT; i++) {
        cJSON *m = cJSON_GetArrayItem(metrics, i);
        assert_string_equal(cJSON_GetObjectItem(m, "name")->valuestring, names[i]);
        for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
            assert_non_null(cJSON_GetObjectItem(m, keys[k]));
    }
    /* The floor over runs says how many runs of each side met the fast state. */
    cJSON *fast = cJSON_GetObjectItem(cJSON_GetArrayItem(metrics, 2), "fast_runs");
    assert_int_equal((int)cJSON_GetObjectItem(fast, "baseline")->valuedouble, 5);
    assert_int_equal((int)cJSON_GetObjectItem(fast, "current")->valuedouble, 5);
    assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(metrics, 0), "fast_runs"));
    assert_true(cJSON_IsArray(cJSON_GetObjectItem(root, "ops")));
    cJSON_Delete(root);
    free(text);
    free_pair(&p);
}

/* A GPU pair whose current side is host-bound, copies from pageable memory, runs a new kernel
 * family with a hostile name and grew its peak device memory. */
static void make_gpu_pair(struct pair *p)
{
    struct cg_err err;
    struct cg_fixture b = {5, 30, 1e7, 0.01, 0.02, 1024, 1073741824, 200000000, 0, 1};
    struct cg_fixture c = b;
    c.mean_ns = 1.2e7;
    c.peak_device_bytes = 1073741824 + 268435456;
    c.seed = 2;
    cg_artifact_init(&p->base);
    cg_artifact_init(&p->cur);
    assert_int_equal(cg_fixture_make(&p->base, &b), 0);
    assert_int_equal(cg_fixture_make(&p->cur, &c), 0);
    cg_fixture_set_busy(&p->base, 0.9);
    cg_fixture_set_busy(&p->cur, 0.6);
    assert_int_equal(cg_fixture_add_op(&p->base, "gemm_a", NULL, CG_OP_KERNEL, 10, 8e6), 0);
    assert_int_equal(cg_fixture_add_op(&p->cur, "gemm_a", NULL, CG_OP_KERNEL, 10, 4e6), 0);
    assert_int_equal(cg_fixture_add_op(&p->cur, HOSTILE, HOSTILE, CG_OP_KERNEL, 10, 4e6), 0);
    assert_int_equal(
        cg_fixture_add_op(&p->cur, "memcpy HtoD pageable", NULL, CG_OP_MEMCPY, 2, 0.5e6), 0);
    assert_int_equal(cg_thresholds_load("default", &p->t, &err), 0);
    assert_int_equal(cg_verdict_compute(&p->base, &p->cur, &p->t, &p->v, &err), 0);
}

static void test_report__diagnosis_in_every_output(void **state)
{
    (void)state;
    struct pair p;
    struct cg_buf md, term;
    struct cg_err err;
    make_gpu_pair(&p);
    assert_true(p.v.diagnosis.n >= 4);
    cg_buf_init(&md, CG_REPORT_MAX_BYTES + 1);
    cg_buf_init(&term, 1 << 20);
    assert_int_equal(cg_report_markdown(&p.v, NULL, &md, &err), 0);
    check_golden("report_diagnosis.md", md.data);
    assert_non_null(strstr(md.data, "### Diagnosis"));
    assert_non_null(strstr(md.data, "**Host-bound**: GPU idle"));
    assert_non_null(strstr(md.data, "**Changed kernel choice**: new kernel family"));
    assert_non_null(strstr(md.data, "_Try:_ "));
    /* the hostile family name is escaped in the finding */
    assert_null(strstr(md.data, "<script>"));
    assert_null(strstr(md.data, "@team"));
    assert_non_null(strstr(md.data, "evil&#124;kernel&lt;script&gt;"));
    /* the anatomy's stacked bars come first, then the diagnosis, the step-time chart and the
     * op table */
    const char *bars = strstr(md.data, "```mermaid\n---\nconfig:\n  themeVariables:\n    "
                                       "xyChart:\n      plotColorPalette: \"#c7c7c7");
    assert_non_null(bars);
    assert_non_null(strstr(bars, "    bar [100, 100]\n    bar [90, 60]\n    bar [90, 60]\n"));
    const char *diag = strstr(md.data, "### Diagnosis"), *chart = strstr(diag, "```mermaid");
    assert_true(bars < diag);
    assert_non_null(chart);
    assert_true(diag < chart);
    assert_true(chart < strstr(md.data, "### Top op changes"));

    assert_int_equal(cg_report_terminal(&p.v, false, &term, &err), 0);
    assert_non_null(strstr(term.data, "\ndiagnosis (never part of the verdict):\n"));
    assert_non_null(strstr(term.data, "  warning host_bound: GPU idle"));
    assert_non_null(strstr(term.data, "          try: The GPU waits for the host"));
    assert_null(strchr(term.data, '\x1b'));
    /* the diagnosis stands before the final verdict line */
    assert_true(strstr(term.data, "diagnosis (") < strstr(term.data, "\ncanary-gate FAIL"));

    char *text = cg_report_json(&p.v);
    cJSON *root = cJSON_Parse(text);
    assert_non_null(root);
    cJSON *arr = cJSON_GetObjectItem(root, "diagnosis");
    assert_true(cJSON_IsArray(arr));
    assert_int_equal(cJSON_GetArraySize(arr), (int)p.v.diagnosis.n);
    bool saw_hostile = false;
    for (int i = 0; i < cJSON_GetArraySize(arr); i++) {
        cJSON *f = cJSON_GetArrayItem(arr, i);
        const char *keys[] = {"rule",   "severity", "subject",  "finding",
                              "action", "current",  "baseline", "unit"};
        for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
            assert_non_null(cJSON_GetObjectItem(f, keys[k]));
        assert_string_equal(cJSON_GetObjectItem(f, "rule")->valuestring,
                            cg_diag_rule_name(p.v.diagnosis.items[i].rule));
        cJSON *subject = cJSON_GetObjectItem(f, "subject");
        if (cJSON_IsString(subject) && strcmp(subject->valuestring, HOSTILE) == 0)
            saw_hostile = true; /* JSON carries names verbatim; consumers escape */
    }
    assert_true(saw_hostile);
    cJSON_Delete(root);
    free(text);
    cg_buf_release(&md);
    cg_buf_release(&term);
    free_pair(&p);
}

/* Points in the first mermaid line of md, 0 when there is none. */
static size_t chart_points(const char *md)
{
    const char *line = strstr(md, "    line [");
    if (line == NULL)
        return 0;
    size_t n = 1;
    for (const char *c = line; *c != ']'; c++)
        n += *c == ',';
    return n;
}

static void test_report__chart_gives_way_under_the_size_cap(void **state)
{
    (void)state;
    struct pair p;
    struct cg_err err;
    struct cg_fixture b = {3, 300, 1e7, 0.01, 0.02, 1024, -1, 200000000, 0, 1};
    struct cg_fixture c = b;
    c.seed = 2;
    cg_artifact_init(&p.base);
    cg_artifact_init(&p.cur);
    assert_int_equal(cg_fixture_make(&p.base, &b), 0);
    assert_int_equal(cg_fixture_make(&p.cur, &c), 0);
    assert_int_equal(cg_thresholds_load("default", &p.t, &err), 0);
    /* Environment strings that escape to six bytes a character fill the folded details. */
    char wide[301];
    memset(wide, '|', sizeof(wide) - 1);
    wide[sizeof(wide) - 1] = '\0';
    struct cg_artifact *sides[2] = {&p.base, &p.cur};
    for (int s = 0; s < 2; s++) {
        char **fields[] = {&sides[s]->env.cpu_model,    &sides[s]->env.tool_version,
                           &sides[s]->env.canary_hash,  &sides[s]->created_utc,
                           &sides[s]->env.cupti_status, &sides[s]->env.driver_version};
        for (size_t k = 0; k < sizeof(fields) / sizeof(fields[0]); k++) {
            free(*fields[k]);
            *fields[k] = strdup(wide);
        }
    }
    assert_int_equal(cg_verdict_compute(&p.base, &p.cur, &p.t, &p.v, &err), 0);
    bool full = false, reduced = false, cut = false;
    /* Sixteen findings growing in steps of 8 characters that escape to six bytes leave less and
     * less room: the chart shrinks before any finding is cut, and the cap always holds. */
    for (size_t len = 0; len < CG_DIAG_TEXT_MAX; len += 8) {
        p.v.diagnosis.n = CG_DIAG_MAX_FINDINGS;
        p.v.diagnosis.n_dropped = 0;
        for (size_t i = 0; i < CG_DIAG_MAX_FINDINGS; i++) {
            struct cg_finding *f = &p.v.diagnosis.items[i];
            memset(f, 0, sizeof(*f));
            f->rule = CG_DIAG_KERNEL_CHOICE;
            f->severity = CG_DIAG_WARNING;
            memset(f->finding, '|', len);
            f->action = "Look.";
            f->unit = "pct";
        }
        struct cg_buf md;
        cg_buf_init(&md, CG_REPORT_MAX_BYTES + 1);
        assert_int_equal(cg_report_markdown(&p.v, NULL, &md, &err), 0);
        assert_true(md.len <= CG_REPORT_MAX_BYTES);
        assert_non_null(strstr(md.data, "</details>"));
        size_t points = chart_points(md.data);
        if (points == CG_CHART_MAX_POINTS)
            full = true;
        else if (points > 0)
            reduced = true;
        else
            assert_non_null(strstr(md.data, "step-time chart was left out"));
        /* findings are cut only when they would not fit even without the chart */
        cut = cut || strstr(md.data, "more findings not shown") != NULL;
        if (points > 0)
            assert_non_null(strstr(md.data, "300 steps in"));
        cg_buf_release(&md);
    }
    assert_true(full);
    assert_true(reduced);
    assert_true(cut);
    p.v.diagnosis.n = 0;
    free_pair(&p);
}

static void test_report__mermaid_chart_downsamples(void **state)
{
    (void)state;
    double base[250], cur[250], pts[100];
    for (size_t i = 0; i < 250; i++) {
        base[i] = 1e7 + (double)i * 1e4; /* 10 ms rising by 10 us a step */
        cur[i] = 2e7;
    }
    /* 250 steps into 100 points: buckets of 2 or 3 consecutive steps, their mean */
    assert_int_equal(cg_chart_downsample(base, 250, 100, pts), 100);
    assert_float_equal(pts[0], (base[0] + base[1]) / 2.0, 1e-6);
    assert_float_equal(pts[99], (base[247] + base[248] + base[249]) / 3.0, 1e-6);
    assert_int_equal(cg_chart_downsample(base, 7, 100, pts), 7);
    assert_float_equal(pts[6], base[6], 0.0);

    struct cg_buf b;
    cg_buf_init(&b, 1 << 16);
    assert_int_equal(cg_chart_mermaid(&b, base, cur, 250, 100), 0);
    assert_non_null(strstr(b.data, "```mermaid\n"));
    assert_non_null(strstr(b.data, "\nxychart-beta\n"));
    assert_non_null(strstr(b.data, "    x-axis \"step\" 1 --> 250\n"));
    /* y from the lowest point (10.005 ms) to the highest (20 ms), padded by 10% of the range */
    assert_non_null(strstr(b.data, "    y-axis \"ms\" 9.006 --> 21\n"));
    assert_non_null(strstr(b.data, "    line [10.01, 10.03, "));
    assert_non_null(strstr(b.data, "    line [20, 20, "));
    assert_int_equal(chart_points(b.data), 100);
    assert_true(b.len < 2500);
    /* fewer than two steps: nothing to draw */
    cg_buf_reset(&b);
    assert_int_equal(cg_chart_mermaid(&b, base, cur, 1, 100), 0);
    assert_int_equal(b.len, 0);
    /* the anatomy's stacked bars: running totals, tallest first, each side scaled to 100% (the
     * medians of the parts need not add up to 1); an unknown or negative part counts as 0 */
    const double ab[4] = {0.5, 0.2, 0.1, 0.1}, ac[4] = {0.6, NAN, 0.0, -0.1};
    assert_int_equal(cg_chart_anatomy(&b, ab, ac), 0);
    assert_non_null(strstr(b.data, "    x-axis [baseline, current]\n    y-axis \"% of step\" 0 "
                                   "--> 100\n    bar [100, 100]\n    bar [88.89, 100]\n    "
                                   "bar [77.78, 100]\n    bar [55.56, 100]\n```\n"));
    cg_buf_release(&b);
}

static void make_steps(struct cg_artifact *a, size_t runs, const double *ms, size_t n)
{
    cg_artifact_init(a);
    for (size_t r = 0; r < runs; r++) {
        struct cg_run *run = cg_artifact_add_run(a);
        assert_non_null(run);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(cg_run_add_step(run, (int64_t)(ms[i] * 1e6) + (int64_t)r, -1, -1), 0);
        cg_run_summarize(run);
    }
}

static void test_report__terminal_chart_exact(void **state)
{
    (void)state;
    const double ms[4] = {1, 2, 3, 4};
    struct cg_artifact a;
    struct cg_buf b;
    make_steps(&a, 1, ms, 4);
    cg_buf_init(&b, 1 << 16);
    assert_int_equal(cg_chart_terminal(&b, &a, 0, false), 0);
    assert_string_equal(b.data, "step times: 4 steps\n"
                                "  4.00 ms \u2524   \u2588\n"
                                "          \u2502   \u2588\n"
                                "          \u2502  \u2588\u2588\n"
                                "          \u2502 \u2581\u2588\u2588\n"
                                "          \u2502 \u2588\u2588\u2588\n"
                                "  1.00 ms \u2524\u2581\u2588\u2588\u2588\n"
                                "          \u2514\u2500\u2500\u2500\u2500\n"
                                "           1  4\n");
    cg_buf_reset(&b);
    assert_int_equal(cg_chart_terminal(&b, &a, 0, true), 0);
    assert_string_equal(b.data, "step times: 4 steps\n"
                                "  4.00 ms |   #\n"
                                "          |   #\n"
                                "          |  ##\n"
                                "          | .##\n"
                                "          | ###\n"
                                "  1.00 ms |.###\n"
                                "          +----\n"
                                "           1  4\n");
    cg_buf_release(&b);
    cg_artifact_release(&a);
}

/* The bars of bisect's chart of probed commits start at zero: two equal values (good and bad
 * both 6.07 ms) drew as 30 cells and 1, since the bars ran from the smallest value to the
 * largest, and a count of 0 beside 1 looked like nothing beside everything. */
static void test_report__terminal_series_bars_start_at_zero(void **state)
{
    (void)state;
    const char *labels[] = {"aaaaaaa", "bbbbbbb", "ccccccc", "ddddddd"};
    const char *same_texts[] = {"6.07 ms", "6.07 ms"};
    const double same[] = {6.0701, 6.07};
    struct cg_buf b;
    cg_buf_init(&b, 1 << 16);
    assert_int_equal(cg_chart_terminal_series(&b, labels, same_texts, same, 2, true), 0);
    char bar30[31];
    memset(bar30, '#', 30);
    bar30[30] = '\0';
    char want[512];
    snprintf(want, sizeof(want), "  aaaaaaa 6.07 ms %s\n  bbbbbbb 6.07 ms %s\n", bar30, bar30);
    assert_string_equal(b.data, want);
    /* the Unicode bars have as many cells as the ASCII ones */
    cg_buf_reset(&b);
    assert_int_equal(cg_chart_terminal_series(&b, labels, same_texts, same, 2, false), 0);
    const char *second = strchr(b.data, '\n') + 1;
    assert_int_equal(strlen(second), strlen("  bbbbbbb 6.07 ms \n") + 30 * strlen("\u2588"));
    assert_int_equal(second - b.data, strlen(second));
    /* a bar is as long as its value: 5 of 6 is 25 cells of 30, and 0 none */
    const char *texts[] = {"6", "5", "0", "1"};
    const double v[] = {6, 5, 0, 1};
    cg_buf_reset(&b);
    assert_int_equal(cg_chart_terminal_series(&b, labels, texts, v, 4, true), 0);
    snprintf(want, sizeof(want),
             "  aaaaaaa 6 %s\n  bbbbbbb 5 %.25s\n  ccccccc 0\n  ddddddd 1 %.5s\n", bar30, bar30,
             bar30);
    assert_string_equal(b.data, want);
    cg_buf_release(&b);
}

static void test_report__terminal_chart_runs_and_downsampling(void **state)
{
    (void)state;
    double ms[150];
    for (size_t i = 0; i < 150; i++)
        ms[i] = i % 2 ? 12.0 : 10.0;
    struct cg_artifact a;
    struct cg_buf b;
    make_steps(&a, 14, ms, 150);
    cg_buf_init(&b, 1 << 16);
    assert_int_equal(cg_chart_terminal(&b, &a, 0, true), 0);
    assert_non_null(strstr(b.data, "step times: median of 14 runs per step, 150 steps, each "
                                   "column the mean of 2 or 3 steps\n"));
    /* every line is ASCII, and the x axis spans 60 columns */
    for (const unsigned char *c = (const unsigned char *)b.data; *c; c++)
        assert_true(*c < 0x80);
    assert_non_null(
        strstr(b.data, "+------------------------------------------------------------\n"));
    char axis[128];
    snprintf(axis, sizeof(axis), "\n%12s1%56s150\n", "", ""); /* under the first and last column */
    assert_non_null(strstr(b.data, axis));
    /* per-run lines with their own range, cut at CG_CHART_TERM_RUNS */
    assert_non_null(strstr(b.data, "\n     run 0  "));
    assert_non_null(strstr(b.data, "  10.00 ms .. 12.00 ms\n"));
    assert_non_null(strstr(b.data, "\n    run 11  "));
    assert_null(strstr(b.data, "run 12"));
    assert_non_null(strstr(b.data, "(2 more runs)\n"));
    cg_buf_release(&b);
    cg_artifact_release(&a);
    /* an artifact without steps draws nothing */
    cg_artifact_init(&a);
    cg_buf_init(&b, 1 << 16);
    assert_int_equal(cg_chart_terminal(&b, &a, 0, false), 0);
    assert_int_equal(b.len, 0);
    cg_buf_release(&b);
    cg_artifact_release(&a);
}

/* Runs `canary-gate show` on the example artifact with the given environment assignments and
 * options; returns its stdout (caller frees) after checking it exited 0. */
static char *show_output(const char *env, const char *opts)
{
    char cmd[2048];
    snprintf(cmd, sizeof(cmd),
             "env -u LC_ALL -u LC_CTYPE -u LANG %s '%s' show %s '%s/examples/current.json'", env,
             CG_TOOL_PATH, opts, CG_SOURCE_DIR);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    struct cg_buf b;
    cg_buf_init(&b, 1 << 20);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        assert_int_equal(cg_buf_add(&b, chunk, n), 0);
    assert_int_equal(pclose(f), 0);
    char *text = cg_buf_detach(&b);
    assert_non_null(text);
    return text;
}

static bool all_ascii(const char *s)
{
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c >= 0x80)
            return false;
    }
    return true;
}

static void test_report__show_draws_by_locale_and_options(void **state)
{
    (void)state;
    char *utf8 = show_output("LANG=en_US.UTF-8", "");
    assert_non_null(strstr(utf8, "step times: median of 5 runs per step, 30 steps\n"));
    assert_non_null(strstr(utf8, "\xe2\x96\x88")); /* full block */
    assert_non_null(strstr(utf8, "\xe2\x94\x94")); /* axis corner */
    assert_non_null(strstr(utf8, "     run 4  "));
    /* LC_ALL wins over LANG; "C" and an unset locale are not UTF-8 */
    const char *ascii_envs[] = {"LC_ALL=C LANG=en_US.UTF-8", "LANG=C", "", "LC_CTYPE=en_US.utf8"};
    for (size_t i = 0; i < sizeof(ascii_envs) / sizeof(ascii_envs[0]); i++) {
        char *text = show_output(ascii_envs[i], "");
        assert_non_null(strstr(text, "step times: "));
        if (i < 3) {
            assert_true(all_ascii(text));
            assert_non_null(strstr(text, "+------------------------------\n"));
        } else {
            assert_false(all_ascii(text)); /* "utf8" spelled without the dash counts */
        }
        free(text);
    }
    char *forced = show_output("LANG=en_US.UTF-8", "--ascii");
    assert_true(all_ascii(forced));
    /* the same picture in both character sets: same lines, same labels */
    assert_non_null(strstr(forced, "step times: median of 5 runs per step, 30 steps\n"));
    char *none = show_output("LANG=en_US.UTF-8", "--no-chart");
    assert_null(strstr(none, "step times:"));
    assert_non_null(strstr(none, "top ops of run 0"));
    free(utf8);
    free(forced);
    free(none);
}

/* A canary the gate stopped once measured says so in the markdown, terminal and JSON. */
static void test_report__stopped_canary_in_every_output(void **state)
{
    (void)state;
    struct pair p;
    struct cg_buf md, term;
    struct cg_err err;
    make_pair(&p, 1e7, 0);
    for (size_t r = 0; r < 3; r++)
        p.cur.runs[r].stopped_after_steps = 33;
    for (size_t r = 0; r < p.base.n_runs; r++)
        p.base.runs[r].stopped_after_steps = 33;
    cg_buf_init(&md, CG_REPORT_MAX_BYTES);
    cg_buf_init(&term, 1 << 20);
    assert_int_equal(cg_report_markdown(&p.v, NULL, &md, &err), 0);
    assert_int_equal(cg_report_terminal(&p.v, false, &term, &err), 0);
    if (strstr(md.data, "- **Canary stopped once measured:** this run: stopped after 33 steps "
                        "(warm-up + measured) in 3 of 5 runs; baseline: stopped after 33 steps "
                        "(warm-up + measured) in 5 of 5 runs\n") == NULL)
        fail_msg("markdown:\n%s", md.data);
    if (strstr(term.data, "note: canary stopped once measured: this run: stopped after 33 steps "
                          "(warm-up + measured) in 3 of 5 runs; baseline: ") == NULL)
        fail_msg("terminal:\n%s", term.data);
    char *text = cg_report_json(&p.v);
    cJSON *root = cJSON_Parse(text);
    assert_non_null(root);
    cJSON *cur = cJSON_GetObjectItem(root, "current"), *base = cJSON_GetObjectItem(root, "baseline");
    assert_int_equal((int)cJSON_GetObjectItem(cur, "stopped_after_steps")->valuedouble, 33);
    assert_int_equal((int)cJSON_GetObjectItem(cur, "stopped_runs")->valuedouble, 3);
    assert_int_equal((int)cJSON_GetObjectItem(base, "stopped_runs")->valuedouble, 5);
    cJSON_Delete(root);
    free(text);

    /* canaries that ended by themselves: nothing said, null in the JSON */
    for (size_t r = 0; r < p.cur.n_runs; r++)
        p.cur.runs[r].stopped_after_steps = p.base.runs[r].stopped_after_steps = -1;
    cg_buf_reset(&md);
    cg_buf_reset(&term);
    assert_int_equal(cg_report_markdown(&p.v, NULL, &md, &err), 0);
    assert_int_equal(cg_report_terminal(&p.v, false, &term, &err), 0);
    assert_null(strstr(md.data, "stopped"));
    assert_null(strstr(term.data, "stopped"));
    text = cg_report_json(&p.v);
    root = cJSON_Parse(text);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "current"),
                                                 "stopped_after_steps")));
    cJSON_Delete(root);
    free(text);
    cg_buf_release(&md);
    cg_buf_release(&term);
    free_pair(&p);
}

/* This run has no GPU metrics (all its GPU records fell outside the steps) while the baseline
 * has them: the reason is shown, and the baseline's kernels and copies are not listed as
 * vanished (they were not measured on this run, not removed). */
static void test_report__no_gpu_metrics_on_one_side_lists_no_gpu_ops(void **state)
{
    (void)state;
    struct pair p;
    struct cg_buf md, term;
    struct cg_err err;
    make_gpu_pair(&p);
    cg_verdict_release(&p.v);
    for (size_t r = 0; r < p.cur.n_runs; r++) {
        struct cg_run *run = &p.cur.runs[r];
        for (size_t k = 0; k < run->n_ops; k++) { /* what such a run holds: no GPU ops */
            free(run->ops[k].name);
            free(run->ops[k].family);
        }
        run->n_ops = 0;
        run->summary.peak_device_bytes = -1;
    }
    assert_int_equal(cg_run_add_op(&p.base.runs[0], "forward", NULL, CG_OP_RANGE, 1, 1e6), 0);
    assert_int_equal(cg_run_add_op(&p.cur.runs[0], "forward", NULL, CG_OP_RANGE, 1, 3e6), 0);
    p.cur.gpu_available = false;
    p.cur.gpu_reason = strdup("37 GPU activity records fell outside every step");
    assert_int_equal(cg_verdict_compute(&p.base, &p.cur, &p.t, &p.v, &err), 0);
    assert_int_equal(p.v.n_ops_compared, 1); /* the range only */
    assert_int_equal(p.v.n_ops_vanished, 0);
    cg_buf_init(&md, CG_REPORT_MAX_BYTES);
    cg_buf_init(&term, 1 << 20);
    assert_int_equal(cg_report_markdown(&p.v, NULL, &md, &err), 0);
    assert_int_equal(cg_report_terminal(&p.v, false, &term, &err), 0);
    assert_non_null(strstr(md.data, "**GPU metrics unavailable** on this run: 37 GPU activity "
                                    "records fell outside every step"));
    assert_non_null(strstr(term.data, "note: GPU metrics unavailable on this run: 37 GPU "
                                      "activity records fell outside every step"));
    assert_null(strstr(md.data, "gemm_a"));
    assert_null(strstr(term.data, "gemm_a"));
    char *text = cg_report_json(&p.v);
    assert_null(strstr(text, "gemm_a"));
    free(text);
    cg_buf_release(&md);
    cg_buf_release(&term);
    free_pair(&p);
}

/* Replaces the canary command of a's environment by one argument arg (copied). */
static void set_command(struct cg_artifact *a, const char *arg)
{
    for (size_t i = 0; i < a->env.n_canary_command; i++)
        free(a->env.canary_command[i]);
    free(a->env.canary_command);
    a->env.canary_command = calloc(2, sizeof(char *));
    assert_non_null(a->env.canary_command);
    a->env.canary_command[0] = strdup(arg);
    assert_non_null(a->env.canary_command[0]);
    a->env.n_canary_command = 1;
}

/* Renders v's markdown report with cmark-gfm and checks it (see render.h); returns the HTML. */
static char *render_checked(const struct cg_verdict *v, const char *what)
{
    struct cg_buf md;
    struct cg_err err;
    cg_buf_init(&md, CG_REPORT_MAX_BYTES + 1);
    if (cg_report_markdown(v, NULL, &md, &err) != 0)
        fail_msg("%s: %s", what, err.msg);
    char *html = cg_render_gfm(md.data, md.len);
    cg_render_check_gfm(html, what);
    cg_buf_release(&md);
    return html;
}

/* Hostile strings everywhere an artifact reaches the report (op names, the GPU reason, the
 * canary command, the library's warnings), rendered as GitHub would: no mention (user or team),
 * no link, no raw HTML, and the op whose name holds '|' keeps its text in one cell. */
static void test_report__hostile_report_renders_safely_with_cmark_gfm(void **state)
{
    (void)state;
    static const double means[] = {1.2e7, 1.0e7}; /* a FAIL and a PASS report */
    for (size_t k = 0; k < 2; k++) {
        struct pair p;
        make_pair(&p, means[k], 0);
        cg_verdict_release(&p.v);
        set_command(&p.cur, "train.py --notify @org/team @admin https://e.vil/x");
        assert_int_equal(cg_run_add_warning(&p.cur.runs[0], "ask @admin or @org/team", 16), 0);
        struct cg_err err;
        assert_int_equal(cg_verdict_compute(&p.base, &p.cur, &p.t, &p.v, &err), 0);
        /* an accept recorded on main's history, with hostile text from its command line */
        struct cg_history_entry accepted;
        cg_history_entry_init(&accepted, CG_HIST_EVENT);
        accepted.event = CG_HEV_ACCEPT;
        accepted.commit = (char *)"abc|<b>x</b>";
        accepted.date = (char *)"2026-11-24|@team";
        accepted.who = (char *)"@octocat";
        accepted.reason = (char *)HOSTILE " see https://e.vil/x";
        p.v.accepted = &accepted;
        p.v.accepted_runs_since = 2;
        char *html = render_checked(&p.v, k == 0 ? "FAIL report" : "PASS report");
        assert_non_null(strstr(html, "Baseline accepted"));
        assert_non_null(strstr(html, "evil|kernel&lt;script&gt;alert(1)&lt;/script&gt;"));
        p.v.accepted = NULL;
        char *cell = cg_render_cell_with(html, "evil");
        assert_non_null(cell);
        assert_non_null(strstr(cell, "evil|kernel&lt;script&gt;"));
        free(cell);
        free(html);
        free_pair(&p);
    }
}

#define HOSTILE_REASON                                                                             \
    "pwned </details> <img src=\"https://evil.example/x.png\"> @octocat [click](https://e.vil) "   \
    "cell|break \x1b]0;OWNED\a\x1b[31mRED"

/* The notes of the metric table and the headline quote artifact text (the GPU state's energy and
 * MFU reasons, the step range's name): escaped in the markdown (no link, tag, mention or split
 * cell) and the terminal (no escape byte); the JSON verdict keeps it verbatim. */
static void test_report__notes_quoting_artifact_text_are_escaped_in_every_output(void **state)
{
    (void)state;
    struct pair p;
    struct cg_err err;
    make_pair(&p, 1.2e7, 0);
    cg_verdict_release(&p.v);
    struct cg_artifact *sides[2] = {&p.base, &p.cur};
    for (int s = 0; s < 2; s++) {
        assert_int_equal(cg_fixture_set_gpu(sides[s], NAN, NAN, 1980), 0);
        for (size_t r = 0; r < sides[s]->n_runs; r++) {
            struct cg_gpu_state *g = &sides[s]->runs[r].gpu;
            free(g->energy_reason);
            free(g->mfu_reason);
            g->energy_reason = strdup(HOSTILE_REASON);
            g->mfu_reason = strdup(HOSTILE_REASON);
            g->energy_j = NAN;
        }
    }
    /* steps marked by another range on this run: timing is INCONCLUSIVE with a note naming it */
    free(p.cur.settings.step_range);
    p.cur.settings.step_range = strdup("[s](https://e.vil) @team\x1b[31m");
    assert_int_equal(cg_verdict_compute(&p.base, &p.cur, &p.t, &p.v, &err), 0);
    assert_int_equal(p.v.overall, CG_OUT_INCONCLUSIVE);
    assert_non_null(strstr(p.v.metrics[CG_M_MFU].note, "@octocat"));

    char *html = render_checked(&p.v, "hostile notes");
    char *cell = cg_render_cell_with(html, "cell|break");
    assert_non_null(cell); /* the '|' did not split the cell */
    assert_non_null(strstr(cell, "31mRED"));
    free(cell);
    assert_non_null(strstr(html, "<h2>"));
    free(html);

    struct cg_buf term;
    cg_buf_init(&term, 1 << 20);
    assert_int_equal(cg_report_terminal(&p.v, false, &term, &err), 0);
    assert_null(memchr(term.data, 0x1b, term.len));
    assert_null(memchr(term.data, '\a', term.len));
    assert_non_null(strstr(term.data, "cell|break ?]0;OWNED??[31mRED"));
    assert_non_null(strstr(term.data, "\ncanary-gate INCONCLUSIVE: "));
    cg_buf_release(&term);

    char *json = cg_report_json(&p.v);
    assert_non_null(strstr(json, "@octocat [click](https://e.vil)"));
    free(json);
    free_pair(&p);
}

/* Names in each form GitHub's markdown links by itself: www. (any case), URLs with a scheme,
 * e-mail addresses and mailto:/xmpp: ones. */
static const char *const autolinks[] = {
    "www.evil.example/login", "WWW.evil.example/x", "x www.evil.example", "http://e.vil/a",
    "https://e.vil/b",        "ftp://e.vil/c",      "admin@evil.example", "mailto:a@e.vil",
    "xmpp:a@e.vil",           "(www.e.vil)",        "~www.e.vil",         "_www.e.vil",
};

/* Autolink-shaped names in the op table, the anatomy, the diagnosis and the counts' places: the
 * report rendered by cmark-gfm holds no link, and the names keep their text. */
static void test_report__autolink_shaped_names_are_not_links(void **state)
{
    (void)state;
    struct pair p;
    struct cg_err err;
    make_gpu_pair(&p);
    cg_verdict_release(&p.v);
    size_t n = sizeof(autolinks) / sizeof(autolinks[0]);
    for (size_t i = 0; i < n; i++) {
        /* the first the largest new kernel family: the diagnosis names it */
        assert_int_equal(cg_fixture_add_op(&p.cur, autolinks[i], autolinks[i], CG_OP_KERNEL, 1,
                                           i == 0 ? 8e6 : 2e5),
                         0);
        assert_int_equal(cg_fixture_add_op(&p.base, autolinks[i], NULL, CG_OP_RANGE, 1, 3e6), 0);
        assert_int_equal(cg_fixture_add_op(&p.cur, autolinks[i], NULL, CG_OP_RANGE, 1, 3e6), 0);
    }
    assert_int_equal(cg_verdict_compute(&p.base, &p.cur, &p.t, &p.v, &err), 0);
    char *html = render_checked(&p.v, "autolink-shaped names");
    size_t seen = 0; /* the op table, the anatomy and the diagnosis name it */
    for (const char *at = html; (at = strstr(at, "www.evil.example/login")) != NULL; at++)
        seen++;
    if (seen < 3)
        fail_msg("the name is shown %zu times:\n%s", seen, html);
    free(html);
    struct cg_buf md;
    cg_buf_init(&md, CG_REPORT_MAX_BYTES + 1);
    assert_int_equal(cg_report_markdown(&p.v, NULL, &md, &err), 0);
    assert_non_null(strstr(md.data, "www&#46;evil.example/login"));
    cg_buf_release(&md);
    free_pair(&p);
}

/* The history check's markdown shows the file and the commits as they are, in <code> (a code
 * span shows entities literally: `main&#95;history.jsonl` was what readers saw), escaped so a
 * commit cannot split its cell, open HTML or mention anyone; "1 run", not "1 runs". */
static void test_report__history_markdown_shows_names_as_they_are(void **state)
{
    (void)state;
    struct cg_history_entry before, after;
    cg_history_entry_init(&before, CG_HIST_RUN);
    cg_history_entry_init(&after, CG_HIST_RUN);
    before.commit = (char *)"nightly_07";
    after.commit = (char *)"a|b<i>&@team";
    struct cg_trend_change change;
    memset(&change, 0, sizeof(change));
    change.metric = CG_M_STEP_TIME_MEAN;
    change.segment = 1;
    change.before = &before;
    change.after = &after;
    change.cp = (struct cg_changepoint){8, 1.0, 0.005, 11.28e6, 17.06e6, 51.2, 50.7, 51.7, 0, 16};
    change.worse = true;
    struct cg_trend_drift drift = {
        CG_M_STEP_TIME_MEAN, 1, 11.28e6, 17.06e6, 51.2, 1, &before, &after};
    struct cg_trend_report r = {&change, 1, &drift, 1, NULL, 0, 16, 1};
    struct cg_buf md;
    cg_buf_init(&md, 1 << 16);
    assert_int_equal(cg_report_history_markdown(&r, "main_history.jsonl", &md), 0);
    char *html = cg_render_gfm(md.data, md.len);
    cg_render_check_gfm(html, "history markdown");
    const char *want[] = {"<code>main_history.jsonl</code>", "<code>nightly_07</code> → ",
                          "<code>a|b&lt;i&gt;&amp;@\u200dteam</code>"};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (strstr(html, want[i]) == NULL)
            fail_msg("no '%s' in:\n%s", want[i], html);
    assert_null(strstr(html, "&amp;#"));
    char *cell = cg_render_cell_with(html, "nightly_07");
    assert_non_null(cell);
    assert_non_null(strstr(cell, "a|b&lt;i&gt;")); /* one cell for both commits */
    free(cell);
    free(html);
    /* one run */
    cg_buf_reset(&md);
    struct cg_trend_report one = {NULL, 0, NULL, 0, NULL, 0, 1, 1};
    assert_int_equal(cg_report_history_markdown(&one, "h.jsonl", &md), 0);
    assert_non_null(strstr(md.data, "1 run of "));
    cg_buf_reset(&md);
    assert_int_equal(cg_report_history_terminal(&one, "h.jsonl", &md), 0);
    assert_non_null(strstr(md.data, "history check: 1 run in 1 segment"));
    cg_buf_release(&md);
}

/* A canary command over 4 KB is cut in its cell with a note, instead of failing the report. */
static void test_report__long_canary_command_is_cut_with_a_note(void **state)
{
    (void)state;
    struct pair p;
    make_pair(&p, 1.2e7, 0);
    char *arg = malloc(6001);
    assert_non_null(arg);
    for (size_t i = 0; i < 6000; i++)
        arg[i] = i % 2 ? 'x' : '|';
    arg[6000] = '\0';
    set_command(&p.cur, arg);
    set_command(&p.base, arg);
    free(arg);
    char *html = render_checked(&p.v, "a 6000-byte command");
    char *cell = cg_render_cell_with(html, "|x|x");
    assert_non_null(cell);
    assert_non_null(strstr(cell, "(cut: 6000 bytes in all)"));
    assert_true(strlen(cell) < 1200);
    free(cell);
    free(html);
    free_pair(&p);
}

/* The injection library's warnings (names beyond its op table) are in the report. */
static void test_report__library_warnings_are_shown(void **state)
{
    (void)state;
    struct pair p;
    make_pair(&p, 1.0e7, 0);
    for (size_t r = 0; r < p.cur.n_runs; r++)
        assert_int_equal(
            cg_run_add_warning(&p.cur.runs[r], "op table full: 28 more names not recorded", 16), 0);
    assert_int_equal(cg_run_add_warning(&p.base.runs[1], "op table full: 3 more names not recorded",
                                        16),
                     0);
    char *html = render_checked(&p.v, "warnings");
    const char *w = strstr(html, "op table full: 28 more names not recorded");
    assert_non_null(w);
    assert_null(strstr(w + 1, "op table full: 28 more")); /* once for all runs */
    assert_non_null(strstr(html, "op table full: 3 more names not recorded"));
    free(html);
    free_pair(&p);
}

/* Steps of 10 s or more: the chart's numbers stay plain digits (mermaid's xychart takes no
 * exponent notation), and mermaid's grammar for the y axis and lines holds. */
static void test_report__slow_steps_chart_has_no_exponent(void **state)
{
    (void)state;
    double base[40], cur[40];
    for (size_t i = 0; i < 40; i++) {
        base[i] = 12e9 + (double)i * 1e6; /* 12 s a step */
        cur[i] = 11.61e9;
    }
    struct cg_buf b;
    cg_buf_init(&b, 1 << 16);
    assert_int_equal(cg_chart_mermaid(&b, base, cur, 40, 100), 0);
    if (strchr(b.data, 'e') != NULL && strstr(b.data, "e+") != NULL)
        fail_msg("exponent notation in the chart:\n%s", b.data);
    const char *y = strstr(b.data, "    y-axis \"ms\" ");
    assert_non_null(y);
    for (const char *c = y + 16; *c != '\n'; c++)
        if (!((*c >= '0' && *c <= '9') || *c == '.' || *c == ' ' || *c == '-' || *c == '>'))
            fail_msg("the y axis is not plain numbers: %.60s", y);
    assert_non_null(strstr(b.data, "    line [12000, 12001, 12002, "));
    assert_non_null(strstr(b.data, "    line [11610, 11610, "));
    cg_buf_release(&b);
}

#define SM90 "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1"
#define CUTLASS "cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_256x128_32x3_tn_align8"

/* Five runs a side; SM90 in baseline runs 0-2 and current runs 0-3, CUTLASS (30% slower) in the
 * others; train.py edited since the baseline when edited. */
static void make_choices_pair(struct pair *p, bool kernels, bool edited)
{
    struct cg_err err;
    struct cg_fixture b = {5, 30, 1e7, 0.01, 0.02, 1024, 123456789, 200000000, 4, 1};
    struct cg_fixture c = b;
    c.seed = 2;
    cg_artifact_init(&p->base);
    cg_artifact_init(&p->cur);
    assert_int_equal(cg_fixture_make(&p->base, &b), 0);
    assert_int_equal(cg_fixture_make(&p->cur, &c), 0);
    for (size_t i = 0; i < 10; i++) {
        struct cg_artifact *a = i < 5 ? &p->base : &p->cur;
        struct cg_run *run = &a->runs[i % 5];
        bool sm90 = i < 3 || (i >= 5 && i < 9);
        if (kernels)
            assert_int_equal(
                cg_run_add_op(run, sm90 ? SM90 : CUTLASS, NULL, CG_OP_KERNEL, 30, 3000000), 0);
        if (kernels && !sm90) {
            for (size_t k = 0; k < run->n_steps; k++)
                run->steps[k].wall_ns = (int64_t)((double)run->steps[k].wall_ns * 1.3);
            cg_run_summarize(run);
        }
        assert_int_equal(cg_run_code_add_file(&run->code, "train.py",
                                              i >= 5 && edited ? "fnv1a64:bbbb" : "fnv1a64:aaaa"),
                         0);
    }
    assert_int_equal(cg_thresholds_load("default", &p->t, &err), 0);
    assert_int_equal(cg_verdict_compute(&p->base, &p->cur, &p->t, &p->v, &err), 0);
}

/* Kernel choices that differ among the runs, and an edited script, are plain facts in every
 * output: named (shortened), counted per side and state; not a changed canary. */
static void test_report__kernel_choices_and_an_edited_script_are_plain_facts(void **state)
{
    (void)state;
    struct pair p;
    struct cg_buf md, term;
    struct cg_err err;
    make_choices_pair(&p, true, true);
    assert_null(p.v.canary_diff);
    cg_buf_init(&md, 1 << 20);
    cg_buf_init(&term, 1 << 20);
    assert_int_equal(cg_report_markdown(&p.v, NULL, &md, &err), 0);
    assert_int_equal(cg_report_terminal(&p.v, false, &term, &err), 0);
    const char *m = cg_buf_str(&md), *t = cg_buf_str(&term);
    /* names cut to 40 bytes, '_' as an entity (no emphasis), in <code> */
    assert_non_null(strstr(m, "- **2 kernel choices among the runs:** <code>sm90&#95;xmma&#95;gemm"
                              "&#95;bf16bf16&#95;bf16f32&#95;f32&#95;tn&#95;n…</code> in 7 runs "
                              "(baseline 3, current 4; 7 in the fast state, 0 slow), <code>"
                              "cutlass&#95;80&#95;tensorop&#95;bf16&#95;s16816gemm&#95;relu…"
                              "</code> in 3 runs (baseline 2, current 1; 0 in the fast state, 3 "
                              "slow)\n"));
    assert_non_null(strstr(m, "- **Script:** the script changed since the baseline (<code>train.py"
                              "</code>); the canary is the same: its command and settings\n"));
    assert_null(strstr(m, "Canary configuration changed"));
    char *html = cg_render_gfm(m, strlen(m));
    cg_render_check_gfm(html, "kernel choices report");
    /* the run summary is a list, one fact an item, its statistical words sent to the glossary
     * (before: one paragraph of bold labels) */
    const char *items[] = {"<li><strong>Runs:</strong> baseline", "<li><strong>Thresholds:</strong>",
                           "<li><strong>Steps and tokens:</strong>",
                           "<li><strong>2 kernel choices among the runs:</strong>",
                           "<li><strong>Script:</strong>", NULL};
    for (size_t i = 0; items[i] != NULL; i++)
        if (strstr(html, items[i]) == NULL)
            fail_msg("no '%s' in:\n%s", items[i], html);
    if (strstr(html, "explained in the glossary at the top of docs/statistics.md") == NULL ||
        strstr(html, "<em>process state</em>") == NULL)
        fail_msg("no pointer to the glossary:\n%s", html);
    free(html);
    assert_non_null(strstr(t, "note: 2 kernel choices among the runs: sm90_xmma_gemm_bf16bf16_"
                              "bf16f32_f32_tn_n..."));
    assert_non_null(strstr(t, "note: the script changed since the baseline (train.py); the "
                              "canary is the same\n"));
    assert_null(strstr(t, "canary configuration changed"));
    char *json = cg_report_json(&p.v);
    cJSON *root = cJSON_Parse(json);
    const cJSON *kc = cJSON_GetObjectItem(root, "kernel_choices");
    assert_int_equal(cJSON_GetArraySize(kc), 2);
    const cJSON *first = cJSON_GetArrayItem(kc, 0);
    assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(first, "kernels"), 0)->valuestring,
                        SM90);
    assert_int_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(first, "fast_state_runs"), "current")->valueint, 4);
    assert_string_equal(
        cJSON_GetArrayItem(cJSON_GetObjectItem(root, "script_changed"), 0)->valuestring,
        "train.py");
    cJSON_Delete(root);
    free(json);
    free_pair(&p);
    /* the same kernels everywhere (or none: a CPU canary) and the same script: nothing said */
    make_choices_pair(&p, false, false);
    cg_buf_release(&md);
    cg_buf_init(&md, 1 << 20);
    assert_int_equal(cg_report_markdown(&p.v, NULL, &md, &err), 0);
    assert_null(strstr(cg_buf_str(&md), "kernel choices"));
    assert_null(strstr(cg_buf_str(&md), "script changed"));
    json = cg_report_json(&p.v);
    root = cJSON_Parse(json);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(root, "kernel_choices")), 0);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(root, "script_changed")), 0);
    cJSON_Delete(root);
    free(json);
    free_pair(&p);
    cg_buf_release(&md);
    cg_buf_release(&term);
}

/* The Change cell agrees with the columns beside it: the shift with its interval, and the
 * medians' change when it differs (55.18 -> 51.15 ms shown beside a +2.1% shift, a user trial's
 * confusion); an end the test cannot bound says so instead of "inf". */
static void test_report__change_cell_agrees_with_its_columns(void **state)
{
    (void)state;
    struct cg_metric_result r;
    memset(&r, 0, sizeof(r));
    r.metric = CG_M_STEP_TIME_MEAN;
    r.method = CG_METHOD_RUNS;
    r.baseline = 55.18e6;
    r.current = 51.15e6;
    r.delta_pct = 2.1;
    r.ci_low_pct = -0.5;
    r.ci_high_pct = 4.9;
    char cell[160];
    cg_report_change_text(&r, cell, sizeof(cell));
    assert_string_equal(cell, "+2.1% (-0.5% to +4.9%); medians -7.3%");
    r.current = 56.34e6; /* +2.1%: the medians agree, said once */
    cg_report_change_text(&r, cell, sizeof(cell));
    assert_string_equal(cell, "+2.1% (-0.5% to +4.9%)");
    r.ci_low_pct = -INFINITY;
    cg_report_change_text(&r, cell, sizeof(cell));
    assert_string_equal(cell, "+2.1% (no bound to +4.9%)");
    r.ci_high_pct = INFINITY;
    cg_report_change_text(&r, cell, sizeof(cell));
    assert_string_equal(cell, "+2.1% (no interval with these runs)");
}

/* Sets count c of every step of a's runs: base, one more in every second step when vary. */
static void set_count(struct cg_artifact *a, int c, int64_t base, bool vary)
{
    for (size_t r = 0; r < a->n_runs; r++)
        for (size_t k = 0; k < a->runs[r].n_steps; k++)
            a->runs[r].steps[k].counts[c] = base + (vary && k % 2 == 1 ? 1 : 0);
}

/* The counts section says that varying counts are gated with the varying tolerance only of the
 * counts that are gated: a GAN's backward passes, which vary from step to step and are shown,
 * not gated, were said to be "gated with the varying tolerance (+10%)". */
static void test_report__varying_counts_not_gated_are_not_said_gated(void **state)
{
    (void)state;
    struct cg_err err;
    cg_err_init(&err);
    for (int gated = 0; gated < 2; gated++) {
        struct pair p;
        make_pair(&p, 1e7, 0);
        cg_verdict_release(&p.v);
        struct cg_artifact *side[2] = {&p.base, &p.cur};
        for (int j = 0; j < 2; j++) {
            set_count(side[j], CG_COUNT_RANGES, 3, false);
            set_count(side[j], CG_COUNT_BACKWARD, 1, true);
            set_count(side[j], CG_COUNT_OPTIMIZER_STEPS, 1, true);
            set_count(side[j], CG_COUNT_KERNELS, gated ? 40 : -1, gated != 0);
        }
        assert_int_equal(cg_verdict_compute(&p.base, &p.cur, &p.t, &p.v, &err), 0);
        struct cg_buf md;
        cg_buf_init(&md, CG_REPORT_MAX_BYTES);
        assert_int_equal(cg_report_markdown(&p.v, NULL, &md, &err), 0);
        const char *said = strstr(md.data, "gated with the varying tolerance");
        if (gated) {
            if (said == NULL || strstr(md.data, "\n1 count varies from step to step") == NULL)
                fail_msg("the gated varying count is not said:\n%s", md.data);
        } else if (said != NULL) {
            fail_msg("counts shown, not gated, said gated:\n%s", said - 120);
        }
        cg_buf_release(&md);
        free_pair(&p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_report__hostile_report_renders_safely_with_cmark_gfm),
        cmocka_unit_test(test_report__long_canary_command_is_cut_with_a_note),
        cmocka_unit_test(test_report__history_markdown_shows_names_as_they_are),
        cmocka_unit_test(test_report__autolink_shaped_names_are_not_links),
        cmocka_unit_test(test_report__notes_quoting_artifact_text_are_escaped_in_every_output),
        cmocka_unit_test(test_report__library_warnings_are_shown),
        cmocka_unit_test(test_report__slow_steps_chart_has_no_exponent),
        cmocka_unit_test(test_report__fail_matches_golden),
        cmocka_unit_test(test_report__change_cell_agrees_with_its_columns),
        cmocka_unit_test(test_report__pass_matches_golden_with_gate_id),
        cmocka_unit_test(test_report__hostile_names_are_escaped),
        cmocka_unit_test(test_report__size_cap_with_many_ops),
        cmocka_unit_test(test_report__widest_artifact_text_is_cut_to_fit_not_failed),
        cmocka_unit_test(test_report__json_has_contract_fields),
        cmocka_unit_test(test_report__diagnosis_in_every_output),
        cmocka_unit_test(test_report__chart_gives_way_under_the_size_cap),
        cmocka_unit_test(test_report__mermaid_chart_downsamples),
        cmocka_unit_test(test_report__terminal_chart_exact),
        cmocka_unit_test(test_report__terminal_series_bars_start_at_zero),
        cmocka_unit_test(test_report__terminal_chart_runs_and_downsampling),
        cmocka_unit_test(test_report__show_draws_by_locale_and_options),
        cmocka_unit_test(test_report__stopped_canary_in_every_output),
        cmocka_unit_test(test_report__no_gpu_metrics_on_one_side_lists_no_gpu_ops),
        cmocka_unit_test(test_report__kernel_choices_and_an_edited_script_are_plain_facts),
        cmocka_unit_test(test_report__varying_counts_not_gated_are_not_said_gated),
    };
    if (getenv("CG_TEST_FILTER") != NULL) /* one case while working on it: a glob of names */
        cmocka_set_test_filter(getenv("CG_TEST_FILTER"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
