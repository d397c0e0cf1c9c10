/*
 * outputs: the files a command will read and write, checked before any canary time is spent.
 *
 * A command lists its inputs (baseline, thresholds, artifacts to compare or merge) and its
 * outputs (artifacts, logs, reports, verdicts, traces, the partial artifact an interrupted run
 * leaves) with the option that names each, then checks them once, before it runs anything:
 *   - no output is the same file as an input or as another output. Files are compared by device
 *     and inode, so "./a.json", "dir/../a.json", a symlink or a hard link to a.json are a.json;
 *     a path that does not exist yet is its directory's device and inode plus its name. Devices
 *     and FIFOs written in place (/dev/null, /dev/stdout) may be named by several outputs;
 *   - every output can be written: its directory exists and takes a new file (a probe file is
 *     created and removed; an atomic write needs that, whatever the old file's permissions),
 *     and an output written in place (the canary's log, a device) is writable itself.
 * "-" (standard output) is never checked as a file, but two outputs may not both name it (their
 * documents would be mixed in one stream). Paths are copied (a thresholds file's extends chain
 * is added from a load that is gone by the check); cg_outputs_release frees them. Single-threaded.
 */
#ifndef CG_OUTPUTS_H
#define CG_OUTPUTS_H

#include "err.h"

#include <stdbool.h>
#include <stddef.h>

enum cg_path_use {
    CG_PATH_INPUT,   /* read */
    CG_PATH_OUTPUT,  /* replaced atomically (temporary file beside it, then rename) */
    CG_PATH_IN_PLACE /* opened and truncated or appended to in place (the canary's log) */
};

struct cg_path_entry {
    const char *what; /* the option that names it, for messages ("--log", "--out (default)") */
    char *path;       /* a copy, owned */
    enum cg_path_use use;
};

struct cg_outputs {
    struct cg_path_entry *entry;
    size_t n, cap;
    bool no_memory; /* an add failed: cg_outputs_check reports it */
    const char *to_stdout[2]; /* the first two outputs named "-" (what names them), or NULL */
};

/* An empty list. Allocates nothing. */
void cg_outputs_init(struct cg_outputs *o);

/* Frees the list (not the paths); it is empty afterwards. */
void cg_outputs_release(struct cg_outputs *o);

/* Adds a path; NULL and "-" are ignored. Out of memory is remembered and reported by
 * cg_outputs_check, so callers need not check each add. */
void cg_outputs_add(struct cg_outputs *o, enum cg_path_use use, const char *what, const char *path);

/* Checks the list: CG_EUSAGE (exit 2) naming both options and paths when an output is the same
 * file as an input or another output; CG_EIO (exit 3) naming the path when an output cannot be
 * written (no such directory, a directory in its place, no permission, a read-only file
 * system). Inputs that do not exist are left to the code that reads them. CG_ENOMEM when memory
 * ran out. 0 when all is well. */
int cg_outputs_check(const struct cg_outputs *o, struct cg_err *err);

#endif
