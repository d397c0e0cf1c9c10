/*
 * fuzz_nvtx: NVTX names and payloads from the canary into the injection library, and the shard
 * lines it writes back into the gate's shard parser.
 *
 * The harness plays NVTX: it hands InitializeInjectionNvtx2 an export table, then calls the
 * slots the library filled (push/pop, start/end, domains, registered strings, marks) as the
 * input's byte code says, with names of any bytes (control characters, backslashes, invalid
 * UTF-8, wide characters) and any payload. At the end of an input every open range is closed,
 * and the shard the library wrote must parse: whatever a canary names its ranges, the gate reads
 * it back. Domain handles are the library's own, none (the default domain), or handles it never
 * gave out (a pointer to the harness's memory, a made-up number, its own tag with an index it
 * never issued), which must never be dereferenced. The measured window ends after step 3, so the
 * end of the window ("done") is written in inputs with enough steps. The ranges the library
 * counts per step ("n I ranges DELTA", which the gate's parser may skip) are read back too: only
 * steps before the window's end, positive deltas, and over the measured steps as many as the
 * range ops' calls when every range was ended (a start whose id the harness could not keep, or
 * the library could not give, never is). The library's sources are
 * compiled in (inject/core.c, nvtx.c, nvtx_steps.c, gpu_none.c) so that its per-process state can
 * be cleared between inputs.
 */
#include "fuzz.h"

#include "../inject/core.c"
#include "../inject/gpu_none.c"
#include "../inject/nvtx.c"
#include "../inject/nvtx_steps.c"

#include "shard.h"

#include <dirent.h>
#include <sys/stat.h>

#define MAX_HANDLES 8
#define MAX_IDS 64

static NvtxFunctionPointer g_core_fn[NVTX_CBID_CORE_SIZE];
static NvtxFunctionPointer *g_core_tab[NVTX_CBID_CORE_SIZE];
static NvtxFunctionPointer g_core2_fn[NVTX_CBID_CORE2_SIZE];
static NvtxFunctionPointer *g_core2_tab[NVTX_CBID_CORE2_SIZE];
static char g_dir[] = "/tmp/cg-fuzz-nvtx-XXXXXX";

static int NVTX_API get_module(NvtxCallbackModule m, NvtxFunctionTable *out, unsigned int *size)
{
    if (m == NVTX_CB_MODULE_CORE) {
        *out = g_core_tab;
        *size = NVTX_CBID_CORE_SIZE;
        return 1;
    }
    if (m == NVTX_CB_MODULE_CORE2) {
        *out = g_core2_tab;
        *size = NVTX_CBID_CORE2_SIZE;
        return 1;
    }
    return 0;
}

static const NvtxExportTableCallbacks g_callbacks = {sizeof(NvtxExportTableCallbacks), get_module};

static const void *NVTX_API get_export_table(uint32_t id)
{
    return id == NVTX_ETID_CALLBACKS ? &g_callbacks : NULL;
}

static void remove_dir(void)
{
    DIR *d = opendir(g_dir);
    if (d != NULL) {
        struct dirent *e;
        char path[PATH_MAX];
        while ((e = readdir(d)) != NULL)
            if (e->d_name[0] != '.' &&
                snprintf(path, sizeof(path), "%s/%s", g_dir, e->d_name) < (int)sizeof(path))
                unlink(path);
        closedir(d);
    }
    rmdir(g_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    for (size_t i = 0; i < NVTX_CBID_CORE_SIZE; i++)
        g_core_tab[i] = &g_core_fn[i];
    for (size_t i = 0; i < NVTX_CBID_CORE2_SIZE; i++)
        g_core2_tab[i] = &g_core2_fn[i];
    if (mkdtemp(g_dir) == NULL)
        abort();
    atexit(remove_dir); /* runs after the library's own exit handler */
    setenv(CG_ENV_SHARD_DIR, g_dir, 1);
    setenv(CG_ENV_WARMUP, "1", 1);
    setenv(CG_ENV_STEPS, "3", 1);
    setenv(CG_ENV_TRACE_STEPS, "1:3", 1); /* the trace lines too */
    setenv(CG_ENV_TRACE_MAX_EVENTS, "64", 1);
    unsetenv(CG_ENV_STEP_RANGE);
    if (InitializeInjectionNvtx2(get_export_table) != 1) {
        fprintf(stderr, "fuzz_nvtx: the library did not attach\n");
        abort();
    }
    return 0;
}

/* --- calling the slots ---------------------------------------------------------------------- */

#define CORE(id, type) ((type)(void *)g_core_fn[NVTX_CBID_CORE_##id])
#define CORE2(id, type) ((type)(void *)g_core2_fn[NVTX_CBID_CORE2_##id])

struct state {
    struct cg_fuzz_in in;
    nvtxDomainHandle_t domains[MAX_HANDLES];
    size_t n_domains;
    nvtxStringHandle_t strings[MAX_HANDLES];
    size_t n_strings;
    nvtxRangeId_t ids[MAX_IDS];
    size_t n_ids;
    bool lost_ids; /* a range started that will never end */
    char name[300];
    wchar_t wide[140];
};

static nvtxDomainHandle_t pick_domain(struct state *s)
{
    uint8_t k = cg_fuzz_u8(&s->in);
    if (k == 0xff)
        return (nvtxDomainHandle_t)(void *)s->name; /* not a handle the library made */
    if (k == 0xfe)
        return (nvtxDomainHandle_t)(uintptr_t)0x1234;
    if (k == 0xfd)
        return (nvtxDomainHandle_t)(uintptr_t)(CG_DOMAIN_TAG | 0xffffff); /* never issued */
    if (s->n_domains == 0 || k % (s->n_domains + 1) == s->n_domains)
        return NULL;
    return s->domains[k % (s->n_domains + 1)];
}

static const wchar_t *wide_name(struct state *s)
{
    size_t n = cg_fuzz_u8(&s->in) % 128;
    for (size_t i = 0; i < n; i++) {
        uint32_t c = (uint32_t)cg_fuzz_uint(&s->in, 3) % 0x110000u;
        s->wide[i] = c == 0 ? L'x' : (wchar_t)c;
    }
    s->wide[n] = L'\0';
    return s->wide;
}

/* Event attributes: message of any type, payload of any type. */
static void attributes(struct state *s, nvtxEventAttributes_t *a)
{
    memset(a, 0, sizeof(*a));
    a->version = NVTX_VERSION;
    a->size = cg_fuzz_u8(&s->in) == 0xff ? 8 : NVTX_EVENT_ATTRIB_STRUCT_SIZE; /* 8: too small */
    uint8_t mt = cg_fuzz_u8(&s->in);
    cg_fuzz_str(&s->in, s->name, sizeof(s->name));
    switch (mt % 5) {
    case 0: a->messageType = NVTX_MESSAGE_TYPE_ASCII; a->message.ascii = s->name; break;
    case 1: a->messageType = NVTX_MESSAGE_TYPE_UNICODE; a->message.unicode = wide_name(s); break;
    case 2:
        a->messageType = NVTX_MESSAGE_TYPE_REGISTERED;
        a->message.registered = s->n_strings ? s->strings[mt % s->n_strings] : NULL;
        if (mt >= 0xf0) /* a handle the library never gave out */
            a->message.registered = mt & 1 ? (nvtxStringHandle_t)(void *)s->name
                                           : (nvtxStringHandle_t)(uintptr_t)(CG_STRING_TAG | mt);
        break;
    case 3: a->messageType = NVTX_MESSAGE_TYPE_ASCII; a->message.ascii = NULL; break;
    default: a->messageType = (int32_t)mt; a->message.ascii = s->name; break;
    }
    static const int32_t payload_types[] = {
        NVTX_PAYLOAD_UNKNOWN, NVTX_PAYLOAD_TYPE_INT64, NVTX_PAYLOAD_TYPE_UNSIGNED_INT64,
        NVTX_PAYLOAD_TYPE_INT32, NVTX_PAYLOAD_TYPE_UNSIGNED_INT32, NVTX_PAYLOAD_TYPE_DOUBLE,
        NVTX_PAYLOAD_TYPE_FLOAT, 77};
    a->payloadType = payload_types[cg_fuzz_u8(&s->in) % 8];
    uint64_t bits = cg_fuzz_uint(&s->in, 8);
    memcpy(&a->payload, &bits, sizeof(bits));
}

static void remember_id(struct state *s, nvtxRangeId_t id)
{
    if (s->n_ids < MAX_IDS && id != 0)
        s->ids[s->n_ids++] = id;
    else
        s->lost_ids = true;
}

static void one_call(struct state *s, uint8_t op)
{
    nvtxEventAttributes_t a;
    switch (op % 16) {
    case 0:
        cg_fuzz_str(&s->in, s->name, sizeof(s->name));
        CORE(RangePushA, nvtxRangePushA_impl_fntype)(s->name);
        break;
    case 1:
        attributes(s, &a);
        CORE(RangePushEx, nvtxRangePushEx_impl_fntype)(&a);
        break;
    case 2:
        CORE(RangePop, nvtxRangePop_impl_fntype)();
        break;
    case 3:
        if (s->n_domains < MAX_HANDLES) {
            cg_fuzz_str(&s->in, s->name, sizeof(s->name));
            s->domains[s->n_domains++] = CORE2(DomainCreateA, nvtxDomainCreateA_impl_fntype)(s->name);
        }
        break;
    case 4: {
        nvtxDomainHandle_t d = pick_domain(s);
        attributes(s, &a);
        CORE2(DomainRangePushEx, nvtxDomainRangePushEx_impl_fntype)(d, &a);
        break;
    }
    case 5:
        CORE2(DomainRangePop, nvtxDomainRangePop_impl_fntype)(pick_domain(s));
        break;
    case 6:
        cg_fuzz_str(&s->in, s->name, sizeof(s->name));
        remember_id(s, CORE(RangeStartA, nvtxRangeStartA_impl_fntype)(s->name));
        break;
    case 7: {
        nvtxDomainHandle_t d = pick_domain(s);
        attributes(s, &a);
        remember_id(s, CORE2(DomainRangeStartEx, nvtxDomainRangeStartEx_impl_fntype)(d, &a));
        break;
    }
    case 8: {
        uint8_t k = cg_fuzz_u8(&s->in);
        nvtxRangeId_t id = s->n_ids ? s->ids[k % s->n_ids] : (nvtxRangeId_t)cg_fuzz_uint(&s->in, 8);
        CORE(RangeEnd, nvtxRangeEnd_impl_fntype)(id);
        break;
    }
    case 9:
        if (s->n_strings < MAX_HANDLES) {
            nvtxDomainHandle_t d = pick_domain(s);
            cg_fuzz_str(&s->in, s->name, sizeof(s->name));
            nvtxStringHandle_t h =
                CORE2(DomainRegisterStringA, nvtxDomainRegisterStringA_impl_fntype)(d, s->name);
            if (h != NULL)
                s->strings[s->n_strings++] = h;
        }
        break;
    case 10: /* a step, most of the time with a token payload */
    case 11:
        attributes(s, &a);
        a.messageType = NVTX_MESSAGE_TYPE_ASCII;
        a.message.ascii = "step";
        CORE(RangePushEx, nvtxRangePushEx_impl_fntype)(&a);
        break;
    case 12:
        attributes(s, &a);
        if (op & 0x10) {
            a.messageType = NVTX_MESSAGE_TYPE_ASCII;
            a.message.ascii = "loss";
        }
        CORE(MarkEx, nvtxMarkEx_impl_fntype)(&a);
        break;
    case 13:
        cg_fuzz_str(&s->in, s->name + 5, sizeof(s->name) - 5);
        memcpy(s->name, "loss=", 5);
        CORE(MarkA, nvtxMarkA_impl_fntype)(op & 0x10 ? s->name : s->name + 5);
        break;
    case 14:
        CORE(RangePushW, nvtxRangePushW_impl_fntype)(wide_name(s));
        break;
    default:
        if (s->n_domains < MAX_HANDLES)
            s->domains[s->n_domains++] = CORE2(DomainCreateW, nvtxDomainCreateW_impl_fntype)(wide_name(s));
        break;
    }
}

/* --- closing, reading back, clearing --------------------------------------------------------- */

static void close_all(struct state *s)
{
    for (size_t i = 0; i < s->n_ids; i++)
        CORE(RangeEnd, nvtxRangeEnd_impl_fntype)(s->ids[i]);
    while (t_stack.overflow > 0) /* pushes past the stack's depth */
        CORE(RangePop, nvtxRangePop_impl_fntype)();
    while (t_stack.depth > 0) {
        const struct cg_domain *d = t_stack.f[t_stack.depth - 1].domain;
        uint64_t h = d == NULL ? 0 : d == &g_foreign_domain ? 0x1234 : d->handle;
        CORE2(DomainRangePop, nvtxDomainRangePop_impl_fntype)((nvtxDomainHandle_t)(uintptr_t)h);
    }
}

/* Reads what the library appended since the last input and empties the file (it is opened with
 * O_APPEND, so later lines land at its new start). */
static char *take_shard(size_t *len)
{
    struct stat st;
    CG_FUZZ_CHECK(fstat(g_fd, &st) == 0, "fstat");
    size_t n = (size_t)st.st_size;
    size_t magic = strlen(CG_SHARD_MAGIC) + 1;
    char *buf = malloc(magic + n + 1);
    CG_FUZZ_CHECK(buf != NULL, "out of memory");
    memcpy(buf, CG_SHARD_MAGIC "\n", magic);
    int fd = open(g_part_path, O_RDONLY);
    CG_FUZZ_CHECK(fd >= 0, "cannot open the shard");
    ssize_t got = pread(fd, buf + magic, n, 0);
    close(fd);
    CG_FUZZ_CHECK(got == (ssize_t)n, "short read");
    CG_FUZZ_CHECK(ftruncate(g_fd, 0) == 0, "ftruncate");
    if (n >= magic && memcmp(buf + magic, CG_SHARD_MAGIC "\n", magic) == 0) {
        memmove(buf, buf + magic, n); /* the first input's shard has its own header */
        *len = n;
    } else {
        *len = magic + n;
    }
    buf[*len] = '\0';
    return buf;
}

static void clear_table(struct name_table *t)
{
    int32_t n = atomic_load(&t->n);
    for (int32_t j = 0; j < n; j++) {
        struct op *o = &t->slot[t->order[j]];
        free(o->name);
        memset(o, 0, sizeof(*o));
    }
    atomic_store(&t->n, 0);
}

/* Forgets the handles given out (freeing the entries when they are the table's to free). */
static void clear_handles(struct handle_table *t, bool free_entries)
{
    uint32_t n = atomic_load(&t->n);
    for (uint32_t i = 0; i < n && free_entries; i++)
        free(atomic_load(&t->chunk[i / CG_HANDLE_CHUNK])[i % CG_HANDLE_CHUNK]);
    for (size_t c = 0; c < CG_HANDLE_CHUNKS; c++) {
        free(atomic_load(&t->chunk[c]));
        atomic_store(&t->chunk[c], NULL);
    }
    atomic_store(&t->n, 0);
}

/* Clears the library's per-process state, as if the next input ran in a new process. */
static void clear_library(struct state *s)
{
    clear_table(&g_ops);
    clear_table(&g_trace_names);
    atomic_store(&g_trace_state, 0);
    atomic_store(&g_next_domain_id, 0);
    atomic_store(&g_trace_events, 0);
    atomic_store(&g_trace_dropped, 0);
    memset(g_se, 0, sizeof(g_se));
    g_se_next = 0;
    atomic_store(&g_next_step, 0);
    atomic_store(&nvtx_cur_step, -1);
    atomic_store(&g_open_steps, 0);
    atomic_store(&g_steps_thread, NULL);
    atomic_store(&g_stray_nested, 0);
    atomic_store(&g_stray_other, 0);
    g_stray_written[0] = g_stray_written[1] = 0;
    memset(&t_stack, 0, sizeof(t_stack));
    while (g_domains != NULL) {
        struct cg_domain *next = g_domains->next;
        free(g_domains);
        g_domains = next;
    }
    atomic_store(&g_foreign_domain.trace_id, 0);
    clear_handles(&g_domain_handles, false); /* the domains were freed above */
    clear_handles(&g_string_handles, true);
    memset(g_unrecorded, 0, sizeof(g_unrecorded));
    atomic_store(&g_n_unrecorded, 0);
    atomic_store(&g_unrecorded_written, 0);
    atomic_store(&g_measured, false);
    for (size_t c = 0; c < CG_RANGE_CHUNKS; c++) {
        free(atomic_load(&g_ranges[c]));
        atomic_store(&g_ranges[c], NULL);
    }
    g_ranges_from = 0;
    atomic_store(&g_ranges_lost, false);
    g_ranges_lost_written = false;
    (void)s;
}

/* The "n I ranges DELTA" lines of text: each for a step before the window's end, with a positive
 * delta; returns the sum of the deltas of the measured steps (CG_ENV_WARMUP..CG_ENV_STEPS). */
static int64_t measured_ranges(const char *text)
{
    int64_t sum = 0;
    for (const char *p = text; p != NULL && *p != '\0';) {
        long long step = 0, delta = 0;
        if (strncmp(p, CG_SHARD_KEY_COUNT " ", 2) == 0) {
            CG_FUZZ_CHECK(sscanf(p, CG_SHARD_KEY_COUNT " %lld " CG_SHARD_COUNT_RANGES " %lld",
                                 &step, &delta) == 2,
                          "bad count line: %.80s", p);
            CG_FUZZ_CHECK(step >= 0 && step < g_measure_end && delta > 0,
                          "count line out of the window: %.80s", p);
            if (step >= g_warmup)
                sum += delta;
        }
        p = strchr(p, '\n');
        if (p != NULL)
            p++;
    }
    return sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct state s;
    memset(&s, 0, sizeof(s));
    s.in = (struct cg_fuzz_in){data, size};
    for (int calls = 0; s.in.left > 0 && calls < 512; calls++)
        one_call(&s, cg_fuzz_u8(&s.in));
    close_all(&s);
    cg_inject_lock(); /* what the exit writes: the op calls of ranges that ended after every step */
    cg_nvtx_write_ops();
    cg_nvtx_write_counts(true);
    cg_inject_unlock();

    size_t len = 0;
    char *text = take_shard(&len);
    struct cg_shard shard;
    struct cg_err err;
    cg_err_init(&err);
    int rc = cg_shard_parse(text, len, "fuzz.shard", &shard, &err);
    CG_FUZZ_CHECK(rc == 0, "the library wrote a shard the gate cannot read: %s\n%s", err.msg, text);
    int64_t calls = 0;
    for (size_t i = 0; i < shard.n_ops; i++) {
        CG_FUZZ_CHECK(shard.ops[i].kind == CG_OP_RANGE && shard.ops[i].calls > 0,
                      "op '%s' of kind %d", shard.ops[i].name, (int)shard.ops[i].kind);
        calls += shard.ops[i].calls;
    }
    int64_t ranges = measured_ranges(text);
    CG_FUZZ_CHECK(ranges >= calls && (s.lost_ids || ranges == calls),
                  "%lld ranges counted in the measured steps, %lld range op calls\n%s",
                  (long long)ranges, (long long)calls, text);
    cg_shard_release(&shard);
    free(text);
    clear_library(&s);
    return 0;
}
