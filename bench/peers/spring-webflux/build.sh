#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the spring-webflux peer into bench/peers/spring-webflux/build/spring-webflux-peer.jar with Maven (pom.xml: every version pinned, resolved from Maven
# Central into ~/.m2). Installs Debian's Maven and JDK 17 when missing; does nothing when up to date.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
peers_maven spring-webflux "$HERE" "$HERE/build/spring-webflux-peer.jar"
