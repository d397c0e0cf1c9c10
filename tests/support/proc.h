/*
 * proc: running a program from a test and capturing what it printed.
 *
 * cg_proc_run forks, changes into cwd (when not NULL), redirects stdout and stderr into files of
 * a private temporary directory, execs argv[0] with argv (no shell), waits, and reads both
 * outputs back (cut at their buffers' sizes, NUL-terminated). The exit code is the program's, or
 * 128 + the signal that killed it, or 127 when it could not be executed.
 */
#ifndef CG_TEST_PROC_H
#define CG_TEST_PROC_H

#include <stddef.h>

struct cg_proc {
    int exit_code;
    char out[1 << 16];
    char err[1 << 16];
};

/* Runs argv (NULL-terminated) in cwd with extra "NAME=value" environment entries (env may be
 * NULL) and fills p. Returns 0, or -1 when the program could not be started at all. */
int cg_proc_run(const char *cwd, const char *const *argv, const char *const *env,
                struct cg_proc *p);

#endif
