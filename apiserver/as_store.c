/* SPDX-License-Identifier: Apache-2.0 */
/* as_store.c — the in-memory object store: sorted collections, one global revision, the bounded
 * event history (ring, bounded in events and bytes), point-in-time snapshots rebuilt from it
 * (api-concepts#resource-versions). Objects are kept serialized (as_decode.h for their trees). */
#include "apiserver/as_store.h"

#include "apiserver/as_decode.h"
#include "apiserver/as_util.h"
#include "apiserver/as_watch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void as_make_key(const as_res_t *res, const char *ns, const char *name, char *buf, size_t n)
{
    if (res->namespaced)
        snprintf(buf, n, "%s/%s", ns, name);
    else
        snprintf(buf, n, "%s", name);
}

/* Index of key in a sorted entry array, or -(insert position)-1. */
static long bsearch_key(const as_entry_t *items, size_t n, const char *key)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(items[mid].key, key);
        if (c == 0) return (long)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -(long)lo - 1;
}

as_entry_t *as_store_find(as_coll_t *c, const char *key)
{
    long i = bsearch_key(c->items, c->n, key);
    return i >= 0 ? &c->items[i] : NULL;
}

/* ---- history ring ---- */

static void hist_event_free(as_event_t *e)
{
    free(e->key);
    as_blob_unref(e->wire);
    as_blob_unref(e->pwire);
    free(e);
}

void as_store_init(lop_apiserver_t *srv)
{
    srv->ring_cap = (size_t)(srv->history > 0 ? srv->history : 10000);
    if (!srv->history_bytes) srv->history_bytes = (size_t)256 << 20;
    if (!srv->dc_budget) srv->dc_budget = (size_t)4 << 20;
    srv->ring = lop_xcalloc(srv->ring_cap, sizeof *srv->ring);
    srv->ring_head = srv->ring_len = 0;
    srv->ring_bytes = 0;
    srv->hist_floor = 0;
    srv->rev = 0;
}

void as_store_free(lop_apiserver_t *srv)
{
    for (size_t i = 0; i < srv->ring_len; i++) hist_event_free(srv->ring[(srv->ring_head + i) % srv->ring_cap]);
    free(srv->ring);
    srv->ring = NULL;
    srv->ring_len = 0;
    srv->ring_bytes = 0;
    as_decode_free(srv);
    for (size_t i = 0; i < srv->ncolls; i++) {
        as_coll_t *c = srv->colls[i];
        for (size_t j = 0; j < c->n; j++) {
            free(c->items[j].key);
            as_blob_unref(c->items[j].wire);
        }
        free(c->items);
        free(c->name);
        free(c);
    }
    free(srv->colls);
    srv->colls = NULL;
    srv->ncolls = srv->capcolls = 0;
}

static void ring_drop_oldest(lop_apiserver_t *srv)
{
    as_event_t *old = srv->ring[srv->ring_head];
    srv->hist_floor = old->rv;
    srv->ring_bytes -= old->bytes;
    hist_event_free(old);
    srv->ring_head = (srv->ring_head + 1) % srv->ring_cap;
    srv->ring_len--;
}

/* Append e, first dropping the oldest events until it fits in ring_cap events and history_bytes
 * (an event larger than the whole budget is kept alone). An event is charged both its blobs
 * although they are shared with the store or a neighbour event: the bound is on what the ring
 * may keep alive, not less. */
static void ring_push(lop_apiserver_t *srv, as_event_t *e)
{
    e->bytes = sizeof *e + strlen(e->key) + 1 + e->wire->len + (e->pwire ? e->pwire->len : 0);
    while (srv->ring_len && (srv->ring_len == srv->ring_cap || srv->ring_bytes + e->bytes > srv->history_bytes))
        ring_drop_oldest(srv);
    srv->ring[(srv->ring_head + srv->ring_len) % srv->ring_cap] = e;
    srv->ring_len++;
    srv->ring_bytes += e->bytes;
}

void as_store_compact(lop_apiserver_t *srv)
{
    for (size_t i = 0; i < srv->ring_len; i++) hist_event_free(srv->ring[(srv->ring_head + i) % srv->ring_cap]);
    srv->ring_head = srv->ring_len = 0;
    srv->ring_bytes = 0;
    srv->hist_floor = srv->rev;
}

static void set_rv(json_t *obj, int64_t rv)
{
    char b[32];
    snprintf(b, sizeof b, "%lld", (long long)rv);
    json_object_set_new(as_meta(obj), "resourceVersion", json_string(b));
}

static as_blob_t *serialize(const as_coll_t *c, const json_t *obj)
{
    char *s = json_dumps(obj, JSON_COMPACT | (c->sort_keys ? JSON_SORT_KEYS : 0));
    if (!s) s = lop_xstrdup("{}");
    as_blob_t *b = as_blob_new(s, strlen(s));
    free(s);
    b->facts = as_facts_of(obj, b->data, b->len);
    return b;
}

as_blob_t *as_store_wire(lop_apiserver_t *srv, as_coll_t *c, const json_t *obj)
{
    (void)srv;
    const char *name = as_meta_str(obj, "name");
    const char *ns = as_meta_str(obj, "namespace");
    if (!name) return NULL;
    char key[600];
    if (ns && *ns)
        snprintf(key, sizeof key, "%s/%s", ns, name);
    else
        snprintf(key, sizeof key, "%s", name);
    as_entry_t *e = as_store_find(c, key);
    return e && e->wire->tree == obj ? e->wire : NULL;
}

json_t *as_store_commit(lop_apiserver_t *srv, as_coll_t *c, const char *key, json_t *new_obj)
{
    long idx = bsearch_key(c->items, c->n, key);
    as_blob_t *oldw = idx >= 0 ? c->items[idx].wire : NULL;
    if (!new_obj && !oldw) return NULL;
    int64_t rv = ++srv->rev;
    as_event_t *e = lop_xcalloc(1, sizeof *e);
    e->rv = rv;
    e->coll = c;
    e->key = lop_xstrdup(key);
    json_t *result;
    if (!new_obj) { /* delete: the event carries the last state with the deletion RV */
        json_t *last = json_deep_copy(as_blob_obj(srv, oldw));
        set_rv(last, rv);
        e->type = AS_DELETED;
        e->wire = serialize(c, last);
        as_decode_put(srv, e->wire, last);
        e->pwire = oldw; /* takes the store's reference */
        free(c->items[idx].key);
        memmove(&c->items[idx], &c->items[idx + 1], (c->n - (size_t)idx - 1) * sizeof *c->items);
        c->n--;
        result = last;
    } else {
        set_rv(new_obj, rv);
        e->wire = serialize(c, new_obj);
        as_decode_put(srv, e->wire, new_obj); /* the caller's reference goes to the cache */
        e->wire->refs++;                      /* one for the event, one for the store entry */
        if (oldw) {
            e->type = AS_MODIFIED;
            e->pwire = oldw; /* the store's reference moves to the event */
            c->items[idx].wire = e->wire;
        } else {
            e->type = AS_ADDED;
            size_t pos = (size_t)(-idx - 1);
            if (c->n == c->cap) {
                c->cap = c->cap ? c->cap * 2 : 64;
                c->items = lop_xrealloc(c->items, c->cap * sizeof *c->items);
            }
            memmove(&c->items[pos + 1], &c->items[pos], (c->n - pos) * sizeof *c->items);
            c->items[pos].key = lop_xstrdup(key);
            c->items[pos].wire = e->wire;
            c->n++;
        }
        result = new_obj;
    }
    ring_push(srv, e);
    as_watch_dispatch(srv, e);
    return result;
}

static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const as_entry_t *)a)->key, ((const as_entry_t *)b)->key);
}

int as_store_snapshot(lop_apiserver_t *srv, as_coll_t *c, int64_t rv, const char *ns, as_entry_t **out, size_t *n)
{
    if (rv < srv->hist_floor && rv != srv->rev) return -1;
    size_t cap = c->n + 16, cnt = 0;
    as_entry_t *arr = lop_xmalloc(cap * sizeof *arr);
    size_t nslen = ns ? strlen(ns) : 0;
    for (size_t i = 0; i < c->n; i++) {
        if (ns && (strncmp(c->items[i].key, ns, nslen) || c->items[i].key[nslen] != '/')) continue;
        arr[cnt++] = c->items[i];
    }
    if (rv < srv->rev) {
        /* undo newer events, newest first */
        for (size_t i = srv->ring_len; i-- > 0;) {
            as_event_t *e = srv->ring[(srv->ring_head + i) % srv->ring_cap];
            if (e->rv <= rv) break;
            if (e->coll != c) continue;
            if (ns && (strncmp(e->key, ns, nslen) || e->key[nslen] != '/')) continue;
            long idx = bsearch_key(arr, cnt, e->key);
            if (e->type == AS_ADDED) {
                if (idx >= 0) {
                    memmove(&arr[idx], &arr[idx + 1], (cnt - (size_t)idx - 1) * sizeof *arr);
                    cnt--;
                }
            } else if (e->type == AS_MODIFIED) {
                if (idx >= 0) arr[idx].wire = e->pwire;
            } else if (idx < 0) {
                if (cnt == cap) {
                    cap *= 2;
                    arr = lop_xrealloc(arr, cap * sizeof *arr);
                }
                size_t pos = (size_t)(-idx - 1);
                memmove(&arr[pos + 1], &arr[pos], (cnt - pos) * sizeof *arr);
                arr[pos].key = e->key;
                arr[pos].wire = e->pwire;
                cnt++;
            }
        }
        (void)cmp_entry;
    }
    *out = arr;
    *n = cnt;
    return 0;
}
