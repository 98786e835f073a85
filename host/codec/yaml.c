/* SPDX-License-Identifier: Apache-2.0 */
/* yaml.c — YAML streams to jansson values over libyaml's event parser: plain scalars resolved with
 * the YAML 1.2 core schema, anchors expanded under the alias budget (see yaml.h). Runs on the
 * caller's thread, no shared state. Upstream: sigs.k8s.io/yaml as kubectl uses it. */
#include "host/codec/yaml.h"

#include "host/util/buf.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* Anchors seen in the current document: name -> value (borrowed from the document tree). */
typedef struct anchors {
    json_t *map;  /* object: anchor name -> value */
    size_t *left; /* alias expansion units still allowed for the whole input (yaml.h) */
    size_t budget;
} anchors_t;

size_t lop_yaml_expansion_budget(size_t input_len)
{
    if (input_len > (SIZE_MAX - LOP_YAML_EXPANSION_FLOOR) / LOP_YAML_EXPANSION_FACTOR) return SIZE_MAX;
    return input_len * LOP_YAML_EXPANSION_FACTOR + LOP_YAML_EXPANSION_FLOOR;
}

/* A deep copy of v that spends 1 unit per node and 1 per string/key byte from *left; NULL (and
 * nothing kept) once the budget would go negative. */
static json_t *copy_bounded(json_t *v, size_t *left)
{
    size_t cost = 1 + (json_is_string(v) ? json_string_length(v) : 0);
    if (cost > *left) return NULL;
    *left -= cost;
    if (json_is_object(v)) {
        json_t *o = json_object();
        const char *k;
        size_t klen;
        json_t *x;
        json_object_keylen_foreach(v, k, klen, x)
        {
            json_t *c = NULL;
            if (klen <= *left) {
                *left -= klen;
                c = copy_bounded(x, left);
            }
            if (!c) {
                json_decref(o);
                return NULL;
            }
            json_object_setn_new_nocheck(o, k, klen, c);
        }
        return o;
    }
    if (json_is_array(v)) {
        json_t *a = json_array();
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
        {
            json_t *c = copy_bounded(x, left);
            if (!c) {
                json_decref(a);
                return NULL;
            }
            json_array_append_new(a, c);
        }
        return a;
    }
    return json_copy(v);
}

static bool is_plain(const yaml_event_t *ev) { return ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE; }

static bool word_in(const char *s, const char *const *words)
{
    for (; *words; words++)
        if (strcmp(s, *words) == 0) return true;
    return false;
}

/* An integer as Go's strconv.ParseInt(s, 0, 64) reads it (go-yaml v2's resolve): an optional
 * sign, then 0x/0X hex, 0o/0O or a leading 0 octal, 0b/0B binary, else decimal. *v is set and
 * true returned only when every character is a digit of that base and the value fits. */
static bool go_int(const char *s, long long *v)
{
    const char *p = s + (s[0] == '-' || s[0] == '+');
    int base = 10;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
        base = 16, p += 2;
    else if (p[0] == '0' && (p[1] == 'o' || p[1] == 'O'))
        base = 8, p += 2;
    else if (p[0] == '0' && (p[1] == 'b' || p[1] == 'B'))
        base = 2, p += 2;
    else if (p[0] == '0' && p[1])
        base = 8, p += 1;
    if (!*p) return false;
    for (const char *q = p; *q; q++) {
        int d = *q >= '0' && *q <= '9'   ? *q - '0'
                : *q >= 'a' && *q <= 'f' ? *q - 'a' + 10
                : *q >= 'A' && *q <= 'F' ? *q - 'A' + 10
                                         : 99;
        if (d >= base) return false;
    }
    char *end = NULL;
    errno = 0;
    long long x = strtoll(p, &end, base);
    if (errno != 0 || *end != '\0') return false;
    *v = s[0] == '-' ? -x : x;
    return true;
}

/* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? — go-yaml v2's yamlStyleFloat. */
static bool yaml_float_text(const char *s)
{
    const char *p = s + (s[0] == '-' || s[0] == '+');
    bool seen_digit = false;
    while (*p >= '0' && *p <= '9') p++, seen_digit = true;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') p++, seen_digit = true;
    }
    if (seen_digit && (*p == 'e' || *p == 'E')) {
        p++;
        if (*p == '-' || *p == '+') p++;
        if (!(*p >= '0' && *p <= '9')) return false;
        while (*p >= '0' && *p <= '9') p++;
    }
    return seen_digit && *p == '\0';
}

/* A plain scalar resolved as kubectl and the kube-apiserver read it: sigs.k8s.io/yaml over
 * go-yaml v2 (yaml.v2 resolve.go), i.e. YAML 1.1's booleans and octals. */
static json_t *resolve_plain(const char *s, size_t n)
{
    static const char *const nulls[] = {"~", "null", "Null", "NULL", NULL};
    static const char *const trues[] = {"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON", NULL};
    static const char *const falses[] = {"n",     "N",     "no",  "No",  "NO",  "false",
                                         "False", "FALSE", "off", "Off", "OFF", NULL};
    if (n == 0 || word_in(s, nulls)) return json_null();
    if (word_in(s, trues)) return json_true();
    if (word_in(s, falses)) return json_false();
    if (!((s[0] >= '0' && s[0] <= '9') || s[0] == '-' || s[0] == '+' || s[0] == '.') || n >= 128)
        return json_stringn(s, n);
    const char *p = s + (s[0] == '-' || s[0] == '+');
    if (strcmp(p, ".inf") == 0 || strcmp(p, ".Inf") == 0 || strcmp(p, ".INF") == 0 || strcmp(s, ".nan") == 0 ||
        strcmp(s, ".NaN") == 0 || strcmp(s, ".NAN") == 0)
        return json_stringn(s, n); /* JSON has no infinities/NaN: keep the text */
    char plain[128];               /* go-yaml drops '_' from numbers: 1_000 is 1000 */
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] != '_') plain[k++] = s[i];
    plain[k] = '\0';
    long long v;
    if (go_int(plain, &v)) return json_integer(v);
    if (yaml_float_text(plain)) {
        double d = strtod(plain, NULL);
        if (!isfinite(d)) return json_stringn(s, n);
        /* an integer too large for int64, or digits Go's octal refused (09): the float's value */
        bool integral_text = strpbrk(plain, ".eE") == NULL;
        if (integral_text && fabs(d) < 9.2e18) return json_integer((long long)d);
        return json_real(d);
    }
    return json_stringn(s, n);
}

static lop_rc_t parse_error(yaml_parser_t *p, const char *origin, lop_err_t *err)
{
    return lop_err_set(err, LOP_EINVAL, 0, NULL, "%s:%zu:%zu: %s%s%s", origin, p->problem_mark.line + 1,
                       p->problem_mark.column + 1, p->problem ? p->problem : "YAML syntax error", p->context ? " " : "",
                       p->context ? p->context : "");
}

/* Parses one node whose first event is *first (consumed by the caller). */
static lop_rc_t parse_node(yaml_parser_t *p, yaml_event_t *first, anchors_t *an, const char *origin, int depth,
                           json_t **out, lop_err_t *err);

static lop_rc_t next_event(yaml_parser_t *p, yaml_event_t *ev, const char *origin, lop_err_t *err)
{
    if (!yaml_parser_parse(p, ev)) return parse_error(p, origin, err);
    return LOP_OK;
}

static void remember_anchor(anchors_t *an, const yaml_char_t *anchor, json_t *v)
{
    if (anchor) json_object_set(an->map, (const char *)anchor, v);
}

static lop_rc_t parse_node(yaml_parser_t *p, yaml_event_t *first, anchors_t *an, const char *origin, int depth,
                           json_t **out, lop_err_t *err)
{
    *out = NULL;
    if (depth > 256)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "%s:%zu: nested too deeply", origin, first->start_mark.line + 1);
    switch (first->type) {
    case YAML_ALIAS_EVENT: {
        json_t *v = json_object_get(an->map, (const char *)first->data.alias.anchor);
        if (!v)
            return lop_err_set(err, LOP_EINVAL, 0, NULL, "%s:%zu: unknown alias *%s", origin,
                               first->start_mark.line + 1, first->data.alias.anchor);
        *out = copy_bounded(v, an->left);
        if (!*out)
            return lop_err_set(err, LOP_EINVAL, 0, NULL,
                               "%s:%zu: alias *%s: YAML aliases expand beyond %zu units (nodes + bytes; %d x the "
                               "input's size + %d): refused as excessive aliasing (a \"billion laughs\" document)",
                               origin, first->start_mark.line + 1, first->data.alias.anchor, an->budget,
                               LOP_YAML_EXPANSION_FACTOR, LOP_YAML_EXPANSION_FLOOR);
        return LOP_OK;
    }
    case YAML_SCALAR_EVENT: {
        const char *s = (const char *)first->data.scalar.value;
        size_t n = first->data.scalar.length;
        const char *tag = (const char *)first->data.scalar.tag;
        if (tag && strcmp(tag, "tag:yaml.org,2002:str") == 0)
            *out = json_stringn(s, n);
        else if (is_plain(first))
            *out = resolve_plain(s, n);
        else
            *out = json_stringn(s, n);
        if (!*out) *out = json_string(""); /* invalid UTF-8: jansson refuses; keep a string */
        remember_anchor(an, first->data.scalar.anchor, *out);
        return LOP_OK;
    }
    case YAML_SEQUENCE_START_EVENT: {
        json_t *arr = json_array();
        for (;;) {
            yaml_event_t ev;
            lop_rc_t rc = next_event(p, &ev, origin, err);
            if (rc != LOP_OK) {
                json_decref(arr);
                return rc;
            }
            if (ev.type == YAML_SEQUENCE_END_EVENT) {
                yaml_event_delete(&ev);
                break;
            }
            json_t *item;
            rc = parse_node(p, &ev, an, origin, depth + 1, &item, err);
            yaml_event_delete(&ev);
            if (rc != LOP_OK) {
                json_decref(arr);
                return rc;
            }
            json_array_append_new(arr, item);
        }
        remember_anchor(an, first->data.sequence_start.anchor, arr);
        *out = arr;
        return LOP_OK;
    }
    case YAML_MAPPING_START_EVENT: {
        json_t *obj = json_object();
        for (;;) {
            yaml_event_t kev;
            lop_rc_t rc = next_event(p, &kev, origin, err);
            if (rc != LOP_OK) {
                json_decref(obj);
                return rc;
            }
            if (kev.type == YAML_MAPPING_END_EVENT) {
                yaml_event_delete(&kev);
                break;
            }
            json_t *key;
            rc = parse_node(p, &kev, an, origin, depth + 1, &key, err);
            size_t kline = kev.start_mark.line + 1;
            yaml_event_delete(&kev);
            if (rc != LOP_OK) {
                json_decref(obj);
                return rc;
            }
            yaml_event_t vev;
            rc = next_event(p, &vev, origin, err);
            if (rc != LOP_OK) {
                json_decref(key);
                json_decref(obj);
                return rc;
            }
            json_t *val;
            rc = parse_node(p, &vev, an, origin, depth + 1, &val, err);
            yaml_event_delete(&vev);
            if (rc != LOP_OK) {
                json_decref(key);
                json_decref(obj);
                return rc;
            }
            char numkey[64];
            const char *k = NULL;
            if (json_is_string(key))
                k = json_string_value(key);
            else if (json_is_integer(key)) {
                snprintf(numkey, sizeof numkey, "%lld", (long long)json_integer_value(key));
                k = numkey;
            } else if (json_is_true(key))
                k = "true";
            else if (json_is_false(key))
                k = "false";
            if (!k) {
                json_decref(key);
                json_decref(val);
                json_decref(obj);
                return lop_err_set(err, LOP_EINVAL, 0, NULL, "%s:%zu: mapping keys must be scalars", origin, kline);
            }
            json_object_set_new(obj, k, val);
            json_decref(key);
        }
        remember_anchor(an, first->data.mapping_start.anchor, obj);
        *out = obj;
        return LOP_OK;
    }
    default:
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "%s:%zu: unexpected YAML event", origin,
                           first->start_mark.line + 1);
    }
}

lop_rc_t lop_yaml_load_all(const char *text, size_t len, const char *origin, json_t **docs, lop_err_t *err)
{
    *docs = NULL;
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) return lop_err_set(err, LOP_ENOMEM, 0, NULL, "yaml parser");
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    json_t *arr = json_array();
    lop_rc_t rc = LOP_OK;
    bool done = false;
    size_t budget = lop_yaml_expansion_budget(len), left = budget;
    while (rc == LOP_OK && !done) {
        yaml_event_t ev;
        rc = next_event(&p, &ev, origin, err);
        if (rc != LOP_OK) break;
        if (ev.type == YAML_STREAM_END_EVENT)
            done = true;
        else if (ev.type == YAML_DOCUMENT_START_EVENT) {
            anchors_t an = {json_object(), &left, budget};
            yaml_event_t root;
            rc = next_event(&p, &root, origin, err);
            if (rc == LOP_OK) {
                json_t *doc = NULL;
                if (root.type != YAML_DOCUMENT_END_EVENT) {
                    rc = parse_node(&p, &root, &an, origin, 0, &doc, err);
                    yaml_event_t end;
                    if (rc == LOP_OK && (rc = next_event(&p, &end, origin, err)) == LOP_OK) yaml_event_delete(&end);
                }
                yaml_event_delete(&root);
                if (doc && !json_is_null(doc))
                    json_array_append_new(arr, doc);
                else
                    json_decref(doc);
            }
            json_decref(an.map);
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
    if (rc != LOP_OK) {
        json_decref(arr);
        return rc;
    }
    *docs = arr;
    return LOP_OK;
}

lop_rc_t lop_yaml_load_file(const char *path, json_t **docs, lop_err_t *err)
{
    *docs = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return lop_err_set(err, LOP_EINVAL, 0, NULL, "%s: %s", path, strerror(errno));
    lop_buf_t b = LOP_BUF_INIT;
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) lop_buf_append(&b, chunk, n);
    fclose(f);
    lop_rc_t rc = lop_yaml_load_all(b.data ? b.data : "", b.len, path, docs, err);
    lop_buf_free(&b);
    return rc;
}
