/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the local API server's meta.k8s.io Tables (as_table.h): HumanDuration ages, the
 * printer-column JSONPath subset, the built-in printers' cells on fixed objects and a fixed
 * clock, and over the wire — LIST, GET and WATCH of a built-in kind as Tables with each
 * includeObject, a CRD's additionalPrinterColumns (filters, priority, types) and a CRD without
 * columns (Name, Age), a bad includeObject refused with 400. */
#include "apiserver/as_jsonpath.h"
#include "apiserver/as_table.h"
#include "t.h"
#include "test_apiserver_util.h"

#define TABLE_ACCEPT "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"

static lop_apiserver_t *srv;

static void test_human_duration(void)
{
    static const struct {
        long long s;
        const char *want;
    } cases[] = {
        {-5, "<invalid>"},
        {-1, "0s"},
        {0, "0s"},
        {119, "119s"},
        {120, "2m"},
        {150, "2m30s"},
        {599, "9m59s"},
        {600, "10m"},
        {10799, "179m"},
        {10800, "3h"},
        {11000, "3h3m"},
        {8 * 3600, "8h"},
        {47 * 3600, "47h"},
        {48 * 3600, "2d"},
        {50 * 3600, "2d2h"},
        {8 * 86400, "8d"},
        {729 * 86400, "729d"},
        {730 * 86400, "2y"},
        {731 * 86400, "2y1d"},
        {9 * 365 * 86400LL, "9y"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char b[32];
        T_EQ_STR(as_human_duration(cases[i].s, b, sizeof b), cases[i].want);
    }
    time_t t;
    T_CHECK(as_parse_time("2024-01-02T03:04:05Z", &t) && t == 1704164645);
    T_CHECK(as_parse_time("2024-01-02T03:04:05.123456Z", &t) && t == 1704164645);
    T_CHECK(as_parse_time("2024-01-02T05:04:05+02:00", &t) && t == 1704164645);
    T_CHECK(!as_parse_time("2024-01-02", &t));
    T_CHECK(!as_parse_time("2024-01-02T03:04:05", &t));
    char b[32];
    T_EQ_STR(as_age_cell(NULL, 0, b, sizeof b), "<unknown>");
}

static void test_jsonpath(void)
{
    json_t *o =
        json_loads("{\"spec\":{\"size\":3,\"a.b\":\"dot\",\"list\":[{\"n\":\"x\",\"v\":1},{\"n\":\"y\",\"v\":2}]},"
                   "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"},"
                   "{\"type\":\"Available\",\"status\":\"True\",\"n\":2}]}}",
                   0, NULL);
    static const struct {
        const char *path, *want; /* want: the matches as compact JSON; NULL = invalid path */
    } cases[] = {
        {".spec.size", "[3]"},
        {"{.spec.size}", "[3]"},
        {".spec.missing", "[]"},
        {".spec.list[0].n", "[\"x\"]"},
        {".spec.list[-1].n", "[\"y\"]"},
        {".spec.list[5].n", "[]"},
        {".spec.list[*].v", "[1,2]"},
        {".spec['a.b']", "[\"dot\"]"},
        {".spec[\"size\"]", "[3]"},
        {".status.conditions[?(@.type==\"Available\")].status", "[\"True\"]"},
        {".status.conditions[?(@.type=='Ready')].status", "[\"False\"]"},
        {".status.conditions[?(@.type!=\"Ready\")].type", "[\"Available\"]"},
        {".status.conditions[?(@.n==2)].type", "[\"Available\"]"},
        {".status.conditions[?(@.type==\"Nope\")].status", "[]"},
        {"spec.size", NULL},
        {".spec.list[1:2]", NULL},
        {".spec..size", NULL},
        {".status.conditions[?(@.type)]", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *r = as_jsonpath_eval(o, cases[i].path);
        T_CHECK(as_jsonpath_valid(cases[i].path) == (cases[i].want != NULL));
        if (!cases[i].want) {
            T_CHECK(r == NULL);
            continue;
        }
        char *s = r ? json_dumps(r, JSON_COMPACT) : NULL;
        if (!s || strcmp(s, cases[i].want)) fprintf(stderr, "path %s: got %s\n", cases[i].path, s ? s : "NULL");
        T_EQ_STR(s ? s : "NULL", cases[i].want);
        free(s);
        json_decref(r);
    }
    json_decref(o);
}

/* The cells of a one-object Table of obj (JSON text) for the built-in group/plural at now. */
static json_t *cells_of(const char *group, const char *plural, const char *obj, time_t now, json_t **defs)
{
    as_res_t res = {0};
    res.group = (char *)group;
    res.plural = (char *)plural;
    as_conv_t conv = {.kind = AS_CONV_TABLE, .api_version = "meta.k8s.io/v1", .include = AS_INCLUDE_NONE};
    json_t *o = json_loads(obj, 0, NULL);
    T_CHECK(o != NULL);
    json_t *t = as_table_new(NULL, &res, &conv, &o, 1, NULL, now);
    json_decref(o);
    json_t *cells = json_incref(json_object_get(json_array_get(json_object_get(t, "rows"), 0), "cells"));
    T_CHECK(json_object_get(json_array_get(json_object_get(t, "rows"), 0), "object") == NULL);
    if (defs) *defs = json_incref(json_object_get(t, "columnDefinitions"));
    json_decref(t);
    return cells;
}

static void check_cells(const char *group, const char *plural, const char *obj, time_t now, const char *want)
{
    json_t *c = cells_of(group, plural, obj, now, NULL);
    char *s = json_dumps(c, JSON_COMPACT);
    if (strcmp(s, want)) fprintf(stderr, "%s/%s: got %s\n", group, plural, s);
    T_EQ_STR(s, want);
    free(s);
    json_decref(c);
}

#define T0         1704164645 /* 2024-01-02T03:04:05Z */
#define META(name) "\"metadata\":{\"name\":\"" name "\",\"creationTimestamp\":\"2024-01-02T03:04:05Z\"}"

static void test_builtin_printers(void)
{
    json_t *defs = NULL;
    json_decref(cells_of("apps", "deployments", "{" META("web") "}", T0, &defs));
    static const char *const names[] = {"Name", "Ready",      "Up-to-date", "Available",
                                        "Age",  "Containers", "Images",     "Selector"};
    static const int prio[] = {0, 0, 0, 0, 0, 1, 1, 1};
    T_EQ_INT(json_array_size(defs), 8);
    for (size_t i = 0; i < 8; i++) {
        T_EQ_STR(jstr(json_array_get(defs, i), "name"), names[i]);
        T_EQ_INT(json_integer_value(json_object_get(json_array_get(defs, i), "priority")), prio[i]);
        T_CHECK(json_is_string(json_object_get(json_array_get(defs, i), "description")));
    }
    T_EQ_STR(jstr(json_array_get(defs, 0), "format"), "name");
    T_EQ_STR(jstr(json_array_get(defs, 2), "type"), "integer");
    json_decref(defs);
    check_cells("apps", "deployments",
                "{" META("web") ",\"spec\":{\"replicas\":3,\"selector\":{\"matchLabels\":{\"b\":\"2\",\"app\":\"web\"},"
                                "\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"In\",\"values\":[\"z\",\"a\"]},"
                                "{\"key\":\"x\",\"operator\":\"DoesNotExist\"}]},"
                                "\"template\":{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"i:1\"},{\"name\":"
                                "\"b\",\"image\":\"j\"}]}}},"
                                "\"status\":{\"readyReplicas\":2,\"updatedReplicas\":3,\"availableReplicas\":1}}",
                T0 + 150, "[\"web\",\"2/3\",3,1,\"2m30s\",\"a,b\",\"i:1,j\",\"!x,app=web,b=2,tier in (a,z)\"]");
    check_cells("", "configmaps", "{" META("c") ",\"data\":{\"a\":\"1\",\"b\":\"2\"},\"binaryData\":{\"c\":\"\"}}",
                T0 + 5, "[\"c\",3,\"5s\"]");
    check_cells("", "secrets", "{" META("s") ",\"data\":{\"a\":\"MQ==\"}}", T0, "[\"s\",\"Opaque\",1,\"0s\"]");
    check_cells("", "namespaces", "{" META("n") "}", T0 + 3600 * 30, "[\"n\",\"Active\",\"30h\"]");
    check_cells(
        "", "services",
        "{" META("svc") ",\"spec\":{\"type\":\"NodePort\",\"clusterIP\":\"10.0.0.1\",\"selector\":{\"app\":\"w\"},"
                        "\"ports\":[{\"port\":80,\"nodePort\":30080},{\"port\":53,\"protocol\":\"UDP\"}]}}",
        T0, "[\"svc\",\"NodePort\",\"10.0.0.1\",\"<none>\",\"80:30080/TCP,53/UDP\",\"0s\",\"app=w\"]");
    check_cells("", "services", "{" META("lb") ",\"spec\":{\"type\":\"LoadBalancer\"}}", T0,
                "[\"lb\",\"LoadBalancer\",\"<none>\",\"<pending>\",\"<none>\",\"0s\",\"<none>\"]");
    /* a pod: one container waiting (its reason wins), one ready; restarts with the last time */
    check_cells(
        "", "pods",
        "{" META("p") ",\"spec\":{\"nodeName\":\"n1\",\"containers\":[{\"name\":\"a\"},{\"name\":\"b\"}]},"
                      "\"status\":{\"phase\":\"Running\",\"podIP\":\"10.1.0.5\",\"containerStatuses\":["
                      "{\"name\":\"a\",\"ready\":true,\"restartCount\":0,\"state\":{\"running\":{}}},"
                      "{\"name\":\"b\",\"ready\":false,\"restartCount\":4,\"state\":{\"waiting\":{\"reason\":"
                      "\"CrashLoopBackOff\"}},"
                      "\"lastState\":{\"terminated\":{\"finishedAt\":\"2024-01-02T03:05:05Z\"}}}]}}",
        T0 + 120,
        "[\"p\",\"1/2\",\"CrashLoopBackOff\",\"4 (60s ago)\",\"2m\",\"10.1.0.5\",\"n1\",\"<none>\",\"<none>\"]");
    check_cells(
        "", "pods",
        "{\"metadata\":{\"name\":\"q\",\"deletionTimestamp\":\"2024-01-02T03:04:05Z\"},\"spec\":{\"containers\":[{}]}}",
        T0, "[\"q\",\"0/1\",\"Terminating\",\"0\",\"<unknown>\",\"<none>\",\"<none>\",\"<none>\",\"<none>\"]");
    check_cells(
        "", "pods",
        "{" META("i") ",\"spec\":{\"initContainers\":[{},{}],\"containers\":[{}]},\"status\":{\"phase\":\"Pending\","
                      "\"initContainerStatuses\":[{\"state\":{\"terminated\":{\"exitCode\":0}}},{\"state\":{"
                      "\"running\":{}}}]}}",
        T0, "[\"i\",\"0/1\",\"Init:1/2\",\"0\",\"0s\",\"<none>\",\"<none>\",\"<none>\",\"<none>\"]");
    /* events: both APIs' field names, count defaulting to 1, the involved object lowercased */
    check_cells(
        "", "events",
        "{" META(
            "e") ",\"type\":\"Warning\",\"reason\":\"Failed\",\"message\":\" boom \\n\","
                 "\"involvedObject\":{\"kind\":\"Pod\",\"name\":\"p\",\"fieldPath\":\"spec.containers{a}\"},"
                 "\"source\":{\"component\":\"kubelet\",\"host\":\"n1\"},\"firstTimestamp\":\"2024-01-02T03:04:05Z\","
                 "\"lastTimestamp\":\"2024-01-02T03:06:05Z\",\"count\":4}",
        T0 + 180,
        "[\"60s\",\"Warning\",\"Failed\",\"pod/p\",\"spec.containers{a}\",\"kubelet, n1\",\"boom\",\"3m\",4,\"e\"]");
    check_cells("events.k8s.io", "events",
                "{" META("e2") ",\"type\":\"Normal\",\"reason\":\"R\",\"note\":\"n\",\"regarding\":{\"kind\":\"Node\"},"
                               "\"eventTime\":\"2024-01-02T03:04:05.000001Z\",\"reportingController\":\"c\","
                               "\"reportingInstance\":\"i\"}",
                T0 + 10, "[\"10s\",\"Normal\",\"R\",\"node\",\"\",\"c, i\",\"n\",\"10s\",1,\"e2\"]");
    check_cells("batch", "jobs",
                "{" META("j") ",\"spec\":{\"completions\":2,\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\","
                              "\"image\":\"busybox\"}]}}},"
                              "\"status\":{\"succeeded\":2,\"startTime\":\"2024-01-02T03:04:05Z\",\"completionTime\":"
                              "\"2024-01-02T03:04:35Z\","
                              "\"conditions\":[{\"type\":\"Complete\",\"status\":\"True\"}]}}",
                T0 + 600, "[\"j\",\"Complete\",\"2/2\",\"30s\",\"10m\",\"c\",\"busybox\",\"\"]");
    check_cells("coordination.k8s.io", "leases", "{" META("l") ",\"spec\":{\"holderIdentity\":\"me\"}}", T0,
                "[\"l\",\"me\",\"0s\"]");
    check_cells("", "serviceaccounts", "{" META("sa") "}", T0, "[\"sa\",0,\"0s\"]");
    /* kinds without a printer: the default convertor's Name and Created At */
    check_cells("apiextensions.k8s.io", "customresourcedefinitions", "{" META("x.example.com") "}", T0,
                "[\"x.example.com\",\"2024-01-02T03:04:05Z\"]");
}

/* ---- over the wire ---- */

#define CMPATH "/api/v1/namespaces/tbl/configmaps"

static void test_list_get_as_table(void)
{
    resp_t r = t_http(srv, "POST", "/api/v1/namespaces", "{\"metadata\":{\"name\":\"tbl\"}}", NULL);
    resp_free(&r);
    r = t_http(srv, "POST", CMPATH, "{\"metadata\":{\"name\":\"a\"},\"data\":{\"k\":\"v\",\"l\":\"w\"}}", NULL);
    T_EQ_INT(r.code, 201);
    resp_free(&r);
    r = t_http_accept(srv, "GET", CMPATH, NULL, NULL, TABLE_ACCEPT);
    T_EQ_INT(r.code, 200);
    T_EQ_STR(jstr(r.json, "kind"), "Table");
    T_EQ_STR(jstr(r.json, "apiVersion"), "meta.k8s.io/v1");
    T_CHECK(jstr(r.json, "metadata.resourceVersion") != NULL);
    json_t *defs = json_object_get(r.json, "columnDefinitions");
    T_EQ_INT(json_array_size(defs), 3);
    T_EQ_STR(jstr(json_array_get(defs, 1), "name"), "Data");
    json_t *row = json_array_get(json_object_get(r.json, "rows"), 0);
    T_EQ_STR(json_string_value(json_array_get(json_object_get(row, "cells"), 0)), "a");
    T_EQ_INT(json_integer_value(json_array_get(json_object_get(row, "cells"), 1)), 2);
    T_EQ_STR(jstr(row, "object.kind"), "PartialObjectMetadata"); /* includeObject defaults to Metadata */
    T_EQ_STR(jstr(row, "object.metadata.name"), "a");
    resp_free(&r);
    r = t_http_accept(srv, "GET", CMPATH "?includeObject=Object", NULL, NULL, TABLE_ACCEPT);
    row = json_array_get(json_object_get(r.json, "rows"), 0);
    T_EQ_STR(jstr(row, "object.kind"), "ConfigMap");
    T_EQ_STR(jstr(row, "object.data.k"), "v");
    resp_free(&r);
    r = t_http_accept(srv, "GET", CMPATH "/a?includeObject=None", NULL, NULL,
                      "application/json;as=Table;v=v1beta1;g=meta.k8s.io");
    T_EQ_INT(r.code, 200);
    T_EQ_STR(jstr(r.json, "apiVersion"), "meta.k8s.io/v1beta1");
    T_EQ_INT(json_array_size(json_object_get(r.json, "rows")), 1);
    T_CHECK(json_object_get(json_array_get(json_object_get(r.json, "rows"), 0), "object") == NULL);
    T_CHECK(jstr(r.json, "metadata.resourceVersion") != NULL);
    resp_free(&r);
    r = t_http_accept(srv, "GET", CMPATH "?limit=1&labelSelector=nope%3Dx", NULL, NULL, TABLE_ACCEPT);
    T_EQ_INT(json_array_size(json_object_get(r.json, "rows")), 0);
    T_CHECK(json_is_array(json_object_get(r.json, "rows")));
    resp_free(&r);
    r = t_http_accept(srv, "GET", CMPATH "?includeObject=All", NULL, NULL, TABLE_ACCEPT);
    T_EQ_INT(r.code, 400);
    resp_free(&r);
    r = t_http_accept(srv, "GET", CMPATH "/missing", NULL, NULL, TABLE_ACCEPT); /* a Status stays one */
    T_EQ_INT(r.code, 404);
    T_EQ_STR(jstr(r.json, "kind"), "Status");
    resp_free(&r);
}

static void test_watch_as_table(void)
{
    watch_t w;
    watch_start_accept(&w, srv, CMPATH "?watch=1&includeObject=Object", TABLE_ACCEPT);
    T_EQ_INT(watch_wait_lines(&w, 1), 1); /* the initial ADDED of "a" */
    resp_t r = t_http(srv, "POST", CMPATH, "{\"metadata\":{\"name\":\"b\"}}", NULL);
    resp_free(&r);
    T_EQ_INT(watch_wait_lines(&w, 2), 2);
    lop_apiserver_close_watches(srv);
    json_t *ev = watch_finish(&w);
    T_EQ_INT(json_array_size(ev), 2);
    json_t *t0 = json_object_get(json_array_get(ev, 0), "object"),
           *t1 = json_object_get(json_array_get(ev, 1), "object");
    T_EQ_STR(jstr(t0, "kind"), "Table");
    T_EQ_INT(json_array_size(json_object_get(t0, "columnDefinitions")), 3);
    T_CHECK(json_is_null(json_object_get(t1, "columnDefinitions"))); /* headers on the first event only */
    T_EQ_STR(jstr(json_array_get(json_object_get(t1, "rows"), 0), "object.metadata.name"), "b");
    T_EQ_STR(jstr(json_array_get(json_object_get(t1, "rows"), 0), "object.kind"), "ConfigMap");
    json_decref(ev);
}

static const char crd_with_columns[] =
    "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
    "\"metadata\":{\"name\":\"widgets.example.com\"},\"spec\":{\"group\":\"example.com\",\"scope\":\"Namespaced\","
    "\"names\":{\"plural\":\"widgets\",\"singular\":\"widget\",\"kind\":\"Widget\"},\"versions\":["
    "{\"name\":\"v1\",\"served\":true,\"storage\":true,\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\","
    "\"x-kubernetes-preserve-unknown-fields\":true}},\"additionalPrinterColumns\":["
    "{\"name\":\"Size\",\"type\":\"integer\",\"jsonPath\":\".spec.size\"},"
    "{\"name\":\"Ratio\",\"type\":\"number\",\"jsonPath\":\".spec.ratio\"},"
    "{\"name\":\"On\",\"type\":\"boolean\",\"jsonPath\":\".spec.on\"},"
    "{\"name\":\"Tags\",\"type\":\"string\",\"jsonPath\":\".spec.tags\",\"priority\":1},"
    "{\"name\":\"Ready\",\"type\":\"string\",\"jsonPath\":\".status.conditions[?(@.type==\\\"Ready\\\")].status\"},"
    "{\"name\":\"Started\",\"type\":\"date\",\"jsonPath\":\".metadata.creationTimestamp\",\"description\":\"d\"}]},"
    "{\"name\":\"v2\",\"served\":true,\"storage\":false,\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\","
    "\"x-kubernetes-preserve-unknown-fields\":true}}}]}}";

static void test_crd_printer_columns(void)
{
    resp_t r = t_http(srv, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd_with_columns, NULL);
    T_EQ_INT(r.code, 201);
    resp_free(&r);
    r = t_http(srv, "POST", "/apis/example.com/v1/namespaces/tbl/widgets",
               "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w\"},"
               "\"spec\":{\"size\":3,\"ratio\":1.5,\"on\":true,\"tags\":[\"a\",\"b\"]},"
               "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
               NULL);
    T_EQ_INT(r.code, 201);
    resp_free(&r);
    r = t_http_accept(srv, "GET", "/apis/example.com/v1/namespaces/tbl/widgets", NULL, NULL, TABLE_ACCEPT);
    T_EQ_INT(r.code, 200);
    json_t *defs = json_object_get(r.json, "columnDefinitions");
    static const char *const names[] = {"Name", "Size", "Ratio", "On", "Tags", "Ready", "Started"};
    T_EQ_INT(json_array_size(defs), 7);
    for (size_t i = 0; i < 7; i++) T_EQ_STR(jstr(json_array_get(defs, i), "name"), names[i]);
    T_EQ_INT(json_integer_value(json_object_get(json_array_get(defs, 4), "priority")), 1);
    T_EQ_STR(jstr(json_array_get(defs, 6), "type"), "date");
    T_EQ_STR(jstr(json_array_get(defs, 6), "description"), "d");
    json_t *cells = json_object_get(json_array_get(json_object_get(r.json, "rows"), 0), "cells");
    char *s = json_dumps(cells, JSON_COMPACT);
    T_CHECK(!strncmp(s, "[\"w\",3,1.5,true,\"[\\\"a\\\",\\\"b\\\"]\",\"True\",\"", 36));
    free(s);
    T_CHECK(strchr(json_string_value(json_array_get(cells, 6)), 's') != NULL); /* an age like "0s" */
    resp_free(&r);
    /* v2 declares no columns: Name and Age */
    r = t_http_accept(srv, "GET", "/apis/example.com/v2/namespaces/tbl/widgets/w", NULL, NULL, TABLE_ACCEPT);
    T_EQ_INT(r.code, 200);
    defs = json_object_get(r.json, "columnDefinitions");
    T_EQ_INT(json_array_size(defs), 2);
    T_EQ_STR(jstr(json_array_get(defs, 1), "name"), "Age");
    T_EQ_STR(json_string_value(
                 json_array_get(json_object_get(json_array_get(json_object_get(r.json, "rows"), 0), "cells"), 0)),
             "w");
    resp_free(&r);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_ALL);
    T_RUN(test_human_duration);
    T_RUN(test_jsonpath);
    T_RUN(test_builtin_printers);
    srv = t_start(0);
    if (!T_SETUP("start the API server", srv != NULL)) return T_DONE();
    T_RUN(test_list_get_as_table);
    T_RUN(test_watch_as_table);
    T_RUN(test_crd_printer_columns);
    lop_apiserver_stop(srv);
    curl_global_cleanup();
    return T_DONE();
}
