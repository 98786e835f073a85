/* SPDX-License-Identifier: Apache-2.0 */
/* rest_object.c — verb + (apiVersion, kind) → one REST call (see rest_object.h). */
#include "host/kube/client/rest_object.h"

#include <jansson.h>
#include <string.h>

static const char *patch_content_type(const char *t)
{
    if (!t || !*t || !strcmp(t, "merge")) return "application/merge-patch+json";
    if (!strcmp(t, "json")) return "application/json-patch+json";
    if (!strcmp(t, "strategic")) return "application/strategic-merge-patch+json";
    if (!strcmp(t, "apply")) return "application/apply-patch+yaml";
    if (strchr(t, '/')) return t;
    return NULL;
}

static bool has_param(const char *query, const char *name)
{
    if (!query) return false;
    size_t n = strlen(name);
    for (const char *p = query; p && *p; p = strchr(p, '&') ? strchr(p, '&') + 1 : NULL)
        if (!strncmp(p, name, n) && p[n] == '=') return true;
    return false;
}

static void add_param(lop_buf_t *q, const char *k, const char *v)
{
    if (q->len) lop_buf_putc(q, '&');
    lop_buf_printf(q, "%s=", k);
    lop_url_escape(q, v);
}

/* The create body without metadata.resourceVersion (apiserver pkg/storage/etcd3/store.go Create
 * refuses one): a new string when one had to be
 * removed, else NULL (send the body as given; a body jansson cannot read goes to the server as is,
 * which reports what is wrong with it). */
static char *strip_rv(const char *body, size_t len)
{
    json_t *o = json_loadb(body ? body : "", len, 0, NULL);
    json_t *md = json_object_get(o, "metadata");
    char *s = NULL;
    if (json_is_object(md) && json_object_get(md, "resourceVersion")) {
        json_object_del(md, "resourceVersion");
        s = json_dumps(o, JSON_COMPACT);
    }
    json_decref(o);
    return s;
}

lop_rc_t lop_rest_object(lop_rest_client_t *c, lop_restmapper_t *m, const lop_object_req_t *r, lop_rest_resp_t *resp,
                         lop_rest_mapping_t *mapping_out, lop_err_t *err)
{
    const char *verb = r->verb ? r->verb : "";
    const char *method = NULL;
    bool write = true, is_list = !strcmp(verb, "list");
    if (!strcmp(verb, "get") || is_list)
        method = "GET", write = false;
    else if (!strcmp(verb, "create"))
        method = "POST";
    else if (!strcmp(verb, "update"))
        method = "PUT";
    else if (!strcmp(verb, "patch") || !strcmp(verb, "apply"))
        method = "PATCH";
    else if (!strcmp(verb, "delete"))
        method = "DELETE", write = false;
    if (!method) return lop_err_set(err, LOP_EINVAL, 0, NULL, "unknown verb \"%s\"", verb);
    bool needs_name = !is_list && strcmp(verb, "create") != 0;
    if (needs_name && !(r->name && *r->name))
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "%s %s: a name is required", verb, r->kind ? r->kind : "");
    const char *ctype = NULL;
    if (!strcmp(verb, "apply"))
        ctype = "application/apply-patch+yaml";
    else if (!strcmp(verb, "patch") && !(ctype = patch_content_type(r->patch_type)))
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "unknown patch type \"%s\"", r->patch_type);
    if ((!strcmp(verb, "patch") || !strcmp(verb, "apply") || !strcmp(verb, "update")) && !r->body)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "%s needs a body", verb);

    lop_rest_mapping_t mp;
    lop_rc_t rc = lop_restmapper_resolve(m, r->api_version, r->kind, &mp, err);
    if (rc != LOP_OK) return rc;
    if (mapping_out) *mapping_out = mp;
    if (mp.namespaced && !is_list && !(r->ns && *r->ns))
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "%s %s: a namespace is required (namespaced kind)", verb, r->kind);

    lop_buf_t q = LOP_BUF_INIT, path = LOP_BUF_INIT;
    if (r->query && *r->query) lop_buf_puts(&q, r->query);
    if (write && !has_param(r->query, "fieldManager"))
        add_param(&q, "fieldManager",
                  r->field_manager && *r->field_manager ? r->field_manager : LOP_DEFAULT_FIELD_MANAGER);
    if (!strcmp(verb, "apply") && r->force && !has_param(r->query, "force")) add_param(&q, "force", "true");
    char *body = NULL;
    const char *send = r->body;
    size_t len = r->len;
    if (!strcmp(verb, "create") && (body = strip_rv(r->body, r->len))) {
        send = body;
        len = strlen(body);
    }
    if (rc == LOP_OK)
        rc = lop_rest_path(&path, &mp, mp.namespaced ? r->ns : NULL,
                           is_list || !strcmp(verb, "create") ? NULL : r->name, r->subresource, q.data, err);
    if (rc == LOP_OK) {
        lop_rest_req_t req = {.method = method,
                              .path = path.data,
                              .content_type = ctype,
                              .body = send,
                              .len = send ? len : 0,
                              .cancel = r->cancel,
                              .timeout_ms = r->timeout_ms,
                              .deadline_ms = r->deadline_ms,
                              .send_by_ns = r->send_by_ns};
        lop_rest_resp_t local = LOP_REST_RESP_INIT;
        lop_rest_resp_t *rp = resp ? resp : &local;
        rc = lop_rest_request(c, &req, rp, err);
        if (rc == LOP_ENOTFOUND) lop_restmapper_note_404(m, rp);
        lop_rest_resp_cleanup(&local);
    }
    free(body);
    lop_buf_free(&q);
    lop_buf_free(&path);
    return rc;
}
