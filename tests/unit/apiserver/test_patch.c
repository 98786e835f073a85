/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for apiserver/patch*.c: merge patch, JSON patch, strategic merge patch. */
#include "apiserver/patch.h"
#include "t.h"

#include <stdlib.h>

static json_t *J(const char *s)
{
    json_error_t e;
    json_t *v = json_loads(s, JSON_DECODE_ANY, &e);
    if (!v) fprintf(stderr, "bad test JSON %s: %s\n", s, e.text);
    return v;
}

/* Compare v with the JSON text want; prints both on mismatch. Consumes v. */
static int same(json_t *v, const char *want)
{
    json_t *w = J(want);
    int ok = v && w && json_equal(v, w);
    if (!ok) {
        char *got = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_SORT_KEYS) : NULL;
        fprintf(stderr, "  got  %s\n  want %s\n", got ? got : "(null)", want);
        free(got);
    }
    json_decref(v);
    json_decref(w);
    return ok;
}

typedef struct {
    const char *target, *patch, *want;
} case3_t;

static void test_merge_patch_rfc7386_table(void)
{
    static const case3_t cases[] = {
        {"{\"a\":\"b\"}", "{\"a\":\"c\"}", "{\"a\":\"c\"}"},
        {"{\"a\":\"b\"}", "{\"b\":\"c\"}", "{\"a\":\"b\",\"b\":\"c\"}"},
        {"{\"a\":\"b\"}", "{\"a\":null}", "{}"},
        {"{\"a\":\"b\",\"b\":\"c\"}", "{\"a\":null}", "{\"b\":\"c\"}"},
        {"{\"a\":[\"b\"]}", "{\"a\":\"c\"}", "{\"a\":\"c\"}"},
        {"{\"a\":\"c\"}", "{\"a\":[\"b\"]}", "{\"a\":[\"b\"]}"},
        {"{\"a\":{\"b\":\"c\"}}", "{\"a\":{\"b\":\"d\",\"c\":null}}", "{\"a\":{\"b\":\"d\"}}"},
        {"{\"a\":[{\"b\":\"c\"}]}", "{\"a\":[1]}", "{\"a\":[1]}"},
        {"[\"a\",\"b\"]", "[\"c\",\"d\"]", "[\"c\",\"d\"]"},
        {"{\"a\":\"b\"}", "[\"c\"]", "[\"c\"]"},
        {"{\"a\":\"foo\"}", "null", "null"},
        {"{\"a\":\"foo\"}", "\"bar\"", "\"bar\""},
        {"{\"e\":null}", "{\"a\":1}", "{\"e\":null,\"a\":1}"},
        {"[1,2]", "{\"a\":\"b\",\"c\":null}", "{\"a\":\"b\"}"},
        {"{}", "{\"a\":{\"bb\":{\"ccc\":null}}}", "{\"a\":{\"bb\":{}}}"},
        /* arrays are replaced wholesale, never merged */
        {"{\"l\":[1,2,3]}", "{\"l\":[4]}", "{\"l\":[4]}"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *t = J(cases[i].target), *p = J(cases[i].patch);
        char *before = json_dumps(t, JSON_ENCODE_ANY | JSON_SORT_KEYS);
        if (!same(as_patch_merge(t, p), cases[i].want)) {
            fprintf(stderr, "merge case %zu\n", i);
            T_CHECK(0);
        }
        char *after = json_dumps(t, JSON_ENCODE_ANY | JSON_SORT_KEYS);
        T_EQ_STR(after, before); /* the input is never modified */
        free(before);
        free(after);
        json_decref(t);
        json_decref(p);
    }
}

static void test_json_patch_rfc6902_table(void)
{
    static const case3_t ok[] = {
        {"{\"foo\":\"bar\"}", "[{\"op\":\"add\",\"path\":\"/baz\",\"value\":\"qux\"}]",
         "{\"foo\":\"bar\",\"baz\":\"qux\"}"},
        {"{\"foo\":[\"bar\",\"baz\"]}", "[{\"op\":\"add\",\"path\":\"/foo/1\",\"value\":\"qux\"}]",
         "{\"foo\":[\"bar\",\"qux\",\"baz\"]}"},
        {"{\"foo\":[1]}", "[{\"op\":\"add\",\"path\":\"/foo/-\",\"value\":2}]", "{\"foo\":[1,2]}"},
        {"{\"foo\":[1,2]}", "[{\"op\":\"add\",\"path\":\"/foo/2\",\"value\":3}]", "{\"foo\":[1,2,3]}"},
        {"{\"baz\":\"qux\",\"foo\":\"bar\"}", "[{\"op\":\"remove\",\"path\":\"/baz\"}]", "{\"foo\":\"bar\"}"},
        {"{\"foo\":[\"bar\",\"qux\",\"baz\"]}", "[{\"op\":\"remove\",\"path\":\"/foo/1\"}]",
         "{\"foo\":[\"bar\",\"baz\"]}"},
        {"{\"baz\":\"qux\"}", "[{\"op\":\"replace\",\"path\":\"/baz\",\"value\":\"boo\"}]", "{\"baz\":\"boo\"}"},
        {"{\"foo\":{\"bar\":\"baz\",\"waldo\":\"fred\"},\"qux\":{\"corge\":\"grault\"}}",
         "[{\"op\":\"move\",\"from\":\"/foo/waldo\",\"path\":\"/qux/thud\"}]",
         "{\"foo\":{\"bar\":\"baz\"},\"qux\":{\"corge\":\"grault\",\"thud\":\"fred\"}}"},
        {"{\"foo\":[\"all\",\"grass\",\"cows\",\"eat\"]}",
         "[{\"op\":\"move\",\"from\":\"/foo/1\",\"path\":\"/foo/3\"}]",
         "{\"foo\":[\"all\",\"cows\",\"eat\",\"grass\"]}"},
        {"{\"a\":{\"b\":1}}", "[{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/c\"}]",
         "{\"a\":{\"b\":1},\"c\":{\"b\":1}}"},
        {"{\"baz\":\"qux\",\"foo\":[\"a\",2,\"c\"]}",
         "[{\"op\":\"test\",\"path\":\"/baz\",\"value\":\"qux\"},"
         "{\"op\":\"test\",\"path\":\"/foo/1\",\"value\":2}]",
         "{\"baz\":\"qux\",\"foo\":[\"a\",2,\"c\"]}"},
        /* numbers compare by value */
        {"{\"n\":1}", "[{\"op\":\"test\",\"path\":\"/n\",\"value\":1.0}]", "{\"n\":1}"},
        /* pointer escapes: ~1 is '/', ~0 is '~' */
        {"{\"a/b\":1,\"m~n\":2}",
         "[{\"op\":\"replace\",\"path\":\"/a~1b\",\"value\":3},"
         "{\"op\":\"remove\",\"path\":\"/m~0n\"}]",
         "{\"a/b\":3}"},
        {"{\"metadata\":{\"annotations\":{}}}",
         "[{\"op\":\"add\",\"path\":\"/metadata/annotations/example.com~1x\",\"value\":\"y\"}]",
         "{\"metadata\":{\"annotations\":{\"example.com/x\":\"y\"}}}"},
        /* add replaces an existing member; adding null is allowed */
        {"{\"a\":1}", "[{\"op\":\"add\",\"path\":\"/a\",\"value\":null}]", "{\"a\":null}"},
        /* the root can be replaced */
        {"{\"a\":1}", "[{\"op\":\"replace\",\"path\":\"\",\"value\":[1]}]", "[1]"},
        /* an empty patch is the identity */
        {"{\"a\":1}", "[]", "{\"a\":1}"},
        /* negative index counts from the end */
        {"{\"l\":[1,2,3]}", "[{\"op\":\"remove\",\"path\":\"/l/-1\"}]", "{\"l\":[1,2]}"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        json_t *t = J(ok[i].target), *p = J(ok[i].patch);
        lop_err_t err;
        lop_err_clear(&err);
        if (!same(as_patch_json(t, p, &err), ok[i].want)) {
            fprintf(stderr, "json patch case %zu: %s\n", i, err.message);
            T_CHECK(0);
        }
        json_decref(t);
        json_decref(p);
    }
}

typedef struct {
    const char *target, *patch;
    int code;
    const char *reason;
} bad_t;

static void test_json_patch_failures(void)
{
    static const bad_t bad[] = {
        {"{\"a\":1}", "[{\"op\":\"test\",\"path\":\"/a\",\"value\":2}]", 422, "Invalid"},
        {"{\"a\":1}", "[{\"op\":\"test\",\"path\":\"/a\",\"value\":\"1\"}]", 422, "Invalid"},
        {"{\"a\":1}", "[{\"op\":\"remove\",\"path\":\"/b\"}]", 422, "Invalid"},
        {"{\"a\":1}", "[{\"op\":\"replace\",\"path\":\"/b\",\"value\":1}]", 422, "Invalid"},
        {"{\"a\":1}", "[{\"op\":\"add\",\"path\":\"/x/y\",\"value\":1}]", 422, "Invalid"},
        {"{\"l\":[1]}", "[{\"op\":\"add\",\"path\":\"/l/5\",\"value\":1}]", 422, "Invalid"},
        {"{\"l\":[1]}", "[{\"op\":\"add\",\"path\":\"/l/01\",\"value\":1}]", 422, "Invalid"},
        {"{\"a\":1}", "[{\"op\":\"add\",\"path\":\"a\",\"value\":1}]", 422, "Invalid"},
        {"{\"a\":1}", "[{\"op\":\"add\",\"path\":\"/~2\",\"value\":1}]", 422, "Invalid"},
        {"{\"a\":1}", "[{\"op\":\"add\",\"path\":\"/b\"}]", 422, "Invalid"},
        {"{\"a\":1}", "[{\"op\":\"frobnicate\",\"path\":\"/a\"}]", 422, "Invalid"},
        {"{\"a\":{\"b\":1}}", "[{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/a/b/c\"}]", 422, "Invalid"},
        {"{\"a\":1}", "[{\"op\":\"copy\",\"from\":\"/zz\",\"path\":\"/b\"}]", 422, "Invalid"},
        {"{\"a\":1}", "{\"op\":\"add\"}", 400, "BadRequest"},
        {"{\"a\":1}", "[1]", 400, "BadRequest"},
        {"{\"a\":1}", "\"x\"", 400, "BadRequest"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *t = J(bad[i].target), *p = J(bad[i].patch);
        lop_err_t err;
        lop_err_clear(&err);
        json_t *r = as_patch_json(t, p, &err);
        if (r || err.code != bad[i].code) fprintf(stderr, "bad json patch case %zu\n", i);
        T_CHECK(r == NULL);
        T_EQ_INT(err.code, bad[i].code);
        T_EQ_STR(err.reason, bad[i].reason);
        if (bad[i].code == 422)
            T_EQ_STR(err.message, "the server rejected our request due to an error in our request");
        else
            T_CHECK(strncmp(err.message, "invalid JSON patch", 18) == 0);
        json_decref(r);
        json_decref(t);
        json_decref(p);
    }
    /* an earlier failing op leaves the input untouched */
    json_t *t = J("{\"a\":1}");
    json_t *p = J("[{\"op\":\"add\",\"path\":\"/b\",\"value\":2},{\"op\":\"test\",\"path\":\"/a\","
                  "\"value\":9}]");
    T_CHECK(as_patch_json(t, p, NULL) == NULL);
    T_CHECK(same(json_incref(t), "{\"a\":1}"));
    json_decref(t);
    json_decref(p);
}

static void test_json_patch_too_many_ops(void)
{
    json_t *ops = json_array();
    for (int i = 0; i <= 10000; i++)
        json_array_append_new(ops, json_pack("{s:s,s:s,s:i}", "op", "add", "path", "/a", "value", i));
    json_t *t = json_object();
    lop_err_t err;
    T_CHECK(as_patch_json(t, ops, &err) == NULL);
    T_EQ_INT(err.code, 413);
    T_EQ_STR(err.reason, "RequestEntityTooLarge");
    json_array_remove(ops, 0); /* exactly 10000 is allowed */
    T_CHECK(same(as_patch_json(t, ops, &err), "{\"a\":10000}"));
    json_decref(ops);
    json_decref(t);
}

#define DEPLOY(spec) "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"spec\":{\"template\":{\"spec\":" spec "}}}"

static void smp_case(const char *kind, const char *target, const char *patch, const char *want)
{
    json_t *t = J(target), *p = J(patch);
    lop_err_t err;
    lop_err_clear(&err);
    const char *av = strcmp(kind, "Deployment") == 0 ? "apps/v1" : "v1";
    if (!same(as_patch_strategic(t, p, av, kind, &err), want)) {
        fprintf(stderr, "smp %s: %s (%s)\n", kind, patch, err.message);
        T_CHECK(0);
    }
    json_decref(t);
    json_decref(p);
}

static void test_smp_containers_merge_by_name(void)
{
    /* containers merge by name; env by name; an untouched container survives */
    smp_case("Deployment",
             DEPLOY("{\"containers\":[{\"name\":\"a\",\"image\":\"a:1\",\"env\":[{\"name\":\"X\",\"value\":\"1\"}]},"
                    "{\"name\":\"b\",\"image\":\"b:1\"}]}"),
             DEPLOY("{\"containers\":[{\"name\":\"a\",\"image\":\"a:2\",\"env\":[{\"name\":\"Y\",\"value\":\"2\"}]}]}"),
             DEPLOY("{\"containers\":[{\"name\":\"a\",\"image\":\"a:2\",\"env\":[{\"name\":\"X\",\"value\":\"1\"},"
                    "{\"name\":\"Y\",\"value\":\"2\"}]},{\"name\":\"b\",\"image\":\"b:1\"}]}"));
    /* a new container is appended; volumes by name; volumeMounts by mountPath */
    smp_case("Pod",
             "{\"spec\":{\"containers\":[{\"name\":\"a\",\"volumeMounts\":[{\"mountPath\":\"/d\",\"name\":\"v\"}]}],"
             "\"volumes\":[{\"name\":\"v\",\"emptyDir\":{}}]}}",
             "{\"spec\":{\"containers\":[{\"name\":\"a\",\"volumeMounts\":[{\"mountPath\":\"/d\",\"readOnly\":true}]},"
             "{\"name\":\"c\",\"image\":\"c\"}],\"volumes\":[{\"name\":\"w\",\"emptyDir\":{}}]}}",
             "{\"spec\":{\"containers\":[{\"name\":\"a\",\"volumeMounts\":[{\"mountPath\":\"/d\",\"name\":\"v\","
             "\"readOnly\":true}]},{\"name\":\"c\",\"image\":\"c\"}],"
             "\"volumes\":[{\"name\":\"v\",\"emptyDir\":{}},{\"name\":\"w\",\"emptyDir\":{}}]}}");
}

static void test_smp_directives(void)
{
    /* $patch: delete on an element removes it by merge key */
    smp_case("Pod", "{\"spec\":{\"containers\":[{\"name\":\"a\"},{\"name\":\"b\"}]}}",
             "{\"spec\":{\"containers\":[{\"name\":\"a\",\"$patch\":\"delete\"}]}}",
             "{\"spec\":{\"containers\":[{\"name\":\"b\"}]}}");
    /* {"$patch":"replace"} in a list replaces the whole list */
    smp_case("Pod", "{\"spec\":{\"containers\":[{\"name\":\"a\"},{\"name\":\"b\"}]}}",
             "{\"spec\":{\"containers\":[{\"name\":\"c\"},{\"$patch\":\"replace\"}]}}",
             "{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}");
    /* $patch: replace on one element replaces just that element */
    smp_case("Pod", "{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"i\",\"tty\":true},{\"name\":\"b\"}]}}",
             "{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"j\",\"$patch\":\"replace\"}]}}",
             "{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"j\"},{\"name\":\"b\"}]}}");
    /* $patch: replace on a map replaces it */
    smp_case("Pod", "{\"metadata\":{\"labels\":{\"a\":\"1\",\"b\":\"2\"}}}",
             "{\"metadata\":{\"labels\":{\"$patch\":\"replace\",\"c\":\"3\"}}}",
             "{\"metadata\":{\"labels\":{\"c\":\"3\"}}}");
    /* $patch: delete on a map removes it */
    smp_case("Pod", "{\"metadata\":{\"labels\":{\"a\":\"1\"},\"name\":\"p\"}}",
             "{\"metadata\":{\"labels\":{\"$patch\":\"delete\"}}}", "{\"metadata\":{\"name\":\"p\"}}");
    /* $retainKeys drops live keys not listed (volume source switch) */
    smp_case("Pod", "{\"spec\":{\"volumes\":[{\"name\":\"v\",\"emptyDir\":{}}]}}",
             "{\"spec\":{\"volumes\":[{\"name\":\"v\",\"$retainKeys\":[\"name\",\"configMap\"],"
             "\"configMap\":{\"name\":\"cm\"}}]}}",
             "{\"spec\":{\"volumes\":[{\"name\":\"v\",\"configMap\":{\"name\":\"cm\"}}]}}");
    /* finalizers are a set: union, and $deleteFromPrimitiveList removes */
    smp_case("Pod", "{\"metadata\":{\"finalizers\":[\"a\",\"b\"]}}",
             "{\"metadata\":{\"finalizers\":[\"b\",\"c\"],\"$deleteFromPrimitiveList/finalizers\":[\"a\"]}}",
             "{\"metadata\":{\"finalizers\":[\"b\",\"c\"]}}");
    /* $setElementOrder orders the merged list; unnamed live items stay after their predecessor */
    smp_case("Pod", "{\"spec\":{\"containers\":[{\"name\":\"a\"},{\"name\":\"x\"},{\"name\":\"b\"}]}}",
             "{\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"b\"},{\"name\":\"a\"}],"
             "\"containers\":[{\"name\":\"b\",\"image\":\"i\"}]}}",
             "{\"spec\":{\"containers\":[{\"name\":\"b\",\"image\":\"i\"},{\"name\":\"a\"},{\"name\":\"x\"}]}}");
    smp_case("Pod", "{\"metadata\":{\"finalizers\":[\"a\",\"b\"]}}",
             "{\"metadata\":{\"$setElementOrder/finalizers\":[\"b\",\"a\"]}}",
             "{\"metadata\":{\"finalizers\":[\"b\",\"a\"]}}");
}

static void test_smp_other_lists_and_keys(void)
{
    /* tolerations (no merge key) replace; null deletes */
    smp_case("Pod", "{\"spec\":{\"tolerations\":[{\"key\":\"a\"}],\"nodeName\":\"n\"}}",
             "{\"spec\":{\"tolerations\":[{\"key\":\"b\"}],\"nodeName\":null}}",
             "{\"spec\":{\"tolerations\":[{\"key\":\"b\"}]}}");
    /* Service ports merge by port; ownerReferences by uid; conditions by type */
    smp_case("Service", "{\"spec\":{\"ports\":[{\"port\":80,\"name\":\"http\"}]}}",
             "{\"spec\":{\"ports\":[{\"port\":80,\"targetPort\":8080},{\"port\":443}]}}",
             "{\"spec\":{\"ports\":[{\"port\":80,\"name\":\"http\",\"targetPort\":8080},{\"port\":443}]}}");
    smp_case("ConfigMap", "{\"metadata\":{\"ownerReferences\":[{\"uid\":\"1\",\"name\":\"a\"}]}}",
             "{\"metadata\":{\"ownerReferences\":[{\"uid\":\"2\",\"name\":\"b\"}]}}",
             "{\"metadata\":{\"ownerReferences\":[{\"uid\":\"1\",\"name\":\"a\"},{\"uid\":\"2\",\"name\":\"b\"}]}}");
    smp_case("Pod", "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}}",
             "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
             "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}");
    /* container ports by containerPort */
    smp_case("Deployment", DEPLOY("{\"containers\":[{\"name\":\"a\",\"ports\":[{\"containerPort\":80}]}]}"),
             DEPLOY("{\"containers\":[{\"name\":\"a\",\"ports\":[{\"containerPort\":81}]}]}"),
             DEPLOY("{\"containers\":[{\"name\":\"a\",\"ports\":[{\"containerPort\":80},{\"containerPort\":81}]}]}"));
    /* a new map from the patch has its nulls dropped */
    smp_case("ConfigMap", "{}", "{\"data\":{\"a\":\"1\",\"b\":null}}", "{\"data\":{\"a\":\"1\"}}");
}

static void test_smp_errors_and_support(void)
{
    lop_err_t err;
    json_t *t = J("{\"spec\":{\"containers\":[{\"name\":\"a\"}]}}");
    json_t *p = J("{\"spec\":{\"containers\":[{\"image\":\"x\"}]}}");
    T_CHECK(as_patch_strategic(t, p, "v1", "Pod", &err) == NULL);
    T_EQ_INT(err.code, 400);
    T_CHECK(strstr(err.message, "merge key: name") != NULL);
    json_decref(p);
    p = J("{\"metadata\":{\"$patch\":\"bogus\"}}");
    T_CHECK(as_patch_strategic(t, p, "v1", "Pod", &err) == NULL);
    T_EQ_INT(err.code, 400);
    json_decref(p);
    p = J("[1]");
    T_CHECK(as_patch_strategic(t, p, "v1", "Pod", &err) == NULL);
    T_EQ_INT(err.code, 400);
    json_decref(p);
    json_decref(t);

    T_CHECK(as_patch_strategic_supported("v1", "ConfigMap"));
    T_CHECK(as_patch_strategic_supported("apps/v1", "Deployment"));
    T_CHECK(as_patch_strategic_supported("coordination.k8s.io/v1", "Lease"));
    T_CHECK(!as_patch_strategic_supported("example.com/v1", "Widget"));
    T_CHECK(!as_patch_strategic_supported("v2", "Foo"));
    T_CHECK(!as_patch_strategic_supported(NULL, "Foo"));
}

/* Malformed directives and shapes fail with 400 or are ignored, never crash. */
static void test_smp_malformed_inputs(void)
{
    static const char *patches[] = {
        "{\"spec\":{\"containers\":[1,2]}}",
        "{\"spec\":{\"containers\":[{\"$patch\":\"delete\"}]}}",
        "{\"spec\":{\"$retainKeys\":\"x\"}}",
        "{\"spec\":{\"$setElementOrder/containers\":3}}",
        "{\"metadata\":{\"$deleteFromPrimitiveList/finalizers\":{}}}",
        "{\"spec\":{\"$patch\":7}}",
        "{\"spec\":{\"containers\":{\"name\":\"a\"}}}",
        "{\"spec\":[{\"$patch\":\"replace\"}]}",
        "{\"$patch\":\"delete\"}",
    };
    json_t *t = J("{\"spec\":{\"containers\":[{\"name\":\"a\"}],\"x\":1},\"metadata\":{"
                  "\"finalizers\":[\"f\"]}}");
    for (size_t i = 0; i < sizeof patches / sizeof patches[0]; i++) {
        json_t *p = J(patches[i]);
        lop_err_t err;
        lop_err_clear(&err);
        json_t *r = as_patch_strategic(t, p, "v1", "Pod", &err);
        T_CHECK(r != NULL || err.code == 400);
        json_decref(r);
        json_decref(p);
    }
    /* a non-object target is treated as empty */
    json_t *p = J("{\"a\":1}");
    json_t *arr = J("[1]");
    T_CHECK(same(as_patch_strategic(arr, p, "v1", "ConfigMap", NULL), "{\"a\":1}"));
    json_decref(arr);
    json_decref(p);
    json_decref(t);
}

int main(void)
{
    T_RUN(test_merge_patch_rfc7386_table);
    T_RUN(test_json_patch_rfc6902_table);
    T_RUN(test_json_patch_failures);
    T_RUN(test_json_patch_too_many_ops);
    T_RUN(test_smp_containers_merge_by_name);
    T_RUN(test_smp_directives);
    T_RUN(test_smp_other_lists_and_keys);
    T_RUN(test_smp_errors_and_support);
    T_RUN(test_smp_malformed_inputs);
    return T_DONE();
}
