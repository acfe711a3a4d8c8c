#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Makes debian:bookworm and debian:bookworm-slim for the Dockerfile where no registry is reachable: each one that
# `docker image inspect` does not find is imported (`docker import`) from the cached minbase root of
# tests/image/bookworm_root.sh. An image that exists (the registry's, or one made earlier) is left as it is.
# The slim one drops documentation, man pages and locales and tells dpkg to keep them out, as Debian's slim
# images do. Neither has Debian's docker-clean apt hook: the Dockerfile must clean apt's caches itself.
# Usage: tests/image/base_images.sh        (needs root, debootstrap and a Docker daemon)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=
trap '[ -z "$ROOT" ] || rm -rf "$ROOT"' EXIT

for tag in bookworm bookworm-slim; do
    if docker image inspect "debian:$tag" >/dev/null 2>&1; then
        echo "debian:$tag: present"
        continue
    fi
    ROOT=$(mktemp -d /tmp/preon-base.XXXXXX)
    "$HERE/bookworm_root.sh" "$ROOT"
    if [ "$tag" = bookworm-slim ]; then
        cat >"$ROOT/etc/dpkg/dpkg.cfg.d/docker" <<'CFG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
path-exclude /usr/share/lintian/*
CFG
        find "$ROOT/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
        find "$ROOT/usr/share/locale" -mindepth 1 -not -name locale.alias -not -type d -delete
        rm -rf "$ROOT/usr/share/man/"* "$ROOT/usr/share/info/"* "$ROOT/usr/share/lintian/"*
    fi
    rm -rf "$ROOT/var/lib/apt/lists/"* "$ROOT/var/cache/apt/"*.bin
    tar -C "$ROOT" --numeric-owner -c . | docker import --change 'CMD ["bash"]' - "debian:$tag" >/dev/null
    echo "debian:$tag: imported from a debootstrap minbase root ($(docker image inspect -f '{{.Size}}' "debian:$tag") bytes)"
    rm -rf "$ROOT"
    ROOT=
done
