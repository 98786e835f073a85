/* SPDX-License-Identifier: Apache-2.0 */
/*
 * patch_schema.c — list merge semantics of built-in kinds (see patch_schema.h). The tables name
 * the fields an operator typically writes: pod templates in workloads, Service ports, object
 * metadata and status conditions. A list not named here is atomic.
 */
#include "apiserver/patch_schema.h"

#include <stddef.h>
#include <string.h>

static const char *const K_NAME[] = {"name", NULL};
static const char *const K_UID[] = {"uid", NULL};
static const char *const K_TYPE[] = {"type", NULL};
static const char *const K_IP[] = {"ip", NULL};
static const char *const K_MOUNT[] = {"mountPath", NULL};
static const char *const K_DEVICE[] = {"devicePath", NULL};
static const char *const K_CPORT[] = {"containerPort", "protocol", NULL};
static const char *const K_SPORT[] = {"port", "protocol", NULL};
static const char *const K_TOPO[] = {"topologyKey", "whenUnsatisfiable", NULL};

typedef struct entry {
    const char *path;
    as_patch_list_type_t type;
    const char *const *keys;
} entry_t;

/* Fields of every kind. */
static const entry_t common[] = {
    {"metadata.ownerReferences", AS_PATCH_LIST_MAP, K_UID},
    {"metadata.finalizers", AS_PATCH_LIST_SET, NULL},
    {"status.conditions", AS_PATCH_LIST_MAP, K_TYPE},
};

/* Relative to a PodSpec. */
static const entry_t podspec[] = {
    {"volumes", AS_PATCH_LIST_MAP, K_NAME},         {"imagePullSecrets", AS_PATCH_LIST_MAP, K_NAME},
    {"hostAliases", AS_PATCH_LIST_MAP, K_IP},       {"topologySpreadConstraints", AS_PATCH_LIST_MAP, K_TOPO},
    {"schedulingGates", AS_PATCH_LIST_MAP, K_NAME}, {"resourceClaims", AS_PATCH_LIST_MAP, K_NAME},
};

/* Relative to a Container. */
static const entry_t container[] = {
    {"env", AS_PATCH_LIST_MAP, K_NAME},
    {"ports", AS_PATCH_LIST_MAP, K_CPORT},
    {"volumeMounts", AS_PATCH_LIST_MAP, K_MOUNT},
    {"volumeDevices", AS_PATCH_LIST_MAP, K_DEVICE},
    {"resources.claims", AS_PATCH_LIST_MAP, K_NAME},
};

/* Kind-specific fields from the object root. */
typedef struct kind_entry {
    const char *kind;
    entry_t e;
} kind_entry_t;

static const kind_entry_t by_kind[] = {
    {"Service", {"spec.ports", AS_PATCH_LIST_MAP, K_SPORT}},
    {"Node", {"status.addresses", AS_PATCH_LIST_MAP, K_TYPE}},
    {"Node", {"spec.podCIDRs", AS_PATCH_LIST_SET, NULL}},
    {"Pod", {"status.podIPs", AS_PATCH_LIST_MAP, K_IP}},
    {"ServiceAccount", {"secrets", AS_PATCH_LIST_MAP, K_NAME}},
};

/* Where the PodSpec sits in each kind that embeds one. */
static const struct {
    const char *kind;
    const char *root;
} podspec_roots[] = {
    {"Pod", "spec"},
    {"Deployment", "spec.template.spec"},
    {"StatefulSet", "spec.template.spec"},
    {"DaemonSet", "spec.template.spec"},
    {"ReplicaSet", "spec.template.spec"},
    {"ReplicationController", "spec.template.spec"},
    {"Job", "spec.template.spec"},
    {"CronJob", "spec.jobTemplate.spec.template.spec"},
    {"PodTemplate", "template.spec"},
};

static as_patch_list_type_t find(const entry_t *t, size_t n, const char *path, const char *const **keys)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(t[i].path, path) == 0) {
            if (keys) *keys = t[i].keys;
            return t[i].type;
        }
    }
    return AS_PATCH_LIST_ATOMIC;
}

/* If path starts with prefix followed by '.', return the rest, else NULL. */
static const char *under(const char *path, const char *prefix)
{
    size_t n = strlen(prefix);
    if (strncmp(path, prefix, n) != 0 || path[n] != '.') return NULL;
    return path + n + 1;
}

static as_patch_list_type_t podspec_type(const char *rel, const char *const **keys)
{
    static const char *const lists[] = {"containers", "initContainers", "ephemeralContainers"};
    for (size_t i = 0; i < 3; i++) {
        if (strcmp(rel, lists[i]) == 0) {
            if (keys) *keys = K_NAME;
            return AS_PATCH_LIST_MAP;
        }
        const char *c = under(rel, lists[i]);
        if (c) return find(container, sizeof container / sizeof container[0], c, keys);
    }
    return find(podspec, sizeof podspec / sizeof podspec[0], rel, keys);
}

as_patch_list_type_t as_patch_builtin_list_type(const char *kind, const char *path, const char *const **keys)
{
    if (keys) *keys = NULL;
    if (!path) return AS_PATCH_LIST_ATOMIC;
    as_patch_list_type_t t = find(common, sizeof common / sizeof common[0], path, keys);
    if (t != AS_PATCH_LIST_ATOMIC || !kind) return t;
    for (size_t i = 0; i < sizeof by_kind / sizeof by_kind[0]; i++)
        if (strcmp(by_kind[i].kind, kind) == 0 && strcmp(by_kind[i].e.path, path) == 0) {
            if (keys) *keys = by_kind[i].e.keys;
            return by_kind[i].e.type;
        }
    for (size_t i = 0; i < sizeof podspec_roots / sizeof podspec_roots[0]; i++) {
        if (strcmp(podspec_roots[i].kind, kind) != 0) continue;
        const char *rel = under(path, podspec_roots[i].root);
        if (rel) return podspec_type(rel, keys);
    }
    return AS_PATCH_LIST_ATOMIC;
}

bool as_patch_builtin_api_version(const char *api_version)
{
    static const char *const groups[] = {"apps",
                                         "batch",
                                         "autoscaling",
                                         "policy",
                                         "networking.k8s.io",
                                         "rbac.authorization.k8s.io",
                                         "coordination.k8s.io",
                                         "storage.k8s.io",
                                         "scheduling.k8s.io",
                                         "events.k8s.io",
                                         "discovery.k8s.io",
                                         "admissionregistration.k8s.io",
                                         "apiextensions.k8s.io",
                                         "apiregistration.k8s.io",
                                         "certificates.k8s.io",
                                         "node.k8s.io",
                                         "flowcontrol.apiserver.k8s.io",
                                         "authentication.k8s.io",
                                         "authorization.k8s.io",
                                         "resource.k8s.io",
                                         "internal.apiserver.k8s.io",
                                         "storagemigration.k8s.io"};
    if (!api_version || !*api_version) return false;
    const char *slash = strchr(api_version, '/');
    if (!slash) return strcmp(api_version, "v1") == 0;
    size_t n = (size_t)(slash - api_version);
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++)
        if (strlen(groups[i]) == n && strncmp(groups[i], api_version, n) == 0) return true;
    return false;
}
