/* SPDX-License-Identifier: Apache-2.0 */
/* reflector_state.c — what both the reflector's watch loop (reflector.c) and its list
 * (reflector_list.c) do to its state: replace the store and deliver the changes in batches, mark it
 * synced, move the resume point, find a cached entry a relisted or watch-listed item may share, and
 * draw jitter. Calls into neither of them (see reflector_state.h). */
#include "host/kube/cache/reflector_state.h"

#include "host/codec/jsonscan.h"
#include "host/util/buf.h"

#include <stdlib.h>
#include <string.h>

uint64_t lop_reflector_rand(lop_reflector_t *r)
{
    /* xorshift64* */
    uint64_t x = r->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    r->rng = x;
    return x * UINT64_C(2685821657736338717);
}

void lop_reflector_set_rv(lop_reflector_t *r, const char *rv)
{
    char *n = lop_xstrdup(rv ? rv : "");
    pthread_mutex_lock(&r->mu);
    free(r->last_rv);
    r->last_rv = n;
    pthread_mutex_unlock(&r->mu);
}

void lop_reflector_mark_synced(lop_reflector_t *r)
{
    /* under the delivery lock: a handler an informer registers meanwhile either sees HasSynced
     * already true (and is told after its replay) or is told here */
    if (r->dlock) pthread_mutex_lock(r->dlock);
    if (!atomic_exchange(&r->synced, true) && r->h.on_synced) r->h.on_synced(r->h.ud);
    if (r->dlock) pthread_mutex_unlock(r->dlock);
}

#define REPLACE_BATCH 512

static void deliver(void *ud, lop_store_change_t what, lop_obj_t *old, lop_obj_t *new_)
{
    lop_reflector_t *r = ud;
    if (what == LOP_STORE_ADDED) {
        if (r->h.on_add) r->h.on_add(r->h.ud, new_);
    } else if (what == LOP_STORE_UPDATED) {
        if (r->h.on_update) r->h.on_update(r->h.ud, old, new_);
    } else if (r->h.on_delete) {
        r->h.on_delete(r->h.ud, old, true);
    }
    if (++r->replace_delivered % REPLACE_BATCH == 0) /* let the workers have this batch */
        lop_refl_batch_flush(r);
}

void lop_reflector_replace(lop_reflector_t *r, lop_obj_t *const *objs, size_t n)
{
    if (r->dlock) pthread_mutex_lock(r->dlock);
    /* the handlers' calls go in bursts (the handler batch, reflector.h; bound by the runtime: one
     * lock and one wake-up per REPLACE_BATCH changes instead of per object, the workers starting on the
     * first burst).
     * Flushed, not only ended, at the end: a watch-list's replace runs nested in the batch of
     * the stream's read, and the reflector counts as synced once this returns. */
    r->replace_delivered = 0;
    lop_refl_batch_begin(r);
    lop_store_replace(r->store, objs, n, deliver, r);
    lop_refl_batch_flush(r);
    lop_refl_batch_end(r);
    if (r->dlock) pthread_mutex_unlock(r->dlock);
}

/* The cached entry for this list item when it has the same resourceVersion (so the same
 * content): a relist then shares it instead of building a second copy — the old and the new
 * cache are never both resident for unchanged objects. NULL when not cached, changed, or the
 * item's name fields carry escapes (then it is simply built). item is validated JSON. */
lop_obj_t *lop_reflector_cached_same_rv(lop_reflector_t *r, const char *item, size_t len)
{
    lop_jscan_iter_t it, mt;
    if (lop_jscan_object_begin_trusted(&it, item, len, 0) != 0) return NULL;
    int rr;
    while ((rr = lop_jscan_object_next(&it)) == 1 && !lop_jscan_key_is(&it, "metadata"))
        ;
    if (rr != 1 || item[it.val_start] != '{' || lop_jscan_object_begin_trusted(&mt, item, len, it.val_start) != 0)
        return NULL;
    const char *ns = "", *name = NULL, *rv = NULL;
    size_t nsl = 0, namel = 0, rvl = 0;
    while ((name == NULL || rv == NULL || !nsl) && lop_jscan_object_next(&mt) == 1) {
        const char *v = item + mt.val_start;
        size_t vl = mt.val_end - mt.val_start;
        if (vl < 2 || v[0] != '"' || memchr(v, '\\', vl)) continue;
        if (lop_jscan_key_is(&mt, "name"))
            name = v + 1, namel = vl - 2;
        else if (lop_jscan_key_is(&mt, "namespace"))
            ns = v + 1, nsl = vl - 2;
        else if (lop_jscan_key_is(&mt, "resourceVersion"))
            rv = v + 1, rvl = vl - 2;
    }
    if (!name || !rv || !namel || !rvl) return NULL;
    char small[256];
    size_t kl = nsl ? nsl + 1 + namel : namel;
    char *key = kl < sizeof small ? small : lop_xmalloc(kl + 1);
    if (nsl)
        snprintf(key, kl + 1, "%.*s/%.*s", (int)nsl, ns, (int)namel, name);
    else
        snprintf(key, kl + 1, "%.*s", (int)namel, name);
    lop_obj_t *o = lop_store_get(r->store, key);
    if (key != small) free(key);
    if (o && (strlen(o->rv) != rvl || memcmp(o->rv, rv, rvl) != 0)) {
        lop_obj_unref(o);
        o = NULL;
    }
    return o;
}
