/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for apiserver/ssa*.c: server-side apply and managedFields. */
#include "apiserver/ssa.h"
#include "host/util/clock.h"
#include "t.h"

#include <stdlib.h>

#define T0 (INT64_C(1740823200) * LOP_NS_PER_S) /* 2025-03-01T10:00:00Z */

static json_t *J(const char *s)
{
    json_error_t e;
    json_t *v = json_loads(s, 0, &e);
    if (!v) fprintf(stderr, "bad test JSON %s: %s\n", s, e.text);
    return v;
}

static bool json_is(const json_t *v, const char *want)
{
    json_t *w = J(want);
    bool ok = v && w && json_equal((json_t *)v, w);
    if (!ok) {
        char *got = v ? json_dumps(v, JSON_SORT_KEYS | JSON_ENCODE_ANY) : NULL;
        fprintf(stderr, "  got  %s\n  want %s\n", got ? got : "(null)", want);
        free(got);
    }
    json_decref(w);
    return ok;
}

static as_ssa_ctx_t cm_ctx(const char *manager, int64_t now)
{
    as_ssa_ctx_t c = {manager, "v1", NULL, now, true, "ConfigMap"};
    return c;
}

#define CM(data) "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm\"},\"data\":" data "}"

/* Apply cfg as manager; returns the new object or NULL. Always consumes live. */
static json_t *apply(json_t *live, const char *cfg, const char *manager, bool force, int64_t now, json_t **status)
{
    json_t *c = J(cfg);
    as_ssa_ctx_t ctx = cm_ctx(manager, now);
    lop_err_t err;
    lop_err_clear(&err);
    json_t *st = NULL;
    json_t *out = as_ssa_apply(live, c, force, &ctx, &st, &err);
    json_decref(c);
    if (status)
        *status = st;
    else
        json_decref(st);
    json_decref(live); /* consumed either way */
    return out;
}

static const json_t *mf(const json_t *obj)
{
    return json_object_get(json_object_get(obj, "metadata"), "managedFields");
}

static void test_apply_creates_with_managed_fields(void)
{
    json_t *o = apply(NULL,
                      "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm\","
                      "\"labels\":{\"a\":\"1\"}},\"data\":{\"x\":\"1\"}}",
                      "mgr-a", false, T0, NULL);
    T_CHECK(o != NULL);
    T_CHECK(json_is(json_object_get(o, "data"), "{\"x\":\"1\"}"));
    T_EQ_STR(json_string_value(json_object_get(json_object_get(o, "metadata"), "name")), "cm");
    T_CHECK(json_is(mf(o), "[{\"manager\":\"mgr-a\",\"operation\":\"Apply\",\"apiVersion\":\"v1\","
                           "\"time\":\"2025-03-01T10:00:00Z\",\"fieldsType\":\"FieldsV1\","
                           "\"fieldsV1\":{\"f:data\":{\"f:x\":{}},\"f:metadata\":{\"f:labels\":"
                           "{\"f:a\":{}}}}}]"));
    json_decref(o);
}

static void test_reapply_same_is_stable(void)
{
    json_t *o = apply(NULL, CM("{\"x\":\"1\"}"), "a", false, T0, NULL);
    json_t *before = json_deep_copy(o);
    o = apply(o, CM("{\"x\":\"1\"}"), "a", false, T0 + 60 * LOP_NS_PER_S, NULL);
    T_CHECK(o && json_equal(o, before)); /* same content, same entry, same time */
    json_decref(before);
    /* a real change moves the time */
    o = apply(o, CM("{\"x\":\"2\"}"), "a", false, T0 + 60 * LOP_NS_PER_S, NULL);
    T_EQ_STR(json_string_value(json_object_get(json_array_get(mf(o), 0), "time")), "2025-03-01T10:01:00Z");
    json_decref(o);
}

static void test_two_managers_conflict(void)
{
    json_t *o = apply(NULL, CM("{\"x\":\"1\"}"), "a", false, T0, NULL);
    json_t *st = NULL;
    json_t *r = apply(json_incref(o), CM("{\"x\":\"2\"}"), "b", false, T0, &st);
    T_CHECK(r == NULL);
    T_CHECK(json_is(st, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                        "\"Failure\",\"message\":\"Apply failed with 1 conflict: conflict with "
                        "\\\"a\\\": .data.x\",\"reason\":\"Conflict\",\"details\":{\"causes\":[{"
                        "\"reason\":\"FieldManagerConflict\",\"message\":\"conflict with \\\"a\\\"\","
                        "\"field\":\".data.x\"}]},\"code\":409}"));
    json_decref(st);
    /* the same value is no conflict: both own it */
    r = apply(o, CM("{\"x\":\"1\"}"), "b", false, T0, &st);
    T_CHECK(r != NULL && st == NULL);
    T_EQ_INT(json_array_size(mf(r)), 2);
    json_decref(r);
}

static void test_force_takes_ownership(void)
{
    json_t *o = apply(NULL, CM("{\"x\":\"1\",\"y\":\"1\"}"), "a", false, T0, NULL);
    o = apply(o, CM("{\"x\":\"2\"}"), "b", true, T0, NULL);
    T_CHECK(o != NULL);
    T_CHECK(json_is(json_object_get(o, "data"), "{\"x\":\"2\",\"y\":\"1\"}"));
    T_CHECK(json_is(mf(o), "[{\"manager\":\"a\",\"operation\":\"Apply\",\"apiVersion\":\"v1\","
                           "\"time\":\"2025-03-01T10:00:00Z\",\"fieldsType\":\"FieldsV1\","
                           "\"fieldsV1\":{\"f:data\":{\"f:y\":{}}}},"
                           "{\"manager\":\"b\",\"operation\":\"Apply\",\"apiVersion\":\"v1\","
                           "\"time\":\"2025-03-01T10:00:00Z\",\"fieldsType\":\"FieldsV1\","
                           "\"fieldsV1\":{\"f:data\":{\"f:x\":{}}}}]"));
    /* a now conflicts with b */
    json_t *st = NULL;
    T_CHECK(apply(json_incref(o), CM("{\"x\":\"3\",\"y\":\"1\"}"), "a", false, T0, &st) == NULL);
    T_CHECK(strstr(json_string_value(json_object_get(st, "message")), "conflict with \"b\": .data.x"));
    json_decref(st);
    json_decref(o);
}

static void test_removing_field_from_config_deletes_it(void)
{
    json_t *o = apply(NULL, CM("{\"x\":\"1\",\"y\":\"1\",\"z\":\"1\"}"), "a", false, T0, NULL);
    o = apply(o, CM("{\"z\":\"1\"}"), "b", false, T0, NULL); /* b co-owns z */
    o = apply(o, CM("{\"x\":\"1\"}"), "a", false, T0, NULL);
    T_CHECK(json_is(json_object_get(o, "data"), "{\"x\":\"1\",\"z\":\"1\"}"));
    json_decref(o);
}

static void test_update_then_apply_conflict_names_update_manager(void)
{
    json_t *o = J(CM("{\"x\":\"1\"}"));
    as_ssa_ctx_t ctx = cm_ctx("kubectl-edit", T0);
    as_ssa_track_update(NULL, o, &ctx);
    T_CHECK(json_is(mf(o), "[{\"manager\":\"kubectl-edit\",\"operation\":\"Update\",\"apiVersion\":"
                           "\"v1\",\"time\":\"2025-03-01T10:00:00Z\",\"fieldsType\":\"FieldsV1\","
                           "\"fieldsV1\":{\"f:data\":{\".\":{},\"f:x\":{}}}}]"));
    json_t *st = NULL;
    T_CHECK(apply(json_incref(o), CM("{\"x\":\"2\"}"), "op", false, T0, &st) == NULL);
    T_EQ_STR(json_string_value(json_object_get(st, "message")),
             "Apply failed with 1 conflict: conflict with \"kubectl-edit\" using v1 at "
             "2025-03-01T10:00:00Z: .data.x");
    json_decref(st);
    json_decref(o);
}

static void test_multi_conflict_message(void)
{
    json_t *o = apply(NULL, CM("{\"x\":\"1\",\"y\":\"1\"}"), "a", false, T0, NULL);
    o = apply(o, CM("{\"z\":\"1\"}"), "b", false, T0, NULL);
    json_t *st = NULL;
    T_CHECK(apply(json_incref(o), CM("{\"x\":\"2\",\"y\":\"2\",\"z\":\"2\"}"), "c", false, T0, &st) == NULL);
    T_EQ_STR(json_string_value(json_object_get(st, "message")),
             "Apply failed with 3 conflicts: conflicts with \"a\":\n- .data.x\n- .data.y\n"
             "conflicts with \"b\":\n- .data.z");
    T_EQ_INT(json_array_size(json_object_get(json_object_get(st, "details"), "causes")), 3);
    T_CHECK(json_object_get(json_object_get(st, "details"), "name") == NULL);
    json_decref(st);
    json_decref(o);
}

#define DEP(containers)                                                                            \
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\"},\"spec\":{" \
    "\"template\":{\"spec\":{\"containers\":" containers "}}}}"

static void test_builtin_associative_lists(void)
{
    as_ssa_ctx_t a = {"a", "apps/v1", NULL, T0, true, "Deployment"};
    as_ssa_ctx_t b = {"b", "apps/v1", NULL, T0, true, "Deployment"};
    json_t *cfg = J(DEP("[{\"name\":\"app\",\"image\":\"app:1\"}]"));
    json_t *o = as_ssa_apply(NULL, cfg, false, &a, NULL, NULL);
    json_decref(cfg);
    T_CHECK(json_is(json_object_get(json_array_get(mf(o), 0), "fieldsV1"),
                    "{\"f:spec\":{\"f:template\":{\"f:spec\":{\"f:containers\":{"
                    "\"k:{\\\"name\\\":\\\"app\\\"}\":{\".\":{},\"f:image\":{},\"f:name\":{}}}}}}}"));
    /* another manager adds a sidecar: no conflict, both containers kept */
    cfg = J(DEP("[{\"name\":\"side\",\"image\":\"side:1\"}]"));
    json_t *o2 = as_ssa_apply(o, cfg, false, &b, NULL, NULL);
    json_decref(cfg);
    T_CHECK(o2 != NULL);
    json_t *cs = json_object_get(json_object_get(json_object_get(json_object_get(o2, "spec"), "template"), "spec"),
                                 "containers");
    T_EQ_INT(json_array_size(cs), 2);
    /* b changing app's image conflicts on the keyed path */
    json_t *st = NULL;
    cfg = J(DEP("[{\"name\":\"side\",\"image\":\"side:1\"},{\"name\":\"app\",\"image\":\"app:2\"}]"));
    T_CHECK(as_ssa_apply(o2, cfg, false, &b, &st, NULL) == NULL);
    json_decref(cfg);
    T_EQ_STR(json_string_value(json_object_get(st, "message")), "Apply failed with 1 conflict: conflict with \"a\": "
                                                                ".spec.template.spec.containers[name=\"app\"].image");
    json_decref(st);
    /* a drops its container: it goes, the sidecar stays */
    cfg = J(DEP("[]"));
    json_t *o3 = as_ssa_apply(o2, cfg, false, &a, NULL, NULL);
    json_decref(cfg);
    cs = json_object_get(json_object_get(json_object_get(json_object_get(o3, "spec"), "template"), "spec"),
                         "containers");
    T_EQ_INT(json_array_size(cs), 1);
    T_EQ_STR(json_string_value(json_object_get(json_array_get(cs, 0), "name")), "side");
    json_decref(o);
    json_decref(o2);
    json_decref(o3);
}

static void test_custom_resource_lists_are_atomic(void)
{
    as_ssa_ctx_t a = {"a", "example.com/v1", NULL, T0, false, "Widget"};
    as_ssa_ctx_t b = {"b", "example.com/v1", NULL, T0, false, "Widget"};
    json_t *cfg = J("{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":"
                    "\"w\"},\"spec\":{\"items\":[{\"name\":\"x\"}],\"size\":1}}");
    json_t *o = as_ssa_apply(NULL, cfg, false, &a, NULL, NULL);
    json_decref(cfg);
    T_CHECK(
        json_is(json_object_get(json_array_get(mf(o), 0), "fieldsV1"), "{\"f:spec\":{\"f:items\":{},\"f:size\":{}}}"));
    cfg = J("{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w\"},"
            "\"spec\":{\"items\":[{\"name\":\"y\"}]}}");
    json_t *st = NULL;
    T_CHECK(as_ssa_apply(o, cfg, false, &b, &st, NULL) == NULL);
    T_CHECK(strstr(json_string_value(json_object_get(st, "message")), ": .spec.items") != NULL);
    json_decref(st);
    json_t *o2 = as_ssa_apply(o, cfg, true, &b, NULL, NULL);
    T_CHECK(json_is(json_object_get(o2, "spec"), "{\"items\":[{\"name\":\"y\"}],\"size\":1}"));
    json_decref(cfg);
    json_decref(o);
    json_decref(o2);
}

static void test_status_subresource_manager_printing(void)
{
    json_t *old = J("{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":"
                    "\"w\"},\"status\":{\"phase\":\"A\"}}");
    json_t *o = json_deep_copy(old);
    json_object_set_new(json_object_get(o, "status"), "phase", json_string("B"));
    as_ssa_ctx_t u = {"ctl", "example.com/v1", "status", T0, false, "Widget"};
    as_ssa_track_update(old, o, &u);
    T_EQ_STR(json_string_value(json_object_get(json_array_get(mf(o), 0), "subresource")), "status");
    as_ssa_ctx_t a = {"op", "example.com/v1", "status", T0, false, "Widget"};
    json_t *cfg = J("{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":"
                    "\"w\"},\"status\":{\"phase\":\"C\"}}");
    json_t *st = NULL;
    T_CHECK(as_ssa_apply(o, cfg, false, &a, &st, NULL) == NULL);
    T_EQ_STR(json_string_value(json_object_get(st, "message")),
             "Apply failed with 1 conflict: conflict with \"ctl\" with subresource \"status\" using "
             "example.com/v1 at 2025-03-01T10:00:00Z: .status.phase");
    json_decref(st);
    json_decref(cfg);
    json_decref(o);
    json_decref(old);
}

static void test_track_update_moves_ownership(void)
{
    json_t *o = apply(NULL, CM("{\"x\":\"1\",\"y\":\"1\"}"), "a", false, T0, NULL);
    json_t *n = json_deep_copy(o);
    json_object_set_new(json_object_get(n, "data"), "x", json_string("2"));
    as_ssa_ctx_t ctx = cm_ctx("editor", T0 + LOP_NS_PER_S);
    as_ssa_track_update(o, n, &ctx);
    T_CHECK(json_is(mf(n), "[{\"manager\":\"a\",\"operation\":\"Apply\",\"apiVersion\":\"v1\","
                           "\"time\":\"2025-03-01T10:00:00Z\",\"fieldsType\":\"FieldsV1\","
                           "\"fieldsV1\":{\"f:data\":{\"f:y\":{}}}},"
                           "{\"manager\":\"editor\",\"operation\":\"Update\",\"apiVersion\":\"v1\","
                           "\"time\":\"2025-03-01T10:00:01Z\",\"fieldsType\":\"FieldsV1\","
                           "\"fieldsV1\":{\"f:data\":{\"f:x\":{}}}}]"));
    /* a no-op update adds nothing and changes nothing */
    json_t *n2 = json_deep_copy(n);
    as_ssa_ctx_t ctx2 = cm_ctx("other", T0 + 2 * LOP_NS_PER_S);
    as_ssa_track_update(n, n2, &ctx2);
    T_CHECK(json_equal(n, n2));
    json_decref(o);
    json_decref(n);
    json_decref(n2);
}

static void test_update_owns_added_maps(void)
{
    /* an Update that adds labels owns the map itself ("."), as kube-apiserver records */
    json_t *old = J(CM("{\"x\":\"1\"}"));
    json_t *n = J("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm\","
                  "\"labels\":{\"app\":\"a\"}},\"data\":{\"x\":\"1\"}}");
    as_ssa_ctx_t ctx = cm_ctx("ctl", T0);
    as_ssa_track_update(old, n, &ctx);
    T_CHECK(json_is(json_object_get(json_array_get(mf(n), 0), "fieldsV1"),
                    "{\"f:metadata\":{\"f:labels\":{\".\":{},\"f:app\":{}}}}"));
    /* removing the label drops it from the manager's set; the empty entry disappears */
    json_t *n2 = json_deep_copy(n);
    json_object_del(json_object_get(n2, "metadata"), "labels");
    as_ssa_track_update(n, n2, &ctx);
    T_CHECK(mf(n2) == NULL);
    json_decref(old);
    json_decref(n);
    json_decref(n2);
}

static void test_apply_input_errors(void)
{
    lop_err_t err;
    json_t *st = NULL;
    json_t *cfg = J(CM("{}"));
    as_ssa_ctx_t none = cm_ctx(NULL, T0);
    T_CHECK(as_ssa_apply(NULL, cfg, false, &none, &st, &err) == NULL);
    T_EQ_INT(err.code, 422);
    T_CHECK(st == NULL);
    json_decref(cfg);
    as_ssa_ctx_t ctx = cm_ctx("a", T0);
    cfg = J("{\"metadata\":{\"name\":\"x\"}}");
    T_CHECK(as_ssa_apply(NULL, cfg, false, &ctx, &st, &err) == NULL);
    T_EQ_INT(err.code, 400);
    json_decref(cfg);
    cfg = json_string("x");
    T_CHECK(as_ssa_apply(NULL, cfg, false, &ctx, &st, &err) == NULL);
    T_EQ_INT(err.code, 400);
    json_decref(cfg);
}

static void test_manager_from_user_agent(void)
{
    struct {
        const char *ua, *want;
    } cases[] = {
        {"kubectl/v1.32.0 (linux/amd64) kubernetes/abc", "kubectl"},
        {"my-operator", "my-operator"},
        {"my\x01op\x7f/1.0", "myop"},
        {"", ""},
        {"/x", ""},
        {"caf\xc3\xa9/1", "caf\xc3\xa9"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *m = as_ssa_manager_from_user_agent(cases[i].ua);
        T_EQ_STR(m, cases[i].want);
        free(m);
    }
    char longua[300];
    memset(longua, 'a', 299);
    longua[299] = '\0';
    char *m = as_ssa_manager_from_user_agent(longua);
    T_EQ_INT(strlen(m), 128);
    free(m);
    m = as_ssa_manager_from_user_agent(NULL);
    T_EQ_STR(m, "");
    free(m);
}

int main(void)
{
    T_RUN(test_apply_creates_with_managed_fields);
    T_RUN(test_reapply_same_is_stable);
    T_RUN(test_two_managers_conflict);
    T_RUN(test_force_takes_ownership);
    T_RUN(test_removing_field_from_config_deletes_it);
    T_RUN(test_update_then_apply_conflict_names_update_manager);
    T_RUN(test_multi_conflict_message);
    T_RUN(test_builtin_associative_lists);
    T_RUN(test_custom_resource_lists_are_atomic);
    T_RUN(test_status_subresource_manager_printing);
    T_RUN(test_track_update_moves_ownership);
    T_RUN(test_update_owns_added_maps);
    T_RUN(test_apply_input_errors);
    T_RUN(test_manager_from_user_agent);
    return T_DONE();
}
