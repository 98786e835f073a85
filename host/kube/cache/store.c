/* SPDX-License-Identifier: Apache-2.0 */
/* store.c — the thread-safe indexed object cache (see store.h).
 *
 * Memory per cached object is what the cache-rss benchmark measures, so no table here holds a key
 * string or a per-entry allocation: `items` is a lop_objset_t (one 8-byte slot per object, found
 * through the object's own key hash and key), and the two indexes are lop_objindex_t's (a 16-byte
 * slot per distinct namespace / owner uid; the values with two or more objects get a compact set
 * of their own). The indexes borrow the objects whose reference `items` holds. */
#include "host/kube/cache/store_impl.h"

#include "host/kube/cache/objindex.h"
#include "host/kube/cache/objset.h"
#include "host/util/buf.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/kube/cache/fieldindex.h"

struct lop_store {
    pthread_rwlock_t lock;
    lop_objset_t items;      /* every entry, by key (one reference each) */
    lop_objindex_t by_ns;    /* namespace ("" when cluster-scoped) -> entries (borrowed) */
    lop_objindex_t by_owner; /* owner uid -> entries having an ownerReference with it (borrowed) */
    size_t bytes;
    lop_fieldindex_t *fields[LOP_STORE_MAX_FIELD_INDEXES]; /* set before the informer starts */
    size_t nfields;
};

void lop_obj_list_free(lop_obj_list_t *l)
{
    for (size_t i = 0; i < l->n; i++) lop_obj_unref(l->items[i]);
    free(l->items);
    l->items = NULL;
    l->n = 0;
}

static const char *ns_of(const lop_obj_t *o, uint32_t ix) { return ix == 0 ? o->namespace_ : NULL; }
static const char *owner_of(const lop_obj_t *o, uint32_t ix) { return ix < o->nowners ? o->owner_uids[ix] : NULL; }

static char *key_of(const lop_obj_t *o, char *small, size_t cap)
{
    int n = lop_obj_key(o, small, cap);
    if ((size_t)n < cap) return small;
    char *k = lop_xmalloc((size_t)n + 1);
    lop_obj_key(o, k, (size_t)n + 1);
    return k;
}

static void rebuild_fields(lop_store_t *s);

static void unindex(lop_store_t *s, const lop_obj_t *o)
{
    lop_objindex_del(&s->by_ns, o, 0);
    for (uint32_t i = 0; i < o->nowners; i++) lop_objindex_del(&s->by_owner, o, i);
    s->bytes -= o->json_len;
}

static void reindex(lop_store_t *s, lop_obj_t *o)
{
    lop_objindex_add(&s->by_ns, o, 0);
    for (uint32_t i = 0; i < o->nowners; i++) lop_objindex_add(&s->by_owner, o, i);
    s->bytes += o->json_len;
}

lop_store_t *lop_store_new(void)
{
    lop_store_t *s = lop_xcalloc(1, sizeof *s);
    pthread_rwlock_init(&s->lock, NULL);
    lop_objindex_init(&s->by_ns, ns_of);
    lop_objindex_init(&s->by_owner, owner_of);
    return s;
}

void lop_store_free(lop_store_t *s)
{
    if (!s) return;
    size_t it = 0;
    for (lop_obj_t *o; (o = lop_objset_next(&s->items, &it));) lop_obj_unref(o);
    lop_objset_cleanup(&s->items);
    lop_objindex_cleanup(&s->by_ns);
    lop_objindex_cleanup(&s->by_owner);
    for (size_t i = 0; i < s->nfields; i++) lop_fieldindex_free(s->fields[i]);
    pthread_rwlock_destroy(&s->lock);
    free(s);
}

/* Write lock held. Takes a new reference on obj; returns the previous entry's reference. An
 * update leaves the index entries that stay (same namespace, same owners) in place and only
 * repoints them (no allocation per update in the common case). */
static lop_obj_t *put_locked(lop_store_t *s, lop_obj_t *obj)
{
    lop_obj_ref(obj);
    lop_obj_t *prev = lop_objset_put(&s->items, obj);
    if (prev) {
        if (strcmp(prev->namespace_, obj->namespace_) != 0) lop_objindex_del(&s->by_ns, prev, 0);
        for (uint32_t i = 0; i < prev->nowners; i++)
            if (!lop_obj_owned_by(obj, prev->owner_uids[i])) lop_objindex_del(&s->by_owner, prev, i);
        s->bytes -= prev->json_len;
    }
    reindex(s, obj); /* lop_objindex_add repoints an entry that stayed */
    return prev;
}

void lop_store_put(lop_store_t *s, lop_obj_t *obj, lop_obj_t **old)
{
    pthread_rwlock_wrlock(&s->lock);
    lop_obj_t *prev = put_locked(s, obj);
    pthread_rwlock_unlock(&s->lock);
    for (size_t i = 0; i < s->nfields; i++) lop_fieldindex_update(s->fields[i], prev, obj);
    if (old)
        *old = prev;
    else
        lop_obj_unref(prev);
}

lop_obj_t *lop_store_delete(lop_store_t *s, const char *key)
{
    size_t len = strlen(key);
    uint32_t h = lop_key_hash(key, len);
    pthread_rwlock_wrlock(&s->lock);
    lop_obj_t *prev = lop_objset_del(&s->items, key, len, h);
    if (prev) unindex(s, prev);
    pthread_rwlock_unlock(&s->lock);
    for (size_t i = 0; prev && i < s->nfields; i++) lop_fieldindex_update(s->fields[i], prev, NULL);
    return prev;
}

lop_obj_t *lop_store_get(lop_store_t *s, const char *key)
{
    size_t len = strlen(key);
    uint32_t h = lop_key_hash(key, len);
    pthread_rwlock_rdlock(&s->lock);
    lop_obj_t *o = lop_objset_find(&s->items, key, len, h);
    if (o) lop_obj_ref(o);
    pthread_rwlock_unlock(&s->lock);
    return o;
}

lop_obj_t *lop_store_get_by_name(lop_store_t *s, const char *ns, const char *name)
{
    /* "ns/name" on the stack: Kubernetes' limits (63 + 1 + 253) fit; longer keys go to the heap */
    char stack[320];
    size_t nl = ns && *ns ? strlen(ns) : 0, ml = strlen(name), len = nl ? nl + 1 + ml : ml;
    char *k = len < sizeof stack ? stack : lop_xmalloc(len + 1);
    if (nl) {
        memcpy(k, ns, nl);
        k[nl] = '/';
    }
    memcpy(k + (nl ? nl + 1 : 0), name, ml + 1);
    lop_obj_t *o = lop_store_get(s, k);
    if (k != stack) free(k);
    return o;
}

/* Copy the objects of set, or the one object, that pass pred (NULL = all) into out, each with a
 * new reference. Read lock held. The list is sorted afterwards by sort_list, outside the lock:
 * the references keep the objects alive, and a writer need not wait for the sort. */
static void collect(const lop_objset_t *set, lop_obj_t *one, bool (*pred)(const lop_obj_t *, const void *),
                    const void *arg, lop_obj_list_t *out)
{
    out->items = NULL;
    out->n = 0;
    size_t cap = set ? set->count : one ? 1 : 0;
    if (!cap) return;
    out->items = lop_xmalloc(cap * sizeof *out->items);
    size_t it = 0;
    for (lop_obj_t *o = set ? lop_objset_next(set, &it) : one; o; o = set ? lop_objset_next(set, &it) : NULL)
        if (!pred || pred(o, arg)) out->items[out->n++] = lop_obj_ref(o);
}

static int obj_cmp(const void *a, const void *b)
{
    return lop_obj_key_cmp(*(lop_obj_t *const *)a, *(lop_obj_t *const *)b);
}

static void sort_list(lop_obj_list_t *l)
{
    if (l->n > 1) qsort(l->items, l->n, sizeof *l->items, obj_cmp);
}

static void collect_index(const lop_objindex_t *x, const char *key, bool (*pred)(const lop_obj_t *, const void *),
                          const void *arg, lop_obj_list_t *out)
{
    lop_objindex_hit_t hit = lop_objindex_find(x, key);
    collect(hit.many, hit.one, pred, arg, out);
}

void lop_store_list(lop_store_t *s, lop_obj_list_t *out)
{
    pthread_rwlock_rdlock(&s->lock);
    collect(&s->items, NULL, NULL, NULL, out);
    pthread_rwlock_unlock(&s->lock);
    sort_list(out);
}

void lop_store_list_by_namespace(lop_store_t *s, const char *ns, lop_obj_list_t *out)
{
    pthread_rwlock_rdlock(&s->lock);
    collect_index(&s->by_ns, ns ? ns : "", NULL, NULL, out);
    pthread_rwlock_unlock(&s->lock);
    sort_list(out);
}

void lop_store_list_by_owner_uid(lop_store_t *s, const char *uid, lop_obj_list_t *out)
{
    pthread_rwlock_rdlock(&s->lock);
    collect_index(&s->by_owner, uid, NULL, NULL, out);
    pthread_rwlock_unlock(&s->lock);
    sort_list(out);
}

void lop_store_collect_filtered(lop_store_t *s, const char *ns, bool (*pred)(const lop_obj_t *, const void *),
                                const void *arg, lop_obj_list_t *out)
{
    pthread_rwlock_rdlock(&s->lock);
    if (ns)
        collect_index(&s->by_ns, ns, pred, arg, out);
    else
        collect(&s->items, NULL, pred, arg, out);
    pthread_rwlock_unlock(&s->lock);
    sort_list(out);
}

char **lop_store_keys(lop_store_t *s, size_t *n)
{
    lop_obj_list_t l;
    lop_store_list(s, &l);
    char **keys = lop_xmalloc((l.n ? l.n : 1) * sizeof *keys);
    for (size_t i = 0; i < l.n; i++) {
        char small[256];
        char *k = key_of(l.items[i], small, sizeof small);
        keys[i] = k == small ? lop_xstrdup(small) : k;
    }
    *n = l.n;
    lop_obj_list_free(&l);
    return keys;
}

void lop_store_stats(lop_store_t *s, lop_store_stats_t *out)
{
    pthread_rwlock_rdlock(&s->lock);
    out->count = s->items.count;
    out->bytes = s->bytes;
    out->namespaces = s->by_ns.count;
    pthread_rwlock_unlock(&s->lock);
}

typedef struct change {
    lop_store_change_t what;
    lop_obj_t *old, *new_; /* references */
} change_t;

/* Deletes are reported in key order: their old objects' keys. */
static int change_cmp(const void *a, const void *b)
{
    return lop_obj_key_cmp(((const change_t *)a)->old, ((const change_t *)b)->old);
}

/* Deliver the changes (fn may be NULL), dropping their references. */
static void deliver_changes(change_t *ch, size_t nc, lop_store_change_fn fn, void *ud)
{
    for (size_t i = 0; i < nc; i++) {
        if (fn) fn(ud, ch[i].what, ch[i].old, ch[i].new_);
        lop_obj_unref(ch[i].old);
        lop_obj_unref(ch[i].new_);
    }
}

/* replace into an empty store (the first list, the case every sync pays for): every object is an
 * add and nothing is deleted, so the set of the listed keys that the general case builds (to find
 * deletes and duplicates) is not needed. A key listed twice still keeps its last occurrence,
 * reported once at that position: put returns the earlier one, and the reports of earlier
 * occurrences are withdrawn in one pass after the lock is released (a search per duplicate under
 * the lock made a list of duplicates quadratic). Called with the write lock held; releases it. */
static void replace_empty_locked(lop_store_t *s, lop_obj_t *const *objs, size_t n, lop_store_change_fn fn, void *ud)
{
    lop_objset_reserve(&s->items, n);
    change_t *ch = lop_xmalloc((n ? n : 1) * sizeof *ch);
    size_t nc = 0;
    bool listed_twice = false;
    for (size_t i = 0; i < n; i++) {
        lop_obj_t *prev = put_locked(s, objs[i]);
        if (prev) { /* listed twice (rare) */
            listed_twice = true;
            lop_obj_unref(prev); /* the store's reference to the earlier occurrence */
        }
        ch[nc++] = (change_t){LOP_STORE_ADDED, NULL, lop_obj_ref(objs[i])};
    }
    pthread_rwlock_unlock(&s->lock);
    rebuild_fields(s);
    if (listed_twice) { /* keep each key's last report: walk back, drop a key already seen */
        lop_objset_t seen = LOP_OBJSET_INIT;
        lop_objset_reserve(&seen, nc);
        size_t keep = nc;
        for (size_t j = nc; j-- > 0;) {
            if (lop_objset_add(&seen, ch[j].new_)) {
                lop_obj_unref(ch[j].new_);
                ch[j].new_ = NULL;
                keep--;
            }
        }
        lop_objset_cleanup(&seen);
        size_t w = 0;
        for (size_t j = 0; j < nc; j++)
            if (ch[j].new_) ch[w++] = ch[j];
        nc = keep;
    }
    deliver_changes(ch, nc, fn, ud);
    free(ch);
}

/* After a relist: every field index from the store's new content (the lock not held). */
static void rebuild_fields(lop_store_t *s)
{
    if (!s->nfields) return;
    lop_obj_list_t all;
    lop_store_list(s, &all);
    for (size_t i = 0; i < s->nfields; i++) lop_fieldindex_rebuild(s->fields[i], all.items, all.n);
    lop_obj_list_free(&all);
}

bool lop_store_add_field_index(lop_store_t *s, lop_fieldindex_t *x)
{
    if (!x || s->nfields == LOP_STORE_MAX_FIELD_INDEXES) return false;
    for (size_t i = 0; i < s->nfields; i++)
        if (strcmp(lop_fieldindex_name(s->fields[i]), lop_fieldindex_name(x)) == 0) return false;
    s->fields[s->nfields++] = x;
    rebuild_fields(s);
    return true;
}

lop_fieldindex_t *lop_store_field_index(lop_store_t *s, const char *name)
{
    for (size_t i = 0; i < s->nfields; i++)
        if (strcmp(lop_fieldindex_name(s->fields[i]), name) == 0) return s->fields[i];
    return NULL;
}

void lop_store_replace(lop_store_t *s, lop_obj_t *const *objs, size_t n, lop_store_change_fn fn, void *ud)
{
    pthread_rwlock_wrlock(&s->lock);
    if (s->items.count == 0) {
        replace_empty_locked(s, objs, n, fn, ud);
        return;
    }
    pthread_rwlock_unlock(&s->lock); /* the set of listed keys is built without the lock */
    /* The listed objects by key, each key's last occurrence: walking the list backwards, the
     * first object met for a key is its last occurrence, and add keeps it against earlier ones. */
    lop_objset_t fresh = LOP_OBJSET_INIT;
    lop_objset_reserve(&fresh, n);
    bool *last = lop_xmalloc(n ? n : 1);
    for (size_t i = n; i-- > 0;) last[i] = lop_objset_add(&fresh, objs[i]) == NULL;
    pthread_rwlock_wrlock(&s->lock);
    size_t cap = fresh.count + s->items.count, nc = 0, ndel;
    change_t *ch = lop_xmalloc((cap ? cap : 1) * sizeof *ch);
    /* deletes: present now, absent from the list */
    size_t it = 0;
    for (lop_obj_t *o; (o = lop_objset_next(&s->items, &it));)
        if (!lop_objset_find_like(&fresh, o)) ch[nc++] = (change_t){LOP_STORE_DELETED, o, NULL};
    ndel = nc;
    for (size_t i = 0; i < ndel; i++) {
        lop_objset_remove(&s->items, ch[i].old);
        unindex(s, ch[i].old); /* the change keeps the store's reference */
    }
    for (size_t i = 0; i < n; i++) {
        if (!last[i]) /* a later duplicate wins */
            continue;
        lop_obj_t *prev = put_locked(s, objs[i]);
        ch[nc++] = (change_t){prev ? LOP_STORE_UPDATED : LOP_STORE_ADDED, prev, lop_obj_ref(objs[i])};
    }
    pthread_rwlock_unlock(&s->lock);
    rebuild_fields(s);
    lop_objset_cleanup(&fresh);
    free(last);
    /* adds and updates in list order, then the deletes in key order */
    qsort(ch, ndel, sizeof *ch, change_cmp);
    deliver_changes(ch + ndel, nc - ndel, fn, ud);
    deliver_changes(ch, ndel, fn, ud);
    free(ch);
}
