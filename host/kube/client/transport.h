/* SPDX-License-Identifier: Apache-2.0 */
/*
 * transport.h — HTTP for the REST client (rest.h), on libcurl: one lop_transport_t per API server.
 *
 * One I/O thread per transport drives every exchange of the process through one curl multi handle
 * (curl_multi_socket_action over poll(2), woken through an eventfd when work arrives: no polling
 * tick). The calling thread submits an exchange and blocks in lop_transport_exchange; the I/O
 * thread moves the response's bytes into the exchange's inbox and the caller passes them to its
 * callbacks. The caller is woken once per read of the socket (after libcurl's call returns), not
 * per piece libcurl decodes (<= 16 KiB), so it takes what one read decoded as one block. A slow
 * consumer never stalls the other transfers: when an inbox holds more than its high-water mark
 * (8 read_bytes, between 256 KiB and 1 MiB) the transfer is paused (CURL_WRITEFUNC_PAUSE; over HTTP/2 that stream's flow
 * control window closes, the other streams go on) until the caller has drained it.
 *
 * Protocol: https servers are offered HTTP/2 through ALPN and HTTP/1.1 is used when the server
 * does not choose h2 (as client-go does by default); every stream to one server is multiplexed
 * over one connection (CURLOPT_PIPEWAIT), at most the server's SETTINGS_MAX_CONCURRENT_STREAMS at
 * once and at most 1000 (Go's http2 transport's figure for a server that names no limit; Go
 * follows a higher server limit, luaop stops at 1000); libcurl opens another connection beyond
 * that. libcurl's own default cap of 100 is raised to it. disable_http2 (client-go's DISABLE_HTTP2)
 * forces HTTP/1.1. http:// servers always get HTTP/1.1 (no h2c), one connection per concurrent
 * exchange, kept alive and reused. Bodies are decoded from gzip when the exchange asks for it.
 *
 * Dead HTTP/2 connections: client-go's transport sends a PING after a connection has read nothing
 * for ReadIdleTimeout (30 s) and closes it when no answer comes within PingTimeout (15 s)
 * (k8s.io/apimachinery/pkg/util/net/http.go, HTTP2_READ_IDLE_TIMEOUT_SECONDS and
 * HTTP2_PING_TIMEOUT_SECONDS). libcurl sends no PING we could wait on, so the transport does the
 * equivalent with a probe: after read_idle with nothing read on an h2 connection that carries
 * streams, it sends `GET <prefix>/version` (no credentials: any answer, even 401, proves the
 * connection alive) multiplexed on that connection; when neither its answer nor anything else is
 * read on the connection within ping_timeout (a slow server's late answer is no dead connection) the
 * connection is shut down, every stream on it fails with LOP_HTTP_ERESET (callers reconnect) and
 * libcurl never reuses it. A connection that takes no new stream (it had a GOAWAY, or is at its
 * stream limit) cannot carry the probe, and an answer on another connection says nothing of it:
 * the probe is then not sent, and the connection is shut down the same way unless something is
 * read on it within ping_timeout. HTTP/1.1 connections rely on TCP keep-alive (30 s, as client-go's
 * dialer).
 *
 * TLS is libcurl's over OpenSSL: CA and client certificate from memory (CURLOPT_*_BLOB), SNI and
 * verification against tls_server_name when one is given (the Host header stays the server's),
 * TLS sessions shared by all transfers. Names are resolved on the calling thread's behalf by a
 * detached helper (transport_dns.c), so connect_timeout_ms, timeout_ms and on_tick cover
 * resolution even when getaddrinfo never returns.
 *
 * Thread-safety: lop_transport_exchange may run on any number of threads at once; each call
 * blocks its thread until the exchange ends. Every libcurl call runs on the I/O thread.
 */
#ifndef LOP_KUBE_CLIENT_TRANSPORT_H
#define LOP_KUBE_CLIENT_TRANSPORT_H

#include "host/util/err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lop_transport lop_transport_t;

typedef struct lop_transport_config {
    const char *server;          /* "http[s]://host[:port][/prefix]"; IPv6 hosts in brackets */
    const char *tls_server_name; /* https: name for SNI and verification instead of the host; or NULL */
    const char *ca_pem;          /* https: trusted CAs (PEM, one or more); NULL = the system's store */
    bool insecure;               /* https: do not verify the server's certificate or name */
    /* Proxy URL (kubeconfig proxy-url): "http://", "https://" or "socks5://" (the proxy resolves
     * the name, as Go's SOCKS5 dialer asks it to), with optional percent-encoded user:password;
     * no scheme means http://. "" = none; NULL = from the environment as Go's net/http reads it
     * (golang.org/x/net/http/httpproxy): HTTPS_PROXY for an https server, else HTTP_PROXY, upper
     * case first, then lower; never for localhost or a loopback address, nor for a host NO_PROXY
     * matches (lop_no_proxy_match). Unlike Go, a proxy URL that cannot be used (another scheme, a
     * bad URL) is an error at lop_transport_new, not ignored. */
    const char *proxy;
    bool disable_http2;      /* HTTP/1.1 only (client-go's DISABLE_HTTP2 environment switch) */
    long h2_read_idle_ms;    /* dead-connection probe after this long without a read; 0 = from
                               * HTTP2_READ_IDLE_TIMEOUT_SECONDS, else 30 s; < 0 = never probe */
    long h2_ping_timeout_ms; /* the probe's answer must come within this; 0 = from
                               * HTTP2_PING_TIMEOUT_SECONDS, else 15 s */
} lop_transport_config_t;

/*
 * New transport (the config's strings are copied) and its I/O thread. Errors: LOP_EINVAL naming
 * the URL for an unparsable server URL or a scheme other than http/https, the proxy source for a
 * bad proxy URL, or the CA bundle for a PEM that holds no certificate; LOP_ERR when libcurl or
 * the thread cannot be set up.
 */
LOP_MUST_CHECK lop_rc_t lop_transport_new(const lop_transport_config_t *cfg, lop_transport_t **out, lop_err_t *err);
/* Stop the I/O thread, close every connection and free. No exchange may be running. */
void lop_transport_free(lop_transport_t *t);
/* "host:port" of the server URL (the default port filled in); borrowed, the transport's lifetime. */
const char *lop_transport_host_port(const lop_transport_t *t);
bool lop_transport_is_tls(const lop_transport_t *t);
/* "host:port" of the proxy in use, or NULL (borrowed; for logs). */
const char *lop_transport_proxy(const lop_transport_t *t);
/* Connections (TCP sockets, to the server or a proxy) opened so far (for tests of reuse). */
long lop_transport_connects(lop_transport_t *t);
/* Connections open now. */
long lop_transport_open_connections(lop_transport_t *t);
/* Connections shut down by the dead-connection probe so far. */
long lop_transport_dead_connections(lop_transport_t *t);
/* Dead-connection probes sent so far, and those finished, answered or not (for tests). */
long lop_transport_probes_sent(lop_transport_t *t);
long lop_transport_probes(lop_transport_t *t);

/* How an exchange ended. */
typedef enum lop_http_result {
    LOP_HTTP_OK = 0,    /* a whole response was read (any status code) */
    LOP_HTTP_ECONNECT,  /* name resolution, TCP connect or TLS handshake failed: nothing sent */
    LOP_HTTP_ERESET,    /* the connection failed or closed before the response was complete */
    LOP_HTTP_EPROTO,    /* the response is not HTTP, its framing or encoding is broken, or its body
                         * decompressed past the bomb bound (see gzip below) */
    LOP_HTTP_ETIMEDOUT, /* timeout_ms or connect_timeout_ms passed */
    LOP_HTTP_EABORTED,  /* on_tick returned non-zero */
    LOP_HTTP_ELATE,     /* not sent: send_by_ns had passed when it was about to go out */
    LOP_HTTP_ESTOPPED,  /* on_body returned non-zero */
    LOP_HTTP_EREQUEST,  /* the method is not a token, or the target does not start with '/' or
                         * holds a space or control byte (it could split the request): nothing sent */
} lop_http_result_t;

typedef struct lop_http_exchange {
    /* request */
    const char *method;   /* "GET", "POST", ... */
    const char *target;   /* path and query, starting with '/', appended to the URL's prefix */
    const char *headers;  /* extra header lines, each "Name: value\r\n" (may be NULL); the
                           * transport adds Host, Content-Length and Accept-Encoding itself */
    const char *body;     /* request body (may be NULL) */
    size_t body_len;      /* bytes */
    bool send_length;     /* send Content-Length even without a body (0), e.g. an empty POST */
    bool gzip;            /* ask for and decode `Content-Encoding: gzip`. A body that decodes to more
                           * than 64 MiB at over 200 times its size on the wire is refused
                           * (LOP_HTTP_EPROTO): a decompression bomb, not JSON */
    const char *cert_pem; /* https: client certificate and key (PEM) for this exchange, or NULL */
    const char *key_pem;
    long timeout_ms;         /* the whole exchange, connect included; <= 0 = none */
    long connect_timeout_ms; /* DNS + TCP + TLS; <= 0 = 30 s */
    /* Optional: the request must leave by then (ns, CLOCK_MONOTONIC as lop_clock_system; 0 =
     * none). Checked the moment before libcurl sends it (after connecting): later, it is not sent
     * and the exchange fails with LOP_HTTP_ELATE. A response that arrives after it is still taken
     * (a leader's write: it must be on the wire while the lease holds, however late the answer). */
    int64_t send_by_ns;
    size_t read_bytes; /* each on_body call passes at most this much; 0 = 16 KiB. What arrived
                              * while the caller was busy is passed in pieces of this size */
    /* callbacks (ud is passed to each). on_header: once per response header of the final
     * response, the status code first known through on_status; value trimmed; not NUL-terminated.
     * on_body: the decoded body (de-chunked, decompressed) as it arrives, on the calling thread,
     * cut anywhere; non-zero ends the exchange (LOP_HTTP_ESTOPPED). on_tick (may be NULL):
     * called after each batch of the body, after each lop_transport_wake, and whenever the
     * caller has waited tick_ms; non-zero ends it (LOP_HTTP_EABORTED). on_tick may change
     * tick_ms for the waits that follow. Every callback runs on the calling thread. */
    void *ud;
    void (*on_status)(void *ud, int code);
    void (*on_header)(void *ud, const char *name, size_t name_len, const char *value, size_t value_len);
    int (*on_body)(void *ud, const char *p, size_t len);
    int (*on_tick)(void *ud);
    long tick_ms; /* the longest wait between on_tick calls, ms: 0 = 50 ms; < 0 = no timed calls
                   * (an idle stream then costs no wakeup until data, a wake or its end) */
    /* result */
    int code;              /* HTTP status of the final response; 0 if none arrived */
    bool response_started; /* some byte of the response arrived */
    char error[256];       /* why it failed (names the server), "" on LOP_HTTP_OK */
} lop_http_exchange_t;

/* Run one exchange on the calling thread's behalf (blocks until it ends). A request on a reused
 * connection that fails before any response byte is sent once more by libcurl. */
lop_http_result_t lop_transport_exchange(lop_transport_t *t, lop_http_exchange_t *x);

/*
 * The same exchange without blocking (what lop_transport_exchange is made of), for a caller that
 * drives many exchanges from a few threads (the cache dispatcher, host/util/dispatcher.h):
 *
 *  - lop_transport_begin resolves the name (on the calling thread, bounded as above: the only
 *    part that may block, and only when the answer is not cached) and hands the exchange to the
 *    I/O thread. x is borrowed until lop_transport_end. Returns NULL with *res set when it cannot
 *    start (LOP_HTTP_EREQUEST, or a resolution failure).
 *  - notify(notify_ud) is called on the I/O thread, under the transport's lock, whenever there is
 *    something for lop_transport_pump (head, body bytes, the end, a lop_transport_wake). It must
 *    only note that (e.g. queue a task) and never call into the transport.
 *  - lop_transport_pump passes what has arrived to x's callbacks on the calling thread, exactly
 *    as one turn of lop_transport_exchange's loop does (on_tick included), and resumes a transfer
 *    paused because its inbox was full: the inbox is the exchange's byte queue, bounded by its
 *    high-water mark. Returns false while the exchange goes on; true once it has ended, *res
 *    then says how. The caller calls it after each notify, and after tick_ms when x relies on
 *    timed on_tick calls (pump never waits). Calls for one exchange must not overlap.
 *  - lop_transport_end cancels the exchange if it has not ended, waits (briefly) until the I/O
 *    thread has let go of it and frees it; no notify runs after it returns.
 */
typedef void (*lop_transport_notify_fn)(void *ud);
typedef struct lop_transport_call lop_transport_call_t;
lop_transport_call_t *lop_transport_begin(lop_transport_t *t, lop_http_exchange_t *x, lop_transport_notify_fn notify,
                                          void *notify_ud, lop_http_result_t *res);
bool lop_transport_pump(lop_transport_call_t *call, lop_http_result_t *res);
void lop_transport_end(lop_transport_call_t *call);

/* Bytes allocated for call's body buffers (the inbox and the caller's copy; capacity, not use).
 * Each grows up to the inbox's high-water mark (at most 1 MiB) in a burst; once the caller has
 * caught up, buffers over 64 KiB are freed. The calling thread of call; for tests and metrics. */
size_t lop_transport_call_buffer_bytes(lop_transport_call_t *call);

/* Make every exchange of t whose caller is waiting (for the response, for more of the body, or
 * for name resolution) call its on_tick now, so a cancel flag set by another thread is seen at
 * once rather than at the next tick. Any thread; cheap (cancellation is rare, so all are woken). */
void lop_transport_wake(lop_transport_t *t);

/* ---- proxy selection (transport_proxy.c; public for tests) ---- */

typedef struct lop_proxy {
    char *url;       /* for libcurl: "http://host:port", "https://...", "socks5h://..."; NULL = none */
    char *host_port; /* "host:port" (IPv6 bracketed), for logs */
    char *host;      /* the host without brackets, and the port */
    char *port;
    char *user; /* percent-decoded user and password, or NULL */
    char *password;
} lop_proxy_t;

/*
 * The proxy for a server at host (no brackets) and port: explicit_url as lop_transport_config_t's
 * proxy, else the environment. out is zeroed first; out->url stays NULL for none. Errors:
 * LOP_EINVAL naming the source (proxy-url, HTTPS_PROXY, ...) for a URL that does not parse or
 * a scheme other than http, https and socks5. Free with lop_proxy_cleanup.
 */
LOP_MUST_CHECK lop_rc_t lop_proxy_select(const char *explicit_url, bool tls, const char *host, const char *port,
                                         lop_proxy_t *out, lop_err_t *err);
void lop_proxy_cleanup(lop_proxy_t *p);

/*
 * Whether a NO_PROXY list exempts host (no brackets) at port, as Go's httpproxy: comma-separated
 * entries; "*" matches all; an IP address or CIDR matches the addresses it names; "x.com"
 * matches x.com and its subdomains, ".x.com" and "*.x.com" subdomains only; any entry may carry
 * ":port" (an IPv6 address then in brackets), which must then match too. Case-insensitive.
 */
bool lop_no_proxy_match(const char *no_proxy, const char *host, const char *port);

#endif
