#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds preon-peer-quarkus-native-micro: quarkus-native's executable (its build.sh: minutes, ~6 GB) on a micro
# base, nothing but the executable and the libraries it links to FROM scratch (quarkus-native/micro.Dockerfile),
# post 004's "native, micro base image" row; quarkus-native's own image (bookworm-slim) stands for its "minimal
# base image". Needs a Docker daemon. Prints the build's time and the image's size.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
exec "$HERE/../images.sh" quarkus-native-micro
