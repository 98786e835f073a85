/* SPDX-License-Identifier: Apache-2.0 */
/*
 * engine.h — the scripting engine interface. host/ never includes lua.h: it sees scripting only
 * through this table of function pointers (as Redis's core sees its Lua engine). bindings/
 * implements it with LuaJIT (lop_lua_engine()); C tests may implement it with plain C.
 *
 * Two directions:
 *   host -> engine: lop_engine_t   (create a VM from a script set, read its controller
 *                                   declarations, run reconcile / predicate / map functions)
 *   engine -> host: lop_host_api_t (what scripts may call: cache reads, REST requests, leader
 *                                   state, events), passed to every VM at creation.
 *
 * Threading: a VM (lop_vm_t) is used by exactly one thread at a time — its owner (a worker, or
 * the event dispatcher for predicates and map functions). Different VMs may run concurrently.
 * lop_host_api_t functions must be safe to call from any thread.
 *
 * Identity of Lua callbacks: every VM built from the same script set declares the same controllers
 * in the same order, so a Lua predicate or map function is named by the integer id the engine
 * assigned in declaration order (lua_id), valid in every VM of that script set.
 */
#ifndef LOP_RUNTIME_ENGINE_H
#define LOP_RUNTIME_ENGINE_H

#include "host/util/clock.h"
#include "host/util/err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------- script sets */

/* One file of a script set: name is the path inside the set ("main.lua", "lib/util.lua"). */
typedef struct lop_script_file {
    char *name;
    char *data;
    size_t len;
} lop_script_file_t;

/* A script set: every file that may be required; "main.lua" is the entry. Owned by its creator. */
typedef struct lop_script_set {
    lop_script_file_t *files;
    size_t nfiles;
    char version[17]; /* first 16 hex digits of the SHA-256 over names and contents */
    char origin[256]; /* where it came from, for messages: a directory or "configmap ns/name" */
} lop_script_set_t;

/* ---------------------------------------------------------------- declarations */

/* Kinds are named as in manifests: api_version "apps/v1" or "v1", kind "Deployment". */
typedef struct lop_gvk {
    char *api_version;
    char *kind;
} lop_gvk_t;

typedef enum lop_pred_kind {
    LOP_PRED_GENERATION_CHANGED, /* update passes when metadata.generation differs; create/delete pass */
    LOP_PRED_RV_CHANGED,         /* update passes when metadata.resourceVersion differs */
    LOP_PRED_LABELS_CHANGED,
    LOP_PRED_ANNOTATIONS_CHANGED,
    LOP_PRED_AND,
    LOP_PRED_OR,
    LOP_PRED_NOT,
    LOP_PRED_LUA, /* a Lua function; see lua_id */
} lop_pred_kind_t;

typedef struct lop_pred {
    lop_pred_kind_t kind;
    struct lop_pred *args; /* operands of AND / OR (nargs) and NOT (1) */
    size_t nargs;
    int lua_id; /* LOP_PRED_LUA: id for lop_engine_t.predicate */
} lop_pred_t;

typedef enum lop_map_kind {
    LOP_MAP_SELF,  /* enqueue the object's own namespace/name (the primary kind: for_) */
    LOP_MAP_OWNER, /* enqueue the ownerReference with controller=true whose kind matches for_ (owns) */
    LOP_MAP_LUA,   /* a Lua map function returns the requests (watches) */
} lop_map_kind_t;

typedef struct lop_watch_decl {
    lop_gvk_t gvk;
    lop_map_kind_t map;
    int map_lua_id;    /* LOP_MAP_LUA only */
    lop_pred_t *preds; /* all must pass (AND); may be empty */
    size_t npreds;
    char *namespace_;     /* NULL: all namespaces (or the --namespace flag) */
    char *label_selector; /* NULL: everything */
    bool metadata_only;   /* cache apiVersion, kind and metadata only (controller-runtime's
                            * OnlyMetadata); the API server is asked for metadata only
                            * (PartialObjectMetadata, lop_rest_listwatch_new_metadata), cached
                            * as this kind; reads of the kind are not served from it */
} lop_watch_decl_t;

/* A controller's workqueue rate limiter (controller-runtime's Options.RateLimiter, with
 * client-go's DefaultControllerRateLimiter shape: the larger of a per-item exponential backoff
 * and an overall token bucket). Each field 0 = the default's value. */
typedef struct lop_ratelimit_decl {
    int64_t base_delay_ns; /* first retry of an item (5 ms) */
    int64_t max_delay_ns;  /* cap of the per-item backoff, >= base (1000 s) */
    double qps;            /* the bucket's refill, retries per second over all items (10) */
    int burst;             /* the bucket's size (100) */
} lop_ratelimit_decl_t;

typedef struct lop_ctrl_decl {
    char *name;
    lop_watch_decl_t for_;
    lop_watch_decl_t *owns;
    size_t nowns;
    lop_watch_decl_t *watches;
    size_t nwatches;
    int max_concurrent_reconciles; /* >= 1; default 1 */
    bool leader_election;          /* false: runs on every replica (default true) */
    int64_t reconcile_timeout_ns;  /* 0: the engine default */
    lop_ratelimit_decl_t rate_limiter;
} lop_ctrl_decl_t;

/* A declared field index (op.index, docs/lua-api.md "Field indexes"; controller-runtime's
 * FieldIndexer.IndexField): every informer that caches the kind in full gets a field index
 * named name whose values are what field (host/kube/cache/fieldpath.h) reaches in each object,
 * or what the Lua extract function returns for it (lop_engine_t.index_values, run in an event
 * VM under the predicate deadline), keyed by namespace; op.client.list(..., {index = {[name] =
 * value}}) reads it. Names are unique per kind. */
typedef struct lop_index_decl {
    char *name;
    lop_gvk_t gvk;
    char *field;        /* a field path, compiled by the engine when declared (so it is valid); NULL
                         * when extract_lua_id is set */
    int extract_lua_id; /* > 0: the Lua extract function (lop_engine_t.index_values) */
} lop_index_decl_t;

/* ---------------------------------------------------------------- reconcile */

typedef struct lop_reconcile_req {
    const char *namespace_; /* "" for cluster-scoped */
    const char *name;
    const char *reconcile_id; /* unique per attempt, for logs */
} lop_reconcile_req_t;

/* How a reconcile ended; mapped to the queue exactly as controller-runtime does. */
typedef enum lop_result_kind {
    LOP_RESULT_DONE,          /* Forget */
    LOP_RESULT_REQUEUE,       /* AddRateLimited (Result{Requeue:true}) */
    LOP_RESULT_REQUEUE_AFTER, /* Forget + AddAfter(requeue_after_ns) */
    LOP_RESULT_ERROR,         /* AddRateLimited; message logged (a raised error: with traceback) */
    LOP_RESULT_TERMINAL,      /* no retry; counted as terminal error */
} lop_result_kind_t;

typedef struct lop_reconcile_result {
    lop_result_kind_t kind;
    int64_t requeue_after_ns;
    bool timed_out;     /* the deadline interrupted it (kind is ERROR) */
    bool vm_broken;     /* memory cap hit or similar: the host must rebuild this VM */
    char message[2048]; /* error text, with traceback for raised errors */
} lop_reconcile_result_t;

/* An informer event as seen by predicates and map functions. JSON is borrowed for the call. */
typedef enum lop_event_type { LOP_EV_ADD, LOP_EV_UPDATE, LOP_EV_DELETE } lop_event_type_t;

typedef struct lop_event_view {
    lop_event_type_t type;
    const char *old_json; /* UPDATE only, else NULL */
    size_t old_len;
    const char *obj_json; /* the new (or deleted) object */
    size_t obj_len;
} lop_event_view_t;

typedef struct lop_request_list {
    char **namespaces; /* parallel arrays, n entries, each malloc'd; free with lop_request_list_free */
    char **names;
    size_t n;
} lop_request_list_t;

void lop_request_list_free(lop_request_list_t *l);

/* ---------------------------------------------------------------- engine -> host */

/* A read-only JSON document handed out by the host; valid until release. */
typedef struct lop_blob {
    const char *json;
    size_t len;
    void *ref; /* host-private */
} lop_blob_t;

typedef struct lop_api_request {
    const char *verb;        /* "get" "list" "create" "update" "patch" "delete" */
    const char *api_version; /* "apps/v1" */
    const char *kind;        /* "Deployment" */
    const char *namespace_;  /* NULL or "" for cluster-scoped kinds / all namespaces */
    const char *name;        /* NULL for list/create */
    const char *subresource; /* NULL, "status", "scale" */
    const char *patch_type;  /* patch only: "merge" "json" "strategic" "apply" */
    const char *query;       /* extra query string without '?', e.g. "fieldManager=x&force=true" */
    const char *body;        /* request body (JSON), may be NULL */
    size_t body_len;
    const char *controller; /* the controller whose reconcile makes the request, or NULL
                              * (decides whether a write needs leadership) */
    int64_t timeout_ns;     /* what is left of the calling script's deadline (a reconcile's
                              * --reconcile-timeout), ns > 0; 0 = none. The call, retries and
                              * Retry-After waits included, ends within it (client-go: the
                              * reconcile's context deadline bounds every client call) */
} lop_api_request_t;

typedef struct lop_api_response {
    int code;   /* HTTP status; 0 when no response was received (see the rc and err) */
    char *body; /* malloc'd, NUL-terminated; free with free() */
    size_t len;
} lop_api_response_t;

typedef struct lop_host_api {
    void *ud; /* passed back as the first argument */

    /* Read one object from the informer cache. LOP_OK: *out is a reference, release it;
     * LOP_ENOTFOUND: not in the cache; LOP_EAGAIN: the kind is not cached (use request). */
    lop_rc_t (*cache_get)(void *ud, const char *api_version, const char *kind, const char *ns, const char *name,
                          lop_blob_t *out, lop_err_t *err);
    /* List cached objects (ns NULL = all namespaces; selector NULL = all). *items is a malloc'd
     * array of n references: release each, then free the array. LOP_EAGAIN when not cached. */
    lop_rc_t (*cache_list)(void *ud, const char *api_version, const char *kind, const char *ns,
                           const char *label_selector, lop_blob_t **items, size_t *n, lop_err_t *err);
    void (*release)(void *ud, lop_blob_t *b);

    /* A REST request, mapped to a URL through discovery. LOP_OK for 2xx, else the rc of the
     * HTTP code with err filled from the Status body; resp holds the body either way (free it). */
    lop_rc_t (*request)(void *ud, const lop_api_request_t *req, lop_api_response_t *resp, lop_err_t *err);

    /* Record an Event about an object (JSON of the object); type "Normal"/"Warning". */
    lop_rc_t (*record_event)(void *ud, const char *obj_json, size_t len, const char *type, const char *reason,
                             const char *message, lop_err_t *err);

    bool (*is_leader)(void *ud);
    const char *(*identity)(void *ud); /* static for the process lifetime */

    /* ---- luaop.metrics (appended; NULL in hosts without a metrics registry) ---- */

    /*
     * Declare a script metric in the process's registry (the one behind /metrics). type is a
     * lop_host_metric_type_t; labels a NULL-terminated list of label names (NULL = none);
     * buckets (histograms only; NULL/0 = the default buckets) strictly increasing. Idempotent:
     * declaring the identical metric again (every worker VM runs main.lua) returns the same
     * handle. Returns an opaque handle valid for the process lifetime, or NULL with err set:
     * LOP_EINVAL for a reserved name (controller_runtime_, workqueue_, rest_client_,
     * leader_election_, luaop_), a bad name/label/bucket list, or a redeclaration with another
     * shape.
     */
    void *(*metric_declare)(void *ud, int type, const char *name, const char *help, const char *const *labels,
                            const double *buckets, size_t nbuckets, lop_err_t *err);
    /*
     * Update one child of a declared metric: op is a lop_host_metric_op_t (ADD: counters with
     * v >= 0 and gauges; SET: gauges; OBSERVE: histograms); values holds nvalues label values
     * in declaration order. LOP_EINVAL with err for a wrong op for the type, a wrong number of
     * values, a negative counter add, a non-finite value or too many children.
     */
    lop_rc_t (*metric_update)(void *ud, void *metric, int op, const char *const *values, size_t nvalues, double v,
                              lop_err_t *err);

    /* ---- field indexes (appended; NULL in hosts without them) ---- */

    /*
     * The cached objects of a kind whose declared field index `index` holds value, in namespace
     * ns (NULL or "" = all namespaces), filtered by label_selector (NULL = all): controller-
     * runtime's client.MatchingFields served by the cache (lop_fieldindex_find: O(matches)).
     * *items as for cache_list. Errors: LOP_EINVAL with reason "UnknownIndex" when the kind has
     * no index of that name (the message names it and the declared ones), LOP_EINVAL when the
     * selector does not parse; LOP_EAGAIN when
     * the kind's cache has not synced yet (no live fallback: the API server has no such index);
     * a namespace outside --namespace as for cache_list.
     */
    lop_rc_t (*cache_list_index)(void *ud, const char *api_version, const char *kind, const char *ns, const char *index,
                                 const char *value, const char *label_selector, lop_blob_t **items, size_t *n,
                                 lop_err_t *err);
} lop_host_api_t;

typedef enum lop_host_metric_type {
    LOP_HOST_METRIC_COUNTER = 0,
    LOP_HOST_METRIC_GAUGE = 1,
    LOP_HOST_METRIC_HISTOGRAM = 2,
} lop_host_metric_type_t;

typedef enum lop_host_metric_op {
    LOP_HOST_METRIC_ADD = 0,
    LOP_HOST_METRIC_SET = 1,
    LOP_HOST_METRIC_OBSERVE = 2,
} lop_host_metric_op_t;

/* ---------------------------------------------------------------- webhooks */

/* What a declared webhook is (op.webhook.*, docs/lua-api.md). Defaulters are MUTATING with
 * defaulter=true; validators are VALIDATING with validator=true. */
typedef enum lop_webhook_type {
    LOP_WEBHOOK_MUTATING,   /* AdmissionReview; answers with a JSONPatch the host computes */
    LOP_WEBHOOK_VALIDATING, /* AdmissionReview; allowed or denied */
    LOP_WEBHOOK_CONVERSION, /* ConversionReview (apiextensions.k8s.io/v1) */
} lop_webhook_type_t;

/* One admission rule (admissionregistration.k8s.io/v1 RuleWithOperations); every list is
 * NULL-terminated, "*" matches anything. */
typedef struct lop_webhook_rule {
    char **operations; /* "CREATE" "UPDATE" "DELETE" "CONNECT" "*" */
    char **api_groups; /* "" is the core group */
    char **api_versions;
    char **resources; /* plural, optionally "/subresource": "memcacheds", "memcacheds/status" */
    char *scope;      /* "Namespaced" "Cluster" "*"; NULL = "*" */
} lop_webhook_rule_t;

typedef struct lop_webhook_decl {
    lop_webhook_type_t type;
    /* The webhook's name in WebhookConfigurations and the metrics' webhook label:
     * kubebuilder's "m<kind>.<group>" / "v<kind>.<group>" lowercased for defaulters and
     * validators, the declared name for generic ones, "conversion.<kind>.<group>" for conversion. */
    char *name;
    /* The path served: kubebuilder's "/mutate-<group with . as ->-<version>-<kind lowercased>",
     * "/validate-...", or "/convert" (shared by every conversion webhook; the host dispatches by
     * the objects' group and kind). Unique among MUTATING/VALIDATING decls. */
    char *path;
    lop_gvk_t gvk;             /* defaulter/validator: the kind (for_); conversion: api_version = the group
                       * only ("cache.example.com"), kind the CRD's kind; generic: api_version and
                       * kind NULL */
    lop_webhook_rule_t *rules; /* generic mutating/validating: the rules; defaulter/validator: one
                                 * rule derived from for_ (CREATE, UPDATE; + DELETE for a
                                 * validator with validate_delete) with the plural resource */
    size_t nrules;
    char *failure_policy; /* "Fail" (default) or "Ignore" — for the manifests */
    char *side_effects;   /* "None" (default) or "NoneOnDryRun" */
    int timeout_seconds;  /* 1..30, default 10 (admissionregistration's default) */
    bool defaulter;       /* op.webhook.defaulter */
    bool validator;       /* op.webhook.validator */
    int lua_id;           /* for lop_engine_t.admit / convert; valid in every VM of the set */
} lop_webhook_decl_t;

/* The outcome of one admission call (engine -> host). Strings inside are malloc'd; free with
 * lop_admission_result_free. */
typedef struct lop_admission_result {
    bool allowed;
    int code;           /* denied: HTTP-style status for AdmissionResponse.status.code
                             * (default 403); allowed: 0 */
    char message[2048]; /* denied: the reason (a script error: "file:line: msg") */
    char **warnings;    /* nwarnings malloc'd strings (AdmissionResponse.warnings) */
    size_t nwarnings;
    char *patched_json; /* MUTATING, allowed: the object after the webhook ran (malloc'd,
                             * NUL-terminated JSON through the lossless codec; NULL for validating
                             * webhooks and when there is no object, e.g. DELETE). The host computes
                             * the RFC 6902 JSONPatch from request.object to it; an empty diff
                             * means no patch. */
    size_t patched_len;
} lop_admission_result_t;

void lop_admission_result_free(lop_admission_result_t *r);

/* ---------------------------------------------------------------- host -> engine */

typedef struct lop_engine_opts {
    size_t memory_limit_bytes;    /* per VM; 0 = unlimited */
    int64_t reconcile_timeout_ns; /* default per-reconcile deadline; 0 = none */
    int64_t load_timeout_ns;      /* deadline for loading the script set; 0 = none */
    bool jit;                     /* --lua-jit: JIT on, deadlines become cooperative */
    bool unsafe_libs;             /* allow io/os/debug/ffi/jit to user code */
    const lop_clock_t *clock;     /* for deadlines and luaop.clock */
    /* Deadline of each Lua predicate and map function call (--predicate-timeout); 0 = the
     * default, LOP_PREDICATE_TIMEOUT_DEFAULT_NS. They run on the informer threads for every
     * event, so their deadline is short, not the reconcile's (docs/execution-model.md). */
    int64_t predicate_timeout_ns;
} lop_engine_opts_t;

/* 250 ms. controller-runtime has no deadline here: its predicates and map functions are Go code
 * the operator author compiled in. Here they are scripts from a ConfigMap running on the
 * informer's delivery thread, so a bound is needed, and 250 ms is ~1000x what a predicate that
 * compares two decoded fields costs (~0.1-0.3 ms with the JIT off, the object decoded on first
 * read) and leaves a map function room to list a few thousand cached objects; yet a runaway one
 * holds its informer's other handlers back by a quarter of a second per event, not a minute. */
#define LOP_PREDICATE_TIMEOUT_DEFAULT_NS (250 * 1000 * 1000LL)

typedef struct lop_vm lop_vm_t;

typedef struct lop_engine {
    const char *name; /* "luajit" */

    /* Build a VM: sandbox, load every file, run main.lua (which declares controllers).
     * Returns NULL and fills err (message "file:line: ...") on any failure. */
    lop_vm_t *(*vm_new)(const lop_script_set_t *set, const lop_engine_opts_t *opts, const lop_host_api_t *host,
                        lop_err_t *err);

    /* The controllers main.lua declared; borrowed until vm_free. */
    void (*declarations)(lop_vm_t *vm, const lop_ctrl_decl_t **decls, size_t *n);

    /* Run the named controller's reconcile for req. Never raises; the outcome is in *res. */
    void (*reconcile)(lop_vm_t *vm, const char *controller, const lop_reconcile_req_t *req,
                      lop_reconcile_result_t *res);

    /* Run a Lua predicate. LOP_OK with *pass set, or an error (the host then lets the event pass). */
    lop_rc_t (*predicate)(lop_vm_t *vm, int lua_id, const lop_event_view_t *ev, bool *pass, lop_err_t *err);

    /* Run a Lua map function; on LOP_OK *out holds the requests (caller frees). */
    lop_rc_t (*map)(lop_vm_t *vm, int lua_id, const lop_event_view_t *ev, lop_request_list_t *out, lop_err_t *err);

    size_t (*memory)(lop_vm_t *vm); /* bytes currently allocated by the VM */
    void (*vm_free)(lop_vm_t *vm);

    /* ---- webhooks (appended; NULL in engines without webhooks) ---- */

    /* The webhooks main.lua declared (op.webhook.*); borrowed until vm_free. */
    void (*webhook_declarations)(lop_vm_t *vm, const lop_webhook_decl_t **decls, size_t *n);

    /*
     * Run an admission webhook. request_json is the AdmissionReview's "request" member, as
     * received (uid, kind, resource, subResource, operation, userInfo, object, oldObject, dryRun,
     * namespace, name, options). The engine decodes object/oldObject and calls the Lua
     * function(s) under the webhook deadline (timeout_ns > 0; 0 = the engine's reconcile
     * default). A Lua error, a timeout or a broken VM is not an rc error: it is a denial with
     * code 500 and message naming file:line (*vm_broken set when the VM must be rebuilt).
     * LOP_OK with *res filled; LOP_EINVAL only when request_json is not an object.
     */
    lop_rc_t (*admit)(lop_vm_t *vm, int lua_id, const char *request_json, size_t len, int64_t timeout_ns,
                      lop_admission_result_t *res, bool *vm_broken, lop_err_t *err);

    /*
     * Convert one object (JSON) to desired_api_version ("cache.example.com/v1") with the Lua
     * conversion function of lua_id. LOP_OK: *out is malloc'd JSON (*out_len bytes) of the
     * converted object, apiVersion set to desired_api_version. Errors (a raise, a timeout, a
     * result that is not an object): LOP_ERR with err "file:line: ..."; *vm_broken as for admit.
     */
    lop_rc_t (*convert)(lop_vm_t *vm, int lua_id, const char *obj_json, size_t len, const char *desired_api_version,
                        int64_t timeout_ns, char **out, size_t *out_len, bool *vm_broken, lop_err_t *err);

    /* ---- field indexes (appended; NULL in engines without them) ---- */

    /* The field indexes main.lua declared (op.index), in declaration order; borrowed until vm_free. */
    void (*index_declarations)(lop_vm_t *vm, const lop_index_decl_t **decls, size_t *n);
    /* Run a Lua extract function (op.index{extract = ...}) on obj_json under the predicate
     * deadline: LOP_OK with *vals a malloc'd array of *n malloc'd strings (free each, then the
     * array; NULL when none), the function's list of values in order (numbers and booleans as
     * their string form). Errors (a raise, a result that is not a list of scalars, the deadline:
     * LOP_ETIMEDOUT, the memory cap: LOP_ENOMEM, the VM must be rebuilt) with err "index 'x'
     * extract: file:line: ..."; *vals is NULL then. */
    lop_rc_t (*index_values)(lop_vm_t *vm, int lua_id, const char *obj_json, size_t len, char ***vals, int *n,
                             lop_err_t *err);
} lop_engine_t;

#endif
