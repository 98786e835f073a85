/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the manager's cache reads (host/runtime/hostapi.c) against the local API server
 * started in-process on 127.0.0.1 port 0, with the informer stepped synchronously (no threads,
 * no waits): before the first list a read is not served from the cache (LOP_EAGAIN: the caller
 * does a live GET); while the first list is being delivered to the handlers — when reconciles
 * of those first events already run — reads are served from the (complete) store, not live;
 * after it, reads, misses (NotFound, not live) and lists from the cache. */
#include "apiserver/apiserver.h"
#include "host/kube/cache/informer.h"
#include "host/kube/cache/rest_listwatch.h"
#include "host/kube/client/rest.h"
#include "host/runtime/manager_internal.h"
#include "t.h"
#include "apiserver_client.h"

#include <stdlib.h>
#include <string.h>

static lop_apiserver_t *srv;
static lop_rest_client_t *cli;
static const lop_engine_t no_engine = {.name = "none"};
static const lop_rest_mapping_t cm_mapping = {"", "v1", "configmaps", "ConfigMap", true};

#define NCM 20

static void create_cm(const char *name)
{
    char body[256];
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\"},"
             "\"data\":{\"v\":\"%s\"}}",
             name, name);
    lop_err_t err;
    T_EQ_INT(lop_rest_do(cli, "POST", "/api/v1/namespaces/default/configmaps", NULL, body, strlen(body), NULL, &err),
             LOP_OK);
}

typedef struct fx {
    lop_restmapper_t *mapper;
    lop_manager_t *m;
    inf_entry_t *e;
    /* what the handler saw while the first list was delivered */
    int adds, served, eagain, other, synced_during;
    bool blob_ok;
} fx_t;

/* A handler of the first list's events, doing what a reconcile started by one of them does. */
static void on_add(void *ud, lop_obj_t *o)
{
    fx_t *f = ud;
    f->adds++;
    if (lop_informer_has_synced(f->e->inf)) f->synced_during++;
    const lop_host_api_t *h = &f->m->host;
    lop_blob_t b = {0};
    lop_err_t err;
    /* the last object of the list, which may not have been delivered yet */
    char last[32];
    snprintf(last, sizeof last, "cm-%02d", NCM - 1);
    lop_rc_t rc = h->cache_get(h->ud, "v1", "ConfigMap", "default", last, &b, &err);
    if (rc == LOP_OK) {
        f->served++;
        f->blob_ok = f->blob_ok || (b.len > 0 && memmem(b.json, b.len, "\"cm-19\"", 7) != NULL);
        h->release(h->ud, &b);
    } else if (rc == LOP_EAGAIN) {
        f->eagain++;
    } else {
        f->other++;
    }
    (void)o;
}

static void setup_flags(fx_t *f, bool meta_only)
{
    memset(f, 0, sizeof *f);
    f->mapper = lop_restmapper_new(cli);
    lop_manager_config_t mc = {.rest = cli, .mapper = f->mapper, .engine = &no_engine};
    lop_err_t err;
    T_EQ_INT(lop_manager_new(&mc, &f->m, &err), LOP_OK);
    /* An informer entry as the manager makes one for a watched kind, driven by hand. */
    lop_listwatch_t *lw = lop_rest_listwatch_new(cli, &cm_mapping, NULL, NULL, NULL);
    lop_informer_config_t ic = {.name = "v1/configmaps", .lw = lw, .obj_flags = meta_only ? LOP_OBJ_METADATA_ONLY : 0};
    inf_entry_t *e = calloc(1, sizeof *e);
    e->inf = lop_informer_new(&ic, &err);
    free(lw);
    T_CHECK(e->inf != NULL);
    e->mapping = cm_mapping;
    e->refs = 1;
    e->started = true;
    e->meta_only = meta_only;
    f->e = e;
    lop_reflector_handlers_t h = {on_add, NULL, NULL, f, NULL};
    lop_informer_add_handler(e->inf, &h);
    pthread_mutex_lock(&f->m->mu);
    e->next = f->m->infs;
    f->m->infs = e;
    pthread_mutex_unlock(&f->m->mu);
}

static void setup(fx_t *f) { setup_flags(f, false); }

static void teardown(fx_t *f)
{
    pthread_mutex_lock(&f->m->mu);
    f->m->infs = f->e->next;
    pthread_mutex_unlock(&f->m->mu);
    lop_informer_free(f->e->inf);
    free(f->e);
    lop_manager_free(f->m);
    lop_restmapper_free(f->mapper);
}

static void test_first_list_events_read_the_cache_not_the_server(void)
{
    fx_t f;
    setup(&f);
    const lop_host_api_t *h = &f.m->host;
    lop_blob_t b = {0};
    lop_err_t err;
    /* before the first list: nothing cached yet, the caller must read live */
    T_EQ_INT(h->cache_get(h->ud, "v1", "ConfigMap", "default", "cm-00", &b, &err), LOP_EAGAIN);
    lop_blob_t *items = NULL;
    size_t n = 0;
    T_EQ_INT(h->cache_list(h->ud, "v1", "ConfigMap", "default", NULL, &items, &n, &err), LOP_EAGAIN);

    int64_t wait = 0;
    T_EQ_INT(lop_informer_step(f.e->inf, &wait), LOP_OK); /* the first list, delivered */
    T_EQ_INT(f.adds, NCM);
    T_EQ_INT(f.synced_during, 0); /* the window this is about: not synced yet */
    T_EQ_INT(f.served, NCM);      /* ... and still every read came from the store */
    T_EQ_INT(f.eagain, 0);
    T_EQ_INT(f.other, 0);
    T_CHECK(f.blob_ok);

    /* after it: synced, reads and lists from the cache; a missing name is NotFound, not live */
    T_CHECK(lop_informer_has_synced(f.e->inf));
    T_EQ_INT(h->cache_get(h->ud, "v1", "ConfigMap", "default", "cm-03", &b, &err), LOP_OK);
    T_CHECK(memmem(b.json, b.len, "\"cm-03\"", 7) != NULL);
    h->release(h->ud, &b);
    T_EQ_INT(h->cache_get(h->ud, "v1", "ConfigMap", "default", "nope", &b, &err), LOP_ENOTFOUND);
    T_EQ_INT(h->cache_get(h->ud, "v1", "ConfigMap", "other", "cm-03", &b, &err), LOP_ENOTFOUND);
    T_EQ_INT(h->cache_list(h->ud, "v1", "ConfigMap", "default", NULL, &items, &n, &err), LOP_OK);
    T_EQ_INT((int)n, NCM);
    for (size_t i = 0; i < n; i++) h->release(h->ud, &items[i]);
    free(items);
    teardown(&f);
}

/* A metadata-only informer (a watch with metadata_only) caches apiVersion, kind and metadata only,
 * so reads of the kind are never served from it: the caller reads live. */
static void test_metadata_only_cache_serves_no_reads(void)
{
    fx_t f;
    setup_flags(&f, true);
    int64_t wait = 0;
    T_EQ_INT(lop_informer_step(f.e->inf, &wait), LOP_OK);
    T_CHECK(lop_informer_has_synced(f.e->inf));
    T_EQ_INT(f.adds, NCM);
    T_EQ_INT(f.served, 0);
    T_EQ_INT(f.eagain, NCM);
    lop_obj_t *o = lop_store_get(lop_informer_store(f.e->inf), "default/cm-03");
    T_CHECK(o != NULL);
    if (o) {
        T_CHECK(strstr(o->json, "\"data\"") == NULL);
        T_CHECK(strstr(o->json, "\"cm-03\"") != NULL);
        T_EQ_STR(o->kind, "ConfigMap");
        lop_obj_unref(o);
    }
    const lop_host_api_t *h = &f.m->host;
    lop_blob_t b = {0};
    lop_err_t err;
    T_EQ_INT(h->cache_get(h->ud, "v1", "ConfigMap", "default", "cm-03", &b, &err), LOP_EAGAIN);
    teardown(&f);
}

/* An informer entry of the manager over ConfigMaps in one namespace, stepped by hand. */
static inf_entry_t *cm_entry(const char *ns)
{
    lop_listwatch_t *lw = lop_rest_listwatch_new(cli, &cm_mapping, ns, NULL, NULL);
    lop_informer_config_t ic = {.name = "v1/configmaps", .lw = lw};
    inf_entry_t *e = calloc(1, sizeof *e);
    lop_err_t err;
    e->inf = lop_informer_new(&ic, &err);
    free(lw);
    T_CHECK(e->inf != NULL);
    e->mapping = cm_mapping;
    return e;
}

static void test_unsynced_informers_are_named(void)
{
    fx_t f;
    setup(&f);
    snprintf(f.e->key, sizeof f.e->key, "%s", "/v1/configmaps||");
    char names[64];
    T_EQ_INT(lop_manager_unsynced(f.m, names, sizeof names), 1);
    T_EQ_STR(names, "/v1/configmaps||");
    T_CHECK(!lop_manager_synced(f.m));
    char tiny[5];
    T_EQ_INT(lop_manager_unsynced(f.m, tiny, sizeof tiny), 1); /* truncated, still counted */
    T_EQ_STR(tiny, "/v1/");
    int64_t wait = 0;
    T_EQ_INT(lop_informer_step(f.e->inf, &wait), LOP_OK);
    T_EQ_INT(lop_manager_unsynced(f.m, names, sizeof names), 0);
    T_EQ_STR(names, "");
    T_CHECK(lop_manager_synced(f.m));
    teardown(&f);
}

/* A controller entry watching informers a and b, as the manager wires one (the bindings on the
 * stack, not freed by the test): ctrl is the controller's (a new gated one when NULL). */
typedef struct two_sources {
    ctrl_entry_t c;
    binding_t b[2];
    binding_t *bs[2];
    int ids[2]; /* handler ids once registered */
} two_sources_t;

static void two_sources_init(two_sources_t *t, const char *name, lop_controller_t *ctrl, inf_entry_t *a, inf_entry_t *b)
{
    memset(t, 0, sizeof *t);
    if (!ctrl) {
        lop_controller_opts_t co = {.name = name, .workers = 1, .wait_for_sync = true};
        ctrl = lop_controller_new(&co);
    }
    t->c = (ctrl_entry_t){.name = (char *)name, .ctrl = ctrl};
    t->b[0] = (binding_t){.ctrl = &t->c, .inf = a};
    t->b[1] = (binding_t){.ctrl = &t->c, .inf = b};
    t->bs[0] = &t->b[0];
    t->bs[1] = &t->b[1];
    t->c.bindings = t->bs;
    t->c.nbindings = 2;
}

/* Register binding i's on_synced on its informer, as the rewire does. */
static void two_sources_register(two_sources_t *t, int i)
{
    lop_reflector_handlers_t h = {NULL, NULL, NULL, &t->b[i], lop_binding_on_synced};
    t->ids[i] = lop_informer_add_handler(t->b[i].inf->inf, &h);
}

static void test_controller_workers_wait_for_every_watched_informer(void)
{
    /* A controller watching two informers (as for_ and owns do): its workers are let go only
     * once both have synced, by whichever syncs last. */
    inf_entry_t *a = cm_entry("default"), *b = cm_entry("other");
    two_sources_t c;
    two_sources_init(&c, "two-sources", NULL, a, b);
    two_sources_register(&c, 0);
    two_sources_register(&c, 1);
    T_CHECK(!lop_controller_sources_ready(c.c.ctrl));
    int64_t wait = 0;
    T_EQ_INT(lop_informer_step(b->inf, &wait), LOP_OK); /* one source synced, the other not */
    T_CHECK(lop_informer_has_synced(b->inf));
    T_CHECK(!lop_controller_sources_ready(c.c.ctrl));
    T_EQ_INT(lop_informer_step(a->inf, &wait), LOP_OK); /* the last one */
    T_CHECK(lop_controller_sources_ready(c.c.ctrl));

    /* A controller a reload adds over informers that have synced is told on registering a
     * binding whose informers have all synced: here at its first, since both already have (the
     * cache it reads is complete; the second binding's replay follows). */
    two_sources_t c2;
    two_sources_init(&c2, "added", NULL, a, b);
    two_sources_register(&c2, 0);
    T_CHECK(lop_controller_sources_ready(c2.c.ctrl));
    two_sources_register(&c2, 1);
    T_CHECK(lop_controller_sources_ready(c2.c.ctrl));

    lop_informer_free(a->inf);
    lop_informer_free(b->inf);
    free(a);
    free(b);
    lop_controller_free(c.c.ctrl);
    lop_controller_free(c2.c.ctrl);
}

static void test_reload_moving_a_gated_controller_waits_for_its_new_sources(void)
{
    /* A controller still waiting for its first sync is taken over by a reload that adds a watch:
     * the old entry's binding stands down (moved), so its informer's sync does not let the
     * workers go while the new watch's informer is still listing; the new entry's check does,
     * once both have synced. Then the old entry's bindings are freed, handlers first. */
    fx_t f;
    setup(&f); /* a manager (for the bindings' teardown) */
    inf_entry_t *a = cm_entry("default"), *b = cm_entry("other");
    a->refs = b->refs = 2; /* kept by the new wiring: the teardown only releases its reference */
    lop_controller_opts_t co = {.name = "moved", .workers = 1, .wait_for_sync = true};
    lop_controller_t *ctrl = lop_controller_new(&co);
    ctrl_entry_t old = {.name = "moved", .ctrl = ctrl};
    old.bindings = calloc(1, sizeof *old.bindings);
    old.bindings[0] = calloc(1, sizeof(binding_t));
    *old.bindings[0] = (binding_t){.m = f.m, .ctrl = &old, .inf = a};
    old.nbindings = 1;
    lop_reflector_handlers_t ho = {NULL, NULL, NULL, old.bindings[0], lop_binding_on_synced};
    old.bindings[0]->handler_id = lop_informer_add_handler(a->inf, &ho);

    /* the reload: the old entry is moved, the new one watches a and b */
    __atomic_store_n(&old.moved, true, __ATOMIC_RELEASE);
    two_sources_t fresh;
    two_sources_init(&fresh, "moved", ctrl, a, b);
    two_sources_register(&fresh, 0);
    two_sources_register(&fresh, 1);
    int64_t wait = 0;
    T_EQ_INT(lop_informer_step(a->inf, &wait), LOP_OK); /* old and new bindings of a are told */
    T_CHECK(!lop_controller_sources_ready(ctrl));       /* b has not synced: still held */
    lop_ctrl_check_synced(&fresh.c);                    /* what the rewire runs at its end */
    T_CHECK(!lop_controller_sources_ready(ctrl));
    lop_ctrl_bindings_free(&old); /* the old wiring goes: its handler is removed, a and b stay */
    T_EQ_INT(old.nbindings, 0);
    T_EQ_INT(a->refs, 1);
    T_EQ_INT(lop_informer_step(b->inf, &wait), LOP_OK); /* the new watch's informer syncs */
    T_CHECK(lop_controller_sources_ready(ctrl));

    lop_informer_remove_handler(a->inf, fresh.ids[0]);
    lop_informer_remove_handler(b->inf, fresh.ids[1]);
    lop_informer_free(a->inf);
    lop_informer_free(b->inf);
    free(a);
    free(b);
    lop_controller_free(ctrl);
    teardown(&f);
}

/* A clock that moves 10 ms forward every time it is read: the read-your-writes wait below ends
 * by the clock, not by sleeping. Only the calling thread reads it (the informer, recorder and REST
 * client keep the clock they were built with; nothing runs in the background), so a run makes the
 * same reads, and measures the same time, however it is scheduled — unlike unit.lua_vm's old clock,
 * which the watchdog thread's polls moved too. */
typedef struct tick_clock {
    lop_clock_t base;
    int64_t now; /* atomically */
} tick_clock_t;

static int64_t tick_mono(const lop_clock_t *c)
{
    tick_clock_t *t = (tick_clock_t *)c;
    return __atomic_add_fetch(&t->now, 10 * LOP_NS_PER_MS, __ATOMIC_RELAXED);
}

/* A write of a cached kind waits for the cache to show it (read-your-writes), at most 5 s, but
 * never past what is left of the calling script's deadline: here the informer is not stepped
 * after its first list, so the cache never catches up, and the write returns once its 200 ms
 * are spent, not 5 s later. */
static void test_read_your_writes_wait_ends_at_the_callers_deadline(void)
{
    fx_t f;
    setup(&f);
    int64_t wait = 0;
    T_EQ_INT(lop_informer_step(f.e->inf, &wait), LOP_OK); /* cached and synced; no watch step after */
    static tick_clock_t tick = {{tick_mono, tick_mono, true}, LOP_NS_PER_S};
    f.m->clock = &tick.base;
    const lop_host_api_t *h = &f.m->host;
    const char *body = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"ryw-1\"}}";
    lop_api_request_t req = {.verb = "create",
                             .api_version = "v1",
                             .kind = "ConfigMap",
                             .namespace_ = "default",
                             .body = body,
                             .body_len = strlen(body),
                             .timeout_ns = 200 * LOP_NS_PER_MS};
    lop_api_response_t resp;
    lop_err_t err;
    int64_t t0 = lop_clock_mono(&tick.base);
    T_EQ_INT(h->request(h->ud, &req, &resp, &err), LOP_OK);
    int64_t took = lop_clock_mono(&tick.base) - t0;
    T_EQ_INT((int)resp.code, 201);
    free(resp.body);
    T_CHECK(took >= 200 * LOP_NS_PER_MS); /* it did wait for the cache ... */
    T_CHECK(took < LOP_NS_PER_S);         /* ... but not the 5 s read-your-writes bound */
    /* without a caller deadline the wait is bounded by the 5 s alone */
    req.timeout_ns = 0;
    body = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"ryw-2\"}}";
    req.body = body;
    req.body_len = strlen(body);
    t0 = lop_clock_mono(&tick.base);
    T_EQ_INT(h->request(h->ud, &req, &resp, &err), LOP_OK);
    took = lop_clock_mono(&tick.base) - t0;
    free(resp.body);
    T_CHECK(took >= 5 * LOP_NS_PER_S && took < 6 * LOP_NS_PER_S);
    teardown(&f);
}

/* With leader election, a leader-elected write goes out only while the elector leaves time
 * (host/runtime/manager.h leading_left_ns): none left, or less than a whole millisecond, is
 * NotLeader and nothing reaches the server; with time left the write is made (its deadline cut to
 * that time); reads need no leadership; a closed gate refuses whatever the elector says. */
static int64_t fake_left;
static int64_t fake_leading_left_ns(void *ud)
{
    (void)ud;
    return fake_left;
}

static lop_rc_t write_secret(fx_t *f, const char *name, lop_err_t *err)
{
    char body[160];
    snprintf(body, sizeof body, "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"%s\"}}", name);
    lop_api_request_t req = {.verb = "create",
                             .api_version = "v1",
                             .kind = "Secret",
                             .namespace_ = "default",
                             .body = body,
                             .body_len = strlen(body),
                             .timeout_ns = 10 * LOP_NS_PER_S};
    lop_api_response_t resp = {0};
    lop_rc_t rc = f->m->host.request(f->m->host.ud, &req, &resp, err);
    free(resp.body);
    return rc;
}

static long secret_status(const char *name)
{
    char path[128];
    snprintf(path, sizeof path, "/api/v1/namespaces/default/secrets/%s", name);
    lop_err_t err;
    lop_rc_t rc = lop_rest_do(cli, "GET", path, NULL, NULL, 0, NULL, &err);
    return rc == LOP_OK ? 200 : err.code;
}

static void test_leader_writes_only_while_the_elector_leaves_time(void)
{
    fx_t f;
    setup(&f);
    lop_gate_t gate;
    lop_gate_init(&gate, true);
    f.m->cfg.leader_gate = &gate;
    f.m->cfg.leading_left_ns = fake_leading_left_ns;
    lop_err_t err;

    fake_left = 0;
    T_EQ_INT(write_secret(&f, "lead-none", &err), LOP_ECLOSED);
    T_EQ_STR(err.reason, "NotLeader");
    T_EQ_INT((int)secret_status("lead-none"), 404);

    fake_left = LOP_NS_PER_MS / 2; /* less than a whole millisecond: no deadline to give the write */
    T_EQ_INT(write_secret(&f, "lead-sub-ms", &err), LOP_ECLOSED);
    T_EQ_STR(err.reason, "NotLeader");
    T_EQ_INT((int)secret_status("lead-sub-ms"), 404);

    fake_left = 10 * LOP_NS_PER_S;
    T_EQ_INT(write_secret(&f, "lead-ok", &err), LOP_OK);
    T_EQ_INT((int)secret_status("lead-ok"), 200);

    fake_left = 0; /* reads need no leadership */
    lop_api_request_t get = {
        .verb = "get", .api_version = "v1", .kind = "Secret", .namespace_ = "default", .name = "lead-ok"};
    lop_api_response_t resp = {0};
    T_EQ_INT(f.m->host.request(f.m->host.ud, &get, &resp, &err), LOP_OK);
    T_EQ_INT((int)resp.code, 200);
    free(resp.body);

    fake_left = 10 * LOP_NS_PER_S;
    lop_gate_set(&gate, false);
    T_EQ_INT(write_secret(&f, "lead-closed", &err), LOP_ECLOSED);
    T_EQ_STR(err.reason, "NotLeader");
    T_EQ_INT((int)secret_status("lead-closed"), 404);

    f.m->cfg.leader_gate = NULL;
    f.m->cfg.leading_left_ns = NULL;
    lop_gate_cleanup(&gate);
    teardown(&f);
}

int main(void)
{
    if (!T_SETUP("start the API server and a client", t_apiserver_client_start(&srv, &cli) == 0)) return T_DONE();
    for (int i = 0; i < NCM; i++) {
        char name[32];
        snprintf(name, sizeof name, "cm-%02d", i);
        create_cm(name);
    }
    T_RUN(test_first_list_events_read_the_cache_not_the_server);
    T_RUN(test_metadata_only_cache_serves_no_reads);
    T_RUN(test_unsynced_informers_are_named);
    T_RUN(test_controller_workers_wait_for_every_watched_informer);
    T_RUN(test_reload_moving_a_gated_controller_waits_for_its_new_sources);
    T_RUN(test_read_your_writes_wait_ends_at_the_callers_deadline);
    T_RUN(test_leader_writes_only_while_the_elector_leaves_time);
    lop_rest_client_free(cli);
    lop_apiserver_stop(srv);
    return T_DONE();
}
