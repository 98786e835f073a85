/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scaffold.h — what `luaop init` and `luaop create` share: the embedded templates, their
 * rendering, and writing the project's files (kubebuilder's machinery/ package in spirit).
 *
 * Templates are cmd/scaffold/NAME.tmpl, embedded at build time (cmake/embed_templates.cmake) as
 * lop_scaffold_templates[]. Their syntax, a small subset of mustache:
 *   {{var}}              the value of var (an unknown var is an error, so a typo cannot ship)
 *   {{#var}}..{{/var}}   kept when var is set and neither "" nor "false"
 *   {{^var}}..{{/var}}   kept when it is not
 * A section tag alone on a line at column 0 takes its line ending with it. Nesting is allowed.
 *
 * Thread-safety: none needed (a CLI command). Errors fill lop_err_t with a message naming the file
 * or template and the cause; nothing is left half-written when a render fails.
 */
#ifndef LOP_CMD_SCAFFOLD_H
#define LOP_CMD_SCAFFOLD_H

#include "host/util/buf.h"
#include "host/util/err.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct lop_scaffold_tmpl {
    const char *name; /* file name without .tmpl, e.g. "main.lua" */
    const char *data; /* NUL-terminated contents, static storage */
    size_t len;
} lop_scaffold_tmpl_t;

/* Every embedded template, ended by an entry whose name is NULL (generated source). */
extern const lop_scaffold_tmpl_t lop_scaffold_templates[];

/* One template variable: key and value (NULL = unset). Arrays of them end with key == NULL. */
typedef struct lop_scaffold_var {
    const char *key;
    const char *value;
} lop_scaffold_var_t;

/* The template called name, or NULL when none is embedded under that name. Static storage. */
const char *lop_scaffold_template(const char *name);

/* Render the template text tmpl (tname names it in errors) with vars, appending to out.
 * LOP_EINVAL with "TNAME:LINE: ..." on an unknown variable, an unclosed or mismatched section or
 * nesting deeper than 8; out may then hold a partial result, which the caller discards. */
LOP_MUST_CHECK lop_rc_t lop_scaffold_render(const char *tname, const char *tmpl, const lop_scaffold_var_t *vars,
                                            lop_buf_t *out, lop_err_t *err);

/* Write data (len bytes) to ROOT/REL, creating the parent directories. An existing file is
 * replaced only when overwrite is set, else LOP_EEXIST naming it. LOP_ERR with strerror on an
 * I/O failure. The write goes to a temporary file renamed over the target. */
LOP_MUST_CHECK lop_rc_t lop_scaffold_write(const char *root, const char *rel, const char *data, size_t len,
                                           bool overwrite, lop_err_t *err);

/* lop_scaffold_template(tname) rendered with vars and written to ROOT/REL (lop_scaffold_write). */
LOP_MUST_CHECK lop_rc_t lop_scaffold_emit(const char *root, const char *rel, const char *tname,
                                          const lop_scaffold_var_t *vars, bool overwrite, lop_err_t *err);

/* Insert text (whole lines) before the first line of ROOT/REL that contains marker (kubebuilder's
 * "+kubebuilder:scaffold:" comments: here "+luaop:scaffold:NAME"). Nothing changes, and
 * *already is set, when the file holds text already. LOP_ENOTFOUND naming file and marker when
 * the marker is gone. already may be NULL. */
LOP_MUST_CHECK lop_rc_t lop_scaffold_insert(const char *root, const char *rel, const char *marker, const char *text,
                                            bool *already, lop_err_t *err);

/* Remove every line of ROOT/REL that is exactly line (one whole line, its '\n' included: the text
 * a lop_scaffold_insert added), rewriting the file only when there was one; *removed (may be NULL)
 * says whether there was. LOP_ENOTFOUND naming the file when it is missing, LOP_ERR on I/O. */
LOP_MUST_CHECK lop_rc_t lop_scaffold_remove_line(const char *root, const char *rel, const char *line, bool *removed,
                                                 lop_err_t *err);

/* Whether ROOT/REL exists. */
bool lop_scaffold_exists(const char *root, const char *rel);

/* Run this executable (/proc/self/exe) with args (args[0] is the subcommand, NULL-terminated) in
 * directory root, its stdout written to ROOT/OUT_REL (replaced only when it succeeded) and its
 * stderr passed through. LOP_ERR naming the command when it cannot start or exits non-zero. */
LOP_MUST_CHECK lop_rc_t lop_scaffold_run_self(const char *root, char *const args[], const char *out_rel,
                                              lop_err_t *err);

/* Whether s is a DNS-1123 label (lower-case alphanumerics and '-', 1..63, alphanumeric ends) or,
 * when dots is set, a DNS-1123 subdomain (labels joined by '.', at most 253). */
bool lop_scaffold_dns_name(const char *s, bool dots);

/* The project file ROOT/PROJECT (written by `luaop init`): its domain, projectName and namespace
 * lines, copied into the buffers (each 256 bytes). LOP_ENOTFOUND "no PROJECT file: run luaop
 * init first" when it is missing; LOP_EINVAL naming the line that is missing. */
LOP_MUST_CHECK lop_rc_t lop_scaffold_read_project(const char *root, char domain[256], char name[256], char ns[256],
                                                  lop_err_t *err);

/* Regenerate ROOT/config/rbac/role.yaml with `luaop check --rbac` over ROOT/scripts and every
 * ROOT/config/crd/bases/NAME.yaml (names prefixed with project, bound to NS/PROJECT-controller-manager). */
LOP_MUST_CHECK lop_rc_t lop_scaffold_regen_rbac(const char *root, const char *project, const char *ns, lop_err_t *err);

/* Whether ROOT/config/default/kustomization.yaml deploys cert-manager (its resources list
 * config/certmanager: the scaffold's `#[cert-manager] ` lines turned on) and, if so, the
 * Certificate it deploys as "NS/NAME" in ref (ref_len bytes; "" when cert-manager is off or the
 * project has no config/default). The Certificate is the one cert-manager.io Certificate among the
 * files config/certmanager/kustomization.yaml lists; its name as kustomize renders it (the
 * namePrefix/nameSuffix of config/certmanager's and then config/default's kustomization around
 * metadata.name), its namespace config/default's `namespace:`, else config/certmanager's, else
 * its metadata.namespace. Both kustomizations are parsed as YAML (host/codec/yaml.h).
 * LOP_EINVAL naming the file: YAML that does not parse, not one mapping, a field of the wrong
 * type (resources/bases not a list of strings, namespace/namePrefix/nameSuffix not a string), no
 * Certificate or more than one, a Certificate without a name or namespace, or a NS/NAME that is
 * not a DNS-1123 label/subdomain; LOP_ENOTFOUND when config/certmanager/kustomization.yaml is
 * missing while config/default lists it. Reads only. */
LOP_MUST_CHECK lop_rc_t lop_scaffold_cert_manager_ref(const char *root, char *ref, size_t ref_len, lop_err_t *err);

/* Regenerate ROOT/config/webhook/manifests.yaml with `luaop check --webhooks` (Service
 * NS/PROJECT-webhook-service), as `make manifests` does, and split the CRD conversion stanzas out
 * into ROOT/config/crd/patches/webhook_conversion.yaml, listed as a patch in
 * config/crd/kustomization.yaml. With no conversion webhook left, a webhook_conversion.yaml this
 * wrote before (its first line the "# Generated by `luaop create manifests`" header) is deleted
 * and its patches: entry removed; one without that header is the user's and stays. cert_manager "NS/NAME" (see
 * lop_scaffold_cert_manager_ref) adds cert-manager's `cert-manager.io/inject-ca-from: NS/NAME` to
 * the webhook configurations and the conversion stanzas (`luaop check --cert-manager`); NULL or ""
 * writes none, so a regeneration after cert-manager was turned off drops the annotations. */
LOP_MUST_CHECK lop_rc_t lop_scaffold_regen_webhooks(const char *root, const char *project, const char *ns,
                                                    const char *cert_manager, lop_err_t *err);

#endif
