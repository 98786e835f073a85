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

/* The _at makers follow the time given, not the machine's; lop_cert_info, signed_by, key_matches
 * and the bundle walk read back what was made. */
static void test_made_at_and_read_back(void)
{
    lop_err_t err;
    const int64_t t0 = 1900000000; /* 2030 */
    lop_cert_pair_t ca = {0}, ca2 = {0}, srv = {0};
    T_EQ_INT(lop_certgen_ca_at("ca-one", t0, 1000, &ca, &err), LOP_OK);
    T_EQ_INT(lop_certgen_ca_at("ca-two", t0, 1000, &ca2, &err), LOP_OK);
    T_EQ_INT(lop_certgen_serving_at(&ca, "svc", "DNS:svc.ns.svc,DNS:svc.ns.svc.cluster.local,IP:127.0.0.1", t0 + 10,
                                    500, &srv, &err),
             LOP_OK);
    lop_cert_info_t ci;
    T_EQ_INT(lop_cert_info(ca.cert_pem, &ci, &err), LOP_OK);
    T_CHECK(ci.is_ca);
    T_EQ_INT(ci.not_before, t0 - LOP_CERTGEN_BACKDATE_S);
    T_EQ_INT(ci.not_after, t0 + 1000);
    T_EQ_INT(lop_cert_info(srv.cert_pem, &ci, &err), LOP_OK);
    T_CHECK(!ci.is_ca);
    T_EQ_INT(ci.not_after, t0 + 510);
    T_EQ_STR(ci.sans, "DNS:svc.ns.svc,DNS:svc.ns.svc.cluster.local,IP:127.0.0.1");
    T_CHECK(strlen(ci.serial) == 32 && strspn(ci.serial, "0123456789ABCDEF") == 32);
    T_CHECK(lop_cert_signed_by(srv.cert_pem, ca.cert_pem));
    T_CHECK(!lop_cert_signed_by(srv.cert_pem, ca2.cert_pem));
    T_CHECK(!lop_cert_signed_by("junk", ca.cert_pem));
    T_CHECK(lop_cert_key_matches(srv.cert_pem, srv.key_pem));
    T_CHECK(!lop_cert_key_matches(srv.cert_pem, ca.key_pem));
    T_CHECK(!lop_cert_key_matches(srv.cert_pem, "junk"));
    T_EQ_INT(lop_cert_info("junk", &ci, &err), LOP_EINVAL);
    /* a bundle of two: each block in turn, whole, then NULL */
    size_t n1 = strlen(ca.cert_pem), n2 = strlen(ca2.cert_pem), len = 0;
    char bundle[8192];
    snprintf(bundle, sizeof bundle, "%s%s", ca.cert_pem, ca2.cert_pem);
    const char *pos = bundle, *b = lop_pem_next_cert(&pos, &len);
    T_CHECK(b == bundle && len == n1);
    b = lop_pem_next_cert(&pos, &len);
    T_CHECK(b == bundle + n1 && len == n2);
    T_CHECK(lop_pem_next_cert(&pos, &len) == NULL);
    lop_cert_pair_free(&ca);
    lop_cert_pair_free(&ca2);
    lop_cert_pair_free(&srv);
}

int main(void)
{
    T_RUN(test_chain_verifies);
    T_RUN(test_made_at_and_read_back);
    return T_DONE();
}
