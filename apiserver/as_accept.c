/* SPDX-License-Identifier: Apache-2.0 */
/* as_accept.c — Accept negotiation (apiserver pkg/endpoints/handlers/negotiation/negotiate.go; 406
 * NotAcceptable): which media range of the request a response is encoded for, and whether it asks
 * for a metadata-only view (k8s.io/apimachinery/pkg/apis/meta/v1 PartialObjectMetadata,
 * PartialObjectMetadataList) or a Table with `as=`. The views themselves are in as_view.c and
 * as_table.c. See as_internal.h.
 */
#include "apiserver/as_accept.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_CLAUSES 32

/* One media range of the Accept header, with the parameters negotiation reads. */
typedef struct clause {
    char type[64], subtype[96];
    double q;
    int order; /* position in the header: ties keep it */
    bool has_conv;
    char as[64], g[64], v[32], stream[32];
} clause_t;

static void trim(const char **s, const char **e)
{
    while (*s < *e && (**s == ' ' || **s == '\t')) (*s)++;
    while (*e > *s && ((*e)[-1] == ' ' || (*e)[-1] == '\t')) (*e)--;
}

/* Copy [s, e) to dst (cap bytes), without surrounding quotes. */
static void copy_val(char *dst, size_t cap, const char *s, const char *e)
{
    trim(&s, &e);
    if (e - s >= 2 && *s == '"' && e[-1] == '"') s++, e--;
    snprintf(dst, cap, "%.*s", (int)(e - s), s);
}

/* One parameter "k=v" in [s, e) of clause c. */
static void param(clause_t *c, const char *s, const char *e)
{
    const char *eq = memchr(s, '=', (size_t)(e - s));
    if (!eq) return;
    const char *ks = s, *ke = eq;
    trim(&ks, &ke);
    size_t kl = (size_t)(ke - ks);
    char q[32];
    if (kl == 1 && *ks == 'q') {
        copy_val(q, sizeof q, eq + 1, e);
        char *end;
        double v = strtod(q, &end);
        c->q = end != q ? v : 1;
    } else if (kl == 2 && !memcmp(ks, "as", 2)) {
        copy_val(c->as, sizeof c->as, eq + 1, e);
        c->has_conv = true;
    } else if (kl == 1 && *ks == 'g') {
        copy_val(c->g, sizeof c->g, eq + 1, e);
        c->has_conv = true;
    } else if (kl == 1 && *ks == 'v') {
        copy_val(c->v, sizeof c->v, eq + 1, e);
        c->has_conv = true;
    } else if (kl == 6 && !memcmp(ks, "stream", 6)) {
        copy_val(c->stream, sizeof c->stream, eq + 1, e);
    } /* pretty, profile and unknown parameters change nothing here */
}

/* Parse the media range and parameters in [s, e). False for an empty or malformed range. */
static bool parse_clause(clause_t *c, const char *s, const char *e, int order)
{
    memset(c, 0, sizeof *c);
    c->q = 1;
    c->order = order;
    const char *semi = memchr(s, ';', (size_t)(e - s));
    const char *rs = s, *re = semi ? semi : e;
    trim(&rs, &re);
    const char *slash = memchr(rs, '/', (size_t)(re - rs));
    if (!slash || slash == rs || slash + 1 == re) return false;
    snprintf(c->type, sizeof c->type, "%.*s", (int)(slash - rs), rs);
    snprintf(c->subtype, sizeof c->subtype, "%.*s", (int)(re - slash - 1), slash + 1);
    while (semi) {
        const char *ps = semi + 1;
        semi = memchr(ps, ';', (size_t)(e - ps));
        param(c, ps, semi ? semi : e);
    }
    return true;
}

/* 2 for type/subtype, 1 for type/\*, 0 for \*\/\*. */
static int specificity(const clause_t *c) { return strcmp(c->type, "*") ? (strcmp(c->subtype, "*") ? 2 : 1) : 0; }

/* The order the API server tries clauses in: quality first, then the more specific range, then
 * the header's order. */
static bool before(const clause_t *a, const clause_t *b)
{
    if (a->q != b->q) return a->q > b->q;
    if (specificity(a) != specificity(b)) return specificity(a) > specificity(b);
    return a->order < b->order;
}

/* Responses are JSON whatever the range names, except the binary encodings a Kubernetes client
 * may ask for (protobuf, CBOR): those are not served (the documented leniency: a YAML or text
 * Accept gets JSON). */
static bool served(const clause_t *c)
{
    if (!strcmp(c->type, "*")) return !strcmp(c->subtype, "*");
    return !strcasestr(c->subtype, "protobuf") && !strcasestr(c->subtype, "cbor");
}

/* The clause's acceptance on an endpoint (allow_conv: a resource endpoint) and what it asks. */
static bool acceptable(const clause_t *c, bool allow_conv, as_conv_t *out)
{
    if (c->q <= 0 || !served(c)) return false;
    if (c->stream[0] && strcmp(c->stream, "watch")) return false;
    memset(out, 0, sizeof *out);
    if (!c->has_conv) return true;
    /* apiserver's RequestScope.AllowsMediaTypeTransform: a conversion into meta.k8s.io v1 or
     * v1beta1 PartialObjectMetadata[List] or Table (as_table.h); discovery and other endpoints
     * allow none */
    if (!allow_conv || strcmp(c->g, "meta.k8s.io") || (strcmp(c->v, "v1") && strcmp(c->v, "v1beta1"))) return false;
    if (!strcmp(c->as, "PartialObjectMetadata"))
        out->kind = AS_CONV_PARTIAL;
    else if (!strcmp(c->as, "PartialObjectMetadataList"))
        out->kind = AS_CONV_PARTIAL_LIST;
    else if (!strcmp(c->as, "Table"))
        out->kind = AS_CONV_TABLE;
    else
        return false;
    snprintf(out->api_version, sizeof out->api_version, "%s",
             strcmp(c->v, "v1") ? "meta.k8s.io/v1beta1" : "meta.k8s.io/v1");
    return true;
}

bool as_accept_negotiate(const char *accept, bool allow_conv, as_conv_t *out)
{
    memset(out, 0, sizeof *out);
    if (!accept) return true;
    const char *p = accept;
    while (*p == ' ' || *p == '\t') p++;
    if (!*p) return true; /* no preference */
    clause_t cl[MAX_CLAUSES];
    int n = 0, order = 0;
    while (*p && n < MAX_CLAUSES) {
        const char *e = p;
        bool quoted = false;
        for (; *e && (quoted || *e != ','); e++)
            if (*e == '"') quoted = !quoted;
        if (parse_clause(&cl[n], p, e, order++)) {
            int i = n++; /* insertion sort: stable */
            clause_t c = cl[i];
            for (; i > 0 && before(&c, &cl[i - 1]); i--) cl[i] = cl[i - 1];
            cl[i] = c;
        }
        p = *e ? e + 1 : e;
    }
    for (int i = 0; i < n; i++)
        if (acceptable(&cl[i], allow_conv, out)) return true;
    memset(out, 0, sizeof *out);
    return false;
}
