/* object.c — immutable, refcounted cache entries (see object.h). */
#include "host/kube/object.h"

#include "host/kube/jsonscan.h"
#include "host/util/buf.h"
#include "host/util/heap.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t key_hash_of(const lop_obj_t *o);

/* Decoded strings live in one arena per object, sized up front so it never moves: a decoded
 * string plus its NUL is never longer than its quoted JSON token. */
typedef struct arena {
    char *p;
    size_t len, cap;
} arena_t;

static bool hex4(const char *r, const char *end, uint32_t *out)
{
    if (end - r < 4)
        return false;
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        char c = r[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return false;
        v = v << 4 | (uint32_t)d;
    }
    *out = v;
    return true;
}

/* Decode the JSON string token p[s..e) (quotes included) into the arena. NULL when it is not a
 * string or has a bad escape (or \u0000, which jansson refuses too). */
static const char *arena_str(arena_t *a, const char *p, size_t s, size_t e)
{
    if (e - s < 2 || p[s] != '"' || p[e - 1] != '"' || a->len + (e - s) > a->cap)
        return NULL;
    char *out = a->p + a->len, *w = out;
    const char *r = p + s + 1, *end = p + e - 1;
    while (r < end) {
        const char *bs = memchr(r, '\\', (size_t)(end - r));
        size_t chunk = (size_t)((bs ? bs : end) - r);
        memcpy(w, r, chunk);
        w += chunk;
        r += chunk;
        if (!bs)
            break;
        if (++r >= end)
            return NULL;
        char c = *r++;
        switch (c) {
        case '"': case '\\': case '/': *w++ = c; break;
        case 'b': *w++ = '\b'; break;
        case 'f': *w++ = '\f'; break;
        case 'n': *w++ = '\n'; break;
        case 'r': *w++ = '\r'; break;
        case 't': *w++ = '\t'; break;
        case 'u': {
            uint32_t cp, lo;
            if (!hex4(r, end, &cp))
                return NULL;
            r += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (end - r < 6 || r[0] != '\\' || r[1] != 'u' || !hex4(r + 2, end, &lo) || lo < 0xDC00 || lo > 0xDFFF)
                    return NULL;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                r += 6;
            } else if ((cp >= 0xDC00 && cp <= 0xDFFF) || cp == 0) {
                return NULL;
            }
            if (cp < 0x80) {
                *w++ = (char)cp;
            } else if (cp < 0x800) {
                *w++ = (char)(0xC0 | cp >> 6);
                *w++ = (char)(0x80 | (cp & 0x3F));
            } else if (cp < 0x10000) {
                *w++ = (char)(0xE0 | cp >> 12);
                *w++ = (char)(0x80 | (cp >> 6 & 0x3F));
                *w++ = (char)(0x80 | (cp & 0x3F));
            } else {
                *w++ = (char)(0xF0 | cp >> 18);
                *w++ = (char)(0x80 | (cp >> 12 & 0x3F));
                *w++ = (char)(0x80 | (cp >> 6 & 0x3F));
                *w++ = (char)(0x80 | (cp & 0x3F));
            }
            break;
        }
        default:
            return NULL;
        }
    }
    *w++ = '\0';
    a->len = (size_t)(w - a->p);
    return out;
}

/* A string-or-null member value at p[s..e): "" for null, NULL (and *bad) otherwise. */
static const char *str_or_empty(arena_t *a, const char *p, size_t s, size_t e, bool *bad)
{
    if (!e || p[s] == 'n')
        return "";
    const char *r = arena_str(a, p, s, e);
    if (!r)
        *bad = true;
    return r ? r : "";
}

/* Labels or annotations while they are scanned: on the stack up to 16, on the heap beyond. */
typedef struct kvvec {
    lop_kv_t *v;
    size_t n, cap;
    lop_kv_t small[16];
} kvvec_t;

#define KVVEC_INIT(kv) ((kv).v = (kv).small, (kv).n = 0, (kv).cap = sizeof (kv).small / sizeof (kv).small[0])

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
        if (kv->v != kv->small)
            free(kv->v);
        kv->v = grown;
        kv->cap *= 2;
    }
    kv->v[kv->n++] = (lop_kv_t){k, v};
}

/* labels / annotations: null or an object of strings. */
static lop_rc_t scan_strmap(arena_t *a, const char *p, size_t n, size_t s, size_t e, kvvec_t *out,
                            const char *what, lop_err_t *err)
{
    if (!e || p[s] == 'n')
        return LOP_OK;
    lop_jscan_iter_t it;
    if (p[s] != '{' || lop_jscan_object_begin_trusted(&it, p, n, s) != 0)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "object metadata.labels/annotations is not an object");
    int r;
    while ((r = lop_jscan_object_next(&it)) == 1) {
        size_t ks = (size_t)(it.key - p) - 1;
        const char *k = arena_str(a, p, ks, ks + it.key_len + 2);
        if (!k)
            return lop_err_set(err, LOP_EINVAL, 0, NULL, "object metadata.%s has a malformed key", what);
        const char *v = p[it.val_start] == '"' ? arena_str(a, p, it.val_start, it.val_end) : NULL;
        if (!v)
            return lop_err_set(err, LOP_EINVAL, 0, NULL, "object metadata.%s[%s] is not a string", what, k);
        kv_set(out, k, v);
    }
    if (r < 0)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "object metadata.%s: malformed JSON", what);
    return LOP_OK;
}

/* generation: null or an integer that fits int64 (a fraction or exponent makes it a real). */
static bool parse_int64(const char *p, size_t s, size_t e, int64_t *out)
{
    size_t i = s;
    bool neg = false;
    if (i < e && p[i] == '-')
        neg = true, i++;
    if (i == e)
        return false;
    uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; i < e; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        unsigned d = (unsigned)(p[i] - '0');
        if (v > (lim - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

static lop_rc_t scan_owners(lop_obj_t *o, arena_t *a, const char *p, size_t n, size_t s, size_t e, lop_err_t *err)
{
    if (!e || p[s] == 'n')
        return LOP_OK;
    lop_jscan_iter_t it, rt;
    if (p[s] != '[' || lop_jscan_array_begin_trusted(&it, p, n, s) != 0)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "object metadata.ownerReferences is not an array");
    size_t cap = 0, i = 0;
    int r;
    for (; (r = lop_jscan_array_next(&it)) == 1; i++) {
        if (p[it.val_start] != '{' || lop_jscan_object_begin_trusted(&rt, p, n, it.val_start) != 0)
            return lop_err_set(err, LOP_EINVAL, 0, NULL, "object metadata.ownerReferences[%zu] is not an object", i);
        size_t sp[4][2] = {{0, 0}, {0, 0}, {0, 0}, {0, 0}};
        bool controller = false;
        int rr;
        while ((rr = lop_jscan_object_next(&rt)) == 1) {
            int f = lop_jscan_key_is(&rt, "apiVersion") ? 0 : lop_jscan_key_is(&rt, "kind") ? 1
                  : lop_jscan_key_is(&rt, "name") ? 2 : lop_jscan_key_is(&rt, "uid") ? 3 : -1;
            if (f >= 0)
                sp[f][0] = rt.val_start, sp[f][1] = rt.val_end;
            else if (lop_jscan_key_is(&rt, "controller"))
                controller = rt.val_end - rt.val_start == 4 && memcmp(p + rt.val_start, "true", 4) == 0;
        }
        if (rr < 0)
            return lop_err_set(err, LOP_EINVAL, 0, NULL, "object metadata.ownerReferences[%zu]: malformed JSON", i);
        bool bad = false;
        lop_owner_ref_t ref = {str_or_empty(a, p, sp[0][0], sp[0][1], &bad), str_or_empty(a, p, sp[1][0], sp[1][1], &bad),
                               str_or_empty(a, p, sp[2][0], sp[2][1], &bad), str_or_empty(a, p, sp[3][0], sp[3][1], &bad)};
        if (bad)
            return lop_err_set(err, LOP_EINVAL, 0, NULL, "object metadata.ownerReferences[%zu] has a non-string field", i);
        if (i == cap) {
            cap = cap ? cap * 2 : 4;
            o->uids_ = lop_xrealloc(o->uids_, cap * sizeof *o->uids_);
        }
        o->uids_[i] = ref.uid;
        if (!o->has_controller && controller) {
            o->has_controller = true;
            o->controller = ref;
        }
    }
    if (r < 0)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "object metadata.ownerReferences: malformed JSON");
    o->nowners = i;
    return LOP_OK;
}

/* Metadata members we read; the last occurrence of a repeated key wins, as in a parsed object. */
enum { M_NAMESPACE, M_NAME, M_UID, M_RV, M_GENERATION, M_DELETION, M_LABELS, M_ANNOTATIONS, M_OWNERS, M_COUNT };
#define KEY(k) {k, sizeof k - 1}
static const struct {
    const char *key;
    size_t len;
} meta_keys[M_COUNT] = {KEY("namespace"), KEY("name"), KEY("uid"), KEY("resourceVersion"), KEY("generation"),
                        KEY("deletionTimestamp"), KEY("labels"), KEY("annotations"), KEY("ownerReferences")};
#undef KEY

/* Fill o's metadata fields from the member spans of the metadata object in p. */
static lop_rc_t fill_meta(lop_obj_t *o, arena_t *a, const char *p, size_t n, size_t sp[M_COUNT][2], lop_err_t *err)
{
    bool bad = false;
    o->namespace_ = str_or_empty(a, p, sp[M_NAMESPACE][0], sp[M_NAMESPACE][1], &bad);
    o->name = str_or_empty(a, p, sp[M_NAME][0], sp[M_NAME][1], &bad);
    o->uid = str_or_empty(a, p, sp[M_UID][0], sp[M_UID][1], &bad);
    o->rv = str_or_empty(a, p, sp[M_RV][0], sp[M_RV][1], &bad);
    if (bad)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "object metadata: name, namespace, uid and resourceVersion must be strings");
    size_t gs = sp[M_GENERATION][0], ge = sp[M_GENERATION][1];
    if (ge && p[gs] != 'n' && !parse_int64(p, gs, ge, &o->generation))
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "object metadata.generation is not an integer");
    o->deleting = sp[M_DELETION][1] && p[sp[M_DELETION][0]] != 'n';

    kvvec_t labels, ann;
    KVVEC_INIT(labels);
    KVVEC_INIT(ann);
    lop_rc_t rc = scan_strmap(a, p, n, sp[M_LABELS][0], sp[M_LABELS][1], &labels, "labels", err);
    if (rc == LOP_OK)
        rc = scan_strmap(a, p, n, sp[M_ANNOTATIONS][0], sp[M_ANNOTATIONS][1], &ann, "annotations", err);
    if (rc == LOP_OK && labels.n + ann.n) {
        o->kv_ = lop_xmalloc((labels.n + ann.n) * sizeof *o->kv_);
        if (labels.n)
            memcpy(o->kv_, labels.v, labels.n * sizeof *o->kv_);
        if (ann.n)
            memcpy(o->kv_ + labels.n, ann.v, ann.n * sizeof *o->kv_);
    }
    if (labels.v != labels.small)
        free(labels.v);
    if (ann.v != ann.small)
        free(ann.v);
    if (rc != LOP_OK)
        return rc;
    o->labels = o->kv_;
    o->nlabels = labels.n;
    o->annotations = o->kv_ ? o->kv_ + labels.n : NULL;
    o->nannotations = ann.n;

    rc = scan_owners(o, a, p, n, sp[M_OWNERS][0], sp[M_OWNERS][1], err);
    if (rc != LOP_OK)
        return rc;
    o->owner_uids = o->uids_;
    o->khash_ = key_hash_of(o);
    if (!o->has_controller)
        o->controller = (lop_owner_ref_t){"", "", "", ""};
    return LOP_OK;
}

/* Append "name":<value> for a member: its bytes json[vs..ve) when present, else the default
 * string (when given), whose copy goes to the arena and *val. */
static void put_member(lop_buf_t *b, const char *name, const char *json, size_t vs, size_t ve,
                       const char *dflt, arena_t *a, const char **val)
{
    if (!vs && !(dflt && *dflt)) return; /* as for full entries: an empty default adds nothing */
    if (b->len > 1) lop_buf_putc(b, ',');
    lop_buf_putc(b, '"');
    lop_buf_puts(b, name);
    lop_buf_puts(b, "\":");
    if (vs) {
        lop_buf_append(b, json + vs, ve - vs);
        return;
    }
    size_t l = strlen(dflt);
    lop_buf_json_str(b, dflt, l);
    *val = memcpy(a->p + a->len, dflt, l + 1);
    a->len += l + 1;
}

/* Finish o (allocated by build(), its apiVersion and kind decoded when present) as the entry of a
 * metadata-only cache: {"apiVersion":..,"kind":..,"metadata":{..}} from the spans build()
 * recorded in json[0..len); the managedFields cut [cut_s, cut_e) is left out when strip. */
static lop_rc_t build_metadata_only(lop_obj_t *o, const char *json, size_t len, size_t as, size_t ae, size_t ks,
                                    size_t ke, size_t ms, size_t me, size_t cut_s, size_t cut_e, bool strip,
                                    const char *api_version, const char *kind, const char *dflt_api_version,
                                    const char *dflt_kind, arena_t *a, size_t sp[M_COUNT][2], lop_obj_t **out,
                                    lop_err_t *err)
{
    lop_buf_t b = LOP_BUF_INIT;
    /* exact, as for full entries: the cached bytes live as long as the entry */
    size_t need = sizeof "{\"apiVersion\":,\"kind\":,\"metadata\":}" - 1 + (ae - as) + (ke - ks) + (me - ms) -
                  (strip && cut_e > cut_s ? cut_e - cut_s : 0);
    if (!as && dflt_api_version && *dflt_api_version)
        need += lop_json_str_len(dflt_api_version, strlen(dflt_api_version));
    if (!ks && dflt_kind && *dflt_kind) need += lop_json_str_len(dflt_kind, strlen(dflt_kind));
    lop_buf_reserve_exact(&b, need);
    lop_buf_putc(&b, '{');
    put_member(&b, "apiVersion", json, as, ae, dflt_api_version, a, &api_version);
    put_member(&b, "kind", json, ks, ke, dflt_kind, a, &kind);
    if (me) {
        if (b.len > 1) lop_buf_putc(&b, ',');
        lop_buf_puts(&b, "\"metadata\":");
        o->meta_s_ = b.len;
        if (cut_e > cut_s && strip) {
            lop_buf_append(&b, json + ms, cut_s - ms);
            lop_buf_append(&b, json + cut_e, me - cut_e);
        } else {
            if (cut_e > cut_s) { /* kept: lop_obj_metadata still leaves it out */
                o->mf_s_ = b.len + (cut_s - ms);
                o->mf_e_ = b.len + (cut_e - ms);
            }
            lop_buf_append(&b, json + ms, me - ms);
        }
        o->meta_e_ = b.len;
    }
    lop_buf_putc(&b, '}');
    o->api_version = api_version ? api_version : "";
    o->kind = kind ? kind : "";
    o->json_len = b.len;
    o->json = lop_buf_steal(&b);
    lop_rc_t rc = fill_meta(o, a, json, len, sp, err);
    if (rc != LOP_OK) {
        lop_obj_unref(o);
        return rc;
    }
    *out = o;
    return LOP_OK;
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

/* endp NULL: json[0..len) is exactly one object (whitespace around it allowed); else the object
 * starts at json[0] (whitespace allowed), may be followed by anything, and *endp gets its end. */
static lop_rc_t build(const char *json, size_t len, int flags, const char *dflt_api_version,
                      const char *dflt_kind, size_t *endp, lop_obj_t **out, lop_err_t *err)
{
    lop_heap_advise(); /* the cache grows here: huge pages for a large heap (host/util/heap.h) */
    /* One pass validates the whole document (unless the caller already did) and, inside
     * metadata, records the spans we read and managedFields with one adjacent comma (the bytes
     * to splice out). Every later walk is over validated bytes and only skips. */
    bool trusted = flags & LOP_OBJ_TRUSTED;
    lop_jscan_iter_t it, mt;
    if (!json || (trusted ? lop_jscan_object_begin_trusted : lop_jscan_object_begin)(&it, json, len, 0) != 0)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "object is not a JSON object");
    size_t s = lop_jscan_ws(json, len, 0), ms = 0, me = 0, as = 0, ae = 0, ks = 0, ke = 0;
    size_t cut_s = 0, cut_e = 0, sp[M_COUNT][2];
    memset(sp, 0, sizeof sp);
    int r;
    while ((r = lop_jscan_object_key(&it)) == 1) {
        size_t vs = it.val_start, ve, ignored;
        bool is_meta = lop_jscan_key_is(&it, "metadata");
        if (is_meta && json[vs] == '{') {
            /* a repeated metadata member: the last one wins */
            memset(sp, 0, sizeof sp);
            cut_s = cut_e = 0;
            (trusted ? lop_jscan_object_begin_trusted : lop_jscan_object_begin)(&mt, json, len, vs);
            size_t prev_end = 0;
            bool first = true;
            int rr;
            while ((rr = lop_jscan_object_next(&mt)) == 1) {
                if (lop_jscan_key_is(&mt, "managedFields")) {
                    if (!first) {
                        cut_s = prev_end; /* from the end of the previous value: ",\"managedFields\":[...]" */
                        cut_e = mt.val_end;
                    } else {
                        cut_s = mt.member_start;
                        size_t j = lop_jscan_ws(json, len, mt.val_end);
                        cut_e = j < len && json[j] == ',' ? lop_jscan_ws(json, len, j + 1) : mt.val_end;
                    }
                } else {
                    for (int k = 0; k < M_COUNT; k++)
                        if (mt.key_len == meta_keys[k].len && !memcmp(mt.key, meta_keys[k].key, mt.key_len)) {
                            sp[k][0] = mt.val_start, sp[k][1] = mt.val_end;
                            break;
                        }
                }
                first = false;
                prev_end = mt.val_end;
            }
            if (rr < 0)
                return lop_err_set(err, LOP_EINVAL, 0, NULL, "object metadata: malformed or truncated JSON");
            ve = mt.pos;
        } else if (trusted) {
            ve = lop_jscan_skip_trusted(json, len, vs);
        } else if (lop_jscan_value(json, len, vs, &ignored, &ve) != 0) {
            return lop_err_set(err, LOP_EINVAL, 0, NULL, "object: malformed or truncated JSON");
        }
        if (is_meta)
            ms = vs, me = ve;
        else if (lop_jscan_key_is(&it, "apiVersion"))
            as = vs, ae = ve;
        else if (lop_jscan_key_is(&it, "kind"))
            ks = vs, ke = ve;
        it.pos = ve;
    }
    if (r < 0)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "object: malformed or truncated JSON");
    size_t e = it.pos;
    if (endp)
        *endp = e;
    else if (lop_jscan_ws(json, len, e) != len)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "object: trailing bytes after the JSON object");
    if (me && json[ms] != '{')
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "object metadata is not an object");

    size_t dal = dflt_api_version ? strlen(dflt_api_version) : 0, dkl = dflt_kind ? strlen(dflt_kind) : 0;
    /* the API server's metadata-only view of an object: cached as the watched kind's entry */
    if ((flags & LOP_OBJ_METADATA_ONLY) && dal && dkl && is_partial_metadata(json, as, ae, ks, ke))
        as = ae = ks = ke = 0;
    /* The arena holds the strings decoded from the members we read, each no longer than its
     * token: sized by those members' spans, not by all of metadata (managedFields alone is
     * ~3.6 KB of a served Pod and was held once more here for every cached object). */
    size_t strs = (ae - as) + (ke - ks) + dal + dkl + 2;
    for (int k = 0; k < M_COUNT; k++)
        if (k != M_GENERATION && k != M_DELETION)
            strs += sp[k][1] - sp[k][0];
    arena_t a = {NULL, 0, strs};
    a.p = lop_xmalloc(a.cap);
    lop_obj_t *o = lop_xcalloc(1, sizeof *o);
    o->refs_ = 1;
    o->strs_ = a.p;
    /* a non-string apiVersion or kind reads as "" (the server rejects such objects anyway) */
    const char *api_version = as ? arena_str(&a, json, as, ae) : NULL;
    const char *kind = ks ? arena_str(&a, json, ks, ke) : NULL;

    size_t body = s + 1, cut = cut_e > cut_s ? cut_e - cut_s : 0;
    bool strip = cut && !(flags & LOP_OBJ_KEEP_MANAGED_FIELDS);
    if (flags & LOP_OBJ_METADATA_ONLY)
        return build_metadata_only(o, json, len, as, ae, ks, ke, ms, me, cut_s, cut_e, strip, api_version, kind,
                                   dflt_api_version, dflt_kind, &a, sp, out, err);
    /* The entry's JSON is kept for its lifetime: allocate exactly what it needs (a rounded-up
     * buffer would leave up to half of every cached object as slack). */
    size_t need = 1 + (strip ? (cut_s - body) + (e - cut_e) : e - body);
    if (!as && dal)
        need += sizeof "\"apiVersion\":," - 1 + lop_json_str_len(dflt_api_version, dal);
    if (!ks && dkl)
        need += sizeof "\"kind\":," - 1 + lop_json_str_len(dflt_kind, dkl);
    lop_buf_t b = LOP_BUF_INIT;
    lop_buf_reserve_exact(&b, need);
    lop_buf_append(&b, json + s, 1); /* '{' */
    /* list items of built-in kinds carry no kind/apiVersion: add the list's */
    if (!as && dal) {
        lop_buf_puts(&b, "\"apiVersion\":");
        lop_buf_json_str(&b, dflt_api_version, dal);
        lop_buf_putc(&b, ',');
        api_version = memcpy(a.p + a.len, dflt_api_version, dal + 1);
        a.len += dal + 1;
    }
    if (!ks && dkl) {
        lop_buf_puts(&b, "\"kind\":");
        lop_buf_json_str(&b, dflt_kind, dkl);
        lop_buf_putc(&b, ',');
        kind = memcpy(a.p + a.len, dflt_kind, dkl + 1);
        a.len += dkl + 1;
    }
    o->api_version = api_version ? api_version : "";
    o->kind = kind ? kind : "";
    if (b.len > 1 && json[lop_jscan_ws(json, len, body)] == '}')
        b.len--; /* empty object: drop our trailing comma */
    size_t prefix = b.len;
    if (strip) {
        lop_buf_append(&b, json + body, cut_s - body);
        lop_buf_append(&b, json + cut_e, e - cut_e);
    } else {
        lop_buf_append(&b, json + body, e - body);
    }
    /* where metadata (and a kept managedFields cut) now sit in b */
    if (me) {
        o->meta_s_ = prefix + (ms - body);
        o->meta_e_ = prefix + (me - body) - (strip ? cut : 0);
        if (cut && !strip) {
            o->mf_s_ = prefix + (cut_s - body);
            o->mf_e_ = prefix + (cut_e - body);
        }
    }
    o->json_len = b.len;
    o->json = lop_buf_steal(&b);

    lop_rc_t rc = fill_meta(o, &a, json, len, sp, err);
    if (rc != LOP_OK) {
        lop_obj_unref(o);
        return rc;
    }
    *out = o;
    return LOP_OK;
}

const json_t *lop_obj_metadata(const lop_obj_t *co)
{
    lop_obj_t *o = (lop_obj_t *)co;
    const json_t *m = atomic_load_explicit(&o->metadata, memory_order_acquire);
    if (m)
        return m;
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
    const json_t *expected = NULL;
    if (!atomic_compare_exchange_strong_explicit(&o->metadata, &expected, t, memory_order_acq_rel,
                                                 memory_order_acquire)) {
        json_decref(t); /* another thread built it first */
        return expected;
    }
    return t;
}

lop_rc_t lop_obj_new_item(const char *json, size_t len, int flags, const char *dflt_api_version,
                          const char *dflt_kind, lop_obj_t **out, lop_err_t *err)
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
    if (!o)
        return;
    if (atomic_fetch_sub_explicit((_Atomic int *)&o->refs_, 1, memory_order_acq_rel) != 1)
        return;
    json_decref((json_t *)atomic_load_explicit(&o->metadata, memory_order_acquire));
    free(o->kv_);
    free(o->uids_);
    free(o->strs_);
    free((char *)o->json);
    free(o);
}

int lop_obj_key(const lop_obj_t *o, char *buf, size_t len)
{
    /* on every event's path (store, reflector, handlers): no printf */
    size_t nsl = strlen(o->namespace_), nl = strlen(o->name), full = nsl ? nsl + 1 + nl : nl;
    if (len) {
        size_t w = 0;
        if (nsl) {
            size_t c = nsl < len - 1 ? nsl : len - 1;
            memcpy(buf, o->namespace_, c);
            w = c;
            if (w < len - 1)
                buf[w++] = '/';
        }
        size_t c = nl < len - 1 - w ? nl : len - 1 - w;
        memcpy(buf + w, o->name, c);
        buf[w + c] = '\0';
    }
    return (int)full;
}

#define FNV_OFFSET UINT32_C(2166136261)
#define FNV_PRIME UINT32_C(16777619)

static uint32_t fnv(uint32_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= FNV_PRIME;
    }
    return h;
}

uint32_t lop_key_hash(const char *key, size_t len) { return fnv(FNV_OFFSET, key, len); }

static uint32_t key_hash_of(const lop_obj_t *o)
{
    uint32_t h = FNV_OFFSET;
    if (*o->namespace_)
        h = fnv(fnv(h, o->namespace_, strlen(o->namespace_)), "/", 1);
    return fnv(h, o->name, strlen(o->name));
}

uint32_t lop_obj_key_hash(const lop_obj_t *o) { return o->khash_; }

bool lop_obj_key_eq(const lop_obj_t *o, const char *key, size_t len)
{
    size_t nsl = strlen(o->namespace_);
    if (nsl) {
        if (len <= nsl || memcmp(key, o->namespace_, nsl) != 0 || key[nsl] != '/')
            return false;
        key += nsl + 1;
        len -= nsl + 1;
    }
    return strlen(o->name) == len && memcmp(key, o->name, len) == 0;
}

/* The i-th byte of o's key as an unsigned char, or -1 past its end. */
static int key_byte(const lop_obj_t *o, size_t nsl, size_t i)
{
    if (nsl) {
        if (i < nsl)
            return (unsigned char)o->namespace_[i];
        if (i == nsl)
            return '/';
        i -= nsl + 1;
    }
    unsigned char c = (unsigned char)o->name[i];
    return c ? c : -1; /* reading name[i] is safe: i never passes its NUL (we stop there) */
}

int lop_obj_key_cmp(const lop_obj_t *a, const lop_obj_t *b)
{
    size_t an = strlen(a->namespace_), bn = strlen(b->namespace_);
    if (an && an == bn) { /* the common case: same namespace, compare names */
        int c = memcmp(a->namespace_, b->namespace_, an);
        if (c)
            return c;
        return strcmp(a->name, b->name);
    }
    for (size_t i = 0;; i++) {
        int x = key_byte(a, an, i), y = key_byte(b, bn, i);
        if (x != y)
            return x < y ? -1 : 1;
        if (x < 0)
            return 0;
    }
}

static const char *kv_find(const lop_kv_t *kv, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(kv[i].key, key) == 0)
            return kv[i].value;
    return NULL;
}

const char *lop_obj_label(const lop_obj_t *o, const char *key) { return kv_find(o->labels, o->nlabels, key); }
const char *lop_obj_annotation(const lop_obj_t *o, const char *key)
{
    return kv_find(o->annotations, o->nannotations, key);
}

bool lop_obj_owned_by(const lop_obj_t *o, const char *uid)
{
    for (size_t i = 0; i < o->nowners; i++)
        if (strcmp(o->owner_uids[i], uid) == 0)
            return true;
    return false;
}
