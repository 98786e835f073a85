/* SPDX-License-Identifier: Apache-2.0 */
/* as_table_print.c — the built-in kinds' columns and cells, after kubernetes
 * pkg/printers/internalversion/printers.go (cells always in their `-o wide` form, as the API
 * server computes them; values the API server would have defaulted — replicas 1, Service type
 * ClusterIP, Pod phase Pending — are read with those defaults, since this server does not
 * default them). See as_table_print.h. */
#include "apiserver/as_table_print.h"

#include "apiserver/as_table.h"
#include "apiserver/as_util.h"

#include "host/util/buf.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char as_desc_name[] = "The object's name, unique within its namespace (or the cluster when it has none).";
const char as_desc_created[] = "When the server stored the object first (an RFC 3339 time, shown as an age).";

/* ---- reading objects ---- */

static const char *str_at(const json_t *o, const char *path)
{
    const json_t *v = as_path_get(o, path);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static json_int_t int_at(const json_t *o, const char *path, json_int_t dflt)
{
    const json_t *v = as_path_get(o, path);
    return json_is_integer(v) ? json_integer_value(v) : dflt;
}

static const char *nonempty(const char *s, const char *dflt) { return s && *s ? s : dflt; }

static void push_s(json_t *cells, const char *s) { json_array_append_new(cells, json_string(s ? s : "")); }
static void push_i(json_t *cells, json_int_t v) { json_array_append_new(cells, json_integer(v)); }

static void push_age_of(json_t *cells, const char *ts, time_t now)
{
    char b[32];
    push_s(cells, as_age_cell(ts, now, b, sizeof b));
}

static void push_age(json_t *cells, const json_t *o, time_t now)
{
    push_age_of(cells, str_at(o, "metadata.creationTimestamp"), now);
}

static void push_name(json_t *cells, const json_t *o) { push_s(cells, nonempty(str_at(o, "metadata.name"), "")); }

/* The string members `field` of the objects in arr joined with sep ("" when none). */
static void push_joined(json_t *cells, const json_t *arr, const char *field, const char *sep)
{
    lop_buf_t b = LOP_BUF_INIT;
    size_t i;
    const json_t *v;
    json_array_foreach(arr, i, v)
    {
        const char *s = field ? str_at(v, field) : json_string_value(v);
        if (!s) continue;
        if (b.len) lop_buf_puts(&b, sep);
        lop_buf_puts(&b, s);
    }
    push_s(cells, b.len ? b.data : "");
    lop_buf_free(&b);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* "k=v,k2=v2" of a string map sorted by key (labels.FormatLabels), or dflt when empty. */
static void push_labels(json_t *cells, const json_t *map, const char *dflt)
{
    size_t n = json_object_size(map), i = 0;
    if (!n) {
        push_s(cells, dflt);
        return;
    }
    char **kv = lop_xcalloc(n, sizeof *kv);
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)map, k, v)
    {
        size_t len = strlen(k) + strlen(nonempty(json_string_value(v), "")) + 2;
        kv[i] = lop_xmalloc(len);
        snprintf(kv[i++], len, "%s=%s", k, nonempty(json_string_value(v), ""));
    }
    qsort(kv, i, sizeof *kv, cmp_str);
    lop_buf_t b = LOP_BUF_INIT;
    for (size_t j = 0; j < i; j++) {
        if (j) lop_buf_putc(&b, ',');
        lop_buf_puts(&b, kv[j]);
        free(kv[j]);
    }
    free(kv);
    push_s(cells, b.data);
    lop_buf_free(&b);
}

/* metav1.LabelSelector as labels.Selector.String(): requirements sorted by key, `k=v`,
 * `k in (a,b)`, `k notin (a,b)`, `k`, `!k`; "" for an empty selector. */
char *as_label_selector_string(const json_t *sel)
{
    size_t cap = json_object_size(json_object_get(sel, "matchLabels")) +
                 json_array_size(json_object_get(sel, "matchExpressions")),
           n = 0;
    char **reqs = lop_xcalloc(cap + 1, sizeof *reqs);
    const char *k;
    const json_t *v;
    json_object_foreach(json_object_get(sel, "matchLabels"), k, v)
    {
        lop_buf_t b = LOP_BUF_INIT;
        lop_buf_printf(&b, "%s=%s", k, nonempty(json_string_value(v), ""));
        reqs[n++] = lop_buf_steal(&b);
    }
    size_t i;
    json_array_foreach(json_object_get(sel, "matchExpressions"), i, v)
    {
        const char *key = nonempty(str_at(v, "key"), ""), *op = nonempty(str_at(v, "operator"), "");
        lop_buf_t b = LOP_BUF_INIT;
        if (!strcmp(op, "Exists") || !strcmp(op, "DoesNotExist")) {
            lop_buf_printf(&b, "%s%s", op[0] == 'D' ? "!" : "", key);
        } else {
            const json_t *vals = json_object_get(v, "values");
            size_t nv = json_array_size(vals), j;
            const char **sorted = lop_xcalloc(nv + 1, sizeof *sorted);
            for (j = 0; j < nv; j++) sorted[j] = nonempty(json_string_value(json_array_get(vals, j)), "");
            qsort(sorted, nv, sizeof *sorted, cmp_str);
            lop_buf_printf(&b, "%s %s (", key, !strcmp(op, "NotIn") ? "notin" : "in");
            for (j = 0; j < nv; j++) lop_buf_printf(&b, "%s%s", j ? "," : "", sorted[j]);
            lop_buf_putc(&b, ')');
            free(sorted);
        }
        reqs[n++] = lop_buf_steal(&b);
    }
    qsort(reqs, n, sizeof *reqs, cmp_str);
    lop_buf_t out = LOP_BUF_INIT;
    for (size_t j = 0; j < n; j++) {
        if (j) lop_buf_putc(&out, ',');
        lop_buf_puts(&out, reqs[j]);
        free(reqs[j]);
    }
    free(reqs);
    return out.len ? lop_buf_steal(&out) : lop_xstrdup("");
}

static void push_selector(json_t *cells, const json_t *sel)
{
    char *s = as_label_selector_string(sel);
    push_s(cells, s);
    free(s);
}

static void push_ratio(json_t *cells, json_int_t a, json_int_t b)
{
    char s[64];
    snprintf(s, sizeof s, "%lld/%lld", (long long)a, (long long)b);
    push_s(cells, s);
}

/* Containers, Images (and Selector) of a pod template owner: the wide columns of workloads. */
static void push_workload_wide(json_t *cells, const json_t *o, bool selector)
{
    const json_t *cs = as_path_get(o, "spec.template.spec.containers");
    push_joined(cells, cs, "name", ",");
    push_joined(cells, cs, "image", ",");
    if (selector) push_selector(cells, as_path_get(o, "spec.selector"));
}

#define COL_NAME                                  \
    {                                             \
        "Name", "string", "name", as_desc_name, 0 \
    }
#define COL_AGE                                 \
    {                                           \
        "Age", "string", "", as_desc_created, 0 \
    }
#define COL_END                   \
    {                             \
        NULL, NULL, NULL, NULL, 0 \
    }
#define COLS_WORKLOAD                                                               \
    {"Containers", "string", "", "The names of the pod template's containers.", 1}, \
    {                                                                               \
        "Images", "string", "", "The images of the pod template's containers.", 1   \
    }
#define COL_SELECTOR                                                        \
    {                                                                       \
        "Selector", "string", "", "The label query that picks the pods.", 1 \
    }

/* ---- core/v1 ---- */

static const as_table_col_t pod_cols[] = {
    COL_NAME,
    {"Ready", "string", "", "Ready containers out of all containers of the pod.", 0},
    {"Status", "string", "", "The pod's phase, or why it is not running (a container's waiting or exit reason).", 0},
    {"Restarts", "string", "", "How often the pod's containers restarted, and how long ago the last one did.", 0},
    COL_AGE,
    {"IP", "string", "", "The pod's first IP address.", 1},
    {"Node", "string", "", "The node the pod is bound to.", 1},
    {"Nominated Node", "string", "", "The node a preempting pod waits for.", 1},
    {"Readiness Gates", "string", "", "Readiness gates whose condition is True, out of all of them.", 1},
    COL_END,
};

/* The Status cell from the init containers; true while they are still running. */
static bool pod_init_reason(const json_t *o, char *reason, size_t n)
{
    const json_t *st = as_path_get(o, "status.initContainerStatuses");
    size_t i, total = json_array_size(as_path_get(o, "spec.initContainers"));
    const json_t *c;
    json_array_foreach(st, i, c)
    {
        const json_t *term = as_path_get(c, "state.terminated");
        const char *wait = str_at(c, "state.waiting.reason");
        if (term && int_at(term, "exitCode", 0) == 0) continue;
        if (json_is_true(json_object_get(c, "started")) && !term) continue; /* a running sidecar */
        if (term) {
            const char *r = str_at(term, "reason");
            if (r && *r)
                snprintf(reason, n, "Init:%s", r);
            else if (int_at(term, "signal", 0))
                snprintf(reason, n, "Init:Signal:%lld", (long long)int_at(term, "signal", 0));
            else
                snprintf(reason, n, "Init:ExitCode:%lld", (long long)int_at(term, "exitCode", 0));
        } else if (wait && *wait && strcmp(wait, "PodInitializing")) {
            snprintf(reason, n, "Init:%s", wait);
        } else {
            snprintf(reason, n, "Init:%zu/%zu", i, total);
        }
        return true;
    }
    return false;
}

/* The latest lastState.terminated.finishedAt of the containers (0 when none). */
static time_t pod_last_restart(const json_t *st)
{
    time_t last = 0, t;
    size_t i;
    const json_t *c;
    json_array_foreach(st, i, c)
    {
        if (as_parse_time(str_at(c, "lastState.terminated.finishedAt"), &t) && t > last) last = t;
    }
    return last;
}

static void pod_row(const json_t *o, json_t *cells, time_t now)
{
    char reason[256];
    snprintf(reason, sizeof reason, "%s",
             nonempty(str_at(o, "status.reason"), nonempty(str_at(o, "status.phase"), "Pending")));
    const json_t *st = as_path_get(o, "status.containerStatuses");
    json_int_t restarts = 0, ready = 0;
    bool running = false;
    bool init = pod_init_reason(o, reason, sizeof reason);
    for (size_t i = json_array_size(st); !init && i-- > 0;) {
        const json_t *c = json_array_get(st, i);
        restarts += int_at(c, "restartCount", 0);
        const json_t *term = as_path_get(c, "state.terminated");
        const char *wait = str_at(c, "state.waiting.reason");
        if (wait && *wait)
            snprintf(reason, sizeof reason, "%s", wait);
        else if (term && nonempty(str_at(term, "reason"), NULL))
            snprintf(reason, sizeof reason, "%s", str_at(term, "reason"));
        else if (term && int_at(term, "signal", 0))
            snprintf(reason, sizeof reason, "Signal:%lld", (long long)int_at(term, "signal", 0));
        else if (term)
            snprintf(reason, sizeof reason, "ExitCode:%lld", (long long)int_at(term, "exitCode", 0));
        else if (json_is_true(json_object_get(c, "ready")) && as_path_get(c, "state.running")) {
            running = true;
            ready++;
        }
    }
    if (!strcmp(reason, "Completed") && running) snprintf(reason, sizeof reason, "Running");
    const char *phase = nonempty(str_at(o, "status.phase"), "");
    if (as_path_get(o, "metadata.deletionTimestamp") && strcmp(phase, "Succeeded") && strcmp(phase, "Failed"))
        snprintf(reason, sizeof reason, "%s",
                 !strcmp(nonempty(str_at(o, "status.reason"), ""), "NodeLost") ? "Unknown" : "Terminating");
    push_name(cells, o);
    push_ratio(cells, ready, (json_int_t)json_array_size(as_path_get(o, "spec.containers")));
    push_s(cells, reason);
    char rs[96], age[32];
    time_t last = pod_last_restart(st);
    if (restarts && last)
        snprintf(rs, sizeof rs, "%lld (%s ago)", (long long)restarts,
                 as_human_duration((long long)(now - last), age, sizeof age));
    else
        snprintf(rs, sizeof rs, "%lld", (long long)restarts);
    push_s(cells, rs);
    push_age(cells, o, now);
    push_s(cells, nonempty(str_at(json_array_get(as_path_get(o, "status.podIPs"), 0), "ip"),
                           nonempty(str_at(o, "status.podIP"), "<none>")));
    push_s(cells, nonempty(str_at(o, "spec.nodeName"), "<none>"));
    push_s(cells, nonempty(str_at(o, "status.nominatedNodeName"), "<none>"));
    const json_t *gates = as_path_get(o, "spec.readinessGates");
    if (!json_array_size(gates)) {
        push_s(cells, "<none>");
        return;
    }
    json_int_t ok = 0;
    size_t i, j;
    const json_t *g, *c;
    json_array_foreach(gates, i, g)
    {
        json_array_foreach(as_path_get(o, "status.conditions"), j, c)
        {
            const char *t = str_at(c, "type"), *gt = str_at(g, "conditionType");
            if (t && gt && !strcmp(t, gt) && !strcmp(nonempty(str_at(c, "status"), ""), "True")) ok++;
        }
    }
    push_ratio(cells, ok, (json_int_t)json_array_size(gates));
}

static const as_table_col_t cm_cols[] = {
    COL_NAME, {"Data", "integer", "", "How many keys data and binaryData hold.", 0}, COL_AGE, COL_END};

static void cm_row(const json_t *o, json_t *cells, time_t now)
{
    push_name(cells, o);
    push_i(cells, (json_int_t)(json_object_size(json_object_get(o, "data")) +
                               json_object_size(json_object_get(o, "binaryData"))));
    push_age(cells, o, now);
}

static const as_table_col_t secret_cols[] = {COL_NAME,
                                             {"Type", "string", "", "What the secret holds (its type).", 0},
                                             {"Data", "integer", "", "How many keys data holds.", 0},
                                             COL_AGE,
                                             COL_END};

static void secret_row(const json_t *o, json_t *cells, time_t now)
{
    push_name(cells, o);
    push_s(cells, nonempty(str_at(o, "type"), "Opaque"));
    push_i(cells, (json_int_t)json_object_size(json_object_get(o, "data")));
    push_age(cells, o, now);
}

static const as_table_col_t ns_cols[] = {
    COL_NAME, {"Status", "string", "", "The namespace's phase: Active or Terminating.", 0}, COL_AGE, COL_END};

static void ns_row(const json_t *o, json_t *cells, time_t now)
{
    push_name(cells, o);
    push_s(cells, nonempty(str_at(o, "status.phase"), "Active"));
    push_age(cells, o, now);
}

static const as_table_col_t svc_cols[] = {
    COL_NAME,
    {"Type", "string", "", "How the service is exposed: ClusterIP, NodePort, LoadBalancer or ExternalName.", 0},
    {"Cluster-IP", "string", "", "The service's virtual IP inside the cluster.", 0},
    {"External-IP", "string", "", "Addresses the service is reachable at from outside.", 0},
    {"Port(s)", "string", "", "The ports the service exposes (port[:nodePort]/protocol).", 0},
    COL_AGE,
    {"Selector", "string", "", "The labels of the pods the service sends traffic to.", 1},
    COL_END,
};

static void svc_external_ip(json_t *cells, const json_t *o, const char *type)
{
    const json_t *ext = as_path_get(o, "spec.externalIPs");
    if (!strcmp(type, "ExternalName")) {
        push_s(cells, nonempty(str_at(o, "spec.externalName"), ""));
    } else if (!strcmp(type, "LoadBalancer")) {
        json_t *all = json_array();
        size_t i;
        const json_t *in;
        json_array_foreach(as_path_get(o, "status.loadBalancer.ingress"), i, in)
        {
            const char *a = nonempty(str_at(in, "ip"), str_at(in, "hostname"));
            if (a) json_array_append_new(all, json_string(a));
        }
        if (json_is_array(ext)) json_array_extend(all, (json_t *)ext);
        if (json_array_size(all))
            push_joined(cells, all, NULL, ",");
        else
            push_s(cells, "<pending>");
        json_decref(all);
    } else if (!strcmp(type, "ClusterIP") || !strcmp(type, "NodePort")) {
        if (json_array_size(ext))
            push_joined(cells, ext, NULL, ",");
        else
            push_s(cells, "<none>");
    } else {
        push_s(cells, "<unknown>");
    }
}

static void svc_row(const json_t *o, json_t *cells, time_t now)
{
    const char *type = nonempty(str_at(o, "spec.type"), "ClusterIP");
    push_name(cells, o);
    push_s(cells, type);
    push_s(cells, nonempty(str_at(o, "spec.clusterIP"), "<none>"));
    svc_external_ip(cells, o, type);
    lop_buf_t b = LOP_BUF_INIT;
    size_t i;
    const json_t *p;
    json_array_foreach(as_path_get(o, "spec.ports"), i, p)
    {
        json_int_t np = int_at(p, "nodePort", 0);
        if (b.len) lop_buf_putc(&b, ',');
        lop_buf_printf(&b, "%lld", (long long)int_at(p, "port", 0));
        if (np > 0) lop_buf_printf(&b, ":%lld", (long long)np);
        lop_buf_printf(&b, "/%s", nonempty(str_at(p, "protocol"), "TCP"));
    }
    push_s(cells, b.len ? b.data : "<none>");
    lop_buf_free(&b);
    push_age(cells, o, now);
    push_labels(cells, as_path_get(o, "spec.selector"), "<none>");
}

static const as_table_col_t sa_cols[] = {
    COL_NAME, {"Secrets", "integer", "", "How many secrets the service account lists.", 0}, COL_AGE, COL_END};

static void sa_row(const json_t *o, json_t *cells, time_t now)
{
    push_name(cells, o);
    push_i(cells, (json_int_t)json_array_size(json_object_get(o, "secrets")));
    push_age(cells, o, now);
}

static const as_table_col_t event_cols[] = {
    {"Last Seen", "string", "", "How long ago the event was last seen.", 0},
    {"Type", "string", "", "Normal or Warning.", 0},
    {"Reason", "string", "", "Why the event happened, in one word.", 0},
    {"Object", "string", "", "The object the event is about (kind/name).", 0},
    {"Subobject", "string", "", "The part of the object the event is about (a fieldPath).", 1},
    {"Source", "string", "", "The component that reported the event.", 1},
    {"Message", "string", "", "What happened, for a human.", 0},
    {"First Seen", "string", "", "How long ago the event was first seen.", 1},
    {"Count", "string", "", "How often the event happened.", 1},
    {"Name", "string", "name", as_desc_name, 1},
    COL_END,
};

/* A member of a core/v1 Event, or its events.k8s.io/v1 name (one store, two views). */
static const json_t *ev_get(const json_t *o, const char *core, const char *events_api)
{
    const json_t *v = as_path_get(o, core);
    return v ? v : as_path_get(o, events_api);
}

static void event_row(const json_t *o, json_t *cells, time_t now)
{
    char first[32], last[32];
    const char *ft = json_string_value(ev_get(o, "firstTimestamp", "deprecatedFirstTimestamp"));
    as_age_cell(ft ? ft : json_string_value(json_object_get(o, "eventTime")), now, first, sizeof first);
    const char *lt = json_string_value(ev_get(o, "lastTimestamp", "deprecatedLastTimestamp"));
    if (lt)
        as_age_cell(lt, now, last, sizeof last);
    else
        snprintf(last, sizeof last, "%s", first);
    const json_t *cnt = ev_get(o, "count", "deprecatedCount");
    json_int_t count = json_is_integer(cnt) ? json_integer_value(cnt) : 0;
    if (json_is_object(json_object_get(o, "series"))) {
        as_age_cell(str_at(o, "series.lastObservedTime"), now, last, sizeof last);
        count = int_at(o, "series.count", 0);
    } else if (count == 0) {
        count = 1; /* a singleton event */
    }
    const json_t *inv = ev_get(o, "involvedObject", "regarding");
    char target[600], kind[256];
    snprintf(kind, sizeof kind, "%s", nonempty(str_at(inv, "kind"), ""));
    for (char *p = kind; *p; p++) *p = (char)tolower((unsigned char)*p);
    const char *iname = nonempty(str_at(inv, "name"), NULL);
    snprintf(target, sizeof target, "%s%s%s", kind, iname ? "/" : "", iname ? iname : "");
    const json_t *src = ev_get(o, "source", "deprecatedSource");
    const char *comp =
        nonempty(str_at(src, "component"),
                 nonempty(json_string_value(ev_get(o, "reportingComponent", "reportingController")), ""));
    const char *inst = nonempty(str_at(src, "host"), nonempty(str_at(o, "reportingInstance"), ""));
    char source[600];
    snprintf(source, sizeof source, "%s%s%s", comp, *inst ? ", " : "", inst);
    const char *msg = nonempty(json_string_value(ev_get(o, "message", "note")), "");
    while (isspace((unsigned char)*msg)) msg++;
    size_t ml = strlen(msg);
    while (ml && isspace((unsigned char)msg[ml - 1])) ml--;
    push_s(cells, last);
    push_s(cells, nonempty(str_at(o, "type"), ""));
    push_s(cells, nonempty(str_at(o, "reason"), ""));
    push_s(cells, target);
    push_s(cells, nonempty(str_at(inv, "fieldPath"), ""));
    push_s(cells, source);
    json_array_append_new(cells, json_stringn(msg, ml));
    push_s(cells, first);
    push_i(cells, count);
    push_name(cells, o);
}

/* ---- apps/v1, batch/v1 ---- */

static const as_table_col_t deploy_cols[] = {
    COL_NAME,
    {"Ready", "string", "", "Ready replicas out of the desired ones.", 0},
    {"Up-to-date", "integer", "", "Replicas running the latest pod template.", 0},
    {"Available", "integer", "", "Replicas ready for at least minReadySeconds.", 0},
    COL_AGE,
    COLS_WORKLOAD,
    COL_SELECTOR,
    COL_END,
};

static void deploy_row(const json_t *o, json_t *cells, time_t now)
{
    push_name(cells, o);
    push_ratio(cells, int_at(o, "status.readyReplicas", 0), int_at(o, "spec.replicas", 1));
    push_i(cells, int_at(o, "status.updatedReplicas", 0));
    push_i(cells, int_at(o, "status.availableReplicas", 0));
    push_age(cells, o, now);
    push_workload_wide(cells, o, true);
}

static const as_table_col_t rs_cols[] = {
    COL_NAME,
    {"Desired", "integer", "", "The replicas asked for.", 0},
    {"Current", "integer", "", "The replicas that exist.", 0},
    {"Ready", "integer", "", "The replicas that are ready.", 0},
    COL_AGE,
    COLS_WORKLOAD,
    COL_SELECTOR,
    COL_END,
};

static void rs_row(const json_t *o, json_t *cells, time_t now)
{
    push_name(cells, o);
    push_i(cells, int_at(o, "spec.replicas", 1));
    push_i(cells, int_at(o, "status.replicas", 0));
    push_i(cells, int_at(o, "status.readyReplicas", 0));
    push_age(cells, o, now);
    push_workload_wide(cells, o, true);
}

static const as_table_col_t sts_cols[] = {
    COL_NAME, {"Ready", "string", "", "Ready replicas out of the desired ones.", 0}, COL_AGE, COLS_WORKLOAD, COL_END};

static void sts_row(const json_t *o, json_t *cells, time_t now)
{
    push_name(cells, o);
    push_ratio(cells, int_at(o, "status.readyReplicas", 0), int_at(o, "spec.replicas", 1));
    push_age(cells, o, now);
    push_workload_wide(cells, o, false);
}

static const as_table_col_t ds_cols[] = {
    COL_NAME,
    {"Desired", "integer", "", "Nodes that should run the daemon pod.", 0},
    {"Current", "integer", "", "Nodes that run at least one daemon pod.", 0},
    {"Ready", "integer", "", "Nodes whose daemon pod is ready.", 0},
    {"Up-to-date", "integer", "", "Nodes running the latest pod template.", 0},
    {"Available", "integer", "", "Nodes whose daemon pod is available.", 0},
    {"Node Selector", "string", "", "The labels a node needs to run the pod.", 0},
    COL_AGE,
    COLS_WORKLOAD,
    COL_SELECTOR,
    COL_END,
};

static void ds_row(const json_t *o, json_t *cells, time_t now)
{
    push_name(cells, o);
    push_i(cells, int_at(o, "status.desiredNumberScheduled", 0));
    push_i(cells, int_at(o, "status.currentNumberScheduled", 0));
    push_i(cells, int_at(o, "status.numberReady", 0));
    push_i(cells, int_at(o, "status.updatedNumberScheduled", 0));
    push_i(cells, int_at(o, "status.numberAvailable", 0));
    push_labels(cells, as_path_get(o, "spec.template.spec.nodeSelector"), "<none>");
    push_age(cells, o, now);
    push_workload_wide(cells, o, true);
}

static const as_table_col_t job_cols[] = {
    COL_NAME,
    {"Status", "string", "", "Complete, Failed, Suspended, Running, ... (from the conditions).", 0},
    {"Completions", "string", "", "Succeeded pods out of the completions asked for.", 0},
    {"Duration", "string", "", "How long the job ran (or runs).", 0},
    COL_AGE,
    COLS_WORKLOAD,
    COL_SELECTOR,
    COL_END,
};

static bool has_condition(const json_t *o, const char *type)
{
    size_t i;
    const json_t *c;
    json_array_foreach(as_path_get(o, "status.conditions"), i, c)
    {
        if (!strcmp(nonempty(str_at(c, "type"), ""), type) && !strcmp(nonempty(str_at(c, "status"), ""), "True"))
            return true;
    }
    return false;
}

static void job_row(const json_t *o, json_t *cells, time_t now)
{
    static const char *const conds[] = {"Complete", "Failed", "", "Suspended", "FailureTarget", "SuccessCriteriaMet"};
    const char *status = "Running";
    for (size_t i = 0; i < sizeof conds / sizeof conds[0]; i++) {
        if (!conds[i][0] ? as_path_get(o, "metadata.deletionTimestamp") != NULL : has_condition(o, conds[i])) {
            status = conds[i][0] ? conds[i] : "Terminating";
            break;
        }
    }
    push_name(cells, o);
    push_s(cells, status);
    char comp[96];
    json_int_t ok = int_at(o, "status.succeeded", 0), par = int_at(o, "spec.parallelism", 0);
    if (json_is_integer(as_path_get(o, "spec.completions")))
        snprintf(comp, sizeof comp, "%lld/%lld", (long long)ok, (long long)int_at(o, "spec.completions", 0));
    else if (par > 1)
        snprintf(comp, sizeof comp, "%lld/1 of %lld", (long long)ok, (long long)par);
    else
        snprintf(comp, sizeof comp, "%lld/1", (long long)ok);
    push_s(cells, comp);
    time_t start, end;
    char d[32] = "";
    if (as_parse_time(str_at(o, "status.startTime"), &start)) {
        if (!as_parse_time(str_at(o, "status.completionTime"), &end)) end = now;
        as_human_duration((long long)(end - start), d, sizeof d);
    }
    push_s(cells, d);
    push_age(cells, o, now);
    push_workload_wide(cells, o, true);
}

/* ---- the rest ---- */

static const as_table_col_t lease_cols[] = {
    COL_NAME, {"Holder", "string", "", "Who holds the lease (spec.holderIdentity).", 0}, COL_AGE, COL_END};

static void lease_row(const json_t *o, json_t *cells, time_t now)
{
    push_name(cells, o);
    push_s(cells, nonempty(str_at(o, "spec.holderIdentity"), ""));
    push_age(cells, o, now);
}

static const as_table_col_t rb_cols[] = {
    COL_NAME,
    {"Role", "string", "", "The role the binding grants (Kind/name).", 0},
    COL_AGE,
    {"Users", "string", "", "The users bound.", 1},
    {"Groups", "string", "", "The groups bound.", 1},
    {"ServiceAccounts", "string", "", "The service accounts bound (namespace/name).", 1},
    COL_END,
};

static void rb_row(const json_t *o, json_t *cells, time_t now)
{
    char role[600];
    snprintf(role, sizeof role, "%s/%s", nonempty(str_at(o, "roleRef.kind"), ""),
             nonempty(str_at(o, "roleRef.name"), ""));
    push_name(cells, o);
    push_s(cells, role);
    push_age(cells, o, now);
    lop_buf_t by[3] = {LOP_BUF_INIT, LOP_BUF_INIT, LOP_BUF_INIT};
    size_t i;
    const json_t *s;
    json_array_foreach(json_object_get(o, "subjects"), i, s)
    {
        const char *k = nonempty(str_at(s, "kind"), ""), *n = nonempty(str_at(s, "name"), "");
        int w = !strcmp(k, "User") ? 0 : !strcmp(k, "Group") ? 1 : !strcmp(k, "ServiceAccount") ? 2 : -1;
        if (w < 0) continue;
        if (by[w].len) lop_buf_puts(&by[w], ", ");
        if (w == 2) lop_buf_printf(&by[w], "%s/", nonempty(str_at(s, "namespace"), ""));
        lop_buf_puts(&by[w], n);
    }
    for (int w = 0; w < 3; w++) {
        push_s(cells, by[w].len ? by[w].data : "");
        lop_buf_free(&by[w]);
    }
}

static const as_table_col_t wh_cols[] = {
    COL_NAME, {"Webhooks", "integer", "", "How many webhooks the configuration lists.", 0}, COL_AGE, COL_END};

static void wh_row(const json_t *o, json_t *cells, time_t now)
{
    push_name(cells, o);
    push_i(cells, (json_int_t)json_array_size(json_object_get(o, "webhooks")));
    push_age(cells, o, now);
}

static const as_table_printer_t printers[] = {
    {"", "pods", pod_cols, pod_row},
    {"", "configmaps", cm_cols, cm_row},
    {"", "secrets", secret_cols, secret_row},
    {"", "namespaces", ns_cols, ns_row},
    {"", "services", svc_cols, svc_row},
    {"", "serviceaccounts", sa_cols, sa_row},
    {"", "events", event_cols, event_row},
    {"events.k8s.io", "events", event_cols, event_row},
    {"apps", "deployments", deploy_cols, deploy_row},
    {"apps", "replicasets", rs_cols, rs_row},
    {"apps", "statefulsets", sts_cols, sts_row},
    {"apps", "daemonsets", ds_cols, ds_row},
    {"batch", "jobs", job_cols, job_row},
    {"coordination.k8s.io", "leases", lease_cols, lease_row},
    {"rbac.authorization.k8s.io", "rolebindings", rb_cols, rb_row},
    {"rbac.authorization.k8s.io", "clusterrolebindings", rb_cols, rb_row},
    {"admissionregistration.k8s.io", "mutatingwebhookconfigurations", wh_cols, wh_row},
    {"admissionregistration.k8s.io", "validatingwebhookconfigurations", wh_cols, wh_row},
};

const as_table_printer_t *as_table_printer_find(const char *group, const char *plural)
{
    for (size_t i = 0; i < sizeof printers / sizeof printers[0]; i++)
        if (!strcmp(printers[i].group, group) && !strcmp(printers[i].plural, plural)) return &printers[i];
    return NULL;
}
