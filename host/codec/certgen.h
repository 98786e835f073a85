/* SPDX-License-Identifier: Apache-2.0 */
/*
 * certgen.h — X.509 certificates made in process (OpenSSL): a CA and serving certificates it
 * signs, for webhook serving without cert-manager (`luaop dev`'s loopback webhooks, and the
 * self-managed mode open-policy-agent/cert-controller's rotator is the reference for).
 *
 * Keys are ECDSA P-256, signatures SHA-256, serials 128 random bits (RFC 5280 §4.1.2.2: positive,
 * at most 20 octets); notBefore is one hour back (clock skew between replicas and the API server).
 * A CA has basicConstraints CA:TRUE (critical) and keyCertSign; a serving certificate CA:FALSE,
 * digitalSignature + keyEncipherment, extendedKeyUsage serverAuth, and the subjectAltNames given
 * (Go's crypto/tls, which kube-apiserver uses to call webhooks, ignores the CN: SANs are required).
 *
 * Ownership: PEM strings are malloc'd, freed with lop_cert_pair_free. Thread-safety: no shared
 * state (OpenSSL 3 is thread-safe).
 */
#ifndef LOP_CODEC_CERTGEN_H
#define LOP_CODEC_CERTGEN_H

#include "host/util/err.h"

#include <stdint.h>

typedef struct lop_cert_pair {
    char *cert_pem; /* "-----BEGIN CERTIFICATE-----..." */
    char *key_pem;  /* "-----BEGIN PRIVATE KEY-----..." (PKCS#8) */
} lop_cert_pair_t;

/* A self-signed CA named cn, valid for valid_s seconds from now. LOP_OK, or LOP_ERR with err. */
LOP_MUST_CHECK lop_rc_t lop_certgen_ca(const char *cn, int64_t valid_s, lop_cert_pair_t *out, lop_err_t *err);

/*
 * A serving certificate for cn signed by ca, valid for valid_s seconds from now. sans is a
 * comma-separated subjectAltName list in OpenSSL's syntax: "DNS:svc.ns.svc,DNS:localhost,IP:127.0.0.1".
 * LOP_OK; LOP_EINVAL when ca's PEM does not load or sans is malformed; LOP_ERR otherwise.
 */
LOP_MUST_CHECK lop_rc_t lop_certgen_serving(const lop_cert_pair_t *ca, const char *cn, const char *sans,
                                            int64_t valid_s, lop_cert_pair_t *out, lop_err_t *err);

/* notAfter of the first certificate in pem, as Unix seconds. LOP_EINVAL when it does not parse. */
LOP_MUST_CHECK lop_rc_t lop_cert_not_after(const char *pem, int64_t *unix_s, lop_err_t *err);

void lop_cert_pair_free(lop_cert_pair_t *p);

#endif
