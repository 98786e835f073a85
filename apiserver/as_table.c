/* SPDX-License-Identifier: Apache-2.0 */
/* as_table.c — meta.k8s.io Tables (apiserver pkg/endpoints/handlers/response.go asTable, the
 * CRD table convertor, the default convertor): the Table envelope, the rows' objects, CRD printer
 * columns through as_jsonpath.c, and the age strings. Built-in printers are in as_table_print.c.
 * See as_table.h. */
#include "apiserver/as_table.h"

#include "apiserver/as_decode.h"
#include "apiserver/as_jsonpath.h"
#include "apiserver/as_registry.h"
#include "apiserver/as_store.h"
#include "apiserver/as_table_print.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool as_table_include(const char *value, as_include_t *out)
{
    *out = AS_INCLUDE_METADATA;
    if (!value || !*value || !strcmp(value, "Metadata")) return true;
    if (!strcmp(value, "None")) {
        *out = AS_INCLUDE_NONE;
        return true;
    }
    if (!strcmp(value, "Object")) {
        *out = AS_INCLUDE_OBJECT;
        return true;
    }
    return false;
}

/* ---- time ---- */

char *as_human_duration(long long s, char *buf, size_t n)
{
    if (s < -1) {
        snprintf(buf, n, "<invalid>");
        return buf;
    }
    if (s < 0) s = 0;
    long long m = s / 60, h = s / 3600, d = h / 24;
    if (s < 120)
        snprintf(buf, n, "%llds", s);
    else if (m < 10)
        s % 60 ? snprintf(buf, n, "%lldm%llds", m, s % 60) : snprintf(buf, n, "%lldm", m);
    else if (m < 180)
        snprintf(buf, n, "%lldm", m);
    else if (h < 8)
        m % 60 ? snprintf(buf, n, "%lldh%lldm", h, m % 60) : snprintf(buf, n, "%lldh", h);
    else if (h < 48)
        snprintf(buf, n, "%lldh", h);
    else if (h < 24 * 8)
        h % 24 ? snprintf(buf, n, "%lldd%lldh", d, h % 24) : snprintf(buf, n, "%lldd", d);
    else if (h < 24 * 365 * 2)
        snprintf(buf, n, "%lldd", d);
    else if (h < 24 * 365 * 8)
        d % 365 ? snprintf(buf, n, "%lldy%lldd", d / 365, d % 365) : snprintf(buf, n, "%lldy", d / 365);
    else
        snprintf(buf, n, "%lldy", d / 365);
    return buf;
}

bool as_parse_time(const char *s, time_t *out)
{
    if (!s) return false;
    struct tm tm = {0};
    int used = 0;
    if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
               &tm.tm_sec, &used) != 6 ||
        used != 19)
        return false;
    const char *p = s + used;
    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9') return false;
        while (*p >= '0' && *p <= '9') p++;
    }
    long off = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int oh, om, k = 0;
        if (sscanf(p + 1, "%2d:%2d%n", &oh, &om, &k) != 2 || k != 5) return false;
        off = (oh * 3600L + om * 60L) * (*p == '-' ? -1 : 1);
        p += 6;
    } else {
        return false;
    }
    if (*p) return false;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    *out = timegm(&tm) - off;
    return true;
}

char *as_age_cell(const char *ts, time_t now, char *buf, size_t n)
{
    time_t t;
    if (!as_parse_time(ts, &t)) {
        snprintf(buf, n, "<unknown>");
        return buf;
    }
    return as_human_duration((long long)(now - t), buf, n);
}

/* ---- columns ---- */

static json_t *col_json(const char *name, const char *type, const char *format, const char *desc, int priority)
{
    return json_pack("{s:s,s:s,s:s,s:s,s:i}", "name", name, "type", type, "format", format ? format : "", "description",
                     desc ? desc : "", "priority", priority);
}

/* The additionalPrinterColumns of the CRD version res serves (borrowed), or NULL. */
static const json_t *crd_columns(lop_apiserver_t *srv, const as_res_t *res)
{
    as_coll_t *c = as_coll_get(srv, "apiextensions.k8s.io", "customresourcedefinitions", false);
    as_entry_t *e = c && res->crd_name ? as_store_find(c, res->crd_name) : NULL;
    const json_t *versions = e ? json_object_get(json_object_get(as_entry_obj(srv, e), "spec"), "versions") : NULL;
    size_t i;
    const json_t *v;
    json_array_foreach(versions, i, v)
    {
        const char *name = json_string_value(json_object_get(v, "name"));
        if (name && !strcmp(name, res->version)) {
            const json_t *cols = json_object_get(v, "additionalPrinterColumns");
            return json_array_size(cols) ? cols : NULL;
        }
    }
    return NULL;
}

/* A printer column's cell (the table convertor's cellForJSONValue; strings printed as
 * jsonpath prints them: scalars as text, objects and arrays as JSON). New reference. */
static json_t *cr_cell(const char *type, const json_t *v, time_t now)
{
    if (!v || json_is_null(v)) return json_null();
    if (!strcmp(type, "string")) {
        if (json_is_string(v)) return json_incref((json_t *)v);
        if (json_is_true(v) || json_is_false(v)) return json_string(json_is_true(v) ? "true" : "false");
        char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        json_t *r = json_string(s ? s : "");
        free(s);
        return r;
    }
    if (!strcmp(type, "integer") && json_is_number(v)) return json_integer((json_int_t)json_number_value(v));
    if (!strcmp(type, "number") && json_is_number(v)) return json_real(json_number_value(v));
    if (!strcmp(type, "boolean") && json_is_boolean(v)) return json_incref((json_t *)v);
    if (!strcmp(type, "date") && json_is_string(v)) {
        time_t t;
        char b[32];
        if (!as_parse_time(json_string_value(v), &t)) return json_string("<invalid>");
        return json_string(as_human_duration((long long)(now - t), b, sizeof b));
    }
    return json_null();
}

static const char *str_or(const json_t *v, const char *dflt) { return json_is_string(v) ? json_string_value(v) : dflt; }

static const char *meta_name(const json_t *o)
{
    const char *s = json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));
    return s ? s : "";
}

static const char *meta_created(const json_t *o)
{
    return json_string_value(json_object_get(json_object_get(o, "metadata"), "creationTimestamp"));
}

/* The column definitions and each object's cells, for a custom resource. */
static void cr_rows(lop_apiserver_t *srv, const as_res_t *res, json_t *const *objs, size_t n, json_t *defs,
                    json_t *rows, time_t now)
{
    const json_t *cols = crd_columns(srv, res);
    json_array_append_new(defs, col_json("Name", "string", "name", as_desc_name, 0));
    size_t i;
    const json_t *c;
    json_array_foreach(cols, i, c)
    {
        json_int_t prio = json_integer_value(json_object_get(c, "priority"));
        json_array_append_new(defs, col_json(str_or(json_object_get(c, "name"), ""),
                                             str_or(json_object_get(c, "type"), "string"),
                                             str_or(json_object_get(c, "format"), ""),
                                             str_or(json_object_get(c, "description"), ""), (int)prio));
    }
    if (!cols) json_array_append_new(defs, col_json("Age", "date", "", as_desc_created, 0));
    for (size_t k = 0; k < n; k++) {
        json_t *cells = json_array();
        json_array_append_new(cells, json_string(meta_name(objs[k])));
        json_array_foreach(cols, i, c)
        {
            const char *type = str_or(json_object_get(c, "type"), "string");
            json_t *found = as_jsonpath_eval(objs[k], json_string_value(json_object_get(c, "jsonPath")));
            json_array_append_new(cells, cr_cell(type, json_array_get(found, 0), now));
            json_decref(found);
        }
        if (!cols) {
            char b[32];
            json_array_append_new(cells, json_string(as_age_cell(meta_created(objs[k]), now, b, sizeof b)));
        }
        json_array_append_new(rows, json_pack("{s:o}", "cells", cells));
    }
}

/* The default convertor: Name and Created At (RFC 3339 as stored). */
static void default_rows(json_t *const *objs, size_t n, json_t *defs, json_t *rows)
{
    json_array_append_new(defs, col_json("Name", "string", "name", as_desc_name, 0));
    json_array_append_new(defs, col_json("Created At", "date", "", as_desc_created, 0));
    for (size_t k = 0; k < n; k++) {
        const char *ts = meta_created(objs[k]);
        json_t *cells = json_pack("[s,s?]", meta_name(objs[k]), ts);
        json_array_append_new(rows, json_pack("{s:o}", "cells", cells));
    }
}

static void printer_rows(const as_table_printer_t *p, json_t *const *objs, size_t n, json_t *defs, json_t *rows,
                         time_t now)
{
    for (const as_table_col_t *c = p->cols; c->name; c++)
        json_array_append_new(defs, col_json(c->name, c->type, c->format, c->description, c->priority));
    for (size_t k = 0; k < n; k++) {
        json_t *cells = json_array();
        p->row(objs[k], cells, now);
        json_array_append_new(rows, json_pack("{s:o}", "cells", cells));
    }
}

/* The row's object as includeObject asks: PartialObjectMetadata (default), the object, none. */
static void set_row_object(json_t *row, const as_conv_t *conv, json_t *obj)
{
    if (conv->include == AS_INCLUDE_NONE) return;
    if (conv->include == AS_INCLUDE_OBJECT) {
        json_object_set(row, "object", obj);
        return;
    }
    json_t *m = json_object_get(obj, "metadata");
    json_object_set_new(row, "object",
                        json_pack("{s:s,s:s,s:o}", "kind", "PartialObjectMetadata", "apiVersion", conv->api_version,
                                  "metadata", m ? json_incref(m) : json_object()));
}

json_t *as_table_new(lop_apiserver_t *srv, const as_res_t *res, const as_conv_t *conv, json_t *const *objs, size_t n,
                     const json_t *list_meta, time_t now)
{
    json_t *defs = json_array(), *rows = json_array();
    const as_table_printer_t *p = res->is_cr ? NULL : as_table_printer_find(res->group, res->plural);
    if (res->is_cr)
        cr_rows(srv, res, objs, n, defs, rows, now);
    else if (p)
        printer_rows(p, objs, n, defs, rows, now);
    else
        default_rows(objs, n, defs, rows);
    for (size_t k = 0; k < n; k++) set_row_object(json_array_get(rows, k), conv, objs[k]);
    json_t *meta = json_object();
    if (list_meta) {
        const char *keys[] = {"resourceVersion", "continue", "remainingItemCount", NULL};
        for (int i = 0; keys[i]; i++) {
            json_t *v = json_object_get(list_meta, keys[i]);
            if (v) json_object_set(meta, keys[i], v);
        }
    } else if (n > 0) {
        json_t *rv = json_object_get(json_object_get(objs[0], "metadata"), "resourceVersion");
        if (rv) json_object_set(meta, "resourceVersion", rv);
    }
    if (conv->no_headers) {
        json_decref(defs);
        defs = json_null();
    }
    return json_pack("{s:s,s:s,s:o,s:o,s:o}", "kind", "Table", "apiVersion",
                     conv->api_version[0] ? conv->api_version : "meta.k8s.io/v1", "metadata", meta, "columnDefinitions",
                     defs, "rows", rows);
}
