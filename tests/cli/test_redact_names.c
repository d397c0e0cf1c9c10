/*
 * test_redact_names: what the canary names (NVTX ranges, kernels, the library's warnings) goes
 * through the redaction the command line does (src/core/redact.c, applied where a run's shards
 * are read: cg_shard_redact), checked end to end in every output of the main command: the
 * artifact, the trace, the report, the job summary, the JSON verdict, the PR comment posted to
 * the GitHub emulation (tests/support/httpd.c) and the terminal.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "httpd.h"
#include "proc.h"
#include "workdir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CANARY CG_BINARY_DIR "/tests/canaries/nvtx-canary"
#define TOKEN "ghs_gateTestToken0123456789"
#define SHA "0123456789abcdef0123456789abcdef01234567"

static struct cg_proc proc;

static int gate(const struct cg_workdir *f, const char *const *env, const char *const *args)
{
    return cg_workdir_run(f, CG_TOOL_PATH, env, args, &proc);
}

/* A baseline of the test canary: 5 runs of 6 steps of 2 ms after 1 warm-up. */
static void record_baseline(const struct cg_workdir *f)
{
    const char *args[] = {"run", "--out", "main.json", "--runs", "5", "--steps", "6",
                          "--warmup", "1", "--", CANARY, "--steps", "7", "--step-ms", "2", NULL};
    assert_int_equal(gate(f, NULL, args), 0);
}

/* A pull request of the GitHub emulation, the environment that posts to it, and extra. */
struct gh_scene {
    struct cg_httpd *srv;
    char url[128], event[600], summary[600];
    const char *env[8];
};

static void gh_scene_open(const struct cg_workdir *f, struct gh_scene *g, const char *extra)
{
    g->srv = cg_httpd_start();
    assert_non_null(g->srv);
    cg_httpd_github(g->srv, "o/r", 7, TOKEN, 100);
    FILE *fp = fopen(cg_workdir_in(f, "event.json"), "w");
    assert_non_null(fp);
    fprintf(fp, "{\"pull_request\": {\"number\": 7, \"head\": {\"sha\": \"%s\"}}}", SHA);
    fclose(fp);
    snprintf(g->url, sizeof(g->url), "GITHUB_API_URL=%s", cg_httpd_url(g->srv));
    snprintf(g->event, sizeof(g->event), "GITHUB_EVENT_PATH=%s", cg_workdir_in(f, "event.json"));
    snprintf(g->summary, sizeof(g->summary), "GITHUB_STEP_SUMMARY=%s",
             cg_workdir_in(f, "summary.md"));
    const char *env[] = {"GITHUB_TOKEN=" TOKEN, "GITHUB_REPOSITORY=o/r", g->url, g->event,
                         g->summary, extra, NULL};
    memcpy(g->env, env, sizeof(env));
}

/* Issue 37, item 12: what the canary names (NVTX ranges) goes through the same redaction as the
 * command line: a secret of the environment, URL userinfo, a token shape (GH_PAT is no
 * secret-looking name) and a --redact match are in no artifact, trace, report, verdict, comment
 * or terminal. */
static void test_redact_names__secrets_in_range_names_are_redacted_everywhere(void **state)
{
    struct cg_workdir *f = *state;
    struct gh_scene g;
    gh_scene_open(f, &g, "HF_TOKEN=hf_SECRETvalue123");
    record_baseline(f);
    const char *args[] = {"--baseline", "main.json", "--runs", "3", "--comment", "--status",
                          "--report", "r.md", "--json", "v.json", "--trace", "t.json",
                          "--trace-steps", "0:1", "--redact", "internal-[a-z]+", "--", CANARY,
                          "--steps", "7", "--step-ms", "2", "--range-name",
                          "load hf_SECRETvalue123", "--range-name",
                          "fetch https://user:pw12345678@host/shard", "--range-name",
                          "push ghp_0123456789abcdefABCDEF0123456789", "--range-name",
                          "internal-projectx", NULL};
    int code = gate(f, g.env, args);
    if (code != 0 && code != 1)
        fail_msg("exit %d: %s", code, proc.err);
    const char *secrets[] = {"SECRETvalue123", "pw12345678", "0123456789abcdefABCDEF",
                             "projectx", NULL};
    char *body = cg_httpd_comment(g.srv, 0, NULL);
    assert_non_null(body);
    const char *where[] = {"canary-run.json", "t.json", "r.md", "summary.md", "v.json"};
    for (size_t i = 0; secrets[i] != NULL; i++) {
        for (size_t k = 0; k < sizeof(where) / sizeof(where[0]); k++)
            if (strstr(cg_workdir_read(f, where[k]), secrets[i]) != NULL)
                fail_msg("'%s' holds '%s'", where[k], secrets[i]);
        if (strstr(body, secrets[i]) != NULL || strstr(proc.out, secrets[i]) != NULL ||
            strstr(proc.err, secrets[i]) != NULL)
            fail_msg("the comment or the terminal holds '%s'", secrets[i]);
    }
    const char *run = cg_workdir_read(f, "canary-run.json");
    const char *shown[] = {"\"load ***\"", "\"fetch https://***@host/shard\"", "\"push ***\"",
                           "\"***\""};
    for (size_t i = 0; i < sizeof(shown) / sizeof(shown[0]); i++)
        if (strstr(run, shown[i]) == NULL)
            fail_msg("the artifact has no op %s", shown[i]);
    assert_non_null(strstr(cg_workdir_read(f, "t.json"), "load ***"));
    free(body);
    cg_httpd_stop(g.srv);
}

#define IN_WORKDIR(fn) cmocka_unit_test_setup_teardown(fn, cg_workdir_setup, cg_workdir_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        IN_WORKDIR(test_redact_names__secrets_in_range_names_are_redacted_everywhere),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
