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
