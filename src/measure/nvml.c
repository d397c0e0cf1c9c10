/* nvml: loading NVML at run time, sampling the GPUs from a thread of the launcher, and the
 * GPU state of a run's measured window (see nvml.h). */
#define _GNU_SOURCE
#include "nvml.h"

#include "shard.h"
#include "trace.h"

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- the entry points, declared from NVIDIA's NVML reference --------------------------- */

typedef int nvml_ret;           /* nvmlReturn_t: 0 is NVML_SUCCESS */
typedef struct nvml_dev *nvml_dev; /* nvmlDevice_t, an opaque handle */

enum {
    NVML_OK = 0,
    NVML_ERR_INSUFFICIENT_SIZE = 7,
    NVML_CLOCK_SM = 1,
    NVML_CLOCK_MEM = 2,
    NVML_TEMPERATURE_GPU = 0,
    NVML_UUID_BYTES = 96
};

/* nvmlProcessInfo_t as _v3 fills it: pid, used memory, GPU and compute instance ids. */
struct nvml_proc {
    unsigned int pid;
    unsigned long long used_memory;
    unsigned int gpu_instance;
    unsigned int compute_instance;
};

#define NVML_MAX_DEVICES 64
#define NVML_MAX_PROCS 64

struct cg_nvml {
    void *lib;
    nvml_ret (*init)(void);
    nvml_ret (*shutdown)(void);
    const char *(*error_string)(nvml_ret);
    nvml_ret (*count)(unsigned int *);
    nvml_ret (*by_index)(unsigned int, nvml_dev *);
    nvml_ret (*by_uuid)(const char *, nvml_dev *);
    nvml_ret (*uuid)(nvml_dev, char *, unsigned int);
    nvml_ret (*clock)(nvml_dev, int, unsigned int *);
    nvml_ret (*reasons)(nvml_dev, unsigned long long *);
    nvml_ret (*temperature)(nvml_dev, int, unsigned int *);
    nvml_ret (*power)(nvml_dev, unsigned int *);
    nvml_ret (*energy)(nvml_dev, unsigned long long *);
    nvml_ret (*procs)(nvml_dev, unsigned int *, struct nvml_proc *);
    nvml_ret (*power_limit)(nvml_dev, unsigned int *);
    nvml_ret (*persistence)(nvml_dev, int *);
    nvml_ret (*app_clock)(nvml_dev, int, unsigned int *);
    nvml_ret (*default_app_clock)(nvml_dev, int, unsigned int *);
};

static void *sym(void *lib, const char *name)
{
    return dlsym(lib, name);
}

int cg_nvml_open(struct cg_nvml **out, char *reason, size_t cap)
{
    *out = NULL;
    const char *path = getenv(CG_NVML_ENV_LIB);
    if (path == NULL || *path == '\0')
        path = CG_NVML_SONAME;
    struct cg_nvml *n = calloc(1, sizeof(*n));
    if (n == NULL) {
        snprintf(reason, cap, "out of memory");
        return CG_ENOMEM;
    }
    n->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (n->lib == NULL) {
        const char *why = dlerror();
        snprintf(reason, cap, "NVML unavailable: cannot open %s: %s", path,
                 why != NULL ? why : "unknown error");
        free(n);
        return CG_EINPUT;
    }
    /* casts through void * to function pointers: what dlsym is for (POSIX) */
#define LOAD(field, name) *(void **)(&n->field) = sym(n->lib, name)
    LOAD(init, "nvmlInit_v2");
    LOAD(shutdown, "nvmlShutdown");
    LOAD(error_string, "nvmlErrorString");
    LOAD(count, "nvmlDeviceGetCount_v2");
    LOAD(by_index, "nvmlDeviceGetHandleByIndex_v2");
    LOAD(by_uuid, "nvmlDeviceGetHandleByUUID");
    LOAD(uuid, "nvmlDeviceGetUUID");
    LOAD(clock, "nvmlDeviceGetClockInfo");
    LOAD(reasons, "nvmlDeviceGetCurrentClocksEventReasons");
    if (n->reasons == NULL) /* drivers before the rename: the same call */
        LOAD(reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
    LOAD(temperature, "nvmlDeviceGetTemperature");
    LOAD(power, "nvmlDeviceGetPowerUsage");
    LOAD(energy, "nvmlDeviceGetTotalEnergyConsumption");
    LOAD(procs, "nvmlDeviceGetComputeRunningProcesses_v3");
    LOAD(power_limit, "nvmlDeviceGetPowerManagementLimit");
    LOAD(persistence, "nvmlDeviceGetPersistenceMode");
    LOAD(app_clock, "nvmlDeviceGetApplicationsClock");
    LOAD(default_app_clock, "nvmlDeviceGetDefaultApplicationsClock");
#undef LOAD
    if (n->init == NULL || n->shutdown == NULL || n->count == NULL || n->by_index == NULL ||
        n->uuid == NULL) {
        snprintf(reason, cap, "NVML unavailable: %s lacks nvmlInit_v2, nvmlDeviceGetCount_v2, "
                              "nvmlDeviceGetHandleByIndex_v2 or nvmlDeviceGetUUID",
                 path);
        dlclose(n->lib);
        free(n);
        return CG_EINPUT;
    }
    nvml_ret rc = n->init();
    if (rc != NVML_OK) {
        const char *s = n->error_string != NULL ? n->error_string(rc) : NULL;
        snprintf(reason, cap, "NVML unavailable: nvmlInit_v2: %s (%d)", s != NULL ? s : "error",
                 rc);
        dlclose(n->lib);
        free(n);
        return CG_EINPUT;
    }
    *out = n;
    return 0;
}

void cg_nvml_close(struct cg_nvml *n)
{
    if (n == NULL)
        return;
    n->shutdown();
    dlclose(n->lib);
    free(n);
}

static bool device_of(struct cg_nvml *n, const char *uuid, nvml_dev *d)
{
    if (uuid != NULL && n->by_uuid != NULL && n->by_uuid(uuid, d) == NVML_OK)
        return true;
    return n->by_index(0, d) == NVML_OK;
}

void cg_nvml_env(struct cg_nvml *n, const char *uuid, struct cg_gpu_env *e)
{
    cg_gpu_env_init(e);
    e->recorded = true;
    nvml_dev d;
    if (!device_of(n, uuid, &d)) {
        e->reason = strdup("NVML found no device");
        return;
    }
    unsigned int v, w;
    int mode;
    if (n->power_limit != NULL && n->power_limit(d, &v) == NVML_OK)
        e->power_limit_w = v / 1000.0;
    if (n->persistence != NULL && n->persistence(d, &mode) == NVML_OK)
        e->persistence_mode = mode != 0;
    if (n->app_clock != NULL && n->app_clock(d, NVML_CLOCK_SM, &v) == NVML_OK)
        e->app_sm_mhz = v;
    if (n->app_clock != NULL && n->app_clock(d, NVML_CLOCK_MEM, &w) == NVML_OK)
        e->app_mem_mhz = w;
    if (n->default_app_clock != NULL && n->default_app_clock(d, NVML_CLOCK_SM, &v) == NVML_OK)
        e->default_app_sm_mhz = v;
    if (n->default_app_clock != NULL && n->default_app_clock(d, NVML_CLOCK_MEM, &w) == NVML_OK)
        e->default_app_mem_mhz = w;
    if (e->app_sm_mhz >= 0 && e->default_app_sm_mhz >= 0)
        e->clocks_locked = e->app_sm_mhz != e->default_app_sm_mhz ||
                           (e->app_mem_mhz >= 0 && e->default_app_mem_mhz >= 0 &&
                            e->app_mem_mhz != e->default_app_mem_mhz);
}

/* ---- the sampler ------------------------------------------------------------------------ */

struct series {
    char uuid[NVML_UUID_BYTES];
    nvml_dev dev;
    struct cg_nvml_sample *s;
    size_t n, cap;
};

struct cg_nvml_sampler {
    struct cg_nvml *nvml;
    long interval_ms;
    struct series dev[NVML_MAX_DEVICES];
    size_t n_dev;
    pthread_t thread;
    bool running;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stop;
    bool oom;
};

static int64_t now_raw_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Whose a process NVML lists is, as this PID namespace sees it. */
enum owner { OWNER_TOOL, OWNER_OTHER, OWNER_UNSEEN };

/* OWNER_TOOL when pid is this tool or one of its descendants (the canary's processes: the tool
 * is their subreaper, launch.h), by the parent links in /proc; OWNER_UNSEEN when this namespace
 * has no such process (a container sees the driver's host PIDs); else OWNER_OTHER. */
static enum owner owner_of(pid_t pid)
{
    pid_t self = getpid();
    for (int depth = 0; depth < 64 && pid > 1; depth++) {
        if (pid == self)
            return OWNER_TOOL;
        char path[64], buf[512];
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            return depth == 0 ? OWNER_UNSEEN : OWNER_OTHER;
        size_t len = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[len] = '\0';
        const char *close = strrchr(buf, ')'); /* the name may hold spaces and ')' */
        /* after the name: " STATE PPID ..." */
        if (close == NULL || close[1] != ' ' || close[2] == '\0' || close[3] != ' ')
            return OWNER_OTHER;
        char *end;
        long ppid = strtol(close + 4, &end, 10);
        if (end == close + 4 || ppid < 0)
            return OWNER_OTHER;
        pid = (pid_t)ppid;
    }
    return OWNER_OTHER;
}

static void take_one(const struct cg_nvml *n, struct series *d, struct cg_nvml_sample *x)
{
    memset(x, 0, sizeof(*x));
    unsigned int v;
    unsigned long long u;
    x->t_ns = now_raw_ns();
    x->sm_mhz = n->clock != NULL && n->clock(d->dev, NVML_CLOCK_SM, &v) == NVML_OK ? (int32_t)v
                                                                                   : -1;
    x->mem_mhz = n->clock != NULL && n->clock(d->dev, NVML_CLOCK_MEM, &v) == NVML_OK ? (int32_t)v
                                                                                     : -1;
    x->temp_c = n->temperature != NULL &&
                        n->temperature(d->dev, NVML_TEMPERATURE_GPU, &v) == NVML_OK
                    ? (int32_t)v
                    : -1;
    x->power_mw = n->power != NULL && n->power(d->dev, &v) == NVML_OK ? (int64_t)v : -1;
    x->reasons_ok = n->reasons != NULL && n->reasons(d->dev, &u) == NVML_OK;
    x->reasons = x->reasons_ok ? u : 0;
    x->energy_ok = n->energy != NULL && n->energy(d->dev, &u) == NVML_OK;
    x->energy_mj = x->energy_ok ? u : 0;
    x->n_other = -1;
    struct nvml_proc procs[NVML_MAX_PROCS];
    unsigned int count = NVML_MAX_PROCS;
    nvml_ret rc = n->procs != NULL ? n->procs(d->dev, &count, procs) : -1;
    if (rc == NVML_ERR_INSUFFICIENT_SIZE)
        count = 0; /* more than NVML_MAX_PROCS: some are surely others' */
    if (rc != NVML_OK && rc != NVML_ERR_INSUFFICIENT_SIZE)
        return;
    x->n_other = rc == NVML_ERR_INSUFFICIENT_SIZE ? NVML_MAX_PROCS : 0;
    for (unsigned int i = 0; i < count && i < NVML_MAX_PROCS; i++) {
        enum owner o = owner_of((pid_t)procs[i].pid);
        if (o == OWNER_TOOL) {
            x->canary_seen = true;
            x->n_own++;
        } else if (o == OWNER_UNSEEN) {
            if (x->n_unseen < CG_NVML_SAMPLE_OTHERS)
                x->unseen[x->n_unseen] = procs[i].pid;
            x->n_unseen++;
        } else {
            if (x->n_other < CG_NVML_SAMPLE_OTHERS)
                x->other[x->n_other] = procs[i].pid;
            x->n_other++;
        }
    }
}

static void sample_all(struct cg_nvml_sampler *s)
{
    for (size_t i = 0; i < s->n_dev; i++) {
        struct series *d = &s->dev[i];
        struct cg_nvml_sample x;
        take_one(s->nvml, d, &x);
        pthread_mutex_lock(&s->lock);
        if (d->n == d->cap && d->cap < CG_NVML_MAX_SAMPLES) {
            size_t cap = d->cap ? d->cap * 2 : 256;
            void *p = realloc(d->s, cap * sizeof(*d->s));
            if (p == NULL)
                s->oom = true;
            else {
                d->s = p;
                d->cap = cap;
            }
        }
        if (d->n < d->cap)
            d->s[d->n++] = x;
        pthread_mutex_unlock(&s->lock);
    }
}

static void *sampler_main(void *arg)
{
    struct cg_nvml_sampler *s = arg;
    pthread_mutex_lock(&s->lock);
    while (!s->stop) {
        pthread_mutex_unlock(&s->lock);
        sample_all(s);
        pthread_mutex_lock(&s->lock);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += (s->interval_ms % 1000) * 1000000L;
        until.tv_sec += s->interval_ms / 1000 + until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        while (!s->stop && pthread_cond_timedwait(&s->wake, &s->lock, &until) == 0)
            ;
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

int cg_nvml_sampler_start(struct cg_nvml *n, long interval_ms, struct cg_nvml_sampler **out,
                          struct cg_err *err)
{
    struct cg_nvml_sampler *s = calloc(1, sizeof(*s));
    *out = NULL;
    if (s == NULL)
        return cg_err_set(err, CG_ENOMEM, "out of memory");
    s->nvml = n;
    s->interval_ms = interval_ms > 0 ? interval_ms : CG_NVML_INTERVAL_MS;
    unsigned int count = 0;
    if (n->count(&count) != NVML_OK)
        count = 0;
    for (unsigned int i = 0; i < count && s->n_dev < NVML_MAX_DEVICES; i++) {
        struct series *d = &s->dev[s->n_dev];
        if (n->by_index(i, &d->dev) != NVML_OK ||
            n->uuid(d->dev, d->uuid, sizeof(d->uuid)) != NVML_OK)
            continue;
        d->uuid[sizeof(d->uuid) - 1] = '\0';
        s->n_dev++;
    }
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->wake, NULL);
    if (pthread_create(&s->thread, NULL, sampler_main, s) != 0) {
        cg_nvml_sampler_free(s);
        return cg_err_set(err, CG_EIO, "cannot start the NVML sampling thread");
    }
    s->running = true;
    *out = s;
    return 0;
}

void cg_nvml_sampler_stop(struct cg_nvml_sampler *s)
{
    if (s == NULL || !s->running)
        return;
    pthread_mutex_lock(&s->lock);
    s->stop = true;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    s->running = false;
    sample_all(s); /* the last: after the canary ended, so the window is covered */
}

int cg_nvml_sampler_trace(const struct cg_nvml_sampler *s, struct cg_trace_sample **out,
                          size_t *n)
{
    *out = NULL;
    *n = 0;
    if (s == NULL)
        return 0;
    bool any_seen = false;
    size_t total = 0;
    for (size_t i = 0; i < s->n_dev; i++)
        for (size_t k = 0; k < s->dev[i].n; k++)
            any_seen |= s->dev[i].s[k].canary_seen;
    bool use[NVML_MAX_DEVICES] = {false};
    for (size_t i = 0; i < s->n_dev; i++) {
        for (size_t k = 0; k < s->dev[i].n && !use[i]; k++)
            use[i] = !any_seen || s->dev[i].s[k].canary_seen;
        total += use[i] ? s->dev[i].n : 0;
    }
    if (total == 0)
        return 0;
    struct cg_trace_sample *t = malloc(total * sizeof(*t));
    if (t == NULL)
        return CG_ENOMEM;
    size_t m = 0;
    for (size_t i = 0; i < s->n_dev; i++)
        for (size_t k = 0; use[i] && k < s->dev[i].n; k++) {
            const struct cg_nvml_sample *x = &s->dev[i].s[k];
            t[m++] = (struct cg_trace_sample){(int64_t)i, x->t_ns,
                                              x->sm_mhz >= 0 ? (double)x->sm_mhz : NAN,
                                              x->power_mw >= 0 ? (double)x->power_mw / 1000.0 : NAN,
                                              x->temp_c >= 0 ? (double)x->temp_c : NAN};
        }
    *out = t;
    *n = m;
    return 0;
}

void cg_nvml_sampler_free(struct cg_nvml_sampler *s)
{
    if (s == NULL)
        return;
    cg_nvml_sampler_stop(s);
    for (size_t i = 0; i < s->n_dev; i++)
        free(s->dev[i].s);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->wake);
    free(s);
}

/* ---- a window's figures ----------------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* A counter step above this many mJ between two samples is no wrap of a 64-bit counter but a
 * reset (the driver reloaded): 10 MJ, 50 MW over a 200 ms interval. */
#define ENERGY_MAX_STEP_MJ 10000000000ULL

/* The unwrapped counter at t (mJ from the first sample), interpolated; false when t lies
 * outside the samples. e[] holds the unwrapped values. */
static bool energy_at(const struct cg_nvml_sample *s, const double *e, size_t n, int64_t t,
                      double *out)
{
    for (size_t i = 1; i < n; i++) {
        if (s[i - 1].t_ns <= t && t <= s[i].t_ns) {
            double span = (double)(s[i].t_ns - s[i - 1].t_ns);
            double f = span > 0 ? (double)(t - s[i - 1].t_ns) / span : 0.0;
            *out = e[i - 1] + f * (e[i] - e[i - 1]);
            return true;
        }
    }
    return false;
}

static void window_energy(const struct cg_nvml_sample *s, size_t n, int64_t t0, int64_t t1,
                          struct cg_gpu_device *d, double *e)
{
    d->energy_j = NAN;
    const char *why = NULL;
    for (size_t i = 0; i < n && why == NULL; i++)
        if (!s[i].energy_ok)
            why = "no energy counter (NVML does not give one for this GPU)";
    for (size_t i = 1; i < n && why == NULL; i++) {
        uint64_t step = s[i].energy_mj - s[i - 1].energy_mj; /* modulo 2^64: a wrap is fine */
        if (step > ENERGY_MAX_STEP_MJ)
            why = "the energy counter went back during the run (the driver reloaded?)";
        else
            e[i] = e[i - 1] + (double)step;
    }
    double a, b;
    if (why == NULL && (n < 2 || !energy_at(s, e, n, t0, &a) || !energy_at(s, e, n, t1, &b)))
        why = "the energy samples do not cover the measured window";
    if (why != NULL) {
        d->energy_reason = strdup(why);
        return;
    }
    d->energy_j = (b - a) / 1000.0;
}

/* Adds the first k of a sample's PIDs to d's other_pids, each once. */
static void add_pids(struct cg_gpu_device *d, const uint32_t *pids, int32_t k)
{
    for (int32_t j = 0; j < k && j < CG_NVML_SAMPLE_OTHERS; j++) {
        bool known = false;
        for (size_t q = 0; q < d->n_other_pids; q++)
            known |= d->other_pids[q] == (int64_t)pids[j];
        if (!known && d->n_other_pids < CG_GPU_MAX_OTHERS)
            d->other_pids[d->n_other_pids++] = pids[j];
    }
}

/* Whether sample x shows another process (cg_nvml_summarize), its PIDs added to d. */
static bool another_process(const struct cg_nvml_sample *x, int64_t own_procs,
                            struct cg_gpu_device *d)
{
    int64_t ours_unseen = own_procs > x->n_own ? own_procs - x->n_own : 0;
    bool unseen_others = x->n_unseen > ours_unseen; /* which of them is not told: all listed */
    if (x->n_other > 0)
        add_pids(d, x->other, x->n_other);
    if (unseen_others)
        add_pids(d, x->unseen, x->n_unseen);
    return x->n_other > 0 || unseen_others;
}

int cg_nvml_summarize(const struct cg_nvml_sample *s, size_t n, int64_t t0_ns, int64_t t1_ns,
                      int64_t own_procs, struct cg_gpu_device *d)
{
    size_t first = n, last = 0; /* the samples used: [first, last] */
    for (size_t i = 0; i < n; i++) {
        if (s[i].t_ns >= t0_ns && s[i].t_ns <= t1_ns) {
            first = first < i ? first : i;
            last = i;
        }
    }
    if (first == n && n > 0) { /* a window shorter than the interval: its neighbours */
        first = 0;
        last = n - 1;
        for (size_t i = 0; i < n; i++)
            if (s[i].t_ns < t0_ns)
                first = i;
        for (size_t i = n; i-- > 0;)
            if (s[i].t_ns > t1_ns)
                last = i;
    }
    int64_t *clk = malloc((n ? n : 1) * sizeof(*clk));
    double *e = calloc(n ? n : 1, sizeof(*e));
    if (clk == NULL || e == NULL) {
        free(clk);
        free(e);
        return CG_ENOMEM;
    }
    size_t k = 0, km = 0, nt = 0, np = 0;
    bool reasons_ok = n > 0;
    d->samples = n > 0 ? (int64_t)(last - first + 1) : 0;
    for (int r = 0; r < CG_GPU_R_N; r++)
        d->reasons[r] = 0;
    d->other_samples = 0;
    d->power_min_w = d->power_max_w = NAN;
    d->temp_min_c = d->temp_max_c = -1;
    int64_t *mem = malloc((n ? n : 1) * sizeof(*mem));
    if (mem == NULL) {
        free(clk);
        free(e);
        return CG_ENOMEM;
    }
    bool procs_known = false;
    for (size_t i = first; n > 0 && i <= last; i++) {
        const struct cg_nvml_sample *x = &s[i];
        if (x->sm_mhz >= 0)
            clk[k++] = x->sm_mhz;
        if (x->mem_mhz >= 0)
            mem[km++] = x->mem_mhz;
        reasons_ok &= x->reasons_ok;
        for (int r = 0; r < CG_GPU_R_N; r++)
            d->reasons[r] += (x->reasons >> r) & 1u;
        if (x->temp_c >= 0) {
            d->temp_min_c = nt++ == 0 || x->temp_c < d->temp_min_c ? x->temp_c : d->temp_min_c;
            d->temp_max_c = x->temp_c > d->temp_max_c ? x->temp_c : d->temp_max_c;
        }
        if (x->power_mw >= 0) {
            double w = (double)x->power_mw / 1000.0;
            d->power_min_w = np == 0 || w < d->power_min_w ? w : d->power_min_w;
            d->power_max_w = np++ == 0 || w > d->power_max_w ? w : d->power_max_w;
        }
        if (x->n_other >= 0)
            procs_known = true;
        if (x->n_other >= 0 && another_process(x, own_procs, d))
            d->other_samples++;
    }
    if (!procs_known)
        d->other_samples = -1;
    if (!reasons_ok)
        for (int r = 0; r < CG_GPU_R_N; r++)
            d->reasons[r] = -1;
    d->sm_min_mhz = d->sm_median_mhz = d->sm_max_mhz = d->mem_median_mhz = -1;
    if (k > 0) {
        qsort(clk, k, sizeof(*clk), cmp_i64);
        d->sm_min_mhz = clk[0];
        d->sm_max_mhz = clk[k - 1];
        d->sm_median_mhz = clk[(k - 1) / 2];
    }
    if (km > 0) {
        qsort(mem, km, sizeof(*mem), cmp_i64);
        d->mem_median_mhz = mem[(km - 1) / 2];
    }
    window_energy(s, n, t0_ns, t1_ns, d, e);
    free(clk);
    free(mem);
    free(e);
    return 0;
}

int cg_nvml_sampler_state(const struct cg_nvml_sampler *s, const char *const *uuids,
                          size_t n_uuids, int64_t t0_ns, int64_t t1_ns, struct cg_gpu_state *g)
{
    cg_gpu_state_init(g);
    g->recorded = true;
    bool by_uuid = false;
    for (size_t i = 0; i < s->n_dev; i++)
        for (size_t k = 0; k < n_uuids; k++)
            by_uuid |= strcmp(s->dev[i].uuid, uuids[k]) == 0;
    for (size_t i = 0; i < s->n_dev && g->n_dev < CG_GPU_MAX_DEVICES; i++) {
        const struct series *d = &s->dev[i];
        bool used = false;
        for (size_t k = 0; by_uuid && k < n_uuids; k++)
            used |= strcmp(d->uuid, uuids[k]) == 0;
        for (size_t k = 0; !by_uuid && k < d->n; k++)
            used |= d->s[k].canary_seen;
        if (!used)
            continue;
        int64_t own_procs = 0; /* the shards naming it; none named: the canary's are seen */
        for (size_t k = 0; by_uuid && k < n_uuids; k++)
            own_procs += strcmp(d->uuid, uuids[k]) == 0;
        struct cg_gpu_device *out = &g->dev[g->n_dev++];
        memset(out, 0, sizeof(*out));
        out->index = (int64_t)i;
        out->uuid = strdup(d->uuid);
        if (out->uuid == NULL || cg_nvml_summarize(d->s, d->n, t0_ns, t1_ns, own_procs, out) != 0)
            return CG_ENOMEM;
    }
    double sum = 0.0;
    const char *why = g->n_dev == 0 ? "the canary used no GPU that NVML sees" : NULL;
    for (size_t i = 0; i < g->n_dev; i++) {
        if (!isfinite(g->dev[i].energy_j) && why == NULL)
            why = g->dev[i].energy_reason;
        sum += g->dev[i].energy_j;
    }
    if (why != NULL) {
        g->energy_reason = strdup(why);
        return g->energy_reason == NULL ? CG_ENOMEM : 0;
    }
    g->energy_j = sum;
    return 0;
}

bool cg_nvml_window(const struct cg_shard *shards, size_t n, int64_t warmup, int64_t steps,
                    int64_t *t0_ns, int64_t *t1_ns)
{
    bool found = false;
    for (size_t i = 0; i < n; i++) {
        const struct cg_shard *sh = &shards[i];
        size_t first = warmup > 0 ? (size_t)warmup : 0;
        if (first >= sh->n_steps || !sh->steps[first].seen)
            continue;
        size_t last = steps > 0 && first + (size_t)steps - 1 < sh->n_steps
                          ? first + (size_t)steps - 1
                          : sh->n_steps - 1;
        while (last > first && !sh->steps[last].seen)
            last--;
        int64_t a = sh->steps[first].end_ns - sh->steps[first].wall_ns, b = sh->steps[last].end_ns;
        *t0_ns = !found || a < *t0_ns ? a : *t0_ns;
        *t1_ns = !found || b > *t1_ns ? b : *t1_ns;
        found = true;
    }
    return found;
}

/* ---- one run ---------------------------------------------------------------------------- */

void cg_nvml_run_begin(struct cg_nvml_run *nr)
{
    memset(nr, 0, sizeof(*nr));
    struct cg_err err;
    cg_err_init(&err);
    const char *off = getenv(CG_NVML_ENV_OFF);
    if (off != NULL && strcmp(off, "0") == 0) {
        snprintf(nr->reason, sizeof(nr->reason), "NVML sampling off (" CG_NVML_ENV_OFF "=0)");
        return;
    }
    if (cg_nvml_open(&nr->nvml, nr->reason, sizeof(nr->reason)) != 0)
        return;
    if (cg_nvml_sampler_start(nr->nvml, CG_NVML_INTERVAL_MS, &nr->sampler, &err) != 0) {
        snprintf(nr->reason, sizeof(nr->reason), "NVML unavailable: %.200s", err.msg);
        cg_nvml_close(nr->nvml);
        nr->nvml = NULL;
    }
}

static int set_reason(char **dst, const char *why)
{
    free(*dst);
    *dst = strdup(why);
    return *dst == NULL ? CG_ENOMEM : 0;
}

int cg_nvml_run_mfu(struct cg_run *run, const struct cg_artifact *a)
{
    struct cg_gpu_state *g = &run->gpu;
    const struct cg_settings *st = &a->settings;
    g->mfu = g->peak_flops = NAN;
    if (st->flops_per_token <= 0)
        return set_reason(&g->mfu_reason, "not available: give --flops-per-token");
    if (g->reason != NULL || g->n_dev == 0)
        return set_reason(&g->mfu_reason, "not available: no SM clock (NVML did not see the "
                                          "canary's GPU)");
    const char *precision = st->precision != NULL ? st->precision : "bf16";
    double per_clock = isfinite(st->peak_flop_per_clock)
                           ? st->peak_flop_per_clock
                           : cg_gpu_peak_flop_per_clock(a->env.gpu_model, precision);
    if (!isfinite(per_clock))
        return set_reason(&g->mfu_reason, "not available: no peak for this GPU and precision "
                                          "(give --peak-flop-per-clock)");
    double mhz = 0.0;
    for (size_t i = 0; i < g->n_dev; i++) {
        if (g->dev[i].sm_median_mhz <= 0)
            return set_reason(&g->mfu_reason, "not available: no SM clock");
        mhz += (double)g->dev[i].sm_median_mhz / (double)g->n_dev;
    }
    g->peak_flops = per_clock * mhz * 1e6 * (double)g->n_dev;
    g->mfu = cg_gpu_mfu((double)st->flops_per_token, run->summary.tokens_per_sec, per_clock, mhz,
                        g->n_dev);
    free(g->mfu_reason);
    g->mfu_reason = NULL;
    if (!isfinite(g->mfu))
        return set_reason(&g->mfu_reason, "not available: the steps carry no tokens");
    return 0;
}

size_t cg_nvml_shard_uuids(const struct cg_shard *shards, size_t n, const char **out, size_t cap)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < shards[i].n_uuids && m < cap; k++) {
            bool named = false; /* by an earlier shard of the same process */
            for (size_t j = 0; j < i && !named; j++)
                for (size_t q = 0; shards[j].pid == shards[i].pid && q < shards[j].n_uuids; q++)
                    named |= strcmp(shards[j].uuids[q].uuid, shards[i].uuids[k].uuid) == 0;
            if (!named)
                out[m++] = shards[i].uuids[k].uuid;
        }
    return m;
}

int cg_nvml_run_end(struct cg_nvml_run *nr, const struct cg_shard *shards, size_t n,
                    int64_t warmup, int64_t steps, struct cg_run *run, struct cg_artifact *a)
{
    int rc = 0;
    const char *uuids[CG_GPU_MAX_DEVICES * 4];
    size_t n_uuids = cg_nvml_shard_uuids(shards, n, uuids, sizeof(uuids) / sizeof(*uuids));
    cg_gpu_state_release(&run->gpu);
    run->gpu.recorded = true;
    if (nr->sampler == NULL) {
        rc = set_reason(&run->gpu.reason, nr->reason[0] ? nr->reason : "NVML unavailable") |
             set_reason(&run->gpu.energy_reason, nr->reason[0] ? nr->reason : "NVML unavailable");
        if (rc == 0 && !a->env.gpu_env.recorded) {
            a->env.gpu_env.recorded = true;
            rc = set_reason(&a->env.gpu_env.reason, run->gpu.reason);
        }
    } else {
        cg_nvml_sampler_stop(nr->sampler);
        int64_t t0 = 0, t1 = 0;
        if (!cg_nvml_window(shards, n, warmup, steps, &t0, &t1)) {
            run->gpu.recorded = true;
            rc = set_reason(&run->gpu.reason, "no measured step to line the samples up with");
        } else {
            rc = cg_nvml_sampler_state(nr->sampler, uuids, n_uuids, t0, t1, &run->gpu);
        }
        if (rc == 0 && !a->env.gpu_env.recorded)
            cg_nvml_env(nr->nvml, run->gpu.n_dev > 0 ? run->gpu.dev[0].uuid : NULL,
                        &a->env.gpu_env);
    }
    if (rc == 0)
        rc = cg_nvml_run_mfu(run, a);
    cg_nvml_sampler_free(nr->sampler);
    cg_nvml_close(nr->nvml);
    nr->sampler = NULL;
    nr->nvml = NULL;
    return rc != 0 ? CG_ENOMEM : 0;
}

int64_t cg_nvml_flops_from_log(const char *path)
{
    enum { CAP = 16 << 20 };
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    char line[512];
    size_t read = 0, k = sizeof(CG_NVML_FLOPS_LINE) - 1;
    int64_t found = -1;
    bool at_start = true;
    while (found < 0 && read < CAP && fgets(line, sizeof(line), f) != NULL) {
        size_t len = strlen(line);
        read += len;
        bool starts = at_start;
        at_start = len > 0 && line[len - 1] == '\n'; /* a long line continues in the next read */
        if (!starts || strncmp(line, CG_NVML_FLOPS_LINE, k) != 0)
            continue;
        char *end = NULL;
        const char *num = line + k;
        if (*num < '0' || *num > '9')
            continue;
        double v = strtod(num, &end);
        if (end != num && (*end == '\n' || *end == '\0' || *end == ' ') && v >= 1 && v <= 1e18 &&
            v == floor(v))
            found = (int64_t)v;
    }
    fclose(f);
    return found;
}
