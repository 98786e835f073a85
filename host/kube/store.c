/* store.c — the thread-safe indexed object cache (see store.h). */
#include "host/kube/store.h"

#include "host/kube/strmap.h"
#include "host/util/buf.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct lop_store {
    pthread_rwlock_t lock;
    lop_strmap_t items;    /* key -> lop_obj_t* (one reference) */
    lop_strmap_t by_ns;    /* namespace -> lop_strmap_t* of key -> obj (borrowed) */
    lop_strmap_t by_owner; /* owner uid -> lop_strmap_t* of key -> obj (borrowed) */
    size_t bytes;
};

void lop_obj_list_free(lop_obj_list_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        lop_obj_unref(l->items[i]);
    free(l->items);
    l->items = NULL;
    l->n = 0;
}

static char *key_of(const lop_obj_t *o, char *small, size_t cap)
{
    int n = lop_obj_key(o, small, cap);
    if ((size_t)n < cap)
        return small;
    char *k = lop_xmalloc((size_t)n + 1);
    lop_obj_key(o, k, (size_t)n + 1);
    return k;
}

static void index_add(lop_strmap_t *idx, const char *val, const char *key, lop_obj_t *o)
{
    lop_strmap_t *set = lop_strmap_get(idx, val);
    if (!set) {
        set = lop_xcalloc(1, sizeof *set);
        lop_strmap_put(idx, val, set);
    }
    lop_strmap_put(set, key, o);
}

static void index_del(lop_strmap_t *idx, const char *val, const char *key)
{
    lop_strmap_t *set = lop_strmap_get(idx, val);
    if (!set)
        return;
    lop_strmap_del(set, key, NULL);
    if (set->count == 0) {
        lop_strmap_del(idx, val, NULL);
        lop_strmap_clear(set);
        free(set);
    }
}

static void unindex(lop_store_t *s, const char *key, lop_obj_t *o)
{
    index_del(&s->by_ns, o->namespace_, key);
    for (size_t i = 0; i < o->nowners; i++)
        index_del(&s->by_owner, o->owner_uids[i], key);
    s->bytes -= o->json_len;
}

static void reindex(lop_store_t *s, const char *key, lop_obj_t *o)
{
    index_add(&s->by_ns, o->namespace_, key, o);
    for (size_t i = 0; i < o->nowners; i++)
        index_add(&s->by_owner, o->owner_uids[i], key, o);
    s->bytes += o->json_len;
}

static void free_index(lop_strmap_t *idx)
{
    lop_strmap_iter_t it;
    for (lop_strmap_ent_t *e = lop_strmap_first(idx, &it); e; e = lop_strmap_next(idx, &it, e)) {
        lop_strmap_clear(e->val);
        free(e->val);
    }
    lop_strmap_clear(idx);
}

lop_store_t *lop_store_new(void)
{
    lop_store_t *s = lop_xcalloc(1, sizeof *s);
    pthread_rwlock_init(&s->lock, NULL);
    return s;
}

static void clear_all(lop_store_t *s)
{
    lop_strmap_iter_t it;
    for (lop_strmap_ent_t *e = lop_strmap_first(&s->items, &it); e; e = lop_strmap_next(&s->items, &it, e))
        lop_obj_unref(e->val);
    lop_strmap_clear(&s->items);
    free_index(&s->by_ns);
    free_index(&s->by_owner);
    s->bytes = 0;
}

void lop_store_free(lop_store_t *s)
{
    if (!s)
        return;
    clear_all(s);
    pthread_rwlock_destroy(&s->lock);
    free(s);
}

/* Write lock held. Takes a new reference on obj; returns the previous entry's reference. */
static bool has_owner(const lop_obj_t *o, const char *uid)
{
    for (size_t i = 0; i < o->nowners; i++)
        if (strcmp(o->owner_uids[i], uid) == 0)
            return true;
    return false;
}

/* Write lock held. Takes a new reference on obj; returns the previous entry's reference. An
 * update leaves the index entries that stay (same namespace, same owners) in place and only
 * repoints them (no allocation per update in the common case). */
static lop_obj_t *put_locked(lop_store_t *s, const char *key, lop_obj_t *obj)
{
    lop_obj_ref(obj);
    lop_obj_t *prev = lop_strmap_put(&s->items, key, obj);
    if (prev) {
        if (strcmp(prev->namespace_, obj->namespace_) != 0)
            index_del(&s->by_ns, prev->namespace_, key);
        for (size_t i = 0; i < prev->nowners; i++)
            if (!has_owner(obj, prev->owner_uids[i]))
                index_del(&s->by_owner, prev->owner_uids[i], key);
        s->bytes -= prev->json_len;
    }
    reindex(s, key, obj); /* index_add replaces the value of an entry that stayed */
    return prev;
}

void lop_store_put(lop_store_t *s, lop_obj_t *obj, lop_obj_t **old)
{
    char small[256];
    char *key = key_of(obj, small, sizeof small);
    pthread_rwlock_wrlock(&s->lock);
    lop_obj_t *prev = put_locked(s, key, obj);
    pthread_rwlock_unlock(&s->lock);
    if (key != small)
        free(key);
    if (old)
        *old = prev;
    else
        lop_obj_unref(prev);
}

lop_obj_t *lop_store_delete(lop_store_t *s, const char *key)
{
    pthread_rwlock_wrlock(&s->lock);
    lop_obj_t *prev = lop_strmap_del(&s->items, key, NULL);
    if (prev)
        unindex(s, key, prev);
    pthread_rwlock_unlock(&s->lock);
    return prev;
}

lop_obj_t *lop_store_get(lop_store_t *s, const char *key)
{
    pthread_rwlock_rdlock(&s->lock);
    lop_obj_t *o = lop_strmap_get(&s->items, key);
    if (o)
        lop_obj_ref(o);
    pthread_rwlock_unlock(&s->lock);
    return o;
}

lop_obj_t *lop_store_get_by_name(lop_store_t *s, const char *ns, const char *name)
{
    lop_buf_t k = LOP_BUF_INIT;
    if (ns && *ns)
        lop_buf_printf(&k, "%s/%s", ns, name);
    else
        lop_buf_puts(&k, name);
    lop_obj_t *o = lop_store_get(s, k.data);
    lop_buf_free(&k);
    return o;
}

typedef struct keyed {
    const char *key;
    lop_obj_t *obj;
} keyed_t;

static int keyed_cmp(const void *a, const void *b)
{
    return strcmp(((const keyed_t *)a)->key, ((const keyed_t *)b)->key);
}

/* Collect a set (key -> obj) filtered by pred into out, sorted by key. Read lock held. */
static void collect(const lop_strmap_t *set, bool (*pred)(const lop_obj_t *, const void *), const void *arg,
                    lop_obj_list_t *out)
{
    out->items = NULL;
    out->n = 0;
    if (!set || set->count == 0)
        return;
    keyed_t *tmp = lop_xmalloc(set->count * sizeof *tmp);
    size_t n = 0;
    lop_strmap_iter_t it;
    for (lop_strmap_ent_t *e = lop_strmap_first(set, &it); e; e = lop_strmap_next(set, &it, e))
        if (!pred || pred(e->val, arg))
            tmp[n++] = (keyed_t){e->key, e->val};
    qsort(tmp, n, sizeof *tmp, keyed_cmp);
    out->items = lop_xmalloc((n ? n : 1) * sizeof *out->items);
    for (size_t i = 0; i < n; i++)
        out->items[i] = lop_obj_ref(tmp[i].obj);
    out->n = n;
    free(tmp);
}

void lop_store_list(lop_store_t *s, lop_obj_list_t *out)
{
    pthread_rwlock_rdlock(&s->lock);
    collect(&s->items, NULL, NULL, out);
    pthread_rwlock_unlock(&s->lock);
}

void lop_store_list_by_namespace(lop_store_t *s, const char *ns, lop_obj_list_t *out)
{
    pthread_rwlock_rdlock(&s->lock);
    collect(lop_strmap_get(&s->by_ns, ns ? ns : ""), NULL, NULL, out);
    pthread_rwlock_unlock(&s->lock);
}

void lop_store_list_by_owner_uid(lop_store_t *s, const char *uid, lop_obj_list_t *out)
{
    pthread_rwlock_rdlock(&s->lock);
    collect(lop_strmap_get(&s->by_owner, uid), NULL, NULL, out);
    pthread_rwlock_unlock(&s->lock);
}

/* Used by store_select.c. */
void lop_store_collect_filtered(lop_store_t *s, const char *ns, bool (*pred)(const lop_obj_t *, const void *),
                                const void *arg, lop_obj_list_t *out);
void lop_store_collect_filtered(lop_store_t *s, const char *ns, bool (*pred)(const lop_obj_t *, const void *),
                                const void *arg, lop_obj_list_t *out)
{
    pthread_rwlock_rdlock(&s->lock);
    collect(ns ? lop_strmap_get(&s->by_ns, ns) : &s->items, pred, arg, out);
    pthread_rwlock_unlock(&s->lock);
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
    char *key;
} change_t;

static int change_cmp(const void *a, const void *b)
{
    return strcmp(((const change_t *)a)->key, ((const change_t *)b)->key);
}

/* Deliver the changes (fn may be NULL), then drop them. */
static void deliver_changes(change_t *ch, size_t nc, lop_store_change_fn fn, void *ud)
{
    for (size_t i = 0; i < nc; i++) {
        if (fn)
            fn(ud, ch[i].what, ch[i].old, ch[i].new_);
        lop_obj_unref(ch[i].old);
        lop_obj_unref(ch[i].new_);
        free(ch[i].key);
    }
    free(ch);
}

/* replace into an empty store (the first list, the case every sync pays for): every object is an
 * add and nothing is deleted, so the map of the listed keys that the general case builds (to find
 * deletes and duplicates) is not needed. A key listed twice still keeps its last occurrence,
 * reported once at that position: put returns the earlier one, whose report is withdrawn. Called
 * with the write lock held; releases it. */
static void replace_empty_locked(lop_store_t *s, lop_obj_t *const *objs, size_t n, lop_store_change_fn fn,
                                 void *ud)
{
    change_t *ch = lop_xmalloc((n ? n : 1) * sizeof *ch);
    size_t nc = 0;
    for (size_t i = 0; i < n; i++) {
        char small[256];
        char *key = key_of(objs[i], small, sizeof small);
        if (key == small)
            key = lop_xstrdup(small);
        lop_obj_t *prev = put_locked(s, key, objs[i]);
        if (prev) { /* listed twice (rare): withdraw the earlier report */
            for (size_t j = nc; j-- > 0;) {
                if (strcmp(ch[j].key, key) == 0) {
                    lop_obj_unref(ch[j].new_);
                    free(ch[j].key);
                    memmove(&ch[j], &ch[j + 1], (nc - j - 1) * sizeof *ch);
                    nc--;
                    break;
                }
            }
            lop_obj_unref(prev); /* the store's reference to the earlier occurrence */
        }
        ch[nc++] = (change_t){LOP_STORE_ADDED, NULL, lop_obj_ref(objs[i]), key};
    }
    pthread_rwlock_unlock(&s->lock);
    deliver_changes(ch, nc, fn, ud);
}

void lop_store_replace(lop_store_t *s, lop_obj_t *const *objs, size_t n, lop_store_change_fn fn, void *ud)
{
    pthread_rwlock_wrlock(&s->lock);
    if (s->items.count == 0) {
        replace_empty_locked(s, objs, n, fn, ud);
        return;
    }
    pthread_rwlock_unlock(&s->lock); /* the map of listed keys is built without the lock */
    /* key -> index of its last occurrence in objs (+1, so that no value is NULL) */
    lop_strmap_t fresh = LOP_STRMAP_INIT;
    char **keys = lop_xmalloc((n ? n : 1) * sizeof *keys);
    for (size_t i = 0; i < n; i++) {
        char small[256];
        char *key = key_of(objs[i], small, sizeof small);
        keys[i] = key == small ? lop_xstrdup(small) : key;
        lop_strmap_put(&fresh, keys[i], (void *)(uintptr_t)(i + 1));
    }
    pthread_rwlock_wrlock(&s->lock);
    size_t cap = fresh.count + s->items.count, nc = 0, ndel;
    change_t *ch = lop_xmalloc((cap ? cap : 1) * sizeof *ch);
    /* deletes: present now, absent from the list */
    lop_strmap_iter_t it;
    for (lop_strmap_ent_t *e = lop_strmap_first(&s->items, &it); e; e = lop_strmap_next(&s->items, &it, e))
        if (!lop_strmap_has(&fresh, e->key))
            ch[nc++] = (change_t){LOP_STORE_DELETED, e->val, NULL, lop_xstrdup(e->key)};
    ndel = nc;
    for (size_t i = 0; i < ndel; i++) {
        lop_strmap_del(&s->items, ch[i].key, NULL);
        unindex(s, ch[i].key, ch[i].old); /* the change keeps the store's reference */
    }
    for (size_t i = 0; i < n; i++) {
        if ((uintptr_t)lop_strmap_get(&fresh, keys[i]) != i + 1) { /* a later duplicate wins */
            free(keys[i]);
            continue;
        }
        lop_obj_t *prev = put_locked(s, keys[i], objs[i]);
        ch[nc++] = (change_t){prev ? LOP_STORE_UPDATED : LOP_STORE_ADDED, prev, lop_obj_ref(objs[i]), keys[i]};
    }
    pthread_rwlock_unlock(&s->lock);
    lop_strmap_clear(&fresh);
    free(keys);
    /* deletes in key order, after the adds and updates */
    qsort(ch, ndel, sizeof *ch, change_cmp);
    change_t *sorted = lop_xmalloc((nc ? nc : 1) * sizeof *ch);
    memcpy(sorted, ch + ndel, (nc - ndel) * sizeof *ch);
    memcpy(sorted + (nc - ndel), ch, ndel * sizeof *ch);
    free(ch);
    deliver_changes(sorted, nc, fn, ud);
}
