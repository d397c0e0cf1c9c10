/*
 * runinfo: the code a run measured and where it ran, for information (see runinfo.h). Files are
 * read whole in 64 KiB blocks; /proc and /sys lines are bounded. Never prints.
 */
#include "runinfo.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define GIT_TIMEOUT_MS 5000

static void fnv_bytes(uint64_t *h, const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        *h ^= b[i];
        *h *= 1099511628211ull;
    }
}

char *cg_runinfo_file_hash(const char *path)
{
    struct stat st;
    unsigned char buf[65536];
    uint64_t h = 1469598103934665603ull;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return NULL;
    /* fstat on what was opened: a FIFO or device is never read */
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        (long long)st.st_size > CG_RUNINFO_MAX_FILE_BYTES) {
        close(fd);
        return NULL;
    }
    ssize_t n;
    long long total = 0;
    while ((n = read(fd, buf, sizeof(buf))) > 0 && total <= CG_RUNINFO_MAX_FILE_BYTES) {
        fnv_bytes(&h, buf, (size_t)n);
        total += n;
    }
    close(fd);
    if (n < 0 || total > CG_RUNINFO_MAX_FILE_BYTES)
        return NULL;
    char *out = malloc(8 + 16 + 1);
    if (out != NULL)
        snprintf(out, 8 + 16 + 1, "fnv1a64:%016llx", (unsigned long long)h);
    return out;
}

/* argv[0] as execvp would find it; writes into out (cap bytes). */
static bool resolve_exe(const char *name, char *out, size_t cap)
{
    if (strchr(name, '/') != NULL) {
        int n = snprintf(out, cap, "%s", name);
        return n > 0 && (size_t)n < cap;
    }
    const char *path = getenv("PATH");
    if (path == NULL)
        return false;
    for (const char *p = path; *p;) {
        size_t len = strcspn(p, ":");
        int n = snprintf(out, cap, "%.*s/%s", (int)len, p, name);
        if (n > 0 && (size_t)n < cap && access(out, X_OK) == 0)
            return true;
        p += len;
        if (*p == ':')
            p++;
    }
    return false;
}

int cg_runinfo_code(char *const *argv, char *const *shown, struct cg_run_code *code)
{
    char exe[PATH_MAX];
    for (size_t i = 0; argv[i] != NULL; i++) {
        const char *path = argv[i];
        if (i == 0) {
            if (!resolve_exe(argv[0], exe, sizeof(exe)))
                continue;
            path = exe;
        }
        char *hash = cg_runinfo_file_hash(path);
        if (hash == NULL)
            continue; /* not a file (an option, a word), or one that cannot be read */
        int rc = cg_run_code_add_file(code, shown[i], hash);
        free(hash);
        if (rc != 0)
            return rc;
    }
    code->git_commit = cg_runinfo_git_commit(".");
    return 0;
}

/* The child of cg_runinfo_git_commit: git rev-parse in dir, its stdout the pipe. */
static void git_child(const char *dir, int out_fd)
{
    int null_fd = open("/dev/null", O_RDWR);
    if (null_fd < 0 || dup2(out_fd, 1) < 0 || dup2(null_fd, 0) < 0 || dup2(null_fd, 2) < 0)
        _exit(127);
    setenv("GIT_OPTIONAL_LOCKS", "0", 1);
    execlp("git", "git", "-C", dir, "rev-parse", "--verify", "--quiet", "HEAD", (char *)NULL);
    _exit(127);
}

char *cg_runinfo_git_commit(const char *dir)
{
    int fds[2];
    char buf[128];
    size_t len = 0;
    if (pipe(fds) != 0)
        return NULL;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return NULL;
    }
    if (pid == 0) {
        close(fds[0]);
        git_child(dir, fds[1]);
    }
    close(fds[1]);
    bool timed_out = false;
    for (;;) {
        struct pollfd pfd = {fds[0], POLLIN, 0};
        int r = poll(&pfd, 1, GIT_TIMEOUT_MS);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            timed_out = true;
            break;
        }
        ssize_t n = read(fds[0], buf + len, sizeof(buf) - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
        if (len == sizeof(buf) - 1)
            break;
    }
    close(fds[0]);
    if (timed_out)
        kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (timed_out || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return NULL;
    buf[len] = '\0';
    size_t hex = strspn(buf, "0123456789abcdef");
    if ((hex != 40 && hex != 64) || (buf[hex] != '\n' && buf[hex] != '\0'))
        return NULL; /* a SHA-1 or SHA-256 object name, nothing else */
    buf[hex] = '\0';
    return strdup(buf);
}

/* The NUMA node of CPU cpu: the nodeM entry of its /sys directory, -1 when none. */
static int64_t cpu_node(int64_t cpu)
{
    char path[96];
    snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%lld", (long long)cpu);
    DIR *d = opendir(path);
    if (d == NULL)
        return -1;
    int64_t node = -1;
    struct dirent *e;
    while (node < 0 && (e = readdir(d)) != NULL) {
        const char *s = e->d_name;
        if (strncmp(s, "node", 4) != 0 || !isdigit((unsigned char)s[4]))
            continue;
        char *end;
        long v = strtol(s + 4, &end, 10);
        if (*end == '\0' && v >= 0)
            node = v;
    }
    closedir(d);
    return node;
}

/* The CPU process pid last ran on: field 39 of /proc/PID/stat ("processor"), -1 unknown. */
static int64_t last_cpu(long pid)
{
    char path[64], line[1024];
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    char *got = fgets(line, sizeof(line), f);
    fclose(f);
    const char *p = got != NULL ? strrchr(line, ')') : NULL; /* the name may hold spaces */
    if (p == NULL)
        return -1;
    p++;
    for (int field = 2; field < 38; field++) { /* p is after field `field`: skip the next */
        p += strspn(p, " ");
        p += strcspn(p, " ");
        if (*p == '\0')
            return -1;
    }
    char *end;
    long v = strtol(p, &end, 10);
    return end != p && v >= 0 ? v : -1;
}

/* The Cpus_allowed_list of /proc/PID/status, malloc'ed; NULL when unknown. */
static char *allowed_cpus(long pid, bool *oom)
{
    char path[64], line[4096];
    char *out = NULL;
    snprintf(path, sizeof(path), "/proc/%ld/status", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return NULL;
    while (out == NULL && fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "Cpus_allowed_list:", 18) != 0)
            continue;
        const char *v = line + 18;
        v += strspn(v, " \t");
        size_t n = strcspn(v, "\n");
        if (n == 0 || strspn(v, "0123456789,-") != n)
            break;
        out = strndup(v, n);
        *oom = out == NULL;
    }
    fclose(f);
    return out;
}

int cg_runinfo_placement(long pid, struct cg_run_placement *out)
{
    bool oom = false;
    free(out->cpus);
    out->cpus = allowed_cpus(pid, &oom);
    out->cpu = last_cpu(pid);
    out->numa_node = out->cpu >= 0 ? cpu_node(out->cpu) : -1;
    return oom ? CG_ENOMEM : 0;
}
