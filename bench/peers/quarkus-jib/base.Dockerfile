# SPDX-License-Identifier: MIT
# quarkus-jib's base image, preon-jre-17: the locally made bookworm-slim (tests/image/base_images.sh) with Debian's
# JRE 17, the runtime the other JVM images have. Jib takes it from the Docker daemon (docker://preon-jre-17).
FROM debian:bookworm-slim
# The JRE's post-install script wants man1, which the slim image leaves out.
RUN mkdir -p /usr/share/man/man1 \
 && apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin
