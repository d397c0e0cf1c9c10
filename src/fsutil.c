/* fsutil: bounded file reads and atomic file writes (see fsutil.h). */
#include "fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int cg_file_read(const char *path, size_t max_bytes, char **out, size_t *out_len,
                 struct cg_err *err)
{
    int rc = 0;
    char *data = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        rc = cg_err_set(err, errno == ENOENT ? CG_EINPUT : CG_EIO, "cannot read '%s': %s", path,
                        strerror(errno));
        goto done;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        rc = cg_err_set(err, CG_EIO, "cannot read '%s': %s", path, strerror(errno));
        goto done;
    }
    if (S_ISDIR(st.st_mode)) {
        rc = cg_err_set(err, CG_EINPUT, "cannot read '%s': is a directory", path);
        goto done;
    }
    size_t cap = 4096, len = 0;
    data = malloc(cap + 1);
    if (data == NULL) {
        rc = cg_err_set(err, CG_ENOMEM, "cannot read '%s': out of memory", path);
        goto done;
    }
    for (;;) {
        if (len == cap) {
            if (cap >= max_bytes) {
                rc = cg_err_set(err, CG_EINPUT, "cannot read '%s': larger than %zu bytes", path,
                                max_bytes);
                goto done;
            }
            size_t ncap = cap * 2 > max_bytes ? max_bytes : cap * 2;
            char *p = realloc(data, ncap + 1);
            if (p == NULL) {
                rc = cg_err_set(err, CG_ENOMEM, "cannot read '%s': out of memory", path);
                goto done;
            }
            data = p;
            cap = ncap;
        }
        ssize_t n = read(fd, data + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = cg_err_set(err, CG_EIO, "cannot read '%s': %s", path, strerror(errno));
            goto done;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    if (len == 0) {
        rc = cg_err_set(err, CG_EINPUT, "cannot read '%s': the file is empty", path);
        goto done;
    }
    data[len] = '\0';
    *out = data;
    data = NULL;
    if (out_len != NULL)
        *out_len = len;
done:
    if (fd >= 0)
        close(fd);
    free(data);
    return rc;
}

static int write_all(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int cg_file_write_atomic(const char *path, const void *data, size_t len, struct cg_err *err)
{
    if (strcmp(path, "-") == 0) {
        if (fwrite(data, 1, len, stdout) != len || fflush(stdout) != 0)
            return cg_err_set(err, CG_EIO, "cannot write to standard output: %s", strerror(errno));
        return 0;
    }
    int rc = 0;
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        /* A device, pipe or other special file (/dev/stdout, a FIFO) is written in place: it
         * cannot be replaced by rename, and must never be replaced by a regular file. */
        int sfd = open(path, O_WRONLY | O_CLOEXEC);
        if (sfd < 0)
            return cg_err_set(err, CG_EIO, "cannot write '%s': %s", path, strerror(errno));
        if (write_all(sfd, data, len) != 0) {
            rc = cg_err_set(err, CG_EIO, "cannot write '%s': %s", path, strerror(errno));
            close(sfd);
            return rc;
        }
        return close(sfd) == 0 ? 0 : cg_err_set(err, CG_EIO, "cannot write '%s': %s", path, strerror(errno));
    }
    char tmp[PATH_MAX];
    int n = snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof(tmp))
        return cg_err_set(err, CG_EIO, "cannot write '%s': path too long", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return cg_err_set(err, CG_EIO, "cannot write '%s': %s", path, strerror(errno));
    if (write_all(fd, data, len) != 0 || fsync(fd) != 0) {
        rc = cg_err_set(err, CG_EIO, "cannot write '%s': %s", path, strerror(errno));
        close(fd);
        unlink(tmp);
        return rc;
    }
    if (close(fd) != 0) {
        rc = cg_err_set(err, CG_EIO, "cannot write '%s': %s", path, strerror(errno));
        unlink(tmp);
        return rc;
    }
    if (rename(tmp, path) != 0) {
        rc = cg_err_set(err, CG_EIO, "cannot write '%s': %s", path, strerror(errno));
        unlink(tmp);
        return rc;
    }
    return 0;
}

char *cg_self_dir(void)
{
    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
    if (n <= 0)
        return NULL;
    path[n] = '\0';
    char *slash = strrchr(path, '/');
    if (slash == NULL)
        return NULL;
    *slash = '\0';
    return strdup(path[0] ? path : "/");
}
