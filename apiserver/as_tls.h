/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_tls.h — HTTPS: a self-signed certificate made at start (its own CA), optional client
 * certificate verification, and the OpenSSL bufferevents libevent serves through.
 *
 * Called before the loop thread starts and after it stopped.
 */
#ifndef LOP_APISERVER_AS_TLS_H
#define LOP_APISERVER_AS_TLS_H

#include "apiserver/as_internal.h"

/* Make srv->ssl and srv->ca_pem and have srv->http serve TLS; client_ca (a PEM file, NULL for
 * none) turns on client-certificate verification (srv->client_ca). LOP_OK, or LOP_EINVAL (the CA
 * file cannot be loaded) / LOP_ERR (OpenSSL failed) with err. */
LOP_MUST_CHECK lop_rc_t as_tls_setup(lop_apiserver_t *srv, const char *client_ca, lop_err_t *err);
/* Free what as_tls_setup made (nothing when it did not run). */
void as_tls_free(lop_apiserver_t *srv);

#endif
