/* Unit tests for host/kube/watchdecoder: chunk boundaries mean nothing (reference F.5). */
#include "host/kube/watchdecoder.h"
#include "host/kube/jsonscan.h"
#include "t.h"

#include <stdlib.h>
#include <string.h>

typedef struct sink {
    char docs[8][256];
    int n;
    int stop_after; /* 0 = never */
    int unchecked, retried; /* documents handed over unchecked; of those, refused */
} sink_t;

/* As a consumer must: an unchecked document is refused unless it is one JSON value and
 * whitespace. */
static int collect(void *ud, const char *doc, size_t len, bool checked)
{
    sink_t *s = ud;
    if (!checked) {
        s->unchecked++;
        size_t vs, ve;
        if (lop_jscan_value(doc, len, 0, &vs, &ve) != 0 || lop_jscan_ws(doc, len, ve) != len) {
            s->retried++;
            return LOP_DOC_RETRY;
        }
    }
    if (s->n < 8 && len < sizeof s->docs[0]) {
        memcpy(s->docs[s->n], doc, len);
        s->docs[s->n][len] = '\0';
    }
    s->n++;
    return s->stop_after && s->n >= s->stop_after;
}

static const char *ev[] = {
    "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a{b}\"},\"x\":[1,{\"y\":\"\\\"}\"}]}}",
    "{\"type\":\"MODIFIED\",\"object\":{\"s\":\"\\\\\",\"t\":\"]\"}}",
    "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"7\"}}}",
};

static char *stream(void)
{
    static char s[1024];
    snprintf(s, sizeof s, "%s\n%s\r\n  %s\n", ev[0], ev[1], ev[2]);
    return s;
}

static void check_three(sink_t *s)
{
    T_EQ_INT(s->n, 3);
    for (int i = 0; i < 3 && i < s->n; i++)
        T_EQ_STR(s->docs[i], ev[i]);
}

/* Feed st[0..n) in two pieces cut at cut; every byte consumed, no document left partial. */
static sink_t feed_in_two(const char *st, size_t n, size_t cut)
{
    sink_t s = {0};
    lop_watchdecoder_t *d = lop_watchdecoder_new(0, collect, &s);
    T_EQ_INT(lop_watchdecoder_feed(d, st, cut, NULL), LOP_OK);
    T_EQ_INT(lop_watchdecoder_feed(d, st + cut, n - cut, NULL), LOP_OK);
    T_CHECK(!lop_watchdecoder_partial(d));
    lop_watchdecoder_free(d);
    return s;
}

static void test_every_two_chunk_split(void)
{
    const char *st = stream();
    size_t n = strlen(st);
    for (size_t cut = 0; cut <= n; cut++) {
        sink_t s = feed_in_two(st, n, cut);
        check_three(&s);
    }
}

static void test_byte_by_byte_and_all_at_once(void)
{
    const char *st = stream();
    sink_t s = {0};
    lop_watchdecoder_t *d = lop_watchdecoder_new(0, collect, &s);
    for (size_t i = 0; st[i]; i++)
        T_EQ_INT(lop_watchdecoder_feed(d, st + i, 1, NULL), LOP_OK);
    check_three(&s);
    memset(&s, 0, sizeof s);
    T_EQ_INT(lop_watchdecoder_feed(d, st, strlen(st), NULL), LOP_OK);
    check_three(&s);
    lop_watchdecoder_free(d);
}

static void test_partial_document_is_reported(void)
{
    sink_t s = {0};
    lop_watchdecoder_t *d = lop_watchdecoder_new(0, collect, &s);
    T_EQ_INT(lop_watchdecoder_feed(d, ev[0], 10, NULL), LOP_OK);
    T_CHECK(lop_watchdecoder_partial(d));
    T_EQ_INT(s.n, 0);
    lop_watchdecoder_reset(d);
    T_CHECK(!lop_watchdecoder_partial(d));
    T_EQ_INT(lop_watchdecoder_feed(d, ev[1], strlen(ev[1]), NULL), LOP_OK);
    T_EQ_INT(s.n, 1);
    T_EQ_STR(s.docs[0], ev[1]);
    lop_watchdecoder_free(d);
}

static void test_garbage_is_an_error_naming_the_offset(void)
{
    static const char *bad[] = {"hello", "{\"a\":1]", "{} x", "]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sink_t s = {0};
        lop_watchdecoder_t *d = lop_watchdecoder_new(0, collect, &s);
        lop_err_t err;
        lop_err_clear(&err);
        T_EQ_INT(lop_watchdecoder_feed(d, bad[i], strlen(bad[i]), &err), LOP_EINVAL);
        T_CHECK(strstr(err.message, "at byte") != NULL);
        T_EQ_INT(lop_watchdecoder_feed(d, "{}", 2, NULL), LOP_EINVAL); /* stays failed */
        lop_watchdecoder_reset(d);
        T_EQ_INT(lop_watchdecoder_feed(d, "{}", 2, NULL), LOP_OK);
        lop_watchdecoder_free(d);
    }
}

static void test_oversized_document_is_an_error(void)
{
    sink_t s = {0};
    lop_watchdecoder_t *d = lop_watchdecoder_new(16, collect, &s);
    T_EQ_INT(lop_watchdecoder_feed(d, "{\"a\":\"0123", 10, NULL), LOP_OK);
    lop_err_t err;
    T_EQ_INT(lop_watchdecoder_feed(d, "456789abcdef\"}", 14, &err), LOP_EINVAL);
    T_CHECK(strstr(err.message, "larger") != NULL);
    T_EQ_INT(s.n, 0);
    lop_watchdecoder_reset(d);
    T_EQ_INT(lop_watchdecoder_feed(d, "{\"a\":1}", 7, NULL), LOP_OK);
    T_EQ_INT(s.n, 1);
    lop_watchdecoder_free(d);
}

static void test_deep_nesting_is_an_error(void)
{
    sink_t s = {0};
    lop_watchdecoder_t *d = lop_watchdecoder_new(0, collect, &s);
    char *deep = malloc(10100);
    deep[0] = '{';
    deep[1] = '"';
    deep[2] = 'a';
    deep[3] = '"';
    deep[4] = ':';
    memset(deep + 5, '[', 10000);
    T_EQ_INT(lop_watchdecoder_feed(d, deep, 10005, NULL), LOP_EINVAL);
    free(deep);
    lop_watchdecoder_free(d);
}

static void test_callback_can_stop(void)
{
    const char *st = stream();
    sink_t s = {.stop_after = 2};
    lop_watchdecoder_t *d = lop_watchdecoder_new(0, collect, &s);
    T_EQ_INT(lop_watchdecoder_feed(d, st, strlen(st), NULL), LOP_ECLOSED);
    T_EQ_INT(s.n, 2);
    lop_watchdecoder_free(d);
}

/* The common case (one event per line, whole in the chunk) is handed over unchecked, so the
 * consumer's parse is the only pass over it. */
static void test_one_event_per_line_skips_tracking(void)
{
    const char *st = stream();
    sink_t s = {0};
    lop_watchdecoder_t *d = lop_watchdecoder_new(0, collect, &s);
    T_EQ_INT(lop_watchdecoder_feed(d, st, strlen(st), NULL), LOP_OK);
    check_three(&s);
    T_EQ_INT(s.unchecked, 3);
    T_EQ_INT(s.retried, 0);
    lop_watchdecoder_free(d);
}

/* Events sharing a line, with newlines inside, or without a final newline: refused cuts are
 * tracked, and nothing waits for a newline. Every split point gives the same documents. */
static void test_lines_that_are_not_one_event(void)
{
    static const char st[] = "{\"a\":1}{\"b\":\"x\\ny\"}\n{\"c\":\n [1,\n2]\n}\n  {\"d\":{}}";
    static const char *want[] = {"{\"a\":1}", "{\"b\":\"x\\ny\"}", "{\"c\":\n [1,\n2]\n}", "{\"d\":{}}"};
    size_t n = strlen(st);
    for (size_t cut = 0; cut <= n; cut++) {
        sink_t s = feed_in_two(st, n, cut);
        T_EQ_INT(s.n, 4);
        for (int i = 0; i < 4 && i < s.n; i++)
            T_EQ_STR(s.docs[i], want[i]);
    }
    sink_t s = {0};
    lop_watchdecoder_t *d = lop_watchdecoder_new(0, collect, &s);
    T_EQ_INT(lop_watchdecoder_feed(d, st, n, NULL), LOP_OK);
    T_EQ_INT(s.retried, 2); /* the shared line and the event with newlines inside */
    lop_watchdecoder_free(d);
}

int main(void)
{
    T_RUN(test_one_event_per_line_skips_tracking);
    T_RUN(test_lines_that_are_not_one_event);
    T_RUN(test_every_two_chunk_split);
    T_RUN(test_byte_by_byte_and_all_at_once);
    T_RUN(test_partial_document_is_reported);
    T_RUN(test_garbage_is_an_error_naming_the_offset);
    T_RUN(test_oversized_document_is_an_error);
    T_RUN(test_deep_nesting_is_an_error);
    T_RUN(test_callback_can_stop);
    return T_DONE();
}
