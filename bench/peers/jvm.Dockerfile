# SPDX-License-Identifier: MIT
# The JVM peers' image, one of quarkus, spring-webflux, spring-mvc (build arguments below): <peer>/build.sh in a
# debian:bookworm build stage (Debian's Maven and JDK 17, the pom's pinned versions from Maven Central), and
# bookworm-slim with Debian's JRE 17 and the peer's artifact, started by jvm-start.sh with the memory settings of
# the stack's own images (JVM_MEMORY below). JAVA_OPTS carries more JVM flags, e.g. a heap cap; they win. The
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
# the peer's folder, and the two whose sources variants build (quarkus-uber: quarkus/; spring-mvc-undertow: spring-mvc/)
COPY quarkus ./quarkus
COPY spring-mvc ./spring-mvc
COPY ${PEER} ./${PEER}
RUN ${PEER}/build.sh
# What Paketo's memory calculator counts (jvm-start.sh): the JRE's classes (its lib/modules, the same file in
# the runtime's openjdk-17-jre-headless) and the application's (ClassCount.java).
ARG ARTIFACT
COPY ClassCount.java ./
ARG JDK=/usr/lib/jvm/java-17-openjdk-amd64
RUN printf 'JVM_CLASS_COUNT=%s\nAPP_CLASS_COUNT=%s\n' \
        "$($JDK/bin/jimage list $JDK/lib/modules | grep -c '\.class$')" \
        "$(java ClassCount.java ${PEER}/build/${ARTIFACT})" >class-counts

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
COPY --from=build /src/class-counts /opt/peer-start/
COPY jvm-start.sh /opt/peer-start/
USER peer
# The memory settings of the stack's own images (jvm-start.sh): JVM_MEMORY=run-java for Quarkus (its generated
# Dockerfile.jvm's run-java.sh), paketo for Spring Boot (its buildpack's memory calculator; THREADS: the thread
# count the buildpack defaults to, 250 for a servlet application, 50 for a reactive one), none for none.
ARG JVM_MEMORY=none
ARG THREADS=250
ENV LISTEN=0.0.0.0 PORT=8080 POOL_SIZE=10 JAVA_OPTS= PEER_JAR=/opt/peer/${JAR} JVM_MEMORY=${JVM_MEMORY} \
    PAKETO_THREAD_COUNT=${THREADS} CLASS_COUNTS=/opt/peer-start/class-counts
EXPOSE 8080
# exec: the JVM is PID 1 and gets SIGTERM itself
ENTRYPOINT ["/opt/peer-start/jvm-start.sh"]
