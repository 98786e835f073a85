/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the event VMs of host/runtime/scriptrt (one per controller and generation): a
 * controller's VM held by a slow call does not block another controller's; the first one of a
 * generation takes over the install's VM unless a worker took it first (then no VM is held idle);
 * a broken one is rebuilt; a reload's old generation stays
 * usable until released, then is gone. A C fake engine stands in for Lua. */
#include "host/runtime/scriptrt.h"
#include "host/runtime/scripts.h"
#include "host/util/clock.h"
#include "t.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct fake_vm {
    int version; /* the main.lua content of the set it was built from */
} fake_vm_t;

static int vms_built, vms_freed;

static lop_vm_t *fake_vm_new(const lop_script_set_t *set, const lop_engine_opts_t *opts, const lop_host_api_t *host,
                             lop_err_t *err)
{
    (void)opts;
    (void)host;
    const lop_script_file_t *f = lop_scripts_find(set, "main.lua");
    if (!f || strstr(f->data, "fail")) {
        lop_err_set(err, LOP_EINVAL, 0, NULL, "main.lua:1: cannot build");
        return NULL;
    }
    fake_vm_t *vm = calloc(1, sizeof *vm);
    vm->version = atoi(f->data);
    __atomic_add_fetch(&vms_built, 1, __ATOMIC_SEQ_CST);
    return (lop_vm_t *)vm;
}

static void fake_vm_free(lop_vm_t *vm)
{
    __atomic_add_fetch(&vms_freed, 1, __ATOMIC_SEQ_CST);
    free(vm);
}

static const lop_engine_t fake_engine = {.name = "fake", .vm_new = fake_vm_new, .vm_free = fake_vm_free};

static lop_script_set_t *set_with(const char *main)
{
    lop_script_file_t f = {"main.lua", (char *)main, strlen(main)};
    return lop_scripts_from_files(&f, 1, "test");
}

static lop_engine_opts_t opts;
static lop_host_api_t host;

static lop_scriptrt_t *rt_with(const char *main)
{
    lop_scriptrt_t *rt = lop_scriptrt_new(&fake_engine, &opts, &host);
    lop_err_t err;
    T_EQ_INT(lop_scriptrt_install(rt, set_with(main), NULL, NULL, &err), LOP_OK);
    return rt;
}

/* Two controllers get two VMs; the first takes the install's VM (no build), the second builds. */
static void test_one_vm_per_controller(void)
{
    vms_built = vms_freed = 0;
    lop_scriptrt_t *rt = rt_with("1");
    T_EQ_INT(vms_built, 1); /* the install's */
    uint64_t gen = lop_scriptrt_generation(rt);
    lop_err_t err;
    lop_vm_t *a = NULL, *b = NULL, *a2 = NULL;
    lop_event_vm_t *sa = NULL, *sb = NULL;
    T_EQ_INT(lop_scriptrt_event_acquire(rt, gen, "a", &a, &sa, &err), LOP_OK);
    T_EQ_INT(vms_built, 1);
    /* a is still held: b is not blocked by it and gets its own VM */
    T_EQ_INT(lop_scriptrt_event_acquire(rt, gen, "b", &b, &sb, &err), LOP_OK);
    T_CHECK(a && b && a != b);
    T_EQ_INT(vms_built, 2);
    T_EQ_INT(((fake_vm_t *)b)->version, 1);
    lop_scriptrt_event_release(rt, sa, false);
    lop_scriptrt_event_release(rt, sb, false);
    T_EQ_INT(lop_scriptrt_event_acquire(rt, gen, "a", &a2, &sa, &err), LOP_OK);
    T_CHECK(a2 == a); /* kept between events */
    lop_scriptrt_event_release(rt, sa, false);
    lop_scriptrt_free(rt);
    T_EQ_INT(vms_freed, vms_built);
}

typedef struct waiter {
    lop_scriptrt_t *rt;
    uint64_t gen;
    const char *controller;
    int done;
} waiter_t;

static void *acquire_thread(void *arg)
{
    waiter_t *w = arg;
    lop_err_t err;
    lop_vm_t *vm = NULL;
    lop_event_vm_t *slot = NULL;
    if (lop_scriptrt_event_acquire(w->rt, w->gen, w->controller, &vm, &slot, &err) == LOP_OK) {
        lop_scriptrt_event_release(w->rt, slot, false);
        __atomic_store_n(&w->done, 1, __ATOMIC_SEQ_CST);
    }
    return NULL;
}

/* While controller a's VM is held (a predicate still running), another thread acquires b's and
 * finishes; a second user of a's waits until a's is released. */
static void test_a_held_vm_blocks_only_its_controller(void)
{
    lop_scriptrt_t *rt = rt_with("1");
    uint64_t gen = lop_scriptrt_generation(rt);
    lop_err_t err;
    lop_vm_t *a = NULL;
    lop_event_vm_t *sa = NULL;
    T_EQ_INT(lop_scriptrt_event_acquire(rt, gen, "a", &a, &sa, &err), LOP_OK);
    waiter_t wb = {rt, gen, "b", 0}, wa = {rt, gen, "a", 0};
    pthread_t tb, ta;
    pthread_create(&tb, NULL, acquire_thread, &wb);
    pthread_join(tb, NULL); /* returns although a's VM is held */
    T_EQ_INT(wb.done, 1);
    pthread_create(&ta, NULL, acquire_thread, &wa);
    T_EQ_INT(__atomic_load_n(&wa.done, __ATOMIC_SEQ_CST), 0); /* cannot finish: a's lock is ours */
    lop_scriptrt_event_release(rt, sa, false);
    pthread_join(ta, NULL);
    T_EQ_INT(wa.done, 1);
    lop_scriptrt_free(rt);
}

/* A VM released as broken is freed; the next acquire builds a fresh one from the same version. */
static void test_broken_vm_is_rebuilt(void)
{
    vms_built = vms_freed = 0;
    lop_scriptrt_t *rt = rt_with("7");
    uint64_t gen = lop_scriptrt_generation(rt);
    lop_err_t err;
    lop_vm_t *vm = NULL;
    lop_event_vm_t *s = NULL;
    T_EQ_INT(lop_scriptrt_event_acquire(rt, gen, "a", &vm, &s, &err), LOP_OK);
    lop_scriptrt_event_release(rt, s, true);
    T_EQ_INT(vms_freed, 1);
    T_EQ_INT(lop_scriptrt_event_acquire(rt, gen, "a", &vm, &s, &err), LOP_OK);
    T_EQ_INT(vms_built, 2);
    T_EQ_INT(((fake_vm_t *)vm)->version, 7);
    lop_scriptrt_event_release(rt, s, false);
    lop_scriptrt_free(rt);
    T_EQ_INT(vms_freed, vms_built);
}

/* After a reload the old generation's VMs are still built from the old set until released; then
 * that generation is gone (LOP_EGONE, nothing to release). Unknown generations are gone too. */
static void test_generations(void)
{
    vms_built = vms_freed = 0;
    lop_scriptrt_t *rt = rt_with("1");
    uint64_t g1 = lop_scriptrt_generation(rt);
    lop_err_t err;
    T_EQ_INT(lop_scriptrt_install(rt, set_with("2"), NULL, NULL, &err), LOP_OK);
    uint64_t g2 = lop_scriptrt_generation(rt);
    lop_vm_t *v1 = NULL, *v2 = NULL, *none = (lop_vm_t *)&err;
    lop_event_vm_t *s1 = NULL, *s2 = NULL, *sn = (lop_event_vm_t *)&err;
    T_EQ_INT(lop_scriptrt_event_acquire(rt, g1, "a", &v1, &s1, &err), LOP_OK);
    T_EQ_INT(((fake_vm_t *)v1)->version, 1);
    lop_scriptrt_event_release(rt, s1, false);
    T_EQ_INT(lop_scriptrt_event_acquire(rt, g2, "a", &v2, &s2, &err), LOP_OK);
    T_EQ_INT(((fake_vm_t *)v2)->version, 2);
    lop_scriptrt_event_release(rt, s2, false);
    lop_scriptrt_event_release_prev(rt);
    T_EQ_INT(lop_scriptrt_event_acquire(rt, g1, "a", &none, &sn, &err), LOP_EGONE);
    T_CHECK(none == NULL && sn == NULL);
    T_EQ_INT(lop_scriptrt_event_acquire(rt, g2 + 5, "a", &none, &sn, &err), LOP_EGONE);
    lop_scriptrt_free(rt);
    T_EQ_INT(vms_freed, vms_built);
}

/* A call that holds an event VM past the limit is reported, naming the controller; released,
 * it is not (the fake clock stands in for a predicate stuck in a JIT-compiled loop). */
static void test_stuck_event_vm_is_reported(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    lop_engine_opts_t o = {.clock = &fc.base};
    lop_scriptrt_t *rt = lop_scriptrt_new(&fake_engine, &o, &host);
    lop_err_t err;
    T_EQ_INT(lop_scriptrt_install(rt, set_with("1"), NULL, NULL, &err), LOP_OK);
    uint64_t gen = lop_scriptrt_generation(rt);
    lop_vm_t *vm = NULL;
    lop_event_vm_t *slot = NULL;
    char reason[256] = "";
    T_CHECK(lop_scriptrt_event_check_stuck(rt, LOP_NS_PER_S, reason, sizeof reason)); /* idle */
    T_EQ_INT(lop_scriptrt_event_acquire(rt, gen, "spinner", &vm, &slot, &err), LOP_OK);
    lop_fake_clock_step(&fc, LOP_NS_PER_S / 2);
    T_CHECK(lop_scriptrt_event_check_stuck(rt, LOP_NS_PER_S, reason, sizeof reason)); /* within the limit */
    lop_fake_clock_step(&fc, LOP_NS_PER_S);
    T_CHECK(!lop_scriptrt_event_check_stuck(rt, LOP_NS_PER_S, reason, sizeof reason));
    T_CHECK(strstr(reason, "controller spinner: a Lua predicate or map function has run 1.5s (limit 1.0s)") != NULL);
    lop_scriptrt_event_release(rt, slot, false);
    T_CHECK(lop_scriptrt_event_check_stuck(rt, LOP_NS_PER_S, reason, sizeof reason));
    lop_scriptrt_free(rt);
}

/* Controllers without Lua predicates or map functions never acquire an event VM: the install's
 * VM then serves the first worker, with no second build, instead of being held idle next to it;
 * the next worker builds its own, and an event VM acquired after that builds its own too. After a
 * reload the first worker to move on takes the new install's VM. */
static void test_first_worker_takes_the_install_vm(void)
{
    vms_built = vms_freed = 0;
    lop_scriptrt_t *rt = rt_with("3");
    T_EQ_INT(vms_built, 1); /* the install's */
    lop_err_t err;
    lop_vm_slot_t w1 = {NULL, 0}, w2 = {NULL, 0};
    lop_vm_t *a = lop_scriptrt_vm(rt, &w1, &err);
    T_CHECK(a != NULL);
    T_EQ_INT(((fake_vm_t *)a)->version, 3);
    T_EQ_INT(vms_built, 1);                       /* taken over, not built */
    T_CHECK(lop_scriptrt_vm(rt, &w1, &err) == a); /* kept between reconciles */
    lop_vm_t *b = lop_scriptrt_vm(rt, &w2, &err);
    T_CHECK(b != NULL && b != a);
    T_EQ_INT(vms_built, 2);
    lop_vm_t *e = NULL;
    lop_event_vm_t *se = NULL;
    T_EQ_INT(lop_scriptrt_event_acquire(rt, lop_scriptrt_generation(rt), "a", &e, &se, &err), LOP_OK);
    T_CHECK(e != a && e != b);
    T_EQ_INT(vms_built, 3);
    lop_scriptrt_event_release(rt, se, false);
    T_EQ_INT(lop_scriptrt_install(rt, set_with("4"), NULL, NULL, &err), LOP_OK);
    T_EQ_INT(vms_built, 4);
    lop_vm_t *a2 = lop_scriptrt_vm(rt, &w1, &err);
    T_EQ_INT(((fake_vm_t *)a2)->version, 4);
    T_EQ_INT(vms_built, 4); /* the new install's VM */
    lop_vm_slot_release(rt, &w1);
    lop_vm_slot_release(rt, &w2);
    lop_scriptrt_free(rt);
    T_EQ_INT(vms_freed, vms_built);
}

/* A VM given back (lop_vm_slot_return: nothing was called in it) serves the next user of its
 * generation without a build; one of a generation that is no longer current is freed. */
static void test_returned_vm_serves_the_next_user(void)
{
    vms_built = vms_freed = 0;
    lop_scriptrt_t *rt = rt_with("5");
    lop_err_t err;
    lop_vm_slot_t reader = {NULL, 0}, worker = {NULL, 0};
    lop_vm_t *a = lop_scriptrt_vm(rt, &reader, &err);
    lop_vm_slot_return(rt, &reader);
    T_CHECK(reader.vm == NULL);
    T_CHECK(lop_scriptrt_vm(rt, &worker, &err) == a);
    T_EQ_INT(vms_built, 1);
    T_CHECK(lop_scriptrt_vm(rt, &reader, &err) != a); /* the worker holds it: this one builds */
    T_EQ_INT(vms_built, 2);
    T_EQ_INT(lop_scriptrt_install(rt, set_with("6"), NULL, NULL, &err), LOP_OK);
    int freed = vms_freed;
    lop_vm_slot_return(rt, &reader); /* generation 1: freed */
    T_EQ_INT(vms_freed, freed + 1);
    lop_vm_slot_release(rt, &worker);
    lop_scriptrt_free(rt);
    T_EQ_INT(vms_freed, vms_built);
}

int main(void)
{
    T_RUN(test_one_vm_per_controller);
    T_RUN(test_a_held_vm_blocks_only_its_controller);
    T_RUN(test_broken_vm_is_rebuilt);
    T_RUN(test_generations);
    T_RUN(test_stuck_event_vm_is_reported);
    T_RUN(test_first_worker_takes_the_install_vm);
    T_RUN(test_returned_vm_serves_the_next_user);
    return T_DONE();
}
