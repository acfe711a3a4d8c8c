#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs the Go peer in the foreground: exec, so that the service has this PID and gets SIGTERM.
# Environment: PORT (8080), LISTEN (address, 127.0.0.1), DATABASE_URL (a libpq URI; else from PGHOST/PGPORT/…),
# POOL_SIZE (10), GOMEMLIMIT (Go's soft memory limit, e.g. 32MiB). Build first (build.sh).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
peers_prepare "$HERE" "$HERE/build/go-peer"
exec "$HERE/build/go-peer"
