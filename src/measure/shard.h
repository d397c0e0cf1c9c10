/*
 * shard: reading and merging the per-process files the injection library writes.
 *
 * Every canary process that loads libcanary-inject.so appends what it measures to its own shard,
 * "<dir>/shard-r<RANK>-l<LOCAL_RANK>-p<pid>.part", renamed to ".shard" when the process exits
 * normally. A shard is text, one record per line, fields separated by one space, a name (always
 * the last field) escaped with "\\" and "\xHH" for control bytes. The keys and words below are
 * spelled once, for the library and this reader, in common/shard_format.h:
 *
 *   canary-gate-shard 1                   first line (format version)
 *   pid P | rank R | local_rank L         the process (rank lines only when RANK/LOCAL_RANK set)
 *   pid_start TICKS PIDNS                 its start (clock ticks after boot, which exec keeps)
 *                                         and PID namespace: one pid and one such line are one
 *                                         process's images (shard_format.h)
 *   started NS [PPID]                     its start on the clock of the "s" lines (up to
 *                                         CG_SHARD_START_ERROR_NS early) and its parent's
 *                                         pid: one that started after another had made its
 *                                         steps, or is the parent of one and made its steps
 *                                         after it, is a restart
 *   host NAME | world_size N | group_rank N | slurm_procid N | slurm_nodeid N | slurm_ntasks N
 *   | slurm_node NAME | slurm_job ID        where it ran: the host name, WORLD_SIZE, GROUP_RANK,
 *   | slurm_step N                        SLURM_PROCID, SLURM_NODEID, SLURM_NTASKS,
 *                                         SLURMD_NODENAME, SLURM_JOB_ID (each when set), and
 *                                         SLURM_STEP_ID for a task srun started (not the gate's
 *                                         own step; shard_format.h)
 *   mpi_rank N | mpi_size N               an MPI launcher's rank and world size (shard_format.h)
 *   warmup W | step_range NAME            the settings the library ran with
 *   steps_from nvtx|optimizer             where the process's steps came from (the first step
 *                                         range it began: the canary's own, or the optimizer
 *                                         steps canary-gate's sitecustomize marked; a second
 *                                         line when its own took over in the warm-up: the last
 *                                         line counts)
 *   steps_ignored N                       its own step ranges began after N optimizer steps,
 *                                         past the warm-up, and were ignored
 *   s I START_NS END_NS TOKENS            step I ended (index from 0 per process; TOKENS -1: none)
 *   b I NS                                GPU busy time added to step I (summed)
 *   l I VALUE                             a loss the canary reported in step I (%.9g, "nan",
 *                                         "inf", "-inf"; several in one step are averaged)
 *   o KIND CALLS NS NAME                  op totals added (summed; measured window only)
 *   m DEVICE PEAK_BYTES                   peak device memory so far (the maximum counts)
 *   c RECORDS DROPPED ZERO_TS [OUTSIDE INSIDE LATE_MEM OVERHEAD_NS]
 *                                         CUPTI record counters so far (the last line counts):
 *                                         records, dropped, zero timestamps; then timed kernel,
 *                                         memcpy and memset records starting outside every step
 *                                         and inside some step, memory events older than those
 *                                         already applied, summed CUPTI overhead (the 3-field
 *                                         form of older libraries leaves those unknown)
 *   n I NAME DELTA                        count NAME of step I grew by DELTA (summed): what
 *                                         happened in the step (docs/counts.md); NAME one of
 *                                         the CG_SHARD_COUNT_* words (others are skipped)
 *   nc NAME...                            the GPU counts this process measures; a GPU count not
 *                                         named is unknown. "ranges" is always measured;
 *                                         "places": the "np" lines are
 *   np COUNT WHERE N NAME                 N more of count COUNT (sync_stream, sync_event,
 *                                         sync_context, dtoh_pageable) in the measured window
 *                                         were made in (WHERE "in") or after ("after") the NVTX
 *                                         range NAME (summed)
 *   gpu ok | gpu unavailable REASON       whether CUPTI started
 *   cupti HOW PATH                        the libcupti file used: HOW is loaded (already mapped
 *                                         in the process), env (CANARY_GATE_CUPTI_PATH),
 *                                         configured (the build-time path) or soname
 *   device ID NAME | cuda VERSION | driver VERSION
 *   uuid ID UUID                          the device CUPTI numbers ID (in "m" lines) is the GPU
 *                                         of UUID (from CUPTI's DEVICE record)
 *   w MESSAGE                             a warning from the library (several may appear; the
 *                                         first CG_SHARD_MAX_WARNINGS distinct ones are kept)
 *   ss NESTED OTHER_THREADS               ranges named as a step that were no step, so far
 *                                         (the last line counts): begun while a step was open,
 *                                         or by a thread other than the one that began the
 *                                         process's first step (whose steps are the steps)
 *   done N                                the measured window (CANARY_GATE_WARMUP +
 *                                         CANARY_GATE_STEPS steps) is complete after N steps:
 *                                         everything this process contributes is in the shard
 *   end                                   the process exited normally
 *
 * Trace lines, only with CANARY_GATE_TRACE_STEPS (times in the same process clock as "s"):
 *   tw FIRST LAST                         steps FIRST..LAST (indices as in "s") are traced
 *   tr TID START_NS END_NS DOMAIN NAME    an NVTX range of thread TID (DOMAIN 0: the default
 *                                         domain, else an id from a "td" line)
 *   td ID NAME                            the NVTX domain of that id
 *   tg KIND DEVICE STREAM START_NS END_NS BYTES NAME
 *                                         GPU work: KIND kernel (BYTES -1, NAME mangled as CUPTI
 *                                         gives it), memcpy (NAME as the op) or memset
 *   tm DEVICE TS_NS BYTES                 device memory: the device's total after an allocation
 *                                         or release (its total as the trace begins first)
 *   tx EVENTS DROPPED                     trace events written so far and dropped at the cap
 *                                         (CANARY_GATE_TRACE_MAX_EVENTS; the last line counts)
 * Step boundaries of the traced steps are their "s" lines.
 *
 * Parsing is a pure function of the bytes: a last line without a newline (a write cut short by a
 * crash) is ignored, unknown record keys are skipped, anything else malformed (a step of zero or
 * negative duration, from a clock that stepped, included) is an error naming the line; so is a
 * shard of more than CG_SHARD_MAX_OPS "o" lines, named as that limit, and one of more than
 * CG_ARTIFACT_MAX_PLACES distinct places. Merging: step I of a run
 * is the maximum over processes of step I's wall time, tokens are the payloads summed (else
 * --tokens-per-step, the world's, once: never per process), the loss is the mean over
 * the processes that reported one, peak memory is summed per device over processes (then the
 * maximum over devices; a device is its UUID where the shard names one, else its CUDA id, which
 * is 0 in every process given one GPU: docs/collector.md), ops are summed by kind and exact name;
 * CUPTI counters and warnings are summed and gathered over processes; a step's counts are summed
 * over processes when every process with steps measured them (unknown otherwise), its host time in
 * synchronisations is the maximum over processes; places are summed by count, where and name, and
 * known when every process with steps placed its calls; the processes with steps take them from
 * one source (cg_shard_check_steps_from). Not thread-safe; every shard owns its
 * strings.
 */
#ifndef CG_SHARD_H
#define CG_SHARD_H

#include "artifact.h"
#include "err.h"
#include "launch_env.h"
#include "redact.h"
#include "shard_format.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CG_SHARD_MAX_BYTES ((size_t)256 * 1024 * 1024)
#define CG_SHARD_MAX_STEPS CG_MAX_STEP_INDEX /* step indices, shared with the library */
#define CG_SHARD_MAX_OPS 1000000 /* "o" lines per shard */
#define CG_SHARD_MAX_WARNINGS CG_ARTIFACT_MAX_WARNINGS /* distinct "w" lines kept per shard */

struct cg_shard_step {
    bool seen;           /* an "s" line for this index was read */
    int64_t wall_ns;
    int64_t end_ns;      /* process clock, for ordering */
    int64_t tokens;      /* -1 when the step had no payload */
    int64_t gpu_busy_ns; /* -1 when no "b" line */
    double loss;         /* mean of the step's "l" lines, NAN when none */
    int64_t n_loss;      /* "l" lines of the step */
    int64_t counts[CG_COUNT_N]; /* summed "n" lines, 0 when none (known: cg_shard_counted) */
    int64_t sync_ns;     /* summed "n I sync_ns" lines */
    int64_t compute_ns;  /* summed "n I compute_ns" lines */
    int64_t copy_ns;     /* summed "n I copy_ns" lines */
    int64_t copy_hidden_ns; /* summed "n I copy_hidden_ns" lines */
};

/* The step times a shard carries as counts ("n I sync_ns D"), numbered after enum cg_count. */
enum {
    CG_SHARD_T_SYNC = CG_COUNT_N,
    CG_SHARD_T_COMPUTE,
    CG_SHARD_T_COPY,
    CG_SHARD_T_COPY_HIDDEN,
    CG_SHARD_T_END
};

struct cg_shard_op {
    char *name; /* as the library saw it (kernel names mangled) */
    enum cg_op_kind kind;
    int64_t calls;
    int64_t total_ns;
};

/* "np" lines, summed by (count, after, name). */
struct cg_shard_place {
    char *name;
    int count; /* enum cg_count */
    bool after;
    int64_t calls;
};

struct cg_shard_mem {
    int64_t device;
    int64_t peak_bytes;
};

/* "uuid" lines: the GPU behind a device id of this shard. */
struct cg_shard_uuid {
    int64_t device;
    char uuid[CG_SHARD_UUID_MAX];
};

/* Trace events ("tr", "tg", "tm", "td" lines). */
struct cg_shard_range {
    int64_t tid, start_ns, end_ns;
    int64_t domain; /* 0: the default domain, else a cg_shard_domain id */
    char *name;
};

struct cg_shard_gpu_event {
    enum cg_op_kind kind; /* CG_OP_KERNEL, CG_OP_MEMCPY or CG_OP_MEMSET */
    int64_t device, stream, start_ns, end_ns;
    int64_t bytes;        /* -1 for kernels */
    char *name;           /* kernels mangled */
};

struct cg_shard_mem_event {
    int64_t device, ts_ns, total_bytes;
};

struct cg_shard_domain {
    int64_t id;
    char *name;
};

/* Where steps came from ("steps_from" lines). */
enum cg_steps_source {
    CG_STEPS_UNKNOWN,  /* no line (no step, or a library before the line existed) */
    CG_STEPS_NVTX,     /* the canary's own step ranges */
    CG_STEPS_OPTIMIZER /* optimizer steps, marked by canary-gate's sitecustomize */
};

struct cg_shard {
    int64_t pid, rank, local_rank; /* -1 when not recorded */
    /* "pid_start": the process's start in clock ticks after boot (exec keeps it) and its PID
     * namespace; -1 when not recorded. Shards of one pid and one start on one host are the
     * images of one process that exec'd (cg_shard_check_restarts) */
    int64_t pid_start_ticks, pid_ns;
    /* "started": the process's start on the steps' clock (ns, may be negative), started_known
     * false when not recorded (an older library, /proc unreadable) */
    int64_t started_ns;
    bool started_known;
    int64_t ppid; /* "started"'s parent pid; -1 when not recorded */
    /* where it ran ("host", "world_size", ... lines): NULL or -1 when not recorded */
    char *host, *slurm_node, *slurm_job;
    /* the host name as recorded (else the Slurm node), kept by cg_shard_redact before it hides
     * host and slurm_node: one host's clock (CLOCK_MONOTONIC_RAW counts from its boot) is told
     * from another's by it (trace.c). Never written anywhere; NULL until redacted */
    char *clock_host;
    int64_t world_size, group_rank, slurm_procid, slurm_nodeid, slurm_ntasks, mpi_rank, mpi_size;
    int64_t slurm_step; /* an srun task's step ("slurm_step"): Slurm's rank lines apply only then */
    /* the index (in its run's shards) of the first shard with steps of the same srun task
     * (slurm_job, slurm_step, slurm_procid) when that task holds several processes with steps
     * (a task that starts its own ranks: torch.multiprocessing.spawn under srun -n 1), else -1;
     * set by cg_shard_mark_tasks */
    int64_t task_group;
    enum cg_steps_source steps_from;
    int64_t steps_ignored; /* "steps_ignored N": its own step ranges began after N steps of the
                            * optimizer, past the warm-up, and were ignored; -1 none */
    char *step_range;              /* "step_range": the name of its step ranges, NULL when none */
    int64_t warmup;                /* -1 when not recorded */
    bool complete;                 /* "end" seen */
    struct cg_shard_step *steps;   /* by step index */
    size_t n_steps;                /* highest index seen + 1 */
    struct cg_shard_op *ops;
    size_t n_ops;
    struct cg_shard_mem *mem;
    size_t n_mem;
    struct cg_shard_uuid *uuids;   /* one per device id (the first line counts) */
    size_t n_uuids;
    int gpu;                       /* -1 no "gpu" line, 0 unavailable, 1 ok */
    char *gpu_reason;
    char *gpu_model;               /* first "device" line */
    int64_t gpu_count;             /* "device" lines */
    char *cuda_version;
    char *driver_version;
    int64_t records, dropped, zero_ts; /* -1 when no "c" line */
    /* the 7-field "c" line's counters, -1 when unknown (no "c" line, or the 3-field form) */
    int64_t outside_steps, inside_steps, late_memory, overhead_ns;
    char *cupti_library;           /* "HOW PATH" of the "cupti" line, NULL when none */
    char *warnings[CG_SHARD_MAX_WARNINGS]; /* distinct "w" lines, in order */
    size_t n_warnings;
    int64_t done_steps;            /* N of the "done" line, -1 when none */
    int64_t stray_steps[2];        /* the last "ss" line: step ranges nested in a step, and
                                    * of other threads, never steps; 0 and 0 when none */
    int64_t nonfinite_loss_step;   /* first step index with a non-finite loss, -1 none */
    double nonfinite_loss;         /* its first non-finite value (NAN, INFINITY or -INFINITY) */
    int64_t trace_first, trace_last; /* "tw": traced step indices, -1 when not traced */
    struct cg_shard_range *ranges;
    size_t n_ranges;
    struct cg_shard_gpu_event *gpu_events;
    size_t n_gpu_events;
    struct cg_shard_mem_event *mem_events;
    size_t n_mem_events;
    struct cg_shard_domain *domains;
    size_t n_domains;
    int64_t trace_events, trace_dropped; /* last "tx" line, -1 when none */
    bool counted[CG_COUNT_N];      /* named in an "nc" line (GPU counts) */
    bool placed;                   /* "places" named in an "nc" line */
    struct cg_shard_place *places; /* distinct, at most CG_ARTIFACT_MAX_PLACES */
    size_t n_places;
    bool times_counted[CG_SHARD_T_END - CG_COUNT_N]; /* "sync_ns", ... named in an "nc" line */
};

/* What a set of shards says about a run so far (for progress and the final checks). */
struct cg_shard_status {
    size_t n_shards;
    size_t n_with_steps;
    int64_t steps_seen;   /* contiguous steps from 0, minimum over shards with steps */
    /* where the steps of the shards with steps came from: the one source they all name (shards
     * that name none take no part), CG_STEPS_UNKNOWN when none names one; when they name two,
     * steps_mixed is set and steps_from is CG_STEPS_NVTX (the run is refused:
     * cg_shard_check_steps_from) */
    enum cg_steps_source steps_from;
    bool steps_mixed;
    /* Every shard with steps (at least one) has a "done" line: the measurement is complete and
     * the canary may be stopped. done_steps is then the smallest of their N, else -1. */
    bool all_done;
    int64_t done_steps;
    int64_t last_step_ns; /* wall time of the latest step of any shard, -1 when none */
    bool all_complete;
    /* The canary reported a non-finite loss: the lowest step index (from 0 per process, warm-up
     * steps included, as in the shards) of any shard, -1 when none; and that value (NAN, INFINITY
     * or -INFINITY; NAN when none). A run with one has failed. */
    int64_t nonfinite_loss_step;
    double nonfinite_loss;
};

struct cg_shard_merge_opts {
    int64_t warmup;          /* steps dropped at the start */
    int64_t steps;           /* measured steps kept at most */
    int64_t tokens_per_step; /* the world's tokens of a step in which no process gave a
                              * payload; -1 unknown */
};

/* Sets an empty shard. Allocates nothing. */
void cg_shard_init(struct cg_shard *s);

/* Frees everything the shard owns; it is empty afterwards. */
void cg_shard_release(struct cg_shard *s);

/* Parses shard bytes into s (which is initialised first). name is used in messages.
 * CG_EINPUT "shard '<name>' line N: <problem>" or CG_ENOMEM; s is empty on error. */
int cg_shard_parse(const char *data, size_t len, const char *name, struct cg_shard *s,
                   struct cg_err *err);

/* Reads every "*.shard" and "*.part" file of dir. *out is a malloc'ed array of *n shards (free
 * with cg_shard_free_all); an empty directory gives n = 0. CG_EIO, CG_EINPUT or CG_ENOMEM. */
int cg_shard_load_dir(const char *dir, struct cg_shard **out, size_t *n, struct cg_err *err);

/* Hides the secrets r finds (redact.h: secret values, token shapes, --redact patterns, URL
 * userinfo) in every string of n shards that came from the canary: op, place, trace range, GPU
 * event and domain names, warnings, host and Slurm names, GPU and CUPTI texts. Applied once, where
 * a run's shards are read to be merged into the artifact (and its trace), so nothing the canary
 * named reaches an artifact, report, comment, verdict or terminal unredacted. A host or Slurm
 * node name it changes becomes what redaction left and a number ("*** #1"), the hidden names
 * numbered by the lowest rank that ran there (shards without a rank after, by pid), skipping a
 * name shown in clear, so distinct hosts stay distinct nodes (shard_redact.c); the host name as
 * recorded is kept in clock_host, for telling hosts' clocks apart only. 0 or CG_ENOMEM. */
int cg_shard_redact(struct cg_shard *shards, size_t n, const struct cg_redact *r,
                    struct cg_err *err);

/* Releases n shards and frees the array. */
void cg_shard_free_all(struct cg_shard *shards, size_t n);

/* a + b for durations, counts and sizes in [0, 2^53] (what an artifact holds exactly), stopping
 * at 2^53 rather than overflowing. */
int64_t cg_shard_add_capped(int64_t a, int64_t b);

/* Sums up n shards (see struct cg_shard_status). */
void cg_shard_status(const struct cg_shard *shards, size_t n, struct cg_shard_status *st);

/* Appends the merged measured steps (at most o->steps after o->warmup), ops (kernel names
 * demangled, families set), peaks, CUPTI counters (summed; -1 when no process had them) and
 * warnings (distinct, at most CG_SHARD_MAX_WARNINGS) of n shards to run, then summarises it.
 * The caller sets peak_host_rss_bytes and stopped_after_steps. Returns 0 or CG_ENOMEM. */
int cg_shard_merge(const struct cg_shard *shards, size_t n, const struct cg_shard_merge_opts *o,
                   struct cg_run *run, struct cg_err *err);

/* One run has one definition of a step: CG_ECANARY when the shards with steps name two sources
 * (a script that marks its step ranges on rank 0 only, the other ranks' steps then from their
 * optimizer under --steps-from auto), naming the lowest rank (else pid) of each: "rank 0 (and 3
 * more) marks its steps with its own NVTX step ranges, rank 1 (and 3 more) takes them from its
 * optimizer: ..."; where every optimizer-side shard's own ranges were ignored (steps_ignored:
 * begun after its optimizer's measured steps), it says so and offers --steps-from nvtx and the
 * warm-up that lets them count; 0 otherwise. */
int cg_shard_check_steps_from(const struct cg_shard *shards, size_t n, struct cg_err *err);

/* Whether some processes with steps gave token payloads in the measured steps ([warmup, warmup
 * + steps)) and others none: a step's tokens are then its payloads' sum, and --tokens-per-step
 * (the world's tokens of a step in which no process gave one) is not used there. who (cap
 * bytes) gets "rank 0 gave its steps' tokens as payloads, rank 1 none" (the lowest rank, else
 * pid, of each). */
bool cg_shard_tokens_partial(const struct cg_shard *shards, size_t n, int64_t warmup, int64_t steps,
                             char *who, size_t cap);

/* The most ranks a run's world may have. */
#define CG_SHARD_MAX_RANKS 65536

/* The rank and world size of shard s: its rank RANK, else an MPI launcher's (mpi_rank; mpirun in
 * a Slurm job inherits the job's SLURM_PROCID), else SLURM_PROCID of a task srun started
 * (slurm_step; a batch script's process, or one the gate started in its own step, has none) when
 * the process is the only one of its task with steps (task_group -1: several processes of one
 * task share its SLURM_PROCID and none is that rank); its world WORLD_SIZE, else the MPI
 * launcher's size, else SLURM_NTASKS of a task srun started, wherever the rank came from, but
 * for a rank of its own (RANK, MPI) in a task of several processes with steps (*world -1 when
 * unknown). False when it has no rank. */
bool cg_shard_rank(const struct cg_shard *s, int64_t *rank, int64_t *world);

/* Sets task_group in each of n shards (one run's): the processes with steps of one srun task
 * (the same slurm_job, slurm_step and slurm_procid) are that task's processes, not its rank
 * several times. cg_shard_load_dir calls it; O(n log n). Returns 0 or CG_ENOMEM (then every
 * task_group is -1). */
int cg_shard_mark_tasks(struct cg_shard *shards, size_t n);

/* The clock s's times are on: its host's (CLOCK_MONOTONIC_RAW counts from the host's boot), told
 * by its host name, else its Slurm node, as recorded (clock_host: --redact may have hidden them,
 * making several hosts one name); "" when it names neither (one clock). Borrowed; for telling
 * clocks apart only, never written. */
const char *cg_shard_clock_host(const struct cg_shard *s);

/* Refuses a process run twice one after the other where its two runs would be merged as one
 * run's processes: among the processes with steps of one srun task (task_group), or without a
 * rank on one host (cg_shard_clock_host), one whose process started ("started", less than
 * CG_SHARD_START_ERROR_NS before counts) after another had made its last step, and whose steps
 * came after it, is a restart (a job step of 'python t.py || python t.py', a retry wrapper);
 * processes started together are not, however late one's first step; one whose start is not
 * recorded is not judged. CG_ECANARY "srun task 0 of step 3 of job 42: pid 12 on n1 started
 * after pid 11 had made its last step, and began its steps 1.20 s after it: ..." (without a task,
 * "pid 12 on n1 started ..."), naming both causes (a retry, a process before the trainer that
 * marks steps); 0 when there is none; CG_ENOMEM. Processes with a
 * rank of their own are told apart by it: never compared outside a task (a rank twice:
 * cg_shard_check_world), in a task only with the same rank's; the images of a process
 * that exec'd (one pid and "pid_start" on one host) are one process, their steps' spans one.
 * O(n log n). */
int cg_shard_check_restarts(const struct cg_shard *shards, size_t n, struct cg_err *err);

/* The node s ran on: SLURMD_NODENAME, else its host name, else "?" (borrowed; never ""). */
const char *cg_shard_node(const struct cg_shard *s);

/* Checks that the shards with steps and a rank hold every rank of the world they report
 * (cg_shard_rank), once each, and agree on its size; shards without a rank or steps take no part,
 * and a run none of whose shards reports a world passes if no rank is there twice. CG_ECANARY
 * naming the ranks and, where block placement and a shard of that node tell it, their node:
 * "ranks 8-15 (node n2) of a world of 16 wrote nothing: is canary-gate installed at LIBRARY_DIR
 * on n2, and does the launcher pass ... on?" (four groups of ranks listed, the others counted:
 * "... and 28 more"); a rank whose shard has no step "rank 1 (pid P on NODE) ... wrote a shard
 * but marked no step named 'step'" (the install's advice only for ranks with no shard), or, when
 * stopped (the gate stopped the canary once the ranks with steps had made theirs) and its shard
 * has no "end" (it was still running), "... was stopped before its first step named 'step'"; a rank
 * reported twice, outside the world, or two world sizes; CG_ENOMEM. Here a Slurm task is a rank
 * whatever number of processes with steps it holds (task_group: its processes, not the rank
 * twice). O(n + world). */
int cg_shard_check_world(const struct cg_shard *shards, size_t n, const char *library_dir,
                         bool stopped, struct cg_err *err);

/* Why a process could not write its shard, as the injection library records it in the
 * launcher's failure file (CG_ENV_FAIL_FILE): "OP ERRNO PID PATH" up to the first NUL. */
struct cg_shard_fail {
    char op[16];      /* "open", "write" or "rename" */
    int errno_value;  /* as the library saw it */
    long long pid;
    char path[CG_FAIL_FILE_BYTES];
};

/* Parses the failure file's bytes (len of them; what follows the first NUL is ignored). Returns
 * 1 and fills f when they record a failure, 0 when they record none (all NUL, empty) or are
 * malformed (then f->op is "", and the caller still knows the file was written: returns -1).
 * Pure. */
int cg_shard_fail_parse(const char *data, size_t len, struct cg_shard_fail *f);

/* Whether the shards of one run give GPU metrics: CUPTI ran in some process ("gpu ok") and,
 * when the processes counted where their timed GPU records fell, not all of them fell outside
 * every step. Returns true when they do; otherwise writes why into reason (cap bytes, cut to
 * fit): "N GPU activity records fell outside every step", the first process's reason, or a
 * fixed text when no process initialised CUDA. */
bool cg_shard_gpu_available(const struct cg_shard *shards, size_t n, char *reason, size_t cap);

#endif
