/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rest.h — the Kubernetes REST client: one lop_rest_client_t per API server, shared by every
 * thread. Built on the libcurl transport (transport.h): one I/O thread multiplexes every request
 * and watch of a server, over HTTP/2 when the server offers it; each request blocks its calling
 * thread until it ends.
 *
 * Behaviour (client-go rest/request.go, rest/with_retry.go):
 *  - client-side token bucket (QPS 5 / burst 10 by default, see qps.h); a watch takes one token
 *    when it is established;
 *  - retries exactly as client-go: a 429 or 5xx carrying an integer Retry-After is retried after
 *    that many seconds (waited on the injected clock), at most 10 times; without Retry-After no
 *    retry here. GETs are also retried (after 1 s) on a connection reset / empty reply. Writes are
 *    never retried after a transport error;
 *  - a 401 drops cached credentials (token file re-read, exec plugin re-run) and the request is
 *    tried once more when that can change the credentials;
 *  - error responses become typed errors: a metav1.Status body fills lop_err_t (code, reason,
 *    message) and stays available as JSON; a non-Status body (e.g. text/plain 429) synthesizes
 *    one from the HTTP code with the trimmed body as message (as client-go's rest/request.go does);
 *  - `Warning` response headers are logged at warn level, never treated as errors.
 * Logged: method, path, code, retries, warnings. Never logged: tokens, keys, request bodies.
 *
 * Thread-safety: every function taking a client is safe from any thread, concurrently.
 */
#ifndef LOP_KUBE_CLIENT_REST_H
#define LOP_KUBE_CLIENT_REST_H

#include "host/kube/client/kubeconfig.h"
#include "host/util/buf.h"
#include "host/util/err.h"

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LOP_REST_MAX_RETRIES 10

/*
 * Accept headers of client-go's metadata client (k8s.io/client-go/metadata), JSON only: the API
 * server answers a LIST with a meta.k8s.io/v1 PartialObjectMetadataList whose items, and a WATCH
 * with events whose objects, are PartialObjectMetadata (apiVersion meta.k8s.io/v1, kind
 * PartialObjectMetadata, metadata only). The trailing plain entry lets a server that cannot
 * convert answer with full objects instead of 406 (the `as=` entry is then skipped).
 */
#define LOP_ACCEPT_PARTIAL_LIST "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
#define LOP_ACCEPT_PARTIAL      "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"

/* Receives a response body's bytes as they arrive — a watch stream's, a streamed LIST's or a
 * request sink's (chunk boundaries mean nothing). Return 0 to continue, non-zero to stop the
 * transfer (the call then returns LOP_ECLOSED). */
typedef int (*lop_stream_fn)(void *ud, const char *data, size_t len);

typedef struct lop_rest_client lop_rest_client_t;

/*
 * New client. cfg's contents are moved into the client (cfg is zeroed; the caller still calls
 * lop_rest_config_cleanup on it, which is then a no-op). Errors: LOP_EINVAL for a bad server URL.
 */
LOP_MUST_CHECK lop_rc_t lop_rest_client_new(lop_rest_config_t *cfg, lop_rest_client_t **out, lop_err_t *err);
/* Free the client. No request may be running. */
void lop_rest_client_free(lop_rest_client_t *c);

/* Borrowed strings, valid for the client's lifetime. */
const char *lop_rest_client_server(const lop_rest_client_t *c);
const char *lop_rest_client_namespace(const lop_rest_client_t *c);
const char *lop_rest_client_user_agent(const lop_rest_client_t *c);

/* Number of requests sent on the wire (retries included), for tests and metrics. */
long lop_rest_client_requests(lop_rest_client_t *c);
/* Make every call of c that is waiting (for a response, for more of a stream, for a Retry-After
 * or backoff delay, for name resolution) look at its cancel flag now. Waits are event-driven:
 * an idle watch wakes only for data, for its idle timeout and for this, so a thread that sets a
 * cancel flag must call this after it (or the call is only cancelled when bytes next arrive). */
void lop_rest_client_wake(lop_rest_client_t *c);

/* "host:port" of the server URL (borrowed, the client's lifetime): client-go's "host" label. */
const char *lop_rest_client_host(const lop_rest_client_t *c);

/* The client's transport (borrowed, the client's lifetime), for tests and metrics to read its
 * connection counters (lop_transport_connects, _open_connections, _dead_connections in
 * transport.h). Not to be freed, nor used for exchanges of its own. */
typedef struct lop_transport lop_transport_t;
lop_transport_t *lop_rest_client_transport(lop_rest_client_t *c);

/*
 * Per-attempt observer (metrics): called once for every exchange sent on the wire, retries and
 * watch streams included, on the requesting thread right after the attempt ends. method is the
 * HTTP verb, code the HTTP status (0 when no response arrived), host the lop_rest_client_host
 * string, duration_ns the attempt's time on the client's clock (for a watch: until the stream
 * ended). Must be quick and must not call back into the client. All strings are borrowed for the
 * call only.
 */
typedef void (*lop_rest_observer_fn)(void *ud, const char *method, int code, const char *host, int64_t duration_ns);
/* Install (fn non-NULL) or remove (NULL) the observer. Set it before the client is shared
 * between threads; replacing it while requests run is safe but a request in flight may report
 * to the old observer with the new ud for that one call, so prefer set-once. */
void lop_rest_client_set_observer(lop_rest_client_t *c, lop_rest_observer_fn fn, void *ud);

/* A response. Init with lop_rest_resp_init (or = LOP_REST_RESP_INIT), free with _cleanup. */
typedef struct lop_rest_resp {
    int code;       /* HTTP status of the final attempt; 0 when none arrived */
    lop_buf_t body; /* the final attempt's body (decompressed) */
    char content_type[128];
    char audit_id[64];
    json_t *status; /* non-2xx: the metav1.Status (decoded or synthesized); owned */
    int retries;    /* retries performed (Retry-After, connection reset, 401 refresh) */
} lop_rest_resp_t;

#define LOP_REST_RESP_INIT               \
    {                                    \
        0, LOP_BUF_INIT, "", "", NULL, 0 \
    }

void lop_rest_resp_init(lop_rest_resp_t *r);
void lop_rest_resp_cleanup(lop_rest_resp_t *r);

typedef struct lop_rest_req {
    const char *method;       /* "GET", "POST", "PUT", "PATCH", "DELETE" */
    const char *path;         /* path and query, starting with '/', already escaped */
    const char *content_type; /* for the body; NULL = application/json when a body is given */
    /* Accept header value; NULL = "application/json". A list of media types with parameters,
     * e.g. LOP_ACCEPT_PARTIAL_LIST (apiserver handlers/negotiation): the server answers 406 when it
     * can serve none of them. Must not contain CR or LF (the header is then not sent). */
    const char *accept;
    const char *body; /* may be NULL */
    size_t len;
    const atomic_bool *cancel; /* optional: set from another thread, then lop_rest_client_wake, to
                                * abort (LOP_ECLOSED) */
    long timeout_ms;           /* limit of each attempt; 0 = 120 s; < 0 = none. It also bounds the
                                * Retry-After waits: one longer than what is left of it (less the
                                * waits before) is not waited, the 429/5xx is returned at once, as
                                * client-go does when the wait would pass the context's deadline. */
    /* Optional bound on the whole call (ms from the call on the client's clock; 0 = none), as a
     * context deadline bounds a client-go request (rest/request.go, rest/with_retry.go): each
     * attempt's timeout is cut to what is left; a rate-limiter wait, Retry-After wait or reset
     * retry that would end past it is not waited — the call returns at once, with the 429/5xx (or
     * the transport error) for a retry, LOP_ETIMEDOUT for the rate limiter (its token is spent).
     * The Lua bindings pass what is left of the calling reconcile's deadline. */
    long deadline_ms;
    /* Optional: the request must leave by then (ns on lop_clock_system's monotonic clock; 0 =
     * none); checked the moment before it is sent, after connecting: later, it is not sent and the
     * call fails with LOP_ECLOSED ("not sent: its send-by deadline had passed"); the response may
     * arrive after it. A leader's write uses it: on the wire while the lease holds, or not at all. */
    int64_t send_by_ns;
    /* Optional: a 2xx body is passed to sink as it arrives instead of being collected in
     * resp->body (a non-2xx body is still collected and parsed as a Status). sink returning
     * non-zero ends the transfer (LOP_ECLOSED). Retries (Retry-After, 401) happen only before any
     * 2xx byte reached the sink; a connection reset after that fails with LOP_EAGAIN.
     * The body reaches sink (and lop_rest_stream's fn) in whole reads, de-chunked and
     * decompressed, up to 128 KiB per call, cut anywhere. */
    lop_stream_fn sink;
    void *sink_ud;
} lop_rest_req_t;

/*
 * Send one request (with the retries described above). Returns LOP_OK for 2xx; otherwise the rc
 * for the HTTP status (lop_rc_from_http: LOP_ENOTFOUND, LOP_ECONFLICT, LOP_EEXIST, LOP_EGONE,
 * LOP_EAGAIN for 429/5xx, ...) with err and resp->status filled; LOP_EAGAIN for a transport
 * failure (code 0), LOP_ECLOSED when cancelled, LOP_EINVAL when credentials cannot be obtained.
 * resp (may be NULL) receives the final response either way.
 */
LOP_MUST_CHECK lop_rc_t lop_rest_request(lop_rest_client_t *c, const lop_rest_req_t *req, lop_rest_resp_t *resp,
                                         lop_err_t *err);

/* Shorthand for lop_rest_request without cancel/timeout. */
LOP_MUST_CHECK lop_rc_t lop_rest_do(lop_rest_client_t *c, const char *method, const char *path_and_query,
                                    const char *content_type, const char *body, size_t len, lop_rest_resp_t *resp,
                                    lop_err_t *err);

typedef struct lop_rest_stream_opts {
    const atomic_bool *cancel; /* set from another thread, then lop_rest_client_wake, to end the
                                * stream (LOP_ECLOSED) */
    long idle_timeout_ms;      /* abort when no byte arrives for this long (LOP_ETIMEDOUT); 0 = off */
    const char *accept;        /* Accept header value; NULL = "application/json" */
} lop_rest_stream_opts_t;

/*
 * GET path as a stream (a watch): once the server answers 2xx every body byte is passed to fn as
 * it arrives; a non-2xx body is collected and returned as a typed error instead. Takes one rate
 * limiter token. No Retry-After retries (the caller backs off); a 401 refreshes credentials and
 * retries once. Returns LOP_OK when the server ends the stream, LOP_ECLOSED when fn returns
 * non-zero or cancel is set, LOP_ETIMEDOUT on idle timeout, LOP_EAGAIN on a transport error,
 * else the rc of the HTTP status. *code (may be NULL) gets the HTTP status.
 */
LOP_MUST_CHECK lop_rc_t lop_rest_stream(lop_rest_client_t *c, const char *path, lop_stream_fn fn, void *ud,
                                        const lop_rest_stream_opts_t *opts, int *code, lop_err_t *err);

/*
 * The same stream without blocking a thread for it (issue 19: threads independent of the number of
 * watches). lop_rest_stream_start takes the rate limiter's token (without waiting for it) and
 * returns the call at once; nothing is sent before the first lop_rest_stream_pump.
 * notify(notify_ud) runs on the transport's I/O thread whenever the call has something for
 * lop_rest_stream_pump (see lop_transport_begin in transport.h: it must only note that, e.g.
 * queue a task, and never call into the client). lop_rest_stream_pump, on the consumer's thread,
 * sends the request once the token is due (resolving the name and getting credentials there: an
 * exec plugin or an uncached name blocks that thread as it would block lop_rest_stream's), passes
 * the body bytes that arrived to fn, and returns false while the stream goes on, with *next_ns the
 * longest the caller may wait before pumping again without a notify (ns on the client's clock:
 * the token's wait or the idle timeout; INT64_MAX = only on notify); true once it ended, with
 * *rc and err exactly as lop_rest_stream returns them (fn returning non-zero ends it,
 * LOP_ECLOSED). The 401 refresh-and-retry happens inside the pumps. Calls for one stream must not
 * overlap; fn may differ between pumps. lop_rest_stream_free cancels the stream if it is running
 * (waiting briefly for the I/O thread to let go) and frees it; no notify runs after it. NULL
 * accepted. opts->cancel is taken as by lop_rest_stream_set_cancel.
 */
typedef struct lop_rest_stream_call lop_rest_stream_call_t;
LOP_MUST_CHECK lop_rc_t lop_rest_stream_start(lop_rest_client_t *c, const char *path,
                                              const lop_rest_stream_opts_t *opts, void (*notify)(void *),
                                              void *notify_ud, lop_rest_stream_call_t **out, lop_err_t *err);
bool lop_rest_stream_pump(lop_rest_stream_call_t *s, lop_stream_fn fn, void *fn_ud, lop_rc_t *rc, int64_t *next_ns,
                          lop_err_t *err);
/*
 * A GET whose 2xx body goes to a sink (lop_rest_req_t.sink, e.g. a streamed LIST page) without
 * blocking a thread: pumped and freed as a stream above (fn is the sink), with a plain request's
 * rules instead of a stream's: each attempt is bounded by the default 120 s timeout, a 429/5xx
 * with an integer Retry-After is retried (at most 10 times, the waits bounded by that timeout), a
 * connection reset before any 2xx byte reached the sink is retried after 1 s; each wait is a
 * *next_ns of the pump, never a blocked thread. A failure after bytes reached fn is not retried
 * (the consumer starts over).
 */
LOP_MUST_CHECK lop_rc_t lop_rest_sink_start(lop_rest_client_t *c, const char *path, const char *accept,
                                            void (*notify)(void *), void *notify_ud, lop_rest_stream_call_t **out,
                                            lop_err_t *err);
/* A flag (borrowed; NULL = none) that, once set and followed by lop_rest_client_wake, cuts the
 * call's current step short — a name resolution or credential wait inside a pump as much as a
 * running transfer — so that the next pump ends it with LOP_ECLOSED (a stopping reflector's
 * listwatch cancel). Set it before the first pump. */
void lop_rest_stream_set_cancel(lop_rest_stream_call_t *s, const atomic_bool *cancel);
/* The HTTP status of an ended stream's response (0 when none arrived). */
int lop_rest_stream_code(const lop_rest_stream_call_t *s);
void lop_rest_stream_free(lop_rest_stream_call_t *s);

/*
 * Decode an error body as a metav1.Status (apimachinery pkg/apis/meta/v1/types.go) or synthesize
 * one from the HTTP code when it is not one (client-go rest/request.go
 * newUnstructuredResponseError: reason from the code, message = trimmed body text or a generic
 * text). Fills err, returns lop_rc_from_http(code, reason); *status_out (may be NULL) gets the
 * Status JSON (new reference; details kept). 410 with reason Gone or Expired both give LOP_EGONE.
 */
LOP_MUST_CHECK lop_rc_t lop_rest_status_parse(int code, const char *body, size_t len, lop_err_t *err,
                                              json_t **status_out);

/* The reason client-go assigns to a bare HTTP code ("NotFound", "TooManyRequests", ... or ""). */
const char *lop_rest_reason_for_code(int code);

/* Parse a Retry-After header value: non-negative integer seconds, at most
 * LOP_REST_RETRY_AFTER_MAX (larger values saturate, no overflow), else -1 (HTTP dates ignored, as
 * client-go does). */
#define LOP_REST_RETRY_AFTER_MAX 86400L
long lop_rest_parse_retry_after(const char *v);

#endif
