/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for the leader elector (host/kube/leaderelection): client-go's algorithm
 * (tools/leaderelection/leaderelection.go) driven synchronously with lop_elector_tick over fake
 * clocks and the in-memory Lease store. Each candidate has its own fake clock (so wall clocks can
 * be skewed); the simulation steps them together and ticks every candidate whose next step is due.
 */
#include "host/kube/leaderelection/leaderelection.h"
#include "host/kube/leaderelection/lease.h"
#include "host/util/log.h"
#include "t.h"

#include <stdlib.h>

#define S    LOP_NS_PER_S
#define MS   LOP_NS_PER_MS
#define MAXC 3

typedef struct cand {
    lop_fake_clock_t clock;
    lop_lease_client_t *client;
    lop_elector_t *e;
    int64_t next; /* mono time the next tick is due */
    int started, stopped_cb, new_leader_calls;
    char last_new_leader[128];
    bool live; /* ticked by the simulation */
} cand_t;

typedef struct sim {
    lop_lease_store_t *store;
    cand_t c[MAXC];
    int n;
    bool watch; /* feed store changes to every elector as Lease watch events */
    int64_t elapsed;
    long writes;        /* store writes seen so far */
    int64_t last_write; /* elapsed time of the last store write */
    int64_t step;       /* simulation step (default 50 ms) */
} sim_t;

static void cb_started(void *ud) { ((cand_t *)ud)->started++; }
static void cb_stopped(void *ud) { ((cand_t *)ud)->stopped_cb++; }
static void cb_new_leader(void *ud, const char *id)
{
    cand_t *c = ud;
    c->new_leader_calls++;
    snprintf(c->last_new_leader, sizeof c->last_new_leader, "%s", id);
}

static void on_store_change(void *ud, const lop_lease_record_t *rec, const char *rv)
{
    sim_t *s = ud;
    if (!s->watch) return;
    for (int i = 0; i < s->n; i++)
        if (s->c[i].live) lop_elector_notify_lease_changed(s->c[i].e, rec, rv);
}

static lop_elector_config_t base_config(void)
{
    lop_elector_config_t cfg;
    lop_elector_config_defaults(&cfg); /* 15 s / 10 s / 2 s */
    return cfg;
}

static void sim_init(sim_t *s)
{
    memset(s, 0, sizeof *s);
    s->store = lop_lease_store_new();
    lop_lease_store_on_change(s->store, on_store_change, s);
}

/* Add candidate "c<i>" with cfg (identity, client, clock, callbacks filled in here). */
static cand_t *sim_add(sim_t *s, lop_elector_config_t cfg)
{
    cand_t *c = &s->c[s->n];
    char id[16];
    snprintf(id, sizeof id, "c%d", s->n);
    lop_fake_clock_init(&c->clock, 0);
    lop_fake_clock_step(&c->clock, s->elapsed);
    c->client = lop_lease_client_memory_new(s->store, id);
    cfg.identity = id;
    cfg.client = c->client;
    cfg.clock = &c->clock.base;
    cfg.callbacks = (lop_elector_callbacks_t){cb_started, cb_stopped, cb_new_leader, c};
    cfg.jitter_seed = 0x1234u + (uint64_t)s->n;
    lop_err_t err;
    c->e = lop_elector_new(&cfg, &err);
    T_CHECK(c->e != NULL);
    c->next = lop_clock_mono(&c->clock.base);
    c->live = true;
    s->n++;
    return c;
}

static void sim_free(sim_t *s)
{
    for (int i = 0; i < s->n; i++) {
        s->c[i].live = false;
        lop_elector_free(s->c[i].e);
        lop_lease_client_free(s->c[i].client);
    }
    lop_lease_store_free(s->store);
}

static void sim_step(sim_t *s, int64_t d)
{
    for (int i = 0; i < s->n; i++) lop_fake_clock_step(&s->c[i].clock, d);
    s->elapsed += d;
}

/* Tick every live candidate whose step is due (a notification makes it due now). */
static void sim_tick(sim_t *s)
{
    for (int i = 0; i < s->n; i++) {
        cand_t *c = &s->c[i];
        if (!c->live) continue;
        c->next = lop_elector_tick(c->e);
    }
    long w = lop_lease_store_writes(s->store);
    if (w != s->writes) {
        s->writes = w;
        s->last_write = s->elapsed;
    }
}

static int leaders(sim_t *s, int *who)
{
    int n = 0;
    for (int i = 0; i < s->n; i++)
        if (lop_elector_is_leader(s->c[i].e)) {
            n++;
            if (who) *who = i;
        }
    return n;
}

static lop_lease_record_t stored(sim_t *s)
{
    lop_lease_record_t r = LOP_LEASE_RECORD_INIT;
    /* absent leaves the empty record, which is what the callers compare against */
    lop_rc_ignore(lop_lease_store_peek(s->store, &r, NULL));
    return r;
}

/* Run for `dur` in steps of s->step (50 ms by default); assert at most one leader at every instant. Returns false early
 * (and sets *at) when until() holds. */
typedef bool (*until_fn)(sim_t *s);
static bool sim_run(sim_t *s, int64_t dur, until_fn until, int64_t *at)
{
    int64_t step = s->step ? s->step : 50 * MS;
    for (int64_t t = 0; t <= dur; t += step) {
        sim_tick(s);
        T_CHECK(leaders(s, NULL) <= 1);
        if (until && until(s)) {
            if (at) *at = s->elapsed;
            return true;
        }
        sim_step(s, step);
        T_CHECK(leaders(s, NULL) <= 1); /* also between ticks: is_leader is judged by the clock */
    }
    return false;
}

/* ---------------------------------------------------------------------------------------- */

static void expect_invalid(lop_elector_config_t cfg, const char *needle)
{
    lop_err_t err;
    lop_err_clear(&err);
    T_EQ_INT(lop_elector_config_validate(&cfg, &err), LOP_EINVAL);
    T_CHECK(lop_elector_new(&cfg, &err) == NULL);
    if (!strstr(err.message, needle)) {
        fprintf(stderr, "message \"%s\" does not contain \"%s\"\n", err.message, needle);
        T_CHECK(!"validation error names the cause");
    }
}

static void test_config_validation(void)
{
    lop_lease_store_t *st = lop_lease_store_new();
    lop_lease_client_t *cl = lop_lease_client_memory_new(st, NULL);
    lop_elector_config_t ok = base_config();
    ok.identity = "me";
    ok.client = cl;
    lop_err_t err;
    T_EQ_INT(lop_elector_config_validate(&ok, &err), LOP_OK);

    lop_elector_config_t c = ok;
    c.identity = "";
    expect_invalid(c, "identity must not be empty");
    c = ok;
    c.identity = NULL;
    expect_invalid(c, "identity");
    c = ok;
    c.client = NULL;
    expect_invalid(c, "lease client");
    c = ok;
    c.lease_duration_ns = 10 * S; /* == renew deadline */
    expect_invalid(c, "lease duration (10s) must be greater than renew deadline (10s)");
    c = ok;
    c.renew_deadline_ns = 2400 * MS; /* == 1.2 x retry */
    expect_invalid(c, "renew deadline (2400ms) must be greater than retry period (2s) x 1.2");
    c.renew_deadline_ns = 2401 * MS;
    T_EQ_INT(lop_elector_config_validate(&c, &err), LOP_OK);
    c = ok;
    c.retry_period_ns = 0;
    expect_invalid(c, "retry period");
    c = ok;
    c.lease_duration_ns = 500 * MS;
    c.renew_deadline_ns = 400 * MS;
    c.retry_period_ns = 100 * MS;
    expect_invalid(c, "at least 1s");
    c = ok; /* 2.5 s is written as 2 s, which must still exceed the renew deadline */
    c.lease_duration_ns = 2500 * MS;
    c.renew_deadline_ns = 2200 * MS;
    c.retry_period_ns = 250 * MS;
    expect_invalid(c, "whole seconds");
    c.renew_deadline_ns = 1500 * MS; /* the test durations: 2 s / 1.5 s / 0.25 s */
    c.lease_duration_ns = 2 * S;
    T_EQ_INT(lop_elector_config_validate(&c, &err), LOP_OK);
    c = ok;
    c.on_loss = (lop_elector_on_loss_t)7;
    expect_invalid(c, "on-loss");
    lop_lease_client_free(cl);
    lop_lease_store_free(st);
}

static void test_single_candidate_acquires(void)
{
    sim_t s;
    sim_init(&s);
    cand_t *a = sim_add(&s, base_config());
    int64_t wall = lop_clock_wall(&a->clock.base);
    T_CHECK(!lop_elector_is_leader(a->e));
    int64_t next = lop_elector_tick(a->e);
    T_CHECK(lop_elector_is_leader(a->e));
    T_EQ_INT(a->started, 1);
    T_EQ_INT(a->new_leader_calls, 1);
    T_EQ_STR(a->last_new_leader, "c0");
    T_EQ_INT(next - lop_clock_mono(&a->clock.base), 2 * S); /* renew one retry period later */
    lop_lease_record_t r = stored(&s);
    T_EQ_STR(lop_lease_record_holder(&r), "c0");
    T_EQ_INT(r.lease_duration_seconds, 15);
    T_EQ_INT(r.lease_transitions, 0);
    T_EQ_INT(r.acquire_time_ns, wall);
    T_EQ_INT(r.renew_time_ns, wall);
    lop_lease_call_counts_t n = lop_lease_client_memory_calls(a->client);
    T_EQ_INT(n.get, 1);    /* slow path: GET -> 404 */
    T_EQ_INT(n.create, 1); /* -> create */

    /* Renewals use the fast path (no GET), keep acquireTime, move renewTime. */
    lop_fake_clock_step(&a->clock, 2 * S);
    lop_elector_tick(a->e);
    T_CHECK(lop_elector_is_leader(a->e));
    n = lop_lease_client_memory_calls(a->client);
    T_EQ_INT(n.get, 1);
    T_EQ_INT(n.update, 1);
    lop_lease_record_cleanup(&r);
    r = stored(&s);
    T_EQ_INT(r.acquire_time_ns, wall);
    T_EQ_INT(r.renew_time_ns, wall + 2 * S);
    T_EQ_INT(a->started, 1);
    lop_lease_record_cleanup(&r);
    sim_free(&s);
}

static void test_two_candidates_exactly_one_leader(void)
{
    sim_t s;
    sim_init(&s);
    sim_add(&s, base_config());
    sim_add(&s, base_config());
    sim_add(&s, base_config());
    sim_run(&s, 120 * S, NULL, NULL);
    int who = -1;
    T_EQ_INT(leaders(&s, &who), 1);
    T_EQ_INT(who, 0); /* the first to tick won and kept it: nobody stole a renewed lease */
    T_EQ_INT(s.c[0].started, 1);
    T_EQ_INT(s.c[1].started, 0);
    T_EQ_INT(s.c[2].started, 0);
    T_EQ_STR(s.c[1].last_new_leader, "c0");
    lop_lease_record_t r = stored(&s);
    T_EQ_INT(r.lease_transitions, 0);
    lop_lease_record_cleanup(&r);
    /* Standbys poll: one GET per jittered retry period, in [2 s, 4.4 s). */
    lop_lease_call_counts_t n = lop_lease_client_memory_calls(s.c[1].client);
    T_CHECK(n.get >= 120 / 4 && n.get <= 120 / 2 + 1);
    T_EQ_INT(n.update, 0);
    sim_free(&s);
}

static bool c1_leads(sim_t *s) { return lop_elector_is_leader(s->c[1].e); }

/* The leader dies (stops ticking, no release). The standby takes over only after
 * leaseDurationSeconds counted from when IT saw the record last change, and not much later. */
static void takeover_after_crash(int64_t standby_skew, bool watch)
{
    sim_t s;
    sim_init(&s);
    s.watch = watch;
    lop_elector_config_t cfg = base_config();
    cfg.release_on_cancel = false;
    cand_t *a = sim_add(&s, cfg);
    cand_t *b = sim_add(&s, cfg);
    lop_fake_clock_skew_wall(&b->clock, standby_skew);
    sim_run(&s, 60 * S, NULL, NULL); /* a leads, b watches a's renewals without stealing */
    T_CHECK(lop_elector_is_leader(a->e));
    T_EQ_INT(b->started, 0);

    lop_lease_record_t last = stored(&s);
    int64_t last_write = s.last_write; /* a's last renewal */
    a->live = false;                   /* crash */
    int64_t at = 0;
    T_CHECK(sim_run(&s, 60 * S, c1_leads, &at));
    int64_t waited = at - last_write;
    /* Never before the lease duration as observed locally ... */
    T_CHECK(waited >= 15 * S);
    /* ... and right at expiry: the standby tries when the lease it saw expires (not at its next
     * poll). Without a watch it saw the last renewal at its next poll (< 2.2 retry periods). */
    if (watch)
        T_CHECK(waited <= 15 * S + 50 * MS);
    else
        T_CHECK(waited <= 15 * S + 4400 * MS + 50 * MS);
    lop_lease_record_t r = stored(&s);
    T_EQ_STR(lop_lease_record_holder(&r), "c1");
    T_EQ_INT(r.lease_transitions, last.lease_transitions + 1);
    T_EQ_INT(r.acquire_time_ns, r.renew_time_ns);
    T_EQ_INT(r.acquire_time_ns, lop_clock_wall(&b->clock.base) - (s.elapsed - at)); /* b's wall */
    T_EQ_STR(b->last_new_leader, "c1");
    lop_lease_record_cleanup(&r);
    lop_lease_record_cleanup(&last);
    sim_free(&s);
}

static void test_takeover_after_lease_duration_observed_locally(void)
{
    takeover_after_crash(0, false);
    takeover_after_crash(0, true);
}

/* renewTime in the Lease is an hour old / an hour in the future for the skewed standby: it must
 * neither steal the active lease nor wait forever on the dead one. */
static void test_standby_with_skewed_wall_clock(void)
{
    takeover_after_crash(3600 * S, false);
    takeover_after_crash(-3600 * S, false);
    takeover_after_crash(3600 * S, true);
    takeover_after_crash(-3600 * S, true);
}

static void test_renew_deadline_stops_leading_before_expiry(void)
{
    sim_t s;
    sim_init(&s);
    cand_t *a = sim_add(&s, base_config());
    cand_t *b = sim_add(&s, base_config());
    sim_run(&s, 10 * S, NULL, NULL);
    T_CHECK(lop_elector_is_leader(a->e));
    lop_lease_record_t before = stored(&s);
    int64_t last_renew = s.last_write; /* a's last successful renew */
    /* Every request from the leader now fails (API server unreachable for it alone). */
    lop_lease_client_memory_fail(a->client, LOP_LEASE_OP_ALL, LOP_EAGAIN, -1);

    int64_t a_stopped = -1, b_started = -1;
    for (int64_t t = 0; t <= 40 * S && b_started < 0; t += 50 * MS) {
        sim_tick(&s);
        if (a_stopped < 0 && !lop_elector_is_leader(a->e)) a_stopped = s.elapsed;
        if (b_started < 0 && lop_elector_is_leader(b->e)) b_started = s.elapsed;
        T_CHECK(leaders(&s, NULL) <= 1);
        sim_step(&s, 50 * MS);
    }
    T_CHECK(a_stopped > 0 && b_started > 0);
    T_CHECK(a_stopped < b_started);
    T_CHECK(a_stopped - last_renew >= 10 * S); /* renew deadline from the last success */
    T_CHECK(a_stopped - last_renew <= 10 * S + 50 * MS);
    T_CHECK(b_started - last_renew >= 15 * S); /* lease duration, as b observed it */
    T_EQ_INT(a->stopped_cb, 1);
    T_CHECK(lop_elector_lost(a->e)); /* default on loss: exit; the host exits non-zero */
    T_EQ_INT(lop_elector_tick(a->e), INT64_MAX);
    lop_elector_stats_t st = lop_elector_stats(a->e);
    T_EQ_INT(st.losses, 1);
    lop_lease_record_t r = stored(&s);
    T_EQ_INT(r.lease_transitions, before.lease_transitions + 1);
    /* Stopping after a loss neither calls on_stopped_leading again nor releases b's lease. */
    lop_elector_stop(a->e);
    T_EQ_INT(a->stopped_cb, 1);
    lop_lease_record_t r2 = stored(&s);
    T_EQ_STR(lop_lease_record_holder(&r2), "c1");
    lop_lease_record_cleanup(&r);
    lop_lease_record_cleanup(&r2);
    lop_lease_record_cleanup(&before);
    sim_free(&s);
}

/* is_leader() is judged by the clock: it turns false at the renew deadline even when the elector
 * is not ticked at all (thread stuck in a request). */
static void test_is_leader_turns_false_by_clock(void)
{
    sim_t s;
    sim_init(&s);
    cand_t *a = sim_add(&s, base_config());
    lop_elector_tick(a->e);
    T_CHECK(lop_elector_is_leader(a->e));
    lop_fake_clock_step(&a->clock, 10 * S - 1);
    T_CHECK(lop_elector_is_leader(a->e));
    lop_fake_clock_step(&a->clock, 1);
    T_CHECK(!lop_elector_is_leader(a->e));
    T_EQ_INT(a->stopped_cb, 0); /* the callback comes from the next tick, exactly once */
    lop_elector_tick(a->e);
    T_EQ_INT(a->stopped_cb, 1);
    lop_elector_tick(a->e);
    T_EQ_INT(a->stopped_cb, 1);
    sim_free(&s);
}

static bool c0_leads(sim_t *s) { return lop_elector_is_leader(s->c[0].e); }

static void test_release_on_stop_and_immediate_takeover(void)
{
    sim_t s;
    sim_init(&s);
    s.watch = true;
    cand_t *a = sim_add(&s, base_config());
    cand_t *b = sim_add(&s, base_config());
    sim_run(&s, 7 * S, NULL, NULL);
    T_CHECK(lop_elector_is_leader(a->e));
    lop_lease_record_t before = stored(&s);

    int64_t wall = lop_clock_wall(&a->clock.base);
    lop_elector_stop(a->e);
    a->live = false;
    T_CHECK(!lop_elector_is_leader(a->e));
    T_EQ_INT(a->stopped_cb, 1);
    T_EQ_INT(lop_elector_stats(a->e).releases, 1);
    T_CHECK(!lop_elector_lost(a->e));
    /* The release as client-go writes it. */
    lop_lease_record_t r = stored(&s);
    T_EQ_STR(lop_lease_record_holder(&r), "");
    T_EQ_INT(r.lease_duration_seconds, 1);
    T_EQ_INT(r.acquire_time_ns, wall);
    T_EQ_INT(r.renew_time_ns, wall);
    T_EQ_INT(r.lease_transitions, before.lease_transitions);

    /* The standby was notified by the watch: its next step is due now, without a clock step. */
    int64_t now = lop_clock_mono(&b->clock.base);
    T_CHECK(lop_elector_tick(b->e) > now);
    T_CHECK(lop_elector_is_leader(b->e));
    T_EQ_INT(b->started, 1);
    lop_lease_record_cleanup(&r);
    r = stored(&s);
    T_EQ_STR(lop_lease_record_holder(&r), "c1");
    T_EQ_INT(r.lease_transitions, before.lease_transitions + 1);
    T_EQ_INT(r.lease_duration_seconds, 15);
    /* A second stop is a no-op. */
    lop_elector_stop(a->e);
    T_EQ_INT(a->stopped_cb, 1);
    T_EQ_INT(lop_elector_stats(a->e).releases, 1);
    lop_lease_record_cleanup(&r);
    lop_lease_record_cleanup(&before);
    (void)c0_leads;
    sim_free(&s);
}

/* Without a watch, a released lease is still taken at the standby's next poll (empty holder is
 * never "valid"), not after a lease duration. */
static void test_released_lease_taken_at_next_poll_without_watch(void)
{
    sim_t s;
    sim_init(&s);
    cand_t *a = sim_add(&s, base_config());
    sim_add(&s, base_config());
    sim_run(&s, 5 * S, NULL, NULL);
    lop_elector_stop(a->e);
    a->live = false;
    int64_t t0 = s.elapsed, at = 0;
    T_CHECK(sim_run(&s, 10 * S, c1_leads, &at));
    T_CHECK(at - t0 <= 4400 * MS + 50 * MS);
    sim_free(&s);
}

static void test_update_conflicts(void)
{
    sim_t s;
    sim_init(&s);
    cand_t *a = sim_add(&s, base_config());
    lop_elector_tick(a->e);
    T_CHECK(lop_elector_is_leader(a->e));

    /* Fast-path renew hits 409: re-read (GET) and retry in the same attempt. */
    lop_lease_client_memory_fail(a->client, LOP_LEASE_OP_UPDATE, LOP_ECONFLICT, 1);
    lop_fake_clock_step(&a->clock, 2 * S);
    lop_elector_tick(a->e);
    lop_lease_call_counts_t n = lop_lease_client_memory_calls(a->client);
    T_EQ_INT(n.update, 2);
    T_EQ_INT(n.get, 2);
    T_CHECK(lop_elector_is_leader(a->e));
    lop_lease_record_t r = stored(&s);
    T_EQ_INT(r.lease_transitions, 0); /* still our lease: no transition */
    T_EQ_INT(r.renew_time_ns, lop_clock_wall(&a->clock.base));

    /* Two candidates race for a released lease: the one whose PUT conflicts does not lead. */
    sim_add(&s, base_config());
    sim_add(&s, base_config());
    lop_elector_stop(a->e);
    a->live = false;
    lop_lease_client_memory_fail(s.c[1].client, LOP_LEASE_OP_UPDATE, LOP_ECONFLICT, 1);
    sim_tick(&s);
    T_CHECK(!lop_elector_is_leader(s.c[1].e));
    T_CHECK(lop_elector_is_leader(s.c[2].e));
    /* c1 retries next period and then sees c2's valid lease: it waits. */
    sim_run(&s, 10 * S, NULL, NULL);
    T_CHECK(lop_elector_is_leader(s.c[2].e));
    T_EQ_INT(s.c[1].started, 0);
    lop_lease_record_cleanup(&r);
    sim_free(&s);
}

static void test_two_creators_race_on_missing_lease(void)
{
    sim_t s;
    sim_init(&s);
    cand_t *a = sim_add(&s, base_config());
    cand_t *b = sim_add(&s, base_config());
    /* b fails its create as if a created first between b's GET and POST. */
    lop_lease_client_memory_fail(b->client, LOP_LEASE_OP_CREATE, LOP_EEXIST, 1);
    lop_elector_tick(b->e);
    T_CHECK(!lop_elector_is_leader(b->e));
    lop_elector_tick(a->e);
    T_CHECK(lop_elector_is_leader(a->e));
    sim_run(&s, 10 * S, NULL, NULL);
    T_EQ_INT(leaders(&s, NULL), 1);
    T_CHECK(lop_elector_is_leader(a->e));
    sim_free(&s);
}

static void test_transitions_counting(void)
{
    sim_t s;
    sim_init(&s);
    s.watch = true;
    lop_elector_config_t cfg = base_config();
    cfg.on_loss = LOP_ELECTOR_ON_LOSS_RESTART;
    sim_add(&s, cfg);
    sim_add(&s, cfg);
    int expect_holder = -1;
    /* Alternate forced handovers by release; every holder change counts once. */
    for (int round = 0; round < 6; round++) {
        sim_run(&s, 3 * S, NULL, NULL);
        int who = -1;
        T_EQ_INT(leaders(&s, &who), 1);
        if (expect_holder >= 0) T_EQ_INT(who, expect_holder);
        lop_lease_record_t r = stored(&s);
        T_EQ_INT(r.lease_transitions, round);
        lop_lease_record_cleanup(&r);
        /* The leader steps down (release); it comes back as a fresh standby with the same
         * identity, and the other replica takes over at once through the watch. */
        cand_t *l = &s.c[who];
        l->live = false;
        lop_elector_stop(l->e);
        lop_elector_free(l->e);
        cand_t *o = &s.c[1 - who];
        lop_elector_tick(o->e); /* due at once: the watch announced the empty holder */
        T_CHECK(lop_elector_is_leader(o->e));
        lop_elector_config_t c2 = cfg;
        char id[16];
        snprintf(id, sizeof id, "c%d", who);
        c2.identity = id;
        c2.client = l->client;
        c2.clock = &l->clock.base;
        c2.callbacks = (lop_elector_callbacks_t){cb_started, cb_stopped, cb_new_leader, l};
        c2.jitter_seed = 99;
        l->e = lop_elector_new(&c2, NULL);
        l->live = true;
        expect_holder = 1 - who;
    }
    sim_free(&s);
}

static void test_restart_election_mode(void)
{
    sim_t s;
    sim_init(&s);
    lop_elector_config_t cfg = base_config();
    cfg.on_loss = LOP_ELECTOR_ON_LOSS_RESTART;
    cand_t *a = sim_add(&s, cfg);
    sim_run(&s, 3 * S, NULL, NULL);
    T_CHECK(lop_elector_is_leader(a->e));
    lop_lease_client_memory_fail(a->client, LOP_LEASE_OP_ALL, LOP_EAGAIN, -1);
    sim_run(&s, 12 * S, NULL, NULL);
    T_CHECK(!lop_elector_is_leader(a->e));
    T_EQ_INT(a->stopped_cb, 1);
    T_CHECK(!lop_elector_lost(a->e)); /* still campaigning */
    lop_lease_client_memory_fail(a->client, 0, LOP_OK, 0);
    sim_run(&s, 5 * S, c0_leads, NULL);
    T_CHECK(lop_elector_is_leader(a->e));
    T_EQ_INT(a->started, 2);
    lop_lease_record_t r = stored(&s);
    T_EQ_INT(r.lease_transitions, 0); /* it was still the holder: no transition */
    lop_lease_record_cleanup(&r);
    lop_elector_stats_t st = lop_elector_stats(a->e);
    T_EQ_INT(st.acquisitions, 2);
    T_EQ_INT(st.losses, 1);
    sim_free(&s);
}

/* Watch events of ordinary renewals cost the standby no extra request: it still polls once per
 * jittered retry period, and only an empty holder makes it try at once. */
static void test_watch_renewals_cost_no_extra_requests(void)
{
    sim_t s;
    sim_init(&s);
    s.watch = true;
    cand_t *a = sim_add(&s, base_config());
    cand_t *b = sim_add(&s, base_config());
    sim_run(&s, 60 * S, NULL, NULL);
    T_CHECK(lop_elector_is_leader(a->e));
    T_EQ_INT(b->started, 0);
    lop_lease_call_counts_t n = lop_lease_client_memory_calls(b->client);
    T_CHECK(n.get >= 60 / 4 && n.get <= 60 / 2 + 1);
    /* A deletion drops the observation; the standby recreates the Lease at its next poll. */
    lop_elector_notify_lease_changed(b->e, NULL, NULL);
    int64_t now = lop_clock_mono(&b->clock.base);
    T_CHECK(lop_elector_tick(b->e) > now);
    T_EQ_INT(lop_lease_client_memory_calls(b->client).get, n.get); /* no attempt at once */
    sim_free(&s);
}

/* Someone else overwrites the Lease under a leader: the leader's fast-path renew conflicts, the
 * re-read shows a valid foreign holder, so it never writes over it and stops at the deadline;
 * a release on stop does not clobber the foreign holder either. */
static void intruder_case(bool stop_before_deadline)
{
    sim_t s;
    sim_init(&s);
    cand_t *a = sim_add(&s, base_config());
    lop_elector_tick(a->e);
    T_CHECK(lop_elector_is_leader(a->e));
    lop_lease_client_t *other = lop_lease_client_memory_new(s.store, "intruder");
    lop_lease_record_t r = stored(&s);
    char rv[LOP_LEASE_RV_MAX], rv2[LOP_LEASE_RV_MAX];
    T_EQ_INT(lop_lease_store_peek(s.store, &r, rv), LOP_OK);
    lop_lease_record_set_holder(&r, "intruder");
    lop_err_t err;
    T_EQ_INT(lop_lease_update(other, &r, rv, rv2, &err), LOP_OK);
    long writes = lop_lease_store_writes(s.store);

    if (stop_before_deadline) {
        lop_fake_clock_step(&a->clock, 1 * S);
        lop_elector_stop(a->e); /* still believes it leads: tries to release, sees the intruder */
        T_EQ_INT(a->stopped_cb, 1);
        T_EQ_INT(lop_elector_stats(a->e).releases, 0);
    } else {
        for (int i = 0; i < 60 && !lop_elector_lost(a->e); i++) {
            lop_fake_clock_step(&a->clock, 250 * MS);
            lop_elector_tick(a->e);
        }
        T_CHECK(lop_elector_lost(a->e));
        T_EQ_INT(a->stopped_cb, 1);
    }
    T_EQ_INT(lop_lease_store_writes(s.store), writes); /* never wrote over the intruder */
    lop_lease_record_t now = stored(&s);
    T_EQ_STR(lop_lease_record_holder(&now), "intruder");
    lop_lease_record_cleanup(&now);
    lop_lease_record_cleanup(&r);
    lop_lease_client_free(other);
    sim_free(&s);
}

static void test_foreign_holder_is_never_overwritten(void)
{
    intruder_case(false);
    intruder_case(true);
}

/* The host feeds raw watch events; a MODIFIED event with an empty holder is a release. */
static void test_notify_from_watch_event_json(void)
{
    sim_t s;
    sim_init(&s);
    cand_t *a = sim_add(&s, base_config());
    cand_t *b = sim_add(&s, base_config());
    sim_run(&s, 3 * S, NULL, NULL);
    T_CHECK(lop_elector_is_leader(a->e));
    /* a releases, but b hears of it only through the JSON event below. */
    lop_elector_stop(a->e);
    a->live = false;
    lop_lease_record_t r = stored(&s);
    char rv[LOP_LEASE_RV_MAX];
    T_EQ_INT(lop_lease_store_peek(s.store, &r, rv), LOP_OK);
    json_t *obj = lop_lease_to_json("ns", "lock", rv, &r);
    lop_err_t err;
    T_EQ_INT(lop_elector_notify_lease_event(b->e, "BOOKMARK", obj, &err), LOP_OK); /* ignored */
    T_CHECK(lop_elector_tick(b->e) > lop_clock_mono(&b->clock.base));
    T_CHECK(!lop_elector_is_leader(b->e));
    T_EQ_INT(lop_elector_notify_lease_event(b->e, "MODIFIED", obj, &err), LOP_OK);
    lop_elector_tick(b->e);
    T_CHECK(lop_elector_is_leader(b->e));
    json_decref(obj);
    /* Garbage is refused with a clear error and records nothing. */
    json_t *bad = json_pack("{s:s}", "kind", "Pod");
    T_EQ_INT(lop_elector_notify_lease_event(b->e, "MODIFIED", bad, &err), LOP_EINVAL);
    T_CHECK(strstr(err.message, "kind") != NULL);
    T_EQ_INT(lop_elector_notify_lease_event(b->e, NULL, bad, &err), LOP_EINVAL);
    json_decref(bad);
    lop_lease_record_cleanup(&r);
    sim_free(&s);
}

/* The short durations (lease 2 s, renew 1.5 s, retry 0.25 s), three replicas in
 * restart-election mode: 20 times the leader's requests fail until another replica has taken
 * over. At no instant (10 ms resolution) are two replicas leaders, the old leader always stops
 * before the new one starts, and each handover counts one transition. */
static void test_twenty_forced_handovers_never_overlap(void)
{
    sim_t s;
    sim_init(&s);
    s.watch = true;
    s.step = 10 * MS;
    lop_elector_config_t cfg = base_config();
    cfg.lease_duration_ns = 2 * S;
    cfg.renew_deadline_ns = 1500 * MS;
    cfg.retry_period_ns = 250 * MS;
    cfg.on_loss = LOP_ELECTOR_ON_LOSS_RESTART;
    for (int i = 0; i < 3; i++) sim_add(&s, cfg);
    sim_run(&s, 1 * S, NULL, NULL);
    int who = -1;
    T_EQ_INT(leaders(&s, &who), 1);
    for (int round = 0; round < 20 && who >= 0; round++) {
        cand_t *old = &s.c[who];
        int stops_before = old->stopped_cb;
        lop_lease_client_memory_fail(old->client, LOP_LEASE_OP_ALL, LOP_EAGAIN, -1);
        int next = -1;
        for (int64_t t = 0; t < 10 * S; t += s.step) {
            sim_tick(&s);
            T_CHECK(leaders(&s, NULL) <= 1);
            int w = -1;
            if (leaders(&s, &w) == 1 && w != who) {
                next = w;
                break;
            }
            sim_step(&s, s.step);
            T_CHECK(leaders(&s, NULL) <= 1);
        }
        T_CHECK(next >= 0 && next != who);
        T_EQ_INT(old->stopped_cb, stops_before + 1); /* stopped before the other started */
        T_CHECK(!lop_elector_lost(old->e));          /* restart mode: still campaigning */
        lop_lease_client_memory_fail(old->client, 0, LOP_OK, 0);
        lop_lease_record_t r = stored(&s);
        T_EQ_INT(r.lease_transitions, round + 1);
        lop_lease_record_cleanup(&r);
        who = next;
    }
    long acquisitions = 0;
    for (int i = 0; i < 3; i++) acquisitions += lop_elector_stats(s.c[i].e).acquisitions;
    T_EQ_INT(acquisitions, 21);
    sim_free(&s);
}

int main(void)
{
    lop_log_setup(LOP_LOG_ERROR, LOP_LOG_TEXT);
    T_RUN(test_config_validation);
    T_RUN(test_single_candidate_acquires);
    T_RUN(test_two_candidates_exactly_one_leader);
    T_RUN(test_takeover_after_lease_duration_observed_locally);
    T_RUN(test_standby_with_skewed_wall_clock);
    T_RUN(test_renew_deadline_stops_leading_before_expiry);
    T_RUN(test_is_leader_turns_false_by_clock);
    T_RUN(test_release_on_stop_and_immediate_takeover);
    T_RUN(test_released_lease_taken_at_next_poll_without_watch);
    T_RUN(test_update_conflicts);
    T_RUN(test_two_creators_race_on_missing_lease);
    T_RUN(test_transitions_counting);
    T_RUN(test_restart_election_mode);
    T_RUN(test_watch_renewals_cost_no_extra_requests);
    T_RUN(test_foreign_holder_is_never_overwritten);
    T_RUN(test_notify_from_watch_event_json);
    T_RUN(test_twenty_forced_handovers_never_overlap);
    return T_DONE();
}
