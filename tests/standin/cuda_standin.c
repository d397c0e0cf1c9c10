/*
 * cuda_standin: a stand-in for the CUDA driver library, built with its soname (libcuda.so.1), for
 * the injection library's tests on machines without a GPU. A test canary loads it with
 * RTLD_LOCAL before the library starts, as a process whose CUDA runtime opened the driver
 * privately would have it: its symbols are not in the global scope, so the library finds them
 * only through the handle of the libcuda already loaded.
 *
 * It exports the four driver calls the library makes: cuDriverGetVersion (13.0),
 * cuCtxGetCurrent (a made-up context is current on the thread that loaded it, none elsewhere),
 * cuCtxSetCurrent and cuCtxSynchronize. Context calls are logged to CG_STANDIN_LOG as "PID EVENT"
 * lines ("sync ctx" when the made-up context was current on the synchronising thread, else
 * "sync no-ctx"). It proves which calls the library makes and where; nothing about a real
 * driver.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))

static int g_context_token;
static pthread_t g_loader;
static _Thread_local void *t_current;
static _Thread_local bool t_set;

static void say(const char *event)
{
    const char *log = getenv("CG_STANDIN_LOG");
    if (log == NULL)
        return;
    char line[128];
    int n = snprintf(line, sizeof(line), "%ld %s\n", (long)getpid(), event);
    if (n <= 0 || (size_t)n >= sizeof(line))
        return;
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    ssize_t w = write(fd, line, (size_t)n);
    (void)w;
    close(fd);
}

__attribute__((constructor)) static void standin_load(void)
{
    g_loader = pthread_self();
}

static void *current(void)
{
    if (!t_set && pthread_equal(pthread_self(), g_loader))
        return &g_context_token;
    return t_current;
}

API int cuDriverGetVersion(int *version);
API int cuCtxGetCurrent(void **ctx);
API int cuCtxSetCurrent(void *ctx);
API int cuCtxSynchronize(void);

int cuDriverGetVersion(int *version)
{
    *version = 13000;
    return 0;
}

int cuCtxGetCurrent(void **ctx)
{
    *ctx = current();
    return 0;
}

int cuCtxSetCurrent(void *ctx)
{
    t_set = true;
    t_current = ctx;
    return 0;
}

int cuCtxSynchronize(void)
{
    say(current() == &g_context_token ? "sync ctx" : "sync no-ctx");
    return current() != NULL ? 0 : 201; /* CUDA_ERROR_INVALID_CONTEXT */
}
