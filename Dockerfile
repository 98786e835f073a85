# luaop container image: multi-stage on Debian 12 (bookworm).
# The base is pinned to a dated bookworm snapshot so rebuilds are repeatable; bump DEBIAN_TAG on
# purpose (a newer dated tag, or a digest: debian@sha256:...).
ARG DEBIAN_TAG=bookworm-20251229-slim

# Build stage: only the "build" section of deps/debian-packages.txt (no test tools), tests off.
FROM debian:${DEBIAN_TAG} AS build
COPY deps/debian-packages.txt deps/packages.sh /src/deps/
RUN apt-get update \
 && apt-get install -y --no-install-recommends $(sh /src/deps/packages.sh build) \
 && rm -rf /var/lib/apt/lists/*
COPY . /src
RUN cmake -S /src -B /build -DCMAKE_BUILD_TYPE=Release -DLUAOP_WERROR=ON -DLUAOP_BUILD_TESTS=OFF \
 && cmake --build /build -j"$(nproc)" \
 && cmake --install /build --prefix /opt/luaop

# Runtime stage: the shared libraries luaop links (tests/integration/ops_install.sh checks this
# list against the binary), lua-cjson for scripts' require("cjson"), CA certificates.
FROM debian:${DEBIAN_TAG}
RUN apt-get update \
 && apt-get install -y --no-install-recommends libluajit-5.1-2 libcurl4 libjansson4 libevent-2.1-7 \
      libevent-openssl-2.1-7 libevent-pthreads-2.1-7 libyaml-0-2 libssl3 zlib1g lua-cjson ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 65532 --no-create-home luaop
COPY --from=build /opt/luaop /opt/luaop
ENV PATH=/opt/luaop/bin:$PATH
USER 65532:65532
# Read-only root filesystem friendly: luaop writes nothing but logs to stderr.
ENTRYPOINT ["luaop", "run"]
