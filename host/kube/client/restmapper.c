/* SPDX-License-Identifier: Apache-2.0 */
/* restmapper.c — discovery, the Kind→resource cache and path building (see restmapper.h). */
#include "host/kube/client/restmapper.h"

#include "host/util/log.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct lop_restmapper {
    lop_rest_client_t *client;
    pthread_rwlock_t lock;      /* guards entries/n/loaded */
    pthread_mutex_t refresh_mu; /* one discovery read at a time */
    lop_rest_mapping_t *entries;
    size_t n, cap;
    bool loaded;
    int refreshes;
};

lop_restmapper_t *lop_restmapper_new(lop_rest_client_t *client)
{
    lop_restmapper_t *m = lop_xcalloc(1, sizeof *m);
    m->client = client;
    pthread_rwlock_init(&m->lock, NULL);
    pthread_mutex_init(&m->refresh_mu, NULL);
    return m;
}

void lop_restmapper_free(lop_restmapper_t *m)
{
    if (!m) return;
    pthread_rwlock_destroy(&m->lock);
    pthread_mutex_destroy(&m->refresh_mu);
    free(m->entries);
    free(m);
}

static void copy_str(char *dst, size_t cap, const char *src) { snprintf(dst, cap, "%s", src ? src : ""); }

typedef struct list {
    lop_rest_mapping_t *v;
    size_t n, cap;
} list_t;

static void add_resources(list_t *l, const char *group, const char *version, json_t *doc)
{
    json_t *res = json_object_get(doc, "resources");
    size_t i;
    json_t *r;
    json_array_foreach(res, i, r)
    {
        const char *name = json_string_value(json_object_get(r, "name"));
        const char *kind = json_string_value(json_object_get(r, "kind"));
        if (!name || !kind || strchr(name, '/')) continue; /* subresources are not mapped (restmapper/discovery.go) */
        if (l->n == l->cap) {
            l->cap = l->cap ? l->cap * 2 : 64;
            l->v = lop_xrealloc(l->v, l->cap * sizeof *l->v);
        }
        lop_rest_mapping_t *e = &l->v[l->n++];
        memset(e, 0, sizeof *e);
        copy_str(e->group, sizeof e->group, group);
        copy_str(e->version, sizeof e->version, version);
        copy_str(e->resource, sizeof e->resource, name);
        copy_str(e->kind, sizeof e->kind, kind);
        e->namespaced = json_is_true(json_object_get(r, "namespaced"));
    }
}

static lop_rc_t get_json(lop_rest_client_t *c, const char *path, json_t **out, lop_err_t *err)
{
    lop_rest_resp_t resp = LOP_REST_RESP_INIT;
    lop_rc_t rc = lop_rest_do(c, "GET", path, NULL, NULL, 0, &resp, err);
    *out = NULL;
    if (rc == LOP_OK) {
        json_error_t je;
        *out = json_loadb(resp.body.data ? resp.body.data : "", resp.body.len, 0, &je);
        if (!json_is_object(*out)) {
            json_decref(*out);
            *out = NULL;
            rc = lop_err_set(err, LOP_ERR, resp.code, NULL, "discovery %s: response is not a JSON object", path);
        }
    }
    lop_rest_resp_cleanup(&resp);
    return rc;
}

lop_rc_t lop_restmapper_refresh(lop_restmapper_t *m, lop_err_t *err)
{
    pthread_mutex_lock(&m->refresh_mu);
    list_t l = {0};
    json_t *doc = NULL;
    char path[512];
    lop_rc_t rc = get_json(m->client, "/api", &doc, err);
    if (rc == LOP_OK) {
        size_t i;
        json_t *v;
        json_array_foreach(json_object_get(doc, "versions"), i, v)
        {
            const char *ver = json_string_value(v);
            if (!ver) continue;
            json_t *rl = NULL;
            snprintf(path, sizeof path, "/api/%s", ver);
            rc = get_json(m->client, path, &rl, err);
            if (rc != LOP_OK) break;
            add_resources(&l, "", ver, rl);
            json_decref(rl);
        }
        json_decref(doc);
    }
    if (rc == LOP_OK) rc = get_json(m->client, "/apis", &doc, err);
    if (rc == LOP_OK) {
        size_t i, j;
        json_t *g, *v;
        json_array_foreach(json_object_get(doc, "groups"), i, g)
        {
            const char *gname = json_string_value(json_object_get(g, "name"));
            if (!gname) continue;
            json_array_foreach(json_object_get(g, "versions"), j, v)
            {
                const char *gv = json_string_value(json_object_get(v, "groupVersion"));
                const char *ver = json_string_value(json_object_get(v, "version"));
                if (!gv || !ver) continue;
                json_t *rl = NULL;
                lop_err_t e1;
                snprintf(path, sizeof path, "/apis/%s", gv);
                if (get_json(m->client, path, &rl, &e1) != LOP_OK) {
                    /* One broken group (e.g. an unavailable aggregated API) must not hide the rest. */
                    lop_log(LOP_LOG_WARN, "discovery failed for a group version; skipping it", "group_version", gv,
                            "error", e1.message, NULL);
                    continue;
                }
                add_resources(&l, gname, ver, rl);
                json_decref(rl);
            }
        }
        json_decref(doc);
    }
    if (rc == LOP_OK) {
        pthread_rwlock_wrlock(&m->lock);
        free(m->entries);
        m->entries = l.v;
        m->n = l.n;
        m->cap = l.cap;
        m->loaded = true;
        m->refreshes++;
        pthread_rwlock_unlock(&m->lock);
        char n[24];
        snprintf(n, sizeof n, "%zu", l.n);
        lop_log(LOP_LOG_DEBUG, "discovery refreshed", "resources", n, NULL);
    } else {
        free(l.v);
    }
    pthread_mutex_unlock(&m->refresh_mu);
    return rc;
}

int lop_restmapper_refreshes(lop_restmapper_t *m)
{
    pthread_rwlock_rdlock(&m->lock);
    int n = m->refreshes;
    pthread_rwlock_unlock(&m->lock);
    return n;
}

void lop_restmapper_invalidate(lop_restmapper_t *m)
{
    pthread_rwlock_wrlock(&m->lock);
    m->loaded = false;
    pthread_rwlock_unlock(&m->lock);
}

bool lop_rest_resource_missing(const lop_rest_resp_t *resp)
{
    if (!resp || resp->code != 404) return false;
    json_t *details = json_object_get(resp->status, "details");
    const char *name = json_string_value(json_object_get(details, "name"));
    return !name || !*name;
}

bool lop_restmapper_note_404(lop_restmapper_t *m, const lop_rest_resp_t *resp)
{
    if (!lop_rest_resource_missing(resp)) return false;
    lop_restmapper_invalidate(m);
    return true;
}

/* by_kind: match kind (field) or resource. Returns 1 found, 0 not found, -1 not loaded. */
static int find(lop_restmapper_t *m, const char *group, const char *version, const char *key, bool by_kind,
                lop_rest_mapping_t *out)
{
    int found = -1;
    pthread_rwlock_rdlock(&m->lock);
    if (m->loaded) {
        found = 0;
        for (size_t i = 0; i < m->n; i++) {
            const lop_rest_mapping_t *e = &m->entries[i];
            if (strcmp(e->group, group) || strcmp(e->version, version)) continue;
            if (strcmp(by_kind ? e->kind : e->resource, key)) continue;
            *out = *e;
            found = 1;
            break;
        }
    }
    pthread_rwlock_unlock(&m->lock);
    return found;
}

static lop_rc_t lookup(lop_restmapper_t *m, const char *group, const char *version, const char *key, bool by_kind,
                       lop_rest_mapping_t *out, lop_err_t *err)
{
    int f = find(m, group, version, key, by_kind, out);
    if (f == 1) return LOP_OK;
    /* Not loaded yet, or unknown: read discovery again once (a CRD may be new). */
    lop_rc_t rc = lop_restmapper_refresh(m, err);
    if (rc != LOP_OK) return rc;
    if (find(m, group, version, key, by_kind, out) == 1) return LOP_OK;
    return lop_err_set(err, LOP_ENOTFOUND, 404, "NotFound", "no matches for %s %s in version \"%s%s%s\"",
                       by_kind ? "kind" : "resource", key, group, *group ? "/" : "", version);
}

lop_rc_t lop_restmapper_resolve(lop_restmapper_t *m, const char *api_version, const char *kind, lop_rest_mapping_t *out,
                                lop_err_t *err)
{
    if (!kind || !*kind) return lop_err_set(err, LOP_EINVAL, 0, NULL, "kind is empty");
    if (!api_version || !*api_version) return lop_err_set(err, LOP_EINVAL, 0, NULL, "apiVersion is empty");
    const char *slash = strchr(api_version, '/');
    char group[128] = "";
    const char *version = api_version;
    if (slash) {
        size_t gl = (size_t)(slash - api_version);
        if (gl == 0 || gl >= sizeof group || !slash[1] || strchr(slash + 1, '/'))
            return lop_err_set(err, LOP_EINVAL, 0, NULL, "malformed apiVersion %s", api_version);
        memcpy(group, api_version, gl);
        group[gl] = '\0';
        version = slash + 1;
    }
    return lookup(m, group, version, kind, true, out, err);
}

lop_rc_t lop_restmapper_resolve_resource(lop_restmapper_t *m, const char *group, const char *version,
                                         const char *resource, lop_rest_mapping_t *out, lop_err_t *err)
{
    if (!resource || !*resource || !version || !*version)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "resource and version must be set");
    return lookup(m, group ? group : "", version, resource, false, out, err);
}

void lop_url_escape(lop_buf_t *out, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
            *p == '.' || *p == '_' || *p == '~') {
            lop_buf_putc(out, (char)*p);
        } else {
            lop_buf_putc(out, '%');
            lop_buf_putc(out, hex[*p >> 4]);
            lop_buf_putc(out, hex[*p & 15]);
        }
    }
}

static bool bad_segment(const char *s) { return !strcmp(s, ".") || !strcmp(s, "..") || strchr(s, '/') != NULL; }

lop_rc_t lop_rest_path(lop_buf_t *out, const lop_rest_mapping_t *m, const char *ns, const char *name,
                       const char *subresource, const char *query, lop_err_t *err)
{
    if (!m->version[0] || !m->resource[0])
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "mapping has no version or resource");
    if (subresource && *subresource && !(name && *name))
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "subresource %s needs an object name", subresource);
    if ((name && *name && bad_segment(name)) || (ns && *ns && bad_segment(ns)))
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "invalid name or namespace in a request path");
    if (m->group[0])
        lop_buf_printf(out, "/apis/%s/%s", m->group, m->version);
    else
        lop_buf_printf(out, "/api/%s", m->version);
    if (m->namespaced && ns && *ns) {
        lop_buf_puts(out, "/namespaces/");
        lop_url_escape(out, ns);
    }
    lop_buf_putc(out, '/');
    lop_buf_puts(out, m->resource);
    if (name && *name) {
        lop_buf_putc(out, '/');
        lop_url_escape(out, name);
        if (subresource && *subresource) lop_buf_printf(out, "/%s", subresource);
    }
    if (query && *query) lop_buf_printf(out, "?%s", query);
    return LOP_OK;
}
