/* cmd_comment: placeholder until the 'comment' command is implemented; it refuses to run. */
#include "cmd.h"

#include <stdio.h>

int cmd_comment(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "canary-gate comment: not implemented in this build\n");
    return CG_EXIT_RUNTIME;
}
