#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Tries to build the Quarkus peer (quarkus/pom.xml, the same application) as a GraalVM native executable,
# build/quarkus-peer-runner, with what the registries serve: Quarkus's native profile (mvn -Pnative package) run
# on the newest JDK on the machine (Temurin 25 when present). It needs GraalVM's `native-image`, which is neither
# a Debian package nor a Maven Central artifact that runs by itself; without one Quarkus falls back to a
# container build, whose builder image no reachable registry serves. When it cannot be built, the exact command
# and its error are kept in build/native-failed.log and this exits 77 (a test reads that as "cannot be built
# here"); that failure is repeated, not re-run, until a source or this script changes. Set GRAALVM_HOME to a
# GraalVM or Mandrel to build it.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
start=$(date +%s.%N)
SRC=$HERE/../quarkus
BIN=$HERE/build/quarkus-peer-runner
FAILED=$HERE/build/native-failed.log
# shellcheck disable=SC2046 # one file name per line, no spaces in them
SOURCES=("$SRC/pom.xml" "$HERE/build.sh" $(find "$SRC/src" "$HERE"/../jvm-common -type f))
if ! peers_stale "$BIN" "${SOURCES[@]}"; then
    peers_report quarkus-native "$start" "up to date"
    exit 0
fi
if [ -z "${GRAALVM_HOME:-}" ] && ! peers_stale "$FAILED" "${SOURCES[@]}"; then
    cat "$FAILED" >&2
    exit 77
fi
peers_need maven openjdk-17-jdk-headless
jdk=$(ls -d /usr/lib/jvm/temurin-2[5-9]-jdk-* 2>/dev/null | sort -V | tail -n 1)
export JAVA_HOME=${GRAALVM_HOME:-${jdk:-/usr/lib/jvm/java-17-openjdk-amd64}}
mkdir -p "$HERE/build"
cmd=(mvn -B -Dstyle.color=never -Pnative -DskipTests "-Dpeer.build.dir=$HERE/build" package)
if (cd "$SRC" && "${cmd[@]}") >"$HERE/build/native.log" 2>&1 && [ -x "$HERE/build/quarkus-peer-1.0-runner" ]; then
    mv "$HERE/build/quarkus-peer-1.0-runner" "$BIN"
    rm -f "$FAILED"
    peers_report quarkus-native "$start" "built"
    exit 0
fi
{
    echo "quarkus-native cannot be built here ($(date -u +%F)): JAVA_HOME=$JAVA_HOME, in bench/peers/quarkus:"
    echo "  ${cmd[*]}"
    grep -E "Cannot find the .native-image|threw an exception" "$HERE/build/native.log" | head -n 4 | cut -c1-400 |
        sed 's/^/  /'
} >"$FAILED"
cat "$FAILED" >&2
exit 77
