# luaop container image: multi-stage on Debian 12.
# Build stage: the -dev packages from the project's one package list (deps/debian-packages.txt).
FROM debian:12 AS build
COPY deps/debian-packages.txt /src/deps/debian-packages.txt
RUN apt-get update \
 && apt-get install -y --no-install-recommends $(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' /src/deps/debian-packages.txt) \
 && rm -rf /var/lib/apt/lists/*
COPY . /src
RUN cmake -S /src -B /build -DCMAKE_BUILD_TYPE=Release -DLUAOP_WERROR=ON \
 && cmake --build /build -j"$(nproc)" \
 && cmake --install /build --prefix /opt/luaop

# Runtime stage: only the shared libraries luaop links.
FROM debian:12-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends libluajit-5.1-2 libcurl4 libjansson4 libevent-2.1-7 \
      libevent-openssl-2.1-7 libevent-pthreads-2.1-7 libyaml-0-2 libssl3 ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 65532 --no-create-home luaop
COPY --from=build /opt/luaop /opt/luaop
ENV PATH=/opt/luaop/bin:$PATH
USER 65532:65532
# Read-only root filesystem friendly: luaop writes nothing but logs to stderr.
ENTRYPOINT ["luaop", "run"]
