# SPDX-License-Identifier: MIT
# preon's container image: a Debian 12 build stage, and a bookworm-slim runtime stage holding the binary, its
# runtime packages (config/runtime-packages.txt, the same list tests/image/runtime_image.sh checks), config/
# and sql/. Configure it with PREON_* variables, e.g. PREON_DATABASE_URL=postgresql://user:pw@db:5432/preon.
#
#   docker build -t preon .
#   docker run --rm -p 8080:8080 -e PREON_DATABASE_URL=postgresql://postgres@db/preon preon

FROM debian:bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends cmake make gcc libc6-dev pkg-config \
        libh2o-evloop-dev libpq-dev libjansson-dev libyaml-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY include ./include
COPY src ./src
COPY tests ./tests
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DPREON_TESTS=OFF \
 && cmake --build build -j"$(nproc)" \
 && strip build/preon

FROM debian:bookworm-slim AS runtime
COPY config/runtime-packages.txt /tmp/runtime-packages.txt
RUN apt-get update \
 && grep -v '^#' /tmp/runtime-packages.txt | xargs apt-get install -y --no-install-recommends \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt \
 && useradd --uid 10001 --no-create-home --home-dir /opt/preon --shell /usr/sbin/nologin preon
COPY --from=build /src/build/preon /usr/local/bin/preon
COPY config /opt/preon/config
COPY sql /opt/preon/sql
WORKDIR /opt/preon
USER preon
ENV PREON_SERVER_LISTEN=0.0.0.0 PREON_SERVER_PORT=8080
EXPOSE 8080
# No curl in the slim image: preon probes itself.
HEALTHCHECK --interval=10s --timeout=2s --start-period=5s --retries=3 CMD ["/usr/local/bin/preon", "--probe", "/health/live"]
ENTRYPOINT ["/usr/local/bin/preon"]
CMD ["--config", "/opt/preon/config/preon.yaml"]
