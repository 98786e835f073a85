/*
 * Unit tests of the HTTP/1.1 transport (host/kube/transport.h) against raw loopback servers made
 * here (one thread per connection, scripted by each test) and, for TLS, the embedded API server:
 * response framing (Content-Length, chunked, until close, bodiless, 1xx), header block limits,
 * malformed and truncated responses, gzip, read sizes, keep-alive and the one safe resend,
 * stop / abort / timeout, connect errors, server URL parsing, TLS verification and reuse.
 *
 * Nothing here waits for time to pass: servers wait for the client (its requests, its callbacks,
 * its closing the connection), the client for the servers. Every exchange has a 10 s timeout so a
 * bug fails a check instead of hanging the test.
 */
#include "test_transport_srv.h"

#include <zlib.h>

static const char OK2[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

/* ---- framing ---- */

/* A Content-Length body; the request line and headers the transport sends for a GET. */
static void test_content_length_body(void)
{
    reply_t r[] = {{.data = "HTTP/1.1 200 OK\r\nContent-Length: 11\r\nX-Spaced: \t a b \t\r\n\r\nhello world"}};
    srv_t *s;
    lop_transport_t *t;
    if (!setup(&s, &t, r, 1)) return;
    got_t g = {.s = s};
    lop_http_exchange_t x = {.target = "/some/path?q=1", .headers = "X-Extra: 1\r\nAccept: */*\r\n"};
    T_EQ_INT(run(t, &x, &g), LOP_HTTP_OK);
    T_EQ_INT(x.code, 200);
    T_CHECK(x.response_started);
    T_EQ_STR(x.error, "");
    T_EQ_INT(g.nstatus, 1);
    T_EQ_INT(g.status, 200);
    T_EQ_STR(g.headers.data, "Content-Length: 11\nX-Spaced: a b\n");
    T_EQ_STR(g.body.data, "hello world");
    char want[256];
    snprintf(want, sizeof want, "GET /some/path?q=1 HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nX-Extra: 1\r\nAccept: */*\r\n\r\n",
             s->port);
    T_EQ_STR(srv_req(s, 0).head, want);
    teardown(s, t, &g);
}

/* Request bodies: Content-Length with a body, with send_length and none, a body larger than one
 * write; Accept-Encoding only when gzip is asked for. */
static void test_request_bodies_and_headers(void)
{
    reply_t r[] = {{.data = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"}};
    srv_t *s;
    lop_transport_t *t;
    if (!setup(&s, &t, r, 1)) return;
    got_t g = {.s = s};
    lop_http_exchange_t x = {.method = "POST", .target = "/p", .body = "abc", .body_len = 3};
    T_EQ_INT(run(t, &x, &g), LOP_HTTP_OK);
    T_CHECK(has(srv_req(s, 0).head, "POST /p HTTP/1.1\r\n"));
    T_CHECK(has(srv_req(s, 0).head, "\r\nContent-Length: 3\r\n"));
    T_EQ_STR(srv_req(s, 0).body, "abc");
    x = (lop_http_exchange_t){.method = "POST", .target = "/empty", .send_length = true};
    T_EQ_INT(run(t, &x, &g), LOP_HTTP_OK);
    T_CHECK(has(srv_req(s, 1).head, "\r\nContent-Length: 0\r\n"));
    x = (lop_http_exchange_t){.method = "DELETE", .target = "/nolength"};
    T_EQ_INT(run(t, &x, &g), LOP_HTTP_OK);
    T_CHECK(!has(srv_req(s, 2).head, "Content-Length"));
    T_CHECK(!has(srv_req(s, 2).head, "Accept-Encoding"));
    size_t big = 300 * 1000;
    char *body = lop_xmalloc(big);
    for (size_t i = 0; i < big; i++) body[i] = (char)('a' + i % 26);
    x = (lop_http_exchange_t){.method = "PUT", .target = "/big", .body = body, .body_len = big, .gzip = true};
    T_EQ_INT(run(t, &x, &g), LOP_HTTP_OK);
    req_t q = srv_req(s, 3);
    T_CHECK(has(q.head, "\r\nContent-Length: 300000\r\n"));
    T_CHECK(has(q.head, "\r\nAccept-Encoding: gzip\r\n"));
    T_EQ_INT(q.body_len, big);
    T_CHECK(q.body_len == big && memcmp(q.body, body, big) == 0);
    T_EQ_INT(lop_transport_connects(t), 1);
    free(body);
    teardown(s, t, &g);
}

#define CHUNKED_HEAD "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
/* chunk extensions, lowercase and uppercase hex, whitespace before an extension, trailers */
#define CHUNKED_BODY                                                                    \
    "5;name=value\r\nhello\r\n1a\r\nabcdefghijklmnopqrstuvwxyz\r\nA ;x=\"q\"\r\n0123456789\r\n" \
    "0;last\r\nX-Trailer: t\r\nX-Other: u\r\n\r\n"
#define CHUNKED_DECODED "helloabcdefghijklmnopqrstuvwxyz0123456789"

/* A chunked body; the trailer section is consumed (the connection serves the next exchange) and
 * not reported as headers. */
static void test_chunked_body(void)
{
    reply_t r[] = {{.data = CHUNKED_HEAD CHUNKED_BODY}};
    srv_t *s;
    lop_transport_t *t;
    if (!setup(&s, &t, r, 1)) return;
    got_t g = {.s = s};
    lop_http_exchange_t x;
    for (int i = 0; i < 2; i++) {
        T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_OK);
        T_EQ_INT(x.code, 200);
        T_EQ_STR(g.body.data, CHUNKED_DECODED);
        T_EQ_STR(g.headers.data, "Transfer-Encoding: chunked\n");
    }
    T_EQ_INT(lop_transport_connects(t), 1);
    T_EQ_INT(srv_nconns(s), 1);
    teardown(s, t, &g);
}

/* The chunked body sent after the client has the head, read with read_bytes 1, 2, 3, 5, 7: every
 * read ends at a different place in the framing (with 1: after every byte); the body and the
 * connection's reuse come out the same, and no on_body call passes more than read_bytes. */
static void test_chunked_split_at_every_byte(void)
{
    static const char resp[] = CHUNKED_HEAD CHUNKED_BODY;
    reply_t r[] = {{.data = resp, .split = sizeof CHUNKED_HEAD - 1}};
    srv_t *s;
    lop_transport_t *t;
    if (!setup(&s, &t, r, 1)) return;
    got_t g = {.s = s};
    static const size_t sizes[] = {1, 2, 3, 5, 7};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        lop_http_exchange_t x = {.read_bytes = sizes[i]};
        T_EQ_INT(run(t, &x, &g), LOP_HTTP_OK);
        T_EQ_STR(g.body.data, CHUNKED_DECODED);
        T_CHECK(g.max_piece <= sizes[i]);
        if (sizes[i] == 1) T_EQ_INT(g.pieces, sizeof CHUNKED_DECODED - 1);
    }
    T_EQ_INT(lop_transport_connects(t), 1);
    teardown(s, t, &g);
}

/* The client's end of the server's connection fd (the transport runs in this process), or -1. */
static int client_end(int fd)
{
    struct sockaddr_storage peer, self, a;
    socklen_t pl = sizeof peer, sl = sizeof self, al;
    if (getpeername(fd, (struct sockaddr *)&peer, &pl) < 0 || getsockname(fd, (struct sockaddr *)&self, &sl) < 0) return -1;
    for (int c = 0; c < 1024; c++) {
        if (c == fd) continue;
        al = sizeof a;
        if (getsockname(c, (struct sockaddr *)&a, &al) < 0 || al != pl || memcmp(&a, &peer, pl) != 0) continue;
        al = sizeof a;
        if (getpeername(c, (struct sockaddr *)&a, &al) == 0 && al == sl && memcmp(&a, &self, sl) == 0) return c;
    }
    return -1;
}

/* The client end has received all sent bytes and holds none unread: the client has read them. */
static bool client_read_all(int cfd, uint64_t sent)
{
    struct tcp_info ti;
    socklen_t tl = sizeof ti;
    int unread = -1;
    return getsockopt(cfd, IPPROTO_TCP, TCP_INFO, &ti, &tl) == 0 && tl == sizeof ti &&
           ti.tcpi_bytes_received == sent && ioctl(cfd, FIONREAD, &unread) == 0 && unread == 0;
}

/* Request n gets the response in two writes split at offset n + 1. Before the second, the server
 * waits until the client has read the whole first piece (looked at after each of the client's
 * on_tick calls, which come after every body read and before every wait for more), so one of
 * the client's reads ends exactly there. */
static void serve_split_everywhere(srv_t *s, int fd, int conn)
{
    const char *resp = s->replies[0].data;
    size_t len = strlen(resp);
    uint64_t sent = 0;
    int cfd = client_end(fd);
    if (cfd < 0) return;
    srv_bump(s, &s->client_ends);
    for (;;) {
        int n = srv_read_request(s, fd, conn);
        if (n < 0) return;
        size_t k = (size_t)n % (len - 1) + 1;
        srv_send(fd, resp, k);
        sent += k;
        for (;;) {
            long ticks = srv_count(s, &s->ticks);
            if (client_read_all(cfd, sent)) break;
            if (!srv_wait(s, &s->ticks, ticks + 1)) return;
        }
        srv_send(fd, resp + k, len - k);
        sent += len - k;
    }
}

/* A response (head, chunked body with an extension, trailer) read in two parts split at every
 * offset parses the same (a split in the body shows as two on_body calls); one connection serves
 * them all. */
static void test_response_split_at_every_offset(void)
{
    static const char resp[] = "HTTP/1.1 201 Created\r\nX-A: 1\r\nTransfer-Encoding: chunked\r\n\r\n"
                               "3;e=1\r\nabc\r\n0a\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\n";
    reply_t r[] = {{.data = resp}};
    srv_t *s = srv_start(serve_split_everywhere, r, 1, false);
    lop_transport_t *t = s ? tr_new(s->url) : NULL;
    T_CHECK(s && t);
    if (!t) {
        srv_stop(s);
        return;
    }
    got_t g = {.s = s};
    int bad = 0;
    size_t abc = (size_t)(strstr(resp, "abc") - resp), digits = (size_t)(strstr(resp, "0123") - resp);
    for (size_t k = 1; k < sizeof resp - 1; k++) {
        lop_http_exchange_t x;
        lop_http_result_t res = get(t, "/", &x, &g);
        /* body bytes in the first part: 1 to 12 make two on_body calls */
        size_t before = (k > abc ? (k - abc < 3 ? k - abc : 3) : 0) + (k > digits ? (k - digits < 10 ? k - digits : 10) : 0);
        int pieces = before > 0 && before < 13 ? 2 : 1;
        if (res != LOP_HTTP_OK || x.code != 201 || strcmp(g.body.data, "abc0123456789") != 0 ||
            strcmp(g.headers.data, "X-A: 1\nTransfer-Encoding: chunked\n") != 0 || g.pieces != pieces) {
            fprintf(stderr, "split at %zu: result %d code %d body \"%s\" in %d on_body calls, want %d (%s)\n", k, res,
                    x.code, g.body.data, g.pieces, pieces, x.error);
            bad++;
        }
    }
    T_EQ_INT(bad, 0);
    T_EQ_INT(srv_nreqs(s), sizeof resp - 2);
    T_EQ_INT(srv_count(s, &s->client_ends), 1);
    T_EQ_INT(lop_transport_connects(t), 1);
    teardown(s, t, &g);
}

/* No Content-Length and not chunked: the body ends with the connection, which is not reused. */
static void test_body_until_close(void)
{
    reply_t r[] = {{.data = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nthe body ends when the connection does",
                    .close = true},
                   {.data = "HTTP/1.0 200 OK\r\n\r\nan HTTP/1.0 one too", .close = true}};
    srv_t *s;
    lop_transport_t *t;
    if (!setup(&s, &t, r, 2)) return;
    got_t g = {.s = s};
    lop_http_exchange_t x;
    T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_OK);
    T_EQ_STR(g.body.data, "the body ends when the connection does");
    T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_OK);
    T_EQ_STR(g.body.data, "an HTTP/1.0 one too");
    T_EQ_INT(lop_transport_connects(t), 2);
    teardown(s, t, &g);
}

/* 204, 304 (with a Content-Length) and HEAD responses have no body: nothing is waited for or
 * consumed, and the same connection serves the next exchange. */
static void test_responses_without_body(void)
{
    reply_t r[] = {{.data = "HTTP/1.1 204 No Content\r\n\r\n"},
                   {.data = "HTTP/1.1 304 Not Modified\r\nContent-Length: 42\r\nETag: \"x\"\r\n\r\n"},
                   {.data = "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n"},
                   {.data = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"},
                   {.data = OK2}};
    srv_t *s;
    lop_transport_t *t;
    if (!setup(&s, &t, r, 5)) return;
    got_t g = {.s = s};
    lop_http_exchange_t x;
    T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_OK);
    T_EQ_INT(x.code, 204);
    T_EQ_INT(g.body.len, 0);
    T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_OK);
    T_EQ_INT(x.code, 304);
    T_EQ_INT(g.body.len, 0);
    for (int i = 0; i < 2; i++) {
        x = (lop_http_exchange_t){.method = "HEAD"};
        T_EQ_INT(run(t, &x, &g), LOP_HTTP_OK);
        T_EQ_INT(x.code, 200);
        T_EQ_INT(g.body.len, 0);
    }
    T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_OK);
    T_EQ_STR(g.body.data, "ok");
    T_EQ_INT(lop_transport_connects(t), 1);
    T_EQ_INT(srv_nreqs(s), 5);
    teardown(s, t, &g);
}

/* 100 and 103 before the final response: one on_status (the final code), and on_header only for
 * the final response's fields. */
static void test_interim_responses_skipped(void)
{
    reply_t r[] = {{.data = "HTTP/1.1 100 Continue\r\n\r\n"
                    "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
                    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Final: yes\r\n\r\nok"}};
    srv_t *s;
    lop_transport_t *t;
    if (!setup(&s, &t, r, 1)) return;
    got_t g = {.s = s};
    lop_http_exchange_t x;
    T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_OK);
    T_EQ_INT(x.code, 200);
    T_EQ_INT(g.nstatus, 1);
    T_EQ_INT(g.status, 200);
    T_EQ_STR(g.headers.data, "Content-Length: 2\nX-Final: yes\n");
    T_EQ_STR(g.body.data, "ok");
    teardown(s, t, &g);
}

/* "HTTP/1.1 200 OK\r\n" + headers (lines of ~100 bytes, or one long line) until the block holds
 * at least size bytes + Content-Length 2 + "ok". */
static char *big_head(size_t size, bool one_line, int *nheaders)
{
    lop_buf_t b = LOP_BUF_INIT;
    lop_buf_puts(&b, "HTTP/1.1 200 OK\r\n");
    *nheaders = 1;
    if (one_line) {
        lop_buf_puts(&b, "X-Long: ");
        while (b.len < size) lop_buf_putc(&b, 'v');
        lop_buf_puts(&b, "\r\n");
        (*nheaders)++;
    }
    while (b.len < size) {
        lop_buf_printf(&b, "X-Pad-%05d: %s\r\n", *nheaders,
                       "0123456789012345678901234567890123456789012345678901234567890123456789012345678");
        (*nheaders)++;
    }
    lop_buf_puts(&b, "Content-Length: 2\r\n\r\nok");
    return lop_buf_steal(&b);
}

/* A 40 KiB header block (many lines, or one line) is read whole: larger than the first read
 * buffer; over 64 KiB (either way) is EPROTO. */
static void test_header_block_limits(void)
{
    int n40, n40l, n70, n70l;
    char *h40 = big_head(40 * 1024, false, &n40), *h40l = big_head(40 * 1024, true, &n40l);
    char *h70 = big_head(70 * 1024, false, &n70), *h70l = big_head(70 * 1024, true, &n70l);
    reply_t r[] = {{.data = h40}, {.data = h40l}, {.data = h70}, {.data = h70l}};
    srv_t *s;
    lop_transport_t *t;
    if (setup(&s, &t, r, 4)) {
        got_t g = {.s = s};
        lop_http_exchange_t x;
        T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_OK);
        T_EQ_INT(g.nheaders, n40);
        T_CHECK(has(g.headers.data, "X-Pad-00001: 0123"));
        T_EQ_STR(g.body.data, "ok");
        T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_OK);
        T_EQ_INT(g.nheaders, 2);
        T_CHECK(g.headers.len > 40 * 1024 - 100);
        T_EQ_STR(g.body.data, "ok");
        T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_EPROTO);
        T_CHECK(has(x.error, "header block"));
        T_EQ_STR(g.body.data, "");
        T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_EPROTO);
        T_CHECK(has(x.error, "header block"));
        T_EQ_INT(srv_nreqs(s), 4);
        got_free(&g);
        lop_transport_free(t);
        srv_stop(s);
    }
    free(h40);
    free(h40l);
    free(h70);
    free(h70l);
}

typedef struct bad_case {
    const char *resp;
    lop_http_result_t want;
    const char *error; /* a part of x.error */
} bad_case_t;

static void run_bad_cases(const bad_case_t *cases, int n)
{
    reply_t r[SRV_MAX_REPLIES];
    for (int i = 0; i < n; i++) r[i] = (reply_t){.data = cases[i].resp, .close = true};
    srv_t *s;
    lop_transport_t *t;
    if (!setup(&s, &t, r, n)) return;
    got_t g = {.s = s};
    char hp[64];
    snprintf(hp, sizeof hp, "127.0.0.1:%d", s->port);
    int bad = 0;
    for (int i = 0; i < n; i++) {
        lop_http_exchange_t x;
        lop_http_result_t res = get(t, "/", &x, &g);
        if (res != cases[i].want || !has(x.error, cases[i].error) || !has(x.error, hp)) {
            fprintf(stderr, "case %d %.30s...: result %d, want %d; error \"%s\", want \"%s\"\n", i, cases[i].resp,
                    res, cases[i].want, x.error, cases[i].error);
            bad++;
        }
    }
    T_EQ_INT(bad, 0);
    T_EQ_INT(srv_nreqs(s), n); /* none was sent twice */
    teardown(s, t, &g);
}

/* Responses that are not HTTP/1.x or whose framing is broken: LOP_HTTP_EPROTO, naming the server. */
static void test_malformed_responses(void)
{
    static const bad_case_t cases[] = {
        {"HTTP/2 200 OK\r\n\r\n", LOP_HTTP_EPROTO, "is not HTTP/1.x: \"HTTP/2 200 OK\""},
        {"garbage\r\n\r\n", LOP_HTTP_EPROTO, "is not HTTP/1.x: \"garbage\""},
        {"HTTP/1.2 200 OK\r\n\r\n", LOP_HTTP_EPROTO, "not HTTP/1.x"},
        {"HTTP/1.1 099 Low\r\n\r\n", LOP_HTTP_EPROTO, "not HTTP/1.x"},
        {"HTTP/1.1 200 OK\r\nContent-Length : 5\r\n\r\nhelloEXTRA", LOP_HTTP_EPROTO, "bad header line"},
        {"HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\n\r\n", LOP_HTTP_EPROTO, "bad header line"},
        {"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\n"
         "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\n"
         "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", LOP_HTTP_EPROTO, "more than 5 interim"},
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", LOP_HTTP_EPROTO,
         "unsupported Transfer-Encoding \"gzip, chunked\""},
        {"ICY 200 OK\r\n\r\n", LOP_HTTP_EPROTO, "not HTTP/1.x"},
        {"HTTP/1.1 20 OK\r\n\r\n", LOP_HTTP_EPROTO, "not HTTP/1.x"},
        {"HTTP/1.1 2000 OK\r\n\r\n", LOP_HTTP_EPROTO, "not HTTP/1.x"},
        {"HTTP/1.1 200 OK\r\nContent-Length: x1\r\n\r\n", LOP_HTTP_EPROTO, "bad Content-Length"},
        {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello", LOP_HTTP_EPROTO, "bad Content-Length"},
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", LOP_HTTP_EPROTO, "unsupported Transfer-Encoding \"gzip\""},
        {CHUNKED_HEAD "zz\r\nhello\r\n0\r\n\r\n", LOP_HTTP_EPROTO, "bad chunk size line"},
        {CHUNKED_HEAD "\r\nhello\r\n0\r\n\r\n", LOP_HTTP_EPROTO, "bad chunk size line"},
        {CHUNKED_HEAD "-5\r\nhello\r\n0\r\n\r\n", LOP_HTTP_EPROTO, "bad chunk size line"},
        {CHUNKED_HEAD "5x\r\nhello\r\n0\r\n\r\n", LOP_HTTP_EPROTO, "bad chunk size line"},
        {CHUNKED_HEAD "5 zzz\r\nhello\r\n0\r\n\r\n", LOP_HTTP_EPROTO, "bad chunk size line"},
        {CHUNKED_HEAD "3\r\nhello\r\n0\r\n\r\n", LOP_HTTP_EPROTO, "chunk longer than its size"},
        {CHUNKED_HEAD "fffffffffffffffff\r\n", LOP_HTTP_EPROTO, "chunk size too large"},
    };
    run_bad_cases(cases, (int)(sizeof cases / sizeof *cases));
    /* a chunk-size line that never ends */
    lop_buf_t b = LOP_BUF_INIT;
    lop_buf_puts(&b, CHUNKED_HEAD "5;");
    for (int i = 0; i < 8000; i++) lop_buf_putc(&b, 'x');
    bad_case_t long_line = {b.data, LOP_HTTP_EPROTO, "bad chunked framing"};
    run_bad_cases(&long_line, 1);
    lop_buf_free(&b);
    /* the error quotes the status line alone (no CR/LF, nothing after it) */
    reply_t r[] = {{.data = "garbage\r\nX: y\r\n\r\n", .close = true}};
    srv_t *s;
    lop_transport_t *t;
    if (!setup(&s, &t, r, 1)) return;
    got_t g = {.s = s};
    lop_http_exchange_t x;
    char want[128];
    snprintf(want, sizeof want, "response from 127.0.0.1:%d is not HTTP/1.x: \"garbage\"", s->port);
    T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_EPROTO);
    T_EQ_STR(x.error, want);
    teardown(s, t, &g);
}

/* The connection closing before the response is complete: LOP_HTTP_ERESET (nothing resent: each
 * is on a new connection). */
static void test_truncated_responses(void)
{
    static const bad_case_t cases[] = {
        {"", LOP_HTTP_ERESET, "closed the connection before responding"},
        {"HTTP/1.1 200 OK\r\nContent-Le", LOP_HTTP_ERESET, "in the middle of the response headers"},
        {"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello", LOP_HTTP_ERESET, "before the end of the body"},
        {CHUNKED_HEAD "5\r\nhel", LOP_HTTP_ERESET, "before the end of the body"},
        {CHUNKED_HEAD "5\r\nhello\r\n", LOP_HTTP_ERESET, "before the end of the body"},
        {CHUNKED_HEAD "5\r\nhello\r\n0\r\n", LOP_HTTP_ERESET, "before the end of the body"},
        {CHUNKED_HEAD "5\r\nhello\r\n0\r\nX-Trailer: t\r\n", LOP_HTTP_ERESET, "before the end of the body"},
    };
    run_bad_cases(cases, (int)(sizeof cases / sizeof *cases));
    /* what arrived before the end is still passed on, with the status */
    reply_t r[] = {{.data = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello", .close = true}};
    srv_t *s;
    lop_transport_t *t;
    if (!setup(&s, &t, r, 1)) return;
    got_t g = {.s = s};
    lop_http_exchange_t x;
    T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_ERESET);
    T_EQ_INT(x.code, 200);
    T_CHECK(x.response_started);
    T_EQ_STR(g.body.data, "hello");
    teardown(s, t, &g);
}

/* ---- gzip ---- */

/* Append p compressed with the given zlib window bits (16 + MAX_WBITS: gzip) and flush. */
static void compress_into(lop_buf_t *out, const char *p, size_t n, int bits, int flush)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    T_EQ_INT(deflateInit2(&z, 6, Z_DEFLATED, bits, 8, Z_DEFAULT_STRATEGY), Z_OK);
    size_t cap = deflateBound(&z, n) + 64;
    lop_buf_reserve(out, cap);
    z.next_in = (Bytef *)p;
    z.avail_in = (uInt)n;
    z.next_out = (Bytef *)out->data + out->len;
    z.avail_out = (uInt)cap;
    T_EQ_INT(deflate(&z, flush), flush == Z_FINISH ? Z_STREAM_END : Z_OK);
    T_EQ_INT(z.avail_in, 0);
    out->len = (size_t)((char *)z.next_out - out->data);
    out->data[out->len] = '\0';
    deflateEnd(&z);
}

/* "HTTP/1.1 200 OK" with the given headers and body, framed by Content-Length or as chunks of
 * chunk bytes (0 = Content-Length). */
static void response_into(lop_buf_t *out, const char *headers, const char *body, size_t n, size_t chunk)
{
    lop_buf_printf(out, "HTTP/1.1 200 OK\r\n%s", headers);
    if (!chunk) {
        lop_buf_printf(out, "Content-Length: %zu\r\n\r\n", n);
        lop_buf_append(out, body, n);
        return;
    }
    lop_buf_puts(out, "Transfer-Encoding: chunked\r\n\r\n");
    for (size_t i = 0; i < n; i += chunk) {
        size_t k = n - i < chunk ? n - i : chunk;
        lop_buf_printf(out, "%zx\r\n", k);
        lop_buf_append(out, body + i, k);
        lop_buf_puts(out, "\r\n");
    }
    lop_buf_puts(out, "0\r\n\r\n");
}

static char *text_body(size_t *n)
{
    lop_buf_t b = LOP_BUF_INIT;
    for (int i = 0; b.len < 64 * 1024; i++)
        lop_buf_printf(&b, "line %05d: the quick brown fox jumps over the lazy dog %d\n", i, i * 7919 % 1000);
    *n = b.len;
    return lop_buf_steal(&b);
}

/* gzip bodies decoded: with Content-Length and chunked framing, two concatenated members, small
 * reads (each on_body call at most read_bytes), zlib's deflate; corrupt or truncated data is
 * EPROTO; with x.gzip false the bytes pass through as sent. */
static void test_gzip(void)
{
    size_t n;
    char *text = text_body(&n);
    lop_buf_t one = LOP_BUF_INIT, two = LOP_BUF_INIT, zl = LOP_BUF_INIT, bad_crc, cut;
    compress_into(&one, text, n, 16 + MAX_WBITS, Z_FINISH);
    compress_into(&two, text, n / 3, 16 + MAX_WBITS, Z_FINISH);
    compress_into(&two, text + n / 3, n - n / 3, 16 + MAX_WBITS, Z_FINISH);
    compress_into(&zl, text, n, MAX_WBITS, Z_FINISH);
    T_CHECK(one.len < n / 4);
    bad_crc = (lop_buf_t)LOP_BUF_INIT;
    lop_buf_append(&bad_crc, one.data, one.len);
    bad_crc.data[bad_crc.len - 8] ^= 1; /* the CRC-32 in the gzip trailer */
    cut = (lop_buf_t)LOP_BUF_INIT;
    lop_buf_append(&cut, one.data, one.len - 10);
    const char *gz = "Content-Encoding: gzip\r\n";
    lop_buf_t resp[10];
    for (int i = 0; i < 10; i++) resp[i] = (lop_buf_t)LOP_BUF_INIT;
    response_into(&resp[0], gz, one.data, one.len, 0);
    response_into(&resp[1], gz, one.data, one.len, 1000);
    response_into(&resp[2], gz, two.data, two.len, 0);
    response_into(&resp[3], gz, two.data, two.len, 777);  /* read with read_bytes 1000 */
    response_into(&resp[4], gz, two.data, two.len, 3000); /* read with read_bytes 1 */
    response_into(&resp[5], "Content-Encoding: deflate\r\n", zl.data, zl.len, 0);
    response_into(&resp[6], gz, bad_crc.data, bad_crc.len, 0);
    response_into(&resp[7], gz, cut.data, cut.len, 0);
    response_into(&resp[8], gz, one.data, one.len, 0); /* asked without gzip */
    response_into(&resp[9], "Content-Encoding: br\r\n", one.data, one.len, 0); /* a coding it cannot read */
    reply_t r[10];
    for (int i = 0; i < 10; i++) r[i] = (reply_t){.data = resp[i].data, .len = resp[i].len};
    r[4].split = strstr(resp[4].data, "\r\n\r\n") + 4 - resp[4].data;
    srv_t *s;
    lop_transport_t *t;
    if (setup(&s, &t, r, 10)) {
        got_t g = {.s = s};
        static const size_t read_bytes[] = {0, 0, 0, 1000, 1};
        for (int i = 0; i < 6; i++) {
            lop_http_exchange_t x = {.gzip = true, .read_bytes = i < 5 ? read_bytes[i] : 0};
            T_EQ_INT(run(t, &x, &g), LOP_HTTP_OK);
            T_EQ_INT(g.body.len, n);
            T_CHECK(g.body.len == n && memcmp(g.body.data, text, n) == 0);
            T_CHECK(g.max_piece <= (x.read_bytes ? x.read_bytes : 16 * 1024));
            T_CHECK(has(srv_req(s, i).head, "\r\nAccept-Encoding: gzip\r\n"));
        }
        T_EQ_INT(lop_transport_connects(t), 1);
        lop_http_exchange_t x = {.gzip = true};
        T_EQ_INT(run(t, &x, &g), LOP_HTTP_EPROTO);
        T_CHECK(has(x.error, "bad compressed body"));
        x = (lop_http_exchange_t){.gzip = true};
        T_EQ_INT(run(t, &x, &g), LOP_HTTP_EPROTO);
        T_CHECK(has(x.error, "compressed body is truncated"));
        x = (lop_http_exchange_t){.gzip = false};
        T_EQ_INT(run(t, &x, &g), LOP_HTTP_OK);
        T_CHECK(g.body.len == one.len && memcmp(g.body.data, one.data, one.len) == 0);
        T_CHECK(has(g.headers.data, "Content-Encoding: gzip\n"));
        T_CHECK(!has(srv_req(s, 8).head, "Accept-Encoding"));
        x = (lop_http_exchange_t){.gzip = true};
        T_EQ_INT(run(t, &x, &g), LOP_HTTP_EPROTO);
        T_CHECK(has(x.error, "unsupported Content-Encoding \"br\""));
        got_free(&g);
        lop_transport_free(t);
        srv_stop(s);
    }
    for (int i = 0; i < 10; i++) lop_buf_free(&resp[i]);
    lop_buf_free(&one);
    lop_buf_free(&two);
    lop_buf_free(&zl);
    lop_buf_free(&bad_crc);
    lop_buf_free(&cut);
    free(text);
}

/* A gzip stream that stays open (a watch): every byte of what the server flushed reaches on_body
 * without waiting for more input, even when a read ends where the decoder has more output than
 * fits one on_body call (reads of 1 byte, highly compressible events). */
static void test_gzip_stream_flushes_what_arrived(void)
{
    lop_buf_t events = LOP_BUF_INIT, resp = LOP_BUF_INIT;
    for (int i = 0; i < 40; i++)
        lop_buf_printf(&events, "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"ConfigMap\",\"data\":{\"k\":\"%s\"}}}\n",
                       "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv");
    lop_buf_puts(&resp, "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\r\n");
    size_t head = resp.len;
    compress_into(&resp, events.data, events.len, 16 + MAX_WBITS, Z_SYNC_FLUSH);
    reply_t r[] = {{.data = resp.data, .len = resp.len, .split = head, .stall = true}};
    srv_t *s;
    lop_transport_t *t;
    if (setup(&s, &t, r, 1)) {
        got_t g = {.s = s, .stop_at = events.len};
        lop_http_exchange_t x = {.gzip = true, .read_bytes = 1, .timeout_ms = 5000};
        T_EQ_INT(run(t, &x, &g), LOP_HTTP_ESTOPPED);
        T_EQ_STR(g.body.data, events.data);
        T_EQ_INT(g.max_piece, 1);
        got_free(&g);
        lop_transport_free(t);
        srv_stop(s);
    }
    lop_buf_free(&events);
    lop_buf_free(&resp);
}

/* ---- read sizes ---- */

/* No on_body call passes more than read_bytes, also when the first read (with the headers) holds
 * much more of the body, and when a large header block made the buffer grow. */
static void test_read_bytes_bound_on_body(void)
{
    lop_buf_t b[4];
    for (int i = 0; i < 4; i++) b[i] = (lop_buf_t)LOP_BUF_INIT;
    char *body = lop_xmalloc(100 * 1000);
    for (size_t i = 0; i < 100 * 1000; i++) body[i] = (char)('a' + i % 23);
    response_into(&b[0], "", body, 5000, 0);
    response_into(&b[1], "", body, 5000, 1000);
    response_into(&b[2], "", body, 100 * 1000, 0);
    int nh;
    char *h = big_head(40 * 1024, false, &nh);
    size_t hl = strlen(h) - strlen("Content-Length: 2\r\n\r\nok");
    lop_buf_append(&b[3], h, hl);
    lop_buf_printf(&b[3], "Content-Length: %d\r\n\r\n", 30 * 1000);
    lop_buf_append(&b[3], body, 30 * 1000);
    free(h);
    reply_t r[4];
    for (int i = 0; i < 4; i++) r[i] = (reply_t){.data = b[i].data, .len = b[i].len};
    static const size_t read_bytes[] = {100, 100, 0, 16 * 1024};
    static const size_t len[] = {5000, 5000, 100 * 1000, 30 * 1000};
    srv_t *s;
    lop_transport_t *t;
    if (setup(&s, &t, r, 4)) {
        got_t g = {.s = s};
        for (int i = 0; i < 4; i++) {
            lop_http_exchange_t x = {.read_bytes = read_bytes[i]};
            T_EQ_INT(run(t, &x, &g), LOP_HTTP_OK);
            T_CHECK(g.body.len == len[i] && memcmp(g.body.data, body, len[i]) == 0);
            size_t bound = read_bytes[i] ? read_bytes[i] : 16 * 1024;
            if (g.max_piece > bound) fprintf(stderr, "read_bytes %zu: an on_body call passed %zu bytes\n", bound, g.max_piece);
            T_CHECK(g.max_piece <= bound);
        }
        got_free(&g);
        lop_transport_free(t);
        srv_stop(s);
    }
    for (int i = 0; i < 4; i++) lop_buf_free(&b[i]);
    free(body);
}

/* ---- keep-alive ---- */

/* Sequential exchanges share one connection. */
static void test_keepalive_reuses_connection(void)
{
    reply_t r[] = {{.data = OK2}};
    srv_t *s;
    lop_transport_t *t;
    if (!setup(&s, &t, r, 1)) return;
    got_t g = {.s = s};
    lop_http_exchange_t x;
    for (int i = 0; i < 3; i++) {
        T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_OK);
        T_EQ_STR(g.body.data, "ok");
    }
    T_EQ_INT(lop_transport_connects(t), 1);
    T_EQ_INT(srv_nconns(s), 1);
    T_EQ_INT(srv_req(s, 2).conn, 0);
    teardown(s, t, &g);
}

/* Not reused (though the server keeps each open): after `Connection: close`, after an HTTP/1.0
 * response without keep-alive, after a response followed by unasked bytes. An HTTP/1.0 response
 * with `Connection: keep-alive` is reused. */
static void test_connection_not_reused_when_it_must_not_be(void)
{
    reply_t r[] = {{.data = "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"},
                   {.data = "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"},
                   {.data = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA"},
                   {.data = "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nok"},
                   {.data = OK2}};
    srv_t *s;
    lop_transport_t *t;
    if (!setup(&s, &t, r, 5)) return;
    got_t g = {.s = s};
    lop_http_exchange_t x;
    for (int i = 0; i < 5; i++) {
        T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_OK);
        T_EQ_STR(g.body.data, "ok");
    }
    T_EQ_INT(lop_transport_connects(t), 4);
    T_EQ_INT(srv_req(s, 3).conn, 3);
    T_EQ_INT(srv_req(s, 4).conn, 3);
    teardown(s, t, &g);
}

/* The server closes an idle pooled connection: the next GET succeeds on a new connection. */
static void test_pooled_connection_closed_by_server(void)
{
    reply_t r[] = {{.data = OK2, .close = true}, {.data = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nnew"}};
    srv_t *s;
    lop_transport_t *t;
    if (!setup(&s, &t, r, 2)) return;
    got_t g = {.s = s};
    lop_http_exchange_t x;
    T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_OK);
    srv_wait_closed(s, 1);
    T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_OK);
    T_EQ_STR(g.body.data, "new");
    T_EQ_INT(lop_transport_connects(t), 2);
    T_EQ_INT(srv_nreqs(s), 2);
    T_EQ_INT(srv_req(s, 1).conn, 1);
    teardown(s, t, &g);
}

/* A pooled connection closed after the request was sent, before any response byte: a GET is sent
 * once more on a new connection (once only); a POST is not (ERESET); nor a GET whose response had
 * begun. */
static void test_resend_only_when_safe(void)
{
    reply_t r[] = {{.data = OK2}, {.data = NULL}, {.data = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nagain"}};
    srv_t *s;
    lop_transport_t *t;
    if (!setup(&s, &t, r, 3)) return;
    got_t g = {.s = s};
    lop_http_exchange_t x;
    T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_OK);
    T_EQ_INT(get(t, "/again", &x, &g), LOP_HTTP_OK);
    T_EQ_STR(g.body.data, "again");
    T_EQ_STR(x.error, "");
    T_EQ_INT(lop_transport_connects(t), 2);
    T_EQ_INT(srv_nreqs(s), 3);
    T_EQ_INT(srv_req(s, 1).conn, 0);
    T_EQ_INT(srv_req(s, 2).conn, 1);
    T_CHECK(has(srv_req(s, 2).head, "GET /again "));
    lop_transport_free(t);
    srv_stop(s);

    /* the new connection fails the same way: no third try */
    reply_t r2[] = {{.data = OK2}, {.data = NULL}};
    if (!setup(&s, &t, r2, 2)) return;
    g.s = s;
    T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_OK);
    T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_ERESET);
    T_EQ_INT(lop_transport_connects(t), 2);
    T_EQ_INT(srv_nreqs(s), 3);
    lop_transport_free(t);
    srv_stop(s);

    /* a POST is not sent twice */
    if (!setup(&s, &t, r2, 2)) return;
    g.s = s;
    T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_OK);
    x = (lop_http_exchange_t){.method = "POST", .target = "/create", .body = "{}", .body_len = 2};
    T_EQ_INT(run(t, &x, &g), LOP_HTTP_ERESET);
    T_CHECK(!x.response_started);
    T_EQ_INT(x.code, 0);
    T_CHECK(has(x.error, "closed the connection before responding"));
    T_EQ_INT(lop_transport_connects(t), 1);
    T_EQ_INT(srv_nreqs(s), 2);
    lop_transport_free(t);
    srv_stop(s);

    /* nor a GET once its response began */
    reply_t r3[] = {{.data = OK2}, {.data = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", .close = true}};
    if (!setup(&s, &t, r3, 2)) return;
    g.s = s;
    T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_OK);
    T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_ERESET);
    T_CHECK(x.response_started);
    T_EQ_INT(x.code, 200);
    T_EQ_INT(lop_transport_connects(t), 1);
    T_EQ_INT(srv_nreqs(s), 2);
    teardown(s, t, &g);
}

/* Threads share the pool: never more connections than exchanges at once. */
typedef struct par {
    lop_transport_t *t;
    int ok;
} par_t;

static void *par_main(void *arg)
{
    par_t *p = arg;
    got_t g = {0};
    for (int i = 0; i < 25; i++) {
        lop_http_exchange_t x;
        p->ok += get(p->t, "/", &x, &g) == LOP_HTTP_OK && strcmp(g.body.data, "ok") == 0;
    }
    got_free(&g);
    return NULL;
}

static void test_concurrent_exchanges_share_the_pool(void)
{
    reply_t r[] = {{.data = OK2}};
    srv_t *s;
    lop_transport_t *t;
    if (!setup(&s, &t, r, 1)) return;
    pthread_t th[4];
    par_t p[4];
    for (int i = 0; i < 4; i++) {
        p[i] = (par_t){.t = t};
        pthread_create(&th[i], NULL, par_main, &p[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        T_EQ_INT(p[i].ok, 25);
    }
    T_CHECK(lop_transport_connects(t) >= 1 && lop_transport_connects(t) <= 4);
    T_EQ_INT(srv_nreqs(s), 100);
    lop_transport_free(t);
    srv_stop(s);
}

/* ---- stop, abort, timeout ---- */

/* on_body returning non-zero ends the exchange (ESTOPPED); the connection is not reused. */
static void test_on_body_stop(void)
{
    char *body = lop_xmalloc(100 * 1000);
    memset(body, 'x', 100 * 1000);
    lop_buf_t b = LOP_BUF_INIT;
    response_into(&b, "", body, 100 * 1000, 0);
    reply_t r[] = {{.data = b.data, .len = b.len}, {.data = OK2}};
    srv_t *s;
    lop_transport_t *t;
    if (setup(&s, &t, r, 2)) {
        got_t g = {.s = s, .stop_at = 1};
        lop_http_exchange_t x = {.read_bytes = 1000};
        T_EQ_INT(run(t, &x, &g), LOP_HTTP_ESTOPPED);
        T_EQ_INT(g.pieces, 1);
        T_CHECK(has(x.error, "stopped"));
        g.stop_at = 0;
        T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_OK);
        T_EQ_STR(g.body.data, "ok");
        T_EQ_INT(lop_transport_connects(t), 2);
        got_free(&g);
        lop_transport_free(t);
        srv_stop(s);
    }
    lop_buf_free(&b);
    free(body);
}

/* on_tick returning non-zero while the server is silent ends the exchange at once (EABORTED), in
 * the middle of a body and before any response byte; the connection is closed. */
static void test_on_tick_abort(void)
{
    reply_t r[] = {{.data = CHUNKED_HEAD "5\r\nhello\r\n", .stall = true}, {.data = "", .stall = true}};
    srv_t *s;
    lop_transport_t *t;
    if (!setup(&s, &t, r, 2)) return;
    got_t g = {.s = s, .abort_after_body = true};
    lop_http_exchange_t x;
    T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_EABORTED);
    int64_t took = now_ns() - g.body_ns;
    T_EQ_STR(g.body.data, "hello");
    T_EQ_INT(x.code, 200);
    T_EQ_INT(g.aborts, 1);
    T_CHECK(has(x.error, "aborted"));
    T_CHECK(took < 1000000000LL); /* a tick is due every 50 ms */
    srv_wait_closed(s, 1);        /* the client closed it: the server saw the end */
    g.abort_after_body = false;
    g.abort_at_tick = 3;
    int64_t t0 = now_ns();
    T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_EABORTED);
    T_CHECK(now_ns() - t0 < 1000000000LL); /* the third tick comes ~100 ms in */
    T_EQ_INT(g.ticks, 3);
    T_EQ_INT(g.aborts, 1);
    T_CHECK(!x.response_started);
    T_EQ_INT(x.code, 0);
    srv_wait_closed(s, 2);
    T_EQ_INT(lop_transport_connects(t), 2);
    teardown(s, t, &g);
}

/* timeout_ms against a silent server: ETIMEDOUT after that long (not much later), before the
 * response and in the middle of a body. */
static void test_timeout(void)
{
    reply_t r[] = {{.data = "", .stall = true}, {.data = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", .stall = true}};
    srv_t *s;
    lop_transport_t *t;
    if (!setup(&s, &t, r, 2)) return;
    got_t g = {.s = s};
    lop_http_exchange_t x = {.timeout_ms = 200};
    int64_t t0 = now_ns();
    T_EQ_INT(run(t, &x, &g), LOP_HTTP_ETIMEDOUT);
    int64_t took = now_ns() - t0;
    T_CHECK(took >= 200 * 1000000LL && took < 2000 * 1000000LL);
    T_CHECK(has(x.error, "timed out after 200 ms"));
    T_CHECK(!x.response_started);
    x = (lop_http_exchange_t){.timeout_ms = 200};
    t0 = now_ns();
    T_EQ_INT(run(t, &x, &g), LOP_HTTP_ETIMEDOUT);
    took = now_ns() - t0;
    T_CHECK(took >= 200 * 1000000LL && took < 2000 * 1000000LL);
    T_CHECK(x.response_started);
    T_EQ_INT(x.code, 200);
    T_EQ_STR(g.body.data, "abc");
    srv_wait_closed(s, 2);
    teardown(s, t, &g);
}

/* ---- connecting ---- */

/* A port bound but not listening refuses: ECONNECT naming host:port, nothing started. */
static void test_connect_refused(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    T_CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&a, al) == 0 && getsockname(fd, (struct sockaddr *)&a, &al) == 0);
    char url[64], hp[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", ntohs(a.sin_port));
    snprintf(hp, sizeof hp, "127.0.0.1:%d", ntohs(a.sin_port));
    lop_transport_t *t = tr_new(url);
    T_CHECK(t);
    if (t) {
        got_t g = {0};
        lop_http_exchange_t x;
        T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_ECONNECT);
        T_CHECK(has(x.error, hp));
        T_CHECK(has(x.error, "refused"));
        T_CHECK(!x.response_started);
        T_EQ_INT(x.code, 0);
        T_EQ_INT(g.nstatus, 0);
        T_EQ_INT(lop_transport_connects(t), 0);
        got_free(&g);
        lop_transport_free(t);
    }
    close(fd);
}

/* ---- the server URL ---- */

static void test_url_parsing(void)
{
    static const struct {
        const char *url, *host_port;
        bool tls;
    } good[] = {
        {"http://127.0.0.1", "127.0.0.1:80", false},
        {"https://kube.example.com", "kube.example.com:443", true},
        {"HTTPS://Kube.Example.com:8443/", "Kube.Example.com:8443", true},
        {"http://localhost:8080/prefix/", "localhost:8080", false},
        {"http://[::1]:6443", "[::1]:6443", false},
        {"https://[::1]", "[::1]:443", true},
        {"https://[fd00::2]:8443/k8s//", "[fd00::2]:8443", true},
        {"http://host:", "host:80", false},
        {"http://host:65535", "host:65535", false},
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        lop_transport_t *t = tr_new(good[i].url);
        T_CHECK(t);
        if (!t) continue;
        T_EQ_STR(lop_transport_host_port(t), good[i].host_port);
        T_EQ_INT(lop_transport_is_tls(t), good[i].tls);
        T_EQ_INT(lop_transport_connects(t), 0);
        lop_transport_free(t);
    }
    static const char *const bad[] = {
        "ftp://host",         "host:80",          "http:/host",        "http//host",
        "http://[::1",        "http://[::1]x",    "http://[::1]:x",    "http://host:0",
        "http://host:65536",  "http://host:8o",   "http://host:-1",    "http://host: 80",
        "http://host:+80",    "http://user@host", "http://u:pw@host/", "http://",
        "http://:80",         "http://[]:80",     "http:///path",      "http://host?x=1",
        "http://host/api?x=1", "http://host#f",   "http://host/api#f", "http://ho st",
        "http://host/a b",
    };
    int nbad = 0;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        lop_transport_config_t cfg = {.server = bad[i]};
        lop_transport_t *t = (lop_transport_t *)&cfg; /* must be reset to NULL */
        lop_err_t err;
        lop_rc_t rc = lop_transport_new(&cfg, &t, &err);
        if (rc != LOP_EINVAL || t || !has(err.message, bad[i])) {
            fprintf(stderr, "URL \"%s\": rc %d, error \"%s\"\n", bad[i], rc, rc == LOP_OK ? "" : err.message);
            nbad++;
        }
        if (rc == LOP_OK) lop_transport_free(t);
    }
    T_EQ_INT(nbad, 0);
    lop_err_t err;
    lop_transport_t *t = NULL;
    lop_transport_config_t none = {.server = NULL}, empty = {.server = ""};
    T_EQ_INT(lop_transport_new(&none, &t, &err), LOP_EINVAL);
    T_EQ_INT(lop_transport_new(&empty, &t, &err), LOP_EINVAL);
    lop_transport_config_t junk_ca = {.server = "https://127.0.0.1:6443", .ca_pem = "not a certificate"};
    T_EQ_INT(lop_transport_new(&junk_ca, &t, &err), LOP_EINVAL);
    T_CHECK(has(err.message, "certificate authority"));
    T_CHECK(!t);
}

/* Requests go to the URL's path prefix + target (trailing slashes of the prefix dropped), with the
 * Host header of the URL; an IPv6 server in brackets. */
static void test_url_prefix_and_ipv6(void)
{
    reply_t r[] = {{.data = OK2}};
    srv_t *s = srv_start(serve_replies, r, 1, true);
    T_CHECK(s);
    if (!s) return;
    char url[128], want[256], hp[64];
    snprintf(url, sizeof url, "%s/base/v1//", s->url);
    snprintf(hp, sizeof hp, "[::1]:%d", s->port);
    lop_transport_t *t = tr_new(url);
    T_CHECK(t);
    if (t) {
        T_EQ_STR(lop_transport_host_port(t), hp);
        got_t g = {.s = s};
        lop_http_exchange_t x;
        T_EQ_INT(get(t, "/api/x?watch=1", &x, &g), LOP_HTTP_OK);
        T_EQ_STR(g.body.data, "ok");
        snprintf(want, sizeof want, "GET /base/v1/api/x?watch=1 HTTP/1.1\r\nHost: [::1]:%d\r\n\r\n", s->port);
        T_EQ_STR(srv_req(s, 0).head, want);
        got_free(&g);
        lop_transport_free(t);
    }
    srv_stop(s);
}

/* ---- TLS, against the embedded API server ---- */


/* GET /version over TLS verified with the kubeconfig's CA (the certificate names 127.0.0.1, and
 * localhost for tls_server_name); sequential exchanges share one connection. */
static void test_tls_get_and_reuse(void)
{
    tls_env_t e;
    T_CHECK(tls_start(&e));
    if (!e.srv) return;
    const char *names[] = {NULL, "localhost"};
    for (int i = 0; i < 2; i++) {
        lop_transport_t *t = tls_transport(&e, e.cfg.ca_pem, names[i], false);
        T_CHECK(t);
        if (!t) continue;
        T_CHECK(lop_transport_is_tls(t));
        got_t g = {0};
        for (int k = 0; k < 3; k++) {
            lop_http_exchange_t x = {.target = "/version", .gzip = true};
            T_EQ_INT(run(t, &x, &g), LOP_HTTP_OK);
            T_EQ_INT(x.code, 200);
            T_CHECK(has(g.body.data, "\"gitVersion\""));
        }
        T_EQ_INT(lop_transport_connects(t), 1);
        got_free(&g);
        lop_transport_free(t);
    }
    tls_stop(&e);
}

/* Verification failures are ECONNECT (nothing sent) naming the server and the certificate
 * verification: a tls_server_name the certificate does not hold; no CA (the system's store does
 * not know the self-signed certificate). insecure connects without a CA. */
static void test_tls_verification(void)
{
    tls_env_t e;
    T_CHECK(tls_start(&e));
    if (!e.srv) return;
    char hp[64];
    snprintf(hp, sizeof hp, "127.0.0.1:%d", lop_apiserver_port(e.srv));
    lop_transport_t *bad_name = tls_transport(&e, e.cfg.ca_pem, "not-the-server.example", false);
    lop_transport_t *no_ca = tls_transport(&e, NULL, NULL, false);
    lop_transport_t *insecure = tls_transport(&e, NULL, NULL, true);
    T_CHECK(bad_name && no_ca && insecure);
    got_t g = {0};
    lop_http_exchange_t x;
    if (bad_name) {
        T_EQ_INT(get(bad_name, "/version", &x, &g), LOP_HTTP_ECONNECT);
        T_CHECK(has(x.error, "certificate verify failed"));
        T_CHECK(has(x.error, hp));
        T_CHECK(has(x.error, "not-the-server.example"));
        T_CHECK(!x.response_started);
        T_EQ_INT(x.code, 0);
    }
    if (no_ca) {
        T_EQ_INT(get(no_ca, "/version", &x, &g), LOP_HTTP_ECONNECT);
        T_CHECK(has(x.error, "certificate verify failed"));
    }
    if (insecure) {
        for (int k = 0; k < 2; k++) {
            T_EQ_INT(get(insecure, "/version", &x, &g), LOP_HTTP_OK);
            T_EQ_INT(x.code, 200);
            T_CHECK(has(g.body.data, "\"gitVersion\""));
        }
        T_EQ_INT(lop_transport_connects(insecure), 1);
    }
    got_free(&g);
    lop_transport_free(bad_name);
    lop_transport_free(no_ca);
    lop_transport_free(insecure);
    tls_stop(&e);
}

/* A method or target that could end the request line early or add header lines (request
 * splitting: a Lua script building a query from a custom resource's fields) is refused before
 * anything is sent. */
static void test_request_line_injection_refused(void)
{
    reply_t r[1] = {{.data = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"}};
    srv_t *s;
    lop_transport_t *t;
    if (!setup(&s, &t, r, 1)) return;
    got_t g = {.s = s};
    static const struct { const char *method, *target; } cases[] = {
        {"GET", "/api/v1/pods?x HTTP/1.1\r\nHost: x\r\n\r\nDELETE /api/v1/namespaces/d/pods/p"},
        {"GET", "/a b"},
        {"GET", "/a\tb"},
        {"GET", "/a\x7f"},
        {"GET", "api/v1"},
        {"GET", ""},
        {"GE T", "/"},
        {"GET\r\nX: y", "/"},
        {"", "/"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        lop_http_exchange_t x = {.method = cases[i].method, .target = cases[i].target};
        T_EQ_INT(run(t, &x, &g), LOP_HTTP_EREQUEST);
        T_CHECK(has(x.error, "not valid on the wire"));
        T_CHECK(!strchr(x.error, '\r') && !strchr(x.error, '\n'));
    }
    T_EQ_INT(lop_transport_connects(t), 0);
    T_EQ_INT(srv_nreqs(s), 0);
    lop_http_exchange_t x;
    T_EQ_INT(get(t, "/api/v1/pods?labelSelector=a%3Db", &x, &g), LOP_HTTP_OK); /* escaped is fine */
    T_EQ_INT(srv_nreqs(s), 1);
    teardown(s, t, &g);
}

/* The server answers after the request head, without reading the body, and holds the connection
 * until the client closes it. */
static void serve_early_answer(srv_t *s, int fd, int conn)
{
    (void)s, (void)conn;
    char buf[8192];
    size_t len = 0;
    while (!memmem(buf, len, "\r\n\r\n", 4) && len < sizeof buf) {
        ssize_t r = recv(fd, buf + len, sizeof buf - len, 0);
        if (r <= 0) return;
        len += (size_t)r;
    }
    const char *a = "HTTP/1.1 413 Request Entity Too Large\r\nContent-Length: 5\r\nConnection: close\r\n\r\nlarge";
    srv_send(fd, a, strlen(a));
    struct pollfd pf = {fd, POLLRDHUP, 0}; /* (not POLLIN: the unread body keeps it readable) */
    while (poll(&pf, 1, -1) == 1 && !(pf.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
    }
}

/* An answer that arrives while the request body is still being written (kube-apiserver refuses a
 * body over 3 MB with 413 before reading it; a 401 comes before the body too): the client stops
 * sending and returns that answer, not a transport error. */
static void test_answer_before_the_body_is_sent(void)
{
    srv_t *s = srv_start(serve_early_answer, NULL, 0, false);
    if (!s) return;
    lop_transport_t *t = tr_new(s->url);
    size_t n = (size_t)32 << 20; /* more than the loopback socket buffers hold */
    char *body = malloc(n);
    memset(body, '{', n);
    got_t g = {0};
    lop_http_exchange_t x = {.method = "PUT", .target = "/api/v1/namespaces/d/configmaps/big", .body = body,
                             .body_len = n, .timeout_ms = 10000};
    T_EQ_INT(run(t, &x, &g), LOP_HTTP_OK);
    T_EQ_INT(x.code, 413);
    T_CHECK(g.body.len == 5 && memcmp(g.body.data, "large", 5) == 0);
    T_EQ_INT(lop_transport_connects(t), 1);
    free(body);
    teardown(s, t, &g);
}

/* The server answers the head with 100 Continue, reads the whole body, then answers 201. */
static void serve_interim_first(srv_t *s, int fd, int conn)
{
    (void)conn;
    char c;
    lop_buf_t head = LOP_BUF_INIT; /* ...but first the head alone, answered with a 100 */
    while (head.len < 4 || memcmp(head.data + head.len - 4, "\r\n\r\n", 4) != 0) {
        if (recv(fd, &c, 1, 0) != 1) {
            lop_buf_free(&head);
            return;
        }
        lop_buf_putc(&head, c);
    }
    const char *cont = "HTTP/1.1 100 Continue\r\n\r\n";
    srv_send(fd, cont, strlen(cont));
    const char *cl = strcasestr(head.data, "\r\nContent-Length: ");
    size_t want = cl ? strtoul(cl + 18, NULL, 10) : 0, have = 0;
    lop_buf_free(&head);
    char buf[65536];
    while (have < want) {
        ssize_t r = recv(fd, buf, sizeof buf, 0);
        if (r <= 0) return;
        have += (size_t)r;
    }
    srv_bump(s, &s->events); /* the whole body arrived */
    const char *a = "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok";
    srv_send(fd, a, strlen(a));
}

/* An interim 100 that arrives while a large body is being written does not stop the writing
 * (RFC 9110 §15.2 lets a server send one unasked): the whole body goes out, the final answer is
 * read. */
static void test_interim_answer_while_writing(void)
{
    srv_t *s = srv_start(serve_interim_first, NULL, 0, false);
    if (!s) return;
    lop_transport_t *t = tr_new(s->url);
    size_t n = (size_t)32 << 20;
    char *body = malloc(n);
    memset(body, '{', n);
    got_t g = {0};
    lop_http_exchange_t x = {.method = "PUT", .target = "/big", .body = body, .body_len = n, .timeout_ms = 20000};
    T_EQ_INT(run(t, &x, &g), LOP_HTTP_OK);
    T_EQ_INT(x.code, 201);
    T_EQ_INT(g.nstatus, 1);
    T_EQ_INT(srv_count(s, &s->events), 1); /* the server read all 32 MiB */
    T_CHECK(g.body.len == 2 && memcmp(g.body.data, "ok", 2) == 0);
    free(body);
    teardown(s, t, &g);
}

/* 101 is a final response (the connection is no longer HTTP): no body is read, the connection is
 * not reused. */
static void test_101_is_final(void)
{
    reply_t r[2] = {{.data = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n", .stall = true},
                    {.data = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"}};
    srv_t *s;
    lop_transport_t *t;
    if (!setup(&s, &t, r, 2)) return;
    got_t g = {.s = s};
    lop_http_exchange_t x;
    T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_OK);
    T_EQ_INT(x.code, 101);
    T_EQ_INT(g.nstatus, 1);
    T_EQ_INT(g.body.len, 0);
    T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_OK);
    T_EQ_INT(x.code, 200);
    T_EQ_INT(lop_transport_connects(t), 2);
    teardown(s, t, &g);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/luaop-transport-XXXXXX");
    if (!mkdtemp(dir)) return 2;
    T_RUN(test_content_length_body);
    T_RUN(test_request_line_injection_refused);
    T_RUN(test_answer_before_the_body_is_sent);
    T_RUN(test_interim_answer_while_writing);
    T_RUN(test_101_is_final);
    T_RUN(test_request_bodies_and_headers);
    T_RUN(test_chunked_body);
    T_RUN(test_chunked_split_at_every_byte);
    T_RUN(test_response_split_at_every_offset);
    T_RUN(test_body_until_close);
    T_RUN(test_responses_without_body);
    T_RUN(test_interim_responses_skipped);
    T_RUN(test_header_block_limits);
    T_RUN(test_malformed_responses);
    T_RUN(test_truncated_responses);
    T_RUN(test_gzip);
    T_RUN(test_gzip_stream_flushes_what_arrived);
    T_RUN(test_read_bytes_bound_on_body);
    T_RUN(test_keepalive_reuses_connection);
    T_RUN(test_connection_not_reused_when_it_must_not_be);
    T_RUN(test_pooled_connection_closed_by_server);
    T_RUN(test_resend_only_when_safe);
    T_RUN(test_concurrent_exchanges_share_the_pool);
    T_RUN(test_on_body_stop);
    T_RUN(test_on_tick_abort);
    T_RUN(test_timeout);
    T_RUN(test_connect_refused);
    T_RUN(test_url_parsing);
    T_RUN(test_url_prefix_and_ipv6);
    T_RUN(test_tls_get_and_reuse);
    T_RUN(test_tls_verification);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return T_DONE();
}
