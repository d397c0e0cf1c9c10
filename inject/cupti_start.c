/*
 * cupti_start: the CUDA side of the injection library's start-up (InitializeInjection, called by
 * the driver in cuInit when CUDA_INJECTION64_PATH names this library): libcupti loaded, the
 * subscription, the activity kinds and callbacks chosen and enabled, the flush thread started.
 * What runs after is cupti.c's.
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
 * Threading: start-up runs once (pthread_once), on the thread in cuInit, and returns before
 * CUDA goes on. From the subscription on, cupti.c's callbacks may run on other threads: what they
 * read of the aggregation is set under the aggregation lock, a query's callback id is marked in
 * gpu_query_cbid before its callback is enabled, the buffers' cap and the step flush are set
 * before the buffer callbacks are registered or gpu_running says the GPU side runs. Nothing here
 * prints or exits.
 */
#define _GNU_SOURCE /* dlinfo, struct link_map */

#include "cupti_internal.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CG_CBID_GAP 64 /* ids without a name, past these headers' last, that end a domain's ids */

/* An activity kind and the counts (bits of 1 << enum cg_agg_count) it is needed for: a count is
 * measured when every kind it needs is enabled. */
struct activity_kind {
    CUpti_ActivityKind kind;
    const char *name;
    bool required;
    uint32_t counts;
};

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

static CUpti_SubscriberHandle g_subscriber;

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
void gpu_warn(const char *what, const char *detail)
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
            gpu_warn("CUPTI set-up part left off (" CG_ENV_CUPTI_OFF ")", part);
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
            gpu_warn(CG_ENV_CUPTI_OFF " names no part that can be left off (ignored)", text);
        }
}

/* Communication kernels besides NCCL's, from CANARY_GATE_COMM_KERNELS; a "w" line when it is not
 * a list of name parts. */
static void comm_kernels(void)
{
    char why[160];
    if (cg_agg_comm_kernels(getenv(CG_ENV_COMM_KERNELS), why, sizeof(why)) != 0)
        gpu_warn(CG_ENV_COMM_KERNELS " ignored", why);
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
        gpu_warn(CG_ENV_CUPTI_PATH " cannot be loaded", dlerror());
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
    REQUIRE(gpu_api.result_string, "cuptiGetResultString");
    REQUIRE(gpu_api.subscribe_v2, "cuptiSubscribe_v2");
    REQUIRE(gpu_api.unsubscribe, "cuptiUnsubscribe");
    REQUIRE(gpu_api.register_callbacks, "cuptiActivityRegisterCallbacks");
    REQUIRE(gpu_api.register_timestamp, "cuptiActivityRegisterTimestampCallback");
    REQUIRE(gpu_api.enable, "cuptiActivityEnable");
    REQUIRE(gpu_api.disable, "cuptiActivityDisable");
    REQUIRE(gpu_api.flush_all, "cuptiActivityFlushAll");
    REQUIRE(gpu_api.flush_period, "cuptiActivityFlushPeriod");
    REQUIRE(gpu_api.next_record, "cuptiActivityGetNextRecord");
    REQUIRE(gpu_api.dropped, "cuptiActivityGetNumDroppedRecords");
#undef REQUIRE
    RESOLVE(h, gpu_api.set_attribute, "cuptiActivitySetAttribute"); /* optional: see one_buffer */
    RESOLVE(h, gpu_api.enable_callback, "cuptiEnableCallback");     /* optional: module loads */
    RESOLVE(h, gpu_api.get_version, "cuptiGetVersion");             /* optional: graph kernels */
    RESOLVE(h, gpu_api.callback_name, "cuptiGetCallbackName");      /* optional: places */
    return NULL;
}

/* The CUDA driver already in the process (it calls InitializeInjection from cuInit); its
 * handle is kept for the process's life. */
static void load_cuda(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (h == NULL)
        return;
    gpu_cuda.handle = h;
    RESOLVE(h, gpu_cuda.driver_version, "cuDriverGetVersion");
    RESOLVE(h, gpu_cuda.ctx_get_current, "cuCtxGetCurrent");
    RESOLVE(h, gpu_cuda.ctx_set_current, "cuCtxSetCurrent");
    RESOLVE(h, gpu_cuda.ctx_synchronize, "cuCtxSynchronize");
}

static void record_cuda_version(void)
{
    int v = 0;
    if (gpu_cuda.driver_version == NULL || gpu_cuda.driver_version(&v) != CUDA_SUCCESS || v <= 0)
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
            gpu_api.disable(g_kinds[i].kind);
    gpu_api.unsubscribe(g_subscriber);
    g_subscriber = NULL;
    pthread_mutex_lock(&gpu_agg_lock);
    gpu_collecting = false;
    cg_agg_release(&gpu_agg);
    pthread_mutex_unlock(&gpu_agg_lock);
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
    if (gpu_api.set_attribute == NULL) {
        gpu_warn(what, "no cuptiActivitySetAttribute");
        return;
    }
    uint8_t off = 0;
    size_t size = sizeof(off);
    CUptiResult r =
        gpu_api.set_attribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, &size, &off);
    if (r != CUPTI_SUCCESS)
        gpu_warn(what, gpu_result_text(r));
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
    if (gpu_api.get_version != NULL && (r = gpu_api.get_version(&v)) == CUPTI_SUCCESS) {
        if (v / 10000 == CUPTI_API_VERSION / 10000)
            return true;
        int n = snprintf(detail, sizeof(detail), "libcupti API version %u, built for %u", v,
                         (unsigned)CUPTI_API_VERSION);
        why = n > 0 && (size_t)n < sizeof(detail) ? detail : "another libcupti API version";
    } else if (gpu_api.get_version != NULL) {
        why = gpu_result_text(r);
    }
    gpu_warn(
        "CUPTI kernel records may not carry graphId where expected (graph kernels not counted)",
        why);
    return false;
}

/* The subscriber's callback for module loads; false (and a "w" line) when it cannot be had. */
static bool enable_module_loads(void)
{
    const char *what = "CUPTI module load callback unavailable (module loads not counted)";
    if (gpu_api.enable_callback == NULL) {
        gpu_warn(what, "no cuptiEnableCallback");
        return false;
    }
    CUptiResult r = gpu_api.enable_callback(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                                            CUPTI_CBID_RESOURCE_MODULE_LOADED);
    if (r != CUPTI_SUCCESS)
        gpu_warn(what, gpu_result_text(r));
    return r == CUPTI_SUCCESS;
}

/* The resource callbacks that keep the contexts synchronised at the end of the measured window;
 * a "w" line when they cannot be had (only the ending thread's context is synchronised then). */
static void enable_contexts(void)
{
    const char *what = "CUPTI context callbacks unavailable (the end of the measured window "
                       "synchronises the ending thread's context only)";
    if (gpu_api.enable_callback == NULL) {
        gpu_warn(what, "no cuptiEnableCallback");
        return;
    }
    CUptiResult r = gpu_api.enable_callback(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                                            CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
    if (r == CUPTI_SUCCESS)
        r = gpu_api.enable_callback(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                                    CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
    if (r != CUPTI_SUCCESS)
        gpu_warn(what, gpu_result_text(r));
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
 * accepts, marking each in gpu_query_cbid first when queries. The ids are the loaded libcupti's,
 * not only these headers': a newer one numbers new functions past these headers' last id, so ids
 * are asked for their names (cuptiGetCallbackName) until CG_CBID_GAP in a row past that last one
 * have none (or CG_CBID_BITS). Returns whether any is on; a "w" line what: DETAIL when none is. */
static bool enable_api_callbacks(bool (*want)(const char *), bool queries, const char *what)
{
    if (gpu_api.enable_callback == NULL || gpu_api.callback_name == NULL) {
        gpu_warn(what, gpu_api.enable_callback == NULL ? "no cuptiEnableCallback"
                                                       : "no cuptiGetCallbackName");
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
            if (gpu_api.callback_name(domains[d].domain, cbid, &name) != CUPTI_SUCCESS ||
                name == NULL) {
                if (cbid >= domains[d].n && ++unnamed == CG_CBID_GAP)
                    break;
                continue;
            }
            unnamed = 0;
            if (!want(name))
                continue;
            if (queries)
                atomic_fetch_or(&gpu_query_cbid[d][cbid / 8], (uint8_t)(1u << (cbid % 8)));
            CUptiResult r = gpu_api.enable_callback(1, g_subscriber, domains[d].domain, cbid);
            if (r == CUPTI_SUCCESS)
                on++;
            else
                refused = r;
        }
    }
    if (on == 0)
        gpu_warn(what,
                 refused != CUPTI_SUCCESS ? gpu_result_text(refused) : "no such API function");
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
        if (gpu_counted & CG_COUNT(c))
            cg_inject_append(" %s", cg_agg_count_name((enum cg_agg_count)c));
    if (gpu_agg.corr != NULL) /* the API callbacks for places are on */
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
    CUptiResult r = gpu_api.register_timestamp(gpu_timestamp_cb);
    if (r != CUPTI_SUCCESS)
        gpu_warn("CUPTI timestamp callback refused (GPU records keep CUPTI's own clock)",
                 gpu_result_text(r));
    pthread_mutex_lock(&gpu_agg_lock);
    cg_agg_graph_ids(&gpu_agg, graph_ids);
    gpu_collecting = true;
    pthread_mutex_unlock(&gpu_agg_lock);
    if ((r = gpu_api.register_callbacks(gpu_buffer_requested, gpu_buffer_completed)) !=
        CUPTI_SUCCESS) {
        give_up(enabled, "CUPTI cannot start", gpu_result_text(r));
        return false;
    }
    for (size_t i = 0; i < CG_N_KINDS; i++) {
        if (!g_kinds[i].required && part_off(g_kinds[i].name))
            continue;
        r = gpu_api.enable(g_kinds[i].kind);
        if (r == CUPTI_SUCCESS) {
            enabled[i] = true;
            continue;
        }
        int n = snprintf(what, sizeof(what), "CUPTI activity kind %s %s", g_kinds[i].name,
                         g_kinds[i].required ? "cannot be enabled" : "unavailable");
        if (n < 0 || (size_t)n >= sizeof(what))
            what[0] = '\0';
        if (g_kinds[i].required) {
            give_up(enabled, what, gpu_result_text(r));
            return false;
        }
        gpu_warn(what, gpu_result_text(r));
    }
    bool modules = !part_off("module_loads") && enable_module_loads();
    enable_contexts();
    bool placed = !part_off("places") && enable_places();
    bool syncs = false;
    for (size_t i = 0; i < CG_N_KINDS; i++)
        syncs |= enabled[i] && g_kinds[i].kind == CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    bool queries = syncs && enable_queries();
    pthread_mutex_lock(&gpu_agg_lock);
    gpu_counted = counts_measured(enabled, graph_ids, modules);
    if (placed)
        cg_agg_places(&gpu_agg, &gpu_corr);
    if (queries)
        cg_agg_queries(&gpu_agg, &gpu_queries);
    pthread_mutex_unlock(&gpu_agg_lock);
    gpu_step_flush = !part_off("step_flush");
    if (!part_off("flush_period") && (r = gpu_api.flush_period(1000)) != CUPTI_SUCCESS)
        gpu_warn("CUPTI flush period refused (records arrive at step ends)", gpu_result_text(r));
    if (!gpu_worker_start()) {
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
    if (cg_agg_new(&gpu_agg, cfg->warmup) != 0 ||
        (cfg->trace_first >= 0 && cg_agg_trace(&gpu_agg, cfg->trace_first, cfg->trace_last,
                                               (size_t)cfg->trace_max_events) != 0)) {
        cg_agg_release(&gpu_agg);
        unavailable("out of memory", NULL);
        return;
    }
    cg_agg_measure(&gpu_agg, cfg->measure_end);
    gpu_max_buffers = (size_t)(cfg->buffer_cap_bytes / (int64_t)CG_BUF_BYTES);
    if (gpu_max_buffers < 1)
        gpu_max_buffers = 1;
    if (gpu_max_buffers > CG_MAX_BUFFERS)
        gpu_max_buffers = CG_MAX_BUFFERS;

    char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN * 2] = "";
    CUpti_SubscriberParams params;
    memset(&params, 0, sizeof(params));
    params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    params.subscriberName = "canary-gate";
    params.oldSubscriberName = holder;
    params.oldSubscriberSize = sizeof(holder);
    CUptiResult r = gpu_api.subscribe_v2(&g_subscriber, gpu_subscriber_cb, NULL, &params);
    if (r != CUPTI_SUCCESS) {
        cg_agg_release(&gpu_agg);
        if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
            unavailable("another profiler holds the CUPTI subscriber slot",
                        holder[0] ? holder : "unknown tool");
        else /* the driver calls us from cuInit, so it is loaded unless we were called by hand */
            unavailable(gpu_cuda.handle ? "CUPTI cannot start"
                                        : "no CUDA driver loaded; CUPTI cannot start",
                        gpu_result_text(r));
        return;
    }
    if (!start_activity())
        return;
    atomic_store(&gpu_running, true);
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
