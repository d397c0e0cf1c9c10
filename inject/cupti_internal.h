/*
 * cupti_internal: what the CUDA side of the injection library shares between its two files,
 * private to them: cupti_start.c (start-up and the choice of activity kinds, run once) and
 * cupti.c (CUPTI's callbacks and the flush thread, which start-up registers and starts). The
 * state below is set by start-up and read by the callbacks under the rules each file's top gives.
 */
#ifndef CG_CUPTI_INTERNAL_H
#define CG_CUPTI_INTERNAL_H

#include "aggregate.h"
#include "inject.h"

#include <cupti.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define CG_BUF_BYTES ((size_t)8 * 1024 * 1024)
#define CG_MAX_BUFFERS 512
#define CG_COUNT(c) (1u << (c))

struct cupti_api {
    CUptiResult (*subscribe_v2)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *,
                                CUpti_SubscriberParams *);
    CUptiResult (*unsubscribe)(CUpti_SubscriberHandle);
    CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc,
                                      CUpti_BuffersCallbackCompleteFunc);
    CUptiResult (*register_timestamp)(CUpti_TimestampCallbackFunc);
    CUptiResult (*set_attribute)(CUpti_ActivityAttribute, size_t *, void *); /* optional */
    CUptiResult (*enable)(CUpti_ActivityKind);
    CUptiResult (*disable)(CUpti_ActivityKind);
    CUptiResult (*flush_all)(uint32_t);
    CUptiResult (*flush_period)(uint32_t);
    CUptiResult (*next_record)(uint8_t *, size_t, CUpti_Activity **);
    CUptiResult (*dropped)(CUcontext, uint32_t, size_t *);
    CUptiResult (*result_string)(CUptiResult, const char **);
    CUptiResult (*enable_callback)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain,
                                   CUpti_CallbackId); /* optional: module loads */
    CUptiResult (*get_version)(uint32_t *);           /* optional: graph kernels */
    CUptiResult (*callback_name)(CUpti_CallbackDomain, uint32_t, const char **); /* optional:
                                                                                  * places */
};

/* From the libcuda handle already loaded (any may be NULL). */
struct cuda_api {
    void *handle;
    CUresult (*driver_version)(int *);
    CUresult (*ctx_get_current)(CUcontext *);
    CUresult (*ctx_set_current)(CUcontext);
    CUresult (*ctx_synchronize)(void);
};

/* --- the state start-up sets, defined in cupti.c ---------------------------------------------- */

/* Hidden (as every symbol but the entry points), said here so that the other file reaches them
 * without the global offset table. */
#define CG_CUPTI_SHARED __attribute__((visibility("hidden")))

extern CG_CUPTI_SHARED struct cupti_api gpu_api;
extern CG_CUPTI_SHARED struct cuda_api gpu_cuda;
extern CG_CUPTI_SHARED _Atomic bool gpu_running;
/* Records are reduced (guarded by the aggregation lock, gpu_agg_lock). */
extern CG_CUPTI_SHARED bool gpu_collecting;
extern CG_CUPTI_SHARED pthread_mutex_t gpu_agg_lock;
extern CG_CUPTI_SHARED struct cg_agg gpu_agg;
/* The counts measured (bits): aggregation lock. */
extern CG_CUPTI_SHARED uint32_t gpu_counted;
/* Places of API calls (never freed: callbacks may still run). */
extern CG_CUPTI_SHARED struct cg_agg_corr gpu_corr;
/* Correlation ids of queries (cudaStreamQuery, ...). */
extern CG_CUPTI_SHARED struct cg_agg_corr gpu_queries;
/* The API callbacks on for queries, one bit per callback id, [0] runtime, [1] driver: set before
 * each is enabled, read by the subscriber's callback. */
#define CG_CBID_BITS 4096
_Static_assert(CUPTI_RUNTIME_TRACE_CBID_SIZE <= CG_CBID_BITS &&
                   CUPTI_DRIVER_TRACE_CBID_SIZE <= CG_CBID_BITS,
               "the query bitmaps hold every callback id of these headers");
extern CG_CUPTI_SHARED _Atomic uint8_t gpu_query_cbid[2][CG_CBID_BITS / 8];
/* The buffers' cap, CG_BUF_BYTES each. */
extern CG_CUPTI_SHARED size_t gpu_max_buffers;
/* A flush after every step end (set before the first step). */
extern CG_CUPTI_SHARED bool gpu_step_flush;

/* --- cupti.c: what start-up registers or calls --------------------------------------------- */

const char *gpu_result_text(CUptiResult r);
uint64_t CUPTIAPI gpu_timestamp_cb(void);
void CUPTIAPI gpu_subscriber_cb(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                const void *data);
void CUPTIAPI gpu_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records);
void CUPTIAPI gpu_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                   size_t valid);
/* Starts the flush thread with every signal blocked; false when it cannot. */
bool gpu_worker_start(void);
/* The GPU exit handler (see cupti.c's top). */
void gpu_at_exit(void);

/* --- cupti_start.c: what the callbacks call ------------------------------------------------ */

/* "w WHAT: DETAIL" */
void gpu_warn(const char *what, const char *detail);

#endif
