# SPDX-License-Identifier: MIT
# preon's container image: a Debian 12 build stage, then a runtime stage FROM scratch holding only the stripped
# binary (h2o and libpq built from Debian's source packages with preon's patches and linked statically with Debian's
# static jansson, libyaml and OpenSSL, as scripts/sources/build.sh and CMake do outside Docker), the glibc files `ldd`
# lists for it (with the loader), CA certificates, a passwd entry for uid 10001, config/ and sql/. Configure it with
# PREON_* variables, e.g. PREON_DATABASE_URL=postgresql://user:pw@db:5432/preon.
#
#   docker build --network host -t preon .    # the build stage fetches h2o's and postgresql-15's sources with apt
#   docker run --rm -p 8080:8080 -e PREON_DATABASE_URL=postgresql://postgres@db/preon preon
#   docker build --network host --target slim -t preon:slim .    # the same on debian:bookworm-slim (apt, a shell)
#
# tests/image/test_docker_image.py builds both, checks the default one and prints both sizes (README, "Image").

FROM debian:bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends cmake make gcc g++ libc6-dev pkg-config ca-certificates dpkg-dev patch \
        libssl-dev zlib1g-dev libjansson-dev libyaml-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# h2o and libpq from Debian's source packages, patched: a layer of its own, built again only when the patches change
COPY scripts/sources ./scripts/sources
RUN scripts/sources/build.sh && rm -rf /var/lib/apt/lists/*
COPY CMakeLists.txt ./
COPY include ./include
COPY src ./src
COPY docs/openapi.json ./docs/openapi.json
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DPREON_TESTS=OFF \
 && cmake --build build -j"$(nproc)" \
 && strip build/preon
# The scratch runtime's root: the binary, every library ldd resolves (glibc; dereferenced, at the path the loader
# searches) and the loader itself, CA certificates for TLS to the database, users for uid 10001 (libpq looks its user
# name up when the URL names none), and config/ and sql/ under /opt/preon, where preon finds config/preon.yaml.
COPY config /rootfs/opt/preon/config
COPY sql /rootfs/opt/preon/sql
RUN mkdir -p /rootfs/usr/local/bin /rootfs/etc/ssl/certs \
 && cp build/preon /rootfs/usr/local/bin/preon \
 && for lib in $(ldd build/preon | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'); do \
        cp --parents -L "$lib" /rootfs/; done \
 && cp /etc/ssl/certs/ca-certificates.crt /rootfs/etc/ssl/certs/ \
 && cp /etc/nsswitch.conf /rootfs/etc/ \
 && printf 'root:x:0:0:root:/root:/usr/sbin/nologin\npreon:x:10001:10001:preon:/opt/preon:/usr/sbin/nologin\n' >/rootfs/etc/passwd \
 && printf 'root:x:0:\npreon:x:10001:\n' >/rootfs/etc/group

# The same service on debian:bookworm-slim, for those who want apt, a shell and dpkg's package data in the image.
# Caches and lists are removed in the install's own layer: a base image without Debian's docker-clean apt hook
# would otherwise keep ~80 MB of /var/cache/apt/*.bin. preon listens on 0.0.0.0:8080 and reads
# /opt/preon/config/preon.yaml by default (its working folder): no ENV or CMD needed. No shell or curl in the default
# image: preon probes itself.
FROM debian:bookworm-slim AS slim
COPY config/runtime-packages.txt /tmp/runtime-packages.txt
RUN apt-get update \
 && grep -v '^#' /tmp/runtime-packages.txt | xargs apt-get install -y --no-install-recommends \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt/* /var/log/dpkg.log /tmp/runtime-packages.txt \
 && useradd --uid 10001 --no-create-home --home-dir /opt/preon --shell /usr/sbin/nologin preon
COPY --from=build /rootfs/usr/local/bin/preon /usr/local/bin/preon
COPY --from=build /rootfs/opt/preon /opt/preon
WORKDIR /opt/preon
USER 10001
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=2s --start-period=5s --retries=3 CMD ["/usr/local/bin/preon", "--probe", "/health/live"]
ENTRYPOINT ["/usr/local/bin/preon"]

FROM scratch AS runtime
COPY --from=build /rootfs/ /
WORKDIR /opt/preon
USER 10001
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=2s --start-period=5s --retries=3 CMD ["/usr/local/bin/preon", "--probe", "/health/live"]
ENTRYPOINT ["/usr/local/bin/preon"]
