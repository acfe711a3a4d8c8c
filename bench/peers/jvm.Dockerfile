# SPDX-License-Identifier: MIT
# The JVM peers' image, one of quarkus, spring-webflux, spring-mvc (build arguments below): <peer>/build.sh in a
# debian:bookworm build stage (Debian's Maven and JDK 17, the pom's pinned versions from Maven Central), and
# bookworm-slim with Debian's JRE 17 and the peer's artifact. JAVA_OPTS carries JVM flags, e.g. a heap cap. The
# context is bench/peers/; build with --network host (Maven Central); no registry image is pulled: the base images
# are made locally (tests/image/base_images.sh):
#
#   docker build --network host -f bench/peers/jvm.Dockerfile -t preon-peer-quarkus \
#       --build-arg PEER=quarkus --build-arg ARTIFACT=quarkus-app --build-arg JAR=quarkus-run.jar bench/peers
#   docker build --network host -f bench/peers/jvm.Dockerfile -t preon-peer-spring-webflux \
#       --build-arg PEER=spring-webflux --build-arg ARTIFACT=spring-webflux-peer.jar \
#       --build-arg JAR=spring-webflux-peer.jar bench/peers                 (spring-mvc likewise)
#   docker run --rm --network host -e PORT=8082 -e LISTEN=127.0.0.1 -e JAVA_OPTS=-Xmx128m \
#       -e DATABASE_URL=postgresql://postgres@127.0.0.1:25432/preon preon-peer-quarkus

FROM debian:bookworm AS build
ARG PEER
RUN mkdir -p /usr/share/man/man1 \
 && apt-get update \
 && apt-get install -y --no-install-recommends maven openjdk-17-jdk-headless \
 && rm -rf /var/lib/apt/lists/*
# Certificate authorities the build host trusts beyond Debian's (an egress proxy's, a company's): images.sh puts
# them in extra-ca/; Maven Central is then reached as the host reaches it (Java's cacerts follows the update).
COPY extra-ca/ /usr/local/share/ca-certificates/extra/
RUN update-ca-certificates
WORKDIR /src
COPY lib.sh ./
COPY jvm-common ./jvm-common
COPY spring-common ./spring-common
COPY ${PEER}/build.sh ${PEER}/pom.xml ./${PEER}/
COPY ${PEER}/src ./${PEER}/src
RUN ${PEER}/build.sh

FROM debian:bookworm-slim AS runtime
ARG PEER
ARG ARTIFACT
ARG JAR
# The JRE's post-install script wants man1, which the slim image leaves out.
RUN mkdir -p /usr/share/man/man1 \
 && apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin \
 && useradd --uid 10001 --no-create-home --shell /usr/sbin/nologin peer
# a folder's contents (quarkus-app/) or the one jar, into /opt/peer/
COPY --from=build /src/${PEER}/build/${ARTIFACT} /opt/peer/
USER peer
ENV LISTEN=0.0.0.0 PORT=8080 POOL_SIZE=10 JAVA_OPTS= PEER_JAR=/opt/peer/${JAR}
EXPOSE 8080
# exec: the JVM is PID 1 and gets SIGTERM itself
ENTRYPOINT ["sh", "-c", "exec java $JAVA_OPTS -jar $PEER_JAR"]
