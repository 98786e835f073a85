/* SPDX-License-Identifier: Apache-2.0 */
/* The RFC 6902 diff behind mutating admission responses (host/runtime/webhook/jsonpatch_diff.h):
 * the exact operations for a known pair, and for many pairs that applying the diff (with the local
 * API server's RFC 6902 applier, an independent implementation) turns `from` into `to`. */
#include "apiserver/patch.h"
#include "host/runtime/webhook/jsonpatch_diff.h"
#include "t.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

/* ---------------------------------------------------------------- the JSON Patch diff */

/* diff(from, to) applied to from gives to. */
static void check_roundtrip(const char *from_s, const char *to_s)
{
    json_t *from = json_loads(from_s, 0, NULL), *to = json_loads(to_s, 0, NULL);
    json_t *ops = lop_jsonpatch_diff(from, to);
    lop_err_t err;
    json_t *got = as_patch_json(from, ops, &err);
    T_CHECK(got && json_equal(got, to));
    if (!got || !json_equal(got, to)) {
        char *o = json_dumps(ops, 0);
        fprintf(stderr, "  from %s to %s: ops %s\n", from_s, to_s, o);
        free(o);
    }
    json_decref(got);
    json_decref(ops);
    json_decref(from);
    json_decref(to);
}

static void test_jsonpatch_diff_applies(void)
{
    check_roundtrip("{}", "{}");
    check_roundtrip("{\"a\":1}", "{\"a\":2}");
    check_roundtrip("{\"a\":1,\"b\":{\"c\":[1,2],\"d\":\"x\"}}", "{\"b\":{\"c\":[1,2,3],\"e\":null},\"f\":{}}");
    check_roundtrip("{\"a\":{\"x\":1}}", "{\"a\":[1]}");
    check_roundtrip("{\"a/b\":1,\"m~n\":{\"~/\":true}}", "{\"a/b\":2,\"m~n\":{\"~/\":false,\"new/~\":[]}}");
    check_roundtrip("[1,2]", "{\"now\":\"an object\"}");
    check_roundtrip("{\"l\":[{\"a\":1},{\"b\":2}]}", "{\"l\":[{\"a\":1}]}");
}

static void test_jsonpatch_diff_ops(void)
{
    json_t *from = json_loads("{\"keep\":1,\"gone\":2,\"o\":{\"a/b~c\":1},\"arr\":[1,2]}", 0, NULL);
    json_t *to = json_loads("{\"keep\":1,\"o\":{\"a/b~c\":5},\"arr\":[2,1],\"new\":true}", 0, NULL);
    json_t *ops = lop_jsonpatch_diff(from, to);
    char *s = json_dumps(ops, JSON_COMPACT);
    T_EQ_STR(s, "[{\"op\":\"remove\",\"path\":\"/gone\"},{\"op\":\"replace\",\"path\":\"/o/a~1b~0c\",\"value\":5},"
                "{\"op\":\"replace\",\"path\":\"/arr\",\"value\":[2,1]},{\"op\":\"add\",\"path\":\"/new\","
                "\"value\":true}]");
    free(s);
    json_decref(ops);
    ops = lop_jsonpatch_diff(from, from);
    T_EQ_INT(json_array_size(ops), 0);
    json_decref(ops);
    json_decref(from);
    json_decref(to);
}

static void test_json_pointer_escaping(void)
{
    lop_buf_t b = LOP_BUF_INIT;
    lop_json_pointer_append(&b, "metadata");
    lop_json_pointer_append(&b, "a/b~c");
    lop_json_pointer_append(&b, "");
    T_EQ_STR(b.data, "/metadata/a~1b~0c/");
    lop_buf_free(&b);
}

int main(void)
{
    T_RUN(test_jsonpatch_diff_applies);
    T_RUN(test_jsonpatch_diff_ops);
    T_RUN(test_json_pointer_escaping);
    return T_DONE();
}
