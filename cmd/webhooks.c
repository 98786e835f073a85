/* SPDX-License-Identifier: Apache-2.0 */
/*
 * webhooks.c — starting and stopping the operator's webhook server (webhooks.h).
 */
#include "cmd/webhooks.h"

#include "cmd/webhook_certs.h"

#include "host/codec/certgen.h"
#include "host/runtime/apply.h"
#include "host/runtime/webhook/webhook_manifests.h"
#include "host/util/log.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool write_file(const char *dir, const char *name, const char *data)
{
    char path[320];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return false;
    size_t n = strlen(data);
    bool ok = write(fd, data, n) == (ssize_t)n;
    return close(fd) == 0 && ok;
}

/* luaop dev: a CA and a certificate for 127.0.0.1 in a new temporary directory. */
static lop_rc_t loopback_certs(lop_op_webhooks_t *w, lop_err_t *err)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(w->cert_dir, sizeof w->cert_dir, "%s/luaop-dev-webhook-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(w->cert_dir)) {
        w->cert_dir[0] = '\0';
        return lop_err_set(err, LOP_ERR, 0, NULL, "cannot make a temporary certificate directory: %m");
    }
    lop_cert_pair_t ca = {0}, srv = {0};
    lop_rc_t rc = lop_certgen_ca("luaop-dev-webhook-ca", 365 * 86400LL, &ca, err);
    if (rc == LOP_OK)
        rc = lop_certgen_serving(&ca, "luaop-dev-webhook", "IP:127.0.0.1,DNS:localhost", 365 * 86400LL, &srv, err);
    if (rc == LOP_OK &&
        !(write_file(w->cert_dir, "tls.crt", srv.cert_pem) && write_file(w->cert_dir, "tls.key", srv.key_pem)))
        rc = lop_err_set(err, LOP_ERR, 0, NULL, "cannot write the certificate into %s: %m", w->cert_dir);
    if (rc == LOP_OK) {
        w->ca_pem = ca.cert_pem;
        ca.cert_pem = NULL;
    }
    lop_cert_pair_free(&ca);
    lop_cert_pair_free(&srv);
    return rc;
}

typedef struct install_ctx {
    lop_op_webhooks_t *w;
    int port;
    lop_rc_t rc;
    lop_err_t *err;
} install_ctx_t;

/* One generated object into the API server: WebhookConfigurations created or replaced, the
 * CRD's spec.conversion merged into the CRD already there. */
static lop_rc_t install_one(lop_op_webhooks_t *w, json_t *doc, lop_err_t *err)
{
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    if (!kind || strcmp(kind, "CustomResourceDefinition") != 0)
        return lop_apply_object(w->rest, w->mapper, doc, NULL, &lop_clock_system, err);
    const char *name = json_string_value(json_object_get(json_object_get(doc, "metadata"), "name"));
    char path[400];
    snprintf(path, sizeof path, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/%s", name ? name : "");
    json_t *patch = json_pack("{s:O}", "spec", json_object_get(doc, "spec"));
    /* the CRD as applied may name a Service (a deployment's): the loopback url replaces it */
    json_t *cc = json_object_get(
        json_object_get(json_object_get(json_object_get(patch, "spec"), "conversion"), "webhook"), "clientConfig");
    if (json_object_get(cc, "url")) json_object_set_new(cc, "service", json_null());
    char *body = json_dumps(patch, JSON_COMPACT);
    lop_rest_resp_t resp = LOP_REST_RESP_INIT;
    lop_rc_t rc = lop_rest_do(w->rest, "PATCH", path, "application/merge-patch+json", body, strlen(body), &resp, err);
    lop_rest_resp_cleanup(&resp);
    free(body);
    json_decref(patch);
    if (rc == LOP_ENOTFOUND) { /* declared for a CRD nobody applied: nothing to convert yet */
        lop_log(LOP_LOG_WARN, "conversion webhook declared for a CustomResourceDefinition that does not exist", "crd",
                name ? name : "", NULL);
        return LOP_OK;
    }
    return rc;
}

static void install_decls(void *ud, const lop_webhook_decl_t *decls, size_t n)
{
    install_ctx_t *c = ud;
    char url[64];
    snprintf(url, sizeof url, "https://127.0.0.1:%d", c->port);
    lop_webhook_manifest_opts_t mo = {.prefix = "luaop-dev", .url = url, .ca_bundle_pem = c->w->ca_pem};
    json_t *docs = lop_webhook_manifests(decls, n, &mo);
    size_t i;
    json_t *d;
    json_array_foreach(docs, i, d)
    {
        if (c->rc == LOP_OK) c->rc = install_one(c->w, d, c->err);
    }
    json_decref(docs);
}

static lop_rc_t start_server(lop_op_webhooks_t *w, const lop_run_opts_t *o, lop_metrics_t *metrics, size_t n,
                             lop_err_t *err)
{
    if (o->webhook_loopback) {
        lop_rc_t rc = loopback_certs(w, err);
        if (rc != LOP_OK) return rc;
    }
    const char *dir = o->webhook_cert_dir;
    if (o->webhook_loopback) dir = w->cert_dir;
    if (w->certs) dir = lop_op_certs_dir(w->certs);
    lop_webhook_server_opts_t so = {.bind_addr = o->webhook_addr,
                                    .cert_dir = dir,
                                    .cert_name = w->certs ? NULL : o->webhook_cert_name,
                                    .key_name = w->certs ? NULL : o->webhook_key_name,
                                    .concurrency = o->webhook_concurrency,
                                    .metrics = metrics};
    lop_webhook_dispatch_t d = {.ud = w->pool, .admit = lop_webhook_pool_admit, .convert = lop_webhook_pool_convert};
    lop_rc_t rc = lop_webhook_server_start(&so, &d, &w->srv, err);
    if (rc != LOP_OK) {
        lop_log(LOP_LOG_ERROR, "cannot start the webhook server", "error", err->message, "hint",
                "put tls.crt and tls.key in --webhook-cert-dir (cert-manager, or the Secret of "
                "config/certmanager), use --webhook-cert-secret NS/NAME for self-managed certificates, "
                "or pass --webhook-bind-address=0 to serve no webhooks",
                NULL);
        return rc;
    }
    char port[16], num[24];
    snprintf(port, sizeof port, "%d", lop_webhook_server_port(w->srv));
    snprintf(num, sizeof num, "%zu", n);
    lop_log(LOP_LOG_INFO, "serving webhooks", "address", o->webhook_addr, "port", port, "webhooks", num, NULL);
    return LOP_OK;
}

/* The conversion webhooks' group/kind pairs to the certificate rotator (their CRDs get the CA). */
static void conversion_targets(void *ud, const lop_webhook_decl_t *decls, size_t n)
{
    const char **groups = lop_xcalloc(n + 1, sizeof *groups), **kinds = lop_xcalloc(n + 1, sizeof *kinds);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (decls[i].type != LOP_WEBHOOK_CONVERSION || !decls[i].gvk.api_version || !decls[i].gvk.kind) continue;
        groups[k] = decls[i].gvk.api_version;
        kinds[k++] = decls[i].gvk.kind;
    }
    lop_op_certs_set_crds(ud, groups, kinds, k);
    free(groups);
    free(kinds);
}

/* The generated configurations into the API server (luaop dev). */
static lop_rc_t install_loopback(lop_op_webhooks_t *w, lop_err_t *err)
{
    install_ctx_t c = {w, lop_webhook_server_port(w->srv), LOP_OK, err};
    lop_webhook_pool_declarations(w->pool, install_decls, &c);
    if (c.rc != LOP_OK)
        lop_log(LOP_LOG_ERROR, "cannot install the webhook configurations", "error", err->message, NULL);
    else {
        char url[64];
        snprintf(url, sizeof url, "https://127.0.0.1:%d", c.port);
        lop_log(LOP_LOG_INFO, "webhook configurations installed", "url", url, NULL);
    }
    return c.rc;
}

lop_rc_t lop_op_webhooks_sync(lop_op_webhooks_t *w, const lop_run_opts_t *o, lop_manager_t *m, lop_metrics_t *metrics,
                              bool leading, lop_err_t *err)
{
    if (!o->webhook_addr || strcmp(o->webhook_addr, "0") == 0) return LOP_OK;
    lop_scriptrt_t *rt = lop_manager_scriptrt(m);
    uint64_t gen = lop_scriptrt_generation(rt);
    bool gen_changed = gen != w->checked_gen;
    if (gen_changed && (!w->srv || o->webhook_loopback || w->certs)) {
        w->checked_gen = gen;
        if (!w->pool) w->pool = lop_webhook_pool_new(rt, o->webhook_concurrency);
        w->ndecls = lop_webhook_pool_declarations(w->pool, NULL, NULL);
        if (w->certs) lop_webhook_pool_declarations(w->pool, conversion_targets, w->certs);
    }
    if (w->ndecls == 0 && !w->srv) { /* (a running server keeps its certificates fresh) */
        /* nothing to serve: the VM that read the declarations goes to the first reconcile worker */
        if (w->pool) lop_webhook_pool_give_back(w->pool);
        return LOP_OK;
    }
    if (o->webhook_cert_secret && !w->certs) {
        lop_rc_t rc = lop_op_certs_new(o, w->rest, w->mapper, w->wake_fd, &w->certs, err);
        if (rc != LOP_OK) {
            lop_log(LOP_LOG_ERROR, "self-managed webhook certificates", "error", err->message, NULL);
            return rc;
        }
        lop_webhook_pool_declarations(w->pool, conversion_targets, w->certs);
    }
    bool certs_ready = w->certs ? lop_op_certs_tick(w->certs, leading) : true;
    bool started = false;
    if (!w->srv) {
        if (!certs_ready || w->start_tried_gen == gen) return LOP_OK; /* waiting for the Secret */
        lop_rc_t rc = start_server(w, o, metrics, w->ndecls, err);
        if (rc != LOP_OK) {
            w->start_tried_gen = gen; /* reported; tried again after the next reload */
            return rc;
        }
        started = true;
    }
    if (!o->webhook_loopback || w->ndecls == 0 || !(gen_changed || started)) return LOP_OK;
    return install_loopback(w, err);
}

void lop_op_webhooks_stop(lop_op_webhooks_t *w)
{
    lop_webhook_server_free(w->srv); /* joins its workers: no review uses the pool after this */
    w->srv = NULL;
    lop_op_certs_free(w->certs);
    w->certs = NULL;
    lop_webhook_pool_free(w->pool);
    w->pool = NULL;
    if (w->cert_dir[0]) {
        char path[320];
        snprintf(path, sizeof path, "%s/tls.crt", w->cert_dir);
        unlink(path);
        snprintf(path, sizeof path, "%s/tls.key", w->cert_dir);
        unlink(path);
        rmdir(w->cert_dir);
        w->cert_dir[0] = '\0';
    }
    free(w->ca_pem);
    w->ca_pem = NULL;
}
