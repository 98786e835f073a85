/* SPDX-License-Identifier: Apache-2.0 */
/*
 * object.h — lop_obj_t, the informer cache entry: one Kubernetes object as its raw JSON bytes
 * plus the parsed metadata every cache user needs (namespace, name, uid, resourceVersion,
 * generation, deletion, labels, annotations, owner references), immutable once built.
 *
 * Construction cuts metadata out of the bytes with a DOM-free scan (jsonscan.h), strips
 * metadata.managedFields by splicing the bytes (on by default, as controller-runtime caches
 * commonly do to save memory), and fills the fields below straight from the scanner: no JSON
 * tree is built. The jansson tree of metadata is built only when lop_obj_metadata asks for it
 * (once per object, thread-safe), and never includes managedFields, even when they are kept in
 * json. Labels and annotations are validated at build but each map is decoded only when
 * lop_obj_labels / lop_obj_annotations (or lop_obj_label / _annotation) first asks for it, since
 * most cached objects are never asked (Lua reads objects from json); then it is kept with the
 * object.
 *
 * Memory: an object is one allocation — this struct, json, the owner uid array and the decoded
 * strings — of exactly the size it needs (the cache holds it for the object's lifetime; see
 * bench/README.md, cache-rss). The decoded labels, the decoded annotations and the metadata tree,
 * when asked for, are one more allocation each.
 *
 * Ownership: lop_obj_new returns a reference the caller owns (refcount 1). lop_obj_ref adds one,
 * lop_obj_unref drops one and frees at zero. Every pointer inside the object (strings, arrays)
 * lives as long as the object. Never edit an object: build a new one (replace-never-edit).
 * Thread-safety: the refcount is atomic and the object is immutable, so it may be read and
 * ref'd/unref'd from any thread.
 */
#ifndef LOP_KUBE_CACHE_OBJECT_H
#define LOP_KUBE_CACHE_OBJECT_H

#include "host/util/err.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lop_kv {
    const char *key, *value;
} lop_kv_t;

typedef struct lop_owner_ref {
    const char *api_version, *kind, *name, *uid; /* "" when absent */
} lop_owner_ref_t;

typedef struct lop_obj {
    const char *json; /* the object (managedFields stripped unless kept), NUL-terminated */
    size_t json_len;
    const char *api_version, *kind;           /* "" when absent (built-in list items) */
    const char *namespace_, *name, *uid, *rv; /* "" when absent; rv = metadata.resourceVersion */
    int64_t generation;                       /* 0 when absent */
    bool deleting;                            /* metadata.deletionTimestamp is set */
    bool has_controller;                      /* an ownerReference with controller: true exists */
    lop_owner_ref_t controller;               /* the first such reference */
    const char *const *owner_uids;            /* uids of every ownerReference */
    size_t nowners;
    /* The parsed metadata object without managedFields (borrowed; never modify). Built on
     * demand: NULL until lop_obj_metadata(o) has been called once — call that instead. */
    const json_t *_Atomic metadata;
    /* private */
    int refs_;
    uint32_t khash_;                         /* lop_obj_key_hash */
    uint32_t meta_s_, meta_e_, mf_s_, mf_e_; /* metadata span in json; a kept managedFields cut in it */
    uint32_t lab_s_, lab_e_, ann_s_, ann_e_; /* labels / annotations values in json (0, 0: absent) */
    struct lop_obj_kvs *_Atomic lab_kv_;     /* lop_obj_labels, decoded on demand */
    struct lop_obj_kvs *_Atomic ann_kv_;     /* lop_obj_annotations, decoded on demand */
} lop_obj_t;

/* Build flags. */
enum {
    LOP_OBJ_KEEP_MANAGED_FIELDS = 1, /* keep metadata.managedFields in json */
    /* the caller has already validated json as one JSON value (e.g. a list item walked by
     * lop_jscan_array_next): skip it instead of validating it again */
    LOP_OBJ_TRUSTED = 2,
    /* keep only apiVersion, kind and metadata in json (managedFields stripped unless
     * KEEP_MANAGED_FIELDS): the cache of a metadata-only watch, as controller-runtime's
     * OnlyMetadata / client-go's metadata informer keep PartialObjectMetadata. The bytes are still
     * validated whole. The object may be a full one (stripped here) or the API server's
     * metadata-only view of one (apiVersion meta.k8s.io/v1 or v1beta1, kind PartialObjectMetadata:
     * what an `as=PartialObjectMetadata[List]` Accept gets, rest.h): given the api_version and
     * kind arguments of lop_obj_new_item/_prefix, such an entry takes those instead — the
     * watched kind, as client-go's metadata informer sets it on each object — and is then
     * byte-identical to the entry stripped from the full object. */
    LOP_OBJ_METADATA_ONLY = 4,
};

/*
 * Build an object from the JSON bytes of one object (copied). Errors: LOP_EINVAL with a message
 * naming the cause when the bytes are not one JSON object, metadata is not an object, or a
 * metadata field has the wrong type. *out is set only on LOP_OK.
 */
LOP_MUST_CHECK lop_rc_t lop_obj_new(const char *json, size_t len, int flags, lop_obj_t **out, lop_err_t *err);
/* Same, for an item of a list response: when the item has no kind/apiVersion (built-in lists,
 * apimachinery's list encoding), use these (may be NULL); with LOP_OBJ_METADATA_ONLY, also in place of a
 * PartialObjectMetadata's (both must then be non-empty). */
LOP_MUST_CHECK lop_rc_t lop_obj_new_item(const char *json, size_t len, int flags, const char *api_version,
                                         const char *kind, lop_obj_t **out, lop_err_t *err);
/* Same (api_version/kind as for lop_obj_new_item, may be NULL), for an object that starts
 * json[0..len) (leading whitespace allowed) and is followed by other bytes: the "object" member
 * of a watch event, or a list item at the front of a chunk, built in the pass that validates
 * it. The bytes after the object are not read; *end is set one past its '}' on LOP_OK. A
 * truncated object fails as a malformed one does. */
LOP_MUST_CHECK lop_rc_t lop_obj_new_prefix(const char *json, size_t len, int flags, const char *api_version,
                                           const char *kind, size_t *end, lop_obj_t **out, lop_err_t *err);
/* The metadata object as a jansson tree (managedFields left out), parsed from json on the first
 * call and kept with the object; borrowed, never modify. Thread-safe (concurrent first calls
 * agree on one tree). Never NULL: an empty object when the object has no metadata. */
const json_t *lop_obj_metadata(const lop_obj_t *o);
lop_obj_t *lop_obj_ref(lop_obj_t *o);
/* NULL accepted. */
void lop_obj_unref(lop_obj_t *o);

/* The cache key: "namespace/name", or "name" for cluster-scoped objects. Writes at most len bytes
 * (NUL included); returns the full length as snprintf does. */
int lop_obj_key(const lop_obj_t *o, char *buf, size_t len);
/* The cache key's 32-bit hash (FNV-1a over lop_obj_key's bytes), computed once when the object
 * is built: equal to lop_key_hash(k, strlen(k)) for the key k that lop_obj_key writes. For hash
 * tables that hold objects and are searched by key (store.c), so that neither side formats a key. */
uint32_t lop_obj_key_hash(const lop_obj_t *o);
uint32_t lop_key_hash(const char *key, size_t len);
/* True when key[0..len) is o's cache key ("namespace/name", or "name"). */
bool lop_obj_key_eq(const lop_obj_t *o, const char *key, size_t len);
/* True when a and b have the same cache key (a == b, or equal hashes and keys). */
bool lop_obj_same_key(const lop_obj_t *a, const lop_obj_t *b);
/* The strcmp order of two objects' cache keys (<0, 0, >0), without formatting them. */
int lop_obj_key_cmp(const lop_obj_t *a, const lop_obj_t *b);
/* Labels / annotations: *n entries (NULL when none) in document order; a key repeated in the JSON
 * keeps its last value, at its first position (as a parsed object has it). Decoded from json on
 * the first call and kept with the object: borrowed, valid while the object lives. Thread-safe
 * (concurrent first calls agree on one array). Never fails: the strings were validated at build. */
const lop_kv_t *lop_obj_labels(const lop_obj_t *o, size_t *n);
const lop_kv_t *lop_obj_annotations(const lop_obj_t *o, size_t *n);
/* True when a's and b's labels (annotations) are equal as maps. Compares the JSON bytes first,
 * so an unchanged map is never decoded; a map not decoded yet is decoded for the comparison only
 * (not kept: the old object of an update is about to go, and annotations can be large). */
bool lop_obj_labels_equal(const lop_obj_t *a, const lop_obj_t *b);
bool lop_obj_annotations_equal(const lop_obj_t *a, const lop_obj_t *b);
/* Label / annotation value, or NULL when absent (decodes as lop_obj_labels does). */
const char *lop_obj_label(const lop_obj_t *o, const char *key);
const char *lop_obj_annotation(const lop_obj_t *o, const char *key);
/* True when some ownerReference has this uid. */
bool lop_obj_owned_by(const lop_obj_t *o, const char *uid);

#endif
