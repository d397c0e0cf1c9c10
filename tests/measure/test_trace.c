/*
 * test_trace: Chrome trace files (src/measure/trace.c) from shards with trace lines, checked by
 * parsing the JSON: (a) an annotated CPU canary (tests/canaries/nvtx-canary) run with the real
 * injection library and CANARY_GATE_TRACE_STEPS, with and without reaching the event cap;
 * (b) synthetic CUPTI records through the library's aggregation (aggregate.h, from its core,
 * canary-inject-core) and its trace line format; (c) the processes of several hosts, each on its
 * own clock, aligned on their first traced step (shard text, and two canaries one of which runs
 * as another host whose monotonic clock is a day ahead: unshare --time --uts).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "opname.h"
#include "redact.h"
#include "shard.h"
#include "trace.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CANARY CG_BINARY_DIR "/tests/canaries/nvtx-canary"
#define INJECT_LIB CG_BINARY_DIR "/libcanary-inject.so"
#define TID_STEPS 1000000000.0

/* Runs the canary with the library, a new shard directory and extra environment (NULL-ended
 * "NAME=value"), loads its shards and removes the directory. Returns the canary's exit status. */
static int run_traced(const char *const *argv, const char *const *env, struct cg_shard **shards,
                      size_t *n)
{
    char dir[] = "/tmp/cg-trace-XXXXXX";
    assert_non_null(mkdtemp(dir));
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("NVTX_INJECTION64_PATH", INJECT_LIB, 1);
        setenv("CANARY_GATE_SHARD_DIR", dir, 1);
        for (size_t i = 0; env[i] != NULL; i++)
            putenv((char *)env[i]);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) {
            dup2(devnull, 1);
            dup2(devnull, 2);
        }
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    struct cg_err err;
    cg_err_init(&err);
    if (cg_shard_load_dir(dir, shards, n, &err) != 0)
        fail_msg("%s", err.msg);
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        char path[512];
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        unlink(path);
    }
    if (d != NULL)
        closedir(d);
    rmdir(dir);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Writes the trace of the shards (and GPU readings) to a file, reads it back and parses it. */
static cJSON *trace_json_with(const struct cg_shard *shards, size_t n,
                              const struct cg_trace_sample *gpu, size_t n_gpu, char **text);

static cJSON *trace_json(const struct cg_shard *shards, size_t n, char **text)
{
    return trace_json_with(shards, n, NULL, 0, text);
}

static cJSON *trace_json_with(const struct cg_shard *shards, size_t n,
                              const struct cg_trace_sample *gpu, size_t n_gpu, char **text)
{
    struct cg_err err;
    char path[] = "/tmp/cg-trace-json-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    cg_err_init(&err);
    if (cg_trace_write(shards, n, gpu, n_gpu, path, &err) != 0)
        fail_msg("%s", err.msg);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    *text = malloc((size_t)len + 1);
    assert_int_equal(fread(*text, 1, (size_t)len, f), (size_t)len);
    (*text)[len] = '\0';
    fclose(f);
    unlink(path);
    cJSON *root = cJSON_Parse(*text);
    if (root == NULL)
        fail_msg("not JSON: %.200s", *text);
    assert_true(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(root, "traceEvents")));
    return root;
}

static const char *str_of(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static double num_of(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* Counts events of phase ph whose name (and category, when cat is not NULL) match. */
static int count(const cJSON *root, const char *ph, const char *name, const char *cat)
{
    int n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(root, "traceEvents"))
    {
        if (strcmp(str_of(e, "ph"), ph) == 0 && (name == NULL || strcmp(str_of(e, "name"), name) == 0) &&
            (cat == NULL || strcmp(str_of(e, "cat"), cat) == 0))
            n++;
    }
    return n;
}

/* The n-th event (from 0) of phase ph named name, or NULL. */
static const cJSON *find(const cJSON *root, const char *ph, const char *name, int nth)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(root, "traceEvents"))
    {
        if (strcmp(str_of(e, "ph"), ph) == 0 && strcmp(str_of(e, "name"), name) == 0 && nth-- == 0)
            return e;
    }
    return NULL;
}

/* The track id named track_name by a thread_name metadata event, or -1. */
static double track(const cJSON *root, const char *track_name)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(root, "traceEvents"))
    {
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
        if (strcmp(str_of(e, "name"), "thread_name") == 0 &&
            strcmp(str_of(args, "name"), track_name) == 0)
            return num_of(e, "tid");
    }
    return -1;
}

static void test_trace__cpu_canary_steps_ranges_threads_and_loss(void **state)
{
    (void)state;
    const char *argv[] = {CANARY, "--steps", "5", "--step-ms", "2", "--nested", "--threads", "2",
                          "--loss", "--other-domain", NULL};
    const char *env[] = {"CANARY_GATE_WARMUP=1", "CANARY_GATE_TRACE_STEPS=1:2", NULL};
    struct cg_shard *sh = NULL;
    size_t n = 0;
    char *text = NULL;
    assert_int_equal(run_traced(argv, env, &sh, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(sh[0].trace_first, 2); /* measured steps 1..2 after one warm-up step */
    assert_int_equal(sh[0].trace_last, 3);
    assert_int_equal(sh[0].trace_dropped, 0);
    cJSON *root = trace_json(sh, n, &text);

    /* the steps track: measured steps 1 and 2 only, with their loss */
    assert_int_equal(count(root, "X", NULL, "step"), 2);
    const cJSON *s1 = find(root, "X", "step 1", 0), *s2 = find(root, "X", "step 2", 0);
    assert_non_null(s1);
    assert_non_null(s2);
    assert_true(num_of(s1, "tid") == TID_STEPS);
    assert_true(num_of(s1, "dur") >= 1500.0); /* about 2 ms, in microseconds */
    assert_true(num_of(s2, "ts") >= num_of(s1, "ts") + num_of(s1, "dur"));
    assert_float_equal(num_of(cJSON_GetObjectItemCaseSensitive(s1, "args"), "loss"), 8.0 / 3.0,
                       1e-6);
    assert_int_equal(count(root, "C", "loss", NULL), 2);
    assert_int_equal(track(root, "steps"), TID_STEPS);

    /* NVTX ranges per thread: the main thread's step, forward and backward of both steps */
    char main_name[64];
    snprintf(main_name, sizeof(main_name), "main thread %lld", (long long)sh[0].pid);
    assert_true(track(root, main_name) == (double)sh[0].pid);
    const cJSON *fw = find(root, "X", "forward", 0);
    assert_non_null(fw);
    assert_int_equal(count(root, "X", "forward", "nvtx"), 2);
    assert_int_equal(count(root, "X", "backward", "nvtx"), 2);
    assert_int_equal(count(root, "X", "step", "nvtx"), 2);
    assert_true(num_of(fw, "tid") == (double)sh[0].pid); /* the main thread's id is the pid */
    assert_true(num_of(fw, "ts") >= num_of(s1, "ts"));
    assert_true(num_of(fw, "ts") + num_of(fw, "dur") <= num_of(s1, "ts") + num_of(s1, "dur"));
    /* worker threads: one range each, two threads a step, on their own tracks */
    assert_int_equal(count(root, "X", "worker", "nvtx"), 4);
    double w0 = num_of(find(root, "X", "worker", 0), "tid");
    double w1 = num_of(find(root, "X", "worker", 1), "tid");
    assert_true(w0 != (double)sh[0].pid && w1 != (double)sh[0].pid && w0 != w1);
    /* the NCCL domain's "step" that begins between the traced steps is a range, not a step */
    assert_int_equal(count(root, "X", "step", "NCCL"), 1);
    assert_int_equal(count(root, "i", NULL, NULL), 0); /* no cap note */
    assert_int_equal(num_of(cJSON_GetObjectItemCaseSensitive(root, "otherData"),
                            "events_dropped"), 0);
    cJSON_Delete(root);
    free(text);
    cg_shard_free_all(sh, n);
}

/* The GPU's own state (NVML readings, on the library's clock) as counters of a process of its
 * own, the readings inside the traced events' span only; a figure NVML did not give is left out. */
static void test_trace__gpu_state_counters(void **state)
{
    (void)state;
    const char *argv[] = {CANARY, "--steps", "5", "--step-ms", "2", NULL};
    const char *env[] = {"CANARY_GATE_WARMUP=1", "CANARY_GATE_TRACE_STEPS=1:2", NULL};
    struct cg_shard *sh = NULL;
    size_t n = 0;
    char *text = NULL;
    assert_int_equal(run_traced(argv, env, &sh, &n), 0);
    assert_true(sh[0].trace_first >= 0 && (size_t)sh[0].trace_first < sh[0].n_steps);
    const struct cg_shard_step *first = &sh[0].steps[sh[0].trace_first];
    int64_t t = first->end_ns - first->wall_ns; /* the first traced step's start */
    struct cg_trace_sample g[] = {
        {0, t - 1000000000, 1500, 100, 40},     /* a second before: out */
        {0, t + 1000, 1980, 350.5, 61},         /* in */
        {0, t + 2000, 1755, NAN, 62},           /* in, no power */
        {1, t + 3000, 1410, 200, 50},           /* in, another GPU */
        {0, t + 10000000000LL, 1980, 300, 60},  /* ten seconds after: out */
    };
    cJSON *root = trace_json_with(sh, n, g, sizeof(g) / sizeof(g[0]), &text);
    assert_int_equal(count(root, "C", "GPU 0 SM clock", NULL), 2);
    assert_int_equal(count(root, "C", "GPU 0 power", NULL), 1);
    assert_int_equal(count(root, "C", "GPU 0 temperature", NULL), 2);
    assert_int_equal(count(root, "C", "GPU 1 SM clock", NULL), 1);
    const cJSON *c = find(root, "C", "GPU 0 SM clock", 0);
    assert_float_equal(num_of(cJSON_GetObjectItemCaseSensitive(c, "args"), "MHz"), 1980, 0);
    assert_true(num_of(c, "pid") == 0);
    assert_float_equal(num_of(cJSON_GetObjectItemCaseSensitive(find(root, "C", "GPU 0 power", 0),
                                                                "args"),
                              "W"),
                       350.5, 1e-9);
    assert_non_null(strstr(text, "\"GPU state (NVML)\""));
    cJSON_Delete(root);
    free(text);
    cg_shard_free_all(sh, n);
}

static void test_trace__event_cap_is_reported(void **state)
{
    (void)state;
    const char *argv[] = {CANARY, "--steps", "4", "--step-ms", "1", "--nested", NULL};
    const char *env[] = {"CANARY_GATE_WARMUP=0", "CANARY_GATE_TRACE_STEPS=0:3",
                         "CANARY_GATE_TRACE_MAX_EVENTS=5", NULL};
    struct cg_shard *sh = NULL;
    size_t n = 0;
    char *text = NULL;
    assert_int_equal(run_traced(argv, env, &sh, &n), 0);
    /* 4 steps x (step, forward, backward) = 12 ranges: 5 kept, 7 dropped */
    assert_int_equal(sh[0].n_ranges, 5);
    assert_int_equal(sh[0].trace_events, 5);
    assert_int_equal(sh[0].trace_dropped, 7);
    cJSON *root = trace_json(sh, n, &text);
    assert_int_equal(count(root, "X", NULL, "nvtx"), 5);
    assert_int_equal(count(root, "X", NULL, "step"), 4); /* step boundaries are not capped */
    assert_int_equal(count(root, "i", NULL, NULL), 1);
    assert_int_equal(count(root, "i", "trace cap reached: 7 events dropped (raise "
                                      "CANARY_GATE_TRACE_MAX_EVENTS)", "trace"), 1);
    assert_int_equal(num_of(cJSON_GetObjectItemCaseSensitive(root, "otherData"),
                            "events_dropped"), 7);
    cJSON_Delete(root);
    free(text);
    cg_shard_free_all(sh, n);
}

static void test_trace__no_trace_lines_give_a_valid_file_with_a_note(void **state)
{
    (void)state;
    struct cg_shard s;
    struct cg_err err;
    char *text = NULL;
    static const char plain[] = "canary-gate-shard 1\npid 5\ns 0 10 20 -1\nend\n";
    cg_err_init(&err);
    assert_int_equal(cg_shard_parse(plain, strlen(plain), "p", &s, &err), 0);
    cJSON *root = trace_json(&s, 1, &text);
    assert_int_equal(count(root, "i", "no trace: no process traced a step", NULL), 1);
    assert_int_equal(count(root, "X", NULL, NULL), 0);
    cJSON_Delete(root);
    free(text);
    cg_shard_release(&s);
    /* an unwritable path is an error naming it, never a crash */
    cg_err_init(&err);
    assert_int_equal(cg_trace_write(NULL, 0, NULL, 0, "/nonexistent-dir/t.json", &err), CG_EIO);
    assert_non_null(strstr(err.msg, "/nonexistent-dir/t.json"));
}

/* A traced shard of rank r on host, its steps 0..2 (traced) starting at t0 ns + 10 ms each. */
static void host_shard(struct cg_shard *s, int r, const char *host, long long t0)
{
    char text[1024];
    snprintf(text, sizeof(text),
             "canary-gate-shard 1\npid %d\nrank %d\nhost %s\nwarmup 0\ntw 0 2\n"
             "s 0 %lld %lld -1\ns 1 %lld %lld -1\ns 2 %lld %lld -1\n"
             "tr %d %lld %lld 0 forward\n",
             100 + r, r, host, t0, t0 + 10000000, t0 + 10000000, t0 + 20000000, t0 + 20000000,
             t0 + 30000000, 100 + r, t0 + 1000, t0 + 5000000);
    struct cg_err err;
    cg_err_init(&err);
    if (cg_shard_parse(text, strlen(text), "t", s, &err) != 0)
        fail_msg("%s", err.msg);
}

/* The ts of event ph/name of process pid, NAN when none. */
static double ts_of(const cJSON *root, const char *ph, const char *name, double pid)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(root, "traceEvents"))
    {
        if (strcmp(str_of(e, "ph"), ph) == 0 && strcmp(str_of(e, "name"), name) == 0 &&
            num_of(e, "pid") == pid)
            return num_of(e, "ts");
    }
    return NAN;
}

/* Hosts' monotonic clocks count from their own boot: a rank of a node booted a day earlier was
 * drawn a day later. Each host's events are shifted so that its first traced step starts with
 * the reference host's (the lowest rank's here); the processes of one host keep their own
 * clock's offsets (rank 2, 3 ms behind rank 0 on host a, stays 3 ms behind); otherData says so. */
static void test_trace__hosts_clocks_are_aligned_on_the_first_traced_step(void **state)
{
    (void)state;
    struct cg_shard sh[3];
    long long day = 86400LL * 1000000000LL;
    host_shard(&sh[0], 1, "node-b", 5000000000LL + day); /* listed first */
    host_shard(&sh[1], 0, "node-a", 5000000000LL);
    host_shard(&sh[2], 2, "node-a", 5003000000LL);
    char *text = NULL;
    cJSON *root = trace_json(sh, 3, &text);
    assert_float_equal(ts_of(root, "X", "step 0", 100), 0.0, 1e-9);
    assert_float_equal(ts_of(root, "X", "step 0", 101), 0.0, 1e-9);
    assert_float_equal(ts_of(root, "X", "step 0", 102), 3000.0, 1e-9);
    assert_float_equal(ts_of(root, "X", "step 2", 101), 20000.0, 1e-9);
    assert_float_equal(ts_of(root, "X", "forward", 101), 1.0, 1e-9);
    const cJSON *other = cJSON_GetObjectItemCaseSensitive(root, "otherData");
    assert_int_equal(num_of(other, "host_clocks"), 2);
    if (strstr(str_of(other, "clock_alignment"), "first traced step") == NULL)
        fail_msg("%s", text);
    const cJSON *shifts = cJSON_GetObjectItemCaseSensitive(other, "host_shift_us");
    assert_float_equal(num_of(shifts, "node-a"), 0.0, 1e-9);
    assert_float_equal(num_of(shifts, "node-b"), -86400e6, 1e-3);
    cJSON_Delete(root);
    free(text);
    /* one host: its own clock, as before, and nothing said of alignment */
    root = trace_json(&sh[1], 2, &text);
    assert_float_equal(ts_of(root, "X", "step 0", 102), 3000.0, 1e-9);
    other = cJSON_GetObjectItemCaseSensitive(root, "otherData");
    assert_int_equal(num_of(other, "host_clocks"), 1);
    assert_null(cJSON_GetObjectItemCaseSensitive(other, "clock_alignment"));
    cJSON_Delete(root);
    free(text);
    for (int i = 0; i < 3; i++)
        cg_shard_release(&sh[i]);
}

/* A traced process without steps on the gate's own host (a launcher that loads the library:
 * DeepSpeed's runner, a submit script that imports torch) was taken as the clock reference: it
 * has no traced step to align on, so every host kept its own clock (the ranks of a node booted a
 * day earlier a day apart again) while otherData said each was shifted by 0. The reference is
 * now a host with a traced step, and a host without one is said to be unaligned (null). */
static void test_trace__a_process_without_steps_is_never_the_clock_reference(void **state)
{
    (void)state;
    char me[256];
    assert_int_equal(gethostname(me, sizeof(me)), 0);
    me[sizeof(me) - 1] = '\0';
    struct cg_shard sh[3];
    long long day = 86400LL * 1000000000LL;
    char text[512];
    snprintf(text, sizeof(text), "canary-gate-shard 1\npid 50\nhost %s\nwarmup 0\ntw 0 2\n", me);
    struct cg_err err;
    cg_err_init(&err);
    assert_int_equal(cg_shard_parse(text, strlen(text), "t", &sh[0], &err), 0);
    host_shard(&sh[1], 0, "node-a", 5000000000LL);
    host_shard(&sh[2], 1, "node-b", 5000000000LL + day);
    char *json = NULL;
    cJSON *root = trace_json(sh, 3, &json);
    assert_float_equal(ts_of(root, "X", "step 0", 100), 0.0, 1e-9);
    if (!(fabs(ts_of(root, "X", "step 0", 101)) < 1e-9))
        fail_msg("%s", json);
    const cJSON *other = cJSON_GetObjectItemCaseSensitive(root, "otherData");
    assert_string_equal(str_of(other, "clock_reference_host"), "node-a");
    const cJSON *shifts = cJSON_GetObjectItemCaseSensitive(other, "host_shift_us");
    assert_float_equal(num_of(shifts, "node-b"), -86400e6, 1e-3);
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(shifts, me)));
    cJSON_Delete(root);
    free(json);
    for (int i = 0; i < 3; i++)
        cg_shard_release(&sh[i]);
}

/* --redact that matches host names hid them before the trace was written, and clocks were told
 * apart by the hidden name: every host became "***", one clock, and a node booted a day
 * earlier was drawn a day apart again (otherData "host_clocks": 1). Clocks are told apart by
 * the host name the shard recorded, which no output shows: the trace names each hidden host as
 * the artifact does, by what redaction left and the number of its lowest rank's host. */
static void test_trace__redacted_host_names_keep_their_own_clocks(void **state)
{
    (void)state;
    struct cg_shard sh[3];
    long long day = 86400LL * 1000000000LL;
    host_shard(&sh[0], 1, "node-b", 5000000000LL + day);
    host_shard(&sh[1], 0, "node-a", 5000000000LL);
    host_shard(&sh[2], 2, "node-a", 5003000000LL);
    struct cg_redact *r = NULL;
    struct cg_err err;
    cg_err_init(&err);
    assert_int_equal(cg_redact_new(NULL, &r, &err), 0);
    assert_int_equal(cg_redact_add_pattern(r, "node-[a-z]", &err), 0);
    assert_int_equal(cg_shard_redact(sh, 3, r, &err), 0);
    cg_redact_free(r);
    assert_string_equal(sh[0].host, "*** #2"); /* rank 1's; rank 0's node-a is "*** #1" */
    assert_string_equal(sh[1].host, "*** #1");
    char *text = NULL;
    cJSON *root = trace_json(sh, 3, &text);
    if (strstr(text, "node-") != NULL)
        fail_msg("a hidden host name in the trace: %s", text);
    assert_float_equal(ts_of(root, "X", "step 0", 100), 0.0, 1e-9);
    assert_float_equal(ts_of(root, "X", "step 0", 101), 0.0, 1e-9);
    assert_float_equal(ts_of(root, "X", "step 0", 102), 3000.0, 1e-9);
    const cJSON *other = cJSON_GetObjectItemCaseSensitive(root, "otherData");
    assert_int_equal(num_of(other, "host_clocks"), 2);
    const cJSON *shifts = cJSON_GetObjectItemCaseSensitive(other, "host_shift_us");
    assert_int_equal(cJSON_GetArraySize(shifts), 2); /* two names, not "***" twice */
    const char *ref = str_of(other, "clock_reference_host");
    assert_string_equal(ref, "*** #1");
    assert_float_equal(num_of(shifts, ref), 0.0, 1e-9);
    assert_float_equal(num_of(shifts, "*** #2"), -86400e6, 1e-3);
    cJSON_Delete(root);
    free(text);
    for (int i = 0; i < 3; i++)
        cg_shard_release(&sh[i]);
}

/* Two ranks of the real canary, rank 1 as another host (its own host name) whose monotonic
 * clock runs a day ahead (a time namespace; skipped where unshare cannot make one): their
 * traced steps, begun together, are drawn together, not a day apart. */
static void test_trace__another_hosts_rank_is_drawn_beside_the_first(void **state)
{
    (void)state;
    if (system("unshare -r --fork --time --monotonic 86400 --uts true >/dev/null 2>&1") != 0)
        skip();
    const char *argv[] = {"/bin/sh", "-c",
                          "RANK=0 WORLD_SIZE=2 \"$0\" --steps 4 --step-ms 5 & "
                          "RANK=1 WORLD_SIZE=2 unshare -r --fork --time --monotonic 86400 --uts "
                          "/bin/sh -c 'hostname cg-other-node && exec \"$0\" --steps 4 "
                          "--step-ms 5' \"$0\"; wait",
                          CANARY, NULL};
    const char *env[] = {"CANARY_GATE_WARMUP=1", "CANARY_GATE_TRACE_STEPS=0:1", NULL};
    struct cg_shard *sh = NULL;
    size_t n = 0;
    char *text = NULL;
    assert_int_equal(run_traced(argv, env, &sh, &n), 0);
    assert_int_equal(n, 2);
    double pid[2] = {0, 0};
    for (size_t i = 0; i < n; i++)
        pid[sh[i].rank] = (double)sh[i].pid;
    cJSON *root = trace_json(sh, n, &text);
    double t0 = ts_of(root, "X", "step 0", pid[0]), t1 = ts_of(root, "X", "step 0", pid[1]);
    if (!(fabs(t0 - t1) < 1e6)) /* within a second, in microseconds */
        fail_msg("step 0 of rank 0 at %.0f us, of rank 1 at %.0f us", t0, t1);
    assert_int_equal(num_of(cJSON_GetObjectItemCaseSensitive(root, "otherData"), "host_clocks"), 2);
    cJSON_Delete(root);
    free(text);
    cg_shard_free_all(sh, n);
}

#if CG_HAVE_CUPTI

#include "aggregate.h"
#include "synthetic.h"

/* Appends the aggregation's trace events to the shard text (len bytes used of cap) as the
 * library writes them; returns the new length. */
static size_t add_trace_lines(struct cg_agg *a, char *text, size_t len, size_t cap)
{
    static char line[CG_AGG_TRACE_LINE_MAX];
    for (size_t i = 0; i < a->n_trace; i++) {
        size_t n = cg_agg_trace_format(&a->trace[i], line, sizeof(line));
        assert_true(n > 0 && len + n < cap);
        memcpy(text + len, line, n);
        len += n;
    }
    text[len] = '\0';
    a->n_trace = 0;
    return len;
}

static void test_trace__synthetic_cupti_records(void **state)
{
    (void)state;
    static const char mangled[] = "_Z3fooIiEvT_";
    static const char hostile[] = "evil\"kernel\\\x1b[31mred\x1b[0m\xff";
    struct cg_agg a;
    assert_int_equal(cg_agg_new(&a, 0), 0);
    assert_int_equal(cg_agg_trace(&a, 1, 1, 100), 0); /* step 1 only */
    cg_agg_step_begin(&a, 0, 1000);
    cg_agg_step_end(&a, 0, 2000);
    cg_agg_step_begin(&a, 1, 3000);
    cg_agg_step_end(&a, 1, 9000);
    cg_agg_step_begin(&a, 2, 10000);
    cg_agg_step_end(&a, 2, 12000);
    cg_synth_memory(&a, 0, true, 1000, 1500); /* before the trace: the total it starts from */
    cg_synth_kernel(&a, mangled, 7, 1100, 1900); /* step 0: not traced */
    cg_synth_kernel(&a, mangled, 7, 3100, 4100);
    cg_synth_kernel(&a, hostile, 7, 4200, 4300);
    cg_synth_kernel(&a, mangled, 9, 3500, 3600); /* another stream */
    cg_synth_copy(&a, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
                  CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 13, 5000, 5400, 4096);
    cg_synth_memory(&a, 0, true, 500, 3200);
    cg_synth_memory(&a, 0, false, 1000, 8000);
    cg_synth_kernel(&a, mangled, 7, 10100, 10200); /* step 2: not traced */
    cg_synth_memory(&a, 0, true, 1, 11000);        /* after the trace */
    cg_agg_settle(&a, true);
    assert_int_equal(a.n_trace, 3 + 1 + 3); /* 3 kernels, 1 copy; memory: start + 2 events */

    static char text[65536];
    int len = snprintf(text, sizeof(text), "canary-gate-shard 1\npid 4242\nwarmup 0\ntw 1 1\n"
                       "s 0 1000 2000 -1\ns 1 3000 9000 64\ns 2 10000 12000 -1\n");
    size_t used = add_trace_lines(&a, text, (size_t)len, sizeof(text));
    snprintf(text + used, sizeof(text) - used, "tx 8 0\nend\n");
    cg_agg_release(&a);

    struct cg_shard s;
    struct cg_err err;
    char *json = NULL;
    cg_err_init(&err);
    if (cg_shard_parse(text, strlen(text), "synthetic", &s, &err) != 0)
        fail_msg("%s", err.msg);
    cJSON *root = trace_json(&s, 1, &json);
    assert_null(strchr(json, '\x1b')); /* no raw escape byte anywhere in the file */

    double s7 = track(root, "GPU 0 stream 7"), s9 = track(root, "GPU 0 stream 9");
    double s13 = track(root, "GPU 0 stream 13");
    assert_true(s7 > TID_STEPS && s9 > TID_STEPS && s13 > TID_STEPS && s7 != s9);
    assert_int_equal(count(root, "X", NULL, "kernel"), 3);
    const char *foo = cg_opname_can_demangle() ? "void foo<int>(int)" : mangled;
    const cJSON *k0 = find(root, "X", foo, 0);
    assert_non_null(k0);
    assert_true(num_of(k0, "tid") == s7);
    assert_float_equal(num_of(k0, "dur"), 1.0, 1e-9); /* 1000 ns */
    assert_float_equal(num_of(k0, "ts") - num_of(find(root, "X", "step 1", 0), "ts"), 0.1, 1e-9);
    assert_true(num_of(find(root, "X", foo, 1), "tid") == s9);
    assert_null(find(root, "X", foo, 2)); /* the kernels of steps 0 and 2 are left out */
    /* the hostile name survives the round trip exactly, its bad byte as U+FFFD */
    assert_non_null(find(root, "X", "evil\"kernel\\\x1b[31mred\x1b[0m\xef\xbf\xbd", 0));
    const cJSON *cp = find(root, "X", "memcpy HtoD pageable", 0);
    assert_non_null(cp);
    assert_string_equal(str_of(cp, "cat"), "memcpy");
    assert_true(num_of(cp, "tid") == s13);
    assert_float_equal(num_of(cJSON_GetObjectItemCaseSensitive(cp, "args"), "bytes"), 4096, 0);
    /* device memory: 1000 as the trace begins, 1500 after the allocation, 500 after the release */
    static const double totals[] = {1000, 1500, 500};
    for (int i = 0; i < 3; i++) {
        const cJSON *c = find(root, "C", "GPU 0 memory", i);
        assert_non_null(c);
        assert_float_equal(num_of(cJSON_GetObjectItemCaseSensitive(c, "args"), "bytes"),
                           totals[i], 0);
    }
    assert_null(find(root, "C", "GPU 0 memory", 3));
    const cJSON *st = find(root, "X", "step 1", 0);
    assert_float_equal(num_of(cJSON_GetObjectItemCaseSensitive(st, "args"), "tokens"), 64, 0);
    assert_null(find(root, "X", "step 0", 0));
    cJSON_Delete(root);
    free(json);
    cg_shard_release(&s);
}

#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace__cpu_canary_steps_ranges_threads_and_loss),
        cmocka_unit_test(test_trace__gpu_state_counters),
        cmocka_unit_test(test_trace__event_cap_is_reported),
        cmocka_unit_test(test_trace__no_trace_lines_give_a_valid_file_with_a_note),
        cmocka_unit_test(test_trace__hosts_clocks_are_aligned_on_the_first_traced_step),
        cmocka_unit_test(test_trace__a_process_without_steps_is_never_the_clock_reference),
        cmocka_unit_test(test_trace__redacted_host_names_keep_their_own_clocks),
        cmocka_unit_test(test_trace__another_hosts_rank_is_drawn_beside_the_first),
#if CG_HAVE_CUPTI
        cmocka_unit_test(test_trace__synthetic_cupti_records),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
