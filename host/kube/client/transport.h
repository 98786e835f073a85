/*
 * transport.h — HTTP/1.1 over TCP or TLS for the REST client (rest.h): one lop_transport_t per API
 * server, holding the parsed server URL, the TLS context and a pool of idle keep-alive
 * connections shared by every thread. An exchange runs on the calling thread with non-blocking
 * sockets waited on with poll(2), so a timeout, a cancel flag or a silent watch is noticed within
 * one tick (50 ms) without a thread of its own.
 *
 * What it speaks (RFC 9112 as a client): requests with Content-Length bodies; responses framed by
 * Content-Length, chunked transfer coding, or the end of the connection; 1xx interim responses
 * skipped; `Content-Encoding: gzip` (and `deflate`) decoded with zlib when the exchange asked for
 * it. TLS is OpenSSL's (TLS 1.2 or later, ALPN "http/1.1", SNI, certificate and host name or IP
 * verification, client certificates, session resumption across connections), through an HTTP
 * proxy when one is configured (below). No HTTP/2: a watch holds one connection, as client-go's
 * does over HTTP/1.1.
 *
 * Why not libcurl (used before): Debian's libcurl links ~30 libraries (Kerberos, LDAP, GnuTLS,
 * libssh2, ...) whose loading alone holds ~6 MB of resident memory in every luaop process, and
 * initialises OpenSSL even for a plain-HTTP server. See bench/README.md "Idle memory".
 *
 * Connection reuse: a connection returns to the pool after a complete response that did not ask
 * for `Connection: close`; pooled connections idle for more than 90 s (Go's IdleConnTimeout, which
 * client-go uses) or found readable/closed when taken are dropped. A request on a reused
 * connection that fails before any response byte arrives is sent once more on a new connection
 * when that is safe: always for GET, and for other methods when the request could not be written.
 *
 * Thread-safety: lop_transport_exchange may run on any number of threads at once.
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
    /* HTTP proxy "http://[user:password@]host[:port]" (kubeconfig proxy-url), used for every
     * connection; "" = none; NULL = from the environment as Go's net/http reads it:
     * HTTPS_PROXY (for an https server) or HTTP_PROXY, upper case first, then lower; never for
     * localhost or a loopback address, nor for a host NO_PROXY matches (lop_no_proxy_match).
     * Only http:// proxies: an https server is reached through a CONNECT tunnel, an http one
     * with absolute-form requests; user:password (percent-decoded) becomes
     * Proxy-Authorization: Basic. Unlike Go, a proxy URL that cannot be used (another scheme, a
     * bad URL) is an error at lop_transport_new, not ignored or tried. */
    const char *proxy;
} lop_transport_config_t;

/*
 * New transport (the config's strings are copied). Errors: LOP_EINVAL naming the URL for an
 * unparsable server URL or a scheme other than http/https, or the CA bundle for a PEM that holds no
 * certificate; LOP_ERR when OpenSSL cannot build a context.
 */
lop_rc_t lop_transport_new(const lop_transport_config_t *cfg, lop_transport_t **out, lop_err_t *err);
/* Close the pooled connections and free. No exchange may be running. */
void lop_transport_free(lop_transport_t *t);
/* "host:port" of the server URL (the default port filled in); borrowed, the transport's lifetime. */
const char *lop_transport_host_port(const lop_transport_t *t);
bool lop_transport_is_tls(const lop_transport_t *t);
/* "host:port" of the proxy in use, or NULL (borrowed; for logs). */
const char *lop_transport_proxy(const lop_transport_t *t);
/* Connections opened so far (for tests of reuse). */
long lop_transport_connects(lop_transport_t *t);

/* How an exchange ended. */
typedef enum lop_http_result {
    LOP_HTTP_OK = 0,    /* a whole response was read (any status code) */
    LOP_HTTP_ECONNECT,  /* name resolution, TCP connect or TLS handshake failed: nothing sent */
    LOP_HTTP_ERESET,    /* the connection failed or closed before the response was complete */
    LOP_HTTP_EPROTO,    /* the response is not HTTP/1.x, or its framing or encoding is broken */
    LOP_HTTP_ETIMEDOUT, /* timeout_ms or connect_timeout_ms passed */
    LOP_HTTP_EABORTED,  /* on_tick returned non-zero */
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
    bool gzip;            /* ask for and decode `Content-Encoding: gzip` */
    const char *cert_pem; /* https: client certificate and key (PEM) for this exchange, or NULL */
    const char *key_pem;
    long timeout_ms;         /* the whole exchange, connect included; <= 0 = none */
    long connect_timeout_ms; /* DNS + TCP + TLS; <= 0 = 30 s */
    size_t read_bytes;       /* read size: each on_body call passes at most this much; 0 = 16 KiB */
    /* callbacks (ud is passed to each). on_header: once per response header of the final
     * response, the status code first known through on_status; value trimmed; not NUL-terminated.
     * on_body: the decoded body (de-chunked, decompressed) as it arrives, one call per read
     * (more when a read holds more than read_bytes of it, e.g. the one with the headers);
     * non-zero ends the exchange (LOP_HTTP_ESTOPPED). on_tick (may be NULL): called before every
     * wait, at least every 50 ms while waiting, and after each read of the body; non-zero ends
     * it (LOP_HTTP_EABORTED). */
    void *ud;
    void (*on_status)(void *ud, int code);
    void (*on_header)(void *ud, const char *name, size_t name_len, const char *value, size_t value_len);
    int (*on_body)(void *ud, const char *p, size_t len);
    int (*on_tick)(void *ud);
    /* result */
    int code;              /* HTTP status of the final response; 0 if none arrived */
    bool response_started; /* some byte of the response arrived */
    char error[256];       /* why it failed (names the server), "" on LOP_HTTP_OK */
} lop_http_exchange_t;

/* Run one exchange (see the header comment for reuse and the one safe resend). */
lop_http_result_t lop_transport_exchange(lop_transport_t *t, lop_http_exchange_t *x);

/* ---- proxy selection (transport_proxy.c; public for tests) ---- */

typedef struct lop_proxy {
    char *host; /* NULL = no proxy */
    char *port;
    char *host_port;
    char *auth_header; /* "Proxy-Authorization: Basic ...\r\n" or NULL */
} lop_proxy_t;

/*
 * The proxy for a server at host (no brackets) and port: explicit_url as lop_transport_config_t's
 * proxy, else the environment. out is zeroed first; out->host stays NULL for none. Errors:
 * LOP_EINVAL naming the source (proxy-url, HTTPS_PROXY, ...) for a URL that does not parse or
 * a scheme other than http. Free with lop_proxy_cleanup.
 */
lop_rc_t lop_proxy_select(const char *explicit_url, bool tls, const char *host, const char *port, lop_proxy_t *out,
                          lop_err_t *err);
void lop_proxy_cleanup(lop_proxy_t *p);

/*
 * Whether a NO_PROXY list exempts host (no brackets) at port, as Go's httpproxy: comma-separated
 * entries; "*" matches all; an IP address or CIDR matches the addresses it names; "x.com"
 * matches x.com and its subdomains, ".x.com" and "*.x.com" subdomains only; any entry may carry
 * ":port" (an IPv6 address then in brackets), which must then match too. Case-insensitive.
 */
bool lop_no_proxy_match(const char *no_proxy, const char *host, const char *port);

#endif
