/* SPDX-License-Identifier: Apache-2.0 */
/* transport_proxy.c — which proxy a transport goes through (see transport.h): an explicit
 * proxy URL (kubeconfig proxy-url), or the environment read as Go's net/http reads it
 * (golang.org/x/net/http/httpproxy, which client-go uses through http.ProxyFromEnvironment). */
#include "host/kube/client/transport.h"

#include "host/util/buf.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void lop_proxy_cleanup(lop_proxy_t *p)
{
    free(p->url);
    free(p->host_port);
    free(p->host);
    free(p->port);
    free(p->user);
    if (p->password) explicit_bzero(p->password, strlen(p->password));
    free(p->password);
    memset(p, 0, sizeof *p);
}

/* An IP address of either family: its bytes and their count, 0 when s is not one. An IPv4-mapped
 * IPv6 address (::ffff:a.b.c.d) is its IPv4 address, as Go's net.IP compares them. */
static int ip_bytes(const char *s, size_t n, unsigned char out[16])
{
    char tmp[64];
    if (n >= sizeof tmp) return 0;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    if (inet_pton(AF_INET, tmp, out) == 1) return 4;
    if (inet_pton(AF_INET6, tmp, out) != 1) return 0;
    if (memcmp(out, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12) == 0) {
        memmove(out, out + 12, 4);
        return 4;
    }
    return 16;
}

/* One NO_PROXY entry (trimmed, not empty) against host (lowercase, no brackets) and port. */
static bool entry_matches(const char *e, size_t n, const char *host, const char *port)
{
    unsigned char hip[16], eip[16];
    int hl = ip_bytes(host, strlen(host), hip);
    if (n == 1 && e[0] == '*') return true;
    const char *slash = memchr(e, '/', n);
    if (slash) { /* CIDR */
        int el = ip_bytes(e, (size_t)(slash - e), eip);
        char *end;
        if (slash + 1 >= e + n || slash[1] < '0' || slash[1] > '9') return false;
        long bits = strtol(slash + 1, &end, 10);
        if (!el || el != hl || end != e + n || bits < 0 || bits > el * 8) return false;
        for (long b = 0; b < bits; b++)
            if (((hip[b / 8] ^ eip[b / 8]) >> (7 - b % 8)) & 1) return false;
        return true;
    }
    /* an optional :port, an IPv6 address in brackets when it has one */
    const char *name = e, *eport = NULL;
    size_t nl = n;
    if (*e == '[') {
        const char *rb = memchr(e, ']', n);
        if (!rb) return false;
        name = e + 1;
        nl = (size_t)(rb - e - 1);
        if (rb + 1 < e + n) {
            if (rb[1] != ':') return false;
            eport = rb + 2;
        }
    } else {
        const char *colon = memchr(e, ':', n);
        if (colon && !memchr(colon + 1, ':', (size_t)(e + n - colon - 1))) { /* one ':': name:port */
            nl = (size_t)(colon - e);
            eport = colon + 1;
        }
    }
    if (nl == 0) return false;                        /* ":443": no host, ignored (Go) */
    size_t epl = eport ? (size_t)(e + n - eport) : 0; /* "x.com:" = any port (Go) */
    if (epl && (strlen(port) != epl || strncmp(eport, port, epl) != 0)) return false;
    int el = ip_bytes(name, nl, eip);
    if (el) return el == hl && memcmp(eip, hip, (size_t)el) == 0;
    if (nl >= 2 && name[0] == '*' && name[1] == '.') name++, nl--; /* "*.x.com" is ".x.com" */
    size_t hn = strlen(host);
    if (name[0] == '.') /* subdomains only */
        return hn > nl && strncasecmp(host + hn - nl, name, nl) == 0;
    if (hn == nl && strncasecmp(host, name, nl) == 0) return true;
    return hn > nl && host[hn - nl - 1] == '.' && strncasecmp(host + hn - nl, name, nl) == 0;
}

bool lop_no_proxy_match(const char *no_proxy, const char *host, const char *port)
{
    if (!no_proxy) return false;
    for (const char *p = no_proxy; *p;) {
        size_t n = strcspn(p, ",");
        const char *e = p;
        size_t en = n;
        while (en && isspace((unsigned char)*e)) e++, en--;
        while (en && isspace((unsigned char)e[en - 1])) en--;
        if (en && entry_matches(e, en, host, port)) return true;
        p += n + (p[n] == ',');
    }
    return false;
}

static const char *env2(const char *upper, const char *lower)
{
    const char *v = getenv(upper);
    return v && *v ? v : getenv(lower);
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10 : -1;
}

/* Append p[0, n) percent-decoded (RFC 3986 userinfo); false for a bad %XX. */
static bool pct_decode(lop_buf_t *b, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] != '%') {
            lop_buf_putc(b, p[i]);
            continue;
        }
        if (i + 2 >= n) return false;
        int hi = hexval(p[i + 1]);
        int lo = hexval(p[i + 2]);
        if (hi < 0 || lo < 0) return false;
        lop_buf_putc(b, (char)(hi * 16 + lo));
        i += 2;
    }
    return true;
}

/* Parse "[scheme://][user[:password]@]host[:port]" (no scheme = http://, as Go assumes): http,
 * https and socks5 (the name resolved by the proxy, as Go's SOCKS5 dialer does: libcurl's
 * socks5h). Default ports: http 80, https 443, socks5 1080. */
static lop_rc_t parse_proxy(const char *url, const char *source, lop_proxy_t *out, lop_err_t *err)
{
    const char *p = url;
    const char *sep = strstr(p, "://");
    const char *scheme = "http", *curl_scheme = "http";
    long port = 80;
    size_t sl = sep ? strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-.") : 0;
    if (sep && sl == (size_t)(sep - p) && sl > 0) { /* a scheme (not "://" inside the user info) */
        if (sl == 4 && strncasecmp(p, "http", 4) == 0) {
        } else if (sl == 5 && strncasecmp(p, "https", 5) == 0) {
            scheme = curl_scheme = "https";
            port = 443;
        } else if (sl == 6 && strncasecmp(p, "socks5", 6) == 0) {
            scheme = "socks5";
            curl_scheme = "socks5h";
            port = 1080;
        } else {
            return lop_err_set(err, LOP_EINVAL, 0, NULL,
                               "%s: proxy scheme %.*s is not supported (http://, https:// or socks5://)", source,
                               (int)(sl > 16 ? 16 : sl), p);
        }
        p = sep + 3;
    }
    (void)scheme;
    size_t alen = strcspn(p, "/?#");
    const char *at = NULL;
    for (const char *q = p; q < p + alen; q++)
        if (*q == '@') at = q;
    lop_buf_t b = LOP_BUF_INIT;
    if (at) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        bool ok = pct_decode(&b, p, colon ? (size_t)(colon - p) : (size_t)(at - p));
        out->user = lop_buf_steal(&b);
        if (!out->user) out->user = lop_xstrdup("");
        if (ok) ok = pct_decode(&b, colon ? colon + 1 : at, colon ? (size_t)(at - colon - 1) : 0);
        out->password = lop_buf_steal(&b);
        if (!out->password) out->password = lop_xstrdup("");
        if (!ok) goto bad;
        alen -= (size_t)(at + 1 - p);
        p = at + 1;
    }
    const char *hs = p, *he = p + alen, *ps = NULL;
    bool v6 = *p == '[';
    if (v6) {
        const char *rb = memchr(p, ']', alen);
        if (!rb) goto bad;
        hs = p + 1;
        he = rb;
        if (rb + 1 < p + alen) {
            if (rb[1] != ':') goto bad;
            ps = rb + 2;
        }
    } else {
        const char *colon = memchr(p, ':', alen);
        if (colon) he = colon, ps = colon + 1;
    }
    if (he == hs) goto bad;
    for (const char *q = hs; q < he; q++)
        if ((unsigned char)*q <= ' ' || *q == '\\' || *q == '@') goto bad;
    if (ps && ps < p + alen) { /* an empty port is the default one */
        char *end;
        if (*ps < '0' || *ps > '9') goto bad;
        port = strtol(ps, &end, 10);
        if (end != p + alen || port < 1 || port > 65535) goto bad;
    }
    out->host = lop_xstrndup(hs, (size_t)(he - hs));
    lop_buf_printf(&b, "%ld", port);
    out->port = lop_buf_steal(&b);
    lop_buf_printf(&b, "%s%.*s%s:%ld", v6 ? "[" : "", (int)(he - hs), hs, v6 ? "]" : "", port);
    out->host_port = lop_buf_steal(&b);
    lop_buf_printf(&b, "%s://%s", curl_scheme, out->host_port);
    out->url = lop_buf_steal(&b);
    return LOP_OK;
bad:
    lop_proxy_cleanup(out);
    return lop_err_set(err, LOP_EINVAL, 0, NULL,
                       "%s: invalid proxy URL (want http[s]://[user:password@]host[:port] or socks5://...)", source);
}

lop_rc_t lop_proxy_select(const char *explicit_url, bool tls, const char *host, const char *port, lop_proxy_t *out,
                          lop_err_t *err)
{
    memset(out, 0, sizeof *out);
    if (explicit_url) {
        if (!*explicit_url) return LOP_OK;
        return parse_proxy(explicit_url, "proxy-url", out, err);
    }
    const char *name = tls ? "HTTPS_PROXY" : "HTTP_PROXY";
    const char *v = tls ? env2("HTTPS_PROXY", "https_proxy") : env2("HTTP_PROXY", "http_proxy");
    if (!v || !*v) return LOP_OK;
    /* never for the local machine (Go: "localhost" and loopback addresses), nor for NO_PROXY */
    unsigned char ip[16];
    int il = ip_bytes(host, strlen(host), ip);
    bool loopback = strcasecmp(host, "localhost") == 0 || (il == 4 && ip[0] == 127) || /* also ::ffff:127.x */
                    (il == 16 && memcmp(ip, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\1", 16) == 0);
    if (loopback || lop_no_proxy_match(env2("NO_PROXY", "no_proxy"), host, port)) return LOP_OK;
    return parse_proxy(v, name, out, err);
}
