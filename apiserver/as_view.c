/* SPDX-License-Identifier: Apache-2.0 */
/* as_view.c — a stored object as a client sees it: rewritten for the apiVersion that serves it
 * (the two Event APIs share one store) and its PartialObjectMetadata view. See as_view.h. */
#include "apiserver/as_view.h"

#include "apiserver/as_table_print.h"
#include "apiserver/as_util.h"

#include "host/codec/jsonscan.h"

#include <stdlib.h>
#include <string.h>

/* core/v1 Event <-> events.k8s.io/v1 Event field names: one store, two views (the mapping of
 * k8s.io/api/events/v1/types.go, whose fields say which core/v1 field each one replaces). */
static const char *const event_fields_map[][2] = {{"involvedObject", "regarding"},
                                                  {"message", "note"},
                                                  {"source", "deprecatedSource"},
                                                  {"firstTimestamp", "deprecatedFirstTimestamp"},
                                                  {"lastTimestamp", "deprecatedLastTimestamp"},
                                                  {"count", "deprecatedCount"},
                                                  {"reportingComponent", "reportingController"}};

static void convert_event(json_t *c, bool to_events_api)
{
    for (size_t i = 0; i < sizeof event_fields_map / sizeof event_fields_map[0]; i++) {
        const char *from = event_fields_map[i][to_events_api ? 0 : 1];
        const char *to = event_fields_map[i][to_events_api ? 1 : 0];
        json_t *v = json_object_get(c, from);
        if (v) {
            json_object_set(c, to, v);
            json_object_del(c, from);
        }
    }
}

json_t *as_served_obj(const as_res_t *res, const json_t *obj)
{
    const json_t *av = json_object_get(obj, "apiVersion");
    if (json_is_string(av) && !strcmp(json_string_value(av), res->api_version)) return json_incref((json_t *)obj);
    json_t *c = json_copy((json_t *)obj);
    if (!strcmp(res->kind, "Event") && !res->is_cr) {
        json_t *o = json_object(); /* keep kind/apiVersion/metadata first */
        json_object_set_new(o, "kind", json_string("Event"));
        json_object_set_new(o, "apiVersion", json_string(res->api_version));
        json_object_update(o, c);
        json_decref(c);
        c = o;
        convert_event(c, !strcmp(res->group, "events.k8s.io"));
    }
    json_object_set_new(c, "apiVersion", json_string(res->api_version));
    return c;
}

char *as_dump_obj(const as_res_t *res, const json_t *obj, size_t *len)
{
    json_t *o = as_served_obj(res, obj);
    char *s = json_dumps(o, JSON_COMPACT | (res->coll->sort_keys ? JSON_SORT_KEYS : 0));
    json_decref(o);
    if (!s) s = lop_xstrdup("{}");
    *len = strlen(s);
    return s;
}

/* ---- metadata-only views (PartialObjectMetadata) ---- */

bool as_partial_meta_span(const char *json, size_t len, size_t *ms, size_t *me)
{
    size_t s, e;
    if (lop_jscan_find(json, len, 0, "metadata", &s, &e) != 1 || json[s] != '{') return false;
    *ms = s;
    *me = e;
    return true;
}

void as_partial_head(lop_buf_t *b, const as_conv_t *conv)
{
    lop_buf_puts(b, "{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":");
    lop_buf_json_str(b, conv->api_version, strlen(conv->api_version));
    lop_buf_puts(b, ",\"metadata\":");
}

void as_partial_from_json(lop_buf_t *b, const as_conv_t *conv, const char *json, size_t len)
{
    size_t ms, me;
    as_partial_head(b, conv);
    if (as_partial_meta_span(json, len, &ms, &me))
        lop_buf_append(b, json + ms, me - ms);
    else
        lop_buf_puts(b, "{}");
    lop_buf_putc(b, '}');
}

/* ---- the /scale view (autoscaling/v1 Scale) ---- */

json_t *as_scale_view(as_res_t *res, const json_t *obj)
{
    json_t *s = json_object();
    json_object_set_new(s, "kind", json_string("Scale"));
    json_object_set_new(s, "apiVersion", json_string("autoscaling/v1"));
    json_t *m = json_object();
    const char *keys[] = {"name", "namespace", "uid", "resourceVersion", "creationTimestamp", NULL};
    const json_t *om = json_object_get(obj, "metadata");
    for (int i = 0; keys[i]; i++) {
        json_t *v = json_object_get(om, keys[i]);
        if (v) json_object_set(m, keys[i], v);
    }
    json_object_set_new(s, "metadata", m);
    json_t *spec = json_object();
    json_t *sr = res->scale_spec ? as_path_get(obj, res->scale_spec) : NULL;
    json_object_set_new(spec, "replicas", json_integer(json_is_integer(sr) ? json_integer_value(sr) : 0));
    json_object_set_new(s, "spec", spec);
    json_t *st = json_object();
    json_t *rr = res->scale_status ? as_path_get(obj, res->scale_status) : NULL;
    json_object_set_new(st, "replicas", json_integer(json_is_integer(rr) ? json_integer_value(rr) : 0));
    json_t *sel = res->scale_selector ? as_path_get(obj, res->scale_selector) : NULL;
    if (json_is_string(sel)) {
        json_object_set(st, "selector", sel);
    } else if (!res->is_cr && json_is_object(json_object_get(json_object_get(obj, "spec"), "selector"))) {
        /* apps/v1 workloads: spec.selector as a selector string (their scale storage) */
        char *ss = as_label_selector_string(json_object_get(json_object_get(obj, "spec"), "selector"));
        if (*ss) json_object_set_new(st, "selector", json_string(ss));
        free(ss);
    }
    json_object_set_new(s, "status", st);
    return s;
}
