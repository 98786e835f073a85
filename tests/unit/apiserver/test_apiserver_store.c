// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the local API server's store as kept in memory (apiserver/as_store.h,
 * as_decode.h): objects kept as their serialized bytes plus facts, trees decoded on demand
 * through the byte-bounded decode cache (evicted only between event-loop callbacks), and the
 * history ring bounded in bytes (older revisions: snapshots refused, i.e. 410 Gone upstream).
 * The store runs on a server struct built here, with its own event base and no HTTP. */
#include "apiserver/as_decode.h"
#include "apiserver/as_store.h"
#include "host/meta/selector.h"
#include "host/util/buf.h"
#include "t.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static as_res_t res = {.namespaced = true, .api_version = "v1"};

/* A server struct with one collection (its store initialised) and an event base for the trim
 * event; history in events, bytes; decode cache budget in bytes. */
static lop_apiserver_t *mk_srv(long history, size_t history_bytes, size_t budget, as_coll_t **cout)
{
    lop_apiserver_t *srv = lop_xcalloc(1, sizeof *srv);
    srv->base = event_base_new();
    srv->history = history;
    srv->history_bytes = history_bytes;
    srv->dc_budget = budget;
    as_store_init(srv);
    as_coll_t *c = lop_xcalloc(1, sizeof *c);
    c->name = lop_xstrdup("/configmaps");
    srv->colls = lop_xcalloc(1, sizeof *srv->colls);
    srv->colls[0] = c;
    srv->ncolls = srv->capcolls = 1;
    res.coll = c;
    *cout = c;
    return srv;
}

static void free_srv(lop_apiserver_t *srv)
{
    as_store_free(srv);
    event_base_free(srv->base);
    free(srv->ring);
    free(srv);
}

/* A ConfigMap ns/name with one data value of vlen bytes and label app=app. */
static json_t *cm(const char *name, const char *app, size_t vlen)
{
    char *v = lop_xmalloc(vlen + 1);
    memset(v, 'x', vlen);
    v[vlen] = '\0';
    json_t *o = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap", "metadata",
                          "name", name, "namespace", "ns", "labels", "app", app, "data", "v", v);
    free(v);
    return o;
}

/* One turn of the loop: runs the trim event if a callback activated it. */
static void loop_turn(lop_apiserver_t *srv) { event_base_loop(srv->base, EVLOOP_NONBLOCK); }

static void test_decode_cache_valid_until_turn_ends(void)
{
    as_coll_t *c;
    lop_apiserver_t *srv = mk_srv(100, 1 << 20, 1, &c); /* budget 1 byte: always over */
    json_t *in = cm("a", "x", 10);
    json_t *got = as_store_commit(srv, c, "ns/a", in);
    T_CHECK(got == in); /* the committed tree, now the cache's */
    as_entry_t *e = as_store_find(c, "ns/a");
    T_CHECK(e != NULL);
    char *dumped = json_dumps(got, JSON_COMPACT);
    T_EQ_STR(e->wire->data, dumped); /* the blob is the tree serialized */
    free(dumped);
    T_CHECK(as_entry_obj(srv, e) == got); /* a hit: the same tree within this callback */
    T_EQ_INT((long)srv->dc_hits, 1);
    T_CHECK(as_store_wire(srv, c, got) == e->wire);
    T_EQ_INT((long)srv->dc_count, 1); /* over budget, but nothing is evicted inside a callback */
    T_EQ_STR(json_string_value(json_object_get(json_object_get(got, "metadata"), "resourceVersion")), "1");
    loop_turn(srv);
    T_EQ_INT((long)srv->dc_count, 0); /* trimmed between turns */
    T_EQ_INT((long)srv->dc_bytes, 0);
    T_CHECK(e->wire->tree == NULL);
    T_EQ_INT(e->wire->refs, 2); /* the store entry and the ADDED event; the cache let go */
    unsigned long misses = (unsigned long)srv->dc_misses;
    json_t *again = as_entry_obj(srv, e);
    T_EQ_INT((long)(srv->dc_misses - misses), 1); /* decoded from the bytes */
    T_EQ_STR(json_string_value(json_object_get(json_object_get(again, "data"), "v")), "xxxxxxxxxx");
    T_EQ_STR(json_string_value(json_object_get(json_object_get(again, "metadata"), "resourceVersion")), "1");
    T_EQ_INT((long)srv->dc_count, 1);
    loop_turn(srv);
    /* a scan's decode is the caller's and fills nothing */
    json_t *own = as_blob_decode(srv, e->wire);
    T_EQ_STR(json_string_value(json_object_get(json_object_get(own, "metadata"), "name")), "a");
    T_EQ_INT((long)srv->dc_count, 0);
    T_CHECK(e->wire->tree == NULL);
    json_decref(own);
    free_srv(srv);
}

static void test_decode_cache_lru_and_budget(void)
{
    as_coll_t *c;
    lop_apiserver_t *srv = mk_srv(100, 1 << 20, 0, &c);
    json_t *got = as_store_commit(srv, c, "ns/a", cm("a", "x", 100));
    (void)got;
    size_t one = as_store_find(c, "ns/a")->wire->len;
    srv->dc_budget = one * 2 + one / 2; /* room for two */
    as_store_commit(srv, c, "ns/b", cm("b", "x", 100));
    as_store_commit(srv, c, "ns/c", cm("c", "x", 100));
    as_entry_t *a = as_store_find(c, "ns/a"), *b = as_store_find(c, "ns/b"), *cc = as_store_find(c, "ns/c");
    T_EQ_INT((long)srv->dc_count, 3);
    as_entry_obj(srv, a); /* a used last: b is now the least recently used */
    loop_turn(srv);
    T_EQ_INT((long)srv->dc_count, 2);
    T_CHECK(a->wire->tree != NULL);
    T_CHECK(b->wire->tree == NULL);
    T_CHECK(cc->wire->tree != NULL);
    T_CHECK(srv->dc_bytes <= srv->dc_budget);
    /* an update replaces the entry's blob; the old bytes stay with the MODIFIED event */
    as_blob_t *old = a->wire;
    json_t *n = json_deep_copy(as_entry_obj(srv, a));
    json_object_set_new(json_object_get(n, "data"), "v", json_string("new"));
    json_t *stored = as_store_commit(srv, c, "ns/a", n);
    a = as_store_find(c, "ns/a");
    T_CHECK(a->wire != old);
    T_CHECK(as_entry_obj(srv, a) == stored);
    /* the replaced tree is still the old state (cached with the event's bytes) */
    T_EQ_INT((long)strlen(json_string_value(json_object_get(json_object_get(old->tree, "data"), "v"))), 100);
    /* a delete's result (the last state at the deletion RV) is valid in this callback too */
    json_t *gone = as_store_commit(srv, c, "ns/b", NULL);
    T_CHECK(gone != NULL);
    T_EQ_STR(json_string_value(json_object_get(json_object_get(gone, "metadata"), "name")), "b");
    char rv[32];
    snprintf(rv, sizeof rv, "%lld", (long long)srv->rev);
    T_EQ_STR(json_string_value(json_object_get(json_object_get(gone, "metadata"), "resourceVersion")), rv);
    T_CHECK(as_store_find(c, "ns/b") == NULL);
    loop_turn(srv);
    T_CHECK(srv->dc_bytes <= srv->dc_budget);
    free_srv(srv);
}

static void test_facts(void)
{
    as_coll_t *c;
    lop_apiserver_t *srv = mk_srv(100, 1 << 20, 1 << 20, &c);
    json_t *o = json_pack("{s:s,s:s,s:{s:s,s:s,s:s,s:s,s:[s,s],s:[{s:s},{s:s},{s:s}]}}", "apiVersion", "example.com/v2",
                          "kind", "Widget", "metadata", "name", "w", "namespace", "ns", "uid", "u-1",
                          "deletionTimestamp", "2026-12-07T10:00:00Z", "finalizers", "orphan", "foregroundDeletion",
                          "ownerReferences", "uid", "o-1", "name", "no-uid", "uid", "o-2");
    as_store_commit(srv, c, "ns/w", o);
    const as_facts_t *f = as_store_find(c, "ns/w")->wire->facts;
    T_EQ_STR(f->api_version, "example.com/v2");
    T_EQ_STR(f->uid, "u-1");
    T_CHECK(f->deleting);
    T_CHECK(f->fin_foreground);
    T_CHECK(f->fin_orphan);
    T_CHECK(f->owner_refs);
    T_EQ_INT((long)f->nowners, 2);
    T_EQ_STR(f->owner_uids[0], "o-1");
    T_EQ_STR(f->owner_uids[1], "o-2");
    as_store_commit(srv, c, "ns/p",
                    json_pack("{s:{s:s,s:s,s:[]}}", "metadata", "name", "p", "namespace", "ns", "ownerReferences"));
    f = as_store_find(c, "ns/p")->wire->facts;
    T_EQ_STR(f->api_version, "");
    T_CHECK(f->uid == NULL);
    T_CHECK(!f->deleting && !f->fin_foreground && !f->fin_orphan && !f->owner_refs);
    T_EQ_INT((long)f->nowners, 0);
    T_EQ_INT((long)f->labels_end, 0); /* no labels: no span */
    free_srv(srv);
}

static void test_blob_matches(void)
{
    as_coll_t *c;
    lop_apiserver_t *srv = mk_srv(100, 1 << 20, 1, &c);
    as_store_commit(srv, c, "ns/a", cm("a", "x", 10));
    loop_turn(srv); /* nothing cached */
    as_entry_t *e = as_store_find(c, "ns/a");
    lop_label_selector_t *yes, *no;
    lop_field_selector_t *name;
    lop_err_t err;
    T_EQ_INT(lop_label_selector_parse("app=x", &yes, &err), LOP_OK);
    T_EQ_INT(lop_label_selector_parse("app=y", &no, &err), LOP_OK);
    T_EQ_INT(lop_field_selector_parse("metadata.name=a", &name, &err), LOP_OK);
    T_CHECK(as_blob_matches(srv, &res, NULL, NULL, NULL, e->key, e->wire, false));
    T_CHECK(as_blob_matches(srv, &res, "ns", NULL, NULL, e->key, e->wire, false));
    T_CHECK(!as_blob_matches(srv, &res, "n", NULL, NULL, e->key, e->wire, false)); /* "n" is not "ns" */
    T_CHECK(as_blob_matches(srv, &res, "ns", yes, name, e->key, e->wire, false));
    /* a label selector alone parses only the labels' bytes, found at commit */
    const as_facts_t *f = e->wire->facts;
    T_EQ_INT((long)(f->labels_end - f->labels_start), (long)strlen("{\"app\":\"x\"}"));
    T_CHECK(!memcmp(e->wire->data + f->labels_start, "{\"app\":\"x\"}", f->labels_end - f->labels_start));
    T_CHECK(as_blob_matches(srv, &res, "ns", yes, NULL, e->key, e->wire, false));
    T_CHECK(!as_blob_matches(srv, &res, "other", yes, NULL, e->key, e->wire, false));
    T_CHECK(!as_blob_matches(srv, &res, NULL, no, NULL, e->key, e->wire, false));
    T_EQ_INT((long)srv->dc_count, 0); /* scans fill no cache */
    T_CHECK(as_blob_matches(srv, &res, NULL, yes, NULL, e->key, e->wire, true));
    T_EQ_INT((long)srv->dc_count, 1); /* a dispatch decodes once for all its watchers */
    lop_label_selector_free(yes);
    lop_label_selector_free(no);
    lop_field_selector_free(name);
    free_srv(srv);
}

static void test_ring_bounded_in_bytes(void)
{
    as_coll_t *c;
    lop_apiserver_t *srv = mk_srv(1000, 1 << 20, 1 << 20, &c);
    as_store_commit(srv, c, "ns/o0", cm("o0", "x", 500));
    size_t one = srv->ring_bytes; /* an ADDED event of this size */
    T_CHECK(one > 500);
    srv->history_bytes = one * 3 + one / 2; /* room for three */
    for (int i = 1; i < 10; i++) {
        char name[8], key[16];
        snprintf(name, sizeof name, "o%d", i);
        snprintf(key, sizeof key, "ns/%s", name);
        as_store_commit(srv, c, key, cm(name, "x", 500));
    }
    T_EQ_INT((long)srv->ring_len, 3);
    T_CHECK(srv->ring_bytes <= srv->history_bytes);
    T_EQ_INT((long)srv->hist_floor, (long)srv->rev - 3);
    as_entry_t *items;
    size_t n;
    T_EQ_INT(as_store_snapshot(srv, c, srv->rev - 5, NULL, &items, &n), -1); /* fell out: 410 */
    T_EQ_INT(as_store_snapshot(srv, c, srv->rev - 2, NULL, &items, &n), 0);  /* still there */
    T_EQ_INT((long)n, 8);
    free(items);
    /* a MODIFIED event is charged both states: it takes the room of two ADDED ones */
    json_t *m = json_deep_copy(as_entry_obj(srv, as_store_find(c, "ns/o9")));
    as_store_commit(srv, c, "ns/o9", m);
    T_CHECK(srv->ring_bytes <= srv->history_bytes);
    T_EQ_INT((long)srv->ring_len, 2);
    T_EQ_INT((long)srv->hist_floor, (long)srv->rev - 2);
    /* the event bound still applies */
    srv->history_bytes = 1 << 20;
    for (int i = 0; i < 1100; i++) as_store_commit(srv, c, "ns/o1", cm("o1", i % 2 ? "x" : "y", 10));
    T_EQ_INT((long)srv->ring_len, 1000);
    loop_turn(srv);
    free_srv(srv);
}

int main(void)
{
    T_RUN(test_decode_cache_valid_until_turn_ends);
    T_RUN(test_decode_cache_lru_and_budget);
    T_RUN(test_facts);
    T_RUN(test_blob_matches);
    T_RUN(test_ring_bounded_in_bytes);
    return T_DONE();
}
