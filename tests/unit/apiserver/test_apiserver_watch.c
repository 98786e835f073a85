/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the local API server's watch streams, CRDs, status subresource and deletion
 * (kubernetes.io api-concepts, custom-resource-definitions#subresources, finalizers). */
#include "t.h"
#include "test_apiserver_util.h"

static lop_apiserver_t *srv;

static const char crd[] =
    "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
    "\"metadata\":{\"name\":\"widgets.example.com\"},\"spec\":{\"group\":\"example.com\",\"scope\":\"Namespaced\","
    "\"names\":{\"plural\":\"widgets\",\"singular\":\"widget\",\"kind\":\"Widget\"},"
    "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,"
    "\"subresources\":{\"status\":{},\"scale\":{\"specReplicasPath\":\".spec.replicas\",\"statusReplicasPath\":\"."
    "status.replicas\"}},"
    "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{"
    "\"spec\":{\"type\":\"object\",\"properties\":{\"replicas\":{\"type\":\"integer\"},\"color\":{\"type\":\"string\","
    "\"default\":\"red\"}}},"
    "\"status\":{\"type\":\"object\",\"properties\":{\"phase\":{\"type\":\"string\"},\"replicas\":{\"type\":"
    "\"integer\"}}}}}}}]}}";

#define WPATH "/apis/example.com/v1/namespaces/default/widgets"

static void test_crd_install_and_discovery(void)
{
    resp_t r = t_http(srv, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd, NULL);
    T_EQ_INT(r.code, 201);
    json_t *conds = json_object_get(json_object_get(r.json, "status"), "conditions");
    T_EQ_INT(json_array_size(conds), 2);
    T_EQ_STR(jstr(json_array_get(conds, 1), "type"), "Established");
    T_EQ_STR(jstr(json_array_get(conds, 1), "status"), "True");
    resp_free(&r);
    r = t_http(srv, "GET", "/apis/example.com/v1", NULL, NULL);
    T_EQ_INT(r.code, 200);
    json_t *res = json_object_get(r.json, "resources");
    T_EQ_INT(json_array_size(res), 3);
    T_EQ_STR(jstr(json_array_get(res, 1), "name"), "widgets/status");
    T_EQ_STR(jstr(json_array_get(res, 2), "group"), "autoscaling");
    resp_free(&r);
}

static void test_cr_status_and_generation(void)
{
    resp_t r = t_http(srv, "POST", WPATH,
                      "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w1\"},"
                      "\"spec\":{\"replicas\":1,\"unknown\":true},\"status\":{\"phase\":\"X\"}}",
                      NULL);
    T_EQ_INT(r.code, 201);
    /* status dropped on create, unknown fields pruned, keys sorted, generation 1 */
    T_CHECK(json_object_get(r.json, "status") == NULL);
    T_CHECK(json_object_get(json_object_get(r.json, "spec"), "unknown") == NULL);
    T_CHECK(strncmp(r.body.data,
                    "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"creationTimestamp\"",
                    78) == 0);
    T_EQ_INT(json_integer_value(json_object_get(json_object_get(r.json, "metadata"), "generation")), 1);
    T_EQ_STR(jstr(r.json, "spec.color"), "red"); /* schema default */
    resp_free(&r);
    /* /status changes only status; generation unchanged */
    r = t_http(srv, "PATCH", WPATH "/w1/status",
               "{\"spec\":{\"replicas\":9},\"status\":{\"phase\":\"Ready\",\"replicas\":1}}",
               "application/merge-patch+json");
    T_EQ_INT(r.code, 200);
    T_EQ_STR(jstr(r.json, "status.phase"), "Ready");
    T_EQ_INT(json_integer_value(json_object_get(json_object_get(r.json, "spec"), "replicas")), 1);
    T_EQ_INT(json_integer_value(json_object_get(json_object_get(r.json, "metadata"), "generation")), 1);
    resp_free(&r);
    /* main endpoint ignores status; spec change bumps generation; metadata-only does not */
    r = t_http(srv, "PATCH", WPATH "/w1", "{\"spec\":{\"replicas\":2},\"status\":{\"phase\":\"Nope\"}}",
               "application/merge-patch+json");
    T_EQ_STR(jstr(r.json, "status.phase"), "Ready");
    T_EQ_INT(json_integer_value(json_object_get(json_object_get(r.json, "metadata"), "generation")), 2);
    resp_free(&r);
    r = t_http(srv, "PATCH", WPATH "/w1", "{\"metadata\":{\"labels\":{\"a\":\"b\"}}}", "application/merge-patch+json");
    T_EQ_INT(json_integer_value(json_object_get(json_object_get(r.json, "metadata"), "generation")), 2);
    resp_free(&r);
    /* strategic merge patch on a CR → 415; PUT without RV → 422 with the 0x0 wording */
    r = t_http(srv, "PATCH", WPATH "/w1", "{}", "application/strategic-merge-patch+json");
    T_EQ_INT(r.code, 415);
    resp_free(&r);
    r = t_http(srv, "PUT", WPATH "/w1",
               "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w1\"}}", NULL);
    T_EQ_INT(r.code, 422);
    T_EQ_STR(jstr(r.json, "message"), "widgets.example.com \"w1\" is invalid: metadata.resourceVersion: "
                                      "Invalid value: 0x0: must be specified for an update");
    resp_free(&r);
    /* schema type check */
    r = t_http(srv, "POST", WPATH,
               "{\"apiVersion\":\"example.com/"
               "v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"bad\"},\"spec\":{\"replicas\":\"three\"}}",
               NULL);
    T_EQ_INT(r.code, 422);
    T_EQ_STR(jstr(r.json, "details.kind"), "Widget");
    resp_free(&r);
    /* scale subresource */
    r = t_http(srv, "GET", WPATH "/w1/scale", NULL, NULL);
    T_EQ_STR(jstr(r.json, "kind"), "Scale");
    T_EQ_INT(json_integer_value(json_object_get(json_object_get(r.json, "spec"), "replicas")), 2);
    resp_free(&r);
    r = t_http(srv, "PATCH", WPATH "/w1/scale", "{\"spec\":{\"replicas\":7}}", "application/merge-patch+json");
    T_EQ_INT(r.code, 200);
    T_EQ_STR(jstr(r.json, "kind"), "Scale");
    resp_free(&r);
    r = t_http(srv, "GET", WPATH "/w1", NULL, NULL);
    T_EQ_INT(json_integer_value(json_object_get(json_object_get(r.json, "spec"), "replicas")), 7);
    resp_free(&r);
}

static void test_watch_initial_events_and_bookmark(void)
{
    watch_t w;
    watch_start(&w, srv, WPATH "?watch=1&allowWatchBookmarks=true");
    T_EQ_INT(watch_wait_lines(&w, 2), 2);
    lop_apiserver_close_watches(srv);
    /* framing: JSON media type, chunked over HTTP/1.1 */
    char *hdr = watch_headers(&w);
    T_CHECK(strstr(hdr, "Content-Type: application/json\r\n") != NULL);
    T_CHECK(strstr(hdr, "Transfer-Encoding: chunked") != NULL);
    free(hdr);
    json_t *ev = watch_finish(&w);
    T_EQ_INT(w.code, 200);
    T_EQ_INT(json_array_size(ev), 2);
    T_EQ_STR(ev_type(ev, 0), "ADDED");
    T_EQ_STR(ev_type(ev, 1), "BOOKMARK");
    json_t *ann =
        json_object_get(json_object_get(json_object_get(json_array_get(ev, 1), "object"), "metadata"), "annotations");
    T_EQ_STR(json_string_value(json_object_get(ann, "k8s.io/initial-events-end")), "true");
    json_decref(ev);
    resp_t r = t_http(srv, "GET", WPATH "?watch=1&sendInitialEvents=true", NULL, NULL);
    T_EQ_INT(r.code, 422);
    resp_free(&r);
}

static void test_watch_410_after_compaction(void)
{
    lop_apiserver_compact(srv);
    watch_t w;
    watch_start(&w, srv, WPATH "?watch=1&resourceVersion=2");
    watch_wait_lines(&w, 1);
    json_t *ev = watch_finish(&w); /* the server ends the stream itself */
    T_EQ_INT(w.code, 200);         /* 200 stream with an ERROR event */
    T_EQ_INT(json_array_size(ev), 1);
    T_EQ_STR(ev_type(ev, 0), "ERROR");
    json_t *st = json_object_get(json_array_get(ev, 0), "object");
    T_EQ_INT(json_integer_value(json_object_get(st, "code")), 410);
    T_EQ_STR(jstr(st, "reason"), "Expired");
    T_CHECK(strncmp(jstr(st, "message"), "too old resource version: 2 (", 29) == 0);
    json_decref(ev);
    /* sendInitialEvents=false with RV "0" starts now: no 410 even after compaction */
    watch_start(&w, srv,
                WPATH "?watch=1&resourceVersion=0&sendInitialEvents=false&resourceVersionMatch=NotOlderThan&"
                      "allowWatchBookmarks=true");
    T_CHECK(watch_wait_live(&w));
    pthread_mutex_lock(&w.mu);
    int before = w.lines;
    pthread_mutex_unlock(&w.mu);
    resp_t r = t_http(srv, "PATCH", WPATH "/w1", "{\"spec\":{\"replicas\":3}}", "application/merge-patch+json");
    resp_free(&r);
    T_EQ_INT(watch_wait_lines(&w, before + 1), before + 1);
    lop_apiserver_close_watches(srv);
    ev = watch_finish(&w);
    T_EQ_STR(ev_type(ev, 0), "BOOKMARK"); /* no ERROR, no initial ADDED */
    T_EQ_STR(ev_type(ev, (size_t)before), "MODIFIED");
    json_decref(ev);
}

static void test_history_ring_overflow(void)
{
    lop_apiserver_opts_t o = {.history = 3};
    lop_apiserver_t *small;
    lop_err_t err;
    T_EQ_INT(lop_apiserver_start(&o, &small, &err), LOP_OK);
    for (int i = 0; i < 6; i++) {
        char body[200];
        snprintf(body, sizeof body, "{\"metadata\":{\"name\":\"o%d\"}}", i);
        resp_t r = t_http(small, "POST", "/api/v1/namespaces/default/configmaps", body, NULL);
        resp_free(&r);
    }
    int64_t rev = lop_apiserver_revision(small);
    watch_t w;
    char path[200];
    snprintf(path, sizeof path, "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=%lld",
             (long long)(rev - 2));
    watch_start(&w, small, path); /* within history: two replayed ADDED */
    T_EQ_INT(watch_wait_lines(&w, 2), 2);
    lop_apiserver_close_watches(small);
    json_t *ev = watch_finish(&w);
    T_EQ_INT(json_array_size(ev), 2);
    T_EQ_STR(ev_type(ev, 0), "ADDED");
    json_decref(ev);
    snprintf(path, sizeof path, "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=%lld",
             (long long)(rev - 5));
    watch_start(&w, small, path);
    ev = watch_finish(&w);
    T_EQ_STR(ev_type(ev, 0), "ERROR");
    json_decref(ev);
    lop_apiserver_stop(small);
}

/* --history-bytes: the ring drops its oldest events to stay within its bytes (each ~1 KB
 * ConfigMap's ADDED event is charged its ~1 KB of JSON), so a watch from before them gets 410 Gone
 * "too old resource version" while one from a recent RV still replays. */
static void test_history_ring_bytes(void)
{
    lop_apiserver_opts_t o = {.history_bytes = 3500};
    lop_apiserver_t *small;
    lop_err_t err;
    T_EQ_INT(lop_apiserver_start(&o, &small, &err), LOP_OK);
    char pad[1001];
    memset(pad, 'x', 1000);
    pad[1000] = '\0';
    for (int i = 0; i < 8; i++) {
        char body[1200];
        snprintf(body, sizeof body, "{\"metadata\":{\"name\":\"b%d\"},\"data\":{\"v\":\"%s\"}}", i, pad);
        resp_t r = t_http(small, "POST", "/api/v1/namespaces/default/configmaps", body, NULL);
        T_EQ_INT(r.code, 201);
        resp_free(&r);
    }
    int64_t rev = lop_apiserver_revision(small);
    watch_t w;
    char path[200];
    snprintf(path, sizeof path, "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=%lld",
             (long long)(rev - 2));
    watch_start(&w, small, path); /* room for two or three events: two replayed ADDED */
    T_EQ_INT(watch_wait_lines(&w, 2), 2);
    lop_apiserver_close_watches(small);
    json_t *ev = watch_finish(&w);
    T_EQ_INT(json_array_size(ev), 2);
    T_EQ_STR(ev_type(ev, 0), "ADDED");
    T_EQ_STR(jstr(json_object_get(json_array_get(ev, 0), "object"), "metadata.name"), "b6");
    T_EQ_STR(jstr(json_object_get(json_array_get(ev, 1), "object"), "metadata.name"), "b7");
    json_decref(ev);
    snprintf(path, sizeof path, "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=%lld",
             (long long)(rev - 4));
    watch_start(&w, small, path);
    ev = watch_finish(&w);
    T_EQ_INT(json_array_size(ev), 1);
    T_EQ_STR(ev_type(ev, 0), "ERROR");
    json_t *st = json_object_get(json_array_get(ev, 0), "object");
    T_EQ_INT(json_integer_value(json_object_get(st, "code")), 410);
    T_EQ_STR(jstr(st, "reason"), "Expired");
    T_CHECK(strstr(jstr(st, "message"), "too old resource version") != NULL);
    json_decref(ev);
    lop_apiserver_stop(small);
}

static void test_selector_transitions(void)
{
    resp_t r = t_http(srv, "GET", WPATH "/w1", NULL, NULL);
    int64_t rv = atoll(jstr(r.json, "metadata.resourceVersion"));
    resp_free(&r);
    r = t_http(srv, "PATCH", WPATH "/w1", "{\"metadata\":{\"labels\":{\"a\":\"c\"}}}", "application/merge-patch+json");
    resp_free(&r);
    r = t_http(srv, "PATCH", WPATH "/w1", "{\"metadata\":{\"labels\":{\"a\":\"b\"}}}", "application/merge-patch+json");
    resp_free(&r);
    r = t_http(srv, "PATCH", WPATH "/w1", "{\"metadata\":{\"labels\":{\"x\":\"y\"}}}", "application/merge-patch+json");
    resp_free(&r);
    char path[256];
    snprintf(path, sizeof path, WPATH "?watch=1&labelSelector=a%%3Db&resourceVersion=%lld", (long long)rv);
    watch_t w;
    watch_start(&w, srv, path);
    T_EQ_INT(watch_wait_lines(&w, 3), 3);
    lop_apiserver_close_watches(srv);
    json_t *ev = watch_finish(&w);
    T_EQ_INT(json_array_size(ev), 3);
    T_EQ_STR(ev_type(ev, 0), "DELETED"); /* stopped matching */
    T_EQ_STR(ev_type(ev, 1), "ADDED");   /* matches again */
    T_EQ_STR(ev_type(ev, 2), "MODIFIED");
    json_decref(ev);
}

static void test_finalizer_single_deleted_event(void)
{
    resp_t r =
        t_http(srv, "POST", WPATH,
               "{\"apiVersion\":\"example.com/"
               "v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"fin\",\"finalizers\":[\"example.com/cleanup\"]}}",
               NULL);
    int64_t rv = atoll(jstr(r.json, "metadata.resourceVersion"));
    resp_free(&r);
    r = t_http(srv, "DELETE", WPATH "/fin", NULL, NULL);
    T_EQ_INT(r.code, 200); /* 200 with the still-existing object */
    T_CHECK(jstr(r.json, "metadata.deletionTimestamp") != NULL);
    T_EQ_INT(json_integer_value(json_object_get(json_object_get(r.json, "metadata"), "generation")), 2);
    resp_free(&r);
    r = t_http(srv, "PATCH", WPATH "/fin", "{\"metadata\":{\"finalizers\":[\"new\"]}}", "application/merge-patch+json");
    T_EQ_INT(r.code, 422); /* no new finalizers while deleting */
    resp_free(&r);
    r = t_http(srv, "PATCH", WPATH "/fin", "[{\"op\":\"remove\",\"path\":\"/metadata/finalizers\"}]",
               "application/json-patch+json");
    T_EQ_INT(r.code, 200);
    resp_free(&r);
    r = t_http(srv, "GET", WPATH "/fin", NULL, NULL);
    T_EQ_INT(r.code, 404);
    resp_free(&r);
    char path[256];
    snprintf(path, sizeof path, WPATH "?watch=1&fieldSelector=metadata.name%%3Dfin&resourceVersion=%lld",
             (long long)rv);
    watch_t w;
    watch_start(&w, srv, path);
    T_EQ_INT(watch_wait_lines(&w, 2), 2);
    lop_apiserver_close_watches(srv);
    json_t *ev = watch_finish(&w);
    T_EQ_INT(json_array_size(ev), 2);
    T_EQ_STR(ev_type(ev, 0), "MODIFIED");
    T_EQ_STR(ev_type(ev, 1), "DELETED"); /* one DELETED still showing the finalizer */
    json_t *fins =
        json_object_get(json_object_get(json_object_get(json_array_get(ev, 1), "object"), "metadata"), "finalizers");
    T_EQ_INT(json_array_size(fins), 1);
    json_decref(ev);
    /* plain delete of a CR: Success Status */
    r = t_http(srv, "DELETE", WPATH "/w1", NULL, NULL);
    T_EQ_INT(r.code, 200);
    T_EQ_STR(jstr(r.json, "status"), "Success");
    T_EQ_STR(jstr(r.json, "details.kind"), "widgets");
    resp_free(&r);
}

static void test_owner_gc(void)
{
    resp_t o =
        t_http(srv, "POST", "/api/v1/namespaces/default/configmaps", "{\"metadata\":{\"name\":\"owner\"}}", NULL);
    const char *uid = jstr(o.json, "metadata.uid");
    char body[512];
    for (int i = 0; i < 2; i++) {
        snprintf(body, sizeof body,
                 "{\"metadata\":{\"name\":\"dep%d\",\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
                 "\"name\":\"owner\",\"uid\":\"%s\"}]}}",
                 i, uid);
        resp_t r = t_http(srv, "POST", "/api/v1/namespaces/default/secrets", body, NULL);
        T_EQ_INT(r.code, 201);
        resp_free(&r);
    }
    resp_t r =
        t_http(srv, "DELETE", "/api/v1/namespaces/default/configmaps/owner?propagationPolicy=Orphan", NULL, NULL);
    resp_free(&r);
    r = t_http(srv, "GET", "/api/v1/namespaces/default/secrets/dep0", NULL, NULL);
    T_EQ_INT(r.code, 200); /* orphaned: survives, owner reference removed */
    T_CHECK(json_object_get(json_object_get(r.json, "metadata"), "ownerReferences") == NULL ||
            json_array_size(json_object_get(json_object_get(r.json, "metadata"), "ownerReferences")) == 0);
    resp_free(&r);
    r = t_http(srv, "GET", "/api/v1/namespaces/default/configmaps/owner", NULL, NULL);
    T_EQ_INT(r.code, 404);
    resp_free(&r);
    resp_free(&o);
    /* background: dependents go once the owner is gone */
    o = t_http(srv, "POST", "/api/v1/namespaces/default/configmaps", "{\"metadata\":{\"name\":\"owner2\"}}", NULL);
    snprintf(body, sizeof body,
             "{\"metadata\":{\"name\":\"dep9\",\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
             "\"name\":\"owner2\",\"uid\":\"%s\"}]}}",
             jstr(o.json, "metadata.uid"));
    r = t_http(srv, "POST", "/api/v1/namespaces/default/secrets", body, NULL);
    resp_free(&r);
    r = t_http(srv, "DELETE", "/api/v1/namespaces/default/configmaps/owner2", NULL, NULL);
    resp_free(&r);
    r = t_http(srv, "GET", "/api/v1/namespaces/default/secrets/dep9", NULL, NULL);
    T_EQ_INT(r.code, 404);
    resp_free(&r);
    resp_free(&o);
}

static void test_namespace_terminating(void)
{
    resp_t r = t_http(srv, "POST", "/api/v1/namespaces", "{\"metadata\":{\"name\":\"term\"}}", NULL);
    resp_free(&r);
    r = t_http(srv, "POST", "/api/v1/namespaces/term/configmaps",
               "{\"metadata\":{\"name\":\"held\",\"finalizers\":[\"x/y\"]}}", NULL);
    resp_free(&r);
    r = t_http(srv, "DELETE", "/api/v1/namespaces/term", NULL, NULL);
    T_EQ_INT(r.code, 200);
    T_EQ_STR(jstr(r.json, "status.phase"), "Terminating");
    resp_free(&r);
    r = t_http(srv, "POST", "/api/v1/namespaces/term/configmaps", "{\"metadata\":{\"name\":\"late\"}}", NULL);
    T_EQ_INT(r.code, 403);
    T_EQ_STR(jstr(r.json, "reason"), "Forbidden");
    resp_free(&r);
    r = t_http(srv, "PATCH", "/api/v1/namespaces/term/configmaps/held", "{\"metadata\":{\"finalizers\":null}}",
               "application/merge-patch+json");
    T_EQ_INT(r.code, 200);
    resp_free(&r);
    r = t_http(srv, "GET", "/api/v1/namespaces/term", NULL, NULL);
    T_EQ_INT(r.code, 404);
    resp_free(&r);
    r = t_http(srv, "DELETE", "/api/v1/namespaces/kube-system", NULL, NULL);
    T_EQ_INT(r.code, 403);
    T_EQ_STR(jstr(r.json, "message"), "namespaces \"kube-system\" is forbidden: this namespace may not be deleted");
    resp_free(&r);
}

static void test_apply_and_status_ownership(void)
{
    const char *applied = "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"ap\"},"
                          "\"spec\":{\"replicas\":1},\"status\":{\"phase\":\"Mine\"}}";
    resp_t r = t_http(srv, "PATCH", WPATH "/ap?fieldManager=op", applied, "application/apply-patch+yaml");
    T_EQ_INT(r.code, 201);
    T_CHECK(json_object_get(r.json, "status") == NULL);
    json_t *mf = json_object_get(json_object_get(r.json, "metadata"), "managedFields");
    T_EQ_INT(json_array_size(mf), 1);
    T_CHECK(json_object_get(json_object_get(json_array_get(mf, 0), "fieldsV1"), "f:status") == NULL);
    resp_free(&r);
    r = t_http(srv, "PATCH", WPATH "/ap/status?fieldManager=ctl", "{\"status\":{\"phase\":\"Theirs\"}}",
               "application/merge-patch+json");
    T_EQ_INT(r.code, 200);
    resp_free(&r);
    /* re-applying the same manifest does not conflict with the status writer */
    r = t_http(srv, "PATCH", WPATH "/ap?fieldManager=op", applied, "application/apply-patch+yaml");
    T_EQ_INT(r.code, 200);
    T_EQ_STR(jstr(r.json, "status.phase"), "Theirs");
    resp_free(&r);
    /* but changing a spec field another manager owns does */
    r = t_http(srv, "PATCH", WPATH "/ap?fieldManager=other",
               "{\"apiVersion\":\"example.com/"
               "v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"ap\"},\"spec\":{\"replicas\":5}}",
               "application/apply-patch+yaml");
    T_EQ_INT(r.code, 409);
    T_EQ_STR(jstr(r.json, "reason"), "Conflict");
    resp_free(&r);
    r = t_http(srv, "DELETE", WPATH "/ap", NULL, NULL);
    T_EQ_INT(r.code, 200);
    resp_free(&r);
}

static void test_crd_update_keeps_watches(void)
{
    resp_t c = t_http(srv, "POST", WPATH,
                      "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"keep\"}}", NULL);
    T_EQ_INT(c.code, 201);
    resp_free(&c);
    watch_t w;
    watch_start(&w, srv, WPATH "?watch=1&allowWatchBookmarks=true&fieldSelector=metadata.name%3Dkeep");
    T_EQ_INT(watch_wait_lines(&w, 2), 2);
    resp_t r = t_http(srv, "PATCH", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
                      "{\"spec\":{\"names\":{\"shortNames\":[\"wdg\"]}}}", "application/merge-patch+json");
    T_EQ_INT(r.code, 200);
    resp_free(&r);
    r = t_http(srv, "GET", "/apis/example.com/v1", NULL, NULL);
    T_EQ_STR(json_string_value(json_array_get(
                 json_object_get(json_array_get(json_object_get(r.json, "resources"), 0), "shortNames"), 0)),
             "wdg");
    resp_free(&r);
    r = t_http(srv, "PATCH", WPATH "/keep", "{\"spec\":{\"replicas\":8}}", "application/merge-patch+json");
    resp_free(&r);
    T_EQ_INT(watch_wait_lines(&w, 3), 3); /* the watch survived the CRD update */
    lop_apiserver_close_watches(srv);
    json_t *ev = watch_finish(&w);
    T_EQ_STR(ev_type(ev, 2), "MODIFIED");
    json_decref(ev);
    r = t_http(srv, "DELETE", WPATH "/keep", NULL, NULL);
    resp_free(&r);
}

static void test_watch_from_future_rv(void)
{
    int64_t rev = lop_apiserver_revision(srv);
    char path[256];
    snprintf(path, sizeof path,
             "/api/v1/namespaces/kube-node-lease/configmaps?watch=1&allowWatchBookmarks=true&resourceVersion=%lld",
             (long long)(rev + 2));
    watch_t w;
    watch_start(&w, srv, path);
    T_CHECK(watch_wait_live(&w)); /* a bookmark proves the watch is registered */
    pthread_mutex_lock(&w.mu);
    int base = w.lines;
    pthread_mutex_unlock(&w.mu);
    for (int i = 0; i < 3; i++) { /* revisions rev+1 .. rev+3: only rev+3 is after the start */
        char b[100];
        snprintf(b, sizeof b, "{\"metadata\":{\"name\":\"fut%d\"}}", i);
        resp_t r = t_http(srv, "POST", "/api/v1/namespaces/kube-node-lease/configmaps", b, NULL);
        resp_free(&r);
    }
    T_EQ_INT(watch_wait_lines(&w, base + 1), base + 1);
    lop_apiserver_close_watches(srv);
    json_t *ev = watch_finish(&w);
    T_EQ_INT(json_array_size(ev), (size_t)base + 1);
    T_EQ_STR(jstr(json_object_get(json_array_get(ev, (size_t)base), "object"), "metadata.name"), "fut2");
    json_decref(ev);
}

static void test_crd_delete_ends_watches(void)
{
    resp_t r = t_http(srv, "POST", WPATH,
                      "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"last\"}}", NULL);
    T_EQ_INT(r.code, 201);
    resp_free(&r);
    watch_t w;
    watch_start(&w, srv, WPATH "?watch=1&allowWatchBookmarks=true");
    T_EQ_INT(watch_wait_lines(&w, 2), 2); /* ADDED + initial-events-end bookmark */
    r = t_http(srv, "DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com", NULL,
               NULL);
    T_EQ_INT(r.code, 200);
    resp_free(&r);
    json_t *ev = watch_finish(&w); /* ends without close_watches: the resource is gone */
    T_EQ_INT(json_array_size(ev), 3);
    T_EQ_STR(ev_type(ev, 2), "DELETED");
    json_decref(ev);
    r = t_http(srv, "GET", WPATH, NULL, NULL);
    T_EQ_INT(r.code, 404);
    resp_free(&r);
    r = t_http(srv, "GET", "/apis/example.com/v1", NULL, NULL);
    T_EQ_INT(r.code, 404);
    resp_free(&r);
}

static void test_stall_and_resume(void)
{
    watch_t w;
    watch_start(&w, srv, "/api/v1/namespaces/kube-public/configmaps?watch=1&allowWatchBookmarks=true");
    T_EQ_INT(watch_wait_lines(&w, 1), 1); /* initial-events-end bookmark: the watch is live */
    lop_apiserver_stall_watches(srv, true);
    resp_t r =
        t_http(srv, "POST", "/api/v1/namespaces/kube-public/configmaps", "{\"metadata\":{\"name\":\"st\"}}", NULL);
    T_EQ_INT(r.code, 201);
    resp_free(&r);
    pthread_mutex_lock(&w.mu);
    int seen = w.lines;
    pthread_mutex_unlock(&w.mu);
    T_EQ_INT(seen, 1); /* nothing flowed while stalled */
    lop_apiserver_stall_watches(srv, false);
    T_EQ_INT(watch_wait_lines(&w, 2), 2);
    lop_apiserver_bookmark_now(srv);
    T_EQ_INT(watch_wait_lines(&w, 3), 3);
    lop_apiserver_close_watches(srv);
    json_t *ev = watch_finish(&w);
    T_EQ_STR(ev_type(ev, 1), "ADDED");
    T_EQ_STR(ev_type(ev, 2), "BOOKMARK");
    json_decref(ev);
}

static void test_foreground_deletion(void)
{
    resp_t o = t_http(srv, "POST", "/api/v1/namespaces/default/configmaps", "{\"metadata\":{\"name\":\"fg\"}}", NULL);
    char body[512];
    snprintf(body, sizeof body,
             "{\"metadata\":{\"name\":\"fgdep\",\"finalizers\":[\"hold\"],\"ownerReferences\":[{\"apiVersion\":\"v1\","
             "\"kind\":\"ConfigMap\",\"name\":\"fg\",\"uid\":\"%s\",\"blockOwnerDeletion\":true}]}}",
             jstr(o.json, "metadata.uid"));
    resp_t d = t_http(srv, "POST", "/api/v1/namespaces/default/secrets", body, NULL);
    T_EQ_INT(d.code, 201);
    resp_free(&d);
    resp_t r = t_http(srv, "DELETE", "/api/v1/namespaces/default/configmaps/fg",
                      "{\"propagationPolicy\":\"Foreground\"}", NULL);
    T_EQ_INT(r.code, 200);
    resp_free(&r);
    /* the owner waits, with foregroundDeletion, for its blocking dependent (held by a finalizer) */
    r = t_http(srv, "GET", "/api/v1/namespaces/default/configmaps/fg", NULL, NULL);
    T_EQ_INT(r.code, 200);
    T_EQ_STR(json_string_value(json_array_get(json_object_get(json_object_get(r.json, "metadata"), "finalizers"), 0)),
             "foregroundDeletion");
    resp_free(&r);
    r = t_http(srv, "GET", "/api/v1/namespaces/default/secrets/fgdep", NULL, NULL);
    T_CHECK(jstr(r.json, "metadata.deletionTimestamp") != NULL);
    resp_free(&r);
    r = t_http(srv, "PATCH", "/api/v1/namespaces/default/secrets/fgdep", "{\"metadata\":{\"finalizers\":null}}",
               "application/merge-patch+json");
    T_EQ_INT(r.code, 200);
    resp_free(&r);
    r = t_http(srv, "GET", "/api/v1/namespaces/default/configmaps/fg", NULL, NULL);
    T_EQ_INT(r.code, 404);
    resp_free(&r);
    resp_free(&o);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_ALL);
    srv = t_start(0);
    if (!T_SETUP("start the API server", srv != NULL)) return T_DONE();
    T_RUN(test_crd_install_and_discovery);
    T_RUN(test_cr_status_and_generation);
    T_RUN(test_watch_initial_events_and_bookmark);
    T_RUN(test_watch_410_after_compaction);
    T_RUN(test_history_ring_overflow);
    T_RUN(test_history_ring_bytes);
    T_RUN(test_selector_transitions);
    T_RUN(test_finalizer_single_deleted_event);
    T_RUN(test_owner_gc);
    T_RUN(test_namespace_terminating);
    T_RUN(test_watch_from_future_rv);
    T_RUN(test_crd_update_keeps_watches);
    T_RUN(test_apply_and_status_ownership);
    T_RUN(test_crd_delete_ends_watches);
    T_RUN(test_stall_and_resume);
    T_RUN(test_foreground_deletion);
    lop_apiserver_stop(srv);
    curl_global_cleanup();
    return T_DONE();
}
