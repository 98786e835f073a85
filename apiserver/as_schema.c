/* SPDX-License-Identifier: Apache-2.0 */
/* as_schema.c — structural schemas compiled once per CRD version, and the validation of a custom
 * resource against one: pruning, nulls and defaults (apiextensions-apiserver pkg/apiserver/schema
 * pruning, defaulting), the kube-openapi checks with the field errors apiextensions makes of
 * them (pkg/apiserver/validation/validation.go), list types (schema/listtype) and CEL rules
 * (schema/cel/validation.go). */
#include "apiserver/as_schema.h"

#include "apiserver/as_cel.h"
#include "apiserver/as_goval.h"
#include "apiserver/as_schema_format.h"
#include "apiserver/as_util.h"
#include "host/util/buf.h"
#include "host/util/utf8.h"

#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { T_ANY = 0, T_OBJECT, T_ARRAY, T_STRING, T_INTEGER, T_NUMBER, T_BOOLEAN };
enum { L_ATOMIC = 0, L_SET, L_MAP };

typedef struct as_rule {
    const char *rule, *message, *reason, *field_path; /* borrowed from the schema JSON */
    as_cel_prog_t *prog, *msg_prog;
    bool transition;
    char *not_evaluated; /* why the rule is not enforced (a Warning per write), or NULL */
    char *msg_note;      /* a messageExpression outside the subset (a Warning; message used), or NULL */
} as_rule_t;

typedef struct as_prop {
    const char *name;
    as_schema_t *s;
} as_prop_t;

struct as_schema {
    int type;
    const char *type_name; /* as written, for messages */
    bool nullable, int_or_string, preserve, embedded;
    bool has_min, has_max, excl_min, excl_max, has_mult;
    double min, max, mult;
    long long min_len, max_len, min_items, max_items, min_props, max_props; /* -1: none */
    const char *pattern;
    regex_t re;
    int re_state; /* 0 none, 1 compiled, -1 not supported (warned) */
    const char *format;
    const json_t *enum_vals, *def, *required, *map_keys;
    as_prop_t *props;
    size_t nprops;
    as_schema_t *items, *addl;
    bool addl_true;
    int list_type;
    as_rule_t *rules;
    size_t nrules;
};

bool as_schema_objectmeta_field(const char *key)
{
    for (int i = 0; as_objectmeta_fields[i]; i++)
        if (!strcmp(as_objectmeta_fields[i], key)) return true;
    return false;
}

/* ---- compile ---- */

static long long opt_int(const json_t *s, const char *key)
{
    json_t *v = json_object_get(s, key);
    return json_is_integer(v) ? (long long)json_integer_value(v) : json_is_real(v) ? (long long)json_real_value(v) : -1;
}

static bool opt_num(const json_t *s, const char *key, double *out)
{
    json_t *v = json_object_get(s, key);
    if (!json_is_number(v)) return false;
    *out = json_number_value(v);
    return true;
}

static int type_of(const char *t)
{
    static const char *const names[] = {"", "object", "array", "string", "integer", "number", "boolean"};
    for (int i = 1; t && i < 7; i++)
        if (!strcmp(t, names[i])) return i;
    return T_ANY;
}

static int prop_cmp(const void *a, const void *b)
{
    return strcmp(((const as_prop_t *)a)->name, ((const as_prop_t *)b)->name);
}

static void compile_rules(as_schema_t *n, const json_t *vals)
{
    n->nrules = json_array_size(vals);
    if (!n->nrules) return;
    n->rules = lop_xcalloc(n->nrules, sizeof *n->rules);
    for (size_t i = 0; i < n->nrules; i++) {
        const json_t *v = json_array_get(vals, i);
        as_rule_t *r = &n->rules[i];
        r->rule = json_string_value(json_object_get(v, "rule"));
        r->message = json_string_value(json_object_get(v, "message"));
        r->reason = json_string_value(json_object_get(v, "reason"));
        r->field_path = json_string_value(json_object_get(v, "fieldPath"));
        const char *mexpr = json_string_value(json_object_get(v, "messageExpression"));
        char err[300] = "";
        if (!r->rule) continue;
        if (json_is_true(json_object_get(v, "optionalOldSelf"))) {
            snprintf(err, sizeof err, "optionalOldSelf is not supported");
        } else {
            r->prog = as_cel_compile(r->rule, err, sizeof err);
        }
        if (r->prog && mexpr && !(r->msg_prog = as_cel_compile(mexpr, err, sizeof err))) {
            size_t len = strlen(mexpr) + strlen(err) + 8;
            r->msg_note = lop_xmalloc(len);
            snprintf(r->msg_note, len, "%s (%s)", mexpr, err);
        }
        if (!r->prog) {
            size_t len = strlen(r->rule) + strlen(err) + 8;
            r->not_evaluated = lop_xmalloc(len);
            snprintf(r->not_evaluated, len, "%s (%s)", r->rule, err);
        }
        if (r->prog) r->transition = as_cel_uses_old_self(r->prog);
    }
}

static as_schema_t *compile_node(const json_t *s, int depth)
{
    if (!json_is_object(s) || depth > 64) return NULL;
    as_schema_t *n = lop_xcalloc(1, sizeof *n);
    n->type_name = json_string_value(json_object_get(s, "type"));
    n->type = type_of(n->type_name);
    n->nullable = json_is_true(json_object_get(s, "nullable"));
    n->int_or_string = json_is_true(json_object_get(s, "x-kubernetes-int-or-string"));
    n->preserve = json_is_true(json_object_get(s, "x-kubernetes-preserve-unknown-fields"));
    n->embedded = json_is_true(json_object_get(s, "x-kubernetes-embedded-resource"));
    n->has_min = opt_num(s, "minimum", &n->min);
    n->has_max = opt_num(s, "maximum", &n->max);
    n->has_mult = opt_num(s, "multipleOf", &n->mult) && n->mult != 0;
    n->excl_min = json_is_true(json_object_get(s, "exclusiveMinimum"));
    n->excl_max = json_is_true(json_object_get(s, "exclusiveMaximum"));
    n->min_len = opt_int(s, "minLength");
    n->max_len = opt_int(s, "maxLength");
    n->min_items = opt_int(s, "minItems");
    n->max_items = opt_int(s, "maxItems");
    n->min_props = opt_int(s, "minProperties");
    n->max_props = opt_int(s, "maxProperties");
    n->pattern = json_string_value(json_object_get(s, "pattern"));
    if (n->pattern) n->re_state = as_pattern_compile(&n->re, n->pattern) == 0 ? 1 : -1;
    n->format = json_string_value(json_object_get(s, "format"));
    n->enum_vals = json_is_array(json_object_get(s, "enum")) ? json_object_get(s, "enum") : NULL;
    n->def = json_object_get(s, "default");
    n->required = json_object_get(s, "required");
    const char *lt = json_string_value(json_object_get(s, "x-kubernetes-list-type"));
    n->list_type = !lt ? L_ATOMIC : !strcmp(lt, "set") ? L_SET : !strcmp(lt, "map") ? L_MAP : L_ATOMIC;
    n->map_keys = json_object_get(s, "x-kubernetes-list-map-keys");
    const json_t *props = json_object_get(s, "properties");
    n->nprops = json_object_size(props);
    if (n->nprops) {
        n->props = lop_xcalloc(n->nprops, sizeof *n->props);
        size_t i = 0;
        const char *k;
        json_t *ps;
        json_object_foreach((json_t *)props, k, ps)
        {
            n->props[i].name = k;
            n->props[i++].s = compile_node(ps, depth + 1);
        }
        qsort(n->props, n->nprops, sizeof *n->props, prop_cmp);
    }
    n->items = compile_node(json_object_get(s, "items"), depth + 1);
    const json_t *addl = json_object_get(s, "additionalProperties");
    n->addl = compile_node(addl, depth + 1);
    n->addl_true = json_is_true(addl);
    compile_rules(n, json_object_get(s, "x-kubernetes-validations"));
    return n;
}

as_schema_t *as_schema_compile(const json_t *schema) { return compile_node(schema, 0); }

void as_schema_free(as_schema_t *n)
{
    if (!n) return;
    for (size_t i = 0; i < n->nprops; i++) as_schema_free(n->props[i].s);
    free(n->props);
    as_schema_free(n->items);
    as_schema_free(n->addl);
    for (size_t i = 0; i < n->nrules; i++) {
        as_cel_free(n->rules[i].prog);
        as_cel_free(n->rules[i].msg_prog);
        free(n->rules[i].not_evaluated);
        free(n->rules[i].msg_note);
    }
    free(n->rules);
    if (n->re_state == 1) regfree(&n->re);
    free(n);
}

static const as_schema_t *prop_find(const as_schema_t *n, const char *name)
{
    as_prop_t key = {.name = name};
    as_prop_t *p = n->nprops ? bsearch(&key, n->props, n->nprops, sizeof *n->props, prop_cmp) : NULL;
    return p ? p->s : NULL;
}

/* ---- validate ---- */

typedef struct vctx {
    as_schema_result_t *r;
    json_t *list_causes, *cel_causes; /* reported after the schema causes, as kube-apiserver does */
    lop_buf_t path;                   /* the current field path ("spec.items[2]") */
    lop_buf_t warned;                 /* nodes and rules already warned about (pointers) */
    int ncauses;
} vctx_t;

static const char *cur_path(const vctx_t *c) { return c->path.len ? c->path.data : "<nil>"; }

static size_t path_push_key(vctx_t *c, const char *key)
{
    size_t mark = c->path.len;
    if (mark) lop_buf_putc(&c->path, '.');
    lop_buf_puts(&c->path, key);
    return mark;
}

static size_t path_push_index(vctx_t *c, size_t i)
{
    size_t mark = c->path.len;
    lop_buf_printf(&c->path, "[%zu]", i);
    return mark;
}

static void path_pop(vctx_t *c, size_t mark)
{
    c->path.len = mark;
    if (c->path.data) c->path.data[mark] = '\0';
}

/* A cause into arr: `<type>[: <value>][: <detail>]`, the value Go-printed (NULL: left out). */
static void cause(vctx_t *c, json_t *arr, const char *reason, const char *type, const json_t *value, const char *detail)
{
    lop_buf_t m = LOP_BUF_INIT;
    lop_buf_puts(&m, type);
    if (value) {
        lop_buf_puts(&m, ": ");
        as_goval_append(&m, value);
    }
    if (detail && *detail) lop_buf_printf(&m, ": %s", detail);
    as_cause_add(arr, reason, cur_path(c), m.data);
    lop_buf_free(&m);
    c->ncauses++;
}

/* field.Invalid(path, value, "<path> in body <what>") — kube-openapi's message as the detail. */
static void invalid_body(vctx_t *c, const json_t *value, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void invalid_body(vctx_t *c, const json_t *value, const char *fmt, ...)
{
    lop_buf_t d = LOP_BUF_INIT;
    lop_buf_printf(&d, "%s in body ", cur_path(c));
    va_list ap;
    va_start(ap, fmt);
    lop_buf_vprintf(&d, fmt, ap);
    va_end(ap);
    cause(c, c->r->causes, "FieldValueInvalid", "Invalid value", value, d.data);
    lop_buf_free(&d);
}

static const char *json_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER: return "integer";
    case JSON_REAL: return "number";
    case JSON_TRUE:
    case JSON_FALSE: return "boolean";
    default: return "null";
    }
}

static bool type_ok(int type, const json_t *v)
{
    switch (type) {
    case T_OBJECT: return json_is_object(v);
    case T_ARRAY: return json_is_array(v);
    case T_STRING: return json_is_string(v);
    case T_INTEGER: return json_is_integer(v) || (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)));
    case T_NUMBER: return json_is_number(v);
    case T_BOOLEAN: return json_is_boolean(v);
    default: return true;
    }
}

/* Type (and int-or-string): true when the value's other checks should run; false for a valid
 * null of a nullable node and after reporting a wrong type. */
static bool check_type(vctx_t *c, const as_schema_t *s, const json_t *v)
{
    if (json_is_null(v) && s->nullable) return false;
    const char *want = s->int_or_string ? "integer,string" : s->type_name;
    if (!want || !*want) return true; /* untyped (x-kubernetes-preserve-unknown-fields) */
    if (s->int_or_string ? (json_is_integer(v) || json_is_string(v)) : type_ok(s->type, v)) return true;
    json_t *tn = json_string(json_type_name(v));
    lop_buf_t d = LOP_BUF_INIT;
    lop_buf_printf(&d, "%s in body must be of type %s: \"%s\"", cur_path(c), want, json_type_name(v));
    cause(c, c->r->causes, "FieldValueTypeInvalid", "Invalid value", tn, d.data);
    lop_buf_free(&d);
    json_decref(tn);
    return false;
}

/* True the first time this write meets key (a schema node or rule): one Warning each per write,
 * not one per list item. */
static bool warn_once(vctx_t *c, const void *key)
{
    const void *const *seen = (const void *const *)(void *)c->warned.data;
    for (size_t k = 0; k < c->warned.len / sizeof key; k++)
        if (seen[k] == key) return false;
    lop_buf_append(&c->warned, &key, sizeof key);
    return true;
}

static void check_string(vctx_t *c, const as_schema_t *s, const json_t *v)
{
    const char *str = json_string_value(v);
    size_t n = json_string_length(v);
    if (s->max_len >= 0 || s->min_len >= 0) {
        long long runes = 0;
        for (size_t i = 0; i < n; runes++) {
            size_t l = lop_utf8_decode((const unsigned char *)str + i, n - i, NULL);
            i += l ? l : 1;
        }
        if (s->max_len >= 0 && runes > s->max_len) {
            char d[80];
            snprintf(d, sizeof d, "may not be longer than %lld", s->max_len);
            cause(c, c->r->causes, "FieldValueTooLong", "Too long", NULL, d);
        }
        if (s->min_len >= 0 && runes < s->min_len) invalid_body(c, v, "should be at least %lld chars long", s->min_len);
    }
    if (s->re_state == 1 && !as_pattern_match(&s->re, str)) invalid_body(c, v, "should match '%s'", s->pattern);
    if (s->re_state < 0 && warn_once(c, s)) {
        lop_buf_t w = LOP_BUF_INIT;
        lop_buf_printf(&w, "%s: pattern not enforced by the local API server (unsupported syntax): %s", cur_path(c),
                       s->pattern);
        json_array_append_new(c->r->warnings, json_string(w.data));
        lop_buf_free(&w);
    }
    if (s->format && !as_format_valid(s->format, str, n)) {
        lop_buf_t d = LOP_BUF_INIT;
        lop_buf_printf(&d, "%s in body must be of type %s: ", cur_path(c), s->format);
        as_goval_quote(&d, str, n);
        cause(c, c->r->causes, "FieldValueTypeInvalid", "Invalid value", v, d.data);
        lop_buf_free(&d);
    }
}

static void bound_msg(lop_buf_t *b, const char *what, double bound)
{
    lop_buf_puts(b, what);
    as_goval_float(b, bound);
}

static void check_number(vctx_t *c, const as_schema_t *s, const json_t *v)
{
    double d = json_number_value(v);
    lop_buf_t m = LOP_BUF_INIT;
    if (s->has_mult) {
        double q = d / s->mult;
        if (q != floor(q) || isinf(q)) bound_msg(&m, "should be a multiple of ", s->mult);
        if (m.len) invalid_body(c, v, "%s", m.data);
        lop_buf_reset(&m);
    }
    if (s->has_max && (s->excl_max ? d >= s->max : d > s->max)) {
        bound_msg(&m, s->excl_max ? "should be less than " : "should be less than or equal to ", s->max);
        invalid_body(c, v, "%s", m.data);
        lop_buf_reset(&m);
    }
    if (s->has_min && (s->excl_min ? d <= s->min : d < s->min)) {
        bound_msg(&m, s->excl_min ? "should be greater than " : "should be greater than or equal to ", s->min);
        invalid_body(c, v, "%s", m.data);
    }
    lop_buf_free(&m);
}

static void check_enum(vctx_t *c, const as_schema_t *s, const json_t *v)
{
    size_t i;
    json_t *e;
    json_array_foreach(s->enum_vals, i, e)
    {
        if (json_equal(e, v)) return;
        if (json_is_number(e) && json_is_number(v) && json_number_value(e) == json_number_value(v)) return;
    }
    lop_buf_t d = LOP_BUF_INIT;
    lop_buf_puts(&d, "supported values: ");
    json_array_foreach(s->enum_vals, i, e)
    {
        if (i) lop_buf_puts(&d, ", ");
        if (json_is_string(e)) {
            as_goval_quote(&d, json_string_value(e), json_string_length(e));
            continue;
        }
        char *js = json_dumps(e, JSON_ENCODE_ANY | JSON_COMPACT);
        as_goval_quote(&d, js ? js : "", js ? strlen(js) : 0);
        free(js);
    }
    cause(c, c->r->causes, "FieldValueNotSupported", "Unsupported value", v, d.data);
    lop_buf_free(&d);
}

static void check_value(vctx_t *c, const as_schema_t *s, json_t *v, const json_t *old);

static void check_count(vctx_t *c, long long n, long long min, long long max, const char *unit)
{
    if (max >= 0 && n > max) {
        json_t *nv = json_integer(n);
        char d[80];
        snprintf(d, sizeof d, "must have at most %lld items", max);
        cause(c, c->r->causes, "FieldValueTooMany", "Too many", nv, d);
        json_decref(nv);
    }
    if (min >= 0 && n < min) {
        json_t *nv = json_integer(n);
        invalid_body(c, nv, "should have at least %lld %s", min, unit);
        json_decref(nv);
    }
}

/* Remove a field the schema does not describe, remembering its path for fieldValidation. */
static void prune(vctx_t *c, json_t *obj, const char *key)
{
    size_t mark = path_push_key(c, key);
    json_array_append_new(c->r->pruned, json_string(c->path.data));
    path_pop(c, mark);
    json_object_del(obj, key);
}

/* Defaults fill properties that are absent, or null where the property is not nullable. */
static void apply_defaults(const as_schema_t *s, json_t *v)
{
    for (size_t i = 0; i < s->nprops; i++) {
        const as_schema_t *ps = s->props[i].s;
        if (!ps || !ps->def) continue;
        json_t *cur = json_object_get(v, s->props[i].name);
        if (!cur || (json_is_null(cur) && !ps->nullable))
            json_object_set_new(v, s->props[i].name, json_deep_copy(ps->def));
    }
}

/* metadata of an embedded resource keeps ObjectMeta's fields only. */
static void prune_embedded_meta(vctx_t *c, json_t *meta)
{
    if (!json_is_object(meta)) return;
    size_t mark = path_push_key(c, "metadata");
    const char *k;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(meta, tmp, k, v)
    {
        if (!as_schema_objectmeta_field(k)) prune(c, meta, k);
    }
    path_pop(c, mark);
}

static void check_embedded(vctx_t *c, const json_t *v)
{
    const char *keys[] = {"apiVersion", "kind"};
    for (int i = 0; i < 2; i++) {
        json_t *x = json_object_get(v, keys[i]);
        size_t mark = path_push_key(c, keys[i]);
        if (!x)
            cause(c, c->r->causes, "FieldValueRequired", "Required value", NULL, "must not be empty");
        else if (!json_is_string(x))
            cause(c, c->r->causes, "FieldValueInvalid", "Invalid value", x, "must be a string");
        else if (json_string_length(x) == 0)
            cause(c, c->r->causes, "FieldValueInvalid", "Invalid value", x, "must not be empty");
        path_pop(c, mark);
    }
}

/* One member of an object: recurse into its schema, drop a null it may not hold, keep what
 * preserve-unknown-fields keeps, prune the rest. */
static void check_member(vctx_t *c, const as_schema_t *s, json_t *v, const char *k, json_t *cv, const json_t *old)
{
    const as_schema_t *ps = prop_find(s, k);
    if (!ps && s->addl) ps = s->addl;
    if (!ps) {
        if (!s->preserve && !s->addl_true) prune(c, v, k);
        return;
    }
    if (json_is_null(cv) && !ps->nullable) {
        json_object_del(v, k); /* PruneNonNullableNullsWithoutDefaults */
        return;
    }
    size_t mark = path_push_key(c, k);
    check_value(c, ps, cv, json_is_object(old) ? json_object_get(old, k) : NULL);
    path_pop(c, mark);
}

static void check_object(vctx_t *c, const as_schema_t *s, json_t *v, const json_t *old, bool top)
{
    apply_defaults(s, v);
    bool resource = top || s->embedded; /* apiVersion, kind and metadata belong to ObjectMeta's rules */
    const char *k;
    json_t *cv;
    void *tmp;
    json_object_foreach_safe(v, tmp, k, cv)
    {
        if (resource && (!strcmp(k, "apiVersion") || !strcmp(k, "kind") || !strcmp(k, "metadata"))) {
            if (s->embedded && !strcmp(k, "metadata")) prune_embedded_meta(c, cv);
            continue;
        }
        check_member(c, s, v, k, cv, old);
    }
    check_count(c, (long long)json_object_size(v), s->min_props, s->max_props, "properties");
    size_t i;
    json_t *r;
    json_array_foreach(s->required, i, r)
    {
        const char *rk = json_string_value(r);
        if (!rk || json_object_get(v, rk)) continue;
        size_t mark = path_push_key(c, rk);
        cause(c, c->r->causes, "FieldValueRequired", "Required value", NULL, NULL);
        path_pop(c, mark);
    }
    if (s->embedded) check_embedded(c, v);
}

/* The key fields of a map-list item, as the map kube-apiserver prints in a Duplicate error. */
static json_t *map_key_of(const as_schema_t *s, const json_t *item)
{
    json_t *k = json_object();
    size_t i;
    json_t *name;
    json_array_foreach(s->map_keys, i, name)
    {
        json_t *x = json_object_get(item, json_string_value(name));
        if (x) json_object_set(k, json_string_value(name), x);
    }
    return k;
}

/* x-kubernetes-list-type set (items unique) and map (x-kubernetes-list-map-keys unique). */
static void check_list_type(vctx_t *c, const as_schema_t *s, const json_t *v)
{
    if (s->list_type == L_ATOMIC) return;
    size_t n = json_array_size(v);
    json_t *keys = json_array();
    for (size_t i = 0; i < n; i++) {
        const json_t *it = json_array_get(v, i);
        json_t *key = s->list_type == L_MAP ? map_key_of(s, it) : json_incref((json_t *)it);
        bool dup = false;
        for (size_t j = 0; j < i && !dup; j++) dup = json_equal(json_array_get(keys, j), key);
        if (dup) {
            size_t mark = path_push_index(c, i);
            cause(c, c->list_causes, "FieldValueDuplicate", "Duplicate value", key, NULL);
            path_pop(c, mark);
        }
        json_array_append_new(keys, key);
    }
    json_decref(keys);
}

/* The old item a map-list item corresponds to (same key fields), or NULL. */
static const json_t *old_map_item(const as_schema_t *s, const json_t *item, const json_t *old)
{
    if (s->list_type != L_MAP || !json_is_array(old)) return NULL;
    json_t *key = map_key_of(s, item);
    const json_t *found = NULL;
    size_t i;
    json_t *o;
    json_array_foreach(old, i, o)
    {
        json_t *ok = map_key_of(s, o);
        if (json_equal(ok, key)) found = o;
        json_decref(ok);
        if (found) break;
    }
    json_decref(key);
    return found;
}

static void check_array(vctx_t *c, const as_schema_t *s, json_t *v, const json_t *old)
{
    check_count(c, (long long)json_array_size(v), s->min_items, s->max_items, "items");
    size_t i;
    json_t *it;
    json_array_foreach(v, i, it)
    {
        if (!s->items) continue;
        size_t mark = path_push_index(c, i);
        check_value(c, s->items, it, old_map_item(s, it, old));
        path_pop(c, mark);
    }
    check_list_type(c, s, v);
}

/* The schema type kube-apiserver prints as a failed rule's value ("object", "string", ...). */
static const char *rule_value_type(const as_schema_t *s)
{
    if (s->int_or_string) return "integer,string";
    return s->type_name && *s->type_name ? s->type_name : "object";
}

/* Append s without leading and trailing white space (kube-apiserver trims rule messages). */
static void put_trimmed(lop_buf_t *b, const char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\n') s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n')) n--;
    lop_buf_append(b, s, n);
}

/* The message of a failed rule: the messageExpression's value (when it evaluates to a non-blank
 * string), else message, else "failed rule: <rule>"; an evaluation error reads
 * "<error> evaluating rule: <rule>" (schema/cel/validation.go). */
static void rule_message(lop_buf_t *d, const as_rule_t *r, const json_t *v, const json_t *old, const char *eval_err)
{
    if (eval_err) {
        lop_buf_printf(d, "%s evaluating rule: ", eval_err);
        put_trimmed(d, r->rule);
        return;
    }
    char err[300];
    char *msg = r->msg_prog ? as_cel_eval_string(r->msg_prog, v, old, err, sizeof err) : NULL;
    if (msg && strspn(msg, " \t\n") < strlen(msg)) {
        put_trimmed(d, msg);
    } else if (r->message && strspn(r->message, " \t\n") < strlen(r->message)) {
        put_trimmed(d, r->message);
    } else {
        lop_buf_puts(d, "failed rule: ");
        put_trimmed(d, r->rule);
    }
    free(msg);
}

static void rule_failed(vctx_t *c, const as_schema_t *s, const as_rule_t *r, const json_t *v, const json_t *old,
                        const char *eval_err)
{
    lop_buf_t d = LOP_BUF_INIT;
    rule_message(&d, r, v, old, eval_err);
    size_t mark = c->path.len;
    if (r->field_path && *r->field_path && !eval_err) { /* relative to self: ".spec.x", "[0]" */
        const char *fp = r->field_path;
        lop_buf_puts(&c->path, !c->path.len && *fp == '.' ? fp + 1 : fp);
    }
    json_t *tv = json_string(rule_value_type(s));
    const char *reason = eval_err ? NULL : r->reason;
    if (reason && !strcmp(reason, "FieldValueForbidden"))
        cause(c, c->cel_causes, reason, "Forbidden", NULL, d.data);
    else if (reason && !strcmp(reason, "FieldValueRequired"))
        cause(c, c->cel_causes, reason, "Required value", NULL, d.data);
    else if (reason && !strcmp(reason, "FieldValueDuplicate"))
        cause(c, c->cel_causes, reason, "Duplicate value", tv, NULL);
    else
        cause(c, c->cel_causes, "FieldValueInvalid", "Invalid value", tv, d.data);
    json_decref(tv);
    path_pop(c, mark);
    lop_buf_free(&d);
}

/* x-kubernetes-validations of one node; a transition rule only runs when there is an old value. */
static void check_rules(vctx_t *c, const as_schema_t *s, const json_t *v, const json_t *old)
{
    for (size_t i = 0; i < s->nrules; i++) {
        const as_rule_t *r = &s->rules[i];
        if (r->not_evaluated) {
            if (!warn_once(c, r)) continue; /* the items of a list: one Warning, naming the first */
            lop_buf_t w = LOP_BUF_INIT;
            lop_buf_printf(&w, "%s: x-kubernetes-validations rule not evaluated by the local API server: %s",
                           cur_path(c), r->not_evaluated);
            json_array_append_new(c->r->warnings, json_string(w.data));
            lop_buf_free(&w);
            continue;
        }
        if (r->msg_note && warn_once(c, &r->msg_note)) {
            lop_buf_t w = LOP_BUF_INIT;
            lop_buf_printf(&w, "%s: messageExpression not evaluated by the local API server: %s", cur_path(c),
                           r->msg_note);
            json_array_append_new(c->r->warnings, json_string(w.data));
            lop_buf_free(&w);
        }
        if (!r->prog || (r->transition && !old)) continue; /* no rule text; transition rule on create */
        char err[300];
        int rc = as_cel_eval_bool(r->prog, v, old, err, sizeof err);
        if (rc == 1) continue;
        rule_failed(c, s, r, v, old, rc < 0 ? err : NULL);
    }
}

static void check_value(vctx_t *c, const as_schema_t *s, json_t *v, const json_t *old)
{
    if (!check_type(c, s, v)) return;
    if (json_is_string(v)) check_string(c, s, v);
    if (json_is_number(v)) check_number(c, s, v);
    if (s->enum_vals) check_enum(c, s, v);
    if (json_is_object(v))
        check_object(c, s, v, old, false);
    else if (json_is_array(v))
        check_array(c, s, v, old);
    if (s->nrules) check_rules(c, s, v, old);
}

int as_schema_validate(const as_schema_t *s, json_t *obj, const json_t *old, as_schema_result_t *r)
{
    if (!s) return 0;
    vctx_t c = {.r = r, .list_causes = json_array(), .cel_causes = json_array()};
    check_object(&c, s, obj, old, true);
    if (s->nrules) check_rules(&c, s, obj, old);
    json_array_extend(r->causes, c.list_causes);
    json_array_extend(r->causes, c.cel_causes);
    json_decref(c.list_causes);
    json_decref(c.cel_causes);
    lop_buf_free(&c.path);
    lop_buf_free(&c.warned);
    return c.ncauses;
}
