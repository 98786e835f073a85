/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the libraries the default sandbox adds (bindings/sandbox_libs.h,
 * bindings/core_crypto.h), through the real engine: the safe os (time, date, clock only, on the
 * injected clock; require("os") returns it), bit (require("bit")), luaop.core.crypto. Each case
 * is a main.lua that asserts; a failed assertion fails the load with its file:line. */
#include "bindings/engine_lua.h"
#include "host/util/clock.h"
#include "host/util/log.h"
#include "t.h"

#include <stdio.h>
#include <string.h>

static lop_fake_clock_t fclock;

/* Load src as main.lua of a one-file set under the default sandbox; true when it loaded (the
 * load error is printed otherwise, or copied into msg when given). */
static bool load(const char *src, char *msg, size_t msglen)
{
    lop_script_file_t file = {.name = "main.lua", .data = (char *)src, .len = strlen(src)};
    lop_script_set_t set = {.files = &file, .nfiles = 1};
    strcpy(set.origin, "dir /tmp/test");
    lop_engine_opts_t o = {0};
    o.reconcile_timeout_ns = 10 * LOP_NS_PER_S;
    o.load_timeout_ns = 10 * LOP_NS_PER_S;
    o.clock = &fclock.base;
    lop_err_t err;
    lop_err_clear(&err);
    lop_vm_t *vm = lop_lua_engine()->vm_new(&set, &o, NULL, &err);
    if (vm) {
        lop_lua_engine()->vm_free(vm);
        return true;
    }
    if (msg)
        snprintf(msg, msglen, "%s", err.message);
    else
        fprintf(stderr, "load failed: %s\n", err.message);
    return false;
}

/* os has time, date and clock and nothing else; the dangerous functions are absent (nil, not a
 * stub); require("os") and package.loaded.os are the same table. */
static void test_os_is_safe(void)
{
    static const char src[] =
        "local n = 0; for k in pairs(os) do n = n + 1; assert(k == 'time' or k == 'date' or k == 'clock', k) end\n"
        "assert(n == 3, 'os has ' .. n .. ' entries')\n"
        "for _, k in ipairs({'execute', 'exit', 'getenv', 'remove', 'rename', 'tmpname', 'setlocale', 'difftime'}) do\n"
        "  assert(os[k] == nil, 'os.' .. k .. ' is present')\n"
        "end\n"
        "assert(require('os') == os, 'require(\"os\") is not the sandbox os')\n"
        "assert(package.loaded.os == os)\n"
        "assert(io == nil and debug == nil and ffi == nil and jit == nil)\n";
    T_CHECK(load(src, NULL, 0));
}

/* os.time() and os.date() read the injected clock: stepping it moves them. */
static void test_os_time_and_date_on_the_injected_clock(void)
{
    lop_fake_clock_init(&fclock, 1700000000LL * LOP_NS_PER_S + 250 * 1000000LL); /* 2023-11-14T22:13:20.25Z */
    static const char src[] =
        "assert(os.time() == 1700000000, 'os.time() = ' .. tostring(os.time()))\n"
        "assert(os.date('!%Y-%m-%dT%H:%M:%SZ') == '2023-11-14T22:13:20Z', os.date('!%Y-%m-%dT%H:%M:%SZ'))\n"
        "assert(os.date('!%Y-%m-%d %H:%M:%S', 0) == '1970-01-01 00:00:00')\n"
        "assert(os.date('!%a %b %d %j %y %%', 86400 * 59) == 'Sun Mar 01 060 70 %', os.date('!%a %b %d %j %y %%', "
        "86400 * 59))\n"
        "local t = os.date('!*t', 1700000000)\n"
        "assert(t.year == 2023 and t.month == 11 and t.day == 14 and t.hour == 22 and t.min == 13 and t.sec == 20)\n"
        "assert(t.wday == 3 and t.yday == 318, 'wday ' .. t.wday .. ' yday ' .. t.yday)\n"
        "local l = os.date('*t', 1700000000); local back = os.time(l)\n"
        "assert(back == 1700000000, 'os.time(os.date(\"*t\")) = ' .. tostring(back))\n"
        "assert(type(os.date()) == 'string' and #os.date() > 0)\n"
        "local ok, err = pcall(os.date, '%Q')\n"
        "assert(not ok and err:find(\"invalid conversion specifier '%%Q'\"), err)\n"
        "ok, err = pcall(os.date, '%')\n"
        "assert(not ok and err:find('invalid conversion specifier'), err)\n"
        "ok, err = pcall(os.time, { year = 2020 })\n"
        "assert(not ok and err:find(\"field 'day' missing in date table\"), err)\n"
        "ok, err = pcall(os.date, '!%Y', 1/0)\n"
        "assert(not ok and err:find('time out of range'), err)\n"
        "local c = os.clock(); assert(type(c) == 'number' and c >= 0)\n";
    T_CHECK(load(src, NULL, 0));
    /* Stepped by a day: os.time follows. */
    lop_fake_clock_step(&fclock, 86400 * LOP_NS_PER_S);
    T_CHECK(load("assert(os.time() == 1700086400, tostring(os.time()))\n"
                 "assert(os.date('!%d') == '15')\n",
                 NULL, 0));
}

/* A failing assertion in a script is reported with its file:line (so the cases above can fail). */
static void test_a_failed_case_names_its_line(void)
{
    char msg[2048];
    T_CHECK(!load("local x = 1\nassert(os.execute, 'os.execute is nil')\n", msg, sizeof msg));
    T_CHECK(strstr(msg, "main.lua:2:") != NULL);
    T_CHECK(strstr(msg, "os.execute is nil") != NULL);
}

/* bit is LuaJIT's bit library, also through require("bit"). */
static void test_bit(void)
{
    static const char src[] =
        "assert(require('bit') == bit)\n"
        "assert(bit.band(0xff, 0x0f) == 15 and bit.bor(1, 2) == 3 and bit.bxor(3, 1) == 2)\n"
        "assert(bit.lshift(1, 4) == 16 and bit.rshift(256, 4) == 16 and bit.arshift(-16, 2) == -4)\n"
        "assert(bit.tohex(255) == '000000ff' and bit.bnot(0) == -1 and bit.tobit(2^32 + 1) == 1)\n"
        "assert(bit.rol(1, 1) == 2 and bit.ror(1, 1) == bit.tobit(0x80000000) and bit.bswap(1) == 0x01000000)\n";
    T_CHECK(load(src, NULL, 0));
}

/* luaop.core.crypto: SHA-256 (FIPS 180-4 example "abc", the empty string), HMAC-SHA-256 (RFC 4231
 * test case 2), base64 both alphabets, bytes with zeros, and invalid input. */
static void test_crypto(void)
{
    static const char src[] =
        "local c = require('luaop.core').crypto\n"
        "assert(c.sha256_hex('abc') == 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')\n"
        "assert(c.sha256_hex('') == 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855')\n"
        "assert(c.hmac_sha256_hex('Jefe', 'what do ya want for nothing?') ==\n"
        "  '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843')\n"
        "assert(c.base64_encode('hunter2') == 'aHVudGVyMg==')\n"
        "assert(c.base64_encode('\\255\\254', true) == '__4')\n"
        "assert(c.base64_decode('aHVudGVyMg==') == 'hunter2' and c.base64_decode('__4') == '\\255\\254')\n"
        "local z = 'a\\0b\\0'\n"
        "assert(c.base64_decode(c.base64_encode(z)) == z and #c.sha256_hex(z) == 64)\n"
        "local v, err = c.base64_decode('not base64!')\n"
        "assert(v == nil and err.reason == 'Invalid' and err.message:find('not base64'), tostring(err and "
        "err.message))\n"
        "v, err = c.base64_decode('YQ==\\0YQ==')\n"
        "assert(v == nil and err.reason == 'Invalid')\n"
        "local ok, e = pcall(c.sha256_hex, {})\n"
        "assert(not ok and e:find('bad argument #1'), e)\n"
        "ok, e = pcall(c.hmac_sha256_hex, 'k')\n"
        "assert(not ok and e:find('bad argument #2'), e)\n"
        "local op = require('luaop')\n"
        "assert(op.crypto.sha256_hex == c.sha256_hex and op.crypto.base64_decode == c.base64_decode)\n";
    T_CHECK(load(src, NULL, 0));
}

int main(void)
{
    lop_fake_clock_init(&fclock, 0);
    lop_log_setup(LOP_LOG_WARN, LOP_LOG_TEXT);
    T_RUN(test_os_is_safe);
    T_RUN(test_os_time_and_date_on_the_injected_clock);
    T_RUN(test_a_failed_case_names_its_line);
    T_RUN(test_bit);
    T_RUN(test_crypto);
    return T_DONE();
}
