/* SPDX-License-Identifier: Apache-2.0 */
/* certwatcher.c — load the serving pair and reload it when the files change (see certwatcher.h). */
#include "host/runtime/webhook/certwatcher.h"

#include "host/util/buf.h"
#include "host/util/log.h"

#include <errno.h>
#include <limits.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

/* Cap on a certificate or key file: a chain of a few certificates is a few KiB. */
#define MAX_PEM_BYTES (1024 * 1024)

struct lop_certwatcher {
    struct event_base *base;
    char *cert_path, *key_path;
    SSL_CTX *ctx;                /* current; one reference held here */
    lop_buf_t cert_pem, key_pem; /* the bytes last tried (good or not) */
    int ifd;                     /* inotify, -1 when unavailable */
    struct event *inotify_ev, *poll_ev;
    uint64_t reloads; /* atomic */
};

/* Read a whole file into out. LOP_OK, or LOP_EINVAL with err naming path. */
static lop_rc_t read_file(const char *path, lop_buf_t *out, lop_err_t *err)
{
    lop_buf_reset(out);
    FILE *f = fopen(path, "rb");
    if (!f) return lop_err_set(err, LOP_EINVAL, 0, NULL, "%s: %s", path, strerror(errno));
    char chunk[8192];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0 && out->len <= MAX_PEM_BYTES) lop_buf_append(out, chunk, n);
    int bad = ferror(f);
    fclose(f);
    if (bad) return lop_err_set(err, LOP_EINVAL, 0, NULL, "%s: read error", path);
    if (out->len > MAX_PEM_BYTES) return lop_err_set(err, LOP_EINVAL, 0, NULL, "%s: larger than 1 MiB", path);
    if (out->len == 0) return lop_err_set(err, LOP_EINVAL, 0, NULL, "%s: empty", path);
    return LOP_OK;
}

static const char *ssl_error(void)
{
    unsigned long e = ERR_peek_last_error();
    const char *r = e ? ERR_reason_error_string(e) : NULL;
    return r ? r : "no PEM data";
}

/* Put the certificate chain in pem into ctx. */
static lop_rc_t use_chain(SSL_CTX *ctx, const lop_buf_t *pem, const char *path, lop_err_t *err)
{
    BIO *bio = BIO_new_mem_buf(pem->data, (int)pem->len);
    X509 *leaf = bio ? PEM_read_bio_X509_AUX(bio, NULL, NULL, NULL) : NULL;
    lop_rc_t rc = LOP_OK;
    if (!leaf || SSL_CTX_use_certificate(ctx, leaf) != 1) {
        rc = lop_err_set(err, LOP_EINVAL, 0, NULL, "%s: not a PEM certificate (%s)", path, ssl_error());
    } else {
        X509 *ca;
        while ((ca = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
            if (SSL_CTX_add0_chain_cert(ctx, ca) != 1) {
                X509_free(ca);
                rc = lop_err_set(err, LOP_EINVAL, 0, NULL, "%s: cannot use an intermediate certificate", path);
                break;
            }
        }
        ERR_clear_error(); /* the loop ends on "no start line" */
    }
    X509_free(leaf);
    BIO_free(bio);
    return rc;
}

static lop_rc_t use_key(SSL_CTX *ctx, const lop_buf_t *pem, const char *path, lop_err_t *err)
{
    BIO *bio = BIO_new_mem_buf(pem->data, (int)pem->len);
    EVP_PKEY *key = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
    lop_rc_t rc = LOP_OK;
    if (!key)
        rc = lop_err_set(err, LOP_EINVAL, 0, NULL, "%s: not a PEM private key (%s)", path, ssl_error());
    else if (SSL_CTX_use_PrivateKey(ctx, key) != 1 || SSL_CTX_check_private_key(ctx) != 1)
        rc = lop_err_set(err, LOP_EINVAL, 0, NULL, "%s: the key does not match the certificate", path);
    EVP_PKEY_free(key);
    BIO_free(bio);
    return rc;
}

/* A server context from the PEM bytes (cert_what/key_what name them in errors). NULL with err. */
static SSL_CTX *ctx_from(const lop_buf_t *cert, const char *cert_what, const lop_buf_t *key, const char *key_what,
                         lop_err_t *err)
{
    ERR_clear_error();
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) {
        lop_err_set(err, LOP_ERR, 0, NULL, "cannot make an SSL_CTX: %s", ssl_error());
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    if (use_chain(ctx, cert, cert_what, err) != LOP_OK || use_key(ctx, key, key_what, err) != LOP_OK) {
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

static SSL_CTX *build_ctx(const lop_certwatcher_t *w, const lop_buf_t *cert, const lop_buf_t *key, lop_err_t *err)
{
    return ctx_from(cert, w->cert_path, key, w->key_path, err);
}

SSL_CTX *lop_tls_server_ctx_from_pem(const char *cert_pem, const char *key_pem, lop_err_t *err)
{
    lop_buf_t cert = {(char *)cert_pem, strlen(cert_pem), 0}, key = {(char *)key_pem, strlen(key_pem), 0};
    return ctx_from(&cert, "certificate", &key, "key", err);
}

/* Read both files; LOP_OK with *changed telling whether they differ from the last pair tried. */
static lop_rc_t read_pair(lop_certwatcher_t *w, lop_buf_t *cert, lop_buf_t *key, bool *changed, lop_err_t *err)
{
    lop_rc_t rc;
    lop_buf_t again = LOP_BUF_INIT;
    /* The files may be swapped between the two reads (kubelet's ..data rename): read the
     * certificate once more after the key, and start over when it changed meanwhile. */
    for (int tries = 0;; tries++) {
        rc = read_file(w->cert_path, cert, err);
        if (rc == LOP_OK) rc = read_file(w->key_path, key, err);
        if (rc == LOP_OK) rc = read_file(w->cert_path, &again, err);
        if (rc != LOP_OK || tries == 3 || (again.len == cert->len && memcmp(again.data, cert->data, cert->len) == 0))
            break;
    }
    lop_buf_free(&again);
    if (rc != LOP_OK) return rc;
    *changed = cert->len != w->cert_pem.len || key->len != w->key_pem.len ||
               memcmp(cert->data, w->cert_pem.data, cert->len) != 0 ||
               memcmp(key->data, w->key_pem.data, key->len) != 0;
    return LOP_OK;
}

void lop_certwatcher_check(lop_certwatcher_t *w)
{
    lop_buf_t cert = LOP_BUF_INIT, key = LOP_BUF_INIT;
    lop_err_t err;
    bool changed = false;
    /* A file missing for a moment (mid-swap) is not worth a log line: the next event retries. */
    if (read_pair(w, &cert, &key, &changed, &err) == LOP_OK && changed) {
        lop_buf_swap(&cert, &w->cert_pem);
        lop_buf_swap(&key, &w->key_pem);
        SSL_CTX *ctx = build_ctx(w, &w->cert_pem, &w->key_pem, &err);
        if (ctx) {
            SSL_CTX_free(w->ctx); /* open connections hold their own references */
            w->ctx = ctx;
            uint64_t n = __atomic_add_fetch(&w->reloads, 1, __ATOMIC_SEQ_CST);
            char ns[24];
            snprintf(ns, sizeof ns, "%llu", (unsigned long long)n);
            lop_log(LOP_LOG_INFO, "webhook serving certificate reloaded", "cert", w->cert_path, "reloads", ns, NULL);
        } else {
            lop_log(LOP_LOG_WARN, "webhook serving certificate not reloaded, keeping the previous one", "cert",
                    w->cert_path, "error", err.message, NULL);
        }
    }
    lop_buf_free(&cert);
    lop_buf_free(&key);
}

static void on_inotify(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    char ev[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    bool any = false;
    while (read(fd, ev, sizeof ev) > 0) any = true; /* drain; which entry changed does not matter */
    if (any) lop_certwatcher_check(arg);
}

static void on_poll(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    lop_certwatcher_check(arg);
}

static char *join_path(const char *dir, const char *name)
{
    lop_buf_t b = LOP_BUF_INIT;
    lop_buf_printf(&b, "%s/%s", dir, name);
    return lop_buf_steal(&b);
}

/* Arm inotify on dir and the poll timer. */
static lop_rc_t watch(lop_certwatcher_t *w, const char *dir, lop_err_t *err)
{
    w->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (w->ifd >= 0 && inotify_add_watch(w->ifd, dir,
                                         IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_CLOSE_WRITE |
                                             IN_MODIFY | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF) < 0) {
        lop_log(LOP_LOG_WARN, "webhook cert dir not watched with inotify; polling only", "dir", dir, "error",
                strerror(errno), NULL);
        close(w->ifd);
        w->ifd = -1;
    }
    if (w->ifd >= 0) {
        w->inotify_ev = event_new(w->base, w->ifd, EV_READ | EV_PERSIST, on_inotify, w);
        if (!w->inotify_ev || event_add(w->inotify_ev, NULL) != 0)
            return lop_err_set(err, LOP_ERR, 0, NULL, "certwatcher: cannot add the inotify event");
    }
    struct timeval tv = {LOP_CERTWATCHER_POLL_S, 0};
    w->poll_ev = event_new(w->base, -1, EV_PERSIST, on_poll, w);
    if (!w->poll_ev || event_add(w->poll_ev, &tv) != 0)
        return lop_err_set(err, LOP_ERR, 0, NULL, "certwatcher: cannot add the poll timer");
    return LOP_OK;
}

lop_rc_t lop_certwatcher_new(struct event_base *base, const char *dir, const char *cert_name, const char *key_name,
                             lop_certwatcher_t **out, lop_err_t *err)
{
    *out = NULL;
    lop_certwatcher_t *w = lop_xcalloc(1, sizeof *w);
    w->base = base;
    w->ifd = -1;
    w->cert_path = join_path(dir, cert_name);
    w->key_path = join_path(dir, key_name);
    bool changed;
    lop_rc_t rc = read_pair(w, &w->cert_pem, &w->key_pem, &changed, err);
    if (rc == LOP_OK) {
        w->ctx = build_ctx(w, &w->cert_pem, &w->key_pem, err);
        if (!w->ctx) rc = LOP_EINVAL;
    }
    if (rc == LOP_OK) rc = watch(w, dir, err);
    if (rc != LOP_OK) {
        lop_certwatcher_free(w);
        return rc;
    }
    *out = w;
    return LOP_OK;
}

SSL_CTX *lop_certwatcher_ctx(lop_certwatcher_t *w) { return w->ctx; }

uint64_t lop_certwatcher_reloads(const lop_certwatcher_t *w)
{
    return w ? __atomic_load_n(&w->reloads, __ATOMIC_SEQ_CST) : 0;
}

void lop_certwatcher_free(lop_certwatcher_t *w)
{
    if (!w) return;
    if (w->inotify_ev) event_free(w->inotify_ev);
    if (w->poll_ev) event_free(w->poll_ev);
    if (w->ifd >= 0) close(w->ifd);
    SSL_CTX_free(w->ctx);
    lop_buf_free(&w->cert_pem);
    lop_buf_free(&w->key_pem);
    free(w->cert_path);
    free(w->key_path);
    free(w);
}
