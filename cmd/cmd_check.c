/* SPDX-License-Identifier: Apache-2.0 */
/* `luaop check`: load and validate a script set exactly as a reload would (compile every file,
 * run main.lua under the load deadline, check the controller and field index declarations,
 * refuse duplicate controller names), without a cluster. Exits non-zero with file:line on error. Kinds are not
 * resolved (that needs the API server). --configmap takes a YAML file holding exactly one
 * ConfigMap (other documents are ignored), e.g. the output of
 * `kubectl create configmap NAME --from-file=DIR --dry-run=client -o yaml`. --rbac prints the
 * RBAC the set needs (cmd/rbac.h); --webhooks the WebhookConfigurations and CRD conversion
 * patches of its webhooks (host/runtime/webhook/webhook_manifests.h). With --crd, fields of a for_
 * kind that its CRD schema lacks are warned about on stderr (cmd/fieldcheck.h). */
#include "bindings/engine_lua.h"
#include "host/codec/yaml.h"
#include "cmd/cli.h"
#include "cmd/fieldcheck.h"
#include "cmd/rbac.h"
#include "host/codec/yaml_emit.h"
#include "host/runtime/scripts.h"
#include "host/runtime/webhook/webhook_manifests.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static lop_rc_t no_cache(void *ud, const char *a, const char *k, const char *ns, const char *n, lop_blob_t *out,
                         lop_err_t *err)
{
    (void)ud;
    (void)a;
    (void)k;
    (void)ns;
    (void)n;
    (void)out;
    return lop_err_set(err, LOP_EAGAIN, 0, NULL, "no cluster in `luaop check`");
}

static lop_rc_t no_request(void *ud, const lop_api_request_t *req, lop_api_response_t *resp, lop_err_t *err)
{
    (void)ud;
    (void)req;
    resp->code = 0;
    resp->body = NULL;
    resp->len = 0;
    return lop_err_set(err, LOP_ECLOSED, 0, NULL, "no cluster in `luaop check`");
}

static bool not_leader(void *ud)
{
    (void)ud;
    return false;
}
static const char *ident(void *ud)
{
    (void)ud;
    return "luaop-check";
}

static void usage(FILE *f)
{
    fprintf(f, "usage: luaop check --scripts DIR | --configmap FILE.yaml [--rbac [RBAC FLAGS]] [--webhooks [FLAGS]]\n"
               "Load and validate a script set as a reload would; exit 1 with file:line on error.\n"
               "\n"
               "  --rbac                          print the least-privilege RBAC the set needs (YAML on stdout)\n"
               "  --crd FILE                      CustomResourceDefinitions for plurals and scope (repeatable); also\n"
               "                                  warns (file:line) where a script uses a field of a for_ kind\n"
               "                                  that its schema lacks (obj.spec.sise; cmd/fieldcheck.h)\n"
               "  --namespace NS[,NS...]          a Role in each NS instead of a ClusterRole (luaop run --namespace)\n"
               "  --scripts-configmap NS/NAME     add a Role reading only that ConfigMap\n"
               "  --service-account NS/NAME       the subject bound (luaop-system/luaop)\n"
               "  --leader-election-namespace NS  where the Lease Role goes (the service account's namespace)\n"
               "  --name-prefix P                 object names P-manager, ... (luaop)\n"
               "  --webhooks                      print the Mutating/ValidatingWebhookConfigurations and CRD\n"
               "                                  conversion patches for the declared webhooks (YAML on stdout)\n"
               "  --webhook-service NS/NAME       the Service in front of the webhook server\n"
               "                                  (luaop-system/<prefix>-webhook-service)\n"
               "  --webhook-url URL               clientConfig.url = URL + path instead of the Service\n"
               "  --ca-bundle FILE                PEM CA certificates for clientConfig.caBundle\n"
               "  --cert-manager NS/NAME          annotate for cert-manager's CA injection from that Certificate\n"
               "Markers in the scripts add what declarations cannot show (kubebuilder's syntax):\n"
               "  -- +kubebuilder:rbac:groups=\"\",resources=configmaps,verbs=create;delete\n");
}

typedef struct check_flags {
    const char *dir, *cm, *sa, *wsvc, *ca_file;
    bool rbac, webhooks;
    lop_rbac_opts_t ro;
    lop_webhook_manifest_opts_t wo;
    json_t *crds;
    char sa_ns[256], sa_name[256], svc_ns[256], svc_name[256];
    char *ca_pem;
} check_flags_t;

/* "NS/NAME" into ns and name; false when it is not that shape. */
static bool split_ref(const char *ref, char *ns, char *name, size_t len)
{
    const char *slash = strchr(ref, '/');
    if (!slash || slash == ref || !slash[1]) return false;
    snprintf(ns, len, "%.*s", (int)(slash - ref), ref);
    snprintf(name, len, "%s", slash + 1);
    return true;
}

static bool add_crds(check_flags_t *f, const char *path)
{
    json_t *docs = NULL;
    lop_err_t cerr;
    lop_err_clear(&cerr);
    if (lop_yaml_load_file(path, &docs, &cerr) != LOP_OK) {
        fprintf(stderr, "luaop check: --crd %s: %s\n", path, cerr.message);
        return false;
    }
    json_array_extend(f->crds, docs);
    json_decref(docs);
    return true;
}

/* The references and files the flags name. 0, or 2 (usage error, printed). */
static int resolve_flags(check_flags_t *f)
{
    if (!f->dir == !f->cm) {
        usage(stderr);
        return 2;
    }
    if (f->sa) {
        if (!split_ref(f->sa, f->sa_ns, f->sa_name, sizeof f->sa_ns)) {
            fprintf(stderr, "luaop check: --service-account \"%s\": NAMESPACE/NAME expected\n", f->sa);
            return 2;
        }
        f->ro.sa_namespace = f->sa_ns;
        f->ro.sa_name = f->sa_name;
    }
    if (f->wsvc) {
        if (!split_ref(f->wsvc, f->svc_ns, f->svc_name, sizeof f->svc_ns)) {
            fprintf(stderr, "luaop check: --webhook-service \"%s\": NAMESPACE/NAME expected\n", f->wsvc);
            return 2;
        }
        f->wo.service_namespace = f->svc_ns;
        f->wo.service_name = f->svc_name;
    }
    if (f->ca_file) {
        f->ca_pem = lop_file_read(f->ca_file, NULL);
        if (!f->ca_pem || !strstr(f->ca_pem, "-----BEGIN CERTIFICATE-----")) {
            fprintf(stderr, "luaop check: --ca-bundle %s: %s\n", f->ca_file,
                    f->ca_pem ? "no PEM certificate in it" : strerror(errno));
            return 2;
        }
        f->wo.ca_bundle_pem = f->ca_pem;
    }
    f->ro.crds = f->crds;
    f->wo.crds = f->crds;
    return 0;
}

/* The flags into f. -1 to go on, else the exit status (0 for --help). */
static int parse_flags(int argc, char **argv, check_flags_t *f)
{
    static const struct option opts[] = {{"scripts", required_argument, NULL, 's'},
                                         {"configmap", required_argument, NULL, 'c'},
                                         {"rbac", no_argument, NULL, 'r'},
                                         {"crd", required_argument, NULL, 'C'},
                                         {"namespace", required_argument, NULL, 'n'},
                                         {"scripts-configmap", required_argument, NULL, 'm'},
                                         {"service-account", required_argument, NULL, 'a'},
                                         {"leader-election-namespace", required_argument, NULL, 'l'},
                                         {"name-prefix", required_argument, NULL, 'p'},
                                         {"webhooks", no_argument, NULL, 'w'},
                                         {"webhook-service", required_argument, NULL, 'S'},
                                         {"webhook-url", required_argument, NULL, 'U'},
                                         {"ca-bundle", required_argument, NULL, 'B'},
                                         {"cert-manager", required_argument, NULL, 'M'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    int c;
    optind = 0;
    while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
        switch (c) {
        case 's': f->dir = optarg; break;
        case 'c': f->cm = optarg; break;
        case 'r': f->rbac = true; break;
        case 'n': f->ro.namespace_ = optarg; break;
        case 'm': f->ro.scripts_configmap = optarg; break;
        case 'a': f->sa = optarg; break;
        case 'l': f->ro.leader_namespace = optarg; break;
        case 'p': f->ro.prefix = f->wo.prefix = optarg; break;
        case 'w': f->webhooks = true; break;
        case 'S': f->wsvc = optarg; break;
        case 'U': f->wo.url = optarg; break;
        case 'B': f->ca_file = optarg; break;
        case 'M': f->wo.cert_manager = optarg; break;
        case 'C':
            if (!add_crds(f, optarg)) return 2;
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    return -1;
}

/* The set of --scripts DIR or of the one ConfigMap in --configmap FILE. */
static lop_rc_t load_set(const check_flags_t *f, lop_script_set_t **set, lop_err_t *err)
{
    if (f->dir) return lop_scripts_load_dir(f->dir, set, err);
    json_t *docs = NULL;
    lop_rc_t rc = lop_yaml_load_file(f->cm, &docs, err);
    json_t *doc = NULL;
    size_t found = 0, i;
    json_t *d;
    json_array_foreach(docs, i, d)
    {
        const char *kind = json_string_value(json_object_get(d, "kind"));
        if (kind && strcmp(kind, "ConfigMap") == 0) {
            if (!found++) doc = d;
        }
    }
    if (rc == LOP_OK && found != 1) {
        rc = lop_err_set(err, LOP_EINVAL, 0, NULL,
                         found ? "%s: %zu ConfigMaps; give a file with exactly one"
                               : "%s: no ConfigMap in the file (kind: ConfigMap expected)",
                         f->cm, found);
    } else if (rc == LOP_OK) {
        json_t *md = json_object_get(doc, "metadata");
        const char *ns = json_string_value(json_object_get(md, "namespace"));
        const char *name = json_string_value(json_object_get(md, "name"));
        char *text = json_dumps(doc, JSON_COMPACT);
        char origin[600];
        snprintf(origin, sizeof origin, "configmap %s%s%s (%s)", ns ? ns : "", ns ? "/" : "", name ? name : "?", f->cm);
        rc = lop_scripts_load_configmap_json(text, strlen(text), origin, set, err);
        free(text);
    }
    json_decref(docs);
    return rc;
}

/* The declarations as a reload checks them: at least one controller or webhook, unique names. */
static bool check_decls(const lop_script_set_t *set, const lop_ctrl_decl_t *decls, size_t n, size_t nwebhooks)
{
    if (n == 0 && nwebhooks == 0) {
        fprintf(stderr, "luaop check: %s: main.lua declared no controller\n", set->origin);
        return false;
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < i; j++)
            if (strcmp(decls[i].name, decls[j].name) == 0) { /* as the manager refuses it */
                fprintf(stderr, "luaop check: %s: two controllers are named \"%s\"\n", set->origin, decls[i].name);
                return false;
            }
    return true;
}

/* Every field index on a kind some watch caches in full, as the manager's install checks it
 * (there by resolved kind; here by api_version and kind as written, without a cluster). */
static bool check_indexes(const lop_script_set_t *set, const lop_ctrl_decl_t *decls, size_t n,
                          const lop_index_decl_t *ix, size_t nix)
{
    for (size_t k = 0; k < nix; k++) {
        bool full = false;
        for (size_t i = 0; i < n && !full; i++) {
            const lop_ctrl_decl_t *d = &decls[i];
            for (size_t w = 0; w < 1 + d->nowns + d->nwatches && !full; w++) {
                const lop_watch_decl_t *wd = w == 0          ? &d->for_
                                             : w <= d->nowns ? &d->owns[w - 1]
                                                             : &d->watches[w - 1 - d->nowns];
                full = !wd->metadata_only && !wd->label_selector &&
                       strcmp(wd->gvk.api_version, ix[k].gvk.api_version) == 0 &&
                       strcmp(wd->gvk.kind, ix[k].gvk.kind) == 0;
            }
        }
        if (!full) {
            fprintf(stderr,
                    "luaop check: %s: op.index '%s': no controller watches %s %s in full (for_, owns or watches "
                    "without label_selector or metadata_only): the index lives in that kind's informer cache\n",
                    set->origin, ix[k].name, ix[k].gvk.api_version, ix[k].gvk.kind);
            return false;
        }
    }
    return true;
}

static void print_summary(FILE *out, const lop_script_set_t *set, const lop_ctrl_decl_t *decls, size_t n,
                          const lop_webhook_decl_t *wh, size_t nwh, const lop_index_decl_t *ix, size_t nix)
{
    static const char *const types[] = {"mutating", "validating", "conversion"};
    fprintf(out, "ok: %s (version %s), %zu controller%s", set->origin, set->version, n, n == 1 ? "" : "s");
    if (nwh) fprintf(out, ", %zu webhook%s", nwh, nwh == 1 ? "" : "s");
    fputc('\n', out);
    for (size_t i = 0; i < n; i++)
        fprintf(out, "  %s: %s %s, owns %zu, watches %zu, workers %d\n", decls[i].name, decls[i].for_.gvk.api_version,
                decls[i].for_.gvk.kind, decls[i].nowns, decls[i].nwatches, decls[i].max_concurrent_reconciles);
    for (size_t i = 0; i < nwh; i++) fprintf(out, "  webhook %s: %s %s\n", wh[i].name, types[wh[i].type], wh[i].path);
    for (size_t i = 0; i < nix; i++)
        fprintf(out, "  index %s: %s %s, %s%s\n", ix[i].name, ix[i].gvk.api_version, ix[i].gvk.kind,
                ix[i].field ? "field " : "an extract function", ix[i].field ? ix[i].field : "");
}

static void print_webhooks(FILE *out, const lop_script_set_t *set, const lop_webhook_decl_t *wh, size_t n,
                           const lop_webhook_manifest_opts_t *wo)
{
    json_t *docs = lop_webhook_manifests(wh, n, wo);
    lop_buf_t b = {0};
    lop_buf_printf(&b, "# Generated by `luaop check --webhooks` from %s: do not edit by hand.\n", set->origin);
    size_t i;
    json_t *d;
    json_array_foreach(docs, i, d)
    {
        lop_buf_puts(&b, "---\n");
        lop_yaml_emit(&b, d);
    }
    fwrite(b.data, 1, b.len, out);
    lop_buf_free(&b);
    json_decref(docs);
}

/* Build the VM, check what it declared, print what the flags ask for. The exit status. */
static int check_set(check_flags_t *f, lop_script_set_t *set)
{
    lop_host_api_t host = {.cache_get = no_cache, .request = no_request, .is_leader = not_leader, .identity = ident};
    lop_engine_opts_t eo = {
        .memory_limit_bytes = 64u << 20, .load_timeout_ns = 10 * LOP_NS_PER_S, .clock = &lop_clock_system};
    const lop_engine_t *engine = lop_lua_engine();
    lop_err_t err;
    lop_err_clear(&err);
    lop_vm_t *vm = engine->vm_new(set, &eo, &host, &err);
    if (!vm) {
        fprintf(stderr, "luaop check: %s\n", err.message);
        return 1;
    }
    const lop_ctrl_decl_t *decls;
    const lop_webhook_decl_t *wh;
    size_t n, nwh;
    engine->declarations(vm, &decls, &n);
    engine->webhook_declarations(vm, &wh, &nwh);
    const lop_index_decl_t *ix = NULL;
    size_t nix = 0;
    if (engine->index_declarations) engine->index_declarations(vm, &ix, &nix);
    int status = 0;
    if (!check_decls(set, decls, n, nwh) || !check_indexes(set, decls, n, ix, nix)) {
        status = 1;
    } else {
        /* with --rbac or --webhooks, stdout carries only the YAML */
        print_summary(f->rbac || f->webhooks ? stderr : stdout, set, decls, n, wh, nwh, ix, nix);
        if (json_array_size(f->crds)) { /* fields the for_ kinds' schemas lack: warnings, not errors */
            char prefix[4200];
            snprintf(prefix, sizeof prefix, "%s%s", f->dir ? f->dir : "", f->dir ? "/" : "");
            size_t w = lop_fieldcheck(stderr, prefix, set, decls, n, f->crds);
            if (w) fprintf(stderr, "luaop check: %zu field%s not in the CRD schemas\n", w, w == 1 ? "" : "s");
        }
        if (f->rbac && lop_rbac_generate(stdout, decls, n, set, &f->ro, &err) != LOP_OK) {
            fprintf(stderr, "luaop check --rbac: %s\n", err.message);
            status = 1;
        }
        if (f->webhooks && status == 0) print_webhooks(stdout, set, wh, nwh, &f->wo);
    }
    engine->vm_free(vm);
    return status;
}

int lop_cmd_check(int argc, char **argv)
{
    check_flags_t f = {.crds = json_array()};
    int status = parse_flags(argc, argv, &f);
    if (status < 0) status = resolve_flags(&f);
    if (status == 0 && (f.dir || f.cm)) {
        lop_err_t err;
        lop_err_clear(&err);
        lop_script_set_t *set = NULL;
        if (load_set(&f, &set, &err) != LOP_OK) {
            fprintf(stderr, "luaop check: %s\n", err.message);
            status = 1;
        } else {
            status = check_set(&f, set);
            lop_script_set_free(set);
        }
    }
    json_decref(f.crds);
    free(f.ca_pem);
    return status;
}
