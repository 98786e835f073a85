/* SPDX-License-Identifier: Apache-2.0 */
/* as_tls.c — HTTPS for the local API server: a self-signed certificate (EC P-256, SANs
 * 127.0.0.1 / ::1 / localhost, CA:TRUE so it is its own CA) made at start, optional client-cert
 * verification against --client-ca, and libevent's OpenSSL bufferevents. */
#include "apiserver/as_tls.h"

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct bufferevent *bevcb(struct event_base *base, void *arg)
{
    lop_apiserver_t *srv = arg;
    SSL *ssl = SSL_new(srv->ssl);
    return bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
}

static int add_ext(X509 *cert, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, cert, cert, NULL, NULL, 0);
    X509_EXTENSION *ex = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (!ex) return -1;
    X509_add_ext(cert, ex, -1);
    X509_EXTENSION_free(ex);
    return 0;
}

lop_rc_t as_tls_setup(lop_apiserver_t *srv, const char *client_ca, lop_err_t *err)
{
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *cert = X509_new();
    if (!key || !cert) goto fail;
    ASN1_INTEGER_set(X509_get_serialNumber(cert), (long)time(NULL));
    X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
    X509_gmtime_adj(X509_getm_notAfter(cert), 60L * 60 * 24 * 365);
    X509_set_version(cert, 2);
    X509_set_pubkey(cert, key);
    X509_NAME *nm = X509_get_subject_name(cert);
    X509_NAME_add_entry_by_txt(nm, "CN", MBSTRING_ASC, (const unsigned char *)"luaop-apiserver", -1, -1, 0);
    X509_set_issuer_name(cert, nm);
    if (add_ext(cert, NID_basic_constraints, "critical,CA:TRUE") < 0 ||
        add_ext(cert, NID_key_usage, "critical,digitalSignature,keyEncipherment,keyCertSign") < 0 ||
        add_ext(cert, NID_ext_key_usage, "serverAuth") < 0 ||
        add_ext(cert, NID_subject_alt_name, "IP:127.0.0.1,IP:::1,DNS:localhost") < 0)
        goto fail;
    if (!X509_sign(cert, key, EVP_sha256())) goto fail;
    BIO *bio = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(bio, cert);
    char *data;
    long n = BIO_get_mem_data(bio, &data);
    srv->ca_pem = lop_xstrndup(data, (size_t)n);
    BIO_free(bio);
    srv->ssl = SSL_CTX_new(TLS_server_method());
    if (!srv->ssl || SSL_CTX_use_certificate(srv->ssl, cert) != 1 || SSL_CTX_use_PrivateKey(srv->ssl, key) != 1)
        goto fail;
    SSL_CTX_set_min_proto_version(srv->ssl, TLS1_2_VERSION);
    if (client_ca) {
        if (SSL_CTX_load_verify_locations(srv->ssl, client_ca, NULL) != 1) {
            X509_free(cert);
            EVP_PKEY_free(key);
            return lop_err_set(err, LOP_EINVAL, 0, NULL, "client CA %s: cannot load PEM", client_ca);
        }
        SSL_CTX_set_verify(srv->ssl, SSL_VERIFY_PEER, NULL);
        srv->client_ca = true;
    }
    X509_free(cert);
    EVP_PKEY_free(key);
    evhttp_set_bevcb(srv->http, bevcb, srv);
    return LOP_OK;
fail:
    X509_free(cert);
    EVP_PKEY_free(key);
    return lop_err_set(err, LOP_ERR, 0, NULL, "TLS setup failed: %s", ERR_error_string(ERR_get_error(), NULL));
}

void as_tls_free(lop_apiserver_t *srv)
{
    if (srv->ssl) SSL_CTX_free(srv->ssl);
    srv->ssl = NULL;
    free(srv->ca_pem);
    srv->ca_pem = NULL;
}
