/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for host/meta/selector.c: label and field selectors (apimachinery pkg/labels,
 * pkg/fields). */
#include "host/meta/selector.h"
#include "t.h"

#include <stdlib.h>

typedef struct {
    const char *sel;
    const char *labels; /* JSON object, or NULL for an object without labels */
    bool match;
} match_case_t;

static void test_label_matching_table(void)
{
    static const match_case_t cases[] = {
        {"", NULL, true},
        {"", "{\"a\":\"b\"}", true},
        {"a=b", "{\"a\":\"b\"}", true},
        {"a==b", "{\"a\":\"b\"}", true},
        {"a=b", "{\"a\":\"c\"}", false},
        {"a=b", NULL, false},
        {"a!=b", "{\"a\":\"c\"}", true},
        {"a!=b", "{\"a\":\"b\"}", false},
        /* surprise: != and notin match objects lacking the label */
        {"a!=b", NULL, true},
        {"a!=b", "{\"x\":\"y\"}", true},
        {"a notin (b,c)", "{}", true},
        {"a notin (b,c)", "{\"a\":\"c\"}", false},
        {"a notin (b,c)", "{\"a\":\"d\"}", true},
        {"a in (b,c)", "{\"a\":\"c\"}", true},
        {"a in (b,c)", "{\"a\":\"d\"}", false},
        {"a in (b,c)", "{}", false},
        {"a", "{\"a\":\"\"}", true},
        {"a", "{\"b\":\"\"}", false},
        {"!a", "{\"b\":\"\"}", true},
        {"!a", "{\"a\":\"x\"}", false},
        /* empty values */
        {"a=", "{\"a\":\"\"}", true},
        {"a=", "{\"a\":\"x\"}", false},
        {"a in ()", "{\"a\":\"\"}", true},
        {"a in (,x)", "{\"a\":\"\"}", true},
        {"a in (x,)", "{\"a\":\"\"}", true},
        {"a in (x,,y)", "{\"a\":\"\"}", true},
        {"a in (x,y)", "{\"a\":\"\"}", false},
        /* whitespace */
        {"  a  =  b  ,  c  ", "{\"a\":\"b\",\"c\":\"1\"}", true},
        {"a in(b ,  c )", "{\"a\":\"c\"}", true},
        {"a\tin\t(b)", "{\"a\":\"b\"}", true},
        /* AND */
        {"a=b,c=d", "{\"a\":\"b\",\"c\":\"d\"}", true},
        {"a=b,c=d", "{\"a\":\"b\",\"c\":\"x\"}", false},
        {"a,!b", "{\"a\":\"1\"}", true},
        /* integer comparisons */
        {"n>5", "{\"n\":\"6\"}", true},
        {"n>5", "{\"n\":\"5\"}", false},
        {"n<5", "{\"n\":\"4\"}", true},
        {"n<5", "{\"n\":\"10\"}", false},
        {"n>5", "{}", false},
        {"n>5", "{\"n\":\"abc\"}", false},
        {"n>5", "{\"n\":\"007\"}", true},
        {"n>  5", "{\"n\":\"6\"}", true},
        /* keywords are keys and values too */
        {"in=notin", "{\"in\":\"notin\"}", true},
        {"a in (in,notin)", "{\"a\":\"notin\"}", true},
        {"example.com/app=web", "{\"example.com/app\":\"web\"}", true},
        {"app.kubernetes.io/name in (x, y)", "{\"app.kubernetes.io/name\":\"y\"}", true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        lop_label_selector_t *sel = NULL;
        lop_err_t err;
        lop_err_clear(&err);
        lop_rc_t rc = lop_label_selector_parse(cases[i].sel, &sel, &err);
        if (rc != LOP_OK) {
            fprintf(stderr, "case %zu '%s': parse failed: %s\n", i, cases[i].sel, err.message);
            T_CHECK(rc == LOP_OK);
            continue;
        }
        json_t *labels = cases[i].labels ? json_loads(cases[i].labels, 0, NULL) : NULL;
        bool m = lop_label_selector_match_json(sel, labels);
        if (m != cases[i].match)
            fprintf(stderr, "case %zu '%s' on %s: got %d\n", i, cases[i].sel,
                    cases[i].labels ? cases[i].labels : "null", m);
        T_EQ_INT(m, cases[i].match);
        json_decref(labels);
        lop_label_selector_free(sel);
    }
}

typedef struct {
    const char *sel;
    const char *message; /* exact expected message */
} err_case_t;

#define QMSG                                                                                    \
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an " \
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "      \
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
#define VMSG                                                                                    \
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or " \
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "          \
    "'my_value',  or '12345', regex used for validation is "                                    \
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"

static void test_label_parse_errors_table(void)
{
    static const err_case_t cases[] = {
        {"a in b", "unable to parse requirement: found 'b' expected: '('"},
        {"a in", "unable to parse requirement: found '' expected: '('"},
        {"a in (b c)", "unable to parse requirement: found 'c', expected: ',' or ')'"},
        {"a in (b", "unable to parse requirement: found '', expected: ',' or ')'"},
        {"a in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier"},
        {"a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"},
        {"a>=5", "unable to parse requirement: found '=', expected: identifier"},
        {"a>b", "unable to parse requirement: values[0]: Invalid value: \"b\": for 'Gt', 'Lt' "
                "operators, the value must be an integer"},
        {"a<-1", "unable to parse requirement: values[0][a]: Invalid value: \"-1\": " VMSG},
        {"a>-x", "unable to parse requirement: [values[0]: Invalid value: \"-x\": for 'Gt', 'Lt' "
                 "operators, the value must be an integer, values[0][a]: Invalid value: \"-x\": " VMSG "]"},
        {"a=-x", "unable to parse requirement: values[0][a]: Invalid value: \"-x\": " VMSG},
        {"-a=b", "unable to parse requirement: <nil>: Invalid value: \"-a\": name part " QMSG},
        {"a/b/c", "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a qualified name " QMSG
                  " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"},
        {"/a", "unable to parse requirement: <nil>: Invalid value: \"/a\": prefix part must be "
               "non-empty"},
        {"a/", "unable to parse requirement: <nil>: Invalid value: \"a/\": name part must be "
               "non-empty; name part " QMSG},
        {"a=b,", "found '', expected: identifier after ','"},
        {"a=b,,c", "found ',', expected: identifier after ','"},
        {",a", "found ',', expected: !, identifier, or 'end of string'"},
        {"=a", "found '=', expected: !, identifier, or 'end of string'"},
        {"!a=b", "found '=', expected: ',' or 'end of string'"},
        {"a=b c", "found 'c', expected: ',' or 'end of string'"},
        {"!", "unable to parse requirement: found '', expected: identifier"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        lop_label_selector_t *sel = NULL;
        lop_err_t err;
        lop_err_clear(&err);
        lop_rc_t rc = lop_label_selector_parse(cases[i].sel, &sel, &err);
        T_EQ_INT(rc, LOP_EINVAL);
        T_CHECK(sel == NULL);
        T_EQ_INT(err.code, 400);
        T_EQ_STR(err.reason, "BadRequest");
        if (strcmp(err.message, cases[i].message) != 0) fprintf(stderr, "case %zu '%s'\n", i, cases[i].sel);
        T_EQ_STR(err.message, cases[i].message);
    }
}

static void test_label_key_and_value_limits(void)
{
    char key[80], sel_s[200];
    memset(key, 'k', 63);
    key[63] = '\0';
    lop_label_selector_t *sel = NULL;
    lop_err_t err;
    T_EQ_INT(lop_label_selector_parse(key, &sel, &err), LOP_OK);
    lop_label_selector_free(sel);
    key[63] = 'k';
    key[64] = '\0';
    T_EQ_INT(lop_label_selector_parse(key, &sel, &err), LOP_EINVAL);
    T_CHECK(strstr(err.message, "name part must be no more than 63 characters") != NULL);
    /* value of 64 characters */
    snprintf(sel_s, sizeof sel_s, "a=%s", key);
    T_EQ_INT(lop_label_selector_parse(sel_s, &sel, &err), LOP_EINVAL);
    T_CHECK(strstr(err.message, "values[0][a]: Invalid value:") != NULL);
    T_CHECK(strstr(err.message, "must be no more than 63 characters") != NULL);
    /* upper-case prefix is not a DNS subdomain */
    T_EQ_INT(lop_label_selector_parse("Example.com/a", &sel, &err), LOP_EINVAL);
    T_CHECK(strstr(err.message, "prefix part a lowercase RFC 1123 subdomain") != NULL);
    T_EQ_INT(lop_label_selector_parse("ex_ample.com/a", &sel, &err), LOP_EINVAL);
    T_EQ_INT(lop_label_selector_parse("a.b-c.d/X_y.z", &sel, &err), LOP_OK);
    lop_label_selector_free(sel);
    T_EQ_INT(lop_label_selector_parse("a=Under_score.dot-dash", &sel, &err), LOP_OK);
    lop_label_selector_free(sel);
}

static void test_label_empty_and_lookup(void)
{
    lop_label_selector_t *sel = NULL;
    T_EQ_INT(lop_label_selector_parse(NULL, &sel, NULL), LOP_OK);
    T_CHECK(lop_label_selector_empty(sel));
    lop_label_selector_free(sel);
    T_EQ_INT(lop_label_selector_parse("   ", &sel, NULL), LOP_OK);
    T_CHECK(lop_label_selector_empty(sel));
    lop_label_selector_free(sel);
    T_EQ_INT(lop_label_selector_parse("a", &sel, NULL), LOP_OK);
    T_CHECK(!lop_label_selector_empty(sel));
    /* non-string label values count as absent */
    json_t *labels = json_pack("{s:i}", "a", 1);
    T_CHECK(!lop_label_selector_match_json(sel, labels));
    json_decref(labels);
    lop_label_selector_free(sel);
    lop_label_selector_free(NULL);
}

static const char *field_lookup(void *ud, const char *key)
{
    json_t *o = ud;
    json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static void test_field_selectors(void)
{
    lop_field_selector_t *sel = NULL;
    lop_err_t err;
    json_t *obj =
        json_pack("{s:s,s:s,s:s}", "metadata.name", "a,b=c\\d", "metadata.namespace", "ns1", "status.phase", "Running");

    T_EQ_INT(lop_field_selector_parse("metadata.name=a\\,b\\=c\\\\d,metadata.namespace==ns1", &sel, &err), LOP_OK);
    T_EQ_INT(lop_field_selector_count(sel), 2);
    T_EQ_STR(lop_field_selector_field(sel, 0), "metadata.name");
    T_EQ_STR(lop_field_selector_field(sel, 1), "metadata.namespace");
    T_CHECK(lop_field_selector_field(sel, 2) == NULL);
    T_EQ_STR(lop_field_selector_exact(sel, "metadata.name"), "a,b=c\\d");
    T_EQ_STR(lop_field_selector_exact(sel, "metadata.namespace"), "ns1");
    T_CHECK(lop_field_selector_exact(sel, "status.phase") == NULL);
    T_CHECK(lop_field_selector_match(sel, field_lookup, obj));
    lop_field_selector_free(sel);

    T_EQ_INT(lop_field_selector_parse("status.phase!=Running", &sel, &err), LOP_OK);
    T_CHECK(!lop_field_selector_match(sel, field_lookup, obj));
    T_CHECK(lop_field_selector_exact(sel, "status.phase") == NULL);
    lop_field_selector_free(sel);

    /* absent fields compare as "" */
    T_EQ_INT(lop_field_selector_parse("spec.nodeName=", &sel, &err), LOP_OK);
    T_CHECK(lop_field_selector_match(sel, field_lookup, obj));
    lop_field_selector_free(sel);
    T_EQ_INT(lop_field_selector_parse("spec.nodeName!=x", &sel, &err), LOP_OK);
    T_CHECK(lop_field_selector_match(sel, field_lookup, obj));
    lop_field_selector_free(sel);

    /* empty terms are skipped; empty selector matches everything */
    T_EQ_INT(lop_field_selector_parse(",,", &sel, &err), LOP_OK);
    T_CHECK(lop_field_selector_empty(sel));
    T_CHECK(lop_field_selector_match(sel, field_lookup, obj));
    lop_field_selector_free(sel);
    T_EQ_INT(lop_field_selector_parse(NULL, &sel, &err), LOP_OK);
    T_CHECK(lop_field_selector_empty(sel));
    lop_field_selector_free(sel);

    /* whitespace is not trimmed: the field name keeps it */
    T_EQ_INT(lop_field_selector_parse("a =b", &sel, &err), LOP_OK);
    T_EQ_STR(lop_field_selector_field(sel, 0), "a ");
    lop_field_selector_free(sel);
    json_decref(obj);

    static const err_case_t bad[] = {
        {"metadata.name", "invalid selector: 'metadata.name'; can't understand 'metadata.name'"},
        {"a=b,c", "invalid selector: 'a=b,c'; can't understand 'c'"},
        {"a in (b)", "invalid selector: 'a in (b)'; can't understand 'a in (b)'"},
        {"a=b=c", "invalid field selector: unescaped character in value: ="},
        {"a==b=c", "invalid field selector: unescaped character in value: ="},
        {"a=b\\x", "invalid field selector: invalid escape sequence: \\x"},
        {"a=b\\", "invalid field selector: invalid escape sequence: \\"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        lop_err_clear(&err);
        sel = NULL;
        T_EQ_INT(lop_field_selector_parse(bad[i].sel, &sel, &err), LOP_EINVAL);
        T_CHECK(sel == NULL);
        T_EQ_INT(err.code, 400);
        T_EQ_STR(err.reason, "BadRequest");
        T_EQ_STR(err.message, bad[i].message);
    }
}

/* Every string of up to 4 characters over the grammar's alphabet parses or fails cleanly. */
static void test_no_crash_on_any_short_input(void)
{
    static const char alpha[] = "a=!(),<> \\-";
    const size_t n = sizeof alpha - 1;
    char s[8];
    size_t parsed = 0, failed = 0;
    for (size_t len = 0; len <= 4; len++) {
        size_t total = 1;
        for (size_t i = 0; i < len; i++) total *= n;
        for (size_t code = 0; code < total; code++) {
            size_t c = code;
            for (size_t i = 0; i < len; i++, c /= n) s[i] = alpha[c % n];
            s[len] = '\0';
            lop_label_selector_t *ls = NULL;
            lop_field_selector_t *fs = NULL;
            lop_err_t err;
            if (lop_label_selector_parse(s, &ls, &err) == LOP_OK) {
                parsed++;
                (void)lop_label_selector_match_json(ls, NULL);
            } else {
                failed++;
                T_CHECK(ls == NULL && err.code == 400 && err.message[0] != '\0');
            }
            lop_label_selector_free(ls);
            if (lop_field_selector_parse(s, &fs, &err) == LOP_OK)
                (void)lop_field_selector_count(fs);
            else
                T_CHECK(fs == NULL && err.code == 400);
            lop_field_selector_free(fs);
        }
    }
    T_CHECK(parsed > 0 && failed > 0);
}

int main(void)
{
    T_RUN(test_label_matching_table);
    T_RUN(test_label_parse_errors_table);
    T_RUN(test_label_key_and_value_limits);
    T_RUN(test_label_empty_and_lookup);
    T_RUN(test_field_selectors);
    T_RUN(test_no_crash_on_any_short_input);
    return T_DONE();
}
