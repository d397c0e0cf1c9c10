/*
 * inject_support: running the test canary (tests/canaries/nvtx_canary.c) directly under the
 * injection library, as the launcher would but without canary-gate, and reading back the shard
 * it wrote, for the library's own tests (test_inject_*.c). Header-only; needs CG_BINARY_DIR.
 *
 * cg_canary_run sets NVTX_INJECTION64_PATH, CUDA_INJECTION64_PATH and CANARY_GATE_SHARD_DIR
 * (<workdir>/shards, made empty first), then the caller's "NAME=value" entries. The shard is
 * read whole (".shard", or ".part" when the process did not exit normally).
 */
#ifndef CG_TEST_INJECT_SUPPORT_H
#define CG_TEST_INJECT_SUPPORT_H

#include "workdir.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CG_TEST_LIB CG_BINARY_DIR "/libcanary-inject.so"
#define CG_TEST_CANARY CG_BINARY_DIR "/tests/canaries/nvtx-canary"
#define CG_TEST_CUPTI_STANDIN CG_BINARY_DIR "/tests/standin/libcupti-standin.so"
#define CG_TEST_ATEXIT_PROBE CG_BINARY_DIR "/tests/standin/libatexit-probe.so"
#define CG_TEST_CUDA_STANDIN CG_BINARY_DIR "/tests/standin/libcuda-standin.so"

/* Empties <workdir>/shards (creating it). */
static inline void cg_canary_clear_shards(const struct cg_workdir *w)
{
    const char *dir = cg_workdir_in(w, "shards");
    mkdir(dir, 0755);
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char path[768];
        if (e->d_name[0] != '.' &&
            snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) < (int)sizeof(path))
            unlink(path);
    }
    closedir(d);
}

/* Runs the canary with args (NULL-terminated) and extra environment entries (NULL-terminated,
 * may be NULL); returns its exit code. */
static inline int cg_canary_run(const struct cg_workdir *w, const char *const *env,
                                const char *const *args, struct cg_proc *p)
{
    static char lib_nvtx[512], lib_cuda[512], shards[512];
    const char *all[32];
    size_t n = 0;
    cg_canary_clear_shards(w);
    snprintf(lib_nvtx, sizeof(lib_nvtx), "NVTX_INJECTION64_PATH=%s", CG_TEST_LIB);
    snprintf(lib_cuda, sizeof(lib_cuda), "CUDA_INJECTION64_PATH=%s", CG_TEST_LIB);
    snprintf(shards, sizeof(shards), "CANARY_GATE_SHARD_DIR=%s", cg_workdir_in(w, "shards"));
    all[n++] = lib_nvtx;
    all[n++] = lib_cuda;
    all[n++] = shards;
    for (size_t i = 0; env != NULL && env[i] != NULL && n + 1 < 32; i++)
        all[n++] = env[i];
    all[n] = NULL;
    return cg_workdir_run(w, CG_TEST_CANARY, all, args, p);
}

/* The name of the one shard file in <workdir>/shards ("shards/<file>"), or NULL. */
static inline const char *cg_canary_shard_name(const struct cg_workdir *w)
{
    static char name[512];
    const char *found = NULL;
    DIR *d = opendir(cg_workdir_in(w, "shards"));
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "shard-", 6) != 0)
            continue;
        assert_null(found); /* one process, one shard */
        snprintf(name, sizeof(name), "shards/%s", e->d_name);
        found = name;
    }
    closedir(d);
    return found;
}

/* The shard's text (static buffer, valid until the next call); fails when there is none. */
static inline const char *cg_canary_shard(const struct cg_workdir *w)
{
    const char *name = cg_canary_shard_name(w);
    if (name == NULL)
        fail_msg("the canary wrote no shard");
    return cg_workdir_read(w, name);
}

/* Where the line that starts with prefix (a whole line's beginning) is in text, or NULL. */
static inline const char *cg_text_line(const char *text, const char *prefix)
{
    size_t n = strlen(prefix);
    for (const char *p = text; p != NULL && *p != '\0';) {
        if (strncmp(p, prefix, n) == 0)
            return p;
        p = strchr(p, '\n');
        if (p != NULL)
            p++;
    }
    return NULL;
}

/* How many lines of text start with prefix. */
static inline int cg_text_count(const char *text, const char *prefix)
{
    int n = 0;
    for (const char *p = cg_text_line(text, prefix); p != NULL;
         p = cg_text_line(p + 1, prefix))
        n++;
    return n;
}

/* The sum of CALLS over the lines "o KIND CALLS NS NAME" of text before stop (NULL: the end)
 * whose NAME is name. */
static inline int64_t cg_shard_op_calls(const char *text, const char *stop, const char *kind,
                                        const char *name)
{
    char prefix[64];
    int64_t sum = 0;
    snprintf(prefix, sizeof(prefix), "o %s ", kind);
    for (const char *p = cg_text_line(text, prefix); p != NULL && (stop == NULL || p < stop);
         p = cg_text_line(p + 1, prefix)) {
        long long calls = 0, ns = 0;
        int used = 0;
        if (sscanf(p + strlen(prefix), "%lld %lld%n", &calls, &ns, &used) != 2 ||
            p[strlen(prefix) + (size_t)used] != ' ')
            fail_msg("bad op line: %.80s", p);
        const char *at = p + strlen(prefix) + (size_t)used + 1; /* the name, maybe empty */
        const char *eol = strchr(at, '\n');
        size_t len = eol ? (size_t)(eol - at) : strlen(at);
        if (len == strlen(name) && strncmp(at, name, len) == 0)
            sum += calls;
    }
    return sum;
}

/* The sum of DELTA over the lines "n STEP NAME DELTA" of text before stop (NULL: the end) for
 * step and name (step -1: any step); fails on a malformed "n" line. */
static inline int64_t cg_shard_count(const char *text, const char *stop, int64_t step,
                                     const char *name)
{
    int64_t sum = 0;
    for (const char *p = cg_text_line(text, "n "); p != NULL && (stop == NULL || p < stop);
         p = cg_text_line(p + 1, "n ")) {
        long long i = 0, delta = 0;
        char got[64];
        if (sscanf(p, "n %lld %63s %lld", &i, got, &delta) != 3)
            fail_msg("bad count line: %.80s", p);
        if ((step < 0 || i == step) && strcmp(got, name) == 0)
            sum += delta;
    }
    return sum;
}

/* The last "c ..." line's 7 fields; fails when there is none or it has fewer. */
static inline void cg_shard_counters(const char *text, long long c[7])
{
    const char *last = NULL;
    for (const char *p = cg_text_line(text, "c "); p != NULL; p = cg_text_line(p + 1, "c "))
        last = p;
    if (last == NULL)
        fail_msg("no counter line in the shard:\n%s", text);
    if (sscanf(last, "c %lld %lld %lld %lld %lld %lld %lld", &c[0], &c[1], &c[2], &c[3], &c[4],
               &c[5], &c[6]) != 7)
        fail_msg("counter line without 7 fields: %.80s", last);
}

#endif
