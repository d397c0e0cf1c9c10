#include "cmd.h"
int cmd_compare(int argc, char **argv) { (void)argc; (void)argv; return 3; }
int cmd_merge(int argc, char **argv) { (void)argc; (void)argv; return 3; }
int cmd_show(int argc, char **argv) { (void)argc; (void)argv; return 3; }
