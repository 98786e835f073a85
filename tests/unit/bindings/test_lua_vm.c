/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the LuaJIT VM behind the engine: deadlines (JIT off: hook, even through pcall;
 * JIT on: cooperative), the memory cap, the sandbox, panics never reached, freeing. */
#include "bindings/engine_lua.h"
#include "host/util/clock.h"
#include "t.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/*
 * The tests' clock. It moves only by what the test thread does, never because another thread
 * looked, so no expectation depends on scheduling. (The deadline watchdog polls a fake clock
 * every 1 ms of real time, as often as a loaded machine lets it; the clock these tests had moved
 * 50 ms on every read, the watchdog's included, so a test's elapsed time grew with its polls.)
 *  - A monotonic read by the test thread, which runs every VM (the call's own deadline
 *    arithmetic, lop_lua_vm_check_deadline in core.* calls, core.sleep's wait), moves it STEP_NS
 *    forward: cooperative deadlines (JIT on) see time pass in as many reads as the script makes.
 *  - A wall read by the test thread (os.time() in a script) first makes the jump the test asked
 *    for, once (jump_at_os_time). A script meant to run into its deadline through the watchdog's
 *    hook (a loop that reads no clock) calls os.time() just before its loop and is given its own
 *    timeout as the jump: the deadline has passed when the loop begins, wherever the watchdog is,
 *    and the hook fires inside the loop, on the same line in every run.
 *  - A read by any other thread (the watchdog) never moves it.
 */
#define STEP_NS (50 * LOP_NS_PER_MS)

typedef struct test_clock {
    lop_clock_t base;
    int64_t now;     /* atomically */
    int64_t jump;    /* atomically: what the test thread's next wall read adds first, once */
    long watched;    /* atomically: reads by other threads (the watchdog's polls) */
    pthread_t owner; /* the test thread */
} test_clock_t;

static int64_t test_mono(const lop_clock_t *c)
{
    test_clock_t *t = (test_clock_t *)c;
    if (!pthread_equal(pthread_self(), t->owner)) {
        __atomic_add_fetch(&t->watched, 1, __ATOMIC_SEQ_CST);
        return __atomic_load_n(&t->now, __ATOMIC_SEQ_CST);
    }
    return __atomic_add_fetch(&t->now, STEP_NS, __ATOMIC_SEQ_CST);
}

static int64_t test_wall(const lop_clock_t *c)
{
    test_clock_t *t = (test_clock_t *)c;
    if (pthread_equal(pthread_self(), t->owner))
        __atomic_add_fetch(&t->now, __atomic_exchange_n(&t->jump, 0, __ATOMIC_SEQ_CST), __ATOMIC_SEQ_CST);
    return test_mono(c) + INT64_C(1740823200) * LOP_NS_PER_S;
}

static test_clock_t tclock = {{test_mono, test_wall, true}, LOP_NS_PER_S, 0, 0, 0};

/* The next os.time() of a script moves the clock by ns first (its call's timeout, to end it at
 * its deadline). Ask just before the call, and call jump_done after it. */
static void jump_at_os_time(int64_t ns) { __atomic_store_n(&tclock.jump, ns, __ATOMIC_SEQ_CST); }

/* After the call: a jump not made (the script never called os.time) must not reach a later call. */
static void jump_done(void) { __atomic_store_n(&tclock.jump, 0, __ATOMIC_SEQ_CST); }

static lop_script_set_t one_file(const char *main_src)
{
    static lop_script_file_t f;
    f.name = "main.lua";
    f.data = (char *)main_src;
    f.len = strlen(main_src);
    lop_script_set_t s = {.files = &f, .nfiles = 1};
    strcpy(s.origin, "test");
    return s;
}

/* Deadlines far away (an hour on the test clock, 72,000 reads of the test thread): a test that is
 * not about deadlines never reaches them. */
static lop_engine_opts_t opts_default(void)
{
    lop_engine_opts_t o = {0};
    o.reconcile_timeout_ns = 3600 * LOP_NS_PER_S;
    o.load_timeout_ns = 3600 * LOP_NS_PER_S;
    o.clock = &tclock.base;
    return o;
}

/* For the deadline tests: a reconcile deadline of 1 s on the test clock. */
static lop_engine_opts_t opts_deadline(void)
{
    lop_engine_opts_t o = opts_default();
    o.reconcile_timeout_ns = LOP_NS_PER_S;
    return o;
}

static const lop_reconcile_req_t req = {"default", "x", "r-1"};

#define CTRL_HEAD                                                                                \
    "local core = require('luaop.core')\n"                                                       \
    "core.register_controller{ name = 'c', for_ = { api_version = 'v1', kind = 'ConfigMap' },\n" \
    "  reconcile = function(req)\n"

/* Build a VM from s with o, run the controller "c" once for req into *res, free the VM. False
 * (with a failed check) when the VM could not be built. With to_deadline the reconcile is meant
 * to run into its deadline: the script's os.time() moves the clock by its timeout. */
static bool reconcile_run(const lop_script_set_t *s, const lop_engine_opts_t *o, bool to_deadline,
                          lop_reconcile_result_t *res)
{
    const lop_engine_t *e = lop_lua_engine();
    lop_err_t err;
    lop_vm_t *vm = e->vm_new(s, o, NULL, &err);
    T_CHECK(vm != NULL);
    if (!vm) return false;
    if (to_deadline) jump_at_os_time(o->reconcile_timeout_ns);
    e->reconcile(vm, "c", &req, res);
    jump_done();
    e->vm_free(vm);
    return true;
}

static bool reconcile_once(const lop_script_set_t *s, const lop_engine_opts_t *o, lop_reconcile_result_t *res)
{
    return reconcile_run(s, o, false, res);
}

/* A reconcile that must end at its deadline (a loop, possibly reading no clock). */
static bool reconcile_to_deadline(const lop_script_set_t *s, const lop_engine_opts_t *o, lop_reconcile_result_t *res)
{
    return reconcile_run(s, o, true, res);
}

static void test_infinite_loop_is_interrupted(void)
{
    lop_script_set_t s = one_file(CTRL_HEAD "    os.time() while true do end\n  end }\n");
    lop_engine_opts_t o = opts_deadline();
    lop_reconcile_result_t res;
    if (!reconcile_to_deadline(&s, &o, &res)) return;
    T_EQ_INT(res.kind, LOP_RESULT_ERROR);
    T_CHECK(res.timed_out);
    T_CHECK(!res.vm_broken);
    T_CHECK(strstr(res.message, "main.lua:4: reconcile deadline exceeded") != NULL);
    T_CHECK(strstr(res.message, "stack traceback") != NULL);
}

/* The watchdog's polls do not move the tests' clock: a reconcile that spins for a while (real time,
 * reading no clock, its deadline an hour away, so the watchdog is polling it every millisecond)
 * takes exactly as long on the test clock as one that returns at once. What a test measures
 * depends on what its script does, not on how often the watchdog thread got to look (with a clock
 * that moved on every read it did, which made unit.lua_vm flaky on a loaded machine). */
static void test_watchdog_polls_do_not_move_the_test_clock(void)
{
    const lop_engine_t *e = lop_lua_engine();
    static const char *const bodies[] = {
        "    return { requeue_after = 1 }",
        "    local n = 0 for i = 1, 2e7 do n = n + i end\n    return { requeue_after = 1 }",
    };
    int64_t took[2];
    long looked[2];
    for (int i = 0; i < 2; i++) {
        char src[512];
        snprintf(src, sizeof src, CTRL_HEAD "%s\n  end }\n", bodies[i]);
        lop_script_set_t s = one_file(src);
        lop_engine_opts_t o = opts_default();
        lop_err_t err;
        lop_vm_t *vm = e->vm_new(&s, &o, NULL, &err);
        T_CHECK(vm != NULL);
        if (!vm) return;
        lop_reconcile_result_t res;
        long l0 = __atomic_load_n(&tclock.watched, __ATOMIC_SEQ_CST);
        int64_t t0 = lop_clock_mono(&tclock.base);
        e->reconcile(vm, "c", &req, &res);
        took[i] = lop_clock_mono(&tclock.base) - t0;
        looked[i] = __atomic_load_n(&tclock.watched, __ATOMIC_SEQ_CST) - l0;
        T_EQ_INT(res.kind, LOP_RESULT_REQUEUE_AFTER);
        e->vm_free(vm);
    }
    T_EQ_INT(took[1], took[0]);
    printf("# the spinning reconcile: %ld watchdog reads, %lld ms on the test clock (the quick one: %ld, %lld ms)\n",
           looked[1], (long long)(took[1] / LOP_NS_PER_MS), looked[0], (long long)(took[0] / LOP_NS_PER_MS));
}

/* Lua predicates and map functions run under the predicate deadline (opts.predicate_timeout_ns,
 * default LOP_PREDICATE_TIMEOUT_DEFAULT_NS), not the reconcile's: with a 1 h reconcile deadline a
 * spinning predicate and map function are still stopped within their own (on the test clock),
 * naming the deadline and main.lua:line; the VM stays usable. */
static void test_predicate_and_map_deadline(void)
{
    const lop_engine_t *e = lop_lua_engine();
    lop_script_set_t s =
        one_file("local core = require('luaop.core')\n"
                 "local function spin() os.time() while true do end end\n"
                 "core.register_controller{ name = 'c', for_ = { api_version = 'v1', kind = 'ConfigMap',\n"
                 "  predicates = { function(ev) spin() end, function(ev) return false end } },\n"
                 "  watches = { { api_version = 'v1', kind = 'Secret', map = function(o) spin() end } },\n"
                 "  reconcile = function(req) end }\n");
    const int64_t timeouts[] = {200 * LOP_NS_PER_MS, 0 /* the default, 250 ms */};
    for (size_t i = 0; i < 2; i++) {
        lop_engine_opts_t o = opts_default();
        o.reconcile_timeout_ns = 3600 * LOP_NS_PER_S;
        o.predicate_timeout_ns = timeouts[i];
        lop_err_t err;
        lop_vm_t *vm = e->vm_new(&s, &o, NULL, &err);
        T_CHECK(vm != NULL);
        if (!vm) return;
        const char *obj = "{\"metadata\":{\"name\":\"x\"}}";
        lop_event_view_t ev = {LOP_EV_ADD, NULL, 0, obj, strlen(obj)};
        bool pass = false;
        int64_t t0 = lop_clock_mono(&tclock.base);
        jump_at_os_time(timeouts[i] ? timeouts[i] : LOP_PREDICATE_TIMEOUT_DEFAULT_NS);
        T_EQ_INT(e->predicate(vm, 1, &ev, &pass, &err), LOP_ETIMEDOUT);
        jump_done();
        int64_t took = lop_clock_mono(&tclock.base) - t0;
        T_CHECK(took >= (timeouts[i] ? timeouts[i] : LOP_PREDICATE_TIMEOUT_DEFAULT_NS));
        T_CHECK(took < 10 * LOP_NS_PER_S); /* its own deadline, far below the reconcile's hour */
        T_CHECK(strstr(err.message, "main.lua:2: predicate deadline exceeded") != NULL);
        T_CHECK(pass);                                           /* the caller lets the event through */
        T_EQ_INT(e->predicate(vm, 2, &ev, &pass, &err), LOP_OK); /* the VM still works */
        T_CHECK(!pass);
        lop_request_list_t out;
        t0 = lop_clock_mono(&tclock.base);
        jump_at_os_time(timeouts[i] ? timeouts[i] : LOP_PREDICATE_TIMEOUT_DEFAULT_NS);
        T_EQ_INT(e->map(vm, 3, &ev, &out, &err), LOP_ETIMEDOUT);
        jump_done();
        T_CHECK(lop_clock_mono(&tclock.base) - t0 < 10 * LOP_NS_PER_S);
        T_CHECK(strstr(err.message, "main.lua:2: map function deadline exceeded") != NULL);
        T_EQ_INT(out.n, 0);
        e->vm_free(vm);
    }
}

static void test_pcall_cannot_swallow_the_deadline(void)
{
    const lop_engine_t *e = lop_lua_engine();
    lop_script_set_t s = one_file(CTRL_HEAD "    local n = 0\n"
                                            "    while true do\n"
                                            "      local ok, err = pcall(function() os.time() while true do end end)\n"
                                            "      n = n + 1\n"
                                            "      if n > 3 then return { requeue = true } end\n"
                                            "    end\n"
                                            "  end }\n");
    lop_engine_opts_t o = opts_deadline();
    lop_err_t err;
    lop_vm_t *vm = e->vm_new(&s, &o, NULL, &err);
    T_CHECK(vm != NULL);
    if (!vm) return;
    lop_reconcile_result_t res;
    jump_at_os_time(o.reconcile_timeout_ns);
    e->reconcile(vm, "c", &req, &res);
    jump_done();
    T_EQ_INT(res.kind, LOP_RESULT_ERROR);
    T_CHECK(res.timed_out);
    /* The VM stays usable: the next call gets a fresh deadline (and times out again). */
    jump_at_os_time(o.reconcile_timeout_ns);
    e->reconcile(vm, "c", &req, &res);
    jump_done();
    T_CHECK(res.timed_out);
    e->vm_free(vm);
}

static void run_expect_timeout(const char *body, bool jit)
{
    char src[1024];
    snprintf(src, sizeof src, CTRL_HEAD "%s\n  end }\n", body);
    lop_script_set_t s = one_file(src);
    lop_engine_opts_t o = opts_deadline();
    o.jit = jit;
    lop_reconcile_result_t res;
    if (!reconcile_to_deadline(&s, &o, &res)) return;
    T_EQ_INT(res.kind, LOP_RESULT_ERROR);
    T_CHECK(res.timed_out);
    if (!res.timed_out) fprintf(stderr, "%s: %s\n", body, res.message);
    T_CHECK(strstr(res.message, "reconcile deadline exceeded") != NULL);
}

static void test_deadline_in_coroutines_and_sleep(void)
{
    run_expect_timeout("    coroutine.wrap(function() os.time() while true do end end)()", false);
    run_expect_timeout("    local co = coroutine.create(function() os.time() while true do coroutine.yield() end end)\n"
                       "    while true do coroutine.resume(co) end",
                       false);
    run_expect_timeout("    core.sleep(30)", false);
    run_expect_timeout("    core.sleep(30)", true);
    run_expect_timeout("    os.time() while true do pcall(string.rep, 'x', 10) end", false);
    run_expect_timeout("    local t = {} os.time() while true do t[#t % 100 + 1] = {} end", false);
}

static void test_system_clock_deadline(void)
{
    /* The production path: the watchdog sleeps on the system clock until the deadline. */
    const lop_engine_t *e = lop_lua_engine();
    lop_script_set_t s = one_file(CTRL_HEAD "    local n = 0 while true do n = n + 1 end\n  end }\n");
    lop_engine_opts_t o = opts_default();
    o.clock = &lop_clock_system;
    o.reconcile_timeout_ns = 20 * LOP_NS_PER_MS;
    lop_err_t err;
    lop_vm_t *vm = e->vm_new(&s, &o, NULL, &err);
    T_CHECK(vm != NULL);
    if (!vm) return;
    for (int i = 0; i < 3; i++) {
        lop_reconcile_result_t res;
        e->reconcile(vm, "c", &req, &res);
        T_CHECK(res.timed_out);
    }
    e->vm_free(vm);
}

static void test_load_deadline(void)
{
    const lop_engine_t *e = lop_lua_engine();
    lop_script_set_t s = one_file("local x = 0\nos.time() while true do x = x + 1 end\n");
    lop_engine_opts_t o = opts_default();
    o.load_timeout_ns = LOP_NS_PER_S;
    lop_err_t err;
    jump_at_os_time(o.load_timeout_ns); /* the load is the call that runs into its deadline */
    lop_vm_t *vm = e->vm_new(&s, &o, NULL, &err);
    jump_done();
    T_CHECK(vm == NULL);
    /* the deadline passes at os.time(), just before the loop: the hook fires inside it */
    T_CHECK(strstr(err.message, "script load deadline exceeded") != NULL);
    T_CHECK(strncmp(err.message, "main.lua:2: script load deadline exceeded", 41) == 0);
}

static void test_jit_deadline_is_cooperative(void)
{
    /* With the JIT on there is no hook: the deadline is noticed by core.* calls. */
    lop_script_set_t s = one_file(CTRL_HEAD "    while true do\n"
                                            "      pcall(core.get, 'v1', 'ConfigMap', 'default', 'x')\n"
                                            "    end\n"
                                            "  end }\n");
    lop_engine_opts_t o = opts_deadline();
    o.jit = true;
    lop_reconcile_result_t res;
    if (!reconcile_once(&s, &o, &res)) return;
    T_EQ_INT(res.kind, LOP_RESULT_ERROR);
    T_CHECK(res.timed_out);
    T_CHECK(strstr(res.message, "reconcile deadline exceeded") != NULL);
}

static void test_memory_cap_breaks_the_vm(void)
{
    const lop_engine_t *e = lop_lua_engine();
    lop_script_set_t s = one_file(CTRL_HEAD "    local t = {}\n"
                                            "    for i = 1, 1e8 do t[i] = { i } end\n"
                                            "  end }\n");
    lop_engine_opts_t o = opts_default();
    o.memory_limit_bytes = 4u << 20;
    o.reconcile_timeout_ns = 0;
    lop_err_t err;
    lop_vm_t *vm = e->vm_new(&s, &o, NULL, &err);
    T_CHECK(vm != NULL);
    if (!vm) return;
    T_CHECK(e->memory(vm) > 0 && e->memory(vm) < o.memory_limit_bytes);
    lop_reconcile_result_t res;
    e->reconcile(vm, "c", &req, &res);
    T_EQ_INT(res.kind, LOP_RESULT_ERROR);
    T_CHECK(res.vm_broken);
    T_CHECK(strstr(res.message, "memory limit exceeded") != NULL);
    T_CHECK(e->memory(vm) <= o.memory_limit_bytes);
    /* A broken VM refuses further work until the host rebuilds it. */
    e->reconcile(vm, "c", &req, &res);
    T_CHECK(res.vm_broken);
    e->vm_free(vm);
}

static void test_memory_cap_even_when_caught(void)
{
    lop_script_set_t s =
        one_file(CTRL_HEAD "    local ok = pcall(function() local t = {} for i = 1, 1e8 do t[i] = {} end end)\n"
                           "    return nil\n"
                           "  end }\n");
    lop_engine_opts_t o = opts_default();
    o.memory_limit_bytes = 4u << 20;
    o.reconcile_timeout_ns = 0;
    lop_reconcile_result_t res;
    if (!reconcile_once(&s, &o, &res)) return;
    T_EQ_INT(res.kind, LOP_RESULT_ERROR);
    T_CHECK(res.vm_broken);
    T_CHECK(strstr(res.message, "memory limit exceeded") != NULL);
}

static void test_memory_cap_at_load(void)
{
    const lop_engine_t *e = lop_lua_engine();
    lop_script_set_t s = one_file("local t = {} for i = 1, 1e8 do t[i] = {} end\n");
    lop_engine_opts_t o = opts_default();
    o.memory_limit_bytes = 2u << 20;
    o.load_timeout_ns = 0;
    lop_err_t err;
    lop_vm_t *vm = e->vm_new(&s, &o, NULL, &err);
    T_CHECK(vm == NULL);
    T_CHECK(strstr(err.message, "memory limit exceeded") != NULL);
}

static void test_sandbox_has_no_io_os(void)
{
    /* os is the safe one (time, date, clock only): test_lua_sandbox_libs.c checks it. */
    lop_script_set_t s = one_file(
        CTRL_HEAD "    local bad = {}\n"
                  "    for _, g in ipairs{'io','debug','jit','ffi','dofile','loadfile','module','newproxy'} do\n"
                  "      if _G[g] ~= nil then bad[#bad+1] = g end\n"
                  "    end\n"
                  "    if os.execute ~= nil or os.getenv ~= nil or os.exit ~= nil then bad[#bad+1] = 'os' end\n"
                  "    if string.dump ~= nil then bad[#bad+1] = 'string.dump' end\n"
                  "    if pcall(require, 'ffi') then bad[#bad+1] = 'require ffi' end\n"
                  "    if pcall(require, 'io') then bad[#bad+1] = 'require io' end\n"
                  "    local f, e = loadstring('\\27LJ\\2 bytecode')\n"
                  "    if f then bad[#bad+1] = 'bytecode' end\n"
                  "    if not loadstring('return 1') then bad[#bad+1] = 'no loadstring' end\n"
                  "    if not (string and table and math and coroutine and bit) then bad[#bad+1] = 'libs' end\n"
                  "    if pcall(collectgarbage, 'stop') then bad[#bad+1] = 'gc stop' end\n"
                  "    if type(collectgarbage('count')) ~= 'number' then bad[#bad+1] = 'gc count' end\n"
                  "    local sel = require('luaop.core').selector.parse_labels('a=b')\n"
                  "    if type(getmetatable(sel)) == 'table' then bad[#bad+1] = 'selector metatable' end\n"
                  "    print('sandbox check', #bad)\n"
                  "    if #bad > 0 then return nil, table.concat(bad, ',') end\n"
                  "  end }\n");
    lop_engine_opts_t o = opts_default();
    lop_reconcile_result_t res;
    if (!reconcile_once(&s, &o, &res)) return;
    T_EQ_INT(res.kind, LOP_RESULT_DONE);
    if (res.kind != LOP_RESULT_DONE) fprintf(stderr, "sandbox: %s\n", res.message);
}

static void test_unsafe_libs_opens_io_os(void)
{
    lop_script_set_t s =
        one_file(CTRL_HEAD "    if io and os and debug and jit and require('ffi') then return nil end\n"
                           "    return nil, 'missing'\n"
                           "  end }\n");
    lop_engine_opts_t o = opts_default();
    o.unsafe_libs = true;
    lop_reconcile_result_t res;
    if (!reconcile_once(&s, &o, &res)) return;
    T_EQ_INT(res.kind, LOP_RESULT_DONE);
}

static void test_cjson_is_available(void)
{
    lop_script_set_t s = one_file(CTRL_HEAD "    local cjson = require('cjson')\n"
                                            "    if cjson.encode({1}) ~= '[1]' then return nil, 'cjson' end\n"
                                            "  end }\n");
    lop_engine_opts_t o = opts_default();
    lop_reconcile_result_t res;
    if (!reconcile_once(&s, &o, &res)) return;
    T_EQ_INT(res.kind, LOP_RESULT_DONE);
    if (res.kind != LOP_RESULT_DONE) fprintf(stderr, "cjson: %s\n", res.message);
}

static void test_many_vms_free_cleanly(void)
{
    /* Under ASan (LUAOP_SANITIZE=address) this also proves vm_free leaks nothing. */
    const lop_engine_t *e = lop_lua_engine();
    lop_script_set_t s = one_file(CTRL_HEAD "    return { requeue_after = 1 }\n  end }\n");
    lop_engine_opts_t o = opts_default();
    for (int i = 0; i < 20; i++) {
        lop_err_t err;
        lop_vm_t *vm = e->vm_new(&s, &o, NULL, &err);
        T_CHECK(vm != NULL);
        if (!vm) return;
        lop_reconcile_result_t res;
        e->reconcile(vm, "c", &req, &res);
        T_EQ_INT(res.kind, LOP_RESULT_REQUEUE_AFTER);
        e->vm_free(vm);
    }
}

/* A message handler cannot hold the deadline off: the handler of the deadline error is not run
 * (it would run with hooks off), and a handler looping on another error is interrupted. */
static void test_xpcall_handler_cannot_defeat_the_deadline(void)
{
    run_expect_timeout("    xpcall(function() os.time() while true do end end, function() while true do end end)",
                       false);
    run_expect_timeout("    xpcall(function() error('x') end, function() os.time() while true do end end)\n"
                       "    while true do end",
                       false);
    /* a handler still runs for ordinary errors and sees them */
    lop_script_set_t s = one_file(CTRL_HEAD "    local ok, e = xpcall(function() error('boom', 0) end,\n"
                                            "      function(m) return 'handled ' .. m end)\n"
                                            "    if ok or e ~= 'handled boom' then error('got ' .. tostring(e)) end\n"
                                            "    return { requeue_after = 7 }\n  end }\n");
    lop_engine_opts_t o = opts_deadline();
    lop_reconcile_result_t res;
    if (!reconcile_once(&s, &o, &res)) return;
    T_EQ_INT(res.kind, LOP_RESULT_REQUEUE_AFTER);
    if (res.kind != LOP_RESULT_REQUEUE_AFTER) fprintf(stderr, "%s\n", res.message);
}

/* A backtracking pattern is stopped by the deadline (the sandbox's matcher checks it as it goes;
 * LuaJIT's ran on inside C), with the JIT off and on; a pattern nested past the matcher's depth
 * bound is an error, not a C stack overflow. */
static void test_patterns_obey_the_deadline(void)
{
    static const char *const bodies[] = {
        "    local s = string.rep('a', 40); s:find(string.rep('a*', 40) .. 'b')",
        "    local s = string.rep('a', 40); s:match(string.rep('a-', 40) .. 'b')",
        "    local s = string.rep('a', 40); s:gsub(string.rep('a?', 30) .. 'b', '')",
        "    for _ in string.rep('a', 40):gmatch(string.rep('a*', 40) .. 'b') do end",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        run_expect_timeout(bodies[i], false);
        run_expect_timeout(bodies[i], true);
    }
    lop_script_set_t s =
        one_file(CTRL_HEAD "    local ok, e = pcall(string.find, ('a'):rep(300), ('a?'):rep(300))\n"
                           "    if ok or not e:find('pattern too complex') then error('got ' .. tostring(e)) end\n"
                           "    return { requeue_after = 1 }\n  end }\n");
    lop_engine_opts_t o = opts_default();
    lop_reconcile_result_t res;
    if (!reconcile_once(&s, &o, &res)) return;
    T_EQ_INT(res.kind, LOP_RESULT_REQUEUE_AFTER);
    if (res.kind != LOP_RESULT_REQUEUE_AFTER) fprintf(stderr, "%s\n", res.message);
}

/* Every way back into Lua from a C library function is counted: a runaway nesting is a Lua
 * error naming the function, never a C stack overflow (SIGSEGV with Debian's LuaJIT). */
static void test_c_reentry_is_bounded(void)
{
    static const char *const attacks[][2] = {
        {"local function g(s) return (s:gsub('.', g)) end; g('ab')", "string.gsub: calls nested more than"},
        {"local t = setmetatable({}, { __index = function(t, k) return ('x'):gsub('x', t) end }); ('x'):gsub('x', t)",
         "string.gsub: calls nested more than"},
        {"local t = {3, 2, 1}; local function c(a, b) table.sort({2, 1}, c) return a < b end; table.sort(t, c)",
         "table.sort: calls nested more than"},
        {"local mt = {}; mt.__tostring = function(v) return tostring(setmetatable({}, mt)) end\n"
         "      tostring(setmetatable({}, mt))",
         "tostring: calls nested more than"},
        {"local mt = {}; mt.__tostring = function(v) return string.format('%s', setmetatable({}, mt)) end\n"
         "      string.format('%s', setmetatable({}, mt))",
         "string.format: calls nested more than"},
        {"local function f() return coroutine.wrap(f)() end; f()", "coroutine.resume: calls nested more than"},
        {"local function f() local ok, e = coroutine.resume(coroutine.create(f)); error(e, 0) end; f()",
         "coroutine.resume: calls nested more than"},
    };
    for (size_t i = 0; i < sizeof attacks / sizeof attacks[0]; i++) {
        char src[1024];
        snprintf(src, sizeof src, CTRL_HEAD "      %s\n  end }\n", attacks[i][0]);
        lop_script_set_t s = one_file(src);
        lop_engine_opts_t o = opts_default();
        o.reconcile_timeout_ns = 3600 * LOP_NS_PER_S; /* a clean error, not the deadline */
        lop_reconcile_result_t res;
        if (!reconcile_once(&s, &o, &res)) return;
        T_EQ_INT(res.kind, LOP_RESULT_ERROR);
        T_CHECK(!res.timed_out);
        if (!strstr(res.message, attacks[i][1])) fprintf(stderr, "attack %zu: %s\n", i, res.message);
        T_CHECK(strstr(res.message, attacks[i][1]) != NULL);
        T_CHECK(strstr(res.message, "main.lua:") != NULL);
    }
}

/* Caught errors do not leak nesting: a thousand errors caught inside gsub callbacks, then a
 * legitimate 90-deep nesting still works; and the depth starts from zero on every call. */
static void test_c_reentry_count_survives_caught_errors(void)
{
    lop_script_set_t s = one_file(
        CTRL_HEAD
        "    for i = 1, 1000 do\n"
        "      pcall(string.gsub, 'a', '.', function() error('x') end)\n"
        "      xpcall(function() return ('a'):gsub('.', function() error('y') end) end, function(e) return e end)\n"
        "      coroutine.resume(coroutine.create(function() ('a'):gsub('.', function() error('z') end) end))\n"
        "    end\n"
        "    local function nest(n) if n == 0 then return 'ok' end\n"
        "      return (('a'):gsub('a', function() return nest(n - 1) end)) end\n"
        "    if nest(90) ~= 'ok' then error('nest') end\n"
        "    if req.name == 'x' then local _ = ('a'):gsub('a', function() error('left inside') end) end\n"
        "    return { requeue_after = 1 }\n  end }\n");
    const lop_engine_t *e = lop_lua_engine();
    lop_engine_opts_t o = opts_default();
    o.reconcile_timeout_ns = 3600 * LOP_NS_PER_S;
    lop_err_t err;
    lop_vm_t *vm = e->vm_new(&s, &o, NULL, &err);
    T_CHECK(vm != NULL);
    if (!vm) return;
    lop_reconcile_req_t rx = {"default", "x", "r-1"}, ry = {"default", "y", "r-2"};
    lop_reconcile_result_t res;
    for (int i = 0; i < 3; i++) { /* errors left at depth 1 by the previous call do not add up */
        e->reconcile(vm, "c", &rx, &res);
        T_EQ_INT(res.kind, LOP_RESULT_ERROR);
        T_CHECK(strstr(res.message, "left inside") != NULL);
    }
    e->reconcile(vm, "c", &ry, &res);
    T_EQ_INT(res.kind, LOP_RESULT_REQUEUE_AFTER);
    if (res.kind != LOP_RESULT_REQUEUE_AFTER) fprintf(stderr, "%s\n", res.message);
    e->vm_free(vm);
}

int main(void)
{
    /* cjson is found on the system package path; CTest's LUA_CPATH points at the build tree. */
    unsetenv("LUA_CPATH");
    tclock.owner = pthread_self(); /* the test thread: it runs every VM */
    T_RUN(test_watchdog_polls_do_not_move_the_test_clock);
    T_RUN(test_infinite_loop_is_interrupted);
    T_RUN(test_predicate_and_map_deadline);
    T_RUN(test_pcall_cannot_swallow_the_deadline);
    T_RUN(test_deadline_in_coroutines_and_sleep);
    T_RUN(test_system_clock_deadline);
    T_RUN(test_load_deadline);
    T_RUN(test_jit_deadline_is_cooperative);
    T_RUN(test_xpcall_handler_cannot_defeat_the_deadline);
    T_RUN(test_c_reentry_is_bounded);
    T_RUN(test_patterns_obey_the_deadline);
    T_RUN(test_c_reentry_count_survives_caught_errors);
    T_RUN(test_memory_cap_breaks_the_vm);
    T_RUN(test_memory_cap_even_when_caught);
    T_RUN(test_memory_cap_at_load);
    T_RUN(test_sandbox_has_no_io_os);
    T_RUN(test_unsafe_libs_opens_io_os);
    T_RUN(test_cjson_is_available);
    T_RUN(test_many_vms_free_cleanly);
    return T_DONE();
}
