/* SPDX-License-Identifier: Apache-2.0 */
/* `luaop dev`: the playground — the local API server in-process, a kubeconfig for kubectl, the
 * given manifests applied (CRDs first, in file order), and the operator running against it. */
#include "apiserver/apiserver.h"
#include "host/kube/client/rest.h"
#include "host/kube/client/restmapper.h"
#include "host/runtime/apply.h"
#include "cmd/cli.h"
#include "host/runtime/manager.h"
#include "cmd/operator.h"
#include "host/util/buf.h"
#include "host/util/log.h"

#include <stdio.h>
#include <string.h>

/* --once: stop when the work is done (every queue empty, nothing in flight) for 1 s; then the
 * keys whose last reconcile failed are kept, so the exit status can say the work did not succeed
 * (a key waiting in its error backoff is not "pending", yet it is not done either). */
typedef struct once_ctx {
    int64_t idle_since;
    size_t failing;     /* keys whose last reconcile was an error when --once stopped */
    lop_buf_t failures; /* their lines, lop_manager_failing */
} once_ctx_t;

static int once_poll(void *ud, struct lop_manager *m)
{
    once_ctx_t *c = ud;
    int64_t now = lop_clock_mono(&lop_clock_system);
    if (lop_manager_pending(m) > 0) {
        c->idle_since = 0;
        return 0;
    }
    if (!c->idle_since) c->idle_since = now;
    if (now - c->idle_since < LOP_NS_PER_S) return 0;
    lop_buf_reset(&c->failures);
    c->failing = lop_manager_failing(m, &c->failures);
    return 1;
}

static int apply_all(const lop_run_opts_t *o, const char *url, lop_err_t *err)
{
    lop_rest_config_t cfg = {0};
    cfg.server = lop_xstrdup(url);
    cfg.qps = -1; /* local server: no client-side limit */
    lop_rest_client_t *rest = NULL;
    if (lop_rest_client_new(&cfg, &rest, err) != LOP_OK) {
        lop_rest_config_cleanup(&cfg);
        return 1;
    }
    lop_rest_config_cleanup(&cfg);
    lop_restmapper_t *mapper = lop_restmapper_new(rest);
    int status = 0;
    for (size_t i = 0; i < o->napply && !status; i++)
        if (lop_apply_file(rest, mapper, o->apply[i], "default", &lop_clock_system, err) != LOP_OK) status = 1;
    lop_restmapper_free(mapper);
    lop_rest_client_free(rest);
    return status;
}

int lop_cmd_dev(int argc, char **argv)
{
    lop_run_opts_t o;
    lop_run_opts_defaults(&o);
    /* A playground must not fight over :8080/:8081 with another one: loopback, kernel-picked
     * ports (logged as "http server listening ... port=N") unless the flags say otherwise. */
    o.metrics_addr = "127.0.0.1:0";
    o.probe_addr = "127.0.0.1:0";
    o.webhook_addr = "127.0.0.1:0"; /* webhooks on loopback, certificates made at start, configurations */
    o.webhook_loopback = true;      /* installed in the embedded API server (cmd/webhooks.h) */
    int rc = lop_run_opts_parse(&o, argc, argv, true);
    if (rc) return rc == 1 ? 0 : rc;
    if ((rc = lop_cli_setup_logging(&o))) return rc;
    lop_operator_block_signals();
    lop_apiserver_opts_t ao = {.listen = o.listen, .kubeconfig_out = o.kubeconfig_out};
    lop_apiserver_t *srv = NULL;
    lop_err_t err;
    lop_err_clear(&err);
    if (lop_apiserver_start(&ao, &srv, &err) != LOP_OK) {
        fprintf(stderr, "luaop dev: cannot start the local API server: %s\n", err.message);
        return 1;
    }
    const char *url = lop_apiserver_url(srv);
    lop_log(LOP_LOG_INFO, "local API server (not for production) listening", "url", url, "kubeconfig",
            o.kubeconfig_out ? o.kubeconfig_out : "(none: pass --kubeconfig-out)", NULL);
    printf("listening on %s\n", url);
    fflush(stdout);
    if (apply_all(&o, url, &err) != 0) {
        fprintf(stderr, "luaop dev: %s\n", err.message);
        lop_apiserver_stop(srv);
        return 1;
    }
    lop_rest_config_t cfg = {0};
    cfg.server = lop_xstrdup(url);
    once_ctx_t once = {0};
    lop_buf_init(&once.failures);
    rc = lop_operator_main(&o, &cfg, o.exit_after_apply ? once_poll : NULL, &once);
    lop_rest_config_cleanup(&cfg);
    lop_apiserver_stop(srv);
    if (rc == 0 && once.failing > 0) {
        /* A CI gate: the work went idle, but these keys still fail (their last result). */
        fprintf(stderr, "luaop dev --once: %zu key(s) whose last reconcile failed:\n%s", once.failing,
                once.failures.data ? once.failures.data : "");
        rc = 1;
    }
    lop_buf_free(&once.failures);
    return rc;
}
