/* outputs: inputs and outputs checked before any canary time is spent (see outputs.h). */
#include "outputs.h"

#include "fsutil.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Where a path leads: an existing file's device and inode, or for a path that does not exist
 * its directory's device and inode and the name it would get there. */
struct place {
    bool exists, special; /* special: an existing file that is not a regular one */
    bool dir_exists;      /* for a path that does not exist: its directory does */
    dev_t dev;
    ino_t ino;
    char name[NAME_MAX + 1];
    int err; /* errno of a failed look-up, 0 */
};

void cg_outputs_init(struct cg_outputs *o)
{
    o->entry = NULL;
    o->n = o->cap = 0;
    o->no_memory = false;
    o->to_stdout[0] = o->to_stdout[1] = NULL;
}

void cg_outputs_release(struct cg_outputs *o)
{
    for (size_t i = 0; i < o->n; i++)
        free(o->entry[i].path);
    free(o->entry);
    cg_outputs_init(o);
}

void cg_outputs_add(struct cg_outputs *o, enum cg_path_use use, const char *what, const char *path)
{
    if (path != NULL && strcmp(path, "-") == 0 && use != CG_PATH_INPUT) {
        if (o->to_stdout[0] == NULL)
            o->to_stdout[0] = what;
        else if (o->to_stdout[1] == NULL)
            o->to_stdout[1] = what;
    }
    if (path == NULL || strcmp(path, "-") == 0)
        return;
    if (o->n == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 16;
        struct cg_path_entry *p = realloc(o->entry, cap * sizeof(*p));
        if (p == NULL) {
            o->no_memory = true;
            return;
        }
        o->entry = p;
        o->cap = cap;
    }
    char *copy = strdup(path);
    if (copy == NULL) {
        o->no_memory = true;
        return;
    }
    struct cg_path_entry *e = &o->entry[o->n++];
    e->what = what;
    e->path = copy; /* freed by cg_outputs_release */
    e->use = use;
}

/* Splits path into its directory (dir[n]) and last name; false when the name is empty, "." or
 * "..", or the directory does not fit. */
static bool split(const char *path, char *dir, size_t n, const char **name)
{
    const char *slash = strrchr(path, '/');
    int k;
    if (slash == NULL) {
        k = snprintf(dir, n, ".");
        *name = path;
    } else {
        k = snprintf(dir, n, "%.*s", slash == path ? 1 : (int)(slash - path), path);
        *name = slash + 1;
    }
    return k >= 0 && (size_t)k < n && **name != '\0' && strcmp(*name, ".") != 0 &&
           strcmp(*name, "..") != 0;
}

static void locate(const char *path, struct place *p)
{
    struct stat st;
    char dir[PATH_MAX];
    const char *name;
    memset(p, 0, sizeof(*p));
    if (stat(path, &st) == 0) {
        p->exists = true;
        p->special = !S_ISREG(st.st_mode);
        p->dev = st.st_dev;
        p->ino = st.st_ino;
        return;
    }
    p->err = errno;
    if (!split(path, dir, sizeof(dir), &name) || strlen(name) > NAME_MAX)
        return;
    if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) {
        p->dir_exists = true;
        p->dev = st.st_dev;
        p->ino = st.st_ino;
        snprintf(p->name, sizeof(p->name), "%s", name);
    }
}

static bool same_place(const struct place *a, const struct place *b)
{
    if (a->exists != b->exists || (!a->exists && (!a->dir_exists || !b->dir_exists)))
        return false;
    return a->dev == b->dev && a->ino == b->ino && (a->exists || strcmp(a->name, b->name) == 0);
}

/* Whether an output can be written, before anything is run. */
static int writable(const struct cg_path_entry *e, const struct place *p, struct cg_err *err)
{
    char dir[PATH_MAX], tmp[PATH_MAX];
    const char *name;
    struct stat st;
    if (p->exists && p->special) {
        if (stat(e->path, &st) == 0 && S_ISDIR(st.st_mode))
            return cg_err_set(err, CG_EIO, "cannot write %s '%s': is a directory", e->what,
                              e->path);
        /* a device or FIFO is written in place */
        if (access(e->path, W_OK) != 0)
            return cg_err_set(err, CG_EIO, "cannot write %s '%s': %s", e->what, e->path,
                              strerror(errno));
        return 0;
    }
    if (!p->exists && p->err != ENOENT)
        return cg_err_set(err, CG_EIO, "cannot write %s '%s': %s", e->what, e->path,
                          strerror(p->err));
    if (!p->exists && !p->dir_exists) {
        if (!split(e->path, dir, sizeof(dir), &name))
            return cg_err_set(err, CG_EIO, "cannot write %s '%s': not a file name", e->what,
                              e->path);
        return cg_err_set(err, CG_EIO, "cannot write %s '%s': no directory '%s'", e->what, e->path,
                          dir);
    }
    if (e->use == CG_PATH_IN_PLACE && p->exists && access(e->path, W_OK) != 0)
        return cg_err_set(err, CG_EIO, "cannot write %s '%s': %s", e->what, e->path,
                          strerror(errno));
    /* A new file must be creatable beside it: the temporary of an atomic write, or the file
     * itself. Creating one is the only test that tells the truth (permissions, ACLs, a
     * read-only mount, no free inode). */
    const char *why = NULL;
    char target[PATH_MAX]; /* a symlink's target is what a write replaces (fsutil.h) */
    int fd = cg_file_try_temp(cg_file_target(e->path, target), tmp, sizeof(tmp), &why);
    if (fd < 0)
        return cg_err_set(err, CG_EIO, "cannot write %s '%s': %s", e->what, e->path, why);
    close(fd);
    unlink(tmp);
    return 0;
}

int cg_outputs_check(const struct cg_outputs *o, struct cg_err *err)
{
    int rc = 0;
    struct place *at = o->n > 0 ? calloc(o->n, sizeof(*at)) : NULL;
    if (o->no_memory || (o->n > 0 && at == NULL)) {
        free(at);
        return cg_err_set(err, CG_ENOMEM, "out of memory");
    }
    if (o->to_stdout[1] != NULL) {
        free(at);
        return cg_err_set(err, CG_EUSAGE,
                          "%s '-' and %s '-' both write to standard output: give one of them a "
                          "file",
                          o->to_stdout[1], o->to_stdout[0]);
    }
    for (size_t i = 0; i < o->n; i++)
        locate(o->entry[i].path, &at[i]);
    /* Same files first: naming both options is the clearer message. */
    for (size_t j = 1; j < o->n; j++) {
        for (size_t i = 0; i < j; i++) {
            const struct cg_path_entry *a = &o->entry[i], *b = &o->entry[j];
            bool a_out = a->use != CG_PATH_INPUT, b_out = b->use != CG_PATH_INPUT;
            if (!a_out && !b_out)
                continue; /* reading a file twice harms nothing */
            if (a_out && b_out && (at[i].special || at[j].special))
                continue; /* /dev/null or /dev/stdout named twice */
            if (!same_place(&at[i], &at[j]))
                continue;
            const struct cg_path_entry *in = a_out && !b_out ? b : a, *out = in == a ? b : a;
            rc =
                cg_err_set(err, CG_EUSAGE, "%s '%s' and %s '%s' are the same file: %s", out->what,
                           out->path, in->what, in->path,
                           in->use == CG_PATH_INPUT ? "an output may not overwrite an input"
                                                    : "two outputs may not be written to one file");
            goto done;
        }
    }
    for (size_t i = 0; i < o->n && rc == 0; i++) {
        if (o->entry[i].use != CG_PATH_INPUT)
            rc = writable(&o->entry[i], &at[i], err);
    }
done:
    free(at);
    return rc;
}
