/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for host/kube/objindex: a value's one object inline, a group from two, back inline
 * at one (under the right value of an object that has several), gone at none; updates repoint
 * without allocating; many distinct values each with one object. */
#include "host/kube/cache/objindex.h"
#include "t.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An object in namespace "n" owned by the given uids (NULL-terminated). */
static lop_obj_t *mk(const char *name, const char *rv, const char *const *owners)
{
    char buf[1024];
    int n = snprintf(buf, sizeof buf,
                     "{\"metadata\":{\"namespace\":\"n\",\"name\":\"%s\",\"resourceVersion\":\"%s\","
                     "\"ownerReferences\":[",
                     name, rv);
    for (int i = 0; owners && owners[i]; i++)
        n += snprintf(buf + n, sizeof buf - (size_t)n, "%s{\"uid\":\"%s\"}", i ? "," : "", owners[i]);
    snprintf(buf + n, sizeof buf - (size_t)n, "]}}");
    lop_obj_t *o = NULL;
    T_EQ_INT(lop_obj_new(buf, strlen(buf), 0, &o, NULL), LOP_OK);
    return o;
}

static const char *owner_of(const lop_obj_t *o, uint32_t ix) { return ix < o->nowners ? o->owner_uids[ix] : NULL; }

/* The number of objects under key; *only receives the one object when there is exactly one. */
static size_t under(const lop_objindex_t *x, const char *key, lop_obj_t **only)
{
    lop_objindex_hit_t h = lop_objindex_find(x, key);
    *only = h.one;
    T_CHECK(!(h.one && h.many));
    return h.one ? 1 : h.many ? h.many->count : 0;
}

static void test_one_two_three_then_none(void)
{
    lop_objindex_t x;
    lop_objindex_init(&x, owner_of);
    const char *const u[] = {"U", NULL};
    lop_obj_t *a = mk("a", "1", u), *b = mk("b", "1", u), *c = mk("c", "1", u), *one;
    T_EQ_INT(under(&x, "U", &one), 0);
    lop_objindex_add(&x, a, 0);
    T_EQ_INT(under(&x, "U", &one), 1);
    T_CHECK(one == a);
    lop_objindex_add(&x, b, 0);
    lop_objindex_add(&x, c, 0);
    T_EQ_INT(under(&x, "U", &one), 3);
    const lop_objset_t *g = lop_objindex_find(&x, "U").many;
    T_CHECK(g && lop_objset_find_like(g, a) == a && lop_objset_find_like(g, c) == c);
    T_EQ_INT(x.count, 1);
    lop_objindex_del(&x, a, 0);
    T_EQ_INT(under(&x, "U", &one), 2);
    lop_objindex_del(&x, c, 0);
    T_EQ_INT(under(&x, "U", &one), 1); /* inline again */
    T_CHECK(one == b);
    lop_objindex_del(&x, c, 0); /* absent: nothing */
    T_EQ_INT(under(&x, "U", &one), 1);
    lop_objindex_del(&x, b, 0);
    T_EQ_INT(under(&x, "U", &one), 0);
    T_EQ_INT(x.count, 0);
    lop_objindex_add(&x, c, 0); /* and filled again */
    T_EQ_INT(under(&x, "U", &one), 1);
    T_CHECK(one == c);
    lop_objindex_cleanup(&x);
    T_EQ_INT(x.count, 0);
    lop_obj_unref(a);
    lop_obj_unref(b);
    lop_obj_unref(c);
}

/* X is owned by U and V, Y by V. When Y leaves V's group, X is inlined under V — as its second
 * value (ix 1), which later lookups and the delete of X under V must use. */
static void test_inlined_under_the_right_value(void)
{
    lop_objindex_t x;
    lop_objindex_init(&x, owner_of);
    const char *const uv[] = {"U", "V", NULL}, *const v[] = {"V", NULL};
    lop_obj_t *ox = mk("x", "1", uv), *oy = mk("y", "1", v), *one;
    lop_objindex_add(&x, ox, 0);
    lop_objindex_add(&x, ox, 1);
    lop_objindex_add(&x, oy, 0);
    T_EQ_INT(x.count, 2);
    T_EQ_INT(under(&x, "V", &one), 2);
    lop_objindex_del(&x, oy, 0);
    T_EQ_INT(under(&x, "V", &one), 1);
    T_CHECK(one == ox);
    T_EQ_INT(under(&x, "U", &one), 1);
    T_CHECK(one == ox);
    lop_objindex_del(&x, ox, 1);
    T_EQ_INT(under(&x, "V", &one), 0);
    T_EQ_INT(under(&x, "U", &one), 1);
    T_EQ_INT(x.count, 1);
    lop_objindex_cleanup(&x);
    lop_obj_unref(ox);
    lop_obj_unref(oy);
}

/* An object's new version under the same value replaces the old one in place, inline or in a
 * group, without allocating. */
static void test_update_repoints(void)
{
    lop_objindex_t x;
    lop_objindex_init(&x, owner_of);
    const char *const u[] = {"U", NULL}, *const w[] = {"W", NULL};
    lop_obj_t *a1 = mk("a", "1", u), *a2 = mk("a", "2", u), *b = mk("b", "1", w), *b2 = mk("b", "2", w), *one;
    lop_objindex_add(&x, a1, 0);
    const lop_objindex_slot_t *table = x.slots;
    lop_objindex_add(&x, a2, 0);
    T_EQ_INT(under(&x, "U", &one), 1);
    T_CHECK(one == a2);
    T_CHECK(x.slots == table);
    lop_objindex_add(&x, b, 0);
    lop_obj_t *c = mk("c", "1", w);
    lop_objindex_add(&x, c, 0);
    const lop_objset_t *g = lop_objindex_find(&x, "W").many;
    const uintptr_t *gslots = g ? g->slots : NULL;
    lop_objindex_add(&x, b2, 0);
    T_CHECK(lop_objindex_find(&x, "W").many == g);
    T_CHECK(g && g->slots == gslots && g->count == 2);
    T_CHECK(g && lop_objset_find_like(g, b) == b2);
    lop_objindex_del(&x, a1, 0); /* by key: removes a2 */
    T_EQ_INT(under(&x, "U", &one), 0);
    lop_objindex_cleanup(&x);
    lop_obj_t *all[] = {a1, a2, b, b2, c};
    for (int i = 0; i < 5; i++) lop_obj_unref(all[i]);
}

/* Every object its own owner (ConfigMaps each owned by a custom resource): one slot each. */
static void test_many_distinct_values(void)
{
    enum { N = 5000 };
    lop_objindex_t x;
    lop_objindex_init(&x, owner_of);
    lop_obj_t **o = malloc(N * sizeof *o);
    char name[32], uid[48];
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "cm-%d", i);
        snprintf(uid, sizeof uid, "6f1c2d3e-0000-4000-8000-%012d", i);
        const char *const u[] = {uid, NULL};
        o[i] = mk(name, "1", u);
        lop_objindex_add(&x, o[i], 0);
    }
    T_EQ_INT(x.count, N);
    T_CHECK(x.count * 4 <= x.cap * 3);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        lop_obj_t *one;
        bad += under(&x, o[i]->owner_uids[0], &one) != 1 || one != o[i];
    }
    T_EQ_INT(bad, 0);
    for (int i = 0; i < N; i += 2) lop_objindex_del(&x, o[i], 0);
    T_EQ_INT(x.count, N / 2);
    for (int i = 0; i < N; i++) {
        lop_obj_t *one;
        bad += under(&x, o[i]->owner_uids[0], &one) != (i % 2 ? 1u : 0u);
    }
    T_EQ_INT(bad, 0);
    for (int i = 1; i < N; i += 2) lop_objindex_del(&x, o[i], 0);
    T_EQ_INT(x.count, 0);
    T_CHECK(x.slots == NULL);
    lop_objindex_cleanup(&x);
    for (int i = 0; i < N; i++) lop_obj_unref(o[i]);
    free(o);
}

int main(void)
{
    T_RUN(test_one_two_three_then_none);
    T_RUN(test_inlined_under_the_right_value);
    T_RUN(test_update_repoints);
    T_RUN(test_many_distinct_values);
    return T_DONE();
}
