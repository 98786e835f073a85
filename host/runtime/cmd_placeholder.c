/* Placeholders for the operator subcommands until host/runtime implements them (issue 3). */
#include "host/runtime/cli.h"

#include <stdio.h>

static int not_yet(const char *name)
{
    fprintf(stderr, "luaop %s: not implemented in this build yet\n", name);
    return 2;
}

int lop_cmd_run(int argc, char **argv) { (void)argc; (void)argv; return not_yet("run"); }
int lop_cmd_dev(int argc, char **argv) { (void)argc; (void)argv; return not_yet("dev"); }
int lop_cmd_check(int argc, char **argv) { (void)argc; (void)argv; return not_yet("check"); }
