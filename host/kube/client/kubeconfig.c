/* SPDX-License-Identifier: Apache-2.0 */
/* kubeconfig.c — kubeconfig files and the in-cluster service account to a lop_rest_config_t:
 * $KUBECONFIG merging, relative paths against the file, cluster/user/exec fields checked with
 * errors naming the file and field (see kubeconfig.h). Runs once at start-up on the main thread
 * (reentrant, no shared state). Upstream: client-go tools/clientcmd/loader.go, client_config.go
 * and rest/config.go InClusterConfig. */
#include "host/kube/client/kubeconfig.h"

#include "host/codec/yaml.h"
#include "host/util/buf.h"
#include "host/util/log.h"

#include <errno.h>
#include <jansson.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <yaml.h>

#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define FILE_KEY \
    "\x01"       \
    "file" /* where an entry was defined; cannot clash with YAML keys */

void lop_rest_config_cleanup(lop_rest_config_t *c)
{
    if (!c) return;
    free(c->server);
    free(c->ca_pem);
    free(c->client_cert_pem);
    if (c->client_key_pem) explicit_bzero(c->client_key_pem, strlen(c->client_key_pem));
    free(c->client_key_pem);
    free(c->tls_server_name);
    if (c->proxy_url) explicit_bzero(c->proxy_url, strlen(c->proxy_url)); /* may hold a password */
    free(c->proxy_url);
    free(c->namespace);
    lop_auth_free(c->auth);
    free(c->impersonate_user);
    free(c->impersonate_uid);
    for (size_t i = 0; i < c->n_impersonate_groups; i++) free(c->impersonate_groups[i]);
    free(c->impersonate_groups);
    for (size_t i = 0; i < c->n_impersonate_extra; i++) free(c->impersonate_extra[i]);
    free(c->impersonate_extra);
    free(c->user_agent);
    free(c->source);
    free(c->context);
    memset(c, 0, sizeof *c);
}

/* ---- YAML → jansson ---- */

/* Nodes are converted once per reference, so aliases (libyaml shares an anchored node; `x: &a
 * [*a, *a]` even refers to itself) would expand without bound: every conversion spends 1 unit per
 * node plus the bytes of its scalar from *left, and the load is refused once it runs out. The
 * budget is host/codec/yaml.h's bound on alias expansion plus the file's own size (here the
 * document's own nodes are counted too). NULL when the budget ran out. */
static json_t *yaml_node_to_json(yaml_document_t *doc, yaml_node_t *node, int depth, size_t *left)
{
    if (!node || depth > 64) return json_null();
    size_t cost = 1 + (node->type == YAML_SCALAR_NODE ? node->data.scalar.length : 0);
    if (cost > *left) return NULL;
    *left -= cost;
    switch (node->type) {
    case YAML_SCALAR_NODE: {
        const char *v = (const char *)node->data.scalar.value;
        size_t n = node->data.scalar.length;
        if (node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
            if (!strcmp(v, "true") || !strcmp(v, "True") || !strcmp(v, "TRUE")) return json_true();
            if (!strcmp(v, "false") || !strcmp(v, "False") || !strcmp(v, "FALSE")) return json_false();
            if (n == 0 || !strcmp(v, "null") || !strcmp(v, "~") || !strcmp(v, "Null")) return json_null();
        }
        json_t *s = json_stringn(v, n);
        return s ? s : json_string(""); /* invalid UTF-8: jansson refuses; keep a string */
    }
    case YAML_SEQUENCE_NODE: {
        json_t *arr = json_array();
        for (yaml_node_item_t *it = node->data.sequence.items.start; it < node->data.sequence.items.top; it++) {
            json_t *v = yaml_node_to_json(doc, yaml_document_get_node(doc, *it), depth + 1, left);
            if (!v) {
                json_decref(arr);
                return NULL;
            }
            json_array_append_new(arr, v);
        }
        return arr;
    }
    case YAML_MAPPING_NODE: {
        json_t *obj = json_object();
        for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++) {
            yaml_node_t *k = yaml_document_get_node(doc, p->key);
            if (!k || k->type != YAML_SCALAR_NODE) continue;
            json_t *v = yaml_node_to_json(doc, yaml_document_get_node(doc, p->value), depth + 1, left);
            if (!v) {
                json_decref(obj);
                return NULL;
            }
            json_object_setn_new(obj, (const char *)k->data.scalar.value, k->data.scalar.length, v);
        }
        return obj;
    }
    default: return json_null();
    }
}

/* Parse a YAML file. *out = NULL for an empty file. */
static lop_rc_t load_yaml(const char *path, json_t **out, lop_err_t *err)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return lop_err_set(err, errno == ENOENT ? LOP_ENOTFOUND : LOP_EINVAL, 0, NULL, "kubeconfig %s: cannot open: %s",
                           path, strerror(errno));
    struct stat st;
    size_t size = fstat(fileno(f), &st) == 0 && st.st_size > 0 ? (size_t)st.st_size : 0;
    size_t budget = lop_yaml_expansion_budget(size);
    budget = budget > SIZE_MAX - size ? SIZE_MAX : budget + size;
    size_t left = budget;
    yaml_parser_t p;
    yaml_document_t doc;
    yaml_parser_initialize(&p);
    yaml_parser_set_input_file(&p, f);
    lop_rc_t rc = LOP_OK;
    if (!yaml_parser_load(&p, &doc)) {
        rc = lop_err_set(err, LOP_EINVAL, 0, NULL, "kubeconfig %s: invalid YAML at line %zu: %s", path,
                         p.problem_mark.line + 1, p.problem ? p.problem : "parse error");
    } else {
        yaml_node_t *root = yaml_document_get_root_node(&doc);
        if (root) {
            *out = yaml_node_to_json(&doc, root, 0, &left);
            if (!*out)
                rc = lop_err_set(err, LOP_EINVAL, 0, NULL,
                                 "kubeconfig %s: YAML aliases expand beyond %zu units (nodes + bytes; %d x the "
                                 "file's size + %d, plus the file itself): refused as excessive aliasing (a "
                                 "\"billion laughs\" document)",
                                 path, budget, LOP_YAML_EXPANSION_FACTOR, LOP_YAML_EXPANSION_FLOOR);
        }
        yaml_document_delete(&doc);
    }
    yaml_parser_delete(&p);
    fclose(f);
    return rc;
}

/* ---- helpers ---- */

static char *file_dir(const char *path)
{
    char *tmp = lop_xstrdup(path);
    char *d = lop_xstrdup(dirname(tmp));
    free(tmp);
    return d;
}

/* Make obj[key] absolute against dir when it is a relative path. */
static void resolve_path(json_t *obj, const char *key, const char *dir, bool only_with_slash)
{
    const char *v = json_string_value(json_object_get(obj, key));
    if (!v || !*v || v[0] == '/') return;
    if (v[0] == '~' && v[1] == '/') {
        const char *home = getenv("HOME");
        if (!home) return;
        lop_buf_t b = LOP_BUF_INIT;
        lop_buf_printf(&b, "%s/%s", home, v + 2);
        json_object_set_new(obj, key, json_string(b.data));
        lop_buf_free(&b);
        return;
    }
    if (only_with_slash && !strchr(v, '/')) return;
    lop_buf_t b = LOP_BUF_INIT;
    lop_buf_printf(&b, "%s/%s", dir, v);
    json_object_set_new(obj, key, json_string(b.data));
    lop_buf_free(&b);
}

static lop_rc_t read_file(const char *path, char **out, size_t *len, lop_err_t *err, const char *what_file,
                          const char *field)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "kubeconfig %s: %s: cannot read %s: %s", what_file, field, path,
                           strerror(errno));
    lop_buf_t b = LOP_BUF_INIT;
    char chunk[4096];
    size_t r;
    while ((r = fread(chunk, 1, sizeof chunk, f)) > 0) lop_buf_append(&b, chunk, r);
    fclose(f);
    if (len) *len = b.len;
    *out = lop_buf_steal(&b);
    return LOP_OK;
}

/* Merge one file's named list (clusters/users/contexts) into merged (name → entry), first wins. */
static lop_rc_t merge_list(const char *path, json_t *doc, const char *list, const char *inner, json_t *merged,
                           lop_err_t *err)
{
    json_t *arr = json_object_get(doc, list);
    if (!arr || json_is_null(arr)) return LOP_OK;
    if (!json_is_array(arr))
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "kubeconfig %s: %s: must be a list", path, list);
    char *dir = file_dir(path);
    size_t i;
    json_t *e;
    lop_rc_t rc = LOP_OK;
    json_array_foreach(arr, i, e)
    {
        const char *name = json_string_value(json_object_get(e, "name"));
        json_t *body = json_object_get(e, inner);
        if (!json_is_object(e) || !name || !*name) {
            rc = lop_err_set(err, LOP_EINVAL, 0, NULL, "kubeconfig %s: %s[%zu].name: missing", path, list, i);
            break;
        }
        if (body && !json_is_null(body) && !json_is_object(body)) {
            rc = lop_err_set(err, LOP_EINVAL, 0, NULL, "kubeconfig %s: %s[%zu].%s: must be a mapping", path, list, i,
                             inner);
            break;
        }
        if (json_object_get(merged, name)) continue; /* first file wins */
        json_t *copy = json_is_object(body) ? json_deep_copy(body) : json_object();
        json_object_set_new(copy, FILE_KEY, json_string(path));
        if (!strcmp(list, "clusters")) {
            resolve_path(copy, "certificate-authority", dir, false);
        } else if (!strcmp(list, "users")) {
            resolve_path(copy, "client-certificate", dir, false);
            resolve_path(copy, "client-key", dir, false);
            resolve_path(copy, "tokenFile", dir, false);
            json_t *ex = json_object_get(copy, "exec");
            if (json_is_object(ex)) resolve_path(ex, "command", dir, true);
        }
        json_object_set_new(merged, name, copy);
    }
    free(dir);
    return rc;
}

static const char *str_field(json_t *obj, const char *key) { return json_string_value(json_object_get(obj, key)); }

static bool bool_field(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    if (json_is_true(v)) return true;
    const char *s = json_string_value(v);
    return s && (!strcmp(s, "true") || !strcmp(s, "True"));
}

/* Field "data" (base64) wins over "path" (file). Sets *out (NULL when neither). */
static lop_rc_t pem_field(json_t *obj, const char *data_key, const char *path_key, const char *file, const char *where,
                          char **out, lop_err_t *err)
{
    *out = NULL;
    const char *data = str_field(obj, data_key);
    if (data && *data) {
        size_t n;
        *out = lop_base64_decode(data, &n);
        if (!*out)
            return lop_err_set(err, LOP_EINVAL, 0, NULL, "kubeconfig %s: %s.%s: invalid base64", file, where, data_key);
        return LOP_OK;
    }
    const char *path = str_field(obj, path_key);
    if (path && *path) {
        lop_buf_t f = LOP_BUF_INIT;
        lop_buf_printf(&f, "%s.%s", where, path_key);
        lop_rc_t rc = read_file(path, out, NULL, err, file, f.data);
        lop_buf_free(&f);
        return rc;
    }
    return LOP_OK;
}

/* Every key in keys that is present must hold a string (YAML scalars load as strings). */
static lop_rc_t check_strings(json_t *obj, const char *const *keys, const char *file, const char *where, lop_err_t *err)
{
    for (size_t i = 0; keys[i]; i++) {
        json_t *v = json_object_get(obj, keys[i]);
        if (v && !json_is_string(v) && !json_is_null(v))
            return lop_err_set(err, LOP_EINVAL, 0, NULL, "kubeconfig %s: %s.%s: must be a string", file, where,
                               keys[i]);
    }
    return LOP_OK;
}

static lop_rc_t build_exec(json_t *ex, const char *file, const char *where, lop_rest_config_t *cfg, json_t *cluster,
                           lop_auth_exec_t *e, lop_err_t *err)
{
    static const char *const strs[] = {"apiVersion", "command", "installHint", "interactiveMode", NULL};
    char exwhere[400];
    snprintf(exwhere, sizeof exwhere, "%s.exec", where);
    lop_rc_t rc = check_strings(ex, strs, file, exwhere, err);
    if (rc != LOP_OK) return rc;
    json_t *args0 = json_object_get(ex, "args"), *env0 = json_object_get(ex, "env");
    if ((args0 && !json_is_array(args0) && !json_is_null(args0)) ||
        (env0 && !json_is_array(env0) && !json_is_null(env0)))
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "kubeconfig %s: %s.%s: must be a list", file, exwhere,
                           args0 && !json_is_array(args0) && !json_is_null(args0) ? "args" : "env");
    const char *apiv = str_field(ex, "apiVersion");
    const char *cmd = str_field(ex, "command");
    if (!apiv || (strcmp(apiv, "client.authentication.k8s.io/v1") != 0 &&
                  strcmp(apiv, "client.authentication.k8s.io/v1beta1") != 0))
        return lop_err_set(err, LOP_EINVAL, 0, NULL,
                           "kubeconfig %s: %s.exec.apiVersion: must be client.authentication.k8s.io/v1 "
                           "or v1beta1, got %s",
                           file, where, apiv ? apiv : "(none)");
    if (!cmd || !*cmd)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "kubeconfig %s: %s.exec.command: missing", file, where);
    const char *im = str_field(ex, "interactiveMode");
    if (!strcmp(apiv, "client.authentication.k8s.io/v1") && (!im || !*im))
        return lop_err_set(err, LOP_EINVAL, 0, NULL,
                           "kubeconfig %s: %s.exec.interactiveMode: required for client.authentication.k8s.io/v1", file,
                           where);
    if (im && *im && strcmp(im, "Never") && strcmp(im, "IfAvailable") && strcmp(im, "Always"))
        return lop_err_set(err, LOP_EINVAL, 0, NULL,
                           "kubeconfig %s: %s.exec.interactiveMode: must be Never, IfAvailable or Always", file, where);
    e->api_version = lop_xstrdup(apiv);
    e->command = lop_xstrdup(cmd);
    if (im && *im) e->interactive_mode = lop_xstrdup(im);
    const char *hint = str_field(ex, "installHint");
    if (hint) e->install_hint = lop_xstrdup(hint);
    json_t *args = json_object_get(ex, "args");
    if (json_is_array(args)) {
        e->args = lop_xcalloc(json_array_size(args) + 1, sizeof *e->args);
        size_t i;
        json_t *a;
        json_array_foreach(args, i, a)
        {
            if (!json_is_string(a))
                return lop_err_set(err, LOP_EINVAL, 0, NULL, "kubeconfig %s: %s.exec.args[%zu]: must be a string", file,
                                   where, i);
            e->args[e->nargs++] = lop_xstrdup(json_string_value(a));
        }
    }
    json_t *env = json_object_get(ex, "env");
    if (json_is_array(env)) {
        e->env = lop_xcalloc(json_array_size(env) + 1, sizeof *e->env);
        size_t i;
        json_t *v;
        json_array_foreach(env, i, v)
        {
            const char *n = str_field(v, "name"), *val = str_field(v, "value");
            if (!n || !*n)
                return lop_err_set(err, LOP_EINVAL, 0, NULL, "kubeconfig %s: %s.exec.env[%zu].name: missing", file,
                                   where, i);
            lop_buf_t b = LOP_BUF_INIT;
            lop_buf_printf(&b, "%s=%s", n, val ? val : "");
            e->env[e->nenv++] = lop_buf_steal(&b);
        }
    }
    if (bool_field(ex, "provideClusterInfo")) {
        json_t *ci = json_object();
        json_object_set_new(ci, "server", json_string(cfg->server));
        const char *cad = str_field(cluster, "certificate-authority-data");
        if (cad) json_object_set_new(ci, "certificate-authority-data", json_string(cad));
        if (cfg->insecure) json_object_set_new(ci, "insecure-skip-tls-verify", json_true());
        if (cfg->tls_server_name) json_object_set_new(ci, "tls-server-name", json_string(cfg->tls_server_name));
        if (cfg->proxy_url) json_object_set_new(ci, "proxy-url", json_string(cfg->proxy_url));
        e->cluster_json = json_dumps(ci, JSON_COMPACT);
        json_decref(ci);
    }
    return LOP_OK;
}

static char **string_list(json_t *arr, size_t *n)
{
    *n = 0;
    if (!json_is_array(arr) || json_array_size(arr) == 0) return NULL;
    char **out = lop_xcalloc(json_array_size(arr), sizeof *out);
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) if (json_is_string(v)) out[(*n)++] = lop_xstrdup(json_string_value(v));
    return out;
}

static lop_rc_t build_user(json_t *user, const char *uname, lop_rest_config_t *cfg, json_t *cluster, lop_err_t *err)
{
    const char *file = str_field(user, FILE_KEY);
    char where[320];
    snprintf(where, sizeof where, "users[%s].user", uname);
    static const char *const strs[] = {"client-certificate",
                                       "client-certificate-data",
                                       "client-key",
                                       "client-key-data",
                                       "token",
                                       "tokenFile",
                                       "as",
                                       "as-uid",
                                       NULL};
    if (check_strings(user, strs, file, where, err) != LOP_OK) return LOP_EINVAL;
    lop_rc_t rc =
        pem_field(user, "client-certificate-data", "client-certificate", file, where, &cfg->client_cert_pem, err);
    if (rc == LOP_OK) rc = pem_field(user, "client-key-data", "client-key", file, where, &cfg->client_key_pem, err);
    if (rc != LOP_OK) return rc;
    if (!cfg->client_cert_pem != !cfg->client_key_pem)
        return lop_err_set(err, LOP_EINVAL, 0, NULL,
                           "kubeconfig %s: %s: client certificate and client key must both be set", file, where);
    if (json_object_get(user, "auth-provider"))
        return lop_err_set(err, LOP_EINVAL, 0, NULL,
                           "kubeconfig %s: %s.auth-provider: not supported (removed from client-go); "
                           "use an exec credential plugin",
                           file, where);
    if (str_field(user, "username") || str_field(user, "password"))
        lop_log(LOP_LOG_WARN, "kubeconfig basic auth (username/password) is not supported; ignored", "file", file,
                "user", uname, NULL);
    lop_auth_exec_t e = {0};
    json_t *ex = json_object_get(user, "exec");
    if (ex && !json_is_null(ex)) {
        if (!json_is_object(ex))
            return lop_err_set(err, LOP_EINVAL, 0, NULL, "kubeconfig %s: %s.exec: must be a mapping", file, where);
        rc = build_exec(ex, file, where, cfg, cluster, &e, err);
        if (rc != LOP_OK) {
            lop_auth_exec_cleanup(&e);
            return rc;
        }
    }
    cfg->auth = lop_auth_new(str_field(user, "token"), str_field(user, "tokenFile"), &e, cfg->clock);
    lop_auth_exec_cleanup(&e);
    const char *as = str_field(user, "as");
    if (as && *as) cfg->impersonate_user = lop_xstrdup(as);
    const char *asuid = str_field(user, "as-uid");
    if (asuid && *asuid) cfg->impersonate_uid = lop_xstrdup(asuid);
    cfg->impersonate_groups = string_list(json_object_get(user, "as-groups"), &cfg->n_impersonate_groups);
    json_t *extra = json_object_get(user, "as-user-extra");
    if (json_is_object(extra)) {
        size_t cap = 0;
        const char *k;
        json_t *vals;
        json_object_foreach(extra, k, vals) cap += json_is_array(vals) ? json_array_size(vals) : 1;
        cfg->impersonate_extra = lop_xcalloc(cap + 1, sizeof(char *));
        json_object_foreach(extra, k, vals)
        {
            size_t i;
            json_t *v;
            json_array_foreach(vals, i, v)
            {
                if (!json_is_string(v)) continue;
                lop_buf_t b = LOP_BUF_INIT;
                lop_buf_printf(&b, "%s=%s", k, json_string_value(v));
                cfg->impersonate_extra[cfg->n_impersonate_extra++] = lop_buf_steal(&b);
            }
        }
    }
    return LOP_OK;
}

static lop_rc_t build_cluster(json_t *cluster, const char *cname, lop_rest_config_t *cfg, lop_err_t *err)
{
    const char *file = str_field(cluster, FILE_KEY);
    char where[320];
    snprintf(where, sizeof where, "clusters[%s].cluster", cname);
    static const char *const strs[] = {"server", "certificate-authority", "certificate-authority-data",
                                       "tls-server-name", NULL};
    if (check_strings(cluster, strs, file, where, err) != LOP_OK) return LOP_EINVAL;
    const char *server = str_field(cluster, "server");
    if (!server || !*server)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "kubeconfig %s: %s.server: missing", file, where);
    if (strncmp(server, "https://", 8) != 0 && strncmp(server, "http://", 7) != 0)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "kubeconfig %s: %s.server: %s is not an http:// or https:// URL",
                           file, where, server);
    cfg->server = lop_xstrdup(server);
    size_t sl = strlen(cfg->server);
    while (sl > 0 && cfg->server[sl - 1] == '/') cfg->server[--sl] = '\0';
    /* a YAML boolean only: kubectl refuses a quoted "true" (a string cannot unmarshal into the
     * bool of clientcmd's Cluster), and so do we rather than guess */
    json_t *insecure = json_object_get(cluster, "insecure-skip-tls-verify");
    if (insecure && !json_is_boolean(insecure) && !json_is_null(insecure))
        return lop_err_set(
            err, LOP_EINVAL, 0, NULL,
            "kubeconfig %s: %s.insecure-skip-tls-verify: want a boolean (true or false, unquoted), got %s", file, where,
            json_is_string(insecure) ? "a string" : "another type");
    cfg->insecure = json_is_true(insecure);
    const char *cad = str_field(cluster, "certificate-authority-data");
    const char *caf = str_field(cluster, "certificate-authority");
    if (cfg->insecure && ((cad && *cad) || (caf && *caf)))
        return lop_err_set(
            err, LOP_EINVAL, 0, NULL,
            "kubeconfig %s: %s: specifying a root certificates file with the insecure flag is not allowed", file,
            where);
    lop_rc_t rc =
        pem_field(cluster, "certificate-authority-data", "certificate-authority", file, where, &cfg->ca_pem, err);
    if (rc != LOP_OK) return rc;
    const char *sni = str_field(cluster, "tls-server-name");
    if (sni && *sni) cfg->tls_server_name = lop_xstrdup(sni);
    const char *proxy = str_field(cluster, "proxy-url");
    if (proxy && *proxy) {
        if (strncasecmp(proxy, "http://", 7) != 0)
            return lop_err_set(err, LOP_EINVAL, 0, NULL,
                               "kubeconfig %s: %s.proxy-url: only http:// proxies are supported", file, where);
        cfg->proxy_url = lop_xstrdup(proxy);
    }
    return LOP_OK;
}

lop_rc_t lop_kubeconfig_load_files(const char *const *paths, size_t n, const char *context, const lop_clock_t *clock,
                                   lop_rest_config_t *out, lop_err_t *err)
{
    memset(out, 0, sizeof *out);
    out->clock = clock;
    json_t *clusters = json_object(), *users = json_object(), *contexts = json_object();
    char *current = NULL, *current_file = NULL;
    lop_buf_t sources = LOP_BUF_INIT;
    size_t loaded = 0;
    lop_rc_t rc = LOP_OK;
    for (size_t i = 0; i < n && rc == LOP_OK; i++) {
        json_t *doc = NULL;
        lop_err_t e1;
        lop_rc_t r = load_yaml(paths[i], &doc, &e1);
        if (r == LOP_ENOTFOUND) continue;
        if (r != LOP_OK) {
            if (err) *err = e1;
            rc = r;
            break;
        }
        loaded++;
        if (sources.len) lop_buf_putc(&sources, ':');
        lop_buf_puts(&sources, paths[i]);
        if (!doc || json_is_null(doc)) continue;
        if (!json_is_object(doc)) {
            json_decref(doc);
            rc = lop_err_set(err, LOP_EINVAL, 0, NULL, "kubeconfig %s: top level must be a mapping", paths[i]);
            break;
        }
        const char *kind = str_field(doc, "kind");
        if (kind && *kind && strcmp(kind, "Config") != 0) {
            /* the message is formatted before the document (which owns kind) is released */
            rc = lop_err_set(err, LOP_EINVAL, 0, NULL, "kubeconfig %s: kind: must be Config, got %s", paths[i], kind);
            json_decref(doc);
            break;
        }
        rc = merge_list(paths[i], doc, "clusters", "cluster", clusters, err);
        if (rc == LOP_OK) rc = merge_list(paths[i], doc, "users", "user", users, err);
        if (rc == LOP_OK) rc = merge_list(paths[i], doc, "contexts", "context", contexts, err);
        const char *cc = str_field(doc, "current-context");
        if (rc == LOP_OK && !current && cc && *cc) {
            current = lop_xstrdup(cc);
            current_file = lop_xstrdup(paths[i]);
        }
        json_decref(doc);
    }
    if (rc == LOP_OK && loaded == 0)
        rc = lop_err_set(err, LOP_ENOTFOUND, 0, NULL, "kubeconfig: none of the files exist (%s%s)", n ? paths[0] : "",
                         n > 1 ? ", ..." : "");
    const char *src = sources.data ? sources.data : "";
    const char *ctxname = context && *context ? context : current;
    json_t *ctx = NULL, *cluster = NULL, *user = NULL;
    if (rc == LOP_OK && !ctxname)
        rc = lop_err_set(err, LOP_EINVAL, 0, NULL,
                         "kubeconfig %s: current-context: not set (choose one with --context)", src);
    if (rc == LOP_OK && !(ctx = json_object_get(contexts, ctxname)))
        rc = lop_err_set(err, LOP_EINVAL, 0, NULL, "kubeconfig %s: context %s: not found", src, ctxname);
    const char *cname = ctx ? str_field(ctx, "cluster") : NULL;
    const char *uname = ctx ? str_field(ctx, "user") : NULL;
    if (rc == LOP_OK && (!cname || !*cname))
        rc = lop_err_set(err, LOP_EINVAL, 0, NULL, "kubeconfig %s: contexts[%s].context.cluster: missing",
                         str_field(ctx, FILE_KEY), ctxname);
    if (rc == LOP_OK && !(cluster = json_object_get(clusters, cname)))
        rc = lop_err_set(err, LOP_EINVAL, 0, NULL, "kubeconfig %s: cluster %s (of context %s): not found", src, cname,
                         ctxname);
    if (rc == LOP_OK && uname && *uname && !(user = json_object_get(users, uname)))
        rc = lop_err_set(err, LOP_EINVAL, 0, NULL, "kubeconfig %s: user %s (of context %s): not found", src, uname,
                         ctxname);
    if (rc == LOP_OK) rc = build_cluster(cluster, cname, out, err);
    if (rc == LOP_OK && user) rc = build_user(user, uname, out, cluster, err);
    if (rc == LOP_OK && !out->auth) out->auth = lop_auth_new(NULL, NULL, NULL, clock);
    if (rc == LOP_OK) {
        const char *ns = str_field(ctx, "namespace");
        out->namespace = lop_xstrdup(ns && *ns ? ns : "default");
        out->source = lop_xstrdup(src);
        out->context = lop_xstrdup(ctxname);
        if (out->insecure)
            lop_log(LOP_LOG_WARN,
                    "INSECURE: insecure-skip-tls-verify is set; the API server's certificate is NOT verified",
                    "kubeconfig", src, "cluster", cname, NULL);
    }
    (void)current_file;
    free(current);
    free(current_file);
    lop_buf_free(&sources);
    json_decref(clusters);
    json_decref(users);
    json_decref(contexts);
    if (rc != LOP_OK) lop_rest_config_cleanup(out);
    return rc;
}

static char *trimmed(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\r' || s[n - 1] == '\t')) s[--n] = '\0';
    return s;
}

lop_rc_t lop_kubeconfig_incluster(const char *dir, const lop_clock_t *clock, lop_rest_config_t *out, lop_err_t *err)
{
    memset(out, 0, sizeof *out);
    out->clock = clock;
    const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
    if (!host || !*host || !port || !*port)
        return lop_err_set(err, LOP_ENOTFOUND, 0, NULL,
                           "not in cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must both be set");
    if (!dir) dir = SA_DIR;
    lop_buf_t b = LOP_BUF_INIT;
    bool v6 = strchr(host, ':') != NULL;
    lop_buf_printf(&b, "https://%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "", port);
    out->server = lop_buf_steal(&b);
    lop_buf_printf(&b, "%s/token", dir);
    char *tokpath = lop_buf_steal(&b);
    lop_buf_printf(&b, "%s/ca.crt", dir);
    char *capath = lop_buf_steal(&b);
    lop_buf_printf(&b, "%s/namespace", dir);
    char *nspath = lop_buf_steal(&b);
    lop_rc_t rc = read_file(capath, &out->ca_pem, NULL, err, "(in-cluster)", "ca.crt");
    out->auth = lop_auth_new(NULL, tokpath, NULL, clock);
    if (rc == LOP_OK) { /* the token must exist now; it is re-read later as it rotates */
        lop_auth_cred_t c;
        rc = lop_auth_get(out->auth, &c, err);
        lop_auth_cred_cleanup(&c);
    }
    char *ns = NULL;
    lop_err_t ignore;
    if (rc == LOP_OK && read_file(nspath, &ns, NULL, &ignore, "(in-cluster)", "namespace") == LOP_OK && *trimmed(ns))
        out->namespace = ns;
    else {
        free(ns);
        out->namespace = lop_xstrdup("default");
    }
    out->source = lop_xstrdup("in-cluster");
    free(tokpath);
    free(capath);
    free(nspath);
    if (rc != LOP_OK) lop_rest_config_cleanup(out);
    return rc;
}

lop_rc_t lop_kubeconfig_load(const lop_kubeconfig_opts_t *opts, lop_rest_config_t *out, lop_err_t *err)
{
    lop_kubeconfig_opts_t none = {0};
    if (!opts) opts = &none;
    if (opts->path && *opts->path) {
        const char *p = opts->path;
        lop_rc_t rc = lop_kubeconfig_load_files(&p, 1, opts->context, opts->clock, out, err);
        if (rc == LOP_ENOTFOUND) rc = lop_err_set(err, LOP_EINVAL, 0, NULL, "kubeconfig %s: file does not exist", p);
        return rc;
    }
    const char *env = getenv("KUBECONFIG");
    if (env && *env) {
        char *copy = lop_xstrdup(env), *save = NULL;
        const char *list[64];
        size_t n = 0;
        for (char *t = strtok_r(copy, ":", &save); t && n < 64; t = strtok_r(NULL, ":", &save))
            if (*t) list[n++] = t;
        lop_rc_t rc = lop_kubeconfig_load_files(list, n, opts->context, opts->clock, out, err);
        free(copy);
        if (rc != LOP_ENOTFOUND) return rc;
        /* as kubectl: with $KUBECONFIG set, ~/.kube/config is not consulted */
    }
    const char *home = getenv("HOME");
    if (!(env && *env) && home && *home) {
        lop_buf_t b = LOP_BUF_INIT;
        lop_buf_printf(&b, "%s/.kube/config", home);
        struct stat st;
        if (stat(b.data, &st) == 0) {
            const char *p = b.data;
            lop_rc_t rc = lop_kubeconfig_load_files(&p, 1, opts->context, opts->clock, out, err);
            lop_buf_free(&b);
            return rc;
        }
        lop_buf_free(&b);
    }
    if (opts->no_incluster)
        return lop_err_set(err, LOP_ENOTFOUND, 0, NULL,
                           "no kubeconfig: --kubeconfig not given, $KUBECONFIG unset or empty, no ~/.kube/config");
    lop_rc_t rc = lop_kubeconfig_incluster(opts->incluster_dir, opts->clock, out, err);
    if (rc == LOP_ENOTFOUND)
        rc = lop_err_set(err, LOP_ENOTFOUND, 0, NULL,
                         "no kubeconfig (--kubeconfig, $KUBECONFIG, ~/.kube/config) and not in a cluster "
                         "(KUBERNETES_SERVICE_HOST/PORT unset)");
    return rc;
}
