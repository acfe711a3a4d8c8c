#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Unpacks a Debian 12 minbase root file system into DIR: debootstrap'ed from the host's Debian archive once,
# then cached as a tar in /var/cache/preon (outside the repo, so that a fresh clone reuses it). The root uses
# the host's apt sources, so that package versions match the ones preon was built against.
# Usage: tests/image/bookworm_root.sh DIR        (needs root and debootstrap)
set -euo pipefail
ROOT=${1:?usage: bookworm_root.sh DIR}
[ "$(id -u)" -eq 0 ] || { echo "bookworm_root.sh needs root (debootstrap)" >&2; exit 1; }
CACHE=/var/cache/preon/bookworm-minbase.tar
# The host's own Debian archive: deb822 sources first, then a one-line sources.list.
MIRROR=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)
[ -n "$MIRROR" ] || MIRROR=$(awk '$1 == "deb" && $3 ~ /^bookworm$/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null)
[ -n "$MIRROR" ] || { echo "bookworm_root.sh: no Debian archive found in the host's apt sources" >&2; exit 1; }

mkdir -p "$ROOT"
if [ ! -s "$CACHE" ]; then
    echo "==> debootstrap --variant=minbase bookworm (cached in $CACHE afterwards)"
    mkdir -p "$(dirname "$CACHE")"
    log=$(mktemp /tmp/preon-debootstrap.XXXXXX.log)
    debootstrap --variant=minbase bookworm "$ROOT" "$MIRROR" >"$log" 2>&1 || { tail -n 30 "$log" >&2; exit 1; }
    rm -f "$log"
    rm -rf "$ROOT/var/cache/apt/archives/"*.deb
    if [ -f /etc/apt/sources.list.d/debian.sources ]; then
        cp /etc/apt/sources.list.d/debian.sources "$ROOT/etc/apt/sources.list.d/"
        rm -f "$ROOT/etc/apt/sources.list"
    fi
    tar -C "$ROOT" -cf "$CACHE.tmp.$$" . && mv "$CACHE.tmp.$$" "$CACHE"
else
    tar -C "$ROOT" -xf "$CACHE"
fi
chmod 755 "$ROOT" # a root file system: an unprivileged user must be able to enter it (tar restores 0700)
