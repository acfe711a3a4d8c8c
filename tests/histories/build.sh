#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the linearizability checker (tests/histories/checker, Porcupine at the version go.mod and go.sum pin, from
# the Go module proxy into Go's module cache) into OUT. Go: the one on PATH, else /usr/local/go or Debian's
# golang-go (scripts/deps.sh test installs it when there is none). Does nothing when OUT is newer than the sources.
# Usage: tests/histories/build.sh OUT
set -euo pipefail
HERE=$(cd "$(dirname "$0")/checker" && pwd)
OUT=${1:?usage: build.sh OUT}
stale=1
if [ -x "$OUT" ]; then
    stale=0
    for f in "$HERE"/*.go "$HERE/go.mod" "$HERE/go.sum"; do
        [ "$f" -nt "$OUT" ] && stale=1
    done
fi
[ "$stale" -eq 0 ] && exit 0
GO=$(command -v go || true)
for g in /usr/local/go/bin/go /usr/lib/go/bin/go; do
    [ -n "$GO" ] || { [ -x "$g" ] && GO=$g; } || true
done
[ -n "$GO" ] || { echo "no Go found: scripts/deps.sh test installs golang-go" >&2; exit 1; }
mkdir -p "$(dirname "$OUT")"
cd "$HERE"
# -mod=readonly: go.mod and go.sum are the lock; GOTOOLCHAIN=local: the Go at hand builds it (go.mod asks for 1.19)
CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false" "$GO" build -trimpath -o "$OUT.tmp" .
mv "$OUT.tmp" "$OUT"
