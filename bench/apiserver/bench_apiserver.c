/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_apiserver.c — throughput figures for the local API server (not a test; see
 * bench/README.md). Starts a server in process and measures, over loopback HTTP with libcurl:
 *   1. LIST of 10,000 ~1 KB ConfigMaps (best of 5),
 *   2. events/s received by one watcher (50,000 MODIFIED events replayed from history),
 *   3. 1,000 concurrent watches held, and the time until all of them saw one new event.
 * `mem [configmaps] [pods]` instead measures memory: heap bytes held per stored object (mallinfo2
 * uordblks + hblkhd after malloc_trim, before and after creating them; the server runs in this
 * process)
 * for ~1.4 KB ConfigMaps and ~9.8 KB Pods (as stored and served; bench/fixtures/{configmap,pod}.json,
 * found through $BENCH_FIXTURES), next to
 * the size of their JSON as LIST serves it, and LIST of all the ConfigMaps, plain and through a
 * label selector all of them match (best of 3 each).
 * Build and run: bench/apiserver/run.sh (needs a configured build/ directory).
 */
#include "apiserver/apiserver.h"
#include "host/util/buf.h"
#include "host/util/clock.h"

#include <curl/curl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double now_s(void) { return (double)lop_clock_mono(&lop_clock_system) / 1e9; }

static size_t sink(char *p, size_t sz, size_t n, void *ud)
{
    if (ud) lop_buf_append(ud, p, sz * n);
    return sz * n;
}

static long req(CURL *c, const char *method, const char *url, const char *body, const char *ctype, lop_buf_t *out)
{
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    struct curl_slist *h = NULL;
    char ct[128];
    snprintf(ct, sizeof ct, "Content-Type: %s", ctype ? ctype : "application/json");
    h = curl_slist_append(h, ct);
    h = curl_slist_append(h, "Expect:");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    if (body) curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    long code = 0;
    if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(h);
    return code;
}

typedef struct counter {
    long lines;
} counter_t;

static size_t count_lines(char *p, size_t sz, size_t n, void *ud)
{
    counter_t *c = ud;
    for (size_t i = 0; i < sz * n; i++)
        if (p[i] == '\n') c->lines++;
    return sz * n;
}

/* The fixture file name (bench/fixtures/NAME) read whole, NUL-terminated; exits on failure. */
static char *read_fixture(const char *name)
{
    const char *dir = getenv("BENCH_FIXTURES");
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir ? dir : "bench/fixtures", name);
    size_t n;
    char *data = lop_file_read(path, &n);
    if (!data) {
        fprintf(stderr, "cannot open %s\n", path);
        exit(1);
    }
    while (n && (data[n - 1] == '\n' || data[n - 1] == ' ')) n--;
    data[n] = '\0';
    return data;
}

/* tmpl with every @NAME@, @NS@ and @I@ replaced; malloc'd. */
static char *fill(const char *tmpl, const char *name, const char *ns, int i)
{
    lop_buf_t b = LOP_BUF_INIT;
    for (const char *p = tmpl; *p;) {
        if (!strncmp(p, "@NAME@", 6)) {
            lop_buf_puts(&b, name);
            p += 6;
        } else if (!strncmp(p, "@NS@", 4)) {
            lop_buf_puts(&b, ns);
            p += 4;
        } else if (!strncmp(p, "@I@", 3)) {
            lop_buf_printf(&b, "%d", i);
            p += 3;
        } else {
            lop_buf_append(&b, p++, 1);
        }
    }
    lop_buf_append(&b, "", 1);
    return b.data;
}

/* Heap bytes in use: small chunks of every arena plus the mmap'd large ones (the collection's
 * entry array of 1M objects is one). */
static size_t heap_in_use(void)
{
    malloc_trim(0);
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

/* Create n objects from fixture under url; print heap bytes per object against their LIST size. */
static int mem_kind(CURL *c, const char *base, const char *plural, const char *fixture, int n, int lists)
{
    char *tmpl = read_fixture(fixture);
    char url[512];
    snprintf(url, sizeof url, "%s/api/v1/namespaces/default/%s", base, plural);
    size_t h0 = heap_in_use();
    double t0 = now_s();
    for (int i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "m-%07d", i);
        char *body = fill(tmpl, name, "default", i);
        long code = req(c, "POST", url, body, NULL, NULL);
        free(body);
        if (code != 201) {
            fprintf(stderr, "create %s %d: HTTP %ld\n", plural, i, code);
            return 1;
        }
    }
    double t1 = now_s();
    size_t h1 = heap_in_use();
    double best = 1e9;
    size_t bytes = 0;
    for (int k = 0; k < (lists > 0 ? lists : 1); k++) {
        lop_buf_t out = LOP_BUF_INIT;
        double a = now_s();
        req(c, "GET", url, NULL, NULL, &out);
        double b = now_s();
        if (b - a < best) best = b - a;
        bytes = out.len;
        lop_buf_free(&out);
    }
    double per = (double)(h1 > h0 ? h1 - h0 : 0) / n, json = (double)bytes / n;
    printf("mem: %d %s created in %.1f s; heap +%.1f MB = %.0f bytes per object; JSON %.0f bytes per "
           "object (LIST %.1f MB); ratio %.2fx\n",
           n, plural, t1 - t0, (double)(h1 - h0) / 1e6, per, json, bytes / 1e6, per / json);
    if (lists > 0)
        printf("mem: LIST of %d %s (%.1f MB), best of %d: %.1f ms\n", n, plural, bytes / 1e6, lists, best * 1000);
    if (lists > 0) { /* the same LIST through a label selector every object matches */
        char surl[600];
        snprintf(surl, sizeof surl, "%s?labelSelector=app.kubernetes.io%%2Fname%%3Dbench", url);
        double sbest = 1e9;
        size_t sbytes = 0;
        for (int k = 0; k < lists; k++) {
            lop_buf_t out = LOP_BUF_INIT;
            double a = now_s();
            req(c, "GET", surl, NULL, NULL, &out);
            double b = now_s();
            if (b - a < sbest) sbest = b - a;
            sbytes = out.len;
            lop_buf_free(&out);
        }
        printf("mem: LIST of %d %s with a labelSelector all match (%.1f MB), best of %d: %.1f ms\n", n, plural,
               sbytes / 1e6, lists, sbest * 1000);
    }
    free(tmpl);
    return 0;
}

static int mem_main(int argc, char **argv)
{
    int ncm = argc > 2 ? atoi(argv[2]) : 100000;
    int npod = argc > 3 ? atoi(argv[3]) : 10000;
    lop_apiserver_opts_t o = {0}; /* the defaults, history ring included */
    lop_apiserver_t *srv;
    lop_err_t err;
    if (lop_apiserver_start(&o, &srv, &err) != LOP_OK) {
        fprintf(stderr, "start: %s\n", err.message);
        return 1;
    }
    CURL *c = curl_easy_init();
    int rc = 0;
    if (ncm > 0) rc |= mem_kind(c, lop_apiserver_url(srv), "configmaps", "configmap.json", ncm, 3);
    if (npod > 0 && !rc) rc |= mem_kind(c, lop_apiserver_url(srv), "pods", "pod.json", npod, 1);
    curl_easy_cleanup(c);
    lop_apiserver_stop(srv);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "mem")) {
        curl_global_init(CURL_GLOBAL_ALL);
        int rc = mem_main(argc, argv);
        curl_global_cleanup();
        return rc;
    }
    int nobj = argc > 1 ? atoi(argv[1]) : 10000;
    int nev = argc > 2 ? atoi(argv[2]) : 50000;
    int nwatch = argc > 3 ? atoi(argv[3]) : 1000;
    curl_global_init(CURL_GLOBAL_ALL);
    lop_apiserver_opts_t o = {.history = nev + 1000};
    lop_apiserver_t *srv;
    lop_err_t err;
    if (lop_apiserver_start(&o, &srv, &err) != LOP_OK) {
        fprintf(stderr, "start: %s\n", err.message);
        return 1;
    }
    const char *base = lop_apiserver_url(srv);
    char url[512];
    CURL *c = curl_easy_init();
    char pad[1001];
    memset(pad, 'x', 900);
    pad[900] = '\0';
    snprintf(url, sizeof url, "%s/api/v1/namespaces/default/configmaps", base);
    double t0 = now_s();
    for (int i = 0; i < nobj; i++) {
        char body[1200];
        snprintf(body, sizeof body,
                 "{\"metadata\":{\"name\":\"cm-%05d\",\"labels\":{\"bench\":\"yes\"}},\"data\":{\"v\":\"%s\"}}", i,
                 pad);
        if (req(c, "POST", url, body, NULL, NULL) != 201) {
            fprintf(stderr, "create %d failed\n", i);
            return 1;
        }
    }
    double t1 = now_s();
    printf("create: %d objects in %.2f s (%.0f req/s)\n", nobj, t1 - t0, nobj / (t1 - t0));
    double best = 1e9;
    size_t bytes = 0;
    for (int k = 0; k < 5; k++) {
        lop_buf_t out = LOP_BUF_INIT;
        double a = now_s();
        req(c, "GET", url, NULL, NULL, &out);
        double b = now_s();
        if (b - a < best) best = b - a;
        bytes = out.len;
        lop_buf_free(&out);
    }
    printf("list: %d objects, %.1f MB, best of 5: %.1f ms\n", nobj, bytes / 1e6, best * 1000);

    /* one watcher: nev events replayed from history */
    int64_t rv0 = lop_apiserver_revision(srv);
    snprintf(url, sizeof url, "%s/api/v1/namespaces/default/configmaps/cm-00000", base);
    t0 = now_s();
    for (int i = 0; i < nev; i++) {
        char body[64];
        snprintf(body, sizeof body, "{\"data\":{\"n\":\"%d\"}}", i);
        req(c, "PATCH", url, body, "application/merge-patch+json", NULL);
    }
    t1 = now_s();
    printf("writes: %d patches in %.2f s (%.0f req/s)\n", nev, t1 - t0, nev / (t1 - t0));
    snprintf(url, sizeof url, "%s/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=%lld&timeoutSeconds=60",
             base, (long long)rv0);
    CURLM *m = curl_multi_init();
    CURL *w = curl_easy_init();
    counter_t cnt = {0};
    curl_easy_setopt(w, CURLOPT_URL, url);
    curl_easy_setopt(w, CURLOPT_WRITEFUNCTION, count_lines);
    curl_easy_setopt(w, CURLOPT_WRITEDATA, &cnt);
    curl_easy_setopt(w, CURLOPT_BUFFERSIZE, 512L * 1024L);
    curl_multi_add_handle(m, w);
    t0 = now_s();
    int running = 1;
    while (cnt.lines < nev && running) {
        curl_multi_perform(m, &running);
        curl_multi_poll(m, NULL, 0, 100, NULL);
    }
    t1 = now_s();
    printf("watch: one watcher received %ld events in %.3f s (%.0f events/s)\n", cnt.lines, t1 - t0,
           cnt.lines / (t1 - t0));
    curl_multi_remove_handle(m, w);
    curl_easy_cleanup(w);

    /* many watchers */
    CURL **ws = calloc((size_t)nwatch, sizeof *ws);
    counter_t *cs = calloc((size_t)nwatch, sizeof *cs);
    /* no RV + bookmarks: each watch's first line is the initial-events-end bookmark, so we know
     * when all of them are established */
    snprintf(url, sizeof url,
             "%s/api/v1/namespaces/kube-public/configmaps?watch=1&allowWatchBookmarks=true&timeoutSeconds=60", base);
    for (int i = 0; i < nwatch; i++) {
        ws[i] = curl_easy_init();
        curl_easy_setopt(ws[i], CURLOPT_URL, url);
        curl_easy_setopt(ws[i], CURLOPT_WRITEFUNCTION, count_lines);
        curl_easy_setopt(ws[i], CURLOPT_WRITEDATA, &cs[i]);
        curl_multi_add_handle(m, ws[i]);
    }
    curl_multi_setopt(m, CURLMOPT_MAXCONNECTS, (long)nwatch + 10);
    double c0 = now_s();
    int ready = 0;
    while (ready < nwatch && now_s() - c0 < 30) {
        curl_multi_perform(m, &running);
        curl_multi_poll(m, NULL, 0, 10, NULL);
        ready = 0;
        for (int i = 0; i < nwatch; i++) ready += cs[i].lines > 0;
    }
    printf("fan-out: %d watches established in %.0f ms\n", ready, (now_s() - c0) * 1000);
    snprintf(url, sizeof url, "%s/api/v1/namespaces/kube-public/configmaps", base);
    t0 = now_s();
    req(c, "POST", url, "{\"metadata\":{\"name\":\"fanout\"}}", NULL, NULL);
    int got = 0;
    while (got < nwatch && now_s() - t0 < 20) {
        curl_multi_perform(m, &running);
        curl_multi_poll(m, NULL, 0, 10, NULL);
        got = 0;
        for (int i = 0; i < nwatch; i++) got += cs[i].lines > 1;
    }
    t1 = now_s();
    printf("fan-out: %d concurrent watches held, %d received the event in %.1f ms\n", nwatch, got, (t1 - t0) * 1000);
    for (int i = 0; i < nwatch; i++) {
        curl_multi_remove_handle(m, ws[i]);
        curl_easy_cleanup(ws[i]);
    }
    free(ws);
    free(cs);
    curl_multi_cleanup(m);
    curl_easy_cleanup(c);
    lop_apiserver_stop(srv);
    curl_global_cleanup();
    return 0;
}
