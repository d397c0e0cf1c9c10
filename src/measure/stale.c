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
#include <time.h>
#include <unistd.h>

#define HOST_MAX 256
#define BOOT_MAX 64

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

/* Whose pids a gate can look at: its PID namespace (the inode of /proc/self/ns/pid) and this
 * machine's boot (/proc/sys/kernel/random/boot_id, one per kernel: a container shares it). A
 * pid means the same process only where both are equal. 0 and "" when unknown. */
struct pid_scope {
    unsigned long long pidns;
    char boot[BOOT_MAX];
};

static void my_scope(struct pid_scope *sc)
{
    struct stat st;
    sc->pidns = stat("/proc/self/ns/pid", &st) == 0 ? (unsigned long long)st.st_ino : 0;
    sc->boot[0] = '\0';
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY);
    if (fd < 0)
        return;
    ssize_t n = read(fd, sc->boot, sizeof(sc->boot) - 1);
    close(fd);
    sc->boot[n > 0 ? n : 0] = '\0';
    sc->boot[strcspn(sc->boot, " \t\r\n")] = '\0';
}

int cg_stale_mark(const char *dir, struct cg_err *err)
{
    char path[PATH_MAX], host[HOST_MAX];
    int n = snprintf(path, sizeof(path), "%s/" CG_STALE_OWNER, dir);
    if (n < 0 || (size_t)n >= sizeof(path))
        return cg_err_set(err, CG_EIO, "the path of '%s/" CG_STALE_OWNER "' is too long", dir);
    host_name(host);
    struct pid_scope sc;
    my_scope(&sc);
    char text[128 + HOST_MAX + BOOT_MAX];
    long pid = (long)getpid();
    int len = snprintf(text, sizeof(text), "pid %ld\nstart %llu\nhost %s\npidns %llu\nboot %s\n",
                       pid, start_time(pid), host, sc.pidns, sc.boot[0] != '\0' ? sc.boot : "-");
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

/* An owner record: "pid P\nstart S\nhost H\n", as every version writes it, then "pidns N\nboot
 * B\n" (from the version that recorded them; absent: pidns 0, boot ""). */
struct owner {
    long pid;
    unsigned long long start;
    char host[HOST_MAX];
    struct pid_scope scope;
};

/* Copies the word at p (up to a newline) into dst; false when empty or too long. */
static bool take_word(const char *p, char *dst, size_t cap)
{
    size_t len = strcspn(p, "\n");
    if (len == 0 || len >= cap)
        return false;
    memcpy(dst, p, len);
    dst[len] = '\0';
    return true;
}

/* Reads dir's owner file; false when there is none or it is not one. */
static bool read_owner(const char *dir, struct owner *o)
{
    char path[PATH_MAX], text[1024];
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
    memset(o, 0, sizeof(*o));
    char *p = text, *end;
    if (strncmp(p, "pid ", 4) != 0)
        return false;
    o->pid = strtol(p + 4, &end, 10);
    if (end == p + 4 || strncmp(end, "\nstart ", 7) != 0 || o->pid <= 0)
        return false;
    p = end + 7;
    o->start = strtoull(p, &end, 10);
    if (end == p || strncmp(end, "\nhost ", 6) != 0 || !take_word(end + 6, o->host, HOST_MAX))
        return false;
    p = strchr(end + 6, '\n');
    if (p != NULL && strncmp(p, "\npidns ", 7) == 0) {
        o->scope.pidns = strtoull(p + 7, &end, 10);
        if (end == p + 7 || strncmp(end, "\nboot ", 6) != 0 ||
            !take_word(end + 6, o->scope.boot, BOOT_MAX) || strcmp(o->scope.boot, "-") == 0)
            o->scope.boot[0] = '\0';
    }
    return true;
}

/* The latest modification time of path and, for a directory, of what it holds down to depth
 * levels; stops early once past `after` (then anything later than it). */
static time_t last_change(const char *path, int depth, time_t after)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return after + 1; /* changing under us: as good as recent */
    time_t t = st.st_mtime;
    if (t > after || depth == 0 || !S_ISDIR(st.st_mode))
        return t;
    DIR *d = opendir(path);
    if (d == NULL)
        return t;
    char sub[PATH_MAX];
    struct dirent *e;
    while (t <= after && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        int k = snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
        time_t u =
            k > 0 && (size_t)k < sizeof(sub) ? last_change(sub, depth - 1, after) : after + 1;
        if (u > t)
            t = u;
    }
    closedir(d);
    return t;
}

/* When this machine booted (btime of /proc/stat), 0 when unknown. */
static time_t boot_time(void)
{
    FILE *f = fopen("/proc/stat", "r");
    if (f == NULL)
        return 0;
    char line[256];
    long long t = 0;
    while (t == 0 && fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "btime ", 6) != 0)
            continue;
        char *end = NULL;
        errno = 0;
        long long v = strtoll(line + 6, &end, 10);
        if (errno == 0 && end != line + 6 && (*end == '\n' || *end == '\0') && v > 0)
            t = v;
    }
    fclose(f);
    return t > 0 ? (time_t)t : 0;
}

/* Whether the owner of dir is a gate that is gone. Its pid is looked at when it is a pid of this
 * PID namespace and boot, whatever host name the owner ran under (a container with its own UTS
 * name in the host's PID namespace). An owner this gate cannot look at (another PID namespace:
 * a container; another boot: another machine sharing the root, or this one before it rebooted;
 * a record that does not say, from an older version) is gone only once nothing in dir has
 * changed for CG_STALE_UNSEEN_AGE_S, longer than a run may take, or, for an owner of this host
 * name, since this machine booted (its gate died with the machine; another machine's boot says
 * nothing of it). */
static bool owner_gone(const char *dir, const char *host, const struct pid_scope *mine)
{
    struct owner o;
    if (!read_owner(dir, &o))
        return false;
    bool seen = mine->pidns != 0 && mine->boot[0] != '\0' && o.scope.pidns == mine->pidns &&
                strcmp(o.scope.boot, mine->boot) == 0;
    if (!seen) {
        time_t now = time(NULL), booted = boot_time();
        time_t cut = now - CG_STALE_UNSEEN_AGE_S;
        if (strcmp(o.host, host) == 0 && booted > cut && strcmp(o.scope.boot, mine->boot) != 0)
            cut = booted; /* this host's, not this boot's (or unknown): older than the boot */
        return last_change(dir, 2, cut) < cut;
    }
    if (kill((pid_t)o.pid, 0) != 0 && errno == ESRCH)
        return true;
    unsigned long long now = start_time(o.pid);
    return now != 0 && o.start != 0 && now != o.start; /* the pid was reused */
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
    struct pid_scope mine;
    host_name(host);
    my_scope(&mine);
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
            !owner_gone(path, host, &mine))
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
