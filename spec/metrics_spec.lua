local metrics = require("luaop.metrics")

describe("luaop.metrics (outside the host)", function()
  before_each(function() metrics.reset() end)

  it("counts, sets and observes by label values", function()
    local c = metrics.counter{name = "spec_events_total", help = "h", labels = {"namespace"}}
    c:inc({namespace = "a"})
    c:add(2, {namespace = "a"})
    c:inc({namespace = "b"})
    assert.equal(3, metrics.value("spec_events_total", {namespace = "a"}))
    assert.equal(1, metrics.value("spec_events_total", {namespace = "b"}))
    local g = metrics.gauge{name = "spec_size", labels = {"ns", "name"}}
    g:set(5, {ns = "x", name = "y"})
    g:dec({ns = "x", name = "y"})
    assert.equal(4, metrics.value("spec_size", {ns = "x", name = "y"}))
    local h = metrics.histogram{name = "spec_seconds", buckets = {0.1, 1}}
    h:observe(0.5)
    h:observe(2)
    assert.same({count = 2, sum = 2.5}, metrics.value("spec_seconds"))
    assert.is_nil(metrics.value("spec_events_total", {namespace = "never"}))
  end)

  it("refuses the host's reserved names", function()
    for _, n in ipairs({"controller_runtime_reconcile_total", "workqueue_depth", "rest_client_x",
                        "leader_election_master_status", "luaop_lua_memory_bytes"}) do
      assert.is_true(metrics.reserved(n))
      assert.has_error(function() metrics.counter{name = n} end)
    end
    assert.is_false(metrics.reserved("memcached_total"))
  end)

  it("re-declaring is idempotent, a different shape raises", function()
    local a = metrics.counter{name = "spec_twice_total", labels = {"k"}}
    local b = metrics.counter{name = "spec_twice_total", labels = {"k"}}
    a:inc({k = "1"})
    b:inc({k = "1"})
    assert.equal(2, metrics.value("spec_twice_total", {k = "1"}))
    assert.has_error(function() metrics.gauge{name = "spec_twice_total", labels = {"k"}} end)
    assert.has_error(function() metrics.counter{name = "spec_twice_total", labels = {"j"}} end)
  end)

  it("rejects misuse with clear errors", function()
    local c = metrics.counter{name = "spec_misuse_total", labels = {"k"}}
    assert.has_error(function() c:add(-1, {k = "a"}) end)
    assert.has_error(function() c:inc({}) end)                 -- missing label
    assert.has_error(function() c:inc({k = "a", j = "b"}) end) -- unknown label
    assert.has_error(function() c:set(1, {k = "a"}) end)       -- not a gauge
    assert.has_error(function() c:add(0 / 0, {k = "a"}) end)   -- NaN
    assert.has_error(function() metrics.counter{name = "bad name"} end)
    assert.has_error(function() metrics.counter{name = "x_total", labels = {"__x"}} end)
    assert.has_error(function() metrics.gauge{name = "x_g", buckets = {1}} end)
    assert.has_error(function() metrics.counter("x") end)
    local h = metrics.histogram{name = "spec_h"}
    assert.has_error(function() h:inc() end)
  end)
end)
-- SPDX-License-Identifier: Apache-2.0
