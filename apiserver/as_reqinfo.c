/* SPDX-License-Identifier: Apache-2.0 */
/* as_reqinfo.c — a request's authorization attributes (see as_reqinfo.h). */
#include "apiserver/as_reqinfo.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PARTS 16

static int split(char *p, char **parts)
{
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(p, "/", &save); t && n < MAX_PARTS; t = strtok_r(NULL, "/", &save)) parts[n++] = t;
    return n;
}

static void set(char *dst, size_t n, const char *s) { snprintf(dst, n, "%s", s ? s : ""); }

static bool parse_bool(const char *s)
{
    return s && (!strcmp(s, "1") || !strcmp(s, "t") || !strcmp(s, "T") || !strcmp(s, "true") || !strcmp(s, "TRUE") ||
                 !strcmp(s, "True"));
}

/* The X of a selector that is exactly "metadata.name=X" (or "==X"), else NULL (into buf). */
static const char *name_from_selector(const char *fs, char *buf, size_t n)
{
    if (!fs) return NULL;
    const char *v = NULL;
    if (!strncmp(fs, "metadata.name==", 15))
        v = fs + 15;
    else if (!strncmp(fs, "metadata.name=", 14))
        v = fs + 14;
    if (!v || !*v || strchr(v, ',') || strchr(v, '/') || strchr(v, '%') || !strcmp(v, ".") || !strcmp(v, ".."))
        return NULL;
    snprintf(buf, n, "%s", v);
    return buf;
}

static const char *method_verb(const char *method)
{
    if (!strcmp(method, "POST")) return "create";
    if (!strcmp(method, "GET") || !strcmp(method, "HEAD")) return "get";
    if (!strcmp(method, "PUT")) return "update";
    if (!strcmp(method, "PATCH")) return "patch";
    if (!strcmp(method, "DELETE")) return "delete";
    return "";
}

/* parts[0..n) follow the group and version (n >= 1). */
static void resource_parts(as_attrs_t *o, char **parts, int n, const char *method, const char *watch, const char *fs)
{
    if (!strcmp(parts[0], "watch")) {
        set(o->verb, sizeof o->verb, "watch");
        parts++;
        n--;
    } else {
        set(o->verb, sizeof o->verb, method_verb(method));
    }
    if (n >= 2 && !strcmp(parts[0], "namespaces")) {
        set(o->ns, sizeof o->ns, parts[1]);
        if (n > 2 && strcmp(parts[2], "status") && strcmp(parts[2], "finalize")) {
            parts += 2;
            n -= 2;
        }
    }
    if (n >= 1) set(o->resource, sizeof o->resource, parts[0]);
    if (n >= 2) set(o->name, sizeof o->name, parts[1]);
    if (n >= 3) set(o->subresource, sizeof o->subresource, parts[2]);
    if (!o->name[0] && !strcmp(o->verb, "get")) {
        set(o->verb, sizeof o->verb, parse_bool(watch) ? "watch" : "list");
        char buf[AS_ATTR_MAX];
        set(o->name, sizeof o->name, name_from_selector(fs, buf, sizeof buf));
    }
    if (!o->name[0] && !strcmp(o->verb, "delete")) set(o->verb, sizeof o->verb, "deletecollection");
}

void as_reqinfo_parse(const char *method, const char *path, const char *watch, const char *field_selector,
                      as_attrs_t *out)
{
    memset(out, 0, sizeof *out);
    set(out->path, sizeof out->path, path);
    size_t i = 0;
    for (; method[i] && i + 1 < sizeof out->verb; i++) out->verb[i] = (char)tolower((unsigned char)method[i]);
    out->verb[i] = '\0';
    char *copy = strdup(path);
    if (!copy) return;
    char *parts[MAX_PARTS];
    int n = split(copy, parts);
    bool core = n > 0 && !strcmp(parts[0], "api"), named = n > 0 && !strcmp(parts[0], "apis");
    int first = core ? 2 : 3; /* index of the first part after the version */
    if ((!core && !named) || n < first + 1) {
        free(copy);
        return;
    }
    out->resource_request = true;
    if (named) set(out->group, sizeof out->group, parts[1]);
    set(out->version, sizeof out->version, parts[first - 1]);
    resource_parts(out, parts + first, n - first, method, watch, field_selector);
    free(copy);
}
