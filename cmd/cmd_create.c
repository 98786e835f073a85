/* SPDX-License-Identifier: Apache-2.0 */
/* `luaop create api` and `luaop create webhook` (kubebuilder's `create api` / `create webhook`)
 * in a project made by `luaop init`: a CRD, a sample, a reconciler and its busted spec,
 * registered from scripts/main.lua; or a luaop.webhook declaration, its spec and the config/
 * parts that serve it. Templates: cmd/scaffold/ (cmd/scaffold.h). docs/scaffold.md. */
#include "cmd/cli.h"
#include "cmd/crdtypes.h"
#include "cmd/scaffold.h"
#include "host/meta/plural.h"

#include <ctype.h>
#include <getopt.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

typedef struct create_flags {
    const char *group, *version, *kind, *plural, *repo;
    bool namespaced, force, defaulting, validation, conversion;
} create_flags_t;

/* Everything the templates of one kind use. */
typedef struct kind_vars {
    char domain[256], project[256], ns[256];
    char group[512], api_version[600], kind_lower[128], plural[128], module[160];
    char crd_file[700], sample_file[700];
} kind_vars_t;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: luaop create api --group G --version V --kind K [--plural P] [--namespaced=BOOL] [--force]\n"
            "       luaop create webhook --group G --version V --kind K [--defaulting]\n"
            "                            [--programmatic-validation] [--conversion] [--force]\n"
            "       luaop create manifests   (regenerate config/rbac/role.yaml and config/webhook/manifests.yaml;\n"
            "                                 with config/default's [cert-manager] lines on, cert-manager's\n"
            "                                 cert-manager.io/inject-ca-from annotations)\n"
            "In a project made by `luaop init` (--repo DIR, default the current directory).\n\n"
            "  api:      config/crd/bases/G.DOMAIN_PLURAL.yaml, config/samples/G_V_KIND.yaml,\n"
            "            scripts/KIND_controller.lua (registered in scripts/main.lua), spec/KIND_controller_spec.lua\n"
            "  --plural P          the resource name (kubebuilder's guess from the kind)\n"
            "  --namespaced=BOOL   namespace-scoped (true) or cluster-scoped kind\n"
            "  webhook:  scripts/KIND_webhook.lua (declared from scripts/main.lua), spec/KIND_webhook_spec.lua,\n"
            "            config/webhook, config/certmanager; at least one of the three kinds:\n"
            "  --defaulting                a mutating webhook that fills defaults\n"
            "  --programmatic-validation   a validating webhook on create and update\n"
            "  --conversion                a conversion webhook between the kind's versions\n");
}

static bool parse_bool(const char *v, bool *out)
{
    if (!v || strcmp(v, "true") == 0) return *out = true, true;
    if (strcmp(v, "false") == 0) return *out = false, true;
    return false;
}

static int parse(int argc, char **argv, create_flags_t *f)
{
    static const struct option longs[] = {{"group", required_argument, NULL, 'g'},
                                          {"version", required_argument, NULL, 'v'},
                                          {"kind", required_argument, NULL, 'k'},
                                          {"plural", required_argument, NULL, 'p'},
                                          {"namespaced", optional_argument, NULL, 'n'},
                                          {"repo", required_argument, NULL, 'r'},
                                          {"force", no_argument, NULL, 'f'},
                                          {"defaulting", no_argument, NULL, 'D'},
                                          {"programmatic-validation", no_argument, NULL, 'V'},
                                          {"conversion", no_argument, NULL, 'C'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
        switch (c) {
        case 'g': f->group = optarg; break;
        case 'v': f->version = optarg; break;
        case 'k': f->kind = optarg; break;
        case 'p': f->plural = optarg; break;
        case 'r': f->repo = optarg; break;
        case 'f': f->force = true; break;
        case 'D': f->defaulting = true; break;
        case 'V': f->validation = true; break;
        case 'C': f->conversion = true; break;
        case 'n':
            if (!parse_bool(optarg, &f->namespaced)) {
                fprintf(stderr, "luaop create: --namespaced takes true or false, not \"%s\"\n", optarg);
                return 2;
            }
            break;
        case 'h': usage(stdout); return 1;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "luaop create: unexpected argument \"%s\"\n", argv[optind]);
        return 2;
    }
    return 0;
}

/* v1, v1alpha1, v2beta3: Kubernetes' version names (what kube-apiserver sorts versions by). */
static bool valid_version(const char *v)
{
    if (!v || v[0] != 'v' || !isdigit((unsigned char)v[1]) || v[1] == '0') return false;
    const char *p = v + 1;
    while (isdigit((unsigned char)*p)) p++;
    if (!*p) return true;
    if (strncmp(p, "alpha", 5) == 0)
        p += 5;
    else if (strncmp(p, "beta", 4) == 0)
        p += 4;
    else
        return false;
    if (!isdigit((unsigned char)*p) || *p == '0') return false;
    while (isdigit((unsigned char)*p)) p++;
    return *p == '\0';
}

static bool valid_kind(const char *k)
{
    if (!k || !isupper((unsigned char)k[0]) || strlen(k) > 63) return false;
    for (const char *p = k; *p; p++)
        if (!isalnum((unsigned char)*p)) return false;
    return true;
}

static int check_flags(const create_flags_t *f)
{
    if (!f->group || !f->version || !f->kind) {
        fprintf(stderr, "luaop create: --group, --version and --kind are required\n");
        return 2;
    }
    if (!lop_scaffold_dns_name(f->group, true)) {
        fprintf(stderr, "luaop create: --group \"%s\" is not a DNS-1123 subdomain (lower-case, e.g. cache)\n",
                f->group);
        return 2;
    }
    if (!valid_version(f->version)) {
        fprintf(stderr, "luaop create: --version \"%s\" is not a Kubernetes version (v1, v1alpha1, v2beta1...)\n",
                f->version);
        return 2;
    }
    if (!valid_kind(f->kind)) {
        fprintf(stderr, "luaop create: --kind \"%s\" is not UpperCamelCase alphanumerics (e.g. Memcached)\n", f->kind);
        return 2;
    }
    if (f->plural && !lop_scaffold_dns_name(f->plural, false)) {
        fprintf(stderr, "luaop create: --plural \"%s\" is not a lower-case DNS-1123 label\n", f->plural);
        return 2;
    }
    return 0;
}

static int kind_setup(const create_flags_t *f, kind_vars_t *k)
{
    lop_err_t err;
    lop_err_clear(&err);
    if (lop_scaffold_read_project(f->repo, k->domain, k->project, k->ns, &err) != LOP_OK) {
        fprintf(stderr, "luaop create: %s\n", err.message);
        return 1;
    }
    snprintf(k->group, sizeof k->group, "%s.%s", f->group, k->domain);
    snprintf(k->api_version, sizeof k->api_version, "%s/%s", k->group, f->version);
    size_t i = 0;
    for (; f->kind[i] && i < sizeof k->kind_lower - 1; i++) k->kind_lower[i] = (char)tolower((unsigned char)f->kind[i]);
    k->kind_lower[i] = '\0';
    if (f->plural)
        snprintf(k->plural, sizeof k->plural, "%s", f->plural);
    else
        lop_meta_guess_plural(f->kind, k->plural, sizeof k->plural);
    snprintf(k->crd_file, sizeof k->crd_file, "%s_%s.yaml", k->group, k->plural);
    snprintf(k->sample_file, sizeof k->sample_file, "%s_%s_%s.yaml", f->group, f->version, k->kind_lower);
    return 0;
}

static void fill_vars(lop_scaffold_var_t *v, const create_flags_t *f, const kind_vars_t *k)
{
    const lop_scaffold_var_t all[] = {
        {"project", k->project},
        {"domain", k->domain},
        {"namespace", k->ns},
        {"group", k->group},
        {"version", f->version},
        {"kind", f->kind},
        {"kind_lower", k->kind_lower},
        {"plural", k->plural},
        {"api_version", k->api_version},
        {"scope", f->namespaced ? "Namespaced" : "Cluster"},
        {"namespaced", f->namespaced ? "true" : ""},
        {"module", k->module},
        {"crd_file", k->crd_file},
        {"sample_file", k->sample_file},
        {"defaulting", f->defaulting ? "true" : ""},
        {"validation", f->validation ? "true" : ""},
        {"conversion", f->conversion ? "true" : ""},
        {NULL, NULL},
    };
    memcpy(v, all, sizeof all);
}

#define NVARS 18

static int emit_all(const create_flags_t *f, const lop_scaffold_var_t *vars, const char *const (*files)[2], size_t n)
{
    lop_err_t err;
    lop_err_clear(&err);
    for (size_t i = 0; i < n; i++) {
        if (lop_scaffold_emit(f->repo, files[i][1], files[i][0], vars, f->force, &err) != LOP_OK) {
            fprintf(stderr, "luaop create: %s\n", err.message);
            return 1;
        }
        printf("  create %s\n", files[i][1]);
    }
    return 0;
}

static int insert(const create_flags_t *f, const char *rel, const char *marker, const char *text)
{
    lop_err_t err;
    lop_err_clear(&err);
    bool already = false;
    if (lop_scaffold_insert(f->repo, rel, marker, text, &already, &err) != LOP_OK) {
        fprintf(stderr, "luaop create: %s\n", err.message);
        return 1;
    }
    printf("  %s %s\n", already ? "keep  " : "update", rel);
    return 0;
}

static void regen(const create_flags_t *f, const kind_vars_t *k, bool webhooks)
{
    lop_err_t err;
    lop_err_clear(&err);
    if (lop_scaffold_regen_rbac(f->repo, k->project, k->ns, &err) != LOP_OK)
        fprintf(stderr, "luaop create: warning: %s (fix the scripts, then `make manifests`)\n", err.message);
    else
        printf("  update config/rbac/role.yaml (luaop check --rbac)\n");
    if (!webhooks) return;
    /* with cert-manager on, the regenerated manifests keep its CA-injection annotations */
    char cm[600];
    if (lop_scaffold_cert_manager_ref(f->repo, cm, sizeof cm, &err) != LOP_OK)
        fprintf(stderr, "luaop create: warning: %s (fix it, then `make manifests`)\n", err.message);
    else if (lop_scaffold_regen_webhooks(f->repo, k->project, k->ns, cm, &err) != LOP_OK)
        fprintf(stderr, "luaop create: warning: %s (fix the scripts, then `make manifests`)\n", err.message);
    else
        printf("  update config/webhook/manifests.yaml (luaop check --webhooks%s%s)\n", *cm ? " --cert-manager " : "",
               cm);
}

/* types/ from every CRD in config/crd/bases (`make types` does the same): the LuaLS classes of
 * the project's kinds, which .luarc.json lists. */
static void regen_types(const create_flags_t *f)
{
    char pattern[PATH_MAX + 64], out[PATH_MAX + 16];
    snprintf(pattern, sizeof pattern, "%s/config/crd/bases/*.yaml", f->repo);
    snprintf(out, sizeof out, "%s/types", f->repo);
    glob_t g;
    if (glob(pattern, 0, NULL, &g) != 0) return;
    if (lop_types_generate((const char *const *)g.gl_pathv, g.gl_pathc, out, NULL, false) == 0)
        printf("  update types/ (luaop types: LuaLS classes of the CRDs)\n");
    else
        fprintf(stderr, "luaop create: warning: types/ not regenerated (fix the CRD, then `make types`)\n");
    globfree(&g);
}

static int create_api(const create_flags_t *f)
{
    kind_vars_t k;
    if (kind_setup(f, &k)) return 1;
    snprintf(k.module, sizeof k.module, "%s_controller", k.kind_lower);
    char crd[800], sample[800], script[300], spec[300], line[400], res[800], sres[800];
    snprintf(crd, sizeof crd, "config/crd/bases/%s", k.crd_file);
    snprintf(sample, sizeof sample, "config/samples/%s", k.sample_file);
    snprintf(script, sizeof script, "scripts/%s.lua", k.module);
    snprintf(spec, sizeof spec, "spec/%s_spec.lua", k.module);
    lop_scaffold_var_t vars[NVARS];
    fill_vars(vars, f, &k);
    const char *const files[][2] = {
        {"crd.yaml", crd}, {"sample.yaml", sample}, {"controller.lua", script}, {"controller_spec.lua", spec}};
    if (emit_all(f, vars, files, sizeof files / sizeof files[0])) return 1;
    snprintf(line, sizeof line, "require(\"%s\").setup()\n", k.module);
    snprintf(res, sizeof res, "- bases/%s\n", k.crd_file);
    snprintf(sres, sizeof sres, "- %s\n", k.sample_file);
    if (insert(f, "scripts/main.lua", "+luaop:scaffold:controllers", line) ||
        insert(f, "config/crd/kustomization.yaml", "+luaop:scaffold:crdkustomizeresource", res) ||
        insert(f, "config/samples/kustomization.yaml", "+luaop:scaffold:manifestskustomizesamples", sres))
        return 1;
    regen(f, &k, lop_scaffold_exists(f->repo, "config/webhook/kustomization.yaml"));
    regen_types(f);
    printf("Next: edit the schema in %s and the reconciler in %s (then `make types`); make test; make dev\n", crd,
           script);
    return 0;
}

/* The [webhook] lines of config/default/kustomization.yaml, turned on (their prefix removed). */
static int enable_webhook_lines(const create_flags_t *f)
{
    static const char prefix[] = "\n#[webhook] ";
    const size_t plen = sizeof prefix - 2; /* what goes: the prefix after its newline */
    char path[4096];
    snprintf(path, sizeof path, "%s/config/default/kustomization.yaml", f->repo);
    FILE *fp = fopen(path, "rb");
    if (!fp) return 0; /* a project without config/default: nothing to turn on */
    lop_buf_t b = LOP_BUF_INIT;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, fp)) > 0) lop_buf_append(&b, chunk, n);
    fclose(fp);
    bool changed = false;
    for (char *m = b.data ? strstr(b.data, prefix) : NULL; m; m = strstr(m + 1, prefix)) {
        memmove(m + 1, m + 1 + plen, strlen(m + 1 + plen) + 1);
        b.len -= plen;
        changed = true;
    }
    lop_err_t err;
    lop_err_clear(&err);
    lop_rc_t rc =
        changed ? lop_scaffold_write(f->repo, "config/default/kustomization.yaml", b.data, b.len, true, &err) : LOP_OK;
    lop_buf_free(&b);
    if (rc != LOP_OK) {
        fprintf(stderr, "luaop create: %s\n", err.message);
        return 1;
    }
    if (changed) printf("  update config/default/kustomization.yaml (the [webhook] lines are on)\n");
    return 0;
}

static int create_webhook(const create_flags_t *f)
{
    if (!f->defaulting && !f->validation && !f->conversion) {
        fprintf(stderr, "luaop create webhook: say which: --defaulting, --programmatic-validation and/or "
                        "--conversion\n");
        return 2;
    }
    kind_vars_t k;
    if (kind_setup(f, &k)) return 1;
    char crd[800];
    snprintf(crd, sizeof crd, "config/crd/bases/%s", k.crd_file);
    if (!lop_scaffold_exists(f->repo, crd)) {
        fprintf(stderr, "luaop create webhook: no %s: run `luaop create api` for %s/%s %s first\n", crd, k.group,
                f->version, f->kind);
        return 1;
    }
    snprintf(k.module, sizeof k.module, "%s_webhook", k.kind_lower);
    char script[300], spec[300], line[400];
    snprintf(script, sizeof script, "scripts/%s.lua", k.module);
    snprintf(spec, sizeof spec, "spec/%s_spec.lua", k.module);
    lop_scaffold_var_t vars[NVARS];
    fill_vars(vars, f, &k);
    const char *const files[][2] = {{"webhook.lua", script}, {"webhook_spec.lua", spec}};
    if (emit_all(f, vars, files, 2)) return 1;
    /* the config/ parts are shared by every kind's webhooks: written once, kept afterwards */
    const char *const shared[][2] = {
        {"config_webhook_kustomization.yaml", "config/webhook/kustomization.yaml"},
        {"config_webhook_service.yaml", "config/webhook/service.yaml"},
        {"config_default_manager_webhook_patch.yaml", "config/default/manager_webhook_patch.yaml"},
        {"config_certmanager_kustomization.yaml", "config/certmanager/kustomization.yaml"},
        {"config_certmanager_kustomizeconfig.yaml", "config/certmanager/kustomizeconfig.yaml"},
        {"config_certmanager_certificate.yaml", "config/certmanager/certificate.yaml"}};
    for (size_t i = 0; i < sizeof shared / sizeof shared[0]; i++)
        if (!lop_scaffold_exists(f->repo, shared[i][1]) && emit_all(f, vars, &shared[i], 1)) return 1;
    snprintf(line, sizeof line, "require(\"%s\").declare()\n", k.module);
    if (insert(f, "scripts/main.lua", "+luaop:scaffold:webhooks", line) || enable_webhook_lines(f)) return 1;
    regen(f, &k, true);
    if (f->conversion)
        printf("Conversion: add the next version to %s; `luaop check --webhooks` prints the CRD's\n"
               "spec.conversion patch (docs/deploying.md#conversion-webhooks)\n",
               crd);
    return 0;
}

/* `make manifests`: config/rbac/role.yaml and, with config/webhook, the webhook manifests, with
 * cert-manager's CA-injection annotation when config/default deploys config/certmanager. The
 * kustomizations are read before anything is written: a malformed one changes no file. */
static int create_manifests(const create_flags_t *f)
{
    kind_vars_t k;
    char dom[256], cm[600];
    lop_err_t err;
    lop_err_clear(&err);
    if (lop_scaffold_read_project(f->repo, dom, k.project, k.ns, &err) != LOP_OK) {
        fprintf(stderr, "luaop create: %s\n", err.message);
        return 1;
    }
    bool hooks = lop_scaffold_exists(f->repo, "config/webhook/kustomization.yaml");
    if (lop_scaffold_cert_manager_ref(f->repo, cm, sizeof cm, &err) != LOP_OK ||
        lop_scaffold_regen_rbac(f->repo, k.project, k.ns, &err) != LOP_OK ||
        (hooks && lop_scaffold_regen_webhooks(f->repo, k.project, k.ns, cm, &err) != LOP_OK)) {
        fprintf(stderr, "luaop create manifests: %s\n", err.message);
        return 1;
    }
    printf("  update config/rbac/role.yaml%s\n", hooks ? ", config/webhook/manifests.yaml" : "");
    if (hooks && *cm)
        printf("  cert-manager on (config/default lists ../certmanager): cert-manager.io/inject-ca-from: %s\n", cm);
    else if (hooks)
        printf("  cert-manager off: no CA-injection annotations\n");
    return 0;
}

int lop_cmd_create(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *what = argv[1];
    if (strcmp(what, "api") != 0 && strcmp(what, "webhook") != 0 && strcmp(what, "manifests") != 0) {
        fprintf(stderr, "luaop create: unknown target \"%s\" (api, webhook or manifests)\n", what);
        return 2;
    }
    create_flags_t f = {.repo = ".", .namespaced = true};
    int rc = parse(argc - 1, argv + 1, &f);
    if (rc) return rc == 1 ? 0 : rc;
    if (strcmp(what, "manifests") == 0) return create_manifests(&f);
    if ((rc = check_flags(&f))) return rc;
    return strcmp(what, "api") == 0 ? create_api(&f) : create_webhook(&f);
}
