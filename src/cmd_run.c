/* cmd_run: placeholder until the 'run' command is implemented; it refuses to run. */
#include "cmd.h"

#include <stdio.h>

int cmd_run(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "canary-gate run: not implemented in this build\n");
    return CG_EXIT_RUNTIME;
}
