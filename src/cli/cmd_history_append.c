/*
 * cmd_history_append: `canary-gate history append` records one published run of main in the
 * history file (docs/history.md): the run's values, and the events its environment or the
 * baseline's restart make.
 */
#include "cmd.h"
#include "cmd_history_common.h"
#include "cmd_options.h"

#include "history.h"
#include "outputs.h"
#include "trend.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char usage_text[] =
    "usage: canary-gate history append --history FILE --commit SHA [options] RUN.json\n"
    "\n"
    "Appends one published run of main to the history (JSON Lines, written atomically):\n"
    "per metric the median of its runs with an interval, and its counts per step. When the\n"
    "run's environment (GPU, driver, CUDA, CPU, steps) differs from the gate's last run in the\n"
    "history, an environment event comes first: a new segment. Lines of FILE that cannot be read\n"
    "(damaged, or of a newer version) are warned about and kept as they are, in their places; a\n"
    "FILE of which no line can be read is not a history and is left alone. A missing FILE is a\n"
    "new history. Appends to one FILE wait for each other (a lock on FILE.lock).\n"
    "\n"
    "  --history FILE    the history file (created when missing)\n"
    "  --commit SHA      the commit measured\n"
    "  --date ISO        when (default: now, UTC)\n"
    "  --gate-id ID      which gate, when several share the file (default: none): 1 to 64\n"
    "                    letters, digits, '.', '_' or '-', as the reports' --id\n"
    "  --restart TEXT    the baseline restarted with this run, and why (an event first)\n"
    "  --keep N          runs kept of each gate; its older ones are folded into its summary\n"
    "                    (default 1000)\n"
    "  -h, --help        show this help\n"
    "\n"
    "exit codes: 0 appended, 2 usage error or invalid input (RUN.json not an artifact; FILE\n"
    "            unreadable, not a regular file, not a history, or RUN.json itself), 3 FILE\n"
    "            could not be written\n";

static const struct option options[] = {
    {"history", required_argument, NULL, 'f'}, {"commit", required_argument, NULL, 'c'},
    {"date", required_argument, NULL, 'd'},    {"gate-id", required_argument, NULL, 'g'},
    {"restart", required_argument, NULL, 'r'}, {"keep", required_argument, NULL, 'k'},
    {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
};

/* The gate's newest run in h, or NULL. */
static const struct cg_history_entry *last_run(const struct cg_history *h, const char *gate_id)
{
    for (size_t i = h->n; i-- > 0;)
        if (h->entries[i].type != CG_HIST_EVENT && cg_history_of_gate(&h->entries[i], gate_id))
            return &h->entries[i];
    return NULL;
}

static int append_event(struct cg_history *h, enum cg_history_event ev,
                        const struct cg_history_entry *run, const char *reason)
{
    struct cg_history_entry e;
    cg_history_entry_init(&e, CG_HIST_EVENT);
    e.event = ev;
    e.commit = run->commit;
    e.date = run->date;
    e.environment = run->environment;
    e.gate_id = run->gate_id;
    e.reason = (char *)reason;
    return cg_history_append(h, &e); /* copies; e's strings stay the run's */
}

int cmd_history_append(int argc, char **argv)
{
    const char *path = NULL, *commit = NULL, *date = NULL, *gate_id = NULL, *restart = NULL;
    long keep = CG_HISTORY_DEFAULT_KEEP;
    char now[32];
    int c;
    optind = 1;
    struct cg_cmd_given given = {0};
    while ((c = cg_cmd_getopt("history append", argc, argv, ":h", options, &given)) != -1) {
        switch (c) {
        case 'f':
            path = optarg;
            break;
        case 'c':
            commit = optarg;
            break;
        case 'd':
            date = optarg;
            break;
        case 'g':
            gate_id = optarg;
            break;
        case 'r':
            restart = optarg;
            break;
        case 'k':
            if (cg_cmd_parse_count("history append", "--keep", optarg, 1, CG_CMD_KEEP_MAX, &keep) !=
                0)
                return CG_EXIT_INPUT;
            break;
        case 'h':
            fputs(usage_text, stdout);
            return CG_EXIT_PASS;
        default:
            return cg_cmd_option_error("history append", c, argv);
        }
    }
    if (path == NULL || commit == NULL)
        return cg_cmd_usage_error("history append", "missing %s",
                                  path == NULL ? "--history FILE" : "--commit SHA");
    if (optind + 1 != argc)
        return cg_cmd_usage_error("history append", "expected one run artifact");
    int bad;
    if ((bad = cg_cmd_history_value_error("history append", "--commit", commit,
                                          CG_HISTORY_MAX_ID_CHARS, false)) != 0 ||
        (gate_id != NULL && (bad = cg_cmd_history_gate_id_error("history append", gate_id)) != 0) ||
        (restart != NULL &&
         (bad = cg_cmd_history_value_error("history append", "--restart", restart,
                                           CG_HISTORY_MAX_TEXT_CHARS, false)) != 0) ||
        (date != NULL && (bad = cg_cmd_history_value_error("history append", "--date", date,
                                                           CG_HISTORY_MAX_ID_CHARS, true)) != 0))
        return bad;
    if (date == NULL)
        date = cg_cmd_history_now_utc(now, sizeof(now));
    if ((bad = cg_cmd_history_rewritable(path)) != 0)
        return bad;
    struct cg_outputs paths;
    cg_outputs_init(&paths);
    cg_outputs_add(&paths, CG_PATH_INPUT, "RUN.json", argv[optind]);
    cg_outputs_add(&paths, CG_PATH_OUTPUT, "--history", path);
    if ((bad = cg_cmd_check_outputs(&paths)) != 0)
        return bad;

    struct cg_err err;
    struct cg_artifact a;
    struct cg_history h = {0};
    struct cg_history_entry run;
    int exit_code = CG_EXIT_PASS, rc, lock = -1;
    cg_err_init(&err);
    cg_artifact_init(&a);
    cg_history_entry_init(&run, CG_HIST_RUN);
    if (cg_artifact_load(argv[optind], &a, &err) != 0) {
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    if ((exit_code = cg_cmd_history_load_for_rewrite(path, &h, &lock)) != 0)
        goto done;
    rc = cg_trend_entry(&a, commit, date, gate_id, &run);
    if (rc == CG_EINPUT) {
        cg_err_set(&err, CG_EINPUT, "'%s' has no runs: nothing to record", argv[optind]);
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    const struct cg_history_entry *prev = last_run(&h, gate_id);
    char env_text[512];
    cg_trend_env_text(&a, env_text, sizeof(env_text));
    size_t before = h.n;
    if (rc == 0 && prev != NULL &&
        (prev->environment == NULL || strcmp(prev->environment, run.environment) != 0))
        rc = append_event(&h, CG_HEV_ENVIRONMENT, &run, env_text);
    if (rc == 0 && restart != NULL)
        rc = append_event(&h, CG_HEV_RESTART, &run, restart);
    char said[64] = "";
    for (size_t i = before; i < h.n; i++)
        snprintf(said + strlen(said), sizeof(said) - strlen(said), "%s%s",
                 i == before ? "; events: " : ", ", cg_history_event_name(h.entries[i].event));
    if (rc == 0)
        rc = cg_history_append(&h, &run);
    if (rc == 0)
        rc = cg_history_bound(&h, (size_t)keep);
    if (rc != 0) {
        cg_err_set(&err, CG_ENOMEM, "cannot record in '%s': out of memory", path);
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    if (cg_history_save(path, &h, &err) != 0) {
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    fprintf(stderr, "canary-gate: history '%s': recorded %s (%zu runs)%s\n", path, commit, a.n_runs,
            said);
done:
    cg_history_unlock(lock);
    cg_history_entry_release(&run);
    cg_history_release(&h);
    cg_artifact_release(&a);
    return exit_code;
}
