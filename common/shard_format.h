/*
 * shard_format: the bytes of a shard, spelled once for the injection library that writes them
 * (inject/core.c, nvtx.c, cupti.c, aggregate.c, escape.h) and the tool that reads them
 * (src/measure/shard.c). Plain macros only: nothing here needs linking, so both programs include it.
 *
 * A shard is text, one record per line, fields separated by one space; a record is its key and
 * its fields. A name (always the last field) is escaped: a backslash is doubled, control bytes
 * and DEL become "\xHH" (escape.h writes it, src/measure/shard.c reads it back, a "\x00" as '?').
 * Numbers are decimal integers; a loss is %.9g in the C locale or CG_SHARD_NAN, CG_SHARD_INF or
 * "-" CG_SHARD_INF. What each record means and how records merge: src/measure/shard.h.
 *
 * Writers build a line by pasting a key to a format (CG_SHARD_KEY_STEP " %lld ..."), so every
 * macro below is a string literal, or a character literal where marked.
 */
#ifndef CG_SHARD_FORMAT_H
#define CG_SHARD_FORMAT_H

/* The first line (without its newline): the format and its version. */
#define CG_SHARD_MAGIC "canary-gate-shard 1"

/* Files: "<dir>/shard-r<RANK>-l<LOCAL_RANK>-p<pid>-h<HOST>.part" while the process runs (RANK or
 * LOCAL_RANK "x" when unset; HOST the host name, so that processes of the same pid on two nodes
 * sharing the directory never collide), renamed to ".shard" when it exits normally. A process that
 * execs keeps its pid: a later image writes "-p<pid>-e<N>-h<HOST>" (N the first that no file has;
 * no limit), and finishes the shards earlier images left ("end", renamed to ".shard"): those whose
 * CG_SHARD_KEY_PID_START line is its own; another process's under the same pid are left. */
#define CG_SHARD_FILE_PREFIX "shard-"
#define CG_SHARD_RANK_UNSET "x"
#define CG_SHARD_SUFFIX_PART ".part"
#define CG_SHARD_SUFFIX_FINAL ".shard"
#define CG_SHARD_EXEC_MARK "-e"

/* Record keys, with the fields that follow each. */
#define CG_SHARD_KEY_PID "pid"               /* P */
/* TICKS PIDNS: the process's start (/proc/self/stat field 22, clock ticks after boot, which exec
 * keeps) and its PID namespace (the inode of /proc/self/ns/pid, 0 unknown); a later image of the
 * process finishes a shard under its pid only when this line is its own (absent when the start
 * cannot be read) */
#define CG_SHARD_KEY_PID_START "pid_start"
/* NS [PPID]: the process's start on the clock of the "s" lines (CLOCK_MONOTONIC_RAW ns), carried
 * from pid_start's ticks when the library starts: now(CLOCK_MONOTONIC_RAW) - (now(CLOCK_BOOTTIME) -
 * TICKS / sysconf(_SC_CLK_TCK)). Up to a tick early (the ticks are whole), plus the two clocks'
 * drift since the process started; exec keeps it. Absent when pid_start is. Tells a process
 * started after another had made its steps (a restart) from one started with it whose first
 * step came late (src/measure/shard.h, cg_shard_check_restarts). May be negative. PPID: its
 * parent's pid when the library started (absent in shards of older libraries): a shell that ran
 * the canary and then exec'd its retry ('cmd || cmd') runs the retry as itself, with its own
 * earlier start, so the retry is told by being the first attempt's parent */
#define CG_SHARD_KEY_STARTED "started"
#define CG_SHARD_START_ERROR_NS 20000000     /* what the tool allows it: two ticks of 10 ms */
#define CG_SHARD_KEY_RANK "rank"             /* R (only when RANK is set) */
#define CG_SHARD_KEY_LOCAL_RANK                                                                    \
    "local_rank" /* L (LOCAL_RANK, else an MPI launcher's local rank:                              \
                    OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID,                                   \
                    MV2_COMM_WORLD_LOCAL_RANK; only when set) */
/* Where the process ran, in a world of ranks (each line only when its variable is set; the
 * numbers only when they are decimal, 9 digits at most): */
#define CG_SHARD_KEY_HOST "host"                 /* NAME: gethostname() */
#define CG_SHARD_KEY_WORLD_SIZE "world_size"     /* N: WORLD_SIZE */
#define CG_SHARD_KEY_GROUP_RANK "group_rank"     /* N: GROUP_RANK (torchrun's node rank) */
#define CG_SHARD_KEY_SLURM_PROCID "slurm_procid" /* N: SLURM_PROCID */
#define CG_SHARD_KEY_SLURM_NODEID "slurm_nodeid" /* N: SLURM_NODEID */
#define CG_SHARD_KEY_SLURM_NTASKS "slurm_ntasks" /* N: SLURM_NTASKS */
#define CG_SHARD_KEY_SLURM_NODE "slurm_node"     /* NAME: SLURMD_NODENAME */
#define CG_SHARD_KEY_SLURM_JOB "slurm_job"       /* NAME: SLURM_JOB_ID */
/* N: SLURM_STEP_ID (else SLURM_STEPID), only for a task of a job step srun started that is not
 * the gate's own (CANARY_GATE_SLURM_STEP): the SLURM_PROCID, SLURM_NODEID and SLURM_NTASKS lines
 * are the process's own rank, node and world only with this line (a batch script's processes
 * have no step id; a process the gate started in its own step inherited the gate's) */
#define CG_SHARD_KEY_SLURM_STEP "slurm_step"
/* An MPI launcher's rank and world size: Open MPI's OMPI_COMM_WORLD_RANK and _SIZE, else MPICH's
 * and Intel MPI's PMI_RANK and PMI_SIZE, else MVAPICH's MV2_COMM_WORLD_RANK and _SIZE (the first
 * pair whose rank is set; the size only when it is) */
#define CG_SHARD_KEY_MPI_RANK "mpi_rank"     /* N */
#define CG_SHARD_KEY_MPI_SIZE "mpi_size"     /* N */
#define CG_SHARD_KEY_WARMUP "warmup"         /* W */
#define CG_SHARD_KEY_STEP_RANGE "step_range" /* NAME */
#define CG_SHARD_KEY_STEPS_FROM "steps_from" /* CG_SHARD_STEPS_NVTX | CG_SHARD_STEPS_OPTIMIZER */
/* N: the canary's own step ranges began after N steps of the fallback (the optimizer's), past
 * the warm-up, and were ignored (written once, beside a "w" line saying so) */
#define CG_SHARD_KEY_STEPS_IGNORED "steps_ignored"
#define CG_SHARD_KEY_STEP "s"                /* I START_NS END_NS TOKENS */
#define CG_SHARD_KEY_BUSY "b"                /* I NS */
#define CG_SHARD_KEY_LOSS "l"                /* I VALUE */
#define CG_SHARD_KEY_OP "o"                  /* KIND CALLS NS NAME */
#define CG_SHARD_KEY_MEM "m"                 /* DEVICE PEAK_BYTES */
/* RECORDS DROPPED ZERO_TS [OUTSIDE INSIDE LATE_MEM OVERHEAD_NS] */
#define CG_SHARD_KEY_COUNTERS "c"
#define CG_SHARD_KEY_GPU "gpu"       /* CG_SHARD_GPU_OK | CG_SHARD_GPU_UNAVAILABLE REASON */
#define CG_SHARD_KEY_CUPTI "cupti"   /* HOW PATH (HOW: a CG_SHARD_CUPTI_* word) */
#define CG_SHARD_KEY_DEVICE "device" /* ID NAME */
/* ID UUID: the device CUPTI numbers ID is the GPU of UUID ("GPU-" and 32 hex digits in 8-4-4-4-12
 * groups, as nvidia-smi writes it); peak memory merges by it (src/measure/shard.h) */
#define CG_SHARD_KEY_DEVICE_UUID "uuid"
#define CG_SHARD_UUID_MAX 64 /* bytes of a UUID field, its NUL included */
#define CG_SHARD_KEY_CUDA "cuda"     /* VERSION */
#define CG_SHARD_KEY_DRIVER "driver" /* VERSION */
#define CG_SHARD_KEY_WARNING "w"     /* MESSAGE */
/* "toggle K": the library's optional work was toggled in blocks of K measured steps, on off off
 * on (CANARY_GATE_OVERHEAD_TOGGLE); written once at the start */
#define CG_SHARD_KEY_TOGGLE "toggle"
#define CG_SHARD_KEY_DONE "done"     /* N */
/* "ss NESTED OTHER_THREADS": ranges named as a step that were no step (nested in an open step,
 * or begun by a thread other than the first step's), totals so far (the last line counts) */
#define CG_SHARD_KEY_STRAY_STEPS "ss"
/* Exact counts per step (docs/counts.md, docs/collector.md): "n I NAME DELTA" adds DELTA to step
 * I's count NAME (lines for the same step and name add up, as "b" lines do; written for every
 * step before the measured window's end, warm-up included, and only when DELTA is not 0);
 * "nc NAME..." (once, after "gpu ok", GPU only) names the GPU counts this process measures: a GPU
 * count it does not name is unknown, not 0 (what feeds it was refused, or cannot be read); a
 * second "nc" line, GPU or not, names CG_SHARD_COUNT_BACKWARD and CG_SHARD_COUNT_OPTIMIZER_STEPS
 * once the optimizers are hooked (unknown without it).
 * CG_SHARD_COUNT_RANGES is measured wherever the shard exists and never named in "nc". */
#define CG_SHARD_KEY_COUNT "n"
#define CG_SHARD_KEY_COUNTED "nc"
/* "np COUNT WHERE DELTA NAME": over the measured window, DELTA more of count COUNT (sync_stream,
 * sync_event, sync_context or dtoh_pageable) were made by a thread that was in the NVTX range
 * NAME (WHERE CG_SHARD_PLACE_IN: the innermost range it had open in its step) or had last ended
 * it (CG_SHARD_PLACE_AFTER); lines of the same COUNT, WHERE and NAME add up. Only with
 * CG_SHARD_COUNT_PLACES in "nc" (calls of no range are in no line). */
#define CG_SHARD_KEY_COUNT_PLACE "np"
#define CG_SHARD_PLACE_IN "in"
#define CG_SHARD_PLACE_AFTER "after"
#define CG_SHARD_KEY_END "end"       /* (no fields) */

/* Trace record keys (only with CANARY_GATE_TRACE_STEPS). */
#define CG_SHARD_KEY_TRACE_WINDOW "tw" /* FIRST LAST */
#define CG_SHARD_KEY_TRACE_RANGE "tr"  /* TID START_NS END_NS DOMAIN NAME */
#define CG_SHARD_KEY_TRACE_DOMAIN "td" /* ID NAME */
#define CG_SHARD_KEY_TRACE_GPU "tg"    /* KIND DEVICE STREAM START_NS END_NS BYTES NAME */
#define CG_SHARD_KEY_TRACE_MEM "tm"    /* DEVICE TS_NS BYTES */
#define CG_SHARD_KEY_TRACE_COUNTS "tx" /* EVENTS DROPPED */

/* Words of the "gpu" record. */
#define CG_SHARD_GPU_OK "ok"
#define CG_SHARD_GPU_UNAVAILABLE "unavailable"

/* Words of the "steps_from" record: the canary's own step ranges, or the optimizer steps
 * canary-gate's sitecustomize marked (CG_OPTIMIZER_STEP_RANGE). */
#define CG_SHARD_STEPS_NVTX "nvtx"
#define CG_SHARD_STEPS_OPTIMIZER "optimizer"

/* HOW of the "cupti" record: already mapped in the process, CANARY_GATE_CUPTI_PATH, the
 * build-time path, or the soname. */
#define CG_SHARD_CUPTI_LOADED "loaded"
#define CG_SHARD_CUPTI_ENV "env"
#define CG_SHARD_CUPTI_CONFIGURED "configured"
#define CG_SHARD_CUPTI_SONAME "soname"

/* KIND of the "o" and "tg" records ("tg" never has CG_SHARD_KIND_RANGE). */
#define CG_SHARD_KIND_KERNEL "kernel"
#define CG_SHARD_KIND_MEMCPY "memcpy"
#define CG_SHARD_KIND_MEMSET "memset"
#define CG_SHARD_KIND_RANGE "range"

/* NAME of the "n" and "nc" records: what happened in a step (a record belongs to the step its
 * start, or its timestamp, lies in, as for ops; what each counts exactly, e.g. synchronisations
 * only of calls that completed, JIT records of compilations and of cache loads and stores:
 * docs/collector.md, "Exact counts per step"). */
#define CG_SHARD_COUNT_KERNELS "kernels"             /* kernel records */
#define CG_SHARD_COUNT_GRAPH_KERNELS "graph_kernels" /* of those, launched by a CUDA graph */
#define CG_SHARD_COUNT_GRAPH_LAUNCHES                                                              \
    "graph_launches"                                 /* graph launches: a graph's kernel           \
                                                      * records of its first node seen */
#define CG_SHARD_COUNT_SYNC_STREAM "sync_stream"     /* SYNCHRONIZATION, by type */
#define CG_SHARD_COUNT_SYNC_EVENT "sync_event"
#define CG_SHARD_COUNT_SYNC_CONTEXT "sync_context"
#define CG_SHARD_COUNT_SYNC_WAIT "sync_wait_event"   /* stream waits on an event (no host wait) */
#define CG_SHARD_COUNT_SYNC_NS "sync_ns"             /* host ns blocked in stream, event and
                                                      * context synchronisations */
#define CG_SHARD_COUNT_COPIES "copies"               /* MEMCPY and MEMCPY2 records */
#define CG_SHARD_COUNT_DTOH_PAGEABLE "dtoh_pageable" /* device to pageable host copies */
#define CG_SHARD_COUNT_DTOH_PAGEABLE_BYTES "dtoh_pageable_bytes"
#define CG_SHARD_COUNT_ALLOCS "allocs"               /* MEMORY2 device allocations */
#define CG_SHARD_COUNT_FREES "frees"                 /* MEMORY2 device releases */
#define CG_SHARD_COUNT_MODULE_LOADS "module_loads"   /* CUPTI_CBID_RESOURCE_MODULE_LOADED */
#define CG_SHARD_COUNT_JIT "jit"                     /* JIT records */
#define CG_SHARD_COUNT_PLACES "places"               /* in "nc" only: "np" lines are measured */
/* backward passes and optimizer steps begun in the step (marks of canary-gate's sitecustomize,
 * launch_env.h): measured when named in an "nc" line, which the library writes (GPU or not) once
 * the sitecustomize hooked the optimizers */
#define CG_SHARD_COUNT_BACKWARD "backward"
#define CG_SHARD_COUNT_OPTIMIZER_STEPS "optimizer_steps"
#define CG_SHARD_COUNT_RANGES "ranges"               /* NVTX ranges begun in the step on any
                                                      * thread, the step range itself not */
#define CG_SHARD_COUNT_COMPUTE_NS                                                                  \
    "compute_ns" /* ns of the step's compute kernels'                                              \
                  * union (not communication) */
#define CG_SHARD_COUNT_COPY_NS                                                                     \
    "copy_ns" /* ns of the step's copies' and sets'                                                \
               * union */
#define CG_SHARD_COUNT_COPY_HIDDEN_NS "copy_hidden_ns" /* of copy_ns, the ns some kernel ran */

/* Non-finite losses. */
#define CG_SHARD_NAN "nan"
#define CG_SHARD_INF "inf"

/* Name escapes (character literals): CG_SHARD_ESC doubled is a backslash; CG_SHARD_ESC,
 * CG_SHARD_ESC_HEX and two hex digits are one byte. */
#define CG_SHARD_ESC '\\'
#define CG_SHARD_ESC_HEX 'x'

/* The launcher's failure file (CG_ENV_FAIL_FILE): "OP ERRNO PID PATH" and a NUL, OP one of: */
#define CG_SHARD_FAIL_OPEN "open"
#define CG_SHARD_FAIL_WRITE "write"
#define CG_SHARD_FAIL_RENAME "rename"

#endif
