/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for host/kube/object's scanner-filled fields (escapes, repeated keys, integer
 * limits), the lazily built metadata tree (lop_obj_metadata: managedFields never in it, one tree
 * shared by concurrent first callers), and the workqueue's counted wake-ups (every added item
 * reaches a blocked worker). */
#include "host/codec/jsonscan.h"
#include "host/kube/cache/object.h"
#include "host/kube/workqueue/workqueue.h"
#include "host/util/buf.h"
#include "t.h"

#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

static lop_obj_t *mk(const char *json, int flags)
{
    lop_obj_t *o = NULL;
    lop_err_t err;
    lop_rc_t rc = lop_obj_new(json, strlen(json), flags, &o, &err);
    if (rc != LOP_OK) fprintf(stderr, "lop_obj_new: %s\n", err.message);
    T_EQ_INT(rc, LOP_OK);
    return o;
}

static void test_escapes_and_repeated_keys(void)
{
    lop_obj_t *o = mk("{\"metadata\":{\"name\":\"a\\\"b\\u00e9\\ud83d\\ude00\",\"name\":\"n\\/2\","
                      "\"labels\":{\"k\\u0041\":\"v\\n\",\"x\":\"1\",\"x\":\"2\"},\"generation\":-9223372036854775808,"
                      "\"labels\":{\"kA\":\"v\\n\",\"x\":\"1\",\"x\":\"2\"},\"deletionTimestamp\":null}}",
                      0);
    T_EQ_STR(o->name, "n/2"); /* the last occurrence wins, as in a parsed object */
    size_t nl;
    lop_obj_labels(o, &nl);
    T_EQ_INT(nl, 2);
    T_EQ_STR(lop_obj_label(o, "kA"), "v\n");
    T_EQ_STR(lop_obj_label(o, "x"), "2");
    T_CHECK(o->generation == INT64_MIN);
    T_CHECK(!o->deleting);
    T_EQ_STR(o->namespace_, "");
    T_EQ_STR(o->api_version, "");
    lop_obj_unref(o);

    o = mk("{\"kind\":\"K\\u00e9\",\"metadata\":{\"name\":\"\\ud83d\\ude00\"}}", 0);
    T_EQ_STR(o->name, "\xf0\x9f\x98\x80");
    T_EQ_STR(o->kind, "K\xc3\xa9");
    lop_obj_unref(o);

    static const char *bad[] = {
        "{\"metadata\":{\"generation\":9223372036854775808}}",
        "{\"metadata\":{\"generation\":1.5}}",
        "{\"metadata\":{\"name\":\"\\u0000\"}}",
        "{\"metadata\":{\"name\":\"\\ud83d\"}}",
        "{\"metadata\":{\"labels\":{\"a\":null}}}",
        "{\"metadata\":{\"ownerReferences\":[1]}}",
        "{\"metadata\":{\"ownerReferences\":[{\"uid\":2}]}}",
        "{\"metadata\":{\"annotations\":[]}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        lop_obj_t *b = NULL;
        lop_err_t err;
        lop_err_clear(&err);
        T_EQ_INT(lop_obj_new(bad[i], strlen(bad[i]), 0, &b, &err), LOP_EINVAL);
        T_CHECK(b == NULL);
        T_CHECK(err.message[0] != '\0');
    }
}

/* A cache entry keeps its JSON for its lifetime, so it is allocated at its size: no rounded-up
 * buffer (which held ~2 KB for every 1 KB ConfigMap). The struct, the JSON and the decoded
 * strings are one block: here 3 + 4 + 2 + 2 bytes of strings ("v1", "K\"\n", "a", "u", NULs
 * included), no owner uids, and up to 7 bytes of alignment before them. */
static void test_entry_json_is_allocated_at_its_size(void)
{
    static const char item[] = "{\"metadata\":{\"name\":\"a\",\"managedFields\":[{\"manager\":\"m\","
                               "\"fieldsV1\":{\"f:data\":{}}}],\"uid\":\"u\"},\"data\":{\"k\":\"v\"}}";
    const int flags[] = {0, LOP_OBJ_KEEP_MANAGED_FIELDS};
    for (int i = 0; i < 2; i++) {
        lop_obj_t *o = NULL;
        lop_err_t err;
        T_EQ_INT(lop_obj_new_item(item, strlen(item), flags[i], "v1", "K\"\n", &o, &err), LOP_OK);
        T_CHECK(strncmp(o->json, "{\"apiVersion\":\"v1\",\"kind\":\"K\\\"\\n\",", 32) == 0);
        T_EQ_INT(strlen(o->json), o->json_len);
        T_CHECK((const char *)o->json == (const char *)(o + 1));
        size_t exact = ((sizeof *o + o->json_len + 1 + 7) & ~(size_t)7) + 11;
        T_CHECK(malloc_usable_size(o) >= exact && malloc_usable_size(o) < exact + 2 * sizeof(void *));
        lop_obj_unref(o);
    }
}

/* The decoded strings' arena is sized by the members read, not by all of metadata: a large
 * managedFields (or any member luaop does not read) costs nothing there. */
static void test_string_arena_leaves_out_unread_members(void)
{
    lop_buf_t j = LOP_BUF_INIT;
    lop_buf_puts(&j, "{\"metadata\":{\"name\":\"n\",\"labels\":{\"a\":\"b\"},\"managedFields\":[");
    for (int i = 0; i < 200; i++) lop_buf_printf(&j, "%s{\"manager\":\"m%d\"}", i ? "," : "", i);
    lop_buf_puts(&j, "],\"creationTimestamp\":\"2024-01-01T00:00:00Z\",\"uid\":\"u\"}}");
    lop_obj_t *o = mk(j.data, 0);
    T_EQ_STR(o->name, "n");
    T_EQ_STR(o->uid, "u");
    T_EQ_STR(lop_obj_label(o, "a"), "b");
    T_CHECK(malloc_usable_size(o) < sizeof *o + o->json_len + 1 + 64);
    lop_obj_unref(o);
    lop_buf_free(&j);
}

static void test_metadata_tree_is_lazy_and_leaves_out_managed_fields(void)
{
    const char *j = "{\"metadata\":{\"name\":\"a\",\"managedFields\":[{\"manager\":\"m\"}],\"uid\":\"u\"},\"spec\":{}}";
    lop_obj_t *o = mk(j, LOP_OBJ_KEEP_MANAGED_FIELDS);
    T_EQ_STR(o->json, j);         /* kept in the bytes */
    T_CHECK(o->metadata == NULL); /* not built until asked */
    const json_t *m = lop_obj_metadata(o);
    T_CHECK(json_is_object(m));
    T_EQ_INT(json_object_size(m), 2);
    T_EQ_STR(json_string_value(json_object_get(m, "uid")), "u");
    T_CHECK(json_object_get(m, "managedFields") == NULL);
    T_CHECK(lop_obj_metadata(o) == m && o->metadata == m);
    lop_obj_unref(o);

    o = mk("{\"metadata\":{\"managedFields\":[], \"name\":\"b\"}}", LOP_OBJ_KEEP_MANAGED_FIELDS);
    T_EQ_INT(json_object_size(lop_obj_metadata(o)), 1);
    lop_obj_unref(o);
    o = mk("{\"metadata\":{\"name\":\"b\",\"managedFields\":null}}", 0);
    T_EQ_STR(o->json, "{\"metadata\":{\"name\":\"b\"}}");
    T_EQ_INT(json_object_size(lop_obj_metadata(o)), 1);
    lop_obj_unref(o);
    o = mk("{\"spec\":{}}", 0);
    T_CHECK(json_is_object(lop_obj_metadata(o)) && json_object_size(lop_obj_metadata(o)) == 0);
    lop_obj_unref(o);
}

/* A metadata-only entry keeps apiVersion, kind and metadata (managedFields cut unless kept),
 * takes a list's defaults when the item lacks them, and still refuses malformed bytes anywhere. */
static void test_metadata_only_entry(void)
{
    const char *pod = "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\","
                      "\"managedFields\":[{\"manager\":\"m\"}],\"labels\":{\"app\":\"web\"},"
                      "\"resourceVersion\":\"7\"},\"spec\":{\"containers\":[{\"name\":\"c\"}]},\"status\":{}}";
    lop_obj_t *o = mk(pod, LOP_OBJ_METADATA_ONLY);
    T_EQ_STR(o->json, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\","
                      "\"labels\":{\"app\":\"web\"},\"resourceVersion\":\"7\"}}");
    T_EQ_INT((long)o->json_len, (long)strlen(o->json));
    T_CHECK(malloc_usable_size(o) < sizeof *o + o->json_len + 64); /* sized without managedFields */
    T_EQ_STR(o->kind, "Pod");
    T_EQ_STR(o->api_version, "v1");
    T_EQ_STR(o->name, "p");
    T_EQ_STR(o->rv, "7");
    T_EQ_STR(lop_obj_label(o, "app"), "web");
    const json_t *m = lop_obj_metadata(o);
    T_EQ_INT(json_object_size(m), 4);
    lop_obj_unref(o);

    o = mk(pod, LOP_OBJ_METADATA_ONLY | LOP_OBJ_KEEP_MANAGED_FIELDS);
    T_CHECK(strstr(o->json, "managedFields") != NULL && strstr(o->json, "spec") == NULL);
    T_CHECK(json_object_get(lop_obj_metadata(o), "managedFields") == NULL); /* as for full entries */
    T_EQ_INT(json_object_size(lop_obj_metadata(o)), 4);
    lop_obj_unref(o);

    const char *item = "{\"metadata\":{\"name\":\"i\"},\"data\":{\"k\":\"v\"}}";
    lop_err_t err;
    T_EQ_INT(lop_obj_new_item(item, strlen(item), LOP_OBJ_METADATA_ONLY, "v1", "ConfigMap", &o, &err), LOP_OK);
    T_EQ_STR(o->json, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"i\"}}");
    T_EQ_STR(o->kind, "ConfigMap");
    lop_obj_unref(o);

    T_EQ_INT(lop_obj_new_item(item, strlen(item), LOP_OBJ_METADATA_ONLY, "", "", &o, &err), LOP_OK);
    T_EQ_STR(o->json, "{\"metadata\":{\"name\":\"i\"}}"); /* empty defaults add nothing, as for full entries */
    lop_obj_unref(o);

    /* no labels: the string arena holds exactly what is read (apiVersion and kind decoded once) */
    const char *sec =
        "{\"kind\":\"Secret\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"s1\",\"namespace\":\"default\","
        "\"uid\":\"0b6f7a2e-1\",\"resourceVersion\":\"12\"},\"data\":{\"k\":\"dg==\"},\"type\":\"Opaque\"}";
    o = mk(sec, LOP_OBJ_METADATA_ONLY);
    T_EQ_STR(o->name, "s1");
    T_EQ_STR(o->uid, "0b6f7a2e-1");
    T_EQ_STR(o->rv, "12");
    T_EQ_STR(o->kind, "Secret");
    T_CHECK(strstr(o->json, "dg==") == NULL);
    lop_obj_unref(o);

    const char *bad = "{\"metadata\":{\"name\":\"i\"},\"spec\":{\"x\":tru}}";
    T_EQ_INT(lop_obj_new(bad, strlen(bad), LOP_OBJ_METADATA_ONLY, &o, &err), LOP_EINVAL);
}

/* The API server's metadata-only view of an object (PartialObjectMetadata, meta.k8s.io v1 or
 * v1beta1), built with the watched kind as the metadata-only cache does: the same entry, byte for
 * byte, as the one stripped from the full object (which a server that ignores `as=` sends);
 * without the watched kind, or in a full cache, it stays what it is. */
static void test_partial_object_metadata_takes_the_watched_kind(void)
{
    const char *meta = "{\"name\":\"p\",\"namespace\":\"ns\",\"uid\":\"u-1\",\"resourceVersion\":\"7\","
                       "\"labels\":{\"app\":\"web\"},\"managedFields\":[{\"manager\":\"m\"}],"
                       "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"rs\","
                       "\"uid\":\"o-1\",\"controller\":true}]}";
    char full[1024], pom[1024], pom_b1[1024], item[1024];
    snprintf(full, sizeof full, "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":%s,\"spec\":{\"x\":1}}", meta);
    snprintf(pom, sizeof pom, "{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":%s}",
             meta);
    snprintf(pom_b1, sizeof pom_b1,
             "{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":\"meta.k8s.io/v1beta1\",\"metadata\":%s}", meta);
    lop_obj_t *stripped = mk(full, LOP_OBJ_METADATA_ONLY);
    const char *cases[] = {pom, pom_b1};
    for (size_t i = 0; i < 2; i++) {
        lop_obj_t *o = NULL;
        lop_err_t err;
        T_EQ_INT(lop_obj_new_item(cases[i], strlen(cases[i]), LOP_OBJ_METADATA_ONLY, "v1", "Pod", &o, &err), LOP_OK);
        if (!o) continue;
        T_EQ_STR(o->json, stripped->json);
        T_EQ_INT((long)o->json_len, (long)stripped->json_len);
        T_EQ_STR(o->api_version, "v1");
        T_EQ_STR(o->kind, "Pod");
        T_EQ_STR(o->name, "p");
        T_EQ_STR(o->uid, "u-1");
        T_EQ_STR(o->rv, "7");
        T_CHECK(o->has_controller && !strcmp(o->controller.uid, "o-1"));
        T_CHECK(json_equal((json_t *)lop_obj_metadata(o), (json_t *)lop_obj_metadata(stripped)));
        lop_obj_unref(o);
        /* a watch event's object: built in the walk that validates the event */
        snprintf(item, sizeof item, "%s,\"type\":\"ADDED\"}", cases[i]);
        size_t end = 0;
        T_EQ_INT(lop_obj_new_prefix(item, strlen(item), LOP_OBJ_METADATA_ONLY, "v1", "Pod", &end, &o, &err), LOP_OK);
        T_EQ_INT((long)end, (long)strlen(cases[i]));
        if (o) T_EQ_STR(o->json, stripped->json);
        lop_obj_unref(o);
    }
    lop_obj_unref(stripped);

    lop_obj_t *o = NULL;
    lop_err_t err;
    /* without the watched kind: kept as sent */
    T_EQ_INT(lop_obj_new_item(pom, strlen(pom), LOP_OBJ_METADATA_ONLY, NULL, NULL, &o, &err), LOP_OK);
    T_EQ_STR(o->kind, "PartialObjectMetadata");
    T_EQ_STR(o->api_version, "meta.k8s.io/v1");
    lop_obj_unref(o);
    /* a full cache never rewrites what the server sent */
    T_EQ_INT(lop_obj_new_item(pom, strlen(pom), 0, "v1", "Pod", &o, &err), LOP_OK);
    T_EQ_STR(o->kind, "PartialObjectMetadata");
    lop_obj_unref(o);
    /* only PartialObjectMetadata of meta.k8s.io: another kind keeps its own */
    const char *other[] = {"{\"kind\":\"Table\",\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":{\"name\":\"t\"}}",
                           "{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":\"example.com/v1\",\"metadata\":{}}"};
    for (size_t i = 0; i < 2; i++) {
        T_EQ_INT(lop_obj_new_item(other[i], strlen(other[i]), LOP_OBJ_METADATA_ONLY, "v1", "Pod", &o, &err), LOP_OK);
        T_CHECK(strcmp(o->kind, "Pod") != 0);
        lop_obj_unref(o);
    }
}

static void *get_meta(void *ud) { return (void *)lop_obj_metadata(ud); }

static void test_metadata_first_call_races_agree(void)
{
    for (int round = 0; round < 50; round++) {
        lop_obj_t *o = mk("{\"metadata\":{\"name\":\"r\",\"labels\":{\"a\":\"b\"}}}", 0);
        pthread_t t[4];
        void *got[4];
        for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, get_meta, o);
        for (int i = 0; i < 4; i++) pthread_join(t[i], &got[i]);
        for (int i = 1; i < 4; i++) T_CHECK(got[i] == got[0]);
        T_CHECK(got[0] == lop_obj_metadata(o));
        lop_obj_unref(o);
    }
}

/* The trusted skipper ends every valid value where the validating scanner does. */
static void test_trusted_skip_agrees_with_validation(void)
{
    static const char *docs[] = {
        "{\"a\":\"x\\\"}\",\"b\":[1,{\"c\":\"]\"}],\"d\":\"\\\\\"} tail",
        "[ \"\\\\\\\"\" , {} , [] , -1.5e3 , true , null ] ,",
        "\"a\\\\\" x",
        "12.5,",
        "true}",
        "{\"k\":{\"n\":{\"m\":[[[\"}}]]\"]]]}}} ]",
    };
    for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
        size_t n = strlen(docs[i]), s, e;
        T_EQ_INT(lop_jscan_value(docs[i], n, 0, &s, &e), 0);
        T_EQ_INT(lop_jscan_skip_trusted(docs[i], n, 0), e);
    }
    /* truncated bytes never read past n */
    T_EQ_INT(lop_jscan_skip_trusted("{\"a\":[1,2", 9, 0), 9);
    T_EQ_INT(lop_jscan_skip_trusted("\"abc", 4, 0), 4);

    /* a trusted list item builds the same object as a validated one */
    const char *j = "{\"metadata\":{\"name\":\"a\\\"\",\"managedFields\":[{\"x\":\"]\\\\\"}],\"uid\":\"u\"},\"spec\":{"
                    "\"q\":\"}\"}}";
    lop_obj_t *a = mk(j, 0), *b = mk(j, LOP_OBJ_TRUSTED);
    T_EQ_STR(a->json, b->json);
    T_EQ_STR(b->name, "a\"");
    T_EQ_STR(b->uid, "u");
    T_EQ_STR(b->json, "{\"metadata\":{\"name\":\"a\\\"\",\"uid\":\"u\"},\"spec\":{\"q\":\"}\"}}");
    lop_obj_unref(a);
    lop_obj_unref(b);
}

typedef struct {
    lop_workqueue_t *q;
    int got;
} worker_t;

static void *worker(void *ud)
{
    worker_t *w = ud;
    char *item;
    while (lop_workqueue_get(w->q, &item) == LOP_OK) {
        w->got++;
        lop_workqueue_done(w->q, item);
        free(item);
    }
    return NULL;
}

/* Two blocked workers and a producer adding distinct keys in bursts: each key is handed out
 * exactly once (no wake-up lost, so shutdown-with-drain below finds nothing queued). */
static void test_counted_wakeups_lose_no_item(void)
{
    lop_workqueue_t *q = lop_workqueue_new("wake", NULL, NULL);
    worker_t w[2] = {{q, 0}, {q, 0}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, worker, &w[i]);
    char key[32];
    int n = 20000;
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof key, "k%d", i);
        lop_workqueue_add(q, key);
    }
    /* every item is taken by a worker: wait for the queue to empty, then drain */
    while (lop_workqueue_len(q) > 0) sched_yield();
    lop_workqueue_shutdown_with_drain(q);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    T_EQ_INT(w[0].got + w[1].got, n);
    lop_workqueue_free(q);
}

/* Batched wake-ups: items added inside batches (nested, over more queues than a batch holds)
 * all reach blocked workers once the batch ends; a queue freed inside a batch is released at its
 * end (run under ASan in the sanitizer build). */
static void test_batched_wakeups_reach_workers(void)
{
    enum { NQ = 20 };
    lop_workqueue_t *q[NQ];
    worker_t w[NQ];
    pthread_t t[NQ];
    for (int i = 0; i < NQ; i++) {
        q[i] = lop_workqueue_new("batch", NULL, NULL);
        w[i] = (worker_t){q[i], 0};
        pthread_create(&t[i], NULL, worker, &w[i]);
    }
    char key[32];
    int rounds = 200;
    for (int r = 0; r < rounds; r++) {
        lop_workqueue_batch_begin();
        lop_workqueue_batch_begin(); /* nested: only the outer end wakes */
        for (int i = 0; i < NQ; i++) {
            snprintf(key, sizeof key, "k%d", r);
            lop_workqueue_add(q[i], key);
        }
        lop_workqueue_batch_end();
        lop_workqueue_batch_end();
    }
    for (int i = 0; i < NQ; i++) {
        while (lop_workqueue_len(q[i]) > 0) sched_yield();
        lop_workqueue_shutdown_with_drain(q[i]);
        pthread_join(t[i], NULL);
        T_EQ_INT(w[i].got, rounds);
        lop_workqueue_free(q[i]);
    }

    lop_workqueue_t *f = lop_workqueue_new("freed", NULL, NULL);
    lop_workqueue_batch_begin();
    lop_workqueue_add(f, "x");
    T_EQ_INT(lop_workqueue_len(f), 1);
    lop_workqueue_free(f); /* released by batch_end below */
    lop_workqueue_batch_end();
    lop_workqueue_batch_end(); /* unbalanced end: ignored */
}

/* lop_obj_new_prefix: the object built from the front of longer bytes, and where it ended. */
static void test_prefix_build_reports_the_end(void)
{
    const char *ev = " {\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\"},\"x\":[1,\"}\"]} ,\"more\":1}";
    lop_obj_t *o = NULL;
    size_t end = 0;
    T_EQ_INT(lop_obj_new_prefix(ev, strlen(ev), 0, NULL, NULL, &end, &o, NULL), LOP_OK);
    T_EQ_INT((long)end, (long)(strstr(ev, "} ,") - ev + 1));
    T_EQ_STR(o->name, "a");
    T_EQ_STR(o->namespace_, "ns");
    char key[8];
    T_EQ_INT(lop_obj_key(o, key, sizeof key), 4);
    T_EQ_STR(key, "ns/a");
    T_EQ_INT(lop_obj_key(o, key, 3), 4); /* truncated like snprintf, length of the whole key */
    T_EQ_STR(key, "ns");
    T_EQ_INT(lop_obj_key(o, key, 2), 4);
    T_EQ_STR(key, "n");
    lop_obj_unref(o);
    /* truncated and malformed objects fail alike; nothing is built */
    const char *bad[] = {"{\"metadata\":{\"name\":\"a\"", "{\"a\":tru}", "[1]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o = NULL;
        T_EQ_INT(lop_obj_new_prefix(bad[i], strlen(bad[i]), 0, NULL, NULL, &end, &o, NULL), LOP_EINVAL);
        T_CHECK(o == NULL);
    }
}

/* The string scan goes 16 bytes at a time: a quote, an escape or a raw control character at
 * every position of a long string is seen exactly as one byte at a time would. */
static void test_string_scan_at_every_offset(void)
{
    char buf[96];
    for (size_t at = 1; at < 70; at++) {
        /* an escaped quote at `at`: the string goes on to the real closing quote */
        memset(buf, 'x', sizeof buf);
        buf[0] = '"';
        buf[at] = '\\';
        buf[at + 1] = '"';
        buf[80] = '"';
        size_t vs, ve;
        T_EQ_INT(lop_jscan_value(buf, 81, 0, &vs, &ve), 0);
        T_EQ_INT((long)ve, 81);
        /* a raw newline at `at`: malformed */
        memset(buf, 'x', sizeof buf);
        buf[0] = '"';
        buf[at] = '\n';
        buf[80] = '"';
        T_EQ_INT(lop_jscan_value(buf, 81, 0, &vs, &ve), -1);
        /* bytes >= 0x80 (UTF-8) are string content, not control characters */
        memset(buf, 'x', sizeof buf);
        buf[0] = '"';
        buf[at] = (char)0xC3;
        buf[at + 1] = (char)0xA9;
        buf[80] = '"';
        T_EQ_INT(lop_jscan_value(buf, 81, 0, &vs, &ve), 0);
        T_EQ_INT((long)ve, 81);
        /* closed at `at` */
        memset(buf, 'x', sizeof buf);
        buf[0] = '"';
        buf[at] = '"';
        T_EQ_INT(lop_jscan_value(buf, sizeof buf, 0, &vs, &ve), 0);
        T_EQ_INT((long)ve, (long)at + 1);
        /* unterminated within n: never read past it */
        T_EQ_INT(lop_jscan_value(buf, at, 0, &vs, &ve), -1);
    }
}

/* Labels are gathered on the stack up to 16 and on the heap beyond; a repeated key keeps its
 * place and takes the last value, past the switch too. */
static void test_many_labels(void)
{
    lop_buf_t j = LOP_BUF_INIT;
    lop_buf_puts(&j, "{\"metadata\":{\"name\":\"n\",\"labels\":{");
    for (int i = 0; i < 40; i++) lop_buf_printf(&j, "%s\"k%d\":\"v%d\"", i ? "," : "", i, i);
    lop_buf_puts(&j, ",\"k3\":\"again\"},\"annotations\":{\"a\":\"b\"}}}");
    lop_obj_t *o = mk(j.data, 0);
    size_t nl;
    const lop_kv_t *kv = lop_obj_labels(o, &nl);
    T_EQ_INT((long)nl, 40);
    T_EQ_STR(kv[3].key, "k3");
    T_EQ_STR(lop_obj_label(o, "k3"), "again");
    T_EQ_STR(lop_obj_label(o, "k39"), "v39");
    T_EQ_STR(lop_obj_annotation(o, "a"), "b");
    T_CHECK(lop_obj_label(o, "a") == NULL);
    lop_obj_unref(o);
    lop_buf_free(&j);
}

/* lop_obj_key_hash / _eq / _cmp agree with the formatted key, including where the key order is
 * not the (namespace, name) order: '-' and '.' sort before '/'. */
static void test_key_hash_eq_and_order_agree_with_the_formatted_key(void)
{
    static const char *const keys[][2] = {
        {"a", "x"},   {"a-b", "y"}, {"a.b", "a"}, {"", "a"},    {"", "a/x"},      {"", "a0"},
        {"a", "x-1"}, {"a", ""},    {"ab", "c"},  {"a", "b/c"}, {"", "\xc3\xa9"}, {"z", "x"},
    };
    size_t n = sizeof keys / sizeof keys[0];
    lop_obj_t *o[sizeof keys / sizeof keys[0]];
    char k[sizeof keys / sizeof keys[0]][64];
    for (size_t i = 0; i < n; i++) {
        lop_buf_t j = LOP_BUF_INIT;
        lop_buf_printf(&j, "{\"metadata\":{\"namespace\":\"%s\",\"name\":\"%s\"}}", keys[i][0], keys[i][1]);
        o[i] = mk(j.data, 0);
        lop_buf_free(&j);
        lop_obj_key(o[i], k[i], sizeof k[i]);
        T_CHECK(lop_obj_key_hash(o[i]) == lop_key_hash(k[i], strlen(k[i])));
        T_CHECK(lop_obj_key_eq(o[i], k[i], strlen(k[i])));
    }
    for (size_t i = 0; i < n; i++)
        for (size_t m = 0; m < n; m++) {
            int want = strcmp(k[i], k[m]), got = lop_obj_key_cmp(o[i], o[m]);
            T_CHECK((want < 0) == (got < 0) && (want > 0) == (got > 0));
            T_CHECK(lop_obj_key_eq(o[i], k[m], strlen(k[m])) == (want == 0));
        }
    T_CHECK(!lop_obj_key_eq(o[0], "a/", 2) && !lop_obj_key_eq(o[0], "a/xy", 4) && !lop_obj_key_eq(o[0], "x", 1));
    for (size_t i = 0; i < n; i++) lop_obj_unref(o[i]);
}

/* Labels and annotations are checked at build but decoded on the first ask, once: concurrent
 * first callers agree on one array, and equality compares the bytes before decoding. */
static pthread_barrier_t first_ask;

static void *labels_of(void *o)
{
    size_t n;
    pthread_barrier_wait(&first_ask); /* all four ask at once */
    return (void *)lop_obj_labels(o, &n);
}

static void test_labels_are_decoded_on_demand(void)
{
    lop_obj_t *o = mk("{\"metadata\":{\"name\":\"n\",\"labels\":{\"a\":\"1\",\"b\":\"x\\u00e9\"},"
                      "\"annotations\":{\"c\":\"3\"}}}",
                      0);
    T_CHECK(o->lab_kv_ == NULL && o->ann_kv_ == NULL);
    pthread_t th[4];
    void *got[4];
    pthread_barrier_init(&first_ask, NULL, 4);
    for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, labels_of, o);
    for (int i = 0; i < 4; i++) pthread_join(th[i], &got[i]);
    pthread_barrier_destroy(&first_ask);
    T_CHECK(o->ann_kv_ == NULL); /* each map is decoded on its own ask */
    for (int i = 1; i < 4; i++) T_CHECK(got[i] == got[0]);
    size_t nl, na;
    const lop_kv_t *l = lop_obj_labels(o, &nl), *a = lop_obj_annotations(o, &na);
    T_CHECK((void *)l == got[0] && nl == 2 && na == 1);
    T_EQ_STR(l[1].key, "b");
    T_EQ_STR(l[1].value, "x\xc3\xa9");
    T_EQ_STR(a[0].value, "3");
    lop_obj_t *none = mk("{\"metadata\":{\"name\":\"n\",\"labels\":null}}", 0);
    T_CHECK(lop_obj_labels(none, &nl) == NULL && nl == 0);
    T_CHECK(lop_obj_annotations(none, &na) == NULL && na == 0);
    T_CHECK(none->lab_kv_ == NULL && none->ann_kv_ == NULL);

    /* equality: the same bytes are equal undecoded; otherwise as maps */
    lop_obj_t *same = mk("{\"metadata\":{\"name\":\"m\",\"labels\":{\"a\":\"1\",\"b\":\"x\\u00e9\"}}}", 0);
    lop_obj_t *reord =
        mk("{\"metadata\":{\"labels\":{\"b\":\"x\xc3\xa9\",\"a\":\"1\"},\"annotations\":{\"c\":\"3\"}}}", 0);
    lop_obj_t *fewer = mk("{\"metadata\":{\"labels\":{\"a\":\"1\"},\"annotations\":{}}}", 0);
    lop_obj_t *empty = mk("{\"metadata\":{\"labels\":{}}}", 0);
    T_CHECK(lop_obj_labels_equal(same, o) && same->lab_kv_ == NULL);
    T_CHECK(lop_obj_labels_equal(reord, o) && lop_obj_annotations_equal(reord, o));
    T_CHECK(reord->lab_kv_ == NULL && reord->ann_kv_ == NULL); /* compared, not kept */
    T_CHECK(!lop_obj_labels_equal(fewer, o) && !lop_obj_annotations_equal(fewer, o));
    T_CHECK(lop_obj_labels_equal(none, empty) && lop_obj_annotations_equal(fewer, empty));
    lop_obj_t *objs[] = {o, none, same, reord, fewer, empty};
    for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++) lop_obj_unref(objs[i]);
}

/* A bad label or annotation is refused at build, though it is not decoded then. */
static void test_bad_labels_are_refused_at_build(void)
{
    static const char *const bad[] = {
        "{\"metadata\":{\"labels\":{\"a\":1}}}",
        "{\"metadata\":{\"labels\":[]}}",
        "{\"metadata\":{\"annotations\":{\"a\":\"\\u0000\"}}}",
        "{\"metadata\":{\"annotations\":{\"\\ud800\":\"v\"}}}",
        "{\"metadata\":{\"labels\":{\"a\":\"\\udc00x\"}}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        lop_obj_t *o = NULL;
        lop_err_t err;
        T_EQ_INT(lop_obj_new(bad[i], strlen(bad[i]), 0, &o, &err), LOP_EINVAL);
        T_CHECK(o == NULL && strstr(err.message, "metadata.") != NULL);
    }
}

/* A repeated managedFields (no API server sends one): the tree has none. */
static void test_repeated_managed_fields_never_reach_the_tree(void)
{
    lop_obj_t *o = mk("{\"metadata\":{\"managedFields\":[{\"manager\":\"a\"}],\"name\":\"x\","
                      "\"managedFields\":[{\"manager\":\"b\"}]}}",
                      0);
    const json_t *m = lop_obj_metadata(o);
    T_CHECK(json_object_get(m, "managedFields") == NULL);
    T_EQ_STR(json_string_value(json_object_get(m, "name")), "x");
    T_CHECK(strstr(o->json, "\"b\"") == NULL); /* the last one is cut from the bytes */
    lop_obj_unref(o);
}

int main(void)
{
    T_RUN(test_repeated_managed_fields_never_reach_the_tree);
    T_RUN(test_labels_are_decoded_on_demand);
    T_RUN(test_bad_labels_are_refused_at_build);
    T_RUN(test_key_hash_eq_and_order_agree_with_the_formatted_key);
    T_RUN(test_many_labels);
    T_RUN(test_prefix_build_reports_the_end);
    T_RUN(test_string_scan_at_every_offset);
    T_RUN(test_escapes_and_repeated_keys);
    T_RUN(test_entry_json_is_allocated_at_its_size);
    T_RUN(test_string_arena_leaves_out_unread_members);
    T_RUN(test_metadata_tree_is_lazy_and_leaves_out_managed_fields);
    T_RUN(test_metadata_only_entry);
    T_RUN(test_partial_object_metadata_takes_the_watched_kind);
    T_RUN(test_metadata_first_call_races_agree);
    T_RUN(test_counted_wakeups_lose_no_item);
    T_RUN(test_trusted_skip_agrees_with_validation);
    T_RUN(test_batched_wakeups_reach_workers);
    return T_DONE();
}
