/* SPDX-License-Identifier: Apache-2.0 */
/* crdtypes.c — LuaLS annotations from a CRD's openAPIV3Schema (crdtypes.h). */
#include "cmd/crdtypes.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* A class waiting to be written: its name and the object schema it describes. */
typedef struct pending {
    char *name;
    const json_t *node;
} pending_t;

typedef struct gen {
    pending_t *q;
    size_t n, cap;
    json_t *used; /* class names taken in this file (a set) */
} gen_t;

static void append_file(lop_crdtypes_file_t **files, size_t *n, const char *name, lop_buf_t *text)
{
    *files = (lop_crdtypes_file_t *)lop_xrealloc(*files, (*n + 1) * sizeof **files);
    (*files)[*n].name = lop_xstrdup(name);
    lop_buf_init(&(*files)[*n].text);
    lop_buf_swap(&(*files)[*n].text, text);
    (*n)++;
}

void lop_crdtypes_files_free(lop_crdtypes_file_t *files, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(files[i].name);
        lop_buf_free(&files[i].text);
    }
    free(files);
}

/* field → Field, with '-', '_', '.' and other non-alphanumerics dropped and the next letter raised. */
static void camel(lop_buf_t *b, const char *s)
{
    bool up = true;
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (!isalnum(ch)) {
            up = true;
            continue;
        }
        lop_buf_putc(b, up ? (char)toupper(ch) : (char)ch);
        up = false;
    }
}

/* A class name not yet used in this file: base, else base2, base3, ... */
static char *unique_name(gen_t *g, const char *base)
{
    lop_buf_t b = LOP_BUF_INIT;
    lop_buf_puts(&b, base);
    for (int i = 2; json_object_get(g->used, b.data); i++) {
        lop_buf_reset(&b);
        lop_buf_printf(&b, "%s%d", base, i);
    }
    json_object_set_new(g->used, b.data, json_true());
    return lop_buf_steal(&b);
}

static const char *enqueue(gen_t *g, const char *base, const json_t *node)
{
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 8;
        g->q = (pending_t *)lop_xrealloc(g->q, g->cap * sizeof *g->q);
    }
    g->q[g->n].name = unique_name(g, base);
    g->q[g->n].node = node;
    return g->q[g->n++].name;
}

static bool has_properties(const json_t *node)
{
    const json_t *p = json_object_get(node, "properties");
    return json_is_object(p) && json_object_size(p) > 0;
}

/* The LuaLS type of schema node into t; hint is the class name an object there would get. */
static void type_of(gen_t *g, lop_buf_t *t, const json_t *node, const char *hint)
{
    if (!json_is_object(node)) {
        lop_buf_puts(t, "any");
        return;
    }
    if (json_is_true(json_object_get(node, "x-kubernetes-int-or-string"))) {
        lop_buf_puts(t, "integer|string");
        return;
    }
    const json_t *en = json_object_get(node, "enum");
    if (json_is_array(en) && json_array_size(en) > 0) {
        size_t i;
        const json_t *v;
        json_array_foreach(en, i, v)
        {
            char *lit = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY); /* "a", 1, true: Lua literals too */
            lop_buf_printf(t, "%s%s", i ? "|" : "", lit ? lit : "any");
            free(lit);
        }
        return;
    }
    const char *type = json_string_value(json_object_get(node, "type"));
    if (type && !strcmp(type, "array")) {
        lop_buf_t it = LOP_BUF_INIT, h = LOP_BUF_INIT;
        lop_buf_printf(&h, "%sItem", hint);
        type_of(g, &it, json_object_get(node, "items"), h.data);
        bool paren = strchr(it.data, '|') != NULL;
        lop_buf_printf(t, "%s%s%s[]", paren ? "(" : "", it.data, paren ? ")" : "");
        lop_buf_free(&it);
        lop_buf_free(&h);
        return;
    }
    if ((type && !strcmp(type, "object")) || (!type && has_properties(node))) {
        const json_t *ap = json_object_get(node, "additionalProperties");
        if (has_properties(node)) {
            lop_buf_puts(t, enqueue(g, hint, node));
        } else if (json_is_object(ap)) {
            lop_buf_t vt = LOP_BUF_INIT, h = LOP_BUF_INIT;
            lop_buf_printf(&h, "%sValue", hint);
            type_of(g, &vt, ap, h.data);
            lop_buf_printf(t, "table<string, %s>", vt.data);
            lop_buf_free(&vt);
            lop_buf_free(&h);
        } else {
            lop_buf_puts(t, "table"); /* preserve-unknown, embedded, or no structure given */
        }
        return;
    }
    if (type &&
        (!strcmp(type, "string") || !strcmp(type, "integer") || !strcmp(type, "number") || !strcmp(type, "boolean"))) {
        lop_buf_puts(t, type);
        return;
    }
    lop_buf_puts(t, "any");
}

/* s on one line: whitespace runs become one space, ends trimmed. */
static void one_line(lop_buf_t *b, const char *s)
{
    bool space = false, any = false;
    for (; s && *s; s++) {
        if (isspace((unsigned char)*s)) {
            space = any;
            continue;
        }
        if (space) lop_buf_putc(b, ' ');
        lop_buf_putc(b, *s);
        space = false;
        any = true;
    }
}

static bool lua_name(const char *k)
{
    static const char *const kw[] = {"and",      "break",  "do",   "else", "elseif", "end",  "false", "for",
                                     "function", "goto",   "if",   "in",   "local",  "nil",  "not",   "or",
                                     "repeat",   "return", "then", "true", "until",  "while"};
    if (!isalpha((unsigned char)*k) && *k != '_') return false;
    for (const char *p = k; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_') return false;
    for (size_t i = 0; i < sizeof kw / sizeof kw[0]; i++)
        if (!strcmp(k, kw[i])) return false;
    return true;
}

static bool is_required(const json_t *node, const char *key)
{
    size_t i;
    const json_t *r;
    json_array_foreach(json_object_get(node, "required"), i, r)
    {
        if (json_is_string(r) && !strcmp(json_string_value(r), key)) return true;
    }
    return false;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* The property names of node, sorted (borrowed from node; free the array). */
static const char **sorted_keys(const json_t *props, size_t *n)
{
    *n = json_object_size(props);
    const char **keys = (const char **)lop_xmalloc((*n + 1) * sizeof *keys);
    size_t i = 0;
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)props, k, v) keys[i++] = k;
    qsort(keys, *n, sizeof *keys, cmp_str);
    return keys;
}

static void field_line(gen_t *g, lop_buf_t *out, const char *cls, const json_t *parent, const char *key,
                       const json_t *ps)
{
    lop_buf_t t = LOP_BUF_INIT, h = LOP_BUF_INIT;
    lop_buf_puts(&h, cls);
    camel(&h, key);
    type_of(g, &t, ps, h.data);
    bool opt = !is_required(parent, key);
    if (lua_name(key)) {
        lop_buf_printf(out, "---@field %s%s %s", key, opt ? "?" : "", t.data);
    } else {
        lop_buf_puts(out, "---@field [");
        lop_buf_json_str(out, key, strlen(key));
        lop_buf_printf(out, "] %s", t.data);
    }
    const char *desc = json_string_value(json_object_get(ps, "description"));
    const json_t *def = json_object_get(ps, "default");
    if (desc && *desc) {
        lop_buf_putc(out, ' ');
        one_line(out, desc);
    }
    if (def) {
        char *d = json_dumps(def, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS);
        lop_buf_printf(out, " (default: %s)", d ? d : "?");
        free(d);
    }
    lop_buf_putc(out, '\n');
    lop_buf_free(&t);
    lop_buf_free(&h);
}

/* The ---@class block of one object schema; root adds apiVersion, kind and metadata. */
static void class_block(gen_t *g, lop_buf_t *out, const char *cls, const json_t *node, const char *api_version,
                        const char *kind)
{
    const char *desc = json_string_value(json_object_get(node, "description"));
    lop_buf_putc(out, '\n');
    if (desc && *desc) {
        lop_buf_puts(out, "--- ");
        one_line(out, desc);
        lop_buf_putc(out, '\n');
    }
    lop_buf_printf(out, "---@class %s\n", cls);
    if (api_version) {
        lop_buf_printf(out, "---@field apiVersion \"%s\"\n---@field kind \"%s\"\n", api_version, kind);
        lop_buf_puts(out, "---@field metadata k8s.ObjectMeta\n");
    }
    const json_t *props = json_object_get(node, "properties");
    size_t n;
    const char **keys = sorted_keys(props, &n);
    for (size_t i = 0; i < n; i++) {
        if (api_version && (!strcmp(keys[i], "apiVersion") || !strcmp(keys[i], "kind") || !strcmp(keys[i], "metadata")))
            continue;
        field_line(g, out, cls, node, keys[i], json_object_get(props, keys[i]));
    }
    free(keys);
    if (json_is_true(json_object_get(node, "x-kubernetes-preserve-unknown-fields")))
        lop_buf_puts(out, "---@field [string] any unknown fields are kept (x-kubernetes-preserve-unknown-fields)\n");
}

/* The class prefix of a version: Kind for the storage version, KindV1alpha1 for the others. */
static void version_class(lop_buf_t *b, const char *kind, const char *version, bool storage)
{
    lop_buf_puts(b, kind);
    if (!storage) camel(b, version);
}

static void header(lop_buf_t *b, const char *spdx, const char *source, const char *what)
{
    lop_buf_puts(b, "---@meta\n");
    if (spdx) lop_buf_printf(b, "-- SPDX-License-Identifier: %s\n", spdx);
    lop_buf_printf(b, "-- Generated by `luaop types` from %s (%s): do not edit, regenerate (`make types`).\n", source,
                   what);
}

lop_rc_t lop_crdtypes_render(const json_t *crd, const char *source, const char *spdx, lop_crdtypes_file_t **files,
                             size_t *n, lop_err_t *err)
{
    const json_t *spec = json_object_get(crd, "spec");
    const char *group = json_string_value(json_object_get(spec, "group"));
    const char *kind = json_string_value(json_object_get(json_object_get(spec, "names"), "kind"));
    const json_t *versions = json_object_get(spec, "versions");
    if (!group || !kind || !json_is_array(versions))
        return lop_err_set(err, LOP_EINVAL, 0, NULL,
                           "%s: not a CustomResourceDefinition (spec.group, spec.names.kind, spec.versions)", source);
    bool any_storage = false;
    size_t i;
    const json_t *v;
    json_array_foreach(versions, i, v) any_storage |= json_is_true(json_object_get(v, "storage"));
    json_array_foreach(versions, i, v)
    {
        const char *ver = json_string_value(json_object_get(v, "name"));
        const json_t *schema = json_object_get(json_object_get(v, "schema"), "openAPIV3Schema");
        if (!ver || !json_is_object(schema)) continue;
        bool storage = any_storage ? json_is_true(json_object_get(v, "storage")) : i == 0;
        gen_t g = {.used = json_object()};
        lop_buf_t out = LOP_BUF_INIT, cls = LOP_BUF_INIT, what = LOP_BUF_INIT;
        version_class(&cls, kind, ver, storage);
        lop_buf_printf(&what, "%s %s/%s%s", kind, group, ver, storage ? ", the storage version" : "");
        header(&out, spdx, source, what.data);
        char av[600];
        snprintf(av, sizeof av, "%s/%s", group, ver);
        json_object_set_new(g.used, cls.data, json_true());
        class_block(&g, &out, cls.data, schema, av, kind);
        for (size_t k = 0; k < g.n; k++) class_block(&g, &out, g.q[k].name, g.q[k].node, NULL, NULL);
        char fname[300];
        lop_buf_t lower = LOP_BUF_INIT;
        for (const char *p = kind; *p; p++) lop_buf_putc(&lower, (char)tolower((unsigned char)*p));
        snprintf(fname, sizeof fname, "%s_%s.lua", lower.data, ver);
        append_file(files, n, fname, &out);
        for (size_t k = 0; k < g.n; k++) free(g.q[k].name);
        free(g.q);
        json_decref(g.used);
        lop_buf_free(&out);
        lop_buf_free(&cls);
        lop_buf_free(&what);
        lop_buf_free(&lower);
    }
    return LOP_OK;
}

void lop_crdtypes_objectmeta(const char *spdx, lop_crdtypes_file_t **files, size_t *n)
{
    lop_buf_t b = LOP_BUF_INIT;
    header(&b, spdx, "k8s.io/apimachinery/pkg/apis/meta/v1 ObjectMeta", "the fields scripts read");
    lop_buf_puts(&b, "\n--- Standard object metadata (metav1.ObjectMeta).\n"
                     "---@class k8s.ObjectMeta\n"
                     "---@field name? string unique within the namespace\n"
                     "---@field generateName? string prefix of a name the server generates\n"
                     "---@field namespace? string empty for cluster-scoped objects\n"
                     "---@field uid? string set by the server\n"
                     "---@field resourceVersion? string opaque; the precondition of an update\n"
                     "---@field generation? integer bumped by the server on spec changes\n"
                     "---@field creationTimestamp? string RFC 3339\n"
                     "---@field deletionTimestamp? string RFC 3339; set once deletion was requested\n"
                     "---@field deletionGracePeriodSeconds? integer\n"
                     "---@field labels? table<string, string>\n"
                     "---@field annotations? table<string, string>\n"
                     "---@field finalizers? string[]\n"
                     "---@field ownerReferences? k8s.OwnerReference[]\n"
                     "---@field managedFields? table[] stripped from the informer cache by default\n"
                     "\n--- A reference to an owner (metav1.OwnerReference).\n"
                     "---@class k8s.OwnerReference\n"
                     "---@field apiVersion string\n"
                     "---@field kind string\n"
                     "---@field name string\n"
                     "---@field uid string\n"
                     "---@field controller? boolean\n"
                     "---@field blockOwnerDeletion? boolean\n");
    append_file(files, n, "objectmeta.lua", &b);
    lop_buf_free(&b);
}
