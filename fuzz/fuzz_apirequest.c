/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the local API server's request parsing, without a server. The input is
 * "<URL path>\n--\n<query string>\n--\n<Accept header>": the path is percent-decoded and routed
 * (apiserver/as_route.h) against a small fake registry, the query is split as as_http.c does
 * it, and the Accept header negotiated (as_accept.h) for a resource and a non-resource endpoint.
 * Checked: a resource route names a resource the registry has, a namespace only for a namespaced
 * resource (and always with a name of one), and only a subresource that resource has; a conversion is granted
 * only where allowed.
 */
#include "fuzz.h"
#include "apiserver/as_accept.h"
#include "apiserver/as_route.h"
#include "apiserver/as_status.h"

#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <sys/queue.h>

static as_res_t fake[] = {
    {.group = "", .version = "v1", .plural = "pods", .namespaced = true, .has_status = true},
    {.group = "", .version = "v1", .plural = "namespaces", .has_status = true},
    {.group = "apps",
     .version = "v1",
     .plural = "deployments",
     .namespaced = true,
     .has_status = true,
     .has_scale = true},
};

static as_res_t *find(void *ud, const char *group, const char *version, const char *plural)
{
    for (size_t i = 0; i < sizeof fake / sizeof fake[0]; i++)
        if (!strcmp(fake[i].group, group) && !strcmp(fake[i].version, version) && !strcmp(fake[i].plural, plural))
            return &fake[i];
    return NULL;
}

static bool segment(const char *s) { return !s || (*s && !strchr(s, '/')); }

static void route(const char *path)
{
    as_route_t r;
    as_route_parse(path, find, NULL, &r);
    /* the core group is "" (as_route.h); every other string is one whole path segment */
    if (!segment(r.group && *r.group ? r.group : NULL) || !segment(r.version) || !segment(r.ns) || !segment(r.name) ||
        !segment(r.sub))
        abort();
    if (r.kind == AS_ROUTE_RESOURCE) {
        if (!r.res || (r.ns && !r.res->namespaced) || (r.res->namespaced && r.name && !r.ns)) abort();
        if (r.sub && !r.name) abort();
        if (r.sub && strcmp(r.sub, "status") && !(r.res->has_scale && !strcmp(r.sub, "scale"))) abort();
    }
    as_route_cleanup(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *pp, *qp = NULL, *ap = NULL;
    size_t pn, qn = 0, an = 0;
    if (!fuzz_next_part(&data, &size, &pp, &pn)) return 0;
    fuzz_next_part(&data, &size, &qp, &qn);
    int has_accept = fuzz_next_part(&data, &size, &ap, &an);
    char *raw = fuzz_strndup(pp, pn);
    char *path = evhttp_uridecode(*raw ? raw : "/", 0, NULL);
    if (path) route(path);
    free(path);
    free(raw);
    if (qp) {
        char *qs = fuzz_strndup(qp, qn);
        struct evkeyvalq q;
        TAILQ_INIT(&q);
        evhttp_parse_query_str(qs, &q);
        for (struct evkeyval *kv = q.tqh_first; kv; kv = kv->next.tqe_next) (void)as_query_bool(kv->value);
        evhttp_clear_headers(&q);
        free(qs);
    }
    char *accept = has_accept ? fuzz_strndup(ap, an) : NULL;
    as_conv_t conv;
    memset(&conv, 0, sizeof conv);
    if (as_accept_negotiate(accept, false, &conv) && conv.kind != AS_CONV_NONE) abort();
    (void)as_accept_negotiate(accept, true, &conv);
    free(accept);
    return 0;
}
