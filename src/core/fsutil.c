/* fsutil: bounded file reads and atomic file writes (see fsutil.h). */
#include "fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const char *cg_file_type_name(unsigned mode)
{
    switch (mode & S_IFMT) {
    case S_IFREG: return "a regular file";
    case S_IFDIR: return "a directory";
    case S_IFIFO: return "a FIFO";
    case S_IFSOCK: return "a socket";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFLNK: return "a symbolic link";
    default: return "a special file";
    }
}

int cg_file_read(const char *path, size_t max_bytes, char **out, size_t *out_len,
                 struct cg_err *err)
{
    int rc = 0;
    char *data = NULL;
    /* O_NONBLOCK: opening a FIFO without a writer would otherwise wait for one. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
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
    if (!S_ISREG(st.st_mode)) {
        rc = cg_err_set(err, CG_EINPUT, "cannot read '%s': not a regular file (%s)", path,
                        cg_file_type_name(st.st_mode));
        goto done;
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        rc = cg_err_set(err, CG_EIO, "cannot read '%s': %s", path, strerror(errno));
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

/* 64 random bits: getrandom, else the clock, the pid and a counter (names need only differ). */
static uint64_t random_bits(void)
{
    static uint64_t counter;
    uint64_t v = 0;
    if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == (ssize_t)sizeof(v))
        return v;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    v = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^ ((uint64_t)getpid() << 32);
    v ^= ++counter * 0x9E3779B97F4A7C15ull;
    return v;
}

int cg_file_try_temp(const char *path, char *tmp, size_t n, const char **why)
{
    /* ".<name>.<16 hex>.tmp" in the target's directory: a hidden name nobody can predict, opened
     * with O_EXCL (an existing file or symlink there is an error, never followed or reused) and
     * O_NOFOLLOW; on a clash another name is drawn. */
    const char *slash = strrchr(path, '/');
    int dir_len = slash != NULL ? (int)(slash - path + 1) : 0;
    const char *base = slash != NULL ? slash + 1 : path;
    for (int attempt = 0; attempt < 100; attempt++) {
        int k = snprintf(tmp, n, "%.*s.%s.%016llx.tmp", dir_len, path, base,
                         (unsigned long long)random_bits());
        if (k < 0 || (size_t)k >= n) {
            *why = "path too long";
            return -1;
        }
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0)
            return fd;
        if (errno != EEXIST) {
            *why = strerror(errno);
            return -1;
        }
    }
    *why = "no free temporary name";
    return -1;
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

const char *cg_file_target(const char *path, char *buf)
{
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISLNK(st.st_mode) || realpath(path, buf) == NULL)
        return path;
    return buf;
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
    char tmp[PATH_MAX], target_buf[PATH_MAX];
    const char *named = path; /* errors name what the user gave */
    path = cg_file_target(path, target_buf);
    const char *why = NULL;
    int fd = cg_file_try_temp(path, tmp, sizeof(tmp), &why);
    if (fd < 0)
        return cg_err_set(err, CG_EIO, "cannot write '%s': %s", named, why);
    struct stat old;
    if (stat(path, &old) == 0 && S_ISREG(old.st_mode)) /* the file replaced keeps its mode */
        (void)fchmod(fd, old.st_mode & 07777);
    if (write_all(fd, data, len) != 0 || fsync(fd) != 0) {
        rc = cg_err_set(err, CG_EIO, "cannot write '%s': %s", named, strerror(errno));
        close(fd);
        unlink(tmp);
        return rc;
    }
    if (close(fd) != 0) {
        rc = cg_err_set(err, CG_EIO, "cannot write '%s': %s", named, strerror(errno));
        unlink(tmp);
        return rc;
    }
    if (rename(tmp, path) != 0) {
        rc = cg_err_set(err, CG_EIO, "cannot write '%s': %s", named, strerror(errno));
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

void cg_remove_tree(const char *dir, int depth)
{
    DIR *d = opendir(dir);
    if (d != NULL) {
        struct dirent *e;
        char path[PATH_MAX];
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            int k = snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
            if (k <= 0 || (size_t)k >= sizeof(path))
                continue;
            struct stat st;
            if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
                if (depth > 0)
                    cg_remove_tree(path, depth - 1);
            } else {
                unlink(path);
            }
        }
        closedir(d);
    }
    rmdir(dir);
}

const char *cg_tmp_dir(char *buf)
{
    const char *tmp = getenv("TMPDIR");
    if (tmp == NULL || tmp[0] == '\0')
        return "/tmp";
    if (tmp[0] != '/' && realpath(tmp, buf) != NULL)
        return buf;
    return tmp;
}
