/*
 * fuzz_shard: the shard files the injection library writes from inside the canary, and the
 * merge of several into one run (a canary's processes write them; a crashed one leaves a .part).
 *
 * Input: one or more shards separated by a line "--- next shard ---". Properties: a shard parses
 * or fails with CG_EINPUT naming it; a parsed step has a non-negative wall time; the merge of
 * the parsed shards gives at most the asked number of steps, each with a positive wall time, and
 * summaries that agree with the steps, known or unknown (-1) counters and at most 16 warnings;
 * the status is "done" only with steps and a window of at least one step; GPU metrics missing
 * always come with a reason; saved as an artifact, the merged run loads again; the
 * Chrome trace rendered from the shards' trace lines is valid JSON (every name escaped); once the
 * shards are redacted (cg_shard_redact, HF_TOKEN set) no op, place, trace or warning text holds
 * the secret, whatever the canary named its ranges. The
 * same bytes read as the launcher's failure file (CANARY_GATE_FAIL_FILE, written by the library
 * when a shard cannot be written) give a record or none: an operation of lowercase letters, an
 * errno the tool can name, a path of bytes before the first NUL.
 */
#include "fuzz.h"

#include "shard.h"
#include "trace.h"

#include <cjson/cJSON.h>

#include <math.h>

#define SEP "\n--- next shard ---\n"
#define MAX_SHARDS 8

static void fail_file(const char *data, size_t size)
{
    struct cg_shard_fail f;
    int rc = cg_shard_fail_parse(data, size, &f);
    CG_FUZZ_CHECK(rc >= -1 && rc <= 1, "rc %d", rc);
    size_t used = strnlen(data, size);
    if (rc != 1) {
        CG_FUZZ_CHECK(f.op[0] == '\0', "an operation without a record");
        CG_FUZZ_CHECK(rc == 0 || used > 0, "malformed, but nothing was written");
        return;
    }
    CG_FUZZ_CHECK(f.op[0] != '\0' && strnlen(f.op, sizeof(f.op)) < sizeof(f.op), "op");
    for (const char *c = f.op; *c; c++)
        CG_FUZZ_CHECK(*c >= 'a' && *c <= 'z', "op '%s'", f.op);
    CG_FUZZ_CHECK(f.errno_value >= 0 && f.errno_value <= 100000, "errno %d", f.errno_value);
    CG_FUZZ_CHECK(f.pid >= 0, "pid %lld", f.pid);
    size_t plen = strnlen(f.path, sizeof(f.path));
    CG_FUZZ_CHECK(plen > 0 && plen < sizeof(f.path) && plen < used, "path");
    CG_FUZZ_CHECK(memcmp(data + used - plen, f.path, plen) == 0, "a path that was not written");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fail_file((const char *)data, size);
    struct cg_shard shards[MAX_SHARDS];
    size_t n = 0;
    const char *p = (const char *)data, *end = p + size;
    while (p <= end && n < MAX_SHARDS) {
        const char *sep = NULL;
        for (const char *q = p; q + strlen(SEP) <= end; q++)
            if (memcmp(q, SEP, strlen(SEP)) == 0) {
                sep = q;
                break;
            }
        const char *stop = sep ? sep + 1 : end; /* the shard keeps its last newline */
        struct cg_err err;
        cg_err_init(&err);
        int rc = cg_shard_parse(p, (size_t)(stop - p), "fuzz.shard", &shards[n], &err);
        if (rc == 0) {
            const struct cg_shard *s = &shards[n];
            for (size_t i = 0; i < s->n_steps; i++)
                CG_FUZZ_CHECK(!s->steps[i].seen || s->steps[i].wall_ns >= 0, "step %zu", i);
            n++;
        } else {
            CG_FUZZ_CHECK(rc == CG_EINPUT && strstr(err.msg, "fuzz.shard") != NULL, "%s", err.msg);
        }
        if (sep == NULL)
            break;
        p = sep + strlen(SEP);
    }

    static struct cg_redact *redactor;
    if (redactor == NULL) {
        char *env[] = {"HF_TOKEN=hf_SECRETvalue123", NULL};
        CG_FUZZ_CHECK(cg_redact_new(env, &redactor, NULL) == 0, "out of memory");
    }
    struct cg_err rerr;
    cg_err_init(&rerr);
    CG_FUZZ_CHECK(cg_shard_redact(shards, n, redactor, &rerr) == 0, "%s", rerr.msg);
    for (size_t i = 0; i < n; i++) {
        const struct cg_shard *s = &shards[i];
        for (size_t k = 0; k < s->n_ops; k++)
            CG_FUZZ_CHECK(strstr(s->ops[k].name, "hf_SECRETvalue123") == NULL, "op %s",
                          s->ops[k].name);
        for (size_t k = 0; k < s->n_warnings; k++)
            CG_FUZZ_CHECK(strstr(s->warnings[k], "hf_SECRETvalue123") == NULL, "w %s",
                          s->warnings[k]);
        for (size_t k = 0; k < s->n_ranges; k++)
            CG_FUZZ_CHECK(strstr(s->ranges[k].name, "hf_SECRETvalue123") == NULL, "tr %s",
                          s->ranges[k].name);
    }

    char *trace = cg_trace_to_json(shards, n, NULL, 0);
    if (trace != NULL) {
        cJSON *root = cJSON_Parse(trace);
        CG_FUZZ_CHECK(root != NULL, "the trace is not JSON:\n%s", trace);
        cJSON_Delete(root);
        free(trace);
    }

    struct cg_shard_status st;
    cg_shard_status(shards, n, &st);
    CG_FUZZ_CHECK(st.n_shards == n && st.n_with_steps <= n && st.steps_seen >= 0, "status");
    CG_FUZZ_CHECK(st.all_done ? st.n_with_steps > 0 && st.done_steps >= 1 : st.done_steps == -1,
                  "done: %d, %lld", (int)st.all_done, (long long)st.done_steps);
    char reason[256];
    if (!cg_shard_gpu_available(shards, n, reason, sizeof(reason)))
        CG_FUZZ_CHECK(reason[0] != '\0', "no GPU metrics without a reason");

    struct cg_artifact a;
    struct cg_err err;
    cg_artifact_init(&a);
    cg_err_init(&err);
    struct cg_run *run = cg_artifact_add_run(&a);
    struct cg_shard_merge_opts o = {2, 50, -1};
    CG_FUZZ_CHECK(run != NULL, "out of memory");
    if (cg_shard_merge(shards, n, &o, run, &err) == 0) {
        CG_FUZZ_CHECK(run->n_steps <= 50, "%zu steps kept", run->n_steps);
        for (size_t i = 0; i < run->n_steps; i++)
            CG_FUZZ_CHECK(run->steps[i].wall_ns > 0, "merged step %zu: %lld ns", i,
                          (long long)run->steps[i].wall_ns);
        if (run->n_steps > 0)
            CG_FUZZ_CHECK(isfinite(run->summary.step_time_mean_ns) &&
                              run->summary.step_time_mean_ns > 0,
                          "mean %g", run->summary.step_time_mean_ns);
        for (size_t i = 0; i < run->n_ops; i++)
            CG_FUZZ_CHECK(run->ops[i].calls > 0 && run->ops[i].total_ns >= 0, "op %zu", i);
        CG_FUZZ_CHECK(run->outside_step_records >= -1 && run->inside_step_records >= -1 &&
                          run->late_memory_records >= -1 && run->cupti_overhead_ns >= -1,
                      "counters");
        CG_FUZZ_CHECK(run->n_warnings <= CG_SHARD_MAX_WARNINGS, "%zu warnings", run->n_warnings);
        for (size_t i = 0; i < run->n_places; i++) { /* places: known, placed, named */
            const struct cg_count_place *pl = &run->places[i];
            CG_FUZZ_CHECK(run->places_measured && cg_count_placed(pl->count) && pl->calls > 0 &&
                              pl->range[0] != '\0',
                          "place %zu", i);
        }
        struct cg_err world;
        cg_err_init(&world);
        /* the artifact the gate writes from it loads again (the gate merges only a world whose
         * ranks are each there once: cg_shard_check_world first) */
        if (run->n_steps > 0 && cg_shard_check_world(shards, n, "/x", false, &world) == 0) {
            struct cg_artifact b;
            a.settings.steps = 50;
            a.settings.runs = 1;
            char *json = cg_artifact_to_json(&a);
            CG_FUZZ_CHECK(json != NULL, "out of memory");
            int rc = cg_artifact_parse(json, strlen(json), "merged.json", &b, &err);
            CG_FUZZ_CHECK(rc == 0, "the merged run does not load again: %s", err.msg);
            cg_artifact_release(&b);
            free(json);
        }
    }
    cg_artifact_release(&a);
    for (size_t i = 0; i < n; i++)
        cg_shard_release(&shards[i]);
    return 0;
}
