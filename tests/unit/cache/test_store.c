/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for host/kube/object (cache entries, managedFields stripping, metadata parsing),
 * host/kube/jsonscan and host/kube/store (indexes, replace with tombstones, key order). */
#include "host/codec/jsonscan.h"
#include "host/kube/cache/object.h"
#include "host/kube/cache/store.h"
#include "t.h"

#include <stdlib.h>
#include <string.h>

static lop_obj_t *mk(const char *json)
{
    lop_obj_t *o = NULL;
    lop_err_t err;
    lop_rc_t rc = lop_obj_new(json, strlen(json), 0, &o, &err);
    if (rc != LOP_OK) fprintf(stderr, "lop_obj_new: %s\n", err.message);
    T_EQ_INT(rc, LOP_OK);
    return o;
}

static lop_obj_t *pod(const char *ns, const char *name, const char *rv, const char *owner)
{
    char buf[512];
    snprintf(buf, sizeof buf,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"namespace\":\"%s\",\"name\":\"%s\","
             "\"uid\":\"u-%s\",\"resourceVersion\":\"%s\",\"labels\":{\"app\":\"%s\"}%s%s%s}}",
             ns, name, name, rv, name, owner ? ",\"ownerReferences\":[{\"uid\":\"" : "", owner ? owner : "",
             owner ? "\",\"controller\":true}]" : "");
    return mk(buf);
}

/* Drop the test's references (a NULL-terminated array) and the store. */
static void free_all(lop_store_t *s, lop_obj_t *const *objs)
{
    for (; *objs; objs++) lop_obj_unref(*objs);
    lop_store_free(s);
}

static void test_obj_parses_metadata(void)
{
    const char *j =
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"metadata\":{\"name\":\"rs\",\"namespace\":\"ns1\","
        "\"uid\":\"u1\",\"resourceVersion\":\"42\",\"generation\":7,\"deletionTimestamp\":\"2025-03-01T10:00:00Z\","
        "\"labels\":{\"a\":\"1\",\"b\":\"\"},\"annotations\":{\"x/y\":\"z\"},"
        "\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"Foo\",\"name\":\"f\",\"uid\":\"o1\"},"
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":\"d\",\"uid\":\"o2\",\"controller\":true}]},"
        "\"spec\":{\"replicas\":3}}";
    lop_obj_t *o = mk(j);
    T_EQ_STR(o->api_version, "apps/v1");
    T_EQ_STR(o->kind, "ReplicaSet");
    T_EQ_STR(o->namespace_, "ns1");
    T_EQ_STR(o->name, "rs");
    T_EQ_STR(o->uid, "u1");
    T_EQ_STR(o->rv, "42");
    T_EQ_INT(o->generation, 7);
    T_CHECK(o->deleting);
    size_t nl;
    lop_obj_labels(o, &nl);
    T_EQ_INT(nl, 2);
    T_EQ_STR(lop_obj_label(o, "a"), "1");
    T_EQ_STR(lop_obj_label(o, "b"), "");
    T_CHECK(lop_obj_label(o, "c") == NULL);
    T_EQ_STR(lop_obj_annotation(o, "x/y"), "z");
    T_EQ_INT(o->nowners, 2);
    T_CHECK(o->has_controller);
    T_EQ_STR(o->controller.kind, "Deployment");
    T_EQ_STR(o->controller.uid, "o2");
    T_CHECK(lop_obj_owned_by(o, "o1"));
    T_CHECK(!lop_obj_owned_by(o, "o3"));
    char key[64];
    lop_obj_key(o, key, sizeof key);
    T_EQ_STR(key, "ns1/rs");
    T_EQ_STR(o->json, j); /* nothing to strip: bytes untouched */
    lop_obj_t *r = lop_obj_ref(o);
    lop_obj_unref(o);
    T_EQ_STR(r->name, "rs");
    lop_obj_unref(r);
}

static void test_obj_strips_managed_fields_in_every_position(void)
{
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"{\"metadata\":{\"name\":\"a\",\"managedFields\":[{\"manager\":\"m\",\"fieldsV1\":{\"f:x\":{}}}],\"uid\":"
         "\"u\"}}",
         "{\"metadata\":{\"name\":\"a\",\"uid\":\"u\"}}"},
        {"{\"metadata\":{\"managedFields\":[{\"a\":\"]}\"}], \"name\":\"a\"},\"spec\":{}}",
         "{\"metadata\":{\"name\":\"a\"},\"spec\":{}}"},
        {"{\"metadata\":{\"name\":\"a\" , \"managedFields\":[]}}", "{\"metadata\":{\"name\":\"a\"}}"},
        {"{\"metadata\":{\"managedFields\":null}}", "{\"metadata\":{}}"},
        {"{\"spec\":{\"managedFields\":1},\"metadata\":{\"name\":\"a\"}}",
         "{\"spec\":{\"managedFields\":1},\"metadata\":{\"name\":\"a\"}}"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        lop_obj_t *o = mk(cases[i].in);
        if (!o) continue;
        T_EQ_STR(o->json, cases[i].out);
        T_EQ_INT(o->json_len, strlen(cases[i].out));
        lop_obj_unref(o);
    }
    /* opt-out keeps them */
    lop_obj_t *o = NULL;
    const char *in = cases[0].in;
    T_EQ_INT(lop_obj_new(in, strlen(in), LOP_OBJ_KEEP_MANAGED_FIELDS, &o, NULL), LOP_OK);
    T_EQ_STR(o->json, in);
    lop_obj_unref(o);
}

static void test_obj_list_item_gets_kind(void)
{
    const char *in = "{\"metadata\":{\"name\":\"cm\",\"namespace\":\"d\"},\"data\":{}}";
    lop_obj_t *o = NULL;
    T_EQ_INT(lop_obj_new_item(in, strlen(in), 0, "v1", "ConfigMap", &o, NULL), LOP_OK);
    T_EQ_STR(o->kind, "ConfigMap");
    T_EQ_STR(o->api_version, "v1");
    T_EQ_STR(o->json, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm\",\"namespace\":\"d\"}"
                      ",\"data\":{}}");
    T_EQ_STR(o->name, "cm");
    lop_obj_unref(o);
}

static void test_obj_rejects_bad_input_with_a_cause(void)
{
    static const char *bad[] = {
        "",
        "[]",
        "{",
        "{\"metadata\":{\"name\":1}}",
        "{\"metadata\":[]}",
        "{\"metadata\":{}} x",
        "{\"metadata\":{\"labels\":{\"a\":1}}}",
        "{\"metadata\":{\"ownerReferences\":{}}}",
        "{\"a\":tru}",
        "{\"a\":1,}",
        "{\"a\" 1}",
        "{\"metadata\":{\"generation\":\"x\"}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        lop_obj_t *o = NULL;
        lop_err_t err;
        lop_err_clear(&err);
        T_EQ_INT(lop_obj_new(bad[i], strlen(bad[i]), 0, &o, &err), LOP_EINVAL);
        T_CHECK(o == NULL);
        T_CHECK(err.message[0] != '\0');
    }
}

static void test_jscan_values(void)
{
    size_t s, e;
    const char *j = "  {\"a\":[1,2,{\"b\":\"}\\\"\"}],\"c\":{}}  ";
    T_EQ_INT(lop_jscan_value(j, strlen(j), 0, &s, &e), 0);
    T_EQ_INT(s, 2);
    T_EQ_INT(e, strlen(j) - 2);
    T_EQ_INT(lop_jscan_find(j, strlen(j), 0, "c", &s, &e), 1);
    T_EQ_INT(e - s, 2);
    T_EQ_INT(lop_jscan_find(j, strlen(j), 0, "zz", &s, &e), 0);
    const char *arr = "[ {}, [], \"x\" , -1.5e3 ]";
    lop_jscan_iter_t it;
    T_EQ_INT(lop_jscan_array_begin(&it, arr, strlen(arr), 0), 0);
    int n = 0;
    while (lop_jscan_array_next(&it) == 1) n++;
    T_EQ_INT(n, 4);
    T_EQ_INT(lop_jscan_value("[1,]", 4, 0, &s, &e), -1);
    T_EQ_INT(lop_jscan_value("[1 2]", 5, 0, &s, &e), -1);
    T_EQ_INT(lop_jscan_value("{\"a\"}", 5, 0, &s, &e), -1);
}

static void test_store_put_get_delete_and_indexes(void)
{
    lop_store_t *s = lop_store_new();
    lop_obj_t *a = pod("ns1", "a", "1", "owner1"), *b = pod("ns1", "b", "2", "owner1"), *c = pod("ns2", "c", "3", NULL);
    lop_store_put(s, a, NULL);
    lop_store_put(s, b, NULL);
    lop_store_put(s, c, NULL);
    lop_store_stats_t st;
    lop_store_stats(s, &st);
    T_EQ_INT(st.count, 3);
    T_EQ_INT(st.bytes, a->json_len + b->json_len + c->json_len);
    T_EQ_INT(st.namespaces, 2);

    lop_obj_t *g = lop_store_get(s, "ns1/b");
    T_CHECK(g == b);
    lop_obj_unref(g);
    g = lop_store_get_by_name(s, "ns2", "c");
    T_CHECK(g == c);
    lop_obj_unref(g);
    T_CHECK(lop_store_get(s, "ns2/zz") == NULL);
    T_CHECK(lop_store_get_by_name(s, "ns2", "zz") == NULL);
    /* cluster-scoped (no namespace, NULL or ""), and a key past the stack buffer (heap path) */
    char longname[400], lj[600];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    snprintf(lj, sizeof lj,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"namespace\":\"ns3\","
             "\"name\":\"%s\",\"uid\":\"u-long\",\"resourceVersion\":\"5\"}}",
             longname);
    lop_obj_t *cl = pod("", "node-1", "4", NULL), *lg = mk(lj);
    lop_store_put(s, cl, NULL);
    lop_store_put(s, lg, NULL);
    g = lop_store_get_by_name(s, NULL, "node-1");
    T_CHECK(g == cl);
    lop_obj_unref(g);
    g = lop_store_get_by_name(s, "", "node-1");
    T_CHECK(g == cl);
    lop_obj_unref(g);
    g = lop_store_get_by_name(s, "ns3", longname);
    T_CHECK(g == lg);
    lop_obj_unref(g);
    lop_obj_unref(lop_store_delete(s, "node-1"));
    char lk[420];
    snprintf(lk, sizeof lk, "ns3/%s", longname);
    lop_obj_unref(lop_store_delete(s, lk));
    lop_obj_unref(cl);
    lop_obj_unref(lg);

    lop_obj_list_t l;
    lop_store_list_by_namespace(s, "ns1", &l);
    T_EQ_INT(l.n, 2);
    T_EQ_STR(l.items[0]->name, "a");
    T_EQ_STR(l.items[1]->name, "b");
    lop_obj_list_free(&l);
    lop_store_list_by_owner_uid(s, "owner1", &l);
    T_EQ_INT(l.n, 2);
    lop_obj_list_free(&l);

    /* replace-never-edit: an update moves b out of owner1's index */
    lop_obj_t *b2 = pod("ns1", "b", "5", "owner2"), *old = NULL;
    lop_store_put(s, b2, &old);
    T_CHECK(old == b);
    T_EQ_STR(old->rv, "2"); /* a reader holding the old entry still sees it intact */
    lop_obj_unref(old);
    lop_store_list_by_owner_uid(s, "owner1", &l);
    T_EQ_INT(l.n, 1);
    lop_obj_list_free(&l);
    lop_store_list_by_owner_uid(s, "owner2", &l);
    T_EQ_INT(l.n, 1);
    T_EQ_STR(l.items[0]->rv, "5");
    lop_obj_list_free(&l);

    lop_obj_t *d = lop_store_delete(s, "ns2/c");
    T_CHECK(d == c);
    lop_obj_unref(d);
    T_CHECK(lop_store_delete(s, "ns2/c") == NULL);
    lop_store_list_by_namespace(s, "ns2", &l);
    T_EQ_INT(l.n, 0);
    lop_obj_list_free(&l);
    lop_store_stats(s, &st);
    T_EQ_INT(st.count, 2);
    T_EQ_INT(st.namespaces, 1);
    T_EQ_INT(st.bytes, a->json_len + b2->json_len);

    size_t nk;
    char **keys = lop_store_keys(s, &nk);
    T_EQ_INT(nk, 2);
    T_EQ_STR(keys[0], "ns1/a");
    T_EQ_STR(keys[1], "ns1/b");
    for (size_t i = 0; i < nk; i++) free(keys[i]);
    free(keys);

    lop_obj_unref(a);
    lop_obj_unref(b);
    lop_obj_unref(b2);
    lop_obj_unref(c);
    lop_store_free(s);
}

typedef struct rec {
    char log[1024];
} rec_t;

static void on_change(void *ud, lop_store_change_t what, lop_obj_t *old, lop_obj_t *new_)
{
    rec_t *r = ud;
    const char *tag = what == LOP_STORE_ADDED ? "add" : what == LOP_STORE_UPDATED ? "upd" : "del";
    const lop_obj_t *o = new_ ? new_ : old;
    size_t l = strlen(r->log);
    snprintf(r->log + l, sizeof r->log - l, "%s:%s:%s:%s;", tag, o->name, old ? old->rv : "-", new_ ? new_->rv : "-");
}

/* Replace s's content with objs[0..n) and check the changes reported, in order
 * ("what:name:old rv:new rv;" each). A macro, so that a failure names the caller's line. */
#define REPLACE_LOGS(s, objs, n, want)                       \
    do {                                                     \
        rec_t r_ = {{0}};                                    \
        lop_store_replace((s), (objs), (n), on_change, &r_); \
        T_EQ_STR(r_.log, (want));                            \
    } while (0)

static void test_store_replace_reports_tombstones(void)
{
    lop_store_t *s = lop_store_new();
    lop_obj_t *a = pod("n", "a", "1", NULL), *b = pod("n", "b", "2", "o"), *c = pod("n", "c", "3", NULL);
    lop_store_put(s, a, NULL);
    lop_store_put(s, b, NULL);
    lop_store_put(s, c, NULL);
    /* relist: b deleted while disconnected, c updated, d new */
    lop_obj_t *c2 = pod("n", "c", "9", NULL), *d = pod("n", "d", "8", NULL);
    lop_obj_t *list[] = {d, a, c2};
    /* adds/updates in list order (as client-go's Replace), then deletes in key order */
    REPLACE_LOGS(s, list, 3, "add:d:-:8;upd:a:1:1;upd:c:3:9;del:b:2:-;");
    lop_obj_list_t l;
    lop_store_list(s, &l);
    T_EQ_INT(l.n, 3);
    lop_obj_list_free(&l);
    lop_store_list_by_owner_uid(s, "o", &l);
    T_EQ_INT(l.n, 0);
    lop_obj_list_free(&l);
    /* a key listed twice: the last occurrence wins, reported once at its position */
    lop_obj_t *a2 = pod("n", "a", "5", NULL);
    lop_obj_t *dup[] = {a, c2, a2, d};
    REPLACE_LOGS(s, dup, 4, "upd:c:9:9;upd:a:1:5;upd:d:8:8;");
    lop_obj_t *got = lop_store_get(s, "n/a");
    T_EQ_STR(got->rv, "5");
    lop_obj_unref(got);
    lop_obj_unref(a2);
    lop_store_replace(s, NULL, 0, NULL, NULL);
    lop_store_stats_t st;
    lop_store_stats(s, &st);
    T_EQ_INT(st.count, 0);
    T_EQ_INT(st.bytes, 0);
    free_all(s, (lop_obj_t *[]){a, b, c, c2, d, NULL});
}

static void test_store_replace_into_an_empty_store(void)
{
    /* the first list: every object an add, in list order; a key listed twice keeps its last
     * occurrence, reported once at that position (as into a filled store); indexes and byte
     * count as if put one by one */
    lop_store_t *s = lop_store_new();
    lop_obj_t *a = pod("n", "a", "1", "o"), *c = pod("n", "c", "3", NULL), *a2 = pod("n", "a", "5", NULL),
              *d = pod("m", "d", "8", "o");
    lop_obj_t *list[] = {a, c, a2, d};
    REPLACE_LOGS(s, list, 4, "add:c:-:3;add:a:-:5;add:d:-:8;");
    lop_store_stats_t st;
    lop_store_stats(s, &st);
    T_EQ_INT(st.count, 3);
    T_EQ_INT(st.bytes, c->json_len + a2->json_len + d->json_len);
    lop_obj_t *got = lop_store_get(s, "n/a");
    T_EQ_STR(got->rv, "5");
    lop_obj_unref(got);
    lop_obj_list_t l;
    lop_store_list_by_owner_uid(s, "o", &l); /* a's owner went with its first occurrence */
    T_EQ_INT(l.n, 1);
    if (l.n == 1) T_EQ_STR(l.items[0]->name, "d");
    lop_obj_list_free(&l);
    /* the same list into the filled store: the general path, updates only */
    REPLACE_LOGS(s, list, 4, "upd:c:3:3;upd:a:5:5;upd:d:8:8;");
    /* an empty list into an empty store: nothing */
    lop_store_t *e = lop_store_new();
    REPLACE_LOGS(e, NULL, 0, "");
    lop_store_free(e);
    free_all(s, (lop_obj_t *[]){a, c, a2, d, NULL});
}

static void test_store_list_with_label_selector(void)
{
    lop_store_t *s = lop_store_new();
    lop_obj_t *a = pod("ns1", "a", "1", NULL), *b = pod("ns1", "b", "2", NULL), *c = pod("ns2", "a2", "3", NULL);
    lop_store_put(s, a, NULL);
    lop_store_put(s, b, NULL);
    lop_store_put(s, c, NULL);
    lop_label_selector_t *sel = NULL;
    T_EQ_INT(lop_label_selector_parse("app in (a, a2)", &sel, NULL), LOP_OK);
    lop_obj_list_t l;
    lop_store_list_selector(s, NULL, sel, &l);
    T_EQ_INT(l.n, 2);
    T_EQ_STR(l.items[0]->name, "a");
    T_EQ_STR(l.items[1]->name, "a2");
    lop_obj_list_free(&l);
    lop_store_list_selector(s, "ns2", sel, &l);
    T_EQ_INT(l.n, 1);
    lop_obj_list_free(&l);
    lop_label_selector_free(sel);
    T_EQ_INT(lop_label_selector_parse("app!=a", &sel, NULL), LOP_OK);
    lop_store_list_selector(s, "ns1", sel, &l);
    T_EQ_INT(l.n, 1);
    T_EQ_STR(l.items[0]->name, "b");
    lop_obj_list_free(&l);
    lop_label_selector_free(sel);
    lop_store_list_selector(s, NULL, NULL, &l); /* no selector: everything */
    T_EQ_INT(l.n, 3);
    lop_obj_list_free(&l);
    lop_store_list_selector(s, "nope", NULL, &l);
    T_EQ_INT(l.n, 0);
    lop_obj_list_free(&l);
    lop_obj_unref(a);
    lop_obj_unref(b);
    lop_obj_unref(c);
    lop_store_free(s);
}

/* The names of a list, "ns/name;" each, in list order. */
static const char *names(const lop_obj_list_t *l, char *buf, size_t cap)
{
    buf[0] = '\0';
    for (size_t i = 0, n = 0; i < l->n && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s/%s;", l->items[i]->namespace_, l->items[i]->name);
    return buf;
}

/* An owner uid with one object (kept inline by the index), then two (a group), then one again
 * under an update that moves an object to another owner, then none; and an object with two
 * owners listed under both. */
static void test_store_owner_one_two_none(void)
{
    lop_store_t *s = lop_store_new();
    lop_obj_list_t l;
    char buf[256];
    lop_obj_t *a = pod("n", "a", "1", "O"), *b = pod("n", "b", "1", "O"), *a2 = pod("n", "a", "2", "P");
    lop_store_put(s, a, NULL);
    lop_store_list_by_owner_uid(s, "O", &l);
    T_EQ_STR(names(&l, buf, sizeof buf), "n/a;");
    lop_obj_list_free(&l);
    lop_store_put(s, b, NULL);
    lop_store_list_by_owner_uid(s, "O", &l);
    T_EQ_STR(names(&l, buf, sizeof buf), "n/a;n/b;");
    lop_obj_list_free(&l);
    lop_store_put(s, a2, NULL); /* a moves from O to P */
    lop_store_list_by_owner_uid(s, "O", &l);
    T_EQ_STR(names(&l, buf, sizeof buf), "n/b;");
    lop_obj_list_free(&l);
    lop_store_list_by_owner_uid(s, "P", &l);
    T_EQ_INT(l.n, 1);
    T_CHECK(l.n == 1 && l.items[0] == a2);
    lop_obj_list_free(&l);
    lop_obj_unref(lop_store_delete(s, "n/b"));
    lop_store_list_by_owner_uid(s, "O", &l);
    T_EQ_INT(l.n, 0);
    lop_obj_list_free(&l);
    /* two owners on one object */
    lop_obj_t *c = mk("{\"metadata\":{\"namespace\":\"n\",\"name\":\"c\",\"ownerReferences\":"
                      "[{\"uid\":\"O\"},{\"uid\":\"P\"}]}}");
    lop_store_put(s, c, NULL);
    lop_store_list_by_owner_uid(s, "O", &l);
    T_EQ_STR(names(&l, buf, sizeof buf), "n/c;");
    lop_obj_list_free(&l);
    lop_store_list_by_owner_uid(s, "P", &l);
    T_EQ_STR(names(&l, buf, sizeof buf), "n/a;n/c;");
    lop_obj_list_free(&l);
    lop_obj_unref(lop_store_delete(s, "n/a")); /* P keeps c alone: found under P, not only O */
    lop_store_list_by_owner_uid(s, "P", &l);
    T_EQ_STR(names(&l, buf, sizeof buf), "n/c;");
    lop_obj_list_free(&l);
    lop_obj_unref(lop_store_delete(s, "n/c"));
    lop_store_list_by_owner_uid(s, "P", &l);
    T_EQ_INT(l.n, 0);
    lop_obj_list_free(&l);
    lop_store_list_by_owner_uid(s, "O", &l);
    T_EQ_INT(l.n, 0);
    lop_obj_list_free(&l);
    free_all(s, (lop_obj_t *[]){a, b, a2, c, NULL});
}

/* A namespace emptied is gone from the stats and its list; filled again, it is back. */
static void test_store_namespace_emptied_and_refilled(void)
{
    lop_store_t *s = lop_store_new();
    lop_obj_t *o[40];
    char name[16];
    for (int i = 0; i < 40; i++) {
        snprintf(name, sizeof name, "p%02d", i);
        o[i] = pod(i < 30 ? "big" : "small", name, "1", NULL);
        lop_store_put(s, o[i], NULL);
    }
    lop_store_stats_t st;
    lop_store_stats(s, &st);
    T_EQ_INT(st.namespaces, 2);
    lop_obj_list_t l;
    for (int i = 0; i < 30; i++) {
        char key[32];
        snprintf(key, sizeof key, "big/%s", o[i]->name);
        lop_obj_t *d = lop_store_delete(s, key);
        T_CHECK(d == o[i]);
        lop_obj_unref(d);
    }
    lop_store_stats(s, &st);
    T_EQ_INT(st.namespaces, 1);
    T_EQ_INT(st.count, 10);
    lop_store_list_by_namespace(s, "big", &l);
    T_EQ_INT(l.n, 0);
    lop_obj_list_free(&l);
    for (int i = 29; i >= 0; i--) /* refilled, in another order */
        lop_store_put(s, o[i], NULL);
    lop_store_stats(s, &st);
    T_EQ_INT(st.namespaces, 2);
    lop_store_list_by_namespace(s, "big", &l);
    T_EQ_INT(l.n, 30);
    bool ordered = l.n == 30;
    for (size_t i = 0; ordered && i < l.n; i++) ordered = l.items[i] == o[i];
    T_CHECK(ordered);
    lop_obj_list_free(&l);
    lop_store_list_by_namespace(s, "small", &l);
    T_EQ_INT(l.n, 10);
    lop_obj_list_free(&l);
    for (int i = 0; i < 40; i++) lop_obj_unref(o[i]);
    lop_store_free(s);
}

/* Lists and replace's deletes follow the keys' string order, where "a-b/x" comes before "a/b"
 * ('-' sorts before '/') although namespace "a" sorts before "a-b". */
static void test_store_key_order_and_replace_deletes(void)
{
    lop_store_t *s = lop_store_new();
    lop_obj_t *ay = pod("a", "y", "1", NULL), *abx = pod("a-b", "x", "1", NULL), *ab = pod("a", "b", "1", NULL),
              *zq = pod("z", "q", "1", NULL), *cl = pod("", "a.c", "1", NULL);
    lop_obj_t *objs[] = {ay, abx, ab, zq, cl};
    for (int i = 0; i < 5; i++) lop_store_put(s, objs[i], NULL);
    size_t nk;
    char **keys = lop_store_keys(s, &nk);
    T_EQ_INT(nk, 5);
    static const char *want[] = {"a-b/x", "a.c", "a/b", "a/y", "z/q"};
    for (size_t i = 0; i < nk && i < 5; i++) T_EQ_STR(keys[i], want[i]);
    for (size_t i = 0; i < nk; i++) free(keys[i]);
    free(keys);
    /* a relist holding only z/q, listed twice (the same object): deletes in key order after it */
    lop_obj_t *list[] = {zq, zq};
    REPLACE_LOGS(s, list, 2, "upd:q:1:1;del:x:1:-;del:a.c:1:-;del:b:1:-;del:y:1:-;");
    lop_store_stats_t st;
    lop_store_stats(s, &st);
    T_EQ_INT(st.count, 1);
    T_EQ_INT(st.namespaces, 1);
    T_EQ_INT(st.bytes, zq->json_len);
    /* the same object listed twice into an empty store: one add, at its last position */
    lop_store_t *e = lop_store_new();
    lop_obj_t *twice[] = {ab, ay, ab};
    REPLACE_LOGS(e, twice, 3, "add:y:-:1;add:b:-:1;");
    lop_store_stats(e, &st);
    T_EQ_INT(st.count, 2);
    T_EQ_INT(st.bytes, ab->json_len + ay->json_len);
    lop_store_free(e);
    /* distinct objects of one key, interleaved: each key's last occurrence, in list order */
    lop_obj_t *a1 = pod("n", "a", "1", NULL), *b1 = pod("n", "b", "1", NULL), *a2 = pod("n", "a", "2", NULL),
              *c1 = pod("n", "c", "1", NULL), *b2 = pod("n", "b", "2", NULL), *a3 = pod("n", "a", "3", NULL);
    lop_obj_t *mixed[] = {a1, b1, a2, c1, b2, a3, a3};
    e = lop_store_new();
    REPLACE_LOGS(e, mixed, 7, "add:c:-:1;add:b:-:2;add:a:-:3;");
    lop_obj_t *got = lop_store_get(e, "n/a");
    T_CHECK(got == a3);
    lop_obj_unref(got);
    free_all(e, (lop_obj_t *[]){a1, b1, a2, c1, b2, a3, NULL});
    for (int i = 0; i < 5; i++) lop_obj_unref(objs[i]);
    lop_store_free(s);
}

/* Many objects: every object under its namespace, under a shared owner, and (every third one)
 * under an owner of its own; after deleting half, the indexes and lists still agree with what
 * is left, in key order. */
static void test_store_many_objects_indexes_agree(void)
{
    enum { N = 3000 };
    lop_store_t *s = lop_store_new();
    lop_obj_t **o = malloc(N * sizeof *o);
    char buf[512];
    size_t bytes = 0;
    for (int i = 0; i < N; i++) {
        char own[32] = "";
        if (i % 3 == 0) snprintf(own, sizeof own, ",{\"uid\":\"own-%d\"}", i);
        snprintf(buf, sizeof buf,
                 "{\"metadata\":{\"namespace\":\"ns-%d\",\"name\":\"o-%d\",\"ownerReferences\":["
                 "{\"uid\":\"rs-%d\"}%s]}}",
                 i % 7, i, i % 10, own);
        o[i] = mk(buf);
        lop_store_put(s, o[i], NULL);
    }
    for (int i = 0; i < N; i += 2) {
        snprintf(buf, sizeof buf, "ns-%d/o-%d", i % 7, i);
        lop_obj_unref(lop_store_delete(s, buf));
    }
    for (int i = 1; i < N; i += 2) bytes += o[i]->json_len;
    lop_store_stats_t st;
    lop_store_stats(s, &st);
    T_EQ_INT(st.count, N / 2);
    T_EQ_INT(st.bytes, bytes);
    T_EQ_INT(st.namespaces, 7);
    int bad = 0;
    lop_obj_list_t l;
    for (int r = 0; r < 10; r++) {
        snprintf(buf, sizeof buf, "rs-%d", r);
        lop_store_list_by_owner_uid(s, buf, &l);
        bad += r % 2 == 0 ? l.n != 0 : l.n != N / 10; /* odd i only: even r owns only even i */
        for (size_t i = 1; i < l.n; i++) bad += lop_obj_key_cmp(l.items[i - 1], l.items[i]) >= 0;
        lop_obj_list_free(&l);
    }
    for (int i = 0; i < N; i += 3) {
        snprintf(buf, sizeof buf, "own-%d", i);
        lop_store_list_by_owner_uid(s, buf, &l);
        bad += l.n != (i % 2 ? 1u : 0u) || (l.n == 1 && l.items[0] != o[i]);
        lop_obj_list_free(&l);
    }
    size_t total = 0;
    for (int n = 0; n < 7; n++) {
        snprintf(buf, sizeof buf, "ns-%d", n);
        lop_store_list_by_namespace(s, buf, &l);
        total += l.n;
        for (size_t i = 0; i < l.n; i++)
            bad += strcmp(l.items[i]->namespace_, buf) != 0 || (i && lop_obj_key_cmp(l.items[i - 1], l.items[i]) >= 0);
        lop_obj_list_free(&l);
    }
    T_EQ_INT(total, N / 2);
    T_EQ_INT(bad, 0);
    for (int i = 0; i < N; i++) lop_obj_unref(o[i]);
    free(o);
    lop_store_free(s);
}

int main(void)
{
    T_RUN(test_obj_parses_metadata);
    T_RUN(test_obj_strips_managed_fields_in_every_position);
    T_RUN(test_obj_list_item_gets_kind);
    T_RUN(test_obj_rejects_bad_input_with_a_cause);
    T_RUN(test_jscan_values);
    T_RUN(test_store_put_get_delete_and_indexes);
    T_RUN(test_store_replace_reports_tombstones);
    T_RUN(test_store_replace_into_an_empty_store);
    T_RUN(test_store_list_with_label_selector);
    T_RUN(test_store_owner_one_two_none);
    T_RUN(test_store_namespace_emptied_and_refilled);
    T_RUN(test_store_key_order_and_replace_deletes);
    T_RUN(test_store_many_objects_indexes_agree);
    return T_DONE();
}
