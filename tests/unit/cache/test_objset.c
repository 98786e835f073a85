/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for host/kube/objset: growth and shrinking, put/add semantics, lookups by key string
 * and by object, backward-shift deletion under collisions (objects whose key hashes are equal,
 * and probe runs that wrap around the table's end), checked against a model after every step. */
#include "host/kube/cache/objset.h"
#include "t.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static lop_obj_t *mk(const char *ns, const char *name, const char *rv)
{
    char buf[256];
    snprintf(buf, sizeof buf, "{\"metadata\":{\"namespace\":\"%s\",\"name\":\"%s\",\"resourceVersion\":\"%s\"}}", ns,
             name, rv);
    lop_obj_t *o = NULL;
    T_EQ_INT(lop_obj_new(buf, strlen(buf), 0, &o, NULL), LOP_OK);
    return o;
}

static lop_obj_t *find(const lop_objset_t *s, const char *key)
{
    return lop_objset_find(s, key, strlen(key), lop_key_hash(key, strlen(key)));
}

static bool is_pow2(size_t n) { return n && (n & (n - 1)) == 0; }

static void test_empty_set(void)
{
    lop_objset_t s = LOP_OBJSET_INIT;
    lop_obj_t *a = mk("n", "a", "1");
    size_t it = 0;
    T_CHECK(lop_objset_next(&s, &it) == NULL); /* never used: no table */
    T_CHECK(find(&s, "n/a") == NULL);
    T_CHECK(lop_objset_find_like(&s, a) == NULL);
    T_CHECK(lop_objset_del(&s, "n/a", 3, lop_key_hash("n/a", 3)) == NULL);
    T_CHECK(lop_objset_remove(&s, a) == NULL);
    T_CHECK(lop_objset_put(&s, a) == NULL);
    T_EQ_INT(s.count, 1);
    T_EQ_INT(s.cap, LOP_OBJSET_MIN_CAP);
    T_CHECK(lop_objset_remove(&s, a) == a);
    T_EQ_INT(s.count, 0);
    it = 0;
    T_CHECK(lop_objset_next(&s, &it) == NULL); /* emptied again */
    T_CHECK(s.slots == NULL);                  /* and the table given back */
    lop_objset_cleanup(&s);
    lop_obj_unref(a);
}

/* put swaps a new version into the slot of its key; add leaves the member in place. Neither
 * allocates for a key that is present. */
static void test_put_replaces_add_keeps(void)
{
    lop_objset_t s = LOP_OBJSET_INIT;
    lop_obj_t *a1 = mk("n", "a", "1"), *a2 = mk("n", "a", "2"), *b = mk("n", "b", "1");
    T_CHECK(lop_objset_put(&s, a1) == NULL);
    T_CHECK(lop_objset_put(&s, b) == NULL);
    const uintptr_t *table = s.slots;
    T_CHECK(lop_objset_add(&s, a2) == a1);
    T_CHECK(find(&s, "n/a") == a1);
    T_CHECK(lop_objset_put(&s, a2) == a1);
    T_CHECK(find(&s, "n/a") == a2);
    T_CHECK(lop_objset_find_like(&s, a1) == a2); /* by key, not by pointer */
    T_CHECK(lop_objset_put(&s, a2) == a2);       /* the same object again */
    T_EQ_INT(s.count, 2);
    T_CHECK(s.slots == table);
    T_CHECK(lop_objset_remove(&s, a1) == a2); /* removes the member with a1's key */
    T_CHECK(find(&s, "n/a") == NULL);
    T_CHECK(find(&s, "n/b") == b);
    lop_objset_cleanup(&s);
    lop_obj_unref(a1);
    lop_obj_unref(a2);
    lop_obj_unref(b);
}

/* Cluster-scoped keys ("name") and namespaced ones ("ns/name") are different keys. */
static void test_cluster_scoped_keys(void)
{
    lop_objset_t s = LOP_OBJSET_INIT;
    lop_obj_t *c = mk("", "x", "1"), *n = mk("x", "x", "1");
    lop_objset_put(&s, c);
    lop_objset_put(&s, n);
    T_EQ_INT(s.count, 2);
    T_CHECK(find(&s, "x") == c);
    T_CHECK(find(&s, "x/x") == n);
    T_CHECK(find(&s, "x/") == NULL);
    T_CHECK(find(&s, "/x") == NULL);
    lop_objset_cleanup(&s);
    lop_obj_unref(c);
    lop_obj_unref(n);
}

#define MANY 10000

/* Growth keeps every member findable, the capacity a power of two and the load at most 3/4;
 * iteration visits each member once. Then delete most (the table shrinks), and insert again. */
static void test_growth_and_many_deletes_then_inserts(void)
{
    lop_objset_t s = LOP_OBJSET_INIT;
    lop_obj_t **o = malloc(MANY * sizeof *o);
    char name[32], key[40];
    for (int i = 0; i < MANY; i++) {
        snprintf(name, sizeof name, "obj-%d", i);
        o[i] = mk(i % 2 ? "ns-a" : "ns-b", name, "1");
        T_CHECK(lop_objset_put(&s, o[i]) == NULL);
        T_CHECK(is_pow2(s.cap));
        T_CHECK(s.count * 4 <= s.cap * 3);
    }
    T_EQ_INT(s.count, MANY);
    T_EQ_INT(s.cap, 16384); /* the smallest power of two holding 10000 at load 3/4 */
    int bad = 0;
    for (int i = 0; i < MANY; i++) {
        snprintf(key, sizeof key, "%s/obj-%d", i % 2 ? "ns-a" : "ns-b", i);
        bad += find(&s, key) != o[i];
        bad += lop_objset_find_like(&s, o[i]) != o[i];
    }
    T_EQ_INT(bad, 0);
    T_CHECK(find(&s, "ns-a/obj-0") == NULL); /* obj-0 is in ns-b */
    char *seen = calloc(MANY, 1);
    size_t it = 0, visits = 0;
    for (lop_obj_t *m; (m = lop_objset_next(&s, &it));) {
        int i = atoi(m->name + 4);
        if (i >= 0 && i < MANY && m == o[i]) seen[i]++;
        visits++;
    }
    T_EQ_INT(visits, MANY);
    for (int i = 0; i < MANY; i++) bad += seen[i] != 1;
    T_EQ_INT(bad, 0);
    free(seen);

    /* delete all but every 1000th: the table halves as the load falls below 1/8 */
    for (int i = 0; i < MANY; i++) {
        if (i % 1000 == 0) continue;
        snprintf(key, sizeof key, "%s/obj-%d", i % 2 ? "ns-a" : "ns-b", i);
        bad += lop_objset_del(&s, key, strlen(key), lop_key_hash(key, strlen(key))) != o[i];
    }
    T_EQ_INT(bad, 0);
    T_EQ_INT(s.count, 10);
    T_CHECK(s.cap <= 128);
    for (int i = 0; i < MANY; i++) bad += lop_objset_find_like(&s, o[i]) != (i % 1000 == 0 ? o[i] : NULL);
    T_EQ_INT(bad, 0);

    for (int i = 0; i < MANY; i++) lop_objset_add(&s, o[i]);
    T_EQ_INT(s.count, MANY);
    for (int i = 0; i < MANY; i++) bad += lop_objset_find_like(&s, o[i]) != o[i];
    T_EQ_INT(bad, 0);
    for (int i = 0; i < MANY; i++) bad += lop_objset_remove(&s, o[i]) != o[i];
    T_EQ_INT(bad, 0);
    T_EQ_INT(s.count, 0);
    T_CHECK(s.slots == NULL);
    it = 0;
    T_CHECK(lop_objset_next(&s, &it) == NULL);
    for (int i = 0; i < MANY; i++) lop_obj_unref(o[i]);
    free(o);
}

typedef struct hashed {
    uint32_t h;
    uint32_t i;
} hashed_t;

static int hashed_cmp(const void *a, const void *b)
{
    const hashed_t *x = a, *y = b;
    return x->h != y->h ? (x->h < y->h ? -1 : 1) : (x->i < y->i ? -1 : x->i > y->i);
}

/* Objects whose different keys have the same 32-bit hash (found by a birthday search over
 * cluster-scoped names): every lookup must compare keys, not hashes, and deleting one of a pair
 * must leave the other findable wherever the shift moved it. The names mix a counter with a
 * scrambled one: FNV-1a over short names differing in a few digits ("c-1", "c-2", ...) collides
 * far less often than chance, and 400,000 of those have no colliding pair at all. */
static void test_full_hash_collisions(void)
{
    enum { N = 400000, PAIRS = 4 };
    hashed_t *hs = malloc(N * sizeof *hs);
    char name[32];
    for (uint32_t i = 0; i < N; i++) {
        snprintf(name, sizeof name, "k%u-%x", i, i * 2654435761u);
        hs[i] = (hashed_t){lop_key_hash(name, strlen(name)), i};
    }
    qsort(hs, N, sizeof *hs, hashed_cmp);
    lop_obj_t *o[2 * PAIRS];
    int np = 0;
    for (uint32_t i = 1; i < N && np < PAIRS; i++) {
        if (hs[i].h != hs[i - 1].h) continue;
        for (int k = 0; k < 2; k++) {
            uint32_t j = hs[i - 1 + k].i;
            snprintf(name, sizeof name, "k%u-%x", j, j * 2654435761u);
            o[2 * np + k] = mk("", name, "1");
        }
        np++;
    }
    free(hs);
    if (!T_SETUP("colliding key hashes", np == PAIRS)) return;
    for (int p = 0; p < PAIRS; p++) T_CHECK(lop_obj_key_hash(o[2 * p]) == lop_obj_key_hash(o[2 * p + 1]));

    lop_objset_t s = LOP_OBJSET_INIT;
    for (int i = 0; i < 2 * PAIRS; i++) T_CHECK(lop_objset_put(&s, o[i]) == NULL);
    T_EQ_INT(s.count, 2 * PAIRS);
    for (int i = 0; i < 2 * PAIRS; i++) {
        T_CHECK(find(&s, o[i]->name) == o[i]);
        T_CHECK(lop_objset_find_like(&s, o[i]) == o[i]);
    }
    /* remove the first of each pair (the one its partner's probe run passes) */
    for (int p = 0; p < PAIRS; p++) {
        T_CHECK(lop_objset_remove(&s, o[2 * p]) == o[2 * p]);
        T_CHECK(find(&s, o[2 * p]->name) == NULL);
        T_CHECK(find(&s, o[2 * p + 1]->name) == o[2 * p + 1]);
    }
    for (int p = 0; p < PAIRS; p++) /* and back: add finds the partner is a different key */
        T_CHECK(lop_objset_add(&s, o[2 * p]) == NULL);
    for (int i = 0; i < 2 * PAIRS; i++) T_CHECK(find(&s, o[i]->name) == o[i]);
    lop_objset_cleanup(&s);
    for (int i = 0; i < 2 * PAIRS; i++) lop_obj_unref(o[i]);
}

/* Five objects homed at the last slot of an 8-slot table fill slots 7, 0, 1, 2, 3: deleting
 * each in turn must shift the rest of the run back across the table's end. */
static void test_backward_shift_across_the_end(void)
{
    lop_obj_t *o[5];
    int n = 0;
    char name[32];
    for (int i = 0; n < 5; i++) {
        snprintf(name, sizeof name, "w-%d", i);
        if (lop_objset_home(lop_key_hash(name, strlen(name)), 8) == 7) o[n++] = mk("", name, "1");
    }
    for (int first = 0; first < 5; first++) {
        lop_objset_t s = LOP_OBJSET_INIT;
        lop_objset_reserve(&s, 6);
        T_EQ_INT(s.cap, 8);
        for (int i = 0; i < 5; i++) lop_objset_put(&s, o[i]);
        T_CHECK(s.slots[7] != 0 && s.slots[0] != 0 && s.slots[3] != 0 && s.slots[4] == 0);
        /* delete starting at position `first` of the run, then the rest */
        for (int k = 0; k < 5; k++) {
            int d = (first + k) % 5;
            T_CHECK(lop_objset_remove(&s, o[d]) == o[d]);
            for (int j = 0; j < 5; j++) {
                bool gone = false;
                for (int m = 0; m <= k; m++) gone |= j == (first + m) % 5;
                T_CHECK(find(&s, o[j]->name) == (gone ? NULL : o[j]));
            }
        }
        lop_objset_cleanup(&s);
    }
    for (int i = 0; i < 5; i++) lop_obj_unref(o[i]);
}

/* Random puts and removes over a small pool (small tables, high load, runs wrapping the end,
 * repeated growth and shrinking), checked against a model after every step. */
static void test_random_against_a_model(void)
{
    enum { POOL = 48, STEPS = 20000 };
    lop_obj_t *o[POOL];
    bool in[POOL] = {false};
    char name[32];
    for (int i = 0; i < POOL; i++) {
        snprintf(name, sizeof name, "r%d", i);
        o[i] = mk(i % 3 ? "ns" : "", name, "1");
    }
    lop_objset_t s = LOP_OBJSET_INIT;
    uint32_t x = 2463534242u; /* xorshift32: the same sequence every run */
    size_t model = 0;
    int bad = 0;
    for (int step = 0; step < STEPS; step++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        int i = (int)(x % POOL);
        /* bias towards a half-full pool, then towards emptying it, then filling it */
        bool insert = (x >> 8) % 100 < (step / 2000 % 3 == 0 ? 50u : step / 2000 % 3 == 1 ? 20u : 80u);
        if (insert) {
            bad += lop_objset_add(&s, o[i]) != (in[i] ? o[i] : NULL);
            model += !in[i];
            in[i] = true;
        } else {
            bad += lop_objset_remove(&s, o[i]) != (in[i] ? o[i] : NULL);
            model -= in[i];
            in[i] = false;
        }
        bad += s.count != model;
        bad += s.count * 4 > s.cap * 3;
        for (int j = 0; j < POOL; j++) bad += lop_objset_find_like(&s, o[j]) != (in[j] ? o[j] : NULL);
    }
    T_EQ_INT(bad, 0);
    lop_objset_cleanup(&s);
    for (int i = 0; i < POOL; i++) lop_obj_unref(o[i]);
}

int main(void)
{
    T_RUN(test_empty_set);
    T_RUN(test_put_replaces_add_keeps);
    T_RUN(test_cluster_scoped_keys);
    T_RUN(test_growth_and_many_deletes_then_inserts);
    T_RUN(test_full_hash_collisions);
    T_RUN(test_backward_shift_across_the_end);
    T_RUN(test_random_against_a_model);
    return T_DONE();
}
