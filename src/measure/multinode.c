/*
 * multinode: launchers that place ranks on other nodes, read from the canary's words (see
 * multinode.h). Pure.
 */
#include "multinode.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *base_name(const char *w)
{
    const char *s = strrchr(w, '/');
    return s != NULL ? s + 1 : w;
}

/* The node count of a --nnodes value "N" or "MIN:MAX" (its MAX), -1 when it is not one. */
static long nnodes_value(const char *v)
{
    const char *colon = strchr(v, ':');
    const char *n = colon != NULL ? colon + 1 : v;
    char *end = NULL;
    if (*n < '0' || *n > '9')
        return -1;
    errno = 0;
    long k = strtol(n, &end, 10);
    return errno == 0 && *end == '\0' ? k : -1;
}

/* The --nnodes of the words after a torchrun word, -1 when none is given. */
static long torchrun_nnodes(char *const *argv)
{
    for (size_t i = 0; argv[i] != NULL; i++) {
        const char *w = argv[i];
        if (strncmp(w, "--nnodes=", 9) == 0)
            return nnodes_value(w + 9);
        if (strcmp(w, "--nnodes") == 0)
            return argv[i + 1] != NULL ? nnodes_value(argv[i + 1]) : -1;
    }
    return -1;
}

bool cg_multinode_launcher(char *const *argv, char *buf, size_t cap)
{
    static const char *const launchers[] = {"srun", "sbatch", "mpirun", "mpiexec"};
    for (size_t i = 0; argv != NULL && argv[i] != NULL; i++) {
        const char *b = base_name(argv[i]);
        for (size_t k = 0; k < sizeof(launchers) / sizeof(launchers[0]); k++)
            if (strcmp(b, launchers[k]) == 0) {
                snprintf(buf, cap, "%s", launchers[k]);
                return true;
            }
        if (strcmp(b, "torchrun") == 0 || strcmp(b, "torch.distributed.run") == 0) {
            long n = torchrun_nnodes(argv + i + 1);
            if (n > 1) {
                snprintf(buf, cap, "torchrun --nnodes %ld", n);
                return true;
            }
        }
    }
    return false;
}

bool cg_multinode_is_sbatch(char *const *argv)
{
    for (size_t i = 0; argv != NULL && argv[i] != NULL; i++)
        if (strcmp(base_name(argv[i]), "sbatch") == 0)
            return true;
    return false;
}
