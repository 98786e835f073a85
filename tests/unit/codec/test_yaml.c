/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for host/kube/yaml: manifests to JSON as kubectl reads them. */
#include "host/codec/yaml.h"
#include "host/codec/yaml_emit.h"
#include "host/util/buf.h"
#include "t.h"

#include <stdint.h>

#include <stdlib.h>

static char *dump(const char *yaml)
{
    json_t *docs = NULL;
    lop_err_t err;
    if (lop_yaml_load_all(yaml, strlen(yaml), "t.yaml", &docs, &err) != LOP_OK) return NULL;
    char *s = json_dumps(docs, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(docs);
    return s;
}

static void test_scalars_resolve_as_kubectl_reads_them(void)
{
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"a: 1", "[{\"a\":1}]"},
        {"a: -12", "[{\"a\":-12}]"},
        {"a: 1.5", "[{\"a\":1.5}]"},
        {"a: \"1\"", "[{\"a\":\"1\"}]"},
        {"a: true\nb: False", "[{\"a\":true,\"b\":false}]"},
        {"a: yes\nb: Off\nc: y\nd: N\ne: \"yes\"", "[{\"a\":true,\"b\":false,\"c\":true,\"d\":false,\"e\":\"yes\"}]"},
        {"a: 010\nb: 0o10\nc: 0b101\nd: 1_000\ne: 09\nf: -0x10",
         "[{\"a\":8,\"b\":8,\"c\":5,\"d\":1000,\"e\":9,\"f\":-16}]"},
        {"m:\n  y: 1\n  010: 2\n  \"on\": 3", "[{\"m\":{\"8\":2,\"on\":3,\"true\":1}}]"},
        {"a: 2024-01-02\nb: 0x\nc: 0b2\nd: 1_000.5\ne: +7",
         "[{\"a\":\"2024-01-02\",\"b\":\"0x\",\"c\":\"0b2\",\"d\":1000.5,\"e\":7}]"},
        {"a: ~\nb:\nc: null", "[{\"a\":null,\"b\":null,\"c\":null}]"},
        {"a: 0x1f", "[{\"a\":31}]"},
        {"a: 1.2.3", "[{\"a\":\"1.2.3\"}]"},
        {"a: []\nb: {}", "[{\"a\":[],\"b\":{}}]"},
        {"a: !!str 5", "[{\"a\":\"5\"}]"},
        {"a: 12345678901234", "[{\"a\":12345678901234}]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = dump(cases[i].in);
        T_EQ_STR(got, cases[i].out);
        free(got);
    }
}

static void test_multi_document_stream_skips_empty_documents(void)
{
    char *got = dump("---\nkind: A\n---\n---\n# only a comment\n---\nkind: B\nitems:\n- x\n- yy: 2\n");
    T_EQ_STR(got, "[{\"kind\":\"A\"},{\"items\":[\"x\",{\"yy\":2}],\"kind\":\"B\"}]");
    free(got);
}

static void test_anchors_and_aliases_expand(void)
{
    char *got = dump("base: &b {x: 1}\ncopy: *b\n");
    T_EQ_STR(got, "[{\"base\":{\"x\":1},\"copy\":{\"x\":1}}]");
    free(got);
}

/* The classic "billion laughs": each line doubles (x10 here) the one before; 9 levels would be 10^9
 * strings. It must be refused early, naming the cause, without expanding it. */
static const char laughs[] = "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
                             "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                             "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
                             "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
                             "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
                             "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
                             "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
                             "h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
                             "i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n";

static void test_alias_expansion_is_bounded(void)
{
    json_t *docs = NULL;
    lop_err_t err;
    T_EQ_INT(lop_yaml_load_all(laughs, strlen(laughs), "bomb.yaml", &docs, &err), LOP_EINVAL);
    T_CHECK(docs == NULL);
    T_CHECK(strncmp(err.message, "bomb.yaml:", 10) == 0);
    T_CHECK(strstr(err.message, "excessive aliasing") != NULL);
    T_CHECK(strstr(err.message, "alias *") != NULL);
    T_EQ_INT(lop_yaml_expansion_budget(100), 100 * LOP_YAML_EXPANSION_FACTOR + LOP_YAML_EXPANSION_FLOOR);
    T_EQ_INT(lop_yaml_expansion_budget(SIZE_MAX / 2), SIZE_MAX); /* saturates, never wraps */
}

/* A real manifest sharing one block many times stays well inside the bound. */
static void test_alias_reuse_within_the_bound_loads(void)
{
    lop_buf_t b = LOP_BUF_INIT;
    lop_buf_puts(&b, "base: &c {image: nginx, ports: [{containerPort: 80}], env: [{name: A, value: b}]}\nuses:\n");
    for (int i = 0; i < 200; i++) lop_buf_puts(&b, "- *c\n");
    json_t *docs = NULL;
    lop_err_t err;
    T_EQ_INT(lop_yaml_load_all(b.data, b.len, "ok.yaml", &docs, &err), LOP_OK);
    T_EQ_INT(json_array_size(json_object_get(json_array_get(docs, 0), "uses")), 200);
    json_decref(docs);
    lop_buf_free(&b);
}

static void test_syntax_error_names_origin_and_line(void)
{
    json_t *docs = NULL;
    lop_err_t err;
    const char *bad = "a: 1\nb: [1, 2\nc: 3\n";
    T_EQ_INT(lop_yaml_load_all(bad, strlen(bad), "bad.yaml", &docs, &err), LOP_EINVAL);
    T_CHECK(docs == NULL);
    T_CHECK(strncmp(err.message, "bad.yaml:", 9) == 0);
    T_EQ_INT(lop_yaml_load_file("/nonexistent.yaml", &docs, &err), LOP_EINVAL);
    T_CHECK(strstr(err.message, "/nonexistent.yaml") != NULL);
}

/* lop_yaml_emit's output loads back to an equal value: nested objects and lists, lists of
 * lists, empty containers, strings that look like other scalars, keys that need quotes. */
static void test_emit_round_trip(void)
{
    const char *src = "{\"apiVersion\":\"v1\",\"webhooks\":[{\"name\":\"m.x.io\",\"rules\":[{\"ops\":[\"CREATE\","
                      "\"UPDATE\"],\"scope\":\"*\"}],\"empty\":{},\"none\":[]},[[1,2],[]],\"on\"],"
                      "\"odd key: x\":{\"n\":1.5,\"b\":true,\"z\":null,\"Yes\":\"yes\",\"s\":\"1.0\",\"t\":\"~\","
                      "\"nl\":\"a\\nb\"},\"-dash\":\"-\"}";
    json_t *v = json_loads(src, 0, NULL);
    T_CHECK(v != NULL);
    lop_buf_t b = {0};
    lop_yaml_emit(&b, v);
    json_t *docs = NULL;
    lop_err_t err;
    T_EQ_INT(lop_yaml_load_all(b.data, b.len, "emitted", &docs, &err), LOP_OK);
    T_CHECK(docs && json_array_size(docs) == 1 && json_equal(json_array_get(docs, 0), v));
    if (!(docs && json_equal(json_array_get(docs, 0), v))) fprintf(stderr, "%s\n", b.data);
    T_CHECK(strstr(b.data, "webhooks:\n- name: m.x.io\n") != NULL); /* block style, plain when safe */
    T_CHECK(strstr(b.data, "s: \"1.0\"\n") != NULL && strstr(b.data, "\"on\"") != NULL);
    json_decref(docs);
    json_decref(v);
    lop_buf_free(&b);
}

int main(void)
{
    T_RUN(test_scalars_resolve_as_kubectl_reads_them);
    T_RUN(test_multi_document_stream_skips_empty_documents);
    T_RUN(test_anchors_and_aliases_expand);
    T_RUN(test_alias_expansion_is_bounded);
    T_RUN(test_alias_reuse_within_the_bound_loads);
    T_RUN(test_syntax_error_names_origin_and_line);
    T_RUN(test_emit_round_trip);
    return T_DONE();
}
