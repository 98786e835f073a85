/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for host/kube/lease: the Lease record codec (coordination/v1), the in-memory
 * Lease store's API semantics and fault injection, and the identity helper. */
#include "host/kube/leaderelection/leaderelection.h"
#include "host/kube/leaderelection/lease.h"
#include "t.h"

#include <ctype.h>
#include <stdlib.h>

#define T0 (INT64_C(1740823512) * LOP_NS_PER_S) /* 2025-03-01T10:05:12Z */

static void test_encode_microtime_six_digits(void)
{
    lop_lease_record_t r = LOP_LEASE_RECORD_INIT;
    lop_lease_record_set_holder(&r, "node-a_1");
    r.lease_duration_seconds = 15;
    r.acquire_time_ns = T0 + 104233 * INT64_C(1000);
    r.renew_time_ns = T0; /* whole second: still six digits */
    r.lease_transitions = 3;
    json_t *obj = lop_lease_to_json("demo", "lock", NULL, &r);
    char *s = json_dumps(obj, JSON_SORT_KEYS | JSON_COMPACT);
    T_EQ_STR(s, "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{\"name\":"
                "\"lock\",\"namespace\":\"demo\"},\"spec\":{\"acquireTime\":\"2025-03-01T10:05:12.104233Z\","
                "\"holderIdentity\":\"node-a_1\",\"leaseDurationSeconds\":15,\"leaseTransitions\":3,"
                "\"renewTime\":\"2025-03-01T10:05:12.000000Z\"}}");
    free(s);
    json_decref(obj);

    /* Empty holder is written as "" (a release must be visible as such), rv when given. */
    lop_lease_record_set_holder(&r, NULL);
    r.lease_duration_seconds = 1;
    obj = lop_lease_to_json("demo", "lock", "48290", &r);
    T_EQ_STR(json_string_value(json_object_get(json_object_get(obj, "spec"), "holderIdentity")), "");
    T_EQ_STR(json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion")), "48290");
    json_decref(obj);
    lop_lease_record_cleanup(&r);
}

static void test_decode_reference_payload(void)
{
    /* Reference P18 (the released Lease). */
    const char *p18 = "{\"kind\":\"Lease\",\"apiVersion\":\"coordination.k8s.io/v1\",\"metadata\":{\"name\":"
                      "\"my-operator-lock\",\"namespace\":\"demo\",\"uid\":\"1c8d5e0f\",\"resourceVersion\":\"48290\","
                      "\"creationTimestamp\":\"2025-03-01T09:00:00Z\"},\"spec\":{\"holderIdentity\":\"\","
                      "\"leaseDurationSeconds\":1,\"acquireTime\":\"2025-03-01T10:05:20.000317Z\",\"renewTime\":"
                      "\"2025-03-01T10:05:20.000317Z\",\"leaseTransitions\":3}}";
    lop_lease_record_t r = LOP_LEASE_RECORD_INIT;
    char rv[LOP_LEASE_RV_MAX];
    lop_err_t err;
    T_EQ_INT(lop_lease_from_text(p18, strlen(p18), &r, rv, &err), LOP_OK);
    T_EQ_STR(rv, "48290");
    T_EQ_STR(lop_lease_record_holder(&r), "");
    T_EQ_INT(r.lease_duration_seconds, 1);
    T_EQ_INT(r.lease_transitions, 3);
    T_EQ_INT(r.acquire_time_ns, T0 + 8 * LOP_NS_PER_S + 317 * INT64_C(1000));
    T_EQ_INT(r.renew_time_ns, r.acquire_time_ns);

    /* Round trip: encode, decode, equal. */
    lop_lease_record_set_holder(&r, "x");
    json_t *obj = lop_lease_to_json("demo", "l", "7", &r);
    lop_lease_record_t back = LOP_LEASE_RECORD_INIT;
    T_EQ_INT(lop_lease_from_json(obj, &back, rv, &err), LOP_OK);
    T_CHECK(lop_lease_record_equal(&r, &back));
    T_EQ_STR(rv, "7");
    json_decref(obj);

    /* A Lease without spec, or with null fields, is an empty record. */
    const char *bare = "{\"metadata\":{\"name\":\"l\",\"resourceVersion\":\"1\"},\"spec\":{\"holderIdentity\":null}}";
    T_EQ_INT(lop_lease_from_text(bare, strlen(bare), &back, rv, &err), LOP_OK);
    T_EQ_STR(lop_lease_record_holder(&back), "");
    T_EQ_INT(back.lease_duration_seconds, 0);
    T_EQ_INT(back.renew_time_ns, 0);
    lop_lease_record_cleanup(&back);
    lop_lease_record_cleanup(&r);
}

static void expect_decode_error(const char *text, const char *needle)
{
    lop_lease_record_t r = LOP_LEASE_RECORD_INIT;
    char rv[LOP_LEASE_RV_MAX];
    lop_err_t err;
    lop_err_clear(&err);
    T_EQ_INT(lop_lease_from_text(text, strlen(text), &r, rv, &err), LOP_EINVAL);
    if (!strstr(err.message, needle)) {
        fprintf(stderr, "message \"%s\" does not name \"%s\"\n", err.message, needle);
        T_CHECK(!"error message names the cause");
    }
    T_EQ_STR(lop_lease_record_holder(&r), "");
    T_EQ_STR(rv, "");
}

static void test_decode_errors_name_the_field(void)
{
    expect_decode_error("{\"spec\":{\"holderIdentity\":5}}", "holderIdentity");
    expect_decode_error("{\"spec\":{\"leaseDurationSeconds\":\"15\"}}", "leaseDurationSeconds");
    expect_decode_error("{\"spec\":{\"leaseDurationSeconds\":-3}}", "negative");
    expect_decode_error("{\"spec\":{\"leaseTransitions\":99999999999}}", "leaseTransitions");
    expect_decode_error("{\"spec\":{\"renewTime\":\"yesterday\"}}", "renewTime");
    expect_decode_error("{\"spec\":{\"acquireTime\":12}}", "acquireTime");
    expect_decode_error("{\"kind\":\"ConfigMap\"}", "kind");
    expect_decode_error("{\"metadata\":{\"resourceVersion\":7}}", "resourceVersion");
    expect_decode_error("{\"spec\":[]}", "spec");
    expect_decode_error("[1,2]", "object");
    expect_decode_error("{\"spec\":", "invalid JSON");
    expect_decode_error("", "invalid JSON");
}

static void test_record_equality_at_wire_precision(void)
{
    lop_lease_record_t a = LOP_LEASE_RECORD_INIT, b = LOP_LEASE_RECORD_INIT;
    a.renew_time_ns = T0 + 123456789; /* 123456.789 us: the wire keeps 123456 us */
    b.renew_time_ns = T0 + 123456000;
    T_CHECK(lop_lease_record_equal(&a, &b)); /* NULL and no holder */
    lop_lease_record_set_holder(&a, "");
    T_CHECK(lop_lease_record_equal(&a, &b)); /* "" equals NULL */
    lop_lease_record_set_holder(&b, "x");
    T_CHECK(!lop_lease_record_equal(&a, &b));
    lop_lease_record_set_holder(&a, "x");
    a.lease_transitions = 1;
    T_CHECK(!lop_lease_record_equal(&a, &b));
    lop_lease_record_copy(&b, &a);
    T_CHECK(lop_lease_record_equal(&a, &b));
    T_CHECK(a.holder_identity != b.holder_identity); /* deep copy */
    lop_lease_record_cleanup(&a);
    lop_lease_record_cleanup(&b);
}

static void test_memory_store_semantics(void)
{
    lop_lease_store_t *s = lop_lease_store_new();
    lop_lease_client_t *c = lop_lease_client_memory_new(s, "leases/t/l");
    lop_lease_record_t r = LOP_LEASE_RECORD_INIT, got = LOP_LEASE_RECORD_INIT;
    char rv[LOP_LEASE_RV_MAX], rv2[LOP_LEASE_RV_MAX];
    lop_err_t err;
    T_EQ_INT(lop_lease_get(c, &got, rv, &err), LOP_ENOTFOUND);
    T_EQ_INT(err.code, 404);
    T_EQ_STR(err.reason, "NotFound");
    T_EQ_INT(lop_lease_update(c, &r, "1", rv, &err), LOP_ENOTFOUND);

    lop_lease_record_set_holder(&r, "a");
    T_EQ_INT(lop_lease_create(c, &r, rv, &err), LOP_OK);
    T_EQ_INT(lop_lease_create(c, &r, rv2, &err), LOP_EEXIST);
    T_EQ_STR(err.reason, "AlreadyExists");
    T_EQ_INT(lop_lease_get(c, &got, rv2, &err), LOP_OK);
    T_EQ_STR(rv2, rv);
    T_EQ_STR(lop_lease_record_holder(&got), "a");

    /* Update needs the current rv; every write moves it; stale rv conflicts. */
    T_EQ_INT(lop_lease_update(c, &r, "", rv2, &err), LOP_EINVAL);
    T_EQ_INT(err.code, 422);
    lop_lease_record_set_holder(&r, "b");
    T_EQ_INT(lop_lease_update(c, &r, rv, rv2, &err), LOP_OK);
    T_CHECK(strcmp(rv, rv2) != 0);
    T_EQ_INT(lop_lease_update(c, &r, rv, rv2, &err), LOP_ECONFLICT);
    T_EQ_INT(err.code, 409);
    T_EQ_STR(err.reason, "Conflict");
    T_EQ_INT(lop_lease_store_writes(s), 2);

    /* Fault injection: next two gets fail, then normal again; counters include failures. */
    lop_lease_client_memory_fail(c, LOP_LEASE_OP_GET, LOP_EAGAIN, 2);
    T_EQ_INT(lop_lease_get(c, &got, rv, &err), LOP_EAGAIN);
    T_EQ_INT(lop_lease_get(c, &got, rv, &err), LOP_EAGAIN);
    T_EQ_INT(lop_lease_get(c, &got, rv, &err), LOP_OK);
    T_EQ_STR(lop_lease_record_holder(&got), "b");
    lop_lease_call_counts_t n = lop_lease_client_memory_calls(c);
    T_EQ_INT(n.get, 5);
    T_EQ_INT(n.create, 2);
    T_EQ_INT(n.update, 4);

    /* A second handle on the same store is not affected by the first one's faults. */
    lop_lease_client_t *c2 = lop_lease_client_memory_new(s, NULL);
    lop_lease_client_memory_fail(c, LOP_LEASE_OP_ALL, LOP_EAGAIN, -1);
    T_EQ_INT(lop_lease_get(c, &got, rv, &err), LOP_EAGAIN);
    T_EQ_INT(lop_lease_get(c2, &got, rv, &err), LOP_OK);
    lop_lease_client_memory_fail(c, 0, LOP_OK, 0);
    T_EQ_INT(lop_lease_get(c, &got, rv, &err), LOP_OK);

    lop_lease_client_free(c2);
    lop_lease_client_free(c);
    lop_lease_store_free(s);
    lop_lease_record_cleanup(&r);
    lop_lease_record_cleanup(&got);
}

static void test_identity_helper(void)
{
    char *a = lop_elector_identity_new(), *b = lop_elector_identity_new();
    T_CHECK(strcmp(a, b) != 0);
    const char *us = strrchr(a, '_');
    T_CHECK(us != NULL && us != a);
    if (us) {
        T_EQ_INT(strlen(us + 1), 16);
        for (const char *p = us + 1; *p; p++) T_CHECK(isxdigit((unsigned char)*p));
    }
    free(a);
    free(b);
}

int main(void)
{
    T_RUN(test_encode_microtime_six_digits);
    T_RUN(test_decode_reference_payload);
    T_RUN(test_decode_errors_name_the_field);
    T_RUN(test_record_equality_at_wire_precision);
    T_RUN(test_memory_store_semantics);
    T_RUN(test_identity_helper);
    return T_DONE();
}
