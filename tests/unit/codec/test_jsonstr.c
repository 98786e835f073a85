/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for host/codec/jsonstr: the \uXXXX escape (BMP, surrogate pairs, lone surrogates,
 * bad hex, truncation at the end of the input) and string membership in a JSON array. */
#include "host/codec/jsonstr.h"
#include "t.h"

#include <string.h>

typedef struct {
    const char *in;
    int used;    /* bytes consumed, or a LOP_JSON_U_* code */
    uint32_t cp; /* when used > 0 */
} u_case_t;

static const u_case_t u_cases[] = {
    {"\\u0041", 6, 0x41},
    {"\\u00e9rest", 6, 0xE9},
    {"\\u20AC", 6, 0x20AC},
    {"\\u0000", 6, 0}, /* the caller decides whether it can hold NUL */
    {"\\uD83D\\uDE00", 12, 0x1F600},
    {"\\udbff\\udfff", 12, 0x10FFFF},
    {"\\uDE00", LOP_JSON_U_LONE_LOW, 0},
    {"\\uD83D", LOP_JSON_U_LONE_HIGH, 0},
    {"\\uD83Dx", LOP_JSON_U_LONE_HIGH, 0},
    {"\\uD83D\\u0041", LOP_JSON_U_LONE_HIGH, 0},
    {"\\uD83D\\uD83D", LOP_JSON_U_LONE_HIGH, 0},
    {"\\u12G4", LOP_JSON_U_BAD, 0},
    {"\\u123", LOP_JSON_U_BAD, 0},
    {"\\x1234", LOP_JSON_U_BAD, 0},
};

static void test_unescape_table(void)
{
    for (size_t i = 0; i < sizeof u_cases / sizeof u_cases[0]; i++) {
        const u_case_t *c = &u_cases[i];
        uint32_t cp = 0xDEAD;
        int used = lop_json_unescape_u(c->in, c->in + strlen(c->in), &cp);
        if (used != c->used) fprintf(stderr, "case %s\n", c->in);
        T_EQ_INT(used, c->used);
        if (c->used > 0) T_EQ_INT(cp, c->cp);
    }
}

static void test_unescape_stays_within_end(void)
{
    /* the pair's low half lies past end: refused, not read */
    const char *s = "\\uD83D\\uDE00";
    uint32_t cp;
    T_EQ_INT(lop_json_unescape_u(s, s + 11, &cp), LOP_JSON_U_LONE_HIGH);
    T_EQ_INT(lop_json_unescape_u(s, s + 5, &cp), LOP_JSON_U_BAD);
}

static void test_str_in(void)
{
    json_t *arr = json_loads("[\"a\", 1, null, \"kubernetes\", \"\"]", 0, NULL);
    T_CHECK(lop_json_str_in(arr, "a"));
    T_CHECK(lop_json_str_in(arr, "kubernetes"));
    T_CHECK(lop_json_str_in(arr, ""));
    T_CHECK(!lop_json_str_in(arr, "1"));
    T_CHECK(!lop_json_str_in(arr, "kube"));
    T_CHECK(!lop_json_str_in(NULL, "a"));
    json_t *obj = json_loads("{\"a\": \"a\"}", 0, NULL);
    T_CHECK(!lop_json_str_in(obj, "a")); /* not an array */
    json_decref(obj);
    json_decref(arr);
}

int main(void)
{
    T_RUN(test_unescape_table);
    T_RUN(test_unescape_stays_within_end);
    T_RUN(test_str_in);
    return T_DONE();
}
