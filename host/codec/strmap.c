/* SPDX-License-Identifier: Apache-2.0 */
/* strmap.c — string-keyed hash map with chaining (FNV-1a), doubling at load factor 1. Each entry
 * holds its key's hash (compared first) and its key (same allocation). */
#include "host/codec/strmap.h"

#include "host/util/buf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash_str(const char *s)
{
    uint64_t h = UINT64_C(1469598103934665603);
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= UINT64_C(1099511628211);
    }
    return h;
}

void lop_strmap_clear(lop_strmap_t *m)
{
    for (size_t i = 0; i < m->nbuckets; i++) {
        lop_strmap_ent_t *e = m->buckets[i];
        while (e) {
            lop_strmap_ent_t *n = e->next;
            free(e);
            e = n;
        }
    }
    free(m->buckets);
    m->buckets = NULL;
    m->nbuckets = 0;
    m->count = 0;
}

static lop_strmap_ent_t *find_h(const lop_strmap_t *m, const char *key, uint64_t h)
{
    if (!m->nbuckets) return NULL;
    for (lop_strmap_ent_t *e = m->buckets[h & (m->nbuckets - 1)]; e; e = e->next)
        if (e->hash == h && strcmp(e->key, key) == 0) return e;
    return NULL;
}

lop_strmap_ent_t *lop_strmap_find(const lop_strmap_t *m, const char *key)
{
    return m->nbuckets ? find_h(m, key, hash_str(key)) : NULL;
}

void *lop_strmap_get(const lop_strmap_t *m, const char *key)
{
    lop_strmap_ent_t *e = lop_strmap_find(m, key);
    return e ? e->val : NULL;
}

bool lop_strmap_has(const lop_strmap_t *m, const char *key) { return lop_strmap_find(m, key) != NULL; }

static void grow(lop_strmap_t *m)
{
    size_t nb = m->nbuckets ? m->nbuckets * 2 : 16;
    lop_strmap_ent_t **b = lop_xcalloc(nb, sizeof *b);
    for (size_t i = 0; i < m->nbuckets; i++) {
        lop_strmap_ent_t *e = m->buckets[i];
        while (e) {
            lop_strmap_ent_t *n = e->next;
            size_t j = e->hash & (nb - 1);
            e->next = b[j];
            b[j] = e;
            e = n;
        }
    }
    free(m->buckets);
    m->buckets = b;
    m->nbuckets = nb;
}

void *lop_strmap_put(lop_strmap_t *m, const char *key, void *val)
{
    uint64_t h = hash_str(key);
    lop_strmap_ent_t *e = find_h(m, key, h);
    if (e) {
        void *old = e->val;
        e->val = val;
        return old;
    }
    if (m->count + 1 > m->nbuckets) grow(m);
    size_t kl = strlen(key) + 1;
    e = lop_xmalloc(sizeof *e + kl);
    e->key = memcpy((char *)(e + 1), key, kl);
    e->val = val;
    e->hash = h;
    size_t j = h & (m->nbuckets - 1);
    e->next = m->buckets[j];
    m->buckets[j] = e;
    m->count++;
    return NULL;
}

void *lop_strmap_del(lop_strmap_t *m, const char *key, bool *found)
{
    if (found) *found = false;
    if (!m->nbuckets) return NULL;
    uint64_t h = hash_str(key);
    lop_strmap_ent_t **pp = &m->buckets[h & (m->nbuckets - 1)];
    for (; *pp; pp = &(*pp)->next) {
        lop_strmap_ent_t *e = *pp;
        if (e->hash == h && strcmp(e->key, key) == 0) {
            void *v = e->val;
            *pp = e->next;
            free(e);
            m->count--;
            if (found) *found = true;
            return v;
        }
    }
    return NULL;
}

void *lop_strmap_move(lop_strmap_t *src, lop_strmap_t *dst, const char *key, void *val, bool *found)
{
    *found = false;
    if (!src->nbuckets) return NULL;
    uint64_t h = hash_str(key);
    for (lop_strmap_ent_t **pp = &src->buckets[h & (src->nbuckets - 1)]; *pp; pp = &(*pp)->next) {
        lop_strmap_ent_t *e = *pp;
        if (e->hash != h || strcmp(e->key, key) != 0) continue;
        *pp = e->next;
        src->count--;
        void *old = e->val;
        e->val = val;
        if (dst->count + 1 > dst->nbuckets) grow(dst);
        size_t j = h & (dst->nbuckets - 1);
        e->next = dst->buckets[j];
        dst->buckets[j] = e;
        dst->count++;
        *found = true;
        return old;
    }
    return NULL;
}

lop_strmap_ent_t *lop_strmap_first(const lop_strmap_t *m, lop_strmap_iter_t *it)
{
    for (*it = 0; *it < m->nbuckets; (*it)++)
        if (m->buckets[*it]) return m->buckets[*it];
    return NULL;
}

lop_strmap_ent_t *lop_strmap_next(const lop_strmap_t *m, lop_strmap_iter_t *it, lop_strmap_ent_t *e)
{
    if (e->next) return e->next;
    for ((*it)++; *it < m->nbuckets; (*it)++)
        if (m->buckets[*it]) return m->buckets[*it];
    return NULL;
}
