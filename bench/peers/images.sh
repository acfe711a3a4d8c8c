#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the peers' container images from their Dockerfiles (go/Dockerfile, jvm.Dockerfile) on the locally made
# Debian base (tests/image/base_images.sh): preon-peer-go, preon-peer-quarkus, preon-peer-spring-webflux,
# preon-peer-spring-mvc, or those named. The build stages fetch from the Go module proxy and Maven Central like the
# host does, trusting the certificate authorities the host adds to Debian's (/usr/local/share/ca-certificates/,
# e.g. an egress proxy's), copied into extra-ca/ for the build. Prints each image's build time and size.
# The native peers (not among the defaults: each build takes minutes and ~6 GB) are built on the host by their
# build.sh first, then copied into an image (quarkus-native/Dockerfile, the executable's name a build argument).
#   bench/peers/images.sh [go] [quarkus] [quarkus-native] [spring-webflux] [spring-mvc] [quarkus-classic]
#                         [quarkus-routes] [quarkus-uber] [spring-mvc-undertow] [quarkus-classic-native]
#                         [spring-webflux-native] [spring-mvc-native] [quarkus-native-micro]
# (quarkus-jib's image is built by Quarkus's Jib extension: quarkus-jib/build.sh.)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
"$HERE/../../tests/image/base_images.sh" >/dev/null
rm -f "$HERE"/extra-ca/*.crt
for crt in /usr/local/share/ca-certificates/*.crt /usr/local/share/ca-certificates/*/*.crt; do
    [ -e "$crt" ] && cp "$crt" "$HERE/extra-ca/"
done
peers=("$@")
[ ${#peers[@]} -gt 0 ] || peers=(go quarkus spring-webflux spring-mvc)
log=$(mktemp /tmp/preon-peer-image.XXXXXX)
trap 'rm -f "$HERE"/extra-ca/*.crt "$log"' EXIT
status=0
for p in "${peers[@]}"; do
    start=$(date +%s)
    case $p in
        go) args=(-f "$HERE/go/Dockerfile") ;;
        # each with the memory settings of its stack's own images (jvm-start.sh)
        quarkus | quarkus-classic | quarkus-routes) args=(-f "$HERE/jvm.Dockerfile" --build-arg "PEER=$p"
                       --build-arg ARTIFACT=quarkus-app --build-arg JAR=quarkus-run.jar --build-arg JVM_MEMORY=run-java) ;;
        quarkus-uber) args=(-f "$HERE/jvm.Dockerfile" --build-arg PEER=quarkus-uber --build-arg JVM_MEMORY=run-java
                            --build-arg ARTIFACT=quarkus-peer-1.0-runner.jar --build-arg JAR=quarkus-peer-1.0-runner.jar) ;;
        quarkus-native | quarkus-classic-native) "$HERE/$p/build.sh" >&2 &&
            args=(-f "$HERE/quarkus-native/Dockerfile" --build-arg "PEER=$p") ;;
        # the same executable FROM scratch with only what it links to (post 004's micro base)
        quarkus-native-micro) "$HERE/quarkus-native/build.sh" >&2 &&
            args=(-f "$HERE/quarkus-native/micro.Dockerfile" --build-arg PEER=quarkus-native) ;;
        spring-webflux-native | spring-mvc-native) "$HERE/$p/build.sh" >&2 &&
            args=(-f "$HERE/quarkus-native/Dockerfile" --build-arg "PEER=$p" --build-arg "EXECUTABLE=${p%-native}-peer") ;;
        spring-webflux | spring-mvc | spring-mvc-undertow) args=(-f "$HERE/jvm.Dockerfile" --build-arg "PEER=$p"
                --build-arg "ARTIFACT=$p-peer.jar" --build-arg "JAR=$p-peer.jar" --build-arg JVM_MEMORY=paketo
                --build-arg "THREADS=$([ "$p" = spring-webflux ] && echo 50 || echo 250)") ;;
        *) echo "unknown peer: $p (go, quarkus, quarkus-classic, quarkus-routes, quarkus-uber, quarkus-native, quarkus-classic-native," \
                "quarkus-native-micro, spring-webflux, spring-mvc, spring-mvc-undertow, spring-webflux-native, spring-mvc-native)" >&2; exit 2 ;;
    esac
    if docker build --network host "${args[@]}" -t "preon-peer-$p" "$HERE" >"$log" 2>&1; then
        echo "preon-peer-$p: built in $(( $(date +%s) - start )) s, $(docker image inspect -f '{{.Size}}' "preon-peer-$p") bytes"
    else
        echo "preon-peer-$p: docker build failed; its last lines:" >&2
        tail -n 20 "$log" >&2
        status=1
    fi
done
exit $status
