/* SPDX-License-Identifier: Apache-2.0 */
/*
 * httpserver.h — the metrics and health-probe HTTP server (libevent evhttp on its own thread).
 *
 * Routes (GET and HEAD; other methods get 405):
 *   /metrics                 Prometheus text format 0.0.4 from the registry (when one is given)
 *   /healthz, /healthz/<n>   liveness checks, as health.h describes (when a health registry is
 * given) /readyz,  /readyz/<n>    readiness checks; ?verbose lists each, ?exclude=<n> skips one
 *   anything else            404
 * The operator runs two of these (as controller-runtime does): --metrics-bind-address (default
 * ":8443", HTTPS with authentication and authorization when --metrics-secure) with only the
 * registry, and --health-probe-bind-address (default ":8081", plain HTTP) with only the health
 * checks; one server may serve both.
 *
 * Thread-safety: lop_httpserver_start/port/stop may be called from any thread; stop may be called
 * more than once and concurrently. Requests are served one at a time on the server's thread; the
 * metrics registry and health checks are read there (both are thread-safe). The server thread
 * blocks SIGPIPE for itself, so a client hanging up mid-response cannot kill the process.
 */
#ifndef LOP_RUNTIME_HTTPSERVER_H
#define LOP_RUNTIME_HTTPSERVER_H

#include "host/runtime/health.h"
#include "host/runtime/metrics_auth.h"
#include "host/runtime/metrics/metrics.h"
#include "host/util/err.h"

typedef struct lop_httpserver lop_httpserver_t;

/*
 * Parse a bind address: "host:port", ":port" (all IPv4 interfaces), "[v6addr]:port", or "0"
 * (disabled). On success fills host (hostlen bytes; "" when disabled) and *port (0 picks a free
 * port; -1 when disabled). LOP_EINVAL with err naming the problem otherwise.
 */
LOP_MUST_CHECK lop_rc_t lop_httpserver_parse_addr(const char *bind_addr, char *host, size_t hostlen, int *port,
                                                  lop_err_t *err);

/*
 * Bind bind_addr and start serving on a new thread. metrics and/or health may be NULL (their
 * routes then answer 404); both are borrowed and must outlive lop_httpserver_free.
 * On success *out is the running server, or NULL when bind_addr is "0" (disabled; still LOP_OK).
 * Errors: LOP_EINVAL for a malformed address, LOP_ERR when the address cannot be bound (in use,
 * not local) or the thread cannot start; err names the address and the cause.
 */
LOP_MUST_CHECK lop_rc_t lop_httpserver_start(const char *bind_addr, lop_metrics_t *metrics, lop_health_t *health,
                                             lop_httpserver_t **out, lop_err_t *err);

/* A server's settings beyond lop_httpserver_start's: HTTPS and the scrape filter (kubebuilder v4's
 * secure metrics, controller-runtime pkg/metrics/server). */
typedef struct lop_httpserver_opts {
    const char *bind_addr;
    lop_metrics_t *metrics; /* borrowed, as above; NULL = no /metrics */
    lop_health_t *health;   /* borrowed, as above; NULL = no probes */
    /* Serve HTTPS (TLS 1.2+) only: with the PEM files cert_dir/cert_name and cert_dir/key_name
     * (default "tls.crt" / "tls.key"), reloaded when they change (certwatcher.h; start fails naming
     * a missing or broken file), or, without cert_dir, a self-signed certificate for localhost,
     * 127.0.0.1 and ::1 made in memory at start (certgen.h; its CA follows it in the chain). */
    bool tls;
    const char *cert_dir, *cert_name, *key_name;
    /* Every request is first checked by auth (borrowed; must outlive the server): 401/403/500 as
     * metrics_auth.h says, in text/plain. The check runs on the server's thread, bounded by
     * the review timeout; NULL = none. */
    lop_metrics_auth_t *auth;
} lop_httpserver_opts_t;

/* lop_httpserver_start with every setting (o and its strings are read during the call only).
 * Errors as lop_httpserver_start's, plus the certificate files' (LOP_EINVAL). */
LOP_MUST_CHECK lop_rc_t lop_httpserver_start_opts(const lop_httpserver_opts_t *o, lop_httpserver_t **out,
                                                  lop_err_t *err);

/* The TCP port actually bound (useful after binding port 0); -1 for NULL. */
int lop_httpserver_port(const lop_httpserver_t *s);

/* Stop serving, join the thread and close the listening socket (later connections are refused).
 * Idempotent; safe from any thread except the server's own (i.e. not from a health check or gauge
 * callback) — but not from a signal handler (it locks and joins). In-flight requests are dropped.
 * NULL ok. */
void lop_httpserver_stop(lop_httpserver_t *s);

/* Stop (if still running) and free. NULL ok. */
void lop_httpserver_free(lop_httpserver_t *s);

struct event_base;
/* The body of a server's loop thread (this one and the webhook server's): block SIGPIPE for the
 * calling thread (a client hanging up mid-response must not kill the process), name it
 * thread_name (at most 15 characters), and run base until it is broken out of. */
void lop_event_loop_run(struct event_base *base, const char *thread_name);

struct bufferevent;
typedef struct ssl_ctx_st SSL_CTX;
/* A server-side TLS bufferevent for one accepted connection on base (this server's and the
 * webhook server's evhttp_set_bevcb callbacks), on ctx as it is now: SSL_new takes its own
 * reference, so a certificate reload later leaves this connection alone. A peer that closes
 * without close_notify is a plain EOF (allow_dirty_shutdown), as Go's servers treat it. NULL when
 * OpenSSL or libevent cannot make it (the connection is then dropped). */
struct bufferevent *lop_tls_accept_bev(struct event_base *base, SSL_CTX *ctx);

#endif
