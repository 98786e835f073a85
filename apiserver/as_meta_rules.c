/* SPDX-License-Identifier: Apache-2.0 */
/* as_meta_rules.c — ObjectMeta rules (apimachinery api/validation/objectmeta.go, util/validation)
 * and ConfigMap / Secret data rules (pkg/apis/core/validation), as field errors. */
#include "apiserver/as_meta_rules.h"

#include "apiserver/as_goval.h"
#include "apiserver/as_status.h"
#include "apiserver/as_util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QNAME_FMT "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
#define QNAME_MSG                                                                                            \
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric " \
    "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '" QNAME_FMT "')"
#define SUBDOMAIN_MSG                                                                                                \
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start " \
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "                      \
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
#define LABEL_VALUE_MSG                                                                                             \
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start " \
    "and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "          \
    "validation is '(" QNAME_FMT ")?')"
#define CONFIG_KEY_MSG                                                                                   \
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or " \
    "'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
#define IMMUTABLE_MSG   "field is immutable when `immutable` is set"
#define MAX_ANNOTATIONS 262144        /* TotalAnnotationSizeLimitB */
#define MAX_DATA        (1024 * 1024) /* core.MaxSecretSize, also ConfigMaps */

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9] over s[0..n) */
static bool qname_part(const char *s, size_t n)
{
    if (n == 0 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1])) return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!isalnum(c) && c != '-' && c != '_' && c != '.') return false;
    }
    return true;
}

/* IsDNS1123Subdomain's regex (no per-label limit) */
static bool subdomain_chars(const char *s, size_t n)
{
    if (n == 0) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (alnum) continue;
        if (c != '-' && c != '.') return false;
        if (i == 0 || i == n - 1) return false;
        if (c == '.' && (s[i - 1] == '.' || s[i - 1] == '-' || s[i + 1] == '-' || s[i + 1] == '.')) return false;
    }
    return true;
}

int as_qualified_name_errors(const char *s, json_t *msgs)
{
    size_t before = json_array_size(msgs);
    const char *slash = strchr(s, '/');
    const char *name = s;
    if (slash && strchr(slash + 1, '/')) {
        json_array_append_new(msgs, json_string("a qualified name " QNAME_MSG
                                                " with an optional DNS subdomain prefix and '/' (e.g. "
                                                "'example.com/MyName')"));
        return 1;
    }
    if (slash) {
        size_t pn = (size_t)(slash - s);
        if (pn == 0)
            json_array_append_new(msgs, json_string("prefix part must be non-empty"));
        else {
            if (pn > 253) json_array_append_new(msgs, json_string("prefix part must be no more than 253 characters"));
            if (!subdomain_chars(s, pn)) json_array_append_new(msgs, json_string("prefix part " SUBDOMAIN_MSG));
        }
        name = slash + 1;
    }
    size_t n = strlen(name);
    if (n == 0)
        json_array_append_new(msgs, json_string("name part must be non-empty"));
    else if (n > 63)
        json_array_append_new(msgs, json_string("name part must be no more than 63 characters"));
    if (!qname_part(name, n)) json_array_append_new(msgs, json_string("name part " QNAME_MSG));
    return (int)(json_array_size(msgs) - before);
}

/* field.Invalid(field, value, msg): "Invalid value: <value>: <msg>" */
static void invalid(json_t *causes, const char *field, const json_t *value, const char *msg)
{
    lop_buf_t b = LOP_BUF_INIT;
    lop_buf_puts(&b, "Invalid value: ");
    as_goval_append(&b, value);
    lop_buf_printf(&b, ": %s", msg);
    as_cause_add(causes, "FieldValueInvalid", field, b.data);
    lop_buf_free(&b);
}

static void invalid_str(json_t *causes, const char *field, const char *value, const char *msg)
{
    json_t *v = json_string(value);
    invalid(causes, field, v, msg);
    json_decref(v);
}

/* Each message of IsQualifiedName(check) as an Invalid error on field with value shown. */
static void qualified(json_t *causes, const char *field, const char *shown, const char *check)
{
    json_t *msgs = json_array();
    as_qualified_name_errors(check, msgs);
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m) invalid_str(causes, field, shown, json_string_value(m));
    json_decref(msgs);
}

static void check_labels(const json_t *labels, json_t *causes)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)labels, k, v)
    {
        qualified(causes, "metadata.labels", k, k);
        const char *s = json_string_value(v);
        if (!s) continue;
        size_t n = strlen(s);
        if (n > 63) invalid_str(causes, "metadata.labels", s, "must be no more than 63 characters");
        if (n && !qname_part(s, n)) invalid_str(causes, "metadata.labels", s, LABEL_VALUE_MSG);
    }
}

static void check_annotations(const json_t *ann, json_t *causes)
{
    const char *k;
    json_t *v;
    size_t total = 0;
    json_object_foreach((json_t *)ann, k, v)
    {
        char *low = lop_xstrdup(k); /* case does not matter for annotation keys */
        for (char *p = low; *p; p++) *p = (char)tolower((unsigned char)*p);
        qualified(causes, "metadata.annotations", k, low);
        free(low);
        total += strlen(k) + json_string_length(v);
    }
    if (total > MAX_ANNOTATIONS)
        as_cause_addf(causes, "FieldValueTooLong", "metadata.annotations", "Too long: must have at most %d bytes",
                      MAX_ANNOTATIONS);
}

static void check_finalizers(const json_t *fins, json_t *causes)
{
    size_t i;
    json_t *f;
    bool orphan = false, foreground = false;
    json_array_foreach(fins, i, f)
    {
        const char *s = json_string_value(f);
        if (!s) continue;
        qualified(causes, "metadata.finalizers", s, s);
        orphan |= !strcmp(s, "orphan");
        foreground |= !strcmp(s, "foregroundDeletion");
    }
    if (!orphan || !foreground) return;
    lop_buf_t b = LOP_BUF_INIT;
    lop_buf_puts(&b, "Invalid value: []string{");
    json_array_foreach(fins, i, f)
    {
        if (i) lop_buf_puts(&b, ", ");
        as_goval_append(&b, f);
    }
    lop_buf_puts(&b, "}: finalizer orphan and foregroundDeletion cannot be both set");
    as_cause_add(causes, "FieldValueInvalid", "metadata.finalizers", b.data);
    lop_buf_free(&b);
}

void as_meta_rules_check(const json_t *obj, json_t *causes)
{
    const json_t *m = json_object_get(obj, "metadata");
    const json_t *labels = json_object_get(m, "labels");
    const json_t *ann = json_object_get(m, "annotations");
    const json_t *fins = json_object_get(m, "finalizers");
    const char *gen = json_string_value(json_object_get(m, "generateName"));
    if (gen && *gen) { /* a prefix: a trailing '-' is fine */
        char *masked = lop_xstrdup(gen);
        size_t n = strlen(masked);
        if (masked[n - 1] == '-') masked[n - 1] = 'a';
        if (n > 253) invalid_str(causes, "metadata.generateName", gen, "must be no more than 253 characters");
        if (!subdomain_chars(masked, n)) invalid_str(causes, "metadata.generateName", gen, SUBDOMAIN_MSG);
        free(masked);
    }
    if (json_is_object(labels)) check_labels(labels, causes);
    if (json_is_object(ann)) check_annotations(ann, causes);
    if (json_is_array(fins)) check_finalizers(fins, causes);
}

/* ---- ConfigMap and Secret data ---- */

/* IsConfigMapKey: [-._a-zA-Z0-9]+, at most 253 characters, not ".", "..", nor starting "..". */
static void check_key(json_t *causes, const char *bag, const char *key)
{
    char field[600];
    snprintf(field, sizeof field, "%s[%s]", bag, key);
    size_t n = strlen(key);
    bool ok = n > 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)key[i];
        if (!isalnum(c) && c != '-' && c != '_' && c != '.') ok = false;
    }
    if (n > 253) invalid_str(causes, field, key, "must be no more than 253 characters");
    if (!ok) invalid_str(causes, field, key, CONFIG_KEY_MSG);
    if (!strcmp(key, "."))
        invalid_str(causes, field, key, "must not be '.'");
    else if (!strcmp(key, ".."))
        invalid_str(causes, field, key, "must not be '..'");
    else if (!strncmp(key, "..", 2))
        invalid_str(causes, field, key, "must not start with '..'");
}

static size_t base64_decoded_len(const char *s)
{
    size_t n = strlen(s), pad = 0;
    while (pad < n && pad < 2 && s[n - 1 - pad] == '=') pad++;
    return n / 4 * 3 - pad;
}

static bool same_map(const json_t *a, const json_t *b)
{
    bool ea = !a || json_is_null(a) || (json_is_object(a) && json_object_size(a) == 0);
    bool eb = !b || json_is_null(b) || (json_is_object(b) && json_object_size(b) == 0);
    return (ea && eb) || json_equal(a, b);
}

/* `immutable: true` on the stored object freezes the flag itself and the data bags. */
static void check_immutable(const json_t *obj, const json_t *old, const char *const *bags, json_t *causes)
{
    if (!old || !json_is_true(json_object_get(old, "immutable"))) return;
    if (!json_is_true(json_object_get(obj, "immutable")))
        as_cause_add(causes, "FieldValueForbidden", "immutable", "Forbidden: " IMMUTABLE_MSG);
    for (int i = 0; bags[i]; i++) {
        if (!same_map(json_object_get(obj, bags[i]), json_object_get(old, bags[i])))
            as_cause_add(causes, "FieldValueForbidden", bags[i], "Forbidden: " IMMUTABLE_MSG);
    }
}

static void check_configmap(const json_t *obj, const json_t *old, json_t *causes)
{
    const json_t *data = json_object_get(obj, "data"), *bin = json_object_get(obj, "binaryData");
    size_t total = 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)data, k, v)
    {
        check_key(causes, "data", k);
        if (json_object_get(bin, k)) {
            char field[600];
            snprintf(field, sizeof field, "data[%s]", k);
            invalid_str(causes, field, k, "duplicate of key present in binaryData");
        }
        total += json_string_length(v);
    }
    json_object_foreach((json_t *)bin, k, v)
    {
        check_key(causes, "binaryData", k);
        if (json_object_get(data, k)) {
            char field[600];
            snprintf(field, sizeof field, "binaryData[%s]", k);
            invalid_str(causes, field, k, "duplicate of key present in data");
        }
        if (json_is_string(v)) total += base64_decoded_len(json_string_value(v));
    }
    if (total > MAX_DATA)
        as_cause_addf(causes, "FieldValueTooLong", "", "Too long: must have at most %d bytes", MAX_DATA);
    static const char *const bags[] = {"data", "binaryData", NULL};
    check_immutable(obj, old, bags, causes);
}

static void check_secret(const json_t *obj, const json_t *old, json_t *causes)
{
    const json_t *data = json_object_get(obj, "data");
    size_t total = 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)data, k, v)
    {
        check_key(causes, "data", k);
        if (json_is_string(v)) total += base64_decoded_len(json_string_value(v));
    }
    if (total > MAX_DATA)
        as_cause_addf(causes, "FieldValueTooLong", "data", "Too long: must have at most %d bytes", MAX_DATA);
    const char *type = json_string_value(json_object_get(obj, "type"));
    if (type && !strcmp(type, "kubernetes.io/tls")) {
        if (!json_object_get(data, "tls.crt"))
            as_cause_add(causes, "FieldValueRequired", "data[tls.crt]", "Required value");
        if (!json_object_get(data, "tls.key"))
            as_cause_add(causes, "FieldValueRequired", "data[tls.key]", "Required value");
    }
    if (type && !strcmp(type, "kubernetes.io/ssh-auth") && !json_string_length(json_object_get(data, "ssh-privatekey")))
        as_cause_add(causes, "FieldValueRequired", "data[ssh-privatekey]", "Required value");
    const char *otype = old ? json_string_value(json_object_get(old, "type")) : NULL;
    if (otype && type && strcmp(otype, type)) invalid_str(causes, "type", type, "field is immutable");
    static const char *const bags[] = {"data", NULL};
    check_immutable(obj, old, bags, causes);
}

void as_data_rules_check(const as_res_t *res, const json_t *obj, const json_t *old, json_t *causes)
{
    if (res->group[0]) return;
    if (!strcmp(res->plural, "configmaps")) check_configmap(obj, old, causes);
    if (!strcmp(res->plural, "secrets")) check_secret(obj, old, causes);
}

static const char *go_json_type(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_TRUE:
    case JSON_FALSE: return "bool";
    case JSON_STRING: return "string";
    default: return "number";
    }
}

/* The offset Go's base64.StdEncoding reports for s, or -1 when s decodes. */
static long base64_error_at(const char *s)
{
    size_t n = strlen(s), i = 0;
    for (; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (isalnum(c) || c == '+' || c == '/') continue;
        if (c == '=' && i >= n - 2 && i % 4 >= 2 && (i == n - 1 || s[n - 1] == '=')) continue;
        return (long)i;
    }
    return n % 4 ? (long)(n / 4 * 4) : -1;
}

/* One data bag: values must be strings (and base64 when b64). -1 after replying 400. */
static int decode_bag(as_req_t *q, const json_t *obj, const char *bag, bool b64, const char *gotype)
{
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(obj, bag), k, v)
    {
        if (json_is_null(v)) continue;
        const char *kind = q->res->kind;
        if (!json_is_string(v)) {
            as_reply_status(q, 400, "BadRequest", NULL,
                            "%s in version \"v1\" cannot be handled as a %s: json: cannot unmarshal %s into Go struct "
                            "field %s.%s of type %s",
                            kind, kind, go_json_type(v), kind, bag, gotype);
            return -1;
        }
        long at = b64 ? base64_error_at(json_string_value(v)) : -1;
        if (at >= 0) {
            as_reply_status(q, 400, "BadRequest", NULL,
                            "%s in version \"v1\" cannot be handled as a %s: illegal base64 data at input byte %ld",
                            kind, kind, at);
            return -1;
        }
    }
    return 0;
}

int as_data_decode_check(as_req_t *q, const json_t *obj)
{
    const as_res_t *res = q->res;
    if (res->group[0]) return 0;
    if (!strcmp(res->plural, "configmaps"))
        return decode_bag(q, obj, "data", false, "string") < 0 || decode_bag(q, obj, "binaryData", true, "[]uint8") < 0
                   ? -1
                   : 0;
    if (!strcmp(res->plural, "secrets"))
        return decode_bag(q, obj, "data", true, "[]uint8") < 0 || decode_bag(q, obj, "stringData", false, "string") < 0
                   ? -1
                   : 0;
    return 0;
}
