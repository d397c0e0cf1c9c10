/*
 * thresholds: what counts as a regression, loaded from a thresholds file (docs/thresholds.md).
 *
 * A file may extend another by name ("extends": "default" finds default.json beside it, else the
 * built-in file of that name) or by path; its fields override the parent's one by one. A file
 * without "extends" extends the built-in "default"; default.json itself says "extends": null and
 * must be complete. Each file's keys and types are checked before merging, so an error names the
 * file where the bad key stands. Percentages are percent (5.0 = 5%), sizes bytes. Not
 * thread-safe.
 */
#ifndef CG_THRESHOLDS_H
#define CG_THRESHOLDS_H

#include "count.h"
#include "err.h"
#include "metric.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cg_metric_limits {
    double max_regression_pct;
    double max_regression_bytes; /* memory metrics only, else NAN */
    double alpha;                /* significance level of the one-sided test (timing metrics) */
    int64_t min_runs;            /* fewer runs on either side: a change beyond the threshold is
                                  * INCONCLUSIVE, never FAIL (within it: PASS) */
};

/* How much a count may grow per step (docs/counts.md): by more than
 * max(max_increase, baseline * max_increase_pct / 100) is a FAIL. */
struct cg_count_limit {
    bool set;                /* given by some file of the chain */
    bool gated;              /* false: shown, never decides ("null" in the file) */
    double max_increase;     /* per step */
    double max_increase_pct; /* percent of the baseline's count */
};

/* The parts of a step's anatomy that are gated (anatomy.h), in "anatomy" of the file. */
enum cg_anatomy_gated {
    CG_ANAT_GATE_GPU_IDLE,     /* "gpu_idle": the GPU's idle share of the step */
    CG_ANAT_GATE_EXPOSED_COMM, /* "exposed_communication": communication no compute overlapped */
    CG_ANAT_GATE_RANK_SPREAD,  /* "rank_spread": the slowest rank's step over the median rank's
                                * (worlds of ranks; not in the built-in files: shown, not gated) */
    CG_ANAT_GATES
};

/* How much a gated share of the step may grow: by more than max_increase_points (percentage
 * points of the step), significantly at alpha (Mann-Whitney over the runs' shares) with min_runs
 * runs a side, is a FAIL. */
struct cg_anatomy_limit {
    bool set; /* given by some file of the chain; unset or null: shown, not gated */
    double max_increase_points;
    double alpha;
    int64_t min_runs;
};

/* How much the share of runs in the slow process states (outside the pooled fast state, floor.h)
 * may rise: by more than max_increase_points (percentage points of the runs), significantly at
 * alpha (Fisher's exact test, one-sided), is a FAIL. Not gated ("slow_state": null, the default):
 * a significant rise is reported at the floor's alpha and never decides. */
struct cg_state_limit {
    bool gated;
    double max_increase_points;
    double alpha;
};

#define CG_MAX_RANGE_LIMITS 32
#define CG_RANGE_LIMIT_NAME_MAX 256

struct cg_range_limit {
    char name[CG_RANGE_LIMIT_NAME_MAX]; /* an NVTX range name */
    struct cg_count_limit limit;
};

/* The files of a chain of "extends" at most (the first and the parents it names). */
#define CG_THRESHOLDS_MAX_FILES 9

struct cg_thresholds {
    char source[1024];/* file or built-in name it came from, for reports */
    char files[CG_THRESHOLDS_MAX_FILES][1024]; /* the files read, the first first (built-in
                                                * names are none), for the outputs' check */
    size_t n_files;
    int64_t runs, steps, warmup;
    struct cg_metric_limits metric[CG_M_COUNT];
    int64_t ops_top_n;
    double ops_min_share_pct;
    double ops_fdr_q;
    bool env_mismatch_gates; /* "environment_mismatch": "gate" */
    bool require_floor;      /* "require_floor_regression": a FAIL of the mean, p95 or tokens/sec
                              * also needs the step time floor to FAIL (verdict.c, floor_rule) */
    int64_t bootstrap_resamples;
    struct cg_count_limit counts[CG_COUNT_ROWS]; /* by row (count.h); unset: not gated */
    struct cg_count_limit range_calls; /* calls per step of every NVTX range name */
    struct cg_count_limit varying;     /* the least a count that varies may grow */
    struct cg_range_limit range_names[CG_MAX_RANGE_LIMITS]; /* range_calls, per name */
    size_t n_range_names;
    struct cg_anatomy_limit anatomy[CG_ANAT_GATES];
    struct cg_state_limit slow_state; /* "slow_state" (floor.h's process states) */
    unsigned gate_only; /* CG_GATE_* bits of the groups that decide (--only); 0: every group.
                         * Not read from a file: the commands set it from their options. */
};

/* The groups of what a verdict gates, for --only: everything else is shown, not gated. */
enum {
    CG_GATE_TIMING = 1u << 0,  /* "timing": step time mean, p95, floor, tokens/sec */
    CG_GATE_ANATOMY = 1u << 1, /* "anatomy": the gated shares of the step */
    CG_GATE_COUNTS = 1u << 2,  /* "counts": exact per-step counts and NVTX range calls */
    CG_GATE_MEMORY = 1u << 3   /* "memory": peak device memory, peak host RSS */
};

/* Parses a comma-separated list of the group names above (e.g. "counts,memory") into *mask.
 * CG_EINPUT naming the part that is none of them, or an empty list. Pure. */
int cg_thresholds_parse_only(const char *list, unsigned *mask, struct cg_err *err);

/* The names of the groups in mask, comma-separated, into out ("" for 0). */
void cg_thresholds_only_names(unsigned mask, char *out, size_t size);

/* "gpu_idle", "exposed_communication". */
const char *cg_anatomy_gated_name(enum cg_anatomy_gated g);

struct cg_builtin_thresholds {
    const char *name;
    const char *json;
};

/* The thresholds files compiled in from thresholds/ (generated), ended by {NULL, NULL}. */
extern const struct cg_builtin_thresholds cg_builtin_thresholds[];

/* Loads thresholds from a file path, or from a built-in name ("default", "strict", "smoke") when
 * spec has no '/' and no such file exists. NULL spec loads the built-in default.
 * CG_EINPUT with a message naming the file and key on any problem. */
int cg_thresholds_load(const char *spec, struct cg_thresholds *t, struct cg_err *err);

/* Parses the text of one thresholds file (len bytes; name is used in messages). Its "extends"
 * may only name a built-in file. Pure: reads no file. Same errors as cg_thresholds_load. */
int cg_thresholds_parse(const char *text, size_t len, const char *name, struct cg_thresholds *t,
                        struct cg_err *err);

#endif
