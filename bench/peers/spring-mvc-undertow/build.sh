#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the spring-mvc-undertow peer (spring-mvc's application on Undertow; pom.xml here pins every version) into
# bench/peers/spring-mvc-undertow/build/spring-mvc-undertow-peer.jar. Installs Debian's Maven and JDK 17 when
# missing; does nothing when up to date.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
PEER_SOURCES="$HERE/../spring-mvc/src" peers_maven spring-mvc-undertow "$HERE" "$HERE/build/spring-mvc-undertow-peer.jar"
