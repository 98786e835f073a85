/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_internal.h — the local API server's internal types, shared by its .c files only. The
 * functions of each unit are declared in that unit's own header (as_store.h, as_watch.h, ...),
 * which includes this one; a .c file includes the headers of the units it calls, and those
 * calls only go one way (no two units call each other).
 *
 * Everything here is owned by and touched from the server's event-loop thread, except the
 * command queue (cmd_*), which other threads use under srv->mu.
 * Stored objects are immutable once committed: every write builds a new object. The store keeps
 * each one only as its serialized bytes (an as_blob_t with as_facts_t, shared by the store entry,
 * the history events, snapshots and watch payloads); a decoded tree is made on demand from the
 * bytes and cached for a while (as_store.h: as_blob_obj), never mutated.
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

/* What the server's loops read of a stored object without decoding it, taken from the tree when
 * it is committed (as_store.c). One allocation; the strings point into it. */
typedef struct as_facts {
    const char *api_version; /* apiVersion ("" when absent) */
    const char *uid;         /* metadata.uid, NULL when absent */
    bool deleting;           /* metadata.deletionTimestamp is set */
    bool fin_foreground;     /* metadata.finalizers holds "foregroundDeletion" */
    bool fin_orphan;         /* ... holds "orphan" */
    bool owner_refs;         /* metadata.ownerReferences is a non-empty array */
    size_t labels_start;     /* [labels_start, labels_end): metadata.labels in the blob's bytes, */
    size_t labels_end;       /* both 0 when absent (label selectors parse only these bytes) */
    size_t nowners;
    const char **owner_uids; /* metadata.ownerReferences[].uid (those that are strings) */
} as_facts_t;

/* A refcounted immutable byte string (one serialized watch event shared by every watcher, or a
 * stored object's serialized form, which also carries facts and, while cached, its tree). */
typedef struct as_blob {
    int refs;
    size_t len;
    as_facts_t *facts;               /* stored objects only (owned), else NULL */
    json_t *tree;                    /* decode cache (as_store.c): the bytes decoded, or NULL */
    struct as_blob *c_prev, *c_next; /* decode cache LRU links, while tree is set */
    char data[];
} as_blob_t;

/* A blob holding a copy of data[0..len) with one reference (as_util.c). */
as_blob_t *as_blob_new(const char *data, size_t len);
/* Drop one reference; the last one frees the blob. NULL is a no-op. */
void as_blob_unref(as_blob_t *b);

typedef struct as_entry {
    char *key;       /* "ns/name" or "name" */
    as_blob_t *wire; /* the object serialized once at commit (compact; keys sorted for CRs), with
                        its facts; the tree: as_entry_obj (as_store.h) */
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
    bool create_only;                                 /* the review kinds: POST only, never stored (as_review.h) */
    bool has_token;                                   /* serviceaccounts: the token subresource (TokenRequest) */
    char *scale_spec, *scale_status, *scale_selector; /* JSON paths, ".spec.replicas" */
    json_t *schema;                                   /* openAPIV3Schema (CRs) or NULL */
    struct as_schema *cschema;                        /* schema compiled (as_schema.h; owned) or NULL */
    char *deprecation_warning;                        /* deprecated CR version: Warning text, else NULL */
    json_t *selectable;                               /* array of field paths "spec.color" or NULL */
    const char *const *extra_fields;                  /* built-in field-selector fields (NULL-terminated) */
    char *crd_name;                                   /* CRs: owning CRD's metadata.name */
    json_t *conv_client;   /* CRs with conversion strategy Webhook: its clientConfig, else NULL */
    char storage_av[128];  /* CRs: the CRD's storage version as "g/v" (as_convert.h) */
    char api_version[128]; /* "v1" or "g/v" */
    as_coll_t *coll;
} as_res_t;

typedef struct as_event {
    int64_t rv;
    int type;
    as_coll_t *coll;
    char *key;
    as_blob_t *wire;  /* state after, serialized (shared with the store entry; DELETED: the last
                         state with RV = deletion revision) */
    as_blob_t *pwire; /* state before, serialized, NULL for ADDED */
    size_t bytes;     /* what the ring charges for it (as_store.c ring_push) */
} as_event_t;

/* What the negotiated Accept asks the response to be converted to (apiserver's `as=`, `g=`, `v=`
 * media type parameters): nothing, or the metadata-only view of an object / of a list. */
typedef enum as_conv_kind { AS_CONV_NONE = 0, AS_CONV_PARTIAL, AS_CONV_PARTIAL_LIST, AS_CONV_TABLE } as_conv_kind_t;

/* A Table's row object (metav1.TableOptions.includeObject; Metadata is the default). */
typedef enum as_include { AS_INCLUDE_METADATA = 0, AS_INCLUDE_NONE, AS_INCLUDE_OBJECT } as_include_t;

typedef struct as_conv {
    as_conv_kind_t kind;
    char api_version[32]; /* "meta.k8s.io/v1" or "meta.k8s.io/v1beta1"; "" for AS_CONV_NONE */
    as_include_t include; /* AS_CONV_TABLE: the rows' object (as_table.h) */
    bool no_headers;      /* AS_CONV_TABLE: leave columnDefinitions out (watch events after the first) */
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
    struct event *bm_timer; /* periodic bookmark, once a minute */
    struct evbuffer *held;  /* events queued while stalled */
    struct evbuffer *batch; /* during replay: events gathered into one chunk */
    int64_t min_rv;         /* deliver only events with rv > min_rv (a future start RV) */
    as_conv_t conv;         /* AS_CONV_PARTIAL: every object (not ERROR's Status) as PartialObjectMetadata;
                               AS_CONV_TABLE: every object as a one-row Table (headers on the first) */
} as_watcher_t;

typedef struct as_fault {
    char verb[24]; /* "deletecollection" and the HTTP methods fit */
    char prefix[256];
    int count, code, retry_after;
    bool text; /* answer text/plain like APF / max-in-flight rejections */
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
    long history;         /* the ring's bound in events */
    size_t history_bytes; /* ... and in bytes (as_store.c ring_push) */
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
    size_t ring_bytes;  /* sum of the ring's events' bytes */
    /* decode cache (as_store.c): blobs whose tree is kept, most recently used first */
    as_blob_t *dc_head, *dc_tail;
    size_t dc_bytes, dc_budget, dc_count; /* bytes = the cached blobs' serialized lengths */
    struct event *dc_trim_ev;             /* trims to the budget after the current callback */
    uint64_t dc_hits, dc_misses;
    /* faults */
    as_fault_t faults[16];
    int nfaults;
    bool stall;
    int latency_ms;
    struct as_delayed *delayed; /* requests waiting out latency_ms (as_http.c), freed at stop */
    /* auth */
    struct as_authn *authn; /* identities (as_authn.h) */
    bool authz_rbac;        /* --authorization-mode=RBAC (as_authz.h), else AlwaysAllow */
    SSL_CTX *ssl;
    char *ca_pem; /* server cert PEM (self-signed; is its own CA) */
    bool client_ca;
    bool gc_pending;
    /* admission webhooks: clientConfig.service → "host:port" (as_webhook.c) */
    struct as_svc_map {
        char *ns, *name, *target;
    } * wh_services;
    size_t nwh_services;
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
    bool reply_scale;     /* a /scale write answers with the Scale view */
    as_conv_t conv;       /* negotiated from Accept (route); AS_CONV_NONE off resource endpoints */
    struct as_user *user; /* who sent it (as_authn.h), owned by the request */
} as_req_t;

#endif
