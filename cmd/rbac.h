/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rbac.h — least-privilege RBAC generated from a script set (`luaop check --rbac`), in the spirit
 * of kubebuilder's controller-gen rbac generator (sigs.k8s.io/controller-tools/pkg/rbac).
 *
 * What the declarations give (docs/lua-api.md, op.controller):
 *   for_ kind         get, list, watch, update, patch; <plural>/status get, update, patch;
 *                     <plural>/finalizers update (finalizers and conditions are the conventions)
 *   owns kinds        get, list, watch, create, update, patch, delete
 *   watches kinds     get, list, watch
 *   events            create, patch (core and events.k8s.io: the recorder writes core Events)
 * What they cannot give — a script's own client calls on other kinds — comes from markers in any
 * file of the set, kubebuilder's syntax (";" separates values, "namespace=" makes it a Role):
 *   -- +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch
 *   -- +luaop:rbac:groups="",resources=configmaps,verbs=create;delete,namespace=team-a
 * Wildcards ("*") are refused: the point is least privilege.
 *
 * Plurals: from the CustomResourceDefinitions given (spec.names.plural, spec.scope), then a table
 * of built-in kinds, else the English rule kubebuilder applies (with a warning naming the guess).
 *
 * Output (YAML on out, in a fixed order so it can be checked in and diffed): the manager
 * ClusterRole + ClusterRoleBinding ("<prefix>-manager"), or with opts->namespace a Role +
 * RoleBinding in that namespace (cluster-scoped kinds then still go to a ClusterRole
 * "<prefix>-manager-cluster"); one Role per marker namespace; the leader election Role (leases,
 * events) in opts->leader_namespace; and, with opts->scripts_configmap, a Role that reads only that
 * ConfigMap (resourceNames; the script source watches it with a metadata.name field selector).
 */
#ifndef LOP_CMD_RBAC_H
#define LOP_CMD_RBAC_H

#include "host/runtime/engine.h"
#include "host/util/err.h"

#include <jansson.h>
#include <stdio.h>

typedef struct lop_rbac_opts {
    const char *prefix;            /* object names: "<prefix>-manager", ...; default "luaop" */
    const char *namespace_;        /* NULL: cluster-wide (ClusterRole); else a Role in each namespace of
                                    * this comma-separated list (luaop run --namespace a,b) */
    const char *sa_namespace;      /* the ServiceAccount bound; default "luaop-system" */
    const char *sa_name;           /* default "luaop" */
    const char *leader_namespace;  /* the Lease's namespace; default sa_namespace */
    const char *scripts_configmap; /* "NS/NAME" or NULL */
    json_t *crds;                  /* borrowed: an array of documents; non-CRDs are ignored; may be NULL */
} lop_rbac_opts_t;

/*
 * Print the RBAC objects for decls[0..n) and the markers in set. LOP_OK, or LOP_EINVAL with err
 * naming the file:line of a malformed or wildcard marker. Warnings (guessed plurals) go to stderr.
 */
LOP_MUST_CHECK lop_rc_t lop_rbac_generate(FILE *out, const lop_ctrl_decl_t *decls, size_t n,
                                          const lop_script_set_t *set, const lop_rbac_opts_t *opts, lop_err_t *err);

#endif
