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
 * Every maker has an _at variant taking the time as Unix seconds, so a caller on an injected clock
 * (host/util/clock.h) gets certificates that agree with it.
 *
 * Ownership: PEM strings are malloc'd, freed with lop_cert_pair_free. Thread-safety: no shared
 * state (OpenSSL 3 is thread-safe).
 */
#ifndef LOP_CODEC_CERTGEN_H
#define LOP_CODEC_CERTGEN_H

#include "host/util/err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lop_cert_pair {
    char *cert_pem; /* "-----BEGIN CERTIFICATE-----..." */
    char *key_pem;  /* "-----BEGIN PRIVATE KEY-----..." (PKCS#8) */
} lop_cert_pair_t;

/* How far notBefore is set back from the time a certificate is made (seconds). */
#define LOP_CERTGEN_BACKDATE_S 3600

/* A self-signed CA named cn, valid for valid_s seconds from now. LOP_OK, or LOP_ERR with err. */
LOP_MUST_CHECK lop_rc_t lop_certgen_ca(const char *cn, int64_t valid_s, lop_cert_pair_t *out, lop_err_t *err);

/* The same, made as of now_s (Unix seconds): notBefore now_s - LOP_CERTGEN_BACKDATE_S, notAfter
 * now_s + valid_s. For callers that judge time on an injected clock (certrotate.h). */
LOP_MUST_CHECK lop_rc_t lop_certgen_ca_at(const char *cn, int64_t now_s, int64_t valid_s, lop_cert_pair_t *out,
                                          lop_err_t *err);

/*
 * A serving certificate for cn signed by ca, valid for valid_s seconds from now. sans is a
 * comma-separated subjectAltName list in OpenSSL's syntax: "DNS:svc.ns.svc,DNS:localhost,IP:127.0.0.1".
 * LOP_OK; LOP_EINVAL when ca's PEM does not load or sans is malformed; LOP_ERR otherwise.
 */
LOP_MUST_CHECK lop_rc_t lop_certgen_serving(const lop_cert_pair_t *ca, const char *cn, const char *sans,
                                            int64_t valid_s, lop_cert_pair_t *out, lop_err_t *err);

/* lop_certgen_serving made as of now_s (see lop_certgen_ca_at). */
LOP_MUST_CHECK lop_rc_t lop_certgen_serving_at(const lop_cert_pair_t *ca, const char *cn, const char *sans,
                                               int64_t now_s, int64_t valid_s, lop_cert_pair_t *out, lop_err_t *err);

/* notAfter of the first certificate in pem, as Unix seconds. LOP_EINVAL when it does not parse. */
LOP_MUST_CHECK lop_rc_t lop_cert_not_after(const char *pem, int64_t *unix_s, lop_err_t *err);

/* What a certificate says about itself (the first one in a PEM string). */
typedef struct lop_cert_info {
    int64_t not_before, not_after; /* Unix seconds */
    bool is_ca;                    /* basicConstraints CA:TRUE */
    char serial[48];               /* upper-case hex, as `openssl x509 -serial` prints it */
    char sans[512];                /* "DNS:a,DNS:b,IP:127.0.0.1" in certificate order ("" = none;
                                    * cut when longer) — the syntax lop_certgen_serving takes */
} lop_cert_info_t;

/* Fill *out from the first certificate of pem. LOP_EINVAL (err) when it does not parse. */
LOP_MUST_CHECK lop_rc_t lop_cert_info(const char *pem, lop_cert_info_t *out, lop_err_t *err);

/* True when the first certificate of cert_pem names the first of ca_pem as its issuer and carries
 * a valid signature by its key (times are not checked). False when either does not parse. */
bool lop_cert_signed_by(const char *cert_pem, const char *ca_pem);

/* True when key_pem is the private key of the first certificate in cert_pem. */
bool lop_cert_key_matches(const char *cert_pem, const char *key_pem);

/* The PEM certificate blocks of a bundle, one at a time: the first "-----BEGIN CERTIFICATE-----"
 * block at or after *pos (through its END line and newline), its length in *len, *pos moved
 * past it. NULL when there is none left. Text only (no parsing). */
const char *lop_pem_next_cert(const char **pos, size_t *len);

void lop_cert_pair_free(lop_cert_pair_t *p);

#endif
