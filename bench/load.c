/* SPDX-License-Identifier: Apache-2.0 */
/*
 * load.c — lopbench-load: populates the local API server and measures its own serving rate, so
 * the benchmark can say when the server (not the client under test) is the bottleneck.
 *
 *   create BASE PATH_TPL BODY_TPL_FILE N NS_COUNT CONC   POST N objects (CONC connections)
 *   patch  BASE OBJ_PATH_TPL N NS_COUNT M CONC           M merge patches, round-robin over N objects
 *   list   BASE PATH REPEAT                              GET PATH REPEAT times, bytes discarded
 *   drain  BASE WATCH_PATH M                             one watch; read until M event lines
 *   hold   BASE WATCH_PATH K POST_PATH BODY_FILE         K watches open at once, then one create:
 *                                                        time until every watch saw the event
 *
 * Templates: "@NS@" → bench-<i % NS_COUNT>, "@NAME@" → obj-<i>, "@I@" → i.
 * Output: one line of key=value pairs on stdout (read by bench/bench.py); errors on stderr,
 * exit 1. Only for the benchmark: no retries, loopback only.
 */
#include "bench_util.h"

#include <curl/curl.h>
#include <stdbool.h>
#include <stdint.h>

/* An easy handle for the benchmark's server: over HTTPS the CA bundle named by $LOPBENCH_CAINFO
 * (bench.py writes the local API server's CA from its kubeconfig there). */
static CURL *bench_easy(void)
{
    CURL *h = curl_easy_init();
    const char *ca = getenv("LOPBENCH_CAINFO");
    if (h && ca && *ca) curl_easy_setopt(h, CURLOPT_CAINFO, ca);
    return h;
}

static char *subst(const char *tpl, long i, long nscount)
{
    char ns[32], name[32], idx[32];
    snprintf(ns, sizeof ns, "bench-%ld", nscount > 0 ? i % nscount : 0);
    snprintf(name, sizeof name, "obj-%ld", i);
    snprintf(idx, sizeof idx, "%ld", i);
    bu_buf_t b = {0};
    for (const char *p = tpl; *p;) {
        if (!strncmp(p, "@NS@", 4)) {
            bu_buf_add(&b, ns, strlen(ns));
            p += 4;
        } else if (!strncmp(p, "@NAME@", 6)) {
            bu_buf_add(&b, name, strlen(name));
            p += 6;
        } else if (!strncmp(p, "@I@", 3)) {
            bu_buf_add(&b, idx, strlen(idx));
            p += 3;
        } else {
            bu_buf_add(&b, p, 1);
            p++;
        }
    }
    return b.p ? b.p : strdup("");
}

typedef struct slot {
    CURL *h;
    struct curl_slist *hdr;
    char *url, *body;
    bu_buf_t resp;
    long idx;
} slot_t;

static void slot_reset(slot_t *s)
{
    free(s->url);
    free(s->body);
    s->url = s->body = NULL;
    s->resp.n = 0;
}

/* Run `total` requests (method, url and body built per index by mk) over conc connections.
 * Returns the number of non-2xx/failed requests; prints the first failure. */
typedef void (*mk_fn)(void *ud, long i, char **url, char **body);

static long run_requests(const char *method, const char *ctype, long total, int conc, mk_fn mk, void *ud)
{
    CURLM *m = curl_multi_init();
    if (conc < 1) conc = 1;
    if (conc > total) conc = (int)(total > 0 ? total : 1);
    slot_t *slots = calloc((size_t)conc, sizeof *slots);
    long next = 0, done = 0, failed = 0;
    char ct[128];
    snprintf(ct, sizeof ct, "Content-Type: %s", ctype);
    for (int k = 0; k < conc; k++) {
        slots[k].h = bench_easy();
        slots[k].hdr = curl_slist_append(NULL, ct);
        slots[k].hdr = curl_slist_append(slots[k].hdr, "Accept: application/json");
        slots[k].hdr = curl_slist_append(slots[k].hdr, "Expect:");
    }
    int running = 0;
    for (int k = 0; k < conc && next < total; k++) {
        slot_t *s = &slots[k];
        s->idx = next;
        mk(ud, next++, &s->url, &s->body);
        curl_easy_setopt(s->h, CURLOPT_URL, s->url);
        curl_easy_setopt(s->h, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(s->h, CURLOPT_POSTFIELDS, s->body);
        curl_easy_setopt(s->h, CURLOPT_HTTPHEADER, s->hdr);
        curl_easy_setopt(s->h, CURLOPT_WRITEFUNCTION, bu_curl_append);
        curl_easy_setopt(s->h, CURLOPT_WRITEDATA, &s->resp);
        curl_easy_setopt(s->h, CURLOPT_PRIVATE, s);
        curl_multi_add_handle(m, s->h);
    }
    while (done < total) {
        curl_multi_perform(m, &running);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(m, &left))) {
            if (msg->msg != CURLMSG_DONE) continue;
            slot_t *s;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&s);
            long code = 0;
            curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &code);
            if (msg->data.result != CURLE_OK || code < 200 || code > 299) {
                if (!failed)
                    fprintf(stderr, "load: %s %s -> %ld %s %.300s\n", method, s->url, code,
                            curl_easy_strerror(msg->data.result), s->resp.p ? s->resp.p : "");
                failed++;
            }
            done++;
            curl_multi_remove_handle(m, s->h);
            slot_reset(s);
            if (next < total) {
                s->idx = next;
                mk(ud, next++, &s->url, &s->body);
                curl_easy_setopt(s->h, CURLOPT_URL, s->url);
                curl_easy_setopt(s->h, CURLOPT_POSTFIELDS, s->body);
                curl_multi_add_handle(m, s->h);
            }
        }
        if (done < total) curl_multi_poll(m, NULL, 0, 100, NULL);
    }
    for (int k = 0; k < conc; k++) {
        curl_easy_cleanup(slots[k].h);
        curl_slist_free_all(slots[k].hdr);
        free(slots[k].resp.p);
    }
    free(slots);
    curl_multi_cleanup(m);
    return failed;
}

typedef struct create_ud {
    const char *base, *path_tpl, *body_tpl;
    long nscount;
} create_ud_t;

static void mk_create(void *ud, long i, char **url, char **body)
{
    create_ud_t *c = ud;
    char *p = subst(c->path_tpl, i, c->nscount);
    size_t n = strlen(c->base) + strlen(p) + 1;
    *url = malloc(n);
    snprintf(*url, n, "%s%s", c->base, p);
    free(p);
    *body = subst(c->body_tpl, i, c->nscount);
}

typedef struct patch_ud {
    const char *base, *path_tpl;
    long n, nscount;
} patch_ud_t;

static void mk_patch(void *ud, long j, char **url, char **body)
{
    patch_ud_t *c = ud;
    long i = j % c->n;
    char *p = subst(c->path_tpl, i, c->nscount);
    size_t n = strlen(c->base) + strlen(p) + 1;
    *url = malloc(n);
    snprintf(*url, n, "%s%s", c->base, p);
    free(p);
    char b[128];
    snprintf(b, sizeof b, "{\"metadata\":{\"annotations\":{\"bench/seq\":\"%ld\"}}}", j);
    *body = strdup(b);
}

static int cmd_create(char **a)
{
    size_t len;
    char *tpl = bu_read_file(a[2], &len);
    if (!tpl) return 1;
    create_ud_t u = {a[0], a[1], tpl, atol(a[4])};
    long n = atol(a[3]);
    double t0 = bu_now();
    long failed = run_requests("POST", "application/json", n, atoi(a[5]), mk_create, &u);
    double dt = bu_now() - t0;
    printf("requests=%ld failed=%ld seconds=%.4f rate=%.1f\n", n, failed, dt, n / dt);
    free(tpl);
    return failed ? 1 : 0;
}

static int cmd_patch(char **a)
{
    patch_ud_t u = {a[0], a[1], atol(a[2]), atol(a[3])};
    long m = atol(a[4]);
    double t0 = bu_now();
    long failed = run_requests("PATCH", "application/merge-patch+json", m, atoi(a[5]), mk_patch, &u);
    double dt = bu_now() - t0;
    printf("requests=%ld failed=%ld seconds=%.4f rate=%.1f\n", m, failed, dt, m / dt);
    return failed ? 1 : 0;
}

static int cmp_d(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static int cmd_list(char **a)
{
    char url[4096];
    snprintf(url, sizeof url, "%s%s", a[0], a[1]);
    int rep = atoi(a[2]);
    if (rep < 1) rep = 1;
    double *ms = calloc((size_t)rep, sizeof *ms);
    CURL *h = bench_easy();
    struct curl_slist *hdr = curl_slist_append(NULL, "Accept: application/json");
    size_t bytes = 0;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, bu_curl_count);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &bytes);
    for (int r = 0; r < rep; r++) {
        bytes = 0;
        double t0 = bu_now();
        CURLcode rc = curl_easy_perform(h);
        ms[r] = (bu_now() - t0) * 1e3;
        long code = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        if (rc != CURLE_OK || code != 200) {
            fprintf(stderr, "load: GET %s -> %ld %s\n", url, code, curl_easy_strerror(rc));
            return 1;
        }
    }
    qsort(ms, (size_t)rep, sizeof *ms, cmp_d);
    printf("bytes=%zu min_ms=%.2f median_ms=%.2f max_ms=%.2f\n", bytes, ms[0], ms[rep / 2], ms[rep - 1]);
    curl_slist_free_all(hdr);
    curl_easy_cleanup(h);
    free(ms);
    return 0;
}

typedef struct drain {
    long lines, want;
    size_t bytes;
    double t_first;
} drain_t;

static size_t drain_cb(char *d, size_t sz, size_t nm, void *ud)
{
    drain_t *w = ud;
    size_t n = sz * nm;
    if (!w->bytes) w->t_first = bu_now();
    w->bytes += n;
    for (const char *p = d, *e = d + n; (p = memchr(p, '\n', (size_t)(e - p))); p++) w->lines++;
    return w->lines >= w->want ? 0 : n; /* 0 aborts the transfer once enough events arrived */
}

static int cmd_drain(char **a)
{
    char url[4096];
    snprintf(url, sizeof url, "%s%s", a[0], a[1]);
    drain_t w = {0, atol(a[2]), 0, 0};
    CURL *h = bench_easy();
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, drain_cb);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &w);
    double t0 = bu_now();
    curl_easy_perform(h);
    double dt = bu_now() - t0;
    curl_easy_cleanup(h);
    if (w.lines < w.want) {
        fprintf(stderr, "load: watch %s ended after %ld of %ld events\n", url, w.lines, w.want);
        return 1;
    }
    printf("events=%ld bytes=%zu seconds=%.4f rate=%.1f\n", w.lines, w.bytes, dt, w.lines / dt);
    return 0;
}

typedef struct holder {
    long lines;
    double t_event;
} holder_t;

static size_t hold_cb(char *d, size_t sz, size_t nm, void *ud)
{
    holder_t *w = ud;
    size_t n = sz * nm;
    for (const char *p = d, *e = d + n; (p = memchr(p, '\n', (size_t)(e - p))); p++)
        if (w->lines++ == 0) w->t_event = bu_now();
    return n;
}

static int cmd_hold(char **a)
{
    char url[4096];
    snprintf(url, sizeof url, "%s%s", a[0], a[1]);
    long k = atol(a[2]);
    CURLM *m = curl_multi_init();
    CURL **hs = calloc((size_t)k, sizeof *hs);
    holder_t *ws = calloc((size_t)k, sizeof *ws);
    double t0 = bu_now();
    for (long i = 0; i < k; i++) {
        hs[i] = bench_easy();
        curl_easy_setopt(hs[i], CURLOPT_URL, url);
        curl_easy_setopt(hs[i], CURLOPT_WRITEFUNCTION, hold_cb);
        curl_easy_setopt(hs[i], CURLOPT_WRITEDATA, &ws[i]);
        curl_multi_add_handle(m, hs[i]);
    }
    int running = 0;
    long established = 0;
    double deadline = bu_now() + 60;
    /* established = the server answered 200 (headers are sent when the watch starts) */
    while (established < k && bu_now() < deadline) {
        curl_multi_perform(m, &running);
        established = 0;
        for (long i = 0; i < k; i++) {
            long code = 0;
            curl_easy_getinfo(hs[i], CURLINFO_RESPONSE_CODE, &code);
            established += code == 200;
        }
        if (established < k) curl_multi_poll(m, NULL, 0, 10, NULL);
    }
    double t_est = bu_now() - t0;
    if (established < k) {
        fprintf(stderr, "load: only %ld of %ld watches established in 60 s\n", established, k);
        return 1;
    }
    /* one create; every watch must see it */
    size_t blen;
    char *body = bu_read_file(a[4], &blen);
    if (!body) return 1;
    char purl[4096];
    snprintf(purl, sizeof purl, "%s%s", a[0], a[3]);
    CURL *p = bench_easy();
    struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
    size_t ignored = 0;
    curl_easy_setopt(p, CURLOPT_URL, purl);
    curl_easy_setopt(p, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(p, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(p, CURLOPT_WRITEFUNCTION, bu_curl_count);
    curl_easy_setopt(p, CURLOPT_WRITEDATA, &ignored);
    curl_multi_add_handle(m, p);
    double t1 = bu_now();
    long seen = 0;
    deadline = t1 + 60;
    while (seen < k && bu_now() < deadline) {
        curl_multi_perform(m, &running);
        seen = 0;
        for (long i = 0; i < k; i++) seen += ws[i].lines > 0;
        if (seen < k) curl_multi_poll(m, NULL, 0, 10, NULL);
    }
    double last = 0;
    for (long i = 0; i < k; i++)
        if (ws[i].lines > 0 && ws[i].t_event > last) last = ws[i].t_event;
    printf("watches=%ld established_s=%.4f delivered=%ld fanout_ms=%.2f\n", k, t_est, seen,
           seen ? (last - t1) * 1e3 : -1.0);
    for (long i = 0; i < k; i++) {
        curl_multi_remove_handle(m, hs[i]);
        curl_easy_cleanup(hs[i]);
    }
    curl_multi_remove_handle(m, p);
    curl_easy_cleanup(p);
    curl_slist_free_all(hdr);
    curl_multi_cleanup(m);
    free(hs);
    free(ws);
    free(body);
    return seen == k ? 0 : 1;
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int nargs;
        int (*fn)(char **);
    } cmds[] = {{"create", 6, cmd_create},
                {"patch", 6, cmd_patch},
                {"list", 3, cmd_list},
                {"drain", 3, cmd_drain},
                {"hold", 5, cmd_hold}};
    curl_global_init(CURL_GLOBAL_DEFAULT);
    for (size_t i = 0; argc >= 2 && i < sizeof cmds / sizeof cmds[0]; i++) {
        if (strcmp(argv[1], cmds[i].name)) continue;
        if (argc - 2 != cmds[i].nargs) {
            fprintf(stderr, "lopbench-load %s: want %d arguments (see bench/load.c)\n", argv[1], cmds[i].nargs);
            return 2;
        }
        return cmds[i].fn(argv + 2);
    }
    fprintf(stderr, "usage: lopbench-load create|patch|list|drain|hold ... (see bench/load.c)\n");
    return 2;
}
