/* SPDX-License-Identifier: Apache-2.0 */
/*
 * core_crypto.h — luaop.core.crypto: digests and encodings scripts need for the usual operator
 * patterns (a checksum of a Secret or ConfigMap in a pod-template annotation, so a Deployment
 * rolls when its configuration changes; signing a webhook payload), backed by OpenSSL's EVP and
 * HMAC (SHA-256: FIPS 180-4; HMAC: RFC 2104) and host/util/base64 (RFC 4648). The same table is
 * in the host VMs and in the busted module (bindings/module), so specs see the same functions.
 *
 *   sha256_hex(s)               -> 64 lowercase hex digits of SHA-256(s)
 *   hmac_sha256_hex(key, s)     -> 64 lowercase hex digits of HMAC-SHA-256(key, s)
 *   base64_encode(s [, url])    -> standard alphabet with "=" padding; url = true: the URL-safe
 *                                  alphabet ("-_") without padding
 *   base64_decode(s)            -> the bytes, or nil, err ({reason = "Invalid", message = ...})
 *                                  for input that is not base64 (either alphabet, padding
 *                                  optional, ASCII whitespace ignored)
 * Strings are byte strings (embedded zeros fine). Any context. Misuse (a non-string argument)
 * raises naming the argument.
 *
 * Thread-safety: the functions touch only their own lua_State.
 */
#ifndef LOP_LUA_CORE_CRYPTO_H
#define LOP_LUA_CORE_CRYPTO_H

#include <lua.h>

/* Push the crypto table. Stack: +1. Raises (memory). */
void lop_lua_crypto_open(lua_State *L);

#endif
