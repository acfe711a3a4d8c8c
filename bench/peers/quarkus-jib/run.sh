#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs the quarkus-jib image (build.sh) in the foreground with docker run --network host: PORT, LISTEN,
# DATABASE_URL (or PGHOST/…), POOL_SIZE as every peer (README.md), DOCKER_OPTS for more docker run flags.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
peers_exec_image preon-peer-quarkus-jib
