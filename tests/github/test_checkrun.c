/*
 * test_checkrun: the verdict as a check run (src/github/checkrun.c) against the GitHub
 * emulation of tests/support/httpd on 127.0.0.1: the conclusion of every verdict (INCONCLUSIVE
 * neutral, never success), the create with the status's name and title and the report as its
 * summary, the update in place on a re-run, another check of the same name left alone, two gate
 * ids, the check run on page 2, the summary cut to GitHub's limit, the 403 that asks for
 * checks: write, a create whose 5xx hid its success, and the dry run.
 */
#include "checkrun.h"
#include "github.h"
#include "http.h"
#include "httpd.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#define TOKEN "ghp_TESTTOKEN123"
#define SHA "0123456789abcdef0123456789abcdef01234567"
#define REPORT(v) "<!-- canary-gate -->\n<!-- canary-gate-verdict: " v " -->\n# report\n"

struct fixture {
    struct cg_httpd *srv;
    struct cg_http http;
    struct cg_github gh;
    struct cg_github_check_result res;
    struct cg_err err;
};

static int setup_with(void **state, int per_page, int dry)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct cg_http_options o;
    assert_non_null(f);
    f->srv = cg_httpd_start();
    assert_non_null(f->srv);
    cg_httpd_github(f->srv, "o/r", 7, TOKEN, per_page);
    cg_http_options_default(&o);
    o.backoff_base_ms = 5;
    o.backoff_max_ms = 1000;
    o.retry_budget_ms = 2000;
    o.max_attempts = 4;
    o.timeout_ms = 5000;
    o.dry_run = dry;
    assert_int_equal(cg_http_init(&f->http, &o, &f->err), 0);
    f->gh.http = &f->http;
    f->gh.api_url = cg_httpd_url(f->srv);
    f->gh.repo = "o/r";
    f->gh.token = TOKEN;
    cg_err_init(&f->err);
    *state = f;
    return 0;
}

static int setup(void **state)
{
    return setup_with(state, 100, 0);
}

static int setup_pages_of_one(void **state)
{
    return setup_with(state, 1, 0);
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    cg_http_release(&f->http);
    cg_httpd_stop(f->srv);
    free(f);
    return 0;
}

static int publish(struct fixture *f, const char *id, enum cg_github_verdict v,
                   const char *report)
{
    cg_err_init(&f->err);
    return cg_github_check_run_publish(&f->gh, SHA, id, v, NULL, report, strlen(report),
                                       "https://github.com/o/r/actions/runs/9", &f->res, &f->err);
}

/* Check run i as the emulation shows it, parsed; the caller deletes it. */
static cJSON *check_run(struct fixture *f, size_t i)
{
    char *text = cg_httpd_check_run(f->srv, i, NULL);
    assert_non_null(text);
    cJSON *j = cJSON_Parse(text);
    free(text);
    assert_non_null(j);
    return j;
}

static const char *field(const cJSON *o, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, a);
    if (b != NULL)
        v = cJSON_GetObjectItemCaseSensitive(v, b);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* ---- pure ----------------------------------------------------------------------------------- */

static void test_checkrun__inconclusive_is_neutral_never_success(void **state)
{
    (void)state;
    static const struct {
        enum cg_github_verdict v;
        const char *conclusion;
    } cases[] = {
        {CG_GITHUB_PASS, "success"},         {CG_GITHUB_FAIL, "failure"},
        {CG_GITHUB_INCONCLUSIVE, "neutral"}, {CG_GITHUB_ERROR, "failure"},
        {CG_GITHUB_RECORDED, "neutral"},     {CG_GITHUB_VERDICT_NONE, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *c = cg_github_check_conclusion(cases[i].v);
        if (cases[i].conclusion == NULL)
            assert_null(c);
        else
            assert_string_equal(c, cases[i].conclusion);
    }
    char ext[128];
    cg_github_check_external_id(NULL, ext, sizeof(ext));
    assert_string_equal(ext, "canary-gate-verdict");
    cg_github_check_external_id("h100", ext, sizeof(ext));
    assert_string_equal(ext, "canary-gate-verdict:h100");
}

static void test_checkrun__scan_takes_only_our_check_run(void **state)
{
    (void)state;
    long long id = 5;
    const char *page = "{\"total_count\":3,\"check_runs\":["
                       "{\"id\":11,\"name\":\"canary-gate\",\"external_id\":\"\"},"
                       "{\"id\":12,\"name\":\"canary-gate/x\",\"external_id\":\"canary-gate-verdict\"},"
                       "{\"id\":13,\"name\":\"canary-gate\",\"external_id\":\"canary-gate-verdict\"}]}";
    assert_int_equal(cg_github_check_runs_scan(page, strlen(page), "canary-gate",
                                               "canary-gate-verdict", &id), 0);
    assert_int_equal(id, 13);
    assert_int_equal(cg_github_check_runs_scan("[]", 2, "canary-gate", "canary-gate-verdict", &id),
                     CG_EINPUT);
    assert_int_equal(id, 0);
    const char *odd = "{\"check_runs\":[{\"id\":1.5,\"name\":\"canary-gate\","
                      "\"external_id\":\"canary-gate-verdict\"}]}";
    assert_int_equal(cg_github_check_runs_scan(odd, strlen(odd), "canary-gate",
                                               "canary-gate-verdict", &id), 0);
    assert_int_equal(id, 0);
}

/* A report past GitHub's limit: cut at a line, at most 65535 bytes (so at most 65535
 * characters however GitHub counts them), the open code fence closed before the note. */
static void test_checkrun__summary_is_cut_to_githubs_limit(void **state)
{
    (void)state;
    struct cg_buf report, out;
    struct cg_err err;
    cg_buf_init(&report, (size_t)1 << 20);
    cg_buf_init(&out, (size_t)1 << 20);
    cg_err_init(&err);
    assert_int_equal(cg_buf_adds(&report, REPORT("fail") "```\n"), 0);
    while (report.len < 80000)
        assert_int_equal(cg_buf_adds(&report, "\xc3\xa9t\xc3\xa9 \xe2\x86\x92 kernel<a,b>|x\n"), 0);
    assert_int_equal(cg_github_check_summary(report.data, report.len, &out, &err), 0);
    assert_true(out.len <= CG_GITHUB_CHECK_SUMMARY_MAX_BYTES);
    assert_true(out.len > CG_GITHUB_CHECK_SUMMARY_MAX_BYTES - 200);
    assert_memory_equal(out.data, report.data, strlen(REPORT("fail")));
    const char *note = strstr(cg_buf_str(&out), "\n```\n\n_The report was cut to fit GitHub's "
                                                "limit on a check run's summary");
    assert_non_null(note);
    cg_buf_reset(&out);
    assert_int_equal(cg_github_check_summary(REPORT("pass"), strlen(REPORT("pass")), &out, &err),
                     0);
    assert_string_equal(cg_buf_str(&out), REPORT("pass"));
    cg_buf_release(&report);
    cg_buf_release(&out);
}

/* ---- against the emulation ------------------------------------------------------------------ */

static void test_checkrun__creates_one_named_as_the_status(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(publish(f, NULL, CG_GITHUB_INCONCLUSIVE, REPORT("inconclusive")), 0);
    assert_int_equal(f->res.action, CG_GITHUB_CREATED);
    assert_true(f->res.check_run_id > 0);
    assert_non_null(strstr(f->res.html_url, "https://github.com/o/r/runs/"));
    assert_int_equal(cg_httpd_count(f->srv), 2);
    const struct cg_httpd_request *r0 = cg_httpd_request(f->srv, 0);
    const struct cg_httpd_request *r1 = cg_httpd_request(f->srv, 1);
    assert_string_equal(r0->method, "GET");
    assert_string_equal(r0->target, "/repos/o/r/commits/" SHA "/check-runs?check_name=canary-gate"
                                     "&filter=latest&per_page=100");
    assert_string_equal(r1->method, "POST");
    assert_string_equal(r1->target, "/repos/o/r/check-runs");
    assert_int_equal(cg_httpd_check_run_count(f->srv), 1);
    cJSON *c = check_run(f, 0);
    assert_string_equal(field(c, "name", NULL), "canary-gate");
    assert_string_equal(field(c, "head_sha", NULL), SHA);
    assert_string_equal(field(c, "external_id", NULL), "canary-gate-verdict");
    assert_string_equal(field(c, "status", NULL), "completed");
    assert_string_equal(field(c, "conclusion", NULL), "neutral");
    assert_string_equal(field(c, "details_url", NULL), "https://github.com/o/r/actions/runs/9");
    assert_string_equal(field(c, "output", "title"),
                        "INCONCLUSIVE: a change beyond the thresholds, but the evidence is thin");
    assert_string_equal(field(c, "output", "summary"), REPORT("inconclusive"));
    cJSON_Delete(c);
}

static void test_checkrun__updated_in_place_on_a_rerun(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(publish(f, NULL, CG_GITHUB_INCONCLUSIVE, REPORT("inconclusive")), 0);
    long long first = f->res.check_run_id;
    assert_int_equal(publish(f, NULL, CG_GITHUB_FAIL, REPORT("fail")), 0);
    assert_int_equal(f->res.action, CG_GITHUB_UPDATED);
    assert_int_equal(f->res.check_run_id, first);
    assert_int_equal(cg_httpd_check_run_count(f->srv), 1);
    const struct cg_httpd_request *r3 = cg_httpd_request(f->srv, 3);
    char target[128];
    snprintf(target, sizeof(target), "/repos/o/r/check-runs/%lld", first);
    assert_string_equal(r3->method, "PATCH");
    assert_string_equal(r3->target, target);
    assert_null(strstr(r3->body, "head_sha")); /* not a field of the update */
    cJSON *c = check_run(f, 0);
    assert_string_equal(field(c, "conclusion", NULL), "failure");
    assert_string_equal(field(c, "output", "summary"), REPORT("fail"));
    cJSON_Delete(c);
}

/* A workflow job named canary-gate has a check run of that name too: it is not ours to edit. */
static void test_checkrun__another_check_of_the_same_name_is_left_alone(void **state)
{
    struct fixture *f = *state;
    cg_httpd_add_check_run(f->srv, SHA, "canary-gate", "job-uuid-1");
    cg_httpd_add_check_run(f->srv, "fedcba9876543210fedcba9876543210fedcba98", "canary-gate",
                           "canary-gate-verdict");
    assert_int_equal(publish(f, NULL, CG_GITHUB_PASS, REPORT("pass")), 0);
    assert_int_equal(f->res.action, CG_GITHUB_CREATED);
    assert_int_equal(cg_httpd_check_run_count(f->srv), 3);
    cJSON *job = check_run(f, 0), *ours = check_run(f, 2);
    assert_string_equal(field(job, "conclusion", NULL), "success");
    assert_null(field(job, "output", "summary"));
    assert_string_equal(field(ours, "conclusion", NULL), "success");
    assert_string_equal(field(ours, "head_sha", NULL), SHA);
    cJSON_Delete(job);
    cJSON_Delete(ours);
}

static void test_checkrun__two_gate_ids_keep_two_check_runs(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(publish(f, "h100", CG_GITHUB_FAIL, REPORT("fail")), 0);
    assert_string_equal(cg_httpd_request(f->srv, 0)->target,
                        "/repos/o/r/commits/" SHA "/check-runs?check_name=canary-gate%2Fh100"
                        "&filter=latest&per_page=100");
    assert_int_equal(publish(f, NULL, CG_GITHUB_PASS, REPORT("pass")), 0);
    assert_int_equal(publish(f, "h100", CG_GITHUB_PASS, REPORT("pass")), 0);
    assert_int_equal(f->res.action, CG_GITHUB_UPDATED);
    assert_int_equal(cg_httpd_check_run_count(f->srv), 2);
    cJSON *a = check_run(f, 0), *b = check_run(f, 1);
    assert_string_equal(field(a, "name", NULL), "canary-gate/h100");
    assert_string_equal(field(a, "external_id", NULL), "canary-gate-verdict:h100");
    assert_string_equal(field(a, "conclusion", NULL), "success");
    assert_string_equal(field(b, "name", NULL), "canary-gate");
    cJSON_Delete(a);
    cJSON_Delete(b);
}

static void test_checkrun__found_on_page_3(void **state)
{
    struct fixture *f = *state;
    cg_httpd_add_check_run(f->srv, SHA, "canary-gate", "job-1");
    cg_httpd_add_check_run(f->srv, SHA, "canary-gate", "job-2");
    long long ours = cg_httpd_add_check_run(f->srv, SHA, "canary-gate", "canary-gate-verdict");
    assert_int_equal(publish(f, NULL, CG_GITHUB_FAIL, REPORT("fail")), 0);
    assert_int_equal(f->res.action, CG_GITHUB_UPDATED);
    assert_int_equal(f->res.check_run_id, ours);
    assert_int_equal(cg_httpd_count(f->srv), 4);
    assert_non_null(strstr(cg_httpd_request(f->srv, 2)->target, "page=3"));
    assert_string_equal(cg_httpd_request(f->srv, 3)->method, "PATCH");
    assert_int_equal(cg_httpd_check_run_count(f->srv), 3);
}

static void test_checkrun__403_asks_for_checks_write(void **state)
{
    struct fixture *f = *state;
    cg_httpd_push(f->srv, 200, NULL, "{\"total_count\":0,\"check_runs\":[]}");
    cg_httpd_push(f->srv, 403, NULL, "{\"message\":\"Resource not accessible by integration\"}");
    assert_int_equal(publish(f, NULL, CG_GITHUB_FAIL, REPORT("fail")), CG_ENET);
    assert_string_equal(f->err.msg,
                        "cannot create the check run 'canary-gate' on 'o/r@0123456789ab': the "
                        "token cannot use check runs in 'o/r' (403 Resource not accessible by "
                        "integration): give the job 'permissions: checks: write' (a pull request "
                        "from a fork gets a read-only token: see \"Pull requests from forks\" in "
                        "docs/github.md)");
    assert_int_equal(cg_httpd_count(f->srv), 2); /* not retried */
    assert_int_equal(cg_httpd_check_run_count(f->srv), 0);
}

/* The create's answer was a 502 but the check run was made: looked up again and updated, never
 * made twice. */
static void test_checkrun__create_not_duplicated_when_a_5xx_hid_success(void **state)
{
    struct fixture *f = *state;
    long long made = cg_httpd_add_check_run(f->srv, SHA, "canary-gate", "canary-gate-verdict");
    cg_httpd_push(f->srv, 200, NULL, "{\"total_count\":0,\"check_runs\":[]}");
    cg_httpd_push(f->srv, 502, NULL, "{\"message\":\"Bad Gateway\"}");
    assert_int_equal(publish(f, NULL, CG_GITHUB_FAIL, REPORT("fail")), 0);
    assert_int_equal(f->res.check_run_id, made);
    assert_int_equal(cg_httpd_check_run_count(f->srv), 1);
    assert_int_equal(cg_httpd_count(f->srv), 4);
    assert_string_equal(cg_httpd_request(f->srv, 1)->method, "POST");
    assert_string_equal(cg_httpd_request(f->srv, 2)->method, "GET");
    assert_string_equal(cg_httpd_request(f->srv, 3)->method, "PATCH");
    cJSON *c = check_run(f, 0);
    assert_string_equal(field(c, "conclusion", NULL), "failure");
    cJSON_Delete(c);
}

static void test_checkrun__refuses_a_bad_sha_or_no_verdict(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(cg_github_check_run_publish(&f->gh, "nope", NULL, CG_GITHUB_PASS, NULL, "x",
                                                 1, NULL, &f->res, &f->err),
                     CG_EINPUT);
    assert_int_equal(publish(f, NULL, CG_GITHUB_VERDICT_NONE, REPORT("pass")), CG_EINPUT);
    assert_int_equal(cg_httpd_count(f->srv), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_checkrun__inconclusive_is_neutral_never_success),
        cmocka_unit_test(test_checkrun__scan_takes_only_our_check_run),
        cmocka_unit_test(test_checkrun__summary_is_cut_to_githubs_limit),
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
        T(test_checkrun__creates_one_named_as_the_status),
        T(test_checkrun__updated_in_place_on_a_rerun),
        T(test_checkrun__another_check_of_the_same_name_is_left_alone),
        T(test_checkrun__two_gate_ids_keep_two_check_runs),
        cmocka_unit_test_setup_teardown(test_checkrun__found_on_page_3, setup_pages_of_one,
                                        teardown),
        T(test_checkrun__403_asks_for_checks_write),
        T(test_checkrun__create_not_duplicated_when_a_5xx_hid_success),
        T(test_checkrun__refuses_a_bad_sha_or_no_verdict),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
