/*
 * fuzz_records: a slot that holds one CUPTI activity record of any kind the aggregation's
 * harnesses make (fuzz_agg, fuzz_agg_paths), at the CUDA 13.0 headers' types. Include after
 * <cupti_activity.h> (inject/aggregate.h brings it in).
 */
#ifndef CG_FUZZ_RECORDS_H
#define CG_FUZZ_RECORDS_H

union record {
    CUpti_Activity any;
    CUpti_ActivityKernel10 kernel;
    CUpti_ActivityMemcpy6 copy;
    CUpti_ActivityMemset4 set;
    CUpti_ActivityMemory4 memory;
    CUpti_ActivityOverhead3 overhead;
    CUpti_ActivityMemcpyPtoP4 peer;
    CUpti_ActivitySynchronization2 sync;
    CUpti_ActivityJit2 jit;
};

#endif
