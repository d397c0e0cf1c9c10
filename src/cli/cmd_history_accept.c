/*
 * cmd_history_accept: `canary-gate accept` records an accepted regression in main's history.
 */
#include "cmd.h"
#include "cmd_options.h"
#include "cmd_history_common.h"

#include "history.h"
#include "outputs.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char accept_usage[] =
    "usage: canary-gate accept --history FILE --reason TEXT [options]\n"
    "\n"
    "Records on main's history that a regression was accepted, by whom, why and at which\n"
    "commit (an accept event, written atomically). 'history check' marks the change points it\n"
    "covers as accepted, the history site marks it, and the reports of the next pull requests\n"
    "(--history) mention it while fewer than 10 runs of main were recorded after it. Record it\n"
    "before the accepted commit's run is appended (ci/baseline-publish --accept does), or after:\n"
    "an accept of the commit of a change's first run covers that change.\n"
    "\n"
    "  --history FILE    the history file (created when missing)\n"
    "  --reason TEXT     why it was accepted (1 to 2000 bytes of UTF-8, one line)\n"
    "  --commit SHA      the commit accepted (default: $GITHUB_SHA)\n"
    "  --who NAME        who accepted it (default: $GITHUB_ACTOR, else $USER)\n"
    "  --date ISO        when (default: now, UTC)\n"
    "  --gate-id ID      which gate, when several share the file (default: none): 1 to 64\n"
    "                    letters, digits, '.', '_' or '-', as the reports' --id\n"
    "  -h, --help        show this help\n"
    "\n"
    "exit codes: 0 recorded, 2 usage error or invalid input (FILE not a regular file, or no\n"
    "            run of the gate in a FILE of other gates' runs), 3 FILE could not be written\n";

static const struct option accept_options[] = {
    {"history", required_argument, NULL, 'f'}, {"reason", required_argument, NULL, 'r'},
    {"commit", required_argument, NULL, 'c'},  {"who", required_argument, NULL, 'w'},
    {"date", required_argument, NULL, 'd'},    {"gate-id", required_argument, NULL, 'g'},
    {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
};

int cmd_accept(int argc, char **argv)
{
    const char *path = NULL, *reason = NULL, *commit = getenv("GITHUB_SHA");
    const char *who = getenv("GITHUB_ACTOR"), *date = NULL, *gate_id = NULL;
    const char *who_from = "GITHUB_ACTOR", *commit_from = "GITHUB_SHA"; /* for messages */
    char now[32];
    int c;
    if (who == NULL || who[0] == '\0')
        who = getenv("USER"), who_from = "USER";
    if (commit != NULL && commit[0] == '\0')
        commit = NULL;
    optind = 1;
    struct cg_cmd_given given = {0};
    while ((c = cg_cmd_getopt("accept", argc, argv, ":h", accept_options, &given)) != -1) {
        switch (c) {
        case 'f':
            path = optarg;
            break;
        case 'r':
            reason = optarg;
            break;
        case 'c':
            commit = optarg, commit_from = "--commit";
            break;
        case 'w':
            who = optarg, who_from = "--who";
            break;
        case 'd':
            date = optarg;
            break;
        case 'g':
            gate_id = optarg;
            break;
        case 'h':
            fputs(accept_usage, stdout);
            return CG_EXIT_PASS;
        default:
            return cg_cmd_option_error("accept", c, argv);
        }
    }
    if (path == NULL || reason == NULL)
        return cg_cmd_usage_error("accept", "missing %s",
                                  path == NULL ? "--history FILE" : "--reason TEXT");
    if (commit == NULL)
        return cg_cmd_usage_error("accept", "missing --commit SHA (GITHUB_SHA is not set)");
    if (optind != argc)
        return cg_cmd_usage_error("accept", "unexpected argument '%s'", argv[optind]);
    const struct {
        const char *name, *value;
        size_t max;
        bool date;
    } fields[] = {{"--reason", reason, CG_HISTORY_MAX_TEXT_CHARS, false},
                  {commit_from, commit, CG_HISTORY_MAX_ID_CHARS, false},
                  {who_from, who && who[0] ? who : NULL, CG_HISTORY_MAX_ID_CHARS, false},
                  {"--date", date, CG_HISTORY_MAX_ID_CHARS, true}};
    int bad;
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        if (fields[i].value != NULL &&
            (bad = cg_cmd_history_value_error("accept", fields[i].name, fields[i].value,
                                              fields[i].max, fields[i].date)) != 0)
            return bad;
    if (gate_id != NULL && (bad = cg_cmd_history_gate_id_error("accept", gate_id)) != 0)
        return bad;
    if (who != NULL && who[0] == '\0')
        who = NULL;
    if ((bad = cg_cmd_history_rewritable(path)) != 0)
        return bad;
    struct cg_outputs paths;
    cg_outputs_init(&paths);
    cg_outputs_add(&paths, CG_PATH_OUTPUT, "--history", path);
    if ((bad = cg_cmd_check_outputs(&paths)) != 0)
        return bad;

    struct cg_err err;
    struct cg_history h = {0};
    int exit_code = CG_EXIT_PASS, lock = -1;
    cg_err_init(&err);
    if ((exit_code = cg_cmd_history_load_for_rewrite(path, &h, &lock)) != 0)
        goto done;
    if (cg_history_gate_check(&h, gate_id, path, &err) != 0) {
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    struct cg_history_entry e;
    cg_history_entry_init(&e, CG_HIST_EVENT);
    e.event = CG_HEV_ACCEPT;
    e.commit = (char *)commit;
    e.date = (char *)(date != NULL ? date : cg_cmd_history_now_utc(now, sizeof(now)));
    e.gate_id = (char *)gate_id;
    e.reason = (char *)reason;
    e.who = (char *)who;
    if (cg_history_append(&h, &e) != 0) { /* copies; e holds only borrowed strings */
        cg_err_set(&err, CG_ENOMEM, "cannot record in '%s': out of memory", path);
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    if (cg_history_save(path, &h, &err) != 0) {
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    fprintf(stderr, "canary-gate: history '%s': recorded the accept of %s%s%s\n", path, commit,
            who ? " by " : "", who ? who : "");
done:
    cg_history_unlock(lock);
    cg_history_release(&h);
    return exit_code;
}
