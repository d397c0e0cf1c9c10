/*
 * launch_env: what the launcher (src/measure/collect.c) and the injection library agree on: the names of
 * the environment variables the library reads, and the limits both sides check. Included by the
 * library (inject.h) and by the tool, so a limit or a name changes in one place.
 *
 * The launcher owns the variables marked "launcher": it sets or removes each of them for every
 * canary run, whatever the user's environment holds. The ones marked "user" are settings of the
 * library a user may give; the launcher passes them on and names them on stderr.
 */
#ifndef CG_LAUNCH_ENV_H
#define CG_LAUNCH_ENV_H

/* launcher: where the library loads from (the CUDA driver and NVTX read these). */
#define CG_ENV_CUDA_INJECTION "CUDA_INJECTION64_PATH"
#define CG_ENV_NVTX_INJECTION "NVTX_INJECTION64_PATH"
/* The gate's GitHub token, for posting: removed from the canary's environment. */
#define CG_ENV_GATE_TOKEN "GITHUB_TOKEN"
/* launcher: the run's shard directory; without it the library stays inert (NVTX no-ops). */
#define CG_ENV_SHARD_DIR "CANARY_GATE_SHARD_DIR"
/* launcher: a file the launcher made and sized; the library writes into it (never extends it)
 * why its shard could not be written (see CG_FAIL_FILE_BYTES). */
#define CG_ENV_FAIL_FILE "CANARY_GATE_FAIL_FILE"
#define CG_ENV_STEP_RANGE "CANARY_GATE_STEP_RANGE" /* launcher */
/* launcher (--steps-from auto): a second step range name, the optimizer's (python/): whichever
 * of the two a process begins first marks its steps, the other is ignored; unset: none. */
#define CG_ENV_STEP_FALLBACK "CANARY_GATE_STEP_FALLBACK"
/* The range canary-gate's sitecustomize (python/canary_gate_steps.py) marks each optimizer step
 * with; a step range of this name is reported as steps from the optimizer. */
#define CG_OPTIMIZER_STEP_RANGE "canary-gate/optimizer-step"
/* NVTX marks of the default domain the same sitecustomize makes, which the library counts per
 * step (shard_format.h, the counts backward and optimizer_steps): the optimizers hooked (the
 * counts are measured from then on), a backward pass begun, an optimizer's step() made (any
 * optimizer's, the counted one's before the boundary it makes). */
#define CG_MARK_OPTIMIZER_HOOKED "canary-gate/optimizer-hooked"
#define CG_MARK_BACKWARD "canary-gate/backward"
#define CG_MARK_OPTIMIZER_STEP "canary-gate/optimizer-step-made"
/* launcher, read by python/canary_gate_steps.py: "auto" or "optimizer" (unset: no marking), the
 * tool's NVTX library, the range name (CG_OPTIMIZER_STEP_RANGE) and which optimizer counts. */
#define CG_ENV_STEPS_FROM "CANARY_GATE_STEPS_FROM"
#define CG_ENV_NVTX_LIB "CANARY_GATE_NVTX_LIB"
#define CG_ENV_OPTIMIZER_RANGE "CANARY_GATE_OPTIMIZER_RANGE"
#define CG_ENV_STEP_OPTIMIZER "CANARY_GATE_STEP_OPTIMIZER"
/* launcher: "JOB.STEP", the Slurm job step the gate itself runs in (its SLURM_JOB_ID and
 * SLURM_STEP_ID), unset when it runs in none: a canary process of that same step inherited the
 * gate's SLURM_PROCID and SLURM_NTASKS and is no task of its own (shard_format.h, "slurm_step"). */
#define CG_ENV_SLURM_STEP "CANARY_GATE_SLURM_STEP"
#define CG_ENV_WARMUP "CANARY_GATE_WARMUP"         /* launcher */
#define CG_ENV_STEPS "CANARY_GATE_STEPS"           /* launcher: measured steps per process, >= 1 */
#define CG_ENV_TRACE_STEPS "CANARY_GATE_TRACE_STEPS" /* launcher: "A:B", measured steps; or unset */
#define CG_ENV_CUPTI_PATH "CANARY_GATE_CUPTI_PATH"   /* user: libcupti to open unless one is loaded */
#define CG_ENV_CUPTI "CANARY_GATE_CUPTI"             /* user: "0" keeps CUPTI off */
#define CG_ENV_BUFFER_MB "CANARY_GATE_CUPTI_BUFFER_MB" /* user */
#define CG_ENV_CUPTI_OFF "CANARY_GATE_CUPTI_OFF" /* user: parts of the CUPTI set-up left off */
#define CG_ENV_COMM_KERNELS "CANARY_GATE_COMM_KERNELS" /* user: communication kernels' name parts  \
                                                        */
#define CG_ENV_TRACE_MAX_EVENTS "CANARY_GATE_TRACE_MAX_EVENTS" /* user */
/* user: K (1 to 100000), the library's cost measured inside one process: the measured steps go
 * in blocks of K, on off off on (repeating); in an off block the library's optional work (timing
 * the NVTX ranges other than the step's, placing API calls) is left undone. A diagnosis: range
 * times and places then cover the on blocks only (docs/collector.md). */
#define CG_ENV_OVERHEAD_TOGGLE "CANARY_GATE_OVERHEAD_TOGGLE"
#define CG_TOGGLE_MAX_BLOCK 100000

/* CANARY_GATE_COMM_KERNELS: comma-separated name parts, each 1 to CG_COMM_PART_MAX bytes of
 * printable ASCII but space and comma, at most CG_COMM_PARTS of them. The library checks it (a
 * "w" line, NCCL's only) and so does the launcher, before any run (a usage error), so that no
 * artifact records a value the library did not use. */
#define CG_COMM_PARTS 8
#define CG_COMM_PART_MAX 63
/* NULL when list (non-empty) is such a value; else what is wrong, with the part it is in at
 * *part (*part_len bytes). */
static inline const char *cg_comm_kernels_problem(const char *list, const char **part,
                                                   unsigned long *part_len)
{
    unsigned long n = 0;
    for (const char *p = list;; p++) { /* each part, the one after a last comma too */
        unsigned long len = 0;
        while (p[len] != '\0' && p[len] != ',')
            len++;
        const char *bad = 0;
        if (len == 0)
            bad = "an empty name part";
        else if (len > CG_COMM_PART_MAX)
            bad = "a name part longer than 63 bytes";
        else if (++n > CG_COMM_PARTS)
            bad = "more than 8 name parts";
        for (unsigned long i = 0; bad == 0 && i < len; i++)
            if (p[i] <= ' ' || p[i] > '~')
                bad = "a space or a character not printable ASCII";
        if (bad != 0) {
            *part = p;
            *part_len = len;
            return bad;
        }
        p += len;
        if (*p == '\0')
            return 0;
    }
}
#define CG_TRACE_DEFAULT_MAX_EVENTS 200000

/* Step indices of a process (warm-up included) run from 0 to CG_MAX_STEP_INDEX - 1: the shard
 * reader rejects any other, so the library never traces beyond it and the launcher refuses a
 * --trace-steps window (after the warm-up) that would. */
#define CG_MAX_STEP_INDEX 10000000

/* Size of the failure file: the library writes one NUL-terminated line of at most this many
 * bytes at its start, in place. */
#define CG_FAIL_FILE_BYTES 1024

#endif
