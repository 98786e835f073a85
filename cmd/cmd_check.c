/* `luaop check`: load and validate a script set exactly as a reload would (compile every file,
 * run main.lua under the load deadline, check the controller declarations, refuse duplicate
 * controller names), without a cluster. Exits non-zero with file:line on error. Kinds are not
 * resolved (that needs the API server). --configmap takes a YAML file holding exactly one
 * ConfigMap (other documents are ignored), e.g. the output of
 * `kubectl create configmap NAME --from-file=DIR --dry-run=client -o yaml`. --rbac prints the
 * RBAC the set needs (cmd/rbac.h). */
#include "bindings/engine_lua.h"
#include "host/codec/yaml.h"
#include "cmd/cli.h"
#include "cmd/rbac.h"
#include "host/runtime/scripts.h"

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
    fprintf(f, "usage: luaop check --scripts DIR | --configmap FILE.yaml [--rbac [RBAC FLAGS]]\n"
               "Load and validate a script set as a reload would; exit 1 with file:line on error.\n"
               "\n"
               "  --rbac                          print the least-privilege RBAC the set needs (YAML on stdout)\n"
               "  --crd FILE                      CustomResourceDefinitions for plurals and scope (repeatable)\n"
               "  --namespace NS                  a Role in NS instead of a ClusterRole (luaop run --namespace)\n"
               "  --scripts-configmap NS/NAME     add a Role reading only that ConfigMap\n"
               "  --service-account NS/NAME       the subject bound (luaop-system/luaop)\n"
               "  --leader-election-namespace NS  where the Lease Role goes (the service account's namespace)\n"
               "  --name-prefix P                 object names P-manager, ... (luaop)\n"
               "Markers in the scripts add what declarations cannot show (kubebuilder's syntax):\n"
               "  -- +kubebuilder:rbac:groups=\"\",resources=configmaps,verbs=create;delete\n");
}

int lop_cmd_check(int argc, char **argv)
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
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *dir = NULL, *cm = NULL, *sa = NULL;
    bool rbac = false;
    lop_rbac_opts_t ro = {0};
    json_t *crds = json_array();
    int c;
    optind = 0;
    while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
        if (c == 's')
            dir = optarg;
        else if (c == 'c')
            cm = optarg;
        else if (c == 'r')
            rbac = true;
        else if (c == 'n')
            ro.namespace_ = optarg;
        else if (c == 'm')
            ro.scripts_configmap = optarg;
        else if (c == 'a')
            sa = optarg;
        else if (c == 'l')
            ro.leader_namespace = optarg;
        else if (c == 'p')
            ro.prefix = optarg;
        else if (c == 'C') {
            json_t *docs = NULL;
            lop_err_t cerr;
            lop_err_clear(&cerr);
            if (lop_yaml_load_file(optarg, &docs, &cerr) != LOP_OK) {
                fprintf(stderr, "luaop check: --crd %s: %s\n", optarg, cerr.message);
                json_decref(crds);
                return 2;
            }
            json_array_extend(crds, docs);
            json_decref(docs);
        } else if (c == 'h') {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (!dir == !cm) {
        usage(stderr);
        json_decref(crds);
        return 2;
    }
    char sa_ns[256] = "", sa_name[256] = "";
    if (sa) {
        const char *slash = strchr(sa, '/');
        if (!slash || slash == sa || !slash[1]) {
            fprintf(stderr, "luaop check: --service-account \"%s\": NAMESPACE/NAME expected\n", sa);
            json_decref(crds);
            return 2;
        }
        snprintf(sa_ns, sizeof sa_ns, "%.*s", (int)(slash - sa), sa);
        snprintf(sa_name, sizeof sa_name, "%s", slash + 1);
        ro.sa_namespace = sa_ns;
        ro.sa_name = sa_name;
    }
    ro.crds = crds;
    lop_err_t err;
    lop_err_clear(&err);
    lop_script_set_t *set = NULL;
    lop_rc_t rc;
    if (dir) {
        rc = lop_scripts_load_dir(dir, &set, &err);
    } else {
        json_t *docs = NULL;
        rc = lop_yaml_load_file(cm, &docs, &err);
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
            rc = lop_err_set(&err, LOP_EINVAL, 0, NULL,
                             found ? "%s: %zu ConfigMaps; give a file with exactly one"
                                   : "%s: no ConfigMap in the file (kind: ConfigMap expected)",
                             cm, found);
        } else if (rc == LOP_OK) {
            json_t *md = json_object_get(doc, "metadata");
            const char *ns = json_string_value(json_object_get(md, "namespace"));
            const char *name = json_string_value(json_object_get(md, "name"));
            char *text = json_dumps(doc, JSON_COMPACT);
            char origin[600];
            snprintf(origin, sizeof origin, "configmap %s%s%s (%s)", ns ? ns : "", ns ? "/" : "", name ? name : "?",
                     cm);
            rc = lop_scripts_load_configmap_json(text, strlen(text), origin, &set, &err);
            free(text);
        }
        json_decref(docs);
    }
    if (rc != LOP_OK) {
        fprintf(stderr, "luaop check: %s\n", err.message);
        return 1;
    }
    lop_host_api_t host = {.cache_get = no_cache, .request = no_request, .is_leader = not_leader, .identity = ident};
    lop_engine_opts_t eo = {
        .memory_limit_bytes = 64u << 20, .load_timeout_ns = 10 * LOP_NS_PER_S, .clock = &lop_clock_system};
    const lop_engine_t *engine = lop_lua_engine();
    lop_vm_t *vm = engine->vm_new(set, &eo, &host, &err);
    if (!vm) {
        fprintf(stderr, "luaop check: %s\n", err.message);
        lop_script_set_free(set);
        return 1;
    }
    const lop_ctrl_decl_t *decls;
    size_t n;
    engine->declarations(vm, &decls, &n);
    if (n == 0) {
        fprintf(stderr, "luaop check: %s: main.lua declared no controller\n", set->origin);
        engine->vm_free(vm);
        lop_script_set_free(set);
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < i; j++) {
            if (strcmp(decls[i].name, decls[j].name) == 0) { /* as the manager refuses it */
                fprintf(stderr, "luaop check: %s: two controllers are named \"%s\"\n", set->origin, decls[i].name);
                engine->vm_free(vm);
                lop_script_set_free(set);
                return 1;
            }
        }
    }
    FILE *summary = rbac ? stderr : stdout; /* with --rbac, stdout carries only the YAML */
    fprintf(summary, "ok: %s (version %s), %zu controller%s\n", set->origin, set->version, n, n == 1 ? "" : "s");
    for (size_t i = 0; i < n; i++)
        fprintf(summary, "  %s: %s %s, owns %zu, watches %zu, workers %d\n", decls[i].name,
                decls[i].for_.gvk.api_version, decls[i].for_.gvk.kind, decls[i].nowns, decls[i].nwatches,
                decls[i].max_concurrent_reconciles);
    int status = 0;
    if (rbac && lop_rbac_generate(stdout, decls, n, set, &ro, &err) != LOP_OK) {
        fprintf(stderr, "luaop check --rbac: %s\n", err.message);
        status = 1;
    }
    engine->vm_free(vm);
    lop_script_set_free(set);
    json_decref(crds);
    return status;
}
