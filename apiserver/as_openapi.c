/* SPDX-License-Identifier: Apache-2.0 */
/* as_openapi.c — the schema table parser and the /openapi/v3 and /openapi/v2 documents (kube-openapi
 * handler3/handler, apiextensions-apiserver's CRD OpenAPI builder). See as_openapi.h. */
#include "apiserver/as_openapi.h"

#include "apiserver/as_accept.h"
#include "apiserver/as_status.h"
#include "apiserver/as_store.h"

#include "host/util/log.h"

#include <ctype.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REF_PREFIX "#/components/schemas/"

/* ---- the schema table ---- */

/* The one name in names ending with ".<short>" (or equal to it), or NULL. */
static const char *resolve_ref(const json_t *names, const char *shortname)
{
    size_t sl = strlen(shortname), i;
    const json_t *n;
    json_array_foreach(names, i, n)
    {
        const char *s = json_string_value(n);
        size_t l = strlen(s);
        if (!strcmp(s, shortname) || (l > sl && s[l - sl - 1] == '.' && !strcmp(s + l - sl, shortname))) return s;
    }
    return NULL;
}

static json_t *ref_to(const char *name)
{
    char r[512];
    snprintf(r, sizeof r, REF_PREFIX "%s", name);
    return json_pack("{s:s}", "$ref", r);
}

/* The schema of a type token (see as_openapi.h), or NULL when it is unknown. */
static json_t *type_schema(const json_t *names, const char *t)
{
    static const char *const plain[][3] = {
        {"string", "string", NULL},
        {"boolean", "boolean", NULL},
        {"number", "number", NULL},
        {"integer", "integer", NULL},
        {"int32", "integer", "int32"},
        {"int64", "integer", "int64"},
        {"double", "number", "double"},
        {"byte", "string", "byte"},
        {"date-time", "string", "date-time"},
        {"object", "object", NULL},
        {"intorstr", "string", "int-or-string"},
    };
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
        if (strcmp(t, plain[i][0])) continue;
        json_t *s = json_pack("{s:s}", "type", plain[i][1]);
        if (plain[i][2]) json_object_set_new(s, "format", json_string(plain[i][2]));
        return s;
    }
    if (!strcmp(t, "preserve"))
        return json_pack("{s:s,s:b}", "type", "object", "x-kubernetes-preserve-unknown-fields", 1);
    if (!strncmp(t, "[]", 2) || !strncmp(t, "{}", 2)) {
        json_t *inner = type_schema(names, t + 2);
        if (!inner) return NULL;
        if (t[0] == '[') return json_pack("{s:s,s:o}", "type", "array", "items", inner);
        return json_pack("{s:s,s:o}", "type", "object", "additionalProperties", inner);
    }
    if (t[0] == '&') {
        const char *full = resolve_ref(names, t + 1);
        return full ? ref_to(full) : NULL;
    }
    return NULL;
}

/* A property: a reference gets its description beside it through allOf, as kube-openapi's v3
 * documents write it. */
static json_t *property(const json_t *names, const char *type, const char *merge_key, const char *desc)
{
    json_t *s = type_schema(names, type);
    if (!s) return NULL;
    if (json_object_get(s, "$ref")) {
        json_t *w = json_pack("{s:[o]}", "allOf", s);
        s = w;
    }
    if (*desc) json_object_set_new(s, "description", json_string(desc));
    if (merge_key) {
        json_object_set_new(s, "x-kubernetes-patch-merge-key", json_string(merge_key));
        json_object_set_new(s, "x-kubernetes-patch-strategy", json_string("merge"));
    }
    return s;
}

static void add_type_meta(json_t *def)
{
    json_t *props = json_object_get(def, "properties");
    json_object_set_new(props, "apiVersion",
                        json_pack("{s:s,s:s}", "type", "string", "description",
                                  "The versioned schema of this representation (group/version); the server may "
                                  "convert what it receives to the latest one."));
    json_object_set_new(props, "kind",
                        json_pack("{s:s,s:s}", "type", "string", "description",
                                  "The REST resource this object represents, in CamelCase. Set by the server from "
                                  "the endpoint the request went to."));
    json_object_set_new(props, "metadata",
                        json_pack("{s:[{s:s}],s:s}", "allOf", "$ref",
                                  REF_PREFIX "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "description",
                                  "The object's metadata: name, namespace, labels, annotations, ..."));
}

/* Split "left | desc" in place: returns desc ("" when there is none) and ends left. */
static char *split_desc(char *line)
{
    char *bar = strstr(line, " | ");
    if (!bar) return line + strlen(line);
    *bar = '\0';
    return bar + 3;
}

/* One definition line "= name [kind|type]" into *name and a fresh schema. */
static json_t *parse_def(const json_t *names, char *left, const char *desc, const char **name)
{
    char *tok = strtok(left + 1, " ");
    char *flag = strtok(NULL, " ");
    *name = tok;
    json_t *d;
    if (flag && strcmp(flag, "kind")) {
        d = type_schema(names, flag);
        if (!d) return NULL;
    } else {
        d = json_pack("{s:s,s:{}}", "type", "object", "properties");
        if (flag) add_type_meta(d);
    }
    if (*desc) json_object_set_new(d, "description", json_string(desc));
    return d;
}

/* One field line into def; false when it does not parse. */
static bool parse_field(const json_t *names, json_t *def, char *left, const char *desc)
{
    char *field = strtok(left, " "), *type = strtok(NULL, " "), *key = strtok(NULL, " ");
    if (!field || !type || (key && key[0] != '~')) return false;
    size_t fl = strlen(field);
    bool required = field[fl - 1] == '!';
    if (required) field[fl - 1] = '\0';
    json_t *p = property(names, type, key ? key + 1 : NULL, desc);
    json_t *props = json_object_get(def, "properties");
    if (!p || !props) {
        json_decref(p);
        return false;
    }
    json_object_set_new(props, field, p);
    if (required) {
        json_t *req = json_object_get(def, "required");
        if (!req) json_object_set_new(def, "required", req = json_array());
        json_array_append_new(req, json_string(field));
    }
    return true;
}

/* The definitions' names (first pass, so references can point forward). */
static json_t *table_names(const char *table)
{
    json_t *names = json_array();
    for (const char *p = table; *p;) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n > 2 && p[0] == '=' && p[1] == ' ') {
            size_t l = strcspn(p + 2, " \n");
            json_array_append_new(names, json_stringn(p + 2, l));
        }
        p += n + (e ? 1 : 0);
    }
    return names;
}

json_t *as_schemas_parse(const char *table, char *errbuf, size_t errlen)
{
    json_t *names = table_names(table), *out = json_object(), *def = NULL;
    int lineno = 0;
    bool ok = true;
    for (const char *p = table; *p && ok;) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        char line[1024];
        snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), p);
        p += n + (e ? 1 : 0);
        lineno++;
        if (!line[0] || line[0] == '#') continue;
        char *desc = split_desc(line);
        if (line[0] == '=') {
            const char *name = NULL;
            def = parse_def(names, line, desc, &name);
            ok = def && name;
            if (ok) json_object_set_new(out, name, def);
        } else {
            ok = def && parse_field(names, def, line, desc);
        }
        if (!ok) snprintf(errbuf, errlen, "schema table line %d: cannot parse it (or a reference in it)", lineno);
    }
    json_decref(names);
    if (!ok) {
        json_decref(out);
        return NULL;
    }
    return out;
}

static json_t *builtin_components;
static pthread_once_t builtin_once = PTHREAD_ONCE_INIT;

static void builtin_init(void)
{
    char err[200];
    builtin_components = as_schemas_parse(as_schemas_builtin, err, sizeof err);
    if (!builtin_components) {
        lop_log(LOP_LOG_ERROR, "built-in OpenAPI schemas", "error", err, NULL);
        builtin_components = json_object();
    }
}

/* The parsed built-in table (shared, never changed: read it, copy what goes into a document). */
static const json_t *builtins(void)
{
    pthread_once(&builtin_once, builtin_init);
    return builtin_components;
}

/* ---- documents ---- */

/* The component name of res's kind (suffix "" or "List"): io.k8s.api.<group's first label>.<v>.<Kind>
 * for built-ins (core for the core group, apiextensions' own package), the reversed group for
 * custom resources. */
static void component_name(const as_res_t *res, const char *suffix, char *buf, size_t n)
{
    if (res->is_cr) {
        char rev[300] = "";
        const char *g = res->group, *end = g + strlen(g);
        while (end > g) {
            const char *dot = end;
            while (dot > g && dot[-1] != '.') dot--;
            size_t l = strlen(rev);
            snprintf(rev + l, sizeof rev - l, "%s%.*s", l ? "." : "", (int)(end - dot), dot);
            end = dot > g ? dot - 1 : g;
        }
        snprintf(buf, n, "%s.%s.%s%s", rev, res->version, res->kind, suffix);
    } else if (!strcmp(res->group, "apiextensions.k8s.io")) {
        snprintf(buf, n, "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.%s.%s%s", res->version, res->kind,
                 suffix);
    } else {
        size_t gl = strcspn(res->group, ".");
        snprintf(buf, n, "io.k8s.api.%.*s.%s.%s%s", (int)(gl ? gl : 4), gl ? res->group : "core", res->version,
                 res->kind, suffix);
    }
}

static json_t *gvk_ext(const as_res_t *res, const char *kind)
{
    return json_pack("[{s:s,s:s,s:s}]", "group", res->group, "kind", kind, "version", res->version);
}

/* A custom resource's schema: its openAPIV3Schema with apiVersion, kind and a metadata that
 * refers to ObjectMeta, as the CRD OpenAPI builder adds them. */
static json_t *cr_schema(const as_res_t *res)
{
    json_t *s = res->schema ? json_deep_copy(res->schema) : json_object();
    if (!json_object_get(s, "type")) json_object_set_new(s, "type", json_string("object"));
    json_t *props = json_object_get(s, "properties");
    if (!json_is_object(props)) json_object_set_new(s, "properties", props = json_object());
    json_t *tm = json_pack("{s:s,s:{}}", "type", "object", "properties");
    add_type_meta(tm);
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(tm, "properties"), k, v)
    {
        json_t *mine = json_object_get(props, k);
        if (!strcmp(k, "metadata") || !mine || !json_object_get(mine, "description")) json_object_set(props, k, v);
    }
    json_decref(tm);
    return s;
}

/* The schema of res's kind (a copy), found in the built-in table or built for a custom resource;
 * a kind missing from the table gets an object with just its type and object metadata. */
static json_t *kind_schema(const as_res_t *res, const char *name)
{
    json_t *s;
    if (res->is_cr) {
        s = cr_schema(res);
    } else {
        const json_t *b = json_object_get(builtins(), name);
        if (b) {
            s = json_deep_copy(b);
        } else {
            s = json_pack("{s:s,s:s,s:{}}", "description", res->kind, "type", "object", "properties");
            add_type_meta(s);
        }
    }
    json_object_set_new(s, "x-kubernetes-group-version-kind", gvk_ext(res, res->kind));
    return s;
}

static json_t *list_schema(const as_res_t *res, const char *item_name)
{
    char desc[300];
    snprintf(desc, sizeof desc, "A list of %s objects.", res->kind);
    json_t *s =
        json_pack("{s:s,s:s,s:[s],s:{}}", "description", desc, "type", "object", "required", "items", "properties");
    add_type_meta(s);
    json_t *props = json_object_get(s, "properties");
    json_object_set_new(props, "metadata",
                        json_pack("{s:[{s:s}],s:s}", "allOf", "$ref",
                                  REF_PREFIX "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta", "description",
                                  "The list's metadata: resourceVersion and continue."));
    json_t *item = ref_to(item_name);
    json_object_set_new(props, "items",
                        json_pack("{s:s,s:o,s:s}", "type", "array", "items", item, "description", "The objects."));
    json_object_set_new(s, "x-kubernetes-group-version-kind", gvk_ext(res, res->list_kind));
    return s;
}

/* Add every component the schemas in comps refer to (from the built-in table), transitively. */
static void collect_refs(const json_t *v, json_t *want)
{
    if (json_is_array(v)) {
        size_t i;
        const json_t *x;
        json_array_foreach(v, i, x) collect_refs(x, want);
        return;
    }
    if (!json_is_object(v)) return;
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)v, k, x)
    {
        if (!strcmp(k, "$ref") && json_is_string(x) && !strncmp(json_string_value(x), REF_PREFIX, strlen(REF_PREFIX)))
            json_object_set_new(want, json_string_value(x) + strlen(REF_PREFIX), json_true());
        else
            collect_refs(x, want);
    }
}

static void add_closure(json_t *comps)
{
    for (bool added = true; added;) {
        added = false;
        json_t *want = json_object();
        collect_refs(comps, want);
        const char *k;
        json_t *x;
        json_object_foreach(want, k, x)
        {
            const json_t *b = json_object_get(builtins(), k);
            if (!json_object_get(comps, k) && b) {
                json_object_set_new(comps, k, json_deep_copy(b));
                added = true;
            }
        }
        json_decref(want);
    }
}

/* The PATCH operation of res (its GVK and the parameters kubectl looks for); v2 documents give
 * parameters a type, v3 ones a schema. */
static json_t *patch_op(const as_res_t *res, bool v2)
{
    static const char *const params[][2] = {
        {"dryRun", "string"}, {"fieldManager", "string"}, {"fieldValidation", "string"}, {"force", "boolean"}};
    json_t *ps = json_array();
    for (size_t i = 0; i < 4; i++) {
        json_t *p = json_pack("{s:s,s:s}", "name", params[i][0], "in", "query");
        if (v2)
            json_object_set_new(p, "type", json_string(params[i][1]));
        else
            json_object_set_new(p, "schema", json_pack("{s:s}", "type", params[i][1]));
        json_array_append_new(ps, p);
    }
    return json_pack("{s:{s:s,s:s,s:s},s:o,s:{}}", "x-kubernetes-group-version-kind", "group", res->group, "version",
                     res->version, "kind", res->kind, "parameters", ps, "responses");
}

/* paths and components of group/version into *paths and *comps (both objects, added to). */
static void gv_parts(lop_apiserver_t *srv, const char *group, const char *version, bool v2, json_t *paths,
                     json_t *comps)
{
    for (size_t i = 0; i < srv->nres; i++) {
        as_res_t *r = srv->res[i];
        if (strcmp(r->group, group) || strcmp(r->version, version)) continue;
        char p[600], name[400], lname[420];
        snprintf(p, sizeof p, "/%s%s/%s%s/{name}", r->group[0] ? "apis/" : "api/", r->api_version,
                 r->namespaced ? "namespaces/{namespace}/" : "", r->plural);
        json_object_set_new(paths, p, json_pack("{s:o}", "patch", patch_op(r, v2)));
        component_name(r, "", name, sizeof name);
        component_name(r, "List", lname, sizeof lname);
        json_object_set_new(comps, name, kind_schema(r, name));
        json_object_set_new(comps, lname, list_schema(r, name));
    }
    add_closure(comps);
}

static json_t *gv_doc(lop_apiserver_t *srv, const char *group, const char *version)
{
    json_t *paths = json_object(), *comps = json_object();
    gv_parts(srv, group, version, false, paths, comps);
    return json_pack("{s:s,s:{s:s,s:s},s:o,s:{s:o}}", "openapi", "3.0.0", "info", "title", "Kubernetes", "version",
                     "v1.32.0", "paths", paths, "components", "schemas", comps);
}

/* A v3 schema tree rewritten for Swagger 2.0: references into #/definitions/, and an allOf
 * around one reference unwrapped (its description kept beside the $ref). */
static void to_v2(json_t *v)
{
    if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) to_v2(x);
        return;
    }
    if (!json_is_object(v)) return;
    json_t *all = json_object_get(v, "allOf");
    if (json_array_size(all) == 1 && json_object_get(json_array_get(all, 0), "$ref")) {
        json_object_set(v, "$ref", json_object_get(json_array_get(all, 0), "$ref"));
        json_object_del(v, "allOf");
    }
    const char *k;
    json_t *x;
    json_object_foreach(v, k, x)
    {
        if (!strcmp(k, "$ref") && json_is_string(x) && !strncmp(json_string_value(x), REF_PREFIX, strlen(REF_PREFIX))) {
            char r[512];
            snprintf(r, sizeof r, "#/definitions/%s", json_string_value(x) + strlen(REF_PREFIX));
            json_string_set(x, r);
        } else {
            to_v2(x);
        }
    }
}

/* Every distinct group/version served, in table order: an array of [group, version]. */
static json_t *served_gvs(lop_apiserver_t *srv)
{
    json_t *gvs = json_array();
    for (size_t i = 0; i < srv->nres; i++) {
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen =
                !strcmp(srv->res[j]->group, srv->res[i]->group) && !strcmp(srv->res[j]->version, srv->res[i]->version);
        if (!seen) json_array_append_new(gvs, json_pack("[s,s]", srv->res[i]->group, srv->res[i]->version));
    }
    return gvs;
}

static json_t *v2_doc(lop_apiserver_t *srv)
{
    json_t *paths = json_object(), *defs = json_object(), *gvs = served_gvs(srv);
    size_t i;
    json_t *gv;
    json_array_foreach(gvs, i, gv)
    {
        gv_parts(srv, json_string_value(json_array_get(gv, 0)), json_string_value(json_array_get(gv, 1)), true, paths,
                 defs);
    }
    json_decref(gvs);
    to_v2(defs);
    return json_pack("{s:s,s:{s:s,s:s},s:o,s:o}", "swagger", "2.0", "info", "title", "Kubernetes", "version", "v1.32.0",
                     "paths", paths, "definitions", defs);
}

/* doc (stolen) serialized with sorted keys (so equal documents are equal bytes) and the
 * upper-case hex SHA-512 of those bytes (the hash kube-openapi publishes) into hash[129]. */
static char *dump_hashed(json_t *doc, char hash[129])
{
    char *s = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(doc);
    if (!s) s = strdup("{}");
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_Digest(s, strlen(s), md, &mdlen, EVP_sha512(), NULL);
    for (unsigned int i = 0; i < mdlen && i < 64; i++) snprintf(hash + 2 * i, 3, "%02X", md[i]);
    hash[2 * (mdlen < 64 ? mdlen : 64)] = '\0';
    return s;
}

static void reply_doc(as_req_t *q, json_t *doc)
{
    char hash[129], etag[140];
    char *s = dump_hashed(doc, hash);
    snprintf(etag, sizeof etag, "\"%s\"", hash);
    evhttp_add_header(evhttp_request_get_output_headers(q->r), "ETag", etag);
    as_reply_raw(q, 200, "application/json", s, strlen(s));
    free(s);
}

static void serve_index(as_req_t *q)
{
    json_t *paths = json_object(), *gvs = served_gvs(q->srv);
    size_t i;
    json_t *gv;
    json_array_foreach(gvs, i, gv)
    {
        const char *g = json_string_value(json_array_get(gv, 0)), *v = json_string_value(json_array_get(gv, 1));
        char key[300], url[600], hash[129];
        if (g[0])
            snprintf(key, sizeof key, "apis/%s/%s", g, v);
        else
            snprintf(key, sizeof key, "api/%s", v);
        free(dump_hashed(gv_doc(q->srv, g, v), hash));
        snprintf(url, sizeof url, "/openapi/v3/%s?hash=%s", key, hash);
        json_object_set_new(paths, key, json_pack("{s:s}", "serverRelativeURL", url));
    }
    json_decref(gvs);
    reply_doc(q, json_pack("{s:o}", "paths", paths));
}

/* "api/v1" or "apis/g/v" into group and version; false for anything else. */
static bool parse_gv(const char *rest, char *group, size_t gn, char *version, size_t vn)
{
    group[0] = version[0] = '\0';
    if (!strncmp(rest, "api/", 4)) {
        snprintf(version, vn, "%s", rest + 4);
    } else if (!strncmp(rest, "apis/", 5)) {
        const char *g = rest + 5, *slash = strchr(g, '/');
        if (!slash || (size_t)(slash - g) >= gn) return false;
        snprintf(group, gn, "%.*s", (int)(slash - g), g);
        snprintf(version, vn, "%s", slash + 1);
    }
    return version[0] && !strchr(version, '/');
}

void as_serve_openapi(as_req_t *q)
{
    lop_apiserver_t *srv = q->srv;
    const char *accept = evhttp_find_header(evhttp_request_get_input_headers(q->r), "Accept");
    as_conv_t conv;
    bool json_ok = as_accept_negotiate(accept, false, &conv);
    if (!strcmp(q->path, "/openapi/v2") || !strcmp(q->path, "/openapi/v2/")) {
        /* kubectl asks for application/com.github.proto-openapi.spec.v2@v1.0+protobuf alone */
        if (json_ok)
            reply_doc(q, v2_doc(srv));
        else
            as_reply_status(q, 406, "NotAcceptable", NULL,
                            "only the following media types are accepted: application/json");
        return;
    }
    if (!json_ok) {
        as_reply_status(q, 406, "NotAcceptable", NULL, "only the following media types are accepted: application/json");
        return;
    }
    if (!strcmp(q->path, "/openapi/v3") || !strcmp(q->path, "/openapi/v3/")) {
        serve_index(q);
        return;
    }
    char group[256], version[64];
    if (!strncmp(q->path, "/openapi/v3/", 12) && parse_gv(q->path + 12, group, sizeof group, version, sizeof version)) {
        for (size_t i = 0; i < srv->nres; i++) {
            if (!strcmp(srv->res[i]->group, group) && !strcmp(srv->res[i]->version, version)) {
                reply_doc(q, gv_doc(srv, group, version));
                return;
            }
        }
    }
    as_reply_status(q, 404, "NotFound", NULL, "the server could not find the requested resource");
}
