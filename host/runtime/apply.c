/* SPDX-License-Identifier: Apache-2.0 */
/* apply.c — create-or-replace of manifests (POST, else GET + PUT with the live resourceVersion),
 * waiting for a CRD to be Established (see apply.h); what `luaop dev --apply` runs, on the
 * caller's (main) thread. Upstream: kubectl's create/replace, not server-side apply. */
#include "host/runtime/apply.h"

#include "host/codec/yaml.h"
#include "host/util/buf.h"
#include "host/util/log.h"

#include <string.h>

static const char *jstr(const json_t *o, const char *k) { return json_string_value(json_object_get(o, k)); }

static bool crd_established(const json_t *crd)
{
    json_t *conds = json_object_get(json_object_get(crd, "status"), "conditions");
    size_t i;
    json_t *c;
    json_array_foreach(conds, i, c)
    {
        const char *t = jstr(c, "type"), *s = jstr(c, "status");
        if (t && s && strcmp(t, "Established") == 0 && strcmp(s, "True") == 0) return true;
    }
    return false;
}

/* Poll the CRD until Established (bounded: 30 s on the clock). */
static lop_rc_t wait_established(lop_rest_client_t *rest, lop_restmapper_t *mapper, const char *path,
                                 const lop_clock_t *clock, lop_err_t *err)
{
    int64_t deadline = lop_clock_mono(clock) + 30 * LOP_NS_PER_S;
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cond;
    lop_cond_init(&cond);
    lop_rc_t rc = LOP_ETIMEDOUT;
    pthread_mutex_lock(&mu);
    for (;;) {
        lop_rest_resp_t r = LOP_REST_RESP_INIT;
        lop_rc_t grc = lop_rest_do(rest, "GET", path, NULL, NULL, 0, &r, err);
        json_t *crd = grc == LOP_OK ? json_loadb(r.body.data, r.body.len, 0, NULL) : NULL;
        bool ok = crd && crd_established(crd);
        json_decref(crd);
        lop_rest_resp_cleanup(&r);
        if (ok) {
            rc = LOP_OK;
            lop_restmapper_invalidate(mapper);
            break;
        }
        /* wait 100 ms or until the deadline, on the injected clock */
        int64_t next = lop_clock_mono(clock) + 100 * LOP_NS_PER_MS;
        while (!lop_clock_wait_until(clock, &cond, &mu, next < deadline ? next : deadline)) {}
        if (lop_clock_mono(clock) >= deadline) {
            lop_err_set(err, LOP_ETIMEDOUT, 0, NULL, "%s: not Established after 30s", path);
            break;
        }
    }
    pthread_mutex_unlock(&mu);
    pthread_cond_destroy(&cond);
    return rc;
}

lop_rc_t lop_apply_object(lop_rest_client_t *rest, lop_restmapper_t *mapper, json_t *obj, const char *default_ns,
                          const lop_clock_t *clock, lop_err_t *err)
{
    const char *api_version = jstr(obj, "apiVersion"), *kind = jstr(obj, "kind");
    json_t *meta = json_object_get(obj, "metadata");
    const char *name = jstr(meta, "name");
    if (!api_version || !kind || !name)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "object without apiVersion, kind or metadata.name");
    lop_rest_mapping_t mp;
    lop_rc_t rc = lop_restmapper_resolve(mapper, api_version, kind, &mp, err);
    if (rc != LOP_OK) return rc;
    const char *ns = NULL;
    if (mp.namespaced) {
        ns = jstr(meta, "namespace");
        if (!ns || !*ns) {
            ns = default_ns ? default_ns : "default";
            json_object_set_new(meta, "namespace", json_string(ns));
        }
    }
    lop_buf_t coll = LOP_BUF_INIT, item = LOP_BUF_INIT;
    rc = lop_rest_path(&coll, &mp, ns, NULL, NULL, NULL, err);
    if (rc == LOP_OK) rc = lop_rest_path(&item, &mp, ns, name, NULL, NULL, err);
    if (rc != LOP_OK) { /* a name or namespace that cannot be a path segment ("..", "a/b") */
        lop_buf_free(&coll);
        lop_buf_free(&item);
        return lop_err_set(err, rc, 0, NULL, "%s %s: %s", kind, name, err ? err->message : "bad name");
    }
    json_object_del(meta, "resourceVersion");
    char *body = json_dumps(obj, JSON_COMPACT);
    lop_rest_resp_t r = LOP_REST_RESP_INIT;
    rc = lop_rest_do(rest, "POST", coll.data, "application/json", body, strlen(body), &r, err);
    const char *what = "created";
    if (rc == LOP_EEXIST) {
        lop_rest_resp_cleanup(&r);
        lop_rest_resp_init(&r);
        rc = lop_rest_do(rest, "GET", item.data, NULL, NULL, 0, &r, err);
        json_t *live = rc == LOP_OK ? json_loadb(r.body.data, r.body.len, 0, NULL) : NULL;
        const char *rv = jstr(json_object_get(live, "metadata"), "resourceVersion");
        if (rv) {
            json_object_set_new(meta, "resourceVersion", json_string(rv));
            free(body);
            body = json_dumps(obj, JSON_COMPACT);
            lop_rest_resp_cleanup(&r);
            lop_rest_resp_init(&r);
            rc = lop_rest_do(rest, "PUT", item.data, "application/json", body, strlen(body), &r, err);
            what = "configured";
        }
        json_decref(live);
    }
    free(body);
    lop_rest_resp_cleanup(&r);
    if (rc == LOP_OK) {
        lop_log(LOP_LOG_INFO, "applied", "kind", kind, "namespace", ns ? ns : "", "name", name, "result", what, NULL);
        if (strcmp(kind, "CustomResourceDefinition") == 0) rc = wait_established(rest, mapper, item.data, clock, err);
    } else {
        char msg[sizeof err->message];
        snprintf(msg, sizeof msg, "%s", err ? err->message : "");
        lop_err_set(err, rc, err ? err->code : 0, err ? err->reason : NULL, "%s %s: %s", kind, name, msg);
    }
    lop_buf_free(&coll);
    lop_buf_free(&item);
    return rc;
}

lop_rc_t lop_apply_file(lop_rest_client_t *rest, lop_restmapper_t *mapper, const char *path, const char *default_ns,
                        const lop_clock_t *clock, lop_err_t *err)
{
    json_t *docs = NULL;
    lop_rc_t rc = lop_yaml_load_file(path, &docs, err);
    if (rc != LOP_OK) return rc;
    size_t i;
    json_t *doc;
    json_array_foreach(docs, i, doc)
    {
        if (!json_is_object(doc)) continue;
        json_t *items = json_object_get(doc, "items");
        const char *kind = jstr(doc, "kind");
        if (json_is_array(items) && kind && strlen(kind) > 4 && strcmp(kind + strlen(kind) - 4, "List") == 0) {
            size_t j;
            json_t *it;
            json_array_foreach(items, j, it)
            {
                if ((rc = lop_apply_object(rest, mapper, it, default_ns, clock, err)) != LOP_OK) break;
            }
        } else {
            rc = lop_apply_object(rest, mapper, doc, default_ns, clock, err);
        }
        if (rc != LOP_OK) {
            char msg[sizeof err->message];
            snprintf(msg, sizeof msg, "%s", err ? err->message : "");
            lop_err_set(err, rc, err ? err->code : 0, err ? err->reason : NULL, "%s: document %zu: %s", path, i + 1,
                        msg);
            break;
        }
    }
    json_decref(docs);
    return rc;
}
