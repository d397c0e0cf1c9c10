/*
 * trace: a Chrome trace event file (the JSON format Perfetto and chrome://tracing open) from the
 * trace lines of one run's shards (CANARY_GATE_TRACE_STEPS, see src/measure/shard.h).
 *
 * Layout: one process per shard (pid = the canary process's pid, named "rank R (pid P)"), in it
 * one track per thread that marked NVTX ranges ("X" events, category = NVTX domain), a "steps"
 * track with the traced steps ("step N", N counted after the warm-up, with tokens, loss and GPU
 * busy time as arguments), one track per device and stream with its kernels, copies and sets
 * ("GPU 0 stream 7"; kernel names demangled as in the artifact), a "GPU D memory" counter of
 * the device's allocated bytes and a "loss" counter; with the GPU's own state sampled by the
 * launcher (NVML), a process "GPU state (NVML)" with counters "GPU D SM clock" (MHz), "GPU D
 * power" (W) and "GPU D temperature" (C) over the traced events' span (the samples share the
 * library's clock, CLOCK_MONOTONIC_RAW). Times are microseconds (fractional) from
 * the earliest event. Each host counts CLOCK_MONOTONIC_RAW from its own boot: the processes of
 * one host (its host name, else its Slurm node) keep their host's clock, and every other host's
 * events are shifted so that its first traced step starts with the reference host's (the gate's
 * own where a process with a traced step ran there, else the lowest rank's; a host none of whose
 * processes traced a step keeps its own clock, its shift null); "otherData" names the hosts'
 * count, the rule, the reference and each host's shift, and the GPU readings are drawn only
 * when they share the reference host's clock. Every name is escaped for JSON: quotes, backslashes,
 * control bytes (so a terminal escape sequence in a kernel name never reaches the file raw) and
 * invalid UTF-8. When the canary reached the event cap, a global instant event and "otherData" say
 * how many events were dropped. Not thread-safe.
 */
#ifndef CG_TRACE_H
#define CG_TRACE_H

#include "err.h"
#include "shard.h"

#include <stddef.h>

#define CG_TRACE_MAX_BYTES ((size_t)1 << 30)

/* One reading of the GPU's own state for the trace's counters. */
struct cg_trace_sample {
    int64_t device; /* NVML's index */
    int64_t t_ns;   /* CLOCK_MONOTONIC_RAW */
    double sm_mhz, power_w, temp_c; /* NAN: not read */
};

/* Renders the trace of n shards, and the n_samples GPU readings that fall in its events' span
 * (samples may be NULL), as JSON; returns a malloc'ed string (caller frees) or NULL when out of
 * memory or over CG_TRACE_MAX_BYTES. */
char *cg_trace_to_json(const struct cg_shard *shards, size_t n,
                       const struct cg_trace_sample *samples, size_t n_samples);

/* Writes that trace to path atomically (src/core/fsutil.h). Returns 0, CG_ENOMEM, or CG_EIO
 * naming the path. */
int cg_trace_write(const struct cg_shard *shards, size_t n, const struct cg_trace_sample *samples,
                   size_t n_samples, const char *path, struct cg_err *err);

#endif
