/*
 * cupti_standin: a stand-in for libcupti, built with libcupti's soname (libcupti.so.13), for the
 * injection library's tests on machines without a GPU, where the real libcupti refuses at the
 * subscription. It exports the cupti* functions the library resolves and plays their documented
 * contract simply: one subscriber, whose callback is called for the callbacks it enabled
 * (cuptiEnableCallback), buffers requested through the registered callback and handed back
 * inside cuptiActivityFlushAll, records of the CUDA 13.0 types (CUpti_ActivityKernel10,
 * CUpti_ActivityMemcpy6, CUpti_ActivitySynchronization2, CUpti_ActivityMemory4,
 * CUpti_ActivityJit2, CUpti_ActivityDevice5) back to back in a buffer at their own sizes,
 * stamped with the registered timestamp callback (the wall clock without one, as CUPTI's default
 * clock is), and the API version of the headers it was built with (cuptiGetVersion).
 *
 * Like libcupti, it registers an exit-time destructor when it is loaded, and another one lazily,
 * at its first cuptiActivityFlushAll (as a C++ library does for statics it builds on first use).
 * A flush after either destructor ran is logged as "after teardown" and fails.
 *
 * What it proves: the order and the thread/process of the library's calls into CUPTI (the exit
 * handlers, which kinds it enables and disables, when it unsubscribes, which flushes are forced),
 * how the library handles refusals, and the library's reduction of records it is handed (of
 * mixed kinds and sizes in one buffer). What it cannot prove: anything about the real libcupti:
 * which destructors it registers and when, which kinds a real driver refuses, the layout, kinds
 * and timing of real records (which synchronisations, queries and JIT steps produce records, and
 * of what type; whether graph-launched kernels carry a graphId), when and on which thread a
 * module load is reported, the threads real callbacks run on. Those need a GPU machine
 * (ci/gpu-check).
 *
 * Environment:
 *   CG_STANDIN_LOG=FILE    every call is appended to FILE as a line "PID EVENT"
 *   CG_STANDIN_FAIL=LIST   comma-separated calls to refuse: "subscribe", "timestamp",
 *                          "callbacks" (cuptiActivityRegisterCallbacks), "attribute"
 *                          (cuptiActivitySetAttribute), "enable-callback" (cuptiEnableCallback),
 *                          "version" (cuptiGetVersion), or an activity kind name (MEMCPY2,
 *                          MEMSET, SYNCHRONIZATION, JIT, ...)
 *   CG_STANDIN_VERSION=N   the API version cuptiGetVersion reports (default: CUPTI_API_VERSION)
 *   CG_STANDIN_DEVICE_UUID=HEX  the UUID of the device record (32 hex digits), which is made
 *                          when the DEVICE kind is enabled, for the stand-in's one GPU (id 0)
 *   CG_STANDIN_VMM=1       device memory is allocated with the virtual memory API (as PyTorch's
 *                          expandable segments are): an allocation's record carries the
 *                          correlation id of cuMemCreate, which cuMemMap follows; a release's
 *                          that of cuMemRelease, after cuMemUnmap (which of them a real CUPTI's
 *                          MEMORY2 record carries, if any, only a GPU can show)
 *   CG_STANDIN_CALL_THREAD=other  the API calls' callbacks run on a thread of the stand-in's
 *                          own, started for each (a thread with no NVTX range of its own)
 *   CG_STANDIN_CALL_THREAD=ranged  they run on one thread of the stand-in's own, kept for the
 *                          process, which opens and closes an NVTX range "lib-scan" before each
 *                          (as a library's ranges do on PyTorch's autograd thread: CUB's scans)
 *   CG_STANDIN_NEWER_API=1  every copy is made through a driver function of a newer libcupti,
 *                          "cuMemcpyDtoHAsync_v3", numbered past the 13.0 headers' last callback
 *                          id (CUPTI_DRIVER_TRACE_CBID_SIZE + 5)
 *   CG_STANDIN_POLLS=N     every stream or event synchronisation is preceded by N polls of its
 *                          stream or event (cudaStreamQuery, cudaEventQuery), each with a
 *                          SYNCHRONIZATION record of the synchronisation's type, the last one
 *                          finding the work done, as a data loader that polls would make
 *   CG_STANDIN_HANG_FLUSH_S=N  the first unforced cuptiActivityFlushAll sleeps N seconds first
 *                          (logged "flush hangs"), as a flush stuck behind the driver would
 *   CG_STANDIN_HOLD=M,N    the reduction of the first buffer handed over once M kernels were
 *                          launched (cg_standin_kernel, cg_standin_graph_kernel) is held: its
 *                          first cuptiActivityGetNextRecord, which the library calls while it
 *                          reduces the buffer, waits until N more kernels were launched (logged
 *                          "hold", then "hold released"), at most 20 s ("hold timed out"); the
 *                          canary launches one per step, so whether it gets through N steps
 *                          while a reduction is held does not depend on timing
 *   CG_STANDIN_DEVICE1=NAME,AFTER_NS,NS  a second GPU (id 1, with its own DEVICE record): every
 *                          kernel of cg_standin_kernel also launches a kernel NAME on it, starting
 *                          at least AFTER_NS after that kernel's start (the call waits that long,
 *                          so that no record starts later than it is made, as none can on a GPU)
 *                          and lasting NS (one process driving two GPUs)
 *   CG_STANDIN_DEVICE1_ASYNC=1  GPU 1's kernels complete (their records can be handed over) only
 *                          when the next one is launched or GPU 1's context is synchronised
 *                          (cuCtxSynchronize of the stand-in libcuda, which tells this library:
 *                          "held released"), as work on a GPU the step never waits for
 * The first kernel of each GPU creates its context: the subscriber's CONTEXT_CREATED callback,
 * when it enabled it, with the stand-in libcuda's context of that device when it is loaded
 * (cg_standin_cuda_context), else a made-up one (logged "context created D" or "context unseen
 * D").
 *   CG_STANDIN_FLOOD=F     every cuptiActivityFlushAll also hands over F kernel records of 1 us
 *                          (8 names, 4 streams), their starts spread evenly over the time since
 *                          the previous flush, after the records queued (for bench_step_lock)
 * Extra exports for test canaries, each recorded only when its activity kind is enabled and
 * delivered at the next flush, starting now:
 *   cg_standin_kernel(ns)                   a kernel of ns nanoseconds (CONCURRENT_KERNEL)
 *   cg_standin_graph_kernel(ns, graph_id)   one a CUDA graph launched (graphId graph_id): the
 *                                           graph's nodes 1 and 2 in turn (graphNodeId), so
 *                                           every two calls are one launch of a two-kernel graph
 *   cg_standin_sync(type, ns)               a synchronisation of CUpti_ActivitySynchronizationType
 *                                           type that blocked ns (SYNCHRONIZATION)
 *   cg_standin_memcpy(copy_kind, src_kind, dst_kind, bytes, ns)   a copy (MEMCPY)
 *   cg_standin_memory(alloc, bytes)         a device memory allocation (alloc != 0) or release
 *                                           (MEMORY2)
 *   cg_standin_jit()                        a JIT compilation of 1 us (JIT)
 *   cg_standin_module_load()                calls the subscriber's callback for
 *                                           CUPTI_CBID_RESOURCE_MODULE_LOADED, when it enabled it
 *                                           (logged "module load" or "module load unseen")
 * A synchronisation, a copy and a device memory allocation or release are API calls too: each
 * takes the next correlation id, which its record carries, and calls the subscriber's callback at
 * the call's entry and exit, on the calling thread, when it enabled the runtime API function that
 * makes it (cudaStreamSynchronize, cudaEventSynchronize, cudaDeviceSynchronize,
 * cudaStreamWaitEvent, cudaMemcpyAsync, cudaMalloc, cudaFree; with CG_STANDIN_VMM the driver's
 * cuMemCreate, cuMemMap, cuMemUnmap, cuMemRelease). Only the
 * runtime and driver functions of names[] below have a name (cuptiGetCallbackName) and can be
 * enabled; enabling is logged "callback on RUNTIME|DRIVER NAME".
 */
#include <cupti.h>
#include <nvtx3/nvToolsExt.h>

#include <dlfcn.h>

#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))
#define MAX_PENDING 4096
#define MAX_KIND 128

/* A record of any kind the stand-in makes, in a slot of the largest one's size. */
union record {
    CUpti_Activity any;
    CUpti_ActivityKernel10 kernel;
    CUpti_ActivityMemcpy6 copy;
    CUpti_ActivitySynchronization2 sync;
    CUpti_ActivityMemory4 memory;
    CUpti_ActivityJit2 jit;
    CUpti_ActivityDevice5 device;
};

static const char *g_log;
static const char *g_fail;
static bool g_subscribed, g_torn_down, g_lazy_registered;
static bool g_kind_on[MAX_KIND];
static CUpti_CallbackFunc g_subscriber_cb;
static void *g_subscriber_data;
static bool g_module_cb_on;
static bool g_context_cb_on[2]; /* CONTEXT_CREATED, CONTEXT_DESTROY_STARTING */
static CUpti_BuffersCallbackRequestFunc g_request;
static CUpti_BuffersCallbackCompleteFunc g_complete;
static CUpti_TimestampCallbackFunc g_clock;
static union record g_pending[MAX_PENDING];
static size_t g_n_pending;
static size_t g_dropped;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_subscriber_token;
static bool g_api_on[2][1024]; /* [0] runtime, [1] driver, by callback id */
static uint32_t g_next_corr = 1;
/* CG_STANDIN_HOLD: the kernels launched so far, and whether a reduction was held (g_hold_lock) */
static pthread_mutex_t g_hold_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_hold_cond = PTHREAD_COND_INITIALIZER;
static long g_kernels_launched;
static bool g_held;

/* The API functions the stand-in names (cuptiGetCallbackName): a few that synchronise, copy,
 * allocate or free, and some that do none of these (among them some that only build a CUDA
 * graph's nodes of those sorts). */
static const struct {
    CUpti_CallbackDomain domain;
    uint32_t cbid;
    const char *name;
} names[] = {
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
     "cudaStreamSynchronize"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020,
     "cudaEventSynchronize"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
     "cudaDeviceSynchronize"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020,
     "cudaStreamWaitEvent"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
     "cudaMemcpyAsync"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
     "cudaLaunchKernel"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, "cudaMalloc"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, "cudaFree"},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
     "cuStreamSynchronize"},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2,
     "cuMemcpyDtoHAsync_v2"},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel"},
    /* the virtual memory API (PyTorch's expandable segments) */
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemCreate, "cuMemCreate"},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemMap, "cuMemMap"},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, "cuMemUnmap"},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemRelease, "cuMemRelease"},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemMapArrayAsync,
     "cuMemMapArrayAsync"},
    /* a newer libcupti's function, past these headers' last id (CG_STANDIN_NEWER_API) */
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE + 5, "cuMemcpyDtoHAsync_v3"},
    /* polling: a query returns at once, whether the work is done or not */
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020,
     "cudaStreamQuery"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020, "cudaEventQuery"},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuStreamQuery, "cuStreamQuery"},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuEventQuery, "cuEventQuery"},
    /* building a CUDA graph: a node that will copy, allocate or free, no copy or release now */
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddMemcpyNode_v10000,
     "cudaGraphAddMemcpyNode"},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphAddMemFreeNode,
     "cuGraphAddMemFreeNode"},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphAddMemAllocNode,
     "cuGraphAddMemAllocNode"},
};

static const char kernel_name[] = "_Z14standin_kernelv";

static void say(const char *event, const char *detail)
{
    if (g_log == NULL)
        return;
    char line[256];
    int n = snprintf(line, sizeof(line), "%ld %s%s%s\n", (long)getpid(), event,
                     detail ? " " : "", detail ? detail : "");
    if (n <= 0 || (size_t)n >= sizeof(line))
        return;
    int fd = open(g_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    ssize_t w = write(fd, line, (size_t)n);
    (void)w;
    close(fd);
}

/* True when CG_STANDIN_FAIL lists name. */
static bool refused(const char *name)
{
    size_t n = strlen(name);
    for (const char *p = g_fail; p != NULL && *p != '\0';) {
        const char *comma = strchr(p, ',');
        size_t k = comma ? (size_t)(comma - p) : strlen(p);
        if (k == n && strncmp(p, name, n) == 0)
            return true;
        p = comma ? comma + 1 : NULL;
    }
    return false;
}

static const char *kind_name(CUpti_ActivityKind k)
{
    switch (k) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return "CONCURRENT_KERNEL";
    case CUPTI_ACTIVITY_KIND_KERNEL: return "KERNEL";
    case CUPTI_ACTIVITY_KIND_MEMCPY: return "MEMCPY";
    case CUPTI_ACTIVITY_KIND_MEMCPY2: return "MEMCPY2";
    case CUPTI_ACTIVITY_KIND_MEMSET: return "MEMSET";
    case CUPTI_ACTIVITY_KIND_MEMORY2: return "MEMORY2";
    case CUPTI_ACTIVITY_KIND_DEVICE: return "DEVICE";
    case CUPTI_ACTIVITY_KIND_OVERHEAD: return "OVERHEAD";
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
        return "SYNCHRONIZATION";
    case CUPTI_ACTIVITY_KIND_JIT:
        return "JIT";
    default: return "OTHER";
    }
}

/* The size of a record of kind in a buffer (the kinds the stand-in makes). */
static size_t record_size(CUpti_ActivityKind k)
{
    switch (k) {
    case CUPTI_ACTIVITY_KIND_MEMCPY:
        return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
        return sizeof(CUpti_ActivitySynchronization2);
    case CUPTI_ACTIVITY_KIND_MEMORY2:
        return sizeof(CUpti_ActivityMemory4);
    case CUPTI_ACTIVITY_KIND_JIT:
        return sizeof(CUpti_ActivityJit2);
    case CUPTI_ACTIVITY_KIND_DEVICE:
        return sizeof(CUpti_ActivityDevice5);
    default:
        return sizeof(CUpti_ActivityKernel10);
    }
}

static bool kind_on(CUpti_ActivityKind k)
{
    return (unsigned)k < MAX_KIND && g_kind_on[k];
}

static uint64_t now_ns(void)
{
    if (g_clock != NULL)
        return g_clock();
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void teardown_at_load(void)
{
    g_torn_down = true;
    say("teardown", "load-time");
}

static void teardown_lazy(void)
{
    g_torn_down = true;
    say("teardown", "lazy");
}

/* The record list's lock is held across fork, as a fork-safe library does: the flush thread of
 * the injection library may hold it (delivering) when a canary thread forks, and a child that
 * launches a stand-in kernel takes it. */
static void fork_prepare(void)
{
    pthread_mutex_lock(&g_lock);
}

static void fork_release(void)
{
    pthread_mutex_unlock(&g_lock);
}

__attribute__((constructor)) static void standin_load(void)
{
    pthread_atfork(fork_prepare, fork_release, fork_release);
    g_log = getenv("CG_STANDIN_LOG");
    g_fail = getenv("CG_STANDIN_FAIL");
    say("load", NULL);
    atexit(teardown_at_load);
}

API CUptiResult cuptiGetResultString(CUptiResult r, const char **s)
{
    *s = r == CUPTI_SUCCESS ? "CUPTI_SUCCESS" : "CUPTI_ERROR_STANDIN_REFUSED";
    return CUPTI_SUCCESS;
}

API CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle *h, CUpti_CallbackFunc cb, void *user,
                                  CUpti_SubscriberParams *params)
{
    if (refused("subscribe") || g_subscribed) {
        say("subscribe", "refused");
        if (params != NULL && params->oldSubscriberName != NULL && params->oldSubscriberSize > 0)
            snprintf(params->oldSubscriberName, params->oldSubscriberSize, "%s",
                     "standin holder");
        return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    }
    g_subscribed = true;
    g_subscriber_cb = cb;
    g_subscriber_data = user;
    *h = (CUpti_SubscriberHandle)(void *)&g_subscriber_token;
    say("subscribe", NULL);
    return CUPTI_SUCCESS;
}

API CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle h)
{
    if (h != (CUpti_SubscriberHandle)(void *)&g_subscriber_token || !g_subscribed) {
        say("unsubscribe", "invalid handle");
        return CUPTI_ERROR_INVALID_PARAMETER;
    }
    g_subscribed = false;
    g_module_cb_on = false; /* a subscriber's callbacks go with it */
    g_context_cb_on[0] = g_context_cb_on[1] = false;
    memset(g_api_on, 0, sizeof(g_api_on));
    say("unsubscribe", NULL);
    return CUPTI_SUCCESS;
}

static const char *api_name(CUpti_CallbackDomain domain, uint32_t cbid)
{
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (names[i].domain == domain && names[i].cbid == cbid)
            return names[i].name;
    return NULL;
}

API CUptiResult cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char **name)
{
    if (name == NULL)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *name = api_name(domain, cbid);
    return *name != NULL ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

/* The resource domain's module load callback and the API functions of names[] are known;
 * logged "callback on|off NAME". */
API CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle h,
                                    CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    if (refused("enable-callback")) {
        say("callback", "refused");
        return CUPTI_ERROR_NOT_SUPPORTED;
    }
    const char *api = api_name(domain, cbid);
    if (api != NULL && h == (CUpti_SubscriberHandle)(void *)&g_subscriber_token && g_subscribed) {
        char line[128];
        snprintf(line, sizeof(line), "%s %s %s", enable ? "on" : "off",
                 domain == CUPTI_CB_DOMAIN_RUNTIME_API ? "RUNTIME" : "DRIVER", api);
        g_api_on[domain == CUPTI_CB_DOMAIN_DRIVER_API][cbid] = enable != 0;
        say("callback", line);
        return CUPTI_SUCCESS;
    }
    if (h == (CUpti_SubscriberHandle)(void *)&g_subscriber_token && g_subscribed &&
        domain == CUPTI_CB_DOMAIN_RESOURCE &&
        (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED ||
         cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING)) {
        bool created = cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED;
        g_context_cb_on[!created] = enable != 0;
        char line[64];
        snprintf(line, sizeof(line), "%s %s", enable ? "on" : "off",
                 created ? "CONTEXT_CREATED" : "CONTEXT_DESTROY_STARTING");
        say("callback", line);
        return CUPTI_SUCCESS;
    }
    if (h != (CUpti_SubscriberHandle)(void *)&g_subscriber_token || !g_subscribed ||
        domain != CUPTI_CB_DOMAIN_RESOURCE || cbid != CUPTI_CBID_RESOURCE_MODULE_LOADED) {
        say("callback", "invalid");
        return CUPTI_ERROR_INVALID_PARAMETER;
    }
    g_module_cb_on = enable != 0;
    say("callback", enable ? "on MODULE_LOADED" : "off MODULE_LOADED");
    return CUPTI_SUCCESS;
}

API CUptiResult cuptiGetVersion(uint32_t *version)
{
    if (refused("version")) {
        say("version", "refused");
        return CUPTI_ERROR_NOT_SUPPORTED;
    }
    const char *v = getenv("CG_STANDIN_VERSION");
    *version = v != NULL ? (uint32_t)strtoul(v, NULL, 10) : CUPTI_API_VERSION;
    return CUPTI_SUCCESS;
}

API CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
                                               CUpti_BuffersCallbackCompleteFunc done)
{
    if (refused("callbacks")) {
        say("callbacks", "refused");
        return CUPTI_ERROR_NOT_SUPPORTED;
    }
    g_request = req;
    g_complete = done;
    say("callbacks", NULL);
    return CUPTI_SUCCESS;
}

/* Logs "attribute NAME VALUE" for the attributes the library sets, with their documented value
 * sizes; anything else is refused as an invalid parameter. */
API CUptiResult cuptiActivitySetAttribute(CUpti_ActivityAttribute attr, size_t *size, void *value)
{
    char detail[64];
    if (refused("attribute")) {
        say("attribute", "refused");
        return CUPTI_ERROR_NOT_SUPPORTED;
    }
    if (attr == CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER && size != NULL &&
        *size == sizeof(uint8_t) && value != NULL) {
        snprintf(detail, sizeof(detail), "PER_THREAD_ACTIVITY_BUFFER %u",
                 (unsigned)*(const uint8_t *)value);
        say("attribute", detail);
        return CUPTI_SUCCESS;
    }
    snprintf(detail, sizeof(detail), "%d invalid", (int)attr);
    say("attribute", detail);
    return CUPTI_ERROR_INVALID_PARAMETER;
}

API CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc cb)
{
    if (refused("timestamp")) {
        say("timestamp", "refused");
        return CUPTI_ERROR_NOT_SUPPORTED;
    }
    g_clock = cb;
    say("timestamp", NULL);
    return CUPTI_SUCCESS;
}

static void queue(const union record *r);
static void device_record(void);

API CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)
{
    const char *name = kind_name(kind);
    if (refused(name)) {
        char detail[64];
        snprintf(detail, sizeof(detail), "%s refused", name);
        say("enable", detail);
        return CUPTI_ERROR_NOT_COMPATIBLE;
    }
    if ((unsigned)kind < MAX_KIND)
        g_kind_on[kind] = true;
    say("enable", name);
    if (kind == CUPTI_ACTIVITY_KIND_DEVICE)
        device_record();
    return CUPTI_SUCCESS;
}

API CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind)
{
    if ((unsigned)kind < MAX_KIND)
        g_kind_on[kind] = false;
    say("disable", kind_name(kind));
    return CUPTI_SUCCESS;
}

API CUptiResult cuptiActivityFlushPeriod(uint32_t ms)
{
    (void)ms;
    say("flush period", NULL);
    return CUPTI_SUCCESS;
}

/* CG_STANDIN_FLOOD=F (see the top): F kernel records in as many buffers as they need. Called
 * with deliver()'s lock held. */
static void deliver_flood(void)
{
    static const char *const flood_names[8] = {"_Z5flood0v", "_Z5flood1v", "_Z5flood2v",
                                         "_Z5flood3v", "_Z5flood4v", "_Z5flood5v",
                                         "_Z5flood6v", "_Z5flood7v"};
    static uint64_t since;
    const char *env = getenv("CG_STANDIN_FLOOD");
    long f = env != NULL ? strtol(env, NULL, 10) : 0;
    if (f <= 0 || !kind_on(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL))
        return;
    uint64_t now = now_ns();
    if (since == 0 || since >= now)
        since = now - 1000000; /* the first flush: the last millisecond */
    uint64_t span = now - since;
    long made = 0;
    while (made < f && g_request != NULL && g_complete != NULL) {
        uint8_t *buf = NULL;
        size_t size = 0, max_records = 0, used = 0;
        g_request(&buf, &size, &max_records);
        if (buf == NULL) {
            pthread_mutex_lock(&g_lock);
            g_dropped += (size_t)(f - made);
            pthread_mutex_unlock(&g_lock);
            break;
        }
        for (; made < f && used + sizeof(CUpti_ActivityKernel10) <= size; made++) {
            CUpti_ActivityKernel10 k;
            memset(&k, 0, sizeof(k));
            k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
            k.start = since + span * (uint64_t)made / (uint64_t)f;
            k.end = k.start + 1000;
            k.name = flood_names[made % 8];
            k.streamId = 10 + (uint32_t)(made % 4);
            memcpy(buf + used, &k, sizeof(k));
            used += sizeof(k);
        }
        g_complete(NULL, 0, buf, size, used);
    }
    since = now;
}

/* Hands the pending records to the library in buffers it provides, back to back at their own
 * sizes (without the lock: the library calls back into cuptiActivityGetNumDroppedRecords), then
 * the flood's (CG_STANDIN_FLOOD). */
static void deliver(void)
{
    static union record taken[MAX_PENDING];
    static pthread_mutex_t deliver_lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&deliver_lock);
    pthread_mutex_lock(&g_lock);
    size_t n_taken = g_n_pending;
    memcpy(taken, g_pending, n_taken * sizeof(taken[0]));
    g_n_pending = 0;
    pthread_mutex_unlock(&g_lock);
    size_t from = 0;
    while (from < n_taken && g_request != NULL && g_complete != NULL) {
        uint8_t *buf = NULL;
        size_t size = 0, max_records = 0;
        g_request(&buf, &size, &max_records);
        if (buf == NULL) {
            pthread_mutex_lock(&g_lock);
            g_dropped += n_taken - from;
            pthread_mutex_unlock(&g_lock);
            break;
        }
        size_t used = 0;
        for (; from < n_taken; from++) {
            size_t k = record_size(taken[from].any.kind);
            if (used + k > size)
                break;
            memcpy(buf + used, &taken[from], k);
            used += k;
        }
        g_complete(NULL, 0, buf, size, used);
    }
    deliver_flood();
    pthread_mutex_unlock(&deliver_lock);
}

API CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
    const char *what = (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) ? "forced" : NULL;
    if (g_torn_down) {
        say("flush after teardown", what);
        return CUPTI_ERROR_NOT_INITIALIZED;
    }
    say("flush", what);
    static bool hung;
    const char *hang = getenv("CG_STANDIN_HANG_FLUSH_S");
    if (hang != NULL && what == NULL && !hung) {
        hung = true;
        say("flush hangs", hang);
        sleep((unsigned)strtoul(hang, NULL, 10));
    }
    if (!g_lazy_registered) {
        g_lazy_registered = true;
        atexit(teardown_lazy);
    }
    deliver();
    return CUPTI_SUCCESS;
}

/* CG_STANDIN_HOLD=M,N (see the top): called as a buffer's reduction begins. */
static void hold_reduction(void)
{
    const char *env = getenv("CG_STANDIN_HOLD");
    char *comma = NULL;
    long m = env != NULL ? strtol(env, &comma, 10) : -1;
    long n = comma != NULL && *comma == ',' ? strtol(comma + 1, NULL, 10) : -1;
    if (m < 0 || n < 0)
        return;
    pthread_mutex_lock(&g_hold_lock);
    if (g_held || g_kernels_launched < m) {
        pthread_mutex_unlock(&g_hold_lock);
        return;
    }
    g_held = true;
    long until = g_kernels_launched + n;
    say("hold", NULL);
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline); /* the condition variable's clock */
    deadline.tv_sec += 20;
    while (g_kernels_launched < until &&
           pthread_cond_timedwait(&g_hold_cond, &g_hold_lock, &deadline) == 0)
        ;
    bool released = g_kernels_launched >= until;
    pthread_mutex_unlock(&g_hold_lock);
    say(released ? "hold released" : "hold timed out", NULL);
}

API CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, CUpti_Activity **record)
{
    if (*record == NULL)
        hold_reduction();
    uint8_t *next = *record == NULL ? buffer : (uint8_t *)*record + record_size((*record)->kind);
    if (next + sizeof(CUpti_Activity) > buffer + valid ||
        next + record_size(((CUpti_Activity *)(void *)next)->kind) > buffer + valid)
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *record = (CUpti_Activity *)(void *)next;
    return CUPTI_SUCCESS;
}

API CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext ctx, uint32_t stream, size_t *dropped)
{
    (void)ctx;
    (void)stream;
    pthread_mutex_lock(&g_lock);
    *dropped = g_dropped;
    g_dropped = 0;
    pthread_mutex_unlock(&g_lock);
    return CUPTI_SUCCESS;
}

/* Queues r (its kind set) when its kind is enabled and there is room. */
static void queue(const union record *r)
{
    if (!kind_on(r->any.kind))
        return;
    pthread_mutex_lock(&g_lock);
    if (g_n_pending < MAX_PENDING)
        g_pending[g_n_pending++] = *r;
    pthread_mutex_unlock(&g_lock);
}

/* The exports for test canaries (see the top). */
API void cg_standin_kernel(uint64_t ns);
API void cg_standin_graph_kernel(uint64_t ns, uint32_t graph_id);
API void cg_standin_sync(uint32_t type, uint64_t ns);
API void cg_standin_memcpy(uint8_t copy_kind, uint8_t src_kind, uint8_t dst_kind, uint64_t bytes,
                           uint64_t ns);
API void cg_standin_memory(int alloc, uint64_t bytes);
API void cg_standin_jit(void);
API void cg_standin_module_load(void);

void cg_standin_graph_kernel(uint64_t ns, uint32_t graph_id)
{
    union record r;
    memset(&r, 0, sizeof(r));
    r.kernel.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    r.kernel.start = now_ns();
    r.kernel.end = r.kernel.start + ns;
    r.kernel.name = kernel_name;
    r.kernel.streamId = 7;
    r.kernel.graphId = graph_id;
    static uint64_t calls;
    r.kernel.graphNodeId = graph_id != 0 ? ((uint64_t)graph_id << 32) | (1 + calls++ % 2) : 0;
    queue(&r);
    pthread_mutex_lock(&g_hold_lock);
    g_kernels_launched++;
    pthread_cond_broadcast(&g_hold_cond);
    pthread_mutex_unlock(&g_hold_lock);
}

/* CG_STANDIN_DEVICE1 (see the top): its kernel's name (kept for the process: records borrow it),
 * start offset and length; false when it is not set. */
static bool second_device(const char **name, uint64_t *after, uint64_t *ns)
{
    static char kept[128];
    const char *env = getenv("CG_STANDIN_DEVICE1");
    const char *comma = env != NULL ? strchr(env, ',') : NULL;
    if (comma == NULL || (size_t)(comma - env) >= sizeof(kept) ||
        sscanf(comma + 1, "%" SCNu64 ",%" SCNu64, after, ns) != 2)
        return false;
    if (kept[0] == '\0')
        memcpy(kept, env, (size_t)(comma - env));
    *name = kept;
    return true;
}

/* Device d's context (0 or 1): the stand-in libcuda's when it is loaded, else a made-up one. */
static void *context_of(int d)
{
    static int made_up[2];
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *sym = cuda != NULL ? dlsym(cuda, "cg_standin_cuda_context") : NULL;
    void *(*get)(int) = NULL;
    memcpy(&get, &sym, sizeof(get)); /* POSIX: a data pointer converts */
    return get != NULL ? get(d) : &made_up[d];
}

/* Device d's context is created (once, at its first kernel): see the top. */
static void context_created(int d)
{
    static bool created[2];
    if (created[d])
        return;
    created[d] = true;
    const char *which = d == 0 ? "0" : "1";
    if (!g_context_cb_on[0] || g_subscriber_cb == NULL) {
        say("context unseen", which);
        return;
    }
    CUpti_ResourceData data;
    memset(&data, 0, sizeof(data));
    data.context = (CUcontext)context_of(d);
    say("context created", which);
    g_subscriber_cb(g_subscriber_data, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED,
                    &data);
}

/* CG_STANDIN_DEVICE1_ASYNC: GPU 1's kernel still running (g_running1_lock). */
static pthread_mutex_t g_running1_lock = PTHREAD_MUTEX_INITIALIZER;
static union record g_running1;
static bool g_has_running1;

API void cg_standin_context_synchronized(void *ctx);

void cg_standin_context_synchronized(void *ctx)
{
    if (ctx != context_of(1))
        return;
    pthread_mutex_lock(&g_running1_lock);
    if (g_has_running1) {
        queue(&g_running1);
        g_has_running1 = false;
        say("held released", NULL);
    }
    pthread_mutex_unlock(&g_running1_lock);
}

void cg_standin_kernel(uint64_t ns)
{
    uint64_t start = now_ns();
    context_created(0);
    cg_standin_graph_kernel(ns, 0);
    const char *name;
    uint64_t after, length;
    if (!second_device(&name, &after, &length))
        return;
    context_created(1);
    while (now_ns() < start + after) {
    }
    union record r;
    memset(&r, 0, sizeof(r));
    r.kernel.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    r.kernel.start = now_ns();
    r.kernel.end = r.kernel.start + length;
    r.kernel.name = name;
    r.kernel.deviceId = 1;
    r.kernel.streamId = 7;
    const char *async = getenv("CG_STANDIN_DEVICE1_ASYNC");
    if (async == NULL || strcmp(async, "1") != 0) {
        queue(&r);
        return;
    }
    pthread_mutex_lock(&g_running1_lock); /* the one before completes as this one is launched */
    if (g_has_running1)
        queue(&g_running1);
    g_running1 = r;
    g_has_running1 = true;
    pthread_mutex_unlock(&g_running1_lock);
}

/* An API callback's call, for a thread of the stand-in's own. */
struct callback_call {
    CUpti_CallbackDomain domain;
    uint32_t cbid;
    const CUpti_CallbackData *data;
};

static void *callback_thread(void *arg)
{
    const struct callback_call *c = arg;
    g_subscriber_cb(g_subscriber_data, c->domain, c->cbid, c->data);
    return NULL;
}

/* The kept thread of CG_STANDIN_CALL_THREAD=ranged: one call at a time, handed over under
 * g_worker_lock (g_worker_call set; cleared when done). */
static pthread_mutex_t g_worker_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_worker_cond = PTHREAD_COND_INITIALIZER;
static const struct callback_call *g_worker_call;
static bool g_worker_started;

static void *ranged_thread(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&g_worker_lock);
    for (;;) {
        while (g_worker_call == NULL)
            pthread_cond_wait(&g_worker_cond, &g_worker_lock);
        const struct callback_call *c = g_worker_call;
        pthread_mutex_unlock(&g_worker_lock);
        nvtxRangePushA("lib-scan");
        nvtxRangePop();
        g_subscriber_cb(g_subscriber_data, c->domain, c->cbid, c->data);
        pthread_mutex_lock(&g_worker_lock);
        g_worker_call = NULL;
        pthread_cond_broadcast(&g_worker_cond);
    }
    return NULL;
}

/* Runs c on the kept thread (started on first use, detached); false when it cannot start. */
static bool on_ranged_thread(const struct callback_call *c)
{
    pthread_mutex_lock(&g_worker_lock);
    if (!g_worker_started) {
        pthread_t t;
        if (pthread_create(&t, NULL, ranged_thread, NULL) != 0) {
            pthread_mutex_unlock(&g_worker_lock);
            return false;
        }
        pthread_detach(t);
        g_worker_started = true;
    }
    g_worker_call = c;
    pthread_cond_broadcast(&g_worker_cond);
    while (g_worker_call != NULL)
        pthread_cond_wait(&g_worker_cond, &g_worker_lock);
    pthread_mutex_unlock(&g_worker_lock);
    return true;
}

/* The subscriber's callback for cbid of domain: on the calling thread, or with
 * CG_STANDIN_CALL_THREAD=other on a thread started for it (joined before this returns), as the API
 * calls a program's other threads make (PyTorch's autograd thread runs backward's), or with
 * CG_STANDIN_CALL_THREAD=ranged on the kept thread that has ranges of its own. */
static void callback(CUpti_CallbackDomain domain, uint32_t cbid, const CUpti_CallbackData *d)
{
    const char *where = getenv("CG_STANDIN_CALL_THREAD");
    pthread_t t;
    struct callback_call c = {domain, cbid, d};
    if (where != NULL && strcmp(where, "other") == 0 &&
        pthread_create(&t, NULL, callback_thread, &c) == 0) {
        pthread_join(t, NULL);
        return;
    }
    if (where != NULL && strcmp(where, "ranged") == 0 && on_ranged_thread(&c))
        return;
    g_subscriber_cb(g_subscriber_data, domain, cbid, d);
}

/* An API call of cbid in domain (runtime or driver): its correlation id, with the subscriber's
 * callback called at its entry and exit when it enabled cbid. */
static uint32_t api_call_in(CUpti_CallbackDomain domain, uint32_t cbid)
{
    bool driver = domain == CUPTI_CB_DOMAIN_DRIVER_API;
    pthread_mutex_lock(&g_lock);
    uint32_t corr = g_next_corr++;
    bool on = g_api_on[driver][cbid] && g_subscriber_cb != NULL;
    pthread_mutex_unlock(&g_lock);
    if (!on)
        return corr;
    CUpti_CallbackData d;
    memset(&d, 0, sizeof(d));
    d.callbackSite = CUPTI_API_ENTER;
    d.functionName = api_name(domain, cbid);
    d.correlationId = corr;
    callback(domain, cbid, &d);
    d.callbackSite = CUPTI_API_EXIT;
    callback(domain, cbid, &d);
    return corr;
}

/* A runtime API call of cbid (see api_call_in). */
static uint32_t api_call(uint32_t cbid)
{
    return api_call_in(CUPTI_CB_DOMAIN_RUNTIME_API, cbid);
}

/* CG_STANDIN_POLLS polls of the stream or event of a synchronisation of type (before it): each a
 * query's record of the synchronisation's own type (which type a real CUPTI gives a query's record
 * is not documented: this is the case where the type cannot tell them apart), the last one finding
 * the work done (returnValue 0), the others not (CUDA_ERROR_NOT_READY). */
static void polls(uint32_t type)
{
    const char *env = getenv("CG_STANDIN_POLLS");
    long n = env != NULL ? strtol(env, NULL, 10) : 0;
    uint32_t cbid = type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE
                        ? CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020
                    : type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE
                        ? CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020
                        : 0;
    for (long i = 0; cbid != 0 && i < n; i++) {
        union record r;
        memset(&r, 0, sizeof(r));
        r.sync.correlationId = api_call(cbid);
        r.sync.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
        r.sync.type = (CUpti_ActivitySynchronizationType)type;
        r.sync.start = now_ns();
        r.sync.end = r.sync.start + 1000;
        r.sync.streamId = 7;
        r.sync.cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
        r.sync.returnValue = i + 1 < n ? 600 /* CUDA_ERROR_NOT_READY */ : 0;
        queue(&r);
    }
}

void cg_standin_sync(uint32_t type, uint64_t ns)
{
    polls(type);
    static const uint32_t cbid[] = {
        [CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE] =
            CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020,
        [CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT] =
            CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020,
        [CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE] =
            CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
        [CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE] =
            CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
    };
    union record r;
    memset(&r, 0, sizeof(r));
    r.sync.correlationId = api_call(type < sizeof(cbid) / sizeof(cbid[0]) ? cbid[type] : 0);
    r.sync.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    r.sync.type = (CUpti_ActivitySynchronizationType)type;
    r.sync.start = now_ns();
    r.sync.end = r.sync.start + ns;
    r.sync.streamId = 7;
    r.sync.cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
    queue(&r);
}

void cg_standin_memcpy(uint8_t copy_kind, uint8_t src_kind, uint8_t dst_kind, uint64_t bytes,
                       uint64_t ns)
{
    union record r;
    memset(&r, 0, sizeof(r));
    const char *newer = getenv("CG_STANDIN_NEWER_API");
    r.copy.correlationId =
        newer != NULL && strcmp(newer, "1") == 0
            ? api_call_in(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE + 5)
            : api_call(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020);
    r.copy.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    r.copy.copyKind = copy_kind;
    r.copy.srcKind = src_kind;
    r.copy.dstKind = dst_kind;
    r.copy.bytes = bytes;
    r.copy.start = now_ns();
    r.copy.end = r.copy.start + ns;
    r.copy.streamId = 7;
    queue(&r);
}

void cg_standin_memory(int alloc, uint64_t bytes)
{
    union record r;
    memset(&r, 0, sizeof(r));
    r.memory.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
    r.memory.memoryOperationType = alloc ? CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION
                                         : CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
    r.memory.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    const char *vmm = getenv("CG_STANDIN_VMM");
    if (vmm != NULL && strcmp(vmm, "1") == 0) {
        /* the virtual memory API: physical memory created and mapped, unmapped and released */
        if (alloc) {
            r.memory.correlationId = api_call_in(CUPTI_CB_DOMAIN_DRIVER_API,
                                                 CUPTI_DRIVER_TRACE_CBID_cuMemCreate);
            api_call_in(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemMap);
        } else {
            api_call_in(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemUnmap);
            r.memory.correlationId = api_call_in(CUPTI_CB_DOMAIN_DRIVER_API,
                                                 CUPTI_DRIVER_TRACE_CBID_cuMemRelease);
        }
    } else {
        r.memory.correlationId = api_call(alloc ? CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020
                                                : CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020);
    }
    r.memory.bytes = bytes;
    r.memory.timestamp = now_ns();
    queue(&r);
}

/* The device record of the stand-in's GPU, id 0 (as a real CUPTI gives one per device): its
 * UUID the 32 hex digits of CG_STANDIN_DEVICE_UUID, else bytes 0x10 to 0x1f; and with
 * CG_STANDIN_DEVICE1, GPU 1's, its UUID bytes 0x20 to 0x2f. */
static void device_record(void)
{
    const char *name;
    uint64_t after, ns;
    if (second_device(&name, &after, &ns)) {
        static const char second_name[] = "Standin GPU 1";
        union record r;
        memset(&r, 0, sizeof(r));
        r.device.kind = CUPTI_ACTIVITY_KIND_DEVICE;
        r.device.id = 1;
        r.device.name = second_name;
        for (size_t i = 0; i < sizeof(r.device.uuid.bytes); i++)
            r.device.uuid.bytes[i] = (char)(0x20 + i);
        queue(&r);
    }
    static const char gpu_name[] = "Standin GPU";
    union record r;
    memset(&r, 0, sizeof(r));
    r.device.kind = CUPTI_ACTIVITY_KIND_DEVICE;
    r.device.id = 0;
    r.device.name = gpu_name;
    const char *hex = getenv("CG_STANDIN_DEVICE_UUID");
    for (size_t i = 0; i < sizeof(r.device.uuid.bytes); i++) {
        unsigned v = 0x10 + (unsigned)i;
        if (hex != NULL && strlen(hex) == 2 * sizeof(r.device.uuid.bytes))
            sscanf(hex + 2 * i, "%2x", &v);
        r.device.uuid.bytes[i] = (char)v;
    }
    queue(&r);
}

void cg_standin_jit(void)
{
    union record r;
    memset(&r, 0, sizeof(r));
    r.jit.kind = CUPTI_ACTIVITY_KIND_JIT;
    r.jit.jitEntryType = CUPTI_ACTIVITY_JIT_ENTRY_PTX_TO_CUBIN;
    r.jit.jitOperationType = CUPTI_ACTIVITY_JIT_OPERATION_COMPILE;
    r.jit.start = now_ns();
    r.jit.end = r.jit.start + 1000;
    queue(&r);
}

void cg_standin_module_load(void)
{
    static const char cubin[16] = "standin cubin";
    CUpti_ModuleResourceData module = {1, sizeof(cubin), cubin};
    CUpti_ResourceData data;
    memset(&data, 0, sizeof(data));
    data.resourceDescriptor = &module;
    if (!g_module_cb_on || g_subscriber_cb == NULL) {
        say("module load unseen", NULL);
        return;
    }
    say("module load", NULL);
    g_subscriber_cb(g_subscriber_data, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED,
                    &data);
}
