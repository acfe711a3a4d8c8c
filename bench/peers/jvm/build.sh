#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the JVM peer into build/jvm-peer.jar with javac and jar alone, against Debian's jars in /usr/share/java
# (no Maven or Gradle: no repository is reachable). The jar's manifest names those jars by absolute path, so
# `java -jar build/jvm-peer.jar` runs wherever the same Debian packages are installed (see Dockerfile).
# Installs what is missing; does nothing when up to date.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
start=$(date +%s.%N)
JARS="netty-common netty-buffer netty-transport netty-resolver netty-codec netty-codec-http netty-handler HikariCP
      postgresql jackson-databind jackson-core jackson-annotations slf4j-api slf4j-simple"
JAR=$HERE/build/jvm-peer.jar
if ! peers_stale "$JAR" "$HERE"/src/peer/*.java "$HERE/build.sh"; then
    peers_report jvm "$start" "up to date"
    exit 0
fi
# Only a build needs to look for packages (dpkg-query takes a while): run.sh's check stays quick.
peers_need openjdk-17-jdk-headless libnetty-java libhikaricp-java libpostgresql-jdbc-java libjackson2-databind-java \
    libslf4j-java
cp= cp_manifest=
for j in $JARS; do
    [ -f "/usr/share/java/$j.jar" ] || { echo "missing /usr/share/java/$j.jar" >&2; exit 1; }
    cp+=${cp:+:}/usr/share/java/$j.jar
    cp_manifest+=" /usr/share/java/$j.jar"
done
rm -rf "$HERE/build/classes"
mkdir -p "$HERE/build/classes"
# javac's output goes to build/javac.log and is shown on failure only: it always warns that sun.misc.Signal
# (jdk.unsupported, what gives SIGTERM an exit status of 0) is internal API.
javac --release 17 -encoding UTF-8 -cp "$cp" -d "$HERE/build/classes" "$HERE"/src/peer/*.java \
    >"$HERE/build/javac.log" 2>&1 || { cat "$HERE/build/javac.log" >&2; exit 1; }
printf 'Main-Class: peer.Main\nClass-Path:%s\n' "$cp_manifest" >"$HERE/build/manifest.txt"
jar --create --file "$JAR.tmp" --manifest "$HERE/build/manifest.txt" -C "$HERE/build/classes" .
mv "$JAR.tmp" "$JAR"
peers_report jvm "$start" "built"
