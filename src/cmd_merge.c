/*
 * cmd_merge: `canary-gate merge -o OUT IN...` pools the runs of several artifacts into one
 * baseline. Refuses inputs from different machines or canaries, naming the differing field.
 */
#include "cmd.h"

#include "artifact.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char usage_text[] =
    "usage: canary-gate merge -o OUT IN...\n"
    "\n"
    "Pools the runs of several run artifacts (for example the last K passing runs on main)\n"
    "into one baseline, so the baseline's own run-to-run spread is known. All inputs must\n"
    "come from the same machine and the same canary configuration.\n"
    "\n"
    "  -o, --out FILE   the merged artifact (written atomically)\n"
    "  -h, --help       show this help\n";

static const struct option options[] = {
    {"out", required_argument, NULL, 'o'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

int cmd_merge(int argc, char **argv)
{
    const char *out = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":o:h", options, NULL)) != -1) {
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

    struct cg_err err;
    struct cg_artifact merged, in, first;
    int exit_code = CG_EXIT_PASS;
    cg_err_init(&err);
    cg_artifact_init(&merged);
    cg_artifact_init(&in);
    cg_artifact_init(&first);
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
        if (a == &in)
            cg_artifact_release(&in);
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
    cg_artifact_release(&merged);
    cg_artifact_release(&in);
    cg_artifact_release(&first);
    return exit_code;
}
