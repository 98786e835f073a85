/* SPDX-License-Identifier: Apache-2.0 */
/* manager_internal.h — the manager's private structures, shared by manager.c (wiring),
 * manager_events.c (informer event dispatch) and hostapi.c (lop_host_api_t). */
#ifndef LOP_RUNTIME_MANAGER_INTERNAL_H
#define LOP_RUNTIME_MANAGER_INTERNAL_H

#include "host/kube/cache/rest_listwatch.h"
#include "host/kube/cache/informer.h"
#include "host/runtime/controller.h"
#include "host/runtime/manager.h"
#include "host/runtime/metrics/metrics_bind.h"
#include "host/runtime/recorder.h"
#include "host/runtime/scriptrt.h"

#include <pthread.h>

/* One shared informer: GVR + namespace scope + label selector, referenced by bindings. */
typedef struct inf_entry {
    char key[640];
    lop_rest_mapping_t mapping;
    char *ns;       /* NULL = all namespaces */
    char *selector; /* NULL = everything */
    bool meta_only; /* entries hold apiVersion, kind and metadata only (LOP_OBJ_METADATA_ONLY),
                     * listed and watched as PartialObjectMetadata (lop_rest_listwatch_new_metadata) */
    lop_informer_t *inf;
    /* Field indexes on its store (manager_index.c): informers that cache the kind in full (no
     * selector, not metadata-only) get every index declared on the kind; the paths they
     * evaluate, and the names, are owned here and freed after the informer. */
    struct lop_fieldpath **index_paths;    /* NULL for an extract index */
    struct index_extract **index_extracts; /* the extract index's ud (NULL for a path) */
    char **index_names;
    size_t nindexes;
    int refs;
    bool started;
    int notify_id; /* handler that wakes read-your-writes waiters */
    /* The {gvr} informer series it is counted in (lop_metrics_gvr_t, shared by every informer of
     * its GVR name; the manager's gvr_metrics owns it): set by the reload that committed it. */
    lop_metrics_gvr_t *gvr_metrics;
    struct inf_entry *next;
} inf_entry_t;

struct ctrl_entry;

/* One watch of one controller on one informer: predicates + mapping to requests. */
typedef struct binding {
    lop_manager_t *m;
    struct ctrl_entry *ctrl;
    inf_entry_t *inf;
    int handler_id;
    lop_map_kind_t map;
    int map_lua_id;
    lop_pred_t *preds; /* owned deep copy */
    size_t npreds;
    uint64_t gen; /* script generation whose event VM its Lua ids belong to */
} binding_t;

typedef struct ctrl_entry {
    char *name;
    lop_controller_t *ctrl;
    lop_rest_mapping_t primary; /* the for_ kind: owner references are matched against it */
    binding_t **bindings;
    size_t nbindings;
    bool started;
    bool moved;                        /* reload: its controller now belongs to the new wiring */
    bool unbound;                      /* made by a reload not committed yet: its metrics are not bound */
    bool leader_election;              /* needs leadership to run and write */
    int workers;                       /* max_concurrent_reconciles it was built with */
    lop_ratelimit_decl_t rate_limiter; /* the queue's limiter it was built with */
    lop_metrics_queue_t queue_metrics;
    lop_metrics_controller_t ctrl_metrics;
    lop_metrics_queue_t *queue_obs; /* the queue observer's ud (a copy of queue_metrics); owned */
    int64_t deadline_ns;            /* the reconcile deadline of this controller (0 = none) */
    struct ctrl_entry *next;
} ctrl_entry_t;

/* The field indexes (op.index) of the set being installed, their kinds resolved: filled by the
 * install validator (lop_manager_index_plan), read while the wiring is staged. */
typedef struct index_plan_ent {
    lop_rest_mapping_t mp;
    char *name;
    char *field;        /* NULL: extract */
    int extract_lua_id; /* > 0: a Lua extract function of the staged set */
} index_plan_ent_t;

typedef struct index_plan {
    index_plan_ent_t *v;
    size_t n;
} index_plan_t;

/* Resolved mappings for every watch of every declaration, in declaration order. */
typedef struct plan {
    lop_rest_mapping_t *mappings;
    size_t n;
} plan_t;

struct lop_manager {
    lop_manager_config_t cfg;
    char *namespace_; /* the --namespace list as given ("a,b"); NULL = all namespaces */
    /* The namespaces the cache holds (controller-runtime's cache.Options.DefaultNamespaces):
     * namespace_ split at commas, deduplicated; nns == 0 = every namespace. Each watch of a
     * namespaced kind gets one informer per namespace (wire_stage), merged in reads (hostapi.c). */
    char **nss;
    size_t nns;
    char *identity;
    const lop_clock_t *clock;
    lop_host_api_t host;
    lop_scriptrt_t *rt;
    lop_recorder_t *recorder;
    pthread_mutex_t mu; /* guards infs, ctrls (readers: hostapi cache lookups) */
    inf_entry_t *infs;
    ctrl_entry_t *ctrls;
    plan_t plan;              /* filled by the install validator */
    index_plan_t iplan;       /* likewise, for the field indexes */
    char staging_version[17]; /* the version of the set being installed (extract indexes' keys) */
    ctrl_entry_t *staged;     /* the wiring the install validator built, until committed */
    pthread_mutex_t ryw_mu;   /* read-your-writes: informer events broadcast ryw_cond */
    pthread_cond_t ryw_cond;
    struct ryw_waiter *ryw_waiters; /* writes in flight (hostapi.c), guarded by ryw_mu */
    /* One record per GVR name with a committed informer, bound to its informer series (the sum
     * over those informers); touched by the installing/owner thread only (wire_commit,
     * inf_release), scrapes read a record through its own lock. */
    lop_metrics_gvr_t **gvr_metrics;
    size_t ngvr_metrics;
    bool started;
    size_t abandoned; /* reconciles a bounded stop left running (owner thread) */
    lop_manager_stats_t stats;
    /* Tests only (NULL otherwise): called by the wiring on the installing thread before it
     * creates an informer (key as inf_entry_t.key); a status other than LOP_OK (with err
     * filled) makes that creation fail. No real input makes the creation fail today (the REST
     * list/watch and the informer constructors refuse only a missing list/watch), yet a reload
     * must survive it: this is how the tests reach that path. */
    lop_rc_t (*inf_new_hook)(void *ud, const char *key, lop_err_t *err);
    void *inf_new_hook_ud;
};

/* manager_events.c */
void lop_binding_on_add(void *ud, lop_obj_t *obj);
void lop_binding_on_update(void *ud, lop_obj_t *old, lop_obj_t *obj);
void lop_binding_on_delete(void *ud, lop_obj_t *obj, bool tombstone);
void lop_binding_on_synced(void *ud); /* opens the controller's workers once all its sources synced */
/* manager.c: free a controller entry's bindings, every handler removed before any is freed (a
 * binding's on_synced reads its siblings). */
void lop_ctrl_bindings_free(ctrl_entry_t *c);
/* Let the controller's workers go when every informer of its bindings has synced. */
void lop_ctrl_check_synced(const ctrl_entry_t *c);

/* manager.c: whether ns is one of the namespaces the cache holds (true when it holds all). */
bool lop_manager_ns_cached(const lop_manager_t *m, const char *ns);

/* manager_index.c: field indexes. Resolve and check the set's index declarations (each on a
 * kind some watch caches in full, names unique per kind) into m->iplan. */
lop_rc_t lop_manager_index_plan(lop_manager_t *m, lop_vm_t *vm, const lop_ctrl_decl_t *decls, size_t n,
                                const lop_rest_mapping_t *maps, lop_err_t *err);
void lop_manager_index_plan_free(index_plan_t *p);
/* The suffix of the informer key of mp that names its indexes ("" when it has none): a reload
 * that changes a kind's indexes gets new informers (a fresh list, indexed from the start). */
void lop_manager_index_key(const lop_manager_t *m, const lop_rest_mapping_t *mp, char *buf, size_t len);
/* Register the planned indexes of e's kind on e's store (before the informer starts). */
void lop_manager_index_attach(lop_manager_t *m, inf_entry_t *e);
/* The install is committed (the staged set is generation gen): the extract indexes attached
 * while staging run in that generation's event VMs from now on (their informers start later). */
void lop_manager_index_commit(lop_manager_t *m, uint64_t gen);
/* Free what lop_manager_index_attach gave e (after its informer is freed). */
void lop_manager_index_entry_free(inf_entry_t *e);
/* Whether e's store has an index named name. */
bool lop_manager_index_has(const inf_entry_t *e, const char *name);

/* hostapi.c */
extern const lop_reflector_handlers_t lop_ryw_handlers; /* ud = the manager */
void lop_manager_host_api_init(lop_manager_t *m, lop_host_api_t *api);
/* hostapi_metrics.c: fill the luaop.metrics entries (left NULL when the manager has no metrics). */
void lop_manager_host_api_metrics_init(lop_manager_t *m, lop_host_api_t *api);

#endif
