/*
 * cuda_standin: a stand-in for the CUDA driver library, built with its soname (libcuda.so.1), for
 * the injection library's tests on machines without a GPU. A test canary loads it with
 * RTLD_LOCAL before the library starts, as a process whose CUDA runtime opened the driver
 * privately would have it: its symbols are not in the global scope, so the library finds them
 * only through the handle of the libcuda already loaded.
 *
 * It exports the four driver calls the library makes: cuDriverGetVersion (13.0),
 * cuCtxGetCurrent (a made-up context, device 0's, is current on the thread that loaded it, none
 * elsewhere), cuCtxSetCurrent and cuCtxSynchronize. Context calls are logged to CG_STANDIN_LOG as
 * "PID EVENT" lines ("sync ctx" when device 0's context was current on the synchronising thread,
 * "sync ctx 1" when device 1's was, else "sync no-ctx"). A synchronisation is also told to the
 * stand-in libcupti when it is loaded (its cg_standin_context_synchronized: device 1's kernels
 * complete then). For the stand-in libcupti, cg_standin_cuda_context(D) gives device D's context
 * (0 or 1), which it reports as created. It proves which calls the library makes and where;
 * nothing about a real driver.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))

static int g_context_token, g_context_token1; /* device 0's and device 1's contexts */
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
API void *cg_standin_cuda_context(int device);

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
    void *ctx = current();
    say(ctx == &g_context_token    ? "sync ctx"
        : ctx == &g_context_token1 ? "sync ctx 1"
                                   : "sync no-ctx");
    if (ctx == NULL)
        return 201; /* CUDA_ERROR_INVALID_CONTEXT */
    void *cupti = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
    void *sym = cupti != NULL ? dlsym(cupti, "cg_standin_context_synchronized") : NULL;
    void (*synchronized)(void *) = NULL;
    memcpy(&synchronized, &sym, sizeof(synchronized)); /* POSIX: a data pointer converts */
    if (synchronized != NULL)
        synchronized(ctx);
    return 0;
}

void *cg_standin_cuda_context(int device)
{
    return device == 0 ? (void *)&g_context_token : device == 1 ? (void *)&g_context_token1 : NULL;
}
