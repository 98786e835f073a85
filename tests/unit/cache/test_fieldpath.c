/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for host/kube/cache/fieldpath: the path syntax (members, [*], [N], quoted members,
 * the errors that name the position), the values (scalars as strings, nothing from null, objects,
 * arrays or absent members), and the index function's namespace keys used by a field index in a
 * store. */
#include "host/kube/cache/fieldindex.h"
#include "host/kube/cache/fieldpath.h"
#include "t.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *DEPLOY =
    "{\"metadata\":{\"namespace\":\"n\",\"name\":\"web\",\"labels\":{\"app.kubernetes.io/name\":\"web\"}},"
    "\"spec\":{\"replicas\":3,\"paused\":false,\"ratio\":0.1,\"big\":1e300,\"none\":null,"
    "\"template\":{\"spec\":{\"volumes\":["
    "{\"name\":\"a\",\"secret\":{\"secretName\":\"db-creds\"}},"
    "{\"name\":\"b\",\"configMap\":{\"name\":\"cfg\"}},"
    "{\"name\":\"c\",\"secret\":{\"secretName\":\"tls\"}},"
    "{\"name\":\"d\",\"secret\":{\"secretName\":\"db-creds\"}}],"
    "\"containers\":[{\"env\":[{\"valueFrom\":{\"secretKeyRef\":{\"name\":\"e1\"}}},{\"value\":\"x\"}]},"
    "{\"env\":[{\"valueFrom\":{\"secretKeyRef\":{\"name\":\"e2\"}}}]}]}}}}";

/* The values of path in DEPLOY joined by ',' ("!" when the path does not compile). */
static const char *eval(const char *path)
{
    static char out[512];
    lop_fieldpath_t *p = NULL;
    lop_err_t err;
    lop_err_clear(&err);
    if (lop_fieldpath_compile(path, &p, &err) != LOP_OK) return "!";
    char **vals;
    int n = lop_fieldpath_eval(p, DEPLOY, strlen(DEPLOY), &vals);
    T_CHECK(n >= 0);
    out[0] = 0;
    for (int i = 0; i < n; i++) {
        if (i) strcat(out, ",");
        strcat(out, vals[i]);
        free(vals[i]);
    }
    free(vals);
    lop_fieldpath_free(p);
    return out;
}

static void test_values(void)
{
    static const struct {
        const char *path, *want;
    } cases[] = {
        {"spec.template.spec.volumes[*].secret.secretName", "db-creds,tls,db-creds"},
        {".spec.template.spec.volumes[*].secret.secretName", "db-creds,tls,db-creds"}, /* leading '.' */
        {"spec.template.spec.volumes[1].configMap.name", "cfg"},
        {"spec.template.spec.volumes[9].name", ""}, /* past the end */
        {"spec.template.spec.containers[*].env[*].valueFrom.secretKeyRef.name", "e1,e2"},
        {"metadata.labels['app.kubernetes.io/name']", "web"},
        {"metadata[\"labels\"][\"app.kubernetes.io/name\"]", "web"},
        {"spec.replicas", "3"},
        {"spec.paused", "false"},
        {"spec.ratio", "0.1"},
        {"spec.big", "1e+300"},
        {"spec.none", ""},                       /* null: no value */
        {"spec.template", ""},                   /* an object: no value */
        {"spec.template.spec.volumes", ""},      /* an array: no value */
        {"spec.replicas[*]", ""},                /* [*] of a scalar */
        {"spec.template.spec.volumes.name", ""}, /* a member of an array */
        {"spec.absent.deeper", ""},
        {"metadata.name", "web"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *got = eval(cases[i].path);
        if (strcmp(got, cases[i].want) != 0) fprintf(stderr, "  path %s\n", cases[i].path);
        T_EQ_STR(got, cases[i].want);
    }
}

static void test_syntax_errors(void)
{
    static const struct {
        const char *path, *msg;
    } cases[] = {
        {"", "field path must not be empty"},
        {"spec..x", "field path \"spec..x\": empty member at 5"},
        {"spec.", "field path \"spec.\": empty member at 5"},
        {"spec[*", "field path \"spec[*\": '[*' without ']' at 4"},
        {"spec['x]", "field path \"spec['x]\": unterminated quoted member at 4"},
        {"spec[x]", "field path \"spec[x]\": expected [*], [N] or ['name'] at 4"},
        {"spec[1", "field path \"spec[1\": index without ']' at 4"},
        {"spec x", "field path \"spec x\": unexpected character at 4"},
        {"[*]", "field path \"[*]\": expected a member name at 0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        lop_fieldpath_t *p = (lop_fieldpath_t *)1;
        lop_err_t err;
        lop_err_clear(&err);
        T_EQ_INT(lop_fieldpath_compile(cases[i].path, &p, &err), LOP_EINVAL);
        T_CHECK(p == NULL);
        T_EQ_STR(err.message, cases[i].msg);
    }
    lop_fieldpath_t *p = NULL;
    lop_err_t err;
    T_EQ_INT(lop_fieldpath_compile("a.b", &p, &err), LOP_OK);
    T_EQ_STR(lop_fieldpath_text(p), "a.b");
    char **vals = (char **)1;
    T_EQ_INT(lop_fieldpath_eval(p, "{nope", 5, &vals), -1); /* not JSON */
    T_CHECK(vals == NULL);
    lop_fieldpath_free(p);
    lop_fieldpath_free(NULL);
}

static lop_obj_t *mk(const char *json)
{
    lop_obj_t *o = NULL;
    T_EQ_INT(lop_obj_new(json, strlen(json), 0, &o, NULL), LOP_OK);
    return o;
}

static const char *names(lop_fieldindex_t *x, const char *ns, const char *value)
{
    static char out[256];
    char *key = lop_fieldpath_lookup_key(ns, value);
    lop_obj_list_t l;
    lop_fieldindex_find(x, key, &l);
    free(key);
    out[0] = 0;
    for (size_t i = 0; i < l.n; i++) {
        if (i) strcat(out, " ");
        strcat(out, l.items[i]->namespace_);
        strcat(out, "/");
        strcat(out, l.items[i]->name);
    }
    lop_obj_list_free(&l);
    return out;
}

/* The index function in a store: a value matches within the namespace asked for, or across all
 * of them; cluster-scoped objects only across all. */
static void test_index_fn(void)
{
    lop_fieldpath_t *p = NULL;
    lop_err_t err;
    T_EQ_INT(lop_fieldpath_compile("spec.template.spec.volumes[*].secret.secretName", &p, &err), LOP_OK);
    lop_store_t *s = lop_store_new();
    T_CHECK(lop_store_add_field_index(s, lop_fieldindex_new("secretRef", lop_fieldpath_index_fn, p)));
    lop_fieldindex_t *x = lop_store_field_index(s, "secretRef");
    lop_obj_t *a = mk(DEPLOY);
    lop_obj_t *b = mk("{\"metadata\":{\"namespace\":\"m\",\"name\":\"api\"},\"spec\":{\"template\":{\"spec\":"
                      "{\"volumes\":[{\"secret\":{\"secretName\":\"db-creds\"}}]}}}}");
    lop_obj_t *c = mk("{\"metadata\":{\"name\":\"cluster-wide\"},\"spec\":{\"template\":{\"spec\":"
                      "{\"volumes\":[{\"secret\":{\"secretName\":\"db-creds\"}}]}}}}");
    lop_store_put(s, a, NULL);
    lop_store_put(s, b, NULL);
    lop_store_put(s, c, NULL);
    T_EQ_STR(names(x, "n", "db-creds"), "n/web");
    T_EQ_STR(names(x, "m", "db-creds"), "m/api");
    T_EQ_STR(names(x, NULL, "db-creds"), "/cluster-wide m/api n/web");
    T_EQ_STR(names(x, "", "tls"), "n/web");
    T_EQ_STR(names(x, "m", "tls"), "");
    T_EQ_STR(names(x, "n", "cfg"), ""); /* a ConfigMap volume is not on the path */
    T_EQ_INT((long)lop_fieldindex_count(x), 3);
    lop_obj_unref(a);
    lop_obj_unref(b);
    lop_obj_unref(c);
    lop_store_free(s);
    lop_fieldpath_free(p);
}

int main(void)
{
    T_RUN(test_values);
    T_RUN(test_syntax_errors);
    T_RUN(test_index_fn);
    return T_DONE();
}
