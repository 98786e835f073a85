/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ceiling.c — lopbench-ceiling: the least work an informer could do, as the benchmark's upper
 * bound for this machine: read the LIST pages / WATCH stream with libcurl, keep each object's
 * raw bytes, and index them by namespace/name with their resourceVersion (open addressing).
 * No DOM, no validation beyond finding those three fields: a JSON skipper that tracks strings
 * and nesting depth, written for this file.
 *
 *   sync  BASE PATH PAGE_LIMIT    paginated LIST until the last page; keep every item
 *   watch BASE PATH RV M          WATCH from RV; apply M events (replace the raw bytes by key)
 *
 * Output: one line of key=value pairs (bench/bench.py reads it). Errors: stderr, exit 1.
 */
#include "bench_util.h"

#include <curl/curl.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>

/* ---- a minimal JSON skipper ---- */

static const char *ws(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
    return p;
}

/* p at '"'; returns just past the closing quote (or e). */
static const char *skip_str(const char *p, const char *e)
{
    for (p++; p < e; p++) {
        const char *q = memchr(p, '"', (size_t)(e - p));
        if (!q) return e;
        const char *b = q;
        while (b > p && b[-1] == '\\') b--;
        if (((q - b) & 1) == 0) return q + 1; /* an even run of backslashes: a real quote */
        p = q;
    }
    return e;
}

/* p at the start of a value; returns just past it. */
static const char *skip_val(const char *p, const char *e)
{
    if (p >= e) return e;
    if (*p == '"') return skip_str(p, e);
    if (*p == '{' || *p == '[') {
        int depth = 0;
        while (p < e) {
            char c = *p;
            if (c == '"') {
                p = skip_str(p, e);
                continue;
            }
            if (c == '{' || c == '[')
                depth++;
            else if (c == '}' || c == ']') {
                if (--depth == 0) return p + 1;
            }
            p++;
        }
        return e;
    }
    while (p < e && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n') p++;
    return p;
}

/* Iterate an object's members: *pp at '{' first, then wherever the last call left it.
 * Returns false at the end. key/klen exclude the quotes; v..ve is the raw value. */
static bool obj_next(const char **pp, const char *e, const char **key, size_t *klen, const char **v, const char **ve)
{
    const char *p = ws(*pp, e);
    if (p < e && (*p == '{' || *p == ',')) p = ws(p + 1, e);
    if (p >= e || *p != '"') return false;
    const char *ke = skip_str(p, e);
    *key = p + 1;
    *klen = (size_t)(ke - p - 2);
    p = ws(ke, e);
    if (p >= e || *p != ':') return false;
    p = ws(p + 1, e);
    *v = p;
    *ve = skip_val(p, e);
    *pp = ws(*ve, e);
    return true;
}

static bool key_is(const char *k, size_t kl, const char *lit) { return strlen(lit) == kl && !memcmp(k, lit, kl); }

/* The string value v..ve without quotes (no unescaping: names and RVs have no escapes). */
static void str_val(const char *v, const char *ve, const char **s, size_t *n)
{
    if (ve - v >= 2 && *v == '"') {
        *s = v + 1;
        *n = (size_t)(ve - v - 2);
    } else {
        *s = v;
        *n = 0;
    }
}

typedef struct meta {
    const char *ns, *name, *rv, *cont;
    size_t nsl, namel, rvl, contl;
} meta_t;

/* Pull namespace/name/resourceVersion/continue out of the "metadata" member of obj. */
static void scan_meta(const char *obj, const char *e, meta_t *m)
{
    memset(m, 0, sizeof *m);
    const char *p = obj, *k, *v, *ve;
    size_t kl;
    while (obj_next(&p, e, &k, &kl, &v, &ve)) {
        if (!key_is(k, kl, "metadata")) continue;
        const char *q = v;
        while (obj_next(&q, ve, &k, &kl, &v, &ve)) {
            if (key_is(k, kl, "name"))
                str_val(v, ve, &m->name, &m->namel);
            else if (key_is(k, kl, "namespace"))
                str_val(v, ve, &m->ns, &m->nsl);
            else if (key_is(k, kl, "resourceVersion"))
                str_val(v, ve, &m->rv, &m->rvl);
            else if (key_is(k, kl, "continue"))
                str_val(v, ve, &m->cont, &m->contl);
        }
        return;
    }
}

/* ---- the cache: raw bytes + index by namespace/name ---- */

typedef struct entry {
    char *key; /* "ns/name" */
    char *raw; /* the object's bytes */
    size_t len;
    char rv[24];
} entry_t;

static entry_t *tab;
static size_t tab_cap, tab_n;

static uint64_t hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

static void put(const meta_t *m, const char *raw, size_t len);

static void grow(void)
{
    entry_t *old = tab;
    size_t oc = tab_cap;
    tab_cap = oc ? oc * 2 : 1024;
    tab = calloc(tab_cap, sizeof *tab);
    tab_n = 0;
    for (size_t i = 0; i < oc; i++) {
        if (!old[i].key) continue;
        uint64_t h = hash(old[i].key, strlen(old[i].key)) & (tab_cap - 1);
        while (tab[h].key) h = (h + 1) & (tab_cap - 1);
        tab[h] = old[i];
        tab_n++;
    }
    free(old);
}

static size_t cache_bytes;

static void put(const meta_t *m, const char *raw, size_t len)
{
    if ((tab_n + 1) * 2 > tab_cap) grow();
    char key[512];
    int kl = snprintf(key, sizeof key, "%.*s/%.*s", (int)m->nsl, m->ns, (int)m->namel, m->name);
    if (kl < 0 || (size_t)kl >= sizeof key) kl = (int)sizeof key - 1;
    uint64_t h = hash(key, (size_t)kl) & (tab_cap - 1);
    while (tab[h].key && strcmp(tab[h].key, key)) h = (h + 1) & (tab_cap - 1);
    entry_t *en = &tab[h];
    if (!en->key) {
        en->key = strdup(key);
        tab_n++;
    } else {
        cache_bytes -= en->len;
        free(en->raw);
    }
    en->raw = malloc(len);
    memcpy(en->raw, raw, len);
    en->len = len;
    cache_bytes += len;
    snprintf(en->rv, sizeof en->rv, "%.*s", (int)m->rvl, m->rv);
}

/* ---- sync: paginated LIST ---- */

static long ingest_list(const char *body, size_t n, char *cont, size_t contcap, char *rv, size_t rvcap)
{
    const char *p = body, *e = body + n, *k, *v, *ve;
    size_t kl;
    long items = 0;
    cont[0] = 0;
    while (obj_next(&p, e, &k, &kl, &v, &ve)) {
        if (key_is(k, kl, "metadata")) {
            const char *q = v, *mv, *mve;
            while (obj_next(&q, ve, &k, &kl, &mv, &mve)) {
                const char *s;
                size_t sl;
                str_val(mv, mve, &s, &sl);
                if (key_is(k, kl, "continue"))
                    snprintf(cont, contcap, "%.*s", (int)sl, s);
                else if (key_is(k, kl, "resourceVersion"))
                    snprintf(rv, rvcap, "%.*s", (int)sl, s);
            }
        } else if (key_is(k, kl, "items") && *v == '[') {
            const char *q = ws(v + 1, ve);
            while (q < ve && *q == '{') {
                const char *ie = skip_val(q, ve);
                meta_t m;
                scan_meta(q, ie, &m);
                put(&m, q, (size_t)(ie - q));
                items++;
                q = ws(ie, ve);
                if (q < ve && *q == ',') q = ws(q + 1, ve);
            }
        }
    }
    return items;
}

static int cmd_sync(char **a)
{
    long rss0 = bu_status_kb("VmRSS");
    CURL *h = curl_easy_init();
    bu_buf_t body = {0};
    char cont[2048] = "", rv[64] = "", url[8192];
    long items = 0, pages = 0;
    size_t wire = 0;
    const char *sep = strchr(a[1], '?') ? "&" : "?";
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, bu_curl_append);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
    double t0 = bu_now(), c0 = bu_cpu();
    do {
        char *ec = curl_easy_escape(h, cont, 0);
        snprintf(url, sizeof url, "%s%s%slimit=%s%s%s", a[0], a[1], sep, a[2],
                 cont[0] ? "&continue=" : (pages == 0 ? "&resourceVersion=0" : ""), cont[0] ? ec : "");
        curl_free(ec);
        curl_easy_setopt(h, CURLOPT_URL, url);
        body.n = 0;
        CURLcode rc = curl_easy_perform(h);
        long code = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        if (rc != CURLE_OK || code != 200) {
            fprintf(stderr, "ceiling: GET %s -> %ld %s\n", url, code, curl_easy_strerror(rc));
            return 1;
        }
        wire += body.n;
        items += ingest_list(body.p, body.n, cont, sizeof cont, rv, sizeof rv);
        pages++;
    } while (cont[0]);
    double dt = bu_now() - t0, cpu = bu_cpu() - c0;
    free(body.p);
    body = (bu_buf_t){0};
    malloc_trim(0);
    long rss1 = bu_status_kb("VmRSS");
    printf("objects=%ld pages=%ld seconds=%.4f cpu_s=%.4f rate=%.1f wire_bytes=%zu cache_bytes=%zu "
           "rss_delta_kb=%ld hwm_kb=%ld rv=%s\n",
           items, pages, dt, cpu, items / dt, wire, cache_bytes, rss1 - rss0, bu_status_kb("VmHWM"), rv);
    curl_easy_cleanup(h);
    return 0;
}

/* ---- watch: apply M events ---- */

typedef struct wst {
    bu_buf_t pend;
    long events, want;
} wst_t;

static void apply_event(const char *line, size_t n)
{
    const char *p = line, *e = line + n, *k, *v, *ve;
    size_t kl;
    while (obj_next(&p, e, &k, &kl, &v, &ve)) {
        if (!key_is(k, kl, "object")) continue;
        meta_t m;
        scan_meta(v, ve, &m);
        put(&m, v, (size_t)(ve - v));
    }
}

static size_t watch_cb(char *d, size_t sz, size_t nm, void *ud)
{
    wst_t *w = ud;
    size_t n = sz * nm;
    const char *p = d, *e = d + n;
    while (p < e && w->events < w->want) {
        const char *nl = memchr(p, '\n', (size_t)(e - p));
        if (!nl) {
            bu_buf_add(&w->pend, p, (size_t)(e - p));
            break;
        }
        if (w->pend.n) {
            bu_buf_add(&w->pend, p, (size_t)(nl - p));
            apply_event(w->pend.p, w->pend.n);
            w->pend.n = 0;
        } else {
            apply_event(p, (size_t)(nl - p));
        }
        w->events++;
        p = nl + 1;
    }
    return w->events >= w->want ? 0 : n;
}

static int cmd_watch(char **a)
{
    char url[4096];
    snprintf(url, sizeof url, "%s%s%swatch=1&resourceVersion=%s", a[0], a[1], strchr(a[1], '?') ? "&" : "?", a[2]);
    wst_t w = {{0}, 0, atol(a[3])};
    CURL *h = curl_easy_init();
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, watch_cb);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &w);
    double t0 = bu_now(), c0 = bu_cpu();
    curl_easy_perform(h);
    double dt = bu_now() - t0, cpu = bu_cpu() - c0;
    curl_easy_cleanup(h);
    free(w.pend.p);
    if (w.events < w.want) {
        fprintf(stderr, "ceiling: watch ended after %ld of %ld events\n", w.events, w.want);
        return 1;
    }
    printf("events=%ld seconds=%.4f cpu_s=%.4f rate=%.1f objects=%zu cache_bytes=%zu\n", w.events, dt, cpu,
           w.events / dt, tab_n, cache_bytes);
    return 0;
}

int main(int argc, char **argv)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (argc == 5 && !strcmp(argv[1], "sync")) return cmd_sync(argv + 2);
    if (argc == 6 && !strcmp(argv[1], "watch")) return cmd_watch(argv + 2);
    fprintf(stderr, "usage: lopbench-ceiling sync BASE PATH LIMIT | watch BASE PATH RV M\n");
    return 2;
}
