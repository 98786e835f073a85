/* SPDX-License-Identifier: Apache-2.0 */
/* lease.c — the Lease record, its JSON codec, and the lease client wrapper (see lease.h). */
#include "host/kube/leaderelection/lease.h"

#include "host/util/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void lop_lease_record_cleanup(lop_lease_record_t *r)
{
    if (!r) return;
    free(r->holder_identity);
    memset(r, 0, sizeof *r);
}

void lop_lease_record_set_holder(lop_lease_record_t *r, const char *id)
{
    char *copy = id ? lop_xstrdup(id) : NULL;
    free(r->holder_identity);
    r->holder_identity = copy;
}

void lop_lease_record_copy(lop_lease_record_t *dst, const lop_lease_record_t *src)
{
    if (dst == src) return;
    lop_lease_record_set_holder(dst, src->holder_identity);
    dst->lease_duration_seconds = src->lease_duration_seconds;
    dst->acquire_time_ns = src->acquire_time_ns;
    dst->renew_time_ns = src->renew_time_ns;
    dst->lease_transitions = src->lease_transitions;
}

const char *lop_lease_record_holder(const lop_lease_record_t *r)
{
    return r->holder_identity ? r->holder_identity : "";
}

/* Times are compared at the microsecond precision the wire carries, so a record read back from
 * the server equals the one that was written. */
static int64_t to_us(int64_t ns) { return ns / 1000; }

bool lop_lease_record_equal(const lop_lease_record_t *a, const lop_lease_record_t *b)
{
    return strcmp(lop_lease_record_holder(a), lop_lease_record_holder(b)) == 0 &&
           a->lease_duration_seconds == b->lease_duration_seconds &&
           to_us(a->acquire_time_ns) == to_us(b->acquire_time_ns) &&
           to_us(a->renew_time_ns) == to_us(b->renew_time_ns) && a->lease_transitions == b->lease_transitions;
}

/* ---- encoding ---- */

static void set_microtime(json_t *o, const char *key, int64_t ns)
{
    if (ns == 0) return;
    char buf[40];
    json_object_set_new(o, key, json_string(lop_microtime_format(ns, buf, sizeof buf)));
}

json_t *lop_lease_spec_to_json(const lop_lease_record_t *r)
{
    json_t *spec = json_object();
    json_object_set_new(spec, "holderIdentity", json_string(lop_lease_record_holder(r)));
    if (r->lease_duration_seconds > 0)
        json_object_set_new(spec, "leaseDurationSeconds", json_integer(r->lease_duration_seconds));
    set_microtime(spec, "acquireTime", r->acquire_time_ns);
    set_microtime(spec, "renewTime", r->renew_time_ns);
    json_object_set_new(spec, "leaseTransitions", json_integer(r->lease_transitions));
    return spec;
}

json_t *lop_lease_to_json(const char *ns, const char *name, const char *rv, const lop_lease_record_t *r)
{
    json_t *meta = json_object();
    json_object_set_new(meta, "name", json_string(name ? name : ""));
    if (ns && *ns) json_object_set_new(meta, "namespace", json_string(ns));
    if (rv && *rv) json_object_set_new(meta, "resourceVersion", json_string(rv));
    json_t *obj = json_object();
    json_object_set_new(obj, "apiVersion", json_string("coordination.k8s.io/v1"));
    json_object_set_new(obj, "kind", json_string("Lease"));
    json_object_set_new(obj, "metadata", meta);
    json_object_set_new(obj, "spec", lop_lease_spec_to_json(r));
    return obj;
}

/* ---- decoding ---- */

static lop_rc_t get_int32(const json_t *spec, const char *key, int32_t *out, lop_err_t *err)
{
    const json_t *v = json_object_get(spec, key);
    if (!v || json_is_null(v)) return LOP_OK;
    if (!json_is_integer(v)) return lop_err_set(err, LOP_EINVAL, 0, NULL, "Lease spec.%s: expected an integer", key);
    json_int_t i = json_integer_value(v);
    if (i < INT32_MIN || i > INT32_MAX)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "Lease spec.%s: %lld is out of int32 range", key, (long long)i);
    *out = (int32_t)i;
    return LOP_OK;
}

static lop_rc_t get_time(const json_t *spec, const char *key, int64_t *out, lop_err_t *err)
{
    const json_t *v = json_object_get(spec, key);
    if (!v || json_is_null(v)) return LOP_OK;
    if (!json_is_string(v)) return lop_err_set(err, LOP_EINVAL, 0, NULL, "Lease spec.%s: expected a time string", key);
    if (lop_time_parse(json_string_value(v), out) != 0)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "Lease spec.%s: \"%.64s\" is not an RFC 3339 time", key,
                           json_string_value(v));
    return LOP_OK;
}

lop_rc_t lop_lease_spec_from_json(const json_t *spec, lop_lease_record_t *out, lop_err_t *err)
{
    lop_lease_record_cleanup(out);
    if (!spec || json_is_null(spec)) return LOP_OK;
    if (!json_is_object(spec)) return lop_err_set(err, LOP_EINVAL, 0, NULL, "Lease spec: expected an object");
    lop_lease_record_t r = LOP_LEASE_RECORD_INIT;
    const json_t *h = json_object_get(spec, "holderIdentity");
    if (h && !json_is_null(h) && !json_is_string(h))
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "Lease spec.holderIdentity: expected a string");
    lop_rc_t rc = get_int32(spec, "leaseDurationSeconds", &r.lease_duration_seconds, err);
    if (rc == LOP_OK) rc = get_int32(spec, "leaseTransitions", &r.lease_transitions, err);
    if (rc == LOP_OK) rc = get_time(spec, "acquireTime", &r.acquire_time_ns, err);
    if (rc == LOP_OK) rc = get_time(spec, "renewTime", &r.renew_time_ns, err);
    if (rc != LOP_OK) return rc;
    if (r.lease_duration_seconds < 0)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "Lease spec.leaseDurationSeconds: %d is negative",
                           (int)r.lease_duration_seconds);
    if (json_is_string(h)) r.holder_identity = lop_xstrdup(json_string_value(h));
    *out = r;
    return LOP_OK;
}

lop_rc_t lop_lease_from_json(const json_t *obj, lop_lease_record_t *out, char *rv, lop_err_t *err)
{
    lop_lease_record_cleanup(out);
    if (rv) rv[0] = '\0';
    if (!json_is_object(obj)) return lop_err_set(err, LOP_EINVAL, 0, NULL, "Lease: expected a JSON object");
    const json_t *kind = json_object_get(obj, "kind");
    if (kind && !(json_is_string(kind) && strcmp(json_string_value(kind), "Lease") == 0))
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "Lease: kind is %s, expected \"Lease\"",
                           json_is_string(kind) ? json_string_value(kind) : "not a string");
    const json_t *meta = json_object_get(obj, "metadata");
    if (meta && !json_is_object(meta))
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "Lease metadata: expected an object");
    const json_t *jrv = meta ? json_object_get(meta, "resourceVersion") : NULL;
    if (jrv && !json_is_null(jrv)) {
        if (!json_is_string(jrv))
            return lop_err_set(err, LOP_EINVAL, 0, NULL, "Lease metadata.resourceVersion: expected a string");
        if (strlen(json_string_value(jrv)) >= LOP_LEASE_RV_MAX)
            return lop_err_set(err, LOP_EINVAL, 0, NULL, "Lease metadata.resourceVersion: longer than %d bytes",
                               LOP_LEASE_RV_MAX - 1);
        if (rv) snprintf(rv, LOP_LEASE_RV_MAX, "%s", json_string_value(jrv));
    }
    lop_rc_t rc = lop_lease_spec_from_json(json_object_get(obj, "spec"), out, err);
    if (rc != LOP_OK && rv) rv[0] = '\0';
    return rc;
}

lop_rc_t lop_lease_from_text(const char *text, size_t len, lop_lease_record_t *out, char *rv, lop_err_t *err)
{
    lop_lease_record_cleanup(out);
    if (rv) rv[0] = '\0';
    json_error_t jerr;
    json_t *obj = json_loadb(text ? text : "", text ? len : 0, 0, &jerr);
    if (!obj)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "Lease: invalid JSON at line %d column %d: %s", jerr.line,
                           jerr.column, jerr.text);
    lop_rc_t rc = lop_lease_from_json(obj, out, rv, err);
    json_decref(obj);
    return rc;
}

bool lop_lease_name_valid(const char *s)
{
    if (!s) return false;
    size_t n = strlen(s);
    if (n == 0 || n > 253) return false;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        bool alnum = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
        if (!alnum && ch != '-' && ch != '.') return false;
        if ((i == 0 || i == n - 1) && !alnum) return false;
    }
    return true;
}

/* ---- client wrapper ---- */

lop_lease_client_t *lop_lease_client_new(const lop_lease_client_ops_t *ops, void *ud, const char *description)
{
    lop_lease_client_t *c = lop_xcalloc(1, sizeof *c);
    c->ops = ops;
    c->ud = ud;
    c->description = lop_xstrdup(description ? description : "lease");
    return c;
}

void lop_lease_client_free(lop_lease_client_t *c)
{
    if (!c) return;
    if (c->ops->free) c->ops->free(c->ud);
    free(c->description);
    free(c);
}
