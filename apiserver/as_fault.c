/* SPDX-License-Identifier: Apache-2.0 */
/* as_fault.c — injected faults: arming them, matching requests against them, and the
 * /luaop-fault/ HTTP control endpoint. See as_fault.h. */
#include "apiserver/as_fault.h"

#include "apiserver/as_state.h"
#include "apiserver/as_status.h"
#include "apiserver/as_store.h"
#include "apiserver/as_watch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void as_fault_add(lop_apiserver_t *srv, const as_fault_t *f)
{
    int slot = -1;
    for (int i = 0; i < srv->nfaults; i++)
        if (srv->faults[i].count <= 0) slot = i;
    if (slot < 0) {
        if (srv->nfaults == (int)(sizeof srv->faults / sizeof srv->faults[0]))
            slot = 0;
        else
            slot = srv->nfaults++;
    }
    srv->faults[slot] = *f;
}

static const char *method_name(enum evhttp_cmd_type m)
{
    switch (m) {
    case EVHTTP_REQ_GET: return "GET";
    case EVHTTP_REQ_POST: return "POST";
    case EVHTTP_REQ_PUT: return "PUT";
    case EVHTTP_REQ_PATCH: return "PATCH";
    case EVHTTP_REQ_DELETE: return "DELETE";
    case EVHTTP_REQ_HEAD: return "HEAD";
    default: return "OTHER";
    }
}

bool as_fault_apply(as_req_t *q)
{
    lop_apiserver_t *srv = q->srv;
    for (int i = 0; i < srv->nfaults; i++) {
        as_fault_t *f = &srv->faults[i];
        if (f->count <= 0) continue;
        if (f->verb[0] && strcasecmp(f->verb, q->verb ? q->verb : "") && strcasecmp(f->verb, method_name(q->method)))
            continue;
        if (f->prefix[0] && strncmp(q->path, f->prefix, strlen(f->prefix))) continue;
        f->count--;
        if (f->text) {
            char ra[16];
            snprintf(ra, sizeof ra, "%d", f->retry_after > 0 ? f->retry_after : 1);
            struct evkeyvalq *h = evhttp_request_get_output_headers(q->r);
            evhttp_add_header(h, "Retry-After", ra);
            /* API Priority and Fairness names the flow schema and priority level that judged the
             * request (k8s.io/apiserver pkg/server/filters/priority-and-fairness.go); ours are the
             * bootstrap "global-default" pair, with fixed UIDs */
            evhttp_add_header(h, "X-Kubernetes-PF-FlowSchema-UID", "6f3d1c52-3b0e-4d43-9a57-0f6b1c5e2a10");
            evhttp_add_header(h, "X-Kubernetes-PF-PriorityLevel-UID", "a1c7e2f4-58d9-4b6e-8f03-2d9e4b7c6a21");
            as_log_reject(q, f->code, "injected");
            static const char msg[] = "Too many requests, please try again later.\n";
            as_reply_raw(q, f->code, "text/plain; charset=utf-8", msg, sizeof msg - 1);
            return true;
        }
        json_t *d = NULL;
        if (f->retry_after > 0) {
            d = json_object();
            json_object_set_new(d, "retryAfterSeconds", json_integer(f->retry_after));
        }
        const char *reason = f->code == 429   ? "TooManyRequests"
                             : f->code == 503 ? "ServiceUnavailable"
                             : f->code == 504 ? "Timeout"
                             : f->code == 500 ? "InternalError"
                                              : "";
        as_reply_status(q, f->code, reason, d, "injected fault (%d)", f->code);
        return true;
    }
    return false;
}

/* POST /luaop-fault/<action>?... (loop thread). */
void as_fault_http(as_req_t *q)
{
    lop_apiserver_t *srv = q->srv;
    if (!srv->fault_control) {
        as_reply_status(q, 404, "NotFound", NULL, "the server could not find the requested resource");
        return;
    }
    if (q->method != EVHTTP_REQ_POST) {
        as_reply_status(q, 405, "MethodNotAllowed", NULL, "fault control takes POST");
        return;
    }
    const char *action = q->path + strlen("/luaop-fault/");
    if (strlen(q->path) < strlen("/luaop-fault/")) action = "";
    if (!strcmp(action, "close-watches")) {
        as_watch_close_all(srv);
    } else if (!strcmp(action, "compact")) {
        as_store_compact(srv);
    } else if (!strcmp(action, "fail")) {
        const char *c = as_query(q, "code"), *n = as_query(q, "count"), *ra = as_query(q, "retryAfter");
        as_fault_t f = {.count = n ? atoi(n) : 1, .code = c ? atoi(c) : 500, .retry_after = ra ? atoi(ra) : 0};
        if (f.code < 400 || f.code > 599) {
            as_reply_status(q, 400, "BadRequest", NULL, "code must be 400..599");
            return;
        }
        f.text = as_query_bool(as_query(q, "text"));
        snprintf(f.verb, sizeof f.verb, "%s", as_query(q, "verb") ? as_query(q, "verb") : "");
        snprintf(f.prefix, sizeof f.prefix, "%s", as_query(q, "path") ? as_query(q, "path") : "");
        as_fault_add(srv, &f);
    } else if (!strcmp(action, "stall")) {
        const char *on = as_query(q, "on");
        as_watch_set_stall(srv, !on || !strcmp(on, "true") || !strcmp(on, "1"));
    } else if (!strcmp(action, "latency")) {
        const char *ms = as_query(q, "ms");
        srv->latency_ms = ms ? atoi(ms) : 0;
    } else if (!strcmp(action, "reset")) {
        json_t *ok = json_pack("{s:b}", "ok", 1);
        as_reply_json(q, 200, ok, false);
        as_state_reset(srv);
        return;
    } else if (!strcmp(action, "bookmark")) {
        as_watch_bookmark_all(srv);
    } else {
        as_reply_status(q, 404, "NotFound", NULL, "unknown fault action \"%s\"", action);
        return;
    }
    json_t *ok = json_pack("{s:b,s:I}", "ok", 1, "revision", (json_int_t)srv->rev);
    as_reply_json(q, 200, ok, false);
}
