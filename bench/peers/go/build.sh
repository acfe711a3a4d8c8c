#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the Go peer into build/go-peer: Debian's Go 1.19 in GOPATH mode against Debian's golang-*-dev packages
# (/usr/share/gocode), so nothing is downloaded. Installs what is missing; does nothing when up to date.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
start=$(date +%s.%N)
BIN=$HERE/build/go-peer
if ! peers_stale "$BIN" "$HERE"/*.go "$HERE/build.sh"; then
    peers_report go "$start" "up to date"
    exit 0
fi
# Only a build needs to look for packages (dpkg-query takes a while): run.sh's check stays quick.
peers_need golang-go golang-github-gin-gonic-gin-dev golang-github-jackc-pgx-v4-dev
mkdir -p "$HERE/build"
cd "$HERE"
# Go's build cache lives under build/ too, so that a second build after an edit is quick.
GO111MODULE=off GOPATH=/usr/share/gocode GOPROXY=off GOFLAGS= GOCACHE="$HERE/build/cache" CGO_ENABLED=0 \
    go build -trimpath -o "$BIN.tmp" .
mv "$BIN.tmp" "$BIN"
peers_report go "$start" "built"
