/*
 * as_internal.h — the local API server's internal types, shared by its .c files only.
 *
 * Everything here is owned by and touched from the server's event-loop thread, except the
 * command queue (cmd_*), which other threads use under srv->mu.
 * Stored objects (json_t) are immutable once committed: every write builds a new object, so
 * history events, snapshots and watch payloads can share references without copying.
 */
#ifndef LOP_APISERVER_AS_INTERNAL_H
#define LOP_APISERVER_AS_INTERNAL_H

#include "apiserver/apiserver.h"
#include "host/meta/selector.h"
#include "host/util/buf.h"
#include "host/util/err.h"

#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AS_MAX_BODY (3u * 1024u * 1024u)

enum as_evtype { AS_ADDED = 0, AS_MODIFIED = 1, AS_DELETED = 2 };

/* A refcounted immutable byte string (one serialized watch event shared by every watcher). */
typedef struct as_blob {
    int refs;
    size_t len;
    char data[];
} as_blob_t;

as_blob_t *as_blob_new(const char *data, size_t len);
void as_blob_unref(as_blob_t *b);

typedef struct as_entry {
    char *key; /* "ns/name" or "name" */
    json_t *obj;
    as_blob_t *wire; /* obj serialized once at commit (compact; keys sorted for CRs) */
} as_entry_t;

struct as_watcher;

/* Storage for one group+resource, shared by all versions that serve it. */
typedef struct as_coll {
    char *name;     /* "group/plural" ("" group for core) */
    bool sort_keys; /* custom resources: JSON keys sorted */
    as_entry_t *items;
    size_t n, cap;
    struct as_watcher *watchers; /* doubly linked */
} as_coll_t;

/* One servable group/version/resource (a registry row). */
typedef struct as_res {
    char *group, *version, *plural, *singular, *kind, *list_kind;
    json_t *short_names; /* array of strings or NULL */
    json_t *categories;
    bool namespaced;
    bool is_cr;
    bool has_status; /* status subresource: main endpoint ignores .status */
    bool has_scale;
    bool track_generation;
    bool create_on_update;                            /* Lease */
    bool require_rv;                                  /* PUT without RV → 422 (CRs, Lease) */
    bool delete_returns_obj;                          /* Pod, Namespace */
    bool microtime_check;                             /* Lease, events.k8s.io Event */
    bool dns_label_name;                              /* Namespace, Service */
    char *scale_spec, *scale_status, *scale_selector; /* JSON paths, ".spec.replicas" */
    json_t *schema;                                   /* openAPIV3Schema (CRs) or NULL */
    json_t *selectable;                               /* array of field paths "spec.color" or NULL */
    const char *const *extra_fields;                  /* built-in field-selector fields (NULL-terminated) */
    char *crd_name;                                   /* CRs: owning CRD's metadata.name */
    char api_version[128];                            /* "v1" or "g/v" */
    as_coll_t *coll;
} as_res_t;

typedef struct as_event {
    int64_t rv;
    int type;
    as_coll_t *coll;
    char *key;
    json_t *obj;      /* state after (DELETED: last state, RV = deletion revision) */
    json_t *prev;     /* state before, NULL for ADDED */
    as_blob_t *wire;  /* obj serialized (shared with the store entry) */
    as_blob_t *pwire; /* prev serialized, NULL for ADDED */
} as_event_t;

/* What the negotiated Accept asks the response to be converted to (apiserver's `as=`, `g=`, `v=`
 * media type parameters): nothing, or the metadata-only view of an object / of a list. */
typedef enum as_conv_kind { AS_CONV_NONE = 0, AS_CONV_PARTIAL, AS_CONV_PARTIAL_LIST } as_conv_kind_t;

typedef struct as_conv {
    as_conv_kind_t kind;
    char api_version[32]; /* "meta.k8s.io/v1" or "meta.k8s.io/v1beta1"; "" for AS_CONV_NONE */
} as_conv_t;

typedef struct as_watcher {
    struct as_watcher *next, *prev;
    lop_apiserver_t *srv;
    as_res_t *res;
    as_coll_t *coll;
    struct evhttp_request *r;
    struct evhttp_connection *conn;
    char *ns; /* NULL = all namespaces */
    lop_label_selector_t *ls;
    lop_field_selector_t *fs;
    bool bookmarks;
    struct event *timer;    /* end of the watch (timeoutSeconds) */
    struct event *bm_timer; /* periodic bookmark, once a minute (F.19) */
    struct evbuffer *held;  /* events queued while stalled */
    struct evbuffer *batch; /* during replay: events gathered into one chunk */
    int64_t min_rv;         /* deliver only events with rv > min_rv (a future start RV, F.15) */
    as_conv_t conv;         /* AS_CONV_PARTIAL: every object (not ERROR's Status) as PartialObjectMetadata */
} as_watcher_t;

typedef struct as_fault {
    char verb[16];
    char prefix[256];
    int count, code, retry_after;
    bool text; /* answer text/plain like APF / max-in-flight rejections (D.14) */
} as_fault_t;

typedef struct as_cmd {
    struct as_cmd *next;
    void (*fn)(lop_apiserver_t *srv, void *arg);
    void *arg;
    bool done;
} as_cmd_t;

struct lop_apiserver {
    struct event_base *base;
    struct evhttp *http;
    pthread_t thread;
    bool thread_started;
    char url[160];
    char host[64];
    int port;
    bool tls;
    long history;
    bool fault_control;
    /* command queue (any thread) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    as_cmd_t *cmds;
    struct event *cmd_ev;
    /* store (loop thread) */
    int64_t rev;
    as_res_t **res;
    size_t nres, capres;
    as_coll_t **colls;
    size_t ncolls, capcolls;
    /* history ring */
    as_event_t **ring;
    size_t ring_cap, ring_head, ring_len;
    int64_t hist_floor; /* every change with rv > hist_floor is in the ring */
    /* faults */
    as_fault_t faults[16];
    int nfaults;
    bool stall;
    int latency_ms;
    /* auth */
    char **tokens;
    size_t ntokens;
    SSL_CTX *ssl;
    char *ca_pem; /* server cert PEM (self-signed; is its own CA) */
    bool client_ca;
    bool gc_pending;
};

/* An HTTP request being served. */
typedef struct as_req {
    lop_apiserver_t *srv;
    struct evhttp_request *r;
    enum evhttp_cmd_type method;
    const char *verb; /* get list watch create update patch delete deletecollection */
    char *path;
    struct evkeyvalq q;
    as_res_t *res;
    char ns[256];
    char name[256];
    char sub[32];
    char *body;
    size_t body_len;
    bool reply_scale; /* a /scale write answers with the Scale view */
    as_conv_t conv;   /* negotiated from Accept (route); AS_CONV_NONE off resource endpoints */
} as_req_t;

/* ---- status.c ---- */
json_t *as_status_new(int code, const char *reason, const char *message, json_t *details);
/* details {name, group, kind}; omits NULL/empty */
json_t *as_details(const char *name, const char *group, const char *kind);
void as_reply_json(as_req_t *q, int code, json_t *body, bool sort_keys);
void as_reply_raw(as_req_t *q, int code, const char *ctype, const char *body, size_t len);
/* Reply with a Status (details stolen, may be NULL). Logs the rejection. */
void as_reply_status(as_req_t *q, int code, const char *reason, json_t *details, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void as_reply_err(as_req_t *q, const lop_err_t *err);
/* Reply with a stored object, reusing its commit-time serialization when it fits (wire may be NULL). */
void as_reply_stored(as_req_t *q, int code, as_res_t *res, const json_t *obj, as_blob_t *wire);
void as_reply_notfound(as_req_t *q, as_res_t *res, const char *name);
/* "<plural>[.<group>]" */
void as_qualified_resource(const as_res_t *res, char *buf, size_t n);
/* "<Kind>[.<group>]" */
void as_qualified_kind(const as_res_t *res, char *buf, size_t n);
/* A 422 Invalid on res/name with one cause; field & detail as in "<field>: <detail>". */
void as_reply_invalid(as_req_t *q, const char *kind_qual, const char *dkind, const char *group, const char *name,
                      const char *cause_reason, const char *field, const char *detail);
const char *as_query(as_req_t *q, const char *key);
bool as_query_bool(const char *s); /* true for Go's ParseBool true spellings */
void as_log_reject(as_req_t *q, int code, const char *reason);
/* 406 for a conversion that does not fit the response: PartialObjectMetadata of a list
 * (is_list), or PartialObjectMetadataList of one object (the API server decides this after
 * negotiation, so no later Accept range is tried). */
void as_reply_not_acceptable_conv(as_req_t *q, bool is_list);

/* ---- accept.c ---- */
/* Negotiate an Accept header (NULL or blank = no preference) as the API server does: its media
 * ranges are tried by quality (q=0 refuses), then specificity, then order; the first one this
 * server can answer wins. JSON is served for every range but protobuf and CBOR; `stream` must be
 * "watch" when given; `as`/`g`/`v` ask for a conversion, which only a resource endpoint
 * (allow_conv) grants and only into PartialObjectMetadata or PartialObjectMetadataList of
 * meta.k8s.io v1 or v1beta1 (Table is not implemented): a range asking for another one is
 * skipped, so a later plain range is served. *out gets the winner's conversion. False when no
 * range is acceptable (the caller answers 406 NotAcceptable). Pure function. */
bool as_accept_negotiate(const char *accept, bool allow_conv, as_conv_t *out);
/* ---- registry.c ---- */
void as_registry_init(lop_apiserver_t *srv);
void as_registry_free(lop_apiserver_t *srv);
as_coll_t *as_coll_get(lop_apiserver_t *srv, const char *group, const char *plural, bool create);
as_res_t *as_res_find(lop_apiserver_t *srv, const char *group, const char *version, const char *plural);
as_res_t *as_res_add(lop_apiserver_t *srv, const as_res_t *tmpl);
void as_res_remove_crd(lop_apiserver_t *srv, const char *crd_name);
/* After appending a CRD's fresh rows at [first_new, nres): merge them with its older rows. */
void as_res_merge_crd(lop_apiserver_t *srv, const char *crd_name, size_t first_new);
void as_serve_discovery(as_req_t *q, const char *group, const char *version, int depth);
void as_serve_openapi(as_req_t *q);

/* ---- store.c ---- */
void as_store_init(lop_apiserver_t *srv);
void as_store_free(lop_apiserver_t *srv);
as_entry_t *as_store_find(as_coll_t *c, const char *key);
/* Commit new_obj (stolen; NULL = delete) at key. Sets metadata.resourceVersion, records the event,
 * notifies watchers. Returns the committed object (borrowed) or, on delete, the deleted state. */
json_t *as_store_commit(lop_apiserver_t *srv, as_coll_t *c, const char *key, json_t *new_obj);
void as_store_compact(lop_apiserver_t *srv);
/* Items of c at revision rv (sorted by key); *out is malloc'd array of borrowed json_t*; keys too.
 * Returns -1 when rv is older than the history. */
int as_store_snapshot(lop_apiserver_t *srv, as_coll_t *c, int64_t rv, const char *ns, as_entry_t **out, size_t *n);
/* The serialized form of a stored object: the entry's blob if obj is the stored one. Borrowed. */
as_blob_t *as_store_wire(as_coll_t *c, const json_t *obj);
void as_make_key(const as_res_t *res, const char *ns, const char *name, char *buf, size_t n);

/* ---- watch.c ---- */
void as_handle_watch(as_req_t *q);
void as_watch_dispatch(lop_apiserver_t *srv, as_event_t *ev);
void as_watch_close_all(lop_apiserver_t *srv);
/* End the watches served through res (before res is removed from the registry). */
void as_watch_close_res(lop_apiserver_t *srv, as_res_t *res);
void as_watch_set_stall(lop_apiserver_t *srv, bool stall);
void as_watch_bookmark_all(lop_apiserver_t *srv);

/* ---- handlers.c / write.c / delete.c ---- */
void as_handle_get(as_req_t *q);
void as_handle_list(as_req_t *q);
void as_handle_create(as_req_t *q);
void as_handle_update(as_req_t *q);
void as_handle_patch(as_req_t *q);
void as_handle_delete(as_req_t *q);
void as_handle_deletecollection(as_req_t *q);
/* Parse a JSON or YAML body. NULL → already replied 400. */
json_t *as_parse_body(as_req_t *q);
/* Shared write step: validate, set system fields and commit. */
/* as_write_checks.c. Each returning int answers -1 after replying (400/422), 0 to go on. */
int as_check_meta_types(as_req_t *q, const json_t *obj);
int as_report_unknown_fields(as_req_t *q, json_t *pruned);
int as_check_field_validation(as_req_t *q);
void as_scrub_managed_fields(json_t *obj, bool has_status, bool status_sub, const json_t *pruned);
/* Delete machinery (delete.c). Returns the deleted/updated object (borrowed) or NULL. */
json_t *as_delete_object(lop_apiserver_t *srv, as_res_t *res, const char *key, const char *policy, bool *removed);
void as_gc_run(lop_apiserver_t *srv);
/* Called after a commit on a CRD (crd.c): install/remove the CR resources. */
void as_crd_changed(lop_apiserver_t *srv, const json_t *crd, bool deleted);
json_t *as_crd_finish_create(lop_apiserver_t *srv, json_t *crd, lop_err_t *err);
/* Type-check and prune a custom resource; pruned field paths are appended to pruned (an array). */
int as_validate_cr(as_res_t *res, json_t *obj, json_t **causes, json_t *pruned);

/* ---- util.c ---- */
void as_uuid(char out[37]);
void as_rand_suffix(char out[6]);
char *as_now_time(char *buf, size_t n);
json_t *as_meta(json_t *obj); /* metadata object (created when absent) */
const char *as_meta_str(const json_t *obj, const char *field);
json_t *as_path_get(const json_t *obj, const char *dotted);    /* ".spec.replicas" or "spec.x" */
int as_path_set(json_t *obj, const char *dotted, json_t *val); /* val stolen */
json_t *as_order_builtin(const json_t *obj);                   /* kind, apiVersion, metadata first; new ref */
bool as_valid_dns_subdomain(const char *s);
bool as_valid_dns_label(const char *s);
json_t *as_yaml_parse(const char *data, size_t len, char *errbuf, size_t errlen);

#endif
