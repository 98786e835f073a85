/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for host/kube/informer: handler fan-out order, replay to late handlers, removal,
 * relist tombstones reaching every handler, a 10,000-event stream cut at random points, and
 * the threaded start/stop. */
#include "host/kube/cache/informer.h"
#include "t.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define S LOP_NS_PER_S

typedef struct fake {
    lop_fake_clock_t *fc;
    const char *const *lists; /* bodies; NULL entry = 410 */
    int nlists, li;
    /* watches: each is one byte string streamed in pieces of varying size; NULL = stall */
    const char *const *watches;
    int nwatches, wi;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int cancels;
} fake_t;

static lop_rc_t fake_list(void *ud, const lop_list_opts_t *o, lop_buf_t *body, lop_err_t *err)
{
    fake_t *f = ud;
    if (f->li >= f->nlists) return lop_err_set(err, LOP_EAGAIN, 0, NULL, "script exhausted");
    const char *b = f->lists[f->li++];
    if (!b) return lop_err_set(err, LOP_EGONE, 410, "Expired", "too old");
    lop_buf_puts(body, b);
    return LOP_OK;
}

static lop_rc_t fake_watch(void *ud, const lop_watch_opts_t *o, lop_stream_fn fn, void *fn_ud, lop_err_t *err)
{
    fake_t *f = ud;
    if (f->wi >= f->nwatches) return lop_err_set(err, LOP_EAGAIN, 0, NULL, "script exhausted");
    const char *w = f->watches[f->wi++];
    if (!w) {
        pthread_mutex_lock(&f->mu);
        while (f->cancels == 0) pthread_cond_wait(&f->cond, &f->mu); /* cancel is sticky (listwatch.h) */
        pthread_mutex_unlock(&f->mu);
        return LOP_ECLOSED;
    }
    size_t n = strlen(w), i = 0, piece = 1;
    while (i < n) { /* pieces of 1, 8, 64, 512, 4096, 1, ... bytes */
        size_t k = piece < n - i ? piece : n - i;
        if (fn(fn_ud, w + i, k) != 0) return LOP_ECLOSED;
        i += k;
        piece = piece >= 4096 ? 1 : piece * 8;
    }
    lop_fake_clock_step(f->fc, 2 * S);
    return LOP_OK;
}

static void fake_cancel(void *ud)
{
    fake_t *f = ud;
    pthread_mutex_lock(&f->mu);
    f->cancels++;
    pthread_cond_broadcast(&f->cond);
    pthread_mutex_unlock(&f->mu);
}

typedef struct rec {
    char tag;
    char *log; /* shared log */
    size_t cap;
} rec_t;

static void app(rec_t *r, const char *what, const lop_obj_t *o)
{
    size_t n = strlen(r->log);
    snprintf(r->log + n, r->cap - n, "%c%s:%s@%s;", r->tag, what, o->name, o->rv);
}
static void h_add(void *ud, lop_obj_t *o) { app(ud, "add", o); }
static void h_upd(void *ud, lop_obj_t *old, lop_obj_t *o) { app(ud, "upd", o); }
static void h_del(void *ud, lop_obj_t *o, bool tomb) { app(ud, tomb ? "tomb" : "del", o); }
static void h_synced(void *ud)
{
    rec_t *r = ud;
    size_t n = strlen(r->log);
    snprintf(r->log + n, r->cap - n, "%csynced;", r->tag);
}

typedef struct env {
    lop_fake_clock_t fc;
    fake_t f;
    lop_informer_t *inf;
    char log[4096];
} env_t;

static void setup(env_t *e, const char *const *lists, int nl, const char *const *watches, int nw)
{
    memset(e, 0, sizeof *e);
    lop_fake_clock_init(&e->fc, 0);
    e->f = (fake_t){.fc = &e->fc, .lists = lists, .nlists = nl, .watches = watches, .nwatches = nw};
    pthread_mutex_init(&e->f.mu, NULL);
    pthread_cond_init(&e->f.cond, NULL);
    lop_listwatch_t lw = {.ud = &e->f, .list = fake_list, .watch = fake_watch, .cancel = fake_cancel};
    lop_informer_config_t cfg = {.name = "v1/configmaps", .lw = &lw, .clock = &e->fc.base, .seed = 7};
    e->inf = lop_informer_new(&cfg, NULL);
    T_CHECK(e->inf != NULL);
}

static void teardown(env_t *e)
{
    lop_informer_free(e->inf);
    pthread_mutex_destroy(&e->f.mu);
    pthread_cond_destroy(&e->f.cond);
}

static void step(env_t *e)
{
    int64_t w;
    T_EQ_INT(lop_informer_step(e->inf, &w), LOP_OK);
}

#define CM(name, rv) "{\"metadata\":{\"namespace\":\"d\",\"name\":\"" name "\",\"resourceVersion\":\"" rv "\"}}"
#define LIST(rv, items)                                                                         \
    "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"" rv \
    "\"},\"items\":[" items "]}"
#define EV(type, obj) "{\"type\":\"" type "\",\"object\":" obj "}\n"

static void test_handlers_fan_out_in_order(void)
{
    static const char *const lists[] = {LIST("10", CM("a", "5"))};
    static const char *const watches[] = {EV("ADDED", CM("b", "11")) EV("MODIFIED", CM("a", "12"))
                                              EV("DELETED", CM("b", "13"))};
    env_t e;
    setup(&e, lists, 1, watches, 1);
    rec_t r1 = {'1', e.log, sizeof e.log}, r2 = {'2', e.log, sizeof e.log};
    lop_reflector_handlers_t h1 = {h_add, h_upd, h_del, &r1, h_synced}, h2 = {h_add, h_upd, h_del, &r2, h_synced};
    lop_informer_add_handler(e.inf, &h1);
    lop_informer_add_handler(e.inf, &h2);
    T_EQ_STR(e.log, ""); /* nothing to replay before the list */
    T_CHECK(!lop_informer_has_synced(e.inf));
    step(&e);
    T_CHECK(lop_informer_has_synced(e.inf));
    step(&e);
    /* every handler is told of the sync once, after the list's adds and before live events */
    T_EQ_STR(e.log, "1add:a@5;2add:a@5;1synced;2synced;1add:b@11;2add:b@11;1upd:a@12;2upd:a@12;1del:b@13;2del:b@13;");
    teardown(&e);
}

static void test_late_handler_gets_replay_then_live_events(void)
{
    static const char *const lists[] = {LIST("10", CM("a", "5") "," CM("b", "6")), LIST("30", CM("b", "6"))};
    static const char *const watches[] = {
        EV("MODIFIED", CM("b", "20")) "{\"type\":\"ERROR\",\"object\":{\"code\":410}}\n"};
    env_t e;
    setup(&e, lists, 2, watches, 1);
    rec_t r1 = {'1', e.log, sizeof e.log};
    lop_reflector_handlers_t h1 = {h_add, h_upd, h_del, &r1, h_synced};
    step(&e);
    int id = lop_informer_add_handler(e.inf, &h1);
    T_EQ_STR(e.log, "1add:a@5;1add:b@6;1synced;"); /* registered after the sync: told after the replay */
    e.log[0] = '\0';
    step(&e);                                         /* watch: update, then 410 */
    step(&e);                                         /* relist: a vanished → tombstone; b back at its listed state */
    T_EQ_STR(e.log, "1upd:b@20;1upd:b@6;1tomb:a@5;"); /* a relist is not a second sync */
    lop_informer_remove_handler(e.inf, id);
    lop_informer_remove_handler(e.inf, 999);
    e.log[0] = '\0';
    step(&e);
    T_EQ_STR(e.log, "");
    teardown(&e);
}

static void test_ten_thousand_updates_of_100_objects_end_right(void)
{
    /* one watch stream carrying 10,000 MODIFIED events round-robin over 100 objects, streamed in
     * pieces of 1..4096 bytes so events straddle every kind of boundary */
    lop_buf_t list = LOP_BUF_INIT, w = LOP_BUF_INIT;
    lop_buf_puts(
        &list,
        "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"100\"},\"items\":[");
    for (int i = 0; i < 100; i++)
        lop_buf_printf(
            &list,
            "%s{\"metadata\":{\"namespace\":\"d\",\"name\":\"o%d\",\"resourceVersion\":\"%d\"},\"data\":{\"v\":\"0\"}}",
            i ? "," : "", i, i + 1);
    lop_buf_puts(&list, "]}");
    for (int k = 0; k < 10000; k++)
        lop_buf_printf(&w,
                       "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{"
                       "\"namespace\":\"d\",\"name\":\"o%d\",\"resourceVersion\":\"%d\",\"managedFields\":[{"
                       "\"manager\":\"x\"}]},\"data\":{\"v\":\"%d\"}}}\n",
                       k % 100, 101 + k, k);
    const char *lists[] = {list.data}, *watches[] = {w.data};
    env_t e;
    setup(&e, lists, 1, watches, 1);
    step(&e);
    step(&e);
    lop_store_t *s = lop_informer_store(e.inf);
    lop_store_stats_t st;
    lop_store_stats(s, &st);
    T_EQ_INT(st.count, 100);
    for (int i = 0; i < 100; i++) {
        char key[32], rv[16], data[64];
        snprintf(key, sizeof key, "d/o%d", i);
        lop_obj_t *o = lop_store_get(s, key);
        T_CHECK(o != NULL);
        if (!o) continue;
        int last = 9900 + i; /* the last event for object i */
        snprintf(rv, sizeof rv, "%d", 101 + last);
        T_EQ_STR(o->rv, rv);
        snprintf(data, sizeof data, "\"data\":{\"v\":\"%d\"}", last);
        T_CHECK(strstr(o->json, data) != NULL);
        T_CHECK(strstr(o->json, "managedFields") == NULL);
        lop_obj_unref(o);
    }
    char rv[32];
    lop_reflector_last_rv(lop_informer_reflector(e.inf), rv, sizeof rv);
    T_EQ_STR(rv, "10100");
    lop_reflector_stats_t rs;
    lop_reflector_stats(lop_informer_reflector(e.inf), &rs);
    T_EQ_INT(rs.events, 10000);
    T_EQ_INT(rs.malformed, 0);
    teardown(&e);
    lop_buf_free(&list);
    lop_buf_free(&w);
}

static void test_threaded_informer_syncs_and_stops_promptly(void)
{
    static const char *const lists[] = {LIST("10", CM("a", "5"))};
    static const char *const watches[] = {NULL};
    env_t e;
    setup(&e, lists, 1, watches, 1);
    rec_t r1 = {'1', e.log, sizeof e.log};
    lop_reflector_handlers_t h1 = {h_add, h_upd, h_del, &r1, h_synced};
    lop_informer_add_handler(e.inf, &h1);
    T_EQ_INT(lop_informer_start(e.inf, NULL), LOP_OK);
    while (!lop_informer_has_synced(e.inf)) sched_yield();
    /* a handler added while the informer runs gets the replay */
    rec_t r2 = {'2', e.log, sizeof e.log};
    lop_reflector_handlers_t h2 = {h_add, h_upd, h_del, &r2, h_synced};
    lop_informer_add_handler(e.inf, &h2);
    lop_informer_stop(e.inf);
    T_EQ_STR(e.log, "1add:a@5;1synced;2add:a@5;2synced;");
    T_EQ_INT(e.f.cancels, 1); /* once: the cancel is sticky (listwatch.h) */
    teardown(&e);
}

int main(void)
{
    T_RUN(test_handlers_fan_out_in_order);
    T_RUN(test_late_handler_gets_replay_then_live_events);
    T_RUN(test_ten_thousand_updates_of_100_objects_end_right);
    T_RUN(test_threaded_informer_syncs_and_stops_promptly);
    return T_DONE();
}
