/* SPDX-License-Identifier: Apache-2.0 */
/*
 * webhooks.h — the operator's webhook server (host/runtime/webhook/): started when the active
 * script set declares op.webhook.*, on every replica (admission is not leader-gated, as in
 * controller-runtime, so any replica the Service picks answers), over a pool of VMs of its own.
 *
 * lop_op_webhooks_sync is called after the first script set is active and after every reload:
 * the first set that declares webhooks starts the server (a later reload that drops them keeps
 * it running: its paths then answer 404, and a set that brings them back is served at once).
 * With o->webhook_loopback (`luaop dev`): the server gets a certificate from a CA made at
 * start (host/codec/certgen.h) in a temporary directory, and once it listens the generated
 * WebhookConfigurations (clientConfig.url = https://127.0.0.1:<port><path>, the CA as caBundle)
 * and CRD conversion stanzas are written to the API server through w->rest, so the local API
 * server calls the Lua webhooks on `kubectl apply`. They are written again after each reload that
 * changes the declarations.
 * With o->webhook_cert_secret (self-managed certificates, cmd/webhook_certs.h): the server serves
 * the pair from that Secret, projected into a temporary directory; it starts once the Secret holds
 * one (the leader creates it, so a standby waits for it), and `leading` says whether this replica
 * runs the rotator and the caBundle injection.
 * Main thread only.
 */
#ifndef LOP_CMD_WEBHOOKS_H
#define LOP_CMD_WEBHOOKS_H

#include "host/kube/client/rest.h"
#include "host/kube/client/restmapper.h"
#include "host/runtime/manager.h"
#include "host/runtime/metrics/metrics.h"
#include "host/runtime/options.h"
#include "host/runtime/webhook/webhook_pool.h"
#include "host/runtime/webhook/webhook_server.h"

typedef struct lop_op_webhooks {
    lop_webhook_pool_t *pool;
    lop_webhook_server_t *srv;
    uint64_t checked_gen;    /* the script generation last looked at */
    lop_rest_client_t *rest; /* o->webhook_loopback: where the configurations are installed */
    lop_restmapper_t *mapper;
    char cert_dir[256];         /* o->webhook_loopback: the temporary cert dir ("" = none) */
    char *ca_pem;               /* o->webhook_loopback: its CA */
    int wake_fd;                /* the main loop's wake-up (the certificate Secret's watch writes it); -1 none */
    struct lop_op_certs *certs; /* o->webhook_cert_secret: self-managed certificates */
    size_t ndecls;              /* declarations of the set last looked at */
    uint64_t start_tried_gen;   /* the generation a failed start was reported for */
} lop_op_webhooks_t;

/* Start the server if the active set declares webhooks and it is not running yet. LOP_OK when
 * nothing had to be done, it started, or --webhook-bind-address is 0; else the error (logged),
 * e.g. the certificate files are missing: fatal at start-up, reported again after a reload. */
lop_rc_t lop_op_webhooks_sync(lop_op_webhooks_t *w, const lop_run_opts_t *o, lop_manager_t *m, lop_metrics_t *metrics,
                              bool leading, lop_err_t *err);

/* Stop the server (reviews in a VM finish) and free the pool. Idempotent. */
void lop_op_webhooks_stop(lop_op_webhooks_t *w);

#endif
