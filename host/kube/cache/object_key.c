/* SPDX-License-Identifier: Apache-2.0 */
/* object_key.c — an object's cache key ("namespace/name", or "name"): formatting, its hash, and
 * equality and order without formatting it (see object.h). */
#include "host/kube/cache/object_impl.h"

#include <string.h>

int lop_obj_key(const lop_obj_t *o, char *buf, size_t len)
{
    /* on every event's path (store, reflector, handlers): no printf */
    size_t nsl = strlen(o->namespace_), nl = strlen(o->name), full = nsl ? nsl + 1 + nl : nl;
    if (len) {
        size_t w = 0;
        if (nsl) {
            size_t c = nsl < len - 1 ? nsl : len - 1;
            memcpy(buf, o->namespace_, c);
            w = c;
            if (w < len - 1) buf[w++] = '/';
        }
        size_t c = nl < len - 1 - w ? nl : len - 1 - w;
        memcpy(buf + w, o->name, c);
        buf[w + c] = '\0';
    }
    return (int)full;
}

#define FNV_OFFSET UINT32_C(2166136261)
#define FNV_PRIME  UINT32_C(16777619)

static uint32_t fnv(uint32_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= FNV_PRIME;
    }
    return h;
}

uint32_t lop_key_hash(const char *key, size_t len) { return fnv(FNV_OFFSET, key, len); }

uint32_t lop_obj_key_hash_of(const lop_obj_t *o)
{
    uint32_t h = FNV_OFFSET;
    if (*o->namespace_) h = fnv(fnv(h, o->namespace_, strlen(o->namespace_)), "/", 1);
    return fnv(h, o->name, strlen(o->name));
}

uint32_t lop_obj_key_hash(const lop_obj_t *o) { return o->khash_; }

bool lop_obj_key_eq(const lop_obj_t *o, const char *key, size_t len)
{
    size_t nsl = strlen(o->namespace_);
    if (nsl) {
        if (len <= nsl || memcmp(key, o->namespace_, nsl) != 0 || key[nsl] != '/') return false;
        key += nsl + 1;
        len -= nsl + 1;
    }
    return strlen(o->name) == len && memcmp(key, o->name, len) == 0;
}

/* The i-th byte of o's key as an unsigned char, or -1 past its end. */
static int key_byte(const lop_obj_t *o, size_t nsl, size_t i)
{
    if (nsl) {
        if (i < nsl) return (unsigned char)o->namespace_[i];
        if (i == nsl) return '/';
        i -= nsl + 1;
    }
    unsigned char c = (unsigned char)o->name[i];
    return c ? c : -1; /* reading name[i] is safe: i never passes its NUL (we stop there) */
}

int lop_obj_key_cmp(const lop_obj_t *a, const lop_obj_t *b)
{
    size_t an = strlen(a->namespace_), bn = strlen(b->namespace_);
    if (an && an == bn) { /* the common case: same namespace, compare names */
        int c = memcmp(a->namespace_, b->namespace_, an);
        if (c) return c;
        return strcmp(a->name, b->name);
    }
    for (size_t i = 0;; i++) {
        int x = key_byte(a, an, i), y = key_byte(b, bn, i);
        if (x != y) return x < y ? -1 : 1;
        if (x < 0) return 0;
    }
}

bool lop_obj_same_key(const lop_obj_t *a, const lop_obj_t *b)
{
    return a == b || (a->khash_ == b->khash_ && lop_obj_key_cmp(a, b) == 0);
}
