/* SPDX-License-Identifier: Apache-2.0 */
/*
 * certgen.c — CA and serving certificates with OpenSSL (certgen.h).
 */
#include "host/codec/certgen.h"

#include "host/util/buf.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static lop_rc_t ssl_fail(lop_err_t *err, lop_rc_t rc, const char *what)
{
    unsigned long e = ERR_get_error();
    ERR_clear_error();
    return lop_err_set(err, rc, 0, NULL, "%s: %s", what, e ? ERR_error_string(e, NULL) : "OpenSSL failed");
}

/* ext on cert, issued by issuer (for the key identifiers). */
static bool add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
    X509_EXTENSION *ex = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (!ex) return false;
    bool ok = X509_add_ext(cert, ex, -1) == 1;
    X509_EXTENSION_free(ex);
    return ok;
}

/* A certificate for key named cn, valid now_s-1h .. now_s+valid_s, with a random positive serial. */
static X509 *new_cert(EVP_PKEY *key, const char *cn, int64_t now_s, int64_t valid_s)
{
    time_t now = (time_t)now_s;
    X509 *c = X509_new();
    unsigned char serial[16];
    if (!c || RAND_bytes(serial, sizeof serial) != 1) goto fail;
    serial[0] &= 0x7f; /* positive */
    serial[0] |= 0x01; /* and 16 octets long, so never a leading zero to strip */
    BIGNUM *bn = BN_bin2bn(serial, sizeof serial, NULL);
    if (!bn || !BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(c))) {
        BN_free(bn);
        goto fail;
    }
    BN_free(bn);
    if (!X509_set_version(c, 2) || !X509_time_adj_ex(X509_getm_notBefore(c), 0, -LOP_CERTGEN_BACKDATE_S, &now) ||
        !X509_time_adj_ex(X509_getm_notAfter(c), (int)(valid_s / 86400), (long)(valid_s % 86400), &now) ||
        !X509_set_pubkey(c, key))
        goto fail;
    X509_NAME *nm = X509_get_subject_name(c);
    if (!X509_NAME_add_entry_by_txt(nm, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1, 0)) goto fail;
    return c;
fail:
    X509_free(c);
    return NULL;
}

static bool to_pem(X509 *cert, EVP_PKEY *key, lop_cert_pair_t *out)
{
    BIO *b = BIO_new(BIO_s_mem()), *k = BIO_new(BIO_s_mem());
    bool ok =
        b && k && PEM_write_bio_X509(b, cert) == 1 && PEM_write_bio_PrivateKey(k, key, NULL, NULL, 0, NULL, NULL) == 1;
    if (ok) {
        char *p;
        long n = BIO_get_mem_data(b, &p);
        out->cert_pem = lop_xstrndup(p, (size_t)n);
        n = BIO_get_mem_data(k, &p);
        out->key_pem = lop_xstrndup(p, (size_t)n);
    }
    BIO_free(b);
    BIO_free(k);
    return ok;
}

lop_rc_t lop_certgen_ca(const char *cn, int64_t valid_s, lop_cert_pair_t *out, lop_err_t *err)
{
    return lop_certgen_ca_at(cn, (int64_t)time(NULL), valid_s, out, err);
}

lop_rc_t lop_certgen_ca_at(const char *cn, int64_t now_s, int64_t valid_s, lop_cert_pair_t *out, lop_err_t *err)
{
    memset(out, 0, sizeof *out);
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *c = key ? new_cert(key, cn, now_s, valid_s) : NULL;
    bool ok = c && X509_set_issuer_name(c, X509_get_subject_name(c)) &&
              add_ext(c, c, NID_basic_constraints, "critical,CA:TRUE") &&
              add_ext(c, c, NID_key_usage, "critical,digitalSignature,keyCertSign,cRLSign") &&
              add_ext(c, c, NID_subject_key_identifier, "hash") && X509_sign(c, key, EVP_sha256()) &&
              to_pem(c, key, out);
    X509_free(c);
    EVP_PKEY_free(key);
    return ok ? LOP_OK : ssl_fail(err, LOP_ERR, "making a CA certificate");
}

/* The CA's certificate and key from their PEM. False when either does not parse. */
static bool load_ca(const lop_cert_pair_t *ca, X509 **cert, EVP_PKEY **key)
{
    BIO *b = BIO_new_mem_buf(ca->cert_pem ? ca->cert_pem : "", -1);
    BIO *k = BIO_new_mem_buf(ca->key_pem ? ca->key_pem : "", -1);
    *cert = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
    *key = k ? PEM_read_bio_PrivateKey(k, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    BIO_free(k);
    return *cert && *key && X509_check_private_key(*cert, *key) == 1;
}

lop_rc_t lop_certgen_serving(const lop_cert_pair_t *ca, const char *cn, const char *sans, int64_t valid_s,
                             lop_cert_pair_t *out, lop_err_t *err)
{
    return lop_certgen_serving_at(ca, cn, sans, (int64_t)time(NULL), valid_s, out, err);
}

lop_rc_t lop_certgen_serving_at(const lop_cert_pair_t *ca, const char *cn, const char *sans, int64_t now_s,
                                int64_t valid_s, lop_cert_pair_t *out, lop_err_t *err)
{
    memset(out, 0, sizeof *out);
    X509 *ca_cert = NULL;
    EVP_PKEY *ca_key = NULL;
    if (!load_ca(ca, &ca_cert, &ca_key)) {
        X509_free(ca_cert);
        EVP_PKEY_free(ca_key);
        return ssl_fail(err, LOP_EINVAL, "the CA certificate and key do not load (or do not match)");
    }
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *c = key ? new_cert(key, cn, now_s, valid_s) : NULL;
    lop_rc_t rc = LOP_ERR;
    const char *what = "making a serving certificate";
    if (c && X509_set_issuer_name(c, X509_get_subject_name(ca_cert)) &&
        add_ext(c, ca_cert, NID_basic_constraints, "critical,CA:FALSE") &&
        add_ext(c, ca_cert, NID_key_usage, "critical,digitalSignature,keyEncipherment") &&
        add_ext(c, ca_cert, NID_ext_key_usage, "serverAuth") &&
        add_ext(c, ca_cert, NID_authority_key_identifier, "keyid:always")) {
        if (!add_ext(c, ca_cert, NID_subject_alt_name, sans)) {
            rc = LOP_EINVAL;
            what = "subjectAltNames (\"DNS:name,IP:address,...\" expected)";
        } else if (X509_sign(c, ca_key, EVP_sha256()) && to_pem(c, key, out)) {
            rc = LOP_OK;
        }
    }
    X509_free(c);
    EVP_PKEY_free(key);
    X509_free(ca_cert);
    EVP_PKEY_free(ca_key);
    return rc == LOP_OK ? LOP_OK : ssl_fail(err, rc, what);
}

static X509 *read_cert(const char *pem)
{
    BIO *b = BIO_new_mem_buf(pem ? pem : "", -1);
    X509 *c = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    return c;
}

static bool asn1_unix(const ASN1_TIME *t, int64_t *out)
{
    struct tm tm;
    if (ASN1_TIME_to_tm(t, &tm) != 1) return false;
    *out = (int64_t)timegm(&tm);
    return true;
}

lop_rc_t lop_cert_not_after(const char *pem, int64_t *unix_s, lop_err_t *err)
{
    X509 *c = read_cert(pem);
    bool ok = c && asn1_unix(X509_get0_notAfter(c), unix_s);
    X509_free(c);
    return ok ? LOP_OK : ssl_fail(err, LOP_EINVAL, "not a PEM certificate");
}

/* The subjectAltNames as "DNS:a,IP:1.2.3.4" (other name types are skipped). */
static void san_text(X509 *c, char *buf, size_t len)
{
    lop_buf_t b = LOP_BUF_INIT;
    GENERAL_NAMES *names = X509_get_ext_d2i(c, NID_subject_alt_name, NULL, NULL);
    for (int i = 0; names && i < sk_GENERAL_NAME_num(names); i++) {
        const GENERAL_NAME *g = sk_GENERAL_NAME_value(names, i);
        const char *sep = b.len ? "," : "";
        if (g->type == GEN_DNS) {
            const ASN1_IA5STRING *s = g->d.dNSName;
            lop_buf_printf(&b, "%sDNS:%.*s", sep, ASN1_STRING_length(s), (const char *)ASN1_STRING_get0_data(s));
        } else if (g->type == GEN_IPADD) {
            const unsigned char *ip = ASN1_STRING_get0_data(g->d.iPAddress);
            if (ASN1_STRING_length(g->d.iPAddress) == 4)
                lop_buf_printf(&b, "%sIP:%u.%u.%u.%u", sep, ip[0], ip[1], ip[2], ip[3]);
        }
    }
    GENERAL_NAMES_free(names);
    snprintf(buf, len, "%s", b.data ? b.data : "");
    lop_buf_free(&b);
}

lop_rc_t lop_cert_info(const char *pem, lop_cert_info_t *out, lop_err_t *err)
{
    memset(out, 0, sizeof *out);
    X509 *c = read_cert(pem);
    bool ok =
        c && asn1_unix(X509_get0_notBefore(c), &out->not_before) && asn1_unix(X509_get0_notAfter(c), &out->not_after);
    if (ok) {
        out->is_ca = X509_check_ca(c) == 1;
        BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(c), NULL);
        char *hex = bn ? BN_bn2hex(bn) : NULL;
        snprintf(out->serial, sizeof out->serial, "%s", hex ? hex : "");
        OPENSSL_free(hex);
        BN_free(bn);
        san_text(c, out->sans, sizeof out->sans);
    }
    X509_free(c);
    return ok ? LOP_OK : ssl_fail(err, LOP_EINVAL, "not a PEM certificate");
}

bool lop_cert_signed_by(const char *cert_pem, const char *ca_pem)
{
    X509 *c = read_cert(cert_pem), *ca = read_cert(ca_pem);
    EVP_PKEY *k = ca ? X509_get0_pubkey(ca) : NULL;
    bool ok = c && k && X509_check_issued(ca, c) == X509_V_OK && X509_verify(c, k) == 1;
    X509_free(c);
    X509_free(ca);
    ERR_clear_error();
    return ok;
}

bool lop_cert_key_matches(const char *cert_pem, const char *key_pem)
{
    X509 *c = read_cert(cert_pem);
    BIO *b = BIO_new_mem_buf(key_pem ? key_pem : "", -1);
    EVP_PKEY *k = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
    bool ok = c && k && X509_check_private_key(c, k) == 1;
    BIO_free(b);
    EVP_PKEY_free(k);
    X509_free(c);
    ERR_clear_error();
    return ok;
}

const char *lop_pem_next_cert(const char **pos, size_t *len)
{
    static const char begin[] = "-----BEGIN CERTIFICATE-----", end[] = "-----END CERTIFICATE-----";
    const char *b = *pos ? strstr(*pos, begin) : NULL;
    const char *e = b ? strstr(b, end) : NULL;
    if (!e) return NULL;
    e += sizeof end - 1;
    if (*e == '\r') e++;
    if (*e == '\n') e++;
    *len = (size_t)(e - b);
    *pos = e;
    return b;
}

void lop_cert_pair_free(lop_cert_pair_t *p)
{
    if (!p) return;
    free(p->cert_pem);
    free(p->key_pem);
    p->cert_pem = p->key_pem = NULL;
}
