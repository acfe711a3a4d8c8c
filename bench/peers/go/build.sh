#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the Go peer into build/go-peer: gin and pgx/v5 at the versions go.mod and go.sum pin, from the Go module
# proxy (into Go's module cache), a static binary. go.mod asks for Go 1.26: a `go` on PATH that is older (or
# Debian's golang-go, 1.19, installed when there is none) fetches that toolchain from the module proxy too
# (golang.org/toolchain, as GOTOOLCHAIN does). Does nothing when up to date.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
TOOLCHAIN=go1.26.8
start=$(date +%s.%N)
BIN=$HERE/build/go-peer
if ! peers_stale "$BIN" "$HERE"/*.go "$HERE/go.mod" "$HERE/go.sum" "$HERE/build.sh"; then
    peers_report go "$start" "up to date"
    exit 0
fi
command -v go >/dev/null || peers_need golang-go
GO=go
minor=$(go env GOVERSION | sed -E 's/^go1\.([0-9]+).*/\1/')
if [ "$minor" -lt 21 ]; then
    # Go before 1.21 cannot switch toolchains itself: fetch the toolchain module the way 1.21+ would.
    mod=golang.org/toolchain@v0.0.1-$TOOLCHAIN.linux-$(go env GOARCH)
    tmp=$(mktemp -d)
    (cd "$tmp" && go mod init bootstrap >/dev/null 2>&1 && GOFLAGS=-mod=mod go mod download "$mod") # go's own GOPROXY
    rm -rf "$tmp"
    GO=$(go env GOMODCACHE)/$mod/bin/go
    chmod +x "$GO" "$(dirname "$GO")"/../pkg/tool/*/* 2>/dev/null || true
fi
mkdir -p "$HERE/build"
cd "$HERE"
# -mod=readonly: go.mod and go.sum are the lock; a module they do not name is an error, not a download.
# -s -w: no symbol table or DWARF, as a binary shipped in an image is built.
CGO_ENABLED=0 GOTOOLCHAIN=$TOOLCHAIN+auto GOFLAGS=-mod=readonly "$GO" build -trimpath -ldflags='-s -w' -o "$BIN.tmp" .
mv "$BIN.tmp" "$BIN"
peers_report go "$start" "built"
