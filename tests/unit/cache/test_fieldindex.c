/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for host/kube/cache/fieldindex: values from a user function (here: the Secrets a Pod
 * references, from spec.refs), incremental add/update/delete, rebuild
 * on relist, objects without values left out, index-function errors counted. */
#include "host/kube/cache/fieldindex.h"
#include "t.h"

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

int main(void)
{
    T_RUN(test_in_store);
    T_RUN(test_incremental);
    T_RUN(test_errors_and_bad_args);
    return T_DONE();
}
