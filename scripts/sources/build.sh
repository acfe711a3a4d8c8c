#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the two libraries preon changes from Debian 12's own source packages, with preon's patches, as static
# libraries: libh2o-evloop (source package h2o) and libpq (source package postgresql-15, without GSSAPI and LDAP).
#
#   scripts/sources/build.sh [--flavor release|sanitize] [--print-prefix]
#
# Prints the folder that holds them (include/, lib/, versions.txt) on its last line. Built once per flavor and per
# content of this folder (this script, every series and patch): later calls find the build in the cache
# (${PREON_SOURCES_CACHE:-~/.cache/preon/sources}) and return at once. CMake calls it when PREON_DEPS=source.
#
# The sources come only from Debian's archive, through apt: `apt-get source NAME=VERSION`, newest first among the
# versions apt lists for the configured suites (bookworm, bookworm-updates, bookworm-security), the first that
# downloads. apt checks each .dsc against the archive's signed index; this script then checks every file against the
# .dsc's SHA-256 list, and dpkg-source checks them again as it unpacks and applies Debian's own patches. preon's
# patches follow, in the order of scripts/sources/NAME/series, each applied with `patch -p1` (a reject fails the
# build). Where the machine has no deb-src entries, the script adds them beside the deb ones it finds (same
# archives, same suites, same keyring): that needs root, as installing packages does.
#
# The sanitize flavor is built with AddressSanitizer and UndefinedBehaviorSanitizer (the ASan build of preon links
# it), and with h2o's memory recycling off (H2O_PREON_NO_RECYCLE: a use after free of a pooled chunk is reported where
# it happens instead of as a corrupt free list later).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
flavor=release
while [ $# -gt 0 ]; do
    case "$1" in
        --flavor) flavor=$2; shift 2 ;;
        --print-prefix) shift ;;
        *) echo "usage: $0 [--flavor release|sanitize] [--print-prefix]" >&2; exit 2 ;;
    esac
done
# cflags for every compile; sanflags only for the libraries' own objects (PostgreSQL's configure runs faster without
# them: its test programs need no sanitizer)
case "$flavor" in
    release) cflags="-O2 -g0" sanflags="" ;;
    sanitize) cflags="-O1 -g -fno-omit-frame-pointer"
        sanflags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -DH2O_PREON_NO_RECYCLE" ;;
    *) echo "$0: unknown flavor '$flavor' (release or sanitize)" >&2; exit 2 ;;
esac
# The system's cc, whatever compiler the caller's build uses (CMake passes its CC down: the clang of the libFuzzer
# build links these gcc-built libraries as well, and one build serves every build folder).
cc=${PREON_SOURCES_CC:-cc}
# Called from CMake, maybe itself under make: the makes below are top-level ones (PostgreSQL's makefiles generate their
# headers only when MAKELEVEL says so, and an inherited jobserver would not be theirs).
unset MAKELEVEL MAKEFLAGS MFLAGS

# The cache key: everything that decides what is built.
key=$( (cat "$0"; for pkg in h2o postgresql-15; do cat "$HERE/$pkg/series"; while read -r p; do
        [ -n "$p" ] && cat "$HERE/$pkg/$p"; done <"$HERE/$pkg/series"; done; echo "$flavor $cflags $sanflags";
        "$cc" --version | head -n 1) | sha256sum | cut -c1-16)
root=${PREON_SOURCES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/preon/sources}
prefix=$root/$flavor-$key
if [ -e "$prefix/.done" ]; then
    echo "$prefix"
    exit 0
fi
mkdir -p "$root"
exec 9>"$root/.lock"
flock 9 # another build of the same cache (the two flavors at once): wait for it, then look again
if [ -e "$prefix/.done" ]; then
    echo "$prefix"
    exit 0
fi

say() { echo "==> sources: $*" >&2; }

ensure_deb_src() {
    if apt-get source --print-uris -qq h2o >/dev/null 2>&1; then
        return
    fi
    if [ "$(id -u)" -ne 0 ]; then
        echo "$0: apt has no deb-src entries for Debian's archive; add them (as root: run this script once) or build" \
            "with -DPREON_DEPS=system" >&2
        exit 1
    fi
    local src=/etc/apt/sources.list.d/debian.sources list=/etc/apt/sources.list out=/etc/apt/sources.list.d/preon-deb-src
    say "adding deb-src entries beside the deb ones ($out.*)"
    if [ -f "$src" ] && grep -q '^Types:.*\bdeb\b' "$src"; then
        sed -E 's/^Types:.*/Types: deb-src/' "$src" >"$out.sources"
    elif [ -f "$list" ] && grep -qE '^deb ' "$list"; then
        sed -nE 's/^deb (.*)/deb-src \1/p' "$list" >"$out.list"
    else
        echo "$0: no Debian deb entries found in $src or $list to mirror as deb-src" >&2
        exit 1
    fi
    apt-get update -qq
}

# Downloads NAME's source package into the current folder: the newest version that downloads. Prints the version.
fetch() {
    local name=$1 v
    for v in $(apt-cache showsrc --only-source "$name" | sed -n 's/^Version: //p' | sort -u -r -V); do
        rm -f ./*.dsc ./*.tar.* ./*.diff.gz
        if apt-get source --download-only -qq "$name=$v" >/dev/null 2>&1; then
            echo "$v"
            return 0
        fi
        say "$name $v is listed but does not download; trying an older one" >&2
    done
    echo "$0: no version of $name's source package downloads" >&2
    return 1
}

# Every file the .dsc names, checked against its SHA-256.
verify() {
    local dsc=$1 sum size file n=0
    while read -r sum size file; do
        echo "$sum  $file" | sha256sum --quiet -c - || { echo "$0: $file does not match $dsc" >&2; exit 1; }
        n=$((n + 1))
    done < <(sed -n '/^Checksums-Sha256:/,/^[^ ]/{/^ /p}' "$dsc")
    [ "$n" -gt 0 ] || { echo "$0: $dsc lists no SHA-256 checksums" >&2; exit 1; }
}

# Unpacks NAME (Debian's patches applied) into ./src-NAME and applies preon's.
unpack() {
    local name=$1 dsc p
    dsc=$(ls ./*.dsc)
    verify "$dsc"
    # (its warning that it cannot check the uploader's signature is expected: the archive's is checked, by apt)
    dpkg-source --no-copy -x "$dsc" "src-$name" >unpack.log 2>&1 || { cat unpack.log >&2; exit 1; }
    while read -r p; do
        [ -n "$p" ] || continue
        patch -d "src-$name" -p1 --batch --forward --no-backup-if-mismatch -s <"$HERE/$name/$p" ||
            { echo "$0: $name/$p does not apply" >&2; exit 1; }
    done <"$HERE/$name/series"
}

ensure_deb_src
work=$(mktemp -d "$root/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
stage=$work/prefix
mkdir -p "$stage/include" "$stage/lib"
cd "$work"

say "h2o ($flavor)"
mkdir h2o && cd h2o
chown _apt "$work/h2o" 2>/dev/null || true # apt downloads as _apt where it can
h2o_version=$(fetch h2o)
unpack h2o
cmake -S src-h2o -B build -DCMAKE_BUILD_TYPE=None -DCMAKE_C_FLAGS="$cflags $sanflags" -DCMAKE_C_COMPILER="$cc" \
    -DWITH_MRUBY=OFF -DWITH_BUNDLED_SSL=OFF -DBUILD_SHARED_LIBS=OFF \
    -DCMAKE_DISABLE_FIND_PACKAGE_LibUV=ON -DCMAKE_DISABLE_FIND_PACKAGE_Wslay=ON -Wno-dev >build.log 2>&1 ||
    { cat build.log >&2; exit 1; }
make -C build -j"$(nproc)" libh2o-evloop >>build.log 2>&1 || { tail -n 40 build.log >&2; exit 1; }
cp build/libh2o-evloop.a "$stage/lib/"
cp -r src-h2o/include/h2o.h src-h2o/include/h2o "$stage/include/"
cd "$work"

say "postgresql-15's libpq ($flavor)"
mkdir pg && cd pg
chown _apt "$work/pg" 2>/dev/null || true
pg_version=$(fetch postgresql-15)
unpack postgresql-15
cd src-postgresql-15 # built in its own tree: the release's generated headers are found there
# Debian's own settings where libpq reads them (pg_service.conf under /etc/postgresql-common, the socket folder
# /var/run/postgresql from Debian's patch); without GSSAPI, LDAP, readline, zlib, ICU and NLS, none of which libpq
# in preon uses (what that drops: docs/architecture.md).
./configure CC="$cc" CFLAGS="$cflags" --sysconfdir=/etc/postgresql-common --with-openssl \
    --without-gssapi --without-ldap --without-readline --without-zlib --without-icu --without-llvm --disable-nls \
    >build.log 2>&1 || { tail -n 40 build.log >&2; exit 1; }
# libpq's own target builds what it needs first (the generated headers, libpgport's and libpgcommon's _shlib flavors)
make -C src/interfaces/libpq -j"$(nproc)" COPT="$sanflags" >>build.log 2>&1 || { tail -n 40 build.log >&2; exit 1; }
cp src/interfaces/libpq/libpq.a src/common/libpgcommon_shlib.a src/port/libpgport_shlib.a "$stage/lib/"
cp src/interfaces/libpq/libpq-fe.h src/interfaces/libpq/libpq-events.h src/include/postgres_ext.h \
    src/include/pg_config_ext.h "$stage/include/"
cd "$work"

{
    echo "h2o $h2o_version"
    echo "postgresql-15 $pg_version"
    echo "flavor $flavor"
    echo "cflags $cflags $sanflags"
    for pkg in h2o postgresql-15; do sed "s|^|patch $pkg/|" "$HERE/$pkg/series"; done
} >"$stage/versions.txt"
touch "$stage/.done"
rm -rf "$prefix"
mv "$stage" "$prefix"
say "built into $prefix"
echo "$prefix"
