/* Unit tests for host/kube/yaml: manifests to JSON as kubectl reads them. */
#include "host/codec/yaml.h"
#include "t.h"

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

static void test_scalars_follow_the_core_schema(void)
{
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"a: 1", "[{\"a\":1}]"},
        {"a: -12", "[{\"a\":-12}]"},
        {"a: 1.5", "[{\"a\":1.5}]"},
        {"a: \"1\"", "[{\"a\":\"1\"}]"},
        {"a: true\nb: False", "[{\"a\":true,\"b\":false}]"},
        {"a: yes", "[{\"a\":\"yes\"}]"},
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
    char *got = dump("---\nkind: A\n---\n---\n# only a comment\n---\nkind: B\nitems:\n- x\n- y: 2\n");
    T_EQ_STR(got, "[{\"kind\":\"A\"},{\"items\":[\"x\",{\"y\":2}],\"kind\":\"B\"}]");
    free(got);
}

static void test_anchors_and_aliases_expand(void)
{
    char *got = dump("base: &b {x: 1}\ncopy: *b\n");
    T_EQ_STR(got, "[{\"base\":{\"x\":1},\"copy\":{\"x\":1}}]");
    free(got);
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

int main(void)
{
    T_RUN(test_scalars_follow_the_core_schema);
    T_RUN(test_multi_document_stream_skips_empty_documents);
    T_RUN(test_anchors_and_aliases_expand);
    T_RUN(test_syntax_error_names_origin_and_line);
    return T_DONE();
}
