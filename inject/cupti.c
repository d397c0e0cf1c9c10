/*
 * cupti: the CUDA side of the injection library (InitializeInjection, called by the driver in
 * cuInit when CUDA_INJECTION64_PATH names this library).
 *
 * libcupti is opened here with dlopen, so a process that only uses NVTX never loads it. Start-up
 * order: take the one CUPTI subscriber slot (cuptiSubscribe_v2 names the holder when it is
 * taken), register the CLOCK_MONOTONIC_RAW timestamp callback, register the buffer callbacks,
 * then enable CONCURRENT_KERNEL, MEMCPY, MEMCPY2, MEMSET, MEMORY2, OVERHEAD and DEVICE. When any
 * of this fails (no driver, no GPU, another profiler) CUPTI is left alone, the canary runs
 * unchanged, NVTX steps are still timed, and the shard says "gpu unavailable <reason>".
 *
 * Buffers: CG_BUF_BYTES each, 8-byte aligned, from a free list, at most the configured cap in
 * total; when the cap is reached CUPTI gets no buffer and drops records, which are counted.
 * Records are reduced by aggregate.c under one mutex, in batches of record pointers; results reach the shard as deltas after
 * every completed buffer, at every step end (after a flush) and at exit (forced flush).
 * Threading: CUPTI calls the buffer callbacks on its own thread or inside cuptiActivityFlushAll;
 * lock order is aggregation, then the shard writer. Nothing here prints or exits.
 */
#include "aggregate.h"
#include "inject.h"

#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CG_BUF_BYTES ((size_t)8 * 1024 * 1024)
#define CG_MAX_BUFFERS 512
#define CG_RECORD_BATCH 256 /* record pointers handed to the aggregation at once */

struct cupti_api {
    CUptiResult (*subscribe_v2)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *,
                                CUpti_SubscriberParams *);
    CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc,
                                      CUpti_BuffersCallbackCompleteFunc);
    CUptiResult (*register_timestamp)(CUpti_TimestampCallbackFunc);
    CUptiResult (*enable)(CUpti_ActivityKind);
    CUptiResult (*disable)(CUpti_ActivityKind);
    CUptiResult (*flush_all)(uint32_t);
    CUptiResult (*flush_period)(uint32_t);
    CUptiResult (*next_record)(uint8_t *, size_t, CUpti_Activity **);
    CUptiResult (*dropped)(CUcontext, uint32_t, size_t *);
    CUptiResult (*result_string)(CUptiResult, const char **);
};

static struct cupti_api g_api;
static _Atomic bool g_running;
static pthread_mutex_t g_agg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cg_agg g_agg;
static _Atomic int64_t g_dropped;
static _Atomic int64_t g_starved; /* buffer requests refused at the cap */

static pthread_mutex_t g_buf_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *g_free[CG_MAX_BUFFERS];
static size_t g_n_free, g_n_allocated, g_max_buffers;

static const char *result_text(CUptiResult r)
{
    const char *s = NULL;
    if (g_api.result_string == NULL || g_api.result_string(r, &s) != CUPTI_SUCCESS || s == NULL)
        return "unknown CUPTI error";
    return s;
}

static uint64_t CUPTIAPI timestamp_cb(void)
{
    return cg_inject_now_ns();
}

static void CUPTIAPI subscriber_cb(void *userdata, CUpti_CallbackDomain domain,
                                   CUpti_CallbackId cbid, const void *data)
{
    (void)userdata;
    (void)domain;
    (void)cbid;
    (void)data; /* no callback is enabled: the subscription only holds the slot */
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    uint8_t *b = NULL;
    pthread_mutex_lock(&g_buf_lock);
    if (g_n_free > 0) {
        b = g_free[--g_n_free];
    } else if (g_n_allocated < g_max_buffers) {
        b = aligned_alloc(8, CG_BUF_BYTES);
        if (b != NULL)
            g_n_allocated++;
    }
    pthread_mutex_unlock(&g_buf_lock);
    if (b == NULL)
        atomic_fetch_add(&g_starved, 1);
    *buffer = b;
    *size = b ? CG_BUF_BYTES : 0;
    *max_records = 0;
}

/* Writes the trace events held since the last call, within the trace's event cap. Called with
 * the aggregation locked. */
static void write_trace(void)
{
    static char line[CG_AGG_TRACE_LINE_MAX];
    struct cg_agg *a = &g_agg;
    if (a->trace_dropped > 0) {
        cg_inject_trace_dropped(a->trace_dropped);
        a->trace_dropped = 0;
    }
    if (a->n_trace == 0)
        return;
    cg_inject_lock();
    for (size_t i = 0; i < a->n_trace; i++) {
        if (!cg_inject_trace_take())
            continue;
        size_t n = cg_agg_trace_format(&a->trace[i], line, sizeof(line));
        cg_inject_append_bytes(line, n);
    }
    cg_inject_unlock();
    a->n_trace = 0;
}

/* Writes what changed since the last call. Called with the aggregation locked. */
static void write_deltas(void)
{
    struct cg_agg *a = &g_agg;
    static const char *const kinds[] = {"kernel", "memcpy", "memset"};
    cg_inject_lock();
    for (size_t i = 0; i < a->n_ops; i++) {
        struct cg_agg_op *o = &a->ops[i];
        if (o->calls == o->written_calls)
            continue;
        cg_inject_append("o %s %lld %lld ", kinds[o->kind], (long long)(o->calls - o->written_calls),
                         (long long)(o->total_ns - o->written_ns));
        cg_inject_append_name(o->name);
        cg_inject_append("\n");
        o->written_calls = o->calls;
        o->written_ns = o->total_ns;
    }
    for (size_t i = 0; i < a->n_steps; i++) {
        struct cg_agg_step *s = &a->steps[i];
        if (s->busy_ns != s->busy_written) {
            cg_inject_append("b %zu %lld\n", i, (long long)(s->busy_ns - s->busy_written));
            s->busy_written = s->busy_ns;
        }
    }
    for (size_t i = 0; i < a->n_devices; i++) {
        struct cg_agg_device *d = &a->devices[i];
        if (d->peak != d->written_peak) {
            cg_inject_append("m %u %lld\n", d->id, (long long)d->peak);
            d->written_peak = d->peak;
        }
    }
    cg_inject_append("c %lld %lld %lld\n", (long long)a->records,
                     (long long)atomic_load(&g_dropped), (long long)a->zero_ts);
    cg_inject_unlock();
    write_trace();
}

static void device_record(const CUpti_Activity *rec)
{
    const CUpti_ActivityDevice5 *d = (const CUpti_ActivityDevice5 *)(const void *)rec;
    cg_inject_lock();
    cg_inject_append("device %u ", d->id);
    cg_inject_append_name(d->name ? d->name : "unknown GPU");
    cg_inject_append("\n");
    cg_inject_unlock();
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid)
{
    (void)size;
    CUpti_Activity *rec = NULL;
    const CUpti_Activity *batch[CG_RECORD_BATCH];
    size_t n = 0;
    pthread_mutex_lock(&g_agg_lock);
    while (valid > 0 && g_api.next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
        if (rec->kind == CUPTI_ACTIVITY_KIND_DEVICE) {
            device_record(rec);
            continue;
        }
        batch[n++] = rec;
        if (n == CG_RECORD_BATCH) {
            cg_agg_records(&g_agg, batch, n);
            n = 0;
        }
    }
    cg_agg_records(&g_agg, batch, n);
    pthread_mutex_unlock(&g_agg_lock);
    size_t dropped = 0;
    if (g_api.dropped(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped > 0)
        atomic_fetch_add(&g_dropped, (int64_t)dropped);
    pthread_mutex_lock(&g_buf_lock);
    if (g_n_free < CG_MAX_BUFFERS)
        g_free[g_n_free++] = buffer;
    else
        free(buffer);
    pthread_mutex_unlock(&g_buf_lock);
    pthread_mutex_lock(&g_agg_lock);
    cg_agg_settle(&g_agg, false);
    write_deltas();
    pthread_mutex_unlock(&g_agg_lock);
}

void cg_gpu_step_begin(int64_t index, uint64_t start_ns)
{
    if (!atomic_load_explicit(&g_running, memory_order_relaxed))
        return;
    pthread_mutex_lock(&g_agg_lock);
    cg_agg_step_begin(&g_agg, index, start_ns);
    pthread_mutex_unlock(&g_agg_lock);
}

void cg_gpu_step_end(int64_t index, uint64_t end_ns)
{
    if (!atomic_load_explicit(&g_running, memory_order_relaxed))
        return;
    pthread_mutex_lock(&g_agg_lock);
    cg_agg_step_end(&g_agg, index, end_ns);
    pthread_mutex_unlock(&g_agg_lock);
    g_api.flush_all(0);
}

void cg_gpu_flush(bool forced)
{
    if (!atomic_load(&g_running))
        return;
    g_api.flush_all(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
    pthread_mutex_lock(&g_agg_lock);
    cg_agg_settle(&g_agg, forced);
    write_deltas();
    if (forced && atomic_load(&g_starved) > 0) {
        cg_inject_lock();
        cg_inject_append("w CUPTI buffer cap reached %lld times: records were dropped "
                         "(raise " CG_ENV_BUFFER_MB ")\n", (long long)atomic_load(&g_starved));
        cg_inject_unlock();
    }
    pthread_mutex_unlock(&g_agg_lock);
}

static void unavailable(const char *what, const char *detail)
{
    cg_inject_lock();
    cg_inject_append("gpu unavailable ");
    cg_inject_append_name(what);
    if (detail != NULL) {
        cg_inject_append_name(": ");
        cg_inject_append_name(detail);
    }
    cg_inject_append("\n");
    cg_inject_unlock();
}

#define LOAD(field, sym)                                                                         \
    do {                                                                                         \
        void *p_ = dlsym(h, sym);                                                                \
        if (p_ == NULL)                                                                          \
            return sym;                                                                          \
        memcpy(&g_api.field, &p_, sizeof(p_));                                                   \
    } while (0)

/* Opens libcupti and resolves the API; returns NULL, or the name of what is missing. */
static const char *load_cupti(void)
{
    static const char *const paths[] = {CG_CUPTI_PATH, "libcupti.so.13", "libcupti.so"};
    void *h = NULL;
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]) && h == NULL; i++)
        h = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
    if (h == NULL)
        return "libcupti";
    LOAD(result_string, "cuptiGetResultString");
    LOAD(subscribe_v2, "cuptiSubscribe_v2");
    LOAD(register_callbacks, "cuptiActivityRegisterCallbacks");
    LOAD(register_timestamp, "cuptiActivityRegisterTimestampCallback");
    LOAD(enable, "cuptiActivityEnable");
    LOAD(disable, "cuptiActivityDisable");
    LOAD(flush_all, "cuptiActivityFlushAll");
    LOAD(flush_period, "cuptiActivityFlushPeriod");
    LOAD(next_record, "cuptiActivityGetNextRecord");
    LOAD(dropped, "cuptiActivityGetNumDroppedRecords");
    return NULL;
}

static void record_cuda_version(void)
{
    int (*get)(int *) = NULL;
    void *sym = dlsym(RTLD_DEFAULT, "cuDriverGetVersion");
    int v = 0;
    memcpy(&get, &sym, sizeof(get));
    if (get == NULL || get(&v) != 0 || v <= 0)
        return;
    cg_inject_lock();
    cg_inject_append("cuda %d.%d\n", v / 1000, (v % 1000) / 10);
    cg_inject_unlock();
}

static void start_cupti(void)
{
    static const CUpti_ActivityKind kinds[] = {
        CUPTI_ACTIVITY_KIND_DEVICE,  CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
        CUPTI_ACTIVITY_KIND_MEMCPY,  CUPTI_ACTIVITY_KIND_MEMCPY2,
        CUPTI_ACTIVITY_KIND_MEMSET,  CUPTI_ACTIVITY_KIND_MEMORY2,
        CUPTI_ACTIVITY_KIND_OVERHEAD};
    const struct cg_inject_config *cfg = cg_inject_config();
    if (!cfg->cupti) {
        unavailable("CUPTI disabled (" CG_ENV_CUPTI "=0)", NULL);
        return;
    }
    const char *missing = load_cupti();
    if (missing != NULL) {
        unavailable("cannot load libcupti", missing);
        return;
    }
    if (cg_agg_init(&g_agg, cfg->warmup) != 0 ||
        (cfg->trace_first >= 0 && cg_agg_trace(&g_agg, cfg->trace_first, cfg->trace_last,
                                               (size_t)cfg->trace_max_events) != 0)) {
        unavailable("out of memory", NULL);
        return;
    }
    g_max_buffers = (size_t)(cfg->buffer_cap_bytes / (int64_t)CG_BUF_BYTES);
    if (g_max_buffers < 1)
        g_max_buffers = 1;
    if (g_max_buffers > CG_MAX_BUFFERS)
        g_max_buffers = CG_MAX_BUFFERS;

    CUpti_SubscriberHandle sub = NULL;
    char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN * 2] = "";
    CUpti_SubscriberParams params;
    memset(&params, 0, sizeof(params));
    params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    params.subscriberName = "canary-gate";
    params.oldSubscriberName = holder;
    params.oldSubscriberSize = sizeof(holder);
    CUptiResult r = g_api.subscribe_v2(&sub, subscriber_cb, NULL, &params);
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
        unavailable("another profiler holds the CUPTI subscriber slot",
                    holder[0] ? holder : "unknown tool");
        return;
    }
    if (r != CUPTI_SUCCESS) {
        /* the driver calls us from cuInit, so libcuda is loaded unless we were called by hand */
        void *drv = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
        unavailable(drv ? "CUPTI cannot start" : "no CUDA driver loaded; CUPTI cannot start",
                    result_text(r));
        if (drv != NULL)
            dlclose(drv);
        return;
    }
    if ((r = g_api.register_timestamp(timestamp_cb)) != CUPTI_SUCCESS ||
        (r = g_api.register_callbacks(buffer_requested, buffer_completed)) != CUPTI_SUCCESS) {
        unavailable("CUPTI cannot start", result_text(r));
        return;
    }
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        if ((r = g_api.enable(kinds[i])) != CUPTI_SUCCESS) {
            for (size_t j = 0; j < i; j++)
                g_api.disable(kinds[j]);
            unavailable("CUPTI cannot enable activity tracing", result_text(r));
            return;
        }
    }
    g_api.flush_period(1000);
    atomic_store(&g_running, true);
    cg_inject_lock();
    cg_inject_append("gpu ok\n");
    cg_inject_unlock();
    record_cuda_version();
}

/* Called by the CUDA driver during cuInit; always returns 1 so CUDA starts whatever happens. */
CG_INJECT_API int InitializeInjection(void);

int InitializeInjection(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    if (cg_inject_start())
        pthread_once(&once, start_cupti);
    return 1;
}
