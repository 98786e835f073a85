/* SPDX-License-Identifier: Apache-2.0 */
/*
 * strmap.h — a small string-keyed hash map (separate chaining) used by the store, the workqueue
 * and the rate limiters. Keys are copied; values are opaque pointers the caller owns.
 *
 * Thread-safety: none; callers hold their own lock.
 */
#ifndef LOP_CODEC_STRMAP_H
#define LOP_CODEC_STRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lop_strmap_ent {
    struct lop_strmap_ent *next;
    char *key; /* the map's copy, stored with the entry (one allocation); read-only */
    void *val;
    uint64_t hash; /* of key: compared before the key itself, reused when the table grows */
} lop_strmap_ent_t;

typedef struct lop_strmap {
    lop_strmap_ent_t **buckets;
    size_t nbuckets; /* power of two, 0 until the first put */
    size_t count;
} lop_strmap_t;

#define LOP_STRMAP_INIT \
    {                   \
        NULL, 0, 0      \
    }

/* Free every entry (keys); values are untouched — iterate first if they need freeing. */
void lop_strmap_clear(lop_strmap_t *m);
/* The entry for key, or NULL. The entry (and its key string) lives until the key is deleted. */
lop_strmap_ent_t *lop_strmap_find(const lop_strmap_t *m, const char *key);
/* The value for key, or NULL when absent. */
void *lop_strmap_get(const lop_strmap_t *m, const char *key);
bool lop_strmap_has(const lop_strmap_t *m, const char *key);
/* Set key to val. Returns the previous value (NULL when the key was new). */
void *lop_strmap_put(lop_strmap_t *m, const char *key, void *val);
/* Remove key. Returns its value (NULL when absent); *found (optional) tells whether it existed. */
void *lop_strmap_del(lop_strmap_t *m, const char *key, bool *found);

/* Move key's entry from src into dst with the value val, without freeing or allocating (the
 * entry itself is relinked). Returns the value it had in src and sets *found; when key is not in
 * src nothing changes. dst must not hold key. */
void *lop_strmap_move(lop_strmap_t *src, lop_strmap_t *dst, const char *key, void *val, bool *found);
/* Iterate: for (lop_strmap_ent_t *e = lop_strmap_first(m, &it); e; e = lop_strmap_next(m, &it, e)).
 * The map must not change during the iteration. */
typedef size_t lop_strmap_iter_t;
lop_strmap_ent_t *lop_strmap_first(const lop_strmap_t *m, lop_strmap_iter_t *it);
lop_strmap_ent_t *lop_strmap_next(const lop_strmap_t *m, lop_strmap_iter_t *it, lop_strmap_ent_t *e);

#endif
