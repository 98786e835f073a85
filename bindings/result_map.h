/* SPDX-License-Identifier: Apache-2.0 */
/*
 * result_map.h — what a reconcile's return values mean: the one mapping used by the engine (every
 * reconcile in a worker VM) and by luaop.testing (luaop.core.reconcile_result), so a test sees
 * exactly what the host would do. The kinds follow controller-runtime's handling of
 * reconcile.Result (pkg/internal/controller/controller.go, reconcileHandler):
 *
 *   nil, err                 -> error (requeued with backoff); a table err with a truthy
 *                               `terminal` -> terminal (not retried)
 *   nothing / nil            -> done
 *   {requeue_after = s > 0}  -> requeue_after (s seconds, a number in [0, 1e9]; 0 = not set)
 *   {requeue = truthy}       -> requeue (rate limited); any other table -> done
 *   any other value, or a bad requeue_after -> a Lua error (the reconcile counts as raised)
 */
#ifndef LOP_LUA_RESULT_MAP_H
#define LOP_LUA_RESULT_MAP_H

#include "host/runtime/engine.h"

#include <lua.h>

/* Map the reconcile's two return values at stack indexes r1 (result) and r2 (error) into *res
 * (kind, requeue_after_ns, message = the error's text; the caller zeroes *res first). controller
 * names the controller in error messages. Raises a Lua error (luaL_error) for a value the host
 * does not accept. Returns 0. */
int lop_lua_map_result(lua_State *L, int r1, int r2, const char *controller, lop_reconcile_result_t *res);

/* luaop.core.reconcile_result(result, err) -> {kind = "done"|"requeue"|"requeue_after"|"error"|
 * "terminal", requeue_after = seconds (requeue_after only), message = the error's text (error and
 * terminal)}; raises as lop_lua_map_result does. */
int lop_lua_reconcile_result(lua_State *L);

#endif
