/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for host/kube/watchdecoder: chunk boundaries mean nothing. */
#include "host/kube/cache/watchdecoder.h"
#include "host/codec/jsonscan.h"
#include "t.h"

#include <stdlib.h>
#include <string.h>

typedef struct sink {
    char docs[8][256];
    int n;
    int stop_after;         /* 0 = never */
    int unchecked, retried; /* documents handed over unchecked; of those, refused */
    int checked;            /* documents handed over checked (tracked) */
} sink_t;

/* As a consumer must: an unchecked document is refused unless it is one JSON value and
 * whitespace. */
static int collect(void *ud, const char *doc, size_t len, bool checked)
{
    sink_t *s = ud;
    s->checked += checked;
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
    for (int i = 0; i < 3 && i < s->n; i++) T_EQ_STR(s->docs[i], ev[i]);
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

/* Feed st[0..n) in three pieces cut at c1 <= c2, then end the stream; the documents as in
 * feed_in_two. */
static sink_t feed_in_three(const char *st, size_t n, size_t c1, size_t c2)
{
    sink_t s = {0};
    lop_watchdecoder_t *d = lop_watchdecoder_new(0, collect, &s);
    T_EQ_INT(lop_watchdecoder_feed(d, st, c1, NULL), LOP_OK);
    T_EQ_INT(lop_watchdecoder_feed(d, st + c1, c2 - c1, NULL), LOP_OK);
    T_EQ_INT(lop_watchdecoder_feed(d, st + c2, n - c2, NULL), LOP_OK);
    T_CHECK(!lop_watchdecoder_partial(d));
    T_EQ_INT(lop_watchdecoder_finish(d, NULL), LOP_OK);
    T_CHECK(!lop_watchdecoder_partial(d));
    lop_watchdecoder_free(d);
    return s;
}

/* Feed the chunks (NULL-terminated), then end the stream: the first result other than LOP_OK,
 * err set from it. */
static lop_rc_t feed_to_end(lop_watchdecoder_t *d, const char *const *chunks, lop_err_t *err)
{
    lop_err_clear(err);
    for (size_t i = 0; chunks[i]; i++) {
        lop_rc_t rc = lop_watchdecoder_feed(d, chunks[i], strlen(chunks[i]), err);
        if (rc != LOP_OK) return rc;
    }
    return lop_watchdecoder_finish(d, err);
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
    for (size_t i = 0; st[i]; i++) T_EQ_INT(lop_watchdecoder_feed(d, st + i, 1, NULL), LOP_OK);
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

/* A broken document may be held for its newline (it has no '}' that could end it): its error
 * then comes at the newline or at the stream's end, naming the same offset. */
static void test_garbage_is_an_error_naming_the_offset(void)
{
    static const struct {
        const char *in, *want;
    } bad[] = {
        {"hello", "expected '{' to start a document at byte 0"},
        {"{\"a\":1]", "mismatched bracket at byte 6"},
        {"{} x", "expected '{' to start a document at byte 3"},
        {"]", "expected '{' to start a document at byte 0"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sink_t s = {0};
        lop_watchdecoder_t *d = lop_watchdecoder_new(0, collect, &s);
        lop_err_t err;
        T_EQ_INT(feed_to_end(d, (const char *[]){bad[i].in, NULL}, &err), LOP_EINVAL);
        T_CHECK(strstr(err.message, bad[i].want) != NULL);
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
    deep[10005] = '\0';
    lop_err_t err;
    T_EQ_INT(feed_to_end(d, (const char *[]){deep, NULL}, &err), LOP_EINVAL); /* held: no '}' */
    T_CHECK(strstr(err.message, "nesting too deep at byte 10004") != NULL);
    lop_watchdecoder_reset(d);
    T_EQ_INT(feed_to_end(d, (const char *[]){"{}\n", deep, "\n", NULL}, &err), LOP_EINVAL); /* at its newline */
    T_CHECK(strstr(err.message, "nesting too deep at byte 10007") != NULL);
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
        for (int i = 0; i < 4 && i < s.n; i++) T_EQ_STR(s.docs[i], want[i]);
    }
    sink_t s = {0};
    lop_watchdecoder_t *d = lop_watchdecoder_new(0, collect, &s);
    T_EQ_INT(lop_watchdecoder_feed(d, st, n, NULL), LOP_OK);
    T_EQ_INT(s.retried, 2); /* the shared line and the event with newlines inside */
    lop_watchdecoder_free(d);
}

/* An event cut across two or three chunks is held, untracked, and handed over unchecked at its
 * newline: the consumer's parse is its only pass. It is tracked only when a cut falls right
 * after a '}' (it might have ended there). */
static void test_cut_event_goes_untracked(void)
{
    char st[256];
    snprintf(st, sizeof st, "%s\n", ev[0]);
    size_t n = strlen(st);
    int held = 0;
    for (size_t c1 = 0; c1 <= n; c1++)
        for (size_t c2 = c1; c2 <= n; c2++) {
            sink_t s = feed_in_three(st, n, c1, c2);
            T_EQ_INT(s.n, 1);
            T_EQ_STR(s.docs[0], ev[0]);
            bool after_brace = (c1 && st[c1 - 1] == '}') || (c2 && st[c2 - 1] == '}');
            T_EQ_INT(s.checked, after_brace ? 1 : 0);
            T_EQ_INT(s.unchecked, after_brace ? 0 : 1);
            T_EQ_INT(s.retried, 0);
            held += !after_brace && c1 > 0 && c2 < n;
        }
    T_CHECK(held > 0);
    /* Pod-sized events (~9.7 KB, managedFields-like "{}"s) in 16 KiB pieces (any read size cuts them
     * somewhere): tracked only where a piece ends right after a '}' */
    size_t big = 60000;
    char *pods = malloc(big + 64);
    size_t at = 0;
    int nev = 0, tracked = 0;
    while (at + 9800 < big) {
        at += (size_t)sprintf(pods + at, "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"p%d\"}", nev++);
        for (int k = 0; k < 800; k++) at += (size_t)sprintf(pods + at, ",\"f:%03d\":{}", k);
        at += (size_t)sprintf(pods + at, "}}\n");
    }
    for (size_t off = 16384; off < at; off += 16384) tracked += pods[off - 1] == '}';
    sink_t s = {0};
    lop_watchdecoder_t *d = lop_watchdecoder_new(0, collect, &s);
    for (size_t off = 0; off < at; off += 16384)
        T_EQ_INT(lop_watchdecoder_feed(d, pods + off, at - off < 16384 ? at - off : 16384, NULL), LOP_OK);
    T_EQ_INT(s.n, nev);
    T_EQ_INT(s.checked, tracked);
    T_EQ_INT(s.unchecked, nev - tracked);
    T_EQ_INT(s.retried, 0);
    T_CHECK(nev - tracked >= 4);
    T_CHECK(!lop_watchdecoder_partial(d));
    lop_watchdecoder_free(d);
    free(pods);
}

/* A held event whose line turns out not to be one object (two events on it, a newline inside,
 * garbage) is tracked from its '{' over the held bytes: every document is still delivered
 * exactly once, whatever the three pieces. */
static void test_held_line_that_is_not_one_event_falls_back(void)
{
    static const char st[] = "{\"a\":1}{\"b\":\"x\\ny\"}\n{\"c\":\n [1,\n2]\n}\n  {\"d\":{}}";
    static const char *want[] = {"{\"a\":1}", "{\"b\":\"x\\ny\"}", "{\"c\":\n [1,\n2]\n}", "{\"d\":{}}"};
    size_t n = strlen(st);
    for (size_t c1 = 0; c1 <= n; c1++)
        for (size_t c2 = c1; c2 <= n; c2++) {
            sink_t s = feed_in_three(st, n, c1, c2);
            T_EQ_INT(s.n, 4);
            for (int i = 0; i < 4 && i < s.n; i++) T_EQ_STR(s.docs[i], want[i]);
        }
    /* the paths, one by one */
    static const struct {
        const char *chunks[4];
        int n, unchecked, retried;
        const char *first, *last;
    } cases[] = {
        /* held, then its line holds two events: refused, tracked; the second is cut unchecked */
        {{"{\"a\":1", "}{\"b\":2}\n", NULL}, 2, 2, 1, "{\"a\":1}", "{\"b\":2}"},
        /* held, then a raw newline inside it */
        {{"{\"a\":", "\n1}\n", NULL}, 1, 1, 1, "{\"a\":\n1}", "{\"a\":\n1}"},
        /* held over two chunks, then the line is a whole event ("\r\n" trimmed) */
        {{"{\"a\":\"", "xyz", "\"}\r\n", NULL}, 1, 1, 0, "{\"a\":\"xyz\"}", "{\"a\":\"xyz\"}"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sink_t s = {0};
        lop_watchdecoder_t *d = lop_watchdecoder_new(0, collect, &s);
        lop_err_t err;
        T_EQ_INT(lop_watchdecoder_feed(d, cases[i].chunks[0], strlen(cases[i].chunks[0]), NULL), LOP_OK);
        T_CHECK(lop_watchdecoder_partial(d)); /* held */
        T_EQ_INT(s.n, 0);
        T_EQ_INT(feed_to_end(d, cases[i].chunks + 1, &err), LOP_OK);
        T_CHECK(!lop_watchdecoder_partial(d));
        T_EQ_INT(s.n, cases[i].n);
        T_EQ_INT(s.unchecked, cases[i].unchecked);
        T_EQ_INT(s.retried, cases[i].retried);
        T_EQ_STR(s.docs[0], cases[i].first);
        T_EQ_STR(s.docs[s.n - 1], cases[i].last);
        lop_watchdecoder_free(d);
    }
}

/* A document that may be complete is not held for its newline: a server that leaves out the
 * last newline before a pause, or puts the next event on the same line, is read at once. */
static void test_complete_event_is_not_held_for_its_newline(void)
{
    static const struct {
        const char *chunks[4];
        int n; /* delivered by the end of the chunks, before any newline */
        bool partial;
    } cases[] = {
        {{"{\"a\":{}}", NULL}, 1, false},
        {{"{\"a\":", "{}}", NULL}, 1, false},
        {{"{\"a\":", "1", "} \t\r", NULL}, 1, false},
        {{"{\"a\":1} {\"b\":", NULL}, 1, true},
        {{"{\"a\":", "1}{\"b\":", NULL}, 1, true},
        {{"{\"a\":\"}\"", ",\"b\":\"{x}\\n\"", NULL}, 0, true}, /* '}' in strings: still held */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sink_t s = {0};
        lop_watchdecoder_t *d = lop_watchdecoder_new(0, collect, &s);
        for (size_t k = 0; cases[i].chunks[k]; k++)
            T_EQ_INT(lop_watchdecoder_feed(d, cases[i].chunks[k], strlen(cases[i].chunks[k]), NULL), LOP_OK);
        T_EQ_INT(s.n, cases[i].n);
        T_EQ_INT(s.unchecked, 0);
        T_EQ_INT(lop_watchdecoder_partial(d), cases[i].partial);
        lop_watchdecoder_free(d);
    }
}

/* Only a broken stream holds a complete document: its end delivers it and finds the error. */
static void test_finish_decodes_a_held_document(void)
{
    sink_t s = {0};
    lop_watchdecoder_t *d = lop_watchdecoder_new(0, collect, &s);
    lop_err_t err;
    T_EQ_INT(feed_to_end(d, (const char *[]){"{\"a\":", "1}\"x", NULL}, &err), LOP_EINVAL);
    T_EQ_INT(s.n, 1);
    T_EQ_STR(s.docs[0], "{\"a\":1}");
    T_CHECK(strstr(err.message, "expected '{' to start a document at byte 7") != NULL);
    /* a truncated one stays partial; nothing held: nothing to do */
    lop_watchdecoder_reset(d);
    T_EQ_INT(feed_to_end(d, (const char *[]){"{\"a\":[1,", "2", NULL}, &err), LOP_OK);
    T_CHECK(lop_watchdecoder_partial(d));
    lop_watchdecoder_reset(d);
    T_EQ_INT(lop_watchdecoder_finish(d, &err), LOP_OK);
    T_CHECK(!lop_watchdecoder_partial(d));
    lop_watchdecoder_free(d);
}

/* A stream that never sends a newline fails at max_doc, as when every byte was tracked: at the
 * end of the chunk that passes it. */
static void test_held_document_without_newline_fails_at_max_doc(void)
{
    sink_t s = {0};
    lop_watchdecoder_t *d = lop_watchdecoder_new(64, collect, &s);
    lop_err_t err;
    lop_err_clear(&err);
    T_EQ_INT(lop_watchdecoder_feed(d, "{\"a\":\"", 6, &err), LOP_OK);
    for (int k = 1; k <= 5; k++) {
        T_EQ_INT(lop_watchdecoder_feed(d, "xxxxxxxxxx", 10, &err), LOP_OK);
        T_CHECK(lop_watchdecoder_partial(d));
    }
    T_EQ_INT(lop_watchdecoder_feed(d, "xxxxxxxxxx", 10, &err), LOP_EINVAL); /* 66 bytes */
    T_CHECK(strstr(err.message, "document larger than the limit at byte 66") != NULL);
    T_EQ_INT(s.n, 0);
    /* exactly the limit, then its newline: delivered */
    lop_watchdecoder_reset(d);
    char doc[65];
    memset(doc, 'x', sizeof doc);
    memcpy(doc, "{\"a\":\"", 6);
    memcpy(doc + 62, "\"}\n", 3);
    T_EQ_INT(lop_watchdecoder_feed(d, doc, 30, &err), LOP_OK);
    T_EQ_INT(lop_watchdecoder_feed(d, doc + 30, 35, &err), LOP_OK);
    T_EQ_INT(s.n, 1);
    T_EQ_INT(s.unchecked, 1);
    lop_watchdecoder_free(d);
}

/* Errors found when a held document is tracked after all name its bytes' stream offsets. */
static void test_errors_after_a_fallback_name_the_stream_offset(void)
{
    static const struct {
        const char *chunks[4];
        const char *want;
    } cases[] = {
        {{"{\"ok\":1}\n{\"a\":]", "1}\n", NULL}, "mismatched bracket at byte 14"}, /* in the held bytes */
        {{"{\"ok\":1}\n{\"a\":[", "1}\n", NULL}, "mismatched bracket at byte 16"}, /* in the chunk after */
        {{"{\"ok\":1}\n{\"a\":", "[", "}\n", NULL}, "mismatched bracket at byte 15"},
        {{"{\"ok\":1}\n  {\"a\":", "1}", "x", NULL}, "expected '{' to start a document at byte 18"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sink_t s = {0};
        lop_watchdecoder_t *d = lop_watchdecoder_new(0, collect, &s);
        lop_err_t err;
        T_EQ_INT(feed_to_end(d, cases[i].chunks, &err), LOP_EINVAL);
        if (!strstr(err.message, cases[i].want)) fprintf(stderr, "case %zu: %s\n", i, err.message);
        T_CHECK(strstr(err.message, cases[i].want) != NULL);
        T_CHECK(s.n >= 1);
        T_EQ_STR(s.docs[0], "{\"ok\":1}");
        lop_watchdecoder_free(d);
    }
}

/* The callback stops a held line and a held document being tracked after all. */
static void test_callback_can_stop_a_held_document(void)
{
    static const char *const a[] = {"{\"a\":", "1}\n{\"b\":2}\n", NULL};
    static const char *const b[] = {"{\"a\":", "1}{\"b\":2}\n{\"c\":3}\n", NULL};
    const char *const *streams[] = {a, b};
    for (size_t i = 0; i < 2; i++) {
        sink_t s = {.stop_after = 1};
        lop_watchdecoder_t *d = lop_watchdecoder_new(0, collect, &s);
        T_EQ_INT(lop_watchdecoder_feed(d, streams[i][0], strlen(streams[i][0]), NULL), LOP_OK);
        T_EQ_INT(lop_watchdecoder_feed(d, streams[i][1], strlen(streams[i][1]), NULL), LOP_ECLOSED);
        T_EQ_INT(s.n, 1);
        T_EQ_STR(s.docs[0], "{\"a\":1}");
        T_CHECK(!lop_watchdecoder_partial(d));
        lop_watchdecoder_free(d);
    }
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
    T_RUN(test_cut_event_goes_untracked);
    T_RUN(test_held_line_that_is_not_one_event_falls_back);
    T_RUN(test_complete_event_is_not_held_for_its_newline);
    T_RUN(test_finish_decodes_a_held_document);
    T_RUN(test_held_document_without_newline_fails_at_max_doc);
    T_RUN(test_errors_after_a_fallback_name_the_stream_offset);
    T_RUN(test_callback_can_stop_a_held_document);
    return T_DONE();
}
