/*
 * fault-helper: misbehaving canaries for tests/test_faults.c. Each mode sets up a fault, then
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
 *
 * Exits 2 on bad usage, 127 when CMD cannot be executed. No dependencies.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "flood") == 0)
        return flood(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "group") == 0)
        return group(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "shard") == 0)
        return shard(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "ranks") == 0)
        return ranks(argc, argv);
    fprintf(stderr, "usage: fault-helper flood|group|shard|ranks ... -- CMD...\n");
    return 2;
}
