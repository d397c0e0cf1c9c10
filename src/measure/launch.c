/*
 * launch: one canary process in its own process group, with a timeout, interrupt forwarding,
 * its output in a log file and its peak RSS; plus the machine facts for the artifact (see
 * launch.h). The child's error before exec travels back over a close-on-exec pipe, so "cannot
 * execute" is told apart from a canary that ran and failed. Polls every 10 ms. Descendants that
 * left the canary's process group are found in /proc by their parent chain (the tool is their
 * subreaper), and the orphans it inherits are reaped as they end, while the canary runs. Never
 * prints.
 */
#include "launch.h"

#include <dirent.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static volatile sig_atomic_t g_interrupted;

static void on_interrupt(int sig)
{
    (void)sig;
    g_interrupted = 1;
}

/* The signals that end the tool as an interrupt does: Ctrl-C, a CI cancel (TERM), a closed
 * terminal or session (HUP), and USR1 and ALRM, whose default would end the tool on the spot
 * and leave the canary running in its own process group. */
/* SIGPIPE: a reader of the tool's output that stops early (`| head`) ended it on the spot,
 * leaving what it made behind; it stops the run as an interrupt does (the write fails, EPIPE).
 * Handlers, unlike SIG_IGN, do not pass to the canary. */
static const int interrupt_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGALRM, SIGPIPE};
#define N_INTERRUPT_SIGNALS (sizeof(interrupt_signals) / sizeof(interrupt_signals[0]))

void cg_launch_catch_interrupts(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < N_INTERRUPT_SIGNALS; i++)
        sigaction(interrupt_signals[i], &sa, NULL);
}

bool cg_launch_interrupted(void)
{
    return g_interrupted != 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL); /* an interrupt ends it early, which is what we want */
}

/* True when the entry "NAME=value" (or "NAME") is for name. */
static bool entry_is(const char *entry, const char *name)
{
    size_t len = strlen(name);
    return strncmp(entry, name, len) == 0 && (entry[len] == '=' || entry[len] == '\0');
}

/* environ with env_add applied and env_remove's names taken out: a malloc'ed NULL-terminated
 * array of borrowed strings. */
static char **build_env(char *const *add, size_t n_add, char *const *remove, size_t n_remove)
{
    size_t n = 0;
    while (environ != NULL && environ[n] != NULL)
        n++;
    char **env = calloc(n + n_add + 1, sizeof(char *));
    if (env == NULL)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *eq = strchr(environ[i], '=');
        size_t len = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
        bool replaced = false;
        for (size_t j = 0; j < n_add && !replaced; j++)
            replaced = strncmp(add[j], environ[i], len) == 0 && add[j][len] == '=';
        for (size_t j = 0; j < n_remove && !replaced; j++)
            replaced = entry_is(environ[i], remove[j]);
        if (!replaced)
            env[k++] = environ[i];
    }
    for (size_t j = 0; j < n_add; j++) {
        bool removed = false;
        for (size_t i = 0; i < n_remove && !removed; i++)
            removed = entry_is(add[j], remove[i]);
        if (!removed)
            env[k++] = add[j];
    }
    env[k] = NULL;
    return env;
}

/* In the child between fork and exec: only async-signal-safe calls. */
static void child_exec(char *const *argv, char **env, int log_fd, int err_fd, const char *cwd)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    for (size_t i = 0; i < N_INTERRUPT_SIGNALS; i++)
        sigaction(interrupt_signals[i], &sa, NULL);
    /* the tool ignores SIGXFSZ (main.c), and an ignored signal stays ignored across exec: the
     * canary gets the default it would have had without the gate */
    sigaction(SIGXFSZ, &sa, NULL);
    setpgid(0, 0);
    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) {
        dup2(null_fd, 0);
        close(null_fd);
    }
    dup2(log_fd, 1);
    dup2(log_fd, 2);
    environ = env;
    if (cwd == NULL || chdir(cwd) == 0)
        execvp(argv[0], argv);
    int e = errno;
    ssize_t w = write(err_fd, &e, sizeof(e));
    (void)w;
    _exit(127);
}

/* --- descendants ------------------------------------------------------------------------- */

struct proc_entry {
    pid_t pid, ppid, pgrp;
    bool zombie;
};

/* Reads pid's parent, process group and whether it is a zombie from /proc/PID/stat; false when
 * the process is gone or the line cannot be read. */
static bool read_stat(long pid, struct proc_entry *e)
{
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t got = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (got <= 0)
        return false;
    buf[got] = '\0';
    /* "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses */
    const char *p = strrchr(buf, ')');
    if (p == NULL || p[1] != ' ' || p[2] == '\0' || p[3] != ' ')
        return false;
    char state = p[2];
    char *end = NULL;
    long ppid = strtol(p + 4, &end, 10);
    if (end == p + 4 || *end != ' ')
        return false;
    const char *q = end + 1;
    long pgrp = strtol(q, &end, 10);
    if (end == q)
        return false;
    *e = (struct proc_entry){(pid_t)pid, (pid_t)ppid, (pid_t)pgrp, state == 'Z' || state == 'X'};
    return true;
}

/* Every process of /proc with its parent, group and state: a malloc'ed array (*n entries), NULL
 * when /proc cannot be read or memory is short. */
static struct proc_entry *proc_table(size_t *n)
{
    *n = 0;
    DIR *d = opendir("/proc");
    if (d == NULL)
        return NULL;
    size_t cap = 256;
    struct proc_entry *t = malloc(cap * sizeof(*t));
    if (t == NULL) {
        closedir(d);
        return NULL;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        char *end = NULL;
        long pid = strtol(de->d_name, &end, 10);
        struct proc_entry e;
        if (end == de->d_name || *end != '\0' || pid <= 0 || !read_stat(pid, &e))
            continue;
        if (*n == cap) {
            struct proc_entry *bigger = realloc(t, 2 * cap * sizeof(*t));
            if (bigger == NULL) {
                free(t);
                closedir(d);
                *n = 0;
                return NULL;
            }
            t = bigger;
            cap *= 2;
        }
        t[(*n)++] = e;
    }
    closedir(d);
    return t;
}

/* The tool's children when the canary started (never the canary's: left alone). */
struct launch_state {
    pid_t self, canary;
    pid_t *before;
    size_t n_before;
    double next_scan; /* reap_orphans: when /proc may be read again */
};

static bool in_list(const pid_t *list, size_t n, pid_t pid)
{
    for (size_t i = 0; i < n; i++)
        if (list[i] == pid)
            return true;
    return false;
}

/* True when process i of t descends from the canary: its parent chain reaches the canary, or
 * reaches the tool through a child the tool did not have before the canary started (an orphan
 * the tool reaped as subreaper). */
static bool is_descendant(const struct launch_state *ls, const struct proc_entry *t, size_t n,
                          size_t i)
{
    pid_t pid = t[i].pid;
    for (size_t depth = 0; depth < 4096 && pid > 1; depth++) {
        if (pid == ls->canary)
            return true;
        size_t k = 0;
        while (k < n && t[k].pid != pid)
            k++;
        if (k == n)
            return false;
        if (t[k].ppid == ls->self)
            return pid != ls->self && !in_list(ls->before, ls->n_before, pid);
        pid = t[k].ppid;
    }
    return false;
}

/* Sends sig to every live descendant of the canary (its group excepted when skip_group: the
 * caller signals the group itself) and reaps the tool's dead children among them. Returns how
 * many outside the canary's group were signalled; escaped[] (may be NULL) collects their pids up
 * to cap, *n_escaped counting distinct ones. */
static long signal_descendants(const struct launch_state *ls, int sig, bool skip_group,
                               pid_t *escaped, size_t cap, size_t *n_escaped)
{
    size_t n = 0;
    long outside = 0;
    struct proc_entry *t = proc_table(&n);
    for (size_t i = 0; t != NULL && i < n; i++) {
        if (t[i].pid == ls->self || t[i].pid == ls->canary || !is_descendant(ls, t, n, i))
            continue;
        if (t[i].zombie) {
            if (t[i].ppid == ls->self)
                waitpid(t[i].pid, NULL, WNOHANG);
            continue;
        }
        if (t[i].pgrp == ls->canary) {
            if (!skip_group)
                kill(t[i].pid, sig);
            continue;
        }
        kill(t[i].pid, sig);
        outside++;
        if (escaped != NULL && !in_list(escaped, *n_escaped, t[i].pid) && *n_escaped < cap)
            escaped[(*n_escaped)++] = t[i].pid;
    }
    free(t);
    return outside;
}

/* The canary's processes still running (not zombies): its group and its descendants. */
static long count_alive(const struct launch_state *ls)
{
    size_t n = 0;
    long alive = 0;
    struct proc_entry *t = proc_table(&n);
    for (size_t i = 0; t != NULL && i < n; i++)
        if (t[i].pid != ls->self && !t[i].zombie &&
            (t[i].pgrp == ls->canary || t[i].pid == ls->canary || is_descendant(ls, t, n, i)))
            alive++;
    free(t);
    return alive;
}

/* Sends sig to the canary's process group and to its descendants outside it. */
static void stop_all(const struct launch_state *ls, int sig)
{
    kill(-ls->canary, sig);
    signal_descendants(ls, sig, true, NULL, 0, NULL);
}

/* Once the canary's first process has ended: kills what is left of its group and every
 * descendant outside it, until none is left (bounded), and returns how many processes outside
 * the group had to be killed. */
static long end_descendants(const struct launch_state *ls)
{
    enum { MAX_TRACKED = 4096, MAX_ROUNDS = 500 };
    pid_t *seen = malloc(MAX_TRACKED * sizeof(*seen));
    size_t n_seen = 0;
    long rounds_with_some = 0;
    kill(-ls->canary, SIGKILL);
    for (int round = 0; round < MAX_ROUNDS; round++) {
        long left = signal_descendants(ls, SIGKILL, false, seen, seen ? MAX_TRACKED : 0,
                                       &n_seen);
        size_t n = 0;
        struct proc_entry *t = proc_table(&n);
        bool any = false;
        for (size_t i = 0; t != NULL && i < n && !any; i++)
            any = t[i].pid != ls->canary && !t[i].zombie && is_descendant(ls, t, n, i);
        free(t);
        rounds_with_some += left > 0;
        if (!any)
            break;
        sleep_s(0.01);
    }
    long count = seen != NULL ? (long)n_seen : rounds_with_some;
    free(seen);
    /* reap the tool's children the sweep ended (orphans re-parented to it) */
    size_t n = 0;
    struct proc_entry *t = proc_table(&n);
    for (size_t i = 0; t != NULL && i < n; i++)
        if (t[i].ppid == ls->self && t[i].pid != ls->canary &&
            !in_list(ls->before, ls->n_before, t[i].pid))
            waitpid(t[i].pid, NULL, WNOHANG);
    free(t);
    return count;
}

/* Reaps the orphans the tool has become the parent of (as subreaper) that have ended, as they
 * come: never the canary's first process (its status is read by the caller) nor a child the tool
 * had before the canary started (its owner waits for it). A zombie is looked at without reaping
 * (WNOWAIT) and reaped by its pid only when it is an orphan; when the first zombie is one of those
 * two, the others are found in /proc (every 100 ms at most). At most a bounded number a call. */
static void reap_orphans(struct launch_state *ls)
{
#ifdef __linux__
    for (int k = 0; k < 4096; k++) {
        siginfo_t info;
        memset(&info, 0, sizeof(info));
        if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0)
            return; /* no child has ended */
        pid_t pid = info.si_pid;
        if (pid == ls->canary || in_list(ls->before, ls->n_before, pid))
            break;
        waitpid(pid, NULL, WNOHANG);
    }
    if (now_s() < ls->next_scan)
        return;
    ls->next_scan = now_s() + 0.1;
    size_t n = 0;
    struct proc_entry *t = proc_table(&n);
    for (size_t i = 0; t != NULL && i < n; i++)
        if (t[i].zombie && t[i].ppid == ls->self && t[i].pid != ls->canary &&
            !in_list(ls->before, ls->n_before, t[i].pid))
            waitpid(t[i].pid, NULL, WNOHANG);
    free(t);
#else
    (void)ls;
#endif
}

/* The tool's children now (before the canary starts); becomes the subreaper of what the canary
 * starts. */
static void launch_state_init(struct launch_state *ls)
{
    memset(ls, 0, sizeof(*ls));
    ls->self = getpid();
#ifdef __linux__
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
#endif
    size_t n = 0;
    struct proc_entry *t = proc_table(&n);
    ls->before = t != NULL ? malloc((n + 1) * sizeof(pid_t)) : NULL;
    for (size_t i = 0; ls->before != NULL && i < n; i++)
        if (t[i].ppid == ls->self)
            ls->before[ls->n_before++] = t[i].pid;
    free(t);
}

/* The watchdog: a process of the tool's own, in a process group of its own, that ends the
 * canary's group (SIGTERM, then SIGKILL two seconds later) when the tool dies without ending it
 * (SIGKILL, which no handler sees; a crash). It waits on a socket whose other end only the tool
 * holds: a byte means the run ended and it leaves; the end of the stream without one means the
 * tool is gone. (A socket, not a pipe: the tool's byte is sent with MSG_NOSIGNAL, so a watchdog
 * ended early, by the stop of the canary's descendants, raises no SIGPIPE; and the end of the
 * stream, not the watchdog's parent, tells a dead tool, since the stream ends before the kernel
 * gives the watchdog its new parent.) Returns its pid and the tool's end in *fd, or -1 (the run
 * goes on without one). */
static pid_t watchdog_start(pid_t canary_group, int *fd)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return -1;
    pid_t w = fork();
    if (w < 0) {
        close(sv[0]);
        close(sv[1]);
        return -1;
    }
    if (w == 0) {
        /* holds nothing of the tool's but its end of the socket: a pipe end it kept open would
         * keep the tool waiting on it */
        for (int other = 3; other < 1024; other++)
            if (other != sv[0])
                close(other);
        setpgid(0, 0); /* a signal to the tool's group does not reach it */
        char c;
        ssize_t n;
        while ((n = read(sv[0], &c, 1)) < 0 && errno == EINTR) {
        }
        if (n == 0) {
            kill(-canary_group, SIGTERM);
            struct timespec grace = {2, 0};
            nanosleep(&grace, NULL);
            kill(-canary_group, SIGKILL);
        }
        _exit(0);
    }
    close(sv[0]);
    fcntl(sv[1], F_SETFD, FD_CLOEXEC);
    *fd = sv[1];
    return w;
}

/* Tells the watchdog the run ended and waits for it. */
static void watchdog_stop(pid_t *w, int *fd)
{
    if (*fd >= 0) {
        while (send(*fd, "x", 1, MSG_NOSIGNAL) < 0 && errno == EINTR) {
        }
        close(*fd);
        *fd = -1;
    }
    if (*w > 0) {
        while (waitpid(*w, NULL, 0) < 0 && errno == EINTR) {
        }
        *w = -1;
    }
}

static int cloexec_pipe(int fd[2])
{
    if (pipe(fd) != 0)
        return -1;
    fcntl(fd[0], F_SETFD, FD_CLOEXEC);
    fcntl(fd[1], F_SETFD, FD_CLOEXEC);
    return 0;
}

int cg_launch_run(const struct cg_launch_opts *o, struct cg_launch_result *r, struct cg_err *err)
{
    char **env = NULL;
    int log_fd = -1, pipefd[2] = {-1, -1}, watch_fd = -1;
    pid_t watchdog = -1;
    int rc = 0;
    struct launch_state ls;
    memset(r, 0, sizeof(*r));
    r->peak_rss_bytes = -1;
    launch_state_init(&ls);

    log_fd = open(o->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) {
        rc = cg_err_set(err, CG_EIO, "cannot open log '%s': %s", o->log_path, strerror(errno));
        goto done;
    }
    env = build_env(o->env_add, o->n_env_add, o->env_remove, o->n_env_remove);
    if (env == NULL || cloexec_pipe(pipefd) != 0) {
        rc = cg_err_set(err, CG_ENOMEM, "cannot prepare the canary's environment");
        goto done;
    }
    double t0 = now_s();
    pid_t pid = fork();
    if (pid < 0) {
        rc = cg_err_set(err, CG_EIO, "cannot start the canary: fork: %s", strerror(errno));
        goto done;
    }
    if (pid == 0)
        child_exec(o->argv, env, log_fd, pipefd[1], o->cwd);
    setpgid(pid, pid); /* also done by the child; whichever runs first wins */
    ls.canary = pid;
    if (o->pid_out != NULL)
        *o->pid_out = (long)pid;
    close(pipefd[1]);
    pipefd[1] = -1;
    watchdog = watchdog_start(pid, &watch_fd);
    int child_errno = 0;
    ssize_t got;
    while ((got = read(pipefd[0], &child_errno, sizeof(child_errno))) < 0 && errno == EINTR) {
    }

    int status = 0;
    struct rusage ru;
    double term_at = -1.0, next_poll = t0 + o->poll_s;
    bool killed = false;
    memset(&ru, 0, sizeof(ru));
    for (;;) {
        pid_t w = wait4(pid, &status, WNOHANG, &ru);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR) {
            rc = cg_err_set(err, CG_EIO, "cannot wait for the canary: %s", strerror(errno));
            stop_all(&ls, SIGKILL);
            waitpid(pid, &status, 0);
            watchdog_stop(&watchdog, &watch_fd);
            r->escaped = end_descendants(&ls);
            goto done;
        }
        double t = now_s();
        if (term_at < 0 && g_interrupted) {
            r->end = CG_LAUNCH_INTERRUPTED;
            stop_all(&ls, SIGINT);
            term_at = t;
        } else if (term_at < 0 && o->timeout_s > 0 && t - t0 >= o->timeout_s) {
            r->end = CG_LAUNCH_TIMEOUT;
            stop_all(&ls, SIGTERM);
            term_at = t;
        } else if (term_at >= 0 && !killed && t - term_at >= o->kill_grace_s) {
            r->after_grace = count_alive(&ls); /* said by the caller: they needed SIGKILL */
            stop_all(&ls, SIGKILL);
            killed = true;
        }
        reap_orphans(&ls); /* a canary making orphans all run long never piles them up */
        if (term_at < 0 && o->progress != NULL && o->poll_s > 0 && t >= next_poll) {
            if (o->progress(o->progress_ctx, t - t0)) {
                r->end = CG_LAUNCH_STOPPED;
                stop_all(&ls, SIGTERM);
                term_at = t;
            }
            next_poll = t + o->poll_s;
        }
        sleep_s(0.01);
    }
    r->wall_s = now_s() - t0;
    watchdog_stop(&watchdog, &watch_fd); /* before the scan: it is no escaped process */
    r->escaped = end_descendants(&ls); /* what the canary left behind, in its group or not */
    if (got == (ssize_t)sizeof(child_errno)) {
        rc = cg_err_set(err, CG_ECANARY, "cannot execute '%s': %s", o->argv[0],
                        strerror(child_errno));
        goto done;
    }
    r->peak_rss_bytes = (int64_t)ru.ru_maxrss * 1024;
    if (r->end != CG_LAUNCH_INTERRUPTED && r->end != CG_LAUNCH_TIMEOUT) {
        bool stopped = r->end == CG_LAUNCH_STOPPED;
        if (WIFSIGNALED(status)) {
            r->end = CG_LAUNCH_SIGNALED;
            r->signal = WTERMSIG(status);
        } else {
            r->end = CG_LAUNCH_EXITED;
            r->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        }
        if (stopped)
            r->end = CG_LAUNCH_STOPPED;
    }
done:
    watchdog_stop(&watchdog, &watch_fd);
    if (pipefd[0] >= 0)
        close(pipefd[0]);
    if (pipefd[1] >= 0)
        close(pipefd[1]);
    if (log_fd >= 0)
        close(log_fd);
    free(env);
    free(ls.before);
    return rc;
}

/* --- environment facts -------------------------------------------------------------------- */

static char *trimmed_dup(const char *s, size_t n)
{
    while (n > 0 && (*s == ' ' || *s == '\t')) {
        s++;
        n--;
    }
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n'))
        n--;
    char *out = malloc(n + 1);
    if (out != NULL) {
        memcpy(out, s, n);
        out[n] = '\0';
    }
    return out;
}

char *cg_launch_cpu_model(void)
{
    char line[512];
    char *out = NULL;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f == NULL)
        return NULL;
    while (out == NULL && fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "model name", 10) != 0)
            continue;
        const char *colon = strchr(line, ':');
        if (colon != NULL)
            out = trimmed_dup(colon + 1, strlen(colon + 1));
    }
    fclose(f);
    return out;
}

char *cg_launch_parse_driver_version(const char *line)
{
    const char *p = strstr(line, "Kernel Module");
    if (p == NULL)
        return NULL;
    /* the first word after it made of digits and dots, a digit at each end and a dot inside */
    for (p += strlen("Kernel Module"); *p != '\0' && *p != '\n';) {
        p += strspn(p, " \t");
        size_t n = strcspn(p, " \t\n");
        size_t digits = strspn(p, "0123456789.");
        if (n > 2 && digits == n && isdigit((unsigned char)p[0]) &&
            isdigit((unsigned char)p[n - 1]) && memchr(p, '.', n) != NULL)
            return trimmed_dup(p, n);
        p += n;
    }
    return NULL;
}

char *cg_launch_driver_version(void)
{
    char line[512];
    char *out = NULL;
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    if (f == NULL)
        return NULL;
    if (fgets(line, sizeof(line), f) != NULL)
        out = cg_launch_parse_driver_version(line);
    fclose(f);
    return out;
}

static void fnv_bytes(uint64_t *h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        *h ^= b[i];
        *h *= 1099511628211ull;
    }
}

char *cg_launch_canary_id(char *const *argv, const char *settings)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; argv[i] != NULL; i++)
        fnv_bytes(&h, argv[i], strlen(argv[i]) + 1);
    if (settings != NULL)
        fnv_bytes(&h, settings, strlen(settings) + 1);
    char *out = malloc(8 + 16 + 1);
    if (out != NULL)
        snprintf(out, 8 + 16 + 1, "fnv1a64:%016llx", (unsigned long long)h);
    return out;
}
