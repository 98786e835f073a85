/* SPDX-License-Identifier: Apache-2.0 */
/*
 * webhook_certs.h — `luaop run --webhook-cert-secret NS/NAME`: self-managed webhook certificates
 * (issue 21 part 3b, docs/webhooks.md "Self-managed certificates").
 *
 * Every replica watches the Secret (an informer on that one name) and writes its tls.crt/tls.key
 * into a private temporary directory the way kubelet projects a Secret (a new "..<n>" directory,
 * a "..data" symlink renamed over the old one, tls.crt -> ..data/tls.crt), which the webhook
 * server's certwatcher (host/runtime/webhook/certwatcher.h) loads on the inotify event: a rotated
 * certificate is served on new connections without a restart, open ones keep theirs.
 *
 * The leader (every replica when leader election is off) runs the rotator
 * (host/runtime/webhook/certrotator.h): creates the Secret when missing, rotates by the rules of
 * certrotate.h, and injects the CA bundle into the configured WebhookConfigurations and the CRDs
 * of the script set's conversion webhooks. It checks when the rules say a change is due, when the
 * Secret changed, when the declarations changed, and every LOP_OP_CERTS_RESYNC_S seconds (so a
 * WebhookConfiguration applied later, or re-applied without its caBundle, gets it back).
 *
 * Main thread only (the informer's handlers only copy the Secret and wake the main loop).
 */
#ifndef LOP_CMD_WEBHOOK_CERTS_H
#define LOP_CMD_WEBHOOK_CERTS_H

#include "host/kube/client/rest.h"
#include "host/kube/client/restmapper.h"
#include "host/runtime/options.h"
#include "host/util/err.h"

#include <stdbool.h>
#include <stddef.h>

/* How often the leader re-reads the Secret and re-checks the caBundles without another reason. */
#define LOP_OP_CERTS_RESYNC_S 10

typedef struct lop_op_certs lop_op_certs_t;

/* Parse the flags (--webhook-cert-secret NS/NAME, --webhook-service-name/-namespace, the
 * configuration names, the validities), make the temporary cert dir, start the Secret informer.
 * wake_fd (an eventfd, -1 = none) is written when the Secret changes. LOP_EINVAL on bad flags. */
LOP_MUST_CHECK lop_rc_t lop_op_certs_new(const lop_run_opts_t *o, lop_rest_client_t *rest, lop_restmapper_t *mapper,
                                         int wake_fd, lop_op_certs_t **out, lop_err_t *err);

/* The directory the serving pair is written to (tls.crt, tls.key). */
const char *lop_op_certs_dir(const lop_op_certs_t *c);

/* The group/kind pairs of the script set's conversion webhooks (their CRDs get the bundle). */
void lop_op_certs_set_crds(lop_op_certs_t *c, const char *const *groups, const char *const *kinds, size_t n);

/* One step: the leader rotates and injects when due; every replica writes a changed pair from
 * the Secret into the dir. True once the dir holds a pair (the server can start). */
bool lop_op_certs_tick(lop_op_certs_t *c, bool leading);

/* Stop the informer, remove the dir. NULL ok. */
void lop_op_certs_free(lop_op_certs_t *c);

#endif
