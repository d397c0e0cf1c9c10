/*
 * cuda_loader: finds and loads the CUDA back end at run time (see backend.h). First a light
 * driver check — libcuda.so.1 via dlopen, cuInit, cuDeviceGetCount — then, only when a device
 * exists, the module libcanary-train-cuda.so (cuBLAS, cudart and our kernels) from beside the
 * executable or from ../lib/canary-gate. CPU runs therefore never map the CUDA libraries
 * (which alone would lift peak RSS by ~200 MB and hide the mem-bloat variant), and the binary
 * runs on machines without them. The module stays loaded for the life of the process.
 * Called once from the main thread.
 */
#include "backend.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const struct canary_backend_ops *loaded_ops;

const struct canary_backend_ops *canary_cuda_ops(void)
{
    return loaded_ops;
}

#ifndef CANARY_CUDA_MODULE_FILE

int canary_cuda_probe(char *why, size_t why_size)
{
    snprintf(why, why_size, "this canary-train was built without CUDA (no nvcc)");
    return 0;
}

#else

typedef int (*cu_init_fn)(unsigned int flags);
typedef int (*cu_device_count_fn)(int *count);

/* dlsym for a function (ISO C has no object-to-function pointer cast; copy the bits). */
static int function_symbol(void *lib, const char *name, void *fn, size_t fn_size)
{
    void *sym = dlsym(lib, name);
    if (sym == NULL || fn_size != sizeof sym)
        return -1;
    memcpy(fn, &sym, fn_size);
    return 0;
}

static int driver_has_device(char *why, size_t why_size)
{
    void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    cu_init_fn cu_init = NULL;
    cu_device_count_fn cu_count = NULL;
    int count = 0, rc = 0;
    if (drv == NULL) {
        snprintf(why, why_size, "no CUDA driver (libcuda.so.1 not found)");
        return 0;
    }
    if (function_symbol(drv, "cuInit", &cu_init, sizeof cu_init) != 0 ||
        function_symbol(drv, "cuDeviceGetCount", &cu_count, sizeof cu_count) != 0) {
        snprintf(why, why_size, "libcuda.so.1 lacks cuInit or cuDeviceGetCount");
        return 0;
    }
    rc = cu_init(0);
    if (rc != 0) {
        snprintf(why, why_size, "cuInit failed (CUresult %d)", rc);
        return 0;
    }
    rc = cu_count(&count);
    if (rc != 0 || count < 1) {
        snprintf(why, why_size, "the CUDA driver reports no device");
        return 0;
    }
    return 1; /* the driver stays loaded: the module needs it next */
}

/* Writes the directory of the running executable into dir; 0 or -1. */
static int exe_dir(char *dir, size_t size)
{
    ssize_t n = readlink("/proc/self/exe", dir, size - 1);
    if (n <= 0 || (size_t)n >= size - 1)
        return -1;
    dir[n] = '\0';
    char *slash = strrchr(dir, '/');
    if (slash == NULL)
        return -1;
    *slash = '\0';
    return 0;
}

static void *load_module(char *why, size_t why_size)
{
    char dir[PATH_MAX], path[PATH_MAX + 64];
    static const char *const places[] = {"%s/" CANARY_CUDA_MODULE_FILE,
                                         "%s/../lib/canary-gate/" CANARY_CUDA_MODULE_FILE};
    const char *first_error = NULL;
    if (exe_dir(dir, sizeof dir) != 0) {
        snprintf(why, why_size, "cannot find the canary-train executable's directory");
        return NULL;
    }
    for (size_t i = 0; i < sizeof places / sizeof places[0]; i++) {
        int n = snprintf(path, sizeof path, places[i], dir);
        if (n < 0 || (size_t)n >= sizeof path)
            continue;
        if (access(path, R_OK) != 0)
            continue;
        void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (lib != NULL)
            return lib;
        first_error = first_error != NULL ? first_error : dlerror();
    }
    if (first_error != NULL)
        snprintf(why, why_size, "cannot load the CUDA back end: %s", first_error);
    else
        snprintf(why, why_size,
                 "the CUDA back end module " CANARY_CUDA_MODULE_FILE
                 " is not installed beside canary-train");
    return NULL;
}

int canary_cuda_probe(char *why, size_t why_size)
{
    canary_cuda_module_probe_fn probe = NULL;
    if (loaded_ops != NULL)
        return 1;
    if (!driver_has_device(why, why_size))
        return 0;
    void *lib = load_module(why, why_size);
    if (lib == NULL)
        return 0;
    const struct canary_backend_ops *ops = dlsym(lib, CANARY_CUDA_MODULE_OPS);
    if (ops == NULL || function_symbol(lib, CANARY_CUDA_MODULE_PROBE, &probe, sizeof probe) != 0) {
        snprintf(why, why_size, "the CUDA back end module lacks its entry points");
        return 0;
    }
    if (!probe(why, why_size))
        return 0;
    loaded_ops = ops;
    return 1;
}

#endif
