/* SPDX-License-Identifier: Apache-2.0 */
/* as_cel.c — CEL (github.com/google/cel-spec, langdef.md) subset: lexer and recursive-descent
 * parser into the tree of as_cel_ast.h; names are resolved at compile time, so an expression
 * that uses a function or variable outside the subset fails to compile (and is warned about). */
#include "apiserver/as_cel_ast.h"

#include "apiserver/as_schema_format.h"
#include "host/util/buf.h"
#include "host/util/utf8.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AS_CEL_MAX_LEN 16384

typedef struct parser {
    const char *s;
    size_t pos;
    char err[200];
    const char *vars[8]; /* macro variables in scope */
    int nvars;
    bool old_self;
    int depth;
} parser_t;

static void fail(parser_t *p, const char *msg)
{
    if (!p->err[0]) snprintf(p->err, sizeof p->err, "%s at offset %zu", msg, p->pos);
}

static cel_node_t *node(cel_kind_t kind)
{
    cel_node_t *n = lop_xcalloc(1, sizeof *n);
    n->kind = kind;
    return n;
}

static void node_free(cel_node_t *n)
{
    if (!n) return;
    free(n->name);
    free(n->var);
    json_decref(n->lit);
    node_free(n->a);
    node_free(n->b);
    node_free(n->c);
    for (size_t i = 0; i < n->nargs; i++) node_free(n->args[i]);
    free(n->args);
    if (n->re) {
        regfree(n->re);
        free(n->re);
    }
    free(n);
}

static void add_arg(cel_node_t *n, cel_node_t *a)
{
    n->args = lop_xrealloc(n->args, (n->nargs + 1) * sizeof *n->args);
    n->args[n->nargs++] = a;
}

static void skip_ws(parser_t *p)
{
    for (;;) {
        while (isspace((unsigned char)p->s[p->pos])) p->pos++;
        if (p->s[p->pos] == '/' && p->s[p->pos + 1] == '/') { /* line comment */
            while (p->s[p->pos] && p->s[p->pos] != '\n') p->pos++;
            continue;
        }
        return;
    }
}

/* Consume tok (punctuation) when next. */
static bool accept(parser_t *p, const char *tok)
{
    skip_ws(p);
    size_t n = strlen(tok);
    if (strncmp(p->s + p->pos, tok, n)) return false;
    /* do not split "<=" into "<" "=", "&&" etc. are matched whole by the callers' order */
    p->pos += n;
    return true;
}

static void expect(parser_t *p, const char *tok)
{
    if (!accept(p, tok)) {
        char m[64];
        snprintf(m, sizeof m, "expected '%s'", tok);
        fail(p, m);
    }
}

static bool ident_start(char c) { return isalpha((unsigned char)c) || c == '_'; }

/* An identifier at the cursor (copied into buf), or false. */
static bool read_ident(parser_t *p, char *buf, size_t n)
{
    skip_ws(p);
    size_t i = p->pos, len = 0;
    if (!ident_start(p->s[i])) return false;
    while (isalnum((unsigned char)p->s[i]) || p->s[i] == '_') i++;
    len = i - p->pos;
    if (len >= n) len = n - 1;
    memcpy(buf, p->s + p->pos, len);
    buf[len] = '\0';
    p->pos = i;
    return true;
}

static bool peek_ident(parser_t *p, const char *word)
{
    skip_ws(p);
    size_t n = strlen(word);
    return !strncmp(p->s + p->pos, word, n) && !isalnum((unsigned char)p->s[p->pos + n]) && p->s[p->pos + n] != '_';
}

static cel_node_t *parse_expr(parser_t *p);

/* One escape after a backslash into out. */
static void read_escape(parser_t *p, lop_buf_t *out)
{
    char c = p->s[p->pos];
    if (!c) {
        fail(p, "unterminated string");
        return;
    }
    p->pos++;
    switch (c) {
    case 'n': lop_buf_putc(out, '\n'); return;
    case 't': lop_buf_putc(out, '\t'); return;
    case 'r': lop_buf_putc(out, '\r'); return;
    case 'a': lop_buf_putc(out, '\a'); return;
    case 'b': lop_buf_putc(out, '\b'); return;
    case 'f': lop_buf_putc(out, '\f'); return;
    case 'v': lop_buf_putc(out, '\v'); return;
    case '\\':
    case '"':
    case '\'':
    case '`':
    case '?': lop_buf_putc(out, c); return;
    case 'x':
    case 'u':
    case 'U': {
        int digits = c == 'x' ? 2 : c == 'u' ? 4 : 8;
        char hex[9] = {0};
        for (int i = 0; i < digits; i++) {
            if (!isxdigit((unsigned char)p->s[p->pos])) {
                fail(p, "bad escape");
                return;
            }
            hex[i] = p->s[p->pos++];
        }
        uint32_t cp = (uint32_t)strtoul(hex, NULL, 16);
        char enc[4];
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) fail(p, "bad code point");
        lop_buf_append(out, enc, lop_utf8_encode(cp, enc));
        return;
    }
    default: fail(p, "unsupported escape");
    }
}

static cel_node_t *parse_string(parser_t *p, bool raw)
{
    char q = p->s[p->pos];
    bool triple = p->s[p->pos + 1] == q && p->s[p->pos + 2] == q;
    p->pos += triple ? 3 : 1;
    lop_buf_t b = LOP_BUF_INIT;
    for (;;) {
        char c = p->s[p->pos];
        if (p->err[0]) break;
        if (!c || (!triple && c == '\n')) {
            fail(p, "unterminated string");
            break;
        }
        if (c == q && (!triple || (p->s[p->pos + 1] == q && p->s[p->pos + 2] == q))) {
            p->pos += triple ? 3 : 1;
            break;
        }
        p->pos++;
        if (c == '\\' && !raw)
            read_escape(p, &b);
        else
            lop_buf_putc(&b, c);
    }
    cel_node_t *n = node(CEL_LIT);
    n->lit = json_stringn(b.data ? b.data : "", b.len);
    lop_buf_free(&b);
    if (!n->lit) fail(p, "string is not UTF-8");
    return n;
}

static cel_node_t *parse_number(parser_t *p)
{
    const char *start = p->s + p->pos;
    char *end;
    cel_node_t *n = node(CEL_LIT);
    errno = 0;
    if (start[0] == '0' && (start[1] == 'x' || start[1] == 'X')) {
        unsigned long long v = strtoull(start + 2, &end, 16);
        n->lit = json_integer((json_int_t)v);
    } else {
        size_t i = strspn(start, "0123456789");
        bool real = start[i] == '.' || start[i] == 'e' || start[i] == 'E';
        if (real)
            n->lit = json_real(strtod(start, &end));
        else
            n->lit = json_integer((json_int_t)strtoll(start, &end, 10));
    }
    if (errno == ERANGE) fail(p, "number out of range");
    p->pos += (size_t)(end - start);
    if (p->s[p->pos] == 'u' || p->s[p->pos] == 'U') p->pos++; /* uint literals are plain integers here */
    return n;
}

static const char *const global_fns[] = {"size", "int", "double", "string", "bool", NULL};
static const char *const methods[] = {"size",       "startsWith", "endsWith", "contains", "matches",
                                      "lowerAscii", "upperAscii", "trim",     NULL};
static const char *const macros[] = {"all", "exists", "exists_one", "map", "filter", NULL};

static bool in_list(const char *const *list, const char *s)
{
    for (int i = 0; list[i]; i++)
        if (!strcmp(list[i], s)) return true;
    return false;
}

/* "(" [expr {"," expr}] ")" into n's args (the "(" already consumed). */
static void parse_args(parser_t *p, cel_node_t *n, const char *close)
{
    if (accept(p, close)) return;
    do {
        add_arg(n, parse_expr(p));
    } while (!p->err[0] && accept(p, ","));
    expect(p, close);
}

/* has(a.b): the argument must be a field selection. */
static cel_node_t *parse_has(parser_t *p)
{
    expect(p, "(");
    cel_node_t *arg = parse_expr(p);
    expect(p, ")");
    if (p->err[0] || arg->kind != CEL_SELECT) {
        fail(p, "has() needs a field selection");
        return arg;
    }
    cel_node_t *n = node(CEL_HAS);
    n->a = arg->a;
    n->name = arg->name;
    arg->a = NULL;
    arg->name = NULL;
    node_free(arg);
    return n;
}

static cel_node_t *parse_ident(parser_t *p)
{
    char id[128];
    read_ident(p, id, sizeof id);
    if (!strcmp(id, "true") || !strcmp(id, "false") || !strcmp(id, "null")) {
        cel_node_t *n = node(CEL_LIT);
        n->lit = !strcmp(id, "true") ? json_true() : !strcmp(id, "false") ? json_false() : json_null();
        return n;
    }
    if (!strcmp(id, "has")) return parse_has(p);
    if (accept(p, "(")) {
        cel_node_t *n = node(CEL_CALL);
        n->name = lop_xstrdup(id);
        if (!in_list(global_fns, id)) fail(p, "unsupported function");
        parse_args(p, n, ")");
        if (n->nargs != 1) fail(p, "wrong number of arguments");
        return n;
    }
    bool known = !strcmp(id, "self") || !strcmp(id, "oldSelf");
    for (int i = 0; i < p->nvars && !known; i++) known = !strcmp(p->vars[i], id);
    if (!known) fail(p, "undeclared reference");
    if (!strcmp(id, "oldSelf")) p->old_self = true;
    cel_node_t *n = node(CEL_IDENT);
    n->name = lop_xstrdup(id);
    return n;
}

static cel_node_t *parse_primary(parser_t *p)
{
    skip_ws(p);
    char c = p->s[p->pos];
    if (++p->depth > 100) {
        fail(p, "expression nests too deeply");
        return node(CEL_LIT);
    }
    cel_node_t *n;
    if (c == '(') {
        p->pos++;
        n = parse_expr(p);
        expect(p, ")");
    } else if (c == '[') {
        p->pos++;
        n = node(CEL_LIST);
        parse_args(p, n, "]");
    } else if (c == '{') {
        p->pos++;
        n = node(CEL_MAP);
        while (!p->err[0] && !accept(p, "}")) {
            add_arg(n, parse_expr(p));
            expect(p, ":");
            add_arg(n, parse_expr(p));
            if (!accept(p, ",")) {
                expect(p, "}");
                break;
            }
        }
    } else if (c == '"' || c == '\'') {
        n = parse_string(p, false);
    } else if ((c == 'r' || c == 'R') && (p->s[p->pos + 1] == '"' || p->s[p->pos + 1] == '\'')) {
        p->pos++;
        n = parse_string(p, true);
    } else if (isdigit((unsigned char)c)) {
        n = parse_number(p);
    } else if (ident_start(c) && !((c == 'b' || c == 'B') && (p->s[p->pos + 1] == '"' || p->s[p->pos + 1] == '\''))) {
        n = parse_ident(p);
    } else {
        fail(p, c ? "unexpected character" : "unexpected end of expression");
        n = node(CEL_LIT);
    }
    p->depth--;
    return n;
}

/* x.all(v, pred) and the other macros: v is bound while pred is parsed. */
static cel_node_t *parse_macro(parser_t *p, cel_node_t *target, const char *name)
{
    cel_node_t *n = node(CEL_MACRO);
    n->a = target;
    n->name = lop_xstrdup(name);
    char var[64];
    if (!read_ident(p, var, sizeof var) || !accept(p, ",")) {
        fail(p, "macro needs a variable and an expression");
        return n;
    }
    if (p->nvars == (int)(sizeof p->vars / sizeof p->vars[0])) {
        fail(p, "macros nest too deeply");
        return n;
    }
    n->var = lop_xstrdup(var);
    p->vars[p->nvars++] = n->var;
    n->b = parse_expr(p);
    p->nvars--;
    expect(p, ")");
    return n;
}

/* A method call; matches() with a literal pattern compiles it once here. */
static cel_node_t *parse_method(parser_t *p, cel_node_t *target, const char *name)
{
    cel_node_t *n = node(CEL_METHOD);
    n->a = target;
    n->name = lop_xstrdup(name);
    if (!in_list(methods, name)) fail(p, "unsupported function");
    parse_args(p, n, ")");
    size_t want =
        !strcmp(name, "size") || !strcmp(name, "lowerAscii") || !strcmp(name, "upperAscii") || !strcmp(name, "trim")
            ? 0
            : 1;
    if (n->nargs != want) fail(p, "wrong number of arguments");
    if (!strcmp(name, "matches") && n->nargs == 1 && n->args[0]->kind == CEL_LIT && json_is_string(n->args[0]->lit)) {
        n->re = lop_xmalloc(sizeof *n->re);
        if (as_pattern_compile(n->re, json_string_value(n->args[0]->lit)) != 0) {
            free(n->re);
            n->re = NULL;
            fail(p, "regular expression not supported");
        }
    }
    return n;
}

static cel_node_t *parse_member(parser_t *p)
{
    cel_node_t *n = parse_primary(p);
    while (!p->err[0]) {
        if (accept(p, ".")) {
            char id[128];
            if (!read_ident(p, id, sizeof id)) {
                fail(p, "expected a field name");
                break;
            }
            if (accept(p, "(")) {
                n = in_list(macros, id) ? parse_macro(p, n, id) : parse_method(p, n, id);
                continue;
            }
            cel_node_t *s = node(CEL_SELECT);
            s->a = n;
            s->name = lop_xstrdup(id);
            n = s;
        } else if (accept(p, "[")) {
            cel_node_t *ix = node(CEL_INDEX);
            ix->a = n;
            ix->b = parse_expr(p);
            expect(p, "]");
            n = ix;
        } else {
            break;
        }
    }
    return n;
}

static cel_node_t *parse_unary(parser_t *p)
{
    skip_ws(p);
    char c = p->s[p->pos];
    if ((c == '!' || c == '-') && p->depth > 100) {
        fail(p, "expression nests too deeply");
        return node(CEL_LIT);
    }
    if (c == '!' || (c == '-' && !isdigit((unsigned char)p->s[p->pos + 1]))) {
        p->pos++;
        cel_node_t *n = node(CEL_UNARY);
        n->op = c;
        p->depth++;
        n->a = parse_unary(p);
        p->depth--;
        return n;
    }
    if (c == '-') { /* a negative literal folds into the literal */
        p->pos++;
        cel_node_t *n = parse_member(p);
        if (n->kind == CEL_LIT && json_is_integer(n->lit))
            json_integer_set(n->lit, -json_integer_value(n->lit));
        else if (n->kind == CEL_LIT && json_is_real(n->lit))
            json_real_set(n->lit, -json_real_value(n->lit));
        else {
            cel_node_t *u = node(CEL_UNARY);
            u->op = '-';
            u->a = n;
            n = u;
        }
        return n;
    }
    return parse_member(p);
}

static cel_node_t *binary(int op, cel_node_t *a, cel_node_t *b)
{
    cel_node_t *n = node(CEL_BINARY);
    n->op = op;
    n->a = a;
    n->b = b;
    return n;
}

static cel_node_t *parse_mul(parser_t *p)
{
    cel_node_t *n = parse_unary(p);
    while (!p->err[0]) {
        int op = accept(p, "*") ? CEL_MUL : accept(p, "/") ? CEL_DIV : accept(p, "%") ? CEL_MOD : 0;
        if (!op) break;
        n = binary(op, n, parse_unary(p));
    }
    return n;
}

static cel_node_t *parse_add(parser_t *p)
{
    cel_node_t *n = parse_mul(p);
    while (!p->err[0]) {
        int op = accept(p, "+") ? CEL_ADD : accept(p, "-") ? CEL_SUB : 0;
        if (!op) break;
        n = binary(op, n, parse_mul(p));
    }
    return n;
}

static int relop(parser_t *p)
{
    if (accept(p, "<=")) return CEL_LE;
    if (accept(p, ">=")) return CEL_GE;
    if (accept(p, "==")) return CEL_EQ;
    if (accept(p, "!=")) return CEL_NE;
    if (accept(p, "<")) return CEL_LT;
    if (accept(p, ">")) return CEL_GT;
    if (peek_ident(p, "in")) {
        p->pos += 2;
        return CEL_IN;
    }
    return 0;
}

static cel_node_t *parse_relation(parser_t *p)
{
    cel_node_t *n = parse_add(p);
    int op;
    while (!p->err[0] && (op = relop(p))) n = binary(op, n, parse_add(p));
    return n;
}

static cel_node_t *parse_and(parser_t *p)
{
    cel_node_t *n = parse_relation(p);
    while (!p->err[0] && accept(p, "&&")) {
        cel_node_t *a = node(CEL_AND);
        a->a = n;
        a->b = parse_relation(p);
        n = a;
    }
    return n;
}

static cel_node_t *parse_or(parser_t *p)
{
    cel_node_t *n = parse_and(p);
    while (!p->err[0] && accept(p, "||")) {
        cel_node_t *o = node(CEL_OR);
        o->a = n;
        o->b = parse_and(p);
        n = o;
    }
    return n;
}

static cel_node_t *parse_expr(parser_t *p)
{
    cel_node_t *n = parse_or(p);
    if (p->err[0] || !accept(p, "?")) return n;
    cel_node_t *c = node(CEL_COND);
    c->a = n;
    c->b = parse_or(p);
    expect(p, ":");
    c->c = parse_expr(p);
    return c;
}

as_cel_prog_t *as_cel_compile(const char *src, char *err, size_t errlen)
{
    parser_t p = {.s = src};
    if (strlen(src) > AS_CEL_MAX_LEN) { /* bounds the tree's depth, hence the evaluator's recursion */
        snprintf(err, errlen, "rule longer than %d bytes", AS_CEL_MAX_LEN);
        return NULL;
    }
    cel_node_t *root = parse_expr(&p);
    skip_ws(&p);
    if (!p.err[0] && p.s[p.pos]) fail(&p, "unexpected trailing input");
    if (p.err[0]) {
        snprintf(err, errlen, "%s", p.err);
        node_free(root);
        return NULL;
    }
    as_cel_prog_t *prog = lop_xcalloc(1, sizeof *prog);
    prog->root = root;
    prog->old_self = p.old_self;
    return prog;
}

void as_cel_free(as_cel_prog_t *prog)
{
    if (!prog) return;
    node_free(prog->root);
    free(prog);
}

bool as_cel_uses_old_self(const as_cel_prog_t *prog) { return prog && prog->old_self; }
