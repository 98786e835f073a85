-- SPDX-License-Identifier: Apache-2.0
-- The luaop Lua package: the library (scripts/luaop, incl. luaop.testing) and its C module
-- luaop.core (the busted module: the host's JSON/YAML codecs, selectors, clock, crypto and the
-- local API server for luaop.testing.apiserver). `luarocks make` in a checkout builds it with
-- CMake (the Makefile's `rock` and `rock-install` targets) and installs the modules where
-- luarocks says (`--tree DIR` for a private tree). The system packages of
-- deps/debian-packages.txt's "build" section must be installed (`make deps`).
-- source.url: only `luarocks make` from a checkout is supported (the project publishes no
-- source archive yet), so it names the checkout itself.
rockspec_format = "3.0"
package = "luaop"
version = "scm-1"
source = { url = "." }
description = {
  summary = "Kubernetes operators in Lua: the luaop library and its busted test kit",
  detailed = [[
The Lua library luaop's host runs reconcilers with, usable in an operator's own repository:
luaop.testing (an in-memory fake API server and luaop.testing.apiserver(), the local API server
started in process) runs an operator's busted specs with nothing but this package installed.]],
  license = "Apache-2.0",
}
dependencies = { "lua >= 5.1, < 5.2" }
build = {
  type = "make",
  build_target = "rock",
  install_target = "rock-install",
  build_variables = {},
  install_variables = { LUADIR = "$(LUADIR)", LIBDIR = "$(LIBDIR)" },
}
