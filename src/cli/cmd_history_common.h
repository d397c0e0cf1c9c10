/*
 * cmd_history_common (private to the history commands: cmd_history_*.c): what the subcommands of
 * `canary-gate history` and `canary-gate accept` share. Part of the command layer: the functions
 * that can fail print the problem and return the exit code.
 */
#ifndef CG_CMD_HISTORY_COMMON_H
#define CG_CMD_HISTORY_COMMON_H

#include <stdbool.h>
#include <stddef.h>

struct cg_history;

/* The usage error of a value given for verb's option opt (printed), or 0 when it is one line
 * of 1 to max bytes of UTF-8 (and, for a date, ISO 8601). */
int cg_cmd_history_value_error(const char *verb, const char *opt, const char *value, size_t max,
                               bool date);

/* The usage error of verb's --gate-id (printed), or 0 when it is a gate id: the rule of every
 * command's gate id (cg_github_id_check), so a report's --id can name every gate of a history. */
int cg_cmd_history_gate_id_error(const char *verb, const char *gate_id);

/* The history at path, to be rewritten, must be a regular file when it exists (a FIFO is
 * refused at once, never opened): 0, or the exit code (printed). */
int cg_cmd_history_rewritable(const char *path);

/* Reads the history at path to be rewritten, under the lock *lock takes: 0, or the exit code
 * (printed). */
int cg_cmd_history_load_for_rewrite(const char *path, struct cg_history *h, int *lock);

/* The current time, UTC, ISO 8601, into now[n] (32 bytes suffice); returns now. */
const char *cg_cmd_history_now_utc(char *now, size_t n);

/* Reads the newest keep runs of each gate of the history at path (older ones summarised, and
 * said so, as are the gates past the most read): 0, or the exit code (printed). */
int cg_cmd_history_load_newest(const char *path, long keep, struct cg_history *h);

/* Reads the newest keep runs of gate_id (NULL: the runs recorded without one) in the history at
 * path (older ones summarised, and said so): 0, or the exit code (printed), also when the file
 * holds other gates' runs and none of gate_id (cg_history_gate_check). */
int cg_cmd_history_load_gate(const char *path, const char *gate_id, long keep,
                             struct cg_history *h);

#endif
