/*
 * bench_history_lines: reading a long history. Writes a history of --lines lines (default
 * 1,000,000 runs of one gate, ~250 bytes each, as 'history append' writes them; with --gates G,
 * the runs of G gates g0 to gG-1 in turn) to a temporary file, then runs the built 'canary-gate
 * history check' (of gate g0 when there are several) and 'canary-gate history site' on it
 * (default --keep 1000) and prints each one's wall time and peak resident memory (the child's
 * ru_maxrss). Figures, not a test: ctest never runs it. Single-threaded.
 *
 * Usage: bench_history_lines [--lines N] [--gates G]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Runs the tool with argv (NULL-terminated), its output to /dev/null; its exit code, wall time
 * and peak RSS in KiB. */
static int run(char *const *argv, double *wall_s, long *rss_kib)
{
    fflush(stdout); /* not printed twice by the child */
    double t0 = now_s();
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        FILE *null = freopen("/dev/null", "w", stdout);
        (void)null;
        null = freopen("/dev/null", "w", stderr);
        (void)null;
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    struct rusage ru;
    if (wait4(pid, &st, 0, &ru) != pid)
        return -1;
    *wall_s = now_s() - t0;
    *rss_kib = ru.ru_maxrss;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv)
{
    long lines = 1000000, gates = 1;
    for (int i = 1; i < argc; i++) {
        char *end = NULL;
        long *v = NULL;
        if (strcmp(argv[i], "--lines") == 0)
            v = &lines;
        else if (strcmp(argv[i], "--gates") == 0)
            v = &gates;
        if (v != NULL && i + 1 < argc && (*v = strtol(argv[i + 1], &end, 10)) > 0 && *end == '\0' &&
            gates <= 1000) {
            i++;
            continue;
        }
        fprintf(stderr, "usage: bench_history_lines [--lines N] [--gates G]\n");
        return 2;
    }
    char gate[48] = "";
    char dir[] = "/tmp/cg-bench-history-XXXXXX", path[128], site[128];
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(path, sizeof(path), "%s/history.jsonl", dir);
    snprintf(site, sizeof(site), "%s/site", dir);
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        perror(path);
        return 1;
    }
    for (long i = 0; i < lines; i++) {
        if (gates > 1)
            snprintf(gate, sizeof(gate), "\"gate_id\":\"g%ld\",", i % gates);
        double v = 1e7 * (1 + 0.01 * (double)(i % 13) / 13.0) * (i > lines / 2 ? 1.05 : 1.0);
        fprintf(f,
                "{\"schema\":1,\"type\":\"run\",\"commit\":\"%040lx\",\"date\":"
                "\"2026-01-01T00:00:00Z\",\"environment\":\"00112233445566ff\",%s\"metrics\":{"
                "\"step_time_mean\":{\"median\":%.1f,\"low\":%.1f,\"high\":%.1f,\"runs\":5}},"
                "\"counts\":{\"kernels\":370}}\n",
                (unsigned long)i, gate, v, v * 0.99, v * 1.01);
    }
    if (fclose(f) != 0) {
        perror(path);
        return 1;
    }
    struct stat st;
    stat(path, &st);
    printf("history: %ld lines of %ld gate%s, %.1f MB\n", lines, gates, gates == 1 ? "" : "s",
           (double)st.st_size / 1e6);
    char *check[] = {CG_TOOL_PATH, "history", "check", "--history", path, NULL, NULL, NULL};
    if (gates > 1) {
        check[5] = "--gate-id";
        check[6] = "g0";
    }
    char *draw[] = {CG_TOOL_PATH, "history", "site", "--history", path, "--out", site, NULL};
    struct {
        const char *name;
        char **argv;
    } cmds[] = {{"history check", check}, {"history site", draw}};
    int bad = 0;
    for (size_t i = 0; i < 2; i++) {
        double wall = 0;
        long rss = 0;
        int code = run(cmds[i].argv, &wall, &rss);
        printf("%-14s exit %d  %7.2f s  peak RSS %6.1f MiB\n", cmds[i].name, code, wall,
               (double)rss / 1024.0);
        bad |= code != 0;
    }
    unlink(path);
    char index[160];
    snprintf(index, sizeof(index), "%s/index.html", site);
    unlink(index);
    rmdir(site);
    rmdir(dir);
    return bad;
}
