/*
 * changepoint_harness: the change-point code driven from standard input, for
 * tests/python/test_changepoint_reference.py, which checks it against the definition. One
 * request per line, numbers as decimal text:
 *   scan MIN_SEGMENT X...                          -> "best TAU" then "q TAU Q" for each split
 *   detect MIN_SEGMENT ALPHA PERMUTATIONS SEED X... -> "point INDEX P Q START END", then "end"
 * Doubles are printed with 17 significant digits. Exits 0, or 2 on a malformed request.
 */
#include "changepoint.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_VALUES 4096

static int parse_doubles(char *s, double *v, size_t cap, size_t *n)
{
    *n = 0;
    for (char *tok = strtok(s, " \t\n"); tok != NULL; tok = strtok(NULL, " \t\n")) {
        char *end;
        errno = 0;
        double d = strtod(tok, &end);
        if (*end != '\0' || errno != 0 || *n == cap)
            return -1;
        v[(*n)++] = d;
    }
    return 0;
}

static int scan(double *v, size_t n)
{
    static double q[MAX_VALUES];
    size_t best;
    if (n < 1 || v[0] < 2 || cg_cp_scan(v + 1, n - 1, (size_t)v[0], q, &best) != 0)
        return -1;
    printf("best %zu\n", best);
    for (size_t t = 0; t < n - 1; t++) {
        if (q[t] == q[t]) /* not NAN */
            printf("q %zu %.17g\n", t, q[t]);
    }
    return 0;
}

static int detect(double *v, size_t n)
{
    struct cg_changepoint cp[64];
    struct cg_cp_options o;
    size_t got;
    if (n < 4)
        return -1;
    cg_cp_defaults(&o);
    o.min_segment = (size_t)v[0];
    o.alpha = v[1];
    o.permutations = (int)v[2];
    o.seed = (uint64_t)v[3];
    if (cg_cp_detect(v + 4, n - 4, &o, cp, 64, &got) != 0)
        return -1;
    for (size_t k = 0; k < got; k++)
        printf("point %zu %.17g %.17g %zu %zu\n", cp[k].index, cp[k].p_value, cp[k].q,
               cp[k].segment_start, cp[k].segment_end);
    printf("end\n");
    return 0;
}

int main(void)
{
    static char line[1 << 17];
    static double v[MAX_VALUES];
    while (fgets(line, sizeof(line), stdin) != NULL) {
        size_t n;
        char *rest = strchr(line, ' ');
        if (rest == NULL || strchr(line, '\n') == NULL)
            return 2;
        *rest++ = '\0';
        if (parse_doubles(rest, v, MAX_VALUES, &n) != 0)
            return 2;
        int rc = strcmp(line, "scan") == 0     ? scan(v, n)
                 : strcmp(line, "detect") == 0 ? detect(v, n)
                                               : -1;
        if (rc != 0)
            return 2;
        fflush(stdout);
    }
    return 0;
}
