/*
 * shard: a shard's lifecycle, the shard files of a run's directory and the failure file (see
 * shard.h for the format; reading a shard's records is shard_parse.c, hiding their secrets
 * shard_redact.c, merging them into a run shard_merge.c). Not thread-safe.
 */
#include "shard.h"

#include "fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cg_shard_init(struct cg_shard *s)
{
    memset(s, 0, sizeof(*s));
    s->pid = s->rank = s->local_rank = -1;
    s->pid_start_ticks = s->pid_ns = -1;
    s->ppid = -1;
    s->world_size = s->group_rank = s->slurm_procid = s->slurm_nodeid = s->slurm_ntasks = -1;
    s->mpi_rank = s->mpi_size = s->slurm_step = s->task_group = -1;
    s->gpu = -1;
    s->records = s->dropped = s->zero_ts = -1;
    s->outside_steps = s->inside_steps = s->late_memory = s->overhead_ns = -1;
    s->done_steps = s->steps_ignored = -1;
    s->nonfinite_loss_step = -1;
    s->nonfinite_loss = NAN;
    s->warmup = -1;
    s->trace_first = s->trace_last = -1;
    s->trace_events = s->trace_dropped = -1;
}

void cg_shard_release(struct cg_shard *s)
{
    for (size_t i = 0; i < s->n_ops; i++)
        free(s->ops[i].name);
    free(s->ops);
    for (size_t i = 0; i < s->n_places; i++)
        free(s->places[i].name);
    free(s->places);
    free(s->steps);
    free(s->mem);
    free(s->uuids);
    free(s->gpu_reason);
    free(s->gpu_model);
    free(s->host);
    free(s->clock_host);
    free(s->slurm_node);
    free(s->slurm_job);
    free(s->step_range);
    free(s->cuda_version);
    free(s->driver_version);
    free(s->cupti_library);
    for (size_t i = 0; i < s->n_warnings; i++)
        free(s->warnings[i]);
    for (size_t i = 0; i < s->n_ranges; i++)
        free(s->ranges[i].name);
    free(s->ranges);
    for (size_t i = 0; i < s->n_gpu_events; i++)
        free(s->gpu_events[i].name);
    free(s->gpu_events);
    free(s->mem_events);
    for (size_t i = 0; i < s->n_domains; i++)
        free(s->domains[i].name);
    free(s->domains);
    cg_shard_init(s);
}

/* --- files -------------------------------------------------------------------------------- */

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

void cg_shard_free_all(struct cg_shard *shards, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cg_shard_release(&shards[i]);
    free(shards);
}

int cg_shard_load_dir(const char *dir, struct cg_shard **out, size_t *n, struct cg_err *err)
{
    DIR *d = NULL;
    struct cg_shard *arr = NULL;
    size_t cnt = 0, cap = 0;
    char *text = NULL;
    int rc = 0;
    *out = NULL;
    *n = 0;
    d = opendir(dir);
    if (d == NULL) {
        rc = cg_err_set(err, CG_EIO, "cannot read shard directory '%s': %s", dir, strerror(errno));
        goto done;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || !(has_suffix(e->d_name, CG_SHARD_SUFFIX_FINAL) ||
                                     has_suffix(e->d_name, CG_SHARD_SUFFIX_PART)))
            continue;
        char path[PATH_MAX];
        size_t len = 0;
        int k = snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (k < 0 || (size_t)k >= sizeof(path))
            continue;
        if ((rc = cg_file_read(path, CG_SHARD_MAX_BYTES, &text, &len, err)) != 0) {
            if (rc == CG_EINPUT) { /* an empty shard: the process died before writing */
                rc = 0;
                continue;
            }
            goto done;
        }
        if (cnt == cap) {
            size_t c = cap != 0 ? cap * 2 : 16;
            struct cg_shard *more = realloc(arr, c * sizeof(*arr));
            if (more == NULL) {
                rc = cg_err_set(err, CG_ENOMEM, "out of memory reading shards");
                goto done;
            }
            arr = more;
            cap = c;
        }
        if ((rc = cg_shard_parse(text, len, path, &arr[cnt], err)) != 0)
            goto done;
        cnt++;
        free(text);
        text = NULL;
    }
done:
    free(text);
    if (d != NULL)
        closedir(d);
    if (rc != 0) {
        cg_shard_free_all(arr, cnt);
        return rc;
    }
    if (cg_shard_mark_tasks(arr, cnt) != 0) {
        cg_shard_free_all(arr, cnt);
        return cg_err_set(err, CG_ENOMEM, "out of memory reading shards");
    }
    *out = arr;
    *n = cnt;
    return 0;
}

/* --- merging ------------------------------------------------------------------------------ */

int cg_shard_fail_parse(const char *data, size_t len, struct cg_shard_fail *f)
{
    memset(f, 0, sizeof(*f));
    size_t n = 0;
    while (n < len && data[n] != '\0')
        n++;
    if (n == 0)
        return 0;
    /* OP: lowercase letters */
    size_t i = 0;
    while (i < n && i + 1 < sizeof(f->op) && data[i] >= 'a' && data[i] <= 'z')
        f->op[i] = data[i], i++;
    if (i == 0 || i >= n || data[i] != ' ') {
        f->op[0] = '\0';
        return -1;
    }
    long long v[2];
    for (int k = 0; k < 2; k++) {
        size_t start = ++i;
        long long x = 0;
        while (i < n && data[i] >= '0' && data[i] <= '9' && i - start < 12)
            x = x * 10 + (data[i++] - '0');
        if (i == start || i >= n || data[i] != ' ') {
            memset(f, 0, sizeof(*f));
            return -1;
        }
        v[k] = x;
    }
    i++;
    if (v[0] > 100000 || i >= n || n - i >= sizeof(f->path)) {
        memset(f, 0, sizeof(*f));
        return -1;
    }
    f->errno_value = (int)v[0];
    f->pid = v[1];
    memcpy(f->path, data + i, n - i);
    f->path[n - i] = '\0';
    return 1;
}
