/* SPDX-License-Identifier: Apache-2.0 */
/* recorder.c — the Event recorder: core/v1 Events written through the REST client, repeats
 * aggregated into a PATCH of count/lastTimestamp, floods dropped by a per-object token bucket (see
 * recorder.h). Called from reconcile workers, the leader-events thread and the script reloader
 * (main thread); one mutex guards the cache. Upstream: client-go tools/record/event.go and
 * events_cache.go. */
#include "host/runtime/recorder.h"

#include "host/util/buf.h"
#include "host/util/log.h"

#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CACHE_SIZE 512
/* The aggregation cache is set-associative: a key may sit in any of WAYS slots from its hash, and
 * a new key evicts the least recently seen of them, so one unrelated event landing on the same
 * slot no longer splits a repeated Event in two (client-go keeps an LRU of 4,096 keys). */
#define WAYS                8
#define AGGREGATE_WINDOW_NS (600 * LOP_NS_PER_S)
#define BUCKET_BURST        25.0
#define BUCKET_REFILL_NS    (300 * LOP_NS_PER_S)

typedef struct seen {
    char *key; /* uid|type|reason|message */
    char *ns, *name;
    long count;
    int64_t last_ns;
    char first_ts[32];
} seen_t;

typedef struct bucket {
    char *uid;
    double tokens;
    int64_t at_ns;
} bucket_t;

struct lop_recorder {
    lop_rest_client_t *rest;
    char *component, *host;
    const lop_clock_t *clock;
    pthread_mutex_t mu;
    /* WAYS-way set-associative by key hash; both CACHE_SIZE long, allocated with the first event
     * recorded (~49 KB that an operator which emits no Event never holds). mu. */
    seen_t *seen;
    bucket_t *buckets;
};

lop_recorder_t *lop_recorder_new(lop_rest_client_t *rest, const char *component, const char *host,
                                 const lop_clock_t *clock)
{
    lop_recorder_t *r = lop_xcalloc(1, sizeof *r);
    r->rest = rest;
    r->component = lop_xstrdup(component);
    r->host = lop_xstrdup(host);
    r->clock = clock ? clock : &lop_clock_system;
    pthread_mutex_init(&r->mu, NULL);
    return r;
}

void lop_recorder_free(lop_recorder_t *r)
{
    if (!r) return;
    for (int i = 0; r->seen && i < CACHE_SIZE; i++) {
        free(r->seen[i].key);
        free(r->seen[i].ns);
        free(r->seen[i].name);
        free(r->buckets[i].uid);
    }
    free(r->seen);
    free(r->buckets);
    pthread_mutex_destroy(&r->mu);
    free(r->component);
    free(r->host);
    free(r);
}

static lop_rc_t record(lop_recorder_t *r, const char *obj_json, size_t len, const char *type, const char *reason,
                       const char *message, lop_err_t *err);

static uint32_t hash(const char *s);

/* The slot of key in the aggregation cache (*hit), or the one it should take: an empty slot of
 * its WAYS, else the least recently seen. mu held. */
static seen_t *seen_slot(lop_recorder_t *r, const char *key, bool *hit)
{
    size_t base = hash(key) % CACHE_SIZE;
    seen_t *victim = NULL;
    for (size_t k = 0; k < WAYS; k++) {
        seen_t *s = &r->seen[(base + k) % CACHE_SIZE];
        if (s->key && strcmp(s->key, key) == 0) {
            *hit = true;
            return s;
        }
        if (!victim || (victim->key && (!s->key || s->last_ns < victim->last_ns))) victim = s;
    }
    *hit = false;
    return victim;
}

static uint32_t hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static const char *str(const json_t *o, const char *k)
{
    const char *v = json_string_value(json_object_get(o, k));
    return v ? v : "";
}

/* Take a token from the object's bucket; false when it is empty (event dropped). */
static bool take_token(lop_recorder_t *r, const char *uid, int64_t now)
{
    bucket_t *b = &r->buckets[hash(uid) % CACHE_SIZE];
    if (!b->uid || strcmp(b->uid, uid) != 0) {
        free(b->uid);
        b->uid = lop_xstrdup(uid);
        b->tokens = BUCKET_BURST;
        b->at_ns = now;
    }
    b->tokens += (double)(now - b->at_ns) / (double)BUCKET_REFILL_NS;
    if (b->tokens > BUCKET_BURST) b->tokens = BUCKET_BURST;
    b->at_ns = now;
    if (b->tokens < 1.0) return false;
    b->tokens -= 1.0;
    return true;
}

lop_rc_t lop_recorder_record(lop_recorder_t *r, const char *obj_json, size_t len, const char *type, const char *reason,
                             const char *message_in, lop_err_t *err)
{
    /* Messages come from scripts: make them valid UTF-8 (jansson refuses anything else) and
     * keep them within the 1024 bytes the API allows, cut on a character boundary. */
    lop_buf_t msgbuf = LOP_BUF_INIT, reasonbuf = LOP_BUF_INIT;
    lop_buf_utf8(&msgbuf, message_in, strlen(message_in));
    lop_buf_utf8(&reasonbuf, reason, strlen(reason));
    if (msgbuf.len > 1024) {
        size_t cut = 1021;
        while (cut > 0 && ((unsigned char)msgbuf.data[cut] & 0xC0) == 0x80) cut--;
        msgbuf.len = cut;
        lop_buf_append(&msgbuf, "...", 3);
    }
    const char *message = msgbuf.data ? msgbuf.data : "";
    reason = reasonbuf.data ? reasonbuf.data : "";
    lop_rc_t out = record(r, obj_json, len, type, reason, message, err);
    lop_buf_free(&msgbuf);
    lop_buf_free(&reasonbuf);
    return out;
}

static lop_rc_t record(lop_recorder_t *r, const char *obj_json, size_t len, const char *type, const char *reason,
                       const char *message, lop_err_t *err)
{
    json_error_t jerr;
    json_t *obj = json_loadb(obj_json, len, 0, &jerr);
    if (!json_is_object(obj)) {
        json_decref(obj);
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "event: the involved object is not a JSON object");
    }
    json_t *meta = json_object_get(obj, "metadata");
    const char *obj_ns = str(meta, "namespace"), *obj_name = str(meta, "name"), *uid = str(meta, "uid");
    const char *ev_ns = *obj_ns ? obj_ns : "default";
    if (!*obj_name) {
        json_decref(obj);
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "event: the involved object has no metadata.name");
    }
    int64_t now = lop_clock_wall(r->clock);
    char ts[32];
    lop_time_format(now, ts, sizeof ts);

    lop_buf_t key = LOP_BUF_INIT;
    lop_buf_printf(&key, "%s|%s/%s|%s|%s|%s", uid, obj_ns, obj_name, type, reason, message);
    pthread_mutex_lock(&r->mu);
    if (!r->seen) {
        r->seen = lop_xcalloc(CACHE_SIZE, sizeof *r->seen);
        r->buckets = lop_xcalloc(CACHE_SIZE, sizeof *r->buckets);
    }
    if (!take_token(r, *uid ? uid : key.data, now)) {
        pthread_mutex_unlock(&r->mu);
        lop_log(LOP_LOG_DEBUG, "event dropped by the per-object rate limit", "object", obj_name, "reason", reason,
                NULL);
        lop_buf_free(&key);
        json_decref(obj);
        return LOP_OK;
    }
    bool hit;
    seen_t *s = seen_slot(r, key.data, &hit);
    bool repeat = hit && now - s->last_ns < AGGREGATE_WINDOW_NS;
    char name[300], first[32];
    long count = 1;
    if (repeat) {
        count = ++s->count;
        snprintf(name, sizeof name, "%s", s->name);
        snprintf(first, sizeof first, "%s", s->first_ts);
        s->last_ns = now;
    } else {
        snprintf(name, sizeof name, "%s.%" PRIx64, obj_name, (uint64_t)now);
        snprintf(first, sizeof first, "%s", ts);
        free(s->key);
        free(s->ns);
        free(s->name);
        s->key = lop_xstrdup(key.data);
        s->ns = lop_xstrdup(ev_ns);
        s->name = lop_xstrdup(name);
        s->count = 1;
        s->last_ns = now;
        snprintf(s->first_ts, sizeof s->first_ts, "%s", ts);
    }
    pthread_mutex_unlock(&r->mu);
    lop_buf_free(&key);

    lop_rc_t rc = LOP_OK;
    lop_buf_t path = LOP_BUF_INIT;
    if (repeat) {
        json_t *patch = json_pack("{s:I,s:s,s:s}", "count", (json_int_t)count, "lastTimestamp", ts, "message", message);
        char *body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
        if (!body) {
            json_decref(patch);
            rc = lop_err_set(err, LOP_EINVAL, 0, NULL, "event: cannot encode the patch");
            goto out;
        }
        lop_buf_printf(&path, "/api/v1/namespaces/%s/events/%s", ev_ns, name);
        rc = lop_rest_do(r->rest, "PATCH", path.data, "application/merge-patch+json", body, strlen(body), NULL, err);
        free(body);
        json_decref(patch);
        if (rc != LOP_ENOTFOUND) goto out;
        lop_buf_reset(&path);
    }
    {
        json_t *ev = json_pack(
            "{s:s,s:s,s:{s:s,s:s},s:{s:s,s:s,s:s,s:s,s:s,s:s},s:s,s:s,s:s,s:{s:s,s:s},s:s,s:s,s:I,s:s,s:s}", "kind",
            "Event", "apiVersion", "v1", "metadata", "name", name, "namespace", ev_ns, "involvedObject", "apiVersion",
            str(obj, "apiVersion"), "kind", str(obj, "kind"), "namespace", obj_ns, "name", obj_name, "uid", uid,
            "resourceVersion", str(meta, "resourceVersion"), "reason", reason, "message", message, "type", type,
            "source", "component", r->component, "host", r->host, "firstTimestamp", first, "lastTimestamp", ts, "count",
            (json_int_t)count, "reportingComponent", r->component, "reportingInstance", r->host);
        if (!ev) {
            rc = lop_err_set(err, LOP_EINVAL, 0, NULL, "event: the involved object's metadata is not valid UTF-8");
            goto out;
        }
        if (!*obj_ns) json_object_del(json_object_get(ev, "involvedObject"), "namespace");
        char *body = json_dumps(ev, JSON_COMPACT);
        lop_buf_printf(&path, "/api/v1/namespaces/%s/events", ev_ns);
        rc = lop_rest_do(r->rest, "POST", path.data, "application/json", body, strlen(body), NULL, err);
        if (rc == LOP_EEXIST) rc = LOP_OK; /* not retried, as client-go */
        free(body);
        json_decref(ev);
    }
out:
    if (rc != LOP_OK)
        lop_log(LOP_LOG_WARN, "event not written", "object", obj_name, "reason", reason, "error",
                err ? err->message : "", NULL);
    lop_buf_free(&path);
    json_decref(obj);
    return rc;
}
