/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for apiserver/as_cel*.c (the CEL subset of x-kubernetes-validations) and the string
 * helpers of schema validation: formats, RE2-style patterns, Go value printing. */
#include "apiserver/as_cel.h"
#include "apiserver/as_goval.h"
#include "apiserver/as_schema_format.h"
#include "t.h"

#include <stdlib.h>

static json_t *J(const char *s)
{
    json_error_t e;
    json_t *v = json_loads(s, JSON_DECODE_ANY, &e);
    if (!v) fprintf(stderr, "bad test JSON %s: %s\n", s, e.text);
    return v;
}

/* rule over self (JSON text) and oldSelf (JSON text or NULL): 1 true, 0 false, -1 error, -2 does
 * not compile. */
static int eval(const char *rule, const char *self, const char *old)
{
    char err[300];
    as_cel_prog_t *p = as_cel_compile(rule, err, sizeof err);
    if (!p) return -2;
    json_t *s = J(self), *o = old ? J(old) : NULL;
    int rc = as_cel_eval_bool(p, s, o, err, sizeof err);
    json_decref(s);
    json_decref(o);
    as_cel_free(p);
    return rc;
}

typedef struct {
    const char *rule, *self;
    int want;
} cel_case_t;

static void test_cel_table(void)
{
    static const cel_case_t cases[] = {
        {"self.min <= self.max", "{\"min\":1,\"max\":2}", 1},
        {"self.min <= self.max", "{\"min\":3,\"max\":2}", 0},
        {"self.replicas * 2 + 1 == 7 && self.replicas % 2 == 1", "{\"replicas\":3}", 1},
        {"self.ratio > 0.5 && self.ratio < 1", "{\"ratio\":0.75}", 1},
        {"1 == 1.0 && 2 > 1.5", "{}", 1},
        {"has(self.spec) ? self.spec.size > 0 : true", "{}", 1},
        {"has(self.a) || self.b", "{\"b\":false}", 0},
        {"self.missing == 1", "{}", -1},
        {"self.missing == 1 || true", "{}", 1},
        {"false && self.missing == 1", "{}", 0},
        {"!(self.x == 'a')", "{\"x\":\"b\"}", 1},
        {"self.name.startsWith('web-') && self.name.endsWith(\"-1\") && self.name.contains('b')",
         "{\"name\":\"web-b-1\"}", 1},
        {"self.name.matches('^[a-z]+\\\\d$')", "{\"name\":\"abc1\"}", 1},
        {"self.name.matches('^[a-z]+$')", "{\"name\":\"ab-c\"}", 0},
        {"self.name.size() == 3 && size(self.name) == 3", "{\"name\":\"\\u00e9\\u00e9\\u00e9\"}", 1},
        {"self.tags.all(t, t.size() < 5)", "{\"tags\":[\"a\",\"bb\"]}", 1},
        {"self.tags.exists(t, t == 'c')", "{\"tags\":[\"a\",\"bb\"]}", 0},
        {"self.tags.exists_one(t, t.startsWith('b'))", "{\"tags\":[\"a\",\"bb\",\"bc\"]}", 0},
        {"self.tags.map(t, t + '!') == ['a!', 'bb!']", "{\"tags\":[\"a\",\"bb\"]}", 1},
        {"self.tags.filter(t, t.size() > 1).size() == 1", "{\"tags\":[\"a\",\"bb\"]}", 1},
        {"self.labels.all(k, k.startsWith('x'))", "{\"labels\":{\"xa\":\"1\",\"xb\":\"2\"}}", 1},
        {"'env' in self.labels && !('team' in self.labels)", "{\"labels\":{\"env\":\"prod\"}}", 1},
        {"self.mode in ['a', 'b']", "{\"mode\":\"b\"}", 1},
        {"self.items[1].port == 81 && self.labels['k'] == 'v'",
         "{\"items\":[{\"port\":80},{\"port\":81}],\"labels\":{\"k\":\"v\"}}", 1},
        {"self.items[5] == 1", "{\"items\":[]}", -1},
        {"self.x / 0 == 1", "{\"x\":1}", -1},
        {"9223372036854775807 + 1 > 0", "{}", -1},
        {"self.a + self.b == 'ab' && [1] + [2] == [1, 2]", "{\"a\":\"a\",\"b\":\"b\"}", 1},
        {"{'a': 1}.a == 1 && {'a': 1} == {'a': 1.0}", "{}", 1},
        {"int('12') + int(1.9) == 13 && double(2) == 2.0 && string(5) == '5'", "{}", 1},
        {"self.s.lowerAscii() == 'abc' && ' x '.trim() == 'x' && 'a'.upperAscii() == 'A'", "{\"s\":\"AbC\"}", 1},
        {"self.n < 10 ? 'small' == 'small' : false", "{\"n\":3}", 1},
        {"r'a\\d' == 'a\\\\d' && \"\\u00e9\" == '\\xc3\\xa9'.size() > 0", "{}", -1},
        {"self.x", "{\"x\":1}", -1},     /* not a bool */
        {"self.q.quantity()", "{}", -2}, /* outside the subset: not compiled */
        {"unknownVar > 1", "{}", -2},    /* undeclared */
        {"self.a ==", "{}", -2},         /* syntax */
        {"self.tags.all(t, t.x)", "{\"tags\":[1]}", -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int got = eval(cases[i].rule, cases[i].self, NULL);
        if (got != cases[i].want) fprintf(stderr, "  rule %s: got %d want %d\n", cases[i].rule, got, cases[i].want);
        T_EQ_INT(got, cases[i].want);
    }
}

static void test_cel_transition_and_messages(void)
{
    char err[300];
    as_cel_prog_t *p = as_cel_compile("self == oldSelf", err, sizeof err);
    T_CHECK(p && as_cel_uses_old_self(p));
    as_cel_free(p);
    p = as_cel_compile("self.size > 0", err, sizeof err);
    T_CHECK(p && !as_cel_uses_old_self(p));
    as_cel_free(p);
    T_EQ_INT(eval("self >= oldSelf", "5", "3"), 1);
    T_EQ_INT(eval("self >= oldSelf", "2", "3"), 0);
    p = as_cel_compile("'size ' + string(self.size) + ' is too big'", err, sizeof err);
    json_t *s = J("{\"size\":9}");
    char *m = p ? as_cel_eval_string(p, s, NULL, err, sizeof err) : NULL;
    T_EQ_STR(m, "size 9 is too big");
    free(m);
    json_decref(s);
    as_cel_free(p);
}

static void test_formats(void)
{
    struct {
        const char *f, *s;
        bool ok;
    } cases[] = {
        {"ipv4", "10.0.0.1", true},
        {"ipv4", "10.0.0", false},
        {"ipv4", "010.0.0.1", false},
        {"ipv6", "fe80::1", true},
        {"ipv6", "10.0.0.1", false},
        {"cidr", "10.0.0.0/8", true},
        {"cidr", "10.0.0.0/33", false},
        {"cidr", "fd00::/64", true},
        {"hostname", "a-b.example", true},
        {"hostname", "-a.example", false},
        {"uuid", "123e4567-e89b-12d3-a456-426614174000", true},
        {"uuid", "123e4567e89b12d3a456426614174000", true},
        {"uuid4", "123e4567-e89b-12d3-a456-426614174000", false},
        {"byte", "aGVsbG8=", true},
        {"byte", "aGVsbG8", false},
        {"date", "2024-02-29", true},
        {"date", "2023-02-29", false},
        {"date-time", "2024-01-02T03:04:05Z", true},
        {"date-time", "2024-01-02T03:04:05.123+01:00", true},
        {"date-time", "2024-01-02", false},
        {"duration", "1h30m", true},
        {"duration", "22 ns", true},
        {"duration", "soon", false},
        {"mac", "00:1a:2b:3c:4d:5e", true},
        {"mac", "00:1a:2b", false},
        {"email", "a@b.c", true},
        {"email", "nope", false},
        {"uri", "https://x/y", true},
        {"uri", "x y", false},
        {"int32", "anything", true},
        {"unknown-format", "x", true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bool got = as_format_valid(cases[i].f, cases[i].s, strlen(cases[i].s));
        if (got != cases[i].ok) fprintf(stderr, "  format %s %s: got %d\n", cases[i].f, cases[i].s, got);
        T_CHECK(got == cases[i].ok);
    }
}

static void test_patterns(void)
{
    struct {
        const char *re, *s;
        int want; /* 1 match, 0 no match, -1 not supported */
    } cases[] = {
        {"^[a-z]+\\d*$", "abc12", 1},
        {"^[a-z]+\\d*$", "ab-c", 0},
        {"\\w+@\\w+\\.com", "x me@ex.com", 1},
        {"^(?:ab)+$", "abab", 1},
        {"^[\\d.]+$", "1.2.3", 1},
        {"^a\\.b$", "axb", 0},
        {"^\\S+$", "a b", 0},
        {"a+?", "aa", -1},
        {"(?=x)", "x", -1},
        {"\\bword\\b", "a word", -1},
        {"a++", "a", -1},
        {"(a{10}){10}", "a", -1},
        {"^a{2,3}$", "aaa", 1},
        {"a{1001}", "a", -1},
        {"(?", "", -1},
        {"(a", "a", -1},
        {"^(ab){2}(c)+$", "ababcc", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        regex_t re;
        int got = as_pattern_compile(&re, cases[i].re) == 0 ? as_pattern_match(&re, cases[i].s) : -1;
        if (got >= 0) regfree(&re);
        if (got != cases[i].want) fprintf(stderr, "  pattern %s on %s: got %d\n", cases[i].re, cases[i].s, got);
        T_EQ_INT(got, cases[i].want);
    }
}

static void test_go_values(void)
{
    struct {
        const char *json, *want;
    } cases[] = {
        {"\"a\\\"b\\n\"", "\"a\\\"b\\n\""},
        {"7", "7"},
        {"1.25", "1.25"},
        {"1e21", "1e+21"},
        {"1000000.0", "1e+06"},
        {"100000.0", "100000"},
        {"0.00001", "1e-05"},
        {"true", "true"},
        {"null", "null"},
        {"{\"b\":1,\"a\":\"x\"}", "map[string]interface {}{\"a\":\"x\", \"b\":1}"},
        {"[\"a\",2]", "[]interface {}{\"a\", 2}"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *v = J(cases[i].json);
        lop_buf_t b = LOP_BUF_INIT;
        as_goval_append(&b, v);
        T_EQ_STR(b.data, cases[i].want);
        lop_buf_free(&b);
        json_decref(v);
    }
}

int main(void)
{
    T_RUN(test_cel_table);
    T_RUN(test_cel_transition_and_messages);
    T_RUN(test_formats);
    T_RUN(test_patterns);
    T_RUN(test_go_values);
    return T_DONE();
}
