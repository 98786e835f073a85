/* SPDX-License-Identifier: Apache-2.0 */
/*
 * apiserver.h — the local Kubernetes API server (`luaop apiserver`), startable in-process.
 *
 * NOT a production API server: single process, in-memory, opt-in RBAC, admission webhooks only, no
 * controllers beyond a synchronous garbage collector and CRD establishment. It speaks the
 * Kubernetes REST protocol closely enough for kubectl, client-go style clients and luaop's own
 * client (see apiserver/README.md; the behaviour follows the Kubernetes API Concepts page,
 * kubernetes.io/docs/reference/using-api/api-concepts/).
 *
 * The server runs a libevent event loop on its own thread; all store state lives on that thread.
 * Thread-safety: every function below may be called from any thread. Fault-injection calls are
 * queued to the loop thread and return once the loop has applied them.
 */
#ifndef LOP_APISERVER_APISERVER_H
#define LOP_APISERVER_APISERVER_H

#include "host/util/err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lop_apiserver lop_apiserver_t;

typedef struct lop_apiserver_opts {
    const char *listen; /* "host:port"; NULL = "127.0.0.1:0" (a free port) */
    bool tls;           /* serve HTTPS with a self-signed certificate made at start */
    /* NULL = no bearer-token auth; else kube-apiserver's static token CSV
     * `token,user,uid[,"group1,group2"]` (a line with only a token: the admin, system:masters) */
    const char *token_file;
    const char *client_ca; /* NULL = no client-cert auth; else PEM CA file (implies tls) */
    long history;          /* watch history size in events; 0 = 10000 */
    /* ... and in bytes: each event is charged its serialized object, before and after, plus its
     * key and bookkeeping; the oldest events fall out first (a watch from before them: 410 Gone
     * "too old resource version"). 0 = 256 MiB. */
    size_t history_bytes;
    /* The decode cache: stored objects are kept serialized, and decoded trees of recently used
     * ones are cached up to this many serialized bytes (trees take ~10x that), trimmed after each
     * event-loop callback. 0 = 4 MiB. */
    size_t decode_cache_bytes;
    const char *kubeconfig_out; /* NULL = none; else written at start */
    /* "AlwaysAllow" (NULL or "": the default) or "RBAC": Roles/ClusterRoles and their bindings
     * enforced, system:masters allowed everything; with RBAC a request needs credentials, and
     * without a token file holding a system:masters token an admin token is made at start and
     * written to the kubeconfig (apiserver/README.md). */
    const char *authorization_mode;
    bool fault_control; /* serve POST /luaop-fault/... (see README.md) */
    /* Where admission/conversion webhooks given as a clientConfig.service are reached: a
     * NULL-terminated array of "NAMESPACE/NAME=HOST:PORT" (any port of that Service goes to
     * HOST:PORT; TLS still verifies the name NAME.NAMESPACE.svc); NULL = none. A service webhook
     * with no entry fails to call (its failurePolicy decides). */
    const char *const *webhook_services;
} lop_apiserver_opts_t;

/* Start a server (its loop runs on a new thread). On success *out owns it (lop_apiserver_stop).
 * opts may be NULL (all defaults); its strings are only read during the call.
 * Process-wide side effects: libevent is made thread-aware once (evthread_use_pthreads) and
 * SIGPIPE is ignored (writes to vanished clients must not kill the host).
 * Errors: LOP_EINVAL (bad listen address, unreadable token/CA file, unknown authorization mode,
 * kubeconfig not writable),
 * LOP_ERR (bind, TLS setup). */
LOP_MUST_CHECK lop_rc_t lop_apiserver_start(const lop_apiserver_opts_t *opts, lop_apiserver_t **out, lop_err_t *err);

/* Base URL, e.g. "http://127.0.0.1:43121" (borrowed; valid until stop). */
const char *lop_apiserver_url(const lop_apiserver_t *srv);
int lop_apiserver_port(const lop_apiserver_t *srv);

/* Write a kubeconfig (cluster "luaop", user "luaop", context "luaop") pointing at the server,
 * with the CA data when TLS is on and a token when token auth is on (the token file's first one;
 * with RBAC its first system:masters one, or the admin token made at start). */
LOP_MUST_CHECK lop_rc_t lop_apiserver_write_kubeconfig(const lop_apiserver_t *srv, const char *path, lop_err_t *err);

/* Stop the loop, close every connection, free everything. NULL is a no-op. */
void lop_apiserver_stop(lop_apiserver_t *srv);

/* Current store revision (the last resourceVersion handed out). */
int64_t lop_apiserver_revision(lop_apiserver_t *srv);

/* ---- fault injection (also over HTTP when fault_control is on) ---- */

/* End every open watch stream (clean end of stream, as on a server restart). */
void lop_apiserver_close_watches(lop_apiserver_t *srv);
/* Drop the whole watch history and all continue-token snapshots: a later watch from an older
 * resourceVersion gets the 410 ERROR event, an old continue token gets 410. */
void lop_apiserver_compact(lop_apiserver_t *srv);
/* Fail the next `count` requests whose verb matches (NULL/"" = any; "get", "list", "watch",
 * "create", "update", "patch", "delete", or an HTTP method) and whose path starts with
 * path_prefix (NULL = any) with HTTP `code`; retry_after_s > 0 adds `Retry-After`. */
void lop_apiserver_fail_next(lop_apiserver_t *srv, const char *verb, const char *path_prefix, int count, int code,
                             int retry_after_s);
/* Same, but answer like API Priority & Fairness does: text/plain body "Too many requests,
 * please try again later." and Retry-After (retry_after_s, at least 1), no Status JSON. */
void lop_apiserver_fail_next_text(lop_apiserver_t *srv, const char *verb, const char *path_prefix, int count, int code,
                                  int retry_after_s);
/* Stall (true) or resume (false) every watch stream: connections stay open, nothing is sent;
 * events queue and flow again on resume. */
void lop_apiserver_stall_watches(lop_apiserver_t *srv, bool stall);
/* Delay every later response by ms milliseconds (0 = off). */
void lop_apiserver_set_latency(lop_apiserver_t *srv, int ms);
/* Forget all state (objects, history, watches closed); resourceVersions restart from the start. */
void lop_apiserver_reset(lop_apiserver_t *srv);
/* Send a BOOKMARK now to every watch that allowed bookmarks. */
void lop_apiserver_bookmark_now(lop_apiserver_t *srv);

#endif
