/* SPDX-License-Identifier: Apache-2.0 */
/*
 * objset.h — a compact hash set of cache objects keyed by their cache key ("namespace/name", or
 * "name"): the informer store's table of entries and of each index's members.
 *
 * Shape: open addressing with linear probing over one array of pointer-sized slots (8 bytes on
 * 64-bit; 0 = empty), each a member's address with a few bits of its key hash in the low bits
 * the address's alignment leaves free (objset.c says why). Capacity 0 or a power of two, grown
 * (doubled) before the load would pass 3/4 and halved when it falls below 1/8; the table is freed
 * when the last member leaves. Deletion shifts the following entries of the probe run back (no
 * tombstones), so a lookup never walks past deleted slots. No key string is stored: a slot is
 * compared through the object (lop_obj_key_hash, then lop_obj_key_eq / lop_obj_key_cmp), so a
 * set costs 8/load bytes per member (11 to 21 while it grows; up to 64 after many deletes, before
 * it halves) plus the struct. Capacity is limited to 2^32
 * slots (the key hash has 32 bits).
 *
 * Ownership: the set borrows its members — it never refs or unrefs them; the caller keeps every
 * member alive while it is in the set. Pointers returned are the set's members, borrowed the
 * same way. The table is the set's: lop_objset_cleanup frees it.
 * Thread-safety: none; callers hold their own lock. Lookups and iteration only read the set, so
 * concurrent readers are fine while no one writes.
 */
#ifndef LOP_KUBE_CACHE_OBJSET_H
#define LOP_KUBE_CACHE_OBJSET_H

#include "host/kube/cache/object.h"

#include <stddef.h>
#include <stdint.h>

typedef struct lop_objset {
    uintptr_t *slots; /* cap entries: tagged member addresses, 0 = empty (private; objset.c) */
    size_t cap;       /* 0 or a power of two; read-only */
    size_t count;     /* members; read-only */
} lop_objset_t;

#define LOP_OBJSET_INIT \
    {                   \
        NULL, 0, 0      \
    }

/* Free the table; the members are untouched. The set is left empty and reusable. */
void lop_objset_cleanup(lop_objset_t *s);
/* Make room for n members in all without growing again (never shrinks; n = 0 allocates nothing). */
void lop_objset_reserve(lop_objset_t *s, size_t n);

/* The member whose key is key[0..len), or NULL. hash must be lop_key_hash(key, len). */
lop_obj_t *lop_objset_find(const lop_objset_t *s, const char *key, size_t len, uint32_t hash);
/* The member with the same key as like (like itself or another object), or NULL. */
lop_obj_t *lop_objset_find_like(const lop_objset_t *s, const lop_obj_t *like);

/* Insert o, or replace the member with o's key by o in its slot (no allocation then). Returns
 * the replaced member, or NULL when o's key was new. */
lop_obj_t *lop_objset_put(lop_objset_t *s, lop_obj_t *o);
/* Insert o unless its key is present. Returns the member already there (left in place), or NULL
 * when o was inserted. */
lop_obj_t *lop_objset_add(lop_objset_t *s, lop_obj_t *o);

/* Remove the member whose key is key[0..len) (hash as for lop_objset_find). Returns it, or NULL
 * when absent. */
lop_obj_t *lop_objset_del(lop_objset_t *s, const char *key, size_t len, uint32_t hash);
/* Remove the member with like's key. Returns it (like or the other object), or NULL. */
lop_obj_t *lop_objset_remove(lop_objset_t *s, const lop_obj_t *like);

/* The table policy, shared with objindex.c. The home slot of a 32-bit key hash in a table of cap
 * slots (a power of two, at most 2^32): the hash's top bits, mixed by a multiply with an odd
 * constant (2^32 / golden ratio) and scaled to cap. Not the low bits: FNV-1a's low bits depend only
 * on the low bits of every byte, so masking them would cluster keys that differ in one character's
 * high bits. */
static inline size_t lop_objset_home(uint32_t h, size_t cap)
{
    return (size_t)(((uint64_t)(uint32_t)(h * UINT32_C(0x9E3779B1)) * cap) >> 32);
}
#define LOP_OBJSET_MIN_CAP 4 /* two or three members (an owner's few children) fit in 4 slots */
/* The capacity that holds n entries at a load of at most 3/4 (at least LOP_OBJSET_MIN_CAP). */
size_t lop_objset_cap_for(size_t n);

/* Iterate in table order (no order to rely on):
 *   size_t it = 0;  for (lop_obj_t *o; (o = lop_objset_next(s, &it));) ...
 * The set must not change during the iteration. */
lop_obj_t *lop_objset_next(const lop_objset_t *s, size_t *it);

#endif
