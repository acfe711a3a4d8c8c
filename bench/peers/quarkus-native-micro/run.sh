#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs the quarkus-native-micro image (build.sh) in the foreground with docker run --network host: PORT, LISTEN,
# DATABASE_URL (or PGHOST/…), POOL_SIZE as every peer (README.md); NATIVE_OPTS go to the executable (e.g.
# -Xmx32m); DOCKER_OPTS for more docker run flags (post 004's: --security-opt seccomp=unconfined).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
# shellcheck disable=SC2086 # NATIVE_OPTS is a list of flags
peers_exec_image preon-peer-quarkus-native-micro ${NATIVE_OPTS:-}
