-- SPDX-License-Identifier: Apache-2.0
-- luacheck (Debian: lua-check) for the repository: `make lint-lua`, tests/integration/lua_lint.sh.
-- Scripts run under LuaJIT; specs under busted. Generated projects get their own (cmd/scaffold/).
std = "luajit"
-- The library's lines stay under 150 columns (the C code's 120 is clang-format's; Lua has no
-- formatter here, and the longest lines are error messages kept on one line to stay greppable).
max_line_length = 150
-- `not (x > 0)` is how the library rejects NaN along with the out-of-range numbers (x <= 0 is
-- false for NaN): luacheck's "can be replaced by x <= y" would let NaN through.
ignore = { "581" }
files["spec"] = { std = "+busted" }
files["examples/*/spec"] = { std = "+busted" }
-- the backend interface's argument list, kept whole in the spec-only HTTP backend
files["spec/support/http_backend.lua"] = { ignore = { "212/obj" } }
-- the generated LuaLS stubs (tools/luals_types.lua): empty functions, LDoc's long lines
files["types"] = { ignore = { "212", "241", "631" } }
-- the examples' generated CRD types (`luaop types`): schema descriptions on one line
files["examples/*/types"] = { ignore = { "631" } }
exclude_files = { "build*/**", "bench/peers/**", "tests/integration/fixtures/**" }
