/*
 * synthetic: CUPTI activity records of the installed cupti.h types, built by hand and handed
 * to the aggregation (aggregate.h), for the tests and benches that run it without a GPU. Only
 * the fields the library reads are set; the rest are zero. Header-only; thread-safe.
 */
#ifndef CG_INJECT_SYNTHETIC_H
#define CG_INJECT_SYNTHETIC_H

#include "aggregate.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* A concurrent kernel named name (a CUPTI-style mangled name) on stream of device 0, launched
 * by the CUDA graph graph_id (0: not by a graph). */
static inline void cg_synth_graph_kernel(struct cg_agg *a, const char *name, uint32_t stream,
                                         uint64_t start, uint64_t end, uint32_t graph_id)
{
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof(k));
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = start;
    k.end = end;
    k.name = name;
    k.streamId = stream;
    k.graphId = graph_id;
    if (graph_id != 0)
        k.graphNodeId = ((uint64_t)graph_id << 32) | 1;
    cg_agg_record(a, (const CUpti_Activity *)(const void *)&k);
}

/* A concurrent kernel named name (a CUPTI-style mangled name) on stream of device 0. */
static inline void cg_synth_kernel(struct cg_agg *a, const char *name, uint32_t stream,
                                   uint64_t start, uint64_t end)
{
    cg_synth_graph_kernel(a, name, stream, start, end, 0);
}

/* A synchronisation call of type (CUpti_ActivitySynchronizationType) from start to end that
 * returned result (a CUresult; 0 when it completed). */
static inline void cg_synth_sync_corr(struct cg_agg *a, CUpti_ActivitySynchronizationType type,
                                      uint64_t start, uint64_t end, uint32_t result, uint32_t corr)
{
    CUpti_ActivitySynchronization2 s;
    memset(&s, 0, sizeof(s));
    s.correlationId = corr;
    s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    s.type = type;
    s.start = start;
    s.end = end;
    s.streamId = type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE ||
                         type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE
                     ? CUPTI_SYNCHRONIZATION_INVALID_VALUE
                     : 7;
    s.returnValue = result;
    cg_agg_record(a, (const CUpti_Activity *)(const void *)&s);
}

/* The same without a correlation id (0: no API call known). */
static inline void cg_synth_sync(struct cg_agg *a, CUpti_ActivitySynchronizationType type,
                                 uint64_t start, uint64_t end, uint32_t result)
{
    cg_synth_sync_corr(a, type, start, end, result, 0);
}

/* A JIT compilation (PTX to cubin) from start to end on device 0. */
static inline void cg_synth_jit(struct cg_agg *a, uint64_t start, uint64_t end)
{
    CUpti_ActivityJit2 j;
    memset(&j, 0, sizeof(j));
    j.kind = CUPTI_ACTIVITY_KIND_JIT;
    j.jitEntryType = CUPTI_ACTIVITY_JIT_ENTRY_PTX_TO_CUBIN;
    j.jitOperationType = CUPTI_ACTIVITY_JIT_OPERATION_COMPILE;
    j.start = start;
    j.end = end;
    cg_agg_record(a, (const CUpti_Activity *)(const void *)&j);
}

/* A peer-to-peer copy of bytes (a MEMCPY2 record) from device 0 to device 1 on stream. */
static inline void cg_synth_peer_copy(struct cg_agg *a, uint32_t stream, uint64_t start,
                                      uint64_t end, uint64_t bytes)
{
    CUpti_ActivityMemcpyPtoP4 m;
    memset(&m, 0, sizeof(m));
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
    m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
    m.srcKind = m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.srcDeviceId = 0;
    m.dstDeviceId = 1;
    m.start = start;
    m.end = end;
    m.bytes = bytes;
    m.streamId = stream;
    cg_agg_record(a, (const CUpti_Activity *)(const void *)&m);
}

/* A copy of bytes of copy_kind (CUpti_ActivityMemcpyKind) between memory of src_kind and
 * dst_kind (CUpti_ActivityMemoryKind) on stream of device 0, made by the API call of
 * correlation id corr. */
static inline void cg_synth_copy_corr(struct cg_agg *a, uint8_t copy_kind, uint8_t src_kind,
                                      uint8_t dst_kind, uint32_t stream, uint64_t start,
                                      uint64_t end, uint64_t bytes, uint32_t corr)
{
    CUpti_ActivityMemcpy6 m;
    memset(&m, 0, sizeof(m));
    m.correlationId = corr;
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.copyKind = copy_kind;
    m.srcKind = src_kind;
    m.dstKind = dst_kind;
    m.start = start;
    m.end = end;
    m.bytes = bytes;
    m.streamId = stream;
    cg_agg_record(a, (const CUpti_Activity *)(const void *)&m);
}

/* The same without a correlation id. */
static inline void cg_synth_copy(struct cg_agg *a, uint8_t copy_kind, uint8_t src_kind,
                                 uint8_t dst_kind, uint32_t stream, uint64_t start, uint64_t end,
                                 uint64_t bytes)
{
    cg_synth_copy_corr(a, copy_kind, src_kind, dst_kind, stream, start, end, bytes, 0);
}

/* A device memory allocation (or release) of bytes on device at ts, made by the API call of
 * correlation id corr. */
static inline void cg_synth_memory_corr(struct cg_agg *a, uint32_t device, bool alloc,
                                        uint64_t bytes, uint64_t ts, uint32_t corr)
{
    CUpti_ActivityMemory4 m;
    memset(&m, 0, sizeof(m));
    m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
    m.memoryOperationType = alloc ? CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION
                                  : CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
    m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.bytes = bytes;
    m.timestamp = ts;
    m.deviceId = device;
    m.correlationId = corr;
    cg_agg_record(a, (const CUpti_Activity *)(const void *)&m);
}

/* A device memory allocation (or release) of bytes on device at ts. */
static inline void cg_synth_memory(struct cg_agg *a, uint32_t device, bool alloc, uint64_t bytes,
                                   uint64_t ts)
{
    cg_synth_memory_corr(a, device, alloc, bytes, ts, 0);
}

#endif
