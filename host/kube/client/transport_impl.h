/*
 * transport_impl.h — what the transport's files share (transport.c: URL, pool, I/O, connecting,
 * the exchange; transport_tls.c: OpenSSL; transport_read.c: the response). Not a public header.
 */
#ifndef LOP_KUBE_CLIENT_TRANSPORT_IMPL_H
#define LOP_KUBE_CLIENT_TRANSPORT_IMPL_H

#include "host/kube/client/transport.h"

#include <openssl/ssl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <zlib.h>

#define TICK_MS            50
#define POOL_MAX           16
#define IDLE_MAX_NS        (90LL * 1000000000LL) /* Go's IdleConnTimeout, used by client-go */
#define CONNECT_TIMEOUT_MS 30000L
#define HEADER_MAX         (64 * 1024) /* bytes of one response's header block */
#define READ_DEFAULT       (16 * 1024)
#define KEEPALIVE_S        30          /* TCP keep-alive, as client-go's dialer */
#define ONE_WRITE_MAX      (64 * 1024) /* a body up to this size goes out with the headers */

typedef struct conn {
    int fd;
    SSL *ssl;
    uint64_t cert_id; /* which client certificate the TLS session presented (0 = none) */
    int64_t idle_since;
    struct conn *next;
} conn_t;

struct lop_transport {
    bool tls;
    char *host; /* without brackets: for getaddrinfo and verification */
    char *port;
    char *host_hdr;    /* the Host header: host (bracketed for IPv6), ":port" unless the default */
    char *host_port;   /* host:port (bracketed for IPv6) */
    char *prefix;      /* the URL's path without a trailing '/', "" for none */
    char *verify_name; /* tls_server_name or host */
    bool insecure;
    lop_proxy_t proxy; /* proxy.host NULL = direct */
    SSL_CTX *ctx;
    pthread_mutex_t mu; /* pool, session */
    conn_t *idle;
    int nidle;
    SSL_SESSION *session; /* the last resumable session, for connections with session_cert */
    uint64_t session_cert;
    atomic_long connects;
};

typedef struct io {
    lop_transport_t *t;
    lop_http_exchange_t *x;
    int64_t deadline; /* whole exchange, 0 = none */
    long timeout_ms;
    lop_http_result_t res;
    short revents; /* what the last successful io_wait saw */
} io_t;

/* A response being read (transport_read.c). */
typedef enum { BODY_NONE, BODY_LENGTH, BODY_CHUNKED, BODY_EOF } body_mode_t;
typedef enum { CK_SIZE, CK_DATA, CK_DATA_END, CK_TRAILER, CK_DONE } chunk_state_t;

typedef struct resp {
    char *buf;
    size_t cap, start, end; /* unparsed bytes are buf[start, end) */
    size_t read_bytes;
    int code;
    bool http10, keep_alive, close;
    body_mode_t mode;
    uint64_t left; /* BODY_LENGTH: bytes to come; CK_DATA: bytes of the chunk */
    chunk_state_t ck;
    bool chunked, have_length;
    int coding; /* 0 identity, 16 + MAX_WBITS gzip, 32 + MAX_WBITS deflate (zlib or gzip) */
    z_stream z;
    bool z_on, z_end;
    char *zout;
} resp_t;

/* transport.c */
int64_t lop_tr_now_ns(void);
/* Up to 40 bytes of p for an error message into dst, bytes outside printable ASCII as '.'. */
const char *lop_tr_excerpt(char *dst, size_t cap, const char *p, size_t n);
/* Set io->res and x->error (printf-style); returns -1. */
int lop_tr_failf(io_t *io, lop_http_result_t res, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Wait for events on fd until deadline (0 = none), ticking every TICK_MS. 0 ready, -1 failed. */
int lop_tr_io_wait(io_t *io, int fd, short events, int64_t deadline, const char *doing);
/* Read up to cap bytes: > 0 read, 0 end of stream, -1 failed (io->res set). */
ssize_t lop_tr_conn_read(io_t *io, conn_t *cn, char *p, size_t cap);

/* transport_tls.c */
lop_rc_t lop_tr_tls_setup(lop_transport_t *t, const lop_transport_config_t *cfg, lop_err_t *err);
/* OpenSSL's error queue (and ssl's verification result, ssl may be NULL) as one line. */
void lop_tr_ssl_error_text(SSL *ssl, char *out, size_t cap);
/* The TLS handshake on cn (SNI, name checks, client certificate, resumption) until deadline. */
int lop_tr_tls_handshake(io_t *io, conn_t *cn, int64_t deadline);

/* transport_read.c */
/* The end of a header block in p[0, n) (after "\r\n\r\n" or a bare "\n\n"), or 0. */
size_t lop_tr_head_end(const char *p, size_t n);
/* Whether p[0, n) holds the start of a final answer after any complete 1xx responses. */
bool lop_tr_final_answer(const char *p, size_t n);
/* The status line and headers (1xx skipped), then the body by its framing, to x's callbacks. */
int lop_tr_read_head(io_t *io, conn_t *cn, resp_t *r);
int lop_tr_read_body(io_t *io, conn_t *cn, resp_t *r);

#endif
