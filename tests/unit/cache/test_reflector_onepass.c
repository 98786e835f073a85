/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The reflector's one-pass watch events (on_event validates and builds in one walk; an event
 * cut at its newline is handed over unchecked, refused and tracked when it is not one object):
 * every stream below gives the same store, handler calls, RV and watch outcome whether it
 * arrives in one chunk (unchecked path), byte by byte (tracked from the first '}' on) or in
 * pieces of 7 bytes (held for the newline unless a piece ends after a '}'), and the one
 * expected. Covers "object" before "type", repeated
 * members, ERROR events (the object is a Status, never built as an entry), BOOKMARKs, events
 * sharing a line or carrying newlines, malformed bytes around a valid object, and a watch-list's
 * initial events on a relist (wl_reuse: unchanged entries shared).
 */
#include "host/kube/cache/reflector.h"
#include "handler_log.h"
#include "t.h"

#include <stdlib.h>
#include <string.h>

#define S LOP_NS_PER_S

typedef struct fake {
    const char *list_body;
    const char *streams[2];
    size_t piece; /* 0 = the whole stream in one chunk */
    int wi;
} fake_t;

static lop_rc_t fake_list(void *ud, const lop_list_opts_t *o, lop_buf_t *body, lop_err_t *err)
{
    fake_t *f = ud;
    if (!f->list_body) return lop_err_set(err, LOP_EAGAIN, 0, NULL, "no list scripted");
    lop_buf_puts(body, f->list_body);
    return LOP_OK;
}

static lop_rc_t fake_watch(void *ud, const lop_watch_opts_t *o, lop_stream_fn fn, void *fn_ud, lop_err_t *err)
{
    fake_t *f = ud;
    const char *st = f->wi < 2 ? f->streams[f->wi] : NULL;
    f->wi++;
    if (!st) return lop_err_set(err, LOP_EAGAIN, 0, NULL, "script exhausted");
    size_t n = strlen(st);
    for (size_t at = 0; at < n;) {
        size_t k = f->piece && f->piece < n - at ? f->piece : n - at;
        char *c = malloc(k); /* exact size: ASan sees a read past the chunk */
        memcpy(c, st + at, k);
        int stop = fn(fn_ud, c, k);
        free(c);
        if (stop) return LOP_ECLOSED;
        at += k;
    }
    return LOP_OK;
}

static void fake_cancel(void *ud) {}

/* Run list (unless watch-list) + the scripted watches; the outcome as one string. */
static void run(const char *list_body, const char *s0, const char *s1, bool watch_list, size_t piece, char *out,
                size_t outlen)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    fake_t f = {list_body, {s0, s1}, piece, 0};
    lop_store_t *store = lop_store_new();
    log_t log = {{0}};
    lop_listwatch_t lw = {.ud = &f, .list = fake_list, .watch = fake_watch, .cancel = fake_cancel};
    lop_reflector_config_t cfg = {
        .name = "v1/configmaps",
        .lw = &lw,
        .store = store,
        .clock = &fc.base,
        .handlers = {h_add, h_update, h_delete, &log},
        .seed = 42,
        .watch_list = watch_list,
    };
    lop_reflector_t *r = lop_reflector_new(&cfg, NULL);
    int64_t w = 0;
    for (int k = 0; k < 3 && f.wi < 2; k++) T_EQ_INT(lop_reflector_step(r, &w), LOP_OK);
    char rv[64];
    lop_reflector_last_rv(r, rv, sizeof rv);
    lop_reflector_stats_t rs;
    lop_reflector_stats(r, &rs);
    lop_store_stats_t ss;
    lop_store_stats(store, &ss);
    snprintf(
        out, outlen,
        "%.2047s|rv=%s events=%llu bookmarks=%llu lists=%llu watch_lists=%llu relists_410=%llu count=%zu wait>0=%d",
        log.s, rv, (unsigned long long)rs.events, (unsigned long long)rs.bookmarks, (unsigned long long)rs.lists,
        (unsigned long long)rs.watch_lists, (unsigned long long)rs.relists_410, (size_t)ss.count, w > 0);
    lop_reflector_free(r);
    lop_store_free(store);
}

#define CM(name, rv) "{\"metadata\":{\"namespace\":\"d\",\"name\":\"" name "\",\"resourceVersion\":\"" rv "\"}}"
#define LIST(rv, items)                                                                         \
    "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"" rv \
    "\"},\"items\":[" items "]}"
#define BM(rv, ann) \
    "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"" rv "\"" ann "}}"
#define END_ANN ",\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}"
#define STATUS(code)                                                                                    \
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"code\":" #code \
    ",\"reason\":\"Expired\",\"message\":\"too old\"}"

/* Same outcome for every chunking, and the one expected. */
static void check(const char *list_body, const char *s0, const char *s1, bool wl, const char *want)
{
    char whole[4096], bytes[4096], sevens[4096];
    run(list_body, s0, s1, wl, 0, whole, sizeof whole);
    run(list_body, s0, s1, wl, 1, bytes, sizeof bytes);
    run(list_body, s0, s1, wl, 7, sevens, sizeof sevens);
    T_EQ_STR(whole, bytes);
    T_EQ_STR(sevens, bytes);
    T_EQ_STR(whole, want);
}

static void test_member_order_and_repeats(void)
{
    check(
        LIST("10", ""),
        /* object before type; object twice (the last wins); type twice (the last wins) */
        "{\"object\":" CM(
            "a",
            "11") ",\"type\":\"ADDED\"}\n"
                  "{\"type\":\"ADDED\",\"object\":" CM("x", "12") ",\"object\":" CM(
                      "b",
                      "12") "}\r\n"
                            "{\"type\":\"DELETED\",\"object\":" CM(
                                "a",
                                "13") ",\"type\":\"MODIFIED\"}\n"
                                      /* two on one line, one with newlines inside, one with a Status-like object under ADDED */
                                      "{\"type\":\"ADDED\",\"object\":" CM(
                                          "c", "14") "} {\"type\":\"ADDED\",\n\"object\":\n" CM("e",
                                                                                                "15") "}\n"
                                                                                                      "{\"type\":"
                                                                                                      "\"BOOKMARK\","
                                                                                                      "\"object\":" BM(
                                                                                                          "16",
                                                                                                          "") "}\n",
        NULL, false,
        "add:a@11;add:b@12;upd:a@13;add:c@14;add:e@15;|rv=16 events=5 bookmarks=1 lists=1 watch_lists=0 "
        "relists_410=0 count=4 wait>0=1");
}

static void test_error_events(void)
{
    /* an ERROR's object is a Status (no name): never built as an entry, whatever the order */
    /* (a 410 relists: the list is empty, so a is tombstoned) */
    check(LIST("10", ""),
          "{\"type\":\"ADDED\",\"object\":" CM("a", "11") "}\n{\"object\":" STATUS(410) ",\"type\":\"ERROR\"}\n", NULL,
          false, "add:a@11;tomb:a@11;|rv=10 events=1 bookmarks=0 lists=2 watch_lists=0 relists_410=1 count=0 wait>0=0");
    check(LIST("10", ""), "{\"type\":\"ERROR\",\"object\":" STATUS(410) "}\n", NULL, false,
          "|rv=10 events=0 bookmarks=0 lists=2 watch_lists=0 relists_410=1 count=0 wait>0=0");
    /* a type changed to ERROR after the object was built as an entry */
    check(LIST("10", ""), "{\"type\":\"ADDED\",\"object\":" STATUS(410) ",\"type\":\"ERROR\"}\n", NULL, false,
          "|rv=10 events=0 bookmarks=0 lists=2 watch_lists=0 relists_410=1 count=0 wait>0=0");
}

static void test_malformed_events_stop_the_watch_alike(void)
{
    static const char *const bad[] = {
        "{\"type\":\"ADDED\",\"object\":" CM("b", "12") "} x\n",         /* trailing garbage */
        "{\"type\":\"ADDED\",\"object\":" CM("b", "12") ",\"z\":tru}\n", /* a bad literal elsewhere */
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":1}}}\n", /* a bad field */
        "{\"type\":\"ADDED\",\"object\":" CM("b", "12") "]\n",           /* mismatched */
        "{\"type\":\"AD\\u0044ED\",\"object\":" CM("b", "12") "}\n",     /* an escaped type */
        "{\"type\":\"ADDED\",\"object\":\"" CM("b", "12") "\"}\n",       /* not an object */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char st[512], want[512];
        snprintf(
            st, sizeof st,
            "{\"type\":\"ADDED\",\"object\":" CM("a", "11") "}\n%s{\"type\":\"ADDED\",\"object\":" CM("c", "13") "}\n",
            bad[i]);
        char whole[4096], bytes[4096];
        run(LIST("10", ""), st, NULL, false, 0, whole, sizeof whole);
        run(LIST("10", ""), st, NULL, false, 1, bytes, sizeof bytes);
        T_EQ_STR(whole, bytes);
        /* the good events before are applied, nothing after; the watch backs off (trailing
         * garbage fails the stream after its event) */
        snprintf(want, sizeof want,
                 "add:a@11;%s|rv=%s events=%d bookmarks=0 lists=1 watch_lists=0 relists_410=0 count=%d wait>0=1",
                 i == 0 ? "add:b@12;" : "", i == 0 ? "12" : "11", i == 0 ? 2 : 1, i == 0 ? 2 : 1);
        T_EQ_STR(whole, want);
    }
}

/* A stream that ends right after an event followed by garbage on its line, with no newline: the
 * decoder holds that event for its newline in one chunk (a '"' may follow a '}' in a string) and
 * decodes it at the stream's end; tracked byte by byte it is applied at its '}'. Either way the
 * event is applied and the garbage fails the watch. */
static void test_event_held_at_the_end_of_a_broken_stream(void)
{
    check(LIST("10", ""),
          "{\"type\":\"ADDED\",\"object\":" CM("a", "11") "}\n{\"type\":\"ADDED\",\"object\":" CM("b", "12") "}\"x",
          NULL, false,
          "add:a@11;add:b@12;|rv=12 events=2 bookmarks=0 lists=1 watch_lists=0 relists_410=0 count=2 wait>0=1");
}

static void test_watch_list_initial_events_and_relist(void)
{
    /* first sync by watch-list; then a 410 and a second watch-list over a full store (wl_reuse):
     * unchanged entries are shared, changed ones built, missing ones tombstoned */
    check(NULL,
          "{\"type\":\"ADDED\",\"object\":" CM("a", "5") "}\n{\"object\":" CM(
              "b", "6") ",\"type\":\"ADDED\"}\n"
                        "{\"type\":\"ADDED\",\"object\":" CM("c", "7") "}\n{\"type\":\"BOOKMARK\",\"object\":" BM(
                            "10", END_ANN) "}\n"
                                           "{\"type\":\"ERROR\",\"object\":" STATUS(410) "}\n",
          "{\"type\":\"ADDED\",\"object\":" CM("a", "5") "}\n{\"object\":" CM(
              "b", "12") ",\"type\":\"ADDED\"}\n"
                         "{\"type\":\"BOOKMARK\",\"object\":" BM("20", END_ANN) "}\n",
          true,
          "add:a@5;add:b@6;add:c@7;upd:a@5;upd:b@12;tomb:c@7;|rv=20 events=5 bookmarks=2 lists=0 watch_lists=2 "
          "relists_410=1 count=2 wait>0=0");
}

int main(void)
{
    T_RUN(test_member_order_and_repeats);
    T_RUN(test_error_events);
    T_RUN(test_malformed_events_stop_the_watch_alike);
    T_RUN(test_event_held_at_the_end_of_a_broken_stream);
    T_RUN(test_watch_list_initial_events_and_relist);
    return T_DONE();
}
