/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fieldindex.h — a named, user-defined index over cache objects (client-go tools/cache Indexers
 * with an IndexFunc; controller-runtime's FieldIndexer.IndexField): an index function maps an
 * object to zero or more string values (e.g. "ns/name" of every Secret it references); lookups
 * return the objects carrying a value. Maintained incrementally (lop_fieldindex_update on every
 * add/update/delete the informer applies) and rebuilt wholesale on a relist (lop_fieldindex_rebuild).
 *
 * Shape: two hash maps (host/codec/strmap.h): cache key → the object's record (its reference and
 * its distinct values), and value → the set of records carrying it. An add/update/delete costs
 * O(values of the object), a lookup O(matches) plus sorting them by key; a rebuild O(objects x
 * values). Values an index function repeats for one object count once.
 *
 * Ownership: the index holds one reference on each object that has at least one value and owns
 * the value strings. lop_fieldindex_find returns new references (lop_obj_list_free).
 * Thread-safety: a rwlock; finds run concurrently, update/rebuild are exclusive. The index
 * function is called without the lock held and must not call back into the index.
 * Errors: an index function returning a negative count is treated as "no values" for that object
 * (it is not indexed) and counted in lop_fieldindex_errors.
 */
#ifndef LOP_KUBE_CACHE_FIELDINDEX_H
#define LOP_KUBE_CACHE_FIELDINDEX_H

#include "host/kube/cache/object.h"
#include "host/kube/cache/store.h"

#include <stddef.h>

/* Values of o: sets *vals to a malloc'd array of malloc'd NUL-terminated strings (the index
 * takes ownership of both) and returns their number (0: *vals may stay NULL), or < 0 on error
 * (then *vals is not read: the function frees what it allocated). */
typedef int (*lop_fieldindex_fn)(void *ud, const lop_obj_t *o, char ***vals);

typedef struct lop_fieldindex lop_fieldindex_t;

/* name is copied. Returns NULL only when name is NULL/empty or fn is NULL. */
lop_fieldindex_t *lop_fieldindex_new(const char *name, lop_fieldindex_fn fn, void *ud);
/* Drops every reference. NULL accepted. */
void lop_fieldindex_free(lop_fieldindex_t *x);
const char *lop_fieldindex_name(const lop_fieldindex_t *x);

/* Apply one change: old NULL = added, new_ NULL = deleted, both = updated (same cache key). */
void lop_fieldindex_update(lop_fieldindex_t *x, const lop_obj_t *old, lop_obj_t *new_);
/* Forget everything and index objs[0..n) (a relist: the store's new content). */
void lop_fieldindex_rebuild(lop_fieldindex_t *x, lop_obj_t *const *objs, size_t n);
/* Objects carrying value, sorted by cache key (overwrites out). */
void lop_fieldindex_find(lop_fieldindex_t *x, const char *value, lop_obj_list_t *out);
/* Number of indexed objects, of distinct values, and of index-function errors so far. */
size_t lop_fieldindex_count(lop_fieldindex_t *x);
size_t lop_fieldindex_values(lop_fieldindex_t *x);
size_t lop_fieldindex_errors(lop_fieldindex_t *x);

#endif
