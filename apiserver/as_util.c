/* SPDX-License-Identifier: Apache-2.0 */
/* as_util.c — small helpers for the local API server: ids, time, JSON paths, base64, names, YAML. */
#include "apiserver/as_util.h"

#include "host/util/clock.h"

#include <ctype.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "host/codec/yaml.h"
#include "host/util/base64.h"

as_blob_t *as_blob_new(const char *data, size_t len)
{
    as_blob_t *b = lop_xmalloc(sizeof(*b) + len + 1);
    b->refs = 1;
    b->len = len;
    b->facts = NULL;
    b->tree = NULL;
    b->c_prev = b->c_next = NULL;
    memcpy(b->data, data, len);
    b->data[len] = '\0';
    return b;
}

void as_blob_unref(as_blob_t *b)
{
    if (b && --b->refs == 0) {
        free(b->facts); /* tree: a cached blob holds a reference of its own, so it is NULL here */
        free(b);
    }
}

static void rand_bytes(unsigned char *p, size_t n)
{
    if (RAND_bytes(p, (int)n) != 1) {
        for (size_t i = 0; i < n; i++) p[i] = (unsigned char)rand();
    }
}

void as_uuid(char out[37])
{
    unsigned char b[16];
    rand_bytes(b, sizeof b);
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3],
             b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

void as_rand_suffix(char out[6])
{
    static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    unsigned char b[5];
    rand_bytes(b, sizeof b);
    for (int i = 0; i < 5; i++) out[i] = alphabet[b[i] % (sizeof alphabet - 1)];
    out[5] = '\0';
}

char *as_now_time(char *buf, size_t n) { return lop_time_format(lop_clock_wall(&lop_clock_system), buf, n); }

json_t *as_meta(json_t *obj)
{
    json_t *m = json_object_get(obj, "metadata");
    if (!json_is_object(m)) {
        m = json_object();
        json_object_set_new(obj, "metadata", m);
    }
    return m;
}

const char *as_meta_str(const json_t *obj, const char *field)
{
    const json_t *m = json_object_get(obj, "metadata");
    const json_t *v = m ? json_object_get(m, field) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

json_t *as_path_get(const json_t *obj, const char *dotted)
{
    if (*dotted == '.') dotted++;
    const json_t *cur = obj;
    char seg[256];
    while (cur && *dotted) {
        const char *dot = strchr(dotted, '.');
        size_t len = dot ? (size_t)(dot - dotted) : strlen(dotted);
        if (len >= sizeof seg) return NULL;
        memcpy(seg, dotted, len);
        seg[len] = '\0';
        cur = json_is_object(cur) ? json_object_get(cur, seg) : NULL;
        dotted = dot ? dot + 1 : dotted + len;
    }
    return (json_t *)cur;
}

int as_path_set(json_t *obj, const char *dotted, json_t *val)
{
    if (*dotted == '.') dotted++;
    json_t *cur = obj;
    char seg[256];
    for (;;) {
        const char *dot = strchr(dotted, '.');
        size_t len = dot ? (size_t)(dot - dotted) : strlen(dotted);
        if (len >= sizeof seg || len == 0) {
            json_decref(val);
            return -1;
        }
        memcpy(seg, dotted, len);
        seg[len] = '\0';
        if (!dot) return json_object_set_new(cur, seg, val);
        json_t *next = json_object_get(cur, seg);
        if (!json_is_object(next)) {
            next = json_object();
            json_object_set_new(cur, seg, next);
        }
        cur = next;
        dotted = dot + 1;
    }
}

/* metav1.ObjectMeta's fields in the order the API server writes them (its Go struct's order). */
const char *const as_objectmeta_fields[] = {"name",
                                            "generateName",
                                            "namespace",
                                            "selfLink",
                                            "uid",
                                            "resourceVersion",
                                            "generation",
                                            "creationTimestamp",
                                            "deletionTimestamp",
                                            "deletionGracePeriodSeconds",
                                            "labels",
                                            "annotations",
                                            "ownerReferences",
                                            "finalizers",
                                            "managedFields",
                                            NULL};

json_t *as_order_builtin(const json_t *obj)
{
    json_t *out = json_object();
    const char *first[] = {"kind", "apiVersion", NULL};
    for (int i = 0; first[i]; i++) {
        json_t *v = json_object_get(obj, first[i]);
        if (v) json_object_set(out, first[i], v);
    }
    json_t *m = json_object_get(obj, "metadata");
    if (json_is_object(m)) {
        json_t *nm = json_object();
        for (int i = 0; as_objectmeta_fields[i]; i++) {
            json_t *v = json_object_get(m, as_objectmeta_fields[i]);
            if (v) json_object_set(nm, as_objectmeta_fields[i], v);
        }
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)m, k, v)
        {
            if (!json_object_get(nm, k)) json_object_set(nm, k, v);
        }
        json_object_set_new(out, "metadata", nm);
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v)
    {
        if (!json_object_get(out, k)) json_object_set(out, k, v);
    }
    return out;
}

bool as_valid_dns_label(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
        if (!ok) return false;
    }
    return s[0] != '-' && s[n - 1] != '-';
}

bool as_valid_dns_subdomain(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 253) return false;
    char part[256];
    const char *p = s;
    for (;;) {
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        if (len == 0 || len > 63) return false;
        memcpy(part, p, len);
        part[len] = '\0';
        if (!as_valid_dns_label(part)) return false;
        if (!dot) return true;
        p = dot + 1;
    }
}

/* ---- YAML (one document) → JSON: host/codec/yaml.c, the manifest reader luaop uses everywhere ---- */

json_t *as_yaml_parse(const char *data, size_t len, char *errbuf, size_t errlen)
{
    json_t *docs = NULL;
    lop_err_t err;
    if (lop_yaml_load_all(data, len, "yaml", &docs, &err) != LOP_OK) {
        snprintf(errbuf, errlen, "%s", err.message);
        return NULL;
    }
    json_t *out = NULL;
    if (json_array_size(docs) != 1)
        snprintf(errbuf, errlen, "yaml: expected one document, found %zu", json_array_size(docs));
    else
        out = json_incref(json_array_get(docs, 0));
    json_decref(docs);
    return out;
}

/* v<major>[(alpha|beta)<minor>]: stage 3 GA, 2 beta, 1 alpha; 0 when not of that shape. */
static int kube_version(const char *v, long *major, long *minor)
{
    if (v[0] != 'v' || !isdigit((unsigned char)v[1]) || v[1] == '0') return 0;
    char *end;
    *major = strtol(v + 1, &end, 10);
    *minor = 0;
    if (!*end) return 3;
    int stage = !strncmp(end, "beta", 4) ? 2 : !strncmp(end, "alpha", 5) ? 1 : 0;
    if (!stage) return 0;
    const char *m = end + (stage == 2 ? 4 : 5);
    if (!isdigit((unsigned char)*m) || *m == '0') return 0;
    *minor = strtol(m, &end, 10);
    return *end ? 0 : stage;
}

int as_version_priority_cmp(const char *a, const char *b)
{
    long amaj, amin, bmaj, bmin;
    int as = kube_version(a, &amaj, &amin), bs = kube_version(b, &bmaj, &bmin);
    if (!as && !bs) return -strcmp(a, b);
    if (as != bs) return as - bs;
    if (amaj != bmaj) return amaj > bmaj ? 1 : -1;
    if (amin != bmin) return amin > bmin ? 1 : -1;
    return 0;
}
