/*
 * nvtx: the NVTX v3 tool side of the injection library (InitializeInjectionNvtx2): the NVTX ABI.
 *
 * NVTX hands the tool its function tables; this file fills the slots for push/pop and start/end
 * ranges (default domain and created domains; ASCII, wide and registered-string messages; int32
 * and int64 payloads), domain creation and string registration, and marks of the default domain
 * (for the step loss). Slots left empty (categories, resources, sync) stay NVTX no-ops.
 * What a range means (steps, ops, counts) is nvtx_steps.c's, whose nvtx_end fills the range end
 * slot itself.
 *
 * Handles: the domain and registered-string handles this library gives out are numbers (a tag in
 * the top 16 bits, which no user-space pointer has on the 64-bit platforms CUDA runs on, and an
 * index into a table the library owns), never pointers. A handle is looked up, never
 * dereferenced: a handle another tool made, or any made-up value, names the "(unknown domain)"
 * or the empty string.
 *
 * Loss: a mark of the default domain named "loss" with a floating (or integer) payload, or a mark
 * whose message is "loss=<number>", reports the loss of the step most recently begun; it is
 * appended to the shard at once ("l STEP VALUE"). The marks canary-gate's sitecustomize makes
 * (a backward pass, an optimizer step: launch_env.h) are counted in the open step
 * (nvtx_work_mark). Other marks cost a string compare.
 *
 * Threading: the hooks run on any thread of the canary, at once; they take no lock but to make a
 * domain or register a string (handle lookups are lock-free), and hand ranges to nvtx_steps.c.
 */
#include "nvtx_internal.h"

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#define CG_HANDLE_CHUNK 1024
#define CG_HANDLE_CHUNKS 256
#define CG_HANDLE_TAG_MASK ((uint64_t)0xffff << 48)
#define CG_DOMAIN_TAG ((uint64_t)0xc9d0 << 48)
#define CG_STRING_TAG ((uint64_t)0xc950 << 48)

_Static_assert(sizeof(void *) == 8, "handles carry a tag in the top 16 bits of a 64-bit value");

/* Handles given out: entry i of a table is chunk[i / CG_HANDLE_CHUNK][i % CG_HANDLE_CHUNK]; the
 * handle is tag | (i + 1). Lookups take no lock (entries are written before n is published). */
struct handle_table {
    void **_Atomic chunk[CG_HANDLE_CHUNKS];
    _Atomic uint32_t n;
    pthread_mutex_t lock;
    uint64_t tag;
};

static struct cg_domain *g_domains;
static pthread_mutex_t g_domain_lock = PTHREAD_MUTEX_INITIALIZER;
static struct handle_table g_domain_handles = {.lock = PTHREAD_MUTEX_INITIALIZER,
                                               .tag = CG_DOMAIN_TAG};
static struct handle_table g_string_handles = {.lock = PTHREAD_MUTEX_INITIALIZER,
                                               .tag = CG_STRING_TAG};
/* What a domain handle the library did not give out names. */
static struct cg_domain g_foreign_domain = {.name = "(unknown domain)"};

/* --- handles ----------------------------------------------------------------------------- */

/* Gives out a handle for entry (the library's own memory); 0 when the table is full. */
static uint64_t handle_add(struct handle_table *t, void *entry)
{
    uint64_t h = 0;
    pthread_mutex_lock(&t->lock);
    uint32_t i = atomic_load_explicit(&t->n, memory_order_relaxed);
    if (i < (uint32_t)CG_HANDLE_CHUNK * CG_HANDLE_CHUNKS) {
        void **chunk = atomic_load_explicit(&t->chunk[i / CG_HANDLE_CHUNK], memory_order_relaxed);
        if (chunk == NULL) {
            chunk = calloc(CG_HANDLE_CHUNK, sizeof(*chunk));
            if (chunk != NULL)
                atomic_store_explicit(&t->chunk[i / CG_HANDLE_CHUNK], chunk,
                                      memory_order_release);
        }
        if (chunk != NULL) {
            chunk[i % CG_HANDLE_CHUNK] = entry;
            atomic_store_explicit(&t->n, i + 1, memory_order_release);
            h = t->tag | ((uint64_t)i + 1);
        }
    }
    pthread_mutex_unlock(&t->lock);
    return h;
}

/* The entry of handle h, or NULL when h is not one this table gave out. Reads only the table. */
static void *handle_get(const struct handle_table *t, const void *h)
{
    uint64_t v = (uint64_t)(uintptr_t)h;
    if ((v & CG_HANDLE_TAG_MASK) != t->tag)
        return NULL;
    uint64_t i = (v & ~CG_HANDLE_TAG_MASK) - 1;
    if (i >= atomic_load_explicit(&t->n, memory_order_acquire))
        return NULL;
    void **chunk = atomic_load_explicit(&t->chunk[i / CG_HANDLE_CHUNK], memory_order_acquire);
    return chunk[i % CG_HANDLE_CHUNK];
}

/* --- messages and payloads --------------------------------------------------------------- */

static const char *wide_to_utf8(const wchar_t *w, char *buf, size_t cap)
{
    size_t k = 0;
    if (w == NULL)
        return "";
    for (; *w && k + 5 < cap; w++) {
        uint32_t c = (uint32_t)*w;
        if (c < 0x80) {
            buf[k++] = (char)c;
        } else if (c < 0x800) {
            buf[k++] = (char)(0xc0 | (c >> 6));
            buf[k++] = (char)(0x80 | (c & 0x3f));
        } else if (c < 0x10000) {
            buf[k++] = (char)(0xe0 | (c >> 12));
            buf[k++] = (char)(0x80 | ((c >> 6) & 0x3f));
            buf[k++] = (char)(0x80 | (c & 0x3f));
        } else if (c < 0x110000) {
            buf[k++] = (char)(0xf0 | (c >> 18));
            buf[k++] = (char)(0x80 | ((c >> 12) & 0x3f));
            buf[k++] = (char)(0x80 | ((c >> 6) & 0x3f));
            buf[k++] = (char)(0x80 | (c & 0x3f));
        }
    }
    buf[k] = '\0';
    return buf;
}

static const char *attr_message(const nvtxEventAttributes_t *a, char *buf, size_t cap)
{
    if (a == NULL || a->size < NVTX_EVENT_ATTRIB_STRUCT_SIZE)
        return "";
    switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
        return a->message.ascii ? a->message.ascii : "";
    case NVTX_MESSAGE_TYPE_UNICODE:
        return wide_to_utf8(a->message.unicode, buf, cap);
    case NVTX_MESSAGE_TYPE_REGISTERED: {
        const char *text = handle_get(&g_string_handles, (const void *)a->message.registered);
        return text != NULL ? text : "";
    }
    default:
        return "";
    }
}

static int64_t attr_tokens(const nvtxEventAttributes_t *a)
{
    if (a == NULL || a->size < NVTX_EVENT_ATTRIB_STRUCT_SIZE)
        return -1;
    switch (a->payloadType) {
    case NVTX_PAYLOAD_TYPE_INT64:
        return a->payload.llValue >= 0 ? a->payload.llValue : -1;
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64:
        return a->payload.ullValue <= (uint64_t)INT64_MAX ? (int64_t)a->payload.ullValue : -1;
    case NVTX_PAYLOAD_TYPE_INT32:
        return a->payload.iValue >= 0 ? a->payload.iValue : -1;
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32:
        return a->payload.uiValue;
    default:
        return -1;
    }
}

/* NULL for the default domain; the foreign domain for a handle the library did not give out. */
static const struct cg_domain *as_domain(nvtxDomainHandle_t h)
{
    if (h == NULL)
        return NULL;
    const struct cg_domain *d = handle_get(&g_domain_handles, (const void *)h);
    return d != NULL ? d : &g_foreign_domain;
}

/* --- push/pop ----------------------------------------------------------------------------- */

static int hook_push_a(const char *m)
{
    return nvtx_push(NULL, m ? m : "", -1);
}

static int hook_push_w(const wchar_t *m)
{
    char buf[CG_KEY_MAX];
    return nvtx_push(NULL, wide_to_utf8(m, buf, sizeof(buf)), -1);
}

static int hook_push_ex(const nvtxEventAttributes_t *a)
{
    char buf[CG_KEY_MAX];
    return nvtx_push(NULL, attr_message(a, buf, sizeof(buf)), attr_tokens(a));
}

static int hook_pop(void)
{
    return nvtx_pop(NULL);
}

static int hook_domain_push_ex(nvtxDomainHandle_t h, const nvtxEventAttributes_t *a)
{
    char buf[CG_KEY_MAX];
    return nvtx_push(as_domain(h), attr_message(a, buf, sizeof(buf)), attr_tokens(a));
}

static int hook_domain_pop(nvtxDomainHandle_t h)
{
    return nvtx_pop(as_domain(h));
}

/* --- start/end ---------------------------------------------------------------------------- */

static nvtxRangeId_t hook_start_a(const char *m)
{
    return nvtx_start(NULL, m ? m : "", -1);
}

static nvtxRangeId_t hook_start_w(const wchar_t *m)
{
    char buf[CG_KEY_MAX];
    return nvtx_start(NULL, wide_to_utf8(m, buf, sizeof(buf)), -1);
}

static nvtxRangeId_t hook_start_ex(const nvtxEventAttributes_t *a)
{
    char buf[CG_KEY_MAX];
    return nvtx_start(NULL, attr_message(a, buf, sizeof(buf)), attr_tokens(a));
}

static nvtxRangeId_t hook_domain_start_ex(nvtxDomainHandle_t h, const nvtxEventAttributes_t *a)
{
    char buf[CG_KEY_MAX];
    return nvtx_start(as_domain(h), attr_message(a, buf, sizeof(buf)), attr_tokens(a));
}

static void hook_domain_end(nvtxDomainHandle_t h, nvtxRangeId_t id)
{
    (void)h;
    nvtx_end(id);
}

/* --- marks: the step loss ---------------------------------------------------------------- */

static void loss_report(double v)
{
    int64_t step = atomic_load_explicit(&nvtx_cur_step, memory_order_relaxed);
    if (!nvtx_on || step < 0)
        return;
    cg_inject_lock();
    cg_inject_append(CG_SHARD_KEY_LOSS " %lld ", (long long)step);
    cg_inject_append_real(v);
    cg_inject_append("\n");
    cg_inject_unlock();
}

static bool attr_real(const nvtxEventAttributes_t *a, double *v)
{
    if (a == NULL || a->size < NVTX_EVENT_ATTRIB_STRUCT_SIZE)
        return false;
    switch (a->payloadType) {
    case NVTX_PAYLOAD_TYPE_DOUBLE: *v = a->payload.dValue; return true;
    case NVTX_PAYLOAD_TYPE_FLOAT: *v = (double)a->payload.fValue; return true;
    case NVTX_PAYLOAD_TYPE_INT64: *v = (double)a->payload.llValue; return true;
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64: *v = (double)a->payload.ullValue; return true;
    case NVTX_PAYLOAD_TYPE_INT32: *v = (double)a->payload.iValue; return true;
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32: *v = (double)a->payload.uiValue; return true;
    default: return false;
    }
}

/* "loss=<number>": the number in the C locale's format ("nan" and "inf" accepted). */
static bool message_real(const char *m, double *v)
{
    if (strncmp(m, "loss=", 5) != 0 || m[5] == '\0')
        return false;
    char *end = NULL;
    *v = strtod(m + 5, &end);
    return end != NULL && *end == '\0';
}

static void mark(const char *message, const nvtxEventAttributes_t *a)
{
    double v;
    if (message[0] == 'c') {
        nvtx_work_mark(message);
        return;
    }
    if (message[0] != 'l')
        return;
    if ((strcmp(message, "loss") == 0 && attr_real(a, &v)) || message_real(message, &v))
        loss_report(v);
}

static void hook_mark_ex(const nvtxEventAttributes_t *a)
{
    char buf[CG_KEY_MAX];
    mark(attr_message(a, buf, sizeof(buf)), a);
}

static void hook_mark_a(const char *m)
{
    if (m != NULL)
        mark(m, NULL);
}

static void hook_mark_w(const wchar_t *m)
{
    char buf[CG_KEY_MAX];
    mark(wide_to_utf8(m, buf, sizeof(buf)), NULL);
}

static void hook_domain_mark_ex(nvtxDomainHandle_t h, const nvtxEventAttributes_t *a)
{
    if (h == NULL) /* the default domain only */
        hook_mark_ex(a);
}

/* --- domains and registered strings ------------------------------------------------------ */

static nvtxDomainHandle_t domain_create(const char *name)
{
    struct cg_domain *d = NULL;
    uint64_t h = 0;
    if (name == NULL)
        name = "";
    pthread_mutex_lock(&g_domain_lock);
    for (d = g_domains; d != NULL; d = d->next)
        if (strcmp(d->name, name) == 0)
            break;
    if (d == NULL) {
        size_t n = strlen(name);
        d = malloc(sizeof(*d) + n + 1);
        if (d != NULL) {
            char *copy = (char *)(d + 1);
            memcpy(copy, name, n + 1);
            atomic_init(&d->trace_id, 0);
            d->name = copy;
            d->handle = handle_add(&g_domain_handles, d);
            if (d->handle != 0) {
                d->next = g_domains;
                g_domains = d;
            } else {
                free(d); /* no handle left: the domain's ranges go to the unknown domain */
                d = NULL;
            }
        }
    }
    if (d != NULL)
        h = d->handle;
    pthread_mutex_unlock(&g_domain_lock);
    return (nvtxDomainHandle_t)(uintptr_t)h;
}

static nvtxDomainHandle_t hook_domain_create_a(const char *name)
{
    return domain_create(name);
}

static nvtxDomainHandle_t hook_domain_create_w(const wchar_t *name)
{
    char buf[CG_KEY_MAX];
    return domain_create(wide_to_utf8(name, buf, sizeof(buf)));
}

static void hook_domain_destroy(nvtxDomainHandle_t h)
{
    (void)h; /* kept: ranges in flight may still name it */
}

/* Registered strings live as long as the process, as NVTX allows. The domain handle is not
 * used (nor read): strings are looked up by their own handle. */
static nvtxStringHandle_t register_string(const char *s)
{
    size_t n = strlen(s ? s : "");
    char *copy = malloc(n + 1);
    if (copy == NULL)
        return NULL;
    memcpy(copy, s ? s : "", n + 1);
    uint64_t h = handle_add(&g_string_handles, copy);
    if (h == 0)
        free(copy);
    return (nvtxStringHandle_t)(uintptr_t)h;
}

static nvtxStringHandle_t hook_register_a(nvtxDomainHandle_t h, const char *s)
{
    (void)h;
    return register_string(s);
}

static nvtxStringHandle_t hook_register_w(nvtxDomainHandle_t h, const wchar_t *s)
{
    char buf[CG_KEY_MAX];
    (void)h;
    return register_string(wide_to_utf8(s, buf, sizeof(buf)));
}

/* --- entry point -------------------------------------------------------------------------- */

static void set_slot(NvtxFunctionTable t, unsigned int size, unsigned int id, NvtxFunctionPointer fn)
{
    if (id < size && t[id] != NULL)
        *t[id] = fn;
}

#define CG_FN(f) ((NvtxFunctionPointer)(f))

/* Called by NVTX on the first NVTX call of the process; returns 1 when the tool is attached,
 * 0 to leave every NVTX call a no-op (no launcher environment). */
CG_INJECT_API int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table);

int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table)
{
    if (get_export_table == NULL || !cg_inject_start())
        return 0;
    const NvtxExportTableCallbacks *cb = get_export_table(NVTX_ETID_CALLBACKS);
    if (cb == NULL || cb->struct_size < sizeof(*cb) || cb->GetModuleFunctionTable == NULL)
        return 0;
    nvtx_steps_config(cg_inject_config());

    NvtxFunctionTable t = NULL;
    unsigned int n = 0;
    if (!cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &n) || t == NULL)
        return 0;
    set_slot(t, n, NVTX_CBID_CORE_MarkEx, CG_FN(hook_mark_ex));
    set_slot(t, n, NVTX_CBID_CORE_MarkA, CG_FN(hook_mark_a));
    set_slot(t, n, NVTX_CBID_CORE_MarkW, CG_FN(hook_mark_w));
    set_slot(t, n, NVTX_CBID_CORE_RangeStartEx, CG_FN(hook_start_ex));
    set_slot(t, n, NVTX_CBID_CORE_RangeStartA, CG_FN(hook_start_a));
    set_slot(t, n, NVTX_CBID_CORE_RangeStartW, CG_FN(hook_start_w));
    set_slot(t, n, NVTX_CBID_CORE_RangeEnd, CG_FN(nvtx_end));
    set_slot(t, n, NVTX_CBID_CORE_RangePushEx, CG_FN(hook_push_ex));
    set_slot(t, n, NVTX_CBID_CORE_RangePushA, CG_FN(hook_push_a));
    set_slot(t, n, NVTX_CBID_CORE_RangePushW, CG_FN(hook_push_w));
    set_slot(t, n, NVTX_CBID_CORE_RangePop, CG_FN(hook_pop));

    t = NULL;
    n = 0;
    if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &n) && t != NULL) {
        set_slot(t, n, NVTX_CBID_CORE2_DomainMarkEx, CG_FN(hook_domain_mark_ex));
        set_slot(t, n, NVTX_CBID_CORE2_DomainRangeStartEx, CG_FN(hook_domain_start_ex));
        set_slot(t, n, NVTX_CBID_CORE2_DomainRangeEnd, CG_FN(hook_domain_end));
        set_slot(t, n, NVTX_CBID_CORE2_DomainRangePushEx, CG_FN(hook_domain_push_ex));
        set_slot(t, n, NVTX_CBID_CORE2_DomainRangePop, CG_FN(hook_domain_pop));
        set_slot(t, n, NVTX_CBID_CORE2_DomainRegisterStringA, CG_FN(hook_register_a));
        set_slot(t, n, NVTX_CBID_CORE2_DomainRegisterStringW, CG_FN(hook_register_w));
        set_slot(t, n, NVTX_CBID_CORE2_DomainCreateA, CG_FN(hook_domain_create_a));
        set_slot(t, n, NVTX_CBID_CORE2_DomainCreateW, CG_FN(hook_domain_create_w));
        set_slot(t, n, NVTX_CBID_CORE2_DomainDestroy, CG_FN(hook_domain_destroy));
    }
    nvtx_on = true;
    return 1;
}
