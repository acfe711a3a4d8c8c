#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the quarkus peer's application (quarkus/pom.xml and src/, unchanged) into a container image with Quarkus's
# own Jib extension (profile jib: quarkus-container-image-jib), post 004's "JIB" rows: no Dockerfile, the
# application's layers laid on a base image taken from the local Docker daemon (docker://), not from a registry.
# Post 004's bases were ubi8 and distroless, out of reach here; the base is preon-jre-17 (base.Dockerfile:
# the locally made bookworm-slim + Debian's JRE 17), on which Jib's entry point is what it gives every base but
# UBI's: java -Djava.util.logging.manager=org.jboss.logmanager.LogManager -jar quarkus-run.jar, no memory setting
# (as on distroless). Image: preon-peer-quarkus-jib (run.sh runs it). Needs a Docker daemon; Debian's Maven and
# JDK 17 are installed when missing; does nothing when the image is newer than the sources.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
IMAGE=preon-peer-quarkus-jib
BASE=preon-jre-17
docker info >/dev/null 2>&1 || { echo "quarkus-jib: no Docker daemon answers (start dockerd)" >&2; exit 1; }
if ! docker image inspect "$BASE" >/dev/null 2>&1; then
    "$HERE/../../../tests/image/base_images.sh" >/dev/null
    docker build -q --network host -f "$HERE/base.Dockerfile" -t "$BASE" "$HERE" >/dev/null
fi
# an image removed since the last build: build again
docker image inspect "$IMAGE" >/dev/null 2>&1 || rm -f "$HERE/build/quarkus-app/quarkus-run.jar"
PEER_SOURCES="$HERE/build.sh $HERE/base.Dockerfile" peers_maven quarkus-jib "$HERE/../quarkus" \
    "$HERE/build/quarkus-app/quarkus-run.jar" -Pjib "-Dpeer.build.dir=$HERE/build" \
    -Dquarkus.container-image.build=true "-Dquarkus.container-image.image=$IMAGE:latest" \
    "-Dquarkus.jib.base-jvm-image=docker://$BASE"
echo "$IMAGE: $(docker image inspect -f '{{.Size}}' "$IMAGE") bytes"
