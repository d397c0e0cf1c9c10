/*
 * argsplit: a command line given as one string ('canary-gate ab --base "CMD ARGS..."') split into
 * an argv, without a shell.
 *
 * Words are separated by unquoted spaces, tabs and newlines. Single quotes keep everything up to
 * the next single quote literally. Double quotes keep whitespace and single quotes; inside them a
 * backslash escapes only '"' and '\' (before any other character it is kept). Outside quotes a
 * backslash makes the next character literal. Quoted and unquoted parts next to each other form
 * one word ('--name="a b"' is one word), and "" is an empty word. Nothing else is special: no
 * variables, globs, '~', redirections, pipes or command separators; '$', '*', '|', ';' are plain
 * characters. Pure; thread-safe.
 */
#ifndef CG_ARGSPLIT_H
#define CG_ARGSPLIT_H

#include "err.h"

#include <stddef.h>

#define CG_ARGSPLIT_MAX_BYTES 65536

/* Splits line into *argv (a NULL-terminated array of *argc words; cg_argsplit_free frees it).
 * CG_EINPUT with a message on an unterminated quote, a trailing backslash, no word at all or a
 * line longer than CG_ARGSPLIT_MAX_BYTES; CG_ENOMEM. */
int cg_argsplit(const char *line, char ***argv, size_t *argc, struct cg_err *err);

/* Frees an argv from cg_argsplit (NULL is fine). */
void cg_argsplit_free(char **argv);

#endif
