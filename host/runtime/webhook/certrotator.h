/* SPDX-License-Identifier: Apache-2.0 */
/*
 * certrotator.h — self-managed webhook certificates against the API server (issue 21 part 3b;
 * open-policy-agent/cert-controller pkg/rotator is the reference behaviour): the leader keeps a
 * CA and a serving certificate in one Secret, rotated by the rules of certrotate.h, and injects
 * the CA bundle into the WebhookConfigurations and CRDs that route to the webhooks.
 *
 * The Secret (type kubernetes.io/tls when luaop creates it; an existing one keeps its type and
 * other keys) holds base64 data ca.crt, ca.key, tls.crt, tls.key. Writes are optimistic: an update
 * carries the resourceVersion read, so two leaders racing (one about to lose its Lease) cannot
 * overwrite each other — the loser gets LOP_ECONFLICT / LOP_EEXIST and tries again later.
 *
 * Injection (cert-controller's "injectors"): caBundle = base64(ca.crt) on every
 * webhooks[].clientConfig of the named MutatingWebhookConfiguration and
 * ValidatingWebhookConfiguration (admissionregistration.k8s.io/v1), and on
 * spec.conversion.webhook.clientConfig of each CRD (apiextensions.k8s.io/v1) whose group and kind
 * have a conversion webhook and whose conversion strategy is Webhook. An object is written (PUT
 * with its resourceVersion) only when a caBundle differs; one that does not exist is skipped.
 *
 * Thread-safety: one thread at a time per rotator (the operator's main loop).
 */
#ifndef LOP_RUNTIME_WEBHOOK_CERTROTATOR_H
#define LOP_RUNTIME_WEBHOOK_CERTROTATOR_H

#include "host/kube/client/rest.h"
#include "host/runtime/webhook/certrotate.h"
#include "host/util/clock.h"

#include <jansson.h>

/* Set caBundle (ca_b64: base64 of the PEM bundle) on every webhooks[i].clientConfig of a
 * Mutating/ValidatingWebhookConfiguration. True when anything changed. */
bool lop_cainject_webhook_config(json_t *config, const char *ca_b64);

/* Set spec.conversion.webhook.clientConfig.caBundle of a CRD whose spec.conversion.strategy is
 * "Webhook" (clientConfig made when missing). True when it changed; false for other strategies. */
bool lop_cainject_crd(json_t *crd, const char *ca_b64);

/* The Secret's values from its JSON (data is base64, as the API serves it); absent keys NULL. */
void lop_cert_secret_from_json(const json_t *secret, lop_cert_secret_t *out);

/* Each API call of the rotator is limited to this (ms): the operator's main loop makes them. */
#define LOP_CERTROTATOR_TIMEOUT_MS 5000

typedef struct lop_certrotator_config {
    lop_rest_client_t *rest;      /* borrowed; must outlive the rotator */
    const char *secret_namespace; /* required */
    const char *secret_name;      /* required */
    lop_certrotate_config_t certs;
    const char *mutating_config;   /* MutatingWebhookConfiguration name; NULL = none */
    const char *validating_config; /* ValidatingWebhookConfiguration name; NULL = none */
    const lop_clock_t *clock;      /* NULL = system; its wall time is "now" for the rules */
} lop_certrotator_config_t;

typedef struct lop_certrotator lop_certrotator_t;

/* The strings of cfg are copied. */
lop_certrotator_t *lop_certrotator_new(const lop_certrotator_config_t *cfg);
void lop_certrotator_free(lop_certrotator_t *r);

/* The group/kind pairs whose CRDs get the bundle (copied; replaces the previous set). The CRD
 * names are looked up (one LIST of CRDs) at the next injection that has a pair not found yet. */
void lop_certrotator_set_crds(lop_certrotator_t *r, const char *const *groups, const char *const *kinds, size_t n);

/*
 * Read the Secret, create or rotate what the rules say, write it back. On LOP_OK *out holds the
 * values now in the Secret (caller frees with lop_cert_secret_free), *next_ns the monotonic time
 * (the config's clock) of the next check, *wrote whether this call wrote the Secret.
 * Errors: the REST rc (LOP_ECONFLICT / LOP_EEXIST when another writer won: retry soon), or the
 * certgen error, with err.
 */
LOP_MUST_CHECK lop_rc_t lop_certrotator_rotate(lop_certrotator_t *r, lop_cert_secret_t *out, int64_t *next_ns,
                                               bool *wrote, lop_err_t *err);

/* Inject ca_bundle_pem into the configured objects (see above). *updated counts the objects
 * written. LOP_OK, or the first REST error (the remaining objects are still tried). */
LOP_MUST_CHECK lop_rc_t lop_certrotator_inject(lop_certrotator_t *r, const char *ca_bundle_pem, int *updated,
                                               lop_err_t *err);

#endif
