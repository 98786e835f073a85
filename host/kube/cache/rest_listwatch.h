/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rest_listwatch.h — listwatch.h implemented over the REST client (rest.h) for one resource: the
 * ListerWatcher a reflector or informer is given for a real API server. client-go's counterpart
 * is tools/cache.NewListWatchFromClient (and, for metadata-only informers, the metadata client's
 * ListWatch in k8s.io/client-go/metadata/metadatainformer).
 *
 * Thread-safety: as listwatch.h; the constructors are safe from any thread.
 */
#ifndef LOP_KUBE_CACHE_REST_LISTWATCH_H
#define LOP_KUBE_CACHE_REST_LISTWATCH_H

#include "host/kube/cache/listwatch.h"
#include "host/kube/client/rest.h"

#include <stdbool.h>

/* The resource mapping used to build paths; see restmapper.h. */
struct lop_rest_mapping;

/*
 * A lop_listwatch_t (listwatch.h) for one resource through this client. mapping is copied;
 * namespace NULL/"" = all namespaces (ignored for cluster-scoped resources); selectors may be
 * NULL. The client must outlive the result. Release it with lop_rest_listwatch_free, or hand
 * it to an owner that calls lw->free(lw->ud) (reflector/informer) and then free() the struct
 * itself. cancel is sticky: once called, the running and every later list/watch return
 * LOP_ECLOSED.
 */
lop_listwatch_t *lop_rest_listwatch_new(lop_rest_client_t *c, const struct lop_rest_mapping *mapping,
                                        const char *namespace, const char *label_selector, const char *field_selector);
/*
 * The same for a metadata-only informer (controller-runtime's OnlyMetadata, client-go's metadata
 * informer): the API server is asked for metadata only — LIST with LOP_ACCEPT_PARTIAL_LIST,
 * WATCH (watch-list included) with LOP_ACCEPT_PARTIAL — so it neither serializes nor sends spec
 * and status. The bytes are then PartialObjectMetadata objects (meta.k8s.io/v1); the informer
 * must be built with LOP_OBJ_METADATA_ONLY and the watched kind (lop_informer_config_t
 * api_version/kind) so that its entries carry the watched kind, as client-go's metadata
 * informer sets it. A server that ignores `as=` sends full objects, which that informer strips
 * to the same entries. A server that answers 406 NotAcceptable gets the same request again at
 * once with plain JSON, and every later one from this listwatch too (logged once at warn).
 */
lop_listwatch_t *lop_rest_listwatch_new_metadata(lop_rest_client_t *c, const struct lop_rest_mapping *mapping,
                                                 const char *namespace, const char *label_selector,
                                                 const char *field_selector);
/* True when lw (from lop_rest_listwatch_new_metadata) fell back to full objects after a 406;
 * false for any other listwatch (REST or not). Safe from any thread; lw may be a copy of the
 * struct (the informer keeps one and owns the ud: valid while that informer lives). */
bool lop_rest_listwatch_partial_refused(const lop_listwatch_t *lw);

/* Free a listwatch from lop_rest_listwatch_new (calls its free and releases the struct). */
void lop_rest_listwatch_free(lop_listwatch_t *lw);

#endif
