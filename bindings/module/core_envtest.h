/* SPDX-License-Identifier: Apache-2.0 */
/*
 * core_envtest.h — what only the busted module (build/lua/luaop/core.so) adds to luaop.core: the
 * local API server started in process and a REST client for it, the C half of
 * luaop.testing.apiserver() (scripts/luaop/testing/apiserver.lua; docs/lua-core.md "envtest").
 * The host VMs never get these (a reconcile reaches its API server through core.request).
 *
 *   core.apiserver.start([opts]) -> server | nil, err
 *       opts = {listen = "127.0.0.1:0" (default: a free loopback port), history = events,
 *               log_level = "warn" (default; debug|info|warn|error: the host's logger, process-wide,
 *               to stderr)}.
 *       The server (apiserver/apiserver.h) runs its libevent loop on its own thread; the calling
 *       thread only talks to it over loopback HTTP.
 *   server:url() -> "http://127.0.0.1:PORT", server:port() -> PORT
 *   server:stop()  stops the loop and frees everything; idempotent; the GC does it too.
 *   core.rest.new(url [, opts]) -> client | nil, err
 *       The host's REST client (host/kube/client/rest.h) with its discovery REST mapper
 *       (restmapper.h), so resources are the server's own plurals (a CRD's names.plural), and a
 *       kind unknown to discovery re-reads discovery once before it fails. opts = {qps = n}
 *       (default: client-side rate limiting off, the API server being local).
 *   client:request(verb, api_version, kind, ns, name, subresource, patch_type, query, body)
 *       -> code, decoded_body (nil for an empty body) on 2xx; nil, err otherwise
 *       The arguments and results of the host's core.request (docs/lua-core.md): verb is get,
 *       list, create, update, patch or delete; patch_type merge, json, strategic or apply; query
 *       already escaped, without '?'; body a JSON string. err = {code=, reason=, message=, rc=,
 *       details=} (details from a metav1.Status body).
 *   client:close()  frees the client; idempotent; the GC does it too.
 * Misuse (wrong argument types, unknown verb or patch type, a closed server or client) raises.
 *
 * Thread-safety: the userdata belong to the lua_State that made them; the server's own thread
 * never touches Lua.
 */
#ifndef LOP_LUA_MODULE_CORE_ENVTEST_H
#define LOP_LUA_MODULE_CORE_ENVTEST_H

#include <lua.h>

/* Add `apiserver` and `rest` to the table at tidx. Stack: unchanged. Raises (memory). */
void lop_lua_envtest_register(lua_State *L, int tidx);

#endif
