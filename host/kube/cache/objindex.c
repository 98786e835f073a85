/* SPDX-License-Identifier: Apache-2.0 */
/* objindex.c — index value → objects, one object inline, a group from two (see objindex.h). */
#include "host/kube/cache/objindex.h"

#include "host/util/buf.h"

#include <stdlib.h>
#include <string.h>

#define GROUP UINT32_MAX /* the ix of a slot that holds a group */

struct lop_objindex_slot {
    void *p;       /* the one object (ix < GROUP) or the group; NULL: an empty slot */
    uint32_t hash; /* lop_key_hash of the value: compared first, reused when the table resizes */
    uint32_t ix;   /* the value is key_of(p, ix); GROUP: the group's copy */
};

typedef struct group {
    lop_objset_t set; /* two or more objects */
    char key[];       /* the value, copied: any member may leave first */
} group_t;

void lop_objindex_init(lop_objindex_t *x, lop_objindex_key_fn key_of) { *x = (lop_objindex_t){NULL, 0, 0, key_of}; }

void lop_objindex_cleanup(lop_objindex_t *x)
{
    for (size_t i = 0; i < x->cap; i++) {
        if (x->slots[i].p && x->slots[i].ix == GROUP) {
            group_t *g = x->slots[i].p;
            lop_objset_cleanup(&g->set);
            free(g);
        }
    }
    free(x->slots);
    x->slots = NULL;
    x->cap = 0;
    x->count = 0;
}

static const char *slot_value(const lop_objindex_t *x, const lop_objindex_slot_t *sl)
{
    return sl->ix == GROUP ? ((const group_t *)sl->p)->key : x->key_of(sl->p, sl->ix);
}

/* The slot of value key (hash h), or the empty slot that ends its probe run. cap > 0. */
static size_t find_slot(const lop_objindex_t *x, const char *key, uint32_t h)
{
    size_t mask = x->cap - 1;
    for (size_t i = lop_objset_home(h, x->cap);; i = (i + 1) & mask) {
        const lop_objindex_slot_t *sl = &x->slots[i];
        if (!sl->p || (sl->hash == h && strcmp(slot_value(x, sl), key) == 0)) return i;
    }
}

/* The first empty slot from h's home (h's value is known to be absent). cap > 0. */
static size_t free_slot(const lop_objindex_slot_t *slots, size_t cap, uint32_t h)
{
    size_t i = lop_objset_home(h, cap);
    while (slots[i].p) i = (i + 1) & (cap - 1);
    return i;
}

static void resize(lop_objindex_t *x, size_t newcap)
{
    lop_objindex_slot_t *slots = lop_xcalloc(newcap, sizeof *slots);
    for (size_t i = 0; i < x->cap; i++)
        if (x->slots[i].p) slots[free_slot(slots, newcap, x->slots[i].hash)] = x->slots[i];
    free(x->slots);
    x->slots = slots;
    x->cap = newcap;
}

void lop_objindex_add(lop_objindex_t *x, lop_obj_t *o, uint32_t ix)
{
    const char *key = x->key_of(o, ix);
    size_t len = strlen(key);
    uint32_t h = lop_key_hash(key, len);
    size_t i = 0;
    if (x->cap) {
        i = find_slot(x, key, h);
        lop_objindex_slot_t *sl = &x->slots[i];
        if (sl->p && sl->ix == GROUP) {
            lop_objset_put(&((group_t *)sl->p)->set, o);
            return;
        }
        if (sl->p && lop_obj_same_key(sl->p, o)) { /* the object's update: repoint */
            sl->p = o;
            sl->ix = ix;
            return;
        }
        if (sl->p) { /* a second object: the value gets a group */
            group_t *g = lop_xmalloc(sizeof *g + len + 1);
            g->set = (lop_objset_t)LOP_OBJSET_INIT;
            memcpy(g->key, key, len + 1);
            lop_objset_put(&g->set, sl->p);
            lop_objset_put(&g->set, o);
            sl->p = g;
            sl->ix = GROUP;
            return;
        }
    }
    if (x->count + 1 > x->cap / 4 * 3) {
        resize(x, lop_objset_cap_for(x->count + 1));
        i = free_slot(x->slots, x->cap, h);
    }
    x->slots[i] = (lop_objindex_slot_t){o, h, ix};
    x->count++;
}

/* Empty slot i and close the hole by backward shift (as objset.c's remove_at, on stored hashes);
 * give memory back when the table has become sparse. */
static void remove_at(lop_objindex_t *x, size_t i)
{
    size_t mask = x->cap - 1;
    x->slots[i].p = NULL;
    for (size_t j = (i + 1) & mask; x->slots[j].p; j = (j + 1) & mask) {
        size_t k = lop_objset_home(x->slots[j].hash, x->cap);
        if (((j - k) & mask) >= ((j - i) & mask)) {
            x->slots[i] = x->slots[j];
            x->slots[j].p = NULL;
            i = j;
        }
    }
    x->count--;
    if (x->count == 0) {
        free(x->slots);
        x->slots = NULL;
        x->cap = 0;
    } else if (x->cap > LOP_OBJSET_MIN_CAP && x->count < x->cap / 8) {
        resize(x, x->cap / 2);
    }
}

void lop_objindex_del(lop_objindex_t *x, const lop_obj_t *o, uint32_t ix)
{
    if (!x->count) return;
    const char *key = x->key_of(o, ix);
    size_t i = find_slot(x, key, lop_key_hash(key, strlen(key)));
    lop_objindex_slot_t *sl = &x->slots[i];
    if (!sl->p) return;
    if (sl->ix != GROUP) {
        if (lop_obj_same_key(sl->p, o)) remove_at(x, i);
        return;
    }
    group_t *g = sl->p;
    if (!lop_objset_remove(&g->set, o) || g->set.count > 1) return;
    /* one object left: inline it again, at the position of the value among its own */
    size_t it = 0;
    lop_obj_t *last = lop_objset_next(&g->set, &it);
    uint32_t lix = 0;
    while (strcmp(x->key_of(last, lix), g->key) != 0) /* it is there: last was filed under it */
        lix++;
    sl->p = last;
    sl->ix = lix;
    lop_objset_cleanup(&g->set);
    free(g);
}

lop_objindex_hit_t lop_objindex_find(const lop_objindex_t *x, const char *key)
{
    lop_objindex_hit_t hit = {NULL, NULL};
    if (!x->count) return hit;
    const lop_objindex_slot_t *sl = &x->slots[find_slot(x, key, lop_key_hash(key, strlen(key)))];
    if (sl->p && sl->ix == GROUP)
        hit.many = &((const group_t *)sl->p)->set;
    else
        hit.one = sl->p;
    return hit;
}
