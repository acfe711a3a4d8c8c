#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs the spring-webflux peer's native executable in the foreground (exec: it has this PID and gets SIGTERM).
# Environment: PORT, LISTEN, DATABASE_URL (or PGHOST/…), POOL_SIZE (README.md), NATIVE_OPTS (the executable's
# runtime flags, e.g. -Xmx32m). Build first (build.sh: minutes with preon's native-image toolchain).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
peers_prepare "$HERE" "$HERE/build/spring-webflux-peer"
# shellcheck disable=SC2086 # NATIVE_OPTS is a list of flags
exec "$HERE/build/spring-webflux-peer" ${NATIVE_OPTS:-}
