/* SPDX-License-Identifier: Apache-2.0 */
/* listdecoder.c — incremental LIST response decoder (see listdecoder.h). */
#include "host/kube/cache/listdecoder.h"

#include "host/codec/jsonscan.h"
#include "host/codec/jsontrack.h"
#include "host/util/buf.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum state {
    S_START,       /* before the opening '{' */
    S_FIRST_KEY,   /* after '{': a member name or '}' */
    S_KEY,         /* after ',': a member name */
    S_IN_KEY,      /* inside a member name */
    S_COLON,       /* after a member name */
    S_VALUE,       /* after ':' */
    S_CAPTURE,     /* inside a member value or an item */
    S_AFTER_VALUE, /* after a member value: ',' or '}' */
    S_ITEMS_FIRST, /* after items' '[': an item or ']' */
    S_ITEMS_NEXT,  /* after ',' between items: an item */
    S_ITEMS_AFTER, /* after an item: ',' or ']' */
    S_END,         /* after the closing '}': whitespace only */
};

enum member { M_OTHER, M_KIND, M_API, M_METADATA, M_ITEMS };
enum capture { C_CONTAINER, C_STRING, C_LITERAL };

struct lop_listdecoder {
    lop_list_item_fn fn;
    void *ud;
    size_t max_item;
    enum state st;
    bool failed;
    bool no_validate; /* items are validated by the consumer */
    /* the member name being read (raw, escapes not decoded, as jsonscan compares keys) */
    char key[16];
    size_t key_len;
    bool key_long, key_esc, key_escaped;
    enum member member;
    /* the value being captured */
    enum capture ckind;
    bool in_item;
    lop_jtrack_t track; /* strings and brackets of a container or string being captured */
    lop_buf_t cap;      /* the bytes of a value begun in an earlier chunk */
    bool seen_meta;
    char *kind, *api, *rv, *cont;
    size_t nitems;
    size_t last_item; /* length of the previous item: offer one unchecked only when that much is at hand */
    uint64_t offset;  /* stream offset of the first byte of the current chunk */
};

/* Bytes that end a literal. */
static const unsigned char lit_stop[256] = {
    [','] = 1, ['}'] = 1, [']'] = 1, [' '] = 1, ['\t'] = 1, ['\n'] = 1, ['\r'] = 1};

lop_listdecoder_t *lop_listdecoder_new(size_t max_item, lop_list_item_fn fn, void *ud)
{
    lop_listdecoder_t *d = lop_xcalloc(1, sizeof *d);
    d->fn = fn;
    d->ud = ud;
    d->max_item = max_item ? max_item : (size_t)64 << 20;
    return d;
}

void lop_listdecoder_set_callback(lop_listdecoder_t *d, lop_list_item_fn fn, void *ud)
{
    d->fn = fn;
    d->ud = ud;
}

void lop_listdecoder_set_validate(lop_listdecoder_t *d, bool validate) { d->no_validate = !validate; }

static void clear_strings(lop_listdecoder_t *d)
{
    free(d->kind);
    free(d->api);
    free(d->rv);
    free(d->cont);
    d->kind = d->api = d->rv = d->cont = NULL;
}

void lop_listdecoder_free(lop_listdecoder_t *d)
{
    if (!d) return;
    clear_strings(d);
    lop_buf_free(&d->cap);
    free(d);
}

void lop_listdecoder_reset(lop_listdecoder_t *d)
{
    clear_strings(d);
    lop_buf_reset(&d->cap);
    d->st = S_START;
    d->failed = d->key_long = d->key_esc = d->key_escaped = false;
    d->in_item = false;
    d->seen_meta = false;
    d->key_len = 0;
    d->nitems = d->last_item = 0;
    d->offset = 0;
}

static const char *or_empty(const char *s) { return s ? s : ""; }
const char *lop_listdecoder_item_kind(const lop_listdecoder_t *d) { return or_empty(d->kind); }
const char *lop_listdecoder_api_version(const lop_listdecoder_t *d) { return or_empty(d->api); }
const char *lop_listdecoder_resource_version(const lop_listdecoder_t *d) { return or_empty(d->rv); }
const char *lop_listdecoder_continue(const lop_listdecoder_t *d) { return or_empty(d->cont); }
size_t lop_listdecoder_items(const lop_listdecoder_t *d) { return d->nitems; }

static lop_rc_t fail(lop_listdecoder_t *d, lop_err_t *err, uint64_t at, const char *what)
{
    d->failed = true;
    return lop_err_set(err, LOP_EINVAL, 0, NULL, "list response: %s at byte %llu", what, (unsigned long long)at);
}

/* A JSON string value (validated) as a malloc'd C string; NULL when v is not a string. */
static char *decode_string(const char *v, size_t n)
{
    if (!n || v[0] != '"') return NULL;
    if (!memchr(v, '\\', n)) return lop_xstrndup(v + 1, n - 2);
    json_t *j = json_loadb(v, n, JSON_DECODE_ANY, NULL);
    char *s = json_is_string(j) ? lop_xstrdup(json_string_value(j)) : NULL;
    json_decref(j);
    return s;
}

/* A string member of the object p[0..n): *out gets it (malloc'd) or NULL when absent or not a
 * string. -1 when it is a string that cannot be decoded (bad escape, invalid UTF-8): a silently
 * dropped continue token would end a paginated list early. */
static int string_member(const char *p, size_t n, const char *key, char **out)
{
    size_t s, e;
    *out = NULL;
    if (lop_jscan_find(p, n, 0, key, &s, &e) != 1 || p[s] != '"') return 0;
    *out = decode_string(p + s, e - s);
    return *out ? 0 : -1;
}

static enum member classify(const lop_listdecoder_t *d)
{
    if (d->key_long || d->key_escaped) return M_OTHER;
    static const struct {
        const char *name;
        enum member m;
    } known[] = {{"kind", M_KIND}, {"apiVersion", M_API}, {"metadata", M_METADATA}, {"items", M_ITEMS}};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (d->key_len == strlen(known[i].name) && memcmp(d->key, known[i].name, d->key_len) == 0) return known[i].m;
    return M_OTHER;
}

static lop_rc_t deliver(lop_listdecoder_t *d, const char *item, size_t len)
{
    d->nitems++;
    return d->fn && d->fn(d->ud, item, len, NULL) ? LOP_ECLOSED : LOP_OK;
}

/* The top-level '}'. */
static lop_rc_t object_end(lop_listdecoder_t *d, lop_err_t *err, uint64_t at)
{
    (void)err;
    (void)at;
    d->st = S_END;
    return LOP_OK;
}

/* A captured value is complete: validate it and act on it. */
static lop_rc_t value_done(lop_listdecoder_t *d, const char *v, size_t n, lop_err_t *err, uint64_t at)
{
    size_t s, e;
    if (!(d->in_item && d->no_validate) && (lop_jscan_value(v, n, 0, &s, &e) != 0 || s != 0 || e != n))
        return fail(d, err, at, d->in_item ? "malformed list item" : "malformed member value");
    if (d->in_item) {
        d->st = S_ITEMS_AFTER;
        d->last_item = n;
        return deliver(d, v, n);
    }
    d->st = S_AFTER_VALUE;
    switch (d->member) {
    case M_KIND: {
        free(d->kind);
        d->kind = decode_string(v, n);
        size_t kl = d->kind ? strlen(d->kind) : 0;
        if (kl > 4 && strcmp(d->kind + kl - 4, "List") == 0)
            d->kind[kl - 4] = '\0';
        else if (d->kind)
            d->kind[0] = '\0';
        break;
    }
    case M_API:
        free(d->api);
        d->api = decode_string(v, n);
        break;
    case M_METADATA:
        if (v[0] != '{') return fail(d, err, at, "list metadata is not an object");
        d->seen_meta = true;
        free(d->rv);
        free(d->cont);
        if (string_member(v, n, "resourceVersion", &d->rv) != 0)
            return fail(d, err, at, "metadata.resourceVersion is not a valid JSON string");
        if (string_member(v, n, "continue", &d->cont) != 0)
            return fail(d, err, at, "metadata.continue is not a valid JSON string");
        break;
    case M_ITEMS:
        if (v[0] != 'n') /* an array streams (S_ITEMS_FIRST); null is an empty list */
            return fail(d, err, at, "list items is not an array");
        break;
    case M_OTHER: break;
    }
    return LOP_OK;
}

static void begin_capture(lop_listdecoder_t *d, enum capture kind, bool item, char opener)
{
    d->st = S_CAPTURE;
    d->ckind = kind;
    d->in_item = item;
    if (kind != C_LITERAL) lop_jtrack_begin(&d->track, opener);
    lop_buf_reset(&d->cap);
}

/*
 * Advance through the value being captured, from *ip. Sets *done when it ends in this chunk, with
 * *ip one past its last byte (a literal's end is the delimiter, not consumed); else *ip = n.
 * Returns NULL, or the cause of a structural error (whose offset in the chunk is *ip).
 */
static const char *capture_scan(lop_listdecoder_t *d, const char *p, size_t n, size_t *ip, bool *done)
{
    if (d->ckind != C_LITERAL) return lop_jtrack_scan(&d->track, p, n, ip, done);
    size_t i = *ip;
    while (i < n && !lit_stop[(unsigned char)p[i]]) i++;
    *ip = i;
    *done = i < n;
    return NULL;
}

static bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

static bool starts_literal(char c) { return c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' || c == 'n'; }

/* One structural byte outside any captured value (whitespace already skipped). Returns the
 * index of the next byte to look at, or SIZE_MAX after a failure (err set). */
static size_t structural(lop_listdecoder_t *d, const char *data, size_t i, size_t *cstart, lop_rc_t *rc, lop_err_t *err)
{
    char c = data[i];
    uint64_t at = d->offset + i;
    switch (d->st) {
    case S_START:
        if (c != '{') break;
        d->st = S_FIRST_KEY;
        return i + 1;
    case S_FIRST_KEY:
        if (c == '}') {
            *rc = object_end(d, err, at);
            return i + 1;
        }
        /* fall through */
    case S_KEY:
        if (c != '"') break;
        d->st = S_IN_KEY;
        d->key_len = 0;
        d->key_long = d->key_esc = d->key_escaped = false;
        return i + 1;
    case S_COLON:
        if (c != ':') break;
        d->st = S_VALUE;
        return i + 1;
    case S_VALUE:
        *cstart = i;
        if (d->member == M_ITEMS && c == '[') {
            d->st = S_ITEMS_FIRST;
            return i + 1;
        }
        if (c == '{' || c == '[') {
            begin_capture(d, C_CONTAINER, false, c);
            return i + 1;
        }
        if (c == '"') {
            begin_capture(d, C_STRING, false, c);
            return i + 1;
        }
        if (!starts_literal(c)) break;
        begin_capture(d, C_LITERAL, false, c);
        return i;
    case S_AFTER_VALUE:
        if (c == ',') {
            d->st = S_KEY;
            return i + 1;
        }
        if (c != '}') break;
        *rc = object_end(d, err, at);
        return i + 1;
    case S_ITEMS_FIRST:
        if (c == ']') {
            d->st = S_AFTER_VALUE;
            return i + 1;
        }
        /* fall through */
    case S_ITEMS_NEXT:
        if (c != '{') {
            *rc = fail(d, err, at, "list item is not an object");
            return SIZE_MAX;
        }
        *cstart = i;
        begin_capture(d, C_CONTAINER, true, c);
        return i + 1;
    case S_ITEMS_AFTER:
        if (c == ',') {
            d->st = S_ITEMS_NEXT;
            return i + 1;
        }
        if (c != ']') break;
        d->st = S_AFTER_VALUE;
        return i + 1;
    case S_END: *rc = fail(d, err, at, "data after the list object"); return SIZE_MAX;
    case S_IN_KEY:
    case S_CAPTURE: break; /* not structural: handled by the caller */
    }
    static const char *const expected[] = {
        [S_START] = "expected '{' to start the list object",
        [S_FIRST_KEY] = "expected a member name or '}'",
        [S_KEY] = "expected a member name",
        [S_COLON] = "expected ':'",
        [S_VALUE] = "expected a value",
        [S_AFTER_VALUE] = "expected ',' or '}'",
        [S_ITEMS_AFTER] = "expected ',' or ']' in items",
    };
    *rc = fail(d, err, at, expected[d->st] ? expected[d->st] : "unexpected byte");
    return SIZE_MAX;
}

/* Inside a member name from i; returns the index after the bytes consumed. */
static size_t read_key(lop_listdecoder_t *d, const char *data, size_t len, size_t i, lop_rc_t *rc, lop_err_t *err)
{
    for (; i < len; i++) {
        char c = data[i];
        if (d->key_esc) {
            d->key_esc = false;
        } else if (c == '\\') {
            d->key_esc = d->key_escaped = true;
        } else if (c == '"') {
            d->member = classify(d);
            d->st = S_COLON;
            return i + 1;
        } else if ((unsigned char)c < 0x20) {
            *rc = fail(d, err, d->offset + i, "control character in a member name");
            return len;
        }
        if (d->key_len < sizeof d->key)
            d->key[d->key_len++] = c;
        else
            d->key_long = true;
    }
    return len;
}

lop_rc_t lop_listdecoder_feed(lop_listdecoder_t *d, const char *data, size_t len, lop_err_t *err)
{
    if (d->failed) return lop_err_set(err, LOP_EINVAL, 0, NULL, "list response: decoder already failed");
    size_t i = 0, cstart = 0; /* cstart: where the captured value began in this chunk */
    lop_rc_t rc = LOP_OK;
    while (i < len && rc == LOP_OK) {
        if (d->st == S_CAPTURE) {
            bool done;
            const char *bad = capture_scan(d, data, len, &i, &done);
            if (bad) return fail(d, err, d->offset + i, bad);
            if (d->cap.len + (i - cstart) > d->max_item)
                return fail(d, err, d->offset + i,
                            d->in_item ? "item larger than the limit" : "member larger than the limit");
            if (!done) break;
            size_t vn;
            const char *v = lop_buf_join(&d->cap, data + cstart, i - cstart, &vn);
            rc = value_done(d, v, vn, err, d->offset + i);
            lop_buf_reset(&d->cap);
            continue;
        }
        if (d->st == S_IN_KEY) {
            i = read_key(d, data, len, i, &rc, err);
            continue;
        }
        if (is_ws(data[i])) {
            i++;
            continue;
        }
        if ((d->st == S_ITEMS_FIRST || d->st == S_ITEMS_NEXT) && data[i] == '{' && d->no_validate && d->fn &&
            len - i >= d->last_item) {
            /* offered unchecked: built in the consumer's one pass, or refused and tracked */
            size_t avail = len - i < d->max_item ? len - i : d->max_item, end = 0;
            int r = d->fn(d->ud, data + i, avail, &end);
            if (r != LOP_LIST_RETRY) {
                d->nitems++;
                if (r) {
                    rc = LOP_ECLOSED;
                    break;
                }
                d->st = S_ITEMS_AFTER;
                d->last_item = end;
                i += end;
                continue;
            }
        }
        size_t next = structural(d, data, i, &cstart, &rc, err);
        if (next == SIZE_MAX) return rc;
        i = next;
    }
    if (rc == LOP_OK && d->st == S_CAPTURE) lop_buf_append(&d->cap, data + cstart, len - cstart);
    d->offset += len;
    return rc;
}

lop_rc_t lop_listdecoder_finish(lop_listdecoder_t *d, lop_err_t *err)
{
    if (d->failed) return lop_err_set(err, LOP_EINVAL, 0, NULL, "list response: decoder already failed");
    const char *missing = NULL;
    if (d->st == S_START)
        missing = "list response is empty";
    else if (d->st != S_END) /* a literal ending a truncated body never saw its delimiter either */
        missing = "list response truncated";
    else if (!d->seen_meta)
        missing = "list response has no metadata";
    else if (!d->rv || !d->rv[0])
        missing = "list response has no metadata.resourceVersion";
    if (!missing) return LOP_OK;
    d->failed = true;
    return lop_err_set(err, LOP_EINVAL, 0, NULL, "%s (%llu bytes)", missing, (unsigned long long)d->offset);
}
