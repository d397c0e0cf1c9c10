/*
 * nvtx_probe: a minimal NVTX injection library for canary-train's tests (never installed).
 * Loaded through NVTX_INJECTION64_PATH, it writes every push/pop range of the default domain
 * to the file named by CANARY_NVTX_PROBE_OUT, one line per range: two spaces per nesting
 * level, the name, and " payload=<int64>" when the range carries an INT64 payload. Handles
 * only RangePushA, RangePushEx and RangePop; other NVTX calls stay no-ops. Single-threaded
 * use (the canary's training thread); the file is line-buffered and closed at exit.
 */
#include <nvtx3/nvToolsExt.h>

#include <stdio.h>
#include <stdlib.h>

static FILE *out;
static int depth;

static void record(const char *name, const nvtxEventAttributes_t *attr)
{
    if (out == NULL)
        return;
    fprintf(out, "%*s%s", 2 * depth, "", name != NULL ? name : "?");
    if (attr != NULL && attr->payloadType == NVTX_PAYLOAD_TYPE_INT64)
        fprintf(out, " payload=%lld", (long long)attr->payload.llValue);
    fputc('\n', out);
}

static int NVTX_API probe_push_a(const char *message)
{
    record(message, NULL);
    return depth++;
}

static int NVTX_API probe_push_ex(const nvtxEventAttributes_t *attr)
{
    record(attr->messageType == NVTX_MESSAGE_TYPE_ASCII ? attr->message.ascii : NULL, attr);
    return depth++;
}

static int NVTX_API probe_pop(void)
{
    return depth > 0 ? --depth : -1;
}

static void probe_close(void)
{
    if (out != NULL)
        fclose(out);
    out = NULL;
}

/* NVTX's entry point: fills the core callbacks. Returns 1 on success, 0 to stay detached. */
__attribute__((visibility("default"))) int
InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table);

int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table)
{
    const char *path = getenv("CANARY_NVTX_PROBE_OUT");
    const NvtxExportTableCallbacks *cb =
        (const NvtxExportTableCallbacks *)get_table(NVTX_ETID_CALLBACKS);
    NvtxFunctionTable table = NULL;
    unsigned int size = 0;
    if (path == NULL || cb == NULL ||
        !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) ||
        size <= NVTX_CBID_CORE_RangePop)
        return 0;
    if (out == NULL) {
        out = fopen(path, "a");
        if (out == NULL)
            return 0;
        setvbuf(out, NULL, _IOLBF, 0);
        atexit(probe_close);
    }
    *table[NVTX_CBID_CORE_RangePushA] = (NvtxFunctionPointer)probe_push_a;
    *table[NVTX_CBID_CORE_RangePushEx] = (NvtxFunctionPointer)probe_push_ex;
    *table[NVTX_CBID_CORE_RangePop] = (NvtxFunctionPointer)probe_pop;
    return 1;
}
