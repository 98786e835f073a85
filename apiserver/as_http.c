/* SPDX-License-Identifier: Apache-2.0 */
/* as_http.c — request entry point: authentication and authorization, injected faults and latency, URL routing to
 * discovery / resources / subresources, and verb dispatch
 * (kubernetes.io/docs/reference/using-api/api-concepts/). */
#include "apiserver/as_http.h"

#include "apiserver/as_accept.h"
#include "apiserver/as_authn.h"
#include "apiserver/as_authz.h"
#include "apiserver/as_delete.h"
#include "apiserver/as_fault.h"
#include "apiserver/as_openapi.h"
#include "apiserver/as_patch_handler.h"
#include "apiserver/as_read.h"
#include "apiserver/as_registry.h"
#include "apiserver/as_review.h"
#include "apiserver/as_route.h"
#include "apiserver/as_status.h"
#include "apiserver/as_table.h"
#include "apiserver/as_util.h"
#include "apiserver/as_watch.h"
#include "apiserver/as_write.h"

#include "host/util/log.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *method_name(enum evhttp_cmd_type m)
{
    switch (m) {
    case EVHTTP_REQ_GET: return "GET";
    case EVHTTP_REQ_POST: return "POST";
    case EVHTTP_REQ_PUT: return "PUT";
    case EVHTTP_REQ_PATCH: return "PATCH";
    case EVHTTP_REQ_DELETE: return "DELETE";
    case EVHTTP_REQ_HEAD: return "HEAD";
    case EVHTTP_REQ_OPTIONS: return "OPTIONS";
    default: return "OTHER";
    }
}

/* The authorization filter (k8s.io/apiserver/pkg/endpoints/filters/authorization.go): false
 * after answering 403. */
static bool authorized(as_req_t *q)
{
    if (!q->srv->authz_rbac) return true;
    as_attrs_t a;
    as_reqinfo_parse(method_name(q->method), q->path, as_query(q, "watch"), as_query(q, "fieldSelector"), &a);
    as_decision_t d;
    as_authorize(q->srv, q->user, &a, &d);
    if (d.allowed) return true;
    as_reply_forbidden(q, q->user, &a, d.reason);
    return false;
}

static void method_not_allowed(as_req_t *q)
{
    as_reply_status(q, 405, "MethodNotAllowed", NULL,
                    "the server does not allow this method on the requested resource");
}

/* The create-only review kinds and the token subresource (as_review.h). */
static void route_review(as_req_t *q)
{
    if (q->method != EVHTTP_REQ_POST)
        method_not_allowed(q);
    else if (q->sub[0])
        as_review_token_request(q);
    else if (q->name[0] || (q->res->namespaced && !q->ns[0]))
        method_not_allowed(q);
    else
        as_review_create(q);
}

static void reply_version(as_req_t *q)
{
    json_t *v = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "major", "1", "minor", "32", "gitVersion",
                          "v1.32.0-luaop", "gitCommit", "luaop", "gitTreeState", "clean", "buildDate",
                          "2026-01-01T00:00:00Z", "goVersion", "n/a", "compiler", "luaop", "platform", "linux/amd64");
    as_reply_json(q, 200, v, false);
}

static void not_found(as_req_t *q)
{
    as_reply_status(q, 404, "NotFound", NULL, "the server could not find the requested resource");
}

/* Negotiate the request's Accept for this endpoint (resource: conversions may be asked for);
 * false after answering 406 NotAcceptable. */
static bool negotiate(as_req_t *q, bool resource)
{
    const char *accept = evhttp_find_header(evhttp_request_get_input_headers(q->r), "Accept");
    if (as_accept_negotiate(accept, resource, &q->conv)) {
        const char *inc = as_query(q, "includeObject");
        if (q->conv.kind != AS_CONV_TABLE || as_table_include(inc, &q->conv.include)) return true;
        as_reply_status(q, 400, "BadRequest", NULL,
                        "includeObject: Unsupported value: \"%s\": supported values: \"Metadata\", \"None\", "
                        "\"Object\"",
                        inc);
        return false;
    }
    as_reply_status(q, 406, "NotAcceptable", NULL,
                    "only the following media types are accepted: application/json, application/yaml");
    return false;
}

static as_res_t *find_res(void *ud, const char *group, const char *version, const char *plural)
{
    return as_res_find(ud, group, version, plural);
}

static void route(as_req_t *q)
{
    as_route_t rt;
    as_route_parse(q->path, find_res, q->srv, &rt);
    switch (rt.kind) {
    case AS_ROUTE_FAULT: as_fault_http(q); goto done;
    case AS_ROUTE_VERSION:
        if (negotiate(q, false)) reply_version(q);
        goto done;
    case AS_ROUTE_HEALTH: as_reply_raw(q, 200, "text/plain; charset=utf-8", "ok", 2); goto done;
    case AS_ROUTE_OPENAPI: as_serve_openapi(q); goto done;
    /* discovery: legacy documents only, so an aggregated-discovery range (as=APIGroupDiscoveryList)
     * is skipped and the client falls back */
    case AS_ROUTE_DISCOVERY: /* a fault with no verb ("any request") fails discovery too */
        if (!as_fault_apply(q) && negotiate(q, false)) as_serve_discovery(q, rt.group, rt.version, rt.level);
        goto done;
    case AS_ROUTE_NOT_FOUND: not_found(q); goto done;
    case AS_ROUTE_RESOURCE: break;
    }
    as_res_t *res = rt.res;
    const char *ns = rt.ns, *name = rt.name, *sub = rt.sub;
    q->res = res;
    if (res->deprecation_warning) as_add_warning(q, res->deprecation_warning); /* every request */
    snprintf(q->ns, sizeof q->ns, "%s", ns ? ns : "");
    snprintf(q->name, sizeof q->name, "%s", name ? name : "");
    snprintf(q->sub, sizeof q->sub, "%s", sub ? sub : "");
    if (strlen(ns ? ns : "") >= sizeof q->ns || strlen(name ? name : "") >= sizeof q->name) {
        as_reply_status(q, 400, "BadRequest", NULL, "name too long");
        goto done;
    }
    switch (q->method) {
    case EVHTTP_REQ_GET:
        if (!name)
            q->verb = as_query_bool(as_query(q, "watch")) ? "watch" : "list";
        else
            q->verb = "get";
        break;
    case EVHTTP_REQ_POST: q->verb = "create"; break;
    case EVHTTP_REQ_PUT: q->verb = "update"; break;
    case EVHTTP_REQ_PATCH: q->verb = "patch"; break;
    case EVHTTP_REQ_DELETE: q->verb = name ? "delete" : "deletecollection"; break;
    default: q->verb = "other"; break;
    }
    if (as_fault_apply(q) || !negotiate(q, true)) goto done;
    if (res->create_only || (sub && !strcmp(sub, "token"))) {
        route_review(q);
    } else if (!name) {
        if (q->method == EVHTTP_REQ_GET) {
            if (!strcmp(q->verb, "watch"))
                as_handle_watch(q);
            else
                as_handle_list(q);
        } else if (q->method == EVHTTP_REQ_POST) {
            if (res->namespaced && !ns)
                method_not_allowed(q);
            else
                as_handle_create(q);
        } else if (q->method == EVHTTP_REQ_DELETE) {
            as_handle_deletecollection(q);
        } else {
            method_not_allowed(q);
        }
    } else {
        switch (q->method) {
        case EVHTTP_REQ_GET: as_handle_get(q); break;
        case EVHTTP_REQ_PUT: as_handle_update(q); break;
        case EVHTTP_REQ_PATCH: as_handle_patch(q); break;
        case EVHTTP_REQ_DELETE:
            if (sub)
                method_not_allowed(q);
            else
                as_handle_delete(q);
            break;
        default: method_not_allowed(q); break;
        }
    }
done:
    as_route_cleanup(&rt);
}

/* Disable Nagle on the connection. Without it, a watch event written while the previous one is
 * not yet acknowledged waits for the client's delayed ACK (~40 ms on Linux): the watcher sends
 * nothing back on its connection, so the ACK is never piggybacked. Every write then looks
 * serialized behind that timer (read-your-writes waits for the event). Set on each request of a
 * connection: libevent 2.1 has no per-connection hook on evhttp, and the call is cheap. */
static void set_nodelay(struct bufferevent *bev)
{
    evutil_socket_t fd = bufferevent_getfd(bev);
    int one = 1;
    if (fd >= 0) (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static void process(lop_apiserver_t *srv, struct evhttp_request *r)
{
    as_req_t q;
    memset(&q, 0, sizeof q);
    q.srv = srv;
    q.r = r;
    q.method = evhttp_request_get_command(r);
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(r);
    const char *p = uri ? evhttp_uri_get_path(uri) : NULL;
    q.path = evhttp_uridecode(p && *p ? p : "/", 0, NULL);
    if (!q.path) q.path = lop_xstrdup("/");
    TAILQ_INIT(&q.q);
    const char *qs = uri ? evhttp_uri_get_query(uri) : NULL;
    if (qs) evhttp_parse_query_str(qs, &q.q);
    struct evhttp_connection *conn = evhttp_request_get_connection(r);
    struct bufferevent *bev = conn ? evhttp_connection_get_bufferevent(conn) : NULL;
    if (bev) { /* libevent's default is 16 KiB per loop iteration; big lists want more */
        bufferevent_set_max_single_write(bev, 1024 * 1024);
        set_nodelay(bev);
    }
    struct evbuffer *in = evhttp_request_get_input_buffer(r);
    q.body_len = evbuffer_get_length(in);
    q.body = q.body_len ? (char *)evbuffer_pullup(in, -1) : NULL;
    char audit[37];
    as_uuid(audit);
    evhttp_add_header(evhttp_request_get_output_headers(r), "Audit-Id", audit);
    /* Accept is negotiated per endpoint in route() (after authentication, as the API server's
     * handlers do); /openapi/v2, which kubectl asks for in protobuf only, gets 406 unless JSON
     * is acceptable (as_openapi.c). */
    q.user = as_authn_request(&q);
    if (!q.user)
        as_reply_status(&q, 401, "Unauthorized", NULL, "Unauthorized");
    else if (as_impersonate(&q) && authorized(&q))
        route(&q);
    as_user_free(q.user);
    evhttp_clear_headers(&q.q);
    free(q.path);
}

typedef struct as_delayed {
    lop_apiserver_t *srv;
    struct evhttp_request *r;
    struct event *ev;
    struct as_delayed *next;
} delayed_t;

static void delayed_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    delayed_t *d = arg;
    for (delayed_t **p = &d->srv->delayed; *p; p = &(*p)->next)
        if (*p == d) {
            *p = d->next;
            break;
        }
    event_free(d->ev);
    process(d->srv, d->r);
    free(d);
}

void as_http_drop_delayed(lop_apiserver_t *srv)
{
    while (srv->delayed) {
        delayed_t *d = srv->delayed;
        srv->delayed = d->next;
        event_free(d->ev);
        free(d);
    }
}

void as_http_handle(struct evhttp_request *r, void *arg)
{
    lop_apiserver_t *srv = arg;
    if (srv->latency_ms > 0) {
        delayed_t *d = lop_xmalloc(sizeof *d);
        d->srv = srv;
        d->r = r;
        d->ev = evtimer_new(srv->base, delayed_cb, d);
        d->next = srv->delayed;
        srv->delayed = d;
        struct timeval tv = {srv->latency_ms / 1000, (srv->latency_ms % 1000) * 1000};
        evtimer_add(d->ev, &tv);
        return;
    }
    process(srv, r);
}
