/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cli.h — the luaop subcommands. Each takes the arguments after the subcommand name
 * (argv[0] is the subcommand) and returns the process exit status.
 */
#ifndef LOP_CMD_CLI_H
#define LOP_CMD_CLI_H

#include "host/runtime/options.h"

int lop_cmd_run(int argc, char **argv);       /* host/runtime: the operator */
int lop_cmd_dev(int argc, char **argv);       /* host/runtime: local API server + operator */
int lop_cmd_check(int argc, char **argv);     /* host/runtime: validate a script set */
int lop_cmd_apiserver(int argc, char **argv); /* apiserver/: the local API server alone */
int lop_cmd_init(int argc, char **argv);      /* cmd/scaffold.h: a new operator project */
int lop_cmd_create(int argc, char **argv);    /* cmd/scaffold.h: create api | create webhook */
int lop_cmd_types(int argc, char **argv);     /* cmd/crdtypes.h: LuaLS annotations from CRDs */

/* Apply --log-level, --log-format and --zap-time-encoding of parsed run/dev flags to the logger.
 * 0 on success, 2 (the usage exit status) on a bad value, with a message on stderr naming the
 * flag. Defined in cmd_run.c, used by `run` and `dev`. */
int lop_cli_setup_logging(const lop_run_opts_t *o);

#endif
