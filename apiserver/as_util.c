/* as_util.c — small helpers for the local API server: ids, time, JSON paths, base64, names, YAML. */
#include "apiserver/as_internal.h"

#include "host/util/clock.h"

#include <ctype.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

as_blob_t *as_blob_new(const char *data, size_t len)
{
    as_blob_t *b = lop_xmalloc(sizeof(*b) + len + 1);
    b->refs = 1;
    b->len = len;
    memcpy(b->data, data, len);
    b->data[len] = '\0';
    return b;
}

void as_blob_unref(as_blob_t *b)
{
    if (b && --b->refs == 0)
        free(b);
}

static void rand_bytes(unsigned char *p, size_t n)
{
    if (RAND_bytes(p, (int)n) != 1) {
        for (size_t i = 0; i < n; i++)
            p[i] = (unsigned char)rand();
    }
}

void as_uuid(char out[37])
{
    unsigned char b[16];
    rand_bytes(b, sizeof b);
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

void as_rand_suffix(char out[6])
{
    static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    unsigned char b[5];
    rand_bytes(b, sizeof b);
    for (int i = 0; i < 5; i++)
        out[i] = alphabet[b[i] % (sizeof alphabet - 1)];
    out[5] = '\0';
}

char *as_now_time(char *buf, size_t n)
{
    return lop_time_format(lop_clock_wall(&lop_clock_system), buf, n);
}

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
    if (*dotted == '.')
        dotted++;
    const json_t *cur = obj;
    char seg[256];
    while (cur && *dotted) {
        const char *dot = strchr(dotted, '.');
        size_t len = dot ? (size_t)(dot - dotted) : strlen(dotted);
        if (len >= sizeof seg)
            return NULL;
        memcpy(seg, dotted, len);
        seg[len] = '\0';
        cur = json_is_object(cur) ? json_object_get(cur, seg) : NULL;
        dotted = dot ? dot + 1 : dotted + len;
    }
    return (json_t *)cur;
}

int as_path_set(json_t *obj, const char *dotted, json_t *val)
{
    if (*dotted == '.')
        dotted++;
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
        if (!dot)
            return json_object_set_new(cur, seg, val);
        json_t *next = json_object_get(cur, seg);
        if (!json_is_object(next)) {
            next = json_object();
            json_object_set_new(cur, seg, next);
        }
        cur = next;
        dotted = dot + 1;
    }
}

static const char *const meta_order[] = {
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
    "annotations", "ownerReferences", "finalizers", "managedFields", NULL};

json_t *as_order_builtin(const json_t *obj)
{
    json_t *out = json_object();
    const char *first[] = {"kind", "apiVersion", NULL};
    for (int i = 0; first[i]; i++) {
        json_t *v = json_object_get(obj, first[i]);
        if (v)
            json_object_set(out, first[i], v);
    }
    json_t *m = json_object_get(obj, "metadata");
    if (json_is_object(m)) {
        json_t *nm = json_object();
        for (int i = 0; meta_order[i]; i++) {
            json_t *v = json_object_get(m, meta_order[i]);
            if (v)
                json_object_set(nm, meta_order[i], v);
        }
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)m, k, v) {
            if (!json_object_get(nm, k))
                json_object_set(nm, k, v);
        }
        json_object_set_new(out, "metadata", nm);
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v) {
        if (!json_object_get(out, k))
            json_object_set(out, k, v);
    }
    return out;
}

static const char b64std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static char *b64_enc(const unsigned char *d, size_t n, const char *alpha, bool pad)
{
    lop_buf_t b = LOP_BUF_INIT;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)d[i] << 16;
        if (i + 1 < n)
            v |= (unsigned)d[i + 1] << 8;
        if (i + 2 < n)
            v |= d[i + 2];
        lop_buf_putc(&b, alpha[(v >> 18) & 63]);
        lop_buf_putc(&b, alpha[(v >> 12) & 63]);
        if (i + 1 < n)
            lop_buf_putc(&b, alpha[(v >> 6) & 63]);
        else if (pad)
            lop_buf_putc(&b, '=');
        if (i + 2 < n)
            lop_buf_putc(&b, alpha[v & 63]);
        else if (pad)
            lop_buf_putc(&b, '=');
    }
    return lop_buf_steal(&b);
}

char *as_b64url_encode(const unsigned char *d, size_t n) { return b64_enc(d, n, b64url, false); }
char *as_b64_encode(const unsigned char *d, size_t n) { return b64_enc(d, n, b64std, true); }

unsigned char *as_b64url_decode(const char *s, size_t *n)
{
    size_t len = strlen(s);
    unsigned char *out = lop_xmalloc(len + 1);
    size_t o = 0;
    unsigned acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        const char *p = strchr(b64url, s[i]);
        if (s[i] == '=')
            break;
        if (!p || !s[i]) {
            free(out);
            return NULL;
        }
        acc = (acc << 6) | (unsigned)(p - b64url);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)((acc >> bits) & 0xff);
        }
    }
    out[o] = '\0';
    *n = o;
    return out;
}

bool as_valid_dns_label(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
        if (!ok)
            return false;
    }
    return s[0] != '-' && s[n - 1] != '-';
}

bool as_valid_dns_subdomain(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 253)
        return false;
    char part[256];
    const char *p = s;
    for (;;) {
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        if (len == 0 || len > 63)
            return false;
        memcpy(part, p, len);
        part[len] = '\0';
        if (!as_valid_dns_label(part))
            return false;
        if (!dot)
            return true;
        p = dot + 1;
    }
}

/* ---- YAML (one document) → JSON ---- */

static json_t *yaml_scalar(const yaml_node_t *node)
{
    const char *v = (const char *)node->data.scalar.value;
    size_t len = node->data.scalar.length;
    const char *tag = (const char *)node->tag;
    bool plain = node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    if (tag && strcmp(tag, YAML_STR_TAG) != 0 && strcmp(tag, "!") != 0 && plain) {
        /* implicit resolution below */
    }
    if (!plain)
        return json_stringn(v, len);
    if (len == 0 || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") ||
        !strcmp(v, "NULL"))
        return json_null();
    if (!strcmp(v, "true") || !strcmp(v, "True") || !strcmp(v, "TRUE"))
        return json_true();
    if (!strcmp(v, "false") || !strcmp(v, "False") || !strcmp(v, "FALSE"))
        return json_false();
    char *end = NULL;
    const char *digits = (v[0] == '-' || v[0] == '+') ? v + 1 : v;
    if (isdigit((unsigned char)digits[0])) {
        long long ll = strtoll(v, &end, 10);
        if (end && *end == '\0')
            return json_integer(ll);
        double d = strtod(v, &end);
        if (end && *end == '\0')
            return json_real(d);
    }
    return json_stringn(v, len);
}

static json_t *yaml_node_to_json(yaml_document_t *doc, yaml_node_t *node, int depth)
{
    if (!node || depth > 200)
        return NULL;
    switch (node->type) {
    case YAML_SCALAR_NODE:
        return yaml_scalar(node);
    case YAML_SEQUENCE_NODE: {
        json_t *a = json_array();
        for (yaml_node_item_t *it = node->data.sequence.items.start;
             it < node->data.sequence.items.top; it++) {
            json_t *v = yaml_node_to_json(doc, yaml_document_get_node(doc, *it), depth + 1);
            if (!v) {
                json_decref(a);
                return NULL;
            }
            json_array_append_new(a, v);
        }
        return a;
    }
    case YAML_MAPPING_NODE: {
        json_t *o = json_object();
        for (yaml_node_pair_t *p = node->data.mapping.pairs.start;
             p < node->data.mapping.pairs.top; p++) {
            yaml_node_t *k = yaml_document_get_node(doc, p->key);
            if (!k || k->type != YAML_SCALAR_NODE) {
                json_decref(o);
                return NULL;
            }
            json_t *v = yaml_node_to_json(doc, yaml_document_get_node(doc, p->value), depth + 1);
            if (!v) {
                json_decref(o);
                return NULL;
            }
            json_object_setn_new(o, (const char *)k->data.scalar.value, k->data.scalar.length, v);
        }
        return o;
    }
    default:
        return NULL;
    }
}

json_t *as_yaml_parse(const char *data, size_t len, char *errbuf, size_t errlen)
{
    yaml_parser_t p;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&p)) {
        snprintf(errbuf, errlen, "yaml parser init failed");
        return NULL;
    }
    yaml_parser_set_input_string(&p, (const unsigned char *)data, len);
    if (!yaml_parser_load(&p, &doc)) {
        snprintf(errbuf, errlen, "yaml: line %zu: %s", p.problem_mark.line + 1,
                 p.problem ? p.problem : "syntax error");
        yaml_parser_delete(&p);
        return NULL;
    }
    json_t *out = yaml_node_to_json(&doc, yaml_document_get_root_node(&doc), 0);
    if (!out)
        snprintf(errbuf, errlen, "yaml: unsupported document (empty, or non-scalar keys)");
    yaml_document_delete(&doc);
    yaml_parser_delete(&p);
    return out;
}
