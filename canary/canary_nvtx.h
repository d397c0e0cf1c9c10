/*
 * canary_nvtx: the canary's profiler annotations. With NVTX v3 headers (CANARY_HAVE_NVTX) these
 * are NVTX calls in the default domain; without them they compile to nothing. NVTX costs a
 * branch when no tool is attached. Ranges nest per thread; call from the training thread only.
 * Layout (docs/canary.md): step (int64 payload = tokens) > forward | backward | optimizer |
 * extra-work > per-op kinds (embedding, layernorm, matmul, attention, gelu, residual,
 * softmax-cross-entropy, adamw, extra-copy, keep-activations). Inside every step, once its loss
 * is known, a mark "loss" with a double payload (finite or not) reports it to the gate.
 */
#ifndef CANARY_NVTX_H
#define CANARY_NVTX_H

#ifdef CANARY_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#include <string.h>

/* Opens a range named name (a static string). */
static inline void canary_range_push(const char *name)
{
    nvtxRangePushA(name);
}

/* Opens a range named name whose int64 payload is tokens (the step range). */
static inline void canary_range_push_payload(const char *name, long long tokens)
{
    nvtxEventAttributes_t attr;
    memset(&attr, 0, sizeof attr);
    attr.version = NVTX_VERSION;
    attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
    attr.message.ascii = name;
    attr.payloadType = NVTX_PAYLOAD_TYPE_INT64;
    attr.payload.llValue = tokens;
    nvtxRangePushEx(&attr);
}

/* Closes the innermost open range. */
static inline void canary_range_pop(void)
{
    nvtxRangePop();
}

/* Marks the step's loss: an NVTX mark named "loss" with a double payload. */
static inline void canary_mark_loss(double loss)
{
    nvtxEventAttributes_t attr;
    memset(&attr, 0, sizeof attr);
    attr.version = NVTX_VERSION;
    attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
    attr.message.ascii = "loss";
    attr.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;
    attr.payload.dValue = loss;
    nvtxMarkEx(&attr);
}
#else
static inline void canary_range_push(const char *name)
{
    (void)name;
}
static inline void canary_range_push_payload(const char *name, long long tokens)
{
    (void)name;
    (void)tokens;
}
static inline void canary_range_pop(void)
{
}
static inline void canary_mark_loss(double loss)
{
    (void)loss;
}
#endif

#endif
