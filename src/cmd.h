/*
 * cmd: the subcommands of canary-gate. Only this layer prints to the user and picks exit codes.
 *
 * Each cmd_<verb>.c holds a usage text, an option table and one entry function that takes the
 * subcommand's argv (argv[0] is the verb) and returns the process exit code (enum cg_exit).
 */
#ifndef CG_CMD_H
#define CG_CMD_H

#include "err.h"

int cmd_compare(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_comment(int argc, char **argv);

/* Prints "canary-gate: <msg>" on stderr and returns the exit code for err->code. */
int cg_cmd_fail(const struct cg_err *err);

/* Prints "canary-gate <verb>: <msg>" and a hint to run --help on stderr; returns CG_EXIT_INPUT. */
int cg_cmd_usage_error(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parses a positive integer option value into *out; on error prints a usage error and returns
 * CG_EXIT_INPUT, else 0. */
int cg_cmd_parse_count(const char *verb, const char *opt, const char *value, long min, long max,
                       long *out);

#endif
