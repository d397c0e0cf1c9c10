/*
 * history_internal: what history.c shares with the files that read a history file
 * (history_load.c) and change and write one (history_write.c). Not for callers of the history:
 * they use history.h.
 */
#ifndef CG_HISTORY_INTERNAL_H
#define CG_HISTORY_INTERNAL_H

#include "history.h"

/* Counts line `line` of file name as not read (the first one's number and why kept in h) and
 * warns "name:line: fate: why", up to CG_HISTORY_MAX_WARNINGS warnings. */
void cg_history_warn_line(struct cg_history *h, const char *name, size_t line, const char *why,
                          const char *fate);

/* Adds a copy of the struct *e (its strings now h's) at the end of h. 0 or CG_ENOMEM. */
int cg_history_push(struct cg_history *h, const struct cg_history_entry *e);

/* One line of the file into h: an entry, or (unreadable) a warning and, with keep, the line
 * itself. Blank lines are nothing. 0 or CG_ENOMEM. */
int cg_history_take_line(struct cg_history *h, const char *text, size_t len, size_t line,
                         const char *name, bool keep);

#endif
