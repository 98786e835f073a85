/* SPDX-License-Identifier: Apache-2.0 */
/* The project-level steps `luaop init` and `luaop create` share: the PROJECT file, and the
 * generated manifests (config/rbac/role.yaml, config/webhook/manifests.yaml) refreshed through
 * `luaop check` as the scaffolded Makefile's `make manifests` does, and whether config/default
 * deploys cert-manager (its CA-injection annotation then goes on the webhook manifests)
 * (cmd/scaffold.h). */
#include "cmd/scaffold.h"

#include "host/codec/yaml.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool field(const char *data, const char *key, char out[256])
{
    size_t k = strlen(key);
    for (const char *p = data; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, key, k) != 0 || p[k] != ':') continue;
        const char *v = p + k + 1;
        while (*v == ' ') v++;
        size_t n = strcspn(v, "\r\n");
        if (n == 0 || n > 255) return false;
        memcpy(out, v, n);
        out[n] = '\0';
        return true;
    }
    return false;
}

lop_rc_t lop_scaffold_read_project(const char *root, char domain[256], char name[256], char ns[256], lop_err_t *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/PROJECT", root);
    FILE *f = fopen(path, "rb");
    if (!f) return lop_err_set(err, LOP_ENOTFOUND, 0, NULL, "no %s: run `luaop init --domain ...` first", path);
    char data[4096];
    size_t n = fread(data, 1, sizeof data - 1, f);
    fclose(f);
    data[n] = '\0';
    const char *keys[] = {"domain", "projectName", "namespace"};
    char *outs[] = {domain, name, ns};
    for (int i = 0; i < 3; i++)
        if (!field(data, keys[i], outs[i]))
            return lop_err_set(err, LOP_EINVAL, 0, NULL, "%s: no \"%s:\" line (luaop init writes it)", path, keys[i]);
    return LOP_OK;
}

/* args[*n..] += "--crd" "config/crd/bases/F" for each CRD file (sorted); the strings in crds. */
static void crd_args(const char *root, char **args, size_t *n, size_t cap, char crds[][512], size_t max)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/config/crd/bases", root);
    struct dirent **list = NULL;
    int count = scandir(dir, &list, NULL, alphasort);
    size_t k = 0;
    for (int i = 0; i < count; i++) {
        const char *nm = list[i]->d_name;
        size_t len = strlen(nm);
        if (k < max && *n + 2 < cap && len > 5 && strcmp(nm + len - 5, ".yaml") == 0 && nm[0] != '.') {
            snprintf(crds[k], 512, "config/crd/bases/%s", nm);
            args[(*n)++] = "--crd";
            args[(*n)++] = crds[k++];
        }
        free(list[i]);
    }
    free(list);
}

/* `luaop check WHAT --scripts scripts --crd ... --name-prefix PROJECT` and the flag/value pairs
 * of extra (NULL-terminated, at most 4 pairs), its stdout into ROOT/OUT_REL. */
static lop_rc_t regen(const char *root, const char *what, const char *const *extra, const char *out_rel,
                      const char *project, lop_err_t *err)
{
    char crds[8][512];
    char *args[32];
    size_t n = 0;
    args[n++] = "check";
    args[n++] = (char *)what;
    args[n++] = "--scripts";
    args[n++] = "scripts";
    crd_args(root, args, &n, 22, crds, 8);
    args[n++] = "--name-prefix";
    args[n++] = (char *)project;
    for (size_t i = 0; extra[i] && i < 8; i++) args[n++] = (char *)extra[i];
    args[n] = NULL;
    return lop_scaffold_run_self(root, args, out_rel, err);
}

lop_rc_t lop_scaffold_regen_rbac(const char *root, const char *project, const char *ns, lop_err_t *err)
{
    char sa[600];
    snprintf(sa, sizeof sa, "%s/%s-controller-manager", ns, project);
    const char *const extra[] = {"--service-account", sa, NULL};
    return regen(root, "--rbac", extra, "config/rbac/role.yaml", project, err);
}

/* A kustomization file ROOT/REL as one JSON object in *doc (caller owns): an empty file is {}.
 * LOP_ENOTFOUND when it does not exist; LOP_EINVAL naming it otherwise. */
static lop_rc_t load_kustomization(const char *root, const char *rel, json_t **doc, lop_err_t *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    *doc = NULL;
    if (!lop_scaffold_exists(root, rel)) return lop_err_set(err, LOP_ENOTFOUND, 0, NULL, "%s: no such file", path);
    json_t *docs = NULL;
    lop_rc_t rc = lop_yaml_load_file(path, &docs, err); /* LOP_EINVAL, "path:line:col: problem" */
    if (rc != LOP_OK) return rc == LOP_ENOTFOUND ? LOP_EINVAL : rc;
    size_t n = json_array_size(docs);
    json_t *d = n == 1 ? json_array_get(docs, 0) : NULL;
    if (n == 0)
        *doc = json_object();
    else if (json_is_object(d))
        *doc = json_incref(d);
    else
        rc = lop_err_set(err, LOP_EINVAL, 0, NULL,
                         n > 1 ? "%s: %zu YAML documents; a kustomization is one mapping"
                               : "%s: not a mapping (a kustomization is one: resources:, namespace:, ...)",
                         path, n);
    json_decref(docs);
    if (rc != LOP_OK) return rc;
    /* the fields read here, of the types kustomize takes */
    static const char *const strs[] = {"namespace", "namePrefix", "nameSuffix"};
    static const char *const lists[] = {"resources", "bases"};
    for (size_t i = 0; i < 3 && rc == LOP_OK; i++) {
        json_t *v = json_object_get(*doc, strs[i]);
        if (v && !json_is_null(v) && !json_is_string(v))
            rc = lop_err_set(err, LOP_EINVAL, 0, NULL, "%s: %s: a string expected", path, strs[i]);
    }
    for (size_t i = 0; i < 2 && rc == LOP_OK; i++) {
        json_t *v = json_object_get(*doc, lists[i]);
        if (!v || json_is_null(v)) continue;
        bool ok = json_is_array(v);
        size_t k;
        json_t *e;
        json_array_foreach(v, k, e) ok = ok && json_is_string(e);
        if (!ok) rc = lop_err_set(err, LOP_EINVAL, 0, NULL, "%s: %s: a list of paths expected", path, lists[i]);
    }
    if (rc != LOP_OK) {
        json_decref(*doc);
        *doc = NULL;
    }
    return rc;
}

/* The string field key of a kustomization, "" when absent or null (load_kustomization checked the type). */
static const char *kstr(const json_t *doc, const char *key)
{
    const char *v = json_string_value(json_object_get(doc, key));
    return v ? v : "";
}

/* dir "/" p with "." and ".." resolved lexically ("config/default" + "../certmanager/" is
 * "config/certmanager"), into out (len bytes; a longer result is cut, which then matches nothing). */
static void norm_path(const char *dir, const char *p, char *out, size_t len)
{
    char in[4096];
    snprintf(in, sizeof in, "%s/%s", dir, p);
    size_t o = 0;
    out[0] = '\0';
    for (char *save = NULL, *c = strtok_r(in, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        if (strcmp(c, ".") == 0) continue;
        char *last = strrchr(out, '/');
        const char *top = last ? last + 1 : out;
        if (strcmp(c, "..") == 0 && o && strcmp(top, "..") != 0) {
            o = last ? (size_t)(last - out) : 0;
            out[o] = '\0';
            continue;
        }
        int w = snprintf(out + o, len - o, "%s%s", o ? "/" : "", c);
        if (w < 0 || (size_t)w >= len - o) return;
        o += (size_t)w;
    }
}

/* Whether the resources (or the older bases) of the kustomization in directory dir list target. */
static bool lists_dir(const json_t *doc, const char *dir, const char *target)
{
    static const char *const lists[] = {"resources", "bases"};
    for (size_t i = 0; i < 2; i++) {
        size_t k;
        json_t *e;
        json_array_foreach(json_object_get(doc, lists[i]), k, e)
        {
            char p[4096];
            norm_path(dir, json_string_value(e), p, sizeof p);
            if (strcmp(p, target) == 0) return true;
        }
    }
    return false;
}

/* The cert-manager.io Certificates among the files the kustomization kc (of config/certmanager)
 * lists: the first into *cert (a new reference) and its file's path into file; their number, or
 * (size_t)-1 with err set when a listed file does not parse. Directories are not looked into. */
static size_t find_certificates(const char *root, const json_t *kc, json_t **cert, char file[4200], lop_err_t *err)
{
    size_t found = 0, k;
    json_t *e;
    json_array_foreach(json_object_get(kc, "resources"), k, e)
    {
        char rel[4096], path[4200];
        norm_path("config/certmanager", json_string_value(e), rel, sizeof rel);
        snprintf(path, sizeof path, "%s/%s", root, rel);
        struct stat st;
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue; /* kustomize names what is missing */
        json_t *docs = NULL;
        if (lop_yaml_load_file(path, &docs, err) != LOP_OK) return (size_t)-1;
        size_t i;
        json_t *d;
        json_array_foreach(docs, i, d)
        {
            const char *kind = json_string_value(json_object_get(d, "kind"));
            const char *av = json_string_value(json_object_get(d, "apiVersion"));
            if (!kind || !av || strcmp(kind, "Certificate") != 0 || strncmp(av, "cert-manager.io/", 16) != 0) continue;
            if (!found++) {
                *cert = json_incref(d);
                snprintf(file, 4200, "%s", path);
            }
        }
        json_decref(docs);
    }
    return found;
}

/* "NS/NAME" of the one Certificate of config/certmanager (kc) as config/default (kd) renders it. */
static lop_rc_t certificate_ref(const char *root, const json_t *kd, const json_t *kc, char *ref, size_t ref_len,
                                lop_err_t *err)
{
    char file[4200];
    json_t *cert = NULL;
    size_t n = find_certificates(root, kc, &cert, file, err);
    if (n == (size_t)-1) return LOP_EINVAL;
    if (n == 0)
        return lop_err_set(err, LOP_EINVAL, 0, NULL,
                           "%s/config/certmanager/kustomization.yaml: no cert-manager.io Certificate in the files "
                           "of its resources (certificate.yaml holds the webhook server's)",
                           root);
    lop_rc_t rc = LOP_OK;
    if (n > 1) {
        rc = lop_err_set(err, LOP_EINVAL, 0, NULL,
                         "%s/config/certmanager/kustomization.yaml: its resources hold %zu cert-manager "
                         "Certificates; the CA injection names one (the webhook server's)",
                         root, n);
        goto done;
    }
    json_t *md = json_object_get(cert, "metadata");
    const char *name = json_string_value(json_object_get(md, "name"));
    const char *ns = kstr(kd, "namespace");
    if (!*ns) ns = kstr(kc, "namespace");
    if (!*ns) ns = kstr(md, "namespace");
    char full[1024];
    snprintf(full, sizeof full, "%s%s%s%s%s", kstr(kd, "namePrefix"), kstr(kc, "namePrefix"), name ? name : "",
             kstr(kc, "nameSuffix"), kstr(kd, "nameSuffix"));
    if (!name || !*name)
        rc = lop_err_set(err, LOP_EINVAL, 0, NULL, "%s: the Certificate has no metadata.name", file);
    else if (!*ns)
        rc = lop_err_set(err, LOP_EINVAL, 0, NULL,
                         "%s: the Certificate %s has no namespace, and neither config/default's nor "
                         "config/certmanager's kustomization sets one",
                         file, name);
    else if (!lop_scaffold_dns_name(ns, false) || !lop_scaffold_dns_name(full, true))
        rc = lop_err_set(err, LOP_EINVAL, 0, NULL,
                         "%s: the Certificate renders as %s/%s, not a DNS-1123 namespace and name", file, ns, full);
    else if (snprintf(ref, ref_len, "%s/%s", ns, full) >= (int)ref_len)
        rc = lop_err_set(err, LOP_EINVAL, 0, NULL, "%s: the Certificate's %s/%s is too long", file, ns, full);
done:
    json_decref(cert);
    return rc;
}

lop_rc_t lop_scaffold_cert_manager_ref(const char *root, char *ref, size_t ref_len, lop_err_t *err)
{
    ref[0] = '\0';
    json_t *kd = NULL, *kc = NULL;
    lop_rc_t rc = load_kustomization(root, "config/default/kustomization.yaml", &kd, err);
    if (rc == LOP_ENOTFOUND) return LOP_OK; /* no config/default: nothing deploys cert-manager */
    if (rc != LOP_OK || !lists_dir(kd, "config/default", "config/certmanager")) goto done;
    rc = load_kustomization(root, "config/certmanager/kustomization.yaml", &kc, err);
    if (rc == LOP_ENOTFOUND)
        rc = lop_err_set(err, LOP_ENOTFOUND, 0, NULL,
                         "%s/config/default/kustomization.yaml lists ../certmanager, but there is no "
                         "%s/config/certmanager/kustomization.yaml (`luaop create webhook` writes it)",
                         root, root);
    if (rc == LOP_OK) rc = certificate_ref(root, kd, kc, ref, ref_len, err);
    if (rc != LOP_OK) ref[0] = '\0';
done:
    json_decref(kd);
    json_decref(kc);
    return rc;
}

#define CONVERSION_PATCH "config/crd/patches/webhook_conversion.yaml"
#define CONVERSION_ENTRY "- path: patches/webhook_conversion.yaml\n"
/* The first line of every CONVERSION_PATCH split_conversion writes: what marks the file as its own. */
#define CONVERSION_HEADER "# Generated by `luaop create manifests` (luaop check --webhooks): the conversion\n"

/* No conversion webhook is left: delete ROOT/CONVERSION_PATCH when split_conversion wrote it (its
 * first line is CONVERSION_HEADER), after taking its entry out of config/crd/kustomization.yaml
 * (so a failure between the two leaves an unreferenced file, never a dangling patch). A file
 * without the header is someone else's and stays, as does its entry. */
static lop_rc_t drop_conversion_patch(const char *root, lop_err_t *err)
{
    char path[4096], first[sizeof CONVERSION_HEADER];
    snprintf(path, sizeof path, "%s/%s", root, CONVERSION_PATCH);
    FILE *f = fopen(path, "rb");
    if (!f) return LOP_OK; /* none: nothing to drop */
    size_t n = fread(first, 1, sizeof first - 1, f);
    fclose(f);
    first[n] = '\0';
    if (strcmp(first, CONVERSION_HEADER) != 0) return LOP_OK;
    lop_rc_t rc = LOP_OK;
    if (lop_scaffold_exists(root, "config/crd/kustomization.yaml"))
        rc = lop_scaffold_remove_line(root, "config/crd/kustomization.yaml", CONVERSION_ENTRY, NULL, err);
    if (rc == LOP_OK && unlink(path) != 0)
        rc = lop_err_set(err, LOP_ERR, 0, NULL, "cannot remove %s: %s", path, strerror(errno));
    return rc;
}

/* Move the CustomResourceDefinition documents (conversion stanzas) of ROOT/config/webhook/
 * manifests.yaml into ROOT/CONVERSION_PATCH, a patch of config/crd: as resources they would
 * collide with the CRDs of config/crd. None left: drop_conversion_patch. */
static lop_rc_t split_conversion(const char *root, lop_err_t *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/config/webhook/manifests.yaml", root);
    FILE *f = fopen(path, "rb");
    if (!f) return lop_err_set(err, LOP_ERR, 0, NULL, "cannot read %s", path);
    lop_buf_t in = LOP_BUF_INIT, hooks = LOP_BUF_INIT, crds = LOP_BUF_INIT;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) lop_buf_append(&in, chunk, n);
    fclose(f);
    lop_buf_puts(&crds, CONVERSION_HEADER
                 "# stanzas of the CRDs whose kinds have a conversion webhook, a patch of config/crd.\n");
    for (char *doc = in.data; doc && *doc;) {
        char *next = strstr(doc, "\n---\n");
        size_t len = next ? (size_t)(next - doc) + 1 : strlen(doc);
        bool crd = strncmp(doc, "kind: CustomResourceDefinition\n", 31) == 0 ||
                   (strstr(doc, "\nkind: CustomResourceDefinition\n") &&
                    strstr(doc, "\nkind: CustomResourceDefinition\n") < doc + len);
        lop_buf_t *to = crd ? &crds : &hooks;
        if (to->len && crd) lop_buf_puts(to, "---\n");
        if (to == &hooks && hooks.len) lop_buf_puts(to, "---\n");
        lop_buf_append(to, doc, len);
        doc = next ? next + 5 : NULL;
    }
    bool any = strstr(crds.data, "\nkind: CustomResourceDefinition\n") != NULL;
    lop_rc_t rc =
        lop_scaffold_write(root, "config/webhook/manifests.yaml", hooks.data ? hooks.data : "", hooks.len, true, err);
    if (rc == LOP_OK && any) rc = lop_scaffold_write(root, CONVERSION_PATCH, crds.data, crds.len, true, err);
    if (rc == LOP_OK && any)
        rc = lop_scaffold_insert(root, "config/crd/kustomization.yaml", "+luaop:scaffold:crdkustomizewebhookpatch",
                                 CONVERSION_ENTRY, NULL, err);
    if (rc == LOP_OK && !any) rc = drop_conversion_patch(root, err);
    lop_buf_free(&in);
    lop_buf_free(&hooks);
    lop_buf_free(&crds);
    return rc;
}

lop_rc_t lop_scaffold_regen_webhooks(const char *root, const char *project, const char *ns, const char *cert_manager,
                                     lop_err_t *err)
{
    char svc[600];
    snprintf(svc, sizeof svc, "%s/%s-webhook-service", ns, project);
    bool cm = cert_manager && *cert_manager;
    const char *const extra[] = {"--webhook-service", svc, cm ? "--cert-manager" : NULL, cert_manager, NULL};
    lop_rc_t rc = regen(root, "--webhooks", extra, "config/webhook/manifests.yaml", project, err);
    return rc == LOP_OK ? split_conversion(root, err) : rc;
}
