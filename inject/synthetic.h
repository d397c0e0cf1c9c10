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

/* A concurrent kernel named name (a CUPTI-style mangled name) on stream of device 0. */
static inline void cg_synth_kernel(struct cg_agg *a, const char *name, uint32_t stream,
                                   uint64_t start, uint64_t end)
{
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof(k));
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = start;
    k.end = end;
    k.name = name;
    k.streamId = stream;
    cg_agg_record(a, (const CUpti_Activity *)(const void *)&k);
}

/* A copy of bytes of copy_kind (CUpti_ActivityMemcpyKind) between memory of src_kind and
 * dst_kind (CUpti_ActivityMemoryKind) on stream of device 0. */
static inline void cg_synth_copy(struct cg_agg *a, uint8_t copy_kind, uint8_t src_kind,
                                 uint8_t dst_kind, uint32_t stream, uint64_t start, uint64_t end,
                                 uint64_t bytes)
{
    CUpti_ActivityMemcpy6 m;
    memset(&m, 0, sizeof(m));
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

/* A device memory allocation (or release) of bytes on device at ts. */
static inline void cg_synth_memory(struct cg_agg *a, uint32_t device, bool alloc, uint64_t bytes,
                                   uint64_t ts)
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
    cg_agg_record(a, (const CUpti_Activity *)(const void *)&m);
}

#endif
