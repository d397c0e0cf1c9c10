/*
 * cmd_history: `canary-gate history` hands each subcommand to its file (cmd_history_append.c,
 * cmd_history_check.c, cmd_history_site.c), which share cmd_history_common.c with `accept`. The
 * change-point options of 'check' and 'site' are an option family of cmd_options.h.
 */
#include "cmd.h"

#include <stdio.h>
#include <string.h>

int cmd_history(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs("usage: canary-gate history append|check|site ... (canary-gate history append\n"
              "       --help, canary-gate history check --help, canary-gate history site --help)\n",
              argc < 2 ? stderr : stdout);
        return argc < 2 ? CG_EXIT_INPUT : CG_EXIT_PASS;
    }
    if (strcmp(argv[1], "append") == 0)
        return cmd_history_append(argc - 1, argv + 1);
    if (strcmp(argv[1], "check") == 0)
        return cmd_history_check(argc - 1, argv + 1);
    if (strcmp(argv[1], "site") == 0)
        return cmd_history_site(argc - 1, argv + 1);
    return cg_cmd_usage_error("history", "unknown subcommand '%s' (append, check, site)", argv[1]);
}
