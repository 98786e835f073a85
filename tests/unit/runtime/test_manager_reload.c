/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for a reload whose wiring fails (host/runtime/manager.c, the install's rollback),
 * against the local API server started in-process on 127.0.0.1 port 0. A C fake engine stands in
 * for Lua (its "scripts" name a table of declarations); the manager is never started, so no
 * informer thread runs: the test steps the informers synchronously, and every ordering below is
 * fixed by the test thread alone (no sleeps, no waits).
 *
 * No real input makes the wiring fail once the kinds resolved (the informer constructors refuse
 * only a missing list/watch), so the informer whose creation fails is chosen by the manager's
 * test seam (lop_manager_t.inf_new_hook): the reload keeps controller "gated" and adds a watch
 * whose informer cannot be created. */
#include "host/runtime/manager_internal.h"
#include "host/runtime/metrics/metrics_std.h"
#include "host/runtime/scripts.h"
#include "t.h"
#include "apiserver_client.h"

#include <stdlib.h>
#include <string.h>

static lop_apiserver_t *srv;
static lop_rest_client_t *cli;
static lop_metrics_t *reg; /* the manager's metrics, rendered by metric() */
static lop_metrics_std_t std;

#define NCM 3 /* ConfigMaps in "default", the namespace the controller's for_ watches */
#define NKS 2 /* ConfigMaps in "kube-system" */

/* ------------------------------------------------------------------ the fake engine */

static char s_gated[] = "gated", s_v1[] = "v1", s_cm[] = "ConfigMap", s_default[] = "default", s_sel[] = "tier=new";
/* the informers' keys (inf_entry_t.key): the for_ watch's, the owns watch's */
#define KEY_FOR  "/v1/configmaps|default|"
#define KEY_OWNS "/v1/configmaps|default|tier=new"

/* tier=new ConfigMaps of "default", owned (a second informer of v1/configmaps) */
static lop_watch_decl_t owns_new[] = {
    {.gvk = {s_v1, s_cm}, .map = LOP_MAP_OWNER, .namespace_ = s_default, .label_selector = s_sel},
};
static char s_other[] = "other", s_ks[] = "kube-system", s_ks_ctrl[] = "ks";

/* Controller cname_ over the ConfigMaps of namespace ns_, with workers_ workers, owning owns_
 * (n_ watches; NULL, 0: none). */
#define CTRL(cname_, ns_, owns_, n_, workers_)                                                                      \
    {                                                                                                               \
        .name = (cname_), .for_ = {.gvk = {s_v1, s_cm}, .map = LOP_MAP_SELF, .namespace_ = (ns_)}, .owns = (owns_), \
        .nowns = (n_), .max_concurrent_reconciles = (workers_)                                                      \
    }

/* "keep": controller "gated" over the ConfigMaps of "default". */
static lop_ctrl_decl_t keep_decls[] = {CTRL(s_gated, s_default, NULL, 0, 1)};

/* "keep+owns": the same controller (same name, workers, leader election, primary kind: kept by
 * the reload) that also owns ConfigMaps labelled tier=new, a second informer. */
static lop_ctrl_decl_t keep_owns_decls[] = {CTRL(s_gated, s_default, owns_new, 1, 1)};

/* "workers2": the same controller with 2 workers (a new controller of the same name: its queue
 * and metrics series are the running one's) that also owns ConfigMaps labelled tier=new. */
static lop_ctrl_decl_t workers2_decls[] = {CTRL(s_gated, s_default, owns_new, 1, 2)};

/* "other": "gated" as in "keep", plus controller "other" over the ConfigMaps of kube-system (an
 * informer of the same kind, so of the same informer metric series) that owns tier=new ones. */
static lop_ctrl_decl_t other_decls[] = {CTRL(s_gated, s_default, NULL, 0, 1), CTRL(s_other, s_ks, owns_new, 1, 1)};

/* "two": "gated" as in "keep", plus controller "ks" over the ConfigMaps of kube-system: two
 * informers of v1/configmaps, summed in one series. */
static lop_ctrl_decl_t two_decls[] = {CTRL(s_gated, s_default, NULL, 0, 1), CTRL(s_ks_ctrl, s_ks, NULL, 0, 1)};
#define KEY_KS "/v1/configmaps|kube-system|"

/* "meta": "gated" watching the metadata of the ConfigMaps of "default" only: its informer is of
 * another series (v1/configmaps+metadata), so no informer of v1/configmaps is left. */
static lop_ctrl_decl_t meta_decls[] = {
    {.name = s_gated,
     .for_ = {.gvk = {s_v1, s_cm}, .map = LOP_MAP_SELF, .namespace_ = s_default, .metadata_only = true},
     .max_concurrent_reconciles = 1},
};

typedef struct fake_vm {
    const lop_ctrl_decl_t *decls;
    size_t n;
} fake_vm_t;

static lop_vm_t *fake_vm_new(const lop_script_set_t *set, const lop_engine_opts_t *opts, const lop_host_api_t *host,
                             lop_err_t *err)
{
    (void)opts;
    (void)host;
    const lop_script_file_t *f = lop_scripts_find(set, "main.lua");
    /* each test "script" names a table of declarations */
    static const struct {
        const char *script;
        const lop_ctrl_decl_t *decls;
        size_t n;
    } scripts[] = {
        {"keep", keep_decls, 1},         {"keep+owns", keep_owns_decls, 1},
        {"workers2", workers2_decls, 1}, {"other", other_decls, 2},
        {"two", two_decls, 2},           {"meta", meta_decls, 1},
    };
    for (size_t i = 0; f && i < sizeof scripts / sizeof scripts[0]; i++) {
        if (strcmp(f->data, scripts[i].script) != 0) continue;
        fake_vm_t *vm = calloc(1, sizeof *vm);
        vm->decls = scripts[i].decls;
        vm->n = scripts[i].n;
        return (lop_vm_t *)vm;
    }
    lop_err_set(err, LOP_EINVAL, 0, NULL, "main.lua:1: unknown test script");
    return NULL;
}

static void fake_declarations(lop_vm_t *v, const lop_ctrl_decl_t **decls, size_t *n)
{
    fake_vm_t *vm = (fake_vm_t *)v;
    *decls = vm->decls;
    *n = vm->n;
}

static void fake_vm_free(lop_vm_t *vm) { free(vm); }

static const lop_engine_t fake_engine = {
    .name = "fake",
    .vm_new = fake_vm_new,
    .declarations = fake_declarations,
    .vm_free = fake_vm_free,
};

static lop_script_set_t *set_with(const char *main)
{
    lop_script_file_t f = {"main.lua", (char *)main, strlen(main)};
    return lop_scripts_from_files(&f, 1, "test");
}

/* ------------------------------------------------------------------ fixture */

typedef struct fx {
    lop_restmapper_t *mapper;
    lop_manager_t *m;
    const char *fail_key; /* the creation of the informer with this key fails */
    int refused;          /* creations the seam refused */
    /* Test b: what the seam does and sees, on the installing thread, right before it refuses:
     * the kept controller has been taken over (its old entry moved) and not yet given back. */
    bool sync_first;  /* step the old wiring's informer to its first sync first */
    bool moved_then;  /* the old entry was moved */
    bool synced_then; /* that informer had synced after the step */
    bool ready_then;  /* the controller's sources gate was open after the step */
} fx_t;

static inf_entry_t *inf_of(lop_manager_t *m, const char *key)
{
    for (inf_entry_t *e = m->infs; e; e = e->next)
        if (strcmp(e->key, key) == 0) return e;
    return NULL;
}

static lop_rc_t refuse_informer(void *ud, const char *key, lop_err_t *err)
{
    fx_t *f = ud;
    if (!f->fail_key || strcmp(key, f->fail_key) != 0) return LOP_OK;
    f->refused++;
    if (f->sync_first) {
        ctrl_entry_t *old = f->m->ctrls; /* the running wiring: one controller */
        f->moved_then = __atomic_load_n(&old->moved, __ATOMIC_SEQ_CST);
        inf_entry_t *e = old->bindings[0]->inf;
        int64_t wait = 0;
        T_EQ_INT(lop_informer_step(e->inf, &wait), LOP_OK); /* its first list, handed to handlers */
        f->synced_then = lop_informer_has_synced(e->inf);
        f->ready_then = lop_controller_sources_ready(old->ctrl);
    }
    return lop_err_set(err, LOP_ERR, 0, NULL, "informer %s: refused by the test", key);
}

static void setup(fx_t *f)
{
    memset(f, 0, sizeof *f);
    f->mapper = lop_restmapper_new(cli);
    lop_manager_config_t mc = {.rest = cli, .mapper = f->mapper, .engine = &fake_engine, .metrics = &std};
    lop_err_t err;
    T_EQ_INT(lop_manager_new(&mc, &f->m, &err), LOP_OK);
    f->m->inf_new_hook = refuse_informer;
    f->m->inf_new_hook_ud = f;
}

static void teardown(fx_t *f)
{
    lop_manager_free(f->m);
    lop_restmapper_free(f->mapper);
}

/* Install main as the caller of lop_manager_install does: the set is the manager's on success,
 * the caller's (freed here) on failure. */
static lop_rc_t install(fx_t *f, const char *main, lop_err_t *err)
{
    lop_script_set_t *set = set_with(main);
    lop_rc_t rc = lop_manager_install(f->m, set, err);
    if (rc != LOP_OK) lop_script_set_free(set);
    return rc;
}

/* Install "keep": controller "gated", gated on its one informer, which has not synced. */
static lop_controller_t *install_gated(fx_t *f, char *version, size_t len)
{
    lop_err_t err;
    T_EQ_INT(install(f, "keep", &err), LOP_OK);
    lop_manager_version(f->m, version, len);
    T_CHECK(f->m->ctrls && !f->m->ctrls->next);
    if (!f->m->ctrls) return NULL;
    T_CHECK(!lop_informer_has_synced(f->m->ctrls->bindings[0]->inf->inf));
    T_CHECK(!lop_controller_sources_ready(f->m->ctrls->ctrl));
    return f->m->ctrls->ctrl;
}

/* After a failed reload: the wiring is exactly the one "keep" installed, given back. */
static void check_old_wiring(fx_t *f, lop_controller_t *ctrl, const char *version)
{
    char now[32];
    lop_manager_version(f->m, now, sizeof now);
    T_EQ_STR(now, version); /* the running scripts are still the old ones */
    lop_manager_stats_t st;
    lop_manager_stats(f->m, &st);
    T_EQ_INT(st.reloads_ok, 1);
    T_EQ_INT(st.reloads_failed, 1);
    T_EQ_INT(st.controllers, 1);
    T_EQ_INT(st.informers, 1); /* the tier=new informer was never made */
    ctrl_entry_t *c = f->m->ctrls;
    T_CHECK(c && !c->next);
    if (!c) return;
    T_EQ_STR(c->name, "gated");
    T_CHECK(c->ctrl == ctrl);
    T_CHECK(!__atomic_load_n(&c->moved, __ATOMIC_SEQ_CST)); /* given back */
    T_EQ_INT(c->nbindings, 1);
    T_CHECK(f->m->infs && !f->m->infs->next);
    T_CHECK(f->m->infs == c->bindings[0]->inf);
    T_EQ_INT(c->bindings[0]->inf->refs, 1); /* the reload's reference on it was released */
}

/* The informer of key lists once (its first sync, handed to its handlers). */
static void sync_informer(fx_t *f, const char *key)
{
    inf_entry_t *e = inf_of(f->m, key);
    T_CHECK(e != NULL);
    if (!e) return;
    int64_t wait = 0;
    T_EQ_INT(lop_informer_step(e->inf, &wait), LOP_OK);
    T_CHECK(lop_informer_has_synced(e->inf));
}

/* A reload of main whose owns watch's informer cannot be made: it must be refused. */
static void refused_reload(fx_t *f, const char *main, lop_err_t *err)
{
    f->fail_key = KEY_OWNS;
    lop_err_clear(err);
    T_CHECK(install(f, main, err) != LOP_OK);
}

/* Set up f, install "keep" (v1 gets its version), then the refused reload of "keep+owns"; with
 * sync_first, the informer syncs while that reload holds the controller. Returns "gated"'s
 * controller. */
static lop_controller_t *gated_then_refused(fx_t *f, char *v1, size_t len, bool sync_first, lop_err_t *err)
{
    setup(f);
    lop_controller_t *ctrl = install_gated(f, v1, len);
    f->sync_first = sync_first;
    refused_reload(f, "keep+owns", err);
    T_EQ_INT(f->refused, 1);
    return ctrl;
}

/* ------------------------------------------------------------------ tests */

static void test_failed_rewire_gives_a_gated_controller_back_to_the_old_wiring(void)
{
    /* The reload takes "gated" over while its informer is still listing, then fails: it is
     * reported failed, the old wiring still runs, and the old binding's on_synced is live again
     * (moved cleared): the informer's first sync opens the gate, its objects are queued. */
    fx_t f;
    char v1[32];
    lop_err_t err;
    lop_controller_t *ctrl = gated_then_refused(&f, v1, sizeof v1, false, &err);
    T_CHECK(strstr(err.message, "refused by the test") != NULL);
    check_old_wiring(&f, ctrl, v1);
    T_CHECK(!lop_controller_sources_ready(ctrl)); /* nothing synced yet: still held */

    sync_informer(&f, KEY_FOR);
    T_CHECK(lop_controller_sources_ready(ctrl)); /* told by the old binding: the workers go */
    lop_workqueue_stats_t qs;
    lop_workqueue_stats(lop_controller_queue(ctrl), &qs);
    T_EQ_INT(qs.depth, NCM); /* the old binding's on_add queued every object */
    teardown(&f);
}

static void test_informer_synced_during_failed_rewire_opens_the_gate(void)
{
    /* The informer syncs while the reload holds the controller (old binding moved: it stands
     * down, and the new binding is not registered yet), then the reload fails: nobody was told
     * of that sync but the rollback's check, which opens the gate. */
    fx_t f;
    char v1[32];
    lop_err_t err;
    lop_controller_t *ctrl = gated_then_refused(&f, v1, sizeof v1, true, &err);
    T_CHECK(f.moved_then); /* the sync came while the old binding stood down ... */
    T_CHECK(f.synced_then);
    T_CHECK(!f.ready_then); /* ... so it told nobody */
    check_old_wiring(&f, ctrl, v1);
    T_CHECK(lop_controller_sources_ready(ctrl)); /* the rollback's check did */
    teardown(&f);
}

static void test_reload_after_a_failed_one_takes_the_controller_over(void)
{
    /* The rollback leaves a wiring a later reload can take over as usual: the same reload,
     * no longer refused, moves "gated" to the new wiring with both informers, and its workers
     * wait for the new one. */
    fx_t f;
    char v1[32];
    lop_err_t err;
    lop_controller_t *ctrl = gated_then_refused(&f, v1, sizeof v1, false, &err);
    f.fail_key = NULL;
    T_EQ_INT(install(&f, "keep+owns", &err), LOP_OK);
    char v2[32];
    lop_manager_version(f.m, v2, sizeof v2);
    T_CHECK(strcmp(v2, v1) != 0);
    lop_manager_stats_t st;
    lop_manager_stats(f.m, &st);
    T_EQ_INT(st.reloads_ok, 2);
    T_EQ_INT(st.reloads_failed, 1);
    T_EQ_INT(st.controllers, 1);
    T_EQ_INT(st.informers, 2);
    ctrl_entry_t *c = f.m->ctrls;
    T_CHECK(c && !c->next && c->ctrl == ctrl && c->nbindings == 2);
    inf_entry_t *a = inf_of(f.m, KEY_FOR), *b = inf_of(f.m, KEY_OWNS);
    T_CHECK(a && b && a != b);
    if (a && b) {
        T_EQ_INT(a->refs, 1);
        int64_t wait = 0;
        T_EQ_INT(lop_informer_step(a->inf, &wait), LOP_OK);
        T_CHECK(!lop_controller_sources_ready(ctrl)); /* the owns informer has not synced */
        T_EQ_INT(lop_informer_step(b->inf, &wait), LOP_OK);
        T_CHECK(lop_controller_sources_ready(ctrl));
    }
    teardown(&f);
}

/* The value of one series as /metrics renders it ("name{labels}"), or -1 when it is absent. */
static double metric(const char *series)
{
    lop_buf_t b = LOP_BUF_INIT;
    lop_metrics_render(reg, &b);
    double v = -1;
    size_t n = strlen(series);
    for (const char *l = b.data; l && *l;) {
        if (!strncmp(l, series, n) && l[n] == ' ') v = strtod(l + n + 1, NULL);
        const char *nl = strchr(l, '\n');
        l = nl ? nl + 1 : NULL;
    }
    lop_buf_free(&b);
    return v;
}

#define Q_ADDS  "workqueue_adds_total{controller=\"gated\",name=\"gated\"}"
#define Q_DEPTH "workqueue_depth{controller=\"gated\",name=\"gated\"}"
#define C_MAX   "controller_runtime_max_concurrent_reconciles{controller=\"gated\"}"
#define I_OBJS  "luaop_informer_objects{gvr=\"v1/configmaps\"}"

/* A reload that would replace "gated" by a controller of 2 workers fails: the series of the
 * running controller still read its queue and its worker count (the staged controller had bound
 * them, and the rollback's unbind left them reading nothing). */
static void test_failed_reload_leaves_the_controller_metrics(void)
{
    fx_t f;
    setup(&f);
    char v1[32];
    lop_controller_t *ctrl = install_gated(&f, v1, sizeof v1);
    lop_controller_enqueue(ctrl, "default", "x");
    T_EQ_INT(metric(C_MAX), 1);
    T_EQ_INT(metric(Q_ADDS), 1);
    T_EQ_INT(metric(Q_DEPTH), 1);
    lop_err_t err;
    refused_reload(&f, "workers2", &err);
    check_old_wiring(&f, ctrl, v1);
    T_EQ_INT(metric(C_MAX), 1);
    T_EQ_INT(metric(Q_ADDS), 1);
    T_EQ_INT(metric(Q_DEPTH), 1);
    teardown(&f);
}

/* A reload adding an informer of the same kind (another namespace) fails: the informer series
 * still reads the running informer's store. */
static void test_failed_reload_leaves_the_informer_metrics(void)
{
    fx_t f;
    setup(&f);
    char v1[32];
    lop_controller_t *ctrl = install_gated(&f, v1, sizeof v1);
    sync_informer(&f, KEY_FOR); /* its first list: NCM objects */
    T_EQ_INT(metric(I_OBJS), NCM);
    lop_err_t err;
    refused_reload(&f, "other", &err);
    T_EQ_INT(metric(I_OBJS), NCM);
    T_EQ_INT(f.m->stats.controllers, 1);
    (void)ctrl;
    teardown(&f);
}

#define I_BYTES     "luaop_informer_bytes{gvr=\"v1/configmaps\"}"
#define I_RESTARTS  "luaop_watch_restarts_total{gvr=\"v1/configmaps\"}"
#define I_RELISTS   "luaop_relists_total{gvr=\"v1/configmaps\"}"
#define I_META_OBJS "luaop_informer_objects{gvr=\"v1/configmaps+metadata\"}"

static double store_bytes(fx_t *f, const char *key)
{
    inf_entry_t *e = inf_of(f->m, key);
    T_CHECK(e != NULL);
    if (!e) return -1;
    lop_store_stats_t st;
    memset(&st, 0, sizeof st);
    lop_store_stats(lop_informer_store(e->inf), &st);
    return (double)st.bytes;
}

/* Two informers of v1/configmaps (namespaces "default" and "kube-system") run: each {gvr} series
 * is the sum over both, whichever was bound last; a reload that drops one leaves the other's
 * figures; once no informer of the GVR is left the series are gone. */
static void test_informer_metrics_sum_over_the_informers_of_a_gvr(void)
{
    fx_t f;
    setup(&f);
    char v1[32];
    install_gated(&f, v1, sizeof v1);
    sync_informer(&f, KEY_FOR);
    T_EQ_INT(metric(I_OBJS), NCM);

    lop_err_t err;
    T_EQ_INT(install(&f, "two", &err), LOP_OK);
    T_EQ_INT(f.m->stats.informers, 2);
    T_EQ_INT(metric(I_OBJS), NCM); /* the kube-system informer, bound last, has listed nothing yet */
    sync_informer(&f, KEY_KS);
    T_EQ_INT(metric(I_OBJS), NCM + NKS);
    double bytes_default = store_bytes(&f, KEY_FOR), bytes_ks = store_bytes(&f, KEY_KS);
    T_CHECK(bytes_default > 0 && bytes_ks > 0);
    T_EQ_INT(metric(I_BYTES), bytes_default + bytes_ks);
    T_EQ_INT(metric(I_RESTARTS), 0); /* one watch-less list each: no restart, no relist */
    T_EQ_INT(metric(I_RELISTS), 0);

    T_EQ_INT(install(&f, "keep", &err), LOP_OK); /* drops "ks" and its informer */
    T_EQ_INT(f.m->stats.informers, 1);
    T_CHECK(inf_of(f.m, KEY_KS) == NULL);
    T_EQ_INT(metric(I_OBJS), NCM);
    T_EQ_INT(metric(I_BYTES), bytes_default);

    T_EQ_INT(install(&f, "meta", &err), LOP_OK); /* the last informer of v1/configmaps goes */
    T_EQ_INT(f.m->stats.informers, 1);
    T_EQ_INT(metric(I_OBJS), -1);
    T_EQ_INT(metric(I_BYTES), -1);
    T_EQ_INT(metric(I_RESTARTS), -1);
    T_EQ_INT(metric(I_RELISTS), -1);
    T_EQ_INT(metric(I_META_OBJS), 0); /* its own series, not listed yet */
    teardown(&f);
    T_EQ_INT(metric(I_META_OBJS), -1); /* the manager freed: no informer left at all */
}

/* n ConfigMaps named prefix-0.. in namespace ns. */
static void create_configmaps(const char *ns, const char *prefix, int n)
{
    for (int i = 0; i < n; i++) {
        char body[256], path[128];
        snprintf(body, sizeof body, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s-%d\"}}",
                 prefix, i);
        snprintf(path, sizeof path, "/api/v1/namespaces/%s/configmaps", ns);
        lop_err_t err;
        T_EQ_INT(lop_rest_do(cli, "POST", path, NULL, body, strlen(body), NULL, &err), LOP_OK);
    }
}

int main(void)
{
    if (!T_SETUP("start the API server and a client", t_apiserver_client_start(&srv, &cli) == 0)) return T_DONE();
    reg = lop_metrics_new();
    lop_err_t merr;
    if (!T_SETUP("the standard metrics", lop_metrics_std_init(&std, reg, &merr) == LOP_OK)) return T_DONE();
    create_configmaps("default", "cm", NCM);
    create_configmaps("kube-system", "ks", NKS);
    T_RUN(test_failed_rewire_gives_a_gated_controller_back_to_the_old_wiring);
    T_RUN(test_informer_synced_during_failed_rewire_opens_the_gate);
    T_RUN(test_reload_after_a_failed_one_takes_the_controller_over);
    T_RUN(test_failed_reload_leaves_the_controller_metrics);
    T_RUN(test_failed_reload_leaves_the_informer_metrics);
    T_RUN(test_informer_metrics_sum_over_the_informers_of_a_gvr);
    lop_rest_client_free(cli);
    lop_apiserver_stop(srv);
    lop_metrics_free(reg);
    return T_DONE();
}
