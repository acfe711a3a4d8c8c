#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Assembles a native-image toolchain from parts a fresh machine can get: GraalVM 25.0.2's builder jars
# (Maven, pom.xml here, checked against jars.sha256), Temurin 25 (its JVMCI runs the builder; its shared
# libraries are what the executables link to), and preon's own pieces: the C helpers the executables link
# (c/), a stand-in libjvm.so, and the native-image front end (native-image, Python). The result is a
# GraalVM-shaped home, bench/peers/quarkus-native/build/toolchain/home (GRAALVM_HOME for Quarkus):
#   bin/native-image                     the front end
#   lib/svm/builder/*.jar, jvm.args      the builder's jars and the JVM options it needs
#   lib/svm/builder/lib/                 libreporterchelper.so (the builder's progress report)
#   lib/svm/clibraries/linux-amd64/      liblibchelper.a, libsvm_container.a, libjvm.a, include/
#   lib/static/linux-amd64/glibc/        libjava.a, libnio.a, … : linker scripts naming the .so below
#   lib/svm/runtime/                     Temurin's libjava.so, libnio.so, … and the stand-in libjvm.so,
#                                        copied beside each executable as lib/ (its RUNPATH is $ORIGIN/lib)
# Does nothing when the home is newer than this folder's files. TEMURIN names another JDK 25 with JVMCI; without
# one this exits 77 (a test reads that as "cannot be built here").
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${TOOLCHAIN_DIR:-$HERE/../build/toolchain}
HOME_DIR=$OUT/home
JDK=${TEMURIN:-/usr/lib/jvm/temurin-25-jdk-amd64}
JARS=$OUT/jars
start=$(date +%s.%N)

stale() {
    [ -e "$HOME_DIR/.complete" ] || return 0
    [ -n "$(find "$HERE" -type f -newer "$HOME_DIR/.complete" -print -quit)" ]
}
if ! stale; then
    echo "native-image toolchain: up to date ($HOME_DIR)"
    exit 0
fi
[ -x "$JDK/bin/java" ] && "$JDK/bin/java" --list-modules | grep -q '^jdk.internal.vm.ci@25' || {
    echo "install.sh: $JDK is not a JDK 25 with JVMCI (set TEMURIN; no Debian package has one)" >&2
    exit 77
}
command -v mvn >/dev/null && command -v gcc >/dev/null && command -v python3 >/dev/null || {
    echo "install.sh: needs mvn, gcc and python3 (Debian: maven gcc python3)" >&2
    exit 1
}

# The jars: Maven resolves svm 25.0.2 and what it depends on; every file must match the committed checksums.
rm -rf "$JARS"
mvn -B -q -Dstyle.color=never -f "$HERE/pom.xml" dependency:copy-dependencies -DoutputDirectory="$JARS"
(cd "$JARS" && sha256sum --quiet --strict -c "$HERE/jars.sha256")
[ "$(ls "$JARS" | wc -l)" -eq "$(wc -l <"$HERE/jars.sha256")" ] || {
    echo "install.sh: Maven brought jars jars.sha256 does not list: $(ls "$JARS")" >&2
    exit 1
}

# The home: Temurin's files, hard-linked when on the same file system (no copy), then preon's additions.
rm -rf "$HOME_DIR"
mkdir -p "$OUT"
cp -al "$JDK" "$HOME_DIR" 2>/dev/null || { rm -rf "$HOME_DIR" && cp -a "$JDK" "$HOME_DIR"; }
B=$HOME_DIR/lib/svm/builder C=$HOME_DIR/lib/svm/clibraries/linux-amd64 S=$HOME_DIR/lib/static/linux-amd64/glibc
R=$HOME_DIR/lib/svm/runtime
mkdir -p "$B/lib" "$C/include" "$S" "$R"
cp "$JARS"/*.jar "$B/"
CFLAGS=(-O2 -g -Wall -Wextra -I"$HERE/c/include" -I"$JDK/include" -I"$JDK/include/linux")
gcc "${CFLAGS[@]}" -shared -fPIC -o "$B/lib/libreporterchelper.so" "$HERE/c/reporterchelper.c"
cp "$HERE"/c/include/*.h "$C/include/"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc "${CFLAGS[@]}" -fPIC -c -o "$work/libchelper.o" "$HERE/c/libchelper.c"
gcc "${CFLAGS[@]}" -fPIC -c -o "$work/container.o" "$HERE/c/container.c"
ar rcs "$C/liblibchelper.a" "$work/libchelper.o"
ar rcs "$C/libsvm_container.a" "$work/container.o"

# The stand-in libjvm.so: jvm.c, plus a loud stub for every other JVM_*/jio_* name the JDK libraries import.
LIBS=(java nio net zip management_ext)
LIBS=("${LIBS[@]/#/$JDK/lib/lib}")
cp "${LIBS[@]/%/.so}" "$R/"
python3 "$HERE/stubs.py" "$HERE/c/jvm.c" "${LIBS[@]/%/.so}" >"$work/jvm_unimplemented.c"
printf 'SUNWprivate_1.1 {\n  global: JVM_*; jio_*; JNI_OnLoad_*; initialize;\n  local: *;\n};\n' >"$work/jvm.map"
gcc "${CFLAGS[@]}" -fPIC -fvisibility=hidden -shared -Wl,-soname,libjvm.so -Wl,--version-script,"$work/jvm.map" \
    -o "$R/libjvm.so" "$HERE/c/jvm.c" "$work/jvm_unimplemented.c" "$HERE/c/container.c" -ldl
for l in java nio net zip management_ext jvm; do echo "INPUT($R/lib$l.so)" >"$S/lib$l.a"; done
cp "$S/libjvm.a" "$C/libjvm.a"

# The builder JVM's options: every package of the JDK's modules exported to the builder's modules (it reaches
# into the JDK's internals by design), for the modules the builder's boot layer resolves.
python3 "$HERE/jvmargs.py" "$HOME_DIR" >"$B/jvm.args"
install -m 755 "$HERE/native-image" "$HOME_DIR/bin/native-image"
touch "$HOME_DIR/.complete"
echo "native-image toolchain: built in $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }') s ($HOME_DIR)"
