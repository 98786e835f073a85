/* SPDX-License-Identifier: Apache-2.0 */
/* as_proto.c — decode the Kubernetes protobuf request encoding ("k8s\0" + runtime.Unknown) for
 * the few built-in kinds kubectl's generator commands send (`kubectl create configmap|secret|
 * namespace|serviceaccount|deployment|service|job`, `kubectl expose`), into the JSON the rest of the
 * server works on.
 * Field numbers follow k8s.io/api's generated.proto. Proto2 optional fields arrive even when
 * empty; like Go's omitempty JSON, empty strings, zero numbers, false and empty messages are
 * left out. Unknown field numbers are skipped. */
#include "apiserver/as_proto.h"

#include "host/util/base64.h"
#include "host/util/buf.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum ftype { F_STR, F_BYTES, F_BOOL, F_INT, F_MSG, F_MAP_SS, F_MAP_SB, F_REP_STR, F_REP_MSG, F_INTSTR };

typedef struct pfield pfield_t;
typedef struct pmsg {
    const pfield_t *fields;
} pmsg_t;
struct pfield {
    int num;
    const char *name;
    enum ftype type;
    const pmsg_t *sub;
};

#define END                  \
    {                        \
        0, NULL, F_STR, NULL \
    }

static const pfield_t owner_ref_f[] = {{5, "apiVersion", F_STR, NULL},
                                       {1, "kind", F_STR, NULL},
                                       {3, "name", F_STR, NULL},
                                       {4, "uid", F_STR, NULL},
                                       {6, "controller", F_BOOL, NULL},
                                       {7, "blockOwnerDeletion", F_BOOL, NULL},
                                       END};
static const pmsg_t owner_ref = {owner_ref_f};
static const pfield_t meta_f[] = {{1, "name", F_STR, NULL},
                                  {2, "generateName", F_STR, NULL},
                                  {3, "namespace", F_STR, NULL},
                                  {5, "uid", F_STR, NULL},
                                  {6, "resourceVersion", F_STR, NULL},
                                  {7, "generation", F_INT, NULL},
                                  {11, "labels", F_MAP_SS, NULL},
                                  {12, "annotations", F_MAP_SS, NULL},
                                  {13, "ownerReferences", F_REP_MSG, &owner_ref},
                                  {14, "finalizers", F_REP_STR, NULL},
                                  END};
static const pmsg_t meta = {meta_f};
static const pfield_t configmap_f[] = {{1, "metadata", F_MSG, &meta},
                                       {2, "data", F_MAP_SS, NULL},
                                       {3, "binaryData", F_MAP_SB, NULL},
                                       {4, "immutable", F_BOOL, NULL},
                                       END};
static const pfield_t secret_f[] = {{1, "metadata", F_MSG, &meta},  {2, "data", F_MAP_SB, NULL},
                                    {3, "type", F_STR, NULL},       {4, "stringData", F_MAP_SS, NULL},
                                    {5, "immutable", F_BOOL, NULL}, END};
static const pfield_t ns_spec_f[] = {{1, "finalizers", F_REP_STR, NULL}, END};
static const pmsg_t ns_spec = {ns_spec_f};
static const pfield_t namespace_f[] = {{1, "metadata", F_MSG, &meta}, {2, "spec", F_MSG, &ns_spec}, END};
static const pfield_t objref_f[] = {{1, "kind", F_STR, NULL}, {2, "namespace", F_STR, NULL},  {3, "name", F_STR, NULL},
                                    {4, "uid", F_STR, NULL},  {5, "apiVersion", F_STR, NULL}, END};
static const pmsg_t objref = {objref_f};
static const pfield_t localref_f[] = {{1, "name", F_STR, NULL}, END};
static const pmsg_t localref = {localref_f};
static const pfield_t sa_f[] = {{1, "metadata", F_MSG, &meta},
                                {2, "secrets", F_REP_MSG, &objref},
                                {3, "imagePullSecrets", F_REP_MSG, &localref},
                                {4, "automountServiceAccountToken", F_BOOL, NULL},
                                END};
static const pfield_t port_f[] = {{1, "name", F_STR, NULL},
                                  {2, "hostPort", F_INT, NULL},
                                  {3, "containerPort", F_INT, NULL},
                                  {4, "protocol", F_STR, NULL},
                                  END};
static const pmsg_t port = {port_f};
static const pfield_t env_f[] = {{1, "name", F_STR, NULL}, {2, "value", F_STR, NULL}, END};
static const pmsg_t env = {env_f};
static const pfield_t container_f[] = {{1, "name", F_STR, NULL},
                                       {2, "image", F_STR, NULL},
                                       {3, "command", F_REP_STR, NULL},
                                       {4, "args", F_REP_STR, NULL},
                                       {5, "workingDir", F_STR, NULL},
                                       {6, "ports", F_REP_MSG, &port},
                                       {7, "env", F_REP_MSG, &env},
                                       {14, "imagePullPolicy", F_STR, NULL},
                                       END};
static const pmsg_t container = {container_f};
static const pfield_t podspec_f[] = {
    {2, "containers", F_REP_MSG, &container},      {3, "restartPolicy", F_STR, NULL},
    {7, "nodeSelector", F_MAP_SS, NULL},           {8, "serviceAccountName", F_STR, NULL},
    {20, "initContainers", F_REP_MSG, &container}, END};
static const pmsg_t podspec = {podspec_f};
static const pfield_t template_f[] = {{1, "metadata", F_MSG, &meta}, {2, "spec", F_MSG, &podspec}, END};
static const pmsg_t template_m = {template_f};
static const pfield_t selector_f[] = {{1, "matchLabels", F_MAP_SS, NULL}, END};
static const pmsg_t selector = {selector_f};
static const pfield_t deploy_spec_f[] = {{1, "replicas", F_INT, NULL},
                                         {2, "selector", F_MSG, &selector},
                                         {3, "template", F_MSG, &template_m},
                                         {5, "minReadySeconds", F_INT, NULL},
                                         {6, "revisionHistoryLimit", F_INT, NULL},
                                         {7, "paused", F_BOOL, NULL},
                                         {9, "progressDeadlineSeconds", F_INT, NULL},
                                         END};
static const pmsg_t deploy_spec = {deploy_spec_f};
static const pfield_t job_spec_f[] = {{1, "parallelism", F_INT, NULL},           {2, "completions", F_INT, NULL},
                                      {3, "activeDeadlineSeconds", F_INT, NULL}, {6, "template", F_MSG, &template_m},
                                      {7, "backoffLimit", F_INT, NULL},          END};
static const pmsg_t job_spec = {job_spec_f};
static const pfield_t job_f[] = {{1, "metadata", F_MSG, &meta}, {2, "spec", F_MSG, &job_spec}, END};
static const pfield_t svc_port_f[] = {{1, "name", F_STR, NULL},     {2, "protocol", F_STR, NULL},
                                      {3, "port", F_INT, NULL},     {4, "targetPort", F_INTSTR, NULL},
                                      {5, "nodePort", F_INT, NULL}, END};
static const pmsg_t svc_port = {svc_port_f};
static const pfield_t svc_spec_f[] = {{1, "ports", F_REP_MSG, &svc_port}, {2, "selector", F_MAP_SS, NULL},
                                      {3, "clusterIP", F_STR, NULL},      {4, "type", F_STR, NULL},
                                      {7, "externalName", F_STR, NULL},   END};
static const pmsg_t svc_spec = {svc_spec_f};
static const pfield_t service_f[] = {{1, "metadata", F_MSG, &meta}, {2, "spec", F_MSG, &svc_spec}, END};
/* k8s.io/api/authentication/v1 and authorization/v1 (what `kubectl auth whoami|can-i` and
 * `kubectl create token` send) */
static const pfield_t res_attrs_f[] = {{1, "namespace", F_STR, NULL}, {2, "verb", F_STR, NULL},
                                       {3, "group", F_STR, NULL},     {4, "version", F_STR, NULL},
                                       {5, "resource", F_STR, NULL},  {6, "subresource", F_STR, NULL},
                                       {7, "name", F_STR, NULL},      END};
static const pmsg_t res_attrs = {res_attrs_f};
static const pfield_t nonres_attrs_f[] = {{1, "path", F_STR, NULL}, {2, "verb", F_STR, NULL}, END};
static const pmsg_t nonres_attrs = {nonres_attrs_f};
static const pfield_t access_spec_f[] = {{1, "resourceAttributes", F_MSG, &res_attrs},
                                         {2, "nonResourceAttributes", F_MSG, &nonres_attrs},
                                         {3, "user", F_STR, NULL},
                                         {4, "groups", F_REP_STR, NULL},
                                         {6, "uid", F_STR, NULL},
                                         END};
static const pmsg_t access_spec = {access_spec_f};
static const pfield_t access_review_f[] = {{1, "metadata", F_MSG, &meta}, {2, "spec", F_MSG, &access_spec}, END};
static const pfield_t self_review_f[] = {{1, "metadata", F_MSG, &meta}, END};
static const pfield_t token_review_spec_f[] = {{1, "token", F_STR, NULL}, {2, "audiences", F_REP_STR, NULL}, END};
static const pmsg_t token_review_spec = {token_review_spec_f};
static const pfield_t token_review_f[] = {{1, "metadata", F_MSG, &meta}, {2, "spec", F_MSG, &token_review_spec}, END};
static const pfield_t bound_ref_f[] = {
    {1, "kind", F_STR, NULL}, {2, "apiVersion", F_STR, NULL}, {3, "name", F_STR, NULL}, {4, "uid", F_STR, NULL}, END};
static const pmsg_t bound_ref = {bound_ref_f};
static const pfield_t token_req_spec_f[] = {{1, "audiences", F_REP_STR, NULL},
                                            {3, "boundObjectRef", F_MSG, &bound_ref},
                                            {4, "expirationSeconds", F_INT, NULL},
                                            END};
static const pmsg_t token_req_spec = {token_req_spec_f};
static const pfield_t token_req_f[] = {{1, "metadata", F_MSG, &meta}, {2, "spec", F_MSG, &token_req_spec}, END};
/* k8s.io/api/rbac/v1 (`kubectl create role|clusterrole|rolebinding|clusterrolebinding`) */
static const pfield_t rule_f[] = {{1, "verbs", F_REP_STR, NULL},           {2, "apiGroups", F_REP_STR, NULL},
                                  {3, "resources", F_REP_STR, NULL},       {4, "resourceNames", F_REP_STR, NULL},
                                  {5, "nonResourceURLs", F_REP_STR, NULL}, END};
static const pmsg_t rule = {rule_f};
static const pfield_t role_f[] = {{1, "metadata", F_MSG, &meta}, {2, "rules", F_REP_MSG, &rule}, END};
static const pfield_t subject_f[] = {{1, "kind", F_STR, NULL},
                                     {2, "apiGroup", F_STR, NULL},
                                     {3, "name", F_STR, NULL},
                                     {4, "namespace", F_STR, NULL},
                                     END};
static const pmsg_t subject = {subject_f};
static const pfield_t role_ref_f[] = {
    {1, "apiGroup", F_STR, NULL}, {2, "kind", F_STR, NULL}, {3, "name", F_STR, NULL}, END};
static const pmsg_t role_ref = {role_ref_f};
static const pfield_t binding_f[] = {
    {1, "metadata", F_MSG, &meta}, {2, "subjects", F_REP_MSG, &subject}, {3, "roleRef", F_MSG, &role_ref}, END};
static const pfield_t rules_review_spec_f[] = {{1, "namespace", F_STR, NULL}, END};
static const pmsg_t rules_review_spec = {rules_review_spec_f};
static const pfield_t rules_review_f[] = {{1, "metadata", F_MSG, &meta}, {2, "spec", F_MSG, &rules_review_spec}, END};
static const pfield_t deploy_f[] = {{1, "metadata", F_MSG, &meta}, {2, "spec", F_MSG, &deploy_spec}, END};

typedef struct rd {
    const unsigned char *p, *end;
    bool bad;
} rd_t;

static uint64_t varint(rd_t *r)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end) {
            r->bad = true;
            return 0;
        }
        unsigned char b = *r->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return v;
    }
    r->bad = true;
    return 0;
}

static bool bytes_field(rd_t *r, const unsigned char **data, size_t *len)
{
    uint64_t n = varint(r);
    if (r->bad || n > (uint64_t)(r->end - r->p)) {
        r->bad = true;
        return false;
    }
    *data = r->p;
    *len = (size_t)n;
    r->p += n;
    return true;
}

static void skip(rd_t *r, int wt)
{
    const unsigned char *d;
    size_t n;
    switch (wt) {
    case 0: varint(r); break;
    case 1:
        if (r->end - r->p < 8)
            r->bad = true;
        else
            r->p += 8;
        break;
    case 2: bytes_field(r, &d, &n); break;
    case 5:
        if (r->end - r->p < 4)
            r->bad = true;
        else
            r->p += 4;
        break;
    default: r->bad = true; break;
    }
}

static json_t *decode_msg(const unsigned char *p, size_t n, const pmsg_t *m, int depth, bool *bad);

/* map entry: 1 key, 2 value */
static void decode_entry(const unsigned char *p, size_t n, json_t *obj, bool b64, bool *bad)
{
    rd_t r = {p, p + n, false};
    const unsigned char *k = NULL, *v = NULL;
    size_t kl = 0, vl = 0;
    while (r.p < r.end && !r.bad) {
        uint64_t tag = varint(&r);
        int num = (int)(tag >> 3), wt = (int)(tag & 7);
        if (wt == 2 && num == 1)
            bytes_field(&r, &k, &kl);
        else if (wt == 2 && num == 2)
            bytes_field(&r, &v, &vl);
        else
            skip(&r, wt);
    }
    if (r.bad) {
        *bad = true;
        return;
    }
    char *key = lop_xstrndup(k ? (const char *)k : "", kl);
    if (b64) {
        char *e = lop_base64_encode(v ? v : (const unsigned char *)"", vl, false);
        json_object_set_new(obj, key, json_string(e));
        free(e);
    } else {
        json_object_set_new(obj, key, json_stringn(v ? (const char *)v : "", vl));
    }
    free(key);
}

static const pfield_t *find_field(const pmsg_t *m, int num)
{
    for (const pfield_t *f = m->fields; f->name; f++)
        if (f->num == num) return f;
    return NULL;
}

static json_t *decode_msg(const unsigned char *p, size_t n, const pmsg_t *m, int depth, bool *bad)
{
    json_t *o = json_object();
    rd_t r = {p, p + n, false};
    if (depth > 32) {
        *bad = true;
        return o;
    }
    while (r.p < r.end && !r.bad && !*bad) {
        uint64_t tag = varint(&r);
        int num = (int)(tag >> 3), wt = (int)(tag & 7);
        const pfield_t *f = find_field(m, num);
        if (!f) {
            skip(&r, wt);
            continue;
        }
        if (f->type == F_BOOL || f->type == F_INT) {
            if (wt != 0) {
                r.bad = true;
                break;
            }
            uint64_t v = varint(&r);
            if (v != 0)
                json_object_set_new(o, f->name, f->type == F_BOOL ? json_true() : json_integer((json_int_t)(int64_t)v));
            continue;
        }
        const unsigned char *d;
        size_t dl;
        if (wt != 2 || !bytes_field(&r, &d, &dl)) {
            r.bad = true;
            break;
        }
        switch (f->type) {
        case F_STR:
            if (dl) json_object_set_new(o, f->name, json_stringn((const char *)d, dl));
            break;
        case F_INTSTR: { /* intstr.IntOrString: 1 type (0 int, 1 string), 2 intVal, 3 strVal */
            rd_t t = {d, d + dl, false};
            int64_t kind = 0, iv = 0;
            const unsigned char *sv = NULL;
            size_t sl = 0;
            while (t.p < t.end && !t.bad) {
                uint64_t tt = varint(&t);
                if ((tt >> 3) == 1 && (tt & 7) == 0)
                    kind = (int64_t)varint(&t);
                else if ((tt >> 3) == 2 && (tt & 7) == 0)
                    iv = (int64_t)varint(&t);
                else if ((tt >> 3) == 3 && (tt & 7) == 2)
                    bytes_field(&t, &sv, &sl);
                else
                    skip(&t, (int)(tt & 7));
            }
            if (t.bad)
                *bad = true;
            else if (kind == 1)
                json_object_set_new(o, f->name, json_stringn(sv ? (const char *)sv : "", sl));
            else if (iv != 0)
                json_object_set_new(o, f->name, json_integer((json_int_t)(int32_t)iv));
            break;
        }
        case F_BYTES: {
            char *e = lop_base64_encode(d, dl, false);
            json_object_set_new(o, f->name, json_string(e));
            free(e);
            break;
        }
        case F_MSG: {
            json_t *sub = decode_msg(d, dl, f->sub, depth + 1, bad);
            if (json_object_size(sub))
                json_object_set_new(o, f->name, sub);
            else
                json_decref(sub);
            break;
        }
        case F_MAP_SS:
        case F_MAP_SB: {
            json_t *mp = json_object_get(o, f->name);
            if (!mp) {
                mp = json_object();
                json_object_set_new(o, f->name, mp);
            }
            decode_entry(d, dl, mp, f->type == F_MAP_SB, bad);
            break;
        }
        case F_REP_STR:
        case F_REP_MSG: {
            json_t *a = json_object_get(o, f->name);
            if (!a) {
                a = json_array();
                json_object_set_new(o, f->name, a);
            }
            if (f->type == F_REP_STR)
                json_array_append_new(a, json_stringn((const char *)d, dl));
            else
                json_array_append_new(a, decode_msg(d, dl, f->sub, depth + 1, bad));
            break;
        }
        default: break;
        }
    }
    if (r.bad) *bad = true;
    return o;
}

json_t *as_proto_decode(const char *body, size_t len, char *errbuf, size_t errlen)
{
    if (len < 4 || memcmp(body, "k8s\0", 4) != 0) {
        snprintf(errbuf, errlen, "provided object is not a Kubernetes protobuf message");
        return NULL;
    }
    rd_t r = {(const unsigned char *)body + 4, (const unsigned char *)body + len, false};
    char api_version[128] = "", kind[128] = "";
    const unsigned char *raw = NULL;
    size_t raw_len = 0;
    while (r.p < r.end && !r.bad) {
        uint64_t tag = varint(&r);
        int num = (int)(tag >> 3), wt = (int)(tag & 7);
        const unsigned char *d;
        size_t dl;
        if (num == 1 && wt == 2 && bytes_field(&r, &d, &dl)) {
            rd_t t = {d, d + dl, false};
            while (t.p < t.end && !t.bad) {
                uint64_t tt = varint(&t);
                const unsigned char *s;
                size_t sl;
                if ((tt & 7) == 2 && bytes_field(&t, &s, &sl)) {
                    char *dst = (tt >> 3) == 1 ? api_version : (tt >> 3) == 2 ? kind : NULL;
                    if (dst && sl < 128) {
                        memcpy(dst, s, sl);
                        dst[sl] = '\0';
                    }
                } else {
                    skip(&t, (int)(tt & 7));
                }
            }
        } else if (num == 2 && wt == 2 && bytes_field(&r, &d, &dl)) {
            raw = d;
            raw_len = dl;
        } else {
            skip(&r, wt);
        }
    }
    if (r.bad) {
        snprintf(errbuf, errlen, "malformed protobuf envelope");
        return NULL;
    }
    static const struct {
        const char *av, *kind;
        const pfield_t *fields;
    } kinds[] = {{"v1", "ConfigMap", configmap_f},
                 {"v1", "Secret", secret_f},
                 {"v1", "Namespace", namespace_f},
                 {"v1", "ServiceAccount", sa_f},
                 {"v1", "Service", service_f},
                 {"apps/v1", "Deployment", deploy_f},
                 {"batch/v1", "Job", job_f},
                 {"authorization.k8s.io/v1", "SubjectAccessReview", access_review_f},
                 {"authorization.k8s.io/v1", "SelfSubjectAccessReview", access_review_f},
                 {"authorization.k8s.io/v1", "LocalSubjectAccessReview", access_review_f},
                 {"authentication.k8s.io/v1", "SelfSubjectReview", self_review_f},
                 {"authentication.k8s.io/v1", "TokenReview", token_review_f},
                 {"authentication.k8s.io/v1", "TokenRequest", token_req_f},
                 {"authorization.k8s.io/v1", "SelfSubjectRulesReview", rules_review_f},
                 {"rbac.authorization.k8s.io/v1", "Role", role_f},
                 {"rbac.authorization.k8s.io/v1", "ClusterRole", role_f},
                 {"rbac.authorization.k8s.io/v1", "RoleBinding", binding_f},
                 {"rbac.authorization.k8s.io/v1", "ClusterRoleBinding", binding_f}};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        if (strcmp(kinds[i].av, api_version) || strcmp(kinds[i].kind, kind)) continue;
        pmsg_t m = {kinds[i].fields};
        bool bad = false;
        json_t *o = decode_msg(raw ? raw : (const unsigned char *)"", raw_len, &m, 0, &bad);
        if (bad) {
            json_decref(o);
            snprintf(errbuf, errlen, "malformed protobuf %s", kind);
            return NULL;
        }
        json_t *out = json_object();
        json_object_set_new(out, "kind", json_string(kind));
        json_object_set_new(out, "apiVersion", json_string(api_version));
        json_object_update(out, o);
        json_decref(o);
        return out;
    }
    snprintf(errbuf, errlen, "protobuf is not supported for %s %s; send JSON or YAML", api_version, kind);
    return NULL;
}
