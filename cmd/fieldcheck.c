/* SPDX-License-Identifier: Apache-2.0 */
/* fieldcheck.c — fields a script uses that the CRD schema lacks (fieldcheck.h). */
#include "cmd/fieldcheck.h"

#include "host/util/buf.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ tokens */

typedef enum tok_kind { T_NAME, T_STRING, T_NUMBER, T_OP } tok_kind_t;

typedef struct tok {
    tok_kind_t kind;
    char *text; /* a name, a string's raw contents (escapes kept), a number, an operator */
    int line;
} tok_t;

typedef struct toks {
    tok_t *t;
    size_t n, cap;
} toks_t;

static void push_tok(toks_t *ts, tok_kind_t kind, const char *s, size_t len, int line)
{
    if (ts->n == ts->cap) {
        ts->cap = ts->cap ? 2 * ts->cap : 256;
        ts->t = (tok_t *)lop_xrealloc(ts->t, ts->cap * sizeof *ts->t);
    }
    char *text = (char *)lop_xmalloc(len + 1);
    memcpy(text, s, len);
    text[len] = '\0';
    ts->t[ts->n++] = (tok_t){kind, text, line};
}

static void free_toks(toks_t *ts)
{
    for (size_t i = 0; i < ts->n; i++) free(ts->t[i].text);
    free(ts->t);
}

/* The level of a long bracket opening at p ("[[" 0, "[=[" 1, ...), or -1. */
static int long_open(const char *p, const char *end)
{
    if (p >= end || *p != '[') return -1;
    int level = 0;
    for (p++; p < end && *p == '='; p++) level++;
    return p < end && *p == '[' ? level : -1;
}

/* Skip a long bracket of level at p (at its opening '['); returns the end, counting lines. */
static const char *skip_long(const char *p, const char *end, int level, int *line)
{
    p += level + 2;
    for (; p < end; p++) {
        if (*p == '\n') (*line)++;
        if (*p != ']') continue;
        const char *q = p + 1;
        int l = 0;
        while (q < end && *q == '=') q++, l++;
        if (l == level && q < end && *q == ']') return q + 1;
    }
    return end;
}

static void tokenize(const char *s, size_t len, toks_t *ts)
{
    const char *p = s, *end = s + len;
    int line = 1;
    if (len > 1 && s[0] == '#' && s[1] == '!') /* a shebang line */
        while (p < end && *p != '\n') p++;
    while (p < end) {
        char c = *p;
        if (c == '\n') {
            line++;
            p++;
        } else if (isspace((unsigned char)c)) {
            p++;
        } else if (c == '-' && p + 1 < end && p[1] == '-') {
            int level = long_open(p + 2, end);
            if (level >= 0) {
                p = skip_long(p + 2, end, level, &line);
            } else {
                while (p < end && *p != '\n') p++;
            }
        } else if (c == '"' || c == '\'') {
            const char *q = p + 1;
            while (q < end && *q != c && *q != '\n') q += (*q == '\\' && q + 1 < end) ? 2 : 1;
            push_tok(ts, T_STRING, p + 1, (size_t)(q - p - 1), line);
            p = q < end ? q + 1 : end;
        } else if (c == '[' && long_open(p, end) >= 0) {
            int level = long_open(p, end), start = line;
            const char *q = skip_long(p, end, level, &line);
            size_t body = (size_t)(q - p) >= (size_t)(2 * level + 4) ? (size_t)(q - p) - (size_t)(2 * level + 4) : 0;
            push_tok(ts, T_STRING, p + level + 2, body, start);
            p = q;
        } else if (isalpha((unsigned char)c) || c == '_') {
            const char *q = p;
            while (q < end && (isalnum((unsigned char)*q) || *q == '_')) q++;
            push_tok(ts, T_NAME, p, (size_t)(q - p), line);
            p = q;
        } else if (isdigit((unsigned char)c)) {
            const char *q = p;
            while (q < end && (isalnum((unsigned char)*q) || *q == '.')) q++;
            push_tok(ts, T_NUMBER, p, (size_t)(q - p), line);
            p = q;
        } else {
            static const char *const two[] = {"...", "..", "==", "~=", "<=", ">=", "::"};
            size_t n = 1;
            for (size_t i = 0; i < sizeof two / sizeof two[0]; i++) {
                size_t l = strlen(two[i]);
                if ((size_t)(end - p) >= l && !memcmp(p, two[i], l)) {
                    n = l;
                    break;
                }
            }
            push_tok(ts, T_OP, p, n, line);
            p += n;
        }
    }
}

/* ------------------------------------------------------------------ the scan */

typedef struct scan {
    const toks_t *ts;
    const char *kind;
    json_t *consts;  /* dotted name -> string literal */
    json_t *tracked; /* names holding an object of the kind */
    json_t *funcs;   /* function name (last part) -> [param names] */
} scan_t;

static bool is_op(const scan_t *s, size_t i, const char *op)
{
    return i < s->ts->n && s->ts->t[i].kind == T_OP && !strcmp(s->ts->t[i].text, op);
}
static bool is_name(const scan_t *s, size_t i) { return i < s->ts->n && s->ts->t[i].kind == T_NAME; }
static bool is_kw(const scan_t *s, size_t i, const char *kw) { return is_name(s, i) && !strcmp(s->ts->t[i].text, kw); }

/* A dotted name a.b.c at i into b; the index after it (i when there is none). */
static size_t dotted(const scan_t *s, size_t i, lop_buf_t *b)
{
    lop_buf_reset(b);
    if (!is_name(s, i)) return i;
    lop_buf_puts(b, s->ts->t[i].text);
    i++;
    while (is_op(s, i, ".") && is_name(s, i + 1)) {
        lop_buf_printf(b, ".%s", s->ts->t[i + 1].text);
        i += 2;
    }
    return i;
}

/* `A, B.C = "x", "y"`: each target assigned a string literal becomes a constant. */
static void find_consts(scan_t *s)
{
    lop_buf_t b = LOP_BUF_INIT;
    for (size_t i = 0; i < s->ts->n; i++) {
        /* the start of a target list: not a field (a.B), not a later target (A, B) */
        if (i > 0 && (is_op(s, i - 1, ".") || is_op(s, i - 1, ":") || is_op(s, i - 1, ","))) continue;
        json_t *names = json_array();
        size_t j = i;
        for (;;) {
            size_t k = dotted(s, j, &b);
            if (k == j) break;
            json_array_append_new(names, json_string(b.data));
            j = k;
            if (!is_op(s, j, ",")) break;
            j++;
        }
        if (json_array_size(names) && is_op(s, j, "=")) {
            j++;
            for (size_t v = 0; v < json_array_size(names) && j < s->ts->n; v++) {
                if (s->ts->t[j].kind == T_STRING && (is_op(s, j + 1, ",") || !is_op(s, j + 1, "..")))
                    json_object_set_new(s->consts, json_string_value(json_array_get(names, v)),
                                        json_string(s->ts->t[j].text));
                if (!is_op(s, j + 1, ",")) break;
                j += 2;
            }
        }
        json_decref(names);
    }
    lop_buf_free(&b);
}

/* The index of the ')' matching the '(' at i (or the end). */
static size_t close_paren(const scan_t *s, size_t i)
{
    int depth = 0;
    for (; i < s->ts->n; i++) {
        if (is_op(s, i, "(") || is_op(s, i, "{") || is_op(s, i, "[")) depth++;
        if (is_op(s, i, ")") || is_op(s, i, "}") || is_op(s, i, "]"))
            if (--depth == 0) return i;
    }
    return s->ts->n;
}

/* Whether the tokens (from, to) name the kind: its literal, or a constant holding it. */
static bool names_kind(const scan_t *s, size_t from, size_t to)
{
    lop_buf_t b = LOP_BUF_INIT;
    bool yes = false;
    for (size_t i = from; i < to && !yes; i++) {
        if (s->ts->t[i].kind == T_STRING) {
            yes = !strcmp(s->ts->t[i].text, s->kind);
        } else if (is_name(s, i) && !(i > 0 && is_op(s, i - 1, "."))) {
            size_t k = dotted(s, i, &b);
            const char *v = json_string_value(json_object_get(s->consts, b.data));
            yes = v && !strcmp(v, s->kind);
            i = k - 1;
        }
    }
    lop_buf_free(&b);
    return yes;
}

static bool track(scan_t *s, const char *name)
{
    if (json_object_get(s->tracked, name)) return false;
    json_object_set_new(s->tracked, name, json_true());
    return true;
}

/* `local X[, e] = a.b.get(... KIND ...)`: X holds the kind. */
static void find_gets(scan_t *s)
{
    for (size_t i = 1; i + 1 < s->ts->n; i++) {
        if (!is_kw(s, i, "get") || !(is_op(s, i - 1, ".") || is_op(s, i - 1, ":")) || !is_op(s, i + 1, "(")) continue;
        size_t close = close_paren(s, i + 1);
        if (!names_kind(s, i + 2, close)) continue;
        size_t j = i - 1; /* back over the callee a.b. */
        while (j > 0 && (is_name(s, j - 1) || is_op(s, j - 1, ".") || is_op(s, j - 1, ":"))) j--;
        if (j == 0 || !is_op(s, j - 1, "=")) continue;
        size_t k = j - 1; /* back over "X, e" */
        size_t first = k;
        while (k > 0 && (is_name(s, k - 1) || is_op(s, k - 1, ","))) {
            k--;
            if (is_name(s, k) && !is_kw(s, k, "local")) first = k;
        }
        if (first < j - 1) track(s, s->ts->t[first].text);
    }
}

/* `function NAME(a, b)`, `local function NAME(...)`, `function M.NAME(...)`: the parameters. */
static void find_funcs(scan_t *s)
{
    lop_buf_t b = LOP_BUF_INIT;
    for (size_t i = 0; i + 1 < s->ts->n; i++) {
        if (!is_kw(s, i, "function") || !is_name(s, i + 1)) continue;
        size_t k = dotted(s, i + 1, &b);
        const char *last = strrchr(b.data, '.') ? strrchr(b.data, '.') + 1 : b.data;
        if (is_op(s, k, ":") && is_name(s, k + 1)) last = s->ts->t[++k].text, k++;
        if (!is_op(s, k, "(")) continue;
        json_t *params = json_array();
        for (size_t j = k + 1; j < s->ts->n && !is_op(s, j, ")"); j++)
            if (is_name(s, j)) json_array_append_new(params, json_string(s->ts->t[j].text));
        json_object_set_new(s->funcs, last, params);
    }
    lop_buf_free(&b);
}

/* One pass of propagation; true when a new name was tracked. */
static bool propagate(scan_t *s)
{
    bool changed = false;
    for (size_t i = 0; i + 1 < s->ts->n; i++) {
        if (i == 0 || !is_op(s, i, "(") || !is_name(s, i - 1)) continue;
        const char *callee = s->ts->t[i - 1].text;
        json_t *params = json_object_get(s->funcs, callee);
        size_t close = close_paren(s, i), arg = 0, start = i + 1;
        int depth = 0;
        for (size_t j = i + 1; j <= close && j < s->ts->n; j++) {
            bool sep = depth == 0 && (is_op(s, j, ",") || j == close);
            if (is_op(s, j, "(") || is_op(s, j, "{") || is_op(s, j, "[")) depth++;
            if (j != close && (is_op(s, j, ")") || is_op(s, j, "}") || is_op(s, j, "]"))) depth--;
            if (!sep) continue;
            /* one argument is tokens [start, j) */
            bool obj = j == start + 1 && is_name(s, start) && json_object_get(s->tracked, s->ts->t[start].text);
            if (obj) {
                /* f(obj, function(P) ...): the mutate function's parameter */
                if (is_op(s, j, ",") && is_kw(s, j + 1, "function") && is_op(s, j + 2, "(") && is_name(s, j + 3))
                    changed |= track(s, s->ts->t[j + 3].text);
                /* a function of this file called with obj: its parameter at that position */
                json_t *p = json_array_get(params, arg);
                if (p) changed |= track(s, json_string_value(p));
            }
            arg++;
            start = j + 1;
        }
    }
    return changed;
}

/* ------------------------------------------------------------------ schema walk */

static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64) return 99;
    size_t d[65];
    for (size_t j = 0; j <= lb; j++) d[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t prev = d[0];
        d[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t cur = d[j];
            size_t sub = prev + (a[i - 1] != b[j - 1]);
            size_t best = d[j] + 1 < d[j - 1] + 1 ? d[j] + 1 : d[j - 1] + 1;
            d[j] = sub < best ? sub : best;
            prev = cur;
        }
    }
    return d[lb];
}

/* The closest property name of node to name (distance <= 2), or NULL. */
static const char *closest(const json_t *node, const char *name)
{
    const char *best = NULL, *k;
    size_t bd = 3;
    const json_t *v;
    json_object_foreach((json_t *)json_object_get(node, "properties"), k, v)
    {
        size_t d = edit_distance(name, k);
        if (d < bd || (d == bd && best && strcmp(k, best) < 0)) bd = d, best = k;
    }
    return best;
}

/* Walk path segs[0..n) from the root schema; the index of the first segment the schema lacks
 * (n when all are there or the walk stopped at an open node); *at the node that lacks it. */
static size_t walk(const json_t *root, char **segs, size_t n, const json_t **at)
{
    const json_t *node = root;
    for (size_t i = 0; i < n; i++) {
        if (json_is_true(json_object_get(node, "x-kubernetes-preserve-unknown-fields")) ||
            json_is_true(json_object_get(node, "x-kubernetes-int-or-string")))
            return n;
        const char *type = json_string_value(json_object_get(node, "type"));
        const json_t *props = json_object_get(node, "properties");
        const json_t *ap = json_object_get(node, "additionalProperties");
        const json_t *p = json_object_get(props, segs[i]);
        if (p) {
            node = p;
        } else if (json_is_object(ap)) {
            node = ap;
        } else if (type && !strcmp(type, "array")) {
            return n; /* `.x` on an array: a Lua table's field, not the schema's */
        } else if (!json_is_object(props) && (!type || !strcmp(type, "object"))) {
            return n; /* no structure given */
        } else {
            *at = node;
            return i;
        }
    }
    return n;
}

/* `<var>.spec.a.b` / `(<var>.spec or {}).a`: each chain of a tracked name, checked. */
static size_t check_chains(scan_t *s, FILE *out, const char *prefix, const char *file, const char *av,
                           const json_t *schema)
{
    size_t warned = 0;
    char *segs[64];
    json_t *seen = json_object();
    for (size_t i = 0; i + 2 < s->ts->n; i++) {
        if (!is_name(s, i) || (i > 0 && (is_op(s, i - 1, ".") || is_op(s, i - 1, ":"))) ||
            !json_object_get(s->tracked, s->ts->t[i].text) || !is_op(s, i + 1, "."))
            continue;
        const char *top = s->ts->t[i + 2].text;
        if (!is_name(s, i + 2) || (strcmp(top, "spec") && strcmp(top, "status"))) continue;
        size_t n = 0, j = i + 3;
        segs[n++] = s->ts->t[i + 2].text;
        /* (<var>.spec or {}).x */
        if (i > 0 && is_op(s, i - 1, "(") && is_kw(s, j, "or") && is_op(s, j + 1, "{") && is_op(s, j + 2, "}") &&
            is_op(s, j + 3, ")"))
            j += 4;
        while (n < 64 && is_op(s, j, ".") && is_name(s, j + 1)) {
            segs[n++] = s->ts->t[j + 1].text;
            j += 2;
        }
        const json_t *at = NULL;
        size_t bad = walk(schema, segs, n, &at);
        if (bad == n) continue;
        lop_buf_t path = LOP_BUF_INIT;
        for (size_t k = 0; k <= bad; k++) lop_buf_printf(&path, "%s%s", k ? "." : "", segs[k]);
        char key[64];
        snprintf(key, sizeof key, ":%d", s->ts->t[i].line);
        lop_buf_puts(&path, key);
        if (!json_object_get(seen, path.data)) {
            json_object_set_new(seen, path.data, json_true());
            path.len -= strlen(key);
            path.data[path.len] = '\0';
            const char *near = closest(at, segs[bad]);
            fprintf(out, "%s%s:%d: warning: %s %s has no field %s", prefix, file, s->ts->t[i].line, s->kind, av,
                    path.data);
            if (near) fprintf(out, " (did you mean %s?)", near);
            fputc('\n', out);
            warned++;
        }
        lop_buf_free(&path);
    }
    json_decref(seen);
    return warned;
}

/* ------------------------------------------------------------------ entry */

/* The openAPIV3Schema of kind at api_version among crds, or NULL. */
static const json_t *schema_of(const json_t *crds, const char *api_version, const char *kind)
{
    const char *slash = strchr(api_version, '/');
    if (!slash) return NULL;
    size_t i;
    const json_t *d;
    json_array_foreach(crds, i, d)
    {
        const json_t *spec = json_object_get(d, "spec");
        const char *g = json_string_value(json_object_get(spec, "group"));
        const char *k = json_string_value(json_object_get(json_object_get(spec, "names"), "kind"));
        if (!g || !k || strcmp(k, kind) || strlen(g) != (size_t)(slash - api_version) ||
            strncmp(g, api_version, (size_t)(slash - api_version)))
            continue;
        size_t j;
        const json_t *v;
        json_array_foreach(json_object_get(spec, "versions"), j, v)
        {
            const char *name = json_string_value(json_object_get(v, "name"));
            if (name && !strcmp(name, slash + 1))
                return json_object_get(json_object_get(v, "schema"), "openAPIV3Schema");
        }
    }
    return NULL;
}

size_t lop_fieldcheck(FILE *out, const char *prefix, const lop_script_set_t *set, const lop_ctrl_decl_t *decls,
                      size_t n, const json_t *crds)
{
    size_t warned = 0;
    for (size_t f = 0; f < set->nfiles; f++) {
        const lop_script_file_t *file = &set->files[f];
        size_t nl = strlen(file->name);
        if (nl < 4 || strcmp(file->name + nl - 4, ".lua") != 0) continue;
        toks_t ts = {0};
        tokenize(file->data, file->len, &ts);
        for (size_t d = 0; d < n; d++) {
            bool dup = false; /* two controllers of one kind: check it once */
            for (size_t e = 0; e < d; e++)
                dup |= !strcmp(decls[e].for_.gvk.kind, decls[d].for_.gvk.kind) &&
                       !strcmp(decls[e].for_.gvk.api_version, decls[d].for_.gvk.api_version);
            const json_t *schema = schema_of(crds, decls[d].for_.gvk.api_version, decls[d].for_.gvk.kind);
            if (dup || !json_is_object(schema)) continue;
            scan_t s = {.ts = &ts,
                        .kind = decls[d].for_.gvk.kind,
                        .consts = json_object(),
                        .tracked = json_object(),
                        .funcs = json_object()};
            find_consts(&s);
            find_gets(&s);
            find_funcs(&s);
            for (int pass = 0; pass < 8 && propagate(&s); pass++) {}
            warned += check_chains(&s, out, prefix, file->name, decls[d].for_.gvk.api_version, schema);
            json_decref(s.consts);
            json_decref(s.tracked);
            json_decref(s.funcs);
        }
        free_toks(&ts);
    }
    return warned;
}
