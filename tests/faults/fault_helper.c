/*
 * fault-helper: misbehaving canaries for tests/cli/test_faults.c. Each mode sets up a fault, then
 * execs the real canary command given after "--" (or stands in for a launcher of several), so
 * the gate sees what a badly behaved training job does:
 *
 *   fault-helper flood OUT_MIB ERR_MIB -- CMD...
 *       writes OUT_MIB MiB to stdout and ERR_MIB MiB to stderr from a 64 KiB buffer, then runs CMD
 *   fault-helper group PIDFILE [--ignore] [--hang-from-run K] -- CMD...
 *       leaves a stray child in the process group that ignores SIGINT and SIGTERM, appends
 *       "<canary pid> <stray pid>" to PIDFILE, then runs CMD; --ignore makes CMD ignore SIGINT and
 *       SIGTERM too (only SIGKILL stops it); from the K-th run (counted by PIDFILE's lines) on,
 *       "--hang-at 1" is added to CMD
 *   fault-helper shard FILE -- CMD...
 *       copies FILE into $CANARY_GATE_SHARD_DIR as the finished shard of a rank 9 (a shard the
 *       injection library would never write, such as a step of zero duration), then runs CMD
 *   fault-helper ranks N CRASH_RANK CRASH_AT -- CMD...
 *       a launcher: runs CMD as N ranks (RANK and LOCAL_RANK set), rank CRASH_RANK with
 *       "--crash-at CRASH_AT" added (it aborts, leaving a cut shard); waits for all and exits 0,
 *       as launchers that do not pass a rank's failure on do
 *   fault-helper env FILE NAME... -- CMD...
 *       writes "NAME=value" (or "NAME unset") for each NAME of its environment to FILE, then
 *       runs CMD
 *   fault-helper measured [--ranks R] [--stagger MS] [--no-done] [--ignore-term]
 *                         [--end-after MS] [--crash-after MS] [--step-ms MS]
 *       a training job that runs for ever, with the injection library's shard written by hand:
 *       R processes (default 1, RANK set) each write the steps of the measured window that
 *       CANARY_GATE_WARMUP and CANARY_GATE_STEPS give (3 steps when those are absent), STEP-MS
 *       apart (default 2), then "done W+N" (rank r after r * STAGGER more ms; never with
 *       --no-done, as a library that does not know the window), and go on training: sleep, until
 *       END-AFTER ms have passed (then "end", the shard renamed to ".shard", exit 0) or, without
 *       it, for two minutes. --crash-after MS: MS ms after "done", a Python-like traceback on
 *       stderr and exit status 1, the shard left as ".part" (a crash after the measured window).
 *       --ignore-term: SIGTERM is ignored (only SIGKILL stops it). Writes
 *       "measured: rank R done" and "measured: rank R got SIGTERM" to stdout (the log)
 *
 *   fault-helper daemon PIDFILE -- CMD...
 *       leaves two processes that escape the canary's process group and keep writing
 *       "daemon: PID alive" to stdout (the log) every 20 ms for two minutes: a child that calls
 *       setsid(), and a daemon made by a double fork (setsid in between, its parent exits at
 *       once); writes their two pids, one a line, to PIDFILE, then runs CMD
 *   fault-helper shard-dir-file -- CMD...
 *       replaces $CANARY_GATE_SHARD_DIR by a regular file of the same name (the injection library
 *       cannot create its shard there: ENOTDIR), then runs CMD
 *   fault-helper fsize BYTES -- CMD...
 *       ignores SIGXFSZ, as a Python canary does (Python ignores it at startup), and limits the
 *       files CMD writes to BYTES (RLIMIT_FSIZE), so its shard stops growing mid-run with EFBIG,
 *       as on a full disk; then runs CMD
 *   fault-helper signals FILE -- CMD...
 *       writes the disposition it was given of SIGXFSZ, SIGPIPE, SIGINT, SIGTERM and SIGHUP to
 *       FILE, one "NAME default|ignored|handled" a line, then runs CMD
 *   fault-helper orphans N EVERY_MS FILE -- CMD...
 *       a zombie maker beside CMD (in its process group): every EVERY_MS ms it double-forks N
 *       short-lived children (each child forks one that exits at once, then exits; the
 *       grandchildren become orphans of the gate, their subreaper), and counts the zombies whose
 *       parent is the gate (/proc); FILE holds "made M most Z" (orphans made, the most zombies
 *       seen at once), rewritten at every round; it stops when CMD has ended; then runs CMD
 *
 * Exits 2 on bad usage, 127 when CMD cannot be executed. No dependencies.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_ARGS 64

static char g_block[64 * 1024];

static long number(const char *s)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < 0) {
        fprintf(stderr, "fault-helper: bad number '%s'\n", s);
        exit(2);
    }
    return v;
}

/* The command after "--" with extra arguments appended, NULL-terminated, in out. */
static void command(char **argv, int argc, int from, char **extra, char **out)
{
    int k = 0;
    while (from < argc && strcmp(argv[from], "--") != 0)
        from++;
    if (from + 1 >= argc) {
        fprintf(stderr, "fault-helper: no command after --\n");
        exit(2);
    }
    for (int i = from + 1; i < argc && k < MAX_ARGS - 4; i++)
        out[k++] = argv[i];
    for (int i = 0; extra != NULL && extra[i] != NULL && k < MAX_ARGS - 1; i++)
        out[k++] = extra[i];
    out[k] = NULL;
}

static void run(char **cmd)
{
    execvp(cmd[0], cmd);
    fprintf(stderr, "fault-helper: cannot execute '%s': %s\n", cmd[0], strerror(errno));
    _exit(127);
}

static void write_mib(int fd, long mib)
{
    for (long i = 0; i < mib * 16; i++) {
        size_t left = sizeof(g_block);
        const char *p = g_block;
        while (left > 0) {
            ssize_t w = write(fd, p, left);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                return;
            p += w;
            left -= (size_t)w;
        }
    }
}

static int flood(int argc, char **argv)
{
    char *cmd[MAX_ARGS];
    if (argc < 4)
        return 2;
    long out_mib = number(argv[2]), err_mib = number(argv[3]);
    command(argv, argc, 4, NULL, cmd);
    for (size_t i = 0; i < sizeof(g_block); i++)
        g_block[i] = (i % 80 == 79) ? '\n' : (char)('a' + i % 26);
    write_mib(1, out_mib);
    write_mib(2, err_mib);
    run(cmd);
    return 127;
}

static int lines_in(const char *path)
{
    FILE *f = fopen(path, "r");
    int n = 0, c;
    if (f == NULL)
        return 0;
    while ((c = fgetc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

static int group(int argc, char **argv)
{
    char *cmd[MAX_ARGS];
    char *hang[] = {"--hang-at", "1", NULL};
    int ignore = 0;
    long hang_from = -1;
    if (argc < 3)
        return 2;
    const char *pidfile = argv[2];
    for (int i = 3; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--ignore") == 0)
            ignore = 1;
        else if (strcmp(argv[i], "--hang-from-run") == 0 && i + 1 < argc)
            hang_from = number(argv[++i]);
    }
    int run_index = lines_in(pidfile) + 1;
    command(argv, argc, 3, hang_from >= 0 && run_index >= hang_from ? hang : NULL, cmd);
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    pid_t stray = fork();
    if (stray < 0)
        return 1;
    if (stray == 0) {
        /* stays in the canary's group whatever it is sent but SIGKILL; gives up after 2 min */
        struct timespec ts = {120, 0};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
        _exit(0);
    }
    if (!ignore) {
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
    }
    char line[64];
    int n = snprintf(line, sizeof(line), "%ld %ld\n", (long)getpid(), (long)stray);
    int fd = open(pidfile, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, line, (size_t)n) != n)
        return 1;
    close(fd);
    run(cmd);
    return 127;
}

static int shard(int argc, char **argv)
{
    char *cmd[MAX_ARGS], path[4096], buf[4096];
    const char *dir = getenv("CANARY_GATE_SHARD_DIR");
    if (argc < 3 || dir == NULL)
        return 2;
    command(argv, argc, 3, NULL, cmd);
    snprintf(path, sizeof(path), "%s/shard-r9-l9-p%ld.shard", dir, (long)getpid());
    int in = open(argv[2], O_RDONLY | O_CLOEXEC);
    int out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (in < 0 || out < 0)
        return 1;
    ssize_t n;
    while ((n = read(in, buf, sizeof(buf))) > 0)
        if (write(out, buf, (size_t)n) != n)
            return 1;
    close(in);
    close(out);
    run(cmd);
    return 127;
}

static int ranks(int argc, char **argv)
{
    char *cmd[MAX_ARGS], *crash_cmd[MAX_ARGS];
    pid_t pids[16];
    if (argc < 5)
        return 2;
    long n = number(argv[2]), crash_rank = number(argv[3]);
    char *crash[] = {"--crash-at", argv[4], NULL};
    if (n < 1 || n > 16)
        return 2;
    command(argv, argc, 5, NULL, cmd);
    command(argv, argc, 5, crash, crash_cmd);
    for (long i = 0; i < n; i++) {
        pids[i] = fork();
        if (pids[i] < 0)
            return 1;
        if (pids[i] == 0) {
            char rank[16];
            snprintf(rank, sizeof(rank), "%ld", i);
            setenv("RANK", rank, 1);
            setenv("LOCAL_RANK", rank, 1);
            run(i == crash_rank ? crash_cmd : cmd);
        }
    }
    for (long i = 0; i < n; i++)
        waitpid(pids[i], NULL, 0);
    return 0;
}

static int write_env(int argc, char **argv)
{
    char *cmd[MAX_ARGS];
    if (argc < 3)
        return 2;
    command(argv, argc, 3, NULL, cmd);
    FILE *f = fopen(argv[2], "w");
    if (f == NULL)
        return 1;
    for (int i = 3; i < argc && strcmp(argv[i], "--") != 0; i++) {
        const char *v = getenv(argv[i]);
        if (v != NULL)
            fprintf(f, "%s=%s\n", argv[i], v);
        else
            fprintf(f, "%s unset\n", argv[i]);
    }
    if (fclose(f) != 0)
        return 1;
    run(cmd);
    return 127;
}

struct measured_opts {
    long ranks, stagger_ms, end_after_ms, step_ms, crash_after_ms;
    int no_done, ignore_term;
};

static volatile sig_atomic_t g_term;

static void on_term(int sig)
{
    (void)sig;
    g_term = 1;
}

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Sleeps ms milliseconds (a signal does not cut it short); says once when SIGTERM came. */
static void nap_ms(long ms, long rank)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    int slept;
    do {
        slept = nanosleep(&ts, &ts);
        /* checked after every sleep, interrupted or not: a signal that comes as a sleep ends
         * is handled without interrupting it */
        if (g_term == 1) {
            g_term = 2;
            printf("measured: rank %ld got SIGTERM\n", rank);
            fflush(stdout);
        }
    } while (slept != 0 && errno == EINTR);
}

static void put(int fd, const char *line)
{
    size_t n = strlen(line);
    if (write(fd, line, n) != (ssize_t)n)
        _exit(1);
}

/* One rank of "measured": see the file header. */
static int measured_rank(const struct measured_opts *o, long rank)
{
    const char *dir = getenv("CANARY_GATE_SHARD_DIR");
    const char *w = getenv("CANARY_GATE_WARMUP"), *n = getenv("CANARY_GATE_STEPS");
    char part[4096], done[4096], line[256];
    if (dir == NULL)
        return 2;
    long warmup = w != NULL ? number(w) : 0, steps = n != NULL ? number(n) : 3;
    snprintf(part, sizeof(part), "%s/shard-r%ld-l%ld-p%ld.part", dir, rank, rank, (long)getpid());
    snprintf(done, sizeof(done), "%s/shard-r%ld-l%ld-p%ld.shard", dir, rank, rank, (long)getpid());
    int fd = open(part, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return 1;
    snprintf(line, sizeof(line), "canary-gate-shard 1\npid %ld\nrank %ld\nlocal_rank %ld\n"
             "warmup %ld\nstep_range step\n", (long)getpid(), rank, rank, warmup);
    put(fd, line);
    long long start = now_ns(), t0 = start;
    for (long i = 0; i < warmup + steps; i++) {
        nap_ms(o->step_ms, rank);
        long long t1 = now_ns();
        snprintf(line, sizeof(line), "s %ld %lld %lld 16\n", i, t0, t1);
        put(fd, line);
        t0 = t1;
    }
    if (!o->no_done) {
        nap_ms(rank * o->stagger_ms, rank);
        snprintf(line, sizeof(line), "done %ld\n", warmup + steps);
        put(fd, line);
        printf("measured: rank %ld done\n", rank);
        fflush(stdout);
    }
    long wait_ms = o->end_after_ms >= 0 ? o->end_after_ms : 120000;
    if (o->crash_after_ms >= 0)
        wait_ms = o->crash_after_ms;
    for (long k = 0; k < wait_ms / 10; k++) /* training on */
        nap_ms(10, rank);
    if (o->crash_after_ms >= 0) { /* an uncaught exception: no "end", exit status 1 */
        fprintf(stderr,
                "Traceback (most recent call last):\n  File \"train.py\", line 9, in "
                "<module>\nRuntimeError: measured: rank %ld crashed\n",
                rank);
        return 1;
    }
    if (o->end_after_ms < 0)
        return 0;
    put(fd, "end\n");
    close(fd);
    return rename(part, done) == 0 ? 0 : 1;
}

static int measured(int argc, char **argv)
{
    struct measured_opts o = {1, 0, -1, 2, -1, 0, 0};
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--no-done") == 0)
            o.no_done = 1;
        else if (strcmp(argv[i], "--ignore-term") == 0)
            o.ignore_term = 1;
        else if (strcmp(argv[i], "--ranks") == 0 && i + 1 < argc)
            o.ranks = number(argv[++i]);
        else if (strcmp(argv[i], "--stagger") == 0 && i + 1 < argc)
            o.stagger_ms = number(argv[++i]);
        else if (strcmp(argv[i], "--end-after") == 0 && i + 1 < argc)
            o.end_after_ms = number(argv[++i]);
        else if (strcmp(argv[i], "--step-ms") == 0 && i + 1 < argc)
            o.step_ms = number(argv[++i]);
        else if (strcmp(argv[i], "--crash-after") == 0 && i + 1 < argc)
            o.crash_after_ms = number(argv[++i]);
        else
            return 2;
    }
    if (o.ranks < 1 || o.ranks > 16)
        return 2;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = o.ignore_term ? on_term : SIG_DFL;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    pid_t pids[16];
    for (long r = 1; r < o.ranks; r++) {
        pids[r] = fork();
        if (pids[r] < 0)
            return 1;
        if (pids[r] == 0)
            _exit(measured_rank(&o, r));
    }
    int rc = measured_rank(&o, 0);
    for (long r = 1; r < o.ranks; r++) {
        int st = 0;
        waitpid(pids[r], &st, 0);
        if (rc == 0 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
            rc = 1;
    }
    return rc;
}

/* The body of an escaped process: says it is alive in the log for two minutes. */
static void keep_writing(void)
{
    char line[64];
    snprintf(line, sizeof(line), "daemon: %ld alive\n", (long)getpid());
    for (int i = 0; i < 6000; i++) {
        ssize_t w = write(1, line, strlen(line));
        (void)w;
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
    _exit(0);
}

static void append_pid(const char *path, long pid)
{
    FILE *f = fopen(path, "a");
    if (f == NULL)
        _exit(1);
    fprintf(f, "%ld\n", pid);
    fclose(f);
}

static int daemon_mode(int argc, char **argv)
{
    char *cmd[MAX_ARGS];
    if (argc < 3)
        return 2;
    const char *pidfile = argv[2];
    command(argv, argc, 3, NULL, cmd);
    pid_t child = fork(); /* a child in a session of its own */
    if (child < 0)
        return 1;
    if (child == 0) {
        setsid();
        keep_writing();
    }
    append_pid(pidfile, (long)child);
    int pfd[2];
    if (pipe(pfd) != 0)
        return 1;
    pid_t mid = fork(); /* a classic daemon: fork, setsid, fork, the middle one exits */
    if (mid < 0)
        return 1;
    if (mid == 0) {
        close(pfd[0]);
        setsid();
        pid_t d = fork();
        if (d == 0) {
            close(pfd[1]);
            keep_writing();
        }
        long pid = (long)d;
        ssize_t w = write(pfd[1], &pid, sizeof(pid));
        _exit(w == (ssize_t)sizeof(pid) ? 0 : 1);
    }
    close(pfd[1]);
    long daemon_pid = 0;
    if (read(pfd[0], &daemon_pid, sizeof(daemon_pid)) != (ssize_t)sizeof(daemon_pid))
        return 1;
    close(pfd[0]);
    waitpid(mid, NULL, 0);
    append_pid(pidfile, daemon_pid);
    run(cmd);
    return 127;
}

static int shard_dir_file(int argc, char **argv)
{
    char *cmd[MAX_ARGS];
    command(argv, argc, 2, NULL, cmd);
    const char *dir = getenv("CANARY_GATE_SHARD_DIR");
    if (dir == NULL || rmdir(dir) != 0)
        return 1;
    int fd = open(dir, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0)
        return 1;
    close(fd);
    run(cmd);
    return 127;
}

static int fsize(int argc, char **argv)
{
    char *cmd[MAX_ARGS];
    if (argc < 3)
        return 2;
    long bytes = number(argv[2]);
    command(argv, argc, 3, NULL, cmd);
    struct rlimit rl = {(rlim_t)bytes, (rlim_t)bytes};
    signal(SIGXFSZ, SIG_IGN); /* writes fail with EFBIG instead of killing */
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
        return 1;
    run(cmd);
    return 127;
}

static int signals(int argc, char **argv)
{
    static const struct {
        int sig;
        const char *name;
    } sigs[] = {{SIGXFSZ, "SIGXFSZ"},
                {SIGPIPE, "SIGPIPE"},
                {SIGINT, "SIGINT"},
                {SIGTERM, "SIGTERM"},
                {SIGHUP, "SIGHUP"}};
    char *cmd[MAX_ARGS];
    if (argc < 3)
        return 2;
    command(argv, argc, 3, NULL, cmd);
    FILE *f = fopen(argv[2], "w");
    if (f == NULL)
        return 1;
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
        struct sigaction sa;
        if (sigaction(sigs[i].sig, NULL, &sa) != 0)
            return 1;
        fprintf(f, "%s %s\n", sigs[i].name,
                sa.sa_handler == SIG_DFL   ? "default"
                : sa.sa_handler == SIG_IGN ? "ignored"
                                           : "handled");
    }
    if (fclose(f) != 0)
        return 1;
    run(cmd);
    return 127;
}

/* Zombies whose parent is pid, from /proc. */
static long zombies_of(pid_t pid)
{
    long n = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        char path[300], buf[512];
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        int fd = open(path, O_RDONLY);
        if (fd < 0)
            continue;
        ssize_t got = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (got <= 0)
            continue;
        buf[got] = '\0';
        const char *p = strrchr(buf, ')');
        long ppid = 0;
        char state = 0;
        if (p != NULL && sscanf(p + 1, " %c %ld", &state, &ppid) == 2 && state == 'Z' &&
            ppid == (long)pid)
            n++;
    }
    if (d != NULL)
        closedir(d);
    return n;
}

static int orphans(int argc, char **argv)
{
    char *cmd[MAX_ARGS];
    if (argc < 5)
        return 2;
    long per_round = number(argv[2]), every_ms = number(argv[3]);
    const char *file = argv[4];
    command(argv, argc, 5, NULL, cmd);
    pid_t gate = getppid(), canary = getpid();
    pid_t maker = fork();
    if (maker < 0)
        return 1;
    if (maker > 0)
        run(cmd);
    long made = 0, most = 0;
    while (getppid() == canary) { /* until CMD (this process, exec'd) has ended */
        for (long i = 0; i < per_round; i++) {
            pid_t child = fork();
            if (child == 0) {
                if (fork() == 0)
                    _exit(0); /* the orphan: exits at once, its parent already gone */
                _exit(0);
            }
            if (child > 0) {
                waitpid(child, NULL, 0);
                made++;
            }
        }
        long z = zombies_of(gate);
        most = z > most ? z : most;
        FILE *f = fopen(file, "w");
        if (f != NULL) {
            fprintf(f, "made %ld most %ld\n", made, most);
            fclose(f);
        }
        struct timespec ts = {every_ms / 1000, (every_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    _exit(0);
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "orphans") == 0)
        return orphans(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "daemon") == 0)
        return daemon_mode(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "shard-dir-file") == 0)
        return shard_dir_file(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "signals") == 0)
        return signals(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "fsize") == 0)
        return fsize(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "flood") == 0)
        return flood(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "group") == 0)
        return group(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "shard") == 0)
        return shard(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "ranks") == 0)
        return ranks(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "env") == 0)
        return write_env(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "measured") == 0)
        return measured(argc, argv);
    fprintf(stderr, "usage: fault-helper flood|group|shard|ranks|env|measured|daemon|"
                    "shard-dir-file|fsize|signals|orphans ...\n");
    return 2;
}
