/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for host/kube/strmap: put/get/del, and move between maps without reallocating. */
#include "host/codec/strmap.h"
#include "t.h"

#include <stdio.h>
#include <stdint.h>

#define V(n) ((void *)(uintptr_t)(n))

static void test_put_get_del_across_growth(void)
{
    lop_strmap_t m = LOP_STRMAP_INIT;
    char k[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(k, sizeof k, "ns/obj-%d", i);
        T_CHECK(lop_strmap_put(&m, k, V(i + 1)) == NULL);
    }
    T_EQ_INT(m.count, 1000);
    T_CHECK(lop_strmap_put(&m, "ns/obj-7", V(70)) == V(8)); /* replace returns the old value */
    T_CHECK(lop_strmap_get(&m, "ns/obj-7") == V(70));
    bool found;
    T_CHECK(lop_strmap_del(&m, "ns/obj-999", &found) == V(1000));
    T_CHECK(found);
    T_CHECK(lop_strmap_del(&m, "ns/obj-999", &found) == NULL);
    T_CHECK(!found);
    T_EQ_INT(m.count, 999);
    lop_strmap_clear(&m);
}

/* The workqueue moves an item from dirty to processing: value replaced, key kept, counts right,
 * both maps growing as needed, an absent key changes nothing. */
static void test_move_relinks_the_entry(void)
{
    lop_strmap_t a = LOP_STRMAP_INIT, b = LOP_STRMAP_INIT;
    char k[32];
    for (int i = 0; i < 100; i++) {
        snprintf(k, sizeof k, "k%d", i);
        lop_strmap_put(&a, k, V(i + 1));
    }
    bool found;
    for (int i = 0; i < 100; i += 2) {
        snprintf(k, sizeof k, "k%d", i);
        lop_strmap_ent_t *e = lop_strmap_find(&a, k);
        T_CHECK(lop_strmap_move(&a, &b, k, V(1000 + i), &found) == V(i + 1));
        T_CHECK(found);
        T_CHECK(lop_strmap_find(&b, k) == e); /* the same entry, relinked */
    }
    T_EQ_INT(a.count, 50);
    T_EQ_INT(b.count, 50);
    T_CHECK(lop_strmap_get(&b, "k42") == V(1042));
    T_CHECK(!lop_strmap_has(&a, "k42"));
    T_CHECK(lop_strmap_get(&a, "k43") == V(44));
    T_CHECK(lop_strmap_move(&a, &b, "absent", V(1), &found) == NULL);
    T_CHECK(!found);
    T_EQ_INT(b.count, 50);
    lop_strmap_t empty = LOP_STRMAP_INIT;
    T_CHECK(lop_strmap_move(&empty, &b, "k1", V(1), &found) == NULL);
    T_CHECK(!found);
    lop_strmap_clear(&a);
    lop_strmap_clear(&b);
}

int main(void)
{
    T_RUN(test_put_get_del_across_growth);
    T_RUN(test_move_relinks_the_entry);
    return T_DONE();
}
