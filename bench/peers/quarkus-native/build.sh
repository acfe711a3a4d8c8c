#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the Quarkus peer (quarkus/pom.xml, the same application, profile native) as a native executable,
# build/quarkus-peer-runner, with the native-image toolchain that toolchain/install.sh assembles here (GraalVM
# 25.0.2's builder jars from Maven, run on Temurin 25, with preon's front end and C helpers; README.md): an
# experimental SubstrateVM executable dynamically linked to Temurin 25's libraries, which it finds in
# build/lib/ beside it (RUNPATH $ORIGIN/lib). GRAALVM_HOME set to a GraalVM or Mandrel builds with that
# instead. Does nothing when the executable is newer than its sources and the toolchain. The build takes
# minutes and ~5 GB of memory (2 cores); it prints its time and the builder's peak RSS.
# Another Quarkus peer's native build runs this with PEER_NAME, PEER_SRC (its folder, whose pom.xml has the native
# profile), PEER_ARTIFACT (its artifactId) and PEER_OUT (the folder whose build/ gets the executable).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
start=$(date +%s.%N)
NAME=${PEER_NAME:-quarkus-native}
SRC=${PEER_SRC:-$HERE/../quarkus}
ART=${PEER_ARTIFACT:-quarkus-peer}-1.0
OUT=${PEER_OUT:-$HERE}
BIN=$OUT/build/quarkus-peer-runner
peers_need maven openjdk-17-jdk-headless gcc zlib1g-dev
if [ -z "${GRAALVM_HOME:-}" ]; then
    "$HERE/toolchain/install.sh"
    export GRAALVM_HOME=$HERE/build/toolchain/home
fi
# shellcheck disable=SC2046 # one file name per line, no spaces in them
SOURCES=("$SRC/pom.xml" "$HERE/build.sh" "$OUT/build.sh" "$GRAALVM_HOME/bin/native-image" $(find "$SRC/src" "$HERE"/../jvm-common -type f))
peers_native_fresh "$NAME" "$start" "$BIN" "${SOURCES[@]}" && exit 0
export JAVA_HOME=$GRAALVM_HOME
m2=${MAVEN_REPO:-$HOME/.m2/repository}
offline=()
[ -e "$m2/.preon-peer-$NAME-$(sha1sum "$SRC/pom.xml" | cut -c1-12)" ] && offline=(-o)
rm -rf "$OUT/build/$ART-native-image-source-jar" "$OUT/build/lib" "$BIN"
mkdir -p "$OUT/build"
# jboss-threads 3.9 (Quarkus's executor), initialised at build time, opens java.lang on JDK 24+ or fails its class
# initialisation: the build says "use this JVM option: --add-opens java.base/java.lang=ALL-UNNAMED".
cmd=(mvn -B -Dstyle.color=never "${offline[@]}" -Dmaven.repo.local="$m2" -Pnative -DskipTests
    "-Dquarkus.native.additional-build-args=--add-opens=java.base/java.lang=ALL-UNNAMED"
    "-Dpeer.build.dir=$OUT/build" package)
if ! (cd "$SRC" && "${cmd[@]}") >"$OUT/build/native.log" 2>&1 || [ ! -x "$OUT/build/$ART-runner" ]; then
    echo "$NAME: the build failed (GRAALVM_HOME=$GRAALVM_HOME), in $SRC: ${cmd[*]}" >&2
    grep -E "ERROR|Error|error:" "$OUT/build/native.log" | head -n 20 | cut -c1-400 >&2
    exit 1
fi
touch "$m2/.preon-peer-$NAME-$(sha1sum "$SRC/pom.xml" | cut -c1-12)"
# The shared libraries it links to, beside it (the front end put them in the build folder's lib/, among
# Quarkus's jars; a GraalVM or Mandrel build links statically and leaves none).
mkdir -p "$OUT/build/lib"
find "$OUT/build/$ART-native-image-source-jar/lib" -maxdepth 1 -name '*.so' -exec cp {} "$OUT/build/lib/" \;
mv "$OUT/build/$ART-runner" "$BIN"
peers_native_record "$NAME" "$OUT"
peers_report "$NAME" "$start" "built"
