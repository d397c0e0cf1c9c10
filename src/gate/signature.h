/*
 * signature: what each run ran, told apart across the runs of both sides, for the reports; never
 * decides. Two signatures:
 *
 * - the code: the hashes of the files a run's command line names (runs[].code). The canary is the
 *   same when its command and settings are (cg_artifact_canary_diff); that its script changed
 *   since the baseline is a plain fact to show.
 * - the kernels: the set of a run's kernel names (its ops of kind kernel, exact names). On a GPU a
 *   process can land in a slower state for its whole life because a library chose other kernels
 *   (cuBLAS/cuDNN heuristics, autotuning); runs that differ in their kernel sets name the choice,
 *   and the pooled process state (floor.h) of each run says which choice is the slow one.
 *
 * Pure; results point into the artifacts, which must outlive them. Not thread-safe.
 */
#ifndef CG_SIGNATURE_H
#define CG_SIGNATURE_H

#include "artifact.h"

#include <stdbool.h>
#include <stddef.h>

/* Files named at most in a code change. */
#define CG_SIGNATURE_MAX_FILES 8

/* The files whose contents changed since the baseline: a path some current run recorded with a
 * hash that no baseline run recorded for that path. A path no baseline run recorded (an artifact
 * written before runs had code facts, another file) is not a change: nothing is known of it. */
struct cg_code_change {
    const char *files[CG_SIGNATURE_MAX_FILES]; /* the paths, as the current runs recorded them */
    size_t n_files;                            /* shown */
    size_t n_changed;                          /* in all (more than shown when over the cap) */
};

/* Fills out from the runs of baseline and current. */
void cg_signature_code_change(const struct cg_artifact *baseline, const struct cg_artifact *current,
                              struct cg_code_change *out);

/* One kernel set among the runs. */
struct cg_kernel_choice {
    const char **only; /* kernel names in this set that some other set lacks, sorted */
    size_t n_only;
    const char **without; /* kernel names some other set has and this one lacks, sorted */
    size_t n_without;
    size_t runs[2]; /* the baseline's and the current side's runs with this set */
    size_t fast[2]; /* of them, the runs in the pooled fast state (states_known only) */
};

/* The kernel sets of the runs of both sides, most runs first. */
struct cg_kernel_choices {
    struct cg_kernel_choice *items;
    size_t n;          /* distinct sets; 0 when no run ran a kernel, 1 when every run that
                        * ran one ran the same set */
    bool states_known; /* fast[] is filled in */
    bool by_side;      /* two choices, each all of one side's runs that ran kernels: the change
                        * between the sides (the op table's new and vanished kernels), not a
                        * choice processes made */
};

/* Groups the runs of baseline and current by their kernel sets; a run without kernels (not
 * measured: no GPU metrics) is in no group. With states, each run's process
 * state is taken from the pooled run floors of both sides (cg_floor_run_ns, cg_floor_fast_state:
 * the runs whose floor is at most the highest floor of the pooled fast state are in it); pass it
 * when the verdict's floor compared the pooled fast state (cg_states: tested and not own_states).
 * 0 or CG_ENOMEM (out is then empty). */
int cg_signature_kernels(const struct cg_artifact *baseline, const struct cg_artifact *current,
                         bool states, struct cg_kernel_choices *out);

/* Frees what cg_signature_kernels allocated; out is empty afterwards. */
void cg_kernel_choices_release(struct cg_kernel_choices *c);

#endif
