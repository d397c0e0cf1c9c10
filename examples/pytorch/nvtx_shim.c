/*
 * nvtx_shim: canary-gate's small NVTX library: ranges and marks of the default domain through
 * ctypes, for Python code that cannot rely on torch.cuda.nvtx.
 *
 * Three users. CPU-only PyTorch builds (such as Debian's python3-torch) have no torch.cuda.nvtx, so
 * the PyTorch canary (examples/pytorch/train_gpt.py --device cpu --nvtx-shim PATH) calls push,
 * pop and mark here instead: the same NVTX v3 calls torch.cuda.nvtx makes (nvtxRangePushA,
 * nvtxRangePop, nvtxMarkA in the default domain), so the injection library sees the same events.
 * And canary-gate's steps from the optimizer (python/canary_gate_steps.py, --steps-from) mark
 * each step with start/end ranges, on CPU-only and CUDA builds alike, and the canary_gate Python
 * module (python/canary_gate.py) marks a script's steps, with their tokens, and its ranges here.
 * Strings are copied by NVTX's tool before the call returns.
 */
#include <nvtx3/nvToolsExt.h>

#include <stdint.h>

/* Opens a range named name (NUL-terminated) on this thread. */
__attribute__((visibility("default"))) void canary_shim_push(const char *name);
/* Closes this thread's innermost open range. */
__attribute__((visibility("default"))) void canary_shim_pop(void);
/* A mark named message, e.g. "loss=2.5" (how torch.cuda.nvtx.mark reports a loss). */
__attribute__((visibility("default"))) void canary_shim_mark(const char *message);
/* Starts a process-wide range named name (it may end on another thread); its id, 0 without an
 * NVTX tool. canary-gate's steps from the optimizer (python/canary_gate_steps.py) use these. */
__attribute__((visibility("default"))) uint64_t canary_shim_start(const char *name);
/* Ends the range of that id. */
__attribute__((visibility("default"))) void canary_shim_end(uint64_t id);
/* Opens a range named name on this thread with an int64 payload (a step's token count, which the
 * injection library reads from a step range's payload). The canary_gate Python module's step()
 * (python/canary_gate.py) uses it. */
__attribute__((visibility("default"))) void canary_shim_push_payload(const char *name,
                                                                     int64_t payload);

void canary_shim_push(const char *name)
{
    nvtxRangePushA(name);
}

void canary_shim_pop(void)
{
    nvtxRangePop();
}

void canary_shim_mark(const char *message)
{
    nvtxMarkA(message);
}

uint64_t canary_shim_start(const char *name)
{
    return nvtxRangeStartA(name);
}

void canary_shim_end(uint64_t id)
{
    nvtxRangeEnd(id);
}

void canary_shim_push_payload(const char *name, int64_t payload)
{
    nvtxEventAttributes_t a = {0};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = name;
    a.payloadType = NVTX_PAYLOAD_TYPE_INT64;
    a.payload.llValue = payload;
    nvtxRangePushEx(&a);
}
