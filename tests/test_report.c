/*
 * test_report: the markdown report against golden files, hostile names escaped everywhere, the
 * size cap with thousands of ops, and the JSON verdict's contract fields.
 * CG_UPDATE_GOLDEN=1 rewrites the golden files instead of comparing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fixtures.h"
#include "fsutil.h"
#include "report.h"

#include <cjson/cJSON.h>
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
        assert_int_equal(cg_run_add_op(&p->cur.runs[r], HOSTILE, "evil", CG_OP_KERNEL, 30, 60000000), 0);
        for (size_t k = 0; k < extra_ops; k++) {
            char name[600];
            snprintf(name, sizeof(name), "void cutlass::Kernel<cutlass::gemm::GemmUniversal<%zu|%0400zu>>", k, k);
            assert_int_equal(cg_run_add_op(&p->cur.runs[r], name, NULL, CG_OP_KERNEL, 30, 30000000), 0);
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
    const char *forbidden[] = {"<script>", "evil|kernel", "`rm`", "@team", "](http", "**b**",
                               "\x1b[31m", "<b>loaded", "@admin"};
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
    assert_int_equal(cJSON_GetArraySize(metrics), 5);
    const char *names[] = {"step_time_mean", "step_time_p95", "tokens_per_sec",
                           "peak_device_memory", "peak_host_rss"};
    const char *keys[] = {"name", "baseline", "current", "delta_pct", "ci_low_pct",
                          "ci_high_pct", "p_value", "outcome"};
    for (int i = 0; i < 5; i++) {
        cJSON *m = cJSON_GetArrayItem(metrics, i);
        assert_string_equal(cJSON_GetObjectItem(m, "name")->valuestring, names[i]);
        for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
            assert_non_null(cJSON_GetObjectItem(m, keys[k]));
    }
    assert_true(cJSON_IsArray(cJSON_GetObjectItem(root, "ops")));
    cJSON_Delete(root);
    free(text);
    free_pair(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_report__fail_matches_golden),
        cmocka_unit_test(test_report__pass_matches_golden_with_gate_id),
        cmocka_unit_test(test_report__hostile_names_are_escaped),
        cmocka_unit_test(test_report__size_cap_with_many_ops),
        cmocka_unit_test(test_report__json_has_contract_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
