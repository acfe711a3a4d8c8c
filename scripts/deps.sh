#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs, with apt-get, whichever Debian 12 packages preon needs that are missing.
# Usage: scripts/deps.sh build|run|test|bench   (each includes what the ones before it need)
#        scripts/deps.sh stack                  run, plus deploy/stack/'s engines (etcd, Patroni, HAProxy, PgBouncer)
set -euo pipefail

# build: h2o and libpq from Debian's source packages (scripts/sources/build.sh: dpkg-dev unpacks them; h2o's CMake
# project asks for a C++ compiler too), linked statically with Debian's static OpenSSL, zlib, jansson and libyaml
build=(cmake make gcc g++ pkg-config dpkg-dev patch libssl-dev zlib1g-dev libjansson-dev libyaml-dev)
# the stock build (-DPREON_DEPS=system), which the test command also builds: Debian's shared h2o and libpq
stock=(libh2o-evloop-dev libpq-dev)
run=(postgresql-15 postgresql-client-15 curl)
test=(libcmocka-dev python3 python3-prometheus-client python3-h2 python3-venv util-linux wrk siege debootstrap docker.io binutils clang libclang-rt-14-dev valgrind clang-format git openssl strace linux-perf)
# bench/peers/: their build.sh install these too (Go, when none is on PATH, is Debian's; go.mod's toolchain then
# comes from the Go module proxy); the test command has them at hand
peers=(maven openjdk-17-jdk-headless ca-certificates)
# bench/cost.py counts instructions with valgrind, system calls with strace and profiles with perf (all in test)
bench=(wrk apache2-utils gnuplot-nox python3-uvloop strace)
# deploy/stack/ and the tests behind a real pooler, load balancer and Patroni cluster
stack=(pgbouncer haproxy patroni python3-etcd etcd-server etcd-client)

want=("${build[@]}")
case "${1:-build}" in
    build) ;;
    run) want+=("${run[@]}") ;;
    stack) want+=("${run[@]}" "${stack[@]}") ;;
    test) want+=("${stock[@]}" "${run[@]}" "${test[@]}" "${peers[@]}" "${stack[@]}") ;;
    bench) want+=("${stock[@]}" "${run[@]}" "${test[@]}" "${peers[@]}" "${stack[@]}" "${bench[@]}") ;;
    *) echo "usage: $0 build|run|test|bench|stack" >&2; exit 2 ;;
esac

# tests/histories/checker (the linearizability checker) is Go: Debian's golang-go when no Go is installed
if [[ "${1:-build}" == test || "${1:-build}" == bench ]] && ! command -v go >/dev/null && [ ! -x /usr/local/go/bin/go ]; then
    want+=(golang-go)
fi

missing=()
for p in "${want[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "==> installing: ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
    echo "missing packages and not root: run as root, or apt-get install ${missing[*]}" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
