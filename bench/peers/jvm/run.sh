#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the JVM peer if needed, then runs it in the foreground (exec: the JVM gets this PID and SIGTERM).
# Environment: PORT (8080), LISTEN (address, 127.0.0.1), DATABASE_URL (a libpq URI; else from PGHOST/PGPORT/…),
# POOL_SIZE (10), JAVA_OPTS (JVM flags, e.g. "-Xmx32m -XX:+UseSerialGC"; none by default).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
peers_prepare "$HERE"
# shellcheck disable=SC2086 # JAVA_OPTS is a list of flags
exec java ${JAVA_OPTS:-} -jar "$HERE/build/jvm-peer.jar"
