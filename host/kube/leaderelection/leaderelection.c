/* SPDX-License-Identifier: Apache-2.0 */
/* leaderelection.c — the Lease leader elector (see leaderelection.h for the algorithm). */
#include "host/kube/leaderelection/leaderelection.h"

#include "host/util/buf.h"
#include "host/util/log.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#define JITTER_FACTOR    1.2
#define RELEASE_ATTEMPTS 3

struct lop_elector {
    /* configuration (immutable after new) */
    char *identity;
    char *name;
    lop_lease_client_t *client;
    const lop_clock_t *clock;
    int64_t lease_ns, renew_ns, retry_ns;
    int32_t lease_s;
    bool release_on_cancel;
    lop_elector_on_loss_t on_loss;
    lop_elector_callbacks_t cb;
    uint64_t rng;

    /* Leadership changes and their callbacks happen under cb_mu (taken before mu), so
     * on_started_leading / on_stopped_leading are never concurrent and always alternate. */
    pthread_mutex_t cb_mu;

    /* shared with other threads: under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool leading;
    int64_t renew_deadline; /* mono ns; meaningful while leading */
    bool lost, stopping, stopped, started;
    bool poke;    /* a notification asked for an attempt now */
    bool pending; /* a watch observation waits to be applied by the tick thread */
    bool pending_deleted;
    lop_lease_record_t pending_rec;
    char pending_rv[LOP_LEASE_RV_MAX];
    char *reported_leader;
    lop_elector_stats_t stats;
    long seen_losses; /* stats.losses the ticking thread has acted on */
    pthread_t thread;
    pthread_t watchdog;
    bool watchdog_started;

    /* owned by the ticking thread */
    bool have_observed;
    lop_lease_record_t observed;
    int64_t observed_at; /* mono ns when the observed record last changed */
    char rv[LOP_LEASE_RV_MAX];
    int64_t next_attempt;
};

/* ---- configuration ---- */

void lop_elector_config_defaults(lop_elector_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->lease_duration_ns = 15 * LOP_NS_PER_S;
    cfg->renew_deadline_ns = 10 * LOP_NS_PER_S;
    cfg->retry_period_ns = 2 * LOP_NS_PER_S;
    cfg->release_on_cancel = true;
    cfg->on_loss = LOP_ELECTOR_ON_LOSS_EXIT;
}

static const char *dur_str(int64_t ns, char *buf, size_t len)
{
    if (ns % LOP_NS_PER_S == 0)
        snprintf(buf, len, "%llds", (long long)(ns / LOP_NS_PER_S));
    else if (ns % LOP_NS_PER_MS == 0)
        snprintf(buf, len, "%lldms", (long long)(ns / LOP_NS_PER_MS));
    else
        snprintf(buf, len, "%lldns", (long long)ns);
    return buf;
}

lop_rc_t lop_elector_config_validate(const lop_elector_config_t *cfg, lop_err_t *err)
{
    char a[32], b[32];
    if (!cfg) return lop_err_set(err, LOP_EINVAL, 0, NULL, "leader election: no configuration");
    if (!cfg->identity || !*cfg->identity)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "leader election: identity must not be empty");
    if (!cfg->client) return lop_err_set(err, LOP_EINVAL, 0, NULL, "leader election: no lease client");
    if (cfg->retry_period_ns <= 0)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "leader election: retry period (%s) must be positive",
                           dur_str(cfg->retry_period_ns, a, sizeof a));
    if (cfg->lease_duration_ns < LOP_NS_PER_S)
        return lop_err_set(err, LOP_EINVAL, 0, NULL,
                           "leader election: lease duration (%s) must be at least 1s (it is written "
                           "in whole seconds)",
                           dur_str(cfg->lease_duration_ns, a, sizeof a));
    if (cfg->lease_duration_ns <= cfg->renew_deadline_ns)
        return lop_err_set(err, LOP_EINVAL, 0, NULL,
                           "leader election: lease duration (%s) must be greater than renew deadline (%s)",
                           dur_str(cfg->lease_duration_ns, a, sizeof a), dur_str(cfg->renew_deadline_ns, b, sizeof b));
    /* The Lease carries whole seconds, which is what other replicas wait for. */
    int64_t written = cfg->lease_duration_ns / LOP_NS_PER_S * LOP_NS_PER_S;
    if (written <= cfg->renew_deadline_ns)
        return lop_err_set(err, LOP_EINVAL, 0, NULL,
                           "leader election: lease duration written to the Lease (%s, whole seconds) "
                           "must be greater than renew deadline (%s)",
                           dur_str(written, a, sizeof a), dur_str(cfg->renew_deadline_ns, b, sizeof b));
    if ((double)cfg->renew_deadline_ns <= JITTER_FACTOR * (double)cfg->retry_period_ns)
        return lop_err_set(err, LOP_EINVAL, 0, NULL,
                           "leader election: renew deadline (%s) must be greater than retry period "
                           "(%s) x %.1f",
                           dur_str(cfg->renew_deadline_ns, a, sizeof a), dur_str(cfg->retry_period_ns, b, sizeof b),
                           JITTER_FACTOR);
    if (cfg->lease_duration_ns / LOP_NS_PER_S > INT32_MAX)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "leader election: lease duration too long");
    if (cfg->on_loss != LOP_ELECTOR_ON_LOSS_EXIT && cfg->on_loss != LOP_ELECTOR_ON_LOSS_RESTART)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "leader election: unknown on-loss mode %d", (int)cfg->on_loss);
    return LOP_OK;
}

/* ---- randomness ---- */

static uint64_t random_u64(void)
{
    uint64_t v = 0;
    if (getrandom(&v, sizeof v, GRND_NONBLOCK) != (ssize_t)sizeof v) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        v = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid() << 32 ^ (uint64_t)ts.tv_sec;
    }
    return v ? v : 0x2545F4914F6CDD1Dull;
}

static double rand01(lop_elector_t *e)
{
    /* xorshift64* */
    uint64_t x = e->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    e->rng = x;
    return (double)((x * 0x2545F4914F6CDD1Dull) >> 11) / 9007199254740992.0;
}

/* client-go's wait.Jitter(retry, 1.2): retry + rand[0,1) × 1.2 × retry. */
static int64_t jittered_retry(lop_elector_t *e)
{
    return e->retry_ns + (int64_t)(rand01(e) * JITTER_FACTOR * (double)e->retry_ns);
}

char *lop_elector_identity_new(void)
{
    char host[256];
    if (gethostname(host, sizeof host) != 0 || !host[0]) snprintf(host, sizeof host, "unknown");
    host[sizeof host - 1] = '\0';
    lop_buf_t b = LOP_BUF_INIT;
    lop_buf_printf(&b, "%s_%016llx", host, (unsigned long long)random_u64());
    return lop_buf_steal(&b);
}

/* ---- lifecycle ---- */

lop_elector_t *lop_elector_new(const lop_elector_config_t *cfg, lop_err_t *err)
{
    if (lop_elector_config_validate(cfg, err) != LOP_OK) return NULL;
    lop_elector_t *e = lop_xcalloc(1, sizeof *e);
    e->identity = lop_xstrdup(cfg->identity);
    e->name = lop_xstrdup(cfg->name ? cfg->name : cfg->client->description);
    e->client = cfg->client;
    e->clock = cfg->clock ? cfg->clock : &lop_clock_system;
    e->lease_ns = cfg->lease_duration_ns;
    e->lease_s = (int32_t)(cfg->lease_duration_ns / LOP_NS_PER_S);
    e->renew_ns = cfg->renew_deadline_ns;
    e->retry_ns = cfg->retry_period_ns;
    e->release_on_cancel = cfg->release_on_cancel;
    e->on_loss = cfg->on_loss;
    e->cb = cfg->callbacks;
    e->rng = cfg->jitter_seed ? cfg->jitter_seed : random_u64();
    pthread_mutex_init(&e->cb_mu, NULL);
    pthread_mutex_init(&e->mu, NULL);
    lop_cond_init(&e->cv);
    e->reported_leader = lop_xstrdup("");
    e->next_attempt = lop_clock_mono(e->clock); /* the first tick tries at once */
    return e;
}

void lop_elector_free(lop_elector_t *e)
{
    if (!e) return;
    lop_elector_stop(e);
    lop_lease_record_cleanup(&e->observed);
    lop_lease_record_cleanup(&e->pending_rec);
    pthread_cond_destroy(&e->cv);
    pthread_mutex_destroy(&e->mu);
    pthread_mutex_destroy(&e->cb_mu);
    free(e->reported_leader);
    free(e->identity);
    free(e->name);
    free(e);
}

/* ---- queries ---- */

bool lop_elector_is_leader(lop_elector_t *e) { return lop_elector_leading_left_ns(e) > 0; }

int64_t lop_elector_leading_left_ns(lop_elector_t *e)
{
    pthread_mutex_lock(&e->mu);
    int64_t left = e->leading ? e->renew_deadline - lop_clock_mono(e->clock) : 0;
    pthread_mutex_unlock(&e->mu);
    return left > 0 ? left : 0;
}

bool lop_elector_lost(lop_elector_t *e)
{
    pthread_mutex_lock(&e->mu);
    bool r = e->lost;
    pthread_mutex_unlock(&e->mu);
    return r;
}

const char *lop_elector_identity(const lop_elector_t *e) { return e->identity; }

char *lop_elector_leader(lop_elector_t *e)
{
    pthread_mutex_lock(&e->mu);
    char *r = lop_xstrdup(e->reported_leader);
    pthread_mutex_unlock(&e->mu);
    return r;
}

lop_elector_stats_t lop_elector_stats(lop_elector_t *e)
{
    pthread_mutex_lock(&e->mu);
    lop_elector_stats_t s = e->stats;
    pthread_mutex_unlock(&e->mu);
    return s;
}

/* ---- observation (ticking thread) ---- */

static bool holder_is_self(const lop_elector_t *e, const lop_lease_record_t *r)
{
    return strcmp(lop_lease_record_holder(r), e->identity) == 0;
}

/* client-go's maybeReportTransition: tell the host when the observed holder changes. */
static void report_transition(lop_elector_t *e)
{
    const char *holder = lop_lease_record_holder(&e->observed);
    pthread_mutex_lock(&e->mu);
    bool changed = strcmp(holder, e->reported_leader) != 0;
    if (changed) {
        free(e->reported_leader);
        e->reported_leader = lop_xstrdup(holder);
    }
    pthread_mutex_unlock(&e->mu);
    if (!changed) return;
    lop_log(LOP_LOG_INFO, "leader election: new leader observed", "lease", e->name, "leader", holder, "identity",
            e->identity, NULL);
    if (e->cb.on_new_leader) e->cb.on_new_leader(e->cb.ud, holder);
}

/* Record what the Lease holds now. A change restarts the local expiry timer at `now`. */
static void observe(lop_elector_t *e, const lop_lease_record_t *rec, const char *rv, int64_t now)
{
    if (!e->have_observed || !lop_lease_record_equal(&e->observed, rec)) {
        lop_lease_record_copy(&e->observed, rec);
        e->observed_at = now;
        e->have_observed = true;
    }
    snprintf(e->rv, sizeof e->rv, "%s", rv ? rv : "");
    report_transition(e);
}

static void forget_observation(lop_elector_t *e)
{
    e->have_observed = false;
    e->rv[0] = '\0';
    lop_lease_record_cleanup(&e->observed);
}

/* Valid = the observed record changed less than its leaseDurationSeconds ago, on OUR clock. */
static bool observed_valid(const lop_elector_t *e, int64_t now)
{
    return e->have_observed && e->observed_at + (int64_t)e->observed.lease_duration_seconds * LOP_NS_PER_S > now;
}

/* ---- one acquire/renew attempt (client-go's tryAcquireOrRenew) ---- */

static bool try_acquire_or_renew(lop_elector_t *e)
{
    lop_err_t err;
    char new_rv[LOP_LEASE_RV_MAX];
    int64_t wall = lop_clock_wall(e->clock);
    lop_lease_record_t rec = LOP_LEASE_RECORD_INIT;
    lop_lease_record_set_holder(&rec, e->identity);
    rec.lease_duration_seconds = e->lease_s;
    rec.acquire_time_ns = wall;
    rec.renew_time_ns = wall;
    bool ok = false;

    /* Fast path: we hold a valid lease; PUT from the cached object. */
    if (e->have_observed && holder_is_self(e, &e->observed) && e->rv[0] &&
        observed_valid(e, lop_clock_mono(e->clock))) {
        rec.acquire_time_ns = e->observed.acquire_time_ns;
        rec.lease_transitions = e->observed.lease_transitions;
        lop_err_clear(&err);
        lop_rc_t rc = lop_lease_update(e->client, &rec, e->rv, new_rv, &err);
        if (rc == LOP_OK) {
            observe(e, &rec, new_rv, lop_clock_mono(e->clock));
            ok = true;
            goto out;
        }
        lop_log(LOP_LOG_WARN, "leader election: renew failed, re-reading the lease", "lease", e->name, "rc",
                lop_rc_str(rc), "error", err.message, NULL);
        rec.acquire_time_ns = wall;
        rec.lease_transitions = 0;
    }

    /* Slow path: GET; create when missing. */
    lop_lease_record_t cur = LOP_LEASE_RECORD_INIT;
    char cur_rv[LOP_LEASE_RV_MAX];
    lop_err_clear(&err);
    lop_rc_t rc = lop_lease_get(e->client, &cur, cur_rv, &err);
    if (rc == LOP_ENOTFOUND) {
        forget_observation(e);
        lop_err_clear(&err);
        rc = lop_lease_create(e->client, &rec, new_rv, &err);
        if (rc == LOP_OK) {
            observe(e, &rec, new_rv, lop_clock_mono(e->clock));
            ok = true;
        } else {
            lop_log(LOP_LOG_INFO, "leader election: lease create failed", "lease", e->name, "rc", lop_rc_str(rc),
                    "error", err.message, NULL);
        }
        goto out_cur;
    }
    if (rc != LOP_OK) {
        lop_log(LOP_LOG_WARN, "leader election: lease get failed", "lease", e->name, "rc", lop_rc_str(rc), "error",
                err.message, NULL);
        goto out_cur;
    }
    int64_t now = lop_clock_mono(e->clock);
    observe(e, &cur, cur_rv, now);

    /* Someone else holds a lease that is still valid by our own clock: wait. */
    if (lop_lease_record_holder(&cur)[0] && !holder_is_self(e, &cur) && observed_valid(e, now)) goto out_cur;

    if (holder_is_self(e, &cur)) {
        rec.acquire_time_ns = cur.acquire_time_ns;
        rec.lease_transitions = cur.lease_transitions;
    } else {
        rec.lease_transitions = cur.lease_transitions + 1;
    }
    lop_err_clear(&err);
    rc = lop_lease_update(e->client, &rec, cur_rv, new_rv, &err);
    if (rc == LOP_OK) {
        observe(e, &rec, new_rv, lop_clock_mono(e->clock));
        ok = true;
    } else {
        lop_log(rc == LOP_ECONFLICT ? LOP_LOG_DEBUG : LOP_LOG_WARN, "leader election: lease update failed", "lease",
                e->name, "rc", lop_rc_str(rc), "error", err.message, NULL);
    }
out_cur:
    lop_lease_record_cleanup(&cur);
out:
    lop_lease_record_cleanup(&rec);
    return ok;
}

/* ---- state changes ---- */

/* Become leader until `deadline` unless it has already passed. Returns true when it did. */
static bool start_leading(lop_elector_t *e, int64_t deadline)
{
    pthread_mutex_lock(&e->cb_mu);
    pthread_mutex_lock(&e->mu);
    bool ok = !e->stopping && !e->stopped && lop_clock_mono(e->clock) < deadline;
    if (ok) {
        e->leading = true;
        e->renew_deadline = deadline;
        e->stats.acquisitions++;
        pthread_cond_broadcast(&e->cv); /* the watchdog now waits for this deadline */
    }
    pthread_mutex_unlock(&e->mu);
    if (ok) {
        char tr[16];
        snprintf(tr, sizeof tr, "%d", (int)e->observed.lease_transitions);
        lop_log(LOP_LOG_INFO, "leader election: acquired lease, leading", "lease", e->name, "identity", e->identity,
                "leaseTransitions", tr, NULL);
        if (e->cb.on_started_leading) e->cb.on_started_leading(e->cb.ud);
    }
    pthread_mutex_unlock(&e->cb_mu);
    return ok;
}

/*
 * If leading and the renew deadline has passed (is_leader() already says false by the clock),
 * make the loss final and call on_stopped_leading. Called by the ticking thread and by the
 * watchdog (which acts even while the ticking thread is stuck in a request); only the first call
 * acts. Returns true when it acted.
 */
static bool lose_if_expired(lop_elector_t *e)
{
    pthread_mutex_lock(&e->cb_mu);
    pthread_mutex_lock(&e->mu);
    bool act = e->leading && lop_clock_mono(e->clock) >= e->renew_deadline;
    if (act) {
        e->leading = false;
        e->stats.losses++;
        if (e->on_loss == LOP_ELECTOR_ON_LOSS_EXIT) e->lost = true;
        pthread_cond_broadcast(&e->cv);
    }
    pthread_mutex_unlock(&e->mu);
    if (act) {
        lop_log(LOP_LOG_ERROR, "leader election: lease lost (renew deadline exceeded), stopped leading", "lease",
                e->name, "identity", e->identity, "onLoss",
                e->on_loss == LOP_ELECTOR_ON_LOSS_EXIT ? "exit" : "restart-election", NULL);
        if (e->cb.on_stopped_leading) e->cb.on_stopped_leading(e->cb.ud);
    }
    pthread_mutex_unlock(&e->cb_mu);
    return act;
}

/* Apply a watch observation queued by notify. */
static void apply_pending(lop_elector_t *e, int64_t now)
{
    pthread_mutex_lock(&e->mu);
    bool pending = e->pending, deleted = e->pending_deleted;
    lop_lease_record_t rec = e->pending_rec;
    char rv[LOP_LEASE_RV_MAX];
    memcpy(rv, e->pending_rv, sizeof rv);
    memset(&e->pending_rec, 0, sizeof e->pending_rec);
    e->pending = false;
    bool leading = e->leading;
    pthread_mutex_unlock(&e->mu);
    if (pending && !leading) {
        if (deleted)
            forget_observation(e);
        else
            observe(e, &rec, rv, now);
    }
    lop_lease_record_cleanup(&rec);
}

/* The next time a standby should try: a jittered retry period, or the moment the lease it
 * observes expires by its clock if that comes first. */
static int64_t standby_next(lop_elector_t *e, int64_t after)
{
    int64_t next = after + jittered_retry(e);
    /* Beyond client-go: a standby knows, by its own clock, when the lease it observes will expire;
     * it tries right then instead of at its next poll (up to 2.2 retry periods later). */
    if (e->have_observed && lop_lease_record_holder(&e->observed)[0] && !holder_is_self(e, &e->observed)) {
        int64_t expiry = e->observed_at + (int64_t)e->observed.lease_duration_seconds * LOP_NS_PER_S;
        if (expiry > after && expiry < next) next = expiry;
    }
    return next;
}

int64_t lop_elector_tick(lop_elector_t *e)
{
    int64_t now = lop_clock_mono(e->clock);
    lose_if_expired(e);
    pthread_mutex_lock(&e->mu);
    if (e->stopped || e->lost) {
        pthread_mutex_unlock(&e->mu);
        return INT64_MAX;
    }
    bool poke = e->poke;
    e->poke = false;
    bool leading = e->leading;
    int64_t deadline = e->renew_deadline;
    bool lost_since = e->stats.losses != e->seen_losses;
    e->seen_losses = e->stats.losses;
    pthread_mutex_unlock(&e->mu);

    apply_pending(e, now);
    if (lost_since) e->next_attempt = now; /* restart-election: campaign again at once */
    if (leading) poke = false;             /* watch pokes are for standbys */
    if (!poke && now < e->next_attempt) return leading && deadline < e->next_attempt ? deadline : e->next_attempt;

    int64_t start = now;
    pthread_mutex_lock(&e->mu);
    e->stats.attempts++;
    pthread_mutex_unlock(&e->mu);
    bool ok = try_acquire_or_renew(e);
    int64_t after = lop_clock_mono(e->clock);

    /* The state may have changed during the attempt (the watchdog may have ended leadership). */
    lose_if_expired(e);
    pthread_mutex_lock(&e->mu);
    bool still = e->leading, lost = e->lost;
    if (still && ok) e->renew_deadline = start + e->renew_ns;
    deadline = e->renew_deadline;
    pthread_mutex_unlock(&e->mu);
    if (lost) return INT64_MAX;
    if (still) {
        e->next_attempt = after + e->retry_ns;
        return deadline < e->next_attempt ? deadline : e->next_attempt;
    }
    if (leading) { /* lost during this attempt (restart-election): campaign again at once */
        pthread_mutex_lock(&e->mu);
        e->seen_losses = e->stats.losses;
        pthread_mutex_unlock(&e->mu);
        e->next_attempt = after;
        return after;
    }
    if (ok && start_leading(e, start + e->renew_ns)) {
        e->next_attempt = after + e->retry_ns;
        int64_t d = start + e->renew_ns;
        return d < e->next_attempt ? d : e->next_attempt;
    }
    /* Written but too late to lead on it (the attempt outlasted a renew deadline): retry now. */
    e->next_attempt = ok ? after : standby_next(e, after);
    return e->next_attempt;
}

/* ---- notifications ---- */

void lop_elector_notify_lease_changed(lop_elector_t *e, const lop_lease_record_t *rec, const char *rv)
{
    pthread_mutex_lock(&e->mu);
    lop_lease_record_cleanup(&e->pending_rec);
    e->pending = true;
    e->pending_deleted = rec == NULL;
    if (rec) lop_lease_record_copy(&e->pending_rec, rec);
    snprintf(e->pending_rv, sizeof e->pending_rv, "%s", rv ? rv : "");
    if (rec && !lop_lease_record_holder(rec)[0]) e->poke = true;
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

lop_rc_t lop_elector_notify_lease_event(lop_elector_t *e, const char *type, const json_t *obj, lop_err_t *err)
{
    if (!type) return lop_err_set(err, LOP_EINVAL, 0, NULL, "lease watch event without a type");
    bool deleted = strcmp(type, "DELETED") == 0;
    if (!deleted && strcmp(type, "ADDED") != 0 && strcmp(type, "MODIFIED") != 0) return LOP_OK;
    lop_lease_record_t rec = LOP_LEASE_RECORD_INIT;
    char rv[LOP_LEASE_RV_MAX];
    lop_rc_t rc = lop_lease_from_json(obj, &rec, rv, err);
    if (rc == LOP_OK) lop_elector_notify_lease_changed(e, deleted ? NULL : &rec, rv);
    lop_lease_record_cleanup(&rec);
    return rc;
}

/* ---- thread ---- */

static void *elector_main(void *arg)
{
    lop_elector_t *e = arg;
    lop_log(LOP_LOG_INFO, "leader election: campaigning", "lease", e->name, "identity", e->identity, NULL);
    for (;;) {
        int64_t next = lop_elector_tick(e);
        pthread_mutex_lock(&e->mu);
        while (!e->stopping && !e->lost && !e->poke && !e->pending && lop_clock_mono(e->clock) < next)
            lop_clock_wait_until(e->clock, &e->cv, &e->mu, next);
        bool quit = e->stopping || e->lost;
        pthread_mutex_unlock(&e->mu);
        if (quit) break;
    }
    return NULL;
}

/* Ends leadership at the renew deadline even while the elector thread is blocked in a request,
 * so on_stopped_leading is timely, not only is_leader(). */
static void *watchdog_main(void *arg)
{
    lop_elector_t *e = arg;
    pthread_mutex_lock(&e->mu);
    while (!e->stopping) {
        bool due = e->leading && lop_clock_mono(e->clock) >= e->renew_deadline;
        if (due) {
            pthread_mutex_unlock(&e->mu);
            lose_if_expired(e);
            pthread_mutex_lock(&e->mu);
            pthread_cond_broadcast(&e->cv); /* wake the elector thread (exit mode: it quits) */
            continue;
        }
        lop_clock_wait_until(e->clock, &e->cv, &e->mu, e->leading ? e->renew_deadline : INT64_MAX);
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

lop_rc_t lop_elector_start(lop_elector_t *e)
{
    pthread_mutex_lock(&e->mu);
    if (e->started || e->stopped || e->stopping) {
        pthread_mutex_unlock(&e->mu);
        return LOP_EINVAL;
    }
    e->started = true;
    pthread_mutex_unlock(&e->mu);
    if (pthread_create(&e->thread, NULL, elector_main, e) != 0) {
        pthread_mutex_lock(&e->mu);
        e->started = false;
        pthread_mutex_unlock(&e->mu);
        return LOP_ERR;
    }
    if (pthread_create(&e->watchdog, NULL, watchdog_main, e) == 0) {
        e->watchdog_started = true;
    } else {
        lop_log(LOP_LOG_WARN, "leader election: no watchdog thread; leadership ends at the next step", "lease", e->name,
                NULL);
    }
    return LOP_OK;
}

/* client-go's release(): empty holder, 1 s duration, transitions unchanged; re-read on conflict. */
static void release(lop_elector_t *e)
{
    if (!e->have_observed || !holder_is_self(e, &e->observed) || !e->rv[0]) return;
    lop_lease_record_t rec = LOP_LEASE_RECORD_INIT;
    lop_lease_record_copy(&rec, &e->observed);
    lop_lease_record_set_holder(&rec, "");
    int64_t wall = lop_clock_wall(e->clock);
    rec.lease_duration_seconds = 1;
    rec.acquire_time_ns = rec.renew_time_ns = wall;
    char rv[LOP_LEASE_RV_MAX], new_rv[LOP_LEASE_RV_MAX];
    snprintf(rv, sizeof rv, "%s", e->rv);
    for (int i = 0; i < RELEASE_ATTEMPTS; i++) {
        lop_err_t err;
        lop_err_clear(&err);
        lop_rc_t rc = lop_lease_update(e->client, &rec, rv, new_rv, &err);
        if (rc == LOP_OK) {
            observe(e, &rec, new_rv, lop_clock_mono(e->clock));
            pthread_mutex_lock(&e->mu);
            e->stats.releases++;
            pthread_mutex_unlock(&e->mu);
            lop_log(LOP_LOG_INFO, "leader election: released lease", "lease", e->name, "identity", e->identity, NULL);
            break;
        }
        lop_log(LOP_LOG_WARN, "leader election: release failed", "lease", e->name, "rc", lop_rc_str(rc), "error",
                err.message, NULL);
        if (rc != LOP_ECONFLICT) break;
        /* Someone wrote since our last renew: release only if it is still ours. */
        lop_lease_record_t cur = LOP_LEASE_RECORD_INIT;
        rc = lop_lease_get(e->client, &cur, rv, &err);
        bool mine = rc == LOP_OK && holder_is_self(e, &cur);
        if (mine) rec.lease_transitions = cur.lease_transitions;
        lop_lease_record_cleanup(&cur);
        if (!mine) break;
    }
    lop_lease_record_cleanup(&rec);
}

void lop_elector_stop(lop_elector_t *e)
{
    pthread_mutex_lock(&e->mu);
    if (e->stopped) {
        pthread_mutex_unlock(&e->mu);
        return;
    }
    e->stopping = true;
    bool started = e->started;
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
    if (started) pthread_join(e->thread, NULL);
    if (e->watchdog_started) pthread_join(e->watchdog, NULL);
    e->watchdog_started = false;

    pthread_mutex_lock(&e->cb_mu);
    pthread_mutex_lock(&e->mu);
    bool was_leading = e->leading;
    bool still_valid = was_leading && lop_clock_mono(e->clock) < e->renew_deadline;
    e->leading = false;
    e->stopped = true;
    pthread_mutex_unlock(&e->mu);
    if (was_leading) {
        lop_log(LOP_LOG_INFO, "leader election: stopped leading (shutdown)", "lease", e->name, "identity", e->identity,
                NULL);
        if (e->cb.on_stopped_leading) e->cb.on_stopped_leading(e->cb.ud);
    }
    pthread_mutex_unlock(&e->cb_mu);
    if (was_leading && e->release_on_cancel && still_valid) release(e);
}
