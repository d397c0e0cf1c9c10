/*
 * cupti: the CUDA side of the injection library while it runs: CUPTI's callbacks (the
 * subscriber's, the activity buffers'), the flush thread, and what nvtx.c and core.c call
 * (cg_gpu_step_begin, cg_gpu_step_end, cg_gpu_measured). Start-up (InitializeInjection) is
 * cupti_start.c's; cupti_internal.h holds what the two share.
 *
 * Threading: the subscriber's callback runs on any thread that makes a CUDA call, the buffer
 * callbacks on CUPTI's threads (and on a thread that flushes), cg_gpu_step_* on the canary's
 * threads, the flush thread on its own; all of them at once, from the subscription on. The
 * rules they keep:
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
#define _GNU_SOURCE /* pthread_timedjoin_np */

#include "cupti_internal.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CG_RECORD_BATCH 256 /* record pointers handed to the aggregation at once */
#define CG_WAIT_S 10        /* longest wait for the flush thread (window end, exit) */
#define CG_QUEUE 1024       /* step boundaries and module loads queued between two applies */
#define CG_CONTEXTS 64      /* contexts synchronised at the end of the measured window */
#define CG_STR2(x) #x
#define CG_STR(x) CG_STR2(x)

struct cupti_api gpu_api;
struct cuda_api gpu_cuda;
_Atomic bool gpu_running;
bool gpu_collecting; /* records are reduced (guarded by the aggregation lock) */
pthread_mutex_t gpu_agg_lock = PTHREAD_MUTEX_INITIALIZER;
struct cg_agg gpu_agg;
static _Atomic int64_t g_dropped;
static _Atomic int64_t g_starved; /* buffer requests refused at the cap */
static int64_t g_starved_written; /* guarded by the aggregation lock */
uint32_t gpu_counted;             /* the counts measured (bits): aggregation lock */
struct cg_agg_corr gpu_corr;      /* places of API calls (never freed: callbacks may still run) */
struct cg_agg_corr gpu_queries;   /* correlation ids of queries (cudaStreamQuery, ...) */
_Atomic uint8_t gpu_query_cbid[2][CG_CBID_BITS / 8];

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
static size_t g_n_free, g_n_allocated;
size_t gpu_max_buffers;

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
bool gpu_step_flush = true; /* a flush after every step end (set before the first step) */
static CUcontext g_done_ctx;
static _Atomic bool g_exit_flushed;
static _Atomic bool g_abandoned; /* the exit gave up waiting for a stuck flush thread */

const char *gpu_result_text(CUptiResult r)
{
    const char *s = NULL;
    if (gpu_api.result_string == NULL || gpu_api.result_string(r, &s) != CUPTI_SUCCESS || s == NULL)
        return "unknown CUPTI error";
    return s;
}

uint64_t CUPTIAPI gpu_timestamp_cb(void)
{
    return cg_inject_now_ns();
}

/* Whether the API callback cbid of domain (runtime or driver) is a query's (enable_queries). */
static bool query_cbid(CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    return cbid < CG_CBID_BITS &&
           (atomic_load_explicit(&gpu_query_cbid[domain == CUPTI_CB_DOMAIN_DRIVER_API][cbid / 8],
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
    for (size_t i = 0; gpu_collecting && i < n; i++) {
        switch (q[i].kind) {
        case QUEUED_BEGIN:
            cg_agg_step_begin(&gpu_agg, q[i].index, q[i].ns);
            break;
        case QUEUED_END:
            cg_agg_step_end(&gpu_agg, q[i].index, q[i].ns);
            break;
        case QUEUED_MODULE_LOAD:
            cg_agg_module_load(&gpu_agg, q[i].ns, q[i].place);
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
        pthread_mutex_lock(&gpu_agg_lock);
        apply_queued();
        pthread_mutex_unlock(&gpu_agg_lock);
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
void CUPTIAPI gpu_subscriber_cb(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                const void *data)
{
    (void)userdata;
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API) {
        const CUpti_CallbackData *d = data;
        if (d == NULL || d->callbackSite != CUPTI_API_ENTER)
            return;
        if (query_cbid(domain, cbid))
            cg_agg_place_note(&gpu_queries, d->correlationId, 1);
        else if (!cg_nvtx_work_off()) /* the overhead toggle's off blocks place nothing */
            cg_agg_place_note(&gpu_corr, d->correlationId, cg_nvtx_place());
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

void CUPTIAPI gpu_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    uint8_t *b = NULL;
    t_in_cupti++;
    pthread_mutex_lock(&g_buf_lock);
    if (g_n_free > 0) {
        b = g_free[--g_n_free];
    } else if (g_n_allocated < gpu_max_buffers) {
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
    struct cg_agg *a = &gpu_agg;
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
    struct cg_agg *a = &gpu_agg;
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
            if (s->count[c] == s->count_written[c] || !(gpu_counted & CG_COUNT(c)))
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

void CUPTIAPI gpu_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                   size_t valid)
{
    (void)size;
    CUpti_Activity *rec = NULL;
    const CUpti_Activity *batch[CG_RECORD_BATCH];
    size_t n = 0;
    t_in_cupti++;
    pthread_mutex_lock(&gpu_agg_lock);
    bool collecting = gpu_collecting;  /* false once CUPTI was given up: the buffer is only kept */
    uint64_t horizon = apply_queued(); /* the boundaries before the records (see the top) */
    if (collecting)
        cg_agg_now(&gpu_agg, horizon);
    while (collecting && valid > 0 && gpu_api.next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
        if (rec->kind == CUPTI_ACTIVITY_KIND_DEVICE) {
            device_record(rec);
            continue;
        }
        batch[n++] = rec;
        if (n == CG_RECORD_BATCH) {
            cg_agg_records(&gpu_agg, batch, n);
            n = 0;
        }
    }
    cg_agg_records(&gpu_agg, batch, n);
    pthread_mutex_unlock(&gpu_agg_lock);
    size_t dropped = 0;
    if (gpu_api.dropped(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped > 0)
        atomic_fetch_add(&g_dropped, (int64_t)dropped);
    pthread_mutex_lock(&g_buf_lock);
    if (g_n_free < CG_MAX_BUFFERS)
        g_free[g_n_free++] = buffer;
    else
        free(buffer);
    pthread_mutex_unlock(&g_buf_lock);
    pthread_mutex_lock(&gpu_agg_lock);
    if (gpu_collecting) {
        apply_queued();
        cg_agg_settle(&gpu_agg, false);
        write_deltas();
    }
    pthread_mutex_unlock(&gpu_agg_lock);
    t_in_cupti--;
}

/* Flushes CUPTI with flag (never from a CUPTI callback or a forked child) and writes the
 * results; final settles everything held. */
static void gpu_flush(uint32_t flag, bool final)
{
    if (t_in_cupti == 0 && cg_inject_owner())
        gpu_api.flush_all(flag);
    pthread_mutex_lock(&gpu_agg_lock);
    if (atomic_load(&g_abandoned)) { /* a stuck flush returning after the exit went on */
        pthread_mutex_unlock(&gpu_agg_lock);
        return;
    }
    apply_queued();
    cg_agg_settle(&gpu_agg, final);
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
    pthread_mutex_unlock(&gpu_agg_lock);
}

/* --- the flush thread ---------------------------------------------------------------------- */

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
        gpu_warn(
            "more than " CG_STR(CG_CONTEXTS) " CUDA contexts",
            "the end of the measured window "
            "synchronised the first " CG_STR(CG_CONTEXTS) " (records of the others may miss it)");
    if (gpu_cuda.ctx_set_current != NULL && gpu_cuda.ctx_synchronize != NULL && n > 0) {
        for (size_t i = 0; i < n; i++)
            if (gpu_cuda.ctx_set_current(all[i]) == CUDA_SUCCESS)
                gpu_cuda.ctx_synchronize();
        gpu_cuda.ctx_set_current(NULL);
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
bool gpu_worker_start(void)
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
void gpu_at_exit(void)
{
    if (!atomic_load(&gpu_running) || !cg_inject_owner() || atomic_exchange(&g_exit_flushed, true))
        return;
    if (worker_stop()) {
        gpu_flush(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED, true);
        return;
    }
    pthread_mutex_lock(&gpu_agg_lock);
    atomic_store(&g_abandoned, true);
    gpu_collecting = false; /* buffers delivered from now on are only kept */
    pthread_mutex_unlock(&gpu_agg_lock);
    gpu_warn("flush thread did not finish within " CG_STR(CG_WAIT_S) " s at exit",
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
    if (!atomic_load_explicit(&gpu_running, memory_order_relaxed) || !cg_inject_owner())
        return cg_inject_now_ns();
    return queue_event(QUEUED_BEGIN, index, 0);
}

uint64_t cg_gpu_step_end(int64_t index)
{
    if (!atomic_load_explicit(&gpu_running, memory_order_relaxed) || !cg_inject_owner())
        return cg_inject_now_ns();
    uint64_t end_ns = queue_event(QUEUED_END, index, 0);
    bool first = !atomic_load_explicit(&g_first_step_ended, memory_order_relaxed) &&
                 !atomic_exchange(&g_first_step_ended, true);
    if (first || gpu_step_flush)
        worker_request(false, NULL);
    if (first)
        wait_worker(&g_first_flushed); /* exit handlers registered: see "Fork" at the top */
    return end_ns;
}

bool cg_gpu_measured(void)
{
    if (!atomic_load(&gpu_running) || !cg_inject_owner() || atomic_load(&g_exit_flushed))
        return false;
    CUcontext ctx = NULL;
    if (t_in_cupti == 0 && gpu_cuda.ctx_get_current != NULL &&
        gpu_cuda.ctx_get_current(&ctx) != CUDA_SUCCESS)
        ctx = NULL;
    worker_request(true, ctx);
    if (t_in_cupti == 0)
        wait_done();
    return true;
}
