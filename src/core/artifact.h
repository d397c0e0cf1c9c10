/*
 * artifact: the run artifact (also the baseline format), in memory and as JSON.
 *
 * An artifact holds one or more runs of the canary (one run = one canary process); each run has
 * its measured steps (warm-up already dropped), a summary and per-op totals. Times are integer
 * nanoseconds, sizes integer bytes. Unknown integer values are -1, unknown doubles NAN, unknown
 * strings NULL. The JSON layout is documented field by field in docs/artifact.md.
 *
 * Loading validates everything a comparison relies on and names the file and field of the first
 * problem. Saving is atomic. Not thread-safe; every string and array is owned by the artifact.
 */
#ifndef CG_ARTIFACT_H
#define CG_ARTIFACT_H

#include "artifact_gpu.h"
#include "artifact_ranks.h"
#include "count.h"
#include "err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CG_ARTIFACT_SCHEMA "canary-gate/run"
#define CG_ARTIFACT_MAX_BYTES ((size_t)512 * 1024 * 1024)
#define CG_ARTIFACT_MAX_WARNINGS 16 /* per run */
#define CG_ARTIFACT_MAX_PLACES 4096 /* count places per run */

enum cg_op_kind { CG_OP_KERNEL, CG_OP_MEMCPY, CG_OP_MEMSET, CG_OP_RANGE, CG_OP_KIND_COUNT };

struct cg_op {
    char *name;          /* exact (demangled) name */
    char *family;        /* name with template arguments and suffixes stripped */
    enum cg_op_kind kind;
    int64_t calls;
    int64_t total_ns;    /* summed over the run's measured steps */
};

struct cg_step {
    int64_t wall_ns;     /* > 0 */
    int64_t tokens;      /* -1 when unknown */
    int64_t gpu_busy_ns; /* -1 when unknown */
    double loss;         /* NAN when the canary reported none */
    int64_t sync_ns;     /* host time blocked in synchronisations, -1 when unknown */
    int64_t compute_ns;  /* GPU busy with compute kernels (not communication: the rest of
                          * gpu_busy_ns is communication no compute overlapped), -1 unknown */
    int64_t copy_ns;     /* the union of the step's copies and sets, -1 when unknown */
    int64_t copy_hidden_ns;     /* of copy_ns, the time some kernel ran too (the rest: copying while
                                 * no kernel runs), -1 when unknown */
    int64_t counts[CG_COUNT_N]; /* what happened in the step (count.h), -1 when unknown */
};

struct cg_run_summary {
    double step_time_mean_ns;
    double step_time_median_ns;
    double step_time_p95_ns;
    double tokens_per_sec;       /* NAN when no step has tokens */
    int64_t peak_device_bytes;   /* -1 when unknown (no GPU metrics) */
    int64_t peak_host_rss_bytes; /* -1 when unknown */
};

/* Who measured a run, unique per run and kept through JSON and merges (docs/artifact.md): the
 * machine, the canary-gate process and when that process began measuring, and the run's number
 * among that process's runs. host is NULL for runs written before runs had an identity. */
struct cg_run_id {
    char *host;          /* the machine's host name */
    int64_t pid;         /* the canary-gate process that measured the run */
    char *started_utc;   /* when that process created its first run, ISO 8601 with ns */
    int64_t seq;         /* 1 for that process's first run, then 2, 3, ... */
    char *digest;        /* as read: CG_RUN_DIGEST_SCHEME and 16 hex digits sealing the fields
                          * above and the steps (cg_run_digest), checked on load; NULL when the
                          * run was made here (it is computed when written) or read without one */
    bool unsealed;       /* read without a digest this tool checks (written before digests, or
                          * by a newer scheme): its identity may have been edited, so the steps
                          * tell its copies (cg_run_same) */
};

#define CG_RUN_DIGEST_SCHEME "fnv1a64:"
#define CG_RUN_DIGEST_LEN 25 /* the scheme, 16 hex digits and the NUL */

/* Where a run's host made some of its synchronisations or pageable copies (docs/counts.md): the
 * NVTX range its thread was in (or had last ended), and how many over the measured steps. */
struct cg_count_place {
    int count;   /* CG_COUNT_SYNC_STREAM, _EVENT, _CONTEXT or CG_COUNT_DTOH_PAGEABLE */
    bool after;  /* the thread had ended the range (was in no range of its step) */
    char *range; /* the range's name, as its op's */
    int64_t calls;
};

/* A file named on the run's command line (the executable found for argv[0] included), hashed when
 * the run began: for information, never part of the canary's identity (docs/artifact.md). */
struct cg_code_file {
    char *path; /* the argument as written (secrets hidden, as in canary_command) */
    char *hash; /* "fnv1a64:<16 hex digits>" of its contents */
};

/* What code a run measured, for information: the files its command line names and the commit
 * of the git repository it ran in. The canary's identity is the command and the settings
 * (cg_artifact_canary_diff), never these: editing the training script leaves the baseline. */
struct cg_run_code {
    char *git_commit; /* HEAD of the working directory's repository, NULL when none */
    struct cg_code_file *files;
    size_t n_files;
};

/* Where the canary's first process ran at the start of the measured window, as the launcher
 * saw it in /proc (docs/artifact.md). Unknown: cpus NULL, cpu and numa_node -1. */
struct cg_run_placement {
    char *cpus;        /* its CPU affinity, a list as Linux writes it ("0-7,16-23") */
    int64_t cpu;       /* the CPU it last ran on */
    int64_t numa_node; /* that CPU's NUMA node */
};

struct cg_run {
    struct cg_run_id id;
    struct cg_run_code code;
    struct cg_run_placement placement;
    struct cg_step *steps;
    size_t n_steps;
    struct cg_run_summary summary;
    struct cg_op *ops;
    size_t n_ops;
    int64_t dropped_records;        /* CUPTI records lost, -1 when not traced */
    int64_t zero_timestamp_records; /* CUPTI records with a zero start or end, -1 when not traced */
    /* Timed GPU records (kernels, copies, sets) starting outside every step / inside some step,
     * memory records older than those already applied, and CUPTI's own overhead; -1 unknown. */
    int64_t outside_step_records, inside_step_records, late_memory_records, cupti_overhead_ns;
    int64_t stopped_after_steps; /* the tool stopped the canary once measured after this many
                                  * steps (warm-up included); -1: it ended by itself */
    /* Ranges named as a step that were no step, summed over processes (docs/artifact.md): begun
     * while a step was open, or by a thread other than the one whose steps were measured; -1
     * unknown (runs written before they were counted) */
    int64_t stray_steps_nested, stray_steps_other_threads;
    char **warnings;             /* the injection library's warnings, distinct */
    size_t n_warnings;
    bool places_measured;          /* every process placed its calls (count_places is whole) */
    struct cg_count_place *places; /* distinct (count, after, range) */
    size_t n_places;
    struct cg_gpu_state gpu;       /* the GPU's own state over the measured window (NVML) */
    struct cg_rank *ranks; /* per rank, when the processes reported a world (artifact_ranks.h) */
    size_t n_ranks;
    bool ranks_recorded; /* the run says what ranks it had ("ranks": [] for one process); false
                          * in artifacts written before runs did, whose node shape is unknown */
};

struct cg_env {
    char *gpu_model;        /* NULL when no GPU */
    int64_t gpu_count;
    char *driver_version;   /* the NVIDIA kernel module's version: recorded whenever the machine
                             * has one loaded, whether or not the canary used the GPU */
    char *cuda_version;
    char *cupti_status;     /* "ok" or why GPU metrics are unavailable */
    char *cupti_library;    /* "HOW PATH": the libcupti the library used (shard.h), or NULL */
    char *cpu_model;
    char *tool_version;
    char **canary_command;  /* argv of the canary */
    size_t n_canary_command;
    char *canary_id;   /* hash of the canary's identity: its command and the settings
                        * (never the contents of its files); NULL in artifacts written
                        * before it: their identity is unknown (cg_artifact_canary_diff) */
    char *canary_hash; /* as read: equal to canary_id when that is set; older artifacts'
                        * hashed the files' contents too, and is never compared */
    struct cg_gpu_env gpu_env; /* power limit, persistence mode, application clocks (NVML) */
};

struct cg_settings {
    int64_t steps;           /* measured steps per run */
    int64_t warmup;          /* steps dropped at the start of each run */
    int64_t runs;            /* runs asked for */
    char *step_range;        /* NVTX range name that marks a step */
    char *steps_from;        /* what marked the steps: "nvtx" (the canary's own ranges) or
                              * "optimizer" (its optimizer steps, --steps-from); NULL unknown */
    int64_t step_optimizer;  /* with steps from the optimizer, the N-th optimizer to step is the
                              * one counted (--step-optimizer, 1: the first); -1 unknown
                              * (artifacts written before it was recorded) */
#define CG_STEP_OPTIMIZER_MAX 1000 /* the largest --step-optimizer */
    int64_t tokens_per_step; /* -1 when steps carry their own tokens or none */
    char *comm_kernels;      /* CANARY_GATE_COMM_KERNELS as the canary had it (name parts of
                              * communication kernels besides NCCL's); NULL: unset or empty */
    int64_t flops_per_token; /* model FLOPs per token (forward and backward), -1 unknown:
                              * --flops-per-token, or the canary's own line */
    char *precision;         /* the precision MFU's peak is for ("bf16", ...), NULL unknown */
    double peak_flop_per_clock; /* --peak-flop-per-clock: the GPU's peak FLOPs per SM clock
                              * cycle, overriding the built-in table; NAN: the table */
};

struct cg_artifact {
    int64_t schema_version;
    char *created_utc;
    bool gpu_available;
    char *gpu_reason;        /* NULL when available */
    int cuda_initialised;    /* 1: the canary initialised CUDA (the injection library was
                              * loaded by cuInit), 0: it never did, -1: unknown (artifacts
                              * written before this was recorded) */
    struct cg_env env;
    struct cg_settings settings;
    struct cg_run *runs;
    size_t n_runs;
};

/* Sets an empty artifact of the current schema version. Allocates nothing. */
void cg_artifact_init(struct cg_artifact *a);

/* Frees everything the artifact owns; it is empty (as after init) afterwards. */
void cg_artifact_release(struct cg_artifact *a);

/* Parses and validates artifact JSON text. name is the file name used in messages.
 * On error a is left empty and err says "cannot read '<name>': <field>: <problem>" (CG_EINPUT). */
int cg_artifact_parse(const char *text, size_t len, const char *name, struct cg_artifact *a,
                      struct cg_err *err);

/* Reads and parses the file at path (see cg_artifact_parse). */
int cg_artifact_load(const char *path, struct cg_artifact *a, struct cg_err *err);

/* Renders the artifact as JSON; returns a malloc'ed string (caller frees) or NULL (no memory). */
char *cg_artifact_to_json(const struct cg_artifact *a);

/* Writes the artifact to path atomically; CG_EIO naming the path on failure. */
int cg_artifact_save(const char *path, const struct cg_artifact *a, struct cg_err *err);

/* Appends an empty run (no steps, unknown peaks) with a new identity (this host, this process,
 * the next number) and returns it, or NULL when out of memory. The pointer is valid until the
 * next append. */
struct cg_run *cg_artifact_add_run(struct cg_artifact *a);
/* The same without an identity, for a reader that fills in the one it read. */
struct cg_run *cg_artifact_add_blank_run(struct cg_artifact *a);

/* Appends a step to run (its loss NAN, its counts and sync_ns unknown: -1); returns 0 or
 * CG_ENOMEM. */
int cg_run_add_step(struct cg_run *run, int64_t wall_ns, int64_t tokens, int64_t gpu_busy_ns);

/* Appends an op (name and family are copied; family NULL means same as name); 0 or CG_ENOMEM. */
int cg_run_add_op(struct cg_run *run, const char *name, const char *family, enum cg_op_kind kind,
                  int64_t calls, int64_t total_ns);

/* Adds calls to the run's place (count, after, range), appended when new (range copied);
 * returns 0, CG_ENOMEM, or CG_EINPUT when the run holds CG_ARTIFACT_MAX_PLACES already. */
int cg_run_add_place(struct cg_run *run, int count, bool after, const char *range, int64_t calls);

/* Appends a copy of warning to run's warnings unless it is there already or the run holds max
 * of them. Returns 0 or CG_ENOMEM. */
int cg_run_add_warning(struct cg_run *run, const char *warning, size_t max);

/* Tokens over the run's measured steps; -1 when no step has tokens. */
int64_t cg_run_tokens(const struct cg_run *run);

/* Joules per token over the measured window (gpu.energy_j over cg_run_tokens); NAN when
 * either is unknown. */
double cg_run_energy_per_token(const struct cg_run *run);

/* Computes the run's step-time summary and tokens/sec from its steps. Peaks are left alone. */
void cg_run_summarize(struct cg_run *run);

/* True when a and b are the same run: their identities (or digests) match, or, when either has
 * no identity or was read unsealed, their steps do (every step's time and tokens: no two real
 * runs time every step alike to the ns). */
bool cg_run_same(const struct cg_run *a, const struct cg_run *b);

/* Writes the run's digest ("fnv1a64:" and 16 hex digits) into dst (CG_RUN_DIGEST_LEN bytes):
 * FNV-1a 64 over its identity (host, pid, started_utc, seq) and every step's wall_ns and tokens,
 * so a copy of a run has its digest and an edit of its identity or steps breaks it
 * (docs/artifact.md). Empty for a run without an identity. */
void cg_run_digest(const struct cg_run *r, char *dst);

/* Checks the runs of an artifact read from name: each digest read matches its run (else "runs[i]
 * was edited"), and no run is a copy of another (cg_run_same: "runs[k] is a copy of runs[i]").
 * Returns 0 or CG_EINPUT with one line naming name and the runs. */
int cg_artifact_check_runs(const struct cg_artifact *a, const char *name, struct cg_err *err);

/* Finds the first run that is the same run as an earlier one (cg_run_same): true with their
 * indices in *earlier < *later, false when every run is a different one. */
bool cg_artifact_find_same_runs(const struct cg_artifact *a, size_t *earlier, size_t *later);

/* Finds a run of b that is a run of a (cg_run_same): true with their indices in *in_a and *in_b,
 * false when the two share none. */
bool cg_artifacts_share_run(const struct cg_artifact *a, const struct cg_artifact *b, size_t *in_a,
                            size_t *in_b);

/* Copies src's runs, identities included, into dst (appending). Returns 0 or CG_ENOMEM. */
int cg_artifact_append_runs(struct cg_artifact *dst, const struct cg_artifact *src);

/* Copies everything but the runs (environment, settings, gpu status) from src to dst, which
 * must be empty. Returns 0 or CG_ENOMEM. */
int cg_artifact_copy_header(struct cg_artifact *dst, const struct cg_artifact *src);

/* Names the first environment field in which a and b are different machines (GPU model and
 * count, driver, CUDA, and CPU model when neither has a GPU), or NULL when they match. */
const char *cg_env_machine_diff(const struct cg_env *a, const struct cg_env *b, bool gpu);

/* True when the sides counted another optimizer's steps (settings.step_optimizer) and neither
 * side's steps came from its own ranges (settings.steps_from "optimizer" or unknown); a side that
 * did not record its counted optimizer (older) is taken as the other's. */
bool cg_settings_step_optimizer_differs(const struct cg_settings *a, const struct cg_settings *b);

/* Names the first canary identity field that differs (command, steps, warm-up, step range,
 * steps_from, step_optimizer, tokens per step, comm_kernels, then canary_id when both have
 * one), or NULL when the canaries match. What the canary is: what the user chose to run and how
 * it is measured, never the contents of the code measured (runs[].code): runs of an edited
 * script pool. An artifact without canary_id (written before it) is compared by its command and
 * settings alone. */
const char *cg_artifact_canary_diff(const struct cg_artifact *a, const struct cg_artifact *b);

/* The same without settings.step_range, settings.steps_from and settings.step_optimizer (a
 * verdict says those apart). */
const char *cg_artifact_canary_diff_but_steps(const struct cg_artifact *a,
                                              const struct cg_artifact *b);

/* The node shape of a's runs (cg_ranks_shape) into out (cap bytes): that of its first run whose
 * shape is known (its index into *first): its world's, or "" for one process (a run that recorded
 * no ranks); "" and *first a->n_runs when no run's is. *other gets the index of the first run of
 * known shape that differs from it, a->n_runs when none does: runs of unknown shape (artifacts
 * from before runs recorded their ranks) are not compared. 0 or CG_ENOMEM. */
int cg_artifact_shape(const struct cg_artifact *a, char *out, size_t cap, size_t *first,
                      size_t *other);

/* Frees what code holds; it is empty afterwards. */
void cg_run_code_release(struct cg_run_code *code);

/* Copies src's code facts into dst (empty). Returns 0 or CG_ENOMEM. */
int cg_run_code_copy(struct cg_run_code *dst, const struct cg_run_code *src);

/* Appends a file and its hash to code (both copied). Returns 0 or CG_ENOMEM. */
int cg_run_code_add_file(struct cg_run_code *code, const char *path, const char *hash);

/* "kernel", "memcpy", "memset", "range". */
const char *cg_op_kind_name(enum cg_op_kind kind);

/* Parses an op kind name; returns 0 or CG_EINPUT. */
int cg_op_kind_parse(const char *s, enum cg_op_kind *out);

#endif
