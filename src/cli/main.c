/*
 * main: the canary-gate command table. Each verb lives in its own cmd_<verb>.c.
 */
#include "cg_version.h"
#include "cmd.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

struct cg_command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
};

static const struct cg_command commands[] = {
    {"gate", cmd_gate, "the main job: run the canary, compare with --baseline, report, exit"},
    {"run", cmd_run, "run the canary under instrumentation and write a run artifact"},
    {"compare", cmd_compare, "compare two run artifacts and print the verdict"},
    {"merge", cmd_merge, "pool the runs of several artifacts into one baseline"},
    {"show", cmd_show, "print a human summary of a run artifact"},
    {"comment", cmd_comment, "post or update the PR comment and commit status on GitHub"},
    {"aa", cmd_aa, "run the canary as both sides: runner noise, false alarms, thresholds"},
    {"ab", cmd_ab, "run base and head turn about and compare them (pairs; floor: fast runs)"},
    {"history", cmd_history, "main's performance over time: record runs, find change points"},
    {"bisect", cmd_bisect, "find the first commit of a range that made the canary slower"},
    {"accept", cmd_accept, "record on main's history that a regression was accepted, and why"},
};

static void usage(FILE *out)
{
    /* "Usage:" and "  or:" lines: help2man makes them the man page's SYNOPSIS, a line each */
    fprintf(out, "Usage: canary-gate --baseline FILE [options] [-- CMD ARGS...]\n"
                 "  or:  canary-gate <command> [options]\n"
                 "  or:  canary-gate --version\n\n"
                 "commands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(out, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n'canary-gate <command> --help' describes each command.\n"
                 "exit codes: 0 pass (or inconclusive), 1 fail, 2 usage or invalid input,\n"
                 "            3 the canary or the tool failed at run time,\n"
                 "            4 inconclusive with --fail-on-inconclusive\n");
}

/* The command's exit code, unless its standard output could not take the text written to it
 * (a full disk, past `ulimit -f`, /dev/full): a report cut short is said in one line, exit 3. A
 * reader that stopped early (EPIPE: `| head`) chose to, and the exit code stays. */
static int checked_stdout(int code)
{
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout))
        return code;
    if (errno == EPIPE)
        return code;
    fprintf(stderr, "canary-gate: cannot write to standard output: %s\n",
            errno != 0 ? strerror(errno) : "write error");
    return CG_EXIT_RUNTIME;
}

static int dispatch(int argc, char **argv);

int main(int argc, char **argv)
{
    return checked_stdout(dispatch(argc, argv));
}

static int dispatch(int argc, char **argv)
{
    opterr = 0; /* the commands say what is wrong with an option, in one line */
    /* Under a file size limit (ulimit -f, systemd's LimitFSIZE) a write past it raises SIGXFSZ,
     * whose default ends the tool on the spot: no message, temporaries and shard directories left.
     * Ignored, the write fails with EFBIG and takes the path of every other failed write (one
     * line, exit 3, nothing half-written). The canary gets the default back (launch.c). */
    signal(SIGXFSZ, SIG_IGN);
    if (argc < 2) {
        usage(stderr);
        return CG_EXIT_INPUT;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("canary-gate %s (artifact schema_version %d)\n", CG_VERSION, CG_SCHEMA_VERSION);
        return CG_EXIT_PASS;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return CG_EXIT_PASS;
    }
    /* The main job: options first (canary-gate --baseline main.json ...). */
    if (strncmp(argv[1], "--", 2) == 0 && argv[1][2] != '\0')
        return cmd_gate(argc, argv);
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].fn(argc - 1, argv + 1);
    }
    fprintf(stderr, "canary-gate: '%s' is not a command (see 'canary-gate --help')\n", argv[1]);
    return CG_EXIT_INPUT;
}
