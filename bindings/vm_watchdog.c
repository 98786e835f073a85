/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vm_watchdog.c — the deadline watchdog thread (see vm_watchdog.h). Armed VMs form a linked
 * list through lop_lua_vm_t.wd_next, protected by wd_mu.
 */
#include "bindings/vm_watchdog.h"

#include "host/util/log.h"

#include <pthread.h>
#include <stdbool.h>
#include <time.h>

static pthread_mutex_t wd_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wd_cond;
static pthread_once_t wd_once = PTHREAD_ONCE_INIT;
static lop_lua_vm_t *wd_head;
static int64_t wd_sleep_until = INT64_MIN; /* system-clock deadline the thread sleeps until */

#define REFIRE_NS (5 * LOP_NS_PER_MS) /* re-install the hook this often until disarmed */

static void wait_real(int64_t ns)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t t = (int64_t)ts.tv_sec * LOP_NS_PER_S + ts.tv_nsec + ns;
    ts.tv_sec = (time_t)(t / LOP_NS_PER_S);
    ts.tv_nsec = (long)(t % LOP_NS_PER_S);
    pthread_cond_timedwait(&wd_cond, &wd_mu, &ts);
}

static void *wd_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&wd_mu);
    for (;;) {
        if (!wd_head) {
            wd_sleep_until = INT64_MAX;
            pthread_cond_wait(&wd_cond, &wd_mu);
            continue;
        }
        bool any_fake = false, any_expired = false;
        int64_t earliest = INT64_MAX; /* on the system clock, for non-fake clocks */
        for (lop_lua_vm_t *vm = wd_head; vm; vm = vm->wd_next) {
            if (lop_clock_mono(vm->clock) >= vm->deadline_ns) {
                /* Installed again on every pass until the VM's call returns and disarms: the VM
                 * thread updates the same hook mask word (around finalizers and hooks) without
                 * our lock, so a single install could in principle be lost. */
                lua_sethook(vm->L, lop_lua_vm_deadline_hook, LUA_MASKCOUNT, 1);
                any_expired = true;
                continue;
            }
            if (vm->clock->fake)
                any_fake = true;
            else if (vm->deadline_ns < earliest)
                earliest = vm->deadline_ns;
        }
        if (any_fake || any_expired) {
            /* A fake clock moves by hand: look again within a millisecond of real time. */
            wd_sleep_until = INT64_MIN;
            wait_real(any_fake ? LOP_NS_PER_MS : REFIRE_NS);
        } else {
            wd_sleep_until = earliest;
            lop_clock_wait_until(&lop_clock_system, &wd_cond, &wd_mu, earliest);
        }
    }
    return NULL;
}

static void wd_start(void)
{
    lop_cond_init(&wd_cond);
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, wd_main, NULL) != 0)
        lop_log(LOP_LOG_ERROR, "cannot start the Lua deadline watchdog thread", NULL);
    pthread_attr_destroy(&attr);
}

void lop_lua_watchdog_arm(lop_lua_vm_t *vm)
{
    pthread_once(&wd_once, wd_start);
    pthread_mutex_lock(&wd_mu);
    if (!vm->wd_armed) {
        vm->wd_next = wd_head;
        wd_head = vm;
        vm->wd_armed = true;
    }
    /* Wake the thread only when it would otherwise sleep past this deadline. Disarming never
     * wakes it: it finds nothing expired at its next wake-up and sleeps again. */
    if (vm->clock->fake || vm->deadline_ns < wd_sleep_until) {
        wd_sleep_until = INT64_MIN;
        pthread_cond_signal(&wd_cond);
    }
    pthread_mutex_unlock(&wd_mu);
}

void lop_lua_watchdog_disarm(lop_lua_vm_t *vm)
{
    pthread_mutex_lock(&wd_mu);
    if (vm->wd_armed) {
        for (lop_lua_vm_t **pp = &wd_head; *pp; pp = &(*pp)->wd_next) {
            if (*pp == vm) {
                *pp = vm->wd_next;
                break;
            }
        }
        vm->wd_next = NULL;
        vm->wd_armed = false;
    }
    lua_sethook(vm->L, NULL, 0, 0);
    pthread_mutex_unlock(&wd_mu);
}

void lop_lua_watchdog_sethook(lop_lua_vm_t *vm, lua_Hook f, int mask, int count)
{
    pthread_mutex_lock(&wd_mu);
    lua_sethook(vm->L, f, mask, count);
    pthread_mutex_unlock(&wd_mu);
}
