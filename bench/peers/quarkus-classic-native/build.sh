#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the quarkus-classic peer (quarkus-classic/pom.xml, profile native) as a native executable,
# build/quarkus-peer-runner, with the native-image toolchain of quarkus-native/ (README.md there: the same
# experimental SubstrateVM build, minutes and ~6 GB): post 001's quarkus-classic native row.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PEER_NAME=quarkus-classic-native PEER_SRC=$HERE/../quarkus-classic PEER_ARTIFACT=quarkus-classic-peer PEER_OUT=$HERE \
    exec "$HERE/../quarkus-native/build.sh"
