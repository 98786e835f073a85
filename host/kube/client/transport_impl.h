/* SPDX-License-Identifier: Apache-2.0 */
/*
 * transport_impl.h — what the transport's files share: transport.c (the server URL, the
 * caller's side of an exchange) calls transport_io.c (the I/O thread and every libcurl call);
 * both use transport_head.c (reading a response head, pure: fuzz/fuzz_httpresponse.c feeds it).
 * Not a public header.
 *
 * Locking: one mutex per transport (t->mu) guards the operations list and every field of an
 * exchange marked "mu" below; each exchange has its own condition variable on that mutex.
 */
#ifndef LOP_KUBE_CLIENT_TRANSPORT_IMPL_H
#define LOP_KUBE_CLIENT_TRANSPORT_IMPL_H

#include "host/kube/client/transport.h"
#include "host/util/buf.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define LOP_TR_TICK_MS            50     /* the caller's wait between on_tick calls (tick_ms 0) */
#define LOP_TR_CONNECT_TIMEOUT_MS 30000L /* client-go's dialer: 30 s */
#define LOP_TR_KEEPALIVE_S        30L    /* TCP keep-alive, as client-go's dialer */
#define LOP_TR_H2_MAX_STREAMS     1000L  /* our cap on streams per h2 connection (server's may be lower) */
#define LOP_TR_READ_DEFAULT       (16 * 1024)
#define LOP_TR_HEAD_MAX           (64 * 1024)            /* bytes of one response's header lines */
#define LOP_TR_INBOX_MIN          (256 * 1024)           /* smallest high-water mark of an inbox (bytes) */
#define LOP_TR_INBOX_MAX          (1024 * 1024)          /* largest: 8 read_bytes, at most this */
#define LOP_TR_KEEP_BYTES         (64 * 1024)            /* a caught-up exchange frees buffers larger than this */
#define LOP_TR_BOMB_BYTES         ((curl_off_t)64 << 20) /* decoded bytes before the ratio is checked */
#define LOP_TR_BOMB_RATIO         200                    /* decoded : wire bytes that marks a bomb */

/* Reading a response head (transport_head.c; pure, any thread). */
typedef enum lop_tr_head_rc {
    LOP_TR_HEAD_MORE,    /* keep reading lines */
    LOP_TR_HEAD_DONE,    /* the blank line ending the final (non-1xx, or 101) response's head */
    LOP_TR_HEAD_TOO_BIG, /* the header lines would pass LOP_TR_HEAD_MAX bytes */
} lop_tr_head_rc_t;

/* One line of len bytes (its CRLF included or not) of a head still being read. A status line
 * ("HTTP/...") sets *code to its three-digit status (0 when malformed) and empties head, so an
 * interim response's lines are dropped; any other non-blank line is kept in head as
 * "Name: value\n" (CR and LF stripped). */
lop_tr_head_rc_t lop_tr_head_line(lop_buf_t *head, int *code, const char *p, size_t len);

typedef void (*lop_tr_header_fn)(void *ud, const char *name, size_t name_len, const char *value, size_t value_len);
/* Call fn for each "name: value" line of a head that lop_tr_head_line built (len bytes, NULL
 * allowed): name non-empty and up to the first ':', value without surrounding blanks; lines
 * without a name are skipped. Neither is NUL-terminated; both point into data. */
void lop_tr_head_each(const char *data, size_t len, lop_tr_header_fn fn, void *ud);

/* One exchange in flight. */
typedef struct lop_tr_xfer {
    lop_transport_t *t;
    lop_http_exchange_t *x; /* the caller's; read by the I/O thread only while setting up */
    struct curl_slist *headers;
    struct curl_slist *resolve; /* CURLOPT_RESOLVE entry from lop_tr_resolve, or NULL */
    char *url;
    bool probe;          /* the transport's own dead-connection probe (no caller) */
    int64_t send_by_ns;  /* the exchange's send_by_ns (copied at setup); 0 = none */
    int64_t begun_ns;    /* when lop_transport_begin was called (before resolution), monotonic */
    bool late;           /* mu: refused by on_prereq, send_by_ns had passed */
    bool sent;           /* mu: on_prereq let the request go (its connection was up) */
    int probe_fd;        /* probe: the socket it checks */
    pthread_cond_t cond; /* signalled (with t->mu) when inbox, head or done change */
    /* mu: an asynchronous caller's (lop_transport_begin), called with cond; NULL once it ended */
    lop_transport_notify_fn notify;
    void *notify_ud;
    size_t hwm; /* inbox high-water mark (bytes) */
    /* mu: shared between the I/O thread and the caller */
    lop_buf_t inbox;   /* body bytes not yet passed to on_body */
    lop_buf_t head;    /* the final response's header lines, "Name: value\n" each */
    int code;          /* status of the response being read */
    bool head_done;    /* head holds the final response's whole header block */
    bool started;      /* a byte of the response arrived */
    bool paused;       /* the write callback paused the transfer; the caller resumes it */
    bool cancel;       /* the caller gave up: remove the transfer */
    bool done;         /* the I/O thread is finished with it (the easy handle is freed) */
    bool bomb;         /* stopped as a decompression bomb */
    bool head_too_big; /* stopped: the header block passed LOP_TR_HEAD_MAX */
    bool no_resend;    /* stopped: libcurl would have sent the request again after its response began */
    CURLcode result;
    long os_errno;     /* errno of the failed connect, or 0 */
    long connect_code; /* the proxy's answer to CONNECT, or 0 */
    char errbuf[CURL_ERROR_SIZE];
    /* mu: the operations list */
    bool op_add, op_resume, op_cancel, in_ops;
    bool busy; /* the I/O thread is running one of its operations */
    struct lop_tr_xfer *next_op;
    struct lop_tr_xfer *next_waiting; /* mu: t->waiting, while the caller is in the exchange */
    /* I/O thread only */
    CURL *easy;
    int sock_fd;                    /* its connection's socket when libcurl told us, else -1 */
    curl_off_t decoded;             /* body bytes decoded so far */
    size_t body_off;                /* request body bytes handed to libcurl */
    bool idempotent;                /* the request may be sent again after its body went out */
    bool dirty;                     /* bytes were added to inbox since the caller was last signalled */
    struct lop_tr_xfer *next_dirty; /* t->dirty */
} lop_tr_xfer_t;

/* A socket libcurl asked us to watch (I/O thread only). */
typedef struct lop_tr_sock {
    int fd;
    int what;           /* CURL_POLL_IN/OUT/INOUT */
    bool h2;            /* carries HTTP/2 streams: subject to the dead-connection probe */
    int64_t last_read;  /* monotonic ns of the last readable event */
    int64_t probe_sent; /* when the probe went out; 0 = none in flight */
    /* the probe found the connection taking no new stream (after a GOAWAY, or at its stream limit)
     * and went elsewhere: the connection is dead unless something is read on it within the ping
     * timeout of probe_sent (health_check decides) */
    bool probe_elsewhere;
} lop_tr_sock_t;

/* A caller waiting for name resolution: lop_transport_wake signals cond (taking mu, after
 * t->mu: the lock order) so it calls on_tick. */
typedef struct lop_tr_dns_wait {
    pthread_mutex_t *mu;
    pthread_cond_t *cond;
    unsigned *woken; /* mu: set to 1 by the wake */
    struct lop_tr_dns_wait *next;
} lop_tr_dns_wait_t;

struct lop_transport {
    bool tls;
    char *host; /* without brackets */
    char *port;
    char *host_hdr;   /* the Host header: host (bracketed for IPv6), ":port" unless the default */
    char *host_port;  /* host:port (bracketed for IPv6) */
    char *prefix;     /* the URL's path without a trailing '/', "" for none */
    char *base_url;   /* scheme://name:port of every request URL (name = tls_server_name if set) */
    char *connect_to; /* CURLOPT_CONNECT_TO entry when tls_server_name differs from the host */
    char *tls_server_name;
    char *ca_pem;
    bool insecure;
    bool disable_http2;
    int64_t read_idle_ns; /* <= 0: no probe */
    int64_t ping_timeout_ns;
    lop_proxy_t proxy;

    pthread_mutex_t mu;
    lop_tr_xfer_t *ops;                  /* mu: exchanges with an operation for the I/O thread */
    lop_tr_xfer_t *waiting;              /* mu: exchanges whose caller is in lop_transport_exchange */
    struct lop_tr_dns_wait *dns_waiting; /* mu: callers waiting for a name (transport_dns.c) */
    unsigned wake_gen;                   /* mu: bumped by lop_transport_wake */
    lop_tr_xfer_t *probes;               /* I/O thread: probes in flight, linked through next_op */
    bool stopping;                       /* mu */
    int wake_fd;                         /* eventfd: write 1 to wake the I/O thread */
    pthread_t io;
    bool io_started;

    /* I/O thread only */
    CURLM *multi;
    CURLSH *share;
    lop_tr_xfer_t **batch; /* run_ops' copy of the operations list */
    int capbatch;
    lop_tr_sock_t *socks;
    int nsocks, capsocks;
    long timer_ms; /* libcurl's requested timeout; -1 = none */
    /* exchanges whose inbox grew during the current libcurl call; their callers are signalled
     * once when it returns (lop_tr_flush), so a caller takes all that one read of the socket
     * decoded (many of libcurl's <= 16 KiB pieces) in one block instead of a wake-up per piece */
    lop_tr_xfer_t *dirty;
    int running;

    char *dns_addrs; /* mu: the last answer for the name connected to ("a,b"), or NULL */
    int64_t dns_expires;
    struct lop_tr_dns_job *dns_refresh; /* mu: the background refresh of dns_addrs in flight, or NULL */

    atomic_long connects;
    atomic_long open;
    atomic_long dead;
    atomic_long probes_sent, probes_done;
};

/* Tell the caller of xf that something changed (t->mu held): its condition variable, and its
 * notify callback when it has one. */
static inline void lop_tr_signal(lop_tr_xfer_t *xf)
{
    pthread_cond_signal(&xf->cond);
    if (xf->notify) xf->notify(xf->notify_ud);
}

/* transport_dns.c */
/* How long a name's answer is used before it is refreshed (ns; 30 s; tests shorten it). */
extern _Atomic int64_t lop_tr_dns_ttl_ns;
/* Let go of a background refresh still in flight (lop_transport_free). */
void lop_tr_dns_free(lop_transport_t *t);
/* Resolve host (no brackets) for x on the calling thread, bounded by x's connect timeout (and
 * timeout) and on_tick: LOP_HTTP_OK with *resolve a CURLOPT_RESOLVE entry (NULL for an IP
 * literal); LOP_HTTP_ETIMEDOUT, LOP_HTTP_EABORTED or LOP_HTTP_ECONNECT with x->error set. */
lop_http_result_t lop_tr_resolve(lop_transport_t *t, const char *host, const char *port, lop_http_exchange_t *x,
                                 struct curl_slist **resolve);

/* transport_io.c */
int64_t lop_tr_now_ns(void);
/* Create the multi handle and start the I/O thread. LOP_ERR naming the cause. */
LOP_MUST_CHECK lop_rc_t lop_tr_io_start(lop_transport_t *t, lop_err_t *err);
/* Stop the I/O thread (no exchange may be running) and free the multi handle. */
void lop_tr_io_stop(lop_transport_t *t);
/* Queue an operation (op_add, op_resume or op_cancel already set) and wake the I/O thread.
 * Call with t->mu held. */
void lop_tr_io_queue(lop_tr_xfer_t *xf);
/* Signal the caller of every exchange on t->dirty and empty the list (I/O thread; takes t->mu). */
void lop_tr_flush(lop_transport_t *t);

#endif
