/*
 * worktree: the git side of 'canary-gate bisect': the commits of a range, a commit's subject,
 * author and date, and a detached worktree of its own for each probed commit, so the user's
 * working tree is never touched.
 *
 * Every git call runs as 'git -C REPO ...' in a process group of its own (a Ctrl-C at the
 * terminal reaches the tool, which cleans up, not a git that is half way through), with its
 * standard input from /dev/null, at most CG_GIT_TIMEOUT_S seconds and CG_GIT_MAX_OUTPUT bytes of
 * output. Nothing here prints. Single-threaded.
 */
#ifndef CG_WORKTREE_H
#define CG_WORKTREE_H

#include "err.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#define CG_GIT_TIMEOUT_S 120
#define CG_GIT_MAX_OUTPUT (16u << 20)
/* Commits in a bisected range at most. */
#define CG_GIT_MAX_COMMITS 100000

/* Hex digits of a commit's full name at most: 64 in a SHA-256 repository, 40 in a SHA-1 one. */
#define CG_GIT_SHA_MAX 64

struct cg_git_commit {
    char sha[CG_GIT_SHA_MAX + 1];  /* 40 or 64 hex digits, as the repository names objects */
    char *subject, *author, *date; /* malloc'ed; date in ISO 8601 (the author's) */
};

/* The commits from good to bad along bad's first parents, good first and bad last, into *out
 * (malloc'ed array of *n; cg_git_commits_free). CG_EINPUT: a name that is no commit, good not an
 * ancestor of bad on its first-parent line, or the same commit; CG_EIO: git failed. */
int cg_git_range(const char *repo, const char *good, const char *bad, struct cg_git_commit **out,
                 size_t *n, struct cg_err *err);

/* Fills subject, author and date of c (its sha set). CG_EIO, CG_ENOMEM. */
int cg_git_describe(const char *repo, struct cg_git_commit *c, struct cg_err *err);

void cg_git_commits_free(struct cg_git_commit *c, size_t n);

/* The top of the working tree that holds dir (malloc'ed, caller frees). CG_EINPUT when dir is in
 * no git repository. */
int cg_git_toplevel(const char *dir, char **top, struct cg_err *err);

/* An absolute path that an argument names inside a working tree. */
struct cg_worktree_path {
    char path[PATH_MAX]; /* as written */
    char rel[PATH_MAX];  /* from the working tree's top, symbolic links resolved; "" the top */
};

/* The absolute paths that text names inside the working tree top (its resolved path, as
 * cg_git_toplevel gives it), symbolic links resolved, passing over those that begin with skip
 * (NULL: none): text is one argument, or with shell true a /bin/sh command line (its words as sh
 * reads them: split at blanks and operators, single and double quotes and backslash escapes
 * removed, nothing expanded); in a word, a path may also follow '=' (--data=/x), ':' (a search
 * path) or, in a word that begins with '-', the option's letters (-I/x/inc). One argument's paths are taken as written when each names what exists; otherwise its
 * words as a command line's are read too (the string of 'sh -c "exec /x/train.sh"'). At most
 * max into out; returns how many. Reads only the file system's names. */
size_t cg_worktree_paths_in(const char *top, const char *skip, const char *text, bool shell,
                            struct cg_worktree_path *out, size_t max);

/* Whether commit sha of repo holds rel (a file or a directory, "" its root); false when git
 * cannot say. */
bool cg_git_has_path(const char *repo, const char *sha, const char *rel);

/* Checks out sha detached in a new worktree at path (which must not exist). CG_EIO. */
int cg_worktree_add(const char *repo, const char *sha, const char *path, struct cg_err *err);

/* Removes the worktree at path, whatever it holds, and prunes git's record of it; the directory
 * is gone afterwards even when git could not remove it. 0 or CG_EIO. */
int cg_worktree_remove(const char *repo, const char *path, struct cg_err *err);

#endif
