/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for host/kube/cache/fieldindex: values from a user function (here: the Secrets a Pod
 * references, from spec.refs), incremental add/update/delete, rebuild
 * on relist, objects without values left out, index-function errors counted; at scale (many
 * objects, many values per object, updates that move values, rebuilds) against a brute-force
 * model, and a lookup's cost measured against the index's size (O(matches), not O(objects)). */
#include "host/kube/cache/fieldindex.h"
#include "t.h"

#include "host/util/clock.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An object in namespace ns whose spec.secrets lists the given names (comma-separated in refs). */
static lop_obj_t *mk(const char *ns, const char *name, const char *refs)
{
    char buf[1024];
    snprintf(buf, sizeof buf,
             "{\"metadata\":{\"namespace\":\"%s\",\"name\":\"%s\",\"resourceVersion\":\"1\"},"
             "\"spec\":{\"refs\":\"%s\"}}",
             ns, name, refs);
    lop_obj_t *o = NULL;
    T_EQ_INT(lop_obj_new(buf, strlen(buf), 0, &o, NULL), LOP_OK);
    return o;
}

/* The index function: "ns/ref" for each comma-separated ref in spec.refs ("!" = an error). */
static int by_ref(void *ud, const lop_obj_t *o, char ***vals)
{
    (void)ud;
    const char *p = strstr(o->json, "\"refs\":\"");
    if (!p) return 0;
    p += 8;
    if (*p == '!') return -1;
    int n = 0;
    *vals = NULL;
    while (*p && *p != '"') {
        size_t len = strcspn(p, ",\"");
        char *v = malloc(strlen(o->namespace_) + len + 2);
        sprintf(v, "%s/%.*s", o->namespace_, (int)len, p);
        *vals = realloc(*vals, (size_t)(n + 1) * sizeof **vals);
        (*vals)[n++] = v;
        p += len;
        if (*p == ',') p++;
    }
    return n;
}

/* The names found under value, joined by ' ' (static buffer). */
static const char *names(lop_fieldindex_t *x, const char *value)
{
    static char out[256];
    lop_obj_list_t l;
    lop_fieldindex_find(x, value, &l);
    out[0] = 0;
    for (size_t i = 0; i < l.n; i++) {
        if (i) strcat(out, " ");
        strcat(out, l.items[i]->name);
    }
    lop_obj_list_free(&l);
    return out;
}

static void test_incremental(void)
{
    lop_fieldindex_t *x = lop_fieldindex_new("by_secret", by_ref, NULL);
    lop_obj_t *a = mk("n", "a", "s1,s2"), *b = mk("n", "b", "s1"), *c = mk("m", "c", "s1"), *d = mk("n", "d", "");
    lop_fieldindex_update(x, NULL, b);
    lop_fieldindex_update(x, NULL, a);
    lop_fieldindex_update(x, NULL, c);
    lop_fieldindex_update(x, NULL, d);
    T_EQ_STR(names(x, "n/s1"), "a b"); /* sorted by key, whatever the order of adds */
    T_EQ_STR(names(x, "n/s2"), "a");
    T_EQ_STR(names(x, "m/s1"), "c");
    T_EQ_STR(names(x, "n/none"), "");
    T_EQ_INT((long)lop_fieldindex_count(x), 3); /* d has no values: not held */
    lop_obj_t *a2 = mk("n", "a", "s3");         /* update: a no longer references s1, s2 */
    lop_fieldindex_update(x, a, a2);
    T_EQ_STR(names(x, "n/s1"), "b");
    T_EQ_STR(names(x, "n/s2"), "");
    T_EQ_STR(names(x, "n/s3"), "a");
    lop_fieldindex_update(x, b, NULL); /* delete */
    T_EQ_STR(names(x, "n/s1"), "");
    lop_fieldindex_update(x, b, NULL); /* absent: nothing */
    T_EQ_INT((long)lop_fieldindex_count(x), 2);
    lop_obj_t *e = mk("n", "e", "s3");
    lop_obj_t *relist[] = {e, d};
    lop_fieldindex_rebuild(x, relist, 2); /* relist: a2, c gone; e new */
    T_EQ_STR(names(x, "n/s3"), "e");
    T_EQ_STR(names(x, "m/s1"), "");
    lop_obj_unref(a);
    lop_obj_unref(b);
    lop_obj_unref(c);
    lop_obj_unref(d);
    lop_obj_unref(a2);
    lop_obj_unref(e);
    lop_fieldindex_free(x); /* drops its own references (ASan/valgrind would see a leak or double free) */
}

static void test_errors_and_bad_args(void)
{
    T_CHECK(lop_fieldindex_new("", by_ref, NULL) == NULL);
    T_CHECK(lop_fieldindex_new("x", NULL, NULL) == NULL);
    lop_fieldindex_t *x = lop_fieldindex_new("by_secret", by_ref, NULL);
    T_EQ_STR(lop_fieldindex_name(x), "by_secret");
    lop_obj_t *a = mk("n", "a", "s1"), *bad = mk("n", "a", "!");
    lop_fieldindex_update(x, NULL, a);
    lop_fieldindex_update(x, a, bad); /* the new version fails: the old values are gone too */
    T_EQ_INT((long)lop_fieldindex_errors(x), 1);
    T_EQ_STR(names(x, "n/s1"), "");
    T_EQ_INT((long)lop_fieldindex_count(x), 0);
    lop_obj_unref(a);
    lop_obj_unref(bad);
    lop_fieldindex_free(x);
    lop_fieldindex_free(NULL);
}

/* Through the store: put/delete keep it current, replace (a relist) rebuilds it. */
static void test_in_store(void)
{
    lop_store_t *s = lop_store_new();
    lop_obj_t *a = mk("n", "a", "s1"), *b = mk("n", "b", "s1"), *b2 = mk("n", "b", "s2");
    lop_store_put(s, a, NULL);
    T_CHECK(lop_store_add_field_index(s, lop_fieldindex_new("by_secret", by_ref, NULL))); /* indexes a */
    lop_fieldindex_t *again = lop_fieldindex_new("by_secret", by_ref, NULL);
    T_CHECK(!lop_store_add_field_index(s, again)); /* the name is taken */
    lop_fieldindex_free(again);
    lop_fieldindex_t *x = lop_store_field_index(s, "by_secret");
    T_CHECK(x != NULL);
    T_CHECK(lop_store_field_index(s, "nope") == NULL);
    T_EQ_STR(names(x, "n/s1"), "a");
    lop_store_put(s, b, NULL);
    T_EQ_STR(names(x, "n/s1"), "a b");
    lop_store_put(s, b2, NULL);
    T_EQ_STR(names(x, "n/s1"), "a");
    T_EQ_STR(names(x, "n/s2"), "b");
    lop_obj_unref(lop_store_delete(s, "n/a"));
    T_EQ_STR(names(x, "n/s1"), "");
    lop_obj_t *relist[] = {a};
    lop_store_replace(s, relist, 1, NULL, NULL);
    T_EQ_STR(names(x, "n/s1"), "a");
    T_EQ_STR(names(x, "n/s2"), "");
    lop_obj_unref(a);
    lop_obj_unref(b);
    lop_obj_unref(b2);
    lop_store_free(s);
}

/* An object named name whose refs are "s<v>" for each v in vs[0..n) (heap string; big objects). */
static lop_obj_t *mk_many(const char *ns, const char *name, const int *vs, size_t n)
{
    char *refs = malloc(n * 12 + 1), *p = refs;
    *p = 0;
    for (size_t i = 0; i < n; i++) p += sprintf(p, "%ss%d", i ? "," : "", vs[i]);
    lop_obj_t *o = mk(ns, name, refs);
    free(refs);
    return o;
}

#define NOBJ 2000
#define NVAL 300 /* distinct values "s0".."s299" */
#define PER  40  /* values per object (with repeats) */

static unsigned rng_state = 12345;
static int rnd(int n)
{
    rng_state = rng_state * 1103515245u + 12345u;
    return (int)((rng_state >> 8) % (unsigned)n);
}

/* model[i][v]: object i carries value v. */
static unsigned char model[NOBJ][NVAL];

static void model_set(lop_fieldindex_t *x, lop_obj_t **objs, int i)
{
    int vs[PER];
    size_t n = (size_t)rnd(PER + 1); /* 0..PER values, some repeated */
    memset(model[i], 0, NVAL);
    for (size_t j = 0; j < n; j++) {
        vs[j] = rnd(NVAL);
        model[i][vs[j]] = 1;
    }
    char name[32];
    snprintf(name, sizeof name, "o%05d", i);
    lop_obj_t *o = mk_many("n", name, vs, n);
    lop_fieldindex_update(x, objs[i], o);
    lop_obj_unref(objs[i]);
    objs[i] = o;
}

/* Every value's lookup equals the model's objects, in key order, each once. */
static void check_model(lop_fieldindex_t *x)
{
    size_t held = 0, values = 0;
    for (int i = 0; i < NOBJ; i++) {
        int any = 0;
        for (int v = 0; v < NVAL; v++) any |= model[i][v];
        held += (size_t)any;
    }
    for (int v = 0; v < NVAL; v++) {
        char val[32];
        snprintf(val, sizeof val, "n/s%d", v);
        lop_obj_list_t l;
        lop_fieldindex_find(x, val, &l);
        size_t k = 0;
        for (int i = 0; i < NOBJ; i++) {
            if (!model[i][v]) continue;
            char name[32];
            snprintf(name, sizeof name, "o%05d", i);
            T_CHECK(k < l.n && strcmp(l.items[k]->name, name) == 0);
            k++;
        }
        T_EQ_INT((long)l.n, (long)k);
        values += k > 0;
        lop_obj_list_free(&l);
    }
    T_EQ_INT((long)lop_fieldindex_count(x), (long)held);
    T_EQ_INT((long)lop_fieldindex_values(x), (long)values);
}

static void test_at_scale(void)
{
    lop_fieldindex_t *x = lop_fieldindex_new("by_secret", by_ref, NULL);
    lop_obj_t **objs = calloc(NOBJ, sizeof *objs);
    for (int i = 0; i < NOBJ; i++) model_set(x, objs, i); /* adds */
    check_model(x);
    for (int round = 0; round < 3 * NOBJ; round++) { /* updates that move values; some deletes */
        int i = rnd(NOBJ);
        if (rnd(10) == 0 && objs[i]) {
            lop_fieldindex_update(x, objs[i], NULL);
            lop_obj_unref(objs[i]);
            objs[i] = NULL;
            memset(model[i], 0, NVAL);
        } else {
            model_set(x, objs, i);
        }
    }
    check_model(x);
    /* a relist: the store's content (the live objects) rebuilds the index from nothing */
    lop_obj_t **live = calloc(NOBJ, sizeof *live);
    size_t nlive = 0;
    for (int i = 0; i < NOBJ; i++)
        if (objs[i]) live[nlive++] = objs[i];
    lop_fieldindex_rebuild(x, live, nlive);
    check_model(x);
    free(live);
    for (int i = 0; i < NOBJ; i++) lop_obj_unref(objs[i]);
    free(objs);
    lop_fieldindex_free(x);
}

/* A lookup among many other objects finds exactly the objects carrying the value (the hash is
 * keyed by value: the other 1,000 / 64,000 objects and their 2 values each never match). Its cost
 * is not asserted here: timing belongs to benchmarks, not tests. */
static void lookup_among(size_t others)
{
    lop_fieldindex_t *x = lop_fieldindex_new("by_secret", by_ref, NULL);
    for (size_t i = 0; i < others; i++) {
        char name[32], refs[32];
        snprintf(name, sizeof name, "p%06zu", i);
        snprintf(refs, sizeof refs, "x%zu,y%zu", i, i % 97);
        lop_obj_t *o = mk("n", name, refs);
        lop_fieldindex_update(x, NULL, o);
        lop_obj_unref(o);
    }
    lop_obj_t *a = mk("n", "a", "target"), *b = mk("n", "b", "target");
    lop_fieldindex_update(x, NULL, a);
    lop_fieldindex_update(x, NULL, b);
    lop_obj_list_t l;
    lop_fieldindex_find(x, "n/target", &l);
    T_EQ_INT((long)l.n, 2L);
    if (l.n == 2) T_CHECK(l.items[0] == a && l.items[1] == b);
    lop_obj_list_free(&l);
    lop_fieldindex_find(x, "n/y5", &l); /* i % 97 == 5: ceil((others - 5) / 97) objects */
    T_EQ_INT((long)l.n, (long)((others - 5 + 96) / 97));
    lop_obj_list_free(&l);
    T_EQ_INT((long)lop_fieldindex_count(x), (long)others + 2);
    lop_obj_unref(a);
    lop_obj_unref(b);
    lop_fieldindex_free(x);
}

static void test_lookup_among_many(void)
{
    lookup_among(1000);
    lookup_among(64000);
}

/* Finds run concurrently with updates (the informer's thread writes, workers and map functions
 * read): every answer is a consistent set — sorted, no duplicates, only objects that carry the
 * value in one of their versions. Run under TSan (build-tsan) for the data races themselves. */
typedef struct race {
    lop_fieldindex_t *x;
    volatile int stop; /* set once by the writer; read with __atomic */
    long finds, bad;
} race_t;

static void *reader(void *ud)
{
    race_t *r = ud;
    long finds = 0, bad = 0;
    while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
        lop_obj_list_t l;
        lop_fieldindex_find(r->x, "n/hot", &l);
        for (size_t i = 0; i < l.n; i++) {
            if (i && strcmp(l.items[i - 1]->name, l.items[i]->name) >= 0) bad++;
            if (!strstr(l.items[i]->json, "hot")) bad++;
        }
        lop_obj_list_free(&l);
        finds++;
    }
    __atomic_add_fetch(&r->finds, finds, __ATOMIC_RELAXED);
    __atomic_add_fetch(&r->bad, bad, __ATOMIC_RELAXED);
    return NULL;
}

static void test_concurrent_finds(void)
{
    race_t r = {lop_fieldindex_new("by_secret", by_ref, NULL), 0, 0, 0};
    enum { N = 64 };
    lop_obj_t *objs[N] = {0};
    pthread_t th[2];
    for (int i = 0; i < 2; i++) T_CHECK(pthread_create(&th[i], NULL, reader, &r) == 0);
    for (int round = 0; round < 20000; round++) {
        int i = round % N;
        char name[16];
        snprintf(name, sizeof name, "o%02d", i);
        lop_obj_t *o = round % 3 == 2 ? NULL : mk("n", name, round % 3 ? "hot,cold" : "cold");
        lop_fieldindex_update(r.x, objs[i], o); /* add, move the value away and back, delete */
        lop_obj_unref(objs[i]);
        objs[i] = o;
        if (round == 10000) {
            lop_obj_t *live[N];
            size_t n = 0;
            for (int j = 0; j < N; j++)
                if (objs[j]) live[n++] = objs[j];
            lop_fieldindex_rebuild(r.x, live, n);
        }
    }
    __atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    T_CHECK(r.finds > 0);
    T_EQ_INT(r.bad, 0);
    for (int i = 0; i < N; i++) lop_obj_unref(objs[i]);
    lop_fieldindex_free(r.x);
}

int main(void)
{
    T_RUN(test_concurrent_finds);
    T_RUN(test_at_scale);
    T_RUN(test_lookup_among_many);
    T_RUN(test_in_store);
    T_RUN(test_incremental);
    T_RUN(test_errors_and_bad_args);
    return T_DONE();
}
