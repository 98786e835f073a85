/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for host/kube/listdecoder: a LIST body decoded while it streams in. Chunk boundaries
 * mean nothing; items are delivered whole, validated, with the list's kind known. */
#include "host/codec/jsonscan.h"
#include "host/kube/cache/listdecoder.h"
#include "host/util/buf.h"
#include "t.h"

#include <stdlib.h>
#include <string.h>

typedef struct sink {
    char items[8][256];
    char kinds[8][32];
    int n;
    int stop_after;         /* 0 = never */
    int unchecked, refused; /* items offered unchecked; of those, refused */
    lop_listdecoder_t *d;
} sink_t;

/* As a consumer must: an unchecked item is taken only when the bytes begin with one whole JSON
 * value (here checked with jsonscan), else refused. */
static int collect(void *ud, const char *item, size_t len, size_t *end)
{
    sink_t *s = ud;
    if (end) {
        size_t vs, ve;
        s->unchecked++;
        if (lop_jscan_value(item, len, 0, &vs, &ve) != 0) {
            s->refused++;
            return LOP_LIST_RETRY;
        }
        *end = len = ve;
    }
    if (s->n < 8 && len < sizeof s->items[0]) {
        memcpy(s->items[s->n], item, len);
        s->items[s->n][len] = '\0';
        snprintf(s->kinds[s->n], sizeof s->kinds[0], "%s", lop_listdecoder_item_kind(s->d));
    }
    s->n++;
    return s->stop_after && s->n >= s->stop_after;
}

/* A decoder delivering to s (which records the list kind seen at each item). */
static lop_listdecoder_t *new_decoder(sink_t *s, size_t max_item)
{
    s->d = lop_listdecoder_new(max_item, collect, s);
    return s->d;
}

static const char *item[] = {
    "{\"metadata\":{\"name\":\"a{b}\",\"namespace\":\"x\"},\"s\":[1,{\"y\":\"\\\"]}\"}],\"n\":-1.5e3}",
    "{\"metadata\":{\"name\":\"b\"},\"t\":\"]\",\"u\":[[],{}],\"v\":null,\"w\":true}",
    "{}",
};

static const char *body(void)
{
    static char s[2048];
    snprintf(s, sizeof s,
             " {\"kind\" : \"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"42\","
             "\"continue\":\"tok\\u0021\"},\"extra\":[1,\"}\"],\n\"items\": [ %s ,\n%s,%s ] , \"z\":false}\r\n",
             item[0], item[1], item[2]);
    return s;
}

static void check_all(lop_listdecoder_t *d, sink_t *s)
{
    T_EQ_INT(s->n, 3);
    for (int i = 0; i < 3 && i < s->n; i++) {
        T_EQ_STR(s->items[i], item[i]);
        T_EQ_STR(s->kinds[i], "Pod");
    }
    T_EQ_INT(lop_listdecoder_finish(d, NULL), LOP_OK);
    T_EQ_STR(lop_listdecoder_resource_version(d), "42");
    T_EQ_STR(lop_listdecoder_continue(d), "tok!");
    T_EQ_STR(lop_listdecoder_api_version(d), "v1");
    T_EQ_STR(lop_listdecoder_item_kind(d), "Pod");
    T_EQ_INT(lop_listdecoder_items(d), 3);
}

static void test_every_two_chunk_split(void)
{
    const char *b = body();
    size_t n = strlen(b);
    sink_t s = {0};
    lop_listdecoder_t *d = new_decoder(&s, 0);
    for (size_t cut = 0; cut <= n; cut++) {
        memset(&s, 0, sizeof s);
        s.d = d;
        lop_listdecoder_reset(d);
        T_EQ_INT(lop_listdecoder_feed(d, b, cut, NULL), LOP_OK);
        T_EQ_INT(lop_listdecoder_feed(d, b + cut, n - cut, NULL), LOP_OK);
        check_all(d, &s);
    }
    lop_listdecoder_free(d);
}

static void test_byte_by_byte_and_all_at_once(void)
{
    const char *b = body();
    size_t n = strlen(b);
    sink_t s = {0};
    lop_listdecoder_t *d = new_decoder(&s, 0);
    for (size_t i = 0; i < n; i++) T_EQ_INT(lop_listdecoder_feed(d, b + i, 1, NULL), LOP_OK);
    check_all(d, &s);
    memset(&s, 0, sizeof s);
    s.d = d;
    lop_listdecoder_reset(d);
    T_EQ_INT(lop_listdecoder_feed(d, b, n, NULL), LOP_OK);
    check_all(d, &s);
    lop_listdecoder_free(d);
}

/* Items stream even before kind/apiVersion (the API server's custom resource lists sort their
 * keys: apiVersion, items, kind, metadata); the list kind is known once the body ends. */
static void test_items_before_kind_stream_too(void)
{
    char b[1024];
    snprintf(b, sizeof b,
             "{\"items\":[%s,%s],\"metadata\":{\"resourceVersion\":\"7\"},\"apiVersion\":\"v1\","
             "\"kind\":\"ConfigMapList\"}",
             item[0], item[1]);
    size_t n = strlen(b);
    for (size_t cut = 0; cut <= n; cut++) {
        sink_t s = {0};
        lop_listdecoder_t *d = new_decoder(&s, 0);
        T_EQ_INT(lop_listdecoder_feed(d, b, cut, NULL), LOP_OK);
        T_EQ_INT(lop_listdecoder_feed(d, b + cut, n - cut, NULL), LOP_OK);
        T_EQ_INT(s.n, 2);
        T_EQ_STR(s.items[0], item[0]);
        T_EQ_STR(s.items[1], item[1]);
        T_EQ_STR(s.kinds[0], ""); /* not known yet when the item arrived */
        T_EQ_INT(lop_listdecoder_finish(d, NULL), LOP_OK);
        T_EQ_STR(lop_listdecoder_item_kind(d), "ConfigMap");
        T_EQ_STR(lop_listdecoder_resource_version(d), "7");
        lop_listdecoder_free(d);
    }
}

static void test_empty_null_and_absent_items(void)
{
    const char *cases[] = {
        "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"1\"},\"items\":[]}",
        "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"1\"},\"items\":null}",
        "{\"metadata\":{\"resourceVersion\":\"1\"},\"items\":null}",
        "{\"metadata\":{\"resourceVersion\":\"1\"}}",
        "{\"kind\":\"Widgets\",\"metadata\":{\"resourceVersion\":\"1\"},\"items\":[ ]}",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sink_t s = {0};
        lop_listdecoder_t *d = new_decoder(&s, 0);
        T_EQ_INT(lop_listdecoder_feed(d, cases[i], strlen(cases[i]), NULL), LOP_OK);
        T_EQ_INT(lop_listdecoder_finish(d, NULL), LOP_OK);
        T_EQ_INT(s.n, 0);
        T_EQ_STR(lop_listdecoder_resource_version(d), "1");
        T_EQ_STR(lop_listdecoder_continue(d), "");
        lop_listdecoder_free(d);
    }
}

static void test_a_kind_without_the_list_suffix_gives_no_item_kind(void)
{
    const char *b = "{\"kind\":\"Widgets\",\"apiVersion\":\"x/v1\",\"metadata\":{\"resourceVersion\":\"1\"},"
                    "\"items\":[{\"a\":1}]}";
    sink_t s = {0};
    lop_listdecoder_t *d = new_decoder(&s, 0);
    T_EQ_INT(lop_listdecoder_feed(d, b, strlen(b), NULL), LOP_OK);
    T_EQ_INT(lop_listdecoder_finish(d, NULL), LOP_OK);
    T_EQ_INT(s.n, 1);
    T_EQ_STR(s.kinds[0], "");
    T_EQ_STR(lop_listdecoder_api_version(d), "x/v1");
    lop_listdecoder_free(d);
}

/* Each malformed body fails (in feed or in finish) with an error naming the cause. */
static void test_malformed_bodies_fail_naming_the_cause(void)
{
    static const struct {
        const char *body, *needle;
    } cases[] = {
        {"", "empty"},
        {"[1,2]", "expected '{'"},
        {"{\"metadata\":{\"resourceVersion\":\"1\"},\"items\":[{\"a\":1}", "truncated"},
        {"{\"metadata\":{\"resourceVersion\":\"1\"},\"items\":[{\"a\":1},", "truncated"},
        {"{\"metadata\":{\"resourceVersion\":\"1\"}", "truncated"},
        {"{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"1\"},\"items\":[{\"a\":tru}]"
         "}",
         "malformed list item"},
        {"{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"1\"},\"items\":[1]}",
         "not an object"},
        {"{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"1\"},\"items\":[{\"a\":[1}]}",
         "mismatched bracket"},
        {"{\"metadata\":{\"resourceVersion\":\"1\"},\"items\":{}}", "not an array"},
        {"{\"metadata\":{\"resourceVersion\":\"1\"},\"items\":[] \"x\":1}", "expected ','"},
        {"{\"metadata\":{\"resourceVersion\":\"1\"},\"items\":[]} {}", "data after"},
        {"{\"metadata\":[],\"items\":[]}", "metadata is not an object"},
        {"{\"items\":[]}", "no metadata"},
        {"{\"metadata\":{},\"items\":[]}", "no metadata.resourceVersion"},
        {"{\"metadata\":{\"resourceVersion\":\"1\"},\"x\":01x}", "malformed member value"},
        {"{\"metadata\" {}}", "expected ':'"},
        {"{metadata:{}}", "expected a member name"},
        {"{\"metadata\":{\"resourceVersion\":\"1\",\"continue\":\"a\\kb\"},\"items\":[]}",
         "metadata.continue is not a valid JSON string"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sink_t s = {0};
        lop_listdecoder_t *d = new_decoder(&s, 0);
        lop_err_t err = {0};
        lop_rc_t rc = lop_listdecoder_feed(d, cases[i].body, strlen(cases[i].body), &err);
        if (rc == LOP_OK) rc = lop_listdecoder_finish(d, &err);
        T_EQ_INT(rc, LOP_EINVAL);
        if (!strstr(err.message, cases[i].needle))
            fprintf(stderr, "case %zu: \"%s\" does not name \"%s\"\n", i, err.message, cases[i].needle);
        T_CHECK(strstr(err.message, cases[i].needle) != NULL);
        /* a failed decoder stays failed */
        T_EQ_INT(lop_listdecoder_feed(d, "{", 1, NULL), LOP_EINVAL);
        lop_listdecoder_free(d);
    }
}

/* With validation left to the consumer, an item that is balanced but not valid JSON is delivered
 * as it is (the reflector's lop_obj_new then rejects it); structure is still checked. */
static void test_validation_can_be_left_to_the_consumer(void)
{
    const char *b = "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"1\"},"
                    "\"items\":[{\"a\":tru}]}";
    sink_t s = {0};
    lop_listdecoder_t *d = new_decoder(&s, 0);
    lop_listdecoder_set_validate(d, false);
    T_EQ_INT(lop_listdecoder_feed(d, b, strlen(b), NULL), LOP_OK);
    T_EQ_INT(lop_listdecoder_finish(d, NULL), LOP_OK);
    T_EQ_INT(s.n, 1);
    T_EQ_STR(s.items[0], "{\"a\":tru}");
    lop_listdecoder_reset(d); /* the setting survives a reset; brackets are still checked */
    const char *bad = "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"items\":[{\"a\":[1}]}";
    T_EQ_INT(lop_listdecoder_feed(d, bad, strlen(bad), NULL), LOP_EINVAL);
    lop_listdecoder_free(d);
}

/* With validation off, items are offered unchecked first: taken when whole in the chunk, else
 * tracked. Every split point gives the same items. An item is offered only when at least the
 * previous item's length is at hand (so that few offers are refused at a chunk's end). */
static void test_unchecked_items_at_every_split(void)
{
    const char *b = body();
    size_t n = strlen(b);
    for (size_t cut = 0; cut <= n; cut++) {
        sink_t s = {0};
        lop_listdecoder_t *d = new_decoder(&s, 0);
        lop_listdecoder_set_validate(d, false);
        T_EQ_INT(lop_listdecoder_feed(d, b, cut, NULL), LOP_OK);
        T_EQ_INT(lop_listdecoder_feed(d, b + cut, n - cut, NULL), LOP_OK);
        check_all(d, &s);
        lop_listdecoder_free(d);
    }
    sink_t s = {0};
    lop_listdecoder_t *d = new_decoder(&s, 0);
    lop_listdecoder_set_validate(d, false);
    T_EQ_INT(lop_listdecoder_feed(d, b, n, NULL), LOP_OK);
    check_all(d, &s);
    /* items 1 and 2 unchecked; fewer bytes than item 2's length follow it, so "{}" is tracked */
    T_EQ_INT(s.unchecked, 2);
    T_EQ_INT(s.refused, 0);
    lop_listdecoder_free(d);
}

/* max_item bounds each item, not the list: 1,000 items of ~40 bytes under a 64-byte limit. */
static int count_only(void *ud, const char *it, size_t len, size_t *end)
{
    (void)it;
    (void)len;
    if (end) return LOP_LIST_RETRY; /* take every item tracked */
    (*(int *)ud)++;
    return 0;
}

static void test_items_in_all_may_exceed_the_item_limit(void)
{
    lop_buf_t b = LOP_BUF_INIT;
    lop_buf_puts(&b, "{\"apiVersion\":\"x/v1\",\"items\":[");
    for (int i = 0; i < 1000; i++)
        lop_buf_printf(&b, "%s{\"kind\":\"W\",\"metadata\":{\"name\":\"w%d\"}}", i ? "," : "", i);
    lop_buf_puts(&b, "],\"kind\":\"WList\",\"metadata\":{\"resourceVersion\":\"9\"}}");
    int n = 0;
    lop_listdecoder_t *d = lop_listdecoder_new(64, count_only, &n);
    for (size_t at = 0; at < b.len; at += 100)
        T_EQ_INT(lop_listdecoder_feed(d, b.data + at, b.len - at < 100 ? b.len - at : 100, NULL), LOP_OK);
    T_EQ_INT(lop_listdecoder_finish(d, NULL), LOP_OK);
    T_EQ_INT(n, 1000);
    lop_listdecoder_free(d);
    lop_buf_free(&b);
}

static void test_oversized_item_is_an_error(void)
{
    char b[512];
    snprintf(b, sizeof b, "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"items\":[{\"a\":\"%0100d\"}]}", 0);
    sink_t s = {0};
    lop_listdecoder_t *d = new_decoder(&s, 64);
    lop_err_t err = {0};
    /* split so the item spans chunks: the limit counts the bytes kept from earlier chunks */
    T_EQ_INT(lop_listdecoder_feed(d, b, 60, &err), LOP_OK);
    T_EQ_INT(lop_listdecoder_feed(d, b + 60, strlen(b) - 60, &err), LOP_EINVAL);
    T_CHECK(strstr(err.message, "larger than the limit") != NULL);
    T_EQ_INT(s.n, 0);
    lop_listdecoder_free(d);
}

static void test_deep_nesting_is_an_error(void)
{
    sink_t s = {0};
    lop_listdecoder_t *d = new_decoder(&s, 0);
    const char *head = "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"items\":[{\"a\":";
    size_t hl = strlen(head);
    char *deep = malloc(hl + 10000);
    memcpy(deep, head, hl);
    memset(deep + hl, '[', 10000);
    lop_err_t err = {0};
    T_EQ_INT(lop_listdecoder_feed(d, deep, hl + 10000, &err), LOP_EINVAL);
    T_CHECK(strstr(err.message, "nesting too deep") != NULL);
    free(deep);
    lop_listdecoder_free(d);
}

static void test_callback_can_stop(void)
{
    const char *b = body();
    sink_t s = {.stop_after = 2};
    lop_listdecoder_t *d = new_decoder(&s, 0);
    T_EQ_INT(lop_listdecoder_feed(d, b, strlen(b), NULL), LOP_ECLOSED);
    T_EQ_INT(s.n, 2);
    lop_listdecoder_free(d);
}

int main(void)
{
    T_RUN(test_every_two_chunk_split);
    T_RUN(test_byte_by_byte_and_all_at_once);
    T_RUN(test_items_before_kind_stream_too);
    T_RUN(test_items_in_all_may_exceed_the_item_limit);
    T_RUN(test_empty_null_and_absent_items);
    T_RUN(test_a_kind_without_the_list_suffix_gives_no_item_kind);
    T_RUN(test_malformed_bodies_fail_naming_the_cause);
    T_RUN(test_validation_can_be_left_to_the_consumer);
    T_RUN(test_unchecked_items_at_every_split);
    T_RUN(test_oversized_item_is_an_error);
    T_RUN(test_deep_nesting_is_an_error);
    T_RUN(test_callback_can_stop);
    return T_DONE();
}
