/* SPDX-License-Identifier: Apache-2.0 */
/* as_jsonpath.c — a JSONPath subset for printer columns (client-go util/jsonpath semantics for the
 * paths it accepts: a missing field matches nothing, `[*]` and `.*` fan out in order). See
 * as_jsonpath.h. */
#include "apiserver/as_jsonpath.h"

#include <stdlib.h>
#include <string.h>

enum step_kind { STEP_FIELD, STEP_INDEX, STEP_ALL, STEP_FILTER };

typedef struct step {
    enum step_kind kind;
    char name[256]; /* STEP_FIELD; STEP_FILTER: the dotted path after "@." */
    long index;     /* STEP_INDEX; negative counts from the end */
    bool negate;    /* STEP_FILTER: != */
    json_t *value;  /* STEP_FILTER: the literal compared with (owned) */
} step_t;

#define MAX_STEPS 32

/* A field name runs up to the next '.', '[' or the end. */
static const char *parse_name(const char *p, step_t *st)
{
    size_t n = strcspn(p, ".[");
    if (n == 0 || n >= sizeof st->name) return NULL;
    if (n == 1 && *p == '*') {
        st->kind = STEP_ALL;
        return p + 1;
    }
    st->kind = STEP_FIELD;
    memcpy(st->name, p, n);
    st->name[n] = '\0';
    return p + n;
}

/* A filter `?(@.a.b==LIT)` / `!=`; p points at '?'. */
static const char *parse_filter(const char *p, step_t *st)
{
    if (strncmp(p, "?(@.", 4)) return NULL;
    p += 4;
    size_t n = strcspn(p, "=! )");
    if (n == 0 || n >= sizeof st->name) return NULL;
    memcpy(st->name, p, n);
    st->name[n] = '\0';
    p += n;
    while (*p == ' ') p++;
    if ((p[0] != '=' && p[0] != '!') || p[1] != '=') return NULL;
    st->negate = *p == '!';
    p += 2;
    while (*p == ' ') p++;
    const char *end;
    if (*p == '"' || *p == '\'') {
        end = strchr(p + 1, *p);
        if (!end) return NULL;
        st->value = json_stringn(p + 1, (size_t)(end - p - 1));
        end++;
    } else {
        size_t m = strcspn(p, " )");
        char lit[64];
        if (m == 0 || m >= sizeof lit) return NULL;
        memcpy(lit, p, m);
        lit[m] = '\0';
        char *e;
        double d = strtod(lit, &e);
        if (!strcmp(lit, "true") || !strcmp(lit, "false"))
            st->value = json_boolean(lit[0] == 't');
        else if (!*e)
            st->value = json_real(d);
        else
            return NULL;
        end = p + m;
    }
    while (*end == ' ') end++;
    if (end[0] != ')' || end[1] != ']') {
        json_decref(st->value);
        st->value = NULL;
        return NULL;
    }
    st->kind = STEP_FILTER;
    return end + 2;
}

/* A bracket: [N], [-N], [*], ['key'], ["key"] or a filter; p points after '['. */
static const char *parse_bracket(const char *p, step_t *st)
{
    if (*p == '?') return parse_filter(p, st);
    if (*p == '\'' || *p == '"') {
        const char *end = strchr(p + 1, *p);
        size_t n = end ? (size_t)(end - p - 1) : 0;
        if (!end || n >= sizeof st->name || end[1] != ']') return NULL;
        st->kind = STEP_FIELD;
        memcpy(st->name, p + 1, n);
        st->name[n] = '\0';
        return end + 2;
    }
    if (p[0] == '*' && p[1] == ']') {
        st->kind = STEP_ALL;
        return p + 2;
    }
    char *end;
    long v = strtol(p, &end, 10);
    if (end == p || *end != ']') return NULL;
    st->kind = STEP_INDEX;
    st->index = v;
    return end + 1;
}

static void free_steps(step_t *steps, int n)
{
    for (int i = 0; i < n; i++) json_decref(steps[i].value);
}

/* Parse path into steps (release with free_steps); -1 when it is outside the subset. */
static int parse(const char *path, step_t *steps, int max)
{
    memset(steps, 0, (size_t)max * sizeof *steps);
    size_t len = strlen(path);
    char buf[1024];
    if (len >= sizeof buf) return -1;
    memcpy(buf, path, len + 1);
    char *p = buf;
    while (*p == ' ') p++;
    if (*p == '{') { /* the template form: one {...} around the whole path */
        char *close = strrchr(p, '}');
        if (!close || close[1]) return -1;
        *close = '\0';
        p++;
    }
    if (*p == '$') p++;
    int n = 0;
    while (*p) {
        if (n == max) {
            free_steps(steps, n);
            return -1;
        }
        const char *next;
        if (*p == '.')
            next = parse_name(p + 1, &steps[n]);
        else if (*p == '[')
            next = parse_bracket(p + 1, &steps[n]);
        else
            next = NULL;
        if (!next) {
            free_steps(steps, n);
            return -1;
        }
        n++;
        p = (char *)next;
    }
    return n;
}

/* Does element v pass the filter st (its field equal, or for != unequal, to the literal)? */
static bool filter_match(const json_t *v, const step_t *st)
{
    const json_t *cur = v;
    const char *p = st->name;
    char seg[256];
    while (cur && *p) {
        size_t n = strcspn(p, ".");
        memcpy(seg, p, n);
        seg[n] = '\0';
        cur = json_is_object(cur) ? json_object_get(cur, seg) : NULL;
        p += n + (p[n] == '.');
    }
    if (!cur) return false; /* a missing field fails both == and != */
    bool eq = json_is_number(cur) && json_is_number(st->value) ? json_number_value(cur) == json_number_value(st->value)
                                                               : json_equal((json_t *)cur, st->value);
    return st->negate ? !eq : eq;
}

static void walk(const json_t *cur, const step_t *steps, int n, json_t *out)
{
    if (!cur) return;
    if (n == 0) {
        json_array_append(out, (json_t *)cur);
        return;
    }
    const step_t *st = steps;
    if (st->kind == STEP_FIELD) {
        if (json_is_object(cur)) walk(json_object_get(cur, st->name), steps + 1, n - 1, out);
    } else if (st->kind == STEP_INDEX) {
        if (!json_is_array(cur)) return;
        long size = (long)json_array_size(cur), i = st->index < 0 ? size + st->index : st->index;
        if (i >= 0 && i < size) walk(json_array_get(cur, (size_t)i), steps + 1, n - 1, out);
    } else if (st->kind == STEP_FILTER) {
        size_t i;
        const json_t *v;
        json_array_foreach(cur, i, v)
        {
            if (filter_match(v, st)) walk(v, steps + 1, n - 1, out);
        }
    } else if (json_is_array(cur)) {
        size_t i;
        const json_t *v;
        json_array_foreach(cur, i, v) walk(v, steps + 1, n - 1, out);
    } else if (json_is_object(cur)) {
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)cur, k, v) walk(v, steps + 1, n - 1, out);
    }
}

bool as_jsonpath_valid(const char *path)
{
    step_t steps[MAX_STEPS];
    int n = path ? parse(path, steps, MAX_STEPS) : -1;
    if (n > 0) free_steps(steps, n);
    return n >= 0;
}

json_t *as_jsonpath_eval(const json_t *obj, const char *path)
{
    step_t steps[MAX_STEPS];
    int n = path ? parse(path, steps, MAX_STEPS) : -1;
    if (n < 0) return NULL;
    json_t *out = json_array();
    walk(obj, steps, n, out);
    free_steps(steps, n);
    return out;
}
