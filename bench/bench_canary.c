/*
 * bench_canary: tokens per second of canary-train's CPU back end on the tiny and small
 * presets. Runs the built binary (fork/exec) and prints its figures; a benchmark to read, not
 * a timed test (never run by ctest). Usage: bench_canary [tiny-steps [small-steps]]
 * (defaults 50 and 3: the small preset takes tens of seconds per step on a laptop CPU). The
 * first step of each run is warm-up and not counted. Single-threaded driver.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define CANARY_PATH CG_BINARY_DIR "/canary-train"

/* Runs canary-train with argv, leaving its stdout in out; returns the exit code or -1. */
static int run_capture(char *const argv[], char *out, size_t cap)
{
    int fds[2];
    size_t len = 0;
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execv(CANARY_PATH, argv);
        _exit(127);
    }
    close(fds[1]);
    for (;;) {
        ssize_t n = read(fds[0], out + len, cap - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
        if (len == cap - 1)
            break;
    }
    out[len] = '\0';
    close(fds[0]);
    int status = 0;
    if (waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The number after key in text, or -1. */
static double field(const char *text, const char *key)
{
    const char *p = strstr(text, key);
    if (p == NULL)
        return -1;
    char *end = NULL;
    double v = strtod(p + strlen(key), &end);
    return end == p + strlen(key) ? -1 : v;
}

static int bench_preset(const char *preset, const char *steps)
{
    static char out[1 << 16];
    char *argv[] = {"canary-train", "--device",    "cpu",         "--preset", (char *)preset,
                    "--steps",      (char *)steps, "--log-every", "1000000",  NULL};
    int rc = run_capture(argv, out, sizeof out);
    if (rc != 0) {
        fprintf(stderr, "bench_canary: canary-train --preset %s exited %d\n", preset, rc);
        return 1;
    }
    const char *done = strstr(out, "\ndone ");
    const char *runs_on = strstr(out, "runs_on=");
    if (done == NULL) {
        fprintf(stderr, "bench_canary: no summary line from canary-train --preset %s\n", preset);
        return 1;
    }
    int on_len = 0;
    if (runs_on != NULL)
        on_len = (int)strcspn(runs_on, "\n");
    printf("%-6s params=%.0f tokens_per_step=%.0f steps=%s mean_step_ms=%.2f tokens_per_s=%.0f "
           "model_gflops_per_s=%.2f %.*s\n",
           preset, field(out, "params="), field(out, "tokens_per_step="), steps,
           field(done, "mean_step_ms="), field(done, "tokens_per_s="),
           field(out, "step_flops=") / (field(done, "mean_step_ms=") * 1e6), on_len,
           runs_on != NULL ? runs_on : "");
    return 0;
}

int main(int argc, char **argv)
{
    const char *tiny_steps = argc > 1 ? argv[1] : "50";
    const char *small_steps = argc > 2 ? argv[2] : "3";
    int bad = 0;
    for (const char *p = tiny_steps; *p; p++)
        bad |= *p < '0' || *p > '9';
    for (const char *p = small_steps; *p; p++)
        bad |= *p < '0' || *p > '9';
    if (bad || argc > 3) {
        fprintf(stderr, "usage: bench_canary [tiny-steps [small-steps]]\n");
        return 2;
    }
    printf("canary-train CPU back end (%s)\n", CANARY_PATH);
    int rc = bench_preset("tiny", tiny_steps);
    rc |= bench_preset("small", small_steps);
    return rc;
}
