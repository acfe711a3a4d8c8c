#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the spring-mvc peer (spring-mvc/pom.xml, its native profile) as a native executable,
# build/spring-mvc-peer, Spring Boot's way (mvn -Pnative native:compile) with the native-image toolchain of
# quarkus-native/ (spring-webflux-native/build.sh says how; minutes and ~6 GB): post 001's Spring MVC native row.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PEER_NAME=spring-mvc-native PEER_SRC=$HERE/../spring-mvc PEER_ARTIFACT=spring-mvc-peer PEER_OUT=$HERE \
    exec "$HERE/../spring-webflux-native/build.sh"
