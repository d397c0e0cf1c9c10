/* common: error helpers and the code-to-exit-code map of canary-train (see common.h). */
#include "common.h"

#include <stdarg.h>
#include <stdio.h>

void canary_err_init(struct canary_err *err)
{
    err->code = 0;
    err->msg[0] = '\0';
}

int canary_err_set(struct canary_err *err, int code, const char *fmt, ...)
{
    if (err == NULL)
        return code;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    if (n < 0)
        err->msg[0] = '\0';
    err->code = code;
    return code;
}

int canary_exit_code(int code)
{
    switch (code) {
    case CANARY_OK:
        return CANARY_EXIT_OK;
    case CANARY_EUSAGE:
        return CANARY_EXIT_USAGE;
    case CANARY_ENODEVICE:
        return CANARY_EXIT_NODEVICE;
    case CANARY_ENONFINITE:
        return CANARY_EXIT_NONFINITE;
    case CANARY_EGRADCHECK:
        return CANARY_EXIT_GRADCHECK;
    default:
        return CANARY_EXIT_RUNTIME;
    }
}
