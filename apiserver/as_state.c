/* SPDX-License-Identifier: Apache-2.0 */
/* as_state.c — the server's state as a whole: built at start (registry, store, bootstrap
 * namespaces), torn down at stop, rebuilt by a reset. See as_state.h. */
#include "apiserver/as_state.h"

#include "apiserver/as_registry.h"
#include "apiserver/as_review.h"
#include "apiserver/as_store.h"
#include "apiserver/as_util.h"
#include "apiserver/as_watch.h"

void as_state_init(lop_apiserver_t *srv)
{
    as_registry_init(srv);
    as_review_register(srv);
    as_store_init(srv);
    as_res_t *nsr = as_res_find(srv, "", "v1", "namespaces");
    const char *names[] = {"default", "kube-system", "kube-public", "kube-node-lease", NULL};
    for (int i = 0; names[i]; i++) {
        char uid[37], t[32];
        as_uuid(uid);
        json_t *o = json_pack("{s:s,s:s,s:{s:s,s:s,s:s,s:{s:s}},s:{s:[s]},s:{s:s}}", "kind", "Namespace", "apiVersion",
                              "v1", "metadata", "name", names[i], "uid", uid, "creationTimestamp",
                              as_now_time(t, sizeof t), "labels", "kubernetes.io/metadata.name", names[i], "spec",
                              "finalizers", "kubernetes", "status", "phase", "Active");
        as_store_commit(srv, nsr->coll, names[i], o);
    }
}

void as_state_free(lop_apiserver_t *srv)
{
    as_watch_close_all(srv);
    as_store_free(srv);
    as_registry_free(srv);
}

void as_state_reset(lop_apiserver_t *srv)
{
    as_state_free(srv);
    srv->nfaults = 0;
    srv->stall = false;
    srv->latency_ms = 0;
    as_state_init(srv);
}
