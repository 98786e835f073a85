/* SPDX-License-Identifier: Apache-2.0 */
/* `luaop run`: the operator against a cluster (kubeconfig or in-cluster). */
#include "cmd/cli.h"
#include "cmd/operator.h"
#include "host/util/log.h"

#include <stdio.h>

int lop_cli_setup_logging(const lop_run_opts_t *o)
{
    lop_log_level_t level;
    lop_log_format_t format;
    if (lop_log_level_parse(o->log_level, &level) != 0) {
        fprintf(stderr, "luaop: invalid --log-level \"%s\" (debug, info, warn, error)\n", o->log_level);
        return 2;
    }
    if (lop_log_format_parse(o->log_format, &format) != 0) {
        fprintf(stderr, "luaop: invalid --log-format \"%s\" (text, json)\n", o->log_format);
        return 2;
    }
    lop_log_time_t t;
    if (lop_log_time_parse(o->log_time, &t) != 0) {
        fprintf(stderr, "luaop: invalid --zap-time-encoding \"%s\"\n", o->log_time);
        return 2;
    }
    lop_log_setup(level, format);
    lop_log_setup_time(t);
    return 0;
}

int lop_cmd_run(int argc, char **argv)
{
    lop_run_opts_t o;
    lop_run_opts_defaults(&o);
    int rc = lop_run_opts_parse(&o, argc, argv, false);
    if (rc) return rc == 1 ? 0 : rc;
    if ((rc = lop_cli_setup_logging(&o))) return rc;
    if (!o.scripts_dir && !o.scripts_configmap) { /* before the kubeconfig: the first thing to fix */
        fprintf(stderr, "luaop: --scripts DIR (or --scripts-configmap NS/NAME) is required\n");
        return 2;
    }
    lop_operator_block_signals();
    lop_kubeconfig_opts_t ko = {.path = o.kubeconfig, .context = o.context};
    lop_rest_config_t cfg = {0};
    lop_err_t err;
    lop_err_clear(&err);
    if (lop_kubeconfig_load(&ko, &cfg, &err) != LOP_OK) {
        fprintf(stderr, "luaop run: %s\n", err.message);
        return 1;
    }
    lop_log(LOP_LOG_INFO, "connecting", "server", cfg.server, "source", cfg.source, NULL);
    rc = lop_operator_main(&o, &cfg, NULL, NULL);
    lop_rest_config_cleanup(&cfg);
    return rc;
}
