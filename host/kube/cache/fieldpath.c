/* SPDX-License-Identifier: Apache-2.0 */
/* fieldpath.c — field paths of declared field indexes (see fieldpath.h). */
#include "host/kube/cache/fieldpath.h"

#include "host/util/buf.h"

#include <jansson.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum step_kind { STEP_MEMBER, STEP_EACH, STEP_INDEX } step_kind_t;

typedef struct step {
    step_kind_t kind;
    char *name;   /* STEP_MEMBER */
    size_t index; /* STEP_INDEX */
} step_t;

struct lop_fieldpath {
    char *text;
    step_t *steps;
    size_t n;
};

void lop_fieldpath_free(lop_fieldpath_t *p)
{
    if (!p) return;
    for (size_t i = 0; i < p->n; i++) free(p->steps[i].name);
    free(p->steps);
    free(p->text);
    free(p);
}

const char *lop_fieldpath_text(const lop_fieldpath_t *p) { return p->text; }

static void push(lop_fieldpath_t *p, step_t s)
{
    p->steps = lop_xrealloc(p->steps, (p->n + 1) * sizeof *p->steps);
    p->steps[p->n++] = s;
}

static bool name_char(char c) { return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '$'; }

static lop_rc_t bad(lop_fieldpath_t *p, lop_err_t *err, const char *path, size_t at, const char *what)
{
    lop_fieldpath_free(p);
    return lop_err_set(err, LOP_EINVAL, 0, "Invalid", "field path \"%s\": %s at %zu", path, what, at);
}

lop_rc_t lop_fieldpath_compile(const char *path, lop_fieldpath_t **out, lop_err_t *err)
{
    *out = NULL;
    if (!path || !*path) return lop_err_set(err, LOP_EINVAL, 0, "Invalid", "field path must not be empty");
    lop_fieldpath_t *p = lop_xcalloc(1, sizeof *p);
    p->text = lop_xstrdup(path);
    size_t i = 0, len = strlen(path);
    if (path[0] == '.') i = 1;
    bool need_member = true; /* at the start and after a '.' */
    while (i < len) {
        char c = path[i];
        if (need_member) {
            size_t s = i;
            while (i < len && name_char(path[i])) i++;
            if (i == s) return bad(p, err, path, s, path[s] == '.' ? "empty member" : "expected a member name");
            push(p, (step_t){STEP_MEMBER, lop_xstrndup(path + s, i - s), 0});
            need_member = false;
        } else if (c == '.') {
            i++;
            need_member = true;
            if (i == len) return bad(p, err, path, i, "empty member");
        } else if (c == '[') {
            size_t s = i++;
            if (i < len && path[i] == '*') {
                if (i + 1 >= len || path[i + 1] != ']') return bad(p, err, path, s, "'[*' without ']'");
                push(p, (step_t){STEP_EACH, NULL, 0});
                i += 2;
            } else if (i < len && (path[i] == '\'' || path[i] == '"')) {
                char q = path[i++];
                const char *end = strchr(path + i, q);
                if (!end || end[1] != ']') return bad(p, err, path, s, "unterminated quoted member");
                if (end == path + i) return bad(p, err, path, s, "empty quoted member");
                push(p, (step_t){STEP_MEMBER, lop_xstrndup(path + i, (size_t)(end - (path + i))), 0});
                i = (size_t)(end - path) + 2;
            } else if (i < len && isdigit((unsigned char)path[i])) {
                size_t v = 0;
                while (i < len && isdigit((unsigned char)path[i])) {
                    if (v > 100000000) return bad(p, err, path, s, "index too large");
                    v = v * 10 + (size_t)(path[i++] - '0');
                }
                if (i >= len || path[i] != ']') return bad(p, err, path, s, "index without ']'");
                push(p, (step_t){STEP_INDEX, NULL, v});
                i++;
            } else {
                return bad(p, err, path, s, "expected [*], [N] or ['name']");
            }
        } else {
            return bad(p, err, path, i, "unexpected character");
        }
    }
    *out = p;
    return LOP_OK;
}

typedef struct acc {
    char **vals;
    size_t n, cap;
} acc_t;

static void acc_add(acc_t *a, char *v)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 4;
        a->vals = lop_xrealloc(a->vals, a->cap * sizeof *a->vals);
    }
    a->vals[a->n++] = v;
}

/* A real in the shortest form that reads back as the same double. */
static char *real_text(double d)
{
    char buf[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, d);
        if (strtod(buf, NULL) == d) break;
    }
    return lop_xstrdup(buf);
}

static void walk(const step_t *s, size_t n, const json_t *v, acc_t *a)
{
    if (!v) return;
    if (n == 0) {
        char buf[32];
        switch (json_typeof(v)) {
        case JSON_STRING: acc_add(a, lop_xstrndup(json_string_value(v), json_string_length(v))); break;
        case JSON_INTEGER:
            snprintf(buf, sizeof buf, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
            acc_add(a, lop_xstrdup(buf));
            break;
        case JSON_REAL: acc_add(a, real_text(json_real_value(v))); break;
        case JSON_TRUE: acc_add(a, lop_xstrdup("true")); break;
        case JSON_FALSE: acc_add(a, lop_xstrdup("false")); break;
        default: break; /* null, object, array: no value */
        }
        return;
    }
    switch (s->kind) {
    case STEP_MEMBER:
        if (json_is_object(v)) walk(s + 1, n - 1, json_object_get(v, s->name), a);
        break;
    case STEP_INDEX:
        if (json_is_array(v)) walk(s + 1, n - 1, json_array_get(v, s->index), a);
        break;
    case STEP_EACH:
        if (json_is_array(v))
            for (size_t i = 0; i < json_array_size(v); i++) walk(s + 1, n - 1, json_array_get(v, i), a);
        break;
    }
}

int lop_fieldpath_eval(const lop_fieldpath_t *p, const char *json, size_t len, char ***vals)
{
    *vals = NULL;
    json_t *root = json_loadb(json, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (!root) return -1;
    acc_t a = {NULL, 0, 0};
    walk(p->steps, p->n, root, &a);
    json_decref(root);
    *vals = a.vals;
    return (int)a.n;
}

char *lop_fieldpath_lookup_key(const char *ns, const char *value)
{
    lop_buf_t b = {0};
    lop_buf_printf(&b, "%s/%s", ns && *ns ? ns : "*", value ? value : "");
    return b.data;
}

int lop_fieldpath_ns_keys(const lop_obj_t *o, char **raw, int n, char ***vals)
{
    *vals = NULL;
    if (n <= 0) {
        free(raw);
        return 0;
    }
    bool namespaced = o->namespace_ && *o->namespace_;
    char **out = lop_xcalloc((size_t)n * (namespaced ? 2 : 1), sizeof *out);
    size_t k = 0;
    for (int i = 0; i < n; i++) {
        if (namespaced) out[k++] = lop_fieldpath_lookup_key(o->namespace_, raw[i]);
        out[k++] = lop_fieldpath_lookup_key(NULL, raw[i]);
        free(raw[i]);
    }
    free(raw);
    *vals = out;
    return (int)k;
}

int lop_fieldpath_index_fn(void *ud, const lop_obj_t *o, char ***vals)
{
    char **raw = NULL;
    int n = lop_fieldpath_eval(ud, o->json, o->json_len, &raw);
    *vals = NULL;
    if (n < 0) return n;
    return lop_fieldpath_ns_keys(o, raw, n, vals);
}
