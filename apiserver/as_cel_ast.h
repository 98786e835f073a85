/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_cel_ast.h — the parsed form of a CEL expression (as_cel.h), shared by the parser (as_cel.c)
 * and the evaluator (as_cel_eval.c) only. A tree of nodes owned by its program; literals are
 * jansson values (integers as JSON integers, doubles as reals).
 */
#ifndef LOP_APISERVER_AS_CEL_AST_H
#define LOP_APISERVER_AS_CEL_AST_H

#include "apiserver/as_cel.h"

#include <regex.h>

typedef enum cel_kind {
    CEL_LIT,    /* lit */
    CEL_IDENT,  /* name: self, oldSelf or a macro variable */
    CEL_SELECT, /* a.name */
    CEL_HAS,    /* has(a.name): a, name */
    CEL_INDEX,  /* a[b] */
    CEL_UNARY,  /* op a ('!' or '-') */
    CEL_BINARY, /* a op b (arithmetic, comparison, in) */
    CEL_AND,    /* a && b */
    CEL_OR,     /* a || b */
    CEL_COND,   /* a ? b : c */
    CEL_LIST,   /* [args...] */
    CEL_MAP,    /* {args[0]: args[1], ...} */
    CEL_CALL,   /* name(args...): size, int, double, string, bool */
    CEL_METHOD, /* a.name(args...) */
    CEL_MACRO,  /* a.name(var, b): all, exists, exists_one, map, filter */
} cel_kind_t;

/* binary operators */
enum { CEL_ADD = 1, CEL_SUB, CEL_MUL, CEL_DIV, CEL_MOD, CEL_LT, CEL_LE, CEL_GT, CEL_GE, CEL_EQ, CEL_NE, CEL_IN };

typedef struct cel_node {
    cel_kind_t kind;
    int op;
    char *name;
    char *var; /* CEL_MACRO: the bound variable */
    json_t *lit;
    struct cel_node *a, *b, *c;
    struct cel_node **args;
    size_t nargs;
    regex_t *re; /* matches() with a literal pattern: compiled once */
} cel_node_t;

struct as_cel_prog {
    cel_node_t *root;
    bool old_self;
};

#endif
