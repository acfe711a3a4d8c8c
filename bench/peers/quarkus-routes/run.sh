#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs the quarkus-routes peer (reactive routes, JVM mode, fast-jar) in the foreground: exec java, so that the JVM has this PID and gets
# SIGTERM. Environment: PORT, LISTEN, DATABASE_URL (or PGHOST/…), POOL_SIZE, JAVA_OPTS (README.md). Build first.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
peers_exec_java "$HERE" "$HERE/build/quarkus-app/quarkus-run.jar"
