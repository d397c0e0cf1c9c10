/*
 * cmd_run: `canary-gate run [options] [-- CMD ARGS...]` runs the canary N times under the
 * injection library and writes one run artifact. Each run is its own process (launch.c) whose
 * processes write shards into a private directory (shard.c merges them). With no command the
 * built-in canary beside the tool runs ("canary-train --preset tiny --steps WARMUP+STEPS").
 * Progress goes to stderr; the canary's own output goes to the log file. Every output is checked
 * (not the same file as an input or another output, writable) before the canary runs. A failed
 * or interrupted run never replaces --out: the runs it completed go to FILE.partial.json. Exit:
 * 0 every run measured, 2 usage, 3 the canary failed, timed out, measured too little, or was
 * interrupted, or an output cannot be written.
 */
#include "cmd.h"

#include "artifact.h"
#include "cmd_options.h"
#include "collect.h"
#include "launch_env.h"
#include "thresholds.h"

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The usage, in three parts around the lines whose defaults are the built-in ones: the default
 * thresholds' measurement section and cg_measure_opts_init's timeout and grace (usage()). */
static const char usage_head[] =
    "usage: canary-gate run [options] [-- CMD ARGS...]\n"
    "\n"
    "Runs the canary under NVTX/CUPTI instrumentation and writes a run artifact. Without CMD\n"
    "the built-in canary runs (canary-train beside canary-gate). The canary marks each\n"
    "training step with an NVTX range named step (Python: 'with canary_gate.step(tokens=N):',\n"
    "the canary_gate module canary-gate puts on the canary's path, on any PyTorch build); an\n"
    "int64 payload on the range is its token count. A PyTorch script that marks none gets its\n"
    "steps from its optimizer (--steps-from).\n"
    "\n"
    "  --out FILE            the artifact (default canary-run.json)\n"
    "  --thresholds FILE     where the defaults of --runs, --steps and --warmup come from\n";

static const char usage_middle[] =
    "  --runs N              canary processes, one after another\n"
    "  --steps N             measured steps expected per run after the warm-up\n"
    "  --warmup N            steps dropped at the start of each run\n";

static const char usage_tail[] =
    "  --tokens-per-step N   tokens of a step, all ranks', with no payload\n"
    "  --step-range NAME     NVTX range name that marks a step (default step)\n"
    CG_MEASURE_LET_FINISH_USAGE
    "  --log FILE            the canary's stdout and stderr (default: --out with .log)\n"
    "  --trace FILE.json     also write a Chrome trace (Perfetto, chrome://tracing) of the first\n"
    "                        run: NVTX ranges, kernels and copies per stream, device memory\n"
    "  --trace-steps A:B     the measured steps the trace covers, from 0 (default 0:2)\n"
    "  -h, --help            show this help\n"
    "\n"
    "A failed or interrupted run never replaces --out: the runs it completed are written\n"
    "beside it (FILE.partial.json).\n"
    "\n"
    "exit codes: 0 every run measured, 2 usage error (an output that is an input or another\n"
    "            output), 3 the canary failed, timed out, marked too few steps, or the run was\n"
    "            interrupted, or an output cannot be written\n";

/* Prints the usage with the built-in defaults (the thresholds compiled in, the option defaults). */
static void usage(void)
{
    struct cg_thresholds t;
    struct cg_measure_opts m;
    struct cg_err err;
    cg_err_init(&err);
    cg_measure_opts_init(&m);
    fputs(usage_head, stdout);
    if (cg_thresholds_load(NULL, &t, &err) == 0)
        printf("                        (its measurement section; default: the built-in default,\n"
               "                        %lld runs of %lld steps after %lld warm-up steps)\n",
               (long long)t.runs, (long long)t.steps, (long long)t.warmup);
    else
        printf("                        (its measurement section; default: the built-in default)\n");
    fputs(usage_middle, stdout);
    printf("  --timeout SEC         stop a run after SEC seconds: SIGTERM, then SIGKILL (default %ld)\n"
           "  --kill-grace SEC      seconds between SIGTERM and SIGKILL (default %ld)\n",
           m.timeout_s, m.grace_s);
    fputs(usage_tail, stdout);
}

enum { OPT_OUT = CG_OPT_COMMAND, OPT_LOG, OPT_TRACE, OPT_TRACE_STEPS };

static const struct option options[] = {
    {"out", required_argument, NULL, OPT_OUT},
    {"log", required_argument, NULL, OPT_LOG},
    {"trace", required_argument, NULL, OPT_TRACE},
    {"trace-steps", required_argument, NULL, OPT_TRACE_STEPS},
    CG_MEASURE_OPTIONS,
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

int cmd_run(int argc, char **argv)
{
    struct cg_measure_opts mo;
    struct cg_collect_cfg c;
    const char *out = "canary-run.json", *log = NULL, *trace = NULL, *trace_steps = NULL;
    long runs = -1;
    struct cg_thresholds t;
    struct cg_artifact a;
    struct cg_err err;
    struct cg_collector *col = NULL;
    struct cg_outputs paths;
    char *log_owned = NULL, *partial = NULL;
    bool log_given;
    int exit_code = CG_EXIT_PASS, opt;
    cg_measure_opts_init(&mo);
    cg_artifact_init(&a);
    cg_err_init(&err);
    optind = 1;
    struct cg_cmd_given given = {0};
    while ((opt = cg_cmd_getopt("run", argc, argv, "+:h", options, &given)) != -1) {
        int bad = cg_measure_option("run", opt, optarg, &mo);
        if (bad != 1) {
            if (bad)
                return bad;
            continue;
        }
        switch (opt) {
        case OPT_OUT: out = optarg; break;
        case OPT_LOG: log = optarg; break;
        case OPT_TRACE: trace = optarg; break;
        case OPT_TRACE_STEPS: trace_steps = optarg; break;
        case 'h': usage(); return CG_EXIT_PASS;
        default: return cg_cmd_option_error("run", opt, argv);
        }
    }
    if (trace_steps != NULL && !cg_collect_trace_steps_valid(trace_steps))
        return cg_cmd_usage_error("run", "--trace-steps '%s': expected A:B, whole numbers with "
                                         "A <= B < %d (measured steps, from 0)", trace_steps,
                                  CG_MAX_STEP_INDEX);
    if (trace_steps != NULL && trace == NULL)
        return cg_cmd_usage_error("run", "--trace-steps needs --trace FILE.json");
    if (cg_measure_settle(&mo, &t, &c, &runs, &err) != 0)
        return cg_cmd_fail(&err);
    c.log = log;
    c.trace_path = trace;
    c.trace_steps = trace_steps;
    if (optind < argc)
        c.cmd = argv + optind;
    log_given = c.log != NULL;
    if ((c.log == NULL && (c.log = log_owned = cg_collect_log_path(out)) == NULL) ||
        (partial = cg_cmd_partial_path(out)) == NULL) {
        cg_err_set(&err, CG_ENOMEM, "out of memory");
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    cg_outputs_init(&paths);
    cg_cmd_add_thresholds(&paths, mo.thresholds);
    cg_outputs_add(&paths, CG_PATH_OUTPUT, "--out", out);
    cg_outputs_add(&paths, CG_PATH_IN_PLACE, log_given ? "--log" : "the canary's log", c.log);
    cg_outputs_add(&paths, CG_PATH_OUTPUT, "--trace", c.trace_path);
    cg_outputs_add(&paths, CG_PATH_OUTPUT, "the partial artifact", partial);
    if ((exit_code = cg_cmd_check_outputs(&paths)) != 0)
        goto done;
    if (cg_collector_new(&c, &col, &err) != 0) {
        exit_code = err.code == CG_EINPUT ? cg_cmd_usage_error("run", "%s", err.msg)
                                          : cg_cmd_fail(&err);
        goto done;
    }
    if (cg_collector_run(col, &a, runs, runs, &err) != 0) {
        cg_cmd_fail(&err);
        struct cg_collect_failure why = cg_collector_failure(col);
        cg_collect_hint(&why, &err, c.step_range, &c.say);
        /* never over --out: a good artifact there stays as it was */
        cg_cmd_save_partial(out, &a);
        exit_code = CG_EXIT_RUNTIME;
        goto done;
    }
    if (cg_artifact_save(out, &a, &err) != 0) {
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    fprintf(stderr, "canary-gate: %ld run%s measured%s; artifact '%s', canary output '%s'\n",
            runs, runs == 1 ? "" : "s", a.gpu_available ? "" : " (GPU metrics unavailable)", out,
            c.log);
    if (!a.gpu_available && a.gpu_reason != NULL)
        cg_cmd_say_gpu_unavailable(a.gpu_reason);
done:
    cg_collector_free(col);
    cg_artifact_release(&a);
    free(log_owned);
    free(partial);
    return exit_code;
}
