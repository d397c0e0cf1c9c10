/*
 * workdir: a private temporary directory per test, for tests that run the built tool.
 *
 * cg_workdir_setup / cg_workdir_teardown are cmocka setup and teardown functions: the state is a
 * struct cg_workdir whose directory is made under /tmp and removed with everything in it.
 * cg_workdir_in gives paths inside it (from a small ring of buffers: valid for the next three
 * calls). cg_workdir_run runs a program with its working directory there (see proc.h).
 */
#ifndef CG_TEST_WORKDIR_H
#define CG_TEST_WORKDIR_H

#include "proc.h"

#include <stdbool.h>

struct cg_workdir {
    char path[256];
};

int cg_workdir_setup(void **state);
int cg_workdir_teardown(void **state);

/* "<dir>/<name>". */
const char *cg_workdir_in(const struct cg_workdir *w, const char *name);

/* True when <dir>/<name> exists. */
bool cg_workdir_exists(const struct cg_workdir *w, const char *name);

/* The contents of <dir>/<name>, NUL-terminated, cut at 128 KiB; in a static buffer valid until
 * the next call. Fails the test when the file cannot be read. */
const char *cg_workdir_read(const struct cg_workdir *w, const char *name);

/* Runs program with args (NULL-terminated, without the program) in the directory, with extra
 * environment entries (may be NULL); fills p and returns the exit code. Fails the test when the
 * program cannot be started. */
int cg_workdir_run(const struct cg_workdir *w, const char *program, const char *const *env,
                   const char *const *args, struct cg_proc *p);

#endif
