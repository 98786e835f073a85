-- Reconcile returns and what they mean: one table read by the C engine's test
-- (tests/unit/bindings/test_lua_engine.c, through the real engine) and by
-- spec/result_agreement_spec.lua (through luaop.testing). Both must give these kinds; a difference
-- between the host and the test harness fails one of them.
--   body   the reconcile function's body
--   kind   "done" | "requeue" | "requeue_after" | "error" | "terminal"
--   after  requeue_after in seconds (requeue_after only)
--   msg    the start of the host's error text (error and terminal; the C test checks it)
return {
  { body = "return", kind = "done" },
  { body = "return nil", kind = "done" },
  { body = "return {}", kind = "done" },
  { body = "return { requeue = true }", kind = "requeue" },
  { body = "return { requeue = 1 }", kind = "requeue" },        -- any truthy value, as Lua reads it
  { body = "return { requeue = false }", kind = "done" },
  { body = "return { requeue_after = 2.5 }", kind = "requeue_after", after = 2.5 },
  { body = "return { requeue = true, requeue_after = 1 }", kind = "requeue_after", after = 1 },
  { body = "return { requeue_after = 0 }", kind = "done" },
  { body = "return { requeue = true, requeue_after = 0 }", kind = "requeue" },
  { body = "return nil, 'plain failure'", kind = "error", msg = "plain failure" },
  { body = "return { requeue = true }, { reason = 'Conflict', message = 'modified' }", kind = "error",
    msg = "Conflict: modified" },
  { body = "return nil, { terminal = true, message = 'bad spec' }", kind = "terminal", msg = "bad spec" },
  { body = "return nil, { terminal = 1, message = 'bad spec' }", kind = "terminal", msg = "bad spec" },
  { body = "error('kaboom')", kind = "error", msg = "main.lua:4: kaboom\nstack traceback:" },
  { body = "error({ reason = 'NotFound', message = 'gone' })", kind = "error", msg = "main.lua:4: NotFound: gone" },
  { body = "return 42", kind = "error", msg = "controller 'c': reconcile returned a number" },
  { body = "return 'done'", kind = "error", msg = "controller 'c': reconcile returned a string" },
  { body = "return { requeue_after = 'soon' }", kind = "error", msg = "controller 'c': reconcile result requeue_after" },
  { body = "return { requeue_after = -1 }", kind = "error", msg = "controller 'c': reconcile result requeue_after" },
}
-- SPDX-License-Identifier: Apache-2.0
