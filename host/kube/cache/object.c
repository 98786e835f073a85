/* SPDX-License-Identifier: Apache-2.0 */
/* object.c — immutable, refcounted cache entries (see object.h). */
#include "host/kube/cache/object.h"

#include "host/codec/jsonscan.h"
#include "host/codec/jsonstr.h"
#include "host/kube/cache/object_impl.h"
#include "host/util/buf.h"
#include "host/util/malloc_tune.h"
#include "host/util/utf8.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Decoded strings go to an arena sized up front so it never moves (a decoded string plus its NUL
 * is never longer than its quoted JSON token): on the stack while an object is built, then copied
 * into the object's one allocation at its exact length. */
typedef struct arena {
    char *p;
    size_t len, cap;
} arena_t;

/* Decode the body r[0..end) of a JSON string token (between its quotes) to w, or only check it
 * when w is NULL. Returns the decoded length (no NUL written), or -1 for a bad escape, a lone
 * surrogate or \u0000 (which jansson refuses too). */
static ptrdiff_t decode_str(const char *r, const char *end, char *w)
{
    size_t n = 0;
#define PUT(c) (w ? (void)(w[n] = (char)(c)) : (void)0, n++)
    while (r < end) {
        const char *bs = memchr(r, '\\', (size_t)(end - r));
        size_t chunk = (size_t)((bs ? bs : end) - r);
        if (w) memcpy(w + n, r, chunk);
        n += chunk;
        r += chunk;
        if (!bs) break;
        if (++r >= end) return -1;
        char c = *r++;
        switch (c) {
        case '"':
        case '\\':
        case '/': PUT(c); break;
        case 'b': PUT('\b'); break;
        case 'f': PUT('\f'); break;
        case 'n': PUT('\n'); break;
        case 'r': PUT('\r'); break;
        case 't': PUT('\t'); break;
        case 'u': {
            uint32_t cp = 0;
            int used = lop_json_unescape_u(r - 2, end, &cp); /* r - 2: the escape's backslash */
            if (used < 0 || cp == 0) return -1;
            r += used - 2;
            char u8[4];
            size_t k = lop_utf8_encode(cp, u8);
            for (size_t i = 0; i < k; i++) PUT((unsigned char)u8[i]);
            break;
        }
        default: return -1;
        }
    }
#undef PUT
    return (ptrdiff_t)n;
}

static bool is_str_token(const char *p, size_t s, size_t e) { return e - s >= 2 && p[s] == '"' && p[e - 1] == '"'; }

/* Decode the JSON string token p[s..e) (quotes included) into the arena. NULL when it is not a
 * string or does not decode. */
static const char *arena_str(arena_t *a, const char *p, size_t s, size_t e)
{
    if (!is_str_token(p, s, e) || a->len + (e - s) > a->cap) return NULL;
    char *out = a->p + a->len;
    ptrdiff_t n = decode_str(p + s + 1, p + e - 1, out);
    if (n < 0) return NULL;
    out[n] = '\0';
    a->len += (size_t)n + 1;
    return out;
}

/* A string-or-null member value at p[s..e): "" for null, NULL (and *bad) otherwise. */
static const char *str_or_empty(arena_t *a, const char *p, size_t s, size_t e, bool *bad)
{
    if (!e || p[s] == 'n') return "";
    const char *r = arena_str(a, p, s, e);
    if (!r) *bad = true;
    return r ? r : "";
}

/* Labels or annotations while they are decoded: on the stack up to 16, on the heap beyond. */
typedef struct kvvec {
    lop_kv_t *v;
    size_t n, cap;
    lop_kv_t small[16];
} kvvec_t;

#define KVVEC_INIT(kv) ((kv).v = (kv).small, (kv).n = 0, (kv).cap = sizeof(kv).small / sizeof(kv).small[0])

/* Last one wins for a repeated key, as in a parsed JSON object. */
static void kv_set(kvvec_t *kv, const char *k, const char *v)
{
    for (size_t i = 0; i < kv->n; i++)
        if (strcmp(kv->v[i].key, k) == 0) {
            kv->v[i].value = v;
            return;
        }
    if (kv->n == kv->cap) {
        lop_kv_t *grown = lop_xmalloc(kv->cap * 2 * sizeof *kv->v);
        memcpy(grown, kv->v, kv->n * sizeof *kv->v);
        if (kv->v != kv->small) free(kv->v);
        kv->v = grown;
        kv->cap *= 2;
    }
    kv->v[kv->n++] = (lop_kv_t){k, v};
}

/* Check labels / annotations at build: null or an object whose keys and values are strings that
 * decode. Nothing is kept: lop_obj_labels decodes them when asked. */
static lop_rc_t check_strmap(const char *p, size_t n, size_t s, size_t e, const char *what, lop_err_t *err)
{
    if (!e || p[s] == 'n') return LOP_OK;
    lop_jscan_iter_t it;
    if (p[s] != '{' || lop_jscan_object_begin_trusted(&it, p, n, s) != 0)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "object metadata.labels/annotations is not an object");
    int r;
    while ((r = lop_jscan_object_next(&it)) == 1) {
        if (decode_str(it.key, it.key + it.key_len, NULL) < 0)
            return lop_err_set(err, LOP_EINVAL, 0, NULL, "object metadata.%s has a malformed key", what);
        if (!is_str_token(p, it.val_start, it.val_end) ||
            decode_str(p + it.val_start + 1, p + it.val_end - 1, NULL) < 0)
            return lop_err_set(err, LOP_EINVAL, 0, NULL, "object metadata.%s[%.*s] is not a string", what,
                               (int)(it.key_len < 200 ? it.key_len : 200), it.key);
    }
    if (r < 0) return lop_err_set(err, LOP_EINVAL, 0, NULL, "object metadata.%s: malformed JSON", what);
    return LOP_OK;
}

/* Decode a checked labels / annotations value p[s..e) into kv (strings in a). */
static void decode_strmap(arena_t *a, const char *p, size_t n, size_t s, size_t e, kvvec_t *kv)
{
    lop_jscan_iter_t it;
    if (!e || p[s] != '{' || lop_jscan_object_begin_trusted(&it, p, n, s) != 0) return;
    while (lop_jscan_object_next(&it) == 1) {
        size_t ks = (size_t)(it.key - p) - 1;
        const char *k = arena_str(a, p, ks, ks + it.key_len + 2), *v = arena_str(a, p, it.val_start, it.val_end);
        if (k && v) kv_set(kv, k, v);
    }
}

/* generation: null or an integer that fits int64 (a fraction or exponent makes it a real). */
static bool parse_int64(const char *p, size_t s, size_t e, int64_t *out)
{
    size_t i = s;
    bool neg = false;
    if (i < e && p[i] == '-') neg = true, i++;
    if (i == e) return false;
    uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; i < e; i++) {
        if (p[i] < '0' || p[i] > '9') return false;
        unsigned d = (unsigned)(p[i] - '0');
        if (v > (lim - d) / 10) return false;
        v = v * 10 + d;
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

/* Owner uids while an object is built: on the stack up to 8, on the heap beyond. */
typedef struct uidvec {
    const char **v;
    size_t n, cap;
    const char *small[8];
} uidvec_t;

static lop_rc_t scan_owners(lop_obj_t *o, uidvec_t *uids, arena_t *a, const char *p, size_t n, size_t s, size_t e,
                            lop_err_t *err)
{
    if (!e || p[s] == 'n') return LOP_OK;
    lop_jscan_iter_t it, rt;
    if (p[s] != '[' || lop_jscan_array_begin_trusted(&it, p, n, s) != 0)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "object metadata.ownerReferences is not an array");
    size_t i = 0;
    int r;
    for (; (r = lop_jscan_array_next(&it)) == 1; i++) {
        if (p[it.val_start] != '{' || lop_jscan_object_begin_trusted(&rt, p, n, it.val_start) != 0)
            return lop_err_set(err, LOP_EINVAL, 0, NULL, "object metadata.ownerReferences[%zu] is not an object", i);
        size_t sp[4][2] = {{0, 0}, {0, 0}, {0, 0}, {0, 0}};
        bool controller = false;
        int rr;
        while ((rr = lop_jscan_object_next(&rt)) == 1) {
            int f = lop_jscan_key_is(&rt, "apiVersion") ? 0
                    : lop_jscan_key_is(&rt, "kind")     ? 1
                    : lop_jscan_key_is(&rt, "name")     ? 2
                    : lop_jscan_key_is(&rt, "uid")      ? 3
                                                        : -1;
            if (f >= 0)
                sp[f][0] = rt.val_start, sp[f][1] = rt.val_end;
            else if (lop_jscan_key_is(&rt, "controller"))
                controller = rt.val_end - rt.val_start == 4 && memcmp(p + rt.val_start, "true", 4) == 0;
        }
        if (rr < 0)
            return lop_err_set(err, LOP_EINVAL, 0, NULL, "object metadata.ownerReferences[%zu]: malformed JSON", i);
        bool bad = false;
        lop_owner_ref_t ref = {
            str_or_empty(a, p, sp[0][0], sp[0][1], &bad), str_or_empty(a, p, sp[1][0], sp[1][1], &bad),
            str_or_empty(a, p, sp[2][0], sp[2][1], &bad), str_or_empty(a, p, sp[3][0], sp[3][1], &bad)};
        if (bad)
            return lop_err_set(err, LOP_EINVAL, 0, NULL, "object metadata.ownerReferences[%zu] has a non-string field",
                               i);
        if (uids->n == uids->cap) {
            const char **grown = lop_xmalloc(uids->cap * 2 * sizeof *grown);
            memcpy(grown, uids->v, uids->n * sizeof *grown);
            if (uids->v != uids->small) free(uids->v);
            uids->v = grown;
            uids->cap *= 2;
        }
        uids->v[uids->n++] = ref.uid;
        if (!o->has_controller && controller) {
            o->has_controller = true;
            o->controller = ref;
        }
    }
    if (r < 0) return lop_err_set(err, LOP_EINVAL, 0, NULL, "object metadata.ownerReferences: malformed JSON");
    return LOP_OK;
}

/* Metadata members we read; the last occurrence of a repeated key wins, as in a parsed object. */
enum { M_NAMESPACE, M_NAME, M_UID, M_RV, M_GENERATION, M_DELETION, M_LABELS, M_ANNOTATIONS, M_OWNERS, M_COUNT };
#define KEY(k)          \
    {                   \
        k, sizeof k - 1 \
    }
static const struct {
    const char *key;
    size_t len;
} meta_keys[M_COUNT] = {KEY("namespace"),       KEY("name"),        KEY("uid"),
                        KEY("resourceVersion"), KEY("generation"),  KEY("deletionTimestamp"),
                        KEY("labels"),          KEY("annotations"), KEY("ownerReferences")};
#undef KEY

/* Fill o's metadata fields from the member spans of the metadata object in p (strings into a,
 * owner uids into uids), and check labels and annotations. */
static lop_rc_t fill_meta(lop_obj_t *o, arena_t *a, uidvec_t *uids, const char *p, size_t n, size_t sp[M_COUNT][2],
                          lop_err_t *err)
{
    bool bad = false;
    o->namespace_ = str_or_empty(a, p, sp[M_NAMESPACE][0], sp[M_NAMESPACE][1], &bad);
    o->name = str_or_empty(a, p, sp[M_NAME][0], sp[M_NAME][1], &bad);
    o->uid = str_or_empty(a, p, sp[M_UID][0], sp[M_UID][1], &bad);
    o->rv = str_or_empty(a, p, sp[M_RV][0], sp[M_RV][1], &bad);
    if (bad)
        return lop_err_set(err, LOP_EINVAL, 0, NULL,
                           "object metadata: name, namespace, uid and resourceVersion must be strings");
    size_t gs = sp[M_GENERATION][0], ge = sp[M_GENERATION][1];
    if (ge && p[gs] != 'n' && !parse_int64(p, gs, ge, &o->generation))
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "object metadata.generation is not an integer");
    o->deleting = sp[M_DELETION][1] && p[sp[M_DELETION][0]] != 'n';
    lop_rc_t rc = check_strmap(p, n, sp[M_LABELS][0], sp[M_LABELS][1], "labels", err);
    if (rc == LOP_OK) rc = check_strmap(p, n, sp[M_ANNOTATIONS][0], sp[M_ANNOTATIONS][1], "annotations", err);
    if (rc == LOP_OK) rc = scan_owners(o, uids, a, p, n, sp[M_OWNERS][0], sp[M_OWNERS][1], err);
    if (rc != LOP_OK) return rc;
    if (!o->has_controller) o->controller = (lop_owner_ref_t){"", "", "", ""};
    return LOP_OK;
}

/* The pieces of an entry's json, in order: literal bytes, spans of the source, or a string
 * written as a JSON literal. Laid out first so that the one allocation can be sized exactly. */
typedef struct piece {
    enum { P_SRC, P_LIT, P_STR } kind;
    const char *p;
    size_t n;
} piece_t;

typedef struct layout {
    piece_t pc[16];
    size_t n, len;
} layout_t;

static void lay(layout_t *l, int kind, const char *p, size_t n)
{
    if (!n) return;
    l->pc[l->n++] = (piece_t){kind, p, n};
    l->len += kind == P_STR ? lop_json_str_len(p, n) : n;
}

static void lay_lit(layout_t *l, const char *s) { lay(l, P_LIT, s, strlen(s)); }

static size_t lay_write(const layout_t *l, char *dst)
{
    char *w = dst;
    for (size_t i = 0; i < l->n; i++) {
        if (l->pc[i].kind == P_STR) {
            w = lop_json_str_write(w, l->pc[i].p, l->pc[i].n);
        } else {
            memcpy(w, l->pc[i].p, l->pc[i].n);
            w += l->pc[i].n;
        }
    }
    *w = '\0';
    return (size_t)(w - dst);
}

/* A pointer into the build arena, moved to the same offset in the object's copy of it. */
static const char *moved(const char *s, const arena_t *a, char *to)
{
    /* compared as integers: s may point outside the arena (a literal ""), where < on pointers
     * into different objects is undefined */
    uintptr_t x = (uintptr_t)s, lo = (uintptr_t)a->p;
    return x >= lo && x - lo < a->len ? to + (x - lo) : s;
}

/* Allocate the object: the struct t (filled from the build arena a and owner uids), json laid
 * out by l, the uid array and the arena's strings, in one block of exactly that size. */
static lop_obj_t *assemble(const lop_obj_t *t, const layout_t *l, const arena_t *a, const uidvec_t *uids)
{
    size_t json_off = sizeof(lop_obj_t);
    size_t uids_off = (json_off + l->len + 1 + (sizeof(char *) - 1)) & ~(sizeof(char *) - 1);
    size_t strs_off = uids_off + uids->n * sizeof(char *);
    char *base = lop_xmalloc(strs_off + a->len);
    lop_obj_t *o = (lop_obj_t *)base;
    *o = *t;
    char *strs = base + strs_off;
    memcpy(strs, a->p, a->len);
    o->json = base + json_off;
    o->json_len = lay_write(l, base + json_off);
    o->api_version = moved(t->api_version, a, strs);
    o->kind = moved(t->kind, a, strs);
    o->namespace_ = moved(t->namespace_, a, strs);
    o->name = moved(t->name, a, strs);
    o->uid = moved(t->uid, a, strs);
    o->rv = moved(t->rv, a, strs);
    o->controller.api_version = moved(t->controller.api_version, a, strs);
    o->controller.kind = moved(t->controller.kind, a, strs);
    o->controller.name = moved(t->controller.name, a, strs);
    o->controller.uid = moved(t->controller.uid, a, strs);
    const char **ou = (const char **)(void *)(base + uids_off);
    for (size_t i = 0; i < uids->n; i++) ou[i] = moved(uids->v[i], a, strs);
    o->owner_uids = uids->n ? ou : NULL;
    o->nowners = uids->n;
    o->khash_ = lop_obj_key_hash_of(o);
    return o;
}

/* True when the apiVersion and kind tokens json[as..ae) and json[ks..ke) (quotes included) say
 * PartialObjectMetadata of meta.k8s.io/v1 or v1beta1 (k8s.io/apimachinery/pkg/apis/meta/v1:
 * what the API server sends for an `as=PartialObjectMetadata[List]` Accept). */
static bool is_partial_metadata(const char *json, size_t as, size_t ae, size_t ks, size_t ke)
{
    static const char kind[] = "\"PartialObjectMetadata\"", v1[] = "\"meta.k8s.io/v1\"",
                      v1beta1[] = "\"meta.k8s.io/v1beta1\"";
    if (ke - ks != sizeof kind - 1 || memcmp(json + ks, kind, sizeof kind - 1)) return false;
    return (ae - as == sizeof v1 - 1 && !memcmp(json + as, v1, sizeof v1 - 1)) ||
           (ae - as == sizeof v1beta1 - 1 && !memcmp(json + as, v1beta1, sizeof v1beta1 - 1));
}

/* A labels / annotations value span that is an object with members (null and {} are recorded as
 * absent: nothing to decode). */
static bool has_members(const char *json, size_t len, const size_t span[2])
{
    return span[1] && json[span[0]] == '{' && json[lop_jscan_ws(json, len, span[0] + 1)] != '}';
}

/* An offset into an entry's json as the struct keeps it (entries are far below 4 GiB: the
 * decoders' max_doc caps them; build() refuses a larger one). */
static uint32_t off32(size_t v) { return (uint32_t)v; }

/* What the validating pass over a document records: the object's span and the spans of the
 * members the entry needs (offsets into the document; 0..0 = absent). */
typedef struct obj_scan {
    size_t s, e;                   /* the object's '{' and its end */
    size_t ms, me, as, ae, ks, ke; /* metadata, apiVersion and kind values */
    size_t cut_s, cut_e;           /* managedFields with one adjacent comma: the bytes to splice out */
    size_t sp[M_COUNT][2];         /* metadata members (meta_keys) */
} obj_scan_t;

/* The metadata object at json[vs]: records the spans of meta_keys' members and managedFields'
 * cut in sc (a repeated metadata member: the last one wins) and its end in *ve. */
static lop_rc_t scan_metadata(const char *json, size_t len, bool trusted, size_t vs, obj_scan_t *sc, size_t *ve,
                              lop_err_t *err)
{
    lop_jscan_iter_t mt;
    memset(sc->sp, 0, sizeof sc->sp);
    sc->cut_s = sc->cut_e = 0;
    (trusted ? lop_jscan_object_begin_trusted : lop_jscan_object_begin)(&mt, json, len, vs);
    size_t prev_end = 0;
    bool first = true;
    int rr;
    while ((rr = lop_jscan_object_next(&mt)) == 1) {
        if (lop_jscan_key_is(&mt, "managedFields")) {
            if (!first) {
                sc->cut_s = prev_end; /* from the end of the previous value: ",\"managedFields\":[...]" */
                sc->cut_e = mt.val_end;
            } else {
                sc->cut_s = mt.member_start;
                size_t j = lop_jscan_ws(json, len, mt.val_end);
                sc->cut_e = j < len && json[j] == ',' ? lop_jscan_ws(json, len, j + 1) : mt.val_end;
            }
        } else {
            for (int k = 0; k < M_COUNT; k++)
                if (mt.key_len == meta_keys[k].len && !memcmp(mt.key, meta_keys[k].key, mt.key_len)) {
                    sc->sp[k][0] = mt.val_start, sc->sp[k][1] = mt.val_end;
                    break;
                }
        }
        first = false;
        prev_end = mt.val_end;
    }
    if (rr < 0) return lop_err_set(err, LOP_EINVAL, 0, NULL, "object metadata: malformed or truncated JSON");
    *ve = mt.pos;
    return LOP_OK;
}

/* One pass validates the whole document (unless the caller already did: LOP_OBJ_TRUSTED) and
 * records in sc the spans build() reads, inside metadata too. Every later walk is over validated
 * bytes and only skips. endp as for build(). */
static lop_rc_t scan_object(const char *json, size_t len, int flags, size_t *endp, obj_scan_t *sc, lop_err_t *err)
{
    bool trusted = flags & LOP_OBJ_TRUSTED;
    lop_jscan_iter_t it;
    memset(sc, 0, sizeof *sc);
    if (!json || (trusted ? lop_jscan_object_begin_trusted : lop_jscan_object_begin)(&it, json, len, 0) != 0)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "object is not a JSON object");
    sc->s = lop_jscan_ws(json, len, 0);
    int r;
    while ((r = lop_jscan_object_key(&it)) == 1) {
        size_t vs = it.val_start, ve, ignored;
        bool is_meta = lop_jscan_key_is(&it, "metadata");
        if (is_meta && json[vs] == '{') {
            if (scan_metadata(json, len, trusted, vs, sc, &ve, err) != LOP_OK) return LOP_EINVAL;
        } else if (trusted) {
            ve = lop_jscan_skip_trusted(json, len, vs);
        } else if (lop_jscan_value(json, len, vs, &ignored, &ve) != 0) {
            return lop_err_set(err, LOP_EINVAL, 0, NULL, "object: malformed or truncated JSON");
        }
        if (is_meta)
            sc->ms = vs, sc->me = ve;
        else if (lop_jscan_key_is(&it, "apiVersion"))
            sc->as = vs, sc->ae = ve;
        else if (lop_jscan_key_is(&it, "kind"))
            sc->ks = vs, sc->ke = ve;
        it.pos = ve;
    }
    if (r < 0) return lop_err_set(err, LOP_EINVAL, 0, NULL, "object: malformed or truncated JSON");
    sc->e = it.pos;
    if (endp)
        *endp = sc->e;
    else if (lop_jscan_ws(json, len, sc->e) != len)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "object: trailing bytes after the JSON object");
    if (sc->me && json[sc->ms] != '{') return lop_err_set(err, LOP_EINVAL, 0, NULL, "object metadata is not an object");
    if (sc->e - sc->s > UINT32_MAX / 2)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "object: %zu bytes is too large for a cache entry", sc->e - sc->s);
    return LOP_OK;
}

/* The apiVersion and kind an entry gets when its document has none (a list's, or a
 * metadata-only reflector's watched kind), and whether they are added. */
typedef struct dflt_gvk {
    const char *api, *kind;
    size_t api_len, kind_len;
    bool add_api, add_kind;
} dflt_gvk_t;

/* How source offsets map into the entry's json: a source offset x >= from lands at
 * meta_at + (x - from), less the cut when x is past it and the cut is stripped. */
typedef struct entry_map {
    size_t from, until, meta_at, cut;
    bool strip;
} entry_map_t;

static uint32_t entry_at(const entry_map_t *m, const obj_scan_t *sc, size_t x)
{
    return off32(m->meta_at + (x - m->from) - (m->strip && x >= sc->cut_e ? m->cut : 0));
}

/* A metadata-only entry's head: {"apiVersion":..,"kind":.., then "metadata": when there is one.
 * Sets m->meta_at, m->from and m->until. */
static void lay_metadata_only_head(layout_t *l, const char *json, const obj_scan_t *sc, const dflt_gvk_t *d,
                                   entry_map_t *m)
{
    lay_lit(l, "{");
    if (sc->as || d->add_api) {
        lay_lit(l, "\"apiVersion\":");
        sc->as ? lay(l, P_SRC, json + sc->as, sc->ae - sc->as) : lay(l, P_STR, d->api, d->api_len);
    }
    if (sc->ks || d->add_kind) {
        lay_lit(l, l->len > 1 ? ",\"kind\":" : "\"kind\":");
        sc->ks ? lay(l, P_SRC, json + sc->ks, sc->ke - sc->ks) : lay(l, P_STR, d->kind, d->kind_len);
    }
    if (sc->me) {
        lay_lit(l, l->len > 1 ? ",\"metadata\":" : "\"metadata\":");
        m->meta_at = l->len;
    }
    m->from = sc->me ? sc->ms : 0;
    m->until = sc->me ? sc->me : 0;
}

/* A full entry's head: '{', then the default apiVersion and kind that list items of built-in kinds
 * lack. Sets m->meta_at, m->from and m->until. */
static void lay_full_head(layout_t *l, const char *json, size_t len, const obj_scan_t *sc, const dflt_gvk_t *d,
                          entry_map_t *m)
{
    lay(l, P_SRC, json + sc->s, 1); /* '{' */
    if (d->add_api) {
        lay_lit(l, "\"apiVersion\":");
        lay(l, P_STR, d->api, d->api_len);
        lay_lit(l, ",");
    }
    if (d->add_kind) {
        lay_lit(l, "\"kind\":");
        lay(l, P_STR, d->kind, d->kind_len);
        lay_lit(l, ",");
    }
    if (l->len > 1 && json[lop_jscan_ws(json, len, sc->s + 1)] == '}') {
        l->n--, l->len--; /* empty object: drop our trailing comma */
    }
    m->meta_at = l->len;
    m->from = sc->s + 1;
    m->until = sc->e;
}

/* Lay out the entry's json (the source's bytes less a stripped managedFields, with the heads
 * above) and record where metadata, managedFields, labels and annotations lie in it. */
static void lay_entry(layout_t *l, lop_obj_t *t, const char *json, size_t len, const obj_scan_t *sc, int flags,
                      const dflt_gvk_t *d)
{
    bool meta_only = flags & LOP_OBJ_METADATA_ONLY;
    entry_map_t m = {.cut = sc->cut_e > sc->cut_s ? sc->cut_e - sc->cut_s : 0};
    m.strip = m.cut && !(flags & LOP_OBJ_KEEP_MANAGED_FIELDS);
    if (meta_only)
        lay_metadata_only_head(l, json, sc, d, &m);
    else
        lay_full_head(l, json, len, sc, d, &m);
    if (m.strip) {
        lay(l, P_SRC, json + m.from, sc->cut_s - m.from);
        lay(l, P_SRC, json + sc->cut_e, m.until - sc->cut_e);
    } else {
        lay(l, P_SRC, json + m.from, m.until - m.from);
    }
    if (meta_only) lay_lit(l, "}");
    if (!sc->me) return;
    t->meta_s_ = entry_at(&m, sc, sc->ms);
    t->meta_e_ = entry_at(&m, sc, sc->me);
    if (m.cut && !m.strip) {
        t->mf_s_ = entry_at(&m, sc, sc->cut_s);
        t->mf_e_ = entry_at(&m, sc, sc->cut_e);
    }
    if (has_members(json, len, sc->sp[M_LABELS])) {
        t->lab_s_ = entry_at(&m, sc, sc->sp[M_LABELS][0]);
        t->lab_e_ = entry_at(&m, sc, sc->sp[M_LABELS][1]);
    }
    if (has_members(json, len, sc->sp[M_ANNOTATIONS])) {
        t->ann_s_ = entry_at(&m, sc, sc->sp[M_ANNOTATIONS][0]);
        t->ann_e_ = entry_at(&m, sc, sc->sp[M_ANNOTATIONS][1]);
    }
}

/* The arena's size: the strings decoded from the members we read, each no longer than its token,
 * sized by those members' spans, not by all of metadata (managedFields alone is ~3.6 KB of a
 * served Pod). Labels and annotations are not decoded here. */
static size_t arena_size(const obj_scan_t *sc, const dflt_gvk_t *d)
{
    size_t strs = (sc->ae - sc->as) + (sc->ke - sc->ks) + d->api_len + d->kind_len + 2;
    for (int k = 0; k < M_COUNT; k++)
        if (k != M_GENERATION && k != M_DELETION && k != M_LABELS && k != M_ANNOTATIONS)
            strs += sc->sp[k][1] - sc->sp[k][0];
    return strs;
}

/* t's apiVersion and kind, decoded into the arena (a non-string one reads as "", the server
 * rejects such objects anyway), or the defaults when the document has none. */
static void decode_gvk(lop_obj_t *t, arena_t *a, const char *json, const obj_scan_t *sc, const dflt_gvk_t *d)
{
    const char *api_version = sc->as ? arena_str(a, json, sc->as, sc->ae) : NULL;
    const char *kind = sc->ks ? arena_str(a, json, sc->ks, sc->ke) : NULL;
    if (d->add_api) {
        api_version = memcpy(a->p + a->len, d->api, d->api_len + 1);
        a->len += d->api_len + 1;
    }
    if (d->add_kind) {
        kind = memcpy(a->p + a->len, d->kind, d->kind_len + 1);
        a->len += d->kind_len + 1;
    }
    t->api_version = api_version ? api_version : "";
    t->kind = kind ? kind : "";
}

/* endp NULL: json[0..len) is exactly one object (whitespace around it allowed); else the object
 * starts at json[0] (whitespace allowed), may be followed by anything, and *endp gets its end.
 * Steps: scan (validate, record spans), decode the fields the struct holds into an arena, lay out
 * the entry's json, assemble the one allocation. */
static lop_rc_t build(const char *json, size_t len, int flags, const char *dflt_api_version, const char *dflt_kind,
                      size_t *endp, lop_obj_t **out, lop_err_t *err)
{
    lop_heap_advise(); /* the cache grows here: huge pages for a large heap (host/util/malloc_tune.h) */
    obj_scan_t sc;
    if (scan_object(json, len, flags, endp, &sc, err) != LOP_OK) return LOP_EINVAL;
    dflt_gvk_t d = {dflt_api_version,
                    dflt_kind,
                    dflt_api_version ? strlen(dflt_api_version) : 0,
                    dflt_kind ? strlen(dflt_kind) : 0,
                    false,
                    false};
    /* the API server's metadata-only view of an object: cached as the watched kind's entry */
    if ((flags & LOP_OBJ_METADATA_ONLY) && d.api_len && d.kind_len &&
        is_partial_metadata(json, sc.as, sc.ae, sc.ks, sc.ke))
        sc.as = sc.ae = sc.ks = sc.ke = 0;
    d.add_api = !sc.as && d.api_len;
    d.add_kind = !sc.ks && d.kind_len;
    size_t strs = arena_size(&sc, &d);
    char stack_strs[1024];
    arena_t a = {strs <= sizeof stack_strs ? stack_strs : lop_xmalloc(strs), 0, strs};
    uidvec_t uids = {NULL, 0, 8, {NULL}};
    uids.v = uids.small;
    lop_obj_t t = {0};
    t.refs_ = 1;
    decode_gvk(&t, &a, json, &sc, &d);
    lop_rc_t rc = fill_meta(&t, &a, &uids, json, len, sc.sp, err);
    if (rc == LOP_OK) {
        layout_t l = {.n = 0, .len = 0};
        lay_entry(&l, &t, json, len, &sc, flags, &d);
        *out = assemble(&t, &l, &a, &uids);
    }
    if (a.p != stack_strs) free(a.p);
    if (uids.v != uids.small) free(uids.v);
    return rc;
}

const json_t *lop_obj_metadata(const lop_obj_t *co)
{
    lop_obj_t *o = (lop_obj_t *)co;
    const json_t *m = atomic_load_explicit(&o->metadata, memory_order_acquire);
    if (m) return m;
    json_t *t = NULL;
    if (o->meta_e_ > o->meta_s_) {
        if (o->mf_e_ > o->mf_s_) {
            lop_buf_t b = LOP_BUF_INIT;
            lop_buf_append(&b, o->json + o->meta_s_, o->mf_s_ - o->meta_s_);
            lop_buf_append(&b, o->json + o->mf_e_, o->meta_e_ - o->mf_e_);
            t = json_loadb(b.data, b.len, 0, NULL);
            lop_buf_free(&b);
        } else {
            t = json_loadb(o->json + o->meta_s_, o->meta_e_ - o->meta_s_, 0, NULL);
        }
    }
    if (!t || !json_is_object(t)) {
        json_decref(t);
        t = json_object();
    }
    /* Only the last of a repeated managedFields member is cut out of json (no API server sends
     * two); the tree never has one either way. */
    json_object_del(t, "managedFields");
    const json_t *expected = NULL;
    if (!atomic_compare_exchange_strong_explicit(&o->metadata, &expected, t, memory_order_acq_rel,
                                                 memory_order_acquire)) {
        json_decref(t); /* another thread built it first */
        return expected;
    }
    return t;
}

lop_rc_t lop_obj_new_item(const char *json, size_t len, int flags, const char *dflt_api_version, const char *dflt_kind,
                          lop_obj_t **out, lop_err_t *err)
{
    return build(json, len, flags, dflt_api_version, dflt_kind, NULL, out, err);
}

lop_rc_t lop_obj_new(const char *json, size_t len, int flags, lop_obj_t **out, lop_err_t *err)
{
    return build(json, len, flags, NULL, NULL, NULL, out, err);
}

lop_rc_t lop_obj_new_prefix(const char *json, size_t len, int flags, const char *api_version, const char *kind,
                            size_t *end, lop_obj_t **out, lop_err_t *err)
{
    return build(json, len, flags, api_version, kind, end, out, err);
}

lop_obj_t *lop_obj_ref(lop_obj_t *o)
{
    atomic_fetch_add_explicit((_Atomic int *)&o->refs_, 1, memory_order_relaxed);
    return o;
}

void lop_obj_unref(lop_obj_t *o)
{
    if (!o) return;
    if (atomic_fetch_sub_explicit((_Atomic int *)&o->refs_, 1, memory_order_acq_rel) != 1) return;
    json_decref((json_t *)atomic_load_explicit(&o->metadata, memory_order_acquire));
    free(atomic_load_explicit(&o->lab_kv_, memory_order_acquire));
    free(atomic_load_explicit(&o->ann_kv_, memory_order_acquire));
    free(o); /* json, owner uids and strings are in the same block */
}

/* One decoded map (labels or annotations): the strings follow the array in the same block. */
struct lop_obj_kvs {
    size_t n;
    lop_kv_t kv[];
};

/* Decode the checked map at json[s..e) of o into a new block (the caller frees it). */
static struct lop_obj_kvs *decode_kvs(const lop_obj_t *o, uint32_t s, uint32_t e)
{
    /* decode into a scratch arena sized by the span, then copy into one exact block */
    size_t span = e - s;
    arena_t a = {lop_xmalloc(span ? span : 1), 0, span};
    kvvec_t kv;
    KVVEC_INIT(kv);
    decode_strmap(&a, o->json, o->json_len, s, e, &kv);
    size_t arr = sizeof(struct lop_obj_kvs) + kv.n * sizeof(lop_kv_t);
    struct lop_obj_kvs *k = lop_xmalloc(arr + a.len);
    k->n = kv.n;
    char *strs = (char *)k + arr;
    memcpy(strs, a.p, a.len);
    for (size_t i = 0; i < kv.n; i++)
        k->kv[i] = (lop_kv_t){moved(kv.v[i].key, &a, strs), moved(kv.v[i].value, &a, strs)};
    free(a.p);
    if (kv.v != kv.small) free(kv.v);
    return k;
}

/* The map kept in *slot, decoded and installed on the first call (NULL when the span is empty). */
static const struct lop_obj_kvs *kvs_of(const lop_obj_t *o, struct lop_obj_kvs *_Atomic *slot, uint32_t s, uint32_t e)
{
    if (!e) return NULL;
    struct lop_obj_kvs *k = atomic_load_explicit(slot, memory_order_acquire);
    if (k) return k;
    k = decode_kvs(o, s, e);
    struct lop_obj_kvs *expected = NULL;
    if (!atomic_compare_exchange_strong_explicit(slot, &expected, k, memory_order_acq_rel, memory_order_acquire)) {
        free(k); /* another thread decoded it first */
        return expected;
    }
    return k;
}

static const lop_kv_t *kvs_array(const struct lop_obj_kvs *k, size_t *n)
{
    *n = k ? k->n : 0;
    return *n ? k->kv : NULL;
}

const lop_kv_t *lop_obj_labels(const lop_obj_t *co, size_t *n)
{
    lop_obj_t *o = (lop_obj_t *)co;
    return kvs_array(kvs_of(o, &o->lab_kv_, o->lab_s_, o->lab_e_), n);
}

const lop_kv_t *lop_obj_annotations(const lop_obj_t *co, size_t *n)
{
    lop_obj_t *o = (lop_obj_t *)co;
    return kvs_array(kvs_of(o, &o->ann_kv_, o->ann_s_, o->ann_e_), n);
}

/* Two maps are equal when they have the same keys with the same values (keys are unique). */
static bool kv_equal(const lop_kv_t *a, size_t na, const lop_kv_t *b, size_t nb)
{
    if (na != nb) return false;
    for (size_t i = 0; i < na; i++) {
        bool found = false;
        for (size_t j = 0; j < nb && !found; j++)
            found = strcmp(a[i].key, b[j].key) == 0 && strcmp(a[i].value, b[j].value) == 0;
        if (!found) return false;
    }
    return true;
}

/* The map kept in *slot, or a scratch decode of it put in *tmp (freed by the caller). */
static const struct lop_obj_kvs *kvs_peek(const lop_obj_t *o, struct lop_obj_kvs *_Atomic *slot, uint32_t s, uint32_t e,
                                          struct lop_obj_kvs **tmp)
{
    *tmp = NULL;
    if (!e) return NULL;
    struct lop_obj_kvs *k = atomic_load_explicit(slot, memory_order_acquire);
    return k ? k : (*tmp = decode_kvs(o, s, e));
}

static bool maps_equal(const lop_obj_t *a, struct lop_obj_kvs *_Atomic *as, uint32_t a0, uint32_t a1,
                       const lop_obj_t *b, struct lop_obj_kvs *_Atomic *bs, uint32_t b0, uint32_t b1)
{
    if (a1 - a0 == b1 - b0 && memcmp(a->json + a0, b->json + b0, a1 - a0) == 0) return true;
    struct lop_obj_kvs *ta, *tb;
    size_t na, nb;
    const lop_kv_t *x = kvs_array(kvs_peek(a, as, a0, a1, &ta), &na), *y = kvs_array(kvs_peek(b, bs, b0, b1, &tb), &nb);
    bool eq = kv_equal(x, na, y, nb);
    free(ta);
    free(tb);
    return eq;
}

bool lop_obj_labels_equal(const lop_obj_t *ca, const lop_obj_t *cb)
{
    lop_obj_t *a = (lop_obj_t *)ca, *b = (lop_obj_t *)cb;
    return maps_equal(a, &a->lab_kv_, a->lab_s_, a->lab_e_, b, &b->lab_kv_, b->lab_s_, b->lab_e_);
}

bool lop_obj_annotations_equal(const lop_obj_t *ca, const lop_obj_t *cb)
{
    lop_obj_t *a = (lop_obj_t *)ca, *b = (lop_obj_t *)cb;
    return maps_equal(a, &a->ann_kv_, a->ann_s_, a->ann_e_, b, &b->ann_kv_, b->ann_s_, b->ann_e_);
}

static const char *kv_find(const lop_kv_t *kv, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(kv[i].key, key) == 0) return kv[i].value;
    return NULL;
}

const char *lop_obj_label(const lop_obj_t *o, const char *key)
{
    size_t n;
    const lop_kv_t *kv = lop_obj_labels(o, &n);
    return kv_find(kv, n, key);
}

const char *lop_obj_annotation(const lop_obj_t *o, const char *key)
{
    size_t n;
    const lop_kv_t *kv = lop_obj_annotations(o, &n);
    return kv_find(kv, n, key);
}

bool lop_obj_owned_by(const lop_obj_t *o, const char *uid)
{
    for (size_t i = 0; i < o->nowners; i++)
        if (strcmp(o->owner_uids[i], uid) == 0) return true;
    return false;
}
