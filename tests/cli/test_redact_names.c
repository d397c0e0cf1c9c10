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

#include <cjson/cJSON.h>
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

/* Four ranks on two hosts (ranks 2 and 3 on cg-node-b, 0 and 1 on cg-node-a), each host its own
 * UTS namespace with its own host name (unshare). */
static const char two_hosts[] =
    "#!/bin/sh\n"
    "host() { unshare -r --fork --uts sh -c 'hostname \"$0\"; "
    "RANK=$1 WORLD_SIZE=4 \"$3\" --steps 7 --step-ms 2 & "
    "RANK=$2 WORLD_SIZE=4 \"$3\" --steps 7 --step-ms 2; wait' \"$@\" " CANARY "; }\n"
    "host cg-node-b 2 3 &\n"
    "host cg-node-a 0 1\n"
    "wait\n";

/* The nodes of every run of an artifact: two, "*** #1" holding ranks 0 and 1, "*** #2" ranks
 * 2 and 3, each with its own figures. */
static void assert_two_hidden_nodes(const char *json, const char *name)
{
    cJSON *root = cJSON_Parse(json);
    assert_non_null(root);
    const cJSON *run;
    cJSON_ArrayForEach(run, cJSON_GetObjectItemCaseSensitive(root, "runs"))
    {
        const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(run, "nodes");
        if (cJSON_GetArraySize(nodes) != 2)
            fail_msg("%s: a run of %d nodes: %s", name, cJSON_GetArraySize(nodes),
                     cJSON_PrintUnformatted(nodes));
        const cJSON *r;
        cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(run, "ranks"))
        {
            int rank = cJSON_GetObjectItemCaseSensitive(r, "rank")->valueint;
            const char *node = cJSON_GetObjectItemCaseSensitive(r, "node")->valuestring;
            assert_string_equal(node, rank < 2 ? "*** #1" : "*** #2");
        }
        const cJSON *n;
        cJSON_ArrayForEach(n, nodes)
        {
            assert_int_equal(cJSON_GetObjectItemCaseSensitive(n, "ranks")->valueint, 2);
        }
    }
    cJSON_Delete(root);
}

/* --redact matching the host names merged two nodes into one "***" node in the artifact (one
 * node of four ranks, its figures merged), while the trace told them apart: the hidden hosts
 * stay two nodes, "*** #1" and "*** #2" (by their lowest rank), the same in the artifact and
 * the trace, the sides' node shapes (each redacted on its own) alike, no hidden name anywhere. */
static void test_redact_names__hidden_host_names_stay_distinct_nodes(void **state)
{
    struct cg_workdir *f = *state;
    if (system("unshare -r --fork --uts true >/dev/null 2>&1") != 0)
        skip();
    FILE *fp = fopen(cg_workdir_in(f, "two-hosts.sh"), "w");
    assert_non_null(fp);
    fputs(two_hosts, fp);
    fclose(fp);
    const char *base[] = {
        "run", "--out",    "main.json",    "--runs", "3",       "--steps",      "6", "--warmup",
        "1",   "--redact", "cg-node-[ab]", "--",     "/bin/sh", "two-hosts.sh", NULL};
    if (gate(f, NULL, base) != 0)
        fail_msg("%s", proc.err);
    const char *args[] = {
        "--baseline", "main.json", "--runs",        "3",    "--steps",  "6",
        "--warmup",   "1",         "--report",      "r.md", "--json",   "v.json",
        "--trace",    "t.json",    "--trace-steps", "0:1",  "--redact", "cg-node-[ab]",
        "--",         "/bin/sh",   "two-hosts.sh",  NULL};
    int code = gate(f, NULL, args);
    if (code != 0 && code != 1)
        fail_msg("exit %d: %s", code, proc.err);
    const char *where[] = {"main.json", "canary-run.json", "t.json", "r.md", "v.json"};
    for (size_t k = 0; k < sizeof(where) / sizeof(where[0]); k++)
        if (strstr(cg_workdir_read(f, where[k]), "cg-node-") != NULL)
            fail_msg("'%s' holds a hidden host name", where[k]);
    if (strstr(proc.out, "cg-node-") != NULL || strstr(proc.err, "cg-node-") != NULL)
        fail_msg("the terminal holds a hidden host name");
    assert_two_hidden_nodes(cg_workdir_read(f, "main.json"), "main.json");
    assert_two_hidden_nodes(cg_workdir_read(f, "canary-run.json"), "canary-run.json");
    cJSON *v = cJSON_Parse(cg_workdir_read(f, "v.json"));
    assert_non_null(v);
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(v, "node_shape");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(shape, "baseline")->valuestring,
                        "2 nodes of 2 ranks");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(shape, "current")->valuestring,
                        "2 nodes of 2 ranks");
    cJSON_Delete(v);
    cJSON *t = cJSON_Parse(cg_workdir_read(f, "t.json"));
    assert_non_null(t);
    const cJSON *other = cJSON_GetObjectItemCaseSensitive(t, "otherData");
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(other, "host_clocks")->valueint, 2);
    const cJSON *shifts = cJSON_GetObjectItemCaseSensitive(other, "host_shift_us");
    assert_non_null(cJSON_GetObjectItemCaseSensitive(shifts, "*** #1"));
    assert_non_null(cJSON_GetObjectItemCaseSensitive(shifts, "*** #2"));
    cJSON_Delete(t);
}

/* Two ranks, each on a host of its own whose Slurm node name is shorter than its host name
 * (NodeName cg-node-a, host name cg-node-a.cluster), as on many clusters. */
static const char fqdn_hosts[] =
    "#!/bin/sh\n"
    "host() { SLURMD_NODENAME=$1 RANK=$2 WORLD_SIZE=2 unshare -r --fork --uts sh -c "
    "'hostname \"$0.cluster\"; exec \"$1\" --steps 8 --step-ms 2' \"$1\" " CANARY "; }\n"
    "host cg-node-b 1 &\n"
    "host cg-node-a 0\n"
    "wait\n";

/* --redact hiding both names numbered each name it hid: the artifact's nodes were "*** #1" and
 * "*** #3" and the trace's hosts "***.cluster #2" and "***.cluster #4". A node is one number
 * in the artifact and the trace: "*** #1" and "***.cluster #1", "*** #2" and "***.cluster #2". */
static void test_redact_names__a_hidden_host_has_its_nodes_number_in_the_trace(void **state)
{
    struct cg_workdir *f = *state;
    if (system("unshare -r --fork --uts true >/dev/null 2>&1") != 0)
        skip();
    FILE *fp = fopen(cg_workdir_in(f, "fqdn-hosts.sh"), "w");
    assert_non_null(fp);
    fputs(fqdn_hosts, fp);
    fclose(fp);
    const char *args[] = {"run",           "--out",    "a.json",       "--runs", "1",
                          "--steps",       "3",        "--warmup",     "1",      "--trace",
                          "t.json",        "--redact", "cg-node-[ab]", "--",     "/bin/sh",
                          "fqdn-hosts.sh", NULL};
    if (gate(f, NULL, args) != 0)
        fail_msg("%s", proc.err);
    const char *where[] = {"a.json", "t.json"};
    for (size_t k = 0; k < sizeof(where) / sizeof(where[0]); k++)
        if (strstr(cg_workdir_read(f, where[k]), "cg-node-") != NULL)
            fail_msg("'%s' holds a hidden host name", where[k]);
    cJSON *root = cJSON_Parse(cg_workdir_read(f, "a.json"));
    assert_non_null(root);
    const cJSON *run = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "runs"), 0);
    const cJSON *r;
    int seen = 0;
    cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(run, "ranks"))
    {
        int rank = cJSON_GetObjectItemCaseSensitive(r, "rank")->valueint;
        const char *node = cJSON_GetObjectItemCaseSensitive(r, "node")->valuestring;
        if (strcmp(node, rank == 0 ? "*** #1" : "*** #2") != 0)
            fail_msg("rank %d on node '%s'", rank, node);
        seen++;
    }
    assert_int_equal(seen, 2);
    cJSON_Delete(root);
    cJSON *t = cJSON_Parse(cg_workdir_read(f, "t.json"));
    assert_non_null(t);
    const cJSON *other = cJSON_GetObjectItemCaseSensitive(t, "otherData");
    const cJSON *shifts = cJSON_GetObjectItemCaseSensitive(other, "host_shift_us");
    if (cJSON_GetArraySize(shifts) != 2 ||
        cJSON_GetObjectItemCaseSensitive(shifts, "***.cluster #1") == NULL ||
        cJSON_GetObjectItemCaseSensitive(shifts, "***.cluster #2") == NULL)
        fail_msg("the trace's hosts: %s", cJSON_PrintUnformatted(other));
    cJSON_Delete(t);
}

#define IN_WORKDIR(fn) cmocka_unit_test_setup_teardown(fn, cg_workdir_setup, cg_workdir_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        IN_WORKDIR(test_redact_names__secrets_in_range_names_are_redacted_everywhere),
        IN_WORKDIR(test_redact_names__hidden_host_names_stay_distinct_nodes),
        IN_WORKDIR(test_redact_names__a_hidden_host_has_its_nodes_number_in_the_trace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
