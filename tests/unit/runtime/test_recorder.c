/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for host/runtime/recorder against the local API server (in-process, loopback):
 * Events are written, repeats aggregate into a count, and messages that are not valid UTF-8
 * (a script cutting a string mid-character) are repaired instead of crashing the process. */
#include "apiserver/apiserver.h"
#include "host/kube/client/rest.h"
#include "host/runtime/recorder.h"
#include "host/util/buf.h"
#include "t.h"

#include <jansson.h>
#include <stdlib.h>

static lop_apiserver_t *srv;
static lop_rest_client_t *rest;

static json_t *list_events(void)
{
    lop_rest_resp_t r = LOP_REST_RESP_INIT;
    lop_err_t err;
    if (lop_rest_do(rest, "GET", "/api/v1/namespaces/default/events", NULL, NULL, 0, &r, &err) != LOP_OK) {
        lop_rest_resp_cleanup(&r);
        return NULL;
    }
    json_t *l = json_loadb(r.body.data, r.body.len, 0, NULL);
    lop_rest_resp_cleanup(&r);
    return l;
}

/* The one Event with this reason (a new reference), or NULL; *n gets how many there are. */
static json_t *event_with_reason(const char *reason, int *n)
{
    json_t *l = list_events(), *ev, *one = NULL;
    size_t i;
    *n = 0;
    json_array_foreach(json_object_get(l, "items"), i, ev)
    {
        if (strcmp(json_string_value(json_object_get(ev, "reason")), reason) != 0) continue;
        (*n)++;
        if (!one) one = json_incref(ev);
    }
    json_decref(l);
    return one;
}

static const char *OBJ = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm\","
                         "\"namespace\":\"default\",\"uid\":\"u-1\",\"resourceVersion\":\"5\"}}";

static void test_repeat_aggregates_into_count(void)
{
    lop_recorder_t *r = lop_recorder_new(rest, "test", "host-a", NULL);
    lop_err_t err;
    T_EQ_INT(lop_recorder_record(r, OBJ, strlen(OBJ), "Normal", "Synced", "in sync", &err), LOP_OK);
    T_EQ_INT(lop_recorder_record(r, OBJ, strlen(OBJ), "Normal", "Synced", "in sync", &err), LOP_OK);
    int found;
    json_t *ev = event_with_reason("Synced", &found);
    T_EQ_INT(found, 1);
    T_CHECK(ev != NULL);
    T_EQ_INT(json_integer_value(json_object_get(ev, "count")), 2);
    T_EQ_STR(json_string_value(json_object_get(json_object_get(ev, "involvedObject"), "uid")), "u-1");
    T_EQ_STR(json_string_value(json_object_get(json_object_get(ev, "source"), "component")), "test");
    json_decref(ev);
    lop_recorder_free(r);
}

/* Events of other objects recorded in between do not split a repeated Event in two (the
 * aggregation cache is not direct-mapped: one collision used to evict the first Event's key). */
static void test_repeat_aggregates_across_other_events(void)
{
    lop_recorder_t *r = lop_recorder_new(rest, "test", "host-a", NULL);
    lop_err_t err;
    const char *b = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"b\","
                    "\"namespace\":\"default\",\"uid\":\"u-b\",\"resourceVersion\":\"5\"}}";
    T_EQ_INT(lop_recorder_record(r, b, strlen(b), "Normal", "Again", "reconciled b", &err), LOP_OK);
    for (int i = 0; i < 300; i++) {
        char o[256];
        snprintf(o, sizeof o,
                 "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"o%d\","
                 "\"namespace\":\"default\",\"uid\":\"u-o%d\",\"resourceVersion\":\"5\"}}",
                 i, i);
        T_EQ_INT(lop_recorder_record(r, o, strlen(o), "Normal", "Other", "other", &err), LOP_OK);
    }
    T_EQ_INT(lop_recorder_record(r, b, strlen(b), "Normal", "Again", "reconciled b", &err), LOP_OK);
    int found;
    json_t *ev = event_with_reason("Again", &found);
    T_EQ_INT(found, 1);
    T_CHECK(ev != NULL);
    T_EQ_INT(json_integer_value(json_object_get(ev, "count")), 2);
    json_decref(ev);
    lop_recorder_free(r);
}

static void test_invalid_utf8_and_long_messages_are_repaired(void)
{
    lop_recorder_t *r = lop_recorder_new(rest, "test", "host-a", NULL);
    lop_err_t err;
    /* 600 x "é" cut after an odd byte count, as a script truncating by bytes would */
    lop_buf_t m = LOP_BUF_INIT;
    for (int i = 0; i < 600; i++) lop_buf_puts(&m, "\xc3\xa9");
    m.data[1021] = '\0';
    T_EQ_INT(lop_recorder_record(r, OBJ, strlen(OBJ), "Warning", "Cut", m.data, &err), LOP_OK);
    lop_buf_t big = LOP_BUF_INIT;
    for (int i = 0; i < 800; i++) lop_buf_puts(&big, "\xc3\xa9");
    T_EQ_INT(lop_recorder_record(r, OBJ, strlen(OBJ), "Warning", "Long", big.data, &err), LOP_OK);
    json_t *l = list_events();
    size_t i;
    json_t *ev;
    int seen = 0;
    json_array_foreach(json_object_get(l, "items"), i, ev)
    {
        const char *reason = json_string_value(json_object_get(ev, "reason"));
        const char *msg = json_string_value(json_object_get(ev, "message"));
        if (strcmp(reason, "Cut") == 0 || strcmp(reason, "Long") == 0) {
            seen++;
            T_CHECK(msg && strlen(msg) <= 1024);
        }
    }
    T_EQ_INT(seen, 2);
    json_decref(l);
    lop_buf_free(&m);
    lop_buf_free(&big);
    lop_recorder_free(r);
}

int main(void)
{
    lop_apiserver_opts_t ao = {.listen = "127.0.0.1:0"};
    lop_err_t err;
    if (lop_apiserver_start(&ao, &srv, &err) != LOP_OK) {
        fprintf(stderr, "apiserver: %s\n", err.message);
        return 1;
    }
    lop_rest_config_t cfg = {0};
    cfg.server = lop_xstrdup(lop_apiserver_url(srv));
    cfg.qps = -1;
    if (lop_rest_client_new(&cfg, &rest, &err) != LOP_OK) return 1;
    lop_rest_config_cleanup(&cfg);
    T_RUN(test_repeat_aggregates_into_count);
    T_RUN(test_repeat_aggregates_across_other_events);
    T_RUN(test_invalid_utf8_and_long_messages_are_repaired);
    lop_rest_client_free(rest);
    lop_apiserver_stop(srv);
    return T_DONE();
}
