/*
 * cli.h — the luaop subcommands. Each takes the arguments after the subcommand name
 * (argv[0] is the subcommand) and returns the process exit status.
 */
#ifndef LOP_CMD_CLI_H
#define LOP_CMD_CLI_H

int lop_cmd_run(int argc, char **argv);       /* host/runtime: the operator */
int lop_cmd_dev(int argc, char **argv);       /* host/runtime: local API server + operator */
int lop_cmd_check(int argc, char **argv);     /* host/runtime: validate a script set */
int lop_cmd_apiserver(int argc, char **argv); /* apiserver/: the local API server alone */

#endif
