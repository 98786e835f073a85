/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for host/runtime/predicate: native predicates as controller-runtime defines them. */
#include "host/runtime/predicate.h"
#include "t.h"

static lop_obj_t *obj(const char *json)
{
    lop_obj_t *o = NULL;
    lop_err_t err;
    if (lop_obj_new(json, strlen(json), 0, &o, &err) != LOP_OK) fprintf(stderr, "%s\n", err.message);
    return o;
}

static int lua_calls;
static bool lua_says_no(void *ud, int id, lop_event_type_t t, const lop_obj_t *o, const lop_obj_t *n)
{
    (void)ud;
    (void)t;
    (void)o;
    (void)n;
    lua_calls++;
    return id != 7;
}

static void test_builtin_predicates_table(void)
{
    lop_obj_t *g1 = obj("{\"metadata\":{\"name\":\"a\",\"generation\":1,\"resourceVersion\":\"10\",\"labels\":{\"x\":"
                        "\"1\",\"y\":\"2\"}}}");
    lop_obj_t *g1rv = obj("{\"metadata\":{\"name\":\"a\",\"generation\":1,\"resourceVersion\":\"11\",\"labels\":{\"y\":"
                          "\"2\",\"x\":\"1\"}}}");
    lop_obj_t *g2 = obj("{\"metadata\":{\"name\":\"a\",\"generation\":2,\"resourceVersion\":\"12\",\"labels\":{\"x\":"
                        "\"1\"},\"annotations\":{\"a\":\"b\"}}}");
    T_CHECK(g1 && g1rv && g2);
    if (!g1 || !g1rv || !g2) return;
    lop_pred_t gen = {LOP_PRED_GENERATION_CHANGED, NULL, 0, 0};
    lop_pred_t rv = {LOP_PRED_RV_CHANGED, NULL, 0, 0};
    lop_pred_t lab = {LOP_PRED_LABELS_CHANGED, NULL, 0, 0};
    lop_pred_t ann = {LOP_PRED_ANNOTATIONS_CHANGED, NULL, 0, 0};
    static const struct {
        const char *what;
        int pred; /* 0 gen, 1 rv, 2 labels, 3 annotations */
        lop_event_type_t type;
        int old, new_; /* 0 g1, 1 g1rv, 2 g2 */
        bool want;
    } cases[] = {
        {"status-only update filtered by generation_changed", 0, LOP_EV_UPDATE, 0, 1, false},
        {"spec update passes generation_changed", 0, LOP_EV_UPDATE, 1, 2, true},
        {"create passes generation_changed", 0, LOP_EV_ADD, -1, 0, true},
        {"delete always passes generation_changed", 0, LOP_EV_DELETE, -1, 0, true},
        {"rv change passes resource_version_changed", 1, LOP_EV_UPDATE, 0, 1, true},
        {"same rv filtered", 1, LOP_EV_UPDATE, 0, 0, false},
        {"reordered labels are equal", 2, LOP_EV_UPDATE, 0, 1, false},
        {"removed label passes labels_changed", 2, LOP_EV_UPDATE, 1, 2, true},
        {"added annotation passes annotations_changed", 3, LOP_EV_UPDATE, 1, 2, true},
        {"no annotations both sides filtered", 3, LOP_EV_UPDATE, 0, 1, false},
    };
    lop_pred_t *preds[] = {&gen, &rv, &lab, &ann};
    lop_obj_t *objs[] = {g1, g1rv, g2};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bool got = lop_predicate_eval(preds[cases[i].pred], cases[i].type,
                                      cases[i].old >= 0 ? objs[cases[i].old] : NULL, objs[cases[i].new_], NULL, NULL);
        if (got != cases[i].want) fprintf(stderr, "case: %s\n", cases[i].what);
        T_EQ_INT(got, cases[i].want);
    }

    /* and/or/not compose per event */
    lop_pred_t both[] = {gen, lab};
    lop_pred_t and_ = {LOP_PRED_AND, both, 2, 0};
    lop_pred_t or_ = {LOP_PRED_OR, both, 2, 0};
    lop_pred_t not_ = {LOP_PRED_NOT, &gen, 1, 0};
    T_EQ_INT(lop_predicate_eval(&and_, LOP_EV_UPDATE, g1, g1rv, NULL, NULL), false);
    T_EQ_INT(lop_predicate_eval(&or_, LOP_EV_UPDATE, g1rv, g2, NULL, NULL), true);
    T_EQ_INT(lop_predicate_eval(&not_, LOP_EV_UPDATE, g1, g1rv, NULL, NULL), true);

    /* Lua predicates are delegated; the list is ANDed */
    lop_pred_t list[] = {{LOP_PRED_LUA, NULL, 0, 3}, {LOP_PRED_LUA, NULL, 0, 7}};
    lua_calls = 0;
    T_EQ_INT(lop_predicates_all(list, 2, LOP_EV_ADD, NULL, g1, lua_says_no, NULL), false);
    T_EQ_INT(lua_calls, 2);
    T_EQ_INT(lop_predicates_all(list, 1, LOP_EV_ADD, NULL, g1, lua_says_no, NULL), true);
    T_EQ_INT(lop_predicates_all(NULL, 0, LOP_EV_ADD, NULL, g1, NULL, NULL), true);
    lop_obj_unref(g1);
    lop_obj_unref(g1rv);
    lop_obj_unref(g2);
}

int main(void)
{
    T_RUN(test_builtin_predicates_table);
    return T_DONE();
}
