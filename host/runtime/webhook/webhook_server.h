/* SPDX-License-Identifier: Apache-2.0 */
/*
 * webhook_server.h — the admission and conversion webhook HTTPS server (issue 21, parts 2, 3a, 8).
 *
 * What it serves (controller-runtime's pkg/webhook, kubebuilder's paths):
 *   POST /convert                  a ConversionReview (apiextensions.k8s.io/v1): each object goes
 *                                  to dispatch->convert, in order (webhook_review.h)
 *   POST <any other path>          an AdmissionReview (admission.k8s.io/v1) for the webhook served
 *                                  at that path ("/validate-cache-example-com-v1alpha1-memcached",
 *                                  "/mutate-..."): dispatch->admit; LOP_ENOTFOUND answers 404
 *   other methods                  405 (Allow: POST)
 *   Content-Type not application/json  415;  a malformed review  400 (plain text);
 *   a body over max_body_bytes     413;  the review queue full  429 (Retry-After: 1)
 * The server runs on every replica (it is not leader-gated) and speaks TLS only (TLS 1.2+).
 *
 * Threads. One libevent loop thread accepts connections, terminates TLS, reads requests and
 * writes replies; it never runs a dispatcher. Each request body is copied into a job and put on
 * a bounded queue; `concurrency` worker threads take jobs, parse the review (jansson), call the
 * dispatcher, build the response, and hand it back to the loop through a wake-up socket; the
 * loop sends it. So a slow or stuck script holds one worker, never the loop: 405s, 415s, 429s
 * and TLS handshakes keep being answered. When the queue is full the request is
 * answered 429 at once instead of being held: the API server calls webhooks with a deadline
 * (timeoutSeconds, default 10 s), so a review that cannot start soon would time out there
 * anyway, and a quick 429 lets its failurePolicy decide immediately while memory stays bounded.
 * A client that hangs up while its review is being handled is noticed: the reply is dropped.
 *
 * Certificates (controller-runtime's certwatcher): cert_dir/cert_name and cert_dir/key_name are
 * loaded at start (start fails naming the file when one is missing or broken) and watched with
 * inotify on the directory (so kubelet's atomic swap of a projected Secret — a new "..data"
 * symlink renamed over the old — is seen) plus a 10 s poll. A pair is reloaded only when its
 * bytes changed; a broken new pair is logged and the last good one kept. New connections use the
 * new certificate; connections already open keep theirs (each holds a reference to its SSL_CTX).
 *
 * Metrics (controller-runtime pkg/webhook/internal/metrics), label webhook = the request path:
 *   controller_runtime_webhook_requests_total{webhook,code}     counter, per HTTP status
 *   controller_runtime_webhook_latency_seconds{webhook}         histogram, Prometheus default buckets
 *   controller_runtime_webhook_requests_in_flight{webhook}      gauge
 * Only POSTs that reach a dispatcher are counted, and a path nothing serves (404) is not, as
 * controller-runtime instruments only registered webhooks.
 *
 * Thread-safety: start/port/cert_reloads/stop/free may be called from any thread (stop not from
 * a dispatcher callback: it joins the workers). The dispatcher is called concurrently from up to
 * `concurrency` threads and must be thread-safe.
 */
#ifndef LOP_RUNTIME_WEBHOOK_WEBHOOK_SERVER_H
#define LOP_RUNTIME_WEBHOOK_WEBHOOK_SERVER_H

#include "host/runtime/engine.h"
#include "host/runtime/metrics/metrics.h"
#include "host/util/err.h"

#include <stddef.h>
#include <stdint.h>

/* The path every conversion webhook is served at (kubebuilder's). */
#define LOP_WEBHOOK_CONVERT_PATH "/convert"

typedef struct lop_webhook_dispatch {
    void *ud;
    /* Admission review for the webhook served at path. request_json: the AdmissionReview's
     * "request" object as received (len bytes, NUL-terminated). LOP_ENOTFOUND when nothing is
     * served at path (the server answers 404); otherwise LOP_OK with *res filled (zeroed by the
     * caller; freed by the server with lop_admission_result_free). A script error is a denial
     * inside res, not an rc; any other rc answers 500 with err->message. May be NULL (every
     * admission path then answers 404). */
    lop_rc_t (*admit)(void *ud, const char *path, const char *request_json, size_t len, lop_admission_result_t *res,
                      lop_err_t *err);
    /* One object of a ConversionReview (obj_json: len bytes, NUL-terminated) to
     * desired_api_version: LOP_OK with *out malloc'd JSON (*out_len bytes; the server frees it);
     * LOP_ENOTFOUND when no conversion webhook covers the object's group/kind; any other rc is a
     * failed conversion, err->message the reason. May be NULL (/convert then answers 404). */
    lop_rc_t (*convert)(void *ud, const char *obj_json, size_t len, const char *desired_api_version, char **out,
                        size_t *out_len, lop_err_t *err);
} lop_webhook_dispatch_t;

typedef struct lop_webhook_server_opts {
    const char *bind_addr;  /* lop_httpserver_parse_addr syntax; NULL = ":9443" (controller-runtime's
                              default); "0" disables (start returns LOP_OK with *out NULL) */
    const char *cert_dir;   /* NULL = <TMPDIR or /tmp>/k8s-webhook-server/serving-certs */
    const char *cert_name;  /* NULL = "tls.crt" (PEM: the certificate, then any intermediates) */
    const char *key_name;   /* NULL = "tls.key" (PEM private key) */
    int concurrency;        /* worker threads = reviews handled at once; <= 0 = 4 */
    int queue_depth;        /* reviews waiting for a worker before 429; <= 0 = 16 * concurrency */
    size_t max_body_bytes;  /* 0 = LOP_WEBHOOK_MAX_BODY_DEFAULT; a bigger body gets 413 */
    lop_metrics_t *metrics; /* may be NULL; borrowed, must outlive lop_webhook_server_free */
} lop_webhook_server_opts_t;

/* 3 MiB: the API server's own request limit (etcd's 1.5 MiB object, an old and a new copy). */
#define LOP_WEBHOOK_MAX_BODY_DEFAULT ((size_t)3 * 1024 * 1024)

typedef struct lop_webhook_server lop_webhook_server_t;

/*
 * Load the certificate pair, bind, start the loop thread and the workers. opts and dispatch are
 * copied (their strings need not outlive the call; dispatch->ud must outlive free).
 * On success *out is the running server, or NULL when bind_addr is "0".
 * Errors: LOP_EINVAL (a malformed address, a missing or broken certificate or key: err names the
 * file), LOP_ERR (cannot bind, cannot start a thread), with err.
 */
LOP_MUST_CHECK lop_rc_t lop_webhook_server_start(const lop_webhook_server_opts_t *opts,
                                                 const lop_webhook_dispatch_t *dispatch, lop_webhook_server_t **out,
                                                 lop_err_t *err);

/* The TCP port bound (useful after binding port 0); -1 for NULL. */
int lop_webhook_server_port(const lop_webhook_server_t *s);

/* How many times a changed certificate pair was loaded since start (the initial load is not
 * counted). 0 for NULL. */
uint64_t lop_webhook_server_cert_reloads(const lop_webhook_server_t *s);

/* True once lop_webhook_server_stop has begun (it may still be waiting for a review to leave a
 * dispatcher); false for NULL. Thread-safe. */
bool lop_webhook_server_stopping(lop_webhook_server_t *s);

/* Stop accepting, stop the loop, let reviews already in a dispatcher finish, join every thread;
 * reviews still queued and open connections are dropped. Idempotent; NULL ok. */
void lop_webhook_server_stop(lop_webhook_server_t *s);

/* Stop (if running) and free. NULL ok. */
void lop_webhook_server_free(lop_webhook_server_t *s);

#endif
