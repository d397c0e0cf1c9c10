/*
 * atexit_probe: an LD_PRELOAD library for test_inject_standin that makes an exit-handler
 * registration from any thread but the main one take CG_PROBE_ATEXIT_MS milliseconds, and logs
 * into CG_STANDIN_LOG when such a registration begins and ends and when the process forks
 * ("PID atexit begins", "PID atexit ends", "PID forked"). glibc's list of exit handlers has a
 * lock that fork does not reset: a fork while another thread is registering a handler leaves a
 * child that hangs in exit(). The probe cannot hold glibc's lock; it widens the window in which
 * a registration is under way so that a test can see whether the injection library keeps forks
 * out of it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))

static const char *g_log;
static long g_delay_ms;

static void say(const char *event)
{
    if (g_log == NULL)
        return;
    char line[128];
    int n = snprintf(line, sizeof(line), "%ld %s\n", (long)getpid(), event);
    int fd = open(g_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0 || n <= 0)
        return;
    ssize_t w = write(fd, line, (size_t)n);
    (void)w;
    close(fd);
}

static void forked(void)
{
    say("forked");
}

__attribute__((constructor)) static void probe_load(void)
{
    g_log = getenv("CG_STANDIN_LOG");
    const char *ms = getenv("CG_PROBE_ATEXIT_MS");
    g_delay_ms = ms != NULL ? strtol(ms, NULL, 10) : 0;
    pthread_atfork(NULL, forked, NULL);
}

API int __cxa_atexit(void (*fn)(void *), void *arg, void *dso);

int __cxa_atexit(void (*fn)(void *), void *arg, void *dso)
{
    static int (*real)(void (*)(void *), void *, void *);
    if (real == NULL)
        *(void **)&real = dlsym(RTLD_NEXT, "__cxa_atexit");
    bool off_main = syscall(SYS_gettid) != getpid();
    if (off_main && g_delay_ms > 0) {
        say("atexit begins");
        struct timespec t = {g_delay_ms / 1000, (g_delay_ms % 1000) * 1000000L};
        nanosleep(&t, NULL);
    }
    int r = real(fn, arg, dso);
    if (off_main && g_delay_ms > 0)
        say("atexit ends");
    return r;
}
