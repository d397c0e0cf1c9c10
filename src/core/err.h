/*
 * err: error codes and one-line messages shared by every module.
 *
 * Modules never print or exit. A function that can fail returns 0 or a negative CG_E* code and
 * fills a struct cg_err with a message ready to print after "canary-gate: ", lowercase, the
 * subject quoted, no final period. The command layer (cmd_*.c) maps codes to exit codes
 * (src/cli/cmd.h). Thread-safety: a struct cg_err belongs to its caller.
 */
#ifndef CG_ERR_H
#define CG_ERR_H

#include <stddef.h>

enum cg_code {
    CG_OK = 0,
    CG_EINPUT = -1,   /* an input file or value is invalid: exit 2 */
    CG_EUSAGE = -2,   /* bad command line: exit 2 */
    CG_EIO = -3,      /* reading or writing a file failed at run time: exit 3 */
    CG_ENOMEM = -4,   /* out of memory or a size cap was reached: exit 3 */
    CG_ECANARY = -5,  /* the canary failed, timed out or measured too little: exit 3 */
    CG_ENET = -6,     /* an HTTP request failed: exit 3 */
    CG_EINTERNAL = -7 /* a bug: exit 3 */
};

#define CG_ERR_MSG_MAX 512

struct cg_err {
    int code;
    char msg[CG_ERR_MSG_MAX];
};

/* Clears err (code 0, empty message). */
void cg_err_init(struct cg_err *err);

/* Sets err's code and printf-style message (truncated to fit) and returns code. err may be NULL. */
int cg_err_set(struct cg_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
