/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the transport's HTTP proxy support (host/kube/client/transport.h, transport_proxy.c):
 * NO_PROXY matching as Go's httpproxy, which proxy the environment selects, absolute-form
 * requests to an http server through a proxy, a CONNECT tunnel to the embedded TLS API server,
 * and a proxy that refuses the tunnel. Loopback servers only (test_transport_srv.h).
 */
#include "test_transport_srv.h"

/* ---- selection ---- */

static void test_no_proxy_match(void)
{
    static const struct {
        const char *list, *host, *port;
        bool want;
    } cases[] = {
        {"*", "api.example.com", "443", true},
        {"", "api.example.com", "443", false},
        {"example.com", "example.com", "443", true},
        {"example.com", "api.example.com", "443", true},
        {"example.com", "notexample.com", "443", false},
        {".example.com", "example.com", "443", false},
        {".example.com", "api.example.com", "443", true},
        {"*.example.com", "example.com", "443", false},
        {"*.example.com", "a.b.example.com", "443", true},
        {"EXAMPLE.com", "api.Example.COM", "443", true},
        {"example.com:6443", "api.example.com", "443", false},
        {"example.com:6443", "api.example.com", "6443", true},
        {"10.0.0.0/8", "10.96.0.1", "443", true},
        {"10.0.0.0/8", "11.0.0.1", "443", false},
        {"10.0.0.0/8", "api.example.com", "443", false},
        {"192.168.1.7", "192.168.1.7", "443", true},
        {"192.168.1.7", "192.168.1.8", "443", false},
        {"192.168.1.7:443", "192.168.1.7", "6443", false},
        {"fd00::/8", "fd00::1", "443", true},
        {"fd00::/8", "fe80::1", "443", false},
        {"[fd00::1]:443", "fd00::1", "443", true},
        {"fd00::1", "fd00:0::1", "443", true},
        {" a.com , b.com ,, c.com ", "x.b.com", "443", true},
        {"a.com,b.com", "c.com", "443", false},
        {"10.0.0.0/40", "10.0.0.1", "443", false},
        {"10.0.0.0/ 8", "10.0.0.1", "443", false},
        {"10.0.0.0/8", "::ffff:10.1.2.3", "443", true}, /* IPv4-mapped is IPv4 */
        {"10.1.2.3", "::ffff:10.1.2.3", "443", true},
        {"x.com:", "api.x.com", "6443", true}, /* an empty port: any */
        {":443", "x.com", "443", false},       /* no host: ignored */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bool got = lop_no_proxy_match(cases[i].list, cases[i].host, cases[i].port);
        if (got != cases[i].want)
            fprintf(stderr, "NO_PROXY=\"%s\" host %s port %s: got %d\n", cases[i].list, cases[i].host, cases[i].port,
                    got);
        T_EQ_INT(got, cases[i].want);
    }
    T_CHECK(!lop_no_proxy_match(NULL, "a.com", "443"));
}

static void clear_proxy_env(void)
{
    static const char *names[] = {"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) unsetenv(names[i]);
}

/* Which proxy a transport would use: the environment (upper case first), NO_PROXY, never for the
 * local machine, an explicit URL always (also for loopback), "" never; credentials become Basic. */
static void test_proxy_select(void)
{
    lop_proxy_t p;
    lop_err_t err;
    clear_proxy_env();
    T_EQ_INT(lop_proxy_select(NULL, true, "api.example.com", "443", &p, &err), LOP_OK);
    T_CHECK(p.url == NULL);

    setenv("https_proxy", "http://lower.example:3128", 1);
    T_EQ_INT(lop_proxy_select(NULL, true, "api.example.com", "443", &p, &err), LOP_OK);
    T_EQ_STR(p.host_port, "lower.example:3128");
    lop_proxy_cleanup(&p);
    setenv("HTTPS_PROXY", "user:pa ss@upper.example", 1); /* no scheme: http://, port 80 */
    T_EQ_INT(lop_proxy_select(NULL, true, "api.example.com", "443", &p, &err), LOP_OK);
    T_EQ_STR(p.url, "http://upper.example:80");
    T_EQ_STR(p.user, "user");
    T_EQ_STR(p.password, "pa ss");
    lop_proxy_cleanup(&p);
    /* an http server reads HTTP_PROXY, not HTTPS_PROXY */
    T_EQ_INT(lop_proxy_select(NULL, false, "api.example.com", "80", &p, &err), LOP_OK);
    T_CHECK(p.url == NULL);
    setenv("HTTP_PROXY", "http://[fd00::5]:8080", 1);
    T_EQ_INT(lop_proxy_select(NULL, false, "api.example.com", "80", &p, &err), LOP_OK);
    T_EQ_STR(p.url, "http://[fd00::5]:8080");
    T_EQ_STR(p.host_port, "[fd00::5]:8080");
    lop_proxy_cleanup(&p);

    static const char *direct[] = {"127.0.0.1", "127.9.9.9", "::1",    "::ffff:127.0.0.1",
                                   "localhost", "LocalHost", "x.corp", "10.1.2.3"};
    setenv("NO_PROXY", ".corp,10.0.0.0/8", 1);
    for (size_t i = 0; i < sizeof direct / sizeof direct[0]; i++) {
        T_EQ_INT(lop_proxy_select(NULL, true, direct[i], "443", &p, &err), LOP_OK);
        if (p.url) fprintf(stderr, "%s went through %s\n", direct[i], p.host_port);
        T_CHECK(p.url == NULL);
        lop_proxy_cleanup(&p);
    }
    T_EQ_INT(lop_proxy_select(NULL, true, "corp.example", "443", &p, &err), LOP_OK);
    T_CHECK(p.url != NULL);
    lop_proxy_cleanup(&p);

    /* explicit: always, even to loopback and past NO_PROXY; "" = direct whatever the environment */
    T_EQ_INT(lop_proxy_select("http://p.example:8888", true, "127.0.0.1", "443", &p, &err), LOP_OK);
    T_EQ_STR(p.host_port, "p.example:8888");
    T_CHECK(p.user == NULL && p.password == NULL);
    lop_proxy_cleanup(&p);
    /* https:// and socks5:// proxies, as client-go accepts; socks5 lets the proxy resolve names */
    T_EQ_INT(lop_proxy_select("https://p.example", true, "api.example.com", "443", &p, &err), LOP_OK);
    T_EQ_STR(p.url, "https://p.example:443");
    lop_proxy_cleanup(&p);
    T_EQ_INT(lop_proxy_select("socks5://u:p@s.example", true, "api.example.com", "443", &p, &err), LOP_OK);
    T_EQ_STR(p.url, "socks5h://s.example:1080");
    T_EQ_STR(p.user, "u");
    T_EQ_STR(p.password, "p");
    lop_proxy_cleanup(&p);
    T_EQ_INT(lop_proxy_select("", true, "api.example.com", "443", &p, &err), LOP_OK);
    T_CHECK(p.url == NULL);

    /* errors name the source */
    setenv("HTTPS_PROXY", "ftp://s.example:1080", 1);
    T_EQ_INT(lop_proxy_select(NULL, true, "api.example.com", "443", &p, &err), LOP_EINVAL);
    T_CHECK(strstr(err.message, "HTTPS_PROXY") && strstr(err.message, "ftp"));
    T_CHECK(p.url == NULL);
    static const char *bad[] = {"http://", "http://h:0", "http://h:99999", "http://h:8x", "http://[fd00::1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        T_EQ_INT(lop_proxy_select(bad[i], true, "api.example.com", "443", &p, &err), LOP_EINVAL);
        T_CHECK(strstr(err.message, "proxy-url") != NULL);
        T_CHECK(p.url == NULL && p.user == NULL);
    }
    T_EQ_INT(lop_proxy_select("http://u:secret@", true, "api.example.com", "443", &p, &err), LOP_EINVAL);
    T_CHECK(strstr(err.message, "secret") == NULL); /* credentials never in a message */
    T_EQ_INT(lop_proxy_select("u:se://cret@h:3128", true, "api.example.com", "443", &p, &err), LOP_EINVAL);
    T_CHECK(strstr(err.message, "cret") == NULL && strstr(err.message, "u:se") == NULL);

    /* user info is percent-decoded; the colon is there even without a password (RFC 7617) */
    static const struct {
        const char *url, *user, *password;
    } auth[] = {
        {"http://user:p%40ss@h:1", "user", "p@ss"},
        {"http://user@h:1", "user", ""},
        {"http://@h:1", "", ""},
        {"http://a%3Ab:c@h:1", "a:b", "c"},
    };
    for (size_t i = 0; i < sizeof auth / sizeof auth[0]; i++) {
        T_EQ_INT(lop_proxy_select(auth[i].url, true, "api.example.com", "443", &p, &err), LOP_OK);
        T_EQ_STR(p.user, auth[i].user);
        T_EQ_STR(p.password, auth[i].password);
        lop_proxy_cleanup(&p);
    }
    T_EQ_INT(lop_proxy_select("http://u:p%zz@h:1", true, "api.example.com", "443", &p, &err), LOP_EINVAL);
    T_EQ_INT(lop_proxy_select("http://h: 80", true, "api.example.com", "443", &p, &err), LOP_EINVAL);
    T_EQ_INT(lop_proxy_select("http://h:+80", true, "api.example.com", "443", &p, &err), LOP_EINVAL);
    clear_proxy_env();
}

/* ---- through a proxy ---- */

static lop_transport_t *proxied(const char *server, const char *proxy, const char *ca)
{
    lop_transport_config_t cfg = {.server = server, .proxy = proxy, .ca_pem = ca};
    lop_transport_t *t = NULL;
    lop_err_t err;
    if (lop_transport_new(&cfg, &t, &err) != LOP_OK) fprintf(stderr, "transport: %s\n", err.message);
    return t;
}

/* An http server through a proxy: absolute-form requests with the server's Host and the proxy's
 * credentials, on a kept-alive connection to the proxy. The server's name is never resolved. */
static void test_http_through_proxy(void)
{
    reply_t r[] = {{.data = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"}};
    srv_t *s = srv_start(serve_replies, r, 1, false);
    if (!s) return;
    char proxy[128];
    snprintf(proxy, sizeof proxy, "http://u:p@127.0.0.1:%d", s->port);
    lop_transport_t *t = proxied("http://api.invalid:8080/prefix/", proxy, NULL);
    T_CHECK(t != NULL);
    if (t) {
        T_EQ_STR(lop_transport_proxy(t), proxy + 11);
        got_t g = {0};
        lop_http_exchange_t x;
        for (int i = 0; i < 2; i++) {
            T_EQ_INT(get(t, "/api/v1/pods?watch=1", &x, &g), LOP_HTTP_OK);
            T_EQ_INT(x.code, 200);
            T_CHECK(g.body.len == 2 && memcmp(g.body.data, "ok", 2) == 0);
        }
        T_EQ_INT(srv_nreqs(s), 2);
        const char *head = srv_req(s, 1).head;
        const char *want = "GET http://api.invalid:8080/prefix/api/v1/pods?watch=1 HTTP/1.1\r\n"
                           "Host: api.invalid:8080\r\nProxy-Authorization: Basic dTpw\r\n"; /* base64("u:p") */
        T_CHECK(strncmp(head, want, strlen(want)) == 0);
        if (strncmp(head, "GET http://", 11) != 0) fprintf(stderr, "proxy got: %s\n", head);
        T_EQ_INT(lop_transport_connects(t), 1);
        got_free(&g);
        lop_transport_free(t);
    }
    srv_stop(s);
}

/* A proxy that tunnels CONNECT host:port to 127.0.0.1:port, relaying bytes both ways. */
static void serve_tunnel(srv_t *s, int fd, int conn)
{
    int n = srv_read_request(s, fd, conn);
    if (n < 0) return;
    int port = 0;
    if (sscanf(srv_req(s, n).head, "CONNECT 127.0.0.1:%d HTTP/1.1\r\n", &port) != 1) {
        const char *no = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
        srv_send(fd, no, strlen(no));
        return;
    }
    int up = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (up < 0 || connect(up, (struct sockaddr *)&sa, sizeof sa) < 0) {
        const char *bad = "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n";
        srv_send(fd, bad, strlen(bad));
        if (up >= 0) close(up);
        return;
    }
    const char *ok = "HTTP/1.1 200 Connection established\r\n\r\n";
    srv_send(fd, ok, strlen(ok));
    char buf[16384];
    for (;;) {
        struct pollfd pf[2] = {{fd, POLLIN, 0}, {up, POLLIN, 0}};
        if (poll(pf, 2, -1) <= 0) break;
        int from = (pf[0].revents & (POLLIN | POLLHUP | POLLERR)) ? 0 : 1;
        ssize_t r = recv(pf[from].fd, buf, sizeof buf, 0);
        if (r <= 0) break;
        srv_send(pf[1 - from].fd, buf, (size_t)r);
    }
    close(up);
}

/* An https server through a CONNECT tunnel: TLS end to end (the certificate verified for the
 * server's address, not the proxy's), connections kept alive through the tunnel. */
static void test_https_through_connect_tunnel(void)
{
    tls_env_t e;
    T_CHECK(tls_start(&e));
    if (!e.srv) return;
    srv_t *s = srv_start(serve_tunnel, NULL, 0, false);
    char proxy[128];
    snprintf(proxy, sizeof proxy, "http://127.0.0.1:%d", s ? s->port : 0);
    lop_transport_t *t = s ? proxied(e.cfg.server, proxy, e.cfg.ca_pem) : NULL;
    T_CHECK(t != NULL);
    if (t) {
        got_t g = {0};
        lop_http_exchange_t x;
        for (int i = 0; i < 3; i++) {
            T_EQ_INT(get(t, "/version", &x, &g), LOP_HTTP_OK);
            T_EQ_INT(x.code, 200);
            T_CHECK(strstr(g.body.data ? g.body.data : "", "\"gitVersion\"") != NULL);
        }
        T_EQ_INT(lop_transport_connects(t), 1);
        T_EQ_INT(srv_nreqs(s), 1);
        char want[96];
        snprintf(want, sizeof want, "CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n",
                 lop_apiserver_port(e.srv), lop_apiserver_port(e.srv));
        T_EQ_STR(srv_req(s, 0).head, want);
        got_free(&g);
        lop_transport_free(t);
    }
    if (s) srv_stop(s);
    tls_stop(&e);
}

/* A proxy that answers CONNECT with anything but 2xx: ECONNECT naming the proxy and its answer;
 * a proxy that is not there: ECONNECT naming the proxy. */
static void test_connect_refused(void)
{
    reply_t r[] = {{.data = "HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n", .close = true}};
    srv_t *s = srv_start(serve_replies, r, 1, false);
    if (!s) return;
    char proxy[128], hp[64];
    snprintf(proxy, sizeof proxy, "http://127.0.0.1:%d", s->port);
    snprintf(hp, sizeof hp, "127.0.0.1:%d", s->port);
    lop_transport_t *t = proxied("https://api.example.com:6443", proxy, NULL);
    T_CHECK(t != NULL);
    if (t) {
        got_t g = {0};
        lop_http_exchange_t x;
        T_EQ_INT(get(t, "/version", &x, &g), LOP_HTTP_ECONNECT);
        T_CHECK(strstr(x.error, "refused CONNECT to api.example.com:6443: HTTP 407") != NULL);
        T_CHECK(strstr(x.error, hp) != NULL);
        T_EQ_INT(x.code, 0);
        got_free(&g);
        lop_transport_free(t);
    }
    srv_stop(s);

    /* bare line feeds, the connection held open: still read as the whole answer (no timeout) */
    reply_t lf[] = {{.data = "HTTP/1.1 403 Forbidden\n\n", .stall = true}};
    srv_t *s2 = srv_start(serve_replies, lf, 1, false);
    char proxy2[128];
    snprintf(proxy2, sizeof proxy2, "http://127.0.0.1:%d", s2 ? s2->port : 0);
    lop_transport_t *t2 = s2 ? proxied("https://api.example.com:6443", proxy2, NULL) : NULL;
    if (t2) {
        got_t g = {0};
        lop_http_exchange_t x;
        T_EQ_INT(get(t2, "/version", &x, &g), LOP_HTTP_ECONNECT); /* get's timeout is 10 s: not reached */
        T_CHECK(strstr(x.error, "refused CONNECT") && strstr(x.error, "HTTP 403"));
        got_free(&g);
        lop_transport_free(t2);
    }
    if (s2) srv_stop(s2);
    /* nothing listens there any more */
    t = proxied("https://api.example.com:6443", proxy, NULL);
    if (t) {
        got_t g = {0};
        lop_http_exchange_t x;
        T_EQ_INT(get(t, "/version", &x, &g), LOP_HTTP_ECONNECT);
        T_CHECK(strstr(x.error, "connecting to proxy 127.0.0.1:") != NULL);
        got_free(&g);
        lop_transport_free(t);
    }
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/luaop-transport-proxy-XXXXXX");
    if (!mkdtemp(dir)) return 2;
    T_RUN(test_no_proxy_match);
    T_RUN(test_proxy_select);
    T_RUN(test_http_through_proxy);
    T_RUN(test_https_through_connect_tunnel);
    T_RUN(test_connect_refused);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "cleanup of %s failed\n", dir);
    return T_DONE();
}
