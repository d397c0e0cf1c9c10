/*
 * inject: what the parts of the injection library (libcanary-inject.so) share.
 *
 * The library is loaded into the canary process by NVTX (NVTX_INJECTION64_PATH) and by the CUDA
 * driver (CUDA_INJECTION64_PATH). core.c owns the per-process lifecycle (environment, shard file,
 * atexit, fork, the end of the measured window) and the shard writer; nvtx.c takes NVTX's calls,
 * which nvtx_steps.c turns into steps and range ops; cupti_start.c starts CUPTI, whose activity
 * records cupti.c turns into kernel/copy ops, GPU busy time and peak memory.
 *
 * The measured window: steps [warmup, warmup + steps) of a process (CANARY_GATE_WARMUP,
 * CANARY_GATE_STEPS). Ops and GPU busy time are counted only inside it; when its last step ends,
 * the library writes the last totals and "done N" (cg_inject_measured).
 *
 * Times are CLOCK_MONOTONIC_RAW nanoseconds (the clock CUPTI is told to use too). Everything here
 * is thread-safe. Nothing in the library prints, exits, or touches the canary's stdout; every
 * symbol but the two entry points is hidden.
 */
#ifndef CG_INJECT_H
#define CG_INJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define CG_INJECT_API __attribute__((visibility("default")))

/* Environment the launcher sets for the canary and the limits it shares: launch_env.h (see
 * docs/collector.md). */
#include "launch_env.h"
/* The shard's record keys and words, shared with the tool's reader: shard_format.h. */
#include "shard_format.h"

/* The one clock of the library, in nanoseconds. */
static inline uint64_t cg_inject_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Settings read from the environment once per process. */
struct cg_inject_config {
    char step_range[256]; /* NVTX range name that marks a step */
    char step_fallback[256]; /* the other step name (CG_ENV_STEP_FALLBACK), "" when none */
    int64_t warmup;       /* steps whose ops are not counted */
    int64_t steps;        /* measured steps, -1 when CANARY_GATE_STEPS is absent or invalid */
    int64_t measure_end;  /* warmup + steps: the first step after the window; INT64_MAX: none */
    bool cupti;           /* CUPTI may be started (CANARY_GATE_CUPTI != "0") */
    int64_t buffer_cap_bytes;
    /* Trace: raw step indices (warm-up included) first..last, -1 when not tracing; at most
     * trace_max_events events in the shard, the rest counted. */
    int64_t trace_first, trace_last;
    int64_t trace_max_events;
    int64_t toggle_block; /* CANARY_GATE_OVERHEAD_TOGGLE: measured steps a block, 0 none */
};

/* Starts the library once per process (reads the environment, creates the shard); safe to call
 * from any thread and any entry point. Returns true when the library is active. */
bool cg_inject_start(void);

/* True when started, the shard is open, and this is not a forked child of the started process. */
bool cg_inject_active(void);

/* True when the calling process is the one that started the library (getpid() is the pid at
 * start). Every flush path checks it: a child forked without exec never flushes its parent's
 * state, whether or not the fork handlers ran. */
bool cg_inject_owner(void);

/* Registers fn as an exit handler (atexit) with the shard writer's lock held. The fork handlers
 * hold that lock across fork, so a fork on another thread never lands inside the registration:
 * glibc's fork does not reset the lock of its exit-handler list, and a child forked while it
 * was held hangs in exit(). Every exit handler of the library is registered through it. */
void cg_inject_atexit(void (*fn)(void));

/* The settings; valid after cg_inject_start returned true. */
const struct cg_inject_config *cg_inject_config(void);

/* Shard writer. Lines are built between lock and unlock and reach the file at unlock (or when
 * the line buffer fills). Appends are ignored when the library is not active. */
void cg_inject_lock(void);
void cg_inject_unlock(void);
/* Appends printf-style text (no newline added). Call with the writer locked. */
void cg_inject_append(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Appends n bytes as they are. Call with the writer locked. */
void cg_inject_append_bytes(const char *p, size_t n);
/* Appends name escaped for the shard (\\, \n and control bytes as \xHH; cut at 4096 bytes). */
void cg_inject_append_name(const char *name);
/* Appends v as %.9g in the C locale whatever the canary's locale; "nan", "inf", "-inf" spelled
 * out. Call with the writer locked. */
void cg_inject_append_real(double v);

/* Trace events: true when one more may be written (it is counted), false at the cap (it is
 * counted as dropped). Thread-safe, lock-free. */
bool cg_inject_trace_take(void);
/* Counts n trace events dropped before they reached the writer. */
void cg_inject_trace_dropped(int64_t n);
/* Appends "tx EVENTS DROPPED". Call with the writer locked. */
void cg_inject_append_trace_counts(void);

/* The last measured step ended (called once per process, by nvtx_steps.c, on the thread that
 * ended it): the GPU side finishes first when it runs, then "done N" is written
 * (cg_inject_write_done). */
void cg_inject_measured(void);
/* Writes the NVTX op totals, the op table warning, the trace counts and "done N" (N = warmup +
 * steps). Takes the writer lock itself. */
void cg_inject_write_done(void);

/* NVTX step events, for the GPU side (cupti.c): step index begins or ends now; returns the time
 * stamped (the library's clock, read where the GPU side orders the event against its records;
 * only read when CUPTI is not running). Never flush CUPTI on the calling thread, and never wait
 * for a reduction of records (docs/collector.md, "Step boundaries"). */
uint64_t cg_gpu_step_begin(int64_t index);
uint64_t cg_gpu_step_end(int64_t index);
/* The measured window is complete. Returns true when the GPU side runs and will call
 * cg_inject_write_done itself once its last records are written (device synchronised and CUPTI
 * flushed on the library's own thread); false when the caller writes "done" now. */
bool cg_gpu_measured(void);
/* Writes the ops recorded by NVTX whose totals changed since the last call. Writer locked. */
void cg_nvtx_write_ops(void);
/* Writes "w op table full: ..." when range names could not be recorded (and a warning when range
 * counts could not be kept). Writer locked. */
void cg_nvtx_write_warnings(void);
/* Writes "n I ranges DELTA" for the steps whose NVTX range count changed since the last call:
 * every step before the measured window's end when all, else the steps since the last call.
 * Writer locked. */
void cg_nvtx_write_counts(bool all);

/* Where the calling thread is among its NVTX ranges, for the synchronisations, copies,
 * allocations and module loads it makes (docs/counts.md, "Where"): CG_PLACE_IN and the innermost
 * push/pop range it has open inside its step that is timed as an op (a range of the measured window
 * whose name the op table holds); else CG_PLACE_AFTER and the last such range it popped since it
 * last began a step (pushed or started); else 0 (none). Start/end ranges belong to no thread and
 * place nothing. A thread other than the one that began the latest step is placed "in" a range
 * it has open, and otherwise where that thread is, as that thread last published it (at its every
 * push and pop): never "after" a range of its own (PyTorch's autograd thread, which runs
 * backward, opens none of the canary's ranges and closes its libraries' own, CUB's scans).
 * Lock-free: thread-local reads, at most two atomic loads. */
#define CG_PLACE_IN 0x40000000u
#define CG_PLACE_AFTER 0x80000000u
#define CG_PLACE_OP 0x3fffffffu /* the op's index + 1 */
uint32_t cg_nvtx_place(void);
/* True while the latest step lies in an off block of CANARY_GATE_OVERHEAD_TOGGLE: the library's
 * optional work (range times, places) is left undone. One load and a branch when unset. */
bool cg_nvtx_work_off(void);
/* The range name of a place ("<domain>:<name>" outside the default domain, as in its "o range"
 * line); NULL for 0 or an op the table does not hold. The string lives as long as the library. */
const char *cg_nvtx_place_name(uint32_t place);

#endif
