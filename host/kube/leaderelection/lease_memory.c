/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lease_memory.c — an in-memory Lease store with API-server semantics for one Lease (create fails
 * when it exists, update is conditional on the resourceVersion, every write gets a new strictly
 * increasing resourceVersion), plus client handles with fault injection. See lease.h.
 */
#include "host/kube/leaderelection/lease.h"

#include "host/util/buf.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct lop_lease_store {
    pthread_mutex_t mu;
    bool exists;
    lop_lease_record_t rec;
    long revision; /* last resourceVersion handed out */
    long writes;
    lop_lease_store_change_fn on_change;
    void *on_change_ud;
};

typedef struct mem_client {
    lop_lease_store_t *store;
    pthread_mutex_t mu; /* guards the fault and counter fields (tests read them from other threads) */
    int fail_ops;
    lop_rc_t fail_rc;
    int fail_count;
    lop_lease_call_counts_t calls;
} mem_client_t;

lop_lease_store_t *lop_lease_store_new(void)
{
    lop_lease_store_t *s = lop_xcalloc(1, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    return s;
}

void lop_lease_store_free(lop_lease_store_t *s)
{
    if (!s) return;
    lop_lease_record_cleanup(&s->rec);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

void lop_lease_store_on_change(lop_lease_store_t *s, lop_lease_store_change_fn fn, void *ud)
{
    pthread_mutex_lock(&s->mu);
    s->on_change = fn;
    s->on_change_ud = ud;
    pthread_mutex_unlock(&s->mu);
}

lop_rc_t lop_lease_store_peek(lop_lease_store_t *s, lop_lease_record_t *out, char *rv)
{
    pthread_mutex_lock(&s->mu);
    lop_rc_t rc = s->exists ? LOP_OK : LOP_ENOTFOUND;
    if (s->exists) {
        lop_lease_record_copy(out, &s->rec);
        if (rv) snprintf(rv, LOP_LEASE_RV_MAX, "%ld", s->revision);
    } else {
        lop_lease_record_cleanup(out);
        if (rv) rv[0] = '\0';
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

long lop_lease_store_writes(lop_lease_store_t *s)
{
    pthread_mutex_lock(&s->mu);
    long n = s->writes;
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* Count the call and decide whether an injected fault applies. Returns LOP_OK when it does not. */
static lop_rc_t take_fault(mem_client_t *m, int op, long *counter)
{
    lop_rc_t rc = LOP_OK;
    pthread_mutex_lock(&m->mu);
    (*counter)++;
    if ((m->fail_ops & op) && m->fail_count != 0) {
        rc = m->fail_rc;
        if (m->fail_count > 0) m->fail_count--;
    }
    pthread_mutex_unlock(&m->mu);
    return rc;
}

static lop_rc_t injected(lop_err_t *err, lop_rc_t rc, const char *op)
{
    int code = rc == LOP_ECONFLICT ? 409 : rc == LOP_ENOTFOUND ? 404 : rc == LOP_EEXIST ? 409 : 503;
    const char *reason = rc == LOP_ECONFLICT   ? "Conflict"
                         : rc == LOP_ENOTFOUND ? "NotFound"
                         : rc == LOP_EEXIST    ? "AlreadyExists"
                                               : "ServiceUnavailable";
    return lop_err_set(err, rc, code, reason, "injected failure on lease %s", op);
}

static lop_rc_t mem_get(void *ud, lop_lease_record_t *out, char *rv, lop_err_t *err)
{
    mem_client_t *m = ud;
    lop_rc_t rc = take_fault(m, LOP_LEASE_OP_GET, &m->calls.get);
    if (rc != LOP_OK) return injected(err, rc, "get");
    rc = lop_lease_store_peek(m->store, out, rv);
    if (rc == LOP_ENOTFOUND) return lop_err_set(err, rc, 404, "NotFound", "leases.coordination.k8s.io not found");
    return rc;
}

static lop_rc_t write_locked(lop_lease_store_t *s, const lop_lease_record_t *rec, char *rv_out,
                             lop_lease_record_t *copy)
{
    lop_lease_record_copy(&s->rec, rec);
    s->exists = true;
    s->revision++;
    s->writes++;
    snprintf(rv_out, LOP_LEASE_RV_MAX, "%ld", s->revision);
    lop_lease_record_copy(copy, rec);
    return LOP_OK;
}

static lop_rc_t mem_create(void *ud, const lop_lease_record_t *rec, char *rv_out, lop_err_t *err)
{
    mem_client_t *m = ud;
    lop_rc_t rc = take_fault(m, LOP_LEASE_OP_CREATE, &m->calls.create);
    if (rc != LOP_OK) return injected(err, rc, "create");
    lop_lease_store_t *s = m->store;
    lop_lease_record_t copy = LOP_LEASE_RECORD_INIT;
    pthread_mutex_lock(&s->mu);
    if (s->exists) {
        pthread_mutex_unlock(&s->mu);
        return lop_err_set(err, LOP_EEXIST, 409, "AlreadyExists", "leases.coordination.k8s.io already exists");
    }
    write_locked(s, rec, rv_out, &copy);
    lop_lease_store_change_fn fn = s->on_change;
    void *fn_ud = s->on_change_ud;
    pthread_mutex_unlock(&s->mu);
    if (fn) fn(fn_ud, &copy, rv_out); /* outside the lock, with a private copy */
    lop_lease_record_cleanup(&copy);
    return LOP_OK;
}

static lop_rc_t mem_update(void *ud, const lop_lease_record_t *rec, const char *rv, char *rv_out, lop_err_t *err)
{
    mem_client_t *m = ud;
    lop_rc_t rc = take_fault(m, LOP_LEASE_OP_UPDATE, &m->calls.update);
    if (rc != LOP_OK) return injected(err, rc, "update");
    lop_lease_store_t *s = m->store;
    if (!rv || !*rv)
        return lop_err_set(err, LOP_EINVAL, 422, "Invalid",
                           "metadata.resourceVersion: must be specified for an update");
    char cur[LOP_LEASE_RV_MAX];
    lop_lease_record_t copy = LOP_LEASE_RECORD_INIT;
    pthread_mutex_lock(&s->mu);
    if (!s->exists) {
        pthread_mutex_unlock(&s->mu);
        return lop_err_set(err, LOP_ENOTFOUND, 404, "NotFound", "leases.coordination.k8s.io not found");
    }
    snprintf(cur, sizeof cur, "%ld", s->revision);
    if (strcmp(cur, rv) != 0) {
        pthread_mutex_unlock(&s->mu);
        return lop_err_set(err, LOP_ECONFLICT, 409, "Conflict",
                           "the object has been modified; please apply your changes to the latest "
                           "version and try again");
    }
    write_locked(s, rec, rv_out, &copy);
    lop_lease_store_change_fn fn = s->on_change;
    void *fn_ud = s->on_change_ud;
    pthread_mutex_unlock(&s->mu);
    if (fn) fn(fn_ud, &copy, rv_out); /* outside the lock, with a private copy */
    lop_lease_record_cleanup(&copy);
    return LOP_OK;
}

static void mem_free(void *ud)
{
    mem_client_t *m = ud;
    pthread_mutex_destroy(&m->mu);
    free(m);
}

static const lop_lease_client_ops_t mem_ops = {mem_get, mem_create, mem_update, mem_free};

lop_lease_client_t *lop_lease_client_memory_new(lop_lease_store_t *s, const char *description)
{
    mem_client_t *m = lop_xcalloc(1, sizeof *m);
    m->store = s;
    pthread_mutex_init(&m->mu, NULL);
    return lop_lease_client_new(&mem_ops, m, description ? description : "leases/memory");
}

void lop_lease_client_memory_fail(lop_lease_client_t *c, int ops, lop_rc_t rc, int count)
{
    if (!c || c->ops != &mem_ops) return;
    mem_client_t *m = c->ud;
    pthread_mutex_lock(&m->mu);
    m->fail_ops = ops;
    m->fail_rc = rc;
    m->fail_count = count;
    pthread_mutex_unlock(&m->mu);
}

lop_lease_call_counts_t lop_lease_client_memory_calls(lop_lease_client_t *c)
{
    lop_lease_call_counts_t n = {0, 0, 0};
    if (!c || c->ops != &mem_ops) return n;
    mem_client_t *m = c->ud;
    pthread_mutex_lock(&m->mu);
    n = m->calls;
    pthread_mutex_unlock(&m->mu);
    return n;
}
