/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lease_rest.c — the lease client over the REST client (lease.h): GET/POST/PUT on
 * /apis/coordination.k8s.io/v1/namespaces/<ns>/leases/<name> (client-go
 * tools/leaderelection/resourcelock/leaselock.go). The last Lease read or written is cached whole,
 * so an update keeps the object's metadata (labels, annotations, ownerReferences) and only
 * replaces spec and resourceVersion.
 */
#include "host/kube/leaderelection/lease.h"

#include "host/kube/client/rest.h"
#include "host/util/buf.h"

#include <stdlib.h>
#include <string.h>

#define LEASE_FIELD_MANAGER "luaop-leader-election"
#define DEFAULT_TIMEOUT_MS  10000

typedef struct rest_lease {
    lop_rest_client_t *rest;
    char *ns, *name;
    char *item_path;       /* .../leases/<name> */
    char *collection_path; /* .../leases */
    long timeout_ms;
    json_t *cached; /* last Lease object seen from the server, or NULL */
} rest_lease_t;

static void remember(rest_lease_t *l, json_t *obj)
{
    if (l->cached) json_decref(l->cached);
    l->cached = obj;
}

/* Decode a 2xx response body into a record + rv and cache it. */
static lop_rc_t take_response(rest_lease_t *l, const lop_rest_resp_t *resp, lop_lease_record_t *out, char *rv,
                              lop_err_t *err)
{
    json_error_t jerr;
    json_t *obj = json_loadb(resp->body.data ? resp->body.data : "", resp->body.len, 0, &jerr);
    if (!obj)
        return lop_err_set(err, LOP_EINVAL, resp->code, NULL, "lease %s/%s: response is not JSON (line %d: %s)", l->ns,
                           l->name, jerr.line, jerr.text);
    lop_rc_t rc = lop_lease_from_json(obj, out, rv, err);
    if (rc != LOP_OK) {
        json_decref(obj);
        return rc;
    }
    remember(l, obj);
    return LOP_OK;
}

static lop_rc_t lease_send(rest_lease_t *l, const char *method, const char *path, const char *body,
                           lop_rest_resp_t *resp, lop_err_t *err)
{
    lop_rest_req_t req;
    memset(&req, 0, sizeof req);
    req.method = method;
    req.path = path;
    req.body = body;
    req.len = body ? strlen(body) : 0;
    req.timeout_ms = l->timeout_ms;
    return lop_rest_request(l->rest, &req, resp, err);
}

static lop_rc_t rl_get(void *ud, lop_lease_record_t *out, char *rv, lop_err_t *err)
{
    rest_lease_t *l = ud;
    lop_rest_resp_t resp = LOP_REST_RESP_INIT;
    lop_rc_t rc = lease_send(l, "GET", l->item_path, NULL, &resp, err);
    if (rc == LOP_OK)
        rc = take_response(l, &resp, out, rv, err);
    else if (rc == LOP_ENOTFOUND)
        remember(l, NULL);
    lop_rest_resp_cleanup(&resp);
    return rc;
}

static lop_rc_t rl_write(rest_lease_t *l, const char *method, const char *path, json_t *obj, char *rv_out,
                         lop_err_t *err)
{
    char *body = json_dumps(obj, JSON_COMPACT);
    json_decref(obj);
    if (!body) return lop_err_set(err, LOP_ENOMEM, 0, NULL, "lease: cannot encode the Lease");
    lop_rest_resp_t resp = LOP_REST_RESP_INIT;
    lop_rc_t rc = lease_send(l, method, path, body, &resp, err);
    free(body);
    if (rc == LOP_OK) {
        lop_lease_record_t got = LOP_LEASE_RECORD_INIT;
        rc = take_response(l, &resp, &got, rv_out, err);
        lop_lease_record_cleanup(&got);
    }
    lop_rest_resp_cleanup(&resp);
    return rc;
}

static lop_rc_t rl_create(void *ud, const lop_lease_record_t *rec, char *rv_out, lop_err_t *err)
{
    rest_lease_t *l = ud;
    lop_buf_t path = LOP_BUF_INIT;
    lop_buf_printf(&path, "%s?fieldManager=%s", l->collection_path, LEASE_FIELD_MANAGER);
    lop_rc_t rc = rl_write(l, "POST", path.data, lop_lease_to_json(l->ns, l->name, NULL, rec), rv_out, err);
    lop_buf_free(&path);
    return rc;
}

static lop_rc_t rl_update(void *ud, const lop_lease_record_t *rec, const char *rv, char *rv_out, lop_err_t *err)
{
    rest_lease_t *l = ud;
    if (!rv || !*rv)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "lease %s/%s: update needs a resourceVersion", l->ns, l->name);
    json_t *obj;
    if (l->cached) {
        /* Keep the server's metadata; drop managedFields (the server maintains them). */
        obj = json_deep_copy(l->cached);
        json_t *meta = json_object_get(obj, "metadata");
        if (!json_is_object(meta)) {
            meta = json_object();
            json_object_set_new(obj, "metadata", meta);
        }
        json_object_del(meta, "managedFields");
        json_object_set_new(meta, "resourceVersion", json_string(rv));
        json_object_set_new(obj, "spec", lop_lease_spec_to_json(rec));
    } else {
        obj = lop_lease_to_json(l->ns, l->name, rv, rec);
    }
    lop_buf_t path = LOP_BUF_INIT;
    lop_buf_printf(&path, "%s?fieldManager=%s", l->item_path, LEASE_FIELD_MANAGER);
    lop_rc_t rc = rl_write(l, "PUT", path.data, obj, rv_out, err);
    lop_buf_free(&path);
    return rc;
}

static void rl_free(void *ud)
{
    rest_lease_t *l = ud;
    remember(l, NULL);
    free(l->ns);
    free(l->name);
    free(l->item_path);
    free(l->collection_path);
    free(l);
}

static const lop_lease_client_ops_t rest_ops = {rl_get, rl_create, rl_update, rl_free};

lop_lease_client_t *lop_lease_client_rest_new(lop_rest_client_t *rest, const char *ns, const char *name,
                                              long timeout_ms, lop_err_t *err)
{
    if (!rest) {
        lop_err_set(err, LOP_EINVAL, 0, NULL, "lease client: no REST client");
        return NULL;
    }
    if (!ns || !lop_lease_name_valid(ns)) {
        lop_err_set(err, LOP_EINVAL, 0, NULL,
                    "lease client: namespace \"%.64s\" is not a valid name (lowercase letters, digits, "
                    "'-' and '.')",
                    ns ? ns : "");
        return NULL;
    }
    if (!name || !lop_lease_name_valid(name)) {
        lop_err_set(err, LOP_EINVAL, 0, NULL,
                    "lease client: lease name \"%.64s\" is not a valid name (lowercase letters, digits, "
                    "'-' and '.')",
                    name ? name : "");
        return NULL;
    }
    rest_lease_t *l = lop_xcalloc(1, sizeof *l);
    l->rest = rest;
    l->ns = lop_xstrdup(ns);
    l->name = lop_xstrdup(name);
    l->timeout_ms = timeout_ms > 0 ? timeout_ms : DEFAULT_TIMEOUT_MS;
    lop_buf_t b = LOP_BUF_INIT;
    lop_buf_printf(&b, "/apis/coordination.k8s.io/v1/namespaces/%s/leases", ns);
    l->collection_path = lop_buf_steal(&b);
    lop_buf_printf(&b, "%s/%s", l->collection_path, name);
    l->item_path = lop_buf_steal(&b);
    lop_buf_printf(&b, "leases/%s/%s", ns, name);
    lop_lease_client_t *c = lop_lease_client_new(&rest_ops, l, b.data);
    lop_buf_free(&b);
    return c;
}
