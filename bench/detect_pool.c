/* detect_pool: pools of canary runs for bench_detect (see detect_pool.h). */
#include "detect_pool.h"

#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

extern char **environ;

static int pool_add_run(struct pool *p, const struct cg_artifact *one, double secs)
{
    if (p->a.n_runs == 0 && p->a.env.canary_hash == NULL &&
        cg_artifact_copy_header(&p->a, one) != 0)
        return -1;
    if (p->a.n_runs + 1 > p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 256;
        double *s = realloc(p->secs, cap * sizeof(*s));
        if (s == NULL)
            return -1;
        p->secs = s;
        p->cap = cap;
    }
    if (cg_artifact_append_runs(&p->a, one) != 0)
        return -1;
    p->secs[p->a.n_runs - 1] = secs;
    return 0;
}

/* One canary run of pool p through 'canary-gate run'; appended to the pool. */
int cg_detect_measure_one(struct pool *p, const struct cg_thresholds *t, const char *tmp)
{
    char out[512], log[512], steps[32], warm[32], total[32], work[32], every[32];
    snprintf(out, sizeof(out), "%s/run.json", tmp);
    snprintf(log, sizeof(log), "%s/run.log", tmp);
    snprintf(steps, sizeof(steps), "%lld", (long long)t->steps);
    snprintf(warm, sizeof(warm), "%lld", (long long)t->warmup);
    snprintf(total, sizeof(total), "%lld", (long long)(t->steps + t->warmup));
    snprintf(work, sizeof(work), "%g", p->work_pct);
    snprintf(every, sizeof(every), "%ld", p->every > 1 ? p->every : 1);
    char *argv[] = {CG_TOOL_PATH, "run",   "--runs",       "1",  "--steps", steps, "--warmup",
                    warm,         "--out", out,            "--log", log,    "--",  TRAIN,
                    "--preset",   "tiny",  "--steps",      total, "--extra-work",  work,
                    "--extra-work-every",  every,          NULL};
    if (p->work_pct == 0)
        argv[18] = NULL; /* the unchanged canary: exactly the built-in command line */
    else if (p->every <= 1)
        argv[20] = NULL; /* extra work in every step */
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    double t0 = cg_bench_now_s();
    int rc = posix_spawn(&pid, CG_TOOL_PATH, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        fprintf(stderr, "bench_detect: cannot run %s: %s\n", CG_TOOL_PATH, strerror(rc));
        return -1;
    }
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    double secs = cg_bench_now_s() - t0;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "bench_detect: a run of pool %s failed (see %s)\n", p->name, log);
        return -1;
    }
    struct cg_artifact one;
    struct cg_err err;
    cg_artifact_init(&one);
    rc = cg_artifact_load(out, &one, &err);
    if (rc == 0)
        rc = pool_add_run(p, &one, secs);
    else
        fprintf(stderr, "bench_detect: %s\n", err.msg);
    cg_artifact_release(&one);
    return rc;
}

/* DIR/pool-NAME.EXT into buf; -1 when it does not fit. */
static int pool_path(char *buf, size_t cap, const char *dir, const struct pool *p, const char *ext)
{
    int k = snprintf(buf, cap, "%s/pool-%s.%s", dir, p->name, ext);
    if (k < 0 || (size_t)k >= cap) {
        fprintf(stderr, "bench_detect: path too long under '%s'\n", dir);
        return -1;
    }
    return 0;
}

int cg_detect_save_pools(const char *dir, struct pool *pools, size_t n)
{
    mkdir(dir, 0755);
    for (size_t i = 0; i < n; i++) {
        char path[512];
        struct cg_err err;
        if (pool_path(path, sizeof(path), dir, &pools[i], "json") != 0)
            return -1;
        if (pools[i].a.n_runs > 0 && cg_artifact_save(path, &pools[i].a, &err) != 0) {
            fprintf(stderr, "bench_detect: %s\n", err.msg);
            return -1;
        }
        if (pool_path(path, sizeof(path), dir, &pools[i], "secs") != 0)
            return -1;
        FILE *f = fopen(path, "w");
        if (f == NULL)
            return -1;
        fprintf(f, "# extra_work_pct %g\n", pools[i].work_pct);
        if (pools[i].every > 1)
            fprintf(f, "# extra_work_every %ld\n", pools[i].every);
        for (size_t r = 0; r < pools[i].a.n_runs; r++)
            fprintf(f, "%.6f\n", pools[i].secs[r]);
        fclose(f);
    }
    return 0;
}

int cg_detect_load_pool(const char *dir, struct pool *p)
{
    char path[512];
    struct cg_err err;
    if (pool_path(path, sizeof(path), dir, p, "json") != 0)
        return -1;
    if (cg_artifact_load(path, &p->a, &err) != 0) {
        fprintf(stderr, "bench_detect: %s\n", err.msg);
        return -1;
    }
    if (pool_path(path, sizeof(path), dir, p, "secs") != 0)
        return -1;
    FILE *f = fopen(path, "r");
    p->cap = p->a.n_runs ? p->a.n_runs : 1;
    p->secs = calloc(p->cap, sizeof(*p->secs));
    if (f == NULL || p->secs == NULL || fscanf(f, "# extra_work_pct %lf", &p->work_pct) != 1) {
        fprintf(stderr, "bench_detect: cannot read '%s'\n", path);
        if (f)
            fclose(f);
        return -1;
    }
    p->every = 1;
    if (fscanf(f, " # extra_work_every %ld", &p->every) != 1)
        p->every = 1; /* absent: extra work in every step */
    for (size_t r = 0; r < p->a.n_runs; r++) {
        if (fscanf(f, "%lf", &p->secs[r]) != 1) {
            fclose(f);
            fprintf(stderr, "bench_detect: '%s' has fewer lines than runs\n", path);
            return -1;
        }
    }
    fclose(f);
    return 0;
}

/* Leaves out the runs of the first `rounds` collection rounds (per_round runs of the pool in
 * each); the pool's order and seconds shift with them. */
int cg_detect_skip_runs(struct pool *p, size_t per_round, size_t rounds)
{
    size_t k = per_round * rounds;
    if (k == 0)
        return 0;
    if (k >= p->a.n_runs) {
        fprintf(stderr, "bench_detect: pool %s has only %zu runs\n", p->name, p->a.n_runs);
        return -1;
    }
    /* Rotated to the end and hidden; cg_artifact_release frees them once n_runs is restored. */
    struct cg_run *tmp = malloc(k * sizeof(*tmp));
    double *ts = malloc(k * sizeof(*ts));
    if (tmp == NULL || ts == NULL) {
        free(tmp);
        free(ts);
        return -1;
    }
    size_t rest = p->a.n_runs - k;
    memcpy(tmp, p->a.runs, k * sizeof(*tmp));
    memcpy(ts, p->secs, k * sizeof(*ts));
    memmove(p->a.runs, p->a.runs + k, rest * sizeof(*p->a.runs));
    memmove(p->secs, p->secs + k, rest * sizeof(*p->secs));
    memcpy(p->a.runs + rest, tmp, k * sizeof(*tmp));
    memcpy(p->secs + rest, ts, k * sizeof(*ts));
    free(tmp);
    free(ts);
    p->a.n_runs = rest;
    p->hidden = k;
    return 0;
}

