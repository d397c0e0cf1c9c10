/*
 * cupti: the CUDA side of the injection library (InitializeInjection, called by the driver in
 * cuInit when CUDA_INJECTION64_PATH names this library).
 *
 * libcupti is opened here with dlopen, so a process that only uses NVTX never loads it. Which
 * file: a copy already mapped in the process (dlopen of the soname with RTLD_NOLOAD: PyTorch's
 * CUDA wheels bring their own, and a second copy would be a second CUPTI), else
 * CANARY_GATE_CUPTI_PATH, else the toolkit's library found at build time, else the soname; the
 * shard says which ("cupti HOW PATH"). libcuda is never opened: the driver that called us is
 * found with RTLD_NOLOAD and its cuDriverGetVersion and context calls are taken from that handle.
 *
 * Start-up order: take the one CUPTI subscriber slot (cuptiSubscribe_v2 names the holder when it
 * is taken), turn off CUPTI 13's per-thread activity buffers (one_buffer), register the
 * CLOCK_MONOTONIC_RAW timestamp callback, register the buffer callbacks,
 * enable the required activity kinds (CONCURRENT_KERNEL, MEMCPY, MEMSET, MEMORY2), then the
 * optional ones (DEVICE, MEMCPY2, OVERHEAD, SYNCHRONIZATION, JIT), then the subscriber's
 * callbacks (the resource domain's CUPTI_CBID_RESOURCE_MODULE_LOADED, the API functions that give
 * calls a place, and with SYNCHRONIZATION the queries', which tell polls from synchronisations;
 * optional too). An optional
 * kind, the callback or the timestamp callback that fails is a "w" line and is skipped. Any other
 * failure (no driver, no GPU, another profiler, a required kind) disables what was enabled,
 * unsubscribes, leaves the canary unchanged with its NVTX steps still timed, and the shard says
 * "gpu unavailable <reason>".
 *
 * Counts ("n I NAME DELTA", aggregate.h): once started, "nc" names the GPU counts this process
 * measures: kernels, copies (when MEMCPY2 is on as well as MEMCPY: peer copies are copies),
 * dtoh_pageable and its bytes, allocs and frees always; graph_kernels when the loaded libcupti
 * reports the API major version of these headers (cuptiGetVersion: graphId is read at this
 * version's offset, see aggregate_hot.c; otherwise a "w" line); the sync_* counts and sync_ns with
 * SYNCHRONIZATION on; jit with JIT on; module_loads with the callback on. A count it does not name
 * is unknown, not 0. The module load callback counts a load at the library's clock under the
 * aggregation lock and does nothing else.
 *
 * Flushing. cuptiActivityFlushAll is called only (a) on the library's own flush thread, which
 * is never a CUDA host-function thread or a CUPTI callback thread: step ends and the end of the
 * measured window hand it a request and return; and (b) in the exit handler, unless the exiting
 * thread is inside one of our CUPTI buffer callbacks (the thread-local t_in_cupti, set for the
 * length of each). A forked child never flushes (cg_inject_owner).
 * At the end of the measured window the flush thread synchronises every context the process
 * created (the resource domain's CONTEXT_CREATED and CONTEXT_DESTROY_STARTING callbacks keep the
 * list, at most CG_CONTEXTS) and the one that was current on the thread that ended the last
 * measured step (cuCtxGetCurrent there, the one CUDA call made on a canary thread): each with
 * cuCtxSetCurrent + cuCtxSynchronize on the flush thread, from the driver's handle, for
 * cuptiActivityFlushAll does not wait for work still running, and another GPU's last kernels
 * would miss the window. Then it forces a flush, writes the totals and "done N"; the thread that
 * ended the step waits for that (at most CG_WAIT_S seconds), so "done" is in the shard when the
 * step end returns.
 *
 * Exit order. Exit handlers run in reverse order of registration, and libcupti registers its
 * own exit-time destructors when it is loaded (and C++ statics that it builds lazily, when it
 * builds them). The GPU exit handler (gpu_at_exit: stop the flush thread, forced flush, final
 * totals; when the flush thread does not stop within CG_WAIT_S, no flush and a "w" line) is
 * registered after libcupti is loaded and subscribed, and registered again by the flush thread
 * after its first flush following a step end and after the end of the measured window, so it
 * runs before whatever libcupti registered up to then; it runs once (a flag), so the earlier
 * registrations do nothing. The core's handler, registered before libcupti was loaded, runs last
 * and never calls into CUPTI.
 * Fork. glibc's fork does not reset the lock of its exit-handler list, so a child forked while
 * another thread is registering an exit handler hangs in exit(). The flush thread registers
 * handlers (ours, and libcupti's lazy ones inside its first flush) at two moments only, and the
 * thread that ended the step waits for both: the end of the measured window (above) and the
 * first flush, which the first step end waits for (at most CG_WAIT_S, outside any step). So a
 * canary that forks from the thread that runs its steps never forks inside one.
 *
 * Buffers: CG_BUF_BYTES each, 8-byte aligned, from a free list, at most the configured cap in
 * total; when the cap is reached CUPTI gets no buffer and drops records, which are counted.
 * Records are reduced by the aggregation (aggregate.h) under one mutex (the aggregation lock), in
 * batches of record pointers; results reach the shard as deltas after every completed buffer, after
 * every flush and at exit.
 *
 * Step boundaries and module loads never take the aggregation lock: a canary thread would wait
 * there, inside its timed step, for a whole buffer's reduction. They are stamped and queued under
 * a lock of their own (g_step_lock: a clock read and a store), and applied to the aggregation in
 * the order queued by whoever next holds the aggregation lock: before each buffer is reduced,
 * before each settle (every flush, every completed buffer) and at exit (apply_queued). A step
 * boundary's time is read under that lock, and so is the delivery horizon of a buffer, taken as
 * the queue is emptied: every boundary stamped before a buffer's horizon is applied before the
 * buffer's records, and none stamped after it can matter to them (no record of the buffer started
 * later), so records are assigned to steps as if each boundary had been applied at once. A full
 * queue (CG_QUEUE events without a buffer or a flush) is emptied by the thread that found it
 * full, under the aggregation lock: the old wait, only then.
 * Lock order: aggregation, then the step queue, then the shard writer. Nothing here prints or
 * exits.
 */
#define _GNU_SOURCE /* dlinfo, struct link_map */

#include "aggregate.h"
#include "inject.h"

#include <cupti.h>
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CG_BUF_BYTES ((size_t)8 * 1024 * 1024)
#define CG_MAX_BUFFERS 512
#define CG_RECORD_BATCH 256 /* record pointers handed to the aggregation at once */
#define CG_WAIT_S 10        /* longest wait for the flush thread (window end, exit) */
#define CG_QUEUE 1024       /* step boundaries and module loads queued between two applies */
#define CG_CONTEXTS 64      /* contexts synchronised at the end of the measured window */
#define CG_STR2(x) #x
#define CG_STR(x) CG_STR2(x)

struct cupti_api {
    CUptiResult (*subscribe_v2)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *,
                                CUpti_SubscriberParams *);
    CUptiResult (*unsubscribe)(CUpti_SubscriberHandle);
    CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc,
                                      CUpti_BuffersCallbackCompleteFunc);
    CUptiResult (*register_timestamp)(CUpti_TimestampCallbackFunc);
    CUptiResult (*set_attribute)(CUpti_ActivityAttribute, size_t *, void *); /* optional */
    CUptiResult (*enable)(CUpti_ActivityKind);
    CUptiResult (*disable)(CUpti_ActivityKind);
    CUptiResult (*flush_all)(uint32_t);
    CUptiResult (*flush_period)(uint32_t);
    CUptiResult (*next_record)(uint8_t *, size_t, CUpti_Activity **);
    CUptiResult (*dropped)(CUcontext, uint32_t, size_t *);
    CUptiResult (*result_string)(CUptiResult, const char **);
    CUptiResult (*enable_callback)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain,
                                   CUpti_CallbackId); /* optional: module loads */
    CUptiResult (*get_version)(uint32_t *);           /* optional: graph kernels */
    CUptiResult (*callback_name)(CUpti_CallbackDomain, uint32_t, const char **); /* optional:
                                                                                  * places */
};

/* From the libcuda handle already loaded (any may be NULL). */
struct cuda_api {
    void *handle;
    CUresult (*driver_version)(int *);
    CUresult (*ctx_get_current)(CUcontext *);
    CUresult (*ctx_set_current)(CUcontext);
    CUresult (*ctx_synchronize)(void);
};

/* An activity kind and the counts (bits of 1 << enum cg_agg_count) it is needed for: a count is
 * measured when every kind it needs is enabled. */
struct activity_kind {
    CUpti_ActivityKind kind;
    const char *name;
    bool required;
    uint32_t counts;
};

#define CG_COUNT(c) (1u << (c))
#define CG_SYNC_COUNTS                                                                             \
    (CG_COUNT(CG_AGG_N_SYNC_STREAM) | CG_COUNT(CG_AGG_N_SYNC_EVENT) |                              \
     CG_COUNT(CG_AGG_N_SYNC_CONTEXT) | CG_COUNT(CG_AGG_N_SYNC_WAIT) | CG_COUNT(CG_AGG_N_SYNC_NS))

static const struct activity_kind g_kinds[] = {
    {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL", true,
     CG_COUNT(CG_AGG_N_KERNELS) | CG_COUNT(CG_AGG_N_GRAPH_KERNELS) |
         CG_COUNT(CG_AGG_N_GRAPH_LAUNCHES) | CG_COUNT(CG_AGG_N_COMPUTE_NS) |
         CG_COUNT(CG_AGG_N_COPY_HIDDEN_NS)},
    {CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY", true,
     CG_COUNT(CG_AGG_N_COPIES) | CG_COUNT(CG_AGG_N_DTOH_PAGEABLE) |
         CG_COUNT(CG_AGG_N_DTOH_PAGEABLE_BYTES) | CG_COUNT(CG_AGG_N_COPY_NS) |
         CG_COUNT(CG_AGG_N_COPY_HIDDEN_NS)},
    {CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET", true,
     CG_COUNT(CG_AGG_N_COPY_NS) | CG_COUNT(CG_AGG_N_COPY_HIDDEN_NS)},
    {CUPTI_ACTIVITY_KIND_MEMORY2, "MEMORY2", true,
     CG_COUNT(CG_AGG_N_ALLOCS) | CG_COUNT(CG_AGG_N_FREES)},
    {CUPTI_ACTIVITY_KIND_DEVICE, "DEVICE", false, 0},
    {CUPTI_ACTIVITY_KIND_MEMCPY2, "MEMCPY2", false,
     CG_COUNT(CG_AGG_N_COPIES) | CG_COUNT(CG_AGG_N_COPY_NS) | CG_COUNT(CG_AGG_N_COPY_HIDDEN_NS)},
    {CUPTI_ACTIVITY_KIND_OVERHEAD, "OVERHEAD", false, 0},
    {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "SYNCHRONIZATION", false, CG_SYNC_COUNTS},
    {CUPTI_ACTIVITY_KIND_JIT, "JIT", false, CG_COUNT(CG_AGG_N_JIT)},
};
#define CG_N_KINDS (sizeof(g_kinds) / sizeof(g_kinds[0]))
_Static_assert(CG_AGG_COUNTS <= 32, "the measured counts are bits of a uint32_t");

static struct cupti_api g_api;
static struct cuda_api g_cuda;
static CUpti_SubscriberHandle g_subscriber;
static _Atomic bool g_running;
static bool g_collecting; /* records are reduced (guarded by the aggregation lock) */
static pthread_mutex_t g_agg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cg_agg g_agg;
static _Atomic int64_t g_dropped;
static _Atomic int64_t g_starved; /* buffer requests refused at the cap */
static int64_t g_starved_written;  /* guarded by the aggregation lock */
static uint32_t g_counted;         /* the counts measured (bits): aggregation lock */
static struct cg_agg_corr g_corr;  /* places of API calls (never freed: callbacks may still run) */
static struct cg_agg_corr g_queries; /* correlation ids of queries (cudaStreamQuery, ...) */
/* The API callbacks on for queries, one bit per callback id, [0] runtime, [1] driver: set before
 * each is enabled, read by the subscriber's callback. */
#define CG_CBID_BITS 4096
#define CG_CBID_GAP 64 /* ids without a name, past these headers' last, that end a domain's ids */
_Static_assert(CUPTI_RUNTIME_TRACE_CBID_SIZE <= CG_CBID_BITS &&
                   CUPTI_DRIVER_TRACE_CBID_SIZE <= CG_CBID_BITS,
               "the query bitmaps hold every callback id of these headers");
static _Atomic uint8_t g_query_cbid[2][CG_CBID_BITS / 8];

/* Step boundaries and module loads waiting for the aggregation (see the top): two arrays, the
 * canary's threads appending to g_queue[g_queue_cur] under g_step_lock, apply_queued swapping
 * them there and applying the other one under the aggregation lock (so it is never written while
 * being read: the next swap is under the aggregation lock too). */
enum queued_kind { QUEUED_BEGIN, QUEUED_END, QUEUED_MODULE_LOAD };
struct queued {
    uint64_t ns;   /* the library's clock, read under g_step_lock */
    int64_t index; /* the step (QUEUED_BEGIN, QUEUED_END) */
    uint32_t place; /* the loading thread's place (QUEUED_MODULE_LOAD) */
    enum queued_kind kind;
};
static pthread_mutex_t g_step_lock = PTHREAD_MUTEX_INITIALIZER;
static struct queued g_queue[2][CG_QUEUE];
static size_t g_queue_len; /* g_step_lock */
static int g_queue_cur;    /* g_step_lock */

/* The contexts the process created and has not begun to destroy (the resource callbacks), for
 * the end of the measured window; past CG_CONTEXTS, later ones are left out (g_contexts_full). */
static pthread_mutex_t g_ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static CUcontext g_contexts[CG_CONTEXTS];
static size_t g_n_contexts;  /* g_ctx_lock */
static bool g_contexts_full; /* g_ctx_lock */

static pthread_mutex_t g_buf_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *g_free[CG_MAX_BUFFERS];
static size_t g_n_free, g_n_allocated, g_max_buffers;

/* Depth of CUPTI callbacks into this file on the calling thread. */
static _Thread_local int t_in_cupti;

/* The flush thread and its requests, guarded by g_work_lock; g_done_cond (CLOCK_MONOTONIC)
 * signals g_done_written, set once the end of the measured window is in the shard, and
 * g_first_flushed. */
static pthread_mutex_t g_work_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_work_cond = PTHREAD_COND_INITIALIZER;
static pthread_cond_t g_done_cond;
static pthread_t g_worker;
static bool g_worker_started, g_work_flush, g_work_done, g_work_stop, g_done_written;
static bool g_first_flushed; /* the first flush and the registration after it are done */
static _Atomic bool g_first_step_ended;
static bool g_step_flush = true; /* a flush after every step end (set before the first step) */
static CUcontext g_done_ctx;
static _Atomic bool g_exit_flushed;
static _Atomic bool g_abandoned; /* the exit gave up waiting for a stuck flush thread */

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

/* Whether the API callback cbid of domain (runtime or driver) is a query's (enable_queries). */
static bool query_cbid(CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    return cbid < CG_CBID_BITS &&
           (atomic_load_explicit(&g_query_cbid[domain == CUPTI_CB_DOMAIN_DRIVER_API][cbid / 8],
                                 memory_order_relaxed) >>
            (cbid % 8)) &
               1u;
}

/* Applies the queued step boundaries and module loads to the aggregation, in the order queued
 * (dropped once records are no longer collected). Returns the library's clock read as the queue
 * was taken: every event stamped before it is applied, so it is a delivery horizon for the
 * records of a buffer completed before it (cg_agg_now). Called with the aggregation locked. */
static uint64_t apply_queued(void)
{
    pthread_mutex_lock(&g_step_lock);
    const struct queued *q = g_queue[g_queue_cur];
    size_t n = g_queue_len;
    g_queue_cur ^= 1;
    g_queue_len = 0;
    uint64_t now = cg_inject_now_ns();
    pthread_mutex_unlock(&g_step_lock);
    for (size_t i = 0; g_collecting && i < n; i++) {
        switch (q[i].kind) {
        case QUEUED_BEGIN:
            cg_agg_step_begin(&g_agg, q[i].index, q[i].ns);
            break;
        case QUEUED_END:
            cg_agg_step_end(&g_agg, q[i].index, q[i].ns);
            break;
        case QUEUED_MODULE_LOAD:
            cg_agg_module_load(&g_agg, q[i].ns, q[i].place);
            break;
        }
    }
    return now;
}

/* Queues an event stamped with the library's clock, which it returns. A full queue is applied
 * here first, under the aggregation lock (see the top). */
static uint64_t queue_event(enum queued_kind kind, int64_t index, uint32_t place)
{
    for (;;) {
        pthread_mutex_lock(&g_step_lock);
        if (g_queue_len < CG_QUEUE) {
            uint64_t ns = cg_inject_now_ns();
            g_queue[g_queue_cur][g_queue_len++] = (struct queued){ns, index, place, kind};
            pthread_mutex_unlock(&g_step_lock);
            return ns;
        }
        pthread_mutex_unlock(&g_step_lock);
        pthread_mutex_lock(&g_agg_lock);
        apply_queued();
        pthread_mutex_unlock(&g_agg_lock);
    }
}

/* A context was created (created) or begins to be destroyed: kept in, or taken out of, the
 * contexts synchronised at the end of the measured window. */
static void context_note(CUcontext ctx, bool created)
{
    pthread_mutex_lock(&g_ctx_lock);
    size_t i = 0;
    while (i < g_n_contexts && g_contexts[i] != ctx)
        i++;
    if (created && i == g_n_contexts) {
        if (g_n_contexts < CG_CONTEXTS)
            g_contexts[g_n_contexts++] = ctx;
        else
            g_contexts_full = true;
    } else if (!created && i < g_n_contexts) {
        g_contexts[i] = g_contexts[--g_n_contexts];
    }
    pthread_mutex_unlock(&g_ctx_lock);
}

/* The subscriber's callbacks. The entry of an API function that synchronises or copies
 * (enable_places): the calling thread's place among its NVTX ranges is noted under the call's
 * correlation id (a thread-local read and an atomic store; no lock); the entry of a query
 * (enable_queries): its correlation id is noted among the queries'. A module was loaded: queued
 * at the library's clock with the loading thread's place, counted in the step running then when
 * applied. A context was created or begins to be destroyed: noted (context_note). Nothing else:
 * no flush, no CUPTI call, no wait for a reduction. */
static void CUPTIAPI subscriber_cb(void *userdata, CUpti_CallbackDomain domain,
                                   CUpti_CallbackId cbid, const void *data)
{
    (void)userdata;
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API) {
        const CUpti_CallbackData *d = data;
        if (d == NULL || d->callbackSite != CUPTI_API_ENTER)
            return;
        if (query_cbid(domain, cbid))
            cg_agg_place_note(&g_queries, d->correlationId, 1);
        else if (!cg_nvtx_work_off()) /* the overhead toggle's off blocks place nothing */
            cg_agg_place_note(&g_corr, d->correlationId, cg_nvtx_place());
        return;
    }
    if (domain == CUPTI_CB_DOMAIN_RESOURCE && (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED ||
                                               cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING)) {
        const CUpti_ResourceData *r = data;
        if (r != NULL && r->context != NULL)
            context_note(r->context, cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
        return;
    }
    if (domain != CUPTI_CB_DOMAIN_RESOURCE || cbid != CUPTI_CBID_RESOURCE_MODULE_LOADED)
        return;
    uint32_t place = cg_nvtx_place(); /* the loading thread's */
    t_in_cupti++;
    queue_event(QUEUED_MODULE_LOAD, 0, place);
    t_in_cupti--;
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    uint8_t *b = NULL;
    t_in_cupti++;
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
    t_in_cupti--;
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

/* Writes what changed since the last call: op totals, busy time of the steps before the end of
 * the measured window, peaks, counters. Called with the aggregation locked. */
static void write_deltas(void)
{
    struct cg_agg *a = &g_agg;
    static const char *const kinds[] = {CG_SHARD_KIND_KERNEL, CG_SHARD_KIND_MEMCPY,
                                        CG_SHARD_KIND_MEMSET};
    cg_inject_lock();
    for (size_t i = 0; i < a->n_ops; i++) {
        struct cg_agg_op *o = &a->ops[i];
        if (o->calls == o->written_calls)
            continue;
        cg_inject_append(CG_SHARD_KEY_OP " %s %lld %lld ", kinds[o->kind],
                         (long long)(o->calls - o->written_calls),
                         (long long)(o->total_ns - o->written_ns));
        cg_inject_append_name(o->name);
        cg_inject_append("\n");
        o->written_calls = o->calls;
        o->written_ns = o->total_ns;
    }
    for (size_t i = 0; i < a->n_steps && (int64_t)i < a->end_step; i++) {
        struct cg_agg_step *s = &a->steps[i];
        if (s->busy_ns != s->busy_written) {
            cg_inject_append(CG_SHARD_KEY_BUSY " %zu %lld\n", i,
                             (long long)(s->busy_ns - s->busy_written));
            s->busy_written = s->busy_ns;
        }
        for (int c = 0; c < CG_AGG_COUNTS; c++) {
            if (s->count[c] == s->count_written[c] || !(g_counted & CG_COUNT(c)))
                continue;
            cg_inject_append(CG_SHARD_KEY_COUNT " %zu %s %lld\n", i,
                             cg_agg_count_name((enum cg_agg_count)c),
                             (long long)(s->count[c] - s->count_written[c]));
            s->count_written[c] = s->count[c];
        }
    }
    for (size_t i = 0; i < a->n_places; i++) {
        struct cg_agg_place *p = &a->places[i];
        const char *name = cg_nvtx_place_name(p->place);
        if (p->calls == p->written || name == NULL)
            continue;
        cg_inject_append(CG_SHARD_KEY_COUNT_PLACE " %s %s %lld ", cg_agg_count_name(p->count),
                         p->place & CG_PLACE_AFTER ? CG_SHARD_PLACE_AFTER : CG_SHARD_PLACE_IN,
                         (long long)(p->calls - p->written));
        cg_inject_append_name(name);
        cg_inject_append("\n");
        p->written = p->calls;
    }
    for (size_t i = 0; i < a->n_devices; i++) {
        struct cg_agg_device *d = &a->devices[i];
        if (d->peak != d->written_peak) {
            cg_inject_append(CG_SHARD_KEY_MEM " %u %lld\n", d->id, (long long)d->peak);
            d->written_peak = d->peak;
        }
    }
    static bool places_warned;
    if (a->places_lost > 0 && !places_warned) {
        cg_inject_append(CG_SHARD_KEY_WARNING " more than %d places of synchronisations, "
                                              "copies, allocations and module loads: the "
                                              "others are not placed\n",
                         CG_AGG_PLACES);
        places_warned = true;
    }
    static bool lanes_warned;
    if (a->lanes_shared > 0 && !lanes_warned) {
        cg_inject_append(CG_SHARD_KEY_WARNING " more than %d GPUs (or no memory for one): the "
                                              "GPU time of the others is kept with the %dth's\n",
                         CG_AGG_LANES, CG_AGG_LANES);
        lanes_warned = true;
    }
    static bool graphs_warned;
    if (a->graphs_full && !graphs_warned) {
        cg_inject_append(CG_SHARD_KEY_WARNING " more than %d CUDA graphs: the launches of the "
                                              "others are not counted\n",
                         CG_AGG_GRAPHS / 4 * 3);
        graphs_warned = true;
    }
    static int64_t written[7] = {-1};
    const int64_t c[7] = {a->records,       atomic_load(&g_dropped), a->zero_ts, a->outside_steps,
                          a->inside_steps,  a->late_mem,             a->overhead_ns};
    if (memcmp(c, written, sizeof(c)) != 0) {
        cg_inject_append(CG_SHARD_KEY_COUNTERS " %lld %lld %lld %lld %lld %lld %lld\n",
                         (long long)c[0], (long long)c[1], (long long)c[2], (long long)c[3],
                         (long long)c[4], (long long)c[5], (long long)c[6]);
        memcpy(written, c, sizeof(c));
    }
    cg_inject_unlock();
    write_trace();
}

/* "device ID NAME", and "uuid ID GPU-..." when the record names the GPU (the UUID lies just
 * before the name, where it has been since the device record's second version): peak memory is
 * merged by it, as the CUDA id is 0 in every process given one GPU. */
static void device_record(const CUpti_Activity *rec)
{
    const CUpti_ActivityDevice5 *d = (const CUpti_ActivityDevice5 *)(const void *)rec;
    const unsigned char *u = (const unsigned char *)d->uuid.bytes;
    bool named = false;
    for (size_t i = 0; i < sizeof(d->uuid.bytes); i++)
        named |= u[i] != 0;
    cg_inject_lock();
    cg_inject_append(CG_SHARD_KEY_DEVICE " %u ", d->id);
    cg_inject_append_name(d->name ? d->name : "unknown GPU");
    cg_inject_append("\n");
    if (named)
        cg_inject_append(CG_SHARD_KEY_DEVICE_UUID " %u GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-"
                                                  "%02x%02x-%02x%02x%02x%02x%02x%02x\n",
                         d->id, u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10],
                         u[11], u[12], u[13], u[14], u[15]);
    cg_inject_unlock();
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid)
{
    (void)size;
    CUpti_Activity *rec = NULL;
    const CUpti_Activity *batch[CG_RECORD_BATCH];
    size_t n = 0;
    t_in_cupti++;
    pthread_mutex_lock(&g_agg_lock);
    bool collecting = g_collecting; /* false once CUPTI was given up: the buffer is only kept */
    uint64_t horizon = apply_queued(); /* the boundaries before the records (see the top) */
    if (collecting)
        cg_agg_now(&g_agg, horizon);
    while (collecting && valid > 0 && g_api.next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
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
    if (g_collecting) {
        apply_queued();
        cg_agg_settle(&g_agg, false);
        write_deltas();
    }
    pthread_mutex_unlock(&g_agg_lock);
    t_in_cupti--;
}

/* Flushes CUPTI with flag (never from a CUPTI callback or a forked child) and writes the
 * results; final settles everything held. */
static void gpu_flush(uint32_t flag, bool final)
{
    if (t_in_cupti == 0 && cg_inject_owner())
        g_api.flush_all(flag);
    pthread_mutex_lock(&g_agg_lock);
    if (atomic_load(&g_abandoned)) { /* a stuck flush returning after the exit went on */
        pthread_mutex_unlock(&g_agg_lock);
        return;
    }
    apply_queued();
    cg_agg_settle(&g_agg, final);
    write_deltas();
    int64_t starved = atomic_load(&g_starved);
    if (final && starved != g_starved_written) {
        g_starved_written = starved;
        cg_inject_lock();
        cg_inject_append(CG_SHARD_KEY_WARNING
                         " CUPTI buffer cap reached %lld times: records were dropped "
                         "(raise " CG_ENV_BUFFER_MB ")\n",
                         (long long)starved);
        cg_inject_unlock();
    }
    pthread_mutex_unlock(&g_agg_lock);
}

/* --- the flush thread ---------------------------------------------------------------------- */

static void gpu_at_exit(void);
static void warn(const char *what, const char *detail);

/* The end of the measured window: every context the process created and the ending thread's
 * (ctx, NULL when it had none) synchronised, a forced flush, everything settled and written, then
 * "done". A context destroyed meanwhile is refused by cuCtxSetCurrent and skipped. */
static void finish_measurement(CUcontext ctx)
{
    CUcontext all[CG_CONTEXTS + 1];
    size_t n = 0;
    if (ctx != NULL)
        all[n++] = ctx;
    pthread_mutex_lock(&g_ctx_lock);
    for (size_t i = 0; i < g_n_contexts; i++)
        if (g_contexts[i] != ctx)
            all[n++] = g_contexts[i];
    bool full = g_contexts_full;
    pthread_mutex_unlock(&g_ctx_lock);
    if (full)
        warn("more than " CG_STR(CG_CONTEXTS) " CUDA contexts", "the end of the measured window "
             "synchronised the first " CG_STR(CG_CONTEXTS) " (records of the others may miss it)");
    if (g_cuda.ctx_set_current != NULL && g_cuda.ctx_synchronize != NULL && n > 0) {
        for (size_t i = 0; i < n; i++)
            if (g_cuda.ctx_set_current(all[i]) == CUDA_SUCCESS)
                g_cuda.ctx_synchronize();
        g_cuda.ctx_set_current(NULL);
    }
    gpu_flush(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED, true);
    cg_inject_write_done();
}

static void *worker_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&g_work_lock);
    for (;;) {
        while (!g_work_flush && !g_work_done && !g_work_stop)
            pthread_cond_wait(&g_work_cond, &g_work_lock);
        bool flush = g_work_flush, done = g_work_done;
        CUcontext ctx = g_done_ctx;
        g_work_flush = g_work_done = false;
        if (!flush && !done)
            break; /* stopped, nothing left to do */
        pthread_mutex_unlock(&g_work_lock);
        if (done) {
            finish_measurement(ctx);
            /* after whatever CUPTI registered up to now (see the top) */
            cg_inject_atexit(gpu_at_exit);
            pthread_mutex_lock(&g_work_lock);
            g_done_written = true;
            g_first_flushed = true; /* the window's end flushed and registered too */
            pthread_cond_broadcast(&g_done_cond);
            pthread_mutex_unlock(&g_work_lock);
        } else {
            gpu_flush(0, false);
            if (!g_first_flushed) { /* only this thread writes it */
                cg_inject_atexit(gpu_at_exit);
                pthread_mutex_lock(&g_work_lock);
                g_first_flushed = true;
                pthread_cond_broadcast(&g_done_cond);
                pthread_mutex_unlock(&g_work_lock);
            }
        }
        pthread_mutex_lock(&g_work_lock);
    }
    pthread_mutex_unlock(&g_work_lock);
    return NULL;
}

/* Starts the flush thread with every signal blocked (signals stay the canary's). */
static bool worker_start(void)
{
    pthread_condattr_t attr;
    if (pthread_condattr_init(&attr) != 0)
        return false;
    bool cond_ok = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0 &&
                   pthread_cond_init(&g_done_cond, &attr) == 0;
    pthread_condattr_destroy(&attr);
    if (!cond_ok)
        return false;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    g_worker_started = pthread_create(&g_worker, NULL, worker_main, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return g_worker_started;
}

static void worker_request(bool done, CUcontext ctx)
{
    pthread_mutex_lock(&g_work_lock);
    if (done) {
        g_work_done = true;
        g_done_ctx = ctx;
    } else {
        g_work_flush = true;
    }
    pthread_cond_signal(&g_work_cond);
    pthread_mutex_unlock(&g_work_lock);
}

/* Lets the flush thread finish what it was asked (the end of the window included) and waits for
 * it, at most CG_WAIT_S (it may be stuck in the driver: a hung kernel, a host function waiting on
 * the canary). Returns false when it did not finish: it is left running and nothing more may be
 * flushed beside it. */
static bool worker_stop(void)
{
    if (!g_worker_started)
        return true;
    pthread_mutex_lock(&g_work_lock);
    g_work_stop = true;
    g_work_flush = false;
    pthread_cond_signal(&g_work_cond);
    pthread_mutex_unlock(&g_work_lock);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until); /* pthread_timedjoin_np's clock */
    until.tv_sec += CG_WAIT_S;
    if (pthread_timedjoin_np(g_worker, NULL, &until) != 0)
        return false;
    pthread_mutex_lock(&g_work_lock);
    g_worker_started = false;
    pthread_mutex_unlock(&g_work_lock);
    return true;
}

/* Registered after libcupti is loaded and subscribed, and again later (see the top); runs once,
 * in the process that started the library. */
static void gpu_at_exit(void)
{
    if (!atomic_load(&g_running) || !cg_inject_owner() || atomic_exchange(&g_exit_flushed, true))
        return;
    if (worker_stop()) {
        gpu_flush(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED, true);
        return;
    }
    pthread_mutex_lock(&g_agg_lock);
    atomic_store(&g_abandoned, true);
    g_collecting = false; /* buffers delivered from now on are only kept */
    pthread_mutex_unlock(&g_agg_lock);
    warn("flush thread did not finish within " CG_STR(CG_WAIT_S) " s at exit",
         "the last GPU records are not written");
}

/* Waits, at most CG_WAIT_S, until the flush thread has set *flag (guarded by g_work_lock). */
static void wait_worker(const bool *flag)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += CG_WAIT_S;
    pthread_mutex_lock(&g_work_lock);
    while (!*flag && g_worker_started &&
           pthread_cond_timedwait(&g_done_cond, &g_work_lock, &until) == 0)
        ;
    pthread_mutex_unlock(&g_work_lock);
}

/* Waits, at most CG_WAIT_S, until the flush thread has written the end of the measured window:
 * the step-ending thread returns to the canary only once "done" is in the shard, so a canary
 * that ends with _exit right after its last measured step keeps it. The step's end time is
 * already taken and no library lock is held, so the wait is outside the measurement; the work
 * itself stays on the flush thread (no driver call on a canary thread but cuCtxGetCurrent). */
static void wait_done(void)
{
    wait_worker(&g_done_written);
}

/* --- what nvtx.c and core.c call ----------------------------------------------------------- */

uint64_t cg_gpu_step_begin(int64_t index)
{
    if (!atomic_load_explicit(&g_running, memory_order_relaxed) || !cg_inject_owner())
        return cg_inject_now_ns();
    return queue_event(QUEUED_BEGIN, index, 0);
}

uint64_t cg_gpu_step_end(int64_t index)
{
    if (!atomic_load_explicit(&g_running, memory_order_relaxed) || !cg_inject_owner())
        return cg_inject_now_ns();
    uint64_t end_ns = queue_event(QUEUED_END, index, 0);
    bool first = !atomic_load_explicit(&g_first_step_ended, memory_order_relaxed) &&
                 !atomic_exchange(&g_first_step_ended, true);
    if (first || g_step_flush)
        worker_request(false, NULL);
    if (first)
        wait_worker(&g_first_flushed); /* exit handlers registered: see "Fork" at the top */
    return end_ns;
}

bool cg_gpu_measured(void)
{
    if (!atomic_load(&g_running) || !cg_inject_owner() || atomic_load(&g_exit_flushed))
        return false;
    CUcontext ctx = NULL;
    if (t_in_cupti == 0 && g_cuda.ctx_get_current != NULL &&
        g_cuda.ctx_get_current(&ctx) != CUDA_SUCCESS)
        ctx = NULL;
    worker_request(true, ctx);
    if (t_in_cupti == 0)
        wait_done();
    return true;
}

/* --- start --------------------------------------------------------------------------------- */

static void unavailable(const char *what, const char *detail)
{
    cg_inject_lock();
    cg_inject_append(CG_SHARD_KEY_GPU " " CG_SHARD_GPU_UNAVAILABLE " ");
    cg_inject_append_name(what);
    if (detail != NULL) {
        cg_inject_append_name(": ");
        cg_inject_append_name(detail);
    }
    cg_inject_append("\n");
    cg_inject_unlock();
}

/* "w WHAT: DETAIL" */
static void warn(const char *what, const char *detail)
{
    cg_inject_lock();
    cg_inject_append(CG_SHARD_KEY_WARNING " ");
    cg_inject_append_name(what);
    cg_inject_append_name(": ");
    cg_inject_append_name(detail != NULL ? detail : "unknown error");
    cg_inject_append("\n");
    cg_inject_unlock();
}

/* The next name of CANARY_GATE_CUPTI_OFF (a comma-separated list) from *s: its start, and its
 * length in *len; NULL at the end. */
static const char *next_off_name(const char **s, size_t *len)
{
    while (*s != NULL && **s == ',')
        (*s)++;
    if (*s == NULL || **s == '\0')
        return NULL;
    const char *name = *s;
    *len = strcspn(name, ",");
    *s = name + *len;
    return name;
}

/* Whether CANARY_GATE_CUPTI_OFF names PART: an optional part of the set-up the user left off, to
 * find what costs time (docs/collector.md). Each part left off is a "w" line, and the counts it
 * would have measured are left out of "nc". */
static bool part_off(const char *part)
{
    const char *s = getenv(CG_ENV_CUPTI_OFF), *name;
    size_t len, n = strlen(part);
    while ((name = next_off_name(&s, &len)) != NULL)
        if (len == n && strncmp(name, part, n) == 0) {
            warn("CUPTI set-up part left off (" CG_ENV_CUPTI_OFF ")", part);
            return true;
        }
    return false;
}

/* The parts CANARY_GATE_CUPTI_OFF may name besides the optional activity kinds. */
static const char *const g_off_parts[] = {"module_loads", "places", "one_buffer", "step_flush",
                                          "flush_period"};

static bool off_name_known(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof(g_off_parts) / sizeof(g_off_parts[0]); i++)
        if (strlen(g_off_parts[i]) == len && strncmp(g_off_parts[i], name, len) == 0)
            return true;
    for (size_t i = 0; i < CG_N_KINDS; i++)
        if (!g_kinds[i].required && strlen(g_kinds[i].name) == len &&
            strncmp(g_kinds[i].name, name, len) == 0)
            return true;
    return false;
}

/* A "w" line for each name in CANARY_GATE_CUPTI_OFF that is no part that can be left off. */
static void check_off_names(void)
{
    char text[64];
    const char *s = getenv(CG_ENV_CUPTI_OFF), *name;
    size_t len;
    while ((name = next_off_name(&s, &len)) != NULL)
        if (!off_name_known(name, len)) {
            size_t n = len < sizeof(text) - 1 ? len : sizeof(text) - 1;
            memcpy(text, name, n);
            text[n] = '\0';
            warn(CG_ENV_CUPTI_OFF " names no part that can be left off (ignored)", text);
        }
}

/* Communication kernels besides NCCL's, from CANARY_GATE_COMM_KERNELS; a "w" line when it is not
 * a list of name parts. */
static void comm_kernels(void)
{
    char why[160];
    if (cg_agg_comm_kernels(getenv(CG_ENV_COMM_KERNELS), why, sizeof(why)) != 0)
        warn(CG_ENV_COMM_KERNELS " ignored", why);
}

/* Opens libcupti (see the top); *how says which way, for the "cupti" line. */
static void *open_cupti(const char **how)
{
    void *h = dlopen(CG_CUPTI_SONAME, RTLD_NOW | RTLD_NOLOAD);
    if (h != NULL) {
        *how = CG_SHARD_CUPTI_LOADED;
        return h;
    }
    const char *env = getenv(CG_ENV_CUPTI_PATH);
    if (env != NULL && *env != '\0') {
        h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
        if (h != NULL) {
            *how = CG_SHARD_CUPTI_ENV;
            return h;
        }
        warn(CG_ENV_CUPTI_PATH " cannot be loaded", dlerror());
    }
    h = dlopen(CG_CUPTI_PATH, RTLD_NOW | RTLD_LOCAL);
    if (h != NULL) {
        *how = CG_SHARD_CUPTI_CONFIGURED;
        return h;
    }
    h = dlopen(CG_CUPTI_SONAME, RTLD_NOW | RTLD_LOCAL);
    *how = CG_SHARD_CUPTI_SONAME;
    return h;
}

/* "cupti HOW PATH", PATH the file behind the handle with links resolved. */
static void record_cupti(void *h, const char *how)
{
    struct link_map *lm = NULL;
    char real[PATH_MAX];
    const char *path = "?";
    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm != NULL && lm->l_name != NULL &&
        lm->l_name[0] != '\0')
        path = realpath(lm->l_name, real) != NULL ? real : lm->l_name;
    cg_inject_lock();
    cg_inject_append(CG_SHARD_KEY_CUPTI " %s ", how);
    cg_inject_append_name(path);
    cg_inject_append("\n");
    cg_inject_unlock();
}

/* Stores dlsym(h, sym) into the function pointer at fn (POSIX: a data pointer converts). */
static bool resolve(void *h, const char *sym, void *fn, size_t size)
{
    void *p = dlsym(h, sym);
    if (p == NULL)
        return false;
    memcpy(fn, &p, size);
    return true;
}

#define RESOLVE(h, field, sym) resolve(h, sym, &(field), sizeof(field))

/* Resolves the CUPTI API; returns NULL, or the name of what is missing. */
static const char *resolve_cupti(void *h)
{
#define REQUIRE(field, sym)                                                                        \
    do {                                                                                           \
        if (!RESOLVE(h, field, sym))                                                               \
            return sym;                                                                            \
    } while (0)
    REQUIRE(g_api.result_string, "cuptiGetResultString");
    REQUIRE(g_api.subscribe_v2, "cuptiSubscribe_v2");
    REQUIRE(g_api.unsubscribe, "cuptiUnsubscribe");
    REQUIRE(g_api.register_callbacks, "cuptiActivityRegisterCallbacks");
    REQUIRE(g_api.register_timestamp, "cuptiActivityRegisterTimestampCallback");
    REQUIRE(g_api.enable, "cuptiActivityEnable");
    REQUIRE(g_api.disable, "cuptiActivityDisable");
    REQUIRE(g_api.flush_all, "cuptiActivityFlushAll");
    REQUIRE(g_api.flush_period, "cuptiActivityFlushPeriod");
    REQUIRE(g_api.next_record, "cuptiActivityGetNextRecord");
    REQUIRE(g_api.dropped, "cuptiActivityGetNumDroppedRecords");
#undef REQUIRE
    RESOLVE(h, g_api.set_attribute, "cuptiActivitySetAttribute"); /* optional: see one_buffer */
    RESOLVE(h, g_api.enable_callback, "cuptiEnableCallback");     /* optional: module loads */
    RESOLVE(h, g_api.get_version, "cuptiGetVersion");             /* optional: graph kernels */
    RESOLVE(h, g_api.callback_name, "cuptiGetCallbackName");      /* optional: places */
    return NULL;
}

/* The CUDA driver already in the process (it calls InitializeInjection from cuInit); its
 * handle is kept for the process's life. */
static void load_cuda(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (h == NULL)
        return;
    g_cuda.handle = h;
    RESOLVE(h, g_cuda.driver_version, "cuDriverGetVersion");
    RESOLVE(h, g_cuda.ctx_get_current, "cuCtxGetCurrent");
    RESOLVE(h, g_cuda.ctx_set_current, "cuCtxSetCurrent");
    RESOLVE(h, g_cuda.ctx_synchronize, "cuCtxSynchronize");
}

static void record_cuda_version(void)
{
    int v = 0;
    if (g_cuda.driver_version == NULL || g_cuda.driver_version(&v) != CUDA_SUCCESS || v <= 0)
        return;
    cg_inject_lock();
    cg_inject_append(CG_SHARD_KEY_CUDA " %d.%d\n", v / 1000, (v % 1000) / 10);
    cg_inject_unlock();
}

/* A fatal failure after the subscription: disables the kinds enabled (enabled[i] for
 * g_kinds[i]), gives the subscriber slot back, stops reducing records and says why. */
static void give_up(const bool *enabled, const char *what, const char *detail)
{
    for (size_t i = CG_N_KINDS; i-- > 0;)
        if (enabled[i])
            g_api.disable(g_kinds[i].kind);
    g_api.unsubscribe(g_subscriber);
    g_subscriber = NULL;
    pthread_mutex_lock(&g_agg_lock);
    g_collecting = false;
    cg_agg_release(&g_agg);
    pthread_mutex_unlock(&g_agg_lock);
    unavailable(what, detail);
}

/* CUPTI 13 keeps one activity buffer per thread that produces records by default; buffers of
 * different threads complete at different times, while the aggregation settles steps assuming
 * one stream in time order (a late buffer's kernels would be clipped from the busy time). One
 * buffer for the process is asked for before the buffer callbacks are registered, as the header
 * requires; a refusal or an older libcupti without the call is a warning. */
static void one_buffer(void)
{
    const char *what = "CUPTI per-thread activity buffers cannot be turned off (GPU busy time "
                       "may be undercounted)";
    if (g_api.set_attribute == NULL) {
        warn(what, "no cuptiActivitySetAttribute");
        return;
    }
    uint8_t off = 0;
    size_t size = sizeof(off);
    CUptiResult r = g_api.set_attribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, &size, &off);
    if (r != CUPTI_SUCCESS)
        warn(what, result_text(r));
}

/* Whether the loaded libcupti's kernel records have graphId where these headers put it: its API
 * major version is theirs (see aggregate_hot.c). When not, graph kernels are not counted (a
 * "w"). */
static bool graph_ids_readable(void)
{
    const char *why = "no cuptiGetVersion";
    char detail[96];
    uint32_t v = 0;
    CUptiResult r = CUPTI_SUCCESS;
    if (g_api.get_version != NULL && (r = g_api.get_version(&v)) == CUPTI_SUCCESS) {
        if (v / 10000 == CUPTI_API_VERSION / 10000)
            return true;
        int n = snprintf(detail, sizeof(detail), "libcupti API version %u, built for %u", v,
                         (unsigned)CUPTI_API_VERSION);
        why = n > 0 && (size_t)n < sizeof(detail) ? detail : "another libcupti API version";
    } else if (g_api.get_version != NULL) {
        why = result_text(r);
    }
    warn("CUPTI kernel records may not carry graphId where expected (graph kernels not counted)",
         why);
    return false;
}

/* The subscriber's callback for module loads; false (and a "w" line) when it cannot be had. */
static bool enable_module_loads(void)
{
    const char *what = "CUPTI module load callback unavailable (module loads not counted)";
    if (g_api.enable_callback == NULL) {
        warn(what, "no cuptiEnableCallback");
        return false;
    }
    CUptiResult r = g_api.enable_callback(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                                          CUPTI_CBID_RESOURCE_MODULE_LOADED);
    if (r != CUPTI_SUCCESS)
        warn(what, result_text(r));
    return r == CUPTI_SUCCESS;
}

/* The resource callbacks that keep the contexts synchronised at the end of the measured window;
 * a "w" line when they cannot be had (only the ending thread's context is synchronised then). */
static void enable_contexts(void)
{
    const char *what = "CUPTI context callbacks unavailable (the end of the measured window "
                       "synchronises the ending thread's context only)";
    if (g_api.enable_callback == NULL) {
        warn(what, "no cuptiEnableCallback");
        return;
    }
    CUptiResult r = g_api.enable_callback(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                                          CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
    if (r == CUPTI_SUCCESS)
        r = g_api.enable_callback(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                                  CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
    if (r != CUPTI_SUCCESS)
        warn(what, result_text(r));
}

/* The API callbacks that give synchronisations, copies, allocations and releases their place
 * (docs/counts.md): every runtime and driver API function whose name holds "Synchronize",
 * "Memcpy", "Malloc", "MemAlloc" or "Free", or one of the virtual memory API's that allocate,
 * map, unmap and release device memory ("MemCreate", "MemMap", "MemUnmap", "MemRelease": PyTorch's
 * expandable segments), as these headers number them; but not "Graph" (those only build or read a
 * CUDA graph's node that will copy, allocate or free when the graph runs: no record has their
 * correlation id) nor "MemMapArray" (cuMemMapArrayAsync maps a sparse array's pages onto memory
 * already allocated). False (and a "w" line) when none could be enabled. */
static bool placed_call(const char *name)
{
    static const char *const words[] = {"Synchronize", "Memcpy",   "Malloc",   "MemAlloc",
                                        "Free",        "MemCreate", "MemMap", "MemUnmap",
                                        "MemRelease"};
    if (strstr(name, "Graph") != NULL || strstr(name, "MemMapArray") != NULL)
        return false;
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (strstr(name, words[i]) != NULL)
            return true;
    return false;
}

/* The API functions that poll a stream or an event: cudaStreamQuery, cudaEventQuery and the
 * driver's cuStreamQuery, cuEventQuery (with their per-thread-stream forms). */
static bool query_call(const char *name)
{
    return strstr(name, "StreamQuery") != NULL || strstr(name, "EventQuery") != NULL;
}

/* Turns on the subscriber's callback of every runtime and driver API function whose name want
 * accepts, marking each in g_query_cbid first when queries. The ids are the loaded libcupti's, not
 * only these headers': a newer one numbers new functions past these headers' last id, so ids are
 * asked for their names (cuptiGetCallbackName) until CG_CBID_GAP in a row past that last one have
 * none (or CG_CBID_BITS). Returns whether any is on; a "w" line what: DETAIL when none is. */
static bool enable_api_callbacks(bool (*want)(const char *), bool queries, const char *what)
{
    if (g_api.enable_callback == NULL || g_api.callback_name == NULL) {
        warn(what,
             g_api.enable_callback == NULL ? "no cuptiEnableCallback" : "no cuptiGetCallbackName");
        return false;
    }
    static const struct {
        CUpti_CallbackDomain domain;
        uint32_t n;
    } domains[] = {{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE},
                   {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE}};
    int on = 0;
    CUptiResult refused = CUPTI_SUCCESS;
    for (size_t d = 0; d < sizeof(domains) / sizeof(domains[0]); d++) {
        uint32_t unnamed = 0;
        for (uint32_t cbid = 1; cbid < CG_CBID_BITS; cbid++) {
            const char *name = NULL;
            if (g_api.callback_name(domains[d].domain, cbid, &name) != CUPTI_SUCCESS ||
                name == NULL) {
                if (cbid >= domains[d].n && ++unnamed == CG_CBID_GAP)
                    break;
                continue;
            }
            unnamed = 0;
            if (!want(name))
                continue;
            if (queries)
                atomic_fetch_or(&g_query_cbid[d][cbid / 8], (uint8_t)(1u << (cbid % 8)));
            CUptiResult r = g_api.enable_callback(1, g_subscriber, domains[d].domain, cbid);
            if (r == CUPTI_SUCCESS)
                on++;
            else
                refused = r;
        }
    }
    if (on == 0)
        warn(what, refused != CUPTI_SUCCESS ? result_text(refused) : "no such API function");
    return on > 0;
}

static bool enable_places(void)
{
    return enable_api_callbacks(placed_call, false,
                                "CUPTI API callbacks unavailable (synchronisations, copies and "
                                "allocations not placed in NVTX ranges)");
}

/* The queries' callbacks, with SYNCHRONIZATION on: CUPTI gives polls (cudaStreamQuery,
 * cudaEventQuery) SYNCHRONIZATION records too, whose type does not tell them from a blocking
 * synchronisation; their correlation ids do (cg_agg_queries). */
static bool enable_queries(void)
{
    return enable_api_callbacks(query_call, true,
                                "CUPTI API callbacks for queries unavailable (polling with "
                                "cudaStreamQuery or cudaEventQuery may count as synchronisations)");
}

/* The counts measured: those whose kinds were all enabled (enabled[i] for g_kinds[i]), graph
 * kernels when graph_ids, module loads when modules. */
static uint32_t counts_measured(const bool *enabled, bool graph_ids, bool modules)
{
    uint32_t missing = 0, all = 0;
    for (size_t i = 0; i < CG_N_KINDS; i++) {
        all |= g_kinds[i].counts;
        if (!enabled[i])
            missing |= g_kinds[i].counts;
    }
    uint32_t counted = all & ~missing;
    if (!graph_ids)
        counted &= ~(CG_COUNT(CG_AGG_N_GRAPH_KERNELS) | CG_COUNT(CG_AGG_N_GRAPH_LAUNCHES));
    if (modules)
        counted |= CG_COUNT(CG_AGG_N_MODULE_LOADS);
    return counted;
}

/* "nc NAME...": the counts measured. Writer locked. */
static void append_counted(void)
{
    cg_inject_append(CG_SHARD_KEY_COUNTED);
    for (int c = 0; c < CG_AGG_COUNTS; c++)
        if (g_counted & CG_COUNT(c))
            cg_inject_append(" %s", cg_agg_count_name((enum cg_agg_count)c));
    if (g_agg.corr != NULL) /* the API callbacks for places are on */
        cg_inject_append(" " CG_SHARD_COUNT_PLACES);
    cg_inject_append("\n");
}

/* After the subscription: the clock, one buffer stream, the buffers, the activity kinds, the
 * module load callback, the flush thread. Returns false when it gave up (and said why). */
static bool start_activity(void)
{
    bool enabled[CG_N_KINDS] = {false};
    char what[128];
    bool graph_ids = graph_ids_readable();
    check_off_names();
    comm_kernels();
    if (!part_off("one_buffer"))
        one_buffer();
    CUptiResult r = g_api.register_timestamp(timestamp_cb);
    if (r != CUPTI_SUCCESS)
        warn("CUPTI timestamp callback refused (GPU records keep CUPTI's own clock)",
             result_text(r));
    pthread_mutex_lock(&g_agg_lock);
    cg_agg_graph_ids(&g_agg, graph_ids);
    g_collecting = true;
    pthread_mutex_unlock(&g_agg_lock);
    if ((r = g_api.register_callbacks(buffer_requested, buffer_completed)) != CUPTI_SUCCESS) {
        give_up(enabled, "CUPTI cannot start", result_text(r));
        return false;
    }
    for (size_t i = 0; i < CG_N_KINDS; i++) {
        if (!g_kinds[i].required && part_off(g_kinds[i].name))
            continue;
        r = g_api.enable(g_kinds[i].kind);
        if (r == CUPTI_SUCCESS) {
            enabled[i] = true;
            continue;
        }
        int n = snprintf(what, sizeof(what), "CUPTI activity kind %s %s", g_kinds[i].name,
                         g_kinds[i].required ? "cannot be enabled" : "unavailable");
        if (n < 0 || (size_t)n >= sizeof(what))
            what[0] = '\0';
        if (g_kinds[i].required) {
            give_up(enabled, what, result_text(r));
            return false;
        }
        warn(what, result_text(r));
    }
    bool modules = !part_off("module_loads") && enable_module_loads();
    enable_contexts();
    bool placed = !part_off("places") && enable_places();
    bool syncs = false;
    for (size_t i = 0; i < CG_N_KINDS; i++)
        syncs |= enabled[i] && g_kinds[i].kind == CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    bool queries = syncs && enable_queries();
    pthread_mutex_lock(&g_agg_lock);
    g_counted = counts_measured(enabled, graph_ids, modules);
    if (placed)
        cg_agg_places(&g_agg, &g_corr);
    if (queries)
        cg_agg_queries(&g_agg, &g_queries);
    pthread_mutex_unlock(&g_agg_lock);
    g_step_flush = !part_off("step_flush");
    if (!part_off("flush_period") && (r = g_api.flush_period(1000)) != CUPTI_SUCCESS)
        warn("CUPTI flush period refused (records arrive at step ends)", result_text(r));
    if (!worker_start()) {
        give_up(enabled, "cannot start the library's flush thread", NULL);
        return false;
    }
    return true;
}

static void start_cupti(void)
{
    const struct cg_inject_config *cfg = cg_inject_config();
    if (!cfg->cupti) {
        unavailable("CUPTI disabled (" CG_ENV_CUPTI "=0)", NULL);
        return;
    }
    load_cuda();
    const char *how = NULL;
    void *h = open_cupti(&how);
    if (h == NULL) {
        unavailable("cannot load libcupti", dlerror());
        return;
    }
    record_cupti(h, how);
    const char *missing = resolve_cupti(h);
    if (missing != NULL) {
        unavailable("cannot load libcupti", missing);
        return;
    }
    if (cg_agg_new(&g_agg, cfg->warmup) != 0 ||
        (cfg->trace_first >= 0 && cg_agg_trace(&g_agg, cfg->trace_first, cfg->trace_last,
                                               (size_t)cfg->trace_max_events) != 0)) {
        cg_agg_release(&g_agg);
        unavailable("out of memory", NULL);
        return;
    }
    cg_agg_measure(&g_agg, cfg->measure_end);
    g_max_buffers = (size_t)(cfg->buffer_cap_bytes / (int64_t)CG_BUF_BYTES);
    if (g_max_buffers < 1)
        g_max_buffers = 1;
    if (g_max_buffers > CG_MAX_BUFFERS)
        g_max_buffers = CG_MAX_BUFFERS;

    char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN * 2] = "";
    CUpti_SubscriberParams params;
    memset(&params, 0, sizeof(params));
    params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    params.subscriberName = "canary-gate";
    params.oldSubscriberName = holder;
    params.oldSubscriberSize = sizeof(holder);
    CUptiResult r = g_api.subscribe_v2(&g_subscriber, subscriber_cb, NULL, &params);
    if (r != CUPTI_SUCCESS) {
        cg_agg_release(&g_agg);
        if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
            unavailable("another profiler holds the CUPTI subscriber slot",
                        holder[0] ? holder : "unknown tool");
        else /* the driver calls us from cuInit, so it is loaded unless we were called by hand */
            unavailable(g_cuda.handle ? "CUPTI cannot start"
                                      : "no CUDA driver loaded; CUPTI cannot start",
                        result_text(r));
        return;
    }
    if (!start_activity())
        return;
    atomic_store(&g_running, true);
    /* after libcupti's load-time destructors: runs before them */
    cg_inject_atexit(gpu_at_exit);
    cg_inject_lock();
    cg_inject_append(CG_SHARD_KEY_GPU " " CG_SHARD_GPU_OK "\n");
    append_counted();
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
