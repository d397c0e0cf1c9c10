/*
 * cmd_merge: `canary-gate merge -o OUT IN...` pools the runs of several artifacts into one
 * baseline. Refuses inputs from different machines or canaries, naming the differing field, and
 * the same run twice (the same file, a copy, a merge that already holds it), naming the files
 * and the run.
 */
#include "cmd.h"
#include "cmd_options.h"

#include "artifact.h"
#include "verdict.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
    "usage: canary-gate merge -o OUT IN...\n"
    "\n"
    "Pools the runs of several run artifacts (for example the last K passing runs on main)\n"
    "into one baseline, so the baseline's own run-to-run spread is known. All inputs must\n"
    "come from the same machine and the same canary configuration (command line and\n"
    "measurement settings; a training script edited between runs is the same canary), and\n"
    "each run may be pooled once (a file given twice, or a copy of one, is refused). OUT may\n"
    "not be one of the inputs: write the pool to a new file.\n"
    "\n"
    "  -o, --out FILE   the merged artifact (written atomically)\n"
    "  -h, --help       show this help\n"
    "\n"
    "exit codes: 0 written, 2 usage error or invalid input (an input missing or not an\n"
    "            artifact, inputs from different machines or canaries, the same run given\n"
    "            twice, OUT being one of the inputs), 3 OUT could not be written or an input\n"
    "            exists but could not be read (no permission, an I/O error)\n";

static const struct option options[] = {
    {"out", required_argument, NULL, 'o'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* Which input run k of the pool came from: *file its index in files, *run its number there. */
static void locate(const size_t *ends, int n, size_t k, int *file, size_t *run)
{
    int f = 0;
    while (f + 1 < n && k >= ends[f])
        f++;
    *file = f;
    *run = k - (f > 0 ? ends[f - 1] : 0) + 1;
}

/* "cannot merge 'b.json': its run 2 is run 1 of 'a.json' again (host h, pid 7, ...)". */
static void report_same_run(const struct cg_artifact *pool, char **files, const size_t *ends,
                            int n, size_t x, size_t y, struct cg_err *err)
{
    int fx, fy;
    size_t rx, ry;
    char who[384];
    locate(ends, n, x, &fx, &rx);
    locate(ends, n, y, &fy, &ry);
    const struct cg_run_id *id = &pool->runs[y].id;
    if (id->host != NULL)
        snprintf(who, sizeof(who), "run %lld of canary-gate pid %lld on '%.128s' from %s",
                 (long long)id->seq, (long long)id->pid, id->host, id->started_utc);
    else
        snprintf(who, sizeof(who), "no identity recorded; every step's time is the same");
    cg_err_set(err, CG_EINPUT,
               "cannot merge '%s': its run %zu is run %zu of '%s' again (%s): a run may be pooled "
               "only once",
               files[fy], ry, rx, files[fx], who);
}

/* Refuses a pool whose runs were measured on worlds of different shapes (a job whose nodes
 * changed): no one machine. 0, 1 (err set, CG_EINPUT) or CG_ENOMEM. */
static int check_shapes(const struct cg_artifact *pool, char **files, const size_t *ends, int n,
                        struct cg_err *err)
{
    size_t other, first;
    char base[CG_SHAPE_MAX], shape[CG_SHAPE_MAX];
    if (cg_artifact_shape(pool, base, sizeof(base), &first, &other) != 0)
        return CG_ENOMEM;
    if (other == pool->n_runs)
        return 0;
    const struct cg_run *r = &pool->runs[other];
    if (cg_ranks_shape(r->ranks, r->n_ranks, shape, sizeof(shape)) != 0)
        return CG_ENOMEM;
    int fx, fy;
    size_t rx, ry;
    locate(ends, n, first, &fx, &rx);
    locate(ends, n, other, &fy, &ry);
    cg_err_set(err, CG_EINPUT,
               "cannot merge '%s' with '%s': %s differs (run %zu of '%s': %.300s; run %zu of "
               "'%s': %.300s)",
               files[fy], files[fx], CG_SHAPE_DIFF, ry, files[fy], shape[0] ? shape : "one process",
               rx, files[fx], base[0] ? base : "one process");
    return 1;
}

int cmd_merge(int argc, char **argv)
{
    const char *out = NULL;
    int c;
    optind = 1;
    struct cg_cmd_given given = {0};
    while ((c = cg_cmd_getopt("merge", argc, argv, ":o:h", options, &given)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'h': fputs(usage_text, stdout); return CG_EXIT_PASS;
        default: return cg_cmd_option_error("merge", c, argv);
        }
    }
    if (out == NULL)
        return cg_cmd_usage_error("merge", "missing -o OUT");
    if (optind >= argc)
        return cg_cmd_usage_error("merge", "expected at least one input artifact");

    struct cg_outputs paths;
    cg_outputs_init(&paths);
    for (int i = optind; i < argc; i++)
        cg_outputs_add(&paths, CG_PATH_INPUT, "IN", argv[i]);
    cg_outputs_add(&paths, CG_PATH_OUTPUT, "-o", out);
    int rc = cg_cmd_check_outputs(&paths);
    if (rc != 0)
        return rc;

    struct cg_err err;
    struct cg_artifact merged, in, first;
    int exit_code = CG_EXIT_PASS;
    int n_in = argc - optind;
    size_t *ends = calloc((size_t)n_in, sizeof(*ends)); /* runs in merged after input i */
    cg_err_init(&err);
    cg_artifact_init(&merged);
    cg_artifact_init(&in);
    cg_artifact_init(&first);
    if (ends == NULL)
        goto oom;
    for (int i = optind; i < argc; i++) {
        struct cg_artifact *a = i == optind ? &first : &in;
        if (cg_artifact_load(argv[i], a, &err) != 0) {
            exit_code = cg_cmd_fail(&err);
            goto done;
        }
        if (i == optind) {
            if (cg_artifact_copy_header(&merged, a) != 0)
                goto oom;
        } else {
            const char *diff = first.gpu_available != a->gpu_available ? "gpu.available"
                               : cg_env_machine_diff(&first.env, &a->env, first.gpu_available);
            if (diff == NULL)
                diff = cg_artifact_canary_diff(&first, a);
            if (diff != NULL) {
                cg_err_set(&err, CG_EINPUT, "cannot merge '%s' with '%s': %s differs", argv[i],
                           argv[optind], diff);
                exit_code = cg_cmd_fail(&err);
                goto done;
            }
        }
        if (cg_artifact_append_runs(&merged, a) != 0)
            goto oom;
        ends[i - optind] = merged.n_runs;
        if (a == &in)
            cg_artifact_release(&in);
    }
    size_t x, y;
    int shapes = check_shapes(&merged, argv + optind, ends, n_in, &err);
    if (shapes == CG_ENOMEM)
        goto oom;
    if (shapes != 0) {
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    if (cg_artifact_find_same_runs(&merged, &x, &y)) {
        report_same_run(&merged, argv + optind, ends, n_in, x, y, &err);
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    merged.settings.runs = (int64_t)merged.n_runs;
    if (cg_artifact_save(out, &merged, &err) != 0) {
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    fprintf(stderr, "canary-gate: merged %zu runs from %d artifacts into '%s'\n", merged.n_runs,
            argc - optind, out);
    goto done;
oom:
    cg_err_set(&err, CG_ENOMEM, "cannot merge: out of memory");
    exit_code = cg_cmd_fail(&err);
done:
    free(ends);
    cg_artifact_release(&merged);
    cg_artifact_release(&in);
    cg_artifact_release(&first);
    return exit_code;
}
