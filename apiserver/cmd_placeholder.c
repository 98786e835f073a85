/* Placeholder for `luaop apiserver` until apiserver/ implements it (issue 2). */
#include "host/runtime/cli.h"

#include <stdio.h>

int lop_cmd_apiserver(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "luaop apiserver: not implemented in this build yet\n");
    return 2;
}
