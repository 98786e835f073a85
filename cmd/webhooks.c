/*
 * webhooks.c — starting and stopping the operator's webhook server (webhooks.h).
 */
#include "cmd/webhooks.h"

#include "host/util/log.h"

#include <stdio.h>
#include <string.h>

static size_t count(lop_webhook_pool_t *pool) { return lop_webhook_pool_each(pool, NULL, NULL); }

lop_rc_t lop_op_webhooks_sync(lop_op_webhooks_t *w, const lop_run_opts_t *o, lop_manager_t *m, lop_metrics_t *metrics,
                              lop_err_t *err)
{
    lop_scriptrt_t *rt = lop_manager_scriptrt(m);
    uint64_t gen = lop_scriptrt_generation(rt);
    if (w->srv || gen == w->checked_gen || !o->webhook_addr || strcmp(o->webhook_addr, "0") == 0) return LOP_OK;
    w->checked_gen = gen;
    if (!w->pool) w->pool = lop_webhook_pool_new(rt, o->webhook_concurrency);
    size_t n = count(w->pool);
    if (n == 0) return LOP_OK;
    lop_webhook_server_opts_t so = {.bind_addr = o->webhook_addr,
                                    .cert_dir = o->webhook_cert_dir,
                                    .cert_name = o->webhook_cert_name,
                                    .key_name = o->webhook_key_name,
                                    .concurrency = o->webhook_concurrency,
                                    .metrics = metrics};
    lop_webhook_dispatch_t d = {.ud = w->pool, .admit = lop_webhook_pool_admit, .convert = lop_webhook_pool_convert};
    lop_rc_t rc = lop_webhook_server_start(&so, &d, &w->srv, err);
    if (rc != LOP_OK) {
        lop_log(LOP_LOG_ERROR, "cannot start the webhook server", "error", err->message, "hint",
                "put tls.crt and tls.key in --webhook-cert-dir (cert-manager, or the Secret of "
                "config/certmanager), or pass --webhook-bind-address=0 to serve no webhooks",
                NULL);
        return rc;
    }
    char port[16], num[24];
    snprintf(port, sizeof port, "%d", lop_webhook_server_port(w->srv));
    snprintf(num, sizeof num, "%zu", n);
    lop_log(LOP_LOG_INFO, "serving webhooks", "address", o->webhook_addr, "port", port, "webhooks", num, NULL);
    return LOP_OK;
}

void lop_op_webhooks_stop(lop_op_webhooks_t *w)
{
    lop_webhook_server_free(w->srv); /* joins its workers: no review uses the pool after this */
    w->srv = NULL;
    lop_webhook_pool_free(w->pool);
    w->pool = NULL;
}
