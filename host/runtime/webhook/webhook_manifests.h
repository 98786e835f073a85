/* SPDX-License-Identifier: Apache-2.0 */
/*
 * webhook_manifests.h — the Kubernetes objects that route API requests to a script set's
 * webhooks: one MutatingWebhookConfiguration and one ValidatingWebhookConfiguration
 * (admissionregistration.k8s.io/v1) holding every admission webhook, and per conversion webhook
 * the CustomResourceDefinition fields that switch the CRD to strategy Webhook. Shapes and names
 * follow kubebuilder's config/webhook/manifests.yaml and config/crd/patches/webhook_in_*.yaml
 * (`<prefix>-mutating-webhook-configuration`, a Service `<prefix>-webhook-service` in
 * `luaop-system`), so a kustomize overlay written for kubebuilder fits.
 *
 * Used by `luaop check --webhooks` (printed as YAML) and `luaop dev` (applied to the local API
 * server with a loopback url and the CA bundle).
 *
 * Thread-safety: no shared state.
 */
#ifndef LOP_RUNTIME_WEBHOOK_MANIFESTS_H
#define LOP_RUNTIME_WEBHOOK_MANIFESTS_H

#include "host/runtime/engine.h"

#include <jansson.h>

typedef struct lop_webhook_manifest_opts {
    const char *prefix;            /* object names; default "luaop" */
    const char *service_namespace; /* clientConfig.service.namespace; default "luaop-system" */
    const char *service_name;      /* default "<prefix>-webhook-service" */
    int service_port;              /* default 443 (the Service's port; it targets :9443) */
    const char *url;               /* base URL ("https://127.0.0.1:9443"): clientConfig.url = url + path
                                    * instead of a service reference (luaop dev); NULL = service */
    const char *ca_bundle_pem;     /* PEM CA certificates, written base64'd as caBundle; NULL = none
                                    * (cert-manager's cainjector or self-managed certificates fill it) */
    const char *cert_manager;      /* "NS/NAME" of a cert-manager Certificate: adds the annotation
                                    * cert-manager.io/inject-ca-from; NULL = none */
    const json_t *crds;            /* borrowed array of documents: CRD names (spec.names.plural) for
                                    * conversion webhooks; a missing one is guessed, as client-go does */
} lop_webhook_manifest_opts_t;

/*
 * The objects for decls[0..n), as a new JSON array (caller owns): the Mutating and then the
 * Validating configuration (each only when it has webhooks), then the CRD patches (apiVersion,
 * kind, metadata.name, spec.conversion only — a strategic merge patch / kustomize patch, not a
 * whole CRD). An empty array when there is no webhook.
 */
json_t *lop_webhook_manifests(const lop_webhook_decl_t *decls, size_t n, const lop_webhook_manifest_opts_t *opts);

#endif
