/* SPDX-License-Identifier: Apache-2.0 */
/* as_schema_format.c — string formats (kube-openapi strfmt.Default as apiextensions enables them)
 * and patterns translated from RE2 syntax into POSIX extended regular expressions. */
#include "apiserver/as_schema_format.h"

#include "host/util/buf.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static bool all_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)s[i])) return false;
    return true;
}

static bool all_digits(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i])) return false;
    return n > 0;
}

/* RFC 1034 host name as strfmt checks it: dot-separated labels of letters, digits and '-', each
 * 1..63 bytes not starting or ending with '-', at most 255 bytes in all. */
static bool valid_hostname(const char *s, size_t n)
{
    if (n == 0 || n > 255) return false;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] != '.') {
            if (!isalnum((unsigned char)s[i]) && s[i] != '-') return false;
            continue;
        }
        size_t len = i - start;
        if (len == 0 || len > 63 || s[start] == '-' || s[i - 1] == '-') return false;
        start = i + 1;
    }
    return true;
}

static bool valid_ip(const char *s, size_t n, int af)
{
    char buf[64];
    unsigned char out[16];
    if (n == 0 || n >= sizeof buf) return false;
    memcpy(buf, s, n);
    buf[n] = '\0';
    return inet_pton(af, buf, out) == 1;
}

/* net.ParseCIDR: an address, '/', a decimal prefix length within the address size. */
static bool valid_cidr(const char *s, size_t n)
{
    const char *slash = memchr(s, '/', n);
    if (!slash) return false;
    size_t alen = (size_t)(slash - s), plen = n - alen - 1;
    bool v6 = memchr(s, ':', alen) != NULL;
    if (!valid_ip(s, alen, v6 ? AF_INET6 : AF_INET) || !all_digits(slash + 1, plen) || plen > 3) return false;
    if (plen > 1 && slash[1] == '0') return false;
    int bits = atoi(slash + 1);
    return bits <= (v6 ? 128 : 32);
}

/* net.ParseMAC: 6, 8 or 20 hex pairs separated by ':' or '-', or dotted groups of four. */
static bool valid_mac(const char *s, size_t n)
{
    if (n >= 14 && s[4] == '.') {
        if ((n + 1) % 5 != 0) return false;
        size_t groups = (n + 1) / 5;
        if (groups != 3 && groups != 4 && groups != 10) return false;
        for (size_t g = 0; g < groups; g++) {
            if (!all_hex(s + g * 5, 4) || (g + 1 < groups && s[g * 5 + 4] != '.')) return false;
        }
        return true;
    }
    if (n < 17 || (n + 1) % 3 != 0) return false;
    size_t pairs = (n + 1) / 3;
    if (pairs != 6 && pairs != 8 && pairs != 20) return false;
    char sep = s[2];
    if (sep != ':' && sep != '-') return false;
    for (size_t p = 0; p < pairs; p++) {
        if (!all_hex(s + p * 3, 2) || (p + 1 < pairs && s[p * 3 + 2] != sep)) return false;
    }
    return true;
}

/* (?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?V[0-9a-f]{3}-?[89ab]?...: version 0 = any. */
static bool valid_uuid(const char *s, size_t n, int version)
{
    char hex[33];
    size_t h = 0;
    const int dash_after[] = {8, 12, 16, 20};
    int d = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '-' && d < 4 && (int)h == dash_after[d]) {
            d++;
            continue;
        }
        if (!isxdigit((unsigned char)s[i]) || h >= 32) return false;
        if (d < 4 && (int)h == dash_after[d]) d++; /* the dash is optional */
        hex[h++] = (char)tolower((unsigned char)s[i]);
    }
    if (h != 32) return false;
    if (version == 0) return true;
    if (hex[12] != (char)('0' + version)) return false;
    return version == 3 || strchr("89ab", hex[16]) != NULL;
}

static bool valid_base64(const char *s, size_t n)
{
    if (n % 4 != 0) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (isalnum((unsigned char)c) || c == '+' || c == '/') continue;
        if (c == '=' && (i >= n - 2) && (i == n - 1 || s[n - 1] == '=')) continue;
        return false;
    }
    return true;
}

static bool leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

/* YYYY-MM-DD, a real calendar day. */
static bool valid_date(const char *s, size_t n)
{
    if (n != 10 || s[4] != '-' || s[7] != '-' || !all_digits(s, 4) || !all_digits(s + 5, 2) || !all_digits(s + 8, 2))
        return false;
    int y = atoi(s), m = (s[5] - '0') * 10 + (s[6] - '0'), d = (s[8] - '0') * 10 + (s[9] - '0');
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m < 1 || m > 12 || d < 1) return false;
    return d <= days[m - 1] + (m == 2 && leap(y));
}

/* strfmt.ParseDateTime's layouts: date 'T' hh:mm:ss, optional .fraction, then Z, ±hh:mm, ±hhmm or
 * nothing. */
static bool valid_datetime(const char *s, size_t n)
{
    if (n < 19 || !valid_date(s, 10) || (s[10] != 'T' && s[10] != 't')) return false;
    const char *t = s + 11;
    if (!all_digits(t, 2) || t[2] != ':' || !all_digits(t + 3, 2) || t[5] != ':' || !all_digits(t + 6, 2)) return false;
    if (atoi(t) > 23 || atoi(t + 3) > 59 || atoi(t + 6) > 60) return false;
    size_t i = 19;
    if (i < n && s[i] == '.') {
        size_t j = ++i;
        while (i < n && isdigit((unsigned char)s[i])) i++;
        if (i == j) return false;
    }
    if (i == n) return true;
    if ((s[i] == 'Z' || s[i] == 'z') && i + 1 == n) return true;
    if (s[i] != '+' && s[i] != '-') return false;
    const char *z = s + i + 1;
    size_t zn = n - i - 1;
    if (zn == 5) return all_digits(z, 2) && z[2] == ':' && all_digits(z + 3, 2);
    return zn == 4 && all_digits(z, 4);
}

/* Go's time.ParseDuration ("1h30m", "-1.5s", "300ms") or strfmt's "<n> <unit>" form ("22 ns"). */
static bool valid_duration(const char *s, size_t n)
{
    static const char *const units[] = {"ns", "us", "µs", "ms", "s", "m", "h", "d", "w", NULL};
    size_t i = 0;
    if (i < n && (s[i] == '+' || s[i] == '-')) i++;
    if (n - i == 1 && s[i] == '0') return true;
    bool any = false;
    while (i < n) {
        size_t j = i;
        while (i < n && (isdigit((unsigned char)s[i]) || s[i] == '.')) i++;
        if (i == j) return false;
        if (i < n && s[i] == ' ') i++;
        size_t best = 0;
        for (int u = 0; units[u]; u++) {
            size_t ul = strlen(units[u]);
            if (ul > best && n - i >= ul && !memcmp(s + i, units[u], ul)) best = ul;
        }
        if (best == 0) return false;
        i += best;
        any = true;
    }
    return any;
}

static bool valid_email(const char *s, size_t n)
{
    const char *at = memchr(s, '@', n);
    if (!at || at == s || at == s + n - 1 || memchr(at + 1, '@', (size_t)(s + n - at - 1))) return false;
    for (size_t i = 0; i < n; i++)
        if (isspace((unsigned char)s[i]) || s[i] == '<' || s[i] == '>') return false;
    return true;
}

/* url.ParseRequestURI: an absolute URI (scheme ':' ...) or an absolute path. */
static bool valid_uri(const char *s, size_t n)
{
    if (n == 0) return false;
    if (s[0] == '/') return true;
    if (!isalpha((unsigned char)s[0])) return false;
    for (size_t i = 1; i < n; i++) {
        if (s[i] == ':') return i + 1 < n;
        if (!isalnum((unsigned char)s[i]) && s[i] != '+' && s[i] != '-' && s[i] != '.') return false;
    }
    return false;
}

static bool valid_rgbcolor(const char *s, size_t n)
{
    if (n < 10 || strncmp(s, "rgb(", 4) || s[n - 1] != ')') return false;
    size_t i = 4;
    for (int part = 0; part < 3; part++) {
        while (i < n && s[i] == ' ') i++;
        size_t j = i;
        while (i < n && isdigit((unsigned char)s[i])) i++;
        if (i == j || i - j > 3 || atoi(s + j) > 255) return false;
        while (i < n && s[i] == ' ') i++;
        if (i >= n || s[i] != (part < 2 ? ',' : ')')) return false;
        i++;
    }
    return i == n;
}

bool as_format_valid(const char *f, const char *s, size_t n)
{
    if (!strcmp(f, "hostname")) return valid_hostname(s, n);
    if (!strcmp(f, "ipv4")) return memchr(s, '.', n) && valid_ip(s, n, AF_INET);
    if (!strcmp(f, "ipv6")) return memchr(s, ':', n) && valid_ip(s, n, AF_INET6);
    if (!strcmp(f, "cidr")) return valid_cidr(s, n);
    if (!strcmp(f, "mac")) return valid_mac(s, n);
    if (!strcmp(f, "uuid")) return valid_uuid(s, n, 0);
    if (!strcmp(f, "uuid3")) return valid_uuid(s, n, 3);
    if (!strcmp(f, "uuid4")) return valid_uuid(s, n, 4);
    if (!strcmp(f, "uuid5")) return valid_uuid(s, n, 5);
    if (!strcmp(f, "byte")) return valid_base64(s, n);
    if (!strcmp(f, "date")) return valid_date(s, n);
    if (!strcmp(f, "date-time") || !strcmp(f, "datetime")) return valid_datetime(s, n);
    if (!strcmp(f, "duration")) return valid_duration(s, n);
    if (!strcmp(f, "email")) return valid_email(s, n);
    if (!strcmp(f, "uri")) return valid_uri(s, n);
    if (!strcmp(f, "hexcolor"))
        return n > 0 &&
               (s[0] == '#' ? (n == 4 || n == 7) && all_hex(s + 1, n - 1) : (n == 3 || n == 6) && all_hex(s, n));
    if (!strcmp(f, "rgbcolor")) return valid_rgbcolor(s, n);
    if (!strcmp(f, "bsonobjectid")) return n == 24 && all_hex(s, n);
    if (!strcmp(f, "ssn"))
        return (n == 9 && all_digits(s, 9)) || (n == 11 && all_digits(s, 3) && (s[3] == '-' || s[3] == ' ') &&
                                                all_digits(s + 4, 2) && s[6] == s[3] && all_digits(s + 7, 4));
    return true;
}

/* One escape outside brackets (p after the backslash) → ERE text; -1 when unsupported. */
static int translate_escape(lop_buf_t *out, char c, bool in_bracket)
{
    switch (c) {
    case 'd': lop_buf_puts(out, in_bracket ? "0-9" : "[0-9]"); return 0;
    case 'w': lop_buf_puts(out, in_bracket ? "A-Za-z0-9_" : "[A-Za-z0-9_]"); return 0;
    case 's': lop_buf_puts(out, in_bracket ? "[:space:]" : "[[:space:]]"); return 0;
    case 'D': return in_bracket ? -1 : (lop_buf_puts(out, "[^0-9]"), 0);
    case 'W': return in_bracket ? -1 : (lop_buf_puts(out, "[^A-Za-z0-9_]"), 0);
    case 'S': return in_bracket ? -1 : (lop_buf_puts(out, "[^[:space:]]"), 0);
    case 't': lop_buf_putc(out, '\t'); return 0;
    case 'n': lop_buf_putc(out, '\n'); return 0;
    case 'r': lop_buf_putc(out, '\r'); return 0;
    default: break;
    }
    if (isalnum((unsigned char)c)) return -1; /* \b, \p, backreferences, \x.. */
    if (in_bracket) {
        if (c == ']' || c == '\\' || c == '-' || c == '^') return -1; /* no portable ERE spelling */
        lop_buf_putc(out, c);
    } else {
        lop_buf_putc(out, '[');
        lop_buf_putc(out, c);
        lop_buf_putc(out, ']');
    }
    return 0;
}

/* What the translation tracks to refuse patterns RE2 refuses or POSIX regcomp would blow up on:
 * stacked quantifiers (a++, RE2: "invalid nested repetition operator"), counts above 1000 (RE2's
 * limit), and a counted repetition of a group that holds one (((a{100}){100}) expands
 * multiplicatively in glibc's regcomp). */
typedef struct pat_state {
    bool after_quant;      /* the last token was a quantifier */
    bool counted[32];      /* per open group: it holds a counted repetition */
    int depth;             /* open groups */
    bool closed_had_count; /* the group just closed held one (valid right after ')') */
    bool after_close;
} pat_state_t;

/* A quantifier at p[*i] (one of * + ? {); -1 when refused, else 0 with *i past a {n,m}. */
static int pattern_quantifier(pat_state_t *st, const char *p, size_t *i, lop_buf_t *out)
{
    if (st->after_quant || p[*i + 1] == '?') return -1; /* stacked, or lazy (*?, +?, ??) */
    if (p[*i] != '{') {
        lop_buf_putc(out, p[*i]);
        st->after_quant = true;
        return 0;
    }
    size_t j = *i + 1;
    while (p[j] && p[j] != '}') {
        if (!isdigit((unsigned char)p[j]) && p[j] != ',') return -1;
        j++;
    }
    if (!p[j] || atoi(p + *i + 1) > 1000 ||
        (strchr(p + *i, ',') && strchr(p + *i, ',') < p + j && atoi(strchr(p + *i, ',') + 1) > 1000))
        return -1;
    if (st->after_close && st->closed_had_count) return -1;
    if (st->depth > 0) st->counted[st->depth - 1] = true;
    lop_buf_append(out, p + *i, j - *i + 1);
    *i = j;
    st->after_quant = true;
    return 0;
}

/* One character outside brackets and escapes: groups, quantifiers, the rest as is. */
static int pattern_plain(pat_state_t *st, const char *p, size_t *i, lop_buf_t *out)
{
    char c = p[*i];
    if (c == '*' || c == '+' || c == '?' || c == '{') return pattern_quantifier(st, p, i, out);
    bool closing = false;
    if (c == '(') {
        if (p[*i + 1] == '?') {
            if (p[*i + 2] != ':') return -1; /* lookaround, flags, named groups */
            *i += 2;
        }
        if (st->depth == (int)(sizeof st->counted / sizeof st->counted[0])) return -1;
        st->counted[st->depth++] = false;
    } else if (c == ')') {
        if (st->depth == 0) return -1;
        st->closed_had_count = st->counted[--st->depth];
        if (st->closed_had_count && st->depth > 0) st->counted[st->depth - 1] = true;
        closing = true;
    }
    lop_buf_putc(out, c);
    st->after_quant = false;
    st->after_close = closing;
    return 0;
}

int as_pattern_compile(regex_t *re, const char *p)
{
    lop_buf_t out = LOP_BUF_INIT;
    pat_state_t st = {0};
    bool in_bracket = false;
    int rc = 0;
    for (size_t i = 0; p[i] && rc == 0; i++) {
        char c = p[i];
        if (c == '\\') {
            rc = p[i + 1] ? translate_escape(&out, p[++i], in_bracket) : -1;
            st.after_quant = st.after_close = false;
        } else if (in_bracket) {
            lop_buf_putc(&out, c);
            if (c == ']') in_bracket = false;
        } else if (c == '[') {
            lop_buf_putc(&out, c);
            in_bracket = true;
            st.after_quant = st.after_close = false;
            if (p[i + 1] == '^') lop_buf_putc(&out, p[++i]);
            if (p[i + 1] == ']') lop_buf_putc(&out, p[++i]);
        } else {
            rc = pattern_plain(&st, p, &i, &out);
        }
    }
    if (rc == 0 && (in_bracket || st.depth)) rc = -1;
    if (rc == 0 && regcomp(re, out.data ? out.data : "", REG_EXTENDED | REG_NOSUB) != 0) rc = -1;
    lop_buf_free(&out);
    return rc;
}

bool as_pattern_match(const regex_t *re, const char *s) { return regexec(re, s, 0, NULL, 0) == 0; }
