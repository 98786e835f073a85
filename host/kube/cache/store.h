/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store.h — the informer's thread-safe object cache (client-go tools/cache Store + Indexer):
 * key ("namespace/name", or "name" when cluster-scoped) → lop_obj_t, with indexes by namespace
 * and by owner uid. Entries are replaced, never edited: an update puts a new lop_obj_t.
 *
 * Ownership: the store holds one reference on every entry. Functions returning an object or a
 * list return new references the caller drops (lop_obj_unref / lop_obj_list_free).
 * Thread-safety: a rwlock; readers from any thread run concurrently; writers (normally only the
 * informer's thread) are exclusive. Replace's callbacks run after the lock is released.
 */
#ifndef LOP_KUBE_CACHE_STORE_H
#define LOP_KUBE_CACHE_STORE_H

#include "host/kube/cache/object.h"
#include "host/meta/selector.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct lop_store lop_store_t;

typedef struct lop_obj_list {
    lop_obj_t **items; /* n references owned by the list */
    size_t n;
} lop_obj_list_t;

/* Drop every reference and the array; the list is left empty. */
void lop_obj_list_free(lop_obj_list_t *l);

typedef struct lop_store_stats {
    size_t count;      /* objects */
    size_t bytes;      /* sum of json_len over objects */
    size_t namespaces; /* distinct namespaces with objects ("" counted once for cluster-scoped objects) */
} lop_store_stats_t;

lop_store_t *lop_store_new(void);
/* Drops every entry. NULL accepted. */
void lop_store_free(lop_store_t *s);

/* Insert or replace obj under its key (the store takes its own reference). If old is non-NULL
 * it receives the previous entry (a reference the caller drops) or NULL. */
void lop_store_put(lop_store_t *s, lop_obj_t *obj, lop_obj_t **old);
/* Remove key; returns the removed entry (caller drops it) or NULL when absent. */
lop_obj_t *lop_store_delete(lop_store_t *s, const char *key);
/* Entry for key (new reference) or NULL. */
lop_obj_t *lop_store_get(lop_store_t *s, const char *key);
/* ns may be NULL or "" for cluster-scoped objects. */
lop_obj_t *lop_store_get_by_name(lop_store_t *s, const char *ns, const char *name);
/* All entries, sorted by key. */
void lop_store_list(lop_store_t *s, lop_obj_list_t *out);
/* Entries of one namespace ("" = cluster-scoped objects), sorted by key. */
void lop_store_list_by_namespace(lop_store_t *s, const char *ns, lop_obj_list_t *out);
/* Entries having an ownerReference with this uid, sorted by key. */
void lop_store_list_by_owner_uid(lop_store_t *s, const char *uid, lop_obj_list_t *out);
/* Entries in ns (NULL = all namespaces) whose labels match sel (NULL = everything), sorted by key.
 * Implemented in store_select.c over host/meta/selector.h. */
void lop_store_list_selector(lop_store_t *s, const char *ns, const lop_label_selector_t *sel, lop_obj_list_t *out);
/* Keys, sorted; the caller frees each string and the array. */
char **lop_store_keys(lop_store_t *s, size_t *n);
void lop_store_stats(lop_store_t *s, lop_store_stats_t *out);

/* What Replace did to one key. */
typedef enum lop_store_change {
    LOP_STORE_ADDED,   /* new: old NULL */
    LOP_STORE_UPDATED, /* listed again (possibly unchanged, as client-go's Replaced delta) */
    LOP_STORE_DELETED, /* absent from the new list: deleted while we were not watching; new NULL */
} lop_store_change_t;
typedef void (*lop_store_change_fn)(void *ud, lop_store_change_t what, lop_obj_t *old, lop_obj_t *new_);

/*
 * Replace the whole content with objs[0..n) (a relist). Entries absent from the list are removed
 * and reported as LOP_STORE_DELETED (tombstones: the final state is the last one we saw). Then
 * fn (may be NULL) is called for every change after the lock is released: adds/updates in the
 * order of objs (as client-go's Replace walks the list; the API server lists in key order), then
 * deletes in key order. The objects passed are borrowed for the call. Duplicated keys in objs:
 * the last wins, reported once, at its last position.
 */
void lop_store_replace(lop_store_t *s, lop_obj_t *const *objs, size_t n, lop_store_change_fn fn, void *ud);

/*
 * Field indexes (fieldindex.h; client-go's AddIndexers / controller-runtime's IndexField).
 * lop_store_add_field_index hands x to the store (freed with it), indexes the current content,
 * and from then on keeps x up to date: put/delete update it after the store's lock is released
 * (a reader may briefly see the store one change ahead of the index), replace rebuilds it.
 * Register before the informer starts (not safe against concurrent writers). Returns false,
 * taking nothing, when x is NULL, its name is already taken, or LOP_STORE_MAX_FIELD_INDEXES are set.
 */
#define LOP_STORE_MAX_FIELD_INDEXES 8
struct lop_fieldindex;
bool lop_store_add_field_index(lop_store_t *s, struct lop_fieldindex *x);
/* The index registered under name (borrowed, lives as long as s), or NULL. */
struct lop_fieldindex *lop_store_field_index(lop_store_t *s, const char *name);

#endif
