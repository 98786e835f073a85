/* SPDX-License-Identifier: Apache-2.0 */
/* as_cel_eval.c — evaluation of the CEL subset over jansson values (cel-spec langdef.md: runtime
 * errors, commutative && and ||, heterogeneous numeric equality and ordering; the macros; the
 * string extensions Kubernetes enables). */
#include "apiserver/as_cel_ast.h"

#include "apiserver/as_schema_format.h"
#include "host/codec/jsonstr.h"
#include "host/util/buf.h"
#include "host/util/utf8.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cel_var {
    const char *name;
    const json_t *value;
} cel_var_t;

typedef struct cel_env {
    cel_var_t vars[10];
    int nvars;
    char *err;
    size_t errlen;
    long budget; /* evaluation steps left: a bound on cost, like kube's per-rule budget */
} cel_env_t;

static json_t *err(cel_env_t *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static json_t *err(cel_env_t *e, const char *fmt, ...)
{
    if (!e->err[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->err, e->errlen, fmt, ap);
        va_end(ap);
    }
    return NULL;
}

static json_t *boolean(bool b) { return b ? json_true() : json_false(); }

static bool is_int(const json_t *v) { return json_is_integer(v); }

static size_t runes(const json_t *s)
{
    const char *p = json_string_value(s);
    size_t n = json_string_length(s), count = 0;
    for (size_t i = 0; i < n; count++) {
        size_t l = lop_utf8_decode((const unsigned char *)p + i, n - i, NULL);
        i += l ? l : 1;
    }
    return count;
}

/* CEL equality: numbers compare by value across int and double; lists and maps deeply. */
static bool equal(const json_t *a, const json_t *b) { return lop_json_value_equal(a, b); }

/* <0, 0, >0; or 2 when the values are not ordered (no such overload). */
static int compare(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b)) {
        if (is_int(a) && is_int(b))
            return json_integer_value(a) < json_integer_value(b) ? -1 : json_integer_value(a) > json_integer_value(b);
        double x = json_number_value(a), y = json_number_value(b);
        return x < y ? -1 : x > y;
    }
    if (json_is_string(a) && json_is_string(b)) {
        int c = strcmp(json_string_value(a), json_string_value(b));
        return c < 0 ? -1 : c > 0;
    }
    if (json_is_boolean(a) && json_is_boolean(b)) return (int)json_is_true(a) - (int)json_is_true(b);
    return 2;
}

static json_t *int_arith(cel_env_t *e, int op, json_int_t x, json_int_t y)
{
    long long r;
    switch (op) {
    case CEL_ADD:
        if (__builtin_add_overflow(x, y, &r)) return err(e, "integer overflow");
        return json_integer(r);
    case CEL_SUB:
        if (__builtin_sub_overflow(x, y, &r)) return err(e, "integer overflow");
        return json_integer(r);
    case CEL_MUL:
        if (__builtin_mul_overflow(x, y, &r)) return err(e, "integer overflow");
        return json_integer(r);
    case CEL_DIV:
        if (y == 0) return err(e, "division by zero");
        if (x == INT64_MIN && y == -1) return err(e, "integer overflow");
        return json_integer(x / y);
    default:
        if (y == 0) return err(e, "modulus by zero");
        if (x == INT64_MIN && y == -1) return json_integer(0);
        return json_integer(x % y);
    }
}

static json_t *arith(cel_env_t *e, int op, const json_t *a, const json_t *b)
{
    if (is_int(a) && is_int(b)) return int_arith(e, op, json_integer_value(a), json_integer_value(b));
    if (json_is_number(a) && json_is_number(b) && op != CEL_MOD) {
        double x = json_number_value(a), y = json_number_value(b);
        return json_real(op == CEL_ADD ? x + y : op == CEL_SUB ? x - y : op == CEL_MUL ? x * y : x / y);
    }
    if (op == CEL_ADD && json_is_string(a) && json_is_string(b)) {
        lop_buf_t s = LOP_BUF_INIT;
        lop_buf_append(&s, json_string_value(a), json_string_length(a));
        lop_buf_append(&s, json_string_value(b), json_string_length(b));
        json_t *r = json_stringn(s.data ? s.data : "", s.len);
        lop_buf_free(&s);
        return r;
    }
    if (op == CEL_ADD && json_is_array(a) && json_is_array(b)) {
        json_t *r = json_copy((json_t *)a);
        json_array_extend(r, (json_t *)b);
        return r;
    }
    return err(e, "no such overload");
}

static json_t *contains_value(cel_env_t *e, const json_t *needle, const json_t *hay)
{
    if (json_is_array(hay)) {
        size_t i;
        json_t *v;
        json_array_foreach(hay, i, v)
        {
            if (equal(needle, v)) return json_true();
        }
        return json_false();
    }
    if (json_is_object(hay))
        return json_is_string(needle) ? boolean(json_object_get(hay, json_string_value(needle))) : json_false();
    return err(e, "no such overload");
}

static json_t *binary_op(cel_env_t *e, int op, const json_t *a, const json_t *b)
{
    switch (op) {
    case CEL_EQ: return boolean(equal(a, b));
    case CEL_NE: return boolean(!equal(a, b));
    case CEL_IN: return contains_value(e, a, b);
    case CEL_LT:
    case CEL_LE:
    case CEL_GT:
    case CEL_GE: {
        int c = compare(a, b);
        if (c == 2) return err(e, "no such overload");
        return boolean(op == CEL_LT ? c < 0 : op == CEL_LE ? c <= 0 : op == CEL_GT ? c > 0 : c >= 0);
    }
    default: return arith(e, op, a, b);
    }
}

static json_t *eval(const cel_node_t *n, cel_env_t *e);

static json_t *select_field(cel_env_t *e, const json_t *obj, const char *name)
{
    if (!json_is_object(obj)) return err(e, "no such overload");
    json_t *v = json_object_get(obj, name);
    if (!v) return err(e, "no such key: %s", name);
    return json_incref(v);
}

static json_t *index_value(cel_env_t *e, const json_t *a, const json_t *i)
{
    if (json_is_array(a)) {
        if (!json_is_number(i) || (json_is_real(i) && json_real_value(i) != floor(json_real_value(i))))
            return err(e, "no such overload");
        double d = json_number_value(i);
        if (d < 0 || d >= (double)json_array_size(a)) return err(e, "index out of range: %.0f", d);
        return json_incref(json_array_get(a, (size_t)d));
    }
    if (json_is_object(a)) {
        if (!json_is_string(i)) return err(e, "no such key");
        return select_field(e, a, json_string_value(i));
    }
    return err(e, "no such overload");
}

/* && and ||: a definite answer from either side wins over an error on the other (cel-spec). */
static json_t *logical(const cel_node_t *n, cel_env_t *e)
{
    bool is_and = n->kind == CEL_AND;
    json_t *a = eval(n->a, e);
    if (a && !json_is_boolean(a)) {
        json_decref(a);
        return err(e, "no such overload");
    }
    if (a && json_is_true(a) != is_and) return a; /* false && _, true || _ */
    char saved[300];
    snprintf(saved, sizeof saved, "%s", e->err);
    e->err[0] = '\0';
    json_t *b = eval(n->b, e);
    if (b && !json_is_boolean(b)) {
        json_decref(b);
        b = err(e, "no such overload");
    }
    if (b && json_is_true(b) != is_and) {
        json_decref(a);
        return b;
    }
    if (!a) { /* the left error stands */
        json_decref(b);
        snprintf(e->err, e->errlen, "%s", saved);
        return NULL;
    }
    json_decref(a);
    return b;
}

static json_t *unary(const cel_node_t *n, cel_env_t *e)
{
    json_t *a = eval(n->a, e);
    if (!a) return NULL;
    json_t *r;
    if (n->op == '!')
        r = json_is_boolean(a) ? boolean(!json_is_true(a)) : err(e, "no such overload");
    else if (is_int(a))
        r = json_integer_value(a) == INT64_MIN ? err(e, "integer overflow") : json_integer(-json_integer_value(a));
    else
        r = json_is_real(a) ? json_real(-json_real_value(a)) : err(e, "no such overload");
    json_decref(a);
    return r;
}

static json_t *eval_list(const cel_node_t *n, cel_env_t *e)
{
    json_t *l = json_array();
    for (size_t i = 0; i < n->nargs; i++) {
        json_t *v = eval(n->args[i], e);
        if (!v) {
            json_decref(l);
            return NULL;
        }
        json_array_append_new(l, v);
    }
    return l;
}

static json_t *eval_map(const cel_node_t *n, cel_env_t *e)
{
    json_t *m = json_object();
    for (size_t i = 0; i + 1 < n->nargs; i += 2) {
        json_t *k = eval(n->args[i], e), *v = k ? eval(n->args[i + 1], e) : NULL;
        if (k && v && !json_is_string(k)) err(e, "map keys other than strings are not supported");
        if (!k || !v || e->err[0]) {
            json_decref(k);
            json_decref(v);
            json_decref(m);
            return NULL;
        }
        json_object_set_new(m, json_string_value(k), v);
        json_decref(k);
    }
    return m;
}

static json_t *size_of(cel_env_t *e, const json_t *v)
{
    if (json_is_string(v)) return json_integer((json_int_t)runes(v));
    if (json_is_array(v)) return json_integer((json_int_t)json_array_size(v));
    if (json_is_object(v)) return json_integer((json_int_t)json_object_size(v));
    return err(e, "no such overload");
}

/* int(), double(), string(), bool() conversions and size(). */
static json_t *convert(cel_env_t *e, const char *fn, const json_t *v)
{
    if (!strcmp(fn, "size")) return size_of(e, v);
    if (!strcmp(fn, "int")) {
        if (is_int(v)) return json_incref((json_t *)v);
        if (json_is_real(v)) {
            double d = json_real_value(v);
            if (!(d > -9.2233720368547758e18 && d < 9.2233720368547758e18)) return err(e, "range error");
            return json_integer((json_int_t)d);
        }
        if (json_is_string(v)) {
            char *end;
            long long x = strtoll(json_string_value(v), &end, 10);
            if (*end || end == json_string_value(v)) return err(e, "cannot convert to int");
            return json_integer(x);
        }
    }
    if (!strcmp(fn, "double")) {
        if (json_is_number(v)) return json_real(json_number_value(v));
        if (json_is_string(v)) {
            char *end;
            double d = strtod(json_string_value(v), &end);
            if (*end || end == json_string_value(v)) return err(e, "cannot convert to double");
            return json_real(d);
        }
    }
    if (!strcmp(fn, "string")) {
        if (json_is_string(v)) return json_incref((json_t *)v);
        if (json_is_boolean(v)) return json_string(json_is_true(v) ? "true" : "false");
        if (json_is_number(v)) {
            char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
            json_t *r = json_string(s ? s : "");
            free(s);
            return r;
        }
    }
    if (!strcmp(fn, "bool")) {
        if (json_is_boolean(v)) return json_incref((json_t *)v);
        const char *s = json_string_value(v);
        if (s && (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "1") || !strcmp(s, "t"))) return json_true();
        if (s && (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "0") || !strcmp(s, "f")))
            return json_false();
    }
    return err(e, "no such overload");
}

static json_t *call(const cel_node_t *n, cel_env_t *e)
{
    json_t *v = eval(n->args[0], e);
    if (!v) return NULL;
    json_t *r = convert(e, n->name, v);
    json_decref(v);
    return r;
}

static json_t *string_case(const json_t *s, bool upper)
{
    char *c = lop_xstrdup(json_string_value(s));
    for (char *p = c; *p; p++) *p = (char)(upper ? toupper((unsigned char)*p) : tolower((unsigned char)*p));
    json_t *r = json_stringn(c, json_string_length(s));
    free(c);
    return r;
}

static json_t *string_trim(const json_t *s)
{
    const char *p = json_string_value(s);
    size_t n = json_string_length(s), a = 0;
    while (a < n && isspace((unsigned char)p[a])) a++;
    while (n > a && isspace((unsigned char)p[n - 1])) n--;
    return json_stringn(p + a, n - a);
}

static json_t *string_method(cel_env_t *e, const cel_node_t *n, const json_t *s, const json_t *arg)
{
    const char *m = n->name;
    if (!strcmp(m, "lowerAscii") || !strcmp(m, "upperAscii")) return string_case(s, m[0] == 'u');
    if (!strcmp(m, "trim")) return string_trim(s);
    if (!json_is_string(arg)) return err(e, "no such overload");
    const char *x = json_string_value(s), *y = json_string_value(arg);
    size_t xn = json_string_length(s), yn = json_string_length(arg);
    if (!strcmp(m, "startsWith")) return boolean(xn >= yn && !memcmp(x, y, yn));
    if (!strcmp(m, "endsWith")) return boolean(xn >= yn && !memcmp(x + xn - yn, y, yn));
    if (!strcmp(m, "contains")) return boolean(yn == 0 || memmem(x, xn, y, yn) != NULL);
    if (n->re) return boolean(as_pattern_match(n->re, x)); /* matches() with a literal pattern */
    regex_t re;
    if (as_pattern_compile(&re, y) != 0) return err(e, "regular expression not supported: %s", y);
    bool ok = as_pattern_match(&re, x);
    regfree(&re);
    return boolean(ok);
}

static json_t *method(const cel_node_t *n, cel_env_t *e)
{
    json_t *t = eval(n->a, e);
    if (!t) return NULL;
    json_t *arg = n->nargs ? eval(n->args[0], e) : NULL, *r;
    if (n->nargs && !arg)
        r = NULL;
    else if (!strcmp(n->name, "size"))
        r = size_of(e, t);
    else if (json_is_string(t))
        r = string_method(e, n, t, arg);
    else
        r = err(e, "no such overload");
    json_decref(arg);
    json_decref(t);
    return r;
}

/* The elements a macro ranges over: a list's items, a map's keys (a new array). */
static json_t *range_of(cel_env_t *e, const json_t *t)
{
    if (json_is_array(t)) return json_incref((json_t *)t);
    if (!json_is_object(t)) return err(e, "no such overload");
    json_t *keys = json_array();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)t, k, v) json_array_append_new(keys, json_string(k));
    return keys;
}

/* One step of a macro: the body with the variable bound to item. */
static json_t *macro_step(const cel_node_t *n, cel_env_t *e, const json_t *item)
{
    if (e->nvars == (int)(sizeof e->vars / sizeof e->vars[0])) return err(e, "macros nest too deeply");
    e->vars[e->nvars].name = n->var;
    e->vars[e->nvars++].value = item;
    json_t *r = eval(n->b, e);
    e->nvars--;
    return r;
}

static json_t *macro(const cel_node_t *n, cel_env_t *e)
{
    json_t *t = eval(n->a, e);
    json_t *items = t ? range_of(e, t) : NULL;
    json_decref(t);
    if (!items) return NULL;
    const char *m = n->name;
    bool is_map = !strcmp(m, "map"), is_filter = !strcmp(m, "filter");
    json_t *out = is_map || is_filter ? json_array() : NULL;
    long count = 0;
    bool failed = false;
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it)
    {
        json_t *r = macro_step(n, e, it);
        if (!r || (!is_map && !json_is_boolean(r))) {
            if (r) err(e, "no such overload");
            json_decref(r);
            failed = true;
            break;
        }
        if (is_map)
            json_array_append(out, r);
        else if (is_filter && json_is_true(r))
            json_array_append(out, it);
        count += json_is_true(r);
        bool done = (!strcmp(m, "all") && !json_is_true(r)) || (!strcmp(m, "exists") && json_is_true(r));
        json_decref(r);
        if (done) break;
    }
    size_t n_items = json_array_size(items);
    json_decref(items);
    if (failed) {
        json_decref(out);
        return NULL;
    }
    if (out) return out;
    if (!strcmp(m, "all")) return boolean(count == (long)n_items);
    if (!strcmp(m, "exists")) return boolean(count > 0);
    return boolean(count == 1); /* exists_one */
}

static json_t *ident(const cel_node_t *n, cel_env_t *e)
{
    for (int i = e->nvars; i-- > 0;) {
        if (strcmp(e->vars[i].name, n->name)) continue;
        if (!e->vars[i].value) return err(e, "no such attribute: %s", n->name);
        return json_incref((json_t *)e->vars[i].value);
    }
    return err(e, "undeclared reference to '%s'", n->name);
}

static json_t *eval_binary(const cel_node_t *n, cel_env_t *e)
{
    json_t *a = eval(n->a, e);
    json_t *b = a ? eval(n->b, e) : NULL;
    json_t *r = a && b ? binary_op(e, n->op, a, b) : NULL;
    json_decref(a);
    json_decref(b);
    return r;
}

static json_t *eval_cond(const cel_node_t *n, cel_env_t *e)
{
    json_t *c = eval(n->a, e);
    if (!c) return NULL;
    bool ok = json_is_boolean(c), t = json_is_true(c);
    json_decref(c);
    if (!ok) return err(e, "no such overload");
    return eval(t ? n->b : n->c, e);
}

static json_t *eval_access(const cel_node_t *n, cel_env_t *e)
{
    json_t *a = eval(n->a, e), *r = NULL;
    if (!a) return NULL;
    if (n->kind == CEL_SELECT)
        r = select_field(e, a, n->name);
    else if (n->kind == CEL_HAS)
        r = json_is_object(a) ? boolean(json_object_get(a, n->name)) : err(e, "no such overload");
    else {
        json_t *i = eval(n->b, e);
        r = i ? index_value(e, a, i) : NULL;
        json_decref(i);
    }
    json_decref(a);
    return r;
}

static json_t *eval(const cel_node_t *n, cel_env_t *e)
{
    if (--e->budget < 0) return err(e, "operation cancelled: actual cost limit exceeded");
    switch (n->kind) {
    case CEL_LIT: return json_incref(n->lit);
    case CEL_IDENT: return ident(n, e);
    case CEL_SELECT:
    case CEL_HAS:
    case CEL_INDEX: return eval_access(n, e);
    case CEL_UNARY: return unary(n, e);
    case CEL_BINARY: return eval_binary(n, e);
    case CEL_AND:
    case CEL_OR: return logical(n, e);
    case CEL_COND: return eval_cond(n, e);
    case CEL_LIST: return eval_list(n, e);
    case CEL_MAP: return eval_map(n, e);
    case CEL_CALL: return call(n, e);
    case CEL_METHOD: return method(n, e);
    case CEL_MACRO: return macro(n, e);
    }
    return err(e, "unsupported expression");
}

/* Evaluate prog with self/oldSelf bound; err[0] is set when it fails. */
static json_t *run(const as_cel_prog_t *p, const json_t *self, const json_t *old_self, char *errbuf, size_t errlen)
{
    cel_env_t env = {.err = errbuf, .errlen = errlen, .budget = 1000000};
    errbuf[0] = '\0';
    env.vars[0] = (cel_var_t){"self", self};
    env.vars[1] = (cel_var_t){"oldSelf", old_self};
    env.nvars = 2;
    json_t *r = eval(p->root, &env);
    if (!r && !errbuf[0]) snprintf(errbuf, errlen, "evaluation failed");
    return r;
}

int as_cel_eval_bool(const as_cel_prog_t *p, const json_t *self, const json_t *old_self, char *errbuf, size_t errlen)
{
    json_t *r = run(p, self, old_self, errbuf, errlen);
    if (!r) return -1;
    int rc = json_is_boolean(r) ? json_is_true(r) : -1;
    if (rc < 0) snprintf(errbuf, errlen, "rule did not evaluate to a bool");
    json_decref(r);
    return rc;
}

char *as_cel_eval_string(const as_cel_prog_t *p, const json_t *self, const json_t *old_self, char *errbuf,
                         size_t errlen)
{
    json_t *r = run(p, self, old_self, errbuf, errlen);
    char *s = json_is_string(r) ? lop_xstrdup(json_string_value(r)) : NULL;
    if (r && !s) snprintf(errbuf, errlen, "messageExpression did not evaluate to a string");
    json_decref(r);
    return s;
}
