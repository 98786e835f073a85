# SPDX-License-Identifier: Apache-2.0
# Thin wrapper over CMake for the README commands. Everything real lives in CMakeLists.txt.
MAKEFLAGS += --no-print-directory
BUILD     ?= build
BUILDTYPE ?= RelWithDebInfo
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)
CMAKEFLAGS ?=
PKGS      := $(shell sh deps/packages.sh)
SUDO      := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all deps build test demo bench bench-smoke asan tsan fuzz format format-check rbac webhooks bundle rock rock-install clean lint-lua types doc

all: build

# Install the Debian packages listed in deps/debian-packages.txt when any is missing.
deps:
	@missing=$$(for p in $(PKGS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "make deps: installing:" $$missing; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	else echo "make deps: all packages present"; fi
	@# node and npm for the chart test's Go-template renderer (tests/integration/helm_chart.py) and
	@# the benchmarks' peer: Debian's when the machine has none (a NodeSource node brings its own npm)
	@if ! command -v node >/dev/null || ! command -v npm >/dev/null; then \
	  echo "make deps: installing: nodejs npm"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm; \
	fi

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILDTYPE) -DLUAOP_WERROR=ON $(CMAKEFLAGS)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) -- --no-print-directory

# The whole suite: C unit tests, busted specs, integration tests (all through CTest).
test: build format-check
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 300

# The main job: the memcached example end to end on the embedded API server.
demo: build
	./examples/memcached/demo.sh $(BUILD)/luaop

bench: build
	./bench/run.sh $(BUILD)

# The suite at tiny sizes, no npm install, nothing appended to bench/results/ (what CTest runs).
bench-smoke: build
	BENCH_SCALE=0.01 BENCH_PEER_INSTALL=0 BENCH_RESULTS=0 ./bench/run.sh $(BUILD)

asan:
	$(MAKE) test BUILD=build-asan CMAKEFLAGS=-DLUAOP_SANITIZE=address
tsan:
	$(MAKE) test BUILD=build-tsan CMAKEFLAGS=-DLUAOP_SANITIZE=thread

# The fuzz targets under libFuzzer with ASan+UBSan (clang), each run FUZZ_SECONDS (fuzz/README.md).
FUZZ_SECONDS ?= 60
fuzz: deps
	[ -f build-fuzz/CMakeCache.txt ] || cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_C_COMPILER=clang -DLUAOP_FUZZ=ON -DLUAOP_BUILD_TESTS=OFF
	cmake --build build-fuzz -j $(JOBS) --target fuzz_targets -- --no-print-directory
	./fuzz/run.sh build-fuzz $(FUZZ_SECONDS)

# config/rbac/role.yaml from the memcached example's declarations (tests check it is current).
rbac: build
	$(BUILD)/luaop check --rbac --scripts examples/memcached/scripts \
	  --crd examples/memcached/crd/cache.example.com_memcacheds.yaml \
	  --scripts-configmap luaop-system/luaop-scripts >config/rbac/role.yaml

# config/webhook/manifests.yaml: the example's WebhookConfigurations (tests check it is current);
# the CRD conversion patches `luaop check --webhooks` also prints belong to the CRDs
# (docs/deploying.md#conversion-webhooks): WEBHOOK_CRD_PATCHES=FILE writes them there.
WEBHOOK_CRD_PATCHES ?=
webhooks: build
	$(BUILD)/luaop check --webhooks --scripts examples/memcached/scripts \
	  | /usr/bin/python3 deploy/split_webhooks.py config/webhook/manifests.yaml $(WEBHOOK_CRD_PATCHES)

# bundle/ and bundle.Dockerfile: an OLM bundle for an example (docs/deploying.md#olm-bundle);
# BUNDLE_FLAGS passes more (--version, --image, --channel, --scripts/--crd/--sample for your set).
BUNDLE_EXAMPLE ?= memcached
BUNDLE_FLAGS ?=
bundle: build
	/usr/bin/python3 deploy/bundle.py --luaop $(BUILD)/luaop --example $(BUNDLE_EXAMPLE) $(BUNDLE_FLAGS)

# The Lua package for luarocks (luaop-scm-1.rockspec, `luarocks make`): `rock` builds only the
# busted module in ROCK_BUILD (no tests), `rock-install` installs CMake's "lua" component (the
# library and luaop/core.so) into luarocks' LUADIR and LIBDIR. Without luarocks:
# `cmake --install build --component lua --prefix P`.
ROCK_BUILD ?= build-rock
rock:
	cmake -S . -B $(ROCK_BUILD) -DCMAKE_BUILD_TYPE=$(BUILDTYPE) -DLUAOP_BUILD_TESTS=OFF $(CMAKEFLAGS)
	cmake --build $(ROCK_BUILD) -j $(JOBS) --target luaop_core_module

rock-install:
	@[ -n "$(LUADIR)" ] && [ -n "$(LIBDIR)" ] || { echo "make rock-install: LUADIR and LIBDIR are required (luarocks sets them)"; exit 1; }
	cmake -S . -B $(ROCK_BUILD) -DLUAOP_INSTALL_LMOD="$(LUADIR)" -DLUAOP_INSTALL_CMOD="$(LIBDIR)"
	cmake --install $(ROCK_BUILD) --component lua

format:
	git ls-files '*.c' '*.h' | xargs clang-format -i

# Fails, listing each deviation, when a tracked C file differs from .clang-format's style (`make format` fixes).
format-check: deps
	@git ls-files '*.c' '*.h' | xargs clang-format --dry-run --Werror

# luacheck (.luacheckrc) over the Lua code: library, examples, specs, tools, generated stubs.
lint-lua:
	luacheck .

# The LuaLS ---@meta stubs (types/luaop) from the library's LDoc comments (spec/luals_types_spec.lua checks them),
# and the examples' types from their CRDs (`luaop types`; spec/crdtypes_spec.lua checks them).
types:
	luajit tools/luals_types.lua scripts/luaop types/luaop
	for ex in memcached replicator; do \
	  $(BUILD)/luaop types --spdx Apache-2.0 --out examples/$$ex/types --crd examples/$$ex/crd/*.yaml || exit 1; \
	done

# The Lua library's reference (config.ld): $(BUILD)/doc/index.html.
doc:
	ldoc --dir $(BUILD)/doc .

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fuzz $(ROCK_BUILD)
