/* SPDX-License-Identifier: Apache-2.0 */
/* fieldindex.c — user-defined index: object → values, lookup by value (see fieldindex.h).
 *
 * Two maps under one rwlock: by_key (cache key → its record: the object and its values) and
 * by_val (value → the set of records carrying it, a strmap keyed by cache key). An update removes
 * the old record's values from by_val and adds the new one's: O(values of the object); a find
 * walks one value's set: O(matches), then sorts the matches by key. */
#include "host/kube/cache/fieldindex.h"

#include "host/codec/strmap.h"
#include "host/util/buf.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct rec {
    lop_obj_t *o; /* a reference */
    char *key;    /* o's cache key */
    char **vals;  /* distinct values */
    size_t n;
} rec_t;

struct lop_fieldindex {
    pthread_rwlock_t lock;
    char *name;
    lop_fieldindex_fn fn;
    void *ud;
    lop_strmap_t by_key; /* cache key → rec_t * (owned) */
    lop_strmap_t by_val; /* value → lop_strmap_t * (owned; cache key → rec_t *, borrowed from by_key) */
    size_t errors;
};

lop_fieldindex_t *lop_fieldindex_new(const char *name, lop_fieldindex_fn fn, void *ud)
{
    if (!name || !*name || !fn) return NULL;
    lop_fieldindex_t *x = lop_xcalloc(1, sizeof *x);
    pthread_rwlock_init(&x->lock, NULL);
    x->name = lop_xstrdup(name);
    x->fn = fn;
    x->ud = ud;
    return x;
}

static void rec_free(rec_t *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->n; i++) free(r->vals[i]);
    free(r->vals);
    free(r->key);
    lop_obj_unref(r->o);
    free(r);
}

static char *key_of(const lop_obj_t *o)
{
    char small[320];
    int n = lop_obj_key(o, small, sizeof small);
    if (n >= 0 && (size_t)n < sizeof small) return lop_xstrdup(small);
    char *k = lop_xmalloc((size_t)n + 1);
    lop_obj_key(o, k, (size_t)n + 1);
    return k;
}

/* Forget every record and value set (caller holds the write lock, or owns x alone). */
static void clear_all(lop_fieldindex_t *x)
{
    lop_strmap_iter_t it;
    for (lop_strmap_ent_t *e = lop_strmap_first(&x->by_val, &it); e; e = lop_strmap_next(&x->by_val, &it, e)) {
        lop_strmap_clear(e->val);
        free(e->val);
    }
    lop_strmap_clear(&x->by_val);
    for (lop_strmap_ent_t *e = lop_strmap_first(&x->by_key, &it); e; e = lop_strmap_next(&x->by_key, &it, e))
        rec_free(e->val);
    lop_strmap_clear(&x->by_key);
}

void lop_fieldindex_free(lop_fieldindex_t *x)
{
    if (!x) return;
    clear_all(x);
    free(x->name);
    pthread_rwlock_destroy(&x->lock);
    free(x);
}

const char *lop_fieldindex_name(const lop_fieldindex_t *x) { return x->name; }

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* o's record, computed outside the lock; NULL when o has no values (*err set on an error). */
static rec_t *compute(lop_fieldindex_t *x, lop_obj_t *o, int *err)
{
    char **vals = NULL;
    int n = x->fn(x->ud, o, &vals);
    *err = n < 0;
    if (n <= 0) { /* on error the function freed what it allocated */
        if (n == 0) free(vals);
        return NULL;
    }
    /* distinct values: an object listing one Secret twice is one match, not two */
    qsort(vals, (size_t)n, sizeof *vals, cmp_str);
    size_t m = 0;
    for (size_t i = 0; i < (size_t)n; i++) {
        if (m && strcmp(vals[m - 1], vals[i]) == 0)
            free(vals[i]);
        else
            vals[m++] = vals[i];
    }
    rec_t *r = lop_xcalloc(1, sizeof *r);
    r->o = lop_obj_ref(o);
    r->key = key_of(o);
    r->vals = vals;
    r->n = m;
    return r;
}

/* Take key's record out of both maps and free it (caller holds the write lock). */
static void remove_key(lop_fieldindex_t *x, const char *key)
{
    rec_t *r = lop_strmap_del(&x->by_key, key, NULL);
    if (!r) return;
    for (size_t i = 0; i < r->n; i++) {
        lop_strmap_t *set = lop_strmap_get(&x->by_val, r->vals[i]);
        if (!set) continue;
        lop_strmap_del(set, r->key, NULL);
        if (set->count) continue;
        lop_strmap_del(&x->by_val, r->vals[i], NULL);
        lop_strmap_clear(set);
        free(set);
    }
    rec_free(r);
}

/* Put r in both maps, replacing a record of the same key (caller holds the write lock). */
static void insert(lop_fieldindex_t *x, rec_t *r)
{
    remove_key(x, r->key);
    lop_strmap_put(&x->by_key, r->key, r);
    for (size_t i = 0; i < r->n; i++) {
        lop_strmap_t *set = lop_strmap_get(&x->by_val, r->vals[i]);
        if (!set) {
            set = lop_xcalloc(1, sizeof *set);
            lop_strmap_put(&x->by_val, r->vals[i], set);
        }
        lop_strmap_put(set, r->key, r);
    }
}

void lop_fieldindex_update(lop_fieldindex_t *x, const lop_obj_t *old, lop_obj_t *new_)
{
    if (!old && !new_) return;
    int err = 0;
    rec_t *r = new_ ? compute(x, new_, &err) : NULL;
    char *key = r ? NULL : key_of(old ? old : new_);
    pthread_rwlock_wrlock(&x->lock);
    x->errors += (size_t)err;
    if (r)
        insert(x, r); /* replaces the old record (same cache key) */
    else
        remove_key(x, key);
    pthread_rwlock_unlock(&x->lock);
    free(key);
}

void lop_fieldindex_rebuild(lop_fieldindex_t *x, lop_obj_t *const *objs, size_t n)
{
    rec_t **recs = lop_xcalloc(n ? n : 1, sizeof *recs);
    size_t m = 0, errs = 0;
    for (size_t i = 0; i < n; i++) {
        int err = 0;
        rec_t *r = compute(x, objs[i], &err);
        errs += (size_t)err;
        if (r) recs[m++] = r;
    }
    pthread_rwlock_wrlock(&x->lock);
    clear_all(x);
    for (size_t i = 0; i < m; i++) insert(x, recs[i]); /* a repeated key: the last wins */
    x->errors += errs;
    pthread_rwlock_unlock(&x->lock);
    free(recs);
}

static int by_key(const void *a, const void *b)
{
    return lop_obj_key_cmp(*(lop_obj_t *const *)a, *(lop_obj_t *const *)b);
}

void lop_fieldindex_find(lop_fieldindex_t *x, const char *value, lop_obj_list_t *out)
{
    *out = (lop_obj_list_t){NULL, 0};
    pthread_rwlock_rdlock(&x->lock);
    lop_strmap_t *set = value ? lop_strmap_get(&x->by_val, value) : NULL;
    if (set && set->count) {
        out->items = lop_xmalloc(set->count * sizeof *out->items);
        lop_strmap_iter_t it;
        for (lop_strmap_ent_t *e = lop_strmap_first(set, &it); e; e = lop_strmap_next(set, &it, e))
            out->items[out->n++] = lop_obj_ref(((rec_t *)e->val)->o);
    }
    pthread_rwlock_unlock(&x->lock);
    if (out->n > 1) qsort(out->items, out->n, sizeof *out->items, by_key);
}

size_t lop_fieldindex_count(lop_fieldindex_t *x)
{
    pthread_rwlock_rdlock(&x->lock);
    size_t n = x->by_key.count;
    pthread_rwlock_unlock(&x->lock);
    return n;
}

size_t lop_fieldindex_values(lop_fieldindex_t *x)
{
    pthread_rwlock_rdlock(&x->lock);
    size_t n = x->by_val.count;
    pthread_rwlock_unlock(&x->lock);
    return n;
}

size_t lop_fieldindex_errors(lop_fieldindex_t *x)
{
    pthread_rwlock_rdlock(&x->lock);
    size_t n = x->errors;
    pthread_rwlock_unlock(&x->lock);
    return n;
}
