#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the quarkus peer's application (quarkus/pom.xml and src/, unchanged) packaged as an uber-jar, the
# packaging post 004 also ran: -Dquarkus.package.jar.type=uber-jar, one jar with every dependency, into
# bench/peers/quarkus-uber/build/quarkus-peer-1.0-runner.jar. Installs Debian's Maven and JDK 17 when missing;
# does nothing when up to date.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
PEER_SOURCES="$HERE/build.sh" peers_maven quarkus-uber "$HERE/../quarkus" "$HERE/build/quarkus-peer-1.0-runner.jar" \
    "-Dpeer.build.dir=$HERE/build" -Dquarkus.package.jar.type=uber-jar
