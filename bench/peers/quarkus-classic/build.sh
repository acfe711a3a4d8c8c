#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the quarkus-classic peer into bench/peers/quarkus-classic/build/quarkus-app/quarkus-run.jar with Maven (pom.xml: every version pinned, resolved from Maven
# Central into ~/.m2). Installs Debian's Maven and JDK 17 when missing; does nothing when up to date.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
peers_maven quarkus-classic "$HERE" "$HERE/build/quarkus-app/quarkus-run.jar"
