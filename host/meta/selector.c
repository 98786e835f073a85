/* SPDX-License-Identifier: Apache-2.0 */
/*
 * selector.c — label and field selector parsing and matching (see selector.h).
 *
 * The label parser works in two passes like the API server's: a lexer turns the string into
 * tokens (identifiers, the keywords `in`/`notin`, and the operator symbols, longest match first),
 * then a recursive-descent parser builds the requirements, validating keys and values as label
 * keys/values. Error texts follow the server's wording so a client sees the same message from the
 * local API server as from a real one.
 */
#include "host/meta/selector.h"

#include "host/util/buf.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* Label key / value validation                                                              */

#define QNAME_FMT "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
#define QNAME_MSG                                                                               \
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an " \
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "      \
    "validation is '" QNAME_FMT "')"
#define LVALUE_MSG                                                                              \
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or " \
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "          \
    "'my_value',  or '12345', regex used for validation is '(" QNAME_FMT ")?')"
#define DNS1123_MSG                                                                              \
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or " \
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "     \
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"

static bool is_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], anchored. */
static bool qname_match(const char *s, size_t n)
{
    if (n == 0 || !is_alnum(s[0]) || !is_alnum(s[n - 1])) return false;
    for (size_t i = 0; i < n; i++)
        if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.') return false;
    return true;
}

static bool dns_label_match(const char *s, size_t n)
{
    if (n == 0) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool lower_alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!lower_alnum && !(c == '-' && i > 0 && i + 1 < n)) return false;
    }
    return true;
}

static bool dns1123_subdomain_match(const char *s, size_t n)
{
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || s[i] == '.') {
            if (!dns_label_match(s + start, i - start)) return false;
            start = i + 1;
        }
    }
    return true;
}

static void join(lop_buf_t *b, const char *msg)
{
    if (b->len) lop_buf_puts(b, "; ");
    lop_buf_puts(b, msg);
}

/* Appends the reasons key is not a qualified name ("; "-joined) to b; returns true when valid. */
static bool check_label_key(const char *key, lop_buf_t *b)
{
    size_t before = b->len;
    const char *slash = strchr(key, '/');
    const char *name = key;
    if (slash && strchr(slash + 1, '/')) {
        join(b, "a qualified name " QNAME_MSG
                " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
        return false;
    }
    if (slash) {
        size_t plen = (size_t)(slash - key);
        name = slash + 1;
        if (plen == 0) {
            join(b, "prefix part must be non-empty");
        } else {
            if (plen > 253) join(b, "prefix part must be no more than 253 characters");
            if (!dns1123_subdomain_match(key, plen)) join(b, "prefix part " DNS1123_MSG);
        }
    }
    size_t nlen = strlen(name);
    if (nlen == 0)
        join(b, "name part must be non-empty");
    else if (nlen > 63)
        join(b, "name part must be no more than 63 characters");
    if (!qname_match(name, nlen)) join(b, "name part " QNAME_MSG);
    return b->len == before;
}

static bool check_label_value(const char *v, lop_buf_t *b)
{
    size_t before = b->len, n = strlen(v);
    if (n > 63) join(b, "must be no more than 63 characters");
    if (n > 0 && !qname_match(v, n)) join(b, LVALUE_MSG);
    return b->len == before;
}

/* Go's %q for the common cases: quotes, backslashes and control bytes escaped. */
static void put_quoted(lop_buf_t *b, const char *s)
{
    lop_buf_putc(b, '"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            lop_buf_putc(b, '\\');
            lop_buf_putc(b, (char)c);
        } else if (c == '\n') {
            lop_buf_puts(b, "\\n");
        } else if (c == '\t') {
            lop_buf_puts(b, "\\t");
        } else if (c < 0x20 || c == 0x7f) {
            lop_buf_printf(b, "\\x%02x", c);
        } else {
            lop_buf_putc(b, (char)c);
        }
    }
    lop_buf_putc(b, '"');
}

/* Go's strconv.ParseInt(s, 10, 64): optional sign, at least one digit, nothing else, in range. */
static bool parse_int64(const char *s, int64_t *out)
{
    const char *p = s;
    if (*p == '+' || *p == '-') p++;
    if (!*p) return false;
    for (const char *q = p; *q; q++)
        if (*q < '0' || *q > '9') return false;
    errno = 0;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (errno == ERANGE || !end || *end) return false;
    *out = (int64_t)v;
    return true;
}

/* ------------------------------------------------------------------------------------------ */
/* Label selector lexer                                                                       */

typedef enum tok {
    T_ERROR = 1,
    T_EOS,
    T_CLOSEPAR,
    T_COMMA,
    T_NOT, /* "!" — does-not-exist */
    T_DEQ,
    T_EQ,
    T_GT,
    T_IDENT,
    T_IN,
    T_LT,
    T_NEQ,
    T_NOTIN,
    T_OPENPAR,
} tok_t;

typedef struct item {
    tok_t tok;
    char *lit;
} item_t;

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

static bool is_special(char c)
{
    return c == '=' || c == '!' || c == '(' || c == ')' || c == ',' || c == '>' || c == '<';
}

static tok_t symbol_token(const char *s, size_t n)
{
    static const struct {
        const char *s;
        tok_t t;
    } syms[] = {{")", T_CLOSEPAR}, {",", T_COMMA}, {"!", T_NOT},  {"==", T_DEQ},   {"=", T_EQ},
                {">", T_GT},       {"<", T_LT},    {"!=", T_NEQ}, {"(", T_OPENPAR}};
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++)
        if (strlen(syms[i].s) == n && memcmp(syms[i].s, s, n) == 0) return syms[i].t;
    return 0;
}

/* Tokenise s into a NULL-lit-terminated array ending with T_EOS (or T_ERROR). */
static item_t *lex(const char *s, size_t *count)
{
    size_t cap = 8, n = 0;
    item_t *items = lop_xmalloc(cap * sizeof *items);
    const char *p = s;
    for (;;) {
        while (is_ws(*p)) p++;
        item_t it = {T_EOS, NULL};
        if (!*p) {
            it.lit = lop_xstrdup("");
        } else if (is_special(*p)) {
            /* Longest symbol: extend while the buffer is still a symbol. */
            size_t len = 1;
            tok_t t = symbol_token(p, 1);
            while (p[len] && is_special(p[len]) && symbol_token(p, len + 1)) {
                len++;
                t = symbol_token(p, len);
            }
            it.tok = t ? t : T_ERROR;
            it.lit = lop_xstrndup(p, len);
            p += len;
        } else {
            size_t len = 0;
            while (p[len] && !is_ws(p[len]) && !is_special(p[len])) len++;
            it.lit = lop_xstrndup(p, len);
            it.tok = strcmp(it.lit, "in") == 0 ? T_IN : strcmp(it.lit, "notin") == 0 ? T_NOTIN : T_IDENT;
            p += len;
        }
        if (n == cap) {
            cap *= 2;
            items = lop_xrealloc(items, cap * sizeof *items);
        }
        items[n++] = it;
        if (it.tok == T_EOS || it.tok == T_ERROR) break;
    }
    *count = n;
    return items;
}

/* ------------------------------------------------------------------------------------------ */
/* Label selector parser                                                                      */

typedef enum op { OP_EQ, OP_NEQ, OP_IN, OP_NOTIN, OP_EXISTS, OP_NOTEXISTS, OP_GT, OP_LT } op_t;

typedef struct req {
    char *key;
    op_t op;
    char **vals; /* sorted, unique */
    size_t nvals;
} req_t;

struct lop_label_selector {
    req_t *reqs;
    size_t n;
};

typedef struct parser {
    item_t *items;
    size_t n, pos;
    lop_buf_t msg; /* error text, empty while fine */
} parser_t;

/* In value context `in`/`notin` are plain identifiers. */
static tok_t look(parser_t *p, bool values, const char **lit)
{
    item_t *it = &p->items[p->pos < p->n ? p->pos : p->n - 1];
    if (lit) *lit = it->lit;
    if (values && (it->tok == T_IN || it->tok == T_NOTIN)) return T_IDENT;
    return it->tok;
}

static tok_t take(parser_t *p, bool values, const char **lit)
{
    tok_t t = look(p, values, lit);
    if (p->pos + 1 < p->n) p->pos++;
    return t;
}

static void req_add_value(req_t *r, const char *v)
{
    for (size_t i = 0; i < r->nvals; i++)
        if (strcmp(r->vals[i], v) == 0) return;
    r->vals = lop_xrealloc(r->vals, (r->nvals + 1) * sizeof *r->vals);
    r->vals[r->nvals++] = lop_xstrdup(v);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void req_clear(req_t *r)
{
    free(r->key);
    for (size_t i = 0; i < r->nvals; i++) free(r->vals[i]);
    free(r->vals);
    memset(r, 0, sizeof *r);
}

/* Values inside parentheses; "()" and stray commas stand for the empty value. */
static bool parse_values(parser_t *p, req_t *r)
{
    const char *lit;
    if (take(p, true, &lit) != T_OPENPAR) {
        lop_buf_printf(&p->msg, "found '%s' expected: '('", lit);
        return false;
    }
    const char *first_lit;
    tok_t t = look(p, true, &first_lit);
    if (t == T_CLOSEPAR) {
        take(p, true, NULL);
        req_add_value(r, "");
        return true;
    }
    if (t != T_IDENT && t != T_COMMA) {
        lop_buf_printf(&p->msg, "found '%s', expected: ',', ')' or identifier", first_lit);
        return false;
    }
    for (;;) {
        t = take(p, true, &lit);
        if (t == T_IDENT) {
            req_add_value(r, lit);
            const char *lit2;
            tok_t t2 = look(p, true, &lit2);
            if (t2 == T_COMMA) continue;
            if (t2 == T_CLOSEPAR) break;
            lop_buf_printf(&p->msg, "found '%s', expected: ',' or ')'", lit2);
            return false;
        } else if (t == T_COMMA) {
            if (r->nvals == 0) req_add_value(r, "");
            tok_t t2 = look(p, true, NULL);
            if (t2 == T_CLOSEPAR) {
                req_add_value(r, "");
                break;
            }
            if (t2 == T_COMMA) {
                take(p, true, NULL);
                req_add_value(r, "");
            }
        } else {
            lop_buf_printf(&p->msg, "found '%s', expected: ',', or identifier", lit);
            return false;
        }
    }
    if (take(p, true, NULL) != T_CLOSEPAR) {
        lop_buf_printf(&p->msg, "found '%s', expected: ')'", first_lit);
        return false;
    }
    return true;
}

static bool parse_exact_value(parser_t *p, req_t *r)
{
    tok_t t = look(p, true, NULL);
    if (t == T_EOS || t == T_COMMA) {
        req_add_value(r, "");
        return true;
    }
    const char *lit;
    if (take(p, true, &lit) == T_IDENT) {
        req_add_value(r, lit);
        return true;
    }
    lop_buf_printf(&p->msg, "found '%s', expected: identifier", lit);
    return false;
}

/* The value checks of the server's NewRequirement; errors aggregate as "[e1, e2]". */
static bool validate_requirement(parser_t *p, req_t *r)
{
    lop_buf_t errs = LOP_BUF_INIT, why = LOP_BUF_INIT;
    int nerr = 0;
    if (r->op == OP_GT || r->op == OP_LT) {
        int64_t v; /* the parser always gives these operators exactly one value */
        for (size_t i = 0; i < r->nvals; i++) {
            if (parse_int64(r->vals[i], &v)) continue;
            if (nerr) lop_buf_puts(&errs, ", ");
            lop_buf_printf(&errs, "values[%zu]: Invalid value: ", i);
            put_quoted(&errs, r->vals[i]);
            lop_buf_puts(&errs, ": for 'Gt', 'Lt' operators, the value must be an integer");
            nerr++;
        }
    }
    for (size_t i = 0; i < r->nvals; i++) {
        lop_buf_reset(&why);
        if (check_label_value(r->vals[i], &why)) continue;
        if (nerr) lop_buf_puts(&errs, ", ");
        lop_buf_printf(&errs, "values[%zu][%s]: Invalid value: ", i, r->key);
        put_quoted(&errs, r->vals[i]);
        lop_buf_printf(&errs, ": %s", why.data);
        nerr++;
    }
    if (nerr == 1) lop_buf_puts(&p->msg, errs.data);
    if (nerr > 1) lop_buf_printf(&p->msg, "[%s]", errs.data);
    lop_buf_free(&errs);
    lop_buf_free(&why);
    return nerr == 0;
}

static bool parse_requirement(parser_t *p, req_t *r)
{
    const char *lit;
    bool not_exists = false;
    tok_t t = take(p, true, &lit);
    if (t == T_NOT) {
        not_exists = true;
        t = take(p, true, &lit);
    }
    if (t != T_IDENT) {
        lop_buf_printf(&p->msg, "found '%s', expected: identifier", lit);
        return false;
    }
    lop_buf_t why = LOP_BUF_INIT;
    if (!check_label_key(lit, &why)) {
        lop_buf_puts(&p->msg, "<nil>: Invalid value: ");
        put_quoted(&p->msg, lit);
        lop_buf_printf(&p->msg, ": %s", why.data);
        lop_buf_free(&why);
        return false;
    }
    lop_buf_free(&why);
    r->key = lop_xstrdup(lit);
    if (not_exists) {
        r->op = OP_NOTEXISTS;
        return true;
    }
    t = look(p, true, NULL);
    if (t == T_EOS || t == T_COMMA) {
        r->op = OP_EXISTS;
        return true;
    }
    t = take(p, false, &lit);
    bool ok;
    switch (t) {
    case T_EQ:
    case T_DEQ: r->op = OP_EQ; break;
    case T_NEQ: r->op = OP_NEQ; break;
    case T_GT: r->op = OP_GT; break;
    case T_LT: r->op = OP_LT; break;
    case T_IN: r->op = OP_IN; break;
    case T_NOTIN: r->op = OP_NOTIN; break;
    default: lop_buf_printf(&p->msg, "found '%s', expected: in, notin, =, ==, !=, gt, lt", lit); return false;
    }
    if (r->op == OP_IN || r->op == OP_NOTIN)
        ok = parse_values(p, r);
    else
        ok = parse_exact_value(p, r);
    if (!ok) return false;
    if (r->nvals > 1) qsort(r->vals, r->nvals, sizeof *r->vals, cmp_str);
    return validate_requirement(p, r);
}

static int cmp_req(const void *a, const void *b) { return strcmp(((const req_t *)a)->key, ((const req_t *)b)->key); }

void lop_label_selector_free(lop_label_selector_t *sel)
{
    if (!sel) return;
    for (size_t i = 0; i < sel->n; i++) req_clear(&sel->reqs[i]);
    free(sel->reqs);
    free(sel);
}

lop_rc_t lop_label_selector_parse(const char *s, lop_label_selector_t **out, lop_err_t *err)
{
    *out = NULL;
    lop_label_selector_t *sel = lop_xcalloc(1, sizeof *sel);
    parser_t p = {0};
    p.items = lex(s ? s : "", &p.n);
    bool ok = true;
    for (;;) {
        const char *lit;
        tok_t t = look(&p, true, &lit);
        if (t == T_EOS) break;
        if (t != T_IDENT && t != T_NOT) {
            lop_buf_printf(&p.msg, "found '%s', expected: !, identifier, or 'end of string'", lit);
            ok = false;
            break;
        }
        req_t r = {0};
        if (!parse_requirement(&p, &r)) {
            req_clear(&r);
            char *why = lop_buf_steal(&p.msg);
            lop_buf_printf(&p.msg, "unable to parse requirement: %s", why);
            free(why);
            ok = false;
            break;
        }
        sel->reqs = lop_xrealloc(sel->reqs, (sel->n + 1) * sizeof *sel->reqs);
        sel->reqs[sel->n++] = r;
        t = take(&p, true, &lit);
        if (t == T_EOS) break;
        if (t != T_COMMA) {
            lop_buf_printf(&p.msg, "found '%s', expected: ',' or 'end of string'", lit);
            ok = false;
            break;
        }
        t = look(&p, true, &lit);
        if (t != T_IDENT && t != T_NOT) {
            lop_buf_printf(&p.msg, "found '%s', expected: identifier after ','", lit);
            ok = false;
            break;
        }
    }
    for (size_t i = 0; i < p.n; i++) free(p.items[i].lit);
    free(p.items);
    if (!ok) {
        lop_err_set(err, LOP_EINVAL, 400, "BadRequest", "%s", p.msg.data ? p.msg.data : "");
        lop_buf_free(&p.msg);
        lop_label_selector_free(sel);
        return LOP_EINVAL;
    }
    lop_buf_free(&p.msg);
    if (sel->n > 1) qsort(sel->reqs, sel->n, sizeof *sel->reqs, cmp_req);
    *out = sel;
    return LOP_OK;
}

bool lop_label_selector_empty(const lop_label_selector_t *sel) { return !sel || sel->n == 0; }

static bool req_has_value(const req_t *r, const char *v)
{
    for (size_t i = 0; i < r->nvals; i++)
        if (strcmp(r->vals[i], v) == 0) return true;
    return false;
}

static bool req_match(const req_t *r, const char *v)
{
    switch (r->op) {
    case OP_EQ:
    case OP_IN: return v && req_has_value(r, v);
    case OP_NEQ:
    case OP_NOTIN: return !v || !req_has_value(r, v);
    case OP_EXISTS: return v != NULL;
    case OP_NOTEXISTS: return v == NULL;
    case OP_GT:
    case OP_LT: {
        int64_t have, want;
        if (!v || r->nvals != 1 || !parse_int64(v, &have) || !parse_int64(r->vals[0], &want)) return false;
        return r->op == OP_GT ? have > want : have < want;
    }
    }
    return false;
}

bool lop_label_selector_match(const lop_label_selector_t *sel, lop_lookup_fn lookup, void *ud)
{
    if (!sel) return true;
    for (size_t i = 0; i < sel->n; i++)
        if (!req_match(&sel->reqs[i], lookup(ud, sel->reqs[i].key))) return false;
    return true;
}

static const char *json_label_lookup(void *ud, const char *key)
{
    const json_t *labels = ud;
    if (!json_is_object(labels)) return NULL;
    const json_t *v = json_object_get(labels, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

bool lop_label_selector_match_json(const lop_label_selector_t *sel, const json_t *labels)
{
    return lop_label_selector_match(sel, json_label_lookup, (void *)labels);
}

/* ------------------------------------------------------------------------------------------ */
/* Field selectors                                                                            */

typedef struct fterm {
    char *field;
    char *value;
    bool neq;
} fterm_t;

struct lop_field_selector {
    fterm_t *terms;
    size_t n;
};

void lop_field_selector_free(lop_field_selector_t *sel)
{
    if (!sel) return;
    for (size_t i = 0; i < sel->n; i++) {
        free(sel->terms[i].field);
        free(sel->terms[i].value);
    }
    free(sel->terms);
    free(sel);
}

/* Undo `\` escapes; unescaped `,`/`=` and unknown escapes are errors. Returns NULL with msg. */
static char *unescape_value(const char *s, size_t n, lop_buf_t *msg)
{
    lop_buf_t v = LOP_BUF_INIT;
    bool in_slash = false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (in_slash) {
            if (c != '\\' && c != ',' && c != '=') {
                lop_buf_printf(msg, "invalid field selector: invalid escape sequence: \\%c", c);
                lop_buf_free(&v);
                return NULL;
            }
            lop_buf_putc(&v, c);
            in_slash = false;
        } else if (c == '\\') {
            in_slash = true;
        } else if (c == ',' || c == '=') {
            lop_buf_printf(msg, "invalid field selector: unescaped character in value: %c", c);
            lop_buf_free(&v);
            return NULL;
        } else {
            lop_buf_putc(&v, c);
        }
    }
    if (in_slash) {
        lop_buf_puts(msg, "invalid field selector: invalid escape sequence: \\");
        lop_buf_free(&v);
        return NULL;
    }
    return lop_buf_steal(&v);
}

static int cmp_fterm(const void *a, const void *b)
{
    const fterm_t *x = a, *y = b;
    int c = strcmp(x->field, y->field);
    return c ? c : strcmp(x->value, y->value);
}

/* One term `lhs op rhs`: the first position holding `!=`, `==` or `=` splits it. */
static bool parse_term(const char *all, const char *t, size_t n, fterm_t *out, lop_buf_t *msg)
{
    for (size_t i = 0; i < n; i++) {
        size_t oplen = 0;
        bool neq = false;
        if (i + 1 < n && t[i] == '!' && t[i + 1] == '=') {
            oplen = 2;
            neq = true;
        } else if (i + 1 < n && t[i] == '=' && t[i + 1] == '=') {
            oplen = 2;
        } else if (t[i] == '=') {
            oplen = 1;
        }
        if (!oplen) continue;
        char *v = unescape_value(t + i + oplen, n - i - oplen, msg);
        if (!v) return false;
        out->field = lop_xstrndup(t, i);
        out->value = v;
        out->neq = neq;
        return true;
    }
    lop_buf_printf(msg, "invalid selector: '%s'; can't understand '%.*s'", all, (int)n, t);
    return false;
}

lop_rc_t lop_field_selector_parse(const char *s, lop_field_selector_t **out, lop_err_t *err)
{
    *out = NULL;
    lop_field_selector_t *sel = lop_xcalloc(1, sizeof *sel);
    if (!s) s = "";
    size_t len = strlen(s), start = 0;
    bool in_slash = false;
    lop_buf_t msg = LOP_BUF_INIT;
    for (size_t i = 0; i <= len && len > 0; i++) {
        if (i < len) {
            if (in_slash) {
                in_slash = false;
                continue;
            }
            if (s[i] == '\\') {
                in_slash = true;
                continue;
            }
            if (s[i] != ',') continue;
        }
        if (i > start) {
            fterm_t term;
            if (!parse_term(s, s + start, i - start, &term, &msg)) {
                lop_err_set(err, LOP_EINVAL, 400, "BadRequest", "%s", msg.data);
                lop_buf_free(&msg);
                lop_field_selector_free(sel);
                return LOP_EINVAL;
            }
            sel->terms = lop_xrealloc(sel->terms, (sel->n + 1) * sizeof *sel->terms);
            sel->terms[sel->n++] = term;
        }
        start = i + 1;
    }
    lop_buf_free(&msg);
    if (sel->n > 1) qsort(sel->terms, sel->n, sizeof *sel->terms, cmp_fterm);
    *out = sel;
    return LOP_OK;
}

bool lop_field_selector_empty(const lop_field_selector_t *sel) { return !sel || sel->n == 0; }

size_t lop_field_selector_count(const lop_field_selector_t *sel) { return sel ? sel->n : 0; }

const char *lop_field_selector_field(const lop_field_selector_t *sel, size_t i)
{
    return sel && i < sel->n ? sel->terms[i].field : NULL;
}

const char *lop_field_selector_exact(const lop_field_selector_t *sel, const char *field)
{
    if (!sel || !field) return NULL;
    for (size_t i = 0; i < sel->n; i++)
        if (!sel->terms[i].neq && strcmp(sel->terms[i].field, field) == 0) return sel->terms[i].value;
    return NULL;
}

bool lop_field_selector_match(const lop_field_selector_t *sel, lop_lookup_fn lookup, void *ud)
{
    if (!sel) return true;
    for (size_t i = 0; i < sel->n; i++) {
        const char *v = lookup(ud, sel->terms[i].field);
        if (!v) v = "";
        bool eq = strcmp(v, sel->terms[i].value) == 0;
        if (eq == sel->terms[i].neq) return false;
    }
    return true;
}
