/* SPDX-License-Identifier: Apache-2.0 */
/* as_decode.c — stored objects' facts and trees decoded on demand from their bytes, with the
 * byte-bounded decode cache (see as_decode.h and apiserver/README.md "Memory"). */
#include "apiserver/as_decode.h"

#include "apiserver/as_select.h"
#include "apiserver/as_util.h"
#include "apiserver/as_view.h"

#include "host/codec/jsonscan.h"
#include "host/codec/jsonstr.h"
#include "host/meta/selector.h"

#include <string.h>

as_facts_t *as_facts_of(const json_t *obj, const char *data, size_t len)
{
    const char *av = json_string_value(json_object_get(obj, "apiVersion"));
    const json_t *m = json_object_get(obj, "metadata");
    const char *uid = json_string_value(json_object_get(m, "uid"));
    const json_t *refs = json_object_get(m, "ownerReferences");
    const json_t *fin = json_object_get(m, "finalizers");
    if (!av) av = "";
    size_t nown = 0, strs = strlen(av) + 1 + (uid ? strlen(uid) + 1 : 0);
    size_t i;
    json_t *r;
    json_array_foreach(refs, i, r)
    {
        const char *u = json_string_value(json_object_get(r, "uid"));
        if (!u) continue;
        nown++;
        strs += strlen(u) + 1;
    }
    as_facts_t *f = lop_xmalloc(sizeof *f + nown * sizeof(char *) + strs);
    const char **arr = (const char **)(void *)(f + 1);
    char *p = (char *)(arr + nown);
    size_t l = strlen(av) + 1;
    memcpy(p, av, l);
    f->api_version = p;
    p += l;
    f->uid = NULL;
    if (uid) {
        l = strlen(uid) + 1;
        memcpy(p, uid, l);
        f->uid = p;
        p += l;
    }
    f->nowners = 0;
    f->owner_uids = arr;
    json_array_foreach(refs, i, r)
    {
        const char *u = json_string_value(json_object_get(r, "uid"));
        if (!u) continue;
        l = strlen(u) + 1;
        memcpy(p, u, l);
        arr[f->nowners++] = p;
        p += l;
    }
    f->deleting = json_string_value(json_object_get(m, "deletionTimestamp")) != NULL;
    f->owner_refs = json_is_array(refs) && json_array_size(refs) > 0;
    f->labels_start = f->labels_end = 0;
    size_t ms, me, ls, le;
    if (json_object_get(m, "labels") && lop_jscan_find(data, len, 0, "metadata", &ms, &me) == 1 &&
        lop_jscan_find(data, len, ms, "labels", &ls, &le) == 1) {
        f->labels_start = ls;
        f->labels_end = le;
    }
    f->fin_foreground = json_is_array(fin) && lop_json_str_in(fin, "foregroundDeletion");
    f->fin_orphan = json_is_array(fin) && lop_json_str_in(fin, "orphan");
    return f;
}

const char *as_blob_api_version(const as_blob_t *b) { return b && b->facts ? b->facts->api_version : ""; }

bool as_blob_needs_convert(const as_res_t *res, const as_blob_t *b, const char *to_av)
{
    if (!res->conv_client || !b) return false;
    return strcmp(as_blob_api_version(b), to_av) != 0;
}

/* ---- decode cache ---- */

static void dc_unlink(lop_apiserver_t *srv, as_blob_t *b)
{
    if (b->c_prev)
        b->c_prev->c_next = b->c_next;
    else
        srv->dc_head = b->c_next;
    if (b->c_next)
        b->c_next->c_prev = b->c_prev;
    else
        srv->dc_tail = b->c_prev;
    b->c_prev = b->c_next = NULL;
}

static void dc_push_front(lop_apiserver_t *srv, as_blob_t *b)
{
    b->c_prev = NULL;
    b->c_next = srv->dc_head;
    if (srv->dc_head)
        srv->dc_head->c_prev = b;
    else
        srv->dc_tail = b;
    srv->dc_head = b;
}

static void dc_evict(lop_apiserver_t *srv, as_blob_t *b)
{
    dc_unlink(srv, b);
    srv->dc_bytes -= b->len;
    srv->dc_count--;
    json_decref(b->tree);
    b->tree = NULL;
    as_blob_unref(b); /* the cache's reference */
}

void as_decode_trim(lop_apiserver_t *srv)
{
    while (srv->dc_bytes > srv->dc_budget && srv->dc_tail) dc_evict(srv, srv->dc_tail);
}

void as_decode_free(lop_apiserver_t *srv)
{
    while (srv->dc_tail) dc_evict(srv, srv->dc_tail);
    if (srv->dc_trim_ev) event_free(srv->dc_trim_ev);
    srv->dc_trim_ev = NULL;
}

static void dc_trim_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    as_decode_trim(arg);
}

void as_decode_put(lop_apiserver_t *srv, as_blob_t *b, json_t *tree)
{
    b->tree = tree;
    b->refs++;
    dc_push_front(srv, b);
    srv->dc_bytes += b->len;
    srv->dc_count++;
    if (srv->dc_bytes > srv->dc_budget && srv->base) {
        /* a zero timeout, not event_active: timers become active after the loop's poll, behind
         * the I/O it found, so the reply this callback queued is written before the trim frees */
        if (!srv->dc_trim_ev) srv->dc_trim_ev = evtimer_new(srv->base, dc_trim_cb, srv);
        if (srv->dc_trim_ev && !evtimer_pending(srv->dc_trim_ev, NULL)) {
            struct timeval now = {0, 0};
            evtimer_add(srv->dc_trim_ev, &now);
        }
    }
}

static json_t *parse_blob(const as_blob_t *b)
{
    json_t *t = json_loadb(b->data, b->len, JSON_ALLOW_NUL, NULL);
    return t ? t : json_object();
}

json_t *as_blob_obj(lop_apiserver_t *srv, as_blob_t *b)
{
    if (!b) return NULL;
    if (b->tree) {
        srv->dc_hits++;
        if (srv->dc_head != b) {
            dc_unlink(srv, b);
            dc_push_front(srv, b);
        }
        return b->tree;
    }
    srv->dc_misses++;
    json_t *t = parse_blob(b);
    as_decode_put(srv, b, t);
    return t;
}

json_t *as_entry_obj(lop_apiserver_t *srv, const as_entry_t *e) { return e ? as_blob_obj(srv, e->wire) : NULL; }

json_t *as_blob_decode(lop_apiserver_t *srv, as_blob_t *b)
{
    if (!b) return NULL;
    if (b->tree) {
        srv->dc_hits++;
        return json_incref(b->tree);
    }
    srv->dc_misses++;
    return parse_blob(b);
}

/* Whether every field of fs is under metadata (so the metadata bytes are enough). */
static bool fields_in_meta(lop_field_selector_t *fs)
{
    if (!fs) return true;
    for (size_t i = 0; i < lop_field_selector_count(fs); i++)
        if (strncmp(lop_field_selector_field(fs, i), "metadata.", 9)) return false;
    return true;
}

bool as_blob_matches(lop_apiserver_t *srv, as_res_t *res, const char *ns, lop_label_selector_t *ls,
                     lop_field_selector_t *fs, const char *key, as_blob_t *b, bool cache)
{
    if (!b) return false;
    bool sel = (ls && !lop_label_selector_empty(ls)) || (fs && !lop_field_selector_empty(fs));
    if (!sel && (!ns || res->namespaced)) {
        if (!ns) return true;
        size_t n = strlen(ns);
        return !strncmp(key, ns, n) && key[n] == '/';
    }
    if (cache || b->tree) return as_obj_matches(res, ns, ls, fs, as_blob_obj(srv, b));
    if ((!fs || lop_field_selector_empty(fs)) && b->facts && (!ns || res->namespaced)) {
        /* a label selector alone: only the labels' bytes are parsed, the namespace is the key's */
        if (ns) {
            size_t n = strlen(ns);
            if (strncmp(key, ns, n) || key[n] != '/') return false;
        }
        const as_facts_t *f = b->facts;
        json_t *labels = f->labels_end > f->labels_start
                             ? json_loadb(b->data + f->labels_start, f->labels_end - f->labels_start,
                                          JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL)
                             : NULL;
        bool ok = lop_label_selector_match_json(ls, labels);
        json_decref(labels);
        return ok;
    }
    size_t ms, me;
    if (fields_in_meta(fs) && as_partial_meta_span(b->data, b->len, &ms, &me)) {
        json_t *m = json_loadb(b->data + ms, me - ms, JSON_ALLOW_NUL, NULL);
        if (m) {
            json_t *o = json_object();
            json_object_set_new(o, "metadata", m);
            bool ok = as_obj_matches(res, ns, ls, fs, o);
            json_decref(o);
            return ok;
        }
    }
    json_t *o = as_blob_decode(srv, b);
    bool ok = as_obj_matches(res, ns, ls, fs, o);
    json_decref(o);
    return ok;
}
