#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the spring-webflux peer (spring-webflux/pom.xml, the same application, its native profile) as a native
# executable, build/spring-webflux-peer, the way Spring Boot's documentation builds one: `mvn -Pnative
# native:compile` (the Spring Boot parent's native profile: spring-boot-maven-plugin's process-aot, then GraalVM's
# native-maven-plugin 1.1.12, its metadata repository off), with JAVA_HOME the native-image toolchain that
# quarkus-native/toolchain/install.sh assembles (GraalVM 25.0.2's builder jars from Maven, run on Temurin 25, with
# preon's front end and C helpers; README.md there): an experimental SubstrateVM executable dynamically linked to
# Temurin 25's libraries, which it finds in build/lib/ beside it (RUNPATH $ORIGIN/lib). GRAALVM_HOME set to a
# GraalVM or Mandrel builds with that instead. Does nothing when the executable is newer than its sources and the
# toolchain. Minutes and ~6 GB of memory on 2 cores; prints its time and the builder's peak RSS.
# spring-mvc-native/build.sh runs this with PEER_NAME, PEER_SRC (the JVM peer's folder), PEER_ARTIFACT (its
# artifactId, the executable's name) and PEER_OUT (the folder whose build/ gets the executable).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
start=$(date +%s.%N)
NAME=${PEER_NAME:-spring-webflux-native}
SRC=${PEER_SRC:-$HERE/../spring-webflux}
ART=${PEER_ARTIFACT:-spring-webflux-peer}
OUT=${PEER_OUT:-$HERE}
BIN=$OUT/build/$ART
TOOLCHAIN=$HERE/../quarkus-native/toolchain
peers_need maven openjdk-17-jdk-headless gcc zlib1g-dev
if [ -z "${GRAALVM_HOME:-}" ]; then
    "$TOOLCHAIN/install.sh"
    export GRAALVM_HOME=$HERE/../quarkus-native/build/toolchain/home
fi
# shellcheck disable=SC2046 # one file name per line, no spaces in them
SOURCES=("$SRC/pom.xml" "$HERE/build.sh" "$OUT/build.sh" "$GRAALVM_HOME/bin/native-image" $(find "$SRC/src" "$HERE"/../jvm-common "$HERE"/../spring-common -type f))
peers_native_fresh "$NAME" "$start" "$BIN" "${SOURCES[@]}" && exit 0
export JAVA_HOME=$GRAALVM_HOME
m2=${MAVEN_REPO:-$HOME/.m2/repository}
mark="$m2/.preon-peer-$NAME-$(sha1sum "$SRC/pom.xml" | cut -c1-12)"
offline=()
[ -e "$mark" ] && offline=(-o)
rm -rf "$OUT/build"
mkdir -p "$OUT/build"
cmd=(mvn -B -Dstyle.color=never "${offline[@]}" -Dmaven.repo.local="$m2" -Pnative -DskipTests
    "-Dpeer.build.dir=$OUT/build" native:compile)
if ! (cd "$SRC" && "${cmd[@]}") >"$OUT/build/native.log" 2>&1 || [ ! -x "$BIN" ]; then
    echo "$NAME: the build failed (GRAALVM_HOME=$GRAALVM_HOME), in $SRC: ${cmd[*]}; log: $OUT/build/native.log" >&2
    grep -E "ERROR|Error|error:" "$OUT/build/native.log" | head -n 20 | cut -c1-400 >&2
    exit 1
fi
mkdir -p "$m2" && touch "$mark"
peers_native_record "$NAME" "$OUT"
peers_report "$NAME" "$start" "built"
