# SPDX-License-Identifier: MIT
# The Quarkus native peer on a micro base: nothing but the executable and what it links to, as Quarkus's guide's
# quarkus-micro-image is (ubi-micro: no shell, no package manager; glibc and zlib for a native executable), made
# here without a registry: a first stage on the locally made bookworm-slim collects the executable, build/lib/
# beside it and every shared library ldd finds for them (glibc's, the dynamic loader), and the image is those files
# FROM scratch. No shell, so no NATIVE_OPTS: flags go after the image name (`docker run … IMAGE -Xmx32m`).
#
#   bench/peers/quarkus-native/build.sh
#   docker build -f bench/peers/quarkus-native/micro.Dockerfile -t preon-peer-quarkus-native-micro bench/peers
#   docker run --rm --network host -e PORT=8081 -e LISTEN=127.0.0.1 \
#       -e DATABASE_URL=postgresql://postgres@127.0.0.1:25432/preon preon-peer-quarkus-native-micro

FROM debian:bookworm-slim AS closure
ARG PEER=quarkus-native
COPY ${PEER}/build/lib/ /rootfs/opt/peer/lib/
COPY ${PEER}/build/quarkus-peer-runner /rootfs/opt/peer/
# ldd resolves build/lib/ through the executable's RUNPATH ($ORIGIN/lib); every library it names outside /rootfs
# (and the loader, which it prints without "=>") is copied with its path; a library it cannot find fails the build
RUN set -eu; \
    out=$(ldd /rootfs/opt/peer/quarkus-peer-runner /rootfs/opt/peer/lib/*.so); \
    if echo "$out" | grep -q "not found"; then echo "$out" >&2; exit 1; fi; \
    for lib in $(echo "$out" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\/.*ld-linux/ { print $1 }' \
                 | grep -v '^/rootfs/' | sort -u); do \
        cp --parents -L "$lib" /rootfs/; \
    done; \
    mkdir -p /rootfs/tmp && chmod 1777 /rootfs/tmp

FROM scratch
COPY --from=closure /rootfs/ /
USER 10001
ENV LISTEN=0.0.0.0 PORT=8080 POOL_SIZE=10
EXPOSE 8080
# the executable is PID 1 and gets SIGTERM itself
ENTRYPOINT ["/opt/peer/quarkus-peer-runner"]
