/* SPDX-License-Identifier: Apache-2.0 */
/* fieldindex.c — user-defined index: object → values, lookup by value (see fieldindex.h). */
#include "host/kube/cache/fieldindex.h"

#include "host/util/buf.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct rec {
    lop_obj_t *o; /* a reference */
    char **vals;
    size_t n;
} rec_t;

struct lop_fieldindex {
    pthread_rwlock_t lock;
    char *name;
    lop_fieldindex_fn fn;
    void *ud;
    rec_t *recs;
    size_t n, cap;
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

static void rec_clear(rec_t *r)
{
    for (size_t i = 0; i < r->n; i++) free(r->vals[i]);
    free(r->vals);
    lop_obj_unref(r->o);
}

static void clear_all(lop_fieldindex_t *x)
{
    for (size_t i = 0; i < x->n; i++) rec_clear(&x->recs[i]);
    x->n = 0;
}

void lop_fieldindex_free(lop_fieldindex_t *x)
{
    if (!x) return;
    clear_all(x);
    free(x->recs);
    free(x->name);
    pthread_rwlock_destroy(&x->lock);
    free(x);
}

const char *lop_fieldindex_name(const lop_fieldindex_t *x) { return x->name; }

/* Compute o's record outside the lock; r->n == 0 means "not indexed". */
static rec_t compute(lop_fieldindex_t *x, lop_obj_t *o, int *err)
{
    rec_t r = {NULL, NULL, 0};
    int n = x->fn(x->ud, o, &r.vals);
    *err = n < 0;
    if (n <= 0) { /* on error the function kept (or freed) what it allocated */
        if (n == 0) free(r.vals);
        r.vals = NULL;
        return r;
    }
    r.n = (size_t)n;
    r.o = lop_obj_ref(o);
    return r;
}

static void remove_key(lop_fieldindex_t *x, const lop_obj_t *like)
{
    for (size_t i = 0; i < x->n; i++) {
        if (!lop_obj_same_key(x->recs[i].o, like)) continue;
        rec_clear(&x->recs[i]);
        x->recs[i] = x->recs[--x->n];
        return;
    }
}

static void append(lop_fieldindex_t *x, rec_t r)
{
    if (x->n == x->cap) {
        x->cap = x->cap ? x->cap * 2 : 16;
        x->recs = lop_xrealloc(x->recs, x->cap * sizeof *x->recs);
    }
    x->recs[x->n++] = r;
}

void lop_fieldindex_update(lop_fieldindex_t *x, const lop_obj_t *old, lop_obj_t *new_)
{
    int err = 0;
    rec_t r = {NULL, NULL, 0};
    if (new_) r = compute(x, new_, &err);
    pthread_rwlock_wrlock(&x->lock);
    x->errors += (size_t)err;
    if (old || new_) remove_key(x, old ? old : new_);
    if (r.n) append(x, r);
    pthread_rwlock_unlock(&x->lock);
}

void lop_fieldindex_rebuild(lop_fieldindex_t *x, lop_obj_t *const *objs, size_t n)
{
    rec_t *recs = lop_xcalloc(n ? n : 1, sizeof *recs);
    size_t m = 0, errs = 0;
    for (size_t i = 0; i < n; i++) {
        int err = 0;
        rec_t r = compute(x, objs[i], &err);
        errs += (size_t)err;
        if (r.n) recs[m++] = r;
    }
    pthread_rwlock_wrlock(&x->lock);
    clear_all(x);
    free(x->recs);
    x->recs = recs;
    x->n = m;
    x->cap = n ? n : 1;
    x->errors += errs;
    pthread_rwlock_unlock(&x->lock);
}

static int by_key(const void *a, const void *b)
{
    char ka[512], kb[512];
    lop_obj_key(*(lop_obj_t *const *)a, ka, sizeof ka);
    lop_obj_key(*(lop_obj_t *const *)b, kb, sizeof kb);
    return strcmp(ka, kb);
}

void lop_fieldindex_find(lop_fieldindex_t *x, const char *value, lop_obj_list_t *out)
{
    *out = (lop_obj_list_t){NULL, 0};
    pthread_rwlock_rdlock(&x->lock);
    for (size_t i = 0; i < x->n; i++) {
        for (size_t j = 0; j < x->recs[i].n; j++) {
            if (strcmp(x->recs[i].vals[j], value) != 0) continue;
            out->items = lop_xrealloc(out->items, (out->n + 1) * sizeof *out->items);
            out->items[out->n++] = lop_obj_ref(x->recs[i].o);
            break;
        }
    }
    pthread_rwlock_unlock(&x->lock);
    if (out->n > 1) qsort(out->items, out->n, sizeof *out->items, by_key);
}

size_t lop_fieldindex_count(lop_fieldindex_t *x)
{
    pthread_rwlock_rdlock(&x->lock);
    size_t n = x->n;
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
