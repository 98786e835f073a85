/* SPDX-License-Identifier: Apache-2.0 */
/*
 * webhook.c — lopbench-webhook, the webhook benchmark's two programs (bench/README.md "webhook"):
 *
 *   lopbench-webhook certs DIR
 *       a CA (DIR/ca.crt) and a serving certificate for 127.0.0.1 (DIR/tls.crt, tls.key), certgen.h
 *   lopbench-webhook stub DIR
 *       the real webhook server (host/runtime/webhook/webhook_server.h) on 127.0.0.1:0 with DIR's
 *       pair and a dispatcher written in C that allows every review (no Lua): the ceiling the Lua
 *       validator is compared with. Prints "port=N", serves until stdin closes.
 *   lopbench-webhook load PORT CAFILE PATH CONNS SECONDS RATE
 *       CONNS threads, each with one keep-alive TLS connection (OpenSSL, verifying CAFILE), POST
 *       AdmissionReviews to PATH for SECONDS. RATE 0: each sends the next as soon as the answer
 *       is in (throughput); RATE > 0: reviews/s in all, each thread on its own fixed schedule,
 *       latency counted from the scheduled time (no coordinated omission). Prints one line
 *       "reviews=N failed=N secs=S rps=R p50_ms=X p99_ms=Y max_ms=Z".
 */
#include "host/codec/certgen.h"
#include "host/runtime/webhook/webhook_server.h"

#include "bench_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

static int write_pem(const char *dir, const char *name, const char *pem)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs(pem, f);
    return fclose(f);
}

static int cmd_certs(const char *dir)
{
    lop_cert_pair_t ca = {0}, srv = {0};
    lop_err_t err;
    if (lop_certgen_ca("lopbench-ca", 86400, &ca, &err) != LOP_OK ||
        lop_certgen_serving(&ca, "lopbench", "IP:127.0.0.1,DNS:localhost", 86400, &srv, &err) != LOP_OK) {
        fprintf(stderr, "certgen: %s\n", err.message);
        return 1;
    }
    int rc = write_pem(dir, "ca.crt", ca.cert_pem) | write_pem(dir, "tls.crt", srv.cert_pem) |
             write_pem(dir, "tls.key", srv.key_pem);
    lop_cert_pair_free(&ca);
    lop_cert_pair_free(&srv);
    if (!rc) printf("certs=%s\n", dir);
    return rc ? 1 : 0;
}

/* The C dispatcher: every review allowed, nothing parsed beyond what the server does itself. */
static lop_rc_t allow_all(void *ud, const char *path, const char *request_json, size_t len, lop_admission_result_t *res,
                          lop_err_t *err)
{
    res->allowed = true;
    return LOP_OK;
}

static int cmd_stub(const char *dir)
{
    lop_webhook_server_opts_t so = {.bind_addr = "127.0.0.1:0", .cert_dir = dir};
    lop_webhook_dispatch_t d = {.admit = allow_all};
    lop_webhook_server_t *s = NULL;
    lop_err_t err;
    if (lop_webhook_server_start(&so, &d, &s, &err) != LOP_OK) {
        fprintf(stderr, "stub: %s\n", err.message);
        return 1;
    }
    printf("port=%d\n", lop_webhook_server_port(s));
    fflush(stdout);
    char buf[64];
    while (read(0, buf, sizeof buf) > 0) {}
    lop_webhook_server_free(s);
    return 0;
}

/* ------------------------------------------------------------------ load */

typedef struct load {
    int port;
    SSL_CTX *ctx;
    const char *path;
    double secs, rate_per_thread;
    double *lat; /* seconds, one per review */
    size_t nlat, cap;
    long failed;
    const char *body;
} load_t;

static SSL *dial(load_t *l)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)l->port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return NULL;
    }
    SSL *ssl = SSL_new(l->ctx);
    SSL_set_fd(ssl, fd);
    SSL_set1_host(ssl, "127.0.0.1");
    if (SSL_connect(ssl) != 1) {
        SSL_free(ssl);
        close(fd);
        return NULL;
    }
    return ssl;
}

static void hang_up(SSL *ssl)
{
    int fd = SSL_get_fd(ssl);
    SSL_free(ssl);
    close(fd);
}

/* One request and its whole answer; true for a 200 that allows. */
static bool one_review(SSL *ssl, const char *req, size_t reqlen)
{
    if (SSL_write(ssl, req, (int)reqlen) != (int)reqlen) return false;
    char buf[16384];
    size_t have = 0;
    long want = -1;
    size_t head = 0;
    for (;;) {
        int n = SSL_read(ssl, buf + have, (int)(sizeof buf - 1 - have));
        if (n <= 0) return false;
        have += (size_t)n;
        buf[have] = '\0';
        if (want < 0) {
            char *end = strstr(buf, "\r\n\r\n");
            if (!end) continue;
            head = (size_t)(end + 4 - buf);
            char *cl = strcasestr(buf, "Content-Length:");
            want = cl ? strtol(cl + 15, NULL, 10) : 0;
        }
        if (have >= head + (size_t)want) break;
        if (have >= sizeof buf - 1) return false;
    }
    return strncmp(buf, "HTTP/1.1 200", 12) == 0 && strstr(buf + head, "\"allowed\":true") != NULL;
}

static void record(load_t *l, double v)
{
    if (l->nlat == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 4096;
        l->lat = realloc(l->lat, l->cap * sizeof *l->lat);
    }
    l->lat[l->nlat++] = v;
}

static void *load_main(void *arg)
{
    load_t *l = arg;
    char req[8192];
    int n = snprintf(req, sizeof req,
                     "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\n\r\n%s",
                     l->path, strlen(l->body), l->body);
    SSL *ssl = dial(l);
    double start = bu_now(), end = start + l->secs, next = start;
    while (ssl) {
        double t = bu_now();
        if (l->rate_per_thread > 0) {
            if (next >= end) break;
            if (next > t) usleep((useconds_t)((next - t) * 1e6)); /* the open-loop schedule */
            t = next;
            next += 1.0 / l->rate_per_thread;
        } else if (t >= end) {
            break;
        }
        if (!one_review(ssl, req, (size_t)n)) {
            l->failed++;
            hang_up(ssl);
            ssl = dial(l);
            continue;
        }
        record(l, bu_now() - t);
    }
    if (ssl) hang_up(ssl);
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static const char REVIEW[] =
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"b-1\","
    "\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"ConfigMap\"},\"resource\":{\"group\":\"\","
    "\"version\":\"v1\",\"resource\":\"configmaps\"},\"operation\":\"CREATE\",\"namespace\":\"default\","
    "\"name\":\"c\",\"userInfo\":{\"username\":\"bench\"},\"object\":{\"apiVersion\":\"v1\",\"kind\":"
    "\"ConfigMap\",\"metadata\":{\"name\":\"c\",\"namespace\":\"default\",\"labels\":{\"app\":\"bench\"}},"
    "\"data\":{\"key\":\"value\",\"size\":\"3\"}},\"dryRun\":false}}";

static int cmd_load(char **argv)
{
    int conns = atoi(argv[5]);
    double secs = atof(argv[6]), rate = atof(argv[7]);
    if (conns < 1 || conns > 64 || secs <= 0) return 2;
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (SSL_CTX_load_verify_locations(ctx, argv[3], NULL) != 1) return 1;
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    load_t *ls = calloc((size_t)conns, sizeof *ls);
    pthread_t th[64];
    double t0 = bu_now();
    for (int i = 0; i < conns; i++) {
        ls[i] = (load_t){.port = atoi(argv[2]),
                         .ctx = ctx,
                         .path = argv[4],
                         .secs = secs,
                         .rate_per_thread = rate / conns,
                         .body = REVIEW};
        pthread_create(&th[i], NULL, load_main, &ls[i]);
    }
    size_t total = 0;
    long failed = 0;
    for (int i = 0; i < conns; i++) {
        pthread_join(th[i], NULL);
        total += ls[i].nlat;
        failed += ls[i].failed;
    }
    double wall = bu_now() - t0;
    double *all = malloc((total ? total : 1) * sizeof *all);
    size_t k = 0;
    for (int i = 0; i < conns; i++) {
        memcpy(all + k, ls[i].lat, ls[i].nlat * sizeof *all);
        k += ls[i].nlat;
        free(ls[i].lat);
    }
    qsort(all, total, sizeof *all, cmp_double);
    double p50 = total ? all[total / 2] : 0, p99 = total ? all[(size_t)((double)(total - 1) * 0.99)] : 0;
    double mx = total ? all[total - 1] : 0;
    printf("reviews=%zu failed=%ld secs=%.3f rps=%.1f p50_ms=%.3f p99_ms=%.3f max_ms=%.3f\n", total, failed, wall,
           (double)total / wall, p50 * 1e3, p99 * 1e3, mx * 1e3);
    free(all);
    free(ls);
    SSL_CTX_free(ctx);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "certs") == 0) return cmd_certs(argv[2]);
    if (argc == 3 && strcmp(argv[1], "stub") == 0) return cmd_stub(argv[2]);
    if (argc == 8 && strcmp(argv[1], "load") == 0) return cmd_load(argv);
    fprintf(stderr, "usage: lopbench-webhook certs DIR | stub DIR | load PORT CAFILE PATH CONNS SECONDS RATE\n");
    return 2;
}
