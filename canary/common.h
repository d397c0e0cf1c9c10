/*
 * common: the error type, error codes and exit codes shared by every canary-train module.
 *
 * Modules never print or exit: a function that can fail returns 0 or a negative CANARY_E* code
 * and fills a struct canary_err with a one-line message (lowercase, no final period) that
 * main.c prints after "canary-train: ". main.c alone maps codes to the exit codes below, which
 * docs/canary.md documents. Also holds the OpenMP pragma helpers, which expand to nothing when
 * the compiler has no OpenMP. Thread-safety: a struct canary_err belongs to its caller.
 * Included from C and from the CUDA (C++) back end.
 */
#ifndef CANARY_COMMON_H
#define CANARY_COMMON_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum canary_code {
    CANARY_OK = 0,
    CANARY_EUSAGE = -1,     /* bad command line or impossible sizes: exit 2 */
    CANARY_ENOMEM = -2,     /* an allocation failed (host or device): exit 3 */
    CANARY_ERUNTIME = -3,   /* a CUDA, cuBLAS or other run-time failure: exit 3 */
    CANARY_ENODEVICE = -4,  /* --device cuda but no usable CUDA device or no CUDA build: exit 4 */
    CANARY_ENONFINITE = -5, /* the training loss became NaN or infinite: exit 5 */
    CANARY_EGRADCHECK = -6  /* --gradcheck found an error above tolerance: exit 6 */
};

/* Exit codes of canary-train (documented in docs/canary.md). */
enum canary_exit {
    CANARY_EXIT_OK = 0,
    CANARY_EXIT_USAGE = 2,
    CANARY_EXIT_RUNTIME = 3,
    CANARY_EXIT_NODEVICE = 4,
    CANARY_EXIT_NONFINITE = 5,
    CANARY_EXIT_GRADCHECK = 6
};

#define CANARY_ERR_MSG_MAX 256

struct canary_err {
    int code;
    char msg[CANARY_ERR_MSG_MAX];
};

/* Clears err (code 0, empty message). */
void canary_err_init(struct canary_err *err);

/* Sets err's code and printf-style message (truncated to fit) and returns code; err may be NULL. */
int canary_err_set(struct canary_err *err, int code, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Maps a CANARY_E* code to the process exit code (enum canary_exit). */
int canary_exit_code(int code);

#ifdef __cplusplus
}
#endif

/* OpenMP work sharing that compiles to plain loops without OpenMP (no unknown-pragma warnings). */
#ifdef _OPENMP
#define CANARY_OMP_FOR _Pragma("omp parallel for schedule(static)")
#else
#define CANARY_OMP_FOR
#endif

#endif
