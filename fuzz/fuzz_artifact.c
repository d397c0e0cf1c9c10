/*
 * fuzz_artifact: run artifacts and baselines, the files the gate downloads from earlier runs.
 *
 * Input: artifact JSON. Properties: parsing either succeeds or fails with CG_EINPUT and a message,
 * leaving the artifact empty; a parsed artifact saved as JSON parses again to the same runs,
 * steps and ops; comparing it with itself and with a copy twice as slow (one call more of every
 * count a step) computes a verdict and renders the terminal table (no escape byte without
 * colour), the markdown report (rendered whatever the strings, never "out of memory", within
 * CG_REPORT_MAX_BYTES) and the JSON verdict (valid JSON). The saved artifact and the JSON verdict
 * are valid UTF-8 whatever bytes the input's strings held.
 */
#include "fuzz.h"

#include "artifact.h"
#include "buf.h"
#include "report.h"
#include "thresholds.h"
#include "utf8.h"
#include "verdict.h"

#include <cjson/cJSON.h>
#include <math.h>

static struct cg_thresholds g_thresholds;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    struct cg_err err;
    (void)argc;
    (void)argv;
    cg_err_init(&err);
    if (cg_thresholds_load("default", &g_thresholds, &err) != 0) {
        fprintf(stderr, "fuzz_artifact: %s\n", err.msg);
        abort();
    }
    g_thresholds.bootstrap_resamples = 100; /* the fewest a file may ask for: fast executions */
    return 0;
}

static void check_same(const struct cg_artifact *a, const struct cg_artifact *b)
{
    CG_FUZZ_CHECK(a->n_runs == b->n_runs, "%zu runs became %zu", a->n_runs, b->n_runs);
    for (size_t i = 0; i < a->n_runs; i++) {
        const struct cg_run *x = &a->runs[i], *y = &b->runs[i];
        CG_FUZZ_CHECK(x->n_steps == y->n_steps, "run %zu: steps", i);
        CG_FUZZ_CHECK(x->n_ops == y->n_ops, "run %zu: ops", i);
        for (size_t k = 0; k < x->n_steps; k++) {
            CG_FUZZ_CHECK(x->steps[k].wall_ns == y->steps[k].wall_ns, "run %zu step %zu", i, k);
            CG_FUZZ_CHECK(x->steps[k].tokens == y->steps[k].tokens, "run %zu step %zu", i, k);
        }
        for (size_t k = 0; k < x->n_ops; k++) {
            CG_FUZZ_CHECK(strcmp(x->ops[k].name, y->ops[k].name) == 0, "run %zu op %zu", i, k);
            CG_FUZZ_CHECK(x->ops[k].total_ns == y->ops[k].total_ns, "run %zu op %zu", i, k);
        }
        CG_FUZZ_CHECK(x->summary.peak_device_bytes == y->summary.peak_device_bytes, "peak");
    }
}

/* A copy of a whose steps take twice as long and make one call more of every known count, at
 * twice the calls in each place (regressions to report, the counts' places among them). */
static int slower_copy(const struct cg_artifact *a, struct cg_artifact *out)
{
    cg_artifact_init(out);
    if (cg_artifact_copy_header(out, a) != 0 || cg_artifact_append_runs(out, a) != 0)
        return -1;
    for (size_t i = 0; i < out->n_runs; i++) {
        struct cg_run *r = &out->runs[i];
        for (size_t k = 0; k < r->n_steps; k++)
            if (r->steps[k].wall_ns < ((int64_t)1 << 52))
                r->steps[k].wall_ns *= 2;
        for (size_t k = 0; k < r->n_ops; k++)
            if (r->ops[k].total_ns < ((int64_t)1 << 52))
                r->ops[k].total_ns *= 2;
        for (size_t k = 0; k < r->n_steps; k++)
            for (int c = 0; c < CG_COUNT_N; c++)
                if (r->steps[k].counts[c] >= 0 && r->steps[k].counts[c] < ((int64_t)1 << 52))
                    r->steps[k].counts[c] += 1;
        for (size_t k = 0; k < r->n_places; k++)
            if (r->places[k].calls < ((int64_t)1 << 52))
                r->places[k].calls *= 2;
        cg_run_summarize(r);
    }
    return 0;
}

static void render(const struct cg_artifact *base, const struct cg_artifact *cur)
{
    struct cg_verdict v;
    struct cg_err err;
    struct cg_buf text, md;
    cg_err_init(&err);
    if (cg_verdict_compute(base, cur, &g_thresholds, &v, &err) != 0) {
        CG_FUZZ_CHECK(err.code == CG_ENOMEM, "verdict failed: %s", err.msg);
        return;
    }
    cg_buf_init(&text, 1 << 20);
    cg_buf_init(&md, CG_REPORT_MAX_BYTES); /* as the commands give it */
    if (cg_report_terminal(&v, false, &text, &err) == 0)
        CG_FUZZ_CHECK(memchr(cg_buf_str(&text), 0x1b, text.len) == NULL,
                      "an escape byte in the terminal report without colour");
    cg_buf_reset(&text);
    (void)cg_report_terminal(&v, true, &text, &err);
    /* whatever the artifact's strings, the report is cut to fit, never failed */
    CG_FUZZ_CHECK(cg_report_markdown(&v, "fuzz", &md, &err) == 0, "the markdown report failed: %s",
                  err.msg);
    CG_FUZZ_CHECK(md.len <= CG_REPORT_MAX_BYTES, "markdown report of %zu bytes", md.len);
    char *json = cg_report_json(&v);
    if (json != NULL) {
        cJSON *root = cJSON_Parse(json);
        CG_FUZZ_CHECK(root != NULL, "the JSON verdict is not JSON");
        CG_FUZZ_CHECK(cg_utf8_valid(json, strlen(json)), "the JSON verdict is not UTF-8");
        cJSON_Delete(root);
    }
    free(json);
    cg_buf_release(&text);
    cg_buf_release(&md);
    cg_verdict_release(&v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cg_artifact a, b, slow;
    struct cg_err err;
    cg_err_init(&err);
    int rc = cg_artifact_parse((const char *)data, size, "fuzz.json", &a, &err);
    if (rc != 0) {
        CG_FUZZ_CHECK(rc == CG_EINPUT || rc == CG_ENOMEM, "code %d", rc);
        CG_FUZZ_CHECK(err.msg[0] != '\0' && strstr(err.msg, "fuzz.json") != NULL,
                      "message '%s' does not name the file", err.msg);
        CG_FUZZ_CHECK(a.n_runs == 0 && a.runs == NULL, "a failed parse left runs behind");
        return 0;
    }
    CG_FUZZ_CHECK(a.n_runs > 0, "an artifact without runs was accepted");
    char *json = cg_artifact_to_json(&a);
    CG_FUZZ_CHECK(json != NULL, "cannot render a parsed artifact");
    CG_FUZZ_CHECK(cg_utf8_valid(json, strlen(json)), "a saved artifact is not UTF-8");
    rc = cg_artifact_parse(json, strlen(json), "saved.json", &b, &err);
    CG_FUZZ_CHECK(rc == 0, "a saved artifact does not parse again: %s", err.msg);
    check_same(&a, &b);
    free(json);
    cg_artifact_release(&b);

    render(&a, &a);
    if (slower_copy(&a, &slow) == 0) {
        render(&a, &slow);
        render(&slow, &a);
    }
    cg_artifact_release(&slow);
    cg_artifact_release(&a);
    return 0;
}
