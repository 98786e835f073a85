/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for host/codec/certgen: a serving certificate verifies against the CA that signed
 * it (as a TLS client would: chain, serverAuth purpose, the SAN for 127.0.0.1), not against
 * another CA; serials differ; notAfter is what was asked; bad input is refused naming it. */
#include "host/codec/certgen.h"
#include "t.h"

#include <openssl/pem.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <stdbool.h>
#include <string.h>
#include <time.h>

static X509 *load(const char *pem)
{
    BIO *b = BIO_new_mem_buf(pem, -1);
    X509 *c = PEM_read_bio_X509(b, NULL, NULL, NULL);
    BIO_free(b);
    return c;
}

/* Whether leaf verifies against ca for TLS server use at 127.0.0.1. */
static bool verifies(const char *ca_pem, const char *leaf_pem)
{
    X509 *ca = load(ca_pem), *leaf = load(leaf_pem);
    X509_STORE *st = X509_STORE_new();
    X509_STORE_add_cert(st, ca);
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    X509_STORE_CTX_init(ctx, st, leaf, NULL);
    X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_SERVER);
    X509_VERIFY_PARAM_set1_ip_asc(X509_STORE_CTX_get0_param(ctx), "127.0.0.1");
    bool ok = X509_verify_cert(ctx) == 1;
    X509_STORE_CTX_free(ctx);
    X509_STORE_free(st);
    X509_free(ca);
    X509_free(leaf);
    return ok;
}

static void test_chain_verifies(void)
{
    lop_err_t err;
    lop_cert_pair_t ca = {0}, other = {0}, srv = {0}, srv2 = {0};
    T_EQ_INT(lop_certgen_ca("luaop-webhook-ca", 10 * 365 * 86400LL, &ca, &err), LOP_OK);
    T_EQ_INT(lop_certgen_ca("someone-else", 86400, &other, &err), LOP_OK);
    T_EQ_INT(lop_certgen_serving(&ca, "luaop-webhook", "DNS:luaop-webhook-service.luaop-system.svc,IP:127.0.0.1",
                                 30 * 86400, &srv, &err),
             LOP_OK);
    T_EQ_INT(lop_certgen_serving(&ca, "luaop-webhook", "IP:127.0.0.1", 30 * 86400, &srv2, &err), LOP_OK);
    T_CHECK(srv.cert_pem && strstr(srv.cert_pem, "BEGIN CERTIFICATE") && strstr(srv.key_pem, "PRIVATE KEY"));
    T_CHECK(verifies(ca.cert_pem, srv.cert_pem));
    T_CHECK(!verifies(other.cert_pem, srv.cert_pem));
    X509 *a = load(srv.cert_pem), *b = load(srv2.cert_pem);
    T_CHECK(ASN1_INTEGER_cmp(X509_get0_serialNumber(a), X509_get0_serialNumber(b)) != 0);
    X509_free(a);
    X509_free(b);
    int64_t na = 0;
    T_EQ_INT(lop_cert_not_after(srv.cert_pem, &na, &err), LOP_OK);
    int64_t want = (int64_t)time(NULL) + 30 * 86400;
    T_CHECK(na > want - 60 && na <= want + 1);
    lop_cert_pair_free(&srv);
    lop_cert_pair_free(&srv2);
    /* refused: a CA whose key is not its own, a malformed SAN list, not a certificate */
    lop_cert_pair_t mixed = {ca.cert_pem, other.key_pem}, bad = {0};
    T_EQ_INT(lop_certgen_serving(&mixed, "x", "IP:127.0.0.1", 60, &bad, &err), LOP_EINVAL);
    T_CHECK(strstr(err.message, "do not match") != NULL);
    T_EQ_INT(lop_certgen_serving(&ca, "x", "nonsense", 60, &bad, &err), LOP_EINVAL);
    T_CHECK(strstr(err.message, "subjectAltNames") != NULL);
    T_EQ_INT(lop_cert_not_after("junk", &na, &err), LOP_EINVAL);
    lop_cert_pair_free(&ca);
    lop_cert_pair_free(&other);
}

int main(void)
{
    T_RUN(test_chain_verifies);
    return T_DONE();
}
