--- Reconcile results (controller-runtime's reconcile.Result).
--
-- Return one of these from `reconcile(req)`; returning nothing is the same as `done()`.
-- Returning `nil, err` (or `result, err`) retries with rate-limited backoff; an err built by
-- `luaop.errors.terminal` is not retried.
-- Context: any.
-- @module luaop.result

local type, error = type, error

local _M = {}

--- Success; forget the item's backoff.
-- @treturn table `{}`
function _M.done()
  return {}
end

--- Requeue now with rate-limited backoff (AddRateLimited).
-- @treturn table `{requeue = true}`
function _M.requeue()
  return { requeue = true }
end

--- Requeue after a delay (Forget + AddAfter).
-- @tparam number seconds delay, > 0
-- @treturn table `{requeue_after = seconds}`
-- @raise when seconds is not a positive number
function _M.requeue_after(seconds)
  if type(seconds) ~= "number" or not (seconds > 0) or seconds == math.huge then
    error("luaop.result.requeue_after: seconds must be a finite number > 0", 2)
  end
  return { requeue_after = seconds }
end

return _M
-- SPDX-License-Identifier: Apache-2.0
