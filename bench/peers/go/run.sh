#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the Go peer if needed, then runs it in the foreground (exec: the service gets this PID and SIGTERM).
# Environment: PORT (8080), LISTEN (address, 127.0.0.1), DATABASE_URL (a libpq URI; else from PGHOST/PGPORT/…),
# POOL_SIZE (10).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
peers_prepare "$HERE"
exec "$HERE/build/go-peer"
