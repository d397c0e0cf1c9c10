/* err: error codes and one-line messages (see err.h). */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>

void cg_err_init(struct cg_err *err)
{
    err->code = 0;
    err->msg[0] = '\0';
}

int cg_err_set(struct cg_err *err, int code, const char *fmt, ...)
{
    if (err == NULL)
        return code;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    if (n < 0)
        err->msg[0] = '\0';
    err->code = code;
    return code;
}

int cg_exit_code(int code)
{
    switch (code) {
    case CG_OK:
        return CG_EXIT_PASS;
    case CG_EINPUT:
    case CG_EUSAGE:
        return CG_EXIT_INPUT;
    default:
        return CG_EXIT_RUNTIME;
    }
}
