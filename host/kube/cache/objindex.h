/* SPDX-License-Identifier: Apache-2.0 */
/*
 * objindex.h — a secondary index of cache objects: index value (a string the object carries,
 * such as its namespace or an owner's uid) → the objects carrying it, each object at most once
 * per value by cache key. The informer store keeps two: by namespace and by owner uid.
 *
 * Shape: open addressing with linear probing over 16-byte slots, one per distinct value, grown
 * before the load passes 3/4, shrunk below 1/8, backward-shift deletion (no tombstones). A slot
 * holds the value's hash and either
 *   - the one object carrying it, with the position of the value among the object's index values
 *     (no allocation: a uid owning a single object, as every ConfigMap owned by its own custom
 *     resource, costs only its slot), or
 *   - a group: the value copied once, and a lop_objset_t of the objects (from two objects on;
 *     back to the inline form when one is left).
 * An object's index values are given by the key_of function passed to lop_objindex_init:
 * key_of(o, ix) is the ix-th value (ix from 0), NULL past the last; the strings must live as long
 * as the object (lop_obj_t's do).
 *
 * Ownership: the index borrows the objects — it never refs or unrefs them; whoever adds an object
 * keeps it alive until it has been deleted again. Groups and the table are the index's.
 * Thread-safety: none; callers hold their own lock. Lookups only read the index.
 */
#ifndef LOP_KUBE_CACHE_OBJINDEX_H
#define LOP_KUBE_CACHE_OBJINDEX_H

#include "host/kube/cache/object.h"
#include "host/kube/cache/objset.h"

#include <stddef.h>
#include <stdint.h>

/* The ix-th index value of o, or NULL when o has no more. */
typedef const char *(*lop_objindex_key_fn)(const lop_obj_t *o, uint32_t ix);

typedef struct lop_objindex_slot lop_objindex_slot_t; /* private */

typedef struct lop_objindex {
    lop_objindex_slot_t *slots;
    size_t cap;   /* 0 or a power of two; read-only */
    size_t count; /* distinct values; read-only */
    lop_objindex_key_fn key_of;
} lop_objindex_t;

void lop_objindex_init(lop_objindex_t *x, lop_objindex_key_fn key_of);
/* Free the groups and the table; the objects are untouched. The index stays usable (empty). */
void lop_objindex_cleanup(lop_objindex_t *x);

/* File o under its ix-th value (key_of(o, ix) must be non-NULL). An object with o's cache key
 * already under that value is replaced by o in place — no allocation, as for an update that kept
 * the object's namespace and owners. Allocates only when the value goes from one object to two
 * (a group) or the table grows. */
void lop_objindex_add(lop_objindex_t *x, lop_obj_t *o, uint32_t ix);
/* Remove the object with o's cache key from under o's ix-th value; nothing when absent. */
void lop_objindex_del(lop_objindex_t *x, const lop_obj_t *o, uint32_t ix);

/* The objects under a value: none (both NULL), exactly one (one), or two or more (many, a set
 * borrowed until the index next changes). */
typedef struct lop_objindex_hit {
    lop_obj_t *one;
    const lop_objset_t *many;
} lop_objindex_hit_t;
lop_objindex_hit_t lop_objindex_find(const lop_objindex_t *x, const char *key);

#endif
