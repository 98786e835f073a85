/* transport_tls.c — the transport's TLS: OpenSSL context, the socket BIO, the handshake (see
 * transport.h). */
#include "host/kube/client/transport_impl.h"

#include "host/util/buf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

/* OpenSSL's socket BIO writes with write(2), which raises SIGPIPE on a closed connection; this one
 * sends with MSG_NOSIGNAL, so a server hanging up cannot kill the process. */
static BIO_METHOD *sock_method;
static pthread_once_t sock_once = PTHREAD_ONCE_INIT;

static int sock_write(BIO *b, const char *p, int n)
{
    ssize_t w = send(BIO_get_fd(b, NULL), p, (size_t)n, MSG_NOSIGNAL);
    BIO_clear_retry_flags(b);
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_write(b);
    return (int)w;
}

static int sock_read(BIO *b, char *p, int n)
{
    ssize_t r = recv(BIO_get_fd(b, NULL), p, (size_t)n, 0);
    BIO_clear_retry_flags(b);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_read(b);
    /* the end of the stream as BIO_eof reports it: OpenSSL applies SSL_OP_IGNORE_UNEXPECTED_EOF
     * only then */
    if (r == 0 && n > 0) BIO_set_flags(b, BIO_FLAGS_IN_EOF);
    return (int)r;
}

static void sock_method_init(void)
{
    const BIO_METHOD *base = BIO_s_socket();
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR, "luaop socket");
    if (!m) return;
    BIO_meth_set_write(m, sock_write);
    BIO_meth_set_read(m, sock_read);
    BIO_meth_set_ctrl(m, BIO_meth_get_ctrl(base)); /* fd get/set, flush, eof, ... */
    BIO_meth_set_create(m, BIO_meth_get_create(base));
    BIO_meth_set_destroy(m, BIO_meth_get_destroy(base));
    BIO_meth_set_puts(m, BIO_meth_get_puts(base));
    sock_method = m;
}

/* OpenSSL's error queue (and the verification result) as one line. */
void lop_tr_ssl_error_text(SSL *ssl, char *out, size_t cap)
{
    unsigned long e = ERR_peek_last_error();
    long v = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
    char reason[200] = "";
    if (e) ERR_error_string_n(e, reason, sizeof reason);
    if (v != X509_V_OK)
        snprintf(out, cap, "certificate verify failed: %s", X509_verify_cert_error_string(v));
    else if (e)
        snprintf(out, cap, "%s", reason);
    else
        snprintf(out, cap, "%s", errno ? strerror(errno) : "connection closed");
    ERR_clear_error();
}

/* Keep the newest session offered by the server, for the client certificate it was made with
 * (a session resumed by another identity would authenticate as the first). */
static int on_new_session(SSL *ssl, SSL_SESSION *sess)
{
    lop_transport_t *t = SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl));
    conn_t *cn = SSL_get_app_data(ssl);
    if (!t || !cn || !SSL_SESSION_is_resumable(sess)) return 0;
    pthread_mutex_lock(&t->mu);
    SSL_SESSION *old = t->session;
    t->session = sess;
    t->session_cert = cn->cert_id;
    pthread_mutex_unlock(&t->mu);
    if (old) SSL_SESSION_free(old);
    return 1; /* the reference is ours */
}

lop_rc_t lop_tr_tls_setup(lop_transport_t *t, const lop_transport_config_t *cfg, lop_err_t *err)
{
    pthread_once(&sock_once, sock_method_init);
    if (!sock_method) return lop_err_set(err, LOP_ERR, 0, NULL, "OpenSSL: cannot make a BIO method");
    t->ctx = SSL_CTX_new(TLS_client_method());
    if (!t->ctx) return lop_err_set(err, LOP_ERR, 0, NULL, "OpenSSL: cannot make a TLS context");
    SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
    /* a server closing without close_notify ends the stream like a TCP close; the framing
     * (Content-Length, chunked) still tells a truncated body from a whole one */
    SSL_CTX_set_options(t->ctx, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION);
    static const unsigned char alpn[] = "\x08http/1.1";
    SSL_CTX_set_alpn_protos(t->ctx, alpn, sizeof alpn - 1);
    SSL_CTX_set_app_data(t->ctx, t);
    SSL_CTX_set_session_cache_mode(t->ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(t->ctx, on_new_session);
    if (cfg->insecure) {
        SSL_CTX_set_verify(t->ctx, SSL_VERIFY_NONE, NULL);
        return LOP_OK;
    }
    SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
    if (!cfg->ca_pem) {
        if (SSL_CTX_set_default_verify_paths(t->ctx) != 1)
            return lop_err_set(err, LOP_ERR, 0, NULL, "OpenSSL: cannot load the system's CA store");
        return LOP_OK;
    }
    /* each certificate block on its own: one that does not parse is skipped (as Go's
     * AppendCertsFromPEM does), the others are trusted */
    X509_STORE *store = SSL_CTX_get_cert_store(t->ctx);
    static const char begin[] = "-----BEGIN CERTIFICATE-----";
    int added = 0;
    for (const char *b = strstr(cfg->ca_pem, begin); b; b = strstr(b + 1, begin)) {
        const char *e = strstr(b, "-----END CERTIFICATE-----");
        if (!e) break;
        e += 25;
        BIO *bio = BIO_new_mem_buf(b, (int)(e - b));
        X509 *x = bio ? PEM_read_bio_X509(bio, NULL, NULL, NULL) : NULL;
        if (x && X509_STORE_add_cert(store, x) == 1) added++;
        X509_free(x);
        BIO_free(bio);
    }
    ERR_clear_error();
    if (!added) return lop_err_set(err, LOP_EINVAL, 0, NULL, "the certificate authority data holds no PEM certificate");
    return LOP_OK;
}

static bool is_ip(const char *s)
{
    unsigned char b[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, s, b) == 1 || inet_pton(AF_INET6, s, b) == 1;
}

/* An encrypted key is refused, not prompted for on the terminal. */
static int no_passphrase(char *buf, int size, int rwflag, void *ud)
{
    (void)buf, (void)size, (void)rwflag, (void)ud;
    return -1;
}

static int set_client_cert(SSL *ssl, const char *cert_pem, const char *key_pem, char *why, size_t cap)
{
    BIO *cb = BIO_new_mem_buf(cert_pem, -1), *kb = BIO_new_mem_buf(key_pem, -1);
    X509 *cert = cb ? PEM_read_bio_X509(cb, NULL, NULL, NULL) : NULL;
    EVP_PKEY *key = kb ? PEM_read_bio_PrivateKey(kb, NULL, no_passphrase, NULL) : NULL;
    int ok = cert && key && SSL_use_certificate(ssl, cert) == 1 && SSL_use_PrivateKey(ssl, key) == 1 &&
             SSL_check_private_key(ssl) == 1;
    /* the certificates after the first are the chain to send along */
    for (X509 *extra; ok && cb && (extra = PEM_read_bio_X509(cb, NULL, NULL, NULL));)
        if (SSL_add0_chain_cert(ssl, extra) != 1) X509_free(extra);
    if (!ok)
        snprintf(why, cap, "the client certificate or key is not usable PEM%s",
                 cert && key ? " (the key does not match the certificate)" : "");
    X509_free(cert);
    EVP_PKEY_free(key);
    BIO_free(cb);
    BIO_free(kb);
    ERR_clear_error();
    return ok ? 0 : -1;
}

int lop_tr_tls_handshake(io_t *io, conn_t *cn, int64_t deadline)
{
    lop_transport_t *t = io->t;
    char why[240];
    cn->ssl = SSL_new(t->ctx);
    BIO *bio = cn->ssl ? BIO_new(sock_method) : NULL;
    if (!bio) return lop_tr_failf(io, LOP_HTTP_ECONNECT, "TLS with %s: out of memory", t->host_port);
    BIO_set_fd(bio, cn->fd, BIO_NOCLOSE);
    SSL_set_bio(cn->ssl, bio, bio);
    SSL_set_app_data(cn->ssl, cn);
    bool ip = is_ip(t->verify_name);
    if (!ip) SSL_set_tlsext_host_name(cn->ssl, t->verify_name);
    if (!t->insecure) {
        X509_VERIFY_PARAM *vp = SSL_get0_param(cn->ssl);
        /* names from the subject alternative names only, never the subject's CN (Go ≥ 1.15) */
        X509_VERIFY_PARAM_set_hostflags(vp, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS | X509_CHECK_FLAG_NEVER_CHECK_SUBJECT);
        int ok =
            ip ? X509_VERIFY_PARAM_set1_ip_asc(vp, t->verify_name) : X509_VERIFY_PARAM_set1_host(vp, t->verify_name, 0);
        if (ok != 1)
            return lop_tr_failf(io, LOP_HTTP_ECONNECT, "TLS with %s: bad name to verify: %s", t->host_port,
                                t->verify_name);
    }
    if (io->x->cert_pem && io->x->key_pem &&
        set_client_cert(cn->ssl, io->x->cert_pem, io->x->key_pem, why, sizeof why) < 0)
        return lop_tr_failf(io, LOP_HTTP_ECONNECT, "TLS with %s: %s", t->host_port, why);
    pthread_mutex_lock(&t->mu);
    if (t->session && t->session_cert == cn->cert_id) SSL_set_session(cn->ssl, t->session);
    pthread_mutex_unlock(&t->mu);
    for (;;) {
        ERR_clear_error();
        errno = 0;
        int r = SSL_connect(cn->ssl);
        if (r == 1) return 0;
        int e = SSL_get_error(cn->ssl, r);
        short ev = e == SSL_ERROR_WANT_READ ? POLLIN : e == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
        if (!ev) {
            lop_tr_ssl_error_text(cn->ssl, why, sizeof why);
            return lop_tr_failf(io, LOP_HTTP_ECONNECT, "TLS handshake with %s (verifying %s): %s", t->host_port,
                                t->verify_name, why);
        }
        if (lop_tr_io_wait(io, cn->fd, ev, deadline, "TLS handshake with") < 0) {
            if (io->res == LOP_HTTP_ERESET) io->res = LOP_HTTP_ECONNECT;
            return -1;
        }
    }
}
