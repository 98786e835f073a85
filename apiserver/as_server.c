/* SPDX-License-Identifier: Apache-2.0 */
/* as_server.c — server lifecycle: listening socket, the loop thread, the cross-thread command
 * queue, the fault-injection C API (queued to the loop) and kubeconfig output. */
#include "apiserver/as_internal.h"

#include "apiserver/as_authn.h"
#include "apiserver/as_fault.h"
#include "apiserver/as_http.h"
#include "apiserver/as_registry.h"
#include "apiserver/as_state.h"
#include "apiserver/as_store.h"
#include "apiserver/as_tls.h"
#include "apiserver/as_watch.h"
#include "host/util/base64.h"

#include "host/util/log.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/thread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>

/* ---- command queue ---- */

static void cmd_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    lop_apiserver_t *srv = arg;
    pthread_mutex_lock(&srv->mu);
    while (srv->cmds) {
        as_cmd_t *c = srv->cmds;
        srv->cmds = c->next;
        pthread_mutex_unlock(&srv->mu);
        c->fn(srv, c->arg);
        pthread_mutex_lock(&srv->mu);
        c->done = true;
        pthread_cond_broadcast(&srv->cv);
    }
    pthread_mutex_unlock(&srv->mu);
}

static void run_cmd(lop_apiserver_t *srv, void (*fn)(lop_apiserver_t *, void *), void *arg)
{
    if (srv->thread_started && pthread_equal(pthread_self(), srv->thread)) {
        fn(srv, arg);
        return;
    }
    as_cmd_t c = {.fn = fn, .arg = arg};
    pthread_mutex_lock(&srv->mu);
    c.next = NULL;
    as_cmd_t **tail = &srv->cmds;
    while (*tail) tail = &(*tail)->next;
    *tail = &c;
    event_active(srv->cmd_ev, EV_READ, 0);
    while (!c.done) pthread_cond_wait(&srv->cv, &srv->mu);
    pthread_mutex_unlock(&srv->mu);
}

static void *loop_main(void *arg)
{
    lop_apiserver_t *srv = arg;
    event_base_dispatch(srv->base);
    return NULL;
}

/* ---- start / stop ---- */

/* "NS/NAME=HOST:PORT" entries into srv->wh_services. */
static int read_webhook_services(lop_apiserver_t *srv, const char *const *specs, lop_err_t *err)
{
    for (size_t i = 0; specs && specs[i]; i++) {
        const char *s = specs[i], *slash = strchr(s, '/'), *eq = strchr(s, '=');
        if (!slash || !eq || slash > eq || slash == s || eq == slash + 1 || !strchr(eq + 1, ':'))
            return lop_err_set(err, LOP_EINVAL, 0, NULL, "bad webhook service \"%s\" (want NS/NAME=HOST:PORT)", s);
        srv->wh_services = lop_xrealloc(srv->wh_services, (srv->nwh_services + 1) * sizeof *srv->wh_services);
        struct as_svc_map *m = &srv->wh_services[srv->nwh_services++];
        m->ns = lop_xstrndup(s, (size_t)(slash - s));
        m->name = lop_xstrndup(slash + 1, (size_t)(eq - slash - 1));
        m->target = lop_xstrdup(eq + 1);
    }
    return LOP_OK;
}

static void free_server(lop_apiserver_t *srv)
{
    as_http_drop_delayed(srv);
    if (srv->http) evhttp_free(srv->http);
    if (srv->cmd_ev) event_free(srv->cmd_ev);
    if (srv->base) event_base_free(srv->base);
    for (size_t i = 0; i < srv->nwh_services; i++) {
        free(srv->wh_services[i].ns);
        free(srv->wh_services[i].name);
        free(srv->wh_services[i].target);
    }
    free(srv->wh_services);
    as_authn_free(srv);
    as_tls_free(srv);
    pthread_mutex_destroy(&srv->mu);
    pthread_cond_destroy(&srv->cv);
    free(srv);
}

lop_rc_t lop_apiserver_start(const lop_apiserver_opts_t *opts, lop_apiserver_t **out, lop_err_t *err)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, (void (*)(void))evthread_use_pthreads);
    signal(SIGPIPE, SIG_IGN);
    *out = NULL;
    lop_apiserver_opts_t def = {0};
    if (!opts) opts = &def;
    const char *listen = opts->listen && *opts->listen ? opts->listen : "127.0.0.1:0";
    char host[64];
    const char *colon = strrchr(listen, ':');
    if (!colon || (size_t)(colon - listen) >= sizeof host || colon == listen)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "bad listen address \"%s\" (want host:port)", listen);
    if (listen[0] == '[' && colon[-1] == ']') { /* [::1]:port */
        memcpy(host, listen + 1, (size_t)(colon - listen - 2));
        host[colon - listen - 2] = '\0';
    } else {
        memcpy(host, listen, (size_t)(colon - listen));
        host[colon - listen] = '\0';
    }
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 0 || port > 65535)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "bad listen port in \"%s\"", listen);
    lop_apiserver_t *srv = lop_xcalloc(1, sizeof *srv);
    pthread_mutex_init(&srv->mu, NULL);
    pthread_cond_init(&srv->cv, NULL);
    snprintf(srv->host, sizeof srv->host, "%s", host);
    srv->history = opts->history > 0 ? opts->history : 10000;
    srv->history_bytes = opts->history_bytes > 0 ? opts->history_bytes : (size_t)256 << 20;
    srv->dc_budget = opts->decode_cache_bytes > 0 ? opts->decode_cache_bytes : (size_t)4 << 20;
    srv->fault_control = opts->fault_control;
    const char *mode = opts->authorization_mode && *opts->authorization_mode ? opts->authorization_mode : "AlwaysAllow";
    if (strcmp(mode, "AlwaysAllow") && strcmp(mode, "RBAC")) {
        free_server(srv);
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "unknown authorization mode \"%s\" (want AlwaysAllow or RBAC)",
                           mode);
    }
    srv->tls = opts->tls || opts->client_ca;
    srv->authz_rbac = !strcmp(mode, "RBAC");
    srv->tls = srv->tls || srv->authz_rbac; /* kubectl sends tokens only over HTTPS */
    if (as_authn_init(srv, opts->token_file, srv->authz_rbac, err) != LOP_OK ||
        read_webhook_services(srv, opts->webhook_services, err) != LOP_OK) {
        free_server(srv);
        return LOP_EINVAL;
    }
    srv->base = event_base_new();
    srv->http = srv->base ? evhttp_new(srv->base) : NULL;
    if (!srv->http) {
        free_server(srv);
        return lop_err_set(err, LOP_ERR, 0, NULL, "libevent setup failed");
    }
    if (srv->tls && as_tls_setup(srv, opts->client_ca, err) != LOP_OK) {
        free_server(srv);
        return LOP_EINVAL;
    }
    evhttp_set_allowed_methods(srv->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT | EVHTTP_REQ_PATCH |
                                              EVHTTP_REQ_DELETE | EVHTTP_REQ_HEAD | EVHTTP_REQ_OPTIONS);
    evhttp_set_max_body_size(srv->http, 16 * 1024 * 1024);
    evhttp_set_timeout(srv->http, 7200);
    evhttp_set_gencb(srv->http, as_http_handle, srv);
    struct evhttp_bound_socket *bs = evhttp_bind_socket_with_handle(srv->http, host, (ev_uint16_t)port);
    if (!bs) {
        free_server(srv);
        return lop_err_set(err, LOP_ERR, 0, NULL, "cannot listen on %s: %s", listen, strerror(errno));
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&ss, &sl);
    srv->port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                         : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    snprintf(srv->url, sizeof srv->url, strchr(host, ':') ? "%s://[%s]:%d" : "%s://%s:%d", srv->tls ? "https" : "http",
             host, srv->port);
    srv->cmd_ev = event_new(srv->base, -1, EV_PERSIST, cmd_cb, srv);
    event_add(srv->cmd_ev, NULL);
    as_state_init(srv);
    if (opts->kubeconfig_out && lop_apiserver_write_kubeconfig(srv, opts->kubeconfig_out, err) != LOP_OK) {
        as_state_free(srv);
        free_server(srv);
        return LOP_EINVAL;
    }
    if (pthread_create(&srv->thread, NULL, loop_main, srv) != 0) {
        as_state_free(srv);
        free_server(srv);
        return lop_err_set(err, LOP_ERR, 0, NULL, "cannot start the server thread");
    }
    srv->thread_started = true;
    *out = srv;
    return LOP_OK;
}

const char *lop_apiserver_url(const lop_apiserver_t *srv) { return srv->url; }
int lop_apiserver_port(const lop_apiserver_t *srv) { return srv->port; }

static void cmd_shutdown(lop_apiserver_t *srv, void *arg)
{
    (void)arg;
    as_watch_close_all(srv);
    event_base_loopbreak(srv->base);
}

void lop_apiserver_stop(lop_apiserver_t *srv)
{
    if (!srv) return;
    run_cmd(srv, cmd_shutdown, NULL);
    pthread_join(srv->thread, NULL);
    srv->thread_started = false;
    evhttp_free(srv->http);
    srv->http = NULL;
    /* bufferevents freed above (TLS ones above all) release their memory from finalizer
     * callbacks that need one more turn of the loop */
    event_base_loop(srv->base, EVLOOP_NONBLOCK);
    as_store_free(srv);
    as_registry_free(srv);
    free_server(srv);
}

static void cmd_revision(lop_apiserver_t *srv, void *arg) { *(int64_t *)arg = srv->rev; }

int64_t lop_apiserver_revision(lop_apiserver_t *srv)
{
    int64_t v = 0;
    run_cmd(srv, cmd_revision, &v);
    return v;
}

/* ---- faults ---- */

static void cmd_close_watches(lop_apiserver_t *srv, void *arg)
{
    (void)arg;
    as_watch_close_all(srv);
}
void lop_apiserver_close_watches(lop_apiserver_t *srv) { run_cmd(srv, cmd_close_watches, NULL); }

static void cmd_compact(lop_apiserver_t *srv, void *arg)
{
    (void)arg;
    as_store_compact(srv);
}
void lop_apiserver_compact(lop_apiserver_t *srv) { run_cmd(srv, cmd_compact, NULL); }

static void cmd_fail(lop_apiserver_t *srv, void *arg) { as_fault_add(srv, arg); }

void lop_apiserver_fail_next_text(lop_apiserver_t *srv, const char *verb, const char *path_prefix, int count, int code,
                                  int retry_after_s)
{
    as_fault_t f = {.count = count, .code = code, .retry_after = retry_after_s, .text = true};
    snprintf(f.verb, sizeof f.verb, "%s", verb ? verb : "");
    snprintf(f.prefix, sizeof f.prefix, "%s", path_prefix ? path_prefix : "");
    run_cmd(srv, cmd_fail, &f);
}

void lop_apiserver_fail_next(lop_apiserver_t *srv, const char *verb, const char *path_prefix, int count, int code,
                             int retry_after_s)
{
    as_fault_t f = {.count = count, .code = code, .retry_after = retry_after_s};
    snprintf(f.verb, sizeof f.verb, "%s", verb ? verb : "");
    snprintf(f.prefix, sizeof f.prefix, "%s", path_prefix ? path_prefix : "");
    run_cmd(srv, cmd_fail, &f);
}

static void cmd_stall(lop_apiserver_t *srv, void *arg) { as_watch_set_stall(srv, *(bool *)arg); }
void lop_apiserver_stall_watches(lop_apiserver_t *srv, bool stall) { run_cmd(srv, cmd_stall, &stall); }

static void cmd_latency(lop_apiserver_t *srv, void *arg) { srv->latency_ms = *(int *)arg; }
void lop_apiserver_set_latency(lop_apiserver_t *srv, int ms) { run_cmd(srv, cmd_latency, &ms); }

static void cmd_reset(lop_apiserver_t *srv, void *arg)
{
    (void)arg;
    as_state_reset(srv);
}
void lop_apiserver_reset(lop_apiserver_t *srv) { run_cmd(srv, cmd_reset, NULL); }

static void cmd_bookmark(lop_apiserver_t *srv, void *arg)
{
    (void)arg;
    as_watch_bookmark_all(srv);
}
void lop_apiserver_bookmark_now(lop_apiserver_t *srv) { run_cmd(srv, cmd_bookmark, NULL); }

/* ---- kubeconfig ---- */

lop_rc_t lop_apiserver_write_kubeconfig(const lop_apiserver_t *srv, const char *path, lop_err_t *err)
{
    lop_buf_t b = LOP_BUF_INIT;
    lop_buf_printf(&b,
                   "apiVersion: v1\nkind: Config\nclusters:\n- name: luaop\n  cluster:\n"
                   "    server: %s\n",
                   srv->url);
    if (srv->ca_pem) {
        char *ca = lop_base64_encode(srv->ca_pem, strlen(srv->ca_pem), false);
        lop_buf_printf(&b, "    certificate-authority-data: %s\n", ca);
        free(ca);
    }
    lop_buf_puts(&b, "users:\n- name: luaop\n  user:");
    const char *token = as_authn_kubeconfig_token(srv);
    if (token)
        lop_buf_printf(&b, "\n    token: %s\n", token);
    else if (srv->ca_pem) /* HTTPS without --token-file: any token is accepted; without one kubectl
                           * would prompt for a user name and password */
        lop_buf_puts(&b, "\n    token: any # the server was started without --token-file\n");
    else
        lop_buf_puts(&b, " {}\n");
    lop_buf_puts(&b, "contexts:\n- name: luaop\n  context:\n    cluster: luaop\n    user: luaop\n"
                     "    namespace: default\ncurrent-context: luaop\npreferences: {}\n");
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        lop_buf_free(&b);
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "kubeconfig %s: %s", path, strerror(errno));
    }
    size_t w = fwrite(b.data, 1, b.len, f);
    int rc = fclose(f);
    bool ok = w == b.len && rc == 0;
    lop_buf_free(&b);
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "kubeconfig %s: write failed", path);
    }
    return LOP_OK;
}
