/* cmd_util: helpers shared by the cmd_*.c files for messages and option values. */
#include "cmd.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cg_cmd_fail(const struct cg_err *err)
{
    fprintf(stderr, "canary-gate: %s\n", err->msg[0] ? err->msg : "unknown error");
    return cg_exit_code(err->code);
}

int cg_cmd_usage_error(const char *verb, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "canary-gate %s: ", verb);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see 'canary-gate %s --help')\n", verb);
    return CG_EXIT_INPUT;
}

int cg_cmd_option_error(const char *verb, int opt, char *const *argv)
{
    char name[64];
    const char *arg = optind > 0 ? argv[optind - 1] : NULL;
    if (arg != NULL && strncmp(arg, "--", 2) == 0)
        snprintf(name, sizeof(name), "%.*s", (int)strcspn(arg, "="), arg);
    else if (optopt > 0 && optopt < 128)
        snprintf(name, sizeof(name), "-%c", optopt);
    else
        snprintf(name, sizeof(name), "%s", arg != NULL ? arg : "?");
    if (opt == ':')
        return cg_cmd_usage_error(verb, "'%s' needs a value", name);
    return cg_cmd_usage_error(verb, "unknown option '%s'", name);
}

int cg_cmd_parse_count(const char *verb, const char *opt, const char *value, long min, long max,
                       long *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (errno != 0 || end == value || *end != '\0' || v < min || v > max)
        return cg_cmd_usage_error(verb, "%s '%s': expected an integer from %ld to %ld", opt, value,
                                  min, max);
    *out = v;
    return 0;
}
