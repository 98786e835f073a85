/* SPDX-License-Identifier: Apache-2.0 */
/* as_route.c — request paths into endpoints (see as_route.h). */
#include "apiserver/as_route.h"

#include "host/util/buf.h"

#include <stdlib.h>
#include <string.h>

static int split_path(char *path, char **seg, int max)
{
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(path, "/", &save); t && n < max; t = strtok_r(NULL, "/", &save)) seg[n++] = t;
    return n;
}

static void discovery(as_route_t *r, const char *group, const char *version, int level)
{
    r->kind = AS_ROUTE_DISCOVERY;
    r->group = group;
    r->version = version;
    r->level = level;
}

/* rest[0..nrest) follows the group and version (nrest >= 1). */
static void resource(as_route_t *r, const char *group, const char *version, char **rest, int nrest,
                     as_route_find_fn find, void *ud)
{
    as_res_t *res = NULL;
    const char *ns = NULL, *name = NULL, *sub = NULL;
    if (nrest >= 3 && !strcmp(rest[0], "namespaces")) {
        as_res_t *cand = find(ud, group, version, rest[2]);
        if (cand && cand->namespaced) {
            if (nrest > 5) return;
            res = cand;
            ns = rest[1];
            name = nrest >= 4 ? rest[3] : NULL;
            sub = nrest >= 5 ? rest[4] : NULL;
        }
    }
    if (!res) {
        res = find(ud, group, version, rest[0]);
        if (!res || nrest > 3) return;
        name = nrest >= 2 ? rest[1] : NULL;
        sub = nrest >= 3 ? rest[2] : NULL;
        if (res->namespaced && name) return;
    }
    if (sub && !((!strcmp(sub, "status") && res->has_status) || (!strcmp(sub, "scale") && res->has_scale) ||
                 (!strcmp(sub, "token") && res->has_token)))
        return;
    r->kind = AS_ROUTE_RESOURCE;
    r->res = res;
    r->ns = ns;
    r->name = name;
    r->sub = sub;
}

void as_route_parse(const char *path, as_route_find_fn find, void *ud, as_route_t *out)
{
    memset(out, 0, sizeof *out);
    out->copy = lop_xstrdup(path);
    char *seg[AS_ROUTE_MAX_SEGMENTS];
    int n = split_path(out->copy, seg, AS_ROUTE_MAX_SEGMENTS);
    out->kind = AS_ROUTE_NOT_FOUND;
    if (n == 0) return;
    if (!strcmp(seg[0], "luaop-fault")) {
        out->kind = AS_ROUTE_FAULT;
    } else if (n == 1 && !strcmp(seg[0], "version")) {
        out->kind = AS_ROUTE_VERSION;
    } else if (!strcmp(seg[0], "healthz") || !strcmp(seg[0], "readyz") || !strcmp(seg[0], "livez")) {
        out->kind = AS_ROUTE_HEALTH;
    } else if (!strcmp(seg[0], "openapi")) {
        out->kind = AS_ROUTE_OPENAPI;
    } else if (!strcmp(seg[0], "api")) {
        if (n == 1)
            discovery(out, NULL, NULL, 0);
        else if (n == 2)
            discovery(out, "", seg[1], 2);
        else
            resource(out, "", seg[1], &seg[2], n - 2, find, ud);
    } else if (!strcmp(seg[0], "apis")) {
        if (n == 1)
            discovery(out, "", NULL, 0);
        else if (n == 2)
            discovery(out, seg[1], NULL, 1);
        else if (n == 3)
            discovery(out, seg[1], seg[2], 2);
        else
            resource(out, seg[1], seg[2], &seg[3], n - 3, find, ud);
    }
}

void as_route_cleanup(as_route_t *r)
{
    free(r->copy);
    r->copy = NULL;
}
