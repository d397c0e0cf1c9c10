/*
 * stale: the shard directories of gates that are no longer running (stale.h).
 */
#include "stale.h"

#include "fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HOST_MAX 256

/* The start time of pid (field 22 of /proc/PID/stat, clock ticks since boot); 0 when unknown. */
static unsigned long long start_time(long pid)
{
    char path[64], text[1024];
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    const char *p = strrchr(text, ')'); /* the command name may hold spaces and parentheses */
    if (p == NULL)
        return 0;
    /* after ") ": field 3 (state) onwards; the start time is field 22 */
    p++;
    for (int field = 3; field <= 22 && p != NULL; field++) {
        while (*p == ' ')
            p++;
        if (field == 22)
            return strtoull(p, NULL, 10);
        p = strchr(p, ' ');
    }
    return 0;
}

static void host_name(char host[HOST_MAX])
{
    if (gethostname(host, HOST_MAX) != 0)
        host[0] = '\0';
    host[HOST_MAX - 1] = '\0';
    for (char *c = host; *c != '\0'; c++) /* one word in the owner file */
        if (*c <= ' ' || *c > '~')
            *c = '_';
}

int cg_stale_mark(const char *dir, struct cg_err *err)
{
    char path[PATH_MAX], host[HOST_MAX];
    int n = snprintf(path, sizeof(path), "%s/" CG_STALE_OWNER, dir);
    if (n < 0 || (size_t)n >= sizeof(path))
        return cg_err_set(err, CG_EIO, "the path of '%s/" CG_STALE_OWNER "' is too long", dir);
    host_name(host);
    char text[64 + HOST_MAX];
    long pid = (long)getpid();
    int len = snprintf(text, sizeof(text), "pid %ld\nstart %llu\nhost %s\n", pid,
                       start_time(pid), host);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
    if (fd < 0)
        return cg_err_set(err, CG_EIO, "cannot write '%s': %s", path, strerror(errno));
    bool bad = len <= 0 || (size_t)len >= sizeof(text) || write(fd, text, (size_t)len) != len;
    int saved = errno;
    if (close(fd) != 0 || bad)
        return cg_err_set(err, CG_EIO, "cannot write '%s': %s", path,
                          strerror(bad ? saved : errno));
    return 0;
}

/* Whether the owner file of dir names a gate of this host that is gone. */
static bool owner_gone(const char *dir, const char *host)
{
    char path[PATH_MAX], text[512], their_host[HOST_MAX];
    int n = snprintf(path, sizeof(path), "%s/" CG_STALE_OWNER, dir);
    if (n < 0 || (size_t)n >= sizeof(path))
        return false;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return false;
    struct stat st;
    ssize_t got = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, text, sizeof(text) - 1)
                                                             : -1;
    close(fd);
    if (got <= 0)
        return false;
    text[got] = '\0';
    /* "pid P\nstart S\nhost H\n", as cg_stale_mark writes it */
    char *p = text, *end;
    if (strncmp(p, "pid ", 4) != 0)
        return false;
    long pid = strtol(p + 4, &end, 10);
    if (end == p + 4 || strncmp(end, "\nstart ", 7) != 0 || pid <= 0)
        return false;
    p = end + 7;
    unsigned long long start = strtoull(p, &end, 10);
    if (end == p || strncmp(end, "\nhost ", 6) != 0)
        return false;
    p = end + 6;
    size_t len = strcspn(p, "\n");
    if (len == 0 || len >= sizeof(their_host))
        return false;
    memcpy(their_host, p, len);
    their_host[len] = '\0';
    if (strcmp(their_host, host) != 0)
        return false; /* another host's: its pids are not ours to look at */
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
        return true;
    unsigned long long now = start_time(pid);
    return now != 0 && start != 0 && now != start; /* the pid was reused */
}

size_t cg_stale_clean_named(const char *root, const char *prefix, cg_stale_remove_fn remove,
                            void *ctx, char *first, size_t cap)
{
    if (first != NULL && cap > 0)
        first[0] = '\0';
    DIR *d = opendir(root);
    if (d == NULL)
        return 0;
    char host[HOST_MAX], path[PATH_MAX];
    host_name(host);
    size_t removed = 0, len = strlen(prefix);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, len) != 0 || strlen(e->d_name) != len + 6)
            continue;
        int k = snprintf(path, sizeof(path), "%s/%s", root, e->d_name);
        if (k <= 0 || (size_t)k >= sizeof(path))
            continue;
        struct stat st;
        if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
            !owner_gone(path, host))
            continue;
        remove(path, ctx);
        if (access(path, F_OK) != 0 && errno == ENOENT) {
            if (removed++ == 0 && first != NULL && cap > 0)
                snprintf(first, cap, "%s", path);
        }
    }
    closedir(d);
    return removed;
}

static void remove_shards(const char *dir, void *ctx)
{
    (void)ctx;
    cg_remove_tree(dir, 2);
}

size_t cg_stale_clean(const char *root, char *first, size_t cap)
{
    return cg_stale_clean_named(root, CG_STALE_PREFIX, remove_shards, NULL, first, cap);
}
