/*
 * say: how a module that does work tells its user what is going on without printing. The module
 * is handed a struct cg_say (a function and its context) and calls cg_say with a kind and the
 * text; the command layer's function prints it (cmd_util.c: "canary-gate: " and the kind's word
 * before the text, on stderr). Nothing outside the command layer prints.
 */
#ifndef CG_SAY_H
#define CG_SAY_H

#include <stdbool.h>

enum cg_say_kind {
    CG_SAY_INFO,         /* a line of what happened */
    CG_SAY_WARNING,      /* something the user should look at; the run goes on */
    CG_SAY_NOTE,         /* something the user may want to know */
    CG_SAY_PROGRESS,     /* a progress line: on a live terminal it replaces the one before */
    CG_SAY_PROGRESS_END, /* the progress lines are over (text ""): a live terminal clears them */
};

struct cg_say {
    void (*fn)(const struct cg_say *s, enum cg_say_kind kind, const char *text);
    void *ctx;
    bool live; /* progress may replace itself in place (a terminal): fewer lines are said */
};

/* Formats the text (printf-style, no newline) and hands it to s->fn; nothing when s or s->fn is
 * NULL, or when the text cannot be formatted (out of memory). */
void cg_say(const struct cg_say *s, enum cg_say_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
